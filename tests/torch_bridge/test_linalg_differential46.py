"""tensorplay.linalg against torch.linalg (torch 2.13 cpu, session 46): values, gradients (the
backward formulas are torch's, so they must agree on the same inputs, including cholesky's and
eigh's gradients of a whole symmetric matrix), shapes and dtypes, the top-level forms
(``torch.svd``'s V, ``torch.qr``'s ``some``...) and the error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402
from tensorplay import linalg as LA  # noqa: E402

_R = np.random.default_rng(4646)


def _wc(*shape):
    a = _R.uniform(-1, 1, shape)
    return a + shape[-1] * np.eye(shape[-1])


def _spd(*shape):
    m = _R.uniform(-1, 1, shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def _sym(*shape):
    m = _R.uniform(-1, 1, shape)
    return 0.2 * (m + np.swapaxes(m, -1, -2)) + np.diag(1.5 * np.arange(shape[-1]))


def _pair(a, grad=True, dtype="float64"):
    a = np.asarray(a)
    return (torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad),
            tp.tensor(a, dtype=getattr(tp, dtype), requires_grad=grad))


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return x.detach().numpy()


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _check(tfn, pfn, arrays, rtol=1e-9, atol=1e-10, grad=True, dtype="float64"):
    """``tfn`` on torch tensors and ``pfn`` on tensorplay ones: the same values, shapes, dtypes
    and, for float outputs, the same gradients of a fixed random linear loss."""
    pairs = [_pair(a, grad, dtype) for a in arrays]
    rt = _flat(tfn(*[p[0] for p in pairs]))
    rp = _flat(pfn(*[p[1] for p in pairs]))
    assert len(rt) == len(rp)
    loss_t = loss_p = 0
    for x, y in zip(rt, rp):
        assert tuple(x.shape) == tuple(y.shape), (x.shape, y.shape)
        assert str(x.dtype).split(".")[-1] == y.dtype.name
        np.testing.assert_allclose(_np(y), _np(x), rtol=rtol, atol=atol)
        if grad and x.dtype.is_floating_point and x.requires_grad:
            w = _R.standard_normal(tuple(x.shape))
            loss_t = loss_t + (x * torch.tensor(w)).sum()
            loss_p = loss_p + (y * tp.tensor(w)).sum()
    if grad and not isinstance(loss_t, int):
        loss_t.backward()
        loss_p.backward()
        for t_, p_ in pairs:
            assert (t_.grad is None) == (p_.grad is None)
            if t_.grad is not None:
                g_rtol, g_atol = (1e-7, 1e-9) if dtype == "float64" else (1e-4, 1e-5)
                np.testing.assert_allclose(_np(p_.grad), _np(t_.grad), rtol=g_rtol, atol=g_atol)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_det_slogdet_inv_logdet(shape):
    a = _wc(*shape)
    _check(torch.linalg.det, LA.det, [a])
    _check(lambda x: torch.linalg.slogdet(x), LA.slogdet, [a])
    _check(lambda x: torch.linalg.slogdet(-x), lambda x: LA.slogdet(-x), [a])
    _check(torch.linalg.inv, LA.inv, [a])
    _check(lambda x: torch.linalg.inv_ex(x), LA.inv_ex, [a])
    _check(torch.logdet, tp.logdet, [_spd(*shape)])
    _check(torch.inverse, tp.inverse, [a])
    _check(lambda x: x.det(), lambda x: x.det(), [a])
    _check(torch.linalg.det, LA.det, [a.astype(np.float32)], rtol=1e-5, atol=1e-6,
           dtype="float32")


def test_det_gradient_of_singular_matrices_is_torchs_svd_formula():
    """At an exactly singular matrix the gradient is the cofactor matrix: torch's SVD formula,
    which torch takes under create_graph=True. (torch's first-order path instead solves its
    perturbed LU against det * grad = 0 and gives 0 or the cofactors there, as its LU rounds on
    the machine: 0 on the machines of sessions 46-48, the cofactors with 1e-16 residues on
    session 49's; the finite differences agree with the cofactors, see test_linalg46.py.)"""
    sing = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    rank1 = np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 3.0])
    a = np.stack([_wc(3, 3), sing, rank1, np.zeros((3, 3))])
    t, p = _pair(a)
    want, = torch.autograd.grad(torch.linalg.det(t).sum(), t, create_graph=True)
    LA.det(p).sum().backward()
    np.testing.assert_allclose(_np(p.grad), _np(want), rtol=1e-9, atol=1e-12)
    assert _np(want)[1].any()        # (the cofactors: not a vacuous comparison)


def test_solve_forms():
    a = _wc(2, 3, 3)
    _check(torch.linalg.solve, LA.solve, [a, _R.standard_normal((3, 2))])
    _check(torch.linalg.solve, LA.solve, [a, _R.standard_normal(3)])
    _check(torch.linalg.solve, LA.solve, [a, _R.standard_normal((2, 3))])
    _check(lambda x, y: torch.linalg.solve(x, y, left=False),
           lambda x, y: LA.solve(x, y, left=False), [a, _R.standard_normal((2, 4, 3))])
    _check(torch.linalg.solve, LA.solve, [_wc(1, 3, 3), _R.standard_normal((4, 1, 3, 2))])


def test_solve_ex_and_solve_triangular():
    a, b = _wc(2, 3, 3), _R.standard_normal((2, 3, 2))
    _check(torch.linalg.solve_ex, LA.solve_ex, [a, b])
    junk = a + np.tril(_R.standard_normal(a.shape), -1)
    for upper in (True, False):
        for unit in (False, True):
            _check(lambda x, y, u=upper, t=unit: torch.linalg.solve_triangular(
                       x, y, upper=u, unitriangular=t),
                   lambda x, y, u=upper, t=unit: LA.solve_triangular(
                       x, y, upper=u, unitriangular=t), [junk, b])
    _check(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True, left=False),
           lambda x, y: LA.solve_triangular(x, y, upper=True, left=False),
           [junk, _R.standard_normal((2, 4, 3))])


def test_cholesky_gradients_of_the_whole_matrix_match_torch():
    s = _spd(2, 4, 4)
    _check(torch.linalg.cholesky, LA.cholesky, [s])
    _check(lambda x: torch.linalg.cholesky(x, upper=True),
           lambda x: LA.cholesky(x, upper=True), [s])
    _check(lambda x: torch.linalg.cholesky_ex(x), LA.cholesky_ex, [s])
    _check(lambda x: torch.cholesky(x, upper=True), lambda x: tp.cholesky(x, upper=True), [s])


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_qr_matches_torch(shape):
    a = _R.standard_normal(shape)
    _check(torch.linalg.qr, LA.qr, [a])
    _check(lambda x: torch.linalg.qr(x, "r").R, lambda x: LA.qr(x, "r").R, [a], grad=False)
    _check(lambda x: torch.qr(x, some=False), lambda x: tp.qr(x, some=False), [a],
           grad=shape[-2] <= shape[-1])
    t, p = _pair(a, grad=False)
    assert tuple(torch.linalg.qr(t, "r").Q.shape) == tuple(LA.qr(p, "r").Q.shape)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_svd_matches_torch(shape):
    a = _R.standard_normal(shape)
    _check(torch.linalg.svdvals, LA.svdvals, [a])
    # singular vectors are unique up to sign: compare sign-invariant functions of them
    def tfn(x):
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        return u.abs(), s, vh.abs(), u @ torch.diag_embed(s) @ vh
    def pfn(x):
        u, s, vh = LA.svd(x, full_matrices=False)
        return u.abs(), s, vh.abs(), u @ (s.unsqueeze(-1) * vh)
    _check(tfn, pfn, [a])
    _check(lambda x: torch.linalg.svd(x).S, lambda x: LA.svd(x).S, [a])
    _check(lambda x: torch.svd(x).V.abs(), lambda x: tp.svd(x).V.abs(), [a])
    _check(lambda x: torch.svd(x, compute_uv=False), lambda x: tp.svd(x, compute_uv=False),
           [a], grad=False)


def test_eigh_gradients_of_the_whole_matrix_match_torch():
    s = _sym(2, 4, 4)
    _check(torch.linalg.eigvalsh, LA.eigvalsh, [s])
    _check(lambda x: (lambda r: (r[0], r[1].abs()))(torch.linalg.eigh(x)),
           lambda x: (lambda r: (r[0], r[1].abs()))(LA.eigh(x)), [s])
    _check(lambda x: torch.linalg.eigh(x, "U")[1].abs(), lambda x: LA.eigh(x, "U")[1].abs(), [s])


def test_norms_pinv_power_rank_and_friends():
    a = _R.standard_normal((2, 3, 4))
    for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        _check(lambda x, o=o: torch.linalg.matrix_norm(x, o),
               lambda x, o=o: LA.matrix_norm(x, o), [a])
    for o in (2, 1, 3, 0.5, math.inf, -math.inf, 0):
        # ord 0 (a count): torch's result has a zero gradient, tensorplay's none
        _check(lambda x, o=o: torch.linalg.vector_norm(x, o, dim=(0, 2)),
               lambda x, o=o: LA.vector_norm(x, o, dim=(0, 2)), [a], grad=o != 0)
    _check(torch.linalg.norm, LA.norm, [a])
    _check(lambda x: torch.linalg.norm(x, 3, 1, True), lambda x: LA.norm(x, 3, 1, True), [a])
    _check(torch.linalg.pinv, LA.pinv, [a])
    _check(torch.pinverse, tp.pinverse, [a])
    s = a[0] @ a[0].T + np.eye(3)
    _check(lambda x: torch.linalg.pinv(x, hermitian=True),
           lambda x: LA.pinv(x, hermitian=True), [s])
    w = _wc(2, 3, 3)
    for n in (0, 1, 3, 6, -2):
        _check(lambda x, n=n: torch.linalg.matrix_power(x, n),
               lambda x, n=n: LA.matrix_power(x, n), [w])
    _check(torch.linalg.matrix_rank, LA.matrix_rank, [a], grad=False)
    _check(torch.linalg.cond, LA.cond, [w])
    x, y = _R.standard_normal((4, 3)), _R.standard_normal((4, 3))
    _check(torch.linalg.cross, LA.cross, [x, y])
    _check(torch.linalg.vecdot, LA.vecdot, [x, y])
    _check(lambda *m: torch.linalg.multi_dot(m), lambda *m: LA.multi_dot(m),
           [_R.standard_normal(3), _R.standard_normal((3, 5)), _R.standard_normal((5, 2)),
            _R.standard_normal(2)])
    _check(lambda p, q: torch.linalg.lstsq(p, q).solution, lambda p, q: LA.lstsq(p, q).solution,
           [_R.standard_normal((2, 5, 3)), _R.standard_normal((2, 5, 2))])


def test_vector_norm_low_precision_accumulates_in_float32():
    a = (_R.standard_normal((4, 300)) * 30).astype(np.float32)
    for dt in ("float16", "bfloat16"):
        for o in (2, 3, 1, math.inf):
            t = torch.linalg.vector_norm(torch.tensor(a).to(getattr(torch, dt)), o, dim=-1)
            p = LA.vector_norm(tp.tensor(a).to(getattr(tp, dt)), o, dim=-1)
            assert p.dtype.name == dt
            np.testing.assert_array_equal(p.float().numpy(), t.float().numpy())


def test_cdist_and_dist():
    x, y = _R.standard_normal((2, 5, 3)), _R.standard_normal((2, 4, 3))
    for p in (2.0, 1.0, 3.0, math.inf, 0.0):
        _check(lambda a, b, p=p: torch.cdist(a, b, p), lambda a, b, p=p: tp.cdist(a, b, p),
               [x, y], grad=p != 0.0)
    _check(torch.cdist, tp.cdist, [x[0], x[0]])        # zero distances: zero gradients
    _check(lambda a, b: a.dist(b), lambda a, b: a.dist(b), [x, x[::-1].copy()])


def _msg(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the message is compared
        return type(e), str(e)
    return None, None


@pytest.mark.parametrize("case", [
    ("inv singular", lambda m: m.linalg.inv, [[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]),
    ("inv one singular", lambda m: m.linalg.inv, [[0.0, 0.0], [0.0, 0.0]]),
    ("inv non-square", lambda m: m.linalg.inv, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
    ("det 1-d", lambda m: m.linalg.det, [1.0, 2.0]),
    ("cholesky not pd", lambda m: m.linalg.cholesky, [[1.0, 0.0], [0.0, -1.0]]),
    ("cholesky batch", lambda m: m.linalg.cholesky,
     [[[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]]),
], ids=lambda c: c[0])
def test_error_messages_match_torch(case):
    _, get, data = case
    tt, tm = _msg(lambda: get(torch)(torch.tensor(data, dtype=torch.float64)))
    pt, pm = _msg(lambda: get(tp)(tp.tensor(data, dtype=tp.float64)))
    assert tt is not None and pt is not None
    assert issubclass(pt, RuntimeError)
    assert (tt is torch.linalg.LinAlgError) == (pt is tp.linalg.LinAlgError)
    assert pm == tm


def test_dtype_error_messages_match_torch():
    for get in (lambda m: m.linalg.inv, lambda m: m.linalg.det, lambda m: m.linalg.cholesky):
        tt, tm = _msg(lambda: get(torch)(torch.ones(2, 2, dtype=torch.int64)))
        pt, pm = _msg(lambda: get(tp)(tp.ones(2, 2, dtype=tp.int64)))
        assert pm == tm
    tt, tm = _msg(lambda: torch.linalg.solve(torch.eye(3, dtype=torch.float64),
                                             torch.ones(4, 1, dtype=torch.float64)))
    pt, pm = _msg(lambda: LA.solve(tp.eye(3, dtype=tp.float64), tp.ones(4, 1, dtype=tp.float64)))
    assert pm == tm
