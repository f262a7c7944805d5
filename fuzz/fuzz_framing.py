#!/usr/bin/env python3
"""Fuzz target: the framing reader. Any bytes as a TFRecord file (plain, or wrapped in GZIP /
ZLIB so the compressed path sees framed data), read with every on_error mode.

Input: byte 0 options (bits 0-1 wrapping: plain / GZIP / ZLIB / plain; bits 2-3 the
compression argument: "auto" / None / "GZIP" / "ZLIB"; bit 4 verify_crc=False; bit 5 a
max_record_bytes of 64), byte 1 the batch size (1 + b % 8), then the file's bytes.

Checks: on_error="raise" gives records or a typed error; "skip" and "warn" never raise;
what "raise" read before its error is a prefix of what "skip" read; a file read without
damage gives the same records through iteration, a header-only scan and count_records; no
reader returns more payload bytes than the stream holds; reading with payloads left in their
frames (their CRCs checked while reading, or after by the consumer) gives the same records,
error and corruptions as copying them out.
"""

from __future__ import annotations

import contextlib
import gzip
import zlib

from _harness import Scratch, instrumented, main, typed_errors

with instrumented():
    from tfrecnp.format.reader import RecordReader, count_records, iter_records

TYPED = typed_errors()
SCRATCH = Scratch()
WRAPS = (None, "GZIP", "ZLIB", None)
COMPRESSIONS = ("auto", None, "GZIP", "ZLIB")


def read_all(path: str, on_error: str, options: dict, batch_size: int, how: str = "copied"):
    """(records, error, corruptions) of one pass: payloads copied out of their frames, or
    left in them ("framed"; "deferred": their CRCs checked by the consumer)."""
    reader = RecordReader(path, on_error=on_error, **options)
    records: list[bytes] = []
    try:
        if how == "copied":
            for batch in reader.batches(batch_size):
                assert len(batch.offsets) == len(batch) + 1
                records.extend(batch)
        else:
            for frames in reader.frame_batches(batch_size, defer_crc=how == "deferred"):
                assert 0 < len(frames) <= batch_size
                frames, damage = frames.verify()
                records.extend(frames.packed())
                if damage is not None:
                    raise damage
    except TYPED as e:
        return records, e, reader.corruptions
    return records, None, reader.corruptions


def _same(a: tuple, b: tuple) -> bool:
    """Two passes agree: records, error (type and message) and corruptions."""

    def key(e):
        return None if e is None else (type(e), str(e))

    return (
        a[0] == b[0]
        and key(a[1]) == key(b[1])
        and [(key(e), e.skipped) for e in a[2]] == [(key(e), e.skipped) for e in b[2]]
    )


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    flags, batch_size, body = data[0], 1 + data[1] % 8, data[2:]
    wrap = WRAPS[flags & 3]
    if wrap == "GZIP":
        stream = gzip.compress(body, compresslevel=1, mtime=0)
    elif wrap == "ZLIB":
        stream = zlib.compress(body, 1)
    else:
        stream = body
    path = SCRATCH.file("f.tfrecord", stream)
    options = {
        "compression": COMPRESSIONS[flags >> 2 & 3],
        "verify_crc": not flags & 16,
        "max_record_bytes": 64 if flags & 32 else 1 << 30,
    }
    # the most payload any reading may produce: the decompressed stream, at most
    if wrap is not None:
        limit = len(body)
    else:  # plain bytes read as compressed ("auto" may take them for GZIP) inflate
        limit = len(stream) if options["compression"] is None else None

    strict, error, _ = read_all(path, "raise", options, batch_size)
    for mode in ("raise", "skip"):
        copied = read_all(path, mode, options, batch_size)
        for how in ("framed", "deferred"):
            assert _same(read_all(path, mode, options, batch_size, how), copied), (mode, how)
    for mode in ("skip", "warn"):
        loose, loose_error, corruptions = read_all(path, mode, options, batch_size)
        assert loose_error is None, f"on_error={mode!r} raised {loose_error!r}"
        assert loose[: len(strict)] == strict, "raise and skip disagree before the damage"
        if error is None:
            assert loose == strict and not corruptions, (mode, corruptions)
        else:
            assert corruptions, f"on_error={mode!r} skipped nothing where raise failed: {error}"
        if limit is not None:
            assert sum(map(len, loose)) <= limit

    if error is None:
        compression = options["compression"]
        if options["verify_crc"]:
            assert list(iter_records(path, compression=compression)) == strict
        index = next(RecordReader(path, compression=compression).indexes())
        assert index.lengths.tolist() == [len(r) for r in strict]
        assert count_records(path, compression=compression) == len(strict)
    else:
        with contextlib.suppress(TYPED):  # the header-only scan: records or a typed error
            next(RecordReader(path, **options).indexes())


if __name__ == "__main__":
    main(test_one_input)
