"""Helpers for operator authors: ``opcheck``, ``assert_close``, sample inputs, plugin checks."""

from .assertions import allclose, assert_close
from .plugin_check import check_plugin, opcheck_plugin_tests, summarize as summarize_checks

__all__ = ["allclose", "assert_close", "check_plugin", "opcheck_plugin_tests", "summarize_checks"]
