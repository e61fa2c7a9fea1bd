"""torch's promotion rules for bool operands and ``where``'s condition (issue 28, "Numerics as
torch defines them"), on eager cpu, under fake tensors (the meta functions every device and
``tensorplay.compile`` use) and compiled. torch's rules, read from its kernels:

* ``floor_divide``/``remainder``/``pow`` of two bools: bool is neither integral nor floating
  there, so torch raises "not implemented for 'Bool'" (a Python ``int`` operand promotes to
  int64 and works); ``b ** True`` is ``b`` and ``b ** False`` is ones (torch's shortcut);
* any subtraction with a bool operand, tensor or Python bool, is refused with torch's message;
* ``where``'s condition must be a bool tensor.
"""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.fake import FakeTensorMode


def _b():
    return tp.tensor([True, False, True])


def _fake(fn, *tensors):
    with FakeTensorMode() as m:
        return fn(*[m.from_tensor(t) for t in tensors])


BOOL_NOT_IMPLEMENTED = {
    "b // b": lambda b: b // b,
    "b % b": lambda b: b % b,
    "b ** b": lambda b: b ** b,
    "pow": lambda b: tp.pow(b, b),
    "True // b": lambda b: True // b,
    "True % b": lambda b: True % b,
    "b // True": lambda b: b // True,
}


@pytest.mark.parametrize("expr", sorted(BOOL_NOT_IMPLEMENTED))
@pytest.mark.parametrize("path", ["eager", "fake", "compiled"])
def test_bool_floor_divide_remainder_pow_refused(expr, path):
    fn = BOOL_NOT_IMPLEMENTED[expr]
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        if path == "eager":
            fn(_b())
        elif path == "fake":
            _fake(fn, _b())
        else:
            tp.compile(fn)(_b())


def test_bool_with_int_scalars_promotes_to_int64():
    b = _b()
    for r, want in ((b // 2, [0, 0, 0]), (b % 2, [1, 0, 1]), (b ** 2, [1, 0, 1]),
                    (b + 1, [2, 1, 2]), (b * 3, [3, 0, 3])):
        assert r.dtype == tp.int64 and r.tolist() == want
    assert (b / b).dtype == tp.float32
    assert (b + b).dtype == tp.bool and (b * b).dtype == tp.bool


def test_bool_pow_python_bool_shortcuts():
    b = _b()
    r = b ** True
    assert r.dtype == tp.bool and r.tolist() == [True, False, True]
    r = b ** False
    assert r.dtype == tp.bool and r.tolist() == [True, True, True]


SUB_A_BOOL = {
    "b - 1": lambda b, x: b - 1,
    "1 - b": lambda b, x: 1 - b,
    "b - 1.5": lambda b, x: b - 1.5,
    "x - b": lambda b, x: x - b,
    "b - x": lambda b, x: b - x,
    "tp.sub(x, b)": lambda b, x: tp.sub(x, b),
    "x - True": lambda b, x: x - True,
    "True - x": lambda b, x: True - x,
}
SUB_TWO_BOOLS = {
    "b - b": lambda b, x: b - b,
    "b - True": lambda b, x: b - True,
    "True - b": lambda b, x: True - b,
}


@pytest.mark.parametrize("path", ["eager", "fake", "compiled"])
def test_subtraction_with_bool_refused(path):
    x = tp.tensor([1.0, 2.0, 3.0])
    cases = [(SUB_A_BOOL, r"with a bool tensor is not supported.*`~` or `logical_not\(\)`"),
             (SUB_TWO_BOOLS, r"with two bool tensors is not supported.*`\^` or `logical_xor\(\)`")]
    for table, msg in cases:
        for name, fn in table.items():
            with pytest.raises(RuntimeError, match=msg):
                if path == "eager":
                    fn(_b(), x)
                elif path == "fake":
                    _fake(fn, _b(), x)
                else:
                    tp.compile(fn)(_b(), x)


@pytest.mark.parametrize("cond_dtype,name", [(tp.float32, "Float"), (tp.int64, "Long"),
                                              (tp.uint8, "Byte"), (tp.float16, "Half")])
@pytest.mark.parametrize("path", ["eager", "fake", "compiled"])
def test_where_condition_must_be_bool(cond_dtype, name, path):
    c = tp.tensor([1, 0, 1], dtype=cond_dtype)
    a, b = tp.ones(3), tp.zeros(3)
    msg = f"where expected condition to be a boolean tensor, but got a tensor with dtype {name}"

    def fn(c, a, b):
        return tp.where(c, a, b)
    with pytest.raises(RuntimeError, match=msg):
        if path == "eager":
            fn(c, a, b)
        elif path == "fake":
            _fake(fn, c, a, b)
        else:
            tp.compile(fn)(c, a, b)
    assert tp.where(c != 0, a, b).tolist() == [1.0, 0.0, 1.0]


# --- inspect.signature of an op whose arguments are named by Python keywords --------------------

def test_signature_of_keyword_named_arguments_shows_what_the_call_accepts():
    import inspect

    from tensorplay import library
    lib = library.Library("hag_sig", "DEF")
    lib.define("f(Tensor x, int from, *, int lambda=3, float class) -> Tensor")
    lib.impl("f", lambda x, from_, **kw: x * (from_ + kw["lambda"] + kw["class"]), "cpu")
    op = tp.ops.hag_sig.f
    sig = inspect.signature(op)
    params = sig.parameters
    assert list(params) == ["x", "from_", "lambda_", "class_"], str(sig)
    assert all(p.kind is not p.VAR_KEYWORD for p in params.values()), str(sig)
    assert params["lambda_"].default == 3, "the schema default, not a placeholder"
    assert params["class_"].default is inspect.Parameter.empty, "required keyword-only"
    assert params["class_"].kind is inspect.Parameter.KEYWORD_ONLY
    # what the signature says is what the call accepts
    x = tp.ones(2)
    bound = sig.bind(x, 1, class_=0.5)
    assert op(*bound.args, **bound.kwargs).tolist() == [4.5, 4.5]
    assert op(x, 1, lambda_=2, class_=1.0).tolist() == [4.0, 4.0]
    assert op(x, 1, **{"lambda": 2, "class": 1.0}).tolist() == [4.0, 4.0]
    with pytest.raises(TypeError):
        sig.bind(x, 1)          # class_ is required: the signature says so
    with pytest.raises(TypeError, match="class"):
        op(x, 1)


@pytest.mark.parametrize("path", ["eager", "fake", "compiled"])
def test_masked_fill_and_scatter_need_a_bool_mask(path):
    """torch refuses a non-bool mask in masked_fill_/masked_scatter_ before writing (its
    backward is a where on the mask, which needs bool too)."""
    m = tp.tensor([1, 0, 1], dtype=tp.uint8)

    def fill(x, m):
        return x.clone().masked_fill_(m, 0.0)
    with pytest.raises(RuntimeError, match="only supports boolean masks, but got mask with dtype "
                                           "unsigned char"):
        if path == "eager":
            fill(tp.ones(3), m)
        elif path == "fake":
            _fake(fill, tp.ones(3), m)
        else:
            tp.compile(fill)(tp.ones(3), m)
    x = tp.ones(3, requires_grad=True)
    fill(x, m != 0).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
