"""``polygamma(n, +inf)`` as torch 2.13: NaN for n >= 2 (torch's zeta(n + 1, inf)), where
TensorPlay gave 0; trigamma's (n = 1) limit 0 and digamma's inf are kept, and so is -inf (the
poles' sign_fact * inf). Measured with torch 2.13.0+cpu (session 57, fresh56)."""

from __future__ import annotations

import math

import pytest

import tensorplay as tp

INF, NAN = math.inf, math.nan


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert (math.isnan(a) and math.isnan(b)) or a == b, (got, want)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_polygamma_at_infinities_is_torchs(dtype):
    x = tp.tensor([INF, -INF, NAN, 0.0, -1.0], dtype=dtype)
    want = {0: [INF, NAN, NAN, -INF, NAN], 1: [0.0, NAN, NAN, INF, None],
            2: [NAN, -INF, NAN, -INF, -INF], 3: [NAN, INF, NAN, INF, INF],
            4: [NAN, -INF, NAN, -INF, -INF], 5: [NAN, INF, NAN, INF, INF]}
    for n, w in want.items():
        got = tp.polygamma(n, x).tolist()
        keep = [i for i, v in enumerate(w) if v is not None]   # trigamma(-1): finite in torch
        _same([got[i] for i in keep], [w[i] for i in keep])
    assert tp.special.polygamma(2, tp.tensor([INF], dtype=dtype)).isnan().all().item()
    assert tp.tensor([INF], dtype=dtype).polygamma(3).isnan().all().item()


def test_polygamma_large_finite_argument_unchanged():
    x = tp.tensor([1e30, 1e300], dtype=tp.float64)
    # within an ulp: with NumPy 1.26 the sum gives 1.9999999999999996e-90 (nox minimums)
    assert tp.polygamma(2, x).tolist() == pytest.approx([-1e-60, -0.0], rel=1e-15, abs=0)
    assert tp.polygamma(3, x).tolist() == pytest.approx([2e-90, 0.0], rel=1e-15, abs=0)
    assert tp.signbit(tp.polygamma(2, x)).tolist() == [True, True]


def test_trigamma_gradient_at_inf_is_nan():
    # d/dx polygamma(1, x) = polygamma(2, x): NaN at +inf as torch's (it was 0)
    x = tp.tensor([INF, 2.0], requires_grad=True)
    g, = tp.autograd.grad(tp.polygamma(1, x).sum(), x)
    assert math.isnan(g[0].item()) and g[1].item() == pytest.approx(-0.4041138)


@pytest.mark.cuda
def test_cuda_polygamma_at_inf():
    # the reflected branch the cuda backend takes (off NumPy): the same NaN
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    x = tp.tensor([INF, -INF, 2.5], dtype=tp.float64, device="cuda")
    for n in (2, 3, 4):
        r = tp.polygamma(n, x).cpu().tolist()
        c = tp.polygamma(n, x.cpu()).tolist()
        assert math.isnan(r[0]) and r[1] == c[1] and r[2] == pytest.approx(c[2], rel=1e-12)
