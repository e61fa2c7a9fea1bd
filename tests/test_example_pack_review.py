"""Faults a new-user review found in the example pack (examples/), each pinned as torch behaves:
``gelu`` refuses integer inputs in eager and fake alike; ``softmax_cross_entropy`` validates its
targets (int64 class indices in range), the same way eager and under ``tensorplay.compile``;
``fused_add_mul_relu_out`` writes through the strides of a non-contiguous ``out``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake
from tensorplay.errors import CompileError

E = tp.ops.example


# -- gelu: floating inputs only (torch.nn.functional.gelu refuses integers) --------------------

@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.int8, tp.uint8, tp.bool])
def test_gelu_refuses_integer_and_bool_input_in_eager_and_fake_alike(dtype):
    x = tp.arange(6).reshape(2, 3).to(dtype)
    msg = rf"example::gelu: x must be a floating-point tensor, got {dtype}"
    with pytest.raises(TypeError, match=msg):
        E.gelu(x)
    with pytest.raises(TypeError, match=msg):
        E.gelu(fake.from_real(x))          # the fake kernel: same refusal, same words
    with pytest.raises(TypeError, match=msg):   # eager's error (tensorplay.compile adds a note)
        tp.compile(lambda a: E.gelu(a) * 2.0)(x)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
def test_gelu_eager_and_fake_agree_on_floating_input(dtype):
    x = tp.randn(4, 6).to(dtype).t()
    real, f = E.gelu(x), E.gelu(fake.from_real(x))
    assert (real.dtype, tuple(real.shape)) == (f.dtype, tuple(f.shape)) == (dtype, (6, 4))
    xs = x.to(tp.float64).numpy()
    ref = 0.5 * xs * (1 + np.tanh(math.sqrt(2 / math.pi) * (xs + 0.044715 * xs ** 3)))
    np.testing.assert_allclose(real.to(tp.float64).numpy(), ref,
                               rtol=1e-2 if dtype is tp.float16 else 1e-5, atol=1e-3)


# -- softmax_cross_entropy: targets are int64 class indices in [0, C) ---------------------------

def _sce_compiled():
    return tp.compile(lambda a, b: E.softmax_cross_entropy(a, b) * 1.0)


@pytest.mark.parametrize("dtype", [tp.int32, tp.int16, tp.uint8, tp.bool, tp.float32])
def test_sce_refuses_non_int64_targets_in_eager_and_compiled_alike(dtype):
    # torch's cross_entropy wants Long class indices ("expected scalar type Long but found Int")
    logits, target = tp.randn(4, 5), tp.tensor([0, 1, 0, 1]).to(dtype)
    msg = rf"example::softmax_cross_entropy: target must be int64 class indices, got {dtype}"
    with pytest.raises(TypeError, match=msg):
        E.softmax_cross_entropy(logits, target)
    with pytest.raises(TypeError, match=msg):
        _sce_compiled()(logits, target)


@pytest.mark.parametrize("bad", [5, 7, -1, -100])
def test_sce_refuses_out_of_range_targets_in_eager_and_compiled_alike(bad):
    # torch: IndexError "Target 5 is out of bounds." (-100, torch's ignore_index default, is not
    # ignored by this op: it has no ignore_index, so it is out of range too)
    logits, target = tp.randn(4, 5), tp.tensor([0, bad, 4, 1])
    msg = (rf"example::softmax_cross_entropy: target {bad} is out of bounds for 5 classes "
           rf"\(class indices must be in \[0, 5\)\)")
    with pytest.raises(IndexError, match=msg):
        E.softmax_cross_entropy(logits, target)
    with pytest.raises(IndexError, match=msg):
        _sce_compiled()(logits, target)


@pytest.mark.parametrize("logits_shape, target_shape", [((4, 5), (3,)), ((4, 5), (4, 1)),
                                                        ((20,), (4,)), ((2, 2, 5), (2,))])
def test_sce_refuses_mismatched_shapes_in_eager_too(logits_shape, target_shape):
    logits = tp.randn(*logits_shape)
    target = tp.zeros(*target_shape, dtype=tp.int64)
    with pytest.raises(ValueError, match=r"expected logits \(N, C\) and target \(N,\)"):
        E.softmax_cross_entropy(logits, target)


def test_sce_refuses_integer_logits():
    with pytest.raises(TypeError, match=r"example::softmax_cross_entropy: logits must be a "
                                        r"floating-point tensor, got tensorplay.int64"):
        E.softmax_cross_entropy(tp.zeros(2, 3, dtype=tp.int64), tp.tensor([0, 2]))


def test_sce_valid_targets_match_the_reference_eager_and_compiled():
    logits, target = tp.randn(6, 5), tp.tensor([0, 4, 2, 3, 1, 4])
    ln = logits.numpy().astype(np.float64)
    lse = np.log(np.exp(ln - ln.max(-1, keepdims=True)).sum(-1)) + ln.max(-1)
    ref = float(np.mean(lse - ln[np.arange(6), target.numpy()]))
    assert E.softmax_cross_entropy(logits, target).item() == pytest.approx(ref, rel=1e-5)
    assert _sce_compiled()(logits, target).item() == pytest.approx(ref, rel=1e-5)


# -- fused_add_mul_relu_out: any out of the right shape and dtype (torch's out= rule) -----------

def _triton_ops():
    from tensorplay_example_ops import triton_ops
    if not triton_ops.AVAILABLE:
        pytest.skip(triton_ops.UNAVAILABLE_REASON)
    return triton_ops


@pytest.mark.parametrize("layout", ["transposed", "column of a wider tensor", "step 2",
                                    "offset slice"])
def test_fused_out_writes_through_a_non_contiguous_out(layout):
    _triton_ops()
    x, y = tp.randn(6, 5), tp.randn(6, 5)
    if layout == "transposed":
        base = tp.full((5, 6), -7.0)
        out = base.t()
    elif layout == "column of a wider tensor":
        base = tp.full((6, 8), -7.0)
        out = base[:, 1:6]
    elif layout == "step 2":
        base = tp.full((12, 5), -7.0)
        out = base[::2]
    else:
        base = tp.full((40,), -7.0)
        out = base[3:33].reshape(6, 5).t().t()
    before = base.numpy().copy()
    version = out._version
    assert E.fused_add_mul_relu_out(x, y, 1.5, out) is None
    want = np.maximum((x.numpy() + y.numpy()) * 1.5, 0.0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    # only out's elements of the base were written
    marked = tp.zeros(base.shape)
    view = {"transposed": lambda b: b.t(), "column of a wider tensor": lambda b: b[:, 1:6],
            "step 2": lambda b: b[::2], "offset slice": lambda b: b[3:33]}[layout](marked)
    view.fill_(1.0)
    untouched = marked.numpy() == 0
    np.testing.assert_array_equal(base.numpy()[untouched], before[untouched])
    assert out._version > version                   # the write is seen as one


def test_fused_out_refuses_an_out_whose_elements_share_memory():
    _triton_ops()
    x, y = tp.randn(8), tp.randn(8)
    with pytest.raises(RuntimeError, match=r"more than one element of the written-to tensor"):
        E.fused_add_mul_relu_out(x, y, 1.5, tp.empty(1).expand(8))


# -- second review (2026-12-04): rms_norm, weighted_sum, bias_gelu ------------------------------

@pytest.mark.parametrize("dtype", [tp.int64, tp.int32, tp.bool])
def test_rms_norm_refuses_integer_input_in_eager_fake_and_compiled_alike(dtype):
    x, w = tp.tensor([[3, 4]]).to(dtype), tp.tensor([10, 10]).to(dtype)
    msg = rf"example::rms_norm: x must be a floating-point tensor, got {dtype}"
    with pytest.raises(TypeError, match=msg):
        E.rms_norm(x, w)                   # was int64 [[8, 11]]: truncated, not an error
    with pytest.raises(TypeError, match=msg):
        E.rms_norm(fake.from_real(x), fake.from_real(w))
    with pytest.raises(TypeError, match=msg):
        tp.compile(E.rms_norm)(x, w)
    with pytest.raises(TypeError, match=r"example::rms_norm: weight must be a floating-point"):
        E.rms_norm(tp.randn(2, 2), tp.tensor([1, 1]))


@pytest.mark.parametrize("wshape,xshape", [((1, 3), (2, 3)), ((4,), (2, 3)), ((), ())])
def test_rms_norm_checks_shapes_in_eager_as_in_its_fake(wshape, xshape):
    x, w = tp.randn(*xshape, requires_grad=True), tp.randn(*wshape, requires_grad=True)
    msg = (r"example::rms_norm: x must have at least one dimension" if not xshape else
           rf"example::rms_norm: weight must have shape \({xshape[-1]},\)")
    with pytest.raises(ValueError, match=msg):
        E.rms_norm(x, w)                   # (1, 3) passed forward and failed in backward
    with pytest.raises(ValueError, match=msg):
        E.rms_norm(fake.from_real(x), fake.from_real(w))


# (bfloat16 has float32's exponent range: its squares overflow where float32's do -- 1e20 gives
# zeros in torch too -- so only float16 is a case here)
@pytest.mark.parametrize("dtype,big", [(tp.float16, 300.0), (tp.float16, 6e4)])
def test_rms_norm_on_half_inputs_computes_in_float32(dtype, big):
    x, w = tp.full((2, 8), big).to(dtype), tp.ones(8).to(dtype)
    y = E.rms_norm(x, w)                   # x * x overflowed in the input dtype: all zeros
    assert y.dtype is dtype
    np.testing.assert_allclose(y.to(tp.float32).numpy(), np.ones((2, 8)), rtol=1e-2)
    xg = tp.full((2, 8), big).to(dtype).requires_grad_()
    E.rms_norm(xg, w).sum().backward()
    assert xg.grad.dtype is dtype and np.isfinite(xg.grad.to(tp.float32).numpy()).all()


@pytest.mark.parametrize("dtype", [tp.int32, tp.int16, tp.int8, tp.uint8, tp.bool])
def test_weighted_sum_fake_gives_sums_int64_for_integers(dtype):
    a, b = tp.ones(2, 3).to(dtype), tp.ones(3).to(dtype)
    real = E.weighted_sum(a, b)
    assert real.dtype is tp.int64
    assert E.weighted_sum(fake.from_real(a), fake.from_real(b)).dtype is tp.int64
    assert tp.compile(E.weighted_sum)(a, b).item() == real.item()
    assert tp.library.opcheck(E.weighted_sum, (a, b)) == {}


@pytest.mark.parametrize("dtype", [tp.int64, tp.bool])
def test_bias_gelu_refuses_integers_eagerly_as_compiled(dtype):
    x, b = tp.ones(2, 3).to(dtype), tp.ones(3).to(dtype)
    with pytest.raises(TypeError, match=r"example::bias_gelu: x and bias must be floating"):
        E.bias_gelu(x, b)                  # the default kernel gave float32
    with pytest.raises(TypeError, match=r"example::bias_gelu: x and bias must be floating"):
        tp.compile(E.bias_gelu)(x, b)


def test_rms_norm_composite_body_on_half_inputs_computes_in_float32():
    from tensorplay.testing.backend import MockBackend
    with MockBackend("halfmock"):          # no kernel of its own: the op's composite body runs
        x = tp.full((2, 8), 300.0).to(tp.float16).to("halfmock")
        y = E.rms_norm(x, tp.ones(8).to(tp.float16).to("halfmock"))
        assert y.dtype is tp.float16
        np.testing.assert_allclose(y.cpu().to(tp.float32).numpy(), np.ones((2, 8)), rtol=1e-2)


def test_a_fake_kernel_refusing_bad_input_is_not_reported_as_a_broken_fake():
    """A fake kernel that refuses invalid inputs on purpose (int32 targets) makes the compiled
    call fail with that refusal -- eager's TypeError, not a CompileError -- and advice about the
    inputs in a note, not "fix the fake kernel" (the fake kernel is right)."""
    logits, target = tp.randn(3, 4), tp.tensor([0, 1, 2], dtype=tp.int32)
    with pytest.raises(TypeError) as e:
        tp.compile(E.softmax_cross_entropy)(logits, target)
    assert not isinstance(e.value, CompileError)
    msg = str(e.value)
    assert "target must be int64" in msg and "target.long()" in msg
    notes = " ".join(getattr(e.value, "__notes__", ()))
    assert "failed on fake tensors; fix it" not in msg + notes, notes
    assert "refused these inputs" in notes, notes
