"""The corpus loader (tests/corpus/_upstream.py) on the ways flash-linear-attention 0.6.0 writes
its modules, which the loader refused before (found adding fla-core to the corpus):

* a jit helper defined only inside a top-level ``if``/``else`` (``fla/ops/utils/op.py`` picks
  ``exp`` / ``log`` by an environment flag): "no top-level definition"; a constant a kernel uses,
  bound in both branches of one (``fla/ops/utils/solve_tril.py``'s
  ``DOT_PRECISION_AUTOTUNE_LIST``): "names [...], which the loader does not run or supply";
* a host function defining a function inside it (``def grid(meta)`` before the launch, in every
  fla host function): "names 'grid', bound nowhere in the module";
* a distribution whose import package has another name (``fla-core`` ships ``fla``): the host
  code's ``from fla.utils import ...`` was "neither bound nor loaded";
* a supplied value that is an attribute of another module of the wheel (``Ref(upstream=...,
  attr=...)``: fla's kernels import ``exp`` from ``fla.ops.utils.op``).

Each of those tests builds a small wheel of its own (as tests/test_corpus_upstream.py does), so it
needs neither network nor fla's release. The last test runs fla's released Functions (the
corpus's, tests/corpus/fla) in bfloat16, the dtype fla is used in (skipped without fla's wheel).
"""

from __future__ import annotations

import base64
import hashlib
import zipfile

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402
from corpus import _upstream  # noqa: E402
from tensorplay.library import wrap_triton  # noqa: E402

# fla-style: helpers chosen by an env flag in a top-level if/else, imported by the kernels'
# module from the package (whose name is not the distribution's)
_OP = '''\
import os

import triton
import triton.language as tl

if os.environ.get("FAKEPKG_FAST_OPS", "0") == "1":
    @triton.jit
    def twice(x): return x + x + 1000.0
else:
    @triton.jit
    def twice(x): return x * 2.0
'''

_OPS = '''\
import os

import torch
import triton
import triton.language as tl

from fakepkg.op import twice
from fakepkg.utils import cdiv_rows

if os.environ.get("FAKEPKG_OFFSET", "0") == "1":
    OFFSET = tl.constexpr(100.0)
else:
    OFFSET = tl.constexpr(0.0)


@triton.jit(do_not_specialize=["n"])
def twice_kernel(X, Y, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(Y + offs, twice(tl.load(X + offs, mask=m)) + OFFSET, mask=m)


def twice_fwd(x):
    y = torch.empty_like(x)
    n = x.numel()

    def grid(meta):
        return (cdiv_rows(n, meta["B"]),)

    twice_kernel[grid](X=x, Y=y, n=n, B=4)
    return y
'''

_UTILS = '''\
import triton


def cdiv_rows(n, b):
    return triton.cdiv(n, b)
'''


@pytest.fixture
def fake_core(tmp_path, monkeypatch):
    """A pinned ``fake-core 1.0`` wheel (``fake_core-1.0-...whl``) holding package ``fakepkg``."""
    whl = tmp_path / "cache" / "fake_core-1.0-py3-none-any.whl"
    whl.parent.mkdir()
    files = {"fakepkg/op.py": _OP, "fakepkg/ops.py": _OPS, "fakepkg/utils.py": _UTILS,
             "fakepkg/bad.py": _OPS + "\n\ndef uses_grid(x):\n    return grid\n"}
    record = ""
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(text)}\n"
    record += "fake_core-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(whl, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr("fake_core-1.0.dist-info/RECORD", record)
    pin = _upstream.Pin("fake-core", "1.0", whl.name, hashlib.sha256(whl.read_bytes()).hexdigest(),
                        hashlib.sha256(record.encode()).hexdigest(), package="fakepkg")
    monkeypatch.setenv("TENSORPLAY_CORPUS_WHEELS", str(whl.parent))
    monkeypatch.delenv("FAKEPKG_FAST_OPS", raising=False)
    monkeypatch.delenv("FAKEPKG_OFFSET", raising=False)
    monkeypatch.setitem(_upstream.PINS, "fake-core", pin)
    monkeypatch.setitem(_upstream.DROPPED_IMPORTS, "fakepkg", "the fake package's own modules")
    monkeypatch.setitem(_upstream.SUPPLIED, ("fake-core", None), {
        "twice": (_upstream.Ref(upstream=("fake-core", "fakepkg/op.py", ["twice"]), attr="twice"),
                  "from fakepkg.op: that module's jit helper, loaded as the kernels are")})
    for name in ("_WHEELS", "_MODULES", "_HOSTS", "MISSING"):
        monkeypatch.setattr(_upstream, name, {})
    return whl


def test_a_helper_defined_only_inside_a_top_level_if_loads(fake_core, monkeypatch):
    mod = _upstream.module("fake-core", "fakepkg/op.py", ["twice"])
    x = tensorplay.tensor(np.arange(6, dtype=np.float32))
    y = tensorplay.empty(6)

    # the helper as a kernel's callee: through the kernels' module (Ref attr) and its launch
    (kernel,) = _upstream.load("fake-core", {"fakepkg/ops.py": ["twice_kernel"]}).values()
    assert kernel.fn.__globals__["twice"] is mod.twice
    wrap_triton(kernel)[(2,)](x, y, 6, B=4)
    np.testing.assert_allclose(y.numpy(), 2 * np.arange(6))
    # the branch the flag picks, as the released module would (a fresh load)
    monkeypatch.setenv("FAKEPKG_FAST_OPS", "1")
    monkeypatch.setattr(_upstream, "_MODULES", {})
    fast = _upstream.module("fake-core", "fakepkg/op.py", ["twice"])
    assert fast.twice is not mod.twice and "1000.0" in fast.twice.src


def test_a_constant_bound_in_both_branches_of_a_top_level_if_loads(fake_core, monkeypatch):
    """The kernel's module binds OFFSET in an `if`/`else` on a flag: the branch the flag picks
    runs, as in the released module."""
    x = tensorplay.tensor(np.arange(6, dtype=np.float32))
    for flag, off in (("0", 0.0), ("1", 100.0)):
        monkeypatch.setenv("FAKEPKG_OFFSET", flag)
        monkeypatch.setattr(_upstream, "_MODULES", {})
        (kernel,) = _upstream.load("fake-core", {"fakepkg/ops.py": ["twice_kernel"]}).values()
        y = tensorplay.empty(6)
        wrap_triton(kernel)[(2,)](x, y, 6, B=4)
        np.testing.assert_allclose(y.numpy(), 2 * np.arange(6) + off)


def test_a_host_function_defining_a_function_inside_runs(fake_core):
    """``def grid(meta)`` inside the host function is its local; ``from fakepkg.utils import
    cdiv_rows`` is the package's module (named ``fakepkg``, not the wheel's ``fake_core``)."""
    h = _upstream.host("fake-core", {"fakepkg/ops.py": ["twice_fwd"]}, framework=tensorplay,
                       wrap=wrap_triton)
    x = tensorplay.tensor(np.arange(10, dtype=np.float32))
    np.testing.assert_allclose(h["twice_fwd"](x).numpy(), 2 * np.arange(10))
    g = h["twice_fwd"].__globals__
    assert "grid" not in g and g["cdiv_rows"](9, 4) == 3


def test_names_still_bound_nowhere_are_refused(fake_core):
    """Nested definitions are locals of their function only: a module-level use of a name that
    only a function defines inside stays an error."""
    with pytest.raises(RuntimeError, match="uses_grid names 'grid', bound nowhere"):
        _upstream.host("fake-core", {"fakepkg/bad.py": ["uses_grid"]}, framework=tensorplay,
                       wrap=wrap_triton)


# --- flash-linear-attention's released Functions in bfloat16 (the dtype fla trains in) ----------

def _fla():
    from corpus import _upstream as up
    try:
        from corpus.fla import cases, ops
    except up.UpstreamUnavailable as e:
        pytest.skip(str(e))
    return cases, ops


def _bf16_vs_f32(fn, args, grad):
    """``fn`` on bfloat16 copies of the float arrays and on float32 copies of those same rounded
    values: outputs and the gradients of ``sum(outputs)`` (as float64 arrays) for both, and the
    bfloat16 run's output dtypes."""
    def run(dtype):
        ts = [tensorplay.tensor(a).to(tensorplay.bfloat16).to(dtype).requires_grad_(i in grad)
              if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
        outs = fn(*ts)
        outs = outs if isinstance(outs, tuple) else (outs,)
        sum(o.float().sum() for o in outs).backward()
        vals = [o.detach().float().numpy().astype(np.float64) for o in outs]
        vals += [ts[i].grad.float().numpy().astype(np.float64) for i in grad]
        return vals, [o.dtype for o in outs]
    return run(tensorplay.bfloat16), run(tensorplay.float32)


@pytest.mark.parametrize("which", ["l2norm", "rms_norm", "layer_norm_gated", "swish", "logsigmoid",
                                   "chunk_simple_gla"])
def test_fla_functions_in_bfloat16(which, request):
    """fla's kernels load bfloat16, compute in float32 and store back through
    ``.to(p.dtype.element_ty)``; under the interpreter (cpu) the results and gradients are those of
    the float32 run to bfloat16's precision, in the dtypes fla returns (its outputs keep the input
    dtype; simple GLA's final state is float32)."""
    cases, ops = _fla()
    from corpus.fla import runtime
    if which == "chunk_simple_gla" and runtime.GATED_BWD_REFUSED:   # fla's own guard (#640)
        request.applymarker(pytest.mark.xfail(strict=True, raises=RuntimeError, reason=(
            "fla refuses chunk_bwd_dqkwg with a gate on a Hopper GPU with Triton >= 3.4.0, < 3.7.1")))
    r = np.random.default_rng(0)
    x = r.standard_normal((4, 32)).astype(np.float32)
    w = (r.random(32) + 0.5).astype(np.float32)
    fn, args, grad, want = {
        "l2norm": (ops.L2NormFunction.apply, (x, 1e-6, None), (0,), [tensorplay.bfloat16]),
        "rms_norm": (ops.LayerNormFunction.apply, (x, w, None, None, 1e-5, False, False, True, 1), (0, 1),
                     [tensorplay.bfloat16]),
        "layer_norm_gated": (ops.LayerNormGatedFunction.apply,
                             (x, x[::-1].copy(), w, w - 1, "swish", None, 1e-5, False, False, False),
                             (0, 1, 2, 3), [tensorplay.bfloat16]),
        "swish": (ops.SwishFunction.apply, (x,), (0,), [tensorplay.bfloat16]),
        "logsigmoid": (ops.LogSigmoidFunction.apply, (x, 2.0), (0,), [tensorplay.bfloat16]),
        "chunk_simple_gla": (ops.ChunkSimpleGLAFunction.apply, cases._sgla_fn_inputs(r, 1), (0, 1, 2, 3, 6),
                             [tensorplay.bfloat16, tensorplay.float32]),
    }[which]
    (lo, dtypes), (hi, _) = _bf16_vs_f32(fn, args, grad)
    assert dtypes == want
    for a, b in zip(lo, hi):
        scale = max(np.abs(b).max(), 1e-6)
        assert np.abs(a - b).max() <= 2 ** -5 * scale, (which, np.abs(a - b).max(), scale)
