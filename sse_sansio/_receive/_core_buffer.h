/* The compiled core's byte buffers: the line still arriving, the data buffer, keep_raw's
 * raw bytes (included by _core.c, one translation unit: these are static functions the
 * compiler inlines into the walker).
 *
 * Invariants: `p` is NULL exactly when `cap` is 0; `len` <= `cap`; growth is by
 * doubling up to GROW_GENTLY and by an eighth beyond, so a buffer never holds more than
 * about twice what it needs; an allocation failure sets MemoryError and leaves the
 * buffer as it was.
 */

#ifndef SSE_SANSIO_CORE_BUFFER_H
#define SSE_SANSIO_CORE_BUFFER_H

/* A buffer emptied between lines or events keeps up to BUSY_CAPACITY (a busy stream
 * reuses it: freeing it at every event and growing it again was 8% of the work at
 * 64-byte chunks), and grows by doubling, so that it never holds more than that or
 * twice what it holds.  A keep_raw connection, whose raw buffer is compacted rather
 * than emptied, trims its buffers to IDLE_CAPACITY (or twice what they hold) when it
 * waits for data (buf_idle()). */
#define IDLE_CAPACITY 256
#define BUSY_CAPACITY 512
#define GROW_GENTLY (1 << 20)

/* A buffer of STR_AFTER bytes or more keeps them in a str of its own: `p` is that
 * str's data (a compact ASCII object's, which starts right after its header, so the
 * str is found from `p`), its length `cap`.  An ASCII text gathered in the data
 * buffer of a big event then becomes the event's string without being copied again
 * (buf_take_str()): one copy of each byte, not two.  A small buffer stays PyMem
 * memory, reused from line to line and event to event, as a str that leaves with its
 * event could not be.  The str is never seen by anyone before it is taken, so it may
 * hold any bytes meanwhile; only an all-ASCII one is taken.  The fuzz build sets a
 * small STR_AFTER, so that its short inputs cross it often. */
#ifndef STR_AFTER
#define STR_AFTER (16 * 1024)
#endif
#define STR_OF(p) ((PyObject *)((PyASCIIObject *)(void *)(p) - 1))
/* keep_raw's buffer keeps room for a bytes object's header in front of its bytes
 * (raw_*() below), so that the raw bytes of a big event become the bytes object
 * handed out where they lie. */
#define RAW_GAP ((Py_ssize_t)offsetof(PyBytesObject, ob_sval))

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

/* Give the buffer `cap` (> 0, >= len) bytes of room, its bytes kept, in a str from
 * STR_AFTER on.  0, or -1 with MemoryError and the buffer as it was. */
static int
buf_realloc(Buf *b, Py_ssize_t cap)
{
    int was_str = b->cap >= STR_AFTER, is_str = cap >= STR_AFTER;
    char *p;
    if (!was_str && !is_str) {
        if ((p = PyMem_Realloc(b->p, (size_t)cap)) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    else if (was_str && is_str) {
        /* The str is this buffer's alone and unhashed: resized by a realloc. */
        PyObject *str = STR_OF(b->p);
        if (PyUnicode_Resize(&str, cap) < 0) {
            return -1;
        }
        p = PyUnicode_DATA(str);
    }
    else {
        PyObject *str = is_str ? PyUnicode_New(cap, 127) : NULL;
        p = is_str ? (str == NULL ? NULL : PyUnicode_DATA(str)) : PyMem_Malloc((size_t)cap);
        if (p == NULL) {
            if (!is_str) {
                PyErr_NoMemory();
            }
            return -1;
        }
        if (b->len) {
            memcpy(p, b->p, (size_t)b->len);
        }
        if (was_str) {
            Py_DECREF(STR_OF(b->p));
        }
        else {
            PyMem_Free(b->p);
        }
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* The capacity for `extra` more bytes (> cap), or -1 with MemoryError. */
static Py_ssize_t
buf_grown(const Buf *b, Py_ssize_t extra)
{
    if (extra > PY_SSIZE_T_MAX - RAW_GAP - 1 - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = b->len + extra;
    Py_ssize_t cap = b->cap < 64 ? 64 : b->cap;
    while (cap < need && cap < GROW_GENTLY) {
        cap *= 2;
    }
    if (cap < need) {
        /* Past GROW_GENTLY, an eighth more than needed: still amortized linear, and a
         * big line or event holds at most 1.125 times its size, not twice. */
        cap = need > PY_SSIZE_T_MAX - RAW_GAP - 1 - need / 8 ? need : need + need / 8;
    }
    return cap;
}

static int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    if (b->len + extra <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = buf_grown(b, extra);
    return cap < 0 ? -1 : buf_realloc(b, cap);
}

static int
buf_append(Buf *b, const char *s, Py_ssize_t n)
{
    if (n == 0) {
        return 0;
    }
    if (buf_reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->p + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

static void
buf_free(Buf *b)
{
    if (b->cap >= STR_AFTER) {
        Py_DECREF(STR_OF(b->p));
    }
    else {
        PyMem_Free(b->p);
    }
    b->p = NULL;
    b->len = b->cap = 0;
}

/* The buffer's bytes as a str, the buffer left empty: a new reference, or NULL (no
 * error set) if they are not in a str (a small buffer) or its shrink failed.  The
 * caller has checked that they are ASCII, and copies them itself on NULL. */
static PyObject *
buf_take_str(Buf *b)
{
    if (b->cap < STR_AFTER) {
        return NULL;
    }
    PyObject *str = STR_OF(b->p);
    if (PyUnicode_Resize(&str, b->len) < 0) {
        PyErr_Clear(); /* the str is as it was */
        return NULL;
    }
    b->p = NULL;
    b->len = b->cap = 0;
    return str;
}

/* ------------------------------------------------------------ keep_raw's buffer
 *
 * The same invariants, its memory one PyObject_Malloc block: RAW_GAP bytes (a bytes
 * object's header, not yet written), then `cap` bytes, then one for the NUL a bytes
 * object ends with.  Until raw_take_bytes() makes an object of it, it is plain memory,
 * which PyObject_Realloc() grows and shrinks keeping its bytes, or leaves as it was. */

static int
raw_realloc(Buf *b, Py_ssize_t cap)
{
    char *block = PyObject_Realloc(b->p ? b->p - RAW_GAP : NULL, (size_t)(RAW_GAP + cap + 1));
    if (block == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = block + RAW_GAP;
    b->cap = cap;
    return 0;
}

static int
raw_append(Buf *b, const char *s, Py_ssize_t n)
{
    if (n == 0) {
        return 0;
    }
    if (b->len + n > b->cap) {
        Py_ssize_t cap = buf_grown(b, n);
        if (cap < 0 || raw_realloc(b, cap) < 0) {
            return -1;
        }
    }
    memcpy(b->p + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

static void
raw_free(Buf *b)
{
    if (b->p != NULL) {
        PyObject_Free(b->p - RAW_GAP);
    }
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------------------ emptying, either kind
 *
 * One body for both kinds of buffer: `resize` and `release` are the kind's
 * buf_realloc()/buf_free() or raw_realloc()/raw_free(), constants at every call, so the
 * compiler inlines them as if each kind had its own copy.  buf_clear() and buf_idle()
 * name the common case; keep_raw's two calls pass raw_realloc()/raw_free() themselves. */

typedef int (*Resize)(Buf *, Py_ssize_t);
typedef void (*Release)(Buf *);

/* Empty the buffer; give its memory back if it had grown past BUSY_CAPACITY (a line
 * or an event much bigger than a busy stream's usual ones). */
static inline void
clear_with(Buf *b, Release release)
{
    b->len = 0;
    if (b->cap > BUSY_CAPACITY) {
        release(b);
    }
}

/* A keep_raw connection waits for data: keep at most IDLE_CAPACITY of an empty buffer,
 * and of one that holds b->p[from:len], at most IDLE_CAPACITY or twice what it holds.
 * Returns where what it holds starts now. */
static inline Py_ssize_t
idle_with(Buf *b, Py_ssize_t from, Resize resize, Release release)
{
    Py_ssize_t live = b->len - from;
    if (live == 0) {
        b->len = 0;
        if (b->cap > IDLE_CAPACITY) {
            release(b);
        }
        return 0;
    }
    if (b->cap <= IDLE_CAPACITY || b->cap <= 2 * live) {
        return from;
    }
    memmove(b->p, b->p + from, (size_t)live);
    b->len = live;
    if (resize(b, live < IDLE_CAPACITY ? IDLE_CAPACITY : live) < 0) {
        PyErr_Clear(); /* the bigger block stays: still correct */
    }
    return 0;
}

static void
buf_clear(Buf *b)
{
    clear_with(b, buf_free);
}

static Py_ssize_t
buf_idle(Buf *b, Py_ssize_t from)
{
    return idle_with(b, from, buf_realloc, buf_free);
}

/* b->p[from:from + n] as a bytes object made of the buffer's own block, when that
 * saves a copy of a big event's raw bytes (n at least STR_AFTER, the bytes after it at
 * most an eighth of it): those are moved to a new block, which becomes the buffer.  A
 * new reference, or NULL (no error set): the caller copies instead. */
static PyObject *
raw_take_bytes(Buf *b, Py_ssize_t from, Py_ssize_t n)
{
    Py_ssize_t tail = b->len - from - n;
    if (n < STR_AFTER || tail > n / 8) {
        return NULL;
    }
    Buf rest = {NULL, 0, 0};
    if (tail && raw_append(&rest, b->p + from + n, tail) < 0) {
        PyErr_Clear();
        return NULL;
    }
    if (from) {
        memmove(b->p, b->p + from, (size_t)n);
    }
    char *block = b->p - RAW_GAP, *smaller = PyObject_Realloc(block, (size_t)(RAW_GAP + n + 1));
    PyBytesObject *out = (PyBytesObject *)(smaller != NULL ? smaller : block);
    *b = rest;
    /* What PyBytes_FromStringAndSize() does to a block of its own. */
    (void)PyObject_InitVar((PyVarObject *)out, &PyBytes_Type, n);
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    out->ob_shash = -1; /* its hash is not computed yet */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
    PyBytes_AS_STRING(out)[n] = '\0';
    return (PyObject *)out;
}

#endif /* SSE_SANSIO_CORE_BUFFER_H */
