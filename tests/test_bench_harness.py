"""``benchmarks/_harness.py``'s ``cuda_setup``, the common start of the cuda benchmark scripts,
checked without a GPU: the device's status is stood in for through
``tensorplay.plugins.device_status`` and CuPy / torch by stand-in modules, so the test runs the
same on a machine with or without cuda (and with torch blocked)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

import pytest

import tensorplay

_BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
# the scripts that start with cuda_setup, and the name each one signs its messages with
_SCRIPTS = ["bench_cuda", "bench_cuda_eager", "bench_compile_cuda", "bench_cuda_reduce",
            "bench_gpu"]


def _load(name):
    spec = importlib.util.spec_from_file_location(f"tensorplay_test_{name}", _BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)   # each script puts benchmarks/ on sys.path for _harness
    return mod


@pytest.fixture
def bench_path(monkeypatch):
    """benchmarks/ on ``sys.path`` for this test only (each script also prepends it)."""
    monkeypatch.setattr(sys, "path", [str(_BENCH)] + sys.path)


@pytest.fixture
def harness(bench_path):
    return _load("_harness")


def _no_cuda(monkeypatch):
    monkeypatch.setattr(tensorplay.plugins, "device_status",
                        lambda device: (False, "no GPU in this test") if device == "cuda"
                        else (True, ""))


def _stand_ins(monkeypatch, calls):
    """Cuda reported usable; ``cupy`` a stand-in module whose device synchronise is logged in
    ``calls``."""
    monkeypatch.setattr(tensorplay.plugins, "device_status", lambda device: (True, ""))
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "0.cupy"

    class Device:
        def synchronize(self):
            calls.append("cupy")
    cupy.cuda = types.SimpleNamespace(Device=Device)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return cupy


def _torch(calls):
    torch = types.ModuleType("torch")
    torch.__version__ = "0.torch"
    torch.cuda = types.SimpleNamespace(synchronize=lambda: calls.append("torch"))
    return torch


def test_no_cuda_prints_why_and_returns_none(harness, monkeypatch, capsys):
    _no_cuda(monkeypatch)
    assert harness.cuda_setup("bench_x") is None
    assert capsys.readouterr().err == "bench_x: cuda unavailable: no GPU in this test\n"


@pytest.mark.parametrize("name", _SCRIPTS)
def test_each_cuda_script_exits_2_naming_itself_without_cuda(bench_path, monkeypatch, capsys,
                                                             name):
    _no_cuda(monkeypatch)
    assert _load(name).main([]) == 2
    out = capsys.readouterr()
    assert out.err == f"{name}: cuda unavailable: no GPU in this test\n" and out.out == ""


def test_no_torch_leaves_torch_out_and_syncs_cupy_only(harness, monkeypatch):
    calls = []
    cupy = _stand_ins(monkeypatch, calls)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(harness, "try_import_torch", lambda: pytest.fail("torch imported"))
    cu = harness.cuda_setup("bench_x", no_torch=True)
    assert cu.cupy is cupy and cu.torch is None and cu.torch_why == "--no-torch"
    assert cu.versions == "CuPy 0.cupy; torch: --no-torch"
    assert "TRITON_INTERPRET" not in harness.os.environ   # compiled kernels are timed
    cu.sync()
    cu.dev_sync()
    assert calls == ["cupy", "cupy"]


def test_with_torch_sync_waits_for_cupy_then_torch(harness, monkeypatch):
    calls = []
    _stand_ins(monkeypatch, calls)
    torch = _torch(calls)
    monkeypatch.setattr(harness, "try_import_torch", lambda: (torch, None))
    cu = harness.cuda_setup("bench_x")
    assert cu.torch is torch and cu.versions == "CuPy 0.cupy; torch: 0.torch"
    cu.sync()
    assert calls == ["cupy", "torch"]
    cu.dev_sync()
    assert calls == ["cupy", "torch", "cupy"]


def test_torch_not_importable_says_why(harness, monkeypatch):
    calls = []
    _stand_ins(monkeypatch, calls)
    monkeypatch.setattr(harness, "try_import_torch", lambda: (None, "torch not importable (x)"))
    cu = harness.cuda_setup("bench_x")
    assert cu.torch is None and cu.versions == "CuPy 0.cupy; torch: torch not importable (x)"
    cu.sync()
    assert calls == ["cupy"]


@pytest.mark.parametrize("name", ["bench_cuda_eager", "bench_compile_cuda", "bench_cuda_reduce"])
def test_the_timing_options_parse_the_same_in_each_script(bench_path, monkeypatch, capsys, name):
    _no_cuda(monkeypatch)
    mod = _load(name)
    assert mod.main(["--rounds", "3", "--iters", "5", "--no-torch"]) == 2
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.index("--rounds ROUNDS") < out.index("--iters ITERS") < out.index("--no-torch")


def test_gpu_seconds_times_each_repeat_after_the_warm_up(harness, monkeypatch):
    log = []
    cupy = _stand_ins(monkeypatch, log)

    class Event:
        def record(self):
            log.append("record")

        def synchronize(self):
            log.append("wait")
    cupy.cuda.Event = Event
    cupy.cuda.get_elapsed_time = lambda start, end: 8.0      # ms between the two events
    secs = harness.gpu_seconds(cupy, lambda: log.append("call"), iters=4, repeat=2, warmup=2)
    assert secs == [0.002, 0.002]                            # 8 ms / 4 calls, in seconds
    one = ["record"] + ["call"] * 4 + ["record", "wait"]
    assert log == ["call", "call", "cupy"] + one * 2
