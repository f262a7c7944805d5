"""TFRecord framing, compiled: CRC32C, frame walks, payload gathers (buffers in and out)."""

import numpy as np
from numpy.typing import NDArray

Buffer = NDArray[np.uint8] | bytes | bytearray | memoryview
Int64s = NDArray[np.int64]

LIMIT: int
NEED_MORE: int
BAD_LENGTH_CRC: int
FOUND: int
NOT_FOUND: int
OUT_FULL: int

def has_sse42() -> bool: ...
def crc32c(data: Buffer, crc: int = 0, *, hardware: bool | None = None) -> int: ...
def mask_crc(crc: int) -> int: ...
def scan_frames(
    buf: Buffer, pos: int, limit: int, starts: Int64s, lengths: Int64s
) -> tuple[int, int, int, int]: ...
def frame_ok(buf: Buffer, length: int, check_crc: bool = True) -> bool: ...
def gather_payloads(
    buf: Buffer,
    starts: Int64s,
    lengths: Int64s,
    out: NDArray[np.uint8],
    offsets: Int64s,
    check_crc: bool = True,
    base: int = 0,
) -> int: ...
def gather_ranges(
    src: Buffer,
    starts: Int64s,
    lengths: Int64s,
    out: NDArray[np.uint8],
    out_starts: Int64s | None = None,
) -> int: ...
def gather_parts(
    parts: list[Buffer],
    which: Int64s,
    starts: Int64s,
    lengths: Int64s,
    out: NDArray[np.uint8],
    out_starts: Int64s,
) -> int: ...
def find_frame(buf: Buffer, pos: int) -> tuple[int, int]: ...
def frame_payloads(payloads: Buffer, offsets: Int64s, out: NDArray[np.uint8]) -> int: ...
def check_frames(
    buf: Buffer,
    pos: int,
    want: int,
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    first: int,
    origin: int,
    check_crc: bool = True,
) -> tuple[int, int, int, int, int]: ...
def check_payloads(buf: Buffer, starts: Int64s, ends: Int64s) -> int: ...
def gather_frames(
    buf: Buffer,
    pos: int,
    want: int,
    out: NDArray[np.uint8],
    used: int,
    offsets: Int64s,
    first: int,
    check_crc: bool = True,
    stream: bool = False,
) -> tuple[int, int, int, int, int, int, int]: ...
def pread_runs(
    fd: int, offsets: Int64s, sizes: Int64s, out: NDArray[np.uint8], at: Int64s
) -> tuple[int, int]: ...
