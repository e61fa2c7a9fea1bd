"""The example op pack ``tensorplay-example-ops`` (examples/): discovery through its entry point,
values against NumPy references, gradients against finite differences, opcheck over every sample
it ships, and the layout other modules extend (``_OPTIONAL``, the sample registry)."""

from __future__ import annotations

import importlib
import importlib.util
import math
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import tensorplay as tp
import tensorplay_example_ops as pack
from tensorplay.autograd import gradcheck
from tensorplay.testing.opcheck import run_checks

NO_AOT = ("test_schema", "test_autograd_registration", "test_faketensor")
CORE_OPS = ("weighted_sum", "rms_norm", "gelu", "softmax_cross_entropy", "add_relu_")


def _rec():
    return next(r for r in tp.plugins.records() if r.dist == "tensorplay-example-ops")


def test_discovered_through_its_entry_point_and_attributed():
    rec = _rec()
    assert rec.status == "loaded" and rec.name == "example_ops"
    assert set(rec.ops) >= {f"example::{n}" for n in CORE_OPS}
    for n in CORE_OPS:
        op = getattr(tp.ops.example, n)
        assert op.plugin == "tensorplay-example-ops"
        assert getattr(pack, n) is op               # module attribute = the registered op
        assert op.fake_impl is not None, f"example::{n} has no fake kernel"


def test_explicit_formula_and_declared_mutation():
    assert tp.ops.example.rms_norm.has_autograd
    assert tp.ops.example.add_relu_.mutates_args == ("x",)
    assert "Tensor(a!) x" in str(tp.ops.example.add_relu_.schema)


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)


def test_importing_the_pack_first_is_cheap_and_loads_correctly():
    # the pack module alone imports neither tensorplay nor numpy; importing it before tensorplay
    # must not leave the plugin half-registered
    p = _run("import sys, tensorplay_example_ops as m\n"
             "assert 'numpy' not in sys.modules and 'tensorplay' not in sys.modules\n"
             "import tensorplay as tp\n"
             "assert 'numpy' not in sys.modules, 'import tensorplay + plugins imported numpy'\n"
             "r = [r for r in tp.plugins.records() if r.dist == 'tensorplay-example-ops'][0]\n"
             "assert r.status == 'loaded' and 'example::gelu' in r.ops, r\n"
             "x = tp.randn(4, 8)\n"
             "assert m.gelu(x).shape == (4, 8)\n"
             "s = tp.plugins.sample_inputs(tp.ops.example.gelu, tp.device('cpu'))\n"
             "assert len(s) >= 2\nprint('ok')")
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr


def test_ops_module_imports_no_numpy_at_import():
    src = importlib.util.find_spec("tensorplay_example_ops.ops").origin
    with open(src) as fh:
        text = fh.read()
    assert "import numpy" not in text and "from numpy" not in text


# ---------------------------------------------------------------------------- values

def test_weighted_sum_matches_numpy():
    x, w = tp.randn(32, 64), tp.randn(64)
    got = tp.ops.example.weighted_sum(x, w)
    assert got.shape == () and got.dtype is tp.float32
    np.testing.assert_allclose(got.item(), (x.numpy() * w.numpy()).sum(), rtol=1e-5)


def test_rms_norm_matches_numpy():
    x, w = tp.randn(16, 128, dtype=tp.float64), tp.randn(128, dtype=tp.float64)
    got = tp.ops.example.rms_norm(x, w, 1e-5).numpy()
    xn = x.numpy()
    ref = xn / np.sqrt((xn ** 2).mean(-1, keepdims=True) + 1e-5) * w.numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_gelu_matches_the_tanh_formula():
    x = tp.randn(64, 64, dtype=tp.float64)
    xn = x.numpy()
    ref = 0.5 * xn * (1 + np.tanh(math.sqrt(2 / math.pi) * (xn + 0.044715 * xn ** 3)))
    np.testing.assert_allclose(tp.ops.example.gelu(x).numpy(), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tp.ops.example.gelu(x.t()).numpy(), ref.T, rtol=1e-12, atol=1e-15)


def test_softmax_cross_entropy_matches_numpy():
    logits = tp.randn(50, 7, dtype=tp.float64)
    target = tp.tensor([i % 7 for i in range(50)], dtype=tp.int64)
    ln, tn = logits.numpy(), target.numpy()
    m = ln.max(-1, keepdims=True)
    logp = ln - m - np.log(np.exp(ln - m).sum(-1, keepdims=True))
    ref = -logp[np.arange(50), tn].mean()
    np.testing.assert_allclose(tp.ops.example.softmax_cross_entropy(logits, target).item(), ref,
                               rtol=1e-12)


def test_add_relu_mutates_x_only_and_returns_none():
    x, y = tp.randn(32, 64), tp.randn(64)
    xn, yn = x.numpy().copy(), y.numpy().copy()
    vx, vy = x._version, y._version
    assert tp.ops.example.add_relu_(x, y) is None
    np.testing.assert_allclose(x.numpy(), np.maximum(xn + yn, 0), rtol=1e-6)
    assert np.array_equal(y.numpy(), yn)
    assert x._version > vx and y._version == vy


def test_fake_kernels_give_output_metadata():
    from tensorplay import fake
    x, w = tp.randn(8, 16), tp.randn(16)
    with fake.FakeTensorMode():
        fx, fw = fake.from_real(x), fake.from_real(w)
        assert tp.ops.example.rms_norm(fx, fw).shape == (8, 16)
        assert tp.ops.example.weighted_sum(fx, fw).shape == ()
        assert tp.ops.example.gelu(fx).is_fake
        with pytest.raises(ValueError, match="weight must have shape"):
            tp.ops.example.rms_norm(fx, fake.from_real(tp.randn(3)))


# ---------------------------------------------------------------------------- gradients

def _leaf(*shape):
    return tp.randn(*shape, dtype=tp.float64).requires_grad_(True)


def test_rms_norm_formula_agrees_with_finite_differences():
    assert gradcheck(lambda x, w: tp.ops.example.rms_norm(x, w, 1e-3),
                     (_leaf(3, 5), _leaf(5)))
    assert gradcheck(lambda x, w: tp.ops.example.rms_norm(x, w), (_leaf(2, 3, 4), _leaf(4)))


def test_rms_norm_formula_agrees_with_the_composite_gradient():
    x, w = _leaf(6, 32), _leaf(32)
    g = tp.randn(6, 32, dtype=tp.float64)
    gx, gw = tp.autograd.grad(tp.ops.example.rms_norm(x, w), (x, w), g)
    r = tp.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)
    cx, cw = tp.autograd.grad(x * r * w, (x, w), g)       # autograd through the tp ops
    np.testing.assert_allclose(gx.numpy(), cx.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), cw.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn,make", [
    (lambda x: tp.ops.example.gelu(x), lambda: (_leaf(4, 6),)),
    (lambda x, w: tp.ops.example.weighted_sum(x, w), lambda: (_leaf(4, 6), _leaf(6))),
    (lambda lg: tp.ops.example.softmax_cross_entropy(lg, tp.tensor([0, 2, 1, 2])),
     lambda: (_leaf(4, 3),)),
])
def test_composite_ops_gradcheck(fn, make):
    assert gradcheck(fn, make())


# ---------------------------------------------------------------------------- samples + opcheck

def test_samples_have_realistic_shapes():
    cpu = tp.device("cpu")
    for n in CORE_OPS:
        samples = tp.plugins.sample_inputs(getattr(tp.ops.example, n), cpu)
        assert samples, f"example::{n} has no sample inputs"
        samples = [s for s in samples if s.args[0].numel()]     # the empty batch aside
        rows = [s.args[0].numel() // s.args[0].shape[-1] for s in samples]   # leading dims
        hidden = [s.args[0].shape[-1] for s in samples]
        assert max(rows) >= 256 and min(rows) >= 32 and max(rows) <= 1024, (n, rows)
        assert all(64 <= h <= 4096 for h in hidden) or n == "softmax_cross_entropy", (n, hidden)
        assert all(s.name for s in samples)


def test_every_op_ships_an_empty_and_a_non_contiguous_sample():
    cpu = tp.device("cpu")
    for name in _rec().ops:
        op = tp._registry.lookup(name)
        if op.is_triton:
            continue     # the Triton ops' samples belong to triton_ops (derived 0-size there)
        samples = tp.plugins.sample_inputs(op, cpu)
        tensors = [t for s in samples for t in list(s.args) + list(s.kwargs.values())
                   if isinstance(t, tp.Tensor)]
        assert any(t.ndim and t.shape[0] == 0 for t in tensors), f"{name}: no 0-size sample"
        assert any(not t.is_contiguous() for t in tensors), f"{name}: no non-contiguous sample"


def test_check_plugin_passes_every_check_with_one_case_per_kernel():
    from tensorplay.testing import check_plugin, summarize_checks
    from tensorplay.testing.plugin_check import plugin_check_cases
    cases = plugin_check_cases("tensorplay-example-ops", "cpu")
    kernels = {(c.op, c.kernel) for c in cases}
    # rms_norm: its NumPy cpu kernel (entry-point metadata) and the device-agnostic one
    assert {("example::rms_norm", "cpu"), ("example::rms_norm", "default")} <= kernels
    res = check_plugin("tensorplay-example-ops", "cpu", ops=[f"example::{n}" for n in CORE_OPS],
                       test_utils=["test_schema", "test_autograd_registration", "test_layouts",
                                   "test_faketensor"])
    bad = [r.describe() for r in res if not r.ok]
    assert not bad, "\n".join(bad)
    assert summarize_checks(res)["passed"] >= 20
    for r in res:
        assert r.kernel and r.checks.get("test_layouts") in ("pass", "skip"), r
    assert any(r.checks.get("test_layouts") == "pass" for r in res)
    assert {r.kernel for r in res if r.op == "example::rms_norm"} == {
        # the kernel named in entry-point metadata, and the one defined with the op
        "cpu: tensorplay_example_ops.cpu_kernels:rms_norm (plugin tensorplay-example-ops)",
        "default: tensorplay_example_ops.ops:rms_norm (plugin tensorplay-example-ops)"}


def test_samples_are_deterministic():
    op = tp.ops.example.gelu
    a = tp.plugins.sample_inputs(op, tp.device("cpu"))[0].args[0].detach().numpy().copy()
    b = tp.plugins.sample_inputs(op, tp.device("cpu"))[0].args[0].detach().numpy()
    assert np.array_equal(a, b)


# the empty-batch sample of softmax_cross_entropy: the mean of no rows is NaN (as in torch);
# NumPy, under the built-in mean, warns about it
@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_every_sample_passes_opcheck_on_cpu_quickly():
    cpu = tp.device("cpu")
    t0 = time.process_time()     # CPU time: robust to other processes sharing the machine
    n = 0
    for name in _rec().ops:
        op = tp._registry.lookup(name)
        if op.active_kernel("cpu") is None and op.active_kernel("default") is None:
            continue
        for s in tp.plugins.sample_inputs(op, cpu):
            res = run_checks(op, s.args, s.kwargs, test_utils=NO_AOT)
            bad = {k: r.message for k, r in res.items() if r.status == "fail"}
            assert not bad, (name, s.name, bad)
            n += 1
    assert n >= 12
    assert time.process_time() - t0 < 20


def test_every_sample_passes_the_compile_check_when_available():
    try:
        importlib.import_module("tensorplay.testing.aot")
    except ImportError:
        pytest.skip("tensorplay.testing.aot (tensorplay.compile) is not installed")
    cpu = tp.device("cpu")
    for n in CORE_OPS:
        op = getattr(tp.ops.example, n)
        s = tp.plugins.sample_inputs(op, cpu)[0]
        assert tp.library.opcheck(op, s.args, s.kwargs,
                                  test_utils="test_aot_dispatch_dynamic") == {}


# ---------------------------------------------------------------------------- extension points

def test_sample_registry_accepts_providers_from_other_modules(monkeypatch):
    from tensorplay_example_ops import _samples
    monkeypatch.setitem(_samples._PROVIDERS, "example::gelu",
                        list(_samples._PROVIDERS["example::gelu"]))
    before = len(tp.plugins.sample_inputs(tp.ops.example.gelu, tp.device("cpu")))

    @_samples.register_samples("example::gelu")
    def extra(device):
        return [tp.plugins.SampleInput((tp.randn(7, 64, device=device),), name="extra")]

    got = tp.plugins.sample_inputs(tp.ops.example.gelu, tp.device("cpu"))
    assert len(got) == before + 1 and got[-1].name == "extra"
    assert _samples.samples_for("example::not_ours", tp.device("cpu")) is None
    with pytest.raises(ValueError, match="qualified name"):
        _samples.register_samples("gelu")


def test_optional_modules_are_listed_and_failures_are_kept(monkeypatch):
    assert pack._OPTIONAL == ("cuda_ops", "triton_ops")
    real_find, real_import = importlib.util.find_spec, importlib.import_module
    monkeypatch.setattr(pack, "_OPTIONAL", ("zz_missing", "zz_broken"))
    monkeypatch.setattr(pack, "OPTIONAL_ERRORS", {})

    def find_spec(name, *a):
        if name.endswith("zz_missing"):
            return None
        if name.endswith("zz_broken"):
            return real_find("tensorplay_example_ops._samples")
        return real_find(name, *a)

    def import_module(name, *a):
        if name.endswith("zz_broken"):
            raise ImportError("cupy is not installed")
        return real_import(name, *a)

    monkeypatch.setattr(pack.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(pack.importlib, "import_module", import_module)
    monkeypatch.delenv("TENSORPLAY_STRICT_PLUGINS", raising=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pack._load_optional()
    assert set(pack.OPTIONAL_ERRORS) == {"zz_broken"}
    assert any("zz_broken" in str(x.message) and "cupy is not installed" in str(x.message)
               for x in w)
    monkeypatch.setenv("TENSORPLAY_STRICT_PLUGINS", "1")
    with pytest.raises(ImportError, match="cupy"):
        pack._load_optional()
