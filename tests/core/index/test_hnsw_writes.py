"""add_requests: a build's add requests cover every object once, none is larger than Chroma accepts, and the objects
since Chroma's last write of the graph reach its threshold exactly at the last request (so the last write lands on
the last object)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrievekit.core.index.hnsw_writes import add_requests, write_every


@settings(max_examples=400, deadline=None)
@given(n=st.integers(1, 60_000), step=st.integers(1, 6_000), most=st.integers(2, 6_000))
def test_requests_end_on_a_write(n, step, most):
    step = min(step, most)  # DenseIndex caps its batches at the client's largest request
    every = write_every(n, step=step, most=most)
    requests = add_requests(n, step=step, every=every)
    assert [a for a, _ in requests] == [0] + [b for _, b in requests[:-1]] and requests[-1][1] == n
    assert all(0 < b - a <= max(step, min(every, most)) for a, b in requests)
    since = 0  # what Chroma does: write when the objects since its last write reach the threshold
    for i, (a, b) in enumerate(requests):
        since += b - a
        if since >= every:
            since = 0
        elif i == len(requests) - 1:
            assert n == 1  # only a one-object build stays below Chroma's minimum threshold of 2
    assert since == 0 or n == 1
