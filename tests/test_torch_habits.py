"""What torch users reach for first works the torch way: the Tensor methods and ``tensorplay``
functions of the common reductions/sorting/indexing ops, named-tuple results, ``dtype=float``,
matmul's dtype rule, ``tp.ops.ns.op.default``, ``python -m tensorplay`` and torch's printing.

Gradients of the new differentiable ops are checked by tests/test_builtin_ops.py (gradcheck and
gradgradcheck in float64 over its SAMPLES table) and on every device by tests/test_conformance.py.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake

F64 = tp.float64


def _np(t):
    return np.asarray(t.tolist())


@pytest.fixture
def a():
    return tp.tensor([[3.0, -1.0, 2.0, 0.5], [0.25, 5.0, -2.0, 1.0], [1.5, 1.5, -3.0, 4.0]])


# -- reductions and predicates ------------------------------------------------------------------
def test_all_any(a):
    m = a > 0
    assert tp.all(m).item() is False and tp.any(m).item() is True
    assert m.all(1).tolist() == [False, False, False] and m.any(0).tolist() == [True] * 4
    assert (a > -5).all().item() is True and a.all().dtype is tp.bool
    assert m.all(1, keepdim=True).shape == (3, 1)
    assert tp.tensor([1, 0]).any().item() is True and tp.zeros(0).all().item() is True


def test_isnan_isinf_isfinite():
    x = tp.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    assert tp.isnan(x).tolist() == [True, False, False, False]
    assert x.isinf().tolist() == [False, True, True, False]
    assert tp.isfinite(x).tolist() == [False, False, False, True]
    assert tp.isnan(tp.tensor([1, 2])).tolist() == [False, False]


def test_prod_and_cumsum(a):
    np.testing.assert_allclose(_np(a.prod(1)), _np(a).prod(1), rtol=1e-6)
    assert a.prod().shape == () and tp.prod(a, 0, keepdim=True).shape == (1, 4)
    assert tp.tensor([1, 2, 3]).prod().dtype is tp.int64
    assert tp.tensor([2, 3], dtype=tp.int32).prod().item() == 6
    np.testing.assert_allclose(_np(tp.cumsum(a, 1)), np.cumsum(_np(a), 1), rtol=1e-6)
    assert tp.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]
    assert tp.tensor([1, 2], dtype=tp.int8).cumsum(0).dtype is tp.int64
    assert a.cumsum(0, dtype=float).dtype is F64


def test_prod_gradient_with_zeros_is_exact():
    x = tp.tensor([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], dtype=F64,
                  requires_grad=True)
    x.prod(1).sum().backward()
    assert x.grad.tolist() == [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]]
    assert tp.autograd.gradcheck(lambda t: t.prod(1), (x,))


def test_max_min_with_dim_return_named_tuples(a):
    r = a.max(1)
    assert type(r) is tp.return_types.max and isinstance(r, tuple)
    assert r.values.tolist() == [3.0, 5.0, 4.0] and r.indices.tolist() == [0, 1, 3]
    values, indices = tp.min(a, 0)
    assert values.tolist() == [0.25, -1.0, -3.0, 0.5] and indices.tolist() == [1, 0, 2, 0]
    assert tp.min(a, 0).indices.dtype is tp.int64
    assert a.max(1, keepdim=True).values.shape == (3, 1)
    assert tp.max(a).item() == 5.0 and tp.min(a).item() == -3.0
    assert tp.max(a, tp.zeros(4)).tolist()[0] == [3.0, 0.0, 2.0, 0.5]
    assert tp.argmax(a).item() == 5 and tp.argmin(a, 1).tolist() == [1, 2, 2]
    assert a.argmin().item() == 10
    assert "values=" in repr(r) and "indices=" in repr(r)


def test_max_dim_gradient_goes_to_the_selected_element():
    x = tp.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]], dtype=F64, requires_grad=True)
    x.max(1).values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]   # torch: the index's element
    y = tp.tensor([[1.0, 3.0, 2.5], [2.0, 0.0, -1.0]], dtype=F64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: t.min(0).values, (y,))


def test_sort_and_argsort(a):
    s = a.sort(1)
    assert type(s) is tp.return_types.sort
    np.testing.assert_array_equal(_np(s.values), np.sort(_np(a), 1))
    np.testing.assert_array_equal(_np(s.indices), np.argsort(_np(a), 1, kind="stable"))
    d = tp.sort(a, 0, descending=True)
    np.testing.assert_array_equal(_np(d.values), -np.sort(-_np(a), 0))
    assert tp.argsort(a, 1).tolist() == s.indices.tolist()
    # stable: equal values keep their order, ascending and descending
    x = tp.tensor([2, 1, 2, 1, 0])
    assert x.argsort(stable=True).tolist() == [4, 1, 3, 0, 2]
    assert x.sort(descending=True, stable=True).indices.tolist() == [0, 2, 1, 3, 4]
    n = tp.tensor([1.0, float("nan"), -1.0])
    assert n.sort().indices.tolist() == [2, 0, 1]       # NaN sorts last, as in torch


def test_sort_gradient():
    x = tp.tensor([[0.3, -1.2, 2.0], [1.0, 0.1, -0.5]], dtype=F64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: t.sort(1, descending=True).values * tp.tensor(
        [1.0, 2.0, 3.0], dtype=F64), (x,))


def test_gather_and_scatter_add():
    x = tp.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    idx = tp.tensor([[2, 0], [1, 1]])
    assert tp.gather(x, 1, idx).tolist() == [[3.0, 1.0], [5.0, 5.0]]
    assert x.gather(0, tp.tensor([[1, 0, 1]])).tolist() == [[4.0, 2.0, 6.0]]
    out = tp.zeros(2, 3).scatter_add(1, idx, tp.ones(2, 2))
    assert out.tolist() == [[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]]
    with pytest.raises(RuntimeError, match=r"gather\(\): index 3 is out of bounds for dimension 1"):
        x.gather(1, tp.tensor([[3], [0]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(1, tp.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        with fake.FakeTensorMode():
            fake.from_real(x).gather(1, fake.from_real(tp.tensor([0, 1])))
    w = tp.tensor([[0.5, -1.0, 2.0], [1.5, 0.2, 0.7]], dtype=F64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: t.gather(1, idx), (w,))


def test_floor_ceil_round():
    x = tp.tensor([-1.5, -0.5, 0.5, 1.5, 2.5, 1.26])
    assert tp.floor(x).tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0, 1.0]
    assert x.ceil().tolist() == [-1.0, -0.0, 1.0, 2.0, 3.0, 2.0]
    assert tp.round(x).tolist() == [-2.0, -0.0, 0.0, 2.0, 2.0, 1.0]     # halves to even
    np.testing.assert_allclose(x.round(decimals=1).tolist(), [-1.5, -0.5, 0.5, 1.5, 2.5, 1.3],
                               rtol=1e-6)
    assert tp.tensor([1234.0]).round(decimals=-2).tolist() == [1200.0]
    assert tp.tensor([3, -2]).floor().tolist() == [3, -2]
    g = tp.tensor([0.3, 1.7], dtype=F64, requires_grad=True)
    g.floor().sum().backward()
    assert g.grad.tolist() == [0.0, 0.0]


# -- factories ------------------------------------------------------------------------------------
def test_eye_linspace_randint():
    assert tp.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]] and tp.eye(2).dtype is tp.float32
    assert tp.eye(2, 3, dtype=tp.int64).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert tp.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    v = tp.linspace(-1.0, 2.0, 7, dtype=float)
    assert v.dtype is F64 and v.tolist()[0] == -1.0 and v.tolist()[-1] == 2.0
    assert tp.linspace(3, 3, 1).tolist() == [3.0] and tp.linspace(0, 1, 0).shape == (0,)
    tp.manual_seed(0)
    r = tp.randint(10, (3, 4))
    assert r.dtype is tp.int64 and r.shape == (3, 4)
    assert ((r >= 0) & (r < 10)).all().item()
    r2 = tp.randint(-3, 3, size=(1000,), dtype=tp.int32)
    assert r2.dtype is tp.int32 and set(r2.tolist()) == set(range(-3, 3))
    tp.manual_seed(5)
    x = tp.randint(0, 100, (5,))
    tp.manual_seed(5)
    assert tp.randint(0, 100, (5,)).tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="randint"):
        tp.randint(3, 3, (2,))
    with fake.FakeTensorMode():
        f = tp.randint(0, 5, (2, 2))
        assert f.is_fake and f.shape == (2, 2) and tp.eye(3).shape == (3, 3)


# -- dtypes -------------------------------------------------------------------------------------
def test_python_types_as_dtypes_mean_what_torch_says():
    assert tp.zeros(2, dtype=float).dtype is F64
    assert tp.ones(2, dtype=int).dtype is tp.int64 and tp.ones(2, dtype=bool).dtype is tp.bool
    assert tp.tensor([1, 2], dtype=float).dtype is F64
    assert tp.arange(3, dtype=float).dtype is F64 and tp.full((2,), 1, dtype=float).dtype is F64
    x = tp.tensor([1.0, 2.0])
    assert x.to(float).dtype is F64 and x.sum(dtype=float).dtype is F64
    assert x.mean(dtype=float).dtype is F64 and tp.zeros_like(x, dtype=float).dtype is F64
    assert tp.rand(2, dtype=float).dtype is F64 and tp.eye(2, dtype=float).dtype is F64


def test_matmul_refuses_mixed_dtypes_like_torch():
    a32, a64 = tp.ones(2, 2), tp.ones(2, 2, dtype=F64)
    msg = r"expected m1 and m2 to have the same dtype, but got: float != double"
    with pytest.raises(RuntimeError, match=msg):
        a32 @ a64
    with pytest.raises(RuntimeError, match=r"but got: double != float"):
        tp.matmul(a64, tp.ones(2))
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.ones(2, dtype=tp.int64) @ tp.ones(2)
    with pytest.raises(RuntimeError, match=msg):
        with fake.FakeTensorMode():
            fake.from_real(a32) @ fake.from_real(a64)
    assert (a64 @ a64).dtype is F64 and (tp.ones(2, 2, dtype=tp.int64) @ tp.ones(
        2, dtype=tp.int64)).dtype is tp.int64


# -- ops namespace, python -m -------------------------------------------------------------------
def test_overload_packet_default_resolves():
    assert tp.ops.tp.add.default is tp.ops.tp.add
    ws = pytest.importorskip("tensorplay_example_ops")   # noqa: F841 - the example pack
    op = tp.ops.example.weighted_sum
    assert op.default is op
    x, w = tp.ones(3), tp.ones(3)
    assert op.default(x, w).tolist() == op(x, w).tolist()


def test_python_dash_m_runs_the_cli():
    p = subprocess.run([sys.executable, "-m", "tensorplay", "ops"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "tp::add" in p.stdout
    h = subprocess.run([sys.executable, "-m", "tensorplay", "--help"], capture_output=True,
                       text=True, timeout=120)
    assert h.returncode == 0 and "check" in h.stdout


# -- printing -----------------------------------------------------------------------------------
def test_repr_float32_at_torch_precision():
    assert repr(tp.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(tp.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tp.tensor(1.5)) == "tensor(1.5000)"
    assert repr(tp.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(tp.tensor([float("nan"), 1.0, -float("inf")])) == "tensor([nan, 1., -inf])"
    assert repr(tp.tensor([True, False])) == "tensor([ True, False])"
    assert repr(tp.tensor([1, -20])) == "tensor([  1, -20])"
    assert repr(tp.tensor([0.5], dtype=F64)) == "tensor([0.5000], dtype=tensorplay.float64)"
    assert repr(tp.tensor([[1.0, 2.5], [3.0, 4.0]])) == ("tensor([[1.0000, 2.5000],\n"
                                                          "        [3.0000, 4.0000]])")
    assert repr(tp.zeros(0)) == "tensor([])"
    assert repr(tp.zeros(0, 3, dtype=tp.int64)) == "tensor([], size=(0, 3), dtype=tensorplay.int64)"
    assert repr(tp.ones(2, requires_grad=True)) == "tensor([1., 1.], requires_grad=True)"
    assert repr(tp.ones(1, requires_grad=True) * 2) == "tensor([2.], grad_fn=<tp::mulBackward>)"


def test_repr_wraps_at_80_columns_and_summarises_large_tensors():
    r = repr(tp.ones(30) / 3)
    assert all(len(line) <= 80 for line in r.splitlines()) and r.count("\n") == 3
    assert repr(tp.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    big = repr(tp.arange(3000.0).reshape(300, 10) / 7)
    assert "..." in big and big.count("\n") < 20
    assert repr(tp.arange(1000)).count("...") == 0          # threshold: more than 1000
    three = repr(tp.arange(8).reshape(2, 2, 2))
    assert three == "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])"


def test_repr_is_silent_and_cheap_on_nonfinite_and_large_values():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = tp.tensor([math.inf, -math.inf, math.nan, 0.0, 1e10])
        assert "inf" in repr(x) and "nan" in repr(x) and "e+10" in repr(x)


def test_new_ops_compile_and_run_on_fake_tensors(a):
    def prog(x):
        s = x.sort(1)
        return (s.values + x.cumsum(0) + x.max(1, keepdim=True).values +
                x.gather(1, s.indices).floor(), x.prod(1), x.argmin(1), x.isnan().any())
    f = tp.compile(prog)
    for got, want in zip(f(a), prog(a)):
        assert got.dtype is want.dtype and got.tolist() == want.tolist()
    with fake.FakeTensorMode():
        out = prog(fake.from_real(a))
    assert [o.shape for o in out] == [(3, 4), (3,), (3,), ()]
