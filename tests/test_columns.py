"""Ragged and BytesColumn against plain Python lists: indexing, slicing, take, padding,
concatenation, nesting, and the checks on what they are built from."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp.example.columns import concat_columns, take_column

rows_of_ints = st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=8), max_size=12)
rows_of_bytes = st.lists(st.lists(st.binary(max_size=6), max_size=5), max_size=10)


def ragged(rows: list[list[int]]) -> tn.Ragged:
    return tn.Ragged.from_lengths(
        np.array([v for r in rows for v in r], np.int64), [len(r) for r in rows]
    )


@settings(max_examples=100, deadline=None)
@given(rows=rows_of_ints, data=st.data())
def test_ragged_behaves_like_a_list_of_rows(rows, data):
    r = ragged(rows)
    n = len(rows)
    assert len(r) == n
    assert r.to_list() == rows
    assert r.lengths.tolist() == [len(x) for x in rows]
    assert [r[i].tolist() for i in range(n)] == rows
    if n:
        i = data.draw(st.integers(-n, n - 1))
        assert r[i].tolist() == rows[i]
    a, b = data.draw(st.integers(-n - 2, n + 2)), data.draw(st.integers(-n - 2, n + 2))
    step = data.draw(st.sampled_from([None, 1, 2, -1]))
    assert r[a:b:step].to_list() == rows[a:b:step]
    picks = data.draw(st.lists(st.integers(0, n - 1), max_size=6)) if n else []
    assert r.take(picks).to_list() == [rows[k] for k in picks]
    assert r[np.array(picks, np.int64)].to_list() == [rows[k] for k in picks]
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    assert r[mask].to_list() == [x for x, m in zip(rows, mask, strict=True) if m]


@settings(max_examples=100, deadline=None)
@given(rows=rows_of_ints, length=st.none() | st.integers(0, 10), value=st.integers(-5, 5))
def test_to_padded_cuts_and_pads(rows, length, value):
    width = max((len(x) for x in rows), default=0) if length is None else length
    expected = [(x + [value] * width)[:width] for x in rows]
    padded = ragged(rows).to_padded(length, value=value)
    assert padded.shape == (len(rows), width) and padded.dtype == np.int64
    assert padded.tolist() == expected


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(rows_of_ints, min_size=1, max_size=4))
def test_concat(parts):
    joined = tn.Ragged.concat([ragged(p) for p in parts])
    assert joined.to_list() == [row for p in parts for row in p]
    assert concat_columns([ragged(p) for p in parts]).to_list() == joined.to_list()


@settings(max_examples=100, deadline=None)
@given(rows=rows_of_bytes, data=st.data())
def test_bytes_columns_behave_like_lists(rows, data):
    flat = [v for r in rows for v in r]
    col = tn.BytesColumn.from_list(flat)
    n = len(flat)
    assert len(col) == n and col.to_list() == flat and list(col) == flat
    assert col.lengths.tolist() == [len(v) for v in flat]
    arr = col.to_numpy()
    assert arr.dtype == object and arr.tolist() == flat
    if n:
        i = data.draw(st.integers(-n, n - 1))
        assert col[i] == flat[i]
    a, b = data.draw(st.integers(-n - 1, n + 1)), data.draw(st.integers(-n - 1, n + 1))
    assert col[a:b].to_list() == flat[a:b]
    assert col[a:b:2].to_list() == flat[a:b:2]
    picks = data.draw(st.lists(st.integers(0, n - 1), max_size=6)) if n else []
    assert col.take(picks).to_list() == [flat[k] for k in picks]
    assert take_column(col, picks).to_list() == [flat[k] for k in picks]
    half = n // 2
    assert tn.BytesColumn.concat([col[:half], col[half:]]).to_list() == flat
    r = tn.Ragged.from_lengths(col, [len(x) for x in rows])
    assert r.to_list() == rows
    assert [r[i].tolist() for i in range(len(rows))] == rows
    assert r[1:].to_list() == rows[1:]
    width = max((len(x) for x in rows), default=0)
    assert r.to_padded().tolist() == [x + [b""] * (width - len(x)) for x in rows]


def test_inner_shapes_and_nesting():
    values = np.arange(12, dtype=np.float32).reshape(6, 2)
    r = tn.Ragged(values, [0, 1, 1, 6])
    assert r.inner_shape == (2,) and r.dtype == np.float32
    assert r[2].shape == (5, 2)
    assert r.to_padded(2, value=-1).tolist() == [
        [[0, 1], [-1, -1]],
        [[-1, -1], [-1, -1]],
        [[2, 3], [4, 5]],
    ]
    nested = tn.Ragged(tn.Ragged(np.arange(5), [0, 2, 2, 5]), [0, 2, 3])
    assert nested.to_list() == [[[0, 1], []], [[2, 3, 4]]]
    assert nested[1].to_list() == [[2, 3, 4]]
    assert nested.take([1, 0]).to_list() == [[[2, 3, 4]], [[0, 1], []]]
    assert tn.Ragged.concat([nested, nested[1:]]).to_list() == [
        [[0, 1], []],
        [[2, 3, 4]],
        [[2, 3, 4]],
    ]
    # rows of rows pad level by level, each to its longest (tf.RaggedTensor.to_tensor)
    assert nested.to_padded(value=-1).tolist() == [
        [[0, 1, -1], [-1, -1, -1]],
        [[2, 3, 4], [-1, -1, -1]],
    ]
    assert nested.ragged_rank == 2 and nested.flat_values.tolist() == [0, 1, 2, 3, 4]
    assert [s.tolist() for s in nested.nested_row_splits] == [[0, 2, 3], [0, 2, 2, 5]]
    again = tn.Ragged.from_nested_row_splits(np.arange(5), [[0, 2, 3], [0, 2, 2, 5]])
    assert again == nested


def test_from_list():
    assert tn.Ragged.from_list([[1, 2], [], [3]]).values.dtype == np.int64
    assert tn.Ragged.from_list([[b"a"], []]).to_list() == [[b"a"], []]
    boxes = tn.Ragged.from_list([np.ones((2, 4)), np.zeros((0, 4))])
    assert boxes.inner_shape == (4,) and boxes.lengths.tolist() == [2, 0]


def test_equality():
    assert ragged([[1], []]) == ragged([[1], []])
    assert ragged([[1], []]) != ragged([[], [1]])
    nan = tn.Ragged(np.array([np.nan], np.float32), [0, 1])
    assert nan == tn.Ragged(np.array([np.nan], np.float32), [0, 1])
    assert tn.BytesColumn.from_list([b"a"]) == tn.BytesColumn.from_list([b"a"])


@pytest.mark.parametrize(
    ("splits", "message"),
    [
        ([1, 2], "row_splits must start at 0, not 1"),
        ([0, 2, 1], "row_splits must not decrease"),
        ([0, 1], "row_splits ends at 1 but there are 2 values"),
        ([], "row_splits must be a 1-D array of n + 1 offsets, got shape (0,)"),
    ],
)
def test_ragged_checks_its_splits(splits, message):
    with pytest.raises(ValueError) as e:
        tn.Ragged(np.arange(2), splits)
    assert str(e.value) == message


def test_bytes_column_checks_its_buffers():
    with pytest.raises(ValueError, match="data must be a 1-D uint8 array, not int64"):
        tn.BytesColumn(np.arange(3), [0, 3])
    with pytest.raises(ValueError, match="offsets ends at 2 but there are 3 values"):
        tn.BytesColumn(b"abc", [0, 2])
    col = tn.BytesColumn(b"abc", [0, 1, 3])
    assert col.to_list() == [b"a", b"bc"]
    with pytest.raises(IndexError, match="row 2 out of range for 2 rows"):
        col[2]
    with pytest.raises(IndexError, match="row index out of range for 2 rows"):
        col.take([5])


def test_from_row_splits_checks_unless_told_not_to():
    """The TensorFlow spelling: validate=True (the default) checks and converts like the
    constructor; validate=False takes the buffers as they are, for callers that built them."""
    values = np.arange(3, dtype=np.int16)
    checked = tn.Ragged.from_row_splits(values, [0, 1, 3])
    assert checked.to_list() == [[0], [1, 2]] and checked.row_splits.dtype == np.int64
    with pytest.raises(ValueError, match=r"^row_splits must not decrease$"):
        tn.Ragged.from_row_splits(values, [0, 2, 1, 3])
    splits = np.array([0, 2, 3], np.int64)
    taken = tn.Ragged.from_row_splits(values, splits, validate=False)
    assert taken.values is values and taken.row_splits is splits
    assert taken.to_list() == [[0, 1], [2]]
    nested = tn.Ragged.from_row_splits(taken, np.array([0, 2]), validate=False)
    assert nested.to_list() == [[[0, 1], [2]]]
    with pytest.raises(TypeError):
        tn.Ragged.from_row_splits(values, splits, False)  # validate is keyword-only


def test_bytes_from_offsets_checks_unless_told_not_to():
    col = tn.BytesColumn.from_offsets(b"abc", [0, 1, 3])
    assert col.to_list() == [b"a", b"bc"] and col.offsets.dtype == np.int64
    with pytest.raises(ValueError, match=r"^offsets ends at 2 but there are 3 values$"):
        tn.BytesColumn.from_offsets(b"abc", [0, 2])
    data, offsets = np.frombuffer(b"abc", np.uint8), np.array([0, 2, 3], np.int64)
    taken = tn.BytesColumn.from_offsets(data, offsets, validate=False)
    assert taken.data is data and taken.offsets is offsets
    assert taken.to_list() == [b"ab", b"c"]


def test_the_core_gather_of_byte_ranges_checks_every_range():
    from tfrecnp._core import framing

    src = np.frombuffer(b"abcdefghij", np.uint8)
    out = np.zeros(6, np.uint8)
    starts, lengths = np.array([8, 0, 3], np.int64), np.array([2, 1, 3], np.int64)
    assert framing.gather_ranges(src, starts, lengths, out) == 6
    assert out.tobytes() == b"ij" + b"a" + b"def"
    out[:] = 0  # scattered: each range to its own place
    framing.gather_ranges(src, starts, lengths, out, np.array([4, 3, 0], np.int64))
    assert out.tobytes() == b"def" + b"a" + b"ij"
    bad = [
        (np.array([9], np.int64), np.array([2], np.int64), None),  # past the source's end
        (np.array([-1], np.int64), np.array([1], np.int64), None),  # before its start
        (np.array([0], np.int64), np.array([-3], np.int64), None),  # a negative length
        (np.array([0], np.int64), np.array([7], np.int64), None),  # more than out holds
        (np.array([0], np.int64), np.array([2], np.int64), np.array([5], np.int64)),
        (np.array([0], np.int64), np.array([1 << 62], np.int64), None),  # absurd length
    ]
    for s, n, at in bad:
        with pytest.raises(ValueError, match=r"does not fit the source or output"):
            framing.gather_ranges(src, s, n, out, at)


def test_the_core_gather_from_several_parts_checks_every_range():
    from tfrecnp._core import framing

    parts = [
        np.frombuffer(b"abcdef", np.uint8),
        np.frombuffer(b"XYZ", np.uint8),
        np.empty(0, np.uint8),
    ]
    out = np.zeros(6, np.uint8)
    which, starts = np.array([1, 0, 1, 2], np.int64), np.array([1, 4, 0, 0], np.int64)
    lengths, at = np.array([2, 2, 1, 0], np.int64), np.array([4, 0, 2, 6], np.int64)
    assert framing.gather_parts(parts, which, starts, lengths, out, at) == 5
    assert out.tobytes() == b"efX\x00YZ"
    one = np.ones(1, np.int64)
    bad = [
        (3 * one, 0 * one, one, 0 * one),  # no such part
        (-one, 0 * one, one, 0 * one),
        (one, 2 * one, 2 * one, 0 * one),  # past its part's end
        (2 * one, 0 * one, one, 0 * one),  # an empty part
        (0 * one, -one, one, 0 * one),
        (0 * one, 0 * one, -3 * one, 0 * one),
        (0 * one, 0 * one, 2 * one, 5 * one),  # past the output's end
        (0 * one, 0 * one, (1 << 62) * one, 0 * one),
    ]
    for w, s, n, a in bad:
        with pytest.raises(ValueError, match=r"does not fit its part or the output"):
            framing.gather_parts(parts, w, s, n, out, a)
    with pytest.raises(ValueError, match="differ in length"):
        framing.gather_parts(parts, which[:2], starts, lengths, out, at)


def test_bytes_to_numpy_keeps_every_byte_of_equal_width_values():
    # values of one width take NumPy's fast path; trailing and leading NULs must survive
    values = [b"ab\x00", b"\x00cd", b"xyz", b"\x00\x00\x00"]
    col = tn.BytesColumn.from_list(values)
    out = col.to_numpy()
    assert out.dtype == object and out.tolist() == values
    assert all(type(v) is bytes for v in out)
    assert col[1:3].to_numpy().tolist() == values[1:3]  # a view with offsets not at 0
    mixed = tn.BytesColumn.from_list([b"a", b"", b"xyz"])
    assert mixed.to_numpy().tolist() == [b"a", b"", b"xyz"]


def test_offsets_are_made_by_one_function():
    """n + 1 offsets from n lengths, and byte strings packed with theirs: the layout every
    variable-length buffer shares (BytesColumn.from_list, RecordBatch from payloads)."""
    from tfrecnp._util.offsets import offsets_of, pack_bytes

    assert offsets_of([2, 0, 3]).tolist() == [0, 2, 2, 5]
    assert offsets_of(np.array([], np.int64)).tolist() == [0]
    assert offsets_of([1]).dtype == np.int64
    data, offsets = pack_bytes([b"ab", b"", memoryview(b"cde")])
    assert data.tobytes() == b"abcde" and offsets.tolist() == [0, 2, 2, 5]
    assert data.dtype == np.uint8 and not data.flags.writeable
    data, offsets = pack_bytes([])
    assert len(data) == 0 and offsets.tolist() == [0]
