"""Stand-in models for examples and tests: tiny, deterministic, no download (as LangChain's ``FakeListChatModel``
and LlamaIndex's ``MockEmbedding`` are for theirs).

Each one does the least a method needs from a real model, so an example can show a method's behaviour in one line:

* :class:`OnesEmbedder` -- every text embeds to the same vector (dense scores tie; order comes from elsewhere);
* :class:`LengthEmbedder` -- a text embeds to ``[len(text), 1]`` (documents of like length cluster together);
* :class:`WordCountEmbedder` -- a text embeds to how often it holds each of a few words (texts sharing one are near);
* :class:`WordScoreLLM` -- a chat LLM that scores each ``<data ...>`` item it is shown 90 when it mentions a word,
  else 10, in LATTICE's slate-reply format;
* :class:`FixedReplyLLM` -- a chat LLM that always replies the same text;
* :class:`WordJudge` -- a relevance judge: 0.9 for a text that mentions a word, else 0.2;
* :class:`CharTokenizer` -- a tokenizer with one token per character (its code point).

Examples:
    >>> OnesEmbedder().embed_query("anything").tolist()
    [1.0, 1.0]
    >>> FixedReplyLLM("A topic").complete("Name this cluster").text
    'A topic'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import ChatMessage, Completion

__all__ = [
    "CharTokenizer",
    "FixedReplyLLM",
    "LengthEmbedder",
    "OnesEmbedder",
    "WordCountEmbedder",
    "WordJudge",
    "WordScoreLLM",
]


class OnesEmbedder:
    """An embedder whose every vector is all ones (``dim`` 2): a stand-in for all-MiniLM-L6-v2 in examples.

    Examples:
        >>> OnesEmbedder().embed_documents(["a", "b"]).shape
        (2, 2)
    """

    name, dim = "ones", 2

    def embed_documents(self, texts: Sequence[str], **kw: Any) -> np.ndarray:
        """One all-ones row per text."""
        return np.ones((len(texts), self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """An all-ones vector."""
        return np.ones(self.dim, dtype=np.float32)


class LengthEmbedder(OnesEmbedder):
    """An embedder that maps a text to ``[len(text), 1]``: texts of like length cluster together.

    Examples:
        >>> LengthEmbedder().embed_documents(["ab", "abcd"]).tolist()
        [[2.0, 1.0], [4.0, 1.0]]
    """

    name = "length"

    def embed_documents(self, texts: Sequence[str], **kw: Any) -> np.ndarray:
        """``[len(text), 1]`` per text."""
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """``[len(text), 1]``."""
        return np.array([float(len(text)), 1.0], dtype=np.float32)


@dataclass
class WordCountEmbedder:
    """An embedder whose vector counts each of ``words`` in the text, plus 0.1 (no vector is zero): texts that share
    a word are near, a query finds the texts holding its words.

    Examples:
        >>> WordCountEmbedder().embed_documents(["cats purr", "a dog"]).tolist()
        [[1.1, 0.1, 0.1], [0.1, 0.1, 1.1]]
        >>> WordCountEmbedder().dim
        3
    """

    words: tuple[str, ...] = ("cat", "stock", "dog")
    name = "words"

    @property
    def dim(self) -> int:
        """One dimension a word."""
        return len(self.words)

    def embed_documents(self, texts: Sequence[str], **kw: Any) -> np.ndarray:
        """One row of counts per text."""
        return np.array([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """The counts of the words in ``text``, plus 0.1."""
        return np.array([text.count(w) for w in self.words]) + 0.1


class _ReplyLLM(ChatLLMBase):
    """A chat LLM whose reply is a function of the last message's text (``reply``); limits are ignored."""

    def reply(self, text: str) -> str:
        raise NotImplementedError

    def complete(self, prompt: str | Sequence[ChatMessage], **limits: Any) -> Completion:
        """The reply to the prompt's last message (``max_tokens``, ``temperature`` and ``trace`` are accepted)."""
        return Completion(self.reply(prompt if isinstance(prompt, str) else prompt[-1].content))


@dataclass
class WordScoreLLM(_ReplyLLM):
    """A chat LLM that scores each ``<data ...>`` line of the last message 90 when it mentions ``word``, else 10,
    replying ``{"scores": [...]}`` (the slate format LATTICE and the judge rerankers ask for).

    Examples:
        >>> WordScoreLLM("sun").complete("<data id=1> sun\\n<data id=2> rain").text
        '{"scores": [90, 10]}'
    """

    word: str

    def reply(self, text: str) -> str:
        """The scores of the items ``text`` shows."""
        items = [line for line in text.splitlines() if line.startswith("<data")]
        return json.dumps({"scores": [90 if self.word in i else 10 for i in items]})


@dataclass
class FixedReplyLLM(_ReplyLLM):
    """A chat LLM that always replies ``text`` (a tree builder's cluster label, say).

    Examples:
        >>> FixedReplyLLM('{"keywords": []}').complete("anything").text
        '{"keywords": []}'
    """

    text: str

    def reply(self, text: str) -> str:
        """The fixed reply."""
        return self.text


@dataclass
class WordJudge:
    """A relevance judge (``score_relevance``, as ``Judge`` and the rerankers' ``judge=`` take): 0.9 for each candidate
    that mentions ``word`` (any case), else 0.2.

    Examples:
        >>> WordJudge("aspirin").score_relevance("pain relief", ["Aspirin eases pain.", "Rest."])
        [0.9, 0.2]
    """

    word: str

    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Any = None) -> list[float]:
        """One probability per candidate."""
        return [0.9 if self.word.lower() in c.lower() else 0.2 for c in candidates]


class CharTokenizer:
    """A tokenizer with one token per character (its code point) and no special tokens.

    Examples:
        >>> tok = CharTokenizer()
        >>> tok("ab")["input_ids"], tok.decode([104, 105]), tok.encode("abc")
        ([97, 98], 'hi', [97, 98, 99])
    """

    bos_token_id = None

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        """``{"input_ids": [...]}``, as a Hugging Face tokenizer returns."""
        return {"input_ids": self.encode(text)}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """The code points of ``text``."""
        return [ord(c) for c in text]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of ``ids``."""
        return "".join(chr(i) for i in ids)
