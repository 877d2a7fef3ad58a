"""``RowFile``: rows written to a file and read back as an array would give them (issue #63: a streamed LATTICE
build keeps ten million vectors there instead of in memory or in a mapping that would count in its resident set)."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.row_file import RowFile
from retrievekit.core.lattice import clustering
from retrievekit.core.lattice.clustering import balanced_groups


def test_any_rows_read_back_are_the_rows_written(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1000, 7)).astype(np.float32)
    rows = RowFile(tmp_path / "rows.f32")
    for start in range(0, 1000, 333):  # appended in uneven blocks
        rows.append(x[start : start + 333])
    assert rows.shape == (1000, 7)
    for _ in range(20):  # unsorted, repeated, runs and gaps
        idx = rng.integers(0, 1000, size=int(rng.integers(0, 300)))
        assert np.array_equal(rows[idx], x[idx])
    assert np.array_equal(rows[10:400], x[10:400]) and rows[5:5].shape == (0, 7)
    view = rows.view(100, 900)
    assert len(view) == 800 and np.array_equal(view[np.array([0, 799, 5])], x[[100, 899, 105]])
    assert np.array_equal(view[790:900], x[890:900])  # a slice past the end stops at the view's end


def test_misuse_is_a_typed_error(tmp_path):
    rows = RowFile(tmp_path / "r")
    rows.append(np.ones((3, 4)))
    with pytest.raises(InvalidInputError, match="width 4"):
        rows.append(np.ones((2, 5)))
    with pytest.raises(InvalidInputError, match="read-only"):
        rows.view(0, 2).append(np.ones((1, 4)))
    with pytest.raises(IndexError):
        rows[np.array([3])]
    with pytest.raises(InvalidInputError, match="step 1"):
        rows[::2]


def test_grouping_rows_in_a_file_gives_the_groups_of_the_same_rows_in_memory(tmp_path):
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((30, 8))  # 60,000 rows: the first split fits its centres on a sample of them
    x = (centres[rng.integers(0, 30, size=60_000)] + 0.3 * rng.standard_normal((60_000, 8))).astype(np.float32)
    rows = RowFile(tmp_path / "x.f32")
    rows.append(x)
    assert balanced_groups(rows, 10, seed=4) == balanced_groups(x, 10, seed=4)
    assert balanced_groups(rows.view(1000, 4000), 10, seed=1) == balanced_groups(x[1000:4000], 10, seed=1)


def _clustered(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((30, 8))
    return (centres[rng.integers(0, 30, size=n)] + 0.3 * rng.standard_normal((n, 8))).astype(np.float32)


def test_a_file_larger_than_memory_is_read_in_order_once_per_depth_and_groups_as_in_memory(tmp_path, monkeypatch):
    x = _clustered(60_000)
    monkeypatch.setattr(clustering, "IN_MEMORY_BYTES", 8 * 4 * 100)  # parts over 100 rows stay in files: 3 depths
    reads: list[tuple[str, int, int]] = []
    real = RowFile._read_runs

    def logged(self, rows):
        reads.append((self.path.name, rows.size, int(rows[-1] - rows[0] + 1) if rows.size else 0))
        return real(self, rows)

    monkeypatch.setattr(RowFile, "_read_runs", logged)
    rows = RowFile(tmp_path / "x.f32")
    rows.append(x)
    assert balanced_groups(rows, 10, seed=4) == balanced_groups(x, 10, seed=4)
    gathers = [size for _, size, span in reads if size != span]  # reads that are not one run of consecutive rows
    assert gathers == [clustering.SAMPLE_PER_CENTRE * clustering.SPLIT_BRANCHING]  # only the first split's sample
    top = sum(size for name, size, _ in reads if name == "x.f32")
    assert 60_000 < top <= 3 * 60_000  # the sample, the labels' pass and the pass writing the parts out
    parts = sum(size for name, size, _ in reads if name != "x.f32")
    assert parts <= 3 * 2 * 60_000  # each deeper file: its labels and its own parts, or read whole once
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.f32"]  # the scratch parts are gone


def test_a_grouping_that_fails_leaves_no_scratch_files(tmp_path, monkeypatch):
    monkeypatch.setattr(clustering, "IN_MEMORY_BYTES", 8 * 4 * 100)
    rows = RowFile(tmp_path / "x.f32")
    rows.append(_clustered(30_000))
    real, calls = clustering.split_labels, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:  # after the first split wrote its parts out and a part of it wrote its own
            raise MemoryError("out of memory")
        return real(*args, **kwargs)

    monkeypatch.setattr(clustering, "split_labels", failing)
    with pytest.raises(MemoryError):
        balanced_groups(rows, 10, seed=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.f32"]
