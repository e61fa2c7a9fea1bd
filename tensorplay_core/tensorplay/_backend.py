"""The backend protocol: what a device plugin supplies so tensors can live on its device.

``Backend`` is the contract (httpx's habit: one small protocol, and a fake implementation shipped
for tests, ``tensorplay.testing.backend.MockBackend``); it is public as
``tensorplay.backends.Backend``. Beside it, what the protocol's members are built from:
``Storage`` (a backend's ``root_storage`` subclasses it), the row-major stride rule,
``wrap_native`` (the building block of ``Backend.wrap``), ``device_finder`` (for
``Backend.guard_kernel``), the data-free ``meta`` backend and ``get_backend``, the lookup of a
loaded backend. Its implementation over NumPy-like modules, ``ArrayBackend``, lives beside the
reference kernels it binds (``_kernels.array_backend``).

Storage model (same as torch): a tensor is a view ``(shape, stride, storage_offset)`` in
elements over a ``Storage`` whose ``root`` is a contiguous native array. View metadata is
computed by the core (one rule for real and fake tensors); the backend only materializes it
with ``as_strided``.

Loading is not done here: ``get_backend`` asks ``_devices.load``, which hands a device's first use
to ``tensorplay.backends.first_use`` (load the plugin, build and check the backend, bind its
kernels, publish it).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Protocol, runtime_checkable

from . import _devices, _registry

_LOADED: dict = _devices.loaded   # device type -> backend instance (the table of _devices)


class _NoGuard:
    """The shared do-nothing context of ``Backend.device_guard``'s default."""

    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NOGUARD = _NoGuard()

# The members a backend must define itself (no default below), and the optional ones (a default
# below: a backend subclassing ``Backend`` or ``ArrayBackend`` inherits it). ``tensorplay.backends``
# checks a plugin's backend against these when it loads.
REQUIRED = ("device_type", "native_dtype", "dtype_of", "wrap", "as_strided", "empty", "full",
            "arange", "from_host", "to_host", "assign", "scatter_add", "index_put",
            "masked_select", "masked_scatter")
OPTIONAL = ("np", "is_available", "device_count", "synchronize", "device_guard",
            "device_guard_needed", "align_device", "guard_kernel", "kernels", "wrap_shared",
            "from_other", "from_dlpack", "data_ptr", "manual_seed", "rand", "randn",
            "fuse_elementwise", "fuses_row_reductions", "capture_graph", "root_storage",
            "indexed_devices", "current_index")


@runtime_checkable
class Backend(Protocol):
    """What a device plugin's backend provides: one object per device type, made by the plugin's
    ``DeviceSpec("type", "module:Class")`` on the device's first use.

    Arrays: every method takes and returns the backend's *native* arrays (numpy/cupy arrays, or
    whatever the device stores); ``wrap`` turns one into a ``tensorplay.Tensor``. Shapes and
    strides are tuples of ints in elements; ``dtype`` arguments are ``tensorplay.dtype`` values;
    ``device`` arguments are ``tensorplay.device`` values of this backend's type (with an index,
    or ``None`` index meaning the default device).

    **Required** (no default; the loader refuses a backend lacking one, naming the plugin and the
    member): ``device_type``, ``native_dtype``, ``dtype_of``, ``wrap``, ``as_strided``,
    ``empty``, ``full``, ``arange``, ``from_host``, ``to_host``, ``assign``, ``scatter_add``,
    ``index_put``, ``masked_select``, ``masked_scatter``. ``ArrayBackend`` provides all of them
    but ``as_strided`` for a NumPy-like module.

    **Optional** (the default below is what the core assumes when a backend does not override
    it): ``is_available`` (always available), ``device_count`` (1), ``synchronize`` (nothing to
    wait for), ``device_guard`` / ``device_guard_needed`` (no device switch), ``align_device``
    (``None``: no per-argument device check), ``guard_kernel`` (custom kernels bound as they
    are), ``kernels`` (no built-in kernels: built-in ops raise "no kernel"), ``wrap_shared``
    (``wrap``), ``from_other`` (through the host), ``from_dlpack`` / ``data_ptr`` / ``rand`` /
    ``randn`` (``NotImplementedError`` naming the device), ``manual_seed`` (nothing to seed),
    ``fuse_elementwise`` (``None``: ``tensorplay.compile`` uses its generic fuser),
    ``fuses_row_reductions`` (``False``: compile's chains never hold reductions on the device),
    ``capture_graph`` (``NotImplementedError``: ``mode="reduce-overhead"`` runs without graphs
    on the device), ``np``
    (``None``: no NumPy-like module), ``indexed_devices`` (``None``: indexed when there are
    several devices),
    ``current_index`` (``None``: a bare type means index 0), ``root_storage`` (``None``: results
    are built by ``wrap``;
    a ``Storage`` subclass made with no arguments whose byte size is its root array's lets the
    built-in ops' adapters build a row-major result tensor inline, one frame less per op).

    A backend gets the defaults by subclassing ``Backend`` (or ``ArrayBackend``); a backend that
    only matches the protocol structurally must define the optional members too. Nothing here is
    called per op except ``wrap``, ``as_strided`` and the array writes, from the kernels' adapters.
    """

    device_type: ClassVar[str]
    np: Any = None

    # -- required ---------------------------------------------------------------------------
    def native_dtype(self, dt):
        """The native dtype of ``tensorplay`` dtype ``dt``; ``TypeError`` naming the device when
        the device cannot store it."""
        ...

    def dtype_of(self, arr):
        """The ``tensorplay.dtype`` of native array ``arr``."""
        ...

    def wrap(self, arr, device):
        """A new ``Tensor`` on ``device`` owning native array ``arr`` (its own contiguous
        storage; a scalar becomes a 0-dim tensor). Build it with
        ``tensorplay.backends.wrap_native`` (checks its arguments), or, on a backend that keeps
        this per-op path lean, with ``tensorplay.backends.new_tensor`` (no checks: pass what the
        array says); ``ArrayBackend`` does the latter for NumPy-like arrays."""
        ...

    def as_strided(self, root, shape, stride, offset):
        """A native view of contiguous array ``root``'s memory with ``shape``, ``stride`` and
        ``offset`` in elements (writes through it reach ``root``)."""
        ...

    def empty(self, shape, dtype, device):
        """An uninitialised native array."""
        ...

    def full(self, shape, value, dtype, device):
        """A native array filled with ``value``."""
        ...

    def arange(self, start, end, step, dtype, device):
        """``start, start + step, ...`` below ``end`` (same rule as ``torch.arange``)."""
        ...

    def from_host(self, obj, dtype, device):
        """A native array copying ``obj`` (nested lists, a scalar or a NumPy array), of
        ``dtype`` when given, else the dtype NumPy infers."""
        ...

    def to_host(self, arr):
        """A NumPy array with ``arr``'s values (may be ``arr`` itself on a host device)."""
        ...

    def assign(self, dst, src) -> None:
        """``dst[...] = src`` (broadcasting; ``dst`` is a view into storage)."""
        ...

    def scatter_add(self, out, dim, idx, src) -> None:
        """``out.index_add_(dim, idx, src)`` in place."""
        ...

    def index_put(self, x, dim, idx, values) -> None:
        """``x[(slice(None),) * dim + (idx,)] = values`` in place."""
        ...

    def masked_select(self, x, mask):
        """The 1-D array of ``x``'s elements where ``mask`` (broadcast to ``x``) is true."""
        ...

    def masked_scatter(self, x, mask, src) -> None:
        """Write ``src``'s leading elements into ``x`` where ``mask`` is true, in place."""
        ...

    # -- optional, with the defaults the core relies on ---------------------------------------
    def is_available(self) -> tuple[bool, str]:
        """``(usable, reason)``; the reason is shown in ``DeviceUnavailableError`` when the
        device is first used. Never raises. Default: ``(True, "")``."""
        return True, ""

    def device_count(self) -> int:
        """How many devices of this type exist (``device:0 .. device:N-1``). Default: 1."""
        return 1

    # ``indexed_devices``: whether a tensor's device of this type carries an index (``True``:
    # ``"cuda"`` is ``cuda:0`` on a tensor, even with one GPU; ``False``: ``"cpu:0"`` is ``cpu``).
    # Default ``None``: indexed when ``device_count() > 1``. Asked when a device is first
    # canonicalised (``tensorplay.device``), never per call.
    indexed_devices: bool | None = None

    def current_index(self) -> int | None:
        """The index a bare device type means on a new tensor of an indexed type (torch's
        current device); asked per creation with a bare type. Default ``None``: index 0."""
        return None

    def synchronize(self, device=None) -> None:
        """Wait for queued work on ``device`` (``None``: every device). Default: nothing."""
        return None

    # ``runtime``: the device's host runtime (properties, streams, events, memory statistics)
    # that ``tensorplay.cuda`` delegates to, so the core never imports the array library. Default
    # ``None``: the device has none (``tensorplay.cuda`` then raises naming the plugin). Read only
    # by ``tensorplay.cuda``, never per op; not part of the conformance check (``OPTIONAL``).
    runtime: Any = None

    def device_guard(self, device):
        """A context manager making ``device`` (with its index) current for the work inside
        (``DeviceUnavailableError`` for an index the machine lacks). Default: a shared no-op."""
        return _NOGUARD

    def device_guard_needed(self) -> bool:
        """Whether the built-in ops' adapters must enter ``device_guard`` on every call (asked
        once, when an op's adapter is generated). Default: ``False``."""
        return False

    # ``align_device(t, device, api) -> Tensor``: when set, the built-in ops' adapters check that
    # every tensor argument is on the first one's ``device`` and call it for one that is not: it
    # returns the tensor moved there (torch lets a 0-dim cpu tensor join any device) or raises
    # ``DispatchError`` naming both devices (``api`` is the op's name). Default ``None``: no
    # check (every tensor of this type is on the one device).
    align_device: Callable | None = None

    # ``root_storage``: a ``Storage`` class constructible with no arguments (fields ``root``,
    # ``version``, ``backend`` set after; ``nbytes`` read from ``root``). When set, the adapters
    # of elementwise built-ins build a fresh row-major result inline instead of calling ``wrap``.
    root_storage: Any = None

    def guard_kernel(self, op, fn):
        """The callable the dispatcher binds for custom op ``op``'s kernel ``fn`` on this device
        (a backend with several devices wraps it to switch device, refusing mixed indices).
        Called when the op's table is built, never per call. Default: ``fn``."""
        return fn

    def kernels(self) -> dict:
        """Built-in op kernel name -> array kernel (native arrays in, native arrays out), bound
        when the backend loads. Default: none (``ArrayBackend``: the reference kernels bound to
        its ``xp``)."""
        return {}

    def wrap_shared(self, arr, device):
        """A tensor sharing ``arr``'s memory and strides (``from_numpy``, ``from_dlpack``).
        Default: ``wrap(arr, device)`` (a copy when ``arr`` is not contiguous)."""
        return self.wrap(arr, device)

    def from_other(self, arr, src_backend, device):
        """A native array on ``device`` with the values of ``arr`` from ``src_backend`` (another
        device's backend, or ``None`` for a foreign array). Default: through the host
        (``src_backend.to_host``, then ``from_host``)."""
        host = src_backend.to_host(arr) if src_backend is not None else arr
        return self.from_host(host, None, device)

    def from_dlpack(self, obj):
        """A native array sharing the memory of DLPack producer ``obj``. Default: refused."""
        raise NotImplementedError(f"device '{self.device_type}': its backend does not import "
                                  f"DLPack arrays; copy with tensorplay.tensor(...) instead")

    def data_ptr(self, arr) -> int:
        """The address of ``arr``'s first element. Default: refused."""
        raise NotImplementedError(f"device '{self.device_type}': its backend does not expose "
                                  f"memory addresses (Tensor.data_ptr)")

    def manual_seed(self, seed: int) -> None:
        """Seed this device's random generator (``tensorplay.manual_seed``). Default: nothing."""
        return None

    def rand(self, shape, dtype, device):
        """Uniform samples in [0, 1). Default: refused."""
        raise NotImplementedError(f"device '{self.device_type}': its backend has no random "
                                  f"number generator (rand); create on cpu and .to() it")

    def randn(self, shape, dtype, device):
        """Standard normal samples. Default: refused."""
        raise NotImplementedError(f"device '{self.device_type}': its backend has no random "
                                  f"number generator (randn); create on cpu and .to() it")

    def fuse_elementwise(self, expr):
        """``tensorplay.compile``'s fuser: ``run(arrays) -> list of arrays`` computing an
        elementwise chain in one pass, or ``None`` to use the generic fuser. Default: ``None``.
        The callable may return ``None`` for a call it declines (a layout or size it does not
        take): that call then runs the chain's ops one by one through dispatch."""
        return None

    #: Whether ``fuse_elementwise`` takes chains with *row reductions*: ``sum``/``mean``/
    #: ``amax``/``amin`` over the last dim with ``keepdim=True`` of a floating value, mixed with
    #: elementwise steps that may use their results (a row softmax, a layer norm: the steps of
    #: ``tensorplay._fusion.ROW_REDUCTIONS``). When false (the default), compile never hands this
    #: backend such a chain: the reductions split the graph's chains, as they always did.
    fuses_row_reductions = False

    #: How the built-in ``maximum``/``minimum`` with a number (``clamp`` by a number,
    #: ``clamp_min``/``clamp_max``), ``fmax``/``fmin`` and ``relu`` settle a tie of ``-0.0`` and
    #: ``0.0``, as torch's kernels for the device do. ``False`` (the default): torch's cpu kernels,
    #: which keep the input's zero (``clamp(-0.0, min=0.0)`` is ``-0.0``, ``relu(-0.0)`` is
    #: ``-0.0``; bfloat16 ``fmax``/``fmin`` give ``other``). ``True``: torch's cuda kernels, which
    #: order ``-0.0`` below ``0.0`` (IEEE 754-2019 maximum/minimum: ``clamp(-0.0, min=0.0)`` and
    #: ``relu(-0.0)`` are ``0.0``, ``fmin(0.0, -0.0)`` is ``-0.0``) in every float dtype. Read by
    #: ``ArrayBackend``'s reference kernels when they are built, never per call; not part of the
    #: conformance check (``OPTIONAL``): a backend with its own kernels settles ties itself.
    signed_zero_order = False

    #: Whether the reference kernels compute ``pow`` of a float32/float64/bfloat16 tensor by a
    #: Python number as torch's cpu kernel does for six exponents: ``x ** 0.5`` is ``sqrt(x)``,
    #: ``** -0.5`` ``1 / sqrt(x)``, ``** -1`` ``1 / x``, ``** 2`` ``x * x``, ``** 3``
    #: ``x * x * x`` and ``** -2`` ``1 / (x * x)`` (``(-0.0) ** 0.5`` is ``-0.0``,
    #: ``(-inf) ** 0.5`` NaN, cubes rounded twice), every other exponent through ``pow``.
    #: ``True`` (the default): torch's cpu rule. ``False``: ``pow`` for every exponent. Read
    #: by ``ArrayBackend``'s reference kernels when they are built, never per call; not part of
    #: the conformance check (``OPTIONAL``).
    pow_by_number_steps = True


    def capture_graph(self, fn: Callable[[], Any], device) -> tuple:
        """Record the device work of ``fn()`` as one replayable graph (CUDA graphs), for
        ``tensorplay.compile(fn, mode="reduce-overhead")``; returns ``(result, replay)``.

        ``fn()`` is called once, on the calling thread, with the work it enqueues on ``device``
        recorded rather than run (the arrays in ``result`` hold no values yet); ``replay()``
        enqueues the recorded work on the device's current stream, writing the same arrays
        ``result`` holds. Every array allocated while recording stays reserved for the graph
        for as long as ``replay`` is referenced. ``replay`` may have ``before()`` and
        ``after()``, which the caller runs (one call at a time) before copying into the graph's
        arrays and after copying out of them, to order the work of calls made on different
        streams. ``replay`` may have ``launches``, the number of device operations the
        recording holds (cuda: the CUDA graph's nodes), or None when unknown: a recording of no
        more launches than the copies a replay adds is dropped (the call runs without a graph;
        without ``launches`` the compiled graph's structure is counted). Raises whatever
        ``fn`` raises, and ``RuntimeError`` when the work cannot be recorded (a host
        synchronisation, say); nothing stays captured then. Default: ``NotImplementedError``
        (the device has no graphs)."""
        raise NotImplementedError(f"device '{self.device_type}': its backend cannot capture "
                                  f"graphs (capture_graph)")


_STUBS = {m: vars(Backend)[m] for m in REQUIRED if m in vars(Backend)}


def missing_members(obj) -> tuple[list, list]:
    """``(required, optional)``: the ``Backend`` members ``obj`` lacks (empty lists when it
    conforms)."""
    cls = type(obj)
    # a required method still resolving to the protocol's own stub was never implemented
    return ([m for m in REQUIRED if not hasattr(obj, m) or
             (m in _STUBS and getattr(cls, m, None) is _STUBS[m])],
            [m for m in OPTIONAL if not hasattr(obj, m)])


class Storage:
    """Shared by a tensor and all its views: the root array, size in bytes, version counter.
    ``aliases`` (unset until a ``.data`` of it is taken: ``_tensor_base.data_alias``): weak
    references to the other tensors over this memory that are not views of one base (the owner
    and each ``x.data``), which a resize that moves the memory re-points (``resize_``)."""

    __slots__ = ("root", "nbytes", "version", "backend", "aliases", "__weakref__")

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


class RootStorage(Storage):
    """The ``Storage`` of a tensor owning a whole native array (``ArrayBackend.wrap``'s
    results): ``nbytes`` is the root array's, read when asked (views of a base, rarely) instead
    of computed on every op. Built with ``object.__new__`` and filled field by field (``root``,
    ``version``, ``backend``); otherwise a ``Storage``."""

    __slots__ = ()

    @property
    def nbytes(self) -> int:
        """Size of the root array in bytes."""
        return self.root.nbytes


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


def wrap_native(backend, arr, *, shape, dtype, device, nbytes: int):
    """A new ``tensorplay.Tensor`` owning native array ``arr`` of ``backend``: the building block
    of ``Backend.wrap`` for a backend whose arrays are not NumPy-like (``ArrayBackend.wrap``
    does the same for NumPy-like ones).

    ``arr`` must be dense and row-major (the tensor gets row-major strides); ``shape``: a tuple
    of non-negative ints (elements); ``dtype``: a ``tensorplay.dtype``; ``device``: a
    ``tensorplay.device`` of ``backend.device_type``; ``nbytes``: the array's size in bytes. The
    tensor has its own storage (version 0), does not require grad and has no history.

    The tensor's device is canonical (``tensorplay.device``'s rule: ``cpu:0`` is ``cpu``).

    Raises ``TypeError`` for a ``dtype``/``device`` of the wrong type, ``ValueError`` for a
    ``shape`` that is not a tuple of non-negative ints, a device of another type, an ``nbytes``
    other than ``numel * dtype.itemsize``, and, where ``arr`` has ``.shape``/``.dtype``/
    ``.strides``/``.nbytes`` (NumPy, CuPy and alike), a shape, dtype or byte size other than
    the array's or an array that is not dense and row-major (all O(1))."""
    from ._device import Device, canonical
    from ._dtype import dtype as _dt
    from ._tensor_base import new_tensor   # imports this module: not at the top
    if not isinstance(dtype, _dt):
        raise TypeError(f"wrap_native: dtype must be a tensorplay.dtype, got {dtype!r}")
    if not isinstance(device, Device):
        raise TypeError(f"wrap_native: device must be a tensorplay.device, got {device!r}")
    if device.type != backend.device_type:
        raise ValueError(f"wrap_native: device {device} is not of the backend's type "
                         f"'{backend.device_type}'")
    device = canonical(device)   # the tensor's device: "cpu:0" is cpu, a bare "cuda" cuda:0
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else shape
    if not isinstance(shape, tuple) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise ValueError(f"wrap_native: shape must be a tuple of non-negative ints, got {shape!r}")
    _check_native(backend, arr, shape, dtype, nbytes)
    return new_tensor(Storage(arr, nbytes, backend), arr, shape, contiguous_strides_cached(shape),
                      0, dtype, device, backend)


def _check_native(backend, arr, shape, dtype, nbytes) -> None:
    """``wrap_native``'s O(1) checks that ``arr`` is what the caller says: ``nbytes`` is
    ``numel * itemsize``; where the array tells (``.shape``, ``.dtype``, ``.strides`` in bytes,
    ``.nbytes``: NumPy, CuPy and alike), that they match and that it is row-major. ``ValueError``
    naming ``wrap_native`` and the mismatch: a wrong claim would let ops read past the array."""
    numel = 1
    for s in shape:
        numel *= s
    if nbytes.__class__ is not int or nbytes != numel * dtype.itemsize:
        raise ValueError(f"wrap_native: nbytes={nbytes!r} does not match shape {shape} of "
                         f"{dtype} ({numel} elements x {dtype.itemsize} bytes = "
                         f"{numel * dtype.itemsize}); pass the array's size in bytes and its "
                         f"own shape and dtype")
    ashape = getattr(arr, "shape", None)
    if ashape is None:
        return          # the backend's array says nothing more (a handle, a buffer)
    if tuple(ashape) != shape:
        raise ValueError(f"wrap_native: shape {shape} does not match the array's shape "
                         f"{tuple(ashape)}")
    an = getattr(arr, "nbytes", None)
    if an.__class__ is int and an != nbytes:
        raise ValueError(f"wrap_native: nbytes={nbytes} does not match the array's nbytes {an}")
    if getattr(arr, "dtype", None) is not None:
        try:
            adt = backend.dtype_of(arr)
        except Exception:  # noqa: BLE001 - a dtype the backend cannot name: it cannot tell
            adt = None
        if adt is not None and adt is not dtype:
            raise ValueError(f"wrap_native: dtype {dtype} does not match the array's dtype "
                             f"{adt} ({arr.dtype}); pass dtype={adt}")
    strides = getattr(arr, "strides", None)
    if strides is not None and numel > 1:
        want = contiguous_strides(shape)
        item = dtype.itemsize
        if any(n > 1 and st != w * item for n, st, w in zip(shape, strides, want)):
            raise ValueError(f"wrap_native: the array is not dense and row-major (strides "
                             f"{tuple(strides)} bytes, expected {tuple(w * item for w in want)} "
                             f"for shape {shape}); copy it to a contiguous array first")


def device_finder(op, device_type: str):
    """``device_of(args, kwargs)`` for custom op ``op``'s kernel on a backend with several
    devices of ``device_type`` (``cuda:0``, ``cuda:1``): the device of the tensor arguments of
    that type (the schema's Tensor, Tensor? and Tensor[] parameters, by position or keyword;
    every argument when ``op`` has no schema), or ``None`` when there is none. Used by
    ``Backend.guard_kernel`` implementations, when the op's table is built (the returned
    function runs per call).

    ``op``: a custom op, or its qualified name ``"ns::op"`` (looked up: ``LookupError`` when
    none is registered); anything else is a ``TypeError``.

    Raises ``DispatchError`` naming the op and both devices when the arguments are on two
    devices of that type (same rule as torch: "expected all tensors on one device")."""
    from ._tensor_base import TensorBase
    from .errors import DispatchError
    if isinstance(op, str):
        op = _registry.lookup(op)   # "ns::op", as the library functions take it
    name = getattr(op, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"device_finder: op must be a custom op (or its qualified name "
                        f"'ns::op'), got {op!r}")
    args_ = getattr(getattr(op, "schema", None), "arguments", None)
    if args_ is None:
        pos = names = None
    else:
        tensorish = ("tensor", "optional_tensor", "tensor_list")
        pos = tuple(i for i, a in enumerate(args_) if a.kind in tensorish and not a.kwarg_only)
        names = frozenset(a.name for a in args_ if a.kind in tensorish)

    def see(a, dev):
        for t in (a if a.__class__ is list or a.__class__ is tuple else (a,)):
            if not isinstance(t, TensorBase):
                continue
            d = t.device
            if d.type != device_type:
                continue
            if dev is None:
                dev = d
            elif (d.index or 0) != (dev.index or 0):
                raise DispatchError(
                    f"{name}: expected all tensors on one device, found tensors on "
                    f"{dev} and {d}. Move them with .to({str(dev)!r}) first.")
        return dev

    def device_of(args, kwargs):
        dev = None
        if pos is None:
            for a in (*args, *kwargs.values()):
                dev = see(a, dev)
            return dev
        n = len(args)
        for i in pos:
            if i < n:
                dev = see(args[i], dev)
        if kwargs:
            for k in kwargs:
                if k in names:
                    dev = see(kwargs[k], dev)
        return dev
    return device_of


def contiguous_strides_cached(shape) -> tuple:
    r = _CONTIG_CACHE.get(shape)
    if r is None:
        r = contiguous_strides(shape)
        if len(_CONTIG_CACHE) < 4096:
            _CONTIG_CACHE[shape] = r
    return r




class MetaBackend:
    """The data-free backend of the ``meta`` device and of fake tensors."""

    device_type = "meta"

    def is_available(self):
        return True, ""


META = MetaBackend()


def get_backend(device_type: str):
    """The loaded backend of ``device_type``, importing its plugin's backend on first use (through
    ``_devices.load``, which calls ``tensorplay.backends.first_use``; ``"meta"``: ``META``).

    Raises ``DeviceUnavailableError`` naming the device, what is installed, and the fix
    (``pip install tensorplay-<device>``, or the plugin's recorded load error).
    """
    b = _LOADED.get(device_type)
    if b is not None:
        return b
    if device_type == "meta":
        return META
    return _devices.load(device_type)

