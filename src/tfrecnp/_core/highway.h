#ifndef TFRECNP_HIGHWAY_H
#define TFRECNP_HIGHWAY_H
/* HighwayHash-64 (github.com/google/highwayhash), portable: four 64-bit lanes in each of
   v0, v1, mul0, mul1; every 32-byte packet is added into v1, mixed by 32x32->64 multiplies
   and a byte "zipper merge"; the tail (size % 32 bytes) is folded in as one last packet;
   four permuting rounds finish. Riegeli keys every hash with 'Riegeli/records\n' twice
   (tfrecnp_riegeli_hash). Little-endian loads by memcpy, so any alignment works. */
#include <stdint.h>
#include <string.h>

typedef struct { uint64_t v0[4], v1[4], mul0[4], mul1[4]; } tfrecnp_hh;

static inline uint64_t tfrecnp_hh_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void tfrecnp_hh_reset(tfrecnp_hh *s, const uint64_t key[4]) {
    static const uint64_t m0[4] = {0xdbe6d5d5fe4cce2fULL, 0xa4093822299f31d0ULL,
                                   0x13198a2e03707344ULL, 0x243f6a8885a308d3ULL};
    static const uint64_t m1[4] = {0x3bd39e10cb0ef593ULL, 0xc0acf169b5f18a8cULL,
                                   0xbe5466cf34e90c6cULL, 0x452821e638d01377ULL};
    for (int i = 0; i < 4; i++) {
        s->mul0[i] = m0[i];
        s->mul1[i] = m1[i];
        s->v0[i] = m0[i] ^ key[i];
        s->v1[i] = m1[i] ^ ((key[i] >> 32) | (key[i] << 32));
    }
}

/* the byte shuffle that spreads multiply results over the lanes */
static inline void tfrecnp_hh_zipper(uint64_t v1, uint64_t v0, uint64_t *add1, uint64_t *add0) {
    *add0 += (((v0 & 0xff000000ULL) | (v1 & 0xff00000000ULL)) >> 24) |
             (((v0 & 0xff0000000000ULL) | (v1 & 0xff000000000000ULL)) >> 16) |
             (v0 & 0xff0000ULL) | ((v0 & 0xff00ULL) << 32) |
             ((v1 & 0xff00000000000000ULL) >> 8) | (v0 << 56);
    *add1 += (((v1 & 0xff000000ULL) | (v0 & 0xff00000000ULL)) >> 24) |
             (v1 & 0xff0000ULL) | ((v1 & 0xff0000000000ULL) >> 16) |
             ((v1 & 0xff00ULL) << 24) | ((v0 & 0xff000000000000ULL) >> 8) |
             ((v1 & 0xffULL) << 48) | (v0 & 0xff00000000000000ULL);
}

static inline void tfrecnp_hh_update(tfrecnp_hh *s, const uint64_t lanes[4]) {
    for (int i = 0; i < 4; i++) {
        s->v1[i] += s->mul0[i] + lanes[i];
        s->mul0[i] ^= (s->v1[i] & 0xffffffffULL) * (s->v0[i] >> 32);
        s->v0[i] += s->mul1[i];
        s->mul1[i] ^= (s->v0[i] & 0xffffffffULL) * (s->v1[i] >> 32);
    }
    tfrecnp_hh_zipper(s->v1[1], s->v1[0], &s->v0[1], &s->v0[0]);
    tfrecnp_hh_zipper(s->v1[3], s->v1[2], &s->v0[3], &s->v0[2]);
    tfrecnp_hh_zipper(s->v0[1], s->v0[0], &s->v1[1], &s->v1[0]);
    tfrecnp_hh_zipper(s->v0[3], s->v0[2], &s->v1[3], &s->v1[2]);
}

static inline void tfrecnp_hh_packet(tfrecnp_hh *s, const uint8_t *p) {
    uint64_t lanes[4];
    for (int i = 0; i < 4; i++) lanes[i] = tfrecnp_hh_le64(p + 8 * i);
    tfrecnp_hh_update(s, lanes);
}

/* each 32-bit half of each lane rotated left by count (0..31) */
static inline uint64_t tfrecnp_hh_rot32(uint64_t x, unsigned count) {
    uint32_t lo = (uint32_t)x, hi = (uint32_t)(x >> 32);
    if (count) {
        lo = (lo << count) | (lo >> (32 - count));
        hi = (hi << count) | (hi >> (32 - count));
    }
    return ((uint64_t)hi << 32) | lo;
}

static void tfrecnp_hh_remainder(tfrecnp_hh *s, const uint8_t *bytes, size_t size_mod32) {
    uint8_t packet[32];
    size_t size_mod4 = size_mod32 & 3;
    size_t whole = size_mod32 & ~(size_t)3;
    const uint8_t *rest = bytes + whole;
    memset(packet, 0, sizeof packet);
    for (int i = 0; i < 4; i++) {
        s->v0[i] += ((uint64_t)size_mod32 << 32) + size_mod32;
        s->v1[i] = tfrecnp_hh_rot32(s->v1[i], (unsigned)size_mod32);
    }
    memcpy(packet, bytes, whole);
    if (size_mod32 & 16) {
        for (int i = 0; i < 4; i++) packet[28 + i] = rest[i + size_mod4 - 4];
    } else if (size_mod4) {
        packet[16] = rest[0];
        packet[17] = rest[size_mod4 >> 1];
        packet[18] = rest[size_mod4 - 1];
    }
    tfrecnp_hh_packet(s, packet);
}

static inline uint64_t tfrecnp_hh_swap(uint64_t x) { return (x >> 32) | (x << 32); }

static uint64_t tfrecnp_hh_finish64(tfrecnp_hh *s) {
    for (int r = 0; r < 4; r++) {
        uint64_t permuted[4] = {tfrecnp_hh_swap(s->v0[2]), tfrecnp_hh_swap(s->v0[3]),
                                tfrecnp_hh_swap(s->v0[0]), tfrecnp_hh_swap(s->v0[1])};
        tfrecnp_hh_update(s, permuted);
    }
    return s->v0[0] + s->v1[0] + s->mul0[0] + s->mul1[0];
}

static uint64_t tfrecnp_highway64(const uint64_t key[4], const uint8_t *data, size_t size) {
    tfrecnp_hh s;
    size_t whole = size & ~(size_t)31;
    tfrecnp_hh_reset(&s, key);
    for (size_t i = 0; i < whole; i += 32) tfrecnp_hh_packet(&s, data + i);
    if (size & 31) tfrecnp_hh_remainder(&s, data + whole, size & 31);
    return tfrecnp_hh_finish64(&s);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The same hash with AVX2: the four lanes of each of v0, v1, mul0, mul1 in one register,
   the zipper merge one byte shuffle (pext-free); 3-4x the portable one, whose share of a
   pass over ArrayRecord chunks was a tenth. Chosen at run time (tfrecnp_highway_avx2). */
#include <immintrin.h>

__attribute__((target("avx2")))
static inline __m256i tfrecnp_hh_zipper_avx2(__m256i v) {
    const __m256i order = _mm256_set_epi64x(0x070806090D0A040BLL, 0x000F010E05020C03LL,
                                            0x070806090D0A040BLL, 0x000F010E05020C03LL);
    return _mm256_shuffle_epi8(v, order);
}

#define TFRECNP_HH_UPDATE_AVX2(lanes)                                            \
    do {                                                                         \
        v1 = _mm256_add_epi64(v1, _mm256_add_epi64(mul0, (lanes)));              \
        mul0 = _mm256_xor_si256(mul0, _mm256_mul_epu32(v1, _mm256_srli_epi64(v0, 32))); \
        v0 = _mm256_add_epi64(v0, mul1);                                         \
        mul1 = _mm256_xor_si256(mul1, _mm256_mul_epu32(v0, _mm256_srli_epi64(v1, 32))); \
        v0 = _mm256_add_epi64(v0, tfrecnp_hh_zipper_avx2(v1));                   \
        v1 = _mm256_add_epi64(v1, tfrecnp_hh_zipper_avx2(v0));                   \
    } while (0)

__attribute__((target("avx2")))
static uint64_t tfrecnp_highway64_avx2(const uint64_t key[4], const uint8_t *data, size_t size) {
    tfrecnp_hh s;
    size_t whole = size & ~(size_t)31;
    tfrecnp_hh_reset(&s, key);
    __m256i v0 = _mm256_loadu_si256((const __m256i *)s.v0);
    __m256i v1 = _mm256_loadu_si256((const __m256i *)s.v1);
    __m256i mul0 = _mm256_loadu_si256((const __m256i *)s.mul0);
    __m256i mul1 = _mm256_loadu_si256((const __m256i *)s.mul1);
    for (size_t i = 0; i < whole; i += 32) {
        __m256i packet = _mm256_loadu_si256((const __m256i *)(data + i));
        TFRECNP_HH_UPDATE_AVX2(packet);
    }
    size_t rest = size & 31;
    if (rest) {
        uint8_t packet[32];
        size_t size_mod4 = rest & 3, part = rest & ~(size_t)3;
        const uint8_t *tail = data + whole + part;
        v0 = _mm256_add_epi64(v0, _mm256_set1_epi64x((long long)((rest << 32) + rest)));
        __m128i count = _mm_cvtsi32_si128((int)rest), back = _mm_cvtsi32_si128(32 - (int)rest);
        v1 = _mm256_or_si256(_mm256_sll_epi32(v1, count), _mm256_srl_epi32(v1, back));
        memset(packet, 0, sizeof packet);
        memcpy(packet, data + whole, part);
        if (rest & 16) {
            for (int i = 0; i < 4; i++) packet[28 + i] = tail[i + size_mod4 - 4];
        } else if (size_mod4) {
            packet[16] = tail[0];
            packet[17] = tail[size_mod4 >> 1];
            packet[18] = tail[size_mod4 - 1];
        }
        __m256i lanes = _mm256_loadu_si256((const __m256i *)packet);
        TFRECNP_HH_UPDATE_AVX2(lanes);
    }
    for (int r = 0; r < 4; r++) {  /* v0's 128-bit halves swapped, each lane's 32-bit halves */
        __m256i permuted = _mm256_shuffle_epi32(_mm256_permute4x64_epi64(v0, 0x4E), 0xB1);
        TFRECNP_HH_UPDATE_AVX2(permuted);
    }
    __m256i sum = _mm256_add_epi64(_mm256_add_epi64(v0, v1), _mm256_add_epi64(mul0, mul1));
    return (uint64_t)_mm256_extract_epi64(sum, 0);
}

static int tfrecnp_highway_avx2(void) {
    static int known = -1;
    if (known < 0) known = __builtin_cpu_supports("avx2") ? 1 : 0;
    return known;
}
#else
static uint64_t tfrecnp_highway64_avx2(const uint64_t key[4], const uint8_t *data, size_t size) {
    return tfrecnp_highway64(key, data, size);
}
static int tfrecnp_highway_avx2(void) { return 0; }
#endif

/* Riegeli's key: 'Riegeli/', 'records\n', 'Riegeli/', 'records\n' as little-endian words */
static uint64_t tfrecnp_riegeli_hash(const uint8_t *data, size_t size) {
    static const uint64_t key[4] = {0x2f696c6567656952ULL, 0x0a7364726f636572ULL,
                                    0x2f696c6567656952ULL, 0x0a7364726f636572ULL};
    if (tfrecnp_highway_avx2()) return tfrecnp_highway64_avx2(key, data, size);
    return tfrecnp_highway64(key, data, size);
}
#endif
