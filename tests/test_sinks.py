"""Sinks (.npy folder, .npz, HDF5, Zarr) and tn.load, from hand-made columns: one round-trip
contract every format passes, the on-disk layout other tools read, atomic outputs, errors."""

from __future__ import annotations

import json
import os
import re
import string

import h5py
import numpy as np
import pytest
import zarr

import tfrecnp as tn
from tfrecnp.arrays.sinks import ArraySink, output_format, stem
from tfrecnp.example.columns import BytesColumn, LazyBytes, LazyRagged, Ragged, concat_columns

FORMATS = {"npy": "out", "npz": "out.npz", "hdf5": "out.h5", "zarr": "out.zarr"}


def batch(rng: np.random.Generator, n: int) -> dict:
    """One batch with every kind of column a decoder produces."""
    tokens = rng.integers(0, 5, n)
    steps = rng.integers(0, 3, n)
    inner = rng.integers(0, 4, int(steps.sum()))
    return {
        "label": rng.integers(-5, 5, n),
        "image/encoded": BytesColumn.from_list([rng.bytes(int(k)) for k in rng.integers(0, 9, n)]),
        "vec": rng.random((n, 2, 3), dtype=np.float32),
        "tokens": Ragged.from_lengths(rng.integers(0, 100, int(tokens.sum())), tokens),
        "boxes": Ragged.from_lengths(rng.random((int(tokens.sum()), 4)), tokens),
        "words": Ragged.from_lengths(
            BytesColumn.from_list([b"w" * int(k) for k in rng.integers(0, 4, int(tokens.sum()))]),
            tokens,
        ),
        "steps": Ragged.from_lengths(
            Ragged.from_lengths(rng.integers(0, 9, int(inner.sum())).astype(np.int32), inner),
            steps,
        ),
        "pair": np.array([[b"a" * int(k), b"b"] for k in rng.integers(0, 3, n)], object).reshape(
            n, 2
        ),
        "a.values": np.full(n, 7, np.uint16),  # a name that looks like a suffix
        "": rng.random(n) > 0.5,
        "é/x y": np.arange(n, dtype=np.float16),
    }


def materialize(col):
    """A loaded column as an in-memory one (lazy HDF5 / Zarr ones are read whole)."""
    if isinstance(col, (LazyRagged, LazyBytes)):
        return col[:]
    if isinstance(col, (Ragged, BytesColumn)):
        return col
    return np.asarray(col[:] if not isinstance(col, np.ndarray) else col)


def equal(got, want) -> bool:
    got = materialize(got)
    if isinstance(want, np.ndarray):
        return (
            isinstance(got, np.ndarray)
            and got.dtype == want.dtype
            and got.shape == want.shape
            and np.array_equal(got, want)
        )
    return type(got) is type(want) and got == want


def write_batches(path, fmt, batches, **kwargs) -> str:
    with ArraySink(path, fmt, **kwargs) as sink:
        for b in batches:
            sink.write(b)
    return sink.path


def listing(folder) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_column_kind(tmp_path, fmt):
    rng = np.random.default_rng(1)
    batches = [batch(rng, n) for n in (5, 0, 9, 1)]
    want = {k: concat_columns([b[k] for b in batches]) for k in batches[0]}
    path = write_batches(tmp_path / FORMATS[fmt], fmt, batches, spec={"label": tn.VarLen("int64")})
    assert listing(tmp_path) == [FORMATS[fmt]]
    with tn.load(path) as arrays:
        assert list(arrays) == list(want)
        assert arrays.records == 15 and arrays.format == fmt
        assert arrays.spec == {"label": tn.VarLen("int64")}
        for name, col in want.items():
            assert equal(arrays[name], col), name
        lazy = fmt in ("hdf5", "zarr")
        assert isinstance(arrays["tokens"], LazyRagged if lazy else Ragged)
        assert isinstance(arrays["image/encoded"], LazyBytes if lazy else BytesColumn)
        if not lazy:
            assert isinstance(arrays["label"], np.memmap)
            assert isinstance(arrays["tokens"].values, np.memmap)
        else:
            kind = h5py.Dataset if fmt == "hdf5" else zarr.Array
            assert isinstance(arrays["label"], kind)


@pytest.mark.parametrize("fmt", FORMATS)
def test_lazy_and_mapped_columns_index_like_in_memory_ones(tmp_path, fmt):
    rng = np.random.default_rng(2)
    b = batch(rng, 12)
    path = write_batches(tmp_path / FORMATS[fmt], fmt, [b])
    with tn.load(path) as arrays:
        for name in ("tokens", "boxes", "words", "steps", "image/encoded"):
            col, want = arrays[name], b[name]
            assert len(col) == 12
            for i in (0, 5, -1):
                got, expected = col[i], want[i]
                if isinstance(expected, (bytes, Ragged)):
                    assert got == expected
                else:
                    assert np.array_equal(np.asarray(got), expected)
            assert equal(col[3:9], want[3:9]) and equal(col[8:3], want[8:3])
        if fmt in ("hdf5", "zarr"):
            with pytest.raises(IndexError, match=r"^row 12 out of range for 12 rows$"):
                arrays["tokens"][12]
            assert arrays["tokens"][[1, 2]] == b["tokens"][[1, 2]]  # row lists, as in memory


def test_zero_records_and_no_columns(tmp_path):
    empty = {
        "x": np.empty((0, 3), np.float32),
        "t": Ragged(np.empty(0, np.int64), [0]),
        "b": BytesColumn(np.empty(0, np.uint8), [0]),
    }
    for fmt, name in FORMATS.items():
        path = write_batches(tmp_path / name, fmt, [empty])
        with tn.load(path) as arrays:
            assert arrays.records == 0
            for k, col in empty.items():
                assert equal(arrays[k], col), (fmt, k)
        nothing = write_batches(tmp_path / f"none-{name}", fmt, [])
        with tn.load(nothing) as arrays:
            assert dict(arrays) == {} and arrays.records == 0


def test_npy_folder_holds_plain_npy_files(tmp_path):
    rng = np.random.default_rng(3)
    b = batch(rng, 7)
    path = tmp_path / "out"
    write_batches(path, "npy", [b], spec={"label": tn.FixedLen((), "int64")})
    assert listing(path) == sorted(
        [
            "%.npy",
            "%C3%A9%2Fx%20y.npy",
            "a%2Evalues.npy",
            "boxes.row_splits.npy",
            "boxes.values.npy",
            "image%2Fencoded.offsets.npy",
            "image%2Fencoded.values.npy",
            "label.npy",
            "pair.offsets.npy",
            "pair.values.npy",
            "spec.json",
            "steps.row_splits.npy",
            "steps.values.row_splits.npy",
            "steps.values.values.npy",
            "tfrecnp.json",
            "tokens.row_splits.npy",
            "tokens.values.npy",
            "vec.npy",
            "words.row_splits.npy",
            "words.values.offsets.npy",
            "words.values.values.npy",
        ]
    )
    # numpy reads every file by itself, without memory mapping
    assert np.array_equal(np.load(path / "vec.npy"), b["vec"])
    assert np.array_equal(np.load(path / "tokens.values.npy"), b["tokens"].values)
    assert np.array_equal(np.load(path / "tokens.row_splits.npy"), b["tokens"].row_splits)
    assert np.load(path / "image%2Fencoded.values.npy").tobytes() == b"".join(b["image/encoded"])
    assert tn.spec_from_json((path / "spec.json").read_text()) == {
        "label": tn.FixedLen((), "int64")
    }
    manifest = json.loads((path / "tfrecnp.json").read_text())
    assert manifest["format"] == "tfrecnp.arrays/1" and manifest["records"] == 7
    assert manifest["columns"]["tokens"] == {
        "kind": "ragged",
        "row_splits": "tokens.row_splits",
        "values": {
            "kind": "array",
            "array": "tokens.values",
            "dtype": "<i8",
            "shape": [len(b["tokens"].values)],
        },
        "rows": 7,
    }


def test_hdf5_and_zarr_are_chunked_along_records(tmp_path):
    n = 300_000  # chunks hold about 1 MiB of whole rows
    cols = {"x": np.arange(n, dtype=np.int64), "y": np.ones((n, 8), np.float32)}
    with ArraySink(tmp_path / "a.h5", "hdf5") as sink:
        for a in range(0, n, 30_000):  # batches that do not line up with the chunks
            sink.write({k: v[a : a + 30_000] for k, v in cols.items()})
    with h5py.File(tmp_path / "a.h5") as f:
        assert f["x"].chunks == (131072,) and f["y"].chunks == (32768, 8)
        assert f["x"].maxshape == (None,)
        assert np.array_equal(f["x"][:], cols["x"]) and np.array_equal(f["y"][:], cols["y"])
    path = write_batches(tmp_path / "a.zarr", "zarr", [cols])
    group = zarr.open_group(path, mode="r")
    assert group["y"].chunks == (32768, 8) and group["y"].shape == (n, 8)
    assert np.array_equal(group["x"][:], cols["x"])


def test_formats_from_names():
    assert [output_format(p) for p in ("out", "out/", "a.npy", "a.npz", "b.h5", "c.hdf5")] == [
        "npy",
        "npy",
        "npy",
        "npz",
        "hdf5",
        "hdf5",
    ]
    assert output_format("x.zarr") == "zarr" and output_format("x.bin", "h5") == "hdf5"
    with pytest.raises(ValueError, match=r"^unknown format 'csv'; use one of npy, npz, hdf5, zarr"):
        output_format("x", "csv")
    with pytest.raises(ValueError, match=r"^cannot tell the output format of x\.bin from its"):
        output_format("x.bin")
    with pytest.raises(ValueError, match=r"^x\.tfrecord names a TFRecord file, but TFRecord"):
        output_format("x.tfrecord")
    assert [stem(n) for n in ("label", "image/encoded", "a.b", "", "é", "x%y")] == [
        "label",
        "image%2Fencoded",
        "a%2Eb",
        "%",
        "%C3%A9",
        "x%25y",
    ]


# --- atomic outputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_exception_leaves_nothing(tmp_path, fmt):
    rng = np.random.default_rng(4)
    target = tmp_path / FORMATS[fmt]
    with pytest.raises(RuntimeError, match=r"^boom$"), ArraySink(target, fmt) as sink:
        sink.write(batch(rng, 10))
        raise RuntimeError("boom")
    assert listing(tmp_path) == []
    with pytest.raises(tn.SchemaError), ArraySink(target, fmt) as sink:
        sink.write(batch(rng, 10))
        sink.write({"label": np.zeros(3)})  # a batch missing columns
    assert listing(tmp_path) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_overwrite(tmp_path, fmt):
    rng = np.random.default_rng(5)
    target = tmp_path / FORMATS[fmt]
    first = batch(rng, 4)
    write_batches(target, fmt, [first])
    message = f"{target} already exists; pass overwrite=True (--overwrite) to replace it"
    with pytest.raises(FileExistsError, match=f"^{re.escape(message)}"):
        ArraySink(target, fmt)
    with pytest.raises(RuntimeError), ArraySink(target, fmt, overwrite=True) as sink:
        sink.write(batch(rng, 6))
        raise RuntimeError("interrupted")
    with tn.load(target) as arrays:  # the old output is untouched
        assert equal(arrays["tokens"], first["tokens"])
    second = batch(rng, 6)
    write_batches(target, fmt, [second], overwrite=True)
    with tn.load(target) as arrays:
        assert arrays.records == 6 and equal(arrays["tokens"], second["tokens"])
    assert listing(tmp_path) == [FORMATS[fmt]]


def test_batches_must_agree(tmp_path):
    cases = [
        ({"x": np.zeros(3, np.int64)}, {"x": np.zeros(3, np.int32)}, "int32 values after int64"),
        ({"x": np.zeros((3, 2))}, {"x": np.zeros((3, 4))}, "rows of shape (4,) after rows of"),
        (
            {"x": np.zeros(3)},
            {"x": Ragged(np.zeros(1), [0, 1])},
            "a Ragged after ndarray batches",
        ),
        ({"x": np.zeros(3)}, {"y": np.zeros(3)}, "batch columns ['y'] differ from the first"),
        ({"x": np.zeros(3), "y": np.zeros(2)}, None, "the columns of a batch differ in length"),
    ]
    for first, second, message in cases:
        with (
            pytest.raises(tn.SchemaError, match=re.escape(message)),
            ArraySink(tmp_path / "o", "npy") as sink,
        ):
            sink.write(first)
            if second is not None:
                sink.write(second)
        assert listing(tmp_path) == []
    with (
        pytest.raises(TypeError, match=r"^column 'x' is a list; expected an ndarray"),
        ArraySink(tmp_path / "o", "npy") as sink,
    ):
        sink.write({"x": [1, 2]})


def test_load_refuses_what_is_not_a_complete_output(tmp_path):
    (tmp_path / "plain").mkdir()
    np.save(tmp_path / "plain" / "x.npy", np.zeros(3))
    with pytest.raises(
        tn.TFRecordError,
        match=r"^\S+plain is not a complete tfrecnp output \(no tfrecnp\.json and no zarr\.json",
    ):
        tn.load(tmp_path / "plain")
    np.savez(tmp_path / "p.npz", x=np.zeros(2))
    with pytest.raises(
        tn.TFRecordError,
        match=r"p\.npz is not a complete tfrecnp output \(no tfrecnp\.json member\)",
    ):
        tn.load(tmp_path / "p.npz")
    with h5py.File(tmp_path / "p.h5", "w") as f:
        f["x"] = np.zeros(2)
    with pytest.raises(tn.TFRecordError, match=r"no 'tfrecnp' attribute on the root group"):
        tn.load(tmp_path / "p.h5")
    with pytest.raises(FileNotFoundError, match=r"^no such file or folder: "):
        tn.load(tmp_path / "missing")
    # a save killed before its end leaves only a hidden temporary folder without a manifest
    sink = ArraySink(tmp_path / "killed", "npy")
    sink.write({"x": np.zeros(3)})
    hidden = [n for n in listing(tmp_path) if n.startswith(".killed.tmp-")]
    assert len(hidden) == 1 and "tfrecnp.json" not in os.listdir(tmp_path / hidden[0])
    sink.abort()
    assert not any(n.startswith(".killed") for n in listing(tmp_path))


def test_load_checks_the_manifest_against_the_arrays(tmp_path):
    def saved(name="out"):
        path = write_batches(tmp_path / name, "npy", [{"x": np.arange(20), "y": np.ones(20)}])
        return path, json.loads((tmp_path / name / "tfrecnp.json").read_text())

    def rewrite(manifest, name="out"):
        (tmp_path / name / "tfrecnp.json").write_text(json.dumps(manifest))

    path, manifest = saved()
    np.save(tmp_path / "out" / "x.npy", np.arange(5))  # a truncated column
    with pytest.raises(
        tn.TFRecordError,
        match=r"^\S+out is not a complete tfrecnp output \(column 'x' holds 5 rows, but the "
        r"manifest says 20 records\); ",
    ):
        tn.load(path)
    np.save(tmp_path / "out" / "x.npy", np.arange(20))
    rewrite({**manifest, "records": 999})
    with pytest.raises(
        tn.TFRecordError, match=r"\(column 'x' holds 20 rows, but the manifest says 999 records\)"
    ):
        tn.load(path)
    np.save(tmp_path / "out" / "x.npy", np.int64(3))
    rewrite(manifest)
    with pytest.raises(tn.TFRecordError, match=r"\(column 'x' holds a 0-d array, but the manifest"):
        tn.load(path)
    np.save(tmp_path / "out" / "x.npy", np.arange(20))
    assert tn.load(path).records == 20


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"records": None}, "manifest records None, expected a count >= 0"),
        ({"records": -1}, "manifest records -1, expected a count >= 0"),
        ({"columns": None}, "manifest columns None, expected a mapping"),
        ({"columns": {"x": "x"}}, "column 'x' has layout 'x', expected a kind of 'array', "),
        ({"columns": {"x": {"kind": "array"}}}, "column 'x': its array layout has no 'array'"),
        # found by fuzz/fuzz_sidecar.py: an unhashable kind was a TypeError
        ({"columns": {"x": {"kind": ["array"]}}}, "column 'x' has layout {'kind': ['array']}"),
        (
            {"columns": {"x": {"kind": "ragged", "row_splits": "x"}}},
            "column 'x': its ragged layout has no 'values'",
        ),
        ({"columns": {"x": {"kind": "array", "array": 3}}}, "column 'x' names the array 3; "),
        ({"columns": {"x": {"kind": "array", "array": "nope"}}}, "column 'x': a stored array is "),
        ({"spec": {"x": {"kind": "nope"}}}, "the manifest's spec does not parse: "),
    ],
)
def test_load_refuses_a_malformed_manifest(tmp_path, change, why):
    path = write_batches(tmp_path / "out", "npy", [{"x": np.arange(3)}])
    manifest = json.loads((tmp_path / "out" / "tfrecnp.json").read_text())
    manifest.update(change)
    for key in [k for k, v in change.items() if v is None and k == "records"]:
        del manifest[key]  # a missing key, not just a wrong value
    (tmp_path / "out" / "tfrecnp.json").write_text(json.dumps(manifest))
    with pytest.raises(
        tn.TFRecordError, match=r"is not a complete tfrecnp output \(" + re.escape(why)
    ):
        tn.load(path)


def test_load_refuses_a_manifest_that_is_not_json(tmp_path):
    path = write_batches(tmp_path / "out", "npy", [{"x": np.arange(3)}])
    (tmp_path / "out" / "tfrecnp.json").write_text('{"format": ')
    with pytest.raises(
        tn.TFRecordError,
        match=r"^\S+out is not a complete tfrecnp output \(its manifest is not JSON: ",
    ):
        tn.load(path)


def test_load_refuses_a_manifest_nested_too_deep(tmp_path):
    # json.loads raises RecursionError on deep nesting (thousands of '[' fit in a few KB)
    path = write_batches(tmp_path / "out", "npy", [{"x": np.arange(3)}])
    (tmp_path / "out" / "tfrecnp.json").write_text("[" * 5000)
    with pytest.raises(tn.TFRecordError, match=r"\(its manifest is not JSON: maximum recursion"):
        tn.load(path)


def test_load_refuses_a_manifest_that_is_not_utf8(tmp_path):
    # found by fuzz/fuzz_sidecar.py: the manifest was read as UTF-8 text before json saw it
    path = write_batches(tmp_path / "out", "npy", [{"x": np.arange(3)}])
    (tmp_path / "out" / "tfrecnp.json").write_bytes(b'{"fo\x8c\xf5')
    with pytest.raises(tn.TFRecordError, match=r"\(its manifest is not JSON: "):
        tn.load(path)


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b"\xff" + b[1:],  # the magic: NumPy took it for a pickle
        lambda b: b.replace(b"'shape'", b"'sha, 'shape'", 1),  # NumPy's tokenizer failed
        lambda b: b[:20],  # a header cut short
        # a shape of 2**61 float32s: NumPy's memmap raised OverflowError
        lambda b: b.replace(b"'<i8'", b"'<f4'").replace(b"(3,)", b"(2305843009213693952,)"),
    ],
)
def test_load_refuses_a_damaged_npy_header(tmp_path, damage):
    # found by fuzz/fuzz_sidecar.py: NumPy raised ValueError, TokenError, OverflowError
    path = write_batches(tmp_path / "out", "npy", [{"x": np.arange(3)}])
    npy = tmp_path / "out" / "x.npy"
    npy.write_bytes(damage(npy.read_bytes()))
    with pytest.raises(tn.TFRecordError, match=r"\(column 'x': a stored array does not read \("):
        tn.load(path)


@pytest.mark.parametrize("name", ["../other/x", "/etc/passwd", "..", "a/b", "a\\b"])
def test_load_opens_no_array_outside_the_output(tmp_path, name):
    # a stored array name is a stem(): '/', '\\' and '.' are escaped, so none of these is ours
    (tmp_path / "other").mkdir()
    np.save(tmp_path / "other" / "x.npy", np.arange(3))
    path = write_batches(tmp_path / "out", "npy", [{"x": np.arange(3)}])
    manifest = json.loads((tmp_path / "out" / "tfrecnp.json").read_text())
    manifest["columns"]["x"]["array"] = name
    (tmp_path / "out" / "tfrecnp.json").write_text(json.dumps(manifest))
    with pytest.raises(
        tn.TFRecordError,
        match=re.escape(
            f"(column 'x' names the array {name!r}; stored array names use only A-Z a-z 0-9 _ - % "
            ". and no '..')"
        ),
    ):
        tn.load(path)
    safe = string.ascii_letters + string.digits + "_-%"
    assert set(stem(name)) <= set(safe)  # what we write never looks like that
