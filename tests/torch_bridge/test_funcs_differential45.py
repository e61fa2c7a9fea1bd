"""torch's module-level functions that TensorPlay lacked (session 45, h-funcs45), and advanced
indices whose broadcast result is empty, against torch itself. Companion of tests/test_funcs45.py
(torch-free).

Each case builds its inputs with the library it is given (``L`` is ``torch`` or ``tensorplay``)
and both libraries must agree: the same values, shapes and dtypes, whether the result is a view
of the input (``y._base is x``) or ``x`` itself, the gradients of the inputs, or both raise
(the error classes compared; not the words)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402


def _desc(L, v):
    """A comparable description of a result: tensors by shape, dtype name and values."""
    if isinstance(v, (L.Tensor,)):
        return ("T", tuple(v.shape), str(v.dtype).rsplit(".", 1)[-1], v.detach().tolist())
    if isinstance(v, (tuple, list)):
        return (type(v).__name__ if type(v) in (tuple, list) else "tuple",
                [_desc(L, e) for e in v])
    return ("V", v)


def _run(L, fn):
    try:
        return ("ok",) + tuple(fn(L))
    except (RuntimeError, IndexError, TypeError, ValueError) as e:
        return ("raise", type(e).__name__)


def _x(L, *shape, grad=True, dtype=None):
    n = 1
    for s in shape:
        n *= s
    dt = getattr(L, dtype or "float32")
    x = (L.arange(n, dtype=dt) - n / 3).reshape(tuple(shape)) if n else \
        L.zeros(*shape, dtype=dt)
    return x.requires_grad_() if grad else x


def _unary(name, *args, shape=(2, 3, 4), view=False, grad=True, dtype=None, **kw):
    """Case: ``L.<name>(x, *args, **kw)``: value, view-ness, identity and the gradient of x."""
    def f(L):
        x = _x(L, *shape, grad=grad, dtype=dtype)
        y = getattr(L, name)(x, *args, **kw)
        ys = y if isinstance(y, (tuple, list)) else (y,)
        info = [(e is x, e._base is x) for e in ys if isinstance(e, L.Tensor)] if view else None
        g = None
        if grad and any(isinstance(e, L.Tensor) and e.requires_grad for e in ys):
            sum(((e * (L.arange(e.numel()).reshape(e.shape) + 1)).sum() for e in ys
                 if isinstance(e, L.Tensor) and e.requires_grad), L.zeros(())).backward()
            g = x.grad.clone().tolist()   # (torch's zero grads may have no storage)
        return _desc(L, y), info, g
    return f


def _many(name, shapes, *args, **kw):
    """Case: ``L.<name>([x0, x1, ...], ...)`` with gradients of every input."""
    def f(L):
        xs = [_x(L, *s) for s in shapes]
        y = getattr(L, name)(xs, *args, **kw)
        (y * (L.arange(y.numel()).reshape(y.shape) + 1)).sum().backward()
        return _desc(L, y), [x.grad.tolist() for x in xs]
    return f


CASES = {
    # views and shape functions
    "ravel": _unary("ravel", view=True),
    "ravel_0d": _unary("ravel", shape=(), view=True),
    "ravel_t": lambda L: _unary("ravel", view=True)(L) + (_desc(L, L.ravel(_x(L, 3, 4).t())),),
    "movedim": _unary("movedim", 0, 2, view=True),
    "movedim_seq": _unary("movedim", (0, 1), (2, 0), view=True),
    "movedim_same": _unary("movedim", 1, 1, view=True),
    "movedim_0d": _unary("movedim", 0, -1, shape=(), view=True),
    "movedim_0d_seq": _unary("movedim", [0], [0], shape=(), view=True),
    "movedim_0d_range": _unary("movedim", 1, 0, shape=()),
    "movedim_bad_len": _unary("movedim", (0, 1), (2,)),
    "movedim_repeat": _unary("movedim", (0, 0), (1, 2)),
    "movedim_range": _unary("movedim", 3, 0),
    "moveaxis": _unary("moveaxis", -1, 0, view=True),
    "swapdims": _unary("swapdims", 0, 2, view=True),
    "swapdims_same": _unary("swapdims", 1, 1, view=True),
    "adjoint": _unary("adjoint", view=True),
    "adjoint_2d": _unary("adjoint", shape=(3, 4), view=True),
    "adjoint_1d": _unary("adjoint", shape=(3,)),
    "diagonal": _unary("diagonal", view=True),
    "diagonal_off": _unary("diagonal", 1, 1, 2, view=True),
    "diagonal_neg": _unary("diagonal", offset=-1, dim1=-1, dim2=0, view=True),
    "diagonal_far": _unary("diagonal", 9, view=True),
    "diagonal_same": _unary("diagonal", 0, 1, 1),
    "diag_embed": _unary("diag_embed", shape=(2, 3)),
    "diag_embed_off": _unary("diag_embed", 1, 0, 2, shape=(2, 3)),
    "atleast_1d_0d": _unary("atleast_1d", shape=(), view=True),
    "atleast_1d_2d": _unary("atleast_1d", shape=(2, 3), view=True),
    "atleast_2d_0d": _unary("atleast_2d", shape=(), view=True),
    "atleast_2d_1d": _unary("atleast_2d", shape=(3,), view=True),
    "atleast_2d_3d": _unary("atleast_2d", view=True),
    "atleast_3d_0d": _unary("atleast_3d", shape=(), view=True),
    "atleast_3d_1d": _unary("atleast_3d", shape=(3,), view=True),
    "atleast_3d_2d": _unary("atleast_3d", shape=(2, 3), view=True),
    "atleast_3d_4d": _unary("atleast_3d", shape=(1, 2, 1, 3), view=True),
    "atleast_1d_many": lambda L: (_desc(L, L.atleast_1d(_x(L), _x(L, 2), _x(L, 1, 2))),),
    "atleast_2d_tuple": lambda L: (_desc(L, L.atleast_2d((_x(L), _x(L, 2)))),),
    "atleast_3d_list": lambda L: (_desc(L, L.atleast_3d([_x(L, 2), _x(L, 2, 2)])),),
    "atleast_1d_one_list": lambda L: (_desc(L, L.atleast_1d([_x(L)])),),
    "atleast_2d_none": lambda L: (_desc(L, L.atleast_2d()),),
    "column_stack": _many("column_stack", [(3,), (3, 2), (3,)]),
    "column_stack_0d": _many("column_stack", [(), ()]),
    "column_stack_empty": _many("column_stack", []),
    "column_stack_bad": _many("column_stack", [(3,), (2,)]),
    "hstack": _many("hstack", [(3,), (2,)]),
    "hstack_2d": _many("hstack", [(2, 3), (2, 1)]),
    "hstack_0d": _many("hstack", [(), (2,)]),
    "vstack": _many("vstack", [(3,), (3,), (2, 3)]),
    "vstack_0d": _many("vstack", [(), ()]),
    "row_stack": _many("row_stack", [(3,), (1, 3)]),
    "vstack_tuple": lambda L: (_desc(L, L.vstack((_x(L, 2), _x(L, 2)))),),
    "hstack_dtypes": lambda L: (_desc(L, L.hstack([L.arange(2), L.ones(2)])),),
    "tensor_split": _unary("tensor_split", 3, 2, view=True),
    "tensor_split_idx": _unary("tensor_split", [1, 5], dim=-1, view=True),
    "hsplit": _unary("hsplit", 3, view=True),
    "hsplit_1d": _unary("hsplit", 2, shape=(6,), view=True),
    "vsplit": _unary("vsplit", [1], view=True),
    "dsplit": _unary("dsplit", 2, view=True),
    "dsplit_2d": _unary("dsplit", 2, shape=(2, 4)),
    "fliplr": _unary("fliplr"),
    "flipud": _unary("flipud"),
    "rot90": _unary("rot90", 1, [1, 2]),
    "rot90_k3": _unary("rot90", -1),
    "tile": _unary("tile", (2, 1)),
    "take": lambda L: (_desc(L, L.take(_x(L, 2, 4), L.tensor([[0, -1], [5, 3]]))),),
    "take_grad": lambda L: (lambda x: (L.take(x, L.tensor([0, 0, -1])).sum().backward(),
                                       x.grad.tolist()))(_x(L, 2, 3)),
    "take_oob": lambda L: (_desc(L, L.take(_x(L, 2, 3), L.tensor([6]))),),
    "take_along_dim": lambda L: (_desc(L, L.take_along_dim(
        _x(L, 2, 3), L.tensor([[0], [2]]), 1)),),
    "take_along_dim_none": lambda L: (_desc(L, L.take_along_dim(
        _x(L, 2, 3), L.tensor([5, 0]))),),
    "argwhere": lambda L: (_desc(L, L.argwhere(L.tensor([[0, 1], [2, 0]]))),),
    # real tensors' complex surface
    "positive": _unary("positive", view=True),
    "positive_bool": lambda L: (_desc(L, L.positive(L.tensor([True]))),),
    "conj": _unary("conj", view=True),
    "conj_physical": _unary("conj_physical", view=True),
    "resolve_conj": _unary("resolve_conj", view=True),
    "resolve_neg": _unary("resolve_neg", view=True),
    "is_conj": lambda L: (L.is_conj(_x(L, 2)),),
    "is_complex": lambda L: (L.is_complex(_x(L, 2)),),
    "is_nonzero": lambda L: (L.is_nonzero(L.tensor([2.0])), L.is_nonzero(L.tensor(0))),
    "is_nonzero_many": lambda L: (L.is_nonzero(L.tensor([1, 2])),),
    "real": _unary("real", view=True),
    "imag": _unary("imag"),
    "isreal": _unary("isreal", grad=False),
    # reductions and scans
    "trace": _unary("trace", shape=(3, 4)),
    "trace_int": _unary("trace", shape=(3, 3), grad=False, dtype="int32"),
    "trace_3d": _unary("trace"),
    "count_nonzero": lambda L: (_desc(L, L.count_nonzero(L.tensor([[0, 1.5], [2, 0]]))),
                                _desc(L, L.count_nonzero(L.tensor([[0, 1], [2, 0]]), 0)),
                                _desc(L, L.count_nonzero(L.tensor([[0, 1], [2, 0]]), (0, 1)))),
    "nansum": lambda L: (lambda x: (_desc(L, L.nansum(x)), _desc(L, L.nansum(x, 1, True)),
                                    L.nansum(x, 0).sum().backward(), x.grad.tolist()))(
        L.tensor([[1.0, float("nan")], [2.0, 3.0]], requires_grad=True)),
    "nansum_int": lambda L: (_desc(L, L.nansum(L.tensor([[1, 2], [3, 4]]), dim=1)),),
    "nanmean": lambda L: (lambda x: (_desc(L, L.nanmean(x)), _desc(L, L.nanmean(x, 1)),
                                     L.nanmean(x).backward(), x.grad.tolist()))(
        L.tensor([[1.0, float("nan")], [2.0, 3.0]], requires_grad=True)),
    "nanmean_int": lambda L: (_desc(L, L.nanmean(L.tensor([1, 2]))),),
    "cumprod": _unary("cumprod", 1),
    "cumprod_dtype": _unary("cumprod", -1, dtype="int64", grad=False),
    "cumprod_kw": lambda L: (_desc(L, L.cumprod(L.tensor([1, 2, 3]), dim=0,
                                                dtype=L.float64)),),
    "logcumsumexp_0d": _unary("logcumsumexp", 0, shape=()),
    "logcumsumexp_empty": _unary("logcumsumexp", 1, shape=(2, 0)),
    "logcumsumexp_dim": _unary("logcumsumexp", 3),
    "logcumsumexp_int": lambda L: (_desc(L, L.logcumsumexp(L.tensor([1, 2]), 0)),),
    # elementwise aliases
    "negative": _unary("negative"),
    "absolute": _unary("absolute"),
    "multiply": lambda L: (_desc(L, L.multiply(_x(L, 2, 3), 2)),),
    "divide": lambda L: (_desc(L, L.divide(_x(L, 2, 3), 2, rounding_mode="floor")),),
    "subtract": lambda L: (_desc(L, L.subtract(_x(L, 2, 3), _x(L, 3), alpha=2)),),
    "true_divide": lambda L: (_desc(L, L.true_divide(L.tensor([3, 4]), 2)),),
    "rsub": lambda L: (_desc(L, L.rsub(_x(L, 2, 3), _x(L, 3), alpha=2)),),
    "nan_to_num": lambda L: (_desc(L, L.nan_to_num(L.tensor([float("nan"), float("inf"), 1.0]),
                                                   posinf=5.0)),),
    "sgn": _unary("sgn"),
    "frac": _unary("frac"),
    "fix": _unary("fix"),
    "deg2rad": _unary("deg2rad"),
    "rad2deg": _unary("rad2deg"),
    "logit": lambda L: (_desc(L, L.logit(L.tensor([0.25, 0.5, 1.0]), eps=1e-6).round(
        decimals=4)),),
    "lerp": lambda L: (_desc(L, L.lerp(_x(L, 3), L.ones(3), 0.25)),),
}

# inputs given as keywords with torch's names
CASES.update({
    "kw_movedim": lambda L: (_desc(L, L.movedim(input=_x(L, 2, 3), source=0, destination=1)),),
    "kw_diagonal": lambda L: (_desc(L, L.diagonal(input=_x(L, 2, 3), offset=1)),),
    "kw_take": lambda L: (_desc(L, L.take(input=_x(L, 2, 3), index=L.tensor([1]))),),
    "kw_trace": lambda L: (_desc(L, L.trace(input=_x(L, 2, 3))),),
    "kw_hstack": lambda L: (_desc(L, L.hstack(tensors=[_x(L, 2)])),),
    "kw_cumprod": lambda L: (_desc(L, L.cumprod(input=_x(L, 2, 3), dim=1)),),
    "not_a_tensor": lambda L: (_desc(L, L.ravel([1, 2])),),
})

# out= where torch takes it
CASES.update({
    f"out_{n}": (lambda n, a: lambda L: (lambda o: (_desc(L, getattr(L, n)(*a(L), out=o)),
                                                    _desc(L, o)))(L.empty(0)))(n, a)
    for n, a in [
        ("hstack", lambda L: ([_x(L, 2, grad=False), _x(L, 3, grad=False)],)),
        ("vstack", lambda L: ([_x(L, 2, grad=False), _x(L, 2, grad=False)],)),
        ("column_stack", lambda L: ([_x(L, 2, grad=False), _x(L, 2, grad=False)],)),
        ("take", lambda L: (_x(L, 2, 3, grad=False), L.tensor([1, 4]))),
        ("cumprod", lambda L: (_x(L, 2, 3, grad=False), 1)),
        ("logcumsumexp", lambda L: (_x(L, 2, 1, grad=False), 1)),
        ("nansum", lambda L: (_x(L, 2, 3, grad=False), 1)),
        ("nanmean", lambda L: (_x(L, 2, 3, grad=False), 1)),
        ("take_along_dim", lambda L: (_x(L, 2, 3, grad=False), L.tensor([[0], [1]]), 1)),
    ]})


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_as_torch(name):
    assert _run(tp, CASES[name]) == _run(torch, CASES[name])


def _lcse(L, values, dim, dtype, method=False):
    x = L.tensor(values, dtype=getattr(L, dtype), requires_grad=True)
    y = x.logcumsumexp(dim) if method else L.logcumsumexp(x, dim)
    w = L.arange(y.numel(), dtype=y.dtype).reshape(y.shape) / 7 + 1
    (y * w).sum().backward()
    return (y.detach().double().numpy(), x.grad.clone().double().numpy(),
            str(y.dtype).rsplit(".", 1)[-1])


_RNG = np.random.default_rng(45)
LCSE = {
    "3d_dim2": (lambda: (np.arange(24.0).reshape(2, 3, 4) / 3 - 4).tolist(), 2),
    "3d_dim0": (lambda: (np.arange(24.0).reshape(2, 3, 4) / 3 - 4).tolist(), 0),
    "long_random": (lambda: (_RNG.standard_normal((3, 37)) * 20).tolist(), 1),
    "spread": (lambda: [-1000.0, 0.0, 3.0, -2000.0, float("-inf"), 50.0, 49.0, 1e4, -1e4], 0),
    "all_neg_inf_head": (lambda: [float("-inf"), float("-inf"), 1.0, 2.0], 0),
    "one": (lambda: [[3.0]], -1),
}


@pytest.mark.parametrize("method", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("key", sorted(LCSE))
def test_logcumsumexp_as_torch(key, dtype, method):
    """Values and gradients to rounding against torch in float64 on the same (rounded) values
    (torch's cpu kernel is a sequential scan, TensorPlay's a doubling one, so the last bits may
    differ; and torch's float32 gradient loses up to ~5e-4 relative on wide spreads, where
    TensorPlay's does not: float64 is the oracle); -inf and wide spreads as torch's."""
    make, dim = LCSE[key]
    values = np.asarray(make(), dtype=dtype).astype(np.float64).tolist()
    a, ga, da = _lcse(tp, values, dim, dtype, method)
    b, gb, _ = _lcse(torch, values, dim, "float64")
    tol = 2e-6 if dtype == "float32" else 1e-12
    assert da == dtype == _lcse(torch, values, dim, dtype)[2]
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    np.testing.assert_allclose(ga, gb, rtol=tol, atol=tol)


# -- advanced indices whose broadcast result is empty: nothing is checked (torch's rule) --------
def _index_cases(L):
    e = L.tensor([], dtype=L.long)
    return {
        "pair_empty": (lambda x: x[L.tensor([5]), e], (2, 3, 4)),
        "pair_empty_first": (lambda x: x[e, L.tensor([9])], (2, 3, 4)),
        "pair_broadcast_empty": (lambda x: x[L.tensor([5]), L.zeros(0, 1, dtype=L.long)],
                                 (2, 3, 4)),
        "apart_empty": (lambda x: x[L.tensor([[5]]), :, e], (2, 3, 4)),
        "late_dims_empty": (lambda x: x[:, L.tensor([7]), e], (2, 3, 4)),
        "rest_empty": (lambda x: x[L.tensor([5]), L.tensor([1])], (2, 3, 0)),
        "mask_empty": (lambda x: x[L.zeros(2, dtype=L.bool), L.tensor([7])], (2, 3)),
        "both_bad_nonempty": (lambda x: x[L.tensor([9]), L.tensor([7])], (2, 3)),
        "one_bad_nonempty": (lambda x: x[L.tensor([1]), L.tensor([-4])], (2, 3)),
        "neg_bad_nonempty": (lambda x: x[L.tensor([-3, 0]), L.tensor([1])], (2, 3)),
    }


def _index_get(L, key):
    fn, shape = _index_cases(L)[key]
    x = _x(L, *shape)
    return _run(L, lambda L: (_desc(L, fn(x)), fn(x).sum().backward(), x.grad.tolist()))


def _index_set(L, key, value):
    shape = _index_cases(L)[key][1]
    x = _x(L, *shape, grad=False)

    def f(L):
        idx = _setter_index(L, key)
        x[idx] = value(L) if callable(value) else value
        return (_desc(L, x),)
    return _run(L, f)


def _setter_index(L, key):
    e = L.tensor([], dtype=L.long)
    return {
        "pair_empty": (L.tensor([5]), e), "pair_empty_first": (e, L.tensor([9])),
        "pair_broadcast_empty": (L.tensor([5]), L.zeros(0, 1, dtype=L.long)),
        "apart_empty": (L.tensor([[5]]), slice(None), e),
        "late_dims_empty": (slice(None), L.tensor([7]), e),
        "rest_empty": (L.tensor([5]), L.tensor([1])),
        "mask_empty": (L.zeros(2, dtype=L.bool), L.tensor([7])),
        "both_bad_nonempty": (L.tensor([9]), L.tensor([7])),
        "one_bad_nonempty": (L.tensor([1]), L.tensor([-4])),
        "neg_bad_nonempty": (L.tensor([-3, 0]), L.tensor([1])),
    }[key]


INDEX_KEYS = sorted(_index_cases(torch))


@pytest.mark.parametrize("key", INDEX_KEYS)
def test_empty_broadcast_index_get_as_torch(key):
    assert _index_get(tp, key) == _index_get(torch, key)


@pytest.mark.parametrize("value", [1.0, "zeros0", "ones_like"])
@pytest.mark.parametrize("key", INDEX_KEYS)
def test_empty_broadcast_index_set_as_torch(key, value):
    v = {1.0: 1.0, "zeros0": lambda L: L.zeros(()),
         "ones_like": None}[value]
    if v is None:
        def v(L, key=key):
            fn, shape = _index_cases(L)[key]
            try:
                return L.ones(fn(_x(L, *shape, grad=False)).shape)
            except IndexError:
                return L.ones(1)
    assert _index_set(tp, key, v) == _index_set(torch, key, v)


def test_out_of_range_message_names_the_first_bad_dim_as_torch():
    def msg(L):
        try:
            _x(L, 2, 3)[L.tensor([9]), L.tensor([7])]
        except IndexError as e:
            return str(e)
    assert msg(tp) == msg(torch)


# -- the module-level in-place forms and the other method forms ------------------------------
def _inplace(name, *args, values=(0.25, 0.5, 0.75), dtype="float32"):
    def f(L):
        x = L.tensor(list(values), dtype=getattr(L, dtype))
        a = [a(L) if callable(a) else a for a in args]
        y = getattr(L, name)(x, *a)
        return y is x, _desc(L, x)
    return f


INPLACE = {n: _inplace(n) for n in [
    "abs_", "acos_", "arccos_", "arcsin_", "arctan_", "asin_", "asinh_", "atan_", "atanh_",
    "ceil_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "exp2_", "exp_", "expm1_",
    "fix_", "floor_", "frac_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_",
    "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_",
    "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "zero_"]}
INPLACE.update({
    "acosh_": _inplace("acosh_", values=(1.5, 2.0)),
    "arccosh_": _inplace("arccosh_", values=(1.5, 2.0)),
    "arcsinh_": _inplace("arcsinh_"),
    "arctanh_": _inplace("arctanh_"),
    "clamp_": _inplace("clamp_", 0.3, 0.6),
    "clamp_int_float": _inplace("clamp_", 0.5, None, dtype="int64"),
    "clamp_max_": _inplace("clamp_max_", 0.3),
    "clamp_min_": _inplace("clamp_min_", lambda L: L.tensor([0.3, 0.6, 0.6])),
    "clip_": _inplace("clip_", None, 0.3),
    "fill_": _inplace("fill_", 7),
    "xlogy_": _inplace("xlogy_", 2.0),
    "index_put_": _inplace("index_put_", lambda L: (L.tensor([0, 2]),), lambda L: L.tensor(9.0)),
    "round_int": _inplace("round_", dtype="int64", values=(1, 2)),
    "sqrt_int": _inplace("sqrt_", dtype="int64", values=(1, 4)),
})


def _close(a, b):
    """Equal structure and non-float leaves; floats to 1e-6 relative (the element ops' libm and
    torch's differ in the last bits of float32 transcendental functions -- not what is tested
    here), NaN equal to NaN."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6,
                                                                 abs_tol=1e-7)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_function_as_torch(name):
    a, b = _run(tp, INPLACE[name]), _run(torch, INPLACE[name])
    assert _close(a, b), (a, b)


def _t(*v, dtype="float32"):
    return lambda L: L.tensor(list(v), dtype=getattr(L, dtype))


def _call(name, *args, grad=False, **kw):
    def f(L):
        a = [a(L) if callable(a) else a for a in args]
        if grad:
            a[0].requires_grad_()
        y = getattr(L, name)(*a, **kw)
        g = None
        if grad:
            (y * 1.0).sum().backward()
            g = a[0].grad.clone().tolist()
        return _desc(L, y), g
    return f


M3 = lambda L: L.tensor([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0]])  # noqa: E731
METHOD_FUNCS = {
    "addcdiv": _call("addcdiv", _t(1, 2), _t(3, 4), _t(2, 8), value=0.5, grad=True),
    "addcmul": _call("addcmul", _t(1, 2), _t(3, 4), _t(2, 8), value=2, grad=True),
    "addcmul_out": lambda L: (lambda o: (_desc(L, L.addcmul(L.ones(2), L.ones(2), L.ones(2),
                                                            out=o)), _desc(L, o)))(L.empty(0)),
    "bernoulli_shape": lambda L: (tuple(L.bernoulli(L.full((2, 3), 0.5)).shape),
                                  L.bernoulli(L.ones(3)).tolist(),
                                  L.bernoulli(L.zeros(3)).tolist()),
    "bincount": _call("bincount", _t(0, 2, 2, 5, dtype="int64"), minlength=7),
    "bincount_w": _call("bincount", _t(0, 2, 2, dtype="int64"), _t(0.5, 1, 2)),
    "cross": _call("cross", M3, lambda L: L.tensor([[0.5, 1, 0], [1, 0, 2]]), dim=1, grad=True),
    "diagflat": _call("diagflat", _t(1, 2, 3), 1, grad=True),
    "diff": _call("diff", M3, grad=True),
    "diff_n": _call("diff", _t(1, 4, 9, 16), n=2),
    "diff_out": lambda L: (lambda o: (_desc(L, L.diff(L.tensor([1.0, 4.0]), out=o)),
                                      _desc(L, o)))(L.empty(0)),
    "index_copy": _call("index_copy", M3, 1, _t(2, 0, dtype="int64"),
                        lambda L: L.ones(2, 2), grad=True),
    "index_fill": _call("index_fill", M3, 0, _t(1, dtype="int64"), -1.0, grad=True),
    "index_put": _call("index_put", M3, lambda L: (L.tensor([0, 1]), L.tensor([2, 0])),
                       _t(7, 8), grad=True),
    "index_put_acc": _call("index_put", M3, lambda L: (L.tensor([0, 0]),), _t(7, 8, 9),
                           accumulate=True),
    "inner": _call("inner", M3, M3, grad=True),
    "isneginf": _call("isneginf", _t(float("-inf"), 1, float("inf"))),
    "isposinf": _call("isposinf", _t(float("-inf"), 1, float("inf"))),
    "isposinf_out_bad": lambda L: (_desc(L, L.isposinf(L.tensor([1.0]), out=L.empty(1))),),
    "masked_scatter": _call("masked_scatter", M3, lambda L: L.tensor([True, False, True]),
                            lambda L: L.arange(6.0).reshape(2, 3) + 10, grad=True),
    "msort": _call("msort", M3, grad=True),
    "mv": _call("mv", M3, _t(1, 2, 3), grad=True),
    "mv_out": lambda L: (lambda o: (_desc(L, L.mv(M3(L), L.ones(3), out=o)), _desc(L, o)))(
        L.empty(0)),
    "narrow_copy": _call("narrow_copy", M3, 1, 1, 2),
    "put": _call("put", M3, _t(0, 5, dtype="int64"), _t(9, 8), grad=True),
    "put_acc": _call("put", M3, _t(0, 0, dtype="int64"), _t(9, 8), True),
    "scatter_reduce": _call("scatter_reduce", _t(0, 0, 0), 0, _t(0, 1, 0, 1, dtype="int64"),
                            _t(1, 2, 3, 4), "amax", include_self=False),
    "scatter_reduce_sum": _call("scatter_reduce", _t(1, 1, 1), 0, _t(0, 1, 0, dtype="int64"),
                                _t(1, 2, 3), "sum", grad=True),
    "split_with_sizes": _call("split_with_sizes", M3, [1, 2], 1),
    "is_neg": lambda L: (L.is_neg(M3(L)),),
    "is_same_size": lambda L: (L.is_same_size(M3(L), L.ones(2, 3)),
                               L.is_same_size(M3(L), L.ones(3))),
    "is_signed": lambda L: (L.is_signed(M3(L)), L.is_signed(L.tensor([1], dtype=L.uint8))),
    "arccos": _call("arccos", _t(0.5), grad=True),
    "arcsin": _call("arcsin", _t(0.5), grad=True),
    "arctan": _call("arctan", _t(0.5), grad=True),
    "greater": _call("greater", M3, 2.0),
    "greater_equal": _call("greater_equal", M3, 2.0),
    "less": _call("less", M3, lambda L: L.tensor([3.0])),
    "less_equal": _call("less_equal", M3, 2.0),
    "not_equal": _call("not_equal", M3, 2.0),
    "ger": _call("ger", _t(1, 2), _t(3, 4, 5), grad=True),
    "not_a_tensor": lambda L: (L.msort([1.0]),),
    "kw_input": lambda L: (_desc(L, L.diagflat(input=L.tensor([1.0, 2.0]), offset=-1)),),
}


@pytest.mark.parametrize("name", sorted(METHOD_FUNCS))
def test_method_function_as_torch(name):
    a, b = _run(tp, METHOD_FUNCS[name]), _run(torch, METHOD_FUNCS[name])
    assert _close(a, b), (a, b)


def _scatter(name, shape, src_shape, *args, src_dtype="float32", **kw):
    def f(L):
        x = _x(L, *shape)
        s = (L.arange(math.prod(src_shape), dtype=getattr(L, src_dtype)) + 100).reshape(
            tuple(src_shape))
        if s.dtype.is_floating_point:
            s.requires_grad_()
        y = getattr(L, name)(x, s, *args, **kw)
        (y * (L.arange(y.numel()).reshape(y.shape) + 1)).sum().backward()
        return _desc(L, y), x.grad.tolist(), s.grad.tolist() if s.requires_grad else None
    return f


SHAPE_DTYPE = {
    "select_scatter": _scatter("select_scatter", (2, 3), (3,), 0, 1),
    "select_scatter_neg": _scatter("select_scatter", (2, 3, 4), (2, 4), -2, -1),
    "select_scatter_bad": _scatter("select_scatter", (2, 3), (2,), 0, 0),
    "select_scatter_range": _scatter("select_scatter", (2, 3), (3,), 0, 2),
    "select_scatter_dtype": _scatter("select_scatter", (2, 3), (3,), 0, 0, src_dtype="float64"),
    "slice_scatter": _scatter("slice_scatter", (4, 3), (2, 3), start=2),
    "slice_scatter_step": _scatter("slice_scatter", (4, 6), (4, 3), 1, 0, None, 2),
    "slice_scatter_bad": _scatter("slice_scatter", (4, 3), (1, 3), start=2),
    "diagonal_scatter": _scatter("diagonal_scatter", (3, 3), (3,)),
    "diagonal_scatter_off": _scatter("diagonal_scatter", (2, 3, 4), (2, 2), 1, 1, 2),
    "diagonal_scatter_bad": _scatter("diagonal_scatter", (3, 3), (2,)),
    "broadcast_shapes": lambda L: (tuple(L.broadcast_shapes(2, (3, 1), [1, 1, 1])),),
    "broadcast_shapes_none": lambda L: (tuple(L.broadcast_shapes()),),
    "broadcast_shapes_zero": lambda L: (tuple(L.broadcast_shapes((0, 1), (3,))),),
    "broadcast_shapes_bad": lambda L: (tuple(L.broadcast_shapes((2,), (3,))),),
    "broadcast_shapes_neg": lambda L: (tuple(L.broadcast_shapes((-1,), (3,))),),
}
_OPERANDS = {
    "1": lambda L: 1, "2.0": lambda L: 2.0, "1.5": lambda L: 1.5, "True": lambda L: True,
    "ints": lambda L: L.tensor([1, 2]), "floats": lambda L: L.tensor([1.0]),
    "int0d": lambda L: L.tensor(3), "ints8": lambda L: L.tensor([1], dtype=L.int8),
    "bools": lambda L: L.tensor([True]), "half": lambda L: L.tensor([1.0], dtype=L.float16),
    "float0d": lambda L: L.tensor(1.0, dtype=L.float64)}
for _a, _b in [("1", "2.0"), ("True", "1"), ("ints", "1.5"), ("ints", "floats"),
               ("int0d", "ints8"), ("ints8", "1"), ("bools", "True"), ("half", "1.5"),
               ("half", "float0d"), ("float0d", "int0d"), ("True", "bools")]:
    SHAPE_DTYPE[f"result_type_{_a}_{_b}"] = (lambda a, b: lambda L: (str(L.result_type(
        _OPERANDS[a](L), _OPERANDS[b](L))).rsplit(".", 1)[-1],))(_a, _b)
for _f in ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
           "float64"]:
    SHAPE_DTYPE[f"can_cast_{_f}"] = (lambda f: lambda L: tuple(
        L.can_cast(getattr(L, f), getattr(L, t)) for t in ["bool", "uint8", "int16", "int64",
                                                           "float16", "float64"]))(_f)


@pytest.mark.parametrize("name", sorted(SHAPE_DTYPE))
def test_scatter_shape_dtype_functions_as_torch(name):
    assert _run(tp, SHAPE_DTYPE[name]) == _run(torch, SHAPE_DTYPE[name])


_SEQ = lambda L: L.tensor([1.0, 3.0, 3.0, 5.0, 7.0])  # noqa: E731
_VALS = lambda L: L.tensor([[3.0, 6.0, 0.0], [9.0, 1.0, 7.0]])  # noqa: E731
COMPOSED = {
    "tril_indices": lambda L: (_desc(L, L.tril_indices(3, 4, 1)),),
    "tril_indices_neg": lambda L: (_desc(L, L.tril_indices(4, 3, -2)),),
    "tril_indices_empty": lambda L: (_desc(L, L.tril_indices(0, 3)),),
    "tril_indices_none": lambda L: (_desc(L, L.tril_indices(3, 3, -5)),),
    "triu_indices": lambda L: (_desc(L, L.triu_indices(3, 4, 1)),),
    "triu_indices_int32": lambda L: (_desc(L, L.triu_indices(3, 3, -1, dtype=L.int32)),),
    "searchsorted": lambda L: (_desc(L, L.searchsorted(_SEQ(L), _VALS(L))),),
    "searchsorted_right": lambda L: (_desc(L, L.searchsorted(_SEQ(L), _VALS(L), right=True)),),
    "searchsorted_side": lambda L: (_desc(L, L.searchsorted(_SEQ(L), _VALS(L), side="right")),),
    "searchsorted_conflict": lambda L: (_desc(L, L.searchsorted(_SEQ(L), _VALS(L), right=True,
                                                                side="left")),),
    "searchsorted_scalar": lambda L: (_desc(L, L.searchsorted(_SEQ(L), 3.0)),
                                      _desc(L, L.searchsorted(_SEQ(L), 3.0, right=True))),
    "searchsorted_int32": lambda L: (_desc(L, L.searchsorted(_SEQ(L), _VALS(L),
                                                             out_int32=True)),),
    "searchsorted_nd": lambda L: (_desc(L, L.searchsorted(
        L.tensor([[1.0, 2.0, 3.0], [0.0, 5.0, 9.0]]), _VALS(L))),),
    "searchsorted_nd_bad": lambda L: (_desc(L, L.searchsorted(
        L.tensor([[1.0, 2.0, 3.0]] * 3), _VALS(L))),),
    "searchsorted_sorter": lambda L: (_desc(L, L.searchsorted(
        L.tensor([5.0, 1.0, 7.0, 3.0]), _VALS(L), sorter=L.tensor([1, 3, 0, 2]))),),
    "searchsorted_out": lambda L: (lambda o: (_desc(L, L.searchsorted(_SEQ(L), _VALS(L),
                                                                      out=o)), _desc(L, o)))(
        L.empty(0, dtype=L.int64)),
    "searchsorted_ints": lambda L: (_desc(L, L.searchsorted(L.tensor([1, 4, 9]),
                                                            L.tensor([0, 4, 10]))),),
    "bucketize": lambda L: (_desc(L, L.bucketize(_VALS(L), _SEQ(L))),),
    "bucketize_right": lambda L: (_desc(L, L.bucketize(_VALS(L), _SEQ(L), right=True,
                                                       out_int32=True)),),
    "bucketize_scalar": lambda L: (_desc(L, L.bucketize(4, L.tensor([1, 4, 9]))),),
    "bucketize_2d": lambda L: (_desc(L, L.bucketize(_VALS(L), _VALS(L))),),
    "kron": _call("kron", lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]),
                  lambda L: L.tensor([[0.0, 1.0, 2.0]]), grad=True),
    "kron_ranks": _call("kron", _t(1, -2), lambda L: L.arange(12.0).reshape(2, 3, 2), grad=True),
    "kron_0d": _call("kron", lambda L: L.tensor(3.0), _t(1, 2), grad=True),
    "kron_dtypes": _call("kron", _t(1, 2, dtype="int64"), _t(0.5, 1)),
    "block_diag": lambda L: (lambda ts: (_desc(L, L.block_diag(*ts)),
                                         (L.block_diag(*ts) * L.arange(20.0).reshape(4, 5))
                                         .sum().backward(),
                                         [t.grad.tolist() for t in ts]))(
        [L.ones(2, 2, requires_grad=True), L.tensor([5.0, 6.0], requires_grad=True),
         L.tensor(7.0, requires_grad=True)]),
    "block_diag_dtypes": lambda L: (_desc(L, L.block_diag(L.tensor([[1]]), L.tensor([0.5]))),),
    "block_diag_one": lambda L: (_desc(L, L.block_diag(L.tensor([1.0, 2.0]))),),
    "block_diag_empty_cols": lambda L: (_desc(L, L.block_diag(L.ones(2, 0), L.ones(1, 2))),),
    "block_diag_3d": lambda L: (_desc(L, L.block_diag(L.ones(1, 1, 1))),),
    "block_diag_none": lambda L: (_desc(L, L.block_diag()),),
}


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_functions_as_torch(name):
    assert _run(tp, COMPOSED[name]) == _run(torch, COMPOSED[name])


_RUNS = lambda L: L.tensor([1.0, 1.0, 2.0, 2.0, 3.0, 1.0, 1.0, 2.0])  # noqa: E731
_NANS = lambda L: L.tensor([float("nan"), float("nan"), 1.0, 1.0])  # noqa: E731
_ROWS = lambda L: L.tensor([[1, 2], [1, 2], [3, 4], [3, 5], [3, 5]])  # noqa: E731
MORE = {
    "signbit": lambda L: (_desc(L, L.signbit(L.tensor([-0.0, 0.0, -1.0, 2.0, float("nan"),
                                                       -float("nan"), -float("inf")]))),),
    "signbit_half": lambda L: (_desc(L, L.signbit(L.tensor([-0.0, 1.0], dtype=L.float16))),),
    "signbit_ints": lambda L: (_desc(L, L.signbit(L.tensor([-1, 0, 3]))),
                               _desc(L, L.signbit(L.tensor([True, False]))),
                               _desc(L, L.signbit(L.tensor([0, 255], dtype=L.uint8)))),
    "signbit_out": lambda L: (lambda o: (_desc(L, L.signbit(L.tensor([-1.0, 1.0]), out=o)),
                                         _desc(L, o)))(L.empty(0, dtype=L.bool)),
}
for _name, _mk in [("runs", _RUNS), ("nans", _NANS), ("rows", _ROWS),
                   ("empty", lambda L: L.tensor([])), ("one", lambda L: L.tensor([4])),
                   ("scalar", lambda L: L.tensor(5.0)),
                   ("matrix", lambda L: L.tensor([[1, 1], [1, 2]]))]:
    for _kw in [{}, {"return_inverse": True}, {"return_counts": True},
                {"return_inverse": True, "return_counts": True}]:
        MORE[f"unique_consecutive_{_name}_{'_'.join(_kw) or 'plain'}"] = (
            lambda mk, kw: lambda L: (_desc(L, L.unique_consecutive(mk(L), **kw)),))(_mk, _kw)
for _d in [0, 1, -1]:
    MORE[f"unique_consecutive_rows_dim{_d}"] = (lambda d: lambda L: (_desc(
        L, L.unique_consecutive(_ROWS(L), True, True, dim=d)),))(_d)
MORE["unique_consecutive_dim_3d"] = lambda L: (_desc(L, L.unique_consecutive(
    L.tensor([[[1, 1], [1, 1]], [[1, 1], [1, 1]], [[2, 1], [1, 1]]]), True, True, dim=0)),
    _desc(L, L.unique_consecutive(L.tensor([[[1, 1], [1, 1]], [[1, 1], [1, 2]]]), True, True,
                                  dim=2)))
MORE["unique_consecutive_0d_dim"] = lambda L: (_desc(L, L.unique_consecutive(
    L.tensor(5.0), dim=0)),)
MORE["unique_consecutive_empty_dim"] = lambda L: (_desc(L, L.unique_consecutive(
    L.zeros(0, 3), True, True, dim=0)),)


@pytest.mark.parametrize("name", sorted(MORE))
def test_signbit_unique_consecutive_as_torch(name):
    a, b = _run(tp, MORE[name]), _run(torch, MORE[name])
    assert _close(a, b), (a, b)         # (NaN equal to NaN)


def _comb(*args, **kw):
    def f(L):
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True) if not args or args[0] != "bad" \
            else L.ones(2, 2, requires_grad=True)
        y = L.combinations(x, *args[1:], **kw)
        if y.numel():
            (y * (L.arange(y.numel()).reshape(y.shape) + 1)).sum().backward()
        return _desc(L, y), None if x.grad is None else x.grad.tolist()
    return f


LAST = {
    "combinations": _comb("ok"),
    "combinations_3": _comb("ok", 3),
    "combinations_0": _comb("ok", 0),
    "combinations_5": _comb("ok", 5),
    "combinations_repl": _comb("ok", 2, True),
    "combinations_bad": _comb("bad"),
    "combinations_empty": lambda L: (_desc(L, L.combinations(L.tensor([]), 2)),),
    "method_signbit": lambda L: (_desc(L, L.tensor([-0.0, 1.0]).signbit()),),
    "method_kron": lambda L: (_desc(L, L.tensor([1.0, 2.0]).kron(L.tensor([[1.0], [3.0]]))),),
    "method_unique_consecutive": lambda L: (_desc(L, L.tensor([1, 1, 2]).unique_consecutive(
        return_counts=True)),),
    "method_select_scatter": lambda L: (_desc(L, L.zeros(2, 2).select_scatter(L.ones(2), 1,
                                                                              0)),),
    "method_slice_scatter": lambda L: (_desc(L, L.zeros(3, 2).slice_scatter(L.ones(1, 2),
                                                                            start=2)),),
    "method_diagonal_scatter": lambda L: (_desc(L, L.zeros(2, 3).diagonal_scatter(
        L.ones(2), 1)),),
}


@pytest.mark.parametrize("name", sorted(LAST))
def test_combinations_and_methods_as_torch(name):
    assert _run(tp, LAST[name]) == _run(torch, LAST[name])
