"""``PreadArray``: an array left in its ``.npy`` file and read with ``pread`` answers as ``np.load`` does (elements,
slices, gathers near and far, views), maps nothing, and a file that is not the array it should be is a typed error
naming it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrievekit.core.errors import IndexFormatError
from retrievekit.core.index.insertion_point import insertion_point
from retrievekit.core.index.pread_array import FENCE, SPAN, PreadArray


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16, np.float32, ">i4"])
def test_reads_answer_as_the_loaded_array(tmp_path, dtype):
    rng = np.random.default_rng(3)
    held = rng.integers(-(2**15) if np.dtype(dtype).kind == "i" else 0, 2**15, size=200_000).astype(dtype)
    np.save(tmp_path / "a.npy", held)
    a = PreadArray.open(tmp_path / "a.npy", dtype)
    assert a.size == len(a) == held.size and a.nbytes == held.nbytes and a.dtype == held.dtype
    for i in [0, 1, 12_345, held.size - 1, -1, -held.size]:
        assert a[i] == held[i]
    for lo, hi in [(0, 0), (0, 10), (99_990, 100_010), (199_000, 300_000)]:
        got = a[lo:hi]
        assert got.dtype == held.dtype and np.array_equal(got, held[lo:hi])
    near = np.sort(rng.integers(5_000, 5_000 + SPAN // 8, size=300))  # one read of their span
    far = rng.integers(0, held.size, size=500)  # one read each, in the order asked
    for positions in (near, far, far[::-1], np.array([7, 7, 7]), np.zeros(0, dtype=np.int64), far.reshape(20, 25)):
        got = a[positions]
        assert got.shape == positions.shape and np.array_equal(got, held[positions])
    v = a.view(1_000, 2_000)
    assert v.size == 1_000 and v[0] == held[1_000] and np.array_equal(v[np.array([999, 3])], held[[1_999, 1_003]])
    assert str(tmp_path) not in Path("/proc/self/maps").read_text()  # nothing of the file is mapped


@pytest.mark.parametrize("size", [0, 1, FENCE - 1, FENCE, FENCE + 1, 3 * FENCE, (1 << 16) + 5, 200_003])
@pytest.mark.parametrize("dtype", [np.int32, np.uint64])
def test_a_sorted_array_in_its_file_finds_where_a_value_goes_as_searchsorted_does(tmp_path, size, dtype):
    rng = np.random.default_rng(size)
    held = np.sort(rng.integers(0, max(size // 3, 2), size=size)).astype(dtype)  # runs of equal values
    np.save(tmp_path / "s.npy", held)
    a = PreadArray.open(tmp_path / "s.npy", dtype)
    values = [0, *rng.integers(0, max(size // 3, 2) + 1, size=300).tolist(), *held[:: max(FENCE // 2, 1)].tolist()]
    for v in values + ([int(held[-1]), int(held[-1]) + 1] if size else []):
        assert a.insertion_point(dtype(v)) == int(np.searchsorted(held, dtype(v))), v
        assert insertion_point(a, v) == insertion_point(held, v)
    assert insertion_point(a, -1) == 0 and insertion_point(a, 2**70) == size  # outside the dtype: no read
    assert a.view(size // 2, size).insertion_point(dtype(0)) == 0


def test_out_of_range_reads_are_index_errors(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(10, dtype=np.int32))
    a = PreadArray.open(tmp_path / "a.npy", np.int32)
    for bad in (10, -11):
        with pytest.raises(IndexError, match="out of bounds"):
            a[bad]
    with pytest.raises(IndexError, match="out of bounds"):
        a[np.array([3, 10])]
    with pytest.raises(IndexError, match="step 1"):
        a[::2]
    assert a[8:20].tolist() == [8, 9]  # a slice is clipped, as numpy's


def test_a_file_that_is_not_the_array_is_a_typed_error_naming_it(tmp_path):
    np.save(tmp_path / "f.npy", np.zeros(4, dtype=np.float32))
    np.save(tmp_path / "m.npy", np.zeros((2, 2), dtype=np.int32))
    np.save(tmp_path / "ok.npy", np.arange(1000, dtype=np.int32))
    (tmp_path / "junk.npy").write_bytes(b"not an array at all")
    cut = tmp_path / "cut.npy"
    cut.write_bytes((tmp_path / "ok.npy").read_bytes()[:-100])
    cases = [("f.npy", "holds float32"), ("m.npy", r"shape \(2, 2\)"), ("junk.npy", "corrupt"), ("cut.npy", "size")]
    for name, says in [*cases, ("none.npy", "missing")]:
        with pytest.raises(IndexFormatError, match=f"{name}.*{says}|{says}.*{name}|{name} is {says}"):
            PreadArray.open(tmp_path / name, np.int32)
    a = PreadArray.open(tmp_path / "ok.npy", np.int32)
    (tmp_path / "ok.npy").write_bytes((tmp_path / "ok.npy").read_bytes()[:200])  # cut after opening
    with pytest.raises(IndexFormatError, match="cut short"):
        a[900]
    with pytest.raises(IndexFormatError, match="cut short"):
        a[800:900]


def test_a_pickled_or_copied_array_opens_its_file_again(tmp_path):
    import copy
    import pickle

    np.save(tmp_path / "a.npy", np.arange(100, dtype=np.int64))
    a = PreadArray.open(tmp_path / "a.npy", np.int64).view(10, 20)
    for twin in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):
        assert twin._file.fd != a._file.fd and twin[0] == 10 and twin[5:7].tolist() == [15, 16]
    a.close()
    with pytest.raises(OSError):
        a[0]


def test_a_matrix_reads_whole_rows(tmp_path):
    rng = np.random.default_rng(5)
    held = rng.normal(size=(3_000, 7)).astype(np.float32)
    np.save(tmp_path / "m.npy", held)
    with pytest.raises(IndexFormatError, match="expected a 1-d float32"):
        PreadArray.open(tmp_path / "m.npy", np.float32)
    m = PreadArray.open(tmp_path / "m.npy", np.float32, ndim=2)
    assert m.shape == held.shape and m.ndim == 2 and len(m) == 3_000 and m.nbytes == held.nbytes
    assert np.array_equal(m[17], held[17]) and np.array_equal(m[-1], held[-1])
    assert np.array_equal(m[10:13], held[10:13]) and m[5:5].shape == (0, 7)
    for positions in (np.array([2_999, 0, 5]), rng.integers(0, 3_000, size=400), np.zeros(0, dtype=np.int64)):
        assert np.array_equal(m[positions], held[positions])
    v = m.view(100, 200)
    assert v.shape == (100, 7) and np.array_equal(v[np.array([0, 99])], held[[100, 199]])
