"""Numerical edge cases behave as in torch: NaN propagation, empty dimensions, silent floating
point exceptions, and argument errors of the ``*_like`` factories (cpu; the GPU run repeats the
device-independent parts through tests/test_conformance.py)."""

from __future__ import annotations

import math
import warnings

import pytest

import tensorplay as tp
from tensorplay import fake

NAN = float("nan")


# -- relu propagates NaN (eager, autograd and compiled/fused) ------------------------------------
@pytest.mark.parametrize("dt", [tp.float16, tp.float32, tp.float64], ids=str)
def test_relu_propagates_nan(dt):
    x = tp.tensor([NAN, -1.0, 0.0, 2.0], dtype=dt)
    got = tp.relu(x).tolist()
    assert math.isnan(got[0]) and got[1:] == [0.0, 0.0, 2.0]
    assert math.isnan(x.relu().tolist()[0])
    y = x.clone()
    y.relu_()
    assert math.isnan(y.tolist()[0])


def test_relu_nan_in_a_compiled_chain():
    # the compiled path fuses elementwise chains; the fused kernel must keep NaN too
    f = tp.compile(lambda x: (x * 1.0 + 0.0).relu() * 2.0)
    x = tp.tensor([NAN, -1.0, 3.0] * 23000)    # over 65536 elements: the blocked cpu fuser
    out = f(x).tolist()
    assert math.isnan(out[0]) and out[1] == 0.0 and out[2] == 6.0


def test_relu_gradient_at_nan_and_zero_matches_torch():
    # torch's threshold_backward: grad is 0 where out <= 0, else passes through (NaN included)
    x = tp.tensor([NAN, -1.0, 0.0, 2.0], dtype=tp.float64, requires_grad=True)
    x.relu().backward(tp.ones(4, dtype=tp.float64))
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]


# -- softmax / log_softmax over a 0-size dimension -----------------------------------------------
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((3, 0), 1), ((3, 0), 0), ((0,), 0), ((0, 4), 1),
                                       ((2, 0, 3), -1)])
def test_softmax_over_empty_dimension_is_empty(fn, shape, dim):
    x = tp.zeros(*shape)
    out = getattr(tp, fn)(x, dim)
    assert out.shape == shape and out.dtype is tp.float32
    with fake.FakeTensorMode():
        f = getattr(tp, fn)(fake.from_real(x), dim)
    assert f.shape == shape


def test_softmax_over_empty_dimension_backward():
    x = tp.zeros(3, 0, dtype=tp.float64, requires_grad=True)
    tp.softmax(x, 1).sum().backward()
    assert x.grad.shape == (3, 0)


# -- argmax / argmin / amax over an empty dimension: torch's errors, fake and real alike ----------
_EMPTY_REDUCTIONS = [
    ("argmax", lambda x: x.argmax(1), IndexError, r"argmax\(\): Expected reduction dim 1 to have "
                                                  r"non-zero size"),
    ("argmax_all", lambda x: x.argmax(), IndexError, r"argmax\(\): Expected reduction dim to be "
                                                       r"specified for input.numel\(\) == 0"),
    ("amax", lambda x: x.amax(1), IndexError, r"amax\(\): Expected reduction dim 1 to have "
                                              r"non-zero size"),
    ("amin", lambda x: x.amin(-1), IndexError, r"amin\(\): Expected reduction dim 1 to have "
                                               r"non-zero size"),
    ("amax_all", lambda x: x.amax(), RuntimeError, r"amax\(\): Expected reduction dim to be "
                                                   r"specified"),
    ("argmin", lambda x: x.argmin(1), IndexError, r"argmin\(\): Expected reduction dim 1 to have "
                                                  r"non-zero size"),
    ("max_dim", lambda x: x.max(1), IndexError, r"max\(\): Expected reduction dim 1 to have "
                                                r"non-zero size"),
    ("min_dim", lambda x: x.min(1), IndexError, r"min\(\): Expected reduction dim 1 to have "
                                                r"non-zero size"),
]


@pytest.mark.parametrize("name,fn,exc,msg", _EMPTY_REDUCTIONS, ids=[c[0] for c in _EMPTY_REDUCTIONS])
def test_reduction_over_empty_dim_raises_torchs_error(name, fn, exc, msg):
    x = tp.zeros(2, 0)
    with pytest.raises(exc, match=msg):
        fn(x)
    with pytest.raises(exc, match=msg):         # the fake rule says the same (cuda runs it too)
        with fake.FakeTensorMode():
            fn(fake.from_real(x))


def test_reduction_over_a_nonempty_dim_of_an_empty_tensor_is_empty():
    x = tp.zeros(0, 3)
    assert x.argmax(1).shape == (0,) and x.amax(1).shape == (0,)
    assert tp.zeros(2, 0).argmax(0).shape == (0,)
    assert tp.zeros(2, 0).sum(1).tolist() == [0.0, 0.0]


# -- *_like factories refuse non-tensors ----------------------------------------------------------
@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like",
                                  "rand_like", "randn_like"])
@pytest.mark.parametrize("bad", [0, 1.5, [1, 2], None])
def test_like_factories_raise_type_error_naming_the_argument(name, bad):
    args = (bad, 1.0) if name == "full_like" else (bad,)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' .*must be Tensor, "
                                        rf"not {type(bad).__name__}"):
        getattr(tp, name)(*args)


# -- floating point exceptions are silent, as in torch --------------------------------------------
_SILENT = {
    "div_by_zero": lambda: tp.tensor([1.0, -1.0, 0.0]) / 0,
    "div_by_zero_tensor": lambda: tp.tensor([1.0, 0.0]) / tp.zeros(2),
    "int_true_div_by_zero": lambda: tp.tensor([1, 0]) / tp.tensor([0, 0]),
    "sqrt_negative": lambda: tp.tensor([-1.0, 4.0]).sqrt(),
    "rsqrt_zero": lambda: tp.tensor([0.0]).rsqrt(),
    "log_zero": lambda: tp.tensor([0.0, -1.0]).log(),
    "exp_overflow": lambda: tp.tensor([1000.0]).exp(),
    "pow_overflow": lambda: tp.tensor([1e30]) ** 4,
    "mean_empty": lambda: tp.zeros(0).mean(),
    "mean_empty_dim": lambda: tp.zeros(3, 0).mean(1),
    "inf_minus_inf": lambda: tp.tensor([math.inf]) - math.inf,
    "remainder_float_zero": lambda: tp.tensor([1.0]) % 0.0,
    "floor_divide_float_zero": lambda: tp.tensor([1.0]) // 0.0,
    "sigmoid_large": lambda: tp.tensor([-1000.0], dtype=tp.float32).sigmoid(),
    "softmax_inf": lambda: tp.softmax(tp.tensor([math.inf, 1.0]), 0),
    "float16_overflow": lambda: tp.tensor([60000.0], dtype=tp.float16) * 10,
    "cast_nan_to_int": lambda: tp.tensor([NAN]).to(tp.int32),
    "compiled_fused_chain": lambda: tp.compile(lambda x: (x / 0 - x / 0).sqrt() + 1)(
        tp.zeros(70000)),
    "backward_of_sqrt_at_zero": lambda: tp.zeros(2, requires_grad=True).sqrt().sum().backward(),
}


@pytest.mark.parametrize("name", sorted(_SILENT))
def test_no_numpy_runtime_warnings_leak(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _SILENT[name]()


def test_silent_results_follow_ieee():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (tp.tensor([1.0, -1.0]) / 0).tolist() == [math.inf, -math.inf]
        assert math.isnan((tp.tensor([0.0]) / 0).item())
        assert math.isnan(tp.tensor([-1.0]).sqrt().item())
        assert tp.tensor([0.0]).log().item() == -math.inf
        assert math.isnan(tp.zeros(0).mean().item())
        m = tp.zeros(3, 0).mean(1)
        assert m.shape == (3,) and all(math.isnan(v) for v in m.tolist())


def test_quiet_kernels_do_not_change_the_callers_numpy_state():
    np = pytest.importorskip("numpy")
    before = np.geterr()
    tp.tensor([1.0]) / 0
    assert np.geterr() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):     # the user's own numpy code still warns
            np.array([1.0]) / 0


def test_tensor_from_out_of_range_python_floats_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tp.tensor([1e300, -1e300], dtype=tp.float32).tolist() == [math.inf, -math.inf]
        assert tp.tensor([1e10], dtype=tp.float16).tolist() == [math.inf]


@pytest.mark.cuda
def test_relu_nan_on_cuda_eager_and_fused():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    x = tp.tensor([NAN, -1.0, 3.0] * 1000, device="cuda")
    assert math.isnan(x.relu().cpu().tolist()[0])
    for dt in (tp.float32, tp.float64):     # the CuPy fuser's C expression keeps NaN too
        f = tp.compile(lambda t: (t * 1.0 + 0.0).relu() * 2.0)
        out = f(x.to(dt)).cpu().tolist()
        assert math.isnan(out[0]) and out[1] == 0.0 and out[2] == 6.0
    e = tp.zeros(2, 0, device="cuda")
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim 1"):
        e.argmax(1)
    assert tp.softmax(e, 1).shape == (2, 0)
