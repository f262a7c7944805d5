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

/* Riegeli's key: 'Riegeli/', 'records\n', 'Riegeli/', 'records\n' as little-endian words */
static uint64_t tfrecnp_riegeli_hash(const uint8_t *data, size_t size) {
    static const uint64_t key[4] = {0x2f696c6567656952ULL, 0x0a7364726f636572ULL,
                                    0x2f696c6567656952ULL, 0x0a7364726f636572ULL};
    return tfrecnp_highway64(key, data, size);
}
#endif
