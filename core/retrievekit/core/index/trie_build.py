"""A token trie's arrays built with whole-array operations: no Python object per node or per sequence held.

:class:`~retrievekit.core.index.token_trie.TokenTrie` stores a trie as CSR arrays (per node a slice of sorted child
tokens and child node ids, and a "a sequence ends here" flag). Building them from sorted Python tuples took about
3.5 GB for a million titles, so ten million did not fit on a 24 GB machine. Here the sequences are packed one after
another into one integer array (4 bytes a token, :func:`packed`), sorted :data:`WIDTH` tokens at a time and made
distinct (:func:`sorted_distinct`: all of them by their first tokens as one key each, then only the ties that go on
by their next tokens), and the arrays come from each sequence's common prefix with the one before
(:func:`csr_arrays`). The node ids are the ones the one-sequence-at-a-time build gave (nodes numbered in the order
the sorted sequences create them), so a saved trie is the same file either way.

Examples:
    >>> tokens, lengths = packed([[1, 2, 3], [1, 2], [4], [1, 2]])
    >>> order, shared = sorted_distinct(tokens, lengths)
    >>> order.tolist(), shared.tolist()  # [1, 2], [1, 2, 3], [4]: common prefixes 0, 2, 0
    ([1, 0, 2], [0, 2, 0])
    >>> start, child_tok, child_node, terminal = csr_arrays(tokens, lengths, order, shared)
    >>> start.tolist(), child_tok.tolist(), child_node.tolist(), terminal.tolist()
    ([0, 2, 3, 4, 4, 4], [1, 4, 2, 3], [1, 4, 2, 3], [False, False, True, True, True])
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["WIDTH", "csr_arrays", "packed", "sorted_distinct"]


def packed(sequences: Iterable[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The sequences' tokens one after another (``int32``) and each sequence's length (``int64``), read from an
    iterable one sequence at a time (a stream of ten million titles costs its tokens, 4 bytes each).

    Raises:
        InvalidInputError: a token id that does not fit in 31 bits (the trie stores ``int32`` tokens).

    Examples:
        >>> tokens, lengths = packed([[5, 6], [7]])
        >>> tokens.tolist(), lengths.tolist()
        ([5, 6, 7], [2, 1])
    """
    tokens, lengths = array("i"), array("q")
    for seq in sequences:
        try:
            tokens.extend(seq)
        except OverflowError as e:
            raise InvalidInputError(f"token ids must be below 2**31, got {list(seq)}") from e
        lengths.append(len(seq))
    return np.frombuffer(tokens, dtype=np.int32), np.frombuffer(lengths, dtype=np.int64)


WIDTH = 32
"""Tokens of each sequence compared at a time: the first ``WIDTH`` of every sequence are sorted as one key, and only
sequences that tie on all of them (and go on) are compared on their next ``WIDTH``, and so on."""


def _chunk(tokens: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, which: np.ndarray, c: int) -> np.ndarray:
    """Tokens ``c * WIDTH`` to ``(c + 1) * WIDTH`` of the sequences ``which``, as big-endian rows of ``token + 1``
    padded with 0 (byte order is the tokens' order: a row sorts as one key), one column at a time."""
    rows = np.zeros((which.size, WIDTH), dtype=">u4")
    held, at = lengths[which], offsets[which]
    for j in range(WIDTH):
        has = np.flatnonzero(held > c * WIDTH + j)
        rows[has, j] = tokens[at[has] + c * WIDTH + j].astype(np.uint32) + 1  # below 2**31: fits
    return rows


def sorted_distinct(tokens: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct sequences of :func:`packed` in lexicographic order (a sequence before its extensions), as the
    index of each in the packed order, and each one's common prefix length with the one before (0 for the first).

    1. Sort every sequence by its first :data:`WIDTH` tokens (one key a row).
    2. Sequences that tie on every token compared so far and go on past them are sorted again, within their tie,
       by their next :data:`WIDTH` tokens; repeat while ties go on. Memory: 4 bytes times :data:`WIDTH` a sequence
       at a time, whatever the longest sequence's length.
    3. A sequence still tied with the one before it is the same sequence: dropped.

    Examples:
        >>> order, shared = sorted_distinct(*packed([[3], [1, 2], [1], [1, 2]]))
        >>> order.tolist(), shared.tolist()  # [1], [1, 2], [3]
        ([2, 1, 0], [0, 1, 0])
    """
    n = lengths.size
    offsets = (np.cumsum(lengths) - lengths).astype(np.int64)
    order = np.arange(n, dtype=np.int64)
    tied = np.ones(n, dtype=bool)  # position i equals position i - 1 on every token compared so far
    tied[:1] = False
    shared = np.zeros(n, dtype=np.int64)
    todo, c = order.copy(), 0  # the positions sorted by chunk c: whole ties, in order
    while todo.size:
        tie = np.cumsum(~tied[todo])  # each position's tie so far: the major key
        rows = _chunk(tokens, offsets, lengths, order[todo], c)
        key = np.empty((todo.size, WIDTH + 2), dtype=">u4")  # big-endian throughout: numpy's concatenate is not
        key[:, :2], key[:, 2:] = tie.astype(">u8")[:, None].view(">u4"), rows
        by = np.argsort(key.view(np.dtype((np.void, 4 * key.shape[1]))).ravel(), kind="stable")
        del key
        order[todo], rows = order[todo][by], rows[by]  # each tie stays where it was, sorted within
        diff, within = rows[1:] != rows[:-1], tie[1:] == tie[:-1]
        same = np.concatenate([[False], within & ~diff.any(axis=1)])
        broke = np.flatnonzero(within & ~same[1:])  # the pairs this chunk told apart: their common prefix
        shared[todo[broke + 1]] = c * WIDTH + np.argmax(diff[broke], axis=1)
        tied[todo] = same
        group = np.cumsum(~same)  # 2. the ties now; one of two or more with a sequence that goes on is sorted again
        going = np.bincount(group, weights=lengths[order[todo]] > (c + 1) * WIDTH)
        again = (np.bincount(group) >= 2) & (going > 0)
        todo, c = todo[again[group]], c + 1
    keep = ~tied  # 3.
    return order[keep], shared[keep]


def csr_arrays(
    tokens: np.ndarray, lengths: np.ndarray, order: np.ndarray, shared: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(start, child_tok, child_node, terminal)`` of the trie over the sequences of :func:`packed` taken in the
    ``order`` of :func:`sorted_distinct` (``shared``: each one's common prefix with the one before): the children of
    node ``n`` are ``child_tok`` / ``child_node[start[n]:start[n + 1]]``, sorted by token; node 0 is the root.

    1. The part of each sequence past its common prefix with the one before is new nodes, numbered sequence by
       sequence.
    2. A new node's parent is the node before it on its sequence, except the first new node of a sequence, whose
       parent is the node at the prefix's last depth: made by the last earlier sequence that made a node at that depth.
    3. Edges sorted by parent (stably: within a parent, by token, as the sequences are sorted) give the slices.

    Examples:
        >>> tokens, lengths = packed([[7, 9], [7, 8]])
        >>> start, tok, node, end = csr_arrays(tokens, lengths, *sorted_distinct(tokens, lengths))
        >>> start.tolist(), tok.tolist(), node.tolist(), end.tolist()
        ([0, 1, 3, 3, 3], [7, 8, 9], [1, 2, 3], [False, False, True, True])
    """
    n_rows = order.size
    offsets = (np.cumsum(lengths) - lengths)[order] if n_rows else np.zeros(0, dtype=np.int64)
    lengths = lengths[order].astype(np.int64)
    new = lengths - shared  # 1. at least 1: a sequence is never a prefix of the one before it
    first = np.concatenate([[1], 1 + np.cumsum(new)[:-1]]) if n_rows else np.zeros(0, dtype=np.int64)
    edges = int(new.sum())
    row = np.repeat(np.arange(n_rows), new)
    depth = np.arange(edges) - (first[row] - 1) + shared[row]
    edge_tokens = tokens[offsets[row] + depth]
    parent = np.arange(edges, dtype=np.int64)  # 2. edge j makes node j + 1; its parent: node j, the one before it
    heads = first - 1
    parent[heads] = 0
    for d in np.unique(shared[shared > 0] - 1).tolist():
        wanting = np.flatnonzero(shared == d + 1)
        making = np.flatnonzero((shared <= d) & (lengths > d))
        maker = making[np.searchsorted(making, wanting) - 1]
        parent[heads[wanting]] = first[maker] + (d - shared[maker])
    by_parent = np.argsort(parent, kind="stable")  # 3.
    counts = np.bincount(parent, minlength=edges + 1)
    terminal = np.zeros(edges + 1, dtype=bool)
    terminal[first + new - 1] = True
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return start, edge_tokens[by_parent].astype(np.int32), (by_parent + 1).astype(np.int32), terminal
