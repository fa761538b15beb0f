/* The compiled core's field rules, each written once: C's twin of _fields.py.
 *
 * Spec: WHATWG HTML, "Server-sent events", 9.2.6 "Interpreting an event stream", the
 * steps to process a field (data, event, id, retry) and the two steps of dispatch that
 * read what they set.
 *
 * Strategy.  Both walkers apply a field through these helpers and nowhere else: the
 * default walker's process_line() (in _core.c), and the opt-in modes' walker
 * (_core_modes.h), whose kept lines go through process_line() too and whose skipped
 * lines, diagnostics and streamed data lines call the helpers below directly.  A change
 * to a rule is one edit here and one in _fields.py (docs/cores.rst, "Changing a spec
 * rule").  Each rule that the diagnostics must judge without applying it (id, retry)
 * has its test apart: id_is_kept() and retry_is_digits() are the rule's only wording,
 * and set_id() and set_retry() apply it.
 *
 * Not a self-contained header: _core.c includes it once, after the item helpers
 * (decode(), cached_decode(), fail_utf8()) and before the walkers.  Every helper is
 * LINE_HELPER (always inlined): they run once per line on the hot path, as the code
 * they replaced did.
 *
 * Invariants: a helper changes only the buffers its rule names (the data buffer, the
 * event type buffer, the last event ID buffer, the reconnection time and the block's
 * retry); one that returns -1 has set an exception and changed nothing the next call
 * relies on.
 */

#ifndef SSE_SANSIO_CORE_FIELDS_H
#define SSE_SANSIO_CORE_FIELDS_H

/* ------------------------------------------------------------------ a field line */

/* The field name of a line p[0:n] that is not a comment (p[0:name]) and its value
 * (v[0:vlen]). */
typedef struct {
    Py_ssize_t name, vlen;
    const char *v;
} Field;

/* Spec: "If the line contains a U+003A COLON character (:): Collect the characters on
 * the line before the first colon, and let field be that string.  Collect the
 * characters on the line after the first colon, and let value be that string.  If value
 * starts with a U+0020 SPACE character, remove it from value."  "Otherwise, the string
 * is not empty but does not contain a colon: use the whole line as the field name, and
 * the empty string as the field value."  (The colon and the space are ASCII, so bytes
 * split where the decoded text would.) */
LINE_HELPER Field
split_field(const char *p, Py_ssize_t n)
{
    const char *colon = memchr(p, ':', (size_t)n);
    Field f = {n, 0, p + n};
    if (colon != NULL) {
        f.name = colon - p;
        f.v = colon + 1;
        f.vlen = n - f.name - 1;
        if (f.vlen && f.v[0] == ' ') {
            f.v++;
            f.vlen--;
        }
    }
    return f;
}

/* Whether the field name of p (split as f) is name[0:len]. */
LINE_HELPER int
is_name(const char *p, Field f, const char *name, Py_ssize_t len)
{
    return f.name == len && memcmp(p, name, (size_t)len) == 0;
}

/* A data line whose end has not arrived yet (cut by a chunk end, or streamed in pieces)
 * is known by its first six bytes, head[0:6]: the offset of its value (5 after "data:",
 * 6 after "data: ", the space removed as split_field() removes it), or 0 if the line is
 * not a data line. */
LINE_HELPER Py_ssize_t
data_value_at(const char *head)
{
    if (memcmp(head, "data:", 5) != 0) {
        return 0;
    }
    return head[5] == ' ' ? 6 : 5;
}

/* ------------------------------------------------------------------ data */

/* A block's first value, decoded where it lay (has_data 1), moves to the data buffer,
 * which then holds the values joined with LF (has_data 2 or 3).  0 or -1. */
static int
data_to_buffer(Conn *c)
{
    if (c->has_data != 1) {
        return 0;
    }
    Py_ssize_t len;
    const char *first = PyUnicode_AsUTF8AndSize(c->event_data, &len);
    if (first == NULL || buf_append(&c->data, first, len) < 0) {
        return -1;
    }
    c->has_data = PyUnicode_IS_ASCII(c->event_data) ? 2 : 3;
    Py_CLEAR(c->event_data);
    return 0;
}

/* Spec: "If the field name is "data": Append the field value to the data buffer, then
 * append a single U+000A LINE FEED (LF) character."  The first value is decoded where it
 * lies (most events have one data line); a second one starts the byte buffer, with
 * has_data 2 while all of it is ASCII (dispatch then copies it into the string, no
 * decoding) and 3 once it is not.  In strict mode each later value is checked as it is
 * copied (v[0:n] starts at stream offset `at`), and only there: a line is read once.
 * (The LF after the last value is never stored: dispatch would remove it.)  0 or -1. */
LINE_HELPER int
append_data(Conn *c, const char *v, Py_ssize_t n, Py_ssize_t at)
{
    if (c->has_data == 0) {
        c->event_data = decode(c, v, n);
        if (c->event_data == NULL) {
            return -1;
        }
        c->has_data = 1;
        return 0;
    }
    if (data_to_buffer(c) < 0) {
        return -1;
    }
    if (buf_reserve(&c->data, n + 1) < 0) {
        return -1;
    }
    c->data.p[c->data.len] = '\n';
    int ascii = 1;
    Py_ssize_t bad =
        copy_checked(c->data.p + c->data.len + 1, (const unsigned char *)v, n, c->strict, &ascii);
    if (bad >= 0) {
        fail_utf8(c, "invalid UTF-8", v + bad, n - bad, at + bad);
        return -1;
    }
    c->data.len += n + 1;
    if (!ascii) {
        c->has_data = 3;
    }
    return 0;
}

/* ------------------------------------------------------------------ event */

/* Spec: "If the field name is "event": Set the event type buffer to field value."  The
 * buffer is a str, or NULL for the empty string (see event_type_of()); an event type
 * is decoded once per distinct run (type_cache).  0 or -1 (the caller says where the
 * line is not UTF-8). */
LINE_HELPER int
set_event_type(Conn *c, const char *v, Py_ssize_t n)
{
    PyObject *type = n ? cached_decode(c, &c->type_cache, v, n) : NULL;
    if (n && type == NULL) {
        return -1;
    }
    Py_XSETREF(c->event_type, type);
    return 0;
}

/* Spec (dispatch): "Initialize event's type attribute to "message"" and, "If the event
 * type buffer has a value other than the empty string, change the type of the newly
 * created event to equal the value of the event type buffer."  A borrowed reference. */
LINE_HELPER PyObject *
event_type_of(Conn *c)
{
    return c->event_type ? c->event_type : c->st->str_message;
}

/* ------------------------------------------------------------------ id */

/* Spec: "If the field name is "id": If the field value does not contain U+0000 NULL,
 * then set the last event ID buffer to the field value.  Otherwise, ignore the field."
 * The rule's test: whether the value v[0:n] is kept. */
LINE_HELPER int
id_is_kept(const char *v, Py_ssize_t n)
{
    return memchr(v, 0, (size_t)n) == NULL;
}

/* The id rule applied: 1 (the last event ID buffer is set), 0 (the field is ignored) or
 * -1. */
LINE_HELPER int
set_id(Conn *c, const char *v, Py_ssize_t n)
{
    if (!id_is_kept(v, n)) {
        return 0;
    }
    PyObject *id = decode(c, v, n);
    if (id == NULL) {
        return -1;
    }
    Py_SETREF(c->id_buffer, id);
    return 1;
}

/* Spec (dispatch): "Set the last event ID string of the event source to the value of
 * the last event ID buffer." */
LINE_HELPER void
set_last_event_id(Conn *c)
{
    if (c->id_buffer != c->last_event_id) {
        Py_SETREF(c->last_event_id, Py_NewRef(c->id_buffer));
    }
}

/* ------------------------------------------------------------------ retry */

/* Spec: "If the field name is "retry": If the field value consists of only ASCII
 * digits, then interpret the field value as an integer in base ten, and set the event
 * stream's reconnection time to that integer.  Otherwise, ignore the field."  The
 * rule's test: whether v[0:n] is such a value (the empty value, which gives no integer,
 * is not: _fields.retry_value()). */
LINE_HELPER int
retry_is_digits(const char *v, Py_ssize_t n)
{
    if (n == 0) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') {
            return 0;
        }
    }
    return 1;
}

/* The ASCII digits v[0:n] (n > 0) as an int, as _fields.retry_value() reads them:
 * leading zeros are dropped; more than c->st->retry_max_digits significant digits (or
 * more than int() accepts) clamp to c->st->retry_max.  A new reference, or NULL. */
static PyObject *
retry_integer(Conn *c, const char *v, Py_ssize_t n)
{
    while (n > 1 && v[0] == '0') {
        v++;
        n--;
    }
    if (n <= 18) {
        long long x = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            x = x * 10 + (v[i] - '0');
        }
        return PyLong_FromLongLong(x);
    }
    if (n > c->st->retry_max_digits) {
        return Py_NewRef(c->st->retry_max);
    }
    char *z = PyMem_Malloc((size_t)n + 1);
    if (z == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(z, v, (size_t)n);
    z[n] = '\0';
    PyObject *value = PyLong_FromString(z, NULL, 10);
    PyMem_Free(z);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear(); /* sys.set_int_max_str_digits() lowered the limit */
        value = Py_NewRef(c->st->retry_max);
    }
    return value;
}

/* The retry rule applied: the reconnection time, and the block's retry that its Event
 * carries.  1 (set), 0 (the field is ignored) or -1. */
LINE_HELPER int
set_retry(Conn *c, const char *v, Py_ssize_t n)
{
    if (!retry_is_digits(v, n)) {
        return 0;
    }
    PyObject *value = retry_integer(c, v, n);
    if (value == NULL) {
        return -1;
    }
    Py_XSETREF(c->retry, Py_NewRef(value));
    Py_XSETREF(c->block_retry, value);
    return 1;
}

#endif /* SSE_SANSIO_CORE_FIELDS_H */
