"""The operator registry: ONE record (``CustomOpDef``) per operator.

A record holds the schema, the kernels by device type, the device-agnostic kernel, the fake
kernel, the autograd formula, where the op was defined, and its version. Whenever any of those
change, the record rebuilds its *dispatch table* (dispatch key -> callable) once; the per-call path
(``_dispatch``) is then a plain dict lookup. Dispatch keys are strings:

========== ==========================================================================
key        meaning
========== ==========================================================================
``cpu``..  a concrete device type: enabled concrete kernel, else the device-agnostic one
``meta``   fake (metadata-only) tensors: the fake kernel
``autograd`` some input requires grad: the autograd wrapper, which redispatches below itself
``capture`` ``tensorplay.compile`` is recording: the op becomes a graph node
========== ==========================================================================

Registrations return handles (``RegistrationHandle``) whose ``destroy()`` undoes them; ``Library``
objects collect handles so that closing the library undoes its registrations.
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Generic, NamedTuple, ParamSpec, TypeVar, overload

from . import _devices, _dispatch
from .errors import DispatchError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from typing import TypeAlias

    from ._device import Device

    DeviceTypes: TypeAlias = "str | Device | Iterable[str | Device] | None"

# CustomOpDef[_P, _R]: the parameters and return type of the function an op was made from
_P = ParamSpec("_P")
_R = TypeVar("_R")
_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["CustomOpDef", "OpDef", "Kernel", "lookup", "all_ops", "RegistrationHandle",
           "DEFAULT"]

DEFAULT = "default"   # the device-agnostic slot (CompositeExplicitAutograd / CompositeImplicitAutograd)

_lock = threading.RLock()   # registrations from several threads; calls never take it
_OPS: dict[str, "CustomOpDef"] = {}
_KNOWN_DEVICE_TYPES = _devices.KNOWN_TYPES   # one shared set

RESERVED_NAMESPACE = "tp"   # built-in operators: provided by the core and device plugins only


def reserved_error(api: str, what: str) -> ValueError:
    """The ``ValueError`` for a user-facing registration touching the built-in namespace."""
    return ValueError(
        f"{api}: {what} is reserved: built-in operators ('{RESERVED_NAMESPACE}::') and their "
        f"kernels, fake rules and autograd formulas are provided by the tensorplay core and the "
        f"device plugins, and cannot be defined or overridden through tensorplay.library. "
        f"Define your own operator in your own namespace instead (e.g. 'mylib::op').")


def check_not_builtin(op, api: str) -> None:
    """Refuse a user registration on a built-in op, or on a handle whose op was redefined
    (registration time only)."""
    if op.is_builtin or op.namespace == RESERVED_NAMESPACE:
        raise reserved_error(api, f"{op.name!r} is a built-in operator; it")
    new = getattr(op, "_replaced_by", None)
    if new is not None:
        raise RuntimeError(
            f"{api}: this handle is a replaced definition of {op.name!r} (from "
            f"{getattr(op, '_where', '?')}); the op was redefined at "
            f"{getattr(new, '_where', '?')}. Calls of this handle run the current definition, "
            f"but registrations must go to it: use the new handle, or tensorplay.ops."
            f"{op.namespace}.{op._opname}, or tensorplay.library.register_*({op.name!r}, ...).")


def forward_replaced(old, new) -> None:
    """``old`` was redefined as ``new`` (``custom_op`` from the same module): calls of the old
    handle run the current definition, as ``tensorplay.ops.ns.op`` does. The old record gets a
    class whose ``__call__`` forwards to ``new`` (definition time only: the live op's generated
    call path is untouched); ``restore_replaced`` undoes it when ``new`` is unregistered."""
    old._replaced_by = new
    live = type(old)
    old._live_class = live

    def __call__(self, *args, **kwargs):
        return self._replaced_by(*args, **kwargs)
    old.__class__ = type(live.__name__, (live,), {"__call__": __call__, "_forwarding": True})


def restore_replaced(op) -> None:
    """``op`` is the current definition again: its own generated call path comes back."""
    op._replaced_by = None
    live = getattr(op, "_live_class", None)
    if live is not None:
        op.__class__ = live
        op._live_class = None

_COMPOSITE = {"compositeexplicitautograd", "compositeimplicitautograd", "default",
              "compositeexplicitautogradnonfunctional"}


def normalize_device_type(d, api: str) -> str:
    """Map every accepted device spelling to a dispatch key.

    ``"cpu"``/``"CPU"``/``Device("cpu")`` -> ``"cpu"``; ``"cuda:1"`` -> ``"cuda"``; ``None``,
    ``"default"`` and the Composite* spellings -> ``"default"``. Raises ``ValueError`` otherwise:
    for ``meta``, a non-identifier, or an unknown type (``"CUPA"``, ``"Bogus"``, ``"gpu"``;
    message lists the accepted spellings and the closest: ``_device.unknown_device_type``).
    Registration time only; the dispatch tables hold the resulting keys.
    """
    if d is None:
        return DEFAULT
    if isinstance(d, str):
        low = d.strip().lower()
        if low in _COMPOSITE:
            return DEFAULT
        t = low.partition(":")[0]
        if t == "meta":
            raise ValueError(f"{api}: {d!r} is not a kernel device; use register_fake() for "
                             f"fake/meta kernels")
        if not t.isidentifier():
            raise ValueError(f"{api}: {d!r} is not a device type; expected 'cpu', 'cuda', "
                             f"'default' or a Composite* dispatch key")
        if t not in _KNOWN_DEVICE_TYPES:   # registration time only (never on the call path)
            from ._device import unknown_device_type
            err = unknown_device_type(t, d, api, what="device type or dispatch key",
                                      extra=("default", "CompositeExplicitAutograd",
                                             "CompositeImplicitAutograd"))
            if err is not None:
                raise err
        return sys.intern(t)
    t = getattr(d, "type", None)
    if isinstance(t, str):
        return normalize_device_type(t, api)
    raise ValueError(f"{api}: {d!r} is not a device type; expected a string such as 'cpu' or 'cuda'")


def normalize_device_types(types, api: str) -> tuple[str, ...]:
    """A device spelling or an iterable of them -> tuple of dispatch keys (duplicates removed).

    ``None`` or an empty iterable -> ``("default",)``. Raises
    ``ValueError`` for an unknown spelling (:func:`normalize_device_type`) and ``TypeError`` when
    ``types`` is neither a spelling nor an iterable of them (e.g. ``3``).
    """
    if types is None or isinstance(types, str) or hasattr(types, "type"):
        return (normalize_device_type(types, api),)
    try:
        items = list(types)
    except TypeError:
        raise TypeError(f"{api}: device_types must be a device type such as 'cpu', an iterable of "
                        f"them, or None for the device-agnostic slot; got {types!r}") from None
    out = tuple(dict.fromkeys(normalize_device_type(t, api) for t in items))
    return out or (DEFAULT,)


def _where(fn) -> str:
    try:
        code = fn.__code__
        return f"{getattr(fn, '__qualname__', fn)} at {code.co_filename}:{code.co_firstlineno}"
    except AttributeError:
        return repr(fn)


class Kernel(NamedTuple):
    """One entry of an op's kernel stack for a dispatch key (same idea as torch's ``Kernel``).

    ``fn``: the callable; ``owner``: the plugin distribution that registered it, or ``None`` for
    user code and the core; ``priority``: its owner's ``TENSORPLAY_PRIORITY``. The active kernel
    is the last entry (highest priority; at equal priority the newest, except that the op's own
    plugin beats another plugin). A plain tuple underneath, so ``fn, owner, priority = entry``
    works."""

    fn: Callable[..., Any]
    owner: str | None
    priority: int


class RegistrationHandle:
    """Returned by registrations; ``destroy()`` undoes exactly that registration (idempotent)."""

    __slots__ = ("_undo", "_done")

    def __init__(self, undo):
        self._undo = undo
        self._done = False

    def destroy(self) -> None:
        """Undo the registration (the previous kernel/fake/formula becomes active again);
        calling it again does nothing."""
        if not self._done:
            self._done = True
            self._undo()


class _Table(dict):
    """Dispatch table; unknown device keys resolve to the device-agnostic kernel or raise."""

    __slots__ = ("op",)

    def __missing__(self, key):
        return self.op._missing_kernel(key)


class CustomOpDef(Generic[_P, _R]):
    """One operator: schema, kernels by device, fake kernel, autograd formula, source, version.

    Created by ``tensorplay.library.custom_op`` / ``define`` / ``triton_op`` (and for the built-in
    ``tp::`` ops by the core). Calling it dispatches on its tensor arguments' device (or on a
    ``device`` parameter when it has no tensor arguments) -- same model as ``torch.library``'s
    ``CustomOpDef``.

    Attributes: ``name`` (``"ns::op"``), ``namespace``, ``schema`` (``FunctionSchema``),
    ``mutates_args`` (tuple of parameter names), ``device_types`` (the advertisement given at
    definition), ``tags``, ``version`` (bumped on redefinition), ``is_triton``, ``kernels``.

    Calling ``op(*args, **kwargs)`` takes the op's schema signature. The device comes from every
    tensor argument (positional, keyword, lists, optionals); the enabled concrete kernel of that
    device runs, else the device-agnostic one. Raises ``DispatchError`` for tensors on different
    devices (naming them; a 0-dim cpu tensor joins any device) or no usable kernel (listing what is
    registered and how to add one), ``TypeError`` naming an argument whose value does not fit its
    tensor type, or a bad ``device`` argument.

    Known limitation: a call with the wrong number of arguments raises Python's own binding
    ``TypeError``, which counts the op itself like any method's ``self``: for a one-parameter op,
    ``op(x, y)`` says ``"ns::op() takes 2 positional arguments but 3 were given"``. The message
    comes from the generated ``__call__(__op, <params>)`` before its body runs, so it cannot be
    rewritten there; fixing it would need a wrapper on every call or a different ``__call__``
    signature (pinned by tests/test_dispatch.py, relied on by ``compile``), i.e. not zero-cost.
    """

    # per-op subclass sets __call__ (generated by _dispatch.make_call, with the op's own
    # parameters); type checkers see the decorated function's signature instead (ParamSpec), so
    # ``weighted_sum(x, w)`` is checked against ``weighted_sum``'s parameters and return type.
    # Declared only for type checkers: at run time the class has no __call__ of its own, so the
    # generated one is the only one on the call path.
    if TYPE_CHECKING:
        def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...

    def __init__(self, qualname: str, schema, *, mutates_args=(), device_types=(), tags=(),
                 source=None, builtin=False, is_triton=False):
        ns, _, name = qualname.partition("::")
        self.name = qualname
        self.namespace = ns
        self._opname = name
        self.schema = schema
        self.mutates_args = tuple(mutates_args)
        self.device_types = tuple(device_types)
        self.tags = tuple(tags)
        self.source = source          # "module" string of the defining module, or None
        self.plugin = None            # distribution name when defined by a plugin
        self.version = 0
        self.is_builtin = builtin
        self.is_triton = is_triton
        self._kernels: dict[str, list] = {}   # key -> stack of (fn, owner, priority); top wins
        self._disabled: dict[str, int] = {}
        self._fake = None
        self._fake_owner = None
        self._backward = None
        self._setup_context = None
        self._autograd_owner = None
        self.table = _Table()
        self.table.op = self
        self._capture_kernel = None
        self._autograd_kernel = None
        self._meta_default = None    # built-ins: their fake rule lives here
        self._param_names = tuple(a.name for a in schema.arguments)
        self._py_signature = None

    # -- introspection ---------------------------------------------------------------------
    @property
    def _qualname(self):
        return self.name

    def __repr__(self) -> str:
        return f"<tensorplay op {self.name}: {self.schema.signature_str()}>"

    @property
    def kernels(self) -> dict:
        """Registered kernels by dispatch key (``"cpu"``, ``"cuda"``, ``"default"``)."""
        return {k: v[-1][0] for k, v in self._kernels.items() if v}

    def kernel_stack(self, key: str) -> tuple[Kernel, ...]:
        """The kernels registered for dispatch key ``key`` (``"cpu"``, ``"cuda"``,
        ``"default"``), lowest first; the last one is active (unless disabled by
        ``set_kernel_enabled``). Read-only view for tools."""
        return tuple(Kernel(*e) for e in self._kernels.get(key, ()))

    def kernel_owner(self, key: str):
        """The owner (plugin distribution name, or None for user code) of the active kernel for
        dispatch key ``key``; None when there is none."""
        stack = self._kernels.get(key)
        return stack[-1][1] if stack else None

    # -- registration ----------------------------------------------------------------------
    def _add_kernel(self, key: str, fn, owner=None, priority: int = 0) -> RegistrationHandle:
        """Low-level: push ``fn`` for ``key``, owned by ``owner`` at ``priority``. The observers in
        ``kernel_checks`` may refuse it first (the plugin manager refuses two plugins claiming one
        key at one priority, naming both); the same owner replaces."""
        with _lock:
            stack = self._kernels.setdefault(key, [])
            op_owner = self.plugin
            entry = Kernel(fn, owner, priority)
            # whoever sets owners (the plugin manager) checks conflicts between them: an observer
            # raises to refuse the registration, before anything changes
            for check in kernel_checks:
                check(self, key, entry, tuple(stack))
            # The same owner replaces: the new entry goes on top and the one it shadows stays
            # below, so undoing the new registration (a closed Library, a plugin rolled back)
            # brings the previous kernel back, like torch's dispatcher. Re-registering the very
            # same function moves it instead of stacking a duplicate.
            stack[:] = [e for e in stack if not (e[0] is fn and e[1] == owner)]
            stack.append(entry)
            # stable: highest priority last (= active); at equal priority the op's owner beats
            # another plugin's kernel registered before it
            stack.sort(key=lambda e: (e[2], not (e[1] is not None and e[1] != op_owner)))
            if key not in ("default",):
                _KNOWN_DEVICE_TYPES.add(key)
            self._rebuild()

        def undo():
            with _lock:
                st = self._kernels.get(key, [])
                # a lazy stand-in (entry-point kernel) is replaced in the stack by the entry of
                # the real kernel once imported; undoing the registration removes that one too
                resolved = getattr(fn, "_tensorplay_resolved", None)
                st[:] = [e for e in st if e is not entry and e is not resolved]
                self._rebuild()
        return _record(RegistrationHandle(undo))

    def _push_setting(self, attr: str, fields: tuple, values: tuple) -> RegistrationHandle:
        """Register one fake kernel / autograd formula (``values`` for the attributes ``fields``).

        Registrations stack: the newest is active, and undoing any one of them (in any order)
        leaves the newest remaining one active, or the value found before the first registration
        (a built-in's formula) when none remains.
        """
        with _lock:
            regs = self.__dict__.setdefault(attr, [])
            if not regs:
                self.__dict__[attr + "_base"] = tuple(getattr(self, f) for f in fields)
            entry = tuple(values)
            regs.append(entry)
            for f, v in zip(fields, entry, strict=True):
                setattr(self, f, v)
            self._rebuild()

        def undo():
            with _lock:
                regs[:] = [e for e in regs if e is not entry]
                top = regs[-1] if regs else self.__dict__[attr + "_base"]
                for f, v in zip(fields, top, strict=True):
                    setattr(self, f, v)
                self._rebuild()
        return _record(RegistrationHandle(undo))

    def _set_fake(self, fn, owner=None) -> RegistrationHandle:
        return self._push_setting("_fake_regs", ("_fake", "_fake_owner"), (fn, owner))

    def _set_autograd(self, backward, setup_context, owner=None) -> RegistrationHandle:
        return self._push_setting("_autograd_regs",
                                  ("_backward", "_setup_context", "_autograd_owner"),
                                  (backward, setup_context, owner))

    def _rebuild(self) -> None:
        """Recompute the dispatch table from the registrations (never on the call path)."""
        t = _Table()
        t.op = self
        default = self._active(DEFAULT)
        for key in list(self._kernels):
            if key == DEFAULT:
                continue
            k = self._active(key)
            if k is not None:
                # a device backend may bind a custom op's kernel to the tensors' device (cuda:N)
                be = _devices.loaded.get(key) if not self.is_builtin else None
                if be is not None:
                    k = be.guard_kernel(self, k)
                t[key] = k
            elif default is not None:
                t[key] = default
        if default is not None:
            t[DEFAULT] = default
        t["meta"] = _dispatch.make_fake_entry(self)
        t["autograd"] = _dispatch.make_autograd_entry(self)
        t["capture"] = _dispatch.make_capture_entry(self)
        # Update in place: generated __call__ functions hold this very dict. Never clear() first:
        # a call on another thread between clear() and update() would find no kernel. One
        # C-level update (str keys: atomic under the GIL), then drop keys no longer registered.
        table = self.table
        table.update(t)
        for key in [k for k in table if k not in t]:
            table.pop(key, None)

    def _active(self, key: str):
        if self._disabled.get(key):
            return None
        stack = self._kernels.get(key)
        if stack:
            return stack[-1][0]
        return None

    def _missing_kernel(self, key):
        if key == DEFAULT:
            return self._raise_missing(key)
        if key not in _devices.loaded and key != "meta":
            # first use of a device: load its backend (binds built-in kernels), then retry
            try:
                _devices.load(key)
            except Exception:   # noqa: BLE001 - device unusable: the op's own error says more
                if self.is_builtin:
                    raise
            if key in self.table:
                return self.table[key]
        default = self._active(DEFAULT)
        if default is not None:
            if key != "meta":
                # remember the fallback so later calls hit the dict (the next _rebuild clears it)
                with _lock:
                    if self._active(DEFAULT) is default and self._active(key) is None:
                        self.table[key] = default
            return default
        return self._raise_missing(key)

    def _raise_missing(self, key):
        registered = sorted(k for k in self._kernels if self._kernels[k])
        if key == DEFAULT:
            raise DispatchError(
                f"{self._api()}: no device-agnostic kernel registered, and a call without tensor "
                f"arguments or a 'device' parameter cannot pick a device (registered: "
                f"{', '.join(registered) or 'none'}). Register one with "
                f"{self._opname}.register_kernel(None) or tensorplay.library.impl({self.name!r}, "
                f"'CompositeExplicitAutograd', fn).")
        hint = _devices.device_hint(key)
        disabled = " (a kernel is registered but disabled by set_kernel_enabled)" \
            if self._kernels.get(key) and self._disabled.get(key) else ""
        raise DispatchError(
            f"{self._api()}: no kernel for device '{key}'{disabled} (registered: "
            f"{', '.join(registered) or 'none'}). {hint}Register one with "
            f"{self._opname}.register_kernel({key!r}) or tensorplay.library.impl("
            f"{self.name!r}, {key!r}, fn).")

    def _api(self) -> str:
        return f"custom_op({self.name!r})" if not self.is_builtin else self.name

    # -- public API (same names and semantics as torch.library's CustomOpDef) ----------------
    @overload
    def register_kernel(self, device_types: DeviceTypes, fn: None = None, /, *, _owner: Any = None,
                        _priority: int = 0, _lib: Any = None) -> Callable[[_F], _F]: ...

    @overload
    def register_kernel(self, device_types: DeviceTypes, fn: _F, /, *, _owner: Any = None,
                        _priority: int = 0, _lib: Any = None) -> _F: ...

    def register_kernel(self, device_types, fn=None, /, *, _owner=None, _priority=0, _lib=None):
        """Register ``fn`` as the kernel of this op for ``device_types``.

        ``device_types``: ``"cpu"``, ``"cuda"``, a list of them, or ``None``/``"default"``/a
        Composite* spelling for the device-agnostic slot. Usable as a decorator when ``fn`` is
        omitted. ``fn`` must accept the op's parameters (checked now; ``ValueError`` naming the
        missing parameter otherwise). Re-registering for the same device replaces the kernel
        (undoing the newer registration, e.g. by closing its ``Library``, brings the older one
        back). A concrete device on an op with neither tensor arguments nor a ``device`` parameter
        is refused (``ValueError``: no call could reach it). Returns ``fn``. Same as
        ``torch.library.CustomOpDef.register_kernel``.
        """
        api = f"register_kernel({self.name!r})"
        check_not_builtin(self, api)
        keys = normalize_device_types(device_types, api)
        if not self.is_builtin:
            check_dispatchable(self.schema, keys, api)

        def inner(f):
            _check_binds(self, f, "kernel", "register_kernel")
            handles = []
            try:
                for key in keys:
                    owner = _owner or _current_owner()
                    handles.append(self._add_kernel(key, f, owner,
                                                    _priority or _owner_priority(owner)))
            except BaseException:
                for h in handles:
                    h.destroy()
                raise
            if _lib is not None:
                _lib._handles.extend(handles)
            return f
        return inner if fn is None else inner(fn)

    @overload
    def register_fake(self, fn: None = None, /, *, _lib: Any = None,
                      _owner: Any = None) -> Callable[[_F], _F]: ...

    @overload
    def register_fake(self, fn: _F, /, *, _lib: Any = None, _owner: Any = None) -> _F: ...

    def register_fake(self, fn=None, /, *, _lib=None, _owner=None):
        """Register the fake (meta) kernel: given fake tensors, return fake outputs with the right
        shape, dtype, device and strides (tensors have no data). Same as
        ``torch.library.register_fake``. Decorator or direct call; the signature must accept the
        op's parameters (``ValueError`` otherwise, naming the missing parameter). Built-in ``tp::`` ops refuse it
        (``ValueError``: their fake rules come from the core, as torch refuses aten ops)."""
        check_not_builtin(self, f"register_fake({self.name!r})")

        def inner(f):
            _check_binds(self, f, "fake kernel", "register_fake")
            h = self._set_fake(f, _owner or _current_owner())
            if _lib is not None:
                _lib._handles.append(h)
            return f
        return inner if fn is None else inner(fn)

    @overload
    def register_autograd(self, backward: None = None, /, *,
                          setup_context: Callable[..., Any] | None = None, _lib: Any = None,
                          _owner: Any = None) -> Callable[[_F], _F]: ...

    @overload
    def register_autograd(self, backward: _F, /, *,
                          setup_context: Callable[..., Any] | None = None, _lib: Any = None,
                          _owner: Any = None) -> _F: ...

    def register_autograd(self, backward=None, /, *, setup_context=None, _lib=None, _owner=None):
        """Register an explicit backward formula (same as ``torch.library.register_autograd``).

        ``setup_context(ctx, inputs, output)`` saves what backward needs (``ctx.save_for_backward``);
        ``backward(ctx, *grads)`` returns one gradient per op input (``None`` for non-differentiable
        ones). torch's ``setup_context(ctx, inputs, keyword_only_inputs, output)`` works too:
        ``inputs`` are then the positional inputs, ``keyword_only_inputs`` a dict of the others,
        and ``backward`` may leave out gradients for trailing keyword-only non-tensor arguments. Without a formula, a kernel written with tensorplay ops is differentiated through its
        body (CompositeImplicitAutograd semantics). With ``backward`` omitted it is a decorator
        (directly or as a decorator). Returns ``backward``.

        Raises ``ValueError`` when ``backward`` or ``setup_context`` is not callable,
        ``setup_context`` takes neither form, or the op mutates its inputs (same
        rule as torch: a mutating op cannot have a formula).
        """
        api = f"register_autograd({self.name!r})"
        check_not_builtin(self, api)
        if self.mutates_args and not self.is_builtin:
            raise ValueError(f"{api}: an op that mutates its inputs ({', '.join(self.mutates_args)}) "
                             f"cannot have an autograd formula (same rule as torch.library)")
        if backward is None:
            return lambda fn: self.register_autograd(fn, setup_context=setup_context, _lib=_lib,
                                                     _owner=_owner)
        if not callable(backward):
            raise ValueError(f"{api}: backward must be callable, got {backward!r}")
        if setup_context is not None:
            if not callable(setup_context):
                raise ValueError(f"{api}: setup_context must be callable, got {setup_context!r}")
            from .autograd.function import setup_context_form
            if not setup_context_form(setup_context):   # torch's 4-argument form too
                raise ValueError(f"{api}: setup_context {_where(setup_context)} must take "
                                 f"(ctx, inputs, output) or (ctx, inputs, keyword_only_inputs, "
                                 f"output)")
        h = self._set_autograd(backward, setup_context, _owner or _current_owner())
        if _lib is not None:
            _lib._handles.append(h)
        return backward

    def set_kernel_enabled(self, device_type: str | Device, enabled: bool = True) -> _KernelEnabled:
        """Disable or re-enable the concrete kernel for ``device_type`` inside a ``with`` block.

        ``device_type``: any device spelling (``"cpu"``, ``"CUDA"``, ``tensorplay.device``). While
        disabled, the kernel counts as absent: calls on that device fall back to the
        device-agnostic kernel (``DispatchError`` saying it is disabled when there is none) and
        ``get_kernel`` raises ``LookupError``. The change is made on ``__enter__`` and the state
        found then is restored on ``__exit__`` (also on an exception), so blocks nest. Same as
        ``torch.library.CustomOpDef.set_kernel_enabled``; ``ValueError`` for a bad spelling::

            with op.set_kernel_enabled("cpu", False):
                op(x)   # runs the device-agnostic kernel
        """
        check_not_builtin(self, f"set_kernel_enabled({self.name!r})")
        key = normalize_device_type(device_type, f"set_kernel_enabled({self.name!r})")
        return _KernelEnabled(self, key, enabled)

    # functional alias used by torch users
    def _opoverload(self):
        return self

    @property
    def default(self):
        """The op itself: ``tensorplay.ops.ns.op.default`` resolves as torch's overload packet
        (``torch.ops.ns.op.default``) does."""
        return self


OpDef = CustomOpDef


class _KernelEnabled:
    """Context manager returned by ``CustomOpDef.set_kernel_enabled``.

    Like torch's (a ``contextlib.contextmanager``), nothing changes until ``__enter__``; ``__exit__``
    restores the state found on entry, so blocks nest. Reusable (one saved state per entry).
    """

    def __init__(self, op, key, enabled):
        self.op, self.key, self.enabled = op, key, bool(enabled)
        self._saved: list = []

    def __enter__(self):
        op, key = self.op, self.key
        with _lock:
            prev = op._disabled.get(key, 0)
            self._saved.append(prev)
            op._disabled[key] = 0 if self.enabled else 1
            op._rebuild()
        return self

    def __exit__(self, *exc):
        op, key = self.op, self.key
        with _lock:
            prev = self._saved.pop()
            if prev:
                op._disabled[key] = prev
            else:
                op._disabled.pop(key, None)
            op._rebuild()
        return False


# Owners. Whoever runs third-party code that registers (the plugin manager, while a plugin's
# module and hooks run) pushes an ``Owner`` here, so registrations record who made them and at
# which priority, and keeps every handle made meanwhile in _undo_log so a failing plugin is rolled
# back whole. The registry never asks anyone about owners: what it needs travels with them.
_owner_stack: list = []
_undo_log: list = []

# Observers (subscribed by the layers above; called at registration time only, never per call):
# ``kernel_checks``: ``check(op, key, new Kernel, current stack)`` before a kernel is pushed; it
# raises to refuse the registration (the plugin manager's conflict rules).
# ``lookup_misses``: ``observer(qualname)`` when ``lookup`` finds no op; an observer may define it
# (the plugin manager finishes loading plugins still pending) and ``lookup`` looks again.
kernel_checks: list = []
lookup_misses: list = []


class Owner:
    """Who registers: ``name`` (a plugin distribution name, recorded in each ``Kernel``) and
    ``priority`` (its ``TENSORPLAY_PRIORITY``; a subclass may compute it, e.g. from a plugin
    module that is still being imported). Pushed on ``_owner_stack`` by the plugin manager."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @property
    def priority(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"<tensorplay owner {self.name}>"


def _record(h: RegistrationHandle) -> RegistrationHandle:
    if _owner_stack:
        _undo_log.append(h)
    return h


def _current_owner():
    """The name of the owner registering now (a plugin distribution), ``None`` for user code."""
    return _owner_stack[-1].name if _owner_stack else None


def _owner_priority(name) -> int:
    """The priority of owner ``name`` when it is registering now (innermost first), else 0."""
    for o in reversed(_owner_stack):
        if o.name == name:
            return o.priority
    return 0


def _check_binds(op, fn, what: str, api: str) -> None:
    if not callable(fn):
        raise ValueError(f"{api}({op.name!r}): expected a callable {what}, got {fn!r}")
    from ._schema import bind_check
    bind_check(fn, op.schema, what=what, api=f"{api}({op.name!r})")


def lookup(qualname: str) -> CustomOpDef:
    """The op registered as ``qualname`` (``"ns::op"``); ``LookupError`` naming it otherwise."""
    op = _OPS.get(qualname)
    if op is None:
        for observer in lookup_misses:   # e.g. a plugin imported before tensorplay still pending
            observer(qualname)
        op = _OPS.get(qualname)
    if op is None:
        raise LookupError(f"no operator named {qualname!r} is registered (known namespaces: "
                          f"{', '.join(sorted({o.namespace for o in _OPS.values()})) or 'none'})")
    return op


def all_ops() -> list:
    """Every registered op, sorted by name."""
    return [_OPS[k] for k in sorted(_OPS)]


def register_op(op: CustomOpDef, *, replace_ok_from=None) -> CustomOpDef:
    """Insert ``op`` into the registry under ``op.name`` (the path of ``custom_op``/``define``).

    An op already registered under that name is remembered in ``op._previous``, so that
    :func:`unregister_op` (a failed definition, a closed ``Library``, a plugin rolled back) puts
    it back instead of leaving the name empty.
    """
    with _lock:
        prev = _OPS.get(op.name)
        if prev is not None and prev is not op:
            op._previous = prev
        _OPS[op.name] = op
        op._rebuild()
    return op


def unregister_op(op: CustomOpDef) -> None:
    """Remove ``op`` from the registry, restoring the definition it replaced (if any).

    Undos may come in any order: an op removed while it is not the current definition is cut out
    of the chain of replaced definitions, so it can never come back later."""
    with _lock:
        cur = _OPS.get(op.name)
        prev = getattr(op, "_previous", None)
        if cur is op:
            if prev is not None:
                _OPS[op.name] = prev
                restore_replaced(prev)
            else:
                del _OPS[op.name]
        else:
            o = cur
            while o is not None:
                if getattr(o, "_previous", None) is op:
                    o._previous = prev
                    break
                o = getattr(o, "_previous", None)
        op._previous = None


def check_dispatchable(schema, keys, api: str) -> None:
    """Refuse a device-specific kernel on an op that no call could route to a device.

    An op with no tensor parameters dispatches on its parameter of type ``Device``; with
    neither, only the device-agnostic slot is reachable, so a kernel for a concrete device
    (``keys`` other than ``"default"``) is a ``ValueError``.
    """
    kinds = {a.kind for a in schema.arguments}
    if kinds & {"tensor", "optional_tensor", "tensor_list", "device"} or \
            any(a.name == "device" for a in schema.arguments):
        return
    concrete = [k for k in keys if k != DEFAULT]
    if concrete:
        raise ValueError(
            f"{api}: a kernel for device {', '.join(map(repr, concrete))} cannot be reached: the "
            f"op has no tensor arguments and no 'device' parameter, so a call cannot choose a "
            f"device. Add a parameter `device: tensorplay.device`, or register a device-agnostic "
            f"kernel (device_types=None).")
