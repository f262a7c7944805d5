"""CRC32C and the TFRecord mask: published vectors, hardware vs software, TensorFlow's bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecnp._core import framing

try:  # an independent C implementation, installed with zarr
    import google_crc32c
except ImportError:  # pragma: no cover
    google_crc32c = None

PATHS = [False, True] if framing.has_sse42() else [False]

# RFC 3720 (iSCSI) appendix B.4 and the usual check value.
VECTORS = [
    (b"", 0x00000000),
    (b"a", 0xC1D04330),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (
        bytes.fromhex(
            "01c00000000000000000000000000000"
            "14000000000004000000001400000018"
            "28000000000000000200000000000000"
        ),
        0xD9963A56,
    ),
]


def test_the_cpu_path_matches_the_cpu():
    if not Path("/proc/cpuinfo").exists():
        pytest.skip("no /proc/cpuinfo to compare with (not Linux)")
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    assert framing.has_sse42() == (" sse4_2" in flags)


@pytest.mark.parametrize("hardware", PATHS)
@pytest.mark.parametrize(("data", "expected"), VECTORS)
def test_published_vectors(data, expected, hardware, ref):
    assert ref.crc32c(data) == expected  # the reference agrees with the publication
    assert framing.crc32c(data, hardware=hardware) == expected
    assert framing.crc32c(data) == expected


def test_google_crc32c_agrees_on_the_vectors():
    if google_crc32c is None:
        pytest.skip("google_crc32c is not installed")
    for data, expected in VECTORS:
        assert google_crc32c.value(data) == expected


def _lengths():
    near = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65]
    for block in (256, 8192):
        for k in (1, 2, 3, 4, 6, 7):
            near += [k * block - 9, k * block - 1, k * block, k * block + 1, k * block + 13]
    return sorted(set(near))


@pytest.mark.parametrize("length", _lengths())
def test_hardware_and_software_agree_across_block_boundaries(length):
    rng = np.random.default_rng(length)
    buf = rng.integers(0, 256, length + 8, dtype=np.uint8).tobytes()
    for align in range(8):
        view = memoryview(buf)[align : align + length]
        expected = framing.crc32c(view, hardware=False)
        for hardware in PATHS:
            assert framing.crc32c(view, hardware=hardware) == expected, (length, align)
        if google_crc32c is not None:
            assert google_crc32c.value(bytes(view)) == expected, (length, align)


@pytest.mark.parametrize("length", [0, 1, 9, 255, 769, 8192 * 3 + 5])
def test_software_path_matches_the_reference(length, ref):
    data = np.random.default_rng(7).integers(0, 256, length, dtype=np.uint8).tobytes()
    assert framing.crc32c(data, hardware=False) == ref.crc32c(data)


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=30_000),
    cut=st.integers(0, 30_000),
    align=st.integers(0, 15),
    seed=st.integers(0, 2**32 - 1),
)
def test_extension_property_and_paths(data, cut, align, seed):
    # Misalign the data inside a larger buffer; continue a CRC from an arbitrary split.
    padded = bytes(align) + data
    view = memoryview(padded)[align:]
    cut = min(cut, len(data))
    whole = framing.crc32c(view, hardware=False)
    for hardware in PATHS:
        assert framing.crc32c(view, hardware=hardware) == whole
        head = framing.crc32c(view[:cut], hardware=hardware)
        assert framing.crc32c(view[cut:], head, hardware=hardware) == whole
    if google_crc32c is not None:
        assert google_crc32c.value(data) == whole
        assert google_crc32c.extend(seed & 0xFFFFFFFF, data) == framing.crc32c(
            data, seed & 0xFFFFFFFF
        )


def test_numpy_arrays_and_bytearrays_are_accepted():
    data = b"123456789"
    assert framing.crc32c(np.frombuffer(data, np.uint8)) == 0xE3069283
    assert framing.crc32c(bytearray(data)) == 0xE3069283


@pytest.mark.parametrize(
    ("crc", "expected"),
    [
        (0x00000000, 0xA282EAD8),
        (0xFFFFFFFF, 0xA282EAD7),  # rotation of all ones is all ones; + delta wraps
        (0x00008000, 0xA282EAD9),  # bit 15 rotates down to bit 0
        (0x00000001, 0xA284EAD8),  # bit 0 rotates up to bit 17
        (0xE3069283, 0xC78AB0E5),
    ],
)
def test_mask(crc, expected, ref):
    assert ref.mask(crc) == expected
    assert framing.mask_crc(crc) == expected


def test_mask_of_tensorflow_written_frames(tf_write, tmp_path):
    """TensorFlow's own frames: every stored CRC equals mask(crc32c(...)) of its bytes."""
    payloads = [b"", b"x", b"123456789", bytes(range(256)) * 40]
    data = Path(tf_write(tmp_path / "f.tfrecord", payloads)).read_bytes()
    at = 0
    for p in payloads:
        header = data[at : at + 8]
        assert int.from_bytes(header, "little") == len(p)
        for hardware in PATHS:
            stored = int.from_bytes(data[at + 8 : at + 12], "little")
            assert framing.mask_crc(framing.crc32c(header, hardware=hardware)) == stored
            body = data[at + 12 : at + 12 + len(p)]
            stored = int.from_bytes(data[at + 12 + len(p) : at + 16 + len(p)], "little")
            assert framing.mask_crc(framing.crc32c(body, hardware=hardware)) == stored
        at += 16 + len(p)
    assert at == len(data)
