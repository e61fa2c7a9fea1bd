"""Small integer ops and strided copies on cuda: one launch each, as real kernel libraries call
them around their Triton kernels (issue 32 item 4).

* integer/bool arrays of two dtypes (``target * mask``: int64 * bool; comparisons across
  integer dtypes) take the dense case's one launch (``eager._dense_mixed``) instead of CuPy's
  ufunc, with torch's promotion (int64 * bool -> int64, a comparison -> bool);
* integer arrays of one dtype and comparisons of two arrays of one dtype go to the dense case
  first (no ufunc-case tests in front of it);
* a row-major copy of a strided view (``q.transpose(1, 2).contiguous()``) is one launch of the
  generated strided copy (``clone._strided_copy``) instead of CuPy's copy kernel.

No GPU needed: the kernels are compiled for an sm_90 target and the driver call is recorded
(``benchmarks/bench_cuda_host.launch_stand_ins``), so a call that ran anything but the one
launch (CuPy's kernels) would raise for want of a driver. The values are checked by running
the same generated kernels (with the arguments the kept launches pack) through Triton's
interpreter on NumPy arrays against the cpu backend's eager ops.
tests/test_cuda_host59_gpu.py compares the launches' results with the cpu results on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp
from _launch_stand_ins import compiled_or_skip, stand_ins

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")
pytest.importorskip("triton", reason="triton is not installed")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")

# private on purpose: the kept launches are what these pin down
from tensorplay.backends import ElementwiseExpr, Step  # noqa: E402
from tensorplay_cuda import eager, triton_fusion  # noqa: E402
from tensorplay_cuda.backend import CUDABackend  # noqa: E402

# (op, first dtype, second dtype): the cross entropy's int64 * bool, and the other mixed
# integer pairs the ufunc case took (torch's promotion is NumPy's for these)
MIXED = [("mul", "int64", "bool"), ("add", "int64", "bool"), ("mul", "int32", "int64"),
         ("sub", "int64", "int32"), ("add", "int8", "uint8"), ("maximum", "int64", "bool"),
         ("lt", "int64", "int32"), ("eq", "bool", "int64"), ("ne", "uint8", "int8"),
         ("ge", "int16", "int64")]


@pytest.fixture(scope="module")
def stubbed():
    """The launch stand-ins (no GPU), a fresh one-GPU backend and the recorded launches."""
    launched = []

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched.append((f, g0))
    with stand_ins(launch_kernel, 1 << 24) as be:
        yield be, launched


_first = compiled_or_skip


def _values(dtype, n, seed):
    """``n`` values of ``dtype`` with its extremes, zeros and negatives (NumPy)."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    info = np.iinfo(d)
    v = rng.integers(info.min, info.max, n, dtype=d, endpoint=True)
    v[:6] = [info.min, info.max, 0, 1, info.max // 2 + 1, info.min + 1]
    return v


def _cpu(op, a, b):
    return getattr(tp.ops.tp, op)(tp.from_numpy(a), tp.from_numpy(b))


@pytest.mark.parametrize("op, da, db", MIXED)
def test_mixed_integer_operands_are_one_launch(stubbed, op, da, db):
    be, launched = stubbed
    k = be.kernels()[op]
    n = 3000
    a, b = cupy.ndarray((n,), np.dtype(da)), cupy.ndarray((n,), np.dtype(db))
    _first(lambda: k(a, b))
    want = _cpu(op, _values(da, 8, 0), _values(db, 8, 1)).dtype     # torch's promotion
    for _ in range(3):
        before = len(launched)
        r = k(a, b)
        assert len(launched) == before + 1, (op, da, db)
        assert r.shape == (n,) and be.dtype_of(r) is want
    assert callable(k.dense_mixed.launches[(np.dtype(da), np.dtype(db), 0)])


@pytest.mark.parametrize("op, da, db", MIXED)
def test_the_mixed_kernels_compute_the_reference_bits(op, da, db):
    """The generated step the launch runs (each operand converted to the promoted dtype in the
    kernel), through Triton's interpreter: the cpu backend's eager op, bit for bit (integer
    overflow wraps as torch's)."""
    a, b = _values(da, 700, 2), _values(db, 700, 3)
    want = _cpu(op, a, b)
    cpu = tp.backends.get("cpu")
    expr = ElementwiseExpr(2, (Step(op, (("in", 0), ("in", 1))),), (0,), (want.dtype,),
                           tp.device("cpu"))
    got = triton_fusion.TritonChain(expr, cpu).run([a, b])[0]
    assert got.dtype == want.numpy().dtype and np.array_equal(got, want.numpy())


def test_one_dtype_integer_arrays_and_two_array_comparisons_take_the_dense_case(stubbed):
    be, launched = stubbed
    K = be.kernels()
    i64 = cupy.ndarray((96,), np.int64)
    f32, f32b = cupy.ndarray((96, 80), np.float32), cupy.ndarray((96, 80), np.float32)
    calls = [(K["add"], i64, i64), (K["mul"], i64, 3), (K["ne"], i64, -100),
             (K["lt"], f32, f32b), (K["gt"], f32, 0.0), (K["eq"], f32, 2)]
    for k, a, b in calls:
        _first(lambda: k(a, b))
        before = len(launched)
        r = k(a, b)
        assert len(launched) == before + 1 and r.shape == a.shape
    # integer true division is a float result: the reference kernel (CuPy: no driver here),
    # never the dense case's int64 kernel
    before = len(launched)
    with pytest.raises(Exception):                 # noqa: B017 - whatever CuPy raises here
        K["div"](i64, i64)
    assert len(launched) == before and (np.dtype(np.int64), 0) not in K["div"].dense.launches


LAYOUTS = [
    ((2, 64, 48, 16), lambda a: a.transpose(0, 2, 1, 3)),     # q.transpose(1, 2)
    ((300, 7), lambda a: a.T),
    ((40, 50), lambda a: a[::2, 3:41]),
    ((6, 5, 4), lambda a: a[1:, :, ::2]),
    ((3, 1, 5), lambda a: a.transpose(2, 1, 0)),
]
COPY_DTYPES = ["float32", "float16", "float64", "int64", "int8", "uint8", "bool", "int32"]


def _bf16():
    ml = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    return np.dtype(ml.bfloat16)


@pytest.mark.parametrize("dtype", COPY_DTYPES + ["bfloat16"])
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_a_strided_copy_is_one_launch(stubbed, dtype, layout):
    be, launched = stubbed
    d = _bf16() if dtype == "bfloat16" else np.dtype(dtype)
    if dtype == "bfloat16":
        be.native_dtype(tp.bfloat16)
    shape, view = LAYOUTS[layout]
    clone = be.kernels()["clone"]
    a = view(cupy.ndarray(shape, d))
    assert not a._c_contiguous
    _first(lambda: clone(a))
    for _ in range(3):
        before = len(launched)
        r = clone(a)
        assert len(launched) == before + 1
        assert r.shape == a.shape and r.dtype is d and r._c_contiguous
    assert clone.strided.keys[(a.shape, a.strides, d, 0)] is not None


@pytest.mark.parametrize("dtype", COPY_DTYPES + ["bfloat16"])
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_the_kept_copy_computes_the_reference_bits(stubbed, dtype, layout):
    """The kept launch's kernel with the arguments it packs (sizes, element strides), through
    Triton's interpreter on a NumPy view of the same layout: NumPy's copy, bit for bit (NaN
    payloads and -0.0 included)."""
    be, _ = stubbed
    d = _bf16() if dtype == "bfloat16" else np.dtype(dtype)
    shape, view = LAYOUTS[layout]
    clone = be.kernels()["clone"]
    a = view(cupy.ndarray(shape, d))
    for _ in range(eager.WARMUP_CALLS + 2):
        _first(lambda: clone(a))
    go, tail, g, dt, direct, fc = clone.strided.keys[(a.shape, a.strides, d, 0)]
    rng = np.random.default_rng(layout)
    bits = rng.integers(0, 256, int(np.prod(shape)) * d.itemsize, dtype=np.uint8)
    if d.kind == "b":
        bits = bits & 1
    host = bits.view(d).reshape(shape)
    if d.kind == "f" or dtype == "bfloat16":
        flat = host.reshape(-1)
        flat[:3] = np.array([np.nan, -0.0, np.inf], np.float32).astype(d)
    hv = view(host)
    assert hv.strides == tuple(s for s in a.strides)
    out = np.zeros(hv.shape, d)
    nd = hv.ndim
    kern = triton_fusion.TritonChain(
        ElementwiseExpr(1, (Step("to_dtype", (("in", 0),)),), (0,), (be.dtype_of(a),),
                        tp.device("cpu")), be)._kernel(
        ((be.dtype_of(a),), ("b",), nd, False, False), [be.dtype_of(a)], ("b",), nd, False,
        general=True)[0]
    blk = triton_fusion.BLOCK_NARROW if d.itemsize <= 2 else triton_fusion.BLOCK
    assert direct.go is go and tail[1] == hv.size and g == -(-hv.size // blk)
    triton_fusion._launch_interpreted(kern, (g,), [hv, out, np.zeros(1), *tail[1:]], 1, blk)
    want = np.ascontiguousarray(hv)
    assert np.array_equal(out.view(np.uint8), want.view(np.uint8))


def test_copies_the_kernel_cannot_index_keep_cupys_copy(stubbed):
    """A view whose elements lie 2**31 or more elements apart (its 32-bit offsets would
    overflow), a dtype the generator has no form for and negative strides keep CuPy's copy (no
    driver here: it raises), never a launch."""
    be, launched = stubbed
    clone = be.kernels()["clone"]
    big = cupy.ndarray((2, 3), np.int8, memptr=cupy.cuda.MemoryPointer(
        cupy.cuda.UnownedMemory(0x10000, 1, None, device_id=0), 0), strides=(2 ** 31, 1))
    u32 = cupy.ndarray((30, 20), np.uint32).T
    flipped = cupy.ndarray((30, 20), np.float32)[::-1]
    for a in (big, u32, flipped):
        before = len(launched)
        for _ in range(eager.WARMUP_CALLS + 2):
            with pytest.raises(Exception):         # noqa: B017 - whatever CuPy raises here
                clone(a)
        assert len(launched) == before
        assert clone.strided.keys[(a.shape, a.strides, a.dtype, 0)] is None


def test_a_full_reduction_is_one_launch_into_a_fresh_array(stubbed):
    """``(target * mask).max()``: after the warm-up, one launch of the kept pass into a fresh
    0-d array of the input's dtype (made through ``fresh``'s route: CuPy's own class, row-major,
    from the allocator), its address the one packed."""
    _, launched = stubbed
    from tensorplay_cuda import reduce
    gone = []

    class Compiler:             # the pass's compile stand-in: its launch recorded
        def compile_pass(self, p, i, arrays):
            def go(values, g0, g1, g2):
                launched.append(values)
                gone.append(values)
            return go
    be = CUDABackend()
    be._count = 1
    be._tp_reduce_compiler = Compiler()
    k = be.kernels()["amax"]
    a = cupy.ndarray((96,), np.int64)
    plans = k.plans
    for _ in range(reduce.WARMUP_CALLS):        # the reference (CuPy: no driver here) raises
        with pytest.raises(Exception):         # noqa: B017 - whatever CuPy raises here
            k(a, [], False)
    k(a, [], False)                             # compiles
    for _ in range(3):
        before = len(launched)
        r = k(a, [], False)
        assert len(launched) == before + 1
        assert r.__class__ is cupy.ndarray and r.shape == () and r.dtype == np.int64
        assert r._c_contiguous and gone[-1][:2] == (a.data.ptr, r.data.ptr)
    assert len(plans) == 1
