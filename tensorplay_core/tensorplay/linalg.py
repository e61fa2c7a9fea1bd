"""``tensorplay.linalg``: linear algebra on batches of matrices, as ``torch.linalg``.

Every function takes tensors of shape ``(..., m, n)`` (any number of leading batch dims, empty
batches included) of dtype float32 or float64, on any device with a plugin: the decompositions
(``det``, ``slogdet``, ``inv_ex``, ``solve``, ``cholesky_ex``, ``qr``, ``svd``, ``eigh``) are
built-in ops ``tp::linalg_*`` whose kernels are ``numpy.linalg`` on cpu and ``cupy.linalg`` on
cuda, with torch's backward formulas; the rest (norms, ``pinv``, ``matrix_power``,
``matrix_rank``, ``cross``, ``multi_dot``, ``vecdot``, ``lstsq``) are composites of tensorplay ops,
so autograd comes with them.

Errors, as torch's: a ``RuntimeError`` for an input of fewer than 2 dims, a non-square matrix
where a square one is needed, an integer/bool (``Expected a floating point or complex tensor as
input. Got Long``) or float16/bfloat16 input (``Low precision dtypes not supported``);
``LinAlgError`` (a ``RuntimeError`` subclass, as ``torch.linalg.LinAlgError``) for a singular
matrix (``inv``, ``solve``) or one that is not positive-definite (``cholesky``), naming the batch
element. Complex dtypes are not supported (tensorplay has none).
"""

from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING, Any, Sequence

from . import _dtype
from ._kernels.linalg import LinAlgError
from ._ops import ops as O
from ._ops._define import write_out as _write_out
from ._ops.elementwise import norm_root
from ._ops._shapes import is_tensor
from ._tensor_base import dim_list
from ._tensor_base import TensorBase
from .autograd import is_grad_enabled
from .return_types import (linalg_cholesky_ex, linalg_eigh, linalg_inv_ex, linalg_lstsq,
                           linalg_qr, linalg_slogdet, linalg_solve_ex, linalg_svd)
from .return_types import qr as qr_, slogdet as slogdet_, svd as svd_

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "inv", "inv_ex", "lstsq", "matmul", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
           "solve_triangular", "svd", "svdvals",
           "vecdot", "vector_norm"]


# -- helpers ------------------------------------------------------------------------------------
def _check_tensor(api: str, x: Any, name: str = "A") -> None:
    if not is_tensor(x):
        raise TypeError(f"{api}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _out(api, out, fn, args, kwargs=None, n=1) -> Any:
    return _write_out(api, out, fn, args, kwargs or {}, "exact", n, stacklevel=4)


def _mT(x):
    return O.transpose(x, -2, -1)


def _dims(dim, ndim):
    if dim is None:
        return list(range(ndim))
    ds = dim_list(dim)
    if not ndim:
        for d in ds:      # a 0-d tensor takes dims 0 and -1 only (torch's IndexError), once
            if d not in (0, -1):
                raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], "
                                 f"but got {d})")
        if len(ds) > 1:
            raise RuntimeError("dim 0 appears multiple times in the list of dims")
        return ds
    return [d + ndim if d < 0 else d for d in ds]


def _float_input(api, x):
    _check_tensor(api, x, "x" if api.endswith("vector_norm") else "A")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{api}: Expected a floating point or complex tensor as input. Got "
                           f"{_scalar_name(x.dtype)}")


def _scalar_name(dt):
    from ._kernels.linalg import scalar_name
    return scalar_name(dt)


def _eps(dt):
    return {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16,
            "float16": 0.0009765625, "bfloat16": 0.0078125}[dt.name]


# -- decompositions (built-in ops) --------------------------------------------------------------
def det(A: Tensor, *, out: Any = None) -> Tensor:
    """The determinant of each matrix: ``(..., n, n)`` -> ``(...)``, as ``torch.linalg.det``.

    float32/float64 on every device (numpy.linalg.det on cpu, cupy.linalg.det on cuda).
    ``RuntimeError`` for fewer than 2 dims, non-square matrices, integer/bool/low-precision
    dtypes. Gradient ``(g * det) A^{-T}``; for an exactly singular A the cofactor matrix from
    its SVD (torch's formula under ``create_graph=True``; torch's first-order gradient is 0
    there). Same as ``torch.linalg.det``."""
    if out is not None:
        return _out("linalg.det", out, det, (A,))
    _check_tensor("linalg.det", A)
    return O.linalg_det(A)


def slogdet(A: Tensor, *, out: Any = None) -> linalg_slogdet:
    """``(sign, logabsdet)`` of each matrix's determinant (``(...)`` each; sign is -1, 0 or 1;
    logabsdet is ``-inf`` for a singular matrix), as ``torch.linalg.slogdet``. Errors as ``det``;
    the gradient flows through ``logabsdet`` (``g A^{-T}``). Same as ``torch.linalg.slogdet``."""
    if out is not None:
        return _out("linalg.slogdet", out, slogdet, (A,), n=2)
    _check_tensor("linalg.slogdet", A)
    return linalg_slogdet(*O.linalg_slogdet(A))


def inv_ex(A: Tensor, *, check_errors: bool = False, out: Any = None) -> linalg_inv_ex:
    """``(inverse, info)``: the inverse of each square matrix and an int32 ``(...)`` code, 0 for
    success and positive for a singular matrix (LAPACK getrf's first zero pivot, found on the
    host for the failed matrices), whose inverse then holds NaN (torch leaves LAPACK's partial
    values). With
    ``check_errors=True`` a singular matrix raises ``LinAlgError``. Same as
    ``torch.linalg.inv_ex``."""
    if out is not None:
        return _out("linalg.inv_ex", out, inv_ex, (A,), {"check_errors": check_errors}, n=2)
    _check_tensor("linalg.inv_ex", A)
    return linalg_inv_ex(*O.linalg_inv_ex(A, check_errors=check_errors))


def inv(A: Tensor, *, out: Any = None) -> Tensor:
    """The inverse of each square matrix ``(..., n, n)``. ``LinAlgError`` for a singular matrix
    (``linalg.inv: (Batch element i): The diagonal element k is zero, ...``); ``RuntimeError``
    for non-square, fewer than 2 dims or a non-float dtype. Gradient ``-A^{-T} g A^{-T}``.
    Same as ``torch.linalg.inv``."""
    if out is not None:
        return _out("linalg.inv", out, inv, (A,))
    _check_tensor("linalg.inv", A)
    return O.linalg_inv_ex(A, check_errors=True)[0]


def _vector_rhs(A, B):
    # torch's rule: B is a (batch of) vector(s) when it is 1-D or has A's shape without the last dim
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Any = None) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for square ``A``
    ``(..., n, n)`` and ``B`` ``(..., n, k)`` or a vector ``(..., n)`` (torch's rule: 1-D, or
    ``A``'s shape without its last dim); batch dims broadcast. ``A`` and ``B`` of one float
    dtype. ``LinAlgError`` for a singular ``A``; ``RuntimeError`` for mismatched shapes or
    dtypes. Gradients as torch's (``gB = A^{-T} g``, ``gA = -gB X^T``). Same as
    ``torch.linalg.solve``."""
    if out is not None:
        return _out("linalg.solve", out, solve, (A, B), {"left": left})
    _check_tensor("linalg.solve", A)
    _check_tensor("linalg.solve", B, "B")
    if left and A.ndim >= 2 and _vector_rhs(A, B):
        return O.squeeze(O.linalg_solve(A, O.unsqueeze(B, -1)), [-1])
    if not left:
        return _mT(O.linalg_solve(_mT(A), _mT(B)))
    return O.linalg_solve(A, B)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
             out: Any = None) -> linalg_solve_ex:
    """``(result, info)``: ``solve(A, B, left=left)`` and an int32 ``(...)`` code per matrix of
    ``A`` (0; > 0 for a singular one, whose result then holds NaN); ``check_errors=True`` raises
    ``LinAlgError`` as ``solve``. Same as ``torch.linalg.solve_ex``."""
    if out is not None:
        return _out("linalg.solve_ex", out, solve_ex, (A, B),
                    {"left": left, "check_errors": check_errors}, n=2)
    _check_tensor("linalg.solve_ex", A)
    _check_tensor("linalg.solve_ex", B, "B")
    try:
        x = solve(A, B, left=left)
    except LinAlgError:
        if check_errors:
            raise
    else:
        return linalg_solve_ex(x, O.full(list(A.shape[:-2]), 0, dtype=_dtype.int32,
                                          device=A.device))
    # a singular matrix in the batch: the others' solutions through their inverses, NaN for it
    inv_a, info = O.linalg_inv_ex(A if left else _mT(A), check_errors=False)
    if left and _vector_rhs(A, B):
        x = O.squeeze(O.matmul(inv_a, O.unsqueeze(B, -1)), [-1])
    elif left:
        x = O.matmul(inv_a, B)
    else:
        x = _mT(O.matmul(inv_a, _mT(B)))
    return linalg_solve_ex(x, info)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out: Any = None) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``
    ``(..., n, n)`` (only its ``upper`` or lower triangle is read; ``unitriangular=True``: its
    diagonal is taken as ones) and ``B`` ``(..., n, k)`` (``(..., k, n)`` with ``left=False``),
    batch dims broadcast. Computed as ``solve`` of that triangle, so differentiable (``A``'s
    gradient is triangular too, as torch's). Same as ``torch.linalg.solve_triangular``."""
    if out is not None:
        return _out("linalg.solve_triangular", out, solve_triangular, (A, B),
                    {"upper": upper, "left": left, "unitriangular": unitriangular})
    api = "linalg.solve_triangular"
    _check_tensor(api, A)
    _check_tensor(api, B, "B")
    if B.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor B must have at least 2 dimensions.")
    from ._ops.linalg import _tri
    from ._kernels.linalg import check_matrix
    check_matrix(api, tuple(A.shape), A.dtype)
    t = _tri(A, not upper, 0)
    if unitriangular:
        n = A.shape[-1]
        eye = O.eye(n, n, dtype=A.dtype, device=A.device)
        t = O.add(O.mul(t, O.rsub(eye, 1.0)), eye)     # the diagonal replaced by ones
    return O.linalg_solve(t, B) if left else _mT(O.linalg_solve(_mT(t), _mT(B)))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False,
                out: Any = None) -> linalg_cholesky_ex:
    """``(L, info)``: the Cholesky factor of each symmetric positive-definite matrix (lower,
    read from ``A``'s lower triangle; ``upper=True``: upper ``U = L^T``, read from the upper
    triangle) and an int32 ``(...)`` code: 0, or the order of the first leading minor that is
    not positive-definite, whose factor then holds NaN. ``check_errors=True`` raises
    ``LinAlgError`` instead. Gradient as torch's ``cholesky_backward`` (symmetric). Same as
    ``torch.linalg.cholesky_ex``."""
    if out is not None:
        return _out("linalg.cholesky_ex", out, cholesky_ex, (A,),
                    {"upper": upper, "check_errors": check_errors}, n=2)
    _check_tensor("linalg.cholesky_ex", A)
    return linalg_cholesky_ex(*O.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors))


def cholesky(A: Tensor, *, upper: bool = False, out: Any = None) -> Tensor:
    """The Cholesky factor ``L`` (``A = L L^T``; ``upper=True``: ``U``, ``A = U^T U``) of each
    symmetric positive-definite matrix ``(..., n, n)``. ``LinAlgError`` when one is not
    positive-definite (``... the leading minor of order k is not positive-definite``).
    Same as ``torch.linalg.cholesky``."""
    if out is not None:
        return _out("linalg.cholesky", out, cholesky, (A,), {"upper": upper})
    _check_tensor("linalg.cholesky", A)
    return O.linalg_cholesky_ex(A, upper=upper, check_errors=True)[0]


def qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> linalg_qr:
    """``(Q, R)`` with ``A = Q R`` for ``A`` ``(..., m, n)``, k = min(m, n): ``mode="reduced"``
    Q ``(..., m, k)``, R ``(..., k, n)``; ``"complete"`` Q ``(..., m, m)``, R ``(..., m, n)``;
    ``"r"`` R only (Q is an empty tensor). LAPACK's signs (geqrf), as torch on cpu. Backward as
    torch's (``RuntimeError`` for ``mode="r"`` and for ``"complete"`` with m > n). Same as
    ``torch.linalg.qr``."""
    if out is not None:
        return _out("linalg.qr", out, qr, (A,), {"mode": mode}, n=2)
    _check_tensor("linalg.qr", A)
    return linalg_qr(*O.linalg_qr(A, mode))


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None,
        out: Any = None) -> linalg_svd:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh`` for ``A`` ``(..., m, n)``, k = min(m, n): S
    ``(..., k)`` descending; ``full_matrices=True``: U ``(..., m, m)``, Vh ``(..., n, n)``;
    else U ``(..., m, k)``, Vh ``(..., k, n)``. ``driver`` is accepted for torch's signature
    (cuda-only in torch) and ignored. The singular vectors are unique up to sign only (torch's
    are its LAPACK's, which differ between its devices and from NumPy's); here each column of
    U has its largest-magnitude entry positive (Vh's paired row flips with it), the same on
    every device. Backward as torch's ``svd_backward`` (finite for distinct non-zero
    singular values; ``full_matrices`` uses the first k vectors). Same as ``torch.linalg.svd``."""
    if out is not None:
        return _out("linalg.svd", out, svd, (A, full_matrices), {"driver": driver}, n=3)
    _check_tensor("linalg.svd", A)
    return linalg_svd(*O.linalg_svd(A, full_matrices))


def svdvals(A: Tensor, *, driver: str | None = None, out: Any = None) -> Tensor:
    """The singular values ``(..., k)`` of ``A`` ``(..., m, n)``, descending. Same as
    ``torch.linalg.svdvals``."""
    if out is not None:
        return _out("linalg.svdvals", out, svdvals, (A,), {"driver": driver})
    _check_tensor("linalg.svdvals", A)
    return O.linalg_svd(A, False)[1]


def eigh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> linalg_eigh:  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix ``(..., n, n)``, read from its
    lower (``UPLO="L"``) or upper (``"U"``) triangle: eigenvalues ``(..., n)`` ascending,
    eigenvectors ``(..., n, n)`` as columns (unique up to sign only: here each has its
    largest-magnitude entry positive, the same on every device). Backward as torch's (the
    gradient of a symmetric input; eigenvector gradients are finite for distinct eigenvalues).
    Same as ``torch.linalg.eigh``."""
    if out is not None:
        return _out("linalg.eigh", out, eigh, (A, UPLO), n=2)
    _check_tensor("linalg.eigh", A)
    return linalg_eigh(*O.linalg_eigh(A, UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> Tensor:  # noqa: N803
    """The eigenvalues ``(..., n)`` (ascending) of each symmetric matrix. Same as
    ``torch.linalg.eigvalsh``."""
    if out is not None:
        return _out("linalg.eigvalsh", out, eigvalsh, (A, UPLO))
    _check_tensor("linalg.eigvalsh", A)
    return O.linalg_eigh(A, UPLO)[0]


# -- norms (composites) -------------------------------------------------------------------------
def vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None,  # noqa: A002
                keepdim: bool = False, *, dtype: Any = None, out: Any = None) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all elements when None), any shape:
    ``sum(|x|**ord)**(1/ord)``; ``inf``: max ``|x|``, ``-inf``: min, ``0``: the count of
    non-zeros. Floating ``x`` only (``RuntimeError`` otherwise); ``dtype=`` converts first
    (``RuntimeError`` when it narrows: float32 to float16, float16 to bfloat16, as torch).
    Gradients where torch's norm backward masks: 0 at a zero norm (the root is one op,
    ``tp::_norm_root``), 0 at the zero elements for ``ord < 1`` (a negative ``ord`` with a zero
    element: the norm is 0 and the whole gradient 0), ``inf``/``-inf`` shared evenly among the
    tied elements (a slice holding NaN: ``g * 0``, torch's ``sgn(NaN) = 0`` at the NaN), and no gradient at all for ``ord=0``, as torch's (the count has a history,
    but its backward gives ``x`` nothing: ``x.grad`` stays None, ``autograd.grad`` reports ``x``
    unused unless ``allow_unused=True``, and the gradient of another path through ``x`` arrives
    unchanged). Same as ``torch.linalg.vector_norm``."""
    if out is not None:
        return _out("linalg.vector_norm", out, vector_norm, (x, ord, dim, keepdim),
                    {"dtype": dtype})
    _float_input("linalg.vector_norm", x)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if dtype is not None:
        x = _norm_dtype("linalg.vector_norm", x, dtype)
    if x.dtype in (_dtype.float16, _dtype.bfloat16):
        # accumulated in float32 and rounded once, as torch's (a float16 sum of powers overflows)
        return O.to_dtype(vector_norm(O.to_dtype(x, _dtype.float32), ord, dim, keepdim), x.dtype)
    dims = _dims(dim, x.ndim)
    if ord == math.inf or ord == -math.inf:
        if x.numel() == 0 and any(x.shape[d] == 0 for d in dims) or (x.numel() == 0 and
                                                                      dim is None):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                               f"tensor because the operation does not have an identity")
        if x.requires_grad and _grad_enabled() and not _capturing():
            return _norm_inf(x, ord, dims, keepdim)
        a = O.abs(x)
        return O.amax(a, dims, keepdim) if ord > 0 else O.amin(a, dims, keepdim)
    red = dims if dims else None
    if not x.ndim:
        red = None
    if ord == 0:
        nz = O.ne(x, 0)
        if x.requires_grad and _grad_enabled():
            if _capturing():
                # tensorplay.compile records built-in ops only: a count with a zero gradient
                # (1 where x != 0, else sign(x) = 0, whose gradient is exact zeros)
                return O.sum(O.where(nz, 1.0, O.sign(x)), red, keepdim)
            return _no_gradient("tp::linalg_vector_normBackward", x,
                                O.sum(O.to_dtype(nz, x.dtype), red, keepdim))
        return O.sum(O.to_dtype(nz, x.dtype), red, keepdim)
    if ord == 1:
        return O.sum(O.abs(x), red, keepdim)
    if ord == 2:
        return norm_root(O.sum(O.mul(x, x), red, keepdim), 2)
    return norm_root(O.sum(_safe_pow(O.abs(x), float(ord)), red, keepdim), float(ord))


def _norm_dtype(api, x, dtype):
    """``x`` converted to the norm's ``dtype=``; ``RuntimeError`` when that narrows (``dtype``
    is not ``promote_types(x.dtype, dtype)``: float32 to float16, float16 to bfloat16), in
    torch's words."""
    dt = _dtype.as_dtype(dtype)
    if _dtype.promote_types(x.dtype, dt) is not dt:
        raise RuntimeError(f"{api}: the dtype of the input ({_dtype.scalar_type_name(x.dtype)}) "
                           f"should be convertible without narrowing to the specified dtype "
                           f"({_dtype.scalar_type_name(dt)})")
    return O.to_dtype(x, dt)


def _safe_pow(a, p):
    """``a ** p`` for ``a = |x| >= 0``; for ``p < 1`` a zero gradient where ``a`` is 0 (the
    power's derivative is infinite there: torch's norm backward masks those elements; for
    ``p < 0`` the value there is ``inf``, so the norm is 0 and its gradient 0 everywhere)."""
    if not p < 1 or not a.requires_grad:
        return O.pow(a, p)
    zero = O.eq(a, 0)
    return O.where(zero, 0.0 if p > 0 else math.inf, O.pow(O.where(zero, 1.0, a), p))


def _norm_inf(x, ord, dims, keepdim):
    """``vector_norm(x, +-inf)`` with torch's norm backward: ``sgn(x) * (g / count * mask)``,
    ``mask`` the elements whose ``|x|`` equals the norm or is NaN, ``count`` their number per
    reduced slice (so a slice holding NaN gets 0 from a finite ``g``, where ``amax``'s formula
    gave NaN); torch's ``sgn`` of NaN is 0."""
    from .autograd.function import FunctionCtx, attach
    from .autograd.grad_mode import no_grad
    with no_grad():
        a = O.abs(x)
        out = O.amax(a, dims, keepdim) if ord > 0 else O.amin(a, dims, keepdim)
    ctx = FunctionCtx()
    ctx.dims = list(dims) if dims else list(range(x.ndim))
    ctx.keepdim = keepdim
    ctx.save_for_backward(x, out)
    return attach("tp::linalg_vector_normBackward", _norm_inf_bw, ctx, (x,), out, TensorBase)


def _norm_inf_bw(ctx, g):
    x, norm = ctx.saved_tensors
    if not ctx.keepdim:
        for d in sorted(d % max(x.ndim, 1) for d in ctx.dims):
            if x.ndim:
                g = O.unsqueeze(g, d)
                norm = O.unsqueeze(norm, d)
    nan = O.isnan(x)
    mask = O.logical_or(O.eq(O.abs(x), norm), nan)
    count = O.sum(mask, ctx.dims if x.ndim else [], True)
    sgn = O.where(nan, 0.0, O.sign(x))
    return O.mul(sgn, O.mul(O.div(g, count), O.to_dtype(mask, g.dtype)))


def _no_gradient(name, x, out):
    """``out`` (computed from ``x`` without a history) given a history whose backward gives
    ``x`` no gradient at all: torch's undefined gradient (its ``vector_norm`` backward for
    ``ord=0``). The result requires grad and has a ``grad_fn``; ``backward()`` through it alone
    leaves ``x.grad`` None, ``autograd.grad`` reports ``x`` unused (None with
    ``allow_unused=True``), and another path's gradient arrives unchanged."""
    from .autograd.function import FunctionCtx, attach
    return attach(name, lambda ctx, g: None, FunctionCtx(), (x,), out, TensorBase)


def _capturing():
    from .autograd.function import _capturing
    return _capturing()


def _grad_enabled():
    from .autograd.grad_mode import is_grad_enabled
    return is_grad_enabled()


def _matrix_dims(api, A, dim):
    if A.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor A must have at least 2 dimensions.")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{api}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (d + A.ndim if d < 0 else d for d in dim)
    if not (0 <= d0 < A.ndim and 0 <= d1 < A.ndim):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-A.ndim}, "
                         f"{A.ndim - 1}], but got {dim})")
    if d0 == d1:
        raise RuntimeError(f"{api}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _to_end(A, d0, d1):
    rest = [i for i in range(A.ndim) if i not in (d0, d1)]
    return O.permute(A, rest + [d0, d1])


def _keep(r, d0, d1, keepdim):
    if not keepdim:
        return r
    for d in sorted((d0, d1)):
        r = O.unsqueeze(r, d)
    return r


def matrix_norm(A: Tensor, ord: float | str = "fro",  # noqa: A002 - torch's name
                dim: tuple = (-2, -1), keepdim: bool = False, *, dtype: Any = None,
                out: Any = None) -> Tensor:
    """The ``ord``-norm of the matrices in dims ``dim`` of ``A`` (``(..., m, n)`` by default):
    ``"fro"`` (Frobenius), ``"nuc"`` (sum of singular values), ``inf``/``-inf`` (max/min row
    sum of ``|A|``), ``1``/``-1`` (max/min column sum), ``2``/``-2`` (largest/smallest singular
    value). Floating ``A`` only; ``RuntimeError`` for another ``ord``, fewer than 2 dims or a
    narrowing ``dtype=`` (float32 to float16). Same as ``torch.linalg.matrix_norm``."""
    if out is not None:
        return _out("linalg.matrix_norm", out, matrix_norm, (A, ord, dim, keepdim),
                    {"dtype": dtype})
    api = "linalg.matrix_norm"
    _float_input(api, A)
    if dtype is not None:
        A = _norm_dtype(api, A, dtype)
    d0, d1 = _matrix_dims(api, A, dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        s = svdvals(_to_end(A, d0, d1))
        if ord == "nuc":
            r = O.sum(s, [-1], False)
        else:
            r = O.amax(s, [-1], False) if ord == 2 else O.amin(s, [-1], False)
        return _keep(r, d0, d1, keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        # 1: max over columns of the column sums (sum over d0); inf: max over rows (sum over d1)
        s_dim, m_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        r = O.sum(O.abs(A), [s_dim], True)
        r = O.amax(r, [m_dim], True) if ord > 0 else O.amin(r, [m_dim], True)
        return r if keepdim else O.squeeze(r, sorted([d0, d1]))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord: float | str | None = None,  # noqa: A002 - torch's name
         dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None,
         out: Any = None) -> Tensor:
    """A vector or matrix norm, as ``torch.linalg.norm``: with an int ``dim`` (or one dim), the
    vector norm over it; with two dims, the matrix norm; with ``dim=None``: the 2-norm of every
    element when ``ord`` is None, else the vector norm of a 1-D ``A`` or the matrix norm of a
    2-D one (``RuntimeError`` for other ranks). Same as ``torch.linalg.norm``."""
    if out is not None:
        return _out("linalg.norm", out, norm, (A, ord, dim, keepdim), {"dtype": dtype})
    _float_input("linalg.norm", A)
    if dim is not None:
        ds = dim_list(dim)
        if len(ds) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 "
                                   f"or 2 and ord={ord!r} needs a matrix. Got dim={dim}")
            return vector_norm(A, 2 if ord is None else ord, ds, keepdim, dtype=dtype)
        if len(ds) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, tuple(ds), keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                           f"{list(ds)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        if isinstance(ord, str):
            raise RuntimeError(f"linalg.norm: ord={ord!r} is not a vector norm")
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D "
                       f"or 2D. Got {A.ndim}D.")


def cond(A: Tensor, p: float | str | None = None, *, out: Any = None) -> Tensor:
    """The condition number of each matrix in the norm ``p`` (None or 2: largest over smallest
    singular value; else ``norm(A, p) * norm(inv(A), p)`` for square matrices). Same as
    ``torch.linalg.cond``."""
    if out is not None:
        return _out("linalg.cond", out, cond, (A, p))
    _float_input("linalg.cond", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p is None or p in (2, -2):
        s = svdvals(A)
        big, small = O.amax(s, [-1], False), O.amin(s, [-1], False)
        return O.div(big, small) if p in (None, 2) else O.div(small, big)
    return O.mul(matrix_norm(A, p), matrix_norm(inv(A), p))


# -- composites ---------------------------------------------------------------------------------
def _tol(api, A, s_max, atol, rtol):
    """torch's tolerance ``max(atol, rtol * s_max)`` (rtol default eps * max(m, n) when neither
    is given, 0 when only atol is)."""
    m, n = A.shape[-2], A.shape[-1]
    if rtol is None:
        rtol = _eps(A.dtype) * builtins.max(m, n) if atol is None else 0.0
    atol = 0.0 if atol is None else atol
    r = O.mul(s_max, rtol)
    if is_tensor(atol):
        return O.maximum(r, atol)
    return O.where(O.gt(r, atol), r, float(atol))


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
         out: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse ``(..., n, m)`` of ``A`` ``(..., m, n)``, from its SVD
    (``hermitian=True``: its ``eigh``), singular values at or below ``max(atol, rtol * s_max)``
    taken as zero (default rtol: eps * max(m, n)). Differentiable (through ``svd``: the gradient
    of the whole matrix, as torch's ``pinv_backward``, also with ``hermitian=True``).
    Same as ``torch.linalg.pinv``."""
    if out is not None:
        return _out("linalg.pinv", out, pinv, (A,), {"atol": atol, "rtol": rtol,
                                                      "hermitian": hermitian})
    _float_input("linalg.pinv", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.pinv: The input tensor A must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m == 0 or n == 0:
        return O.full(list(A.shape[:-2]) + [n, m], 0.0, dtype=A.dtype, device=A.device)
    if hermitian and not (A.requires_grad and is_grad_enabled()):
        # (under autograd the SVD below: its gradient is torch's pinv_backward, the derivative
        # of pinv of the whole matrix; eigh's would be a symmetric one)
        lam, v = O.linalg_eigh(A, "L")
        s = O.abs(lam)
        tol = _tol("linalg.pinv", A, O.amax(s, [-1], True), atol, rtol)
        keep = O.gt(s, tol)
        sinv = O.where(keep, O.rdiv(O.where(keep, lam, 1.0), 1.0), 0.0)
        return O.matmul(O.mul(v, O.unsqueeze(sinv, -2)), _mT(v))
    u, s, vh = O.linalg_svd(A, False)
    tol = _tol("linalg.pinv", A, O.narrow(s, -1, 0, 1), atol, rtol)
    keep = O.gt(s, tol)
    sinv = O.where(keep, O.rdiv(O.where(keep, s, 1.0), 1.0), 0.0)
    return O.matmul(O.mul(_mT(vh), O.unsqueeze(sinv, -2)), _mT(u))


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
                out: Any = None) -> Tensor:
    """The number of singular values (absolute eigenvalues with ``hermitian=True``) above
    ``max(atol, rtol * s_max)`` (default rtol: eps * max(m, n)), int64 ``(...)``. Same as
    ``torch.linalg.matrix_rank``."""
    if out is not None:
        return _out("linalg.matrix_rank", out, matrix_rank, (A,),
                    {"atol": atol, "rtol": rtol, "hermitian": hermitian})
    _float_input("linalg.matrix_rank", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor A must have at least 2 "
                           "dimensions.")
    if A.shape[-1] == 0 or A.shape[-2] == 0:
        return O.full(list(A.shape[:-2]), 0, dtype=_dtype.int64, device=A.device)
    s = O.abs(O.linalg_eigh(A, "L")[0]) if hermitian else O.linalg_svd(A, False)[1]
    tol = _tol("linalg.matrix_rank", A, O.amax(s, [-1], True), atol, rtol)
    return O.sum(O.to_dtype(O.gt(s, tol), _dtype.int64), [-1], False)


def matrix_power(A: Tensor, n: int, *, out: Any = None) -> Tensor:
    """``A`` to the integer power ``n`` for square ``A`` ``(..., m, m)``: the identity for
    ``n = 0``, ``inv(A) ** -n`` for ``n < 0`` (``LinAlgError`` when singular); computed by
    repeated squaring with ``matmul`` (torch's order of products), so differentiable. Same as
    ``torch.linalg.matrix_power``."""
    if out is not None:
        return _out("linalg.matrix_power", out, matrix_power, (A, n))
    _check_tensor("linalg.matrix_power", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2] if A.ndim >= 2 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if isinstance(n, builtins.bool) or not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        # torch's: a clone of A overwritten with the identity (in the graph, zero gradient)
        eye = O.eye(A.shape[-1], A.shape[-1], dtype=A.dtype, device=A.device)
        return O.copy_(O.clone(A), O.expand(eye, list(A.shape)))
    if n < 0:
        A = inv(A)
        n = -n
    if n == 1:
        return O.clone(A)
    # torch's binary decomposition: z holds A^(2^i); the result multiplies the set bits' powers
    result: Tensor | None = None
    z = A
    first = True
    while n:
        if not first:
            z = O.matmul(z, z)
        first = False
        if n & 1:
            result = z if result is None else O.matmul(result, z)
        n >>= 1
    assert result is not None     # n >= 2 here
    return result


def cross(input: Tensor, other: Tensor, *, dim: int = -1,  # noqa: A002 - torch's name
          out: Any = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (default -1) of ``input`` and ``other``
    broadcast together; ``RuntimeError`` unless both have size 3 there. Same as
    ``torch.linalg.cross``."""
    if out is not None:
        return _out("linalg.cross", out, cross, (input, other), {"dim": dim})
    _check_tensor("linalg.cross", input, "input")
    _check_tensor("linalg.cross", other, "other")
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. Got "
                           f"{input.ndim} and {other.ndim}")
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < builtins.max(input.ndim, 1) or input.shape[d] != 3 or other.shape[d] != 3:
        if 0 <= d < input.ndim:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                               f"{input.shape[d]} and {other.shape[d]}")
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-input.ndim}, {input.ndim - 1}], but got {dim})")
    return input.cross(other, d)


def multi_dot(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The product of the matrices ``tensors`` (at least 2): the first may be a 1-D row
    vector and the last a 1-D column vector, the others 2-D; the result's shape is as
    ``matmul`` of the ends. Multiplied in the order that costs the fewest multiply-adds (as
    torch). Same as ``torch.linalg.multi_dot``."""
    if out is not None:
        return _out("linalg.multi_dot", out, multi_dot, (tensors,))
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        _check_tensor("linalg.multi_dot", t, "tensors")
        want = (1, 2) if i in (0, len(ts) - 1) else (2,)
        if t.ndim not in want:
            which = "first" if i == 0 else "last" if i == len(ts) - 1 else None
            if which:
                raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got "
                                   f"{t.ndim}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_1d:
        ts[0] = O.unsqueeze(ts[0], 0)
    if last_1d:
        ts[-1] = O.unsqueeze(ts[-1], 1)
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{tuple(ts[i].shape)} and {tuple(ts[i + 1].shape)} cannot be "
                               f"multiplied")
    r = _chain(ts)
    if first_1d:
        r = O.squeeze(r, [0])
    if last_1d:
        r = O.squeeze(r, [-1])
    return r


def _chain(ts):
    """The product of 2-D ``ts`` in the cheapest order (matrix-chain dynamic programme)."""
    n = len(ts)
    if n == 2:
        return O.matmul(ts[0], ts[1])
    p = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = -1
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if best < 0 or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best

    def build(i, j):
        if i == j:
            return ts[i]
        k = split[i][j]
        return O.matmul(build(i, k), build(k + 1, j))
    return build(0, n - 1)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Any = None) -> Tensor:
    """The dot product of ``x`` and ``y`` (broadcast together) along ``dim``: ``sum(x * y,
    dim)``. Same as ``torch.linalg.vecdot``."""
    if out is not None:
        return _out("linalg.vecdot", out, vecdot, (x, y), {"dim": dim})
    _check_tensor("linalg.vecdot", x, "x")
    _check_tensor("linalg.vecdot", y, "y")
    return O.sum(O.mul(x, y), [dim], False)


def matmul(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:  # noqa: A002
    """``input @ other``. Same as ``torch.linalg.matmul`` (``torch.matmul``)."""
    if out is not None:
        return _out("linalg.matmul", out, matmul, (input, other))
    return O.matmul(input, other)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of the matrices in dims ``dim1``/``dim2`` (default the last two) as a view.
    Same as ``torch.linalg.diagonal``."""
    return A.diagonal(offset, dim1, dim2)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,
          driver: str | None = None) -> linalg_lstsq:
    """The least-squares solution ``X`` minimising ``||A X - B||`` for ``A`` ``(..., m, n)``
    and ``B`` ``(..., m, k)`` (or a vector ``(..., m)``), batch dims broadcast, computed as
    ``pinv(A) @ B`` (singular values at or below ``rcond * s_max`` dropped; default eps *
    max(m, n)). Returns ``(solution, residuals, rank, singular_values)``: as torch's default
    cpu driver ("gelsy"), residuals and singular_values are empty; rank is int64 ``(...)``.
    Differentiable through ``pinv``. Same as ``torch.linalg.lstsq`` (full-rank inputs: the
    same solution; rank-deficient: the minimum-norm one, as drivers gelsd/gelss)."""
    _float_input("linalg.lstsq", A)
    _check_tensor("linalg.lstsq", B, "B")
    if A.ndim < 2:
        raise RuntimeError("linalg.lstsq: input must have at least 2 dimensions.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lstsq: Expected input and other to have the same dtype, but "
                           f"got input's dtype {_scalar_name(A.dtype)} and other's dtype "
                           f"{_scalar_name(B.dtype)}")
    vec = B.ndim == A.ndim - 1
    b = O.unsqueeze(B, -1) if vec else B
    if b.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"linalg.lstsq: input.size(-2) should match other.size(-2). Got "
                           f"{A.shape[-2]} and {b.shape[-2]}")
    x = O.matmul(pinv(A, rtol=rcond), b)
    if vec:
        x = O.squeeze(x, [-1])
    rank = matrix_rank(A, rtol=rcond)
    empty = O.full([0], 0.0, dtype=A.dtype, device=A.device)
    return linalg_lstsq(x, empty, rank, O.full([0], 0.0, dtype=A.dtype, device=A.device))


# -- torch's top-level forms (tensorplay.det, .logdet, .inverse, .qr, .svd, .cdist ...) ---------
def logdet(input: Tensor) -> Tensor:  # noqa: A002
    """``log(det(input))`` of each square matrix: NaN for a negative determinant, ``-inf`` for
    zero. Same as ``torch.logdet``."""
    _check_tensor("logdet", input, "input")
    sign, lad = O.linalg_slogdet(input)
    return O.where(O.lt(sign, 0), math.nan, lad)


def top_slogdet(input: Tensor) -> slogdet_:  # noqa: A002
    """``(sign, logabsdet)``, as ``torch.slogdet`` (``linalg.slogdet``)."""
    _check_tensor("slogdet", input, "input")
    return slogdet_(*O.linalg_slogdet(input))


def inverse(input: Tensor, *, out: Any = None) -> Tensor:  # noqa: A002
    """The inverse of each square matrix, as ``torch.inverse`` (``linalg.inv``)."""
    if out is not None:
        return _out("inverse", out, inverse, (input,))
    _check_tensor("inverse", input, "input")
    return O.linalg_inv_ex(input, check_errors=True)[0]


def top_cholesky(input: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:  # noqa: A002
    """The Cholesky factor (lower; ``upper=True``: upper), as ``torch.cholesky``."""
    if out is not None:
        return _out("cholesky", out, top_cholesky, (input, upper))
    _check_tensor("cholesky", input, "input")
    return O.linalg_cholesky_ex(input, upper=upper, check_errors=True)[0]


def top_qr(input: Tensor, some: bool = True, *, out: Any = None) -> qr_:  # noqa: A002
    """``(Q, R)``, reduced (``some=True``) or complete, as ``torch.qr``."""
    if out is not None:
        return _out("qr", out, top_qr, (input, some), n=2)
    _check_tensor("qr", input, "input")
    return qr_(*O.linalg_qr(input, "reduced" if some else "complete"))


def top_svd(input: Tensor, some: bool = True, compute_uv: bool = True, *,  # noqa: A002
            out: Any = None) -> svd_:
    """``(U, S, V)`` with ``input = U diag(S) V^T``, as ``torch.svd`` (V, not Vh; ``some=True``:
    reduced; ``compute_uv=False``: U ``(..., m, m)`` and V ``(..., n, n)`` are zeros)."""
    if out is not None:
        return _out("svd", out, top_svd, (input, some, compute_uv), n=3)
    _check_tensor("svd", input, "input")
    if not compute_uv:
        s = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        b = list(input.shape[:-2])
        z = O.full(b + [m, m], 0.0, dtype=input.dtype, device=input.device)
        return svd_(z, s, O.full(b + [n, n], 0.0, dtype=input.dtype, device=input.device))
    u, s, vh = O.linalg_svd(input, not some)
    return svd_(u, s, _mT(vh))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """The pseudo-inverse with singular values at or below ``rcond * s_max`` dropped, as
    ``torch.pinverse``."""
    _check_tensor("pinverse", input, "input")
    return pinv(input, rtol=rcond)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` ``(..., P, M)`` and each row of ``x2``
    ``(..., R, M)``: ``(..., P, R)``, batch dims broadcast; ``p >= 0`` (``inf`` too). Computed
    from the differences (``compute_mode`` accepted and ignored: torch's matrix-product form for
    p = 2 gives the same values up to rounding); floating inputs of one dtype. The gradient at a
    zero distance is 0, and for ``p = inf`` each tied largest element gets the whole gradient
    (NaN at an infinite element), as torch's. NaN in the inputs, as torch's cdist kernels:
    ``p = inf`` skips a NaN difference (the largest of the others, 0 when none; its gradient is
    NaN there), ``p = 0`` counts it as NaN (the distance is NaN; the gradient of ``p = 0`` is
    zeros, never NaN). Same as ``torch.cdist``."""
    _check_tensor("cdist", x1, "x1")
    _check_tensor("cdist", x2, "x2")
    if x1.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{_scalar_name(x1.dtype)}")
    if not x2.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: "
                           f"{_scalar_name(x2.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if p == 0 or p == math.inf:
        return _cdist_count_or_max(x1, x2, p)
    diff = O.sub(O.unsqueeze(x1, -2), O.unsqueeze(x2, -3))
    return vector_norm(diff, p, -1)


def _cdist_count_or_max(x1, x2, p):
    """cdist for ``p = 0`` and ``p = inf``, values and gradients as torch's cdist kernels (not
    its norms'): over the last dim of ``diff = x1[..., :, None, :] - x2[..., None, :, :]``,
    ``p = 0`` counts the non-zeros, a NaN ``diff`` (NaN input, ``inf - inf``) giving NaN
    (torch's ``min(ceil(|diff|), 1)``); ``p = inf`` is the largest ``|diff|`` that is not NaN
    (0 when every one is NaN, or M = 0: torch starts from 0 and its ``max`` skips NaN).
    Gradients: ``p = 0`` exact zeros for both inputs (torch's cdist backward, where
    ``vector_norm(ord=0)`` gives none); ``p = inf`` the whole gradient to every tied element,
    ``g * sign(diff) * (1 - min(1, ceil(||diff| - dist|)))`` summed per row (NaN where ``diff``
    is NaN, and at an infinite element of an infinite distance: ``inf - inf``), x2's from
    ``x2 - x1`` (its zeros stay +0). The result has a history when either input requires grad
    (grad mode on); the formula is made of tensorplay ops (double backward works)."""
    from .autograd.function import FunctionCtx, attach
    from .autograd.grad_mode import no_grad
    with no_grad():
        diff = O.sub(O.unsqueeze(x1, -2), O.unsqueeze(x2, -3))
        if p == 0:
            out = O.sum(O.where(O.isnan(diff), math.nan, O.to_dtype(O.ne(diff, 0), diff.dtype)),
                        [-1], False)
        elif diff.shape[-1] == 0:
            out = O.full(list(diff.shape[:-1]), 0.0, dtype=diff.dtype, device=diff.device)
        else:
            ad = O.abs(diff)
            out = O.amax(O.where(O.isnan(ad), 0.0, ad), [-1], False)
    if not ((x1.requires_grad or x2.requires_grad) and _grad_enabled()):
        return out
    if _capturing():
        return _cdist_composite(x1, x2, p, out)
    ctx = FunctionCtx()
    if p == 0:
        ctx.shapes = [(list(x.shape), x.dtype, x.device) for x in (x1, x2)]
        return attach("tp::cdistBackward", _cdist_zero_bw, ctx, (x1, x2), out, TensorBase)
    ctx.save_for_backward(x1, x2, out)
    return attach("tp::cdistBackward", _cdist_inf_bw, ctx, (x1, x2), out, TensorBase)


def _cdist_zero_bw(ctx, g):
    return tuple(O.full(shape, 0, dtype=dt, device=dev) if need else None
                 for (shape, dt, dev), need in zip(ctx.shapes, ctx.needs_input_grad))


def _cdist_inf_bw(ctx, g):
    x1, x2, dist = ctx.saved_tensors

    def one(a, b, ga, da):
        # a's gradient from diff = a[..., :, None, :] - b[..., None, :, :] (torch's formula)
        d = O.sub(O.unsqueeze(a, -2), O.unsqueeze(b, -3))
        gap = O.abs(O.sub(O.abs(d), O.unsqueeze(da, -1)))
        one_ = O.full([], 1.0, dtype=gap.dtype, device=gap.device)
        at_max = O.rsub(O.minimum(O.ceil(gap), one_), 1.0)
        gd = O.mul(O.unsqueeze(ga, -1), O.mul(O.sign(d), at_max))
        return O.sum(gd, [-2], False).sum_to_size(tuple(a.shape))

    n1, n2 = ctx.needs_input_grad
    return (one(x1, x2, g, dist) if n1 else None,
            one(x2, x1, _mT(g), _mT(dist)) if n2 else None)


def _cdist_composite(x1, x2, p, out):
    """The same values from built-in ops, for ``tensorplay.compile`` (it records built-in ops
    only): ``p = 0`` a count whose gradient is zeros (``sign``'s); ``p = inf`` the detached
    result ``out`` plus terms that are exactly 0 with the gradient of ``|diff|`` at each tied
    finite maximum, and ``hypot(|diff|, 0)`` (``inf``, NaN gradient) at infinite elements of
    an infinite distance."""
    diff = O.sub(O.unsqueeze(x1, -2), O.unsqueeze(x2, -3))
    if p == 0:
        counted = O.where(O.ne(diff, 0), 1.0, O.sign(diff))
        return O.sum(O.where(O.isnan(diff), math.nan, counted), [-1], False)
    a = O.abs(diff)
    ad = a.detach()
    fin = O.isfinite(ad)
    at_max = O.logical_and(O.eq(ad, O.unsqueeze(out, -1)), fin)
    finite = O.where(fin, ad, 0.0)
    zero_part = O.where(at_max, O.sub(a, finite), 0.0)
    at_inf = O.logical_and(O.isinf(ad), O.isinf(O.unsqueeze(out, -1)))
    inf_part = O.where(at_inf, O.hypot(O.where(at_inf, a, 1.0), O.sub(finite, finite)), 0.0)
    return O.add(out, O.sum(O.add(zero_part, inf_part), [-1], False))
