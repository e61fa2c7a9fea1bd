"""Strided copies and transpose/permute views on cuda: their host work (issue 32 item 4).

* A row-major copy of a strided view that the generated strided copy keeps -- ``.contiguous()``
  of a permuted, transposed, sliced, 1-d strided or expanded view, ``.clone()`` of a view that is
  not dense, ``.reshape`` of a tensor no view can give -- is one driver launch per call, run by
  one generated function per layout (allocation, packing and the launch: no argument tuple,
  no ``Direct.go`` frame), whose packed sizes and element strides are the cpu view's own and
  whose kernel, run with exactly those parameters, gives the cpu backend's values bit for bit.
* ``make_view`` (every view op: ``transpose``, ``permute``, slices...) builds the tensor that
  ``new_tensor`` followed by ``set_view`` builds, field by field, without their frames.

No GPU needed but for the ``cuda``-marked tests: the kernels are compiled for an sm_90 target
and each driver call is recorded with its parameter block (``benchmarks/bench_cuda_host
.launch_stand_ins``; the stand-ins refuse to install on a GPU machine, where those tests skip),
so a call that ran anything but the one launch (CuPy's copy kernel) would raise for want of a
driver. On a GPU, the marked tests compare the copies' values with the cpu backend's.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
import tensorplay as tp
from _launch_stand_ins import compiled_or_skip, param_bytes, stand_ins

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")

DTYPES = ["float32", "bfloat16", "int64", "bool"]

# name -> (base shape, the view); applied alike to a cpu tensor and its cuda copy
VIEWS = {
    "transposed": ((2, 8, 6, 16), lambda t: t.transpose(1, 2)),        # q.transpose(1, 2)
    "permuted": ((2, 6, 5, 4), lambda t: t.permute(3, 1, 0, 2)),
    "sliced": ((40, 50), lambda t: t[::2, 3:41]),
    "1-d strided": ((300,), lambda t: t[1::3]),
    "expanded": ((5, 1, 7), lambda t: t.expand(5, 4, 7)),
    "view of a view": ((6, 5, 4), lambda t: t[1:, :, ::2].transpose(0, 2)),
}
# what makes the row-major copy of each: (name, the call, the views it applies to)
COPIES = [
    ("contiguous", lambda v: v.contiguous(), tuple(VIEWS)),
    ("clone", lambda v: v.clone(), ("sliced", "1-d strided", "expanded")),
    ("reshape(-1)", lambda v: v.reshape(-1), ("transposed", "permuted", "sliced")),
]
CASES = [(c, v) for c, _, vs in COPIES for v in vs]


def _cpu_values(dtype, shape, seed=0):
    """A cpu tensor of ``dtype`` and ``shape`` with distinct values (NaN, -0.0 and inf among the
    floating ones, the extremes among int64's)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        return tp.from_numpy(rng.integers(0, 2, shape).astype(bool))
    if dtype == "int64":
        v = rng.integers(-2 ** 62, 2 ** 62, n, dtype=np.int64)
        v[:2] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
        return tp.from_numpy(v.reshape(shape))
    v = rng.standard_normal(n).astype(np.float32)
    v[:3] = [np.nan, -0.0, np.inf]
    t = tp.from_numpy(v.reshape(shape))
    return t.to(tp.bfloat16) if dtype == "bfloat16" else t


def _bits(t):
    """A cpu tensor's values as raw bytes (NaN payloads and -0.0 compare as they are)."""
    a = np.ascontiguousarray(t.numpy())
    return a.view(np.uint8).reshape(-1)


# -- the launch stand-ins (no GPU) -------------------------------------------------------------
@pytest.fixture(scope="module")
def stubbed():
    """The launch stand-ins (no GPU; no warm-up calls), a fresh one-GPU cuda backend with
    bfloat16 in use, registered while these run (the public calls reach it), and the recorded
    launches: (function, grid, the parameter block's first 16 8-byte slots)."""
    launched = []

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched.append((f, g0, param_bytes(params, 16)))
    with stand_ins(launch_kernel, 1 << 22, bf16=True, register=True) as be:
        yield be, launched


def _on_stubbed_cuda(be, cpu):
    """A cuda tensor (on the stand-ins' host memory) holding ``cpu``'s bytes, row-major."""
    import cupy
    import tensorplay_cuda
    arr = cupy.ndarray(cpu.shape, be.native_dtype(cpu.dtype))
    host = np.ascontiguousarray(cpu.numpy())
    ctypes.memmove(arr.data.ptr, host.ctypes.data, host.nbytes)
    t = tensorplay_cuda.from_cupy(arr)
    assert t.device == tp.device("cuda", 0) and t.dtype is cpu.dtype
    return t


_first = compiled_or_skip


def _interpret(be, view_dtype, nd, raw, flat_from_offset, n):
    """The strided-copy kernel (``triton_fusion``'s one-step ``to_dtype`` chain, input in load
    mode ``"b"``, compiled ``general``) run by Triton's interpreter with the parameters packed in
    ``raw`` (after the three addresses: the element count, 0, ``nd`` sizes, ``nd`` element
    strides), its input ``flat_from_offset`` (the view's storage from the view's offset, as a
    flat NumPy array): the row-major result as NumPy bytes."""
    from tensorplay.backends import ElementwiseExpr, Step
    from tensorplay_cuda import triton_fusion
    vals = struct.unpack_from("=" + "i4x" * (2 + 2 * nd), raw, 24)
    count, zero, sizes, strides = vals[0], vals[1], vals[2:2 + nd], vals[2 + nd:]
    assert count == n and zero == 0
    dt = view_dtype
    kern = triton_fusion.TritonChain(
        ElementwiseExpr(1, (Step("to_dtype", (("in", 0),)),), (0,), (dt,), tp.device("cpu")),
        be)._kernel(((dt,), ("b",), nd, False, False), [dt], ("b",), nd, False,
                    general=True)[0]
    blk = triton_fusion.BLOCK_NARROW if flat_from_offset.dtype.itemsize <= 2 else \
        triton_fusion.BLOCK
    out = np.zeros(n, flat_from_offset.dtype)
    triton_fusion._launch_interpreted(kern, (-(-n // blk),), [
        flat_from_offset, out, np.zeros(1), count, zero, *sizes, *strides], 1, blk)
    return sizes, strides, out.view(np.uint8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("copy, view", CASES)
def test_a_kept_strided_copy_is_one_launch_of_the_cpu_layout_and_values(stubbed, copy, view,
                                                                        dtype):
    """Past the compiling call: one launch per call, of a grid covering the elements, into a
    fresh row-major cuda tensor of the cpu result's shape, strides and dtype; its packed
    parameters are the view's address and the result's, the element count, and the cpu view's
    sizes and element strides; the kernel run with them (Triton's interpreter) gives the cpu
    result's bytes."""
    be, launched = stubbed
    import tensorplay_cuda
    shape, make = VIEWS[view]
    f = dict((c, fn) for c, fn, _ in COPIES)[copy]
    cpu = _cpu_values(dtype, shape)
    cv = make(cpu)
    want = f(cv)
    base = _on_stubbed_cuda(be, cpu)
    v = make(base)
    assert v.shape == cv.shape and v.stride() == cv.stride()
    assert v.storage_offset() == cv.storage_offset() and not v.is_contiguous()
    _first(lambda: f(v))
    for _ in range(3):
        before = len(launched)
        r = f(v)
        assert len(launched) == before + 1
        assert r.device == v.device and r.dtype is want.dtype
        assert r.shape == want.shape and r.stride() == want.stride() and r.is_contiguous()
        assert r._base is None                  # a fresh tensor, nobody's view (reshape too)
    fn, grid, raw = launched[-1]
    p_in, p_out, _fconst = struct.unpack_from("=QQQ", raw)
    src, dst = tensorplay_cuda.as_cupy(v), tensorplay_cuda.as_cupy(r)
    assert p_in == src.data.ptr and p_out == dst.data.ptr
    item = src.dtype.itemsize
    assert p_in == tensorplay_cuda.as_cupy(base).data.ptr + cv.storage_offset() * item
    n = cv.numel()
    blk = 2048 if item <= 2 else 1024
    assert grid == -(-n // blk)
    flat = np.ascontiguousarray(cpu.numpy()).reshape(-1)[cv.storage_offset():]
    sizes, strides, got = _interpret(be, cv.dtype, cv.dim(), raw, flat, n)
    assert sizes == tuple(cv.shape) and strides == cv.stride()
    assert np.array_equal(got, _bits(want))


def test_the_kept_copy_is_one_generated_call_per_layout(stubbed):
    """The kept launch of a layout is one generated function (the allocation, the packing with
    the layout's sizes and strides as constants, the driver call) that ``clone`` calls itself:
    no argument tuple, no ``Direct.go`` frame; another layout of the same dtype gets its own,
    the same layout again finds it."""
    be, launched = stubbed
    import tensorplay_cuda
    clone = be.kernels()["clone"]
    base = _on_stubbed_cuda(be, _cpu_values("float32", (2, 8, 6, 16)))
    for dims in ((1, 2), (0, 3)):
        v = base.transpose(*dims)
        _first(lambda: v.contiguous())
        a = tensorplay_cuda.as_cupy(v)
        key = (a.shape, a.strides, a.dtype, 0)
        call = clone.strided.calls[key]
        assert "go(" not in call.source and "LAUNCH(" in call.source
        assert call.direct is clone.strided.keys[key][4]
        ran = []

        def spy(arr, call=call):
            ran.append(arr)
            return call(arr)
        clone.strided.calls[key] = spy        # the call the clone kernel makes, recorded
        try:
            before = len(launched)
            r = v.contiguous()
        finally:
            clone.strided.calls[key] = call
        assert len(launched) == before + 1 and len(ran) == 1
        assert ran[0].strides == a.strides and tensorplay_cuda.as_cupy(r)._c_contiguous
    assert len({id(c) for c in clone.strided.calls.values()}) >= 2


# -- make_view: the tensor new_tensor + set_view build -----------------------------------------
def _fields(t):
    # private on purpose: the generated make_view's fields against the readable one's
    from tensorplay._tensor_base import SLOTS
    out = {}
    for name in SLOTS:
        v = getattr(t, name)
        if name == "_vver" and v.__class__ is list:
            v = len(v)
        out[name] = v
    return out


@pytest.mark.parametrize("case", ["plain", "requires_grad", "no_grad", "view of a view",
                                  "int", "fake", "multi-output"])
def test_make_view_builds_what_new_tensor_and_set_view_build(case):
    """The generated ``make_view`` against its readable form (``__wrapped__``) on the same
    base: every field equal (the storage, the native array and the base the same objects), the
    base's list of views one longer each, the no_grad mark and the creation rule alike."""
    from tensorplay._ops import views
    base = tp.arange(24.0).reshape(4, 6)
    if case == "requires_grad":
        base.requires_grad_(True)
    elif case == "int":
        base = tp.arange(24).reshape(4, 6)
    elif case == "fake":
        base = tp.empty(4, 6, device="meta")
    elif case == "view of a view":
        base = base.t()
    elif case == "multi-output":
        base = (tp.arange(48.0, requires_grad=True).reshape(2, 4, 6) * 1).unbind(0)[1]
    made = []
    for fn in (views.make_view.__wrapped__, views.make_view):
        data = None if base.native is None else base.native[..., ::2]
        shape, stride = (base.shape[0], (base.shape[1] + 1) // 2), \
            (base.stride()[0], base.stride()[1] * 2)
        if case == "no_grad":
            with tp.no_grad():
                t = fn(base, shape, stride, base.storage_offset(), data)
        else:
            t = fn(base, list(shape), list(stride), base.storage_offset(), data)
        made.append(t)
    a, b = (_fields(t) for t in made)
    for name in a:
        if name == "_data":
            assert (a[name] is None) == (b[name] is None)
            if a[name] is not None:
                assert a[name].shape == b[name].shape and a[name].strides == b[name].strides
        elif name in ("_storage", "_base", "_backend", "_capture", "grad_fn", "_accum"):
            assert a[name] is b[name], name
        else:
            assert a[name] == b[name] and type(a[name]) is type(b[name]), (name, a[name], b[name])
    assert made[1].requires_grad is made[0].requires_grad
    from tensorplay._ops.views import creation_meta
    from tensorplay._tensor_base import made_in_no_grad
    assert creation_meta(made[1]) == creation_meta(made[0])
    assert made_in_no_grad(made[1]) is made_in_no_grad(made[0]) is (case == "no_grad")
    if case == "multi-output":
        assert creation_meta(made[1])[0] == "multi"


def test_many_views_keep_their_base_list_pruned():
    """Views made and dropped by the hundred (the generated ``set_view`` steps prune the base's
    list at each power of two): the live ones only are kept, and an in-place write to the base
    reaches a live view's history."""
    from tensorplay._tensor_base import live_views
    x = tp.arange(12.0, requires_grad=True) * 1
    keep = x.view(3, 4).t()
    for _ in range(300):
        x.view(4, 3).t()
        x.view(2, 6).permute(1, 0)
    assert keep._base is x and keep in live_views(x) and len(live_views(x)) <= 16
    g0 = keep.grad_fn
    x.mul_(2)
    assert keep.grad_fn is not g0
    keep.sum().backward()


@pytest.mark.parametrize("dims", [(1, 2), (-1, -3), (0, 0), (2, -2), (True, 1)])
def test_transpose_views_as_torch(dims):
    """``transpose``: the swapped metadata, the native view's values, the base and grad flags;
    a bool dim is torch's ``TypeError``."""
    x = tp.arange(60.0).reshape(3, 4, 5).requires_grad_(True) * 1
    if True in [d is True for d in dims]:
        with pytest.raises(TypeError):
            x.transpose(*dims)
        return
    v = x.transpose(*dims)
    a, b = (d % 3 for d in dims)
    perm = list(range(3))
    perm[a], perm[b] = perm[b], perm[a]
    assert v.shape == tuple(x.shape[p] for p in perm)
    assert v.stride() == tuple(x.stride()[p] for p in perm)
    assert v._base is x and v.requires_grad and v.grad_fn is not None
    assert np.array_equal(v.detach().numpy(), np.transpose(x.detach().numpy(), perm))


@pytest.mark.parametrize("shape, dims", [((3, 4, 5), (2, 0, 1)), ((3, 4, 5), (-1, 0, -2)),
                                         ((7,), (0,)), ((), ()), ((3, 4, 5), (1, 1, 0)),
                                         ((3, 4, 5), (0, 1)), ((3, 4, 5), (0, True, 2))])
def test_permute_views_as_torch(shape, dims):
    """``permute``: the reordered metadata and values, a 0-d or 1-d tensor's identity, the same
    metadata on a fake (meta) tensor, and the refusals (a repeated dim, a wrong count:
    ``RuntimeError``; a bool: ``TypeError``)."""
    x = tp.arange(float(np.prod(shape))).reshape(shape)
    if True in [d is True for d in dims]:
        with pytest.raises(TypeError):
            x.permute(*dims)
        return
    if len(set(d % max(len(shape), 1) for d in dims)) != len(shape) or len(dims) != len(shape):
        with pytest.raises(RuntimeError):
            x.permute(*dims)
        return
    v = x.permute(dims)
    ds = [d % max(len(shape), 1) for d in dims]
    assert v.shape == tuple(x.shape[d] for d in ds)
    assert v.stride() == tuple(x.stride()[d] for d in ds)
    assert v._base is (x._base if x._base is not None else x)
    assert np.array_equal(v.numpy(), np.transpose(x.numpy(), ds))
    m = tp.empty(shape, device="meta").permute(dims)
    assert m.shape == v.shape and m.stride() == v.stride()


# -- on a GPU: the values ----------------------------------------------------------------------
@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("copy, view", CASES)
def test_strided_copies_match_cpu_on_a_gpu(copy, view, dtype):
    """Past the warm-up calls (the kept launch then runs): the cuda copy's shape, strides,
    dtype and bytes are the cpu backend's."""
    from tensorplay_cuda import eager
    shape, make = VIEWS[view]
    f = dict((c, fn) for c, fn, _ in COPIES)[copy]
    cpu = _cpu_values(dtype, shape, seed=1)
    want = f(make(cpu))
    base = cpu.cuda()
    for _ in range(eager.WARMUP_CALLS + 3):
        got = f(make(base))
        assert got.device.type == "cuda" and got.dtype is want.dtype
        assert got.shape == want.shape and got.stride() == want.stride()
        assert np.array_equal(_bits(got.cpu()), _bits(want))


@pytest.mark.cuda
@needs_cuda
def test_the_rope_transpose_copy_matches_cpu_on_a_gpu():
    """Liger-Kernel's rope: ``q.transpose(1, 2).contiguous()`` on a (2, 64, 48, 128) float32
    tensor, kept launch included, and a clone of the copy (a dense input: one memcpy)."""
    from tensorplay_cuda import eager
    cpu = _cpu_values("float32", (2, 64, 48, 128), seed=2)
    want = cpu.transpose(1, 2).contiguous()
    q = cpu.cuda()
    for _ in range(eager.WARMUP_CALLS + 3):
        got = q.transpose(1, 2).contiguous()
        assert got.stride() == want.stride()
        assert np.array_equal(_bits(got.cpu()), _bits(want))
        assert np.array_equal(_bits(got.clone().cpu()), _bits(want))


# -- contiguous / is_contiguous: torch's rule, one tuple comparison where it decides -----------
@pytest.mark.parametrize("shape, stride", [
    ((2, 3, 4), (12, 4, 1)), ((2, 3, 4), (12, 1, 3)), ((2, 1, 4), (4, 99, 1)),
    ((1, 3), (7, 1)), ((3, 1), (1, 5)), ((2, 0, 3), (5, 7, 2)), ((4,), (2,)), ((4,), (1,)),
    ((5, 7, 11, 13), (1001, 143, 13, 1)), ((5, 7, 11, 13), (1001, 13, 143, 1)), ((), ())])
def test_is_contiguous_and_contiguous_follow_torchs_rule(shape, stride):
    """Row-major dense but for size-1 dims (any stride there), or empty: ``is_contiguous`` is
    True and ``contiguous()`` is the tensor itself; otherwise a row-major copy with the same
    values. Shapes whose row-major strides are cached and shapes seen for the first time
    (``(5, 7, 11, 13)``) alike."""
    expected = 1
    want = True
    for s, st in zip(reversed(shape), reversed(stride)):
        if s != 1 and st != expected:
            want = False
        expected *= s
    want = want or 0 in shape
    span = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if 0 not in shape else 1
    base = tp.arange(float(max(span, 1)))
    t = base.as_strided(shape, stride)
    assert t.is_contiguous() is want
    c = t.contiguous()
    if want:
        assert c is t
    else:
        assert c is not t and c.is_contiguous() and c.shape == t.shape
        assert np.array_equal(c.numpy(), t.numpy())


def test_contiguous_inside_compile_reads_no_size():
    """``x.t().contiguous()`` while ``tensorplay.compile`` captures: the capture tensor's own
    ``is_contiguous`` decides (``contiguous``'s inline test is for plain tensors), so the graph
    is not size dependent, and the values are eager's."""
    def f(x):
        return x.t().contiguous() * 2.0

    c = tp.compile(f)
    x = tp.arange(6.0).reshape(2, 3)
    assert np.array_equal(c(x).numpy(), f(x).numpy())
    assert not c.graph.size_dependent
    y = tp.arange(20.0).reshape(4, 5)
    assert np.array_equal(c(y).numpy(), f(y).numpy())
