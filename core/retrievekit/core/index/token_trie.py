"""A compact trie over token-id sequences, for constrained decoding (titles, keywords, N-grams).

:meth:`TokenTrie.allowed` answers "which tokens may follow this prefix?" from the prefix alone, so it is
stateless and safe to use as a beam-search ``allowed_tokens`` function (see
:meth:`retrievekit.core.llm.local.LocalLM.constrained_beam_search`). A prefix that is a complete sequence also
allows the EOS token, which ends the hypothesis.

The trie is stored as flat numpy arrays (CSR layout: per node a slice of sorted child tokens and child node ids,
plus a "complete sequence ends here" flag), built with whole-array operations over the sequences packed into one
integer array (:mod:`~retrievekit.core.index.trie_build`: a stream of sequences is read one at a time, and no Python
object is made per node; the build sorts the sequences 32 tokens at a time, so a few very long ones cost only their
own tokens). That keeps it at about 17 bytes per node, so 10^5-10^6 titles fit in tens of megabytes, and each step
of :meth:`allowed` is one ``searchsorted`` per prefix token; the trie remembers the node each asked prefix ends at (up
to 8,192 prefixes), so a beam's prefix, one token longer at each step of a beam search, costs one ``searchsorted``.
:meth:`allowed_array` returns the allowed ids as an ``int64`` array, ready for a vectorised logits mask.
Sequences added one by one with :meth:`add` after construction are merged by a rebuild on the next query (batch
construction is the fast path).

A *keyed* trie (:meth:`TokenTrie.keyed`: one sequence per id, e.g. a document's title) changes in place by id:
:meth:`add` a mapping of new ids, :meth:`delete` ids, :meth:`update` (delete, then add). Ids that share a sequence
share its path, which leaves the trie only with the last of them. A change of up to 64 sequences edits the arrays
in place (each new or removed node an ``O(nodes)`` insert into or delete from them: 0.3 ms a title at 10,000
titles, against 0.05 s for the build); a larger batch rebuilds them at the next query (``O(S log S)`` over the
``S`` distinct sequences held; ``benchmarks/live_suffix_array.py``). Afterwards every answer, the node count
included, equals a fresh :meth:`TokenTrie.keyed` over the ids held. A keyed trie also keeps each id's sequence
(about 100 bytes an id). Changes are not synchronised with queries: change a trie only while no other thread
queries it. :meth:`save` writes a trie to a folder atomically and :meth:`load` opens it memory-mapped, without a rebuild.

Examples:
    >>> trie = TokenTrie([[1, 2, 3], [1, 2], [4]], eos_token_id=0)
    >>> trie.allowed([]), trie.allowed([1]), trie.allowed([1, 2]), trie.allowed([9])
    ([1, 4], [2], [0, 3], [])
    >>> [1, 2] in trie, [1] in trie, len(trie)
    (True, False, 3)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from retrievekit.core.checks import check_held
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.mapped import open_arrays, save_arrays
from retrievekit.core.index.store import atomic_folder, read_manifest, write_manifest
from retrievekit.core.index.token_ids import as_token_tuple
from retrievekit.core.index.trie_build import csr_arrays, packed, sorted_distinct
from retrievekit.core.index.updatable import check_ids

__all__ = ["TokenTrie"]

_EMPTY = np.zeros(0, dtype=np.int64)

#: How many looked-up prefixes a trie remembers (cleared when full; 50 beams over 16 steps ask for at most 800, and
#: 8,192 short tuples of ids are a few MB).
_NODE_CACHE = 1 << 13
_UNSEEN = -1  # no node id is negative
#: A keyed change of at most this many sequences edits the arrays in place (``O(nodes)`` a new or removed node);
#: a larger one rebuilds them at the next query.
_IN_PLACE = 64
_FORMAT = "token_trie"
#: 2: one memory-mapped ``.npy`` file an array; 1: one ``trie.npz`` (still read, into memory).
_VERSION = 2
_ARRAYS = ("start", "child_tok", "child_node", "terminal")
_DTYPES = (np.int64, np.int32, np.int32, np.bool_)


def _read_npz(path: Path) -> tuple[np.ndarray, ...]:
    """The arrays of a version-1 folder's ``trie.npz``, read into memory with the dtypes of version 2."""
    with np.load(path, allow_pickle=False) as z:
        return tuple(np.asarray(z[n]).astype(t) for n, t in zip(_ARRAYS, _DTYPES, strict=True))


def _check(sequence: Sequence[int], eos_token_id: int | None) -> tuple[int, ...]:
    ids = as_token_tuple(sequence, "a sequence")
    if not ids:
        raise InvalidInputError("cannot add an empty token sequence to a TokenTrie (did a text encode to no tokens?)")
    if eos_token_id is not None and eos_token_id in ids:
        raise InvalidInputError(f"sequence {list(ids)} contains the EOS id {eos_token_id}")
    return ids


class TokenTrie:
    """Compact (CSR, numpy) trie over token-id sequences.

    Args:
        sequences: token-id sequences (each non-empty, ids >= 0, none containing ``eos_token_id``). Duplicates
            are stored once.
        eos_token_id: the token allowed after a complete sequence; ``None`` to never allow one.

    Raises:
        InvalidInputError: an empty sequence, a negative id, or a sequence containing the EOS id.

    Examples:
        >>> trie = TokenTrie([[5, 6], [5, 7]], eos_token_id=2)
        >>> trie.allowed([5]), trie.allowed([5, 6])
        ([6, 7], [2])
        >>> sorted(trie)
        [(5, 6), (5, 7)]
    """

    def __init__(self, sequences: Iterable[Sequence[int]] = (), eos_token_id: int | None = None) -> None:
        self.eos_token_id = eos_token_id
        self._pending: set[tuple[int, ...]] = set()
        self._keys: dict[str, tuple[int, ...]] | None = None  # a keyed trie: each id's sequence
        self._refs: dict[tuple[int, ...], int] = {}  # a keyed trie: how many ids hold each sequence
        self._stale = False  # a keyed trie changed since the arrays were built
        # the node each looked-up prefix ends at (None: not in the trie); a beam's prefix grows by one token a step,
        # so its lookup walks one edge from the node of the step before instead of from the root
        self._nodes: dict[tuple[int, ...], int | None] = {}
        self._set_arrays(packed(_check(s, eos_token_id) for s in sequences))  # a stream: one sequence at a time

    # ------------------------------------------------------------------ building
    def _rebuild(self) -> None:
        held = self._refs if self._keys is not None else set(self._stored()) | self._pending
        self._pending, self._stale = set(), False
        self._nodes = {}
        self._set_arrays(packed(held))

    def _set_arrays(self, sequences: tuple[np.ndarray, np.ndarray]) -> None:
        """The arrays of the distinct sequences :func:`~retrievekit.core.index.trie_build.packed` holds, built with
        whole-array operations (:mod:`~retrievekit.core.index.trie_build`)."""
        order, shared = sorted_distinct(*sequences)
        # node 0 is the root; children of node n are child_tok/child_node[start[n]:start[n + 1]]
        self._start, self._child_tok, self._child_node, self._terminal = csr_arrays(*sequences, order, shared)
        self._size = int(order.size)

    def _ensure_built(self) -> None:
        if self._pending or self._stale:
            self._rebuild()

    def _stored(self, node: int = 0, prefix: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
        stack: list[tuple[int, tuple[int, ...]]] = [(node, prefix)]
        while stack:
            node, path = stack.pop()
            if self._terminal[node]:
                yield path
            lo, hi = int(self._start[node]), int(self._start[node + 1])
            for i in range(hi - 1, lo - 1, -1):
                stack.append((int(self._child_node[i]), (*path, int(self._child_tok[i]))))

    def add(self, sequence: Sequence[int] | Mapping[str, Sequence[int]]) -> bool | list[str]:
        """Insert one sequence (returns False when it was already there; merged on the next query), or, on a keyed
        trie, a mapping ``{id: sequence}`` of new ids (returns the ids; a held id, a bad sequence or a trie built
        without keys is an :class:`InvalidInputError` naming it, and nothing is added).

        Examples:
            >>> t = TokenTrie(eos_token_id=0)
            >>> t.add([3, 4]), t.add([3, 4]), len(t)
            (True, False, 1)
            >>> k = TokenTrie.keyed({"a": [3, 4]}, eos_token_id=0)
            >>> k.add({"b": [3, 5]}), k.allowed([3])
            (['b'], [4, 5])
        """
        if isinstance(sequence, Mapping):
            return self._add_keyed(self._checked_entries(sequence, where="add"))
        if self._keys is not None:
            raise InvalidInputError("add: this trie is keyed; add a mapping {id: sequence}")
        ids = _check(sequence, self.eos_token_id)
        if ids in self._pending:
            return False
        node = self._find(ids, built_only=True)
        if node is not None and bool(self._terminal[node]):
            return False
        self._pending.add(ids)
        return True

    # ------------------------------------------------------------------ keyed: change in place by id
    @classmethod
    def keyed(cls, entries: Mapping[str, Sequence[int]], eos_token_id: int | None = None) -> TokenTrie:
        """A trie of one sequence per id (ids that share a sequence share its path), changed later by id with
        :meth:`add`, :meth:`delete` and :meth:`update`.

        Examples:
            >>> t = TokenTrie.keyed({"a": [1, 2], "b": [1, 2], "c": [1, 3]}, eos_token_id=0)
            >>> len(t), t.delete(["a"]), t.allowed([1]), t.delete(["b"]), t.allowed([1])
            (2, ['a'], [2, 3], ['b'], [3])
        """
        trie = cls(eos_token_id=eos_token_id)
        trie._keys = {}
        trie._add_keyed(trie._checked_entries(entries, where="keyed"))
        return trie

    def _checked_entries(self, entries: Mapping[str, Sequence[int]], *, where: str) -> dict[str, tuple[int, ...]]:
        if self._keys is None and (self._size or self._pending):
            raise InvalidInputError(f"{where}: this trie was built without ids; build it with TokenTrie.keyed(...)")
        out: dict[str, tuple[int, ...]] = {}
        for key, seq in entries.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"{where}: ids must be strings, got {type(key).__name__} {key!r}")
            try:
                out[key] = _check(seq, self.eos_token_id)
            except InvalidInputError as e:
                raise InvalidInputError(f"{where}: id {key!r}: {e}") from e
        return out

    def _add_keyed(self, entries: dict[str, tuple[int, ...]]) -> list[str]:
        keys = self._keys if self._keys is not None else {}
        held = next((k for k in entries if k in keys), None)
        if held is not None:
            raise InvalidInputError(f"add: id {held!r} is already in the trie; delete it first or use update")
        self._keys = keys
        entering: list[tuple[int, ...]] = []
        for key, seq in entries.items():
            keys[key] = seq
            self._refs[seq] = self._refs.get(seq, 0) + 1
            if self._refs[seq] == 1:
                entering.append(seq)
        self._apply(entering, [])
        return list(entries)

    def _apply(self, entering: list[tuple[int, ...]], leaving: list[tuple[int, ...]]) -> None:
        """Change the arrays of a keyed trie: in place for a few sequences, else by a rebuild at the next query."""
        if not entering and not leaving:
            return
        if self._stale or len(entering) + len(leaving) > _IN_PLACE:
            self._stale = True
            return
        self._nodes = {}  # node ids shift, and a prefix not found may be found now
        for seq in leaving:
            self._remove(seq)
        for seq in entering:
            self._insert(seq)

    def _insert(self, seq: tuple[int, ...]) -> None:
        """Add one sequence's missing edges, each into its parent's sorted slice; new nodes go last."""
        node, depth = 0, 0
        while depth < len(seq):
            child = self._walk(node, seq[depth : depth + 1])
            if child is None:
                break
            node, depth = child, depth + 1
        start, tok, kids, term = self._start, self._child_tok, self._child_node, self._terminal
        for t in seq[depth:]:
            new = int(term.size)
            lo, hi = int(start[node]), int(start[node + 1])
            i = lo + int(np.searchsorted(tok[lo:hi], t))
            tok, kids = np.insert(tok, i, t), np.insert(kids, i, new)
            start[node + 1 :] += 1
            start, term = np.append(start, start[-1]), np.append(term, False)
            node = new
        term[node] = True
        self._start, self._child_tok, self._child_node, self._terminal = start, tok, kids, term
        self._size += 1

    def _remove(self, seq: tuple[int, ...]) -> None:
        """Unmark one sequence's end and remove the nodes it alone used (a child's id is above its parent's)."""
        path = [0]
        for t in seq:
            path.append(self._walk(path[-1], (t,)) or 0)  # held: every edge is there
        start, tok, kids, term = self._start, self._child_tok, self._child_node, self._terminal
        term[path[-1]] = False
        for depth in range(len(seq), 0, -1):
            node, parent = path[depth], path[depth - 1]
            if term[node] or start[node + 1] > start[node]:
                break
            lo, hi = int(start[parent]), int(start[parent + 1])
            i = lo + int(np.searchsorted(tok[lo:hi], seq[depth - 1]))
            tok, kids = np.delete(tok, i), np.delete(kids, i)
            start[parent + 1 :] -= 1
            start, term = np.delete(start, node), np.delete(term, node)
            kids[kids > node] -= 1
        self._start, self._child_tok, self._child_node, self._terminal = start, tok, kids, term
        self._size -= 1

    def delete(self, ids: Sequence[str]) -> list[str]:
        """Remove ids from a keyed trie (each held; :class:`InvalidInputError` naming one that is not, and nothing
        is removed); returns them. A sequence leaves the trie with the last id that holds it.

        Examples:
            >>> t = TokenTrie.keyed({"a": [1, 2]})
            >>> t.delete(["a"]), len(t)
            (['a'], 0)
            >>> t.delete(["a"])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: delete: id 'a' is not in the trie
        """
        if self._keys is None:
            raise InvalidInputError("delete: this trie was built without ids; build it with TokenTrie.keyed(...)")
        wanted = check_ids(ids, where="delete")
        check_held(wanted, self._keys, "delete: id {id!r} is not in the trie")
        leaving: list[tuple[int, ...]] = []
        for key in wanted:
            seq = self._keys.pop(key)
            self._refs[seq] -= 1
            if not self._refs[seq]:
                del self._refs[seq]
                leaving.append(seq)
        self._apply([], leaving)
        return wanted

    def update(self, entries: Mapping[str, Sequence[int]]) -> list[str]:
        """Give held ids of a keyed trie new sequences: :meth:`delete`, then :meth:`add`; an id not held is an
        :class:`InvalidInputError` naming it, and nothing changes.

        Examples:
            >>> t = TokenTrie.keyed({"a": [1, 2]})
            >>> t.update({"a": [1, 3]}), list(t)
            (['a'], [(1, 3)])
        """
        checked = self._checked_entries(entries, where="update")
        held = self._keys if self._keys is not None else {}
        check_held(checked, held, "update: id {id!r} is not in the trie; add it")
        self.delete(list(checked))
        return self._add_keyed(checked)

    def ids(self) -> list[str]:
        """The ids of a keyed trie, in the order they were added (``[]`` for a trie built without ids).

        Examples:
            >>> TokenTrie.keyed({"b": [1], "a": [2]}).ids()
            ['b', 'a']
        """
        return list(self._keys or ())

    @classmethod
    def from_texts(
        cls, texts: Iterable[str], encode: Callable[[str], Sequence[int]], eos_token_id: int | None
    ) -> TokenTrie:
        """Build a trie from texts with a tokenizer's ``encode`` function.

        Examples:
            >>> trie = TokenTrie.from_texts(["ab", "ac"], lambda s: [ord(c) for c in s], eos_token_id=0)
            >>> trie.allowed([ord("a")])
            [98, 99]
        """
        seqs: list[list[int]] = []
        for text in texts:
            ids = list(encode(text))
            if not ids:
                raise InvalidInputError(f"text {text!r} encodes to no tokens")
            seqs.append(ids)
        return cls(seqs, eos_token_id=eos_token_id)

    # ------------------------------------------------------------------ queries
    def _find(self, prefix: Sequence[int], *, built_only: bool = False) -> int | None:
        if built_only:
            return self._walk(0, prefix)
        self._ensure_built()
        key = tuple(int(t) for t in prefix)
        node = self._nodes.get(key, _UNSEEN)  # .get, not `in` then [...]: another thread may clear the memory
        if node != _UNSEEN:
            return node
        parent = self._nodes.get(key[:-1], _UNSEEN) if key else _UNSEEN
        if parent == _UNSEEN:
            node = self._walk(0, key)
        else:
            node = None if parent is None else self._walk(parent, key[-1:])
        if len(self._nodes) >= _NODE_CACHE:
            self._nodes.clear()
        self._nodes[key] = node
        return node

    def _walk(self, node: int, tokens: Sequence[int]) -> int | None:
        start, toks = self._start, self._child_tok
        for tok in tokens:
            t = int(tok)
            lo, hi = int(start[node]), int(start[node + 1])
            if lo == hi or t < 0:
                return None
            i = lo + int(np.searchsorted(toks[lo:hi], t))
            if i >= hi or int(toks[i]) != t:
                return None
            node = int(self._child_node[i])
        return node

    def allowed_array(self, prefix: Sequence[int]) -> np.ndarray:
        """Sorted allowed next ids as an ``int64`` array (EOS included when ``prefix`` is complete).

        Examples:
            >>> TokenTrie([[1, 2], [1, 3]], eos_token_id=0).allowed_array([1]).tolist()
            [2, 3]
        """
        node = self._find(prefix)
        if node is None:
            return _EMPTY
        out = self._child_tok[int(self._start[node]) : int(self._start[node + 1])].astype(np.int64)
        if self._terminal[node] and self.eos_token_id is not None:
            out = np.sort(np.append(out, self.eos_token_id))
        return out

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """Sorted token ids that may follow ``prefix``; EOS included when ``prefix`` is a complete sequence.

        Returns ``[]`` for a prefix that is not in the trie (including one that already ended with EOS).

        Examples:
            >>> TokenTrie([[1, 2]], eos_token_id=0).allowed([1, 2])
            [0]
        """
        return [int(x) for x in self.allowed_array(prefix)]

    def __call__(self, prefix: Sequence[int]) -> list[int]:
        """Same as :meth:`allowed`, so a trie can be passed directly as ``allowed_tokens``.

        Examples:
            >>> TokenTrie([[1]], eos_token_id=0)([])
            [1]
        """
        return self.allowed(prefix)

    def completions(self, prefix: Sequence[int], limit: int | None = None) -> list[tuple[int, ...]]:
        """Complete stored sequences that start with ``prefix``, in lexicographic order (at most ``limit``).

        Resolves a hypothesis cut off by a token limit to the sequences it can still become.

        Examples:
            >>> TokenTrie([[1, 2, 3], [1, 2, 4], [5]]).completions([1, 2])
            [(1, 2, 3), (1, 2, 4)]
        """
        node = self._find(prefix)
        if node is None:
            return []
        out: list[tuple[int, ...]] = []
        for seq in self._stored(node, tuple(int(t) for t in prefix)):
            out.append(seq)
            if limit is not None and len(out) >= limit:
                break
        return out

    def is_prefix(self, prefix: Sequence[int]) -> bool:
        """Whether ``prefix`` starts (or is) some stored sequence.

        Examples:
            >>> t = TokenTrie([[1, 2]])
            >>> t.is_prefix([1]), t.is_prefix([2])
            (True, False)
        """
        return self._find(prefix) is not None

    def __contains__(self, sequence: object) -> bool:
        """Whether ``sequence`` is a complete stored sequence (a trailing EOS is ignored).

        Examples:
            >>> t = TokenTrie([[1, 2]], eos_token_id=0)
            >>> [1, 2] in t, [1, 2, 0] in t, [1] in t
            (True, True, False)
        """
        if not isinstance(sequence, Sequence) or isinstance(sequence, (str, bytes)):
            return False
        ids = list(sequence)
        if ids and self.eos_token_id is not None and ids[-1] == self.eos_token_id:
            ids = ids[:-1]
        if not ids:
            return False
        node = self._find(ids)
        return node is not None and bool(self._terminal[node])

    def __len__(self) -> int:
        """Number of distinct stored sequences.

        Examples:
            >>> len(TokenTrie([[1], [1], [2]]))
            2
        """
        self._ensure_built()
        return self._size

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        """Stored sequences as tuples, in depth-first order of token ids (lexicographic order).

        Examples:
            >>> list(TokenTrie([[2], [1, 3]]))
            [(1, 3), (2,)]
        """
        self._ensure_built()
        return self._stored()

    @property
    def num_nodes(self) -> int:
        """Number of trie nodes (root included).

        Examples:
            >>> TokenTrie([[1, 2], [1, 3]]).num_nodes
            4
        """
        self._ensure_built()
        return len(self._terminal)

    @property
    def nbytes(self) -> int:
        """Bytes held by the trie's arrays.

        Examples:
            >>> TokenTrie([[1, 2]]).nbytes > 0
            True
        """
        self._ensure_built()
        return int(self._start.nbytes + self._child_tok.nbytes + self._child_node.nbytes + self._terminal.nbytes)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the trie to the folder ``path`` atomically: its arrays, one uncompressed ``.npy`` file each
        (``start.npy``, ``child_tok.npy``, ``child_node.npy``, ``terminal.npy``), a keyed trie's ids and sequences
        (``keys.json``), then a sealed ``manifest.json`` (format version 2); the folder is swapped in whole. Returns it.

        Examples:
            >>> import tempfile, pathlib
            >>> folder = pathlib.Path(tempfile.mkdtemp()) / "titles"
            >>> back = TokenTrie.load(TokenTrie.keyed({"a": [1, 2], "b": [1, 3]}, eos_token_id=0).save(folder))
            >>> back.allowed([1]), back.ids()
            ([2, 3], ['a', 'b'])
        """
        self._ensure_built()
        folder = Path(path)
        with atomic_folder(folder) as tmp:
            arrays = (self._start, self._child_tok, self._child_node, self._terminal)
            save_arrays(tmp, dict(zip(_ARRAYS, arrays, strict=True)))
            if self._keys is not None:
                keys = {"ids": list(self._keys), "sequences": [list(s) for s in self._keys.values()]}
                (tmp / "keys.json").write_text(json.dumps(keys), encoding="utf-8")
            fields = {"eos_token_id": self.eos_token_id, "size": self._size, "keyed": self._keys is not None}
            write_manifest(tmp, _FORMAT, _VERSION, fields)
        return folder

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TokenTrie:
        """Open a folder written by :meth:`save` (checksums checked first); :class:`IndexFormatError` for a missing,
        foreign, damaged or too new folder.

        The arrays are memory-mapped (copy-on-write: a change in place stays in this process, the files are never
        written), so opening reads their headers and a lookup the pages it walks; a keyed trie's ``keys.json`` is
        read whole (each id's sequence). A folder of format version 1 (one ``trie.npz``) is read into memory as
        before, and written as version 2 by the next :meth:`save`.

        Examples:
            >>> import tempfile
            >>> TokenTrie.load(tempfile.mkdtemp())
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.IndexFormatError: ... is not a retrievekit index folder (no manifest.json)
        """
        folder = Path(path)
        manifest = read_manifest(folder, _FORMAT, _VERSION)
        eos, size = manifest.get("eos_token_id"), manifest.get("size")
        if not (eos is None or type(eos) is int) or type(size) is not int:
            raise IndexFormatError(f"{folder}: manifest.json is corrupt (eos_token_id {eos!r}, size {size!r})")
        trie = cls(eos_token_id=eos)
        if manifest["format_version"] >= 2:
            start, tok, node, term = open_arrays(folder, dict(zip(_ARRAYS, _DTYPES, strict=True))).values()
        try:
            if manifest["format_version"] < 2:
                start, tok, node, term = _read_npz(folder / "trie.npz")
            if manifest.get("keyed"):
                keys = json.loads((folder / "keys.json").read_text(encoding="utf-8"))
                trie._keys = {}
                trie._add_keyed(
                    trie._checked_entries(dict(zip(keys["ids"], keys["sequences"], strict=True)), where="load")
                )
        except (OSError, KeyError, TypeError, ValueError) as e:
            raise IndexFormatError(f"{folder} is corrupt: {type(e).__name__}: {e}") from e
        ok = start.size == term.size + 1 and tok.size == node.size == int(start[-1])
        # counting the ends reads the whole of `terminal`: a mapped folder's checksums already vouch for it
        ok = ok and (manifest["format_version"] >= 2 or int(term.sum()) == size)
        if not ok or (trie._keys is not None and len(trie._refs) != size):
            raise IndexFormatError(f"{folder} is corrupt: its arrays do not form a trie of {size} sequences")
        trie._start, trie._child_tok, trie._child_node, trie._terminal = start, tok, node, term
        trie._size, trie._stale = size, False
        return trie

    def __repr__(self) -> str:
        return f"TokenTrie(<{len(self)} sequences>, eos_token_id={self.eos_token_id})"
