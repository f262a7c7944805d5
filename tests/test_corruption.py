"""Hostile input: every byte flipped, truncation at every offset, garbage, absurd lengths,
damaged compressed streams. Each gives the exact typed error naming the right record and
offset, or with on_error="skip" exactly the undamaged records; never a crash or a hang."""

from __future__ import annotations

import errno
import functools
import gzip
import os
import subprocess
import sys
import textwrap
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecnp as tn

PAYLOADS = [b"alpha", b"", bytes(range(48, 80)), b"z", b"the last record"]
HINT = "run `tfrecnp verify --salvage OUT` to copy the good records, or pass on_error='skip'"


def grouped(n: int) -> str:
    return f"{n:,}".replace(",", " ")


@pytest.fixture(scope="module")
def good(tf_write, tmp_path_factory):
    """The bytes of a small TensorFlow-written file of PAYLOADS."""
    path = tmp_path_factory.mktemp("good") / "good.tfrecord"
    return Path(tf_write(path, PAYLOADS)).read_bytes()


def _read_all(
    path, *, on_error="raise", batch_size=1024, compression="auto", verify_crc=True, how="batches"
):
    """(records yielded before any error, the error or None, the reader)."""
    reader = tn.RecordReader(
        path, on_error=on_error, compression=compression, verify_crc=verify_crc
    )
    got, error = [], None
    try:
        if how == "batches":
            for batch in reader.batches(batch_size):
                got.extend(batch)
        else:
            for frames in reader.frame_batches(batch_size, defer_crc=how == "frames-deferred"):
                deferred = how == "frames-deferred" and on_error == "raise" and verify_crc
                assert frames.verified != deferred
                frames, damage = frames.verify()
                got.extend(frames.packed())
                if damage is not None:
                    raise damage
    except tn.CorruptRecordError as e:
        error = e
    return got, error, reader


@pytest.fixture(scope="module", params=["batches", "frames", "frames-deferred"])
def read_all(request):
    """_read_all by each way of reading: payloads copied out, or left in their frames with
    their CRCs checked while reading, or after (RecordBatch.verify): the same records, the
    same errors."""
    return functools.partial(_read_all, how=request.param)


def expected_damage(data: bytes, starts: list[int], i: int, ref) -> tuple[int, str]:
    """(record, reason) for the file `data` in which byte i was damaged."""
    k = max(j for j, s in enumerate(starts) if s <= i)
    at, length = starts[k], len(PAYLOADS[k])
    if i - at < 12:
        stored = int.from_bytes(data[at + 8 : at + 12], "little")
        computed = ref.mask(ref.crc32c(data[at : at + 8]))
        return k, f"length CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"
    stored = int.from_bytes(data[at + 12 + length : at + 16 + length], "little")
    computed = ref.mask(ref.crc32c(data[at + 12 : at + 12 + length]))
    return k, f"payload CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})"


def test_the_sample_is_what_the_reference_says(good, ref):
    assert good == b"".join(ref.frame(p) for p in PAYLOADS)


def test_every_byte_flipped(good, tmp_path, ref, read_all):
    starts = ref.starts(len(p) for p in PAYLOADS)
    path = tmp_path / "flipped.tfrecord"
    for i in range(len(good)):
        data = bytearray(good)
        data[i] ^= 0xFF
        path.write_bytes(data)
        k, reason = expected_damage(bytes(data), starts, i, ref)
        at = starts[k]
        where = f"byte {i} (record {k})"
        for batch_size in (1, 2, 1024):
            got, error, _ = read_all(path, batch_size=batch_size, compression=None)
            assert got == PAYLOADS[:k], where
            assert isinstance(error, tn.CorruptRecordError) and isinstance(error, ValueError)
            assert (error.path, error.record, error.offset) == (str(path), k, at), where
            assert error.reason == reason, where
            assert str(error) == f"{reason} at {path} record {k} (byte {at}); {HINT}"

            got, error, reader = read_all(path, batch_size=batch_size, on_error="skip")
            assert error is None and got == PAYLOADS[:k] + PAYLOADS[k + 1 :], where
            assert [(e.record, e.offset, e.reason, e.skipped) for e in reader.corruptions] == [
                (k, at, reason, 16 + len(PAYLOADS[k]))
            ], where

        with pytest.warns(tn.CorruptRecordWarning) as caught:
            got, error, reader = read_all(path, on_error="warn")
        assert error is None and got == PAYLOADS[:k] + PAYLOADS[k + 1 :]
        assert [str(w.message) for w in caught] == [
            f"{reason} at {path} record {k} (byte {at}); skipped {16 + len(PAYLOADS[k])} bytes"
        ]
        # Payload damage is invisible to a header scan; header damage is not.
        if i - at < 12:
            with pytest.raises(tn.CorruptRecordError) as e:
                tn.framing.scan_file(path, use_index=False)
            assert (e.value.record, e.value.offset, e.value.reason) == (k, at, reason)
        else:
            assert tn.framing.scan_file(path, use_index=False).lengths.tolist() == [
                len(p) for p in PAYLOADS
            ]
            # Without payload CRCs the damaged payload is returned as it is.
            got, error, _ = read_all(path, verify_crc=False)
            as_stored = bytes(data[at + 12 : at + 12 + len(PAYLOADS[k])])
            assert error is None and got == [*PAYLOADS[:k], as_stored, *PAYLOADS[k + 1 :]]


def test_every_truncation(good, tmp_path, ref, read_all):
    starts = ref.starts(len(p) for p in PAYLOADS)
    path = tmp_path / "cut.tfrecord"
    for cut in range(len(good)):
        path.write_bytes(good[:cut])
        k = max(j for j, s in enumerate(starts) if s <= cut)
        if cut == starts[k]:  # a frame boundary: a shorter, valid file
            assert list(tn.RecordReader(path)) == PAYLOADS[:k]
            assert tn.count_records(path) == k
            continue
        left, at = cut - starts[k], starts[k]
        if left < 12:
            reason = f"truncated: the file ends {left} bytes into a 12-byte record header"
        else:
            reason = (
                f"truncated: the file ends {left} bytes into a record of "
                f"{16 + len(PAYLOADS[k])} bytes"
            )
        for batch_size in (1, 3, 1024):
            got, error, _ = read_all(path, batch_size=batch_size)
            assert got == PAYLOADS[:k], cut
            assert (error.record, error.offset, error.reason) == (k, at, reason), cut
            got, error, reader = read_all(path, batch_size=batch_size, on_error="skip")
            assert error is None and got == PAYLOADS[:k], cut
            assert [(e.record, e.offset, e.reason, e.skipped) for e in reader.corruptions] == [
                (k, at, reason, left)
            ]
        with pytest.raises(tn.CorruptRecordError) as e:
            tn.count_records(path)
        assert (e.value.record, e.value.offset, e.value.reason) == (k, at, reason)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_damage_inside_a_compressed_stream_is_reported_in_stream_offsets(
    good, tmp_path, ref, compression, read_all
):
    starts = ref.starts(len(p) for p in PAYLOADS)
    pack = gzip.compress if compression == "GZIP" else zlib.compress
    path = tmp_path / "damaged.tfrecord"
    for i in range(0, len(good), 3):
        data = bytearray(good)
        data[i] ^= 0x55
        path.write_bytes(pack(bytes(data)))
        k, reason = expected_damage(bytes(data), starts, i, ref)
        got, error, _ = read_all(path)
        assert got == PAYLOADS[:k]
        assert (error.record, error.offset, error.reason) == (k, starts[k], reason)
        got, error, reader = read_all(path, on_error="skip", compression=compression)
        assert got == PAYLOADS[:k] + PAYLOADS[k + 1 :]
        assert [(e.record, e.offset) for e in reader.corruptions] == [(k, starts[k])]
    for cut in range(1, len(good)):
        path.write_bytes(pack(good[:cut]))
        k = max(j for j, s in enumerate(starts) if s <= cut)
        got, error, _ = read_all(path)
        assert got == PAYLOADS[:k]
        if cut == starts[k]:
            assert error is None
        else:
            assert (error.record, error.offset) == (k, starts[k])
            assert error.reason.startswith(f"truncated: the file ends {cut - starts[k]} bytes")


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_damaged_compressed_files(tf_write, tmp_path, compression, read_all):
    """Every byte of a compressed file flipped, and every truncation: the records come back
    intact or a CorruptRecordError is raised; with on_error="skip", never an error, and only
    records that are really in the file."""
    source = tf_write(tmp_path / "c.tfrecord", PAYLOADS, compression)
    packed = Path(source).read_bytes()
    path = tmp_path / "damaged.tfrecord"
    header = range(4, 10) if compression == "GZIP" else range(0)  # mtime, flags, OS
    variants = []
    for i in range(len(packed)):
        data = bytearray(packed)
        data[i] ^= 0xFF
        variants.append((f"flip {i}", bytes(data), i in header))
    variants += [(f"cut {n}", packed[:n], n == 0) for n in range(len(packed))]
    for name, data, harmless in variants:
        path.write_bytes(data)
        for mode in ("auto", compression):
            got, error, _ = read_all(path, compression=mode)
            if harmless:
                assert error is None and got == (PAYLOADS if data else []), name
                continue
            assert isinstance(error, tn.CorruptRecordError), name
            assert got == PAYLOADS[: len(got)], name
            got, error, reader = read_all(path, compression=mode, on_error="skip")
            assert error is None, name
            assert reader.corruptions, name
            rest = iter(PAYLOADS)
            assert all(p in rest for p in got), name  # an ordered subset of the originals


def test_stream_damage_names_the_record_and_can_be_skipped(tf_write, tmp_path, read_all):
    payloads = [bytes([i]) * 3000 for i in range(200)]
    packed = Path(tf_write(tmp_path / "c.tfrecord", payloads, "GZIP")).read_bytes()
    path = tmp_path / "cut.tfrecord.gz"
    path.write_bytes(packed[: len(packed) // 2])  # the gzip stream stops mid-way
    got, error, _ = read_all(path)
    assert 0 < len(got) < len(payloads) and got == payloads[: len(got)]
    assert error.record == len(got)
    error_reason = error.reason
    assert error_reason == (
        "compressed stream is damaged (the compressed stream ends before its end marker)"
    )
    got2, error, reader = read_all(path, on_error="skip")
    assert error is None and got2 == got
    assert [(e.record, e.reason) for e in reader.corruptions] == [(len(got), error_reason)]


def test_empty_file_is_zero_records_in_every_compression(tmp_path, read_all):
    """As in TensorFlow, which reads an empty file as zero records whatever its compression."""
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    for compression in ("auto", None, "GZIP", "ZLIB"):
        got, error, reader = read_all(path, compression=compression)
        assert (got, error, reader.corruptions) == ([], None, [])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=3000))
def test_garbage_files(tmp_path_factory, data, read_all):
    path = tmp_path_factory.mktemp("garbage") / "garbage.tfrecord"
    path.write_bytes(data)
    got, error, _ = read_all(path, compression=None)
    if len(data) == 0:
        assert (got, error) == ([], None)
        return
    assert got == [] and (error.record, error.offset) == (0, 0)
    short_text = 8 <= len(data) < 12 and error.reason == "not a TFRecord file"
    if short_text:  # a length field is never all text: its top bytes are zero
        assert error.hint.startswith(("it is text", "it is JSON text"))
    elif len(data) < 12:
        assert error.reason == (
            f"truncated: the file ends {len(data)} bytes into a 12-byte record header"
        )
    elif error.reason == "not a TFRecord file":  # nothing like a frame anywhere in it
        assert error.hint.startswith(("it is ", f"its first bytes ({data[:12].hex(' ')})"))
    else:  # a frame starts later on: a TFRecord file with a damaged first header
        assert error.reason.startswith("length CRC mismatch (stored 0x")
    got, error, reader = read_all(path, compression=None, on_error="skip")
    assert (got, error) == ([], None)
    assert [(e.record, e.offset, e.skipped) for e in reader.corruptions] == [(0, 0, len(data))]
    # Whatever "auto" makes of it (garbage can look like a zlib header), no crash, typed error.
    _, error, _ = read_all(path)
    assert isinstance(error, tn.CorruptRecordError)
    _, error, _ = read_all(path, on_error="skip")
    assert error is None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(
        st.tuples(st.binary(max_size=300), st.binary(min_size=1, max_size=200)), max_size=8
    ),
    head=st.binary(max_size=40),
)
def test_skip_resynchronises_on_every_good_frame(tmp_path_factory, ref, pieces, head, read_all):
    """Garbage between good frames: skip returns every frame and reports each gap."""
    data, payloads, gaps = bytearray(head), [], []
    if head:
        gaps.append((0, 0, len(head)))
    for payload, garbage in pieces:
        data += ref.frame(payload)
        payloads.append(payload)
        gaps.append((len(payloads), len(data), len(garbage)))
        data += garbage
    path = tmp_path_factory.mktemp("resync") / "resync.tfrecord"
    path.write_bytes(data)
    got, error, reader = read_all(path, compression=None, on_error="skip", batch_size=3)
    assert error is None and got == payloads
    assert [(e.record, e.offset, e.skipped) for e in reader.corruptions] == gaps


def big_header(length: int, ref) -> bytes:
    header = length.to_bytes(8, "little")
    return header + ref.mask(ref.crc32c(header)).to_bytes(4, "little")


def test_a_length_of_two_to_the_sixty(tmp_path, ref, read_all):
    path = tmp_path / "huge.tfrecord"
    prefix = b"".join(ref.frame(p) for p in PAYLOADS[:2])
    path.write_bytes(prefix + big_header(2**60, ref) + bytes((3 << 20) - 12))
    reason = "length 1 152 921 504 606 846 976 exceeds the 3 MiB left in the file"
    got, error, _ = read_all(path)
    assert got == PAYLOADS[:2]
    assert (error.record, error.offset, error.reason) == (2, len(prefix), reason)
    assert str(error) == f"{reason} at {path} record 2 (byte {len(prefix)}); {HINT}"
    with pytest.raises(tn.CorruptRecordError) as e:
        tn.count_records(path)
    assert e.value.reason == reason
    got, error, reader = read_all(path, on_error="skip")
    assert got == PAYLOADS[:2] and error is None
    assert [(e.record, e.offset, e.skipped) for e in reader.corruptions] == [
        (2, len(prefix), 3 << 20)
    ]


@pytest.mark.parametrize(
    ("length", "tail", "reason"),
    [
        (2**64 - 1, 4, "length 18 446 744 073 709 551 615 exceeds the 16 bytes left in the file"),
        (2**63, 0, "length 9 223 372 036 854 775 808 exceeds the 12 bytes left in the file"),
        (1_000_000, 88, "truncated: the file ends 100 bytes into a record of 1 000 016 bytes"),
        (5, 8, "truncated: the file ends 20 bytes into a record of 21 bytes"),
    ],
)
def test_lengths_past_the_end(tmp_path, ref, length, tail, reason, read_all):
    path = tmp_path / "long.tfrecord"
    path.write_bytes(big_header(length, ref) + b"\x01" * tail)
    got, error, _ = read_all(path)
    assert (got, error.record, error.offset, error.reason) == ([], 0, 0, reason)


MEMORY_LIMITED = textwrap.dedent(
    """
    import gzip, os, resource, sys
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):  # else max_allocation_size_mb
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    import tfrecnp as tn
    from tfrecnp.cli import main
    plain, packed = sys.argv[1], sys.argv[2]
    try:
        bytearray(2 << 30)
    except MemoryError:
        print("limit works")
    for path in (plain, packed):
        for on_error in ("raise", "skip"):
            reader = tn.RecordReader(path, on_error=on_error)
            try:
                print(on_error, len(list(reader)))
            except tn.CorruptRecordError as e:
                print(on_error, e.reason)
        try:
            tn.count_records(path)
        except tn.CorruptRecordError as e:
            print("count", e.reason)
    print("verify", main(["verify", "--json", plain]))
    """
)


def test_huge_lengths_in_bounded_memory(tmp_path, ref):
    """Under a 1 GiB address-space limit, 2**60-byte headers (plain and inside GZIP) give
    their errors without a crash or a giant allocation."""
    body = ref.frame(b"ok") + big_header(2**60, ref) + bytes(1000)
    plain, packed = tmp_path / "huge.tfrecord", tmp_path / "huge.tfrecord.gz"
    plain.write_bytes(body)
    packed.write_bytes(gzip.compress(body))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    # under `make asan` the shadow memory needs terabytes of address space: the same 1 GiB
    # limit is then ASan's, on each allocation
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":max_allocation_size_mb=1024"
    run = subprocess.run(
        [sys.executable, "-c", MEMORY_LIMITED, str(plain), str(packed)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert "Exception ignored" not in run.stderr
    lines = run.stdout.splitlines()
    plain_reason = "length 1 152 921 504 606 846 976 exceeds the 1012 bytes left in the file"
    # a compressed stream cannot say what is left without inflating it: max_record_bytes
    packed_reason = (
        "length 1 152 921 504 606 846 976 exceeds max_record_bytes (1 GiB); if records this "
        "large are real, pass a larger max_record_bytes"
    )
    assert lines[:4] == ["limit works", f"raise {plain_reason}", "skip 1", f"count {plain_reason}"]
    assert lines[4:7] == [f"raise {packed_reason}", "skip 1", f"count {packed_reason}"]
    assert lines[-1] == "verify 1"


# --- the writer never leaves a half-written file ------------------------------------------


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_writer_exception_leaves_nothing(tmp_path, compression):
    path = tmp_path / "out.tfrecord"
    with pytest.raises(RuntimeError, match="boom"), tn.RecordWriter(path, compression) as w:
        w.write(b"x" * 1000)
        w.write_batch(bytes(100), [0, 50, 100])
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_writer_interrupt_keeps_the_previous_file(tmp_path, tf_read):
    path = tmp_path / "out.tfrecord"
    with tn.RecordWriter(path) as w:
        w.write(b"old")
    with pytest.raises(KeyboardInterrupt), tn.RecordWriter(path) as w:
        w.write(b"new" * 3_000_000)  # past the flush threshold: bytes reach the temp file
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == ["out.tfrecord"]
    assert tf_read(path) == [b"old"]


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_writer_close_leaves_exactly_the_file(tmp_path, tf_read, compression):
    path = tmp_path / "out.tfrecord"
    writer = tn.RecordWriter(path, compression=compression)
    writer.write(b"one")
    assert not path.exists()  # nothing complete-looking before close
    writer.close()
    writer.close()  # closing twice is harmless
    assert os.listdir(tmp_path) == ["out.tfrecord"]
    assert tf_read(path, compression) == [b"one"]
    with pytest.raises(ValueError) as e:
        writer.write_batch(b"ab", [0, 2])
    assert str(e.value) == f"writer for {path} is closed"


def test_a_failing_background_write_surfaces_and_leaves_nothing(tmp_path):
    """A full disk, played by a 2.5 MiB file-size limit: the error of the writer's background
    thread reaches the caller within a few batches, and the temporary file is removed."""
    script = textwrap.dedent(
        """
        import os, resource, signal, sys
        import tfrecnp as tn
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over the limit: EFBIG, not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (5 << 19, resource.RLIM_INFINITY))
        try:
            with tn.RecordWriter(sys.argv[1]) as w:
                for _ in range(8):
                    w.write_batch(bytes(1 << 20), [0, 1 << 20])
        except OSError as e:
            print(e.errno, w.records)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "out.tfrecord")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    errno_, records = int(out[0]), int(out[1])
    assert errno_ == errno.EFBIG
    assert records <= 5  # 3 buffers in flight: the third batch fails; the sixth waits for it
    assert os.listdir(tmp_path) == []


def test_a_dropped_writer_leaves_nothing(tmp_path):
    writer = tn.RecordWriter(tmp_path / "out.tfrecord")
    writer.write(b"abc")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. ResourceWarning from an unclosed file
        del writer
    assert os.listdir(tmp_path) == []


def test_a_huge_batch_size_allocates_only_for_the_records(tmp_path, ref):
    path = tmp_path / "small.tfrecord"
    path.write_bytes(b"".join(ref.frame(p) for p in PAYLOADS))
    batches = list(tn.RecordReader(path).batches(10**12))
    assert len(batches) == 1 and list(batches[0]) == PAYLOADS


def test_several_damages_across_read_chunks(tf_write, tmp_path, read_all):
    """10 000 records of 1 000 bytes (~10 MB): a payload flip in the record that straddles
    the 4 MiB mark, 5 MiB of garbage after record 5 999, and a cut in the last record.
    Skip returns exactly the intact records, each named by its true index in the file."""
    n, size = 10_000, 1016
    rng = np.random.default_rng(5)
    payloads = [rng.integers(0, 256, 1000, dtype=np.uint8).tobytes() for _ in range(n)]
    data = bytearray(Path(tf_write(tmp_path / "src.tfrecord", payloads)).read_bytes())
    flipped = (4 << 20) // size  # this record's frame crosses byte 4 MiB
    assert flipped * size < 4 << 20 < (flipped + 1) * size
    data[flipped * size + 500] ^= 0x10
    garbage = rng.integers(0, 256, 5 << 20, dtype=np.uint8).tobytes()
    data[6000 * size : 6000 * size] = garbage
    del data[-516:]  # 500 bytes of the last frame remain
    path = tmp_path / "damaged.tfrecord"
    path.write_bytes(data)

    got, error, _ = read_all(path, batch_size=4096)
    assert got == payloads[:flipped]
    assert (error.record, error.offset) == (flipped, flipped * size)
    assert error.reason.startswith("payload CRC mismatch")

    reader = tn.RecordReader(path, on_error="skip")
    survivors = [i for i in range(n) if i not in (flipped, n - 1)]
    rows = []
    for batch in reader.batches(3000):
        rows += [batch.where(row) for row in range(len(batch))]
        assert all(batch[r] == payloads[batch.where(r)[1]] for r in (0, len(batch) - 1))
    assert rows == [(str(path), i) for i in survivors]
    assert [(e.record, e.offset, e.skipped) for e in reader.corruptions] == [
        (flipped, flipped * size, size),
        (6000, 6000 * size, len(garbage)),
        (n - 1, (n - 1) * size + len(garbage), 500),
    ]
    assert [e.reason.split(" (")[0].split(":")[0] for e in reader.corruptions] == [
        "payload CRC mismatch",
        "length CRC mismatch",
        "truncated",
    ]
    assert list(tn.RecordReader(path, on_error="skip")) == [payloads[i] for i in survivors]


@pytest.mark.parametrize("batch_size", [1, 2, 3, 4, 1024])
def test_two_damaged_payloads_in_one_batch(tmp_path, ref, batch_size, read_all):
    """The first damaged record is named even when a shorter, later one is checked first."""
    payloads = [b"a" * 10, b"b" * 5000, b"c" * 3, b"d" * 7, b"e" * 2000, b"f" * 64]
    starts = ref.starts(len(p) for p in payloads)
    data = bytearray(b"".join(ref.frame(p) for p in payloads))
    data[starts[1] + 12 + 4000] ^= 0x01
    data[starts[3] + 12 + 2] ^= 0x01
    path = tmp_path / "two.tfrecord"
    path.write_bytes(data)
    got, error, _ = read_all(path, batch_size=batch_size)
    assert got == payloads[:1] and (error.record, error.offset) == (1, starts[1])
    got, error, reader = read_all(path, batch_size=batch_size, on_error="skip")
    assert got == [payloads[i] for i in (0, 2, 4, 5)]
    assert [(e.record, e.offset, e.skipped) for e in reader.corruptions] == [
        (1, starts[1], 5016),
        (3, starts[3], 23),
    ]


# --- the compiled core refuses spans outside its buffers ---------------------------------


def _gather(buf, starts, lengths, room, check=True):
    from tfrecnp._core import framing

    out = np.zeros(room, np.uint8)
    offsets = np.zeros(len(starts) + 1, np.int64)
    bad = framing.gather_payloads(
        np.frombuffer(buf, np.uint8),
        np.array(starts, np.int64),
        np.array(lengths, np.int64),
        out,
        offsets,
        check,
    )
    return bad, out, offsets


@pytest.mark.parametrize(
    ("starts", "lengths", "room", "message"),
    [
        ([100], [5], 10, "frame 0 (start 100, length 5) lies outside the buffers"),
        ([0, 30], [5, 5], 10, "frame 1 (start 30, length 5) lies outside the buffers"),
        ([0], [-1], 10, "frame 0 (start 0, length -1) lies outside the buffers"),
        ([-1], [5], 10, "frame 0 (start -1, length 5) lies outside the buffers"),
        ([0], [27], 30, "frame 0 (start 0, length 27) lies outside the buffers"),
        ([0, 21], [5, 5], 9, "frame 1 (start 21, length 5) lies outside the buffers"),
        (
            [0],
            [2**62],
            10,
            "frame 0 (start 0, length 4611686018427387904) lies outside the buffers",
        ),
    ],
)
def test_gather_refuses_spans_outside_its_buffers(ref, starts, lengths, room, message):
    buf = ref.frame(b"hello") + ref.frame(b"world")
    with pytest.raises(ValueError) as e:
        _gather(buf, starts, lengths, room)
    assert str(e.value) == message


@settings(max_examples=300, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=40), min_size=1, max_size=9),
    spans=st.lists(st.tuples(st.integers(-5, 400), st.integers(-5, 400)), max_size=9),
    room=st.integers(0, 400),
    check=st.booleans(),
)
def test_gather_on_arbitrary_spans_never_crashes(ref, payloads, spans, room, check):
    buf = b"".join(ref.frame(p) for p in payloads)
    starts, lengths = [s for s, _ in spans], [n for _, n in spans]
    try:
        bad, out, offsets = _gather(buf, starts, lengths, room, check)
    except ValueError as e:
        assert str(e).endswith("lies outside the buffers")
        return
    good = len(spans) if bad < 0 else bad
    for i in range(good):
        s, n = starts[i], lengths[i]
        assert bytes(out[offsets[i] : offsets[i + 1]]) == buf[s + 12 : s + 12 + n]
        if check:
            stored = int.from_bytes(buf[s + 12 + n : s + 16 + n], "little")
            assert ref.mask(ref.crc32c(buf[s + 12 : s + 12 + n])) == stored
    if bad >= 0:
        s, n = starts[bad], lengths[bad]
        stored = int.from_bytes(buf[s + 12 + n : s + 16 + n], "little")
        assert ref.mask(ref.crc32c(buf[s + 12 : s + 12 + n])) != stored


@pytest.mark.parametrize("check", [True, False])
def test_empty_payloads_into_an_empty_output(ref, check):
    # found by `make asan` (UBSan, from the test above): with no room the output pointer is
    # NULL, and each empty payload was copied with memcpy(NULL, p, 0), undefined behaviour
    from tfrecnp._core import framing

    buf = ref.frame(b"") * 4
    assert _gather(buf, [0, 16, 32, 48], [0, 0, 0, 0], 0, check)[0] == -1
    data, out, offsets = np.frombuffer(buf, np.uint8), np.zeros(0, np.uint8), np.zeros(5, np.int64)
    status, pos, n, *_, used = framing.gather_frames(data, 0, 4, out, 0, offsets, 0, check)
    assert (status, pos, n, used) == (framing.LIMIT, 64, 4, 0)
    assert offsets.tolist() == [0, 0, 0, 0, 0]


KINDS = {
    "garbage": lambda b, ref: b,
    "frame": lambda b, ref: ref.frame(b),
    "bad payload CRC": lambda b, ref: ref.frame(b)[:-1] + bytes([ref.frame(b)[-1] ^ 1]),
}


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.tuples(st.sampled_from(sorted(KINDS)), st.binary(max_size=80)), max_size=8),
    cut=st.integers(0, 10),
    pos=st.one_of(st.just(0), st.integers(0, 700)),
    cap=st.integers(0, 5),
)
def test_scan_and_find_on_arbitrary_bytes_agree_with_the_reference(ref, pieces, cut, pos, cap):
    """Frames (by the reference framer) and garbage in any mix, the last few bytes cut off:
    the core's header walk and resync search give what the format's rules say."""
    from tfrecnp._core import framing

    whole = b"".join(KINDS[kind](b, ref) for kind, b in pieces)
    data = whole[: max(len(whole) - cut, 0)]
    buf = np.frombuffer(data, np.uint8)
    starts, lengths = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
    if pos > len(data):
        with pytest.raises(ValueError) as e:
            framing.scan_frames(buf, pos, pos, starts, lengths)
        assert str(e.value) == f"bad window: pos {pos}, limit {pos}, buffer {len(data)}"
    else:
        got = framing.scan_frames(buf, pos, len(data), starts, lengths)
        want, frames = _walk_ref(data, pos, cap, ref)
        assert got == want
        assert (
            list(zip(starts[: got[2]].tolist(), lengths[: got[2]].tolist(), strict=True)) == frames
        )
        # the walk that leaves payloads in place: the same frames, up to the first bad
        # payload CRC when it checks them; check_payloads finds that frame afterwards
        ends = np.zeros(cap, np.int64)
        unchecked = framing.check_frames(buf, pos, cap, starts, ends, 0, 1000, False)
        assert unchecked == (*want, -1)
        spans = [(1000 + a + 12, 1000 + a + 12 + n) for a, n in frames]
        assert list(zip(starts[: want[2]].tolist(), ends[: want[2]].tolist(), strict=True)) == spans
        bad = next((k for k, (a, n) in enumerate(frames) if not _payload_ok(data, a, n, ref)), -1)
        payload_starts = np.array([a + 12 for a, _ in frames], np.int64)
        payload_ends = np.array([a + 12 + n for a, n in frames], np.int64)
        assert framing.check_payloads(buf, payload_starts, payload_ends) == bad
        checked = framing.check_frames(buf, pos, cap, starts, ends, 0, 0, True)
        if bad < 0:
            assert checked == (*want, -1)
        else:
            assert checked[1:] == (frames[bad][0], bad, -1, frames[bad][0])
    assert framing.find_frame(buf, pos) == _find_ref(data, pos, ref)


def _payload_ok(data: bytes, at: int, length: int, ref) -> bool:
    stored = int.from_bytes(data[at + 12 + length : at + 16 + length], "little")
    return ref.mask(ref.crc32c(data[at + 12 : at + 12 + length])) == stored


@pytest.mark.parametrize(
    ("starts", "ends", "message"),
    [
        ([0], [7], "payload 0 (0..7) and its CRC do not lie inside the buffer"),
        ([4], [3], "payload 0 (4..3) and its CRC do not lie inside the buffer"),
        ([-1], [2], "payload 0 (-1..2) and its CRC do not lie inside the buffer"),
    ],
)
def test_check_payloads_refuses_spans_outside_its_buffer(starts, ends, message):
    from tfrecnp._core import framing

    buf = np.zeros(10, np.uint8)
    with pytest.raises(ValueError) as e:
        framing.check_payloads(buf, np.array(starts, np.int64), np.array(ends, np.int64))
    assert str(e.value) == message


def _header_ok(data: bytes, at: int, ref) -> bool:
    stored = int.from_bytes(data[at + 8 : at + 12], "little")
    return ref.mask(ref.crc32c(data[at : at + 8])) == stored


def _walk_ref(data: bytes, pos: int, cap: int, ref):
    """scan_frames by the format's rules: ((status, pos, n, length), [(start, length)])."""
    from tfrecnp._core import framing

    frames = []
    while len(frames) < cap:
        if len(data) - pos < 12:
            return (framing.NEED_MORE, pos, len(frames), -1), frames
        if not _header_ok(data, pos, ref):
            return (framing.BAD_LENGTH_CRC, pos, len(frames), -1), frames
        length = int.from_bytes(data[pos : pos + 8], "little")
        if pos + 16 + length > len(data):
            return (framing.NEED_MORE, pos, len(frames), length), frames
        frames.append((pos, length))
        pos += 16 + length
    return (framing.LIMIT, pos, len(frames), -1), frames


def _find_ref(data: bytes, pos: int, ref):
    """find_frame by the format's rules: the first offset where a whole frame checks."""
    from tfrecnp._core import framing

    while len(data) - pos >= 12:
        if _header_ok(data, pos, ref):
            length = int.from_bytes(data[pos : pos + 8], "little")
            if pos + 16 + length > len(data):
                return framing.NEED_MORE, pos
            payload = data[pos + 12 : pos + 12 + length]
            stored = int.from_bytes(data[pos + 12 + length : pos + 16 + length], "little")
            if ref.mask(ref.crc32c(payload)) == stored:
                return framing.FOUND, pos
        pos += 1
    return framing.NOT_FOUND, pos


def test_a_failed_rename_leaves_no_temp_file(tmp_path):
    (tmp_path / "taken").mkdir()  # the target path is a directory: the final rename fails
    with pytest.raises(IsADirectoryError), tn.RecordWriter(tmp_path / "taken") as writer:
        writer.write(b"x")
    assert os.listdir(tmp_path) == ["taken"]


def test_a_missing_directory_is_named(tmp_path):
    target = tmp_path / "missing" / "out.tfrecord"
    with pytest.raises(FileNotFoundError) as e:
        tn.RecordWriter(target)
    assert str(e.value) == f"cannot write {target}: no such directory {tmp_path / 'missing'}"


def test_iter_records_takes_the_corruption_policy(tmp_path):
    path = tmp_path / "d.tfrecord"
    with tn.RecordWriter(path) as w:
        for i in range(10):
            w.write(b"record %d" % i)
    data = bytearray(path.read_bytes())
    data[12 + 2] ^= 0xFF  # inside record 0's payload
    path.write_bytes(data)
    with pytest.raises(tn.CorruptRecordError, match="payload CRC mismatch"):
        list(tn.iter_records(path))
    assert list(tn.iter_records(path, on_error="skip")) == [b"record %d" % i for i in range(1, 10)]
    with pytest.warns(tn.CorruptRecordWarning, match="record 0"):
        assert list(tn.iter_records(path, on_error="warn")) == [
            b"record %d" % i for i in range(1, 10)
        ]
    with pytest.raises(ValueError, match="on_error must be"):
        tn.iter_records(path, on_error="ignore")


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_damage_in_a_compressed_stream_shows_at_one_byte_however_it_is_read(tmp_path, compression):
    """zlib drops what a call decoded when it fails; the reader decompresses in pieces of
    its own size, so what comes before the damage does not depend on the caller's reads."""
    from tfrecnp.format.compression import DecompressingReader

    body = np.random.default_rng(3).integers(0, 4, 3 << 20, dtype=np.uint8).tobytes()
    packed = bytearray(gzip.compress(body) if compression == "GZIP" else zlib.compress(body))
    packed[-2 if compression == "ZLIB" else -6] ^= 0xFF  # the checksum at the end
    path = tmp_path / "damaged.z"
    path.write_bytes(packed)
    delivered = set()
    for size in (1000, 1 << 20, 8 << 20):
        got = 0
        with pytest.raises(zlib.error), open(path, "rb") as raw:
            reader = DecompressingReader(raw, compression)
            buf = bytearray(size)
            while n := reader.readinto(buf):
                got += n
        delivered.add(got)
    assert len(delivered) == 1 and 0 < delivered.pop() < len(body)
