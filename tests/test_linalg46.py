"""tensorplay.linalg (session 46): values against numpy.linalg and algebraic identities (A inv(A)
= I, QR/SVD/eigh reconstruct), batched and empty inputs, float32/float64, torch's errors
(LinAlgError, a RuntimeError), the fake rules' batched shapes, the torch-style top-level forms
and Tensor methods, and gradients against finite differences (gradcheck; cholesky and eigh on
symmetrised inputs, as torch's own tests). Torch-free."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake
from tensorplay import linalg as LA

F64 = tp.float64
_R = np.random.default_rng(46)


def _t(a, grad=False, dtype=None):
    return tp.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _wc(*shape):
    """Well-conditioned (diagonally dominant) matrices."""
    a = _R.uniform(-1, 1, shape)
    n = shape[-1]
    return a + n * np.eye(n)


def _spd(*shape):
    m = _R.uniform(-1, 1, shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def _sym(*shape):
    m = _R.uniform(-1, 1, shape)
    return 0.2 * (m + np.swapaxes(m, -1, -2)) + np.diag(1.5 * np.arange(shape[-1]))


def _close(t, ref, rtol=1e-10, atol=1e-10):
    assert isinstance(t, tp.Tensor)
    np.testing.assert_allclose(t.numpy(), ref, rtol=rtol, atol=atol)


def _gc(fn, *xs):
    assert tp.autograd.gradcheck(fn, xs, eps=1e-6, atol=1e-6, rtol=1e-4)


# -- values ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 3, 3)])
def test_det_slogdet_inv_match_numpy(shape):
    a = _wc(*shape)
    A = _t(a)
    _close(LA.det(A), np.linalg.det(a))
    s, ld = LA.slogdet(A)
    ns, nld = np.linalg.slogdet(a)
    _close(s, ns)
    _close(ld, nld)
    assert LA.slogdet(A).logabsdet is not None and LA.slogdet(A).sign.shape == shape[:-2]
    inv = LA.inv(A)
    _close(inv, np.linalg.inv(a))
    # the identity A @ inv(A) = I, batched
    _close(A @ inv, np.broadcast_to(np.eye(shape[-1]), shape), atol=1e-12)
    r = LA.inv_ex(A)
    assert r.info.dtype is tp.int32 and r.info.shape == shape[:-2] and not r.info.any()


def test_float32_keeps_its_dtype():
    a = _wc(2, 3, 3).astype(np.float32)
    A = _t(a)
    for r in (LA.det(A), LA.inv(A), LA.slogdet(A)[1], LA.svd(A)[1], LA.qr(A)[0],
              LA.cholesky(_t(_spd(3, 3).astype(np.float32))), LA.eigh(A + A.mT)[0],
              LA.solve(A, A), LA.pinv(A), LA.matrix_norm(A, "nuc"), LA.vector_norm(A)):
        assert r.dtype is tp.float32
    _close(LA.inv(A), np.linalg.inv(a), rtol=1e-5, atol=1e-6)


def test_solve_matrix_vector_broadcast_and_left():
    a, b = _wc(2, 3, 3), _R.standard_normal((3, 2))
    A, B = _t(a), _t(b)
    _close(LA.solve(A, B), np.linalg.solve(a, np.broadcast_to(b, (2, 3, 2))))
    v = _R.standard_normal(3)
    _close(LA.solve(A, _t(v)), np.linalg.solve(a, np.broadcast_to(v, (2, 3))[..., None])[..., 0])
    # B of A's shape without its last dim: a batch of vectors (torch's rule)
    vb = _R.standard_normal((2, 3))
    x = LA.solve(A, _t(vb))
    assert x.shape == (2, 3)
    _close((A @ x.unsqueeze(-1)).squeeze(-1), vb)
    # X A = B
    bl = _R.standard_normal((2, 4, 3))
    xl = LA.solve(A, _t(bl), left=False)
    _close(xl @ A, bl)
    # batch dims broadcast both ways
    a1, b1 = _wc(1, 3, 3), _R.standard_normal((4, 1, 3, 2))
    _close(LA.solve(_t(a1), _t(b1)), np.linalg.solve(np.broadcast_to(a1, (4, 1, 3, 3)), b1))


def test_cholesky_lower_upper_and_reads_one_triangle():
    a = _spd(2, 4, 4)
    L = LA.cholesky(_t(a))
    _close(L, np.linalg.cholesky(a))
    _close(L @ L.mT, a)
    U = LA.cholesky(_t(a), upper=True)
    _close(U, np.swapaxes(np.linalg.cholesky(a), -1, -2))
    # lower reads the lower triangle only, upper the upper one (as LAPACK and torch)
    junk_up = np.tril(a) + np.triu(_R.standard_normal(a.shape), 1)
    _close(LA.cholesky(_t(junk_up)), L.numpy())
    junk_low = np.triu(a) + np.tril(_R.standard_normal(a.shape), -1)
    _close(LA.cholesky(_t(junk_low), upper=True), U.numpy())
    assert tp.cholesky(_t(a), upper=True).shape == (2, 4, 4)
    _close(_t(a).cholesky(), L.numpy())


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (3, 2, 6)])
def test_qr_modes_reconstruct_and_match_numpy(shape):
    a = _R.standard_normal(shape)
    A = _t(a)
    m, n = shape[-2:]
    k = min(m, n)
    Q, R = LA.qr(A)
    nq, nr = np.linalg.qr(a)
    _close(Q, nq)
    _close(R, nr)
    assert Q.shape == shape[:-2] + (m, k) and R.shape == shape[:-2] + (k, n)
    _close(Q @ R, a)
    _close(Q.mT @ Q, np.broadcast_to(np.eye(k), shape[:-2] + (k, k)), atol=1e-12)
    _close(R, np.triu(R.numpy()))
    Qc, Rc = LA.qr(A, mode="complete")
    assert Qc.shape == shape[:-2] + (m, m) and Rc.shape == shape[:-2] + (m, n)
    _close(Qc @ Rc, a)
    Qr, Rr = LA.qr(A, mode="r")
    assert Qr.shape == (0,) and Qr.numel() == 0
    _close(Rr, nr)
    q2, r2 = tp.qr(A, some=False)
    _close(q2, Qc.numpy())
    assert type(tp.qr(A)).__name__ == "qr" and type(LA.qr(A)).__name__ == "linalg_qr"


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (3, 2, 6)])
def test_svd_reconstructs_and_matches_numpy(shape):
    a = _R.standard_normal(shape)
    A = _t(a)
    m, n = shape[-2:]
    k = min(m, n)
    U, S, Vh = LA.svd(A, full_matrices=False)
    _close(S, np.linalg.svd(a, compute_uv=False))
    _close(U @ (S.unsqueeze(-1) * Vh), a)
    assert U.shape == shape[:-2] + (m, k) and Vh.shape == shape[:-2] + (k, n)
    Uf, Sf, Vhf = LA.svd(A)
    assert Uf.shape == shape[:-2] + (m, m) and Vhf.shape == shape[:-2] + (n, n)
    _close(Uf.mT @ Uf, np.broadcast_to(np.eye(m), shape[:-2] + (m, m)), atol=1e-12)
    _close(Vhf @ Vhf.mT, np.broadcast_to(np.eye(n), shape[:-2] + (n, n)), atol=1e-12)
    _close(LA.svdvals(A), S.numpy())
    # torch.svd: V, not Vh; compute_uv=False gives zero U and V of the full shapes
    u, s, v = tp.svd(A)
    _close(u @ (s.unsqueeze(-1) * v.mT), a)
    assert v.shape == shape[:-2] + (n, k)
    u0, s0, v0 = tp.svd(A, compute_uv=False)
    assert u0.shape == shape[:-2] + (m, m) and v0.shape == shape[:-2] + (n, n)
    assert not u0.any() and not v0.any()
    _close(s0, S.numpy())
    _close(tp.svd(A, some=False).U, Uf.numpy())


def test_eigh_and_eigvalsh():
    a = _sym(2, 4, 4)
    A = _t(a)
    w, V = LA.eigh(A)
    _close(w, np.linalg.eigh(a)[0])
    _close(V @ (w.unsqueeze(-1) * V.mT), a)
    _close(LA.eigvalsh(A), w.numpy())
    # UPLO: which triangle is read
    junk = np.triu(a) + np.tril(_R.standard_normal(a.shape), -1)
    _close(LA.eigvalsh(_t(junk), "U"), w.numpy())
    _close(LA.eigh(_t(junk), UPLO="U").eigenvalues, w.numpy())


def test_norms_match_numpy():
    a = _R.standard_normal((2, 3, 4))
    A = _t(a)
    for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        _close(LA.matrix_norm(A, o), np.linalg.norm(a, o, axis=(-2, -1)))
        _close(LA.matrix_norm(A, o, dim=(0, 2)), np.linalg.norm(a, o, axis=(0, 2)))
        r = LA.matrix_norm(A, o, keepdim=True)
        assert r.shape == (2, 1, 1)
    for o in (2, 1, 3, 0.5, math.inf, -math.inf, 0):
        ref = np.linalg.norm(a.reshape(-1), o)
        _close(LA.vector_norm(A, o), ref)
        _close(LA.vector_norm(A, o, dim=(0, 2), keepdim=True),
               np.linalg.norm(np.moveaxis(a, 1, -1).reshape(-1, 3), o, axis=0).reshape(1, 3, 1))
    # linalg.norm's dispatch: vector over one dim, matrix over two, everything for ord=None
    _close(LA.norm(A), np.linalg.norm(a.reshape(-1)))
    _close(LA.norm(A, 3, dim=1), np.linalg.norm(a, 3, axis=1))
    _close(LA.norm(A, "nuc", dim=(1, 2)), np.linalg.norm(a, "nuc", axis=(1, 2)))
    _close(LA.norm(A[0], 1), np.linalg.norm(a[0], 1))
    _close(LA.norm(A[0, 0], 1), np.linalg.norm(a[0, 0], 1))
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        LA.norm(A, 2)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        LA.matrix_norm(A, 3)
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        LA.vector_norm(tp.tensor([1, 2]))
    r = LA.vector_norm(tp.tensor([3.0, 4.0], dtype=tp.float32), dtype=F64)
    assert r.dtype is F64 and r.item() == 5.0


def test_cond_matches_numpy():
    a = _wc(2, 3, 3)
    for p in (None, 2, -2, "fro", "nuc", 1, math.inf):
        _close(LA.cond(_t(a), p), np.linalg.cond(a, p), rtol=1e-9)


def test_pinv_rank_lstsq():
    a = _R.standard_normal((2, 4, 3))
    A = _t(a)
    _close(LA.pinv(A), np.linalg.pinv(a))
    s = a[0] @ a[0].T          # rank 3 of 4, symmetric
    _close(LA.pinv(_t(s), hermitian=True), np.linalg.pinv(s, hermitian=True), atol=1e-9)
    _close(LA.pinv(_t(s)), np.linalg.pinv(s), atol=1e-9)
    assert LA.matrix_rank(_t(s)).item() == 3 == np.linalg.matrix_rank(s)
    assert LA.matrix_rank(_t(s), hermitian=True).item() == 3
    assert LA.matrix_rank(A).tolist() == [3, 3] and LA.matrix_rank(A).dtype is tp.int64
    assert LA.matrix_rank(_t(s), atol=1e30).item() == 0
    _close(tp.pinverse(A), np.linalg.pinv(a, rcond=1e-15))
    _close(A.pinverse(), np.linalg.pinv(a, rcond=1e-15))
    b = _R.standard_normal((2, 4, 2))
    r = LA.lstsq(A, _t(b))
    _close(r.solution, np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0] for i in range(2)]))
    assert r.rank.tolist() == [3, 3]
    assert LA.pinv(tp.zeros(2, 0, 3, dtype=F64)).shape == (2, 3, 0)


def test_matrix_power_cross_multi_dot_vecdot():
    a = _wc(2, 3, 3)
    A = _t(a)
    for n in (0, 1, 2, 3, 5, 8, -1, -3):
        _close(LA.matrix_power(A, n), np.linalg.matrix_power(a, n), rtol=1e-9)
    _close(A.matrix_power(4), np.linalg.matrix_power(a, 4))
    _close(tp.matrix_power(A, 2), a @ a)
    x, y = _R.standard_normal((4, 3)), _R.standard_normal((4, 3))
    _close(LA.cross(_t(x), _t(y)), np.cross(x, y))
    _close(LA.cross(_t(x.T), _t(y.T), dim=0), np.cross(x, y).T)
    with pytest.raises(RuntimeError, match="must have length 3"):
        LA.cross(_t(x.T), _t(y.T))
    ms = [_R.standard_normal(s) for s in ((3,), (3, 10), (10, 2), (2, 4), (4,))]
    ref = ms[0] @ ms[1] @ ms[2] @ ms[3] @ ms[4]
    _close(LA.multi_dot([_t(m) for m in ms]), ref)
    assert LA.multi_dot([_t(ms[1]), _t(ms[2])]).shape == (3, 2)
    with pytest.raises(RuntimeError, match="at least 2 tensors"):
        LA.multi_dot([_t(ms[1])])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        LA.multi_dot([_t(ms[1]), _t(ms[3])])
    _close(LA.vecdot(_t(x), _t(y)), (x * y).sum(-1))
    _close(LA.vecdot(_t(x), _t(y), dim=0), (x * y).sum(0))


def test_top_level_forms_and_methods():
    a = _wc(2, 3, 3)
    A = _t(a)
    _close(tp.det(A), np.linalg.det(a))
    _close(A.det(), np.linalg.det(a))
    _close(tp.inverse(A), np.linalg.inv(a))
    _close(A.inverse(), np.linalg.inv(a))
    s = tp.slogdet(A)
    assert type(s).__name__ == "slogdet" and s.logabsdet.shape == (2,)
    _close(A.slogdet()[1], np.linalg.slogdet(a)[1])
    # logdet: NaN for a negative determinant, -inf for a zero one
    d = tp.tensor([[[2.0, 0.0], [0.0, 3.0]], [[-1.0, 0.0], [0.0, 1.0]],
                   [[1.0, 2.0], [2.0, 4.0]]], dtype=F64)
    ld = tp.logdet(d).tolist()
    assert ld[0] == pytest.approx(math.log(6.0)) and math.isnan(ld[1]) and ld[2] == -math.inf
    _close(d[0].logdet(), math.log(6.0))
    x, y = _R.standard_normal((2, 5, 3)), _R.standard_normal((2, 4, 3))
    ref = np.sqrt(((x[:, :, None, :] - y[:, None, :, :]) ** 2).sum(-1))
    _close(tp.cdist(_t(x), _t(y)), ref)
    ref1 = np.abs(x[:, :, None, :] - y[:, None, :, :]).sum(-1)
    _close(tp.cdist(_t(x), _t(y), p=1.0), ref1)
    refi = np.abs(x[:, :, None, :] - y[:, None, :, :]).max(-1)
    _close(tp.cdist(_t(x), _t(y), p=math.inf), refi)
    assert tp.cdist(_t(x[0]), _t(y)).shape == (2, 5, 4)     # batch dims broadcast
    _close(_t(x).dist(_t(x) + 1.0), math.sqrt(30.0))
    _close(tp.dist(_t(x), _t(x) + 1.0, 1), 30.0)
    with pytest.raises(RuntimeError, match="same number of columns"):
        tp.cdist(_t(x), _t(y[..., :2]))
    with pytest.raises(RuntimeError, match="at least 2D"):
        tp.cdist(_t(x[0, 0]), _t(y))
    with pytest.raises(RuntimeError, match="floating-point"):
        tp.cdist(tp.ones(2, 3, dtype=tp.int64), _t(y[0]))
    assert tp.linalg is LA and tp.linalg.matmul(A, A).shape == (2, 3, 3)
    _close(LA.diagonal(A), np.diagonal(a, axis1=-2, axis2=-1))


def test_out_arguments():
    a = _wc(3, 3)
    A = _t(a)
    o = tp.empty(3, 3, dtype=F64)
    assert LA.inv(A, out=o) is o
    _close(o, np.linalg.inv(a))
    q, r = tp.empty(0, dtype=F64), tp.empty(0, dtype=F64)
    res = LA.qr(A, out=(q, r))
    assert res[0] is q and res[1] is r
    _close(q @ r, a)
    d = tp.empty((), dtype=F64)
    LA.det(A, out=d)
    _close(d, np.linalg.det(a))
    m = tp.empty(3, 3, dtype=F64)
    assert LA.matmul(A, A, out=m) is m
    _close(m, a @ a)


# -- empty inputs ----------------------------------------------------------------------------------
def test_empty_batches_and_empty_matrices():
    E = tp.zeros(0, 3, 3, dtype=F64)
    assert LA.det(E).shape == (0,)
    assert LA.inv(E).shape == (0, 3, 3)
    assert LA.inv_ex(E).info.shape == (0,)
    assert [t.shape for t in LA.slogdet(E)] == [(0,), (0,)]
    assert LA.cholesky(E).shape == (0, 3, 3)
    assert [t.shape for t in LA.qr(E)] == [(0, 3, 3), (0, 3, 3)]
    assert [t.shape for t in LA.svd(E)] == [(0, 3, 3), (0, 3), (0, 3, 3)]
    assert [t.shape for t in LA.eigh(E)] == [(0, 3), (0, 3, 3)]
    assert LA.solve(E, tp.zeros(0, 3, 2, dtype=F64)).shape == (0, 3, 2)
    Z = tp.zeros(2, 0, 0, dtype=F64)
    assert LA.det(Z).tolist() == [1.0, 1.0]          # the empty product, as torch
    assert LA.inv(Z).shape == (2, 0, 0)
    W = tp.zeros(0, 4, dtype=F64)
    assert [t.shape for t in LA.qr(W)] == [(0, 0), (0, 4)]
    assert [t.shape for t in LA.svd(W, full_matrices=False)] == [(0, 0), (0,), (0, 4)]


# -- errors ----------------------------------------------------------------------------------------
def test_errors_as_torch():
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match=r"linalg.inv: A must be batches of square matrices, "
                                           r"but they are 2 by 3 matrices"):
        LA.inv(tp.zeros(2, 3, dtype=F64))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        LA.det(tp.zeros(3, dtype=F64))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        LA.det(tp.zeros(3, 3, dtype=tp.int64))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        LA.inv(tp.zeros(3, 3, dtype=tp.float16))
    sing = np.stack([np.eye(3), [[1.0, 2, 3], [2, 4, 6], [0, 0, 1]]])
    with pytest.raises(LA.LinAlgError, match=r"linalg.inv: \(Batch element 1\): The diagonal "
                                             r"element 2 is zero, the inversion could not be "
                                             r"completed because the input matrix is singular."):
        LA.inv(_t(sing))
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: The diagonal element 1 is zero"):
        tp.inverse(tp.zeros(2, 2, dtype=F64))
    r = LA.inv_ex(_t(sing))
    assert r.info.tolist() == [0, 2]
    _close(r.inverse[0], np.eye(3))
    with pytest.raises(LA.LinAlgError, match="The solver failed because the input matrix is "
                                             "singular"):
        LA.solve(_t(sing), _t(np.ones((3, 1))))
    notpd = np.stack([_spd(3, 3), np.diag([1.0, -1.0, 1.0])])
    with pytest.raises(LA.LinAlgError, match=r"linalg.cholesky: \(Batch element 1\): The "
                                             r"factorization could not be completed because the "
                                             r"input is not positive-definite \(the leading minor "
                                             r"of order 2 is not positive-definite\)."):
        LA.cholesky(_t(notpd))
    c = LA.cholesky_ex(_t(notpd))
    assert c.info.tolist() == [0, 2] and c.info.dtype is tp.int32
    _close(c.L[0], np.linalg.cholesky(notpd[0]))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation "
                                           r"AX = B \(3x3 and 4x1\)"):
        LA.solve(tp.eye(3, dtype=F64), tp.ones(4, 1, dtype=F64))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype, but found "
                                           "A of type Double and B of type Float"):
        LA.solve(tp.eye(3, dtype=F64), tp.ones(3, 1))
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'full'"):
        LA.qr(tp.eye(3, dtype=F64), mode="full")
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(tp.eye(3, dtype=F64), "X")
    with pytest.raises(TypeError, match="must be Tensor"):
        LA.det([[1.0]])


def test_fake_rules_give_batched_shapes():
    with fake.FakeTensorMode():
        A = tp.zeros(5, 2, 4, 3, dtype=tp.float32)
        S = tp.zeros(5, 2, 3, 3, dtype=F64)
        assert LA.qr(A).Q.shape == (5, 2, 4, 3) and LA.qr(A, "complete").Q.shape == (5, 2, 4, 4)
        assert LA.qr(A, "r").Q.shape == (0,) and LA.qr(A, "r").R.shape == (5, 2, 3, 3)
        u, s, vh = LA.svd(A)
        assert (u.shape, s.shape, vh.shape) == ((5, 2, 4, 4), (5, 2, 3), (5, 2, 3, 3))
        assert s.dtype is tp.float32 and u.is_fake
        assert LA.svd(A, False).U.shape == (5, 2, 4, 3)
        assert LA.det(S).shape == (5, 2) and LA.slogdet(S).sign.shape == (5, 2)
        assert LA.inv_ex(S).info.dtype is tp.int32 and LA.inv_ex(S).info.shape == (5, 2)
        assert LA.cholesky_ex(S).L.shape == (5, 2, 3, 3)
        assert LA.eigh(S).eigenvalues.shape == (5, 2, 3)
        assert LA.solve(S, tp.zeros(2, 3, 7, dtype=F64)).shape == (5, 2, 3, 7)
        with pytest.raises(RuntimeError, match="square matrices"):
            LA.det(A)


def test_compiled_function_matches_eager():
    a, b = _wc(2, 3, 3), _R.standard_normal((2, 3, 2))

    def f(A, B):
        return LA.solve(A, B).sum() + LA.det(A).sum() + LA.svdvals(A).sum()

    cf = tp.compile(f)
    A, B = _t(a), _t(b)
    _close(cf(A, B), f(A, B).item())
    _close(cf(A * 2.0, B), f(A * 2.0, B).item())


# -- gradients -------------------------------------------------------------------------------------
def test_gradcheck_det_slogdet_inv_logdet():
    A = _t(_wc(2, 3, 3), grad=True)
    _gc(LA.det, A)
    _gc(lambda a: LA.slogdet(a).logabsdet, A)
    _gc(LA.inv, A)
    _gc(tp.logdet, _t(_spd(3, 3), grad=True))
    _gc(lambda a: LA.inv_ex(a).inverse, A)


def test_gradcheck_solve():
    A, B = _t(_wc(2, 3, 3), grad=True), _t(_R.standard_normal((3, 2)), grad=True)
    _gc(LA.solve, A, B)
    _gc(lambda a, b: LA.solve(a, b, left=False), A, _t(_R.standard_normal((4, 3)), grad=True))
    _gc(LA.solve, A, _t(_R.standard_normal(3), grad=True))          # vector right-hand side
    _gc(LA.solve, _t(_wc(1, 3, 3), grad=True), _t(_R.standard_normal((2, 3, 2)), grad=True))


def test_gradcheck_cholesky_on_symmetrised_input():
    # cholesky reads one triangle; its gradient (torch's) is that of a symmetric input
    X = _t(_R.uniform(-1, 1, (2, 3, 3)), grad=True)

    def spd(x):
        return x @ x.mT + 3.0 * tp.eye(3, dtype=F64)
    _gc(lambda x: LA.cholesky(spd(x)), X)
    _gc(lambda x: LA.cholesky(spd(x), upper=True), X)
    _gc(lambda x: tp.cholesky(spd(x)), X)


def test_gradcheck_eigh_on_symmetrised_input():
    X = _t(_sym(2, 3, 3), grad=True)

    def sym(x):
        return (x + x.mT) * 0.5
    _gc(lambda x: LA.eigvalsh(sym(x)), X)
    # eigenvectors up to sign: a sign-invariant function of them
    _gc(lambda x: LA.eigh(sym(x)).eigenvectors.abs(), X)
    _gc(lambda x: (lambda r: r[1] * r[0].unsqueeze(-2))(LA.eigh(sym(x), "U")), X)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 2, 4)])
def test_gradcheck_qr(shape):
    A = _t(_R.standard_normal(shape), grad=True)
    _gc(lambda a: LA.qr(a), A)
    _gc(lambda a: LA.qr(a).R, A)
    _gc(lambda a: LA.qr(a).Q, A)


def test_qr_backward_refusals_as_torch():
    A = _t(_R.standard_normal((4, 3)), grad=True)
    with pytest.raises(RuntimeError, match="mode='r'"):
        LA.qr(A, "r").R.sum().backward()
    with pytest.raises(RuntimeError, match="mode='complete' and nrows > ncols"):
        LA.qr(A, "complete").Q.sum().backward()
    W = _t(_R.standard_normal((3, 4)), grad=True)
    LA.qr(W, "complete").Q.sum().backward()     # m <= n: complete is reduced
    assert W.grad.shape == (3, 4)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 2, 4)])
def test_gradcheck_svd(shape):
    A = _t(_R.standard_normal(shape), grad=True)
    _gc(LA.svdvals, A)
    _gc(lambda a: LA.svd(a, full_matrices=False), A)
    _gc(lambda a: (lambda r: r.U @ (r.S.unsqueeze(-1) * r.Vh))(LA.svd(a, False)), A)
    _gc(lambda a: LA.svd(a).S, A)              # full_matrices: the first k vectors count
    _gc(lambda a: tp.svd(a).V.abs(), A)
    _gc(lambda a: LA.matrix_norm(a, "nuc") + LA.matrix_norm(a, 2) + LA.matrix_norm(a, -2), A)


def test_gradcheck_composites():
    A = _t(_R.standard_normal((2, 4, 3)), grad=True)
    _gc(LA.pinv, A)
    _gc(lambda a: LA.lstsq(a, _t(np.ones((2, 4, 2)))).solution, A)
    S = _t(_wc(3, 3), grad=True)
    _gc(lambda a: LA.matrix_power(a, 3), S)
    _gc(lambda a: LA.matrix_power(a, -2), S)
    _gc(lambda a: LA.pinv(a @ a.mT + tp.eye(3, dtype=F64), hermitian=True), S)
    for o in ("fro", 1, -1, math.inf, -math.inf):
        _gc(lambda a, o=o: LA.matrix_norm(a, o), A)
    for o in (2, 1, 3, 1.5):
        _gc(lambda a, o=o: LA.vector_norm(a, o, dim=-1), A)
    ms = [_t(_R.standard_normal(s), grad=True) for s in ((3,), (3, 4), (4, 2), (2,))]
    _gc(lambda *m: LA.multi_dot(list(m)), *ms)
    x, y = _t(_R.standard_normal((4, 3)), grad=True), _t(_R.standard_normal((4, 3)), grad=True)
    _gc(LA.cross, x, y)
    _gc(LA.vecdot, x, y)
    _gc(tp.cdist, _t(_R.standard_normal((2, 5, 3)), grad=True),
        _t(_R.standard_normal((2, 4, 3)), grad=True))
    _gc(lambda a, b: tp.cdist(a, b, 1.5), x, y)


def test_norm_and_cdist_gradients_at_zero_are_zero():
    # torch's norm backward gives 0 where the norm is 0 (no NaN)
    x = tp.zeros(2, 3, dtype=F64, requires_grad=True)
    LA.vector_norm(x, dim=-1).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2
    a = _t(_R.standard_normal((3, 2)), grad=True)
    tp.cdist(a, a.detach()).sum().backward()     # zero distances on the diagonal
    assert np.isfinite(a.grad.numpy()).all()
    d = tp.zeros(3, dtype=F64, requires_grad=True)
    LA.vector_norm(d, 3).backward()
    assert d.grad.tolist() == [0.0, 0.0, 0.0]


def test_gradgradcheck_inv_and_solve():
    A = _t(_wc(3, 3), grad=True)
    assert tp.autograd.gradgradcheck(LA.inv, (A,), eps=1e-6, atol=1e-5, rtol=1e-4)
    B = _t(_R.standard_normal((3, 2)), grad=True)
    assert tp.autograd.gradgradcheck(LA.solve, (A, B), eps=1e-6, atol=1e-5, rtol=1e-4)
    assert tp.autograd.gradgradcheck(LA.det, (A,), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_singular_and_eigen_vectors_have_a_device_independent_sign():
    # each vector's largest-magnitude entry is positive (LAPACK and cuSOLVER may differ in sign;
    # this convention makes cpu and cuda agree), and the factorisations still reconstruct A
    a = _R.standard_normal((3, 5, 4))
    U, S, Vh = LA.svd(_t(a))
    # U's columns (Vh's rows flip with their pair)
    cols = U.numpy()
    assert (np.take_along_axis(cols, np.abs(cols).argmax(-2)[..., None, :], -2) > 0).all()
    _close(U[..., :4] @ (S.unsqueeze(-1) * Vh), a)
    s = _sym(3, 4, 4)
    w, V = LA.eigh(_t(s))
    v = V.numpy()
    assert (np.take_along_axis(v, np.abs(v).argmax(-2)[..., None, :], -2) > 0).all()
    _close(V @ (w.unsqueeze(-1) * V.mT), s)


def test_solve_ex_and_solve_triangular():
    a, b = _wc(2, 3, 3), _R.standard_normal((2, 3, 2))
    r = LA.solve_ex(_t(a), _t(b))
    _close(r.result, np.linalg.solve(a, b))
    assert r.info.tolist() == [0, 0] and r.info.dtype is tp.int32
    sing = np.stack([a[0], [[1.0, 2, 3], [2, 4, 6], [0, 0, 1]]])
    r = LA.solve_ex(_t(sing), _t(b))
    assert r.info.tolist() == [0, 2]
    _close(r.result[0], np.linalg.solve(a[0], b[0]))
    assert np.isnan(r.result[1].numpy()).all()
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.solve_ex(_t(sing), _t(b), check_errors=True)
    up = np.triu(a) + np.tril(_R.standard_normal(a.shape), -1)      # junk below: not read
    x = LA.solve_triangular(_t(up), _t(b), upper=True)
    _close(x, np.linalg.solve(np.triu(a), b))
    lo = np.tril(a)
    _close(LA.solve_triangular(_t(lo), _t(b), upper=False), np.linalg.solve(lo, b))
    unit = np.triu(a, 1) + np.eye(3)
    _close(LA.solve_triangular(_t(np.triu(a)), _t(b), upper=True, unitriangular=True),
           np.linalg.solve(unit, b))
    bl = _R.standard_normal((2, 4, 3))
    _close(LA.solve_triangular(_t(up), _t(bl), upper=True, left=False) @ _t(np.triu(a)), bl)
    A = _t(up, grad=True)
    _gc(lambda m, v: LA.solve_triangular(m, v, upper=True), A, _t(b, grad=True))
    LA.solve_triangular(A, _t(b), upper=True).sum().backward()
    assert not np.tril(A.grad.numpy(), -1).any()          # the gradient is triangular, as torch
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        LA.solve_triangular(_t(up), _t(b[0, :, 0]), upper=True)


def _cofactors(m):
    n = m.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1))
                      for j in range(n)] for i in range(n)])


def test_det_gradient_of_a_singular_matrix_is_the_cofactor_matrix():
    # torch's formula there (the SVD's cofactors), not the inverse's NaN
    sing = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    rank1 = np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 3.0])
    batch = np.stack([_wc(3, 3), sing, rank1, np.zeros((3, 3))])
    A = _t(batch, grad=True)
    LA.det(A).sum().backward()
    _close(A.grad, np.stack([_cofactors(m) for m in batch]), atol=1e-12)
    _gc(LA.det, _t(sing, grad=True))
    _gc(LA.det, _t(np.stack([sing, _wc(3, 3)]), grad=True))
