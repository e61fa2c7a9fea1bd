"""``tensorplay.tensor`` / ``as_tensor`` / ``new_tensor`` with ``device="meta"``: a meta tensor of
the data's shape and dtype, as torch's (checked in torch 2.13); they raised an internal
AttributeError ("'MetaBackend' object has no attribute 'kernels'")."""

import pytest

import tensorplay as tp


@pytest.mark.parametrize("make, shape, dtype", [
    (lambda: tp.tensor([1.0, 2.0], device="meta"), (2,), tp.float32),
    (lambda: tp.as_tensor([1.0, 2.0], device="meta"), (2,), tp.float32),
    (lambda: tp.tensor([[1, 2], [3, 4]], device="meta"), (2, 2), tp.int64),
    (lambda: tp.tensor([[1, 2], [3, 4]], device="meta", dtype=tp.float64), (2, 2), tp.float64),
    (lambda: tp.empty(2, device="meta").new_tensor(3.0), (), tp.float32),
    (lambda: tp.tensor(tp.ones(2), device="meta"), (2,), tp.float32),
], ids=["tensor", "as_tensor", "int", "dtype=", "new_tensor", "from a tensor"])
def test_data_on_meta_gives_a_meta_tensor(make, shape, dtype):
    t = make()
    assert t.device.type == "meta" and tuple(t.shape) == shape and t.dtype is dtype


def test_meta_tensor_from_data_requires_grad_like_any_other():
    t = tp.tensor([1.0, 2.0], device="meta", requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="only floating point tensors can require gradients"):
        tp.tensor(3, device="meta", requires_grad=True)
