"""scatter_reduce where the array library has no exact ``ufunc.at`` for the reduction.

CuPy has only ``add.at`` (``multiply.at`` raises NotImplementedError, and ``maximum.at`` gave
float32-rounded float64 results on an H200: tests/test_gaps44_cuda.py and
tests/test_conformance.py's scatter_reduce rows failed on cuda). The core then combines repeated
positions itself. A MockBackend that declares CuPy's ``ufunc_at`` runs that path on cpu; its
results must equal the cpu device's (NumPy's ``ufunc.at``), values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.testing.backend import MockBackend


class AddAtOnly(MockBackend):
    ufunc_at = frozenset({"add"})


@pytest.fixture(scope="module")
def mock():
    with AddAtOnly("atmock") as be:
        yield be


def _case(rng, dtype, n_rows=4, n_cols=7, n_src=9, hot=None):
    if dtype == "bool":
        x = rng.random((n_rows, n_cols)) < 0.5
        s = rng.random((n_rows, n_src)) < 0.5
    elif dtype.startswith("int"):
        x = rng.integers(-5, 6, (n_rows, n_cols)).astype(dtype)
        s = rng.integers(-5, 6, (n_rows, n_src)).astype(dtype)
    else:
        x = rng.standard_normal((n_rows, n_cols)).astype(dtype)
        s = rng.standard_normal((n_rows, n_src)).astype(dtype)
    i = rng.integers(0, n_cols if hot is None else hot, (n_rows, n_src))
    return x, i, s


REDUCES = ("sum", "prod", "mean", "amax", "amin")


CASES = [(d, r) for d in ("float64", "float32", "int64", "int32", "bool") for r in REDUCES
         if (d, r) != ("bool", "mean")]    # mean of bool is refused on every device (torch's rule)


@pytest.mark.parametrize("dtype,reduce", CASES)
@pytest.mark.parametrize("include_self", [True, False])
def test_values_equal_cpu(mock, dtype, reduce, include_self):
    rng = np.random.default_rng(hash((dtype, reduce, include_self)) % 2**32)
    for hot in (None, 2, 1):          # spread, two hot positions, every value to one position
        x, i, s = _case(rng, dtype, hot=hot)
        want = tp.tensor(x).scatter_reduce(1, tp.tensor(i), tp.tensor(s), reduce,
                                           include_self=include_self)
        got = tp.tensor(x, device="atmock").scatter_reduce(
            1, tp.tensor(i, device="atmock"), tp.tensor(s, device="atmock"), reduce,
            include_self=include_self)
        assert got.device.type == "atmock" and got.dtype == want.dtype
        if dtype.startswith("float") and reduce in ("prod", "sum", "mean"):
            # the combine is a tree, NumPy's ufunc.at a left fold: rounding may differ
            tol = 1e-12 if dtype == "float64" else 1e-5
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def test_long_repeat_groups_and_nan(mock):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5))
    s = rng.standard_normal((2, 1000))
    s[0, 500] = np.nan
    i = rng.integers(0, 3, (2, 1000))
    for reduce in ("amax", "amin", "prod", "sum"):
        want = tp.tensor(x).scatter_reduce(1, tp.tensor(i), tp.tensor(s), reduce)
        got = tp.tensor(x, device="atmock").scatter_reduce(
            1, tp.tensor(i, device="atmock"), tp.tensor(s, device="atmock"), reduce)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12, atol=1e-300,
                                   equal_nan=True)


def test_scatter_multiply_and_gradients(mock):
    rng = np.random.default_rng(3)
    x, i, s = _case(rng, "float64", hot=3)
    x = np.abs(x) + 0.5   # prod's and amax's gradients away from ties and zeros
    s = np.abs(s) + 0.5
    for reduce in ("prod", "amax", "amin", "mean"):
        grads = []
        for dev in ("cpu", "atmock"):
            a = tp.tensor(x, device=dev, requires_grad=True)
            b = tp.tensor(s, device=dev, requires_grad=True)
            a.scatter_reduce(1, tp.tensor(i, device=dev), b, reduce).sum().backward()
            grads.append((a.grad.cpu().numpy(), b.grad.cpu().numpy()))
        for g_cpu, g_mock in zip(*grads):
            assert np.isfinite(g_mock).all(), reduce
            np.testing.assert_allclose(g_mock, g_cpu, rtol=1e-12, atol=1e-12)
    want = tp.tensor(x).scatter(1, tp.tensor(i), tp.tensor(s), reduce="multiply")
    got = tp.tensor(x, device="atmock").scatter(1, tp.tensor(i, device="atmock"),
                                               tp.tensor(s, device="atmock"), reduce="multiply")
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12)
