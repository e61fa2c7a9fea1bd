"""The corpus's loader of released kernels (tests/corpus/_upstream.py): what it runs of an upstream
module, what it refuses, and what the corpus does without the wheels (skips, saying why).

The module tests build a small wheel of their own (a ``zipfile`` in ``tmp_path``, pinned by its
sha256 for the test), so they need neither network nor a library's release.
"""

from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402
from corpus import _upstream  # noqa: E402
from tensorplay.library import wrap_triton  # noqa: E402

_TESTS_DIR = pathlib.Path(__file__).parent

# an upstream-style module: torch for the host code only, a constexpr used as a default, a jit
# helper, a libdevice import chosen by an `if` on helpers the loader supplies, host code
_MODULE = '''\
import operator

import torch
import triton
import triton.language as tl

from torch.distributed.tensor import DTensor
from fakelib.utils import compare_version
from fakelib.utils import is_npu_available
from fakelib.utils import block_for, is_mps

if compare_version("triton", operator.ge, "3.0.0") and not is_npu_available():
    from triton.language.extra.libdevice import rsqrt
else:
    from triton.language.math import rsqrt

HOST_DTYPE = torch.float32
_SCALE: tl.constexpr = tl.constexpr(4)


@triton.jit
def _helper(x):
    return x * _SCALE


@triton.jit
def scale_kernel(X, Y, n, BLOCK: tl.constexpr, S: tl.constexpr = _SCALE):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, _helper(x) + rsqrt(x * 0 + 4.0) * S, mask=mask)


@triton.jit
def double_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, 2 * tl.load(X + offs, mask=offs < n), mask=offs < n)


@triton.jit
def names_torch_kernel(X):
    tl.store(X, torch.float32)


def host(x):
    return torch.empty_like(x)


def launch(x):
    y = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(1,)](x, y, n, BLOCK=block_for(n))
    return y


def tripled(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, 3 * tl.load(X + offs, mask=offs < n), mask=offs < n)


tripled = triton.jit(tripled)


def launch_tripled(x):
    tripled[(1,)](x, x.numel(), BLOCK=block_for(x.numel()))
    return x


def mps_only(x):
    return is_mps()


def to_dtensor(x):
    return DTensor.from_local(x)
'''

# the library's own helpers module: host code only
_UTILS = '''\
import torch
import triton


def block_for(n):
    return max(8, triton.next_power_of_2(n))


def is_mps():
    return torch.mps.is_available()
'''


@pytest.fixture
def fake_wheel(tmp_path, monkeypatch):
    """A pinned ``fakelib-1.0`` wheel holding ``fakelib/ops.py`` in an empty cache folder."""
    whl = tmp_path / "cache" / "fakelib-1.0-py3-none-any.whl"
    whl.parent.mkdir()
    files = {"fakelib/ops.py": _MODULE, "fakelib/utils.py": _UTILS}
    record = ""
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(text)}\n"
    record += "fakelib-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(whl, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr("fakelib-1.0.dist-info/RECORD", record)
    pin = _upstream.Pin("fakelib", "1.0", whl.name, hashlib.sha256(whl.read_bytes()).hexdigest(),
                        hashlib.sha256(record.encode()).hexdigest())
    monkeypatch.setenv("TENSORPLAY_CORPUS_WHEELS", str(whl.parent))
    monkeypatch.setitem(_upstream.PINS, "fakelib", pin)
    monkeypatch.setitem(_upstream.DROPPED_IMPORTS, "fakelib", "the fake library's host helpers")
    monkeypatch.setitem(_upstream.SUPPLIED, ("fakelib", None),
                        _upstream.SUPPLIED[("liger-kernel", None)])
    monkeypatch.setattr(_upstream, "_WHEELS", {})
    monkeypatch.setattr(_upstream, "_MODULES", {})
    monkeypatch.setattr(_upstream, "_HOSTS", {})
    monkeypatch.setattr(_upstream, "MISSING", {})
    return whl


def test_loader_runs_the_kernel_and_what_it_uses_only(fake_wheel):
    """The requested kernel, its helper, its constexpr default and the libdevice import run as
    written; host code and its torch import do not; the kernel runs on cpu (interpreter) and
    ``inspect`` reads it from the extracted upstream file."""
    import inspect
    (kernel,) = _upstream.load("fakelib", {"fakelib/ops.py": ["scale_kernel"]}).values()
    mod = sys.modules["corpus_upstream.fakelib.ops"]
    assert {"_helper", "_SCALE", "rsqrt", "scale_kernel"} <= set(vars(mod))
    assert not {"torch", "HOST_DTYPE", "host", "names_torch_kernel"} & set(vars(mod))
    src = pathlib.Path(mod.__file__)
    assert src.read_text() == _MODULE and src.is_relative_to(fake_wheel.parent / "src")
    assert inspect.getsource(kernel.fn).startswith("@triton.jit\ndef scale_kernel(")
    x = tensorplay.tensor(np.arange(1, 6, dtype=np.float32))
    y = tensorplay.empty(5)
    wrap_triton(kernel)[(1,)](x, y, 5, BLOCK=8)
    np.testing.assert_allclose(y.numpy(), 4 * np.arange(1, 6) + 2)   # 4x + 4 / sqrt(4)


def test_loader_refuses_a_kernel_naming_a_dropped_import(fake_wheel):
    with pytest.raises(RuntimeError, match=r"names_torch_kernel names \['torch'\]"):
        _upstream.load("fakelib", {"fakelib/ops.py": ["names_torch_kernel"]})
    with pytest.raises(RuntimeError, match=r"no top-level definition of \['gone'\]"):
        _upstream.load("fakelib", {"fakelib/ops.py": ["gone"]})


def test_without_the_wheel_the_recorded_sources_serve(fake_wheel, monkeypatch):
    """A machine given only ``CACHE/src`` (the GPU machine: no network, the wheels are large):
    the files written there at the first load serve, each checked against the wheel's RECORD
    (itself pinned by sha256); a file that differs from the release, or a RECORD that is not the
    pinned one, sends the loader back to the wheel (here: unavailable)."""
    spec = {"fakelib/ops.py": ["scale_kernel"]}
    _upstream.load("fakelib", spec)
    fake_wheel.unlink()

    def offline(pin, cache):
        raise _upstream.UpstreamUnavailable(f"{pin.dist}: no network in this test")

    monkeypatch.setattr(_upstream, "_download", offline)
    monkeypatch.setattr(_upstream, "_WHEELS", {})
    monkeypatch.setattr(_upstream, "_MODULES", {})
    (kernel,) = _upstream.load("fakelib", spec).values()
    assert kernel.fn.__name__ == "scale_kernel"
    pin = _upstream.PINS["fakelib"]
    copy = pin.src / "fakelib/ops.py"
    copy.write_text(_MODULE.replace("_SCALE: tl.constexpr = tl.constexpr(4)",
                                    "_SCALE: tl.constexpr = tl.constexpr(5)"))
    monkeypatch.setattr(_upstream, "_MODULES", {})
    with pytest.raises(_upstream.UpstreamUnavailable, match="no network"):
        _upstream.load("fakelib", spec)
    copy.write_text(_MODULE)
    record = pin.src / pin.record
    record.write_text(record.read_text() + "fakelib/extra.py,sha256=x,1\n")
    with pytest.raises(_upstream.UpstreamUnavailable, match="no network"):
        _upstream.load("fakelib", spec)


def test_loader_refuses_a_wheel_that_is_not_the_pinned_one(fake_wheel):
    fake_wheel.write_bytes(fake_wheel.read_bytes() + b"\0")
    with pytest.raises(RuntimeError, match="not the pinned"):
        _upstream.wheel("fakelib")


def test_without_wheel_or_network_the_library_cases_skip_saying_why(tmp_path):
    """An empty cache and a pip that can reach no index: the Liger cases are skipped tests naming
    the pinned release and the way to provide it, none passes."""
    env = dict(os.environ, TENSORPLAY_CORPUS_WHEELS=str(tmp_path / "empty"),
               PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS="")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "test_corpus.py", "-k", "liger and not isolated"],
                          cwd=_TESTS_DIR, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "2 skipped" in out and "passed" not in out, out[-3000:]
    assert "liger-kernel==0.8.5" in out and "TENSORPLAY_CORPUS_WHEELS" in out, out[-3000:]


def test_flaggems_tuned_configs_read_from_yaml():
    """corpus/flaggems/runtime.py's reader of FlagGems' tune_configs.yaml (ours, no PyYAML): plain
    entries with FlagGems' defaults (4 warps, 2 stages), and a ``gen: true`` entry expanded over
    every combination of the lists its param_map names."""
    from corpus.flaggems import runtime
    text = """\
# comment
plain:
  - META:
      BLOCK_M: 8
      BLOCK_N: 256
    num_warps: 8
  - META:
      BLOCK_M: 16
gen_one:
  - gen: true
    param_map:
      META:
        ROWS: block_r
        COLS: 2048
      num_warps: warps
    warps:
      - 4
      - 16
    block_r:
      - 1
      - 2
      - 8
empty_meta:
  - gen: true
    param_map:
      META: {}
      num_warps: warps
    warps:
      - 2
"""
    got = [(c.kwargs, c.num_warps, c.num_stages)
           for name in ("plain", "gen_one", "empty_meta")
           for e in runtime._yaml_entry(text, name) for c in runtime._configs(e)]
    assert got == [({"BLOCK_M": 8, "BLOCK_N": 256}, 8, 2), ({"BLOCK_M": 16}, 4, 2),
                   *[({"ROWS": r, "COLS": 2048}, w, 2) for r in (1, 2, 8) for w in (4, 16)],
                   ({}, 2, 2)]
    with pytest.raises(KeyError, match="missing"):
        runtime._yaml_entry(text, "missing")


def test_more_names_of_a_loaded_module_keep_the_kernels_handed_out(fake_wheel):
    """A second load() of the same module for more names runs only what was not run: the
    kernel objects handed out first stay those in the module (one compilation cache)."""
    (kernel,) = _upstream.load("fakelib", {"fakelib/ops.py": ["scale_kernel"]}).values()
    helper = sys.modules["corpus_upstream.fakelib.ops"]._helper
    _upstream.load("fakelib", {"fakelib/ops.py": ["double_kernel"]})
    mod = sys.modules["corpus_upstream.fakelib.ops"]
    assert mod.scale_kernel is kernel and mod._helper is helper
    assert _upstream.module("fakelib", "fakelib/ops.py", ["scale_kernel"]) is mod


def test_host_runs_the_released_host_code_on_tensorplay(fake_wheel):
    """host(): the released host function runs as written with torch bound to tensorplay, its
    library's own import (fakelib.utils.block_for) loaded the same way, and its raw launch
    `scale_kernel[grid](...)` going to wrap(kernel) -- load()'s kernel object."""
    import inspect
    (kernel,) = _upstream.load("fakelib", {"fakelib/ops.py": ["scale_kernel"]}).values()
    wrapped = []

    def wrap(k):
        wrapped.append(k)
        return wrap_triton(k)

    h = _upstream.host("fakelib", {"fakelib/ops.py": ["launch"]}, framework=tensorplay, wrap=wrap)
    assert wrapped == [kernel]
    x = tensorplay.tensor(np.arange(1, 6, dtype=np.float32))
    y = h["launch"](x)
    assert isinstance(y, tensorplay.Tensor)
    np.testing.assert_allclose(y.numpy(), 4 * np.arange(1, 6) + 2)   # 4x + 4 / sqrt(4)
    assert inspect.getsource(h["launch"]).startswith("def launch(x):")
    g = h["launch"].__globals__
    assert g["torch"] is tensorplay and "host" not in g and "names_torch_kernel" not in g


def test_host_overrides_what_tensorplay_lacks_and_missing_torch_names_raise_when_used(
        fake_wheel, monkeypatch):
    """A released definition asking tensorplay for what it lacks (torch.mps) fails as
    released, and runs replaced once HOST_OVERRIDES names it; an import of a torch name
    tensorplay lacks (torch.distributed.tensor.DTensor) loads, is listed in MISSING, and raises
    HostUnsupported naming it when used."""
    spec = {"fakelib/ops.py": ["mps_only", "to_dtensor"]}
    h = _upstream.host("fakelib", spec, framework=tensorplay, wrap=wrap_triton)
    x = tensorplay.zeros(2)
    with pytest.raises(AttributeError, match="mps"):
        h["mps_only"](x)
    assert _upstream.MISSING == {("fakelib", "fakelib/ops.py", "DTensor"):
                                 "tensorplay has no tensorplay.distributed.tensor.DTensor"}
    with pytest.raises(_upstream.HostUnsupported, match="torch.distributed.tensor.DTensor"):
        h["to_dtensor"](x)
    monkeypatch.setitem(_upstream.HOST_OVERRIDES, ("fakelib", "fakelib/utils.py"),
                        {"is_mps": (lambda: False, "no tensorplay.mps")})
    monkeypatch.setattr(_upstream, "_HOSTS", {})
    h = _upstream.host("fakelib", spec, framework=tensorplay, wrap=wrap_triton)
    assert h["mps_only"](x) is False


def test_host_refuses_a_name_bound_nowhere(fake_wheel):
    with pytest.raises(RuntimeError, match=r"no top-level host definition of \['gone'\]"):
        _upstream.host("fakelib", {"fakelib/ops.py": ["gone"]}, framework=tensorplay,
                       wrap=wrap_triton)


def test_host_launches_a_kernel_made_by_assignment(fake_wheel):
    """Unsloth's kernels are plain defs made kernels by ``k = triton.jit(k)``: host code naming
    ``k`` gets load()'s kernel, wrapped, never the plain Python function."""
    (kernel,) = _upstream.load("fakelib", {"fakelib/ops.py": ["tripled"]}).values()
    wrapped = []

    def wrap(k):
        wrapped.append(k)
        return wrap_triton(k)

    h = _upstream.host("fakelib", {"fakelib/ops.py": ["launch_tripled"]}, framework=tensorplay,
                       wrap=wrap)
    assert wrapped == [kernel]
    x = tensorplay.tensor(np.arange(1, 6, dtype=np.float32))
    np.testing.assert_allclose(h["launch_tripled"](x).numpy(), 3 * np.arange(1, 6))
