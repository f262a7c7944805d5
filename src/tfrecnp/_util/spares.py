"""Byte buffers kept for reuse, so that a pass over big records writes into the pages of the
last one instead of fresh pages.

A fresh page costs a fault and a zeroing by the kernel, and the C library hands large
buffers back to the system as soon as they are freed, so without reuse every block of a
pass over big records gets fresh pages (measured: benchmarks/CONSTANTS.md, SMALL_BYTES).
"""

from __future__ import annotations

import sys
import threading

import numpy as np

SMALL_BYTES = 1 << 20  # smaller buffers the C library recycles itself: always fresh


class Spares:
    """Buffers lent out and taken back once nothing else refers to them.

    `lend(buf)` lists a buffer handed to a consumer; `take(n)` returns a listed buffer of n
    to 4n bytes that only this list refers to (its reference count says so: a consumer
    holding any view of it keeps it), or None, and lets go the free ones too small for it
    that it passes; past `limit` buffers the oldest free one is let go. So the memory kept is what
    the consumers held at once, at most; `clear()` lets it all go. Thread-safe.
    """

    def __init__(self, limit: int = 256):
        self.limit = limit
        self._buffers: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray | None:
        if not _POOLING:
            return None
        with self._lock:
            buffers = self._buffers
            k = 0
            while k < len(buffers):
                size = len(buffers[k])
                if size > 4 * nbytes or _references(buffers, k) != _FREE_REFERENCES:
                    k += 1
                elif size >= nbytes:
                    return buffers.pop(k)
                else:  # free and too small: the batches of this pass are larger
                    del buffers[k]
        return None

    def empty(self, nbytes: int) -> np.ndarray:
        """nbytes of a free listed buffer, else of a fresh one, lent at once: it comes back
        when the array returned and every view of it are gone. Small buffers (under
        SMALL_BYTES, which the C library recycles itself) are always fresh. A fresh buffer
        is an eighth larger than asked, so that the next of a run of outputs whose sizes
        vary a little (the values of a ragged column, block after block) fits it."""
        if nbytes < SMALL_BYTES:
            return np.empty(nbytes, np.uint8)
        buffer = self.take(nbytes)
        if buffer is None:
            buffer = np.empty(nbytes + nbytes // 8, np.uint8)
        self.lend(buffer)
        return buffer[:nbytes]

    def lend(self, buffer: np.ndarray) -> None:
        with self._lock:
            buffers = self._buffers
            buffers.append(buffer)
            if len(buffers) > self.limit:
                free = (
                    k for k in range(len(buffers)) if _references(buffers, k) == _FREE_REFERENCES
                )
                del buffers[next(free, 0)]  # the oldest free one, else the oldest

    def clear(self) -> None:
        with self._lock:
            self._buffers.clear()


def _references(buffers: list, k: int) -> int:
    return sys.getrefcount(buffers[k])


# A listed buffer is free when only the list refers to it; the count that means "free" is
# measured here rather than assumed. Builds without the GIL do not reuse buffers.
_FREE_REFERENCES = _references([np.empty(1, np.uint8)], 0)
_POOLING = getattr(sys, "_is_gil_enabled", lambda: True)()
