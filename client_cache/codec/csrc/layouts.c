/* client_cache.codec._codec's layouts of msgspec struct classes (strtable.h struct_layout):
 * where a struct's fields are, so that a walk (walk.c) and the protobuf entries
 * (pbstruct.c) read and replace them in their slots without calling Python code. Each
 * class is looked at once, and its layout kept until the tables are cleared. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "strtable.h"
#ifndef Py_T_OBJECT_EX /* before 3.12 */
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#endif

/* dict: type -> its layout (bytes: frozen or not, then its fields' offsets), or None */
static PyObject *struct_layouts;

int
layouts_init(void)
{
    struct_layouts = PyDict_New();
    return struct_layouts == NULL ? -1 : 0;
}

void
layouts_clear(void)
{
    PyDict_Clear(struct_layouts);
}

/* 1 when the struct class's configuration says frozen, 0 when not or it has none, -1 on
 * error. */
static int
is_frozen(PyObject *type)
{
    PyObject *config = PyObject_GetAttrString(type, "__struct_config__");
    if (config == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *frozen = PyObject_GetAttrString(config, "frozen");
    Py_DECREF(config);
    if (frozen == NULL) {
        PyErr_Clear();
        return 0;
    }
    int result = PyObject_IsTrue(frozen);
    Py_DECREF(frozen);
    return result;
}

PyObject *
struct_layout(PyObject *type)
{
    PyObject *layout = PyDict_GetItemWithError(struct_layouts, type);
    if (layout != NULL || PyErr_Occurred()) {
        return layout == Py_None ? NULL : layout;
    }
    layout = Py_NewRef(Py_None);
    PyObject *fields = PyObject_GetAttrString(type, "__struct_fields__");
    if (fields == NULL) {
        PyErr_Clear();
    }
    else if (PyTuple_Check(fields)) {
        Py_ssize_t count = PyTuple_GET_SIZE(fields);
        PyObject *offsets = PyBytes_FromStringAndSize(
            NULL, (count + 1) * (Py_ssize_t)sizeof(Py_ssize_t));
        int frozen = offsets == NULL ? -1 : is_frozen(type);
        if (frozen < 0) {
            Py_XDECREF(offsets);
            Py_DECREF(fields);
            Py_DECREF(layout);
            return NULL;
        }
        Py_ssize_t *at = (Py_ssize_t *)PyBytes_AS_STRING(offsets);
        *at++ = frozen;
        Py_ssize_t i = 0;
        for (; i < count; i++) {
            /* on the class, a slot's attribute is its member descriptor itself */
            PyObject *descr = PyObject_GetAttr(type, PyTuple_GET_ITEM(fields, i));
            int is_slot = descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)
                && ((PyMemberDescrObject *)descr)->d_member->type == Py_T_OBJECT_EX;
            if (is_slot) {
                at[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
            }
            Py_XDECREF(descr);
            if (!is_slot) {
                PyErr_Clear();
                break;
            }
        }
        if (i == count) {
            Py_SETREF(layout, offsets);
        }
        else {
            Py_DECREF(offsets);
        }
    }
    Py_XDECREF(fields);
    int failed = PyDict_SetItem(struct_layouts, type, layout);
    Py_DECREF(layout); /* the dict holds it */
    if (failed) {
        return NULL;
    }
    return layout == Py_None ? NULL : layout;
}
