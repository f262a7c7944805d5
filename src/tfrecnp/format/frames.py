"""The geometry of a TFRecord frame, named once (docs/FORMAT.md):

    uint64 length | uint32 masked CRC32C of length | payload | uint32 masked CRC32C of payload

Every module that walks, sizes or checks frames in Python takes these names from here (the
compiled core names its own copy once, in _core/crc32c.h; tests/test_frames.py checks that
the core writes and walks frames of this geometry)."""

from __future__ import annotations

from .._core import framing

__all__ = [
    "FOOTER_BYTES",
    "HEADER_BYTES",
    "LENGTH_BYTES",
    "OVERHEAD_BYTES",
    "crc_mismatch",
    "is_frame_header",
    "length_crc_mismatch",
    "payload_crc_mismatch",
]

LENGTH_BYTES = 8  # the payload length, little-endian uint64
HEADER_BYTES = 12  # the length and its masked CRC
FOOTER_BYTES = 4  # the payload's masked CRC
OVERHEAD_BYTES = HEADER_BYTES + FOOTER_BYTES  # a frame is this much longer than its payload


def is_frame_header(head: bytes | memoryview) -> bool:
    """Whether these bytes begin with a frame header whose length CRC checks."""
    return len(head) >= HEADER_BYTES and framing.mask_crc(
        framing.crc32c(head[:LENGTH_BYTES])
    ) == int.from_bytes(head[LENGTH_BYTES:HEADER_BYTES], "little")


def crc_mismatch(what: str, stored: int, computed: int) -> str:
    """The reason a damage report gives for a CRC that does not check; what: "length" or
    "payload"."""
    return f"{what} CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"


def length_crc_mismatch(buf, pos: int) -> str:
    """crc_mismatch for the header of the frame at buf[pos] (bytes, memoryview or uint8
    array)."""
    stored = int.from_bytes(bytes(buf[pos + LENGTH_BYTES : pos + HEADER_BYTES]), "little")
    computed = framing.mask_crc(framing.crc32c(buf[pos : pos + LENGTH_BYTES]))
    return crc_mismatch("length", stored, computed)


def payload_crc_mismatch(buf, pos: int, length: int) -> str:
    """crc_mismatch for the payload (`length` bytes) of the frame at buf[pos]."""
    start = pos + HEADER_BYTES
    stored = int.from_bytes(bytes(buf[start + length : start + length + FOOTER_BYTES]), "little")
    computed = framing.mask_crc(framing.crc32c(buf[start : start + length]))
    return crc_mismatch("payload", stored, computed)
