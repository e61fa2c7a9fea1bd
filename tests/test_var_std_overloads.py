"""``var``/``std`` take torch's overloads: ``var(x, dim, unbiased, keepdim)`` positionally (the
third positional is ``unbiased``), ``var(x, unbiased)`` with a bool, ``var(x, dim,
correction=, keepdim=)``. Found comparing with torch 2.13: ``tp.var(x, 0, True)`` kept the dim
(read True as keepdim), ``tp.var(x, True)`` reduced dim 1, a one-element variance was 0 (torch:
nan). Expected values are torch's."""

import math

import pytest

import tensorplay as tp

X = [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]]


def _close(t, expected):
    got = t.tolist()
    flat_g = got if isinstance(got, list) else [got]
    flat_e = expected if isinstance(expected, list) else [expected]
    if flat_g and isinstance(flat_g[0], list):
        flat_g = [v for r in flat_g for v in r]
        flat_e = [v for r in flat_e for v in r]
    assert len(flat_g) == len(flat_e) and all(
        math.isclose(a, b, rel_tol=1e-5) for a, b in zip(flat_g, flat_e)), (got, expected)


@pytest.mark.parametrize("fn", [tp.var, tp.Tensor.var])
def test_var_overloads(fn):
    x = tp.tensor(X)
    r = fn(x, 0, True)
    assert r.shape == (3,)
    _close(r, [2.0, 4.5, 12.5])
    _close(fn(x, True), 8.0)
    _close(fn(x, False), 6.666666666666667)
    r = fn(x, 1, False, True)
    assert r.shape == (2, 1)
    _close(r, [[1.5555555555555556], [6.222222222222222]])
    r = fn(x, 1, correction=0, keepdim=True)
    assert r.shape == (2, 1)
    _close(r, [[1.5555555555555556], [6.222222222222222]])
    _close(fn(x, dim=1, unbiased=False), [1.5555555555555556, 6.222222222222222])


def test_std_overloads():
    x = tp.tensor(X)
    assert tp.std(x, 0, True).shape == (3,)
    _close(tp.std(x, dim=1, unbiased=False), [1.247219128924647, 2.494438257849294])
    _close(x.std(True), math.sqrt(8.0))


def test_degrees_of_freedom_at_or_below_zero_give_nan_or_inf():
    assert math.isnan(tp.tensor([1.0]).var().item())
    assert math.isnan(tp.tensor([1.0]).std().item())
    assert tp.tensor([1.0, 2.0]).var(correction=3).item() == float("inf")


def test_integer_input_is_refused():
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        tp.tensor([1, 2]).var()


def test_bad_positional_arguments_are_refused():
    x = tp.tensor(X)
    with pytest.raises(TypeError):
        x.var(0, 1)               # torch: unbiased must be a bool
    with pytest.raises(TypeError):
        x.var(0, True, unbiased=False)
