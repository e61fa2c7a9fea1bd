"""Helpers for operator authors: ``opcheck`` (the function, as ``tensorplay.library.opcheck``), ``assert_close``, sample inputs, plugin checks, and
``MockBackend`` (``tensorplay.testing.backend``: an in-memory device for tests)."""

from .assertions import allclose, assert_close
from .backend import MockBackend
from .registry import drop_ops
from .plugin_check import check_plugin, opcheck_plugin_tests, summarize as summarize_checks
# the function (as ``tensorplay.library.opcheck``), not its module: ``from tensorplay.testing
# import opcheck`` is what users write. The module stays importable by its full name
# (``importlib.import_module("tensorplay.testing.opcheck")``).
from .opcheck import opcheck  # noqa: E402

__all__ = ["MockBackend", "allclose", "assert_close", "check_plugin", "drop_ops", "opcheck",
           "opcheck_plugin_tests", "summarize_checks"]
