"""Layouts of new tensors (session 45, h-layout45), torch-free. torch's rule, built in
``tensorplay/_factories.py`` (``layout_strides``): ``*_like`` and ``clone`` default to
``memory_format=preserve_format``: a dense, non-overlapping input's strides are copied, another
input gets dense strides in its dims' stride order; ``contiguous_format`` is row-major,
``channels_last`` (``_3d``) NHWC (NDHWC) of a 4-D (5-D) shape. Real tensors (cpu; cuda where a
GPU is), fake tensors and ``tensorplay.compile``'s capture follow it. The same cases against torch
itself: tests/torch_bridge/test_layout_differential45.py."""

from __future__ import annotations

import pickle

import pytest

np = pytest.importorskip("numpy")

import tensorplay as tp  # noqa: E402

LIKES = {
    "empty_like": lambda t, **k: tp.empty_like(t, **k),
    "zeros_like": lambda t, **k: tp.zeros_like(t, **k),
    "ones_like": lambda t, **k: tp.ones_like(t, **k),
    "full_like": lambda t, **k: tp.full_like(t, 2.0, **k),
    "rand_like": lambda t, **k: tp.rand_like(t, **k),
    "randn_like": lambda t, **k: tp.randn_like(t, **k),
    "randint_like": lambda t, **k: tp.randint_like(t, 3, 9, **k),
    "Tensor.clone": lambda t, **k: t.clone(**k),
}

DENSE = {   # non-row-major, dense and non-overlapping
    "transposed": lambda d: tp.zeros(4, 3, 7, device=d).transpose(0, -1),
    "t2d": lambda d: tp.zeros(3, 5, device=d).t(),
    "nhwc": lambda d: tp.zeros(2, 4, 5, 3, device=d).permute(0, 3, 1, 2),
    "size1_odd_stride": lambda d: tp.zeros(3, 1, 4, device=d).as_strided((3, 1, 4), (4, 99, 1)),
    "empty_t": lambda d: tp.zeros(0, 3, device=d).t(),
}
NOT_DENSE = {
    "sliced_t": lambda d: tp.zeros(4, 6, device=d)[:, ::2].t(),
    "sliced_perm": lambda d: tp.zeros(2, 3, 4, 5, device=d)[:, :, :, ::2].permute(0, 2, 3, 1),
    "expanded": lambda d: tp.zeros(3, 1, device=d).expand(3, 4),
}


def _order(shape, stride):
    """The dims of size > 1, outermost first, by stride."""
    return sorted((d for d in range(len(shape)) if shape[d] > 1 and stride[d] != 0),
                  key=lambda d: -stride[d])


def _is_dense(t):
    """Non-overlapping and dense: some order of the dims is row-major."""
    dims = sorted((d for d in range(t.dim()) if t.shape[d] > 1), key=lambda d: t.stride(d))
    need = 1
    for d in dims:
        if t.stride(d) != need:
            return False
        need *= t.shape[d]
    return True


def _values(shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


# -- the memory_format objects --------------------------------------------------------------------
def test_memory_format_objects():
    names = ["preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]
    for n in names:
        f = getattr(tp, n)
        assert isinstance(f, tp.memory_format) and repr(f) == f"tensorplay.{n}" == str(f)
        assert pickle.loads(pickle.dumps(f)) is f
    assert len({id(getattr(tp, n)) for n in names}) == 4


@pytest.mark.parametrize("fn", ["empty_like", "Tensor.clone"])
def test_memory_format_must_be_a_memory_format(fn):
    with pytest.raises(TypeError, match="memory_format"):
        LIKES[fn](tp.zeros(2, 3).t(), memory_format="channels_last")
    with pytest.raises(TypeError, match="memory_format"):
        tp.zeros(2, 3).contiguous(memory_format="channels_last")


# -- preserve_format (the default) ----------------------------------------------------------------
@pytest.mark.parametrize("fmt", [None, "preserve_format"])
@pytest.mark.parametrize("fn", list(LIKES))
@pytest.mark.parametrize("inp", list(DENSE))
def test_dense_input_strides_are_kept(inp, fn, fmt):
    t = DENSE[inp]("cpu")
    kw = {} if fmt is None else {"memory_format": getattr(tp, fmt)}
    out = LIKES[fn](t, **kw)
    assert out.shape == t.shape and out.stride() == t.stride()
    assert out._base is None and out.storage_offset() == 0     # its own storage, not a view


@pytest.mark.parametrize("fn", list(LIKES))
@pytest.mark.parametrize("inp", list(NOT_DENSE))
def test_non_dense_input_gets_dense_strides_in_its_order(inp, fn):
    t = NOT_DENSE[inp]("cpu")
    out = LIKES[fn](t)
    assert out.shape == t.shape and _is_dense(out)
    assert _order(out.shape, out.stride()) == _order(t.shape, t.stride()) or \
        out.stride() == tp.empty(t.shape).stride()       # (stride 0: row-major)


@pytest.mark.parametrize("fn", list(LIKES))
def test_row_major_input_gives_row_major_result(fn):
    t = tp.zeros(2, 3, 4)
    out = LIKES[fn](t)
    assert out.is_contiguous() and out.stride() == t.stride()


@pytest.mark.parametrize("inp", list(DENSE) + list(NOT_DENSE))
def test_clone_keeps_values_and_does_not_alias(inp):
    t = (DENSE.get(inp) or NOT_DENSE[inp])("cpu")
    shape = tuple(t.shape)
    src = tp.empty_like(t).copy_(tp.tensor(_values(shape))) if inp != "expanded" else \
        tp.tensor(_values((3, 1))).expand(3, 4)
    c = src.clone()
    np.testing.assert_array_equal(c.numpy(), src.numpy())
    if c.numel():
        c.fill_(-1.0)
        assert float(src.numpy().min()) >= 0.0        # the copy has its own storage


def test_like_values_with_kept_strides():
    t = tp.zeros(4, 3, 7).transpose(0, -1)
    assert (tp.full_like(t, 2.5).numpy() == 2.5).all() and (tp.ones_like(t).numpy() == 1).all()
    r = tp.randint_like(t, 3, 9)
    assert r.stride() == t.stride() and r.numpy().min() >= 3 and r.numpy().max() < 9
    assert tp.randint_like(t, 5).numpy().max() < 5


def test_the_host_code_pattern_writes_through_the_inputs_strides():
    """``out = empty_like(x_t)`` given ``x_t``'s strides (attorch's batch norm, Triton's tutorial
    06): values written at ``x_t``'s strides into ``out``'s storage land where ``out`` reads them."""
    x = tp.tensor(_values((2, 3, 4))).permute(2, 0, 1)
    out = tp.empty_like(x)
    flat = out.as_strided((out.numel(),), (1,))
    src = x.numpy()
    for idx in np.ndindex(*x.shape):
        flat[int(np.dot(idx, x.stride()))] = float(src[idx])
    np.testing.assert_array_equal(out.numpy(), src)


def test_requires_grad_and_dtype_of_a_strided_like():
    t = tp.zeros(3, 5).t()
    r = tp.zeros_like(t, dtype=tp.float64, requires_grad=True)
    assert r.stride() == t.stride() and r.dtype == tp.float64 and r.requires_grad and r.is_leaf


def test_clone_gradient_of_a_transposed_input():
    x = tp.tensor(_values((3, 4)), requires_grad=True)
    c = x.t().clone()
    assert c.stride() == (1, 4) and c.requires_grad
    w = tp.tensor(_values((4, 3)) + 1)
    (c * w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (_values((4, 3)) + 1).T)


@pytest.mark.parametrize("fn", ["new_empty", "new_zeros", "new_ones"])
def test_new_factories_are_row_major_and_take_no_memory_format(fn):
    """torch's ``new_*`` take no ``memory_format`` and make row-major tensors of any ``self``."""
    t = tp.zeros(4, 3, 7).transpose(0, -1)
    out = getattr(t, fn)(t.shape)
    assert out.shape == t.shape and out.is_contiguous()
    with pytest.raises(TypeError, match="memory_format"):
        getattr(t, fn)(t.shape, memory_format=tp.preserve_format)
    assert t.new_full(t.shape, 1.0).is_contiguous()


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="tensorplay.clone is the tp::clone op "
                   "record (schema clone(Tensor input)): row-major, no memory_format=; torch.clone "
                   "keeps a dense input's strides as Tensor.clone now does (op-level change: lead)")
def test_function_clone_keeps_strides_as_the_method():
    t = tp.zeros(4, 3, 7).transpose(0, -1)
    assert tp.clone(t).stride() == t.clone().stride() == t.stride()


# -- explicit formats -----------------------------------------------------------------------------
@pytest.mark.parametrize("fn", list(LIKES))
def test_contiguous_format_is_row_major(fn):
    t = tp.zeros(4, 3, 7).transpose(0, -1)
    out = LIKES[fn](t, memory_format=tp.contiguous_format)
    assert out.is_contiguous() and out.shape == t.shape


@pytest.mark.parametrize("fn", list(LIKES))
def test_channels_last(fn):
    t = tp.zeros(2, 3, 4, 5)
    out = LIKES[fn](t, memory_format=tp.channels_last)
    assert out.is_contiguous(memory_format=tp.channels_last) and not out.is_contiguous()
    assert out.stride() == tp.zeros(2, 4, 5, 3).permute(0, 3, 1, 2).stride()
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        LIKES[fn](tp.zeros(2, 3), memory_format=tp.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        LIKES[fn](t, memory_format=tp.channels_last_3d)
    out3 = LIKES[fn](tp.zeros(2, 3, 4, 5, 6), memory_format=tp.channels_last_3d)
    assert out3.is_contiguous(memory_format=tp.channels_last_3d)
    assert out3.stride() == tp.zeros(2, 4, 5, 6, 3).permute(0, 4, 1, 2, 3).stride()


def test_empty_memory_format():
    e = tp.empty(2, 3, 4, 5, memory_format=tp.channels_last)
    assert e.shape == (2, 3, 4, 5) and e.is_contiguous(memory_format=tp.channels_last)
    assert tp.empty(2, 3, memory_format=tp.contiguous_format).is_contiguous()
    with pytest.raises(RuntimeError, match="required rank 4"):
        tp.empty(2, 3, memory_format=tp.channels_last)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        tp.empty(2, 3, memory_format=tp.preserve_format)
    assert tp.empty(2, 0, 3, 4, memory_format=tp.channels_last).stride() == (0, 1, 0, 0)


def test_contiguous_memory_format():
    x = tp.tensor(_values((2, 3, 4, 5)))
    c = x.contiguous(memory_format=tp.channels_last)
    assert c.is_contiguous(memory_format=tp.channels_last)
    np.testing.assert_array_equal(c.numpy(), x.numpy())
    assert c.contiguous(memory_format=tp.channels_last) is c
    back = c.contiguous()
    assert back.is_contiguous() and back is not c
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert x.contiguous(memory_format=tp.contiguous_format) is x
    assert x.contiguous(memory_format=tp.preserve_format) is x    # no copy needed: torch's too
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        c.contiguous(memory_format=tp.preserve_format)
    with pytest.raises(RuntimeError, match="required rank 4"):
        tp.zeros(2, 3).t().contiguous(memory_format=tp.channels_last)


def test_is_contiguous_memory_format():
    x = tp.zeros(2, 3, 4, 5)
    assert x.is_contiguous() and x.is_contiguous(memory_format=tp.contiguous_format)
    assert not x.is_contiguous(memory_format=tp.channels_last)
    assert not tp.zeros(2, 3).is_contiguous(memory_format=tp.channels_last)    # another rank
    assert tp.zeros(2, 1, 1, 1).is_contiguous(memory_format=tp.channels_last)  # size-1 dims
    assert tp.zeros(0, 3).t().is_contiguous()       # empty: contiguous whatever its strides


# -- fake tensors and compile ---------------------------------------------------------------------
@pytest.mark.parametrize("fn", list(LIKES))
def test_fake_like_and_clone_keep_strides(fn):
    with tp.fake.FakeTensorMode():
        t = tp.empty(4, 3, 7).transpose(0, -1)
        out = LIKES[fn](t)
        assert out.is_fake and out.stride() == t.stride()
        s = tp.empty(4, 6)[:, ::2].t()
        assert LIKES[fn](s).stride() == (1, 3)
    m = tp.empty(3, 5, device="meta").t()
    assert LIKES[fn](m).stride() == m.stride() and LIKES[fn](m).device.type == "meta"


def test_compiled_like_and_clone_layouts_match_eager():
    def f(x):
        return tp.empty_like(x).fill_(1.0), x.clone(), tp.zeros_like(x), x.clone() * 1
    cf = tp.compile(f)
    x = tp.tensor(_values((3, 4))).t()
    eager = f(x)
    for _ in range(3):   # capture, then the cached graph
        got = cf(x)
        assert [g.stride() for g in got[:3]] == [e.stride() for e in eager[:3]] == [(1, 4)] * 3
        np.testing.assert_array_equal(got[1].numpy(), x.numpy())
        np.testing.assert_array_equal(got[3].numpy(), x.numpy())


# -- cuda (the lead's GPU runs) -------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.parametrize("fn", list(LIKES))
def test_cuda_like_and_clone_keep_strides(fn):
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    t = tp.tensor(_values((4, 3, 7)), device="cuda").transpose(0, -1)
    out = LIKES[fn](t)
    assert out.device.type == "cuda" and out.stride() == t.stride()
    s = NOT_DENSE["sliced_t"]("cuda")
    assert LIKES[fn](s).stride() == (1, 3)
    c = t.clone()
    np.testing.assert_array_equal(c.cpu().numpy(), t.cpu().numpy())
    cl = tp.empty(2, 3, 4, 5, device="cuda", memory_format=tp.channels_last)
    assert cl.is_contiguous(memory_format=tp.channels_last)


def test_gradcheck_of_a_transposed_input():
    """gradcheck perturbs a copy of each input through a flat view: the copy must be row-major
    now that ``clone`` keeps a transposed input's strides (it failed: numerical 0)."""
    x = tp.tensor(_values((3, 4)).astype(np.float64)).t().requires_grad_()
    assert x.stride() == (1, 4)
    assert tp.autograd.gradcheck(lambda t: t * t, (x,), eps=1e-6, atol=1e-6, rtol=1e-4)
    assert tp.autograd.gradcheck(lambda t: t.clone(), (x,), eps=1e-6, atol=1e-6, rtol=1e-4)
