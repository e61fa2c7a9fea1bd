"""The cpu adapters build the result of a same-shape elementwise op (two dense tensors of one
shape and dtype, or a dense tensor and a Python number) in place instead of through the
backend's ``wrap``: the tensor must be the one ``wrap`` would give -- its own storage, row-major
strides, the operand's dtype and device, version 0, no autograd state -- and every other case
(broadcasting, a strided operand, a 0-dim result) must still give the right tensor."""

import pytest

import tensorplay as tp

np = pytest.importorskip("numpy")


def _same_as_fresh(r, shape, dtype):
    assert r.shape == shape and r.dtype == dtype and r.device == tp.device("cpu")
    assert r.is_contiguous() and r.storage_offset() == 0 and r._version == 0
    assert r.stride() == tp.empty(shape).stride()
    assert r.untyped_storage().nbytes == r.numel() * r.element_size()
    assert r.grad_fn is None and not r.requires_grad and r.grad is None and r.is_leaf


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
@pytest.mark.parametrize("expr", ["a * b", "a + b", "a - b", "a / b", "a * 3.0", "a + 2",
                                  "a - 0.5", "a / 4.0"])
def test_same_shape_results_are_fresh_dense_tensors(dtype, expr):
    a = tp.arange(1, 13, dtype=dtype).reshape(3, 4)
    b = tp.full((3, 4), 2.0, dtype=dtype)
    r = eval(expr)
    _same_as_fresh(r, (3, 4), dtype)
    ref = eval(expr, {"a": a.numpy(), "b": b.numpy()})
    np.testing.assert_array_equal(r.numpy(), ref.astype(r.numpy().dtype))
    # the result owns its memory: writing it leaves the operands alone, and the reverse
    before_a, before_b = a.tolist(), b.tolist()
    r.add_(100)
    assert a.tolist() == before_a and b.tolist() == before_b and r._version == 1
    a.mul_(0)
    assert r.tolist() == (ref.astype(r.numpy().dtype) + 100).tolist()


def test_other_layouts_still_take_wrap():
    a = tp.arange(12, dtype=tp.float32).reshape(3, 4)
    at = a.t()                                   # strided operand: result through wrap
    r = at * 2.0
    _same_as_fresh(r.t(), (3, 4), tp.float32)    # (torch's layout: the operand's, session 46)
    assert r.stride() == (1, 4) and r.tolist() == (a.numpy().T * 2).tolist()
    r = at * at
    _same_as_fresh(r.t(), (3, 4), tp.float32)
    r = a + tp.ones(4)                            # broadcast
    _same_as_fresh(r, (3, 4), tp.float32)
    s = tp.tensor(3.0) * 2.0                      # 0-dim
    _same_as_fresh(s, (), tp.float32)
    assert s.item() == 6.0
    v = a[:, 1:3]                                 # a view of another tensor's storage
    r = v * v
    _same_as_fresh(r, (3, 2), tp.float32)
    assert r.tolist() == (a.numpy()[:, 1:3] ** 2).tolist()


def test_results_in_autograd_and_views_behave():
    w = tp.ones(2, 3, requires_grad=True)
    y = (w * 3.0) * (w + 1.0)
    y.sum().backward()
    assert w.grad.tolist() == [[9.0] * 3] * 2     # d/dw 3w(w+1) = 6w + 3
    with tp.no_grad():
        r = w * 2.0
    assert r.grad_fn is None and not r.requires_grad
    v = r.view(6)
    v[0] = 7.0
    assert r[0, 0].item() == 7.0 and r._version == v._version
