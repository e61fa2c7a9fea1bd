"""The cpu plugin's fuser for ``tensorplay.compile`` (``CPUBackend.fuse_elementwise``): one
single-pass blocked NumPy function per fused chain, equal to eager *bit for bit* -- every dtype it
fuses, special values (NaN, +-inf, -0.0, subnormals), constants NumPy must round to the dtype,
steps it runs as ufuncs and steps it hands to the reference kernels (``where``, casts, ``erf``),
several outputs, 0-d and non-contiguous inputs, and sizes on both sides of a block boundary."""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp
from _fusion_cases import assert_bits, chain8

pytestmark = pytest.mark.usefixtures("cpu")

tensorplay_cpu_fusion = pytest.importorskip("tensorplay_cpu.fusion")
BLOCK = tensorplay_cpu_fusion.BLOCK


def _special(n, dtype):
    """Random values with NaN, +-inf, +-0, subnormals and huge values sprinkled in."""
    tp.manual_seed(n)
    x = (tp.randn(n) * 3.0).to(dtype).numpy().copy()
    fi = np.finfo(x.dtype)
    sp = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, fi.tiny / 4, -fi.tiny / 3,
                   fi.max, -fi.max, 1.0, -1.0], dtype=x.dtype)
    idx = np.random.default_rng(n).integers(0, n, size=min(n, 4 * len(sp)))
    x[idx] = np.resize(sp, len(idx))
    return tp.from_numpy(x)


def _fused_callable(cf):
    """The fused callables compile chose for ``cf``'s chains on cpu (compile's own record: which
    fuser ran is not part of any public result, hence the private module)."""
    from tensorplay import _fusion
    be = tp.backends.get("cpu")
    return [_fusion.get_fused(ch, be) for ch in cf.graph.groups]


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
@pytest.mark.parametrize("n", [7, 1000, BLOCK, 2 * BLOCK + 17])
def test_the_benchmark_chain_is_bit_equal_to_eager(dtype, n):
    x, y = _special(n, dtype), _special(n + 1, dtype)[:n]
    cf = tp.compile(chain8)
    for _ in range(2):       # small arrays: the generic fuser first, the generated code next
        assert_bits(cf(x, y), chain8(x, y))
    fz, = _fused_callable(cf)
    assert type(fz).__module__ == "tensorplay_cpu.fusion"        # the plugin's fuser ran
    assert len(fz.variants) == 1


# every op the fuser runs as ufuncs, with constants that NumPy rounds to the dtype
CONSTS = [0.1, 1 / 3, -2.5, 3, 2**25 + 1, 1e-45, 3.5e38, 1e300, float("inf"), float("nan"), -0.0]


@pytest.mark.parametrize("c", CONSTS, ids=repr)
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_arithmetic_with_constants_is_bit_equal(c, dtype):
    def f(x, y):
        a = (x + c) * y
        b = (c - a) / (x - c)          # rsub, div
        d = tp.maximum(b, y * c)
        e = tp.minimum(d, c / (y + 1.0))   # rdiv
        g = (-e).abs() ** 2.0            # neg, abs, pow
        return (g - e) * c, d             # two outputs
    n = BLOCK + 333
    x, y = _special(n, dtype), _special(n + 5, dtype)[:n]
    cf = tp.compile(f)
    assert_bits(cf(x, y), f(x, y))
    assert len(_fused_callable(cf)[0].variants) == 1       # blocked size: generated at once


UNARY = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "abs", "sin", "cos", "neg",
         "erf"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
def test_unary_ops_are_bit_equal(name, dtype):
    def f(x):
        a = x * 1.5
        op = getattr(tp, name, None) or (lambda t: getattr(t, name)())
        return op(a) + op(x)
    x = _special(BLOCK + 99, dtype)
    cf = tp.compile(f)
    assert_bits(cf(x), f(x))
    small = x[:50]
    for _ in range(2):
        assert_bits(cf(small), f(small))


def test_comparisons_logic_where_and_casts_mix_ufunc_and_reference_steps():
    def f(x, y):
        m = (x * 2.0) > y
        k = tp.logical_and(m, y <= 0.5)
        k = tp.logical_or(k, x == y)
        w = tp.where(k, x.exp(), y.abs() + 1.0)       # where: reference kernel on the block
        h = (w * 3.0).to(tp.float64) + 1.0            # a cast, then float64 arithmetic
        return h.sqrt(), tp.logical_not(k), w
    n = 3 * BLOCK + 5
    x, y = _special(n, tp.float32), _special(n + 9, tp.float32)[:n]
    cf = tp.compile(f)
    assert_bits(cf(x, y), f(x, y))
    assert len(cf.graph.groups) == 1


@pytest.mark.parametrize("dtype", [tp.int8, tp.uint8, tp.int32, tp.int64], ids=str)
def test_bitwise_steps_run_as_ufuncs_on_integers_and_bools(dtype):
    def f(x, y, m):
        a = (x & y) ^ 0x55
        a = ~(a | 3)
        s = a << (y & 7)             # a shift: the reference kernel (torch's out-of-range rule)
        k = (m ^ (a > 0)) & ~m
        return s, k, a >> 2, a ^ 1000    # 1000: beyond int8, wrapped by the reference kernel
    n = 2 * BLOCK + 3
    tp.manual_seed(7)
    x = tp.randint(0, 256, (n,), dtype=tp.int64).to(dtype)
    y = tp.randint(-9, 40, (n,), dtype=tp.int64).to(dtype)
    m = tp.rand(n) > 0.5
    cf = tp.compile(f)
    assert_bits(cf(x, y, m), f(x, y, m))
    fz, = _fused_callable(cf)
    src, = [v.source for v in fz.variants.values()]
    for uf in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert"):
        assert f"__{uf}(" in src, uf


def test_intermediate_used_after_the_chain_and_inputs_reused():
    def f(x):
        a = x * 2.0
        b = a + x
        c = (b * a).tanh()
        return c.sum() + a.sum(), b
    x = _special(BLOCK * 2, tp.float32)
    cf = tp.compile(f)
    got, want = cf(x), f(x)
    assert_bits(got, want)


@pytest.mark.parametrize("case", ["zero_d", "two_d", "non_contiguous", "broadcast",
                                  "broadcast_small", "mixed_dtype", "int", "empty", "bfloat16"])
def test_layouts_and_signatures(case):
    def f(x, y):
        return ((x * y + 1.0) * 0.25).relu() - y
    n = BLOCK + 3
    x = _special(n, tp.float32)
    if case == "zero_d":
        y = tp.tensor(1.75)
    elif case == "two_d":
        x, y = _special(BLOCK, tp.float32).reshape(256, -1), _special(BLOCK + 1, tp.float32)[1:]
        y = y.reshape(256, -1)
    elif case == "non_contiguous":
        x = _special(2 * n, tp.float32)[::2]
        y = _special(n + 1, tp.float32)[:n]
    elif case == "broadcast":                    # above SMALL: the blocked code
        x = _special(8 * 1000, tp.float32).reshape(8, 1000)
        y = _special(1000, tp.float32)
    elif case == "broadcast_small":              # at most SMALL: the reference kernels
        x = _special(4 * 8, tp.float32).reshape(4, 8)
        y = _special(8, tp.float32)
    elif case == "mixed_dtype":
        y = _special(n + 1, tp.float64)[:n]
    elif case == "int":
        x = tp.arange(n)
        y = tp.arange(n) % 7 - 3
    elif case == "empty":
        x, y = tp.ones(0), tp.ones(0)
    else:
        pytest.importorskip("ml_dtypes")
        x, y = x.to(tp.bfloat16), _special(n + 1, tp.float32)[:n].to(tp.bfloat16)
    cf = tp.compile(f)
    for _ in range(2):                           # the variant is generated once, then reused
        assert_bits(cf(x, y), f(x, y))
    if case.startswith("broadcast"):
        # which code ran: the generated variant above SMALL elements, the reference kernels below
        assert len(_fused_callable(cf)[0].variants) == (case == "broadcast")


def test_floating_point_warnings_stay_silent_as_in_eager():
    import warnings
    x = tp.tensor([0.0, -1.0, 1e30, 2.0])
    cf = tp.compile(lambda x: ((x / 0.0).log() * 1e30).sqrt())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_bits(cf(x), ((x / 0.0).log() * 1e30).sqrt())
