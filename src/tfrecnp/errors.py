"""Typed errors. Each also subclasses the builtin a caller would expect, and says what
failed, where (file, record, byte offset, feature), and what to do."""

from __future__ import annotations

import os
from typing import Any

from ._util.text import format_count

__all__ = [
    "CorruptRecordError",
    "CorruptRecordWarning",
    "FileChangedError",
    "ImageDecodeError",
    "MemoryBudgetError",
    "RandomAccessError",
    "SchemaError",
    "TFRecordError",
]


SALVAGE_HINT = (
    "run `tfrecnp verify --salvage OUT` to copy the good records, or pass on_error='skip'"
)


class TFRecordError(Exception):
    """Base of every error tfrecnp raises about data."""


class CorruptRecordError(TFRecordError, ValueError):
    """A record's framing or payload is damaged: CRC mismatch, truncation, bad length.

    Attributes: path, record (index of the record in its file), offset (byte offset of its
    frame; in the decompressed stream for compressed files), reason. Made from a message
    alone (no path), as PyTorch's DataLoader raises a worker's error again, it keeps its
    type and says what the message says.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | None = None,
        record: int = -1,
        offset: int = -1,
        hint: str = "",
    ):
        self.reason = reason
        self.path = path
        self.record = record
        self.offset = offset
        self.hint = hint
        if path is None:  # a message alone: a PyTorch worker's error raised again, typed
            super().__init__(reason)
            return
        at = f"byte {format_count(offset)}"
        where = f"{path} record {record} ({at})" if record >= 0 else f"{path} ({at})"
        super().__init__(f"{reason} at {where}" + (f"; {hint}" if hint else ""))

    def __reduce__(self) -> tuple:
        # Keyword-only fields: pickle (PyTorch workers, multiprocessing, Ray) rebuilds the
        # error from them, and keeps any attribute set later (such as `skipped`).
        fields = {"path": self.path, "record": self.record, "offset": self.offset}
        return (_rebuild_corrupt, (type(self), self.reason, fields, self.hint), self.__dict__)


def _rebuild_corrupt(cls: type, reason: str, fields: dict, hint: str) -> CorruptRecordError:
    return cls(reason, hint=hint, **fields)


class FileChangedError(CorruptRecordError):
    """A file changed while it was read (cut, rewritten in place, replaced): nothing past
    the change is delivered. Attributes as CorruptRecordError's, plus size (the file's size
    now, -1 when it is gone) and expected (its size when the pass began or it was indexed).
    """

    def __init__(self, reason: str, *, size: int = -1, expected: int = -1, **where: Any):
        self.size = size
        self.expected = expected
        super().__init__(reason, **where)

    def __reduce__(self) -> tuple:
        fields = {"path": self.path, "record": self.record, "offset": self.offset}
        fields |= {"size": self.size, "expected": self.expected}
        return (_rebuild_corrupt, (type(self), self.reason, fields, self.hint), self.__dict__)


def file_changed(
    path: str, record: int, offset: int, expected: int, found: str = "", indexed: bool = False
) -> FileChangedError:
    """The error for file `path`, which had `expected` bytes when its pass began (indexed:
    when it was indexed) and changed since, met at record `record` (frame at byte `offset`;
    `found`: what the read found there). The file's size now is looked up, so the message
    tells where the file ends today."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = -1
    now = "is gone" if size < 0 else f"is now {format_count(size)} bytes"
    then = "it was indexed" if indexed else "the pass began"
    reason = (
        f"the file changed while it was read ({found + ': ' if found else ''}it {now}, "
        f"{format_count(expected)} when {then})"
    )
    hint = "read it again once it is written whole (write a new file and rename it over)"
    if indexed:
        hint += "; if its .idx sidecar is older than the file, delete it"
    return FileChangedError(
        reason, path=path, record=record, offset=offset, hint=hint, size=size, expected=expected
    )


class ImageDecodeError(CorruptRecordError):
    """Images of a batch that do not decode. rows: the batch rows (first one named in the
    message), so on_error="skip" can drop them all; feature: the feature's name."""

    def __init__(self, reason: str, *, path: str, record: int, offset: int = -1, hint: str = ""):
        super().__init__(reason, path=path, record=record, offset=offset, hint=hint)
        self.args = (f"{reason} at {path} record {record}" + (f"; {hint}" if hint else ""),)
        self.rows: list[int] = []
        self.reasons: dict[int, str] = {}
        self.feature = ""


class SchemaError(TFRecordError, ValueError):
    """The data does not match the spec: a missing feature, a wrong kind or length."""


class MemoryBudgetError(TFRecordError, MemoryError):
    """A whole-dataset call would need more memory than its budget allows."""


class RandomAccessError(TFRecordError, ValueError):
    """Reading records by position needs uncompressed files."""


class CorruptRecordWarning(UserWarning):
    """Emitted for each damaged stretch skipped with on_error="warn"."""
