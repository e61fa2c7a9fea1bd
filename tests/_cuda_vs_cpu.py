"""One comparison for the "op on cuda gives the cpu's result" test files (test_gaps44_cuda,
test_special46_cuda, test_linalg46_cuda): each lists ``CALLS`` (name, function of a dict of
tensors) and its inputs; ``check_call`` runs a call on both devices, values and gradients.

Each runs on ``DEVICES``: cuda (a GPU machine; skipped elsewhere) and conftest's ``gpu_stand_in``
(NumPy standing in for a GPU array library, so the reference kernels' device branch, the one CuPy
takes, runs in CI too); there a call can also be made with host reads refused (``no_sync``)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp


STAND_IN = "gpustandin"    # conftest's gpu_stand_in
#: The devices of a "matches cpu" test: ``pytest.mark.parametrize("device", DEVICES)``.
DEVICES = [pytest.param("cuda", marks=pytest.mark.cuda), STAND_IN]


def need_cuda() -> None:
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")


def need(device: str, request) -> None:
    """Skips when ``device`` is cuda and unavailable; registers the stand-in for the module."""
    if device == STAND_IN:
        request.getfixturevalue("gpu_stand_in")
    else:
        need_cuda()


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


def same(c, g, what, rtol, atol, device="cuda") -> None:
    """``g`` (on ``device``) has ``c``'s (cpu) dtype, shape and values within ``rtol``/``atol``."""
    assert g.device.type == device, what
    assert (c.dtype, tuple(c.shape)) == (g.dtype, tuple(g.shape)), what
    np.testing.assert_allclose(_host(g), _host(c), rtol=rtol, atol=atol, err_msg=str(what))


def check_call(name, call, tensors, grad_keys, *, rtol, atol, loss=lambda o: o.sum(),
               device="cuda", request=None, no_sync=False) -> None:
    """``call`` on ``device`` equals ``call`` on cpu, outputs and gradients (see ``same``);
    ``rtol`` may be a function of the cpu result (its dtype decides how close two libms can
    be). ``request``: the test's, needed for the stand-in. ``no_sync``: on the stand-in, the
    forward call runs with host reads refused (``MockBackend.forbid_sync``)."""
    if request is None:
        need_cuda()
    else:
        need(device, request)
    tol = rtol if callable(rtol) else (lambda c: rtol)
    outs = flat(call(tensors("cpu")))
    dev_t = tensors(device)
    if no_sync and device == STAND_IN:
        with tp.backends.get(STAND_IN).forbid_sync():
            got = flat(call(dev_t))
    else:
        got = flat(call(dev_t))
    for c, g in zip(outs, got, strict=True):
        same(c, g, name, tol(c), atol, device)
    # a gradient is as close as the computation it comes back through: erf of ``x.float()``
    # gives a float64 leaf a gradient computed in float32 (the loosest output's tolerance)
    gtol = max((tol(c) for c in outs), default=None)
    for c, g in zip(grads(call, tensors, "cpu", grad_keys, loss),
                    grads(call, tensors, device, grad_keys, loss), strict=True):
        assert (c is None) == (g is None), name
        if c is not None:
            same(c, g, ("grad", name), max(tol(c), gtol) if gtol is not None else tol(c), atol,
                 device)


def check_runs_on_cpu(calls, tensors, grad_keys, loss=lambda o: o.sum()) -> None:
    """Every call of ``calls`` runs on cpu, returns tensors, and its backward runs."""
    for name, call in calls:
        assert all(isinstance(t, tp.Tensor) for t in flat(call(tensors("cpu")))), name
        grads(call, tensors, "cpu", grad_keys, loss)
