#ifndef TFRECNP_BIGCOPY_H
#define TFRECNP_BIGCOPY_H
/* A copy of a big value (a tensor, an image) into its column. A batch's rows are far larger
   than the cache, so ordinary stores first read each destination line in only to overwrite
   it; streaming (non-temporal) stores skip that read and double the copy's rate into a
   block of big rows (benchmarks/CONSTANTS.md, BIGCOPY_BYTES). Smaller values, and machines
   without SSE2, take memcpy. The fence makes the stores visible before the call returns. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#define TFRECNP_BIGCOPY_BYTES 4096

static inline void tfrecnp_bigcopy(uint8_t *dst, const uint8_t *src, size_t n) {
#if defined(__SSE2__)
    if (n >= TFRECNP_BIGCOPY_BYTES) {
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        memcpy(dst, src, head);
        dst += head; src += head; n -= head;
        for (; n >= 64; n -= 64, dst += 64, src += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)src);
            __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
            _mm_stream_si128((__m128i *)dst, a);
            _mm_stream_si128((__m128i *)(dst + 16), b);
            _mm_stream_si128((__m128i *)(dst + 32), c);
            _mm_stream_si128((__m128i *)(dst + 48), d);
        }
        _mm_sfence();
    }
#endif
    if (n) memcpy(dst, src, n);
}
#endif
