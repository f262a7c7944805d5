"""A one-line progress bar on stderr for long jobs (save, convert, index, verify).

It shows records done (of the total when known), records/s, MB/s and an ETA, rewritten in
place at most ten times a second. It prints nothing unless the stream is a terminal, so
logs and pipes stay clean, and nothing at all with ``enabled=False``.

    with Progress("save out/", total=len(ds), enabled=progress) as bar:
        for batch in ...:
            bar.update(records=len(batch), nbytes=size)
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .text import format_count, format_size

__all__ = ["Progress", "format_duration", "format_rate"]

REFRESH_SECONDS = 0.1
BAR_WIDTH = 20


def format_rate(x: float) -> str:
    """1234567.0 -> '1.23 M' (three significant digits and an SI prefix)."""
    for div, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g} {prefix}"
    return f"{x:.3g} "


def format_duration(seconds: float) -> str:
    """Seconds as m:ss or h:mm:ss."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """Records (and bytes) done so far, drawn as one line on a terminal.

    total: the number of records expected, for the percentage and ETA; or else total_bytes,
    the bytes expected (None if unknown). enabled=False, or a stream that is not a terminal,
    makes every call a no-op.
    """

    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        total_bytes: int | None = None,
        enabled: bool = True,
        stream: TextIO | None = None,
        unit: str = "records",
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled) and _isatty(self.stream)
        self.label = label
        self.total = total
        self.total_bytes = total_bytes
        self.unit = unit
        self.records = 0
        self.nbytes = 0
        self.started = time.perf_counter()
        self._last = 0.0
        self._width = 0

    def update(self, records: int = 0, nbytes: int = 0) -> None:
        """Count `records` more records and `nbytes` more bytes; redraw if it is time."""
        self.records += records
        self.nbytes += nbytes
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last >= REFRESH_SECONDS:
            self._last = now
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The text of the bar as it stands."""
        elapsed = max((now if now is not None else time.perf_counter()) - self.started, 1e-9)
        parts = [f"{self.label}:"]
        done, left = None, None
        if self.total:
            done = self.records / self.total
            left = (self.total - self.records) / max(self.records / elapsed, 1e-9)
        elif self.total_bytes:
            done = self.nbytes / self.total_bytes
            left = (self.total_bytes - self.nbytes) / max(self.nbytes / elapsed, 1e-9)
        if done is not None:
            done = min(done, 1.0)
            filled = round(done * BAR_WIDTH)
            parts.append(f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {100 * done:3.0f}%")
        if self.total:
            parts.append(f"{format_count(self.records)}/{format_count(self.total)} {self.unit}")
        else:
            parts.append(f"{format_count(self.records)} {self.unit}")
            if self.total_bytes:
                parts.append(f"({format_size(self.nbytes)} of {format_size(self.total_bytes)})")
        parts.append(f"{format_rate(self.records / elapsed)}{self.unit[:3]}/s")
        if self.nbytes:
            parts.append(f"{self.nbytes / elapsed / 1e6:,.0f} MB/s")
        if left is not None and done < 1.0 and (self.records or self.nbytes):
            parts.append(f"ETA {format_duration(left)}")
        else:
            parts.append(format_duration(elapsed))
        return " ".join(parts)

    def _draw(self, now: float) -> None:
        text = self.line(now)
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line (only if anything was drawn)."""
        if self.enabled and self._width:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0
        self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
