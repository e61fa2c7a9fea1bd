"""TensorPlay device plugin ``cpu`` (NumPy). Hook implementations only: importing this module
imports neither numpy nor array-api-compat; ``backend.py`` does, on first use of the device."""

from tensorplay.plugins import DeviceSpec, hookimpl

TENSORPLAY_API_VERSION = 1


@hookimpl
def tensorplay_devices():
    return [DeviceSpec("cpu", "tensorplay_cpu.backend:CPUBackend")]


@hookimpl
def tensorplay_sample_inputs(op, device):
    """Samples of the built-in ``tp::`` ops on ``cpu`` (the core's table,
    ``tensorplay.testing.builtin_samples``), so ``tensorplay check --plugin tensorplay-cpu``
    runs ``opcheck`` over this plugin's kernels of them; ``None`` for any other op or device."""
    if device.type != "cpu":
        return None
    from tensorplay.testing.builtin_samples import sample_inputs
    return sample_inputs(op, device)
