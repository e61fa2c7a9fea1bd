"""bfloat16 in Triton kernels run on cpu tensors (Triton's interpreter, through ``wrap_triton``).

Triton's interpreter stores bfloat16 as its 16-bit pattern; without the plugin's handling, a kernel
computing on loaded bf16 values (``x * 2``, ``x < y``, ``x.to(tl.int32)``, ``tl.max(x)``, ``tl.dot``)
gets NumPy's arithmetic on the patterns: silently wrong values where the compiled kernel on cuda
is right. Each result is checked against float32 NumPy on the same bf16 inputs, at bf16 tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp

triton = pytest.importorskip("triton")
pytest.importorskip("tensorplay_triton")
ml_dtypes = pytest.importorskip("ml_dtypes")
tl = pytest.importorskip("triton.language")

from tensorplay.library import wrap_triton

TOL = 2 ** -7


@triton.jit
def _elementwise(x_ptr, y_ptr, z_ptr, out_ptr, N: tl.constexpr, WHICH: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    if WHICH == 0:
        r = x * 2.0 + y
    elif WHICH == 1:
        r = x - y
    elif WHICH == 2:
        r = x / y
    elif WHICH == 3:
        r = tl.where(x < y, x, y)          # comparison on signed values
    elif WHICH == 4:
        r = tl.maximum(x, y)
    elif WHICH == 5:
        r = -x
    elif WHICH == 6:
        r = x * y
    elif WHICH == 7:
        r = (x.to(tl.int32) + y.to(tl.float64)).to(tl.bfloat16)   # casts other than to fp32
    elif WHICH == 8:
        r = tl.fma(x, y, z)
    else:
        r = tl.clamp(x, -0.5, 0.5)
    tl.store(out_ptr + offs, r)


def _ref(which, x, y, z):
    return [lambda: x * 2.0 + y, lambda: x - y, lambda: x / y,
            lambda: np.where(x < y, x, y), lambda: np.maximum(x, y), lambda: -x,
            lambda: x * y, lambda: np.trunc(x) + y, lambda: x * y + z,
            lambda: np.clip(x, -0.5, 0.5)][which]()


def _bf(values):
    return tp.tensor(np.asarray(values, dtype=np.float32)).to(tp.bfloat16)


def _f32(t):
    return np.asarray(t.float().tolist(), dtype=np.float32)


N = 16
RNG = np.random.default_rng(0)
X = RNG.uniform(-3, 3, N)
Y = RNG.uniform(0.5, 3, N) * RNG.choice([-1, 1], N)
Z = RNG.uniform(-1, 1, N)


@pytest.mark.parametrize("which", range(10), ids=[
    "mul_add", "sub", "div", "where_lt", "maximum", "neg", "mul", "casts", "fma", "clamp"])
def test_bf16_elementwise_computes_on_values_not_bit_patterns(which):
    x, y, z = _bf(X), _bf(Y), _bf(Z)
    out = tp.zeros(N, dtype=tp.bfloat16)
    wrap_triton(_elementwise)[(1,)](x, y, z, out, N=N, WHICH=which)
    assert out.dtype is tp.bfloat16
    expect = _ref(which, _f32(x), _f32(y), _f32(z))
    np.testing.assert_allclose(_f32(out), expect, rtol=TOL, atol=TOL)


@triton.jit
def _reduce(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + 0, tl.max(x, 0))
    tl.store(out_ptr + 1, tl.min(x, 0))
    tl.store(out_ptr + 2, tl.sum(x, 0).to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + 3, tl.argmax(x, 0).to(out_ptr.dtype.element_ty))


def test_bf16_reductions_compare_values():
    x = _bf(X)
    out = tp.zeros(4, dtype=tp.bfloat16)
    wrap_triton(_reduce)[(1,)](x, out, N=N)
    xf = _f32(x)
    np.testing.assert_allclose(_f32(out), [xf.max(), xf.min(), xf.sum(), np.argmax(xf)],
                               rtol=TOL, atol=4 * TOL)


@triton.jit
def _dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr):
    r = tl.arange(0, M)
    a = tl.load(a_ptr + r[:, None] * M + r[None, :])
    b = tl.load(b_ptr + r[:, None] * M + r[None, :])
    tl.store(c_ptr + r[:, None] * M + r[None, :], tl.dot(a, b))


def test_bf16_dot_multiplies_values():
    m = 16
    a = tp.tensor(RNG.integers(-2, 3, (m, m)).astype(np.float32)).to(tp.bfloat16)
    b = tp.tensor(RNG.integers(-2, 3, (m, m)).astype(np.float32)).to(tp.bfloat16)
    c = tp.zeros(m, m)
    wrap_triton(_dot)[(1,)](a, b, c, M=m)
    expect = np.asarray(a.float().tolist()) @ np.asarray(b.float().tolist())
    np.testing.assert_allclose(np.asarray(c.tolist()), expect, rtol=0, atol=0)


def test_float32_kernels_are_unchanged_after_a_bf16_launch():
    x, y, z = (tp.tensor(v.astype(np.float32)) for v in (X, Y, Z))
    out = tp.zeros(N)
    wrap_triton(_elementwise)[(1,)](x, y, z, out, N=N, WHICH=0)
    np.testing.assert_allclose(np.asarray(out.tolist()), X.astype(np.float32) * 2 + Y.astype(np.float32),
                               rtol=1e-6)
