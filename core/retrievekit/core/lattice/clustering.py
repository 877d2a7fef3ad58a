"""Deterministic balanced clustering for the bottom-up build: groups of at most M items (numpy only).

:func:`balanced_groups` splits top down: a set larger than M is cut by seeded k-means (k-means++ start, Lloyd
iterations) into ``k = min(B, ceil(n / M))`` parts (B = :data:`SPLIT_BRANCHING`), and every part larger than M is
cut again, so the work grows like ``n log_B n`` (each level of splits touches every point once with at most B
centres) instead of the ``n * n / M`` of one k-means with ``n / M`` centres; a set of at most ``B * M`` points gets
that one k-means, as before. A set of more than :data:`SAMPLE_PER_CENTRE` points per centre fits its centres on a
seeded sample of that size and then assigns every point (faiss's default of 256 training points per centroid). When k-means cannot split a set (identical vectors, e.g. duplicate documents) the set is cut
into equal chunks along its first principal direction, so every group ends up with at most M items and the number
of groups shrinks level after level. Groups and their members are returned in a canonical order. Vectors are
processed as float32; only the part being split is copied.

Rows in a :class:`~retrievekit.core.index.row_file.RowFile` are read once per split depth at most, and in order: a
part of the file of at most :data:`IN_MEMORY_BYTES` is read whole and its sub-splits gather from that copy; a bigger
one is split reading it block by block, then written out by label in one more sequential pass into scratch files
beside it (removed as they are read), so no split gathers scattered rows from a file larger than memory.

:func:`kmeans` is the flat k-means the top-down builder uses to repair partitions.

Examples:
    >>> import numpy as np
    >>> x = np.array([[0, 0], [0, 0.1], [5, 5], [5, 5.1], [9, 0]], dtype=float)
    >>> balanced_groups(x, max_size=2, seed=0)
    [[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.row_file import RowFile

__all__ = ["IN_MEMORY_BYTES", "SAMPLE_PER_CENTRE", "SPLIT_BRANCHING", "balanced_groups", "kmeans", "split_labels"]

SPLIT_BRANCHING = 200
"""B, the most centres one split uses (*ours*, chosen by measurement: on whole SciFact's MiniLM vectors B = 10 lost
8 % of the flat k-means' mean within-group cosine, B = 100 3 %, B = 200 2 %; a point's misassignments compound
over the levels, so fewer, wider levels keep the groups tight; ``benchmarks/lattice_grouping.py``)."""

SAMPLE_PER_CENTRE = 256
"""A split of more than this many points per centre fits its centres on a seeded sample of that many per centre,
then assigns all points (faiss's ``max_points_per_centroid`` default; *ours* to adopt it)."""
IN_MEMORY_BYTES = 256 * 2**20
"""A part of a row file at most this big (rows x width x 4 bytes) is read whole and split in memory; a bigger one is
written out by label into scratch files beside it (*ours*: 256 MB is 170k rows of 384 floats, and the parts of a
10M-row file split 200 ways are 77 MB each)."""
_ITERS = 25  # Lloyd iterations at most (as :func:`kmeans`)
_CHUNK = 65_536  # rows per assignment block: the distance matrix stays at most _CHUNK x k


def kmeans(x: np.ndarray, k: int, *, seed: int = 0, iters: int = 25) -> np.ndarray:
    """Labels of seeded k-means (k-means++ initialisation, Lloyd iterations); deterministic for a seed.

    Examples:
        >>> import numpy as np
        >>> kmeans(np.array([[0.0], [0.1], [9.0], [9.1]]), 2).tolist()
        [0, 0, 1, 1]
    """
    n = x.shape[0]
    if k < 1 or n == 0:
        raise InvalidInputError(f"kmeans needs k >= 1 and at least one point (k={k}, n={n})")
    k = min(k, n)
    c = _plus_plus(x, k, np.random.default_rng(seed))
    labels = np.zeros(n, dtype=np.int64)
    x_sq = (x * x).sum(1)[:, None]
    for _ in range(iters):
        # squared distances as |x|^2 - 2 x.c + |c|^2: a matrix product, never an (n, k, dim) array
        dist = x_sq - 2.0 * (x @ c.T) + (c * c).sum(1)[None, :]
        new = dist.argmin(1)
        if _ > 0 and np.array_equal(new, labels):
            break
        labels = new
        for j in range(c.shape[0]):
            members = x[labels == j]
            if len(members):
                c[j] = members.mean(0)
    # canonical label order: by first member index
    order = {int(lab): i for i, lab in enumerate(dict.fromkeys(labels.tolist()))}
    return np.array([order[int(lab)] for lab in labels], dtype=np.int64)


def _nearest(x: np.ndarray | RowFile, c: np.ndarray) -> np.ndarray:
    """Index of the nearest centre of every row (``|c|^2 - 2 x.c``, in blocks of :data:`_CHUNK` rows)."""
    c_sq = (c * c).sum(1)[None, :]
    out = np.empty(x.shape[0], dtype=np.int64)
    for start in range(0, x.shape[0], _CHUNK):
        block = x[start : start + _CHUNK]
        out[start : start + _CHUNK] = (c_sq - 2.0 * (block @ c.T)).argmin(1)
    return out


def _plus_plus(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ centres (fewer when the points run out of distinct positions)."""
    n = x.shape[0]
    first = int(rng.integers(n))
    centres = [x[first]]
    d2 = ((x - x[first]) ** 2).sum(1, dtype=np.float64)
    for _ in range(1, k):
        total = float(d2.sum())
        if total <= 1e-12:
            break
        idx = int(rng.choice(n, p=d2 / total))
        centres.append(x[idx])
        d2 = np.minimum(d2, ((x - x[idx]) ** 2).sum(1, dtype=np.float64))
    return np.stack(centres)


def _lloyd(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Lloyd iterations from centres ``c`` until the labels settle (at most :data:`_ITERS`); returns the centres."""
    labels = np.full(x.shape[0], -1, dtype=np.int64)
    rows = np.arange(x.shape[0])
    for _ in range(_ITERS):
        new = _nearest(x, c)
        if np.array_equal(new, labels):
            break
        labels = new
        counts = np.bincount(labels, minlength=c.shape[0])
        onehot = np.zeros((x.shape[0], c.shape[0]), dtype=x.dtype)
        onehot[rows, labels] = 1.0
        sums = onehot.T @ x
        filled = counts > 0  # an emptied centre keeps its place
        c[filled] = sums[filled] / counts[filled, None]
    return c


def split_labels(x: np.ndarray | RowFile, k: int, *, seed: int = 0) -> np.ndarray:
    """Labels ``0..k-1`` of one seeded k-means split of the rows of ``x`` (float32), its centres fitted on at most
    :data:`SAMPLE_PER_CENTRE` ``* k`` sampled rows; labels are numbered by first member.

    Examples:
        >>> import numpy as np
        >>> split_labels(np.array([[0.0], [9.0], [0.1], [9.1]], dtype=np.float32), 2).tolist()
        [0, 1, 0, 1]
    """
    n = x.shape[0]
    if k < 1 or n == 0:
        raise InvalidInputError(f"split_labels needs k >= 1 and at least one point (k={k}, n={n})")
    rng = np.random.default_rng(seed)
    cap = SAMPLE_PER_CENTRE * k
    sample = x[np.sort(rng.choice(n, size=cap, replace=False))] if n > cap else x[0:n]  # a RowFile: read here
    centres = _lloyd(sample, _plus_plus(sample, min(k, sample.shape[0]), rng))
    labels = _nearest(x, centres)
    _, first = np.unique(labels, return_index=True)  # canonical numbering: by each label's first member
    renumber = np.empty(centres.shape[0], dtype=np.int64)
    renumber[labels[np.sort(first)]] = np.arange(len(first))
    return renumber[labels]


def _chunk_by_projection(rows: np.ndarray | RowFile, idx: np.ndarray, max_size: int) -> list[np.ndarray]:
    """``idx`` cut into equal chunks of at most ``max_size`` along the first principal direction of its rows
    (``rows``: the matrix of ``idx``'s rows, in its order)."""
    sub = np.asarray(rows[0 : len(idx)], dtype=np.float64)
    sub = sub - sub.mean(0)
    if np.abs(sub).sum() > 1e-9:
        _, _, vt = np.linalg.svd(sub, full_matrices=False)
        proj = np.round(sub @ vt[0], 9)
    else:
        proj = np.zeros(len(idx))
    order = idx[np.lexsort((idx, proj))]  # by projection, ties by index
    n_chunks = math.ceil(len(order) / max_size)
    return [np.asarray(part) for part in np.array_split(order, n_chunks)]


@dataclass
class _Part:
    """A set waiting to be split: its row numbers ``idx`` and where its rows are (``rows[local]``, or all of ``rows``
    in order when ``local`` is None; ``owned``: ``rows`` is a scratch file of this grouping, removed once read)."""

    idx: np.ndarray
    rows: np.ndarray | RowFile
    local: np.ndarray | None = None
    owned: bool = False

    def read(self) -> np.ndarray | RowFile:
        """The part's rows: gathered from memory, a small file read whole (and removed when owned), or a big file as
        it is."""
        if self.local is not None:
            return self.rows[self.local]
        if isinstance(self.rows, RowFile) and self.rows.shape[0] * self.rows.shape[1] * 4 <= IN_MEMORY_BYTES:
            whole = self.rows[0 : len(self.rows)]
            self.drop()
            return whole
        return self.rows

    def drop(self) -> None:
        """Remove the part's scratch file, when it owns one."""
        if self.owned and isinstance(self.rows, RowFile):
            self.rows.remove()


def _children(part: _Part, rows: np.ndarray | RowFile, labels: np.ndarray, tag: str) -> list[_Part]:
    """The parts of ``part`` by label (``rows``: its rows): views into ``rows`` in memory, or for a file, scratch
    files named ``<file>.<tag>-<label>`` written in one sequential pass."""
    count = int(labels.max()) + 1
    if not isinstance(rows, RowFile):
        return [_Part(part.idx[m], rows, np.flatnonzero(m)) for m in (labels == j for j in range(count))]
    files = [RowFile(rows.path.with_name(f"{rows.path.name}.{tag}-{j}")) for j in range(count)]
    try:
        for start in range(0, len(rows), _CHUNK):
            block, lab = rows[start : start + _CHUNK], labels[start : start + _CHUNK]
            order = np.argsort(lab, kind="stable")
            bounds = np.searchsorted(lab[order], np.arange(count + 1))
            for j in np.flatnonzero(np.diff(bounds)).tolist():
                files[j].append(block[order[bounds[j] : bounds[j + 1]]])
    except BaseException:
        for f in files:
            f.remove()
        raise
    return [_Part(part.idx[labels == j], f, owned=True) for j, f in enumerate(files)]


def _as_rows(x: np.ndarray | RowFile) -> np.ndarray | RowFile:
    """``x`` as a C-contiguous float32 matrix (no copy when it already is one); a :class:`RowFile` as it is (its
    rows are read as a split asks for them)."""
    return x if isinstance(x, RowFile) else np.ascontiguousarray(np.asarray(x), dtype=np.float32)


def balanced_groups(x: np.ndarray | RowFile, max_size: int, *, seed: int = 0) -> list[list[int]]:
    """Partition the rows of ``x`` into groups of at most ``max_size`` (sorted members, groups by first member),
    splitting top down with k-means of at most :data:`SPLIT_BRANCHING` centres (see the module docstring).

    Examples:
        >>> import numpy as np
        >>> groups = balanced_groups(np.zeros((7, 3)), max_size=3)  # identical points: chunked, not stuck
        >>> [len(g) for g in groups]
        [3, 2, 2]
    """
    if max_size < 1:
        raise InvalidInputError(f"max_size must be >= 1, got {max_size}")
    x = _as_rows(x)
    n = x.shape[0]
    if n == 0:
        return []
    out: list[np.ndarray] = []
    stack = [_Part(np.arange(n), x)]
    splits = 0  # the splits so far: each split's seed is (seed, its number), in this fixed depth-first order
    try:
        while stack:
            part = stack.pop()
            if len(part.idx) <= max_size:
                out.append(part.idx)
                part.drop()
                continue
            rows = part.read()
            k = min(max(SPLIT_BRANCHING, max_size), math.ceil(len(part.idx) / max_size))
            labels = split_labels(rows, k, seed=_split_seed(seed, splits))
            splits += 1
            if labels.max() < 1:
                out.extend(_chunk_by_projection(rows, part.idx, max_size))
            else:
                stack.extend(reversed(_children(part, rows, labels, f"split{splits}")))
            part.drop()
    finally:
        for waiting in stack:
            waiting.drop()
    groups = sorted((sorted(g.tolist()) for g in out), key=lambda g: g[0])
    if len(groups) > max(1, math.ceil(0.75 * n)) and n > max_size:
        # k-means shattered the set into tiny groups: fall back to even chunks so the level shrinks.
        chunks = _chunk_by_projection(x, np.arange(n), max_size)
        groups = sorted((sorted(g.tolist()) for g in chunks), key=lambda g: g[0])
    return groups


def _split_seed(seed: int, number: int) -> int:
    """The seed of split ``number`` of a grouping seeded with ``seed`` (a fixed mix; never negative)."""
    return int(np.random.SeedSequence([abs(int(seed)), int(number)]).generate_state(1)[0])
