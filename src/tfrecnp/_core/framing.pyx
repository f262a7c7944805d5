# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""TFRecord framing: file bytes -> record spans, payloads, and back.

A TFRecord stream is frames back to back, no header or footer::

    uint64 LE  payload length n
    uint32 LE  masked CRC32C of those 8 length bytes
    n bytes    payload
    uint32 LE  masked CRC32C of the payload

mask(c) = ((c >> 15) | (c << 17)) + 0xA282EAD8 (mod 2**32). CRC32C is CRC-32
Castagnoli (reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF).

Everything here takes buffers and returns buffers or status codes; nothing allocates
per record and the loops run without the GIL. No length read from the data is trusted:
a frame is accepted only when its length CRC checks and the whole frame lies inside
the bytes given. The Python layer (`tfrecnp.format.reader`, and `tfrecnp.data.files` for
reads by position) turns status codes into errors with file names and record numbers.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.errno cimport EINTR, errno
from libc.string cimport memcpy, strerror
from posix.unistd cimport pread

cdef extern from "crc32c.h":
    enum:  # the frame's geometry, named once for the core (format/frames.py for Python)
        LENGTH_BYTES "TFRECNP_LENGTH_BYTES"  # the payload length, little-endian uint64
        HEADER_BYTES "TFRECNP_HEADER_BYTES"  # the length and its masked CRC
        OVERHEAD_BYTES "TFRECNP_OVERHEAD_BYTES"  # the header and the payload's masked CRC
    int TFRECNP_LONG
    int TFRECNP_SHORT
    uint32_t tfrecnp_shift_long[4][256]
    uint32_t tfrecnp_shift_short[4][256]
    int tfrecnp_cpu_has_sse42() noexcept nogil
    uint32_t tfrecnp_crc_hw(uint32_t crc, const uint8_t *p, size_t n) noexcept nogil
    uint32_t tfrecnp_crc8_hw(const uint8_t *p) noexcept nogil
    void tfrecnp_init_head(const uint32_t *t0) noexcept
    ctypedef uint32_t (*tfrecnp_crc_fn)(uint32_t crc, const uint8_t *p, size_t n) noexcept nogil
    ctypedef struct tfrecnp_walk:
        const uint8_t *buf
        int64_t pos, end, want, n
        uint8_t *out
        int64_t o, room
        int64_t *offsets
        int status, have_length, stream
        uint64_t length
        int64_t bad, bad_pos
    int TFRECNP_WALK_OUT_FULL
    void tfrecnp_walk_hw(tfrecnp_walk *g) noexcept nogil
    void tfrecnp_walk_sw(tfrecnp_walk *g, tfrecnp_crc_fn crc, int check) noexcept nogil
    int64_t tfrecnp_gather_hw(const uint8_t *src, const int64_t *starts, const int64_t *lengths,
                              int64_t n, uint8_t *dst, const int64_t *offsets,
                              int64_t base) noexcept nogil

cdef uint32_t POLY = 0x82F63B78
cdef uint32_t MASK_DELTA = 0xA282EAD8

cdef enum Status:
    # Shared with the Python layer (format/, data/files.py) through the Python names below.
    S_LIMIT = 0            # stopped after filling the output arrays
    S_NEED_MORE = 1        # the frame at pos does not lie wholly before the limit
    S_BAD_LENGTH_CRC = 2   # the 8 length bytes at pos fail their CRC
    S_NOT_FOUND = 3        # find_frame: no frame starts before the end of the buffer

LIMIT = S_LIMIT
NEED_MORE = S_NEED_MORE
BAD_LENGTH_CRC = S_BAD_LENGTH_CRC
FOUND = S_LIMIT  # find_frame: a whole valid frame starts at pos
NOT_FOUND = S_NOT_FOUND
OUT_FULL = TFRECNP_WALK_OUT_FULL  # gather_frames: the next payload does not fit in out

cdef uint32_t table[8][256]    # slicing-by-8 tables for the software path
cdef bint use_hw = False


cdef uint32_t gf2_apply(const uint32_t *mat, uint32_t vec) noexcept nogil:
    cdef uint32_t out = 0
    cdef int j = 0
    while vec:
        if vec & 1:
            out ^= mat[j]
        vec >>= 1
        j += 1
    return out


cdef void zero_shift_table(uint32_t out[4][256], size_t nbytes) noexcept:
    """Tables for the linear map 'run the raw CRC register over nbytes zero bytes'."""
    cdef uint32_t step[32]
    cdef uint32_t acc[32]
    cdef uint32_t tmp[32]
    cdef int j, k
    cdef size_t bits = nbytes * 8
    step[0] = POLY                       # one zero bit: s -> (s >> 1) ^ (POLY if s & 1)
    for j in range(1, 32):
        step[j] = (<uint32_t>1) << (j - 1)
    for j in range(32):
        acc[j] = (<uint32_t>1) << j      # identity
    while bits:
        if bits & 1:
            for j in range(32):
                tmp[j] = gf2_apply(step, acc[j])
            memcpy(acc, tmp, sizeof(tmp))
        for j in range(32):
            tmp[j] = gf2_apply(step, step[j])
        memcpy(step, tmp, sizeof(tmp))
        bits >>= 1
    for k in range(4):
        for j in range(256):
            out[k][j] = gf2_apply(acc, (<uint32_t>j) << (8 * k))


cdef void init_tables() noexcept:
    global use_hw
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = n
        for k in range(8):
            c = (c >> 1) ^ (POLY if c & 1 else 0)
        table[0][n] = c
    for n in range(256):
        for k in range(1, 8):
            table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xFF]
    zero_shift_table(tfrecnp_shift_long, TFRECNP_LONG)
    zero_shift_table(tfrecnp_shift_short, TFRECNP_SHORT)
    tfrecnp_init_head(table[0])
    use_hw = tfrecnp_cpu_has_sse42() != 0


init_tables()


cdef inline uint32_t load32(const uint8_t *p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint64_t load64(const uint8_t *p) noexcept nogil:
    return load32(p) | (<uint64_t>load32(p + 4) << 32)


cdef inline void store32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = v >> 24


cdef uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n) noexcept nogil:
    """Raw-register CRC32C, slicing by 8."""
    cdef uint32_t hi
    while n >= 8:
        crc ^= load32(p)
        hi = load32(p + 4)
        crc = (table[7][crc & 0xFF] ^ table[6][(crc >> 8) & 0xFF]
               ^ table[5][(crc >> 16) & 0xFF] ^ table[4][crc >> 24]
               ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF]
               ^ table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24])
        p += 8
        n -= 8
    while n:
        crc = (crc >> 8) ^ table[0][(crc ^ p[0]) & 0xFF]
        p += 1
        n -= 1
    return crc


cdef inline uint32_t crc32c_of(const uint8_t *p, size_t n) noexcept nogil:
    if use_hw:
        return ~tfrecnp_crc_hw(0xFFFFFFFF, p, n)
    return ~crc_sw(0xFFFFFFFF, p, n)


cdef inline uint32_t masked(uint32_t c) noexcept nogil:
    return ((c >> 15) | (c << 17)) + MASK_DELTA


cdef inline bint header_ok(const uint8_t *p) noexcept nogil:
    if use_hw:
        return masked(tfrecnp_crc8_hw(p)) == load32(p + LENGTH_BYTES)
    return masked(crc32c_of(p, LENGTH_BYTES)) == load32(p + LENGTH_BYTES)


cdef inline bint payload_ok(const uint8_t *frame, uint64_t length) noexcept nogil:
    """Whether the payload CRC of the frame at `frame` (its payload `length` bytes, the
    whole frame in the buffer) checks."""
    return (masked(crc32c_of(frame + HEADER_BYTES, length))
            == load32(frame + HEADER_BYTES + length))


cdef inline int frame_at(const uint8_t *base, Py_ssize_t pos, Py_ssize_t size,
                         Py_ssize_t limit, uint64_t *length, bint *have_length) noexcept nogil:
    """S_LIMIT when a frame whose length CRC checks starts at pos (its 12 header bytes in
    the size bytes at base) and ends at or before limit, its payload length in length;
    else S_BAD_LENGTH_CRC, or S_NEED_MORE (have_length set when the length was read)."""
    if size - pos < HEADER_BYTES:
        return S_NEED_MORE
    if not header_ok(base + pos):
        return S_BAD_LENGTH_CRC
    length[0] = load64(base + pos)
    if limit - pos < OVERHEAD_BYTES or length[0] > <uint64_t>(limit - pos - OVERHEAD_BYTES):
        have_length[0] = True
        return S_NEED_MORE
    return S_LIMIT


def has_sse42() -> bool:
    """Whether CRC32C runs on the SSE4.2 crc32 instruction on this CPU."""
    return use_hw


def crc32c(const uint8_t[::1] data, uint32_t crc=0, *, hardware=None) -> int:
    """CRC32C of data, continuing from crc (so crc32c(b, crc32c(a)) == crc32c(a + b)).

    hardware=None picks the fastest path; True/False force one (tests check both).
    """
    cdef const uint8_t *p = &data[0] if data.shape[0] else NULL
    cdef size_t n = data.shape[0]
    cdef bint hw = use_hw if hardware is None else bool(hardware)
    if hw and not use_hw:
        raise RuntimeError("this CPU has no SSE4.2 crc32 instruction")
    with nogil:
        if hw:
            crc = ~tfrecnp_crc_hw(~crc, p, n)
        else:
            crc = ~crc_sw(~crc, p, n)
    return crc


def mask_crc(uint32_t crc) -> int:
    """TFRecord's CRC mask: rotate right by 15, then add 0xA282EAD8."""
    return masked(crc)


def scan_frames(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t limit,
                int64_t[::1] starts, int64_t[::1] lengths):
    """Walk frame headers in buf from pos, recording frame starts and payload lengths.

    A frame counts when its 12 header bytes are in buf, its length CRC checks and the
    whole frame ends at or before `limit` (an offset relative to buf). `limit` may lie
    past the end of buf: then payloads are only stepped over and the returned pos may
    point past the buffer (a reader that only wants headers seeks there).

    Returns (status, pos, n, length): n frames were recorded; pos is where the walk
    stopped; status is LIMIT (the arrays are full), NEED_MORE (the frame at pos is not
    whole; length is its payload length, or -1 when its header is incomplete), or
    BAD_LENGTH_CRC (at pos).
    """
    cdef Py_ssize_t size = buf.shape[0], cap = min(starts.shape[0], lengths.shape[0])
    cdef Py_ssize_t n = 0
    cdef uint64_t length = 0
    cdef int status = S_LIMIT
    cdef bint have_length = False
    if pos < 0 or pos > size or limit < pos:
        raise ValueError(f"bad window: pos {pos}, limit {limit}, buffer {size}")
    cdef const uint8_t *base = &buf[0] if size else NULL
    with nogil:
        while n < cap:
            status = frame_at(base, pos, size, limit, &length, &have_length)
            if status != S_LIMIT:
                break
            starts[n] = pos
            lengths[n] = <int64_t>length
            n += 1
            pos += OVERHEAD_BYTES + <Py_ssize_t>length
    return status, pos, n, (int(length) if have_length else -1)


def frame_ok(const uint8_t[::1] buf, int64_t length, bint check_crc=True) -> bool:
    """Whether buf holds exactly one whole frame with this payload length whose length
    CRC (and, with check_crc, payload CRC) checks: `ds[i]`'s one-record read in one
    call. A caller that gets False reads the record again the long way, for the error."""
    cdef Py_ssize_t size = buf.shape[0]
    cdef bint ok = False
    if length < 0 or size != OVERHEAD_BYTES + length:
        return False
    cdef const uint8_t *base = &buf[0]
    with nogil:
        if header_ok(base) and load64(base) == <uint64_t>length:
            ok = not check_crc or payload_ok(base, length)
    return ok


def gather_payloads(const uint8_t[::1] buf, const int64_t[::1] starts,
                    const int64_t[::1] lengths, uint8_t[::1] out, int64_t[::1] offsets,
                    bint check_crc=True, int64_t base=0) -> int:
    """Copy the payloads of the frames at starts into out, back to back.

    offsets (len(starts) + 1) receives base + each payload's position in out (base lets a
    caller fill a larger batch piece by piece, out being a view into it). With check_crc,
    each payload's CRC is checked in the same pass as the copy (on SSE4.2, three records
    at a time). Returns the index of the first frame whose payload CRC fails, or -1; only
    the payloads before that frame are meaningful in out.
    """
    cdef Py_ssize_t n = starts.shape[0], size = buf.shape[0], i = 0, valid
    cdef Py_ssize_t room = out.shape[0], o = 0, start = 0
    cdef int64_t length = 0
    cdef Py_ssize_t bad = -1
    cdef bint invalid = False
    if lengths.shape[0] != n or offsets.shape[0] != n + 1:
        raise ValueError("starts, lengths and offsets disagree in length")
    cdef const uint8_t *src = &buf[0] if size else NULL
    cdef uint8_t *dst = &out[0] if room else NULL
    with nogil:
        offsets[0] = base
        for i in range(n):  # every frame must lie inside buf and fit out before any copy
            start = starts[i]
            length = lengths[i]
            if (start < 0 or length < 0 or start > size or size - start < OVERHEAD_BYTES + length
                    or room - o < length):
                invalid = True
                break
            o += length
            offsets[i + 1] = base + o
        valid = i if invalid else n
        if check_crc and use_hw and valid:
            bad = tfrecnp_gather_hw(src, &starts[0], &lengths[0], valid, dst, &offsets[0], base)
        else:
            for i in range(valid):
                start = starts[i]
                length = lengths[i]
                if check_crc and not payload_ok(src + start, length):
                    bad = i
                    break
                if length:
                    memcpy(dst + (offsets[i] - base), src + start + HEADER_BYTES, length)
    if bad >= 0:
        return bad
    if invalid:
        i = valid
        start = starts[i]
        length = lengths[i]
        raise ValueError(f"frame {i} (start {start}, length {length}) lies outside the buffers")
    return bad


def find_frame(const uint8_t[::1] buf, Py_ssize_t pos) -> tuple:
    """Search forward from pos for the next whole valid frame (both CRCs check).

    Returns (FOUND, p), (NEED_MORE, p) when a frame with a valid header starts at p but
    runs past the end of buf, or (NOT_FOUND, p) with p the first offset not searched.
    Used to resynchronise after corruption.
    """
    cdef Py_ssize_t size = buf.shape[0]
    cdef uint64_t length
    cdef int status = S_NOT_FOUND
    if pos < 0:
        raise ValueError("negative position")
    cdef const uint8_t *base = &buf[0] if size else NULL
    with nogil:
        while size - pos >= HEADER_BYTES:
            if header_ok(base + pos):
                length = load64(base + pos)
                if size - pos < OVERHEAD_BYTES or length > <uint64_t>(size - pos - OVERHEAD_BYTES):
                    status = S_NEED_MORE
                    break
                if payload_ok(base + pos, length):
                    status = S_LIMIT
                    break
            pos += 1
    return status, pos


def frame_payloads(const uint8_t[::1] payloads, const int64_t[::1] offsets, uint8_t[::1] out) -> int:
    """Write one frame per payload (payloads[offsets[i]:offsets[i+1]]) into out.

    out must hold exactly len(payloads used) + 16 per record; returns bytes written.
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, o = 0, room = out.shape[0]
    cdef Py_ssize_t size = payloads.shape[0]
    cdef int64_t a, b, length
    cdef bint invalid = False
    if n < 0:
        raise ValueError("offsets needs at least one entry")
    cdef const uint8_t *src = &payloads[0] if size else NULL
    cdef uint8_t *dst = &out[0] if room else NULL
    with nogil:
        for i in range(n):
            a = offsets[i]
            b = offsets[i + 1]
            length = b - a
            if a < 0 or b < a or b > size or room - o < OVERHEAD_BYTES + length:
                invalid = True
                break
            store32(dst + o, <uint32_t>length)
            store32(dst + o + 4, <uint32_t>(length >> 32))
            store32(dst + o + LENGTH_BYTES, masked(crc32c_of(dst + o, LENGTH_BYTES)))
            if length:
                memcpy(dst + o + HEADER_BYTES, src + a, length)
            store32(dst + o + HEADER_BYTES + length, masked(crc32c_of(src + a, length)))
            o += OVERHEAD_BYTES + length
    if invalid:
        raise ValueError(f"record {i}: offsets {a}..{b} do not fit the payload or output buffer")
    return o


def gather_ranges(const uint8_t[::1] src, const int64_t[::1] starts,
                  const int64_t[::1] lengths, uint8_t[::1] out,
                  const int64_t[::1] out_starts=None) -> int:
    """Copy src[starts[k]:starts[k] + lengths[k]] for every k into out: back to back, or at
    out_starts[k] when given (a scatter). The gather of variable-length values (bytes
    columns, payloads) in one pass without the GIL.

    Every range must lie inside src and inside out; returns the bytes copied.
    """
    cdef Py_ssize_t n = starts.shape[0], k, o = 0, room = out.shape[0], total = 0
    cdef Py_ssize_t size = src.shape[0]
    cdef int64_t a = 0, length = 0
    cdef bint invalid = False, placed = out_starts is not None
    if lengths.shape[0] != n or (placed and out_starts.shape[0] != n):
        raise ValueError("starts, lengths and out_starts differ in length")
    cdef const uint8_t *s = &src[0] if size else NULL
    cdef uint8_t *d = &out[0] if room else NULL
    with nogil:
        for k in range(n):
            a = starts[k]
            length = lengths[k]
            if placed:
                o = out_starts[k]
            if a < 0 or length < 0 or length > size - a or o < 0 or length > room - o:
                invalid = True
                break
            if length:
                memcpy(d + o, s + a, length)
            o += length
            total += length
    if invalid:
        raise ValueError(f"range {k} ({a}, {length} bytes) does not fit the source or output")
    return total


def gather_parts(list parts, const int64_t[::1] which, const int64_t[::1] starts,
                 const int64_t[::1] lengths, uint8_t[::1] out,
                 const int64_t[::1] out_starts) -> int:
    """Copy parts[which[k]][starts[k]:starts[k] + lengths[k]] to out[out_starts[k]:] for
    every k: gather_ranges over several buffers at once (the blocks of a shuffle pool), in
    one pass without the GIL and in any order.

    Every part is a contiguous uint8 buffer, every range must lie inside its part and
    inside out; returns the bytes copied.
    """
    cdef Py_ssize_t n = starts.shape[0], m = len(parts), k = 0, total = 0
    cdef Py_ssize_t room = out.shape[0]
    cdef int64_t p = 0, a = 0, length = 0, o = 0
    cdef bint invalid = False
    cdef const uint8_t[::1] view
    if which.shape[0] != n or lengths.shape[0] != n or out_starts.shape[0] != n:
        raise ValueError("which, starts, lengths and out_starts differ in length")
    cdef const uint8_t **base = <const uint8_t **>malloc((m + 1) * sizeof(uint8_t *))
    cdef int64_t *size = <int64_t *>malloc((m + 1) * sizeof(int64_t))
    cdef uint8_t *d = &out[0] if room else NULL
    held = []  # the parts' buffers stay acquired while the copy runs without the GIL
    try:
        if base == NULL or size == NULL:
            raise MemoryError()
        for k in range(m):
            view = parts[k]
            held.append(view)
            size[k] = view.shape[0]
            base[k] = &view[0] if view.shape[0] else NULL
        with nogil:
            for k in range(n):
                p = which[k]
                a = starts[k]
                length = lengths[k]
                o = out_starts[k]
                if (p < 0 or p >= m or a < 0 or length < 0 or length > size[p] - a or o < 0
                        or length > room - o):
                    invalid = True
                    break
                if length:
                    memcpy(d + o, base[p] + a, length)
                total += length
    finally:
        free(base)
        free(size)
    if invalid:
        raise ValueError(
            f"range {k} (part {p}, {a}, {length} bytes) does not fit its part or the output"
        )
    return total


def check_frames(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t want,
                 int64_t[::1] starts, int64_t[::1] ends, Py_ssize_t first, int64_t origin,
                 bint check_crc=True) -> tuple:
    """Walk up to `want` frames in buf from pos, checking them where they lie: no copy.
    Decoding reads the payloads in place, so big records (tensors, images) are not copied
    out of their frames first.

    starts[first + k] and ends[first + k] receive origin + the bounds of payload k in buf.
    Returns (status, pos, n, length, bad_pos): n frames checked and pos where the walk
    stopped; status and length as for gather_frames (LIMIT, NEED_MORE, BAD_LENGTH_CRC).
    With check_crc, bad_pos is the start of the first frame whose payload CRC fails (the
    walk stops before it), else -1.
    """
    cdef Py_ssize_t size = buf.shape[0], n = 0
    cdef uint64_t length = 0
    cdef int status = S_LIMIT
    cdef bint have_length = False
    cdef int64_t bad_pos = -1
    if pos < 0 or pos > size:
        raise ValueError(f"bad window: pos {pos}, buffer {size}")
    if first < 0 or want < 0 or first + want > min(starts.shape[0], ends.shape[0]):
        raise ValueError(f"bad output: {first} + {want} of {starts.shape[0]}, {ends.shape[0]}")
    cdef const uint8_t *base = &buf[0] if size else NULL
    with nogil:
        while n < want:
            status = frame_at(base, pos, size, size, &length, &have_length)
            if status != S_LIMIT:
                break
            if check_crc and not payload_ok(base + pos, length):
                bad_pos = pos
                break
            starts[first + n] = origin + pos + HEADER_BYTES
            ends[first + n] = origin + pos + HEADER_BYTES + <int64_t>length
            n += 1
            pos += OVERHEAD_BYTES + <Py_ssize_t>length
    return status, pos, n, (int(length) if have_length else -1), bad_pos


def check_payloads(const uint8_t[::1] buf, const int64_t[::1] starts,
                   const int64_t[::1] ends) -> int:
    """Check the payload CRC of every frame whose payload is buf[starts[k]:ends[k]] (its
    stored CRC follows it): the check check_frames can leave to another thread. Returns
    the index of the first payload whose CRC fails, or -1."""
    cdef Py_ssize_t n = starts.shape[0], size = buf.shape[0], k
    cdef int64_t a = 0, b = 0
    cdef Py_ssize_t bad = -1
    cdef bint invalid = False
    if ends.shape[0] != n:
        raise ValueError("starts and ends differ in length")
    cdef const uint8_t *base = &buf[0] if size else NULL
    with nogil:
        for k in range(n):
            a = starts[k]
            b = ends[k]
            if a < 0 or b < a or b > size - 4:
                invalid = True
                break
            if masked(crc32c_of(base + a, b - a)) != load32(base + b):
                bad = k
                break
    if invalid:
        raise ValueError(f"payload {k} ({a}..{b}) and its CRC do not lie inside the buffer")
    return bad


def gather_frames(const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t want, uint8_t[::1] out,
                  Py_ssize_t used, int64_t[::1] offsets, Py_ssize_t first,
                  bint check_crc=True, bint stream=False) -> tuple:
    """Walk frames in buf from pos and copy up to `want` payloads into out[used:], back to
    back, in one pass: scan_frames and gather_payloads fused, so each frame is touched
    while it is in cache and the CPU never waits on one header to find the next.

    offsets[first] is set to used and offsets[first + k + 1] to the end of payload k in
    out (room for `want` of them is required). Returns (status, pos, n, length, bad,
    bad_pos, used): n payloads were copied and pos is where the walk stopped; status is LIMIT
    (want reached), NEED_MORE (the frame at pos is not whole in buf; length is its payload
    length, or -1 when its header is incomplete), BAD_LENGTH_CRC (at pos) or OUT_FULL
    (the payload at pos, of `length` bytes, does not fit in out). With check_crc, bad is
    the index of the first payload whose CRC fails and bad_pos its frame's start (the
    payloads from it on are not to be used), else bad is -1. used is where the payloads
    before the first bad one (or all n) end in out. stream=True writes long
    aligned payloads around the caches: for outputs too large to stay cached anyway.
    """
    cdef Py_ssize_t size = buf.shape[0]
    cdef tfrecnp_walk g
    if pos < 0 or pos > size:
        raise ValueError(f"bad window: pos {pos}, buffer {size}")
    if used < 0 or used > out.shape[0] or first < 0 or want < 0 or first + want >= offsets.shape[0]:
        raise ValueError(
            f"bad output: used {used} of {out.shape[0]}, offsets {first} + {want} of "
            f"{offsets.shape[0]}"
        )
    g.buf = &buf[0] if size else NULL
    g.pos = pos
    g.end = size
    g.want = want
    g.n = 0
    g.out = &out[0] if out.shape[0] else NULL
    g.o = used
    g.room = out.shape[0]
    g.offsets = &offsets[first]
    g.status = S_LIMIT
    g.have_length = 0
    g.stream = stream
    g.length = 0
    g.bad = -1
    g.bad_pos = 0
    g.offsets[0] = used
    with nogil:
        if check_crc and use_hw:
            tfrecnp_walk_hw(&g)
        else:
            tfrecnp_walk_sw(&g, tfrecnp_crc_hw if use_hw else crc_sw, check_crc)
    return (
        g.status,
        g.pos,
        g.n,
        int(g.length) if g.have_length else -1,
        g.bad,
        g.bad_pos,
        g.o if g.bad < 0 else g.offsets[g.bad],
    )


def pread_runs(int fd, const int64_t[::1] offsets, const int64_t[::1] sizes,
               uint8_t[::1] out, const int64_t[::1] at) -> tuple:
    """Fill out[at[k] : at[k] + sizes[k]] from byte offsets[k] of the open file fd, for
    every k in turn, with positioned reads (no file position, so threads may share fd)
    and without the GIL: a pass reading records by position makes one call per piece,
    not one Python call per run. Every run is checked to lie inside out first. Returns
    (-1, 0) when every run was read whole, else (k, bytes read of run k) for the first
    run the file ended in (it is shorter than the caller expected); a failed read raises
    OSError."""
    cdef Py_ssize_t n = offsets.shape[0], k, size = out.shape[0]
    cdef int64_t got = 0, want
    cdef ssize_t r
    cdef int err = 0
    cdef Py_ssize_t short = -1
    if sizes.shape[0] != n or at.shape[0] != n:
        raise ValueError("offsets, sizes and at must have one entry per run")
    for k in range(n):
        if sizes[k] < 0 or offsets[k] < 0 or at[k] < 0 or at[k] > size - sizes[k]:
            raise ValueError(f"run {k} does not fit its buffer or the file")
    with nogil:
        for k in range(n):
            got = 0
            want = sizes[k]
            while got < want:
                r = pread(fd, &out[at[k] + got], want - got, offsets[k] + got)
                if r < 0:
                    if errno == EINTR:
                        continue
                    err = errno
                    break
                if r == 0:
                    break
                got += r
            if err or got < want:
                short = k
                break
    if err:
        raise OSError(err, strerror(err).decode())
    if short < 0:
        return (-1, 0)
    return (short, got)
