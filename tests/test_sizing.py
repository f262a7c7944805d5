"""Records per batch from a byte budget and a mean record size (_util/sizing.py), and the mean
frame size a reader judges it by before an index says more (format/reader.py)."""

from __future__ import annotations

import pytest

from tfrecnp._util.sizing import records_per_batch
from tfrecnp.format.frames import OVERHEAD_BYTES
from tfrecnp.format.reader import mean_frame_bytes


def test_the_budget_over_the_mean():
    assert records_per_batch(4096, 16, (1, 1024)) == 256
    assert records_per_batch(1000, 3, (1, 1024)) == 333  # to the nearest record
    assert records_per_batch(1000, 6, (1, 1024)) == 167


@pytest.mark.parametrize(
    ("budget", "mean", "expected"),
    [
        (4 << 20, 1, 4096),  # tiny records: at most the upper bound
        (4 << 20, 100 << 20, 64),  # huge ones: at least the lower bound
        (4 << 20, 0, 4096),  # no size known: taken as 1 byte
        (4 << 20, -5, 4096),
        (0, 100, 64),
    ],
)
def test_bounds(budget, mean, expected):
    assert records_per_batch(budget, mean, (64, 4096)) == expected


def test_a_whole_number_of_batches():
    assert records_per_batch(4 << 20, 1024, (1, 1 << 16), multiple=1000) == 4000
    assert records_per_batch(4 << 20, 1 << 20, (1, 1 << 16), multiple=32) == 32  # at least one
    assert records_per_batch(1, 1, (1, 1 << 16), multiple=1) == 1
    # rounded from the bounded target: the bound can be passed by part of a batch
    assert records_per_batch(4 << 20, 1, (1, 1 << 16), multiple=1000) == 66000


def _file(tmp_path, ref, payloads, name="f.tfrecord"):
    path = tmp_path / name
    path.write_bytes(b"".join(ref.frame(p) for p in payloads))
    return str(path)


def test_mean_frame_bytes_of_the_first_records(tmp_path, ref):
    path = _file(tmp_path, ref, [b"a" * 10, b"b" * 30, b"c" * 1000])
    assert mean_frame_bytes(path, records=2) == 20 + OVERHEAD_BYTES
    assert mean_frame_bytes(path) == (10 + 30 + 1000) / 3 + OVERHEAD_BYTES
    assert mean_frame_bytes([path, path], records=4) == (10 + 30 + 1000 + 10) / 4 + 16


def test_mean_frame_bytes_of_nothing(tmp_path, ref):
    assert mean_frame_bytes(_file(tmp_path, ref, [])) is None


def test_mean_frame_bytes_skips_damage(tmp_path, ref):
    frames = [bytearray(ref.frame(b"x" * 100)), ref.frame(b"y" * 20), ref.frame(b"z" * 40)]
    frames[0][-1] ^= 1
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(b"".join(frames))
    assert mean_frame_bytes(str(path)) == 30 + OVERHEAD_BYTES
