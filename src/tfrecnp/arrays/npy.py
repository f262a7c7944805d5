"""The .npy / .npz formats as far as tfrecnp reads and writes them by hand: magic bytes, a
version 1.0 header written with room to grow (so a .npy can be appended to and given its
final shape at the end), headers read, and where a stored .npz member's bytes begin (so it
memory-maps)."""

from __future__ import annotations

import tokenize
import zipfile

import numpy as np

NPY_MAGIC = b"\x93NUMPY"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"


def npy_header(dtype: np.dtype, shape: tuple[int, ...], size: int | None = None) -> bytes:
    """A version 1.0 .npy header for (dtype, shape), padded with spaces to `size` bytes (or
    to the next multiple of 64)."""
    text = (
        f"{{'descr': {np.lib.format.dtype_to_descr(dtype)!r}, 'fortran_order': False, "
        f"'shape': {tuple(int(d) for d in shape)!r}, }}"
    )
    body = len(NPY_MAGIC) + 2 + 2 + len(text) + 1
    if size is None:
        size = -(-body // 64) * 64
    if body > size or size - 10 > 0xFFFF:
        raise AssertionError("npy header does not fit its reserved space")
    text = text + " " * (size - body) + "\n"
    return NPY_MAGIC + bytes([1, 0]) + (size - 10).to_bytes(2, "little") + text.encode("latin1")


# What NumPy's .npy header parser may raise on a damaged header: it tokenizes the header
# text and literal_evals it, so a few bytes changed give TokenError or SyntaxError, not only
# the ValueError it documents.
HEADER_ERRORS = (
    ValueError,
    SyntaxError,
    TypeError,
    tokenize.TokenError,
    RecursionError,
    OverflowError,  # a shape whose size overflows (np.memmap of 2**61 float32s)
)


def read_npy_header(f, version: tuple[int, int]) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran_order, dtype) of the header that follows the magic and version;
    ValueError when it does not parse."""
    try:
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(f)
        return np.lib.format.read_array_header_2_0(f)
    except HEADER_ERRORS as e:
        raise ValueError(f"the .npy header does not parse ({type(e).__name__}: {e})") from None


def zip_member_offset(path: str, info: zipfile.ZipInfo) -> int:
    """Where a stored member's bytes begin: after its local header, whose name and extra
    field lengths may differ from the central directory's. ValueError if there is none."""
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)
    if len(local) < 30 or not local.startswith(ZIP_MAGIC):
        raise ValueError(f"bad zip local header for member {info.filename}")
    return (
        info.header_offset
        + 30
        + int.from_bytes(local[26:28], "little")
        + int.from_bytes(local[28:30], "little")
    )
