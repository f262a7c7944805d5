# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The protobuf wire format of tf.train.Example, read: the primitives and the message walks
that the decoder's two passes and the survey share (decode.pyx cimports them; all inline,
no GIL, no Python object).

Every reader takes the walk's context (Ctx), a position and the end of the message it lies
in, and returns where reading goes on; NULL (or -1) means malformed, after `fail` recorded
in Ctx what, where in the message tree and at which byte. Every length is checked against
the bytes that remain before it is used; a varint stops at 10 bytes.

A message whose fields are messages (Example, Feature, FeatureList) is walked by
`next_field`, which skips unknown fields; the maps (Features, FeatureLists) by `next_entry`,
which also reads each entry's key and value. A Feature's kind, count and bytes come from
`feature`.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t

cdef extern from "varint.h":
    uint64_t TFRECNP_HIGH
    uint64_t TFRECNP_LOW7
    uint64_t tfrecnp_load64(const uint8_t *p) noexcept nogil
    int tfrecnp_ctz(uint64_t x) noexcept nogil
    int tfrecnp_clz(uint64_t x) noexcept nogil
    uint64_t tfrecnp_squeeze(uint64_t w) noexcept nogil
    int tfrecnp_count_high(uint64_t m) noexcept nogil
    int64_t tfrecnp_decode_varints(const uint8_t *p, const uint8_t *end, int64_t *out,
                                   int64_t cap) noexcept nogil
    int64_t tfrecnp_decode_varints_pext(const uint8_t *p, const uint8_t *end, int64_t *out,
                                        int64_t cap) noexcept nogil
    int tfrecnp_fast_pext() noexcept nogil

# Malformed-protobuf reasons (decode.MALFORMED_REASONS words them).
cdef enum:
    M_VARINT_LONG = 1
    M_VARINT_TRUNC = 2
    M_LENGTH = 3
    M_FIXED_TRUNC = 4
    M_WIRE_TYPE = 5
    M_BAD_TAG = 6
    M_WRONG_WIRE = 7
    M_FLOAT_PACKED = 8
    M_PACKED_VARINT = 9

# Where in the message tree (decode.WHERE words them).
cdef enum:
    W_EXAMPLE = 1
    W_FEATURES = 2
    W_ENTRY = 3
    W_FEATURE = 4
    W_BYTES_LIST = 5
    W_FLOAT_LIST = 6
    W_INT64_LIST = 7
    W_FEATURE_LISTS = 8
    W_FEATURE_LIST_ENTRY = 9
    W_FEATURE_LIST = 10

# A Feature's kind: its oneof field number.
cdef enum:
    KIND_BYTES = 1
    KIND_FLOAT = 2
    KIND_INT64 = 3
    KIND_MIXED = 4

cdef enum:
    GUESSES = 32  # map entries per record whose feature is predicted from the last record


cdef struct Ctx:
    int guess[2][GUESSES]  # the decoder's: feature at each entry position of the previous
                           # record, or -1
    const uint8_t *base   # start of the record
    const uint8_t *limit  # end of the batch's buffer: words may be read up to here
    int code
    int where
    int feature
    int64_t offset
    int64_t a
    int64_t b


cdef struct FScan:
    int kind
    const uint8_t *run
    int64_t count
    int64_t nbytes
    const uint8_t *first      # first bytes value
    int64_t first_len
    const uint8_t *block      # first packed block of numbers
    const uint8_t *block_end
    int pieces                # packed blocks + single values seen


cdef struct Entry:            # one map entry
    const uint8_t *key        # the key's bytes (no key: "", at the entry's start)
    int64_t key_len
    const uint8_t *val        # the value message, or NULL when the entry has none
    const uint8_t *val_end
    const uint8_t *end        # the entry's end


# --- primitives ----------------------------------------------------------------------

cdef inline const uint8_t *fail(Ctx *c, const uint8_t *at, int code, int where,
                                int64_t a, int64_t b) noexcept nogil:
    if c.code == 0:
        c.code = code
        c.where = where
        c.offset = at - c.base
        c.a = a
        c.b = b
    return NULL


cdef inline const uint8_t *varint(Ctx *c, const uint8_t *p, const uint8_t *end,
                                  uint64_t *out, int where) noexcept nogil:
    cdef uint64_t r = 0, b
    cdef int shift = 0
    cdef const uint8_t *start = p
    if p < end and p[0] < 0x80:
        out[0] = p[0]
        return p + 1
    while shift < 70:
        if p >= end:
            return fail(c, start, M_VARINT_TRUNC, where, 0, 0)
        b = p[0]
        p += 1
        r |= (b & 0x7F) << shift
        if b < 0x80:
            out[0] = r
            return p
        shift += 7
    return fail(c, start, M_VARINT_LONG, where, 0, 0)


cdef inline const uint8_t *tag(Ctx *c, const uint8_t *p, const uint8_t *end,
                               uint64_t *field, int *wt, int where) noexcept nogil:
    cdef uint64_t t
    cdef const uint8_t *at = p
    if p < end and p[0] < 0x80:
        t = p[0]
        p += 1
    else:
        p = varint(c, p, end, &t, where)
        if p == NULL:
            return NULL
    if t >> 3 == 0 or t >> 32:  # a tag has 32 bits; there is no field 0
        return fail(c, at, M_BAD_TAG, where, <int64_t>t, 0)
    field[0] = t >> 3
    wt[0] = t & 7
    return p


cdef inline const uint8_t *delimited(Ctx *c, const uint8_t *p, const uint8_t *end,
                                     const uint8_t **stop, int where) noexcept nogil:
    """Reads a length; stop = the end of the field it announces (checked against end)."""
    cdef uint64_t n
    cdef const uint8_t *at = p
    p = varint(c, p, end, &n, where)
    if p == NULL:
        return NULL
    if n > <uint64_t>(end - p):
        return fail(c, at, M_LENGTH, where, <int64_t>(n & (~(<uint64_t>0) >> 1)), end - p)
    stop[0] = p + n
    return p


cdef inline const uint8_t *skip(Ctx *c, const uint8_t *at, const uint8_t *p,
                                const uint8_t *end, uint64_t field, int wt,
                                int where) noexcept nogil:
    """Skips the value of an unknown field whose tag (at `at`) has been read."""
    cdef uint64_t v
    cdef const uint8_t *q
    if wt == 0:
        return varint(c, p, end, &v, where)
    if wt == 2:
        p = delimited(c, p, end, &q, where)
        return q if p != NULL else NULL
    if wt == 1:
        if end - p < 8:
            return fail(c, p, M_FIXED_TRUNC, where, 8, end - p)
        return p + 8
    if wt == 5:
        if end - p < 4:
            return fail(c, p, M_FIXED_TRUNC, where, 4, end - p)
        return p + 4
    return fail(c, at, M_WIRE_TYPE, where, <int64_t>field, wt)


cdef inline int64_t short_length(const uint8_t **pp, const uint8_t *end) noexcept nogil:
    """A length of one or two varint bytes at pp[0] (then moved past it), or -1."""
    cdef const uint8_t *p = pp[0]
    if end - p >= 1 and p[0] < 0x80:
        pp[0] = p + 1
        return p[0]
    if end - p >= 2 and p[1] < 0x80:
        pp[0] = p + 2
        return (p[0] & 0x7F) | (<int64_t>p[1] << 7)
    return -1


# --- messages of messages --------------------------------------------------------------

cdef inline const uint8_t *next_field(Ctx *c, const uint8_t *p, const uint8_t *end,
                                     int last, int where, int *field,
                                     const uint8_t **body) noexcept nogil:
    """Steps past the next field numbered 1..last, skipping the unknown fields before it,
    and returns where it ends: field[0] is its number, body[0] where its contents start
    (these fields are messages or strings: any wire type but length-delimited is
    malformed). field[0] = 0 when the message ends first; NULL when malformed."""
    cdef uint64_t f
    cdef int wt
    cdef const uint8_t *at
    cdef const uint8_t *stop
    while p < end:
        at = p
        p = tag(c, p, end, &f, &wt, where)
        if p == NULL:
            return NULL
        if f > <uint64_t>last:
            p = skip(c, at, p, end, f, wt, where)
            if p == NULL:
                return NULL
            continue
        if wt != 2:
            return fail(c, at, M_WRONG_WIRE, where, <int64_t>f, wt)
        p = delimited(c, p, end, &stop, where)
        if p == NULL:
            return NULL
        body[0] = p
        field[0] = <int>f
        return stop
    field[0] = 0
    return p


cdef inline const uint8_t *next_entry(Ctx *c, const uint8_t *p, const uint8_t *end,
                                      int where, int ewhere, Entry *e) noexcept nogil:
    """Steps past the next entry of the map field [1] of Features / FeatureLists (where:
    that message; ewhere: its entries) and returns e.end, where it ends, with e's key and
    value (in either order in the entry; the last of each wins); e.end = NULL when the map
    ends first (returns end); NULL when malformed."""
    cdef uint64_t field
    cdef int wt, found
    cdef const uint8_t *at
    cdef const uint8_t *q
    cdef const uint8_t *stop = next_field(c, p, end, 1, where, &found, &p)
    if stop == NULL:
        return NULL
    if found == 0:
        e.end = NULL
        return stop
    e.key = p
    e.key_len = 0
    e.val = NULL
    e.val_end = NULL
    e.end = stop
    while p < stop:  # the entry: key [1], value [2]
        at = p
        p = tag(c, p, stop, &field, &wt, ewhere)
        if p == NULL:
            return NULL
        if field == 1 or field == 2:
            if wt != 2:
                return fail(c, at, M_WRONG_WIRE, ewhere, <int64_t>field, wt)
            p = delimited(c, p, stop, &q, ewhere)
            if p == NULL:
                return NULL
            if field == 1:
                e.key = p
                e.key_len = q - p
            else:
                e.val = p
                e.val_end = q
            p = q
        else:
            p = skip(c, at, p, stop, field, wt, ewhere)
            if p == NULL:
                return NULL
    return stop


# --- a Feature -------------------------------------------------------------------------

cdef inline const uint8_t *count_varints(Ctx *c, const uint8_t *p, const uint8_t *end,
                                         int64_t *count) noexcept nogil:
    """Counts the varints of a packed block, checking each (<= 10 bytes, inside the block).

    Eight bytes at a time: a byte below 0x80 ends a varint, so the count is the number of
    clear high bits; `run` carries the continuation bytes since the last end across words.
    """
    cdef int64_t n = 0, rem
    cdef int run = 0, lead
    cdef uint64_t m
    cdef const uint8_t *start = p
    while end - p >= 8:
        m = ~tfrecnp_load64(p) & TFRECNP_HIGH
        if m == 0:
            run += 8
            if run >= 10:
                break
        else:
            lead = tfrecnp_ctz(m) >> 3
            if run + lead >= 10:
                run = 10  # an overlong varint: found again bytewise below
                break
            run = tfrecnp_clz(m) >> 3
            n += tfrecnp_count_high(m)
        p += 8
    if p < end and run < 10 and end - p < 8 and c.limit - p >= 8:
        # the last 1..7 bytes: one word read past the block (still inside the batch's
        # buffer), the bytes beyond the block masked off
        rem = end - p
        m = ~tfrecnp_load64(p) & TFRECNP_HIGH & ((<uint64_t>1 << (8 * rem)) - 1)
        if m == 0:
            run += rem
        elif run + (tfrecnp_ctz(m) >> 3) >= 10:
            run = 10
        else:
            run = rem - 1 - ((63 - tfrecnp_clz(m)) >> 3)
            n += tfrecnp_count_high(m)
        p = end
    while p < end:
        if p[0] < 0x80:
            n += 1
            run = 0
        else:
            run += 1
            if run >= 10:
                break
        p += 1
    count[0] += n
    if run >= 10:
        # find the first overlong varint, bytewise, for the error's offset
        p = start
        while p < end:
            start = p
            while p < end and p[0] >= 0x80 and p - start < 10:
                p += 1
            if p - start >= 10:
                return fail(c, start, M_VARINT_LONG, W_INT64_LIST, 0, 0)
            p += 1
    if run:
        return fail(c, end - run, M_PACKED_VARINT, W_INT64_LIST, 0, 0)
    return p


cdef inline const uint8_t *scan_list(Ctx *c, int kind, const uint8_t *p,
                                     const uint8_t *end, FScan *fs) noexcept nogil:
    """Adds the values of one BytesList / FloatList / Int64List message to fs."""
    cdef uint64_t field, v
    cdef int wt
    cdef int where = W_BYTES_LIST if kind == KIND_BYTES else (
        W_FLOAT_LIST if kind == KIND_FLOAT else W_INT64_LIST)
    cdef const uint8_t *at
    cdef const uint8_t *q
    while p < end:
        at = p
        p = tag(c, p, end, &field, &wt, where)
        if p == NULL:
            return NULL
        if field != 1:
            p = skip(c, at, p, end, field, wt, where)
            if p == NULL:
                return NULL
            continue
        if kind == KIND_BYTES:
            if wt != 2:
                return fail(c, at, M_WRONG_WIRE, where, 1, wt)
            p = delimited(c, p, end, &q, where)
            if p == NULL:
                return NULL
            if fs.first == NULL:
                fs.first = p
                fs.first_len = q - p
            fs.count += 1
            fs.nbytes += q - p
            fs.pieces += 1
            p = q
        elif kind == KIND_FLOAT:
            if wt == 2:
                p = delimited(c, p, end, &q, where)
                if p == NULL:
                    return NULL
                if (q - p) & 3:
                    return fail(c, at, M_FLOAT_PACKED, where, q - p, 0)
                fs.count += (q - p) >> 2
                if fs.pieces == 0:
                    fs.block, fs.block_end = p, q
                fs.pieces += 1
                p = q
            elif wt == 5:
                if end - p < 4:
                    return fail(c, p, M_FIXED_TRUNC, where, 4, end - p)
                fs.count += 1
                fs.pieces += 2  # not a single block
                p += 4
            else:
                return fail(c, at, M_WRONG_WIRE, where, 1, wt)
        else:
            if wt == 2:
                p = delimited(c, p, end, &q, where)
                if p == NULL:
                    return NULL
                if count_varints(c, p, q, &fs.count) == NULL:
                    return NULL
                if fs.pieces == 0:
                    fs.block, fs.block_end = p, q
                fs.pieces += 1
                p = q
            elif wt == 0:
                p = varint(c, p, end, &v, where)
                if p == NULL:
                    return NULL
                fs.count += 1
                fs.pieces += 2  # not a single block
            else:
                return fail(c, at, M_WRONG_WIRE, where, 1, wt)
    return p


cdef inline void scan_reset(FScan *fs, const uint8_t *run) noexcept nogil:
    fs.run = run
    fs.count = 0
    fs.nbytes = 0
    fs.first = NULL
    fs.first_len = 0
    fs.pieces = 0


cdef inline const uint8_t *scan_feature(Ctx *c, const uint8_t *p, const uint8_t *end,
                                        FScan *fs) noexcept nogil:
    """Kind, value count and bytes of one Feature message; fs.run is where the run of
    list fields of the final kind starts (an earlier member of the oneof is dropped; unknown
    fields just before it may be in the run, which `emit` skips)."""
    cdef const uint8_t *body
    cdef const uint8_t *q
    cdef int field
    fs.kind = 0
    scan_reset(fs, p)
    while True:
        q = next_field(c, p, end, 3, W_FEATURE, &field, &body)
        if q == NULL:
            return NULL
        if field == 0:
            return q
        if field != fs.kind:
            fs.kind = field
            scan_reset(fs, p)
        if scan_list(c, fs.kind, body, q, fs) == NULL:
            return NULL
        p = q


cdef inline int one_block(Ctx *c, const uint8_t *val, const uint8_t *end, int *kind,
                          int64_t *count, int64_t *nbytes, const uint8_t **block) noexcept nogil:
    """The usual Feature, one list field holding one packed block of numbers or one bytes
    value (at block[0]..end), read without the general walk: 1 (kind, count and bytes as
    scan_feature finds them), 0 (some other shape, for scan_feature) or -1 (a malformed
    packed int64 list, as scan_feature finds it)."""
    cdef const uint8_t *p = val + 1
    cdef int64_t n
    if end - val < 4 or (val[0] != 0x0A and val[0] != 0x12 and val[0] != 0x1A):
        return 0
    kind[0] = val[0] >> 3
    n = short_length(&p, end)
    if n != end - p or n < 2 or p[0] != 0x0A:  # the list: one field, values [1] packed
        return 0
    p += 1
    n = short_length(&p, end)
    if n != end - p or (kind[0] == KIND_FLOAT and n & 3):
        return 0
    block[0] = p
    nbytes[0] = 0
    if kind[0] == KIND_BYTES:
        count[0] = 1
        nbytes[0] = n
    elif kind[0] == KIND_FLOAT:
        count[0] = n >> 2
    else:
        count[0] = 0
        if count_varints(c, p, end, count) == NULL:
            return -1
    return 1


cdef inline bint feature(Ctx *c, const uint8_t *p, const uint8_t *end, FScan *fs) noexcept nogil:
    """scan_feature, with the usual shape read directly; False when malformed."""
    cdef int got = one_block(c, p, end, &fs.kind, &fs.count, &fs.nbytes, &fs.block)
    if got == 0:
        return scan_feature(c, p, end, fs) != NULL
    fs.run = p
    fs.pieces = 1
    fs.block_end = end
    fs.first = fs.block if fs.kind == KIND_BYTES else NULL
    fs.first_len = fs.nbytes
    return got > 0
