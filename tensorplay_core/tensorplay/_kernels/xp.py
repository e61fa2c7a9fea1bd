"""Reference kernels of the built-in ops, written once against the array-API namespace ``xp``.

``bind(xp, backend)`` returns ``{op name: kernel}`` with ``xp`` closed over; the CPU plugin binds
numpy's namespace and the CUDA plugin CuPy's (array-api-compat), so each kernel exists once
(array-api-compat's habit). Kernels take and return *native* arrays; dtypes arrive as
``tensorplay.DType`` and are mapped with ``backend.native_dtype``. Where NumPy's promotion
differs from torch's (an int array with a Python float, int / int), the kernel casts first so
the result dtype equals the fake rule's.

A few operations the array API lacks (scatter-add, masked writes, strided views, random numbers)
go through small backend methods. The kernels live in one module per family (``binary``,
``bitwise``, ``unary``, ``reduction``, ``indexing``, ``factories``, ``opmath``: the float16/bfloat16
ops of several steps); what each elementwise op
computes is stated once in ``elementwise.OPS``, which the fusers of every backend read too.
"""

from __future__ import annotations

import contextvars
import sys

from . import binary, bitwise, factories, indexing, linalg, opmath, reduction, special, unary
from ._context import Context

_FAMILIES = (binary, bitwise, unary, reduction, indexing, factories, linalg, special, opmath)


def bind(xp, be) -> dict:
    """``{op name: kernel}`` of every built-in op on the array namespace ``xp`` of backend ``be``:
    each family module's kernels (``binary``, ``bitwise``, ``unary``, ``reduction``, ``indexing``,
    ``factories``, ``special``), closed over one shared ``Context``, made quiet about floating point
    exceptions (``_quiet``)."""
    c = Context(xp, be)
    kernels: dict = {}
    for family in _FAMILIES:
        kernels.update(family.bind(c))
    return _quiet(kernels, be)


def _quiet(kernels: dict, be) -> dict:
    """The kernels made silent about floating point exceptions (x/0, sqrt(-1), log(0), overflow),
    as torch is: NumPy would warn (``RuntimeWarning``) and raise under ``filterwarnings=error``.

    Done once here, where every path to a kernel passes (the generated adapters and the
    elementwise fuser both call these): each kernel runs with NumPy's error state set to
    "ignore" for its own duration only (a context variable: the caller's and other threads'
    NumPy settings are untouched). NumPy 2 gives the state as a ready object, and the kernel runs
    inside a context holding it (``_quiet_runner``: one ``Context.run`` call, ~0.2 k instructions),
    or, while that context is in use, between two context-variable writes (~1.6 k); the adapters
    inline either; other NumPy versions use ``numpy.errstate``. Backends whose
    module is not NumPy (CuPy: GPU arithmetic raises no such warnings) get the kernels as they are.
    """
    np_mod = be.np     # Backend.np: the NumPy-like module, None when there is none
    if getattr(np_mod, "__name__", "") != "numpy":
        return kernels
    try:   # NumPy >= 2: the state errstate would install, made once
        from numpy._core._ufunc_config import _extobj_contextvar
        from numpy._core.umath import _make_extobj
        state = _make_extobj(all="ignore")
        set_, reset = _extobj_contextvar.set, _extobj_contextvar.reset
    except (ImportError, AttributeError, TypeError):
        # NumPy < 2: an errstate entered and left by hand (its settings are thread-local there),
        # the same (set, reset, state) shape, so tensor() and the adapters silence it too
        errstate = np_mod.errstate
        state = {"all": "ignore"}

        def set_(st):
            cm = errstate(**st)
            cm.__enter__()
            return cm

        def reset(cm):
            cm.__exit__(None, None, None)

    runner = _quiet_runner(set_, state) if state.__class__ is not dict else None

    def wrap(k):
        if getattr(k, "_tp_fp_free", False):   # computes no floats (empty): nothing to silence
            return k

        if runner is None:
            def quiet(*args, **kwargs):
                token = set_(state)
                try:
                    return k(*args, **kwargs)
                finally:
                    reset(token)
        else:
            run, busy = runner

            def quiet(*args, **kwargs):
                try:
                    return run(k, *args, **kwargs)
                except RuntimeError as e:
                    # the quiet context is in use (a kernel calling a kernel, another thread
                    # inside one): raised by run() itself, before k ran; the writes instead
                    if e.args != busy or e.__traceback__.tb_next is not None:
                        raise
                token = set_(state)
                try:
                    return k(*args, **kwargs)
                finally:
                    reset(token)
            quiet._tp_quiet_run = runner
        quiet.__wrapped__ = k
        # the generated adapters (_ops/_define.make_adapter) inline the run (or these two
        # writes) around the unwrapped kernel instead of calling through this wrapper (one frame
        # less); tensorplay.tensor() silences its conversion with the writes
        quiet._tp_quiet = (set_, reset, state)
        return quiet
    return {name: wrap(k) for name, k in kernels.items()}


_RUNNER = None   # (run, busy) of the process's quiet context, made on first use


def _quiet_runner(set_, state):
    """``(run, busy)``: ``run(k, *args, **kwargs)`` calls ``k`` inside a context (``contextvars``)
    whose NumPy error state is ``state`` ("ignore"), made once per process; ``busy`` is the
    ``args`` of the ``RuntimeError`` that ``run`` raises, before calling ``k``, while that
    context is already entered (by a kernel calling a kernel, or by another thread inside a
    kernel): callers then take the two writes instead. Entering a ready context costs a small
    fraction of the two writes (each copies the context's variable mapping).

    What a kernel sees inside it: NumPy's error state ``state``, every other context variable at
    its default, as in a new thread (NumPy's print options; the built-in kernels read none), and
    what it sets stays there (they set none). None where another thread could enter it at the same moment (an interpreter
    without the GIL: entering is not atomic there): the kernels keep the two writes."""
    global _RUNNER
    if _RUNNER is not None:
        return _RUNNER
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    if is_gil_enabled is not None and not is_gil_enabled():
        return None
    ctx = contextvars.Context()
    ctx.run(set_, state)
    run = ctx.run
    try:
        run(run, int)
    except RuntimeError as e:
        busy = e.args
    else:  # pragma: no cover - every CPython refuses a second entry
        return None
    _RUNNER = (run, busy)
    return _RUNNER


__all__ = ["bind"]
