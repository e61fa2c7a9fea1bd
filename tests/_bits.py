"""Bit-for-bit comparison of tensors (compiled vs eager results), shared by the fusion tests."""

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
