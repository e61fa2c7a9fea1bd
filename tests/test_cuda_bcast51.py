"""Broadcasts materialised on cuda (``expand(...).contiguous()``, ``clone``, ``copy_`` from a
broadcast, a broadcast gradient copied into ``.grad``) give the cpu's bits, for every element
size and for the layouts that take the division-free kernel (two dims after merging) and those
that do not (three dims, a transposed broadcast, small tensors). GPU only (``-m cuda``)."""

from __future__ import annotations

import pytest

import tensorplay as tp

np = pytest.importorskip("numpy")

pytestmark = pytest.mark.cuda


@pytest.fixture(scope="module", autouse=True)
def _cuda():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")


def _src(shape, dtype, device):
    n = int(np.prod(shape))
    if dtype is tp.bool:
        return (tp.arange(n, device=device) % 3 == 0).reshape(shape)
    if dtype.is_floating_point:
        t = tp.arange(n, dtype=tp.float32, device=device).reshape(shape) * 0.37 - 11.0
        return t.to(dtype)
    return (tp.arange(n, device=device) * 7 - 50).reshape(shape).to(dtype)


# (source shape, expanded shape): two dims after merging (the kernel), or not (CuPy's copy)
LAYOUTS = [
    ((4096, 1), (4096, 300)),          # a column broadcast: sum(1)'s gradient
    ((1, 70000), (3, 70000)),          # a row repeated
    ((70000,), (2, 70000)),            # a leading dim added
    ((2, 1, 40000), (2, 5, 40000)),    # three dims after merging: CuPy's copy
    ((1, 1), (300, 300)),              # one value everywhere
    ((64, 1), (64, 64)),               # small: CuPy's copy
    ((300, 1, 1), (300, 20, 30)),      # merges to (300, 600) with strides (1, 0)
]
DTYPES = [tp.float32, tp.float16, tp.bfloat16, tp.float64, tp.int64, tp.int32, tp.uint8, tp.bool]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("src_shape,shape", LAYOUTS, ids=str)
def test_expand_contiguous_clone_and_copy_match_cpu(src_shape, shape, dtype):
    want = _src(src_shape, dtype, "cpu").expand(*shape).contiguous()
    s = _src(src_shape, dtype, "cuda")
    e = s.expand(*shape)
    got_contig = e.contiguous()
    got_clone = e.clone()
    got_copy = tp.empty(shape, dtype=dtype, device="cuda").copy_(e)
    for name, got in (("contiguous", got_contig), ("clone", got_clone), ("copy_", got_copy)):
        assert got.is_contiguous() and got.shape == want.shape and got.dtype is want.dtype
        g, w = got.cpu(), want
        if dtype.is_floating_point:
            g, w = g.float(), w.float()      # (bfloat16/float16: compared as float32 values)
        assert g.tolist() == w.tolist(), name


def test_a_transposed_broadcast_and_an_offset_view():
    base = tp.arange(3 * 70000, dtype=tp.float32, device="cuda").reshape(3, 70000)
    # a transposed row broadcast: element strides (1, 0), the kernel with sr = 1
    src = base[1:2].t().expand(70000, 4)            # (70000, 1) of stride 1 -> (70000, 4)
    want = base.cpu()[1:2].t().expand(70000, 4).contiguous()
    assert src.contiguous().cpu().tolist() == want.tolist()
    # a view with an offset into its storage
    v = base[2, 5:].unsqueeze(0).expand(3, 69995)
    assert v.clone().cpu().tolist() == base.cpu()[2, 5:].unsqueeze(0).expand(3, 69995).tolist()


def test_a_broadcast_gradient_lands_in_grad_as_on_cpu():
    xs = [tp.randn(4096, 512, device=d, requires_grad=True) for d in ("cpu",)]
    xc = xs[0].detach().to("cuda").requires_grad_(True)
    xs[0].sum(1).mean().backward()
    xc.sum(1).mean().backward()
    assert xc.grad.is_contiguous()
    np.testing.assert_array_equal(xc.grad.cpu().numpy(), xs[0].grad.numpy())
    y = tp.randn(2, 300, 700, device="cuda", requires_grad=True)
    y.sum((1, 2), keepdim=True).sum().backward()
    assert (y.grad.cpu().numpy() == 1.0).all() and y.grad.is_contiguous()
