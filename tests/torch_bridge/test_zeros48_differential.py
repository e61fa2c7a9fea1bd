"""Session 48 (h-zeros48), against torch 2.13 cpu: gradients under an inf, -inf and NaN incoming
gradient (and a finite one) of the ops whose formulas give exact zeros (sign, floor, ceil, trunc,
round, ``x ** 0``, copysign/nextafter's other, copy_/fill_'s self, masked_fill/masked_scatter
where the mask is set, scatter_reduce prod, qr's right block, maximum/minimum/clamp's losing
side) and of their neighbours that multiply in torch too (remainder, fmod, pow with a tensor
exponent); ``polygamma(n >= 2)`` below -2^20. Values and gradients compared on the same inputs (NaN where torch gives NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402
from tensorplay import linalg as LA  # noqa: E402

INF, NAN = math.inf, math.nan
_R = np.random.default_rng(4849)
X = [-1.5, 0.0, 2.5, -0.5, 3.0, -2.0]
Y = [2.0, -3.0, 0.5, 1.0, 0.0, -0.25]
MASK = [True, False, True, False, False, True]


def _check(tfn, pfn, gval, *arrays, atol=0.0):
    pt = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    pp = [tp.tensor(np.asarray(a, dtype=np.float64), dtype=tp.float64, requires_grad=True)
          for a in arrays]
    rt, rp = tfn(*pt), pfn(*pp)
    assert tuple(rt.shape) == tuple(rp.shape)
    np.testing.assert_allclose(rp.detach().numpy(), rt.detach().numpy(), rtol=1e-12, atol=0,
                               equal_nan=True)
    if gval is None:      # a finite, varied incoming gradient
        w = _R.standard_normal(tuple(rt.shape))
    else:
        w = np.full(tuple(rt.shape), gval)
    rt.backward(torch.tensor(w))
    rp.backward(tp.tensor(w, dtype=tp.float64))
    for t_, p_ in zip(pt, pp):
        if t_.grad is None:     # torch's undefined gradient (vector_norm ord 0): zeros here
            assert p_.grad is None or not p_.grad.numpy().any()
            continue
        np.testing.assert_allclose(p_.grad.numpy(), t_.grad.numpy(), rtol=1e-12, atol=atol,
                                   equal_nan=True)


def _masked(mod):
    return mod.tensor(MASK)


OPS = {
    "sign": (torch.sign, tp.sign, 1),
    "floor": (torch.floor, tp.floor, 1),
    "ceil": (torch.ceil, tp.ceil, 1),
    "trunc": (torch.trunc, tp.trunc, 1),
    "round": (torch.round, tp.round, 1),
    "round_decimals": (lambda x: torch.round(x, decimals=1), lambda x: tp.round(x, decimals=1), 1),
    "pow_0": (lambda x: x ** 0, lambda x: x ** 0, 1),
    "pow_0.0": (lambda x: torch.pow(x, 0.0), lambda x: tp.pow(x, 0.0), 1),
    "pow_2": (lambda x: x ** 2, lambda x: x ** 2, 1),
    "pow_tensor": (lambda x, y: x.abs() ** y.floor(), lambda x, y: x.abs() ** y.floor(), 2),
    "copysign": (torch.copysign, tp.copysign, 2),
    "copysign_number": (lambda x: torch.copysign(x, -1.0), lambda x: tp.copysign(x, -1.0), 1),
    "nextafter": (torch.nextafter, tp.nextafter, 2),
    "remainder": (torch.remainder, tp.remainder, 2),
    "fmod": (torch.fmod, tp.fmod, 2),
    "copy_": (lambda x, y: x.clone().copy_(y), lambda x, y: x.clone().copy_(y), 2),
    "fill_": (lambda x: x.clone().fill_(2.0), lambda x: x.clone().fill_(2.0), 1),
    "masked_fill": (lambda x: x.masked_fill(_masked(torch), 2.0),
                    lambda x: x.masked_fill(_masked(tp), 2.0), 1),
    "masked_fill_tensor": (lambda x, y: x.masked_fill(_masked(torch), y.sum()),
                           lambda x, y: x.masked_fill(_masked(tp), y.sum()), 2),
    "masked_scatter": (lambda x, y: x.masked_scatter(_masked(torch), y),
                       lambda x, y: x.masked_scatter(_masked(tp), y), 2),
    "maximum": (torch.maximum, tp.maximum, 2),
    "minimum": (torch.minimum, tp.minimum, 2),
    "maximum_nan": (lambda x, y: torch.maximum(x, y / y), lambda x, y: tp.maximum(x, y / y), 2),
    "minimum_ties": (lambda x, y: torch.minimum(x.floor(), y.ceil()),
                     lambda x, y: tp.minimum(x.floor(), y.ceil()), 2),
    "clamp": (lambda x: torch.clamp(x, -1.0, 1.0), lambda x: tp.clamp(x, -1.0, 1.0), 1),
    "clamp_min": (lambda x: x.clamp(min=0.0), lambda x: x.clamp(min=0.0), 1),
    "clamp_max": (lambda x: x.clamp(max=0.0), lambda x: x.clamp(max=0.0), 1),
    "clamp_tensor": (lambda x, y: torch.clamp(x, min=y), lambda x, y: tp.clamp(x, min=y), 2),
    "vector_norm_0": (lambda x: torch.linalg.vector_norm(x, 0),
                      lambda x: LA.vector_norm(x, 0), 1),
}


@pytest.mark.parametrize("gval", [INF, -INF, NAN, None])
@pytest.mark.parametrize("name", sorted(OPS))
def test_gradient_under_inf_nan_incoming(name, gval):
    tfn, pfn, k = OPS[name]
    _check(tfn, pfn, gval, *([X, Y][:k]))


@pytest.mark.parametrize("gval", [INF, NAN, None])
def test_scatter_reduce_prod_infinite_self(gval):
    idx = [0, 0, 1, 1, 2, 2]
    _check(lambda x, s: x.scatter_reduce(0, torch.tensor(idx), s, "prod"),
           lambda x, s: x.scatter_reduce(0, tp.tensor(idx), s, "prod"), gval,
           [INF, 2.0, 3.0], [0.0, 2.0, 4.0, 0.0, 0.0, 1.5])


def test_scatter_reduce_prod_ones():
    idx = [0, 0, 1, 1, 2, 2]
    _check(lambda x, s: x.scatter_reduce(0, torch.tensor(idx), s, "prod").sum(),
           lambda x, s: x.scatter_reduce(0, tp.tensor(idx), s, "prod").sum(), 1.0,
           [INF, 2.0, -INF], [0.0, 2.0, 4.0, 0.0, 0.0, 1.5])


def test_qr_wide_q_only():
    # (the square block's gradient agrees to rounding: 1e-14 where torch gives -0.0)
    a = _R.standard_normal((2, 3, 5))
    _check(lambda x: torch.linalg.qr(x)[0], lambda x: LA.qr(x)[0], None, a, atol=1e-12)
    pt = torch.tensor(a, requires_grad=True)
    pp = tp.tensor(a, dtype=tp.float64, requires_grad=True)
    torch.linalg.qr(pt)[0].backward(torch.full((2, 3, 3), INF, dtype=torch.float64))
    LA.qr(pp)[0].backward(tp.full((2, 3, 3), INF, dtype=tp.float64))
    assert not pt.grad[..., 3:].any() and pp.grad.numpy()[..., 3:].tolist() == \
        pt.grad[..., 3:].tolist()     # the right block: exact zeros


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_polygamma_far_negative(n):
    xs = [-2.0 ** 52, -1e300, -2.0 ** 53 - 2, -INF, -2.0 ** 20 - 1, -1e20, -3.0, -2.5, 2.5, NAN]
    for dt_t, dt_p in ((torch.float64, tp.float64), (torch.float32, tp.float32)):
        want = torch.polygamma(n, torch.tensor(xs, dtype=dt_t)).numpy()
        got = tp.polygamma(n, tp.tensor(xs, dtype=dt_p)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6 if dt_t is torch.float32 else 1e-12,
                                   equal_nan=True)
