"""Session 48 (h-corr48), against torch 2.13 cpu: in-place ops and ``out=`` on overlapping
memory (refused or not, torch's message, the values otherwise), ``resize_`` of a tensor whose
``.data`` was taken, and ``kthvalue``'s index among equal values, on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402

_R = np.random.default_rng(4848)


def _both(fn):
    """``fn(module, x)`` on torch and tensorplay (x = arange(6.)): the same exception message or
    the same values of x afterwards."""
    res = []
    for m in (torch, tp):
        x = m.arange(6.0)
        try:
            fn(m, x)
            res.append(("ok", x.tolist()))
        except RuntimeError as e:
            res.append(("error", str(e).split("\n")[0]))
    (kt, vt), (kp, vp) = res
    assert kt == kp, res
    if kt == "ok":
        np.testing.assert_allclose(vp, vt, rtol=1e-6)
    else:
        assert vt in vp, res        # torch's message (tensorplay may name the op first)


CASES = {
    "add_": lambda m, x: x[1:].add_(x[:-1]),
    "add_alpha": lambda m, x: x[1:].add_(x[:-1], alpha=2),
    "sub_": lambda m, x: x[1:].sub_(x[:-1]),
    "mul_": lambda m, x: x[1:].mul_(x[:-1]),
    "div_": lambda m, x: x[1:].div_(x[:-1]),
    "copy_": lambda m, x: x[1:].copy_(x[:-1]),
    "copy_back": lambda m, x: x[:-1].copy_(x[1:]),
    "setitem": lambda m, x: x.__setitem__(slice(1, None), x[:-1]),
    "iadd": lambda m, x: x[1:].__iadd__(x[:-1]),
    "pow_": lambda m, x: x[1:].pow_(x[:-1]),
    "atan2_": lambda m, x: x[:-1].atan2_(x[1:]),
    "hypot_": lambda m, x: x[1:].hypot_(x[:-1]),
    "copysign_": lambda m, x: x[1:].copysign_(x[:-1]),
    "lerp_": lambda m, x: x[1:].lerp_(x[:-1], 0.5),
    "addcmul_": lambda m, x: x[1:].addcmul_(m.ones(5), x[:-1]),
    "clamp_": lambda m, x: x[1:].clamp_(x[:-1], None),
    "logical_and_": lambda m, x: x[1:].logical_and_(x[:-1]),
    "scatter_": lambda m, x: x[1:].scatter_(0, m.tensor([0, 1]), x[:-1]),
    "scatter_add_": lambda m, x: x[1:].scatter_add_(0, m.tensor([0, 1]), x[:-1]),
    "index_add_": lambda m, x: x[1:].index_add_(0, m.tensor([0, 1]), x[:2]),
    "index_copy_": lambda m, x: x.index_copy_(0, m.tensor([0, 1]), x[1:3]),
    "0dim_inside": lambda m, x: x[:5].copy_(x[4]),
    "0dim_start": lambda m, x: x[1:].mul_(x[1]),
    "transpose": lambda m, x: x[:4].view(2, 2).copy_(x[:4].view(2, 2).t()),
    "row": lambda m, x: x.view(2, 3).add_(x.view(2, 3)[0]),
    "extra_dim": lambda m, x: x.view(1, 6).add_(x),
    "data_written": lambda m, x: x.data[1:].add_(x[:-1]),
    "data_read": lambda m, x: x[1:].mul_(x.data[:-1]),
    "out": lambda m, x: m.add(x[:5], m.ones(5), out=x[1:]),
    "out_exp": lambda m, x: m.exp(x[:-1], out=x[1:]),
    # allowed
    "self": lambda m, x: x.add_(x),
    "same_view": lambda m, x: x[1:].add_(x[1:]),
    "t_t": lambda m, x: x.view(2, 3).add_(x.view(2, 3).t().t()),
    "disjoint": lambda m, x: x[:3].add_(x[3:]),
    "broadcast_first": lambda m, x: x[1:].copy_(x[:1]),
    "interleaved": lambda m, x: x[::2].copy_(x[1::2]),
    "out_interleaved": lambda m, x: m.add(x[1::2], 1, out=x[::2]),
    "masked_fill_": lambda m, x: x[1:].masked_fill_(m.tensor([True] * 5), x[0]),
    "fill_": lambda m, x: x[1:].fill_(x[1]),
    "index_fill_": lambda m, x: x[1:].index_fill_(0, m.tensor([0]), x[0]),
    "out_self": lambda m, x: m.exp(x, out=x),
    "out_data": lambda m, x: m.exp(x, out=x.data),
    # internal overlap first
    "expanded": lambda m, x: x[:3].expand(2, 3).add_(x[:3]),
    "expanded_copy": lambda m, x: x[:3].expand(2, 3).copy_(m.ones(2, 3)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_overlap_rule_matches_torch(case):
    _both(CASES[case])


def _resize_run(m, via_data):
    x = m.arange(4.0)
    d = x.data
    xv, dv = x[1:], d[1:]
    (d if via_data else x).resize_(8)
    x[0] = 10.0
    d[2] = 20.0
    xv[2] = 30.0
    dv[0] = 40.0
    # (the grown elements past the 4 written are uninitialised: not compared)
    return (x.tolist()[:4], d.tolist()[:4], tuple(x.shape), tuple(d.shape),
            d.data_ptr() == x.data_ptr())


@pytest.mark.parametrize("via_data", [False, True])
def test_resize_with_data_alias_matches_torch(via_data):
    assert _resize_run(tp, via_data) == _resize_run(torch, via_data)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_kthvalue_tie_indices_match_torch(dtype):
    pool = np.array([0.0, 1.0, 2.0, -1.0] + ([np.nan] if dtype != "int64" else []))
    for n in (3, 5, 8, 17, 64):
        a = _R.choice(pool, size=(4, n)).astype(dtype)
        for k in sorted({1, 2, n // 2 + 1, n - 1, n}):
            for dim in (1, -1):
                rt = torch.kthvalue(torch.from_numpy(a.copy()), k, dim)
                rp = tp.kthvalue(tp.tensor(a), k, dim)
                assert rp.indices.tolist() == rt.indices.tolist(), (a, k)
                np.testing.assert_array_equal(rp.values.numpy(), rt.values.numpy())
        at = a.T.copy()
        k = n // 2 + 1
        rt = torch.kthvalue(torch.from_numpy(at), k, 0, keepdim=True)
        rp = tp.kthvalue(tp.tensor(at), k, 0, keepdim=True)
        assert rp.indices.tolist() == rt.indices.tolist()


def test_kthvalue_tie_gradient_matches_torch():
    a = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0], [1.0] * 8])
    xt = torch.tensor(a, requires_grad=True)
    xp = tp.tensor(a, requires_grad=True)
    for k in (2, 5):
        torch.kthvalue(xt, k, 1).values.sum().backward()
        tp.kthvalue(xp, k, 1).values.sum().backward()
    np.testing.assert_array_equal(xp.grad.numpy(), xt.grad.numpy())
