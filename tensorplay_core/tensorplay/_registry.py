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

import functools
import inspect
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, NamedTuple, ParamSpec, TypeVar, overload

from . import _devices
from .errors import NoKernelError, NonFunctionalFormulaError

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
           "KernelHandle", "DEFAULT", "registered"]

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
    new = op._replaced_by
    if new is not None:
        raise RuntimeError(
            f"{api}: this handle is a replaced definition of {op.name!r} (from "
            f"{op.where}); the op was redefined at "
            f"{new.where}. Calls of this handle run the current definition, "
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
    # no __slots__ of its own would add a __dict__ (a different layout: no __class__ change);
    # signature and doc are the definition the handle runs
    old.__class__ = type(live.__name__, (live,), {
        "__call__": __call__, "__slots__": (), "__doc__": type(new).__doc__,
        "__signature__": property(lambda self: inspect.signature(self._replaced_by))})


def restore_replaced(op) -> None:
    """``op`` is the current definition again: its own generated call path comes back."""
    op._replaced_by = None
    live = op._live_class
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


def autograd_key(d, api: str) -> str | None:
    """torch's autograd dispatch keys -> the registry's autograd key: ``"Autograd"`` ->
    ``"default"`` (every device), ``"AutogradCPU"``/``"AutogradCUDA"`` -> ``"cpu"``/``"cuda"``
    (any case, as the device spellings). ``None`` when ``d`` is not an autograd key at all;
    ``ValueError`` for one naming no known device (``AutogradOther``, ``AutogradMeta``,
    ``AutogradXLA``...). Registration time only."""
    if not isinstance(d, str) or not d.strip().lower().startswith("autograd"):
        return None
    rest = d.strip()[len("autograd"):]
    if not rest:
        return DEFAULT
    t = rest.lower()
    if t in _KNOWN_DEVICE_TYPES and t != "meta":
        return sys.intern(t)
    known = ", ".join(repr(autograd_key_name(k)) for k in sorted(_KNOWN_DEVICE_TYPES - {"meta"}))
    raise ValueError(f"{api}: {d!r} is not an autograd key tensorplay knows; use 'Autograd' "
                     f"(calls on every device) or 'Autograd' followed by a device type: {known}")


_AUTOGRAD_SUFFIX = {"cpu": "CPU", "cuda": "CUDA"}


def autograd_key_name(key: str) -> str:
    """torch's name of the registry's autograd key: ``"Autograd"`` for ``"default"``,
    ``"AutogradCPU"`` for ``"cpu"``."""
    if key == DEFAULT:
        return "Autograd"
    return "Autograd" + _AUTOGRAD_SUFFIX.get(key, key.capitalize())


def _where(fn) -> str:
    try:
        code = fn.__code__
        return f"{getattr(fn, '__qualname__', fn)} at {code.co_filename}:{code.co_firstlineno}"
    except AttributeError:
        return repr(fn)


class Kernel(NamedTuple):
    """One registration in an op's stacks (same idea as torch's ``_library`` ``Kernel``).

    ``fn``: the callable (a kernel, a fake kernel, or a backward formula); ``owner``: the plugin
    distribution that registered it, or ``None`` for user code and the core; ``priority``: its
    owner's ``TENSORPLAY_PRIORITY`` (0 for user code); ``source``: where ``fn`` is defined,
    ``"module:qualname"`` (``"package.module:function"`` for a kernel named in entry-point
    metadata). Immutable; a plain tuple underneath, so ``fn, owner, priority, source = k`` works.
    In a kernel stack the active kernel is the last entry (highest priority; at equal priority
    the newest, except that the op's own plugin beats another plugin)."""

    fn: Callable[..., Any]
    owner: str | None
    priority: int
    source: str


def _source_of(fn) -> str:
    """``"module:qualname"`` of ``fn`` (its ``repr`` when it has neither, e.g. a ``partial``)."""
    mod = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return f"{mod}:{name}" if mod and name else repr(fn)


class OpName(str):
    """An operator's qualified name (``"ns::op"``, ``"ns::op.out"``): a ``str`` that is also
    callable, ``op.name() == op.name``, so ``op.name`` reads as tensorplay's field and
    ``op.name()`` as torch's ``OpOverload.name()``."""

    __slots__ = ()

    def __call__(self) -> str:
        return str.__str__(self)


# ``overloadpacket`` and a stale handle's fallback: ``tensorplay.ops``'s ``"ns::op" -> packet``
# (a packet is built above this layer); the package root installs it (``install_packet_of``)
packet_of = None


def install_packet_of(fn) -> None:
    """Install the ops layer's ``packet_of(base)`` (called once, by the package root) and make
    the default records of ops that already have named overloads see them."""
    global packet_of
    with _lock:
        packet_of = fn
        for base in list(PACKETS):
            _sync_packet_fallback(base)


class RegistrationHandle:
    """Returned by registrations; ``destroy()`` undoes exactly that registration (idempotent).
    Same role as torch's ``_library.utils.RegistrationHandle``."""

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


class KernelHandle(RegistrationHandle):
    """The handle of one entry in an op's stacks: a kernel for a dispatch key, a fake kernel or
    an autograd formula. The stack holds the handles themselves, so ``destroy()`` takes out
    exactly this entry wherever it sits now (other registrations undone before or after, in any
    order, leave it alone) and rebuilds the op's dispatch table.

    ``kernel``: the entry's ``Kernel``; ``setup_context``: the formula's ``setup_context`` (autograd
    entries only, else ``None``)."""

    __slots__ = ("op", "stack", "kernel", "setup_context")

    def __init__(self, op, stack: list, kernel: Kernel, setup_context=None):
        super().__init__(None)
        self.op, self.stack, self.kernel, self.setup_context = op, stack, kernel, setup_context

    def destroy(self) -> None:
        """Take this entry out of its stack (the next one down becomes active) and rebuild the
        op's dispatch table; calling it again does nothing."""
        with _lock:
            if not self._done:
                self._done = True
                self.stack[:] = [e for e in self.stack if e is not self]
                self.op._refresh()

    def replace(self, fn, source: str | None = None) -> None:
        """Put ``fn`` in place of this entry's function, keeping its owner, priority and place
        (a kernel named in plugin metadata once its module is imported). ``destroy()`` then
        removes ``fn``; after ``destroy()`` it does nothing (the entry is gone). Registration
        time only."""
        with _lock:
            if self._done:
                return
            self.kernel = self.kernel._replace(fn=fn, source=source or _source_of(fn))
            self.op._refresh()

    def __repr__(self) -> str:
        k = self.kernel
        return f"<registration of {k.source} on {self.op.name} (owner {k.owner})>"


# An op is called like a function, so its call goes through CPython's C call protocol: a class
# with a Python __call__ costs a method lookup and an argument tuple per call (slot_tp_call: about
# 0.1 us more than calling a function, measured on an H200 host, Python 3.12), while a subclass of
# functools.partial that does not define __call__ is called through partial's vectorcall (3.12+;
# partial's tp_call before), which hands the arguments to the stored function as they are. The
# stored function is the op's generated dispatch function (_dispatch.make_call sets it).
if TYPE_CHECKING:
    _CallBase = object          # type checkers see the op's own signature (the ParamSpec below)
else:
    _CallBase = functools.partial


def _no_call_path(*args, **kwargs):
    raise RuntimeError("this operator record has no call path yet (it is being defined)")


def set_call(op, fn, plain=None) -> None:
    """Make calling ``op`` run ``fn`` (its generated dispatch function; definition time only).

    The partial's instance dict is set (empty) because ``functools.partial(op, ...)`` flattens a
    partial without one into ``partial(fn, ...)``, which would no longer be the op: it would
    keep running ``fn`` after a redefinition. The per-op classes hide that dict again
    (``NO_INSTANCE_DICT``)."""
    functools.partial.__setstate__(op, (fn, (), None, {}))
    for cls, name in _BOUND_METHODS.get(op, ()):
        setattr(cls, name, plain or fn)    # plain: the call without out= (make_call's)


# op -> [(class, method name)]: methods that are ``op``'s generated dispatch function itself
# (``bind_methods``), re-pointed by ``set_call`` if the op's function is ever replaced
_BOUND_METHODS: dict[Any, list] = {}


def bind_methods(cls, methods: dict) -> None:
    """Make each method ``cls.<name>`` the generated dispatch function of its op (``methods``:
    name -> op), for methods whose whole body is ``return op(self, other)`` (or ``op(self)``):
    ``x * y`` then runs the op's function as the method itself, without the method's own frame
    and the op object's C-level call into the function (~1.4 k instructions of the ~13 k of a
    cpu ``x * y``). Same arguments, same result, same errors; the op's dispatch (grad mode,
    fake and capture modes, kernels registered later) runs as when the op is called.

    Raises ``TypeError`` when an op's function does not take the method's parameters (the
    tensor first, then the others under the same names, no defaults, nothing keyword-only): a
    definition-time mistake."""
    for name, op in methods.items():
        fn = type(op).__dict__.get("_plain_call") or op.func    # methods take no out=
        mine, theirs = cls.__dict__[name].__code__, fn.__code__
        params = mine.co_varnames[1:mine.co_argcount]
        if (theirs.co_varnames[1:theirs.co_argcount] != params or fn.__defaults__
                or theirs.co_kwonlyargcount or theirs.co_flags & 0x0C):  # *args, **kwargs
            raise TypeError(f"bind_methods: {cls.__name__}.{name} takes (self, "
                            f"{', '.join(params)}); {op.name}'s dispatch function takes "
                            f"{theirs.co_varnames[:theirs.co_argcount]} and more")
        with _lock:
            bound = _BOUND_METHODS.setdefault(op, [])
            if (cls, name) not in bound:
                bound.append((cls, name))
            setattr(cls, name, fn)


def _no_instance_dict(self):
    raise AttributeError(f"{type(self).__name__!r} object has no attribute '__dict__'")


# the per-op classes' ``__dict__`` (dataclass(slots=True) drops one declared in CustomOpDef's body)
NO_INSTANCE_DICT = property(_no_instance_dict)


@dataclass(slots=True, eq=False, repr=False, init=False)
class CustomOpDef(_CallBase, Generic[_P, _R]):
    """One operator: schema, kernels by device, fake kernel, autograd formula, source, version.

    Created by ``tensorplay.library.custom_op`` / ``define`` / ``triton_op`` (and for the built-in
    ``tp::`` ops by the core). Calling it dispatches on its tensor arguments' device (or on a
    ``device`` parameter when it has no tensor arguments) -- same model as ``torch.library``'s
    ``CustomOpDef``.

    A declared record: every field is listed below (setting any other attribute raises
    ``AttributeError``; there is no ``__dict__``). Read it
    through the public fields and the read API (``kernels``, ``kernel_stack``, ``kernel_stacks``,
    ``active_kernel``, ``is_kernel_enabled``, ``fake_impl``, ``has_fake``, ``backward_fn``,
    ``setup_context_fn``, ``has_autograd``, ``owner``); change it only through the registration
    methods, which return ``RegistrationHandle``s. The ``_`` fields are the registry's own state
    and what the layers building dispatch entries read once per rebuild.

    Calling ``op(*args, **kwargs)`` takes the op's schema signature. The device comes from every
    tensor argument (positional, keyword, lists, optionals); the enabled concrete kernel of that
    device runs, else the device-agnostic one. Raises ``DispatchError`` for tensors on different
    devices (naming them; a 0-dim cpu tensor joins any device) or no usable kernel (listing what is
    registered and how to add one), ``TypeError`` naming an argument whose value does not fit its
    tensor type, or a bad ``device`` argument.

    An op is a ``functools.partial`` of its generated dispatch function (``func``; ``args`` and
    ``keywords`` are empty), so calling it costs what calling a function costs. It does not bind
    as a method: an op stored as a class attribute is the op itself on an instance, as in
    Python 3.12. ``functools.partial(op, ...)`` holds the op itself (it follows a
    redefinition). ``copy.copy``/``deepcopy`` return the op itself. It pickles by name and
    schema: pickling an op that is no longer registered raises ``pickle.PicklingError``, and
    loading one whose name is now registered with another schema raises
    ``pickle.UnpicklingError`` naming both.

    A call with the wrong number of arguments raises Python's own binding ``TypeError`` naming
    the op (``"ns::op() takes 1 positional argument but 2 were given"``).
    """

    # -- identity, fixed at definition ------------------------------------------------------
    name: str                     # "ns::op", or "ns::op.overload" for a named overload
    namespace: str                # "ns"
    _opname: str                  # "op" (read through ``opname``)
    schema: Any                   # FunctionSchema
    mutates_args: tuple           # names of the parameters the op writes
    device_types: tuple           # the device advertisement given at definition
    tags: tuple                   # torch's operator tags ("pointwise", "nondeterministic_seeded")
    source: str | None            # the defining module, or None
    where: str                    # "file:line" of the definition ("?" when unknown)
    defined_by: str               # "custom_op" / "triton_op" / "define" / "Library(...)" / "core"
    is_builtin: bool              # a tp:: op provided by the core
    is_triton: bool               # made by triton_op (an opaque node for tensorplay.compile)
    owner: str | None             # plugin distribution that defined it; None for user code/core
    version: int                  # bumped when custom_op redefines the name
    __wrapped__: Callable[..., Any]   # the function custom_op made the op from (unset otherwise)
    # -- registrations: stacks of KernelHandle, newest/highest last --------------------------
    _kernels: dict                # dispatch key -> [KernelHandle]
    _disabled: dict               # dispatch key -> 1 while set_kernel_enabled(key, False) holds
    _fake_regs: list              # [KernelHandle] of register_fake
    _autograd_regs: list          # [KernelHandle] of register_autograd (with setup_context)
    _autograd_base: tuple | None  # (backward, setup) found before the first register_autograd
    # torch's Autograd / Autograd<Device> dispatch keys (Library.impl(name, fn, "Autograd")):
    # "default" (every device) or a device type -> [KernelHandle]; the top of each stack is the
    # op's autograd entry for calls that record (``_autograd_kernel_fns``)
    _autograd_kernels: dict
    # -- the active values the dispatch-entry builders read (kept by _refresh) --------------
    _fake: Callable[..., Any] | None            # active registered fake kernel
    _backward: Callable[..., Any] | None        # active backward formula
    _setup_context: Callable[..., Any] | None   # its setup_context
    _autograd_kernel_fns: dict                  # "default"/device type -> active autograd kernel
    _param_names: tuple                         # schema parameter names, in order
    # dispatch key -> callable; the same dict object forever. A plain dict (a subclass with
    # __missing__ made every call's lookup ~20 ns slower on 3.12: no specialised subscript); the
    # generated call paths send a missing key to ``entry``
    table: dict
    # -- built-in ops only (set by the op layer's defop) -------------------------------------
    _meta_default: Callable[..., Any] | None    # the built-in fake rule
    _kernel_name: str | None      # name of the array kernel in _kernels.xp
    _scalar_ok: tuple             # Tensor parameters that also take Python numbers
    _has_array_kernel: bool       # bound per device from the backend's array kernels
    # -- redefinition (custom_op from the same module) ---------------------------------------
    _previous: CustomOpDef | None     # the definition this one replaced (restored on undo)
    _replaced_by: CustomOpDef | None  # set while this definition is replaced: calls forward
    _live_class: type | None          # this op's own generated class while it forwards

    # per-op subclass sets __call__ (generated by _dispatch.make_call, with the op's own
    # parameters); type checkers see the decorated function's signature instead (ParamSpec), so
    # ``weighted_sum(x, w)`` is checked against ``weighted_sum``'s parameters and return type.
    # Declared only for type checkers: at run time the class has no __call__ of its own, so the
    # generated one is the only one on the call path.
    if TYPE_CHECKING:
        def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...

    # typing's subscription (CustomOpDef[P, R]), not partial's types.GenericAlias
    __class_getitem__ = Generic.__dict__["__class_getitem__"]

    def __new__(cls, *args, **kwargs):
        # partial's constructor wants the function now; make_call sets the real one
        return functools.partial.__new__(cls, _no_call_path)

    def __setattr__(self, name, value):
        # partial gives every instance a __dict__: refuse what the slots above do not declare
        if name not in _RECORD_ATTRS:
            what = ("is read-only" if hasattr(type(self), name) else "cannot be added")
            raise AttributeError(f"attribute {name!r} of operator record {self.name!r} {what} "
                                 f"(an operator record declares its fields; register through "
                                 f"its methods or tensorplay.library)")
        object.__setattr__(self, name, value)

    if hasattr(functools.partial, "__get__"):
        def __get__(self, obj, objtype=None):
            # not a method: partial warns (3.13) or binds as one (3.14+) when it is a class
            # attribute. Only defined there: on 3.12 and before, inspect would take a __get__
            # as a method descriptor and help(op) would show just the repr.
            return self

    def __setstate__(self, state):
        raise TypeError(f"operator record {self.name!r}: its call path is set at definition "
                        f"and not restored from state (an op pickles by name)")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        live = self
        while live._replaced_by is not None:    # a redefined handle runs (and pickles as) the new
            live = live._replaced_by
        if _OPS.get(live.name) is not live:
            import pickle
            raise pickle.PicklingError(f"operator {self.name!r} ({self.where}) is no longer "
                                       f"registered: an op pickles by name, so only a "
                                       f"registered one can be pickled")
        return (_unpickle_op, (live.name, str(live.schema)))

    def __init__(self, qualname: str, schema, *, mutates_args=(), device_types=(), tags=(),
                 source=None, builtin=False, is_triton=False, where="?", defined_by=None,
                 owner=None, version=0, builtin_fake=None, kernel_name=None, scalar_ok=(),
                 array_kernel=False, backward=None, setup_context=None):
        # builtin_fake .. setup_context: a built-in op's declaration (the op layer's defop):
        # its fake rule, array kernel name, Tensor parameters that take Python numbers, whether
        # each backend binds an array kernel, and its backward formula
        ns, _, name = qualname.partition("::")
        self.name = OpName(qualname)
        self.namespace = ns
        self._opname = name
        self.schema = schema
        self.mutates_args = tuple(mutates_args)
        self.device_types = tuple(device_types)
        self.tags = tuple(tags)
        self.source = source
        self.where = where
        self.defined_by = defined_by or ("core" if builtin else "define")
        self.is_builtin = builtin
        self.is_triton = is_triton
        self.owner = owner
        self.version = version
        self._kernels = {}
        self._disabled = {}
        self._fake_regs = []
        self._autograd_regs = []
        self._autograd_base = None
        self._autograd_kernels = {}
        self._autograd_kernel_fns = {}
        self._fake = None
        self._backward = backward
        self._setup_context = setup_context
        self._param_names = tuple(a.name for a in schema.arguments)
        self.table = {}
        self._meta_default = builtin_fake
        self._kernel_name = kernel_name
        self._scalar_ok = tuple(scalar_ok)
        self._has_array_kernel = array_kernel
        self._previous = None
        self._replaced_by = None
        self._live_class = None

    def __repr__(self) -> str:
        return f"<tensorplay op {self.name}: {self.schema.signature_str()}>"

    # -- read API (tools: the CLI, opcheck, plugin checks, the plugin platform) -------------
    @property
    def opname(self) -> str:
        """The op's name without its namespace (``"op"`` for ``"ns::op"``, ``"op.out"`` for the
        overload ``"ns::op.out"``)."""
        return self._opname

    @property
    def plugin(self) -> str | None:
        """Same as ``owner``: the plugin distribution that defined the op (``None`` for user
        code and the core)."""
        return self.owner

    @property
    def kernels(self) -> dict:
        """Registered kernels by dispatch key (``"cpu"``, ``"cuda"``, ``"default"``): the top of
        each key's stack (disabled ones included; see ``active_kernel``)."""
        with _lock:   # a snapshot while other threads register
            return {k: v[-1].kernel.fn for k, v in self._kernels.items() if v}

    def kernel_stack(self, key: str) -> tuple[Kernel, ...]:
        """The kernels registered for dispatch key ``key`` (``"cpu"``, ``"cuda"``,
        ``"default"``), lowest first; the last one is active (unless disabled by
        ``set_kernel_enabled``). A read-only snapshot; ``()`` when none."""
        return tuple(e.kernel for e in self._kernels.get(key, ()))

    def kernel_stacks(self) -> dict[str, tuple[Kernel, ...]]:
        """``{dispatch key: kernel_stack(key)}`` for every key with a registered kernel."""
        with _lock:   # a consistent snapshot while other threads register
            return {k: tuple(e.kernel for e in v) for k, v in self._kernels.items() if v}

    def kernel_owner(self, key: str):
        """The owner (plugin distribution name, or None for user code) of the active kernel for
        dispatch key ``key``; None when there is none."""
        stack = self._kernels.get(key)
        return stack[-1].kernel.owner if stack else None

    def active_kernel(self, key: str):
        """The kernel a call with dispatch key ``key`` runs when registered for exactly that key:
        the top of its stack, or ``None`` when there is none or it is disabled by
        ``set_kernel_enabled`` (no fallback to ``"default"``: ask for it)."""
        if self._disabled.get(key):
            return None
        stack = self._kernels.get(key)
        return stack[-1].kernel.fn if stack else None

    _active = active_kernel   # the registry's own short name

    def is_kernel_enabled(self, key: str) -> bool:
        """False while ``set_kernel_enabled(key, False)`` is in force for dispatch key ``key``."""
        return not self._disabled.get(key)

    @property
    def fake_impl(self):
        """The active fake kernel registered with ``register_fake`` (``None`` when none; a
        built-in op's fake rule is not one: see ``has_fake``)."""
        return self._fake

    @property
    def fake_kernel(self) -> Kernel | None:
        """The active ``register_fake`` registration as a ``Kernel`` (who registered it, where
        it is defined), or ``None``."""
        return self._fake_regs[-1].kernel if self._fake_regs else None

    @property
    def has_fake(self) -> bool:
        """Whether fake tensors have a rule of the op's own: a registered fake kernel, or a
        built-in op's shape rule (a device-agnostic kernel may still serve them)."""
        return self._fake is not None or self._meta_default is not None

    @property
    def backward_fn(self):
        """The active backward formula (``register_autograd``, or a built-in op's), or None;
        also None while a kernel registered at an autograd key (``autograd_kernels``) handles
        the op's autograd: it shadows the formula (as torch's Autograd kernel replaces the one
        ``register_autograd`` installed), so nothing differentiates the op with the formula
        then (``tensorplay.compile`` runs such calls eagerly)."""
        return None if self._autograd_kernel_fns else self._backward

    @property
    def setup_context_fn(self):
        """The ``setup_context`` paired with ``backward_fn`` (may be None; None when
        ``backward_fn`` is)."""
        return None if self._autograd_kernel_fns else self._setup_context

    @property
    def autograd_kernels(self) -> dict:
        """The kernels registered at torch's autograd dispatch keys, active ones only:
        ``{"Autograd": fn, "AutogradCPU": fn, ...}`` (``{}`` when none). A snapshot."""
        with _lock:
            return {autograd_key_name(k): fn for k, fn in self._autograd_kernel_fns.items()}

    @property
    def _opoverload(self) -> CustomOpDef[_P, _R]:
        """torch's ``CustomOpDef._opoverload``: the operator object of this op's overload, the
        very object ``tensorplay.ops.<ns>.<op>.default`` (or ``.<overload>``) is. That is the
        record itself, or for a handle a later ``custom_op`` replaced, the current definition
        (the one its calls run)."""
        live = self
        while live._replaced_by is not None:
            live = live._replaced_by
        return live

    @property
    def builtin_fake(self):
        """A built-in op's own fake (shape) rule, or ``None`` (custom ops: see ``fake_impl``)."""
        return self._meta_default

    @property
    def kernel_name(self) -> str | None:
        """A built-in op's array kernel name (in each backend's ``kernels()``), else ``None``."""
        return self._kernel_name

    @property
    def scalar_ok(self) -> tuple:
        """A built-in op's Tensor parameters that also take Python numbers (``()`` otherwise)."""
        return self._scalar_ok

    @property
    def param_names(self) -> tuple:
        """The schema's parameter names, in order."""
        return self._param_names

    @property
    def label(self) -> str:
        """How errors name the op: ``"custom_op('ns::op')"``, or the name of a built-in."""
        return self._api()

    @property
    def has_array_kernel(self) -> bool:
        """A built-in op whose device kernels come from each backend's array kernels (bound when
        the device is first used); False for custom ops and device-agnostic built-ins."""
        return self._has_array_kernel

    @property
    def has_autograd(self) -> bool:
        """Whether the op has an explicit backward formula in force (``backward_fn``; else a
        kernel at an autograd key handles autograd, see ``autograd_kernels``, or a kernel
        written with tensorplay ops is differentiated through its body)."""
        return self.backward_fn is not None

    # -- registration ----------------------------------------------------------------------
    def _add_kernel(self, key: str, fn, owner=None, priority: int = 0,
                    source: str | None = None) -> KernelHandle:
        """Low-level: push ``fn`` for ``key``, owned by ``owner`` at ``priority``. The registering
        ``Owner`` may refuse it first (``Owner.check_kernel``: the plugin manager's owner refuses
        two plugins claiming one key at one priority, naming both)."""
        with _lock:
            stack = self._kernels.setdefault(key, [])
            op_owner = self.owner
            entry = Kernel(fn, owner, priority, source or _source_of(fn))
            # whoever sets owners (the plugin manager) checks conflicts between them: the owner
            # registering now raises to refuse the registration, before anything changes
            registrant = _registering_owner(owner)
            if registrant is not None:
                registrant.check_kernel(self, key, entry, tuple(e.kernel for e in stack))
            # The new entry goes on top and the ones it shadows stay below, so undoing it (a
            # closed Library, a plugin rolled back) brings the previous kernel back, like torch's
            # dispatcher. Each registration is its own entry, even of the same function: undoing
            # one never takes away another's.
            handle = KernelHandle(self, stack, entry)
            stack.append(handle)
            # stable: highest priority last (= active); at equal priority the op's owner beats
            # another plugin's kernel registered before it
            stack.sort(key=lambda e: (e.kernel.priority, not (e.kernel.owner is not None
                                                              and e.kernel.owner != op_owner)))
            if key not in ("default",):
                _KNOWN_DEVICE_TYPES.add(key)
            self._rebuild()
        return record(handle)

    def _set_fake(self, fn, owner=None) -> KernelHandle:
        """Push a fake kernel; the newest remaining registration is active."""
        with _lock:
            h = KernelHandle(self, self._fake_regs, Kernel(fn, owner, 0, _source_of(fn)))
            self._fake_regs.append(h)
            self._refresh()
        return record(h)

    def _set_autograd(self, backward, setup_context, owner=None) -> KernelHandle:
        """Push a backward formula; the newest remaining registration is active, else the
        formula found before the first one (a built-in op's)."""
        with _lock:
            if self._autograd_base is None:
                self._autograd_base = (self._backward, self._setup_context)
            h = KernelHandle(self, self._autograd_regs,
                             Kernel(backward, owner, 0, _source_of(backward)), setup_context)
            self._autograd_regs.append(h)
            self._refresh()
        return record(h)

    def _add_autograd_kernel(self, key: str, fn, owner=None) -> KernelHandle:
        """Push ``fn`` as the op's kernel at an autograd key (``"default"``: torch's
        ``Autograd``; a device type: ``Autograd<Device>``); the newest remaining registration
        of each key is active."""
        with _lock:
            stack = self._autograd_kernels.setdefault(key, [])
            h = KernelHandle(self, stack, Kernel(fn, owner, 0, _source_of(fn)))
            stack.append(h)
            self._refresh()
        return record(h)

    def adopt(self, owner: str, claims: Callable[[Any], bool]) -> None:
        """Attribute the op to plugin ``owner``, and with it the registrations made without an
        owner whose function ``claims(fn)`` accepts (a plugin module imported before the plugin
        platform ran: no owner was set then). Registration time only."""
        with _lock:
            self.owner = owner
            for stack in (*self._kernels.values(), *self._autograd_kernels.values(),
                          self._fake_regs, self._autograd_regs):
                for e in stack:
                    if e.kernel.owner is None and claims(e.kernel.fn):
                        e.kernel = e.kernel._replace(owner=owner)

    def _refresh(self) -> None:
        """Recompute the active fake kernel and formula from their stacks, then the table."""
        self._fake = self._fake_regs[-1].kernel.fn if self._fake_regs else None
        if self._autograd_regs:
            top = self._autograd_regs[-1]
            self._backward, self._setup_context = top.kernel.fn, top.setup_context
        elif self._autograd_base is not None:     # the last one undone: back to the base
            self._backward, self._setup_context = self._autograd_base
            self._autograd_base = None
        self._autograd_kernel_fns = {k: v[-1].kernel.fn
                                     for k, v in self._autograd_kernels.items() if v}
        self._rebuild()

    def _rebuild(self) -> None:
        """Recompute the dispatch table from the registrations (never on the call path)."""
        t = {}
        default = self._active(DEFAULT)
        for key in list(self._kernels):
            if key == DEFAULT:
                continue
            k = self._active(key)
            if k is not None:
                # a device backend may bind a custom op's kernel to the tensors' device (cuda:N)
                be = _devices.backend_of(key) if not self.is_builtin else None
                if be is not None:
                    k = be.guard_kernel(self, k)
                t[key] = k
            elif default is not None:
                t[key] = default
        if default is not None:
            t[DEFAULT] = default
        for key, build in entry_builders.items():   # meta / autograd / capture (see below)
            t[key] = build(self)
        # Update in place: generated __call__ functions hold this very dict. Never clear() first:
        # a call on another thread between clear() and update() would find no kernel. One
        # C-level update (str keys: atomic under the GIL), then drop keys no longer registered.
        table = self.table
        table.update(t)
        for key in [k for k in table if k not in t]:
            table.pop(key, None)

    def entry(self, key: str):
        """The callable a call dispatched to ``key`` runs (``"cpu"``, ``"cuda"``, ``"meta"``,
        ``"autograd"``, ``"default"``...): ``op.table[key]``, or for a key not in the table what a
        call does first: load that device's backend, then fall back to the device-agnostic
        kernel (remembered in the table). Raises ``DispatchError`` naming the op, the key and the
        registered kernels when there is none."""
        fn = self.table.get(key)
        return fn if fn is not None else self._missing_kernel(key)

    def _missing_kernel(self, key):
        if key == DEFAULT:
            return self._raise_missing(key)
        if key != "meta":
            if key not in _devices.loaded:
                # first use of a device: load its backend (binds built-in kernels)
                try:
                    _devices.load(key)
                except Exception:   # noqa: BLE001 - device unusable: the op's own error says more
                    if self.is_builtin:
                        raise
            # then read the table again, also when the device is loaded already: another thread
            # may have published it between the caller's miss and the test above (its kernels
            # bound meanwhile); skipping the re-read made that call "no kernel" for a kernel
            # that was there
            fn = self.table.get(key)
            if fn is not None:
                return fn
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
        with _lock:
            registered = sorted(k for k, v in self._kernels.items() if v)
        if key == DEFAULT:
            raise NoKernelError(
                f"{self._api()}: no device-agnostic kernel registered, and a call without tensor "
                f"arguments or a 'device' parameter cannot pick a device (registered: "
                f"{', '.join(registered) or 'none'}). Register one with "
                f"{self._opname}.register_kernel(None) or tensorplay.library.impl({self.name!r}, "
                f"'CompositeExplicitAutograd', fn).")
        hint = _devices.device_hint(key)
        disabled = " (a kernel is registered but disabled by set_kernel_enabled)" \
            if self._kernels.get(key) and self._disabled.get(key) else ""
        raise NoKernelError(
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
            check_binds(self, f, "kernel", "register_kernel")
            handles = []
            try:
                for key in keys:
                    owner = _owner or current_owner()
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
            check_binds(self, f, "fake kernel", "register_fake")
            h = self._set_fake(f, _owner or current_owner())
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

        Raises ``ValueError`` when ``backward`` or ``setup_context`` is not callable, or
        ``setup_context`` takes neither form; ``RuntimeError`` when the op mutates its inputs
        (same rule and type as torch: a mutating op cannot have a formula; also a
        ``ValueError``, the type earlier releases raised).
        """
        api = f"register_autograd({self.name!r})"
        check_not_builtin(self, api)
        if self.mutates_args and not self.is_builtin:
            raise NonFunctionalFormulaError(
                f"{api}: an op that mutates its inputs ({', '.join(self.mutates_args)}) cannot "
                f"have an autograd formula (same rule as torch.library: the op is not "
                f"functional). Make a functional op that returns the result instead of writing "
                f"it, and register the formula on that.")
        if backward is None:
            return lambda fn: self.register_autograd(fn, setup_context=setup_context, _lib=_lib,
                                                     _owner=_owner)
        if not callable(backward):
            raise ValueError(f"{api}: backward must be callable, got {backward!r}")
        if setup_context is not None:
            if not callable(setup_context):
                raise ValueError(f"{api}: setup_context must be callable, got {setup_context!r}")
            if not setup_context_form(setup_context):   # torch's 4-argument form too
                raise ValueError(f"{api}: setup_context {_where(setup_context)} must take "
                                 f"(ctx, inputs, output) or (ctx, inputs, keyword_only_inputs, "
                                 f"output)")
        h = self._set_autograd(backward, setup_context, _owner or current_owner())
        if _lib is not None:
            _lib._handles.append(h)
        return backward

    def _register_autograd_kernel(self, keys, fn, /, *, api: str, _lib=None, _owner=None):
        """Register ``fn`` at the autograd keys ``keys`` (``"default"`` for torch's
        ``Autograd``, device types for ``Autograd<Device>``: ``autograd_key``): for a call
        where an input requires grad and grad mode is on, ``fn`` runs instead of the op's own
        autograd handling (its formula, or differentiating through the kernel), on every
        device (``"default"``) or the calls on that device (which win over ``"default"``).
        Torch's pattern is an ``autograd.Function``'s ``apply``: its ``forward`` runs with grad
        mode off, so the op called there runs below autograd (its device kernel; torch needs
        ``_AutoDispatchBelowAutograd`` for that, ``no_grad`` is that here). With grad mode
        off, or no input that requires grad, the call goes below autograd without ``fn``
        (torch calls it then too; an ``autograd.Function`` returns the same). Reached through
        ``tensorplay.library``'s ``impl``/``register_kernel``/``Library.impl``; undone by the
        handle or the ``_lib`` closing. Raises ``ValueError`` for a built-in op or an ``fn``
        that cannot take the op's parameters. Returns ``fn``."""
        check_not_builtin(self, api)
        if not callable(fn):
            raise ValueError(f"{api}: expected a callable autograd kernel, got {fn!r}")
        from ._schema import bind_check
        bind_check(fn, self.schema, what="autograd kernel", api=api)
        owner = _owner or current_owner()
        handles = [self._add_autograd_kernel(k, fn, owner) for k in keys]
        if _lib is not None:
            _lib._handles.extend(handles)
        return fn

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

    @property
    def default(self) -> CustomOpDef[_P, _R]:
        """The op itself when it is a default overload (``ns::op``): ``tensorplay.ops.ns.op.default``
        resolves as torch's overload packet (``torch.ops.ns.op.default``) does. A named overload
        (``ns::op.out``) is not a packet: ``AttributeError``."""
        if "." in self._opname:     # __getattr__ says why
            raise AttributeError("default")
        return self

    @property
    def overloadname(self) -> str:
        """The overload name: ``"default"`` for ``ns::op``, ``"out"`` for ``ns::op.out``
        (torch's ``OpOverload._overloadname``, with ``"default"`` for the empty one)."""
        return split_overload(self.name)[1]

    # -- torch's OpOverload attributes -------------------------------------------------------
    @property
    def _overloadname(self) -> str:
        """torch's ``OpOverload._overloadname``: ``overloadname``."""
        return split_overload(self.name)[1]

    @property
    def _schema(self):
        """torch's ``OpOverload._schema``: the op's ``FunctionSchema`` (``str()`` is torch's
        text, ``"ns::op.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"``)."""
        return self.schema

    @property
    def __name__(self) -> str:
        """torch's ``OpOverload.__name__``: ``"op.default"``, ``"op.out"`` (no namespace)."""
        base, ov = split_overload(self._opname)
        return f"{base}.{ov}"

    @property
    def overloadpacket(self):
        """torch's ``OpOverload.overloadpacket``: ``tensorplay.ops.<ns>.<op>`` -- the
        ``OpOverloadPacket`` when the op has named overloads, else the default op itself (an op
        without named overloads is its own packet)."""
        return packet_of(split_overload(self.name)[0])

    def overloads(self) -> list[str]:
        """The overload names registered under this op's name (``["default"]`` for an op
        without named overloads), in registration order: torch's ``OpOverloadPacket.overloads()``,
        since ``tensorplay.ops.ns.op`` is the op itself when it has no named overloads."""
        return overload_names(split_overload(self.name)[0])

    def __getattr__(self, name: str):
        """torch's overload names of a built-in op (``tensorplay.ops.tp.add.Tensor``,
        ``.Scalar``): a built-in ``tp`` op stands for all of torch's overloads of its name, as
        ``library.get_kernel("tp::add.Tensor", ...)`` does. Only names that start with an
        upper-case letter (torch's overload spelling) and only on built-in ops; anything else is
        an ``AttributeError``, so a misspelt method never resolves. Called only for attributes
        that do not exist: no cost on the call path."""
        if "." not in name and not name.startswith("__"):
            # a handle taken before named overloads existed: ``op.out`` is the overload, as
            # on the packet torch's handle is (a registry lookup, on a missing attribute only)
            try:
                qual = object.__getattribute__(self, "name")
            except AttributeError:
                qual = ""
            if "." not in qual and name != "default" and qual in PACKETS:
                ov = _OPS.get(f"{qual}.{name}")
                if ov is not None:
                    return ov
        if name == "default":       # a named overload's (the property refused it)
            raise AttributeError(f"{self.name!r} is the overload {self.overloadname!r}, not an "
                                 f"overload packet; the default overload is tensorplay.ops."
                                 f"{self.namespace}.{self._opname.partition('.')[0]}.default")
        if name[:1].isupper() and name.isidentifier() and not name.startswith("__"):
            try:
                builtin = object.__getattribute__(self, "namespace") == RESERVED_NAMESPACE
            except AttributeError:
                builtin = False
            if builtin:
                return self
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


OpDef = CustomOpDef


def _unpickle_op(qualname: str, schema: str) -> CustomOpDef:
    """The op a pickled op named: the one registered as ``qualname`` with the same schema."""
    op = lookup(qualname)
    if str(op.schema) != schema:
        import pickle
        raise pickle.UnpicklingError(f"operator {qualname!r} was pickled with schema {schema!r}, "
                                     f"but {qualname!r} is now registered as {str(op.schema)!r} "
                                     f"({op.where})")
    return op


# what CustomOpDef.__setattr__ lets through: its declared fields, and __class__ (the per-op
# classes of _dispatch.make_call and forward_replaced)
_RECORD_ATTRS = frozenset(CustomOpDef.__dataclass_fields__) | {"__class__"}


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
# module and hooks run) enters ``registering_as(owner)``, so registrations record who made them
# and at which priority, and the handles made meanwhile are collected so a failing plugin is
# rolled back whole. The registry never asks anyone about owners: what it needs travels with them.
_owner_stack: list = []    # [(Owner, [handles made while it is the innermost owner])]

# ``lazy_namespaces``: the namespaces an op pack declares in entry-point metadata whose pack has
# not finished loading (kept by the plugin manager, empty once every such pack has loaded); a
# ``lookup`` of a name in one asks the plugin manager first even when the name is registered, so
# the pack is imported on first use and a pack another thread is loading is waited for (never
# seen half-registered). See ``lookup``.
lazy_namespaces: set = set()

# Entry builders of the dispatch keys that are not devices: ``build(op)`` -> the callable for
# that key in ``op.table``, called by every ``_rebuild``. Each lives in the layer that owns its key,
# above this one (``fake.make_fake_entry``, ``autograd.function.make_autograd_entry``,
# ``_capture.make_capture_entry``); the package root, which imports every layer, hands them over
# in one call to ``install_entry_builders`` while ``import tensorplay`` runs, before any op is
# called. No module subscribes itself.
ENTRY_KEYS = ("meta", "autograd", "capture")
entry_builders: dict = {}


def install_entry_builders(builders: dict) -> None:
    """Install the builders of the non-device keys (``{"meta": f, "autograd": g, "capture": h}``,
    each ``build(op) -> callable``) and fill those keys of every op defined so far; ops defined
    later get them from ``_rebuild``. Called once, by the package root. Raises ``ValueError``
    when a key is missing or unknown (a half-wired registry would fail later, far away)."""
    if set(builders) != set(ENTRY_KEYS):
        raise ValueError(f"install_entry_builders: keys {sorted(builders)}, expected "
                         f"{sorted(ENTRY_KEYS)}")
    with _lock:
        entry_builders.clear()
        entry_builders.update(builders)
        for op in list(_OPS.values()):
            for key, build in builders.items():
                op.table[key] = build(op)


def setup_context_form(setup) -> int:
    """3 for ``setup_context(ctx, inputs, output)``, 4 for torch's
    ``setup_context(ctx, inputs, keyword_only_inputs, output)``, 0 when it takes neither."""
    try:
        sig = inspect.signature(setup)
    except (TypeError, ValueError):
        return 3   # a builtin or C callable: no signature to read, call it the classic way
    for n, probe in ((3, (None, (), None)), (4, (None, (), {}, None))):
        try:
            sig.bind(*probe)
            return n
        except TypeError:
            pass
    return 0


class Owner:
    """Who registers: ``name`` (a plugin distribution name, recorded in each ``Kernel``) and
    ``priority`` (its ``TENSORPLAY_PRIORITY``; a subclass may compute it, e.g. from a plugin
    module that is still being imported). Entered with ``registering_as`` by the plugin
    manager."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @property
    def priority(self) -> int:
        return 0

    def check_kernel(self, op, key: str, entry, current: tuple) -> None:
        """Asked before this owner's kernel ``entry`` (a ``Kernel``) is pushed on ``op``'s stack
        for ``key`` (``current``: the ``Kernel`` entries there now, oldest first); raises to
        refuse the registration, before anything changes. Default: accept. The plugin manager's
        owner applies its conflict rules between plugins (``plugins.conflicts``): the rule
        travels with the owner, so the registry asks nobody above it."""
        return None

    def __repr__(self) -> str:
        return f"<tensorplay owner {self.name}>"


@contextmanager
def registering_as(owner: Owner):
    """Inside the block, registrations record ``owner`` (its name and priority in each
    ``Kernel``; ops it defines get ``op.owner``). Yields the list collecting the handle of every
    registration made meanwhile (``record``), oldest first, so the caller can destroy them all
    when the owner's code fails. Nests: the innermost owner collects. Registration time only."""
    made: list = []
    _owner_stack.append((owner, made))
    try:
        yield made
    finally:
        _owner_stack.pop()


def record(h: RegistrationHandle) -> RegistrationHandle:
    """Give ``h`` to the innermost ``registering_as`` block (if any), so a failed load undoes it;
    returns ``h``."""
    if _owner_stack:
        _owner_stack[-1][1].append(h)
    return h


def current_owner():
    """The name of the owner registering now (a plugin distribution), ``None`` for user code."""
    return _owner_stack[-1][0].name if _owner_stack else None


def _registering_owner(name):
    """The ``Owner`` named ``name`` that is registering now (innermost first), or ``None``."""
    if name is None:
        return None
    for o, _ in reversed(_owner_stack):
        if o.name == name:
            return o
    return None


def _owner_priority(name) -> int:
    """The priority of owner ``name`` when it is registering now (innermost first), else 0."""
    for o, _ in reversed(_owner_stack):
        if o.name == name:
            return o.priority
    return 0


def check_binds(op, fn, what: str, api: str) -> None:
    """Refuse (``ValueError`` naming ``api``, the op and the parameter) a ``fn`` that is not
    callable or cannot take the op's parameters. Registration time only."""
    if not callable(fn):
        raise ValueError(f"{api}({op.name!r}): expected a callable {what}, got {fn!r}")
    from ._schema import bind_check
    bind_check(fn, op.schema, what=what, api=f"{api}({op.name!r})")


def lookup(qualname: str) -> CustomOpDef:
    """The op registered as ``qualname`` (``"ns::op"`` or an overload ``"ns::op.overload"``;
    ``"ns::op.default"`` is ``"ns::op"``, and a built-in ``tp`` op answers every torch overload
    name of its own: ``"tp::add.Tensor"`` is ``tp::add``); ``LookupError`` naming it (and the
    overloads that exist, when some do) otherwise."""
    op = _OPS.get(qualname)
    if op is None or (lazy_namespaces and qualname.partition("::")[0] in lazy_namespaces):
        # a plugin still pending, an op pack not imported yet: the plugin manager (above) loads
        # what may define the name, then we look again. Named here at call time (the one route
        # from the registry up, like ``_devices.load``'s): no observer list filled at import.
        from importlib import import_module
        import_module("tensorplay.plugins.packs").load_for(qualname)
        op = _OPS.get(qualname)
    if op is None:
        base, ov = split_overload(qualname)
        if "." in qualname:
            if ov == "default" and base in _OPS:
                return _OPS[base]          # torch's spelling of the default overload
            b = _OPS.get(base)
            if b is not None and b.namespace == RESERVED_NAMESPACE:
                # a built-in tp op stands for all of torch's overloads of its name
                # ("tp::add.Tensor" and "tp::add.Scalar" are tp::add)
                return b
        fam = _FAMILIES.get(base)
        if fam:
            if ov == "default" or "." not in qualname:
                raise LookupError(
                    f"operator {base!r} has no default overload; its overloads: "
                    f"{', '.join(fam)} (name one, e.g. {overload_qualname(base, fam[0])!r})")
            raise LookupError(f"operator {base!r} has no overload {ov!r}; its overloads: "
                              f"{', '.join(fam)}")
        known = sorted({o.namespace for o in all_ops()})
        raise LookupError(f"no operator named {qualname!r} is registered (known namespaces: "
                          f"{', '.join(known) or 'none'})")
    return op


def registered(qualname: str) -> CustomOpDef | None:
    """The op registered as ``qualname`` now, or ``None`` (unlike ``lookup``, never asks the
    plugin manager to load anything)."""
    return _OPS.get(qualname)


def all_ops() -> list:
    """Every registered op, sorted by name: a snapshot taken under the registry's lock (another
    thread may close a ``Library`` meanwhile; its ops are then simply absent)."""
    with _lock:
        items = list(_OPS.items())
    return [op for _, op in sorted(items, key=lambda kv: kv[0])]


def transaction():
    """The registry's lock (reentrant): ``with transaction():`` makes a check-then-register
    sequence atomic against other threads registering. Registration time only: calls never
    take it."""
    return _lock


def add_kernel(op: CustomOpDef, key: str, fn, owner=None, priority: int = 0,
               source: str | None = None) -> KernelHandle:
    """Push ``fn`` as ``op``'s kernel for dispatch key ``key`` without the public API's checks:
    the core binding built-in kernels, and the plugin platform's lazy kernels. Returns the
    undo handle (the registering ``Owner.check_kernel`` may refuse it first)."""
    return op._add_kernel(key, fn, owner, priority, source)


def rebuild_ops_with(key: str) -> None:
    """Rebuild the dispatch table of every custom op with a kernel registered for ``key`` (its
    backend came or went, so ``guard_kernel`` binds differently)."""
    with _lock:
        for op in list(_OPS.values()):
            if not op.is_builtin and key in op._kernels:
                op._rebuild()


def register_op(op: CustomOpDef) -> CustomOpDef:
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
        _add_to_family(op.name)
        op._rebuild()
        _sync_packet_fallback(split_overload(op.name)[0])
    return op


# Overloads (torch's ``ns::name.overload``): each overload is its own record in ``_OPS`` under
# its full name; the default overload is ``ns::name`` itself. ``_FAMILIES`` lists, for every
# ``ns::name`` with at least one registered record, the overload names in registration order
# ("default" for ``ns::name``); ``PACKETS`` holds the ``ns::name`` that have a named overload
# now, so ``tensorplay.ops.ns.name`` knows with one set lookup whether to hand out the op itself
# (the common case: the record, no packet between the user and the generated call) or a packet.
_FAMILIES: dict[str, list[str]] = {}
PACKETS: set = set()     # mutated in place only: tensorplay.ops holds this very set


def split_overload(qualname: str) -> tuple[str, str]:
    """``("ns::name", "overload")`` for ``"ns::name.overload"``, ``(qualname, "default")``
    otherwise."""
    base, dot, ov = qualname.partition(".")
    return (base, ov) if dot else (qualname, "default")


def _add_to_family(qualname: str) -> None:
    base, ov = split_overload(qualname)
    fam = _FAMILIES.setdefault(base, [])
    if ov not in fam:
        fam.append(ov)
    if ov != "default":
        PACKETS.add(base)


def _drop_from_family(qualname: str) -> None:
    base, ov = split_overload(qualname)
    fam = _FAMILIES.get(base)
    if fam is None or ov not in fam:
        return
    fam.remove(ov)
    if not fam:
        del _FAMILIES[base]
    if fam == [] or fam == ["default"]:
        PACKETS.discard(base)


# "ns::op" -> (its default record, the record's own generated function) while that record's
# calls fall back to the other overloads (``_sync_packet_fallback``)
_FALLBACKS: dict = {}


def _sync_packet_fallback(base: str) -> None:
    """Keep the default record of ``base`` calling like its overload packet while ``base`` has
    named overloads (registration time only; caller holds ``_lock``).

    A handle taken as ``tensorplay.ops.ns.op`` before ``ns::op.out`` was defined is the default
    record, not the packet (an op without named overloads is its own packet). torch's handle is
    the packet and sees overloads added later, so this one does too: a call its own schema does
    not take (``op(x, out=o)``) runs the overload that takes it, and ``op.out`` is the overload
    (``CustomOpDef.__getattr__``). Done by swapping the function the record's partial calls for
    a wrapper whose ``try`` costs nothing unless the call raises ``TypeError``; ops without
    named overloads keep their generated function, and the wrapper goes when the last named
    overload does."""
    rec = _OPS.get(base)
    cur = _FALLBACKS.get(base)
    if cur is not None and (cur[0] is not rec or base not in PACKETS):
        op, fn = _FALLBACKS.pop(base)
        functools.partial.__setstate__(op, (fn, (), None, {}))
        cur = None
    if cur is None and rec is not None and base in PACKETS and packet_of is not None:
        fn = rec.func
        _FALLBACKS[base] = (rec, fn)
        functools.partial.__setstate__(rec, (_packet_fallback(fn, base), (), None, {}))


def _packet_fallback(fn, base: str):
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            # the default takes the arguments: its own error (a kernel's); else the overload
            # that takes them, or the packet's error naming every overload tried
            other = packet_of(base)._other_overload(args, kwargs, e)
            if other is None:
                raise
        return other(*args, **kwargs)
    call.__qualname__ = getattr(fn, "__qualname__", base)
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn
    return call


def overload_names(base: str) -> list[str]:
    """The registered overloads of ``"ns::name"`` in registration order (``"default"`` is
    ``ns::name`` itself); ``[]`` when none. A snapshot."""
    with _lock:
        return list(_FAMILIES.get(base, ()))


def overload_qualname(base: str, overload: str) -> str:
    """``"ns::name"`` for ``"default"``, else ``"ns::name.overload"``."""
    return base if overload == "default" else f"{base}.{overload}"


def unregister_op(op: CustomOpDef) -> None:
    """Remove ``op`` from the registry, restoring the definition it replaced (if any).

    Undos may come in any order: an op removed while it is not the current definition is cut out
    of the chain of replaced definitions, so it can never come back later."""
    with _lock:
        cur = _OPS.get(op.name)
        prev = op._previous
        if cur is op:
            if prev is not None:
                _OPS[op.name] = prev
                restore_replaced(prev)
            else:
                del _OPS[op.name]
                _drop_from_family(op.name)
        else:
            o = cur
            while o is not None:
                if o._previous is op:
                    o._previous = prev
                    break
                o = o._previous
        op._previous = None
        _sync_packet_fallback(split_overload(op.name)[0])


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
