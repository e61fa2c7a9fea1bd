"""The cuda device plugin (``tensorplay-cuda``, CuPy).

Tests without the ``cuda`` marker run everywhere (they check the plugin on a machine without a
usable GPU, forcing that state with ``CUDA_VISIBLE_DEVICES=""`` in a subprocess where a GPU
exists). Tests marked ``cuda`` need a GPU and are skipped, with CuPy's reason, when the plugin
reports the device unavailable; tests marked ``cuda`` that need two GPUs skip on one.
Element-wise agreement of every built-in op with cpu is in ``tests/test_conformance.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorplay as tp
from tensorplay import library
from tensorplay.errors import DeviceUnavailableError, DispatchError
from tensorplay.testing import assert_close

try:
    import tensorplay_cuda
except ImportError as e:     # the plugin is a separate distribution
    pytest.skip(f"tensorplay-cuda is not installed ({e}); pip install -e plugins/tensorplay_cuda",
                allow_module_level=True)

if any(r["dist"] == "tensorplay-cuda" and r["status"] == "blocked" for r in tp.plugins.list()):
    pytest.skip("tensorplay-cuda is blocked by TENSORPLAY_PLUGINS/TENSORPLAY_DISABLE_PLUGINS",
                allow_module_level=True)

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
N_GPUS = tensorplay_cuda.device_count() if CUDA_OK else 0

needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
needs_2 = pytest.mark.skipif(N_GPUS < 2, reason=f"needs 2 CUDA GPUs, this machine has {N_GPUS}")

PY = sys.executable


def _run(code: str, env=None, **env_overrides):
    """Run ``code`` in a fresh interpreter (``env`` or a copy of ours, updated); its stdout."""
    env = dict(os.environ if env is None else env)
    env.update(env_overrides)
    r = subprocess.run([PY, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, f"subprocess failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _cupy():
    """CuPy itself (tests that build kernels or arrays need it, not a GPU); without CuPy installed
    (tensorplay-cuda without its cuda12/cuda13 extra) they skip, saying so."""
    return pytest.importorskip("cupy", reason="CuPy is not installed (tensorplay-cuda[cuda13] "
                               "or [cuda12] installs it)")


# ================================================================================================
# Everywhere (no GPU needed)
# ================================================================================================

def test_plugin_is_installed_and_loaded():
    rec = [r for r in tp.plugins.list() if r["dist"] == "tensorplay-cuda"]
    assert rec, "tensorplay-cuda is not installed (pip install -e plugins/tensorplay_cuda)"
    assert rec[0]["status"] == "loaded" and rec[0]["devices"] == ["cuda"], rec[0]
    from importlib.metadata import entry_points
    eps = [e for e in entry_points(group="tensorplay.plugins") if e.name == "cuda"]
    assert eps and eps[0].value == "tensorplay_cuda"


def test_importing_tensorplay_and_the_plugin_imports_no_cupy():
    out = _run("""
        import sys
        import tensorplay, tensorplay_cuda
        import tensorplay_example_ops.cuda_ops
        print(sorted(m for m in ('cupy', 'cupyx', 'numpy', 'triton') if m in sys.modules))
        print([r['status'] for r in tensorplay.plugins.list() if r['dist'] == 'tensorplay-cuda'])
    """)
    lines = out.strip().splitlines()
    assert lines[0] == "[]", f"imported at `import tensorplay`: {lines[0]}"
    assert lines[1] == "['loaded']"


def test_without_a_usable_gpu_cuda_reports_unavailable_with_cupys_reason():
    # CUDA_VISIBLE_DEVICES="" hides every GPU, so this runs the no-GPU path on any machine
    out = _run("""
        import json, subprocess, sys
        import tensorplay as tp
        from tensorplay.errors import DeviceUnavailableError
        import tensorplay_cuda
        res = {}
        res['status'] = tp.plugins.device_status('cuda')
        res['plugin'] = tensorplay_cuda.is_available()
        res['count'] = tensorplay_cuda.device_count()
        try:
            tp.zeros(1, device='cuda')
            res['zeros'] = 'no error'
        except DeviceUnavailableError as e:
            res['zeros'] = 'DeviceUnavailableError: ' + str(e)
        try:
            tp.ones(2, 2).to('cuda')
            res['to'] = 'no error'
        except DeviceUnavailableError as e:
            res['to'] = 'DeviceUnavailableError: ' + str(e)
        with tp.fake.FakeTensorMode():
            f = tp.zeros(2, 3, device='cuda')
            res['fake'] = [str(f.device), list(f.shape), (f + 1).device.type]
        res['cpu'] = (tp.ones(3) * 2).tolist()
        cli = subprocess.run([sys.executable, '-m', 'tensorplay.cli', 'plugins'],
                             capture_output=True, text=True)
        res['cli'] = cli.stdout + cli.stderr
        res['cli_rc'] = cli.returncode
        print(json.dumps(res))
    """, CUDA_VISIBLE_DEVICES="")
    res = json.loads(out.strip().splitlines()[-1])
    # without CuPy, or without a driver, the plugin says so before importing CuPy; with both,
    # CuPy's runtime says why (every GPU hidden)
    if importlib.util.find_spec("cupy") is None:
        reason, fix = "no CuPy is installed", "cupy-cuda13x"
    elif not _driver_loads():
        reason, fix = "no NVIDIA driver is installed", "NVIDIA GPU and its driver"
    else:
        reason, fix = "CuPy", "cupy-cuda13x"
    ok, why = res["status"]
    assert ok is False and reason in why and "cuda" in why, why
    assert res["plugin"][0] is False and reason in res["plugin"][1]
    assert res["count"] == 0
    for key in ("zeros", "to"):
        msg = res[key]
        assert msg.startswith("DeviceUnavailableError: device 'cuda' is not available"), msg
        assert fix in msg and "device='cpu'" in msg, msg   # says how to fix it
    assert res["fake"] == ["cuda:0", [2, 3], "cuda"]
    assert res["cpu"] == [2.0, 2.0, 2.0]
    assert res["cli_rc"] == 0, res["cli"]
    assert "tensorplay-cuda" in res["cli"] and "cuda (unavailable)" in res["cli"], res["cli"]
    assert reason in res["cli"], res["cli"]


def _driver_loads() -> bool:
    """Whether the NVIDIA driver's library loads here (a GPU machine, even with every GPU
    hidden by CUDA_VISIBLE_DEVICES)."""
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1" if sys.platform != "win32" else "nvcuda.dll")
        return True
    except OSError:
        return False


def test_is_available_never_raises_and_agrees_with_device_status():
    import tensorplay_cuda
    ok, why = tensorplay_cuda.is_available()
    assert isinstance(ok, bool) and isinstance(why, str)
    assert ok == CUDA_OK
    assert (why == "") == ok
    assert (tensorplay_cuda.device_count() >= 1) == ok


def test_builtin_kernels_are_the_reference_kernels_bound_to_cupy():
    """Not a second copy: every cuda kernel is the same code object as the cpu one, closed over
    CuPy's array-API namespace instead of NumPy's (binding needs no GPU)."""
    pytest.importorskip("cupy", reason="CuPy is not installed (tensorplay-cuda[cuda12|cuda13])")
    import array_api_compat.cupy as xp_cupy
    from tensorplay_cpu.backend import CPUBackend
    from tensorplay_cuda.backend import CUDABackend
    cu, cpu = CUDABackend(), CPUBackend()
    # array-api-compat's CuPy namespace; floating floor_divide/remainder computed as on cpu
    # (tensorplay_cuda.floordiv: CuPy's are floor(x / y))
    assert cu.np.__name__ == "cupy" and all(
        getattr(cu.xp, n) is v for n, v in vars(xp_cupy).items()
        if not n.startswith("__") and n not in ("floor_divide", "remainder"))
    kc, kn = cu.kernels(), cpu.kernels()
    assert set(kc) == set(kn) and len(kc) > 40
    from tensorplay_cuda import eager, reduce
    for name, k in kc.items():
        if name in eager.BINARY | eager.UNARY and eager.triton_available():
            # the large-array Triton path sits in front of the reference kernel (eager.py)
            assert k.__module__ == "tensorplay_cuda.eager", name
            k = k.__wrapped__
        if name in reduce.OPS and reduce.enabled() and eager.triton_available():
            # the dim reductions' generated kernels sit in front of it too (reduce.py)
            assert k.__module__ == "tensorplay_cuda.reduce", name
            k = k.__wrapped__
        if name == "to_dtype" and eager.triton_available():
            # the small casts' one launch sits in front of it (eager.py)
            assert k.__module__ == "tensorplay_cuda.eager", name
            k = k.__wrapped__
        if name == "clone":
            # a row-major copy as one memcpy sits in front of it (clone.py)
            assert k.__module__ == "tensorplay_cuda.clone", name
            k = k.__wrapped__
        code = getattr(k, "__code__", None)
        if name in ("empty", "full") and code is not None and \
                Path(code.co_filename).parts[-2:] == ("tensorplay_cuda", "backend.py"):
            # with one GPU the allocation kernels are the backend's own (no device switch to
            # make: CUDABackend._allocation_kernels); several GPUs keep the reference ones
            assert cu.device_count() == 1, name
            continue
        if code is None:            # a bare namespace function (e.g. xp.negative): CuPy's own
            assert type(k).__module__.startswith("cupy"), (name, type(k))
            continue
        # the cpu kernels are wrapped once to silence NumPy's floating point warnings
        ref = getattr(kn[name], "__wrapped__", kn[name])
        if name in ("relu", "_threshold_backward"):
            # cpu's relu and its backward are tensorplay-cpu's own (maximum against a block of
            # zeros; an integer product selecting the gradient's bits; the reference kernel for
            # other dtypes); cuda keeps the reference kernels themselves
            assert Path(ref.__code__.co_filename).parts[-2:] == ("tensorplay_cpu", "backend.py")
        else:
            assert code is ref.__code__, name
        # (the core's reference kernels: tensorplay/_kernels/, one module per op family)
        assert Path(code.co_filename).parent.parts[-2:] == ("tensorplay", "_kernels"), (
            name, code.co_filename)


def test_as_cupy_refuses_non_cuda_tensors_naming_the_fix():
    import tensorplay_cuda
    with pytest.raises(TypeError, match=r"tensor is on cpu, not a cuda device; move it"):
        tensorplay_cuda.as_cupy(tp.ones(2))
    with pytest.raises(TypeError, match="expected a tensorplay.Tensor"):
        tensorplay_cuda.as_cupy(np.ones(2))
    with pytest.raises(TypeError, match="fake/meta tensors have no data"):
        tensorplay_cuda.as_cupy(tp.fake.make_fake([2], tp.float32, tp.device("cuda", 0)))
    with pytest.raises(TypeError, match="cpu is not a cuda device"):
        tensorplay_cuda.device_of(tp.ones(1))


def test_example_pack_registers_cupy_kernels_for_cuda():
    import tensorplay_example_ops as ex
    from tensorplay_example_ops import cuda_ops
    assert "cuda_ops" not in ex.OPTIONAL_ERRORS, ex.OPTIONAL_ERRORS
    assert library.get_kernel("example::bias_gelu", "cuda") is cuda_ops._bias_gelu_cuda
    assert library.get_kernel("example::rms_norm", "cuda") is cuda_ops._rms_norm_cuda
    # the cpu path is the device-agnostic kernel (tensorplay ops)
    assert library.get_kernel("example::bias_gelu", "default") is not None
    with pytest.raises(LookupError):
        library.get_kernel("example::bias_gelu", "cpu")


def test_multi_device_backends_get_index_checks_in_the_generated_adapters():
    """The adapter generator's rule for backends with indexed devices (what tensorplay-cuda
    relies on), checked on any machine with the shipped two-device test backend: both tensors
    must be on one index, a 0-dim cpu tensor joins (also as the first argument), kernels run under
    ``device_guard`` of the tensors' device."""
    from tensorplay.testing.backend import MockBackend
    with MockBackend("fakegpu", device_count=2) as be:
        d0, d1 = tp.device("fakegpu", 0), tp.device("fakegpu", 1)
        a = tp.ones(3).to(d0)
        b = tp.ones(3).to(d1)
        assert (b + b).device == (b * tp.tensor(2.0)).device == d1
        assert (tp.tensor(2.0) * b).device == tp.cat([b, b]).device == d1
        assert (tp.tensor(2.0) * b).cpu().tolist() == [2.0, 2.0, 2.0]
        with pytest.raises(DispatchError, match="tp::add: expected all tensors on one device") as ei:
            a + b
        assert "fakegpu:0" in str(ei.value) and "fakegpu:1" in str(ei.value)
        with pytest.raises(DispatchError, match="tp::cat: expected all tensors on one device"):
            tp.cat([b, a])
        with pytest.raises(DispatchError, match="expected all tensors on one device"):
            b + tp.ones(3)
        be.reset()
        b.exp()
        assert be.switches == [d1, d0]    # into the tensors' device for the kernel, and back


def _gelu_ref(u):
    return 0.5 * u * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (u + 0.044715 * u ** 3)))


def test_example_bias_gelu_on_cpu_values_gradients_and_opcheck():
    from tensorplay_example_ops.cuda_ops import bias_gelu
    x = tp.randn(4, 8, dtype=tp.float64)
    b = tp.randn(8, dtype=tp.float64)
    y = bias_gelu(x, b)
    assert_close(y, tp.tensor(_gelu_ref(x.numpy() + b.numpy())))
    xg, bg = x.clone().requires_grad_(), b.clone().requires_grad_()
    assert tp.autograd.gradcheck(bias_gelu, (xg, bg), eps=1e-6, atol=1e-6, rtol=1e-4)
    assert library.opcheck(bias_gelu, (tp.randn(4, 8), tp.randn(8)),
                           test_utils=("test_schema", "test_autograd_registration",
                                       "test_faketensor")) == {}
    with pytest.raises(ValueError, match="do not broadcast"):
        with tp.fake.FakeTensorMode():
            bias_gelu(tp.empty(4, 8), tp.empty(5))


# ================================================================================================
# On a GPU
# ================================================================================================

CUDA0 = tp.device("cuda", 0)


@pytest.mark.cuda
@needs_cuda
def test_factories_make_cupy_backed_tensors_on_cuda0():
    cupy = _cupy()
    cases = [tp.zeros(2, 3, device="cuda"), tp.ones(4, device="cuda:0", dtype=tp.int32),
             tp.full((2,), 7.5, device="cuda"), tp.arange(5, device="cuda"),
             tp.empty(3, device="cuda"), tp.rand(3, device="cuda"), tp.randn(2, 2, device="cuda"),
             tp.tensor([[1, 2], [3, 4]], device="cuda"), tp.zeros_like(tp.ones(2, device="cuda"))]
    for t in cases:
        assert t.device == CUDA0 and t.device == tp.device("cuda", 0) and t.is_cuda
        assert isinstance(t._data, cupy.ndarray) and t._data.device.id == 0
    assert cases[0].tolist() == [[0.0] * 3] * 2
    assert cases[1].dtype is tp.int32 and cases[1].tolist() == [1] * 4
    assert cases[3].tolist() == [0, 1, 2, 3, 4] and cases[3].dtype is tp.int64
    assert cases[7].sum().item() == 10
    assert "device='cuda:0'" in repr(cases[0])


@pytest.mark.cuda
@needs_cuda
def test_device_moves_and_spellings():
    x = tp.arange(6, dtype=tp.float32).reshape(2, 3)
    for y in (x.to("cuda"), x.cuda(), x.cuda(0), x.to(tp.device("cuda", 0)), x.to("cuda:0"),
              x.to(device="cuda"), x.to("cuda", tp.float64)):
        assert y.device == CUDA0
        assert y.cpu().tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="lower case.*'cuda:0'"):
        x.to("CUDA:0")            # as torch: device types are spelled in lower case
    g = x.to("cuda")
    assert g.to("cuda") is g and g.to("cuda:0") is g
    back = g.to("cpu")
    assert back.device == tp.device("cpu") and back.tolist() == x.tolist()
    assert back.data_ptr() != x.data_ptr()
    with pytest.raises(TypeError, match=r"can't convert cuda:0 tensor to numpy; use .cpu\(\)"):
        g.numpy()
    np.testing.assert_array_equal(np.asarray(g), x.numpy())
    assert g[1, 2].item() == 5.0 and isinstance(g[1, 2].item(), float)


@pytest.mark.cuda
@needs_cuda
def test_a_missing_gpu_index_is_a_clear_error():
    bad = f"cuda:{N_GPUS}"
    with pytest.raises(DeviceUnavailableError, match=rf"'{bad}' is not available: this machine "
                                                     rf"has {N_GPUS} CUDA device"):
        tp.zeros(1, device=bad)
    with pytest.raises(DeviceUnavailableError, match="CUDA_VISIBLE_DEVICES"):
        tp.ones(1).to(bad)


@pytest.mark.cuda
@needs_cuda
def test_views_alias_device_memory_and_bump_versions():
    x = tp.arange(12, dtype=tp.float32, device="cuda").reshape(3, 4)
    v = x[1:, ::2]
    assert v.storage_offset() == 4 and v.stride() == (4, 2)
    assert v.data_ptr() == x.data_ptr() + 4 * 4
    before = x._version
    v.fill_(-1.0)
    assert x._version > before
    assert x.cpu().tolist() == [[0, 1, 2, 3], [-1, 5, -1, 7], [-1, 9, -1, 11]]
    t = x.t()
    assert not t.is_contiguous() and t.data_ptr() == x.data_ptr()
    c = t.contiguous()
    assert c.is_contiguous() and c.cpu().tolist() == x.cpu().t().tolist()
    x[0] = 100.0
    assert t[0, 0].item() == 100.0   # writes through the base are seen by views


@pytest.mark.cuda
@needs_cuda
def test_dlpack_both_ways_is_zero_copy():
    cupy = _cupy()
    c = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    t = tp.from_dlpack(c)
    assert t.device == CUDA0 and t.data_ptr() == c.data.ptr
    c[0, 0] = 42
    assert t[0, 0].item() == 42.0
    back = cupy.from_dlpack(t)
    assert back.data.ptr == t.data_ptr()
    back[1, 2] = -5
    assert t[1, 2].item() == -5.0
    tv = t.t()                           # a strided view exports its strides
    cv = cupy.from_dlpack(tv)
    assert cv.shape == (3, 2) and cv.data.ptr == t.data_ptr()
    assert cupy.asnumpy(cv).tolist() == t.cpu().t().tolist()
    # a strided producer array is imported without a copy, keeping its strides
    ct = c.T
    st = tp.from_dlpack(ct)
    assert st.shape == (3, 2) and st.data_ptr() == c.data.ptr and not st.is_contiguous()
    assert st.cpu().tolist() == cupy.asnumpy(ct).tolist()
    c[1, 0] = 17
    assert st[0, 1].item() == 17.0
    # tensor() copies
    u = tp.tensor(c, device="cuda")
    c[0, 1] = 99
    assert u[0, 1].item() == 1.0
    # tensorplay_cuda helpers
    import tensorplay_cuda
    assert tensorplay_cuda.as_cupy(t) is t._data
    w = tensorplay_cuda.from_cupy(c)
    assert w.device == CUDA0 and w.data_ptr() == c.data.ptr


@pytest.mark.cuda
@needs_cuda
def test_mixed_devices_cpu_scalars_join_cuda_other_cpu_tensors_refused():
    g = tp.ones(3, device="cuda")
    s = tp.tensor(2.0)                   # a 0-dim cpu tensor may join any device (torch)
    for r in (g * s, s * g, g + s, tp.where(g > 0, g, s)):
        assert r.device == CUDA0
    assert (s * g).cpu().tolist() == [2.0] * 3
    with pytest.raises(DispatchError, match=r"expected all tensors on one device.*cpu.*cuda"):
        g + tp.ones(3)


def _spin_kernel():
    cupy = _cupy()
    return cupy.RawKernel(r"""
    extern "C" __global__ void spin_then_write(float* x, long long cycles, float v, int n) {
        long long start = clock64();
        while (clock64() - start < cycles) { }
        for (int i = 0; i < n; ++i) x[i] = v;
    }""", "spin_then_write")


SPIN_CYCLES = 1_000_000_000   # ~0.5 s at 2 GHz


def _warm_streams(cupy, streams, work):
    """Compile every kernel ``work`` uses and leave free blocks in each stream's memory pool, so
    that nothing timed afterwards compiles or calls cudaMalloc (either blocks the host until
    pending GPU work ends, which would hide a wrong stream)."""
    from tensorplay_cuda import eager
    for st in streams:
        with st:
            keep = [cupy.empty(64, dtype=cupy.float32) for _ in range(32)]
            # past the eager warm-up: a key's generated kernel compiles on its
            # ``WARMUP_CALLS``-th call, which must not happen inside the timed section
            for _ in range(eager.WARMUP_CALLS + 2):
                work()
            del keep
    cupy.cuda.Device().synchronize()


@pytest.mark.cuda
@needs_cuda
def test_ops_and_transfers_run_on_cupys_current_stream():
    cupy = _cupy()
    spin = _spin_kernel()
    x = tp.zeros(8, device="cuda")
    arr = x._data
    s = cupy.cuda.Stream(non_blocking=True)

    def work():
        return x + 1, (x * 2).sum(), x.cpu(), cupy.asnumpy(arr + 1)

    spin((1,), (1,), (arr, np.int64(1), np.float32(0.0), np.int32(8)))
    _warm_streams(cupy, (s, cupy.cuda.Stream.null), work)
    # control: plain CuPy on another stream does NOT wait for the spinning writer on `s`
    with s:
        spin((1,), (1,), (arr, np.int64(SPIN_CYCLES), np.float32(5.0), np.int32(8)))
    early = cupy.asnumpy(arr + 1)           # null stream: no ordering with s
    busy = not s.done
    s.synchronize()
    assert busy and early.tolist() == [1.0] * 8, "could not establish the race"
    x.zero_()
    cupy.cuda.Device(0).synchronize()
    # tensorplay work inside `with s:` is queued behind the spinning writer on s
    with s:
        spin((1,), (1,), (arr, np.int64(SPIN_CYCLES), np.float32(5.0), np.int32(8)))
        y = x + 1
        z = (x * 2).sum()
        pending = not s.done
        h = x.cpu()                          # device-to-host on s (waits for it)
    assert pending
    assert h.tolist() == [5.0] * 8
    s.synchronize()
    assert y.cpu().tolist() == [6.0] * 8
    assert z.item() == 80.0


@pytest.mark.cuda
@needs_cuda
def test_ops_leave_cupys_current_device_alone():
    cupy = _cupy()
    x = tp.ones(4, device="cuda:0")
    with cupy.cuda.Device(N_GPUS - 1):
        y = x * 3
        assert cupy.cuda.runtime.getDevice() == N_GPUS - 1
    assert y.device == CUDA0 and y._data.device.id == 0
    assert y.cpu().tolist() == [3.0] * 4


@pytest.mark.cuda
@needs_cuda
def test_autograd_on_cuda_matches_cpu():
    xs = np.random.default_rng(0).standard_normal((5, 4))
    ws = np.random.default_rng(1).standard_normal((4, 3))
    grads = {}
    for dev in ("cpu", "cuda"):
        x = tp.tensor(xs, device=dev, requires_grad=True)
        w = tp.tensor(ws, device=dev, requires_grad=True)
        loss = tp.softmax((x @ w).tanh(), -1)[:, 0].sum() + x[tp.tensor([0, 0, 3], device=dev)].sum()
        loss.backward()
        assert x.grad.device == x.device and w.grad.device == w.device
        grads[dev] = (x.grad.cpu(), w.grad.cpu())
    for a, b in zip(grads["cuda"], grads["cpu"]):
        assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.cuda
@needs_cuda
def test_fake_tensors_from_cuda_tensors():
    x = tp.randn(3, 4, device="cuda")
    f = tp.fake.from_real(x)
    assert f.is_fake and f.device == CUDA0
    with tp.fake.FakeTensorMode():
        y = (f @ f.t()).relu()
    assert y.device == CUDA0 and tuple(y.shape) == (3, 3) and y.is_fake


@pytest.mark.cuda
@needs_cuda
def test_manual_seed_makes_cuda_random_reproducible():
    tp.manual_seed(1234)
    a = tp.randn(1000, device="cuda")
    r = tp.rand(1000, device="cuda", dtype=tp.float64)
    tp.manual_seed(1234)
    b = tp.randn(1000, device="cuda")
    assert a.cpu().tolist() == b.cpu().tolist()
    v = r.cpu().numpy()
    assert ((v >= 0) & (v < 1)).all() and 0.4 < v.mean() < 0.6
    assert abs(a.mean().item()) < 0.15 and 0.85 < a.std().item() < 1.15
    h = tp.rand(64, device="cuda", dtype=tp.float16)
    assert h.dtype is tp.float16


@pytest.mark.cuda
@needs_cuda
def test_index_add_accumulates_repeated_indices_like_cpu():
    O = tp.ops.tp
    idx = [0, 2, 2, 2, 1, 0]
    src = np.arange(18, dtype=np.float32).reshape(6, 3)
    want = O.index_add(tp.zeros(3, 3), 0, tp.tensor(idx), tp.tensor(src))
    got = O.index_add(tp.zeros(3, 3, device="cuda"), 0, tp.tensor(idx, device="cuda"),
                      tp.tensor(src, device="cuda"))
    assert got.device == CUDA0
    assert got.cpu().tolist() == want.tolist()


# -- the example pack's CuPy kernels ----------------------------------------------------------------

# the compile check (test_aot_dispatch_dynamic) runs in the `tensorplay check` test below
_EAGER_CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor")

@pytest.mark.cuda
@needs_cuda
def test_bias_gelu_elementwise_kernel_matches_cpu_and_has_gradients():
    from tensorplay_example_ops.cuda_ops import bias_gelu
    x = tp.randn(64, 128, dtype=tp.float64)
    b = tp.randn(128, dtype=tp.float64)
    y = bias_gelu(x.cuda(), b.cuda())
    assert y.device == CUDA0 and y.dtype is tp.float64
    assert_close(y.cpu(), bias_gelu(x, b), rtol=1e-12, atol=1e-12)
    # float32, a transposed (strided) input, a (H, 1) bias: ElementwiseKernel broadcasting
    xs = tp.randn(32, 16).cuda().t()
    bs = tp.randn(16, 1).cuda()
    assert_close(bias_gelu(xs, bs).cpu(), bias_gelu(xs.cpu(), bs.cpu()), rtol=1e-5, atol=1e-6)
    h = bias_gelu(tp.randn(8, 8, device="cuda", dtype=tp.float16), tp.zeros(8, device="cuda",
                                                                         dtype=tp.float16))
    assert h.dtype is tp.float16
    xg = tp.randn(6, 5, dtype=tp.float64, device="cuda", requires_grad=True)
    bg = tp.randn(5, dtype=tp.float64, device="cuda", requires_grad=True)
    assert tp.autograd.gradcheck(bias_gelu, (xg, bg), eps=1e-6, atol=1e-6, rtol=1e-4)
    failures = library.opcheck(bias_gelu, (tp.randn(32, 64, device="cuda"),
                                           tp.randn(64, device="cuda")), raise_exception=False,
                               test_utils=_EAGER_CHECKS)
    assert failures == {}, failures


@pytest.mark.cuda
@needs_cuda
def test_rms_norm_raw_kernel_matches_cpu():
    from tensorplay_example_ops import cuda_kernels
    from tensorplay_example_ops.ops import rms_norm
    for dtype, tol in ((tp.float32, dict(rtol=1e-5, atol=1e-6)),
                       (tp.float64, dict(rtol=1e-12, atol=1e-12))):
        x = tp.randn(4, 33, 300, dtype=dtype)      # H not a multiple of the block size
        w = tp.randn(300, dtype=dtype)
        y = rms_norm(x.cuda(), w.cuda(), 1e-5)
        assert y.device == CUDA0 and y.dtype is dtype and y.is_contiguous()
        assert_close(y.cpu(), rms_norm(x, w, 1e-5), **tol)
    assert set(cuda_kernels._rms_kernels) >= {np.dtype("float32"), np.dtype("float64")}
    xg = tp.randn(3, 7, dtype=tp.float64, device="cuda", requires_grad=True)
    wg = tp.randn(7, dtype=tp.float64, device="cuda", requires_grad=True)
    assert tp.autograd.gradcheck(rms_norm, (xg, wg), eps=1e-6, atol=1e-6, rtol=1e-4)
    failures = library.opcheck(rms_norm, (tp.randn(16, 64, device="cuda"),
                                          tp.randn(64, device="cuda")), raise_exception=False,
                               test_utils=_EAGER_CHECKS)
    assert failures == {}, failures


@pytest.mark.cuda
@needs_cuda
def test_tensorplay_check_passes_for_the_example_pack_on_cuda(tmp_path):
    out = tmp_path / "check.json"
    r = subprocess.run([PY, "-m", "tensorplay.cli", "check", "--plugin", "tensorplay-example-ops",
                        "--device", "cuda", "--json", str(out), "-q"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    text = out.read_text()
    assert "example::bias_gelu" in text and "cuda" in text


# -- two GPUs ------------------------------------------------------------------------------------------

CUDA1 = tp.device("cuda", 1)


@pytest.mark.cuda
@needs_cuda
@needs_2
def test_tensors_on_cuda0_and_cuda1():
    cupy = _cupy()
    x0 = tp.arange(6, dtype=tp.float32, device="cuda:0").reshape(2, 3)
    x1 = x0.cuda(1)
    assert x1.device == CUDA1 and x1._data.device.id == 1
    y1 = (x1 * 2 + 1).sum(0)
    assert y1.device == CUDA1 and y1._data.device.id == 1
    assert y1.cpu().tolist() == [8.0, 12.0, 16.0]      # [[1, 3, 5], [7, 9, 11]] summed
    z = tp.zeros(3, device="cuda:1")
    assert z._data.device.id == 1
    with pytest.raises(DispatchError, match=r"found tensors on cuda:0(,| and) cuda:1"):
        x0 + x1
    with pytest.raises(DispatchError, match="expected all tensors on one device"):
        tp.cat([x1, x0])
    back = x1.to("cuda:0")
    assert back.device == CUDA0 and back.cpu().tolist() == x0.cpu().tolist()
    with cupy.cuda.Device(1):
        arr = cupy.ones(4, dtype=cupy.float32)
    t = tp.from_dlpack(arr)
    assert t.device == CUDA1
    s1 = tp.tensor(3.0) * t              # cpu scalar joins cuda:1
    assert s1.device == CUDA1 and s1.cpu().tolist() == [3.0] * 4
    with cupy.cuda.Device(0):            # a cuda:1 computation from device 0 stays on cuda:1
        r = (t + 1).exp()
        assert cupy.cuda.runtime.getDevice() == 0
    assert r._data.device.id == 1


@pytest.mark.cuda
@needs_cuda
@needs_2
def test_backend_allocations_land_on_the_requested_gpu_whatever_is_current():
    # core code may call these directly (autograd's seed gradient does), outside any adapter
    cupy = _cupy()
    be = tp.backends.get("cuda")
    with cupy.cuda.Device(0):
        arrs = [be.full((3,), 1, tp.float32, CUDA1), be.empty((2,), tp.float64, CUDA1),
                be.arange(0, 4, 1, tp.int64, CUDA1), be.rand((2,), tp.float32, CUDA1),
                be.randn((2,), tp.float32, CUDA1), be.from_host([1.0, 2.0], tp.float32, CUDA1)]
        assert cupy.cuda.runtime.getDevice() == 0
    assert [a.device.id for a in arrs] == [1] * len(arrs)
    with cupy.cuda.Device(1):
        assert be.full((1,), 0, tp.float32, CUDA0).device.id == 0


@pytest.mark.cuda
@needs_cuda
@needs_2
def test_autograd_and_custom_ops_on_cuda1():
    import warnings

    from cupy._util import PerformanceWarning
    from tensorplay_example_ops.cuda_ops import bias_gelu
    from tensorplay_example_ops.ops import rms_norm
    with warnings.catch_warnings():
        # CuPy warns when a kernel reads an array living on another GPU than the current one
        # (it then enables peer access silently): every kernel must run where its data lives
        warnings.simplefilter("error", PerformanceWarning)
        _autograd_and_custom_ops_on_cuda1(bias_gelu, rms_norm)


def _autograd_and_custom_ops_on_cuda1(bias_gelu, rms_norm):
    x = tp.randn(4, 6, dtype=tp.float64, device="cuda:1", requires_grad=True)
    b = tp.randn(6, dtype=tp.float64, device="cuda:1", requires_grad=True)
    y = rms_norm(bias_gelu(x, b), b)
    assert y.device == CUDA1 and y._data.device.id == 1
    y.sum().backward()
    assert x.grad.device == CUDA1 and b.grad.device == CUDA1
    xc = x.detach().cpu().requires_grad_()
    bc = b.detach().cpu().requires_grad_()
    rms_norm(bias_gelu(xc, bc), bc).sum().backward()
    assert_close(x.grad.cpu(), xc.grad, rtol=1e-10, atol=1e-12)
    assert_close(b.grad.cpu(), bc.grad, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="expected all tensors on one device"):
        bias_gelu(x.detach(), b.detach().cuda(0))


@pytest.mark.cuda
@needs_cuda
@needs_2
def test_copy_between_gpus_waits_for_pending_work_on_the_source():
    cupy = _cupy()
    spin = _spin_kernel()
    x = tp.zeros(8, device="cuda:0")
    for d in (0, 1):                     # compile, enable peer access, fill the pools first
        with cupy.cuda.Device(d):
            spin((1,), (1,), (cupy.zeros(8, dtype=cupy.float32), np.int64(1), np.float32(0.0),
                              np.int32(8)))
    for _ in range(4):
        x.to("cuda:1").to("cuda:0").cpu()
    for d in (0, 1):
        cupy.cuda.Device(d).synchronize()
    with cupy.cuda.Device(0):
        spin((1,), (1,), (x._data, np.int64(SPIN_CYCLES), np.float32(5.0), np.int32(8)))
    y = x.to("cuda:1")                   # must be ordered after the writer on cuda:0's stream
    assert y.device == CUDA1
    assert y.cpu().tolist() == [5.0] * 8
    with cupy.cuda.Device(1):
        spin((1,), (1,), (y._data, np.int64(SPIN_CYCLES), np.float32(7.0), np.int32(8)))
    z = y.cuda(0)
    assert z.cpu().tolist() == [7.0] * 8


# ================================================================================================
# Custom-op kernels run on their tensors' GPU (device index mocked: no GPU needed)
# ================================================================================================

def _host_backed_cupy_array(device_id, n=4):
    """A cupy.ndarray over host memory claiming ``cuda:device_id`` (never touched by a kernel)."""
    cupy = _cupy()
    h = np.zeros(n, dtype=np.float32)
    mem = cupy.cuda.UnownedMemory(h.ctypes.data, h.nbytes, h, device_id=device_id)
    return cupy.ndarray((n,), np.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))


def test_custom_op_kernel_runs_with_its_tensors_gpu_current_and_refuses_mixed_gpus(monkeypatch):
    """``CUDABackend.guard_kernel`` (the Backend member the dispatcher binds custom kernels
    through; that binding itself is tested on the shipped MockBackend in test_backends.py)."""
    cupy = _cupy()
    from tensorplay_cuda.backend import CUDABackend
    be = CUDABackend()
    be._count = 2                                     # two GPUs, as far as the backend knows
    current = [0]

    class FakeDevice:                                 # cupy.cuda.Device(i) as a context manager
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            self.prev = current[0]
            current[0] = self.i

        def __exit__(self, *exc):
            current[0] = self.prev

    monkeypatch.setattr(cupy.cuda.runtime, "getDevice", lambda: current[0])
    monkeypatch.setattr(cupy.cuda, "Device", FakeDevice)
    x0 = be.wrap(_host_backed_cupy_array(0), tp.device("cuda:0"))
    x1 = be.wrap(_host_backed_cupy_array(1), tp.device("cuda:1"))
    y1 = be.wrap(_host_backed_cupy_array(1), tp.device("cuda:1"))
    seen = []

    def probe_kernel(x: tp.Tensor, ys: list[tp.Tensor], scale: float = 1.0) -> tp.Tensor:
        seen.append(current[0])
        return x

    probe_op = library.custom_op("guardtest::probe", mutates_args=(),
                                 device_types="cuda")(probe_kernel)
    probe = be.guard_kernel(probe_op, probe_kernel)     # what the dispatcher binds for cuda
    assert probe(x1, [y1]) is x1 and seen == [1] and current[0] == 0   # restored afterwards
    assert probe(x0, [x0]) is x0 and seen == [1, 0]
    for args in ((x0, [y1]), (x1, [x0]), (x1, [y1, x0])):
        with pytest.raises(DispatchError, match=r"guardtest::probe.*cuda:[01].*cuda:[01]"):
            probe(*args)
    assert len(seen) == 2                              # refused before the kernel ran
    # one GPU: the kernel is bound as registered (no wrapper, no per-call cost)
    be._count = 1
    def kernel(x):
        return x
    assert be.guard_kernel(probe_op, kernel) is kernel


# ================================================================================================
# The per-op host path (no GPU needed: host-backed CuPy arrays, kernels never launched)
# ================================================================================================

_UNSET = object()


def test_cuda_wrap_sets_every_tensor_field_as_init_real_does():
    """``CUDABackend.wrap`` inlines ``new_tensor`` and ``Storage`` on the per-op path: the
    tensor it builds must equal field by field (every slot) the one ``new_tensor`` builds, with
    the dispatch keys being the device's own string (the dispatcher compares keys by ``is``)."""
    _cupy()
    # private on purpose: this checks CUDABackend.wrap's inlined copy of the private constructor
    # (tensorplay._tensor_base.new_tensor, Storage) field by field, which no public call can
    # observe
    from tensorplay._backend import Storage
    from tensorplay._tensor_base import SLOTS, new_tensor
    from tensorplay_cuda.backend import CUDABackend
    be = CUDABackend()
    be._count = 2
    d1 = tp.device("cuda:1")
    be.wrap(_host_backed_cupy_array(1), d1)            # the first call fills the caches
    arr = _host_backed_cupy_array(1)
    t = be.wrap(arr, d1)
    ref = new_tensor(Storage(arr, arr.nbytes, be), arr, tuple(arr.shape), (1,), 0, tp.float32, d1,
                     be)
    slots = list(SLOTS)
    for name in slots:
        got, want = getattr(t, name), getattr(ref, name)     # AttributeError: a field left unset
        if name == "_storage":
            for f in (s for s in Storage.__slots__ if s != "__weakref__"):
                # a slot left unset by both (``aliases`` until a ``.data`` is taken) is equal
                assert (getattr(got, f, _UNSET) == getattr(want, f, _UNSET) if f != "root"
                        else got.root is arr), f
        elif name == "_data":
            assert got is arr
        else:
            assert got == want and type(got) is type(want), (name, got, want)
    assert t._dkey is d1.type and t._bkey is d1.type
    # anything else (non-contiguous, no index) takes the general path and still works
    t2 = be.wrap(arr, tp.device("cuda"))
    assert t2.device == tp.device("cuda:1") and t2._dkey == "cuda"


@pytest.mark.parametrize("n_gpus", [1, 2])
def test_builtin_adapters_enter_the_device_guard_only_with_several_gpus(n_gpus):
    """With one visible GPU there is no device to switch to: ``device_guard_needed`` tells the
    generated adapters of the built-in ops to call the kernel without entering ``device_guard``
    (a per-call cost); with several they enter it with the tensors' device (that adapter rule is
    checked on the shipped MockBackend in test_backends.py)."""
    _cupy()
    from tensorplay_cuda.backend import CUDABackend
    be = CUDABackend()
    be._count = n_gpus
    assert be.device_guard_needed() is (n_gpus > 1)


@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "int64",
                                   "bool"])
def test_cuda_fill_factories_values_and_zero_sign(dtype):
    """zeros / ones / full / *_like on cuda hold the value cpu gives, for every dtype: zeros are
    written by a memset, other values by a fill kernel, and ``-0.0`` keeps its sign (a memset
    would write +0.0)."""
    dt = getattr(tp, dtype)
    for shape in [(0,), (3,), (5, 7), (1 << 16,)]:
        for make in (lambda dev: tp.zeros(shape, dtype=dt, device=dev),
                     lambda dev: tp.ones(shape, dtype=dt, device=dev),
                     lambda dev: tp.full(shape, True if dtype == "bool" else 3, dtype=dt,
                                         device=dev),
                     lambda dev: tp.zeros_like(tp.ones(shape, dtype=dt, device=dev)),
                     lambda dev: tp.full_like(tp.zeros(shape, dtype=dt, device=dev),
                                              False if dtype == "bool" else -2)):
            got, want = make("cuda"), make("cpu")
            assert got.device.type == "cuda" and got.dtype == want.dtype
            assert_close(got.cpu(), want, rtol=0, atol=0)
    if dtype.startswith(("float", "bfloat")):
        for z in (tp.full((4,), -0.0, dtype=dt, device="cuda"),
                  tp.full_like(tp.ones((4,), dtype=dt, device="cuda"), -0.0)):
            assert np.signbit(z.cpu().float().numpy()).all(), z
        assert not np.signbit(tp.zeros((4,), dtype=dt, device="cuda").cpu().float().numpy()).any()


@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int64", "bool"])
def test_cuda_clone_and_contiguous_copy_once_with_the_values_cpu_gives(dtype):
    """``clone`` of a row-major tensor is one memcpy into new memory; of a transposed or permuted
    one a copy with its strides (preserve_format), of a sliced or broadcast one a row-major copy;
    ``contiguous`` of a non-contiguous tensor a row-major copy. The
    values are cpu's, the result never aliases its input (writing into it leaves the source
    alone), and a later write to the source leaves the copy alone (the copy is ordered on the
    stream before it)."""
    dt = getattr(tp, dtype)
    base_cpu = (tp.arange(2 * 3 * 4 * 5) % 7).reshape(2, 3, 4, 5).to(dt)
    base = base_cpu.to("cuda")
    views = [lambda t: t, lambda t: t.transpose(1, 2), lambda t: t[:, 1:, ::2],
             lambda t: t[0, 0, 0].expand(3, 5), lambda t: t.reshape(-1)[:0],
             lambda t: t.permute(3, 2, 1, 0)]
    for view in views:
        x, want = view(base), view(base_cpu)
        for make in (lambda t: t.clone(), lambda t: t.contiguous()):
            r = make(x)
            assert r.device.type == "cuda" and r.dtype == dt and r.shape == want.shape
            # clone keeps a dense input's strides (torch's preserve_format), as cpu's clone
            assert r.stride() == make(want).stride()
            assert_close(r.cpu(), want.contiguous(), rtol=0, atol=0)
    x = base.clone()
    y = x.clone()
    x.fill_(1)                       # the source changes after the copy was enqueued
    assert_close(y.cpu(), base_cpu, rtol=0, atol=0)
    y.zero_()                        # the copy is its own memory
    assert_close(x.cpu(), tp.ones_like(base_cpu), rtol=0, atol=0)
    # autograd through clone and contiguous on cuda
    if dt.is_floating_point:
        w = base.to(tp.float32).requires_grad_()
        ((w.transpose(1, 2).contiguous() * 2).transpose(1, 2) + w.clone()).sum().backward()
        assert_close(w.grad.cpu(), tp.full((2, 3, 4, 5), 3.0), rtol=0, atol=0)


@needs_cuda
def test_cuda_integer_and_bool_binary_ops_give_cpus_values_and_dtypes():
    """Integer and bool operands (one dtype, mixed, with Python ints in and beyond the dtype's
    range, 0-d tensors) give cpu's values and dtypes on cuda, whichever path they take."""
    rng = np.random.default_rng(0)

    def t(dtype, shape=(6,)):
        if dtype == "bool":
            return tp.tensor(rng.random(shape) < 0.5)
        return tp.tensor(rng.integers(-5 if dtype != "uint8" else 0, 6, shape)).to(getattr(tp, dtype))
    names = ["bool", "uint8", "int8", "int16", "int32", "int64"]
    ops = {"add": tp.add, "sub": tp.sub, "mul": tp.mul, "maximum": tp.maximum,
           "minimum": tp.minimum, "eq": tp.eq, "ne": tp.ne, "lt": tp.lt, "ge": tp.ge}
    checked = 0
    for name, f in ops.items():
        for da in names:
            for other in [*names, -100, 3, 300, -1, 0.5]:
                for shape_b in ((6,), ()):
                    a = t(da)
                    b = t(other, shape_b) if isinstance(other, str) else other
                    if not isinstance(other, str) and shape_b == ():
                        continue
                    try:
                        want = f(a, b)
                    except (RuntimeError, TypeError) as e:
                        with pytest.raises(type(e)):
                            f(a.to("cuda"), b.to("cuda") if isinstance(b, tp.Tensor) else b)
                        continue
                    got = f(a.to("cuda"), b.to("cuda") if isinstance(b, tp.Tensor) else b)
                    assert got.dtype == want.dtype, (name, da, other, shape_b)
                    assert_close(got.cpu(), want, rtol=0, atol=0), (name, da, other, shape_b)
                    checked += 1
    assert checked > 400
    # the reversed operand forms (rsub) and the corpus's mask product
    x = t("int64")
    assert_close((5 - x.to("cuda")).cpu(), 5 - x, rtol=0, atol=0)
    m = x != -100
    assert_close((x.to("cuda") * m.to("cuda")).cpu(), x * m, rtol=0, atol=0)


@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "int64",
                                   "bool"])
def test_cuda_comparisons_and_integer_ops_keep_cpus_values_after_the_warm_up(dtype):
    """A call signature taken often enough (past the dense case's warm-up) launches a generated
    kernel: comparisons of one dtype (bool result) with a tensor of their shape or a number, and
    integer arithmetic, give cpu's values and dtypes on every call, before and after that."""
    dt = getattr(tp, dtype)
    rng = np.random.default_rng(1)
    vals = rng.integers(-4, 5, (5, 33)).astype(np.float64)
    vals[0, :3] = [0.5, -0.25, 2.75]
    a_cpu = tp.tensor(vals).to(dt)
    b_cpu = tp.tensor(rng.integers(-4, 5, (5, 33)).astype(np.float64)).to(dt)
    a, b = a_cpu.to("cuda"), b_cpu.to("cuda")
    calls = {"lt": lambda x, y: x < y, "eq": lambda x, y: x == y, "ge": lambda x, y: x >= y,
             "ne number": lambda x, y: x != 2, "gt number": lambda x, y: x > (1 if dtype != "bool" else 0),
             "le float": lambda x, y: x <= 0.5}
    if dtype not in ("bool",):
        calls.update({"add": lambda x, y: x + y, "mul number": lambda x, y: x * 3,
                      "sub": lambda x, y: x - y, "maximum": lambda x, y: tp.maximum(x, y)})
    for name, f in calls.items():
        want = f(a_cpu, b_cpu)
        for i in range(12):
            got = f(a, b)
            assert got.dtype == want.dtype, (name, i)
            assert_close(got.cpu(), want, rtol=0, atol=0, msg=f"{name} call {i}")


@needs_cuda
@pytest.mark.parametrize("pair", sorted(tensorplay_cuda.eager._CASTS) if CUDA_OK else [])
def test_cuda_casts_give_cpus_bits_before_and_after_the_warm_up(pair):
    """``t.to(dtype)`` on cuda for each conversion the small-cast launch takes: the bits cpu's
    conversion gives (rounding ties, subnormals, infinities, signed zero, NaN as NaN, integer
    wrap-around), on every call: the first ones (CuPy's astype) and the launched ones."""
    src, dst = (getattr(tp, n) for n in pair)
    if src.is_floating_point:
        v = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, 65520.0, 1e-8, 3.0e38, np.inf, -np.inf,
                      np.nan, 1.00048828125, 1.0009765625 + 2 ** -24, 0.1, 1 / 3, -7.25e-5],
                     np.float64)
        x_cpu = tp.tensor(v).to(src)
    elif src == tp.bool:
        x_cpu = tp.tensor([True, False, True, True])
    else:
        lo = {"int8": -128, "uint8": 0, "int32": -2 ** 31, "int64": -2 ** 63}[pair[0]]
        hi = {"int8": 127, "uint8": 255, "int32": 2 ** 31 - 1, "int64": 2 ** 63 - 1}[pair[0]]
        x_cpu = tp.tensor([0, 1, -1 if lo < 0 else 2, lo, hi, 16777217, 123456789 if hi > 2 ** 31 else 99]
                          if hi > 255 else [0, 1, lo, hi, 7], dtype=src)
    x_cpu = x_cpu.reshape(-1, 1).expand(-1, 3).contiguous()
    x = x_cpu.to("cuda")
    want = x_cpu.to(dst).numpy()
    for i in range(12):
        got = x.to(dst)
        assert got.dtype == dst and got.shape == x.shape
        g = got.cpu().numpy()
        if dst.is_floating_point:
            g64, w64 = g.astype(np.float64), want.astype(np.float64)
            np.testing.assert_array_equal(g64, w64, err_msg=f"{pair} call {i}")
            assert (np.signbit(g64) == np.signbit(w64))[~np.isnan(w64)].all(), (pair, i)
        else:
            np.testing.assert_array_equal(g, want, err_msg=f"{pair} call {i}")
