/* Scalar draws from a numpy Generator's bit generator, bit for bit numpy's own.
 *
 * Generator.binomial(n, p) with scalar arguments runs numpy's C random_binomial, but
 * first turns n and p into 0-d arrays to find out they are scalars, and takes a lock:
 * ~4,600 instructions a call, where the draw itself is a few hundred. The memory model
 * draws a binomial per reclaim scan and per page touch (~300k in a 3-minute video
 * session, 12% of its instructions). Draws calls the same functions of numpy's
 * npyrandom library (random_binomial, random_exponential) on the Generator's bit
 * generator, so the values and the stream's state after them are those numpy gives;
 * tests/engine/test_draws.py checks this against Generator itself (hypothesis).
 *
 * mqoe/engine/draws.py is the reference and the fallback when this is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "numpy/npy_common.h"
#include "numpy/random/bitgen.h"
#include "numpy/random/distributions.h"

typedef struct {
    PyObject_HEAD
    PyObject *generator; /* the numpy Generator (kept alive: it owns the state) */
    PyObject *capsule;   /* its bit generator's "BitGenerator" capsule */
    bitgen_t *bitgen;
    binomial_t binomial; /* random_binomial's set-up cache (recomputed when n or p change) */
} DrawsObject;

static int
Draws_init(DrawsObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"generator", NULL};
    PyObject *generator = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Draws", kwlist, &generator)) {
        return -1;
    }
    PyObject *bit_generator = PyObject_GetAttrString(generator, "bit_generator");
    if (bit_generator == NULL) {
        return -1;
    }
    PyObject *capsule = PyObject_GetAttrString(bit_generator, "capsule");
    Py_DECREF(bit_generator);
    if (capsule == NULL) {
        return -1;
    }
    bitgen_t *bitgen = (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
    if (bitgen == NULL) {
        Py_DECREF(capsule);
        return -1;
    }
    Py_INCREF(generator);
    Py_XSETREF(self->generator, generator);
    Py_XSETREF(self->capsule, capsule);
    self->bitgen = bitgen;
    memset(&self->binomial, 0, sizeof(self->binomial));
    return 0;
}

static void
Draws_dealloc(DrawsObject *self)
{
    Py_XDECREF(self->generator);
    Py_XDECREF(self->capsule);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
ready(DrawsObject *self)
{
    if (self->bitgen == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Draws: not initialised");
        return 0;
    }
    return 1;
}

/* binomial(n, p): Generator.binomial(n, p) for a scalar int n and float p. */
static PyObject *
Draws_binomial(DrawsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "binomial(n, p): expected 2 arguments");
        return NULL;
    }
    if (!ready(self)) {
        return NULL;
    }
    long long n = PyLong_AsLongLong(args[0]);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    double p = PyFloat_AsDouble(args[1]);
    if (p == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    /* numpy's check_constraint messages (CONS_BOUNDED_0_1, CONS_NON_NEGATIVE) */
    if (!(p >= 0.0 && p <= 1.0)) {
        PyErr_SetString(PyExc_ValueError, "p < 0, p > 1 or p is NaN");
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n < 0");
        return NULL;
    }
    int64_t drawn = random_binomial(self->bitgen, p, (int64_t)n, &self->binomial);
    return PyLong_FromLongLong((long long)drawn);
}

/* exponential(scale): Generator.exponential(scale) for a scalar float scale. */
static PyObject *
Draws_exponential(DrawsObject *self, PyObject *arg)
{
    if (!ready(self)) {
        return NULL;
    }
    double scale = PyFloat_AsDouble(arg);
    if (scale == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!isnan(scale) && signbit(scale)) { /* numpy's CONS_NON_NEGATIVE: -0.0 too, not NaN */
        PyErr_SetString(PyExc_ValueError, "scale < 0");
        return NULL;
    }
    return PyFloat_FromDouble(random_exponential(self->bitgen, scale));
}

static PyObject *
Draws_get_generator(DrawsObject *self, void *closure)
{
    if (self->generator == NULL) {
        Py_RETURN_NONE;
    }
    Py_INCREF(self->generator);
    return self->generator;
}

static PyMethodDef Draws_methods[] = {
    {"binomial", (PyCFunction)(void (*)(void))Draws_binomial, METH_FASTCALL,
     "binomial(n, p) -> int: Generator.binomial(n, p) for scalars."},
    {"exponential", (PyCFunction)Draws_exponential, METH_O,
     "exponential(scale) -> float: Generator.exponential(scale) for a scalar."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Draws_getset[] = {
    {"generator", (getter)Draws_get_generator, NULL, "the numpy Generator drawn from", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DrawsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mqoe.engine._draws.Draws",
    .tp_basicsize = sizeof(DrawsObject),
    .tp_dealloc = (destructor)Draws_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Draws(generator): scalar binomial and exponential draws from a numpy "
              "Generator, identical to its own methods.",
    .tp_methods = Draws_methods,
    .tp_getset = Draws_getset,
    .tp_init = (initproc)Draws_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef draws_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mqoe.engine._draws",
    .m_doc = "Scalar draws from a numpy Generator, bit for bit numpy's (see mqoe.engine.draws).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__draws(void)
{
    if (PyType_Ready(&DrawsType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&draws_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&DrawsType);
    if (PyModule_AddObject(module, "Draws", (PyObject *)&DrawsType) < 0) {
        Py_DECREF(&DrawsType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
