"""One protocol for every column kind: what `tn.load` reads lazily from HDF5 / Zarr
(`LazyBytes`, `LazyRagged`) and memory-mapped from .npy folders answers the same calls as
the in-memory `BytesColumn` and `Ragged`, with the same results."""

import numpy as np
import pytest

import tfrecnp as tn

N = 37


def _reference():
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 6, N)
    return {
        "tokens": tn.Ragged.from_lengths(rng.integers(-9, 99, lengths.sum()), lengths),
        "names": tn.BytesColumn.from_list([b"x" * int(k) for k in rng.integers(0, 9, N)]),
        "words": tn.Ragged.from_list(
            [[b"ab"] * int(k) for k in rng.integers(0, 4, N)], dtype="bytes"
        ),
    }


@pytest.fixture(scope="module", params=["memory", "npy", "hdf5", "zarr"])
def kinds(request, tmp_path_factory):
    ref = _reference()
    if request.param == "memory":
        return ref, ref
    path = (
        tmp_path_factory.mktemp("protocol")
        / {"npy": "o", "hdf5": "o.h5", "zarr": "o.zarr"}[request.param]
    )
    paths, spec = tn.write(path.with_suffix(".tfrecord"), ref, progress=False)
    tn.convert(paths, path, spec=spec, progress=False)
    return ref, tn.load(path)


@pytest.mark.parametrize("name", ["tokens", "names", "words"])
def test_every_kind_answers_the_same(kinds, name):
    ref, got = kinds
    want, col = ref[name], got[name]
    assert len(col) == len(want) == N
    assert col.lengths.tolist() == want.lengths.tolist()
    assert col.to_list() == want.to_list()
    assert [_plain(r) for r in col] == [_plain(r) for r in want]  # iteration
    assert _plain(col[5]) == _plain(want[5]) and _plain(col[-1]) == _plain(want[-1])
    assert col[3:11] == want[3:11] and col[3:11].to_list() == want.to_list()[3:11]
    assert col == want
    numpy = col.to_numpy()
    assert numpy.dtype == object and len(numpy) == N
    assert [_plain(v) for v in numpy] == [_plain(v) for v in want.to_numpy()]
    if isinstance(want, tn.Ragged) and name == "tokens":
        assert np.array_equal(col.to_padded(4, -1), want.to_padded(4, -1))


def _plain(value):
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.dtype == object else value.tolist()
    return value


@pytest.mark.parametrize("name", ["tokens", "names", "words", "boxes"])
def test_every_kind_picks_rows_and_describes_itself(kinds_with_boxes, name):
    """Row lists, masks, step slices and take() give what the in-memory kind gives, and a
    ragged column tells its dtype and inner shape whether it is on disk or in memory."""
    ref, got = kinds_with_boxes
    want, col = ref[name], got[name]
    picks = [7, 2, 2, N - 1, -3]
    assert col[picks] == want[picks] and col.take(picks) == want.take(picks)
    mask = np.arange(N) % 3 == 0
    assert col[mask] == want[mask]
    assert col[::4] == want[::4] and col[[]] == want[[]]
    assert col.dtype == want.dtype
    if isinstance(want, tn.Ragged):
        assert col.inner_shape == want.inner_shape


@pytest.fixture(scope="module", params=["memory", "npy", "hdf5", "zarr"])
def kinds_with_boxes(request, tmp_path_factory):
    ref = _reference()
    rng = np.random.default_rng(4)
    lengths = rng.integers(0, 4, N)
    ref["boxes"] = tn.Ragged.from_lengths(rng.random((lengths.sum(), 4), np.float32), lengths)
    if request.param == "memory":
        return ref, ref
    path = (
        tmp_path_factory.mktemp("picks")
        / {"npy": "o", "hdf5": "o.h5", "zarr": "o.zarr"}[request.param]
    )
    paths, spec = tn.write(path.with_suffix(".tfrecord"), ref, progress=False)
    tn.convert(paths, path, spec=spec, progress=False)
    return ref, tn.load(path)
