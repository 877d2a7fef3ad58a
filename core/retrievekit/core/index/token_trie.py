"""A compact trie over token-id sequences, for constrained decoding (titles, keywords, N-grams).

:meth:`TokenTrie.allowed` answers "which tokens may follow this prefix?" from the prefix alone, so it is
stateless and safe to use as a beam-search ``allowed_tokens`` function (see
:meth:`retrievekit.core.llm.local.LocalLM.constrained_beam_search`). A prefix that is a complete sequence also
allows the EOS token, which ends the hypothesis.

The trie is stored as flat numpy arrays (CSR layout: per node a slice of sorted child tokens and child node ids,
plus a "complete sequence ends here" flag), built in one pass over the sorted sequences. That keeps it at about
17 bytes per node, so 10^5-10^6 titles fit in tens of megabytes, and each step of :meth:`allowed` is one
``searchsorted`` per prefix token; the trie remembers the node each asked prefix ends at (up to 8,192 prefixes),
so a beam's prefix, one token longer at each step of a beam search, costs one ``searchsorted``.
:meth:`allowed_array` returns the allowed ids as an ``int64`` array, ready for a vectorised logits mask.
Sequences added one by one with :meth:`add` after construction are merged by a rebuild on the next query (batch
construction is the fast path).

Examples:
    >>> trie = TokenTrie([[1, 2, 3], [1, 2], [4]], eos_token_id=0)
    >>> trie.allowed([]), trie.allowed([1]), trie.allowed([1, 2]), trie.allowed([9])
    ([1, 4], [2], [0, 3], [])
    >>> [1, 2] in trie, [1] in trie, len(trie)
    (True, False, 3)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["TokenTrie"]

_EMPTY = np.zeros(0, dtype=np.int64)

#: How many looked-up prefixes a trie remembers (cleared when full; 50 beams over 16 steps ask for at most 800, and
#: 8,192 short tuples of ids are a few MB).
_NODE_CACHE = 1 << 13
_UNSEEN = -1  # no node id is negative


def _check(sequence: Sequence[int], eos_token_id: int | None) -> tuple[int, ...]:
    ids = tuple(int(x) for x in sequence)
    if not ids:
        raise InvalidInputError("cannot add an empty token sequence to a TokenTrie (did a text encode to no tokens?)")
    if min(ids) < 0:
        raise InvalidInputError(f"token ids must be >= 0, got {list(ids)}")
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
        self._pending: set[tuple[int, ...]] = {_check(s, eos_token_id) for s in sequences}
        # node 0 is the root; children of node n are child_tok/child_node[start[n]:start[n + 1]]
        self._start = np.zeros(2, dtype=np.int64)
        self._child_tok = np.zeros(0, dtype=np.int32)
        self._child_node = np.zeros(0, dtype=np.int32)
        self._terminal = np.zeros(1, dtype=bool)
        self._size = 0
        # the node each looked-up prefix ends at (None: not in the trie); a beam's prefix grows by one token a step,
        # so its lookup walks one edge from the node of the step before instead of from the root
        self._nodes: dict[tuple[int, ...], int | None] = {}
        if self._pending:
            self._rebuild()

    # ------------------------------------------------------------------ building
    def _rebuild(self) -> None:
        seqs = sorted(set(self._stored()) | self._pending)
        self._pending = set()
        self._nodes = {}
        parents: list[int] = []
        tokens: list[int] = []
        terminal = [False]
        path: list[int] = [0]  # node ids along the current sequence, path[d] = node at depth d
        prev: tuple[int, ...] = ()
        for seq in seqs:
            lcp = 0
            limit = min(len(seq), len(prev))
            while lcp < limit and seq[lcp] == prev[lcp]:
                lcp += 1
            del path[lcp + 1 :]
            for d in range(lcp, len(seq)):
                node = len(terminal)
                parents.append(path[d])
                tokens.append(seq[d])
                terminal.append(False)
                path.append(node)
            terminal[path[len(seq)]] = True
            prev = seq
        n_nodes = len(terminal)
        par = np.asarray(parents, dtype=np.int64)
        # edges are emitted in sorted-token order per parent, so a stable sort by parent gives the CSR slices
        order = np.argsort(par, kind="stable")
        self._child_tok = np.asarray(tokens, dtype=np.int32)[order]
        self._child_node = (order + 1).astype(np.int32)  # edge i created node i + 1
        counts = np.bincount(par, minlength=n_nodes) if len(par) else np.zeros(n_nodes, dtype=np.int64)
        self._start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._terminal = np.asarray(terminal, dtype=bool)
        self._size = len(seqs)

    def _ensure_built(self) -> None:
        if self._pending:
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

    def add(self, sequence: Sequence[int]) -> bool:
        """Insert one sequence; returns False when it was already there (merged on the next query).

        Examples:
            >>> t = TokenTrie(eos_token_id=0)
            >>> t.add([3, 4]), t.add([3, 4]), len(t)
            (True, False, 1)
        """
        ids = _check(sequence, self.eos_token_id)
        if ids in self._pending:
            return False
        node = self._find(ids, built_only=True)
        if node is not None and bool(self._terminal[node]):
            return False
        self._pending.add(ids)
        return True

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

    def __repr__(self) -> str:
        return f"TokenTrie(<{len(self)} sequences>, eos_token_id={self.eos_token_id})"
