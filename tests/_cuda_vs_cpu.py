"""One comparison for the "op on cuda gives the cpu's result" test files (test_gaps44_cuda,
test_special46_cuda, test_linalg46_cuda): each lists ``CALLS`` (name, function of a dict of
tensors) and its inputs; ``check_call`` runs a call on both devices, values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp


def need_cuda() -> None:
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")


def flat(r) -> list:
    return list(r) if isinstance(r, (tuple, list)) else [r]


def grads(call, tensors, device, grad_keys, loss=lambda o: o.sum()) -> list:
    """The gradients of ``sum(loss(o))`` over ``call``'s outputs that require grad, for the
    inputs named ``grad_keys`` (``[]`` when no output requires grad)."""
    t = tensors(device, grad=True)
    outs = [o for o in flat(call(t)) if o.requires_grad]
    if not outs:
        return []
    sum(loss(o) for o in outs).backward()
    return [t[k].grad for k in grad_keys]


def _host(x):
    return (x.float() if x.dtype.itemsize < 4 else x).cpu().numpy().astype(np.float64)


def same(c, g, what, rtol, atol) -> None:
    """``g`` (cuda) has ``c``'s (cpu) dtype, shape and values within ``rtol``/``atol``."""
    assert g.device.type == "cuda", what
    assert (c.dtype, tuple(c.shape)) == (g.dtype, tuple(g.shape)), what
    np.testing.assert_allclose(_host(g), _host(c), rtol=rtol, atol=atol, err_msg=str(what))


def check_call(name, call, tensors, grad_keys, *, rtol, atol, loss=lambda o: o.sum()) -> None:
    """``call`` on cuda equals ``call`` on cpu, outputs and gradients (see ``same``); ``rtol``
    may be a function of the cpu result (its dtype decides how close two libms can be)."""
    need_cuda()
    tol = rtol if callable(rtol) else (lambda c: rtol)
    outs = flat(call(tensors("cpu")))
    for c, g in zip(outs, flat(call(tensors("cuda"))), strict=True):
        same(c, g, name, tol(c), atol)
    # a gradient is as close as the computation it comes back through: erf of ``x.float()``
    # gives a float64 leaf a gradient computed in float32 (the loosest output's tolerance)
    gtol = max((tol(c) for c in outs), default=None)
    for c, g in zip(grads(call, tensors, "cpu", grad_keys, loss),
                    grads(call, tensors, "cuda", grad_keys, loss), strict=True):
        assert (c is None) == (g is None), name
        if c is not None:
            same(c, g, ("grad", name), max(tol(c), gtol) if gtol is not None else tol(c), atol)


def check_runs_on_cpu(calls, tensors, grad_keys, loss=lambda o: o.sum()) -> None:
    """Every call of ``calls`` runs on cpu, returns tensors, and its backward runs."""
    for name, call in calls:
        assert all(isinstance(t, tp.Tensor) for t in flat(call(tensors("cpu")))), name
        grads(call, tensors, "cpu", grad_keys, loss)
