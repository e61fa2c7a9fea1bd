"""Session 48 (h-norm48), against torch 2.13 cpu: the norm family's gradients through the one-op
root ``tp::_norm_root`` -- every ``ord`` of ``vector_norm`` (negative ones with a zero element
included), ``norm``/``dist``/``renorm``/``std``/``std_mean`` at zero and away from it, ``cdist``
with an infinite element -- values and gradients compared on the same inputs (NaN where torch
gives NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402
from tensorplay import linalg as LA  # noqa: E402

_R = np.random.default_rng(4848)
INF = math.inf


def _check(tfn, pfn, *arrays):
    pt = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    pp = [tp.tensor(np.asarray(a, dtype=np.float64), dtype=tp.float64, requires_grad=True)
          for a in arrays]
    rt, rp = tfn(*pt), pfn(*pp)
    assert tuple(rt.shape) == tuple(rp.shape)
    np.testing.assert_allclose(rp.detach().numpy(), rt.detach().numpy(), rtol=1e-9, atol=1e-12,
                               equal_nan=True)
    w = _R.standard_normal(tuple(rt.shape))
    (rt * torch.tensor(w)).sum().backward()
    (rp * tp.tensor(w)).sum().backward()
    for t_, p_ in zip(pt, pp):
        if t_.grad is None:     # torch's undefined gradient (ord 0): tensorplay's is zero
            assert p_.grad is None or not p_.grad.numpy().any()
            continue
        np.testing.assert_allclose(p_.grad.numpy(), t_.grad.numpy(), rtol=1e-7, atol=1e-10,
                                   equal_nan=True)


_X = [[0.0, 0.0, 0.0], [1.5, -2.0, 0.5], [0.0, 3.0, -1.0]]


@pytest.mark.parametrize("p", [2, 3, 1.5, 1, 0.5, 0.25, -0.5, -1, -2.5, INF, -INF, 0])
def test_vector_norm_every_ord(p):
    _check(lambda x: torch.linalg.vector_norm(x, p, 1),
           lambda x: LA.vector_norm(x, p, 1), _X)
    _check(lambda x: torch.linalg.vector_norm(x, p, 1),
           lambda x: LA.vector_norm(x, p, 1), _R.standard_normal((3, 4)))


@pytest.mark.parametrize("p", [2, 3, 0.5, -1])
def test_norm_dist_renorm(p):
    _check(lambda x: torch.norm(x, p, 1), lambda x: tp.norm(x, p, 1), _X)
    a = _R.standard_normal((2, 3))
    _check(lambda x, y: torch.dist(x, y, p), lambda x, y: tp.dist(x, y, p), a, a)
    _check(lambda x, y: torch.dist(x, y, p), lambda x, y: tp.dist(x, y, p), a, a + 1.0)
    if p > 0:
        _check(lambda x: torch.renorm(x, p, 0, 1.0), lambda x: tp.renorm(x, p, 0, 1.0), _X)


def test_std_and_std_mean_masked():
    a = [[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]
    _check(lambda x: x.std(1), lambda x: x.std(1), a)
    _check(lambda x: torch.std_mean(x, 1)[0], lambda x: tp.std_mean(x, 1)[0], a)
    _check(lambda x: x.std(), lambda x: x.std(), _R.standard_normal((3, 4)))


def test_where_untaken_branch_gets_zero_under_inf_and_nan_gradients():
    c = [True, False, True]
    g = [INF, math.nan, -INF]
    xt, yt = (torch.tensor([1.0, 2.0, 3.0], requires_grad=True) for _ in range(2))
    xp, yp = (tp.tensor([1.0, 2.0, 3.0], requires_grad=True) for _ in range(2))
    torch.where(torch.tensor(c), xt, yt).backward(torch.tensor(g))
    tp.where(tp.tensor(c), xp, yp).backward(tp.tensor(g))
    for t_, p_ in ((xt, xp), (yt, yp)):
        np.testing.assert_array_equal(p_.grad.numpy(), t_.grad.numpy())


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 1.5, 0.5, INF])
def test_cdist_with_an_infinite_element(p):
    # (p < 1: the zero difference's gradient is 0 beside an infinite one, as torch's)
    _check(lambda a, b: torch.cdist(a, b, p), lambda a, b: tp.cdist(a, b, p),
           [[0.0, INF, 1.0], [1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
