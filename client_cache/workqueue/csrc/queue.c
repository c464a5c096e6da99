/* client_cache.workqueue._queue: the C part of client_cache.workqueue.queue (read its
 * WorkQueueCore first, which this mirrors operation for operation).
 *
 * Why C: a Python critical section can lose the GIL at any call inside it while it holds
 * the queue's lock. The thread that took the GIL then blocks on the lock, and when the
 * lock is let go it is handed to that sleeping thread, which now owns the lock but not
 * the GIL: the first thread's next add blocks in turn, and the two threads take turns
 * through the kernel on every item (a lock convoy; a worker and a producer made about
 * 5,000 context switches per 50,000 items). Here each operation takes the lock, does its
 * work and lets the lock go inside one C call, which keeps the GIL throughout as long as
 * the item's hash and equality are C code (str, int, tuples of them), so under the GIL
 * no other thread ever finds the lock held by one of these calls. The lock is still
 * taken, so the operations stay exclusive where Python code runs in between (an item
 * type with Python __hash__/__eq__) and on free-threaded builds. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h> /* offsetof */
#ifndef Py_T_BOOL /* before 3.12 */
#include <structmember.h>
#define Py_T_BOOL T_BOOL
#endif

typedef struct {
    PyObject_HEAD
    PyObject *acquire;        /* the lock's bound acquire and release */
    PyObject *release;
    PyObject *dirty;          /* set: queued or to queue again once done */
    PyObject *processing;     /* set: handed out, not done */
    PyObject *append;         /* the line's bound append and popleft (a deque) */
    PyObject *popleft;
    PyObject *line;           /* the deque itself, for its length */
    PyObject *getters;        /* deque of sleeping getters (Parkers) */
    PyObject *getters_popleft;
    PyObject *nothing;        /* what take() returns when the line is empty */
    char shutting_down;
    char drain;
    PyObject *weakrefs;       /* so tests can check that a core is freed */
} Core;

static int
lock(Core *self)
{
    PyObject *r = PyObject_CallNoArgs(self->acquire);
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* Let the lock go; returns result, or NULL (with result released) if that failed. */
static PyObject *
unlock(Core *self, PyObject *result)
{
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb); /* an error of the section, kept */
    PyObject *r = PyObject_CallNoArgs(self->release);
    if (r == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        return NULL;
    }
    Py_DECREF(r);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return result;
}

/* Append item to the line; the sleeping getter taken off to be woken (new reference),
 * Py_None when none sleeps, NULL on error. */
static PyObject *
push(Core *self, PyObject *item)
{
    PyObject *r = PyObject_CallOneArg(self->append, item);
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    Py_ssize_t sleepers = PyObject_Length(self->getters);
    if (sleepers < 0) {
        return NULL;
    }
    if (sleepers == 0) {
        Py_RETURN_NONE;
    }
    return PyObject_CallNoArgs(self->getters_popleft);
}

static PyObject *
core_add(Core *self, PyObject *item)
{
    if (lock(self) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (self->shutting_down) {
        result = Py_NewRef(Py_None);
        goto out;
    }
    int found = PySet_Contains(self->dirty, item);
    if (found != 0) {
        result = found < 0 ? NULL : Py_NewRef(Py_None); /* queued already */
        goto out;
    }
    if (PySet_Add(self->dirty, item) < 0) {
        goto out;
    }
    found = PySet_Contains(self->processing, item);
    if (found != 0) {
        result = found < 0 ? NULL : Py_NewRef(Py_None); /* done() queues it again */
        goto out;
    }
    result = push(self, item);
out:
    return unlock(self, result);
}

static PyObject *
core_take(Core *self, PyObject *Py_UNUSED(ignored))
{
    if (lock(self) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t queued = PyObject_Length(self->line);
    if (queued < 0) {
        goto out;
    }
    if (queued == 0) {
        result = Py_NewRef(self->nothing);
        goto out;
    }
    PyObject *item = PyObject_CallNoArgs(self->popleft);
    if (item == NULL) {
        goto out;
    }
    if (PySet_Add(self->processing, item) < 0 || PySet_Discard(self->dirty, item) < 0) {
        Py_DECREF(item);
        goto out;
    }
    result = item;
out:
    return unlock(self, result);
}

static PyObject *
core_done(Core *self, PyObject *item)
{
    if (lock(self) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    int found = PySet_Discard(self->processing, item);
    if (found <= 0) {
        result = found < 0 ? NULL : Py_NewRef(Py_None); /* not handed out: ignored */
        goto out;
    }
    found = PySet_Contains(self->dirty, item);
    if (found < 0) {
        goto out;
    }
    if (found) {
        result = push(self, item);
    }
    else if (self->drain && PySet_GET_SIZE(self->processing) == 0) {
        result = Py_NewRef(Py_True); /* the caller wakes shut_down_with_drain */
    }
    else {
        result = Py_NewRef(Py_None);
    }
out:
    return unlock(self, result);
}

static int
bound(PyObject *obj, const char *name, PyObject **slot)
{
    *slot = PyObject_GetAttrString(obj, name);
    return *slot == NULL ? -1 : 0;
}

static int
core_init(Core *self, PyObject *args, PyObject *kwds)
{
    PyObject *lock_obj, *dirty, *processing, *line, *getters, *nothing;
    static char *kwlist[] = {"lock", "dirty", "processing", "line", "getters", "nothing", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!OOO:Core", kwlist, &lock_obj,
                                     &PySet_Type, &dirty, &PySet_Type, &processing, &line,
                                     &getters, &nothing)) {
        return -1;
    }
    if (self->line != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Core is initialised once");
        return -1;
    }
    if (bound(lock_obj, "acquire", &self->acquire) < 0
        || bound(lock_obj, "release", &self->release) < 0
        || bound(line, "append", &self->append) < 0
        || bound(line, "popleft", &self->popleft) < 0
        || bound(getters, "popleft", &self->getters_popleft) < 0) {
        return -1;
    }
    self->dirty = Py_NewRef(dirty);
    self->processing = Py_NewRef(processing);
    self->line = Py_NewRef(line);
    self->getters = Py_NewRef(getters);
    self->nothing = Py_NewRef(nothing);
    return 0;
}

/* Every object a Core holds, for the collector's visit and clear. */
#define CORE_REFS(X) X(acquire) X(release) X(dirty) X(processing) X(append) X(popleft) \
    X(line) X(getters) X(getters_popleft) X(nothing)

static int
core_traverse(Core *self, visitproc visit, void *arg)
{
#define VISIT_REF(field) Py_VISIT(self->field);
    CORE_REFS(VISIT_REF)
#undef VISIT_REF
    return 0;
}

static int
core_clear(Core *self)
{
#define CLEAR_REF(field) Py_CLEAR(self->field);
    CORE_REFS(CLEAR_REF)
#undef CLEAR_REF
    return 0;
}

static void
core_dealloc(Core *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    core_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef core_methods[] = {
    {"add", (PyCFunction)core_add, METH_O,
     "add(item) -> the sleeping getter to wake, or None."},
    {"take", (PyCFunction)core_take, METH_NOARGS,
     "take() -> the first item in line, now being processed, or `nothing`."},
    {"done", (PyCFunction)core_done, METH_O,
     "done(item) -> the sleeping getter to wake, True to wake a draining shutdown, or None."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef core_members[] = {
    {"shutting_down", Py_T_BOOL, offsetof(Core, shutting_down), 0,
     "True once the queue is shutting down: add() ignores items."},
    {"drain", Py_T_BOOL, offsetof(Core, drain), 0,
     "True while shut_down_with_drain waits: done() reports the last item done."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "client_cache.workqueue._queue.Core",
    .tp_doc = "The work queue's add, take and done, each one C call under the queue's lock.",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_weaklistoffset = offsetof(Core, weakrefs),
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)core_init,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_methods = core_methods,
    .tp_members = core_members,
};

#ifndef CLIENT_CACHE_SOURCE_HASH  /* setup.py defines it: the hash of the sources */
#define CLIENT_CACHE_SOURCE_HASH ""
#endif

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "client_cache.workqueue._queue",
    "The C part of client_cache.workqueue.queue.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__queue(void)
{
    if (PyType_Ready(&CoreType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "Core", (PyObject *)&CoreType) < 0
        || PyModule_AddStringConstant(module, "SOURCE_HASH", CLIENT_CACHE_SOURCE_HASH) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
