"""The checks every corpus case goes through (used by tests/test_corpus.py, in or out of process).

``python -m corpus.check CASE_ID`` (from tests/) runs both checks of one case in a fresh process:
the test runs a case there when a known gap makes it write out of bounds (it would corrupt the
test process's heap; see ``Case.isolate``).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import tensorplay
from tensorplay import library

from .cases import c_array, finite_difference_grads, is_floating, sample_args


def _np(t):
    return t.detach().cpu().numpy()


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _f64(a):
    return a.astype(np.float64) if is_floating(a) else a


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


def _leaf(a, device, requires_grad, contiguous=True):
    """(leaf, argument, grad_of): the argument passed is the leaf itself, or (``contiguous=False``)
    a non-contiguous view of it holding the same values; ``grad_of(leaf.grad)`` is the gradient
    in the argument's layout."""
    if contiguous or a.ndim == 0:
        t = tensorplay.tensor(c_array(a), device=device)
        return t.requires_grad_(requires_grad), t, lambda g: g
    if a.ndim == 1:     # every other element of a buffer twice as long
        base = np.zeros(2 * a.shape[0], a.dtype)
        base[::2] = a
        t = tensorplay.tensor(base, device=device).requires_grad_(requires_grad)
        return t, t[::2], lambda g: g[::2]
    # the last two dims transposed in memory, transposed back as a view
    t = tensorplay.tensor(c_array(a.swapaxes(-1, -2)), device=device)
    t.requires_grad_(requires_grad)
    return t, t.transpose(-1, -2), lambda g: g.swapaxes(-1, -2)


def _run_function(case, device, grad, contiguous=True):
    """Run ``case.op`` on its inputs with the arguments ``grad`` requiring grad (argument 0 as a
    non-contiguous view when ``contiguous`` is false); compare outputs with the reference and the
    gradients of ``sum(out_i * dy_i)`` with finite differences. Returns the outputs."""
    rng = np.random.default_rng(0)
    np_args = case.inputs(rng, 1)
    leaves, args, grad_of = [], [], []
    for i, a in enumerate(np_args):
        if isinstance(a, np.ndarray):
            leaf, arg, g = _leaf(a, device, i in grad, contiguous or i != 0)
        else:
            leaf, arg, g = None, a, None
        leaves.append(leaf)
        args.append(arg)
        grad_of.append(g)
    outs = _as_tuple(case.op(*args))
    refs = case.ref(*[_f64(a) for a in np_args])
    what = f"{case.id} (requiring grad: {sorted(grad)}, contiguous: {contiguous})"
    for i in range(case.n_out):
        np.testing.assert_allclose(_np(outs[i]).astype(np.float64), refs[i], atol=case.atol,
                                   rtol=case.rtol, err_msg=f"{what}: output {i}")
    if not grad:
        return outs
    dys = [rng.standard_normal(np.shape(refs[i])) for i in range(case.n_out)]
    loss = sum((outs[i] * tensorplay.tensor(dys[i].astype(np.float32), device=device)).sum()
               for i in range(case.n_out))
    loss.backward()
    want = finite_difference_grads(dataclasses.replace(case, grad=tuple(sorted(grad))), np_args, dys)
    for i, g in zip(sorted(grad), want):
        assert leaves[i].grad is not None, f"{what}: no gradient for argument {i}"
        np.testing.assert_allclose(grad_of[i](_np(leaves[i].grad)).astype(np.float64), g,
                                   atol=10 * case.atol, rtol=10 * case.rtol,
                                   err_msg=f"{what}: gradient of argument {i}")
    for i, leaf in enumerate(leaves):
        if leaf is not None and i not in grad:
            assert leaf.grad is None, f"{what}: argument {i} got a gradient it did not ask for"
    return outs


def check_function(case, device="cpu"):
    """What a user of an ``autograd.Function`` case relies on beyond its forward and backward
    (the checks an op gets from ``opcheck``): with no argument requiring grad, the same outputs
    and no graph (the Function's forward branches on ``input.requires_grad`` to save its
    tensors); each gradient argument alone requiring grad, its gradient only; argument 0 a
    non-contiguous view (the Function passes strides, or flattens), the same outputs and
    gradients."""
    for out in _run_function(case, device, ()):
        assert not out.requires_grad and out.grad_fn is None, f"{case.id}: a graph without grad"
    if len(case.grad) > 1:
        for i in case.grad:
            _run_function(case, device, (i,))
    _run_function(case, device, case.grad, contiguous=False)


def check_function_compiled(case, device="cpu"):
    """The Function called inside ``tensorplay.compile`` with no argument requiring grad (inference;
    with grad, compile refuses a Function, saying why): the outputs of the compiled call, twice
    (capture, then replay), against the reference."""
    np_args = case.inputs(np.random.default_rng(0), 1)
    pos = [i for i, a in enumerate(np_args) if isinstance(a, np.ndarray)]

    def fn(*tensors):
        args = list(np_args)
        for i, t in zip(pos, tensors):
            args[i] = t
        return case.op(*args)

    compiled = tensorplay.compile(fn)
    tensors = [tensorplay.tensor(c_array(np_args[i]), device=device) for i in pos]
    refs = case.ref(*[_f64(a) for a in np_args])
    for run in ("capture", "replay"):
        outs = _as_tuple(compiled(*tensors))
        for i in range(case.n_out):
            np.testing.assert_allclose(_np(outs[i]).astype(np.float64), refs[i], atol=case.atol,
                                       rtol=case.rtol, err_msg=f"{case.id} compiled ({run}): output {i}")


def check_opcheck(case, device="cpu"):
    args = sample_args(case, np.random.default_rng(1), device, requires_grad=True)
    assert library.opcheck(case.op, args) == {}


if __name__ == "__main__":
    from . import all_cases, function_cases
    (case,) = [c for c in [*all_cases(), *function_cases()] if c.id == sys.argv[1]]
    check_forward_and_gradients(case)
    (check_function if case.id in {c.id for c in function_cases()} else check_opcheck)(case)
    print("ok")
