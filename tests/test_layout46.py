"""Elementwise result layouts (session 46): torch's TensorIterator rule in one place
(``tensorplay._kernels.elementwise.iter_strides``), followed by the real kernels' results
(``ArrayBackend.wrap_elementwise``), the fake rules and ``tensorplay.compile``. Torch-free: the
rule's cases are the facts of torch's ``TensorIteratorBase`` (fast set-up for operands of one
shape, else the dims sorted by the operands' strides, first operand first); the differential
against torch itself is tests/torch_bridge/test_layout_differential46.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library
from tensorplay._kernels.elementwise import iter_strides, preserve_strides


# -- the rule itself -------------------------------------------------------------------------------

def test_operands_of_one_shape():
    rm, t = ((3, 4), (4, 1)), ((3, 4), (1, 3))
    assert iter_strides((3, 4), [rm, rm]) is None                       # all row-major
    assert iter_strides((3, 4), [t, t]) == (1, 3)                       # same dense strides
    assert iter_strides((3, 4), [rm, t]) is None                        # the first decides
    assert iter_strides((3, 4), [t, rm]) == (1, 3)
    cl = ((2, 3, 4, 5), (60, 1, 15, 3))
    assert iter_strides((2, 3, 4, 5), [cl, cl]) == (60, 1, 15, 3)       # channels-last
    odd = ((3, 1, 4), (4, 99, 1))                                       # row-major, odd size-1
    assert iter_strides((3, 1, 4), [odd]) is None
    assert iter_strides((3, 1, 4), [odd, None]) == (4, 12, 1)           # a number: sorted


def test_broadcast_and_number_operands():
    t = ((4, 3), (1, 4))
    assert iter_strides((4, 3), [((3,), (1,)), t]) == (1, 4)    # a broadcast first operand: no say
    assert iter_strides((4, 3), [t, None]) == (1, 4)
    assert iter_strides((4, 3), [((4, 1), (1, 1)), ((1, 3), (3, 1))]) is None   # nobody decides
    assert iter_strides((), [None, None]) is None


def test_non_dense_operands_get_dense_strides_in_their_order():
    sliced_t = ((3, 4), (2, 12))                   # a (8, 3) tensor's rows ::2, transposed
    assert iter_strides((3, 4), [sliced_t]) == (1, 3)
    assert iter_strides((3, 2), [((3, 2), (8, 2))]) is None
    assert preserve_strides((3, 4), (2, 12)) == (1, 3)
    assert preserve_strides((3, 1, 4), (4, 99, 1)) == (4, 99, 1)    # dense: kept exactly


# -- real, fake and compiled results follow it ------------------------------------------------------

LAYOUTS = {
    "t": lambda: tp.randn(4, 3).t(),
    "perm": lambda: tp.randn(4, 2, 3).permute(1, 2, 0),
    "cl": lambda: tp.randn(2, 4, 5, 3).permute(0, 3, 1, 2),
    "sliced_t": lambda: tp.randn(8, 3)[::2].t(),
    "contiguous": lambda: tp.randn(3, 4),
}
OPS = {
    "mul": lambda x: x * x, "x*2": lambda x: x * 2.0, "add_rm": lambda x: x + x.contiguous(),
    "rm_add": lambda x: x.contiguous() + x, "exp": lambda x: x.exp(), "relu": lambda x: x.relu(),
    "neg": lambda x: -x, "gt": lambda x: x > 0, "where": lambda x: tp.where(x > 0, x, 0.0),
    "pow2": lambda x: x ** 2, "clamp": lambda x: x.clamp(-0.5, 0.5),
    "int_add": lambda x: (x * 10).int() + 1, "double": lambda x: x.double(),
    "maximum": lambda x: tp.maximum(x, x.contiguous()), "bitwise": lambda x: (x > 0) & (x < 1),
    "chain": lambda x: (x * 2.0 + 1.0).exp() - x,          # compile: a fusible chain
}


def _expected(x, fn):
    """The values: the same op on a row-major copy."""
    return fn(x.contiguous()).numpy()


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op", list(OPS))
def test_real_fake_and_compiled_results_agree(op, layout):
    x = LAYOUTS[layout]()
    fn = OPS[op]
    r = fn(x)
    assert np.array_equal(r.numpy(), _expected(x, fn))
    assert r.storage_offset() == 0 and r._base is None      # a fresh tensor of its own
    with tp.fake.FakeTensorMode() as m:
        f = fn(m.from_tensor(x))
    assert (f.shape, f.stride(), f.dtype) == (r.shape, r.stride(), r.dtype)
    c = tp.compile(fn)(x)
    assert (c.shape, c.stride(), c.dtype) == (r.shape, r.stride(), r.dtype)
    assert np.array_equal(c.numpy(), r.numpy())


def test_a_transposed_result_behaves_as_torchs():
    x = tp.arange(12.0).reshape(3, 4).t()
    r = x * 2.0
    assert r.stride() == (1, 4) and not r.is_contiguous()
    with pytest.raises(RuntimeError):
        r.view(12)                                   # as torch: a view needs compatible strides
    assert r.reshape(12).tolist() == (x.contiguous() * 2.0).reshape(12).tolist()
    r.mul_(0.5)                                      # in place: the written layout stays
    assert r.stride() == (1, 4) and r.tolist() == x.tolist()
    r[0, 1] = 100.0                                  # writes land where the strides say
    assert r.t().contiguous().tolist()[1][0] == 100.0


def test_gradients_through_transposed_results():
    x = tp.randn(4, 3).t().requires_grad_()
    w = tp.randn(3, 4)
    y = (x * w).exp()
    assert y.stride() == (1, 3)
    y.sum().backward()
    assert x.grad is not None and np.allclose(x.grad.numpy(), (w * (x * w).exp()).detach().numpy())


# -- custom ops: the usual fake (empty_like) matches the real elementwise result -----------------

@library.custom_op("l46::scale", mutates_args=())
def scale(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
    return x * w


@scale.register_fake
def _(x, w):
    return tp.empty_like(x)


@pytest.mark.parametrize("layout", ["t", "perm", "cl", "contiguous"])
def test_custom_op_with_empty_like_fake_passes_opcheck_and_compile(layout):
    x = LAYOUTS[layout]()
    w = tp.randn(x.shape[-1])
    assert library.opcheck(scale, (x, w)) == {}
    c = tp.compile(lambda a, b: scale(a, b) + 1.0)(x, w)
    assert c.stride() == x.stride() and np.allclose(c.numpy(), (x * w + 1.0).numpy())


# -- opcheck's layouts test: a reordered float sum is rounding, a stride-ignoring kernel is not ---

@library.custom_op("l46::wsum", mutates_args=())
def wsum(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
    return (x * w).sum()


@wsum.register_fake
def _(x, w):
    return x.new_empty(())


@library.custom_op("l46::flat_sum", mutates_args=())
def flat_sum(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
    # reads x's storage in memory order, ignoring its strides, against w's logical order
    xs = tp.from_numpy(np.ascontiguousarray(
        np.lib.stride_tricks.as_strided(x.numpy(), (x.numel(),), (x.element_size(),))))
    return (xs * w.reshape(-1)).sum()


@flat_sum.register_fake
def _(x, w):
    return x.new_empty(())


def test_layouts_check_takes_a_reordered_sum_and_catches_ignored_strides():
    tp.manual_seed(0)
    x, w = tp.randn(512, 1024), tp.randn(512, 1024)
    assert library.opcheck(wsum, (x, w), test_utils="test_layouts") == {}
    bad = library.opcheck(flat_sum, (x, w), test_utils="test_layouts", raise_exception=False)
    assert "test_layouts" in bad and "differs from the contiguous one" in bad["test_layouts"]


# -- cuda (the lead's GPU runs): CuPy's arrays through the same wrap_elementwise ------------------

@pytest.mark.cuda
@pytest.mark.parametrize("op", list(OPS))
def test_cuda_results_follow_the_rule(op):
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    fn = OPS[op]
    for make in (lambda: tp.randn(4, 3, device="cuda").t(),
                 lambda: tp.randn(2, 4, 5, 3, device="cuda").permute(0, 3, 1, 2),
                 lambda: tp.randn(8, 3, device="cuda")[::2].t()):
        x = make()
        r = fn(x)
        ref = fn(x.cpu())                       # the cpu result: the same rule, the same values
        assert r.device.type == "cuda" and (r.shape, r.stride(), r.dtype) == \
            (ref.shape, ref.stride(), ref.dtype)
        np.testing.assert_allclose(r.cpu().numpy().astype(np.float64),
                                   ref.numpy().astype(np.float64), rtol=1e-5, atol=1e-6)
        with tp.fake.FakeTensorMode() as m:
            f = fn(m.from_tensor(x))
        assert f.stride() == r.stride()
        c = tp.compile(fn)(x)
        assert c.stride() == r.stride()
