"""The N-gram index (n = 1-3) over object text that bounds ARM's keyword rephrasing.

:class:`NGramIndex` maps each word N-gram (lower-cased ``\\w+`` words, N-grams that start or end with a stopword
or are all digits of one character are skipped) to the objects that contain it. ARM builds one per query over the
top-50 dense objects (the reference's per-query vocabulary, ``align_info.py``), then turns it into a token trie
(:meth:`NGramIndex.token_trie`) so a scoring LM can only emit corpus N-grams.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> idx = NGramIndex.build([Passage(id="a", text="The Dock of the Bay"), Passage(id="b", text="dock workers")])
    >>> sorted(idx.objects_of("dock"))
    ['a', 'b']
    >>> "dock of the bay" in idx, "dock of the" in idx, "dock of" in idx
    (False, False, False)
    >>> idx.ngrams()[:3]
    ['bay', 'dock', 'dock workers']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from retrievekit.core.arm.serialize import STOPWORDS, words
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.types import DataObject

__all__ = ["MAX_WORDS_PER_OBJECT", "NGramIndex", "ngrams_of"]

MAX_WORDS_PER_OBJECT = 2000
"""Words of an object's text that are indexed (a huge table contributes its first 2000 words)."""


def ngrams_of(text: str, n_max: int = 3, *, max_words: int = MAX_WORDS_PER_OBJECT) -> set[str]:
    """Distinct word N-grams (1 <= n <= ``n_max``) of ``text`` that neither start nor end with a stopword.

    Examples:
        >>> sorted(ngrams_of("Dock of the Bay", 3))
        ['bay', 'dock']
        >>> sorted(ngrams_of("Prime Suspect series", 2))
        ['prime', 'prime suspect', 'series', 'suspect', 'suspect series']
    """
    if n_max < 1:
        raise InvalidInputError(f"n_max must be >= 1, got {n_max}")
    ws = words(text)[:max_words]
    out: set[str] = set()
    for i in range(len(ws)):
        if ws[i] in STOPWORDS or (len(ws[i]) == 1 and not ws[i].isdigit()):
            continue
        for n in range(1, n_max + 1):
            if i + n > len(ws):
                break
            last = ws[i + n - 1]
            if last in STOPWORDS:
                continue
            out.add(" ".join(ws[i : i + n]))
    return out


class NGramIndex:
    """N-gram -> object ids, built from objects' ``index_text()``.

    Args:
        postings: ``{ngram: sorted object ids}``.
        n_max: the longest N-gram indexed.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> len(NGramIndex.build([Passage(id="a", text="solar power")]))
        3
    """

    def __init__(self, postings: dict[str, tuple[str, ...]], n_max: int = 3) -> None:
        self.postings = postings
        self.n_max = n_max

    @classmethod
    def build(cls, objects: Iterable[DataObject], n_max: int = 3) -> NGramIndex:
        """Index every object's N-grams.

        Examples:
            >>> NGramIndex.build([]).ngrams()
            []
        """
        return cls.from_texts(((o.id, o.index_text()) for o in objects), n_max)

    @classmethod
    def from_texts(cls, items: Iterable[tuple[str, str]], n_max: int = 3) -> NGramIndex:
        """Index ``(object id, text)`` pairs (e.g. a table's row-level view instead of the whole table).

        Examples:
            >>> NGramIndex.from_texts([("a", "solar power")], n_max=1).objects_of("power")
            ('a',)
        """
        post: dict[str, set[str]] = {}
        for oid, text in items:
            for g in ngrams_of(text, n_max):
                post.setdefault(g, set()).add(oid)
        return cls({g: tuple(sorted(ids)) for g, ids in post.items()}, n_max)

    def __len__(self) -> int:
        return len(self.postings)

    def __contains__(self, ngram: object) -> bool:
        return isinstance(ngram, str) and " ".join(words(ngram)) in self.postings

    def ngrams(self) -> list[str]:
        """All N-grams, sorted.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> NGramIndex.build([Passage(id="a", text="wind farm")], n_max=1).ngrams()
            ['farm', 'wind']
        """
        return sorted(self.postings)

    def objects_of(self, ngram: str) -> tuple[str, ...]:
        """Ids of the objects containing ``ngram`` (normalised like the index; ``()`` when absent).

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> NGramIndex.build([Passage(id="a", text="Wind farm")]).objects_of("WIND")
            ('a',)
        """
        return self.postings.get(" ".join(words(ngram)), ())

    def token_trie(
        self,
        encode: Callable[[str], Sequence[int]],
        eos_token_id: int | None,
        *,
        exclude: Iterable[str] = (),
        prefix: str = " ",
    ) -> tuple[TokenTrie, dict[tuple[int, ...], str]]:
        """A trie over the token ids of ``prefix + ngram`` for every N-gram (minus ``exclude``), and the map
        from a token sequence back to its N-gram.

        N-grams whose encoding is empty or contains the EOS id are skipped.

        Examples:
            >>> from retrievekit.core.types import Passage
            >>> idx = NGramIndex.build([Passage(id="a", text="ab")])
            >>> trie, back = idx.token_trie(lambda s: [ord(c) for c in s], eos_token_id=0)
            >>> trie.allowed([]), back[(32, 97, 98)]
            ([32], 'ab')
        """
        skip = {" ".join(words(x)) for x in exclude}
        back: dict[tuple[int, ...], str] = {}
        for g in self.ngrams():
            if g in skip:
                continue
            ids = tuple(int(t) for t in encode(prefix + g))
            if not ids or (eos_token_id is not None and eos_token_id in ids):
                continue
            back.setdefault(ids, g)
        return TokenTrie(list(back), eos_token_id=eos_token_id), back
