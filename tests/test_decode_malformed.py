"""Hostile payloads: every truncation of valid records, bit flips, random bytes, and one
crafted record per way protobuf can be malformed. The decoder must answer with a typed
error (CorruptRecordError for bad protobuf, SchemaError for good protobuf that does not
fit the spec) and never crash; crafted cases assert the exact message."""

from __future__ import annotations

import contextlib

import numpy as np
import protowire as pw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp.example.decode import Decoder
from tfrecnp.example.survey import survey

HINT = (
    "the payload is not a valid tf.train.Example; if `tfrecnp verify` finds its CRCs intact, "
    "the writer produced it this way"
)

SPECS = [
    {"i": tn.FixedLen(3, "int64"), "f": tn.VarLen("float32"), "b": tn.Bytes()},
    {"f": tn.FixedLen(2, "float32", default=[0.0, 0.0]), "i": tn.VarLen("int64", (3,))},
    {"r": tn.Raw("uint8", shape=(-1,)), "b": tn.VarLen("bytes")},
    tn.Sequence(context={"b": tn.Bytes()}, sequence={"s": tn.VarLen("int64")}),
    tn.Sequence(sequence={"s": tn.FixedLen((), "int64"), "t": tn.Bytes()}),
]
DECODERS = [Decoder(s) for s in SPECS]


def valid_records() -> list[bytes]:
    rng = np.random.default_rng(3)
    out = []
    for k in range(4):
        how = {"packed": bool(k % 2), "split": k}
        out.append(
            pw.example(
                pw.features(
                    [
                        pw.entry("i", pw.feature(pw.INT64, [1, -(2**63), 2**40], **how)),
                        pw.entry("f", pw.feature(pw.FLOAT, [0.5] * (k + 1), **how)),
                        pw.entry("b", pw.feature(pw.BYTES, [rng.bytes(5)]), value_first=k > 1),
                        pw.entry("r", pw.feature(pw.BYTES, [rng.bytes(7)])),
                        pw.unknown_fields() if k == 3 else b"",
                    ]
                )
            )
        )
    steps = pw.feature_list([pw.feature(pw.INT64, [2**35 + k]) for k in range(3)])
    words = pw.feature_list([pw.feature(pw.BYTES, [b"w%d" % k]) for k in range(3)])
    context = pw.features([pw.entry("b", pw.feature(pw.BYTES, [b"ctx"]))])
    lists = pw.features([pw.entry("s", steps), pw.entry("t", words, value_first=True)])
    out.append(pw.sequence_example(context, lists))
    return out


def decode_all(payload: bytes) -> None:
    """Decode with every spec; only typed errors may come out. ds[i]'s short path
    (decode_one) refuses exactly the records decode rejects."""
    for decoder in DECODERS:
        try:
            decoder.decode([payload, payload])
            decoded = True
        except (tn.CorruptRecordError, tn.SchemaError):
            decoded = False
        one = decoder.decode_one(np.frombuffer(payload, np.uint8), 0, len(payload))
        assert (one is not None) == (decoded and decoder._ones is not None)
    with contextlib.suppress(tn.CorruptRecordError):
        survey([payload])


def test_valid_records_decode():
    for payload in valid_records():
        out = DECODERS[2].decode([payload]) if b"ctx" not in payload else None
        assert out is None or out["r"].values.shape == (7,)


def test_every_truncation_gives_a_typed_error_or_a_valid_prefix():
    for payload in valid_records():
        for cut in range(len(payload)):
            decode_all(payload[:cut])


def test_bit_flips_give_typed_errors():
    rng = np.random.default_rng(11)
    for payload in valid_records():
        data = np.frombuffer(payload, np.uint8)
        for _ in range(300):
            flipped = data.copy()
            flipped[rng.integers(len(data))] ^= np.uint8(1 << rng.integers(8))
            decode_all(flipped.tobytes())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_give_typed_errors(blob):
    decode_all(blob)
    decode_all(b"\x0a" + bytes([len(blob) & 0x7F]) + blob)


# --- one crafted record per kind of damage -----------------------------------------------


def malformed(payload: bytes, spec) -> str:
    with pytest.raises(tn.CorruptRecordError) as e:
        tn.decode([payload], spec)
    assert e.value.record == 0
    return str(e.value)


def in_feature(feature_body: bytes, name: str = "x") -> bytes:
    return pw.example(pw.features([pw.entry(name, feature_body)]))


def test_varint_longer_than_ten_bytes():
    bad = pw.tag(1, pw.VARINT) + b"\xff" * 10 + b"\x01"
    payload = in_feature(pw.delimited(pw.INT64, bad))
    at = payload.index(b"\xff")
    assert malformed(payload, {"x": tn.VarLen("int64")}) == (
        "malformed Example: a varint runs past 10 bytes in an Int64List of feature 'x' "
        f"at <memory> record 0 (payload byte {at}); {HINT}"
    )
    packed = in_feature(pw.delimited(pw.INT64, pw.delimited(1, b"\x01" + b"\x80" * 10 + b"\x01")))
    at = packed.index(b"\x80")
    assert malformed(packed, {"x": tn.VarLen("int64")}) == (
        "malformed Example: a varint runs past 10 bytes in an Int64List of feature 'x' "
        f"at <memory> record 0 (payload byte {at}); {HINT}"
    )
    # found when the varint ends in the second word of the block and 8+ bytes follow (the
    # word-wise count left the block's tail to a shift by 64 or more: UBSan, fuzz corpus)
    for lead in (0, 1, 5):
        block = b"\x01" * lead + b"\xff" * 11 + b"\x01" + b"\x02" * 12
        packed = in_feature(pw.delimited(pw.INT64, pw.delimited(1, block)))
        at = packed.index(b"\xff")
        assert (
            f"a varint runs past 10 bytes in an Int64List of feature 'x' at <memory> "
            f"record 0 (payload byte {at})" in malformed(packed, {"x": tn.VarLen("int64")})
        )
        with pytest.raises(tn.CorruptRecordError, match="a varint runs past 10 bytes"):
            survey([packed])


def test_ten_byte_varint_is_fine():
    payload = in_feature(pw.delimited(pw.INT64, pw.tag(1, pw.VARINT) + b"\xff" * 9 + b"\x01"))
    assert tn.decode([payload], {"x": tn.FixedLen((), "int64")})["x"].tolist() == [-1]


def test_length_past_the_end():
    good = in_feature(pw.feature(pw.BYTES, [b"abcdef"]))
    payload = good[:-2]  # every enclosing length now claims 2 bytes too many
    assert malformed(payload, {"x": tn.Bytes()}) == (
        "malformed Example: a field of 17 bytes runs past the end of its message (15 bytes "
        f"left) in the Example at <memory> record 0 (payload byte 1); {HINT}"
    )
    lie = pw.example(pw.features([pw.entry("x", pw.tag(1, 2) + pw.varint(2**62))]))
    assert malformed(lie, {"x": tn.Bytes()}) == (
        "malformed Example: a field of 4 611 686 018 427 387 904 bytes runs past the end of "
        f"its message (0 bytes left) in a Feature of feature 'x' at <memory> record 0 "
        f"(payload byte {len(lie) - 9}); {HINT}"
    )


def test_wrong_and_invalid_wire_types():
    payload = in_feature(pw.tag(pw.INT64, pw.VARINT) + pw.varint(5))
    assert malformed(payload, {"x": tn.VarLen("int64")}) == (
        "malformed Example: field 3 has wire type 0, expected 2 (length-delimited) in a "
        f"Feature of feature 'x' at <memory> record 0 (payload byte {len(payload) - 2}); {HINT}"
    )
    fixed = in_feature(pw.delimited(pw.INT64, pw.tag(1, pw.FIXED32) + b"\0\0\0\0"))
    assert malformed(fixed, {"x": tn.VarLen("int64")}) == (
        "malformed Example: field 1 has wire type 5, expected 0 (varint) or 2 (packed) in an "
        f"Int64List of feature 'x' at <memory> record 0 (payload byte {len(fixed) - 5}); {HINT}"
    )
    for wire in (3, 4, 6, 7):
        junk = pw.tag(15, wire) + b"\0" * 8 + pw.simple_example({})
        assert malformed(junk, {"x": tn.VarLen("int64")}) == (
            f"malformed Example: field 15 has the invalid wire type {wire} in the Example at "
            f"<memory> record 0 (payload byte 0); {HINT}"
        )


def test_field_number_zero():
    assert malformed(b"\x00\x01", {"x": tn.VarLen("int64")}) == (
        f"malformed Example: an invalid tag (0) in the Example at <memory> record 0 "
        f"(payload byte 0); {HINT}"
    )


def test_packed_float_list_of_a_partial_float():
    payload = in_feature(pw.delimited(pw.FLOAT, pw.delimited(1, b"\0" * 5)))
    assert malformed(payload, {"x": tn.VarLen("float32")}) == (
        "malformed Example: a packed float list of 5 bytes (not a multiple of 4) in a "
        f"FloatList of feature 'x' at <memory> record 0 (payload byte {len(payload) - 7}); "
        f"{HINT}"
    )


def test_unpacked_float_cut_short():
    payload = in_feature(pw.delimited(pw.FLOAT, pw.tag(1, pw.FIXED32) + b"\0\0"))
    assert malformed(payload, {"x": tn.VarLen("float32")}) == (
        "malformed Example: a 4-byte field runs past the end of its message (2 bytes left) "
        f"in a FloatList of feature 'x' at <memory> record 0 (payload byte "
        f"{len(payload) - 2}); {HINT}"
    )


def test_packed_int64_list_ending_inside_a_varint():
    payload = in_feature(pw.delimited(pw.INT64, pw.delimited(1, b"\x05\x80")))
    assert malformed(payload, {"x": tn.VarLen("int64")}) == (
        "malformed Example: a packed int64 list ends inside a varint in an Int64List of "
        f"feature 'x' at <memory> record 0 (payload byte {len(payload) - 1}); {HINT}"
    )


def test_message_ending_inside_a_tag():
    payload = pw.simple_example({}) + b"\x80"
    assert malformed(payload, {"x": tn.VarLen("int64")}) == (
        f"malformed Example: the message ends inside a varint in the Example at <memory> "
        f"record 0 (payload byte {len(payload) - 1}); {HINT}"
    )


def test_sequence_example_damage_names_the_feature_list():
    steps = pw.feature_list([pw.feature(pw.INT64, [1])]) + pw.tag(1, pw.VARINT) + b"\x01"
    payload = pw.sequence_example(None, pw.features([pw.entry("s", steps)]))
    spec = tn.Sequence(sequence={"s": tn.VarLen("int64")})
    with pytest.raises(tn.CorruptRecordError) as e:
        tn.decode([payload], spec)
    assert str(e.value) == (
        "malformed SequenceExample: field 1 has wire type 0, expected 2 (length-delimited) "
        f"in a FeatureList of feature list 's' at <memory> record 0 (payload byte "
        f"{len(payload) - 2}); {HINT}"
    )


def test_errors_carry_path_record_and_offset(tmp_path):
    path = tmp_path / "bad.tfrecord"
    with tn.RecordWriter(path) as w:
        for i in range(4):
            w.write(pw.simple_example({"x": (pw.INT64, [i])}) if i != 2 else b"\x0a\x09")
    with pytest.raises(tn.CorruptRecordError) as e:
        tn.read(path, {"x": tn.FixedLen((), "int64")})
    assert (e.value.path, e.value.record, e.value.offset) == (str(path), 2, 1)
    assert isinstance(e.value, ValueError)


def reference_varints(block: bytes) -> list[int] | None:
    """The int64 values of a packed block, or None when protobuf would reject it."""
    values, shift, value, length = [], 0, 0, 0
    for b in block:
        value |= (b & 0x7F) << shift
        shift += 7
        length += 1
        if length > 10:
            return None
        if b < 0x80:
            value &= (1 << 64) - 1
            values.append(value - (1 << 64) if value >= 1 << 63 else value)
            shift = value = length = 0
    return None if length else values


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF]) | st.integers(0, 255),
        max_size=40,
    ),
    st.integers(0, 12),
)
def test_packed_int64_blocks_are_checked_like_protobuf(block, padding):
    block = bytes(block)
    payload = in_feature(pw.delimited(pw.INT64, pw.delimited(1, block)))
    # padding: more records after this one, so the block is not at the buffer's end
    payloads = [payload] + [pw.simple_example({})] * padding
    expected = reference_varints(block)
    spec = {"x": tn.VarLen("int64")}
    if expected is None:
        with pytest.raises(tn.CorruptRecordError, match="in an Int64List of feature 'x'"):
            tn.decode(payloads, spec)
    else:
        assert tn.decode(payloads, spec)["x"][0].tolist() == expected
