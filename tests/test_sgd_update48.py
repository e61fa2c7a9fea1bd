"""The optimizer step ``p.sub_(g, alpha=lr)`` / ``p.add_(g, alpha=a)`` under ``no_grad`` (one
kernel call) gives, bit for bit, NumPy's ``p + g * alpha`` in the tensor's dtype -- the number
converted to that dtype as NumPy converts a Python float -- on every call with the same number
(a learning rate repeats every step), for special numbers and special elements, float32 and
float64, and for an int ``alpha``."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp

_ALPHAS = [0.01, -0.01, 1e-3, 0.1, 3.7, 1e-30, 1e30, 1e39, -1e39, float("inf"), float("-inf"),
           float("nan"), 0.0, -0.0, 2, -3]


def _arrays(dt, seed):
    rng = np.random.default_rng(seed)
    p = rng.standard_normal(257).astype(dt)
    g = rng.standard_normal(257).astype(dt)
    p[:4] = [-0.0, 0.0, np.inf, np.nan]
    g[4:8] = [np.inf, -0.0, 0.0, np.nan]
    g[8:10] = [-0.0, 0.0]
    p[8:10] = [-0.0, -0.0]
    return p, g


def _same_bits(a, b):
    return np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("alpha", _ALPHAS, ids=repr)
def test_add_scaled_is_numpys_value_on_every_call(dt, alpha):
    p0, g0 = _arrays(dt, 1)
    p = tp.tensor(p0.copy(), requires_grad=True)
    g = tp.tensor(g0)
    want = p0.copy()
    for _ in range(3):                     # the same number again: the same value each step
        with np.errstate(all="ignore"):    # alpha in the tensor's dtype, as NumPy 2 takes a
            want = want + g0 * dt(alpha)     # Python float; NumPy 1.x would promote 1e39 to float64
        with tp.no_grad():
            p.add_(g, alpha=alpha)
        got = p.detach().numpy()
        assert got.dtype == dt
        assert _same_bits(got, want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_sub_with_a_learning_rate_is_add_of_its_negation(dt):
    p0, g0 = _arrays(dt, 2)
    for lr in (0.01, 0.01, 1e-4, 0.5, 0.01):
        p = tp.tensor(p0.copy(), requires_grad=True)
        with tp.no_grad():
            p.sub_(tp.tensor(g0), alpha=lr)
        with np.errstate(all="ignore"):
            want = p0 + g0 * -lr
        assert _same_bits(p.detach().numpy(), want)


def test_a_training_loop_of_steps_matches_numpy_bit_for_bit():
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((8, 5)).astype(np.float32)
    x0 = rng.standard_normal((4, 8)).astype(np.float32)
    w = tp.tensor(w0.copy(), requires_grad=True)
    wn = w0.copy()
    x = tp.tensor(x0)
    for _ in range(4):
        (x @ w).sum().backward()
        gn = w.grad.numpy().copy()
        with tp.no_grad():
            w.sub_(w.grad, alpha=0.05)
        w.grad = None
        wn = wn + gn * -0.05
        assert _same_bits(w.detach().numpy(), wn)


def test_the_learning_rate_number_is_not_shared_between_dtypes():
    a32 = tp.tensor(np.ones(3, np.float32))
    a64 = tp.tensor(np.ones(3, np.float64))
    g32 = tp.tensor(np.full(3, 1 / 3, np.float32))
    g64 = tp.tensor(np.full(3, 1 / 3, np.float64))
    with tp.no_grad():
        a32.add_(g32, alpha=0.1)
        a64.add_(g64, alpha=0.1)
    assert a32.dtype is tp.float32 and a64.dtype is tp.float64
    assert _same_bits(a32.numpy(), np.float32(1) + np.full(3, 1 / 3, np.float32) * 0.1)
    assert _same_bits(a64.numpy(), 1.0 + np.full(3, 1 / 3) * 0.1)
