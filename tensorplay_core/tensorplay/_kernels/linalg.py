"""Reference kernels of the linear-algebra decompositions (``tp::linalg_*``: det, slogdet,
inv_ex, solve, cholesky_ex, qr, svd, eigh), written once against the backend's NumPy-like module:
``numpy.linalg`` on cpu, ``cupy.linalg`` on cuda (``be.np.linalg``). Inputs are batches of
matrices ``(..., m, n)`` of float32/float64; results are row-major arrays.

The argument checks (``check_matrix``, ``check_solve``, ``qr_shapes``...) are plain functions of
shapes and dtypes shared with the fake rules (``_ops/linalg.py``), so eager, fake and captured
calls refuse the same arguments with torch's words. ``LinAlgError`` (torch's
``torch.linalg.LinAlgError``, a ``RuntimeError``) is raised for a singular or non positive-definite
input where torch raises it (CuPy is asked to raise too: ``cupyx.errstate(linalg="raise")``);
the failed matrix's code (the first zero pivot, the order of the leading minor) is then found
on the host, matrix by matrix, on that error path only.
"""

from __future__ import annotations

from typing import Any


class LinAlgError(RuntimeError):
    """A linear-algebra function failed on its input (a singular matrix for ``inv``/``solve``,
    one that is not positive-definite for ``cholesky``...). A ``RuntimeError`` subclass, as
    ``torch.linalg.LinAlgError``."""


LinAlgError.__module__ = "tensorplay.linalg"

_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
          "bool": "Bool"}


def scalar_name(dt) -> str:
    """torch's ScalarType name of dtype ``dt`` (``Float``, ``Long``...)."""
    name = getattr(dt, "name", str(dt))
    return _NAMES.get(name, name)


def check_dtype(api: str, dt) -> None:
    """float32/float64 only: torch's ``RuntimeError`` for an integer/bool or a low-precision
    input."""
    name = getattr(dt, "name", str(dt))
    if name in ("float16", "bfloat16"):
        raise RuntimeError(f"{api}: Low precision dtypes not supported. Got {scalar_name(dt)}")
    if name not in ("float32", "float64"):
        raise RuntimeError(f"{api}: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_name(dt)}")


def check_matrix(api: str, shape, dt, square: bool = True, name: str = "A") -> None:
    """``shape`` is a batch of (square) matrices of a floating dtype: torch's errors otherwise."""
    if len(shape) < 2:
        raise RuntimeError(f"{api}: The input tensor {name} must have at least 2 dimensions.")
    check_dtype(api, dt)
    if square and shape[-1] != shape[-2]:
        raise RuntimeError(f"{api}: {name} must be batches of square matrices, but they are "
                           f"{shape[-2]} by {shape[-1]} matrices")


def broadcast(a, b, api: str):
    """The broadcast of batch shapes ``a`` and ``b`` (tuples); ``RuntimeError`` when they do
    not broadcast."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"{api}: The size of tensor a ({x}) must match the size of tensor "
                               f"b ({y}) at non-singleton dimension")
        out.append(y if x == 1 else x)
    return tuple(out)


def solve_shape(sa, sb, da, db, api="linalg.solve"):
    """The result shape of ``solve(A, B)`` with ``B`` a batch of matrices ``(..., n, k)``."""
    check_matrix(api, sa, da)
    if len(sb) < 2:
        raise RuntimeError(f"{api}: The input tensor B must have at least 2 dimensions.")
    if da is not db:
        raise RuntimeError(f"{api}: Expected A and B to have the same dtype, but found A of type "
                           f"{scalar_name(da)} and B of type {scalar_name(db)} instead")
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"{api}: Incompatible shapes of A and B for the equation AX = B "
                           f"({sa[-2]}x{sa[-1]} and {sb[-2]}x{sb[-1]})")
    return broadcast(sa[:-2], sb[:-2], api) + (sb[-2], sb[-1])


QR_MODES = ("reduced", "complete", "r")


def qr_shapes(shape, mode):
    """``(Q shape, R shape)`` of ``qr`` in ``mode`` (``"r"``: Q is empty, ``(0,)``, as torch)."""
    if mode not in QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    *batch, m, n = shape
    batch = tuple(batch)
    k = min(m, n)
    if mode == "reduced":
        return batch + (m, k), batch + (k, n)
    if mode == "complete":
        return batch + (m, m), batch + (m, n)
    return (0,), batch + (k, n)


def svd_shapes(shape, full_matrices):
    """``(U, S, Vh)`` shapes of ``svd``."""
    *batch, m, n = shape
    batch = tuple(batch)
    k = min(m, n)
    if full_matrices:
        return batch + (m, m), batch + (k,), batch + (n, n)
    return batch + (m, k), batch + (k,), batch + (k, n)


def check_uplo(uplo) -> None:
    if uplo not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")


def _batch_prefix(shape, index) -> str:
    """torch's ``(Batch element i): `` prefix for a batched input (none for one matrix)."""
    return f"(Batch element {index}): " if len(shape) > 2 else ""


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    import contextlib
    import functools
    import importlib

    import numpy
    np = c.be.np
    lin = np.linalg
    dt_of = c.dt_of
    Failed = numpy.linalg.LinAlgError    # (CuPy raises NumPy's)
    raising: Any = contextlib.nullcontext
    if getattr(np, "__name__", "") != "numpy":
        # CuPy checks cuSOLVER's info codes only when asked: raise as NumPy does
        try:
            errstate = importlib.import_module("cupyx").errstate
            raising = functools.partial(errstate, linalg="raise")
        except (ImportError, AttributeError):  # pragma: no cover - CuPy ships cupyx
            pass

    def contig(a):
        a = np.asarray(a)      # (numpy.linalg gives a NumPy scalar for one matrix's det)
        # (ascontiguousarray would make a 0-d array 1-d)
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)

    def mT(a):
        return np.swapaxes(a, -1, -2)

    def host(m):
        return numpy.array(m.get() if hasattr(m, "get") else m, dtype=numpy.float64)

    def first_zero_pivot(m) -> int:
        """LAPACK getrf's ``info`` of square matrix ``m``: the 1-based index of the first
        exactly zero pivot of LU with partial pivoting (on the host), 1 when there is none
        (the backend's own solver failed all the same)."""
        u = host(m)
        n = u.shape[0]
        for j in range(n):
            p = j + int(numpy.argmax(numpy.abs(u[j:, j])))
            if u[p, j] == 0:
                return j + 1
            if p != j:
                u[[j, p]] = u[[p, j]]
            u[j + 1:, j] /= u[j, j]
            u[j + 1:, j + 1:] -= numpy.outer(u[j + 1:, j], u[j, j + 1:])
        return 1

    def not_pd_order(m) -> int:
        """The order of the first leading minor of ``m`` that is not positive-definite (potrf's
        ``info``, found on the host), ``n`` when none is found."""
        u = host(m)
        n = u.shape[0]
        for k in range(1, n + 1):
            try:
                numpy.linalg.cholesky(u[:k, :k])
            except numpy.linalg.LinAlgError:
                return k
        return n

    def batched(f, a, info_of):
        """``(f(a), info)``: ``f`` over the batch ``a`` at once; where it fails (a
        ``LinAlgError``), matrix by matrix, the failed ones NaN with ``info_of(matrix)``."""
        batch = a.shape[:-2]
        try:
            with raising():
                return f(a), np.zeros(batch, dtype=np.int32)
        except Failed:
            pass
        flat = a.reshape((-1,) + a.shape[-2:])
        outs, info = [], numpy.zeros(flat.shape[0], dtype=numpy.int32)
        for i in range(flat.shape[0]):
            try:
                with raising():
                    outs.append(f(flat[i]))
            except Failed:
                info[i] = info_of(flat[i])
                outs.append(None)
        good = next(o for o in outs if o is not None) if info.min() == 0 else None
        shape = good.shape if good is not None else a.shape[-2:]
        r = np.stack([o if o is not None else np.full(shape, np.nan, dtype=a.dtype)
                      for o in outs])
        return r.reshape(batch + shape), np.asarray(info.reshape(batch))

    def col_signs(x):
        """``(..., 1, n)``: per column of ``x``, the sign of its entry of largest magnitude (the
        first such entry; 1 for a zero column). Singular and eigen vectors are unique up to sign
        only, and each LAPACK picks its own (NumPy's OpenBLAS, cuSOLVER on cuda, and torch's
        MKL differ); scaling each column by this makes that entry positive, so every device
        returns the same vectors. (torch's signs are its backend's and differ between its own
        devices: no convention reproduces them.)"""
        idx = np.argmax(np.abs(x), axis=-2)[..., None, :]
        sg = np.sign(np.take_along_axis(x, idx, axis=-2))
        return np.where(sg == 0, 1, sg).astype(x.dtype, copy=False)

    def raise_first(api, shape, info, what):
        flat = numpy.asarray(info.get() if hasattr(info, "get") else info).reshape(-1)
        bad = numpy.nonzero(flat)[0]
        if bad.size:
            i = int(bad[0])
            raise LinAlgError(f"{api}: {_batch_prefix(shape, i)}{what(int(flat[i]))}")

    def det(a):
        check_matrix("linalg.det", a.shape, dt_of(a))
        return contig(np.asarray(lin.det(a), dtype=a.dtype))

    def slogdet(a):
        check_matrix("linalg.slogdet", a.shape, dt_of(a))
        s, ld = lin.slogdet(a)
        return contig(np.asarray(s, dtype=a.dtype)), contig(np.asarray(ld, dtype=a.dtype))

    def inv_ex(a, check_errors=False):
        check_matrix("linalg.inv", a.shape, dt_of(a))
        r, info = batched(lin.inv, a, first_zero_pivot)
        if check_errors:
            raise_first("linalg.inv", a.shape, info, lambda k: (
                f"The diagonal element {k} is zero, the inversion could not be completed "
                f"because the input matrix is singular."))
        return contig(r.astype(a.dtype, copy=False)), info

    def solve(a, b):
        shape = solve_shape(a.shape, b.shape, dt_of(a), dt_of(b))
        a = np.ascontiguousarray(np.broadcast_to(a, shape[:-2] + a.shape[-2:]))
        b = np.ascontiguousarray(np.broadcast_to(b, shape))
        try:
            with raising():
                return contig(lin.solve(a, b).astype(a.dtype, copy=False))
        except Failed:
            info = batched(lin.inv, a, first_zero_pivot)[1]
            raise_first("linalg.solve", a.shape, info,
                        lambda k: "The solver failed because the input matrix is singular.")
            raise

    def cholesky_ex(a, upper=False, check_errors=False):
        check_matrix("linalg.cholesky", a.shape, dt_of(a))
        src = mT(a) if upper else a      # upper: read A's upper triangle, as torch
        r, info = batched(lin.cholesky, src, not_pd_order)
        if check_errors:
            raise_first("linalg.cholesky", a.shape, info, lambda k: (
                f"The factorization could not be completed because the input is not "
                f"positive-definite (the leading minor of order {k} is not positive-definite)."))
        r = mT(r) if upper else r
        return contig(r.astype(a.dtype, copy=False)), info

    def qr(a, mode="reduced"):
        check_matrix("linalg.qr", a.shape, dt_of(a), square=False)
        qs, rs = qr_shapes(a.shape, mode)
        if a.size == 0:
            q = np.zeros(qs, dtype=a.dtype)
            if mode == "complete" and qs[-1]:
                q = q + np.eye(qs[-1], dtype=a.dtype)
            return q, np.zeros(rs, dtype=a.dtype)
        if mode == "r":
            r = lin.qr(a, mode="r")
            return np.zeros((0,), dtype=a.dtype), contig(r.astype(a.dtype, copy=False))
        q, r = lin.qr(a, mode=mode)
        return contig(q.astype(a.dtype, copy=False)), contig(r.astype(a.dtype, copy=False))

    def svd(a, full_matrices=True):
        check_matrix("linalg.svd", a.shape, dt_of(a), square=False)
        us, ss, vs = svd_shapes(a.shape, full_matrices)
        if a.size == 0:
            def eye(s):
                z = np.zeros(s, dtype=a.dtype)
                return z + np.eye(s[-1], dtype=a.dtype) if len(s) and s[-1] and \
                    s[-1] == s[-2] and 0 not in s else z
            return eye(us), np.zeros(ss, dtype=a.dtype), eye(vs)
        u, s, vh = lin.svd(a, full_matrices=full_matrices)
        k = s.shape[-1]
        su = col_signs(u)                        # (..., 1, m or k)
        u = u * su
        sv = np.swapaxes(su[..., :k], -1, -2)    # the paired rows of Vh flip with them
        if vh.shape[-2] > k:                     # full_matrices: Vh's unpaired rows, alone
            sv = np.concatenate([sv, np.swapaxes(col_signs(mT(vh[..., k:, :])), -1, -2)], -2)
        vh = vh * sv
        return tuple(contig(x.astype(a.dtype, copy=False)) for x in (u, s, vh))

    def eigh(a, UPLO="L"):   # noqa: N803 - torch's name
        check_uplo(UPLO)
        check_matrix("linalg.eigh", a.shape, dt_of(a))
        if a.size == 0:
            return np.zeros(a.shape[:-1], dtype=a.dtype), np.zeros(a.shape, dtype=a.dtype)
        w, v = lin.eigh(a, UPLO=UPLO.upper())
        v = v * col_signs(v)
        return contig(w.astype(a.dtype, copy=False)), contig(v.astype(a.dtype, copy=False))

    return {"linalg_det": det, "linalg_slogdet": slogdet, "linalg_inv_ex": inv_ex,
            "linalg_solve": solve, "linalg_cholesky_ex": cholesky_ex, "linalg_qr": qr,
            "linalg_svd": svd, "linalg_eigh": eigh}
