"""Views and in-place writes against torch itself (session 45). Companion of tests/test_views45.py
(torch-free).

1. In-place writes to the outputs of functions returning several views (``unbind``, ``split``,
   ``chunk``, ``split_with_sizes``) and to views of them, with and without autograd recording,
   and uses of them after their base was written: both libraries raise, with the same words
   (the op's name in "Output i of NAME" and TensorPlay's ``api:`` prefix aside), or both give
   the same values and gradients.
2. Every view op on inputs where it changes nothing (``x[...]``, ``x[()]``, ``t()`` of 0-D/1-D,
   ``view``/``reshape``/``expand`` to the same shape, identity ``permute``, ``squeeze`` without
   size-1 dims, ``flatten`` of one dim, full slices, ...): ``y is x`` as torch's, ``y._base`` as
   torch's, and a write to ``y`` bumps ``x``'s version as torch's."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402


def _run(L, fn):
    """``("ok", value)`` or ``("raise", normalised message)``."""
    try:
        return "ok", fn(L)
    except RuntimeError as e:
        msg = re.sub(r"^[\w:]+: ", "", str(e))                     # TensorPlay's api prefix
        if "modified inplace" not in msg:
            return "raise", "(another error)"     # (e.g. view(-1) of a column: both refuse it)
        msg = re.sub(r"Output (\d+) of \S+", r"Output \1 of OP", msg)
        return "raise", msg


def _y(L):
    x = L.arange(12.0).reshape(3, 4).requires_grad_()
    return x, x * 1


def _grad_after(L, write, use=lambda outs, y: (outs[1] * 1).sum()):
    def f(L):
        x, y = _y(L)
        outs = write[0](y)
        write[1](L, y, outs)
        use(outs, y).backward()
        return x.grad.tolist()
    return f


SPLITS = {
    "unbind": lambda y: y.unbind(),
    "unbind1": lambda y: y.unbind(1),
    "split2": lambda y: y.split(2),
    "split5": lambda y: y.split(5),
    "split_list": lambda y: y.split([1, 2]),
    "split_with_sizes": lambda y: y.split_with_sizes([2, 1]),
    "chunk": lambda y: y.chunk(2),
    "chunk_dim1": lambda y: y.chunk(2, 1),
    "tensor_split": lambda y: y.tensor_split(2),
    "hsplit": lambda y: y.hsplit(2),
    "vsplit": lambda y: y.vsplit([1]),
    "iter": lambda y: tuple(y),
    "list_unpack": lambda y: [*y],
}

SCENARIOS = {
    "mul_": lambda L, y, o: o[-1].mul_(2),
    "add_tensor_": lambda L, y, o: o[-1].add_(L.ones(o[-1].shape)),
    "zero_": lambda L, y, o: o[-1].zero_(),
    "setitem": lambda L, y, o: o[-1].__setitem__(0, 5.0),
    "sub_view_mul_": lambda L, y, o: o[-1][0].mul_(2),
    "view_view_mul_": lambda L, y, o: o[-1].view(-1).mul_(2),
    "unsqueeze_": lambda L, y, o: o[-1].unsqueeze_(0),
    "no_grad_mul_": lambda L, y, o: _under_no_grad(L, lambda: o[-1].mul_(2)),
    "base_mul_": lambda L, y, o: y.mul_(2),
    "other_view_mul_": lambda L, y, o: y[0].mul_(2),
    "none": lambda L, y, o: None,
}


def _under_no_grad(L, f):
    with L.no_grad():
        f()


CASES = [(s, w) for s in SPLITS for w in SCENARIOS]


@pytest.mark.parametrize("split,write", CASES, ids=[f"{s}-{w}" for s, w in CASES])
def test_writes_to_split_outputs_match_torch(split, write):
    def fn(L):
        x, y = _y(L)
        outs = SPLITS[split](y)
        SCENARIOS[write](L, y, outs)
        (outs[-1] * 1).sum().backward()
        return x.grad.tolist()
    rt, rp = _run(torch, fn), _run(tp, fn)
    assert rp == rt


def _no_grad_base(L, write):
    y = L.zeros(3, 4)
    b = y.unbind()[1]
    w = L.ones(4, requires_grad=True)
    write(L, y, b, w)
    (b * 1).sum().backward()
    return w.grad.tolist()


NO_GRAD_BASE = {
    "mul_w": lambda L, y, b, w: b.mul_(w),
    "copy_w": lambda L, y, b, w: b.copy_(w),
    "base_add_w": lambda L, y, b, w: y.add_(w),
    "plain_write_then_base_add_w": lambda L, y, b, w: (b.add_(1), y.add_(w)),
    "no_grad_made_then_base_add_w": lambda L, y, b, w: None,
}


@pytest.mark.parametrize("case", NO_GRAD_BASE)
def test_outputs_of_a_base_without_grad_match_torch(case):
    rt = _run(torch, lambda L: _no_grad_base(L, NO_GRAD_BASE[case]))
    rp = _run(tp, lambda L: _no_grad_base(L, NO_GRAD_BASE[case]))
    assert rp == rt


def _views_of_no_grad_views(L, which):
    y = L.ones(3, 2, requires_grad=True) * 1
    with L.no_grad():
        v = y[0]
        u = y.unbind()[1]
    if which == "view_of_no_grad_view":
        v[0:1].mul_(2)
    elif which == "no_grad_view":
        v.mul_(2)
    elif which == "no_grad_unbind":
        u.mul_(2)
    elif which == "view_of_no_grad_unbind":
        u[0:1].mul_(2)
    elif which == "base_then_use":
        y.mul_(2)
        (v * 1).sum().backward()
    return "ok"


@pytest.mark.parametrize("which", ["view_of_no_grad_view", "no_grad_view", "no_grad_unbind",
                                   "view_of_no_grad_unbind", "base_then_use"])
def test_views_made_under_no_grad_match_torch(which):
    assert _run(tp, lambda L: _views_of_no_grad_views(L, which)) == \
        _run(torch, lambda L: _views_of_no_grad_views(L, which))


# -- 2. no-op view ops ---------------------------------------------------------------------------

NOOPS = {
    "t_0d": ((), lambda x: x.t()), "t_1d": ((4,), lambda x: x.t()),
    "T_0d": ((), lambda x: x.T), "T_1d": ((4,), lambda x: x.T),
    "ellipsis": ((2, 3), lambda x: x[...]), "ellipsis_0d": ((), lambda x: x[...]),
    "empty_tuple": ((2, 3), lambda x: x[()]), "empty_tuple_0d": ((), lambda x: x[()]),
    "two_ellipses": ((2, 3), lambda x: x[..., ...]),
    "colon": ((2, 3), lambda x: x[:]), "colon_colon": ((2, 3), lambda x: x[:, :]),
    "colon_ellipsis": ((2, 3), lambda x: x[:, ...]),
    "view_same": ((2, 3), lambda x: x.view(2, 3)), "view_as_self": ((2, 3), lambda x: x.view_as(x)),
    "view_m1_1d": ((4,), lambda x: x.view(-1)),
    "reshape_same": ((2, 3), lambda x: x.reshape(2, 3)),
    "reshape_as_self": ((2, 3), lambda x: x.reshape_as(x)),
    "expand_same": ((2, 3), lambda x: x.expand(2, 3)), "expand_m1": ((2, 3), lambda x: x.expand(-1, -1)),
    "expand_as_self": ((2, 3), lambda x: x.expand_as(x)),
    "broadcast_to_same": ((2, 3), lambda x: x.broadcast_to((2, 3))),
    "squeeze_none": ((2, 3), lambda x: x.squeeze()), "squeeze_0": ((2, 3), lambda x: x.squeeze(0)),
    "squeeze_0d": ((), lambda x: x.squeeze()), "squeeze_dims": ((2, 3), lambda x: x.squeeze((0, 1))),
    "permute_id": ((2, 3), lambda x: x.permute(0, 1)), "permute_0d": ((), lambda x: x.permute(())),
    "transpose_same": ((2, 3), lambda x: x.transpose(1, 1)),
    "transpose_0d": ((), lambda x: x.transpose(0, 0)),
    "swapaxes_same": ((2, 3), lambda x: x.swapaxes(0, 0)),
    "movedim_same": ((2, 3), lambda x: x.movedim(0, 0)),
    "flatten_1d": ((4,), lambda x: x.flatten()), "flatten_one_dim": ((2, 3), lambda x: x.flatten(1, 1)),
    "flatten_0d": ((), lambda x: x.flatten()), "ravel_1d": ((4,), lambda x: x.ravel()),
    "unflatten_same": ((2, 3), lambda x: x.unflatten(1, (3,))),
    "narrow_full": ((2, 3), lambda x: x.narrow(0, 0, 2)), "slice_full": ((2, 3), lambda x: x[0:2]),
    "as_strided_same": ((2, 3), lambda x: x.as_strided((2, 3), (3, 1))),
    "unfold_whole": ((4,), lambda x: x.unfold(0, 4, 1)),
    "split_big": ((2, 3), lambda x: x.split(5)[0]), "chunk_1": ((2, 3), lambda x: x.chunk(1)[0]),
    "tensor_split_1": ((2, 3), lambda x: x.tensor_split(1)[0]),
    "contiguous": ((2, 3), lambda x: x.contiguous()), "conj": ((2, 3), lambda x: x.conj()),
    "resolve_conj": ((2, 3), lambda x: x.resolve_conj()), "real": ((2, 3), lambda x: x.real),
    "to_same": ((2, 3), lambda x: x.to(x.dtype)), "float_same": ((2, 3), lambda x: x.float()),
    "type_as_self": ((2, 3), lambda x: x.type_as(x)),
    "detach": ((2, 3), lambda x: x.detach()),
}
# (left out: ``x.data``, whose version counter is its own in torch, shared in TensorPlay; and
# ``x.view(x.dtype)``, whose storage object is its own in TensorPlay)
NOOPS["fn_t_1d"] = ((4,), "fn_t")       # tp.t / torch.t


def _make(L, shape, rg):
    n = 1
    for s in shape:
        n *= s
    x = L.arange(float(n)).reshape(shape).clone()
    if rg:
        x = x.requires_grad_() * 1
    return x


def _identity(L, op, rg):
    shape, fn = NOOPS[op]
    x = _make(L, shape, rg)
    y = L.t(x) if fn == "fn_t" else fn(x)
    root = x._base if x._base is not None else x
    shares = (y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()) \
        if L is torch else y.untyped_storage() is x.untyped_storage()
    state = (y is x, y._base is root, y._base is None, shares, y.requires_grad,
             y.grad_fn is not None, (y.grad_fn is x.grad_fn) if rg else None)
    v = x._version
    if shares:
        with L.no_grad():
            y.mul_(1)
    return state, x._version - v if shares else None


@pytest.mark.parametrize("rg", [False, True], ids=["plain", "grad"])
@pytest.mark.parametrize("op", NOOPS)
def test_no_op_views_are_what_torch_returns(op, rg):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # torch's deprecation of x.T on non-matrices
        rt = _identity(torch, op, rg)
    assert _identity(tp, op, rg) == rt


# -- 4. views without history of a base requiring grad -----------------------------------------

def _history_less(L, case):
    if case == "view_before_leaf_requires_grad":
        x = L.ones(3, 2)
        v = x[0]
        x.requires_grad_()
    else:
        x = L.ones(3, 2, requires_grad=True)
        base = x * 1 if case.startswith("no_grad_view_of_result") else x
        with L.no_grad():
            v = base[0]
    seen = []
    v.register_hook(lambda g: seen.append(1))
    out = (v * 2 + x[1]).sum()
    if case.endswith("grad_fn"):
        return out.requires_grad, L.autograd.grad(out, [v, x], allow_unused=True)[0]
    out.backward()
    return out.requires_grad, v.grad is None, x.grad.tolist(), seen


@pytest.mark.parametrize("case", ["view_before_leaf_requires_grad", "no_grad_view_of_leaf",
                                  "no_grad_view_of_result", "no_grad_view_of_result_grad_fn"])
def test_history_less_views_match_torch(case):
    rt = _history_less(torch, case)
    assert _history_less(tp, case) == rt
