"""Every public exception class lives in tfrecnp.errors; the modules that used to define one
still export the same class; each pickles with its fields (workers send them home)."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

import tfrecnp
import tfrecnp as tn
from tfrecnp import errors

ROOT = Path(tfrecnp.__file__).parent
EXCEPTION_BASES = ("Error", "Warning", "Exception")


def _exception_classes() -> list[tuple[str, str]]:
    """(module path, class name) of every class whose name or a base's ends in Error,
    Warning or Exception, in the Python sources."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [ast.unparse(b).split(".")[-1] for b in node.bases]
            if any(n.endswith(EXCEPTION_BASES) for n in [node.name, *bases]):
                found.append((path.relative_to(ROOT).as_posix(), node.name))
    return found


def test_every_public_exception_class_is_defined_in_errors():
    classes = _exception_classes()
    assert ("errors.py", "TFRecordError") in classes  # the walk sees them
    elsewhere = [f"{p}: {name}" for p, name in classes if p != "errors.py" and name[0] != "_"]
    assert not elsewhere, "define these in tfrecnp/errors.py:\n" + "\n".join(elsewhere)
    defined = {name for p, name in classes if p == "errors.py"}
    assert defined == set(errors.__all__)


def test_old_homes_export_the_same_classes():
    from tfrecnp.data import files
    from tfrecnp.example import image

    assert files.RandomAccessError is errors.RandomAccessError is tn.RandomAccessError
    assert image.ImageDecodeError is errors.ImageDecodeError


def test_errors_subclass_the_builtins_callers_catch():
    assert issubclass(errors.RandomAccessError, (errors.TFRecordError, ValueError))
    assert issubclass(errors.ImageDecodeError, errors.CorruptRecordError)
    assert issubclass(errors.ImageDecodeError, ValueError)
    assert issubclass(errors.CorruptRecordWarning, UserWarning)


def _roundtrip(error: BaseException) -> BaseException:
    return pickle.loads(pickle.dumps(error))


def test_an_image_error_pickles_with_its_rows_and_feature():
    error = errors.ImageDecodeError("not a JPEG", path="a.tfrecord", record=3, hint="re-encode")
    error.rows, error.reasons, error.feature = [3, 5], {3: "bad", 5: "worse"}, "image"
    back = _roundtrip(error)
    assert type(back) is errors.ImageDecodeError
    assert str(back) == str(error) == "not a JPEG at a.tfrecord record 3; re-encode"
    assert (back.path, back.record, back.offset, back.reason, back.hint) == (
        "a.tfrecord",
        3,
        -1,
        "not a JPEG",
        "re-encode",
    )
    assert (back.rows, back.reasons, back.feature) == ([3, 5], {3: "bad", 5: "worse"}, "image")


@pytest.mark.parametrize("cls", [errors.RandomAccessError, errors.SchemaError])
def test_a_message_error_pickles(cls):
    back = _roundtrip(cls("why"))
    assert type(back) is cls and str(back) == "why"


def test_a_message_never_names_a_negative_record():
    error = errors.CorruptRecordError("stream ends early", path="a.gz", record=-1, offset=1000)
    assert str(error) == "stream ends early at a.gz (byte 1 000)"
    named = errors.CorruptRecordError("bad", path="a.tfrecord", record=3, offset=24)
    assert str(named) == "bad at a.tfrecord record 3 (byte 24)"


def test_a_file_changed_error_says_the_size_now_and_then_and_pickles(tmp_path):
    path = tmp_path / "f.tfrecord"
    path.write_bytes(b"x" * 100)
    error = errors.file_changed(str(path), 7, 560, 4096, "the read came up short")
    assert isinstance(error, errors.CorruptRecordError)
    assert (error.size, error.expected, error.record, error.offset) == (100, 4096, 7, 560)
    assert "it is now 100 bytes, 4 096 when the pass began" in str(error)
    again = _roundtrip(error)
    assert type(again) is errors.FileChangedError and str(again) == str(error)
    assert (again.size, again.expected) == (100, 4096)
    path.unlink()
    assert "it is gone" in str(errors.file_changed(str(path), 0, 0, 4096))
    assert str(errors.FileChangedError("a worker's message")) == "a worker's message"
