#ifndef TFRECNP_CRC32C_H
#define TFRECNP_CRC32C_H
/* C for the framing core: the SSE4.2 crc32 instruction needs a per-function target
   attribute and intrinsics, which Cython cannot spell. The CPU is checked at import. */
#include <stdint.h>
#include <string.h>
#define TFRECNP_LONG 8192
/* A frame: uint64 length | uint32 masked CRC32C of it | payload | uint32 masked CRC32C of
   the payload (docs/FORMAT.md; format/frames.py names the same numbers for Python). */
#define TFRECNP_LENGTH_BYTES 8
#define TFRECNP_HEADER_BYTES 12
#define TFRECNP_OVERHEAD_BYTES 16
#define TFRECNP_SHORT 256
static uint32_t tfrecnp_shift_long[4][256];
static uint32_t tfrecnp_shift_short[4][256];

static inline uint32_t tfrecnp_shift(uint32_t t[4][256], uint32_t crc) {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
}

/* gather_frames: walk frames and copy their payloads in one pass (see its docstring).
   Status codes as in the Cython enum; WALK_OUT_FULL: the next payload does not fit. */
#define TFRECNP_WALK_LIMIT 0
#define TFRECNP_WALK_NEED_MORE 1
#define TFRECNP_WALK_BAD_LENGTH_CRC 2
#define TFRECNP_WALK_OUT_FULL 4
typedef uint32_t (*tfrecnp_crc_fn)(uint32_t crc, const uint8_t *p, size_t n);
typedef struct {
    const uint8_t *buf; int64_t pos, end;   /* frames are read from buf[pos:end] */
    int64_t want, n;                        /* records wanted, records taken */
    uint8_t *out; int64_t o, room;          /* payloads go to out[o:room] */
    int64_t *offsets;                       /* offsets[k + 1]: end of record k in out */
    int status, have_length;
    int stream;                             /* non-temporal stores for aligned words */
    uint64_t length;                        /* NEED_MORE / OUT_FULL: the frame's length */
    int64_t bad, bad_pos;                   /* first payload CRC failure, its frame start */
} tfrecnp_walk;
static inline uint32_t tfrecnp_masked(uint32_t c) {
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}
static inline void tfrecnp_walk_check(tfrecnp_walk *g, int64_t i, uint32_t crc,
                                      const uint8_t *end) {
    uint32_t stored;
    memcpy(&stored, end, 4);  /* the payload CRC follows the payload */
    if (tfrecnp_masked(crc) != stored && (g->bad < 0 || i < g->bad)) {
        g->bad = i;
        g->bad_pos = (end - g->buf) - (g->offsets[i + 1] - g->offsets[i]) - TFRECNP_HEADER_BYTES;
    }
}
/* Checks the frame at g->pos and reserves its place in out: returns its payload and
   destination and advances, or returns NULL with g->status set. */
static inline const uint8_t *tfrecnp_walk_take(tfrecnp_walk *g, uint32_t header_crc,
                                               uint8_t **dst, uint64_t *length) {
    int64_t pos = g->pos, left = g->end - pos;
    const uint8_t *h = g->buf + pos;
    uint64_t len;
    uint32_t stored;
    if (g->n >= g->want) { g->status = TFRECNP_WALK_LIMIT; return NULL; }
    if (left < TFRECNP_HEADER_BYTES) { g->status = TFRECNP_WALK_NEED_MORE; return NULL; }
    memcpy(&len, h, TFRECNP_LENGTH_BYTES);
    memcpy(&stored, h + TFRECNP_LENGTH_BYTES, 4);
    if (tfrecnp_masked(header_crc) != stored) { g->status = TFRECNP_WALK_BAD_LENGTH_CRC; return NULL; }
    g->length = len; g->have_length = 1;
    if (left < TFRECNP_OVERHEAD_BYTES || len > (uint64_t)(left - TFRECNP_OVERHEAD_BYTES)) {
        g->status = TFRECNP_WALK_NEED_MORE;
        return NULL;
    }
    if (len > (uint64_t)(g->room - g->o)) { g->status = TFRECNP_WALK_OUT_FULL; return NULL; }
    g->have_length = 0;
    *dst = g->out + g->o;
    *length = len;
    g->o += (int64_t)len;
    g->offsets[++g->n] = g->o;
    g->pos = pos + TFRECNP_OVERHEAD_BYTES + (int64_t)len;
    return h + TFRECNP_HEADER_BYTES;
}
static void tfrecnp_walk_sw(tfrecnp_walk *g, tfrecnp_crc_fn crc, int check) {
    for (;;) {
        uint8_t *q;
        uint64_t len;
        const uint8_t *h = g->buf + g->pos;
        uint32_t hc = g->end - g->pos >= TFRECNP_HEADER_BYTES
                      ? ~crc(0xFFFFFFFFu, h, TFRECNP_LENGTH_BYTES) : 0;
        const uint8_t *p = tfrecnp_walk_take(g, hc, &q, &len);
        if (p == NULL) return;
        if (len) memcpy(q, p, len);  /* an empty output's q is NULL: memcpy(NULL, p, 0) is UB */
        if (check) tfrecnp_walk_check(g, g->n - 1, ~crc(0xFFFFFFFFu, p, len), p + len);
    }
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <nmmintrin.h>
static int tfrecnp_cpu_has_sse42(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & bit_SSE4_2) != 0;
}
/* Three independent crc32 streams hide the instruction's 3-cycle latency; their
   registers are joined with the zero-shift tables (raw register, no pre/post xor). */
#define TFRECNP_3WAY(BLOCK, TABLE)                                              \
    while (n >= 3 * (BLOCK)) {                                                  \
        uint64_t c1 = 0, c2 = 0, a, b, d;                                       \
        const uint8_t *end = p + (BLOCK);                                       \
        do {                                                                    \
            memcpy(&a, p, 8); memcpy(&b, p + (BLOCK), 8); memcpy(&d, p + 2 * (BLOCK), 8); \
            c0 = _mm_crc32_u64(c0, a); c1 = _mm_crc32_u64(c1, b); c2 = _mm_crc32_u64(c2, d); \
            p += 8;                                                             \
        } while (p < end);                                                      \
        c0 = tfrecnp_shift(TABLE, (uint32_t)c0) ^ (uint32_t)c1;                 \
        c0 = tfrecnp_shift(TABLE, (uint32_t)c0) ^ (uint32_t)c2;                 \
        p += 2 * (BLOCK);                                                       \
        n -= 3 * (BLOCK);                                                       \
    }
__attribute__((target("sse4.2")))
static uint32_t tfrecnp_crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c0 = crc, a;
    while (n && ((uintptr_t)p & 7)) { c0 = _mm_crc32_u8((uint32_t)c0, *p++); n--; }
    TFRECNP_3WAY(TFRECNP_LONG, tfrecnp_shift_long)
    TFRECNP_3WAY(TFRECNP_SHORT, tfrecnp_shift_short)
    while (n >= 8) { memcpy(&a, p, 8); c0 = _mm_crc32_u64(c0, a); p += 8; n -= 8; }
    while (n) { c0 = _mm_crc32_u8((uint32_t)c0, *p++); n--; }
    return (uint32_t)c0;
}
/* The 8 length bytes of a frame header: one crc32 instruction, no alignment loop. */
__attribute__((target("sse4.2")))
static uint32_t tfrecnp_crc8_hw(const uint8_t *p) {
    uint64_t a;
    memcpy(&a, p, 8);
    return ~(uint32_t)_mm_crc32_u64(0xFFFFFFFFu, a);
}
/* Copy payloads and check their CRCs in one pass, three records at a time: each lane
   is one record's independent crc32 stream, so short records keep the instruction
   busy too. A lane that finishes takes the next record. Returns the index of the
   first record whose stored masked CRC differs, or -1; every record is copied.

   Branches the CPU cannot predict cost more than the crc work on records of a few
   hundred bytes, so a record's odd r = length % 8 bytes go first, in one crc32 of an
   8-byte load ending at byte r whose (8 - r) leading bytes (header bytes, the payload
   always follows its 12-byte header) are masked to zero: starting that from
   tfrecnp_head_init[r], the register that (8 - r) zero bytes turn into 0xFFFFFFFF,
   gives the CRC of those r bytes. Then every record is whole words, and the lane to
   refill is picked by index rather than by branches. */
static uint32_t tfrecnp_head_init[8];
/* t0 is the byte table of the reflected polynomial; one zero byte maps v to
   (v >> 8) ^ t0[v & 0xff], and the top byte of t0[b] names b, so it inverts. */
static void tfrecnp_init_head(const uint32_t *t0) {
    for (int r = 0; r < 8; r++) {
        uint32_t u = 0xFFFFFFFFu;
        for (int z = 0; z < 8 - r; z++) {
            int b = 0;
            while ((t0[b] >> 24) != (u >> 24)) b++;
            u = ((u ^ t0[b]) << 8) | (uint32_t)b;
        }
        tfrecnp_head_init[r] = u;
    }
}
typedef struct {
    const uint8_t *src; const int64_t *starts, *lengths, *offsets; uint8_t *dst;
    int64_t n, next, base, bad;
} tfrecnp_gather_job;
static inline void tfrecnp_check(tfrecnp_gather_job *g, int64_t i, uint32_t crc, const uint8_t *at) {
    uint32_t stored;
    memcpy(&stored, at, 4);  /* the payload CRC follows the payload */
    if (tfrecnp_masked(crc) != stored && (g->bad < 0 || i < g->bad)) g->bad = i;
}
/* Give the lane the next record of 8 bytes or more (shorter ones are done here).
   Returns 0 when the records ran out. */
__attribute__((target("sse4.2")))
static inline int tfrecnp_lane_start(tfrecnp_gather_job *g, const uint8_t **s, uint8_t **d,
                                     size_t *w, uint64_t *c, int64_t *idx) {
    while (g->next < g->n) {
        int64_t i = g->next++;
        const uint8_t *p = g->src + g->starts[i] + TFRECNP_HEADER_BYTES;
        uint8_t *q = g->dst + (g->offsets[i] - g->base);
        size_t len = (size_t)g->lengths[i], r = len & 7;
        uint64_t head;
        if (len < 8) {
            if (len) memcpy(q, p, len);  /* q is NULL for an empty output */
            tfrecnp_check(g, i, ~tfrecnp_crc_hw(0xFFFFFFFFu, p, len), p + len);
            continue;
        }
        memcpy(&head, p + r - 8, 8);
        head &= r ? ~(uint64_t)0 << (8 * (8 - r)) : 0;
        *c = _mm_crc32_u64(tfrecnp_head_init[r], head);
        memcpy(&head, p, 8);
        memcpy(q, &head, 8);  /* covers the r odd bytes; words rewrite the rest alike */
        *s = p + r; *d = q + r; *w = len >> 3; *idx = i;
        return 1;
    }
    return 0;
}
__attribute__((target("sse4.2")))
static int64_t tfrecnp_gather_hw(const uint8_t *src, const int64_t *starts,
                                 const int64_t *lengths, int64_t n, uint8_t *dst,
                                 const int64_t *offsets, int64_t base) {
    tfrecnp_gather_job g = {src, starts, lengths, offsets, dst, n, 0, base, -1};
    const uint8_t *s[3];
    uint8_t *d[3];
    size_t w[3], m, j;
    uint64_t c[3], a0, a1, a2;
    int64_t idx[3];
    int k, live = 0;
    while (live < 3 && tfrecnp_lane_start(&g, &s[live], &d[live], &w[live], &c[live], &idx[live]))
        live++;
    while (live == 3) {
        const uint8_t *s0 = s[0], *s1 = s[1], *s2 = s[2];
        uint8_t *d0 = d[0], *d1 = d[1], *d2 = d[2];
        uint64_t c0 = c[0], c1 = c[1], c2 = c[2];
        k = w[0] <= w[1] ? (w[0] <= w[2] ? 0 : 2) : (w[1] <= w[2] ? 1 : 2);
        m = w[k];
        for (j = 0; j < 8 * m; j += 8) {
            memcpy(&a0, s0 + j, 8); memcpy(&a1, s1 + j, 8); memcpy(&a2, s2 + j, 8);
            c0 = _mm_crc32_u64(c0, a0); c1 = _mm_crc32_u64(c1, a1); c2 = _mm_crc32_u64(c2, a2);
            memcpy(d0 + j, &a0, 8); memcpy(d1 + j, &a1, 8); memcpy(d2 + j, &a2, 8);
        }
        s[0] = s0 + 8 * m; s[1] = s1 + 8 * m; s[2] = s2 + 8 * m;
        d[0] = d0 + 8 * m; d[1] = d1 + 8 * m; d[2] = d2 + 8 * m;
        c[0] = c0; c[1] = c1; c[2] = c2;
        w[0] -= m; w[1] -= m; w[2] -= m;
        tfrecnp_check(&g, idx[k], ~(uint32_t)c[k], s[k]);  /* lane k is done */
        if (!tfrecnp_lane_start(&g, &s[k], &d[k], &w[k], &c[k], &idx[k])) {
            s[k] = s[2]; d[k] = d[2]; w[k] = w[2]; c[k] = c[2]; idx[k] = idx[2];
            live = 2;
        }
    }
    for (k = 0; k < live; k++) {  /* records ran out: finish the lanes one by one */
        memcpy(d[k], s[k], 8 * w[k]);
        c[k] = tfrecnp_crc_hw((uint32_t)c[k], s[k], 8 * w[k]);
        tfrecnp_check(&g, idx[k], ~(uint32_t)c[k], s[k] + 8 * w[k]);
    }
    return g.bad;
}
/* The next frame into a lane (payloads under 8 bytes are finished here): returns 0
   when the walk stops. Prefetches the header after it, whose address is now known. */
__attribute__((target("sse4.2")))
static inline int tfrecnp_walk_lane(tfrecnp_walk *g, const uint8_t **s, uint8_t **d,
                                    uint64_t *w, uint64_t *c, int64_t *idx) {
    for (;;) {
        uint8_t *q;
        uint64_t len, head, hw = 0;
        size_t r;
        if (g->end - g->pos >= TFRECNP_HEADER_BYTES)
            memcpy(&hw, g->buf + g->pos, TFRECNP_LENGTH_BYTES);
        const uint8_t *p = tfrecnp_walk_take(g, ~(uint32_t)_mm_crc32_u64(0xFFFFFFFFu, hw), &q, &len);
        if (p == NULL) return 0;
        __builtin_prefetch(g->buf + g->pos);
        if (len < 8) {
            if (len) memcpy(q, p, len);  /* q is NULL for an empty output */
            tfrecnp_walk_check(g, g->n - 1, ~tfrecnp_crc_hw(0xFFFFFFFFu, p, len), p + len);
            continue;
        }
        r = len & 7;
        memcpy(&head, p + r - 8, 8);
        head &= r ? ~(uint64_t)0 << (8 * (8 - r)) : 0;
        *c = _mm_crc32_u64(tfrecnp_head_init[r], head);
        memcpy(&head, p, 8);
        memcpy(q, &head, 8);
        *s = p + r; *d = q + r; *w = len >> 3; *idx = g->n - 1;
        return 1;
    }
}
__attribute__((target("sse4.2")))
static inline void tfrecnp_walk_finish(tfrecnp_walk *g, const uint8_t *s, uint8_t *d,
                                       uint64_t w, uint64_t c, int64_t idx) {
    memcpy(d, s, 8 * w);
    c = tfrecnp_crc_hw((uint32_t)c, s, 8 * w);
    tfrecnp_walk_check(g, idx, ~(uint32_t)c, s + 8 * w);
}
/* Swap lanes A and B when COND, without a branch (the CPU could not predict it). */
#define TFRECNP_SWAP_IF(COND, A, B)                                              \
    do {                                                                         \
        uint64_t m_ = -(uint64_t)(COND), t_;                                     \
        t_ = ((uintptr_t)s##A ^ (uintptr_t)s##B) & m_;                           \
        s##A = (const uint8_t *)((uintptr_t)s##A ^ t_);                          \
        s##B = (const uint8_t *)((uintptr_t)s##B ^ t_);                          \
        t_ = ((uintptr_t)d##A ^ (uintptr_t)d##B) & m_;                           \
        d##A = (uint8_t *)((uintptr_t)d##A ^ t_);                                \
        d##B = (uint8_t *)((uintptr_t)d##B ^ t_);                                \
        t_ = (w##A ^ w##B) & m_; w##A ^= t_; w##B ^= t_;                         \
        t_ = (c##A ^ c##B) & m_; c##A ^= t_; c##B ^= t_;                         \
        t_ = ((uint64_t)i##A ^ (uint64_t)i##B) & m_;                             \
        i##A = (int64_t)((uint64_t)i##A ^ t_); i##B = (int64_t)((uint64_t)i##B ^ t_); \
    } while (0)
__attribute__((target("sse4.2")))
static void tfrecnp_walk_hw(tfrecnp_walk *g) {
    const uint8_t *s0, *s1, *s2;
    uint8_t *d0, *d1, *d2;
    uint64_t w0, w1, w2, c0, c1, c2, a0, a1, a2, m, j;
    int64_t i0, i1, i2;
    if (!tfrecnp_walk_lane(g, &s0, &d0, &w0, &c0, &i0)) return;
    if (!tfrecnp_walk_lane(g, &s1, &d1, &w1, &c1, &i1)) {
        tfrecnp_walk_finish(g, s0, d0, w0, c0, i0);
        return;
    }
    if (!tfrecnp_walk_lane(g, &s2, &d2, &w2, &c2, &i2)) {
        tfrecnp_walk_finish(g, s0, d0, w0, c0, i0);
        tfrecnp_walk_finish(g, s1, d1, w1, c1, i1);
        return;
    }
    for (;;) {
        TFRECNP_SWAP_IF(w1 < w0, 0, 1);  /* lane 0: the record that ends first */
        TFRECNP_SWAP_IF(w2 < w0, 0, 2);
        m = 8 * w0;
        if (g->stream && !(((uintptr_t)d0 | (uintptr_t)d1 | (uintptr_t)d2) & 7)) {
            /* A batch larger than the caches: write around them, saving the read of
               each destination line that an ordinary store would cost. */
            for (j = 0; j < m; j += 8) {
                memcpy(&a0, s0 + j, 8); memcpy(&a1, s1 + j, 8); memcpy(&a2, s2 + j, 8);
                c0 = _mm_crc32_u64(c0, a0); c1 = _mm_crc32_u64(c1, a1); c2 = _mm_crc32_u64(c2, a2);
                _mm_stream_si64((long long *)(d0 + j), (long long)a0);
                _mm_stream_si64((long long *)(d1 + j), (long long)a1);
                _mm_stream_si64((long long *)(d2 + j), (long long)a2);
            }
        } else {
            for (j = 0; j < m; j += 8) {
                memcpy(&a0, s0 + j, 8); memcpy(&a1, s1 + j, 8); memcpy(&a2, s2 + j, 8);
                c0 = _mm_crc32_u64(c0, a0); c1 = _mm_crc32_u64(c1, a1); c2 = _mm_crc32_u64(c2, a2);
                memcpy(d0 + j, &a0, 8); memcpy(d1 + j, &a1, 8); memcpy(d2 + j, &a2, 8);
            }
        }
        s0 += m; s1 += m; s2 += m; d0 += m; d1 += m; d2 += m;
        w1 -= w0; w2 -= w0;
        tfrecnp_walk_check(g, i0, ~(uint32_t)c0, s0);
        if (!tfrecnp_walk_lane(g, &s0, &d0, &w0, &c0, &i0)) {
            tfrecnp_walk_finish(g, s1, d1, w1, c1, i1);
            tfrecnp_walk_finish(g, s2, d2, w2, c2, i2);
            if (g->stream) _mm_sfence();  /* order them before anything that follows */
            return;
        }
    }
}
#else
static int tfrecnp_cpu_has_sse42(void) { return 0; }
static uint32_t tfrecnp_crc_hw(uint32_t crc, const uint8_t *p, size_t n) { return crc; }
static int64_t tfrecnp_gather_hw(const uint8_t *src, const int64_t *starts,
                                 const int64_t *lengths, int64_t n, uint8_t *dst,
                                 const int64_t *offsets, int64_t base) { return -1; }
static uint32_t tfrecnp_crc8_hw(const uint8_t *p) { return 0; }
static void tfrecnp_init_head(const uint32_t *t0) { }
static void tfrecnp_walk_hw(tfrecnp_walk *g) { }
#endif
#endif
