"""Writes the attack files of this folder (run from the repository root:
`python tests/attacks/make.py`). Each is built by hand from the format's rules (the
reference framer of tests/conftest.py, a few protobuf bytes), never by tfrecnp;
tests/test_attacks.py holds the error each must give."""

from __future__ import annotations

import gzip
import json
import struct
import sys
from pathlib import Path

import h5py
import numpy as np
import zarr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from conftest import crc32c_ref, frame_ref, mask_ref  # noqa: E402


def header(length: int) -> bytes:
    """A 12-byte record header whose length CRC is valid."""
    h = struct.pack("<Q", length)
    return h + struct.pack("<I", mask_ref(crc32c_ref(h)))


def field(tag: int, body: bytes) -> bytes:
    """A length-delimited protobuf field (tag byte, varint length, body)."""
    n, size = len(body), b""
    while True:
        byte, n = n & 0x7F, n >> 7
        size += bytes([byte | (0x80 if n else 0)])
        if not n:
            return bytes([tag]) + size + body


def example(name: bytes, feature: bytes, extra: bytes = b"") -> bytes:
    """Example{features{feature{key: name, <extra fields>, value: feature}}}."""
    return field(0x0A, field(0x0A, field(0x0A, name) + extra + field(0x12, feature)))


def nested(levels: int) -> bytes:
    """Field 3 of the map entry, a message holding field 3, holding ... `levels` deep (a
    decoder that descends into unknown fields recurses once per level)."""
    body = b""
    for _ in range(levels):
        body = field(0x1A, body)
    return body


def main() -> None:
    (HERE / "length_2_60.tfrecord").write_bytes(header(2**60) + b"x" * 100)
    (HERE / "length_2_64_minus_1.tfrecord").write_bytes(header(2**64 - 1) + b"x" * 100)
    varint = b"\xff" * 10 + b"\x01"  # 11 bytes: one more than any varint may take
    int64_list = field(0x1A, field(0x0A, varint))
    (HERE / "varint_11_bytes.tfrecord").write_bytes(frame_ref(example(b"a", int64_list)))
    overrun = bytes([0x0A, 0x90, 0x03]) + b"\x00" * 8  # packed floats: 400 bytes claimed, 8 there
    float_list = field(0x12, overrun)
    (HERE / "packed_overrun.tfrecord").write_bytes(frame_ref(example(b"a", float_list)))
    # a Features map entry nesting 100 000 messages in an unknown field, before its value:
    # skipped whole, as protobuf skips unknown fields, so it decodes (to [7]) without recursing
    int64_7 = field(0x1A, field(0x0A, b"\x07"))
    deep = example(b"a", int64_7, extra=nested(100_000))
    (HERE / "map_entry_nested_100000.tfrecord").write_bytes(frame_ref(deep))
    # the same depth in start-group tags (wire type 3), which Example's messages never hold
    groups = example(b"a", int64_7, extra=b"\x1b" * 100_000)
    (HERE / "map_entry_groups_100000.tfrecord").write_bytes(frame_ref(groups))
    # a GZIP stream inflating about 1 000x: a header claiming 2^40 bytes, then 64 MiB of zeros
    bomb = gzip.compress(header(2**40) + bytes(64 << 20), compresslevel=9, mtime=0)
    (HERE / "gzip_bomb.tfrecord.gz").write_bytes(bomb)
    npy = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + str(2**60) + ",), }"
    npy = npy.ljust(117) + "\n"
    data = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(npy)) + npy.encode() + bytes(64)
    (HERE / "npy_2_60_elements.npy").write_bytes(data)
    with h5py.File(HERE / "mismatched_lengths.h5", "w") as f:
        f["a"] = np.arange(5)
        f["b"] = np.arange(7)
    group = zarr.open_group(HERE / "mismatched_lengths.zarr", mode="w")
    group.create_array("a", data=np.arange(5))
    group.create_array("b", data=np.arange(7))
    saved = HERE / "manifest_dotdot"
    saved.mkdir(exist_ok=True)
    np.save(saved / "x.npy", np.arange(4))
    manifest = {
        "format": "tfrecnp.arrays/1",
        "records": 4,
        "columns": {"x": {"kind": "array", "array": "../x", "dtype": "<i8", "shape": [4]}},
    }
    (saved / "tfrecnp.json").write_text(json.dumps(manifest))


if __name__ == "__main__":
    main()
