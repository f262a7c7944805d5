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


@contextmanager
def naming_full_disk(path: PathLike) -> Iterator[None]:
    """A full disk (ENOSPC) or quota (EDQUOT) while writing `path` says which output failed
    and that nothing of it was left behind; the caller's abort has removed the partial
    output by the time this runs. Still an OSError with that errno, for code that checks."""
    try:
        yield
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise OSError(
            e.errno,
            f"{os.strerror(e.errno)} while writing {os.fspath(path)}; the partial output was "
            "removed, nothing that looks complete is left: free some space or write elsewhere",
        ) from e


class atomic_output:
    """Context manager giving a temporary path beside `path`; renamed onto it only when the
    block finishes without an exception, deleted otherwise."""

    def __init__(self, path: PathLike):
        self.path = fs.resolve(path)
        self.tmp = hidden_sibling(self.path)

    def __enter__(self) -> str:
        return self.tmp

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if kind is None:
                fs.replace(self.tmp, self.path)
        finally:
            if fs.exists(self.tmp):  # the block raised, or the rename itself failed
                fs.remove(self.tmp)


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
        with naming_full_disk(getattr(self, "path", "the output")):
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
