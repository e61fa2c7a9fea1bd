"""Eager built-in elementwise ops on large cuda tensors through generated Triton kernels.

CuPy's generic elementwise kernels reach about half of the copy bandwidth on an H200; a Triton
kernel with plain masked block loads reaches it. ``accelerate`` puts, in front of each
elementwise built-in kernel, a size test: arrays of at least ``THRESHOLD`` elements run as a
one-step chain of ``triton_fusion`` (the same generator and table as ``tensorplay.compile``'s
fused chains: each kernel is written once), smaller ones keep the CuPy kernel, whose host cost
per call is lower than a Triton launch's. Whatever the generator declines (bool arithmetic,
``pow``, unknown dtypes) runs on CuPy as before.

Only when tensorplay-triton (and Triton) is installed; ``TENSORPLAY_CUDA_EAGER_TRITON=0``
switches the path off.
"""

from __future__ import annotations

import importlib.util
import os

from tensorplay import _dtype
from tensorplay._ops import _shapes

THRESHOLD = 1 << 22          # elements; below, CuPy's lower launch cost wins

BINARY = frozenset({"add", "sub", "rsub", "mul", "div", "rdiv", "maximum", "minimum",
                    "eq", "ne", "lt", "le", "gt", "ge"})
UNARY = frozenset({"neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                   "sigmoid", "relu"})
_FLOAT_RESULT = frozenset({"div", "rdiv", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                           "sigmoid"})
_BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})

_AVAILABLE = [None]


def triton_available() -> bool:
    """tensorplay-triton and Triton importable (checked once, without importing them)."""
    r = _AVAILABLE[0]
    if r is None:
        r = (importlib.util.find_spec("triton") is not None and
             importlib.util.find_spec("tensorplay_triton") is not None)
        _AVAILABLE[0] = r
    return r


def accelerate(kernels: dict, backend) -> dict:
    """``kernels`` with the large-array Triton path in front of each elementwise op."""
    if not triton_available() or os.environ.get("TENSORPLAY_CUDA_EAGER_TRITON", "1") == "0":
        return kernels
    out = dict(kernels)
    for name in BINARY:
        if name in out:
            out[name] = _binary(name, out[name], backend)
    for name in UNARY:
        if name in out:
            out[name] = _unary(name, out[name], backend)
    return out


_CHAINS: dict = {}


def _chain(op, n_in, const_type, R, backend):
    key = (op, n_in, const_type, R)
    ch = _CHAINS.get(key)
    if ch is None:
        from tensorplay._fusion import ElementwiseExpr, Step

        from .triton_fusion import TritonChain
        args = tuple(("in", i) for i in range(n_in))
        if const_type is not None:
            args += (("const", const_type(1)),)
        expr = ElementwiseExpr(n_in, (Step(op, args),), (0,), (R,), None)
        ch = _CHAINS[key] = TritonChain(expr, backend)
    return ch


def _binary(op, k, backend):
    nd = backend.np.ndarray
    dt_of = backend.dtype_of
    rdt = _shapes.binary_result_dtype
    wrapped = _shapes._wrapped_dtype

    def kernel(a, b):
        if a.__class__ is nd and a.size >= THRESHOLD:
            da = dt_of(a)
            if b.__class__ is nd:
                R = rdt(da, 2, dt_of(b), 2 if b.ndim else 1)
                ct, args, consts = None, [a, b], None
            elif b.__class__ in (float, int):
                R = rdt(da, 2, wrapped(b), 0)
                ct, args, consts = b.__class__, [a], [b]
            else:
                return k(a, b)
            if op in _BOOL_RESULT:
                R = _dtype.bool
            elif op in _FLOAT_RESULT and not R.is_floating_point:
                R = _dtype.get_default_dtype()
            r = _chain(op, len(args), ct, R, backend).run(args, consts)
            if r is not None:
                return r[0]
        return k(a, b)
    kernel.__wrapped__ = k
    return kernel


def _unary(op, k, backend):
    nd = backend.np.ndarray
    dt_of = backend.dtype_of

    def kernel(a):
        if a.__class__ is nd and a.size >= THRESHOLD:
            R = dt_of(a)
            if op in _FLOAT_RESULT and not R.is_floating_point:
                R = _dtype.get_default_dtype()
            r = _chain(op, 1, None, R, backend).run([a])
            if r is not None:
                return r[0]
        return k(a)
    kernel.__wrapped__ = k
    return kernel
