"""Reference kernels of the pointwise unary ops: each op's array-API function
(``elementwise.OPS[op].xp``; integer inputs of floating functions in the default float dtype),
the composites (``sigmoid``, ``rsqrt``, ``relu``), ``erf`` (absent from the array API), the
classification and rounding ops (``floor``, ``ceil``, ``trunc``, ``round``)."""

from __future__ import annotations

from .. import _dtype
from .elementwise import OPS


def bind(c) -> dict:
    """``{op name: kernel}`` for this family on the context ``c`` (``_context.Context``)."""
    k = _from_table(c)
    k.update(_composites(c))
    k["erf"] = _erf(c)
    k.update(_rounding(c))
    return k


def _from_table(c):
    """The ops that are one array-API call: ``xp.<form>(x)``, after ``fl`` for floating ones."""
    xp, fl = c.xp, c.fl

    def floating(f):
        return lambda x: f(fl(x))

    k = {}
    for name in ("neg", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos", "expm1", "log1p",
                 "log2", "log10", "exp2", "tan", "asin", "acos", "atan", "sinh", "cosh"):
        p = OPS[name]
        # exp2 is outside the array API: the backend's NumPy-like module has it as a ufunc
        f = getattr(xp, p.xp, None) or getattr(c.be.np, p.ufunc)
        k[name] = floating(f) if p.float_result else f

    k["sign"] = _sign(c)
    # inverse hyperbolics (torch.asinh/acosh/atanh): the array API's, integers as the default float
    for name in ("asinh", "acosh", "atanh"):
        k[name] = floating(getattr(xp, name, None) or getattr(c.be.np, "arc" + name[1:]))
    k.update(isnan=xp.isnan, isinf=xp.isinf, isfinite=xp.isfinite)
    return k


# from this many elements the cpu's float sign takes its large-array forms (below it each extra
# NumPy call costs more than the pass it saves)
_SIGN_LARGE = 16384


def _sign(c):
    """torch.sign: -1, 0 or 1 in the input's dtype; NaN gives 0 (torch's ``(x > 0) - (x < 0)``:
    NumPy's and CuPy's sign keep NaN); -0.0 gives +0.0; bool the input
    itself (a copy: NumPy's sign has no bool loop). One function for every namespace (the cuda
    kernels are these same code objects bound to CuPy): what differs is closed over."""
    xp, np_mod = c.xp, c.be.np
    name = getattr(np_mod, "__name__", "")
    # "numpy": NumPy's fast forms below; anything else (CuPy's float sign keeps NaN too: an
    # H200, CuPy 14, 2026-12-06): its sign, then NaN -> 0
    nan_rule = "numpy" if name == "numpy" else "where"
    i8, isnan, cnz, where = np_mod.int8, np_mod.isnan, np_mod.count_nonzero, np_mod.where
    gt, lt, sub, nsign = np_mod.greater, np_mod.less, np_mod.subtract, np_mod.sign
    bor = getattr(np_mod.bitwise_or, "reduce", None)
    # np.sign's values are +-1, +-0 or NaN: only a NaN has the exponent's top bit set, so one
    # OR-reduction of the bits (a SIMD pass, no temporary) tells whether there is one
    bits = {2: (np_mod.uint16, 1 << 14), 4: (np_mod.uint32, 1 << 30),
            8: (np_mod.uint64, 1 << 62)}

    def sign(x):
        dt = x.dtype
        k = dt.kind
        if k != "f":
            return xp.asarray(x, copy=True) if k == "b" else xp.sign(x)
        if nan_rule == "where":
            r = xp.sign(x)
            return xp.where(xp.isnan(r), 0, r)
        if x.size < _SIGN_LARGE:
            # np.sign and a NaN test: two calls more than NumPy's sign alone, the least an
            # exact form takes on a small array (the comparison form is three)
            r = nsign(x)
            m = isnan(r)
            return where(m, 0, r) if cnz(m) else r
        if dt.itemsize == 4:
            # float32: two comparisons and an int8 subtract (SIMD loops; NumPy's float32 sign
            # loop is slower than the three together), NaN 0 by construction
            d = gt(x, 0).view(i8)
            sub(d, lt(x, 0).view(i8), out=d)
            return d.astype(dt)
        # float64 (the comparisons' extra reads cost more than np.sign there), float16 (whose
        # int8 -> float16 cast is slow): np.sign, then the NaN test
        r = nsign(x)
        u, bit = bits[dt.itemsize]
        return where(isnan(r), 0, r) if int(bor(r.view(u), axis=None)) & bit else r
    return sign


def _composites(c):
    xp, fl, F16, F32, zero_order = c.xp, c.fl, c.F16, c.F32, c.zero_order
    # float16: the steps at float32, the result rounded once (torch's opmath; NumPy's/CuPy's
    # float16 loops round every step's result to float16: 1 / (1 + exp(-x)) in float16 gave
    # torch's sigmoid in 70% of the elements, 1 / sqrt(x) its rsqrt in 77% -- session 55).
    # (bfloat16 reaches these at float32 already: _kernels/lowp.)

    def sigmoid(x):
        x = fl(x)
        if x.dtype is F16:
            return xp.astype(1.0 / (1.0 + xp.exp(-xp.astype(x, F32))), F16)
        return xp.astype(1.0 / (1.0 + xp.exp(-x)), x.dtype)

    def relu(x):
        if x.dtype.kind == "b":
            raise TypeError("relu of a bool array")   # the fake rule raises torch's refusal
        # torch's cpu x < 0 ? 0 : x: NaN and -0.0 pass through (maximum gives +0.0 for -0.0 on
        # some dtypes and libraries); its cuda kernels (clamp_min(x, 0) with -0.0 ordered below
        # 0.0, ``Backend.signed_zero_order``) give 0.0 for -0.0. The devices' fast kernels
        # (tensorplay-cpu's, CuPy's one ElementwiseKernel, the Triton chains) compute the same
        if zero_order:
            return xp.where(x <= 0, xp.zeros_like(x), x)
        return xp.where(x < 0, xp.zeros_like(x), x)

    def rsqrt(x):
        x = fl(x)
        if x.dtype is F16:
            return xp.astype(1.0 / xp.sqrt(xp.astype(x, F32)), F16)
        r = 1.0 / xp.sqrt(x)
        # a Python float keeps a floating array's dtype: no cast (xp.astype copies always)
        return r if r.dtype == x.dtype else xp.astype(r, x.dtype)

    return dict(sigmoid=sigmoid, relu=relu, rsqrt=rsqrt)


# erf's approximations (coefficients lowest power first), fitted by
# benchmarks/derive_special.py (weighted least squares, Lawson's iteration towards the minimax
# error, residuals in long double; references from 50-digit decimal series and Laplace's
# continued fraction -- no library's table). With a = |x|, u = x * x:
#   a < 1:        erf(x) = x * A(u)                      (A: erf(x)/x as a polynomial in u)
#   a >= 1:       erf(x) = sign(x) (1 - B(t) / exp(u)),  t = 1 / (k + a), B ~ erfcx(a)
# float64: A of degree 11 (relative error 2.2e-16 in double Horner), B of degree 11 in
# t = 1 / (2 + a) on [1, 6] (its error weighted by erfc/erf, i.e. in units of erf, 1.8e-16; past
# 6 erf is 1 to double precision, and B(t) stays within [-2e-6, 0.093] there). float32 (in
# float32 arithmetic): degree 5 and 5, t = 1 / (1 + a) on [1, 4]; max relative error 1.8e-7
# measured on 2e6 points (past 4 erf rounds to 1 in float32).
_ERF_A64 = (
    1.1283791670955126, -0.3761263890318329, 0.11283791670935736, -0.02686617064189999,
    0.005223977597184997, -0.0008548325543170777, 0.00012055283117473796, -1.4924529435460431e-05,
    1.6445068012544285e-06, -1.6191790684743832e-07, 1.3652985252902399e-08,
    -7.679090172154615e-10,)
_ERF_B64 = (
    -1.8280280343585424e-06, 0.5641871311793186, 1.1298423006965197, 1.9442190402078612,
    3.120608042871939, 1.077660610051401, 3.4568462068078043, 0.007192032609245393,
    -94.53150898219802, 243.2468318190454, -249.98202000880534, 98.1733173243507,)
_ERF_A32 = (
    1.128379123319371, -0.37612327854052857, 0.1128018941398757, -0.02671152262367745,
    0.004917761436353457, -0.0005632181593157877,)
_ERF_B32 = (
    0.0007951927279598328, 0.5562801576840747, 0.5777094613360164, 0.4091885600007958,
    -0.9699554629998135, 0.43822680774999045,)
_ERF_BLOCK = 32768     # elements per block of a large array (the temporaries stay in L2)


def _erf(c):
    xp, nd = c.xp, c.nd
    F64, F32 = nd(_dtype.float64), nd(_dtype.float32)
    numpy_mod = c.be.np if getattr(c.be.np, "__name__", "") == "numpy" else None
    if numpy_mod is not None:
        _UINT = {4: numpy_mod.uint32, 8: numpy_mod.uint64}
        _SIGN = {4: numpy_mod.uint32(1 << 31), 8: numpy_mod.uint64(1 << 63)}

    def horner(coefs, v):
        # in place after the first product (a fresh array): ~25% faster than r * v + k
        r = v * coefs[-1]
        r += coefs[-2]
        for k in coefs[-3::-1]:
            r *= v
            r += k
        return r

    def erf_block(x, a_coefs, b_coefs, k):
        """erf of the float32 or float64 array ``x`` in its own dtype's arithmetic. On NumPy
        each branch runs on its own lanes only (gathered when both occur) and the sign is put
        back with integer bit operations (a third of ``copysign``'s time); elsewhere (CuPy)
        both branches run on every lane and ``where`` selects, reading nothing back to the
        host."""
        a = xp.abs(x)
        small = a < 1.0

        def erf_small(v):
            return v * horner(a_coefs, v * v)

        def erf_large(v):
            # 1 - B(t) / exp(v^2): exp overflows to inf past ~9.4 (float32) / 26.6 (float64),
            # where erf is 1 anyway; +inf gives 1, NaN passes
            return 1.0 - horner(b_coefs, 1.0 / (k + v)) / xp.exp(v * v)

        if numpy_mod is None:
            # (the small branch's lanes beyond 1 give +-inf or NaN, which `where` drops)
            return xp.copysign(xp.where(small, erf_small(a), erf_large(a)), x)
        n_small = int(numpy_mod.count_nonzero(small))
        if n_small == a.size:
            r = erf_small(a)
        elif n_small == 0:
            r = erf_large(a)
        else:
            r = numpy_mod.empty_like(a)
            i_small = numpy_mod.flatnonzero(small)
            i_large = numpy_mod.flatnonzero(~small)
            r[i_small] = erf_small(a[i_small])
            r[i_large] = erf_large(a[i_large])
        if r.size > 2048:
            # r >= 0 (or NaN): erf is odd, so x's sign bit is the result's (-0.0 keeps it);
            # on a large block two integer operations cost a third of copysign's time (the
            # same bits: copysign is exact)
            bits = r.view(_UINT[r.dtype.itemsize])
            numpy_mod.bitwise_or(bits, x.view(bits.dtype) & _SIGN[r.dtype.itemsize], out=bits)
            return r
        return xp.copysign(r, x)

    def blocked(x, a_coefs, b_coefs, k):
        if numpy_mod is None:
            return erf_block(x, a_coefs, b_coefs, k)
        # NumPy: one dimension (a 0-dim array's arithmetic would give NumPy scalars); a large
        # array in blocks, so every temporary of a block stays in cache (and comes from the
        # heap, not mapped and faulted in page by page)
        n = x.size
        flat = xp.reshape(x, (-1,))
        if n <= _ERF_BLOCK:
            return xp.reshape(erf_block(flat, a_coefs, b_coefs, k), x.shape)
        out = numpy_mod.empty(n, dtype=x.dtype)
        for s in range(0, n, _ERF_BLOCK):
            out[s:s + _ERF_BLOCK] = erf_block(flat[s:s + _ERF_BLOCK], a_coefs, b_coefs, k)
        return xp.reshape(out, x.shape)

    def erf(x):
        """erf of a floating (or integer: the default float dtype) array, same as torch.erf:
        float64 within ~2 ulp, float32 within ~2 float32 ulp computed in float32, float16
        from the float64 result rounded once; erf(-0.0) = -0.0, erf(+-inf) = +-1, NaN passes."""
        x = c.fl(x)
        dt = x.dtype
        if dt == F64:
            return blocked(x, _ERF_A64, _ERF_B64, 2.0)
        if dt == F32:
            return blocked(x, _ERF_A32, _ERF_B32, 1.0)
        # float16 (and any other narrow float): the float64 result rounded once
        return xp.astype(blocked(xp.astype(x, F64), _ERF_A64, _ERF_B64, 2.0), dt)
    return erf


def _rounding(c):
    xp = c.xp

    def unchanged_ints(f):
        def k(x):
            return f(x) if x.dtype.kind == "f" else xp.asarray(x, copy=True)
        return k

    def round_(x, *, decimals=0):
        if x.dtype.kind != "f":
            return xp.asarray(x, copy=True)
        if decimals == 0:
            return xp.round(x)   # half to even, as torch
        if x.dtype.itemsize < 4:
            # float16: scaled in float32 as torch (round(1e4, decimals=1) is 1e4: x * 10
            # overflowed float16 to inf)
            return xp.astype(round_(xp.astype(x, c.F32), decimals=decimals), x.dtype)
        if decimals > 0:
            s = 10.0 ** decimals
            return xp.astype(xp.round(x * s) / s, x.dtype)
        s = 10.0 ** -decimals
        return xp.astype(xp.round(x / s) * s, x.dtype)

    return dict(floor=unchanged_ints(xp.floor), ceil=unchanged_ints(xp.ceil),
                trunc=unchanged_ints(xp.trunc), round=round_)
