# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Riegeli/records byte work for ArrayRecord files: hashes, chunks out of their blocks,
record sizes, footer entries. Buffers in, numbers out, GIL released.

A Riegeli file is cut into 64 KiB blocks; each block begins with a 24-byte block header,
and chunks run across them. `unblock_chunks` takes file bytes holding some chunks, copies
each chunk without the block headers that interrupt it, checks its 40-byte header's hash
and its data's hash (64-bit HighwayHash keyed with 'Riegeli/records\\n' twice: highway.h)
and reports, per chunk, where its data lies and what its header says. Every length read
is checked against the bytes there are before it is used.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy, memset

import numpy as np

cdef extern from "highway.h":
    uint64_t tfrecnp_riegeli_hash(const uint8_t *data, size_t size) noexcept nogil

DEF BLOCK = 65536
DEF BLOCK_HEADER = 24
DEF CHUNK_HEADER = 40

# per-chunk status in info[k, 5]
cdef enum:
    C_OK = 0
    C_OUTSIDE = 1      # the chunk's bytes are not all in the buffer (a truncated file)
    C_HEADER_HASH = 2  # the chunk header's hash does not match
    C_DATA_SIZE = 3    # data_size runs past the chunk's end
    C_DATA_HASH = 4    # the data's hash does not match
    C_INFO_FIELDS = 6  # data start (in out), data_size, chunk_type, num_records, decoded_data_size, status

OK, OUTSIDE, HEADER_HASH, DATA_SIZE, DATA_HASH = C_OK, C_OUTSIDE, C_HEADER_HASH, C_DATA_SIZE, C_DATA_HASH
INFO_FIELDS = C_INFO_FIELDS


def riegeli_hash(const uint8_t[::1] data) -> int:
    """HighwayHash-64 of the bytes, keyed as Riegeli keys its hashes."""
    cdef uint64_t h
    cdef size_t n = data.shape[0]
    cdef const uint8_t *p = &data[0] if n else NULL
    cdef uint8_t empty = 0
    if n == 0:
        p = &empty
    with nogil:
        h = tfrecnp_riegeli_hash(p, n)
    return h


cdef inline uint64_t le64(const uint8_t *p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)  # little-endian hosts (x86-64, arm64)
    return v


cdef int64_t unblock(const uint8_t *src, int64_t pos, int64_t end, uint8_t *dst) noexcept nogil:
    """Copies file bytes pos..end (src points at pos) to dst, leaving out block headers;
    returns the bytes copied."""
    cdef int64_t o = 0, within, run
    while pos < end:
        within = pos % BLOCK
        if within < BLOCK_HEADER:
            src += BLOCK_HEADER - within
            pos += BLOCK_HEADER - within
            continue
        run = BLOCK - within
        if run > end - pos:
            run = end - pos
        memcpy(dst + o, src, run)
        o += run
        src += run
        pos += run
    return o


cdef int64_t chunk_at(const uint8_t *src, int64_t avail, int64_t b, int64_t e, uint8_t *dst,
                      int64_t cap, int64_t *info, bint check_data) noexcept nogil:
    """One chunk of `unblock_chunks`: file bytes b..e at src (avail bytes there) into dst
    (cap bytes there); info: its INFO_FIELDS. Returns the bytes of dst used."""
    cdef int64_t got, size
    cdef const uint8_t *h
    info[0] = 0
    info[1] = 0
    info[2] = 0
    info[3] = 0
    info[4] = 0
    if e < b or e - b > avail or e - b > cap:
        info[5] = C_OUTSIDE
        return 0
    got = unblock(src, b, e, dst)
    if got < CHUNK_HEADER:
        info[5] = C_OUTSIDE
        return 0
    h = dst
    if tfrecnp_riegeli_hash(h + 8, CHUNK_HEADER - 8) != le64(h):
        info[5] = C_HEADER_HASH
        return 0
    size = <int64_t>le64(h + 8)
    info[0] = CHUNK_HEADER
    info[2] = h[24]
    info[3] = <int64_t>(le64(h + 24) >> 8)
    info[4] = <int64_t>le64(h + 32)
    if size < 0 or size > got - CHUNK_HEADER:
        info[5] = C_DATA_SIZE
        return 0
    info[1] = size
    if check_data and tfrecnp_riegeli_hash(h + CHUNK_HEADER, size) != le64(h + 16):
        info[5] = C_DATA_HASH
        return 0
    info[5] = C_OK
    return got


def unblock_chunks(const uint8_t[::1] buf, const int64_t[::1] at, const int64_t[::1] begins,
                   const int64_t[::1] ends, uint8_t[::1] out, int64_t[:, ::1] info,
                   bint check_data=True) -> int:
    """Chunks begins[k]..ends[k] (file positions), whose bytes lie in `buf` from at[k] on:
    each copied into `out` without block headers, back to back, its header read and hashes
    checked (the data's only when check_data). info[k] gets INFO_FIELDS numbers (see
    above; the data start counts from the start of out). Returns the bytes of out used."""
    cdef Py_ssize_t n = begins.shape[0], k
    cdef int64_t have = buf.shape[0], cap = out.shape[0], o = 0, a, got
    if ends.shape[0] != n or at.shape[0] != n or info.shape[0] < n or info.shape[1] < C_INFO_FIELDS:
        raise ValueError("at, begins, ends and info do not match")
    if n == 0:
        return 0
    with nogil:
        for k in range(n):
            a = at[k]
            if a < 0 or a > have:
                info[k, 0] = o
                info[k, 1] = info[k, 2] = info[k, 3] = info[k, 4] = 0
                info[k, 5] = C_OUTSIDE
                continue
            got = chunk_at(&buf[0] + a if a < have else &buf[0], have - a, begins[k], ends[k],
                           &out[0] + o if o < cap else &out[0], cap - o, &info[k, 0],
                           check_data)
            info[k, 0] += o
            o += got
    return o


cdef inline int64_t read_varint(const uint8_t *p, int64_t n, uint64_t *value) noexcept nogil:
    """A varint64 at p (n bytes there): its length, or -1 when malformed or cut short."""
    cdef uint64_t v = 0
    cdef int64_t i
    for i in range(10):
        if i >= n:
            return -1
        v |= (<uint64_t>(p[i] & 0x7F)) << (7 * i)
        if p[i] < 0x80:
            if i == 9 and p[i] > 1:
                return -1
            value[0] = v
            return i + 1
    return -1


def sizes_to_offsets(const uint8_t[::1] data, int64_t[::1] offsets) -> int:
    """len(offsets) - 1 varint record sizes at the start of data -> offsets (offsets[0] =
    0, offsets[i + 1] = offsets[i] + size i). Returns the bytes read, or -1 when the
    varints are malformed, too few, or add up past 2**62."""
    cdef int64_t n = offsets.shape[0] - 1, have = data.shape[0], p = 0, i, got
    cdef uint64_t size, total = 0
    if n < 0:
        return -1
    offsets[0] = 0
    if n == 0:
        return 0
    with nogil:
        for i in range(n):
            got = read_varint(&data[0] + p, have - p, &size)
            if got < 0 or size > (1ULL << 62) - total:
                p = -1
                break
            p += got
            total += size
            offsets[i + 1] = <int64_t>total
    return p


def varint(const uint8_t[::1] data, int64_t at) -> tuple:
    """(value, position after it) of the varint64 at data[at]; (-1, -1) when malformed."""
    cdef uint64_t v = 0
    cdef int64_t got
    if at < 0 or at >= data.shape[0]:
        return (-1, -1)
    got = read_varint(&data[0] + at, data.shape[0] - at, &v)
    if got < 0:
        return (-1, -1)
    return (v, at + got)


def uint_fields(const uint8_t[::1] data, const int64_t[::1] offsets, uint64_t[:, ::1] out) -> int:
    """Small protobuf messages data[offsets[i]:offsets[i + 1]] whose fields 1..out.shape[1]
    are varints: out[i, f - 1] = field f (0 when absent; the last wins). Other fields are
    skipped by their wire type. Returns -1, or the first message that is malformed."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, i
    cdef int64_t fields = out.shape[1], p, e, got, have = data.shape[0]
    cdef uint64_t key, v
    cdef int64_t bad = -1
    cdef int wire
    if out.shape[0] < n:
        raise ValueError("out has too few rows")
    with nogil:
        for i in range(n):
            for p in range(fields):
                out[i, p] = 0
            p = offsets[i]
            e = offsets[i + 1]
            if p < 0 or e < p or e > have:
                bad = i
                break
            while p < e:
                got = read_varint(&data[0] + p, e - p, &key)
                if got < 0:
                    bad = i
                    break
                p += got
                wire = key & 7
                if wire == 0:
                    got = read_varint(&data[0] + p, e - p, &v)
                    if got < 0:
                        bad = i
                        break
                    p += got
                    if 1 <= (key >> 3) <= <uint64_t>fields:
                        out[i, (key >> 3) - 1] = v
                elif wire == 1:
                    p += 8
                elif wire == 5:
                    p += 4
                elif wire == 2:
                    got = read_varint(&data[0] + p, e - p, &v)
                    if got < 0 or v > <uint64_t>(e - p - got):
                        bad = i
                        break
                    p += got + <int64_t>v
                else:
                    bad = i
                    break
                if p > e:
                    bad = i
                    break
            if bad >= 0:
                break
    return bad


cdef enum:
    L_KIND = 0
    L_SIZES_AT = 1
    L_SIZES_LEN = 2
    L_SIZES_SIZE = 3
    L_VALUES_AT = 4
    L_VALUES_LEN = 5
    L_VALUES_SIZE = 6
    L_OK = 7
    C_LAYOUT_FIELDS = 8

LAYOUT_FIELDS = C_LAYOUT_FIELDS


cdef inline int64_t block_at(const uint8_t *data, int64_t at, int64_t n, int kind,
                             int64_t *where) noexcept nogil:
    """A compressed block data[at:at + n]: where[0..3] = where its codec's bytes lie,
    their length and the size they decompress to (its varint prefix; the block itself when
    kind is 0). Returns 0, or -1 when the prefix is malformed."""
    cdef uint64_t size
    cdef int64_t got
    if kind == 0:
        where[0] = at
        where[1] = n
        where[2] = n
        return 0
    got = read_varint(data + at, n, &size)
    if got < 0 or size > (1ULL << 62):
        return -1
    where[0] = at + got
    where[1] = n - got
    where[2] = <int64_t>size
    return 0


cdef void layout_of(const uint8_t *out, int64_t have, const int64_t *info,
                    int64_t *layout) noexcept nogil:
    """One chunk of `simple_layout` (info: its INFO_FIELDS, layout: its LAYOUT_FIELDS)."""
    cdef int64_t start, size, p, sizes_len, got
    cdef uint64_t v
    cdef int kind
    layout[L_OK] = 0
    layout[L_KIND] = -1
    if info[5] != C_OK or info[2] != 0x72:  # 'r'
        return
    start = info[0]
    size = info[1]
    if start < 0 or size < 1 or size > have - start:
        return
    kind = out[start]
    layout[L_KIND] = kind
    got = read_varint(out + start + 1, size - 1, &v)
    if got < 0 or v > <uint64_t>(size - 1 - got):
        return
    p = start + 1 + got
    sizes_len = <int64_t>v
    if block_at(out, p, sizes_len, kind, layout + L_SIZES_AT) < 0:
        return
    if block_at(out, p + sizes_len, start + size - p - sizes_len, kind, layout + L_VALUES_AT) < 0:
        return
    layout[L_OK] = 1


def simple_layout(const uint8_t[::1] out, const int64_t[:, ::1] info, int64_t[:, ::1] layout):
    """Where the parts of each simple chunk's data lie (the chunks `unblock_chunks` put in
    `out` and described in `info`): layout[k] = compression byte, then (start in out,
    length, decompressed size) of the compressed record sizes and of the compressed
    values, then 1 when the chunk is a simple chunk laid out well, else 0."""
    cdef Py_ssize_t n = info.shape[0], k
    cdef int64_t have = out.shape[0]
    cdef uint8_t empty = 0
    cdef const uint8_t *p = &out[0] if have else &empty
    if layout.shape[0] < n or layout.shape[1] < C_LAYOUT_FIELDS or info.shape[1] < C_INFO_FIELDS:
        raise ValueError("layout does not match info")
    with nogil:
        for k in range(n):
            layout_of(p, have, &info[k, 0], &layout[k, 0])


def one_chunk(const uint8_t[::1] buf, int64_t begin, int64_t end, bint check_data=True,
              out=None):
    """`ds[i]`'s short path: the chunk at file positions begin..end, whose bytes are all of
    `buf`, as `unblock_chunks` and `simple_layout` see it, in one call: (out, INFO_FIELDS
    numbers, LAYOUT_FIELDS numbers) as two tuples after out. out: where the chunk goes
    (uint8, at least len(buf) bytes, not overlapping buf), else a new array."""
    cdef int64_t info[C_INFO_FIELDS]
    cdef int64_t layout[C_LAYOUT_FIELDS]
    cdef int64_t have = buf.shape[0]
    cdef uint8_t[::1] o
    if out is None:
        out = np.empty(max(have, 1), np.uint8)
    o = out
    if o.shape[0] < max(have, 1):
        raise ValueError("out is smaller than buf")
    if have == 0:
        info[0] = info[1] = info[2] = info[3] = info[4] = 0
        info[5] = C_OUTSIDE
    else:
        with nogil:
            chunk_at(&buf[0], have, begin, end, &o[0], have, info, check_data)
    layout_of(&o[0], have, info, layout)
    # tuples built directly (a generator per call cost a microsecond of ds[i]'s ~10)
    return (out, (info[0], info[1], info[2], info[3], info[4], info[5]),
            (layout[0], layout[1], layout[2], layout[3], layout[4], layout[5], layout[6],
             layout[7]))


# --- writing ---------------------------------------------------------------------------

cdef inline void put64(uint8_t *p, uint64_t v) noexcept nogil:
    memcpy(p, &v, 8)  # little-endian hosts (x86-64, arm64)


cdef inline void put_block_header(uint8_t *h, int64_t pos, int64_t begin,
                                  int64_t end) noexcept nogil:
    """The 24-byte block header at file position pos (a multiple of 64 KiB) inside the chunk
    from begin to end: its hash, then the distances back to begin and on to end."""
    put64(h + 8, <uint64_t>(pos - begin))
    put64(h + 16, <uint64_t>(end - pos))
    put64(h, tfrecnp_riegeli_hash(h + 8, 16))


cdef inline int64_t remaining_in_block(int64_t pos) noexcept nogil:
    return (BLOCK - pos % BLOCK) % BLOCK


cdef inline int64_t chunk_end(int64_t begin, int64_t length, int64_t records) noexcept nogil:
    """Where a chunk of `length` bytes (header and data) holding `records` records that
    begins at `begin` ends: past its block headers, and at least `records` bytes on, at a
    place a chunk may begin (not inside nor right after a block header)."""
    cdef int64_t usable = BLOCK - BLOCK_HEADER
    cdef int64_t end = begin + length + (
        (length + (begin + usable - 1) % BLOCK) // usable) * BLOCK_HEADER
    cdef int64_t least = begin + records, extra = remaining_in_block(least) - (usable - 1)
    if extra > 0:
        least += extra
    return end if end > least else least


cdef int64_t put_section(const uint8_t *src, int64_t n, int64_t *pos, int64_t begin,
                         int64_t end, uint8_t *dst) noexcept nogil:
    """n bytes of a chunk (src, or zeros when src is NULL) at file position pos[0], a block
    header written first at every block boundary; returns the bytes of dst used."""
    cdef int64_t o = 0, run, within
    while n > 0:
        within = pos[0] % BLOCK
        if within == 0:
            put_block_header(dst + o, pos[0], begin, end)
            o += BLOCK_HEADER
            pos[0] += BLOCK_HEADER
            within = BLOCK_HEADER
        run = BLOCK - within
        if run > n:
            run = n
        if src != NULL:
            memcpy(dst + o, src, run)
            src += run
        else:
            memset(dst + o, 0, run)
        o += run
        pos[0] += run
        n -= run
    return o


cdef int64_t put_padding(int64_t *pos, int64_t begin, int64_t end, uint8_t *dst) noexcept nogil:
    """Zeros from file position pos[0] to end, a block header at every block boundary
    before end (so they count within end - pos[0]); returns the bytes of dst used."""
    cdef int64_t o = 0, run, within
    while pos[0] < end:
        within = pos[0] % BLOCK
        if within == 0:
            put_block_header(dst + o, pos[0], begin, end)
            o += BLOCK_HEADER
            pos[0] += BLOCK_HEADER
            within = BLOCK_HEADER
        run = BLOCK - within
        if run > end - pos[0]:
            run = end - pos[0]
        memset(dst + o, 0, run)
        o += run
        pos[0] += run
    return o


def lay_chunks(const uint8_t[::1] data, const int64_t[::1] offsets,
               const uint8_t[::1] types, const int64_t[::1] records,
               const int64_t[::1] decoded, int64_t pos, uint8_t[::1] out,
               int64_t[::1] begins) -> int:
    """Chunks as a Riegeli/records writer lays them out, from file position `pos` on:
    chunk k's data is data[offsets[k]:offsets[k + 1]], of chunk type types[k], holding
    records[k] records of decoded[k] bytes. Each gets its 40-byte header (hashes
    computed here), is cut by a 24-byte block header at every 64 KiB boundary and padded
    with zeros to where the next chunk may begin; begins[k] gets its file position. Writes
    into out (bytes for file positions pos.. on); returns the bytes used, or -1 when out
    is too small (`chunks_size` says how much is needed)."""
    cdef Py_ssize_t n = types.shape[0], k
    cdef int64_t o = 0, begin, end, size, have = out.shape[0], need
    cdef uint8_t header[CHUNK_HEADER]
    cdef uint8_t empty = 0
    cdef const uint8_t *d = &data[0] if data.shape[0] else &empty
    if (offsets.shape[0] != n + 1 or records.shape[0] != n or decoded.shape[0] != n
            or begins.shape[0] < n):
        raise ValueError("offsets, types, records, decoded and begins do not match")
    if n == 0:
        return 0
    if offsets[0] < 0 or offsets[n] > data.shape[0]:
        raise ValueError("offsets run outside data")
    for k in range(n):
        if offsets[k + 1] < offsets[k] or records[k] < 0 or records[k] >= (1LL << 56):
            raise ValueError(f"chunk {k}: offsets go down or records out of range")
    need = chunks_size(offsets, records, pos)
    if need > have:
        return -1
    with nogil:
        for k in range(n):
            begin = pos
            size = offsets[k + 1] - offsets[k]
            put64(header + 8, <uint64_t>size)
            put64(header + 16, tfrecnp_riegeli_hash(d + offsets[k], size))
            put64(header + 24, (<uint64_t>records[k] << 8) | types[k])
            put64(header + 32, <uint64_t>decoded[k])
            put64(header, tfrecnp_riegeli_hash(header + 8, CHUNK_HEADER - 8))
            end = chunk_end(begin, CHUNK_HEADER + size, records[k])
            begins[k] = begin
            o += put_section(header, CHUNK_HEADER, &pos, begin, end, &out[0] + o)
            o += put_section(d + offsets[k], size, &pos, begin, end, &out[0] + o)
            o += put_padding(&pos, begin, end, &out[0] + o)
    return o


def chunks_size(const int64_t[::1] offsets, const int64_t[::1] records, int64_t pos) -> int:
    """The file bytes `lay_chunks` writes for these chunks from position pos on."""
    cdef Py_ssize_t n = records.shape[0], k
    cdef int64_t start = pos
    for k in range(n):
        pos = chunk_end(pos, CHUNK_HEADER + offsets[k + 1] - offsets[k], records[k])
    return pos - start
