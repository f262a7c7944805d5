"""Paths as users give them (a file, a glob, a directory, or a list of those) -> the list of
files to read, in order."""

from __future__ import annotations

import os
import warnings
import zlib
from collections.abc import Iterable

from .._util import fs
from .compression import WBITS, detect_compression
from .frames import HEADER_BYTES, is_frame_header
from .sniff import what_is

PathLike = str | os.PathLike
Paths = PathLike | Iterable[PathLike]
INDEX_SUFFIX = ".idx"


# Names that are never TFRecord shards, though dataset folders often hold them.
NOT_RECORDS = (
    ".json",
    ".txt",
    ".md",
    ".rst",
    ".csv",
    ".tsv",
    ".yaml",
    ".yml",
    ".py",
    ".npy",
    ".npz",
    ".h5",
    ".hdf5",
    ".zarr",
    ".png",
    ".jpg",
    ".jpeg",
    ".html",
    ".pdf",
    ".lock",
    INDEX_SUFFIX,
)
NOT_RECORD_NAMES = ("README", "LICENSE", "LICENCE", "NOTICE", "CHANGELOG", "MANIFEST")


def expand_paths(paths: Paths, storage_options: dict | None = None) -> list[str]:
    """A path, a glob, a directory or a list of those -> the TFRecord files to read, in order.

    A file named explicitly is always taken. Directories and globs take their non-hidden
    files that look like TFRecord shards: names like dataset_info.json, README or
    labels.npy are passed over, and so is a file whose first frame does not check (its
    length CRC, after decompressing GZIP / ZLIB); what was passed over is named once in a
    warning. URLs (s3://, gs://, memory://, ...) are listed through fsspec, with
    storage_options. Raises FileNotFoundError naming what matched nothing."""
    files, passed = list_files(paths, storage_options)
    if passed:
        listed = ", ".join(f"{fs.basename(p)} ({why})" for p, why in passed[:8])
        more = f" and {len(passed) - 8} more" if len(passed) > 8 else ""
        warnings.warn(
            f"passed over {len(passed)} file{'s' * (len(passed) != 1)} that are not TFRecord "
            f"shards: {listed}{more}; name a file explicitly to read it anyway",
            stacklevel=3,
        )
    return files


def list_files(
    paths: Paths, storage_options: dict | None = None
) -> tuple[list[str], list[tuple[str, str]]]:
    """(TFRecord files, [(path, why it was passed over)]), as `expand_paths` chooses them."""
    if not isinstance(paths, (str, os.PathLike)):
        found, passed = [], []
        for p in paths:
            f, s = list_files(p, storage_options)
            found += f
            passed += s
        found = fs.one_meter(found)  # a dataset of several URLs counts its requests once
        if not found and not passed:
            raise FileNotFoundError("the list of paths is empty")
        if not found:
            raise FileNotFoundError(_nothing_left(passed))
        return found, passed
    path = fs.resolve(paths, storage_options)
    folder = False
    if fs.size_known(path):  # a file listed before (by the caller's expand_paths)
        return [path], []
    if fs.is_url(path):  # one listing: sizes and ETags from it, no request per file
        kind, candidates = fs.listing(path)
        if kind == "file":
            return candidates, []
        folder = kind == "dir"
        what = f"the files matching {path}" if kind == "glob" else f"directory {path}"
        none = f"no files match {path}" if kind == "glob" else f"directory {path} holds no files"
    elif folder := fs.isdir(path):
        candidates = fs.listdir(path)
        what, none = f"directory {path}", f"directory {path} holds no files"
    elif fs.has_magic(path):
        candidates = fs.glob(path)
        what, none = f"the files matching {path}", f"no files match {path}"
    elif not fs.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    else:
        return [path], []
    found, passed = [], []
    for c in candidates:
        if c.endswith(INDEX_SUFFIX) or not (fs.is_url(c) or fs.isfile(c)):
            continue
        why = _not_records(c, look=not fs.is_url(c))  # remote: by name (a request each)
        (passed.append((c, why)) if why else found.append(c))
    if not found:
        if not passed:
            raise FileNotFoundError(none)
        kind = what_is(path) if folder else None
        if kind is not None and kind != "it is a folder":  # a Zarr store, not a folder of shards
            what = f"{path} {kind.removeprefix('it ')}"
        raise FileNotFoundError(f"{what}: {_nothing_left(passed)}")
    return found, passed


def _nothing_left(passed: list[tuple[str, str]]) -> str:
    listed = ", ".join(f"{fs.basename(p)} ({why})" for p, why in passed[:8])
    return f"no TFRecord files among {listed}; name a file explicitly to read it anyway"


def looks_like_records(path: str) -> bool:
    """Whether a file would be taken as a TFRecord shard from a folder (empty files are)."""
    return _not_records(path) is None


def _not_records(path: str, look: bool = True) -> str | None:
    """Why a file found in a folder or glob is not a TFRecord shard, or None if it is one;
    look=False judges by the name alone."""
    name = fs.basename(path)
    if name.lower().endswith(NOT_RECORDS) or name.upper().split(".")[0] in NOT_RECORD_NAMES:
        return "by its name"
    if not look:
        return None
    head = fs.read_head(path, 1 << 16)
    if not head:
        return None  # an empty shard: a TFRecord file of no records
    kind = detect_compression(head[:HEADER_BYTES])
    if kind is not None:
        try:
            head = zlib.decompressobj(WBITS[kind]).decompress(head, HEADER_BYTES)
        except zlib.error:
            return f"{kind} data that does not inflate"
    if not is_frame_header(head):
        return "its first bytes are not a TFRecord frame"
    return None
