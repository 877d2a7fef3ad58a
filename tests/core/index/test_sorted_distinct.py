"""distinct_sorted: the distinct values of any sorted run, from far fewer reads than the run has positions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from retrievekit.core.index.sorted_distinct import distinct_sorted


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.integers(1, 400), min_size=1, max_size=60),
    gaps=st.lists(st.integers(1, 5), min_size=60, max_size=60),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_the_same_values_as_reading_every_position(counts, gaps, cut):
    run = np.repeat(np.cumsum(gaps[: len(counts)]), counts)
    lo, hi = sorted(int(c * run.size) for c in cut)
    assert distinct_sorted(lambda p: run[p], lo, hi).tolist() == np.unique(run[lo:hi]).tolist()


def test_a_long_run_of_few_values_is_read_at_few_positions():
    run = np.repeat(np.arange(1000), np.random.default_rng(0).integers(1, 5000, size=1000))
    reads: list[int] = []

    def read(pos):
        reads.append(int(pos.size))
        return run[pos]

    assert distinct_sorted(read, 0, run.size).tolist() == list(range(1000))
    assert sum(reads) < run.size / 10  # about 2.5 million positions, 1,000 values
