"""Eager bfloat16 ops on a GPU: one launch at every size, with the reference kernel's bits
(session 57's tests/test_cuda_eager57.py, the part that needs a GPU).

In a module of their own: tests/test_cuda_eager57.py's module-scoped ``stubbed`` fixture puts
launch and allocation stand-ins in place for as long as its tests run, and a GPU test that ran
in between (pytest-xdist mixes a module's tests on a worker) copied its input into a stand-in's
memory (``cudaErrorInvalidValue``; an H100, 2026-12-07).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")

from tensorplay_cuda import eager  # noqa: E402
from test_cuda_eager57 import BF16, CASES, SIZES, _call, needs_cuda  # noqa: E402  (one table)

# -- on a GPU -------------------------------------------------------------------------------------

def _special(n, seed):
    """n bf16 values: normal draws with zeros of both signs, infinities, NaN, subnormals and
    ties of float32 to bf16 rounding in front."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n).astype(np.float32)
    head = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3.0e38, -3.0e38,
                     1.00390625, -2.5], np.float32)
    v[:len(head)] = head[:n]
    # (the bits as uint16: CuPy 14's asarray of an ml_dtypes bfloat16 host array fails with
    # cudaErrorInvalidValue, an H100 of 2026-12-07)
    return cupy.asarray(v.astype(BF16).view(np.uint16)).view(BF16)


# ops whose generated kernel uses Triton's math (``tl.exp``; tanh through it), which is a few
# float32 ulps from CuPy's ``expf``/``tanhf``: rounded to bfloat16 that is the same value but
# where the float32 result sits at a rounding boundary, one bfloat16 ulp off there (the dense
# case has run these since session 53; tests/test_cuda_fusion.py's _DENSE_TOL for the others)
_TRANSCENDENTAL = frozenset({"exp", "tanh"})


def _same_bits(got, want, ulps=0):
    """Equal bits (``ulps``: at most that many bfloat16 steps apart), NaN for NaN (a NaN's
    payload is not part of the contract)."""
    g, w = cupy.asnumpy(got).view(np.uint16), cupy.asnumpy(want).view(np.uint16)
    gn = (g & 0x7FFF) > 0x7F80
    wn = (w & 0x7FFF) > 0x7F80
    assert (gn == wn).all()
    # the bit patterns as one ordered integer line (sign-magnitude to two's complement)
    gi = np.where(g & 0x8000, -(g & 0x7FFF).astype(np.int32), g.astype(np.int32))
    wi = np.where(w & 0x8000, -(w & 0x7FFF).astype(np.int32), w.astype(np.int32))
    bad = np.nonzero((np.abs(gi - wi) > ulps) & ~gn)[0]
    assert bad.size == 0, (f"{bad.size} elements differ by more than {ulps} ulp, first at "
                           f"{bad[:5]}: {g[bad[:5]]} vs {w[bad[:5]]}")


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("n", SIZES + [eager.THRESHOLD + 3, 1 << 24])
@pytest.mark.parametrize("op, operand", CASES)
def test_on_a_gpu_bf16_ops_are_one_launch_with_the_reference_bits(monkeypatch, op, operand, n):
    from tensorplay import _backend
    be = _backend.get_backend("cuda")
    x = tensorplay_cuda.from_cupy(_special(n, 1))
    y = tensorplay_cuda.from_cupy(_special(n, 2))
    f = getattr(tp, op)
    for _ in range(eager.WARMUP_CALLS + 2):       # past the warm-up and the first compile
        _call(f, operand, x, y)
    kernel = be.kernels()[op]
    dev = cupy.cuda.runtime.getDevice()
    key = (BF16, dev) if operand in ("xy", "x") else (BF16, dev, float)
    if n < eager.THRESHOLD:
        call = kernel.dense.launches.get(key)
    elif n % 16 == 0:
        # rsub of two tensors is other - input: at this size it takes sub's kept launch with
        # the operands exchanged (rsub's own holds its number case only; an H100, 2026-12-07)
        big = be.kernels()["sub"] if (op, operand) == ("rsub", "xy") else kernel
        call = big.launch_large.launches.get(key)[2]
    else:
        call = None          # (an unaligned large size: the generated kernel through the chain)
    launches = []
    if call is not None:
        assert "LAUNCH" in call.__globals__, "the kept call is not the one-function launch"
        real = call.__globals__["LAUNCH"]

        def counting(*a):
            launches.append(a[0])
            return real(*a)
        monkeypatch.setitem(call.__globals__, "LAUNCH", counting)
    r = _call(f, operand, x, y)
    if call is not None:
        assert len(launches) == 1, (op, n)
    # the oracle is the cpu's result (torch's rule: float32 math, one rounding, subnormals
    # kept), not the cuda reference kernel's: CuPy compiles every kernel with -ftz=true, so its
    # float32 steps flush bfloat16 subnormals (1e-40 / 1e-40 is NaN there, 1.0 here and in torch)
    want = _call(f, operand, x.cpu(), y.cpu())
    assert r.dtype is tp.bfloat16 and want.dtype is tp.bfloat16
    _same_bits(r._data, cupy.asarray(np.asarray(want.numpy())),
               1 if op in _TRANSCENDENTAL else 0)
