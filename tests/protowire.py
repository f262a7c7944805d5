"""A tiny protobuf encoder for tests: builds tf.train.Example / SequenceExample payloads
byte by byte, including encodings TensorFlow's writer never emits (unpacked lists, lists
split over several tags, duplicate and shuffled map entries, value before key, unknown
fields), so the decoder can be checked on them. Independent of tfrecnp.

Field numbers (FORMAT.md): Example.features = 1; SequenceExample.context = 1,
feature_lists = 2; Features.feature = 1 (map entry: key 1, value 2); FeatureLists
.feature_list = 1; FeatureList.feature = 1; Feature: bytes_list 1, float_list 2,
int64_list 3; each list's value = 1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

VARINT, FIXED64, DELIMITED, FIXED32 = 0, 1, 2, 5
BYTES, FLOAT, INT64 = 1, 2, 3


def varint(n: int) -> bytes:
    """Base-128 varint; negative numbers as 64-bit two's complement (10 bytes)."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def delimited(field: int, body: bytes) -> bytes:
    return tag(field, DELIMITED) + varint(len(body)) + body


def int64_list(values: Iterable[int], *, packed: bool = True, split: int = 0) -> bytes:
    """An Int64List body. split > 0 cuts a packed list into blocks of that many values."""
    values = list(values)
    if not packed:
        return b"".join(tag(1, VARINT) + varint(v) for v in values)
    if split:
        blocks = [values[i : i + split] for i in range(0, len(values), split)]
        return b"".join(delimited(1, b"".join(map(varint, b))) for b in blocks)
    return delimited(1, b"".join(map(varint, values))) if values else b""


def float_list(values: Iterable[float], *, packed: bool = True, split: int = 0) -> bytes:
    values = list(values)
    if not packed:
        return b"".join(tag(1, FIXED32) + struct.pack("<f", v) for v in values)
    if split:
        blocks = [values[i : i + split] for i in range(0, len(values), split)]
        return b"".join(delimited(1, struct.pack(f"<{len(b)}f", *b)) for b in blocks)
    return delimited(1, struct.pack(f"<{len(values)}f", *values)) if values else b""


def bytes_list(values: Iterable[bytes]) -> bytes:
    return b"".join(delimited(1, v) for v in values)


def feature(kind: int, values: Sequence, **how) -> bytes:
    """A Feature body holding one list of the given kind (1 bytes, 2 float, 3 int64)."""
    body = {BYTES: bytes_list, FLOAT: float_list, INT64: int64_list}[kind]
    return delimited(kind, body(values, **how) if kind != BYTES else body(values))


def entry(key: bytes | str, value: bytes | None, *, value_first: bool = False) -> bytes:
    """One map entry body: key (field 1) and value (field 2), in either order."""
    if isinstance(key, str):
        key = key.encode()
    parts = [delimited(1, key)] + ([delimited(2, value)] if value is not None else [])
    return b"".join(reversed(parts) if value_first else parts)


def features(entries: Iterable[bytes]) -> bytes:
    """A Features (or FeatureLists) body from map entry bodies."""
    return b"".join(delimited(1, e) for e in entries)


def example(features_body: bytes) -> bytes:
    return delimited(1, features_body)


def feature_list(feature_bodies: Iterable[bytes]) -> bytes:
    return b"".join(delimited(1, f) for f in feature_bodies)


def sequence_example(context_body: bytes | None, feature_lists_body: bytes | None) -> bytes:
    out = b""
    if context_body is not None:
        out += delimited(1, context_body)
    if feature_lists_body is not None:
        out += delimited(2, feature_lists_body)
    return out


def simple_example(values: dict[str, tuple[int, Sequence]], **how) -> bytes:
    """An Example from {name: (kind, values)}, in dict order, packed unless told."""
    return example(
        features(entry(name, feature(kind, vals, **how)) for name, (kind, vals) in values.items())
    )


def unknown_fields(field: int = 15) -> bytes:
    """One unknown field of each wire type a parser must skip."""
    return (
        tag(field, VARINT)
        + varint(300)
        + tag(field, FIXED64)
        + b"\x01" * 8
        + delimited(field, b"junk")
        + tag(field, FIXED32)
        + b"\x02" * 4
    )
