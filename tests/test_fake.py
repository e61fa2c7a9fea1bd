"""Fake (metadata-only) tensors: ``FakeTensorMode``, ``fake.from_real`` and the ``meta`` device."""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay import fake, library as lib


def _meta(t):
    return (tuple(t.shape), t.dtype, str(t.device), tuple(t.stride()), t.storage_offset())


def test_factories_inside_fake_mode_make_fake_tensors():
    with fake.FakeTensorMode() as mode:
        assert fake.in_fake_mode()
        ts = [tp.empty(2, 3), tp.zeros(2, 3, dtype=tp.int8), tp.ones(4), tp.full((2,), 1.5),
              tp.arange(7), tp.rand(3, 1), tp.randn(2, 2, dtype=tp.float64),
              tp.tensor([[1, 2], [3, 4]])]
    assert not fake.in_fake_mode()
    assert all(t.is_fake for t in ts)
    assert [t.shape for t in ts] == [(2, 3), (2, 3), (4,), (2,), (7,), (3, 1), (2, 2), (2, 2)]
    assert [t.dtype for t in ts] == [tp.float32, tp.int8, tp.float32, tp.float32, tp.int64,
                                     tp.float32, tp.float64, tp.int64]
    assert all(t.device.type == "cpu" for t in ts)
    real = tp.ones(2, 3).t()
    f = mode.from_tensor(real)
    assert f.is_fake and _meta(f) == _meta(real)


def test_from_real_keeps_metadata_and_requires_grad():
    x = tp.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)[1:]
    f = fake.from_real(x)
    assert _meta(f) == _meta(x) and f.is_fake and not x.is_fake
    g = fake.from_real(tp.ones(2, requires_grad=True))
    assert g.requires_grad and g.is_leaf


def test_ops_on_fake_tensors_follow_real_metadata():
    tp.manual_seed(0)
    x = tp.randn(4, 3)
    w = tp.randn(3, 5)
    fx, fw = fake.from_real(x), fake.from_real(w)
    cases = [
        lambda a, b: (a @ b).softmax(-1),
        lambda a, b: a.t().contiguous(),
        lambda a, b: a.t()[1:, ::2],
        lambda a, b: (a.sum(0, keepdim=True) + b.t()).exp(),
        lambda a, b: tp.cat([a, a], 1).unsqueeze(0).expand(2, 4, 6),
        lambda a, b: tp.where(a > 0, a, 0.0).amax(1),
        lambda a, b: tp.stack([b, b], 2).reshape(3, -1),
        lambda a, b: (a.to(tp.float64) * 2).mean(),
        lambda a, b: a[tp.tensor([0, 2])],
    ]
    for fn in cases:
        real, fk = fn(x, w), fn(fx, fw)
        assert fk.is_fake and _meta(fk) == _meta(real)


def test_fake_tensors_have_no_data():
    f = fake.from_real(tp.ones(2))
    for get in (f.item, f.tolist, f.numpy, lambda: float(f[0])):
        with pytest.raises(RuntimeError, match="fake/meta tensors have no data"):
            get()
    assert f.data_ptr() == 0
    assert "fake_tensor(size=(2,)" in repr(f)


def test_data_dependent_op_gives_a_dynamic_size():
    # masked_select (x[mask]) as nonzero: the number of selected elements is a data-dependent
    # size (get_ctx().new_dynamic_size()), the checks that need no values still made
    f = fake.from_real(tp.ones(2, 3))
    for out in (f[f > 0], tp.masked_select(f, f[0] > 0), tp.unique(f)):
        assert len(out.shape) == 1 and fake.is_dynamic_size(out.shape[0]) and out.dtype == f.dtype
    with pytest.raises(RuntimeError, match="BoolTensor"):
        tp.masked_select(f, f)
    with pytest.raises(RuntimeError, match="must match"):
        tp.masked_select(f, tp.ones(4).bool())


def test_meta_device():
    m = tp.empty(3, 4, device="meta")
    assert m.device.type == "meta" and m.is_meta and m.is_fake
    r = (m @ m.t()).relu()
    assert r.shape == (3, 3) and r.device == tp.device("meta")
    assert tp.zeros(2, device=tp.device("meta")).is_meta
    assert "meta_tensor" in repr(m)


def test_inplace_on_fake_checks_shapes_and_bumps_version():
    f = fake.from_real(tp.ones(2, 3))
    assert f.add_(1) is f and f._version == 1
    f.copy_(fake.from_real(tp.ones(3)))
    assert f._version == 2
    with pytest.raises(RuntimeError, match="must match the size"):
        f.copy_(fake.from_real(tp.ones(4, 3)))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        f.add_(fake.from_real(tp.ones(2, 2, 3)))


def test_fake_errors_match_real_errors():
    a, b = tp.ones(2, 3), tp.ones(4)
    for fn in (lambda x, y: x + y, lambda x, y: x @ y):
        with pytest.raises(RuntimeError) as real:
            fn(a, b)
        with pytest.raises(RuntimeError) as fk:
            fn(fake.from_real(a), fake.from_real(b))
        assert str(real.value) == str(fk.value)


def test_backward_on_fake_tensors_gives_fake_gradients_of_input_shape():
    with fake.FakeTensorMode():
        w = tp.randn(3, 5, requires_grad=True)
        x = tp.randn(4, 3)
        loss = (x @ w).tanh().sum()
        loss.backward()
    assert w.grad is not None and w.grad.is_fake and _meta(w.grad) == _meta(w)


def test_custom_op_runs_its_fake_kernel():
    calls = []

    @lib.custom_op("test_fake::scale_rows", mutates_args=())
    def scale_rows(x: tp.Tensor, s: tp.Tensor) -> tp.Tensor:
        calls.append("real")
        return x * s.unsqueeze(1)

    @scale_rows.register_fake
    def _(x, s):
        calls.append("fake")
        return x.new_empty(x.shape)

    with fake.FakeTensorMode():
        out = scale_rows(tp.randn(4, 3), tp.randn(4))
    assert out.is_fake and out.shape == (4, 3) and calls == ["fake"]
    real = scale_rows(tp.ones(4, 3), tp.ones(4))
    assert not real.is_fake and calls == ["fake", "real"]
