"""Which CuPy distribution is installed, checked when the cuda device is first asked for.

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
