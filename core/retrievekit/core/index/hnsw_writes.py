"""When a build has Chroma write its HNSW graph: every few thousand objects, and once more at the build's last.

Chroma keeps the objects added since its last write of the graph in a log, and each addition works through that
log, so a build that writes the graph only at its end grows with the square of its size (``benchmarks/scale.py``:
100,000 SciFact-length documents took 198.6 CPU seconds that way, 65.2 with a write every 4,096 objects). Objects
past the last write are inserted again from the log whenever a process opens the collection, in an order that
varies from one process to the next. So a build writes the graph every :data:`SYNC_EVERY` objects (a whole number
of batches), and plans its last requests so that the last write lands on the last object: every open then loads
the same complete graph.

Chroma writes when an add request brings the objects since its last write to the threshold or past it, and it
reads the threshold once per collection it has open (changing it later does not take effect), so the plan is in
the requests: whole batches up to the last whole threshold but one, then requests that stay one object short of
the threshold, then one request that crosses it with the rest.

Examples:
    >>> write_every(20_000, step=256, most=5461)
    4096
    >>> add_requests(1730, step=100, every=500)[-3:]
    [(1300, 1400), (1400, 1499), (1499, 1730)]
"""

from __future__ import annotations

from typing import Any

from retrievekit.core.index.chroma_clients import _max_batch, add_step

__all__ = ["SYNC_EVERY", "add_requests", "build_write_every", "hnsw_settings", "write_every"]

SYNC_EVERY = 4096
"""Objects between two writes of a building collection's HNSW graph (measured: see docs/benchmarks.md, Scale)."""


def write_every(n: int, *, step: int, most: int) -> int:
    """The write threshold for a build of ``n`` objects added ``step`` at a time (``step`` at most ``most``, the
    client's largest request): a whole number of batches near :data:`SYNC_EVERY` and within ``most``, or ``n`` (at
    least 2, Chroma's minimum) when the build is that small.

    Examples:
        >>> write_every(100_000, step=1000, most=5461)
        4000
        >>> write_every(500, step=256, most=5461)
        500
    """
    every = max(2, step * max(1, min(round(SYNC_EVERY / step), most // step)))  # Chroma's minimum is 2
    return max(2, n) if n <= every else every


def build_write_every(n: int, batch_size: int, client: Any) -> int:
    """:func:`write_every` for a build of ``n`` objects sent ``batch_size`` at a time to ``client``.

    Examples:
        >>> import tempfile
        >>> from retrievekit.core.index.chroma_clients import persistent_client
        >>> build_write_every(20_000, 256, persistent_client(tempfile.mkdtemp()))
        4096
    """
    return write_every(n, step=add_step(batch_size, client), most=_max_batch(client))


def add_requests(n: int, *, step: int, every: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` of each add request of a build of ``n`` objects with a write every ``every`` (a multiple
    of ``step``): ``step`` at a time, except the last ``every + n % every`` objects, which stay one object short of
    ``every`` until a last request of ``n % every + 1`` objects (at most ``every``) crosses it.

    Examples:
        >>> add_requests(5, step=2, every=5)
        [(0, 2), (2, 4), (4, 5)]
        >>> add_requests(7, step=2, every=4)
        [(0, 2), (2, 3), (3, 7)]
    """
    rest = n % every
    if n <= every or rest == 0:
        return [(s, min(s + step, n)) for s in range(0, n, step)]
    last = n - every - rest  # the last segment starts on a write, a multiple of every (so of step)
    out = [(s, s + step) for s in range(0, last, step)]
    short = last + every - 1  # one object short of the threshold
    for s in range(last, short, step):
        out.append((s, min(s + step, short)))
    return [*out, (short, n)]


def hnsw_settings(threshold: int) -> dict[str, int]:
    """Chroma's HNSW settings for a write every ``threshold`` objects (its brute-force buffer may not exceed it).

    Examples:
        >>> hnsw_settings(4096)
        {'sync_threshold': 4096, 'batch_size': 100}
        >>> hnsw_settings(7)["batch_size"]
        7
    """
    return {"sync_threshold": threshold, "batch_size": min(100, threshold)}
