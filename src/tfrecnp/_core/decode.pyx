# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""tf.train.Example / SequenceExample wire format -> column buffers, driven by a plan.

The messages (proto3; field numbers in brackets)::

    Example         { Features features [1] }
    SequenceExample { Features context [1]; FeatureLists feature_lists [2] }
    Features        { map<string, Feature> feature [1] }          entry: key [1], value [2]
    FeatureLists    { map<string, FeatureList> feature_list [1] }
    FeatureList     { repeated Feature feature [1] }
    Feature         { oneof { BytesList [1]; FloatList [2]; Int64List [3] } }
    BytesList       { repeated bytes value [1] }
    FloatList       { repeated float value [1] }    packed (wire 2) or one per tag (wire 5)
    Int64List       { repeated int64 value [1] }    packed (wire 2) or one per tag (wire 0)

Decoding a batch (one uint8 buffer; record r is data[starts[r]:ends[r]], so records may lie
back to back or still in the frames they were read in) takes two passes, both without the
GIL and without a Python object per record:

1. `scan` walks every record once. For each (record, spec feature) it writes one row of
   the int64 table (see R_* below): where the feature's values lie, their kind, count and
   byte total (the last map entry of a name wins, as in protobuf). Each record is then
   checked against the plan (kind, count, size); the first malformed record or schema
   violation stops the scan with a status the Python layer turns into an error. Per-chunk
   totals say how large each output must be.
2. `fill` copies the values into the preallocated outputs: fixed features straight to
   their row, variable ones at running positions that start from per-chunk bases, so
   disjoint chunks fill in parallel threads. When the scan found a feature's values in
   one packed block (the usual case) fill goes straight to it: a packed float list is
   one memcpy, a packed int64 list is decoded eight bytes at a time (with BMI2's pext
   where it is fast), a Raw value is one memcpy.

`survey` lists every feature of every record without a plan, for schema inference.

The wire primitives and the message walks both share (a tag, a length, a map entry, a
Feature's kind and counts) are in wire.pxd.

Protobuf rules kept: packed and unpacked lists; merged repeated fields (a list split over
several tags, several Features messages) concatenate; a oneof member replaced by another
kind is dropped; unknown fields are skipped; map entries may hold the value before the key;
a missing key is "" and a missing value an empty Feature (no kind: the feature is missing).
Only spec features are looked at, so damage inside other features goes unnoticed.
Varints longer than 10 bytes, lengths past the end of their message, unknown wire types
(groups included) and known fields with the wrong wire type are malformed. Every length
is checked against the bytes that remain before it is used.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize



cdef extern from "bigcopy.h":
    void tfrecnp_bigcopy(uint8_t *dst, const uint8_t *src, size_t n) noexcept nogil

from .wire cimport (
    GUESSES, KIND_BYTES, KIND_FLOAT, KIND_INT64, KIND_MIXED, M_BAD_TAG, M_FIXED_TRUNC,
    M_FLOAT_PACKED, M_LENGTH, M_PACKED_VARINT, M_VARINT_LONG, M_VARINT_TRUNC, M_WIRE_TYPE,
    M_WRONG_WIRE, W_BYTES_LIST, W_ENTRY, W_EXAMPLE, W_FEATURE, W_FEATURE_LIST,
    W_FEATURE_LIST_ENTRY, W_FEATURE_LISTS, W_FEATURES, W_FLOAT_LIST, W_INT64_LIST, Ctx, Entry,
    FScan, delimited, feature, next_entry, next_field, one_block, scan_feature, skip, tag,
    tfrecnp_decode_varints, tfrecnp_decode_varints_pext, tfrecnp_fast_pext, varint,
)

import sys

import numpy as np

if sys.byteorder != "little":  # float lists are copied as little-endian bytes
    raise ImportError("tfrecnp's decoder needs a little-endian CPU")

# Scan status.
cdef enum:
    ST_OK = 0
    ST_MALFORMED = 1
    ST_SCHEMA = 2
    ST_BAD_OFFSETS = 3
    ST_FULL = 4           # survey: output arrays are full (resume at the record returned)
    ST_INCONSISTENT = 5   # fill: the data no longer matches the scan (changed in between)

# Schema violations.
cdef enum:
    S_MISSING = 1
    S_KIND = 2
    S_COUNT = 3
    S_MULTIPLE = 4
    S_RAW_COUNT = 5
    S_RAW_SIZE = 6
    S_MIXED = 7
    S_STEP_COUNT = 8
    S_STEP_MULTIPLE = 9
    S_STEP_RAW_COUNT = 10
    S_STEP_RAW_SIZE = 11

# Operations: how a feature's values land in its outputs.
cdef enum:
    OP_DENSE = 1        # FixedLen numeric: count values at row r * count
    OP_DENSE_BYTES = 2  # FixedLen bytes: count values, data at running positions
    OP_VAR = 3          # VarLen numeric: running values, row splits
    OP_VAR_BYTES = 4    # VarLen bytes
    OP_RAW = 5          # Raw, known size: one bytes value at row r * raw_bytes
    OP_RAW_VAR = 6      # Raw, first axis varies: running bytes, splits in rows of divisor bytes
    OP_RAW_ANY = 7      # Raw, size resolved per batch: like OP_RAW, the size checked in Python
    OP_SEQ = 8          # sequence FixedLen numeric: count values per step
    OP_SEQ_BYTES = 9    # sequence FixedLen bytes
    OP_SEQ_VAR = 10     # sequence VarLen numeric: inner splits per step
    OP_SEQ_VAR_BYTES = 11
    OP_SEQ_RAW = 12     # sequence Raw: one value of raw_bytes per step

# Table row fields, one row per (record, spec feature).
cdef enum:
    R_START = 0       # context: start of the Feature's run of list fields; sequence: FeatureList body
    R_END = 1
    R_COUNT = 2       # values (all steps)
    R_NBYTES = 3      # bytes of bytes values (all steps)
    R_STEPS = 4
    R_BAD_STEP = 5    # first step breaking the plan, or -1
    R_BLOCK = 4       # context features: the values' one packed block (or bytes value),
    R_BLOCK_END = 5   # or -1 when they are spread over several fields
    R_BAD_VALUE = 6   # what that step held (count, bytes or kind)
    R_KIND = 7        # kind | bad-step code << 8
    NFIELDS = 8

# Survey entry fields.
cdef enum:
    V_RECORD = 0
    V_SECTION = 1
    V_KEY_START = 2
    V_KEY_LEN = 3
    V_KIND = 4
    V_COUNT = 5
    V_NBYTES = 6
    V_STEPS = 7
    V_STEP_MIN = 8
    V_STEP_MAX = 9
    V_FIRST_START = 10
    V_FIRST_LEN = 11
    VFIELDS = 12

OK, MALFORMED, SCHEMA, BAD_OFFSETS, FULL, INCONSISTENT = (
    ST_OK, ST_MALFORMED, ST_SCHEMA, ST_BAD_OFFSETS, ST_FULL, ST_INCONSISTENT)
OPS = {
    "dense": OP_DENSE, "dense_bytes": OP_DENSE_BYTES, "var": OP_VAR, "var_bytes": OP_VAR_BYTES,
    "raw": OP_RAW, "raw_var": OP_RAW_VAR, "raw_any": OP_RAW_ANY, "seq": OP_SEQ,
    "seq_bytes": OP_SEQ_BYTES, "seq_var": OP_SEQ_VAR, "seq_var_bytes": OP_SEQ_VAR_BYTES,
    "seq_raw": OP_SEQ_RAW,
}
MALFORMED_REASONS = {
    M_VARINT_LONG: "a varint runs past 10 bytes",
    M_VARINT_TRUNC: "the message ends inside a varint",
    M_LENGTH: "a field of {a} bytes runs past the end of its message ({b} bytes left)",
    M_FIXED_TRUNC: "a {a}-byte field runs past the end of its message ({b} bytes left)",
    M_WIRE_TYPE: "field {a} has the invalid wire type {b}",
    M_BAD_TAG: "an invalid tag ({a})",
    M_WRONG_WIRE: "field {a} has wire type {b}, expected {expected}",
    M_FLOAT_PACKED: "a packed float list of {a} bytes (not a multiple of 4)",
    M_PACKED_VARINT: "a packed int64 list ends inside a varint",
}
WHERE = {
    W_EXAMPLE: "the Example", W_FEATURES: "Features", W_ENTRY: "a Features map entry",
    W_FEATURE: "a Feature", W_BYTES_LIST: "a BytesList", W_FLOAT_LIST: "a FloatList",
    W_INT64_LIST: "an Int64List", W_FEATURE_LISTS: "FeatureLists",
    W_FEATURE_LIST_ENTRY: "a FeatureLists map entry", W_FEATURE_LIST: "a FeatureList",
}
SCHEMA_CODES = {
    S_MISSING: "missing", S_KIND: "kind", S_COUNT: "count", S_MULTIPLE: "multiple",
    S_RAW_COUNT: "raw_count", S_RAW_SIZE: "raw_size", S_MIXED: "mixed",
    S_STEP_COUNT: "step_count", S_STEP_MULTIPLE: "step_multiple",
    S_STEP_RAW_COUNT: "step_raw_count", S_STEP_RAW_SIZE: "step_raw_size",
}
ROW_FIELDS = NFIELDS
ROW_END = R_END  # where a feature's list ends in its record; 0 when the feature is absent
ROW_COUNT, ROW_NBYTES, ROW_STEPS, ROW_BAD_STEP, ROW_BAD_VALUE, ROW_KIND = (
    R_COUNT, R_NBYTES, R_STEPS, R_BAD_STEP, R_BAD_VALUE, R_KIND)
SURVEY_FIELDS = VFIELDS

cdef uint64_t FNV_BASIS = 0xcbf29ce484222325
cdef uint64_t FNV_PRIME = 0x100000001b3


cdef struct FeatPlan:
    int section          # 0: Example features / SequenceExample context; 1: feature lists
    int op
    int kind             # expected wire kind
    int64_t count        # values per record (per step in a sequence)
    int64_t divisor      # VarLen: values per inner row; Raw var: bytes per row
    int64_t raw_bytes    # Raw: bytes per record (per step in a sequence)
    int has_default
    int64_t dflt_start   # default: bytes in PlanC.dflt (numeric: count values as stored)
    int64_t dflt_nbytes
    int64_t dflt_lens    # bytes default: index of its count value lengths in PlanC.dflt_lens


cdef struct PlanC:
    FeatPlan *feats
    int nfeat
    const uint8_t *keys
    int64_t *key_off
    int32_t *slots
    uint64_t mask
    const uint8_t *dflt
    int64_t *dflt_lens
    bint sequence


cdef struct Out:
    uint8_t *values      # numeric values, raw bytes, or the data of bytes values
    int64_t vcap         # capacity: values (numeric) or bytes (data)
    int64_t *offsets     # bytes values: offsets (value count + 1), or NULL
    int64_t ocap
    int64_t *splits      # record splits (n + 1), or NULL
    int64_t *inner       # sequence VarLen: step splits (steps + 1), or NULL
    int64_t icap
    int64_t vpos         # running value (or offsets) index
    int64_t bpos         # running byte position
    int64_t spos         # running step index
    int64_t raw_bytes    # OP_RAW_ANY: this batch's size


cdef uint8_t EMPTY[1]  # what an empty buffer points at
cdef bint use_pext = tfrecnp_fast_pext() != 0


cdef inline int64_t decode_varints(const uint8_t *p, const uint8_t *end, int64_t *out,
                                   int64_t cap) noexcept nogil:
    if use_pext:
        return tfrecnp_decode_varints_pext(p, end, out, cap)
    return tfrecnp_decode_varints(p, end, out, cap)


def has_fast_pext() -> bool:
    """Whether packed int64 lists decode with BMI2's pext on this CPU."""
    return use_pext


def decode_packed_varints(const uint8_t[::1] block, *, pext=None):
    """The int64 values of one valid packed varint block (for tests: pext=True / False
    forces one implementation)."""
    cdef Py_ssize_t size = block.shape[0]
    cdef bint fast = use_pext if pext is None else bool(pext)
    if fast and not use_pext and pext:
        raise RuntimeError("this CPU has no fast pext")
    out = np.empty(size + 8, np.int64)
    cdef int64_t[::1] o = out
    cdef const uint8_t *p = &block[0] if size else NULL
    cdef int64_t n
    with nogil:
        if fast:
            n = tfrecnp_decode_varints_pext(p, p + size, &o[0], size + 8)
        else:
            n = tfrecnp_decode_varints(p, p + size, &o[0], size + 8)
    return out[:n]


# --- plan lookups --------------------------------------------------------------------

cdef inline uint64_t key_hash(const uint8_t *k, int64_t n, int section) noexcept nogil:
    cdef uint64_t h = FNV_BASIS ^ <uint64_t>section
    cdef int64_t i
    for i in range(n):
        h = (h ^ k[i]) * FNV_PRIME
    return h ^ (h >> 29)


cdef inline int lookup(const PlanC *pl, int section, const uint8_t *k,
                       int64_t n) noexcept nogil:
    cdef uint64_t i = key_hash(k, n, section) & pl.mask
    cdef int f
    while True:
        f = pl.slots[i]
        if f < 0:
            return -1
        if pl.feats[f].section == section and is_key(pl, f, k, n):
            return f
        i = (i + 1) & pl.mask


cdef inline bint is_key(const PlanC *pl, int f, const uint8_t *k, int64_t n) noexcept nogil:
    cdef const uint8_t *name = pl.keys + pl.key_off[f]
    cdef int64_t i
    if pl.key_off[f + 1] - pl.key_off[f] != n:
        return False
    for i in range(n):  # feature names are short: a loop beats a call to memcmp
        if name[i] != k[i]:
            return False
    return True


cdef inline int find_feature(const PlanC *pl, Ctx *c, int section, int entry,
                             const uint8_t *k, int64_t n) noexcept nogil:
    """The spec feature named k, or -1. Records of a dataset list their features in one
    order, so the feature the previous record had at this position is tried first."""
    cdef int f
    if entry < GUESSES:
        f = c.guess[section][entry]
        if f >= 0 and is_key(pl, f, k, n):
            return f
    f = lookup(pl, section, k, n)
    if entry < GUESSES:
        c.guess[section][entry] = f
    return f


# --- pass 1: scan --------------------------------------------------------------------

cdef inline void step_check(const FeatPlan *fp, int64_t *row, int64_t step,
                            FScan *fs) noexcept nogil:
    """Records the first step of a feature list that breaks the plan."""
    cdef int code = 0
    cdef int64_t value = 0
    cdef int kind = row[R_KIND] & 0xFF
    if fs.kind != 0 and kind != 0 and fs.kind != kind:
        code = S_MIXED
        value = fs.kind
    elif fs.kind != 0 and kind == 0:
        row[R_KIND] = (row[R_KIND] & ~(<int64_t>0xFF)) | fs.kind
    if code == 0:
        if fp.op == OP_SEQ or fp.op == OP_SEQ_BYTES:
            if fs.count != fp.count:
                code, value = S_STEP_COUNT, fs.count
        elif fp.op == OP_SEQ_VAR:
            if fs.count % fp.divisor:
                code, value = S_STEP_MULTIPLE, fs.count
        elif fp.op == OP_SEQ_RAW:
            if fs.count != 1:
                code, value = S_STEP_RAW_COUNT, fs.count
            elif fs.nbytes != fp.raw_bytes:
                code, value = S_STEP_RAW_SIZE, fs.nbytes
    if code != 0 and row[R_BAD_STEP] < 0:
        row[R_BAD_STEP] = step
        row[R_BAD_VALUE] = value
        row[R_KIND] = (row[R_KIND] & 0xFF) | (code << 8)


cdef bint scan_feature_list(Ctx *c, const FeatPlan *fp, const uint8_t *p,
                            const uint8_t *end, int64_t *row) noexcept nogil:
    """Fills the row of a sequence feature from its FeatureList; False when malformed."""
    cdef const uint8_t *step
    cdef const uint8_t *q
    cdef int got
    cdef FScan fs
    row[R_START] = p - c.base
    row[R_END] = end - c.base
    row[R_COUNT] = 0
    row[R_NBYTES] = 0
    row[R_STEPS] = 0
    row[R_BAD_STEP] = -1
    row[R_BAD_VALUE] = 0
    row[R_KIND] = 0
    while True:
        q = next_field(c, p, end, 1, W_FEATURE_LIST, &got, &step)
        if q == NULL or got == 0:
            return q != NULL
        if not feature(c, step, q, &fs):
            return False
        step_check(fp, row, row[R_STEPS], &fs)
        row[R_COUNT] += fs.count
        row[R_NBYTES] += fs.nbytes
        row[R_STEPS] += 1
        p = q


cdef bint scan_map(const PlanC *pl, Ctx *c, const uint8_t *p, const uint8_t *end,
                   int section, int64_t *rows) noexcept nogil:
    """Walks Features (section 0) or FeatureLists (section 1), filling the rows of the
    spec features it meets; False when malformed."""
    cdef int where = W_FEATURES if section == 0 else W_FEATURE_LISTS
    cdef int ewhere = W_ENTRY if section == 0 else W_FEATURE_LIST_ENTRY
    cdef Entry e
    cdef int64_t *row
    cdef int entry = 0, got, kind, f
    cdef int64_t count, nbytes
    cdef const uint8_t *block
    cdef FScan fs
    while True:
        p = next_entry(c, p, end, where, ewhere, &e)
        if p == NULL or e.end == NULL:
            return p != NULL
        f = find_feature(pl, c, section, entry, e.key, e.key_len)
        entry += 1
        if f < 0:
            continue
        row = rows + f * NFIELDS
        c.feature = f
        if section == 1:
            if e.val == NULL:
                e.val = e.val_end = e.end
            if not scan_feature_list(c, &pl.feats[f], e.val, e.val_end, row):
                return False
        else:
            if e.val == NULL:
                fs.kind = 0
                fs.count = fs.nbytes = 0
                fs.pieces = 0
                fs.run = e.end
                e.val_end = e.end
            else:
                got = one_block(c, e.val, e.val_end, &kind, &count, &nbytes, &block)
                if got < 0:
                    return False
                if got > 0:  # straight to the row: fs would go through memory
                    row[R_START] = e.val - c.base
                    row[R_END] = e.val_end - c.base
                    row[R_COUNT] = count
                    row[R_NBYTES] = nbytes
                    row[R_KIND] = kind
                    row[R_BLOCK] = block - c.base
                    row[R_BLOCK_END] = e.val_end - c.base
                    c.feature = -1
                    continue
                if scan_feature(c, e.val, e.val_end, &fs) == NULL:
                    return False
            row[R_START] = fs.run - c.base
            row[R_END] = e.val_end - c.base
            row[R_COUNT] = fs.count
            row[R_NBYTES] = fs.nbytes
            row[R_KIND] = fs.kind
            row[R_BLOCK] = -1
            if fs.pieces == 1:
                if fs.kind == KIND_BYTES:
                    row[R_BLOCK] = fs.first - c.base
                    row[R_BLOCK_END] = fs.first - c.base + fs.first_len
                else:
                    row[R_BLOCK] = fs.block - c.base
                    row[R_BLOCK_END] = fs.block_end - c.base
        c.feature = -1


cdef int check_record(const PlanC *pl, int64_t *rows, int64_t *totals,
                      int *bad_feature) noexcept nogil:
    """Checks one scanned record against the plan and adds it to the totals
    (per feature: values, bytes, steps, missing). Returns a schema code or 0."""
    cdef int f, kind, code
    cdef const FeatPlan *fp
    cdef int64_t *row
    cdef int64_t *tot
    for f in range(pl.nfeat):
        fp = &pl.feats[f]
        row = rows + f * NFIELDS
        tot = totals + 4 * f
        kind = row[R_KIND] & 0xFF
        code = 0
        if fp.section == 1:
            code = row[R_KIND] >> 8
            if code == 0 and kind != 0 and kind != fp.kind:
                code = S_KIND
        elif kind == 0:
            if fp.op == OP_DENSE or fp.op == OP_DENSE_BYTES:
                if not fp.has_default:
                    code = S_MISSING
                else:
                    tot[0] += fp.count
                    tot[1] += fp.dflt_nbytes
                    tot[3] += 1
                    continue
            elif fp.op == OP_RAW or fp.op == OP_RAW_VAR or fp.op == OP_RAW_ANY:
                code = S_MISSING
            else:
                tot[3] += 1
                continue
        elif kind != fp.kind:
            code = S_KIND
        elif fp.op == OP_DENSE or fp.op == OP_DENSE_BYTES:
            if row[R_COUNT] != fp.count:
                code = S_COUNT
        elif fp.op == OP_VAR:
            if row[R_COUNT] % fp.divisor:
                code = S_MULTIPLE
        elif fp.op == OP_RAW or fp.op == OP_RAW_VAR or fp.op == OP_RAW_ANY:
            if row[R_COUNT] != 1:
                code = S_RAW_COUNT
            elif fp.op == OP_RAW and row[R_NBYTES] != fp.raw_bytes:
                code = S_RAW_SIZE
            elif fp.op != OP_RAW and row[R_NBYTES] % fp.divisor:
                code = S_RAW_SIZE
        if code:
            bad_feature[0] = f
            return code
        tot[0] += row[R_COUNT]
        tot[1] += row[R_NBYTES]
        if fp.section == 1:
            tot[2] += row[R_STEPS]
    return 0


cdef int scan_record(const PlanC *pl, Ctx *c, const uint8_t *p, const uint8_t *end,
                     int64_t *rows) noexcept nogil:
    cdef int f
    cdef const uint8_t *body
    cdef const uint8_t *q
    for f in range(pl.nfeat):  # a context row is read only once its kind is set
        rows[f * NFIELDS + R_KIND] = 0
        if pl.feats[f].section == 1:
            memset(rows + f * NFIELDS, 0, NFIELDS * sizeof(int64_t))
            rows[f * NFIELDS + R_BAD_STEP] = -1
    while True:  # Example: features [1]; SequenceExample: context [1], feature_lists [2]
        q = next_field(c, p, end, 2 if pl.sequence else 1, W_EXAMPLE, &f, &body)
        if q == NULL or f == 0:
            return q != NULL
        if not scan_map(pl, c, body, q, f - 1, rows):
            return 0
        p = q


cdef inline bint offsets_ok(const int64_t *offsets, Py_ssize_t lo, Py_ssize_t hi,
                            Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t r
    for r in range(lo, hi):
        if offsets[r] < 0 or offsets[r] > offsets[r + 1] or offsets[r + 1] > size:
            return False
    return True


cdef class Plan:
    """A spec compiled for the core: per feature its name, section, operation, expected
    kind and sizes, and default; names looked up through an open-addressing hash table."""

    cdef PlanC c
    cdef bytes _keys
    cdef bytes _dflt
    cdef readonly int nfeat

    def __cinit__(self, list names, list sections, list ops, list kinds, list counts,
                  list divisors, list raw_bytes, list defaults, bint sequence):
        cdef int f, n = len(names)
        cdef uint64_t size = 8, i
        cdef list dflt_parts = []
        cdef list dflt_lens = []
        cdef int64_t pos = 0
        self.nfeat = n
        self.c.nfeat = n
        self.c.sequence = sequence
        self._keys = b"".join(names)
        self.c.keys = self._keys
        self.c.feats = <FeatPlan *>malloc(max(n, 1) * sizeof(FeatPlan))
        self.c.key_off = <int64_t *>malloc((n + 1) * sizeof(int64_t))
        while size < 2 * <uint64_t>max(n, 1):
            size *= 2
        self.c.slots = <int32_t *>malloc(size * sizeof(int32_t))
        if not self.c.feats or not self.c.key_off or not self.c.slots:
            raise MemoryError()
        self.c.mask = size - 1
        for i in range(size):
            self.c.slots[i] = -1
        self.c.key_off[0] = 0
        for f in range(n):
            self.c.key_off[f + 1] = self.c.key_off[f] + len(names[f])
            fp = &self.c.feats[f]
            fp.section = sections[f]
            fp.op = ops[f]
            fp.kind = kinds[f]
            fp.count = counts[f]
            fp.divisor = max(<int64_t>divisors[f], 1)
            fp.raw_bytes = raw_bytes[f]
            fp.has_default = defaults[f] is not None
            fp.dflt_start = pos
            fp.dflt_nbytes = 0
            fp.dflt_lens = len(dflt_lens)
            if defaults[f] is not None:
                data, lens = defaults[f]
                dflt_parts.append(data)
                fp.dflt_nbytes = len(data) if lens is None else sum(lens)
                pos += len(data)
                if lens is not None:
                    dflt_lens.extend(lens)
        for f in range(n):
            i = key_hash(self.c.keys + self.c.key_off[f],
                         self.c.key_off[f + 1] - self.c.key_off[f],
                         self.c.feats[f].section) & self.c.mask
            while self.c.slots[i] >= 0:
                i = (i + 1) & self.c.mask
            self.c.slots[i] = f
        self._dflt = b"".join(dflt_parts)
        self.c.dflt = self._dflt
        self.c.dflt_lens = <int64_t *>malloc(max(len(dflt_lens), 1) * sizeof(int64_t))
        if not self.c.dflt_lens:
            raise MemoryError()
        for f in range(len(dflt_lens)):
            self.c.dflt_lens[f] = dflt_lens[f]

    def __dealloc__(self):
        free(self.c.feats)
        free(self.c.key_off)
        free(self.c.slots)
        free(self.c.dflt_lens)


cdef class _Buffers:
    """The buffers a call's records lie in: one (record r is data[starts[r]:ends[r]]), or
    a list of them with which[r] naming record r's (a shuffle pool's blocks, decoded where
    they are). Holds them acquired while the call runs without the GIL."""

    cdef const uint8_t **base
    cdef int64_t *size
    cdef Py_ssize_t count
    cdef const int64_t *which
    cdef list views

    def __cinit__(self, data, which, Py_ssize_t hi):
        cdef const uint8_t[::1] view
        cdef const int64_t[::1] picks
        parts = data if which is not None else [data]
        if which is not None and not isinstance(data, list):
            raise ValueError("records in several buffers need a list of them")
        self.count = len(parts)
        self.views = []
        self.which = NULL
        self.base = <const uint8_t **>malloc(max(self.count, 1) * sizeof(uint8_t *))
        self.size = <int64_t *>malloc(max(self.count, 1) * sizeof(int64_t))
        if self.base == NULL or self.size == NULL:
            raise MemoryError()
        for k in range(self.count):
            view = parts[k]
            self.views.append(view)
            self.size[k] = view.shape[0]
            self.base[k] = &view[0] if view.shape[0] else EMPTY  # never NULL + offset
        if which is not None:
            picks = which
            if picks.shape[0] < hi:
                raise ValueError("which: fewer entries than records")
            self.views.append(picks)
            self.which = &picks[0] if picks.shape[0] else NULL

    def __dealloc__(self):
        free(self.base)
        free(self.size)

    cdef inline Py_ssize_t of(self, Py_ssize_t r) noexcept nogil:
        return self.which[r] if self.which != NULL else 0

    cdef bint spans_ok(self, const int64_t *starts, const int64_t *ends, Py_ssize_t lo,
                       Py_ssize_t hi) noexcept nogil:
        cdef Py_ssize_t r, k
        for r in range(lo, hi):
            k = self.of(r)
            if (k < 0 or k >= self.count or starts[r] < 0 or starts[r] > ends[r]
                    or ends[r] > self.size[k]):
                return False
        return True


def scan(Plan plan, data, const int64_t[::1] starts, const int64_t[::1] ends,
         Py_ssize_t lo, Py_ssize_t hi, int64_t[:, :, ::1] table, int64_t[:, ::1] totals,
         which=None) -> tuple:
    """Pass 1 over records lo..hi (record r: data[starts[r]:ends[r]]; back to back
    records pass offsets[:-1] and offsets[1:]; with `which`, data is a list of buffers and
    record r lies in data[which[r]]): fills table[lo:hi] ((n, nfeat, ROW_FIELDS)) and adds
    to totals ((nfeat, 4): values, bytes, steps, missing). Returns (status, record, a, b):
    (OK, -1, 0, 0); (MALFORMED, record, payload offset, reason << 8 | where) with the
    feature in `last_error`; (SCHEMA, record, feature, code); (BAD_OFFSETS, ...)."""
    cdef Py_ssize_t r, k
    cdef int nfeat = plan.c.nfeat, bad_feature = -1, code = 0, status = ST_OK
    cdef _Buffers buffers = _Buffers(data, which, hi)
    cdef const uint8_t *base
    cdef Ctx c
    cdef int64_t record = -1
    if hi > lo and (starts.shape[0] < hi or ends.shape[0] < hi or table.shape[0] < hi
                    or table.shape[1] != nfeat or table.shape[2] != NFIELDS
                    or totals.shape[0] != nfeat or totals.shape[1] != 4):
        raise ValueError("scan: arrays do not match the plan and the record range")
    if hi <= lo:
        return ST_OK, -1, 0, 0
    cdef int64_t *rows = &table[0, 0, 0]
    cdef int64_t *tot = &totals[0, 0] if nfeat else NULL
    c.a = c.b = 0
    memset(c.guess, 0xFF, sizeof(c.guess))
    with nogil:
        if not buffers.spans_ok(&starts[0], &ends[0], lo, hi):
            status = ST_BAD_OFFSETS
        else:
            for r in range(lo, hi):
                k = buffers.of(r)
                base = buffers.base[k]
                c.limit = base + buffers.size[k]
                c.base = base + starts[r]
                c.code = 0
                c.feature = -1
                if not scan_record(&plan.c, &c, c.base, base + ends[r],
                                   rows + r * nfeat * NFIELDS):
                    status = ST_MALFORMED
                    record = r
                    break
                code = check_record(&plan.c, rows + r * nfeat * NFIELDS, tot, &bad_feature)
                if code:
                    status = ST_SCHEMA
                    record = r
                    break
    if status == ST_MALFORMED:
        return status, record, c.offset, (c.code, c.where, c.feature, c.a, c.b)
    if status == ST_SCHEMA:
        return status, record, bad_feature, code
    return status, record, 0, 0


# --- pass 2: fill --------------------------------------------------------------------

cdef const uint8_t *emit(Ctx *c, int kind, const uint8_t *p, const uint8_t *end,
                         Out *o, int64_t limit) noexcept nogil:
    """Copies the values of a Feature's run of list fields into o; at most `limit` values
    (or bytes, for Raw, whose o.offsets is NULL)."""
    cdef uint64_t field, v
    cdef int wt
    cdef int64_t n, stop = o.vpos + limit
    cdef const uint8_t *at
    cdef const uint8_t *q
    cdef const uint8_t *s
    cdef float *fout
    cdef int64_t *iout
    while p < end:
        at = p
        p = tag(c, p, end, &field, &wt, W_FEATURE)
        if p == NULL:
            return NULL
        if <int>field != kind or wt != 2:
            p = skip(c, at, p, end, field, wt, W_FEATURE)
            if p == NULL:
                return NULL
            continue
        p = delimited(c, p, end, &q, W_FEATURE)
        if p == NULL:
            return NULL
        while p < q:  # the list message
            at = p
            p = tag(c, p, q, &field, &wt, W_FEATURE)
            if p == NULL:
                return NULL
            if field != 1:
                p = skip(c, at, p, q, field, wt, W_FEATURE)
                if p == NULL:
                    return NULL
                continue
            if kind == KIND_FLOAT:
                fout = <float *>o.values
                if wt == 5:
                    if q - p < 4 or o.vpos >= stop or o.vpos >= o.vcap:
                        return NULL
                    memcpy(fout + o.vpos, p, 4)
                    o.vpos += 1
                    p += 4
                    continue
                p = delimited(c, p, q, &s, W_FEATURE)
                if p == NULL:
                    return NULL
                n = (s - p) >> 2
                if o.vpos + n > stop or o.vpos + n > o.vcap:
                    return NULL
                if n:
                    memcpy(fout + o.vpos, p, n * 4)
                o.vpos += n
                p = s
            elif kind == KIND_INT64:
                iout = <int64_t *>o.values
                if wt == 0:
                    if o.vpos >= stop or o.vpos >= o.vcap:
                        return NULL
                    p = varint(c, p, q, &v, W_FEATURE)
                    if p == NULL:
                        return NULL
                    iout[o.vpos] = <int64_t>v
                    o.vpos += 1
                    continue
                p = delimited(c, p, q, &s, W_FEATURE)
                if p == NULL:
                    return NULL
                n = decode_varints(p, s, iout + o.vpos, min(stop, o.vcap) - o.vpos)
                if n < 0:
                    return NULL
                o.vpos += n
                p = s
            else:
                p = delimited(c, p, q, &s, W_FEATURE)
                if p == NULL:
                    return NULL
                n = s - p
                if o.offsets == NULL:  # Raw: the bytes themselves
                    if o.bpos + n > o.vcap or n > limit:
                        return NULL
                else:
                    if o.vpos >= stop or o.vpos + 1 >= o.ocap or o.bpos + n > o.vcap:
                        return NULL
                if n:
                    tfrecnp_bigcopy(o.values + o.bpos, p, n)
                o.bpos += n
                if o.offsets != NULL:
                    o.vpos += 1
                    o.offsets[o.vpos] = o.bpos
                p = s
    return p


cdef bint emit_default(const PlanC *pl, const FeatPlan *fp, Out *o,
                       int64_t itemsize) noexcept nogil:
    cdef int64_t k, n
    cdef const uint8_t *src = pl.dflt + fp.dflt_start
    if fp.op == OP_DENSE:
        if (o.vpos + fp.count) > o.vcap:
            return False
        if fp.count:
            memcpy(o.values + o.vpos * itemsize, src, fp.count * itemsize)
        o.vpos += fp.count
        return True
    for k in range(fp.count):
        n = pl.dflt_lens[fp.dflt_lens + k]
        if o.vpos + 1 >= o.ocap or o.bpos + n > o.vcap:
            return False
        if n:
            memcpy(o.values + o.bpos, src, n)
        src += n
        o.bpos += n
        o.vpos += 1
        o.offsets[o.vpos] = o.bpos
    return True


cdef bint fill_steps(Ctx *c, const FeatPlan *fp, const uint8_t *p, const uint8_t *end,
                     Out *o) noexcept nogil:
    cdef const uint8_t *step
    cdef const uint8_t *q
    cdef FScan fs
    cdef int64_t limit
    cdef int got
    while True:
        q = next_field(c, p, end, 1, W_FEATURE_LIST, &got, &step)
        if q == NULL or got == 0:
            return q != NULL
        if not feature(c, step, q, &fs):
            return False
        if fs.kind != 0:
            limit = fp.raw_bytes if fp.op == OP_SEQ_RAW else (
                fp.count if fp.op == OP_SEQ or fp.op == OP_SEQ_BYTES else fs.count)
            if emit(c, fs.kind, fs.run, q, o, limit) == NULL:
                return False
        o.spos += 1
        if o.inner != NULL:
            if o.spos >= o.icap:
                return False
            o.inner[o.spos] = o.vpos // fp.divisor
        p = q


cdef bint put(Ctx *c, int kind, const uint8_t *rec, const int64_t *row, Out *o,
             int64_t limit) noexcept nogil:
    """Copies a context feature's values into o: straight from its one packed block (or
    bytes value) when the scan found one, else by walking its list fields."""
    cdef const uint8_t *p
    cdef const uint8_t *q
    cdef int64_t n
    if row[R_BLOCK] < 0:
        return emit(c, kind, rec + row[R_START], rec + row[R_END], o, limit) != NULL
    p = rec + row[R_BLOCK]
    q = rec + row[R_BLOCK_END]
    if kind == KIND_FLOAT:
        n = (q - p) >> 2
        if n > limit or o.vpos + n > o.vcap:
            return False
        if n:
            memcpy((<float *>o.values) + o.vpos, p, n * 4)
        o.vpos += n
    elif kind == KIND_INT64:
        n = decode_varints(p, q, (<int64_t *>o.values) + o.vpos, min(limit, o.vcap - o.vpos))
        if n < 0:
            return False
        o.vpos += n
    else:
        n = q - p
        if o.offsets == NULL:  # Raw: the bytes themselves
            if n > limit or o.bpos + n > o.vcap:
                return False
        elif limit < 1 or o.vpos + 1 >= o.ocap or o.bpos + n > o.vcap:
            return False
        if n:
            tfrecnp_bigcopy(o.values + o.bpos, p, n)
        o.bpos += n
        if o.offsets != NULL:
            o.vpos += 1
            o.offsets[o.vpos] = o.bpos
    return True


cdef bint fill_record(const PlanC *pl, Ctx *c, const uint8_t *rec, const int64_t *rows,
                      int64_t r, Out *outs) noexcept nogil:
    cdef int f, kind
    cdef const FeatPlan *fp
    cdef const int64_t *row
    cdef Out *o
    cdef int64_t itemsize
    for f in range(pl.nfeat):
        fp = &pl.feats[f]
        row = rows + f * NFIELDS
        o = &outs[f]
        kind = row[R_KIND] & 0xFF
        itemsize = 4 if fp.kind == KIND_FLOAT else 8
        if fp.section == 1:
            if kind != 0 or row[R_STEPS]:
                if not fill_steps(c, fp, rec + row[R_START], rec + row[R_END], o):
                    return False
            o.splits[r + 1] = o.spos
            continue
        if fp.op == OP_DENSE:
            o.vpos = r * fp.count
            if kind == 0:
                if not emit_default(pl, fp, o, itemsize):
                    return False
            elif not put(c, kind, rec, row, o, fp.count):
                return False
        elif fp.op == OP_DENSE_BYTES:
            if kind == 0:
                if not emit_default(pl, fp, o, 1):
                    return False
            elif not put(c, kind, rec, row, o, fp.count):
                return False
        elif fp.op == OP_VAR or fp.op == OP_VAR_BYTES:
            if kind != 0 and not put(c, kind, rec, row, o, row[R_COUNT]):
                return False
            o.splits[r + 1] = o.vpos // fp.divisor
        elif fp.op == OP_RAW or fp.op == OP_RAW_ANY:
            o.bpos = r * (fp.raw_bytes if fp.op == OP_RAW else o.raw_bytes)
            if not put(c, kind, rec, row, o, fp.raw_bytes if fp.op == OP_RAW else o.raw_bytes):
                return False
        elif fp.op == OP_RAW_VAR:
            if not put(c, kind, rec, row, o, row[R_NBYTES]):
                return False
            o.splits[r + 1] = o.bpos // fp.divisor
    return True


cdef int64_t *ptr64(object arr) except? NULL:
    cdef int64_t[::1] view
    if arr is None:
        return NULL
    view = arr
    return &view[0] if view.shape[0] else NULL


def fill(Plan plan, data, const int64_t[::1] starts, Py_ssize_t lo, Py_ssize_t hi,
         const int64_t[:, :, ::1] table, list outs, const int64_t[:, ::1] bases,
         which=None) -> int:
    """Pass 2 over records lo..hi (already scanned, from the same data, starts and which).
    outs[f] is (values, offsets, splits, inner, raw_bytes): values a writable C-contiguous
    array (float32 / int64 / uint8), the others int64 arrays or None. bases[f] = (value,
    byte, step) positions where this chunk starts. Returns OK, or INCONSISTENT if the data
    changed since the scan."""
    cdef int nfeat = plan.c.nfeat, f
    cdef Py_ssize_t r, k
    cdef _Buffers buffers = _Buffers(data, which, hi)
    cdef const uint8_t *base
    cdef Out *o
    cdef Ctx c
    cdef bint ok = True
    cdef uint8_t[::1] raw
    if len(outs) != nfeat or bases.shape[0] != nfeat or table.shape[1] != nfeat:
        raise ValueError("fill: outputs do not match the plan")
    if hi <= lo or nfeat == 0:
        return ST_OK
    if starts.shape[0] < hi or table.shape[0] < hi:
        raise ValueError("fill: arrays do not match the record range")
    cdef Out *o_all = <Out *>malloc(nfeat * sizeof(Out))
    if o_all == NULL:
        raise MemoryError()
    keep = []
    try:
        for f in range(nfeat):
            values, offs, splits, inner, raw_bytes = outs[f]
            o = &o_all[f]
            flat = values.reshape(-1).view("uint8")
            keep.append(flat)
            raw = flat
            o.values = &raw[0] if raw.shape[0] else NULL
            isz = values.dtype.itemsize if offs is None and plan.c.feats[f].op not in (
                OP_RAW, OP_RAW_VAR, OP_RAW_ANY, OP_SEQ_RAW) else 1
            o.vcap = raw.shape[0] // isz
            o.offsets = ptr64(offs)
            o.ocap = len(offs) if offs is not None else 0
            o.splits = ptr64(splits)
            o.inner = ptr64(inner)
            o.icap = len(inner) if inner is not None else 0
            o.vpos = bases[f, 0]
            o.bpos = bases[f, 1]
            o.spos = bases[f, 2]
            o.raw_bytes = raw_bytes
            if plan.c.feats[f].section == 1 or plan.c.feats[f].op in (
                    OP_VAR, OP_VAR_BYTES, OP_RAW_VAR):
                if splits is None or len(splits) < hi + 1:
                    raise ValueError("fill: a ragged feature needs row splits")
            if (plan.c.feats[f].op in (OP_DENSE_BYTES, OP_VAR_BYTES, OP_SEQ_BYTES,
                                       OP_SEQ_VAR_BYTES) and offs is None):
                raise ValueError("fill: a bytes feature needs offsets")
            if plan.c.feats[f].op in (OP_SEQ_VAR, OP_SEQ_VAR_BYTES) and inner is None:
                raise ValueError("fill: a sequence VarLen feature needs step splits")
        with nogil:
            for r in range(lo, hi):
                k = buffers.of(r)
                if k < 0 or k >= buffers.count:
                    ok = False
                    break
                base = buffers.base[k]
                c.limit = base + buffers.size[k]
                c.base = base + starts[r]
                c.code = 0
                if not fill_record(&plan.c, &c, c.base, &table[r, 0, 0], r, o_all):
                    ok = False
                    break
    finally:
        free(o_all)
    return ST_OK if ok else ST_INCONSISTENT


# --- one record -----------------------------------------------------------------------

cdef object buffer_of(int64_t nbytes, uint8_t **ptr):
    """A fresh bytearray of nbytes (the caller views it with numpy: writable, owned)."""
    cdef object out = PyByteArray_FromStringAndSize(NULL, nbytes)
    ptr[0] = <uint8_t *>PyByteArray_AS_STRING(out) if nbytes else NULL
    return out


def decode_one(Plan plan, const uint8_t[::1] data, Py_ssize_t start, Py_ssize_t stop):
    """Both passes over the one record data[start:stop], its outputs allocated here: a
    list with per feature (values, offsets, splits, inner), each a bytearray or None,
    laid out as `fill` writes them for a batch of one; or None if the record does not
    decode cleanly (the caller decodes it again as a batch, for the error). `ds[i]`."""
    cdef int nfeat = plan.c.nfeat, f, bad = -1
    cdef Py_ssize_t size = data.shape[0]
    cdef const FeatPlan *fp
    cdef int64_t *row
    cdef int64_t *tot
    cdef int64_t itemsize, nvalues
    cdef Ctx c
    cdef Out *o
    cdef bint ok = True
    if start < 0 or stop < start or stop > size or nfeat == 0:
        return None
    cdef const uint8_t *base = &data[0] if size else EMPTY
    cdef int64_t *rows = <int64_t *>malloc(nfeat * (NFIELDS + 4) * sizeof(int64_t))
    cdef Out *outs = <Out *>malloc(nfeat * sizeof(Out))
    if rows == NULL or outs == NULL:
        free(rows)
        free(outs)
        raise MemoryError()
    cdef int64_t *totals = rows + nfeat * NFIELDS
    memset(totals, 0, nfeat * 4 * sizeof(int64_t))
    memset(c.guess, 0xFF, sizeof(c.guess))
    c.a = c.b = 0
    c.limit = base + size
    c.base = base + start
    c.code = 0
    c.feature = -1
    result = []
    try:
        with nogil:
            ok = (scan_record(&plan.c, &c, c.base, base + stop, rows) != 0
                  and check_record(&plan.c, rows, totals, &bad) == 0)
        if not ok:
            return None
        for f in range(nfeat):
            fp = &plan.c.feats[f]
            row = rows + f * NFIELDS
            tot = totals + 4 * f
            o = &outs[f]
            memset(o, 0, sizeof(Out))
            itemsize = 4 if fp.kind == KIND_FLOAT else 8
            offsets = splits = inner = None
            if fp.op in (OP_DENSE_BYTES, OP_VAR_BYTES, OP_SEQ_BYTES, OP_SEQ_VAR_BYTES):
                values = buffer_of(tot[1], &o.values)
                o.vcap = tot[1]
                offsets = buffer_of(8 * (tot[0] + 1), <uint8_t **>&o.offsets)
                o.offsets[0] = 0
                o.ocap = tot[0] + 1
            elif fp.op in (OP_RAW, OP_RAW_ANY):
                o.raw_bytes = fp.raw_bytes if fp.op == OP_RAW else row[R_NBYTES]
                values = buffer_of(o.raw_bytes, &o.values)
                o.vcap = o.raw_bytes
            elif fp.op == OP_RAW_VAR:
                values = buffer_of(tot[1], &o.values)
                o.vcap = tot[1]
            elif fp.op == OP_SEQ_RAW:
                values = buffer_of(tot[2] * fp.raw_bytes, &o.values)
                o.vcap = tot[2] * fp.raw_bytes
            else:  # numbers: dense, var, seq, seq_var
                nvalues = fp.count if fp.op == OP_DENSE else tot[0]
                values = buffer_of(nvalues * itemsize, &o.values)
                o.vcap = nvalues
            if fp.section == 1 or fp.op in (OP_VAR, OP_VAR_BYTES, OP_RAW_VAR):
                splits = buffer_of(16, <uint8_t **>&o.splits)
                o.splits[0] = 0
            if fp.op in (OP_SEQ_VAR, OP_SEQ_VAR_BYTES):
                inner = buffer_of(8 * (tot[2] + 1), <uint8_t **>&o.inner)
                o.inner[0] = 0
                o.icap = tot[2] + 1
            result.append((values, offsets, splits, inner))
        with nogil:
            c.code = 0
            ok = fill_record(&plan.c, &c, c.base, rows, 0, outs)
        return result if ok else None
    finally:
        free(rows)
        free(outs)


# --- survey (schema inference) -------------------------------------------------------

cdef bint survey_map(Ctx *c, const uint8_t *p, const uint8_t *end, int section,
                     int64_t record, const uint8_t *data, int64_t *out, Py_ssize_t cap,
                     Py_ssize_t *n) noexcept nogil:
    """Lists the entries of Features (section 0) or FeatureLists (section 1) as rows of
    out; False when malformed or out is full (c.code -1)."""
    cdef int where = W_FEATURES if section == 0 else W_FEATURE_LISTS
    cdef int ewhere = W_ENTRY if section == 0 else W_FEATURE_LIST_ENTRY
    cdef int got, kind
    cdef const uint8_t *s
    cdef const uint8_t *step
    cdef const uint8_t *q
    cdef int64_t *e
    cdef Entry en
    cdef FScan fs
    while True:
        p = next_entry(c, p, end, where, ewhere, &en)
        if p == NULL or en.end == NULL:
            return p != NULL
        if n[0] >= cap:
            c.code = -1  # full
            return False
        e = out + n[0] * VFIELDS
        n[0] += 1
        e[V_RECORD] = record
        e[V_SECTION] = section
        e[V_KEY_START] = en.key - data
        e[V_KEY_LEN] = en.key_len
        e[V_KIND] = 0
        e[V_COUNT] = 0
        e[V_NBYTES] = 0
        e[V_STEPS] = 0
        e[V_STEP_MIN] = -1
        e[V_STEP_MAX] = -1
        e[V_FIRST_START] = -1
        e[V_FIRST_LEN] = 0
        if en.val == NULL:
            continue
        if section == 0:
            if scan_feature(c, en.val, en.val_end, &fs) == NULL:
                return False
            e[V_KIND] = fs.kind
            e[V_COUNT] = fs.count
            e[V_NBYTES] = fs.nbytes
            if fs.first != NULL:
                e[V_FIRST_START] = fs.first - data
                e[V_FIRST_LEN] = fs.first_len
            continue
        s = en.val
        while True:  # the FeatureList
            q = next_field(c, s, en.val_end, 1, W_FEATURE_LIST, &got, &step)
            if q == NULL:
                return False
            if got == 0:
                break
            if scan_feature(c, step, q, &fs) == NULL:
                return False
            s = q
            kind = <int>e[V_KIND]
            if fs.kind != 0:
                e[V_KIND] = fs.kind if kind == 0 or kind == fs.kind else KIND_MIXED
            e[V_COUNT] += fs.count
            e[V_NBYTES] += fs.nbytes
            e[V_STEPS] += 1
            if e[V_STEP_MIN] < 0 or fs.count < e[V_STEP_MIN]:
                e[V_STEP_MIN] = fs.count
            if fs.count > e[V_STEP_MAX]:
                e[V_STEP_MAX] = fs.count
            if fs.first != NULL and e[V_FIRST_START] < 0:
                e[V_FIRST_START] = fs.first - data
                e[V_FIRST_LEN] = fs.first_len


cdef bint survey_record(Ctx *c, const uint8_t *p, const uint8_t *end, int64_t record,
                        const uint8_t *data, int64_t *out, Py_ssize_t cap,
                        Py_ssize_t *n) noexcept nogil:
    cdef int f
    cdef const uint8_t *body
    cdef const uint8_t *q
    while True:  # Features [1] and, in a SequenceExample, FeatureLists [2]
        q = next_field(c, p, end, 2, W_EXAMPLE, &f, &body)
        if q == NULL or f == 0:
            return q != NULL
        if not survey_map(c, body, q, f - 1, record, data, out, cap, n):
            return False
        p = q


def survey(const uint8_t[::1] data, const int64_t[::1] offsets, Py_ssize_t lo,
           Py_ssize_t hi, int64_t[:, ::1] out) -> tuple:
    """Lists every map entry of records lo..hi, in order, as rows of `out` ((cap,
    SURVEY_FIELDS)): record, section (0 features/context, 1 feature lists), key start and
    length in data, kind (0 none, 1 bytes, 2 float, 3 int64, 4 mixed), values, bytes,
    steps, min and max values per step, first bytes value start and length.
    Returns (status, next record, entries, detail); FULL when out filled up before
    record `next record` (whose entries are not listed)."""
    cdef Py_ssize_t size = data.shape[0], r, n = 0, kept = 0
    cdef const uint8_t *base = &data[0] if size else EMPTY  # never NULL + offset
    cdef int status = ST_OK
    cdef Ctx c
    cdef Py_ssize_t cap = out.shape[0]
    cdef int64_t *o = &out[0, 0] if cap else NULL
    if out.shape[1] != VFIELDS or offsets.shape[0] < hi + 1:
        raise ValueError("survey: arrays do not match")
    if hi <= lo:
        return ST_OK, hi, 0, None
    c.limit = base + size
    with nogil:
        if not offsets_ok(&offsets[0], lo, hi, size):
            status = ST_BAD_OFFSETS
        r = lo
        while status == ST_OK and r < hi:
            c.base = base + offsets[r]
            c.code = 0
            c.feature = -1
            kept = n
            if not survey_record(&c, c.base, base + offsets[r + 1], r, base, o, cap, &n):
                n = kept
                status = ST_FULL if c.code == -1 else ST_MALFORMED
                break
            r += 1
    if status == ST_MALFORMED:
        return status, r, n, (c.offset, c.code, c.where, c.a, c.b)
    return status, r, n, None
