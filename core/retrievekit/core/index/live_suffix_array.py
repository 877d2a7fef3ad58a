"""A token suffix array changed in place by id: documents added, removed and replaced without a full rebuild.

:class:`LiveTokenSuffixArray` answers what :class:`~retrievekit.core.index.suffix_array.TokenSuffixArray` answers
(``allowed``, ``count``, ``locate``), for documents named by id. A suffix array cannot take a document in place
(every suffix after it moves), so the documents are kept in *shards*: consecutive runs of them, in the order they
were added, of at most ``shard_tokens`` tokens each (a longer document sits alone in a shard of its own), each shard
a :class:`TokenSuffixArray`. A change rebuilds only the shards it touches:

* :meth:`~LiveTokenSuffixArray.add` rebuilds the last shard with the new documents, and builds new shards for what
  does not fit: ``O(t log t)`` for the ``t <= shard_tokens`` tokens of that shard plus the batch's own tokens;
* :meth:`~LiveTokenSuffixArray.delete` rebuilds each shard that held a deleted document, without it, merged with
  its neighbours while they fit in one shard: ``O(t log t)`` per touched shard (``t <= 2 * shard_tokens``);
* :meth:`~LiveTokenSuffixArray.update` is a delete, then an add (the document moves to the end of the order).

So a change costs about one shard's build whatever the corpus's size: at 10,000 documents of SciFact's length
(2.3M tokens, 36 shards of the default 65,536 tokens), 18 ms per document added and 24 ms per document deleted,
one call each, against 0.9 s for a full build; in a batch of 100, 0.25 and 0.15 ms a document
(``benchmarks/live_suffix_array.py``). Any two neighbouring shards together hold more than ``shard_tokens`` tokens,
so there are at most ``2 * tokens / shard_tokens + 1`` shards, and a query asks each of them: ``allowed`` is the
union of their answers, ``count`` the sum, ``locate`` their occurrences in document order. That is the price:
a query costs one lookup per shard (9 times one array's at 36 shards); a larger ``shard_tokens`` trades slower
changes for faster queries. After any sequence of changes every answer equals a fresh build's over the documents
held, in the order they were added (the layout of the shards changes no answer). A change builds its shards
first and swaps the new list in at once, so a query in another thread sees the documents before the change or
after it; changes themselves are not synchronised (one writer at a time).

Examples:
    >>> sa = LiveTokenSuffixArray({"a": [5, 6, 7], "b": [6, 9]})
    >>> sa.allowed([6]), sa.locate([6])
    ([7, 9], [('a', 1), ('b', 0)])
    >>> sa.add({"c": [6, 8]}), sa.delete(["a"]), sa.allowed([6]), sa.ids()
    (['c'], ['a'], [8, 9], ['b', 'c'])
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_held
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.bigram_followers import Followers
from retrievekit.core.index.mapped import open_arrays, save_concatenated
from retrievekit.core.index.pread_array import PreadArray
from retrievekit.core.index.store import atomic_folder, read_manifest, write_manifest
from retrievekit.core.index.suffix_array import TokenSuffixArray
from retrievekit.core.index.token_ids import as_token_ids
from retrievekit.core.index.updatable import check_ids

__all__ = ["DEFAULT_SHARD_TOKENS", "LiveTokenSuffixArray"]

DEFAULT_SHARD_TOKENS = 1 << 16
"""Tokens a shard holds at most (65,536): what one change rebuilds (a few tens of ms), and one lookup per shard
per query."""

_FORMAT = "live_suffix_array"
#: 2: the shards' suffix arrays, memory-mapped on load; 1: the documents' tokens only (still read, sorted again).
_VERSION = 2
_ARRAYS = ("lengths", "text", "sa", "stored", "starts", "followers", "shards")
_READ = ("text", "sa", "followers")  # read with pread when a folder is opened; the other (small) arrays are mapped
"""The ``.npy`` files of a version-2 folder (all ``int64``), each the shards' parts one after the other: the
documents' lengths, each shard's text (token id + 1, 0 after each document) and suffix array, its distinct stored
tokens and where each one's suffixes start, its distinct token pairs (:class:`Followers` codes), and per shard one
``(documents, text size, stored tokens, pairs, pair base)`` row."""
_SHARD_ROW = 5
_EMPTY = np.zeros(0, dtype=np.int64)


class _Shard:
    """A run of consecutive documents and their suffix array (built from ``docs``, or given as ``sa``)."""

    def __init__(
        self, ids: list[str], docs: list[np.ndarray], eos_token_id: int | None, sa: TokenSuffixArray | None = None
    ) -> None:
        self.ids = ids
        self.position = {k: i for i, k in enumerate(ids)}
        if sa is None:
            sa = TokenSuffixArray(docs, eos_token_id=eos_token_id, max_tokens=max(1, sum(d.size for d in docs)))
        self.sa = sa
        self.tokens = self.sa.num_tokens

    def documents(self) -> list[np.ndarray]:
        return [self.sa.document(i) for i in range(len(self.ids))]


class _Run:
    """Documents of a shard to be built (after a delete), with the shard's questions about them."""

    def __init__(self, ids: list[str], docs: list[np.ndarray]) -> None:
        self.ids, self._docs, self.tokens = ids, docs, sum(int(d.size) for d in docs)

    def documents(self) -> list[np.ndarray]:
        return self._docs


def _parts(sas: list[TokenSuffixArray]) -> tuple[list[Any], ...]:
    """Each shard's part of each file of :data:`_ARRAYS`, in that order."""
    rows = []
    for sa in sas:
        f = sa._followers if sa._followers is not None else Followers.of(sa._text)
        rows.append(np.asarray([sa._doc_len.size, sa._text.size, sa._stored.size, f.codes.size, f.base], np.int64))
    pairs = [sa._followers.codes if sa._followers is not None else Followers.of(sa._text).codes for sa in sas]
    return (
        [sa._doc_len for sa in sas],
        [sa._text for sa in sas],
        [sa._sa for sa in sas],
        [sa._stored for sa in sas],
        [sa._starts for sa in sas],
        pairs,
        rows,
    )


def _span(array: Any, start: int, stop: int) -> Any:
    """Entries ``[start, stop)`` of a mapped array or of a :class:`PreadArray`, nothing read."""
    return array.view(start, stop) if isinstance(array, PreadArray) else array[start:stop]


def _mapped_shards(
    folder: Path, arrays: dict[str, Any], ids: list[str], bounds: list[int], eos_token_id: int | None
) -> list[_Shard | _Run]:
    """The shards of a version-2 folder over its mapped arrays; :class:`IndexFormatError` when the sizes the
    shards' rows give do not add up (reads the rows and the document lengths, nothing else)."""
    rows = np.asarray(arrays["shards"]).reshape(-1, _SHARD_ROW) if arrays["shards"].size % _SHARD_ROW == 0 else None
    lengths = np.asarray(arrays["lengths"])
    if rows is None or len(rows) != len(bounds) - 1 or lengths.size != bounds[-1] or (lengths < 0).any():
        raise IndexFormatError(f"{folder} is corrupt: its shard rows, lengths and ids do not agree")
    ends = np.cumsum(rows[:, :4], axis=0) if len(rows) else np.zeros((0, 4), dtype=np.int64)
    sizes = [lengths.size, arrays["text"].size, arrays["stored"].size, arrays["followers"].size]
    totals = ends[-1].tolist() if len(rows) else [0, 0, 0, 0]
    ok = bool((rows[:, 0] == np.diff(bounds)).all()) and totals == sizes and arrays["sa"].size == sizes[1]
    ok = ok and arrays["starts"].size == sizes[2] + len(rows)
    if not ok:
        raise IndexFormatError(f"{folder} is corrupt: its shard rows, lengths and ids do not agree")
    shards: list[_Shard | _Run] = []
    at = np.zeros(4, dtype=np.int64)
    for i, row in enumerate(rows):
        (d0, t0, s0, f0), (d1, t1, s1, f1) = at.tolist(), ends[i].tolist()
        if int(lengths[d0:d1].sum()) + (d1 - d0) != t1 - t0:
            raise IndexFormatError(f"{folder} is corrupt: shard {i}'s text does not hold its documents")
        parts = (
            _span(arrays["text"], t0, t1),
            _span(arrays["sa"], t0, t1),
            lengths[d0:d1],
            arrays["stored"][s0:s1],
            arrays["starts"][s0 + i : s1 + i + 1],
        )
        pairs = Followers(_span(arrays["followers"], f0, f1), int(row[4]))
        held = max(1, t1 - t0 - (d1 - d0))
        sa = TokenSuffixArray._of_arrays(parts, pairs, eos_token_id=eos_token_id, max_tokens=held)
        shards.append(_Shard(ids[bounds[i] : bounds[i + 1]], [], eos_token_id, sa=sa))
        at = ends[i]
    return shards


def _checked(entries: Mapping[str, Sequence[int] | np.ndarray], where: str) -> dict[str, np.ndarray]:
    if not isinstance(entries, Mapping):
        raise InvalidInputError(f"{where}: documents must be a mapping {{id: token ids}}, got {type(entries).__name__}")
    out: dict[str, np.ndarray] = {}
    for key, doc in entries.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"{where}: ids must be strings, got {type(key).__name__} {key!r}")
        out[key] = as_token_ids(doc, f"{where}: id {key!r}")
    return out


class LiveTokenSuffixArray:
    """A token suffix array over documents named by id, changed in place shard by shard (see the module).

    Args:
        documents: ``{id: token ids}``, in order (empty documents are kept and match nothing).
        eos_token_id: as :class:`TokenSuffixArray`'s (EOS allowed after any prefix that occurs), ``None`` for never.
        shard_tokens: tokens a shard holds at most (a longer document gets a shard of its own).

    Examples:
        >>> sa = LiveTokenSuffixArray({"a": [1, 2, 3]}, eos_token_id=0, shard_tokens=2)
        >>> sa.add({"b": [2, 4]}), sa.allowed([2]), sa.count([2]), sa.num_shards
        (['b'], [0, 3, 4], 2, 2)
    """

    def __init__(
        self,
        documents: Mapping[str, Sequence[int] | np.ndarray] | None = None,
        *,
        eos_token_id: int | None = None,
        shard_tokens: int = DEFAULT_SHARD_TOKENS,
    ) -> None:
        if isinstance(shard_tokens, bool) or not isinstance(shard_tokens, int) or shard_tokens < 1:
            raise InvalidInputError(f"shard_tokens must be a positive int, got {shard_tokens!r}")
        self.eos_token_id = eos_token_id
        self.shard_tokens = shard_tokens
        self._shards: list[_Shard] = []
        self._shard_of: dict[str, _Shard] = {}
        if documents:
            self.add(documents)

    # ------------------------------------------------------------------ change in place
    def _swap(self, shards: list[_Shard | _Run]) -> None:
        """Build the shards given as runs, then put the new list in place in one assignment (a query in another
        thread sees the shards before the change or after it)."""
        built = [
            run if isinstance(run, _Shard) else _Shard(run.ids, run.documents(), self.eos_token_id) for run in shards
        ]
        self._shards = built
        for shard in built:
            for k in shard.ids:
                self._shard_of[k] = shard

    def add(self, documents: Mapping[str, Sequence[int] | np.ndarray]) -> list[str]:
        """Add documents of new ids at the end of the order; returns their ids. A held id, an id that is not a
        string or a bad token id is an :class:`InvalidInputError` naming it, and nothing is added. Rebuilds the last
        shard with them and builds new shards for what does not fit.

        Examples:
            >>> sa = LiveTokenSuffixArray({"a": [1, 2]})
            >>> sa.add({"a": [3]})
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: add: id 'a' is already in the suffix array; delete it first or use update
        """
        new = _checked(documents, "add")
        held = next((k for k in new if k in self._shard_of), None)
        if held is not None:
            raise InvalidInputError(f"add: id {held!r} is already in the suffix array; delete it first or use update")
        if not new:
            return []
        last = self._shards[-1] if self._shards else None
        ids, docs = (list(last.ids), last.documents()) if last is not None else ([], [])
        size = last.tokens if last is not None else 0
        runs: list[tuple[list[str], list[np.ndarray]]] = []
        for key, doc in new.items():
            if ids and size + doc.size > self.shard_tokens:
                runs.append((ids, docs))
                ids, docs, size = [], [], 0
            ids.append(key)
            docs.append(doc)
            size += int(doc.size)
        runs.append((ids, docs))
        kept: list[_Shard | _Run] = list(self._shards[:-1] if last is not None else self._shards)
        self._swap([*kept, *(_Run(run_ids, run_docs) for run_ids, run_docs in runs)])
        return list(new)

    def delete(self, ids: Sequence[str]) -> list[str]:
        """Remove documents by id (each held; :class:`InvalidInputError` naming one that is not, and nothing is
        removed); returns the ids. Rebuilds each shard that held one, merged with its neighbours while they fit in one.

        Examples:
            >>> sa = LiveTokenSuffixArray({"a": [1, 2], "b": [1, 3]})
            >>> sa.delete(["b"]), sa.allowed([1])
            (['b'], [2])
            >>> sa.delete(["b"])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: delete: id 'b' is not in the suffix array
        """
        wanted = check_ids(ids, where="delete")
        check_held(wanted, self._shard_of, "delete: id {id!r} is not in the suffix array")
        gone = set(wanted)
        touched = {id(self._shard_of.pop(k)) for k in wanted}
        runs: list[_Shard | _Run] = []  # the shards in order; a touched one as the run of documents it keeps
        for shard in self._shards:
            if id(shard) not in touched:
                runs.append(shard)
                continue
            keep = [(k, d) for k, d in zip(shard.ids, shard.documents(), strict=True) if k not in gone]
            if keep:
                runs.append(_Run([k for k, _ in keep], [d for _, d in keep]))
        merged: list[_Shard | _Run] = []  # neighbours that fit in one shard become one
        for run in runs:
            if merged and merged[-1].tokens + run.tokens <= self.shard_tokens:
                prev = merged.pop()
                run = _Run([*prev.ids, *run.ids], [*prev.documents(), *run.documents()])
            merged.append(run)
        self._swap(merged)
        return wanted

    def update(self, documents: Mapping[str, Sequence[int] | np.ndarray]) -> list[str]:
        """New token ids for held documents: :meth:`delete`, then :meth:`add` (each moves to the end of the order);
        an id not held is an :class:`InvalidInputError` naming it, and nothing changes.

        Examples:
            >>> sa = LiveTokenSuffixArray({"a": [1, 2], "b": [3]})
            >>> sa.update({"a": [1, 4]}), sa.allowed([1]), sa.ids()
            (['a'], [4], ['b', 'a'])
        """
        new = _checked(documents, "update")
        check_held(new, self._shard_of, "update: id {id!r} is not in the suffix array; add it")
        self.delete(list(new))
        return self.add(new)

    # ------------------------------------------------------------------ what it holds
    def ids(self) -> list[str]:
        """The ids held, in order (the order they were added; an update moves one to the end).

        Examples:
            >>> LiveTokenSuffixArray({"b": [1], "a": [2]}).ids()
            ['b', 'a']
        """
        return [k for shard in self._shards for k in shard.ids]

    def document(self, doc_id: str) -> np.ndarray:
        """Token ids of document ``doc_id`` (:class:`InvalidInputError` when it is not held).

        Examples:
            >>> LiveTokenSuffixArray({"a": [4, 5]}).document("a").tolist()
            [4, 5]
        """
        shard = self._shard_of.get(doc_id)
        if shard is None:
            raise InvalidInputError(f"document: id {doc_id!r} is not in the suffix array")
        return shard.sa.document(shard.position[doc_id])

    def __len__(self) -> int:
        """Number of documents held.

        Examples:
            >>> len(LiveTokenSuffixArray({"a": [1], "b": []}))
            2
        """
        return len(self._shard_of)

    @property
    def num_tokens(self) -> int:
        """Tokens held.

        Examples:
            >>> LiveTokenSuffixArray({"a": [1, 2], "b": [3]}).num_tokens
            3
        """
        return sum(s.tokens for s in self._shards)

    @property
    def num_shards(self) -> int:
        """Shards (suffix arrays) the documents are kept in.

        Examples:
            >>> LiveTokenSuffixArray({"a": [1, 2], "b": [3, 4]}, shard_tokens=2).num_shards
            2
        """
        return len(self._shards)

    def shards(self) -> Iterator[TokenSuffixArray]:
        """The shards' suffix arrays, in document order.

        Examples:
            >>> [s.num_documents for s in LiveTokenSuffixArray({"a": [1], "b": [2]}, shard_tokens=1).shards()]
            [1, 1]
        """
        return (s.sa for s in self._shards)

    # ------------------------------------------------------------------ search
    def allowed_array(self, prefix: Sequence[int]) -> np.ndarray:
        """Sorted distinct token ids that follow ``prefix`` in some document held (``int64``); the union of the
        shards' answers.

        Examples:
            >>> LiveTokenSuffixArray({"a": [1, 2], "b": [1, 3]}, shard_tokens=2).allowed_array([1]).tolist()
            [2, 3]
        """
        parts = [p for p in (s.sa.allowed_array(prefix) for s in self._shards) if p.size]
        if not parts:
            return _EMPTY
        return parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """:meth:`allowed_array` as a list (the ``allowed_tokens`` signature).

        Examples:
            >>> LiveTokenSuffixArray({"a": [7, 8, 9]}).allowed([7, 8])
            [9]
        """
        return [int(x) for x in self.allowed_array(prefix)]

    def __call__(self, prefix: Sequence[int]) -> list[int]:
        """Same as :meth:`allowed`.

        Examples:
            >>> LiveTokenSuffixArray({"a": [7, 8]})([7])
            [8]
        """
        return self.allowed(prefix)

    def count(self, prefix: Sequence[int]) -> int:
        """Occurrences of ``prefix`` in the documents held (0 for the empty prefix).

        Examples:
            >>> LiveTokenSuffixArray({"a": [1, 2, 1], "b": [1]}, shard_tokens=3).count([1])
            3
        """
        return sum(s.sa.count(prefix) for s in self._shards)

    def locate(self, prefix: Sequence[int]) -> list[tuple[str, int]]:
        """Every occurrence of ``prefix`` as ``(id, token offset)``, in document order, then by offset.

        Examples:
            >>> LiveTokenSuffixArray({"x": [3, 4, 3], "y": [9, 3]}, shard_tokens=3).locate([3])
            [('x', 0), ('x', 2), ('y', 1)]
        """
        if len(prefix) == 0:
            raise InvalidInputError("cannot locate the empty prefix (it occurs everywhere)")
        return [(s.ids[d], off) for s in self._shards for d, off in s.sa.locate(prefix)]

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the shards to the folder ``path`` atomically: their suffix arrays as they are (format version 2,
        see :data:`_ARRAYS`; one uncompressed ``.npy`` file each, every shard's part written after the other's, so
        a :meth:`load` maps them instead of sorting again), ``ids.json``, then a sealed ``manifest.json`` with the
        shards' layout; the folder is swapped in whole. Returns it.

        Examples:
            >>> import tempfile, pathlib
            >>> folder = pathlib.Path(tempfile.mkdtemp()) / "sa"
            >>> LiveTokenSuffixArray.load(LiveTokenSuffixArray({"a": [1, 2], "b": [1, 3]}).save(folder)).allowed([1])
            [2, 3]
        """
        sas = [s.sa for s in self._shards]
        folder = Path(path)
        with atomic_folder(folder) as tmp:
            for name, parts in zip(_ARRAYS, _parts(sas), strict=True):
                save_concatenated(tmp, name, parts, np.int64)
            (tmp / "ids.json").write_text(json.dumps(self.ids()), encoding="utf-8")
            fields = {
                "eos_token_id": self.eos_token_id,
                "shard_tokens": self.shard_tokens,
                "shard_documents": [len(s.ids) for s in self._shards],
            }
            write_manifest(tmp, _FORMAT, _VERSION, fields)
        return folder

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mapped: bool = False) -> LiveTokenSuffixArray:
        """Open a folder written by :meth:`save` (checksums checked first); :class:`IndexFormatError` for a missing,
        foreign, damaged or too new folder.

        The shards' text, suffix arrays and tables of token pairs are read with ``pread`` as a query asks
        (:class:`~retrievekit.core.index.pread_array.PreadArray`: nothing of them mapped into the process), the other
        arrays memory-mapped read-only: opening reads the files' headers, the document lengths and ``ids.json``.
        ``mapped=True`` maps those three too, as ``open_suffix_array(folder, mapped=True)`` does: faster lookups,
        and the pages they touch count in the process's resident set. A folder of format version 1 (``tokens.npy``,
        ``lengths.npy``) is read into memory and its shards sorted again as they were laid out (the cost of a
        build), as before; the next :meth:`save` writes it as version 2.

        Examples:
            >>> import tempfile, pathlib
            >>> saved = LiveTokenSuffixArray({"a": [1, 2], "b": [1, 3]}).save(pathlib.Path(tempfile.mkdtemp()) / "sa")
            >>> LiveTokenSuffixArray.load(saved, mapped=True).locate([1])
            [('a', 0), ('b', 0)]
        """
        folder = Path(path)
        m = read_manifest(folder, _FORMAT, _VERSION)
        arrays: dict[str, Any] = {}
        if m["format_version"] >= 2:  # the text and suffix arrays read with pread (the largest), the rest mapped
            kept = [a for a in _ARRAYS if mapped or a not in _READ]
            arrays.update(open_arrays(folder, dict.fromkeys(kept, np.int64), mode="r"))
            if not mapped:
                arrays.update({name: PreadArray.open(folder / f"{name}.npy", np.int64) for name in _READ})
        try:
            ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
            out = cls(eos_token_id=m["eos_token_id"], shard_tokens=m["shard_tokens"])
            layout = [int(n) for n in m["shard_documents"]]
            if not arrays:
                tokens = np.load(folder / "tokens.npy", allow_pickle=False)
                lengths = np.load(folder / "lengths.npy", allow_pickle=False)
        except (OSError, KeyError, TypeError, ValueError) as e:
            raise IndexFormatError(f"{folder} is corrupt: {type(e).__name__}: {e}") from e
        ok = isinstance(ids, list) and all(isinstance(k, str) for k in ids) and len(set(ids)) == len(ids)
        if not ok or len(ids) != sum(layout) or min(layout, default=1) <= 0:
            raise IndexFormatError(f"{folder} is corrupt: its ids and shard layout do not agree")
        bounds = np.cumsum([0, *layout]).tolist()
        if arrays:
            out._swap(_mapped_shards(folder, arrays, ids, bounds, out.eos_token_id))
            return out
        ok = len(ids) == lengths.size and int(lengths.sum()) == tokens.size
        if not ok or (tokens.size and int(tokens.min()) < 0) or (lengths.size and int(lengths.min()) < 0):
            raise IndexFormatError(f"{folder} is corrupt: its ids, lengths and tokens do not agree")
        docs = np.split(tokens.astype(np.int64), np.cumsum(lengths)[:-1]) if lengths.size else []
        out._swap([_Run(ids[a:b], docs[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)])
        return out

    def __repr__(self) -> str:
        return f"LiveTokenSuffixArray(<{len(self)} documents, {self.num_tokens} tokens, {self.num_shards} shards>)"
