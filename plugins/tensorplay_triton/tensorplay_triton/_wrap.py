"""``wrap_triton``: launch Triton kernels on tensorplay tensors (cuda: compiled, cpu: interpreter).

``wrap_triton(kernel)[grid](*args, **kwargs)``:

* tensorplay ``Tensor`` arguments go to compiled cuda kernels as they are (a ``Tensor`` answers
  ``data_ptr()`` and ``dtype``, all Triton's compiled path asks); for Triton's interpreter (cpu, or
  cuda with a kernel decorated under ``TRITON_INTERPRET=1``) they are adapted (``_adapters``) into
  the torch-tensor look-alike it copies through; custom launchers get them unchanged. Triton sees
  only a base pointer, so a non-contiguous tensor is taken only when its parameter is listed in
  ``strided`` or (cpu only, for now) the launch passes the tensor's strides to parameters named
  as strides that the kernel reads;
* NumPy scalars become Python ``int``/``float`` (Triton refuses NumPy scalars);
* the launch happens on the tensors' device (``cupy.cuda.Device``) and CuPy's current stream, through
  the CuPy-backed Triton driver (``_driver.install_cuda_driver``), so PyTorch is never needed;
* fake tensors (``FakeTensorMode``, ``meta``; ``t.native is None``) skip the launch: that is how a
  ``triton_op`` body doubles as its own fake kernel;
* a launch on tensors being captured by ``tensorplay.compile`` (``t.capture_info`` set) outside a
  ``triton_op`` is recorded as one graph node that launches the kernel when the graph runs, as
  torch.compile records it (``_graphlaunch``).
"""

from __future__ import annotations

import os

import numpy as np
from tensorplay._backend import _CONTIG_CACHE
from tensorplay._backend import contiguous_strides_cached as _contig_strides
from tensorplay import Tensor

from . import (
    _WRAPPERS as _CACHE,  # id(kernel) or (id(kernel), strided) -> (kernel, wrapper)
)
from . import _adapters, _cupylaunch, _driver, _interp
from ._cupylaunch import Direct as _Direct

__all__ = ["TritonKernelWrapper", "TritonLaunchError", "wrap_triton"]

_NP_GENERIC = np.generic
_DRIVER = [None]                     # the installed CupyCudaDriver
_cupy_mod = [None]


def _is_contig(t) -> bool:
    """Slow path of the contiguity check (shape not in the core's stride cache, or size-1 dims)."""
    if t.stride_tuple == _contig_strides(t.shape):
        return True
    return t.is_contiguous()


class TritonLaunchError(RuntimeError):
    """A ``wrap_triton`` launch was refused (bad argument, device, layout, or capture)."""


def _cupy():
    cp = _cupy_mod[0]
    if cp is None:
        import cupy as cp
        _cupy_mod[0] = cp
    return cp


def _triton_classes():
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction, KernelInterface
    return JITFunction, InterpretedFunction, Autotuner, KernelInterface


def _chain(kernel):
    """The kernel and the kernels it wraps (``Autotuner.fn``, ``Heuristics.fn``...)."""
    out = [kernel]
    k = kernel
    for _ in range(16):
        nxt = getattr(k, "fn", None)
        if nxt is None or not hasattr(nxt, "__getitem__") or nxt is k:
            break
        out.append(nxt)
        k = nxt
    return out


def _kernel_name(kernel) -> str:
    for k in _chain(kernel):
        fn = getattr(k, "fn", None)
        name = getattr(fn, "__name__", None) or getattr(k, "__name__", None)
        if name:
            return name
    return type(kernel).__name__


class TritonKernelWrapper:
    """A Triton kernel made launchable on tensorplay tensors (the result of ``wrap_triton``).

    ``wrapper[grid](*args, **kwargs)`` launches; ``grid`` is a tuple of up to three ints or a
    function of the meta-parameters (a dict of the bound arguments and constexprs) returning one.

    Interpreted or compiled is decided per launch, from the tensors' device: cpu tensors always run
    through Triton's interpreter, cuda tensors always run the compiled kernel -- whatever was
    imported when, with no environment variable needed. (A kernel decorated while
    ``TRITON_INTERPRET=1`` was set is an ``InterpretedFunction`` with no compiled form: it is
    interpreted on both devices, cuda memory round-tripping through the host.)

    ``wrapper.kernel`` is the original kernel; ``wrapper.interpreted`` is ``True`` for a kernel
    decorated under ``TRITON_INTERPRET=1``, ``False`` for a ``@triton.jit`` kernel (compiled on cuda,
    interpreted on cpu), ``None`` for a custom launcher (given the user's tensors as they are);
    ``wrapper.arg_names`` lists its parameters.
    """

    __slots__ = (
        "__weakref__",
        "_chain",
        "_constexpr_at",
        "_direct",
        "_fast",
        "_ki",
        "_kw_plans",
        "_run",
        "_runtime_names",
        "_tuned",
        "arg_names",
        "interpreted",
        "kernel",
        "name",
        "strided",
    )

    def __init__(self, kernel, strided=()):
        JITFunction, InterpretedFunction, Autotuner, KernelInterface = _triton_classes()
        self.kernel = kernel
        self.name = _kernel_name(kernel)
        chain = _chain(kernel)
        inner = chain[-1]
        if isinstance(inner, InterpretedFunction):
            self.interpreted = True
        elif isinstance(inner, JITFunction):
            self.interpreted = False
        else:
            self.interpreted = None          # a custom launcher: adapt by device only
        names = getattr(inner, "arg_names", None)
        self.arg_names = tuple(names) if names else ()
        unknown = [s for s in strided if s not in self.arg_names] if self.arg_names else []
        if unknown:
            raise ValueError(f"wrap_triton({self.name}): strided names {unknown} are not parameters "
                             f"of the kernel ({', '.join(self.arg_names)})")
        self.strided = frozenset(strided)
        self._chain = tuple(chain)
        self._ki = isinstance(kernel, KernelInterface)
        self._run = kernel.run if self._ki else None
        # the direct launch path (see _fast_launch) serves plain compiled @triton.jit kernels
        self._fast = type(kernel) is JITFunction
        # the CuPy launch path (see _direct_launch): specialisation key -> _cupylaunch.Direct, or
        # a _cupylaunch.TritonPath (this specialisation launches through Triton's launcher)
        self._direct = {} if self._fast and _direct_setup() else None
        # an @triton.autotune kernel over a plain @triton.jit one: its tuned configs launch
        # through the inner kernel's CuPy launch path (see _tuned_launch)
        self._tuned = None
        if type(kernel) is Autotuner and type(getattr(kernel, "fn", None)) is JITFunction and \
                _direct_setup():
            self._tuned = wrap_triton(kernel.fn)
        params = getattr(inner, "params", None) or ()
        self._runtime_names = frozenset(p.name for p in params if not p.is_constexpr)
        # positions of constexpr parameters: given by position, their value (not only its int
        # feature) selects the specialisation in _direct_launch's key
        self._constexpr_at = frozenset(i for i, p in enumerate(params) if p.is_constexpr)
        # (positional count, keyword names) -> the names _by_position moves, or None
        self._kw_plans: dict = {}
        if self.interpreted:
            # Autotuning an interpreted kernel: time it on the host (there is no device to time).
            for k in chain:
                if isinstance(k, Autotuner) and k._do_bench is None and "do_bench" not in k.__dict__:
                    k.__dict__["do_bench"] = _driver.host_do_bench

    def __repr__(self) -> str:
        mode = {True: "interpreted", False: "compiled", None: "launcher"}[self.interpreted]
        return f"<wrap_triton {self.name} ({mode})>"

    @property
    def fn(self):
        """The wrapped kernel (``torch.library.wrap_triton`` users reach for ``.fn``)."""
        return self.kernel

    def __getitem__(self, grid):
        if grid.__class__ is not tuple and not callable(grid):
            grid = self._grid_tuple(grid)
        def launch(*args, **kwargs):
            # _launch, inlined: one Python frame less per launch
            d = self._direct
            if d is not None and _FAST[0] and _CUPY_LAUNCH[0]:
                r = self._direct_launch(d, grid, args, kwargs)
                if r is not _MISS:
                    return r
            elif self._tuned is not None and _FAST[0] and _CUPY_LAUNCH[0]:
                r = self._tuned_launch(grid, args, kwargs)
                if r is not _MISS:
                    return r
            return self._launch_checked(grid, args, kwargs)
        return launch

    def _grid_tuple(self, grid):
        """``grid`` given as a list (or another sequence) of ints: the tuple Triton expects;
        anything else: ``TypeError`` naming the kernel and what a grid is."""
        try:
            t = tuple(grid)
            ok = 1 <= len(t) <= 3 and all(isinstance(g, int) and not isinstance(g, bool) for g in t)
        except TypeError:
            ok = False
        if isinstance(grid, (str, bytes)) or not ok:
            raise TypeError(f"wrap_triton({self.name})[grid]: grid must be a tuple "
                            f"of 1 to 3 ints (programs along each axis) or a function of the "
                            f"launch's meta-parameters returning one, e.g. "
                            f"lambda meta: (triton.cdiv(n, meta['BLOCK']),); got {grid!r:.60}")
        return t

    def run(self, *args, grid, warmup=False, **kwargs):
        """Same as ``self[grid](*args, **kwargs)`` (Triton's ``KernelInterface.run`` spelling)."""
        if warmup:
            return self.kernel.run(*args, grid=grid, warmup=True, **kwargs)
        return self._launch(grid, args, kwargs)

    # -- the launch path ---------------------------------------------------------------------
    def _launch(self, grid, args, kwargs):
        d = self._direct
        if d is not None and _FAST[0] and _CUPY_LAUNCH[0]:
            r = self._direct_launch(d, grid, args, kwargs)
            if r is not _MISS:
                return r
        elif self._tuned is not None and _FAST[0] and _CUPY_LAUNCH[0]:
            r = self._tuned_launch(grid, args, kwargs)
            if r is not _MISS:
                return r
        return self._launch_checked(grid, args, kwargs)

    def _tuned_launch(self, grid, args, kwargs):
        """An autotuned kernel whose config for these arguments is already chosen: what
        ``Autotuner.run`` (Triton 3.6) does then -- its cache key, ``best_config``, the config's
        keyword arguments added -- with the inner kernel launched by ``_direct_launch``. Returns
        ``_MISS`` (nothing launched) when Autotuner.run must run itself: no config chosen yet
        (benchmarking), a config pre-hook, clashing keywords."""
        at = self.kernel
        if len(at.configs) > 1:
            config = at.cache.get(_autotune_key(at, args, kwargs))
            if config is None:
                return _MISS
        else:
            config = at.configs[0]
        if config.pre_hook is not None:
            return _MISS
        # (Autotuner.run prints a config only after benchmarking, which never happens here)
        ckw = config.all_kwargs()
        if kwargs:
            for k in kwargs:
                if k in ckw:
                    return _MISS          # Autotuner.run raises: a keyword given twice
            ckw = {**kwargs, **ckw}
        inner = self._tuned
        r = inner._direct_launch(inner._direct, grid, args, ckw)
        if r is not _MISS:
            at.best_config = config
        return r

    def _launch_checked(self, grid, args, kwargs):
        # One pass: the first tensor decides the mode (device, compiled/interpreted, fake);
        # every tensor is checked against it and, for Triton's interpreter only, adapted; NumPy
        # scalars become Python scalars. The argument tuple is copied only when something changes.
        # Compiled cuda launches and custom launchers get the tensors themselves: a tensorplay
        # Tensor already answers what Triton's compiled path asks (data_ptr(), dtype).
        out = None
        dev = None
        make = None
        strided = self.strided
        for i, a in enumerate(args):
            c = a.__class__
            if c is int or c is float or c is bool:
                continue
            if isinstance(a, Tensor):              # CaptureTensor is a subclass
                if dev is None:
                    if a.native is None or a.capture_info is not None:
                        return self._no_launch(grid, args, kwargs)
                    dev = a.device
                    make = self._adapter_for(dev)
                elif a.device is not dev or a.native is None:
                    self._bad_tensor(a, i, None, dev)
                if make is _user_tensor:
                    continue
                if a.stride_tuple != _CONTIG_CACHE.get(a.shape) and not _is_contig(a) and \
                        not (strided and self._pname(i) in strided):
                    self._non_contiguous(a, self._pname(i), args, kwargs)
                if make is not _as_is:
                    if out is None:
                        out = list(args)
                    out[i] = make(a)
            elif isinstance(a, _NP_GENERIC):
                if out is None:
                    out = list(args)
                out[i] = a.item()
        if out is not None:
            args = out
        if kwargs:
            for k, a in kwargs.items():
                c = a.__class__
                if c is int or c is float or c is bool:
                    continue
                if isinstance(a, Tensor):
                    if dev is None:
                        if a.native is None or a.capture_info is not None:
                            return self._no_launch(grid, args, kwargs)
                        dev = a.device
                        make = self._adapter_for(dev)
                    elif a.device is not dev or a.native is None:
                        self._bad_tensor(a, None, k, dev)
                    if make is _user_tensor:
                        continue
                    if a.stride_tuple != _CONTIG_CACHE.get(a.shape) and not _is_contig(a) and \
                            k not in strided:
                        self._non_contiguous(a, k, args, kwargs)
                    if make is not _as_is:
                        kwargs[k] = make(a)
                elif isinstance(a, _NP_GENERIC):
                    kwargs[k] = a.item()
        if make is _as_is:
            return self._call_cuda(grid, args, kwargs, dev)
        if self.interpreted is None:           # a custom launcher: the user's tensors, no Triton
            return self.kernel[grid](*args, **kwargs)
        if dev is None and not self.interpreted:      # no tensor at all: Triton decides
            return self._call(grid, args, kwargs, dev)
        if callable(grid):
            grid = self._interpreter_grid(grid, args, kwargs)
        return self._call_interpreted(grid, args, kwargs)

    def _adapter_for(self, dev):
        if self.interpreted is None:
            return _user_tensor
        t = dev.type
        if t == "cuda":
            return _adapters.CudaInterpArg if self.interpreted else _as_is
        if t == "cpu":
            return _adapters.HostArg
        raise TritonLaunchError(
            f"wrap_triton({self.name}): tensors on device '{dev}' cannot be handed to Triton; "
            f"use cuda tensors (compiled kernels) or cpu tensors (Triton's interpreter)")

    def _interpreter_grid(self, grid, args, kwargs):
        """Triton's interpreter hands a grid function its arguments already converted to
        interpreter tensors (a scalar becomes a 1-element array, which ``int()`` refuses under
        NumPy 2); give the function the launch's own values instead, as compiled launches do."""
        given = dict(zip(self.arg_names, args))
        given.update(kwargs)

        def interpreter_grid(meta):
            m = dict(meta)
            for k, v in given.items():
                if k in m:
                    m[k] = v
            return grid(m)
        return interpreter_grid

    def _call(self, grid, args, kwargs, dev):
        if self._ki:
            if self.interpreted is False:
                _ensure_driver()
            return self._run(*args, grid=grid, warmup=False, **kwargs)
        return self.kernel[grid](*args, **kwargs)

    def _call_interpreted(self, grid, args, kwargs):
        """Triton's interpreter, whatever the kernel was decorated as (see ``_interp``)."""
        _no_torch_import()
        k = self.kernel
        if len(self._chain) == 1 and self.interpreted is False:      # a plain @triton.jit
            run = _interp.interpreted(k).run
        else:
            run = self._run
        return _interp.launch(lambda: run(*args, grid=grid, warmup=False, **kwargs), self._chain)

    def _call_cuda(self, grid, args, kwargs, dev):
        drv = _DRIVER[0]
        if drv is None or _active_driver() is not drv:
            drv = _ensure_driver()
        idx = dev.index or 0
        if drv._runtime.getDevice() != idx:
            with _cupy().cuda.Device(idx):
                return self._call(grid, args, kwargs, dev)
        if self._fast and _FAST[0]:
            return self._fast_launch(grid, args, kwargs, idx, drv)
        if self._ki:
            return self._run(*args, grid=grid, warmup=False, **kwargs)
        return self.kernel[grid](*args, **kwargs)

    def _fast_launch(self, grid, args, kwargs, idx, drv):
        """Launch an already-compiled kernel with the steps of ``JITFunction.run`` (Triton 3.6-3.9)
        that a launch from here needs: Triton's own binder and kernel cache pick the kernel, so
        the specialization is Triton's; skipped are only what is provably empty (pre-run hooks,
        launch enter/exit hooks, checked global values) and the device query (the launcher has
        just made ``idx`` current). Anything else -- first call (compile), hooks, async compile --
        goes through ``JITFunction.run`` itself. ``TENSORPLAY_TRITON_FASTPATH=0`` disables it."""
        jf = self.kernel
        k = _knobs()
        rt = k.runtime
        enter, exit_ = rt.launch_enter_hook, rt.launch_exit_hook
        if jf.pre_run_hooks or jf.used_global_vals or _hooked(enter) or _hooked(exit_) or \
                getattr(rt, "add_stages_inspection_hook", None) is not None:
            return jf.run(*args, grid=grid, warmup=False, **kwargs)
        kernel_cache, key_cache, _target, _backend, binder = jf.device_caches[idx]
        comp = k.compilation
        kwargs["debug"] = kwargs.get("debug", jf.debug) or rt.debug
        kwargs["instrumentation_mode"] = comp.instrumentation_mode
        if _FPSAN[0]:                        # Triton >= 3.9 passes this option to the binder too
            kwargs["fpsan_homomorphic_casts"] = comp.fpsan_homomorphic_casts
        bound_args, specialization, options = binder(*args, **kwargs)
        kernel = kernel_cache.get(_cache_key()(key_cache, specialization, options))
        if kernel is None or hasattr(kernel, "result"):
            return jf.run(*args, grid=grid, warmup=False, **kwargs)
        if callable(grid):
            grid = grid(bound_args)
        n = len(grid)
        # Pointers go to the launcher as ints: Triton's launcher then neither calls data_ptr()
        # again nor asks the driver to validate each address (cuPointerGetAttribute, one driver
        # call per pointer) -- both already known here (a cuda tensor, its CuPy array's address).
        vals = list(bound_args.values())
        for j, v in enumerate(vals):
            c = v.__class__
            if c is int or c is float or c is bool or v is None:
                continue
            if isinstance(v, Tensor):
                vals[j] = v.native.data.ptr
        run = kernel.run                     # loads the module on first use (sets .function)
        if _LAUNCH_DIRECT[0] and run.__class__ is drv.launcher_cls and \
                not run.global_scratch_size and not run.profile_scratch_size:
            # Triton 3.6's CudaLauncher.__call__ without its Python frame: with no scratch
            # memory to allocate it passes exactly this to the compiled launch function
            run.launch(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1,
                       drv.get_current_stream(idx), kernel.function, run.launch_cooperative_grid,
                       run.launch_pdl, None, None, kernel.packed_metadata, None, None, None, *vals)
            return kernel
        run(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1,
            drv.get_current_stream(idx), kernel.function, kernel.packed_metadata, None, None, None,
            *vals)
        return kernel

    def _direct_launch(self, d, grid, args, kwargs):
        """Compiled cuda launches of a plain ``@triton.jit`` kernel, per specialisation.

        One pass over the arguments checks them (as ``_launch_checked`` does) and derives a key
        that determines Triton's specialisation (tensor dtype and 16-byte alignment, the int
        features of ``_cupylaunch.int_feature``, scalar types, keyword constexprs and options, the
        knobs Triton folds into its options, the device). The first launch of a key goes through
        Triton (compile, cache, its launcher); later ones launch the same compiled kernel through
        CuPy (``_cupylaunch``). Returns ``_MISS`` (nothing launched) for arguments it does not
        check itself -- cpu or fake tensors, other argument kinds -- which then take the checked
        path; checked launches that need Triton's own path (hooks set, another current device,
        kernels CuPy cannot launch, empty grids) go to ``_call_cuda``.
        """
        if kwargs and not self._runtime_names.isdisjoint(kwargs):
            # runtime parameters given by keyword (tensors too: Liger-Kernel names every argument)
            # are passed by position, so the CuPy launch, which packs positions, can take them
            moved = self._by_position(len(args), kwargs)
            if moved is None:
                return _MISS
            args = (*args, *[kwargs[k] for k in moved])
            kwargs = {k: v for k, v in kwargs.items() if k not in moved}
        dev = None
        vals = None
        feats = []
        app = feats.append
        strided = self.strided
        cpos = self._constexpr_at
        for i, a in enumerate(args):
            c = a.__class__
            if i in cpos:
                # a constexpr by position: its value is compiled in (two ints of one int
                # feature, or two floats, are two kernels)
                if not (c is int or c is float or c is bool or a is None or c is str):
                    return _MISS
                app((c, a))
                continue
            if c is Tensor:
                if a.native is None or a.capture_info is not None:
                    return _MISS
                if dev is None:
                    dev = a.device
                    if dev.type != "cuda":
                        return _MISS
                elif a.device is not dev:
                    return _MISS
                if a.stride_tuple != _CONTIG_CACHE.get(a.shape) and not _is_contig(a) and \
                        not (strided and self._pname(i) in strided):
                    return _MISS
                p = a.native.data.ptr        # the address: what the CuPy launch packs
                if vals is None:
                    vals = list(args)
                vals[i] = p
                app(a.dtype)
                app(not p & 15)
            elif c is int:
                app(1 if a == 1 else (-0x80000000 <= a <= 0x7FFFFFFF, a >= 0x8000000000000000,
                                      not a & 15))        # _cupylaunch.int_feature, inlined
            elif c is float or c is bool or a is None:
                app(c)
            else:
                return _MISS
        if dev is None:
            return _MISS
        if kwargs:
            rn = self._runtime_names
            for k, v in kwargs.items():
                c = v.__class__
                if k in rn or not (c is int or c is bool or c is float or c is str or v is None):
                    return _MISS
            app(tuple(kwargs.items()))
        jf = self.kernel
        rt = _RT[0]
        app(len(args))
        app(dev.index)
        app(jf.debug)
        app(rt.debug)
        app(_COMP[0].instrumentation_mode)
        # From here on the arguments are checked: whatever cannot launch through CuPy goes to
        # _call_cuda, where _launch_checked would have sent it (its checks would pass the same).
        ent = d.get(tuple(feats))
        if ent is None:
            return self._direct_first(d, tuple(feats), grid, args, kwargs, dev)
        if ent.__class__ is not _Direct:
            return self._call_cuda(grid, args, kwargs, dev)
        # what JITFunction.run does on every launch besides launching: hooks and globals need
        # Triton's own path (it calls the hooks; it raises naming a changed global)
        if jf.pre_run_hooks:
            return self._call_cuda(grid, args, kwargs, dev)
        h = rt.launch_enter_hook
        if h is not None and (h.__class__ is not _HOOKCHAIN[0] or h.calls):
            return self._call_cuda(grid, args, kwargs, dev)
        h = rt.launch_exit_hook
        if h is not None and (h.__class__ is not _HOOKCHAIN[0] or h.calls):
            return self._call_cuda(grid, args, kwargs, dev)
        ugv = jf.used_global_vals
        if ugv:
            for (name, _), (val, globs) in ugv.items():
                if globs.get(name, _MISS) != val:
                    return self._call_cuda(grid, args, kwargs, dev)
        if _GETDEV[0]() != (dev.index or 0):
            return self._call_cuda(grid, args, kwargs, dev)      # it makes the device current
        if grid.__class__ is not tuple and callable(grid):
            grid = grid(ent.meta(args, kwargs))
        n = len(grid)
        g0 = grid[0]
        g1 = grid[1] if n > 1 else 1
        g2 = grid[2] if n > 2 else 1
        if not (0 < g0 <= 0x7FFFFFFF and 0 < g1 <= 0xFFFF and 0 < g2 <= 0xFFFF):
            # empty grids launch nothing, oversized ones fail: Triton's launcher says how
            return self._call_cuda((g0, g1, g2), args, kwargs, dev)
        ent.go(args if vals is None else vals, g0, g1, g2)
        return ent.kernel

    def _by_position(self, nargs, kwargs):
        """The keyword arguments that, moved after ``nargs`` positional ones in parameter order,
        leave no runtime parameter given by keyword: every parameter from position ``nargs`` up
        to the last runtime one named in ``kwargs`` must be named there (constexprs in between
        move too). None when there is a gap (a parameter left to its default) -- that call takes
        Triton's launcher. Cached per (``nargs``, keyword names)."""
        key = (nargs, tuple(kwargs))
        plan = self._kw_plans.get(key, _MISS)
        if plan is _MISS:
            names = self.arg_names
            rn = self._runtime_names
            last = max((i for i, name in enumerate(names) if name in rn and name in kwargs),
                       default=-1)
            plan = tuple(names[nargs:last + 1])
            if last < nargs or not all(name in kwargs for name in plan):
                plan = None
            self._kw_plans[key] = plan
        return plan

    def _direct_first(self, d, key, grid, args, kwargs, dev):
        """First launch of a specialisation: through Triton; then record how to launch it again."""
        r = self._call_cuda(grid, args, kwargs, dev)
        if _GETDEV[0] is None:
            _GETDEV[0] = _cupy().cuda.runtime.getDevice
        if len(d) < _MAX_DIRECT and key not in d:
            try:
                ent = _cupylaunch.make_direct(r, dev.index or 0, self.kernel, len(args), kwargs,
                                              _VIA[0])
            except Exception as e:  # noqa: BLE001 - Triton's launcher keeps working
                ent = _cupylaunch.TritonPath(f"{type(e).__name__}: {e}")
            d[key] = ent
        return r

    # -- fake / capture ----------------------------------------------------------------------
    def _no_launch(self, grid, args, kwargs):
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
        at = self.kernel if _is_autotuner(self.kernel) else None
        chosen, timed = _choose_untimed(at, args, kwargs, tensors) if at else (None, True)
        if any(t.capture_info is not None for t in tensors):
            # inside tensorplay.compile: one graph node that launches when the graph runs
            from ._graphlaunch import record_launch
            index = record_launch(self, grid, args, kwargs)
            if not timed:
                # a config no timing chose (cpu), or none yet (a GPU: the launch would time
                # the configs when the graph runs): host code reading best_config now pins the
                # recorded launch to the config it read, so both agree (_UntimedChoice)
                first = chosen if chosen is not None else _first_pruned(at, args, kwargs)
                ckw = _pinned_kwargs(at, first, kwargs)
                if chosen is None or ckw is not None:
                    at.best_config = _UntimedChoice(first, self.name, index, at.fn, ckw)
            return None
        real = [t for t in tensors if t.native is not None]
        if real:
            raise TritonLaunchError(
                f"wrap_triton({self.name}): fake and real tensors mixed in one launch; run the "
                f"op entirely under FakeTensorMode or entirely on real tensors")
        # fake tensors: the launch is skipped (a triton_op body as its fake kernel)

    # -- errors ------------------------------------------------------------------------------
    def _pname(self, i) -> str:
        return self.arg_names[i] if i < len(self.arg_names) else f"#{i}"

    def _bad_tensor(self, t, i, k, dev):
        name = k if k is not None else self._pname(i)
        if t.native is None or t.capture_info is not None:
            raise TritonLaunchError(
                f"wrap_triton({self.name}): argument '{name}' is a fake/captured tensor while other "
                f"arguments are real; pass tensors of one kind")
        raise TritonLaunchError(
            f"wrap_triton({self.name}): argument '{name}' is on {t.device} but earlier tensor "
            f"arguments are on {dev}; a kernel launches on one device. Move it with "
            f".to('{dev}').")

    def _body_names(self) -> frozenset:
        """The runtime (non-constexpr) parameters named as strides (``input_row_stride``,
        ``stride_am``) that the kernel's body reads, from its source (an empty set where there
        is none: a custom launcher). Cached on the kernel's source."""
        inner = self._chain[-1]
        src = getattr(inner, "src", None)
        got = _BODY_NAMES.get(src) if src is not None else frozenset()
        if got is None:
            import ast
            import textwrap
            try:
                tree = ast.parse(textwrap.dedent(src))
                fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
                read = {n.id for stmt in fn.body for n in ast.walk(stmt)
                        if isinstance(n, ast.Name)}
            except (SyntaxError, StopIteration):
                read = set()
            got = _BODY_NAMES[src] = frozenset(
                n for n in read & self._runtime_names if "stride" in n.lower())
        return got

    def _non_contiguous(self, t, name, args, kwargs):
        """A non-contiguous tensor for a parameter not listed in ``strided``: accepted when the
        launch passes the tensor's strides (every stride other than 1 of a dimension longer than
        1 is the value of a runtime int parameter named as a stride that the kernel's body
        reads: the kernel indexes with them, as the Triton tutorials' softmax and matmul do;
        torch's ``wrap_triton`` passes any pointer); refused otherwise, since a kernel given only
        the base pointer would read the wrong elements. Constexpr arguments (block sizes) and
        sizes are not strides, nor is a parameter the body never reads (Liger's kernels take
        ``W_row_stride`` and ignore it, relying on ``ensure_contiguous``)."""
        # (cpu, Triton's interpreter, only for now: the first GPU run, H100, gave a tl.dot
        # matmul on a transposed cuda view wrong by 0.47 through the compiled launch; until
        # that is understood a cuda view still needs ``strided=``)
        used = self._body_names() if t.device.type == "cpu" else frozenset()
        names = self.arg_names
        ints = {a for i, a in enumerate(args)
                if a.__class__ is int and i < len(names) and names[i] in used}
        ints.update(a for k, a in kwargs.items() if a.__class__ is int and k in used)
        need = {s for s, n in zip(t.stride(), t.shape) if n > 1 and s != 1}
        if need and need <= ints:
            return
        raise TritonLaunchError(
            f"wrap_triton({self.name}): argument '{name}' is a non-contiguous {t.device} tensor "
            f"(shape {tuple(t.shape)}, stride {tuple(t.stride())}) and the launch does not pass "
            f"its strides; Triton receives only its base pointer. Pass {name}.contiguous(), or "
            f"pass its strides to the kernel and index with them (or wrap it with "
            f"tensorplay_triton.wrap_triton(kernel, strided=[{name!r}]) when they reach it "
            f"otherwise).")



_BODY_NAMES: dict = {}               # kernel source -> its body's runtime parameter reads
_DCFG = [None]
_FAST = [os.environ.get("TENSORPLAY_TRITON_FASTPATH", "1") != "0"]
# The CuPy launch of compiled specialisations (_direct_launch): on for the Triton releases whose
# launch convention was checked on a GPU (_cupylaunch.TESTED_VERSIONS);
# TENSORPLAY_TRITON_CUPY_LAUNCH=0 keeps every launch on Triton's launcher.
_CUPY_LAUNCH = [os.environ.get("TENSORPLAY_TRITON_CUPY_LAUNCH", "1") != "0"]
_MISS = object()                     # _direct_launch: take the checked path
_MAX_DIRECT = 256                    # specialisations remembered per kernel
_RT = [None]                         # triton.knobs.runtime / .compilation, set by _direct_setup
_COMP = [None]
_HOOKCHAIN = [None]
_GETDEV = [None]                     # cupy.cuda.runtime.getDevice, set by the first cuda launch
_VIA = [_cupylaunch.CUPY]            # loads and launches for the CuPy path (tests put a recorder here)
_TRITON = {}


_FPSAN = [False]
# Triton releases whose CudaLauncher.__call__ the direct launch reproduces (read in their source:
# (grid, stream, function, cooperative, pdl, global scratch, profile scratch, metadata, launch
# metadata, hooks, args)); others go through CudaLauncher.__call__.
_DIRECT_LAUNCH_VERSIONS = ("3.6.0",)
_LAUNCH_DIRECT = [False]


def _knobs():
    k = _TRITON.get("knobs")
    if k is None:
        import triton
        from triton import knobs as k
        _TRITON["knobs"] = k
        _FPSAN[0] = hasattr(k.compilation, "fpsan_homomorphic_casts")
        _LAUNCH_DIRECT[0] = triton.__version__ in _DIRECT_LAUNCH_VERSIONS
    return k


def _direct_setup() -> bool:
    """Whether this Triton release gets the CuPy launch path; caches the knobs it reads."""
    if _RT[0] is None:
        import triton
        k = _knobs()
        if not triton.__version__.startswith(_cupylaunch.TESTED_VERSIONS):
            return False
        _HOOKCHAIN[0] = getattr(k, "HookChain", None) or type(k.runtime.launch_enter_hook)
        _COMP[0] = k.compilation
        _RT[0] = k.runtime
    return True


def _cache_key():
    f = _TRITON.get("key")
    if f is None:
        from triton.runtime.jit import compute_cache_key as f
        _TRITON["key"] = f
    return f


def _hooked(chain) -> bool:
    """True when a launch hook is set (Triton 3.6 keeps an empty ``HookChain`` otherwise)."""
    if chain is None:
        return False
    calls = getattr(chain, "calls", None)
    return True if calls is None else bool(calls)


def _active_driver():
    cfg = _DCFG[0]
    if cfg is None:
        from triton.runtime import driver as cfg
        _DCFG[0] = cfg
    return cfg._active


def _ensure_driver():
    drv = _DRIVER[0]
    if drv is None or _active_driver() is not drv:
        _no_torch_import()
        drv = _driver.install_cuda_driver()
        _DRIVER[0] = drv
    return drv


_CONTAINERS = (str, bytes, list, tuple, dict, set, frozenset)


def _user_tensor(t):
    """Custom launchers receive the user's tensors unchanged (adapters are for Triton kernels)."""
    return t


def _as_is(t):
    """Compiled cuda launches: the tensor itself (``data_ptr()``, ``dtype``), contiguity checked."""
    return t


_PRIMED = [False]


class _SpecArg:
    """A pointer-like argument for priming Triton's native argument specialisation."""

    dtype = "float32"

    def data_ptr(self) -> int:
        return 0


def _no_torch_import():
    """Keep Triton's argument specialisation from importing torch at the first launch.

    Triton's native specialisation (``native_specialize_impl``, 3.6) imports torch the first time
    it sees a pointer argument, whenever torch is installed (1-4 s, and torch then sits in
    ``sys.modules``). It remembers a failed import: so, unless torch is already imported (then the
    user uses it and nothing is lost), the first specialisation runs once here with ``import
    torch`` refused. Torch tensors launched later through Triton directly still work (as generic
    ``data_ptr`` objects).
    """
    if _PRIMED[0]:
        return
    _PRIMED[0] = True
    import sys
    if "torch" in sys.modules:
        return
    from triton.runtime import jit

    from ._torchblock import TorchBlocker
    blocker = TorchBlocker()
    sys.meta_path.insert(0, blocker)
    try:
        try:
            jit.mangle_type(_SpecArg())
        except Exception:  # noqa: BLE001, S110 - priming only; the launch itself will report
            pass
    finally:
        sys.meta_path.remove(blocker)


def _is_autotuner(kernel) -> bool:
    from triton.runtime.autotuner import Autotuner
    return isinstance(kernel, Autotuner)


def _autotune_key(at, args, kwargs):
    """The key of autotuner ``at``'s config cache (``at.cache``) for a launch, as
    ``Autotuner.run`` (Triton 3.6) computes it: the values of its ``key`` arguments, then the
    dtype of every kernel argument that has one (keywords that are not kernel arguments, such as
    a config's own, are left out)."""
    names = at.arg_names
    a = dict(zip(names, args))
    if kwargs:      # {**positional, **keywords} filtered to kernel arguments: the same order
        a.update({k: v for k, v in kwargs.items() if k in names})
    key = [a[k] for k in at.keys if k in a]
    for v in a.values():
        if hasattr(v, "dtype"):
            key.append(str(v.dtype))
    return tuple(key)


def _choose_untimed(at, args, kwargs, tensors):
    """``(config, timed)`` for a launch of autotuner ``at`` that does not run (recorded by
    ``tensorplay.compile``, or skipped on fake tensors), with ``at.best_config`` set to
    ``config`` where the real launch's choice is known without timing, so host code reading it
    after the launch (attorch's ``kernel.best_config.kwargs['BLOCK_SIZE']``) sees the config the
    launch will use. On cpu (Triton's interpreter, ``_interp._no_timing``) the first config the
    pruning keeps -- never the GPU's choice for the same key, which Triton's ``at.cache`` also
    holds (its key has no device: a cuda launch of the same kernel and size earlier in the process
    made a cpu capture read BLOCK 1024 while its launch used 64); on a GPU the config already
    timed for this key (``at.cache``), else ``(None, False)``: the launch times the configs when
    it runs. ``timed`` is False where no timing chose the config."""
    if len(at.configs) == 1:
        at.best_config = at.configs[0]
        return at.best_config, True
    if not tensors:
        return None, True
    if any(t.device.type != "cpu" for t in tensors):
        config = at.cache.get(_autotune_key(at, args, kwargs))
        if config is None:
            return None, False
        at.best_config = config
        return config, True
    at.best_config = _first_pruned(at, args, kwargs)
    return at.best_config, False


def _first_pruned(at, args, kwargs):
    """The first config of autotuner ``at`` that its pruning keeps for these arguments (what
    Triton's interpreter launches: it times nothing)."""
    saved = getattr(at, "nargs", None)
    at.nargs = dict(zip(at.arg_names, args))   # what early_config_prune receives in Autotuner.run
    try:
        return list(at.prune_configs(kwargs))[0]
    finally:
        at.nargs = saved


def _pinned_kwargs(at, config, kwargs):
    """The config's keyword arguments, to launch ``at``'s inner kernel with ``config`` as
    ``Autotuner.run`` (Triton 3.6) launches a chosen one (added to the launch's own keywords);
    None where that launch must stay the autotuner's: a config pre-hook (``Autotuner.run`` runs
    it first), a keyword given twice (``Autotuner.run`` raises), an inner kernel that is not a
    plain ``@triton.jit`` function."""
    from triton.runtime.jit import JITFunction
    if config.pre_hook is not None or type(getattr(at, "fn", None)) is not JITFunction:
        return None
    ckw = config.all_kwargs()
    return None if any(k in ckw for k in kwargs) else ckw


class _UntimedChoice:
    """``best_config`` after a launch recorded by ``tensorplay.compile`` whose config no timing
    chose: on a GPU before any config was timed for its arguments, and on cpu (where the
    interpreter's launch takes the same config anyway: one mechanism, tested without a GPU).
    Reading it (any attribute: ``.kwargs``, ``.all_kwargs()``...) answers with the first config
    the pruning keeps and pins the recorded launch to that config, launched as
    ``Autotuner.run`` (Triton 3.6) launches a chosen one (its keyword arguments added to the
    inner kernel's): what the host code read is what the graph runs. On a GPU, host code that
    never reads it leaves the launch to time the configs when the graph runs, as an eager launch
    would. ``TritonLaunchError`` on reading when the launch cannot be pinned (a config pre-hook,
    a keyword given twice, an inner kernel that is not a plain ``@triton.jit`` function)."""

    __slots__ = ("_config", "_name", "_index", "_inner", "_ckw", "_pinned")

    def __init__(self, config, name, index, inner, ckw):
        # ckw: the config's keyword arguments for the inner kernel (_pinned_kwargs), None when
        # the launch cannot be pinned
        self._config, self._name, self._index = config, name, index
        self._inner, self._ckw, self._pinned = inner, ckw, False

    def __getattr__(self, attr):
        if not self._pinned:
            self._pin()
        return getattr(self._config, attr)

    def __repr__(self) -> str:
        return repr(self._config)

    def __str__(self) -> str:
        return str(self._config)

    # comparing it is reading it too (special methods bypass __getattr__)
    def __eq__(self, other):
        if not self._pinned:
            self._pin()
        return self._config == (other._config if isinstance(other, _UntimedChoice) else other)

    def __hash__(self) -> int:
        return hash(self._config)

    def _pin(self):
        from ._graphlaunch import pin_launch
        ckw = self._ckw
        if ckw is None:
            raise TritonLaunchError(
                f"wrap_triton({self._name}): best_config was read inside tensorplay.compile "
                f"before any config was timed for these arguments on the GPU, and this launch "
                f"cannot be pinned to the config read (a config pre_hook, a keyword given twice, "
                f"or an inner kernel that is not a @triton.jit function); launch the kernel "
                f"once eagerly with arguments of these sizes before compiling")
        pin_launch(self._index, wrap_triton(self._inner), ckw)
        self._pinned = True


def wrap_triton(kernel, *, strided=()):
    """Make a Triton kernel launchable on tensorplay tensors: ``wrap_triton(k)[grid](*args)``.

    ``kernel``: a ``@triton.jit`` function (``JITFunction``, or ``InterpretedFunction`` under
    ``TRITON_INTERPRET=1``), an ``@triton.autotune``/``@triton.heuristics`` kernel, or any
    grid-indexable launcher. Idempotent: a wrapper is returned as is, and wrapping the same kernel
    again returns the same wrapper (cheap to call inside an op body on every call).

    ``strided``: names of pointer parameters that may receive non-contiguous tensors (the kernel
    then takes their strides as arguments). Any other non-contiguous cpu tensor argument
    (Triton's interpreter; on cuda ``strided`` is still needed) is taken when the launch passes
    its strides (each stride other than 1 of a dimension longer than 1
    is the value of an int parameter whose name says stride, ``input_row_stride``,
    ``stride_am``, and which the kernel's body reads, as in Triton's softmax and matmul
    tutorials), and
    otherwise the launch raises ``TritonLaunchError`` naming the parameter, on every device (cpu
    too): a kernel given only the base pointer of a view would read the wrong elements. torch's
    ``wrap_triton`` passes any tensor's pointer unchecked.

    Inside a ``tensorplay.library.triton_op`` this is the only way kernels should be launched: the
    launch is skipped on fake tensors (so the op body is its own fake kernel) and refused on tensors
    being captured by ``tensorplay.compile`` outside an op. Same as ``torch.library.wrap_triton``,
    except that tensors must be tensorplay tensors and no PyTorch is involved.

    Raises ``TypeError`` for something that is not a kernel (naming it and the fix).
    """
    # One dict look-up serves both forms: (kernel, strided names) calls are cached like plain ones.
    if strided:
        key = (id(kernel), strided if strided.__class__ is tuple else tuple(strided))
    else:
        key = id(kernel)
    e = _CACHE.get(key)
    if e is not None and e[0] is kernel:
        return e[1]
    if isinstance(kernel, TritonKernelWrapper):
        w = kernel
        if strided and frozenset(strided) != kernel.strided:
            w = TritonKernelWrapper(kernel.kernel, tuple(strided))
        _CACHE[key] = (kernel, w)
        return w
    if isinstance(kernel, _CONTAINERS) or not hasattr(type(kernel), "__getitem__"):
        what = getattr(kernel, "__name__", None) or type(kernel).__name__
        hint = (" (a plain Python function: decorate it with @triton.jit)"
                if callable(kernel) else "")
        raise TypeError(f"wrap_triton: expected a Triton kernel (@triton.jit / @triton.autotune "
                        f"result) or a grid-indexable launcher, got {what!r}{hint}")
    w = TritonKernelWrapper(kernel, tuple(strided))
    _CACHE[key] = (kernel, w)
    return w
