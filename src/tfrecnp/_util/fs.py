"""Where bytes live: a local path goes through `os` and `open()`; a URL (``s3://``,
``gs://``, ``memory://``, any fsspec protocol) through fsspec, imported only when a URL is
given, so local work never loads it.

A URL resolved with `resolve(url, storage_options)` becomes a `URL` (_util/urls.py): a str
that carries its fsspec filesystem, so the options given once at `tn.open` / `tn.write`
reach every file listed under it, every sidecar beside it and every worker it is pickled to. Every
other module asks this one to open, size, list, rename and delete, and never branches on
the kind of path itself. ``file://`` URLs become local paths.

Object stores have no rename: `replace` is a server-side copy and a delete. Outputs are
still built under a hidden name (``.name.tmp-…``, skipped by every listing) and renamed
when complete, so a failed job leaves nothing that lists as a complete shard.

On an object store every request costs a round trip, so a URL also carries what its
listing said (`Listed`: size, ETag, and the names beside it, so a sidecar's existence needs
no request), and a `Meter`, shared by every URL listed under the one given, that counts
the requests and bytes tfrecnp's reads send (what `Dataset.stats()` shows). A sequential
pass reads through `Prefetch`: ranged GETs of READ_AHEAD bytes, IN_FLIGHT of them ahead of
the reader, across the files of the pass; reads by position go through `read_ranges`,
RANGES_IN_FLIGHT at once. Errors from the store keep their type and name the URL.
"""

from __future__ import annotations

import builtins
import contextlib
import glob as _glob
import os
import threading
from collections import OrderedDict, deque
from typing import Any

from .urls import (  # (URL, Listed, Meter, is_url, resolve ...: used as fs.X everywhere)
    URL,
    Listed,
    Meter,
    child_url,
    etag_in,
    is_url,
    meter_for,
    meter_of,
    named_error,
    one_meter,
    resolve,
    size_known,
    split_url,
)

__all__ = ["URL", "Listed", "Meter", "is_url", "meter_of", "one_meter", "resolve", "size_known"]

READ_AHEAD = 8 << 20  # a streamed remote read asks for this many bytes per request ...
# ... with this many requests in flight ahead of the reader, across files: 32 MiB in flight
# fills a link whose bandwidth x latency is up to that (1.6 GB/s at 20 ms); the memory a
# pass holds for it is bounded by the same 32 MiB
IN_FLIGHT = 4
START_BYTES = 1 << 20  # ... a pass's first request this many bytes, sent with one more ...
START_WINDOW = 4 << 20  # ... for the rest of this window (see Prefetch)
GROWTH = 8  # ... then this many times the bytes its reader has taken (see Prefetch)
AHEAD_BYTES = 64 << 20  # ... and all passes of a process together, at most this many bytes
HEAD_BYTES = 64 << 10  # a remote file's first bytes read at once (compression, first records)
HEADS_KEPT = 64  # ... and kept for this many files
RANGES_IN_FLIGHT = 16  # reads by position: ranged GETs in flight at once, at most ...
RANGE_PART = 8 << 20  # ... a range larger than this sent in parts side by side (a window
# of shuffled pieces of one file joins into one range; one connection carries less than a link)
GET_THREADS = 16  # threads that wait on ranged GETs (the requests' own work is async)
WRITE_PART = 8 << 20  # a remote write sends parts of this size (S3 multipart: >= 5 MiB)


def listing(path: Any) -> tuple[str, list[URL]]:
    """One listing of a URL: ("glob", the files matching it), ("dir", the files in it)
    or ("file", [it]), each file with its size and ETag and the names listed beside it
    (`Listed`); hidden names left out. A glob or a folder costs one LIST request (a
    folder named without a trailing slash, a HEAD first), a file one HEAD. Raises
    FileNotFoundError naming the URL when nothing is there."""
    url = path if isinstance(path, URL) else resolve(path)
    fsys, inner = split_url(url)
    meter = url.meter
    try:
        if has_magic(url):
            meter.add("list")
            found = fsys.glob(inner, detail=True)
            infos = [dict(v, name=k) for k, v in found.items()]
            kind = "glob"
        else:
            if not str(url).endswith("/"):
                meter.add("head")
                try:
                    info = fsys.info(inner)
                except FileNotFoundError:
                    info = None
                if info is not None and info.get("type") != "directory":
                    size = int(info.get("size") or 0)
                    return "file", [child_url(fsys, inner, url, Listed(size, etag_in(info)))]
                if info is None:
                    raise FileNotFoundError(f"no such file: {url}")
            meter.add("list")
            infos = fsys.ls(inner, detail=True)
            kind = "dir"
    except OSError as e:
        raise named_error(e, url, "listing") from None
    files = [
        i
        for i in infos
        if i.get("type", "file") != "directory" and i["name"].rstrip("/") != inner.rstrip("/")
    ]
    beside = {basename(i["name"]): int(i.get("size") or 0) for i in files}
    out = []
    for i in sorted(files, key=lambda i: i["name"]):
        if basename(i["name"]).startswith("."):
            continue
        listed = Listed(int(i.get("size") or 0), etag_in(i), beside)
        out.append(child_url(fsys, i["name"], url, listed))
    if kind == "dir" and not out and not infos:
        meter.add("head")
        if not fsys.exists(inner):
            raise FileNotFoundError(f"no such file or folder: {url}")
    _remember_group(out)
    return kind, out


_GROUPS: OrderedDict = OrderedDict()  # str(url) -> the first HEADS_KEPT files of its listing
_COMING: dict = {}  # str(url) -> an Event set when the group read that holds its head ends
GROUPS_KEPT = 4  # ... for the last few listings


def _remember_group(urls: list[URL]) -> None:
    """Note the first files of a listing: the first head read of any of them reads all of
    their heads at once (`read_head`), as an open asks for each in turn (what the first file
    is, then every file's compression: a round trip saved)."""
    group = [
        u
        for u in urls
        if u.listed is not None and u.listed.etag is not None and not u.endswith(".idx")
    ][:HEADS_KEPT]  # (sidecars, .idx and .zran.idx, are read whole or not at all)
    if len(group) < 2:
        return
    with _HEADS_LOCK:
        for u in group:
            _GROUPS[str(u)] = group
        while len(_GROUPS) > GROUPS_KEPT * HEADS_KEPT:
            _GROUPS.popitem(last=False)


# --- reading ---------------------------------------------------------------------------------


def open_read(path: Any, *, random: bool = False, prefetch: Prefetch | None = None) -> Any:
    """A binary file for reading (readinto, seek, read, close). Local files are unbuffered;
    remote ones are read through ranged GETs of READ_AHEAD bytes, IN_FLIGHT ahead of the
    reader (those of `prefetch`, a pass over several files, when given), or, with
    random=True, fetch just what each read asks for."""
    if not is_url(path):
        return builtins.open(path, "rb", buffering=0)
    url = path if isinstance(path, URL) else resolve(path)
    if random:
        fsys, inner = split_url(url)
        meter_for(url).add("head")
        try:
            return fsys.open(inner, "rb", block_size=0, cache_type="none")
        except OSError as e:
            raise named_error(e, url, "opening") from None
    if prefetch is None or url not in prefetch.files:  # its own, closed with it
        return RangedFile(Prefetch([url]), 0, owns=True)
    return RangedFile(prefetch, prefetch.files[url])


_POOL: tuple[int, Any] | None = None  # (pid, executor): a forked child makes its own


def _pool() -> Any:
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        _POOL = (os.getpid(), ThreadPoolExecutor(GET_THREADS, thread_name_prefix="tfrecnp-get"))
    return _POOL[1]


def _get(url: URL, start: int, stop: int) -> bytes:
    """Bytes start..stop of a remote file: one ranged GET, counted."""
    fsys, inner = split_url(url)
    try:
        data = fsys.cat_file(inner, start=start, end=stop)
    except Exception as e:
        raise named_error(e, url, f"reading bytes {start}..{stop}") from None
    url.meter.add("get", 1, len(data))
    return data


class _Budget:
    """Bytes a process's passes have asked for ahead of their readers."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0
        self._lock = threading.Lock()

    def reserve(self, n: int, force: bool = False) -> bool:
        with self._lock:
            if not force and self.used + n > self.limit:
                return False
            self.used += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self.used -= n


_AHEAD = _Budget(AHEAD_BYTES)


class Prefetch:
    """The ranged GETs of a pass over remote files read one after another, the next
    file's first ones sent while the last of this one's arrive (sizes from the listing).
    A pass starts with one range of START_BYTES (its first records after one round trip)
    and the rest of START_WINDOW in a second; then the bytes in flight ahead of the reader
    grow to GROWTH times the bytes it has taken, in ranges as large as the window leaves
    room for (fewer requests: each costs a store some work), up to IN_FLIGHT ranges of
    READ_AHEAD. So a reader that wants a few records of a file (a spec inferred, a probe)
    moves at most START_WINDOW or GROWTH times what it read, and a pass fills the link
    after two round trips. All passes of a process together keep at most AHEAD_BYTES ahead of their
    readers (several files read in turn, as shuffle=N does, share it); the range a reader
    waits for is always sent. expect: the bytes a reader will take, when it knows (a spec's
    sample): no range is sent ahead past them (else a sample of 4 MiB moved 32); a reader
    that reads on past them is sent one range at a time, each half what it has taken."""

    def __init__(self, urls: list[Any], expect: int | None = None):
        self.urls = [u if isinstance(u, URL) else resolve(u) for u in urls]
        self.expect = expect
        self.files = {u: k for k, u in enumerate(self.urls)}
        self._sizes: dict[int, int] = {}
        self._lock = threading.Lock()
        self._taken = 0  # bytes taken by the reader since the pass (re)started
        self._started = False  # whether a range was sent since then
        self._next = (0, 0)  # the next range to send: (file, start)
        self._sent: deque = deque()  # ((file, start, stop), future), in order

    def size(self, k: int) -> int:
        found = self._sizes.get(k)
        if found is None:
            found = self._sizes[k] = size(self.urls[k])
        return found

    def _top_up(self, waiting: bool = False) -> None:
        """Send ranges (in file order) until as many are in flight as the ramp allows;
        waiting: at least the one the reader waits for."""
        window = min(IN_FLIGHT * READ_AHEAD, max(START_WINDOW, GROWTH * self._taken))
        if self.expect is not None:
            window = min(window, self.expect - self._taken)
        ahead = sum(b - a for (_, a, b), _ in self._sent)
        while (ahead < window or (waiting and not self._sent)) and self._next[0] < len(self.urls):
            rest = min(READ_AHEAD, max(START_BYTES, window - ahead, self._taken // 2))
            chunk = rest if self._started else START_BYTES
            if self.expect is not None:  # a probe's ranges: what is left of what it will
                room = window - ahead  # take; past that, half what it took (or a head's)
                chunk = min(chunk, room if room > 0 else max(HEAD_BYTES, self._taken // 2))
            k, a = self._next
            n = self.size(k)
            if a == 0:  # a head read before (compression sniffed) is not fetched again
                a = len(cached_head(self.urls[k]) or b"")
            if a >= n:
                self._next = (k + 1, 0)
                continue
            b = min(n, a + chunk)
            # the range the reader waits for is sent in any case; those ahead of it, while
            # the process's budget lasts
            if not _AHEAD.reserve(b - a, force=not self._sent):
                return
            self._sent.append(((k, a, b), _pool().submit(_get, self.urls[k], a, b)))
            self._started = True
            ahead += b - a
            self._next = (k, b) if b < n else (k + 1, 0)

    def take(self, k: int, at: int) -> tuple[int, bytes]:
        """(start, bytes) of a range of file k that holds byte `at`: sent ahead if this is
        where the pass is, else fetched now (after a seek: the pass resumes from there,
        its ramp started again)."""
        head = cached_head(self.urls[k])
        if head and at < len(head):
            with self._lock:
                self._taken += len(head)
                if self._next < (k, len(head)):
                    self._next = (k, len(head))
            return 0, head  # (nothing sent yet: a probe of the first records ends here)
        with self._lock:
            while self._sent and (self._sent[0][0][0], self._sent[0][0][2]) <= (k, at):
                self._drop(self._sent.popleft())  # passed over
            if self._sent:
                restart = self._sent[0][0][:2] > (k, at)  # a seek back
            else:  # the pass's first range, or a seek (not where its next range starts)
                restart = not self._started or (k, at) != self._next
            if restart:
                while self._sent:
                    self._drop(self._sent.popleft())
                self._next, self._taken, self._started = (k, at), 0, False
            self._top_up(waiting=True)
            if not self._sent:
                return at, b""
            (_, start, stop), future = self._sent.popleft()
            _AHEAD.release(stop - start)
            self._taken += stop - start
            self._top_up()
        return start, future.result()

    @staticmethod
    def _drop(sent: tuple) -> None:
        (_, a, b), future = sent
        future.cancel()
        _AHEAD.release(b - a)

    def close(self) -> None:
        """Cancel the ranges not yet sent and wait for those on their way (at most the
        window's bytes): nothing is fetched for a pass once it is closed."""
        from concurrent.futures import wait

        with self._lock:
            running = [future for _, future in self._sent]
            while self._sent:
                self._drop(self._sent.popleft())
            self._next = (len(self.urls), 0)
        wait(running)


class RangedFile:
    """File k of a Prefetch, read front to back (readinto, read, seek, close)."""

    def __init__(self, prefetch: Prefetch, k: int, *, owns: bool = False):
        self.prefetch, self.k = prefetch, k
        self.owns = owns  # close the Prefetch too (its ranges ahead hold the process's budget)
        self.pos = 0
        self.data = memoryview(b"")
        self.data_at = 0  # the file offset of data[0]
        self.closed = False

    def readinto(self, out: Any) -> int:
        out = memoryview(out).cast("B")
        got = 0
        while got < len(out):
            at = self.pos - self.data_at
            if not 0 <= at < len(self.data):
                if self.pos >= self.prefetch.size(self.k):
                    break
                start, data = self.prefetch.take(self.k, self.pos)
                if not data:
                    break
                self.data, self.data_at = memoryview(data), start
                continue
            n = min(len(out) - got, len(self.data) - at)
            out[got : got + n] = self.data[at : at + n]
            got += n
            self.pos += n
        return got

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = max(0, self.prefetch.size(self.k) - self.pos)
        buf = bytearray(n)
        return bytes(buf[: self.readinto(buf)])

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self.pos
        elif whence == 2:
            offset += self.prefetch.size(self.k)
        self.pos = offset
        return offset

    def tell(self) -> int:
        return self.pos

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if self.owns and not self.closed:
            self.prefetch.close()
        self.closed = True
        self.data = memoryview(b"")

    def __enter__(self) -> RangedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_ranges(path: Any, starts: list[int], stops: list[int]) -> list[bytes]:
    """Byte ranges of one remote file, RANGES_IN_FLIGHT requests at a time (concurrent
    where the filesystem is asynchronous, as s3fs and gcsfs are); counted, errors naming
    the URL."""
    return read_many([path] * len(starts), starts, stops)


def read_many(urls: list[Any], starts: list[int], stops: list[int]) -> list[bytes]:
    """Byte ranges of several remote files on one filesystem (range k of urls[k]),
    RANGES_IN_FLIGHT requests at a time; counted, errors naming the URL."""
    if not urls:
        return []
    first = urls[0] if isinstance(urls[0], URL) else resolve(urls[0])
    fsys = first.fs
    whose, part_starts, part_stops = [], [], []  # a range over RANGE_PART: parts side by side
    for k, (a, b) in enumerate(zip(starts, stops, strict=True)):
        m = max(1, -(-(b - a) // RANGE_PART))
        cuts = [a + (b - a) * j // m for j in range(m + 1)]
        whose += [k] * m
        part_starts += cuts[:-1]
        part_stops += cuts[1:]
    inner = [fsys._strip_protocol(str(urls[k])) for k in whose]
    got = fsys.cat_ranges(
        inner, part_starts, part_stops, on_error="return", batch_size=RANGES_IN_FLIGHT
    )
    for j, data in enumerate(got):
        if isinstance(data, BaseException):
            k = whose[j]
            raise named_error(data, urls[k], f"reading bytes {starts[k]}..{stops[k]}") from None
    meter_for(first).add("get", len(got), sum(map(len, got)))
    if len(got) == len(urls):
        return list(got)
    out: list[list[bytes]] = [[] for _ in urls]
    for k, data in zip(whose, got, strict=True):
        out[k].append(data)
    return [parts[0] if len(parts) == 1 else b"".join(parts) for parts in out]


_HEADS: OrderedDict = OrderedDict()  # (url, size, etag) -> its first bytes, HEADS_KEPT at most
_HEADS_LOCK = threading.Lock()


def _after_fork() -> None:
    """In a forked child (a DataLoader worker): a lock another thread of the parent held,
    or a group read it was waiting on, would stay so here."""
    global _HEADS_LOCK
    _HEADS_LOCK = threading.Lock()
    _COMING.clear()


if hasattr(os, "register_at_fork"):  # (not on Windows, which does not fork)
    os.register_at_fork(after_in_child=_after_fork)


def read_head(path: Any, n: int, *, keep: bool = True) -> bytes:
    """The first n bytes of a file (fewer if it is shorter). keep: of a remote file,
    its first HEAD_BYTES are read (one GET) and kept, for the last HEADS_KEPT files:
    the readers that follow (a spec inferred from the first records, a pass's first
    range) take them without a request; keep=False reads just n bytes (a file among
    thousands)."""
    if not is_url(path):
        with builtins.open(path, "rb") as f:
            return f.read(n)
    # A store clips a range past the end, but answers 416 to any range of an empty object
    # (an empty shard, as Beam and Spark write): its size comes from the listing that found
    # it, or one HEAD, before any bytes are asked for.
    total = size(path)
    got = cached_head(path)
    if got is not None and len(got) >= min(n, total):
        return got[:n]
    m = min(total, max(n, HEAD_BYTES) if keep else n)
    with _HEADS_LOCK:
        coming = _COMING.get(str(path))
        group = _GROUPS.pop(str(path), None) if keep and m == min(total, HEAD_BYTES) else None
        if group:  # the heads of the files listed with it, in the same round trip
            group = [u for u in group if str(u) not in _COMING and str(u) != str(path)]
            group = [u for u in group if _HEADS.get(_head_key(u)) is None and size(u)]
            done = threading.Event()
            for u in [path, *group]:
                _GROUPS.pop(str(u), None)
                _COMING[str(u)] = done
    if coming is not None:  # another thread reads it with its group: its answer, then
        coming.wait()
        return read_head(path, n, keep=keep)
    urls = [path, *(group or [])]
    try:
        stops = [m] + [min(size(u), HEAD_BYTES) for u in urls[1:]]
        found = read_many(urls, [0] * len(urls), stops) if m > 0 else [b""]
        if keep:
            with _HEADS_LOCK:
                for u, head in zip(urls, found, strict=True):
                    if etag(u) is not None:
                        _HEADS[_head_key(u)] = head
                while len(_HEADS) > HEADS_KEPT:
                    _HEADS.popitem(last=False)
    finally:
        if group is not None:
            with _HEADS_LOCK:
                for u in urls:
                    _COMING.pop(str(u), None)
            done.set()
    return found[0][:n]


def _head_key(path: Any) -> tuple:
    return (str(path), size(path), etag(path))


def cached_head(path: Any) -> bytes | None:
    """A remote file's first bytes as `read_head` kept them (None when not kept, or when
    its listing gave no ETag to tell a changed object from the one read)."""
    if etag(path) is None:
        return None
    with _HEADS_LOCK:
        return _HEADS.get(_head_key(path))


def read_text(path: Any) -> str:
    if not is_url(path):
        with builtins.open(path, encoding="utf-8") as f:
            return f.read()
    return read_bytes(path).decode("utf-8")


def read_bytes(path: Any) -> bytes:
    """A whole file's bytes (one GET for a URL)."""
    if not is_url(path):
        with builtins.open(path, "rb") as f:
            return f.read()
    url = path if isinstance(path, URL) else resolve(path)
    fsys, inner = split_url(url)
    try:
        data = fsys.cat_file(inner)
    except Exception as e:
        raise named_error(e, url, "reading") from None
    meter_for(url).add("get", 1, len(data))
    return data


def _ask(path: Any, local: Any, method: str) -> Any:
    """`local(path)` for a local path, else the filesystem's own `method` for a URL."""
    if not is_url(path):
        return local(path)
    fs, inner = split_url(path)
    meter_for(path).add("head")
    return getattr(fs, method)(inner)


def size(path: Any) -> int:
    """A file's size; a URL's from its listing when it was listed (no request)."""
    listed = getattr(path, "listed", None)
    if listed is not None and listed.exists:
        return listed.size
    return int(_ask(path, os.path.getsize, "size"))


def etag(path: Any) -> str | None:
    """A listed URL's ETag (None when unknown or local)."""
    listed = getattr(path, "listed", None)
    return listed.etag if listed is not None else None


def cache_folder() -> str:
    """Where what was learned of files in buckets (indexes, inflate checkpoints) is
    cached: $TFRECNP_CACHE, else $XDG_CACHE_HOME/tfrecnp (~/.cache/tfrecnp)."""
    found = os.environ.get("TFRECNP_CACHE")
    if found:
        return found
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tfrecnp")


def cache_file(path: Any, kind: str, suffix: str) -> str | None:
    """The local cache file of what was learned of a listed URL (`kind`: its index, its
    inflate checkpoints), keyed by URL, size and ETag: a changed object is never taken for
    the old one (None without an ETag to key it by)."""
    import hashlib

    tag = etag(path)
    if tag is None or not is_url(path):
        return None
    key = hashlib.sha256(f"{path}\0{size(path)}\0{tag}".encode()).hexdigest()[:32]
    return os.path.join(cache_folder(), kind, key + suffix)


def keep_cached(file: str, data: bytes) -> None:
    """Write a local cache file (`cache_file`) whole, then rename it into place; a cache
    that cannot be written is left out (what it held is fetched again next time)."""
    tmp = f"{file}.tmp-{os.getpid()}-{threading.get_ident()}"
    try:
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, file)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(tmp)


def exists(path: Any) -> bool:
    """Whether a file exists; a URL beside others of one listing (a sidecar) is looked up
    in that listing (no request)."""
    listed = getattr(path, "listed", None)
    if listed is not None and listed.beside is not None:
        return listed.exists
    return bool(_ask(path, os.path.exists, "exists"))


def isdir(path: Any) -> bool:
    if size_known(path):  # listed as a file
        return False
    return bool(_ask(path, os.path.isdir, "isdir"))


def isfile(path: Any) -> bool:
    if size_known(path):
        return True
    return bool(_ask(path, os.path.isfile, "isfile"))


def listdir(path: Any) -> list[str]:
    """The full paths of a folder's non-hidden entries, sorted by name."""
    if not is_url(path):
        names = sorted(n for n in os.listdir(path) if not n.startswith("."))
        return [os.path.join(path, n) for n in names]
    fs, inner = split_url(path)
    meter_for(path).add("list")
    infos = sorted(fs.ls(inner, detail=True), key=lambda i: i["name"])
    files = [i for i in infos if i.get("type", "file") != "directory"]
    beside = {basename(i["name"]): int(i.get("size") or 0) for i in files}
    out = []
    for i in infos:  # files with what the listing said of them (no request to size them)
        name = i["name"].rstrip("/")
        if basename(name).startswith(".") or name == inner.rstrip("/"):
            continue
        directory = i.get("type", "file") == "directory"
        listed = None if directory else Listed(int(i.get("size") or 0), etag_in(i), beside)
        out.append(child_url(fs, name, path, listed))
    _remember_group([u for u in out if u.listed is not None])
    return out


def has_magic(path: Any) -> bool:
    return _glob.has_magic(str(path))


def glob(pattern: Any) -> list[str]:
    if not is_url(pattern):
        return sorted(_glob.glob(pattern))
    fs, inner = split_url(pattern)
    meter_for(pattern).add("list")
    found = sorted(fs.glob(inner))
    return [child_url(fs, p, pattern) for p in found if not basename(p).startswith(".")]


def basename(path: Any) -> str:
    return str(path).rstrip("/").rsplit("/", 1)[-1] if is_url(path) else os.path.basename(path)


def join(folder: Any, name: str) -> Any:
    """`name` inside `folder`, keeping a URL's filesystem."""
    if not is_url(folder):
        return os.path.join(folder, name)
    url = folder if isinstance(folder, URL) else resolve(folder)
    return URL(str(url).rstrip("/") + "/" + name, url.fs, url.meter)


def suffixed(path: Any, suffix: str) -> Any:
    """`path` with `suffix` appended (a sidecar's name), keeping a URL's filesystem and
    meter; when `path` was listed with others, what that listing said of the sidecar
    (whether it exists, its size: `exists` and `size` then send no request)."""
    if isinstance(path, URL):
        beside = path.listed.beside if path.listed is not None else None
        name = basename(path) + suffix
        listed = None
        if beside is not None:
            listed = Listed(beside.get(name, 0), None, beside, name in beside)
        return URL(str(path) + suffix, path.fs, path.meter, listed)
    return os.fspath(path) + suffix


def like(path: Any, text: str) -> Any:
    """`text` (a path made from `path` by string work) on `path`'s filesystem."""
    return URL(text, path.fs, path.meter) if isinstance(path, URL) else text


def split(path: Any) -> tuple[Any, str]:
    """(folder, name); a URL's folder keeps its filesystem."""
    if not is_url(path):
        return os.path.split(os.path.abspath(path))
    url = path if isinstance(path, URL) else resolve(path)
    folder, _, name = str(url).rstrip("/").rpartition("/")
    return URL(folder, url.fs, url.meter), name


# --- writing ---------------------------------------------------------------------------------


def open_write(path: Any) -> Any:
    """A binary file for writing. A remote one is uploaded in WRITE_PART parts and exists
    only once closed (until then it is a hidden temporary name, see `replace`)."""
    if not is_url(path):
        return builtins.open(path, "wb")
    fs, inner = split_url(path)
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
    fs, a = split_url(src)
    _, b = split_url(dst)
    fs.mv(a, b)


def remove(path: Any) -> None:
    """Delete a file if it exists."""
    if not is_url(path):
        if os.path.lexists(path):
            os.unlink(path)
        return
    fs, inner = split_url(path)
    if fs.exists(inner):
        fs.rm(inner)


def remove_tree(path: Any) -> None:
    """Delete a remote folder and everything under it, if it exists."""
    fs, inner = split_url(path)
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
    fsys, inner = split_url(path)
    _, tmp_inner = split_url(tmp)
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
    fsys, inner = split_url(path)
    if fsys.isdir(inner):
        for found in fsys.find(inner):
            rel = found[len(inner.rstrip("/")) + 1 :]
            os.makedirs(os.path.dirname(os.path.join(local, rel)), exist_ok=True)
            fsys.get_file(found, os.path.join(local, rel))
    else:
        fsys.get_file(inner, local)
    return local
