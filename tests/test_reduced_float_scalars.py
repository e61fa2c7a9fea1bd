"""float16/bfloat16 tensors with Python numbers, as torch defines them (issue 28: ``bf16([0.1]) ==
0.1`` was False; ``%``, ``//``, ``<=``, ``>=``, ``>`` disagreed too).

The rule, written out here on its own (NumPy float32 arithmetic and NumPy/ml_dtypes conversions;
no torch, no tensorplay internals), as torch's cpu kernels apply it: the number is converted to
the op's common dtype D (double -> float32 -> D, each to nearest even) and the op computes in
float32, rounding the result to D once -- except that mul, div and floor_divide read a number
given as their second operand at float32, unrounded, and ``s / t`` is ``t.reciprocal() * s``
(the reciprocal rounded to D). Checked on cpu eager and compiled (fused) with hypothesis, and on
cuda (skipped without a GPU), including arrays large enough for the cuda launch paths.
"""

from __future__ import annotations

import operator
import os

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tensorplay as tp  # noqa: E402

F32 = np.float32
NATIVE = {tp.bfloat16: np.dtype(ml_dtypes.bfloat16), tp.float16: np.dtype(np.float16)}


def rnd(x, D):
    """float32 value(s) rounded to D (returned as float32); beyond D's range: +-inf."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=F32).astype(D).astype(F32)


def num(s, D):
    """A Python number as torch converts it to D: double -> float32 -> D."""
    return rnd(F32(s), D)


def floordiv32(a, b):
    """Python's floor division computed in float32 (fmod, then the quotient corrected)."""
    a, b = np.asarray(a, dtype=F32), np.asarray(b, dtype=F32)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - F32(1), div)
    fl = np.floor(div)
    fl = np.where(div - fl > F32(0.5), fl + F32(1), fl)
    return np.where(div == 0, np.copysign(F32(0), a / b), fl).astype(F32)


def rem32(a, b):
    """Python's remainder (sign of the divisor) in float32."""
    a, b = np.asarray(a, dtype=F32), np.asarray(b, dtype=F32)
    mod = np.fmod(a, b)
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod).astype(F32)


# name -> (tensorplay expression, expected from float32 values `a` of D, the number s, D)
OPS = {
    "x + s": (lambda x, s: x + s, lambda a, s, D: rnd(a + num(s, D), D)),
    "s + x": (lambda x, s: s + x, lambda a, s, D: rnd(num(s, D) + a, D)),
    "x - s": (lambda x, s: x - s, lambda a, s, D: rnd(a - num(s, D), D)),
    "s - x": (lambda x, s: s - x, lambda a, s, D: rnd(num(s, D) - a, D)),
    "x * s": (lambda x, s: x * s, lambda a, s, D: rnd(a * F32(s), D)),
    "s * x": (lambda x, s: s * x, lambda a, s, D: rnd(a * F32(s), D)),
    "x / s": (lambda x, s: x / s, lambda a, s, D: rnd(a / F32(s), D)),
    "s / x": (lambda x, s: s / x, lambda a, s, D: rnd(rnd(F32(1) / a, D) * F32(s), D)),
    "x // s": (lambda x, s: x // s, lambda a, s, D: rnd(floordiv32(a, F32(s)), D)),
    "s // x": (lambda x, s: s // x, lambda a, s, D: rnd(floordiv32(num(s, D), a), D)),
    "x % s": (lambda x, s: x % s, lambda a, s, D: rnd(rem32(a, num(s, D)), D)),
    "s % x": (lambda x, s: s % x, lambda a, s, D: rnd(rem32(num(s, D), a), D)),
    "x == s": (lambda x, s: x == s, lambda a, s, D: a == num(s, D)),
    "x != s": (lambda x, s: x != s, lambda a, s, D: a != num(s, D)),
    "x < s": (lambda x, s: x < s, lambda a, s, D: a < num(s, D)),
    "x <= s": (lambda x, s: x <= s, lambda a, s, D: a <= num(s, D)),
    "x > s": (lambda x, s: x > s, lambda a, s, D: a > num(s, D)),
    "x >= s": (lambda x, s: x >= s, lambda a, s, D: a >= num(s, D)),
}
DIVIDES_BY_S = {"x / s", "x // s", "x % s"}
DIVIDES_BY_X = {"s / x", "s // x", "s % x"}


def _must(cond):
    assert cond, "a fixed case must not divide by zero"


def check(name, values, s, dtype, device="cpu", compiled=False, guard=_must):
    D = NATIVE[dtype]
    a = rnd(np.asarray(values, dtype=np.float64).astype(F32), D)    # the tensor's values
    if name in DIVIDES_BY_S:
        guard(num(s, D) != 0 and F32(s) != 0)
    if name in DIVIDES_BY_X:
        guard(bool(np.all(a != 0)))
    fn = OPS[name][0]
    x = tp.tensor(a.astype(D), device=device)
    if compiled:
        # a chain of two elementwise steps (x * 1.0 is exact), so the fuser runs the op
        got = tp.compile(lambda t, v: fn(t * 1.0, v))(x, s)
    else:
        got = fn(x, s)
    want = OPS[name][1](a, s, D)
    if want.dtype == np.bool_:
        assert got.dtype == tp.bool
        got_np = np.asarray(got.cpu().numpy(), dtype=bool)
    else:
        assert got.dtype == dtype, (name, got.dtype)
        got_np = got.cpu().numpy().astype(F32)
    np.testing.assert_array_equal(got_np, want.reshape(got_np.shape),
                                  err_msg=f"{name} with s={s!r} on {dtype} {device}"
                                          f"{' compiled' if compiled else ''}: values {a}")


# -- the issue's cases and the obvious neighbours --------------------------------------------------

@pytest.mark.parametrize("dtype", [tp.bfloat16, tp.float16])
@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("s", [0.1, 0.3, -2.7, 1.3, 3, -7, 1000.7, 257])
def test_numbers_follow_torchs_rule(dtype, name, s):
    check(name, [0.1, 1.3, -2.7, 0.3, 3.0, -7.1, 257.0, 1000.5, 1.0, -0.5], s, dtype)


def test_issue_repro():
    assert (tp.tensor([0.1], dtype=tp.bfloat16) == 0.1).item() is True
    assert (tp.tensor([0.1], dtype=tp.float16) == 0.1).item() is True
    # torch's documented float16 case: ones / 0.3 is 1 / 0.3f rounded once
    assert (tp.ones(1, dtype=tp.float16) / 0.3).item() == 3.333984375
    assert (tp.ones(1, dtype=tp.bfloat16) / 0.3).item() == 3.328125
    # add rounds the number first: bf16(0.3) = 0.30078125
    assert (tp.zeros(1, dtype=tp.bfloat16) + 0.3).item() == 0.30078125


@pytest.mark.parametrize("dtype", [tp.bfloat16, tp.float16])
@pytest.mark.parametrize("name", ["x + s", "x // s", "x % s", "x == s", "x <= s", "x * s",
                                  "s / x"])
def test_compiled_follows_the_same_rule(dtype, name):
    check(name, [0.1, 1.3, -2.7, 0.3, 3.0, -7.1, 257.0, 1000.5], 0.3, dtype, compiled=True)
    check(name, [0.1, 1.3, -2.7, 0.3, 3.0, -7.1, 257.0, 1000.5], -7, dtype, compiled=True)


# -- hypothesis: the rule above on random values, numbers and ops ---------------------------------

_N = int(os.environ.get("TENSORPLAY_FUZZ_EXAMPLES", "120"))
_values = st.lists(st.floats(-300, 300, allow_nan=False, width=32).filter(
    lambda v: v == 0 or abs(v) >= 1e-2), min_size=1, max_size=12)
_numbers = st.one_of(st.floats(-2000, 2000, allow_nan=False).filter(lambda v: abs(v) >= 1e-2),
                     st.integers(-3000, 3000))
_SET = settings(max_examples=_N, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@_SET
@given(name=st.sampled_from(sorted(OPS)), values=_values, s=_numbers,
       dtype=st.sampled_from([tp.bfloat16, tp.float16]))
def test_fuzz_reduced_floats_with_numbers(name, values, s, dtype):
    check(name, values, s, dtype, guard=assume)


@settings(max_examples=max(10, _N // 4), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(name=st.sampled_from(sorted(OPS)), values=_values, s=_numbers,
       dtype=st.sampled_from([tp.bfloat16, tp.float16]))
def test_fuzz_compiled(name, values, s, dtype):
    check(name, values, s, dtype, compiled=True, guard=assume)


# -- bool operands with numbers: torch's promotion (written out: bool + int -> int64, bool + float
# -> the default float; floor_divide/remainder with an int number compute in int64) -------------

_PYOPS = {"+": operator.add, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
          "/": operator.truediv, "==": operator.eq, "<": operator.lt}


@_SET
@given(bits=st.lists(st.booleans(), min_size=1, max_size=8), s=st.integers(1, 50),
       op=st.sampled_from(sorted(_PYOPS)))
def test_fuzz_bool_with_int_numbers(bits, s, op):
    f = _PYOPS[op]
    got = f(tp.tensor(bits), s)
    ints = [int(v) for v in bits]
    if op in ("==", "<"):
        want, dt = [f(v, s) for v in ints], tp.bool
    elif op == "/":
        want, dt = [float(F32(v) / F32(s)) for v in ints], tp.float32
    else:
        want, dt = [f(v, s) for v in ints], tp.int64
    assert got.dtype == dt and got.tolist() == want


# -- cuda: the same rule on every launch path (small arrays: ufunc / dense launch; large arrays:
# the generated kernels), skipped without a GPU ----------------------------------------------------

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")


@needs_cuda
@pytest.mark.parametrize("dtype", [tp.bfloat16, tp.float16])
@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("n", [10, 1 << 22])
def test_cuda_follows_the_same_rule(dtype, name, n):
    rng = np.random.default_rng(0)
    values = rng.uniform(-300, 300, n)
    values[np.abs(values) < 1e-2] = 1.0
    for s in (0.1, 0.3, -7, 1000.7):
        # small arrays: past the dense path's warm-up calls (then its launch)
        for _ in range(3 if n < 1000 else 1):
            check(name, values, s, dtype, device="cuda")


@needs_cuda
@pytest.mark.parametrize("dtype", [tp.bfloat16, tp.float16])
@pytest.mark.parametrize("name", ["x + s", "x == s", "x * s", "x % s", "s / x"])
def test_cuda_compiled_follows_the_same_rule(dtype, name):
    rng = np.random.default_rng(1)
    values = rng.uniform(-300, 300, 4096)
    values[np.abs(values) < 1e-2] = 1.0
    check(name, values, 0.3, dtype, device="cuda", compiled=True)


# -- the rule on every path, whatever ran before (the fast paths for float16 with a number) -------

def test_float16_follows_the_rule_before_any_bfloat16_use():
    """float16 eager ops in a process that never made a bfloat16 tensor: there the adapters' inline
    ufunc case is in place (using bfloat16 rebuilds the kernels without it), and it must not take
    a float16 tensor with a number (``x * 0.1`` rounded 0.1 to float16 first)."""
    import subprocess
    import sys
    code = (
        "import sys; sys.path.insert(0, {here!r})\n"
        "import test_reduced_float_scalars as t, tensorplay as tp\n"
        "vals = [0.1, 1.3, -2.7, 0.3, 3.0, -7.1, 257.0, 1000.5, 1.0, -0.5]\n"
        "for s in (0.1, 0.3, -2.7, 1000.7, 257, 2049):\n"
        "    for name in sorted(t.OPS):\n"
        "        t.check(name, vals, s, tp.float16)\n"
        "        t.check(name, vals[:1], s, tp.float16)\n"
        "print('ok')\n").format(here=os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


# a double just above a float16/bfloat16 tie whose float32 rounding lands on the tie: torch's
# double -> float32 -> D conversion rounds it to even (down), a direct double -> D rounding up
_TIE = {tp.float16: 1 + 2 ** -11 + 2 ** -40, tp.bfloat16: 1 + 2 ** -8 + 2 ** -40}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
@pytest.mark.parametrize("name", ["x + s", "s + x", "x - s", "s - x", "x == s", "x < s",
                                  "x % s"])
@pytest.mark.parametrize("n", [1, 3, 40000])
def test_numbers_next_to_a_tie_round_through_float32(device, dtype, name, n):
    s = _TIE[dtype]
    check(name, [0.0] * n, s, dtype, device=device)
    check(name, [1.0] * n, s, dtype, device=device)
    check(name, [1.0] * n, -s, dtype, device=device)
    check(name, [0.5] * n, s, dtype, device=device, compiled=True)
    x = tp.tensor(1.0, dtype=dtype, device=device)                   # 0-dim
    assert (x == s).item() is True and (x + s).item() == 2.0


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
@pytest.mark.parametrize("s", [0.1, 0.3, -2.7, 1000.7, 2049])
def test_in_place_mul_follows_the_rule(dtype, s):
    D = NATIVE[dtype]
    a = rnd(np.array([0.1, 1.3, -2.7, 0.3, 3.0, -7.1, 257.0, 1000.5], dtype=F32), D)
    x = tp.tensor(a.astype(D))
    x.mul_(s)
    np.testing.assert_array_equal(x.numpy().astype(F32), rnd(a * F32(s), D))


# -- cuda's eager fast paths, on NumPy arrays standing in for CuPy's (no GPU needed): a float16
# array with a number never reaches the ufunc unrounded, nor at all where torch reads it at
# float32 (mul, div); the dense case's warm-up calls and its no-launch calls alike --------------

def _stand_in_backend():
    """What ``tensorplay_cuda.eager`` reads of a backend, over NumPy (``np.ndarray`` as the array
    class, device 0)."""
    import types
    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0))
    return types.SimpleNamespace(np=types.SimpleNamespace(ndarray=np.ndarray, dtype=np.dtype,
                                                          cuda=cuda, __name__="cupy"),
                                 dtype_of=tp.backends.get("cpu").dtype_of)


def _weak(uf):
    """NumPy's ufunc ``uf`` taking a Python number as CuPy's ufuncs do (NEP 50: converted to the
    array's dtype, straight from the double), on NumPy 1.x too."""
    def f(x, y):
        if not isinstance(x, np.ndarray):
            x = y.dtype.type(x)
        if not isinstance(y, np.ndarray):
            y = x.dtype.type(y)
        return uf(x, y)
    return f


_EAGER_OPS = {"x + s": ("add", False, np.add), "x - s": ("sub", False, np.subtract),
              "s - x": ("rsub", True, np.subtract), "x * s": ("mul", False, np.multiply),
              "x / s": ("div", False, np.true_divide), "s / x": ("rdiv", True, np.true_divide),
              "x == s": ("eq", False, np.equal), "x < s": ("lt", False, np.less)}


@pytest.mark.parametrize("name", sorted(_EAGER_OPS))
def test_cuda_eager_kernels_keep_the_rule_for_float16_numbers(name, monkeypatch):
    eager = pytest.importorskip("tensorplay_cuda.eager")
    op, swap, uf = _EAGER_OPS[name]
    uf = _weak(uf)
    be = _stand_in_backend()
    ref = tp.backends.get("cpu").kernels()[op]        # the reference kernel (computes the rule)
    D = NATIVE[tp.float16]
    a = rnd(np.array([0.1, 1.3, -2.7, 0.3, 3.0, -7.1, 257.0, 1000.5], dtype=F32), D)
    want_of = OPS[name][1]
    monkeypatch.setattr(eager, "_FAILED", [RuntimeError("no launches here")])
    kernel = eager._binary(op, ref, be, uf, swap, False)
    paths = [kernel]
    if not swap and op in eager._SAME_DTYPE:
        # the dense case (the adapters call it directly): warm-up calls, then no launch
        paths.append(eager._dense(op, 2, be, uf, ref, kernel, op in ("mul", "div")))
        assert tp.float16 not in kernel._tp_number_dtypes
    for f in paths:
        for s in (0.1, 0.3, -7, 1000.7, 2049, _TIE[tp.float16]):
            for _ in range(eager.WARMUP_CALLS + 2):
                got = f(a.astype(D), s)
                np.testing.assert_array_equal(got.astype(F32), want_of(a, s, D),
                                              err_msg=f"{f.__name__} with {s!r}")


# -- cuda's floor division and remainder: the C source of its kernels, compiled on the host ------

def _compiled_divmod(tmp_path):
    import ctypes
    import shutil
    import subprocess
    fd = pytest.importorskip("tensorplay_cuda.floordiv")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to build the kernels' source on the host")
    fns = []
    for op in ("floor_divide", "remainder"):
        for ct in ("float", "double"):
            fns.append(f"void {op}_{ct}(long n, const {ct} *x, const {ct} *y, {ct} *o) {{\n"
                       f"  for (long i = 0; i < n; i++) {{\n"
                       f"    {ct} in0 = x[i], in1 = y[i], out0;\n"
                       f"{fd.source(op, ct)}\n    o[i] = out0;\n  }}\n}}\n")
    src = tmp_path / "divmod.c"
    src.write_text("#include <math.h>\n" + "\n".join(fns))
    lib = tmp_path / "divmod.so"
    subprocess.run([cc, "-O1", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC",
                    "-o", str(lib), str(src), "-lm"], check=True, capture_output=True)
    return ctypes.CDLL(str(lib))


def _same_bits(got, want):
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))
    np.testing.assert_array_equal(got[~nan], want[~nan])


def test_cuda_floor_divide_source_computes_the_cpu_result(tmp_path):
    """The kernels' C body (tensorplay_cuda.floordiv), compiled here, against NumPy's
    floor_divide/remainder (the cpu device's) bit for bit, and the rule written out above, on
    the cases where CuPy's floor(x / y) is one off (bf16 values // 0.1) and on IEEE specials."""
    import ctypes
    lib = _compiled_divmod(tmp_path)
    rng = np.random.default_rng(0)
    D = NATIVE[tp.bfloat16]
    vals = rnd(rng.uniform(-300, 300, 20000).astype(F32), D)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, -3.0, 1e-45, 3e38])
    for dt, ct in ((np.float32, "float"), (np.float64, "double")):
        x = np.concatenate([vals, vals, rng.standard_normal(20000) * 1e3,
                            np.repeat(special, special.size)]).astype(dt)
        y = np.concatenate([np.full(vals.size, 0.1), np.full(vals.size, -0.3),
                            rng.standard_normal(20000), np.tile(special, special.size)]).astype(dt)
        p = ctypes.POINTER(ctypes.c_float if dt is np.float32 else ctypes.c_double)
        for op, ref in (("floor_divide", np.floor_divide), ("remainder", np.remainder)):
            out = np.empty_like(x)
            getattr(lib, f"{op}_{ct}")(ctypes.c_long(x.size), x.ctypes.data_as(p),
                                       y.ctypes.data_as(p), out.ctypes.data_as(p))
            with np.errstate(all="ignore"):
                _same_bits(out, ref(x, y))
                if dt is np.float32:
                    fin = np.isfinite(x) & np.isfinite(y) & (y != 0)
                    rule = floordiv32 if op == "floor_divide" else rem32
                    np.testing.assert_array_equal(out[fin], rule(x[fin], y[fin]))
