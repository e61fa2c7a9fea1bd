"""``matmul`` (numpy/torch semantics for 1-D, 2-D and batched operands)."""

from __future__ import annotations

from ._define import defop, fused, ops as O
from .._dispatch import NoGradBlock, grad_state as _gm_state
from ._shapes import broadcast_shapes, check_same_dtype, out_like
from ._shapes import zeros_grad
from ..fake import is_dynamic_size


def _matmul_meta(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError("matmul: both arguments need at least 1 dimension")
    sa = a.shape if a.ndim > 1 else (1,) + tuple(a.shape)
    sb = b.shape if b.ndim > 1 else tuple(b.shape) + (1,)
    if sa[-1] != sb[-2] and not (is_dynamic_size(sa[-1]) or is_dynamic_size(sb[-2])):
        # (a data-dependent size is assumed to match: the kernel checks the real sizes)
        raise RuntimeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                           f"multiplied ({sa[-2]}x{sa[-1]} and {sb[-2]}x{sb[-1]})")
    check_same_dtype(a.dtype, b.dtype)
    if a.dtype.name == "bool":   # torch has no bool matmul kernel (its addmm/dot refuse Bool)
        raise NotImplementedError("matmul: not implemented for 'Bool' (as in torch); cast the "
                                  "operands first, e.g. a.int() @ b.int()")
    batch = broadcast_shapes(sa[:-2], sb[:-2], api="matmul")
    shape = batch + ((sa[-2],) if a.ndim > 1 else ()) + ((sb[-1],) if b.ndim > 1 else ())
    return out_like(shape, a.dtype, a)


def _matmul_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])


# 2-D products from this many multiply-adds on: a gradient that is one element broadcast takes
# the row/column sums below (below it, the one fused matmul kernel costs less host time)
_ONE_ELEMENT_MIN_WORK = 1 << 18


def one_element(g):
    """The single element of ``g`` as a 0-d view when ``g`` (a real tensor of at least two
    elements) is a broadcast of one element -- every stride 0, as the gradient of ``sum`` or
    ``mean`` reaches the next formula -- else None."""
    if g.native is None or any(g.stride_tuple) or g.numel() < 2:
        return None
    return O.as_strided(g, [], [])


def _matmul_bw(ctx, g):
    a, b = ctx.saved_tensors
    # (the slots, not the shape/dtype properties: ~0.4 k instructions less per read)
    sa, sb = a.raw_shape, b.raw_shape
    if a.native is not None and len(sa) == 2 and len(sb) == 2:
        (m, k), n = sa, sb[1]
        if m * k * n >= _ONE_ELEMENT_MIN_WORK and g.raw_dtype is a.raw_dtype:
            c = one_element(g)
            if c is not None:
                # g = c everywhere ((a @ b).sum(), .mean()): g @ b.T is b's row sums times c on
                # every row, a.T @ g a's column sums times c on every column -- a read of each
                # input instead of two m*k*n products (and no g materialised for them); the
                # gradients are broadcast views, materialised once where .grad takes them
                need = ctx.needs_input_grad
                return (O.expand(O.mul(O.sum(b, [1]), c), [m, k]) if need[0] else None,
                        O.expand(O.unsqueeze(O.mul(O.sum(a, [0]), c), 1), [k, n])
                        if need[1] else None)
        # the common case (2-D @ 2-D): gradients already have the inputs' shapes, no
        # sum_to_size/reshape (which would hand .grad a view that it then copies)
        need = ctx.needs_input_grad
        r = fused("_matmul_backward", g, a, b, args=(need[0], need[1]))   # no transpose ops
        if r is not None:
            return r
        return (O.matmul(g, O.transpose(b, 0, 1)) if need[0] else None,
                O.matmul(O.transpose(a, 0, 1), g) if need[1] else None)
    a2 = a if a.ndim > 1 else O.unsqueeze(a, 0)
    b2 = b if b.ndim > 1 else O.unsqueeze(b, -1)
    g2 = g
    if a.ndim == 1:
        g2 = O.unsqueeze(g2, -2 if b.ndim > 1 else 0)
    if b.ndim == 1:
        g2 = O.unsqueeze(g2, -1)
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = O.matmul(g2, O.transpose(b2, -1, -2)).sum_to_size(a2.shape)
        ga = O.reshape(ga, list(a.shape))
    if ctx.needs_input_grad[1]:
        gb = O.matmul(O.transpose(a2, -1, -2), g2).sum_to_size(b2.shape)
        gb = O.reshape(gb, list(b.shape))
    return ga, gb


defop("matmul(Tensor input, Tensor other) -> Tensor", meta=_matmul_meta, setup=_matmul_setup,
      backward=_matmul_bw)


# -- decompositions and solvers (session 46, h-linalg46): tp::linalg_* ----------------------------
# Schema, fake rule (batched shapes, the input's dtype; the checks are the kernels' own, shared
# from _kernels/linalg.py) and torch's backward formula of each; the array kernels are
# _kernels/linalg.py (numpy.linalg on cpu, cupy.linalg on cuda). The public functions
# (tensorplay.linalg) compose these with the existing ops.
from .. import _dtype as _dt  # noqa: E402
from .._kernels import linalg as _K  # noqa: E402


def _mT(x):
    return O.transpose(x, -2, -1)


def _tri(x, lower, diagonal=0):
    """``tril``/``triu`` of the last two dims (zeros elsewhere), made of differentiable ops."""
    r, c = x.shape[-2], x.shape[-1]
    rows = O.unsqueeze(O.arange(0, r, 1, dtype=_dt.int64, device=x.device), 1)
    cols = O.arange(0, c, 1, dtype=_dt.int64, device=x.device)
    diff = O.sub(cols, rows)
    return O.where(O.le(diff, diagonal) if lower else O.ge(diff, diagonal), x, 0.0)


def _eye(n, x):
    return O.eye(n, n, dtype=x.dtype, device=x.device)


def _diag_embed(v):
    """``(..., n)`` -> ``(..., n, n)`` with ``v`` on the diagonal."""
    n = v.shape[-1]
    return O.mul(O.unsqueeze(v, -1), _eye(n, v))


def _diag_part(x):
    """``x`` with its off-diagonal elements zeroed (square last two dims)."""
    return O.mul(x, _eye(x.shape[-1], x))


def _bmat(v):
    """A batch of scalars ``(...)`` as ``(..., 1, 1)``."""
    return O.unsqueeze(O.unsqueeze(v, -1), -1)


def _inv(a):
    return O.linalg_inv_ex(a, check_errors=False)[0]


def _solve(a, b):
    return O.linalg_solve(a, b)


def _sq_meta(api):
    def check(a):
        _K.check_matrix(api, tuple(a.shape), a.dtype)
    return check


def _det_meta(a):
    _K.check_matrix("linalg.det", tuple(a.shape), a.dtype)
    return out_like(tuple(a.shape[:-2]), a.dtype, a)


def _save_in_out(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], output if not isinstance(output, tuple) else output[0])


def _det_singular_grad(a, g):
    """``g`` times the cofactor matrix of each matrix of ``a`` from its SVD (torch's formula for
    a singular A): ``alpha U diag(prod_{j != i} s_j) Vh`` with ``alpha = det(U) det(Vh)``."""
    u, s, vh = O.linalg_svd(a, False)
    alpha = O.mul(O.linalg_det(u), O.linalg_det(vh))
    eye = _eye(s.shape[-1], s)
    others = O.add(O.mul(O.unsqueeze(s, -2), O.rsub(eye, 1.0)), eye)   # row i: s with s_i -> 1
    d = O.mul(O.unsqueeze(O.mul(g, alpha), -1), O.prod(others, [-1], False))
    return O.matmul(O.mul(u, O.unsqueeze(d, -2)), vh)


def _det_bw(ctx, g):
    # torch's linalg_det_backward: (g * det) A^{-T} for an invertible A; for a singular one
    # (its inverse failed: info > 0) the cofactors from the SVD, which torch also uses there.
    # The singular case is looked for on real tensors only (a fake or captured graph keeps the
    # inverse's formula: it cannot read the data)
    a, d = ctx.saved_tensors
    if _gm_state.enabled:
        return _det_bw_graph(a, d, g)
    ai, info = O.linalg_inv_ex(a, check_errors=False)
    ga = O.mul(_bmat(O.mul(g, d)), _mT(ai))
    if info.native is not None and info.capture_info is None and info.numel():
        bad = O.ne(info, 0)
        if bool(O.any(bad, None, False)):
            ga = O.where(_bmat(bad), _det_singular_grad(a, g), O.where(_bmat(bad), 0.0, ga))
    return ga


def _det_bw_graph(a, d, g):
    """det's gradient under create_graph (it is differentiated again). Singular as torch's
    cutoff ``|det| < eps ||A||_F`` (or a failed inverse): a matrix just off singular has a huge
    inverse whose derivative, times the tiny det, is noise. Each branch of the ``where`` runs
    on matrices it is finite for -- the identity in place of a singular one for the inverse,
    ``diag(1..n)`` (distinct singular values, which the SVD's derivative divides by the
    differences of) in place of an invertible one for the SVD -- since the gradient the
    ``where`` sends to the branch it did not take is 0, and 0 times an infinite derivative is
    NaN."""
    n = a.shape[-1]
    if a.native is None or a.capture_info is not None or not a.numel():
        return O.mul(_bmat(O.mul(g, d)), _mT(_inv(a)))    # cannot read the data
    eye = _eye(n, a)
    with NoGradBlock():
        ai, info = O.linalg_inv_ex(a, check_errors=False)
        # (finfo's eps: the linalg kernels take float32/float64 only)
        eps = 2.0 ** -52 if a.dtype is _dt.float64 else 2.0 ** -23
        cut = O.mul(O.sqrt(O.sum(O.mul(a, a), [-2, -1], False)), eps)
        bad = O.logical_or(O.ne(info, 0), O.lt(O.abs(d), cut))
        any_bad = bool(O.any(bad, None, False))
    if not any_bad:
        return O.mul(_bmat(O.mul(g, d)), _mT(_inv(a)))
    badm = _bmat(bad)
    ga = O.mul(_bmat(O.mul(g, d)), _mT(_inv(O.where(badm, eye, a))))
    spread = _diag_embed(O.arange(1, n + 1, 1, dtype=a.dtype, device=a.device))
    return O.where(badm, _det_singular_grad(O.where(badm, a, spread), g), ga)


defop("linalg_det(Tensor A) -> Tensor", meta=_det_meta, setup=_save_in_out, backward=_det_bw)


def _slogdet_meta(a):
    _K.check_matrix("linalg.slogdet", tuple(a.shape), a.dtype)
    b = tuple(a.shape[:-2])
    return out_like(b, a.dtype, a), out_like(b, a.dtype, a)


def _slogdet_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _slogdet_bw(ctx, _gsign, glogabs):
    # the sign is piecewise constant (no gradient); logabsdet's: g A^{-T} (torch's slogdet_backward)
    a, = ctx.saved_tensors
    return O.mul(_bmat(glogabs), _mT(_inv(a)))


defop("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", meta=_slogdet_meta,
      setup=_slogdet_setup, backward=_slogdet_bw)


def _inv_ex_meta(a, check_errors=False):
    _K.check_matrix("linalg.inv", tuple(a.shape), a.dtype)
    return out_like(tuple(a.shape), a.dtype, a), out_like(tuple(a.shape[:-2]), _dt.int32, a)


def _inv_ex_setup(ctx, inputs, output):
    ctx.save_for_backward(output[0])


def _inv_ex_bw(ctx, g, _ginfo=None):
    # d(A^-1) = -A^-1 dA A^-1: gA = -A^{-T} g A^{-T}
    ai, = ctx.saved_tensors
    ait = _mT(ai)
    return O.neg(O.matmul(O.matmul(ait, g), ait))


defop("linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)",
      meta=_inv_ex_meta, setup=_inv_ex_setup, backward=_inv_ex_bw)


def _solve_meta(a, b):
    shape = _K.solve_shape(tuple(a.shape), tuple(b.shape), a.dtype, b.dtype)
    return out_like(shape, a.dtype, a)


def _solve_setup(ctx, inputs, output):
    ctx.shapes = (tuple(inputs[0].shape), tuple(inputs[1].shape))
    ctx.save_for_backward(inputs[0], output)


def _solve_bw(ctx, g):
    # AX = B: gB = A^{-T} g, gA = -gB X^T (torch's linalg_solve_backward), summed to the
    # operands' shapes where their batch dims were broadcast
    a, x = ctx.saved_tensors
    sa, sb = ctx.shapes
    need = ctx.needs_input_grad
    gb = _solve(_mT(a), g)
    ga = O.neg(O.matmul(gb, _mT(x))) if need[0] else None
    if ga is not None and tuple(ga.shape) != sa:
        ga = ga.sum_to_size(sa)
    if need[1] and tuple(gb.shape) != sb:
        gb = gb.sum_to_size(sb)
    return ga, gb if need[1] else None


defop("linalg_solve(Tensor A, Tensor B) -> Tensor", meta=_solve_meta, setup=_solve_setup,
      backward=_solve_bw)


def _chol_meta(a, upper=False, check_errors=False):
    _K.check_matrix("linalg.cholesky", tuple(a.shape), a.dtype)
    return out_like(tuple(a.shape), a.dtype, a), out_like(tuple(a.shape[:-2]), _dt.int32, a)


def _chol_setup(ctx, inputs, output):
    ctx.upper = bool(inputs[1]) if len(inputs) > 1 else False
    ctx.save_for_backward(output[0])


def _chol_bw(ctx, gl, _ginfo=None):
    # torch's cholesky_backward: phi = tril(L^T gL) with its diagonal halved,
    # gA = sym(L^{-T} phi L^{-1}) (the gradient of a symmetric input, symmetrised)
    lo, = ctx.saved_tensors
    if ctx.upper:
        lo, gl = _mT(lo), _mT(gl)
    li = _inv(lo)
    phi = _tri(O.matmul(_mT(lo), gl), True)
    phi = O.sub(phi, O.mul(_diag_part(phi), 0.5))
    ga = O.matmul(O.matmul(_mT(li), phi), li)
    return O.mul(O.add(ga, _mT(ga)), 0.5)


defop("linalg_cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False) -> "
      "(Tensor L, Tensor info)", meta=_chol_meta, setup=_chol_setup, backward=_chol_bw)


def _qr_meta(a, mode="reduced"):
    _K.check_matrix("linalg.qr", tuple(a.shape), a.dtype, square=False)
    qs, rs = _K.qr_shapes(tuple(a.shape), mode)
    return out_like(qs, a.dtype, a), out_like(rs, a.dtype, a)


def _qr_setup(ctx, inputs, output):
    ctx.mode = inputs[1] if len(inputs) > 1 else "reduced"
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(output[0], output[1])


def _qr_square_bw(gq, gr, q, r):
    # m >= n, reduced: M = R gR^T - gQ^T Q; gA = (gQ + Q copyltu(M)) R^{-T}, copyltu(M) =
    # tril(M) + tril(M, -1)^T (torch's linalg_qr_backward, written with triu of M^T there)
    m = None
    if gr is not None:
        m = O.matmul(r, _mT(gr))
    if gq is not None:
        t = O.matmul(_mT(gq), q)
        m = O.neg(t) if m is None else O.sub(m, t)
    low = _tri(m, True)
    c = O.add(low, _mT(_tri(m, True, -1)))
    y = O.matmul(q, c)
    if gq is not None:
        y = O.add(y, gq)
    # y R^{-T} = (R^{-1} y^T)^T
    return _mT(_solve(r, _mT(y)))


def _qr_bw(ctx, gq, gr):
    q, r = ctx.saved_tensors
    if gq is None and gr is None:
        return None, None
    if ctx.mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    m, n = q.shape[-2], r.shape[-1]
    if ctx.mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if m >= n:
        return _qr_square_bw(gq, gr, q, r), None
    # m < n: A = [A_X | A_Y] with A_X = Q X (X square) and Y = Q^T A_Y: X's gradient with
    # gQ + A_Y gY^T = gQ + Q Y gY^T, A_Y's Q gY
    x, y = O.narrow(r, -1, 0, m), O.narrow(r, -1, m, n - m)
    gx = gy = None
    if gr is not None:
        gx, gy = O.narrow(gr, -1, 0, m), O.narrow(gr, -1, m, n - m)
    gq2 = gq
    if gy is not None:
        t = O.matmul(q, O.matmul(y, _mT(gy)))
        gq2 = t if gq2 is None else O.add(gq2, t)
    gax = _qr_square_bw(gq2, gx, q, x)
    gay = O.matmul(q, gy) if gy is not None else zeros_grad(y)   # (q @ y's shape: y's)
    return O.cat([gax, gay], -1), None


defop("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)", meta=_qr_meta,
      setup=_qr_setup, backward=_qr_bw)


def _svd_meta(a, full_matrices=True):
    _K.check_matrix("linalg.svd", tuple(a.shape), a.dtype, square=False)
    return tuple(out_like(s, a.dtype, a) for s in _K.svd_shapes(tuple(a.shape), full_matrices))


def _svd_setup(ctx, inputs, output):
    ctx.full = bool(inputs[1]) if len(inputs) > 1 else True
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(*output)


def _svd_bw(ctx, gu, gs, gvh):
    # torch's svd_backward (real case); full_matrices: U, Vh and their gradients narrowed to
    # the k = min(m, n) singular vectors first, as torch's derivatives.yaml does
    u, s, vh = ctx.saved_tensors
    if gu is None and gs is None and gvh is None:
        return None, None
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    if ctx.full:
        u, vh = O.narrow(u, -1, 0, k), O.narrow(vh, -2, 0, k)
        gu = O.narrow(gu, -1, 0, k) if gu is not None else None
        gvh = O.narrow(gvh, -2, 0, k) if gvh is not None else None
    if gu is None and gvh is None:
        return (O.matmul(u, O.mul(O.unsqueeze(gs, -1), vh)) if m >= n else
                O.matmul(O.mul(u, O.unsqueeze(gs, -2)), vh)), None

    def skew(x):
        return O.sub(x, _mT(x))
    s2 = O.mul(s, s)
    e = O.add(O.sub(O.unsqueeze(s2, -2), O.unsqueeze(s2, -1)), _eye(k, s))   # diagonal 1
    sr, sc = O.unsqueeze(s, -2), O.unsqueeze(s, -1)
    uhgu = skew(O.matmul(_mT(u), gu)) if gu is not None else None
    vhgv = skew(O.matmul(vh, _mT(gvh))) if gvh is not None else None
    if uhgu is not None and vhgv is not None:
        ga = O.div(O.add(O.mul(uhgu, sr), O.mul(sc, vhgv)), e)
    elif uhgu is not None:
        ga = O.mul(uhgu, O.div(sr, e))
    else:
        ga = O.mul(sc, O.div(vhgv, e))
    if gs is not None:
        ga = O.add(ga, _diag_embed(gs))
    if m > n and gu is not None:
        ga = O.matmul(u, ga)
        gus = O.div(gu, sr)
        ga = O.sub(O.add(ga, gus), O.matmul(u, O.matmul(_mT(u), gus)))
        ga = O.matmul(ga, vh)
    elif m < n and gvh is not None:
        ga = O.matmul(ga, vh)
        gvs = O.div(gvh, sc)
        ga = O.sub(O.add(ga, gvs), O.matmul(O.matmul(gvs, _mT(vh)), vh))
        ga = O.matmul(u, ga)
    else:
        ga = O.matmul(u, O.matmul(ga, vh)) if m >= n else O.matmul(O.matmul(u, ga), vh)
    return ga, None


defop("linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor U, Tensor S, Tensor Vh)",
      meta=_svd_meta, setup=_svd_setup, backward=_svd_bw)


def _eigh_meta(a, UPLO="L"):   # noqa: N803 - torch's name
    _K.check_uplo(UPLO)
    _K.check_matrix("linalg.eigh", tuple(a.shape), a.dtype)
    return out_like(tuple(a.shape[:-1]), a.dtype, a), out_like(tuple(a.shape), a.dtype, a)


def _eigh_setup(ctx, inputs, output):
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(*output)


def _eigh_bw(ctx, gl, gv):
    # torch's linalg_eig_backward, hermitian case: gA = V (skew(V^T gV) / 2 / E, diagonal gL) V^T
    # with E_ij = L_j - L_i (the input read as a whole matrix, as torch's)
    lam, v = ctx.saved_tensors
    if gl is None and gv is None:
        return None, None
    if gv is None:
        return O.matmul(O.mul(v, O.unsqueeze(gl, -2)), _mT(v)), None
    n = lam.shape[-1]
    vhgv = O.matmul(_mT(v), gv)
    vhgv = O.mul(O.sub(vhgv, _mT(vhgv)), 0.5)
    e = O.add(O.sub(O.unsqueeze(lam, -2), O.unsqueeze(lam, -1)), _eye(n, lam))
    ret = O.div(vhgv, e)
    if gl is not None:
        ret = O.add(ret, _diag_embed(gl))   # ret's diagonal is 0 (skew)
    return O.matmul(v, O.matmul(ret, _mT(v))), None


defop("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, Tensor eigenvectors)",
      meta=_eigh_meta, setup=_eigh_setup, backward=_eigh_bw)
