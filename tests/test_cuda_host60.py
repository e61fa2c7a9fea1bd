"""Host work of the cuda eager ops (issue 32 items 2 and 5).

* A broadcast of one element (every stride 0: ``g.expand(n)``, the gradient ``sum``/``mean``
  hand back) with a Python number -- the mean's backward, ``g.expand(n) / n`` -- is one launch
  of the op's generated kernel reading that element once (``triton_fusion``'s ``"s"`` mode)
  into a fresh row-major array, below ``eager.THRESHOLD`` elements (``_dense``'s ``splat``,
  which the adapters call) and from there on (``_large``'s aligned launch), instead of CuPy's
  ufunc on the broadcast (~10-14 µs of host time on an H100 host).
* With one GPU the adapters call the dense case's kept launch for the operand's dtype
  directly (``_tp_dense_calls``), within the size bound, without the dense case's frame; a
  number the op rounds first (float16/bfloat16 ``add``) keeps the dense case.
* The backend's views (``as_strided``) are CuPy's ``ndarray(shape, dtype, memptr=, strides=)``
  made by ``fresh.route``'s two steps: the same arrays.

No GPU needed but for the ``cuda``-marked tests: the kernels are compiled for an sm_90 target and
the driver call is recorded with its parameter block (``benchmarks/bench_cuda_host
.launch_stand_ins``), so a call that ran anything but the one launch (CuPy's ufunc) would raise
for want of a driver. On a GPU, the marked tests compare the values with the cpu's.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import tensorplay as tp
from _launch_stand_ins import compiled_or_skip, param_bytes, stand_ins

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")

# private on purpose: the eager module's kept launches are what these pin down
from tensorplay._ops import _define  # noqa: E402
from tensorplay_cuda import eager  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
BF16 = np.dtype(ml_dtypes.bfloat16)
NATIVE = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": BF16,
          "float64": np.dtype(np.float64)}
BETWEEN = 1.00390625 + 2 ** -12          # between two bfloat16 values (and two float16 ones)


def _needs_triton():
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")


@pytest.fixture(scope="module")
def stubbed():
    """The launch stand-ins (no GPU; no warm-up calls), a fresh one-GPU backend with bfloat16
    enabled, and the recorded launches: (function, grid, block, the parameter block's first
    eight 8-byte slots)."""
    _needs_triton()
    launched = []

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched.append((f, (g0, g1, g2), (b0, b1, b2), param_bytes(params, 8)))
    # (registered for cuda while these run: views go through the dispatcher)
    with stand_ins(launch_kernel, 4 * (eager.THRESHOLD + 64), bf16=True, register=True) as be:
        yield be, launched


_compiled = compiled_or_skip


def _broadcast(be, n, native):
    """A cuda tensor of ``n`` elements, every stride 0, over one element (``g.expand(n)``)."""
    return be.wrap(cupy.ndarray((), native), tp.device("cuda", 0)).expand(n)


def _f32(v):
    return struct.unpack("=f", struct.pack("=f", v))[0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("op, number", [("div", 2048.0), ("mul", 0.5), ("add", BETWEEN),
                                        ("sub", 3), ("maximum", 0.0), ("add", 1)])
def test_a_broadcast_element_with_a_number_is_one_launch_reading_it_once(stubbed, op, number,
                                                                         dtype):
    """Through the op's adapter: one launch (a 2048-element grid of the generated kernel),
    whose parameters are the element's own address, the fresh result's, the element count and
    the number -- rounded to the dtype first where torch rounds it (``add``/``sub``/``maximum``
    on float16/bfloat16), else at float32 -- and a row-major result of the broadcast's shape
    and dtype."""
    be, launched = stubbed
    native = NATIVE[dtype]
    adapter = _define.make_adapter(getattr(tp.ops.tp, op), be.kernels()[op], be)
    n = 4096
    g = _broadcast(be, n, native)
    assert g.stride() == (0,)
    _compiled(lambda: adapter(g, number))
    for _ in range(2):
        launched.clear()
        r = adapter(g, number)
        (f, grid, block, raw), = launched
        assert grid == (n // (2048 if native.itemsize == 2 else 1024), 1, 1)
        assert r.shape == (n,) and r.stride() == (1,) and r.dtype is getattr(tp, dtype)
        assert r._data.dtype is native and r._data._c_contiguous
        p_in, p_out, _fconst, count = struct.unpack_from("=QQQi", raw)
        assert p_in == g._data.data.ptr and p_out == r._data.data.ptr and count == n
        if number.__class__ is float:
            want = number
            if op in tp._dtype.SCALAR_ROUNDED and dtype != "float32":
                want = tp._dtype.round_scalar(number, getattr(tp, dtype))
            assert struct.unpack_from("=f", raw, 40)[0] == _f32(want)
        else:
            assert struct.unpack_from("=i", raw, 40)[0] == number
    key = (native, 0, number.__class__)
    assert callable(be.kernels()[op].dense.splat.launches[key])


def test_what_the_splat_declines_it_leaves_to_the_ufunc_case(stubbed):
    """``splat`` returns None, launching nothing, for what its kernel does not take: a float64
    broadcast with a float (the general kernels' float constants are float32), an int beyond
    int32, an empty broadcast, and from ``THRESHOLD`` elements on (the large path's); the
    adapter then takes the ufunc case as before."""
    be, launched = stubbed
    splat = be.kernels()["div"]._tp_splat
    f64 = _broadcast(be, 64, NATIVE["float64"])._data
    launched.clear()
    assert _compiled(lambda: splat(f64, 3.0)) is None and splat(f64, 3.0) is None
    f32 = _broadcast(be, 64, NATIVE["float32"])._data
    assert splat(f32, 2 ** 31) is None
    assert splat(cupy.ndarray((0,), np.float32), 2.0) is None
    assert splat(_broadcast(be, eager.THRESHOLD, NATIVE["float32"])._data, 2.0) is None
    assert launched == []
    assert be.kernels()["div"].dense.splat.launches[(NATIVE["float64"], 0, float)] is None


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_large_broadcast_element_with_a_number_is_one_aligned_launch(stubbed, dtype):
    """From ``THRESHOLD`` elements on (``x.mean()``'s gradient of a 4096x4096 ``x``): the large
    path's aligned launch, kept under ``(dtype, device, number class, ("s",))``, one launch per
    call with the element's address, the result's, the count and the number."""
    be, launched = stubbed
    native = NATIVE[dtype]
    kernel = be.kernels()["div"]
    n = eager.THRESHOLD
    g = _broadcast(be, n, native)
    adapter = _define.make_adapter(tp.ops.tp.div, kernel, be)
    _compiled(lambda: adapter(g, 3.0))
    for _ in range(2):
        launched.clear()
        r = adapter(g, 3.0)
        (f, grid, block, raw), = launched
        assert r.shape == (n,) and r.stride() == (1,) and r._data.dtype is native
        p_in, p_out, _fconst, count = struct.unpack_from("=QQQi", raw)
        assert p_in == g._data.data.ptr and p_out == r._data.data.ptr and count == n
        assert struct.unpack_from("=f", raw, 40)[0] == 3.0
    e = kernel.launch_large.launches[(native, 0, float, ("s",))]
    assert e is not None and e[1] is native


@pytest.mark.parametrize("op, operand", [("mul", "xy"), ("add", 1.5), ("relu", "x"),
                                         ("tanh", "x"), ("add", BETWEEN), ("mul", BETWEEN)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_adapter_calls_the_kept_launch_directly_within_the_size_bound(
        stubbed, monkeypatch, op, operand, dtype):
    """One GPU: after the first launch of a (dtype[, float]) key, the adapter calls the kept
    call itself (``_tp_dense_calls``) for ``0 < n < THRESHOLD``, and the aligned large launch
    the dense case kept from ``THRESHOLD`` elements on (a multiple of 16). A bfloat16 ``add``
    with a number launches it rounded to bfloat16 first (in the launch's parameters); ``mul``
    reads the number at float32."""
    be, launched = stubbed
    native = NATIVE[dtype]
    kernel = be.kernels()[op]
    adapter = _define.make_adapter(getattr(tp.ops.tp, op), kernel, be)
    dev = tp.device("cuda", 0)
    n = 3000

    def call(x, y):
        return adapter(x, y) if operand == "xy" else adapter(x) if operand == "x" else \
            adapter(x, operand)
    x = be.wrap(cupy.ndarray((n,), native), dev)
    y = be.wrap(cupy.ndarray((n,), native), dev)
    _compiled(lambda: call(x, y))
    calls, fcalls, top, lcalls, lfcalls, big = kernel._tp_dense_calls
    assert top == eager.THRESHOLD and big > top
    table = fcalls if operand.__class__ is float else calls
    t = getattr(tp, dtype)
    rounded = op in tp._dtype.SCALAR_ROUNDED and dtype == "bfloat16" and \
        operand.__class__ is float
    seen = []
    kept = table[t]
    monkeypatch.setitem(table, t, lambda *a: seen.append(a[-1]) or kept(*a))
    launched.clear()
    r = call(x, y)
    assert len(launched) == 1 and r.shape == (n,) and r._data.dtype is native
    assert seen == [n]
    if operand.__class__ is float:
        want = tp._dtype.round_scalar(operand, t) if rounded else operand
        assert struct.unpack_from("=f", launched[0][3], 40)[0] == _f32(want)
    n = eager.THRESHOLD
    X = be.wrap(cupy.ndarray((n,), native), dev)
    Y = be.wrap(cupy.ndarray((n,), native), dev)
    _compiled(lambda: call(X, Y))        # (compiles the aligned kernel)
    call(X, Y)                           # (the dense case keeps its call for the adapter)
    large = lfcalls if operand.__class__ is float else lcalls
    kept = large[t]
    monkeypatch.setitem(large, t, lambda *a: seen.append(a[-1]) or kept(*a))
    for _ in range(2):
        launched.clear()
        seen.clear()
        r = call(X, Y)
        assert len(launched) == 1 and r.shape == (n,) and seen == [n]
        if operand.__class__ is float:
            assert struct.unpack_from("=f", launched[0][3], 40)[0] == _f32(want)
    # a large call that launches nothing (None: an address off 16-byte alignment) leaves the
    # call to the dense case
    monkeypatch.setitem(large, t, lambda *a: seen.append("none"))
    seen.clear()
    launched.clear()
    r = call(X, Y)
    assert seen == ["none"] and r.shape == (n,) and len(launched) == 1


def test_views_are_the_constructors_arrays(stubbed):
    """``as_strided``: the array ``cupy.ndarray(shape, dtype, memptr=root.data + offset,
    strides=...)`` makes -- shape, strides, address, dtype, flags, the same memory kept alive
    -- for broadcasts, offsets and 0-d views."""
    be, _ = stubbed
    root = cupy.ndarray((64,), np.float32)
    for shape, stride, offset in [((4, 16), (0, 1), 0), ((8, 4), (1, 8), 3), ((), (), 5),
                                  ((64,), (1,), 0), ((2, 3, 4), (12, 4, 1), 7),
                                  ((4096,), (0,), 0)]:
        v = be.as_strided(root, list(shape), list(stride), offset)
        w = cupy.ndarray(shape, root.dtype, memptr=root.data + 4 * offset,
                         strides=tuple(4 * s for s in stride))
        assert v.__class__ is cupy.ndarray and v.dtype is w.dtype
        assert (v.shape, v.strides, v.data.ptr, v.size) == (w.shape, w.strides, w.data.ptr,
                                                               w.size)
        assert (v.flags.c_contiguous, v.flags.f_contiguous, v._c_contiguous) == (
            w.flags.c_contiguous, w.flags.f_contiguous, w._c_contiguous)
        assert v.data.mem is root.data.mem


# -- on a GPU: the values ----------------------------------------------------------------------------

@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("op, number", [("div", 4096.0), ("mul", BETWEEN), ("add", BETWEEN),
                                        ("sub", 3), ("maximum", 0.5), ("minimum", 1e30),
                                        ("div", 3.0)])
@pytest.mark.parametrize("n", [1, 4096, 1 << 22])
def test_on_a_gpu_a_broadcast_element_with_a_number_gives_the_cpus_bits(op, number, dtype, n):
    """Past the warm-up (the kept launches), a 0-d tensor expanded to ``n`` elements with a
    number: the cpu's values bit for bit, a row-major result. (No tie of zeros for
    maximum/minimum: there the devices order -0.0 and 0.0 differently, whichever path.)"""
    t = getattr(tp, dtype)
    for value in (1.7, -2.5e-3, float("inf"), 0.0):
        cpu = tp.tensor(value, dtype=t).expand(n)
        want = getattr(tp.ops.tp, op)(cpu, number).contiguous().numpy()
        g = tp.tensor(value, dtype=t, device="cuda").expand(n)
        for _ in range(eager.WARMUP_CALLS + 3):
            r = getattr(tp.ops.tp, op)(g, number)
        assert r.is_contiguous() and r.shape == (n,)
        got = r.cpu().numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("shape, graph", [((4096, 4096), "mean"), ((1024, 768), "sum_mean"),
                                          ((300, 7), "mean")])
def test_on_a_gpu_mean_backwards_give_the_cpus_gradients(shape, graph):
    rng = np.random.default_rng(11)
    xn = rng.standard_normal(shape).astype(np.float32)
    f = (lambda t: t.mean()) if graph == "mean" else (lambda t: t.sum(1).mean())
    grads = []
    for dev in ("cpu", "cuda"):
        x = tp.tensor(xn, device=dev).requires_grad_()
        for _ in range(eager.WARMUP_CALLS + 3):
            x.grad = None
            f(x).backward()
        assert x.grad.is_contiguous()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


# -- the reductions' gradient formulas (any device) ------------------------------------------------

@pytest.mark.parametrize("dims, keepdim", [(None, False)] + [
    (d, k) for d in [(1,), (-1,), (0, -1), (2, 0), (-3, 1, 2), (np.int64(1),)]
    for k in (False, True)])
def test_mean_and_sum_gradients_over_any_spelling_of_dims(dims, keepdim):
    """``mean``'s and ``sum``'s gradients on cpu: the count averaged over the reduced dims
    whatever their spelling (negative, several, unordered, a NumPy integer), the gradient
    expanded back to the input's shape: ``1 / n`` and ``1`` everywhere."""
    x = tp.ones((2, 3, 4), requires_grad=True)
    kw = {} if dims is None else {"dim": list(dims), "keepdim": keepdim}
    n = 24 if dims is None else int(np.prod([(2, 3, 4)[int(d)] for d in dims]))
    x.mean(**kw).sum().backward()
    assert x.grad.shape == (2, 3, 4)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3, 4), np.float32(1) / n))
    x.grad = None
    x.sum(**kw).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3, 4), np.float32))


@pytest.mark.parametrize("dims", [[0], [-1]])
def test_mean_gradient_of_a_0d_input_over_its_dim(dims):
    x = tp.tensor(3.0, requires_grad=True)
    x.mean(dims).backward()
    assert x.grad.shape == () and x.grad.item() == 1.0
