"""A NumPy scalar given where an op takes a number acts as the Python number torch reads it as
(session 60): ``np.integer`` -> ``int``, ``np.floating`` and ``np.bool_`` -> ``float`` (torch's
argument parser reads a NumPy bool as a double), eagerly and under ``tensorplay.compile``.

Before, eager passed the NumPy scalar to the kernel, which promoted it by NumPy's rules
(``int64 tensor * np.float64(1.5)`` gave float64, torch float32; ``bfloat16 * np.float64``
gave float64, torch bfloat16), and ``tensorplay.compile`` refused it ("must be a Tensor or a
Python number"). Expected values are the same call with the Python number, so the test states
the rule, not a table.
"""
import math

import pytest

import tensorplay as tp

np = pytest.importorskip("numpy")


def _reading(s):
    """The Python number torch reads NumPy scalar ``s`` as."""
    if isinstance(s, np.integer):
        return int(s)
    return float(s)


SCALARS = [np.float32(2.5), np.float64(-1.5), np.float16(0.5), np.int64(3), np.int8(-2),
           np.uint8(7), np.bool_(True)]
DTYPES = ["float32", "float16", "bfloat16", "int64", "int32", "bool"]
OPS = {
    "mul": lambda x, s: x * s, "radd": lambda x, s: s + x, "sub": lambda x, s: x - s,
    "div": lambda x, s: tp.div(x, s), "lt": lambda x, s: x < s, "clamp_min": lambda x, s: x.clamp(min=s),
    "where": lambda x, s: tp.where(x > 1, x, s), "add_alpha": lambda x, s: tp.add(x, x, alpha=s),
    "masked_fill": lambda x, s: x.masked_fill(x > 1, s), "full_like": lambda x, s: tp.full_like(x, s),
    "pow": lambda x, s: x ** s, "rpow": lambda x, s: s ** x, "fill_": lambda x, s: x.clone().fill_(s),
    "remainder": lambda x, s: x % s, "floor_divide": lambda x, s: x // s, "fmod": lambda x, s: tp.fmod(x, s),
    "eq": lambda x, s: x == s, "bitwise_and": lambda x, s: x & s, "lerp": lambda x, s: tp.lerp(x, x * 2, s),
    "addcmul": lambda x, s: tp.addcmul(x, x, x, value=s), "sub_alpha": lambda x, s: x.sub(x, alpha=s),
    "clamp_both": lambda x, s: tp.clamp(x, s, s), "mul_": lambda x, s: x.clone().mul_(s),
    "add_": lambda x, s: x.clone().add_(s), "nan_to_num": lambda x, s: tp.nan_to_num(x, nan=s),
    "rsub_fn": lambda x, s: tp.rsub(x, s), "sub_number_first": lambda x, s: tp.sub(s, x),
    "pow_number_first": lambda x, s: tp.pow(s, x),
    "leaky_relu": lambda x, s: tp.nn.functional.leaky_relu(x, s) if hasattr(tp, "nn") else x,
}


def _same(a, b):
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.tolist() == b.tolist() or str(a.tolist()) == str(b.tolist()), (a.tolist(), b.tolist())


def _cases():
    for name in OPS:
        for dt in DTYPES:
            for s in SCALARS:
                yield pytest.param(name, dt, s, id=f"{name}-{dt}-{type(s).__name__}")


def _run(name, x, s):
    try:
        return OPS[name](x, s), None
    except Exception as e:   # noqa: BLE001 - both readings must fail alike
        return None, e


@pytest.mark.parametrize("name, dt, s", list(_cases()))
def test_eager_reads_a_numpy_scalar_as_torch_does(name, dt, s):
    x = tp.tensor([0.0, 1.0, 2.0, 3.0]).to(getattr(tp, dt))
    want, werr = _run(name, x, _reading(s))
    got, gerr = _run(name, x, s)
    if werr is not None:
        assert gerr is not None and type(gerr) is type(werr), (werr, gerr)
        return
    assert gerr is None, gerr
    _same(got, want)


@pytest.mark.parametrize("name", [n for n in OPS if n != "bitwise_and"])   # (float x here)
def test_compiled_functions_take_numpy_scalars(name):
    x = tp.tensor([0.0, 1.0, 2.0, 3.0])
    for s in (np.float32(2.5), np.int64(3), np.bool_(True)):
        f = tp.compile(lambda t, v: OPS[name](t, v))
        _same(f(x, s), OPS[name](x, _reading(s)))
        g = tp.compile(lambda t: OPS[name](t, s))       # a constant of the function
        _same(g(x), OPS[name](x, _reading(s)))


def test_backward_through_a_numpy_scalar_keeps_the_dtype():
    x = tp.ones(3, dtype=tp.float16, requires_grad=True)
    (x * np.float64(2.5)).sum().backward()
    assert x.grad.dtype == tp.float16 and x.grad.tolist() == [2.5] * 3


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("e", [-2, -1, -0.5, np.int8(-2)])
def test_negative_powers_of_zero_are_inf_without_a_numpy_warning(dt, e):
    # torch: inf, silently; NumPy's divide warned from the bfloat16 kernel's x ** -2 step
    import warnings
    x = tp.tensor([0.0, 2.0]).to(getattr(tp, dt))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = (x ** e).float().tolist()
    assert r[0] == float("inf") and r[1] == pytest.approx(2.0 ** float(e), rel=1e-2)


@pytest.mark.parametrize("make", [np.float32, np.int64, np.float64])
def test_a_numpy_scalar_global_rebound_to_an_equal_value_keeps_one_graph(make):
    # a fresh NumPy scalar of the same value each call is the same constant (found by a new
    # user: 20 calls, 21 captures), in a list item too; a changed value recaptures
    ns = {"S": make(3), "T": [make(2)]}
    exec("def body(t):\n    return t * S + T[0]\n", ns)
    f = tp.compile(ns["body"])
    x = tp.tensor([1.0, 2.0])
    for _ in range(5):
        ns["S"], ns["T"][0] = make(3), make(2)
        assert f(x).tolist() == [5.0, 8.0]
    assert f.captures == 1, f.captures
    ns["S"] = make(4)
    assert f(x).tolist() == [6.0, 10.0]
    ns["T"][0] = make(1)
    assert f(x).tolist() == [5.0, 9.0]


def test_a_numpy_nan_global_keeps_one_graph():
    ns = {"S": np.float32("nan")}
    exec("def body(t):\n    return t + S\n", ns)
    f = tp.compile(ns["body"])
    for _ in range(4):
        ns["S"] = np.float32("nan")
        assert math.isnan(f(tp.tensor([1.0])).tolist()[0])
    assert f.captures == 1, f.captures


@pytest.mark.parametrize("bound", ["min", "max"])
@pytest.mark.parametrize("make", [np.int64, np.int32, np.uint16])
def test_a_numpy_int_bound_out_of_an_integer_dtypes_range_is_refused_as_a_python_int(bound, make):
    # it wrapped silently (int8 clamp(max=np.int64(200)) gave -56 everywhere); torch and a
    # Python int raise "value cannot be converted to type int8 without overflow"
    x = tp.tensor([1, 3, -2], dtype=tp.int8)
    with pytest.raises(RuntimeError, match="overflow"):
        x.clamp(**{bound: 200})
    with pytest.raises(RuntimeError, match="overflow"):
        x.clamp(**{bound: make(200)})
    assert x.clamp(**{bound: make(2)}).tolist() == x.clamp(**{bound: 2}).tolist()
