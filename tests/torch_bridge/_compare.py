"""How the torch-differential tests compare two results' values (one rule for every file)."""

from __future__ import annotations

import numpy as np

# relative tolerance per dtype (about two ulps of the float formats; float64 near exact)
RTOL = {"float32": 2e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def values_match(dtype: str, a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` (the values of two tensors of dtype name ``dtype``, one shape) agree:
    integers and bools exactly; floats within ``RTOL`` (and an absolute 1% of it: a value that
    cancels to near 0 keeps an error of a few ulps of its terms), NaN where the other has NaN,
    and zeros of the same sign (-0.0 is observable)."""
    if dtype == "bool" or dtype.startswith(("int", "uint")):
        return bool((a == b).all())
    x, y = a.astype(float), b.astype(float)
    rtol = RTOL.get(dtype, 1e-6)
    zeros = (x == 0) & (y == 0)
    return bool(np.allclose(x, y, rtol=rtol, atol=rtol * 1e-2, equal_nan=True)
                and (np.isnan(x) == np.isnan(y)).all()
                and (np.signbit(x[zeros]) == np.signbit(y[zeros])).all())
