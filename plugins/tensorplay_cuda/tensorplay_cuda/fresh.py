"""A fresh row-major ``cupy.ndarray`` with less host time than ``cupy.ndarray(shape, dtype)``.

Why: every eager op and factory on cuda allocates its result, and on a CPU host timing
(``benchmarks/bench_cuda_host.py --launch``, the allocator stubbed) ``cupy.ndarray(shape,
dtype)`` took 1.37 µs of a 3.9 µs ``tp.mul(x, y)``, its allocation 0.1 µs of that: the rest is
CuPy's Python-level constructor. Since CuPy 13 ``cupy.ndarray`` is a Python subclass of the
extension type ``_ndarray_base`` whose ``__new__(cls, *args, _obj=None, _no_init=False,
**kwargs)`` runs ``x = _ndarray_base.__new__(cls)``, then ``x._init(*args, **kwargs)`` (the
whole constructor: shape, dtype, C-order strides, ``memory.alloc`` on the current device), then
nothing more for ``cls is ndarray``; the type call then runs ``ndarray.__init__``, which does
nothing. Calling those two steps directly skips the argument tuples, the keyword dict, the
``super()`` look-up and the empty ``__init__``: about 0.5 µs per allocation, the same object
(same class, shape, strides, dtype, flags, memory from the same allocator; ``order=None`` is
``'C'`` there, without parsing the string).

The dtype is given to ``INIT`` as its scalar type (``numpy.float32``) where CuPy makes this very
dtype object from it (``dtype_arg``; checked once per type, by a 0-element array): CuPy's
look-up of a dtype *object* misses its table (keyed by types, characters and names), then calls
``numpy.dtype`` and its support check (0.25 µs on a CPU host); the type is a hit. The dtype of
the result is the same object either way (the eager paths test dtypes by identity).

``route(cupy)`` gives ``(NEW, INIT)`` for a CuPy release whose constructor was checked to be
those two steps (``TESTED_MAJORS``), else None: callers then keep ``cupy.ndarray(shape,
dtype)``; ``new_array_for(nd)`` wraps them in one function. The allocation sites that use them:
the eager one-launch path (inline in ``triton_fusion._dense_call``'s generated call; the large
aligned launches of ``eager``), ``backend.empty`` and the factories' kernels, ``fill.filled``
(``zeros``, ``ones``, ``full``...), ``clone``.
"""

from __future__ import annotations

import sys

# CuPy major releases whose ndarray.__new__ / _ndarray_base._init are the two steps above: 14
# (14.2, the release on this project's CI and GPU hosts: tests/test_cuda_fresh56.py) and 13 (the
# same code in its source, where ndarray became a Python subclass); another release keeps the
# constructor
TESTED_MAJORS = (13, 14)


def route(cupy):
    """``(NEW, INIT)``: ``r = NEW(cupy.ndarray); INIT(r, shape, native_dtype, None, None, None)``
    makes what ``cupy.ndarray(shape, native_dtype)`` makes (``shape`` an int or a sequence of
    ints, ``native_dtype`` a NumPy dtype; the same errors for a negative size). None when
    ``cupy`` is None, its major release is not in ``TESTED_MAJORS``, or its classes lack those
    members."""
    if cupy is None:
        return None
    try:
        major = int(str(cupy.__version__).split(".")[0])
        base = cupy._core.core._ndarray_base
        nd = cupy.ndarray
        new, init = base.__new__, base._init
    except (AttributeError, ValueError, TypeError):
        return None
    if major not in TESTED_MAJORS or nd.__mro__[1] is not base:
        return None
    return new, init


def route_for(nd):
    """``route(cupy)`` when ``nd`` is CuPy's own ``ndarray`` class (not a subclass or a
    test's stand-in), else None."""
    cupy = sys.modules.get("cupy")      # (nd is CuPy's class only where CuPy is imported)
    return route(cupy) if cupy is not None and nd is cupy.ndarray else None


# scalar type -> the dtype object CuPy's constructor makes from it (dtype_arg)
_FROM_TYPE: dict = {}


def dtype_arg(new, init, nd, dtype):
    """What ``INIT`` (``route``'s) takes for NumPy dtype ``dtype``: its scalar type
    (``dtype.type``) where CuPy makes ``dtype`` itself from that type, else ``dtype``. Checked
    once per type with a 0-element array, remembered in ``_FROM_TYPE``."""
    t = dtype.type
    made = _FROM_TYPE.get(t)
    if made is None:
        p = new(nd)
        try:
            init(p, 0, t, None, None, None)
        except (ValueError, TypeError):     # a type CuPy refuses (str_, void...): the dtype's
            return dtype                    # own call then gives CuPy's error for the dtype
        made = _FROM_TYPE[t] = p.dtype
    return t if made is dtype else dtype


def new_array_for(nd):
    """``new_array(shape, native_dtype)``: a fresh row-major array of class ``nd`` on the current
    device (``native_dtype`` a NumPy dtype object; any other dtype-like is passed on as is) --
    for CuPy's own ``ndarray``, through ``route`` where it applies, the dtype given as
    ``dtype_arg`` says (one Python frame, about 0.65 µs less than the constructor on a CPU
    host); ``nd`` itself otherwise (another release, a subclass, a test's stand-in, None).
    Errors: CuPy's own, as the constructor raises them (a negative size: ``ValueError``; a dtype
    CuPy does not support: ``ValueError``)."""
    r = route_for(nd)
    if r is None:
        return nd
    new, init = r
    made = _FROM_TYPE

    def new_array(shape, dtype):
        a = new(nd)
        try:
            t = dtype.type
        except AttributeError:          # a dtype-like that is no dtype object: as CuPy takes it
            init(a, shape, dtype, None, None, None)
            return a
        if made.get(t) is dtype:        # (dtype_arg, without its frame once checked)
            init(a, shape, t, None, None, None)
        else:
            init(a, shape, dtype_arg(new, init, nd, dtype), None, None, None)
        return a
    return new_array
