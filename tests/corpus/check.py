"""The checks every corpus case goes through (used by tests/test_corpus.py, in or out of process).

``python -m corpus.check CASE_ID`` (from tests/) runs both checks of one case in a fresh process:
the test runs a case there when a known gap makes it write out of bounds (it would corrupt the
test process's heap; see ``Case.isolate``).
"""

from __future__ import annotations

import sys

import numpy as np
import tensorplay
from tensorplay import library

from .cases import finite_difference_grads, sample_args


def _np(t):
    return t.detach().cpu().numpy()


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _f64(a):
    return a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a


def check_forward_and_gradients(case, device="cpu"):
    """Outputs against the float64 NumPy reference; gradients of ``sum(out_i * dy_i)`` against
    central finite differences of that reference."""
    rng = np.random.default_rng(0)
    np_args = case.inputs(rng, 1)
    args = sample_args(case, np.random.default_rng(0), device, requires_grad=True)
    outs = _as_tuple(case.op(*args))
    refs = case.ref(*[_f64(a) for a in np_args])
    for i in range(case.n_out):
        np.testing.assert_allclose(_np(outs[i]).astype(np.float64), refs[i], atol=case.atol,
                                   rtol=case.rtol, err_msg=f"{case.id}: output {i}")
    dys = [rng.standard_normal(np.shape(refs[i])) for i in range(case.n_out)]
    loss = None
    for i in range(case.n_out):
        term = (outs[i] * tensorplay.tensor(dys[i].astype(np.float32), device=device)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    want = finite_difference_grads(case, np_args, dys)
    for i, g in zip(case.grad, want):
        assert args[i].grad is not None, f"{case.id}: no gradient for argument {i}"
        np.testing.assert_allclose(_np(args[i].grad).astype(np.float64), g, atol=10 * case.atol,
                                   rtol=10 * case.rtol, err_msg=f"{case.id}: gradient of argument {i}")


def check_opcheck(case, device="cpu"):
    args = sample_args(case, np.random.default_rng(1), device, requires_grad=True)
    assert library.opcheck(case.op, args) == {}


if __name__ == "__main__":
    from . import all_cases
    (case,) = [c for c in all_cases() if c.id == sys.argv[1]]
    check_forward_and_gradients(case)
    check_opcheck(case)
    print("ok")
