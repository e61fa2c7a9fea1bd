"""TensorPlay device plugin ``cpu`` (NumPy). Hook implementations only: importing this module
imports neither numpy nor array-api-compat; ``backend.py`` does, on first use of the device."""

from tensorplay.plugins import DeviceSpec, hookimpl

TENSORPLAY_API_VERSION = 1


@hookimpl
def tensorplay_devices():
    return [DeviceSpec("cpu", "tensorplay_cpu.backend:CPUBackend")]
