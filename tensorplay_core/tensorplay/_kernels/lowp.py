"""bfloat16 for array backends whose bf16 is a storage type only (NumPy + ml_dtypes, CuPy).

NumPy knows ``bfloat16`` through ``ml_dtypes`` as a structured-kind (``'V'``) dtype: the reference
kernels' ``dtype.kind == 'f'`` tests do not see it as floating, ``bf16 + 2.5`` promotes to float32
and ``sum`` accumulates in bf16. torch computes every bf16 op in float32 ("opmath") and rounds the
result once; ``wrap_kernels`` does exactly that around the reference kernels: bf16 array arguments
are cast to float32, the float32 kernel runs, and a floating float32 result is rounded back to
bf16 when torch's promotion would give bf16 (every floating tensor argument that decides the
result dtype is bf16). Reductions therefore accumulate in float32; ``sum(x, dtype=...)`` keeps an
explicitly asked dtype.

Nothing here imports an array library: a backend calls ``enable(backend)`` the first time a bf16
dtype or array reaches it, so programs that never use bf16 pay nothing per call.
"""

from __future__ import annotations

import importlib
import threading

_lock = threading.Lock()

# ops computed in float32 for bf16 inputs: arithmetic, math, comparisons, reductions, matmul,
# softmax, scatter-add. Data movement (copy, cat, index, where's selection, to_dtype) needs no
# arithmetic and runs on bf16 directly.
COMPUTE = frozenset({
    "add", "sub", "rsub", "mul", "div", "rdiv", "pow", "rpow", "floor_divide", "remainder",
    "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "logical_not", "sign", "neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "abs",
    "sin", "cos", "erf", "where", "sum", "mean", "amax", "amin", "argmax", "matmul", "softmax",
    "log_softmax", "index_add", "isnan", "isinf", "isfinite", "floor", "ceil", "round", "all",
    "any", "prod", "cumsum", "max_dim", "min_dim", "sort", "argsort", "argmin", "scatter_add",
    "expm1", "log1p", "log2", "log10", "exp2", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "trunc", "atan2", "hypot", "fmod", "xlogy", "copysign", "asinh", "acosh", "atanh",
    "fmax", "fmin",
    # special functions (session 46)
    "lgamma", "digamma", "polygamma", "mvlgamma", "erfc", "erfcx", "erfinv", "ndtri", "i0",
    "i0e", "i1", "i1e", "sinc", "xlog1py", "heaviside", "ldexp", "frexp",
    "_norm_root",   # session 48
    # sorted in float32 as sort/argsort: ml_dtypes' own bf16 sort (0.5, the minimum) does not
    # order NaN, so topk missed the largest values and searchsorted misplaced NaN/inf
    "topk", "searchsorted",
})
# (logit: its kernel takes bfloat16 itself -- torch rounds each of its steps, _kernels/special)

# binary ops outside BINARY whose operands torch's TensorIterator converts to the common dtype
# first: a Python number or a 0-dim tensor of another floating dtype beside a dimensioned bf16
# tensor is rounded to bf16 before the float32 computation (fmod(x, 0.7) divides by bf16(0.7))
OPERANDS_ROUNDED = frozenset({"pow", "rpow", "fmod", "atan2", "hypot", "xlogy", "xlog1py",
                              "copysign"})
# torch's bf16 kernels that round an intermediate step to bf16 (its Vectorized<BFloat16>
# arithmetic, or BFloat16 overloads of std::log): xlogy/xlog1py (log(y), then x * it), pow by
# 3 or -2 (x * x, then * x or 1 / it)
STEPPED = frozenset({"pow", "xlogy", "xlog1py"})


# binary ops whose operands follow torch's reduced-float scalar rule (``_dtype``)
BINARY = frozenset({"add", "sub", "rsub", "mul", "div", "rdiv", "floor_divide",
                                      "remainder", "maximum", "minimum", "eq", "ne", "lt", "le",
                                      "gt", "ge"})


def wrap_kernels(kernels: dict, backend) -> dict:
    """``kernels`` with each op of ``COMPUTE`` (and ``add_``/``sub_``/``mul_``/``div_``) made
    bf16-correct."""
    from .. import _dtype
    BF = backend.native_dtype(_dtype.bfloat16)
    F32 = backend.native_dtype(_dtype.float32)
    out = dict(kernels)
    bf16 = _dtype.bfloat16
    at_opmath = _dtype.SCALAR_AT_OPMATH
    round_scalar = _dtype.round_scalar
    plain_mul = kernels.get("mul")

    def operands(name, a, b):
        """``a``, ``b`` of binary op ``name`` whose common dtype is bf16, as float32 arrays and
        numbers holding what torch computes with (``_dtype``'s scalar rule): every operand
        rounded to bf16 first, but a one-element second operand of mul/div/floor_divide read
        at float32."""
        keep_b = name in at_opmath
        out = []
        for i, x in enumerate((a, b)):
            xd = getattr(x, "dtype", None)
            if xd is None:
                if x.__class__ is not bool and not (i and keep_b):
                    x = round_scalar(x, bf16)
            elif xd == BF:
                x = x.astype(F32)
            elif xd.kind == "b":
                pass    # bool stays bool: the kernel's own refusals (bool - bf16) see it
            elif not (i and keep_b and x.size == 1):
                x = rnd(x)
            out.append(x)
        return out

    np_mod = backend.np

    def rnd(x):
        """An array rounded to bf16, as float32: a float64 or integer array through float32
        first (rounded twice, as torch converts to bf16; ml_dtypes 0.7 rounds a double once)."""
        if x.dtype != F32 and x.dtype.itemsize >= 4:
            with np_mod.errstate(over="ignore"):
                x = x.astype(F32)
        return x.astype(BF).astype(F32)

    def common(x):
        """An operand of a bf16-result op of OPERANDS_ROUNDED at float32, converted to bf16 first
        (torch's common dtype): numbers and non-bf16 floating arrays rounded."""
        xd = getattr(x, "dtype", None)
        if xd is None:
            return x if x.__class__ is bool else round_scalar(x, bf16)
        if xd == BF:
            return x.astype(F32)
        if xd.kind == "f":
            return rnd(x)
        return x

    def stepped(name, a, b):
        """torch's rounded intermediate (STEPPED) of ``name`` on float32 operands ``a``, ``b``
        (``common``'s): the float32 result, or None where the op has none."""
        if name == "pow":
            if b.__class__ in (int, float) and b in (3, -2) and hasattr(a, "dtype"):
                # 0 ** -2 is inf and 1e20 ** 3 overflows, as torch: no warning
                with np_mod.errstate(divide="ignore", over="ignore"):
                    sq = rnd(a * a)
                    return sq * a if b == 3 else 1.0 / sq
            return None
        # xlogy / xlog1py: x * bf16(log(y)), 0 where x is 0, NaN where y is NaN
        x = np_mod.asarray(a, dtype=F32)
        y = np_mod.asarray(b, dtype=F32)
        lg = rnd((np_mod.log if name == "xlogy" else np_mod.log1p)(y))
        r = x * lg
        r = np_mod.where(x == 0, F32.type(0), r)
        return np_mod.where(np_mod.isnan(y), y + np_mod.zeros_like(r), r)

    def opmath(k, name):
        binary = name in BINARY
        recip = name == "rdiv"
        rounds = name in OPERANDS_ROUNDED
        steps = name in STEPPED
        # torch's bf16 fmax/fmin return ``other`` on a tie of zeros (its float32 ones, the
        # kernel's, ``input``): the operands are handed over swapped (the ops are symmetric
        # but for that tie; a NaN loses either way)
        swap = name in ("fmax", "fmin")

        def kernel(*args, **kw):
            bf = False
            for a in args:
                if getattr(a, "dtype", None) == BF:
                    bf = True
                    break
            if not bf or name == "index_add" and args[0].dtype != args[3].dtype:
                return k(*args, **kw)     # (index_add refuses mixed dtypes: the kernel says so)
            # does a non-bf16 floating tensor take part in the result dtype? (torch: dimensioned
            # tensors decide over 0-dim ones within a category)
            floats = [a for a in args if hasattr(a, "dtype") and
                      (a.dtype == BF or a.dtype.kind == "f")]
            deciders = [a for a in floats if a.ndim] or floats
            back = all(a.dtype == BF for a in deciders)
            asked = kw.get("dtype")
            if asked is not None:
                back = asked is _dtype.bfloat16
                if back:
                    kw = dict(kw, dtype=_dtype.float32)
            if binary and back and len(args) == 2:
                a, b = args
                if recip and getattr(b, "dtype", None) is None:
                    # s / t is t.reciprocal() * s in torch: the reciprocal rounded to bf16, then
                    # mul's rule (s read at float32)
                    a = k(a.astype(F32), 1).astype(BF).astype(F32)
                    r = plain_mul(a, b)
                else:
                    r = k(*operands(name, a, b))
            elif rounds and back and len(args) == 2 and asked is None:
                a, b = common(args[0]), common(args[1])
                r = stepped(name, a, b) if steps else None
                if r is None:
                    r = k(a, b)
            else:
                if swap and len(args) == 2:
                    args = args[::-1]
                r = k(*[a.astype(F32) if getattr(a, "dtype", None) == BF else a for a in args],
                      **kw)
            if back:
                if getattr(r, "dtype", None) == F32:
                    r = r.astype(BF)
                elif r.__class__ in (tuple, list):        # (values, indices) of max/min/sort
                    r = r.__class__(x.astype(BF) if getattr(x, "dtype", None) == F32 else x
                                    for x in r)
            return r
        kernel.__wrapped__ = k
        return kernel

    for name in COMPUTE:
        if name in out:
            out[name] = opmath(out[name], name)

    def inplace(name, compute):
        orig = out.get(name)
        if orig is None or compute is None:
            return

        def kernel(dst, other):
            if dst.dtype == BF:
                r = compute(dst, other)              # float32 math, rounded to bf16 when bf16
                if getattr(r, "dtype", None) is not None and r.dtype.kind in "biu":
                    return orig(dst, other)
                backend.assign(dst, r)
                return None
            if getattr(other, "dtype", None) == BF:
                other = other.astype(F32)
            return orig(dst, other)
        kernel.__wrapped__ = orig
        out[name] = kernel

    plain_cast = kernels.get("to_dtype")
    if plain_cast is not None:
        from .array_backend import wide_for_bf16
        errstate = getattr(np_mod, "errstate", None)

        def to_dtype(x, dtype):
            # torch converts to and from bf16 through float32; ml_dtypes' own casts follow its
            # version: since 0.7 bf16 NaN/inf/out-of-range to an integer dtype gives 0 (float32's
            # conversion gives INT_MIN for int32, as torch) and a float64/int64 rounds to bf16
            # once (1 + 2**-8 + 2**-30: 1.0078125, torch 1.0), 0.5 went through float32
            # (identity tests: ml_dtypes' bf16 dtype is one object; ``==`` costs ~0.1 µs)
            if dtype is bf16:
                if wide_for_bf16(x.dtype):
                    if errstate is None:
                        x = x.astype(F32)
                    else:
                        with errstate(over="ignore"):
                            x = x.astype(F32)
            elif x.dtype is BF and dtype._kind == "i":
                x = x.astype(F32)
            return plain_cast(x, dtype)
        to_dtype.__wrapped__ = plain_cast
        out["to_dtype"] = to_dtype

    inplace("add_", out.get("add"))
    inplace("mul_", out.get("mul"))
    inplace("sub_", out.get("sub"))
    inplace("div_", out.get("div"))
    return out


def _bf16_assign(backend):
    """``backend.assign`` (``dst[...] = src``) converting into a bfloat16 ``dst`` as torch does:
    a Python number, or a float64 / 32- or 64-bit integer source, through float32 (rounded
    twice). ml_dtypes 0.7 rounds a double to bf16 once (``fill_(1 + 2**-8 + 2**-30)`` gave
    1.0078125, torch 1.0), 0.5 through float32. Installed by ``enable``: programs without bf16
    keep the plain method."""
    from .. import _dtype
    from .array_backend import wide_for_bf16
    plain = backend.assign
    f32 = backend.native_dtype(_dtype.float32)
    bf16 = _dtype.bfloat16
    round_scalar = _dtype.round_scalar
    quiet = backend.np.errstate if hasattr(backend.np, "errstate") else None

    bfd = backend.native_dtype(bf16)      # (one dtype object: an identity test per call)

    def convert(src):
        """``src`` as a bf16 destination takes it: a number, or a wide array through float32."""
        c = src.__class__
        if c is float or c is int:
            return round_scalar(src, bf16)          # (a double that bf16 holds exactly)
        sd = getattr(src, "dtype", None)
        if sd is not None and sd is not bfd and wide_for_bf16(sd):
            if quiet is None:
                return src.astype(f32)
            with quiet(over="ignore"):     # (out of range: inf, as torch, quietly)
                return src.astype(f32)
        return src

    from .array_backend import ArrayBackend
    if getattr(type(backend), "assign", None) is ArrayBackend.assign:
        # the plain method is ``dst[...] = src``, written here: every copy_/fill_/setitem passes
        # here once bf16 is in use, one frame rather than two
        def assign(dst, src):
            if dst.dtype is bfd:
                src = convert(src)
            dst[...] = src
    else:
        def assign(dst, src):
            if dst.dtype is bfd:
                src = convert(src)
            return plain(dst, src)
    assign.__wrapped__ = plain
    return assign


def enable(backend) -> None:
    """Switch ``backend``'s built-in kernels to the bf16-correct ones (once; thread-safe).

    Re-binds the built-in ops' kernels for the backend's device when the backend is already
    installed, so ops called after the first bf16 tensor exists see bf16 correctly.
    """
    if backend._lowp_enabled:
        return
    with _lock:
        if backend._lowp_enabled:
            return
        backend._lowp_enabled = True
        backend.assign = _bf16_assign(backend)
        # the backend's kernels() builds the table again, now through wrap_kernels (a backend
        # may layer its own fast paths over it, so the rebuild is its job, not a wrap here)
        backend._kernels = None
        from .. import _backend
        if _backend._LOADED.get(backend.device_type) is backend:
            # the built-in ops are layers above the kernels: named here, at this once-per-backend
            # call, by module name (docs/ARCHITECTURE.md "Layers": upward routes at run time)
            importlib.import_module("tensorplay._ops").install_backend(backend)


class Bfloat16Dtypes:
    """Mixin for the NumPy-like backends (cpu: NumPy, cuda: CuPy) that store ``tensorplay.bfloat16``
    as ``ml_dtypes.bfloat16`` arrays: the dtype mapping in both directions, switching the backend
    to the bf16-correct kernels (``enable``) on its first bf16 tensor, whether the tensor was made
    here or came from outside (``from_numpy``, DLPack). Put it before ``ArrayBackend`` in the
    bases. Raises ``TypeError`` naming the fix when ml_dtypes is not installed."""

    _lowp_enabled = False      # set by ``enable`` on the first bf16 tensor

    def native_dtype(self, dt):
        r = self._native_cache.get(dt)
        if r is None:
            if dt.name == "bfloat16":
                try:
                    import ml_dtypes
                except ImportError:
                    raise TypeError(f"{self.device_type}: bfloat16 needs the ml_dtypes package "
                                    f"(pip install ml_dtypes); use float16 or float32 "
                                    f"meanwhile") from None
                import numpy      # the dtype object both NumPy and CuPy arrays take
                r = self._native_cache[dt] = numpy.dtype(ml_dtypes.bfloat16)
                enable(self)
                return r
            return super().native_dtype(dt)
        return r

    def dtype_of(self, arr):
        r = self._dtype_cache.get(arr.dtype)
        if r is None:
            r = super().dtype_of(arr)
            if r.name == "bfloat16":            # a bf16 array from outside
                enable(self)
        return r
