"""Columns -> tf.train.Example payloads, compiled: sizes first, then one exact buffer."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

Int64s = NDArray[np.int64]

BYTES: int
FLOAT: int
INT64: int
OK: int
BAD_SPLITS: int
BAD_OFFSETS: int
TOO_LARGE: int
CHANGED: int
MAX_RECORD: int

class EncodeError(ValueError):
    code: int
    row: int
    feature: int
    reason: str
    def __init__(self, code: int, row: int, feature: int) -> None: ...

class Batch:
    """One batch of columns to encode as n Examples."""

    @property
    def n(self) -> int: ...
    @property
    def offsets(self) -> Int64s: ...
    def __init__(self, features: list[tuple[Any, ...]], n: int) -> None: ...
    def measure(self, start: int, stop: int) -> None: ...
    def finish(self) -> int: ...
    def fill(self, out: NDArray[np.uint8], start: int, stop: int) -> None: ...

def encode_examples(
    features: list[tuple[Any, ...]], n: int, out: NDArray[np.uint8] | None = None
) -> tuple[NDArray[np.uint8], Int64s]: ...
def index_lines(starts: Int64s, frames: Int64s) -> NDArray[np.uint8]: ...
