"""How much memory this process may still use: to_numpy's budget, and pages of memory maps
released behind a reader."""

from __future__ import annotations

import builtins
import contextlib
import mmap
import os
from typing import Any

import numpy as np


def available_memory() -> int | None:
    """Bytes of memory available to this process now: MemAvailable, lowered to the cgroup's
    remaining limit when there is one; None when the system does not say."""
    found = None
    try:
        with builtins.open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if found is None:
        try:
            found = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            found = None
    try:
        with builtins.open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with builtins.open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit != "max":
            room = max(0, int(limit) - used)
            found = room if found is None else min(found, room)
    except (OSError, ValueError):
        pass
    return found


def read_only_map(arr: Any) -> tuple[np.memmap, mmap.mmap] | None:
    """The read-only np.memmap that arr views (itself or a base of it) and that memmap's
    mmap; None when arr views no such map."""
    owner = arr
    while owner is not None and not isinstance(owner, np.memmap):
        owner = owner.base if isinstance(owner.base, np.ndarray) else None
    m = getattr(owner, "_mmap", None) if owner is not None else None
    if m is None or getattr(owner, "mode", None) != "r":
        return None
    return owner, m


def page_releaser(arr: Any):
    """For an array backed by a read-only np.memmap: a function release(a, b) that hands the
    pages of rows a..b back to the page cache (MADV_DONTNEED), so they stop counting as this
    process's memory. None for anything else. Only read-only maps qualify: there dropping a
    page loses nothing, the next access maps it again from the page cache."""
    if not hasattr(mmap, "MADV_DONTNEED") or not isinstance(arr, np.ndarray):
        return None
    mapped = read_only_map(arr)
    if mapped is None or arr.ndim == 0:
        return None
    m = mapped[1]
    if not arr.flags.c_contiguous:
        return None
    try:
        base = np.frombuffer(m, np.uint8).ctypes.data
    except (TypeError, ValueError):
        return None
    start = arr.ctypes.data - base
    row = arr.strides[0] if arr.shape[0] else 0
    size = len(m)
    page = mmap.PAGESIZE

    def release(a: int, b: int) -> None:
        lo = start + a * row
        hi = min(size, start + b * row)
        lo -= lo % page
        if hi > lo:
            with contextlib.suppress(OSError, ValueError):
                m.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    return release
