"""Feature specs: normalisation, validation messages, the JSON form (round trip over random
specs), and conversion of TensorFlow's feature objects."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecnp as tn
from tfrecnp.example.spec import as_spec

# --- construction ------------------------------------------------------------------------


def test_shapes_and_dtypes_are_normalised():
    f = tn.FixedLen(10, np.float32)
    assert (f.shape, f.dtype, f.default) == ((10,), "float32", None)
    assert tn.FixedLen([2, 3], "int64").shape == (2, 3)
    assert tn.FixedLen((), "string").dtype == "bytes"
    assert tn.FixedLen((), bytes).dtype == "bytes"
    assert tn.VarLen(np.dtype("<i4")).dtype == "int32"
    assert tn.VarLen(">f8").dtype == "float64"
    assert tn.Raw("uint8").shape is None
    assert tn.Raw("float32", [None, 4]).shape == (-1, 4)
    assert tn.Bytes() == tn.FixedLen((), "bytes")
    assert hash(tn.Bytes()) == hash(tn.FixedLen((), "bytes"))
    assert tn.Bytes() != tn.VarLen("bytes")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: tn.FixedLen((), "complex64"),
            "dtype must be 'int64', 'float32', 'bytes' or a NumPy integer, bool or float "
            "dtype, not 'complex64'",
        ),
        (lambda: tn.FixedLen((-1,), "int64"), "FixedLen shape must hold ints >= 0, not (-1,)"),
        (lambda: tn.FixedLen("ab", "int64"), "FixedLen shape must be a tuple of ints, not 'ab'"),
        (lambda: tn.VarLen("int64", (0,)), "VarLen inner_shape (0,) holds no values"),
        (
            lambda: tn.Raw("bytes"),
            "Raw dtype must be a NumPy number or bool dtype, not 'bytes' (for the bytes "
            "themselves use tn.Bytes())",
        ),
        (
            lambda: tn.Raw("float32", (-1, -1)),
            "Raw shape must hold ints >= 0 with at most one -1, not (-1, -1)",
        ),
        (lambda: tn.FixedLen((), "nonsense"), "unknown dtype 'nonsense'"),
        (
            lambda: tn.VarLen("int32b,,bytes"),  # NumPy's comma strings: a fuzz finding
            "unknown dtype 'int32b,,bytes': one scalar type, such as 'int64'",
        ),
        (lambda: tn.Raw("i4,f4"), "unknown dtype 'i4,f4': one scalar type, such as 'int64'"),
        (lambda: tn.FixedLen((), "(2)i4"), "unknown dtype '(2)i4'"),
        (
            lambda: tn.FixedLen((2,), "int64", default=[1, 2, 3]),
            "default of shape (3,) does not fit FixedLen shape (2,)",
        ),
        (lambda: tn.FixedLen((), "uint8", default=300), "default 300 does not fit in uint8"),
        (
            lambda: tn.FixedLen((), "bytes", default=3),
            "default of a bytes feature must hold bytes, not 3",
        ),
    ],
)
def test_invalid_specs_say_why(make, message):
    with pytest.raises(ValueError) as e:
        make()
    assert str(e.value) == message


def test_defaults_broadcast_and_convert():
    f = tn.FixedLen((2, 2), "float32", default=1.5)
    assert f.default.dtype == np.float32 and f.default.tolist() == [[1.5, 1.5], [1.5, 1.5]]
    b = tn.FixedLen((2,), "bytes", default="é")
    assert b.default.tolist() == ["é".encode(), "é".encode()]


def test_spell_writes_code_that_builds_the_same_spec():
    specs = [
        tn.FixedLen((10,), "float32"),
        tn.FixedLen((), "int64", default=3),
        tn.Bytes(),
        tn.VarLen("float32", inner_shape=(4,)),
        tn.Raw("float32", shape=(10,)),
        tn.Raw("uint8"),
    ]
    spelled = [s.spell() for s in specs]
    assert spelled == [
        "tn.FixedLen((10,), 'float32')",
        "tn.FixedLen((), 'int64', default=3)",
        "tn.Bytes()",
        "tn.VarLen('float32', inner_shape=(4,))",
        "tn.Raw('float32', shape=(10,))",
        "tn.Raw('uint8')",
    ]
    assert [eval(s, {"tn": tn}) for s in spelled] == specs
    assert repr(tn.Bytes()) == "Bytes()"


def test_sequence_spec_rules():
    # one name in both maps of the record, as TensorFlow accepts it: the context column
    # is renamed, unless that name is taken too
    both = tn.Sequence(context={"a": tn.Bytes()}, sequence={"a": tn.VarLen("int64")})
    assert both.context_column("a") == "context/a"
    with pytest.raises(ValueError) as e:
        tn.Sequence(
            context={"a": tn.Bytes(), "context/a": tn.Bytes()}, sequence={"a": tn.VarLen("int64")}
        )
    assert str(e.value) == (
        "feature 'a' is both a context feature and a feature list, and its context column "
        "'context/a' is a feature name too; read one of them under a Sequence of its own"
    )
    with pytest.raises(ValueError, match="required names 'x', which is not a sequence feature"):
        tn.Sequence(sequence={"s": tn.VarLen("int64")}, required=["x"])
    with pytest.raises(ValueError, match="'s': a sequence feature takes no default"):
        tn.Sequence(sequence={"s": tn.FixedLen((), "int64", default=0)})
    with pytest.raises(ValueError, match="Raw in a sequence needs a known shape"):
        tn.Sequence(sequence={"s": tn.Raw("uint8")})
    with pytest.raises(ValueError, match="Sequence spec has no features"):
        tn.Sequence()


def test_as_spec_rejects_what_is_not_a_spec():
    with pytest.raises(TypeError) as e:
        as_spec({"x": "int64"})
    assert str(e.value) == (
        "spec: feature 'x' is 'int64'; expected tn.FixedLen, tn.VarLen, tn.Raw, tn.Bytes() "
        "or a TensorFlow feature spec"
    )
    with pytest.raises(TypeError, match="feature names must be str, not 1"):
        as_spec({1: tn.Bytes()})
    with pytest.raises(TypeError, match="not list"):
        as_spec([tn.Bytes()])


# --- JSON --------------------------------------------------------------------------------

dtypes = st.sampled_from(["int64", "float32", "bytes", "uint8", "int32", "float64", "bool"])
shapes = st.lists(st.integers(0, 5), max_size=3).map(tuple)


@st.composite
def features(draw):
    kind = draw(st.sampled_from(["fixed", "var", "raw"]))
    if kind == "fixed":
        dtype, shape = draw(dtypes), draw(shapes)
        if not draw(st.booleans()):
            return tn.FixedLen(shape, dtype)
        size = math.prod(shape)
        if dtype == "bytes":
            values = draw(st.lists(st.binary(max_size=5), min_size=size, max_size=size))
            default = np.array(values, dtype=object).reshape(shape)
        elif dtype in ("float32", "float64"):
            values = draw(st.lists(st.floats(width=32), min_size=size, max_size=size))
            default = np.array(values).reshape(shape)
        else:
            default = np.array(draw(st.lists(st.integers(0, 1), min_size=size, max_size=size)))
            default = default.reshape(shape)
        return tn.FixedLen(shape, dtype, default=default)
    if kind == "var":
        dtype = draw(dtypes)
        inner = () if dtype == "bytes" else draw(st.lists(st.integers(1, 4), max_size=2))
        return tn.VarLen(dtype, tuple(inner))
    shape = draw(st.none() | shapes)
    if shape is not None and draw(st.booleans()):
        shape = (-1, *shape[1:]) if shape else (-1,)
    return tn.Raw(draw(st.sampled_from(["uint8", "float16", "complex64", "int64"])), shape)


spec_dicts = st.dictionaries(st.text(max_size=6), features(), max_size=6)


def strict_json(text: str):
    def no_constants(name):
        raise AssertionError(f"{name} is not strict JSON")

    return json.loads(text, parse_constant=no_constants)


@settings(max_examples=150, deadline=None)
@given(spec_dicts)
def test_json_round_trip(spec):
    text = tn.spec_to_json(spec)
    obj = strict_json(text)
    assert obj["format"] == "tfrecnp.spec/1" and obj["type"] == "Example"
    back = tn.spec_from_json(text)
    assert back == spec and list(back) == list(spec)
    assert tn.spec_from_json(obj) == spec


@settings(max_examples=50, deadline=None)
@given(spec_dicts, spec_dicts)
def test_json_round_trip_of_sequences(context, sequence):
    sequence = {
        k: v
        for k, v in sequence.items()
        if k not in context
        and not (isinstance(v, tn.FixedLen) and v.default is not None)
        and not (isinstance(v, tn.Raw) and (v.shape is None or -1 in v.shape))
    }
    if not context and not sequence:
        return
    spec = tn.Sequence(context, sequence)
    assert tn.spec_from_json(tn.spec_to_json(spec)) == spec


def test_json_text_shape():
    text = tn.spec_to_json({"label": tn.FixedLen((), "int64"), "img": tn.Raw("uint8", (2, 2))})
    assert text == (
        "{\n"
        '  "format": "tfrecnp.spec/1",\n'
        '  "type": "Example",\n'
        '  "features": {\n'
        '    "label": {"type": "FixedLen", "shape": [], "dtype": "int64"},\n'
        '    "img": {"type": "Raw", "dtype": "uint8", "shape": [2, 2]}\n'
        "  }\n"
        "}"
    )


def test_json_accepts_a_bare_mapping_and_rejects_unknown_types():
    assert tn.spec_from_json('{"x": {"type": "VarLen", "dtype": "int64"}}') == {
        "x": tn.VarLen("int64")
    }
    with pytest.raises(ValueError) as e:
        tn.spec_from_json('{"x": {"type": "Sparse"}}')
    assert str(e.value) == (
        "not a feature spec: {'type': 'Sparse'} (expected a dict with type one of FixedLen, "
        "Image, Raw, Text, TfdsFloatImage, TfdsFrames, TfdsNestedFrames, TfdsShapedTensor, "
        "TfdsTensorList, TfdsUint64, TfdsZlibTensor, VarLen)"
    )
    with pytest.raises(ValueError, match="lacks 'dtype'"):
        tn.spec_from_json('{"x": {"type": "VarLen"}}')


def test_a_json_string_is_accepted_where_a_spec_is():
    text = tn.spec_to_json({"x": tn.VarLen("int64")})
    assert tn.Decoder(text).spec == {"x": tn.VarLen("int64")}


# --- TensorFlow --------------------------------------------------------------------------


def test_tensorflow_specs_convert(tf):
    ragged = tf.io.RaggedFeature
    spec = tn.spec_from_tf(
        {
            "a": tf.io.FixedLenFeature([3], tf.float32, default_value=[1.0, 2.0, 3.0]),
            "b": tf.io.FixedLenFeature([], tf.string),
            "c": tf.io.VarLenFeature(tf.int64),
            "d": tf.io.FixedLenSequenceFeature([4], tf.float32, allow_missing=True),
            "e": ragged(tf.int64),
            "f": ragged(tf.float32, partitions=[ragged.UniformRowLength(2)]),
            "g": ragged(
                tf.float32,
                value_key="kp",
                partitions=[
                    ragged.RowLengths("kp/ragged_row_lengths_0"),
                    ragged.UniformRowLength(2),
                ],
            ),
            "h": ragged(tf.int64, value_key="h"),
            "i": tf.io.FixedLenSequenceFeature(
                [2], tf.string, allow_missing=True, default_value="-"
            ),
        }
    )
    assert spec == {
        "a": tn.FixedLen(3, "float32", default=[1.0, 2.0, 3.0]),
        "b": tn.Bytes(),
        "c": tn.VarLen("int64"),
        "d": tn.VarLen("float32", inner_shape=(4,)),
        "e": tn.VarLen("int64"),
        "f": tn.VarLen("float32", inner_shape=(2,)),
        "g": tn.VarLen(
            "float32", (2,), partitions=[tn.VarLen.RowLengths("kp/ragged_row_lengths_0")], key="kp"
        ),
        "h": tn.VarLen("int64"),
        "i": tn.VarLen("bytes", (2,), default=b"-"),
    }
    assert tn.spec_from_json(tn.spec_to_json(spec)) == spec
    seq = tn.spec_from_tf(
        {"id": tf.io.FixedLenFeature([], tf.string)},
        {
            "x": tf.io.FixedLenSequenceFeature([2], tf.int64),
            "w": tf.io.VarLenFeature(tf.string),
        },
    )
    assert seq == tn.Sequence(
        context={"id": tn.Bytes()},
        sequence={"x": tn.FixedLen(2, "int64"), "w": tn.VarLen("bytes")},
        required=["x"],  # FixedLenSequenceFeature's allow_missing=False
    )
    assert tn.spec_from_json(tn.spec_to_json(seq)) == seq


def test_unsupported_tensorflow_options_say_so(tf):
    cases = [
        (
            {"s": tf.io.SparseFeature("i", "v", tf.float32, 10)},
            "feature 's': SparseFeature with any arguments is not supported; supported are "
            "FixedLenFeature, VarLenFeature, FixedLenSequenceFeature and RaggedFeature. A "
            "SparseFeature(index_key, value_key, ...) reads as {'index': tn.VarLen('int64'), "
            "'value': tn.VarLen(dtype)} (one Ragged each)",
        ),
        (
            {"q": tf.io.FixedLenSequenceFeature([], tf.int64)},
            "feature 'q': FixedLenSequenceFeature in an Example requires allow_missing=True "
            "(tf.io.parse_example refuses it too)",
        ),
        (
            {"n": tf.io.FixedLenFeature(None, tf.int64)},
            "feature 'n': FixedLenFeature has no shape (missing shape); give it one, e.g. () "
            "for one value per record",
        ),
        (
            {"u": tf.io.FixedLenFeature([None], tf.int64)},
            "feature 'u': FixedLenFeature shape [None] has an unknown dimension; for a varying "
            "first axis use FixedLenSequenceFeature (tn.VarLen)",
        ),
    ]
    for spec, message in cases:
        with pytest.raises(ValueError) as e:
            tn.spec_from_tf(spec)
        assert str(e.value) == message


def test_specs_never_import_tensorflow():
    code = (
        "import sys, tfrecnp as tn\n"
        "spec = {'x': tn.FixedLen((), 'int64'), 'y': tn.VarLen('float32')}\n"
        "tn.Decoder(tn.spec_from_json(tn.spec_to_json(spec)))\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_var_len_partitions_defaults_and_their_errors():
    # fixed row lengths innermost are an inner shape; outer ones stay partitions
    v = tn.VarLen(
        "int64",
        partitions=[
            tn.VarLen.UniformRowLength(3),
            tn.VarLen.RowSplits("s"),
            {"uniform_row_length": 2},
        ],
    )
    assert v.inner_shape == (2,) and v.ragged_rank == 3
    assert v.partitions == (tn.VarLen.UniformRowLength(3), tn.VarLen.RowSplits("s"))
    assert tn.VarLen("bytes", (2,), default="x").default == b"x"
    cases = [
        (lambda: tn.VarLen("int64", partitions=["lengths"]), "not a row partition: 'lengths'"),
        (lambda: tn.VarLen.RowLengths(""), "RowLengths needs a feature name, not ''"),
        (lambda: tn.VarLen.UniformRowLength(0), "UniformRowLength needs a length >= 1, not 0"),
        (lambda: tn.VarLen("int64", key=""), "VarLen key must be a feature name, not ''"),
        (
            lambda: tn.VarLen("int64", default=[1, 2]),
            "VarLen default is the one value rows are padded with, not [1, 2]",
        ),
        (
            lambda: tn.VarLen("int64", partitions=[tn.VarLen.RowLengths("l")], default=0),
            "VarLen default pads rows of values; it takes no partitions",
        ),
        (lambda: tn.VarLen("uint8", default=300), "default 300 does not fit in uint8"),
        (
            lambda: tn.Sequence(sequence={"s": tn.VarLen("bytes", (2,))}),
            "sequence feature 's': tn.VarLen('bytes') in a sequence takes no inner_shape",
        ),
    ]
    for make, message in cases:
        with pytest.raises(ValueError) as e:
            make()
        assert str(e.value).startswith(message), str(e.value)


def test_flat_default_is_reshaped_as_tensorflow_does():
    f = tn.FixedLen((1, 2, 1), "float32", default=[3.0, -3.0])
    assert f.default.shape == (1, 2, 1) and f.default.reshape(-1).tolist() == [3.0, -3.0]
    b = tn.FixedLen((1, 1, 1, 1), "bytes", default="tmp")  # one value: broadcast
    assert b.default.shape == (1, 1, 1, 1)
