"""Small integer ops and comparisons on cuda take the adapters' inline dense case, as float32
ops do (issue 32 item 4): no eager-kernel frame, no ``backend.wrap``, the kept launch called by
the generated adapter and the result tensor built there.

* ``add``/``sub``/``mul``/``maximum``/``minimum`` of two int32/int64 tensors of one dtype and
  shape, row-major, or of such a tensor and a Python ``int`` within int32's range (a kernel
  argument): the dense case's one launch, the operand's dtype kept. Never true division (a
  float result), a Python ``float`` (torch promotes to the default dtype), a ``bool``, an int
  outside int32, a strided or broadcast operand: those keep the eager kernel.
* comparisons (``eq`` ... ``ge``) of two row-major tensors of one dtype and shape, or of such a
  tensor and a Python number where the eager kernel sends them to its dense case (float32 with
  a float or int, bfloat16, int32/int64 with an int within int32): the same, a bool result.
* two integer/bool dtypes of one shape (``target * mask``: int64 * bool): the two-dtype dense
  case (``eager._dense_mixed``), its kept launch, torch's promoted dtype (bool for a comparison).

The adapter protocol (``tensorplay._ops._define._float_ufunc_lines``: ``_tp_dense_int_dtypes``,
``_tp_dense_pair_dtypes``, ``_tp_dense_result``, ``_tp_dense_int_calls``, ``_tp_dense_mixed``)
is pinned down with recording kernels; the cuda eager kernels with the launch stand-ins of
``benchmarks/bench_cuda_host`` (no GPU: kernels compiled for sm_90, the driver call recorded),
which refuse to install on a machine with a GPU (those tests skip there). The values of the
kernels these launches run are checked through Triton's interpreter against the cpu backend;
on a GPU the ``cuda``-marked tests compare the ops' results with the cpu's.
"""

from __future__ import annotations

import struct
import sys

import numpy as np
import pytest
import tensorplay as tp
from _launch_stand_ins import compiled_or_skip, param_bytes, stand_ins

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")

# private on purpose: the generated adapters and the eager kernels' declarations are what these
# pin down
from tensorplay._ops import _define  # noqa: E402
from tensorplay._tensor_base import SLOTS  # noqa: E402
from tensorplay.backends import Storage, new_tensor  # noqa: E402
from tensorplay_cuda import eager  # noqa: E402
from tensorplay_cuda.backend import CUDABackend, RootStorage  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
DEV = tp.device("cuda", 0)
I32_MIN, I32_MAX = -0x80000000, 0x7FFFFFFF
ARITH = ["add", "sub", "mul", "maximum", "minimum"]
CMP = ["eq", "ne", "lt", "le", "gt", "ge"]

_KEEP = []       # host buffers behind the recorders' arrays, alive for the session


def _arr(shape=(4,), dtype=np.float32):
    """A C-contiguous cupy.ndarray over host memory of its own (its own address), on cuda:0."""
    n = int(np.prod(shape)) if shape else 1
    h = np.zeros(max(n, 1) * 8 + 16, np.uint8)
    _KEEP.append(h)
    mem = cupy.cuda.UnownedMemory(h.ctypes.data, h.nbytes, h, device_id=0)
    return cupy.ndarray(shape, np.dtype(dtype), memptr=cupy.cuda.MemoryPointer(mem, 0))


def _root(a, be):
    s = RootStorage()
    s.root, s.version, s.backend = a, 0, be
    return s


_UNSET = object()


def _wrapped(be, a):
    """``be.wrap(a, DEV)`` once the backend has seen ``a``'s dtype (its first array of a dtype
    takes wrap's general case, a ``Storage``; the inline cases build a ``RootStorage``, as
    wrap's fast case)."""
    be.wrap(a, DEV)
    return be.wrap(a, DEV)


def _same_tensor(got, want):
    """Every slot of ``got`` equals ``want``'s (storage fields by value, arrays by identity)."""
    for name in SLOTS:
        g, w = getattr(got, name), getattr(want, name)
        if name == "_storage":
            assert type(g) is type(w)
            for f in (s for s in Storage.__slots__ if s != "__weakref__"):
                if f == "root":
                    assert g.root is w.root
                else:
                    assert getattr(g, f, _UNSET) == getattr(w, f, _UNSET), f
        elif name == "_data":
            assert g is w
        else:
            assert g == w and type(g) is type(w), (name, g, w)


# -- the adapter protocol, with recording kernels (no launch) ---------------------------------------

class _Rec:
    """The kernel, the dense case, the two-dtype case, the ufunc and the kept launches: each
    records its call and returns the preset array."""

    def __init__(self, out=None):
        self.out = out
        self.calls = []

    def record(self, name):
        def f(*a):
            self.calls.append((name, *a))
            return self.out
        return f

    def names(self):
        return [c[0] for c in self.calls]


def _adapter(be, rec, op, **attrs):
    """The generated cuda adapter of built-in ``op`` over a recording kernel declaring ``attrs``
    (``name=value`` for ``kernel._tp_<name>``; callables named as strings are the recorder's)."""
    kernel = rec.record("kernel")
    for k, v in attrs.items():
        setattr(kernel, "_tp_" + k, rec.record(v) if v.__class__ is str else v)
    return _define.make_adapter(getattr(tp.ops.tp, op), kernel, be)


def _backend():
    be = CUDABackend()
    be._count = 1
    return be


def _int_kernel_attrs(**more):
    """What the eager kernels of add/sub/mul/maximum/minimum declare (without kept launches)."""
    return dict(float_ufunc="ufunc", float_dtypes=frozenset((tp.float16, tp.float32, tp.float64)),
                dense_ufunc="dense", dense_int_dtypes=frozenset((tp.int32, tp.int64)), **more)


def _cmp_kernel_attrs(**more):
    """What the eager comparison kernels declare (no ufunc case: a bool result)."""
    return dict(dense_ufunc="dense", dense_dtypes=frozenset((tp.float32,)),
                dense_int_dtypes=frozenset((tp.int32, tp.int64)),
                dense_pair_dtypes=frozenset((tp.float16, tp.float64)), dense_result=tp.bool,
                **more)


@pytest.mark.parametrize("shape", [(6,), (2, 3), (), (1,), (0,)])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_int_tensors_and_int32_numbers_take_the_dense_case_and_wrap_s_tensor(shape, dtype):
    """Two row-major tensors of one int dtype and shape, or one and a Python int within int32
    (its extremes and negatives included): the dense case with the arrays (the number as is),
    the result tensor the one ``wrap`` builds of its array."""
    be = _backend()
    x, y = be.wrap(_arr(shape, dtype), DEV), be.wrap(_arr(shape, dtype), DEV)
    out = _arr(shape, dtype)
    rec = _Rec(out)
    adapter = _adapter(be, rec, "add", **_int_kernel_attrs())
    for other in (y, x, 3, -7, 0, I32_MAX, I32_MIN):
        rec.calls.clear()
        r = adapter(x, other)
        want = other.native if other.__class__ is tp.Tensor else other
        assert rec.names() == ["dense"] and rec.calls[0][1] is x.native
        assert rec.calls[0][2] is want or rec.calls[0][2] == want
        _same_tensor(r, _wrapped(be, out))


def test_what_an_int_tensor_takes_elsewhere_keeps_the_kernel():
    """A Python float (torch promotes), a bool, an int outside int32, a tensor of another
    dtype or shape (broadcast), a strided tensor, an int dtype the kernel does not name
    (int16), and true division (no int dtypes declared): the eager kernel, as today."""
    be = _backend()
    x = be.wrap(_arr((2, 3), np.int64), DEV)
    row = be.wrap(_arr((3,), np.int64), DEV)
    x32 = be.wrap(_arr((2, 3), np.int32), DEV)
    a = _arr((2, 3), np.int64).T
    t = new_tensor(_root(a, be), a, (3, 2), (1, 3), 0, tp.int64, DEV, be)
    x16 = be.wrap(_arr((2, 3), np.int16), DEV)
    rec = _Rec(_arr((2, 3), np.int64))
    adapter = _adapter(be, rec, "add", **_int_kernel_attrs())
    for other in (2.5, 1.0, True, I32_MAX + 1, I32_MIN - 1, 2 ** 40, row, x32):
        rec.calls.clear()
        adapter(x, other)
        assert rec.names() == ["kernel"], other
    rec.out = _arr((2, 3), np.int64).T
    for args in ((t, t), (t, 3)):
        rec.calls.clear()
        adapter(*args)
        assert rec.names() == ["kernel"]
    rec.out = _arr((2, 3), np.int16)
    for other in (x16, 3):
        rec.calls.clear()
        adapter(x16, other)
        assert rec.names() == ["kernel"]
    # the float ops' dense case is unchanged: a float32 tensor with a float or any int
    f = be.wrap(_arr((2, 3)), DEV)
    rec.out = _arr((2, 3))
    for other in (f, 2.5, 3, 2 ** 40):
        rec.calls.clear()
        adapter(f, other)
        assert rec.names() == ["dense"]
    div = _adapter(be, rec, "div", **{k: v for k, v in _int_kernel_attrs().items()
                                      if k != "dense_int_dtypes"})
    rec.out = _arr((2, 3), np.float32)
    for other in (x, 3):
        rec.calls.clear()
        div(x, other)
        assert rec.names() == ["kernel"]


@pytest.mark.parametrize("op", CMP)
def test_a_comparison_s_dense_case_builds_a_bool_tensor(op):
    """A kernel with ``_tp_dense_result``: the result tensor has that dtype (bool), the
    operand's shape, row-major strides and device -- the tensor ``wrap`` builds of the bool
    array; float32 with a float or any int, int64 with an int in int32's range, two float16 or
    float64 tensors (their pair dtypes) take it."""
    be = _backend()
    for dtype, others in ((np.float32, ("same", 0.5, -3, 2 ** 40)), (np.int64, ("same", -100)),
                          (np.int32, ("same", I32_MIN)), (np.float16, ("same",)),
                          (np.float64, ("same",))):
        for shape in ((96, 8), (), (0,)):
            x = be.wrap(_arr(shape, dtype), DEV)
            out = _arr(shape, np.bool_)
            rec = _Rec(out)
            adapter = _adapter(be, rec, op, **_cmp_kernel_attrs())
            for other in others:
                other = be.wrap(_arr(shape, dtype), DEV) if other == "same" else other
                rec.calls.clear()
                r = adapter(x, other)
                assert rec.names() == ["dense"], (dtype, other)
                assert r.dtype is tp.bool and r.shape == shape
                _same_tensor(r, _wrapped(be, out))


def test_what_a_comparison_takes_elsewhere_keeps_the_kernel():
    """float16/float64 with a number, int64 with a float, an int outside int32 or a bool,
    bfloat16 unless named, broadcast and strided operands: the kernel."""
    be = _backend()
    rec = _Rec(_arr((2, 3), np.bool_))
    adapter = _adapter(be, rec, "lt", **_cmp_kernel_attrs())
    h = be.wrap(_arr((2, 3), np.float16), DEV)
    d = be.wrap(_arr((2, 3), np.float64), DEV)
    i = be.wrap(_arr((2, 3), np.int64), DEV)
    f = be.wrap(_arr((2, 3), np.float32), DEV)
    a = _arr((2, 3), np.float32).T
    st = new_tensor(_root(a, be), a, (3, 2), (1, 3), 0, tp.float32, DEV, be)
    cases = [(h, 0.5), (h, 2), (d, 0.5), (d, 1), (i, -100.0), (i, I32_MAX + 1), (i, True),
             (f, True), (f, be.wrap(_arr((3,), np.float32), DEV)), (f, i), (i, f), (st, st),
             (st, 0.5)]
    for x, other in cases:
        # (the result of strided operands is in their layout)
        rec.out = _arr((2, 3), np.bool_).T if x is st else _arr((2, 3), np.bool_)
        rec.calls.clear()
        adapter(x, other)
        assert rec.names() == ["kernel"], (x.dtype, other)


def test_the_adapters_call_the_kept_int_launches_within_the_size_bound():
    """``_tp_dense_int_calls`` (with ``_tp_dense_calls``): a Python int within int32 and
    ``0 < n < top`` elements is the kept call for the operand's dtype, ``call(array, number,
    n)``; an empty or large operand, a dtype without a kept call, or a call returning None goes
    to the dense case. The float ops' int numbers take it too (float32 ``x + 1``)."""
    be = _backend()
    rec = _Rec()
    top = 8
    calls, fcalls, icalls = {}, {}, {}
    adapter = _adapter(be, rec, "add", **_int_kernel_attrs(
        dense_calls=(calls, fcalls, top, {}, {}, 64), dense_int_calls=icalls))
    x = be.wrap(_arr((6,), np.int64), DEV)
    f = be.wrap(_arr((6,), np.float32), DEV)
    rec.out = _arr((6,), np.int64)
    adapter(x, 5)
    assert rec.names() == ["dense"]                  # no kept call yet
    icalls[tp.int64] = rec.record("kept")
    icalls[tp.float32] = rec.record("kept")
    for t, number in ((x, 5), (x, I32_MIN), (f, 1)):
        rec.calls.clear()
        rec.out = _arr((6,), np.int64 if t is x else np.float32)
        r = adapter(t, number)
        assert rec.calls == [("kept", t.native, number, 6)]
        _same_tensor(r, _wrapped(be, rec.out))
    rec.calls.clear()
    adapter(f, 2 ** 40)                              # a float op's int outside int32
    assert rec.names() == ["dense"]
    for shape in ((0,), (8,), (16,)):
        rec.calls.clear()
        rec.out = _arr(shape, np.int64)
        adapter(be.wrap(_arr(shape, np.int64), DEV), 5)
        assert rec.names() == ["dense"]
    icalls[tp.int64] = lambda a, c, n: rec.calls.append(("none",))   # nothing launched
    rec.calls.clear()
    rec.out = _arr((6,), np.int64)
    adapter(x, 5)
    assert rec.names() == ["none", "dense"]
    # two tensors: the kept call of _tp_dense_calls, as for the float dtypes
    calls[tp.int64] = rec.record("pair")
    rec.calls.clear()
    adapter(x, x)
    assert rec.calls == [("pair", x.native, x.native, 6)]


def _mixed_attrs(rec, results, calls=None, top=1 << 22):
    return dict(dense_mixed=(rec.record("mixed"), results, {} if calls is None else calls, top))


@pytest.mark.parametrize("op, da, db, want", [("mul", "int64", "bool", "int64"),
                                              ("add", "int32", "int64", "int64"),
                                              ("lt", "int64", "int32", "bool")])
def test_two_integer_dtypes_take_the_two_dtype_case(op, da, db, want):
    """``_tp_dense_mixed``: two row-major tensors of one shape (with dimensions) whose dtype
    pair is in its table: its callable (or the kept launch of the pair, ``0 < n < top``), the
    result tensor of the table's dtype built inline; other pairs, shapes, 0-d or strided
    operands and ``top`` elements or more keep the kernel."""
    be = _backend()
    A, B, W = (getattr(tp, n) for n in (da, db, want))
    rec = _Rec()
    calls = {}
    attrs = _int_kernel_attrs() if op != "lt" else _cmp_kernel_attrs()
    adapter = _adapter(be, rec, op, **attrs, **_mixed_attrs(rec, {(A, B): W}, calls, top=100))
    for shape in ((96,), (2, 3), (0,)):
        x, y = be.wrap(_arr(shape, da), DEV), be.wrap(_arr(shape, db), DEV)
        rec.out = _arr(shape, want)
        rec.calls.clear()
        r = adapter(x, y)
        assert rec.calls == [("mixed", x.native, y.native)]
        _same_tensor(r, _wrapped(be, rec.out))
    x, y = be.wrap(_arr((6,), da), DEV), be.wrap(_arr((6,), db), DEV)
    calls[(A, B)] = rec.record("kept")
    rec.out = _arr((6,), want)
    rec.calls.clear()
    r = adapter(x, y)
    assert rec.calls == [("kept", x.native, y.native, 6)]
    _same_tensor(r, _wrapped(be, rec.out))
    # not the case: the swapped pair (not in the table), other shapes, 0-d, strided, large
    a = _arr((2, 3), da).T
    st = new_tensor(_root(a, be), a, (3, 2), (1, 3), 0, A, DEV, be)
    cases = [(y, x), (x, be.wrap(_arr((1,), db), DEV)), (be.wrap(_arr((), da), DEV),
                                                         be.wrap(_arr((), db), DEV)),
             (st, be.wrap(_arr((3, 2), db), DEV)),
             (be.wrap(_arr((128,), da), DEV), be.wrap(_arr((128,), db), DEV))]
    for p, q in cases:
        rec.calls.clear()
        # (the result of strided operands is in their layout)
        rec.out = _arr((2, 3), want).T if p is st else _arr(p.shape, want)
        adapter(p, q)
        assert rec.names() == ["kernel"], (p.shape, q.shape)


def test_with_several_gpus_the_new_cases_run_inside_the_device_guard(monkeypatch):
    """Two GPUs: the operands are aligned and the guard entered first (the lines run after
    the device bookkeeping), then the same cases: int tensors and an int, a comparison's bool
    result, two dtypes -- on cuda:1."""
    import contextlib
    be = CUDABackend()
    be._count = 2
    entered = []
    monkeypatch.setattr(be, "device_guard",
                        lambda dev: entered.append(str(dev)) or contextlib.nullcontext())
    d1 = tp.device("cuda", 1)

    def arr(shape, dtype):
        a = _arr(shape, dtype)
        return cupy.ndarray(shape, a.dtype, memptr=cupy.cuda.MemoryPointer(
            cupy.cuda.UnownedMemory(a.data.ptr, a.nbytes, a, device_id=1), 0))
    x, y = be.wrap(arr((4,), np.int64), d1), be.wrap(arr((4,), np.int64), d1)
    m = be.wrap(arr((4,), np.bool_), d1)
    rec = _Rec()
    add = _adapter(be, rec, "mul", **_int_kernel_attrs(), **_mixed_attrs(
        rec, {(tp.int64, tp.bool): tp.int64}))
    lt = _adapter(be, rec, "lt", **_cmp_kernel_attrs())
    for adapter, other, out in ((add, y, np.int64), (add, -3, np.int64), (add, m, np.int64),
                                (lt, y, np.bool_), (lt, 5, np.bool_)):
        rec.out = arr((4,), out)
        entered.clear()
        rec.calls.clear()
        r = adapter(x, other)
        assert entered == ["cuda:1"] and rec.names() == ["mixed" if other is m else "dense"]
        be.wrap(rec.out, d1)
        _same_tensor(r, be.wrap(rec.out, d1))


def test_the_cpu_adapters_take_none_of_the_new_cases():
    """The cpu backend's kernels declare no dense case: their generated adapters hold none of
    the new cases' lines (no int calls, result dtype or two-dtype table)."""
    cpu = tp.backends.get("cpu")
    import linecache
    for op in ARITH + CMP + ["div", "relu", "tanh"]:
        k = cpu.kernels().get(op)
        if k is None:
            continue
        a = _define.make_adapter(getattr(tp.ops.tp, op), k, cpu)
        src = "".join(linecache.getlines(a.__code__.co_filename))
        assert "__dicalls" not in src and "__dres" not in src and "__mres" not in src, op


# -- the cuda eager kernels under the launch stand-ins ----------------------------------------------

def _needs_triton():
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")


@pytest.fixture(scope="module")
def stubbed():
    """The launch stand-ins (no GPU; no warm-up calls), a fresh one-GPU backend registered for
    cuda while these run, and the recorded launches: (grid, the parameter block's first eight
    8-byte slots)."""
    _needs_triton()
    launched = []

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched.append(((g0, g1, g2), param_bytes(params, 8)))
    with stand_ins(launch_kernel, 1 << 24, register=True) as be:
        yield be, launched


_compiled = compiled_or_skip


def _frames(call):
    """``(call(), code objects of the Python frames it entered)``."""
    seen = []

    def prof(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code)
    sys.setprofile(prof)
    try:
        r = call()
    finally:
        sys.setprofile(None)
    return r, seen


def _t(be, shape, dtype):
    """A cuda tensor over host memory of its own (its own address in the launch's parameters)."""
    return be.wrap(_arr(shape, dtype), DEV)


def _cpu_meta(op, x, other):
    """dtype, shape and strides of the cpu backend's result of the same call."""
    cx = tp.zeros(x.shape, dtype=x.dtype)
    co = tp.zeros(other.shape, dtype=other.dtype) if other.__class__ is tp.Tensor else other
    r = getattr(tp.ops.tp, op)(cx, co)
    return r.dtype, r.shape, r.stride()


# (op, first operand (shape, dtype), the other: a (shape, dtype) or a Python number)
INLINE = ([(op, ((96,), np.int64), ((96,), np.int64)) for op in ARITH] +
          [(op, ((96, 8), np.int32), ((96, 8), np.int32)) for op in ARITH] +
          [(op, ((96,), np.int64), n) for op in ARITH for n in (3, -7, I32_MAX, I32_MIN)] +
          [(op, ((5,), np.int32), n) for op in ARITH for n in (-1, I32_MAX)] +
          [(op, ((96,), np.int64), ((96,), np.int64)) for op in CMP] +
          [(op, ((96, 800), np.float32), ((96, 800), np.float32)) for op in CMP] +
          [(op, ((96,), np.int64), -100) for op in CMP] +
          [(op, ((96,), np.int32), I32_MIN) for op in CMP] +
          [(op, ((96, 800), np.float32), 0.0) for op in CMP] +
          [(op, ((96, 800), np.float32), 3) for op in CMP] +
          [("lt", ((), np.int64), 800), ("lt", ((7,), np.float16), ((7,), np.float16)),
           ("ge", ((7,), np.float64), ((7,), np.float64))] +
          [("mul", ((96,), np.int64), ((96,), np.bool_)), ("add", ((96,), np.int64),
                                                          ((96,), np.bool_)),
           ("mul", ((3, 5), np.int32), ((3, 5), np.int64)), ("sub", ((96,), np.int64),
                                                             ((96,), np.int32)),
           ("lt", ((96,), np.int64), ((96,), np.int32)), ("eq", ((96,), np.bool_),
                                                          ((96,), np.int64))])


@pytest.mark.parametrize("op, first, second", INLINE)
def test_int_ops_and_comparisons_are_one_inline_launch(stubbed, op, first, second):
    """Through the op (the dispatcher's adapter): one launch, no Python frame of the eager
    module (its kernel, its dense cases) and no ``backend.wrap``; the result's dtype, shape and
    strides the cpu's, on cuda:0, its array the launch's output; the launch's parameters the
    operands' addresses, the element count and the number (an int32 argument; a float as
    float32)."""
    be, launched = stubbed
    x = _t(be, *first)
    other = _t(be, *second) if second.__class__ is tuple else second
    f = getattr(tp.ops.tp, op)
    _compiled(lambda: f(x, other))            # compiles (the stand-ins have no warm-up)
    for _ in range(2):
        launched.clear()
        r, frames = _frames(lambda: f(x, other))
        assert len(launched) == 1
        assert not [c for c in frames if c.co_filename == eager.__file__], \
            [c.co_name for c in frames]
        assert CUDABackend.wrap.__code__ not in frames
        assert (r.dtype, r.shape, r.stride()) == _cpu_meta(op, x, other)
        assert r.device == DEV and r._data.__class__ is cupy.ndarray and r._data._c_contiguous
        assert be.dtype_of(r._data) is r.dtype
        raw = launched[0][1]
        n = x.numel()
        out = r._data.data.ptr
        if other.__class__ is tp.Tensor:
            pa, pb, po, _fconst, count = struct.unpack_from("=QQQQi", raw)
            assert (pa, pb, po, count) == (x._data.data.ptr, other._data.data.ptr, out, n)
        else:
            pa, po, _fconst, count = struct.unpack_from("=QQQi", raw)
            assert (pa, po, count) == (x._data.data.ptr, out, n)
            if other.__class__ is int:
                assert struct.unpack_from("=i", raw, 40)[0] == other
            else:
                assert struct.unpack_from("=f", raw, 40)[0] == other


def test_the_cross_entropy_calls_through_operators_are_inline(stubbed):
    """``target * mask``, ``target + target``, ``target != -100``, ``x < out``, ``x > 0.0``,
    ``(...).max() < 800``'s 0-d comparison: one launch each, inline."""
    be, launched = stubbed
    t, m = _t(be, (96,), np.int64), _t(be, (96,), np.bool_)
    x, out = _t(be, (96, 800), np.float32), _t(be, (96, 800), np.float32)
    mx = _t(be, (), np.int64)
    calls = [lambda: t * m, lambda: t + t, lambda: t != -100, lambda: x < out, lambda: x > 0.0,
             lambda: mx < 800, lambda: t - 1, lambda: tp.maximum(t, t)]
    for call in calls:
        _compiled(call)
        launched.clear()
        r, frames = _frames(call)
        assert len(launched) == 1
        assert not [c for c in frames if c.co_filename == eager.__file__]
        assert CUDABackend.wrap.__code__ not in frames


class _Taken(Exception):
    """Raised by the watched kernel: the adapter called it (the old path)."""


def _watched(be, op):
    """The generated adapter of ``op`` over the backend's eager kernel's declarations, whose
    kernel raises ``_Taken`` (the stand-ins cannot run CuPy's kernels)."""
    real = be.kernels()[op]

    def kernel(*a):
        raise _Taken(a)
    kernel.__dict__.update(real.__dict__)
    return _define.make_adapter(getattr(tp.ops.tp, op), kernel, be)


def test_what_the_inline_case_does_not_take_keeps_the_kernel(stubbed):
    """Strided and broadcast operands, an int with a Python float (promotes), an int beyond
    int32, a bool number, int64 true division, float16/float64 compared with a number, an int
    tensor compared with a float, a 0-d two-dtype pair, a bool * int64 product (torch's logical
    bool arithmetic is the reference kernel's): the eager kernel, no launch from the adapter."""
    be, launched = stubbed
    t = _t(be, (96,), np.int64)
    t2 = _t(be, (6, 16), np.int64)
    row = _t(be, (16,), np.int64)
    strided = t2.t()
    assert not strided.is_contiguous()
    m = _t(be, (96,), np.bool_)
    h, d = _t(be, (7,), np.float16), _t(be, (7,), np.float64)
    z64, zb = _t(be, (), np.int64), _t(be, (), np.bool_)
    cases = [("add", t2, row), ("mul", strided, strided), ("add", strided, 3),
             ("add", t, 1.5), ("mul", t, 2.0), ("add", t, I32_MAX + 1), ("sub", t, I32_MIN - 1),
             ("add", t, True), ("div", t, t), ("div", t, 3), ("lt", h, 0.5), ("lt", d, 2),
             ("ne", t, -100.0), ("mul", z64, zb), ("mul", m, t), ("eq", t2, row),
             ("lt", strided, strided)]
    for op, x, other in cases:
        adapter = _watched(be, op)
        launched.clear()
        with pytest.raises(_Taken):
            adapter(x, other)
        assert launched == [], (op, other)


# -- the values these launches compute: their kernels through Triton's interpreter -----------------

def _values(dtype, n, seed):
    """``n`` values of ``dtype`` with its extremes, zeros and negatives (NumPy)."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if d.kind == "f":
        v = rng.standard_normal(n).astype(d)
        v[:4] = [0.0, -0.0, 1.0, -1.0]
        return v
    info = np.iinfo(d)
    v = rng.integers(info.min, info.max, n, dtype=d, endpoint=True)
    # (an unsigned dtype's -1 is its max)
    v[:6] = [info.min, info.max, 0, 1, -1 if info.min else info.max - 1, info.min + 1]
    return v


@pytest.mark.parametrize("op", ARITH + CMP)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_the_int_launches_compute_the_cpus_values(op, dtype):
    """The generated one-step kernels the inline launches run -- two int tensors, an int tensor
    and an int32 argument -- through Triton's interpreter on NumPy arrays: the cpu backend's
    eager op, bit for bit (overflow wraps as torch's; comparisons give bool)."""
    _needs_triton()
    from tensorplay.backends import ElementwiseExpr, Step
    from tensorplay_cuda import triton_fusion
    cpu = tp.backends.get("cpu")
    a, b = _values(dtype, 300, 1), _values(dtype, 300, 2)
    want = getattr(tp.ops.tp, op)(tp.from_numpy(a), tp.from_numpy(b))
    expr = ElementwiseExpr(2, (Step(op, (("in", 0), ("in", 1))),), (0,), (want.dtype,),
                           tp.device("cpu"))
    got = triton_fusion.TritonChain(expr, cpu).run([a, b])[0]
    assert got.dtype == want.numpy().dtype and np.array_equal(got, want.numpy())
    for c in (3, -100, I32_MAX, I32_MIN, 0, -1):
        want = getattr(tp.ops.tp, op)(tp.from_numpy(a), c)
        expr = ElementwiseExpr(1, (Step(op, (("in", 0), ("const", 1))),), (0,),
                               (want.dtype,), tp.device("cpu"))
        got = triton_fusion.TritonChain(expr, cpu).run([a], [c])[0]
        assert got.dtype == want.numpy().dtype and np.array_equal(got, want.numpy()), c


# -- on a GPU: the values -----------------------------------------------------------------------------

def _same(got, want):
    assert got.device.type == "cuda" and got.dtype is want.dtype and got.shape == want.shape
    assert got.stride() == want.stride()
    # (bytes compared row-major: a strided or 0-d array has no byte view of its own)
    g, w = np.ascontiguousarray(got.cpu().numpy()), np.ascontiguousarray(want.numpy())
    assert np.array_equal(g.view(np.uint8), w.view(np.uint8))


def _inline_on_one_gpu(call):
    """With one visible GPU (the kept launches by dtype): ``call`` enters no Python frame of
    the eager module."""
    if eager._one_gpu(tp.backends.get("cuda")):
        _, frames = _frames(call)
        assert not [c for c in frames if c.co_filename == eager.__file__]


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("op", ARITH + CMP)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_on_a_gpu_int_ops_give_the_cpus_results(op, dtype):
    """Past the warm-up (the kept launches, inline): two tensors, a tensor and Python ints
    (negative, the int32 extremes, values that overflow and wrap), then the old paths --
    strided and broadcast operands, an int beyond int32, a float number -- all the cpu's
    results, bit for bit, with its dtype, shape and strides."""
    a, b = _values(dtype, 96 * 8, 3).reshape(96, 8), _values(dtype, 96 * 8, 4).reshape(96, 8)
    ca, cb = tp.from_numpy(a), tp.from_numpy(b)
    ga, gb = ca.cuda(), cb.cuda()
    f = getattr(tp.ops.tp, op)
    for _ in range(eager.WARMUP_CALLS + 3):
        _same(f(ga, gb), f(ca, cb))
        for c in (3, -100, I32_MAX, I32_MIN, -1):
            _same(f(ga, c), f(ca, c))
    _inline_on_one_gpu(lambda: f(ga, gb))
    _same(f(ga.t(), gb.t()), f(ca.t(), cb.t()))
    _same(f(ga, gb[0]), f(ca, cb[0]))
    _same(f(ga[::2], 7), f(ca[::2], 7))
    for c in (2 ** 40, -(2 ** 35), 2.5, -1.0):
        if dtype == "int32" and c.__class__ is int:
            continue            # (beyond int32: torch's own rules for that tensor dtype)
        _same(f(ga, c), f(ca, c))


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("op", CMP)
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "bfloat16"])
def test_on_a_gpu_float_comparisons_give_the_cpus_bools(op, dtype):
    """Two tensors of one dtype, and a tensor with numbers (float32's inline, the others'
    through the kernel): bool results equal to the cpu's."""
    t = getattr(tp, dtype)
    an, bn = _values("float32", 96 * 80, 5), _values("float32", 96 * 80, 6)
    an[8:12] = bn[8:12]                        # some ties
    a = tp.from_numpy(an.reshape(96, 80)).to(t)
    b = tp.from_numpy(bn.reshape(96, 80)).to(t)
    ga, gb = a.cuda(), b.cuda()
    f = getattr(tp.ops.tp, op)
    for _ in range(eager.WARMUP_CALLS + 3):
        _same(f(ga, gb), f(a, b))
        for c in (0.0, 0.5, -1, 3, 1.00390625 + 2 ** -12):
            _same(f(ga, c), f(a, c))
    _same(f(ga.t(), gb.t()), f(a.t(), b.t()))


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("op, da, db", [("mul", "int64", "bool"), ("add", "int64", "bool"),
                                        ("mul", "int32", "int64"), ("sub", "int64", "int32"),
                                        ("lt", "int64", "int32"), ("eq", "bool", "int64"),
                                        ("ne", "uint8", "int8"), ("maximum", "int64", "bool")])
def test_on_a_gpu_two_dtype_ops_give_the_cpus_results(op, da, db):
    a, b = _values(da, 96, 7), _values(db, 96, 8)
    ca, cb = tp.from_numpy(a), tp.from_numpy(b)
    ga, gb = ca.cuda(), cb.cuda()
    f = getattr(tp.ops.tp, op)
    for _ in range(eager.WARMUP_CALLS + 3):
        _same(f(ga, gb), f(ca, cb))
    _inline_on_one_gpu(lambda: f(ga, gb))
    _same(f(ga[::2], gb[::2]), f(ca[::2], cb[::2]))
    _same(f(ga[:1].reshape(()), gb[:1].reshape(())), f(ca[:1].reshape(()), cb[:1].reshape(())))
