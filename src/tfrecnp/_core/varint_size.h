#ifndef TFRECNP_VARINT_SIZE_H
#define TFRECNP_VARINT_SIZE_H
#include <stdint.h>
static inline int tfrecnp_varint_size(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return 1 + (63 - __builtin_clzll(v | 1)) / 7;
#else
    int n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
#endif
}
#endif
