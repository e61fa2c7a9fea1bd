"""Tests of the Triton plugin (``tensorplay-triton``): ``wrap_triton``, ``triton_op`` and the example
pack's Triton ops.

Two modes, chosen by ``TENSORPLAY_TRITON_TEST_MODE`` when this module is imported:

* ``interpret`` (default; CI): no environment variable is set (``TRITON_INTERPRET`` is removed if
  present): kernels are plain ``@triton.jit`` kernels and ``wrap_triton`` runs them through Triton's
  interpreter because the tensors are on cpu. The ``test_compiled_*`` tests are skipped here: on a
  GPU machine ``test_cuda_compiled_suite`` runs them in a subprocess in ``compiled`` mode.
* ``compiled`` (that subprocess): kernels compile for the GPU and launch through the CuPy-backed
  Triton driver; only the ``test_compiled_*`` tests run.

``TENSORPLAY_BLOCK_TORCH=1`` makes ``import torch`` fail in the test process (set it on a machine
where torch is installed: everything here must work without it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MODE = os.environ.get("TENSORPLAY_TRITON_TEST_MODE", "interpret")
if MODE not in ("interpret", "compiled"):
    raise RuntimeError(f"TENSORPLAY_TRITON_TEST_MODE must be 'interpret' or 'compiled', got {MODE!r}")
os.environ.pop("TRITON_INTERPRET", None)   # the mode is chosen per launch, from the device

# TENSORPLAY_BLOCK_TORCH=1 is installed by tests/conftest.py, before any test module imports

import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay
import tensorplay_triton
import triton.language as tl
from tensorplay import library
from tensorplay.fake import FakeTensorMode
from tensorplay_triton import TritonLaunchError, wrap_triton

from _plugin_dists import own_plugins

ROOT = Path(__file__).resolve().parents[1]
BLOCK_TORCH_DIR = ROOT / "plugins" / "tensorplay_triton" / "tools" / "block_torch"

interpret_only = pytest.mark.skipif(
    MODE != "interpret", reason="interpreter-mode test (this process runs compiled kernels)")
_compiled_mode = pytest.mark.skipif(
    MODE != "compiled",
    reason="compiled-kernel test: run by test_cuda_compiled_suite in a subprocess with "
           "TENSORPLAY_TRITON_TEST_MODE=compiled")


def compiled_only(fn):
    """GPU test with compiled kernels: marked ``cuda`` and ``triton``; runs in compiled mode only."""
    return pytest.mark.cuda(pytest.mark.triton(_compiled_mode(fn)))


def _cuda_ok():
    ok, why = tensorplay.plugins.device_status("cuda")
    return ok, why


def _need_cuda():
    ok, why = _cuda_ok()
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")


def _cpu():
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    return "cpu"


def _host(t):
    return t.detach().cpu().numpy()


# -- kernels (decorated now: interpreted or compiled according to MODE) -------------------------

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def axpy_kernel(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr, SQUARE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if SQUARE:
        x = x * x
    tl.store(out_ptr + offs, alpha * x, mask=m)


@triton.jit
def strided_copy_kernel(x_ptr, out_ptr, s0, s1, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    v = tl.load(x_ptr + row * s0 + c * s1, mask=m)
    tl.store(out_ptr + row * n_cols + c, v, mask=m)


_HOOK_CALLS: list = []


def _pre_hook(nargs, reset_only=False):
    _HOOK_CALLS.append(("pre", type(nargs["out_ptr"]).__name__))


def _post_hook(nargs, exception):
    _HOOK_CALLS.append(("post", exception))


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                 key=["n"], reset_to_zero=["out_ptr"])
@triton.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out += x: without reset_to_zero the benchmark runs of autotuning would accumulate."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                 key=["n"], pre_hook=_pre_hook, post_hook=_post_hook)
@triton.jit
def hooked_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                 key=["n"], restore_value=["out_ptr"])
@triton.jit
def accumulate_restore_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out += x, autotuned with restore_value: benchmark runs must leave ``out`` as it was."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.heuristics(values={"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit
def heuristic_neg_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, -tl.load(x_ptr + offs, mask=m), mask=m)


def _grid1(n, block):
    return ((n + block - 1) // block,)


# -- ops defined by the tests --------------------------------------------------------------------

_BODY_CALLS = {"n": 0, "kinds": []}


@library.triton_op("tritontest::add", mutates_args=(),
                   schema="(Tensor x, Tensor y) -> Tensor")
def tt_add(x, y):
    _BODY_CALLS["n"] += 1
    _BODY_CALLS["kinds"].append("capture" if x._capture is not None else
                                "fake" if x.is_fake else "real")
    out = tensorplay.empty_like(x)
    n = x.numel()
    wrap_triton(add_kernel)[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=64)
    return out


@library.triton_op("tritontest::scale_", mutates_args=("x",))
def tt_scale_(x: tensorplay.Tensor, alpha: float) -> None:
    n = x.numel()
    library.wrap_triton(axpy_kernel)[_grid1(n, 64)](x, x, alpha, n, BLOCK=64, SQUARE=False)


def _example_ops():
    mod = pytest.importorskip("tensorplay_example_ops.triton_ops",
                              reason="the example pack (tensorplay-example-ops) is not installed")
    if not mod.AVAILABLE:
        pytest.skip(f"example triton ops unavailable: {mod.UNAVAILABLE_REASON}")
    return mod


# ================================================================================================
# Plugin, import cost, wrap_triton basics (any mode)

def test_plugin_loaded_and_import_is_light():
    code = ("import sys, tensorplay\n"
            "recs = {r['dist']: r for r in tensorplay.plugins.list()}\n"
            "r = recs['tensorplay-triton']\n"
            "assert r['status'] == 'loaded', r\n"
            "heavy = [m for m in ('triton', 'numpy', 'cupy', 'torch') if m in sys.modules]\n"
            "print('HEAVY', heavy)\n")
    # this repository's plugins only: a user's own op pack may import numpy when it loads
    env = {**os.environ, "TENSORPLAY_PLUGINS": own_plugins()}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       check=False, env=env)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout, p.stdout


def test_torch_blocked_when_asked():
    if os.environ.get("TENSORPLAY_BLOCK_TORCH") != "1":
        pytest.skip("TENSORPLAY_BLOCK_TORCH is not set (nothing to prove on this run)")
    from tensorplay_triton import _torchblock
    assert _torchblock.is_installed()
    with pytest.raises(ImportError, match="blocked"):
        import torch  # noqa: F401
    assert "torch" not in sys.modules


def test_wrap_triton_is_idempotent_and_cached():
    w = wrap_triton(add_kernel)
    assert wrap_triton(w) is w
    assert wrap_triton(add_kernel) is w
    assert library.wrap_triton(add_kernel) is w
    assert library.wrap_triton(w) is w
    assert w.kernel is add_kernel and w.fn is add_kernel
    assert w.arg_names == ("x_ptr", "y_ptr", "out_ptr", "n", "BLOCK")
    assert w.interpreted is False          # a @triton.jit kernel: compiled on cuda, interpreted on cpu
    assert "add_kernel" in repr(w)
    a = wrap_triton(accumulate_kernel)
    assert a.name == "accumulate_kernel" and a.interpreted is False
    s = wrap_triton(strided_copy_kernel, strided=["x_ptr"])
    assert s is not wrap_triton(strided_copy_kernel) and s.strided == {"x_ptr"}


def test_wrap_triton_rejects_non_kernels():
    def plain(x):
        return x
    with pytest.raises(TypeError, match="decorate it with @triton.jit"):
        wrap_triton(plain)
    with pytest.raises(TypeError, match="Triton kernel"):
        wrap_triton([add_kernel])
    with pytest.raises(ValueError, match="not parameters"):
        wrap_triton(add_kernel, strided=["nope"])


def test_wrap_triton_accepts_any_grid_indexable_launcher():
    seen = []

    class Launcher:
        def __getitem__(self, grid):
            def go(*args, **kwargs):
                seen.append((grid, args, kwargs))
                return "launched"
            return go

    w = wrap_triton(Launcher())
    assert w.interpreted is None
    assert w[(3,)](1, np.int64(7), s=np.float32(0.5)) == "launched"
    grid, args, kwargs = seen[0]
    assert grid == (3,) and args == (1, 7) and type(args[1]) is int
    assert kwargs == {"s": 0.5} and type(kwargs["s"]) is float


# ================================================================================================
# Interpreter mode: real Triton kernels on cpu tensors

@interpret_only
def test_tuple_and_callable_grid_on_cpu():
    _cpu()
    x, y = tensorplay.randn(1000), tensorplay.randn(1000)
    out = tensorplay.empty(1000)
    wrap_triton(add_kernel)[(16,)](x, y, out, 1000, BLOCK=64)
    np.testing.assert_allclose(_host(out), _host(x) + _host(y), rtol=1e-6)
    out2 = tensorplay.zeros(1000)
    grid_args = {}

    def grid(meta):
        grid_args.update(meta)
        return (triton.cdiv(meta["n"], meta["BLOCK"]),)
    wrap_triton(add_kernel)[grid](x, y, out2, 1000, BLOCK=128)
    np.testing.assert_allclose(_host(out2), _host(x) + _host(y), rtol=1e-6)
    assert grid_args["n"] == 1000 and grid_args["BLOCK"] == 128


@interpret_only
def test_constexpr_branches_kwargs_and_numpy_scalars_on_cpu():
    _cpu()
    x = tensorplay.randn(100)
    out = tensorplay.empty(100)
    k = wrap_triton(axpy_kernel)
    k[(2,)](x, out, np.float32(2.5), np.int64(100), BLOCK=64, SQUARE=True)
    np.testing.assert_allclose(_host(out), 2.5 * _host(x) ** 2, rtol=1e-6)
    k[(2,)](x_ptr=x, out_ptr=out, alpha=-1.0, n=100, BLOCK=64, SQUARE=False)
    np.testing.assert_allclose(_host(out), -_host(x), rtol=1e-6)


@interpret_only
def test_offset_views_and_strided_opt_in_on_cpu():
    _cpu()
    base = tensorplay.randn(10, 16)
    x = base[2:]                                   # contiguous view with a storage offset
    out = tensorplay.empty(8 * 16)
    wrap_triton(axpy_kernel)[(2,)](x, out, 1.0, 128, BLOCK=64, SQUARE=False)
    np.testing.assert_allclose(_host(out), _host(base)[2:].reshape(-1))
    t = base.t()                                   # (16, 10), non-contiguous
    with pytest.raises(TritonLaunchError, match=r"'x_ptr' is a non-contiguous cpu tensor.*strided="):
        wrap_triton(strided_copy_kernel)[(16,)](t, out, 10, 1, 10, BLOCK=16)   # strides not passed
    out2 = tensorplay.empty(16, 10)
    wrap_triton(strided_copy_kernel, strided=["x_ptr"])[(16,)](t, out2, t.stride(0), t.stride(1),
                                                               10, BLOCK=16)
    np.testing.assert_array_equal(_host(out2), _host(base).T)


@interpret_only
def test_autotune_reset_to_zero_and_cache_on_cpu():
    _cpu()
    x = tensorplay.randn(300)
    out = tensorplay.zeros(300)
    k = wrap_triton(accumulate_kernel)
    k[lambda m: (triton.cdiv(300, m["BLOCK"]),)](x, out, 300)
    # the interpreter does not time configs: the first one runs, once (the kernel accumulates)
    np.testing.assert_allclose(_host(out), _host(x), rtol=1e-6)
    assert accumulate_kernel.best_config.kwargs["BLOCK"] == 64
    # configs chosen by timing the interpreter are kept apart from the GPU's choices
    assert not any(300 in key for key in accumulate_kernel.cache)
    # cached on the host side: a second launch runs once (accumulates exactly once more)
    k[lambda m: (triton.cdiv(300, m["BLOCK"]),)](x, out, 300)
    np.testing.assert_allclose(_host(out), 2 * _host(x), rtol=1e-6)


@interpret_only
def test_autotune_restore_value_on_cpu():
    _cpu()
    x = tensorplay.randn(200)
    out = tensorplay.full((200,), 5.0)
    wrap_triton(accumulate_restore_kernel)[lambda m: (triton.cdiv(200, m["BLOCK"]),)](x, out, 200)
    # no config is timed on the interpreter (nothing to restore): only the real run counts
    np.testing.assert_allclose(_host(out), 5.0 + _host(x), rtol=1e-6)
    assert accumulate_restore_kernel.best_config.kwargs["BLOCK"] == 64


@interpret_only
def test_autotune_user_pre_post_hooks_on_cpu():
    _cpu()
    _HOOK_CALLS.clear()
    x = tensorplay.randn(100)
    out = tensorplay.empty(100)
    wrap_triton(hooked_copy_kernel)[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, out, 100)
    np.testing.assert_array_equal(_host(out), _host(x))
    # the autotuner's pre/post hooks surround timed runs only (Triton calls none when a single
    # config is left); the interpreter times none, so none ran
    assert _HOOK_CALLS == []


@interpret_only
def test_heuristics_kernel_on_cpu():
    _cpu()
    x = tensorplay.randn(37)
    out = tensorplay.empty(37)
    wrap_triton(heuristic_neg_kernel)[(1,)](x, out, 37)
    np.testing.assert_array_equal(_host(out), -_host(x))


@interpret_only
def test_fake_tensors_skip_the_launch():
    _cpu()
    x = tensorplay.randn(64)
    with FakeTensorMode() as m:
        fx = m.from_tensor(x)
        fo = tensorplay.empty(64)
        # a real launch would fail: fake tensors have no memory for the interpreter to copy
        assert wrap_triton(add_kernel)[(1,)](fx, fx, fo, 64, BLOCK=64) is None
        with pytest.raises(TritonLaunchError, match="fake and real tensors mixed"):
            wrap_triton(add_kernel)[(1,)](fx, x, fo, 64, BLOCK=64)
    meta = tensorplay.empty(64, device="meta")
    assert wrap_triton(add_kernel)[(1,)](meta, meta, meta, 64, BLOCK=64) is None


@interpret_only
def test_compiled_kernel_given_cpu_tensors_is_interpreted():
    _cpu()
    from triton.runtime.jit import JITFunction
    assert type(add_kernel) is JITFunction      # decorated with no TRITON_INTERPRET
    x = tensorplay.randn(50)
    out = tensorplay.empty(50)
    wrap_triton(add_kernel)[(1,)](x, x, out, 50, BLOCK=64)
    np.testing.assert_allclose(_host(out), 2 * _host(x), rtol=1e-6)


@interpret_only
def test_triton_op_runs_schema_and_fake_from_body_on_cpu():
    _cpu()
    assert tt_add.is_triton
    assert str(tt_add.schema) == "tritontest::add(Tensor x, Tensor y) -> Tensor"
    x, y = tensorplay.randn(200), tensorplay.randn(200)
    np.testing.assert_allclose(_host(tt_add(x, y)), _host(x) + _host(y), rtol=1e-6)
    before = _BODY_CALLS["n"]
    with FakeTensorMode() as m:
        f = tt_add(m.from_tensor(x), m.from_tensor(y))
    assert f.is_fake and f.shape == (200,) and f.dtype == x.dtype
    assert _BODY_CALLS["n"] == before + 1         # the body is the fake kernel
    assert library.opcheck(tt_add, (x, y), test_utils=("test_schema", "test_faketensor")) == {}


@interpret_only
def test_triton_op_mutating_declared_arg_on_cpu():
    _cpu()
    x = tensorplay.randn(100)
    ref = _host(x).copy()
    v = x._version
    tt_scale_(x, 3.0)
    np.testing.assert_allclose(_host(x), 3 * ref, rtol=1e-6)
    assert x._version == v + 1
    assert library.opcheck(tt_scale_, (tensorplay.randn(50), 2.0),
                           test_utils=("test_schema", "test_faketensor")) == {}


@interpret_only
def test_compile_triton_op_is_one_opaque_node_and_raw_launches_are_recorded():
    _cpu()
    x, y = tensorplay.randn(8, 8), tensorplay.randn(8, 8)

    def f(a, b):
        return tt_add(a, b) * 2

    cf = tensorplay.compile(f)
    _BODY_CALLS["kinds"].clear()
    r = cf(x, y)
    np.testing.assert_allclose(_host(r), 2 * (_host(x) + _host(y)), rtol=1e-6)
    lines = [ln for ln in str(cf.graph).splitlines() if "tritontest::add" in ln]
    assert len(lines) == 1 and "opaque triton_op" in lines[0], str(cf.graph)
    # capture never ran the body on capture tensors (opaque node); it ran as the fake kernel on
    # plain fake tensors (no launch), and once for real when the graph executed
    kinds = _BODY_CALLS["kinds"]
    assert "capture" not in kinds and kinds.count("real") == 1 and "fake" in kinds, kinds

    from triton.runtime.interpreter import InterpretedFunction
    interp_add = InterpretedFunction(add_kernel.fn)      # a raw launch that reaches the tensors

    def raw(a, b):
        out = tensorplay.empty_like(a)
        interp_add[(1,)](a, b, out, 64, BLOCK=64)        # raw launch, no triton_op
        return out

    # launches outside a triton_op are recorded as one node each, as torch.compile records them
    cr = tensorplay.compile(raw)
    np.testing.assert_allclose(_host(cr(x, y)), _host(x) + _host(y), rtol=1e-6)
    assert "tensorplay_triton::launch('add_kernel'" in str(cr.graph), str(cr.graph)

    def wrapped_outside_op(a, b):
        out = tensorplay.empty_like(a)
        wrap_triton(add_kernel)[(1,)](a, b, out, 64, BLOCK=64)
        return out

    cw = tensorplay.compile(wrapped_outside_op)
    np.testing.assert_allclose(_host(cw(x, y)), _host(x) + _host(y), rtol=1e-6)


# -- the example pack's Triton ops on cpu (interpreter) ----------------------------------------------

@interpret_only
def test_example_triton_ops_values_on_cpu():
    _cpu()
    mod = _example_ops()
    E = tensorplay.ops.example
    x, y = tensorplay.randn(16, 48), tensorplay.randn(16, 48)
    ref = np.maximum((_host(x) + _host(y)) * 0.5, 0)
    np.testing.assert_allclose(_host(E.fused_add_mul_relu(x, y, 0.5)), ref, rtol=1e-6)
    out = tensorplay.empty(16, 48)
    v = out._version
    assert E.fused_add_mul_relu_out(x, y, 0.5, out) is None
    np.testing.assert_allclose(_host(out), ref, rtol=1e-6)
    assert out._version == v + 1
    s = _host(E.softmax_rows(x))
    e = np.exp(_host(x) - _host(x).max(-1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert mod.kernels_interpreted()
    with pytest.raises(ValueError, match="same shape"):
        E.fused_add_mul_relu(x, tensorplay.randn(3))


@interpret_only
def test_example_triton_ops_gradcheck_on_cpu():
    _cpu()
    _example_ops()
    E = tensorplay.ops.example
    x = tensorplay.randn(4, 9, dtype=tensorplay.float64).requires_grad_()
    assert tensorplay.autograd.gradcheck(lambda a: E.softmax_rows(a), (x,))
    a = tensorplay.randn(30, dtype=tensorplay.float64).requires_grad_()
    b = tensorplay.randn(30, dtype=tensorplay.float64).requires_grad_()
    assert tensorplay.autograd.gradcheck(lambda p, q: E.fused_add_mul_relu(p, q, 1.5), (a, b))


@interpret_only
@pytest.mark.parametrize("opname", ["fused_add_mul_relu", "fused_add_mul_relu_out", "softmax_rows"])
def test_example_triton_ops_opcheck_on_cpu(opname):
    _cpu()
    _example_ops()
    op = getattr(tensorplay.ops.example, opname)
    samples = tensorplay.plugins.sample_inputs(op, tensorplay.device("cpu"))
    assert samples, f"no cpu samples for {opname}"
    for s in samples:
        assert library.opcheck(op, s.args, s.kwargs) == {}, s.name


@interpret_only
def test_tensorplay_check_cli_on_cpu():
    _cpu()
    _example_ops()
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    p = subprocess.run([sys.executable, "-m", "tensorplay.cli", "check", "--device", "cpu",
                        "example::fused_add_mul_relu", "example::fused_add_mul_relu_out",
                        "example::softmax_rows"], capture_output=True, text=True, env=env,
                       timeout=600, check=False)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    for name in ("fused_add_mul_relu ", "fused_add_mul_relu_out", "softmax_rows"):
        assert name in out


@interpret_only
def test_example_kernels_compile_for_sm90_ahead_of_time():
    """CI has no GPU: compile the example pack's kernels for an H100/H200 target (sm_90) anyway,
    in a subprocess without TRITON_INTERPRET, so compile errors in compiled mode are caught here."""
    _example_ops()
    code = """
import importlib, os
os.environ.pop("TRITON_INTERPRET", None)
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
tk = importlib.import_module("tensorplay_example_ops.triton_kernels")
tgt = GPUTarget("cuda", 90, 32)
fused = tk.fused_add_mul_relu_kernel
for dt in ("*fp32", "*fp16", "*bf16", "*fp64"):
    sig = {"x_ptr": dt, "y_ptr": dt, "out_ptr": dt, "scale": "fp32", "n_elements": "i32",
           "BLOCK_SIZE": "constexpr"}
    triton.compile(ASTSource(fused, sig, constexprs={"BLOCK_SIZE": 1024}), target=tgt)
    sig = {"out_ptr": dt, "in_ptr": dt, "in_row_stride": "i32", "out_row_stride": "i32",
           "n_cols": "i32", "BLOCK_SIZE": "constexpr"}
    k = triton.compile(ASTSource(tk.softmax_rows_kernel, sig, constexprs={"BLOCK_SIZE": 4096}),
                       target=tgt)
    assert "ptx" in k.asm
print("AOT-OK")
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600, check=False)
    if p.returncode != 0 and ("ptxas" in p.stderr and "not found" in p.stderr):
        pytest.skip(f"no ptxas to compile with: {p.stderr[-300:]}")
    assert p.returncode == 0 and "AOT-OK" in p.stdout, p.stderr[-3000:]


# -- cuda tensors handed to interpreted kernels (GPU machine, interpreter mode) ----------------------

@pytest.mark.cuda
@pytest.mark.triton
@interpret_only
def test_cuda_tensors_through_the_interpreter():
    _need_cuda()
    from triton.runtime.interpreter import InterpretedFunction
    interp_add = InterpretedFunction(add_kernel.fn)     # what @triton.jit gives under TRITON_INTERPRET=1
    x = tensorplay.randn(300, device="cuda")
    y = tensorplay.randn(300, device="cuda")
    out = tensorplay.zeros(300, device="cuda")
    wrap_triton(interp_add)[(5,)](x, y, out, 300, BLOCK=64)
    np.testing.assert_allclose(_host(out), _host(x) + _host(y), rtol=1e-6)
    _example_ops()
    s = tensorplay.ops.example.softmax_rows(x.reshape(10, 30))
    np.testing.assert_allclose(_host(s).sum(-1), np.ones(10), rtol=1e-5)


@pytest.mark.cuda
@pytest.mark.triton
@interpret_only
def test_cuda_compiled_suite():
    """Runs the ``test_compiled_*`` tests in a subprocess with compiled kernels and torch blocked."""
    _need_cuda()
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["TENSORPLAY_TRITON_TEST_MODE"] = "compiled"
    env["TENSORPLAY_BLOCK_TORCH"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(BLOCK_TORCH_DIR)] +
                                        [q for q in [env.get("PYTHONPATH")] if q])
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                        str(Path(__file__)), "-k", "test_compiled_"],
                       capture_output=True, text=True, env=env, timeout=900, cwd=str(ROOT),
                       check=False)
    out = p.stdout + p.stderr
    print(out[-6000:])
    assert p.returncode == 0, out[-6000:]
    assert " passed" in out and " failed" not in out, out[-3000:]


# ================================================================================================
# Compiled mode (GPU machine, subprocess): the CuPy driver, streams, devices, autotune, example ops

def _cupy():
    return pytest.importorskip("cupy")


@compiled_only
def test_compiled_driver_is_cupy_and_torch_absent():
    _need_cuda()
    x = tensorplay.ones(10, device="cuda")
    out = tensorplay.empty(10, device="cuda")
    wrap_triton(add_kernel)[(1,)](x, x, out, 10, BLOCK=16)
    from triton.runtime import driver
    assert type(driver.active).__name__ == "CupyCudaDriver"
    assert "torch" not in sys.modules
    if os.environ.get("TENSORPLAY_BLOCK_TORCH") == "1":
        with pytest.raises(ImportError):
            import torch  # noqa: F401
    np.testing.assert_array_equal(_host(out), np.full(10, 2.0, np.float32))


@compiled_only
def test_compiled_grids_offsets_and_dtypes():
    _need_cuda()
    for dt in (tensorplay.float32, tensorplay.float16, tensorplay.int32):
        x = tensorplay.arange(5000, device="cuda").to(dt)
        y = tensorplay.ones(5000, device="cuda", dtype=dt)
        out = tensorplay.empty(5000, device="cuda", dtype=dt)
        wrap_triton(add_kernel)[lambda m: (triton.cdiv(5000, m["BLOCK"]),)](x, y, out, 5000,
                                                                             BLOCK=256)
        np.testing.assert_allclose(_host(out).astype(np.float64),
                                   _host(x).astype(np.float64) + 1, rtol=1e-3)
    base = tensorplay.randn(10, 64, device="cuda")
    view = base[3:]                                        # offset view
    out = tensorplay.empty(7 * 64, device="cuda")
    wrap_triton(axpy_kernel)[(7,)](view, out, 2.0, 7 * 64, BLOCK=64, SQUARE=False)
    np.testing.assert_allclose(_host(out), 2 * _host(base)[3:].reshape(-1), rtol=1e-6)


@compiled_only
@pytest.mark.parametrize("path", ["cupy", "direct-launch", "JITFunction.run"])
def test_compiled_launches_on_cupys_current_stream(path):
    _need_cuda()
    cp = _cupy()
    from tensorplay_triton import _wrap
    drv = tensorplay_triton.install_driver()
    asked = []
    real = type(drv).get_current_stream

    def spy(device=None):
        ptr = real(drv, device)
        asked.append(ptr)
        return ptr
    seen = []
    chain = triton.knobs.runtime.launch_enter_hook      # a HookChain in Triton 3.6

    def hook(md):
        seen.append(md.get()["stream"])
    prev = _wrap._FAST[0], _wrap._CUPY_LAUNCH[0]
    _wrap._FAST[0] = path != "JITFunction.run"
    _wrap._CUPY_LAUNCH[0] = path == "cupy"
    drv.get_current_stream = spy
    try:
        x = tensorplay.randn(1 << 16, device="cuda")
        out = tensorplay.empty(1 << 16, device="cuda")
        k = wrap_triton(axpy_kernel)
        k[(64,)](x, out, 1.0, 1 << 16, BLOCK=1024, SQUARE=False)       # compile outside the stream
        s = cp.cuda.Stream(non_blocking=True)
        x_ready = cp.cuda.get_current_stream().record()
        asked.clear()
        if path == "cupy":
            # the CuPy launch asks CuPy for the stream itself: prove where it went by capturing
            # stream s into a graph -- a launch on another stream would run at once
            cp.cuda.get_current_stream().synchronize()
            with s:
                s.wait_event(x_ready)
                s.begin_capture()
                k[(64,)](x, out, 3.0, 1 << 16, BLOCK=1024, SQUARE=False)
                graph = s.end_capture()
            s.synchronize()
            np.testing.assert_allclose(_host(out), _host(x), rtol=1e-6)   # not run yet
            graph.launch(s)
            assert type(k._direct[next(iter(k._direct))]).__name__ == "Direct", k._direct
        else:
            with s:
                s.wait_event(x_ready)
                k[(64,)](x, out, 3.0, 1 << 16, BLOCK=1024, SQUARE=False)
            assert asked and set(asked) == {s.ptr} and s.ptr != 0, (asked, s.ptr)
        s.synchronize()
        np.testing.assert_allclose(_host(out), 3 * _host(x), rtol=1e-6)
        chain.add(hook)                    # a launch hook set: Triton's own path reports the stream
        with s:
            k[(64,)](x, out, 2.0, 1 << 16, BLOCK=1024, SQUARE=False)
        s.synchronize()
    finally:
        chain.remove(hook)
        del drv.get_current_stream
        _wrap._FAST[0], _wrap._CUPY_LAUNCH[0] = prev
    assert seen == [s.ptr]
    np.testing.assert_allclose(_host(out), 2 * _host(x), rtol=1e-6)


@triton.jit
def mixed_args_kernel(x_ptr, out_ptr, alpha, n, flag, big, BLOCK: tl.constexpr):
    """out = (x * alpha [+ 1 if flag]) for n + big - big elements: every scalar kind Triton passes."""
    offs = tl.program_id(0) * BLOCK + tl.program_id(1) * n + tl.arange(0, BLOCK)
    m = tl.arange(0, BLOCK) + tl.program_id(0) * BLOCK < n + big - big
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32) * alpha
    if flag:
        x = x + 1
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=m)


@compiled_only
def test_compiled_cupy_launch_matches_tritons_launch():
    """Repeated launches (the second and later ones of a specialisation go through CuPy) give the
    results Triton's launcher gives: dtypes, offset views (alignment), 2-D and function grids,
    int/float/bool/i64 scalars, a value of 1 (a constexpr), another stream, an empty grid."""
    _need_cuda()
    cp = _cupy()
    from tensorplay_triton import _wrap
    w = wrap_triton(mixed_args_kernel)
    s = cp.cuda.Stream(non_blocking=True)
    cases = []
    for dt in (tensorplay.float32, tensorplay.float16):
        for off in (0, 3):                        # an offset of 3 elements: not 16-byte aligned
            for flag in (True, False):
                for n in (1000, 1, 1024):
                    cases.append((dt, off, flag, n))
    for dt, off, flag, n in cases:
        base = tensorplay.randn(2 * n + off, device="cuda").to(dt)
        x = base[off:]
        for rep, alpha in enumerate((0.5, -2.0, 3.0)):
            out = tensorplay.zeros(2 * n + off, device="cuda", dtype=dt)[off:]
            grid = (lambda m: (triton.cdiv(m["n"], m["BLOCK"]), 2)) if rep == 1 else \
                (triton.cdiv(n, 256), 2)
            if rep == 2:
                # x and out were just written on the current stream, and a non-blocking stream
                # is not ordered after it: the side stream waits for them, as a user's must (seen
                # on the H200 under load: the zero fill of `out` landed after the kernel)
                ready = cp.cuda.get_current_stream().record()
                with s:
                    s.wait_event(ready)
                    w[grid](x, out, alpha, n, flag, 2**40, BLOCK=256)
                s.synchronize()
            else:
                w[grid](x, out, alpha, n, flag, 2**40, BLOCK=256)
            want = _host(x).astype(np.float32) * np.float32(alpha) + (1 if flag else 0)
            # (the kernel may fuse x * alpha + 1 into one FMA: last-bit differences near 0)
            np.testing.assert_allclose(_host(out).astype(np.float32), want,
                                       rtol=2e-3 if dt is tensorplay.float16 else 1e-6,
                                       atol=2e-3 if dt is tensorplay.float16 else 1e-6,
                                       err_msg=f"{dt} offset {off} flag {flag} n {n} rep {rep}")
    kinds = {type(e).__name__ for e in w._direct.values()}
    if _wrap._CUPY_LAUNCH[0] and w._direct is not None:
        assert kinds == {"Direct"}, w._direct
    out = tensorplay.zeros(64, device="cuda")
    x = tensorplay.ones(64, device="cuda")
    for _ in range(2):
        w[(0, 2)](x, out, 5.0, 32, False, 0, BLOCK=32)      # empty grid: nothing runs
    assert float(_host(out).sum()) == 0.0


@triton.jit
def block_fill_kernel(out_ptr, n, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32) + BLOCK * SCALE, mask=offs < n)


@compiled_only
def test_compiled_positional_constexprs_are_part_of_the_specialisation():
    """A constexpr given by position with a new value compiles and launches its own kernel (two
    ints of the same int feature -- 16 and 32 -- or two floats must not share a launch), as
    Triton's launcher does; and every argument given by keyword, tensors included (the way
    Liger-Kernel calls its kernels), launches the same kernels with the same results."""
    _need_cuda()
    n = 256
    for rep in range(3):                 # the second and later launches take the CuPy path
        for block in (16, 32, 64):
            for scale in (1.0, 0.5):
                out = tensorplay.zeros(n, device="cuda")
                wrap_triton(block_fill_kernel)[(triton.cdiv(n, block),)](out, n, block, scale)
                np.testing.assert_array_equal(_host(out), np.full(n, block * scale, np.float32),
                                              err_msg=f"positional BLOCK={block} SCALE={scale} rep {rep}")
                out = tensorplay.zeros(n, device="cuda")
                wrap_triton(block_fill_kernel)[(triton.cdiv(n, block),)](
                    out_ptr=out, n=n, BLOCK=block, SCALE=scale)
                np.testing.assert_array_equal(_host(out), np.full(n, block * scale, np.float32),
                                              err_msg=f"keywords BLOCK={block} SCALE={scale} rep {rep}")
    x = tensorplay.randn(1000, device="cuda")
    y = tensorplay.randn(1000, device="cuda")
    for rep in range(3):
        out = tensorplay.empty(1000, device="cuda")
        wrap_triton(add_kernel)[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](
            x_ptr=x, y_ptr=y, out_ptr=out, n=1000, BLOCK=128)
        np.testing.assert_allclose(_host(out), _host(x) + _host(y), rtol=1e-6)
        out = tensorplay.empty(1000, device="cuda")
        wrap_triton(add_kernel)[(8,)](x, y, n=1000, out_ptr=out, BLOCK=128)
        np.testing.assert_allclose(_host(out), _host(x) + _host(y), rtol=1e-6)


@compiled_only
def test_compiled_errors_name_argument_device_and_fix():
    _need_cuda()
    x = tensorplay.randn(4, 8, device="cuda")
    out = tensorplay.empty(32, device="cuda")
    with pytest.raises(TritonLaunchError, match=r"'x_ptr' is a non-contiguous cuda:0 tensor"):
        wrap_triton(axpy_kernel)[(1,)](x.t(), out, 1.0, 32, BLOCK=32, SQUARE=False)
    with pytest.raises(TritonLaunchError, match=r"'out_ptr' is on cpu.*Move it"):
        wrap_triton(axpy_kernel)[(1,)](x, tensorplay.empty(32), 1.0, 32, BLOCK=32, SQUARE=False)
    # all-cpu arguments: the same compiled kernel runs through the interpreter (mode per launch)
    xc, oc = tensorplay.randn(32), tensorplay.empty(32)
    wrap_triton(axpy_kernel)[(1,)](xc, oc, 2.0, 32, BLOCK=32, SQUARE=False)
    np.testing.assert_allclose(oc.numpy(), 2.0 * xc.numpy(), rtol=1e-6)
    t = x.t()
    out2 = tensorplay.empty(8, 4, device="cuda")
    wrap_triton(strided_copy_kernel, strided=["x_ptr"])[(8,)](t, out2, t.stride(0), t.stride(1),
                                                              4, BLOCK=4)
    np.testing.assert_array_equal(_host(out2), _host(x).T)


@compiled_only
def test_compiled_autotune_hooks_reset_to_zero_and_do_bench():
    _need_cuda()
    x = tensorplay.randn(5000, device="cuda")
    out = tensorplay.zeros(5000, device="cuda")
    wrap_triton(accumulate_kernel)[lambda m: (triton.cdiv(5000, m["BLOCK"]),)](x, out, 5000)
    np.testing.assert_allclose(_host(out), _host(x), rtol=1e-5)
    assert len(accumulate_kernel.configs_timings) == 2
    assert all(t[0] > 0 for t in accumulate_kernel.configs_timings.values())
    # the tuned config again (the inner kernel's CuPy launch once its specialisation is known)
    for _ in range(3):
        wrap_triton(accumulate_kernel)[lambda m: (triton.cdiv(5000, m["BLOCK"]),)](x, out, 5000)
    np.testing.assert_allclose(_host(out), 4 * _host(x), rtol=1e-5, atol=1e-6)
    from tensorplay_triton import _wrap
    inner = wrap_triton(accumulate_kernel.fn)
    if _wrap._CUPY_LAUNCH[0] and inner._direct is not None:
        assert [type(e).__name__ for e in inner._direct.values()] == ["Direct"], inner._direct
    _HOOK_CALLS.clear()
    o2 = tensorplay.empty(5000, device="cuda")
    wrap_triton(hooked_copy_kernel)[lambda m: (triton.cdiv(5000, m["BLOCK"]),)](x, o2, 5000)
    np.testing.assert_array_equal(_host(o2), _host(x))
    assert {n for k, n in _HOOK_CALLS if k == "pre"} == {"Tensor"}   # hooks see the tensors
    ms = triton.testing.do_bench(
        lambda: wrap_triton(add_kernel)[(20,)](x, x, o2, 5000, BLOCK=256), warmup=5, rep=20)
    assert 0 < ms < 100


@compiled_only
def test_compiled_heuristics_and_triton_op_on_cuda():
    _need_cuda()
    x = tensorplay.randn(37, device="cuda")
    out = tensorplay.empty(37, device="cuda")
    wrap_triton(heuristic_neg_kernel)[(1,)](x, out, 37)
    np.testing.assert_array_equal(_host(out), -_host(x))
    y = tensorplay.randn(37, device="cuda")
    np.testing.assert_allclose(_host(tt_add(x, y)), _host(x) + _host(y), rtol=1e-6)
    # no autograd formula and a Triton launch: the graph is broken, and opcheck says so (on a
    # sample whose inputs require grad: torch's rule skips the autograd checks otherwise); the
    # compile check's eager backward meets the same break, as torch's aot_dispatch check does
    res = library.opcheck(tt_add, (x.requires_grad_(), y), raise_exception=False)
    assert set(res) == {"test_autograd_registration", "test_aot_dispatch_dynamic"}, res
    assert all("no backward formula" in m for m in res.values()), res


@compiled_only
def test_compiled_second_gpu_when_present():
    _need_cuda()
    cp = _cupy()
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("only one GPU: the cross-device launch needs cuda:1")
    x = tensorplay.randn(100, device="cuda:1")
    out = tensorplay.empty(100, device="cuda:1")
    with cp.cuda.Device(0):
        wrap_triton(axpy_kernel)[(1,)](x, out, 2.0, 100, BLOCK=128, SQUARE=False)
    np.testing.assert_allclose(_host(out), 2 * _host(x), rtol=1e-6)


@compiled_only
def test_compiled_example_ops_values_and_grads_on_cuda():
    _need_cuda()
    mod = _example_ops()
    E = tensorplay.ops.example
    x = tensorplay.randn(256, 1000, device="cuda")
    y = tensorplay.randn(256, 1000, device="cuda")
    ref = np.maximum((_host(x) + _host(y)) * 0.5, 0)
    np.testing.assert_allclose(_host(E.fused_add_mul_relu(x, y, 0.5)), ref, rtol=1e-6)
    s = _host(E.softmax_rows(x))
    e = np.exp(_host(x) - _host(x).max(-1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert not mod.kernels_interpreted("cuda") and mod.kernels_interpreted("cpu")
    xr = x.detach().requires_grad_()
    (E.softmax_rows(xr) * tensorplay.arange(1000, device="cuda")).sum().backward()
    assert xr.grad is not None and xr.grad.shape == x.shape


@compiled_only
@pytest.mark.parametrize("opname", ["fused_add_mul_relu", "fused_add_mul_relu_out", "softmax_rows"])
def test_compiled_example_ops_opcheck_on_cuda(opname):
    _need_cuda()
    _example_ops()
    op = getattr(tensorplay.ops.example, opname)
    samples = tensorplay.plugins.sample_inputs(op, tensorplay.device("cuda"))
    assert samples
    # the mode follows the tensors' device: the same op also has cpu samples (interpreted there)
    assert tensorplay.plugins.sample_inputs(op, tensorplay.device("cpu"))
    for s in samples:
        assert library.opcheck(op, s.args, s.kwargs) == {}, s.name


# ================================================================================================
# Issue: real public kernels on cpu (no TRITON_INTERPRET), on every supported Triton

@triton.jit
def _row_sum_loop_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """A loop bounded by a scalar argument (range and tl.range), a helper (tl.sum), eps.to()."""
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.).to(tl.float32)
    for off in tl.range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += 0.0 * tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) + eps.to(tl.float32))


@interpret_only
def test_scalar_loop_bound_on_every_numpy():
    """Triton issue 9171: under NumPy >= 2.4 the interpreter's ``int()`` of a 1-element array
    failed for ``range(0, n_cols, BLOCK)``. Fixed in the plugin's interpreter path."""
    _cpu()
    x = tensorplay.randn(3, 50)
    out = tensorplay.empty(3)
    wrap_triton(_row_sum_loop_kernel)[(3,)](x, out, 50, 0.25, BLOCK=16)
    np.testing.assert_allclose(_host(out), _host(x).sum(-1) + 0.25, rtol=1e-5, atol=1e-5)


def _lang_modules():
    import triton.language.core as tlc
    import triton.language.standard as tls
    return (tl, tlc, tls, tl.math)


def _lang_snapshot():
    return {m.__name__: dict(vars(m)) for m in _lang_modules()}, dict(vars(tl.tensor))


def _lang_patches(snapshot):
    """What an interpreted launch left in ``triton.language`` since ``snapshot``: attributes
    replaced or added, except a submodule imported meanwhile (``import triton.runtime.interpreter``
    binds ``triton.language.semantic`` on first use: an import, not a patch), plus any attribute
    that is one of the interpreter's patch functions whatever the snapshot says."""
    mods, tensor_before = snapshot
    out = []
    for m in _lang_modules():
        before = mods[m.__name__]
        for k, v in vars(m).items():
            if before.get(k, _MISSING) is v:
                continue
            if k not in before and type(v) is type(sys) and sys.modules.get(f"{m.__name__}.{k}") is v:
                continue
            out.append(f"{m.__name__}.{k}")
    # (a class's empty __annotations__ is made by Python on first read, e.g. inspect.getmembers)
    out += [f"tensor.{k}" for k, v in vars(tl.tensor).items() if tensor_before.get(k, _MISSING) is not v
            and not (k == "__annotations__" and k not in tensor_before and v == {})]
    for m in _lang_modules() + (tl.tensor,):
        for k, v in vars(m).items():
            if getattr(v, "__module__", None) in ("triton.runtime.interpreter", "tensorplay_triton._interp"):
                out.append(f"{getattr(m, '__name__', m)}.{k} (an interpreter patch)")
    return out


_MISSING = object()


def _assert_helpers_are_jit_functions():
    """Triton's own helpers must be ``JITFunction``s (compiled kernels call them; outside a kernel
    they raise Triton's error): they are not when ``triton`` was first imported while
    ``TRITON_INTERPRET=1`` was set, e.g. by a test module setting it at import."""
    from triton.runtime.jit import JITFunction
    tls = _lang_modules()[2]
    for name in ("sum", "max", "min", "softmax"):
        assert isinstance(getattr(tls, name), JITFunction), (
            f"triton.language.standard.{name} is a {type(getattr(tls, name)).__name__}: triton was "
            f"first imported under TRITON_INTERPRET=1 in this process")
    with pytest.raises(RuntimeError, match="outside of the scope of a kernel"):
        tls.sum(1)                  # a @triton.jit helper called outside a kernel: Triton's error


@interpret_only
def test_interpreted_launch_leaves_triton_language_untouched():
    """Interpreted launches patch triton.language while they run; compiled kernels later in the
    same process need the originals back (helpers called inside kernels included)."""
    _cpu()
    snap = _lang_snapshot()
    test_scalar_loop_bound_on_every_numpy()
    assert _lang_patches(snap) == []
    _assert_helpers_are_jit_functions()
    assert _lang_patches(snap) == []


def test_lang_patch_check_sees_a_leaked_patch_but_not_a_submodule_import(monkeypatch):
    """The check above can fail: a leaked patch (a replaced helper, an interpreter function left
    on ``tl.tensor``) is reported; a newly bound submodule is not."""
    import types
    snap = _lang_snapshot()
    monkeypatch.setattr(tl, "zeros", lambda *a, **k: None)
    monkeypatch.setattr(tl.tensor, "__index__", lambda self: 0, raising=False)
    fake_sub = types.ModuleType("triton.language._tp_probe")
    monkeypatch.setitem(sys.modules, "triton.language._tp_probe", fake_sub)
    monkeypatch.setattr(tl, "_tp_probe", fake_sub, raising=False)
    assert _lang_patches(snap) == ["triton.language.zeros", "tensor.__index__"]


def _run_script(tmp_path, code, env):
    script = tmp_path / "script.py"          # a file: Triton reads kernels' source
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_mode_follows_the_device_whatever_the_import_order(tmp_path):
    """``import triton`` first, no TRITON_INTERPRET: a cpu launch runs through the interpreter,
    helpers included, and the example pack's ops work on cpu (nothing sets the variable)."""
    code = ("import os, triton, triton.language as tl\n"
            "import numpy as np, tensorplay\n"
            "from tensorplay.library import wrap_triton\n"
            "@triton.jit\n"
            "def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
            "    offs = tl.arange(0, BLOCK)\n"
            "    x = tl.load(x_ptr + offs, mask=offs < n, other=-float('inf'))\n"
            "    tl.store(out_ptr, tl.max(x, axis=0) + tl.sum(tl.where(offs < n, x, 0.), axis=0))\n"
            "x = tensorplay.randn(10); o = tensorplay.empty(1)\n"
            "wrap_triton(k)[(1,)](x, o, 10, BLOCK=16)\n"
            "h = x.numpy(); assert np.allclose(o.numpy()[0], h.max() + h.sum(), atol=1e-5)\n"
            "s = tensorplay.ops.example.softmax_rows(tensorplay.randn(4, 7))\n"
            "assert np.allclose(s.numpy().sum(-1), 1, atol=1e-5)\n"
            "assert 'TRITON_INTERPRET' not in os.environ\n"
            "print('OK', type(k).__name__)\n")
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    p = _run_script(tmp_path, code, env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK JITFunction" in p.stdout


@interpret_only
def test_raw_launch_on_tensorplay_tensors_names_wrap_triton():
    _cpu()
    from triton.runtime.interpreter import InterpretedFunction
    raw = InterpretedFunction(add_kernel.fn)           # @triton.jit under TRITON_INTERPRET=1
    x = tensorplay.randn(8)
    with pytest.raises(TypeError, match=r"wrap_triton\(kernel\)\[grid\]"):
        raw[(1,)](x, x, tensorplay.empty(8), 8, BLOCK=8)


@interpret_only
def test_custom_launcher_gets_the_users_tensors_in_a_triton_op():
    _cpu()
    seen = []

    class PyLauncher:
        """A launcher written in Python: computes with the tensors it is given."""

        def __getitem__(self, grid):
            def go(x, y, out, n):
                seen.append((type(x), type(out)))
                out.copy_(x * 2 + y)
            return go

    launcher = PyLauncher()

    @library.triton_op("tritontest::py_launcher", mutates_args=())
    def py_op(x: tensorplay.Tensor, y: tensorplay.Tensor) -> tensorplay.Tensor:
        out = tensorplay.empty_like(x)
        wrap_triton(launcher)[(1,)](x, y, out, x.numel())
        return out

    x, y = tensorplay.randn(5), tensorplay.randn(5)
    np.testing.assert_allclose(_host(py_op(x, y)), 2 * _host(x) + _host(y), rtol=1e-6)
    assert seen and all(a is tensorplay.Tensor and b is tensorplay.Tensor for a, b in seen)
    xt = tensorplay.randn(4, 3).t()                   # launchers see views as they are
    out = tensorplay.empty(3, 4)
    wrap_triton(launcher)[(1,)](xt, xt, out, 12)
    np.testing.assert_allclose(_host(out), 3 * _host(xt), rtol=1e-6)


_FAKE_TORCH = """
import os, sys
with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
    f.write("imported\\n")
raise ImportError("fake torch (records its import)")
"""


def _fake_torch_env(tmp_path):
    pkg = tmp_path / "fake" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(_FAKE_TORCH)
    log = tmp_path / "torch.log"
    env = dict(os.environ, FAKE_TORCH_LOG=str(log),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "fake")] +
                                          [q for q in [os.environ.get("PYTHONPATH")] if q]))
    env.pop("TRITON_INTERPRET", None)
    return env, log


def test_launch_does_not_import_torch_even_when_installed(tmp_path):
    env, log = _fake_torch_env(tmp_path)
    # control: Triton's own argument specialisation does import an installed torch
    ctrl = ("import triton.runtime.jit as j\n"
            "class P:\n    dtype = 'float32'\n    def data_ptr(self): return 0\n"
            "j.mangle_type(P())\n")
    p = subprocess.run([sys.executable, "-c", ctrl], capture_output=True, text=True, env=env,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    triton_imports_torch = log.exists() and "imported" in log.read_text()
    if log.exists():
        log.unlink()
    code = ("import sys, tensorplay, triton, triton.language as tl\n"
            "from tensorplay.library import wrap_triton\n"
            "@triton.jit\n"
            "def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
            "    offs = tl.arange(0, BLOCK)\n"
            "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n"
            "x = tensorplay.randn(8); o = tensorplay.empty(8)\n"
            "wrap_triton(k)[(1,)](x, o, 8, BLOCK=8)\n"
            "wrap_triton(k)[(1,)](x, o, 8, BLOCK=8)\n"
            "assert 'torch' not in sys.modules\n"
            "print('OK')\n")
    p = _run_script(tmp_path, code, env)
    assert p.returncode == 0 and "OK" in p.stdout, p.stdout + p.stderr
    assert not log.exists(), f"torch was imported by a launch (control: Triton imports it: " \
                             f"{triton_imports_torch})"


from triton.language.extra import libdevice


@triton.jit
def _libdevice_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    s = scale.to(tl.float32)
    y = libdevice.rsqrt(x) + libdevice.tanh(x) + libdevice.exp2(x * s) + libdevice.pow(x, 2.0)
    y = y + libdevice.fma(x, s, 1.0) + libdevice.erf(x) + libdevice.atan2(x, s)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def _libdevice_missing_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, libdevice.j0(tl.load(x_ptr + offs)))


@interpret_only
def test_float_scalars_and_libdevice_in_interpreted_kernels():
    """Triton issue 8825: libdevice functions returned None under the interpreter; float scalar
    arguments were Python floats without ``.to``."""
    _cpu()
    import math
    h = np.random.default_rng(0).random(20).astype(np.float32) + 0.5
    x = tensorplay.tensor(h)
    out = tensorplay.empty(20)
    wrap_triton(_libdevice_kernel)[(1,)](x, out, 20, 0.75, BLOCK=32)
    erf = np.vectorize(math.erf)(h)
    ref = 1 / np.sqrt(h) + np.tanh(h) + np.exp2(h * 0.75) + h ** 2 + (h * 0.75 + 1) + erf + \
        np.arctan2(h, np.float32(0.75))
    np.testing.assert_allclose(_host(out), ref, rtol=1e-5)
    with pytest.raises(Exception, match="libdevice.j0"):
        wrap_triton(_libdevice_missing_kernel)[(1,)](tensorplay.ones(4), BLOCK=4)


def test_strided_wrappers_are_cached():
    a = wrap_triton(strided_copy_kernel, strided=["x_ptr"])
    assert wrap_triton(strided_copy_kernel, strided=["x_ptr"]) is a
    assert wrap_triton(strided_copy_kernel, strided=("x_ptr",)) is a
    assert library.wrap_triton(strided_copy_kernel, strided=["x_ptr"]) is a
    assert wrap_triton(strided_copy_kernel) is not a
    assert wrap_triton(a) is a and wrap_triton(a, strided=["x_ptr"]) is a


# -- the direct launch path (compiled cuda kernels), with Triton's driver and launcher mocked -----
# CI has no GPU: Triton's own binder and kernel cache run for real (sm_90 target), the compiled
# kernel is a stand-in that records what the launcher would receive.

def test_direct_launch_hands_int_pointers_to_the_launcher(monkeypatch):
    import types

    from tensorplay import Tensor
    from tensorplay_triton import _wrap
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver as tdriver

    @triton.jit
    def k(x_ptr, y_ptr, out_ptr, scale, n, BLOCK_SIZE: tl.constexpr):
        pass

    launched = []

    class Launcher:                       # Triton 3.6's CudaLauncher attributes
        global_scratch_size = profile_scratch_size = 0
        launch_cooperative_grid = launch_pdl = False

        def launch(self, *a):
            launched.append(("direct", a))

        def __call__(self, *a):
            launched.append(("call", a))

    class Drv:
        launcher_cls = Launcher

        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)

        def get_current_device(self):
            return 0

        def get_current_stream(self, device=None):
            return 77

    class Compiled:
        function, packed_metadata = 5, (4, 1, 0)
        run = Launcher()

    saved = tdriver._active
    tdriver.set_active(Drv())
    try:
        xs = [tensorplay.randn(64) for _ in range(3)]
        for i, t in enumerate(xs):        # stand-ins for cuda tensors: CuPy's .data.ptr
            t._data = types.SimpleNamespace(data=types.SimpleNamespace(ptr=4096 * (i + 1)))
        monkeypatch.setattr(Tensor, "data_ptr", lambda s: s._data.data.ptr)
        w = _wrap.wrap_triton(k)
        knobs = _wrap._knobs()
        opts = {"BLOCK_SIZE": 1024, "debug": False,
                "instrumentation_mode": knobs.compilation.instrumentation_mode}
        if _wrap._FPSAN[0]:
            opts["fpsan_homomorphic_casts"] = knobs.compilation.fpsan_homomorphic_casts
        kc, kk, _t, _b, binder = k.device_caches[0]
        _, spec, options = binder(*xs, 1.5, 64, **opts)
        kc[_wrap._cache_key()(kk, spec, options)] = Compiled()
        for direct in (False, True):
            monkeypatch.setattr(_wrap, "_LAUNCH_DIRECT", [direct])
            launched.clear()
            assert isinstance(w._fast_launch((3,), (*xs, 1.5, 64), {"BLOCK_SIZE": 1024}, 0, Drv()),
                              Compiled)
            how, a = launched[0]
            assert how == ("direct" if direct else "call")
            if direct:     # what CudaLauncher.__call__ (3.6) passes to the compiled launch function
                assert a[:12] == (3, 1, 1, 77, 5, False, False, None, None, (4, 1, 0), None, None)
                a = a[13:]
            else:
                assert a[:9] == (3, 1, 1, 77, 5, (4, 1, 0), None, None, None)
                a = a[9:]
            assert a[:5] == (4096, 8192, 12288, 1.5, 64)     # pointers as ints
            assert all(type(v) is int for v in a[:3])
    finally:
        tdriver._active = saved
