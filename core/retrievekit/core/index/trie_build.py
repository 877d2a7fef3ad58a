"""A token trie's arrays built with whole-array operations: no Python object per node or per sequence held.

:class:`~retrievekit.core.index.token_trie.TokenTrie` stores a trie as CSR arrays (per node a slice of sorted child
tokens and child node ids, and a "a sequence ends here" flag). Building them from sorted Python tuples took about
3.5 GB for a million titles, so ten million did not fit on a 24 GB machine. Here the sequences are packed one after
another into one integer array (4 bytes a token, :func:`packed`), laid out as the rows of a padded matrix, sorted and
made distinct in one pass (:func:`sorted_rows`), and the arrays come from the rows' common prefixes
(:func:`csr_arrays`). The node ids are the ones the one-sequence-at-a-time build gave (nodes numbered in the order
the sorted sequences create them), so a saved trie is the same file either way.

Examples:
    >>> rows = sorted_rows(*packed([[1, 2, 3], [1, 2], [4], [1, 2]]))
    >>> rows.tolist()  # token + 1, 0 after a sequence's end, sorted, distinct
    [[2, 3, 0], [2, 3, 4], [5, 0, 0]]
    >>> start, child_tok, child_node, terminal = csr_arrays(rows)
    >>> start.tolist(), child_tok.tolist(), child_node.tolist(), terminal.tolist()
    ([0, 2, 3, 4, 4, 4], [1, 4, 2, 3], [1, 4, 2, 3], [False, False, True, True, True])
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["csr_arrays", "packed", "sorted_rows"]


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


def sorted_rows(tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The distinct sequences of :func:`packed` as the rows of a matrix (``token + 1``, then 0s up to the longest
    sequence's length), in lexicographic order (a sequence before its extensions). Memory: 4 bytes times the number of
    sequences times the longest length.

    Examples:
        >>> sorted_rows(*packed([[3], [1, 2], [1]])).tolist()
        [[2, 0], [2, 3], [4, 0]]
    """
    if lengths.size == 0:
        return np.zeros((0, 0), dtype=">u4")
    width = int(lengths.max())
    rows = np.zeros((lengths.size, width), dtype=">u4")  # big-endian: byte order is the tokens' order
    rows[np.arange(width) < lengths[:, None]] = tokens.astype(np.uint32) + 1  # below 2**31: no overflow
    whole = np.unique(rows.view(np.dtype((np.void, 4 * width))).ravel())  # sorts each row's bytes as one key
    return whole.view(">u4").reshape(-1, width)


def csr_arrays(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(start, child_tok, child_node, terminal)`` of the trie over ``rows`` (:func:`sorted_rows`): the children of
    node ``n`` are ``child_tok`` / ``child_node[start[n]:start[n + 1]]``, sorted by token; node 0 is the root.

    1. Each row's common prefix with the row before it: the nodes it shares; the rest of the row is new nodes,
       numbered row by row.
    2. A new node's parent is the node before it on its row, except the first new node of a row, whose parent is the
       node at the prefix's last depth: made by the last earlier row that made a node at that depth.
    3. Edges sorted by parent (stably: within a parent, by token, as the rows are sorted) give the slices.

    Examples:
        >>> start, tok, node, end = csr_arrays(sorted_rows(*packed([[7, 8], [7, 9]])))
        >>> start.tolist(), tok.tolist(), node.tolist(), end.tolist()
        ([0, 1, 3, 3, 3], [7, 8, 9], [1, 2, 3], [False, False, True, True])
    """
    n_rows, width = rows.shape
    lengths = np.count_nonzero(rows, axis=1).astype(np.int64)
    shared = np.zeros(n_rows, dtype=np.int64)  # 1. common prefix with the row before (rows are distinct)
    if n_rows > 1:
        shared[1:] = np.argmax(rows[1:] != rows[:-1], axis=1)
    new = lengths - shared  # at least 1: a row is never a prefix of the row before it
    first = np.concatenate([[1], 1 + np.cumsum(new)[:-1]]) if n_rows else np.zeros(0, dtype=np.int64)
    edges = int(new.sum())
    row = np.repeat(np.arange(n_rows), new)
    depth = np.arange(edges) - (first[row] - 1) + shared[row]
    tokens = rows[row, depth].astype(np.int64) - 1
    parent = np.arange(edges, dtype=np.int64)  # 2. edge j makes node j + 1; its parent: node j, the one before it
    heads = first - 1
    parent[heads] = 0
    for d in np.unique(shared[shared > 0] - 1).tolist():
        wanting = np.flatnonzero(shared == d + 1)
        making = np.flatnonzero((shared <= d) & (lengths > d))
        maker = making[np.searchsorted(making, wanting) - 1]
        parent[heads[wanting]] = first[maker] + (d - shared[maker])
    order = np.argsort(parent, kind="stable")  # 3.
    counts = np.bincount(parent, minlength=edges + 1)
    terminal = np.zeros(edges + 1, dtype=bool)
    terminal[first + new - 1] = True
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return start, tokens[order].astype(np.int32), (order + 1).astype(np.int32), terminal
