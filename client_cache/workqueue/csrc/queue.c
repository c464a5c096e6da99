/* client_cache.workqueue._queue.QueueCore: a work queue's state and the operations on it,
 * in C. client_cache.workqueue._core.PyQueueCore is its specification, method for method
 * (read that first); this type does the same for the default storage without metrics.
 *
 * It owns its lock (a _thread lock, handed out as .lock for the waiting the Python queue
 * does around it), its line (a deque), its dirty and processing sets, its sleeping
 * getters and its shutdown flags: one copy of each, nothing shared with the Python side.
 *
 * Why C: a Python critical section can lose the GIL at any call inside it while it holds
 * the queue's lock. The thread that took the GIL then blocks on the lock, and when the
 * lock is let go it is handed to that sleeping thread, which now owns the lock but not
 * the GIL: the first thread's next add blocks in turn, and the two threads take turns
 * through the kernel on every item (a lock convoy; a worker and a producer made about
 * 5,000 context switches per 50,000 items). Here add, take and done each take the lock,
 * do their work and let the lock go inside one C call, which keeps the GIL throughout as
 * long as the item's hash and equality are C code (str, int, tuples of them), so under
 * the GIL no other thread ever finds the lock held by one of these calls. The lock is
 * still taken, so the operations stay exclusive where Python code runs in between (an
 * item type with Python __hash__/__eq__) and on free-threaded builds. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h> /* offsetof */

typedef struct {
    PyObject_HEAD
    PyObject *lock;           /* the core's own lock, and its bound acquire and release */
    PyObject *acquire;
    PyObject *release;
    PyObject *dirty;          /* set: queued, or to queue again once done */
    PyObject *processing;     /* set: handed out, not done */
    PyObject *line;           /* deque: the items in line, and its bound append, popleft */
    PyObject *append;
    PyObject *popleft;
    PyObject *getters;        /* deque of sleeping getters (Parkers), and its bound methods */
    PyObject *getters_popleft;
    PyObject *getters_remove;
    char shutting_down;
    char drain;
    PyObject *weakrefs;       /* so tests can check that a core is freed */
} QueueCore;

static PyObject *nothing; /* QueueCore.NOTHING: what take() returns when the line is empty */

static int
lock(QueueCore *self)
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
unlock(QueueCore *self, PyObject *result)
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

/* The first sleeping getter, taken off to be woken (new reference), or None. */
static PyObject *
next_getter(QueueCore *self)
{
    if (PyObject_Length(self->getters) <= 0) {
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    return PyObject_CallNoArgs(self->getters_popleft);
}

/* Append item to the line; the getter to wake (new reference), None, NULL on error. */
static PyObject *
push(QueueCore *self, PyObject *item)
{
    PyObject *r = PyObject_CallOneArg(self->append, item);
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    return next_getter(self);
}

/* The TypeError for an item whose hash or equality failed (the error set now is its
 * cause); NULL. */
static PyObject *
unusable(PyObject *item)
{
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyErr_NormalizeException(&exc_type, &exc_value, &exc_tb);
    PyErr_Format(PyExc_TypeError,
                 "a work queue item must be hashable and comparable: %s: %S",
                 Py_TYPE(item)->tp_name, exc_value ? exc_value : Py_None);
    if (exc_value != NULL) {
        PyObject *type2, *value2, *tb2;
        PyErr_Fetch(&type2, &value2, &tb2);
        PyErr_NormalizeException(&type2, &value2, &tb2);
        PyException_SetCause(value2, Py_NewRef(exc_value));
        PyErr_Restore(type2, value2, tb2);
    }
    Py_XDECREF(exc_type);
    Py_XDECREF(exc_value);
    Py_XDECREF(exc_tb);
    return NULL;
}

/* *slot (a set) without item, compared by identity (its hash may fail): a new set in
 * *slot. -1 on error. */
static int
without(PyObject **slot, PyObject *item)
{
    PyObject *kept = PySet_New(NULL), *iter = PyObject_GetIter(*slot), *x;
    if (kept == NULL || iter == NULL) {
        Py_XDECREF(kept);
        Py_XDECREF(iter);
        return -1;
    }
    while ((x = PyIter_Next(iter)) != NULL) {
        int failed = x != item && PySet_Add(kept, x) < 0;
        Py_DECREF(x);
        if (failed) {
            Py_DECREF(iter);
            Py_DECREF(kept);
            return -1;
        }
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        Py_DECREF(kept);
        return -1;
    }
    Py_SETREF(*slot, kept);
    return 0;
}

/* Refuse an item a work queue cannot keep (PyQueueCore's check_item): its hash fails, or
 * its equality with itself. -1 with TypeError set. */
static int
check_item(PyObject *item)
{
    if (PyUnicode_CheckExact(item) || PyLong_CheckExact(item)) {
        return 0; /* the usual keys: their hash and equality cannot fail */
    }
    if (PyObject_Hash(item) == -1) {
        unusable(item);
        return -1;
    }
    PyObject *same = PyObject_RichCompare(item, item, Py_EQ);
    if (same == NULL) {
        unusable(item);
        return -1;
    }
    Py_DECREF(same);
    return 0;
}

static PyObject *
core_add(QueueCore *self, PyObject *item)
{
    if (check_item(item) < 0) {
        return NULL;
    }
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
take_locked(QueueCore *self)
{
    Py_ssize_t queued = PyObject_Length(self->line);
    if (queued <= 0) {
        return queued < 0 ? NULL : Py_NewRef(nothing);
    }
    PyObject *item = PyObject_CallNoArgs(self->popleft);
    if (item == NULL) {
        return NULL;
    }
    if (PySet_Add(self->processing, item) < 0 || PySet_Discard(self->dirty, item) < 0) {
        /* its hash or equality fails now: back in line, TypeError (nothing lost) */
        unusable(item);
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        PyObject *r = without(&self->processing, item) < 0 ? NULL
                      : PyObject_CallOneArg(self->append, item);
        Py_XDECREF(r);
        Py_DECREF(item);
        if (r == NULL) {
            Py_XDECREF(exc_type);
            Py_XDECREF(exc_value);
            Py_XDECREF(exc_tb);
            return NULL;
        }
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return NULL;
    }
    return item;
}

static PyObject *
core_take(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    if (lock(self) < 0) {
        return NULL;
    }
    return unlock(self, take_locked(self));
}

static PyObject *
core_take_locked(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    return take_locked(self);
}

static PyObject *
core_done(QueueCore *self, PyObject *item)
{
    if (lock(self) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    int found = PySet_Discard(self->processing, item);
    if (found == 0) {
        result = Py_NewRef(Py_None); /* not handed out: ignored */
        goto out;
    }
    int again = found < 0 ? -1 : PySet_Contains(self->dirty, item);
    if (again < 0) {
        /* its hash or equality fails now: taken out of both sets by identity, so that
         * a draining shutdown still ends; not queued again; TypeError */
        unusable(item);
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        if (without(&self->processing, item) < 0 || without(&self->dirty, item) < 0) {
            Py_XDECREF(exc_type);
            Py_XDECREF(exc_value);
            Py_XDECREF(exc_tb);
            goto out;
        }
        PyErr_Restore(exc_type, exc_value, exc_tb);
        goto out;
    }
    found = again;
    if (found) {
        result = push(self, item);
    }
    else if (self->drain && PySet_GET_SIZE(self->processing) == 0) {
        result = Py_NewRef(Py_True); /* the caller wakes the draining shutdown */
    }
    else {
        result = Py_NewRef(Py_None);
    }
out:
    return unlock(self, result);
}

static PyObject *
core_queued_locked(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t queued = PyObject_Length(self->line);
    return queued < 0 ? NULL : PyLong_FromSsize_t(queued);
}

static PyObject *
core_processing_locked(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(PySet_GET_SIZE(self->processing));
}

static PyObject *
core_dirty_locked(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(PySet_GET_SIZE(self->dirty));
}

static PyObject *
core_sleepers_locked(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t sleepers = PyObject_Length(self->getters);
    return sleepers < 0 ? NULL : PyLong_FromSsize_t(sleepers);
}

static PyObject *
core_shutting_down_locked(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->shutting_down);
}

static PyObject *
core_draining_locked(QueueCore *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->drain);
}

static PyObject *
core_shut_down_locked(QueueCore *self, PyObject *drain)
{
    int wait = PyObject_IsTrue(drain);
    if (wait < 0) {
        return NULL;
    }
    PyObject *getters = PySequence_List(self->getters);
    if (getters == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(self->getters, "clear", NULL);
    if (r == NULL) {
        Py_DECREF(getters);
        return NULL;
    }
    Py_DECREF(r);
    self->shutting_down = 1;
    self->drain = (char)wait;
    return getters;
}

static PyObject *
core_park_locked(QueueCore *self, PyObject *getter)
{
    PyObject *r = PyObject_CallMethod(self->getters, "append", "O", getter);
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *
core_unpark_locked(QueueCore *self, PyObject *getter)
{
    PyObject *r = PyObject_CallOneArg(self->getters_remove, getter);
    if (r == NULL) {
        if (PyErr_ExceptionMatches(PyExc_ValueError)) { /* handed out to be woken */
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        return NULL;
    }
    Py_DECREF(r);
    Py_RETURN_TRUE;
}

static int
bound(PyObject *obj, const char *name, PyObject **slot)
{
    *slot = PyObject_GetAttrString(obj, name);
    return *slot == NULL ? -1 : 0;
}

/* A new empty deque. */
static PyObject *
new_deque(void)
{
    PyObject *collections = PyImport_ImportModule("collections");
    if (collections == NULL) {
        return NULL;
    }
    PyObject *made = PyObject_CallMethod(collections, "deque", NULL);
    Py_DECREF(collections);
    return made;
}

static PyObject *
core_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":QueueCore", kwlist)) {
        return NULL;
    }
    QueueCore *self = (QueueCore *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    PyObject *thread = PyImport_ImportModule("_thread");
    if (thread == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->lock = PyObject_CallMethod(thread, "allocate_lock", NULL);
    Py_DECREF(thread);
    if (self->lock == NULL || (self->dirty = PySet_New(NULL)) == NULL
        || (self->processing = PySet_New(NULL)) == NULL
        || (self->line = new_deque()) == NULL || (self->getters = new_deque()) == NULL
        || bound(self->lock, "acquire", &self->acquire) < 0
        || bound(self->lock, "release", &self->release) < 0
        || bound(self->line, "append", &self->append) < 0
        || bound(self->line, "popleft", &self->popleft) < 0
        || bound(self->getters, "popleft", &self->getters_popleft) < 0
        || bound(self->getters, "remove", &self->getters_remove) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* Every object a QueueCore holds, for the collector's visit and clear. */
#define CORE_REFS(X) X(lock) X(acquire) X(release) X(dirty) X(processing) X(line) \
    X(append) X(popleft) X(getters) X(getters_popleft) X(getters_remove)

static int
core_traverse(QueueCore *self, visitproc visit, void *arg)
{
#define VISIT_REF(field) Py_VISIT(self->field);
    CORE_REFS(VISIT_REF)
#undef VISIT_REF
    return 0;
}

static int
core_clear(QueueCore *self)
{
#define CLEAR_REF(field) Py_CLEAR(self->field);
    CORE_REFS(CLEAR_REF)
#undef CLEAR_REF
    return 0;
}

static void
core_dealloc(QueueCore *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    core_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
core_get_lock(QueueCore *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->lock);
}

static PyMethodDef core_methods[] = {
    {"add", (PyCFunction)core_add, METH_O,
     "add(item) -> the sleeping getter to wake, or None (PyQueueCore.add)."},
    {"take", (PyCFunction)core_take, METH_NOARGS,
     "take() -> the first item in line, now being processed, or NOTHING."},
    {"done", (PyCFunction)core_done, METH_O,
     "done(item) -> the sleeping getter to wake, True to wake a draining shutdown, or None."},
    {"take_locked", (PyCFunction)core_take_locked, METH_NOARGS,
     "take_locked() -> take(), with the lock held."},
    {"queued_locked", (PyCFunction)core_queued_locked, METH_NOARGS,
     "queued_locked() -> how many items are in line."},
    {"processing_locked", (PyCFunction)core_processing_locked, METH_NOARGS,
     "processing_locked() -> how many items are handed out and not done."},
    {"dirty_locked", (PyCFunction)core_dirty_locked, METH_NOARGS,
     "dirty_locked() -> how many items are queued or to queue again once done."},
    {"sleepers_locked", (PyCFunction)core_sleepers_locked, METH_NOARGS,
     "sleepers_locked() -> how many getters sleep until an item comes."},
    {"shutting_down_locked", (PyCFunction)core_shutting_down_locked, METH_NOARGS,
     "shutting_down_locked() -> whether the queue is shutting down."},
    {"draining_locked", (PyCFunction)core_draining_locked, METH_NOARGS,
     "draining_locked() -> whether a shutdown waits for what is handed out."},
    {"shut_down_locked", (PyCFunction)core_shut_down_locked, METH_O,
     "shut_down_locked(drain) -> every sleeping getter, to wake."},
    {"park_locked", (PyCFunction)core_park_locked, METH_O,
     "park_locked(getter): the getter sleeps until an item comes."},
    {"unpark_locked", (PyCFunction)core_unpark_locked, METH_O,
     "unpark_locked(getter) -> False when it was handed out to be woken meanwhile."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef core_getset[] = {
    {"lock", (getter)core_get_lock, NULL, "The core's own lock.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject QueueCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "client_cache.workqueue._queue.QueueCore",
    .tp_doc = "QueueCore()\n--\n\na work queue's state and operations "
              "(client_cache.workqueue._core.PyQueueCore is its specification).",
    .tp_basicsize = sizeof(QueueCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_weaklistoffset = offsetof(QueueCore, weakrefs),
    .tp_new = core_new,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_methods = core_methods,
    .tp_getset = core_getset,
};

#ifndef CLIENT_CACHE_SOURCE_HASH  /* setup.py defines it: the hash of the sources */
#define CLIENT_CACHE_SOURCE_HASH ""
#endif

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "client_cache.workqueue._queue",
    "The native work queue core (client_cache.workqueue._core says what it does).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__queue(void)
{
    if (nothing == NULL && (nothing = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type))
        == NULL) {
        return NULL;
    }
    if (PyType_Ready(&QueueCoreType) < 0
        || PyDict_SetItemString(QueueCoreType.tp_dict, "NOTHING", nothing) < 0) {
        return NULL;
    }
    PyType_Modified(&QueueCoreType);
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "QueueCore", (PyObject *)&QueueCoreType) < 0
        || PyModule_AddStringConstant(module, "SOURCE_HASH", CLIENT_CACHE_SOURCE_HASH) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
