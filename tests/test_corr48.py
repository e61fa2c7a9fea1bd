"""Session 48 (h-corr48): divergences from torch 2.13 (cpu) found by the lead, fixed here. Torch's
answers are written down where a torch-free test needs them (checked against torch 2.13 by
``tests/torch_bridge/test_corr48_differential.py``)."""

from __future__ import annotations

import math

import pytest

import tensorplay as tp

MSG = "some elements of the input tensor and the written-to tensor refer to a single memory location"
INTERNAL = "more than one element of the written-to tensor refers to a single memory location"


# -- item 1: in-place ops and out= refuse a partial overlap of input and written tensor ----------
def _a():
    return tp.arange(6.0)


PARTIAL = {
    "add_": lambda x: x[1:].add_(x[:-1]),
    "iadd": lambda x: x[1:].__iadd__(x[:-1]),
    "sub_": lambda x: x[1:].sub_(x[:-1]),
    "mul_": lambda x: x[1:].mul_(x[:-1]),
    "div_": lambda x: x[1:].div_(x[:-1]),
    "copy_": lambda x: x[1:].copy_(x[:-1]),
    "setitem": lambda x: x.__setitem__(slice(1, None), x[:-1]),
    "add_alpha": lambda x: x[1:].add_(x[:-1], alpha=2),
    "sub_alpha_float": lambda x: x[1:].sub_(x[:-1], alpha=2.5),
    "pow_": lambda x: x[1:].pow_(x[:-1]),
    "atan2_": lambda x: x[:-1].atan2_(x[1:]),
    "lerp_": lambda x: x[1:].lerp_(x[:-1], 0.5),
    "lerp_weight": lambda x: x[1:].lerp_(tp.ones(5), x[:-1]),
    "addcmul_": lambda x: x[1:].addcmul_(tp.ones(5), x[:-1]),
    "clamp_": lambda x: x[1:].clamp_(min=x[:-1]),
    "logical_and_": lambda x: x[1:].logical_and_(x[:-1]),
    "div_floor": lambda x: x[1:].div_(x[:-1], rounding_mode="floor"),
    "scatter_": lambda x: x[1:].scatter_(0, tp.tensor([0, 1]), x[:-1]),
    "scatter_add_": lambda x: x[1:].scatter_add_(0, tp.tensor([0, 1]), x[:-1]),
    "index_add_": lambda x: x[1:].index_add_(0, tp.tensor([0, 1]), x[:2]),
    "index_copy_": lambda x: x.index_copy_(0, tp.tensor([0, 1]), x[1:3]),
    "0dim_inside": lambda x: x[:5].add_(x[4]),       # a 0-dim view inside the written range
    "0dim_at_start": lambda x: x[1:].mul_(x[1]),      # same start, shorter
    "same_bytes_other_strides": lambda x: x[:4].view(2, 2).add_(x[:4].view(2, 2).t()),
    "row_into_matrix": lambda x: x.view(2, 3).add_(x.view(2, 3)[0]),
    "extra_dim": lambda x: x.view(1, 6).add_(x),     # same bytes, other strides (torch: partial)
    "data_written": lambda x: x.data[1:].add_(x[:-1]),
    "data_read": lambda x: x[1:].add_(x.data[:-1]),
    "data_copy": lambda x: x.data[1:].copy_(x[:-1]),
    "out_add": lambda x: tp.add(x[:5], tp.ones(5), out=x[1:]),
    "out_mul": lambda x: tp.mul(x[1:], 2, out=x[:-1]),
    "out_maximum": lambda x: tp.maximum(x[1:], x[:-1], out=x[:-1]),
}


@pytest.mark.parametrize("case", sorted(PARTIAL))
def test_partial_overlap_refused_nothing_written(case):
    x = _a()
    with pytest.raises(RuntimeError, match=MSG):
        PARTIAL[case](x)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


ALLOWED = {   # torch 2.13 answers
    "self": (lambda x: x.add_(x), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    "same_view_other_object": (lambda x: x[1:].add_(x[1:]), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    "t_t": (lambda x: x.view(2, 3).add_(x.view(2, 3).t().t()), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
    "disjoint": (lambda x: x[:3].add_(x[3:]), [3.0, 5.0, 7.0, 3.0, 4.0, 5.0]),
    "broadcast_disjoint": (lambda x: x[1:].copy_(x[:1]), [0.0] * 6),
    "interleaved_not_dense": (lambda x: x[::2].copy_(x[1::2]), [1.0, 1.0, 3.0, 3.0, 5.0, 5.0]),
    "out_interleaved": (lambda x: tp.add(x[1::2], 1, out=x[::2]), [2.0, 1.0, 4.0, 3.0, 6.0, 5.0]),
    "masked_fill_0dim": (lambda x: x[1:].masked_fill_(tp.tensor([True] * 5), x[0]), [0.0] * 6),
    "fill_0dim": (lambda x: x[1:].fill_(x[1]), [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
    "index_fill_0dim": (lambda x: x[1:].index_fill_(0, tp.tensor([0]), x[0]),
                        [0.0, 0.0, 2.0, 3.0, 4.0, 5.0]),
    "out_is_input": (lambda x: tp.exp(x, out=x), [math.exp(i) for i in range(6)]),
    "out_is_data": (lambda x: tp.exp(x, out=x.data), [math.exp(i) for i in range(6)]),
    "copy_data_full": (lambda x: x.copy_(x.data), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    "scalar": (lambda x: x[1:].mul_(2), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
}


@pytest.mark.parametrize("case", sorted(ALLOWED))
def test_full_or_no_overlap_allowed(case):
    x = _a()
    fn, want = ALLOWED[case]
    fn(x)
    assert x.tolist() == pytest.approx(want)


def test_internal_overlap_message_before_partial():
    # torch checks the written tensor's own overlap first (its message), then partial overlaps
    x = tp.arange(3.0)
    with pytest.raises(RuntimeError, match=INTERNAL):
        x.expand(2, 3).add_(1)
    with pytest.raises(RuntimeError, match=INTERNAL):
        x.expand(2, 3).add_(x)
    with pytest.raises(RuntimeError, match=INTERNAL):
        x.expand(2, 3).copy_(tp.ones(2, 3))
    assert x.tolist() == [0.0, 1.0, 2.0]


def test_partial_overlap_refused_on_fake_tensors():
    # the fake (meta) kernels see the same rule: one storage, partially overlapping views
    x = tp.empty(6, device="meta")
    with pytest.raises(RuntimeError, match=MSG):
        x[1:].add_(x[:-1])
    x[1:].add_(x[1:])          # full overlap: allowed
    x[:3].add_(x[3:])          # disjoint: allowed


def test_partial_overlap_in_autograd_recording():
    w = tp.arange(6.0, requires_grad=True)
    x = w * 1
    with pytest.raises(RuntimeError, match=MSG):
        x[1:].add_(x[:-1])
    with pytest.raises(RuntimeError, match=MSG):
        x[1:].mul_(x[:-1])


@pytest.mark.parametrize("dynamic", [False, True])
def test_partial_overlap_inside_compile_as_eager(dynamic):
    def bad(x):
        y = x * 1.0
        y[1:].add_(y[:-1])
        return y

    def good(x):
        y = x * 1.0
        y[1:].add_(y[1:])
        y[:2].mul_(y[2:4])
        return y

    cb, cg = tp.compile(bad, dynamic=dynamic), tp.compile(good, dynamic=dynamic)
    for n in (6, 7, 9):
        with pytest.raises(RuntimeError, match=MSG):
            cb(tp.arange(float(n)))
        for _ in range(3):
            out = cg(tp.arange(float(n)))
        assert out.tolist() == good(tp.arange(float(n))).tolist()


# -- item 2: x.data's memory is x's in resize_ and in compile(mode="reduce-overhead") ------------
def test_resize_of_owner_repoints_its_data_alias():
    x = tp.arange(4.0)
    d = x.data
    v = x.data[1:]
    x.resize_(8)
    assert d.data_ptr() == x.data_ptr()
    d[0] = 100.0
    v[0] = 50.0
    assert x[0].item() == 100.0 and x[1].item() == 50.0
    x[2] = 9.0
    assert d[2].item() == 9.0
    assert tuple(d.shape) == (4,)        # the alias keeps its own shape (torch's)


def test_resize_through_data_alias_repoints_its_owner():
    x = tp.arange(4.0)
    xv = x[1:]
    d = x.data
    d.resize_(8)
    assert tuple(x.shape) == (4,) and tuple(d.shape) == (8,)
    assert d.data_ptr() == x.data_ptr()
    x[0] = 7.0
    xv[0] = 8.0
    assert d[0].item() == 7.0 and d[1].item() == 8.0
    d[5] = 3.0
    x.resize_(8)
    assert x[5].item() == 3.0 and x[:4].tolist() == [7.0, 8.0, 2.0, 3.0]


def test_resize_keeps_data_of_many_aliases_in_step():
    x = tp.arange(2.0)
    aliases = [x.data for _ in range(40)]     # (the alias list drops dead entries as it grows)
    del aliases[5:]
    x.resize_(64)
    x[0] = 5.0
    assert all(a[0].item() == 5.0 for a in aliases)


@pytest.fixture
def mock():
    from tensorplay.testing.backend import MockBackend
    with MockBackend("mockg48", graphs=True) as be:
        yield be


def test_reduce_overhead_output_that_is_data_of_an_argument_stays_an_alias(mock):
    c = tp.compile(lambda x: x.data, mode="reduce-overhead")
    x = tp.arange(4.0).to("mockg48")
    for _ in range(4):
        out = c(x)
    out[0] = 55.0
    assert x.tolist() == [55.0, 1.0, 2.0, 3.0]
    assert "an output is an argument" in next(iter(c.graph_skips.values()))


def test_reduce_overhead_outputs_aliasing_through_data_keep_sharing(mock):
    def f(x):
        y = x * 2.0
        return y, y.data

    c = tp.compile(f, mode="reduce-overhead")
    x = tp.arange(4.0).to("mockg48")
    for _ in range(4):
        a, b = c(x)
    b[0] = 77.0
    assert a.tolist() == [77.0, 2.0, 4.0, 6.0]
    assert "share memory" in next(iter(c.graph_skips.values()))


def test_compiled_function_mutating_data_of_an_argument():
    def f(x):
        x.data.mul_(2.0)
        return x + 1.0

    c = tp.compile(f)
    x = tp.arange(4.0)
    for i in range(3):
        out = c(x)
    assert x.tolist() == [0.0, 8.0, 16.0, 24.0]
    assert out.tolist() == [1.0, 9.0, 17.0, 25.0]


# -- item 3: kthvalue's index among equal values is torch's cpu kernel's ------------------------
V = [3.0, 1.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0]


def test_kthvalue_ties_torch_indices():
    got = [tp.kthvalue(tp.tensor(V), k).indices.item() for k in range(1, 9)]
    assert got == [7, 4, 1, 6, 3, 2, 5, 0]           # torch 2.13 cpu
    got = [tp.tensor([3, 1, 3, 2, 1, 3, 2, 1]).kthvalue(k).indices.item() for k in range(1, 9)]
    assert got == [7, 4, 1, 6, 3, 2, 5, 0]


def test_kthvalue_ties_dims_nan_and_signed_zero():
    m = tp.tensor([[1.0, 1.0, 1.0, 0.0], [2.0, 2.0, 0.0, 2.0]])
    assert tp.kthvalue(m, 2, dim=1).indices.tolist() == [0, 1]
    r = tp.kthvalue(tp.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), 2, dim=0, keepdim=True)
    assert r.indices.tolist() == [[0, 0]] and r.values.tolist() == [[1.0, 1.0]]
    nan = float("nan")
    got = [tp.kthvalue(tp.tensor([nan, 1.0, nan, 1.0]), k).indices.item() for k in range(1, 5)]
    assert got == [1, 3, 2, 0]
    got = [tp.kthvalue(tp.tensor([0.0, -0.0, 0.0, -0.0]), k).indices.item() for k in range(1, 5)]
    assert got == [1, 0, 2, 3]


def test_kthvalue_ties_gradient_goes_to_the_chosen_index():
    x = tp.tensor(V, requires_grad=True)
    v, i = tp.kthvalue(x, 2)
    v.backward()
    assert i.item() == 4
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
