"""The cuda backend: CuPy arrays as storage, one backend object for every ``cuda:N`` device.

The built-in kernels are the core's reference kernels (``tensorplay/_kernels/xp.py``) bound to
CuPy's array-API namespace (``array_api_compat.cupy``): the same code that runs on numpy for the
cpu device, not a second copy. What differs between numpy and CuPy lives here: strided views over
device memory, host and cross-device transfers, DLPack, random numbers, scatter-add
(``cupy.add.at``), availability and device selection.

Device and stream rules:

* Every built-in kernel runs inside ``device_guard(tensor.device)`` (the generated adapter wraps
  it), i.e. ``cupy.cuda.Device(index)``: work and allocations happen on the tensor's own GPU,
  and the caller's current device is restored afterwards.
* Backend methods that allocate take the device and allocate there whoever calls them
  (``empty``/``full``/``arange``/``rand``/``randn``/``from_host``), even outside an adapter.
* Work is issued on CuPy's *current stream* of that device (``cupy.cuda.Stream(...)`` used as a
  context manager is respected), exactly as plain CuPy code would be.
* A copy between two GPUs is ordered with events: the destination stream waits for the source
  stream before copying, and the source stream waits for the copy before it may reuse memory.
  Copies to the host synchronize the source stream (``cupy.asnumpy``).
* ``"cuda"`` without an index means ``cuda:0`` (the core's choice for ``.to("cuda")`` and
  factories).

Importing this module imports CuPy but never touches the GPU; ``is_available`` answers
``(False, CuPy's reason)`` on a machine without a usable GPU and never raises.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading

# the per-call caches of the core's array backend (no public spelling: they are the inline
# result-building path the adapters share with the core)
from tensorplay import Tensor
from tensorplay import device as Device
from tensorplay._backend import _CONTIG_CACHE, contiguous_strides_cached
from tensorplay.backends import ArrayBackend, Storage, device_finder, new_tensor
from tensorplay._kernels import lowp
from tensorplay._kernels.array_backend import PY_DATA as _PY_DATA, int_host_array
from tensorplay.errors import DeviceUnavailableError, DispatchError

from . import bcast as _bcast
from . import clone as _clone
from . import eager as _eager
from . import fill as _fill
from . import floordiv as _floordiv
from . import fresh as _fresh
from . import reduce as _reduce

try:
    import array_api_compat.cupy as _xp_cupy
    import cupy
    import numpy
    _IMPORT_ERROR: BaseException | None = None
except Exception as _e:  # noqa: BLE001 - any import failure makes the device unavailable
    cupy = _xp_cupy = numpy = None
    _IMPORT_ERROR = _e

_NOOP = contextlib.nullcontext()
if cupy is not None:
    _fill.bind(cupy)
    _memcpy_async = cupy.cuda.runtime.memcpyAsync
    _D2D = cupy.cuda.runtime.memcpyDeviceToDevice
_ndarray = cupy.ndarray if cupy is not None else None
# a fresh array: what ``cupy.ndarray(shape, dtype)`` makes (``cupy.empty(shape, dtype)``'s own
# call, one Python frame less: 0.37 µs per allocation on an H100 host), through its two steps
# where fresh.route applies (about 0.6 µs less again on a CPU host); a module name so that
# benchmarks/bench_cuda_host.py can stand in for it
_new_array = _fresh.new_array_for(_ndarray)
# views (as_strided: every expand, unsqueeze, slice... on cuda) through the same two steps as
# ``cupy.ndarray(shape, dtype, memptr=..., strides=...)``: (NEW, INIT) or None (the constructor)
_VIEW = _fresh.route(cupy)
_VIEW_DTYPE: dict = {}      # native dtype -> what INIT takes for it (fresh.dtype_arg)

_FIX = ("tensorplay-cuda needs one CuPy matching the driver's CUDA version (pip install "
        "'tensorplay-cuda[cuda13]' for cupy-cuda13x, or '[cuda12]' for cupy-cuda12x) and an "
        "NVIDIA GPU; use device='cpu' meanwhile")


class RootStorage(Storage):
    """The ``Storage`` of a tensor that owns a whole CuPy array (every result ``wrap`` makes):
    ``nbytes`` is the root array's, read when asked (views of a base, rarely) instead of computed
    on every op. Allocated with ``RootStorage()`` and filled field by field (no ``__init__``
    frame: the cheapest allocation on the per-op path); otherwise a ``Storage``."""

    __slots__ = ()
    __init__ = object.__init__

    @property
    def nbytes(self) -> int:
        """Size of the root array in bytes."""
        return self.root.nbytes


class CUDABackend(lowp.Bfloat16Dtypes, ArrayBackend):
    """Backend of device type ``cuda`` over CuPy; serves every index ``cuda:0`` .. ``cuda:N-1``.

    ``np`` is ``cupy`` and ``xp`` is ``array_api_compat.cupy``; kernels take and return
    ``cupy.ndarray`` objects living on the device of their tensor arguments.
    """

    device_type = "cuda"
    # devices carry an index on tensors even with one GPU ("cuda" is cuda:0: the core's
    # ``tensorplay.device`` canonical rule, which the factories, ``.to`` and adapters apply)
    indexed_devices = True
    np = cupy
    # CuPy's ``add.at`` is atomic adds (exact per add); its ``multiply.at`` raises
    # NotImplementedError and its ``maximum.at``/``minimum.at`` lost float64 digits on an H200
    # (scatter_reduce amax/amin gave float32-rounded values): the core combines those itself
    ufunc_at = frozenset({"add"})
    # array-api-compat's CuPy namespace, floating floor_divide/remainder as the cpu device
    # computes them (CuPy's are floor(x / y): ``floordiv``)
    xp = _floordiv.namespace(_xp_cupy, cupy, numpy) if cupy is not None else None
    # the generated adapters build the results of the inline ufunc case with it (no `wrap` call)
    root_storage = RootStorage
    # torch's cuda kernels order -0.0 below 0.0 on a tie of zeros (clamp, fmax/fmin, relu)
    signed_zero_order = True
    # torch's cuda kernel takes pow's special exponents too (in every float dtype, float16
    # included), but this backend's CuPy fuser spells pow by a number as pow(): eager and compiled
    # keep one rule (pow) until a GPU run checks both with the steps
    pow_by_number_steps = False
    _lowp_enabled = False      # set by tensorplay._kernels.lowp.enable on first bf16 use

    def __init__(self):
        super().__init__()
        self._count = None          # visible GPUs, known once is_available() said yes
        self._seed = None
        self._rngs: dict = {}       # device index -> cupy.random.RandomState
        self._lock = threading.Lock()

    # -- host runtime (tensorplay.cuda) ----------------------------------------------------------
    @property
    def runtime(self):
        """``Backend.runtime``: the host runtime ``tensorplay.cuda`` delegates to (device
        properties, streams, events, memory statistics; ``runtime.CudaRuntime``)."""
        from .runtime import runtime
        return runtime()

    def current_index(self) -> int | None:
        """The GPU a bare ``"cuda"`` means on a new tensor: CuPy's current device, which
        ``tensorplay.cuda.set_device`` / ``tensorplay.cuda.device(i)`` change (torch's rule).
        ``None`` (cuda:0) with one visible GPU, without asking the driver."""
        if self._count == 1:
            return None
        return cupy.cuda.runtime.getDevice()

    # -- availability ---------------------------------------------------------------------------
    def is_available(self) -> tuple[bool, str]:
        """``(usable, reason)``: CuPy imports and sees at least one GPU. Never raises; does not
        create a CUDA context or allocate memory (asks only for the device count)."""
        from ._cupy_install import setup_problem
        problem = setup_problem()     # no or several CuPy wheels, no driver: say so, not CuPy's noise
        if problem is not None:
            return False, problem
        if _IMPORT_ERROR is not None:
            return False, (f"CuPy could not be imported ({type(_IMPORT_ERROR).__name__}: "
                           f"{_IMPORT_ERROR}); {_FIX}")
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # noqa: BLE001 - CUDARuntimeError: no driver / too old / no GPU
            return False, (f"CuPy {cupy.__version__} cannot use CUDA here ({type(e).__name__}: "
                           f"{e}); {_FIX}")
        if n < 1:
            return False, f"CuPy {cupy.__version__} found no CUDA GPU (device count 0); {_FIX}"
        self._count = n
        return True, ""

    def device_count(self) -> int:
        """Number of visible GPUs (0 when unavailable). Never raises."""
        if self._count is None:
            ok, _ = self.is_available()
            if not ok:
                return 0
        return self._count

    def synchronize(self, device=None) -> None:
        """Wait for all work on ``device`` (a ``Device``, index or ``None`` = every GPU)."""
        if device is None:
            for i in range(self.device_count()):
                cupy.cuda.Device(i).synchronize()
            return
        cupy.cuda.Device(self._index(Device(device) if not isinstance(device, int)
                                     else Device("cuda", device))).synchronize()

    def _index(self, device) -> int:
        i = device.index
        if i is None:
            return 0
        n = self._count if self._count is not None else self.device_count()
        if i >= n:
            raise DeviceUnavailableError(
                f"device '{device}' is not available: this machine has {n} CUDA device(s) "
                f"(cuda:0..cuda:{n - 1}); pick one of those, or set CUDA_VISIBLE_DEVICES")
        return i

    def device_guard(self, device):
        """Context manager running the enclosed CuPy work on ``device``'s GPU
        (``cupy.cuda.Device(index)``; restores the previous current device on exit).

        When that GPU already is CuPy's current device (always so on a one-GPU machine) the
        switch would be a no-op, and a shared no-op context is returned instead (cheaper on the
        per-op path). Raises ``DeviceUnavailableError`` for an index this machine lacks.
        """
        i = device.index
        n = self._count
        if i is None or n is None or i >= n:
            i = self._index(device)
            n = self._count
        if n == 1 or cupy.cuda.runtime.getDevice() == i:
            return _NOOP
        return cupy.cuda.Device(i)

    def device_guard_needed(self) -> bool:
        """Whether the built-in ops' generated adapters must enter ``device_guard`` per call:
        only with several visible GPUs (asked when the adapters are generated, on first cuda
        use; the visible GPUs do not change within a process). With one there is nothing to
        switch to, and the adapters skip the ``with`` (a per-call cost on every op)."""
        return self.device_count() > 1

    def guard_kernel(self, op, fn):
        """The kernel the dispatcher binds for custom op ``op`` on ``cuda`` (called when the op's
        dispatch table is built, never per call).

        With one visible GPU there is no other device to switch to: ``fn`` itself (no cost).
        With several, a wrapper that finds the cuda tensor arguments (the schema's tensor
        parameters, also inside lists, passed by position or keyword), refuses a call mixing
        ``cuda:i`` and ``cuda:j`` with a ``DispatchError`` naming both, and runs ``fn`` with the
        tensors' GPU current, like the built-in ops and ``wrap_triton`` launches: directly when
        that GPU already is CuPy's current device, else inside ``cupy.cuda.Device(i)``.
        """
        if self.device_count() < 2:
            return fn
        device_of = device_finder(op, "cuda")   # the op's cuda tensors' GPU; refuses two
        args_ = getattr(getattr(op, "schema", None), "arguments", None)

        def guarded(*args, **kwargs):
            dev = device_of(args, kwargs)
            if dev is None:
                return fn(*args, **kwargs)
            i = dev.index
            if i is None or i >= self._count:
                i = self._index(dev)
            if cupy.cuda.runtime.getDevice() == i:     # already current: nothing to switch
                return fn(*args, **kwargs)
            with cupy.cuda.Device(i):
                return fn(*args, **kwargs)

        tensorish = ("tensor", "optional_tensor", "tensor_list")
        if args_ and args_[0].kind == "tensor" and not args_[0].kwarg_only and \
                sum(a.kind in tensorish for a in args_) == 1:
            # one Tensor parameter, the first (most custom ops): read it, no scan, no call
            first = args_[0].name

            def guarded(*args, **kwargs):  # noqa: F811 - the one-tensor case of the above
                t = args[0] if args else kwargs.get(first)
                if not isinstance(t, Tensor):   # a CuPy array has a .device too: not a tensor
                    return fn(*args, **kwargs)
                d = t.raw_device
                if d.type != "cuda":
                    return fn(*args, **kwargs)
                i = d.index
                if i is None or i >= self._count:
                    i = self._index(d)
                if cupy.cuda.runtime.getDevice() == i:
                    return fn(*args, **kwargs)
                with cupy.cuda.Device(i):
                    return fn(*args, **kwargs)
        guarded.__wrapped__ = fn
        guarded.__name__ = getattr(fn, "__name__", "kernel")
        return guarded

    def align_device(self, t, device, api: str):
        """Called by the generated adapter when a tensor argument ``t`` is not on ``device`` (the
        first tensor argument's). A 0-dim cpu tensor is copied to ``device`` (torch lets cpu
        scalars join any device); anything else is a ``DispatchError`` naming both devices."""
        if t.raw_device.type == "cpu" and not t.raw_shape:
            with self.device_guard(device):
                return self.wrap(cupy.asarray(t.backend.to_host(t.native)), device)
        raise DispatchError(
            f"{api}: expected all tensors on one device, found tensors on {device} and "
            f"{t.raw_device}. Move them with .to({str(device)!r}) first.")

    # -- dtypes ---------------------------------------------------------------------------------
    def kernels(self) -> dict:
        """The reference kernels on CuPy, bf16-correct once bf16 is in use (float32 opmath),
        with the elementwise ops' large-tensor path on generated Triton kernels (``eager``) and
        the dim reductions' (``reduce``)."""
        if self._kernels is None:
            k = super().kernels()   # the reference kernels bound to xp
            if self._lowp_enabled:
                k = lowp.wrap_kernels(k, self)
            # sum/mean/amax/amin along dims: generated kernels, one driver launch (``reduce``);
            # clone as one memcpy (``clone``)
            k = _clone.accelerate(_reduce.accelerate(_eager.accelerate(k, self), self), cupy,
                                 self)
            # tp::empty / tp::full: with one GPU, allocated in the kernel itself
            own = self._allocation_kernels()
            if own is not None:
                k.update(own)
            self._kernels = k
        return self._kernels

    def fuse_elementwise(self, expr):
        """``tensorplay.compile``'s fuser on cuda: one generated Triton kernel per chain when
        tensorplay-triton is installed (``triton_fusion``), else one ``cupy.ElementwiseKernel``
        (``cupy_fusion``); per call, whatever the Triton generator declines (dtypes, layout) runs
        on the CuPy fuser, and what that declines on the reference kernels (generic fuser).

        Returns ``run(arrays) -> list of arrays`` with these attributes:

        * ``engine``: the fuser chosen for the chain when it was fused -- ``"triton"`` (one
          generated Triton kernel), ``"cupy"`` (one CuPy ``ElementwiseKernel``) or ``"generic"``
          (the reference kernels op by op, no single kernel);
        * ``last_engine``: the one that ran the most recent call (``None`` before the first):
          differs from ``engine`` when that call fell back (dtypes or layout the Triton
          generator declines, a Triton compile/launch failure);
        * ``triton`` (the ``TritonChain`` or None) and ``cupy`` (the CuPy fuser or None).
        """
        from tensorplay.backends import generic_fuser

        from .cupy_fusion import cupy_fuser
        from .triton_rows import is_row_expr
        if is_row_expr(expr):
            return self._fuse_rows(expr)
        tc = None
        if _eager.triton_available():
            from .triton_fusion import TritonChain, Unsupported
            try:
                tc = TritonChain(expr, self)
            except Unsupported:
                tc = None
        cf = cupy_fuser(expr, self)
        gf = generic_fuser(expr, self)

        def run(arrays):
            if tc is not None:
                r = _eager.run_chain(tc, arrays)
                if r is not None:
                    run.last_engine = "triton"
                    return r
            if cf is not None:
                run.last_engine = "cupy"
                return cf(arrays)
            run.last_engine = "generic"
            return gf(arrays)
        run.engine = "triton" if tc is not None else "cupy" if cf is not None else "generic"
        run.last_engine = None
        run.triton = tc
        run.cupy = cf
        return run

    @property
    def fuses_row_reductions(self) -> bool:
        """Chains with row reductions (``tensorplay.compile``): taken when tensorplay-triton is
        installed (``triton_rows``) and ``TENSORPLAY_CUDA_FUSE_ROWS`` is not ``0``."""
        return _eager.triton_available() and os.environ.get("TENSORPLAY_CUDA_FUSE_ROWS",
                                                            "1") != "0"

    def _fuse_rows(self, expr):
        """``fuse_elementwise`` of a chain with row reductions: one ``triton_rows`` kernel per
        call, or None for a call it declines (the graph then runs the chain's ops one by one);
        ``engine``/``last_engine`` as for other chains (``"triton"``, or ``"ops"`` when the
        call ran op by op)."""
        from .triton_fusion import Unsupported
        from .triton_rows import TritonRows
        try:
            tr = TritonRows(expr, self)
        except Unsupported:
            return None

        def run(arrays):
            r = _eager.run_chain(tr, arrays)
            run.last_engine = "ops" if r is None else "triton"
            return r
        run.engine = "triton"
        run.last_engine = None
        run.triton = tr
        run.cupy = None
        return run

    # -- tensors --------------------------------------------------------------------------------
    def wrap(self, arr, device):
        """Tensor on ``device`` owning CuPy array ``arr`` (copied to a contiguous array on the
        current device if it is not contiguous: callers run under ``device_guard(device)``).
        ``cuda`` without an index takes the array's own device.

        The per-op path (every built-in's result): one test for the common case (a contiguous
        ``cupy.ndarray``, an indexed device, dtype and shape seen before), CuPy's
        ``_c_contiguous`` instead of ``flags`` (which builds an object per call), a
        ``RootStorage`` (no byte count computed per call) built in place, then
        ``tensorplay.backends.new_tensor``, the one constructor (as the core's own
        ``ArrayBackend.wrap``).
        Anything else takes ``_wrap_slow``."""
        if arr.__class__ is _ndarray and arr._c_contiguous and device.index is not None:
            shape = arr.shape
            dt = self._dtype_cache.get(arr.dtype)
            st = _CONTIG_CACHE.get(shape)
            if dt is not None and st is not None:
                s = RootStorage()
                s.root = arr
                s.version = 0
                s.backend = self
                return new_tensor(s, arr, shape, st, 0, dt, device, self)
        return self._wrap_slow(arr, device)

    def _wrap_slow(self, arr, device):
        if arr.__class__ is not _ndarray:
            if not isinstance(arr, cupy.ndarray):
                arr = cupy.asarray(arr)
        if device.index is None:
            device = Device("cuda", arr.device.id)
        if not arr._c_contiguous:
            arr = cupy.ascontiguousarray(arr)
        shape = arr.shape
        nd = arr.dtype
        dt = self._dtype_cache.get(nd)
        if dt is None:
            dt = self.dtype_of(arr)
        st = _CONTIG_CACHE.get(shape)
        if st is None:
            st = contiguous_strides_cached(shape)
        return new_tensor(Storage(arr, arr.size * nd.itemsize, self), arr, shape, st, 0, dt,
                          device, self)

    def wrap_shared(self, arr, device):
        """Tensor sharing CuPy array ``arr``'s memory (``from_dlpack``); the copy made for a
        layout a storage cannot describe (negative strides) is made on ``arr``'s own GPU."""
        with self.device_guard(device):
            return ArrayBackend.wrap_shared(self, arr, device)

    def as_strided(self, root, shape, stride, offset):
        """CuPy view of ``root``'s memory: ``shape``/``stride``/``offset`` in elements (lists or
        tuples of ints; the core has checked them against the storage).

        Where ``fresh.route`` applies, the view is made by its two steps (what
        ``cupy.ndarray(shape, dtype, memptr=, strides=)`` runs, without the constructor's
        argument handling; the dtype as ``fresh.dtype_arg`` gives it, an offset of 0 with
        ``root``'s own pointer): 2.3 -> 1.3 µs per view on a CPU host, and every ``expand`` and
        ``unsqueeze`` of a backward (``sum``'s and ``mean``'s gradients) makes one."""
        dt = root.dtype
        item = dt.itemsize
        if root.size == 0 or 0 in shape:
            with root.device:
                return cupy.empty(shape, dtype=dt)
        v = _VIEW
        if v is None:
            return cupy.ndarray(tuple(shape), dt, memptr=root.data + offset * item,
                                strides=tuple([s * item for s in stride]))
        da = _VIEW_DTYPE.get(dt)
        if da is None:
            da = _VIEW_DTYPE[dt] = _fresh.dtype_arg(v[0], v[1], _ndarray, dt)
        r = v[0](_ndarray)
        v[1](r, tuple(shape), da, root.data + offset * item if offset else root.data,
             tuple([s * item for s in stride]), "C")
        return r

    # Allocations take their device: they must land there whoever calls them (the generated
    # adapters already run under device_guard; core code such as autograd's seed gradient calls
    # these directly, and on cuda:1 with cuda:0 current would otherwise allocate on cuda:0).
    # (empty/full are every factory's and many ops' allocation: with one visible GPU, cuda:0 is
    # always current and device_guard would return its no-op, so the `with` is skipped there;
    # the native dtype is read from the cache first, as native_dtype itself would)
    def empty(self, shape, dtype, device):
        """Uninitialised array of ``shape`` on ``device``'s GPU."""
        r = self._native_cache.get(dtype)
        if r is None:
            r = self.native_dtype(dtype)
        if self._count == 1 and device.index == 0:
            return _new_array(shape, r)
        with self.device_guard(device):
            return _new_array(shape, r)

    def full(self, shape, value, dtype, device):
        """Array of ``shape`` filled with ``value`` on ``device``'s GPU."""
        r = self._native_cache.get(dtype)
        if r is None:
            r = self.native_dtype(dtype)
        if self._count == 1 and device.index == 0:
            return _fill.filled(cupy, shape, value, r)
        with self.device_guard(device):
            return _fill.filled(cupy, shape, value, r)

    # both return a fresh row-major cupy.ndarray: the core's generated adapters of tp::empty and
    # tp::full build the result tensor inline (as `wrap` would, one frame less)
    empty._tp_fresh_alloc = full._tp_fresh_alloc = True

    def _allocation_kernels(self):
        """The ``tp::empty`` / ``tp::full`` kernels on this backend (``kernels`` puts them in
        place of the reference ones, once), or None to keep those (several GPUs: the device
        decides which GPU allocates, ``empty``/``full`` above).

        With one visible GPU the allocation needs no device switch, so the kernel itself makes
        it: ``cupy.ndarray(size, native dtype)`` (what ``cupy.empty`` runs, without its frame),
        ``fill.filled`` for ``full``, the size list as the op passes it (CuPy takes any
        sequence), no ``tuple()`` and no backend method frame. An index other than 0 (refused
        by ``empty``'s guard with ``DeviceUnavailableError``) or a dtype whose native dtype is
        not cached yet (bf16's first use sets it up) goes to ``empty``/``full`` as before."""
        if self.device_count() != 1:
            return None
        native, be_empty, be_full = self._native_cache, self.empty, self.full
        new, filled, cp = _new_array, _fill.filled, cupy

        def empty(size, *, dtype, device):
            r = native.get(dtype)
            if r is not None and device.index == 0:
                return new(size, r)
            return be_empty(tuple(size), dtype, device)

        def full(size, fill_value, *, dtype, device):
            r = native.get(dtype)
            if r is not None and device.index == 0:
                return filled(cp, size, fill_value, r)
            return be_full(tuple(size), fill_value, dtype, device)
        empty._tp_fp_free = True     # as the reference kernel's mark: an allocation computes nothing
        return dict(empty=empty, full=full)

    def arange(self, start, end, step, dtype, device):
        """``[start, end)`` by ``step`` on ``device``'s GPU."""
        with self.device_guard(device):
            return cupy.arange(start, end, step, dtype=self.native_dtype(dtype))

    def assign(self, dst, src) -> None:
        """``dst[...] = src`` (broadcasting; ``dst`` a view into storage). Two row-major arrays
        of one shape and dtype on one GPU: one ``cudaMemcpyAsync`` on the current stream (a
        copy-engine transfer, recordable in a CUDA graph, and ~3x less host time than CuPy's
        elementwise copy); a row-major ``dst`` from a broadcast of its shape (a 0 stride):
        ``bcast.copy_broadcast``'s kernel; anything else: CuPy's ``dst[...] = src``."""
        if src.__class__ is _ndarray and dst.__class__ is _ndarray and dst._c_contiguous \
                and dst.shape == src.shape and dst.data.device_id == src.data.device_id:
            if src._c_contiguous and dst.dtype is src.dtype:
                n = dst.nbytes
                if n:
                    _memcpy_async(dst.data.ptr, src.data.ptr, n, _D2D,
                                  cupy.cuda.get_current_stream().ptr)
                return
            if _bcast.copy_broadcast(cupy, dst, src):
                return
        dst[...] = src

    def capture_graph(self, fn, device):
        """``fn()`` recorded as one CUDA graph on ``device`` (``tensorplay.compile(fn,
        mode="reduce-overhead")``): returns ``(result, replay)``; ``replay()`` launches the
        graph on the current stream, writing the arrays of ``result`` again.

        The recording runs on a fresh non-blocking stream in CuPy's relaxed capture mode, with
        every allocation drawn from a memory pool of its own: the arrays the recorded work uses
        (``result``'s, and the intermediates it freed during the recording) are reserved for
        the graph and never handed to other allocations while ``replay`` lives (as torch's
        private graph pools). ``RuntimeError`` (CuPy's ``CUDARuntimeError`` is one) when the
        work cannot be recorded -- a host synchronisation such as ``.item()``, or a copy to
        the host; the capture is ended and dropped then. ``replay.launches``: the graph's node
        count (``graph_nodes``; None when the driver cannot say), which ``tensorplay.compile``
        weighs against the copies a replay adds."""
        with self.device_guard(device):
            pool = cupy.cuda.MemoryPool()
            stream = cupy.cuda.Stream(non_blocking=True)
            with cupy.cuda.using_allocator(pool.malloc), stream:
                stream.begin_capture()
                try:
                    result = fn()
                except BaseException:
                    with contextlib.suppress(Exception):
                        stream.end_capture()
                    raise
                graph = stream.end_capture()
            graph.upload(cupy.cuda.get_current_stream())
        launch = graph.launch
        last = [None, 0]      # an event after the last call's work, and its stream's address

        def replay():
            launch()

        def before():
            # a call on another stream than the last one's waits for that one's work: the
            # static arrays are shared (tensorplay.compile calls these under its lock)
            ev = last[0]
            if ev is not None:
                cur = cupy.cuda.get_current_stream()
                if cur.ptr != last[1]:
                    cur.wait_event(ev)

        def after():
            cur = cupy.cuda.get_current_stream()
            ev = last[0]
            if ev is None:
                ev = last[0] = cupy.cuda.Event(disable_timing=True)
            ev.record(cur)
            last[1] = cur.ptr
        replay.before, replay.after = before, after
        replay.graph, replay.pool, replay.stream = graph, pool, stream   # kept alive with it
        # what the recording holds (tensorplay.compile drops a graph that saves no launch)
        replay.launches = graph_nodes(graph)
        return result, replay

    def data_ptr(self, arr) -> int:
        """Device address of ``arr``'s first element (an int)."""
        return int(arr.data.ptr)

    def from_host(self, obj, dtype, device):
        """CuPy array on ``device`` from nested lists, Python scalars or a numpy array (a copy)."""
        nd = self.native_dtype(dtype) if dtype is not None else None
        if numpy is not None and isinstance(obj, numpy.ndarray) and not obj.flags.c_contiguous:
            obj = numpy.ascontiguousarray(obj)
        elif nd is not None and obj.__class__ in _PY_DATA and nd.kind in "iu":
            # Python numbers into an integer dtype: torch's checked conversion on the host
            # (CuPy reads lists through NumPy, whose own conversion raises or wraps by version)
            obj = int_host_array(numpy, obj, nd)
        with self.device_guard(device):
            return cupy.array(obj, dtype=nd, copy=True)

    def to_host(self, arr):
        """numpy copy of ``arr`` (synchronizes the array's device's current stream)."""
        with arr.device:
            return cupy.asnumpy(arr)

    def from_other(self, arr, src_backend, device):
        """Native array on ``device`` with the values of ``arr`` from another device/backend.

        * ``arr`` a numpy array (cpu) -> host-to-device copy on ``device``;
        * ``arr`` a CuPy array on ``cuda:i`` -> a copy on ``cuda:j`` (event-ordered peer copy when
          i != j, a plain copy when i == j);
        * anything else exporting DLPack or ``__cuda_array_interface__`` (another library's GPU
          array) is imported zero-copy and then copied as above;
        * other backends go through the host (``src_backend.to_host``).
        """
        if isinstance(arr, cupy.ndarray):
            return self._copy_to(arr, self._index(device))
        if isinstance(arr, numpy.ndarray):
            return self.from_host(arr, None, device)
        if hasattr(arr, "__cuda_array_interface__") or (
                hasattr(arr, "__dlpack_device__") and arr.__dlpack_device__()[0] in (2, 13)):
            return self._copy_to(self.from_dlpack(arr), self._index(device))
        if src_backend is not None and src_backend is not self:
            return self.from_host(src_backend.to_host(arr), None, device)
        return self.from_host(numpy.asarray(arr), None, device)

    def _copy_to(self, arr, dst: int):
        src = arr.device.id
        if src == dst:
            with cupy.cuda.Device(dst):
                return cupy.array(arr, copy=True, order="C")
        with cupy.cuda.Device(src):
            a = cupy.ascontiguousarray(arr)
            src_stream = cupy.cuda.get_current_stream()
            ready = src_stream.record()
        with cupy.cuda.Device(dst):
            dst_stream = cupy.cuda.get_current_stream()
            dst_stream.wait_event(ready)
            out = cupy.empty(a.shape, dtype=a.dtype)
            if a.nbytes:
                out.data.copy_from_device_async(a.data, a.nbytes, dst_stream)
            done = dst_stream.record()
        with cupy.cuda.Device(src):
            # `a` may be freed and its memory reused by later work on the source stream: make
            # that work wait for the copy.
            src_stream.wait_event(done)
        return out

    def from_dlpack(self, obj):
        """Zero-copy CuPy array from a DLPack producer on a cuda device (on its own device)."""
        dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else None
        if dev is not None and dev[0] in (2, 13):
            with cupy.cuda.Device(int(dev[1])):
                return cupy.from_dlpack(obj)
        return cupy.from_dlpack(obj)

    # -- random numbers -------------------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        """Seed every GPU's generator with ``seed`` (same sequence on each device, like torch)."""
        with self._lock:
            self._seed = int(seed)
            self._rngs.clear()

    def _rng(self, device):
        i = self._index(device)
        r = self._rngs.get(i)
        if r is None:
            with self._lock, cupy.cuda.Device(i):
                r = self._rngs.get(i)
                if r is None:
                    r = cupy.random.RandomState(self._seed)
                    self._rngs[i] = r
        return r

    def _sample(self, method, shape, dtype, device):
        nd = self.native_dtype(dtype)
        rng = self._rng(device)
        with self.device_guard(device):
            if nd == numpy.float32 or nd == numpy.float64:
                return getattr(rng, method)(size=shape, dtype=nd)
            return getattr(rng, method)(size=shape, dtype=numpy.float32).astype(nd)

    def rand(self, shape, dtype, device):
        """Uniform [0, 1) samples on ``device`` from its generator."""
        return self._sample("random_sample", shape, dtype, device)

    def randn(self, shape, dtype, device):
        """Standard normal samples on ``device`` from its generator."""
        return self._sample("standard_normal", shape, dtype, device)

    # -- writes the array API lacks ---------------------------------------------------------------
    def scatter_add(self, out, dim, idx, src) -> None:
        """``out.index_add_(dim, idx, src)`` with ``cupy.add.at`` (atomic adds; repeated indices
        accumulate, as ``numpy.add.at``); ``src`` is cast to ``out``'s dtype first."""
        flat = idx.reshape(-1)
        src = src.reshape(tuple(out.shape[:dim]) + (flat.shape[0],) + tuple(out.shape[dim + 1:]))
        if src.dtype != out.dtype:
            src = src.astype(out.dtype)
        cupy.add.at(cupy.moveaxis(out, dim, 0), flat, cupy.moveaxis(src, dim, 0))


_GET_NODES: list = []      # [cuGraphGetNodes or None], looked up on the first recording


def graph_nodes(graph) -> int | None:
    """The number of nodes (kernel launches, copies, memsets) of a recorded CuPy ``Graph``, or
    None when the driver cannot say. CuPy exposes the graph's ``cudaGraph_t`` (``graph.graph``)
    but not ``cudaGraphGetNodes``; the driver's ``cuGraphGetNodes`` takes the same handle (the
    runtime's graph types are the driver's), called once per recording."""
    if not _GET_NODES:
        try:
            fn = ctypes.CDLL("libcuda.so.1").cuGraphGetNodes
            fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t))
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _GET_NODES.append(fn)
    fn = _GET_NODES[0]
    handle = getattr(graph, "graph", 0)
    if fn is None or not handle:
        return None
    n = ctypes.c_size_t(0)
    if fn(handle, None, ctypes.byref(n)) != 0:     # CUDA_SUCCESS is 0
        return None
    return int(n.value)
