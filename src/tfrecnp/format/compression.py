"""TFRecord compression: TensorFlow's "GZIP" and "ZLIB" wrap the whole framed stream.

Detection reads the first bytes (a frame header's worth): a valid frame header means
uncompressed; otherwise the gzip magic (1f 8b) or a zlib header (CMF/FLG with CM=8 and a
checksum divisible by 31) names the codec. Streams decompress in bounded memory, a chunk at a time.

A pass inflates with ISA-L's igzip (`isal`, in the `gzip` extra) when it is installed, else
with Python's zlib: the same bytes, faster. Where a stream is damaged or cut short, igzip
holds back a varying number of the bytes before the damage, so there the reader starts
over with zlib and carries on after the bytes igzip delivered: what a pass delivers before
damage is zlib's, whatever the inflater. Reads by position go through
format/inflate_index.py.
"""

from __future__ import annotations

import io
import zlib
from typing import Any, BinaryIO

from .frames import is_frame_header

__all__ = ["COMPRESSIONS", "detect_compression", "normalize_compression"]

COMPRESSIONS = (None, "GZIP", "ZLIB")
WBITS = {"GZIP": 16 + zlib.MAX_WBITS, "ZLIB": zlib.MAX_WBITS}
_READ_SIZE = 1 << 18


def inflater() -> tuple[Any, tuple[type[BaseException], ...]]:
    """(the module whose decompressobj a pass uses, the errors it raises on damage): isal's
    isal_zlib when installed, else zlib."""
    global _INFLATER
    if _INFLATER is None:
        try:
            from isal import isal_zlib
        except ImportError:
            _INFLATER = (zlib, (zlib.error,))
        else:
            _INFLATER = (isal_zlib, (isal_zlib.error, zlib.error))
    return _INFLATER


_INFLATER: tuple[Any, tuple[type[BaseException], ...]] | None = None


def normalize_compression(compression: str | None, *, allow_auto: bool = True) -> str | None:
    """Map TensorFlow's spellings ("GZIP", "ZLIB", "" or None) to GZIP / ZLIB / None."""
    if compression is None:
        return None
    name = compression.upper()
    if name in ("", "NONE"):
        return None
    if name in ("GZIP", "ZLIB") or (name == "AUTO" and allow_auto):
        return name if name != "AUTO" else "auto"
    allowed = '"auto", None, "GZIP", "ZLIB"' if allow_auto else 'None, "GZIP", "ZLIB"'
    raise ValueError(f"unknown compression {compression!r}; use one of {allowed}")


def detect_compression(head: bytes) -> str | None:
    """Guess the compression of a file from its first bytes (at least HEADER_BYTES when
    available)."""
    if is_frame_header(head):
        return None
    if head[:2] == b"\x1f\x8b":
        return "GZIP"
    zlib_header = len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7
    if zlib_header and (head[0] << 8 | head[1]) % 31 == 0:
        return "ZLIB"
    return None


class DecompressingReader(io.RawIOBase):
    """A readable stream of the decompressed bytes of a GZIP or ZLIB file.

    Concatenated members (gzip -c a b) read as one stream. A stream that stops before its
    end marker raises EOFError; damaged data raises zlib.error. Bytes are decompressed
    _READ_SIZE at a time whatever the caller asks for: zlib drops what a call decoded when
    it fails, so the bytes delivered before damage do not depend on how the stream is read.
    module: a zlib-like module to inflate with (default: `inflater()`); at damage, any
    other than zlib gives way to zlib, which decompresses raw again from where it was at
    the start (raw must seek) and delivers what follows the bytes already decompressed.
    """

    def __init__(self, raw: BinaryIO, compression: str, *, module: Any = None):
        self._raw = raw
        self._origin = raw.tell() if raw.seekable() else None
        self._wbits = WBITS[compression]
        self._zlib, self._errors = (
            inflater()
            if module is None
            else (module, (getattr(module, "error", zlib.error), zlib.error))
        )
        self._codec = self._zlib.decompressobj(self._wbits)
        self._input = b""
        self._output = memoryview(b"")  # decompressed, not yet read
        self._empty = True  # an empty file is zero records whatever its compression (as in TF)
        self._flushed = False  # a truncated stream's held-back bytes were asked for
        self._made = 0  # bytes decompressed so far
        self._skip = 0  # after a change to zlib: bytes it makes that were made already

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        if not len(view):
            return 0
        if not self._output and not self._decompress():
            return 0
        n = min(len(view), len(self._output))
        view[:n] = self._output[:n]
        self._output = self._output[n:]
        return n

    def _decompress(self) -> bool:
        """The next piece of output into self._output; False at the end of the stream."""
        while True:
            if not self._input:
                self._input = self._raw.read(_READ_SIZE)
                if not self._input:
                    if not self._codec.eof and not self._empty:
                        if self._to_zlib():  # cut short: zlib says what comes before the cut
                            continue
                        tail = b"" if self._flushed else self._flush()
                        if tail and self._kept(tail):  # held back by the inflate: out first
                            return True
                        raise EOFError("the compressed stream ends before its end marker")
                    return False
            self._empty = False
            if self._codec.eof:  # another member follows
                self._codec = self._zlib.decompressobj(self._wbits)
            try:
                data = self._codec.decompress(self._input, _READ_SIZE)
            except self._errors as e:  # callers catch zlib.error
                if self._to_zlib():
                    continue
                raise zlib.error(str(e)) from None
            self._input = self._codec.unconsumed_tail or self._codec.unused_data
            if data and self._kept(data):
                return True

    def _kept(self, data: bytes) -> bool:
        """Put what data holds beyond the bytes to skip into self._output; False if none."""
        if self._skip:
            cut = min(self._skip, len(data))
            self._skip -= cut
            data = data[cut:]
            if not data:
                return False
        self._made += len(data)
        self._output = memoryview(data)
        return True

    def _to_zlib(self) -> bool:
        """At damage, an inflater other than zlib gives way to zlib, which starts over
        (skipping the bytes made so far): True if it did."""
        if self._zlib is zlib or self._origin is None:
            return False
        self._raw.seek(self._origin)
        self._zlib, self._errors = zlib, (zlib.error,)
        self._codec = zlib.decompressobj(self._wbits)
        self._input = b""
        self._skip = self._made
        self._made = 0
        return True

    def _flush(self) -> bytes:
        self._flushed = True
        try:
            return self._codec.flush()
        except self._errors:
            return b""

    def close(self) -> None:
        self._raw.close()
        super().close()


class CompressingWriter:
    """Compresses what is written to it into raw (GZIP or ZLIB, TensorFlow's level 6)."""

    def __init__(self, raw: BinaryIO, compression: str, level: int = 6):
        self._raw = raw
        self._codec = zlib.compressobj(level, zlib.DEFLATED, WBITS[compression])

    def write(self, data) -> None:
        self._raw.write(self._codec.compress(data))

    def finish(self) -> None:
        self._raw.write(self._codec.flush())
