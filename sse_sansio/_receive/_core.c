/* The compiled receive core: sse_sansio._receive._core.Connection, in C.
 *
 * Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
 * https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 *
 * The pure core is the readable reference and the fallback: PyConnection
 * (_connection.py) and the parser it drives (_lines.py, _interpret.py, _fields.py,
 * _uniform.py, _raw.py, _modes.py).  This file is not its translation (one walker over
 * the chunks, not a generator over windows of lines), but it must behave exactly like
 * it: the same items, offsets and errors (tests/receive/test_cores.py and the fuzzers
 * compare the two on every input under every chunking).  The items are the public
 * classes of _events.py, built the way the pure core builds them (tuple.__new__ with
 * the same fields), so that equality, hashing, pickling and repr are theirs, not ours.
 *
 * Why C and not Cython: prototypes of both (same API, same drain loop, same workloads)
 * put a plain C extension type first, with a drain floor of 48 to 52 ns per chunk
 * against Cython's 60 to 69 ns, and Cython within 0 to 20% of C elsewhere.  Cython is
 * not needed to read or build this file: it would be a build dependency, its generated
 * C is not what is reviewed, and its refcounting is hidden rather than checked.  This
 * file uses only the stable, documented C API of CPython 3.11 to 3.15, needs nothing
 * but a C compiler, and is kept honest by the differential fuzzer and an ASan+UBSan
 * build (nox -s sanitize).  mypyc could not compile the tuple-subclass items.
 *
 * Strategy.  receive_data() only queues the chunk (one reference, no copy).  next_event()
 * walks the queued chunks from where it stopped, one line at a time, and returns at the
 * first item: it never parses ahead of the item it returns.  A complete line inside a
 * chunk is read where it lies; only a line cut by a chunk end is copied, into `partial`,
 * except a data line longer than STREAM_AFTER, whose value goes straight to the data
 * buffer as it arrives (cut_start(): a big value is copied once, not twice).
 * Line ends are found by one pass for CR or LF (find_eol(), _core_scan.h), so that each
 * byte is searched once.
 *
 * The files, one translation unit (so the compiler inlines across them, as the hot
 * path needs): this one (the connection, its failure and items, the default walker,
 * the methods, the module), _core_buffer.h (byte buffers), _core_utf8.h (UTF-8
 * validation), _core_scan.h (the byte loops: line ends, checked copies),
 * _core_decode.h (UTF-8 into a str), _core_fields.h (the field rules, each written
 * once and called by both walkers: _fields.py's twin) and _core_modes.h (the opt-in
 * modes).  Layout: .clang-format (PEP 7), checked by `nox -s lint`.
 *
 * The opt-in modes (on_oversize="skip", piece_size, diagnostics=True, updates=True) run
 * in a second walker, parse_modes() (_core_modes.h), which follows _modes.py step
 * for step: the line goes through grow() a window (the pure core's window, read when the
 * connection is made) at a time, then complete(); the size limit counts from `mark`,
 * which moves past each DataPiece; a skipped block keeps only its event, id and retry
 * lines, drops a line longer than the limit whole and, with keep_raw, cuts its bytes
 * out of the raw buffer (drop_raw()); a data line whose value outgrows piece_size is
 * streamed, its bytes checked (strict) and decoded the way an incremental decoder
 * does, so that pieces, error offsets and messages are the pure core's; the BOM
 * look-ahead and, with diagnostics, the once-per-stream sniff of the first line join
 * short chunks at the start as the pure core does.  Complete field lines of a block
 * that is kept go through process_line() and dispatch(), the default path's own; the
 * lines of a skipped block and the diagnostics' judgements use the same field rules
 * (_core_fields.h).  The per-byte and per-line work is C; a Diagnostic's code and
 * message come from the classifiers of _diagnostics.py, called only for a line C found
 * ignored (a field not event/data/id/retry, an id holding NUL, a retry not all
 * digits), a block without data, and the first line.  The default path pays one flag
 * test in next_event().
 *
 * One contract: the option checks and their messages, the default limit and the
 * refusals that do not depend on the stream are _contract.py's, read at import (as
 * the docstrings are); Connection() with no option given skips the call.
 *
 * Invariants:
 * - Offsets are stream offsets (bytes since the first byte received, BOM included):
 *   `off` is where the line being walked starts, `first` where the current block
 *   starts (after the blank line or comment line before its first field),
 *   `deadline` is first + max_event_size.  A line whose bytes (its own line end
 *   left out) reach past `deadline` fails the connection at `deadline`.
 * - A CR that ends a chunk ends its line at once (the span rule): the item's `end`
 *   stops after the CR, and an LF at the start of the next chunk belongs to no item.
 * - The BOM is looked for only while the bytes so far are a prefix of it.
 * - Every buffer is bounded: `partial` and `data` by max_event_size, `raw` (keep_raw)
 *   by max_event_size plus what the caller passed and has not drained.  In the opt-in
 *   modes `partial` holds nothing of a line dropped or streamed, and `data` only what
 *   waits for the next piece.  A buffer left
 *   empty keeps at most BUSY_CAPACITY for the next line or event, and one in use at
 *   most that or twice what it holds; at NEED_DATA an empty data buffer keeps nothing
 *   if the two together keep more than BUSY_CAPACITY (keep_raw: each keeps at most
 *   IDLE_CAPACITY), so that an idle connection holds under 1 KiB whatever it parsed
 *   before.
 * - Once any exception escapes next_event(), the connection is failed for good: a
 *   RemoteProtocolError is raised again (same message and offset) on every later call;
 *   any other exception becomes a LocalProtocolError whose __cause__ it is.
 * - One call at a time parses: `busy` is set while next_event() runs, and a nested or
 *   concurrent call that would touch the buffers (next_event(), take_raw(), __init__(),
 *   from a finalizer the garbage collector runs inside an allocation, or from another
 *   thread) raises ValueError and changes nothing, as the pure core's generator does.
 *   receive_data() only queues, so it is accepted even then: nothing it changes is held
 *   across an allocation by the outer call (hand_out() copies after allocating).
 * - Threads (issue 43, item 2): the module declares Py_mod_gil = Py_MOD_GIL_NOT_USED, so
 *   a free-threaded CPython keeps its GIL off; it has no mutable module-level state.
 *   Every method and getter runs inside a per-Connection critical section
 *   (Py_BEGIN_CRITICAL_SECTION, locked(): a no-op with the GIL), so two threads driving
 *   one Connection are serialized, as the GIL serializes them.  A critical section is
 *   suspended only where the thread could also run a finalizer (it calls back into
 *   Python or blocks), the same points where a GIL build lets a finalizer or another
 *   thread in: there the `busy` rule above holds (ValueError, or receive_data()
 *   queued), and nothing else.  Chosen over a "one thread per Connection" check: the
 *   cost is nil with the GIL and one uncontended lock per call without it, and a
 *   Connection handed from thread to thread (an executor's pool) keeps working.
 * - Strict mode checks every line for valid UTF-8 as it completes (an ASCII fast path
 *   eight bytes at a time); on a bad sequence CPython's own decoder is asked for the
 *   reason, so that the messages are those of the pure core.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The default path's per-line helpers, which the opt-in modes call too: inlined into
 * the default walker all the same (as when it was their only caller: 3.5% fewer
 * instructions per item on keep-alive streams, measured with callgrind). */
#if defined(__GNUC__) || defined(__clang__)
#define LINE_HELPER static inline __attribute__((always_inline))
#else
#define LINE_HELPER static inline
#endif

/* The module's state (PEP 489 multi-phase initialization, PEP 573 module state): what
 * _events.py, _errors.py, _connection.py, _contract.py and _fields.py define, looked up
 * when the module is executed, and the strings the core hands out.  Each module object
 * (one per interpreter) has its own; a Connection reaches it through `st`, a pointer
 * copied once when the connection is made (its type holds the module, and the
 * connection holds its type), so the parse path pays one load, not a lookup.
 * Measured with callgrind (instructions per item, CPython 3.12) against the static
 * globals this replaced: llm 8,024 -> 8,033 at 64 B and 4,590 -> 4,595 at 16 KiB,
 * keepalive 2,109 -> 2,107 and 2,012 -> 2,011: within 0.2%. */
typedef struct {
    PyTypeObject *ConnType; /* the Connection heap type made from conn_spec */
    PyTypeObject *EventType, *CommentType, *EndOfStreamType;
    PyObject *NeedData, *RemoteProtocolError, *LocalProtocolError;
    PyObject *str_message, *str_empty, *bytes_empty, *str_offset, *str_strict;
    /* What _contract.py defines: the option checks, the default limit, the refusals. */
    PyObject *check_options, *default_limit_obj, *not_copyable, *nested_call;
    PyObject *check_count_comments;
    Py_ssize_t default_limit;
    /* What _fields.py defines: the clamp of a retry value. */
    PyObject *retry_max;
    Py_ssize_t retry_max_digits;
    PyObject *str_error, *str_skip, *str_compiled;
    /* For the opt-in modes: their items, the diagnostics' classifiers (_diagnostics.py),
     * the sniff's length, and the pure class, whose _tuning.window (the parser's test
     * switch, _interpret.Tuning) a connection reads when made. */
    PyTypeObject *SkippedEventType, *DataPieceType, *PiecedEventType, *DiagnosticType;
    PyTypeObject *UpdateType;
    PyObject *sniff_start, *field_diagnostic, *discarded_block, *pure_class, *str_tuning,
        *str_window;
    Py_ssize_t sniff_bytes;
} CoreState;

static const unsigned char BOM[3] = {0xEF, 0xBB, 0xBF};

/* ------------------------------------------------------------------ byte buffers, UTF-8 */

#include "_core_buffer.h"
#include "_core_utf8.h"
#include "_core_scan.h"
#include "_core_decode.h"

/* ------------------------------------------------------------------ the connection */

typedef struct {
    PyObject_HEAD
    CoreState *st; /* the module's state (see CoreState) */
    /* The flags and small counts, together (no padding between them: an idle
     * connection stays under 1 KiB, see tests/receive/test_core_limits.py).  Options: */
    int strict;
    int keep_raw;
    int count_comments; /* count_comments=True: comment_count, no Comment items */
    /* The walk: */
    int eof;
    int plain; /* no keep_raw, no end of stream, no failure: receive_data() may queue */
    int bom_done;
    int head_len; /* BOM look-ahead: the bytes so far, a prefix of the BOM */
    int skip_lf;  /* the last chunk ended with the CR of a line: an LF next is its tail */
    int busy;     /* next_event() is running: a nested call is refused (see the header) */
    int has_data; /* the data buffer's state (see `data` below) */
    /* The opt-in modes (see "the opt-in modes" below; all 0 without them): */
    int modes;                   /* any of them: next_event() runs parse_modes() */
    int stage;                   /* 0: the BOM look-ahead, 1: the sniff, 2: lines */
    char skip_mode, diagnostics; /* on_oversize="skip"; diagnostics=True */
    char updates;                /* updates=True: Update items */
    char dropped, streamed;      /* that line is dropped whole / streamed in pieces */
    char skipping, pieced;       /* the block is skipped / has handed out a DataPiece */
    char id_seen, retry_seen;    /* the block's id / retry took effect (diagnostics, updates) */
    /* A data line cut by a chunk end whose value goes straight to `data`, not to
     * `partial` (cut_start()): cut_skip is the length of its "data:" or "data: " (0: no
     * such line), cut_ascii says its value is all ASCII so far. */
    char cut_skip, cut_ascii;
    /* Options. */
    Py_ssize_t comment_count;
    Py_ssize_t limit; /* PY_SSIZE_T_MAX: no limit */
    /* Received chunks not yet walked: queue[q_head:q_len], and the one being walked. */
    PyObject **queue;
    Py_ssize_t q_head, q_len, q_cap;
    PyObject *chunk;
    Py_ssize_t pos; /* next byte of chunk to walk */
    /* Failure: a protocol error (message and offset) or any other exception. */
    PyObject *error_message;
    Py_ssize_t error_offset;
    PyObject *failure;
    PyObject *eos; /* the EndOfStream, once built */
    /* The spec's state. */
    PyObject *last_event_id; /* the last event ID string */
    PyObject *retry;         /* the reconnection time, or NULL */
    Py_ssize_t off, first, deadline;
    Buf partial;         /* the line still arriving */
    Py_ssize_t cut_from; /* a cut data line's value is data.p[cut_from:] (cut_start()) */
    /* The data buffer: has_data is 0 (no data line yet), 1 (one: its value is
     * event_data) or 2 (more: the values joined with LF, as bytes, are in data). */
    PyObject *event_data;
    Buf data;
    PyObject *event_type;  /* the event type buffer; NULL: "message" */
    PyObject *id_buffer;   /* the last event ID buffer */
    PyObject *block_retry; /* a valid retry in this block, or NULL */
    Py_ssize_t event_start;
    PyObject *type_cache, *text_cache; /* the last event type and comment text */
    /* keep_raw: received bytes from stream offset raw_from on, at raw.p + raw_start;
     * those before safe_end are safe to hand out. */
    Buf raw;
    Py_ssize_t raw_start, raw_from, safe_end;
    /* The opt-in modes' sizes and offsets. */
    Py_ssize_t piece_size; /* 0: none */
    Py_ssize_t window;     /* PyConnection._tuning.window when the connection was made */
    Py_ssize_t length;     /* bytes of the line being assembled */
    Py_ssize_t covered;    /* where the bytes the pieces handed out end */
    Py_ssize_t data_bytes; /* bytes of data not handed out yet, LFs included */
    Py_ssize_t checked;    /* strict, streamed line: data[:checked] is complete UTF-8 */
    PyObject *pending;     /* an item to return before parsing on */
} Conn;

static Py_ssize_t
add_limit(Py_ssize_t at, Py_ssize_t limit)
{
    return limit > PY_SSIZE_T_MAX - at ? PY_SSIZE_T_MAX : at + limit;
}

/* Forget everything parsed or queued; the options stay. */
static void
conn_reset(Conn *c)
{
    for (Py_ssize_t i = c->q_head; i < c->q_len; i++) {
        Py_CLEAR(c->queue[i]);
    }
    PyMem_Free(c->queue);
    c->queue = NULL;
    c->q_head = c->q_len = c->q_cap = 0;
    Py_CLEAR(c->chunk);
    c->pos = 0;
    c->eof = 0;
    c->bom_done = 0;
    c->head_len = 0;
    c->skip_lf = 0;
    Py_CLEAR(c->error_message);
    c->error_offset = 0;
    Py_CLEAR(c->failure);
    Py_CLEAR(c->eos);
    Py_CLEAR(c->last_event_id);
    Py_CLEAR(c->retry);
    c->off = c->first = 0;
    buf_free(&c->partial);
    c->cut_skip = c->cut_ascii = 0;
    c->cut_from = 0;
    buf_free(&c->data);
    Py_CLEAR(c->event_data);
    c->has_data = 0;
    Py_CLEAR(c->event_type);
    Py_CLEAR(c->id_buffer);
    Py_CLEAR(c->block_retry);
    c->event_start = -1;
    Py_CLEAR(c->type_cache);
    Py_CLEAR(c->text_cache);
    c->comment_count = 0;
    raw_free(&c->raw);
    c->raw_start = c->raw_from = c->safe_end = 0;
    c->modes = c->skip_mode = c->diagnostics = c->updates = 0;
    c->piece_size = c->window = 0;
    c->stage = 0;
    c->length = 0;
    c->dropped = c->streamed = c->skipping = c->pieced = c->id_seen = c->retry_seen = 0;
    c->covered = c->data_bytes = c->checked = 0;
    Py_CLEAR(c->pending);
}

static void
conn_setup(Conn *c, int strict, Py_ssize_t limit, int keep_raw, PyObject *last_event_id)
{
    conn_reset(c);
    c->strict = strict;
    c->limit = limit;
    c->keep_raw = keep_raw;
    c->plain = !keep_raw;
    c->deadline = limit;
    c->last_event_id = Py_NewRef(last_event_id);
    c->id_buffer = Py_NewRef(last_event_id);
}

static struct PyModuleDef core_module;

/* The module state of the module that made `type` (a subclass made in Python included). */
static CoreState *
state_of_type(PyTypeObject *type)
{
    PyObject *module = PyType_GetModuleByDef(type, &core_module);
    return module == NULL ? NULL : (CoreState *)PyModule_GetState(module);
}

static PyObject *
conn_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    CoreState *st = state_of_type(type);
    if (st == NULL) {
        return NULL;
    }
    Conn *c = (Conn *)type->tp_alloc(type, 0);
    if (c != NULL) {
        c->st = st;
        conn_setup(c, 1, st->default_limit, 0, st->str_empty);
    }
    return (PyObject *)c;
}

static PyObject *
type_name(PyObject *obj)
{
    return PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__name__");
}

/* A call made while next_event() runs on this connection.  Returns -1. */
static int
refuse_nested(Conn *c, const char *method)
{
    PyObject *name = PyUnicode_FromString(method);
    if (name == NULL) {
        return -1;
    }
    PyObject *message = PyUnicode_Format(c->st->nested_call, name);
    Py_DECREF(name);
    if (message != NULL) {
        PyErr_SetObject(PyExc_ValueError, message);
        Py_DECREF(message);
    }
    return -1;
}

/* The opt-in modes, from options c->st->check_options() has accepted.  0 or -1. */
static int
set_modes(Conn *c, PyObject *on_oversize, PyObject *piece_size, PyObject *diagnostics,
          PyObject *updates)
{
    int skip = on_oversize ? PyObject_RichCompareBool(on_oversize, c->st->str_skip, Py_EQ) : 0;
    int diag = diagnostics ? PyObject_IsTrue(diagnostics) : 0;
    int upd = updates ? PyObject_IsTrue(updates) : 0;
    Py_ssize_t piece = piece_size && piece_size != Py_None ? PyLong_AsSsize_t(piece_size) : 0;
    if (skip < 0 || diag < 0 || upd < 0 || (piece == -1 && PyErr_Occurred())) {
        return -1;
    }
    c->skip_mode = skip;
    c->diagnostics = diag;
    c->updates = upd;
    c->piece_size = piece;
    c->modes = skip || diag || upd || piece;
    if (c->modes) {
        /* The pure core's window (_interpret.Tuning.window, _lines.WINDOW unless a test
         * sets PyConnection._tuning), so that pieces split where the pure core's do. */
        PyObject *tuning = PyObject_GetAttr(c->st->pure_class, c->st->str_tuning);
        PyObject *window = tuning ? PyObject_GetAttr(tuning, c->st->str_window) : NULL;
        Py_XDECREF(tuning);
        c->window = window ? PyLong_AsSsize_t(window) : -1;
        Py_XDECREF(window);
        if (c->window < 1) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError,
                                "sse_sansio: the parser window must be positive");
            }
            return -1;
        }
    }
    return 0;
}

static int
conn_init_locked(Conn *c, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {
        "errors",     "last_event_id", "max_event_size", "keep_raw", "on_oversize",
        "piece_size", "diagnostics",   "count_comments", "updates",  NULL};
    PyObject *errors = NULL, *last_event_id = c->st->str_empty, *max_event_size = NULL;
    PyObject *on_oversize = NULL, *piece_size = NULL, *diagnostics = NULL, *updates = NULL;
    int keep_raw = 0, count_comments = 0;
    if (c->busy) {
        return refuse_nested(c, "__init__");
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOpOOOpO:Connection", kwlist, &errors,
                                     &last_event_id, &max_event_size, &keep_raw, &on_oversize,
                                     &piece_size, &diagnostics, &count_comments, &updates)) {
        return -1;
    }
    int opted = on_oversize != NULL || piece_size != NULL || diagnostics != NULL || updates != NULL;
    if (errors == NULL && last_event_id == c->st->str_empty && max_event_size == NULL && !opted &&
        !count_comments) {
        conn_setup(c, 1, c->st->default_limit, keep_raw,
                   c->st->str_empty); /* Connection(): no checks */
        return 0;
    }
    /* The checks and their messages are _contract.check_options(), the pure core's. */
    PyObject *checked = PyObject_CallFunctionObjArgs(
        c->st->check_options, errors ? errors : c->st->str_strict, last_event_id,
        max_event_size ? max_event_size : c->st->default_limit_obj,
        on_oversize ? on_oversize : c->st->str_error, piece_size ? piece_size : Py_None, NULL);
    if (checked == NULL) {
        return -1;
    }
    if (!PyTuple_Check(checked) || PyTuple_GET_SIZE(checked) != 2) {
        Py_DECREF(checked);
        PyErr_SetString(PyExc_SystemError, "sse_sansio: c->st->check_options() gave no pair");
        return -1;
    }
    int overflow = 0;
    int strict = PyObject_IsTrue(PyTuple_GET_ITEM(checked, 0));
    long long value = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(checked, 1), &overflow);
    Py_DECREF(checked);
    if (strict < 0 || (value == -1 && PyErr_Occurred())) {
        return -1;
    }
    if (overflow < 0 || (overflow == 0 && value < 1)) {
        PyErr_SetString(PyExc_SystemError, "sse_sansio: c->st->check_options() gave a bad limit");
        return -1;
    }
    /* A limit beyond any offset a stream can reach is no limit. */
    Py_ssize_t limit =
        (overflow > 0 || value > (long long)PY_SSIZE_T_MAX) ? PY_SSIZE_T_MAX : (Py_ssize_t)value;
    if (count_comments) {
        PyObject *ok =
            PyObject_CallOneArg(c->st->check_count_comments, keep_raw ? Py_True : Py_False);
        if (ok == NULL) {
            return -1;
        }
        Py_DECREF(ok);
    }
    conn_setup(c, strict, limit, keep_raw, last_event_id);
    c->count_comments = count_comments;
    return opted ? set_modes(c, on_oversize, piece_size, diagnostics, updates) : 0;
}

/* ------------------------------------------------------------------ failure */

static PyObject *
raise_failure(Conn *c)
{
    PyObject *exc;
    if (c->error_message != NULL) {
        PyObject *args = PyTuple_Pack(1, c->error_message);
        if (args == NULL) {
            return NULL;
        }
        PyObject *kwargs = Py_BuildValue("{On}", c->st->str_offset, c->error_offset);
        if (kwargs == NULL) {
            Py_DECREF(args);
            return NULL;
        }
        exc = PyObject_Call(c->st->RemoteProtocolError, args, kwargs);
        Py_DECREF(args);
        Py_DECREF(kwargs);
        if (exc == NULL) {
            return NULL;
        }
    }
    else {
        PyObject *name = type_name(c->failure);
        if (name == NULL) {
            return NULL;
        }
        PyObject *message =
            PyUnicode_FromFormat("the connection failed earlier: %U: %S", name, c->failure);
        Py_DECREF(name);
        if (message == NULL) {
            return NULL;
        }
        exc = PyObject_CallOneArg(c->st->LocalProtocolError, message);
        Py_DECREF(message);
        if (exc == NULL) {
            return NULL;
        }
        PyException_SetCause(exc, Py_NewRef(c->failure));
    }
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

/* The peer sent something we refuse: fail for good at `offset`. Returns NULL. */
static PyObject *
fail(Conn *c, PyObject *message)
{
    if (message == NULL) {
        return NULL;
    }
    c->error_message = message;
    c->plain = 0;
    return raise_failure(c);
}

static PyObject *
fail_size(Conn *c)
{
    c->error_offset = c->deadline;
    return fail(c, PyUnicode_FromFormat("event exceeds max_event_size=%zd bytes at byte offset %zd",
                                        c->limit, c->deadline));
}

/* The exception being raised, taken: the error indicator is cleared and the exception
 * returned (a new reference, an instance, its traceback on it), or NULL if none was
 * set.  restore_raised() raises it again (stealing the reference).  CPython 3.12 has
 * PyErr_GetRaisedException() and PyErr_SetRaisedException(), and deprecates
 * PyErr_Fetch() and PyErr_Restore(), which 3.11 still needs: the one place
 * either is called. */
#if PY_VERSION_HEX >= 0x030C0000
static PyObject *
take_raised(void)
{
    return PyErr_GetRaisedException();
}

static void
restore_raised(PyObject *exc)
{
    PyErr_SetRaisedException(exc);
}
#else
static PyObject *
take_raised(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}

static void
restore_raised(PyObject *exc)
{
    if (exc != NULL) {
        PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
    }
}
#endif

/* Invalid UTF-8 starts at p (stream offset `at`): CPython's decoder gives the reason.
 * Four bytes are enough for it to see the whole bad sequence or the end of the data. */
static PyObject *
fail_utf8(Conn *c, const char *what, const char *p, Py_ssize_t avail, Py_ssize_t at)
{
    PyObject *ok = PyUnicode_DecodeUTF8(p, avail < 4 ? avail : 4, NULL);
    if (ok != NULL) {
        Py_DECREF(ok);
        PyErr_SetString(PyExc_SystemError, "sse_sansio: UTF-8 check disagrees with CPython");
        return NULL;
    }
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        return NULL;
    }
    PyObject *exc = take_raised();
    Py_ssize_t start = 0;
    PyObject *reason = PyUnicodeDecodeError_GetReason(exc);
    int bad = reason == NULL || PyUnicodeDecodeError_GetStart(exc, &start) < 0;
    Py_XDECREF(exc);
    if (bad) {
        Py_XDECREF(reason);
        return NULL;
    }
    c->error_offset = at + start;
    PyObject *message =
        PyUnicode_FromFormat("%s (%U) at byte offset %zd", what, reason, c->error_offset);
    Py_DECREF(reason);
    return fail(c, message);
}

/* Any other exception escaped next_event(): remember it, the state may be half-updated. */
static void
record_failure(Conn *c)
{
    if (c->error_message != NULL || c->failure != NULL) {
        return;
    }
    PyObject *exc = take_raised();
    c->failure = Py_XNewRef(exc);
    c->plain = 0;
    restore_raised(exc);
}

/* ------------------------------------------------------------------ items */

/* What tuple.__new__(cls, fields) does for the item classes: they add no fields of
 * their own (__slots__ = ()), so the instance is a tuple of `n` slots. */
static PyObject *
new_item(PyTypeObject *type, Py_ssize_t n)
{
    return type->tp_alloc(type, n);
}

/* Fill slot i with `value` (a new reference, or NULL after an error). */
static int
set_slot(PyObject *item, Py_ssize_t i, PyObject *value)
{
    if (value == NULL) {
        return -1;
    }
    PyTuple_SET_ITEM(item, i, value);
    return 0;
}

/* Bytes into a str: _core_decode.h's decoder, and CPython's where the bytes are not
 * UTF-8 (its UnicodeDecodeError in strict mode, its replacement characters else). */
static PyObject *
decode(Conn *c, const char *p, Py_ssize_t n)
{
    PyObject *s = utf8_decode(p, n);
    if (s == NULL && !PyErr_Occurred()) {
        s = PyUnicode_DecodeUTF8(p, n, c->strict ? NULL : "replace");
    }
    return s;
}

/* Decode, reusing *cache when the bytes are the same as last time: streams repeat their
 * event types and keep-alive comments.  (Bytes equal to a string's UTF-8 decode to that
 * string, in either mode.)  Only short strings are cached, so an idle connection holds
 * no big one. */
static PyObject *
cached_decode(Conn *c, PyObject **cache, const char *p, Py_ssize_t n)
{
    if (n > 64) {
        return decode(c, p, n);
    }
    if (*cache != NULL) {
        Py_ssize_t len;
        const char *u = PyUnicode_AsUTF8AndSize(*cache, &len);
        if (u == NULL) {
            return NULL;
        }
        if (len == n && memcmp(u, p, (size_t)n) == 0) {
            return Py_NewRef(*cache);
        }
    }
    PyObject *s = decode(c, p, n);
    if (s != NULL) {
        Py_XSETREF(*cache, Py_NewRef(s));
    }
    return s;
}

/* keep_raw: hand out the received bytes up to stream offset `end`. */
static PyObject *
hand_out(Conn *c, Py_ssize_t end)
{
    Py_ssize_t cut = end - c->raw_from;
    if (cut == 0) {
        return Py_NewRef(c->st->bytes_empty);
    }
    /* A big event's bytes become the bytes object where they lie (no Python code
     * runs meanwhile: its allocations are PyObject_Realloc()s). */
    PyObject *out = raw_take_bytes(&c->raw, c->raw_start, cut);
    if (out != NULL) {
        c->raw_start = 0;
        c->raw_from = c->safe_end = end;
        return out;
    }
    /* Allocate, then copy: a receive_data() run by a finalizer inside the allocation
     * may move c->raw.p. */
    out = PyBytes_FromStringAndSize(NULL, cut);
    if (out == NULL) {
        return NULL;
    }
    memcpy(PyBytes_AS_STRING(out), c->raw.p + c->raw_start, (size_t)cut);
    c->raw_start += cut;
    c->raw_from = c->safe_end = end;
    if (c->raw_start == c->raw.len) {
        c->raw_start = 0;
        clear_with(&c->raw, raw_free);
    }
    else if (c->raw_start > c->raw.len / 2) {
        /* Compact when most of it was handed out: each byte moves O(1) times. */
        memmove(c->raw.p, c->raw.p + c->raw_start, (size_t)(c->raw.len - c->raw_start));
        c->raw.len -= c->raw_start;
        c->raw_start = 0;
    }
    return out;
}

static PyObject *
ssize(Py_ssize_t n)
{
    return PyLong_FromSsize_t(n);
}

/* ------------------------------------------------------------------ the field rules */

#include "_core_fields.h"

/* ------------------------------------------------------------------ lines */

/* The data buffer of a block with more than one data line, as the event's data (see
 * append_data()).  The buffer is emptied at once: keep_raw's hand-out, which copies
 * the event's bytes, comes next. */
static PyObject *
joined_data(Conn *c)
{
    PyObject *s;
    if (c->has_data == 3) {
        s = decode(c, c->data.p, c->data.len);
    }
    else if ((s = buf_take_str(&c->data)) == NULL) {
        /* All ASCII, so already valid and its own string's bytes. */
        s = PyUnicode_New(c->data.len, 127);
        if (s != NULL) {
            memcpy(PyUnicode_DATA(s), c->data.p, (size_t)c->data.len);
        }
    }
    buf_clear(&c->data);
    return s;
}

/* Spec: "If the line is empty (a blank line): Dispatch the event."
 * Returns 1 with *out set, 0 (nothing to hand out) or -1. */
LINE_HELPER int
dispatch(Conn *c, Py_ssize_t end, PyObject **out)
{
    c->first = end;
    c->deadline = add_limit(end, c->limit);
    if (c->event_start < 0) {
        /* No field since the last blank line (comments at most): nothing changes. */
        if (c->keep_raw) {
            c->safe_end = end;
        }
        return 0;
    }
    set_last_event_id(c);
    int got = 0;
    if (c->has_data) {
        /* Spec: the data buffer without its last LF (the values joined with LF); the
         * type is the event type buffer if not empty, else "message". */
        PyObject *item = new_item(c->st->EventType, 7);
        if (item == NULL) {
            return -1;
        }
        *out = item;
        PyObject *data = c->has_data == 1 ? c->event_data : joined_data(c);
        if (c->has_data == 1) {
            c->event_data = NULL;
        }
        if (set_slot(item, 1, data) < 0 || set_slot(item, 0, Py_NewRef(event_type_of(c))) < 0 ||
            set_slot(item, 2, Py_NewRef(c->id_buffer)) < 0 ||
            set_slot(item, 3, Py_NewRef(c->block_retry ? c->block_retry : Py_None)) < 0 ||
            set_slot(item, 4, ssize(c->event_start)) < 0 || set_slot(item, 5, ssize(end)) < 0 ||
            set_slot(item, 6, c->keep_raw ? hand_out(c, end) : Py_NewRef(Py_None)) < 0) {
            Py_CLEAR(*out);
            return -1;
        }
        buf_clear(&c->data);
        c->has_data = 0;
        got = 1;
    }
    else if (c->keep_raw) {
        /* Spec: "If the data buffer is an empty string, set the data buffer and the
         * event type buffer to the empty string and return." */
        c->safe_end = end;
    }
    Py_CLEAR(c->event_type);
    Py_CLEAR(c->block_retry);
    c->event_start = -1;
    return got;
}

/* The cut data line's bytes so far, its line end left out. */
static inline Py_ssize_t
cut_len(Conn *c)
{
    return c->cut_skip + c->data.len - c->cut_from;
}

/* Strict mode: fail if the line p[0:n] (from stream offset `start`) is not UTF-8. */
static int
check_line(Conn *c, const char *p, Py_ssize_t n, Py_ssize_t start)
{
    Py_ssize_t bad = utf8_invalid_at((const unsigned char *)p, n);
    if (bad >= 0) {
        fail_utf8(c, "invalid UTF-8", p + bad, n - bad, start + bad);
        return -1;
    }
    return 0;
}

/* Decoding part of the line p[0:n] failed: in strict mode a UnicodeDecodeError says
 * the line is invalid, and check_line() says where.  Returns -1. */
static int
decoding_failed(Conn *c, const char *p, Py_ssize_t n, Py_ssize_t start)
{
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        return -1;
    }
    PyErr_Clear();
    if (check_line(c, p, n, start) == 0) {
        PyErr_SetString(PyExc_SystemError, "sse_sansio: UTF-8 check disagrees with CPython");
    }
    return -1;
}

/* One complete line p[0:n], ended by tlen bytes, starting at stream offset c->off.
 * Returns 1 with *out set, 0 or -1. */
LINE_HELPER int
process_line(Conn *c, const char *p, Py_ssize_t n, Py_ssize_t tlen, PyObject **out)
{
    Py_ssize_t start = c->off, end = start + n + tlen;
    /* The line's own line end does not count: a CR that ends a chunk may yet turn out
     * to be a CRLF, and the limit must not depend on how the stream was chunked. */
    if (n > c->deadline - start) {
        fail_size(c);
        return -1;
    }
    c->off = end;
    if (n == 0) {
        return dispatch(c, end, out);
    }
    /* Strict mode checks the whole line; where the line's text is decoded anyway (a
     * comment, a block's first data line, an event type), the decoding is the check,
     * and a failure is located by check_line(); a later data line is checked as it is
     * copied (append_data()). */
    if (p[0] == ':') {
        /* Spec: "If the line starts with a U+003A COLON character (:): Ignore the line."
         * We hand it to the caller as a Comment, or count it (count_comments). */
        Py_ssize_t skip = (n > 1 && p[1] == ' ') ? 2 : 1;
        if (c->count_comments) {
            if (c->strict && check_line(c, p, n, start) < 0) {
                return -1;
            }
            c->comment_count++;
            if (c->event_start < 0) {
                c->first = end; /* as below */
                c->deadline = add_limit(end, c->limit);
            }
            return 0;
        }
        PyObject *item = new_item(c->st->CommentType, 4);
        if (item == NULL) {
            return -1;
        }
        *out = item;
        PyObject *text = cached_decode(c, &c->text_cache, p + skip, n - skip);
        if (text == NULL) {
            Py_CLEAR(*out);
            return decoding_failed(c, p, n, start);
        }
        PyTuple_SET_ITEM(item, 0, text);
        PyObject *raw;
        if (!c->keep_raw) {
            raw = Py_NewRef(Py_None);
        }
        else if (c->event_start < 0) {
            /* A comment between events is forwarded at once; one inside an event's
             * fields travels with that event. */
            raw = hand_out(c, end);
        }
        else {
            raw = Py_NewRef(c->st->bytes_empty);
        }
        if (c->event_start < 0) {
            /* Nothing is held for a comment before a block's first field: the block,
             * and its size, start after it. */
            c->first = end;
            c->deadline = add_limit(end, c->limit);
        }
        if (set_slot(item, 3, raw) < 0 || set_slot(item, 1, ssize(start)) < 0 ||
            set_slot(item, 2, ssize(end)) < 0) {
            Py_CLEAR(*out);
            return -1;
        }
        return 1;
    }
    /* The field and its value (split_field()); each field's rule is a helper of
     * _core_fields.h, which the opt-in modes' walker calls too. */
    Field f = split_field(p, n);
    if (c->event_start < 0) {
        c->event_start = start;
    }
    int is_data = is_name(p, f, "data", 4);
    int is_event = is_name(p, f, "event", 5);
    if (c->strict && !(is_data || is_event) && check_line(c, p, n, start) < 0) {
        return -1;
    }
    if (is_data) {
        if (append_data(c, f.v, f.vlen, start + (f.v - p)) < 0) {
            return decoding_failed(c, p, n, start);
        }
        return 0;
    }
    if (is_event) {
        return set_event_type(c, f.v, f.vlen) < 0 ? decoding_failed(c, p, n, start) : 0;
    }
    if (is_name(p, f, "id", 2)) {
        return set_id(c, f.v, f.vlen) < 0 ? -1 : 0;
    }
    if (is_name(p, f, "retry", 5)) {
        return set_retry(c, f.v, f.vlen) < 0 ? -1 : 0;
    }
    /* Spec: "Otherwise: The field is ignored." */
    return 0;
}

/* ------------------------------------------------------------------ chunks */

static int
queue_push(Conn *c, PyObject *chunk)
{
    if (c->q_len == c->q_cap) {
        if (c->q_head > 0 && c->q_head >= c->q_cap / 2) {
            memmove(c->queue, c->queue + c->q_head,
                    (size_t)(c->q_len - c->q_head) * sizeof(PyObject *));
            c->q_len -= c->q_head;
            c->q_head = 0;
        }
        else {
            Py_ssize_t cap = c->q_cap ? c->q_cap * 2 : 4;
            PyObject **queue = PyMem_Realloc(c->queue, (size_t)cap * sizeof(PyObject *));
            if (queue == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            c->queue = queue;
            c->q_cap = cap;
        }
    }
    c->queue[c->q_len++] = Py_NewRef(chunk);
    return 0;
}

static PyObject *
queue_pop(Conn *c)
{
    PyObject *chunk = c->queue[c->q_head++];
    if (c->q_head == c->q_len) {
        c->q_head = c->q_len = 0;
        if (c->q_cap > 16) {
            PyMem_Free(c->queue);
            c->queue = NULL;
            c->q_cap = 0;
        }
    }
    return chunk;
}

/* Spec (Encoding, "UTF-8 decode"): a leading BOM is dropped, only at the very start of
 * the stream, also when it arrives over several chunks.  The look-ahead ends at the
 * first byte that rules a BOM out: the bytes so far then start the first line. */
static int
look_for_bom(Conn *c)
{
    const char *s = PyBytes_AS_STRING(c->chunk);
    Py_ssize_t n = PyBytes_GET_SIZE(c->chunk);
    Py_ssize_t need = 3 - c->head_len, k = n < need ? n : need;
    if (memcmp(s, BOM + c->head_len, (size_t)k) == 0) {
        if (k < need) {
            c->head_len += (int)k;
            Py_CLEAR(c->chunk);
            return 0;
        }
        /* Offsets count the BOM; the first block starts after it; keep_raw may hand the
         * BOM out on its own. */
        c->pos = k;
        c->off = c->first = c->safe_end = 3;
        c->deadline = add_limit(3, c->limit);
        c->head_len = 0;
        c->bom_done = 1;
        return 0;
    }
    c->bom_done = 1;
    if (c->head_len) {
        int r = buf_append(&c->partial, (const char *)BOM, c->head_len);
        c->head_len = 0;
        return r;
    }
    return 0;
}

/* Build the EndOfStream (the discarded line's length, whether an event was pending,
 * keep_raw's last safe bytes) into c->eos, and give every buffer back: the connection
 * parses nothing more.  Both walkers end here.  0 or -1. */
static int
build_eos(Conn *c, Py_ssize_t length, int partial_event)
{
    PyObject *eos = new_item(c->st->EndOfStreamType, 3);
    if (eos == NULL) {
        return -1;
    }
    if (set_slot(eos, 0, ssize(length)) < 0 ||
        set_slot(eos, 1, PyBool_FromLong(partial_event)) < 0 ||
        set_slot(eos, 2, c->keep_raw ? hand_out(c, c->safe_end) : Py_NewRef(Py_None)) < 0) {
        Py_DECREF(eos);
        return -1;
    }
    c->eos = eos;
    buf_free(&c->partial);
    buf_free(&c->data);
    Py_CLEAR(c->event_data);
    Py_CLEAR(c->type_cache);
    Py_CLEAR(c->text_cache);
    return 0;
}

static PyObject *
end_of_stream(Conn *c)
{
    if (c->eos == NULL) {
        if (!c->bom_done) {
            /* The stream ended inside what may have been a BOM: not a line yet, so the
             * limit does not apply (strict mode refuses it as a cut sequence). */
            c->bom_done = 1;
            if (buf_append(&c->partial, (const char *)BOM, c->head_len) < 0) {
                return NULL;
            }
        }
        /* Spec: "Once the end of the file is reached, any pending data must be
         * discarded."  Strict mode still refuses invalid UTF-8 in what it discards. */
        Py_ssize_t length = c->partial.len;
        if (c->strict && length) {
            Py_ssize_t bad = utf8_invalid_at((const unsigned char *)c->partial.p, length);
            if (bad >= 0) {
                return fail_utf8(c, "invalid UTF-8 at end of stream", c->partial.p + bad,
                                 length - bad, c->off + bad);
            }
        }
        if (c->cut_skip) {
            /* The cut data line's "data:" is ASCII; its value is in the data buffer. */
            length = cut_len(c);
            const char *v = c->data.p + c->cut_from;
            Py_ssize_t vlen = c->data.len - c->cut_from;
            Py_ssize_t bad =
                c->strict && !c->cut_ascii ? utf8_invalid_at((const unsigned char *)v, vlen) : -1;
            if (bad >= 0) {
                return fail_utf8(c, "invalid UTF-8 at end of stream", v + bad, vlen - bad,
                                 c->off + c->cut_skip + bad);
            }
        }
        if (build_eos(c, length, c->has_data != 0) < 0) {
            return NULL;
        }
    }
    return Py_NewRef(c->eos);
}

/* A data line cut by a chunk end.  Its value is appended to the data buffer piece by
 * piece, as it arrives, rather than gathered in `partial` and copied again at its line
 * end: one copy of a big value, not two.  Strict mode checks it at its line end (see
 * cut_end()), so that errors come in the order and at the offsets of the lines
 * gathered whole (the size limit first, as each piece arrives).
 *
 * Only a line longer than STREAM_AFTER is streamed: a short one (most of them) is
 * gathered in `partial` and read whole, as it always was, which costs less for it; a
 * long one has at most STREAM_AFTER bytes copied twice.
 *
 * cut_start(): the line (no line end in it yet, stream offset c->off) is what `partial`
 * holds, then s[0:n], more than STREAM_AFTER bytes.  If it starts with "data:", it is
 * streamed from here on.  Returns 1, 0 (gather it in `partial`: not a data line) or
 * -1. */
#define STREAM_AFTER 512

static int cut_more(Conn *c, const char *p, Py_ssize_t n);

static int
cut_start(Conn *c, const char *s, Py_ssize_t n)
{
    Py_ssize_t held = c->partial.len, in_partial = held < 6 ? held : 6;
    char head[6];
    if (in_partial > 0) { /* partial.p may be NULL when empty: memcpy forbids it */
        memcpy(head, c->partial.p, (size_t)in_partial);
    }
    memcpy(head + in_partial, s, (size_t)(6 - in_partial));
    Py_ssize_t skip = data_value_at(head);
    if (skip == 0) {
        return 0;
    }
    if (data_to_buffer(c) < 0 || (c->has_data && buf_append(&c->data, "\n", 1) < 0)) {
        return -1;
    }
    c->cut_skip = (char)skip;
    c->cut_ascii = 1;
    c->cut_from = c->data.len;
    if (held > skip && cut_more(c, c->partial.p + skip, held - skip) < 0) {
        return -1;
    }
    buf_clear(&c->partial);
    Py_ssize_t past = held < skip ? skip - held : 0;
    return cut_more(c, s + past, n - past) < 0 ? -1 : 1;
}

/* The next piece p[0:n] of the cut data line's value.  0 or -1. */
static int
cut_more(Conn *c, const char *p, Py_ssize_t n)
{
    if (!c->cut_ascii) {
        return buf_append(&c->data, p, n);
    }
    if (buf_reserve(&c->data, n) < 0) {
        return -1;
    }
    int ascii = 1;
    (void)copy_checked(c->data.p + c->data.len, (const unsigned char *)p, n, 0, &ascii);
    c->data.len += n;
    c->cut_ascii &= ascii;
    return 0;
}

/* The cut data line ends (its last piece appended), with tlen bytes of line end: what
 * process_line() does for a data line.  A block's first value becomes its string at
 * once (has_data 1, as when it lay whole in a chunk): an ASCII one is copied into it,
 * any other decoded, the decoding being strict mode's check; a later value stays in
 * the buffer, checked here if it was not all ASCII.  0 or -1. */
static int
cut_end(Conn *c, Py_ssize_t tlen)
{
    Py_ssize_t start = c->off, at = start + c->cut_skip;
    const char *v = c->data.p + c->cut_from;
    Py_ssize_t n = c->data.len - c->cut_from;
    c->off = start + cut_len(c) + tlen;
    c->cut_skip = 0;
    if (c->has_data == 0) {
        if (c->cut_ascii) {
            /* The value is the whole buffer (the block's first data line). */
            c->event_data = c->cut_from == 0 ? buf_take_str(&c->data) : NULL;
            if (c->event_data == NULL && (c->event_data = PyUnicode_New(n, 127)) != NULL) {
                memcpy(PyUnicode_DATA(c->event_data), v, (size_t)n);
            }
        }
        else {
            c->event_data = decode(c, v, n);
        }
        if (c->event_data == NULL) {
            return decoding_failed(c, v, n, at);
        }
        c->has_data = 1;
        buf_clear(&c->data);
    }
    else {
        Py_ssize_t bad =
            c->strict && !c->cut_ascii ? utf8_invalid_at((const unsigned char *)v, n) : -1;
        if (bad >= 0) {
            fail_utf8(c, "invalid UTF-8", v + bad, n - bad, at + bad);
            return -1;
        }
        if (!c->cut_ascii) {
            c->has_data = 3;
        }
    }
    if (c->event_start < 0) {
        c->event_start = start;
    }
    return 0;
}

/* Every chunk is walked: NEED_DATA, after trimming what the buffers keep while the
 * connection waits (see the invariants at the top). */
static PyObject *
wait_for_data(Conn *c)
{
    if (c->keep_raw) {
        /* Its raw buffer is compacted, not emptied, and holds a cut line a second
         * time: each buffer keeps less. */
        (void)buf_idle(&c->partial, 0);
        (void)buf_idle(&c->data, 0);
        c->raw_start = idle_with(&c->raw, c->raw_start, raw_realloc, raw_free);
    }
    else if (c->data.len == 0 && c->data.cap + c->partial.cap > BUSY_CAPACITY) {
        /* Both kept at BUSY_CAPACITY would be over 1 KiB with the struct: the data
         * buffer goes (only blocks of several data lines use it), the line buffer
         * stays for the next line cut by a chunk end. */
        buf_free(&c->data);
    }
    return Py_NewRef(c->st->NeedData);
}

/* The parser: walk the queued chunks up to the next item. */
static PyObject *
parse(Conn *c)
{
    for (;;) {
        if (c->chunk == NULL) {
            if (c->q_head == c->q_len) {
                if (!c->eof) {
                    return wait_for_data(c);
                }
                return end_of_stream(c);
            }
            c->chunk = queue_pop(c);
            c->pos = 0;
            if (!c->bom_done) {
                if (look_for_bom(c) < 0) {
                    return NULL;
                }
                if (c->chunk == NULL) {
                    continue;
                }
            }
            if (c->skip_lf) {
                c->skip_lf = 0;
                if (PyBytes_AS_STRING(c->chunk)[0] == '\n') {
                    /* The LF of a CRLF whose CR ended the last chunk: it belongs to no
                     * item.  A block boundary or a keep_raw safe point just before it
                     * moves past it, so that neither the limit nor keep_raw depends on
                     * the chunking. */
                    c->pos = 1;
                    c->off += 1;
                    if (c->first == c->off - 1) {
                        c->first = c->off;
                        c->deadline = add_limit(c->off, c->limit);
                    }
                    if (c->safe_end == c->off - 1) {
                        c->safe_end = c->off;
                    }
                }
            }
        }
        const char *s = PyBytes_AS_STRING(c->chunk);
        Py_ssize_t n = PyBytes_GET_SIZE(c->chunk), pos = c->pos;
        if (pos == n) {
            Py_CLEAR(c->chunk);
            continue;
        }
        Py_ssize_t e = pos + find_eol(s + pos, n - pos);
        if (e == n) {
            /* No line end: the line goes on.  It counts with its bytes so far. */
            Py_ssize_t so_far = c->cut_skip ? cut_len(c) : c->partial.len;
            if (n - pos > c->deadline - c->off - so_far) {
                return fail_size(c);
            }
            int r;
            if (c->cut_skip) {
                r = cut_more(c, s + pos, n - pos);
            }
            else {
                r = n - pos > STREAM_AFTER - c->partial.len ? cut_start(c, s + pos, n - pos) : 0;
                if (r == 0) {
                    r = buf_append(&c->partial, s + pos, n - pos);
                }
            }
            if (r < 0) {
                return NULL;
            }
            Py_CLEAR(c->chunk);
            continue;
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
        const char *line = s + pos;
        Py_ssize_t len = e - pos;
        if (c->cut_skip) {
            if (len > c->deadline - c->off - cut_len(c)) {
                return fail_size(c);
            }
            if (cut_more(c, line, len) < 0 || cut_end(c, tlen) < 0) {
                return NULL;
            }
            c->pos = e + tlen;
            continue;
        }
        if (c->partial.len) {
            if (len > c->deadline - c->off - c->partial.len) {
                return fail_size(c);
            }
            if (buf_append(&c->partial, line, len) < 0) {
                return NULL;
            }
            line = c->partial.p;
            len = c->partial.len;
        }
        c->pos = e + tlen;
        PyObject *item = NULL;
        int got = process_line(c, line, len, tlen, &item);
        if (c->partial.len) {
            buf_clear(&c->partial);
        }
        if (got < 0) {
            return NULL;
        }
        if (got) {
            return item;
        }
    }
}

/* ------------------------------------------------------------------ the opt-in modes */

#include "_core_modes.h"

/* ------------------------------------------------------------------ methods */

static PyObject *
conn_next_event_locked(Conn *c, PyObject *Py_UNUSED(ignored))
{
    if (c->error_message != NULL || c->failure != NULL) {
        return raise_failure(c);
    }
    if (c->busy) {
        refuse_nested(c, "next_event");
        return NULL; /* not a failure: the outer call goes on */
    }
    c->busy = 1;
    PyObject *item = c->modes ? parse_modes(c) : parse(c);
    if (item == NULL) {
        record_failure(c);
    }
    c->busy = 0;
    return item;
}

static PyObject *
conn_receive_data_locked(Conn *c, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *data;
    if (nargs == 1 && kwnames == NULL) {
        data = args[0];
    }
    else if (nargs == 0 && kwnames != NULL && PyTuple_GET_SIZE(kwnames) == 1 &&
             PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "data") == 0) {
        data = args[0];
    }
    else {
        PyErr_SetString(PyExc_TypeError, "receive_data() takes exactly one argument (data)");
        return NULL;
    }
    if (PyBytes_CheckExact(data) && c->plain && PyBytes_GET_SIZE(data)) {
        /* The common case, kept short. */
        if (queue_push(c, data) < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    if (c->error_message != NULL || c->failure != NULL) {
        return raise_failure(c);
    }
    if (PyBytes_CheckExact(data)) {
        Py_INCREF(data);
    }
    else if (PyByteArray_Check(data) || PyMemoryView_Check(data)) {
        data = PyBytes_FromObject(data); /* a copy: the caller may reuse its buffer */
        if (data == NULL) {
            return NULL;
        }
    }
    else {
        PyObject *name = type_name(data);
        if (name != NULL) {
            PyErr_Format(PyExc_TypeError, "receive_data() takes bytes, not %U", name);
            Py_DECREF(name);
        }
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (n == 0) {
        c->eof = 1;
        c->plain = 0;
        result = Py_None;
    }
    else if (c->eof) {
        PyErr_SetString(c->st->LocalProtocolError,
                        "receive_data() called with data after end of stream");
    }
    else if (c->keep_raw && c->safe_end - c->raw_from > c->limit) {
        /* The caller keeps feeding without taking what is safe to forward. */
        PyObject *message = PyUnicode_FromFormat(
            "%zd bytes are waiting for take_raw(), more than max_event_size=%zd: call "
            "take_raw() at every NEED_DATA",
            c->safe_end - c->raw_from, c->limit);
        if (message != NULL) {
            PyErr_SetObject(c->st->LocalProtocolError, message);
            Py_DECREF(message);
        }
    }
    else if ((!c->keep_raw || raw_append(&c->raw, PyBytes_AS_STRING(data), n) == 0) &&
             queue_push(c, data) == 0) {
        result = Py_None;
    }
    Py_DECREF(data);
    return Py_XNewRef(result);
}

static PyObject *
conn_take_raw_locked(Conn *c, PyObject *Py_UNUSED(ignored))
{
    if (!c->keep_raw) {
        PyErr_SetString(c->st->LocalProtocolError, "take_raw() needs Connection(keep_raw=True)");
        return NULL;
    }
    if (c->busy) {
        refuse_nested(c, "take_raw");
        return NULL;
    }
    return hand_out(c, c->safe_end);
}

static PyObject *
conn_copy(Conn *c, PyObject *Py_UNUSED(ignored))
{
    PyErr_SetObject(PyExc_TypeError, c->st->not_copyable); /* the pure core's answer */
    return NULL;
}

static PyObject *
conn_deepcopy(Conn *c, PyObject *Py_UNUSED(memo))
{
    return conn_copy(c, NULL);
}

static PyObject *
conn_sizeof_locked(Conn *c, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t size = Py_TYPE(c)->tp_basicsize + c->q_cap * (Py_ssize_t)sizeof(PyObject *) +
                      c->partial.cap + c->data.cap + c->raw.cap;
    return PyLong_FromSsize_t(size);
}

static PyObject *
conn_get_last_event_id_locked(Conn *c, void *Py_UNUSED(closure))
{
    return Py_NewRef(c->last_event_id);
}

static PyObject *
conn_get_retry_locked(Conn *c, void *Py_UNUSED(closure))
{
    return Py_NewRef(c->retry ? c->retry : Py_None);
}

static PyObject *
conn_get_comment_count_locked(Conn *c, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(c->comment_count);
}

static PyObject *
conn_get_implementation(Conn *c, void *Py_UNUSED(closure))
{
    return Py_NewRef(c->st->str_compiled);
}

static int
conn_traverse(Conn *c, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(c)); /* a heap type's instances own a reference to it */
    Py_VISIT(c->failure);
    Py_VISIT(c->eos);
    Py_VISIT(c->last_event_id);
    Py_VISIT(c->id_buffer);
    Py_VISIT(c->pending);
    return 0;
}

static int
conn_clear(Conn *c)
{
    conn_reset(c);
    return 0;
}

static void
conn_dealloc(Conn *c)
{
    PyTypeObject *type = Py_TYPE(c);
    PyObject_GC_UnTrack(c);
    conn_reset(c);
    type->tp_free((PyObject *)c);
    Py_DECREF(type);
}

/* The docstrings are the pure core's, filled in at import (see PyInit__core). */
/* ------------------------------------------------------------------ threads */

/* Each entry point runs its _locked body inside the Connection's critical section (the
 * header's thread contract).  Before 3.13 there is no such API and always a GIL: the
 * section is then a plain block.  Py_BEGIN_CRITICAL_SECTION opens a block that
 * Py_END_CRITICAL_SECTION closes, so the bodies return through `result`. */
#ifndef Py_BEGIN_CRITICAL_SECTION
#define Py_BEGIN_CRITICAL_SECTION(op) {
#define Py_END_CRITICAL_SECTION() }
#endif

#define LOCKED(type, call)                                                                         \
    type result;                                                                                   \
    Py_BEGIN_CRITICAL_SECTION(c);                                                                  \
    result = call;                                                                                 \
    Py_END_CRITICAL_SECTION();                                                                     \
    return result

static int
conn_init(Conn *c, PyObject *args, PyObject *kwds)
{
    LOCKED(int, conn_init_locked(c, args, kwds));
}

static PyObject *
conn_next_event(Conn *c, PyObject *Py_UNUSED(ignored))
{
    LOCKED(PyObject *, conn_next_event_locked(c, NULL));
}

static PyObject *
conn_receive_data(Conn *c, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    LOCKED(PyObject *, conn_receive_data_locked(c, args, nargs, kwnames));
}

static PyObject *
conn_take_raw(Conn *c, PyObject *Py_UNUSED(ignored))
{
    LOCKED(PyObject *, conn_take_raw_locked(c, NULL));
}

static PyObject *
conn_sizeof(Conn *c, PyObject *Py_UNUSED(ignored))
{
    LOCKED(PyObject *, conn_sizeof_locked(c, NULL));
}

static PyObject *
conn_get_last_event_id(Conn *c, void *Py_UNUSED(closure))
{
    LOCKED(PyObject *, conn_get_last_event_id_locked(c, NULL));
}

static PyObject *
conn_get_retry(Conn *c, void *Py_UNUSED(closure))
{
    LOCKED(PyObject *, conn_get_retry_locked(c, NULL));
}

static PyObject *
conn_get_comment_count(Conn *c, void *Py_UNUSED(closure))
{
    LOCKED(PyObject *, conn_get_comment_count_locked(c, NULL));
}

static PyMethodDef conn_methods[] = {
    {"next_event", (PyCFunction)conn_next_event, METH_NOARGS, NULL},
    {"receive_data", (PyCFunction)(void (*)(void))conn_receive_data, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {"take_raw", (PyCFunction)conn_take_raw, METH_NOARGS, NULL},
    {"__copy__", (PyCFunction)conn_copy, METH_NOARGS, "Refused: TypeError."},
    {"__deepcopy__", (PyCFunction)conn_deepcopy, METH_O, "Refused: TypeError."},
    {"__sizeof__", (PyCFunction)conn_sizeof, METH_NOARGS,
     "The connection's size in memory, with its buffers, in bytes."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef conn_getset[] = {
    {"last_event_id", (getter)conn_get_last_event_id, NULL, NULL, NULL},
    {"retry", (getter)conn_get_retry, NULL, NULL, NULL},
    {"comment_count", (getter)conn_get_comment_count, NULL, NULL, NULL},
    {"implementation", (getter)conn_get_implementation, NULL,
     "Which core parses for this connection: \"compiled\" here, whatever its options\n"
     "(the pure core says \"python\").  sse_sansio.IMPLEMENTATION is the process's\n"
     "default core.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot conn_slots[] = {
    {Py_tp_new, conn_new},
    {Py_tp_init, conn_init},
    {Py_tp_dealloc, conn_dealloc},
    {Py_tp_traverse, conn_traverse},
    {Py_tp_clear, conn_clear},
    {Py_tp_methods, conn_methods},
    {Py_tp_getset, conn_getset},
    {Py_tp_doc, NULL}, /* the pure core's, set in core_exec() */
    {0, NULL},
};

static PyType_Spec conn_spec = {
    .name = "sse_sansio._receive._core.Connection",
    .basicsize = sizeof(Conn),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = conn_slots,
};

/* ------------------------------------------------------------------ module
 *
 * Multi-phase initialization (PEP 489): PyInit__core() returns the definition, and
 * core_exec() fills each module object's state, so that every interpreter that imports
 * the module gets its own Connection type and its own references to the Python side
 * (supported with interpreters that share the main GIL; a per-interpreter GIL is not
 * claimed, because the method docstrings below are written once into static tables).
 *
 * Docstrings: the pure core's are the text (one contract), read when the module is
 * first executed.  The method and property tables are static, as the C API wants them,
 * so their docstrings are copied once per process into memory that is never freed
 * (a few KiB): they outlive any one interpreter.
 */

static const char *
doc_of(PyObject *owner, const char *name, const char *signature)
{
    PyObject *attr = name ? PyObject_GetAttrString(owner, name) : Py_NewRef(owner);
    if (attr == NULL) {
        return NULL;
    }
    PyObject *doc = PyObject_GetAttrString(attr, "__doc__");
    Py_DECREF(attr);
    if (doc == NULL) {
        return NULL;
    }
    PyObject *text =
        signature ? PyUnicode_FromFormat("%s\n--\n\n%S", signature, doc) : PyObject_Str(doc);
    Py_DECREF(doc);
    const char *utf8 = text == NULL ? NULL : PyUnicode_AsUTF8(text);
    char *copy = utf8 == NULL ? NULL : PyMem_RawMalloc(strlen(utf8) + 1);
    if (copy != NULL) {
        strcpy(copy, utf8);
    }
    else if (utf8 != NULL) {
        PyErr_NoMemory();
    }
    Py_XDECREF(text);
    return copy;
}

/* The docstrings of Connection, its methods and its properties (once per process). */
static int
set_docs(PyObject *pure, Py_ssize_t default_limit)
{
    static int done;
    if (done) {
        return 0;
    }
    char signature[256];
    PyOS_snprintf(signature, sizeof(signature),
                  "Connection(*, errors='strict', last_event_id='', max_event_size=%zd, "
                  "keep_raw=False, on_oversize='error', piece_size=None, diagnostics=False, "
                  "count_comments=False, updates=False)",
                  default_limit);
    const char *docs[7] = {
        doc_of(pure, NULL, signature),
        doc_of(pure, "next_event", "next_event($self, /)"),
        doc_of(pure, "receive_data", "receive_data($self, /, data)"),
        doc_of(pure, "take_raw", "take_raw($self, /)"),
        doc_of(pure, "last_event_id", NULL),
        doc_of(pure, "retry", NULL),
        doc_of(pure, "comment_count", NULL),
    };
    for (int i = 0; i < 7; i++) {
        if (docs[i] == NULL) {
            for (int j = 0; j < 7; j++) {
                PyMem_RawFree((void *)docs[j]);
            }
            return -1;
        }
    }
    conn_slots[7].pfunc = (void *)docs[0]; /* Py_tp_doc: copied by PyType_FromSpec */
    conn_methods[0].ml_doc = docs[1];
    conn_methods[1].ml_doc = docs[2];
    conn_methods[2].ml_doc = docs[3];
    conn_getset[0].doc = docs[4];
    conn_getset[1].doc = docs[5];
    conn_getset[2].doc = docs[6];
    done = 1;
    return 0;
}

static PyObject *
import_attr(const char *module, const char *name)
{
    PyObject *m = PyImport_ImportModule(module);
    if (m == NULL) {
        return NULL;
    }
    PyObject *attr = PyObject_GetAttrString(m, name);
    Py_DECREF(m);
    return attr;
}

/* The Python side's types, exceptions and contract, and the strings, into `st`. */
static int
load_state(CoreState *st)
{
    PyObject *digits = NULL, *sniff = NULL;
    if ((st->EventType = (PyTypeObject *)import_attr("sse_sansio._events", "Event")) == NULL ||
        (st->CommentType = (PyTypeObject *)import_attr("sse_sansio._events", "Comment")) == NULL ||
        (st->EndOfStreamType = (PyTypeObject *)import_attr("sse_sansio._events", "EndOfStream")) ==
            NULL ||
        (st->RemoteProtocolError = import_attr("sse_sansio._errors", "RemoteProtocolError")) ==
            NULL ||
        (st->LocalProtocolError = import_attr("sse_sansio._errors", "LocalProtocolError")) ==
            NULL ||
        (st->NeedData = import_attr("sse_sansio._receive._connection", "NEED_DATA")) == NULL ||
        (st->str_message = PyUnicode_InternFromString("message")) == NULL ||
        (st->str_empty = PyUnicode_FromString("")) == NULL ||
        (st->str_strict = PyUnicode_InternFromString("strict")) == NULL ||
        (st->str_offset = PyUnicode_InternFromString("offset")) == NULL ||
        (st->bytes_empty = PyBytes_FromStringAndSize("", 0)) == NULL ||
        (st->str_error = PyUnicode_InternFromString("error")) == NULL ||
        (st->str_skip = PyUnicode_InternFromString("skip")) == NULL ||
        (st->str_compiled = PyUnicode_InternFromString("compiled")) == NULL ||
        (st->SkippedEventType =
             (PyTypeObject *)import_attr("sse_sansio._events", "SkippedEvent")) == NULL ||
        (st->DataPieceType = (PyTypeObject *)import_attr("sse_sansio._events", "DataPiece")) ==
            NULL ||
        (st->PiecedEventType = (PyTypeObject *)import_attr("sse_sansio._events", "PiecedEvent")) ==
            NULL ||
        (st->DiagnosticType = (PyTypeObject *)import_attr("sse_sansio._events", "Diagnostic")) ==
            NULL ||
        (st->UpdateType = (PyTypeObject *)import_attr("sse_sansio._events", "Update")) == NULL ||
        (st->sniff_start = import_attr("sse_sansio._receive._diagnostics", "sniff_start")) ==
            NULL ||
        (st->field_diagnostic =
             import_attr("sse_sansio._receive._diagnostics", "field_diagnostic")) == NULL ||
        (st->discarded_block =
             import_attr("sse_sansio._receive._diagnostics", "discarded_block")) == NULL ||
        (sniff = import_attr("sse_sansio._receive._diagnostics", "SNIFF_BYTES")) == NULL ||
        (st->sniff_bytes = PyLong_AsSsize_t(sniff)) == -1 ||
        (st->pure_class = import_attr("sse_sansio._receive._connection", "PyConnection")) == NULL ||
        (st->str_tuning = PyUnicode_InternFromString("_tuning")) == NULL ||
        (st->str_window = PyUnicode_InternFromString("window")) == NULL ||
        (st->check_count_comments =
             import_attr("sse_sansio._receive._contract", "check_count_comments")) == NULL ||
        (st->check_options = import_attr("sse_sansio._receive._contract", "check_options")) ==
            NULL ||
        (st->default_limit_obj =
             import_attr("sse_sansio._receive._contract", "DEFAULT_MAX_EVENT_SIZE")) == NULL ||
        (st->not_copyable = import_attr("sse_sansio._receive._contract", "NOT_COPYABLE")) == NULL ||
        (st->nested_call = import_attr("sse_sansio._receive._contract", "NESTED_CALL")) == NULL ||
        (st->default_limit = PyLong_AsSsize_t(st->default_limit_obj)) == -1 ||
        (st->retry_max = import_attr("sse_sansio._receive._fields", "RETRY_MAX")) == NULL ||
        (digits = import_attr("sse_sansio._receive._fields", "RETRY_MAX_DIGITS")) == NULL ||
        (st->retry_max_digits = PyLong_AsSsize_t(digits)) == -1) {
        Py_XDECREF(digits);
        Py_XDECREF(sniff);
        return -1;
    }
    Py_DECREF(digits);
    Py_DECREF(sniff);
    PyTypeObject *items[8] = {st->EventType,        st->CommentType,   st->EndOfStreamType,
                              st->SkippedEventType, st->DataPieceType, st->PiecedEventType,
                              st->DiagnosticType,   st->UpdateType};
    for (int i = 0; i < 8; i++) {
        if (!PyType_Check(items[i]) || !PyType_IsSubtype(items[i], &PyTuple_Type)) {
            PyErr_SetString(PyExc_ImportError, "sse_sansio._events: the items must be tuples");
            return -1;
        }
    }
    return 0;
}

/* Py_mod_exec: fill this module object's state and add its Connection type. */
static int
core_exec(PyObject *module)
{
    CoreState *st = PyModule_GetState(module);
    if (load_state(st) < 0) {
        return -1;
    }
    PyObject *pure = import_attr("sse_sansio._receive._connection", "PyConnection");
    if (pure == NULL) {
        return -1;
    }
    int docs = set_docs(pure, st->default_limit);
    Py_DECREF(pure);
    if (docs < 0) {
        return -1;
    }
    st->ConnType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &conn_spec, NULL);
    if (st->ConnType == NULL) {
        return -1;
    }
    return PyModule_AddType(module, st->ConnType);
}

/* Where the state's objects are (the ints cached in C are not objects): the module's
 * traverse and clear walk this table, so a field added to CoreState is added here. */
static const size_t state_objects[] = {
    offsetof(CoreState, ConnType),           offsetof(CoreState, EventType),
    offsetof(CoreState, CommentType),        offsetof(CoreState, EndOfStreamType),
    offsetof(CoreState, NeedData),           offsetof(CoreState, RemoteProtocolError),
    offsetof(CoreState, LocalProtocolError), offsetof(CoreState, str_message),
    offsetof(CoreState, str_empty),          offsetof(CoreState, bytes_empty),
    offsetof(CoreState, str_offset),         offsetof(CoreState, str_strict),
    offsetof(CoreState, check_options),      offsetof(CoreState, default_limit_obj),
    offsetof(CoreState, not_copyable),       offsetof(CoreState, nested_call),
    offsetof(CoreState, retry_max),          offsetof(CoreState, check_count_comments),
    offsetof(CoreState, str_error),          offsetof(CoreState, str_skip),
    offsetof(CoreState, str_compiled),       offsetof(CoreState, SkippedEventType),
    offsetof(CoreState, DataPieceType),      offsetof(CoreState, PiecedEventType),
    offsetof(CoreState, DiagnosticType),     offsetof(CoreState, sniff_start),
    offsetof(CoreState, field_diagnostic),   offsetof(CoreState, discarded_block),
    offsetof(CoreState, pure_class),         offsetof(CoreState, str_tuning),
    offsetof(CoreState, str_window),         offsetof(CoreState, UpdateType),
};

#define STATE_OBJECT(st, i) ((PyObject **)((char *)(st) + state_objects[i]))
#define N_STATE_OBJECTS (sizeof(state_objects) / sizeof(state_objects[0]))

static int
core_traverse(PyObject *module, visitproc visit, void *arg)
{
    CoreState *st = PyModule_GetState(module);
    for (size_t i = 0; i < N_STATE_OBJECTS; i++) {
        Py_VISIT(*STATE_OBJECT(st, i));
    }
    return 0;
}

static int
core_clear(PyObject *module)
{
    CoreState *st = PyModule_GetState(module);
    for (size_t i = 0; i < N_STATE_OBJECTS; i++) {
        Py_CLEAR(*STATE_OBJECT(st, i));
    }
    return 0;
}

static void
core_free(void *module)
{
    core_clear((PyObject *)module);
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_SUPPORTED},
#endif
#ifdef Py_mod_gil
    /* Free-threaded CPython keeps its GIL off (the header's thread contract). */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_core",
    .m_doc = "The compiled receive core of sse_sansio (see _core.c; the reference is the "
             "pure core, PyConnection in sse_sansio._receive._connection).",
    .m_size = sizeof(CoreState),
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&core_module);
}
