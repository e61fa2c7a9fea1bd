"""Views and in-place writes against torch itself (session 46). Companion of tests/test_views46.py
(torch-free).

1. ``grad_fn`` of a view after its base, another view of the base, or a detached alias was
   written in place (recorded or under ``no_grad``): the same node name (torch's ``...0``
   suffix aside; ``RuntimeError`` with the same words where torch raises), the same ``repr``
   suffix, the same gradients through the view.
2. k writes, one to each of k views of one base: the same node names and gradients.
3. In-place view ops (``t_``, ``transpose_``, ``unsqueeze_``, ``squeeze_``) on a view made stale
   by a write to its base, with and without grad mode: the same node name and gradients (the
   history regenerated with the view's new layout).
4. In-place writes through ``x.data`` (of a leaf, a non-leaf, a view; saved by the graph or not)
   and through ``detach()``: the same versions, values, gradients or error."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402


def _name(fn):
    if fn is None:
        return None
    n = fn.name() if callable(fn.name) else fn.name
    n = n.replace("torch::autograd::", "")
    n = re.sub(r"Backward0$", "Backward", n)
    return re.sub(r"^tp::(\w)", lambda m: m.group(1).upper(), n)     # tp::selectBackward


def _run(L, fn):
    try:
        return "ok", fn(L)
    except RuntimeError as e:
        msg = re.sub(r"^[\w:]+: ", "", str(e))
        return "raise", re.sub(r"Output (\d+) of \S+", r"Output \1 of OP", msg)


def _grad_fn_name(t):
    try:
        return _name(t.grad_fn)
    except RuntimeError as e:
        return ("raise", re.sub(r"Output (\d+) of \S+", r"Output \1 of OP", str(e)))


def _repr_suffix(t):
    r = repr(t)
    m = re.search(r"grad_fn=<([^>]*)>", r)
    return None if m is None else _name(type("N", (), {"name": m.group(1)})())


def _no_grad(L, f):
    with L.no_grad():
        f()


MAKE = {
    "select": lambda y: y[0],
    "slice_of_select": lambda y: y[0][1:],
    "view": lambda y: y.view(-1),
    "transpose": lambda y: y.t(),
    "unbind": lambda y: y.unbind()[1],
    "no_grad_select": None,          # made under no_grad
}
WRITE = {
    "base_mul_": lambda L, y, v: y.mul_(2),
    "no_grad_base_mul_": lambda L, y, v: _no_grad(L, lambda: y.mul_(2)),
    "no_grad_view_mul_": lambda L, y, v: _no_grad(L, lambda: v.mul_(2)),
    "other_view_mul_": lambda L, y, v: y[1].mul_(3),
    "no_grad_other_view": lambda L, y, v: _no_grad(L, lambda: y[1].mul_(3)),
    "detached_alias": lambda L, y, v: y.detach().add_(1),
}
CASES = [(m, w) for m in MAKE for w in WRITE]


def _case(L, make, write):
    x = L.arange(6.0).reshape(2, 3).requires_grad_()
    y = x * 1
    if MAKE[make] is None:
        with L.no_grad():
            v = y[0]
    else:
        v = MAKE[make](y)
    WRITE[write](L, y, v)
    names = (_grad_fn_name(v), _repr_suffix(v), v.requires_grad)
    got = _run(L, lambda L: ((v * v).sum().backward(),
                             None if x.grad is None else x.grad.tolist())[1])
    return names, got


@pytest.mark.parametrize("make,write", CASES, ids=[f"{m}-{w}" for m, w in CASES])
def test_grad_fn_of_views_after_writes_matches_torch(make, write):
    assert _case(tp, make, write) == _case(torch, make, write)


@pytest.mark.parametrize("k", [1, 5, 33])
def test_writes_to_each_of_k_views_match_torch(k):
    def f(L):
        x = L.arange(2.0 * k).reshape(k, 2).requires_grad_()
        y = x * 1
        vs = [y[i] if i % 2 else y[i:i + 1].view(2) for i in range(k)]
        for i, v in enumerate(vs):
            v.mul_(i + 2)
        names = [_name(v.grad_fn) for v in vs] + [_name(y.grad_fn)]
        loss = sum((v * v).sum() for v in vs[::3]) + (y * 3).sum()
        loss.backward()
        return names, x.grad.tolist()
    assert f(tp) == f(torch)


def _data_case(L, src, alias, write):
    x = (L.arange(1.0, 7.0) / 8).reshape(2, 3).requires_grad_()
    t = {"leaf": lambda: x, "non_leaf": lambda: x * 2, "view": lambda: (x * 2)[1]}[src]()
    y = (t * t).sum() + t.exp().sum()                    # saves t and exp(t)
    a = t.data if alias == "data" else t.detach()
    {"mul_": lambda: a.mul_(2), "view_add_": lambda: a[..., 1:].add_(1),
     "setitem": lambda: a.__setitem__(0, 0.5), "fill_": lambda: a.fill_(1.0)}[write]()
    versions = (a._version, t._version)
    got = _run(L, lambda L: (y.backward(), [round(v, 4) for v in x.grad.flatten().tolist()])[1])
    if got[0] == "raise" and "modified by an inplace operation" in got[1]:
        got = ("raise", "a saved tensor was modified by an inplace operation")   # (wording)
    return versions, [round(v, 4) for v in t.flatten().tolist()], got


DATA = [(s, a, w) for s in ("leaf", "non_leaf", "view") for a in ("data", "detach")
        for w in ("mul_", "view_add_", "setitem", "fill_")]


@pytest.mark.parametrize("src,alias,write", DATA, ids=["-".join(c) for c in DATA])
def test_writes_through_data_and_detach_match_torch(src, alias, write):
    assert _data_case(tp, src, alias, write) == _data_case(torch, src, alias, write)


VIEW_OPS = {      # (the view of y, the in-place view op)
    "t_": (lambda y: y[:, :2], lambda v: v.t_()),
    "transpose_": (lambda y: y[:, 1:], lambda v: v.transpose_(0, 1)),
    "unsqueeze_": (lambda y: y[:, :2], lambda v: v.unsqueeze_(1)),
    "squeeze_": (lambda y: y[1:, :2], lambda v: v.squeeze_(0)),
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("op", VIEW_OPS)
def test_in_place_view_ops_on_a_stale_view_match_torch(op, grad):
    def f(L):
        x = L.arange(6.0).reshape(2, 3).requires_grad_()
        y = x * 1
        make, inplace = VIEW_OPS[op]
        v = make(y)
        y.mul_(2)
        if grad:
            r = inplace(v)
        else:
            with L.no_grad():
                r = inplace(v)
        name = _grad_fn_name(r)
        w = L.arange(float(r.numel())).reshape(tuple(r.shape))
        (r * w).sum().backward()
        return (name if not grad else None), tuple(r.shape), x.grad.tolist()
    assert f(tp) == f(torch)
