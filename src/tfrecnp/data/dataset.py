"""A dataset opened like a dict of NumPy columns: `tn.open(...) -> Dataset`.

A Dataset is a view of a range of records of one source, read with one spec. The source is
TFRecord files (`RecordSource`, in `record_dataset`) or arrays (`TableSource`, in
`array_dataset`: .npy, .npz, HDF5, Zarr, what `save` wrote, or arrays in memory); this
class holds everything that does not depend on which:

- ``len(ds)``; ``ds[i]`` is one record (``{name: value}``); ``ds[a:b]``, ``ds[[i, j, k]]``
  and ``ds.__getitems__([i, j, k])`` (PyTorch's batched fetch) are batches.
- ``ds.batches(n)`` serves batches as views of blocks (`tfrecnp.data.blocks`): background
  threads read (and decode) about 4 MiB at a time, ``prefetch`` blocks ahead, so memory is
  bounded by the block size times prefetch, never by the dataset.
- ``select``, ``shard`` and ``take`` return narrower views; ``to_numpy`` reads everything
  after checking the size against a memory budget; ``save`` streams everything into .npy,
  .npz, HDF5 or Zarr (`tfrecnp.arrays.sinks`).
- ``to_tf`` and ``to_torch`` hand it to a framework (`tfrecnp.adapters`, which work on any
  object with ``spec`` and ``batches``); ``len`` and ``[i]`` make it a map-style dataset
  for PyTorch's DataLoader and a data source for grain.

A source provides what depends on where records live, declared once in
`tfrecnp.data.source.Source` (count, reads by position, blocks in file order / permuted /
through a pool, sizes, empty batch, paths, corruptions, close) and checked for every source
by one test suite (``tests/source_contract.py``). A Dataset holds its source (``ds.source``)
and a range of it; ``shuffle=`` becomes one `Shuffle` value here, in `batches`, and reaches
the source as it is.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections import abc
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .._util import fs
from .._util.atomic import naming_write_errors
from .._util.memory import available_memory
from .._util.progress import Progress
from .._util.text import format_count, format_size
from .._util.threads import close_iterator, run_ahead
from ..arrays.sinks import ArraySink, output_format
from ..errors import CorruptRecordError, MemoryBudgetError, TFRecordError
from ..example.columns import BytesColumn, Column, Ragged, concat_columns, slice_column
from ..example.decode import dense_when_uniform
from ..example.image import Image
from ..example.padding import feature_names, padder
from ..example.spec import Bytes, FixedLen, Sequence
from ..format.frames import OVERHEAD_BYTES
from .blocks import Block, block_records, serve
from .source import IN_ORDER, Shuffle, Source

__all__ = ["Dataset", "Record", "Records"]

Batch = dict[str, Column]


class Dataset:
    """Records of one source (TFRecord files or arrays) read with one spec. Made by
    `tn.open`; see the module docstring for what it does."""

    def __init__(self, source: Source, *, start: int = 0, stop: int | None = None):
        self.source = source
        self.spec = source.spec
        self._start = start
        self._stop = stop

    def _view(self, *, spec: Any = None, start: int | None = None, stop: Any = ...) -> Dataset:
        """The same kind of Dataset over another range, or with fewer features."""
        return type(self)(
            self.source if spec is None else self.source.select(spec),
            start=self._start if start is None else start,
            stop=self._stop if stop is ... else stop,
        )

    def _whole(self) -> bool:
        """True when this view covers every record."""
        return self.source.whole(self._start, self._stop)

    def _mean_record_bytes(self) -> float:
        return self.source.mean_record_bytes(self._start, self._stop)

    def _block_records(self, batch_size: int = 1) -> int:
        """Records per decoded block for batches of batch_size: a byte budget over this
        view's mean record size, a whole number of batches."""
        return block_records(batch_size, self._mean_record_bytes())

    def estimate_nbytes(self) -> tuple[int, int]:
        """(estimated bytes of to_numpy's result, records decoded to estimate it)."""
        return self.source.estimate_nbytes(self._start, self._stop)

    @property
    def paths(self) -> list[str]:
        """The files, in reading order."""
        return self.source.paths

    @property
    def corruptions(self) -> list[CorruptRecordError]:
        """Damage skipped so far with on_error="skip" / "warn"."""
        return self.source.corruptions

    def stats(self) -> dict[str, int]:
        """What reading this dataset's files from an object store has cost so far, in this
        process: {"requests", "bytes" received, and the requests by kind: "get", "list",
        "head"}; a pass costs the difference before and after it. Zeros for local files."""
        meter = fs.meter_of(self.paths)
        return meter.snapshot() if meter else fs.Meter().snapshot()

    def close(self) -> None:
        """Close the file handles kept for reads (the next read reopens them). A Dataset
        pickles without them, and after a fork reopens its own."""
        self.source.close()

    # -- views ------------------------------------------------------------------------------

    def _range(self) -> tuple[int, int]:
        """(start, stop) as global record numbers."""
        return self.source.span(self._start, self._stop)

    def __len__(self) -> int:
        start, stop = self._range()
        return stop - start

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def select(self, names: str | Iterable[str]) -> Dataset:
        """The same records with only these features (only they are decoded)."""
        names = [names] if isinstance(names, str) else list(names)
        known = feature_names(self.spec)
        missing = [n for n in names if n not in known]
        if missing:
            raise KeyError(
                f"no feature {missing[0]!r} in the spec; features: {', '.join(map(repr, known))}"
            )
        if isinstance(self.spec, Sequence):
            spec: Any = Sequence(
                {n: f for n, f in self.spec.context.items() if n in names},
                {n: f for n, f in self.spec.sequence.items() if n in names},
            )
        else:
            spec = {n: self.spec[n] for n in names}
        return self._view(spec=spec)

    def take(self, n: int) -> Dataset:
        """The first n records (fewer if there are fewer)."""
        if n < 0:
            raise ValueError(f"take needs n >= 0, not {n}")
        end = self._start + n
        return self._view(stop=end if self._stop is None else min(self._stop, end))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Shard `index` of `num_shards`: a contiguous run of about len/num_shards records.
        The shards partition the records: each record is in exactly one."""
        if num_shards < 1 or not 0 <= index < num_shards:
            raise ValueError(
                f"shard needs num_shards >= 1 and 0 <= index < num_shards, got "
                f"num_shards={num_shards}, index={index}"
            )
        start, stop = self._range()
        n = stop - start
        return self._view(
            start=start + index * n // num_shards, stop=start + (index + 1) * n // num_shards
        )

    # -- random access ---------------------------------------------------------------------------

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str):
            raise TypeError(
                f"ds[{index!r}]: index records by number, slice or list; for one feature "
                f"use ds.select([{index!r}])"
            )
        self.source.check_random_access("ds[...]")
        if isinstance(index, (int, np.integer)):
            i = int(index)
            n = self._len_for(i)
            if not -n <= i < n:
                raise IndexError(f"record {i} out of range for a dataset of {n} records")
            return self.source.read_one(self._start + i % n)
        if isinstance(index, slice):
            start, stop = self._range()
            a, b, step = index.indices(stop - start)
            if step == 1:
                return self._as_batch(self.source.read_span(start + a, start + max(a, b)))
            ids = start + np.arange(a, b, step, dtype=np.int64)
            return self._as_batch(self.source.read_ids(ids, "ds[a:b:step]"))
        idx = np.asarray(index)
        n = self._len_for(int(idx.max()) if idx.size and idx.dtype.kind in "iu" else -1)
        if idx.dtype == bool:
            if idx.shape != (n,):
                raise IndexError(f"boolean index of shape {idx.shape} for {n} records")
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = np.empty(0, np.int64)
        elif idx.dtype.kind not in "iu" or idx.ndim != 1:
            raise IndexError(
                f"records are picked by an int, a slice or a 1-D list of ints, not {index!r}"
            )
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = int(idx[(idx < -n) | (idx >= n)][0])
            raise IndexError(f"record {bad} out of range for a dataset of {n} records")
        idx = np.where(idx < 0, idx + n, idx)
        return self._as_batch(self.source.read_ids(self._start + idx, "ds[[...]]"))

    def _len_for(self, highest: int) -> int:
        """len(self) for a read by position of records up to `highest`; where damage stops
        the count (a damaged compressed stream), the records before it when `highest` lies
        among them, as a positioned read reaches them; else the damage."""
        try:
            return len(self)
        except CorruptRecordError:
            readable = self.source.readable()
            if readable is None:
                raise
            n = readable - self._start
            if self._stop is not None:
                n = min(n, self._stop - self._start)
            if not 0 <= highest < n:
                raise
            return n

    def _as_batch(self, cols: Batch) -> Batch:
        """A block as a user's batch: tn.Raw columns of one size per record dense."""
        dense = dense_when_uniform(self.spec)
        return dense(cols) if dense else cols

    def __getitems__(self, indices: abc.Sequence[int]) -> Records:
        """The records at these positions, read in one call: the batched fetch PyTorch's
        DataLoader uses on map-style datasets. Returns a list of records (each
        {name: value}) backed by one batch, kept whole in `.columns`, which PyTorch's
        default collate then turns into tensors whole (see tfrecnp.adapters.torch).
        Runs of neighbours asked for at a steady stride (a DataLoader without shuffling:
        each worker gets batch k, k + num_workers, ...) are read ahead (see ReadAhead)."""
        if "torch" in sys.modules:
            _torch_collates_records()
        idx = np.asarray(indices, np.int64)
        ahead = self.__dict__.get("_ahead")
        if ahead is None:
            ahead = self.__dict__.setdefault("_ahead", ReadAhead())
        cols = ahead.serve(self, idx)
        return Records(self[idx] if cols is None else cols)

    # -- blocks and batches ----------------------------------------------------------------------

    def _blocks(
        self,
        block: int,
        *,
        shuffle: Shuffle = IN_ORDER,
        threads: int | None = None,
        prefetch: int = 2,
        then: Callable[..., Batch] | None = None,
    ) -> Iterator[Block]:
        """Blocks of `block` records (the last may be short), read, shuffled and finished by
        `then` in background threads, `prefetch` blocks ahead (0: in the caller's thread)."""
        source, start, stop = self.source, self._start, self._stop

        def produce() -> Iterator[Block]:
            blocks = source.blocks(start, stop, block, shuffle, threads=threads, ahead=prefetch)
            try:
                for b in blocks:
                    yield b if then is None else Block(then(b.cols, b.where), b.n, b.nbytes)
            finally:
                close_iterator(blocks)

        if not prefetch or (then is None and source.makes_ahead(start, stop, shuffle)):
            return produce()  # in this thread, or the source's own run ahead
        return run_ahead(produce(), prefetch)

    def batches(
        self,
        batch_size: int,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        pad: bool | Mapping[str, Any] | None = None,
        truncate: bool = False,
        prefetch: int = 2,
        threads: int | None = None,
    ) -> Iterator[Batch]:
        """Batches of decoded columns, {name: column}, for a training loop.

        Records are read and decoded ahead of the loop, in blocks of thousands; each batch is
        a view into a block, so small batches cost little more than large ones. Memory is
        bounded by the block size and `prefetch`, never by the dataset.

        Parameters
        ----------
        batch_size : int
            Records per batch.
        shuffle : bool or int
            False: file order. True: a permutation of all records (read by position:
            uncompressed files, or local GZIP / ZLIB ones with the gzip extra).
            N: records drawn at random through a buffer of N records fed from up to 8 files in
            turn, as tf.data's `shuffle(N)` (any file; holds up to about twice N records).
        seed : int, optional
            Makes the shuffle deterministic.
        drop_remainder : bool
            Drop a final batch shorter than batch_size.
        pad : dict or bool, optional
            Ragged columns made dense: {"tokens": 128} gives "tokens" as [n, 128] (rows filled
            with 0) plus "tokens_length" (each row's real length); {"tokens": (128, -1)} fills
            with -1; a length of None, or pad=True (every flat Ragged column), pads to the
            batch's longest row.
        truncate : bool
            Cut rows longer than their pad length instead of raising tn.SchemaError.
        prefetch : int
            Blocks made ahead of the loop; 0 reads in the caller's thread.
        threads : int, optional
            Decoding threads; the default uses the machine's cores.

        Yields
        ------
        dict
            {feature: column}: ndarrays, tn.Ragged or tn.BytesColumn (or dense arrays with pad).
        """
        check_batch_size(batch_size)
        order = Shuffle.of(shuffle, seed)
        if prefetch < 0:
            raise ValueError(f"prefetch must be >= 0, not {prefetch}")
        if order.kind == "all":
            self.source.check_random_access("batches(shuffle=True)")
        pad_rows, per_block = padder(self.spec, pad, truncate=truncate)
        batch_size = int(batch_size)
        steps = [f for f in (None if per_block else pad_rows, dense_when_uniform(self.spec)) if f]

        def finish(cols: Batch) -> Batch:
            for step in steps:
                cols = step(cols)
            return cols

        def generate() -> Iterator[Batch]:
            block = self._block_records(batch_size)
            blocks = self._blocks(
                block,
                shuffle=order,
                threads=threads,
                prefetch=prefetch,
                then=pad_rows if per_block else None,
            )
            yield from serve(
                blocks, batch_size, drop_remainder=drop_remainder, finish=finish if steps else None
            )

        return generate()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Each record as {name: value}, in file order."""
        block = self._block_records()
        for b in self._blocks(block):
            rows = [_row_values(col) for col in b.cols.values()]
            # dict(zip(names, values)) per record, with the loop in C
            yield from map(dict, map(zip, itertools.repeat(list(b.cols)), zip(*rows, strict=True)))

    # -- whole-dataset calls ---------------------------------------------------------------------

    def to_numpy(self, *, max_bytes: int | None = None) -> Batch:
        """Every record decoded into one dict of columns, held in memory.

        First the size is estimated (index + a decoded sample); above max_bytes (default:
        half of the memory available now) it raises tn.MemoryBudgetError naming the
        streaming alternatives, batches() and save().
        """
        self._check_memory("to_numpy()", max_bytes)
        n = len(self)
        out: dict[str, Any] = {}
        parts: dict[str, list] = {}
        row = 0
        for block in self._blocks(self._block_records()):
            k = block.n
            for name, col in block.cols.items():
                if (
                    isinstance(col, np.ndarray)
                    and name in out
                    and _sizes_vary(self.spec, name, out[name], col)
                ):  # images of different sizes: an object column of images, joined last
                    parts[name] = [out.pop(name)[:row]]
                if isinstance(col, np.ndarray) and name not in parts:
                    if name not in out:
                        out[name] = np.empty((n, *col.shape[1:]), col.dtype)
                    elif out[name].shape[1:] != col.shape[1:]:
                        raise TFRecordError(
                            f"feature {name!r} decodes to rows of shape {col.shape[1:]} in one "
                            f"block and {out[name].shape[1:]} in another; a spec with -1 "
                            "resolves per block: put the -1 first for a Ragged column"
                        )
                    out[name][row : row + k] = col
                else:
                    parts.setdefault(name, []).append(col)
            row += k
        if row == 0 and not out and not parts:
            return self.source.empty()
        result = {}
        for name in self._column_order(out, parts):
            if name in out:
                result[name] = out[name][:row]
            else:
                result[name] = concat_columns(parts[name])
        return self._as_batch(result)

    def _check_memory(self, call: str, max_bytes: int | None) -> None:
        """Raise MemoryBudgetError when `call` would hold more than max_bytes (default:
        half of the memory available now), naming the streaming alternatives."""
        estimate, sampled = self.estimate_nbytes()
        available = available_memory()
        budget = max_bytes if max_bytes is not None else (available // 2 if available else None)
        if budget is not None and estimate > budget:
            n = len(self)
            why = (
                f"max_bytes={format_count(budget)}"
                if max_bytes is not None
                else f"half of the {format_size(available)} of memory available"
            )
            stream = (
                "ds.arrow_reader() (a pyarrow.RecordBatchReader), or write it to Parquet with "
                "tn.convert(src, 'out.parquet')"
                if call != "to_numpy()"
                else "`for batch in ds.batches(1024): ...`, or write it to disk with "
                "ds.save('out/') and open that memory-mapped with tn.load('out/')"
            )
            error = MemoryBudgetError(
                f"{call} would need about {format_size(estimate)} for "
                f"{format_count(n)} records (estimated from {format_count(sampled)} decoded "
                f"records), over the budget of {format_size(budget)} ({why}). Stream it "
                f"instead: {stream}; or pass a larger max_bytes="
            )
            error.estimate, error.budget = estimate, budget
            raise error

    # -- Arrow --------------------------------------------------------------------------------

    def arrow_reader(
        self, batch_size: int | None = None, *, text: Iterable[str] | bool = ()
    ) -> Any:
        """The records as a ``pyarrow.RecordBatchReader``: Arrow's stream, which DuckDB,
        polars, pandas and pyarrow (Parquet, datasets) take a batch at a time, so memory
        stays at a few blocks. Dense columns are (fixed-size lists of) primitives, Ragged
        are large lists, bytes are large binary; see `tfrecnp.interop.arrow` for the types
        and what is zero-copy. Needs pyarrow (``pip install 'tfrecnp[arrow]'``).

        Parameters
        ----------
        batch_size : int, optional
            Rows per Arrow batch; None hands over each decoded block (thousands of rows,
            about 4 MiB) as it is, which costs least.
        text : list of str or bool
            Bytes features given as UTF-8 strings (True: every bytes feature); a value that
            is not UTF-8 raises tn.SchemaError naming the feature.
        """
        return self._arrow_stream(self._block_records(), batch_size, text)

    def _arrow_stream(self, block: int, batch_size: int | None, text: Iterable[str] | bool) -> Any:
        """`arrow_reader` over decoded blocks of `block` records (save_parquet asks for
        smaller ones than a pass's: its encoders hold the rows, the blocks ahead need not)."""
        from ..adapters.arrow import arrow_reader

        # Whole blocks made Arrow, then cut to batch_size rows: Python work per block.
        blocks = self._blocks(block)
        batches: Iterable[Batch] = (self._as_batch(b.cols) for b in blocks)
        if text is not True:  # tn.Text features are strings, even in a stream of no rows
            spec = self.spec.context if isinstance(self.spec, Sequence) else self.spec
            text = (*(text or ()), *(n for n, f in spec.items() if f.type_name == "Text"))
        return arrow_reader(batches, self.source.empty, text=text, batch_size=batch_size)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow C stream of `arrow_reader()`: DuckDB (``duckdb.sql("select ... from
        ds")``), polars (``pl.DataFrame(ds)``) and pyarrow read a Dataset directly."""
        return self.arrow_reader().__arrow_c_stream__(requested_schema)

    def to_arrow(self, *, max_bytes: int | None = None, text: Iterable[str] | bool = ()) -> Any:
        """Every record as one ``pyarrow.Table``, after the memory check of `to_numpy`
        (tn.MemoryBudgetError above max_bytes, default half the memory available).
        Types as `arrow_reader` gives them; text as there."""
        self._check_memory("to_arrow()", max_bytes)
        return self.arrow_reader(text=text).read_all()

    def to_pandas(self, *, max_bytes: int | None = None, text: Iterable[str] | bool = ()) -> Any:
        """Every record as a pandas DataFrame (through `to_arrow`, with its memory check):
        numbers as columns of numbers, bytes as bytes objects (str for `text` features),
        Ragged and dense rows of several values as one NumPy array per cell. Needs pandas."""
        from .._util.optional import require

        require("pandas", "arrow")
        self._check_memory("to_pandas()", max_bytes)
        return self.arrow_reader(text=text).read_pandas()

    def to_hf(self, *, max_bytes: int | None = None, text: Iterable[str] | bool = ()) -> Any:
        """Every record as an in-memory Hugging Face ``datasets.Dataset`` (through
        `to_arrow`, with its memory check; no loop per record), its Features mapped from
        the spec (`tfrecnp.interop.hf`: ArrayND, List, LargeList, Value; text features as
        strings; a TFDS folder's ClassLabels with their names; tn.Image without size= as
        HF Image(), its records' encoded bytes). For more than memory,
        write Parquet (``tn.convert(src, "out/", format="parquet")``) and load that with
        ``datasets.load_dataset("parquet", ...)``. Needs ``pip install 'tfrecnp[hf]'``."""
        from ..interop.hf import encoded_images, to_hf

        if not isinstance(self.spec, Mapping):
            raise TypeError("to_hf takes datasets of tf.train.Example; this one reads a Sequence")
        ds, images = self, encoded_images(self.spec)  # HF Image(): encoded bytes, not pixels
        if images:
            ds = self._view(spec={n: Bytes() if n in images else f for n, f in self.spec.items()})
            if text is True:  # every bytes feature but the images
                text = [n for n in self.spec if n not in images]
        ds._check_memory("to_hf()", max_bytes)
        features = getattr(self, "features", None)
        features = getattr(features, "leaves", features)  # a TFDS folder's, leaf by column
        labels = {
            name: list(f.names)
            for name, f in (features.items() if isinstance(features, Mapping) else ())
            if name in self.spec
            and isinstance(self.spec[name], FixedLen)
            and isinstance(getattr(f, "names", None), (list, tuple))
        }
        return to_hf(ds.arrow_reader(text=text).read_all(), self.spec, text=text, labels=labels)

    def _column_order(self, out: dict, parts: dict) -> list[str]:
        names = [n for n in feature_names(self.spec) if n in out or n in parts]
        return names + [n for n in [*out, *parts] if n not in names]

    def save(
        self,
        out: str | os.PathLike,
        format: str | None = None,
        *,
        progress: bool = True,
        overwrite: bool = False,
        batch_size: int | None = None,
        storage_options: dict | None = None,
    ) -> str:
        """Write every record to `out` as "npy" (a folder of .npy files), "npz", "hdf5" or
        "zarr" (format from the argument or the extension; no extension: npy). Streams:
        records are read, decoded and appended a block of about 4 MiB at a time (or
        `batch_size` records), so memory stays at a few blocks however large the dataset.
        The output appears only when complete. Returns its path; open it with tn.load(out).
        `out` may be a URL (s3://, memory://, ...; storage_options for its filesystem): the
        output is built in a local temporary folder and uploaded when complete."""
        fmt = output_format(out, format)
        if batch_size is not None:
            check_batch_size(batch_size)
        total, size = self.source.progress_totals(self._start, self._stop)
        sink = ArraySink(fs.resolve(out, storage_options), fmt, spec=self.spec, overwrite=overwrite)
        bar = Progress(f"saving {os.fspath(out)}", total=total, total_bytes=size, enabled=progress)
        with naming_write_errors(out):
            try:
                block = int(batch_size or self._block_records())
                for b in self._blocks(block):
                    sink.write(b.cols)
                    bar.update(b.n, b.nbytes + OVERHEAD_BYTES * b.n)  # as files count
                if not sink.has_columns:
                    sink.write(self.source.empty())
                path = sink.close()
            except BaseException:
                sink.abort()
                raise
            finally:
                bar.close()
        return path

    # -- frameworks ------------------------------------------------------------------------------

    def to_tf(
        self,
        batch_size: int | None = None,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        pad: bool | Mapping[str, Any] | None = None,
        truncate: bool = False,
        prefetch: int = 2,
    ) -> Any:
        """A tf.data.Dataset of these records, for `model.fit` or any tf.data pipeline.

        Its element_spec is exact before a record is read: dense tf.TensorSpec [batch, *shape]
        (batch known with drop_remainder=True), tf.RaggedTensorSpec for Ragged columns,
        tf.string for bytes. Needs TensorFlow (``pip install 'tfrecnp[tf]'``).

        Parameters
        ----------
        batch_size : int, optional
            Records per batch; None gives single records.
        shuffle, seed, drop_remainder, pad, truncate, prefetch
            As in `batches`.
        """
        from ..adapters.tf import to_tf

        if batch_size is not None:
            check_batch_size(batch_size)
        return to_tf(
            self,
            batch_size,
            block=self._block_records(batch_size or 1),
            shuffle=shuffle,
            seed=seed,
            drop_remainder=drop_remainder,
            pad=pad,
            truncate=truncate,
            prefetch=prefetch,
        )

    def to_ray(self, **options: Any) -> Any:
        """A ray.data.Dataset of these records, read and decoded by Ray's tasks (see
        tfrecnp.ray.read). Needs Ray Data (pip install 'tfrecnp[ray]')."""
        raise TypeError(
            f"to_ray reads TFRecord files; this dataset holds {type(self).__name__} columns: "
            "give them to ray.data.from_numpy / from_arrow, or tn.write them first"
        )

    def to_torch(
        self,
        batch_size: int,
        *,
        shuffle: bool | int = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        pad: bool | Mapping[str, Any] | None = None,
        truncate: bool = False,
        prefetch: int = 2,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> Any:
        """A torch IterableDataset of batches (dicts of tensors), each record read exactly
        once across DataLoader workers and ranks; use it with ``DataLoader(..., batch_size=None)``.

        Ragged columns come as values plus "<name>_offsets" (or padded, with pad=); call
        `.set_epoch(e)` to reshuffle each epoch; `.ranks_from` says where the rank came from.
        Needs PyTorch (``pip install 'tfrecnp[torch]'``).

        Parameters
        ----------
        batch_size, shuffle, seed, drop_remainder, pad, truncate, prefetch
            As in `batches`.
        rank, world_size : int, optional
            This process's place in a multi-process job (JAX multi-host, Horovod, any
            launcher). When not given: the torch.distributed group when initialised here, else
            the RANK and WORLD_SIZE environment variables (torchrun sets them), else one
            process.
        """
        from ..adapters.torch import TorchBatches

        check_batch_size(batch_size)
        return TorchBatches(
            self,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            drop_remainder=drop_remainder,
            pad=pad,
            truncate=truncate,
            prefetch=prefetch,
            rank=rank,
            world_size=world_size,
        )


_TORCH_COLLATE = False


def _torch_collates_records() -> None:
    """Teach PyTorch's default collate to take a Records batch whole (once per process)."""
    global _TORCH_COLLATE
    if not _TORCH_COLLATE:
        from ..adapters.torch import collate_records_by_default

        collate_records_by_default(Record)
        _TORCH_COLLATE = True


class ReadAhead:
    """Runs of records read for `Dataset.__getitems__` before they are asked for. A run
    (indices a, a+1, ..., a+n-1) that follows another of the same length at stride s >= n
    reads this run and the next ones at that stride, about a block (BLOCK_BYTES) in all,
    in one call; each is served once, as views. Results are the exact read's: damage
    ahead leaves the run to the exact read, which raises or skips as it would."""

    def __init__(self) -> None:
        self.last: tuple[int, int] | None = None  # (start, length) of the last run asked
        self.runs: dict[int, tuple[int, int, Batch]] = {}  # start -> (length, row, columns)

    def __reduce__(self) -> tuple:
        return (ReadAhead, ())  # a pickled Dataset (a DataLoader worker's) starts afresh

    def serve(self, ds: Dataset, idx: np.ndarray) -> Batch | None:
        """The columns of these records when read ahead (or now, ahead of the next
        runs), else None: read them exactly."""
        n = len(idx)
        if not n:
            return None
        a = int(idx[0])
        if a < 0 or int(idx[-1]) != a + n - 1 or (n > 1 and not (np.diff(idx) == 1).all()):
            self.last = None
            return None
        got = self.runs.pop(a, None)  # atomic: a run goes to one caller
        last, self.last = self.last, (a, n)
        if got is not None and got[0] == n:
            _, row, cols = got
            return {name: slice_column(col, row, row + n) for name, col in cols.items()}
        if last is None or last[1] != n or a - last[0] < n or not ds.source.may_read_ahead():
            return None
        size, stride = len(ds), a - last[0]
        if a + n > size:
            return None
        count = max(2, ds._block_records(n) // n)
        starts = range(a, min(size, a + count * stride), stride)
        lengths = [min(n, size - s) for s in starts]
        ids = np.concatenate([np.arange(s, s + m) for s, m in zip(starts, lengths, strict=True)])
        try:
            cols = ds[ids]
        except TFRecordError:
            return None
        if len(next(iter(cols.values()), ())) != len(ids):
            return None
        rows = np.cumsum([0, *lengths]).tolist()
        self.runs = {s: (m, r, cols) for s, m, r in zip(starts, lengths, rows, strict=False)}
        self.runs.pop(a)
        return {name: slice_column(col, 0, n) for name, col in cols.items()}


class Records(abc.Sequence):
    """Records of one decoded batch as a list of {name: value} (made on access), with the
    batch itself in `.columns` for code that wants whole columns."""

    def __init__(self, columns: Batch):
        self.columns = columns
        self._n = len(next(iter(columns.values()))) if columns else 0

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._n))]
        return Record({name: col[k] for name, col in self.columns.items()})

    def __repr__(self) -> str:
        return f"Records({self._n} records: {', '.join(self.columns)})"


class Record(dict):
    """One record of a Records batch, {name: value}: its own type so that PyTorch's
    default collate, which dispatches on the type of a batch's first element, finds the
    collate that takes the batch's columns whole."""


def _row_values(col: Any) -> list:
    """A column's rows as a list, for iterating records: NumPy scalars and row views for
    arrays, bytes for bytes columns, value views for flat Ragged, per-row values else."""
    if isinstance(col, np.ndarray):
        return list(col)
    if isinstance(col, BytesColumn):
        return col.to_list()
    if isinstance(col, Ragged) and isinstance(col.values, np.ndarray):
        values, splits = col.values, col.row_splits.tolist()
        return [values[a:b] for a, b in itertools.pairwise(splits)]
    return list(col)


def check_batch_size(batch_size: Any) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size must be an int, not {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")


def column_nbytes(col: Any) -> int:
    if isinstance(col, np.ndarray):
        if col.dtype.hasobject:
            return int(col.size * 8 + sum(len(v) + 33 for v in col.reshape(-1).tolist()))
        return int(col.nbytes)
    if isinstance(col, Ragged):
        return column_nbytes(col.values) + int(col.row_splits.nbytes)
    if isinstance(col, BytesColumn):
        return int(col.data.nbytes + col.offsets.nbytes)
    return 0


def _sizes_vary(spec: Any, name: str, have: np.ndarray, col: np.ndarray) -> bool:
    """Whether a tn.Image column's blocks disagree in image size (then it is a column of
    images of many sizes, as one block with mixed sizes gives)."""
    features = spec if isinstance(spec, dict) else getattr(spec, "context", {})
    return isinstance(features.get(name), Image) and (
        have.shape[1:] != col.shape[1:] or have.dtype != col.dtype
    )
