"""opcheck's per-sample work is not repeated (issue 32 item 8), and what it now shares keeps its
meaning: a kernel refusing float64 is still checked (in float32) and its wrong formula caught,
the verdicts and their figures are the same on every call (the seeded generator is rewound, not
reseeded), the sample's tensors are never touched, and two compiled functions whose generated
text is the same (compiled once) each keep their own constants."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.testing.opcheck import run_checks

Tensor = tp.Tensor


@lib.custom_op("oc_rep::f32_only_wrong", mutates_args=())
def f32_only_wrong(x: Tensor) -> Tensor:
    if x.dtype != tp.float32:
        raise TypeError("f32_only_wrong: float32 only")
    return tp.from_numpy(np.sin(x.detach().numpy()))


f32_only_wrong.register_fake(lambda x: x.new_empty(x.shape))
f32_only_wrong.register_autograd(
    lambda ctx, g: g * 2.0 * ctx.saved_tensors[0].cos(),        # planted: factor 2
    setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))


@lib.custom_op("oc_rep::scale", mutates_args=())
def scale(x: Tensor) -> Tensor:
    return x * 3.0


scale.register_fake(lambda x: x.new_empty(x.shape))
scale.register_autograd(lambda ctx, g: g * 3.5)                  # planted: 3.5, not 3


def test_kernel_refusing_float64_is_checked_in_float32_and_caught():
    r = run_checks(f32_only_wrong, (tp.randn(6, 5),), test_utils=["test_gradients"])
    res = r["test_gradients"]
    assert res.status == "fail", res
    assert "float32" in res.message and "'x'" in res.message, res.message


def test_gradient_verdicts_are_the_same_on_every_call():
    x = tp.randn(8, 16)
    first = lib.opcheck(scale, (x,), raise_exception=False)
    assert "test_gradients" in first, first
    # another op checked in between (another seed) changes nothing
    lib.opcheck(f32_only_wrong, (tp.randn(3, 4),), raise_exception=False)
    for _ in range(2):
        assert lib.opcheck(scale, (x,), raise_exception=False) == first


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "offset", "expanded"])
def test_every_check_leaves_the_sample_untouched(layout):
    base = tp.randn(6, 4)
    x = {"contiguous": base, "transposed": tp.randn(4, 6).t(),
         "offset": tp.randn(30)[3:27].view(6, 4), "expanded": tp.randn(1, 4).expand(6, 4)}[layout]
    if layout != "expanded":
        x.requires_grad_(True)
    before = (x.detach().numpy().copy(), tuple(x.stride()), x.storage_offset())
    failures = lib.opcheck(scale, (x,), raise_exception=False)
    assert "test_gradients" in failures   # the checks ran (the planted formula is caught)
    assert np.array_equal(x.detach().numpy(), before[0])
    assert (tuple(x.stride()), x.storage_offset()) == before[1:]


def test_same_generated_text_keeps_its_own_constants():
    outs = []
    for k in (2.0, 5.0):
        w = tp.full((3,), k)

        def f(x, w=w):
            return x * w

        g = tp.compile(f)
        outs.append(g(tp.ones(3)).tolist())
    assert outs == [[2.0, 2.0, 2.0], [5.0, 5.0, 5.0]]
