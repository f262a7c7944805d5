"""tf.train.Example / SequenceExample wire format -> column buffers, compiled (two passes)."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

Buffer = NDArray[np.uint8] | bytes | bytearray | memoryview
Int64s = NDArray[np.int64]

OK: int
MALFORMED: int
SCHEMA: int
BAD_OFFSETS: int
FULL: int
INCONSISTENT: int
ROW_END: int
ROW_COUNT: int
ROW_NBYTES: int
ROW_STEPS: int
ROW_BAD_STEP: int
ROW_BAD_VALUE: int
ROW_KIND: int
ROW_FIELDS: int
SURVEY_FIELDS: int
OPS: dict[str, int]
MALFORMED_REASONS: dict[int, str]
WHERE: dict[int, str]
SCHEMA_CODES: dict[int, str]

class Plan:
    """A spec compiled for the core."""

    @property
    def nfeat(self) -> int: ...
    def __init__(
        self,
        names: list[bytes],
        sections: list[int],
        ops: list[int],
        kinds: list[int],
        counts: list[int],
        divisors: list[int],
        raw_bytes: list[int],
        defaults: list[Any],
        sequence: bool,
    ) -> None: ...

def has_fast_pext() -> bool: ...
def decode_packed_varints(block: Buffer, *, pext: bool | None = None) -> Int64s: ...
def scan(
    plan: Plan,
    data: Buffer | list[Buffer],  # a list: record r lies in data[which[r]]
    starts: Int64s,
    ends: Int64s,
    lo: int,
    hi: int,
    table: NDArray[np.int64],  # (records, nfeat, ROW_FIELDS)
    totals: NDArray[np.int64],  # (nfeat, 4)
    which: Int64s | None = None,
) -> tuple[int, int, int, int]: ...
def fill(
    plan: Plan,
    data: Buffer | list[Buffer],
    starts: Int64s,
    lo: int,
    hi: int,
    table: NDArray[np.int64],
    outs: list[tuple[Any, ...]],
    bases: NDArray[np.int64],
    which: Int64s | None = None,
) -> int: ...
def decode_one(
    plan: Plan, data: Buffer, start: int, stop: int
) -> list[tuple[bytearray | None, ...]] | None: ...
def survey(
    data: Buffer, offsets: Int64s, lo: int, hi: int, out: NDArray[np.int64]
) -> tuple[int, int, int, Any]: ...
