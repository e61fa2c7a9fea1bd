"""The first use of a device from several threads at once (issue 28, "Threads").

Each test runs in a fresh interpreter, so the cpu backend is really not loaded when the threads
start. Some threads make the first op themselves (a factory, ``.to``, a custom op, a lazy kernel
entry point); the others poll the public ``tensorplay.backends.loaded()`` and run an op the
moment ``cpu`` shows up there. ``loaded()`` may only list a backend whose kernels are bound
(torch's lazy init holds its lock until init is complete): no thread may see
``DispatchError: no kernel for device 'cpu'``.
"""

from __future__ import annotations

import pytest

from _plugin_dists import PluginEnv

SCRIPT = r'''
import sys, threading
sys.setswitchinterval(1e-6)
import tensorplay as tp
assert "cpu" not in tp.backends.loaded(), tp.backends.loaded()

@tp.library.custom_op("fu::twice", mutates_args=())
def twice(x: tp.Tensor) -> tp.Tensor:
    return x * 2

@tp.library.custom_op("fu::make", mutates_args=())
def make(n: int, device: tp.device) -> tp.Tensor:
    raise AssertionError("the device's own kernel must run")

@make.register_kernel(["cpu", "fu"])
def _(n, device):
    return tp.full((n,), 3.0, device=device)

@tp.library.custom_op("fu::neg", mutates_args=())
def neg(x: tp.Tensor) -> tp.Tensor:
    raise AssertionError("the device's own kernel must run")

@neg.register_kernel(["cpu", "fu"])
def _(x):
    return x * -1

rms = tp.ops.example.rms_norm                # its cpu kernel is a lazy entry point


def race(device, paths):
    # every path twice: once as the first op, once polling loaded() and running on its arrival
    errors, wrong = [], []
    start = threading.Barrier(2 * len(paths))

    def worker(name, fn, polling):
        try:
            start.wait()
            if polling:
                while device not in tp.backends.loaded():
                    pass
            if not fn():
                wrong.append(name)
        except BaseException as e:
            errors.append(f"{device} {name} (polling={polling}): {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(n, f, p)) for n, f in paths.items()
               for p in (False, True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return {"errors": errors, "wrong": wrong, "alive": sum(t.is_alive() for t in threads)}


out = {"cpu": race("cpu", {
    "full": lambda: tp.full((2,), 1.0).tolist() == [1.0, 1.0],
    "add": lambda: (tp.ones(2) + tp.ones(2)).tolist() == [2.0, 2.0],
    "tensor": lambda: tp.tensor([1.0, 2.0]).sum().item() == 3.0,
    "custom": lambda: twice(tp.ones(2)).tolist() == [2.0, 2.0],
    "custom_kernel": lambda: neg(tp.ones(2)).tolist() == [-1.0, -1.0],
    "custom_factory": lambda: make(2, "cpu").tolist() == [3.0, 3.0],
    "lazy": lambda: rms(tp.ones(1, 4), tp.ones(4), 1e-6).shape == (1, 4),
})}
one = tp.ones(2)                                 # cpu is loaded; device "fu" is not
assert "fu" not in tp.backends.loaded()
out["fu"] = race("fu", {
    "to": lambda: one.to("fu").tolist() == [1.0, 1.0],
    "full": lambda: tp.full((2,), 1.0, device="fu").tolist() == [1.0, 1.0],
    "add": lambda: (tp.ones(2, device="fu") + 1).tolist() == [2.0, 2.0],
    "custom_kernel": lambda: neg(one.to("fu")).tolist() == [-1.0, -1.0],
    "custom_factory": lambda: make(2, "fu").tolist() == [3.0, 3.0],
})
result(out)
'''


# a device plugin whose backend is the cpu one under another name (first use of a device other
# than cpu: ``.to`` needs a tensor on a loaded device to start from)
FU_PLUGIN = '''
from tensorplay.plugins import DeviceSpec, hookimpl
TENSORPLAY_API_VERSION = 1

@hookimpl
def tensorplay_devices():
    return [DeviceSpec("fu", "fuplug:FuBackend")]

def __getattr__(name):
    if name == "FuBackend":
        from tensorplay_cpu.backend import CPUBackend

        class FuBackend(CPUBackend):
            device_type = "fu"
        return FuBackend
    raise AttributeError(name)
'''


@pytest.mark.parametrize("run", range(3))
def test_first_use_from_many_threads_sees_only_a_bound_backend(tmp_path, run):
    env = PluginEnv(tmp_path)
    env.dist("fu-device", plugins={"fu": "fuplug"}, modules={"fuplug": FU_PLUGIN})
    r = env.run(SCRIPT)
    assert r.rc == 0, r.stderr
    clean = {"errors": [], "wrong": [], "alive": 0}
    assert r.data == {"cpu": clean, "fu": clean}, r.data
