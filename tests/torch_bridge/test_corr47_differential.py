"""Session 47 (h-corr47), against torch 2.13 cpu: gradients at the points where torch's backward
formulas mask or split (a zero norm, ``x == y`` in ``dist``/``cdist``, ties of ``max``/``amax``/
``maximum``, ``clamp`` at its bounds, ``abs`` at 0, ``-inf`` rows of ``logsumexp``/``softmax``,
``std``/``var`` of a constant input...), values and gradients compared on the same inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402
from tensorplay import linalg as LA  # noqa: E402

_R = np.random.default_rng(4747)
INF = math.inf


def _pair(a):
    a = np.asarray(a, dtype=np.float64)
    return (torch.tensor(a, requires_grad=True), tp.tensor(a, dtype=tp.float64, requires_grad=True))


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _check(tfn, pfn, *arrays, values_only_outputs=()):
    """Same values and the same gradients of a fixed random linear loss of the float outputs
    (``values_only_outputs``: output positions holding indices, compared as values only)."""
    pairs = [_pair(a) for a in arrays]
    rt = _flat(tfn(*[p[0] for p in pairs]))
    rp = _flat(pfn(*[p[1] for p in pairs]))
    assert len(rt) == len(rp)
    loss_t = loss_p = None
    for i, (x, y) in enumerate(zip(rt, rp)):
        assert tuple(x.shape) == tuple(y.shape), (x.shape, y.shape)
        np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy(), rtol=1e-9,
                                   atol=1e-12, equal_nan=True)
        if i in values_only_outputs or not x.requires_grad:
            assert y.requires_grad == x.requires_grad, (i, y.requires_grad, x.requires_grad)
            continue
        w = _R.standard_normal(tuple(x.shape))
        lt, lp = (x * torch.tensor(w)).sum(), (y * tp.tensor(w)).sum()
        loss_t = lt if loss_t is None else loss_t + lt
        loss_p = lp if loss_p is None else loss_p + lp
    if loss_t is None:
        return
    loss_t.backward()
    loss_p.backward()
    for k, (t_, p_) in enumerate(pairs):
        gt = None if t_.grad is None else t_.grad.numpy()
        gp = None if p_.grad is None else p_.grad.numpy()
        if gt is None:      # torch's undefined gradient (norm of ord 0): tensorplay's is zero
            assert gp is None or not gp.any(), (k, gp)
            continue
        assert gp is not None, k
        np.testing.assert_allclose(gp, gt, rtol=1e-7, atol=1e-10, equal_nan=True,
                                   err_msg=f"gradient of input {k}")


Z3 = np.zeros(3)
MIXED = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 0.0], [3.0, -3.0, 0.0]])
ORDS = [1, 2, 3, 0.5, 1.5, INF, -INF, 0]


# -- the norm family -------------------------------------------------------------------------
@pytest.mark.parametrize("p", ORDS + ["fro"])
def test_norm_at_zero_and_zero_rows(p):
    _check(lambda x: torch.norm(x, p), lambda x: tp.norm(x, p), Z3)
    _check(lambda x: torch.norm(x, p, dim=1), lambda x: tp.norm(x, p, dim=1), MIXED)
    _check(lambda x: torch.norm(x, p, dim=1, keepdim=True),
           lambda x: tp.norm(x, p, dim=1, keepdim=True), MIXED)
    _check(lambda x: x.norm(p, dim=0), lambda x: x.norm(p, dim=0), MIXED)


def test_norm_nuc():
    a = np.stack([MIXED, np.zeros((3, 3))])
    _check(lambda x: torch.norm(x, "nuc", dim=(1, 2)), lambda x: tp.norm(x, "nuc", dim=(1, 2)), a)
    _check(lambda x: torch.norm(x, "nuc"), lambda x: tp.norm(x, "nuc"), np.zeros((2, 3)))
    _check(lambda x: x.norm("nuc", dim=(0, 2), keepdim=True),
           lambda x: x.norm("nuc", dim=(0, 2), keepdim=True), a)
    for bad in (lambda m: m.norm(m.ones(3, 2, 2), "nuc"), lambda m: m.norm(m.ones(2), "nuc"),
                lambda m: m.norm(m.ones(2, 2), "bad")):
        with pytest.raises(RuntimeError) as et:
            bad(torch)
        with pytest.raises(RuntimeError) as ep:
            bad(tp)
        assert str(ep.value) == str(et.value)


@pytest.mark.parametrize("p", ORDS)
def test_vector_norm_and_linalg_norm(p):
    _check(lambda x: torch.linalg.vector_norm(x, p), lambda x: LA.vector_norm(x, p), Z3)
    _check(lambda x: torch.linalg.vector_norm(x, p, dim=-1),
           lambda x: LA.vector_norm(x, p, dim=-1), MIXED)
    _check(lambda x: torch.linalg.norm(x, p, dim=1), lambda x: LA.norm(x, p, dim=1), MIXED)
    _check(lambda x: torch.linalg.norm(x, p), lambda x: LA.norm(x, p), MIXED[1])


def test_vector_norm_ord0_has_history():
    x_t, x_p = _pair(MIXED)
    rt, rp = torch.linalg.vector_norm(x_t, 0), LA.vector_norm(x_p, 0)
    assert rt.grad_fn is not None and rp.grad_fn is not None
    assert float(rp) == float(rt)


@pytest.mark.parametrize("ord_", ["fro", "nuc", 1, -1, 2, -2, INF, -INF])
def test_matrix_norm_at_zero(ord_):
    _check(lambda x: torch.linalg.matrix_norm(x, ord_), lambda x: LA.matrix_norm(x, ord_),
           np.zeros((2, 3)))
    _check(lambda x: torch.linalg.matrix_norm(x, ord_), lambda x: LA.matrix_norm(x, ord_),
           np.stack([MIXED, np.zeros((3, 3))]))


@pytest.mark.parametrize("p", [o for o in ORDS if o != 0])
def test_dist_at_equal_inputs(p):
    a = MIXED
    _check(lambda x, y: torch.dist(x, y, p), lambda x, y: tp.dist(x, y, p), a, a)
    b = a.copy()
    b[0] += 1.0
    _check(lambda x, y: torch.dist(x, y, p), lambda x, y: tp.dist(x, y, p), a[1], b[0] * 0)
    _check(lambda x, y: x.dist(y, p), lambda x, y: x.dist(y, p), a, b)


def test_dist_ord0():
    # torch's dist backward for p = 0 fails itself ("Expected a proper Tensor but got None"):
    # values and history only
    for a, b in ((MIXED, MIXED), (MIXED, MIXED * 0)):
        (xt, yt), (xp, yp) = zip(_pair(a), _pair(b))
        rt, rp = torch.dist(xt, yt, 0), tp.dist(xp, yp, 0)
        assert float(rp) == float(rt) and rp.requires_grad and rt.requires_grad


@pytest.mark.parametrize("p", [0, 1, 2, 3, 0.5, INF])
def test_cdist_with_equal_rows(p):
    x1 = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    x2 = np.array([[0.0, 1.0], [2.0, 0.0]])
    _check(lambda a, b: torch.cdist(a, b, p), lambda a, b: tp.cdist(a, b, p), x1, x2)
    _check(lambda a, b: torch.cdist(a, b, p), lambda a, b: tp.cdist(a, b, p), x1, x1)


@pytest.mark.parametrize("p", [1, 2, 3, 0.5])
def test_renorm_with_zero_rows(p):
    _check(lambda x: torch.renorm(x, p, 0, 1.0), lambda x: tp.renorm(x, p, 0, 1.0), MIXED)
    _check(lambda x: torch.renorm(x, p, 1, 2.0), lambda x: tp.renorm(x, p, 1, 2.0), MIXED)


# -- the sweep: other ops whose torch backward masks or splits at these points -------------------
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 2.0], [0.0, -5.0, 0.0, -5.0]])
NO_TIES = np.array([[1.0, 3.0, 2.5, -1.0], [2.0, 0.5, 4.0, 1.0], [0.0, -5.0, 0.5, -4.0]])

SWEEP = {
    "abs": (torch.abs, tp.abs, [np.array([0.0, -0.0, 1.0, -2.0])]),
    "clamp": (lambda x: torch.clamp(x, -1.0, 1.0), lambda x: tp.clamp(x, -1.0, 1.0),
              [np.array([-1.0, 1.0, 0.5, -2.0, 2.0])]),
    "clamp_min": (lambda x: torch.clamp(x, min=0.0), lambda x: tp.clamp(x, min=0.0),
                  [np.array([0.0, -1.0, 1.0])]),
    "clamp_tensor_bounds": (lambda x, lo: torch.clamp(x, lo, lo + 1),
                            lambda x, lo: tp.clamp(x, lo, lo + 1),
                            [np.array([0.0, 1.0, 2.0, -3.0, 5.0, -5.0]),
                             np.array([0.0, 0.0, 1.0, -3.0, 1.0, 1.0])]),
    "clamp_tensor_lo_only": (lambda x, lo: torch.clamp(x, min=lo),
                             lambda x, lo: tp.clamp(x, min=lo),
                             [np.array([[0.0, 1.0, -2.0]]), np.array([[0.0], [1.0]])]),
    "clamp_max_tensor": (lambda x, hi: torch.clamp_max(x, hi), lambda x, hi: tp.clamp_max(x, hi),
                         [np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 1.0])]),
    "amax": (lambda x: torch.amax(x, 1), lambda x: tp.amax(x, 1), [TIES]),
    "amin": (lambda x: torch.amin(x, 1), lambda x: tp.amin(x, 1), [TIES]),
    "amax_all": (torch.amax, tp.amax, [TIES]),
    "max_all": (torch.max, tp.max, [TIES]),
    "min_all": (torch.min, tp.min, [TIES]),
    "max_dim": (lambda x: torch.max(x, 1), lambda x: tp.max(x, 1), [TIES]),
    "min_dim": (lambda x: torch.min(x, 1), lambda x: tp.min(x, 1), [TIES]),
    "maximum": (torch.maximum, tp.maximum, [TIES, TIES[::-1].copy() * 0 + 2.0]),
    "minimum": (torch.minimum, tp.minimum, [TIES, np.full((3, 4), 2.0)]),
    "median_all": (torch.median, tp.median, [np.array([1.0, 2.0, 2.0, 3.0, 2.0])]),
    "median_dim": (lambda x: torch.median(x, 1), lambda x: tp.median(x, 1), [TIES]),
    "kthvalue": (lambda x: torch.kthvalue(x, 2, 1), lambda x: tp.kthvalue(x, 2, 1),
                 [NO_TIES]),
    "sort": (lambda x: torch.sort(x, dim=1, stable=True),
             lambda x: tp.sort(x, dim=1, stable=True), [TIES]),
    "topk": (lambda x: torch.topk(x, 2, 1), lambda x: tp.topk(x, 2, 1), [NO_TIES]),
    "where": (lambda x, y: torch.where(x > 0, x, y), lambda x, y: tp.where(x > 0, x, y),
              [TIES, np.ones((3, 4))]),
    "std_const": (lambda x: torch.std(x, 1), lambda x: tp.std(x, 1), [TIES]),
    "var_const": (lambda x: torch.var(x, 1), lambda x: tp.var(x, 1), [TIES]),
    "std_all_const": (torch.std, tp.std, [np.full((2, 3), 1.5)]),
    "logsumexp_neginf": (lambda x: torch.logsumexp(x, 1), lambda x: tp.logsumexp(x, 1),
                         [np.array([[-INF, -INF], [0.0, -INF], [1.0, 2.0]])]),
    "softmax_neginf": (lambda x: torch.softmax(x, 1), lambda x: tp.softmax(x, 1),
                       [np.array([[0.0, -INF], [1.0, 2.0]])]),
    "log_softmax_neginf": (lambda x: torch.log_softmax(x, 1), lambda x: tp.log_softmax(x, 1),
                           [np.array([[0.0, -INF], [1.0, 2.0]])]),
    "cummax": (lambda x: torch.cummax(x, 1), lambda x: tp.cummax(x, 1), [TIES]),
    "cummin": (lambda x: torch.cummin(x, 1), lambda x: tp.cummin(x, 1), [TIES]),
    "prod_zeros": (lambda x: torch.prod(x, 1), lambda x: tp.prod(x, 1), [TIES]),
    "sqrt_zero": (torch.sqrt, tp.sqrt, [np.array([0.0, 1.0])]),
}
_INDEX_OUTPUT = {"max_dim", "min_dim", "median_dim", "kthvalue", "sort", "topk", "cummax",
                 "cummin"}


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_masked_gradients_sweep(name):
    tfn, pfn, arrays = SWEEP[name]
    _check(tfn, pfn, *arrays, values_only_outputs=(1,) if name in _INDEX_OUTPUT else ())


@pytest.mark.parametrize("name", ["kthvalue", "topk"])
def test_tied_selection_values_and_gradient_mass(name):
    """Which of tied elements ``kthvalue``/``topk`` pick is implementation-defined (torch
    documents no order for ties; its cpu kernels and tensorplay's pick differently): the values
    agree, and each selected value's whole gradient lands on one element equal to it."""
    (xt,), (xp,) = zip(_pair(TIES))
    f = {"kthvalue": lambda m, x: m.kthvalue(x, 2, 1), "topk": lambda m, x: m.topk(x, 2, 1)}[name]
    vt, _ = f(torch, xt)
    vp, ip = f(tp, xp)
    np.testing.assert_array_equal(vp.detach().numpy(), vt.detach().numpy())
    vp.sum().backward()
    g = xp.grad.numpy()
    assert g.sum() == vp.numel() and set(np.unique(g)) <= {0.0, 1.0}
    np.testing.assert_array_equal(np.take_along_axis(TIES, ip.numpy().reshape(3, -1), 1),
                                  vp.detach().numpy().reshape(3, -1))
