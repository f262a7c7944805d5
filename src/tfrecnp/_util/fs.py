"""Where bytes live: a local path goes through `os` and `open()`; a URL (``s3://``,
``gs://``, ``memory://``, any fsspec protocol) through fsspec, imported only when a URL is
given, so local work never loads it.

A URL resolved with `resolve(url, storage_options)` becomes a `URL`: a str that carries
its fsspec filesystem, so the options given once at `tn.open` / `tn.write` reach every
file listed under it, every sidecar beside it and every worker it is pickled to. Every
other module asks this one to open, size, list, rename and delete, and never branches on
the kind of path itself. ``file://`` URLs become local paths.

Object stores have no rename: `replace` is a server-side copy and a delete. Outputs are
still built under a hidden name (``.name.tmp-…``, skipped by every listing) and renamed
when complete, so a failed job leaves nothing that lists as a complete shard.
"""

from __future__ import annotations

import builtins
import contextlib
import glob as _glob
import os
from typing import Any

from .optional import require

READ_AHEAD = 8 << 20  # a streamed remote read asks for this many bytes per request
WRITE_PART = 8 << 20  # a remote write sends parts of this size (S3 multipart: >= 5 MiB)


class URL(str):
    """A URL that carries its fsspec filesystem (and so its storage_options)."""

    fs: Any

    def __new__(cls, url: str, fs: Any) -> URL:
        self = super().__new__(cls, url)
        self.fs = fs
        return self

    def __reduce__(self):
        return (URL, (str(self), self.fs))


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


def _split(path: Any) -> tuple[Any, str]:
    """(filesystem, path within it) of a URL."""
    url = path if isinstance(path, URL) else resolve(path)
    return url.fs, url.fs._strip_protocol(str(url))


def _url(fs: Any, inner: str) -> URL:
    return URL(fs.unstrip_protocol(inner), fs)


# --- reading ---------------------------------------------------------------------------------


def open_read(path: Any, *, random: bool = False) -> Any:
    """A binary file for reading (readinto, seek, read, close). Local files are unbuffered;
    remote ones read ahead READ_AHEAD bytes per request (one request per several MiB of a
    sequential pass), or, with random=True, fetch just what each read asks for."""
    if not is_url(path):
        return builtins.open(path, "rb", buffering=0)
    fs, inner = _split(path)
    if random:
        return fs.open(inner, "rb", block_size=0, cache_type="none")
    return fs.open(inner, "rb", block_size=READ_AHEAD, cache_type="readahead")


def read_ranges(path: Any, starts: list[int], stops: list[int]) -> list[bytes]:
    """Byte ranges of one remote file, asked for together (concurrent requests where the
    filesystem is asynchronous, as s3fs and gcsfs are)."""
    fs, inner = _split(path)
    got = fs.cat_ranges([inner] * len(starts), starts, stops, on_error="raise")
    return list(got)


def read_head(path: Any, n: int) -> bytes:
    """The first n bytes of a file (fewer if it is shorter)."""
    if not is_url(path):
        with builtins.open(path, "rb") as f:
            return f.read(n)
    fs, inner = _split(path)
    # A store clips a range past the end, but answers 416 to any range of an empty object
    # (an empty shard, as Beam and Spark write): its size comes from the listing that found
    # it (cached), or one HEAD, before any bytes are asked for.
    n = min(n, int(fs.size(inner)))
    return fs.cat_file(inner, start=0, end=n) if n > 0 else b""


def read_text(path: Any) -> str:
    if not is_url(path):
        with builtins.open(path, encoding="utf-8") as f:
            return f.read()
    fs, inner = _split(path)
    return fs.cat_file(inner).decode("utf-8")


def _ask(path: Any, local: Any, method: str) -> Any:
    """`local(path)` for a local path, else the filesystem's own `method` for a URL."""
    if not is_url(path):
        return local(path)
    fs, inner = _split(path)
    return getattr(fs, method)(inner)


def size(path: Any) -> int:
    return int(_ask(path, os.path.getsize, "size"))


def exists(path: Any) -> bool:
    return bool(_ask(path, os.path.exists, "exists"))


def isdir(path: Any) -> bool:
    return bool(_ask(path, os.path.isdir, "isdir"))


def isfile(path: Any) -> bool:
    return bool(_ask(path, os.path.isfile, "isfile"))


def listdir(path: Any) -> list[str]:
    """The full paths of a folder's non-hidden entries, sorted by name."""
    if not is_url(path):
        names = sorted(n for n in os.listdir(path) if not n.startswith("."))
        return [os.path.join(path, n) for n in names]
    fs, inner = _split(path)
    found = sorted(fs.ls(inner, detail=False))
    return [_url(fs, p) for p in found if not basename(p).startswith(".") and p != inner]


def has_magic(path: Any) -> bool:
    return _glob.has_magic(str(path))


def glob(pattern: Any) -> list[str]:
    if not is_url(pattern):
        return sorted(_glob.glob(pattern))
    fs, inner = _split(pattern)
    return [_url(fs, p) for p in sorted(fs.glob(inner)) if not basename(p).startswith(".")]


def basename(path: Any) -> str:
    return str(path).rstrip("/").rsplit("/", 1)[-1] if is_url(path) else os.path.basename(path)


def join(folder: Any, name: str) -> Any:
    """`name` inside `folder`, keeping a URL's filesystem."""
    if not is_url(folder):
        return os.path.join(folder, name)
    url = folder if isinstance(folder, URL) else resolve(folder)
    return URL(str(url).rstrip("/") + "/" + name, url.fs)


def suffixed(path: Any, suffix: str) -> Any:
    """`path` with `suffix` appended (a sidecar's name), keeping a URL's filesystem."""
    if isinstance(path, URL):
        return URL(str(path) + suffix, path.fs)
    return os.fspath(path) + suffix


def like(path: Any, text: str) -> Any:
    """`text` (a path made from `path` by string work) on `path`'s filesystem."""
    return URL(text, path.fs) if isinstance(path, URL) else text


def split(path: Any) -> tuple[Any, str]:
    """(folder, name); a URL's folder keeps its filesystem."""
    if not is_url(path):
        return os.path.split(os.path.abspath(path))
    url = path if isinstance(path, URL) else resolve(path)
    folder, _, name = str(url).rstrip("/").rpartition("/")
    return URL(folder, url.fs), name


# --- writing ---------------------------------------------------------------------------------


def open_write(path: Any) -> Any:
    """A binary file for writing. A remote one is uploaded in WRITE_PART parts and exists
    only once closed (until then it is a hidden temporary name, see `replace`)."""
    if not is_url(path):
        return builtins.open(path, "wb")
    fs, inner = _split(path)
    return fs.open(inner, "wb", block_size=WRITE_PART)


def discard(file: Any) -> None:
    """Drop a file being written without completing it (an S3 multipart upload is
    aborted, so no part of it is ever visible); then close what is left."""
    drop = getattr(file, "discard", None)
    with contextlib.suppress(Exception):  # we are failing already; the delete follows
        if drop is not None:
            drop()
            file.closed = True  # (fsspec files) nothing left to flush: close is a no-op
            return
    with contextlib.suppress(Exception):
        file.close()


def replace(src: Any, dst: Any) -> None:
    """Move src onto dst (atomic rename locally; copy then delete on an object store)."""
    if not is_url(dst):
        os.replace(src, dst)
        return
    fs, a = _split(src)
    _, b = _split(dst)
    fs.mv(a, b)


def remove(path: Any) -> None:
    """Delete a file if it exists."""
    if not is_url(path):
        if os.path.lexists(path):
            os.unlink(path)
        return
    fs, inner = _split(path)
    if fs.exists(inner):
        fs.rm(inner)


def remove_tree(path: Any) -> None:
    """Delete a remote folder and everything under it, if it exists."""
    fs, inner = _split(path)
    if fs.exists(inner):
        fs.rm(inner, recursive=True)


def publish_upload(local: str, path: Any, *, last: str | None = None) -> None:
    """Upload a finished local file or folder to `path` so that it appears complete or
    not at all: first under a hidden name beside it, then moved into place (a folder file
    by file, `last`, its manifest, moved last, so a reader that checks the manifest first
    never takes a half-moved folder). An existing `path` is replaced."""
    import uuid

    folder, name = split(path)
    tmp = join(folder, f".{name}.tmp-{uuid.uuid4().hex[:8]}")
    fsys, inner = _split(path)
    _, tmp_inner = _split(tmp)
    try:
        if os.path.isdir(local):
            files = sorted(
                os.path.relpath(os.path.join(root, n), local)
                for root, _, names in os.walk(local)
                for n in names
            )
            for rel in files:
                fsys.put_file(os.path.join(local, rel), f"{tmp_inner}/{rel}")
            if fsys.exists(inner):
                fsys.rm(inner, recursive=True)
            for rel in sorted(files, key=lambda r: r == last):
                fsys.mv(f"{tmp_inner}/{rel}", f"{inner}/{rel}")
        else:
            fsys.put_file(local, tmp_inner)
            fsys.mv(tmp_inner, inner)
    finally:
        if fsys.exists(tmp_inner):
            fsys.rm(tmp_inner, recursive=True)


def fetch_copy(path: Any) -> str:
    """A local copy of a remote file or folder (in a temporary folder removed when the
    process exits): what memory-mapped loading needs."""
    import atexit
    import shutil
    import tempfile

    stage = tempfile.mkdtemp(prefix="tfrecnp-load-")
    atexit.register(shutil.rmtree, stage, True)
    local = os.path.join(stage, basename(path) or "data")
    fsys, inner = _split(path)
    if fsys.isdir(inner):
        for found in fsys.find(inner):
            rel = found[len(inner.rstrip("/")) + 1 :]
            os.makedirs(os.path.dirname(os.path.join(local, rel)), exist_ok=True)
            fsys.get_file(found, os.path.join(local, rel))
    else:
        fsys.get_file(inner, local)
    return local
