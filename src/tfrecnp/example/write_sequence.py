"""Columns -> tf.train.SequenceExample payloads: context features plus feature lists.

A sequence column is a `Ragged` of steps per record (what `tn.read` gives for a
`tn.Sequence` spec's sequence features): its values hold one entry per step -- an ndarray
[steps, *shape] (FixedLen steps), a Ragged (VarLen steps) or a BytesColumn (one bytes value
per step). The steps are encoded by the compiled Example encoder as if each were a record
holding one feature; the Feature message inside each of those payloads is cut out (it is
the payload's tail, after a header whose size the lengths determine) and the pieces are
placed into FeatureList / FeatureLists / SequenceExample framing by NumPy: no Python work
per record or per step.

Wire layout (tensorflow/core/example/example.proto), in upb's deterministic order::

    SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
    FeatureLists { map<string, FeatureList> feature_list = 1; }
    FeatureList { repeated Feature feature = 1; }
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core import encode, framing
from .._util.offsets import offsets_of
from ..errors import SchemaError
from .columns import LazyRagged, Ragged

__all__ = ["SequenceColumn", "encode_sequence_examples", "varints"]


def varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The protobuf varints of non-negative int64 values: (bytes, n + 1 offsets)."""
    values = np.asarray(values, np.uint64)
    size = _varint_size(values)
    offsets = offsets_of(size)
    out = np.empty(int(offsets[-1]), np.uint8)
    for k in range(int(size.max(initial=0))):
        has = size > k
        byte = (values[has] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (size[has] > k + 1).astype(np.uint64) << np.uint64(7)
        out[offsets[:-1][has] + k] = (byte | more).astype(np.uint8)
    return out, offsets


def _varint_size(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, np.uint64)
    size = np.ones(len(values), np.int64)
    for k in range(1, 10):
        size += values >= np.uint64(1 << (7 * k))
    return size


def _join(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> tuple:
    """Per row, the concatenation of the parts in order; a part is (source bytes, n starts,
    n lengths). Returns (bytes, n + 1 offsets)."""
    total = np.zeros(n, np.int64)
    for _, _, lengths in parts:
        total += lengths
    offsets = offsets_of(total)
    out = np.empty(int(offsets[-1]), np.uint8)
    at = offsets[:-1].copy()
    for src, starts, lengths in parts:
        if len(src):
            framing.gather_ranges(
                np.ascontiguousarray(src),
                np.ascontiguousarray(starts, np.int64),
                np.ascontiguousarray(lengths, np.int64),
                out,
                at,
            )
        at += lengths
    return out, offsets


def _field(tag: int, data: np.ndarray, offsets: np.ndarray) -> tuple:
    """Each row's bytes as a length-delimited field: tag, varint length, the bytes."""
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    heads, head_off = varints(lengths)
    tags = np.full(1, tag, np.uint8)
    return _join(
        [
            (tags, np.zeros(n, np.int64), np.ones(n, np.int64)),
            (heads, head_off[:-1], np.diff(head_off)),
            (data, offsets[:-1], lengths),
        ],
        n,
    )


class SequenceColumn:
    """A feature list: a Ragged (or LazyRagged) of steps per record."""

    def __init__(self, name: str, col: Any, make_column: Any, raw: bool):
        if isinstance(col, (Ragged, LazyRagged)):
            splits = np.asarray(col.row_splits[:], np.int64)
            steps = col.values
        else:
            raise SchemaError(
                f"sequence feature {name!r} is a {type(col).__name__}; a feature list needs "
                "a tn.Ragged of steps per record (values: an array [steps, ...], a tn.Ragged "
                "of rows, or a tn.BytesColumn)"
            )
        if isinstance(steps, LazyRagged):
            steps = Ragged(steps.values, np.asarray(steps.row_splits[:], np.int64))
        if isinstance(steps, Ragged) and isinstance(steps.values, (Ragged, LazyRagged)):
            raise SchemaError(
                f"sequence feature {name!r}: each step holds rows of rows; a step of a "
                "feature list is one Feature (a flat list of values)"
            )
        self.name, self.key = name, name.encode("utf-8")
        self.splits = splits
        self.n = len(splits) - 1
        self.steps = make_column(name, steps, raw)
        self.desc = self.steps.desc
        total = max(1, int(splits[-1]) if len(splits) else 0)
        self.row_bytes = self.steps.row_bytes * total / max(1, self.n)

    def release(self, a: int, b: int) -> None:
        self.steps.release(int(self.splits[a]), int(self.splits[b]))

    def entries(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Records a..b: this feature's FeatureLists map entry, as a field (tag 1)."""
        s0, s1 = int(self.splits[a]), int(self.splits[b])
        m = b - a
        if s1 > s0:
            feature = self.steps.feature(s0, s1)
            try:
                data, offsets = encode.encode_examples([feature], s1 - s0)
            except encode.EncodeError as e:
                step = s0 + e.row
                record = a + int(np.searchsorted(self.splits[a : b + 1], step, "right")) - 1
                raise SchemaError(
                    f"sequence feature {self.name!r} record {record} step "
                    f"{step - int(self.splits[record])}: {e.reason}"
                ) from None
            # each payload: 0A L1 0A L2 0A len(key) key 12 F <Feature of F bytes>
            sizes = np.diff(offsets)
            feat = _feature_sizes(sizes, len(self.key))
            start = offsets[:-1] + sizes - feat
            heads, head_off = varints(feat)
            tag = np.full(1, 0x0A, np.uint8)
            steps = s1 - s0
            pieces, piece_off = _join(
                [
                    (tag, np.zeros(steps, np.int64), np.ones(steps, np.int64)),
                    (heads, head_off[:-1], np.diff(head_off)),
                    (data, start, feat),
                ],
                steps,
            )
        else:
            pieces, piece_off = np.empty(0, np.uint8), np.zeros(1, np.int64)
        rows = self.splits[a : b + 1] - s0
        lists = piece_off[rows]  # FeatureList of record i: pieces[lists[i]:lists[i + 1]]
        value_data, value_off = _field(0x12, pieces, lists)
        key = np.frombuffer(bytes([0x0A]) + _varint_bytes(len(self.key)) + self.key, np.uint8)
        entry = _join(
            [
                (key, np.zeros(m, np.int64), np.full(m, len(key), np.int64)),
                (value_data, value_off[:-1], np.diff(value_off)),
            ],
            m,
        )
        return _field(0x0A, *entry)


def _varint_bytes(value: int) -> bytes:
    data, _ = varints(np.array([value]))
    return data.tobytes()


def _feature_sizes(sizes: np.ndarray, key_len: int) -> np.ndarray:
    """The size F of the Feature at the end of each single-feature Example payload of the
    given sizes: size = 1 + v(L1) + L1, L1 = 1 + v(L2) + L2, L2 = 2 + v(k) + k + v(F) + F."""
    fixed = 2 + int(_varint_size(np.array([key_len]))[0]) + key_len
    out = np.full(len(sizes), -1, np.int64)
    for head in range(fixed + 3, fixed + 3 + 3 * 10):
        f = sizes - head
        ok = f >= 0
        l2 = fixed + _varint_size(np.maximum(f, 0)) + f
        l1 = 1 + _varint_size(np.maximum(l2, 0)) + l2
        match = ok & (1 + _varint_size(np.maximum(l1, 0)) + l1 == sizes) & (out < 0)
        out[match] = f[match]
    if (out < 0).any():  # pragma: no cover (the encoder's layout changed)
        raise AssertionError("could not find the Feature inside an encoded step")
    return out


def encode_sequence_examples(
    context: list, sequence: list[SequenceColumn], a: int, b: int, encode_context: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Records a..b as SequenceExample payloads: (bytes, b - a + 1 offsets)."""
    m = b - a
    parts = []
    if context:
        data, offsets = encode_context(context, a, b)
        parts.append((data, offsets[:-1], np.diff(offsets)))
    entries = [c.entries(a, b) for c in sequence]
    lists = _join([(d, o[:-1], np.diff(o)) for d, o in entries], m)
    data, offsets = _field(0x12, *lists)
    parts.append((data, offsets[:-1], np.diff(offsets)))
    return _join(parts, m)
