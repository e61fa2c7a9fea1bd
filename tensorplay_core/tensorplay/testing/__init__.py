"""Helpers for operator authors: ``opcheck``, ``assert_close``, sample inputs, plugin checks."""

from .assertions import allclose, assert_close

__all__ = ["allclose", "assert_close"]
