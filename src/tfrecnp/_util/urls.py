"""What a URL is to tfrecnp: a str that carries its fsspec filesystem (and so the
storage_options given once at `tn.open` / `tn.write`), the `Meter` that counts the requests
sent for it, and what the listing that found it said (`Listed`: size, ETag, the names beside
it). `resolve` makes one; errors from a store are renamed here to name the URL. fsspec is
imported only when a URL is given. Reading, listing and writing are `fs`'s (which re-exports
these names)."""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from typing import Any

from .optional import require


class Meter:
    """Requests sent to a store and bytes received, by kind (get, list, head), counted
    where tfrecnp sends them; shared by the URLs listed under one given URL. A copy
    pickled to a worker counts that worker's requests afresh."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts = {"get": 0, "list": 0, "head": 0}
        self.bytes = 0

    def __reduce__(self):
        return (Meter, ())

    def add(self, kind: str, requests: int = 1, nbytes: int = 0) -> None:
        with self._lock:
            self.counts[kind] += requests
            self.bytes += nbytes

    def snapshot(self) -> dict[str, int]:
        """{"requests", "bytes", "get", "list", "head"}: the totals so far."""
        with self._lock:
            return {"requests": sum(self.counts.values()), "bytes": self.bytes, **self.counts}


@dataclass(frozen=True)
class Listed:
    """What a listing said of a file: its size, its ETag (or None), and the names of the
    listing it came from with their sizes (None when it was not listed with others);
    exists=False for a sidecar's name the listing did not hold."""

    size: int
    etag: str | None = None
    beside: dict | None = None
    exists: bool = True


class URL(str):
    """A URL that carries its fsspec filesystem (and so its storage_options), the Meter
    that counts its requests, and what its listing said of it (`Listed`, or None)."""

    meter: Meter
    listed: Listed | None

    def __new__(
        cls, url: str, fs: Any, meter: Meter | None = None, listed: Listed | None = None
    ) -> URL:
        self = super().__new__(cls, url)
        self._fs, self._pid = fs, os.getpid()
        self.meter = meter if meter is not None else Meter()
        self.listed = listed
        return self

    @property
    def fs(self) -> Any:
        """The filesystem; in a forked child (a DataLoader worker), one of its own, with the
        same options (an asynchronous one, as s3fs, cannot cross a fork)."""
        if self._pid != os.getpid():
            from fsspec.spec import make_instance

            fs = self._fs
            self._fs = make_instance(type(fs), fs.storage_args, fs.storage_options)
            self._pid = os.getpid()
        return self._fs

    def __reduce__(self):
        return (URL, (str(self), self.fs, self.meter, self.listed))


def size_known(path: Any) -> bool:
    """Whether path is a URL whose listing gave its size (it exists, as a file)."""
    listed = getattr(path, "listed", None)
    return listed is not None and listed.exists


def one_meter(paths: list[Any]) -> list[Any]:
    """paths with every URL counted by the first URL's Meter."""
    meter = meter_of(paths)
    if meter is None:
        return paths
    return [URL(p, p.fs, meter, p.listed) if isinstance(p, URL) else p for p in paths]


def meter_of(paths: list[Any]) -> Meter | None:
    """The Meter of the first URL among paths (None for local files)."""
    return next((p.meter for p in paths if isinstance(p, URL)), None)


def is_url(path: Any) -> bool:
    """Whether `path` names something an fsspec filesystem holds (not a local file)."""
    if isinstance(path, URL):
        return True
    if not isinstance(path, str):
        return False
    head, sep, _ = path.partition("://")
    return bool(sep) and head.replace("+", "").replace("-", "").isalnum() and head != "file"


def resolve(path: Any, storage_options: dict | None = None) -> Any:
    """A path as the rest of tfrecnp takes it: a local path unchanged (``file://``
    stripped), a URL as a `URL` bound to its filesystem; anything else unchanged."""
    if not isinstance(path, (str, os.PathLike)):
        return path
    path = os.fspath(path)
    if isinstance(path, URL) and not storage_options:
        return path
    if isinstance(path, str) and path.startswith("file://"):
        return path[len("file://") :]
    if not is_url(path):
        return path
    fsspec = require("fsspec", "cloud")
    fs, _ = fsspec.core.url_to_fs(str(path), **(storage_options or {}))
    return URL(str(path), fs)


def split_url(path: Any) -> tuple[Any, str]:
    """(filesystem, path within it) of a URL."""
    url = path if isinstance(path, URL) else resolve(path)
    return url.fs, url.fs._strip_protocol(str(url))


def child_url(fs: Any, inner: str, parent: Any = None, listed: Listed | None = None) -> URL:
    """A file found under `parent` (a listing's), counted by parent's Meter."""
    meter = parent.meter if isinstance(parent, URL) else None
    return URL(fs.unstrip_protocol(inner), fs, meter, listed)


def meter_for(path: Any) -> Meter:
    """The Meter that counts a path's requests (a spare one for a plain string)."""
    return path.meter if isinstance(path, URL) else _SPARE_METER


_SPARE_METER = Meter()  # counts requests for URLs given as plain strings (no one reads it)


def named_error(error: BaseException, url: Any, what: str) -> BaseException:
    """A store's error as the same type, naming the URL and what was asked (a missing
    object stays FileNotFoundError, a 403 PermissionError, a dropped connection OSError)."""
    if str(url) in str(error):
        return error
    message = f"{url}: {what} failed: {error}"
    if isinstance(error, OSError):
        for kind in (FileNotFoundError, PermissionError, ConnectionError, TimeoutError):
            if isinstance(error, kind):
                return kind(message)
        return OSError(message)
    with contextlib.suppress(Exception):
        return type(error)(message)
    return OSError(message)


def etag_in(info: dict) -> str | None:
    """The ETag (or what stands for one) in a listing's entry for a file."""
    for key in ("ETag", "etag", "md5Hash", "mtime", "LastModified"):
        if info.get(key) is not None:
            return str(info[key])
    return None
