"""Derives the coefficient tables of erf's approximations in
``tensorplay_core/tensorplay/_kernels/unary.py`` (``_ERF_A64``, ``_ERF_B64``, ``_ERF_A32``,
``_ERF_B32``) and of lgamma's in ``_kernels/special.py`` (``_LG1``, ``_LG2``, ``_PSI_ROOT``,
``_STIRLING``, ``_PSI_ASYM``, ``_ERFINV_C``, ``_ERFINV_T``) and prints them, with the error each reaches when evaluated by Horner's rule in its
own precision. Not a test and not imported by anything: run it (NumPy needed) to check or remake
the tables. ~1 minute.

Method (no library's table is used): references from 50-digit ``decimal`` arithmetic -- erf(x)/x
from its Maclaurin series, erfcx(x) = exp(x^2) erfc(x) from the series below 3 and Laplace's
continued fraction (600 terms) from 3 on -- at Chebyshev nodes; a polynomial fitted by weighted
least squares with Lawson's reweighting (towards the minimax error), the residuals taken in long
double and the solution refined with them (so the fit is not limited by the normal equations'
conditioning). The error minimised is relative, times a weight: for erf's second branch
erfc(x)/erf(x), i.e. the error that branch leaves in erf itself. lgamma's references are its
Taylor series about 1 and 2 (58 terms; coefficients from zeta values, ``special._tables``) summed
exactly in rational arithmetic, where they converge to below 1e-17. (digamma's Taylor tables on
[2, 10), ``special._psi_taylor_table``, are not fitted: psi(c) in 40-digit decimal arithmetic and
zeta values, computed on the first digamma call.)
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np

getcontext().prec = 50
PI = Decimal("3.14159265358979323846264338327950288419716939937510")
SQPI = PI.sqrt()
LD = np.longdouble


def erf_over_x(x):
    """erf(x) / x from the Maclaurin series (50 digits)."""
    x = Decimal(x)
    s, term, n, z = Decimal(0), Decimal(1), 0, x * x
    while True:
        c = term / (2 * n + 1)
        s += c
        n += 1
        term = -term * z / n
        if abs(c) < Decimal("1e-40"):
            break
    return 2 / SQPI * s


def erfcx(x):
    """exp(x^2) erfc(x), x > 0 (50 digits)."""
    d = Decimal(x)
    if x < 3:
        return (d * d).exp() * (1 - d * erf_over_x(x))
    f = d
    for k in range(600, 0, -1):
        f = d + Decimal(k) / 2 / f
    return 1 / (SQPI * f)


def fit_raw(fn, lo, hi, deg, n=400, var=lambda x: x, weight=None, lawson=15):
    """Polynomial in v = var(x) itself (no centring): minimise max |P/ref - 1| * weight(x)."""
    k = np.arange(n)
    xs = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)
    v = var(xs)
    refd = [fn(float(x)) for x in xs]
    ref = np.array([LD(str(r)) if isinstance(r, Decimal) else LD(r) for r in refd])
    wt = np.ones(n, LD) if weight is None else np.array([LD(weight(float(x))) for x in xs])
    vv = v.astype(LD)
    scale = float(np.max(np.abs(v)))
    A = np.vander(vv / LD(scale), deg + 1, increasing=True) / ref[:, None] * wt[:, None]
    Ad = A.astype(np.float64)
    b = wt.copy()
    w = np.ones(n)
    for it in range(lawson):
        sw = np.sqrt(w)
        c = np.zeros(deg + 1, LD)
        for _ in range(4):
            r = (b - A @ c)
            dc, *_ = np.linalg.lstsq(Ad * sw[:, None], (r * sw).astype(np.float64), rcond=None)
            c = c + dc.astype(LD)
        res = np.abs((A @ c - b).astype(np.float64))
        w = w * (res + 1e-30)
        w /= w.sum()
    return [float(ci / LD(scale) ** i) for i, ci in enumerate(c)]


def horner_error(coefs, fn, lo, hi, var, weight=None, dtype=np.float64, n=3000):
    """Max of |P(var(x)) / fn(x) - 1| * weight(x) over random x, P evaluated in ``dtype``."""
    xs = np.random.default_rng(2).uniform(lo, hi, n)
    v = var(xs).astype(dtype)
    r = np.full_like(v, dtype(coefs[-1]))
    for c in coefs[-2::-1]:
        r = r * v + dtype(c)
    ref = np.array([float(fn(float(x))) for x in xs])
    e = np.abs(r.astype(np.float64) - ref) / np.abs(ref)
    if weight is not None:
        e = e * np.array([weight(float(x)) for x in xs])
    return float(e.max())


def _taylor(name):
    """The exact sum of the Taylor series ``special._tables().<name>`` (lowest power first) at z."""
    from fractions import Fraction

    from tensorplay._kernels import special
    coefs = [Fraction(c) for c in getattr(special._tables(), name)]

    def f(z):
        z, acc, p = Fraction(z), Fraction(0), Fraction(1)
        for c in coefs:
            acc += c * p
            p *= z
        return Decimal(acc.numerator) / Decimal(acc.denominator)
    return f


def _psi_root_taylor():
    """The exact sum of digamma's Taylor series about its positive zero x0 (40 terms from zeta
    values, ``special._tables().psi_root``) divided by z = x - x0, and x0."""
    from fractions import Fraction

    from tensorplay._kernels import special
    x0, _, coefs = special._tables().psi_root
    cf = [Fraction(c) for c in coefs]

    def f(z):
        z, acc, p = Fraction(z), Fraction(0), Fraction(1)
        for c in cf:
            acc += c * p
            p *= z
        return Decimal(acc.numerator) / Decimal(acc.denominator)
    return f, x0


def fit_pairs(v, y, deg, lawson=10):
    """Polynomial P with P(v_i) ~ y_i, minimising max |P/y - 1| (as ``fit_raw``, from sample
    pairs rather than a function)."""
    scale = float(np.max(np.abs(v)))
    A = np.vander((v / scale).astype(LD), deg + 1, increasing=True) / y.astype(LD)[:, None]
    Ad = A.astype(np.float64)
    b = np.ones(len(v), LD)
    w = np.ones(len(v))
    for _ in range(lawson):
        sw = np.sqrt(w)
        c = np.zeros(deg + 1, LD)
        for _ in range(3):
            r = b - A @ c
            dc, *_ = np.linalg.lstsq(Ad * sw[:, None], (r * sw).astype(np.float64), rcond=None)
            c = c + dc.astype(LD)
        res = np.abs((A @ c - b).astype(np.float64))
        w = w * (res + 1e-30)
        w /= w.sum()
    return [float(ci / LD(scale) ** i) for i, ci in enumerate(c)], float(res.max())


def erfinv_guess_tables():
    """erfinv's first guess (``_ERFINV_C``, ``_ERFINV_T``): with w = -log((1 - y)(1 + y)),
    erfinv(y) / y = C(w) for w < 5 and erfinv(y) / s = T(1 / s), s = sqrt(w), beyond; fitted
    to pairs (w(x), x) made from x with ``math.erf``/``math.erfc`` (no inverse needed)."""
    xs = np.linspace(1e-4, 2.2, 3000)
    w = np.array([-math.log(math.erfc(x) * (1 + math.erf(x))) for x in xs])
    a = np.array([math.erf(x) for x in xs])
    m = w <= 5.0
    central, e1 = fit_pairs(w[m], xs[m] / a[m], 8)
    xt = np.linspace(xs[m].max() - 0.01, 26.5, 4000)
    s = np.sqrt([-math.log(math.erfc(x)) - math.log1p(math.erf(x)) for x in xt])
    tail, e2 = fit_pairs(1 / s, xt / s, 10)
    print(f"# _ERFINV_C: max relative error {e1:.3g}; _ERFINV_T: {e2:.3g}")
    print(f"_ERFINV_C = ({', '.join(repr(v) for v in central)})")
    print(f"_ERFINV_T = ({', '.join(repr(v) for v in tail)})")


def _asymptotic(stirling):
    """The asymptotic series' correction as a function of w = 1/x^2, 14 terms in 50 digits:
    Stirling's sum_k B_2k / (2k (2k-1)) w^(k-1) (lgamma = ... + that / x) or digamma's
    sum_k B_2k / (2k) w^(k-1) (psi = log x - 1/(2x) - w * that). Both converge far below double
    precision on the fitted ranges (x >= 7, x >= 10)."""
    from tensorplay._kernels import special
    bern = special._bernoulli(30)
    cs = [Decimal(bern[2 * k].numerator) / Decimal(bern[2 * k].denominator)
          / (2 * k * (2 * k - 1) if stirling else 2 * k) for k in range(1, 15)]

    def f(w):
        w, acc, p = Decimal(w), Decimal(0), Decimal(1)
        for c in cs:
            acc += c * p
            p *= w
        return acc
    return f


def main():
    def in_erf(a):
        return math.erfc(a) / math.erf(a)

    def square(x):
        return x * x

    psi_root, x0 = _psi_root_taylor()
    tables = [
        # name, function, interval, degree, variable, weight, evaluation dtype
        ("_ERF_A64", erf_over_x, (0, 1), 11, square, None, np.float64),
        ("_ERF_B64", erfcx, (1, 6), 11, lambda x: 1 / (2 + x), in_erf, np.float64),
        ("_ERF_A32", erf_over_x, (0, 1), 5, square, None, np.float32),
        ("_ERF_B32", erfcx, (1, 4), 5, lambda x: 1 / (1 + x), in_erf, np.float32),
        # lgamma(1 + z) = z (-gamma + z LG1(z)), |z| <= 1/2; lgamma(2 + z) = z (1 - gamma + z LG2(z))
        ("_LG1", _taylor("lg1"), (-0.5, 0.5), 26, lambda x: x, None, np.float64),
        ("_LG2", _taylor("lg2"), (-0.5, 1.0), 20, lambda x: x, None, np.float64),
        # digamma(x0 + z) = z _PSI_ROOT(z) for x in [1, 2)
        ("_PSI_ROOT", psi_root, (1.0 - x0, 2.0 - x0), 22, lambda x: x, None, np.float64),
        # the asymptotic corrections in w = 1/x^2: lgamma from x = 7 on, digamma from 10 on
        ("_STIRLING", _asymptotic(True), (0.0, 1 / 49), 6, lambda x: x, None, np.float64),
        ("_PSI_ASYM", _asymptotic(False), (0.0, 1 / 100), 5, lambda x: x, None, np.float64),
    ]
    for name, fn, (lo, hi), deg, var, weight, dt in tables:
        c = fit_raw(fn, lo, hi, deg, var=var, weight=weight,
                    n=300 if weight else (400 if name.startswith("_ERF") else 200),
                    lawson=15 if name.startswith("_ERF") else 8)
        err = horner_error(c, fn, lo, hi, var, weight, dt)
        print(f"# {name}: max error {err:.3g} ({np.dtype(dt).name} Horner)")
        print(f"{name} = ({', '.join(repr(v) for v in c)})")
    erfinv_guess_tables()


if __name__ == "__main__":
    main()
