/* The compiled core's opt-in modes: on_oversize="skip", piece_size and diagnostics=True.
 *
 * A section of _core.c kept in its own file because it is a third of the core and a
 * connection without the options never runs it.  It is not a self-contained header:
 * _core.c includes it once, after the default path's walker, whose Conn, line helpers
 * (process_line(), dispatch(), the failure and item helpers) and field rules
 * (_core_fields.h) it uses, and before the methods, which call parse_modes().  The
 * rules of the modes are _modes.py's (its header); the tests, run on both cores, and
 * the fuzzers compare the two.
 */

#ifndef SSE_SANSIO_CORE_MODES_H
#define SSE_SANSIO_CORE_MODES_H

/* A connection made with on_oversize="skip", piece_size or diagnostics=True parses here,
 * one line at a time, the way _modes.py does (its header gives the rules); the
 * helpers above do the work they share with the default path: process_line() for a
 * complete field or comment line of a block that is buffered, dispatch() for a block
 * that ends in an Event or in nothing, and the field rules of _core_fields.h for the
 * lines of a skipped block, the diagnostics' judgement of a field and a data line that
 * is streamed (no field rule is written here).  The state is the pure core's, named alike:
 * `off` is its `start` (where the line being assembled starts), `length` its bytes so
 * far, and `deadline` is `mark + limit`, where `mark` is the block's first byte and,
 * after a DataPiece, the end of the bytes the piece covers.  The line goes through
 * grow() a window (`window` bytes) at a time, then complete(), as there: a piece, a
 * dropped line and the size limit happen at the same window edges.  A complete line that
 * fits in one window of its chunk is read where it lies; a longer or cut one is copied
 * into `partial`, unless it is dropped or streamed.  The data buffer is `event_data` or
 * the bytes in `data` (has_data 1 or 2, as on the default path); a streamed value's
 * bytes go into `data` as they come, and a piece decodes them up to the last complete
 * UTF-8 sequence (PyUnicode_DecodeUTF8Stateful(), the incremental decoder's rule). */

static PyObject *
slot_raw_empty(Conn *c)
{
    return Py_NewRef(c->keep_raw ? c->st->bytes_empty : Py_None);
}

static void
set_mark(Conn *c, Py_ssize_t at)
{
    c->deadline = add_limit(at, c->limit);
}

/* keep_raw, skipped block: forget its received bytes from safe_end to stream offset
 * `upto` (those before safe_end still wait for take_raw()), moving whichever side of
 * the cut is shorter. */
static void
drop_raw(Conn *c, Py_ssize_t upto)
{
    if (!c->keep_raw || upto <= c->safe_end) {
        return;
    }
    Py_ssize_t keep = c->safe_end - c->raw_from, cut = upto - c->safe_end;
    Py_ssize_t at = c->raw_start + keep, tail = c->raw.len - at - cut;
    if (keep <= tail) {
        if (keep) {
            memmove(c->raw.p + c->raw_start + cut, c->raw.p + c->raw_start, (size_t)keep);
        }
        c->raw_start += cut;
    }
    else {
        memmove(c->raw.p + at, c->raw.p + at + cut, (size_t)tail);
        c->raw.len -= cut;
    }
    c->raw_from += cut;
    c->safe_end = upto;
    if (c->raw_start == c->raw.len) {
        c->raw_start = 0;
        clear_with(&c->raw, raw_free);
    }
}

/* The data buffer as bytes in `data` (has_data 2), for a value added piecemeal. */
static int
data_to_bytes(Conn *c)
{
    if (c->has_data == 1) {
        Py_ssize_t len;
        const char *first = PyUnicode_AsUTF8AndSize(c->event_data, &len);
        if (first == NULL || buf_append(&c->data, first, len) < 0) {
            return -1;
        }
        Py_CLEAR(c->event_data);
    }
    c->has_data = 2;
    return 0;
}

/* The data not handed out yet, as text; while a value is streamed, a UTF-8 sequence it
 * has not finished stays for the next piece. */
static PyObject *
take_text(Conn *c)
{
    c->data_bytes = 0;
    if (c->has_data == 1) {
        PyObject *text = c->event_data;
        c->event_data = NULL;
        c->has_data = 2;
        return text;
    }
    Py_ssize_t used = c->data.len;
    PyObject *text = PyUnicode_DecodeUTF8Stateful(
        c->data.p, c->data.len, c->strict ? NULL : "replace", c->streamed ? &used : NULL);
    if (text != NULL) {
        if (used < c->data.len) {
            memmove(c->data.p, c->data.p + used, (size_t)(c->data.len - used));
        }
        c->data.len -= used;
        c->checked = 0;
    }
    return text;
}

/* piece_size: hand out the data waiting, up to stream offset `end`, as a DataPiece. */
static int
piece(Conn *c, Py_ssize_t end, PyObject **out)
{
    PyObject *item = new_item(c->st->DataPieceType, 4);
    if (item == NULL) {
        return -1;
    }
    Py_ssize_t start = c->pieced ? c->covered : c->event_start;
    if (set_slot(item, 3, c->keep_raw ? hand_out(c, end) : Py_NewRef(Py_None)) < 0 ||
        set_slot(item, 1, ssize(start)) < 0 || set_slot(item, 2, ssize(end)) < 0) {
        Py_DECREF(item);
        return -1;
    }
    c->pieced = 1;
    c->covered = end;
    set_mark(c, end); /* the limit bounds what the connection holds */
    if (set_slot(item, 0, take_text(c)) < 0) {
        Py_DECREF(item);
        return -1;
    }
    *out = item;
    return 1;
}

/* 1 if p[0:k] (k >= 1) is the start of a UTF-8 sequence that more bytes may finish, as
 * CPython's incremental decoder judges it (it waits after ED A0..BF too, a surrogate's
 * start, which only its third byte refuses). */
static int
utf8_unfinished(const unsigned char *p, Py_ssize_t k)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    Py_ssize_t extra = c < 0xC2 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF5 ? 3 : 0;
    if (k > extra) {
        return 0;
    }
    lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : lo;
    hi = c == 0xF4 ? 0x8F : hi;
    if (k > 1 && (p[1] < lo || p[1] > hi)) {
        return 0;
    }
    return k < 3 || (p[2] & 0xC0) == 0x80;
}

/* Strict mode, streamed value: the bytes data[checked:] (ending at stream offset `end`)
 * as the incremental decoder takes them: an unfinished sequence at the end waits. */
static int
check_streamed(Conn *c, Py_ssize_t end)
{
    const unsigned char *s = (const unsigned char *)c->data.p + c->checked;
    Py_ssize_t m = c->data.len - c->checked, bad = utf8_invalid_at(s, m);
    if (bad < 0 || utf8_unfinished(s + bad, m - bad)) {
        c->checked += bad < 0 ? m : bad;
        return 0;
    }
    fail_utf8(c, "invalid UTF-8", (const char *)s + bad, m - bad, end - (m - bad));
    return -1;
}

/* More of a streamed data value: `part` (k bytes) ends at stream offset `end`. */
static int
stream(Conn *c, const char *part, Py_ssize_t k, Py_ssize_t end, PyObject **out)
{
    c->data_bytes += k;
    if (buf_append(&c->data, part, k) < 0 || (c->strict && check_streamed(c, end) < 0)) {
        return -1;
    }
    return c->data_bytes > c->piece_size ? piece(c, end, out) : 0;
}

/* piece_size: the data line line[0:n] (n > 5, its value from line[skip] on, see
 * data_value_at()), still arriving, is streamed from now on once its value makes the
 * data waiting more than piece_size bytes. */
static int
start_streaming(Conn *c, const char *line, Py_ssize_t n, Py_ssize_t skip, PyObject **out)
{
    if (c->data_bytes + n - skip + (c->has_data ? 1 : 0) <= c->piece_size) {
        return 0;
    }
    if (c->event_start < 0) {
        c->event_start = c->off;
    }
    c->streamed = 1;
    int had = c->has_data;
    if (data_to_bytes(c) < 0 || (had && buf_append(&c->data, "\n", 1) < 0)) {
        return -1;
    }
    c->data_bytes += had ? 1 : 0; /* the LF between this line and the last */
    c->checked = c->data.len;
    int got = stream(c, line + skip, n - skip, c->off + n, out);
    c->partial.len = 0; /* (line may be partial's bytes: used up now) */
    return got;
}

static void
begin_skip(Conn *c)
{
    /* on_oversize="skip": the block passed the limit; buffer nothing more of it.  (Never
     * while a line is streamed: less than piece_size bytes wait since the last piece.) */
    c->skipping = 1;
    Py_CLEAR(c->event_data);
    c->data.len = 0;
    c->has_data = 0;
    c->data_bytes = 0;
}

/* The size limit on the line still arriving, as it grows (_modes.py's check_size). */
static int
check_size(Conn *c)
{
    if (c->skipping) {
        if (!c->dropped) {
            if (c->length > c->limit) {
                /* Spec-literal would be to keep it; memory bounded beats an unbounded id. */
                c->dropped = 1;
                buf_clear(&c->partial);
            }
            drop_raw(c, c->off + c->length);
        }
        return 0;
    }
    if (c->length > c->deadline - c->off) {
        if (!c->skip_mode) {
            fail_size(c);
            return -1;
        }
        begin_skip(c);
        return check_size(c);
    }
    return 0;
}

/* The bytes part[0:k] continue the line being assembled; `whole`: they are all of it,
 * in the chunk (then *line points at them, not copied), else *line is `partial`. */
static int
grow(Conn *c, const char *part, Py_ssize_t k, int whole, const char **line, PyObject **out)
{
    int got = 0;
    c->length += k;
    if (c->dropped) {
        drop_raw(c, c->off + c->length);
    }
    else if (c->streamed) {
        got = stream(c, part, k, c->off + c->length, out);
    }
    else {
        if (!whole && buf_append(&c->partial, part, k) < 0) {
            return -1;
        }
        *line = whole ? part : c->partial.p;
        Py_ssize_t n = whole ? k : c->partial.len;
        Py_ssize_t skip = c->piece_size && !c->skipping && n > 5 ? data_value_at(*line) : 0;
        if (skip) {
            got = start_streaming(c, *line, n, skip, out);
        }
    }
    if (got < 0 || check_size(c) < 0) {
        if (got > 0) {
            Py_CLEAR(*out);
        }
        return -1;
    }
    return got;
}

/* A Diagnostic item: keep_raw gives b"", its bytes go out with the next item. */
static int
diagnostic(Conn *c, PyObject *seen, Py_ssize_t start, Py_ssize_t end, PyObject **out)
{
    if (seen == NULL) {
        return -1;
    }
    if (seen == Py_None) {
        Py_DECREF(seen);
        return 0;
    }
    PyObject *item = NULL;
    if (PyTuple_Check(seen) && PyTuple_GET_SIZE(seen) == 2) {
        item = new_item(c->st->DiagnosticType, 5);
    }
    else {
        PyErr_SetString(PyExc_SystemError, "sse_sansio: a classifier gave no (code, message)");
    }
    if (item != NULL) {
        PyTuple_SET_ITEM(item, 0, Py_NewRef(PyTuple_GET_ITEM(seen, 0)));
        PyTuple_SET_ITEM(item, 1, Py_NewRef(PyTuple_GET_ITEM(seen, 1)));
        if (set_slot(item, 2, ssize(start)) < 0 || set_slot(item, 3, ssize(end)) < 0 ||
            set_slot(item, 4, slot_raw_empty(c)) < 0) {
            Py_CLEAR(item);
        }
    }
    Py_DECREF(seen);
    *out = item;
    return item ? 1 : -1;
}

/* Diagnostics: whether the spec ignores the field line p[0:n] (not data, not event),
 * noting an id or retry that took effect for discarded_block(). */
static int
ignored_field(Conn *c, const char *p, Field f)
{
    if (is_name(p, f, "id", 2)) {
        int kept = id_is_kept(f.v, f.vlen);
        c->id_seen |= kept;
        return !kept;
    }
    if (is_name(p, f, "retry", 5)) {
        int valid = retry_is_digits(f.v, f.vlen);
        c->retry_seen |= valid;
        return !valid;
    }
    return !is_name(p, f, "event", 5);
}

/* Diagnostics: field_diagnostic() words what the spec ignores in p[0:n]. */
static int
field_diagnostic_item(Conn *c, const char *p, Field f, Py_ssize_t start, Py_ssize_t end,
                      PyObject **out)
{
    PyObject *name = decode(c, p, f.name);
    PyObject *value = name ? decode(c, f.v, f.vlen) : NULL;
    PyObject *seen =
        value ? PyObject_CallFunctionObjArgs(c->st->field_diagnostic, name, value, NULL) : NULL;
    Py_XDECREF(name);
    Py_XDECREF(value);
    return diagnostic(c, seen, start, end, out);
}

/* A complete line p[0:n] (n > 0, ended by tlen bytes) of a block that is buffered:
 * process_line() interprets it (a comment moves `deadline`); then a DataPiece if the
 * data waiting passed piece_size, or a Diagnostic for a field the spec ignores. */
static int
field_line(Conn *c, const char *p, Py_ssize_t n, Py_ssize_t tlen, PyObject **out)
{
    Py_ssize_t start = c->off, end = start + n + tlen;
    Field f = {0, 0, NULL};
    int is_data = 0, had = 0, ignored = 0;
    if ((c->piece_size || c->diagnostics || c->updates) && p[0] != ':') {
        f = split_field(p, n);
        is_data = is_name(p, f, "data", 4);
        had = c->has_data != 0;
        if (!is_data && (c->diagnostics || c->updates)) {
            /* (ignored_field() notes an id or retry that took effect, for updates too.) */
            ignored = ignored_field(c, p, f) && c->diagnostics;
        }
    }
    int got = process_line(c, p, n, tlen, out);
    if (got < 0) {
        return -1;
    }
    if (is_data && c->piece_size) {
        c->data_bytes += f.vlen + had;
        return c->data_bytes > c->piece_size ? piece(c, end, out) : 0;
    }
    return ignored ? field_diagnostic_item(c, p, f, start, end, out) : got;
}

/* A complete line p[0:n] of a skipped block: only event, id and retry still count. */
static int
skipped_line(Conn *c, const char *p, Py_ssize_t n)
{
    Field f = split_field(p, n);
    int is_event = is_name(p, f, "event", 5), is_id = is_name(p, f, "id", 2);
    int is_retry = is_name(p, f, "retry", 5);
    if (!(is_event || is_id || is_retry)) {
        return 0;
    }
    if (c->strict && check_line(c, p, n, c->off) < 0) {
        return -1;
    }
    /* The line is valid UTF-8 (strict mode checked it above), so a failure is not a
     * decoding one to be located. */
    if (is_event) {
        return set_event_type(c, f.v, f.vlen);
    }
    int set = is_id ? set_id(c, f.v, f.vlen) : set_retry(c, f.v, f.vlen);
    if (set > 0) {
        /* for discarded_block(): an id or retry took effect */
        c->id_seen |= is_id;
        c->retry_seen |= is_retry;
    }
    return set < 0 ? -1 : 0;
}

/* What every block end resets that dispatch() does not. */
static void
end_block(Conn *c, Py_ssize_t end)
{
    c->first = end;
    set_mark(c, end);
    c->skipping = c->pieced = 0;
    c->has_data = 0;
    Py_CLEAR(c->event_data);
    buf_clear(&c->data);
    c->data_bytes = 0;
    c->id_seen = c->retry_seen = 0;
    Py_CLEAR(c->event_type);
    Py_CLEAR(c->block_retry);
    c->event_start = -1;
}

/* on_oversize="skip": the blank line at `start` ends a skipped block. */
static int
dispatch_skipped(Conn *c, Py_ssize_t start, Py_ssize_t end, PyObject **out)
{
    set_last_event_id(c);
    drop_raw(c, end); /* the block is skipped, its bytes too */
    PyObject *item = new_item(c->st->SkippedEventType, 6);
    if (item == NULL) {
        return -1;
    }
    if (set_slot(item, 0, Py_NewRef(event_type_of(c))) < 0 ||
        set_slot(item, 1, Py_NewRef(c->id_buffer)) < 0 ||
        set_slot(item, 2, ssize(start - c->first)) < 0 || set_slot(item, 3, ssize(c->first)) < 0 ||
        set_slot(item, 4, ssize(end)) < 0 || set_slot(item, 5, slot_raw_empty(c)) < 0) {
        Py_DECREF(item);
        return -1;
    }
    *out = item;
    end_block(c, end);
    return 1;
}

/* piece_size: the blank line at `start` ends an event that went out in pieces: the
 * last piece (if data waits; the PiecedEvent is then returned next), the PiecedEvent. */
static int
dispatch_pieced(Conn *c, Py_ssize_t start, Py_ssize_t end, PyObject **out)
{
    set_last_event_id(c);
    PyObject *last = NULL;
    if (c->data.len && piece(c, start, &last) < 0) {
        return -1;
    }
    PyObject *item = new_item(c->st->PiecedEventType, 6);
    if (item == NULL || set_slot(item, 0, Py_NewRef(event_type_of(c))) < 0 ||
        set_slot(item, 1, Py_NewRef(c->id_buffer)) < 0 ||
        set_slot(item, 2, Py_NewRef(c->block_retry ? c->block_retry : Py_None)) < 0 ||
        set_slot(item, 3, ssize(c->event_start)) < 0 || set_slot(item, 4, ssize(end)) < 0 ||
        set_slot(item, 5, c->keep_raw ? hand_out(c, end) : Py_NewRef(Py_None)) < 0) {
        Py_XDECREF(item);
        Py_XDECREF(last);
        return -1;
    }
    if (last != NULL) {
        c->pending = item;
        item = last;
    }
    *out = item;
    end_block(c, end);
    return 1;
}

/* updates=True: the Update for a block (from `start`) that ends at `end` without data
 * but set the last event ID (the buffer after set_last_event_id()) or the retry. */
static PyObject *
update_item(Conn *c, PyObject *retry, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *item = new_item(c->st->UpdateType, 5);
    if (item == NULL || set_slot(item, 0, Py_NewRef(c->id_buffer)) < 0 ||
        set_slot(item, 1, Py_NewRef(retry ? retry : Py_None)) < 0 ||
        set_slot(item, 2, ssize(start)) < 0 || set_slot(item, 3, ssize(end)) < 0 ||
        set_slot(item, 4, slot_raw_empty(c)) < 0) {
        Py_XDECREF(item);
        return NULL;
    }
    return item;
}

/* Spec: "If the line is empty (a blank line): Dispatch the event."  The line is at
 * `start`; the next one starts at `end`.  A block with fields but no data dispatches
 * nothing: with updates, an Update if it set the id or retry (_events.Update's rule),
 * then with diagnostics the Diagnostic (held in `pending` behind an Update). */
static int
dispatch_modes(Conn *c, Py_ssize_t start, Py_ssize_t end, PyObject **out)
{
    if (c->skipping) {
        return dispatch_skipped(c, start, end, out);
    }
    if (c->event_start >= 0 && c->pieced) {
        return dispatch_pieced(c, start, end, out);
    }
    Py_ssize_t event_start = c->event_start;
    PyObject *seen = NULL, *update = NULL, *retry = NULL;
    if (event_start >= 0 && c->has_data == 0 && c->diagnostics) {
        /* Spec: "If the data buffer is an empty string, set the data buffer and the
         * event type buffer to the empty string and return."  Diagnostics say so. */
        seen = PyObject_CallFunctionObjArgs(c->st->discarded_block, c->id_seen ? Py_True : Py_False,
                                            c->retry_seen ? Py_True : Py_False, NULL);
        if (seen == NULL) {
            return -1;
        }
    }
    /* The block's retry, which dispatch() clears, and whether it gives an Update. */
    int updated = c->updates && event_start >= 0 && c->has_data == 0 &&
                  (c->id_seen || c->block_retry != NULL);
    if (updated && c->block_retry != NULL) {
        retry = Py_NewRef(c->block_retry);
    }
    int got = dispatch(c, end, out);
    end_block(c, end);
    if (got == 0 && updated) {
        /* (dispatch() set the last event ID string from the buffer.) */
        update = update_item(c, retry, event_start, end);
        got = update == NULL ? -1 : 1;
    }
    Py_XDECREF(retry);
    if (got < 0 || seen == NULL) {
        Py_XDECREF(seen);
        if (update != NULL) {
            *out = update;
        }
        return got;
    }
    if (update == NULL) {
        return diagnostic(c, seen, event_start, end, out);
    }
    /* Both: the Update first, the Diagnostic next (as the pure core yields them). */
    if (diagnostic(c, seen, event_start, end, &c->pending) < 0) {
        Py_DECREF(update);
        return -1;
    }
    *out = update;
    return 1;
}

/* Strict, streamed value: a sequence still unfinished where the value ends at `at`. */
static int
check_streamed_end(Conn *c, Py_ssize_t at)
{
    Py_ssize_t left = c->data.len - c->checked;
    if (c->strict && left) {
        fail_utf8(c, "invalid UTF-8", c->data.p + c->checked, left, at - left);
        return -1;
    }
    return 0;
}

/* The line being assembled (line[0:length], unless dropped or streamed) ends here with
 * a line end of tlen bytes. */
static int
complete(Conn *c, const char *line, Py_ssize_t tlen, PyObject **out)
{
    if (check_size(c) < 0) { /* a blank line too: the line ends before it count */
        return -1;
    }
    Py_ssize_t start = c->off, n = c->length, end = start + n + tlen;
    int dropped = c->dropped, streamed = c->streamed, got = 0;
    c->length = 0;
    c->dropped = c->streamed = 0;
    if (dropped) {
        c->off = end;
        drop_raw(c, end);
    }
    else if (streamed) {
        /* The streamed data line is complete. */
        c->off = end;
        if (check_streamed_end(c, start + n) < 0) {
            return -1;
        }
        got = c->data_bytes > c->piece_size ? piece(c, end, out) : 0;
    }
    else if (n == 0) {
        c->off = end;
        got = dispatch_modes(c, start, end, out);
    }
    else if (c->skipping) {
        got = skipped_line(c, line, n); /* (it reads `off`, the line's start) */
        c->off = end;
        drop_raw(c, end);
    }
    else {
        got = field_line(c, line, n, tlen, out); /* (process_line() moves `off`) */
    }
    if (c->partial.len) {
        buf_clear(&c->partial);
    }
    return got;
}

/* Take the rest of the chunk being walked, or the next one; NULL if none is queued. */
static int
next_chunk(Conn *c)
{
    if (c->chunk != NULL && c->pos < PyBytes_GET_SIZE(c->chunk)) {
        return 1;
    }
    Py_CLEAR(c->chunk);
    if (c->q_head == c->q_len) {
        return 0;
    }
    c->chunk = queue_pop(c);
    c->pos = 0;
    return 1;
}

/* Put the bytes of `partial` back in front of the queue, as one chunk. */
static int
put_back(Conn *c)
{
    if (c->chunk != NULL) {
        /* (Only after next_chunk() found none: the chunk is used up.) */
        Py_CLEAR(c->chunk);
    }
    c->chunk = PyBytes_FromStringAndSize(c->partial.p, c->partial.len);
    c->pos = 0;
    buf_clear(&c->partial);
    return c->chunk ? 0 : -1;
}

/* Spec (Encoding, "UTF-8 decode"): a leading BOM is dropped, as take_bom() in _lines.py
 * does it: bytes are gathered while they are a prefix of the BOM, then what follows it
 * goes back to the queue as one chunk.  1: done, 0: waiting for data, -1. */
static int
modes_bom(Conn *c)
{
    Py_ssize_t skipped = 0;
    for (;;) {
        if (!next_chunk(c)) {
            if (!c->eof) {
                return 0;
            }
            c->length = c->partial.len; /* the stream ended inside what may be a BOM */
            break;
        }
        const char *s = PyBytes_AS_STRING(c->chunk) + c->pos;
        Py_ssize_t avail = PyBytes_GET_SIZE(c->chunk) - c->pos;
        if (c->partial.len == 0 && (avail >= 3 || memcmp(s, BOM, (size_t)avail) != 0)) {
            /* The chunk alone decides: no copy. */
            skipped = avail >= 3 && memcmp(s, BOM, 3) == 0 ? 3 : 0;
            c->pos += skipped;
            break;
        }
        if (buf_append(&c->partial, s, avail) < 0) {
            return -1;
        }
        c->pos += avail;
        Py_ssize_t k = c->partial.len < 3 ? c->partial.len : 3;
        if (c->partial.len >= 3 || memcmp(c->partial.p, BOM, (size_t)k) != 0) {
            skipped = memcmp(c->partial.p, BOM, (size_t)k) == 0 ? 3 : 0;
            memmove(c->partial.p, c->partial.p + skipped, (size_t)(c->partial.len - skipped));
            c->partial.len -= skipped;
            if (c->partial.len && put_back(c) < 0) {
                return -1;
            }
            break;
        }
    }
    c->off = c->first = skipped;
    set_mark(c, skipped);
    c->safe_end = skipped; /* the BOM alone is safe to forward */
    return 1;
}

/* Diagnostics: what the stream's first bytes look like, once per stream (sniff() in
 * _modes.py): sniff_start() is given them up to the first line end (a CRLF whole
 * if it is there), at most SNIFF_BYTES; short chunks are joined and put back as one.
 * 1 with *out set, 0: done, 2: waiting for data, -1. */
static int
modes_sniff(Conn *c, PyObject **out)
{
    const char *head = c->partial.p;
    Py_ssize_t n = c->partial.len;
    int alone = 0, decided = 0;
    if (c->length == 0) { /* (else the stream ended inside a BOM: the line is the head) */
        while (!decided) {
            if (!next_chunk(c)) {
                if (!c->eof) {
                    return 2;
                }
                break;
            }
            const char *s = PyBytes_AS_STRING(c->chunk) + c->pos;
            Py_ssize_t avail = PyBytes_GET_SIZE(c->chunk) - c->pos;
            if (c->partial.len == 0 &&
                (avail >= c->st->sniff_bytes || find_eol(s, avail) < avail)) {
                head = s; /* the chunk alone decides: no copy */
                n = avail;
                alone = decided = 1;
                break;
            }
            if (buf_append(&c->partial, s, avail) < 0) {
                return -1;
            }
            c->pos += avail;
            head = c->partial.p;
            n = c->partial.len;
            decided = n >= c->st->sniff_bytes || find_eol(head, n) < n;
        }
    }
    Py_ssize_t most = n < c->st->sniff_bytes ? n : c->st->sniff_bytes;
    Py_ssize_t found = find_eol(head, most);
    Py_ssize_t cut = found == most ? most : found + 1;
    if (cut < n && head[cut - 1] == '\r' && head[cut] == '\n') {
        cut++; /* a CRLF whole, unless a chunk ended at its CR (the span rule) */
    }
    PyObject *bytes = PyBytes_FromStringAndSize(head, cut);
    PyObject *seen = bytes ? PyObject_CallOneArg(c->st->sniff_start, bytes) : NULL;
    Py_XDECREF(bytes);
    if (c->length == 0 && !alone && n && put_back(c) < 0) {
        Py_XDECREF(seen);
        return -1;
    }
    return diagnostic(c, seen, c->off, c->off + cut, out);
}

static PyObject *
modes_end(Conn *c)
{
    if (c->eos == NULL) {
        /* Spec: "Once the end of the file is reached, any pending data must be
         * discarded."  Strict mode still refuses invalid UTF-8 in what it discards, but
         * not in a line it dropped unread. */
        Py_ssize_t length = c->partial.len;
        if (c->streamed) {
            if (check_streamed_end(c, c->off + c->length) < 0) {
                return NULL;
            }
        }
        else if (c->strict && length && !c->skipping) {
            Py_ssize_t bad = utf8_invalid_at((const unsigned char *)c->partial.p, length);
            if (bad >= 0) {
                return fail_utf8(c, "invalid UTF-8 at end of stream", c->partial.p + bad,
                                 length - bad, c->off + bad);
            }
        }
        if (build_eos(c, c->length, c->has_data != 0 || c->skipping) < 0) {
            return NULL;
        }
    }
    return Py_NewRef(c->eos);
}

/* A new chunk: the LF of a CRLF whose CR ended the last chunk belongs to the line
 * already walked, and a block boundary, `mark` or keep_raw safe point just before it
 * moves past it (the span rule). */
static void
modes_skip_lf(Conn *c)
{
    c->skip_lf = 0;
    if (PyBytes_AS_STRING(c->chunk)[0] != '\n') {
        return;
    }
    c->pos = 1;
    c->off += 1;
    if (c->first == c->off - 1) {
        c->first = c->off;
    }
    if (c->deadline == add_limit(c->off - 1, c->limit)) {
        set_mark(c, c->off);
    }
    if (c->safe_end == c->off - 1) {
        c->safe_end = c->off;
    }
}

/* The BOM look-ahead and the sniff, before the first line.  As parse_modes(). */
static PyObject *
modes_start(Conn *c)
{
    PyObject *item = NULL;
    if (c->stage == 0) {
        int r = modes_bom(c);
        if (r <= 0) {
            return r < 0 ? NULL : Py_NewRef(c->st->NeedData);
        }
        c->stage = c->diagnostics ? 1 : 2;
    }
    if (c->stage == 1) {
        int r = modes_sniff(c, &item);
        if (r < 0 || r == 2) {
            return r < 0 ? NULL : Py_NewRef(c->st->NeedData);
        }
        c->stage = 2;
        if (r == 1) {
            return item;
        }
    }
    return NULL;
}

/* The parser of the opt-in modes: walk the queued chunks up to the next item. */
static PyObject *
parse_modes(Conn *c)
{
    PyObject *item = NULL;
    if (c->pending != NULL) {
        item = c->pending;
        c->pending = NULL;
        return item;
    }
    if (c->stage < 2 && ((item = modes_start(c)) != NULL || PyErr_Occurred())) {
        return item;
    }
    for (;;) {
        if (c->chunk == NULL || c->pos == PyBytes_GET_SIZE(c->chunk)) {
            Py_CLEAR(c->chunk);
            if (c->q_head == c->q_len) {
                return c->eof ? modes_end(c) : Py_NewRef(c->st->NeedData);
            }
            c->chunk = queue_pop(c);
            c->pos = 0;
            if (c->skip_lf) {
                modes_skip_lf(c);
            }
            continue;
        }
        const char *s = PyBytes_AS_STRING(c->chunk);
        Py_ssize_t n = PyBytes_GET_SIZE(c->chunk), pos = c->pos;
        Py_ssize_t e = pos + find_eol(s + pos, n - pos);
        const char *line = c->partial.p;
        if (e > pos) {
            Py_ssize_t step = e - pos > c->window ? pos + c->window : e;
            int whole = step == e && e < n && c->length == 0;
            int got = grow(c, s + pos, step - pos, whole, &line, &item);
            c->pos = step;
            if (got) {
                return got < 0 ? NULL : item;
            }
            if (step < e || e == n) {
                continue; /* the line goes on */
            }
        }
        Py_ssize_t tlen = 1;
        if (s[e] == '\r') {
            if (e + 1 < n) {
                tlen = s[e + 1] == '\n' ? 2 : 1;
            }
            else {
                c->skip_lf = 1; /* the span rule: the line ends here, an LF may follow */
            }
        }
        c->pos = e + tlen;
        int got = complete(c, line, tlen, &item);
        if (got) {
            return got < 0 ? NULL : item;
        }
    }
}

#endif /* SSE_SANSIO_CORE_MODES_H */
