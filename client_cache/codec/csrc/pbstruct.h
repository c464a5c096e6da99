/* Struct plans: how the protobuf decoder of client_cache.codec._codec builds msgspec structs
 * instead of dicts (see pbstruct.c and client_cache.codec._protobuf_structs). */
#ifndef CLIENT_CACHE_PBSTRUCT_H
#define CLIENT_CACHE_PBSTRUCT_H

#include <Python.h>

/* What a plan does with one field of its message. */
#define PLAN_SKIP 1  /* not a field of the struct: nothing is read */
#define PLAN_TUPLE 2 /* its lists (the field's, or its map's values) become tuples */

/* One message read as one struct class. An inline message's plan has no class: its
 * fields land in the struct of the message holding it. */
typedef struct {
    PyObject *cls;     /* the struct class; NULL for an inline message */
    PyObject *names;   /* wire name -> the struct's attribute name (NULL when inline) */
    PyObject *layout;  /* the class's layout (strtable.h struct_layout); NULL: none */
    int message;       /* the schema's index of the message read */
    int count;         /* the message's field count */
    int *child;        /* per field: the plan of the message it holds; -1: dicts */
    unsigned char *mode; /* per field: PLAN_SKIP, PLAN_TUPLE */
} StructPlan;

typedef struct {
    StructPlan *plans;
    int count;
    const void *schema; /* the compiled schema the plans were made for */
} StructPlans;

/* The plans in a capsule from protobuf_struct_plans; NULL with an exception set. */
const StructPlans *struct_plans_of(PyObject *capsule, const void *schema);

/* The plan's struct from count (wire name, value) pairs, made[i] telling what pair i's
 * value is (IMMUTABLE, FRESH: strtable.h); names the class lacks are left out. What
 * the struct is goes to *out; with share, a frozen one of immutable values none of which
 * is fresh is the equal one of the value table (as the walk shares it). NULL with an
 * exception set. */
PyObject *struct_of_pairs(const StructPlan *plan, PyObject *const *pairs,
                          const unsigned char *made, Py_ssize_t count, int share, int *out);

/* A list as a tuple (the list released), left out of the collector's sight when
 * untrack and nothing in it needs it; NULL with an exception set. */
PyObject *list_to_tuple(PyObject *list, int untrack);

/* protobuf_struct_plans(schema, plans) -> capsule (METH_FASTCALL): each plan (cls or
 * None, names or None, message, child, mode), child and mode one entry per field of the
 * schema's message. */
PyObject *protobuf_struct_plans(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
