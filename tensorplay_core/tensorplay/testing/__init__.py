"""Helpers for operator authors: ``opcheck``, ``assert_close``, sample inputs, plugin checks, and
``MockBackend`` (``tensorplay.testing.backend``: an in-memory device for tests)."""

from .assertions import allclose, assert_close
from .backend import MockBackend
from .registry import drop_ops
from .plugin_check import check_plugin, opcheck_plugin_tests, summarize as summarize_checks

__all__ = ["MockBackend", "allclose", "assert_close", "check_plugin", "drop_ops",
           "opcheck_plugin_tests", "summarize_checks"]
