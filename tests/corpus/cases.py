"""The corpus's cases: one per op, with sample inputs and a float64 NumPy reference.

A :class:`Case` gives everything ``tests/test_corpus.py`` (cpu, Triton's interpreter) and
``benchmarks/bench_corpus.py`` (cuda) need:

* ``op``: the ``triton_op`` (a ``tensorplay.library`` custom op);
* ``inputs(rng, scale)``: NumPy sample arguments (arrays become tensors, everything else is passed
  as is); ``scale=1`` gives the small cpu sizes, larger ``scale`` the benchmark sizes;
* ``ref(*args)``: the reference outputs in float64 NumPy, one per output compared (the first
  ``n_out`` outputs of the op; extra outputs such as saved statistics are not compared);
* ``grad``: indices of the arguments whose gradients are checked, against central finite
  differences of ``ref`` (float64), for the loss ``sum(out_i * dy_i)`` over the compared outputs;
* ``gaps``: the known gaps (``corpus.gaps``) that make the case fail while they are there;
* ``upstream_bug``: a bug of the library's own host code that ``check_function`` exposes (the
  Function cases' contract test is then a strict xfail naming it);
* ``tf32``: the kernels multiply float32 blocks with ``tl.dot`` at Triton's default precision,
  TF32 on an NVIDIA GPU (the same under torch: up to 0.015 off float64 on an H100, where the
  case's tolerance is 2e-5): on cuda the tests run the kernels in IEEE float32
  (``TRITON_F32_DEFAULT=ieee``), what the interpreter computes on cpu, at the case's own
  tolerance;
* ``refused``: the library's own host code refuses the case's backward on this machine (a guard
  against a bug it knows of): the tests that run the backward are strict xfails raising
  ``RuntimeError`` with this reason;
* ``isolate``: run the case in a fresh process (``python -m corpus.check ID``): set where a known
  gap makes a kernel write out of bounds, which would corrupt the test process.

Sample arguments for ``tensorplay.library.opcheck`` come from :func:`sample_args`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorplay


@dataclasses.dataclass
class Case:
    id: str
    op: Any
    inputs: Callable[..., tuple]
    ref: Callable[..., tuple]
    grad: tuple[int, ...] = (0,)
    n_out: int = 1
    atol: float = 1e-5
    rtol: float = 1e-4
    gaps: tuple = ()
    isolate: bool = False
    # a bug of the library itself that check_function's non-contiguous run shows (the same code
    # fails the same way under torch): that test is a strict xfail naming it
    upstream_bug: str | None = None
    # the library's own torch path for the benchmark: a callable taking torch tensors (by position,
    # same order as the op) and returning the compared outputs; filled in by bench_corpus.py
    torch_ref: str | None = None
    tf32: bool = False
    refused: str | None = None




def is_floating(a) -> bool:
    """A NumPy array of a floating dtype, ``ml_dtypes.bfloat16`` included (its dtype's kind is
    ``'V'``, not ``'f'``: a bfloat16 input would otherwise be taken as an integer one)."""
    return isinstance(a, np.ndarray) and (a.dtype.kind == "f" or a.dtype.name == "bfloat16")


def c_array(a):
    """A C-contiguous copy of ``a`` keeping its shape (``np.ascontiguousarray`` makes a 0-d array
    1-d: a 0-d input, such as Liger's PolyNorm bias, would reach the op as shape (1,))."""
    return np.array(a, order="C", copy=True)


def to_tensor(a, device, requires_grad=False):
    if isinstance(a, np.ndarray):
        t = tensorplay.tensor(c_array(a), device=device)
        if requires_grad:
            t.requires_grad_()
        return t
    return a


def sample_args(case: Case, rng, device, scale=1, requires_grad=False):
    args = case.inputs(rng, scale)
    return tuple(to_tensor(a, device, requires_grad and i in case.grad) for i, a in enumerate(args))


def finite_difference_grads(case: Case, args: tuple, dys: list, h: float = 1e-6):
    """d/d(args[i]) of sum_j sum(ref(args)[j] * dys[j]), in float64 by central differences."""
    base = [a.astype(np.float64) if is_floating(a) else a
            for a in args]

    def loss(vals):
        outs = case.ref(*vals)[: case.n_out]
        return sum(float((np.asarray(o, np.float64) * d).sum()) for o, d in zip(outs, dys))

    grads = []
    for i in case.grad:
        x = base[i].copy()
        g = np.zeros_like(x)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + h
            vals = list(base)
            vals[i] = x
            up = loss(vals)
            flat[k] = old - h
            down = loss(vals)
            flat[k] = old
            gflat[k] = (up - down) / (2 * h)
        grads.append(g)
    return grads


CASES: list[Case] = []


def register(cases):
    CASES.extend(cases)
