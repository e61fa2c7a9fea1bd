"""``tensorplay.version``: what the installed TensorPlay runs on (the names of ``torch.version``).

``__version__``: TensorPlay's version string (``tensorplay.__version__``).
``cuda``: the CUDA runtime version of the ``cuda`` device backend as ``"MAJOR.MINOR"`` (for
example ``"13.0"``), read from the backend when first asked; ``None`` when CUDA is not usable
here (no ``tensorplay-cuda`` plugin, no GPU or driver: ``tensorplay.cuda.is_available()`` is
False) or the backend does not say. torch's is the version it was built with, known even
without a GPU; TensorPlay's core is built with none, so it reports the one the plugin runs on.
``hip``: ``None`` (no ROCm backend: kernel libraries test ``torch.version.hip`` to tell AMD from
NVIDIA). ``debug``: ``False``.

Never raises.
"""

from __future__ import annotations

__version__ = "1.0.0.dev20260909"     # the one place (tensorplay.__version__ is this)
hip = None
debug = False

__all__ = ["__version__", "cuda", "debug", "hip"]   # noqa: F822 - cuda: __getattr__


def __getattr__(name: str):
    # read on first access, so `import tensorplay` touches no device
    if name == "cuda":
        v = _cuda_version()
        globals()["cuda"] = v      # asked once: the runtime's version does not change
        return v
    raise AttributeError(f"module 'tensorplay.version' has no attribute {name!r}")


def _cuda_version() -> str | None:
    from . import cuda
    if not cuda.is_available():
        return None
    try:
        from . import backends
        rt = getattr(backends.get("cuda"), "runtime", None)
        v = rt.runtime_version() if rt is not None and hasattr(rt, "runtime_version") else None
    except Exception:  # noqa: BLE001 - documented: never raises
        return None
    if not isinstance(v, int) or v <= 0:
        return None
    return f"{v // 1000}.{v % 1000 // 10}"     # CUDA's encoding: 1000 * major + 10 * minor
