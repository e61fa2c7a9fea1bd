"""``tensorplay.library``: write, register and look up operators (same API as ``torch.library``).

Entry points: ``custom_op``, ``triton_op``, ``define``, ``impl``, ``register_kernel``,
``register_fake``, ``register_autograd``, ``get_kernel``, ``infer_schema``, ``opcheck``,
``wrap_triton``, ``Library`` and ``CustomOpDef``. Where the owner's documentation
(``shared/seeds``) or SPEC.md speaks, it wins; elsewhere behaviour follows torch.library
(PyTorch 2.9), and docstrings say where we differ.

Example::

    @tensorplay.library.custom_op("mylib::weighted_sum", mutates_args=())
    def weighted_sum(x, weight):
        return (x * weight).sum()

    @weighted_sum.register_fake
    def _(x, weight):
        return x.new_empty(())
"""

from __future__ import annotations

import inspect
import threading

from . import _dispatch, _registry
from ._registry import CustomOpDef, normalize_device_types
from ._schema import (FunctionSchema, check_schema_matches_mutates, infer_schema,
                      normalize_mutates_args, parse_qualname, schema_from_function)
from .errors import SchemaError

__all__ = ["custom_op", "triton_op", "wrap_triton", "CustomOpDef", "Library", "define", "impl",
           "register_kernel", "register_fake", "register_autograd", "get_kernel", "infer_schema",
           "opcheck", "fallthrough_kernel"]

_define_lock = threading.RLock()


def _site(fn) -> tuple[str | None, str]:
    """(module, "file:line") of the code defining an op."""
    if fn is not None:
        code = getattr(fn, "__code__", None)
        where = f"{code.co_filename}:{code.co_firstlineno}" if code else repr(fn)
        return getattr(fn, "__module__", None), where
    frame = inspect.currentframe()
    try:
        f = frame.f_back
        while f is not None and f.f_globals.get("__name__", "").startswith("tensorplay.library"):
            f = f.f_back
        if f is None:
            return None, "?"
        return f.f_globals.get("__name__"), f"{f.f_code.co_filename}:{f.f_lineno}"
    finally:
        del frame


def _new_op(qualname, schema, mutates, device_types, tags, module, where, api, is_triton=False):
    """Create and register the record, replacing a same-module definition (version + 1)."""
    with _define_lock:
        old = _registry._OPS.get(qualname)
        version = 0
        if old is not None:
            if old.is_builtin:
                raise ValueError(f"{api}: {qualname!r} is a built-in operator and cannot be redefined")
            if old.source != module:
                raise ValueError(
                    f"{api}: operator {qualname!r} is already defined at {old._where} (module "
                    f"{old.source}); this definition at {where} (module {module}) conflicts. "
                    f"Pick another name, or redefine it from the same module.")
            version = old.version + 1
        op = CustomOpDef(qualname, schema, mutates_args=mutates, device_types=device_types,
                         tags=tags, source=module, is_triton=is_triton)
        op._where = where
        op.version = version
        op.plugin = _registry._current_owner()
        _check_dispatchable(op, device_types, api)
        _dispatch.make_call(op)
        if old is not None:
            old._replaced_by = op
        _registry.register_op(op)
        if _registry._owner_stack:
            _registry._undo_log.append(_registry.RegistrationHandle(
                lambda: _registry.unregister_op(op)))
        return op


def _check_dispatchable(op, device_types, api):
    kinds = {a.kind for a in op.schema.arguments}
    has_tensor = kinds & {"tensor", "optional_tensor", "tensor_list"}
    if not has_tensor and "device" not in kinds and any(d != "default" for d in device_types):
        raise ValueError(
            f"{api}: operator {op.name!r} has a device-specific kernel ({', '.join(device_types)}) "
            f"but no tensor arguments and no 'device' parameter, so a call cannot choose a device. "
            f"Add a parameter `device: tensorplay.device`, or register a device-agnostic kernel.")


def _parse_given_schema(name, schema, api):
    text = schema.strip()
    if "(" not in text:
        raise SchemaError(f"{api}: schema {schema!r} has no argument list")
    head = text[:text.index("(")].strip()
    sch = FunctionSchema.parse(text if head else name + text)
    if head and sch.qualname != name:
        raise ValueError(f"{api}: schema names {sch.qualname!r} but the op is {name!r}")
    return sch if head else sch


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=(),
              _is_triton=False):
    """Define operator ``name`` (``"ns::op"``) from a Python function; decorator or direct call.

    Arguments (same as ``torch.library.custom_op``; the owner's documentation wins where it speaks):

    * ``name`` -- ``"namespace::op"``: identifiers joined by exactly one ``::``
      (``ValueError`` naming the rule otherwise).
    * ``fn`` -- the kernel; omit to use the return value as a decorator.
    * ``mutates_args`` -- required: names of parameters the kernel writes, or ``"unknown"`` (every
      tensor parameter). Any other bare string, unknown names, or non-tensor names:
      ``ValueError``. Eager calls trust it (no per-call check); ``opcheck`` verifies it;
      ``tensorplay.compile`` treats calls with mutated arguments as barriers.
    * ``device_types`` -- ``"cpu"``, ``"cuda"``, a list, or ``None``: ``fn`` becomes the kernel of
      each (``None``: the device-agnostic slot). An advertisement: calls pick from whatever is
      registered later too.
    * ``schema`` -- optional schema string (with or without the name), kept for introspection and
      ``opcheck``; must agree with ``mutates_args`` (``ValueError``). Otherwise inferred from
      ``fn``'s annotations (``infer_schema`` rules).

    Returns a callable ``CustomOpDef``. Ops with no tensor arguments dispatch on a parameter named
    ``device``; such an op with a device-specific kernel and no ``device`` parameter is refused.
    Redefining a name from the same module replaces the op (its ``version`` goes up so compiled
    graphs are rebuilt); from another module it is a ``ValueError`` naming both sites.
    """
    api = f"{'triton_op' if _is_triton else 'custom_op'}({name!r})"
    try:
        parse_qualname(name, api=api)
    except SchemaError as e:
        raise ValueError(str(e)) from None
    if isinstance(fn, str) or (fn is not None and not callable(fn)):
        raise TypeError(f"{api}: fn must be a function, got {fn!r}")

    def inner(f):
        if not callable(f):
            raise TypeError(f"{api}: expected a function to decorate, got {f!r}")
        if schema is not None:
            sch = _parse_given_schema(name, schema, api)
            mutates = normalize_mutates_args(mutates_args, sch, api=api)
            check_schema_matches_mutates(sch, mutates, api)
            sch = sch.with_name(name) if not sch.name else sch
        else:
            mutates = normalize_mutates_args(mutates_args, f, api=api)
            sch = schema_from_function(f, mutates_args=mutates, op_name=name, api=api)
        keys = normalize_device_types(device_types, api)
        module, where = _site(f)
        op = _new_op(name, sch, mutates, keys, tuple(tags), module, where, api, _is_triton)
        try:
            op.register_kernel(keys, f, _owner=op.plugin)
        except BaseException:
            _registry.unregister_op(op)
            raise
        op.__doc__ = f.__doc__
        op.__wrapped__ = f
        op._fn = f
        return op

    return inner if fn is None else inner(fn)


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """Define an op whose kernels launch Triton kernels through ``wrap_triton``.

    Same as ``custom_op`` (device-agnostic kernel; ``schema`` honoured exactly), flagged
    ``is_triton``: ``tensorplay.compile`` keeps it as one opaque node. Unless ``register_fake``
    gives one, its fake kernel is its own body run on fake tensors with the Triton launches skipped,
    so a well-written ``triton_op`` needs no separate fake (same as ``torch.library.triton_op``).
    The kernels must only mutate arguments listed in ``mutates_args``.
    """
    def inner(f):
        op = custom_op(name, f, mutates_args=mutates_args, schema=schema, _is_triton=True)
        return op
    return inner if fn is None else inner(fn)


def wrap_triton(kernel):
    """Mark a Triton kernel (``@triton.jit`` / ``@triton.autotune`` result, or any grid-indexable
    launcher) as launchable inside a ``triton_op``: ``wrap_triton(k)[grid](*args, **kw)``.
    Idempotent. Needs the ``tensorplay-triton`` plugin (``ImportError`` with the fix otherwise)."""
    try:
        from tensorplay_triton import wrap_triton as _wt
    except ImportError as e:
        raise ImportError("wrap_triton needs the tensorplay-triton plugin: pip install "
                          "tensorplay-triton (and triton)") from e
    return _wt(kernel)


def _resolve(op, api):
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str):
        try:
            return _registry.lookup(op)
        except LookupError as e:
            from .plugins import op_failure_hint
            hint = op_failure_hint(op)
            raise LookupError(f"{api}: {e}" + (f"; {hint}" if hint else "")) from None
    raise TypeError(f"{api}: expected a CustomOpDef or a qualified name 'ns::op', got {op!r}")


def define(qualname, schema=None, *, lib=None, tags=()):
    """Create operator ``qualname`` from a schema if absent (same as ``torch.library.define``).

    ``qualname`` may be ``"ns::op"`` with ``schema="(Tensor x) -> Tensor"``, or a full
    ``"ns::op(Tensor x) -> Tensor"`` with ``schema`` omitted. Mutated arguments come from the alias
    annotations (``Tensor(a!)``). Returns the ``CustomOpDef`` (existing one if the same schema is
    already defined). Kernels are attached with ``impl``/``register_kernel``. ``lib`` records the
    definition so ``lib._destroy()`` removes it. Raises ``SchemaError`` (``ValueError``) for a bad
    schema and ``ValueError`` when the name exists with a different schema from another module.
    """
    api = f"define({qualname!r})"
    if schema is None:
        if "(" not in qualname:
            raise ValueError(f"{api}: give a schema, either as the second argument or pasted into "
                             f"qualname: 'ns::op(Tensor x) -> Tensor'")
        sch = FunctionSchema.parse(qualname)
    else:
        sch = FunctionSchema.parse(qualname + schema if "(" not in qualname else qualname)
        if "(" in schema and schema.strip()[0] != "(":
            sch = FunctionSchema.parse(schema)
    try:
        parse_qualname(sch.qualname, api=api)
    except SchemaError as e:
        raise ValueError(str(e)) from None
    existing = _registry._OPS.get(sch.qualname)
    module, where = _site(None)
    if existing is not None and str(existing.schema) == str(sch):
        return existing
    op = _new_op(sch.qualname, sch, sch.mutated_args, ("default",), tuple(tags), module, where, api)
    if lib is not None:
        lib._handles.append(_registry.RegistrationHandle(lambda: _registry.unregister_op(op)))
        lib._ops.append(op.name)
    return op


def impl(qualname, types, func=None, /, *, lib=None):
    """Attach ``func`` as the kernel of op ``qualname`` for ``types`` (same as
    ``torch.library.impl``): concrete devices (``"cpu"``, ``"CUDA"``) or composite spellings
    (``CompositeExplicitAutograd``/``CompositeImplicitAutograd`` -> the device-agnostic slot).
    Decorator when ``func`` is omitted. ``LookupError`` when the op does not exist."""
    op = _resolve(qualname, f"impl({qualname!r})")
    return op.register_kernel(types, func, _lib=lib) if func is not None else \
        op.register_kernel(types, _lib=lib)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """Register a kernel of ``op`` (a ``CustomOpDef`` or ``"ns::op"``) for ``device_types``;
    ``None``/empty/composite spellings mean the device-agnostic slot. Direct or decorator form."""
    o = _resolve(op, f"register_kernel({op!r})")
    return o.register_kernel(device_types, func, _lib=lib) if func is not None else \
        o.register_kernel(device_types, _lib=lib)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1):
    """Register the fake kernel of ``op`` (``CustomOpDef`` or name); direct or decorator form.
    Same as ``torch.library.register_fake``; the signature is checked now (CASES C10)."""
    o = _resolve(op, f"register_fake({op!r})")
    return o.register_fake(func, _lib=lib) if func is not None else o.register_fake(_lib=lib)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """Register the backward formula of ``op`` (same as ``torch.library.register_autograd``)."""
    o = _resolve(op, f"register_autograd({op!r})")
    return o.register_autograd(backward, setup_context=setup_context, _lib=lib)


def get_kernel(op, dispatch_key):
    """The kernel registered for exactly ``dispatch_key`` (``"cpu"``, ``"cuda"``, ``"default"``
    or a composite spelling). A concrete key does not fall back to the device-agnostic slot (ask
    ``"default"`` for that). Raises ``LookupError`` when nothing usable is registered; a kernel
    disabled by ``set_kernel_enabled`` counts as absent (the owner's documentation)."""
    o = _resolve(op, f"get_kernel({op!r})")
    key = _registry.normalize_device_type(dispatch_key, f"get_kernel({o.name!r})")
    k = o._active(key)
    if k is None:
        state = "disabled" if o._kernels.get(key) and o._disabled.get(key) else "registered"
        raise LookupError(
            f"get_kernel({o.name!r}, {dispatch_key!r}): no kernel {state} for {key!r} "
            f"(registered: {', '.join(sorted(o.kernels)) or 'none'})")
    return k


def fallthrough_kernel(*args, **kwargs):  # pragma: no cover - torch compatibility name
    raise NotImplementedError("fallthrough kernels are not supported by tensorplay")


def opcheck(op, args, kwargs=None, *, test_utils="DEFAULT", raise_exception=True, atol=None,
            rtol=None):
    """Check that ``op`` is registered correctly (see ``tensorplay.testing.opcheck``)."""
    from .testing.opcheck import opcheck as _opcheck
    return _opcheck(op, args, kwargs, test_utils=test_utils, raise_exception=raise_exception,
                    atol=atol, rtol=rtol)


class Library:
    """A scope of registrations in a namespace (same as ``torch.library.Library``).

    ``kind``: ``"DEF"`` (defines ops; one live DEF library per namespace), ``"FRAGMENT"``
    (defines more ops in a namespace), ``"IMPL"`` (only attaches kernels). ``define(schema)`` and
    ``impl(op_name, fn, dispatch_key)`` register; ``_destroy()`` (also on ``with`` exit) undoes
    every registration made through it. Raises ``ValueError`` for an unknown kind, a second DEF
    library, or ``define`` on an IMPL library.
    """

    _live_defs: dict = {}

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("DEF", "FRAGMENT", "IMPL"):
            raise ValueError(f"Library({ns!r}, {kind!r}): kind must be 'DEF', 'FRAGMENT' or 'IMPL'")
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"Library({ns!r}): namespace must be an identifier")
        if kind == "DEF":
            other = Library._live_defs.get(ns)
            if other is not None:
                raise ValueError(
                    f"Library({ns!r}, 'DEF'): namespace {ns!r} already has a DEF library (created "
                    f"at {other._where}); use kind='FRAGMENT' to add ops to it")
            Library._live_defs[ns] = self
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._handles: list = []
        self._ops: list = []
        self._where = _site(None)[1]
        self._closed = False

    def define(self, schema: str, alias_analysis: str = "", *, tags=()):
        """Define ``ns::<name>`` from ``"name(Tensor x) -> Tensor"``; returns the qualified name."""
        if self.kind == "IMPL":
            raise ValueError(f"Library({self.ns!r}, 'IMPL'): cannot define ops; use 'DEF' or 'FRAGMENT'")
        text = schema if "::" in schema.split("(")[0] else f"{self.ns}::{schema}"
        op = define(text, lib=self, tags=tags)
        return op.name

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False):
        """Attach ``fn`` as the kernel of ``op_name`` (``"op"`` in this namespace, or
        ``"ns::op"``) for ``dispatch_key`` (default: the library's key, else device-agnostic)."""
        if isinstance(op_name, CustomOpDef):
            name = op_name.name
        else:
            name = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        op = _resolve(name, f"Library({self.ns!r}).impl")
        key = dispatch_key or self.dispatch_key or "default"
        if key.lower() in ("meta",):
            op.register_fake(fn, _lib=self)
            return
        if key.lower() == "autograd":
            raise ValueError("Library.impl: use register_autograd for autograd formulas")
        op.register_kernel(key, fn, _lib=self)

    def _destroy(self) -> None:
        if self._closed:
            return
        self._closed = True
        for h in reversed(self._handles):
            h.destroy()
        self._handles.clear()
        if Library._live_defs.get(self.ns) is self:
            del Library._live_defs[self.ns]

    close = _destroy

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._destroy()
        return False
