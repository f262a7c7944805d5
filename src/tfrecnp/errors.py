"""Typed errors. Each also subclasses the builtin a caller would expect, and says what
failed, where (file, record, byte offset, feature), and what to do."""

from __future__ import annotations

__all__ = [
    "CorruptRecordError",
    "CorruptRecordWarning",
    "MemoryBudgetError",
    "SchemaError",
    "TFRecordError",
    "format_count",
    "format_size",
]


def format_count(n: int) -> str:
    """1234567 -> '1 234 567' (grouped so large offsets and lengths read at a glance)."""
    return f"{n:,}".replace(",", " ")


def format_size(n: int) -> str:
    """Bytes as a short human size: '512 bytes', '3 MiB', '1.5 GiB'."""
    if n < 1024:
        return f"{n} byte" + ("" if n == 1 else "s")
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n /= 1024
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
    raise AssertionError("unreachable")


class TFRecordError(Exception):
    """Base of every error tfrecnp raises about data."""


class CorruptRecordError(TFRecordError, ValueError):
    """A record's framing or payload is damaged: CRC mismatch, truncation, bad length.

    Attributes: path, record (index of the record in its file), offset (byte offset of its
    frame; in the decompressed stream for compressed files), reason.
    """

    def __init__(self, reason: str, *, path: str, record: int, offset: int, hint: str = ""):
        self.reason = reason
        self.path = path
        self.record = record
        self.offset = offset
        self.hint = hint
        where = f"{path} record {record} (byte {format_count(offset)})"
        super().__init__(f"{reason} at {where}" + (f"; {hint}" if hint else ""))


class SchemaError(TFRecordError, ValueError):
    """The data does not match the spec: a missing feature, a wrong kind or length."""


class MemoryBudgetError(TFRecordError, MemoryError):
    """A whole-dataset call would need more memory than its budget allows."""


class CorruptRecordWarning(UserWarning):
    """Emitted for each damaged stretch skipped with on_error="warn"."""
