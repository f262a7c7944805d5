"""Array files -> TFRecord files: each array a feature, each row a record (the reverse of
`Dataset.save`), and `tn.convert`, which picks the direction from its source."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..arrays.sources import array_format, open_arrays
from ..example.write import WriteResult, write
from ..format.paths import Paths
from .opener import ARRAY_SUFFIXES, fetch_remote_arrays, is_array_source, open


def convert_arrays(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    *,
    feature: str | None = None,
    key: str | list[str] | None = None,
    encoding: str | Mapping[str, str | None] | None = None,
    compression: str | None = None,
    records_per_shard: int | None = None,
    index: bool = False,
    progress: bool = True,
    verify: bool = False,
    storage_options: dict | None = None,
) -> WriteResult:
    """Convert an array file (.npy, .npz, HDF5, Zarr, folder of .npy) to TFRecord files.

    Each array becomes a feature (name: the .npz member / dataset / array name, or the .npy
    file's name; `feature` renames a single one, `key` picks some), each row a record. Reads
    in slices, so files larger than memory stream through. Options as for `write`.
    """
    src = fetch_remote_arrays(src, storage_options) or os.fspath(src)
    if os.fspath(dst).endswith(ARRAY_SUFFIXES):
        raise ValueError(
            f"{dst}: array files convert to TFRecord files (give a .tfrecord path); "
            "array-to-array conversion is not supported: use h5py / zarr / NumPy directly"
        )
    fmt = array_format(src)
    if fmt is None:
        if not os.path.exists(src):
            raise FileNotFoundError(f"no such file: {src}")
        raise ValueError(
            f"{src} is not an array file tfrecnp converts (.npy, .npz, HDF5, Zarr, or a "
            "folder of .npy files)"
        )
    with open_arrays(src, key=key, feature=feature) as source:
        # a saved SequenceExample dataset is written back as one: its feature lists stay lists
        spec = source.spec if feature is None else None
        sequence = [n for n in getattr(spec, "sequence", {}) if n in source.columns]
        return write(
            dst,
            source.columns,
            encoding=encoding,
            compression=compression,
            records_per_shard=records_per_shard,
            index=index,
            progress=progress,
            verify=verify,
            sequence=sequence,
            storage_options=storage_options,
        )


def convert(src: Paths, dst: str | os.PathLike, **options: Any) -> Any:
    """Convert between TFRecord files and arrays, the direction chosen from `src`.

    Streams in bounded memory; the output appears only when complete.

    Parameters
    ----------
    src : str, os.PathLike or list
        TFRecord files (a file, glob, directory or list), or an array file (.npy, .npz,
        HDF5, Zarr, a folder of .npy); local or a URL of any fsspec filesystem.
    dst : str or os.PathLike
        Where to write: an array output for TFRecords, TFRecord files for arrays.
    **options
        TFRecords -> arrays: those of `tn.open` (spec, compression, verify_crc, on_error,
        storage_options), `select`, and those of `Dataset.save` (format, progress,
        overwrite, batch_size): the same as
        ``tn.open(src, ...).select(select).save(dst, ...)``.
        Arrays -> TFRecords: those of `convert_arrays` (feature, key, encoding,
        compression, records_per_shard, index, progress, verify, storage_options).

    Returns
    -------
    str or WriteResult
        The output path (to arrays), or the written files and their spec (to TFRecords).
    """
    if is_array_source(src, options.get("storage_options")):
        return convert_arrays(src, dst, **options)
    open_options = {
        k: options.pop(k) for k in ("spec", "compression", "verify_crc", "on_error") if k in options
    }
    if "storage_options" in options:
        open_options["storage_options"] = options["storage_options"]
    select = options.pop("select", None)
    ds = open(src, **open_options)
    if select is not None:
        ds = ds.select(select)
    return ds.save(dst, **options)
