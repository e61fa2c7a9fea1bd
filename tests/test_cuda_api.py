"""``tensorplay.cuda``: the host surface kernel code calls (issue 26, section 4), same names and
meanings as ``torch.cuda``.

The no-GPU behaviour runs everywhere (in a subprocess with ``CUDA_VISIBLE_DEVICES=""``, or with
the cuda plugin disabled); the tests marked ``needs_cuda`` need a GPU and skip without one (run
them on a GPU machine: ``pytest -q tests/test_cuda_api.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import tensorplay as tp
from tensorplay.errors import DeviceUnavailableError

CUDA_OK = tp.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason="no usable CUDA GPU: "
                                + tp.plugins.device_status("cuda")[1][:200])

_NO_GPU = """
    import json
    import tensorplay as tp
    from tensorplay.errors import DeviceUnavailableError
    res = {"available": tp.cuda.is_available(), "count": tp.cuda.device_count()}
    calls = {
        "current_device": lambda: tp.cuda.current_device(),
        "set_device": lambda: tp.cuda.set_device(0),
        "device": lambda: tp.cuda.device(0).__enter__(),
        "get_device_properties": lambda: tp.cuda.get_device_properties(0),
        "get_device_name": lambda: tp.cuda.get_device_name(),
        "synchronize": lambda: tp.cuda.synchronize(),
        "current_stream": lambda: tp.cuda.current_stream(),
        "Stream": lambda: tp.cuda.Stream(),
        "Event": lambda: tp.cuda.Event(enable_timing=True),
        "max_memory_allocated": lambda: tp.cuda.max_memory_allocated(),
        "reset_peak_memory_stats": lambda: tp.cuda.reset_peak_memory_stats(),
        "memory_allocated": lambda: tp.cuda.memory_allocated(),
    }
    for name, call in calls.items():
        try:
            call()
            res[name] = "no error"
        except DeviceUnavailableError as e:
            res[name] = "DeviceUnavailableError: " + str(e)
    res["device_none"] = type(tp.cuda.device(None).__enter__()).__name__   # no-op, as torch
    print(json.dumps(res))
"""


def _run(code: str, **env) -> dict:
    e = dict(os.environ)
    e.update(env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=e, timeout=180)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("env", [{"CUDA_VISIBLE_DEVICES": ""},
                                 {"TENSORPLAY_DISABLE_PLUGINS": "tensorplay-cuda"}],
                         ids=["no-gpu", "plugin-disabled"])
def test_without_a_gpu_available_is_false_count_zero_and_the_rest_raises(env):
    res = _run(_NO_GPU, **env)
    assert res.pop("available") is False and res.pop("count") == 0
    assert res.pop("device_none") == "device"
    for name, msg in res.items():
        assert msg.startswith(f"DeviceUnavailableError: tensorplay.cuda.{name.split('.')[0]}: "
                              f"CUDA is not available: "), (name, msg)
        assert "cuda" in msg.lower()


def test_module_surface_and_no_array_library_at_import():
    for name in ("is_available", "device_count", "current_device", "set_device", "device",
                 "get_device_properties", "get_device_name", "get_device_capability",
                 "synchronize", "current_stream", "stream", "Stream", "Event",
                 "max_memory_allocated", "reset_peak_memory_stats", "memory_allocated",
                 "memory_reserved", "empty_cache"):
        assert hasattr(tp.cuda, name), name
    res = _run("""
        import json, sys
        import tensorplay
        tensorplay.cuda.is_available   # the attribute, not a call
        print(json.dumps([m for m in ("numpy", "cupy", "triton") if m in sys.modules]))
    """.replace("print(json.dumps([m", "print(json.dumps({'heavy': [m").replace(
        "sys.modules]))", "sys.modules]}))"))
    assert res == {"heavy": []}


# -- on a GPU ---------------------------------------------------------------------------------

@needs_cuda
def test_device_count_current_and_set_device():
    n = tp.cuda.device_count()
    assert n >= 1 and tp.cuda.is_available()
    cur = tp.cuda.current_device()
    assert 0 <= cur < n
    tp.cuda.set_device(cur)
    tp.cuda.set_device(f"cuda:{cur}")
    tp.cuda.set_device(tp.device("cuda", cur))
    assert tp.cuda.current_device() == cur
    with pytest.raises(DeviceUnavailableError, match=f"invalid device index {n}"):
        tp.cuda.set_device(n)
    with pytest.raises(ValueError, match="expected a cuda device"):
        tp.cuda.set_device("cpu")


@needs_cuda
def test_device_context_restores_the_previous_device():
    n = tp.cuda.device_count()
    cur = tp.cuda.current_device()
    last = n - 1
    with tp.cuda.device(last):
        assert tp.cuda.current_device() == last
        assert tp.zeros(2, device="cuda").device == tp.device("cuda", last)
    assert tp.cuda.current_device() == cur


@needs_cuda
def test_get_device_properties_fields_and_cache():
    p = tp.cuda.get_device_properties(0)
    assert isinstance(p.name, str) and p.name
    assert p.multi_processor_count > 0 and p.total_memory > 2**30
    assert p.major >= 3 and p.minor >= 0
    assert tp.cuda.get_device_capability(0) == (p.major, p.minor)
    assert tp.cuda.get_device_name(0) == p.name
    for spelling in (None, 0, "cuda:0", tp.device("cuda", 0)):
        if spelling is None and tp.cuda.current_device() != 0:
            continue
        assert tp.cuda.get_device_properties(spelling) is p     # cached: the same object
    with pytest.raises(AttributeError, match="read-only"):
        p.multi_processor_count = 1
    # cached as torch caches it: a repeat call is a dict lookup (issue 26: < 1 µs)
    f = tp.cuda.get_device_properties
    best = min(_per_call(lambda: f(0)) for _ in range(5))
    assert best < 1e-6, f"get_device_properties(0) took {best * 1e9:.0f} ns per call"


def _per_call(fn, n=20000):
    # the process's CPU time: other processes on a loaded machine do not count
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n


@needs_cuda
def test_streams_events_and_elapsed_time():
    s = tp.cuda.Stream()
    assert isinstance(s, tp.cuda.Stream) and s.cuda_stream != 0
    assert isinstance(tp.cuda.current_stream(), tp.cuda.Stream)
    start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
    assert isinstance(start, tp.cuda.Event)
    x = tp.randn(512, 512, device="cuda")
    with tp.cuda.stream(s):
        assert tp.cuda.current_stream() == s
        start.record()
        for _ in range(10):
            x = x @ x * 1e-3
        end.record()
    assert tp.cuda.current_stream() != s
    end.synchronize()
    assert end.query() and s.query()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms > 0
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        tp.cuda.Event().elapsed_time(end)
    s2 = tp.cuda.Stream()
    s2.wait_stream(s)
    s2.wait_event(s.record_event())
    s2.synchronize()
    tp.cuda.synchronize()
    tp.cuda.synchronize(0)


@needs_cuda
def test_peak_memory_after_reset():
    tp.cuda.synchronize()
    tp.cuda.reset_peak_memory_stats()
    base = tp.cuda.memory_allocated()
    assert tp.cuda.max_memory_allocated() == base
    big = tp.empty(64 * 2**20, dtype=tp.uint8, device="cuda")     # 64 MiB
    assert tp.cuda.memory_allocated() >= base + 64 * 2**20
    del big
    peak = tp.cuda.max_memory_allocated()
    assert peak >= base + 64 * 2**20
    assert tp.cuda.memory_allocated() < peak          # freed, the peak stays
    tp.cuda.reset_peak_memory_stats()
    assert tp.cuda.max_memory_allocated() == tp.cuda.memory_allocated()
    assert tp.cuda.memory_reserved() >= tp.cuda.memory_allocated()
    tp.cuda.empty_cache()
