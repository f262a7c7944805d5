"""Numbers, sizes and shapes as messages and screens print them."""

from __future__ import annotations


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


def format_shape(shape: tuple[int, ...]) -> str:
    """(3,) -> '(3,)', (2, 3) -> '(2, 3)': a shape as Python spells a tuple."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
