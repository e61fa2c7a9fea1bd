"""Reference kernels of the special functions (``torch.special``'s family): ``lgamma``,
``digamma``, ``polygamma``, ``mvlgamma``, ``erfc``, ``erfcx``, ``erfinv``, ``ndtri``, the
modified Bessel functions ``i0``, ``i0e``, ``i1``, ``i1e``, ``sinc``, ``logit``, ``xlog1py``,
``heaviside``, ``ldexp`` and ``frexp``.

Written once against the array namespace ``xp`` (NumPy and CuPy alike; the array API has none of
these functions). Every floating function is computed in float64 and rounded once to the input's
dtype (float32, float16: ~1 ulp; bfloat16 through ``lowp``'s float32 path); integer and bool
inputs give the default float dtype, as torch.

The approximations are derived here, not tables copied from a library: the Taylor, Stirling,
asymptotic and Euler-Maclaurin coefficients are computed (on the first special-function call,
``_tables``) from Bernoulli numbers, zeta values, Hermite polynomials or ``math.erfc`` at fixed
points; the polynomials ``_LG1``, ``_LG2``, ``_PSI_ROOT`` (lgamma and digamma near their zeros)
and ``_ERFINV_C``/``_ERFINV_T`` (erfinv's first guess) are fitted to those series (or to
``math.erf`` pairs) by benchmarks/derive_special.py, which reproduces them. Accuracy in float64
(tests/test_special46.py checks it against Python's ``math`` and closed forms):
erfc/erfcx/erfinv/ndtri within a few ulp; lgamma a few ulp away from its roots (absolute error
~1e-16 near the roots of negative arguments); digamma within 3 ulp on (0, 1), 2 on [1, 2), 1
on [2, 10) (Taylor tables, ``_psi_tab``), 2 beyond, and at negative arguments within 6 ulp of
the larger term of its reflection (28 next to -1/2; session 48, dense grids against 50-digit
references); polygamma a few ulp away from its zeros; i0/i0e/i1/i1e a few ulp.

Cost: on NumPy (the cpu device) each branch of a function runs on its own lanes only
(``branch``: gathered, computed, scattered back) and arrays of more than ``_BLOCK`` elements go
block by block, so a block's temporaries stay in cache. On any other array module (CuPy) every
branch is computed on every lane and ``where`` selects: nothing is read back to the host (a
read is a device synchronisation; there polygamma reflects negative arguments instead of a
direct sum whose length was their smallest, read back, until session 47: a few times less
accurate near the zeros of the even orders than NumPy's direct sum, within 1e-11 relative;
NumPy takes the reflection too below -2^20, where the sum would be too long: before session
48 a RuntimeError there). At large negative non-integers the reflection cancels to an
absolute error of about pi^(n+1) n! 6e-17 (the cot of a half integer rounded: 4e-15 for n = 2).
"""

from __future__ import annotations

import math

from .. import _dtype
from .binary import x_times

_PI = math.pi
# polygamma(n >= 2) on the host: the direct sum above this, the reflection below (session 48)
_POLYGAMMA_FAR = -float(1 << 20)
_SQRT_PI = math.sqrt(math.pi)
_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)
_SQRT2 = math.sqrt(2.0)


# -- coefficient tables, computed from closed forms on first use (_tables) ------------------------
# erfc's Taylor tables: centres 0.5, 0.5625, ..., 6.125 (|h| <= 1/32 from the nearest; the terms
# go as (2 c h)^n / n!, below 3e-19 of erfc(c) from n = 15 on at c = 6.125)
_ERFC_STEP = 0.0625
_ERFC_CENTRES, _ERFC_TERMS = 91, 15
_ERFC_TAYLOR_END = 0.5 + _ERFC_STEP * (_ERFC_CENTRES - 1) + _ERFC_STEP / 2   # 6.15625: CF beyond
# erf(x) = 2/sqrt(pi) sum_n (-1)^n x^(2n+1) / (n! (2n+1)), highest power first (|x| < 0.5:
# the term n = 14 is below 2e-21 of the sum)
_ERF_SERIES = [_TWO_OVER_SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1))
               for n in range(13, -1, -1)]
_EULER = 0.57721566490153286061
_BESSEL_SWITCH = 20.0          # power series below, Hankel's expansion from here
_BESSEL_SERIES_TERMS = 44
# 1 / (k! (k + nu)!), the power series' coefficients in (x/2)^2 (nu = 0, 1)
_BESSEL_SERIES = [[1.0 / (math.factorial(k) * math.factorial(k + nu))
                   for k in range(_BESSEL_SERIES_TERMS)] for nu in (0, 1)]
_PSI_ROOT_TERMS = 40           # digamma's Taylor series about its positive zero, on [1, 2)
# digamma on [2, 10): Taylor tables at the centres 2 + (j + 1/2)/16, j < 128 (|h| <= 1/32 from
# the nearest; the term h^k zeta(k + 1, c) is below 1e-18 of psi(c) from k = 10 on at c = 2.03).
# Steps of 1/4 needed 14 terms, 1/8 11: each term is a gather, and 10 made the branch 10% faster
# than the shift to 10 it replaced, 14 25% slower (session 48)
_PSI_TAB_STEP = 1.0 / 16
_PSI_TAB_CENTRES, _PSI_TAB_TERMS = 128, 10
_BLOCK = 65536                 # elements per block of a large NumPy array (temporaries in L2)


# lgamma near its zeros, fitted (benchmarks/derive_special.py) to the Taylor series about 1 and 2
# (``_tables().lg1``/``lg2``, 58 terms each from zeta values, summed exactly): with z = y - 1 on
# [-1/2, 1/2], lgamma(1 + z) = z (-gamma + z _LG1(z)); with z = y - 2 on [-1/2, 1),
# lgamma(2 + z) = z (1 - gamma + z _LG2(z)). 27 and 21 terms instead of 58 (relative error of
# the polynomial 2.2e-16 and 2.1e-16 in double Horner).
_LG1 = (
    0.8224670334241132, -0.4006856343865327, 0.2705808084277938, -0.20738555102806372,
    0.16955717699501138, -0.14404989685560463, 0.12550966976773362, -0.11133426013724305,
    0.10009944469011618, -0.09095423002370999, 0.08335424461479919, -0.07692760188784417,
    0.07142472987136424, -0.06674342494983365, 0.06261377035507806, -0.05805174792203815,
    0.05448396571386267, -0.05812432366859948, 0.05709982041404673, -0.02090059823888068,
    0.012973538446972056, -0.12971361063782216, 0.1409904019465675, 0.13163998188355763,
    -0.14979677525485616, -0.21165087232364946, 0.21838675725946663,)
_LG2 = (
    0.3224670334241132, -0.06735230105319806, 0.020580808427785046, -0.0073855510286808075,
    0.0028905103307100546, -0.0011927539113816346, 0.00050966952536757, -0.00022315476540699843,
    9.945750990410335e-05, -4.492615784611641e-05, 2.050716405080135e-05, -9.439964020602925e-06,
    4.375573718340547e-06, -2.0379157357370678e-06, 9.515275615987506e-07, -4.491353989222085e-07,
    2.1956805718457575e-07, -1.0820254724204756e-07, 4.6050158318945554e-08,
    -1.3336770757447851e-08, 1.831038803307834e-09,)

# digamma about its positive zero x0 = 1.4616...: psi(x0 + z) = z _PSI_ROOT(z) for x in [1, 2),
# fitted (benchmarks/derive_special.py) to the 40-term Taylor series (``_tables().psi_root``,
# coefficients from zeta values): 23 terms, relative error 2.2e-16 in double Horner.
_PSI_ROOT = (
    0.9676722454476212, -0.44276316898359214, 0.2584997609556485, -0.16394270544240813,
    0.10782405069170678, -0.07219956125644711, 0.0488042881337107, -0.033161126463933675,
    0.02259764930123399, -0.015424766601216751, 0.010538769756671593, -0.007204514688048549,
    0.004927058356013814, -0.0033701143006763354, 0.002302902853333921, -0.0015739287054436163,
    0.0010899682855613302, -0.0007559198154567391, 0.0004725765033533736, -0.0002822713048591059,
    0.0002785634983508581, -0.00028030545740132635, 0.00012081580205362982,)

# erfinv's first guess (benchmarks/derive_special.py, fitted to pairs (w(x), x) from math.erf and
# math.erfc): with w = -log((1 - y)(1 + y)), erfinv(y) = y _ERFINV_C(w) for w < 5 and
# s _ERFINV_T(1 / s), s = sqrt(w), beyond; relative error below 1e-7 (down to 1 - y = 1e-307), so
# one Halley step (cubic) ends below double precision.
_ERFINV_C = (
    0.8862268433538016, 0.23201662398008505, 0.011532271995287561, -0.002298112980756145,
    -0.0001670040273753409, 6.85800720839515e-05, -4.5239263671777215e-06,
    -2.3052744638765512e-07, 2.8726860858666893e-08,)
_ERFINV_T = (
    1.0001021109004986, -0.015730072546784036, -1.5045104103403275, 8.63123985324543,
    -45.61124479547864, 204.76367715515775, -672.0558560106529, 1513.7626212059768,
    -2200.1773066859187, 1849.3575527740657, -681.3225620651782,)

# The asymptotic corrections in w = 1/x^2 (benchmarks/derive_special.py, fitted to their 14-term
# Bernoulli sums): lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + _STIRLING(w) / x for x >= 7 (7
# terms, not 10; error below 3e-19 of lgamma), digamma(x) = log x - 1/(2x) - w _PSI_ASYM(w) for
# x >= 10 (6 terms, not 10; below 2e-19 of digamma).
_STIRLING = (
    0.08333333333333333, -0.002777777777761082, 0.000793650780351223, -0.0005952341087555683,
    0.0008411776298116643, -0.0018745376912175124, 0.004744894078112409,)
_PSI_ASYM = (
    0.0833333333333333, -0.008333333333085655, 0.003968253676721579, -0.004166540846068972,
    0.007551063056553302, -0.018822963271249552,)


def _bernoulli(n: int) -> list:
    """B_0 .. B_n as Fractions: B_m = -1/(m+1) sum_{k<m} C(m+1, k) B_k (B_1 = -1/2; the odd
    ones past it are 0)."""
    from fractions import Fraction
    out = [Fraction(1)]
    for m in range(1, n + 1):
        if m > 1 and m % 2:
            out.append(Fraction(0))
            continue
        acc = sum((math.comb(m + 1, k) * out[k] for k in range(m) if out[k]), Fraction(0))
        out.append(-acc / (m + 1))
    return out


def _zeta_tail(s: int, q: float, bern: list) -> float:
    """zeta(s, q) for an integer s >= 2 and q > 0, to double precision: the terms below 12
    summed exactly (``math.fsum``), Euler-Maclaurin's tail from there."""
    terms = []
    while q < 12:
        terms.append(q ** -float(s))
        q += 1.0
    terms += [q ** (1.0 - s) / (s - 1), 0.5 * q ** -float(s)]
    rising = float(s)             # s (s+1) ... (s + 2j - 2)
    for j in range(1, 12):
        terms.append(float(bern[2 * j]) / math.factorial(2 * j) * rising * q ** (-s - 2 * j + 1))
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return math.fsum(terms)


def _erfc_taylor_table():
    """Taylor coefficients of erfc at the centres 0.5, 0.5625, ..., 6.125 (15 terms each):
    erfc^(n)(c) / n! = -(2/sqrt(pi)) exp(-c^2) (-1)^(n-1) H_(n-1)(c) / n!, with the physicists'
    Hermite polynomials H, and erfc(c) itself from ``math.erfc``."""
    rows = []
    for j in range(_ERFC_CENTRES):
        c = 0.5 + _ERFC_STEP * j
        e = _TWO_OVER_SQRT_PI * math.exp(-c * c)
        h_prev, h = 0.0, 1.0           # H_-1 (unused), H_0
        row = [math.erfc(c)]
        for n in range(1, _ERFC_TERMS):
            m = n - 1                   # H_m
            if m == 1:
                h_prev, h = h, 2.0 * c
            elif m > 1:
                h_prev, h = h, 2.0 * c * h - 2.0 * (m - 1) * h_prev
            row.append(-e * (-1) ** m * h / math.factorial(n))
        rows.append(row)
    return rows


def _bessel_asym(nu: int, terms: int) -> list:
    """Coefficients of I_nu(x) ~ e^x / sqrt(2 pi x) sum_k c_k x^-k (Hankel's expansion):
    c_k = (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! 8^k)."""
    out, c = [1.0], 1
    for k in range(1, terms):
        c = c * -(4 * nu * nu - (2 * k - 1) ** 2)           # exact integers
        out.append(c / (math.factorial(k) * 8 ** k))
    return out


def _psi_decimal(x, bern: list):
    """digamma of the ``Decimal`` x > 0 in the current decimal context (40 digits: the
    recurrence up to 40, then the asymptotic series with 12 Bernoulli terms, below 1e-40)."""
    from decimal import Decimal
    acc = Decimal(0)
    while x < 40:
        acc -= 1 / x
        x += 1
    r = acc + x.ln() - 1 / (2 * x)
    for k in range(1, 13):
        b = bern[2 * k]
        r -= Decimal(b.numerator) / Decimal(b.denominator) / (2 * k) / x ** (2 * k)
    return r


def _psi_taylor_table(bern: list):
    """digamma's Taylor coefficients at the centres c = 2 + (j + 1/2) / 16 (``_PSI_TAB_TERMS``
    each, a row per centre): psi(c) in 40-digit decimal arithmetic (on [2, 3), then psi(c + 1) =
    psi(c) + 1/c), rounded once; psi^(k)(c) / k! = (-1)^(k+1) zeta(k+1, c), with zeta(s, c) =
    zeta(s, c + m) + sum_{i<m} (c + i)^-s from the centres of [9, 10) (``math.fsum``: each
    coefficient within ~1 ulp)."""
    from decimal import Decimal, localcontext
    per_unit = int(round(1 / _PSI_TAB_STEP))
    units = _PSI_TAB_CENTRES // per_unit
    cs = [2.0 + _PSI_TAB_STEP * (j + 0.5) for j in range(_PSI_TAB_CENTRES)]
    psi = [None] * _PSI_TAB_CENTRES
    with localcontext() as ctx:
        ctx.prec = 40
        for j in range(per_unit):
            d = _psi_decimal(Decimal(cs[j]), bern)
            for u in range(units):
                psi[j + u * per_unit] = float(d)
                d += 1 / Decimal(cs[j] + u)          # (exact: c + u, c a multiple of 1/32)
    top = [[_zeta_tail(k + 1, cs[j + (units - 1) * per_unit], bern)
            for k in range(1, _PSI_TAB_TERMS)] for j in range(per_unit)]
    rows = []
    for j in range(_PSI_TAB_CENTRES):
        c, m = cs[j], units - 1 - j // per_unit
        rows.append([psi[j]] + [(-1) ** (k + 1) * math.fsum(
            [top[j % per_unit][k - 1]] + [(c + i) ** -float(k + 1) for i in range(m)])
            for k in range(1, _PSI_TAB_TERMS)])
    return rows


def _psi_root(bern: list):
    """(x0_hi, x0_lo, coefficients): x0 the positive zero of digamma to ~1e-32 (Newton's
    method in 40-digit decimal arithmetic), and psi's Taylor coefficients about it,
    psi^(k)(x0) / k! = (-1)^(k+1) zeta(k+1, x0)."""
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 40

        def psi(x):
            return _psi_decimal(x, bern)

        x = Decimal("1.4616321449683623")
        for _ in range(3):
            x -= psi(x) / Decimal(_zeta_tail(2, float(x), bern))
        hi = float(x)
        lo = float(x - Decimal(hi))
    coefs = [(-1) ** (k + 1) * _zeta_tail(k + 1, hi, bern) for k in range(1, _PSI_ROOT_TERMS + 1)]
    return hi, lo, coefs


_TABLES = None


_PSI_TAB = None


def _psi_tab():
    """digamma's Taylor tables on [2, 10) (``_psi_taylor_table``), made on the first digamma
    call that needs them (~7 ms: the other special functions do not pay for them)."""
    global _PSI_TAB
    if _PSI_TAB is None:
        _PSI_TAB = _psi_taylor_table(_bernoulli(26))
    return _PSI_TAB


def _tables():
    """The coefficient tables, made on the first special-function call (~10 ms, so loading a
    backend costs nothing for programs that never call one)."""
    global _TABLES
    t = _TABLES
    if t is not None:
        return t
    from types import SimpleNamespace
    bern = _bernoulli(26)
    zm1 = {s: _zeta_tail(s, 2.0, bern) for s in range(2, 60)}      # zeta(s) - 1
    t = SimpleNamespace(
        # lgamma(1 + z) = -gamma z + sum_{k>=2} (-1)^k zeta(k) z^k / k   (|z| < 1)
        lg1=[(-1) ** k * (1.0 + zm1[k]) / k for k in range(2, 60)],
        # lgamma(2 + z) = (1 - gamma) z + sum_{k>=2} (-1)^k (zeta(k) - 1) z^k / k   (|z| < 2)
        lg2=[(-1) ** k * zm1[k] / k for k in range(2, 60)],
        # Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum B_2k / (2k (2k-1) x^(2k-1))
        stirling=[float(bern[2 * k] / (2 * k * (2 * k - 1))) for k in range(1, 11)],
        # digamma: psi(x) = log x - 1/(2x) - sum B_2k / (2k x^2k)
        psi_asym=[float(bern[2 * k] / (2 * k)) for k in range(1, 11)],
        psi_root=_psi_root(bern),
        # Euler-Maclaurin: B_2j / (2j)!
        em=[float(bern[2 * j]) / math.factorial(2 * j) for j in range(1, 14)],
        erfc=_erfc_taylor_table(),
        i0_asym=_bessel_asym(0, 38), i1_asym=_bessel_asym(1, 38))
    _TABLES = t
    return t


def _horner(p, z, coefs):
    """``sum_k coefs[k] z^k`` (coefs lowest power first), as ``p`` (None: start at zero).
    In place after the first product, a fresh array (~25% faster on NumPy than ``r * z + c``:
    fewer temporaries), with the same roundings."""
    if len(coefs) == 1:
        r = coefs[0]
    else:
        r = z * coefs[-1]
        r += coefs[-2]
        for c in coefs[-3::-1]:
            r *= z
            r += c
    return r if p is None else p + r


def _cot_poly(n: int) -> tuple:
    """The coefficients (lowest power first, as ``_horner``) of ``P_n`` with
    ``d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x))``: ``P_0(c) = c``,
    ``P_k+1(c) = -(1 + c^2) P_k'(c)`` (exact integers, then floats)."""
    p = [0, 1]                      # ascending powers: c
    for _ in range(n):
        d = [i * p[i] for i in range(1, len(p))] or [0]      # P'
        q = [0] * (len(d) + 2)
        for i, v in enumerate(d):   # -(1 + c^2) * P'
            q[i] -= v
            q[i + 2] -= v
        p = q
    return tuple(float(v) for v in p)


def bind(c) -> dict:
    """``{op name: kernel}`` of the special functions on the context ``c``."""
    xp, nd, fl = c.xp, c.nd, c.fl
    F64 = nd(_dtype.float64)
    inf, nan = math.inf, math.nan

    # NumPy (the cpu device) computes on the host: a branch no lane takes is skipped (asking
    # costs one reduction) and large arrays go in blocks. Any other array module (CuPy) computes
    # every branch and selects with `where`: asking "does any lane take it" would read a value
    # back from the device, a synchronisation per branch that stalls the GPU's queue.
    numpy_mod = c.be.np if getattr(c.be.np, "__name__", "") == "numpy" else None

    def f64(fn):
        """Kernel computing ``fn`` in float64 and rounding once to the floating input dtype.
        On NumPy an array of more than ``_BLOCK`` elements is computed block by block (the
        tens of temporaries of a block stay in cache instead of each being a fresh mapping of
        the whole array's size); each element's value is the same either way."""
        def k(x, *args):
            x = fl(x)
            if numpy_mod is not None and x.size > _BLOCK:
                flat = xp.reshape(x, (-1,))
                out = numpy_mod.empty(x.size, dtype=x.dtype)
                for s in range(0, x.size, _BLOCK):
                    blk = flat[s:s + _BLOCK]
                    # (the assignment rounds a float64 result to x's dtype, as astype would)
                    out[s:s + _BLOCK] = fn(blk if blk.dtype == F64 else xp.astype(blk, F64),
                                           *args)
                return xp.reshape(out, x.shape)
            if numpy_mod is not None:
                # one dimension (``branch`` gathers lanes; a 0-dim array's arithmetic would
                # give NumPy scalars)
                flat = xp.reshape(x, (-1,))
                r = fn(flat if flat.dtype == F64 else xp.astype(flat, F64), *args)
                return xp.reshape(r if x.dtype == F64 else xp.astype(r, x.dtype), x.shape)
            if x.dtype == F64:
                return fn(x, *args)
            return xp.astype(fn(xp.astype(x, F64), *args), x.dtype)
        return k

    def full(x, v):
        return xp.full_like(x, v)

    def some(mask):
        """Whether any lane takes a branch: a branch no lane takes is not computed on NumPy
        (each is tens of array operations). Elsewhere True, reading nothing back."""
        return bool(xp.any(mask)) if numpy_mod is not None else True

    # -- gamma family -----------------------------------------------------------------------
    def branch(r, mask, fn, arg, safe):
        """``r`` with ``fn(arg)`` in the lanes of ``mask`` (arrays of one dimension). On NumPy
        ``fn`` sees only those lanes (gathered, then scattered back into ``r``, which it
        writes: a fresh array); elsewhere it sees every lane, ``safe`` in the others, and
        ``where`` keeps its lanes (no host read)."""
        if numpy_mod is None:
            return xp.where(mask, fn(xp.where(mask, arg, full(arg, safe))), r)
        idx = numpy_mod.flatnonzero(mask)
        if idx.size:
            r[idx] = fn(arg[idx])
        return r

    # -- gamma family -----------------------------------------------------------------------
    def lgamma_near1(y):
        # y < 0.5: lgamma(1 + y) - log(y), the polynomial taken at z = y itself (no rounding);
        # [0.5, 1.5): about 1
        small = y < 0.5
        z1 = xp.where(small, y, y - 1.0)
        s1 = z1 * (-_EULER + z1 * _horner(None, z1, _LG1))
        return xp.where(small, s1 - xp.log(y), s1) + 0.0      # (lgamma(1) is +0, not -0)

    def lgamma_mid(y):
        # [1.5, 7): down to [1.5, 3) by lgamma(y) = log((y-1)...(y-m)) + lgamma(y-m), then
        # the polynomial about 2
        yr, prod = y, xp.ones_like(y)
        for _ in range(4):
            m = yr >= 3.0
            if not some(m):
                break
            yr = xp.where(m, yr - 1.0, yr)
            prod = xp.where(m, prod * yr, prod)
        z2 = yr - 2.0
        return z2 * ((1.0 - _EULER) + z2 * _horner(None, z2, _LG2)) + xp.log(prod)

    def lgamma_big(y):
        # >= 7: Stirling
        inv = 1.0 / y
        return (y - 0.5) * xp.log(y) - y + _HALF_LOG_2PI + inv * _horner(
            None, inv * inv, _STIRLING)

    def lgamma_pos(y):
        """lgamma of y > 0 (finite), float64; other lanes (0, inf, NaN) give garbage that
        callers mask."""
        r = xp.zeros_like(y)
        r = branch(r, y < 1.5, lgamma_near1, y, 1.0)
        r = branch(r, (y >= 1.5) & (y < 7.0), lgamma_mid, y, 2.5)
        return branch(r, y >= 7.0, lgamma_big, y, 10.0)

    def sinpi_abs(x):
        """|sin(pi x)| with the argument reduced exactly first (x - round(x))."""
        return xp.abs(xp.sin(_PI * (x - xp.round(x))))

    def lgamma64(x):
        neg = x < 0
        any_neg = some(neg)
        r = lgamma_pos(xp.where(neg, 1.0 - x, x) if any_neg else x)
        if any_neg:
            # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); a negative
            # integer's sin(pi (x - round(x))) is exactly 0, so its lgamma is +inf
            refl = branch(xp.zeros_like(x), neg, lambda v: _LOG_PI - xp.log(sinpi_abs(v)), x,
                          -0.5)
            r = xp.where(neg, refl - r, r)
        # +-0 and +-inf give +inf, NaN NaN (|x| + inf)
        a = xp.abs(x)
        special = ~((a > 0) & (a < inf))
        return xp.where(special, a + inf, r) if some(special) else r

    def psi_asym(y):
        """digamma of y >= 10: the asymptotic series."""
        z = 1.0 / (y * y)
        return xp.log(y) - 0.5 / y - z * _horner(None, z, _PSI_ASYM)

    psi_tables = {}
    I64 = nd(_dtype.int64)
    # a gather: NumPy's method on the host (xp.take's wrapper costs ~0.8 us a call, ten calls
    # per digamma on [2, 10): 10% of a 16-element call)
    take = (lambda a, i: a.take(i)) if numpy_mod is not None else xp.take

    def psi_table(like):
        """The Taylor tables of digamma on [2, 10) as a (terms, centres) array on ``like``'s
        device (one gather of a lane's column gives its coefficients)."""
        dev = getattr(like, "device", None)
        t = psi_tables.get("tab")
        if t is None or t[0] != dev:
            arr = xp.asarray([list(col) for col in zip(*_psi_tab())], dtype=F64)
            if dev is not None and getattr(arr, "device", dev) != dev:
                arr = xp.asarray(arr, device=dev)
            psi_tables["tab"] = t = (dev, arr)
        return t[1]

    def psi_taylor(y):
        """digamma of 2 <= y < 10 from the Taylor table of the nearest centre c (y - c exact,
        |y - c| <= 1/32; all terms computed in float64 and added to psi(c) last: ~1 ulp, where
        the shift to 10 and the asymptotic series lost up to 8 ulp to cancellation below
        psi = 1 and 4 ulp beyond, session 48)."""
        tab = psi_table(y)
        shape = y.shape
        if len(shape) != 1:                      # (off NumPy: the kernel's own shape)
            y = xp.reshape(y, (-1,))
        # the cell: y - 2 and its scaling are exact, so idx is in [0, 127] with no clip (the
        # lanes outside [2, 10) are never here: gathered out on NumPy, 3.0 elsewhere)
        idx = xp.floor((y - 2.0) * (1 / _PSI_TAB_STEP))
        h = y - (2.0 + _PSI_TAB_STEP * (idx + 0.5))
        ii = xp.astype(idx, I64)
        # one gather per term from its row (a (terms, n) gather at once was 5% slower)
        p = h * take(tab[_PSI_TAB_TERMS - 1], ii)
        for j in range(_PSI_TAB_TERMS - 2, 0, -1):
            p += take(tab[j], ii)
            p *= h
        p += take(tab[0], ii)
        return p if len(shape) == 1 else xp.reshape(p, shape)

    def psi_root(x):
        """digamma of 0 < x < 2: on [1, 2) the polynomial about the zero x0 = 1.4616...
        (relative accuracy there), below 1 psi(x + 1) - 1 / x from it."""
        hi, lo, _ = _tables().psi_root
        down = x < 1.0
        xr = xp.where(down, x + 1.0, x)
        z = (xr - hi) - lo
        rr = z * _horner(None, z, _PSI_ROOT)
        return xp.where(down, rr - 1.0 / x, rr)

    def reflect_psi(v):
        # pi / tan(pi f), f = v - round(v) (exact), the distance to the nearest integer: torch's
        # v - trunc(v) lost up to 640 ulp of the reflection's larger term next to the integer
        # above v (pi f rounded near pi, where tan is small); |f| <= 1/2 leaves 28 ulp at -1/2
        # (pi f rounded near tan's pole; torch's too) and 6 below -1. Taking tan(pi (1/2 - |f|))
        # beyond |f| = 1/4 made that 3 and 4 but doubled this function's cost (fresh temporaries;
        # digamma of 20u 15% slower, session 48). NaN at the integers (torch: psi is NaN at
        # the negative integers).
        frac = v - xp.round(v)
        return xp.where(frac == 0, full(v, nan), _PI / xp.tan(_PI * frac))

    def digamma64(x):
        neg = x < 0
        any_neg = some(neg)
        ys = xp.where(neg, 1.0 - x, x) if any_neg else x
        r = branch(xp.zeros_like(x), (ys > 0) & (ys < 2.0), psi_root, ys, 1.5)
        r = branch(r, (ys >= 2.0) & (ys < 10.0), psi_taylor, ys, 3.0)
        r = branch(r, ys >= 10.0, psi_asym, ys, 10.0)       # (+inf: +inf)
        if any_neg:
            # reflection: psi(x) = psi(1 - x) - pi / tan(pi frac(x)) (-inf: NaN)
            r = xp.where(neg, r - branch(xp.zeros_like(x), neg, reflect_psi, x, -0.5), r)
        zero = x == 0
        if some(zero):
            # torch: psi(+-0) = -+inf
            r = xp.where(zero, xp.where(xp.signbit(x), full(x, inf), full(x, -inf)), r)
        return xp.where(xp.isnan(x), x, r)

    def hurwitz(s: int, q):
        """zeta(s, q) = sum_k (q + k)^-s for an integer s >= 2: direct sum until q + k >= 10,
        then Euler-Maclaurin. Inf at non-positive integers (the pole of a term), as torch. On
        NumPy the sum's length comes from the smallest argument (a host value there); off
        NumPy (a device: reading it back would synchronise) the callers pass q >= 0 (they
        reflect negative arguments) and the sum has 10 steps."""
        T = _tables()
        finite = xp.isfinite(q)
        qs = xp.where(finite, q, full(q, 10.0))
        n = 10
        if numpy_mod is not None and qs.size:
            n = max(10, int(math.ceil(10.0 - float(xp.min(qs)))))
            if n > 1 << 20:
                raise RuntimeError(f"polygamma: an argument below {-(1 << 20)} is not "
                                   f"supported (the direct sum would take {n} steps)")
        acc = xp.zeros_like(qs)
        a = qs
        for _ in range(n):
            m = a < 10.0
            acc = xp.where(m, acc + a ** (-s), acc)
            a = xp.where(m, a + 1.0, a)
        inv = 1.0 / a
        b = a ** (-s)
        acc = acc + b * a / (s - 1) + 0.5 * b
        rising, t = float(s), b * inv
        for j in range(1, 14):
            acc = acc + T.em[j - 1] * rising * t
            rising *= (s + 2 * j - 1) * (s + 2 * j)
            t = t * inv * inv
        return acc, finite

    def reflected_polygamma(x, n, sign_fact):
        """psi_n(x) for n >= 2 without a direct sum over negative arguments: negative x by
        reflection, psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x)), P_0(c) = c,
        P_k+1(c) = -(1 + c^2) P_k'(c); cot of the distance to the nearest integer (exact), so
        large |x| keep their accuracy; sign_fact * inf at the non-positive integers (poles)."""
        neg = x < 0
        z, finite = hurwitz(n + 1, xp.where(neg, 1.0 - x, x))
        r = sign_fact * z
        if some(neg):
            f = x - xp.round(x)
            pole = f == 0
            c = 1.0 / xp.tan(_PI * xp.where(pole, full(x, 0.5), f))
            refl = (r if n % 2 == 0 else -r) - _PI ** (n + 1) * _horner(None, c, _cot_poly(n))
            # a non-positive integer: the pole of a term, as torch (sign_fact * inf)
            r = xp.where(neg, xp.where(pole, full(x, sign_fact * inf), refl), r)
        # +inf: NaN, as torch's (its zeta(n + 1, inf) for n >= 2; trigamma's limit 0 is n = 1's)
        return xp.where(finite, r, xp.where(x > 0, full(x, nan), full(x, sign_fact * inf)))

    def polygamma64(x, n):
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        if n == 0:
            return digamma64(x)
        sign_fact = (1.0 if n % 2 else -1.0) * (
            float(math.factorial(n)) if n <= 170 else inf)     # n! overflows float64 past 170
        if n == 1:
            # torch's trigamma reflects below 1/2: psi1(x) = -psi1(1 - x) + pi^2 / sin^2(pi x)
            lo = x < 0.5
            q = xp.where(lo, 1.0 - x, x)
            z, finite = hurwitz(2, q)
            # sin(pi f), f = x - round(x) (exact; sin(pi x) of a large |x| lost its digits to
            # the rounding of pi x: 4e4 ulp at -28); at an integer sin(pi x) itself, whose
            # rounding leaves torch's finite value there (pi^2 / sin(pi x)^2: 6.58e32 at -1)
            f = x - xp.round(x)
            s = xp.sin(_PI * xp.where(f == 0, x, f))
            r = xp.where(lo, -z + (_PI * _PI) / (s * s), z)
            r = xp.where(finite, r, xp.where(x > 0, xp.zeros_like(x), full(x, nan)))
        else:
            # off NumPy, negative x by reflection (reflected_polygamma: no direct sum whose
            # length depends on the smallest argument, a host read per call before session 47)
            if numpy_mod is not None:      # the host: the direct sum (exact near the zeros)
                # below -2^20 (the sum's length bound; -inf and every float below -2^52 are
                # integers, so poles) the reflection below: torch gives +-inf at the poles
                far = x < _POLYGAMMA_FAR
                any_far = some(far)
                z, finite = hurwitz(n + 1, xp.where(far, full(x, 1.0), x) if any_far else x)
                r = sign_fact * z
                r = xp.where(finite, r, xp.where(x > 0, full(x, nan),   # +inf: torch's NaN
                                                 full(x, sign_fact * inf)))
                if any_far:
                    r = xp.where(far, reflected_polygamma(
                        xp.where(far, x, full(x, -0.5)), n, sign_fact), r)
            else:
                r = reflected_polygamma(x, n, sign_fact)
            # a zero of either sign is the pole at 0, as torch: (-0.0)^-(n+1) flipped its sign
            r = xp.where(x == 0, full(x, sign_fact * inf), r)
        return xp.where(xp.isnan(x), x, r)

    def mvlgamma64(x, p):
        if p < 1:
            raise RuntimeError("p has to be greater than or equal to 1")
        r = full(x, p * (p - 1) / 4 * _LOG_PI)
        for i in range(p):
            r = r + lgamma64(x - i / 2)
        return r

    # -- error functions ---------------------------------------------------------------------
    table = {}

    def erfc_table(like):
        t = table.get("erfc")
        dev = getattr(like, "device", None)
        if t is None or t[0] != dev:
            # (terms, centres): one gather of a lane's column gives its coefficients
            arr = xp.asarray([list(col) for col in zip(*_tables().erfc)], dtype=F64)
            if dev is not None and getattr(arr, "device", dev) != dev:
                arr = xp.asarray(arr, device=dev)
            table["erfc"] = t = (dev, arr)
        return t[1]

    def expm_sq(x):
        """exp(-x*x) without the rounding of x*x: x split into hi (12 fraction bits) + lo."""
        hi = xp.round(x * 4096.0) / 4096.0
        return xp.exp(-hi * hi) * xp.exp(-(x - hi) * (x + hi))

    def expp_sq(x):
        hi = xp.round(x * 4096.0) / 4096.0
        return xp.exp(hi * hi) * xp.exp((x - hi) * (x + hi))

    def erf_small(x):
        z = x * x
        p = _ERF_SERIES[0]
        for coef in _ERF_SERIES[1:]:
            p = p * z + coef
        return x * p

    def erfc_cf(a):
        """sqrt(pi) exp(a^2) erfc(a) as 1 / f with Laplace's continued fraction (a >= 6)."""
        f = a
        for k in range(48, 0, -1):
            f = a + (k / 2) / f
        return f

    def erfc_taylor(a):
        """erfc(a) for 0.46875 <= a < 6.15625 from the Taylor tables (other lanes: garbage)."""
        tab = erfc_table(a)
        # float bounds: array-api-compat 1.9 (the declared minimum) asks iinfo of the array for int ones
        idx = xp.clip(xp.round((a - 0.5) * (1 / _ERFC_STEP)), 0.0, float(_ERFC_CENTRES - 1))
        h = xp.reshape(a - (0.5 + _ERFC_STEP * idx), (-1,))
        coefs = xp.take(tab, xp.reshape(xp.astype(idx, nd(_dtype.int64)), (-1,)), axis=1)
        p = coefs[_ERFC_TERMS - 1]
        for j in range(_ERFC_TERMS - 2, -1, -1):
            p = p * h + coefs[j]
        return xp.reshape(p, a.shape)

    def erfc_tail(a):
        return expm_sq(xp.minimum(a, full(a, 40.0))) / (_SQRT_PI * erfc_cf(a))

    def erfc_pos(a):
        """erfc(a) for a >= 0 (NaN passes)."""
        r = a * 1.0   # NaN lanes pass through; every other lane is one of the branches
        r = branch(r, a < 0.5, lambda v: 1.0 - erf_small(v), a, 0.0)
        r = branch(r, (a >= 0.5) & (a < _ERFC_TAYLOR_END), erfc_taylor, a, 0.5)
        return branch(r, a >= _ERFC_TAYLOR_END, erfc_tail, a, 7.0)

    def erfc64(x):
        r = erfc_pos(xp.abs(x))
        r = xp.where(x < 0, 2.0 - r, r)
        return xp.where(xp.isnan(x), x, r)

    def erf64(x, e=None):
        """erf(x); ``e``: erfc(|x|) when the caller has it."""
        a = xp.abs(x)
        if e is None:
            e = erfc_pos(a)
        r = branch(xp.sign(x) * (1.0 - e), a < 0.5, erf_small, x, 0.0)
        return xp.where(x == 0, x, r)

    def erfcx64(x):
        a = xp.abs(x)
        r = x * 1.0

        def low(v):
            # exp(x^2) erfc(x) (overflows to inf below about -26.6, as torch)
            xs = xp.maximum(v, full(v, -27.0))
            return xp.where(v < -26.7, full(v, inf), expp_sq(xs) * erfc64(xs))
        r = branch(r, (x >= 0.5) & (x < _ERFC_TAYLOR_END),
                   lambda v: expp_sq(v) * erfc_taylor(v), x, 0.5)
        r = branch(r, x >= _ERFC_TAYLOR_END, lambda v: 1.0 / (_SQRT_PI * erfc_cf(v)), x, 7.0)
        r = branch(r, x < 0.5, low, x, 0.0)
        r = xp.where(xp.isinf(a) & (x > 0), xp.zeros_like(x), r)
        return xp.where(xp.isnan(x), x, r)

    def erfinv_tail(w):
        s = xp.sqrt(w)
        return s * _horner(None, 1.0 / s, _ERFINV_T)

    def erf_inverse(a, q):
        """x >= 0 with erf(x) = a, where q = 1 - a; whichever of a, q is below 1/2 is exact
        (the residual is taken in that form). A first guess within 1e-7, then one step of
        Halley's (cubic) iteration."""
        in_a = a < 0.5
        ac = xp.clip(a, 0.0, 1.0)
        qs = xp.clip(q, 0.0, 1.0)
        w = -xp.log(qs * (1.0 + ac))            # (q = 0: inf, the guess inf; callers mask)
        central = w < 5.0
        x = branch(w * 1.0, central, lambda v: _horner(None, v, _ERFINV_C), w, 0.0)
        x = xp.where(central, ac * x, x)
        x = branch(x, ~central, erfinv_tail, w, 25.0)
        e = erfc_pos(x)
        r = xp.where(in_a, erf64(x, e) - a, q - e)
        u = r / (_TWO_OVER_SQRT_PI * expm_sq(x))
        u = xp.where(xp.isfinite(u), u, xp.zeros_like(u))
        return x - u / (1.0 + x * u)

    def erfinv64(y):
        a = xp.abs(y)
        x = erf_inverse(a, 1.0 - a)
        x = xp.where(a == 1, full(y, inf), x)
        x = xp.where(a > 1, full(y, nan), x)
        r = xp.copysign(x, y)
        return xp.where(xp.isnan(y), y, r)

    def ndtri64(p):
        # p >= 1/2: sqrt(2) erfinv(2p - 1) (2p - 1 exact); p < 1/2: -sqrt(2) erfcinv(2p)
        lo = p < 0.5
        q = xp.where(lo, 2.0 * p, 2.0 - 2.0 * p)     # erfc(x) = q, both exact
        x = erf_inverse(1.0 - q, q)
        r = xp.where(lo, -_SQRT2 * x, _SQRT2 * x)
        r = xp.where(p == 0, full(p, -inf), xp.where(p == 1, full(p, inf), r))
        r = xp.where((p < 0) | (p > 1), full(p, nan), r)
        return xp.where(xp.isnan(p), p, r)

    # -- modified Bessel functions -----------------------------------------------------------
    def bessel_series(s, nu):
        """exp(-s) I_nu(s) for 0 <= s < 20: the power series sum_k (s/2)^(2k+nu) / (k! (k+nu)!)
        by Horner's rule in (s/2)^2 (terms positive: no cancellation)."""
        # terms up to (s/2)^2K / (K!)^2 below 1e-17 e^s: K from the largest argument on NumPy
        # (a host value: free there), all of them elsewhere (no host read)
        n = (min(_BESSEL_SERIES_TERMS, int(math.ceil(10 + 1.7 * float(xp.max(s)))))
             if numpy_mod is not None and s.size else _BESSEL_SERIES_TERMS)
        p = _horner(None, s * s * 0.25, _BESSEL_SERIES[nu][:n])
        if nu:
            p = p * (s * 0.5)
        return p * xp.exp(-s)

    def bessel_scaled(x, nu):
        """exp(-|x|) I_nu(|x|) for nu in (0, 1), float64."""
        coefs = _tables().i0_asym if nu == 0 else _tables().i1_asym
        a = xp.abs(x)
        r = a * 1.0        # (NaN passes)
        r = branch(r, a < _BESSEL_SWITCH, lambda v: bessel_series(v, nu), a, 0.0)
        return branch(r, a >= _BESSEL_SWITCH,
                      lambda b: _horner(None, 1.0 / b, coefs) / xp.sqrt(2.0 * _PI * b), a,
                      _BESSEL_SWITCH)

    def i0e64(x):
        return xp.where(xp.isnan(x), x, bessel_scaled(x, 0))

    def i0_64(x):
        # exp(|x|) * scaled: overflows past ~713 and gives NaN at +-inf (inf * 0), as torch
        return xp.exp(xp.abs(x)) * i0e64(x)

    def i1e64(x):
        r = bessel_scaled(x, 1)
        return xp.where(xp.isnan(x), x, xp.where(x < 0, -r, r))

    def i1_64(x):
        r = xp.exp(xp.abs(x)) * bessel_scaled(x, 1)
        return xp.where(xp.isnan(x), x, xp.where(x < 0, -r, r))

    # -- elementary ones ---------------------------------------------------------------------
    def sinc64(x):
        # torch's formula: sin(pi x) / (pi x), 1 at 0 (NaN at +-inf)
        px = _PI * x
        r = xp.sin(px) / xp.where(x == 0, xp.ones_like(x), px)
        return xp.where(x == 0, xp.ones_like(x), r)

    def logit64(x):
        return xp.log(x / (1.0 - x))

    logit_f64 = f64(logit64)
    F32 = nd(_dtype.float32)

    def logit_half(x, eps):
        """float16/bfloat16 as torch's cpu kernel: its vectorized steps each round to the dtype
        (``(x / (1 - x)).log()`` on ``Vectorized<Half/BFloat16>``), the bounds ``eps`` and
        ``1 - eps`` in the dtype."""
        dt = x.dtype

        def rnd(v):
            return xp.astype(xp.astype(v, dt), F32)

        x = xp.astype(x, F32)
        if eps is not None:
            lo = float(rnd(xp.asarray(eps, dtype=F32)))
            hi = float(rnd(xp.asarray(1.0 - lo, dtype=F32)))
            x = xp.where(x < lo, F32.type(lo), xp.where(x > hi, F32.type(hi), x))
        return xp.astype(xp.log(rnd(x / rnd(1.0 - x))), dt)

    def logit(x, eps=None):
        if x.dtype.itemsize == 2 and x.dtype.kind in "fV":    # float16, bfloat16
            return logit_half(x, eps)
        x = fl(x)
        if eps is not None:
            # torch's clamp (lo first, then hi; NaN passes) in its compute type: the bounds
            # rounded to float32 for float32 and narrower (logit(1.0, eps=1e-6) in float32 is
            # log(hi / (1 - hi)) with hi = float32(1 - 1e-6): 13.8023, not 13.8155)
            xc = x if x.dtype.itemsize >= 4 else xp.astype(x, F32)
            lo, hi = full(xc, eps), full(xc, 1.0 - eps)
            xc = xp.where(xc < lo, lo, xp.where(xc > hi, hi, xc))
            return xp.astype(logit_f64(xc), x.dtype) if xc.dtype != x.dtype else logit_f64(xc)
        return logit_f64(x)

    prep = c.prep
    I32 = nd(_dtype.int32)

    xlog1py = x_times(c, xp.log1p, "xlog1py")     # xlogy's kernel with log1p

    def heaviside(x, values):
        if x.dtype != values.dtype:
            raise TypeError("heaviside: operands of different dtypes")   # the fake rule's words
        # 0 -> values, else (x > 0), in x's dtype
        pos = xp.astype(x > 0, x.dtype)
        return xp.where(x == 0, values, pos)

    ldexp_np = getattr(c.be.np, "ldexp", None)

    def ldexp(x, e):
        if e.dtype.kind in "biu":
            # torch 2.13: an integer exponent scales exactly (1e-30 * 2**200 is finite in
            # float32), the result in x's floating dtype
            e = xp.astype(xp.clip(xp.astype(e, nd(_dtype.int64)), -100000, 100000), I32)
            return ldexp_np(fl(x), e)
        # a floating exponent: x * pow(2.0, e) at the promoted dtype (2.0 ** 200.0 is inf in
        # float32, as torch's)
        a, b = prep(x, e, True)
        return a * 2.0 ** b

    frexp_np = getattr(c.be.np, "frexp", None)

    def frexp(x):
        if x.dtype.kind != "f":
            raise TypeError("frexp of a non-floating array")   # the fake rule says it as torch
        m, e = frexp_np(x)
        if e.dtype != I32:
            e = xp.astype(e, I32)
        return m, e

    return dict(
        lgamma=f64(lgamma64), digamma=f64(digamma64),
        polygamma=lambda n, x: f64(polygamma64)(x, n),
        mvlgamma=f64(mvlgamma64), erfc=f64(erfc64), erfcx=f64(erfcx64), erfinv=f64(erfinv64),
        ndtri=f64(ndtri64), i0=f64(i0_64), i0e=f64(i0e64), i1=f64(i1_64), i1e=f64(i1e64),
        sinc=f64(sinc64), logit=logit, xlog1py=xlog1py, heaviside=heaviside,
        ldexp=ldexp, frexp=frexp)
