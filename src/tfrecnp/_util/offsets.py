"""n + 1 offsets: the layout of every flat buffer of variable-length values in tfrecnp
(payloads in a batch, byte strings in a column, rows of a Ragged). Value i is
buffer[offsets[i]:offsets[i + 1]]; offsets[0] is 0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["offsets_of", "pack_bytes"]


def offsets_of(lengths: Any) -> np.ndarray:
    """The n + 1 int64 offsets (0, then the running sums) of n values of these lengths."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def pack_bytes(items: Sequence[bytes | bytearray | memoryview]) -> tuple[np.ndarray, np.ndarray]:
    """Byte strings back to back: (a read-only uint8 buffer, their n + 1 offsets)."""
    lengths = np.fromiter(map(len, items), np.int64, len(items))
    return np.frombuffer(b"".join(items), np.uint8), offsets_of(lengths)
