"""`tn.load`: what `Dataset.save` wrote, opened back without reading it into memory. A .npy
folder and a .npz come back as memory maps; HDF5 and Zarr as lazy arrays; Ragged and bytes
columns as `LazyRagged` / `LazyBytes`, which read only the rows asked for. The manifest is
validated before anything is opened: names, layouts and lengths come from a file that may
have been edited or crafted."""

from __future__ import annotations

import json
import math
import os
import zipfile
from typing import Any

import numpy as np

from .._util import fs
from .._util.optional import require
from .._util.text import format_count
from ..errors import TFRecordError
from ..example.columns import BytesColumn, LazyBytes, LazyRagged, Ragged
from ..example.spec import spec_from_json
from ..format.compression import detect_compression
from ..format.frames import HEADER_BYTES, is_frame_header
from ..format.sniff import what_is
from .npy import HDF5_MAGIC, HEADER_ERRORS, ZIP_MAGIC, read_npy_header, zip_member_offset
from .sinks import MANIFEST, MANIFEST_FORMAT, SAFE_CHARS

__all__ = ["Arrays", "load"]


class Arrays(dict):
    """What `load` returns: {feature name: column}, plus .records, .spec (or None),
    .format, .path; close() (or a ``with`` block) releases an HDF5 file."""

    def __init__(self, columns: dict, *, path: str, format: str, records: int, spec: Any):
        super().__init__(columns)
        self.path, self.format, self.records, self.spec = path, format, records, spec
        self._close: list = []

    def close(self) -> None:
        for close in self._close:
            close()
        self._close = []

    def __enter__(self) -> Arrays:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        cols = ", ".join(self)
        return f"Arrays({self.path!r}, {self.format}, {format_count(self.records)} records: {cols})"


def _not_ours(path: str, why: str) -> TFRecordError:
    return TFRecordError(
        f"{path} is not a complete tfrecnp output ({why}); outputs of ds.save / tn.convert "
        "hold a manifest written last, so an interrupted save has none: run it again. Plain "
        "array files open with numpy / h5py / zarr, and tn.convert(path, 'out.tfrecord') "
        "writes them as TFRecords"
    )


def load(path: str | os.PathLike, *, storage_options: dict | None = None) -> Arrays:
    """Open what `Dataset.save` (or `tn.convert` to arrays) wrote, without reading the data.

    Parameters
    ----------
    path : str or os.PathLike
        A .npy folder, a .npz file, an HDF5 file or a Zarr folder; or a URL (s3://,
        memory://, any fsspec filesystem), copied to a local temporary folder first, as
        memory maps need local files.
    storage_options : dict, optional
        For a URL: passed to its fsspec filesystem (credentials, endpoint, ...).

    Returns
    -------
    Arrays
        A dict {feature: column}, with .records, .spec, .format and .path. .npy folders
        and .npz files give memory-mapped ndarrays (Ragged / BytesColumn over
        memory-mapped values); HDF5 and Zarr give their datasets / arrays, read when
        sliced (LazyRagged / LazyBytes for variable-length columns; [:] loads one).
        Close it (or use a ``with`` block) to release an HDF5 file.

    Raises
    ------
    FileNotFoundError
        Nothing is at path.
    TFRecordError
        path is a TFRecord file (open it with `tn.open`), or not a complete output of
        `save` (no manifest, as after an interrupted save, or a damaged one).
    """
    if fs.is_url(path):
        remote = fs.resolve(path, storage_options)
        if not fs.exists(remote):
            raise FileNotFoundError(f"no such file or folder: {remote}")
        path = fs.fetch_copy(remote)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file or folder: {path}")
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, MANIFEST)):
            return _load_npy(path)
        if os.path.exists(os.path.join(path, "zarr.json")):
            return _load_zarr(path)
        raise _not_ours(path, f"no {MANIFEST} and no zarr.json in the folder")
    with open(path, "rb") as f:
        head = f.read(HEADER_BYTES)
    if head.startswith(ZIP_MAGIC):
        return _load_npz(path)
    if head.startswith(HDF5_MAGIC):
        return _load_hdf5(path)
    if is_frame_header(head) or (detect_compression(head) is not None and what_is(path) is None):
        raise TFRecordError(
            f"{path} is a TFRecord file, not what Dataset.save writes: open it with "
            "tn.open(path), or convert it once with tn.convert(path, 'out/') and tn.load that"
        )
    what = what_is(path) or "its first bytes are none of the formats save writes"
    raise _not_ours(
        path, f"neither a folder, a .npz nor an HDF5 file: {what.removeprefix('it is ')}"
    )


def _check_manifest(path: str, manifest: Any) -> dict:
    """The manifest, if its shape is what `_build` reads: a damaged or hand-edited one is
    refused with what is wrong, not a KeyError halfway through."""
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise _not_ours(path, f"manifest format {found!r}, expected {MANIFEST_FORMAT!r}")
    records = manifest.get("records")
    if type(records) is not int or records < 0:
        raise _not_ours(path, f"manifest records {records!r}, expected a count >= 0")
    columns = manifest.get("columns")
    if not isinstance(columns, dict):
        raise _not_ours(path, f"manifest columns {columns!r}, expected a mapping")
    for name, layout in columns.items():
        _check_layout(path, name, layout)
    return manifest


def _check_array_name(path: str, column: str, name: Any) -> None:
    # stored names are stem()s plus .values / .offsets / .row_splits suffixes: never a '/',
    # a '..' or an absolute path, so one of those points outside the output
    if (
        not isinstance(name, str)
        or not name
        or not set(name) <= SAFE_CHARS | {"%", "."}
        or ".." in name
    ):
        raise _not_ours(
            path,
            f"column {column!r} names the array {name!r}; stored array names use only "
            "A-Z a-z 0-9 _ - % . and no '..'",
        )


def _check_layout(path: str, column: str, layout: Any) -> None:
    kind = layout.get("kind") if isinstance(layout, dict) else None
    keys = {"array": ("array",), "bytes": ("values", "offsets"), "ragged": ("row_splits",)}
    if not isinstance(kind, str) or kind not in keys:  # (a list or a dict is no key)
        raise _not_ours(
            path,
            f"column {column!r} has layout {layout!r}, expected a kind of "
            "'array', 'bytes' or 'ragged'",
        )
    for key in keys[kind]:
        if key not in layout:
            raise _not_ours(path, f"column {column!r}: its {kind} layout has no {key!r}")
        _check_array_name(path, column, layout[key])
    shape = layout.get("shape")
    if (
        kind == "bytes"
        and shape is not None
        and not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape))
    ):
        raise _not_ours(path, f"column {column!r}: shape {shape!r}, expected a list of sizes")
    if kind == "ragged":
        if "values" not in layout:
            raise _not_ours(path, f"column {column!r}: its ragged layout has no 'values'")
        _check_layout(path, column, layout["values"])


def _parse_manifest(path: str, text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, nesting
        raise _not_ours(path, f"its manifest is not JSON: {e}") from None


def _build(path: str, fmt: str, manifest: dict, array: Any) -> Arrays:
    """Columns from the manifest's layouts; array(name) opens one stored array."""
    records = manifest["records"]

    def fixed(col: BytesColumn, layout: dict) -> np.ndarray:
        # rows of `shape` strings each; the row count comes from the layout (else the strings),
        # since reshape(-1, ...) cannot tell it for a zero-size shape
        shape, size = layout["shape"], math.prod(layout["shape"])
        n = layout.get("rows", len(col) // size if size else 0)
        if type(n) is not int or len(col) != n * size:
            raise _not_ours(
                path,
                f"a bytes column of shape {shape} holds {len(col)} strings, expected "
                f"{n!r} rows x {size}",
            )
        return col.to_numpy().reshape(n, *shape)

    def rows(col: Any) -> int:
        shape = getattr(col, "shape", None)
        if shape is not None and not isinstance(col, (Ragged, BytesColumn)):
            return int(shape[0]) if len(shape) else -1
        return len(col)

    def column(layout: dict) -> Any:
        kind = layout["kind"]
        if kind == "array":
            return array(layout["array"])
        if kind == "bytes":
            values, offsets = array(layout["values"]), array(layout["offsets"])
            if isinstance(values, np.ndarray):
                checked = BytesColumn(values, offsets)  # validates offsets against the data
                # (checked, so taken as it is: keeps the np.memmap)
                col = BytesColumn.from_offsets(values, checked.offsets, validate=False)
                if layout.get("shape"):
                    return fixed(col, layout)
                return col
            if layout.get("shape"):
                return fixed(LazyBytes(values, offsets)[:], layout)
            return LazyBytes(values, offsets)
        if kind == "ragged":
            values, splits = column(layout["values"]), array(layout["row_splits"])
            if isinstance(splits, np.ndarray) and isinstance(
                values, (np.ndarray, Ragged, BytesColumn)
            ):
                checked = Ragged(values, splits)  # validates the splits against the values
                # (checked, so taken as it is: keeps the np.memmap)
                return Ragged.from_row_splits(values, checked.row_splits, validate=False)
            return LazyRagged(values, splits)
        raise _not_ours(path, f"unknown column kind {kind!r}")

    spec = manifest.get("spec")
    if spec is not None:
        try:
            spec = spec_from_json(spec)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise _not_ours(path, f"the manifest's spec does not parse: {e}") from None
    columns = {}
    for name, layout in manifest["columns"].items():
        try:
            col = column(layout)
        except (KeyError, FileNotFoundError) as e:
            raise _not_ours(path, f"column {name!r}: a stored array is missing ({e})") from None
        except (*HEADER_ERRORS, OSError, EOFError) as e:
            # a damaged .npy header (NumPy's parser raises several kinds), splits that
            # overrun their values
            raise _not_ours(path, f"column {name!r}: a stored array does not read ({e})") from None
        n = rows(col)
        if n != records:
            raise _not_ours(
                path,
                f"column {name!r} holds {'a 0-d array' if n < 0 else f'{n} rows'}, but the "
                f"manifest says {records} records",
            )
        columns[name] = col
    return Arrays(columns, path=path, format=fmt, records=records, spec=spec)


def _load_npy(path: str) -> Arrays:
    with open(os.path.join(path, MANIFEST), "rb") as f:  # bytes: json says if not UTF-8
        manifest = _check_manifest(path, _parse_manifest(path, f.read()))

    def array(name: str) -> np.ndarray:
        try:
            return np.load(os.path.join(path, name + ".npy"), mmap_mode="r", allow_pickle=False)
        except (*HEADER_ERRORS, EOFError) as e:  # a header or size that does not hold
            raise ValueError(f"{name}.npy: {e}") from None  # (or none): name the file

    return _build(path, "npy", manifest, array)


def _zip_member_offset(path: str, info: zipfile.ZipInfo) -> int:
    try:
        return zip_member_offset(path, info)
    except ValueError as e:
        raise _not_ours(path, str(e)) from None


def _load_npz(path: str) -> Arrays:
    with zipfile.ZipFile(path) as zf:
        try:
            manifest = _check_manifest(path, _parse_manifest(path, zf.read(MANIFEST)))
        except KeyError:
            raise _not_ours(path, f"no {MANIFEST} member") from None
        infos = {i.filename: i for i in zf.infolist()}

    def array(name: str) -> np.ndarray:
        info = infos[name + ".npy"]
        if info.compress_type != zipfile.ZIP_STORED:
            with zipfile.ZipFile(path) as z, z.open(info) as f:
                return np.lib.format.read_array(f, allow_pickle=False)
        start = _zip_member_offset(path, info)
        with open(path, "rb") as f:
            f.seek(start)
            version = np.lib.format.read_magic(f)
            shape, fortran, dtype = read_npy_header(f, version)
            offset = f.tell()
        if math.prod(shape) == 0:
            return np.empty(shape, dtype)
        return np.memmap(
            path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C"
        )

    return _build(path, "npz", manifest, array)


def _load_hdf5(path: str) -> Arrays:
    h5py = require("h5py", "hdf5")
    f = h5py.File(path, "r")
    try:
        text = f.attrs.get("tfrecnp")
        if text is None:
            raise _not_ours(path, "no 'tfrecnp' attribute on the root group")
        manifest = _check_manifest(path, _parse_manifest(path, text))
        out = _build(path, "hdf5", manifest, lambda name: f[name])
    except BaseException:
        f.close()
        raise
    out._close.append(f.close)
    return out


def _load_zarr(path: str) -> Arrays:
    zarr = require("zarr", "zarr")
    try:
        group = zarr.open_group(path, mode="r")
    except Exception as e:  # a lone Zarr array (not a group), or not Zarr at all
        try:
            zarr.open_array(path, mode="r")
        except Exception:
            raise _not_ours(path, f"zarr cannot open it as a group: {e}") from None
        raise _not_ours(path, "a lone Zarr array, not a group: zarr.open(path) reads it") from None
    manifest = group.attrs.get("tfrecnp")
    if manifest is None:
        raise _not_ours(path, "no 'tfrecnp' attribute on the root group")
    manifest = _check_manifest(path, dict(manifest))
    return _build(path, "zarr", manifest, lambda name: group[name])
