"""Arrays on disk as sources (.npy, .npz, HDF5, Zarr, np.memmap), `tn.convert` and the
`tfrecnp convert` command, the writer's errors, and what an interrupted write leaves.

Values are checked by reading the TFRecords back with TensorFlow where the file kind
matters, and with tn.read elsewhere (the TF oracle tests live in test_write_tf.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest
import zarr

import tfrecnp as tn
from tfrecnp.arrays.sources import open_arrays
from tfrecnp.cli import main


def listing(folder) -> list[str]:
    """Every entry of a folder, hidden ones included."""
    return sorted(os.listdir(folder))


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


# --- sources ---------------------------------------------------------------------------


def test_npy_is_read_through_its_header(tf, tmp_path):
    """Seed 004 memory-maps a .npy as if it had no header and reads header bytes as data."""
    values = np.arange(40, dtype=np.float32).reshape(10, 4) + 0.5
    np.save(tmp_path / "big.npy", values)
    result = tn.convert(
        tmp_path / "big.npy",
        tmp_path / "out.tfrecord",
        feature="data",
        encoding="raw",
        progress=False,
    )
    assert result.spec == {"data": tn.Raw("float32", shape=(4,))}
    dataset = tf.data.TFRecordDataset(result.paths[0])
    parsed = [
        tf.io.parse_single_example(r, {"data": tf.io.FixedLenFeature([], tf.string)})
        for r in dataset
    ]
    got = np.stack([tf.io.decode_raw(p["data"], tf.float32).numpy() for p in parsed])
    assert np.array_equal(got, values)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["<f4", ">f4", ">i8"])
def test_npy_orders_and_byte_orders(tmp_path, order, dtype):
    values = np.asarray(np.arange(24).reshape(6, 2, 2), dtype=dtype, order=order)
    np.save(tmp_path / "a.npy", values)
    paths, spec = tn.convert(tmp_path / "a.npy", tmp_path / "a.tfrecord", progress=False)
    wire = "float32" if "f" in dtype else "int64"  # big-endian input is written as values
    assert spec == {"a": tn.FixedLen((2, 2), wire)}
    assert np.array_equal(tn.read(paths, spec)["a"], values)


def test_npy_errors(tmp_path):
    np.save(tmp_path / "scalar.npy", np.float32(3))
    with pytest.raises(ValueError, match=r"scalar\.npy holds a 0-d array: there are no rows"):
        tn.convert(tmp_path / "scalar.npy", tmp_path / "x.tfrecord", progress=False)
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"obj.npy cannot be memory-mapped \(.*\); tfrecnp"):
        tn.convert(tmp_path / "obj.npy", tmp_path / "x.tfrecord", progress=False)
    with pytest.raises(FileNotFoundError, match=r"no such file: .*missing\.npy"):
        tn.convert(tmp_path / "missing.npy", tmp_path / "x.tfrecord", progress=False)
    assert not os.path.exists(tmp_path / "x.tfrecord")


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_members(tmp_path, save):
    x = np.arange(3000, dtype=np.float64).reshape(1000, 3)
    y = np.arange(1000, dtype=np.int16)
    save(tmp_path / "d.npz", x=x, y=y)
    with open_arrays(tmp_path / "d.npz") as source:
        assert sorted(source.columns) == ["x", "y"] and len(source) == 1000
        kinds = {type(c).__name__ for c in source.columns.values()}
        assert kinds == ({"memmap"} if save is np.savez else {"_ZipMember"})
        batches = list(source.batches(300))
        assert [len(b["y"]) for b in batches] == [300, 300, 300, 100]
        assert np.array_equal(np.concatenate([b["x"] for b in batches]), x)
    paths, spec = tn.convert(tmp_path / "d.npz", tmp_path / "d.tfrecord", progress=False)
    got = tn.read(paths, spec)
    assert np.array_equal(got["x"], x.astype(np.float32).astype(np.float64))
    assert np.array_equal(got["y"], y)
    paths, spec = tn.convert(
        tmp_path / "d.npz", tmp_path / "y.tfrecord", key="y", feature="label", progress=False
    )
    assert spec == {"label": tn.FixedLen((), "int16")}
    assert tn.read(paths, spec)["label"].tolist() == y.tolist()


def test_npz_key_and_feature_errors(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.zeros(3), y=np.zeros(4))
    with pytest.raises(tn.SchemaError) as info:
        tn.convert(tmp_path / "d.npz", tmp_path / "o.tfrecord", progress=False)
    assert str(info.value) == (
        f"the arrays of {tmp_path / 'd.npz'} have different lengths: 'x' has 3, 'y' has 4 rows; "
        "every column needs one entry per record (same first dimension)"
    )
    with pytest.raises(KeyError, match="has no array 'z'; it holds x, y"):
        tn.convert(tmp_path / "d.npz", tmp_path / "o.tfrecord", key="z", progress=False)
    with pytest.raises(ValueError, match=r"feature='f' names one column but .* gives 2 \(x, y\)"):
        tn.convert(tmp_path / "d.npz", tmp_path / "o.tfrecord", feature="f", progress=False)
    assert listing(tmp_path) == ["d.npz"]


def test_hdf5_all_datasets_and_one_key(tf, tmp_path):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f["images"] = np.arange(5 * 4 * 4, dtype=np.uint8).reshape(5, 4, 4)
        f.create_group("meta")["label"] = np.array([3, 1, 4, 1, 5], np.int64)
        f["names"] = np.array(["a", "bé", "", "d", "e"], dtype=h5py.string_dtype())
        f["version"] = 2  # a scalar: metadata, not a column
    paths, spec = tn.convert(path, tmp_path / "all.tfrecord", progress=False)
    assert spec == {
        "images": tn.FixedLen((4, 4), "uint8"),
        "meta/label": tn.FixedLen((), "int64"),
        "names": tn.Bytes(),
    }
    parsed = tf.io.parse_example(
        [r.numpy() for r in tf.data.TFRecordDataset(paths)],
        {
            "images": tf.io.FixedLenFeature([4, 4], tf.int64),
            "meta/label": tf.io.FixedLenFeature([], tf.int64),
            "names": tf.io.FixedLenFeature([], tf.string),
        },
    )
    with h5py.File(path) as f:
        assert np.array_equal(parsed["images"].numpy(), f["images"][:])
        assert parsed["names"].numpy().tolist() == [b"a", "bé".encode(), b"", b"d", b"e"]
    assert parsed["meta/label"].numpy().tolist() == [3, 1, 4, 1, 5]
    paths, spec = tn.convert(
        path, tmp_path / "one.tfrecord", key="/meta/label", encoding="raw", progress=False
    )
    assert spec == {"meta/label": tn.Raw("int64", shape=())}
    raw = [r.numpy() for r in tf.data.TFRecordDataset(paths)]
    parsed = tf.io.parse_example(raw, {"meta/label": tf.io.FixedLenFeature([], tf.string)})
    labels = tf.io.decode_raw(parsed["meta/label"], tf.int64).numpy()
    assert labels.reshape(-1).tolist() == [3, 1, 4, 1, 5]
    # a group as the key: every dataset in it, named within the group
    paths, spec = tn.convert(path, tmp_path / "g.tfrecord", key="meta", progress=False)
    assert list(spec) == ["label"]
    assert tn.read(paths, spec)["label"].tolist() == [3, 1, 4, 1, 5]
    with pytest.raises(KeyError, match="has no dataset or group 'nope'; datasets: images, "):
        tn.convert(path, tmp_path / "x.tfrecord", key="nope", progress=False)


def test_zarr_group_and_array(tmp_path):
    group = zarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_array("x", shape=(10, 3), dtype="float32", chunks=(4, 3))[:] = np.arange(
        30
    ).reshape(10, 3)
    sub = group.create_group("sub")
    sub.create_array("y", shape=(10,), dtype="int64", chunks=(3,))[:] = np.arange(10) - 5
    group.create_array("s", shape=(10,), dtype=str, chunks=(4,))[:] = np.array(
        [f"s{i}" for i in range(10)]
    )
    paths, spec = tn.convert(tmp_path / "g.zarr", tmp_path / "g.tfrecord", progress=False)
    assert spec == {
        "s": tn.Text(),  # a str array is written as UTF-8 and read back as str
        "sub/y": tn.FixedLen((), "int64"),
        "x": tn.FixedLen((3,), "float32"),
    }
    got = tn.read(paths, spec)
    assert np.array_equal(got["x"], np.arange(30).reshape(10, 3))
    assert np.array_equal(got["sub/y"], np.arange(10) - 5)
    assert got["s"].tolist() == [f"s{i}" for i in range(10)]
    single = zarr.open_array(
        tmp_path / "z.zarr", mode="w", shape=(7, 2), dtype="int32", chunks=(2, 2)
    )
    single[:] = np.arange(14).reshape(7, 2)
    paths, spec = tn.convert(tmp_path / "z.zarr", tmp_path / "z.tfrecord", progress=False)
    assert spec == {"z": tn.FixedLen((2,), "int32")}
    assert np.array_equal(tn.read(paths, spec)["z"], np.arange(14).reshape(7, 2))


def test_folder_of_npy_files(tmp_path):
    folder = tmp_path / "cols"
    folder.mkdir()
    np.save(folder / "a.npy", np.arange(6))
    np.save(folder / "b.npy", np.ones((6, 2), np.float32))
    paths, spec = tn.convert(folder, tmp_path / "f.tfrecord", progress=False)
    assert spec == {"a": tn.FixedLen((), "int64"), "b": tn.FixedLen((2,), "float32")}
    assert np.array_equal(tn.read(paths, spec)["a"], np.arange(6))


def test_contiguous_hdf5_datasets_are_memory_mapped(tmp_path):
    path = tmp_path / "d.h5"
    rng = np.random.default_rng(4)
    x = rng.random((50, 3)).astype(">f4")  # big-endian, stored in one piece
    with h5py.File(path, "w") as f:
        f["x"] = x
        f.create_dataset("c", data=np.arange(50), chunks=(8,), compression="gzip")
        f["s"] = np.array([b"r%d" % i for i in range(50)], dtype=h5py.string_dtype())
    with open_arrays(path) as source:
        kinds = {name: type(col).__name__ for name, col in source.columns.items()}
    assert kinds == {"c": "Dataset", "s": "Dataset", "x": "memmap"}
    ds = tn.open(path)
    for i in (0, 17, 49, -1):
        row = ds[i]
        assert row["x"].tolist() == x[i].tolist() and row["c"] == np.arange(50)[i]
        assert row["s"] == b"r%d" % (i % 50)
    got = np.concatenate([b["x"] for b in ds.batches(7, shuffle=True, seed=1)])
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, x.tolist()))


def test_write_from_memmap_h5py_and_zarr_objects(tmp_path):
    mm = np.memmap(tmp_path / "m.dat", np.float32, mode="w+", shape=(100, 8))
    mm[:] = np.arange(800).reshape(100, 8)
    mm.flush()
    ro = np.memmap(tmp_path / "m.dat", np.float32, mode="r", shape=(100, 8))
    with h5py.File(tmp_path / "h.h5", "w") as f:
        f["v"] = np.arange(100, dtype=np.int32)
    z = zarr.open_array(tmp_path / "z.zarr", mode="w", shape=(100,), dtype="uint16", chunks=(7,))
    z[:] = np.arange(100)
    with h5py.File(tmp_path / "h.h5") as f:
        result = tn.write(
            tmp_path / "mix.tfrecord",
            {"mm": ro, "rw": mm, "h5": f["v"], "z": z},
            encoding={"mm": "raw"},
            verify=True,
            progress=False,
        )
    got = tn.read(result.paths, result.spec)
    assert np.array_equal(got["mm"], mm) and np.array_equal(got["rw"], mm)
    assert np.array_equal(got["h5"], np.arange(100)) and np.array_equal(got["z"], np.arange(100))


def test_memory_stays_flat_streaming_a_large_memmap(tmp_path):
    """A 384 MiB .npy (sparse on disk, so cheap to make) streams through in bounded RSS.

    Measured in a fresh process from VmHWM, the kernel's peak-RSS mark, reset after warm-up
    (ru_maxrss would carry over the peak of the parent that started the process)."""
    script = textwrap.dedent(
        f"""
        import numpy as np, tfrecnp as tn
        def peak_mib():
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) // 1024
        src = {str(tmp_path / "big.npy")!r}
        arr = np.lib.format.open_memmap(src, mode="w+", dtype=np.float32, shape=(24576, 4096))
        del arr
        tn.write({str(tmp_path / "warm.tfrecord")!r}, {{"x": np.zeros((64, 4096), np.float32)}},
                 encoding="raw", progress=False)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak to the current RSS
        before = peak_mib()
        tn.convert(src, {str(tmp_path / "big.tfrecord")!r}, encoding="raw",
                   compression="GZIP", progress=False)
        print(before, peak_mib())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    before, peak = map(int, out.split())
    assert before < 200, f"the fresh process already holds {before} MiB"
    assert peak - before < 96, f"peak RSS grew by {peak - before} MiB while streaming 384 MiB"


# --- errors ----------------------------------------------------------------------------


def test_mismatched_lengths(tmp_path):
    with pytest.raises(tn.SchemaError) as info:
        tn.write(tmp_path / "x.tfrecord", {"a": np.zeros(10), "b": [b"x"] * 12}, progress=False)
    assert str(info.value) == (
        "columns have different lengths: 'a' has 10, 'b' has 12 rows; every column needs one "
        "entry per record (same first dimension)"
    )
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (
            np.zeros(3, np.complex64),
            "feature 'z' has dtype complex64, which a tf.train.Example cannot hold (it holds "
            "float32, int64 and bytes lists); store z.real and z.imag as two float features, "
            "or pass encoding={'z': 'raw'} (read back with tn.Raw('complex64'))",
        ),
        (
            np.array(["2020-01-01"] * 3, dtype="datetime64[D]"),
            "feature 'z' has dtype datetime64[D], which a tf.train.Example cannot hold (it "
            "holds float32, int64 and bytes lists); write z.view('int64') and convert back "
            "when reading",
        ),
        (
            np.array([b"ok", {"a": 1}, b"x"], dtype=object),
            "feature 'z' row 1 holds dict value {'a': 1}; object columns must hold bytes or str "
            "(for lists of numbers pass tn.Ragged(values, row_splits))",
        ),
        (
            np.array([0, 2**63 - 1, 2**63, 2**64 - 1], np.uint64),
            "feature 'z' row 2: uint64 value 9223372036854775808 does not fit int64_list "
            "(largest 9223372036854775807); pass encoding={'z': 'raw'} (read back with "
            "tn.Raw('uint64')) or store it as int64 bits with .view('int64')",
        ),
        (
            np.array([[0, 1], [2**64 - 1, 5]], np.uint64),
            "feature 'z' row 1: uint64 value 18446744073709551615 does not fit int64_list "
            "(largest 9223372036854775807); pass encoding={'z': 'raw'} (read back with "
            "tn.Raw('uint64')) or store it as int64 bits with .view('int64')",
        ),
        (
            tn.Ragged(tn.Ragged(np.arange(3), [0, 1, 3]), [0, 1, 2]),
            "feature 'z' is a Ragged of Ragged rows, which one Example feature cannot hold; "
            "write it as a SequenceExample feature list with sequence=['z'], or flatten the "
            "inner rows",
        ),
        (
            b"not a column",
            "feature 'z' is a single bytes, not a column; give one entry per record "
            "(a list or an array)",
        ),
    ],
)
def test_unsupported_columns(tmp_path, column, message):
    with pytest.raises(tn.SchemaError) as info:
        tn.write(tmp_path / "x.tfrecord", {"z": column}, progress=False)
    assert str(info.value) == message
    assert listing(tmp_path) == []


def test_errors_in_ragged_columns_name_the_row(tmp_path):
    big = np.array([1, 2, 3, 2**63, 5], np.uint64)
    with pytest.raises(tn.SchemaError, match=r"^feature 'r' row 3: uint64 value 92233720368547758"):
        tn.write(tmp_path / "r.tfrecord", {"r": tn.Ragged(big, [0, 2, 2, 3, 5])}, progress=False)
    words = np.array([b"a", b"b", 7, b"c"], dtype=object)
    with pytest.raises(tn.SchemaError, match=r"^feature 'w' row 2 holds int value 7; object"):
        tn.write(tmp_path / "w.tfrecord", {"w": tn.Ragged(words, [0, 1, 1, 4])}, progress=False)
    assert listing(tmp_path) == []


def test_finite_float64_beyond_float32_is_refused_not_made_inf(tmp_path):
    # float_list holds float32: 1e300 would read back as inf, so it is an error, while
    # inf and NaN given as such, and the largest float32, are written as they are
    with pytest.raises(tn.SchemaError) as info:
        tn.write(tmp_path / "x.tfrecord", {"x": np.array([1e300])}, verify=True, progress=False)
    assert str(info.value) == (
        "feature 'x' row 0: value 1e+300 does not fit float32 (float_list); write it with "
        "encoding='raw' to keep float64"
    )
    grid = np.array([[0.0, np.inf], [np.nan, -np.inf], [3.4028234663852886e38, -3.5e38]])
    with pytest.raises(tn.SchemaError, match=r"^feature 'g' row 2: value -3\.5e\+38 does not"):
        tn.write(tmp_path / "g.tfrecord", {"g": grid}, progress=False)
    ragged = tn.Ragged(np.array([1.0, 2.0, np.inf, -1e39]), [0, 2, 2, 4])
    with pytest.raises(tn.SchemaError, match=r"^feature 'r' row 2: value -1e\+39 does not"):
        tn.write(tmp_path / "r.tfrecord", {"r": ragged}, progress=False)
    assert listing(tmp_path) == []
    fine = grid[:2]
    tn.write(tmp_path / "ok.tfrecord", {"g": fine}, verify=True, progress=False)
    got = tn.read(tmp_path / "ok.tfrecord", {"g": tn.FixedLen(2, "float64")})["g"]
    assert np.array_equal(got, fine, equal_nan=True)
    tn.write(tmp_path / "raw.tfrecord", {"x": np.array([1e300])}, encoding="raw", progress=False)
    raw = tn.read(tmp_path / "raw.tfrecord", {"x": tn.Raw("float64", shape=(1,))})["x"]
    assert raw.tolist() == [[1e300]]


def test_convert_writes_tfrecords_only(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(3))
    with pytest.raises(ValueError, match=r"b\.npz: array files convert to TFRecord files"):
        tn.convert(tmp_path / "a.npy", tmp_path / "b.npz")
    assert tn.open(tmp_path / "a.npy")[:]["a"].tolist() == [0, 1, 2]  # tn.open reads it


def test_uint64_above_int64_is_fine_raw(tmp_path):
    values = np.array([2**64 - 1, 2**63, 0], np.uint64)
    paths, spec = tn.write(tmp_path / "u.tfrecord", {"z": values}, encoding="raw", progress=False)
    assert np.array_equal(tn.read(paths, spec)["z"], values)


def test_option_errors(tmp_path):
    cols = {"a": np.zeros(3), "s": ["x", "y", "z"]}
    with pytest.raises(KeyError, match="encoding names feature 'b', which is not among the"):
        tn.write(tmp_path / "x.tfrecord", cols, encoding={"b": "raw"}, progress=False)
    with pytest.raises(
        ValueError, match="encoding\\['a'\\] must be None, 'list' or 'raw', not 'zip'"
    ):
        tn.write(tmp_path / "x.tfrecord", cols, encoding={"a": "zip"}, progress=False)
    with pytest.raises(tn.SchemaError, match="feature 's' holds bytes or str; encoding='raw' "):
        tn.write(tmp_path / "x.tfrecord", cols, encoding="raw", progress=False)
    with pytest.raises(
        ValueError,
        match="index=True needs uncompressed output: byte offsets in a "
        "GZIP file do not point at records",
    ):
        tn.write(tmp_path / "x.tfrecord", cols, compression="GZIP", index=True, progress=False)
    with pytest.raises(ValueError, match="records_per_shard must be a positive int, not 0"):
        tn.write(tmp_path / "x.tfrecord", cols, records_per_shard=0, progress=False)
    with pytest.raises(ValueError, match="no columns to write"):
        tn.write(tmp_path / "x.tfrecord", {}, progress=False)
    with pytest.raises(IsADirectoryError, match="is a folder; give a file name such as"):
        tn.write(tmp_path, cols, progress=False)
    assert listing(tmp_path) == []


def test_streaming_writer_schema_errors(tmp_path):
    with tn.Writer(tmp_path / "w.tfrecord", progress=False) as w:
        w.write_batch({"a": np.zeros(2, np.float32), "b": np.zeros(2, np.int64)})
        with pytest.raises(tn.SchemaError) as info:
            w.write_batch({"a": np.zeros(2, np.float32)})
        assert str(info.value) == (
            "this batch lacks 'b': every record of a file needs the same features (the first "
            "had 'a', 'b')"
        )
        with pytest.raises(tn.SchemaError) as info:
            w.write_batch({"a": np.zeros(2, np.int64), "b": np.zeros(2, np.int64)})
        assert str(info.value) == (
            "feature 'a' was written as float_list (float32) but this batch holds int64_list "
            "(int64); one feature keeps one kind in a file (cast the column)"
        )
    assert w.spec == {"a": tn.FixedLen((), "float32"), "b": tn.FixedLen((), "int64")}
    assert tn.count_records(w.paths) == 2


# --- nothing half-written looks complete -------------------------------------------------


class Exploding:
    """An array-like that fails when rows past `fail_at` are read (a dying disk, say)."""

    def __init__(self, n: int, fail_at: int):
        self.shape, self.dtype, self.fail_at = (n, 4096), np.dtype(np.float32), fail_at

    def __getitem__(self, index):
        if index.stop > self.fail_at:
            raise OSError("device went away")
        return np.ones((index.stop - index.start, 4096), np.float32)


@pytest.mark.parametrize("shards", [None, 700])
def test_exception_mid_write_leaves_nothing(tmp_path, shards):
    out = tmp_path / "out"
    out.mkdir()  # the writer makes no folders
    with pytest.raises(OSError, match="device went away"):
        tn.write(
            out / "data.tfrecord",
            {"x": Exploding(5000, 3000)},
            records_per_shard=shards,
            index=True,
            progress=False,
        )
    assert listing(out) == []


def test_writers_make_no_folders(tmp_path):
    # like RecordWriter and `verify --salvage`: a mistyped folder is an error, not created
    out = tmp_path / "missing" / "data.tfrecord"
    message = f"cannot write {out}: no such directory {out.parent}"
    with pytest.raises(FileNotFoundError) as info:
        tn.write(out, {"x": np.arange(3)}, progress=False)
    assert str(info.value) == message
    with pytest.raises(FileNotFoundError) as info:
        tn.Writer(out, records_per_shard=2, progress=False)
    assert str(info.value) == message
    np.save(tmp_path / "a.npy", np.arange(3))
    with pytest.raises(FileNotFoundError) as info:
        tn.convert(tmp_path / "a.npy", out)
    assert str(info.value) == message
    with pytest.raises(FileNotFoundError) as info:
        tn.RecordWriter(out)
    assert str(info.value) == message
    assert listing(tmp_path) == ["a.npy"]


def test_writer_block_that_raises_leaves_nothing(tmp_path):
    with (
        pytest.raises(RuntimeError, match="stop"),
        tn.Writer(tmp_path / "w.tfrecord", records_per_shard=10, index=True, progress=False) as w,
    ):
        w.write_batch({"x": np.arange(35)})
        raise RuntimeError("stop")
    assert listing(tmp_path) == []


def test_bad_value_in_a_late_batch_leaves_nothing(tmp_path):
    values = np.zeros(300_000, np.uint64)
    values[-1] = 2**64 - 1
    with pytest.raises(tn.SchemaError, match="feature 'u' row 299999: uint64 value"):
        tn.write(tmp_path / "u.tfrecord", {"u": values}, progress=False)
    assert listing(tmp_path) == []


@pytest.mark.parametrize("suffix", [".tfrecord", ".array_record"])
def test_verify_catches_a_source_that_changed(suffix, tmp_path):
    class Drifting:
        """Values that differ from one read to the next (a file rewritten under us)."""

        def __init__(self):
            self.shape, self.dtype, self.reads = (10,), np.dtype(np.int64), 0

        def __getitem__(self, index):
            self.reads += 1
            return np.arange(10)[index] + self.reads

    with pytest.raises(tn.TFRecordError) as info:
        tn.write(tmp_path / f"d{suffix}", {"x": Drifting()}, verify=True, progress=False)
    assert str(info.value) == (
        "verify failed: feature 'x' in records 0..9 reads back different values (values); "
        "nothing was kept"
    )
    assert listing(tmp_path) == []


# --- the command ---------------------------------------------------------------------------


def test_cli_convert_text_and_json(capsys, tmp_path):
    np.save(tmp_path / "big.npy", np.arange(12, dtype=np.float32).reshape(6, 2))
    (tmp_path / "out").mkdir()
    status, out, err = run(
        capsys,
        "convert",
        tmp_path / "big.npy",
        tmp_path / "out" / "data.tfrecord",
        "--feature",
        "data",
        "--encoding",
        "raw",
        "--records-per-shard",
        "4",
        "--compression",
        "GZIP",
    )
    assert status == 0 and err == ""
    first = tmp_path / "out" / "data-00000-of-00002.tfrecord"
    last = tmp_path / "out" / "data-00001-of-00002.tfrecord"
    assert out.splitlines()[1:] == [
        f"  {first} ... {last}",
        "read back with spec:",
        "  'data': tn.Raw('float32', shape=(2,))",
    ]
    assert out.startswith("wrote 6 records (")
    status, out, _ = run(
        capsys,
        "convert",
        tmp_path / "big.npy",
        tmp_path / "b.tfrecord",
        "--json",
        "--index",
        "--verify",
        "--encoding",
        "big=list",
    )
    doc = json.loads(out)
    assert status == 0
    assert doc["paths"] == [str(tmp_path / "b.tfrecord")] and doc["records"] == 6
    assert doc["bytes"] == os.path.getsize(tmp_path / "b.tfrecord")
    assert tn.spec_from_json(doc["spec"]) == {"big": tn.FixedLen((2,), "float32")}
    assert os.path.exists(tmp_path / "b.tfrecord.idx")


def test_cli_convert_errors(capsys, tmp_path):
    np.savez(tmp_path / "d.npz", x=np.zeros(3))
    status, _, err = run(
        capsys, "convert", tmp_path / "d.npz", tmp_path / "o.tfrecord", "--key", "q"
    )
    assert status == 2
    assert err == f"tfrecnp convert: error: {tmp_path / 'd.npz'} has no array 'q'; it holds x\n"
    tn.write(tmp_path / "t.tfrecord", {"x": np.zeros(2)}, progress=False)
    status, _, err = run(capsys, "convert", tmp_path / "t.tfrecord", tmp_path / "o.tfrecord")
    assert status == 2
    assert err == (
        f"tfrecnp convert: error: {tmp_path / 'o.tfrecord'} names a TFRecord file, but TFRecord "
        "sources convert to arrays: a .npy folder (no extension), .npz, .h5 or .zarr; to copy "
        "records use `tfrecnp verify --salvage OUT`, to write columns use tn.write\n"
    )
    status, _, err = run(
        capsys, "convert", tmp_path / "d.npz", tmp_path / "o.tfrecord", "--encoding", "=raw"
    )
    assert status == 2 and "--encoding '=raw': give raw, list, or NAME=raw / NAME=list" in err


def test_cli_convert_as_a_subprocess(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(5))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfrecnp",
            "convert",
            str(tmp_path / "a.npy"),
            str(tmp_path / "a.tfrecord"),
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no progress line when stderr is not a terminal
    assert json.loads(proc.stdout)["records"] == 5
    helptext = subprocess.run(
        [sys.executable, "-m", "tfrecnp", "convert", "--help"], capture_output=True, text=True
    ).stdout
    for option in (
        "--feature",
        "--key",
        "--encoding",
        "--records-per-shard",
        "--compression",
        "--index",
        "--verify",
        "--quiet",
        "--json",
    ):
        assert option in helptext
