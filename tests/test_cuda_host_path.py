"""The per-call host path of built-in ops on cuda: the generated adapters' inline ufunc case,
the result tensors they build without ``wrap``, ``RootStorage`` and ``from_cupy``.

No GPU needed: the arrays are CuPy arrays over host memory (never touched by a kernel) and the
ufunc is a recording stand-in, so these run in CI wherever CuPy is installed. What they pin down:
the fast path builds exactly the tensor ``CUDABackend.wrap`` would build, takes the reference
kernel wherever the eager kernel would (bf16, Python bools, large arrays), keeps the device rules
(mixed GPUs refused, the guard entered with several GPUs) and the op's own error messages.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp
from tensorplay.errors import DispatchError

try:
    import tensorplay_cuda
except ImportError as e:     # the plugin is a separate distribution
    pytest.skip(f"tensorplay-cuda is not installed ({e})", allow_module_level=True)

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (tensorplay-cuda[cuda13] or "
                                          "[cuda12] installs it)")

# private on purpose: these check the cuda plugin's inlined copies of the core's private
# constructors (Storage, Tensor fields) and generated adapters, field by field
from tensorplay.backends import Storage, new_tensor  # noqa: E402
from tensorplay._ops import _define  # noqa: E402
from tensorplay import Tensor  # noqa: E402
from tensorplay._tensor_base import SLOTS  # noqa: E402
from tensorplay_cuda import eager  # noqa: E402
from tensorplay_cuda.backend import CUDABackend, RootStorage  # noqa: E402

_KEEP = []       # host buffers behind the arrays, alive for the session


_UNSET = object()


def _arr(shape=(4,), dtype=np.float32, device_id=0):
    """A C-contiguous cupy.ndarray of ``shape``/``dtype`` over host memory claiming
    ``cuda:device_id``."""
    n = int(np.prod(shape)) if shape else 1
    h = np.zeros(max(n, 1) * 8 + 16, np.uint8)
    _KEEP.append(h)
    mem = cupy.cuda.UnownedMemory(h.ctypes.data, h.nbytes, h, device_id=device_id)
    return cupy.ndarray(shape, dtype, memptr=cupy.cuda.MemoryPointer(mem, 0))


def _backend(n_gpus=1):
    be = CUDABackend()
    be._count = n_gpus
    return be


class _Recorder:
    """The ufunc stand-in and the reference kernel: records calls, returns a preset array."""

    def __init__(self, out):
        self.out = out
        self.calls = []

    def ufunc(self, a, b):
        self.calls.append(("ufunc", a, b))
        return self.out

    def reference(self, a, b):
        self.calls.append(("reference", a, b))
        return self.out


def _adapter(be, rec, op="add", big=False):
    """The generated cuda adapter of built-in ``op`` over the eager kernel of ``tensorplay_cuda``
    (its ufunc and reference kernel replaced by the recorder)."""
    kernel = eager._binary(op, rec.reference, be, rec.ufunc, False, big)
    return _define.make_adapter(getattr(tp.ops.tp, op), kernel, be)


def _root(a, be):
    """A cuda ``RootStorage`` over array ``a``, as ``CUDABackend.wrap`` builds it."""
    s = RootStorage()
    s.root, s.version, s.backend = a, 0, be
    return s


def _same_tensor(got, want):
    """Every slot of ``got`` equals ``want``'s (storage fields by value, arrays by identity)."""
    for name in SLOTS:
        g, w = getattr(got, name), getattr(want, name)    # AttributeError: a field left unset
        if name == "_storage":
            for f in (s for s in Storage.__slots__ if s != "__weakref__"):
                if f == "root":
                    assert g.root is w.root
                else:   # a slot unset in both (``aliases`` until a ``.data``) is equal
                    assert getattr(g, f, _UNSET) == getattr(w, f, _UNSET), f
        elif name == "_data":
            assert g is w
        else:
            assert g == w and type(g) is type(w), (name, g, w)


@pytest.mark.parametrize("shape", [(4,), (2, 3), (), (1,)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_inline_result_is_the_tensor_wrap_builds(shape, dtype):
    be = _backend()
    dev = tp.device("cuda", 0)
    x, y = be.wrap(_arr(shape, dtype), dev), be.wrap(_arr(shape, dtype), dev)
    out = _arr(shape, dtype)
    rec = _Recorder(out)
    adapter = _adapter(be, rec)
    for other in (y, 2.5, 3):
        rec.calls.clear()
        r = adapter(x, other)
        want_other = other.native if isinstance(other, Tensor) else other
        assert [c[0] for c in rec.calls] == ["ufunc"]
        # (a number with float16 is passed rounded through float32, torch's rule: same value)
        assert rec.calls[0][1] is x.native and (rec.calls[0][2] is want_other or (
            dtype is np.float16 and rec.calls[0][2] == want_other))
        _same_tensor(r, be.wrap(out, dev))
        assert type(r.storage_ref) is RootStorage and r.storage_ref.nbytes == out.nbytes
        assert r.dispatch_key is dev.type and r.backend_key is dev.type


def test_inline_case_leaves_to_wrap_or_the_reference_kernel_what_it_cannot_vouch_for():
    be = _backend()
    dev = tp.device("cuda", 0)
    x = be.wrap(_arr((2, 3)), dev)
    # broadcasting: the ufunc runs, the result's metadata is read from the array (wrap)
    out = _arr((2, 3))
    rec = _Recorder(out)
    adapter = _adapter(be, rec)
    r = adapter(x, be.wrap(_arr((3,)), dev))
    assert [c[0] for c in rec.calls] == ["ufunc"]
    _same_tensor(r, be.wrap(out, dev))
    # an operand whose strides are not the cached row-major tuple (a size-1 dimension with
    # another stride, as a view has): wrap gives the result its own row-major strides
    a = _arr((4, 1))
    col = new_tensor(_root(a, be), a, (4, 1), (4, 1), 0, tp.float32, dev, be)
    out41 = _arr((4, 1))
    rec41 = _Recorder(out41)
    ad41 = _adapter(be, rec41)
    for other in (col, 1.5):
        r = ad41(col, other)
        assert r.stride() == (1, 1) and r.native is out41
        _same_tensor(r, be.wrap(out41, dev))
    # a Python bool, another dtype, bfloat16 (kind 'V' in CuPy: float32 opmath): the reference
    rec.calls.clear()
    adapter(x, True)
    adapter(x, be.wrap(_arr((2, 3), np.float64), dev))
    xb = be.wrap(_arr((2, 3), np.dtype("bfloat16") if _has_bf16() else np.float16), dev)
    if xb.dtype is tp.bfloat16:
        adapter(xb, 2.0)
        adapter(xb, xb)
        assert [c[0] for c in rec.calls] == ["reference"] * 4
    else:
        assert [c[0] for c in rec.calls] == ["reference"] * 2


def _has_bf16():
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        return False
    return True


def test_eager_kernels_declare_the_inline_case_only_where_the_result_keeps_the_dtype():
    be = _backend()
    rec = _Recorder(None)
    for op in ("add", "sub", "mul", "div", "maximum", "minimum"):
        k = eager._binary(op, rec.reference, be, rec.ufunc, False, True)
        assert k._tp_float_ufunc == rec.ufunc and k._tp_float_max == eager.THRESHOLD
        assert tp.bfloat16 not in k._tp_float_dtypes and tp.float32 in k._tp_float_dtypes
        assert eager._binary(op, rec.reference, be, rec.ufunc, False, False)._tp_float_max is None
    for op, swap in (("eq", False), ("lt", False), ("rsub", True), ("rdiv", True)):
        k = eager._binary(op, rec.reference, be, rec.ufunc, swap, True)
        assert not hasattr(k, "_tp_float_ufunc"), op


class _DenseRecorder(_Recorder):
    """Also the dense case's stand-in (``_tp_dense_ufunc``), returning the preset array."""

    def dense(self, *arrays):
        self.calls.append(("dense", *arrays))
        return self.out

    def unary(self, a):
        self.calls.append(("ufunc", a))
        return self.out


def _dense_adapter(be, rec, op="add", fmax=None, dense_dtypes=None):
    """A generated adapter over a kernel declaring the inline case and the dense case (and the
    dense case's own dtypes, when given)."""
    unary = len(getattr(tp.ops.tp, op).schema.arguments) == 1

    def kernel(*a):
        rec.calls.append(("reference", *a))
        return rec.out
    kernel._tp_float_ufunc = rec.unary if unary else rec.ufunc
    kernel._tp_float_dtypes = frozenset((tp.float16, tp.float32, tp.float64))
    kernel._tp_float_max = fmax
    kernel._tp_dense_ufunc = rec.dense
    if dense_dtypes is not None:
        kernel._tp_dense_dtypes = dense_dtypes
    return _define.make_adapter(getattr(tp.ops.tp, op), kernel, be)


@pytest.mark.parametrize("shape", [(4,), (2, 3), (), (1,), (0,)])
def test_dense_operands_of_one_shape_take_the_dense_case(shape):
    be = _backend()
    dev = tp.device("cuda", 0)
    x, y = be.wrap(_arr(shape), dev), be.wrap(_arr(shape), dev)
    out = _arr(shape)
    rec = _DenseRecorder(out)
    for op in ("add", "mul"):
        rec.calls.clear()
        r = _dense_adapter(be, rec, op)(x, y)
        assert rec.calls == [("dense", x.native, y.native)]
        _same_tensor(r, be.wrap(out, dev))
        assert type(r.storage_ref) is RootStorage
    rec.calls.clear()
    r = _dense_adapter(be, rec, "exp")(x)
    assert rec.calls == [("dense", x.native)]
    _same_tensor(r, be.wrap(out, dev))
    for number in (2.5, 3, -7):                      # a Python number, passed as is
        rec.calls.clear()
        r = _dense_adapter(be, rec, "mul")(x, number)
        assert rec.calls == [("dense", x.native, number)]
        _same_tensor(r, be.wrap(out, dev))


def test_the_dense_case_is_only_for_what_it_vouches_for():
    """Broadcast shapes, strided operands, a Python number, other dtypes and bfloat16 (unless the
    kernel names it) keep the ufunc or the kernel; only same-shape row-major operands go dense,
    at any size: the size bound is the ufunc case's."""
    be = _backend()
    dev = tp.device("cuda", 0)
    x = be.wrap(_arr((2, 3)), dev)
    row = be.wrap(_arr((3,)), dev)
    a = _arr((2, 3)).T                               # (3, 2), strides (1, 3): not row-major
    t = new_tensor(_root(a, be), a, (3, 2), (1, 3), 0, tp.float32, dev, be)
    out = _arr((2, 3))
    rec = _DenseRecorder(out)
    add, exp = _dense_adapter(be, rec), _dense_adapter(be, rec, "exp")
    add(x, row)                                      # broadcast
    rec.out = _arr((2, 3)).T     # (the ufunc's result of strided operands: in their layout)
    add(t, t)                                        # one shape, strided
    add(t, 2.0)                                      # a number with a strided tensor
    exp(t)                                           # unary, strided
    rec.out = out
    assert [c[0] for c in rec.calls] == ["ufunc"] * 4
    rec.calls.clear()
    add(x, True)                                     # a bool is not a number here: the kernel
    assert [c[0] for c in rec.calls] == ["reference"]
    rec.calls.clear()
    add(x, be.wrap(_arr((2, 3), np.float64), dev))   # dtypes differ: the reference kernel
    assert [c[0] for c in rec.calls] == ["reference"]
    rec.calls.clear()
    big, big_exp = _dense_adapter(be, rec, fmax=6), _dense_adapter(be, rec, "exp", fmax=6)
    big(x, x)                                        # 6 elements, dense: the dense case
    big(x, 2.0)
    big_exp(x)
    rec.out = _arr((2, 3)).T     # (the kernel's result of strided operands: in their layout)
    big(t, t)                                        # 6 elements, strided: past the ufunc
    big(t, 2.0)                                      # case's bound, the kernel's own path
    big_exp(t)
    rec.out = out
    assert [c[0] for c in rec.calls] == ["dense"] * 3 + ["reference"] * 3
    if _has_bf16():
        bf = np.dtype("bfloat16")
        xb = be.wrap(_arr((2, 3), bf), dev)
        ab = _arr((2, 3), bf).T
        tb = new_tensor(_root(ab, be), ab, (3, 2), (1, 3), 0, tp.bfloat16, dev, be)
        rec.calls.clear()
        add(xb, xb)
        assert [c[0] for c in rec.calls] == ["reference"]
        # a kernel naming bfloat16 among the dense case's dtypes: dense bf16 operands go there
        # (a tensor or a number), strided ones still to the kernel (bf16 has no ufunc case)
        rec.calls.clear()
        dd = frozenset((tp.float16, tp.float32, tp.float64, tp.bfloat16))
        addb = _dense_adapter(be, rec, dense_dtypes=dd)
        expb = _dense_adapter(be, rec, "exp", dense_dtypes=dd)
        addb(xb, xb)
        addb(xb, 2.0)
        expb(xb)
        rec.out = _arr((2, 3), bf).T     # (strided operands' result: in their layout)
        addb(tb, tb)
        expb(tb)
        rec.out = out
        addb(x, x)
        assert [c[0] for c in rec.calls] == ["dense"] * 3 + ["reference"] * 2 + ["dense"]


def test_a_dense_result_that_is_not_a_backend_array_goes_through_wrap():
    be = _backend()
    dev = tp.device("cuda", 0)
    x = be.wrap(_arr((2, 3)), dev)
    rec = _DenseRecorder(None)
    seen = []
    rec.out = _arr((2, 3))

    class Sub(cupy.ndarray):
        pass
    sub = rec.out.view(Sub)
    rec.dense = lambda *a: seen.append(a) or sub
    r = _dense_adapter(be, rec)(x, x)
    assert len(seen) == 1 and r.native is not None and r.shape == (2, 3)
    assert rec.calls == []


def test_eager_kernels_declare_the_dense_case_with_the_large_path(monkeypatch):
    """With the generated kernels (``big``), unless TENSORPLAY_CUDA_EAGER_LAUNCH=0 (``_DENSE``)."""
    be = _backend()
    rec = _Recorder(None)
    for op in ("add", "sub", "mul", "div", "maximum", "minimum"):
        assert callable(eager._binary(op, rec.reference, be, rec.ufunc, False, True)
                        ._tp_dense_ufunc), op
        assert not hasattr(eager._binary(op, rec.reference, be, rec.ufunc, False, False),
                           "_tp_dense_ufunc"), op
    assert callable(eager._unary("exp", rec.reference, be, cupy.exp, True)._tp_dense_ufunc)
    assert not hasattr(eager._unary("exp", rec.reference, be, cupy.exp, False), "_tp_dense_ufunc")
    # its dtypes: the native floating ones, and bfloat16 once ml_dtypes is imported
    natives = {tp.float16, tp.float32, tp.float64}
    want = natives | ({tp.bfloat16} if _has_bf16() else set())
    for k in (eager._binary("add", rec.reference, be, rec.ufunc, False, True),
              eager._unary("exp", rec.reference, be, cupy.exp, True)):
        assert k._tp_dense_dtypes == want and k._tp_float_dtypes == natives
    monkeypatch.setattr(eager, "_DENSE", [False])
    assert not hasattr(eager._binary("add", rec.reference, be, rec.ufunc, False, True),
                       "_tp_dense_ufunc")
    assert not hasattr(eager._unary("exp", rec.reference, be, cupy.exp, True), "_tp_dense_ufunc")


class HostArray(cupy.ndarray):
    """A backend's array class that allocates over host memory (no GPU here), 16-byte aligned."""

    def __new__(cls, shape, dtype=np.float32, device_id=0):
        m = _arr(shape, dtype, device_id)
        return cupy.ndarray.__new__(cls, shape, dtype, memptr=m.data)


def _host_backend():
    """What ``eager._dense`` and ``eager._large`` use of a backend: its array class, the current
    device (0) and the tensorplay dtype of an array."""
    import types
    return types.SimpleNamespace(
        np=types.SimpleNamespace(ndarray=HostArray, dtype=np.dtype, cuda=types.SimpleNamespace(
            runtime=types.SimpleNamespace(getDevice=lambda: 0))),
        dtype_of=lambda a: tp.float32)


def _stub_chains(monkeypatch, calls, out, launch, record):
    """``eager._chain`` replaced by chains whose ``dense_launcher`` calls ``record(key, arrays,
    consts, aligned)`` (key: ``(op, n_in, number class, result dtype)``), notes ``("compiled",)``
    in ``calls`` and returns ``(out, launch)`` -- no launch for an int number's chain; no Triton
    failure on record."""
    class Chain:
        def __init__(self, key):
            self.key = key

        def dense_launcher(self, arrays, consts=(), aligned=False):
            record(self.key, arrays, consts, aligned)
            calls.append(("compiled",))
            return out, (None if self.key[2] is int else launch)
    monkeypatch.setattr(eager, "_chain", lambda op, n_in, ct, R, be: Chain((op, n_in, ct, R)))
    monkeypatch.setattr(eager, "_FAILED", [])


def test_the_dense_case_runs_the_ufunc_until_a_key_is_called_often_then_one_launch(monkeypatch):
    """``eager._dense``: the first WARMUP_CALLS calls per (dtype, device[, number class]) run the
    ufunc, compiling nothing; the next asks the chain for its launch (once), and later calls
    launch with the operands' addresses, the element count and the number. A chain that
    declines, or a launch path that is unavailable, leaves that key on the ufunc for good."""
    calls, asked = [], []
    out = _arr((4,))

    def uf(*a):
        calls.append(("ufunc", *a))
        return out

    def launch(*a):
        calls.append(("launch", *a))

    _stub_chains(monkeypatch, calls, out, launch, lambda key, arrays, consts, aligned: asked.append(
        (key, [x is arrays[0] for x in arrays], list(consts))))
    be = _host_backend()
    dense = eager._dense("add", 2, be, uf)
    a, b = HostArray((4,)), HostArray((4,))
    for _ in range(eager.WARMUP_CALLS):
        assert dense(a, b) is out
    assert [c[0] for c in calls] == ["ufunc"] * eager.WARMUP_CALLS and not asked
    calls.clear()
    assert dense(a, b) is out                       # compiles: the chain's own first launch
    r = dense(a, b)                                 # then one launch into a fresh array
    assert calls[0] == ("compiled",) and calls[1][0] == "launch"
    assert calls[1][1:] == (a.data.ptr, b.data.ptr, r.data.ptr, 4)
    assert r.__class__ is HostArray and r.shape == (4,) and r.dtype == np.float32
    assert asked == [(("add", 2, None, tp.float32), [True, False], [])]
    # a number: its own key (and warm-up), passed to the launch as is
    calls.clear()
    for _ in range(eager.WARMUP_CALLS + 2):
        dense(a, 2.5)
    assert [c[0] for c in calls] == ["ufunc"] * eager.WARMUP_CALLS + ["compiled", "launch"]
    assert calls[-1][-2:] == (4, 2.5)
    # an int whose launch the chain declined: the ufunc for good, asked once
    calls.clear()
    for _ in range(eager.WARMUP_CALLS + 3):
        dense(a, 3)
    assert [c[0] for c in calls] == ["ufunc"] * eager.WARMUP_CALLS + ["compiled", "ufunc",
                                                                        "ufunc"]
    assert sum(k[0][2] is int for k in asked) == 1
    # an empty array never launches
    calls.clear()
    e = HostArray((0,))
    dense(e, e)
    assert [c[0] for c in calls] == ["ufunc"]


def test_the_dense_case_hands_large_arrays_on_and_runs_bf16_reference_kernels(monkeypatch):
    """``eager._dense(op, n, backend, uf, ref, beyond)``: from ``THRESHOLD`` elements on, every
    call goes to ``beyond`` (the eager kernel's large-array path: no warm-up, no compile, whatever
    the key's state); below it, bfloat16 arrays run ``ref`` (their reference kernel) wherever
    other dtypes run the ufunc -- the warm-up calls, a key whose launch was declined."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = np.dtype(ml_dtypes.bfloat16)
    monkeypatch.setattr(eager, "THRESHOLD", 32)
    monkeypatch.setattr(eager, "_FAILED", [])
    calls = []

    def rec(name):
        def f(*a):
            calls.append(name)
            return HostArray(a[0].shape, a[0].dtype)
        return f

    class Chain:
        def dense_launcher(self, arrays, consts=(), aligned=False):
            calls.append("compiled")
            return None, None                 # declined: the key is off the launch for good
    monkeypatch.setattr(eager, "_chain", lambda op, n_in, ct, R, be: Chain())
    be = _host_backend()
    add = eager._dense("add", 2, be, rec("ufunc"), rec("reference"), rec("beyond"))
    exp = eager._dense("exp", 1, be, rec("ufunc"), rec("reference"), rec("beyond"))
    for n in (32, 33, 1000):
        a, b = HostArray((n,)), HostArray((n,))
        add(a, b)
        add(a, 2.5)
        add(a, 2 ** 40)
        exp(a)
        add(HostArray((n,), bf), HostArray((n,), bf))
    assert calls == ["beyond"] * 15
    calls.clear()
    s32, s16 = HostArray((4,)), HostArray((4,), bf)
    for _ in range(eager.WARMUP_CALLS):
        add(s32, s32)
        add(s16, s16)
        exp(s16)
    assert calls == ["ufunc", "reference", "reference"] * eager.WARMUP_CALLS
    calls.clear()
    add(s32, s32)                                   # asks for the launch: declined
    add(s16, s16)
    assert calls == ["compiled", "ufunc", "compiled", "reference"]
    calls.clear()
    add(s32, s32)                                   # declined for good: no more asking
    add(s16, s16)
    add(HostArray((64,)), HostArray((64,)))         # large: still handed on
    assert calls == ["ufunc", "reference", "beyond"]


def test_large_arrays_take_one_aligned_launch_and_decline_what_it_cannot_take(monkeypatch):
    """``eager._large``: dense operands of one dtype and shape (or one and a number), 16-byte
    aligned, with a multiple of 16 elements, on the current device: the first call of each
    (dtype, device[, number class]) asks the chain for its *aligned* launch (compiling), later
    calls launch into a fresh array. Everything else returns None (the caller's Triton path)
    and compiles nothing: an element count that is not a multiple of 16, a misaligned view, a
    strided view, another dtype or shape, another device, an int outside int32; a chain whose
    launch is unavailable keeps that key off for good."""
    calls, asked = [], []
    out = HostArray((32,))

    def launch(*a):
        calls.append(("launch", *a))

    _stub_chains(monkeypatch, calls, out, launch, lambda key, arrays, consts, aligned: asked.append(
        (key, len(arrays), list(consts), aligned)))
    large = eager._large("mul", 2, _host_backend())
    a, b = HostArray((32,)), HostArray((2, 16))
    b = b.reshape(32)
    assert a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0
    assert large(a, b) is out                       # compiles: the chain's own first launch
    r = large(a, b)
    assert asked == [(("mul", 2, None, tp.float32), 2, [], True)]
    assert calls[1] == ("launch", a.data.ptr, b.data.ptr, r.data.ptr, 32)
    assert r.__class__ is HostArray and r.shape == (32,) and r.dtype == out.dtype
    # a number: its own key, compiled once, then passed to the launch as is
    calls.clear()
    assert large(a, 0.5) is out
    r = large(a, 0.5)
    assert calls == [("compiled",), ("launch", a.data.ptr, r.data.ptr, 32, 0.5)]
    # an int whose launch the chain declined: its first result, then None for good
    calls.clear()
    assert large(a, 3) is out and large(a, 3) is None and large(a, 4) is None
    assert calls == [("compiled",)]
    # what the aligned kernel cannot take: None, nothing launched or compiled
    calls.clear()
    odd = HostArray((40,))
    declined = {
        "n % 16": (HostArray((33,)), HostArray((33,))),
        "misaligned view": (odd[1:33], a),
        "strided view": (odd[::2][:16], HostArray((16,))),
        "other dtype": (a, HostArray((32,), np.float16)),
        "other shape": (a, HostArray((2, 16))),
        "other device": (a, HostArray((32,), device_id=1)),
        "other device (first)": (HostArray((32,), device_id=1), a),
        "an int outside int32": (a, 2 ** 31),
        "not a number": (a, "2"),
        "a bool array": (HostArray((32,), np.bool_), HostArray((32,), np.bool_)),
    }
    for why, (x, y) in declined.items():
        assert large(x, y) is None, why
    assert calls == []
    unary = eager._large("exp", 1, _host_backend())
    assert unary(a) is out and unary(a).shape == (32,) and unary(odd[1:33]) is None
    assert calls[-1][0] == "launch" and len(calls[-1]) == 4


def test_the_dense_case_launches_large_arrays_through_the_kept_aligned_launch(monkeypatch):
    """``eager._dense(..., aligned=large)``: a large call whose key (dtype, device[, number class])
    has an aligned launch kept by ``_large`` launches it directly into a fresh array -- ``beyond``
    (the eager kernel's large path, with its operand tests) is not called; until that launch
    exists, and for what it cannot take (an element count not a multiple of 16, a misaligned
    operand), the call goes to ``beyond`` as before."""
    monkeypatch.setattr(eager, "THRESHOLD", 32)
    calls = []
    out = HostArray((64,))

    def launch(*a):
        calls.append(("launch", *a))

    _stub_chains(monkeypatch, calls, out, launch, lambda *a: None)
    be = _host_backend()
    large = eager._large("mul", 2, be)
    ularge = eager._large("exp", 1, be)

    def beyond(a, b=eager._NO_OPERAND):
        calls.append(("beyond",))
        return ularge(a) if b is eager._NO_OPERAND else large(a, b)
    mul = eager._dense("mul", 2, be, None, None, beyond, aligned=large)
    exp = eager._dense("exp", 1, be, None, None, beyond, aligned=ularge)
    a, b = HostArray((64,)), HostArray((64,))
    assert mul(a, b) is out and exp(a) is out and mul(a, 0.5) is out   # first: compile via beyond
    assert [c[0] for c in calls] == ["beyond", "compiled"] * 3
    calls.clear()
    r = mul(a, b)
    r2 = exp(a)
    r3 = mul(a, 0.5)
    assert calls == [("launch", a.data.ptr, b.data.ptr, r.data.ptr, 64),
                     ("launch", a.data.ptr, r2.data.ptr, 64),
                     ("launch", a.data.ptr, r3.data.ptr, 64, 0.5)]
    assert r.__class__ is HostArray and r.shape == (64,) and r.dtype == np.float32
    calls.clear()
    odd = HostArray((80,))
    assert mul(HostArray((40,)), HostArray((40,))) is None      # n % 16: beyond, which declines
    assert mul(odd[1:65], b) is None                            # misaligned: beyond, declines
    assert calls == [("beyond",), ("beyond",)]


def test_the_large_path_runs_before_the_chain_for_large_arrays(monkeypatch):
    """The eager kernel of a binary op: arrays of at least ``THRESHOLD`` elements try the aligned
    launch first, and take the chain's own path only when it declines."""
    monkeypatch.setattr(cupy.cuda.runtime, "getDevice", lambda: 0)     # no GPU here
    monkeypatch.setattr(eager, "THRESHOLD", 16)
    seen, out = [], HostArray((32,))

    def fake_large(a, b=None):
        seen.append("large")
        return out if a.size % 16 == 0 else None

    def fake_run(ch, args, consts=None):
        seen.append("chain")
        return [out]
    monkeypatch.setattr(eager, "_large", lambda op, n_in, be: fake_large)
    monkeypatch.setattr(eager, "run_chain", fake_run)
    rec = _Recorder(out)
    kernel = eager._binary("add", rec.reference, _backend(), rec.ufunc, False, True)
    assert kernel.launch_large is fake_large
    assert kernel(_arr((32,)), _arr((32,))) is out
    assert kernel(_arr((33,)), _arr((33,))) is out
    assert kernel(_arr((8,)), _arr((8,))) is out       # below the bound: the ufunc
    assert seen == ["large", "large", "chain"] and [c[0] for c in rec.calls] == ["ufunc"]
    assert eager._binary("add", rec.reference, _backend(), rec.ufunc, False,
                         False).launch_large is None


def test_bf16_small_ops_run_the_reference_kernel_until_they_launch_never_the_ufunc(monkeypatch):
    """CuPy's ufunc on bfloat16 arrays computes (and returns) float32: bf16 operands take the
    dense case's launch once it exists, and the reference kernel (float32 math rounded to bf16)
    before that -- never the ufunc."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    monkeypatch.setattr(cupy.cuda.runtime, "getDevice", lambda: 0)     # no GPU here
    be = _backend()
    bf = np.dtype(ml_dtypes.bfloat16)
    out = _arr((4,), bf)
    seen = []

    def ref(*a):
        seen.append("reference")
        return out

    def ufunc(*a):
        seen.append("ufunc")
        return out
    add = eager._binary("add", ref, be, ufunc, False, True)
    exp = eager._unary("exp", ref, be, ufunc, True)
    a, b = _arr((4,), bf), _arr((4,), bf)
    for _ in range(eager.WARMUP_CALLS):
        assert add(a, b) is out and add(a, 2.0) is out and add(a, 3) is out and exp(a) is out
    assert seen == ["reference"] * 4 * eager.WARMUP_CALLS
    f32 = _arr((4,))
    seen.clear()
    add(f32, f32)
    exp(f32)
    assert seen == ["ufunc", "ufunc"]                 # float32: the ufunc, as before


def test_arrays_at_the_size_bound_take_the_kernel():
    """``_tp_float_max``: from that many elements on, the kernel (its large-array path) runs."""
    be = _backend()
    dev = tp.device("cuda", 0)
    out = _arr((4,))
    seen = []

    def kernel(a, b):
        seen.append("kernel")
        return out

    def ufunc(a, b):
        seen.append("ufunc")
        return out
    kernel._tp_float_ufunc = ufunc
    kernel._tp_float_dtypes = frozenset((tp.float32,))
    kernel._tp_float_max = 4
    adapter = _define.make_adapter(tp.ops.tp.add, kernel, be)
    x4, x3 = be.wrap(_arr((4,)), dev), be.wrap(_arr((3,)), dev)
    adapter(x4, x4)
    adapter(x4, 1.0)
    adapter(x3, 1.0)
    assert seen == ["kernel", "kernel", "ufunc"]


def test_tensors_on_two_gpus_are_refused_by_the_inline_case_too():
    be = _backend(1)          # one GPU visible: the inline case runs before device bookkeeping
    x = be.wrap(_arr((4,)), tp.device("cuda", 0))
    y = be.wrap(_arr((4,), device_id=1), tp.device("cuda", 1))
    rec = _Recorder(_arr((4,)))
    adapter = _adapter(be, rec)
    with pytest.raises(DispatchError, match=r"tp::add.*cuda:0.*cuda:1"):
        adapter(x, y)
    assert rec.calls == []


def test_with_several_gpus_the_inline_case_runs_inside_the_device_guard(monkeypatch):
    import contextlib
    be = _backend(2)
    entered = []
    monkeypatch.setattr(be, "device_guard",
                        lambda dev: entered.append(str(dev)) or contextlib.nullcontext())
    d1 = tp.device("cuda", 1)
    x, y = be.wrap(_arr((4,), device_id=1), d1), be.wrap(_arr((4,), device_id=1), d1)
    out = _arr((4,), device_id=1)
    rec = _Recorder(out)
    adapter = _adapter(be, rec)
    r = adapter(x, y)
    r2 = adapter(x, 0.5)
    assert entered == ["cuda:1", "cuda:1"] and [c[0] for c in rec.calls] == ["ufunc", "ufunc"]
    _same_tensor(r, be.wrap(out, d1))
    _same_tensor(r2, be.wrap(out, d1))


def test_a_failing_ufunc_is_explained_by_the_op():
    be = _backend()
    dev = tp.device("cuda", 0)

    def ufunc(a, b):
        raise ValueError("operands could not be broadcast together with shapes (4,) (3,)")
    kernel = eager._binary("add", ufunc, be, ufunc, False, False)
    adapter = _define.make_adapter(tp.ops.tp.add, kernel, be)
    x, y = be.wrap(_arr((4,)), dev), be.wrap(_arr((3,)), dev)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(4\) must match"):
        adapter(x, y)


def test_root_storage_is_a_storage_sized_by_its_root():
    a = _arr((2, 3), np.float64)
    s = RootStorage()
    s.root, s.version, s.backend = a, 0, None
    assert isinstance(s, Storage) and s.nbytes == a.nbytes == 48


def test_from_cupy_makes_the_tensor_wrap_makes(monkeypatch):
    # private: a simulated two-GPU backend put in place without the loader's on_load binding
    from tensorplay import _backend as core_backend
    be = _backend(2)
    monkeypatch.setitem(core_backend._LOADED, "cuda", be)
    for i in (0, 1):
        a = _arr((2, 3), device_id=i)
        t = tensorplay_cuda.from_cupy(a)
        assert t.device is tp.device("cuda", i)
        _same_tensor(t, be.wrap(a, tp.device("cuda", i)))
    with pytest.raises(TypeError, match="expected a cupy.ndarray, got ndarray"):
        tensorplay_cuda.from_cupy(np.zeros(2))


def test_only_row_major_operands_of_one_layout_get_the_inline_result(monkeypatch):
    """A same-shape operand with other strides (a transposed view) may give the ufunc a result
    in another layout: that result goes through ``wrap``, which reads the array."""
    be = _backend()
    dev = tp.device("cuda", 0)
    wrapped = []
    real_wrap = be.wrap
    monkeypatch.setattr(be, "wrap", lambda arr, d: wrapped.append(arr) or real_wrap(arr, d))
    out = _arr((2, 2))
    adapter = _adapter(be, _Recorder(out))
    x, y = real_wrap(_arr((2, 2)), dev), real_wrap(_arr((2, 2)), dev)
    a = _arr((2, 2))
    t = new_tensor(Storage(a, a.nbytes, be), a, (2, 2), (1, 2), 0, tp.float32, dev, be)
    adapter(x, y)
    adapter(x, 2.0)
    assert wrapped == []
    r = adapter(x, t)            # a row-major first operand decides (torch's rule): row-major
    assert wrapped == [out] and r.stride() == (2, 1)
    # a transposed first operand: torch's layout, (1, 2); the ufunc's result already in it (as
    # CuPy's order-K ufuncs give it) is viewed, not copied: wrap gets its flat storage
    rec = _Recorder(_arr((2, 2)).T)
    adapter = _adapter(be, rec)
    wrapped.clear()
    for r in (adapter(t, t), adapter(t, 2.0)):
        assert r.stride() == (1, 2) and r.native.base is not None
    assert [w.shape for w in wrapped] == [(4,), (4,)]


def _two_fake_gpus(monkeypatch):
    """A backend seeing two GPUs, CuPy's current device and ``cupy.cuda.Device`` switches
    simulated: returns ``(backend, current, switches)``."""
    from tensorplay import _backend as core_backend   # private: as above
    be = _backend(2)
    current, switches = [0], []

    class FakeDevice:                                 # cupy.cuda.Device(i) as a context manager
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            switches.append(self.i)
            self.prev = current[0]
            current[0] = self.i

        def __exit__(self, *exc):
            current[0] = self.prev

    monkeypatch.setattr(cupy.cuda.runtime, "getDevice", lambda: current[0])
    monkeypatch.setattr(cupy.cuda, "Device", FakeDevice)
    monkeypatch.setitem(core_backend._LOADED, "cuda", be)
    return be, current, switches


@pytest.mark.parametrize("kind", ["one tensor", "tensor list"])
def test_custom_op_kernels_switch_gpus_only_when_the_tensors_gpu_is_not_current(monkeypatch, kind):
    from tensorplay import library
    be, current, switches = _two_fake_gpus(monkeypatch)
    seen = []
    if kind == "one tensor":
        @library.custom_op(f"hostpath::one_{id(be)}", mutates_args=(), device_types="cuda")
        def op(x: tp.Tensor, scale: float = 1.0) -> tp.Tensor:
            seen.append(current[0])
            return x
        call = op
    else:
        @library.custom_op(f"hostpath::lst_{id(be)}", mutates_args=(), device_types="cuda")
        def op(xs: list[tp.Tensor], scale: float = 1.0) -> tp.Tensor:
            seen.append(current[0])
            return xs[0]

        def call(x, **kw):
            return op([x], **kw)
    kernel = library.get_kernel(op, "cuda")
    guarded = be.guard_kernel(op, kernel)
    assert guarded is not kernel and guarded.__wrapped__ is kernel
    x0 = be.wrap(_arr((2,)), tp.device("cuda", 0))
    x1 = be.wrap(_arr((2,), device_id=1), tp.device("cuda", 1))
    assert call(x0) is x0 and call(x1, scale=2.0) is x1
    assert seen == [0, 1] and switches == [1] and current[0] == 0     # cuda:0 was current
    current[0] = 1
    assert call(x1) is x1 and switches == [1] and seen[-1] == 1        # already current
    # keyword arguments reach the wrapper too (a direct call of the bound kernel)
    current[0] = 0
    if kind == "one tensor":
        assert guarded(x=x1) is x1
    else:
        assert guarded(xs=[x1]) is x1
    assert switches == [1, 1] and seen[-1] == 1
    assert guarded(x0) is x0 if kind == "one tensor" else guarded([x0]) is x0
    assert switches == [1, 1]
    if kind == "tensor list":
        with pytest.raises(DispatchError, match=r"hostpath::lst.*cuda:0.*cuda:1"):
            op([x0, x1])


@pytest.mark.parametrize("op", ["exp", "neg", "relu"])
def test_unary_ops_take_the_inline_case_on_floating_tensors_only(monkeypatch, op):
    be = _backend()
    dev = tp.device("cuda", 0)
    wrapped = []
    real_wrap = be.wrap
    monkeypatch.setattr(be, "wrap", lambda arr, d: wrapped.append(arr) or real_wrap(arr, d))
    out = _arr((2, 3))
    calls = []

    def ufunc(a):
        calls.append("ufunc")
        return out

    def reference(a):
        calls.append("reference")
        return out
    kernel = eager._unary(op, reference, be, ufunc, False)
    assert kernel._tp_float_ufunc is ufunc and tp.bfloat16 not in kernel._tp_float_dtypes
    adapter = _define.make_adapter(getattr(tp.ops.tp, op), kernel, be)
    x = real_wrap(_arr((2, 3)), dev)
    r = adapter(x)
    assert calls == ["ufunc"] and wrapped == []
    _same_tensor(r, real_wrap(out, dev))
    # an integer tensor (exp's result is floating), a bf16 one: the reference kernel
    adapter(real_wrap(_arr((2, 3), np.int32), dev))
    if _has_bf16():
        adapter(real_wrap(_arr((2, 3), np.dtype("bfloat16")), dev))
    assert calls[1:] == ["reference"] * (2 if _has_bf16() else 1)
    # a non-row-major operand: the ufunc (its result in the operand's layout, as CuPy's order-K
    # ufuncs give it), then the result keeps that layout (torch's rule): wrap gets its storage
    a = _arr((3, 2))
    t = new_tensor(Storage(a, a.nbytes, be), a.T, (2, 3), (1, 2), 0, tp.float32, dev, be)
    out = _arr((3, 2)).T
    calls.clear()
    wrapped.clear()
    r = adapter(t)
    assert calls == ["ufunc"] and [w.shape for w in wrapped] == [(6,)] and r.stride() == (1, 2)


def test_unary_kernels_without_a_ufunc_declare_no_inline_case():
    be = _backend()
    for op in ("rsqrt", "sigmoid"):
        k = eager._unary(op, lambda a: a, be, None, True)
        assert not hasattr(k, "_tp_float_ufunc"), op


def test_large_takes_a_0d_operand_in_one_launch_where_the_chain_offers_modes(monkeypatch):
    """``eager._large`` with one dense operand and one 0-d operand of its dtype (what
    ``_one_element_operands`` makes of a broadcast element): the first call per (dtype, device,
    modes) asks the chain for its aligned launch with the load modes (``"s"`` for the 0-d one,
    either position), later calls launch with both addresses into a fresh array of the dense
    operand's shape. A chain whose ``dense_launcher`` takes no ``modes`` is never asked (the
    caller's Triton path, for good); a misaligned or other-dtype 0-d operand is declined."""
    calls, asked = [], []
    out = HostArray((32,))

    def launch(*a):
        calls.append(("launch", *a))

    class Chain:
        def dense_launcher(self, arrays, consts=(), aligned=False, modes=None):
            asked.append(([x.shape for x in arrays], modes, aligned))
            calls.append(("compiled",))
            return out, launch
    monkeypatch.setattr(eager, "_chain", lambda op, n_in, ct, R, be: Chain())
    monkeypatch.setattr(eager, "_FAILED", [])
    large = eager._large("sub", 2, _host_backend())
    a = HostArray((2, 16))
    s = HostArray(())
    assert large(s, a) is out and large(a, s) is out          # one compile per position
    assert asked == [([(), (2, 16)], ("s", "c"), True), ([(2, 16), ()], ("c", "s"), True)]
    calls.clear()
    r = large(s, a)
    r2 = large(a, s)
    assert calls == [("launch", s.data.ptr, a.data.ptr, r.data.ptr, 32),
                     ("launch", a.data.ptr, s.data.ptr, r2.data.ptr, 32)]
    assert r.shape == (2, 16) and r2.shape == (2, 16) and len(asked) == 2
    # declined: a misaligned 0-d operand, another dtype, two 0-d arrays
    calls.clear()
    odd = HostArray((4,))[1:2].reshape(())
    assert odd.data.ptr % 16
    assert large(a, odd) is None and large(a, HostArray((), np.float16)) is None
    assert large(s, HostArray(())) is None and calls == []

    class Old:                       # a dense_launcher from before modes: never asked
        def dense_launcher(self, arrays, consts=(), aligned=False):
            raise AssertionError("asked")
    monkeypatch.setattr(eager, "_chain", lambda op, n_in, ct, R, be: Old())
    large = eager._large("mul", 2, _host_backend())
    assert large(a, s) is None and large(a, s) is None and not eager._FAILED


_INT_CASES = [
    # (op, swap, first dtype, second: dtype name / Python value, ndim of each, the ufunc?)
    ("ne", False, "int64", -100, 1, True),
    ("lt", False, "int64", 800, 1, True),
    ("eq", False, "bool", "bool", 1, True),
    ("ge", False, "int32", "int64", 1, True),
    ("mul", False, "int64", "bool", 1, True),         # target * target_mask
    ("add", False, "uint8", "int8", 1, True),         # int16 in NumPy and torch
    ("maximum", False, "int16", 7, 1, True),
    ("sub", False, "int64", "int64", 1, True),
    ("rsub", True, "int32", 5, 1, True),
    # the reference kernel's: torch's rules differ from the ufunc's, or it raises torch's error
    ("sub", False, "int64", "bool", 1, False),        # torch refuses bool in subtraction
    ("add", False, "bool", "bool", 1, False),         # logical in torch
    ("mul", False, "bool", "int64", 1, False),        # (a bool first operand: the reference)
    ("add", False, "int8", 300, 1, False),            # beyond int8: torch wraps the number
    ("add", False, "uint8", -1, 1, False),
    ("lt", False, "int64", 0.5, 1, False),            # torch compares in float32
    ("add", False, "int64", True, 1, False),          # a Python bool
    ("add", False, "int8", "int64", 0, False),        # a 0-d tensor does not promote in torch
    ("div", False, "int64", "int64", 1, False),       # a floating result
    ("add", False, "uint8", "uint16", 1, False),      # not one of torch's integer dtypes here
    ("eq", False, "int64", "float32", 1, False),
]


@pytest.mark.parametrize("op, swap, da, b, ndim, ufunc", _INT_CASES)
def test_integer_and_bool_operands_take_the_ufunc_only_where_it_is_the_reference(
        op, swap, da, b, ndim, ufunc):
    """Integer and bool arrays go straight to CuPy's ufunc (no promotion step) where NumPy's
    promotion and number rule give torch's result; everything else keeps the reference kernel."""
    be = _backend()
    rec = _Recorder(_arr())
    uf_name = eager._UFUNC[op][0]
    k = eager._binary(op, rec.reference, be, rec.ufunc, swap, False)
    assert eager._UFUNC[op][1] is swap and uf_name
    a = _arr((3,), np.dtype(da))
    other = _arr((3,) if ndim else (), np.dtype(b)) if isinstance(b, str) else b
    assert k(a, other) is rec.out
    kind, x, y = rec.calls[-1]
    assert kind == ("ufunc" if ufunc else "reference"), rec.calls
    if ufunc:
        assert (x, y) == ((other, a) if swap else (a, other))


def _bench_cuda_host():
    """``benchmarks/bench_cuda_host.py`` as a module (its ``launch_stand_ins``)."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "bench_cuda_host.py"
    spec = importlib.util.spec_from_file_location("tensorplay_test_bench_cuda_host", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_dense_call_is_the_address_launch_in_one_function(monkeypatch):
    """``triton_fusion._dense_call``, the kept launch of the dense case (allocation, packing and the
    driver call in one generated function): for two arrays, an array and a float or an int, one
    array, a comparison (bool result), in float32, float16, float64 and bfloat16, it makes the
    same driver call as ``launch(*addresses, n[, number])`` through ``Direct.go`` -- function,
    grid, threads, shared memory, stream, every byte of the parameter block -- into a fresh
    row-major array of the output dtype; a float beyond float32's range packs as inf (as ``go``'s
    NumPy conversion), and the current stream is looked up for the launch's device. No GPU: the
    kernels are compiled for an sm_90 target and the driver call recorded
    (``bench_cuda_host.launch_stand_ins``)."""
    import ctypes
    import struct
    import warnings
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    from tensorplay_cuda import triton_fusion
    from tensorplay_triton import _cupylaunch
    calls, streams = [], []

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        slots = (ctypes.c_void_p * _cupylaunch.MAX_PARAMS).from_address(params)
        raw = b"".join(ctypes.string_at(slots[i], 8) for i in range(10))
        calls.append((f, (g0, g1, g2), (b0, b1, b2), shared, stream, extra, raw))

    if tp.plugins.device_status("cuda")[0]:
        pytest.skip("a GPU is present: the stand-ins are for machines without one")
    previous = _bench_cuda_host().launch_stand_ins(monkeypatch.setattr, launch_kernel, 1 << 16)
    null = cupy.cuda.Stream.null

    def current_stream(device_id=-1):
        streams.append(device_id)
        return null
    monkeypatch.setattr(_cupylaunch.CupyLaunch, "current_stream", property(lambda s: current_stream))
    try:
        be = _backend()
        cases = [("mul", 2, None, "float32", ()), ("add", 1, float, "float32", (0.1, 1e300, -3.0)),
                 ("add", 1, int, "float32", (-3, 7)), ("relu", 1, None, "float16", ()),
                 ("mul", 2, None, "float64", ()), ("gt", 2, None, "float32", ())]
        if _has_bf16():
            cases.append(("mul", 1, float, "bfloat16", (2.5,)))
        for op, n_in, number, dt, values in cases:
            d = np.dtype(dt) if dt != "bfloat16" else np.dtype(__import__("ml_dtypes").bfloat16)
            a, b = HostArray((37, 3), d), HostArray((37, 3), d)
            R = tp.bool if op == "gt" else getattr(tp, dt)
            ch = eager._chain(op, n_in, number, R, be)
            try:
                out, launch = ch.dense_launcher([a, b][:n_in], list(values[:1]))
            except Exception as e:  # noqa: BLE001 - only a missing ptxas is a reason to skip
                if "ptxas" in str(e):
                    pytest.skip(f"Triton cannot compile here: {e}")
                raise
            call = launch.call
            assert call is not None and "STREAM(DEVICE)" in call.source, (op, dt)
            n = a.size
            for v in values or (None,):
                calls.clear()
                streams.clear()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)   # (1e300: float32 overflow)
                    if v is not None:
                        r = call(a, v, n)
                        launch(a.data.ptr, r.data.ptr, n, v)
                    elif n_in == 2:
                        r = call(a, b, n)
                        launch(a.data.ptr, b.data.ptr, r.data.ptr, n)
                    else:
                        r = call(a, n)
                        launch(a.data.ptr, r.data.ptr, n)
                assert len(calls) == 2 and calls[0] == calls[1], (op, dt, v, calls)
                assert streams == [0, -1]             # the call: for its device; go: the current
                assert r.__class__ is cupy.ndarray and r.shape == (37, 3) and r.flags.c_contiguous
                assert r.dtype == out.dtype == (np.bool_ if op == "gt" else d)
                if v == 1e300:
                    assert struct.unpack_from("=f", calls[0][-1], 8 * 5)[0] == float("inf")
    finally:
        cupy.cuda.set_allocator(previous)
    assert triton_fusion._stream_takes_device(cupy.cuda.get_current_stream)
    assert not triton_fusion._stream_takes_device(lambda: null)
