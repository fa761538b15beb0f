/* A libFuzzer target for the compiled core, sse_sansio/_receive/_core.c, with C-level coverage.
 *
 * Strategy.  _core.c is compiled into this binary (instrumented for coverage, with
 * AddressSanitizer and UndefinedBehaviorSanitizer) and registered as the built-in module
 * sse_sansio._receive._core before CPython starts, so that `import sse_sansio` picks it up instead
 * of any shared library in the checkout.  CPython is started once, in
 * LLVMFuzzerInitialize; each input then makes one Connection and drives it through the
 * module's public methods only (receive_data, next_event, take_raw and the items'
 * fields), called from C: no Python bytecode runs in the inner loop, and nothing here
 * knows _core.c's structs, so its internals may change freely.  The allocator is plain
 * malloc (PYTHONMALLOC=malloc semantics), so that ASan sees every object on its own.
 *
 * An input is a header and a body:
 *   byte 0  options: bit 0 keep_raw, bit 1 errors="replace", bits 2-3 max_event_size
 *           (default, None, byte 1 + 1, (byte 1 + 1) * 37), bit 4 drain after every
 *           chunk (else feed them all first), bit 5 take_raw() at every NEED_DATA,
 *           bit 6 pass chunks as bytearray / memoryview (receive_data's copying path),
 *           bit 7 end the stream (receive_data(b"")).
 *   byte 1  the size limit's parameter.
 *   byte 2  bits 0-2: k, how many chunk sizes follow (0: the body is one chunk);
 *           bit 3: start with last_event_id="seed";
 *           bits 4-5: the stream is the rest repeated 1, 1, 2 or 8 times (streams
 *           longer than the inputs, which stay short so that mutations stay cheap),
 *           and the chunk sizes are multiplied by the same factor;
 *           bits 6-7: the opt-in modes: none, on_oversize="skip", piece_size
 *           (byte 1 % 16 + 1, at most the limit), or all three with diagnostics=True.
 *   k bytes chunk sizes, used in turn, each plus one.
 *   the rest is the stream.
 *
 * Invariants checked on every input (a violation aborts, and libFuzzer keeps the input):
 * - no crash, no ASan or UBSan report (the sanitizers' own checks);
 * - next_event() returns Event, Comment, EndOfStream or NEED_DATA (or, in the opt-in
 *   modes, SkippedEvent, DataPiece, PiecedEvent or Diagnostic), or raises
 *   RemoteProtocolError, with an integer offset within the bytes received; it fails for
 *   good (the same message again on the next call); it never raises with
 *   errors="replace" and no size limit;
 * - every item's span lies within the bytes received, start before end;
 * - after receive_data(b"") it never returns NEED_DATA, and after EndOfStream only the
 *   same EndOfStream again; receive_data() with data then raises LocalProtocolError;
 * - keep_raw: the items' raw bytes and take_raw()'s, concatenated, are a prefix of the
 *   stream, and an item whose raw is not empty ends exactly where they do (with
 *   on_oversize="skip", which cuts skipped blocks out, they are at most the bytes
 *   received); without it, raw is None;
 * - receive_data() raises only when keep_raw is on and take_raw() is never called
 *   (LocalProtocolError: too many bytes waiting).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PyMODINIT_FUNC PyInit__core(void);

#ifndef SSE_SANSIO_ROOT
#define SSE_SANSIO_ROOT "."
#endif

static PyObject *ConnectionType, *EventType, *CommentType, *EndOfStreamType, *NeedData;
static PyObject *OptInTypes[4]; /* SkippedEvent, DataPiece, PiecedEvent, Diagnostic */
static PyObject *RemoteProtocolError, *LocalProtocolError;
static PyObject *s_receive_data, *s_next_event, *s_take_raw;
static PyObject *s_start, *s_end, *s_raw, *s_offset;
static PyObject *v_replace, *v_seed, *v_skip;

static void
die(const char *what)
{
    fprintf(stderr, "core_fuzzer: invariant violated: %s\n", what);
    if (PyErr_Occurred()) {
        PyErr_Print();
    }
    fflush(stderr);
    abort();
}

static PyObject *
attr_of(const char *module, const char *name)
{
    PyObject *m = PyImport_ImportModule(module);
    PyObject *attr = m ? PyObject_GetAttrString(m, name) : NULL;
    Py_XDECREF(m);
    if (attr == NULL) {
        die("cannot import the package (is SSE_SANSIO_ROOT the checkout?)");
    }
    return attr;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    PyPreConfig preconfig;
    PyPreConfig_InitPythonConfig(&preconfig);
    preconfig.allocator = PYMEM_ALLOCATOR_MALLOC;
    if (PyStatus_Exception(Py_PreInitialize(&preconfig))) {
        die("Py_PreInitialize failed");
    }
    if (PyImport_AppendInittab("sse_sansio._receive._core", PyInit__core) < 0) {
        die("PyImport_AppendInittab failed");
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.write_bytecode = 0;
    config.install_signal_handlers = 0; /* libFuzzer's handlers stay in place */
#ifdef SSE_SANSIO_PYTHONHOME
    PyConfig_SetBytesString(&config, &config.home, SSE_SANSIO_PYTHONHOME);
#endif
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        die("Py_InitializeFromConfig failed");
    }
    const char *root = getenv("SSE_SANSIO_ROOT");
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    PyObject *where = PyUnicode_FromString(root ? root : SSE_SANSIO_ROOT);
    if (path == NULL || where == NULL || PyList_Insert(path, 0, where) < 0) {
        die("cannot put the checkout on sys.path");
    }
    Py_DECREF(where);

    PyObject *core = PyImport_ImportModule("sse_sansio._receive._core");
    if (core == NULL) {
        die("cannot import sse_sansio._receive._core");
    }
    if (PyObject_HasAttrString(core, "__file__")) {
        die("sse_sansio._receive._core was loaded from a file, not the instrumented built-in one");
    }
    ConnectionType = PyObject_GetAttrString(core, "Connection");
    Py_DECREF(core);
    PyObject *chosen = attr_of("sse_sansio", "Connection");
    if (ConnectionType == NULL || chosen != ConnectionType) {
        die("sse_sansio.Connection is not the built-in compiled core's");
    }
    Py_DECREF(chosen);
    EventType = attr_of("sse_sansio", "Event");
    CommentType = attr_of("sse_sansio", "Comment");
    EndOfStreamType = attr_of("sse_sansio", "EndOfStream");
    OptInTypes[0] = attr_of("sse_sansio", "SkippedEvent");
    OptInTypes[1] = attr_of("sse_sansio", "DataPiece");
    OptInTypes[2] = attr_of("sse_sansio", "PiecedEvent");
    OptInTypes[3] = attr_of("sse_sansio", "Diagnostic");
    NeedData = attr_of("sse_sansio", "NEED_DATA");
    RemoteProtocolError = attr_of("sse_sansio", "RemoteProtocolError");
    LocalProtocolError = attr_of("sse_sansio", "LocalProtocolError");
    if (!(s_receive_data = PyUnicode_InternFromString("receive_data")) ||
        !(s_next_event = PyUnicode_InternFromString("next_event")) ||
        !(s_take_raw = PyUnicode_InternFromString("take_raw")) ||
        !(s_start = PyUnicode_InternFromString("start")) ||
        !(s_end = PyUnicode_InternFromString("end")) ||
        !(s_raw = PyUnicode_InternFromString("raw")) ||
        !(s_offset = PyUnicode_InternFromString("offset")) ||
        !(v_replace = PyUnicode_InternFromString("replace")) ||
        !(v_seed = PyUnicode_InternFromString("seed")) ||
        !(v_skip = PyUnicode_InternFromString("skip"))) {
        die("out of memory at start");
    }
    return 0;
}

/* ------------------------------------------------------------------ one input */

typedef struct {
    PyObject *conn;
    const uint8_t *body; /* the whole stream, for the keep_raw prefix check */
    Py_ssize_t body_len;
    Py_ssize_t fed;       /* bytes passed to receive_data() so far */
    Py_ssize_t forwarded; /* keep_raw: bytes handed out in raw and take_raw() */
    int keep_raw, take_raw, never_fails, ended;
    int modes, cuts; /* opt-in modes on; skipped blocks are cut out of raw */
    PyObject *eos;   /* the EndOfStream, once seen */
    int failed;
} Run;

static Py_ssize_t
int_attr(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL || !PyLong_CheckExact(v)) {
        die("an offset is not an int");
    }
    Py_ssize_t n = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    if (n == -1 && PyErr_Occurred()) {
        die("an offset does not fit Py_ssize_t");
    }
    return n;
}

/* keep_raw: `raw` must continue the stream where the forwarded bytes stop. */
static void
forward(Run *r, PyObject *raw)
{
    if (raw == NULL || !PyBytes_CheckExact(raw)) {
        die("keep_raw: raw or take_raw() is not bytes");
    }
    Py_ssize_t n = PyBytes_GET_SIZE(raw);
    if (n > r->fed - r->forwarded ||
        (!r->cuts && memcmp(PyBytes_AS_STRING(raw), r->body + r->forwarded, (size_t)n) != 0)) {
        die("keep_raw: the forwarded bytes are not a prefix of the stream");
    }
    r->forwarded += n;
}

static void
check_item(Run *r, PyObject *item)
{
    int is_eos = Py_IS_TYPE(item, (PyTypeObject *)EndOfStreamType);
    if (r->eos != NULL) {
        if (item != r->eos) {
            die("an item other than the same EndOfStream after EndOfStream");
        }
        return;
    }
    int opt_in = 0;
    for (int i = 0; i < 4; i++) {
        opt_in |= Py_IS_TYPE(item, (PyTypeObject *)OptInTypes[i]);
    }
    if (opt_in && !r->modes) {
        die("an opt-in item from a connection without the opt-in modes");
    }
    if (!is_eos && !opt_in && !Py_IS_TYPE(item, (PyTypeObject *)EventType) &&
        !Py_IS_TYPE(item, (PyTypeObject *)CommentType)) {
        die("next_event() returned something that is not an item");
    }
    PyObject *raw = PyObject_GetAttr(item, s_raw);
    if (raw == NULL) {
        die("an item has no raw");
    }
    if (!r->keep_raw) {
        if (raw != Py_None) {
            die("raw is not None without keep_raw");
        }
    }
    else {
        forward(r, raw);
    }
    if (is_eos) {
        if (!r->ended) {
            die("EndOfStream before receive_data(b\"\")");
        }
        r->eos = Py_NewRef(item);
    }
    else {
        Py_ssize_t start = int_attr(item, s_start), end = int_attr(item, s_end);
        if (start < 0 || start >= end || end > r->fed) {
            die("an item's span is not within the bytes received");
        }
        if (r->keep_raw && !r->cuts && PyBytes_GET_SIZE(raw) > 0 && r->forwarded != end) {
            die("keep_raw: an item's raw does not end at the item's end");
        }
    }
    Py_DECREF(raw);
}

/* The exception being raised, taken (PyErr_GetRaisedException is 3.12 and later). */
static PyObject *
raised(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    if (value == NULL) {
        die("no exception after all");
    }
    return value;
}

/* next_event() raised: it must be a RemoteProtocolError, and for good. */
static void
check_failure(Run *r)
{
    if (!PyErr_ExceptionMatches(RemoteProtocolError)) {
        die("next_event() raised something other than RemoteProtocolError");
    }
    if (r->never_fails) {
        die("RemoteProtocolError with errors=\"replace\" and no size limit");
    }
    PyObject *exc = raised();
    Py_ssize_t at = int_attr(exc, s_offset);
    if (at < 0 || at > r->fed) {
        die("an error's offset is not within the bytes received");
    }
    PyObject *again = PyObject_CallMethodNoArgs(r->conn, s_next_event);
    if (again != NULL || !PyErr_ExceptionMatches(RemoteProtocolError)) {
        die("a failed connection did not raise RemoteProtocolError again");
    }
    PyObject *exc2 = raised();
    PyObject *m1 = PyObject_Str(exc), *m2 = PyObject_Str(exc2);
    if (m1 == NULL || m2 == NULL || PyUnicode_Compare(m1, m2) != 0) {
        die("a failed connection raised a different message the second time");
    }
    Py_DECREF(m1);
    Py_DECREF(m2);
    Py_DECREF(exc);
    Py_DECREF(exc2);
    r->failed = 1;
}

/* Call next_event() until NEED_DATA, EndOfStream or an error. */
static void
drain(Run *r)
{
    /* Every item but EndOfStream ends a line, so there are at most fed + 1 of them; in
     * the opt-in modes a line may also bring a Diagnostic, and a DataPiece needs two
     * bytes of data at least. */
    for (Py_ssize_t budget = (r->modes ? 3 : 1) * r->fed + 3; !r->failed; budget--) {
        if (budget == 0) {
            die("next_event() returned more items than lines");
        }
        PyObject *item = PyObject_CallMethodNoArgs(r->conn, s_next_event);
        if (item == NULL) {
            check_failure(r);
            return;
        }
        if (item == NeedData) {
            Py_DECREF(item);
            if (r->ended) {
                die("NEED_DATA after receive_data(b\"\")");
            }
            if (r->take_raw) {
                PyObject *raw = PyObject_CallMethodNoArgs(r->conn, s_take_raw);
                forward(r, raw);
                Py_DECREF(raw);
            }
            return;
        }
        check_item(r, item);
        Py_DECREF(item);
        if (r->eos != NULL) {
            /* Once more: the same EndOfStream, and no more data accepted. */
            item = PyObject_CallMethodNoArgs(r->conn, s_next_event);
            if (item == NULL) {
                die("next_event() raised after EndOfStream");
            }
            check_item(r, item);
            Py_DECREF(item);
            return;
        }
    }
}

/* receive_data(); 0 when it was refused (as it may be: see the header). */
static int
feed(Run *r, const uint8_t *p, Py_ssize_t n, int wrap)
{
    PyObject *chunk = PyBytes_FromStringAndSize((const char *)p, n);
    if (chunk != NULL && wrap) {
        PyObject *other =
            wrap == 1 ? PyByteArray_FromObject(chunk) : PyMemoryView_FromObject(chunk);
        Py_SETREF(chunk, other);
    }
    if (chunk == NULL) {
        die("out of memory making a chunk");
    }
    PyObject *ok = PyObject_CallMethodOneArg(r->conn, s_receive_data, chunk);
    Py_DECREF(chunk);
    if (ok == NULL) {
        if (r->keep_raw && !r->take_raw && PyErr_ExceptionMatches(LocalProtocolError)) {
            PyErr_Clear();
            return 0;
        }
        die("receive_data() raised");
    }
    Py_DECREF(ok);
    r->fed += n;
    return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) {
        return -1; /* not added to the corpus */
    }
    uint8_t opt = data[0], param = data[1], layout = data[2];
    size_t k = layout & 7;
    if (size < 3 + k) {
        return -1;
    }
    const uint8_t *sizes = data + 3;
    Run r = {0};
    static const size_t repeats[4] = {1, 1, 2, 8};
    size_t rest = size - 3 - k, times = repeats[(layout >> 4) & 3];
    uint8_t *stream = malloc(rest * times + 1);
    if (stream == NULL) {
        die("out of memory making the stream");
    }
    for (size_t j = 0; j < times; j++) {
        memcpy(stream + j * rest, data + 3 + k, rest);
    }
    r.body = stream;
    r.body_len = (Py_ssize_t)(rest * times);
    r.keep_raw = opt & 1;
    r.take_raw = r.keep_raw && (opt & 32);
    int drain_each = opt & 16, wrap = opt & 64, end = opt & 128;

    PyObject *kwargs = PyDict_New();
    PyObject *keep_raw = r.keep_raw ? Py_True : Py_False;
    if (kwargs == NULL || PyDict_SetItemString(kwargs, "keep_raw", keep_raw) < 0 ||
        ((opt & 2) && PyDict_SetItemString(kwargs, "errors", v_replace) < 0) ||
        ((layout & 8) && PyDict_SetItemString(kwargs, "last_event_id", v_seed) < 0)) {
        die("out of memory making the options");
    }
    long limit = -1;
    switch ((opt >> 2) & 3) {
    case 1:
        limit = 0; /* None */
        break;
    case 2:
        limit = (long)param + 1;
        break;
    case 3:
        limit = ((long)param + 1) * 37;
        break;
    }
    if (limit >= 0) {
        PyObject *v = limit ? PyLong_FromLong(limit) : Py_NewRef(Py_None);
        if (v == NULL || PyDict_SetItemString(kwargs, "max_event_size", v) < 0) {
            die("out of memory making the options");
        }
        Py_DECREF(v);
    }
    r.never_fails = (opt & 2) && limit == 0;
    int modes = (layout >> 6) & 3;
    long piece = (long)(param % 16) + 1;
    if (limit > 0 && piece > limit) {
        piece = limit;
    }
    PyObject *v_piece = PyLong_FromLong(piece);
    if (v_piece == NULL ||
        ((modes & 1) && PyDict_SetItemString(kwargs, "on_oversize", v_skip) < 0) ||
        ((modes & 2) && PyDict_SetItemString(kwargs, "piece_size", v_piece) < 0) ||
        (modes == 3 && PyDict_SetItemString(kwargs, "diagnostics", Py_True) < 0)) {
        die("out of memory making the options");
    }
    Py_DECREF(v_piece);
    r.modes = modes != 0;
    r.cuts = modes & 1;
    PyObject *args = PyTuple_New(0);
    r.conn = args ? PyObject_Call(ConnectionType, args, kwargs) : NULL;
    Py_XDECREF(args);
    Py_DECREF(kwargs);
    if (r.conn == NULL) {
        die("Connection() raised");
    }

    Py_ssize_t at = 0, i = 0;
    int accepted = 1;
    while (at < r.body_len && accepted && !r.failed) {
        /* Chunks grow with the repetition, so that the calls per input do not. */
        Py_ssize_t n = k ? ((Py_ssize_t)sizes[i % k] + 1) * (Py_ssize_t)times : r.body_len;
        if (n > r.body_len - at) {
            n = r.body_len - at;
        }
        accepted = feed(&r, r.body + at, n, wrap ? 1 + (int)(i & 1) : 0);
        at += n;
        i++;
        if (drain_each) {
            drain(&r);
        }
    }
    if (!drain_each && !r.failed) {
        drain(&r);
    }
    if (end && accepted && !r.failed) {
        feed(&r, (const uint8_t *)"", 0, 0);
        r.ended = 1;
        drain(&r);
        if (!r.failed) {
            if (r.eos == NULL) {
                die("no EndOfStream after receive_data(b\"\")");
            }
            PyObject *x = PyBytes_FromStringAndSize("x", 1);
            PyObject *more = x ? PyObject_CallMethodOneArg(r.conn, s_receive_data, x) : NULL;
            Py_XDECREF(x);
            if (more != NULL || !PyErr_ExceptionMatches(LocalProtocolError)) {
                die("receive_data() with data after the end did not raise LocalProtocolError");
            }
            PyErr_Clear();
        }
    }
    if (PyErr_Occurred()) {
        die("an exception was left set");
    }
    Py_XDECREF(r.eos);
    Py_DECREF(r.conn);
    free(stream);
    return 0;
}
