"""Shared by the cpu fusion tests: the issue's 8-op chain and a bit-for-bit comparison of
compiled and eager results."""

from __future__ import annotations

import numpy as np


def _bits(t):
    a = np.ascontiguousarray(t.numpy())
    return a.view(np.uint8).reshape(-1) if a.dtype != np.bool_ else a


def assert_bits(got, want):
    """``got`` and ``want`` (a tensor or a tuple/list of them) have the same dtypes, shapes and
    bytes: NaN payloads, signed zeros and subnormals included."""
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape)
        assert np.array_equal(_bits(g), _bits(w)), "compiled differs from eager in some bits"


def chain8(x, y):
    """The 8-op elementwise chain of the fusion benchmarks (issue 32 item 7)."""
    a = x * y
    a = a + 1.0
    a = a * 0.5
    a = a - y
    a = a.relu()
    a = a + x
    a = a * 2.0
    return a.tanh()
