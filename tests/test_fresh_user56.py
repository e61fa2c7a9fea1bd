"""Divergences from torch 2.13 a fresh user found in session 56 (small ones, one test each)."""
import pytest

import tensorplay as tp


@pytest.mark.parametrize("call, api", [
    (lambda: tp.empty(0).max(), "max()"), (lambda: tp.empty(0).min(), "min()"),
    (lambda: tp.max(tp.empty(0)), "max()"), (lambda: tp.min(tp.empty(2, 0)), "min()"),
    (lambda: tp.empty(0, requires_grad=True).max(), "max()"),
    (lambda: tp.empty(0).amin(), "amin()"),
])
def test_an_empty_reduction_error_names_the_function_called(call, api):
    # torch: "max(): Expected reduction dim to be specified for input.numel() == 0. ..."
    with pytest.raises(RuntimeError) as e:
        call()
    assert str(e.value).startswith(api + ": Expected reduction dim to be specified"), e.value
