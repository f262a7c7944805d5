"""The frame's geometry, named once in format/frames.py: the names agree with the pure-Python
reference of the format (conftest) and with what the compiled core writes, walks and checks,
which keeps its own copy of the numbers; the CRC-mismatch sentences read exactly so."""

from __future__ import annotations

import numpy as np
import pytest

from tfrecnp._core import framing
from tfrecnp.format.frames import (
    FOOTER_BYTES,
    HEADER_BYTES,
    LENGTH_BYTES,
    OVERHEAD_BYTES,
    crc_mismatch,
    is_frame_header,
    length_crc_mismatch,
    payload_crc_mismatch,
)

PAYLOADS = [b"", b"x", b"hello world", bytes(range(256)) * 3]


def test_the_names_describe_the_reference_frame(ref):
    for payload in PAYLOADS:
        frame = ref.frame(payload)
        assert len(frame) == len(payload) + OVERHEAD_BYTES
        assert OVERHEAD_BYTES == HEADER_BYTES + FOOTER_BYTES
        assert int.from_bytes(frame[:LENGTH_BYTES], "little") == len(payload)
        stored = int.from_bytes(frame[LENGTH_BYTES:HEADER_BYTES], "little")
        assert stored == ref.mask(ref.crc32c(frame[:LENGTH_BYTES]))
        assert frame[HEADER_BYTES : len(frame) - FOOTER_BYTES] == payload
        footer = int.from_bytes(frame[len(frame) - FOOTER_BYTES :], "little")
        assert footer == ref.mask(ref.crc32c(payload))


def test_the_core_writes_frames_of_this_geometry(ref):
    data = np.frombuffer(b"".join(PAYLOADS), np.uint8)
    offsets = np.cumsum([0, *map(len, PAYLOADS)]).astype(np.int64)
    out = np.zeros(len(data) + OVERHEAD_BYTES * len(PAYLOADS), np.uint8)
    assert framing.frame_payloads(data, offsets, out) == len(out)
    assert out.tobytes() == b"".join(map(ref.frame, PAYLOADS))


def test_the_core_walks_and_checks_frames_of_this_geometry(ref):
    buf = np.frombuffer(b"".join(map(ref.frame, PAYLOADS)), np.uint8)
    n = len(PAYLOADS)
    starts, lengths = np.empty(n, np.int64), np.empty(n, np.int64)
    _, pos, got, _ = framing.scan_frames(buf, 0, len(buf), starts, lengths)
    assert (got, pos) == (n, len(buf))
    assert starts.tolist() == ref.starts(map(len, PAYLOADS))
    assert lengths.tolist() == [len(p) for p in PAYLOADS]
    # the payloads lie HEADER_BYTES into each frame
    first, last = np.empty(n, np.int64), np.empty(n, np.int64)
    _, end, got, _, bad_at = framing.check_frames(buf, 0, n, first, last, 0, 0, True)
    assert (got, end, bad_at) == (n, len(buf), -1)
    assert first.tolist() == [s + HEADER_BYTES for s in starts.tolist()]
    assert (last - first).tolist() == lengths.tolist()
    for payload in PAYLOADS:
        frame = np.frombuffer(ref.frame(payload), np.uint8)
        assert framing.frame_ok(frame, len(payload))
        assert not framing.frame_ok(frame[:-1], len(payload))


def test_is_frame_header(ref):
    frame = ref.frame(b"abc")
    assert is_frame_header(frame)
    assert is_frame_header(frame[:HEADER_BYTES])
    assert is_frame_header(memoryview(frame))
    assert not is_frame_header(frame[: HEADER_BYTES - 1])
    assert not is_frame_header(b"")
    flipped = bytes([frame[0] ^ 1]) + frame[1:]
    assert not is_frame_header(flipped)


def _damaged_frame(ref, payload: bytes, length_crc: int | None, payload_crc: int | None):
    frame = bytearray(ref.frame(payload))
    if length_crc is not None:
        frame[LENGTH_BYTES:HEADER_BYTES] = length_crc.to_bytes(4, "little")
    if payload_crc is not None:
        frame[-FOOTER_BYTES:] = payload_crc.to_bytes(4, "little")
    return bytes(frame)


@pytest.mark.parametrize("kind", [bytes, memoryview, lambda b: np.frombuffer(b, np.uint8)])
def test_crc_mismatch_sentences(ref, kind):
    payload = b"some payload"
    lead = b"\x00" * 5  # the frame lies somewhere in a buffer
    frame = _damaged_frame(ref, payload, 0xDEADBEEF, 0x01020304)
    buf = kind(lead + frame + b"tail")
    computed_length = ref.mask(ref.crc32c(len(payload).to_bytes(8, "little")))
    assert length_crc_mismatch(buf, len(lead)) == (
        f"length CRC mismatch (stored 0xdeadbeef, computed 0x{computed_length:08x})"
    )
    computed_payload = ref.mask(ref.crc32c(payload))
    assert payload_crc_mismatch(buf, len(lead), len(payload)) == (
        f"payload CRC mismatch (stored 0x01020304, computed 0x{computed_payload:08x})"
    )
    assert crc_mismatch("payload", 0xAB, 0x1) == (
        "payload CRC mismatch (stored 0x000000ab, computed 0x00000001)"
    )
