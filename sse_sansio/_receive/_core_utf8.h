/* The compiled core's UTF-8 validation (included by _core.c, one translation unit).
 *
 * Strategy: strict mode checks each line's bytes once as it completes, eight bytes at a
 * time while they are ASCII; a bad sequence's reason is then asked of CPython's own
 * decoder by the caller, so that the messages are those of the pure core.
 * utf8_sequence() is the one place that knows a valid sequence: the decoder of
 * _core_decode.h checks with it too.
 */

#ifndef SSE_SANSIO_CORE_UTF8_H
#define SSE_SANSIO_CORE_UTF8_H

/* The bytes after the lead byte s[i] (>= 0x80) of a valid sequence in s[0:n], or -1 if
 * the sequence starting there is invalid.  The rules are those of CPython's strict
 * decoder (Unicode Table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF; a
 * sequence cut by the end is invalid). */
static inline Py_ssize_t
utf8_sequence(const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
    unsigned char c = s[i], lo = 0x80, hi = 0xBF;
    Py_ssize_t extra;
    if (c < 0xC2) {
        return -1;
    }
    else if (c < 0xE0) {
        extra = 1;
    }
    else if (c < 0xF0) {
        extra = 2;
        if (c == 0xE0) {
            lo = 0xA0;
        }
        else if (c == 0xED) {
            hi = 0x9F;
        }
    }
    else if (c < 0xF5) {
        extra = 3;
        if (c == 0xF0) {
            lo = 0x90;
        }
        else if (c == 0xF4) {
            hi = 0x8F;
        }
    }
    else {
        return -1;
    }
    if (n - i <= extra || s[i + 1] < lo || s[i + 1] > hi) {
        return -1;
    }
    for (Py_ssize_t k = 2; k <= extra; k++) {
        if ((s[i + k] & 0xC0) != 0x80) {
            return -1;
        }
    }
    return extra;
}

/* Where the first invalid UTF-8 sequence of s[0:n] starts, or -1 if there is none. */
static Py_ssize_t
utf8_invalid_at(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if ((word & UINT64_C(0x8080808080808080)) == 0) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        Py_ssize_t extra = utf8_sequence(s, i, n);
        if (extra < 0) {
            return i;
        }
        i += extra + 1;
    }
    return -1;
}

#endif /* SSE_SANSIO_CORE_UTF8_H */
