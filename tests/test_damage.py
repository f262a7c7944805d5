"""The damage policy every reader reports to (format/damage.py): each on_error value, each
place listed once and warned about once, the step past damage run only when skipping, the
list shared by readers handed the same policy."""

from __future__ import annotations

import pickle
import threading
import warnings

import pytest

import tfrecnp as tn
from tfrecnp.errors import CorruptRecordError, CorruptRecordWarning, ImageDecodeError
from tfrecnp.format.damage import DamagePolicy, check_on_error
from tfrecnp.format.reader import RecordReader


def _error(record: int = 3, offset: int = 1234) -> CorruptRecordError:
    return CorruptRecordError(
        "payload CRC mismatch", path="a.tfrecord", record=record, offset=offset
    )


def _report(policy, *args, **kwargs):
    """report()'s result and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = policy.report(*args, **kwargs)
    return new, caught


@pytest.mark.parametrize("bad", ["ignore", "RAISE", ""])
def test_on_error_is_one_of_three(bad, tmp_path):
    message = f'on_error must be "raise", "skip" or "warn", not {bad!r}'
    with pytest.raises(ValueError) as e:
        DamagePolicy(bad)
    assert str(e.value) == message
    with pytest.raises(ValueError, match="on_error must be"):
        check_on_error(bad)
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    with pytest.raises(ValueError, match="on_error must be"):
        RecordReader(tmp_path / "empty.tfrecord", on_error=bad)


def test_raise_raises_the_error_and_never_steps_past_it():
    policy = DamagePolicy("raise")
    error = _error()
    stepped = []
    with pytest.raises(CorruptRecordError) as e:
        policy.report(error, lambda: stepped.append(1) or 20)
    assert e.value is error
    assert stepped == [] and policy.corruptions == [] and policy.raises
    assert not hasattr(error, "skipped")


def test_skip_lists_each_place_once_without_a_word():
    policy = DamagePolicy("skip")
    first = _error()
    new, caught = _report(policy, first, 20)
    assert new and caught == [] and not policy.raises
    assert policy.corruptions == [first] and first.skipped == 20
    # the same place again (a second pass): the step past it runs, nothing is listed twice
    stepped = []
    again = _error()
    new, caught = _report(policy, again, lambda: stepped.append(1) or 20)
    assert not new and caught == [] and stepped == [1]
    assert policy.corruptions == [first]
    # another place is another entry
    other = _error(record=4, offset=2000)
    assert policy.report(other, 7)
    assert policy.corruptions == [first, other]


def test_warn_says_what_where_and_what_was_skipped_once():
    policy = DamagePolicy("warn")
    error = _error()
    new, caught = _report(policy, error, lambda: 1_048_592)
    assert new and [w.category for w in caught] == [CorruptRecordWarning]
    assert str(caught[0].message) == (
        "payload CRC mismatch at a.tfrecord record 3 (byte 1 234); skipped 1 048 592 bytes"
    )
    assert error.skipped == 1_048_592 and policy.corruptions == [error]
    new, caught = _report(policy, _error(), 16)
    assert not new and caught == []


def test_warn_for_a_record_dropped_whole():
    policy = DamagePolicy("warn")
    error = ImageDecodeError("not a JPEG", path="b.tfrecord", record=9)
    new, caught = _report(policy, error, None)
    assert new
    assert str(caught[0].message) == "not a JPEG at b.tfrecord record 9; skipped the record"
    assert not hasattr(error, "skipped") and policy.corruptions == [error]


def test_warning_points_where_stacklevel_says():
    policy = DamagePolicy("warn")

    def reader():
        policy.report(_error(), 16, stacklevel=2)  # the reader's caller

    with pytest.warns(CorruptRecordWarning) as caught:
        reader()  # this line
    assert caught[0].filename == __file__


def test_note_lists_without_a_warning():
    policy = DamagePolicy("warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert policy.note(_error())
        assert not policy.note(_error())
    assert len(policy.corruptions) == 1


def test_a_list_cleared_from_outside_lists_again():
    policy = DamagePolicy("skip")
    policy.report(_error(), 16)
    policy.corruptions.clear()
    assert policy.report(_error(), 16)
    assert len(policy.corruptions) == 1


def test_threads_list_a_place_once():
    policy = DamagePolicy("skip")
    start = threading.Barrier(8)

    def report():
        start.wait()
        for k in range(200):
            policy.report(_error(record=k, offset=k), 16)

    threads = [threading.Thread(target=report) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e.record for e in policy.corruptions) == list(range(200))


def test_it_pickles_with_its_list():
    policy = DamagePolicy("skip")
    policy.report(_error(), 16)
    back = pickle.loads(pickle.dumps(policy))
    assert back.on_error == "skip"
    assert [(e.record, e.skipped) for e in back.corruptions] == [(3, 16)]
    assert not back.report(_error(), 16)  # still known there
    assert back.report(_error(record=5), 16)


def _damaged_file(tmp_path, ref) -> tuple[str, int]:
    """Three records, the middle one's payload damaged; (path, its frame's offset)."""
    frames = [ref.frame(b"one"), bytearray(ref.frame(b"two")), ref.frame(b"three")]
    frames[1][-1] ^= 0xFF
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(b"".join(frames))
    return str(path), len(frames[0])


def test_readers_sharing_a_policy_list_and_warn_once(tmp_path, ref):
    path, at = _damaged_file(tmp_path, ref)
    policy = DamagePolicy("warn")
    with pytest.warns(CorruptRecordWarning) as caught:
        for _ in range(2):  # two passes, two readers
            assert list(RecordReader(path, damage=policy)) == [b"one", b"three"]
    assert len(caught) == 1
    assert [(e.path, e.record, e.offset) for e in policy.corruptions] == [(path, 1, at)]
    assert policy.corruptions[0].skipped == len(ref.frame(b"two"))


def test_a_reader_reports_to_its_own_policy(tmp_path, ref):
    path, at = _damaged_file(tmp_path, ref)
    with pytest.raises(tn.CorruptRecordError) as e:
        list(RecordReader(path))
    assert (e.value.record, e.value.offset) == (1, at)
    reader = RecordReader(path, on_error="skip")
    assert reader.on_error == "skip" and reader.damage.on_error == "skip"
    assert list(reader) == [b"one", b"three"]
    assert reader.corruptions is reader.damage.corruptions
    assert [e.record for e in reader.corruptions] == [1]
