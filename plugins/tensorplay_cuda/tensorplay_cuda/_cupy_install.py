"""Which CuPy distribution is installed, and whether an NVIDIA driver is, checked when the cuda
device is first asked for, without importing CuPy.

CuPy ships one wheel per CUDA major version (``cupy-cuda12x``, ``cupy-cuda13x``; ``cupy`` is the
source build), and every one of them installs the same ``cupy`` module: with two installed, the
module is a mix of both and fails in ways that name neither. ``tensorplay-cuda`` forces none
(extras ``[cuda12]`` and ``[cuda13]`` pick one), so it says plainly when none or several are
installed.
"""

from __future__ import annotations

import functools

FIX_NONE = ("pip install 'tensorplay-cuda[cuda12]' (cupy-cuda12x, for a driver of CUDA 12) or "
            "'tensorplay-cuda[cuda13]' (cupy-cuda13x, for a driver of CUDA 13)")


def _is_cupy(name: str) -> bool:
    n = name.lower().replace("_", "-")
    return n == "cupy" or n.startswith(("cupy-cuda", "cupy-rocm"))


def cupy_distributions(dists=None) -> list[tuple[str, str]]:
    """Sorted ``(name, version)`` of the installed CuPy distributions (``dists``: an iterable of
    ``importlib.metadata.Distribution``; default: every installed one)."""
    if dists is None:
        from importlib import metadata
        dists = metadata.distributions()
    found = {(d.metadata["Name"], d.version) for d in dists if _is_cupy(d.metadata["Name"] or "")}
    return sorted(found)


def install_problem(dists=None) -> str | None:
    """A message saying what is wrong with the installed CuPy (none, or several conflicting
    ones), or ``None`` when exactly one is installed."""
    found = cupy_distributions(dists)
    if not found:
        return f"no CuPy is installed: {FIX_NONE}"
    if len(found) > 1:
        listed = ", ".join(f"{n} {v}" for n, v in found)
        names = " ".join(n for n, _ in found)
        return (f"conflicting CuPy distributions are installed ({listed}): they all provide the "
                f"one 'cupy' module and break each other; keep only the one matching the "
                f"driver's CUDA version: pip uninstall -y {names}, then {FIX_NONE}")
    return None


@functools.lru_cache(maxsize=1)
def installed_problem() -> str | None:
    """``install_problem()`` of this environment, computed once (a scan of installed metadata)."""
    return install_problem()


# the NVIDIA driver's library, which every CUDA build of CuPy loads
_DRIVER_LIBRARY = {"linux": "libcuda.so.1", "win32": "nvcuda.dll"}


@functools.lru_cache(maxsize=1)
def driver_problem() -> str | None:
    """A message saying that this machine has no NVIDIA driver, or ``None`` (the driver library
    loads, or the check does not apply: another OS, a ROCm build of CuPy).

    Found by loading the driver's library (``libcuda.so.1`` / ``nvcuda.dll``) with ``ctypes``,
    well under a millisecond, instead of importing CuPy (over a second); nothing is initialised
    (no ``cuInit``, no context)."""
    import ctypes
    import sys
    lib = _DRIVER_LIBRARY.get(sys.platform)
    if lib is None or any("rocm" in name.lower() for name, _ in cupy_distributions()):
        return None
    try:
        ctypes.CDLL(lib)
    except OSError as e:
        return (f"no NVIDIA driver is installed ({lib} cannot be loaded: {e}); tensorplay-cuda "
                f"needs an NVIDIA GPU and its driver")
    return None


def setup_problem() -> str | None:
    """Why the cuda device cannot work on this machine, found without importing CuPy (no CuPy,
    several CuPys, no NVIDIA driver), with the fix; ``None`` when CuPy should be asked."""
    problem = installed_problem() or driver_problem()
    return None if problem is None else f"{problem}; use device='cpu' meanwhile"
