"""Writing TFRecord frames: `RecordWriter`, the one writer of frames in tfrecnp. Frames are
built by the compiled core into reused buffers and written (and compressed) by a background
thread; the file appears under its name only when complete."""

from __future__ import annotations

import contextlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._core import encode, framing
from .._util import fs
from .._util.atomic import (
    CloseOrAbort,
    build_name,
    deferred_interrupt,
    naming_write_errors,
    require_folder,
)
from .compression import CompressingWriter, normalize_compression
from .frames import OVERHEAD_BYTES
from .index import index_path
from .paths import INDEX_SUFFIX, PathLike


def check_index_option(index: bool, compression: str | None) -> None:
    """An index holds byte offsets of frames, which only an uncompressed file has."""
    if index and compression:
        raise ValueError(
            f"index=True needs uncompressed output: byte offsets in a {compression} "
            "file do not point at records; drop compression or the index"
        )


def _check_offsets(offsets: np.ndarray, size: int) -> None:
    """Offsets fit for write_batch: checked before they size a buffer, so that wrong ones
    raise instead of asking for exabytes or framing bytes from outside the data."""
    if offsets.ndim != 1 or len(offsets) == 0:
        raise ValueError(
            f"write_batch offsets must be a 1-D array of n + 1 record boundaries, not an array "
            f"of shape {offsets.shape}"
        )
    if offsets[0] < 0:
        raise ValueError(f"write_batch offsets start at {offsets[0]}, expected >= 0")
    if len(offsets) > 1:
        down = np.flatnonzero(offsets[1:] < offsets[:-1])
        if len(down):
            i = int(down[0])
            raise ValueError(
                f"write_batch offsets go down at record {i}: {offsets[i]} then "
                f"{offsets[i + 1]}; offsets must be non-decreasing"
            )
    if offsets[-1] > size:
        raise ValueError(
            f"write_batch offsets end at {offsets[-1]}, past the end of the {size} bytes of data"
        )


class RecordWriter(CloseOrAbort):
    """Writes TFRecord frames to `path` under a hidden temporary name, renamed on a clean close.

    Use as a context manager. `write(payload)` appends one record; `write_batch(data,
    offsets)` appends many from one buffer. If the block raises, or the writer is dropped
    unclosed, the temporary file is deleted and nothing appears at `path`.

    Frames are built in the caller's thread into a few reused buffers (fresh pages would
    cost a page fault each) and written, and compressed, by one background thread, so the
    caller's next batch overlaps this one's I/O. An error in that thread is raised by a
    later write or by close; abort waits for writes in flight, then deletes.

    index=True also streams the ``path.idx`` sidecar (``offset length`` per record, as
    `write_index` writes it) beside the temporary file, renamed with it; it needs
    uncompressed output.

    `close()` is `finish()` then `publish()`. A caller writing several files that must
    appear together (or after a check) calls finish() on each, which completes the file
    under its temporary name `tmp`, reads them back if it likes, then publish(name) on
    each; abort() still deletes a finished file that was not published. Such a caller
    passes reuse=the previous, finished writer: the new one takes over its idle thread and
    buffers, saving a thread start and fresh pages per file.
    """

    FLUSH_BYTES = 4 << 20  # write(): payloads gathered before they are framed together
    BUFFERS = 3  # frame buffers circulating: one being filled, the others queued or writing

    def __init__(
        self,
        path: PathLike,
        compression: str | None = None,
        *,
        index: bool = False,
        reuse: RecordWriter | None = None,
        storage_options: dict | None = None,
    ):
        self.path = fs.resolve(path, storage_options)
        self.compression = normalize_compression(compression, allow_auto=False)
        check_index_option(index, self.compression)
        require_folder(self.path)
        self.index = bool(index)
        self.tmp = build_name(self.path)
        self.index_tmp = fs.suffixed(self.tmp, INDEX_SUFFIX) if index else None
        self.records = 0
        self.position = 0  # bytes of frames written: the uncompressed stream's length
        self.finished = False
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._inflight: deque = deque()  # (future of one sink.write, its buffer), in order
        if reuse is not None and reuse.finished and reuse._pool is not None:
            self._pool, self._free = reuse._pool, reuse._free
            reuse._pool, reuse._free = None, []
        else:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="tfrecnp-writer")
            self._free = [np.empty(0, np.uint8) for _ in range(self.BUFFERS)]
        self._index_file = self._raw = None
        # open from here on: abort() (or __del__) removes whatever exists of the temporary
        # files, even when Ctrl-C comes between creating one and noting it
        self.closed = False
        with naming_write_errors(self.path):  # not the hidden name: a read-only folder, say
            try:
                # Buffered: large writes go straight through, and partial writes are retried.
                # (remote: uploaded in parts to the hidden name, moved into place by publish)
                self._raw = fs.open_write(self.tmp)
                self._sink = (
                    CompressingWriter(self._raw, self.compression)
                    if self.compression
                    else self._raw
                )
                if index:
                    self._index_file = fs.open_write(self.index_tmp)
            except BaseException:
                self.abort()
                raise

    def write(self, payload: bytes | bytearray | memoryview) -> None:
        self._check_open()
        payload = bytes(payload)
        self._pending.append(payload)
        self._pending_bytes += len(payload)
        if self._pending_bytes >= self.FLUSH_BYTES:
            self._flush()

    def write_batch(self, data, offsets) -> None:
        """Append records data[offsets[i]:offsets[i + 1]] (a uint8 buffer, n + 1 offsets).
        The data is copied before this returns: the caller may reuse its buffer."""
        self._flush()
        data = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data
        data = np.ascontiguousarray(data.reshape(-1).view(np.uint8))
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        _check_offsets(offsets, len(data))
        self._write_frames(data, offsets)

    def finish(self) -> None:
        """Write everything out and close the file, still under its temporary name `tmp`."""
        if self.finished or self.closed:
            return
        try:
            self._flush()
            self._drain()
            if self.compression:
                self._sink.finish()
            self._raw.close()
            if self._index_file is not None:
                self._index_file.close()
        except BaseException:
            self.abort()
            raise
        self.finished = True

    def publish(self, path: PathLike | None = None) -> str:
        """Finish if need be, then move the file (and its index) to `path`, by default the
        path the writer was made for. Returns where the file is now."""
        if self.closed:
            raise ValueError(f"writer for {self.path} is closed")
        self.finish()
        self._stop_thread()
        target = fs.resolve(path) if path is not None else self.path
        try:
            with deferred_interrupt():  # the file and its index appear together
                if self.tmp != target:
                    fs.replace(self.tmp, target)
                if self.index_tmp is not None:
                    fs.replace(self.index_tmp, index_path(target))
        except BaseException:
            self.abort()
            raise
        self.closed = True
        self.path = target
        return target

    def close(self) -> None:
        """Flush, then move the finished file into place."""
        if not self.closed:
            self.publish()

    def abort(self) -> None:
        """Drop everything written: wait for writes in flight, then delete the temporary
        file (and index)."""
        if self.closed:
            return
        self.closed = True
        self._pending.clear()
        try:
            for future, _ in self._inflight:
                future.exception()  # wait, and drop the error: we are failing already
            self._inflight.clear()
            self._stop_thread()
            for f in (self._raw, self._index_file):
                if f is not None and not self.finished:
                    fs.discard(f)  # an unfinished upload is dropped, never completed
        finally:
            for p in (self.tmp, self.index_tmp):
                if p is not None:
                    with contextlib.suppress(OSError):
                        fs.remove(p)

    # internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed or self.finished:
            raise ValueError(f"writer for {self.path} is closed")

    def _flush(self) -> None:
        if not self._pending:
            return
        lengths = np.fromiter(map(len, self._pending), np.int64, len(self._pending))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        data = np.frombuffer(b"".join(self._pending), np.uint8)
        self._pending, self._pending_bytes = [], 0
        self._write_frames(data, offsets)

    def _write_frames(self, data: np.ndarray, offsets: np.ndarray) -> None:
        """Frame the records into a free buffer and queue it for the background thread."""
        self._check_open()
        n = len(offsets) - 1
        if n <= 0:
            return
        size = int(offsets[-1] - offsets[0]) + OVERHEAD_BYTES * n
        # Take back the buffers already written (raising their errors), waiting for the
        # oldest when none is free.
        while self._inflight and (not self._free or self._inflight[0][0].done()):
            self._wait_one()
        buf = self._free.pop()
        if len(buf) < size:
            buf = np.empty(size + size // 4, np.uint8)
        framing.frame_payloads(data, offsets, buf[:size])
        if self._index_file is not None:
            frames = np.diff(offsets) + OVERHEAD_BYTES
            starts = np.empty(n, np.int64)
            starts[0] = self.position
            np.cumsum(frames[:-1], out=starts[1:])
            starts[1:] += self.position
            self._index_file.write(encode.index_lines(starts, frames))
        self._inflight.append((self._pool.submit(self._sink.write, buf[:size]), buf))
        self.records += n
        self.position += size

    def _stop_thread(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _wait_one(self) -> None:
        future, buf = self._inflight.popleft()
        self._free.append(buf)
        future.result()

    def _drain(self) -> None:
        """Wait until everything queued is written; raises the first write error."""
        while self._inflight:
            self._wait_one()
