"""``MockBackend``: an in-memory device backend for tests (httpx's ``MockTransport`` habit).

Tests of dispatch, device guards, multi-device refusals or storage sharing need a device whose
behaviour they can see, without building tensors through private constructors. ``MockBackend``
is a complete ``tensorplay.backends.Backend`` over NumPy arrays, registered as its own device
type for the duration of a ``with`` block, that can pretend to have several device indices and
records what the core asked of it::

    import tensorplay as tp
    from tensorplay.testing.backend import MockBackend

    with MockBackend("mock", device_count=2) as be:
        a = tp.ones(3, device="mock:1")        # built-in ops run the reference kernels
        b = (a * 2).exp()
        assert b.device == tp.device("mock", 1)
        assert be.allocations[0].device == tp.device("mock", 1)
        tp.ones(3, device="mock:0") + a        # DispatchError: tensors on mock:0 and mock:1

With ``device_arrays=True`` its arrays behave as a GPU array library's do where the kernels can
tell: the array module is not NumPy (kernels take the branch they take for CuPy) and a read of an
array's values by the host is a synchronisation, refused inside ``forbid_sync()``::

    with MockBackend("gpu", device_arrays=True) as be:
        x = tp.tensor([0.5, -1.5], device="gpu")
        with be.forbid_sync():
            y = tp.digamma(x)                  # fine: computed without reading x back
            bool(y.sum() > 0)                  # DeviceSynchronized: a host read

Importing this module imports no array library; NumPy is imported when a ``MockBackend`` is made.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from .. import backends as _backends
from .._device import Device
from ..errors import DeviceUnavailableError, DispatchError

__all__ = ["Allocation", "DeviceSynchronized", "MockBackend"]


class Allocation(NamedTuple):
    """One array the backend was asked to create: ``method`` (``"empty"``, ``"full"``,
    ``"arange"``, ``"from_host"``, ``"from_other"``, ``"rand"``, ``"randn"``), ``shape`` (tuple of
    ints), ``dtype`` (``tensorplay.dtype``, or ``None`` when inferred from the data) and
    ``device`` (``tensorplay.device``)."""

    method: str
    shape: tuple
    dtype: object
    device: object


class _Guard:
    """``MockBackend.device_guard``'s context: makes the index current, restores it on exit."""

    __slots__ = ("be", "index", "prev")

    def __init__(self, be, index):
        self.be, self.index, self.prev = be, index, None

    def __enter__(self):
        self.prev = self.be.current
        if self.index != self.prev:
            self.be.switches.append(Device(self.be.device_type, self.index))
            self.be.current = self.index

    def __exit__(self, *exc):
        if self.be.current != self.prev:
            self.be.switches.append(Device(self.be.device_type, self.prev))
            self.be.current = self.prev
        return False


class MockBackend(_backends.ArrayBackend):
    """A ``Backend`` over NumPy arrays, registered as device type ``device_type`` while a ``with``
    block (or ``register()`` .. ``unregister()``) lasts.

    Arguments:
        device_type: the device type it provides (a lower-case identifier other than the types
            already loaded, such as ``"cpu"``; default ``"mock"``). Tensors on it are
            ``tensorplay.device(device_type, i)`` for ``i`` in ``range(device_count)``.
        device_count: how many device indices it pretends to have (default 1). With two or
            more, built-in ops run under ``device_guard`` (recorded in ``switches``), every
            tensor argument must be on the first one's index (``DispatchError`` naming both
            devices otherwise; a 0-dim cpu tensor is copied over, as torch does), and custom
            ops' kernels get the same check (``guard_kernel``). An index beyond it raises
            ``DeviceUnavailableError`` when a tensor is made there.
        graphs: whether it records graphs (``capture_graph``, for
            ``tensorplay.compile(mode="reduce-overhead")``; default False: it has none, as
            cpu). Its "graph" re-runs the recorded function on replay and copies the results
            into the recorded output arrays, which a recording leaves poisoned (NaN / -1).

        device_arrays: whether its arrays stand in for a GPU library's (default False: plain
            NumPy arrays, as cpu). True: the array module is a NumPy stand-in not named
            ``numpy``, so kernels that compute on the host only for NumPy take the branch they
            take for CuPy; its arrays (a NumPy subclass) turn NumPy scalar results into 0-dim
            arrays, as CuPy; and inside ``forbid_sync()`` a host read of an array's values
            (``bool``, ``int``, ``float``, ``operator.index``, ``.item()``, ``.tolist()``, a
            boolean-mask subscript, ``nonzero`` and its kin, ``to_host``) raises
            ``DeviceSynchronized``, as CuPy's ``cupyx.allow_synchronize(False)``. CI has no
            GPU: this is how a test runs the kernels' device branch there.

    Data: NumPy arrays of every dtype NumPy has (``bfloat16`` is refused with ``TypeError``);
    built-in ops run the core's reference kernels, so results equal the cpu device's (with
    ``device_arrays``, within the rounding of the device branch's own formulas).

    Records (cleared by ``reset()``):
        ``allocations``: ``Allocation`` per array made by the backend API (factories, copies in);
        ``syncs``: the ``device`` argument of each ``synchronize`` call (``None`` = all);
        ``switches``: each device made current by ``device_guard`` (and the one restored);
        ``wraps``: the device of each kernel result wrapped into a tensor;
        ``calls``: every recorded method name, in call order (``"capture_graph"`` and
        ``"replay_graph"`` among them);
        ``host_reads``: with ``device_arrays``, what each host read of an array's values was
        (``".item()"``, ``".tolist()"``, ``"int()"``... as ``DeviceSynchronized`` names them),
        inside ``forbid_sync()`` or not: on a GPU each is a copy that waits for the device, so a
        test can hold an op to the number of waits it makes. The list is shared by every
        ``device_arrays`` backend of the process (their arrays are one class).
    ``current`` is the index currently selected (0 at start).

    Raises ``ValueError`` on entering when ``device_type`` is already loaded or invalid (see
    ``tensorplay.backends.register``) and ``ImportError`` when NumPy is not installed.
    """

    def __init__(self, device_type: str = "mock", *, device_count: int = 1,
                 graphs: bool = False, device_arrays: bool = False):
        import numpy
        if device_count.__class__ is not int or device_count < 1:
            raise ValueError(f"MockBackend: device_count must be an int >= 1, got "
                             f"{device_count!r}")
        self.graphs = graphs
        self.device_arrays = bool(device_arrays)
        self.device_type = device_type
        # (before Backend.__init__, which reads the array class off np)
        self.np = _device_module(numpy) if device_arrays else numpy
        super().__init__()
        self.xp = _namespace(numpy)
        self._count = device_count
        self._rng = numpy.random.default_rng(0)
        self._handle = None
        if device_count < 2:   # one device: nothing to align (as tensorplay-cpu)
            self.align_device = None
        self.reset()

    def reset(self) -> None:
        """Clear the records (``allocations``, ``syncs``, ``switches``, ``wraps``, ``calls``,
        ``host_reads``)."""
        self.allocations: list = []
        self.syncs: list = []
        self.switches: list = []
        self.wraps: list = []
        self.calls: list = []
        self.current = 0
        _READS.clear()

    @property
    def host_reads(self) -> list:
        """See the class: each host read of a ``device_arrays`` array's values, what it was."""
        return _READS

    # -- registration ----------------------------------------------------------------------
    def register(self) -> MockBackend:
        """Make this the backend of ``device_type`` (built-in kernels bound); see the class."""
        if self._handle is None:
            self._handle = _backends.register(self)
        return self

    def unregister(self) -> None:
        """Forget it again: its built-in kernels are unbound and its tensors become unusable for
        ops (their device has no backend any more). Idempotent."""
        if self._handle is not None:
            self._handle.destroy()
            self._handle = None

    def __enter__(self) -> MockBackend:
        return self.register()

    def __exit__(self, *exc) -> bool:
        self.unregister()
        return False

    # -- devices ---------------------------------------------------------------------------
    def device_count(self) -> int:
        return self._count

    def current_index(self) -> int:
        """The index a bare ``"mock"`` means on a new tensor (torch's current device)."""
        return self.current

    def _index(self, device) -> int:
        i = device.index if isinstance(device, Device) else device
        i = 0 if i is None else i
        if i >= self._count:
            raise DeviceUnavailableError(
                f"device '{self.device_type}:{i}' is not available: this MockBackend has "
                f"{self._count} device(s) ({self.device_type}:0..{self.device_type}:"
                f"{self._count - 1}); pass device_count= to MockBackend for more")
        return i

    def synchronize(self, device=None) -> None:
        self.calls.append("synchronize")
        self.syncs.append(device)

    def forbid_sync(self):
        """Context manager: inside it (in this thread), a host read of a ``device_arrays``
        backend's array raises ``DeviceSynchronized`` naming the read (see the class); nests.
        Raises ``ValueError`` on a backend made without ``device_arrays=True`` (its arrays are
        host arrays: nothing to forbid)."""
        if not self.device_arrays:
            raise ValueError(f"{self!r}.forbid_sync(): made without device_arrays=True, its "
                             f"arrays are host arrays; pass device_arrays=True to MockBackend")
        return _Forbid()

    def device_guard(self, device):
        self.calls.append("device_guard")
        return _Guard(self, self._index(device))

    def device_guard_needed(self) -> bool:
        return self._count > 1

    def align_device(self, t, device, api: str):
        self.calls.append("align_device")
        if t.device.type == "cpu" and not t.shape:
            return self.wrap(self.from_other(t.native, t.backend, device), device)
        raise DispatchError(f"{api}: expected all tensors on one device, found tensors on "
                            f"{device} and {t.device}. Move them with .to({str(device)!r}) "
                            f"first.")

    def guard_kernel(self, op, fn):
        if self._count < 2:
            return fn
        be = self
        device_of = _backends.device_finder(op, self.device_type)

        def guarded(*args, **kwargs):
            dev = device_of(args, kwargs)
            if dev is None:
                return fn(*args, **kwargs)
            with be.device_guard(dev):
                return fn(*args, **kwargs)
        guarded.__wrapped__ = fn
        return guarded

    # -- arrays ----------------------------------------------------------------------------
    def _alloc(self, method, shape, dtype, device):
        self._index(device)
        self.calls.append(method)
        self.allocations.append(Allocation(method, tuple(shape), dtype, device))

    def wrap(self, arr, device):
        self.calls.append("wrap")
        self.wraps.append(device)
        return super().wrap(arr, device)

    def as_strided(self, root, shape, stride, offset):
        np = self.np
        item = root.dtype.itemsize
        if 0 in shape or root.size == 0:
            return np.empty(shape, dtype=root.dtype)
        return np.ndarray(shape, dtype=root.dtype, buffer=root, offset=offset * item,
                          strides=tuple(s * item for s in stride))

    def data_ptr(self, arr) -> int:
        return arr.__array_interface__["data"][0]

    def empty(self, shape, dtype, device):
        self._alloc("empty", shape, dtype, device)
        return super().empty(shape, dtype, device)

    def full(self, shape, value, dtype, device):
        self._alloc("full", shape, dtype, device)
        return super().full(shape, value, dtype, device)

    def arange(self, start, end, step, dtype, device):
        out = super().arange(start, end, step, dtype, device)
        self._alloc("arange", out.shape, dtype, device)
        return out

    def from_host(self, obj, dtype, device):
        out = super().from_host(obj, dtype, device)
        self._alloc("from_host", out.shape, dtype, device)
        return out

    def from_other(self, arr, src_backend, device):
        host = src_backend.to_host(arr) if src_backend is not None else arr
        out = self.np.array(host, copy=True)
        self._alloc("from_other", out.shape, None, device)
        return out

    def to_host(self, arr):
        self.calls.append("to_host")
        if self.device_arrays:
            _check_read("to_host (a copy to the host)")
            import numpy
            return arr.view(numpy.ndarray)
        return arr

    def from_dlpack(self, obj):
        self.calls.append("from_dlpack")
        return self.np.from_dlpack(obj)

    def manual_seed(self, seed: int) -> None:
        self.calls.append("manual_seed")
        self._rng = self.np.random.default_rng(seed)

    def rand(self, shape, dtype, device):
        self._alloc("rand", shape, dtype, device)
        return self.np.asarray(self._rng.random(shape).astype(self.native_dtype(dtype)))

    def randn(self, shape, dtype, device):
        self._alloc("randn", shape, dtype, device)
        return self.np.asarray(self._rng.standard_normal(shape).astype(self.native_dtype(dtype)))

    def capture_graph(self, fn, device):
        """With ``graphs=True``: records ``"capture_graph"``, calls ``fn()`` and returns its
        result with every output array poisoned (NaN for floating dtypes, -1 for integers,
        True for bool: a recording runs nothing), and a ``replay`` that records
        ``"replay_graph"``, calls ``fn()`` again and copies its arrays into the first result's
        (the same arrays every replay, as a CUDA graph writes). Without: ``NotImplementedError``,
        as a backend with no graphs."""
        if not self.graphs:
            return super().capture_graph(fn, device)
        from .. import _pytree
        from .._tensor import Tensor
        self._index(device)
        self.calls.append("capture_graph")
        np = self.np

        def arrays(result):
            found: list = []
            _pytree.tree_flatten(result, Tensor, found)
            return [t.native for t in found if isinstance(t, Tensor)]

        result = fn()
        static = arrays(result)
        for a in static:
            a[...] = np.nan if a.dtype.kind in "fc" else True if a.dtype.kind == "b" else -1

        def replay():
            self.calls.append("replay_graph")
            for dst, src in zip(static, arrays(fn())):
                np.copyto(dst, src)
        return result, replay

    def __repr__(self) -> str:
        state = "registered" if self._handle is not None else "not registered"
        return f"<MockBackend {self.device_type!r} devices={self._count} ({state})>"


def _namespace(numpy):
    """The array-API namespace the reference kernels run on: the cpu plugin's (NumPy with the
    array-API ``sort``/``argsort`` signatures) when it is installed, else array-api-compat's."""
    try:
        return _backends.get("cpu").xp
    except Exception:   # noqa: BLE001 - no cpu plugin: the compat namespace does the same
        import array_api_compat.numpy as xp
        return xp


# -- device_arrays: a NumPy stand-in for a GPU array library ------------------------------------
class DeviceSynchronized(RuntimeError):
    """A host read of a ``MockBackend(device_arrays=True)`` array inside ``forbid_sync()``: on
    a GPU, a device-to-host copy that waits for the queue (CuPy raises its own
    ``DeviceSynchronized`` under ``cupyx.allow_synchronize(False)``)."""


_STATE = threading.local()


class _Forbid:
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = getattr(_STATE, "forbidden", False)
        _STATE.forbidden = True
        return self

    def __exit__(self, *exc):
        _STATE.forbidden = self.prev
        return False


_READS: list = []      # MockBackend.host_reads: every read, in order (the arrays are one class)


def _check_read(what: str) -> None:
    _READS.append(what)
    if getattr(_STATE, "forbidden", False):
        raise DeviceSynchronized(
            f"{what} of a device array inside forbid_sync(): on a GPU this copies to the host "
            f"and waits for the device; keep the value on the device (a where/mask instead of "
            f"a Python branch on it), or read it outside forbid_sync()")


_DEVICE_MODULE = None


def _device_module(numpy):
    """The stand-in module (made once): NumPy's functions, their array results as the
    ``DeviceArray`` subclass (NumPy scalars as 0-dim arrays, as CuPy gives), named
    ``mock_device_numpy``."""
    global _DEVICE_MODULE
    if _DEVICE_MODULE is not None:
        return _DEVICE_MODULE
    import functools
    import types

    ndarray, generic = numpy.ndarray, numpy.generic

    def plain(a):
        if isinstance(a, DeviceArray):
            return a.view(ndarray)
        if a.__class__ in (list, tuple):
            return a.__class__(plain(v) for v in a)
        return a

    def device(r):
        if r.__class__ is ndarray:
            return r.view(DeviceArray)
        if isinstance(r, generic):
            return numpy.asarray(r).view(DeviceArray)
        if r.__class__ is tuple:
            return tuple(device(v) for v in r)
        return r

    reads = {"nonzero", "flatnonzero", "argwhere", "count_nonzero", "unique", "unique_values",
             "unique_counts", "unique_inverse", "unique_all", "extract", "compress"}

    class DeviceArray(ndarray):
        """A NumPy array standing in for a device array (see ``MockBackend``)."""

        def __array_wrap__(self, arr, context=None, return_scalar=False):
            return numpy.asarray(arr).view(DeviceArray)   # (0-dim stays an array, as CuPy)

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            # without NumPy's floating-point warnings: a GPU library computes every lane of a
            # branch (the masked ones too) silently
            out = kwargs.get("out")
            if out is not None:
                kwargs["out"] = plain(out)
            with numpy.errstate(all="ignore"):
                r = getattr(ufunc, method)(*plain(inputs), **kwargs)
            if out is not None:
                return out[0] if out.__class__ is tuple and len(out) == 1 else out
            return device(r)

        def __array_function__(self, func, types, args, kwargs):
            if func.__name__ in reads:
                _check_read(f"{func.__name__}()")
            return device(func(*plain(args), **{k: plain(v) for k, v in kwargs.items()}))

        def __getitem__(self, key):
            if isinstance(key, ndarray) and key.dtype.kind == "b":
                _check_read("a boolean-mask subscript")
            return device(super().__getitem__(plain(key)))

        def __setitem__(self, key, value):
            if isinstance(key, ndarray) and key.dtype.kind == "b":
                _check_read("a boolean-mask assignment")
            super().__setitem__(plain(key), plain(value))

        def __bool__(self):
            _check_read("bool()")
            return super().__bool__()

        def __int__(self):
            _check_read("int()")
            return super().__int__()

        def __float__(self):
            _check_read("float()")
            return super().__float__()

        def __index__(self):
            _check_read("operator.index()")
            return super().__index__()

        def item(self, *args):
            _check_read(".item()")
            return super().item(*args)

        def tolist(self):
            _check_read(".tolist()")
            return super().tolist()

    mod = types.ModuleType("mock_device_numpy", "NumPy standing in for a GPU array module "
                                                "(tensorplay.testing.backend.MockBackend)")
    for name in dir(numpy):
        if name.startswith("__"):
            continue
        v = getattr(numpy, name)
        if callable(v) and not isinstance(v, (type, numpy.ufunc)):
            v = functools.wraps(v)((lambda f: lambda *a, **k: device(f(*a, **k)))(v))
        setattr(mod, name, v)
    mod.__version__ = numpy.__version__
    mod.ndarray = DeviceArray
    _DEVICE_MODULE = mod
    return mod
