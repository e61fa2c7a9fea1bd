"""On a GPU: the one-launch paths of tests/test_cuda_host59.py give the cpu backend's results
bit for bit -- integer/bool arrays of two dtypes (``target * mask``), one dtype's integer ops and
two-array comparisons, and the strided copy of ``q.transpose(1, 2).contiguous()`` -- past the
warm-up calls (``eager.WARMUP_CALLS``), when the kept launch runs. A module of its own: the
stubbed module's stand-ins stay in place while its tests run."""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp

pytest.importorskip("cupy", reason="CuPy is not installed")
pytest.importorskip("tensorplay_cuda")
from tensorplay_cuda import eager  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")]

MIXED = [("mul", "int64", "bool"), ("add", "int64", "bool"), ("mul", "int32", "int64"),
         ("sub", "int64", "int32"), ("add", "int8", "uint8"), ("maximum", "int64", "bool"),
         ("lt", "int64", "int32"), ("eq", "bool", "int64"), ("ne", "uint8", "int8"),
         ("ge", "int16", "int64")]


def _values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(d)
    v = rng.integers(info.min, info.max, shape, dtype=d, endpoint=True)
    v.reshape(-1)[:4] = [info.min, info.max, 0, -1 if info.min else 1]
    return v


def _same(got, want):
    assert got.device.type == "cuda" and got.dtype is want.dtype and got.shape == want.shape
    g, w = got.cpu().numpy(), want.numpy()
    assert np.array_equal(g.view(np.uint8), w.view(np.uint8))


@pytest.mark.parametrize("op, da, db", MIXED)
def test_mixed_integer_operands_match_cpu(op, da, db):
    a, b = _values(da, (96,), 0), _values(db, (96,), 1)
    want = getattr(tp.ops.tp, op)(tp.from_numpy(a), tp.from_numpy(b))
    ca, cb = tp.from_numpy(a).cuda(), tp.from_numpy(b).cuda()
    for _ in range(eager.WARMUP_CALLS + 3):
        _same(getattr(tp.ops.tp, op)(ca, cb), want)
    k = tp.backends.get("cuda").kernels()[op]
    assert (np.dtype(da), np.dtype(db), 0) in k.dense_mixed.launches


def test_the_cross_entropy_range_check_matches_cpu():
    t = tp.from_numpy(np.random.default_rng(2).integers(0, 800, 96))
    for ignore in (-100, 5):
        m = t != ignore
        want = bool((t * m).max() < 800)
        tc, mc = t.cuda(), m.cuda()
        for _ in range(eager.WARMUP_CALLS + 3):
            assert bool((tc * mc).max() < 800) is want
            _same(tc * mc, t * m)
            _same(tc != ignore, m)


@pytest.mark.parametrize("op", ["add", "mul", "lt", "ne", "div"])
def test_one_dtype_integer_ops_and_comparisons_match_cpu(op):
    a, b = _values("int64", (96, 8), 3), _values("int64", (96, 8), 4)
    if op == "div":        # (true division: the reference kernel; values a float32 holds)
        a, b = a % 1000 - 500, b % 1000 + 1
    x = tp.from_numpy(np.random.default_rng(5).standard_normal((96, 80)).astype(np.float32))
    y = tp.from_numpy(np.random.default_rng(6).standard_normal((96, 80)).astype(np.float32))
    f = getattr(tp.ops.tp, op)
    for _ in range(eager.WARMUP_CALLS + 3):
        _same(f(tp.from_numpy(a).cuda(), tp.from_numpy(b).cuda()),
              f(tp.from_numpy(a), tp.from_numpy(b)))
        _same(f(tp.from_numpy(a).cuda(), 3), f(tp.from_numpy(a), 3))
        if op != "div":
            _same(f(x.cuda(), y.cuda()), f(x, y))
            _same(f(x.cuda(), 0.25), f(x, 0.25))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int64", "int8",
                                   "bool"])
def test_strided_copies_match_cpu(dtype):
    rng = np.random.default_rng(7)
    q = tp.from_numpy(rng.standard_normal((2, 64, 48, 16)).astype(np.float32))
    q = q.to(getattr(tp, dtype)) if dtype != "bool" else q > 0
    r = tp.from_numpy(rng.standard_normal((300, 7)).astype(np.float32)).to(q.dtype)
    cases = [(q, lambda t: t.transpose(1, 2).contiguous()), (r, lambda t: t.t().contiguous()),
             (r, lambda t: t[::2, 1:5].clone()), (q, lambda t: t.permute(3, 1, 0, 2).contiguous())]
    for src, f in cases:
        want = f(src)
        c = src.cuda()
        for _ in range(eager.WARMUP_CALLS + 3):
            _same(f(c), want)
    keys = tp.backends.get("cuda").kernels()["clone"].strided.keys
    assert any(isinstance(v, tuple) for v in keys.values())
