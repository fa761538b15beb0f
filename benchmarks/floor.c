/* The compiled core's floor, part by part (benchmarks/floor.py builds and drives this).
 *
 * Each function does one of the things no C parser behind sse_sansio's API can skip,
 * and nothing else, in the way _core.c does it, so that its time is a lower bound for
 * that part of the core's work:
 *
 * - scan(chunks): find every LF with memchr(), line by line, chunk by chunk.
 * - allocate(type, n, slots): n items of an sse_sansio item class (a tuple subclass,
 *   allocated as _core.c's new_item() does), two slots set to new int offsets (an item's
 *   start and end), the rest None; each item freed at once, as a consumer drops it.
 * - decode(payloads): a strict UTF-8 decode of each item's text, once, with the core's
 *   own decoder (sse_sansio/_receive/_core_decode.h, included below: the fastest decode this
 *   machine has for a str, so the floor stays a floor); a text of at most 64 bytes
 *   equal to the one before is reused instead (a memcmp), as the core's cached_decode()
 *   reuses a repeated comment text or event type.
 * - Drain(per_chunk, item, need_data, end): a connection that parses nothing:
 *   receive_data() counts the items that chunk completes, next_event() hands out the
 *   same prebuilt item that many times, then NEED_DATA (after b"", `end`); handed()
 *   says how many it handed out.  The drain
 *   loop around it costs what the API's calls cost, with no parsing and no allocation.
 *
 * Stable C API only; nothing here is part of the package.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The core's UTF-8 check and decoder (floor.py puts sse_sansio/ on the include path). */
#include "_core_utf8.h"
#include "_core_scan.h"
#include "_core_decode.h"

static PyObject *
scan(PyObject *Py_UNUSED(module), PyObject *chunks)
{
    if (!PyList_Check(chunks)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes a list of bytes");
        return NULL;
    }
    Py_ssize_t lines = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(chunks); i++) {
        PyObject *chunk = PyList_GET_ITEM(chunks, i);
        if (!PyBytes_Check(chunk)) {
            PyErr_SetString(PyExc_TypeError, "scan() takes a list of bytes");
            return NULL;
        }
        const char *p = PyBytes_AS_STRING(chunk);
        const char *end = p + PyBytes_GET_SIZE(chunk);
        const char *q;
        while (p < end && (q = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            lines++;
            p = q + 1;
        }
    }
    return PyLong_FromSsize_t(lines);
}

static PyObject *
allocate(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyTypeObject *type;
    Py_ssize_t n, slots;
    if (!PyArg_ParseTuple(args, "O!nn", &PyType_Type, &type, &n, &slots)) {
        return NULL;
    }
    if (!PyType_IsSubtype(type, &PyTuple_Type) || slots < 2) {
        PyErr_SetString(PyExc_TypeError, "allocate() takes a tuple subclass and >= 2 slots");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = type->tp_alloc(type, slots);
        if (item == NULL) {
            return NULL;
        }
        /* Stream offsets past the small-int cache, as a real stream's are. */
        PyObject *start = PyLong_FromSsize_t(1000 + 250 * i);
        PyObject *stop = PyLong_FromSsize_t(1250 + 250 * i);
        if (start == NULL || stop == NULL) {
            Py_XDECREF(start);
            Py_XDECREF(stop);
            Py_DECREF(item);
            return NULL;
        }
        PyTuple_SET_ITEM(item, 0, start);
        PyTuple_SET_ITEM(item, 1, stop);
        for (Py_ssize_t k = 2; k < slots; k++) {
            PyTuple_SET_ITEM(item, k, Py_NewRef(Py_None));
        }
        Py_DECREF(item);
    }
    return PyLong_FromSsize_t(n);
}

static PyObject *
decode(PyObject *Py_UNUSED(module), PyObject *payloads)
{
    if (!PyList_Check(payloads)) {
        PyErr_SetString(PyExc_TypeError, "decode() takes a list of bytes");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(payloads);
    PyObject *last = NULL; /* the last short text's string */
    const char *last_p = NULL;
    Py_ssize_t last_n = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyList_GET_ITEM(payloads, i);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "decode() takes a list of bytes");
            Py_XDECREF(last);
            return NULL;
        }
        const char *p = PyBytes_AS_STRING(b);
        Py_ssize_t len = PyBytes_GET_SIZE(b);
        PyObject *s;
        if (len <= 64 && len == last_n && memcmp(p, last_p, (size_t)len) == 0) {
            s = Py_NewRef(last);
        }
        else {
            s = utf8_decode(p, len);
            if (s == NULL && !PyErr_Occurred()) {
                s = PyUnicode_DecodeUTF8(p, len, NULL); /* raises: not UTF-8 */
            }
            if (s == NULL) {
                Py_XDECREF(last);
                return NULL;
            }
            if (len <= 64) {
                Py_XSETREF(last, Py_NewRef(s));
                last_p = p;
                last_n = len;
            }
        }
        Py_DECREF(s);
    }
    Py_XDECREF(last);
    return PyLong_FromSsize_t(n);
}

/* ------------------------------------------------------------------ Drain */

typedef struct {
    PyObject_HEAD
    PyObject *per_chunk; /* bytes: one native long long per chunk, items it completes */
    PyObject *item, *need_data, *end;
    Py_ssize_t next_chunk, pending, handed;
    int ended;
} Drain;

static int
drain_init(Drain *self, PyObject *args, PyObject *kwds)
{
    PyObject *per_chunk, *item, *need_data, *end;
    if (!PyArg_ParseTuple(args, "SOOO", &per_chunk, &item, &need_data, &end)) {
        return -1;
    }
    if (PyBytes_GET_SIZE(per_chunk) % (Py_ssize_t)sizeof(long long)) {
        PyErr_SetString(PyExc_ValueError, "per_chunk must hold native long long values");
        return -1;
    }
    Py_XSETREF(self->per_chunk, Py_NewRef(per_chunk));
    Py_XSETREF(self->item, Py_NewRef(item));
    Py_XSETREF(self->need_data, Py_NewRef(need_data));
    Py_XSETREF(self->end, Py_NewRef(end));
    self->next_chunk = self->pending = self->handed = 0;
    self->ended = 0;
    return 0;
}

static PyObject *
drain_receive_data(Drain *self, PyObject *data)
{
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "receive_data() takes bytes");
        return NULL;
    }
    if (PyBytes_GET_SIZE(data) == 0) {
        self->ended = 1;
    }
    else {
        Py_ssize_t n = PyBytes_GET_SIZE(self->per_chunk) / (Py_ssize_t)sizeof(long long);
        if (self->next_chunk < n) {
            const long long *counts = (const long long *)PyBytes_AS_STRING(self->per_chunk);
            self->pending += (Py_ssize_t)counts[self->next_chunk++];
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
drain_next_event(Drain *self, PyObject *Py_UNUSED(ignored))
{
    if (self->pending > 0) {
        self->pending--;
        self->handed++;
        return Py_NewRef(self->item);
    }
    return Py_NewRef(self->ended ? self->end : self->need_data);
}

static PyObject *
drain_handed(Drain *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(self->handed);
}

static void
drain_dealloc(Drain *self)
{
    Py_XDECREF(self->per_chunk);
    Py_XDECREF(self->item);
    Py_XDECREF(self->need_data);
    Py_XDECREF(self->end);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef drain_methods[] = {
    {"receive_data", (PyCFunction)drain_receive_data, METH_O, NULL},
    {"next_event", (PyCFunction)drain_next_event, METH_NOARGS, NULL},
    {"handed", (PyCFunction)drain_handed, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DrainType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_sse_floor.Drain",
    .tp_basicsize = sizeof(Drain),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)drain_init,
    .tp_dealloc = (destructor)drain_dealloc,
    .tp_methods = drain_methods,
};

static PyMethodDef module_methods[] = {
    {"scan", scan, METH_O, NULL},
    {"allocate", allocate, METH_VARARGS, NULL},
    {"decode", decode, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_sse_floor", NULL, -1, module_methods,
};

PyMODINIT_FUNC
PyInit__sse_floor(void)
{
    if (PyType_Ready(&DrainType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Drain", (PyObject *)&DrainType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
