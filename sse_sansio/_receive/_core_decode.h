/* The compiled core's UTF-8 decoder: a line's bytes into its str (included by _core.c
 * after _core_scan.h, one translation unit).
 *
 * Strategy.  Decoding is most of what is left of an LLM stream's cost once the lines are
 * found: the C floor's parts (benchmarks/floor.c) put CPython's PyUnicode_DecodeUTF8()
 * at about two thirds of an event's time on the llm workload, whose JSON is ASCII with
 * some Chinese in it.  CPython's decoder does not know the string's size or width
 * before it starts: it writes into a buffer of n bytes' characters of the narrowest
 * kind, widens the whole buffer (a copy) at the first character past U+00FF, and
 * resizes it at the end (a realloc).  On a few hundred bytes those steps are most of
 * the work.  Here the str is made once, of exactly the right size and kind:
 *
 * - a value of up to ONE_PASS_MAX bytes (most lines) is checked and decoded in one pass
 *   into two-byte characters on the stack, runs of 16 ASCII bytes widened with SSE2;
 *   the OR of its characters gives the kind, and one copy (narrowing for Latin-1) fills
 *   the str;
 * - a longer one, or one with a character past the BMP, takes two passes: utf8_shape()
 *   checks the bytes and finds the number of characters and the widest one's kind,
 *   skipping ASCII 16 bytes at a time, then a fill loop of that kind writes the str.
 *
 * Bytes that are not UTF-8 are left to CPython's decoder (utf8_decode() returns NULL
 * with no exception set), so that strict mode's UnicodeDecodeError and the replacement
 * characters of errors="replace" are CPython's own.  tests/receive/test_decode.py compares the
 * two on every kind of text and on invalid bytes; the fuzzers compare the cores.
 *
 * Invariant: reads stay inside s[0:n]; a fill loop writes exactly the characters that
 * utf8_shape() counted, which is the str's length; the one pass writes inside its
 * stack buffer (decode_to_ucs2() says why).
 */

#ifndef SSE_SANSIO_CORE_DECODE_H
#define SSE_SANSIO_CORE_DECODE_H

/* Where the first byte with its high bit set is in s[i:n], or n: ASCII skipped 16 bytes
 * at a time where SSE2 is, 8 elsewhere. */
static inline Py_ssize_t
skip_ascii(const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
#ifdef SCAN_SSE2
    for (; n - i >= 16; i += 16) {
        unsigned m =
            (unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        if (m) {
            return i + first_bit(m);
        }
    }
#else
    for (; n - i >= 8; i += 8) {
        uint64_t word;
        memcpy(&word, s + i, 8);
        if (word & UINT64_C(0x8080808080808080)) {
            break;
        }
    }
#endif
    while (i < n && s[i] < 0x80) {
        i++;
    }
    return i;
}

/* The number of characters of s[0:n] (*chars) and the kind of the widest, as the
 * maxchar that PyUnicode_New() takes (*maxchar: 127, 0xFF, 0xFFFF or 0x10FFFF).
 * Returns 0, or -1 if s is not UTF-8 (utf8_sequence() says what is). */
static int
utf8_shape(const unsigned char *s, Py_ssize_t n, Py_ssize_t *chars, Py_UCS4 *maxchar)
{
    Py_ssize_t i = 0, continuation = 0;
    Py_UCS4 widest = 127;
    while ((i = skip_ascii(s, i, n)) < n) {
        Py_ssize_t extra = utf8_sequence(s, i, n);
        if (extra < 0) {
            return -1;
        }
        /* Two bytes led by C2 or C3 are U+0080 to U+00FF: a one-byte kind still. */
        Py_UCS4 kind = extra == 1 ? (s[i] < 0xC4 ? 0xFF : 0xFFFF) : extra == 2 ? 0xFFFF : 0x10FFFF;
        widest = kind > widest ? kind : widest;
        continuation += extra;
        i += extra + 1;
    }
    *chars = n - continuation;
    *maxchar = widest;
    return 0;
}

/* The character of the valid sequence at s[0], `extra` bytes after its lead byte. */
static inline Py_UCS4
utf8_char(const unsigned char *s, Py_ssize_t extra)
{
    switch (extra) {
    case 1:
        return (Py_UCS4)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    case 2:
        return (Py_UCS4)(s[0] & 0x0F) << 12 | (Py_UCS4)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    default:
        return (Py_UCS4)(s[0] & 0x07) << 18 | (Py_UCS4)(s[1] & 0x3F) << 12 |
               (Py_UCS4)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    }
}

/* The character of the valid UTF-8 at s[*i], *i moved past it. */
static inline Py_UCS4
next_char(const unsigned char *s, Py_ssize_t *i)
{
    unsigned char c = s[*i];
    if (c < 0x80) {
        *i += 1;
        return c;
    }
    Py_ssize_t extra = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    *i += extra + 1;
    return utf8_char(s + *i - extra - 1, extra);
}

/* The fill loops: the valid s[0:n] into a str's characters d of 1, 2 or 4 bytes. */
static void
fill_ucs1(Py_UCS1 *d, const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t ascii = skip_ascii(s, i, n);
        memcpy(d, s + i, (size_t)(ascii - i));
        d += ascii - i;
        if ((i = ascii) < n) {
            *d++ = (Py_UCS1)utf8_char(s + i, 1); /* only C2 and C3 lead in a UCS1 str */
            i += 2;
        }
    }
}

static void
fill_ucs2(Py_UCS2 *d, const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
#ifdef SCAN_SSE2
        if (n - i >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            unsigned m = (unsigned)_mm_movemask_epi8(v);
            if (m == 0) {
                __m128i zero = _mm_setzero_si128();
                _mm_storeu_si128((__m128i *)(void *)d, _mm_unpacklo_epi8(v, zero));
                _mm_storeu_si128((__m128i *)(void *)(d + 8), _mm_unpackhi_epi8(v, zero));
                d += 16;
                i += 16;
                continue;
            }
            for (Py_ssize_t end = i + first_bit(m); i < end; i++) {
                *d++ = s[i];
            }
        }
#endif
        *d++ = (Py_UCS2)next_char(s, &i);
    }
}

static void
fill_ucs4(Py_UCS4 *d, const unsigned char *s, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n;) {
        *d++ = next_char(s, &i);
    }
}

/* The two passes, for any bytes. */
static PyObject *
decode_in_two_passes(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t chars;
    Py_UCS4 maxchar;
    if (utf8_shape(s, n, &chars, &maxchar) < 0) {
        return NULL;
    }
    PyObject *str = PyUnicode_New(chars, maxchar);
    if (str == NULL || n == 0) {
        return str;
    }
    switch (maxchar) {
    case 127:
        memcpy(PyUnicode_DATA(str), s, (size_t)n);
        break;
    case 0xFF:
        fill_ucs1(PyUnicode_1BYTE_DATA(str), s, n);
        break;
    case 0xFFFF:
        fill_ucs2(PyUnicode_2BYTE_DATA(str), s, n);
        break;
    default:
        fill_ucs4(PyUnicode_4BYTE_DATA(str), s, n);
        break;
    }
    return str;
}

/* Short values (most lines of a stream) are decoded in one pass instead, into two-byte
 * characters on the stack, then copied into the str once its size and kind are known:
 * a second branchy pass over the bytes costs more than a copy.  Measured on the llm
 * workload's values (about 250 bytes, a tenth of them Chinese), CPU time a value: one
 * pass 110 ns, two passes 220, CPython's decoder 230-250. */
#define ONE_PASS_MAX 1024

/* s[0:n] (n <= ONE_PASS_MAX) as two-byte characters in d, with the bitwise OR of them
 * all in *bits.  Returns the number of characters; -1 if s is not UTF-8, -2 if it has a
 * character past the BMP: the two passes take those. */
static Py_ssize_t
decode_to_ucs2(const unsigned char *s, Py_ssize_t n, Py_UCS2 *d, Py_UCS4 *bits)
{
    Py_UCS2 *start = d;
    Py_UCS4 seen = 0;
    Py_ssize_t i = 0;
    while (i < n) {
#ifdef SCAN_SSE2
        /* Widen 16 bytes at once, then keep the characters of the ASCII ones.  In bounds:
         * a character takes a byte at least, so d - start <= i, and i + 16 <= n. */
        if (n - i >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            __m128i zero = _mm_setzero_si128();
            _mm_storeu_si128((__m128i *)(void *)d, _mm_unpacklo_epi8(v, zero));
            _mm_storeu_si128((__m128i *)(void *)(d + 8), _mm_unpackhi_epi8(v, zero));
            unsigned m = (unsigned)_mm_movemask_epi8(v);
            Py_ssize_t ascii = m ? first_bit(m) : 16;
            d += ascii;
            i += ascii;
            if (ascii == 16) {
                continue;
            }
        }
#endif
        if (s[i] < 0x80) {
            *d++ = s[i++];
            continue;
        }
        Py_ssize_t extra = utf8_sequence(s, i, n);
        if (extra < 0 || extra == 3) {
            return extra < 0 ? -1 : -2;
        }
        Py_UCS4 ch = utf8_char(s + i, extra);
        seen |= ch;
        *d++ = (Py_UCS2)ch;
        i += extra + 1;
    }
    *bits = seen;
    return d - start;
}

/* The str that p[0:n] decodes to, or NULL: with an exception set if allocating failed,
 * without one if the bytes are not UTF-8 (the caller asks CPython's decoder then). */
static PyObject *
utf8_decode(const char *p, Py_ssize_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    if (n > ONE_PASS_MAX) {
        return decode_in_two_passes(s, n);
    }
    Py_UCS2 units[ONE_PASS_MAX];
    Py_UCS4 bits;
    Py_ssize_t chars = decode_to_ucs2(s, n, units, &bits);
    if (chars < 0) {
        return chars == -2 ? decode_in_two_passes(s, n) : NULL;
    }
    /* The OR of the characters is below 0x80 if all are ASCII, below 0x100 if all are
     * Latin-1: the kinds that PyUnicode_New() chooses from the widest character. */
    Py_UCS4 maxchar = bits < 0x80 ? 127 : bits < 0x100 ? 0xFF : 0xFFFF;
    PyObject *str = PyUnicode_New(chars, maxchar);
    if (str == NULL || n == 0) {
        return str;
    }
    if (maxchar == 127) {
        memcpy(PyUnicode_DATA(str), s, (size_t)n);
    }
    else if (maxchar == 0xFF) {
        Py_UCS1 *d = PyUnicode_1BYTE_DATA(str);
        for (Py_ssize_t k = 0; k < chars; k++) {
            d[k] = (Py_UCS1)units[k];
        }
    }
    else {
        memcpy(PyUnicode_2BYTE_DATA(str), units, (size_t)chars * sizeof(Py_UCS2));
    }
    return str;
}

#endif /* SSE_SANSIO_CORE_DECODE_H */
