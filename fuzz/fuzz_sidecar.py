#!/usr/bin/env python3
"""Fuzz target: the files that describe other files. The `.idx` sidecar reader and the
`tn.load` manifest reader (tfrecnp.json), plus the .npy headers a manifest points at.

Input: byte 0 chooses what the rest of the input replaces (b % 4):
  0  the .idx sidecar of a five-record TFRecord file
  1  tfrecnp.json of a folder written by Dataset.save(format="npy")
  2  tfrecnp.json inside an .npz written by Dataset.save(format="npz")
  3  one .npy file of that folder (byte 1 picks which), keeping its manifest

Checks. Sidecar: read_index gives an index that tiles the file, or None (ignored, the file
is rescanned); without the data file, an index or the documented ValueError. A dataset
opened over the file reads each record, by position and in lists, as the file holds it, or
raises a typed error (a sidecar is spot-checked, not read in full, before it is trusted).
Manifest: tn.load gives columns of the stated row count whose rows read, or a typed error.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from _harness import Scratch, instrumented, main, typed_errors

with instrumented():
    import numpy as np

    import tfrecnp as tn
    from tfrecnp.format.index import read_index
    from tfrecnp.format.reader import count_records

TYPED = typed_errors()
SCRATCH = Scratch()


def _setup():
    """The files each input is laid over: written once, restored before every input."""
    base = SCRATCH.fresh("base")
    rows = [list(range(k)) for k in (3, 0, 7, 1, 20)]
    result = tn.write(
        str(base / "data.tfrecord"),
        {"x": tn.Ragged.from_list(rows, dtype="int64"), "y": np.arange(5.0, dtype="float32")},
        index=True,
        progress=False,
    )
    data = result.paths[0]
    truth = list(tn.RecordReader(data))
    columns = {
        "x": np.arange(12, dtype="int64").reshape(4, 3),
        "r": tn.Ragged.from_list([[1.0], [], [2.0, 3.0], [4.0]], dtype="float32"),
        "b": [b"a", b"", b"ccc", b"dd"],
    }
    folder = tn.open(columns).save(str(base / "saved"), format="npy", progress=False)
    npz = tn.open(columns).save(str(base / "saved.npz"), format="npz", progress=False)
    members = sorted(p.name for p in (base / "saved").iterdir() if p.suffix == ".npy")
    return data, result.spec, truth, folder, npz, members


DATA, SPEC, TRUTH, FOLDER, NPZ, MEMBERS = _setup()


def check_sidecar(text: bytes) -> None:
    index_file = SCRATCH.file("data.tfrecord.idx", text)
    data = SCRATCH.file("data.tfrecord", Path(DATA).read_bytes())
    try:
        alone = read_index(index_file)
    except ValueError:
        alone = None  # documented: an index that does not parse or tile a file
    if alone is not None:
        assert np.all(alone.lengths >= 0)
    index = read_index(index_file, data)
    if index is not None:
        ends = index.offsets + index.frame_lengths
        assert index.offsets[0] == 0 and np.array_equal(index.offsets[1:], ends[:-1])
        assert int(ends[-1]) == Path(data).stat().st_size
    try:
        count_records(data)
        ds = tn.open(data, SPEC)
        got = [ds[i] for i in range(len(ds))]
        rows = ds[list(range(len(ds)))[::-1]]
    except TYPED:
        return
    assert len(ds) == len(TRUTH), f"a trusted sidecar says {len(ds)} records, the file holds 5"
    whole = tn.read(data, SPEC)
    for i in range(len(ds)):
        for name in SPEC:
            assert np.array_equal(np.asarray(got[i][name]), np.asarray(whole[name][i]))
    assert len(rows["y"]) == len(ds)


def restore_folder() -> str:
    folder = SCRATCH.fresh("saved")
    for p in Path(FOLDER).iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    return str(folder)


def use(arrays) -> None:
    """Read every column of what tn.load gave, row by row and whole."""
    for name, col in arrays.items():
        n = len(col)
        assert n == arrays.records, (name, n, arrays.records)
        for i in range(n):
            np.asarray(col[i])
        if hasattr(col, "to_list"):
            col.to_list()
        else:
            np.asarray(col[:])


def check_load(path: str) -> None:
    try:
        arrays = tn.load(path)
    except TYPED:
        return
    with arrays:
        use(arrays)


def check_npz(manifest: bytes) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(NPZ) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = manifest if info.filename == "tfrecnp.json" else src.read(info)
            dst.writestr(info, body)
    check_load(SCRATCH.file("saved.npz", out.getvalue()))


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    mode, body = data[0] % 4, data[1:]
    if mode == 0:
        check_sidecar(body)
    elif mode == 1:
        folder = restore_folder()
        with open(f"{folder}/tfrecnp.json", "wb") as f:
            f.write(body)
        check_load(folder)
    elif mode == 2:
        check_npz(body)
    else:
        folder = restore_folder()
        member = MEMBERS[body[0] % len(MEMBERS)]
        with open(f"{folder}/{member}", "wb") as f:
            f.write(body[1:])
        check_load(folder)


if __name__ == "__main__":
    main(test_one_input)
