"""The backend protocol: what a device plugin supplies so tensors can live on its device.

A backend is one small object per device type (httpx's habit: one protocol, and the ``meta``
device as the data-free implementation for tests). ``ArrayBackend`` implements it for any
NumPy-like module (numpy, cupy): a plugin subclass sets ``np`` (the module) and ``xp`` (its
array-API namespace) and overrides the handful of places where the modules differ
(``as_strided``, ``data_ptr``, host transfer, random numbers, availability).

Storage model (same as torch): a tensor is a view ``(shape, stride, storage_offset)`` in
elements over a ``Storage`` whose ``root`` is a contiguous native array. View metadata is
computed by the core (one rule for real and fake tensors); the backend only materializes it
with ``as_strided``.
"""

from __future__ import annotations

import threading

from . import _devices, _dtype
from .errors import DeviceUnavailableError

_LOADED: dict = _devices.loaded   # device type -> backend instance (the table of _devices)
_SEED = [None]              # last manual_seed, applied to backends loaded later
_lock = threading.RLock()


class Storage:
    """Shared by a tensor and all its views: the root array, size in bytes, version counter."""

    __slots__ = ("root", "nbytes", "version", "backend", "__weakref__")

    def __init__(self, root, nbytes: int, backend):
        self.root = root
        self.nbytes = nbytes
        self.version = 0
        self.backend = backend

    def data_ptr(self):
        """Refused: only Triton's interpreter asks a storage for its address, on a raw launch."""
        raise TypeError(
            "a tensorplay tensor was handed to a Triton kernel directly (kernel[grid](...)): launch "
            "it with tensorplay.library.wrap_triton(kernel)[grid](...) inside a triton_op, which "
            "runs cpu tensors through Triton's interpreter and cuda tensors compiled")


def contiguous_strides(shape) -> tuple:
    """Row-major strides in elements for ``shape`` (torch's rule: size-1 dims get the stride they
    would have in a dense layout)."""
    st = []
    acc = 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


_CONTIG_CACHE: dict = {}


def contiguous_strides_cached(shape) -> tuple:
    r = _CONTIG_CACHE.get(shape)
    if r is None:
        r = contiguous_strides(shape)
        if len(_CONTIG_CACHE) < 4096:
            _CONTIG_CACHE[shape] = r
    return r


_TENSOR_CLS: list = [None]   # tensorplay.Tensor, once imported
_new = object.__new__


class ArrayBackend:
    """Backend for a NumPy-like array module. Subclasses set ``device_type``, ``np`` and ``xp``.

    Methods take and return *native* arrays; ``wrap`` turns a kernel result into a Tensor.
    """

    device_type = "?"
    np = None     # numpy-like module
    xp = None     # array-API namespace of it

    def __init__(self):
        self._dtype_cache = {}
        self._native_cache = {}
        self._kernels = None

    # -- availability -----------------------------------------------------------------------
    def is_available(self) -> tuple[bool, str]:
        """(usable, reason). Never raises."""
        return True, ""

    def device_count(self) -> int:
        return 1

    def synchronize(self, device=None) -> None:
        pass

    # -- dtypes -----------------------------------------------------------------------------
    def native_dtype(self, dt):
        r = self._native_cache.get(dt)
        if r is None:
            try:
                r = self.np.dtype(dt.name)
            except TypeError:
                raise TypeError(f"{self.device_type}: dtype {dt} is not supported by this "
                                f"device's backend ({self.np.__name__} has no {dt.name}); use "
                                f"float16 or float32 on '{self.device_type}'") from None
            self._native_cache[dt] = r
        return r

    def dtype_of(self, arr):
        nd = arr.dtype
        r = self._dtype_cache.get(nd)
        if r is None:
            r = _dtype.from_name(nd.name, nd)
            self._dtype_cache[nd] = r
        return r

    # -- tensors ----------------------------------------------------------------------------
    def wrap(self, arr, device):
        """Tensor owning ``arr`` (made contiguous if it is not; numpy scalars become 0-d)."""
        Tensor = _TENSOR_CLS[0]
        if Tensor is None:   # bound once: an import statement here costs ~0.3 µs per kernel call
            from ._tensor import Tensor
            _TENSOR_CLS[0] = Tensor
        np = self.np
        if arr.__class__ is not np.ndarray:   # a scalar, or a subclass: a plain array
            arr = np.asarray(arr)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        # Tensor._init_real inlined (one frame less on every kernel result), with the cached
        # stride tuple and dtype looked up in place; object.__new__ bound once (no lookup)
        t = _new(Tensor)
        shape = arr.shape
        st = _new(Storage)
        st.root = arr
        st.nbytes = arr.nbytes
        st.version = 0
        st.backend = self
        t._storage = st
        t._data = arr
        t._shape = shape
        stride = _CONTIG_CACHE.get(shape)
        t._stride = stride if stride is not None else contiguous_strides_cached(shape)
        t._offset = 0
        nd = arr.dtype
        dt = self._dtype_cache.get(nd)
        t._dtype = dt if dt is not None else self.dtype_of(arr)
        t._device = device
        t._backend = self
        k = device.type
        t._dkey = k
        t._bkey = k
        t._requires_grad = False
        t.grad = None
        t.grad_fn = None
        t._output_nr = 0
        t._accum = None
        t._base = None
        t._vver = 0
        t._retains_grad = False
        t._capture = None
        return t

    def wrap_shared(self, arr, device):
        """Tensor sharing ``arr``'s memory, keeping its strides (``from_numpy``/``from_dlpack``).

        The storage root becomes a 1-D array over the span ``arr`` covers, so views and
        in-place writes reach the producer's memory. Arrays with negative or non-element-aligned
        strides cannot be described that way and are copied (``wrap``).
        """
        from ._tensor import Tensor
        item = arr.dtype.itemsize
        if arr.flags.c_contiguous or arr.size == 0:
            return self.wrap(arr, device)
        if any(st < 0 or st % item for st in arr.strides):
            return self.wrap(arr, device)
        stride = tuple(st // item for st in arr.strides)
        span = 1 + sum((s - 1) * st for s, st in zip(arr.shape, stride))
        root = self.np.lib.stride_tricks.as_strided(arr, shape=(span,), strides=(item,))
        t = Tensor.__new__(Tensor)
        t._init_real(Storage(root, span * item, self), arr, tuple(arr.shape), stride, 0,
                     self.dtype_of(arr), device, self)
        return t

    def as_strided(self, root, shape, stride, offset):
        """Native view of ``root``'s memory with ``shape``/``stride``/``offset`` in elements."""
        raise NotImplementedError

    def data_ptr(self, arr) -> int:
        raise NotImplementedError

    def empty(self, shape, dtype, device):
        return self.np.empty(shape, dtype=self.native_dtype(dtype))

    def full(self, shape, value, dtype, device):
        return self.np.full(shape, value, dtype=self.native_dtype(dtype))

    def arange(self, start, end, step, dtype, device):
        return self.np.arange(start, end, step, dtype=self.native_dtype(dtype))

    def from_host(self, obj, dtype, device):
        """Native array from a nested list, scalar or host (numpy) array, of ``dtype`` if given."""
        nd = self.native_dtype(dtype) if dtype is not None else None
        return self.np.array(obj, dtype=nd, copy=True)

    def to_host(self, arr):
        """A numpy array with ``arr``'s values (the array itself on the cpu)."""
        return arr

    def from_dlpack(self, obj):
        return self.np.from_dlpack(obj)

    def manual_seed(self, seed: int) -> None:
        raise NotImplementedError

    def rand(self, shape, dtype, device):
        raise NotImplementedError

    def randn(self, shape, dtype, device):
        raise NotImplementedError

    # -- the few writes the array API lacks --------------------------------------------------
    def assign(self, dst, src) -> None:
        """``dst[...] = src`` (broadcasting; ``dst`` is a view into storage)."""
        dst[...] = src

    def scatter_add(self, out, dim, idx, src) -> None:
        """``out.index_add_(dim, idx, src)``: add slices of ``src`` at ``idx`` along ``dim``."""
        np = self.np
        flat = idx.reshape(-1)
        src = src.reshape(tuple(out.shape[:dim]) + (flat.shape[0],) + tuple(out.shape[dim + 1:]))
        np.add.at(np.moveaxis(out, dim, 0), flat, np.moveaxis(src, dim, 0))

    def index_put(self, x, dim, idx, values) -> None:
        x[(slice(None),) * dim + (idx,)] = values

    def masked_select(self, x, mask):
        return x[self.np.broadcast_to(mask, x.shape)]

    def masked_scatter(self, x, mask, src) -> None:
        m = self.np.broadcast_to(mask, x.shape)
        n = int(m.sum())
        x[m] = src.reshape(-1)[:n]

    def kernels(self) -> dict:
        """Built-in op name -> array kernel. Default: the reference kernels bound to ``xp``."""
        if self._kernels is None:
            from ._kernels import xp as ref
            self._kernels = ref.bind(self.xp, self)
        return self._kernels


class MetaBackend:
    """The data-free backend of the ``meta`` device and of fake tensors."""

    device_type = "meta"

    def is_available(self):
        return True, ""


META = MetaBackend()


def get_backend(device_type: str):
    """The loaded backend of ``device_type``, importing its plugin's backend on first use.

    Raises ``DeviceUnavailableError`` naming the device, what is installed, and the fix
    (``pip install tensorplay-<device>``, or the plugin's recorded load error).
    """
    b = _LOADED.get(device_type)
    if b is not None:
        return b
    if device_type == "meta":
        return META
    with _lock:
        b = _LOADED.get(device_type)
        if b is not None:
            return b
        from . import plugins
        b = plugins.load_backend(device_type)
        ok, why = b.is_available()
        if not ok:
            raise DeviceUnavailableError(
                f"device '{device_type}' is not available: {why}")
        if _SEED[0] is not None:
            b.manual_seed(_SEED[0])
        _LOADED[device_type] = b
        from . import _ops
        _ops.install_backend(b)
        if hasattr(b, "guard_kernel"):       # custom ops registered before the backend loaded
            from . import _registry
            for op in _registry.all_ops():
                if not op.is_builtin and device_type in op._kernels:
                    op._rebuild()
        return b


_devices.loaders.append(get_backend)   # _devices.load(t): a device's first use loads it here


def loaded_backends() -> dict:
    return dict(_LOADED)
