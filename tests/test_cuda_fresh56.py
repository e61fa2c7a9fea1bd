"""Fresh result arrays on cuda through ``cupy.ndarray``'s two construction steps
(``tensorplay_cuda.fresh``, issue 32 items 2 and 3): the same array as
``cupy.ndarray(shape, dtype)``, from the same allocator, with less host time.

No GPU needed for most: CuPy's allocator is replaced by one handing out host memory (as
``benchmarks/bench_cuda_host.py --launch`` does), so both constructions run for real up to the
allocation. ``@pytest.mark.cuda`` tests check the arrays, the pool and the eager ops and
factories that allocate this way on a GPU.
"""

from __future__ import annotations

import contextlib
import types

import numpy as np
import pytest

import tensorplay as tp

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")
from tensorplay_cuda import backend as B  # noqa: E402
from tensorplay_cuda import clone as C  # noqa: E402
from tensorplay_cuda import fill as F  # noqa: E402
from tensorplay_cuda import fresh  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
ROUTED = fresh.route(cupy) is not None
needs_route = pytest.mark.skipif(not ROUTED, reason=f"CuPy {cupy.__version__}: not a release "
                                 "fresh.route was checked on")

_ATTRS = ("shape", "strides", "dtype", "size", "nbytes", "ndim", "_c_contiguous",
          "_f_contiguous", "_index_32_bits", "base")


@pytest.fixture
def host_allocator():
    """CuPy's allocator handing out host memory (no GPU here): records each request's size and
    returns a fresh block for it, so both constructions run up to the allocation."""
    keep, sizes = [], []

    def alloc(size):
        sizes.append(size)
        h = np.zeros(size + 512, np.uint8)
        keep.append(h)
        mem = cupy.cuda.UnownedMemory(h.ctypes.data, h.nbytes, h, device_id=0)
        return cupy.cuda.MemoryPointer(mem, 0)
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(alloc)
    try:
        yield sizes
    finally:
        cupy.cuda.set_allocator(previous)


def _same(a, b):
    assert a.__class__ is b.__class__ is cupy.ndarray
    for attr in _ATTRS:
        assert getattr(a, attr) == getattr(b, attr), attr
    assert a.dtype is b.dtype         # (the eager paths compare dtypes by identity)
    assert a.flags.c_contiguous == b.flags.c_contiguous and a.flags.owndata == b.flags.owndata


def _dtypes():
    out = [np.dtype(d) for d in (np.float32, np.float16, np.float64, np.int64, np.int8, np.bool_,
                                 np.complex64, np.uint16)]
    # NumPy's two int64 objects (equal, not identical: CuPy's argmax gives the 'q' one), a dtype
    # with metadata and a byte-swapped one (not the canonical objects of their types)
    out += [np.dtype("q"), np.dtype("l"), np.dtype(np.float32, metadata={"tp": 1}),
            np.dtype(">f4")]
    try:
        import ml_dtypes
        out.append(np.dtype(ml_dtypes.bfloat16))
    except ImportError:
        pass
    return out


@needs_route
@pytest.mark.parametrize("shape", [(), 0, 5, (0,), (3, 4), [2, 3], (2, 0, 3), (1, 1, 1, 7),
                                   (np.int64(3), 2)])
def test_the_two_steps_make_what_the_constructor_makes(host_allocator, shape):
    new, init = fresh.route(cupy)
    new_array = fresh.new_array_for(cupy.ndarray)
    for d in _dtypes():
        host_allocator.clear()
        try:
            want = cupy.ndarray(shape, d)
        except ValueError as e:          # (CuPy refuses a byte-swapped dtype: so do these)
            with pytest.raises(ValueError) as got:
                new_array(shape, d)
            assert str(got.value) == str(e)
            continue
        a = new(cupy.ndarray)
        init(a, shape, d, None, None, None)
        fresh._FROM_TYPE.pop(d.type, None)     # (b: the type's first check, then c)
        b = new_array(shape, d)
        c = new_array(shape, d)
        for r in (a, b, c):
            _same(r, want)
            assert r.dtype is d
        # the same allocator, asked for the same bytes, once per array (and 0 for the check)
        assert sorted(host_allocator) == sorted([want.nbytes] * 4 + [0]), (d, host_allocator)
        assert len({r.data.ptr for r in (want, a, b, c)}) == 4 or want.nbytes == 0


@needs_route
def test_the_dtype_is_given_as_its_type_only_where_cupy_makes_that_very_dtype(host_allocator):
    new, init = fresh.route(cupy)
    for d in _dtypes():
        arg = fresh.dtype_arg(new, init, cupy.ndarray, d)
        canonical = np.dtype(d.type) is d
        assert arg is (d.type if canonical else d), d
        assert fresh._FROM_TYPE[d.type] is np.dtype(d.type)
    # a dtype whose scalar type CuPy refuses: the dtype itself is passed on -- CuPy's error
    # for the dtype where it refuses that too, not one about its type; its array where not
    new_array = fresh.new_array_for(cupy.ndarray)
    for d in (np.dtype("U3"), np.dtype("S4"), np.dtype("M8[s]"), np.dtype([("a", np.int32)]),
              np.dtype("V8")):
        assert fresh.dtype_arg(new, init, cupy.ndarray, d) is d
        try:
            want = cupy.ndarray((2,), d)
        except ValueError as e:
            with pytest.raises(ValueError) as got:
                new_array((2,), d)
            assert str(got.value) == str(e)
        else:
            _same(new_array((2,), d), want)


@needs_route
def test_bad_shapes_raise_the_constructors_errors(host_allocator):
    new_array = fresh.new_array_for(cupy.ndarray)
    for shape in ((-1,), (2, -3), (1,) * 65, "ab", (2.5,)):
        with pytest.raises(Exception) as want:
            cupy.ndarray(shape, np.float32)
        with pytest.raises(type(want.value)) as got:
            new_array(shape, np.float32)
        assert str(got.value) == str(want.value)


def test_the_route_only_where_it_was_checked():
    """A release outside ``TESTED_MAJORS``, a module without the classes, no CuPy, a subclass or
    a stand-in class: no route, and ``new_array_for`` gives the class itself (its
    constructor)."""
    fake = types.SimpleNamespace(__version__="99.1.0", ndarray=cupy.ndarray, _core=cupy._core)
    assert fresh.route(fake) is None
    assert fresh.route(types.SimpleNamespace(__version__="14.2.0")) is None
    assert fresh.route(None) is None

    class Sub(cupy.ndarray):
        pass
    for cls in (Sub, np.ndarray, None):
        assert fresh.route_for(cls) is None
        assert fresh.new_array_for(cls) is cls
    if ROUTED:
        assert fresh.route_for(cupy.ndarray) == fresh.route(cupy)
        assert fresh.new_array_for(cupy.ndarray) is not cupy.ndarray


@needs_route
def test_the_allocation_sites_use_the_route(host_allocator, monkeypatch):
    """``backend._new_array`` (``empty``, the factories' kernels), ``fill.filled`` (an empty
    fill launches nothing), ``clone`` of an empty array and the eager one-launch call
    (``triton_fusion._dense_call``: see tests/test_cuda_host_path.py for its launch) allocate
    through the two steps: the constructor is never called."""
    new, init = fresh.route(cupy)
    made = []

    def counting_init(a, *args):
        made.append(args)
        return init(a, *args)
    code = fresh.new_array_for(cupy.ndarray).__code__
    assert B._new_array.__code__ is code
    a = B._new_array([2, 3], np.dtype(np.float32))
    _same(a, cupy.ndarray((2, 3), np.float32))
    # filled: the two steps inline (fill.bind took them from the route)
    assert F._CUPY is cupy and (F._NEW, F._INIT) == (new, init) and F._ND is cupy.ndarray
    monkeypatch.setattr(F, "_INIT", counting_init)
    r = F.filled(cupy, (0, 4), 1.5, np.dtype(np.float16))
    _same(r, cupy.ndarray((0, 4), np.float16))
    # (the type, as dtype_arg gives it; a first use of float16 in the process adds its one
    # probe, a 0-element array, before it)
    assert made[-1] == ((0, 4), np.float16, None, None, None)
    assert all(m == (0, np.float16, None, None, None) for m in made[:-1]), made
    monkeypatch.setattr(F, "_INIT", init)
    made.clear()
    # another module given to filled keeps its own constructor
    other = types.SimpleNamespace(ndarray=lambda shape, dt: made.append("other") or
                                  cupy.ndarray(shape, dt))
    F.filled(other, (0,), 1.0, np.dtype(np.float32))
    assert made[-1] == "other"
    monkeypatch.setattr(fresh, "route", lambda cp: (new, counting_init))
    made.clear()
    clone = C.accelerate({"clone": lambda a: None}, cupy)["clone"]
    src = cupy.ndarray((0, 3), np.float64)
    out = clone(src)
    _same(out, src)
    # (the type: dtype_arg; a dtype's first use in the process adds its one probe, a
    # 0-element array, before it)
    assert made[-1] == ((0, 3), np.float64, None, None, None)
    assert all(m == (0, np.float64, None, None, None) for m in made[:-1]), made


def test_fill_binds_nothing_for_an_unchecked_release(monkeypatch):
    for name in ("_CUPY", "_ND", "_NEW", "_INIT"):
        monkeypatch.setattr(F, name, None)
    F.bind(types.SimpleNamespace(__version__="99.0", ndarray=cupy.ndarray))
    assert F._CUPY is None and F._NEW is None and F._INIT is None


# -- on a GPU ---------------------------------------------------------------------------------------

@pytest.mark.cuda
@needs_cuda
@needs_route
def test_on_a_gpu_the_arrays_come_from_the_pool_of_the_current_device():
    pool = cupy.get_default_memory_pool()
    new_array = fresh.new_array_for(cupy.ndarray)
    for shape, d in (((1024,), np.float32), ((3, 5), np.float16), ((), np.int64), ((0,), np.bool_)):
        want = cupy.ndarray(shape, d)
        before = pool.used_bytes()
        a = new_array(shape, d)
        _same(a, want)
        assert pool.used_bytes() - before == want.data.mem.size
        assert a.data.device_id == cupy.cuda.runtime.getDevice()
        a[...] = 1
        assert bool((a == 1).all())
        del a
        assert pool.used_bytes() == before
    if cupy.cuda.runtime.getDeviceCount() > 1:
        with cupy.cuda.Device(1):
            assert new_array((8,), np.float32).data.device_id == 1


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_on_a_gpu_eager_ops_and_factories_give_the_values(dt, monkeypatch):
    """The allocation sites on the device: the small dense ops' kept launch (from the first
    call), the factories, ``clone``, each against NumPy."""
    if dt == "bfloat16":
        pytest.importorskip("ml_dtypes")
    from tensorplay_cuda import eager
    monkeypatch.setattr(eager, "WARMUP_CALLS", 0)
    d = getattr(tp, dt)
    tol = 8e-3 if dt == "bfloat16" else 1e-3 if dt == "float16" else 1e-6
    x = (tp.arange(4096, device="cuda", dtype=tp.float32) / 1000 - 2).to(d)
    y = (tp.arange(4096, device="cuda", dtype=tp.float32) / 3000 + 0.5).to(d)
    xf = x.to(tp.float32).cpu().numpy().astype(np.float64)
    yf = y.to(tp.float32).cpu().numpy().astype(np.float64)
    for _ in range(3):              # the first call compiles, the next ones take the kept launch
        for got, want in ((tp.mul(x, y), xf * yf), (x + 1.0, xf + 1.0),
                          (tp.relu(x), np.maximum(xf, 0)), (x.clone(), xf)):
            assert got.dtype is d and got.shape == (4096,) and got.stride() == (1,)
            np.testing.assert_allclose(got.to(tp.float32).cpu().numpy(), want, rtol=tol,
                                       atol=tol)
    for t, v in ((tp.zeros(3, 5, device="cuda", dtype=d), 0.0),
                 (tp.ones((7,), device="cuda", dtype=d), 1.0),
                 (tp.full((2, 3), 2.5, device="cuda", dtype=d), 2.5),
                 (tp.zeros_like(x), 0.0), (tp.full_like(x, -3.0), -3.0)):
        assert t.dtype is d and t.is_contiguous()
        np.testing.assert_array_equal(t.to(tp.float32).cpu().numpy(),
                                      np.full(tuple(t.shape), v, np.float32))
    e = tp.empty((4, 6), device="cuda", dtype=d)
    assert e.shape == (4, 6) and e.stride() == (6, 1) and e.dtype is d


@pytest.mark.cuda
@needs_cuda
def test_on_a_gpu_the_large_launches_and_broadcast_clones_give_the_values():
    """The other allocation sites: the large aligned one-launch path (``eager._large`` and the
    dense case's large branch, at least ``eager.THRESHOLD`` elements: its kept launches are
    generated calls) and ``clone`` of a broadcast (``bcast.copy_broadcast`` into a fresh
    array)."""
    from tensorplay_cuda import eager
    n = eager.THRESHOLD
    x = tp.arange(n, device="cuda", dtype=tp.float32) / n - 0.5
    y = tp.arange(n, device="cuda", dtype=tp.float32) / (2 * n) + 0.25
    xf, yf = x.cpu().numpy(), y.cpu().numpy()
    for _ in range(3):
        for got, want in ((tp.mul(x, y), xf * yf), (x + 1.0, xf + np.float32(1.0)),
                          (tp.relu(x), np.maximum(xf, 0))):
            assert got.shape == (n,) and got.stride() == (1,) and got.dtype is tp.float32
            np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6, atol=1e-7)
    # the kept aligned launches run as one generated call each (triton_fusion._dense_call)
    from tensorplay import _backend
    kernels = _backend.get_backend("cuda").kernels()
    f32, dev = np.dtype(np.float32), cupy.cuda.runtime.getDevice()
    for op, key in (("mul", (f32, dev)), ("add", (f32, dev, float)), ("relu", (f32, dev))):
        e = kernels[op].launch_large.launches.get(key)
        # (the blocks' direction alternates inline since session 57: FLIPS, no FLIP(g) call)
        assert e is not None and "FLIPS[0]" in getattr(e[2], "source", ""), (op, e)
    assert not eager._FAILED, eager._FAILED
    row = tp.arange(7, device="cuda", dtype=tp.float32)
    c = row.expand(5, 7).clone()
    assert c.stride() == (7, 1)
    np.testing.assert_array_equal(c.cpu().numpy(), np.broadcast_to(np.arange(7, dtype=np.float32),
                                                                   (5, 7)))


# -- fill.filled's launch (zeros, ones, full...: the kernel's grid, pattern and stream) ---------------

def test_the_fill_launch_keeps_its_grid_pattern_and_stream(host_allocator, monkeypatch):
    """``fill.filled``'s launch with the driver recorded (no GPU): the grid is
    ``min(_MAX_BLOCKS, ceil(nbytes / (16 * _THREADS)))`` blocks of ``_THREADS`` threads, the
    parameter block holds the array's address, the value's 16-byte pattern (``_pattern``, read
    from its memo or made) and the byte count, and the stream is the current one of the array's
    device, looked up for that device; a zero size launches nothing."""
    import math
    import struct
    launches, streams = [], []
    null = cupy.cuda.Stream.null

    def current_stream(device_id=-1):
        streams.append(device_id)
        return null
    monkeypatch.setattr(F, "_launch", [lambda *a: launches.append(a)])
    monkeypatch.setattr(F, "_functions", {0: (None, 0x1000)})
    monkeypatch.setattr(cupy.cuda, "get_current_stream", current_stream)
    # (this thread's devices launched on, in its parameter block: restored after)
    monkeypatch.setattr(F._PARAMS, "block", F._PARAMS.block[:3] + ({0},))
    cases = [((1,), 2.5, np.float32), ((1023,), 2.5, np.float32), ((1024,), -0.0, np.float32),
             ((1025,), 7, np.int64), ((3, 5), True, np.int16), ((1 << 24,), 1.0, np.float16),
             ((1 << 22,), -3, np.int16), ((0, 4), 1.0, np.float32)]
    # (a bool or int8 fill, any value whose bytes are one byte repeated, is a memset instead:
    # tests/test_cuda_fill60.py)
    for shape, value, dt in cases:
        # the value's pattern made, then read from the memo, then from the last fill's (the
        # same value object and dtype)
        for memo in (False, True, "last"):
            if not memo:
                F._patterns.clear()
                F._LAST = (None, None, 0, 0, -1)
            elif memo is True:
                F._LAST = (None, None, 0, 0, -1)
            launches.clear()
            streams.clear()
            d = np.dtype(dt)
            a = F.filled(cupy, shape, value, d)
            _same(a, cupy.ndarray(shape, d))
            nbytes = a.nbytes
            if nbytes == 0:
                assert launches == [] and streams == []
                continue
            want = np.array(value, d).tobytes() * (16 // d.itemsize)
            lo, hi = (int.from_bytes(want[:8], "little"), int.from_bytes(want[8:], "little"))
            blocks = min(F._MAX_BLOCKS, max(1, math.ceil(nbytes / (16 * F._THREADS))))
            assert launches == [(0x1000, blocks, 1, 1, F._THREADS, 1, 1, 0, null.ptr,
                                 F._PARAMS.block[1], 0)], (shape, value, dt)
            assert streams == [0]
            raw = F._PARAMS.block[0].raw
            assert struct.unpack_from("=QQQq", raw) == (a.data.ptr, lo, hi, nbytes)


def test_the_last_fills_pattern_serves_only_the_same_value_object_and_dtype(host_allocator,
                                                                           monkeypatch):
    """``fill._LAST`` (the last non-zero fill's pattern, found by identity): the same value object
    on another dtype, an equal value of another class (``2`` after ``2.0``) or sign (``-0.0``
    after ``0.0`` is a memset: never there) each get their own bytes; the same object and dtype
    reuses them."""
    import struct
    launches = []
    monkeypatch.setattr(F, "_launch", [lambda *a: launches.append(a)])
    monkeypatch.setattr(F, "_functions", {0: (None, 0x1000)})
    monkeypatch.setattr(cupy.cuda, "get_current_stream", lambda device_id=-1: cupy.cuda.Stream.null)
    monkeypatch.setattr(F._PARAMS, "block", F._PARAMS.block[:3] + ({0},))
    monkeypatch.setattr(F, "_LAST", (None, None, 0, 0, -1))
    v = 2.5
    big = 1 << 40
    for value, dt in ((v, np.float32), (v, np.float32), (v, np.float16), (v, np.float64),
                      (2.0, np.float32), (2, np.float32), (2, np.int64), (-0.0, np.float32),
                      (-0.0, np.float32), (big, np.int64), (big + 1, np.int64), (True, np.int16)):
        d = np.dtype(dt)
        a = F.filled(cupy, (8,), value, d)
        want = np.array(value, d).tobytes() * (16 // d.itemsize)
        lo, hi = int.from_bytes(want[:8], "little"), int.from_bytes(want[8:], "little")
        assert struct.unpack_from("=QQQq", F._PARAMS.block[0].raw) == (
            a.data.ptr, lo, hi, a.nbytes), (value, dt)
        assert F._LAST[:2] == (d, value) and F._LAST[1] is value
    assert len(launches) == 12


# -- the large arrays' aligned launch as one generated call ------------------------------------------

@contextlib.contextmanager
def _skip_without_ptxas():
    """Skips the test where Triton cannot compile for the GPU target (no ``ptxas`` here); any
    other error is raised."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - only a missing ptxas is a reason to skip
        if "ptxas" not in str(e):
            raise
        pytest.skip(f"Triton cannot compile here: {e}")


def test_the_aligned_call_is_the_aligned_address_launch_in_one_function(monkeypatch):
    """``dense_launcher(..., aligned=True)`` (the large arrays' launch, ``eager._large``) has a
    ``launch.call`` too (``triton_fusion._dense_call``): for two arrays, an array and a float or
    an int, and one array, it makes the same driver call as ``launch(*addresses, n[, number])``
    -- function, grid, threads, stream, every byte of the parameter block, the blocks' direction
    (``_next_flip``'s state) included -- into a fresh row-major array; an operand or an output
    that is not 16-byte aligned launches nothing and gives None. No GPU: kernels compiled for an
    sm_90 target, the driver call recorded (``bench_cuda_host.launch_stand_ins``)."""
    import pathlib
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    from tensorplay_cuda import eager, triton_fusion
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_cuda_host
    calls = []

    def launch_kernel(*args):
        # the call as made, and the bytes of this thread's parameter block it points into
        calls.append((args, bytes(block.block[0].raw)))

    if tp.plugins.device_status("cuda")[0]:
        pytest.skip("a GPU is present: the stand-ins are for machines without one")
    previous = bench_cuda_host.launch_stand_ins(monkeypatch.setattr, launch_kernel, 1 << 16)
    try:
        be = B.CUDABackend()
        be._count = 1
        n = 4096
        for op, n_in, number, values in (("mul", 2, None, ()), ("add", 1, float, (0.5,)),
                                         ("add", 1, int, (-3,)), ("relu", 1, None, ())):
            d = np.dtype(np.float32)
            a, b = cupy.ndarray((n,), d), cupy.ndarray((n,), d)
            ch = eager._chain(op, n_in, number, tp.float32, be)
            with _skip_without_ptxas():
                out, launch = ch.dense_launcher([a, b][:n_in], list(values), aligned=True)
            call = launch.call
            assert call is not None and "FLIPS[0]" in call.source, (op, number)
            block = call.__globals__["BLOCK_OF_THREAD"]       # (what call and go pack into)
            for flip in (0, 1):          # both directions: the call and launch see the same one
                calls.clear()
                triton_fusion._FLIP[0] = flip
                if values:
                    r = call(a, values[0], n)
                    triton_fusion._FLIP[0] = flip
                    launch(a.data.ptr, r.data.ptr, n, values[0])
                elif n_in == 2:
                    r = call(a, b, n)
                    triton_fusion._FLIP[0] = flip
                    launch(a.data.ptr, b.data.ptr, r.data.ptr, n)
                else:
                    r = call(a, n)
                    triton_fusion._FLIP[0] = flip
                    launch(a.data.ptr, r.data.ptr, n)
                assert len(calls) == 2 and calls[0] == calls[1], (op, number, flip, calls)
                assert r.__class__ is cupy.ndarray and r.shape == (n,) and r.dtype is d

            # an output off 16-byte alignment: nothing launched, None
            class Off(cupy.ndarray):
                def __new__(cls, shape, dtype):
                    m = cupy.ndarray(int(np.prod(shape)) + 4, dtype)
                    return cupy.ndarray.__new__(cls, shape, dtype, memptr=m.data + 8)
            off = triton_fusion._dense_call(call.direct, Off, d, n_in, list(values), call.fconst,
                                            triton_fusion.BLOCK, aligned=True)
            calls.clear()
            args = (a, values[0], n) if values else (a, b, n) if n_in == 2 else (a, n)
            assert off(*args) is None and calls == []
            # an operand off 16-byte alignment (a view 8 bytes in): nothing allocated or
            # launched, None (the dense case leaves this test to the call)
            m = cupy.ndarray(n + 4, d)
            skew = cupy.ndarray((n,), d, memptr=m.data + 8)
            for bad in ([(skew, values[0], n)] if values else
                        [(skew, b, n), (a, skew, n)] if n_in == 2 else [(skew, n)]):
                assert call(*bad) is None and calls == [], (op, number)
    finally:
        cupy.cuda.set_allocator(previous)
