"""`tn.read`: every record of some files decoded into one dict of columns, the next batch
read while the last one decodes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

import numpy as np

from .._util.sizing import records_per_batch
from .._util.threads import CPUS, executor
from ..example.columns import concat_columns
from ..example.decode import Batch, Decoder, dense_when_uniform
from ..example.infer import infer_spec
from ..example.spec import Spec
from ..format.paths import Paths, expand_paths
from ..format.reader import RecordBatch, RecordReader, mean_frame_bytes

BATCH_BYTES = 4 << 20  # a batch of about this many bytes decodes in cache ...
BATCH_RECORDS = (64, 4096)  # ... within these many records


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
    """Every record of TFRecord files decoded into one dict of columns, held in memory.

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
    paths = expand_paths(paths, storage_options)
    if spec is None:
        spec = infer_spec(paths, compression=compression, on_error=on_error)
    # this thread reads while the pipeline thread decodes: one core less for chunks
    decoder = Decoder(spec, threads=threads if threads is not None else max(1, CPUS - 1))
    reader = RecordReader(paths, compression=compression, verify_crc=verify_crc, on_error=on_error)
    size = batch_size(paths, compression=compression)
    parts = list(_pipelined(reader.batches(size), decoder.decode))
    if not parts:
        parts = [decoder.decode(RecordBatch(np.empty(0, np.uint8), np.zeros(1, np.int64)))]
    cols = {name: concat_columns([p[name] for p in parts]) for name in parts[0]}
    dense = dense_when_uniform(decoder.spec)
    return dense(cols) if dense else cols


def batch_size(paths: Paths, *, compression: str | None = "auto") -> int:
    """Records per batch for these files: about BATCH_BYTES (judged from the first
    records), so small records batch by thousands and big tensors by tens."""
    mean = mean_frame_bytes(paths, compression=compression)
    if mean is None:
        return BATCH_RECORDS[1]
    return records_per_batch(BATCH_BYTES, mean, BATCH_RECORDS)


def _pipelined(batches: Iterable[RecordBatch], fn: Callable[[RecordBatch], Batch]):
    """fn over batches, each decoded in the pool while the next one is read (two in
    flight at most)."""
    pending: Future | None = None
    for batch in batches:
        future = executor("pipeline").submit(fn, batch)
        if pending is not None:
            yield pending.result()
        pending = future
    if pending is not None:
        yield pending.result()
