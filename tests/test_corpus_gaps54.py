"""Gaps found adding Cut Cross-Entropy (apple/ml-cross-entropy, PyPI cut-cross-entropy 25.1.1)
to the kernel corpus, each fixed at its mechanism and tested here by the kind of fault:

* ``tensorplay.uint32`` was missing: torch's barebones unsigned dtype, which kernel libraries
  allocate their lock arrays in (CCE's ``e.new_full((n,), 0, dtype=torch.uint32)``, spun on with
  ``tl.atomic_cas``): made, filled (``-1`` wraps as torch), checked for overflow, converted,
  reported (``is_signed``, ``iinfo``, ``type()``), refused in promotion with other integer / bool
  dtypes as torch refuses it, and handed to a Triton kernel.
* ``tensorplay.get_float32_matmul_precision`` / ``set_float32_matmul_precision`` were missing:
  torch's global a library reads to pick its dots' precision (CCE's ``DOT_PRECISION`` heuristic).
* ``opcheck``'s gradient check ran an op in float32 when its *forward* took float32 for a
  float16 sample, and reported the op's *backward* refusing float32 (a library asserting
  half-precision embeddings) as a failure: the raised precision is now taken only when forward
  and backward both take it, else the sample's own dtypes are used; a wrong backward is still
  caught there.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import Tensor, library


# --- uint32 --------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: tp.zeros(3).new_full((4,), 0, dtype=tp.uint32),
    lambda: tp.zeros((4,), dtype=tp.uint32),
    lambda: tp.full((4,), 0, dtype=tp.uint32),
    lambda: tp.tensor([0, 0, 0, 0], dtype=tp.uint32),
    lambda: tp.zeros(4, dtype=tp.int64).to(tp.uint32),
    lambda: tp.empty(4, dtype=tp.uint32).zero_(),
])
def test_uint32_is_made_by_every_factory(make):
    t = make()
    assert t.dtype is tp.uint32 and t.element_size() == 4 and t.tolist() == [0] * 4
    assert t.numpy().dtype == np.uint32
    assert not t.is_signed() and not t.dtype.is_signed and not t.is_floating_point()


def test_uint32_range_wrap_and_overflow_as_torch():
    assert tp.full((2,), 2**32 - 1, dtype=tp.uint32).tolist() == [2**32 - 1] * 2
    assert tp.zeros(2, dtype=tp.uint32).fill_(-1).tolist() == [2**32 - 1] * 2   # wraps
    with pytest.raises(RuntimeError, match="uint32 without overflow"):
        tp.full((2,), 2**32, dtype=tp.uint32)
    with pytest.raises(RuntimeError, match="uint32 without overflow"):
        tp.full((2,), 1.5e10, dtype=tp.uint32)
    info = tp.iinfo(tp.uint32)
    assert (info.bits, info.min, info.max, info.dtype) == (32, 0, 2**32 - 1, "uint32")
    big = tp.tensor([2**32 - 1, 7], dtype=tp.uint32)
    assert big.to(tp.int64).tolist() == [2**32 - 1, 7]      # no sign: 4294967295, not -1
    assert big.sum().item() == 2**32 + 6 and big.sum().dtype is tp.int64   # as torch
    assert big.type() == "tensorplay.UInt32Tensor" and big.clone().dtype is tp.uint32


@pytest.mark.parametrize("other", [tp.int64, tp.int32, tp.int8, tp.uint8, tp.bool])
def test_uint32_promotion_with_integers_is_refused_as_torch(other):
    for a, b in ((tp.uint32, other), (other, tp.uint32)):
        with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
            tp.promote_types(a, b)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64"):
        tp.zeros(2, dtype=tp.uint32) + tp.zeros(2, dtype=other)


@pytest.mark.parametrize("other", [tp.float16, tp.bfloat16, tp.float32, tp.float64])
def test_uint32_promotes_to_floats(other):
    assert tp.promote_types(tp.uint32, other) is other
    assert tp.promote_types(other, tp.uint32) is other
    assert tp.promote_types(tp.uint32, tp.uint32) is tp.uint32


def test_uint32_lock_array_in_a_triton_kernel():
    """A kernel spinning on a uint32 lock (CCE's pattern: atomic_cas 0 -> 1, update, atomic_xchg
    back) through wrap_triton on cpu: every program takes and releases it."""
    pytest.importorskip("triton")
    pytest.importorskip("tensorplay_triton")
    import triton
    import triton.language as tl
    from tensorplay.library import triton_op, wrap_triton

    @triton.jit
    def locked_sum(X, Out, Lock, N, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        part = tl.sum(tl.load(X + offs, mask=offs < N, other=0.0), 0)
        while tl.atomic_cas(Lock, 0, 1) == 1:
            pass
        tl.store(Out, tl.load(Out) + part)
        tl.atomic_xchg(Lock, 0)

    @triton_op("gaps54::locked_sum", mutates_args=())
    def op(x: Tensor) -> tuple[Tensor, Tensor]:
        out = x.new_zeros((1,))
        lock = x.new_full((1,), 0, dtype=tp.uint32)
        wrap_triton(locked_sum)[(triton.cdiv(x.numel(), 4),)](x, out, lock, x.numel(), BLOCK=4)
        return out, lock

    x = tp.arange(10, dtype=tp.float32)
    out, lock = op(x)
    assert out.tolist() == [45.0] and lock.dtype is tp.uint32 and lock.tolist() == [0]


# --- float32 matmul precision ---------------------------------------------------------------------

def test_float32_matmul_precision_as_torch():
    assert tp.get_float32_matmul_precision() == "highest"
    try:
        for p in ("high", "medium", "highest"):
            tp.set_float32_matmul_precision(p)
            assert tp.get_float32_matmul_precision() == p
        tp.set_float32_matmul_precision("high")
        with pytest.warns(UserWarning, match="no effect"):
            tp.set_float32_matmul_precision("HIGH")      # case-sensitive, as torch
        assert tp.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="expects a str"):
            tp.set_float32_matmul_precision(3)
        # tensorplay's own matmul is float32 whatever the setting
        a = tp.tensor([[1.0 + 2**-20, 1.0]])
        assert (a @ a.T).item() == np.float32(np.float32(1.0 + 2**-20) ** 2 + 1)
    finally:
        tp.set_float32_matmul_precision("highest")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.set_float32_matmul_precision("highest")


# --- opcheck: a backward refusing the raised precision ----------------------------------------------

def _half_only_op(name, factor):
    """``y = x * x`` on any float dtype; its backward asserts half precision (as CCE's
    ``cce_backward_kernel`` does) and returns ``factor * 2 x dy`` (factor 1: right)."""
    @library.custom_op(f"gaps54::{name}", mutates_args=())
    def sq(x: Tensor) -> Tensor:
        return x * x

    @sq.register_fake
    def _(x):
        return tp.empty_like(x)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        assert x.dtype in (tp.float16, tp.bfloat16), "Backwards requires half precision"
        return dy * x * (2 * factor)

    sq.register_autograd(backward, setup_context=setup)
    return sq


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
def test_opcheck_runs_a_half_only_backward_in_the_samples_dtype(dtype):
    op = _half_only_op(f"sq_{dtype.name}", 1)
    x = tp.tensor([0.5, -1.25, 2.0, 0.75], dtype=dtype, requires_grad=True)
    assert library.opcheck(op, (x,)) == {}


def test_opcheck_still_catches_a_wrong_half_only_backward():
    op = _half_only_op("sq_wrong", 3)
    x = tp.tensor([0.5, -1.25, 2.0, 0.75], dtype=tp.float16, requires_grad=True)
    failures = library.opcheck(op, (x,), raise_exception=False)
    assert "test_gradients" in failures, failures
    assert "raised AssertionError" not in str(failures["test_gradients"])
