"""An autotuned kernel's ``best_config`` after a launch that did not run: under
``tensorplay.compile`` (the launch is recorded as a graph node) and on fake tensors (the launch is
skipped: a triton_op body as its own fake kernel).

Found by the corpus: attorch's ``PLossAutoGrad.forward`` launches ``p_loss_forward_kernel``
(``@triton.autotune``) and then reads ``p_loss_forward_kernel.best_config.kwargs['BLOCK_SIZE']``
to size its partial sums. Eagerly the launch chooses the config; inside ``tensorplay.compile``
nothing had chosen one, and the host code raised ``AttributeError: 'Autotuner' object has no
attribute 'best_config'`` (attorch.mse_loss under compile, no grad). A launch that does not run
now makes the choice the launch would make where it is known without timing (cpu: the first
config the pruning keeps, as the interpreter's launch does; any device: a config already chosen
for the same key), so the host code sees the config the graph's launch will use.
"""

from __future__ import annotations

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")

import tensorplay
import triton
import triton.language as tl
from tensorplay import library
from tensorplay.fake import FakeTensorMode
from tensorplay.library import triton_op, wrap_triton


def _make_kernel(prune=None):
    """A fresh autotuned kernel (nothing chosen yet): per-program partial sums of BLOCK elements."""
    @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
                     key=["n"], prune_configs_by=prune)
    @triton.jit
    def partial_sums(X, OUT, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        tl.store(OUT + pid, tl.sum(tl.load(X + offs, mask=offs < n, other=0.0)))
    return partial_sums


def _total(kernel, x):
    """attorch's host pattern: launch with a grid over META, then read best_config."""
    n = x.numel()
    out = tensorplay.zeros(triton.cdiv(n, 8), dtype=x.dtype, device=x.device)
    wrap_triton(kernel)[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, out, n)
    block = kernel.best_config.kwargs["BLOCK"]
    return out[:triton.cdiv(n, block)].sum()


def _prune_to_32(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] == 32]


@pytest.mark.parametrize("prune", [None, {"early_config_prune": _prune_to_32}],
                         ids=["first-config", "pruned"])
def test_best_config_inside_compile(prune):
    x = tensorplay.arange(100, dtype=tensorplay.float32)
    eager_kernel = _make_kernel(prune)
    want = _total(eager_kernel, x).item()
    kernel = _make_kernel(prune)                         # fresh: the compiled call chooses first
    got = tensorplay.compile(lambda t: _total(kernel, t))(x)
    assert got.item() == want == 4950.0
    assert kernel.best_config.kwargs == eager_kernel.best_config.kwargs


def test_best_config_compares_as_the_config_inside_compile():
    # host code may compare the choice with the kernel's configs instead of reading its kwargs
    x = tensorplay.arange(100, dtype=tensorplay.float32)
    kernel = _make_kernel()
    seen = {}

    def total(t):
        r = _total(kernel, t)
        seen["first"] = kernel.best_config == kernel.configs[0]
        seen["second"] = kernel.best_config != kernel.configs[1]
        seen["hashed"] = kernel.best_config in {kernel.configs[0]}
        seen["text"] = str(kernel.best_config) == str(kernel.configs[0])
        return r

    assert tensorplay.compile(total)(x).item() == 4950.0
    assert seen == {"first": True, "second": True, "hashed": True, "text": True}


def test_best_config_on_fake_tensors_and_opcheck():
    kernel = _make_kernel()

    @triton_op("corpus_autotune_probe::total", mutates_args=())
    def total(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return _total(kernel, x)

    with FakeTensorMode():                               # the first launch is a skipped one
        fake = total(tensorplay.empty(40))
    assert fake.shape == ()
    assert kernel.best_config.kwargs == {"BLOCK": 16}
    x = tensorplay.arange(40, dtype=tensorplay.float32)
    assert total(x).item() == 780.0
    assert library.opcheck(total, (x,)) == {}


def test_a_gpu_choice_for_the_same_key_does_not_decide_a_cpu_capture():
    # Triton's autotuner keys its choices by argument values and dtypes, not by device: after a
    # cuda launch of the same kernel and size, ``kernel.cache`` holds the GPU's timed choice for
    # the key of a cpu launch too. The interpreter's launch ignores it (the first config the pruning
    # keeps, in a cache of its own), so a recorded cpu launch must choose as that launch will, not
    # from the GPU's cache: a GPU machine ran attorch's mse/l1/smooth-l1 losses under compile with
    # BLOCK 1024 read back while the launch used 64, summing a third of the partial sums.
    x = tensorplay.arange(100, dtype=tensorplay.float32)
    kernel = _make_kernel()
    gpu_choice = kernel.configs[1]                      # BLOCK 32, as a cuda launch had timed
    kernel.cache[(100, str(x.dtype), str(x.dtype))] = gpu_choice   # Autotuner.run's key: n, X, OUT
    got = tensorplay.compile(lambda t: _total(kernel, t))(x)
    assert got.item() == 4950.0
    assert kernel.best_config.kwargs == {"BLOCK": 16}
    assert _total(kernel, x).item() == 4950.0           # eager cpu: the interpreter's choice too


def _cuda_or_skip():
    ok, why = tensorplay.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    return "cuda"


@pytest.mark.cuda
@pytest.mark.parametrize("prune", [None, {"early_config_prune": _prune_to_32}],
                         ids=["first-config", "pruned"])
def test_best_config_inside_compile_on_cuda_before_any_launch(prune):
    # On a GPU a launch times the configs when it first runs. A recorded launch runs only when the
    # graph does, after the host code has read ``best_config`` (attorch's mse/l1 losses under
    # compile on cuda raised AttributeError: nothing had chosen one). The recorded launch is
    # pinned to the config the host code read (the first the pruning keeps), so both agree.
    x = tensorplay.arange(100, dtype=tensorplay.float32, device=_cuda_or_skip())
    kernel = _make_kernel(prune)
    got = tensorplay.compile(lambda t: _total(kernel, t))(x)
    assert got.item() == 4950.0
    assert kernel.best_config.kwargs == ({"BLOCK": 32} if prune else {"BLOCK": 16})
    assert tensorplay.compile(lambda t: _total(kernel, t))(x * 2).item() == 9900.0


@pytest.mark.cuda
def test_a_timed_gpu_choice_decides_a_cuda_capture():
    # after an eager cuda launch timed the configs, a capture of the same key reads that choice
    # and its launch uses it
    x = tensorplay.arange(100, dtype=tensorplay.float32, device=_cuda_or_skip())
    kernel = _make_kernel()
    assert _total(kernel, x).item() == 4950.0
    timed = kernel.best_config
    kernel.cache[(100, str(x.dtype), str(x.dtype))] = kernel.configs[1]   # as if BLOCK 32 won
    got = tensorplay.compile(lambda t: _total(kernel, t))(x)
    assert got.item() == 4950.0
    assert kernel.best_config is kernel.configs[1] and timed is not None
