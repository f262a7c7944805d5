# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Column buffers -> serialized tf.train.Example payloads, a whole batch per call.

Wire format written (proto3; tag byte = field << 3 | wire type)::

    Example   0x0A len Features
    Features  per feature, keys in the order given (the caller sorts them):
              0x0A len MapEntry
    MapEntry  0x0A len key   0x12 len Feature
    Feature   0x0A len BytesList | 0x12 len FloatList | 0x1A len Int64List
    BytesList per value: 0x0A len bytes
    FloatList 0x0A len(4 n) float32 LE ...      (packed; omitted when n == 0)
    Int64List 0x0A len varints ...              (packed; negatives are 10-byte varints)

This is the byte layout of TensorFlow's ``Example.SerializeToString(deterministic=True)``.

A feature is described by buffers, never by Python objects per record:

- kind FLOAT: float32 values; INT64: int64 values; BYTES: a uint8 buffer holding the
  values back to back, with value i at ``data[voff[i]:voff[i + 1]]`` (or, with no voff,
  every value ``vstride`` bytes long).
- Row r holds values ``splits[r]:splits[r + 1]`` (or, with no splits, ``rstride`` values
  starting at ``r * rstride``).

Encoding is two passes over the rows: `measure` computes each record's exact size (and
checks every split and offset against the buffers), the caller allocates the output once,
and `fill` writes into it, checking that each record ends exactly where pass one said.
Both passes release the GIL and may run on disjoint row ranges in parallel threads.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

import numpy as np

cdef extern from "varint_size.h":
    int tfrecnp_varint_size(uint64_t v) noexcept nogil

cdef enum Kind:
    K_BYTES = 0
    K_FLOAT = 1
    K_INT64 = 2

cdef enum Status:
    # Status codes of measure / fill; `EncodeError.reason` spells them out.
    S_OK = 0
    S_BAD_SPLITS = 1      # row splits decrease, or point outside the values
    S_BAD_OFFSETS = 2     # value offsets decrease, or point outside the bytes
    S_TOO_LARGE = 3       # a record would reach 2 GiB, protobuf's limit
    S_CHANGED = 4         # pass two disagrees with pass one: the input changed meanwhile

cdef int64_t MAX_RECORD_C = (1 << 31) - 1

BYTES = K_BYTES
FLOAT = K_FLOAT
INT64 = K_INT64
OK = S_OK
BAD_SPLITS = S_BAD_SPLITS
BAD_OFFSETS = S_BAD_OFFSETS
TOO_LARGE = S_TOO_LARGE
CHANGED = S_CHANGED
MAX_RECORD = MAX_RECORD_C  # protobuf refuses messages of 2 GiB and more

cdef uint8_t LIST_TAG[3]
LIST_TAG[0] = 0x0A  # bytes_list
LIST_TAG[1] = 0x12  # float_list
LIST_TAG[2] = 0x1A  # int64_list

_REASONS = {
    BAD_SPLITS: "row splits decrease or point past the values",
    BAD_OFFSETS: "value offsets decrease or point past the bytes",
    TOO_LARGE: "the record would be 2 GiB or larger, more than protobuf allows",
    CHANGED: "the input changed while it was being encoded",
}


class EncodeError(ValueError):
    """Raised by measure / fill: .code, .row (in the batch), .feature (its index), .reason."""

    def __init__(self, code, row, feature):
        self.code = code
        self.row = row
        self.feature = feature
        self.reason = _REASONS.get(code, f"status {code}")
        super().__init__(f"{self.reason} (row {row}, feature {feature})")


cdef struct Feat:
    int kind
    const uint8_t *key
    Py_ssize_t key_len
    Py_ssize_t key_part         # bytes of `0x0A len key` inside the map entry
    const uint8_t *data
    int64_t count               # values (FLOAT, INT64) or bytes (BYTES) in data
    const int64_t *voff         # BYTES: value offsets, nvals + 1 of them, or NULL
    int64_t nvals               # BYTES: number of values
    int64_t vstride             # BYTES without voff: bytes per value
    const int64_t *splits       # n + 1 row splits, or NULL
    int64_t rstride             # without splits: values per row


cdef inline int vsize(uint64_t v) noexcept nogil:
    return tfrecnp_varint_size(v)


cdef inline uint8_t *put_varint(uint8_t *p, uint64_t v) noexcept nogil:
    while v >= 0x80:
        p[0] = <uint8_t>(v | 0x80)
        v >>= 7
        p += 1
    p[0] = <uint8_t>v
    return p + 1


cdef inline int64_t load_i64(const uint8_t *p) noexcept nogil:
    cdef int64_t v
    memcpy(&v, p, 8)
    return v


cdef inline int row_span(const Feat *f, Py_ssize_t r, int64_t *a, int64_t *b) noexcept nogil:
    """Values a..b of row r, checked against the feature's values; 0 when valid."""
    cdef int64_t limit = f.nvals if f.kind == 0 else f.count
    if f.splits != NULL:
        a[0] = f.splits[r]
        b[0] = f.splits[r + 1]
    else:
        a[0] = r * f.rstride
        b[0] = a[0] + f.rstride
    if a[0] < 0 or b[0] < a[0] or b[0] > limit:
        return S_BAD_SPLITS
    return S_OK


cdef inline int value_span(const Feat *f, int64_t j, int64_t *s, int64_t *e) noexcept nogil:
    """Bytes s..e of BYTES value j, checked against the data; 0 when valid."""
    if f.voff != NULL:
        s[0] = f.voff[j]
        e[0] = f.voff[j + 1]
    else:
        s[0] = j * f.vstride
        e[0] = s[0] + f.vstride
    if s[0] < 0 or e[0] < s[0] or e[0] > f.count:
        return S_BAD_OFFSETS
    return S_OK


cdef inline int64_t list_len(int kind, int64_t body) noexcept nogil:
    """Length of the *List message whose payload (values part) is `body` bytes."""
    if kind == 0:
        return body  # repeated bytes: the body is the message
    if body == 0:
        return 0  # an empty packed field is omitted
    return 1 + vsize(<uint64_t>body) + body


cdef inline int64_t entry_len(const Feat *f, int64_t body) noexcept nogil:
    cdef int64_t lst = list_len(f.kind, body)
    cdef int64_t feat = 1 + vsize(<uint64_t>lst) + lst
    return f.key_part + 1 + vsize(<uint64_t>feat) + feat


cdef class Batch:
    """One batch of columns to encode as n Examples.

    features: a list of (key bytes, kind, data, voff or None, vstride, splits or None,
    rstride), with data a 1-D contiguous buffer (float32 for FLOAT, int64 for INT64,
    uint8 for BYTES) and voff / splits contiguous int64 arrays. Keys are written in the
    order given. The Batch keeps references to every buffer until it is dropped.
    """

    cdef Feat *feats
    cdef Py_ssize_t nfeat
    cdef readonly Py_ssize_t n
    cdef list keep
    cdef int64_t[::1] bodies     # n * nfeat: payload bytes of each (row, feature) list
    cdef int64_t[::1] inner      # n: bytes of the Features message of each row
    cdef int64_t[::1] offs       # n + 1: record sizes after measure, offsets after finish
    cdef readonly object offsets  # the same, as an ndarray

    def __cinit__(self):
        self.feats = NULL

    def __init__(self, list features, Py_ssize_t n):
        cdef Py_ssize_t i
        cdef Feat *f
        cdef const uint8_t[::1] data_u8
        cdef const int64_t[::1] i64
        if n < 0:
            raise ValueError("n must be >= 0")
        self.n = n
        self.nfeat = len(features)
        self.keep = []
        self.feats = <Feat *>malloc(max(1, self.nfeat) * sizeof(Feat))
        if self.feats == NULL:
            raise MemoryError()
        for i, (key, kind, data, voff, vstride, splits, rstride) in enumerate(features):
            f = &self.feats[i]
            key = bytes(key)
            self.keep.append(key)
            f.key = <const uint8_t *>(<bytes>key)
            f.key_len = len(key)
            f.key_part = 1 + vsize(<uint64_t>f.key_len) + f.key_len
            if kind not in (K_BYTES, K_FLOAT, K_INT64):
                raise ValueError(f"unknown kind {kind}")
            f.kind = kind
            data = np.ascontiguousarray(data).reshape(-1)
            width = {K_BYTES: 1, K_FLOAT: 4, K_INT64: 8}[kind]
            if data.dtype.itemsize != width:
                raise ValueError(f"feature {key!r}: data items are {data.dtype}, not {width} bytes")
            self.keep.append(data)
            data_u8 = data.view(np.uint8)
            f.data = &data_u8[0] if data_u8.shape[0] else NULL
            f.count = data.shape[0]
            f.voff = NULL
            f.nvals = 0
            f.vstride = 0
            if kind == K_BYTES:
                if voff is not None:
                    voff = np.ascontiguousarray(voff, dtype=np.int64)
                    if voff.ndim != 1 or voff.shape[0] < 1:
                        raise ValueError(f"feature {key!r}: value offsets need at least one entry")
                    self.keep.append(voff)
                    i64 = voff
                    f.voff = &i64[0]
                    f.nvals = voff.shape[0] - 1
                else:
                    if vstride <= 0:
                        raise ValueError(f"feature {key!r}: vstride must be positive")
                    f.vstride = vstride
                    f.nvals = f.count // vstride
            f.splits = NULL
            f.rstride = rstride
            if splits is not None:
                splits = np.ascontiguousarray(splits, dtype=np.int64)
                if splits.ndim != 1 or splits.shape[0] != n + 1:
                    raise ValueError(
                        f"feature {key!r}: {splits.shape[0]} row splits for {n} rows "
                        f"(expected {n + 1})"
                    )
                self.keep.append(splits)
                i64 = splits
                f.splits = &i64[0]
            elif rstride < 0:
                raise ValueError(f"feature {key!r}: rstride must be >= 0")
        self.bodies = np.empty(max(1, n * self.nfeat), np.int64)
        self.inner = np.empty(max(1, n), np.int64)
        self.offsets = np.zeros(n + 1, np.int64)
        self.offs = self.offsets

    def __dealloc__(self):
        free(self.feats)

    def measure(self, Py_ssize_t start, Py_ssize_t stop):
        """Pass one over rows start..stop: sizes of each record into offsets[r + 1].

        Raises EncodeError for a split or offset outside its buffer or a record too large.
        """
        cdef int status = S_OK
        cdef Py_ssize_t r = start, k = 0
        self._check_range(start, stop)
        with nogil:
            status = self._measure(start, stop, &r, &k)
        if status != S_OK:
            raise EncodeError(status, r, k)

    cdef int _measure(self, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t *row,
                      Py_ssize_t *feat) noexcept nogil:
        cdef Py_ssize_t r, k, F = self.nfeat
        cdef const Feat *f
        cdef int64_t a, b, j, s, e, body, total, ent
        cdef int status
        cdef const uint8_t *vals
        cdef int64_t *offsets = &self.offs[0]
        cdef int64_t *bodies = &self.bodies[0]
        cdef int64_t *inner = &self.inner[0]
        for r in range(start, stop):
            total = 0
            for k in range(F):
                f = &self.feats[k]
                row[0] = r
                feat[0] = k
                status = row_span(f, r, &a, &b)
                if status != S_OK:
                    return status
                if f.kind == 1:
                    body = 4 * (b - a)
                elif f.kind == 2:
                    body = 0
                    vals = f.data
                    for j in range(a, b):
                        body += vsize(<uint64_t>load_i64(vals + 8 * j))
                else:
                    body = 0
                    for j in range(a, b):
                        status = value_span(f, j, &s, &e)
                        if status != S_OK:
                            return status
                        body += 1 + vsize(<uint64_t>(e - s)) + (e - s)
                        if body > MAX_RECORD_C:
                            return S_TOO_LARGE
                if body > MAX_RECORD_C:
                    return S_TOO_LARGE
                bodies[r * F + k] = body
                ent = entry_len(f, body)
                total += 1 + vsize(<uint64_t>ent) + ent
                if total > MAX_RECORD_C:
                    return S_TOO_LARGE
            inner[r] = total
            total += 1 + vsize(<uint64_t>total)
            if total > MAX_RECORD_C:
                return S_TOO_LARGE
            offsets[r + 1] = total
        return S_OK

    def finish(self) -> int:
        """After measure covered every row: turn sizes into offsets; returns total bytes."""
        cdef int64_t[::1] offsets = self.offs
        cdef Py_ssize_t r
        with nogil:
            offsets[0] = 0
            for r in range(self.n):
                offsets[r + 1] += offsets[r]
        return int(offsets[self.n])

    def fill(self, uint8_t[::1] out, Py_ssize_t start, Py_ssize_t stop):
        """Pass two over rows start..stop: write each record at out[offsets[r]:offsets[r+1]]."""
        cdef int status = S_OK
        cdef Py_ssize_t r = start, k = 0
        self._check_range(start, stop)
        if out.shape[0] != self.offs[self.n]:
            raise ValueError(
                f"output holds {out.shape[0]} bytes, the batch needs {self.offs[self.n]}"
            )
        with nogil:
            status = self._fill(&out[0] if out.shape[0] else NULL, start, stop, &r, &k)
        if status != S_OK:
            raise EncodeError(status, r, k)

    cdef int _fill(self, uint8_t *out, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t *row,
                   Py_ssize_t *feat) noexcept nogil:
        cdef Py_ssize_t r, k, F = self.nfeat
        cdef const Feat *f
        cdef int64_t a, b, j, s, e, body, lst, ent, fl
        cdef int64_t v
        cdef int status
        cdef uint8_t *p
        cdef uint8_t *end
        cdef uint8_t *stop_at
        cdef const uint8_t *vals
        cdef const int64_t *offsets = &self.offs[0]
        cdef const int64_t *bodies = &self.bodies[0]
        cdef const int64_t *inner = &self.inner[0]
        for r in range(start, stop):
            p = out + offsets[r]
            end = out + offsets[r + 1]
            row[0] = r
            p[0] = 0x0A
            p = put_varint(p + 1, <uint64_t>inner[r])
            for k in range(F):
                f = &self.feats[k]
                feat[0] = k
                status = row_span(f, r, &a, &b)
                if status != S_OK:
                    return status
                body = bodies[r * F + k]
                lst = list_len(f.kind, body)
                fl = 1 + vsize(<uint64_t>lst) + lst
                ent = f.key_part + 1 + vsize(<uint64_t>fl) + fl
                if end - p < 1 + vsize(<uint64_t>ent) + ent:
                    return S_CHANGED
                p[0] = 0x0A
                p = put_varint(p + 1, <uint64_t>ent)
                p[0] = 0x0A
                p = put_varint(p + 1, <uint64_t>f.key_len)
                if f.key_len:
                    memcpy(p, f.key, f.key_len)
                p += f.key_len
                p[0] = 0x12
                p = put_varint(p + 1, <uint64_t>fl)
                p[0] = LIST_TAG[f.kind]
                p = put_varint(p + 1, <uint64_t>lst)
                stop_at = p + lst
                if f.kind == 1:
                    if body != 4 * (b - a):
                        return S_CHANGED
                    if body:
                        p[0] = 0x0A
                        p = put_varint(p + 1, <uint64_t>body)
                        memcpy(p, f.data + 4 * a, body)
                        p += body
                elif f.kind == 2:
                    if body:
                        p[0] = 0x0A
                        p = put_varint(p + 1, <uint64_t>body)
                        vals = f.data
                        for j in range(a, b):
                            v = load_i64(vals + 8 * j)
                            if stop_at - p < vsize(<uint64_t>v):
                                return S_CHANGED
                            p = put_varint(p, <uint64_t>v)
                else:
                    for j in range(a, b):
                        status = value_span(f, j, &s, &e)
                        if status != S_OK:
                            return status
                        if stop_at - p < 1 + vsize(<uint64_t>(e - s)) + (e - s):
                            return S_CHANGED
                        p[0] = 0x0A
                        p = put_varint(p + 1, <uint64_t>(e - s))
                        if e > s:
                            memcpy(p, f.data + s, e - s)
                        p += e - s
                if p != stop_at:
                    return S_CHANGED
            if p != end:
                return S_CHANGED
        return S_OK

    def _check_range(self, Py_ssize_t start, Py_ssize_t stop):
        if not 0 <= start <= stop <= self.n:
            raise ValueError(f"rows {start}..{stop} outside 0..{self.n}")


def encode_examples(list features, Py_ssize_t n, out=None):
    """Encode n Examples from feature buffers (see `Batch`) in one call.

    Returns (data, offsets): record i is data[offsets[i]:offsets[i + 1]], ready for
    RecordWriter.write_batch. With `out` (a uint8 array) large enough, data is a view of
    its start, so a caller can reuse one buffer for every batch; otherwise data is new.
    """
    batch = Batch(features, n)
    batch.measure(0, n)
    size = batch.finish()
    if out is not None and out.dtype == np.uint8 and out.ndim == 1 and out.shape[0] >= size:
        data = out[:size]
    else:
        data = np.empty(size, np.uint8)
    batch.fill(data, 0, n)
    return data, batch.offsets


cdef inline int decimal_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 10:
        v //= 10
        n += 1
    return n


cdef inline uint8_t *put_decimal(uint8_t *p, uint64_t v, int width) noexcept nogil:
    cdef int i
    for i in range(width - 1, -1, -1):
        p[i] = <uint8_t>(48 + v % 10)
        v //= 10
    return p + width


def index_lines(const int64_t[::1] starts, const int64_t[::1] frames):
    """The `offset length` lines of an index file (NVIDIA DALI's tfrecord2idx format) as a
    uint8 array of ASCII text, one line per record."""
    cdef Py_ssize_t n = starts.shape[0], i, size = 0
    cdef bint bad = False
    cdef uint8_t *p
    if frames.shape[0] != n:
        raise ValueError("starts and frames differ in length")
    with nogil:
        for i in range(n):
            if starts[i] < 0 or frames[i] < 0:
                bad = True
                break
            size += decimal_size(starts[i]) + decimal_size(frames[i]) + 2
    if bad:
        raise ValueError("index offsets and lengths must be >= 0")
    out = np.empty(size, np.uint8)
    cdef uint8_t[::1] view = out
    if size:
        p = &view[0]
        with nogil:
            for i in range(n):
                p = put_decimal(p, starts[i], decimal_size(starts[i]))
                p[0] = 32
                p = put_decimal(p + 1, frames[i], decimal_size(frames[i]))
                p[0] = 10
                p += 1
    return out
