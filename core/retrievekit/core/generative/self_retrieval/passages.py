"""Documents -> the passages Self-Retrieval memorises: ≤ N-word spans of each document, with stable ids.

A document is split at sentence ends and sentences are packed greedily into passages of at most
``max_passage_words`` words (a longer sentence is cut at word boundaries). Every passage is an exact substring of
its document's text (``char_start``/``char_end`` in its metadata). Ids are ``{doc_id}`` for a one-passage document,
else ``{doc_id}#p{i}``. Titles come from the document (``title`` or ``metadata["title"]``), else its first sentence;
they are lower-cased when the config says so (the reference does). Passages with the same title and text are kept
once; the others become aliases (``PassageSet.aliases``) and their documents are listed on the kept passage.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> ps = split_passages([Passage(id="d", title="Sun", text="The sun is hot. It is big.")], SelfRetrievalConfig())
    >>> [(p.id, p.text, ps.titles[i]) for i, p in enumerate(ps.passages)]
    [('d', 'The sun is hot. It is big.', 'sun')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from retrievekit.core.checks import check_corpus
from retrievekit.core.errors import EmptyCorpusError
from retrievekit.core.generative.mindref import first_sentence_title
from retrievekit.core.generative.self_retrieval.config import SelfRetrievalConfig
from retrievekit.core.spans import trimmed_spans
from retrievekit.core.types import DataObject, Passage

__all__ = ["PassageSet", "sentence_spans", "split_passages", "split_text"]

_SENT_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\S+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (split after ``.!?`` followed by whitespace), stripped.

    Examples:
        >>> t = "One two. Three four!  Five"
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['One two.', 'Three four!', 'Five']
    """
    return trimmed_spans(text, _SENT_END)


def split_text(text: str, max_words: int) -> list[tuple[int, int]]:
    """Character spans of passages of at most ``max_words`` words, packing whole sentences greedily.

    Examples:
        >>> t = "A b c. D e. F g h i j."
        >>> [t[a:b] for a, b in split_text(t, 5)]
        ['A b c. D e.', 'F g h i j.']
        >>> u = "a b c d e"
        >>> [u[a:b] for a, b in split_text(u, 2)]
        ['a b', 'c d', 'e']
    """
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    cur_words = 0
    for a, b in sentence_spans(text):
        words = [(m.start() + a, m.end() + a) for m in _WORD.finditer(text, a, b)]
        n = len(words)
        if cur is not None and cur_words + n <= max_words:
            cur, cur_words = (cur[0], b), cur_words + n
            continue
        if cur is not None:
            out.append(cur)
            cur, cur_words = None, 0
        if n <= max_words:
            cur, cur_words = (a, b), n
            continue
        for i in range(0, n, max_words):
            chunk = words[i : i + max_words]
            if i + max_words < n:
                out.append((chunk[0][0], chunk[-1][1]))
            else:  # the last piece stays open: following sentences may join it
                cur, cur_words = (chunk[0][0], chunk[-1][1]), len(chunk)
    if cur is not None:
        out.append(cur)
    return out


@dataclass
class PassageSet:
    """The passages of a corpus, deduplicated, with their (normalised) titles.

    Attributes:
        passages: kept passages (``metadata``: ``document_id``, ``passage_index``, ``char_start``, ``char_end``,
            ``documents`` -- every document holding this exact passage).
        titles: the title of each kept passage as the model sees it (lower-cased by default).
        aliases: id of a dropped duplicate passage -> id of the kept one.
        stats: ``documents``, ``passages``, ``duplicates``, ``untitled`` (titles derived from the first sentence),
            ``empty_documents`` (documents with no text, skipped).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> docs = [Passage(id="a", title="T", text="Same text."), Passage(id="b", title="T", text="Same text.")]
        >>> ps = split_passages(docs, SelfRetrievalConfig())
        >>> len(ps.passages), ps.aliases, ps.passages[0].metadata["documents"]
        (1, {'b': 'a'}, ('a', 'b'))
    """

    passages: list[Passage]
    titles: list[str]
    aliases: dict[str, str] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        """Number of kept passages.

        Examples:
            >>> len(PassageSet([], []))
            0
        """
        return len(self.passages)

    def by_title(self) -> dict[str, list[int]]:
        """Passage indices per title, in corpus order.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> split_passages([Passage(id="a", title="T", text="x y z.")], SelfRetrievalConfig()).by_title()
            {'t': [0]}
        """
        out: dict[str, list[int]] = {}
        for i, t in enumerate(self.titles):
            out.setdefault(t, []).append(i)
        return out


def document_title(obj: DataObject, config: SelfRetrievalConfig) -> tuple[str, bool]:
    """The model-facing title of a document and whether it was derived (no title given).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> document_title(Passage(id="a", text="Cats purr. Dogs bark."), SelfRetrievalConfig())
        ('cats purr.', True)
    """
    title = obj.title.strip() or str(obj.metadata.get("title") or "").strip()
    derived = not title
    if derived:
        title = first_sentence_title(obj.text, config.untitled_title_chars) or obj.id
    title = " ".join(title.split())
    return (title.lower() if config.lowercase_titles else title), derived


def split_passages(corpus: Sequence[DataObject], config: SelfRetrievalConfig) -> PassageSet:
    """Split every document into passages (see the module docstring); duplicates are kept once.

    Raises:
        EmptyCorpusError: no document has any text.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> long = " ".join(f"w{i}." for i in range(5))
        >>> ps = split_passages([Passage(id="d", title="T", text=long)], SelfRetrievalConfig(max_passage_words=2))
        >>> [p.id for p in ps.passages], ps.passages[-1].text
        (['d#p0', 'd#p1', 'd#p2'], 'w4.')
    """
    docs = check_corpus(corpus)
    passages: list[Passage] = []
    titles: list[str] = []
    aliases: dict[str, str] = {}
    seen: dict[tuple[str, str], int] = {}
    holders: list[list[str]] = []
    stats = {"documents": len(docs), "passages": 0, "duplicates": 0, "untitled": 0, "empty_documents": 0}
    for obj in docs:
        text = obj.text
        spans = split_text(text, config.max_passage_words) if text.strip() else []
        if not spans:
            stats["empty_documents"] += 1
            continue
        title, derived = document_title(obj, config)
        stats["untitled"] += int(derived)
        for i, (a, b) in enumerate(spans):
            pid = obj.id if len(spans) == 1 else f"{obj.id}#p{i}"
            body = text[a:b]
            key = (title, body)
            if key in seen:
                kept = seen[key]
                aliases[pid] = passages[kept].id
                holders[kept].append(obj.id)
                stats["duplicates"] += 1
                continue
            seen[key] = len(passages)
            holders.append([obj.id])
            meta = {"document_id": obj.id, "passage_index": i, "char_start": a, "char_end": b}
            passages.append(Passage(id=pid, text=body, title=obj.title or title, metadata=meta))
            titles.append(title)
    if not passages:
        raise EmptyCorpusError("no document has text to split into passages")
    for i, p in enumerate(passages):
        meta = dict(p.metadata)
        meta["documents"] = tuple(dict.fromkeys(holders[i]))
        passages[i] = Passage(id=p.id, text=p.text, title=p.title, metadata=meta)
    stats["passages"] = len(passages)
    return PassageSet(passages=passages, titles=titles, aliases=aliases, stats=stats)
