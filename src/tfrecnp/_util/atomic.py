"""Outputs that appear whole or not at all: built under a hidden name beside the target, on
the same file system, and renamed into place only when complete."""

from __future__ import annotations

import errno
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from . import fs

PathLike = str | os.PathLike


def hidden_sibling(path: PathLike, tag: str = "tmp") -> str:
    """A hidden, unique name beside `path` (``.name.tmp-1a2b3c4d``): where an output is
    built before it is renamed into place, on the same file system so the rename is atomic."""
    folder, name = fs.split(path)
    return fs.join(folder, f".{name}.{tag}-{uuid.uuid4().hex[:8]}")


def build_name(path: PathLike) -> str:
    """Where an output for `path` is built: a hidden sibling; or, on an object store, `path`
    itself when it is hidden already (a caller's temporary name that the caller renames),
    since a rename there is a copy."""
    if fs.is_url(path) and fs.basename(path).startswith("."):
        return fs.resolve(path)
    return hidden_sibling(path)


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Ctrl-C (SIGINT) waits until the block ends, then acts as it would have. For the few
    renames that publish an output of several names (shards, a file and its index, an old
    output swapped out): interrupted between two of them, a run would leave part of a set
    under final names. Only the main thread receives SIGINT; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):  # ignored, the OS default, or set outside Python
        yield
        return
    caught: list = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        if caught:
            handler(signal.SIGINT, caught[0])  # KeyboardInterrupt, under the default handler


# What to do about each failure of the storage under a write (the errno it raises).
_WRITE_ERRORS = {
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "free some space within the quota, or write elsewhere",
    errno.EFBIG: (
        "a file-size limit was reached (the process's `ulimit -f`, or the largest file this "
        "file system holds): raise the limit, write elsewhere, or write smaller files "
        "(records_per_shard= for TFRecords)"
    ),
    errno.EIO: "the device failed: check it (dmesg) and write elsewhere",
    errno.EROFS: "the file system is read-only: write elsewhere",
    errno.EACCES: "no permission to write there: write elsewhere or change its permissions",
    errno.EPERM: "the operation is not permitted there: write elsewhere",
}


@contextmanager
def naming_write_errors(path: PathLike) -> Iterator[None]:
    """A write that fails in the storage (a full disk, a quota, a file-size limit, an I/O
    error, a read-only or forbidden folder) says which output failed, that nothing of it was
    left behind, and what to do; the error names otherwise only the hidden temporary file,
    or nothing at all. The caller's abort has removed the partial output by the time this
    runs. Still an OSError with that errno (and its subclass), for code that checks; nested
    uses name the output once."""
    try:
        yield
    except OSError as e:
        if e.errno not in _WRITE_ERRORS or hasattr(e, "output"):
            raise
        named = OSError(
            e.errno,
            f"{os.strerror(e.errno)} while writing {os.fspath(path)}; the partial output was "
            f"removed, nothing that looks complete is left: {_WRITE_ERRORS[e.errno]}",
        )
        named.output = os.fspath(path)
        raise named from e


class atomic_output:
    """Context manager giving a temporary path beside `path`; renamed onto it only when the
    block finishes without an exception, deleted otherwise."""

    def __init__(self, path: PathLike):
        self.path = fs.resolve(path)
        self.tmp = hidden_sibling(self.path)

    def __enter__(self) -> str:
        return self.tmp

    def __exit__(self, kind, value, traceback) -> None:
        with naming_write_errors(self.path):
            try:
                if kind is None:
                    fs.replace(self.tmp, self.path)
            finally:
                if fs.exists(self.tmp):  # the block raised, or the rename itself failed
                    fs.remove(self.tmp)
            if isinstance(value, OSError):
                raise value


_Output = TypeVar("_Output", bound="CloseOrAbort")


class CloseOrAbort:
    """The life cycle of an output that appears whole or not at all (RecordWriter,
    tn.Writer, the array sinks): `close()` when a ``with`` block ends cleanly, `abort()` when
    it raises, and `abort()` when the object is garbage-collected unclosed, so a forgotten
    or crashed writer leaves nothing that looks complete.

    Subclasses define close() and abort() (both harmless once ``closed``) and set
    ``self.closed = False`` as soon as they hold something abort() must clean up.
    """

    closed = True  # until a subclass's __init__ has opened something

    def close(self) -> object:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Output) -> _Output:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        with naming_write_errors(getattr(self, "path", "the output")):
            if kind is None:
                self.close()
            else:
                self.abort()
                if isinstance(value, OSError):
                    raise value

    def __del__(self) -> None:
        if not self.closed:
            self.abort()


def require_folder(path: str) -> None:
    """Outputs go into folders that exist: a typo in a path fails here, before any work,
    rather than creating folders nobody asked for. Object stores have no folders."""
    if fs.is_url(path):
        return
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {path}: no such directory {folder}")
