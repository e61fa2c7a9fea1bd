"""RMSNorm / LayerNorm Triton kernels with backward kernels in a second ``triton_op``
(``benchmarks/triton_norms.py``, the kernels ``benchmarks/bench_gpu_backward.py`` times on cuda):
checked on cpu through Triton's interpreter against NumPy references, through ``backward()`` into
``.grad``, and with ``tensorplay.library.opcheck`` (autograd registration included). Small sizes:
the interpreter is slow. No environment variable is needed (cpu tensors are always interpreted).
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402
from tensorplay import library  # noqa: E402

_PATH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "triton_norms.py"


def _load():
    name = "tensorplay_bench_triton_norms"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, _PATH)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def K():
    return _load()


def _t(a):
    return tensorplay.tensor(np.ascontiguousarray(a))


def _np(t):
    return t.detach().numpy()


def _rms_ref(x, w, eps):
    x64 = x.astype(np.float64)
    rstd = 1 / np.sqrt((x64 * x64).mean(-1) + eps)
    return x64 * rstd[:, None] * w, rstd


def _rms_grad_ref(x, w, eps, dy):
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    _, rstd = _rms_ref(x, w, eps)
    g = dy64 * w
    c = (g * x64).sum(-1) / x.shape[-1]
    dx = rstd[:, None] * g - (rstd ** 3 * c)[:, None] * x64
    dw = (dy64 * x64 * rstd[:, None]).sum(0)
    return dx, dw


def _ln_ref(x, w, b, eps):
    x64 = x.astype(np.float64)
    mean = x64.mean(-1)
    rstd = 1 / np.sqrt(((x64 - mean[:, None]) ** 2).mean(-1) + eps)
    xhat = (x64 - mean[:, None]) * rstd[:, None]
    return xhat * w + b, mean, rstd, xhat


def _ln_grad_ref(x, w, b, eps, dy):
    _, _, rstd, xhat = _ln_ref(x, w, b, eps)
    g = dy.astype(np.float64) * w
    n = x.shape[-1]
    c1 = (xhat * g).sum(-1, keepdims=True) / n
    c2 = g.sum(-1, keepdims=True) / n
    dx = (g - (xhat * c1 + c2)) * rstd[:, None]
    return dx, (dy * xhat).sum(0), dy.sum(0)


# M > BLOCK_M_DW (32) exercises the row loop of the weight-gradient kernels and its masked tail;
# N = 40 is not a power of two (masked columns) and spans one column block, N = 70 two.
@pytest.mark.parametrize("M,N", [(37, 40), (5, 70)])
def test_rms_norm_forward_backward(K, M, N):
    r = np.random.default_rng(M * N)
    eps = 1e-5
    x = (0.5 + r.standard_normal((M, N))).astype(np.float32)
    w = r.random(N).astype(np.float32) + 0.5
    dy = r.standard_normal((M, N)).astype(np.float32)
    xt, wt = _t(x).requires_grad_(), _t(w).requires_grad_()
    y, rstd = K.rms_norm(xt, wt, eps)
    y_ref, rstd_ref = _rms_ref(x, w, eps)
    np.testing.assert_allclose(_np(y), y_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(rstd), rstd_ref, rtol=1e-5, atol=1e-6)
    y.backward(_t(dy))
    dx_ref, dw_ref = _rms_grad_ref(x, w, eps, dy)
    np.testing.assert_allclose(_np(xt.grad), dx_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(wt.grad), dw_ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N", [(37, 40), (5, 70)])
def test_layer_norm_forward_backward(K, M, N):
    r = np.random.default_rng(M + N)
    eps = 1e-5
    x = (-2.0 + 0.7 * r.standard_normal((M, N))).astype(np.float32)
    w = r.random(N).astype(np.float32)
    b = r.random(N).astype(np.float32)
    dy = r.standard_normal((M, N)).astype(np.float32)
    xt, wt, bt = _t(x).requires_grad_(), _t(w).requires_grad_(), _t(b).requires_grad_()
    y, mean, rstd = K.layer_norm(xt, wt, bt, eps)
    y_ref, mean_ref, rstd_ref, _ = _ln_ref(x, w, b, eps)
    np.testing.assert_allclose(_np(y), y_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(mean), mean_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(rstd), rstd_ref, rtol=1e-4, atol=1e-5)
    y.backward(_t(dy))
    dx_ref, dw_ref, db_ref = _ln_grad_ref(x, w, b, eps, dy)
    np.testing.assert_allclose(_np(xt.grad), dx_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(wt.grad), dw_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(bt.grad), db_ref, rtol=1e-4, atol=1e-4)


def test_backward_ops_directly(K):
    """The backward ``triton_op``s on their own (what the formulas call) match the references."""
    r = np.random.default_rng(3)
    M, N, eps = 4, 24, 1e-6
    x = r.standard_normal((M, N)).astype(np.float32)
    w = r.random(N).astype(np.float32)
    dy = r.standard_normal((M, N)).astype(np.float32)
    _, rstd = _rms_ref(x, w, eps)
    dx, dw = K.rms_norm_backward(_t(dy), _t(x), _t(w), _t(rstd.astype(np.float32)))
    dx_ref, dw_ref = _rms_grad_ref(x, w, eps, dy)
    np.testing.assert_allclose(_np(dx), dx_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(dw), dw_ref, rtol=1e-4, atol=1e-4)


def test_opcheck(K):
    r = np.random.default_rng(9)
    f = lambda *s: _t(r.standard_normal(s).astype(np.float32))  # noqa: E731
    assert library.opcheck(K.rms_norm, (f(4, 24), f(24), 1e-5)) == {}
    assert library.opcheck(K.layer_norm, (f(4, 24), f(24), f(24), 1e-5)) == {}
    rstd = _t(np.abs(r.standard_normal(4)).astype(np.float32) + 0.5)
    mean = f(4)
    no_grad = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")
    assert library.opcheck(K.rms_norm_backward, (f(4, 24), f(4, 24), f(24), rstd),
                           test_utils=no_grad) == {}
    assert library.opcheck(K.layer_norm_backward, (f(4, 24), f(4, 24), f(24), mean, rstd),
                           test_utils=no_grad) == {}


def test_bench_gpu_backward_self_check_on_cpu():
    """The GPU benchmark's own correctness checks and table, run through the interpreter."""
    import subprocess
    script = _PATH.parent / "bench_gpu_backward.py"
    r = subprocess.run([sys.executable, str(script), "--device", "cpu", "--m", "34", "--n", "40",
                        "--iters", "1", "--rounds", "1"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith(("RMSNorm", "LayerNorm"))]
    assert [(a, b) for a, b, *_ in rows] == [
        ("RMSNorm", "fwd"), ("RMSNorm", "fwd+bwd"), ("RMSNorm", "bwd"),
        ("LayerNorm", "fwd"), ("LayerNorm", "fwd+bwd"), ("LayerNorm", "bwd")]


# -- the engine hands a formula's gradient to .grad without a copy when nothing else holds it ----
# (a formula's ``dx.reshape(x.shape)`` is a view of a fresh tensor: torch's AccumulateGrad steals
# it; copying it cost a full read and write of the gradient per backward on cuda)

def _op_returning(name, make):
    @library.custom_op(f"bwk_test::{name}", mutates_args=())
    def op(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 2.0

    def bw(ctx, g):
        return make(g)
    op.register_autograd(bw)
    return op


def test_grad_takes_a_reshaped_fresh_gradient_without_copy():
    seen = {}

    def make(g):
        d = (g * 2.0).reshape(-1).reshape(g.shape)     # views of a fresh tensor
        seen["ptr"] = d.data_ptr()
        return d
    op = _op_returning("reshaped", make)
    x = tensorplay.randn(4, 6).requires_grad_()
    op(x).backward(tensorplay.ones(4, 6))
    assert x.grad.data_ptr() == seen["ptr"]
    assert x.grad.grad_fn is None and not x.grad.requires_grad
    np.testing.assert_allclose(_np(x.grad), np.full((4, 6), 2.0, np.float32))
    op(x).backward(tensorplay.ones(4, 6))                 # accumulates on top
    np.testing.assert_allclose(_np(x.grad), np.full((4, 6), 4.0, np.float32))


def test_grad_copies_a_view_whose_base_is_held_elsewhere():
    keep = {}

    def make(g):
        base = g * 2.0
        keep["base"] = base
        return base.reshape(g.shape)
    op = _op_returning("held", make)
    x = tensorplay.randn(3, 5).requires_grad_()
    op(x).backward(tensorplay.ones(3, 5))
    assert x.grad.data_ptr() != keep["base"].data_ptr()
    keep["base"].mul_(0.0)                                # must not reach x.grad
    np.testing.assert_allclose(_np(x.grad), np.full((3, 5), 2.0, np.float32))


def test_grad_copies_a_view_of_part_of_a_storage():
    def make(g):
        big = tensorplay.ones(2 * g.numel()) * 2.0
        return big[: g.numel()].reshape(g.shape)
    op = _op_returning("partial", make)
    x = tensorplay.randn(2, 3).requires_grad_()
    op(x).backward(tensorplay.ones(2, 3))
    np.testing.assert_allclose(_np(x.grad), np.full((2, 3), 2.0, np.float32))
    assert x.grad.is_contiguous() and x.grad.storage_offset() == 0
