"""`tn.read`: every record of some files decoded into one dict of columns, through
`read_blocks` (record_dataset.py), the Dataset's block reader that Ray's read tasks use too:
the same sizing, pipelining and damage handling as a pass."""

from __future__ import annotations

from typing import Any

from ..example.columns import concat_columns
from ..example.decode import Batch, dense_when_uniform
from ..example.infer import infer_spec
from ..example.spec import Spec, as_spec
from ..format.damage import check_on_error
from ..format.paths import Paths, expand_paths
from .arrayrecord import is_array_record_source, open_array_record
from .record_dataset import RecordSource, read_blocks


def read(
    paths: Paths,
    spec: Spec | Any = None,
    *,
    compression: str | None = "auto",
    verify_crc: bool = True,
    threads: int | None = None,
    storage_options: dict | None = None,
    on_error: str = "raise",
) -> Batch:
    """Every record of TFRecord (or ArrayRecord) files decoded into one dict of columns,
    held in memory.

    For a dataset larger than memory, stream it instead: ``tn.open(paths).batches(n)``.

    Parameters
    ----------
    paths : str, os.PathLike or list
        TFRecord files: a file, a glob, a directory or a list of them, local or a URL of
        any fsspec filesystem.
    spec : dict or tn.Sequence, optional
        The features to decode; None infers one from a sample of the records.
    compression : {"auto", None, "GZIP", "ZLIB"}
        "auto" detects each file's compression from its first bytes.
    verify_crc : bool
        False skips the payload CRCs.
    threads : int, optional
        Decoding threads; the default uses the machine's cores.
    storage_options : dict, optional
        For URLs: passed to their fsspec filesystem.
    on_error : {"raise", "skip", "warn"}
        A damaged record (in the sample a spec is inferred from too) raises
        CorruptRecordError, or is skipped ("warn" also warns).

    Returns
    -------
    dict
        {feature: column}: ndarrays, tn.Ragged or tn.BytesColumn, one row per record.
    """
    check_on_error(on_error)
    if is_array_record_source(paths, storage_options):  # ArrayRecord files: a Dataset's pass
        ds = open_array_record(
            paths,
            spec=spec,
            on_error=on_error,
            verify=verify_crc,
            storage_options=storage_options,
            load_spec=as_spec,
        )
        return ds.to_numpy()
    files = expand_paths(paths, storage_options)
    if spec is None:
        spec = infer_spec(files, compression=compression, on_error=on_error)
    spec = as_spec(spec)
    parts = list(
        read_blocks(
            files,
            spec,
            compression=compression,
            verify_crc=verify_crc,
            on_error=on_error,
            threads=threads,
        )
    )
    if not parts:
        parts = [RecordSource.of([], spec).empty()]
    cols = {name: concat_columns([p[name] for p in parts]) for name in parts[0]}
    dense = dense_when_uniform(spec)
    return dense(cols) if dense else cols
