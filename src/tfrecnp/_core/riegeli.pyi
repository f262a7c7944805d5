"""Riegeli/records byte work for ArrayRecord: hashes, chunks, sizes (buffers in, numbers out)."""

import numpy as np
from numpy.typing import NDArray

Buffer = NDArray[np.uint8] | bytes | bytearray | memoryview
Int64s = NDArray[np.int64]

OK: int
OUTSIDE: int
HEADER_HASH: int
DATA_SIZE: int
DATA_HASH: int
INFO_FIELDS: int
LAYOUT_FIELDS: int

def riegeli_hash(data: Buffer) -> int: ...
def unblock_chunks(
    buf: Buffer,
    at: Int64s,
    begins: Int64s,
    ends: Int64s,
    out: NDArray[np.uint8],
    info: NDArray[np.int64],
    check_data: bool = True,
) -> int: ...
def sizes_to_offsets(data: Buffer, offsets: Int64s) -> int: ...
def varint(data: Buffer, at: int) -> tuple[int, int]: ...
def uint_fields(data: Buffer, offsets: Int64s, out: NDArray[np.uint64]) -> int: ...
def simple_layout(out: Buffer, info: NDArray[np.int64], layout: NDArray[np.int64]) -> None: ...
def one_chunk(
    buf: Buffer,
    begin: int,
    end: int,
    check_data: bool = True,
    out: NDArray[np.uint8] | None = None,
) -> tuple[NDArray[np.uint8], tuple[int, ...], tuple[int, ...]]: ...
def lay_chunks(
    data: Buffer,
    offsets: Int64s,
    types: NDArray[np.uint8],
    records: Int64s,
    decoded: Int64s,
    pos: int,
    out: NDArray[np.uint8],
    begins: Int64s,
) -> int: ...
def chunks_size(offsets: Int64s, records: Int64s, pos: int) -> int: ...
