"""Triton kernels as kernel libraries write them (issue 26, section 2), on cpu (Triton's interpreter,
through ``wrap_triton``) and on cuda (compiled; skipped without a GPU):

* every spelling of a libdevice / ``triton.language`` function: names imported at import time
  (``from triton.language.extra.libdevice import rsqrt``), the module under another name,
  ``tl.math``, ``tl.extra.libdevice``, the cuda libdevice module, builtins imported by name, and
  ``@triton.jit`` helpers defined in another module that import their own names;
* constexpr annotations written as strings (``"tl.constexpr"``, ``"triton.language.constexpr"``,
  modules with ``from __future__ import annotations``), as in PyTorch's ``triton_op`` example;
* a raw ``kernel[grid](...)`` launch inside ``tensorplay.compile`` (wrapped, as torch.compile does);
* ``@triton.autotune`` under the interpreter: configs that differ only in what the interpreter
  ignores (``num_warps``, ``num_stages``) run once, not timed one by one; configs that differ in
  meta-parameters: the first one the pruning keeps, deterministically; and the language is patched
  once per launch, not once per nested ``tl.sum``.
"""

# no ``from __future__ import annotations`` here: the string annotations below must stay the
# strings users write (the helper module is the ``__future__`` case)
import importlib.util
import os
import sys

import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay
import triton.language as tl
import triton.language.extra.libdevice as ld_alias
from tensorplay import library
from tensorplay_triton import TritonLaunchError, wrap_triton
from triton.language import arange, load, program_id, store
from triton.language import exp as tl_exp
from triton.language import sum as tl_sum
from triton.language.extra import libdevice as ld_from
from triton.language.extra.libdevice import exp2, rsqrt, tanh

try:
    import triton.language.extra.cuda.libdevice as cuda_ld
    from triton.language.extra.cuda.libdevice import rsqrt as cuda_rsqrt
except ImportError:        # a Triton build without the cuda backend's libdevice module
    cuda_ld = cuda_rsqrt = None

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_helpers():
    name = "_triton_spellings_mod"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


helpers = _load_helpers()


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.triton])])
def device(request):
    ok, why = tensorplay.plugins.device_status(request.param)
    if not ok:
        pytest.skip(f"{request.param} unavailable: {why}")
    return request.param


def _data(device, n=37, seed=0):
    h = np.random.default_rng(seed).random(n).astype(np.float32) + 0.5
    return h, tensorplay.tensor(h).to(device)


def _host(t):
    return t.detach().cpu().numpy()


# -- libdevice / triton.language spellings ------------------------------------------------------

@triton.jit
def names_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, rsqrt(x) + tanh(x) + exp2(x), mask=m)


@triton.jit
def alias_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, ld_alias.rsqrt(x) + ld_from.tanh(x) + ld_alias.exp2(x), mask=m)


@triton.jit
def tl_math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, tl.math.rsqrt(x) + tl.extra.libdevice.tanh(x) + tl.math.exp2(x), mask=m)


@triton.jit
def cuda_libdevice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, cuda_rsqrt(x) + cuda_ld.tanh(x) + cuda_ld.exp2(x), mask=m)


@triton.jit
def other_module_helpers_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, helpers.gelu_tanh(x) + helpers.pow2(x), mask=m)


@triton.jit
def builtin_names_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    x = load(x_ptr + offs, mask=m, other=0.0)
    store(out_ptr + offs, tl_exp(x) + tl_sum(x, 0), mask=m)


def _gelu_tanh(h):
    return 0.5 * h * (1 + np.tanh(0.7978845608028654 * (h + 0.044715 * h ** 3)))


SPELLINGS = {
    "names_imported_from_libdevice": (names_kernel, lambda h: 1 / np.sqrt(h) + np.tanh(h) + np.exp2(h)),
    "libdevice_module_aliases": (alias_kernel, lambda h: 1 / np.sqrt(h) + np.tanh(h) + np.exp2(h)),
    "tl_math_and_tl_extra": (tl_math_kernel, lambda h: 1 / np.sqrt(h) + np.tanh(h) + np.exp2(h)),
    "cuda_libdevice_module": (cuda_libdevice_kernel, lambda h: 1 / np.sqrt(h) + np.tanh(h) + np.exp2(h)),
    "helpers_in_another_module": (other_module_helpers_kernel, lambda h: _gelu_tanh(h) + np.exp2(h)),
    "builtins_imported_by_name": (builtin_names_kernel, lambda h: np.exp(h) + h.sum()),
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_libdevice_and_language_spellings(spelling, device):
    kernel, ref = SPELLINGS[spelling]
    if kernel is cuda_libdevice_kernel and cuda_ld is None:
        pytest.skip("this Triton has no triton.language.extra.cuda.libdevice")
    h, x = _data(device)
    out = tensorplay.empty_like(x)
    wrap_triton(kernel)[(1,)](x, out, h.size, BLOCK=64)
    np.testing.assert_allclose(_host(out), ref(h), rtol=2e-5, atol=1e-6)


def test_spellings_leave_module_names_untouched():
    """The interpreter's substitutions last for the launch only: the names a module bound are the
    stubs Triton's compiler resolves, before and after."""
    h, x = _data("cpu")
    before = (rsqrt, tanh, ld_alias.rsqrt, helpers.tanh)
    wrap_triton(names_kernel)[(1,)](x, tensorplay.empty_like(x), h.size, BLOCK=64)
    wrap_triton(other_module_helpers_kernel)[(1,)](x, tensorplay.empty_like(x), h.size, BLOCK=64)
    g = names_kernel.fn.__globals__
    after = (g["rsqrt"], g["tanh"], ld_alias.rsqrt, vars(helpers)["tanh"])
    assert all(a is b for a, b in zip(before, after))
    assert getattr(rsqrt, "__module__", "") == "triton.language.extra.libdevice"


_LATE_TL_MODULE = """
import triton
import tensorplay
from tensorplay_triton import wrap_triton


@triton.jit
def early(x_ptr, out_ptr, n, BLOCK: "tl.constexpr"):
    # launched before this module binds `tl` itself: the interpreter's rewrite injects it
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


def launch_early(x):
    out = tensorplay.empty_like(x)
    wrap_triton(early)[(1,)](x, out, x.numel(), BLOCK=64)
    return out
"""


def test_a_module_name_bound_after_an_injecting_launch_survives_later_launches(tmp_path):
    """A module (PyTorch's docs examples are written so) that launches a kernel before it binds
    ``tl`` itself, then binds ``tl`` to the very object the interpreter had injected: later
    launches must not take the module's own name away (a compiled launch on cuda then failed
    with ``NameError: tl is not defined``)."""
    path = tmp_path / "late_tl_mod.py"
    path.write_text(_LATE_TL_MODULE)
    spec = importlib.util.spec_from_file_location("late_tl_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = tensorplay.arange(8, dtype=tensorplay.float32)
    assert mod.launch_early(x).tolist() == [float(i + 1) for i in range(8)]
    assert "tl" not in vars(mod)            # the injection lasted for that launch only
    exec("from triton import language as tl", vars(mod))   # the module binds it itself
    assert mod.launch_early(x).tolist() == [float(i + 1) for i in range(8)]
    assert vars(mod).get("tl") is tl        # still the module's own name after the launch


# -- constexpr annotations written as strings --------------------------------------------------

@triton.jit
def add_kernel(in_ptr0, in_ptr1, out_ptr, n_elements, BLOCK_SIZE: "tl.constexpr"):
    # PyTorch's triton_op documentation example, verbatim
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr0 + offsets, mask=mask)
    y = tl.load(in_ptr1 + offsets, mask=mask)
    output = x + y
    tl.store(out_ptr + offsets, output, mask=mask)


@library.triton_op("spellings::add", mutates_args={})
def docs_add(x: tensorplay.Tensor, y: tensorplay.Tensor) -> tensorplay.Tensor:
    output = tensorplay.empty_like(x)
    n_elements = output.numel()

    def grid(meta):
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    # NB: we need to wrap the triton kernel in a call to wrap_triton
    wrap_triton(add_kernel)[grid](x, y, output, n_elements, 16)
    return output


@triton.jit
def long_name_kernel(x_ptr, out_ptr, n, BLOCK: "triton.language.constexpr", TWICE: "tl.constexpr"):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if TWICE:
        x = x * 2
    tl.store(out_ptr + offs, x, mask=m)


def test_pytorch_docs_triton_op_with_string_constexpr(device):
    h, x = _data(device)
    g, y = _data(device, seed=1)
    out = docs_add(x, y)
    np.testing.assert_allclose(_host(out), h + g, rtol=1e-6)


@pytest.mark.parametrize("twice", [False, True])
def test_string_constexpr_annotations(device, twice):
    h, x = _data(device)
    out = tensorplay.empty_like(x)
    wrap_triton(long_name_kernel)[(triton.cdiv(h.size, 16),)](x, out, h.size, BLOCK=16, TWICE=twice)
    np.testing.assert_allclose(_host(out), h * 2 if twice else h, rtol=1e-6)


@pytest.mark.parametrize("full", [False, True])
def test_future_annotations_module(device, full):
    h, x = _data(device)
    out = tensorplay.empty_like(x)
    grid = (triton.cdiv(h.size, 16),)
    wrap_triton(helpers.future_scale_kernel)[grid](x, out, h.size, BLOCK=16, FULL=full)
    np.testing.assert_allclose(_host(out), _gelu_tanh(h) if full else h, rtol=2e-5, atol=1e-6)


# -- a raw kernel[grid](...) inside tensorplay.compile -------------------------------------------

@triton.jit
def scale_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


def _raw_fn(x, y):
    out = tensorplay.empty_like(x)
    n = out.numel()
    scale_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, 3.0, n, BLOCK=16)
    return out + 1


def _wrapped_fn(x, y):
    out = tensorplay.empty_like(x)
    n = out.numel()
    wrap_triton(scale_add_kernel)[(triton.cdiv(n, 16),)](x, y, out, 0.5, n, BLOCK=16)
    return out * 2


def test_raw_launch_inside_compile(device):
    f = tensorplay.compile(_raw_fn)
    for seed, n in ((0, 37), (1, 37), (2, 50)):
        h, x = _data(device, n, seed)
        g, y = _data(device, n, seed + 10)
        np.testing.assert_allclose(_host(f(x, y)), 3 * h + g + 1, rtol=1e-6)
    text = str(f.graph)
    assert "scale_add_kernel" in text, text


def test_wrap_triton_launch_inside_compile_outside_a_triton_op(device):
    f = tensorplay.compile(_wrapped_fn)
    h, x = _data(device)
    g, y = _data(device, seed=3)
    np.testing.assert_allclose(_host(f(x, y)), (0.5 * h + g) * 2, rtol=1e-6)


def test_raw_launch_on_cpu_outside_compile_still_names_wrap_triton():
    h, x = _data("cpu")
    out = tensorplay.empty_like(x)
    from triton.runtime import driver
    if getattr(driver, "_active", None) is not None or _has_gpu_driver():
        pytest.skip("a Triton GPU driver is active in this process: the raw launch would compile")
    with pytest.raises(TritonLaunchError, match=r"wrap_triton\(scale_add_kernel\)"):
        scale_add_kernel[(1,)](x, x, out, 1.0, h.size, BLOCK=64)


def _has_gpu_driver():
    ok, _ = tensorplay.plugins.device_status("cuda")
    return ok


# -- autotune and nested reductions under the interpreter ---------------------------------------

_RUNS = []


def _count(nargs):
    _RUNS.append(nargs.get("BLOCK"))


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}, num_warps=w, num_stages=s, pre_hook=_count)
             for w in (1, 2, 4, 8) for s in (1, 2, 3)],
    key=["n"])
@triton.jit
def warps_only_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


def _drop_small(configs, nargs, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] >= 32]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w, pre_hook=_count)
             for b in (16, 32, 64) for w in (2, 4)],
    key=["n"], prune_configs_by={"early_config_prune": _drop_small})
@triton.jit
def meta_configs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3, mask=m)


def test_autotune_configs_differing_only_in_warps_and_stages_run_once_on_cpu():
    h, x = _data("cpu")
    out = tensorplay.empty_like(x)
    _RUNS.clear()
    wrap_triton(warps_only_kernel)[lambda m: (triton.cdiv(h.size, m["BLOCK"]),)](x, out, h.size)
    np.testing.assert_allclose(_host(out), h + 1, rtol=1e-6)
    assert _RUNS == [32], f"the first call ran the kernel {len(_RUNS)} times (configs timed)"
    assert warps_only_kernel.best_config.kwargs == {"BLOCK": 32}


def test_autotune_configs_differing_in_meta_parameters_pick_the_first_kept_config_on_cpu():
    h, x = _data("cpu", n=101)
    out = tensorplay.empty_like(x)
    _RUNS.clear()
    wrap_triton(meta_configs_kernel)[lambda m: (triton.cdiv(h.size, m["BLOCK"]),)](x, out, h.size)
    np.testing.assert_allclose(_host(out), h * 3, rtol=1e-6)
    # the user's pruning is applied (BLOCK=16 dropped), then the first config left is used
    assert _RUNS == [32]
    assert meta_configs_kernel.best_config.kwargs == {"BLOCK": 32}
    _RUNS.clear()
    wrap_triton(meta_configs_kernel)[lambda m: (triton.cdiv(h.size, m["BLOCK"]),)](x, out, h.size)
    assert _RUNS == [32]


@triton.jit
def _row_max(x):
    return tl.max(x, 0)


@triton.jit
def _row_lse(x):
    mx = _row_max(x)
    return mx + tl.log(tl.sum(tl.exp(x - mx), 0))


@triton.jit
def nested_lse_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + c, mask=c < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, _row_lse(x))


def test_language_patched_once_per_launch(monkeypatch):
    """Triton patches ``triton.language`` for every interpreted function it enters (each nested
    ``tl.sum``/``tl.max`` call); a launch here patches it once."""
    from triton.runtime import interpreter
    calls = []
    orig = interpreter._patch_lang

    def counting(fn):
        calls.append(fn)
        return orig(fn)
    monkeypatch.setattr(interpreter, "_patch_lang", counting)
    rows, cols = 6, 10
    h = np.random.default_rng(5).random((rows, cols)).astype(np.float32)
    x = tensorplay.tensor(h)
    out = tensorplay.empty(rows)
    wrap_triton(nested_lse_kernel)[(rows,)](x, out, cols, BLOCK=16)
    ref = np.log(np.exp(h - h.max(1, keepdims=True)).sum(1)) + h.max(1)
    np.testing.assert_allclose(_host(out), ref, rtol=1e-5)
    assert len(calls) == 1, f"triton.language patched {len(calls)} times in one launch"


# -- `and` / `or` between tensors, as the compiler reads them ---------------------------------

@triton.jit
def boolop_kernel(Y, M, N, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    # FlagGems writes masks so: `mask = rows < M and cols < N` (the compiler: logical_and)
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    both = rows < M and cols < N
    either = rows < M or cols < N
    # constexpr operands keep Python's meaning (the compiler folds them)
    if FLAG and BLOCK > 2:
        both = both and rows >= 0
    tl.store(Y + rows * BLOCK + cols, both.to(tl.int32) + 2 * either.to(tl.int32))


def test_and_or_between_tensors_are_elementwise(device):
    """``a and b`` / ``a or b`` on tensors in a kernel are ``logical_and`` / ``logical_or``, as
    Triton's compiler reads them; under the interpreter Python's ``and`` kept one operand (the
    mask then covered too much: out-of-bounds reads and writes, heap corruption)."""
    block = 4
    y = tensorplay.zeros(block * block, dtype=tensorplay.int32, device=device)
    wrap_triton(boolop_kernel)[(1,)](y, 3, 2, True, BLOCK=block)
    r, c = np.meshgrid(np.arange(block), np.arange(block), indexing="ij")
    want = ((r < 3) & (c < 2)).astype(np.int32) + 2 * ((r < 3) | (c < 2)).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(y.cpu().tolist()).reshape(block, block), want)
