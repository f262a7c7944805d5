"""How many records a batch or block holds: a byte budget over a mean record size, within
bounds. One rule for every reader, so small records come by thousands and large tensors by
tens, and no caller writes its own clamp."""

from __future__ import annotations

__all__ = ["records_per_batch"]


def records_per_batch(
    budget_bytes: float, record_bytes: float, bounds: tuple[int, int], *, multiple: int = 1
) -> int:
    """Records that hold about budget_bytes at record_bytes each (taken as at least 1 byte),
    clipped to bounds = (fewest, most), then rounded to a whole number of `multiple`
    records, at least one (a block that is a whole number of batches)."""
    lo, hi = bounds
    target = min(hi, max(lo, budget_bytes / max(record_bytes, 1.0)))
    return multiple * max(1, round(target / multiple))
