"""The judge's prompt: fixed, versioned templates and the answer tokens read off the next-token logits.

Two templates, each with an id stored in a trained judge's manifest (and checked when it is loaded):

* ``"judge-plain-v1"`` (:data:`PLAIN_TEMPLATE`) -- what a judge is fine-tuned on and scored with: no chat template,
  ``Query: ...\\nDocument: ...\\nRelevant:`` followed by the answer ``" yes"`` or ``" no"``.
* ``"judge-chat-v1"`` (:data:`CHAT_INSTRUCTION`) -- the zero-shot prompt: the instruction as one user turn through
  the tokenizer's chat template (the prompt of the zero-shot measurement in docs/methods/judge.md); the answer is
  read as ``logsumexp(Yes-variants) - logsumexp(No-variants)`` of the first tokens of ``Yes/yes/ Yes/ yes`` (and
  No).

The passage is cut to ``max_passage_tokens`` tokens (and the query to ``max_query_tokens``) *before* the template
is filled, by encoding and decoding with the model's tokenizer, so training and scoring see the same text.

When the two answers share leading tokens (a byte-level BPE that splits ``" yes"`` into ``"Ġ" + "yes"``), the
shared tokens are appended to the prompt and the first *differing* tokens are compared (:func:`answer_token_ids`).

Examples:
    >>> p = JudgePrompt()
    >>> p.template_id, p.max_passage_tokens
    ('judge-plain-v1', 256)
    >>> PLAIN_TEMPLATE.format(query="q?", passage="text")
    'Query: q?\\nDocument: text\\nRelevant:'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.untrusted import control_strings, defuse_control_tokens

__all__ = [
    "ANSWER_NO",
    "ANSWER_YES",
    "CHAT_INSTRUCTION",
    "CHAT_TEMPLATE_ID",
    "NO_VARIANTS",
    "PLAIN_TEMPLATE",
    "PLAIN_TEMPLATE_ID",
    "TEMPLATES",
    "YES_VARIANTS",
    "JudgePrompt",
    "answer_token_ids",
    "truncate_tokens",
]

PLAIN_TEMPLATE_ID = "judge-plain-v1"
CHAT_TEMPLATE_ID = "judge-chat-v1"
PLAIN_TEMPLATE = "Query: {query}\nDocument: {passage}\nRelevant:"
CHAT_INSTRUCTION = (
    "Is the document relevant to the query? Answer Yes or No.\n\nQuery: {query}\nDocument: {passage}\n\nRelevant:"
)
ANSWER_YES = " yes"
ANSWER_NO = " no"
YES_VARIANTS = ("Yes", "yes", " Yes", " yes")
NO_VARIANTS = ("No", "no", " No", " no")
TEMPLATES = (PLAIN_TEMPLATE_ID, CHAT_TEMPLATE_ID)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return [int(t) for t in tokenizer(text, add_special_tokens=False)["input_ids"]]


def truncate_tokens(text: str, tokenizer: Any, max_tokens: int) -> str:
    """``text`` cut to its first ``max_tokens`` tokens (unchanged when shorter).

    Examples:
        >>> from retrievekit.core.fakes import CharTokenizer as Chars  # a toy tokenizer: one token per character
        >>> truncate_tokens("abcdef", Chars(), 3), truncate_tokens("ab", Chars(), 3)
        ('abc', 'ab')
    """
    if max_tokens < 1:
        raise InvalidInputError(f"max_tokens must be >= 1, got {max_tokens}")
    ids = _encode(tokenizer, text)
    if len(ids) <= max_tokens:
        return text
    return str(tokenizer.decode(ids[:max_tokens], skip_special_tokens=True))


def answer_token_ids(tokenizer: Any, yes: str = ANSWER_YES, no: str = ANSWER_NO) -> tuple[list[int], int, int]:
    """``(shared_prefix_ids, yes_id, no_id)``: the answers' common leading tokens and their first differing tokens.

    Raises ``InvalidInputError`` when one answer's tokens are a prefix of the other's.

    Examples:
        >>> from retrievekit.core.fakes import CharTokenizer as Chars
        >>> answer_token_ids(Chars(), " yes", " no")
        ([32], 121, 110)
    """
    y, n = _encode(tokenizer, yes), _encode(tokenizer, no)
    i = 0
    while i < min(len(y), len(n)) and y[i] == n[i]:
        i += 1
    if i >= len(y) or i >= len(n):
        raise InvalidInputError(f"the answers {yes!r} and {no!r} are not distinguishable by a token")
    return y[:i], y[i], n[i]


def _variant_ids(tokenizer: Any, variants: Sequence[str]) -> list[int]:
    out: list[int] = []
    for v in variants:
        ids = _encode(tokenizer, v)
        if ids and ids[0] not in out:
            out.append(ids[0])
    return out


@dataclass(frozen=True)
class JudgePrompt:
    """How a (query, passage) pair becomes token ids, and which next tokens are read as the answer.

    Attributes:
        template_id: ``"judge-plain-v1"`` (fine-tuned judges) or ``"judge-chat-v1"`` (zero-shot, chat template).
        max_passage_tokens: passage cut (issue #9 design: 256 tokens, the SciFact abstracts' median is ~250).
        max_query_tokens: query cut (64 tokens; SciFact claims are ~20 tokens).

    Examples:
        >>> JudgePrompt(template_id="judge-chat-v1").is_chat
        True
        >>> JudgePrompt(template_id="other")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown judge template 'other'; known: ('judge-plain-v1', 'judge-chat-v1')
    """

    template_id: str = PLAIN_TEMPLATE_ID
    max_passage_tokens: int = 256
    max_query_tokens: int = 64

    def __post_init__(self) -> None:
        if self.template_id not in TEMPLATES:
            raise InvalidInputError(f"unknown judge template {self.template_id!r}; known: {TEMPLATES}")
        if self.max_passage_tokens < 1 or self.max_query_tokens < 1:
            raise InvalidInputError("max_passage_tokens and max_query_tokens must be >= 1")

    @property
    def is_chat(self) -> bool:
        """Whether the prompt goes through the tokenizer's chat template (zero-shot mode).

        Examples:
            >>> JudgePrompt().is_chat
            False
        """
        return self.template_id == CHAT_TEMPLATE_ID

    def render(self, query: str, passage: str, tokenizer: Any) -> str:
        """The prompt text for one pair (before answer tokens), with query and passage truncated and their chat
        control strings broken (:func:`~retrievekit.core.llm.untrusted.defuse_control_tokens`).

        Examples:
            >>> from retrievekit.core.fakes import CharTokenizer as Chars
            >>> JudgePrompt(max_passage_tokens=4).render("q", "abcdefgh", Chars())
            'Query: q\\nDocument: abcd\\nRelevant:'
        """
        specials = control_strings(tokenizer)  # neither text may become a special token (`<|im_end|>`, `</s>`...)
        q = truncate_tokens(defuse_control_tokens(query.strip(), specials), tokenizer, self.max_query_tokens)
        p = truncate_tokens(defuse_control_tokens(passage.strip(), specials), tokenizer, self.max_passage_tokens)
        if not self.is_chat:
            return PLAIN_TEMPLATE.format(query=q, passage=p)
        content = CHAT_INSTRUCTION.format(query=q, passage=p)
        if getattr(tokenizer, "chat_template", None):
            return str(
                tokenizer.apply_chat_template(
                    [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
                )
            )
        return f"User: {content}\nAssistant:"

    def encode(self, query: str, passage: str, tokenizer: Any) -> list[int]:
        """Token ids of the prompt, ready for the next-token read-out.

        Plain mode prepends BOS when the tokenizer has one (as the shared trainer's ``encode_example`` does) and
        appends the answers' shared leading tokens; chat mode encodes the rendered chat text as it is (the
        template carries its own special tokens), like ``LocalLM.complete``.

        Examples:
            >>> from retrievekit.core.fakes import CharTokenizer as Chars
            >>> ids = JudgePrompt().encode("q", "p", Chars())
            >>> "".join(chr(i) for i in ids)
            'Query: q\\nDocument: p\\nRelevant: '
        """
        ids = _encode(tokenizer, self.render(query, passage, tokenizer))
        if self.is_chat:
            return ids
        bos = getattr(tokenizer, "bos_token_id", None)
        shared, _, _ = answer_token_ids(tokenizer)
        return ([int(bos)] if bos is not None else []) + ids + shared

    def readout_ids(self, tokenizer: Any) -> tuple[list[int], list[int]]:
        """``(yes_ids, no_ids)``: next-token ids whose logits are pooled (logsumexp) into the yes/no margin.

        Examples:
            >>> from retrievekit.core.fakes import CharTokenizer as Chars
            >>> JudgePrompt().readout_ids(Chars())
            ([121], [110])
        """
        if not self.is_chat:
            _, y, n = answer_token_ids(tokenizer)
            return [y], [n]
        yes, no = _variant_ids(tokenizer, YES_VARIANTS), _variant_ids(tokenizer, NO_VARIANTS)
        both = set(yes) & set(no)
        yes, no = [t for t in yes if t not in both], [t for t in no if t not in both]
        if not yes or not no:
            raise InvalidInputError("the tokenizer gives Yes and No the same first tokens; cannot read a judgement")
        return yes, no
