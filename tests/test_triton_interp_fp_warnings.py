"""Triton kernels on cpu (Triton's interpreter) raise no NumPy floating-point warnings, as on the GPU.

The interpreter evaluates every lane of a block, masked ones included (the mask only guards loads
and stores), so the standard pattern ``tl.load(p + offs, mask=mask, other=0.0)`` followed by
``tl.log`` / a division / ``tl.sqrt`` computes ``log(0)``, ``1/0``, ``sqrt(-1)`` in lanes nobody
reads. NumPy warned about each ("divide by zero encountered in log"), in the user's test output and
in ``tensorplay check``; a GPU computes those lanes silently (IEEE results, no traps), and so does
torch. The stored lanes are unchanged: the values are the same, only the noise goes.
"""

import warnings

import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402
import triton.language as tl  # noqa: E402
from tensorplay_triton import wrap_triton  # noqa: E402


@triton.jit
def _masked_math_kernel(x_ptr, log_ptr, inv_ptr, sqrt_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)       # masked lanes: 0
    tl.store(log_ptr + offs, tl.log(x), mask=mask)         # log(0) in masked lanes
    tl.store(inv_ptr + offs, 1.0 / x, mask=mask)           # 1/0
    y = tl.load(x_ptr + offs, mask=mask, other=-1.0)      # masked lanes: -1
    tl.store(sqrt_ptr + offs, tl.sqrt(y), mask=mask)       # sqrt(-1)


def test_masked_lanes_raise_no_floating_point_warnings(cpu):
    h = np.linspace(0.5, 4.0, 10, dtype=np.float32)
    x = tensorplay.tensor(h.tolist())
    outs = [tensorplay.empty_like(x) for _ in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrap_triton(_masked_math_kernel)[(1,)](x, *outs, h.size, BLOCK=16)
    fp = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert fp == [], fp
    log, inv, sqrt = (np.asarray(o.tolist(), dtype=np.float32) for o in outs)
    np.testing.assert_allclose(log, np.log(h), rtol=1e-6)
    np.testing.assert_allclose(inv, 1.0 / h, rtol=1e-6)
    np.testing.assert_allclose(sqrt, np.sqrt(h), rtol=1e-6)


def test_the_callers_numpy_error_settings_are_left_as_they_were(cpu):
    x = tensorplay.tensor([1.0, 2.0])
    outs = [tensorplay.empty_like(x) for _ in range(3)]
    before = np.geterr()
    with np.errstate(divide="raise"):
        wrap_triton(_masked_math_kernel)[(1,)](x, *outs, 2, BLOCK=4)
        assert np.geterr()["divide"] == "raise"      # restored inside the caller's scope
        with pytest.raises(FloatingPointError):      # and still in force for the caller's code
            np.float32(1.0) / np.float32(0.0)
    assert np.geterr() == before
