"""Bounds checking of Triton kernels run through Triton's interpreter (cpu tensors).

Triton's interpreter (3.6 to 3.9) turns every ``tl.load``/``tl.store``/``tl.atomic_*`` into a
read or write of raw host memory at whatever address the kernel computed: a kernel whose mask is
missing or wrong reads past the end of its tensors silently (garbage, or a pass by chance) and
writes over other memory. Neither release checks the addresses (``InterpreterOptions.
sanitize_overflow`` is about integer overflow; Triton's ``device_assert`` needs the user to write
it). The GPU's analogue of this module is ``compute-sanitizer``.

When the check is on, every interpreted launch records its tensor arguments' allocations (the
whole storage of each: ``base .. base + nbytes``, so a view may touch its storage outside the
view, as a GPU allows) and every masked load, store and atomic (tensor descriptors, and block
pointers on 3.6, included: the interpreter lowers them to masked loads and stores) checks that
each *active* lane's ``[pointer, pointer + itemsize)`` lies inside one of them. A violation
stops the launch, before the access, with :class:`TritonBoundsError` naming the kernel (and its
source line), the program id, the access, the argument the address is nearest to, the offset in
bytes and elements from that argument's first element, and the fix (check the mask). In a kernel
that casts an integer to a pointer, an access outside every argument is then looked up among
every live tensorplay storage (a scan, once per launch, only on that path): kernels that load addresses from memory (pointer tables of
``data_ptr()`` values, as Triton's grouped-GEMM tutorial builds them) reach live tensors that are
not arguments. What it cannot see: an address inside *another* argument's or another live
tensor's storage passes (the check knows the process's tensor memory, not which tensor a pointer
was computed from).

When it is on:

* inside ``bounds_check(True)`` (``bounds_check(False)``: off), whatever the environment says;
* otherwise ``TENSORPLAY_TRITON_BOUNDS=1`` in the environment (read at the first interpreted
  launch): always; ``TENSORPLAY_TRITON_BOUNDS=0``: never (not even during checks);
* otherwise (unset), while ``tensorplay.testing`` runs checks (``opcheck``, ``tensorplay check``,
  ``check_plugin``: its ``checking()`` counter). TensorPlay's pytest plugin sets
  ``TENSORPLAY_TRITON_BOUNDS=1`` for test runs unless the variable is already set or
  ``--tensorplay-triton-bounds=off`` is given.

Cost: off, one ``wanted()`` call per interpreted launch (0.1-0.2 us against launches of
milliseconds; nothing is patched; compiled cuda launches never come here). On, a min and a max
over each memory operation's active pointers (a sorted search only when they span several
arguments): about 4-6 us per operation, where the interpreter's own masked load takes 9-26 us;
+1% to +4% on whole launches (figures in the commit that added this module).
These are Triton internals (``InterpreterBuilder.create_masked_load`` ...,
``GridExecutor._init_args_hst``, the same on 3.6 and 3.9): the versions tested are pinned in
``pyproject.toml``.
"""

from __future__ import annotations

import os
import sys
import threading
from bisect import bisect_right

import numpy as np

__all__ = ["TritonBoundsError", "bounds_check", "wanted", "install"]

_AUTO = object()
_ENV = [None]            # TENSORPLAY_TRITON_BOUNDS: None (not read yet), True, False or _AUTO
_FORCE: list = []        # the open bounds_check scopes (innermost last)
_FORCE_LOCK = threading.Lock()
_FRAME = [None]          # the allocations of the interpreted launch in progress
_MARK = "_tensorplay_bounds"


class TritonBoundsError(IndexError):
    """An interpreted Triton kernel accessed memory outside its launch's tensor arguments.

    Attributes: ``kernel`` (its name), ``argument`` (the argument nearest to the address),
    ``offset`` (bytes from that argument's first element; negative before it), ``access``
    (``"load"``, ``"store"``, ``"atomic"``). The instances raised are also Triton's
    ``triton.runtime.errors.InterpreterError`` (what an interpreted kernel's failure has been
    until now: code catching that keeps working)."""

    tensorplay_bounds_error = True     # how tensorplay.testing recognises it (no import)

    def __init__(self, message, kernel=None, argument=None, offset=None, access=None):
        super().__init__(message)
        self.error_message = message        # InterpreterError's attribute
        self.kernel = kernel
        self.argument = argument
        self.offset = offset
        self.access = access

    def __str__(self):
        return self.args[0] if self.args else ""


def _env() -> object:
    e = _ENV[0]
    if e is None:
        v = os.environ.get("TENSORPLAY_TRITON_BOUNDS", "").strip().lower()
        e = _ENV[0] = (False if v in ("0", "off", "false", "no") else
                       True if v in ("1", "on", "true", "yes") else _AUTO)
    return e


def wanted() -> bool:
    """True when the next interpreted launch is to be bounds-checked (see the module doc)."""
    if _FORCE:
        return _FORCE[-1].enabled
    e = _ENV[0]
    if e is None:
        e = _env()
    if e is not _AUTO:
        return e
    t = sys.modules.get("tensorplay.testing.opcheck")
    return t is not None and t.checking()


class bounds_check:
    """Context manager: bounds-check interpreted launches inside it (``enabled=True``) or not
    (``enabled=False``), whatever the environment says; scopes nest (the innermost wins) and are
    process-wide (every thread's launches)."""

    def __init__(self, enabled: bool = True):
        self.enabled = bool(enabled)

    def __enter__(self):
        with _FORCE_LOCK:
            _FORCE.append(self)
        return self

    def __exit__(self, *exc):
        with _FORCE_LOCK:
            for i in range(len(_FORCE) - 1, -1, -1):
                if _FORCE[i] is self:
                    del _FORCE[i]
                    break
        return False


# -- the allocations of a launch ---------------------------------------------------------------

class _Frame:
    __slots__ = ("allocs", "fn", "foreign", "hi", "his", "kernel", "live", "lo", "los")

    def __init__(self, kernel, fn, allocs):
        self.foreign = False                      # the kernel cast an integer to a pointer
        self.live = None                          # _live_spans' result, made when first needed
        self.kernel = kernel
        self.fn = fn
        self.allocs = allocs                      # [(lo, hi, name, ptr, itemsize, numel)]
        # arguments sharing a storage: one span; ints for bisect, arrays for the lane test
        self.lo, self.hi = _merged((a[0], a[1]) for a in allocs if a[1] > a[0])
        self.los, self.his = self.lo.tolist(), self.hi.tolist()


_EMPTY = np.zeros(0, dtype=np.uint64)


def _merged(spans):
    """Sorted, merged ``(lo, hi)`` spans as two uint64 arrays."""
    merged: list = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return (np.array([m[0] for m in merged], dtype=np.uint64),
            np.array([m[1] for m in merged], dtype=np.uint64))


def _live_spans(f):
    """The spans of every live tensorplay storage, found once per launch, and only when an access
    falls outside the launch's arguments of a kernel that cast an integer to a pointer: a kernel that loads addresses from memory (Triton
    tutorial 08's pointer tables: ``data_ptr()`` values in an int64 tensor) reaches tensors that
    are not its arguments, and those are live tensors the host code holds. A scan of the garbage
    collector's objects (tens of ms), never on the common path."""
    if f.live is None:
        import gc

        from tensorplay._backend import Storage
        spans = []
        for o in gc.get_objects():
            if isinstance(o, Storage):
                try:
                    lo = int(o.backend.data_ptr(o.root))
                    hi = lo + int(o.nbytes)
                except Exception:   # noqa: BLE001 - a storage without host memory (fake, cuda)
                    continue
                if hi > lo:
                    spans.append((lo, hi))
        f.live = _merged(spans)
    return f.live


def _storage_span(arg):
    """``(lo, hi)`` of the storage behind an argument the interpreter was handed, or None."""
    try:
        st = arg.untyped_storage()
    except Exception:   # noqa: BLE001 - not a tensor-like argument
        st = None
    if st is not None:
        base = int(st.data_ptr())
        arr = getattr(st, "array", None)          # tensorplay's HostStorage
        if arr is not None:
            return base, base + int(arr.nbytes)
        nb = getattr(st, "nbytes", None)          # a torch storage
        if nb is not None:
            return base, base + int(nb() if callable(nb) else nb)
    # the span the tensor itself addresses
    try:
        ptr = int(arg.data_ptr())
        item = int(arg.element_size())
        size, stride = tuple(arg.size()), tuple(arg.stride())
    except Exception:   # noqa: BLE001 - not a tensor-like argument
        return None
    if not all(size):
        return ptr, ptr
    lo = ptr + item * sum((s - 1) * st for s, st in zip(size, stride) if st < 0)
    hi = ptr + item * (1 + sum((s - 1) * st for s, st in zip(size, stride) if st > 0))
    return lo, hi


def _collect(name, arg, out, depth=0):
    if depth > 8:
        return
    if isinstance(arg, (tuple, list)):
        for i, a in enumerate(arg):
            _collect(f"{name}[{i}]", a, out, depth + 1)
        return
    base = getattr(arg, "base", None)
    if base is not None and hasattr(arg, "block_shape") and hasattr(base, "data_ptr"):
        _collect(f"{name}.base", base, out, depth + 1)      # a TensorDescriptor
        return
    if not hasattr(arg, "data_ptr"):
        return
    span = _storage_span(arg)
    if span is None:
        return
    try:
        ptr = int(arg.data_ptr())
        item = int(arg.element_size())
        numel = int(arg.numel())
    except Exception:   # noqa: BLE001
        ptr, item, numel = span[0], 1, span[1] - span[0]
    out.append((span[0], span[1], name, ptr, item, numel))


def _frame_for(executor, args_hst, kwargs_hst):
    names = list(getattr(executor, "arg_names", ()) or ())
    allocs: list = []
    for i, a in enumerate(args_hst):
        _collect(names[i] if i < len(names) else f"argument {i}", a, allocs)
    for k, a in kwargs_hst.items():
        _collect(k, a, allocs)
    fn = getattr(executor, "fn", None)
    kernel = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or "?"
    return _Frame(kernel, fn, allocs)


# -- the check ---------------------------------------------------------------------------------

_ITEM: dict = {}
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


def _itemsize(interp, ptrs) -> int:
    ty = ptrs.get_element_ty()
    n = _ITEM.get(ty)
    if n is None:
        bits = getattr(ty, "primitive_bitwidth", 8)
        n = _ITEM[ty] = max(1, int(bits) // 8)
    return n


def _check(interp, access, ptrs, mask):
    f = _FRAME[0]
    if f is None:
        return
    p = ptrs.data
    if mask is not None:
        m = mask.data
        if m.shape != p.shape:
            m = np.broadcast_to(m, p.shape)
        p = p[m]                  # (cheaper than asking m.all() first)
    if not p.size:
        return
    ty = ptrs.get_element_ty()
    item = _ITEM.get(ty)
    if item is None:
        item = _itemsize(interp, ptrs)
    # the common case in a few NumPy calls: every active lane inside one argument's storage
    i = bisect_right(f.los, int(_MIN(p))) - 1
    if i >= 0 and int(_MAX(p)) + item <= f.his[i]:
        return
    p = np.asarray(p, dtype=np.uint64).reshape(-1)
    lo, hi = f.lo, f.hi
    if lo.size:
        idx = np.searchsorted(lo, p, side="right").astype(np.int64) - 1
        ok = idx >= 0
        ok &= (p + np.uint64(item)) <= hi[np.maximum(idx, 0)]
        if ok.all():
            return
        bad = p[~ok]
    else:
        bad = p
    # a kernel that made pointers from integers (a pointer table loaded from memory) may reach
    # live tensors that are not its arguments; any other kernel gets the arguments only
    live_lo, live_hi = _live_spans(f) if f.foreign else (_EMPTY, _EMPTY)
    if live_lo.size:
        j = np.searchsorted(live_lo, bad, side="right").astype(np.int64) - 1
        inside = (j >= 0) & ((bad + np.uint64(item)) <= live_hi[np.maximum(j, 0)])
        if inside.all():
            return
        bad = bad[~inside]
    _raise(interp, f, access, int(bad[0]), int(bad.size), int(p.size), item, ptrs)


def _nearest(f, addr, item):
    best = None
    for lo, hi, name, ptr, aitem, numel in f.allocs:
        if addr < lo:
            d = lo - addr
        elif addr + item > hi:
            d = addr + item - hi
        else:
            d = 0
        if best is None or d < best[0]:
            best = (d, name, ptr, aitem, numel, lo, hi)
    return best


def _source_line(f):
    fn = f.fn
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    fname = code.co_filename
    fr = sys._getframe(2)
    while fr is not None:
        if fr.f_code.co_filename == fname:
            return f" at {os.path.basename(fname)}:{fr.f_lineno}"
        fr = fr.f_back
    return ""


def _raise(interp, f, access, addr, nbad, nactive, item, ptrs):
    try:
        elem = str(ptrs.get_element_ty())
    except Exception:   # noqa: BLE001
        elem = f"{item}-byte"
    try:
        pid = tuple(int(x) for x in interp.interpreter_builder.grid_idx)
    except Exception:   # noqa: BLE001
        pid = None
    where = _source_line(f)
    near = _nearest(f, addr, item)
    verb = {"load": "reads", "store": "writes", "atomic": "updates"}[access]
    head = (f"tensorplay-triton bounds check: kernel '{f.kernel}'{where}"
            f"{f' (program id {pid})' if pid is not None else ''}: a {access} {verb} {item} "
            f"byte(s) ({elem}) outside every tensor argument of the launch "
            f"({nbad} of {nactive} active lane(s))")
    if near is None:
        msg = (f"{head}, and the launch has no tensor argument. Check the mask: a masked "
               f"tl.load/tl.store may touch only the memory of the launch's tensor arguments.")
        raise _error_class(interp)(msg, f.kernel, None, None, access)
    _, name, ptr, aitem, numel, lo, hi = near
    off = addr - ptr
    el = off // aitem if aitem else off
    if addr >= hi:
        rel = f"{addr + item - hi} byte(s) past the end of its storage"
    elif addr < lo:
        rel = f"{lo - addr} byte(s) before the start of its storage"
    else:
        rel = "straddling the end of its storage"
    msg = (f"{head}: the address is nearest to argument '{name}' ({numel} element(s) of "
           f"{aitem} byte(s), storage {hi - lo} bytes), at byte offset {off} (element {el}) "
           f"from its first element, {rel}. Check the mask: every lane a masked "
           f"load/store/atomic leaves active must address that tensor's memory (e.g. "
           f"mask = offsets < n_elements).")
    raise _error_class(interp)(msg, f.kernel, name, off, access)


_ERR: list = []


def _error_class(interp):
    """``TritonBoundsError`` that is also Triton's ``InterpreterError`` (made once: triton is
    imported by the time a launch is checked, never by importing this module)."""
    if not _ERR:
        base = getattr(interp, "InterpreterError", None)
        if base is None or issubclass(TritonBoundsError, base):
            _ERR.append(TritonBoundsError)
        else:
            cls = type("TritonBoundsError", (TritonBoundsError, base),
                       {"__module__": __name__, "__doc__": TritonBoundsError.__doc__,
                        "__str__": TritonBoundsError.__str__})
            cls.__qualname__ = "TritonBoundsError"
            _ERR.append(cls)
    return _ERR[0]


# -- the patches (installed for one interpreted launch; see _interp.launch) --------------------

def install(p, interp) -> None:
    """Patch, for the launch whose patches are ``p`` (``_interp._Patches``), the interpreter's
    memory operations with the bounds check and its argument set-up with the recording of the
    launch's allocations. Installed once per launch (nested scopes reuse it)."""
    B = interp.InterpreterBuilder
    if getattr(B.create_masked_load, _MARK, False):
        return
    G = interp.GridExecutor
    orig_init = G._init_args_hst
    orig_call = G.__call__

    def _init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = orig_init(self, args_dev, kwargs)
        _FRAME[0] = _frame_for(self, args_hst, kwargs_hst)
        return args_hst, kwargs_hst

    def call(self, *args, **kwargs):
        prev = _FRAME[0]
        try:
            return orig_call(self, *args, **kwargs)
        except interp.InterpreterError as e:
            c = e.__cause__
            if isinstance(c, TritonBoundsError):
                # the error itself, not the interpreter's repr() of it
                raise c.with_traceback(c.__traceback__) from None
            raise
        finally:
            _FRAME[0] = prev

    load, store = B.create_masked_load, B.create_masked_store
    rmw, cas = B.create_atomic_rmw, B.create_atomic_cas

    # (the releases differ in the trailing parameters, and call some by keyword)
    def create_masked_load(self, ptrs, mask, *rest, **kw):
        _check(interp, "load", ptrs, mask)
        return load(self, ptrs, mask, *rest, **kw)

    def create_masked_store(self, ptrs, value, mask, *rest, **kw):
        _check(interp, "store", ptrs, mask)
        return store(self, ptrs, value, mask, *rest, **kw)

    def create_atomic_rmw(self, op, ptr, val, mask, *rest, **kw):
        _check(interp, "atomic", ptr, mask)
        return rmw(self, op, ptr, val, mask, *rest, **kw)

    def create_atomic_cas(self, ptr, cmp, val, *rest, **kw):
        _check(interp, "atomic", ptr, None)
        return cas(self, ptr, cmp, val, *rest, **kw)

    int_to_ptr = B.create_int_to_ptr

    def create_int_to_ptr(self, *args, **kw):
        f = _FRAME[0]
        if f is not None:
            f.foreign = True
        return int_to_ptr(self, *args, **kw)

    setattr(create_masked_load, _MARK, True)
    p.set(G, "_init_args_hst", _init_args_hst)
    p.set(G, "__call__", call)
    p.set(B, "create_masked_load", create_masked_load)
    p.set(B, "create_masked_store", create_masked_store)
    p.set(B, "create_atomic_rmw", create_atomic_rmw)
    p.set(B, "create_atomic_cas", create_atomic_cas)
    p.set(B, "create_int_to_ptr", create_int_to_ptr)
