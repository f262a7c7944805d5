"""The files of one `Writer` output: shards written under hidden names, published together.

With records_per_shard, a new shard begins every that many records; its final name,
TensorFlow's ``data-00002-of-00008.tfrecord`` (TFDS's ``data.array_record-00002-of-00008``
for ArrayRecord files), is known only once the count is, at close.
Until then every shard lives under a hidden temporary name (RecordWriter), all finished
but the last. `publish` moves them all into place or none: a failed rename takes back the
shards already moved, and Ctrl-C waits until all are in place.
"""

from __future__ import annotations

import os

import numpy as np

from .._core import framing
from .._util import fs
from .._util.atomic import deferred_interrupt
from ..format.arrayrecord_write import ArrayRecordWriter
from ..format.index import index_path
from ..format.writer import RecordWriter

__all__ = ["Shards", "shard_name"]


def shard_name(path: str, shard: int, shards: int, array_record: bool = False) -> str:
    """TensorFlow's shard naming: out/data.tfrecord -> out/data-00002-of-00008.tfrecord;
    for ArrayRecord, TFDS's: out/data.array_record -> out/data.array_record-00002-of-00008."""
    width = max(5, len(str(shards)))
    if array_record:
        return fs.like(path, f"{path}-{shard:0{width}d}-of-{shards:0{width}d}")
    root, ext = os.path.splitext(path)
    return fs.like(path, f"{root}-{shard:0{width}d}-of-{shards:0{width}d}{ext}")


class Shards:
    """The RecordWriters of one output, in order, and (with checksums=True) the CRC32C of
    the payloads written to each, for reading them back before they are published."""

    def __init__(
        self,
        path: str,
        compression: str | None,
        *,
        index: bool,
        records_per_shard: int | None,
        checksums: bool,
        array_record: dict | None = None,
    ):
        self.path = path
        self.array_record = array_record  # ArrayRecordWriter's options, for ArrayRecord files
        self.compression = compression
        self.index = index
        self.records_per_shard = records_per_shard
        self.writers: list[
            RecordWriter | ArrayRecordWriter
        ] = []  # all finished but the last, none published
        self.checksums: list[int] | None = [] if checksums else None
        self._dir, self._base = fs.split(path)

    def room(self) -> int | None:
        """Records the shard being written takes before the next begins (None: any
        number); begins the next when this one is full."""
        shard = self._current()
        if not self.records_per_shard:
            return None
        return self.records_per_shard - shard.records

    def write_batch(self, data: np.ndarray, offsets: np.ndarray) -> None:
        """Records data[offsets[i]:offsets[i + 1]] appended to the shard being written."""
        shard = self._current()
        if self.checksums is not None:
            self.checksums[-1] = framing.crc32c(data[offsets[0] : offsets[-1]], self.checksums[-1])
        shard.write_batch(data, offsets)

    def finish(self) -> None:
        """The last shard completed under its hidden name (an output of no records still
        has one, empty)."""
        if not self.writers:
            self._open()
        self.writers[-1].finish()

    def publish(self) -> list[str]:
        """Every shard under its final name, or none; returns the names."""
        names = self._final_names()
        done: list[str] = []
        with deferred_interrupt():
            try:
                for shard, name in zip(self.writers, names, strict=True):
                    done.append(shard.publish(name))
            except BaseException:
                for path in done:
                    fs.remove(path)
                    if self.index:
                        fs.remove(index_path(path))
                raise
        return done

    def abort(self) -> None:
        """Every shard removed, finished or not; nothing appears."""
        for shard in self.writers:
            shard.abort()

    def _current(self) -> RecordWriter | ArrayRecordWriter:
        if not self.writers or (
            self.records_per_shard and self.writers[-1].records >= self.records_per_shard
        ):
            self._open()
        return self.writers[-1]

    def _open(self) -> None:
        previous = self.writers[-1] if self.writers else None
        if previous is not None:
            previous.finish()
        path = fs.join(self._dir, self._base)  # its final name is known at close
        if self.array_record is not None:
            self.writers.append(ArrayRecordWriter(path, **self.array_record))
        else:
            self.writers.append(
                RecordWriter(path, self.compression, index=self.index, reuse=previous)
            )
        if self.checksums is not None:
            self.checksums.append(0)

    def _final_names(self) -> list[str]:
        if self.records_per_shard is None:
            return [self.path]
        n, ar = len(self.writers), self.array_record is not None
        return [shard_name(self.path, k, n, ar) for k in range(n)]
