"""Array files -> TFRecord files: each array a feature, each row a record (the reverse of
`Dataset.save`); Parquet / Arrow IPC files -> TFRecord files; any source -> Parquet; and
`tn.convert`, which picks the direction from its source and its output."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .._util import fs
from ..arrays.sources import array_format, open_arrays
from ..example.write import Writer, WriteResult, write
from ..format.paths import Paths
from .blocks import block_records
from .convert_records import copy_records, is_records_conversion
from .opener import ARRAY_SUFFIXES, fetch_remote_arrays, is_array_source, open
from .parquet import PARQUET_SUFFIXES, is_arrow_source, save_parquet


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
    format: str | None = None,
    group_size: int | None = None,
) -> WriteResult:
    """Convert an array file (.npy, .npz, HDF5, Zarr, folder of .npy) to TFRecord files.

    Each array becomes a feature (name: the .npz member / dataset / array name, or the .npy
    file's name; `feature` renames a single one, `key` picks some), each row a record. Reads
    in slices, so files larger than memory stream through. Options as for `write`.
    """
    src = fetch_remote_arrays(src, storage_options) or os.fspath(src)
    if os.fspath(dst).endswith(ARRAY_SUFFIXES) and format is None:
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
            format=format,
            group_size=group_size,
        )


def convert(src: Paths, dst: str | os.PathLike, **options: Any) -> Any:
    """Convert between TFRecord files and arrays, the direction chosen from `src`.

    Streams in bounded memory; the output appears only when complete.

    Parameters
    ----------
    src : str, os.PathLike or list
        TFRecord files (a file, glob, directory or list), an array file (.npy, .npz,
        HDF5, Zarr, a folder of .npy), or Parquet / Arrow IPC files (a file, a folder of
        part files, a glob); local or a URL of any fsspec filesystem.
    dst : str or os.PathLike
        Where to write: an array output for TFRecords, TFRecord files for arrays and
        Parquet; a ``.parquet`` file (or, with format="parquet" and a trailing "/" or
        file_bytes=, a folder of part files) for any source.
    **options
        TFRecords -> arrays: those of `tn.open` (spec, compression, verify_crc, on_error,
        storage_options), `select`, and those of `Dataset.save` (format, progress,
        overwrite, batch_size): the same as
        ``tn.open(src, ...).select(select).save(dst, ...)``.
        Arrays -> TFRecords: those of `convert_arrays` (feature, key, encoding,
        compression, records_per_shard, index, progress, verify, storage_options).
        Parquet -> TFRecords: those of `convert_arrow_files`.
        TFRecords -> ArrayRecord (a ``.array_record`` dst or format="array_record") and
        ArrayRecord -> TFRecords (a .tfrecord dst or format="tfrecord"): the records
        copied byte for byte, with the options of `copy_records` (compression and
        group_size of the output, records_per_shard, on_error, verify_crc). Arrays and
        Parquet convert to ArrayRecord too, with format / group_size as in `tn.write`.
        -> Parquet: those of `tn.open` and `select`, and text, row_group_bytes,
        file_bytes, parquet_compression (default "auto": chosen per column), threads
        (row groups encoded at once; default the cores, at most 2), progress, overwrite;
        the output may be a URL too (storage_options serve both ends).

    Returns
    -------
    str or WriteResult
        The output path (to arrays), or the written files and their spec (to TFRecords).
    """
    if (
        options.get("format") == "parquet"
        or "file_bytes" in options
        or str(dst).lower().rstrip("/").endswith(PARQUET_SUFFIXES)
    ):
        return _to_parquet(src, dst, options)
    if is_arrow_source(src, options.get("storage_options")):
        return convert_arrow_files(src, dst, **options)
    if is_array_source(src, options.get("storage_options")):
        return convert_arrays(src, dst, **options)
    if is_records_conversion(src, dst, options):  # TFRecord <-> ArrayRecord, record for record
        if options.get("split") is not None:  # a TFDS split is records of some files
            raise ValueError(
                f"split={options['split']!r} picks records of a TFDS folder, but a copy to "
                f"{dst} copies whole files' records: name the split's shards (e.g. "
                "'<folder>/<version>/<name>-train.tfrecord-*'), or, to decode and write "
                "them, tn.write(dst, tn.open(src, split=...).to_numpy())"
            )
        return copy_records(src, dst, **options)
    open_options = {
        k: options.pop(k)
        for k in ("spec", "compression", "verify_crc", "on_error", "split")
        if k in options
    }
    if "storage_options" in options:
        open_options["storage_options"] = options["storage_options"]
    select = options.pop("select", None)
    ds = open(src, **open_options)
    if select is not None:
        ds = ds.select(select)
    return ds.save(dst, **options)


OPEN_OPTIONS = ("spec", "compression", "verify_crc", "on_error", "storage_options", "key")


def _to_parquet(src: Paths, dst: str | os.PathLike, options: dict[str, Any]) -> str:
    """Any source -> Parquet, a row group at a time (`save_parquet`)."""
    options = dict(options)
    options.pop("format", None)
    open_options = {k: options.pop(k) for k in OPEN_OPTIONS if k in options}
    if "parquet_compression" in options:  # compression= is the TFRecords' (tn.open's)
        options["compression"] = options.pop("parquet_compression")
    select = options.pop("select", None)
    ds = open(src, **open_options)
    if select is not None:
        ds = ds.select(select)
    if "storage_options" in open_options:  # for an output URL too
        options["storage_options"] = open_options["storage_options"]
    return save_parquet(ds, dst, **options)


def convert_arrow_files(
    src: Paths,
    dst: str | os.PathLike,
    *,
    spec: Any = None,
    encoding: str | Mapping[str, str | None] | None = None,
    compression: str | None = None,
    records_per_shard: int | None = None,
    index: bool = False,
    progress: bool = True,
    storage_options: dict | None = None,
    format: str | None = None,
    group_size: int | None = None,
) -> WriteResult:
    """Parquet / Arrow IPC files -> TFRecord files, a block of rows at a time (bounded
    memory): each column a feature (lists -> VarLen, fixed-size lists -> FixedLen of their
    shape, strings -> bytes), each row a record. spec picks columns by name; the other
    options are `write`'s. A column TFRecord cannot hold raises tn.SchemaError naming it.
    """
    ds = open(src, spec, storage_options=storage_options)
    writer = Writer(
        dst,
        encoding=encoding,
        compression=compression,
        records_per_shard=records_per_shard,
        index=index,
        progress=progress,
        storage_options=storage_options,
        format=format,
        group_size=group_size,
    )
    with writer:
        for block in ds._blocks(block_records(1, ds._mean_record_bytes()), prefetch=1):
            writer.write_batch(block.cols)
    size = sum(fs.size(p) for p in writer.paths)
    return WriteResult(writer.paths, writer.spec, writer.records, size)
