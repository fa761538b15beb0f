/* The compiled core's byte loops: finding a line's end, and copying a data value while
 * checking that it is ASCII (included by _core.c, one translation unit).
 *
 * Strategy.  These two loops touch every byte of a stream, so on big events they are
 * most of the time: the rest of the core is per line or per chunk.  Both read 64 bytes
 * per step with SSE2 (part of every x86-64 CPU, so no run-time dispatch), and fall back
 * to plain C elsewhere and for the last bytes of a span.
 *
 * - find_eol() looks for CR and LF in one pass.  Two memchr() calls (one per byte value,
 *   each remembered until the walk passes it) read every byte twice; on lines of 1 KiB
 *   cut by 1500-byte chunks they were 30% of the time (perf), and the fused scan reads
 *   each byte once.
 * - copy_checked() copies and checks in the same pass: a byte's high bit is its ASCII
 *   test, which SSE2's movemask reads for 16 bytes in one instruction.
 *
 * Invariant: neither reads outside s[0:n], nor writes outside dst[0:n].
 */

#ifndef SSE_SANSIO_CORE_SCAN_H
#define SSE_SANSIO_CORE_SCAN_H

/* SSE_SANSIO_NO_SIMD builds the plain loops on x86-64 too: `nox -s sanitize` does, so
 * that the loops other CPUs run are tested under ASan, while every other build and
 * `nox -s cfuzz` run the SSE2 ones. */
#if (defined(__SSE2__) || defined(_M_X64)) && !defined(SSE_SANSIO_NO_SIMD)
#include <emmintrin.h>
#define SCAN_SSE2 1
#endif

/* Bit i set where a[i] is CR or LF (the first set bit of a 16-bit mask is the first
 * line end of those 16 bytes). */
#ifdef SCAN_SSE2
static inline unsigned
eol_mask(__m128i v)
{
    const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf)));
}

static inline Py_ssize_t
first_bit(unsigned m)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctz(m);
#else
    Py_ssize_t i = 0;
    while (!(m & 1u)) {
        m >>= 1;
        i++;
    }
    return i;
#endif
}
#endif

/* Spec: "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A LINE FEED
 * (CRLF) character pair, a single U+000A LINE FEED (LF) character, or a single U+000D
 * CARRIAGE RETURN (CR) character."  Where the first CR or LF of s[0:n] is, or n. */
static inline Py_ssize_t
find_eol(const char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
#ifdef SCAN_SSE2
    for (; n - i >= 64; i += 64) {
        const __m128i *q = (const __m128i *)(const void *)(s + i);
        unsigned m0 = eol_mask(_mm_loadu_si128(q)), m1 = eol_mask(_mm_loadu_si128(q + 1));
        unsigned m2 = eol_mask(_mm_loadu_si128(q + 2)), m3 = eol_mask(_mm_loadu_si128(q + 3));
        if (m0 | m1 | m2 | m3) {
            unsigned low = m0 | m1 << 16;
            return low ? i + first_bit(low) : i + 32 + first_bit(m2 | m3 << 16);
        }
    }
    for (; n - i >= 16; i += 16) {
        unsigned m = eol_mask(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        if (m) {
            return i + first_bit(m);
        }
    }
    if (n >= 16 && i < n) {
        /* The last 16 bytes, the ones already searched shifted out: no byte loop for
         * the tail of a line (most lines of a stream are short). */
        unsigned m = eol_mask(_mm_loadu_si128((const __m128i *)(const void *)(s + n - 16)));
        m >>= 16 - (n - i);
        return m ? i + first_bit(m) : n;
    }
#endif
    for (; i < n; i++) {
        if (s[i] == '\n' || s[i] == '\r') {
            return i;
        }
    }
    return n;
}

/* Copy s[0:n] to dst and say whether it is ASCII (*ascii cleared if not); in strict
 * mode also where its first invalid UTF-8 sequence starts (-1: none).  One pass over an
 * ASCII value: checking it and copying it are the same loop. */
static Py_ssize_t
copy_checked(char *dst, const unsigned char *s, Py_ssize_t n, int strict, int *ascii)
{
    Py_ssize_t i = 0;
#ifdef SCAN_SSE2
    for (; n - i >= 64; i += 64) {
        const __m128i *q = (const __m128i *)(const void *)(s + i);
        __m128i v0 = _mm_loadu_si128(q), v1 = _mm_loadu_si128(q + 1);
        __m128i v2 = _mm_loadu_si128(q + 2), v3 = _mm_loadu_si128(q + 3);
        if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(v0, v1), _mm_or_si128(v2, v3)))) {
            break;
        }
        __m128i *d = (__m128i *)(void *)(dst + i);
        _mm_storeu_si128(d, v0);
        _mm_storeu_si128(d + 1, v1);
        _mm_storeu_si128(d + 2, v2);
        _mm_storeu_si128(d + 3, v3);
    }
#endif
    const uint64_t high = UINT64_C(0x8080808080808080);
    for (; n - i >= 8; i += 8) {
        uint64_t word;
        memcpy(&word, s + i, 8);
        if (word & high) {
            break;
        }
        memcpy(dst + i, &word, 8);
    }
    memcpy(dst + i, s + i, (size_t)(n - i));
    for (Py_ssize_t k = i; k < n; k++) {
        if (s[k] & 0x80) {
            *ascii = 0;
            Py_ssize_t bad = strict ? utf8_invalid_at(s + k, n - k) : -1;
            return bad < 0 ? -1 : k + bad;
        }
    }
    return -1;
}

#endif /* SSE_SANSIO_CORE_SCAN_H */
