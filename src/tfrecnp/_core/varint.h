#ifndef TFRECNP_VARINT_H
#define TFRECNP_VARINT_H
/* Bit tricks for varints, in C because Cython cannot spell 64-bit literals in nogil
   code. m below is always a "terminator mask": bit 8k+7 set where byte k of a word
   is below 0x80, i.e. ends a varint. */
#include <stdint.h>
#include <string.h>
#define TFRECNP_HIGH 0x8080808080808080ULL
#define TFRECNP_LOW7 0x7F7F7F7F7F7F7F7FULL
static inline uint64_t tfrecnp_load64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
#if defined(__GNUC__) || defined(__clang__)
static inline int tfrecnp_ctz(uint64_t x) { return __builtin_ctzll(x); }
static inline int tfrecnp_clz(uint64_t x) { return __builtin_clzll(x); }
#else
static inline int tfrecnp_ctz(uint64_t x) { int n = 0; while (!(x & 1)) { x >>= 1; n++; } return n; }
static inline int tfrecnp_clz(uint64_t x) { int n = 0; while (!(x >> 63)) { x <<= 1; n++; } return n; }
#endif
/* 8 varint bytes, continuation bits cleared -> their 56 payload bits, in order */
static inline uint64_t tfrecnp_squeeze(uint64_t w) {
    w = ((w & 0x7F007F007F007F00ULL) >> 1) | (w & 0x007F007F007F007FULL);
    w = ((w & 0x3FFF00003FFF0000ULL) >> 2) | (w & 0x00003FFF00003FFFULL);
    return ((w & 0x0FFFFFFF00000000ULL) >> 4) | (w & 0x000000000FFFFFFFULL);
}
/* how many bits m has (m holds bits only at 7, 15, ... 63) */
static inline int tfrecnp_count_high(uint64_t m) {
    return (int)(((m >> 7) * 0x0101010101010101ULL) >> 56);
}
/* Decodes a packed block of varints that the scan validated (each <= 10 bytes, the
   block ending at a varint's end) into out[0..cap). Eight bytes at a time: every
   varint ending inside the word is cut out with masks, so the loop carries one
   dependency per word instead of one per varint. Returns the count, or -1 when the
   block holds more than cap values. */
static int64_t tfrecnp_decode_varints(const uint8_t *p, const uint8_t *end,
                                      int64_t *out, int64_t cap) {
    int64_t n = 0;
    while (p < end) {
        if (end - p >= 8 && cap - n >= 8) {
            uint64_t w = tfrecnp_load64(p);
            uint64_t m = ~w & TFRECNP_HIGH;
            if (m) {
                uint64_t v = w & TFRECNP_LOW7;
                int shift = 0;
                p += 8 - (tfrecnp_clz(m) >> 3);
                do {
                    uint64_t upto = ((m & (0 - m)) << 1) - 1;
                    out[n++] = (int64_t)tfrecnp_squeeze((v & upto) >> shift);
                    shift = tfrecnp_ctz(m) + 1;
                    m &= m - 1;
                } while (m);
                continue;
            }
        }
        {   /* one varint, a byte at a time (long ones, the block's tail) */
            uint64_t r = 0;
            int s = 0;
            uint8_t b;
            if (n >= cap) return -1;
            do {
                b = *p++;
                r |= (uint64_t)(b & 0x7F) << s;
                s += 7;
            } while ((b & 0x80) && p < end && s < 64);
            out[n++] = (int64_t)r;
        }
    }
    return n;
}

/* The same with BMI2's pext, which squeezes the 7-bit groups of a varint in one
   instruction, and four varint ends cut per word without a branch when the word holds
   at most four (random lengths make the per-varint loop mispredict). Used where pext
   is fast: Intel, and AMD from Zen 3 (family 0x19) on; Zen 1/2 microcode it. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
static int tfrecnp_fast_pext(void) {
    unsigned int a, b, c, d, vendor;
    if (!__get_cpuid(0, &a, &vendor, &c, &d) || a < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (!(b & (1u << 3)) || !(b & (1u << 8))) return 0;   /* BMI1, BMI2 */
    if (vendor == 0x68747541u) {                            /* "Auth"enticAMD */
        __get_cpuid(1, &a, &b, &c, &d);
        if (((a >> 8) & 0xF) + ((a >> 20) & 0xFF) < 0x19) return 0;
    }
    return 1;
}
__attribute__((target("bmi,bmi2")))
static int64_t tfrecnp_decode_varints_pext(const uint8_t *p, const uint8_t *end,
                                           int64_t *out, int64_t cap) {
    int64_t n = 0;
    while (p < end) {
        if (end - p >= 8 && cap - n >= 8) {
            uint64_t w = tfrecnp_load64(p);
            uint64_t m = ~w & TFRECNP_HIGH;
            if (m) {
                int count = tfrecnp_count_high(m);
                p += 8 - (tfrecnp_clz(m) >> 3);
                if (count <= 4) {
                    /* u_k: bits up to the k-th end; a missing end gives all ones,
                       whose garbage lands past out[n + count) and is overwritten */
                    uint64_t m1 = m & (m - 1), m2 = m1 & (m1 - 1), m3 = m2 & (m2 - 1);
                    uint64_t u0 = ((m & (0 - m)) << 1) - 1;
                    uint64_t u1 = ((m1 & (0 - m1)) << 1) - 1;
                    uint64_t u2 = ((m2 & (0 - m2)) << 1) - 1;
                    uint64_t u3 = ((m3 & (0 - m3)) << 1) - 1;
                    out[n] = (int64_t)_pext_u64(w, u0 & TFRECNP_LOW7);
                    out[n + 1] = (int64_t)_pext_u64(w, u1 & ~u0 & TFRECNP_LOW7);
                    out[n + 2] = (int64_t)_pext_u64(w, u2 & ~u1 & TFRECNP_LOW7);
                    out[n + 3] = (int64_t)_pext_u64(w, u3 & ~u2 & TFRECNP_LOW7);
                    n += count;
                } else {
                    uint64_t prev = 0;
                    do {
                        uint64_t upto = ((m & (0 - m)) << 1) - 1;
                        out[n++] = (int64_t)_pext_u64(w, upto & ~prev & TFRECNP_LOW7);
                        prev = upto;
                        m &= m - 1;
                    } while (m);
                }
                continue;
            }
        }
        {
            uint64_t r = 0;
            int s = 0;
            uint8_t b;
            if (n >= cap) return -1;
            do {
                b = *p++;
                r |= (uint64_t)(b & 0x7F) << s;
                s += 7;
            } while ((b & 0x80) && p < end && s < 64);
            out[n++] = (int64_t)r;
        }
    }
    return n;
}
#else
static int tfrecnp_fast_pext(void) { return 0; }
static int64_t tfrecnp_decode_varints_pext(const uint8_t *p, const uint8_t *end,
                                           int64_t *out, int64_t cap) {
    return tfrecnp_decode_varints(p, end, out, cap);
}
#endif
#endif
