"""Third-party Triton kernels as tensorplay ops (see tests/test_corpus.py and cases.py).

The kernels of the libraries on PyPI come from their pinned wheels at run time (``corpus._upstream``);
a library whose wheel can be had neither from the cache nor from PyPI is left out of
:func:`all_cases` and named, with the reason, in :func:`unavailable` (the tests skip it).
"""

import importlib

from ._upstream import UpstreamUnavailable

# library -> why its cases are not there (its pinned wheel could not be had)
_UNAVAILABLE: dict[str, str] = {}


def _library_cases(lib):
    try:
        return importlib.import_module(f".{lib}.cases", __name__).CASES
    except UpstreamUnavailable as e:
        _UNAVAILABLE[lib] = str(e)
        return []


def all_cases():
    """Every corpus case whose op is a ``triton_op``, library by library (imports the libraries'
    kernels: needs triton). Libraries whose wheel is unavailable are left out (:func:`unavailable`)."""
    return [c for lib in ("liger", "unsloth", "flaggems", "fla", "cce") for c in _library_cases(lib)]


def unavailable() -> dict[str, str]:
    """``{library: reason}`` for the libraries :func:`all_cases` left out so far."""
    return dict(_UNAVAILABLE)


def function_cases():
    """The corpus cases whose op is a library's own ``autograd.Function`` (``apply``), not a
    ``triton_op``: checked by ``corpus.check.check_function`` instead of ``opcheck``."""
    from .attorch.cases import CASES as attorch
    out = [*attorch]
    for lib in ("fla", "cce"):
        try:
            out += importlib.import_module(f".{lib}.cases", __name__).FUNCTION_CASES
        except UpstreamUnavailable as e:
            _UNAVAILABLE[lib] = str(e)
    return out
