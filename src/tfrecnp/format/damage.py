"""What a reader does with a damaged record, by on_error: "raise" raises its
CorruptRecordError; "skip" steps past it and lists it in `corruptions`; "warn" also says so
with a CorruptRecordWarning. Every reader (the stream walk, the gather out of frames, the
decoder's dropped images) reports through `DamagePolicy.report`, so the three choices, the
list and the warning's sentence exist once."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Literal

from .._util.text import format_count
from ..errors import CorruptRecordError, CorruptRecordWarning

__all__ = ["ON_ERROR", "DamagePolicy", "OnError", "check_on_error"]

OnError = Literal["raise", "skip", "warn"]
ON_ERROR = ("raise", "skip", "warn")


def check_on_error(on_error: str) -> str:
    """on_error itself, or ValueError naming the choices."""
    if on_error not in ON_ERROR:
        raise ValueError(f'on_error must be "raise", "skip" or "warn", not {on_error!r}')
    return on_error


class DamagePolicy:
    """on_error made into the one thing a reader calls with the damage it meets. It lists
    each damaged place (path, record, byte offset) once, however often it is read (a second
    pass, a shuffle that draws the record again), and warns the first time only. Shared by
    threads (a lock) and by the readers of one dataset; it pickles without its lock."""

    def __init__(self, on_error: str = "raise"):
        self.on_error = check_on_error(on_error)
        self.corruptions: list[CorruptRecordError] = []
        self._seen: set[tuple[str, int, int]] = set()
        self._lock = threading.Lock()

    @property
    def raises(self) -> bool:
        """Whether damage ends the read (a reader that can read ahead only then)."""
        return self.on_error == "raise"

    def report(
        self,
        error: CorruptRecordError,
        skipped: int | Callable[[], int] | None = None,
        *,
        stacklevel: int = 1,
    ) -> bool:
        """Raise `error` under "raise". Otherwise step past the damage and list it: skipped
        is the bytes stepped over, or a function that steps past it and returns them (a
        stream's resynchronising walk, run only when the policy skips), or None when a
        record is dropped whole (an image that does not decode). Returns whether the damage
        was new (listed, and warned about under "warn"). stacklevel as for warnings.warn,
        counted from the caller."""
        if self.on_error == "raise":
            raise error
        if callable(skipped):
            skipped = skipped()
        if skipped is not None:
            error.skipped = skipped
        if not self.note(error):
            return False
        if self.on_error == "warn":
            warnings.warn(
                _skip_sentence(error, skipped), CorruptRecordWarning, stacklevel=stacklevel + 1
            )
        return True

    def note(self, error: CorruptRecordError) -> bool:
        """List damage once per place (path, record, offset), without a warning; False if
        it was listed already."""
        key = (error.path, error.record, error.offset)
        with self._lock:
            if len(self._seen) != len(self.corruptions):  # the list was changed from outside
                self._seen = {(e.path, e.record, e.offset) for e in self.corruptions}
            if key in self._seen:
                return False
            self._seen.add(key)
            self.corruptions.append(error)
            return True

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _skip_sentence(error: CorruptRecordError, skipped: int | None) -> str:
    """The warning for skipped damage: what, where, and what was stepped over."""
    where = f"{error.path} record {error.record}"
    if skipped is None:
        return f"{error.reason} at {where}; skipped the record"
    return (
        f"{error.reason} at {where} (byte {format_count(error.offset)}); skipped "
        f"{format_count(skipped)} bytes"
    )
