"""Objects cross process boundaries (PyTorch workers, multiprocessing, Ray): every public
object pickles with its fields, a Dataset reopens its files in the new process (and after
fork), and readers give back file descriptors and threads when iteration stops early."""

import gc
import multiprocessing
import os
import pickle
import threading

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.arrays.sources import open_arrays

N = 300


@pytest.fixture
def dataset_path(tmp_path):
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 9, N)
    cols = {
        "label": np.arange(N),
        "x": rng.random((N, 4), dtype=np.float32),
        "tokens": tn.Ragged.from_lengths(rng.integers(0, 99, lengths.sum()), lengths),
    }
    paths, spec = tn.write(tmp_path / "d.tfrecord", cols, records_per_shard=100, progress=False)
    return paths, spec, cols


def _roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


SPECS = [
    tn.FixedLen((3,), "float32", default=[1, 2, 3]),
    tn.VarLen("int64", inner_shape=(4,)),
    tn.Raw("uint16", shape=(-1, 2)),
    tn.Bytes(default=b"?"),
    tn.Sequence({"c": tn.FixedLen((), "int64")}, {"s": tn.VarLen("float32")}),
]


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_specs_pickle(spec):
    back = _roundtrip(spec)
    assert back == spec and repr(back) == repr(spec)


def test_errors_keep_their_fields_through_pickle():
    error = tn.CorruptRecordError("payload CRC mismatch", path="a.tfrecord", record=7, offset=99)
    error.skipped = 40
    back = _roundtrip(error)
    assert type(back) is tn.CorruptRecordError and isinstance(back, ValueError)
    assert (back.reason, back.path, back.record, back.offset, back.skipped) == (
        "payload CRC mismatch",
        "a.tfrecord",
        7,
        99,
        40,
    )
    assert str(back) == str(error)
    budget = tn.MemoryBudgetError("too big")
    budget.estimate, budget.budget = 10, 5
    back = _roundtrip(budget)
    assert (str(back), back.estimate, back.budget) == ("too big", 10, 5)
    for cls in (tn.SchemaError, tn.RandomAccessError, tn.TFRecordError):
        back = _roundtrip(cls("why"))
        assert type(back) is cls and str(back) == "why"


def test_columns_write_results_and_decoders_pickle(dataset_path):
    paths, spec, cols = dataset_path
    result = tn.write(paths[0] + ".copy", {"label": cols["label"]}, progress=False)
    back = _roundtrip(result)
    assert (back.paths, back.spec, back.records, back.bytes) == (
        result.paths,
        result.spec,
        N,
        result.bytes,
    )
    assert tuple(back) == (result.paths, result.spec)
    assert _roundtrip(cols["tokens"]) == cols["tokens"]
    assert _roundtrip(tn.BytesColumn.from_list([b"a", b""])) == tn.BytesColumn.from_list(
        [b"a", b""]
    )
    decoder = _roundtrip(tn.Decoder(spec))
    batch = next(tn.RecordReader(paths).batches(10))
    assert np.array_equal(decoder.decode(batch)["x"], cols["x"][:10])


def test_a_dataset_pickles_without_its_open_files(dataset_path):
    paths, spec, cols = dataset_path
    ds = tn.open(paths, spec)
    assert ds[5]["label"] == 5  # opens (and keeps) a handle
    back = _roundtrip(ds.shard(3, 1))
    assert len(back) == 100 and back[0]["label"] == 100
    assert np.array_equal(back[[3, 1]]["x"], cols["x"][[103, 101]])
    assert back.spec == spec


def _child_reads(payload, queue):
    ds = pickle.loads(payload)
    batch = ds[[0, 150, 299]]
    queue.put((os.getpid(), batch["label"].tolist(), batch["tokens"].to_list()))


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_dataset_reads_in_a_child_process(dataset_path, method):
    paths, spec, cols = dataset_path
    ds = tn.open(paths, spec)
    assert ds[1]["label"] == 1  # the parent holds open handles (and a lock) before forking
    context = multiprocessing.get_context(method)
    queue = context.Queue()
    child = context.Process(target=_child_reads, args=(pickle.dumps(ds), queue))
    child.start()
    pid, labels, tokens = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0 and pid != os.getpid()
    assert labels == [0, 150, 299]
    assert tokens == cols["tokens"].take([0, 150, 299]).to_list()


def test_after_fork_the_child_opens_its_own_files(dataset_path):
    paths, spec, _ = dataset_path
    ds = tn.open(paths, spec)
    assert ds[0]["label"] == 0
    parent_handles = dict(ds._files._handles)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: same object, new process
        ok = ds[250]["label"] == 250 and all(
            ds._files._handles.get(f) is not h for f, h in parent_handles.items()
        )
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def _threads() -> set[str]:
    """tfrecnp's threads at work (stage threads wait idle between passes)."""
    return {
        t.name
        for t in threading.enumerate()
        if t.name.startswith("tfrecnp") and t.name != "tfrecnp-idle"
    }


@pytest.mark.parametrize("shuffle", [False, 64])
def test_stopping_early_releases_files_and_threads(dataset_path, shuffle):
    paths, spec, _ = dataset_path
    fds, threads = _open_fds(), _threads()
    ds = tn.open(paths, spec)
    for i, _batch in enumerate(ds.batches(8, shuffle=shuffle, seed=1)):
        if i == 2:
            break
    ds.close()
    del ds, _batch
    gc.collect()
    assert _open_fds() <= fds
    assert _threads() <= threads


def test_an_exception_in_the_consumer_releases_threads(dataset_path):
    paths, spec, _ = dataset_path
    threads = _threads()
    with tn.open(paths, spec) as ds:
        batches = ds.batches(8)
        with pytest.raises(RuntimeError, match="consumer failed"):
            for _ in batches:
                raise RuntimeError("consumer failed")
        batches.close()
    assert _threads() <= threads


def test_open_arrays_closes_what_it_opened_when_a_member_fails(tmp_path):
    import h5py

    path = tmp_path / "data.h5"
    with h5py.File(path, "w") as f:
        f["a"] = np.arange(3)
        f["scalar"] = 1.5
    fds = _open_fds()
    with pytest.raises(ValueError, match="dataset 'scalar' is a scalar") as failure:
        open_arrays(path, key=["a", "scalar"])
    # checked while the traceback (which holds the function's locals) is still alive, so
    # that only an explicit close, not garbage collection, can have released the file
    assert failure.value is not None and _open_fds() <= fds
