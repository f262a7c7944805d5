"""`tfrecnp inspect --json` output is a spec tn.open takes as-is (the parsed JSON, as well as
the text or the file); raw arrays described in it read back like TensorFlow's decode_raw;
the raw-bytes hint is kept for values that are not text."""

import json

import numpy as np
import pytest

import tfrecnp as tn
from tfrecnp.cli import main

N = 20


@pytest.fixture
def raw_file(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.random((N, 2, 3), dtype=np.float32)
    ids = np.array([b"user-%05d" % i for i in range(N)], dtype=object)  # 10 bytes of text each
    paths, _ = tn.write(
        tmp_path / "raw.tfrecord",
        {"x": x, "id": ids, "label": np.arange(N)},
        encoding={"x": "raw"},
        progress=False,
    )
    return paths[0], x


def _inspect_json(path, capsys) -> str:
    assert main(["inspect", path, "--json"]) == 0
    return capsys.readouterr().out


def test_inspect_json_is_taken_as_is_by_open(raw_file, capsys):
    path, _ = raw_file
    text = _inspect_json(path, capsys)
    want = {"id": tn.Text(), "label": tn.FixedLen((), "int64"), "x": tn.Bytes()}
    assert tn.open(path, spec=json.loads(text)).spec == want  # the parsed JSON, as-is
    assert tn.open(path, spec=text).spec == want


def test_a_raw_spec_in_json_reads_like_decode_raw(tf, raw_file, capsys):
    path, x = raw_file
    obj = json.loads(_inspect_json(path, capsys))
    obj["features"]["x"] = json.loads(tn.spec_to_json({"x": tn.Raw("float32", shape=(-1, 3))}))[
        "features"
    ]["x"]
    cols = tn.read(path, obj)
    raw = next(iter(tf.data.TFRecordDataset(path).batch(N)))
    parsed = tf.io.parse_example(raw, {"x": tf.io.FixedLenFeature([], tf.string)})
    want = tf.reshape(tf.io.decode_raw(parsed["x"], tf.float32), [N, -1, 3]).numpy()
    assert cols["x"].shape == (N, 2, 3) and np.array_equal(cols["x"], want)
    assert np.array_equal(cols["x"], x)
    bare = {"x": {"type": "Raw", "dtype": "float32", "shape": [2, 3]}}  # features only
    assert tn.open(path, spec=bare).spec == {"x": tn.Raw("float32", shape=(2, 3))}


def test_the_raw_hint_passes_over_text_of_one_length(raw_file, capsys):
    path, _ = raw_file
    assert main(["inspect", path]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert "raw array bytes?" not in rows["id"]
    assert (
        "every value is 24 bytes: raw array bytes? e.g. tn.Raw('float32', shape=(6,))"
        in (rows["x"])
    )


def test_every_command_takes_json():
    """The CLI reference (docs/cli.md) says every command takes --json: held over the
    parser's own command list, so a new command without it fails here."""
    import argparse

    from tfrecnp.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) >= 8
    for name, parser in sub.choices.items():
        options = {o for a in parser._actions for o in a.option_strings}
        assert "--json" in options, name
