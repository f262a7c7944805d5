"""`tn.open`: any source as a Dataset, TFRecord files or arrays."""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._util import fs
from ..arrays.sinks import MANIFEST
from ..arrays.sources import array_format
from ..example.columns import BytesColumn, Ragged
from ..example.infer import infer_spec
from ..example.spec import as_spec, spec_from_json
from ..format.damage import check_on_error
from ..format.paths import Paths, expand_paths
from ..interop.tfx_schema import is_schema, spec_from_schema
from .array_dataset import open_array_dataset
from .arrayrecord import is_array_record_source, open_array_record
from .dataset import Dataset
from .files import Files
from .parquet import is_arrow_source, open_arrow_files
from .record_dataset import RecordDataset, RecordSource
from .tfds import is_tfds_folder, open_tfds

ARRAY_SUFFIXES = (".npy", ".npz", ".h5", ".hdf5", ".zarr")

__all__ = ["is_array_source", "open"]


def open(
    paths: Paths | np.ndarray | Mapping[str, Any],
    spec: Any = None,
    *,
    key: str | list[str] | None = None,
    compression: str | None = "auto",
    verify_crc: bool = True,
    on_error: str = "raise",
    storage_options: dict | None = None,
    split: str | None = None,
) -> Dataset:
    """Open TFRecord or ArrayRecord files, an array file or in-memory arrays as a Dataset.

    Nothing is read but what the spec needs (a sample when it is inferred); records are
    read when asked for, by index, slice or `batches`.

    Parameters
    ----------
    paths : str, os.PathLike, list, np.ndarray or dict
        TFRecord files: a file, a glob, a directory or a list of them, local or a URL of
        any fsspec filesystem (s3://, gs://, memory://). Or an array file: .npy
        (memory-mapped), .npz, HDF5, Zarr, or a folder written by `Dataset.save`. Or
        Parquet / Arrow IPC (Feather) files: a file, a folder of part files, a glob. Or
        ArrayRecord files (each record a tf.train.Example, as TFDS writes them): a file, a
        folder of shards, a glob, a list (judged by the Riegeli signature). Or an
        ndarray / np.memmap (one column, "x"), or a dict of columns (ndarrays, memmaps,
        h5py / Zarr arrays, tn.Ragged, tn.BytesColumn).
    spec : dict, tn.Sequence, str or os.PathLike, optional
        For TFRecords: a dict of features, a tn.Sequence, TensorFlow feature specs, spec
        JSON or the path of a spec.json. None infers one from a sample of the records.
        For arrays the spec comes from the arrays; a spec given picks features by name.
    key : str or list of str, optional
        Which arrays of an array file: the dataset(s) of an HDF5 file (a group: every
        dataset in it), the members of a .npz, the arrays of a Zarr group.
    compression : {"auto", None, "GZIP", "ZLIB"}
        "auto" detects each file's compression from its first bytes.
    verify_crc : bool
        False skips the payload CRCs (for ArrayRecord: the chunks' data hashes).
    on_error : {"raise", "skip", "warn"}
        A damaged record raises CorruptRecordError, or is skipped (listed in
        `ds.corruptions`; "warn" also warns).
    storage_options : dict, optional
        For URLs: passed to their fsspec filesystem.
    split : str, optional
        For a prepared tensorflow-datasets folder (one holding dataset_info.json and
        features.json, or version folders holding them): the TFDS split, as TFDS spells
        it ("train", "train[:10%]", "test[100:200]", "train+test"). The spec comes from
        its features.json (see `tfrecnp.data.tfds`); spec= replaces the features it names
        (``{"image": tn.Bytes()}`` keeps the encoded images, as TFDS's decoders= does).

    Returns
    -------
    Dataset
    """
    check_on_error(on_error)
    if isinstance(paths, (np.ndarray, Mapping, Ragged, BytesColumn)):
        return open_array_dataset(paths, key=key, spec=spec)
    if split is not None or is_tfds_folder(paths, storage_options):  # a TFDS folder
        if key is not None:
            raise ValueError(
                "a TFDS folder is read by its features.json: pass no key= (spec= replaces "
                "the features it names)"
            )
        return open_tfds(
            paths,
            split,
            spec=spec,
            verify_crc=verify_crc,
            on_error=on_error,
            storage_options=storage_options,
        )
    if is_arrow_source(paths, storage_options):  # Parquet / Arrow IPC files
        if key is not None:
            raise ValueError("key= picks arrays from an array file; Parquet takes spec= to pick")
        return open_arrow_files(paths, spec=spec, storage_options=storage_options)
    if is_array_record_source(paths, storage_options):  # ArrayRecord files
        if key is not None:
            raise ValueError("key= picks arrays from an array file; ArrayRecord files take none")
        return open_array_record(
            paths,
            spec=spec,
            on_error=on_error,
            verify=verify_crc,
            storage_options=storage_options,
            load_spec=_load_spec,
        )
    copy = fetch_remote_arrays(paths, storage_options)
    if copy is not None:
        return open_array_dataset(copy, key=key, spec=spec)
    if not fs.is_url(paths) and is_array_source(paths):
        return open_array_dataset(paths, key=key, spec=spec)  # type: ignore[arg-type]
    if key is not None:
        raise ValueError(
            "key= picks arrays from an array file (.npz, HDF5, Zarr); TFRecord files take none"
        )
    files = Files(expand_paths(paths, storage_options), compression, verify_crc, on_error)
    if spec is None:
        spec = infer_spec(files.paths, compression=compression, on_error=on_error)
    return RecordDataset(RecordSource(files, _load_spec(spec)))


def _load_spec(spec: Any) -> Any:
    if is_schema(spec):  # a TFX schema.pbtxt (path, text or Schema message)
        return spec_from_schema(spec)
    if isinstance(spec, (str, os.PathLike)) and not str(spec).lstrip().startswith("{"):
        path = os.fspath(spec)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such spec file: {path}")
        with builtins.open(path, encoding="utf-8") as f:
            return spec_from_json(f.read())
    return as_spec(spec)


def is_array_source(src: Any, storage_options: dict | None = None) -> bool:
    if not isinstance(src, (str, os.PathLike)):
        return False
    if fs.is_url(src):
        return _remote_arrays(fs.resolve(src, storage_options))
    return os.path.exists(src) and array_format(src) is not None


def _remote_arrays(url: Any) -> bool:
    """An array file or a saved folder on a remote filesystem, judged by name or manifest
    (without downloading it)."""
    if str(url).rstrip("/").endswith(ARRAY_SUFFIXES):
        return fs.exists(url)
    return fs.isdir(url) and fs.exists(fs.join(url, MANIFEST))


def fetch_remote_arrays(src: Any, storage_options: dict | None = None) -> str | None:
    """A local copy of remote arrays (memory-mapping needs local files), or None when src
    is not a remote array source."""
    if not (isinstance(src, (str, os.PathLike)) and fs.is_url(src)):
        return None
    url = fs.resolve(src, storage_options)
    return fs.fetch_copy(url) if _remote_arrays(url) else None
