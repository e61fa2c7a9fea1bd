"""``tensorplay.library``: write, register and look up operators (same API as ``torch.library``).

Entry points: ``custom_op``, ``triton_op``, ``define``, ``impl``, ``register_kernel``,
``register_fake``, ``register_autograd``, ``get_kernel``, ``infer_schema``, ``opcheck``,
``wrap_triton``, ``Library`` and ``CustomOpDef``. Behaviour follows torch.library
(PyTorch 2.9); docstrings say where we differ.

Overloads, as in torch.library: ``define("ns::name.overload", schema)`` (or
``Library.define("name.overload(...) -> ...")``) defines the overload ``overload`` of
``ns::name``, an operator of its own (its own schema, kernels, fake kernel and formula);
``ns::name`` itself is the default overload (torch's ``.default``). Every function taking an op
name (``impl``, ``register_kernel``, ``register_fake``, ``register_autograd``, ``get_kernel``,
``opcheck``, ``Library.impl``) takes ``"ns::name.overload"``, and ``"ns::name.default"`` for
``ns::name``. ``tensorplay.ops.ns.name`` is then an overload packet (``tensorplay.ops``),
which is not an operator: passing one where an op is expected raises ``TypeError`` naming its
overloads. A name whose overload does not exist raises ``LookupError`` listing those that do.
``custom_op``/``triton_op`` take ``"ns::name"`` only, as torch's.

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
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, ParamSpec, TypeVar, overload

from . import _dispatch, _registry
from ._registry import (CustomOpDef, Kernel, KernelHandle, RegistrationHandle,
                        normalize_device_types)
from ._schema import (FunctionSchema, check_schema_matches_mutates, check_tagged_schema,
                      infer_schema, normalize_mutates_args, schema_from_function)
from .errors import AlreadyDefinedError, SchemaError
from .fake import get_ctx  # noqa: F401  (tensorplay.library.get_ctx, as torch.library.get_ctx)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._registry import DeviceTypes

_P = ParamSpec("_P")
_R = TypeVar("_R")
_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["custom_op", "triton_op", "wrap_triton", "CustomOpDef", "Library", "define", "impl",
           "register_kernel", "register_fake", "register_autograd", "get_kernel", "infer_schema",
           "opcheck", "fallthrough_kernel", "get_ctx", "Kernel", "KernelHandle",
           "RegistrationHandle"]

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*")
_OVERLOAD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")


def _check_name(name, api: str, *, overload: bool = False) -> None:
    """``ValueError`` unless ``name`` is ``"namespace::op"`` (two identifiers joined by one
    ``::``), or with ``overload`` also ``"namespace::op.overload"`` (a third identifier after one
    ``.``; not ``default``, which is ``namespace::op`` itself, nor a name the overload packet
    uses for itself)."""
    if isinstance(name, str) and _NAME_RE.fullmatch(name):
        return
    is_overload = isinstance(name, str) and _OVERLOAD_RE.fullmatch(name)
    if overload and is_overload:
        base, _, ov = name.partition(".")
        if ov == "default":
            raise ValueError(f"{api}: 'default' is the overload of {base!r} itself: define "
                             f"{base!r} for the default overload, or pick another overload name")
        from .ops import OpOverloadPacket
        # the packet's own attributes (and dunders) would hide the overload: packet.<ov>
        if ov.startswith("__") or ov in vars(OpOverloadPacket):
            raise ValueError(f"{api}: the overload name {ov!r} is reserved: "
                             f"tensorplay.ops.{base.replace('::', '.')}.{ov} is the overload "
                             f"packet's own attribute; pick another overload name")
        return
    extra = ""
    if is_overload:
        extra = (" Overload names ('.overload') are defined with tensorplay.library.define or "
                 "Library.define (as in torch.library); custom_op takes 'namespace::name'.")
    form = ("'namespace::name' or 'namespace::name.overload' where each part is a Python "
            "identifier, joined by exactly one '::' (and one '.')") if overload else \
        "'namespace::name' where both parts are Python identifiers joined by exactly one '::'"
    raise ValueError(f"{api}: {name!r} is not a valid operator name; expected {form}, e.g. "
                     f"'mylib::add'.{extra}")


def _site(fn) -> tuple[str | None, str]:
    """(module, "file:line") of the code defining an op: ``fn``'s, else the first caller frame
    outside this module."""
    if fn is not None:
        code = getattr(fn, "__code__", None)
        where = f"{code.co_filename}:{code.co_firstlineno}" if code else repr(fn)
        return getattr(fn, "__module__", None), where
    frame = inspect.currentframe()
    try:
        f = frame.f_back
        while f is not None and f.f_globals.get("__name__", "") == __name__:
            f = f.f_back
        if f is None:
            return None, "?"
        return f.f_globals.get("__name__"), f"{f.f_code.co_filename}:{f.f_lineno}"
    finally:
        del frame


def _use_namespace(ns: str) -> None:
    """A definition or ``Library`` in namespace ``ns``: when an op pack declares ``ns`` and is not
    imported yet, import it first (``tensorplay.plugins.load_namespace``), so a clash with its
    ops is the error it was when packs loaded at ``import tensorplay``. Called before the
    registry's lock is taken (the pack's load takes the plugin lock, then the registry's)."""
    if ns in _registry.lazy_namespaces:
        from .plugins import load_namespace
        load_namespace(ns)


def _new_op(qualname, schema, mutates, keys, tags, module, where, api, *, is_triton=False,
            kernel=None, device_types=None, doc_fn=None, defined_by="define"):
    """Create, fill and register one op record, all or nothing.

    Everything that can fail (a conflicting definition, an undispatchable device kernel, a kernel
    that cannot bind the schema) is checked before the name is published in the registry, so a
    failed definition leaves the previous state untouched. Each name is defined once, as in
    torch.library: a second definition is an ``AlreadyDefinedError`` (a ``RuntimeError``) naming
    where the first came from. The one exception: ``custom_op`` (``defined_by`` ``"custom_op"``
    or ``"triton_op"``) over a ``custom_op`` from the same module replaces it with ``version + 1``
    (edit-and-rerun in a notebook; compiled graphs check versions).
    """
    with _registry.transaction():
        old = _registry.registered(qualname)
        version = 0
        if old is not None:
            if old.is_builtin:
                raise ValueError(f"{api}: {qualname!r} is a built-in operator and cannot be "
                                 f"redefined: built-in operators are provided by the tensorplay "
                                 f"core and the device plugins; pick a name in your own "
                                 f"namespace")
            old_by = old.defined_by
            from_custom_op = old_by in ("custom_op", "triton_op")
            if not (from_custom_op and defined_by in ("custom_op", "triton_op")):
                how = (f"close that Library first" if old_by.startswith("Library(") else
                       f"redefine it with {old_by} from module {old.source}" if from_custom_op
                       else "it cannot be redefined while it exists")
                raise AlreadyDefinedError(
                    f"{api}: operator {qualname!r} is already defined at {old.where} (by "
                    f"{old_by}, module {old.source}); this definition at {where} (module "
                    f"{module}) conflicts. Each operator is defined once (same rule as "
                    f"torch.library): pick another name, or {how}.")
            if old.source != module:
                raise AlreadyDefinedError(
                    f"{api}: operator {qualname!r} is already defined at {old.where} (module "
                    f"{old.source}); this definition at {where} (module {module}) conflicts. "
                    f"Pick another name, or redefine it from the same module.")
            version = old.version + 1
        if qualname.partition("::")[0] == _registry.RESERVED_NAMESPACE:
            raise _registry.reserved_error(api, f"the namespace {_registry.RESERVED_NAMESPACE!r} "
                                                f"(operator {qualname!r})")
        _registry.check_dispatchable(schema, keys, api)
        op = CustomOpDef(qualname, schema, mutates_args=mutates,
                         device_types=keys if device_types is None else device_types,
                         tags=tags, source=module, is_triton=is_triton, where=where,
                         defined_by=defined_by, owner=_registry.current_owner(),
                         version=version)
        if doc_fn is not None:
            op.__wrapped__ = doc_fn
        _dispatch.make_call(op)
        if doc_fn is not None:
            # the record has no per-instance __doc__ (slots); make_call gave it a class of its own
            type(op).__doc__ = doc_fn.__doc__
        if kernel is not None:
            # checks the signature (CASES C10) before anything becomes visible
            op.register_kernel(keys, kernel, _owner=op.owner)
        _registry.register_op(op)
        if old is not None:
            _registry.forward_replaced(old, op)
        _registry.record(_registry.RegistrationHandle(lambda: _registry.unregister_op(op)))
        return op


def _parse_schema(text, api: str) -> FunctionSchema:
    """``FunctionSchema.parse`` with the error re-worded to start with ``api``."""
    if not isinstance(text, str):
        raise TypeError(f"{api}: schema must be a str such as '(Tensor x) -> Tensor', got "
                        f"{type(text).__name__}")
    try:
        return FunctionSchema.parse(text)
    except SchemaError as e:
        raise SchemaError(f"{api}: bad schema: {e}") from None


def _parse_given_schema(name, schema, api) -> FunctionSchema:
    """A ``schema=`` given to ``custom_op``/``triton_op``: with or without the name; a name, if
    present, must be ``name``. Returns the schema named ``name``."""
    sch = _parse_schema(schema, api)
    if sch.qualname and sch.qualname != name:
        raise ValueError(f"{api}: schema {schema!r} names the operator {sch.qualname!r} but the "
                         f"op is {name!r}; drop the name from the schema or make them agree")
    return sch.with_name(name)


def _tags(tags, api):
    if isinstance(tags, str):
        return (tags,)
    try:
        return tuple(tags)
    except TypeError:
        raise TypeError(f"{api}: tags must be a tag or a sequence of tags, got {tags!r}") from None


@overload
def custom_op(name: str, fn: None = None, /, *, mutates_args: str | Iterable[str],
              device_types: DeviceTypes = None, schema: str | None = None,
              tags: Any = ()) -> Callable[[Callable[_P, _R]], CustomOpDef[_P, _R]]: ...


@overload
def custom_op(name: str, fn: Callable[_P, _R], /, *, mutates_args: str | Iterable[str],
              device_types: DeviceTypes = None, schema: str | None = None,
              tags: Any = ()) -> CustomOpDef[_P, _R]: ...


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=()):
    """Define operator ``name`` (``"ns::op"``) from a Python function; decorator or direct call.

    Same as ``torch.library.custom_op``::

        @tensorplay.library.custom_op("mylib::weighted_sum", mutates_args=())
        def weighted_sum(x, weight):
            return (x * weight).sum()

        op = tensorplay.library.custom_op("mylib::op", my_fn, mutates_args=())  # positional fn

    Arguments:

    * ``name`` -- ``"namespace::op"``: Python identifiers joined by exactly one ``::`` (no
      overload name, as in torch: define overloads with ``define``/``Library.define``).
    * ``fn`` -- the kernel; omit it to get a decorator.
    * ``mutates_args`` -- required: the names of the parameters the kernel writes (any iterable
      of names: a tuple, list, set, ``{}``, a dict's keys), or ``"unknown"`` (every tensor
      parameter). Eager calls trust it (no per-call check, for speed);
      ``opcheck`` verifies it; ``tensorplay.compile`` treats calls with mutated args as barriers.
      Such an op cannot have a ``register_autograd`` formula (as in torch); see *Written
      arguments under autograd* below.
    * ``device_types`` -- ``"cpu"``, ``"cuda"`` (any case), a list of them, or ``None``/empty/
      ``"default"``/``CompositeExplicitAutograd``/``CompositeImplicitAutograd`` for the
      device-agnostic slot: ``fn`` becomes the kernel of each. An advertisement: calls pick from
      whatever is registered (``register_kernel`` adds more).
    * ``schema`` -- optional schema string, ``"(Tensor x) -> Tensor"`` or with the name
      ``"ns::op(Tensor x) -> Tensor"``, kept exactly for introspection and ``opcheck``; it must
      agree with ``mutates_args``. Without it the schema is inferred from ``fn``'s annotations
      (``infer_schema`` rules; unannotated parameters are tensors).
    * ``tags`` -- a ``tensorplay.Tag`` or a sequence of them, kept on ``op.tags``. Two of them
      change the op (same as ``torch.library.custom_op`` in PyTorch 2.13):
      ``Tag.inplace`` for an op that writes its first positional Tensor argument, only it, and
      returns that very tensor (``mutates_args={"x"}``, inferred schema
      ``(Tensor(a!) x, ...) -> Tensor(a!)``); ``Tag.out`` for an op that writes keyword-only
      ``out=`` Tensors and returns them in declaration order (``(Tensor x, *, Tensor(a!) out)
      -> Tensor(a!)``; its kernel must not read them). Only these two may return what they
      write; their eager call returns the argument object itself (a kernel returning anything
      else raises ``RuntimeError`` naming the op and the argument), they need no
      ``register_fake`` (their fake returns its inputs), and a ``Tag.out`` op refuses to run
      with grad mode on when an argument requires grad (``RuntimeError``, as torch's built-in
      ``out=`` ops); a ``Tag.inplace`` op follows the rule for written arguments below.

    Returns a callable ``CustomOpDef``. Calls dispatch on the device of the tensor arguments
    (positional, keyword, lists, optionals); ops with no tensor arguments dispatch on their
    ``device`` parameter.

    A call checks the structure of what the kernel returned against the schema's returns, as
    torch does, eager, fake (``register_fake``'s result) and compiled alike: a Tensor (or None)
    for ``Tensor``, a Tensor or None for ``Tensor?``, a list or tuple for ``Tensor[]``, a
    tuple or list of the declared length for several outputs, None for ``-> ()``. Anything else
    raises ``tensorplay.errors.OpReturnError`` (a ``RuntimeError`` and a ``TypeError``: torch
    raises one or the other) naming the op, the kernel, the schema's returns and what came
    back. The elements of a returned sequence, non-tensor returns, and aliasing of inputs are
    not checked at the call (``opcheck``'s ``test_schema`` checks them).

    Raises (nothing is registered when any is raised):

    * ``ValueError`` -- a ``Tag.inplace``/``Tag.out`` op whose parameters, ``mutates_args``,
      return annotation or ``schema`` do not have the tag's shape (the message names the op and
      the argument; ``tensorplay.library.infer_schema``'s ``tags=`` shows the schema inferred);
      bad ``name``; ``mutates_args`` a bare string other than ``"unknown"``,
      naming unknown or non-tensor parameters, or disagreeing with ``schema``; ``schema`` naming
      another op; a schema that is malformed (``SchemaError``) or cannot be inferred; an unknown
      device spelling; a device-specific kernel on an op with no tensor arguments and no ``device``
      parameter; ``fn`` unable to take the op's parameters; ``name``
      already defined by another module (message names both sites) or a built-in.
    * ``TypeError`` -- ``fn`` is not callable; ``device_types`` is not a spelling or an iterable.

    Written arguments under autograd (every op that writes arguments: ``mutates_args``,
    ``triton_op``, ``Tensor(a!)`` in a ``define``/``Library.define`` schema). A call bumps the
    ``_version`` of each written argument once, however its kernel writes (``add_``, ``copy_``,
    ``fill_``, through ``.numpy()`` or a launch): same as torch, whose kernels run below
    ``ADInplaceOrView``, so their own in-place ops bump nothing. One difference: with grad mode
    on, where the kernel writes an argument several times with tensorplay ops, each of those
    writes stays counted, since autograd may have recorded the kernel's ops and saved the
    tensor between two of them (torch never records a custom op's kernel). A tensor saved for
    backward and then written makes that backward raise (``RuntimeError``: "one of the
    variables needed for gradient computation has been modified by an inplace operation"),
    with grad mode on or off.
    When grad mode is on and a tensor argument requires grad:

    * a written tensor that is a leaf requiring grad, or a view of one, is written as torch's
      ``custom_op`` writes it: no error, the kernel runs with grad mode off (its own in-place
      tensorplay ops are not recorded), the leaf stays a leaf and its version is bumped (same as
      torch.library.custom_op, whose kernels run below autograd);
    * a written tensor that requires grad and is not a leaf keeps the history the kernel's own
      tensorplay ops gave it (``out.copy_(y)``: exact gradients); when the kernel wrote its
      array instead (``out.native[...] = ...``, a Triton store), its history (its base's, for a
      view) becomes a node whose backward raises naming the op and the argument. torch keeps
      the old history there, and the gradient through it is silently wrong;
    * a written tensor that does not require grad gains the history the kernel's own tensorplay
      ops give it (``out.copy_(x.sin())``: ``out`` then requires grad and its gradient reaches
      ``x``); when the kernel writes its array instead (``np.sin(..., out=out.numpy())``, a
      Triton store), it is left not requiring grad. torch runs every custom-op kernel below
      autograd, so there ``out`` never requires grad.

    A kernel without a formula that calls ``.numpy()`` while grad mode is on and an input
    requires grad (``np.sin(x.numpy())``, ``x * from_numpy(np.cos(x.detach().numpy()))``) left
    the autograd graph for part of its math: the call runs (``.numpy()`` of an input that
    requires grad is allowed inside the kernel, as in torch, whose custom-op kernels run with
    grad mode off), and every floating output gets a node whose backward raises torch's
    ``RuntimeError`` "Trying to backward through ns::op but no autograd formula was registered.
    Please use register_autograd to add one." instead of the incomplete gradient its tensorplay
    ops recorded. A kernel written only with tensorplay ops stays differentiable without a
    formula (its ``.detach()`` calls stop gradients as written).

    Typing: the op is a ``CustomOpDef[P, R]`` carrying ``fn``'s parameters and return type, so
    type checkers check calls of the op as calls of ``fn``.

    Redefining ``name`` with ``custom_op`` from the module whose ``custom_op`` defined it
    replaces the op; the new record's ``version`` is one higher, so graphs compiled against the
    old definition are rebuilt. The old handle (the ``CustomOpDef`` the first definition
    returned) is not a separate op: calling it runs the current definition, exactly as
    ``tensorplay.ops.ns.op`` does (an op is its name, as in torch), and registering on it
    (``register_fake``/``register_autograd``/``register_kernel``) raises ``RuntimeError`` naming
    the op and where it was redefined (register on the new handle). Any other second definition (over an op made by ``define`` or a
    ``Library``, or from another module) raises ``AlreadyDefinedError`` (a ``RuntimeError``, and
    a ``ValueError`` for older code) naming where the first came from.
    """
    return _custom_op(name, fn, mutates_args=mutates_args, device_types=device_types,
                      schema=schema, tags=tags, is_triton=False)


def _custom_op(name, fn, *, mutates_args, device_types, schema, tags, is_triton):
    """``custom_op``/``triton_op`` (``is_triton``): see ``custom_op``."""
    _is_triton = is_triton
    api = f"{'triton_op' if _is_triton else 'custom_op'}({name!r})"
    _check_name(name, api)
    if fn is not None and not callable(fn):
        raise TypeError(f"{api}: fn must be a function, got {fn!r}; to use custom_op as a "
                        f"decorator, omit fn")
    keys = normalize_device_types(device_types, api)
    tags = _tags(tags, api)
    if not isinstance(mutates_args, str) and isinstance(mutates_args, Iterable):
        # any iterable of names, as torch accepts (torch's own tests write ``{}``); taken once,
        # so a generator is not exhausted by the first of the checks below
        mutates_args = tuple(mutates_args)

    def inner(f):
        if not callable(f):
            raise TypeError(f"{api}: expected a function to decorate, got {f!r}")
        if schema is not None:
            sch = _parse_given_schema(name, schema, api)
            mutates = normalize_mutates_args(mutates_args, sch, api=api)
            check_schema_matches_mutates(sch, mutates_args, api)
            check_tagged_schema(sch, tags, api)
        else:
            mutates = normalize_mutates_args(mutates_args, f, api=api)
            sch = schema_from_function(f, mutates_args=mutates, op_name=name, api=api,
                                       tags=tags)
        module, where = _site(f)
        _use_namespace(name.partition("::")[0])
        return _new_op(name, sch, mutates, keys, tags, module, where, api, is_triton=_is_triton,
                       kernel=f, doc_fn=f,
                       defined_by="triton_op" if _is_triton else "custom_op")

    return inner if fn is None else inner(fn)


@overload
def triton_op(name: str, fn: None = None, /, *, mutates_args: str | Iterable[str],
              schema: str | None = None) -> Callable[[Callable[_P, _R]], CustomOpDef[_P, _R]]: ...


@overload
def triton_op(name: str, fn: Callable[_P, _R], /, *, mutates_args: str | Iterable[str],
              schema: str | None = None) -> CustomOpDef[_P, _R]: ...


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """Define an op whose kernels launch Triton kernels through ``wrap_triton``.

    Same arguments and errors as ``custom_op`` (``fn`` is the device-agnostic kernel) and same as
    ``torch.library.triton_op``. ``schema`` is honoured exactly, e.g.
    ``schema="(Tensor x, bool want) -> (Tensor, Tensor?)"`` on an unannotated function. The op is
    flagged ``op.is_triton``: ``tensorplay.compile`` keeps it as one opaque node and never traces
    into the launches. Unless ``register_fake`` gives one, its fake kernel is its own body run on
    fake tensors with the launches skipped (the runtime comes from the ``tensorplay-triton``
    plugin). The kernels must only mutate arguments listed in ``mutates_args``; written arguments
    under autograd follow ``custom_op``'s rule (a leaf that requires grad is written as torch
    writes it; a non-leaf the launches wrote gets a history whose backward raises).
    """
    def inner(f):
        return _custom_op(name, f, mutates_args=mutates_args, device_types=None, schema=schema,
                          tags=(), is_triton=True)
    if fn is not None and not callable(fn):
        raise TypeError(f"triton_op({name!r}): fn must be a function, got {fn!r}")
    return inner if fn is None else inner(fn)


def wrap_triton(kernel: Any, /, **options: Any) -> Any:
    """Mark a Triton kernel as launchable from within a ``triton_op``: ``wrap_triton(k)[grid](*args)``.

    Accepts a ``triton.runtime.jit.JITFunction`` (the ``@triton.jit`` result), an autotuned kernel,
    or any grid-indexable launcher; idempotent on wrappers. ``grid`` is a tuple or a function of the
    meta-parameters. Same as ``torch.library.wrap_triton``; the runtime lives in the
    ``tensorplay-triton`` plugin, and ``options`` (e.g. ``strided=``) are passed to its
    ``wrap_triton``. Raises ``ImportError`` with the install command when that plugin is missing,
    and whatever the plugin raises for a kernel it cannot wrap (``TypeError``).
    """
    _wt = wrap_triton.__dict__.get("_impl")   # cached: op bodies call this on every launch
    if _wt is None:
        try:
            from tensorplay_triton import wrap_triton as _wt
        except ImportError as e:
            raise ImportError("wrap_triton: needs the tensorplay-triton plugin; install it with "
                              "pip install tensorplay-triton (and triton)") from e
        wrap_triton._impl = _wt
    return _wt(kernel, **options)


def _resolve(op, api):
    """A ``CustomOpDef`` from an op object or a qualified name; ``LookupError``/``TypeError``."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str):
        # "ns::op.overload" (torch's OpOverload names) is looked up as it is: "ns::op.default"
        # is "ns::op", and a built-in tp op stands for all of torch's overloads of its name
        try:
            return _registry.lookup(op)
        except LookupError as e:
            from .plugins import manager as _pm
            hint, rec = _pm.op_failure_hint(op), _pm.op_failure(op)
            raise LookupError(f"{api}: {e}" + (f"; {hint}" if hint else
                                                "; define it first (custom_op or define)")) \
                from (rec.error if rec is not None else None)   # the failed plugin's error
    from .ops import OpOverloadPacket
    if isinstance(op, OpOverloadPacket):
        names = ", ".join(f"tensorplay.ops.{op.name.replace('::', '.')}.{o}"
                          for o in op.overloads())
        raise TypeError(f"{api}: {op.name!r} is an overload packet (several operators); "
                        f"register on one overload: {names}")
    raise TypeError(f"{api}: expected a CustomOpDef or a qualified name 'ns::op', got {op!r}")


def _check_lib(lib, api, ns=None, *, defining=False):
    """``lib`` must be an open ``Library`` (of namespace ``ns`` and able to define, if asked)."""
    if lib is None:
        return
    if not isinstance(lib, Library):
        raise TypeError(f"{api}: lib must be a tensorplay.library.Library, got {lib!r}")
    lib._check_open(api)
    if ns is not None and ns != lib.ns:
        raise ValueError(f"{api}: operator namespace {ns!r} does not match the namespace of "
                         f"Library({lib.ns!r}, {lib.kind!r}); use a Library({ns!r}, ...) for it")
    if defining and lib.kind == "IMPL":
        raise ValueError(f"{api}: Library({lib.ns!r}, 'IMPL') cannot define operators; use "
                         f"Library({lib.ns!r}, 'DEF') or Library({lib.ns!r}, 'FRAGMENT')")


def define(qualname: str, schema: str | None = None, *, lib: Library | None = None,
           tags: Any = ()) -> CustomOpDef[..., Any]:
    """Create operator ``qualname`` from a schema string if it is absent (same as
    ``torch.library.define``).

    ``qualname`` is ``"ns::op"`` with ``schema="(Tensor x) -> Tensor"``, or the full
    ``"ns::op(Tensor x) -> Tensor"`` with ``schema`` omitted. ``"ns::op.overload"`` (each part an
    identifier) defines that overload of ``ns::op``, an operator of its own under that name
    (``tensorplay.ops.ns.op.overload``; registrations name it ``"ns::op.overload"``), as torch
    does; ``"ns::op"`` is the default overload, and ``overload`` may not be ``default`` or one of
    the packet's own attributes (``overloads``, ``name``). Written
    arguments (``Tensor(a!)``) become ``op.mutates_args``; each call bumps their version once
    (torch's ``Library.define`` ops with a device kernel do not). Without ``register_autograd``
    the kernel runs as torch's autograd fallback runs it: with grad mode on, so inside it
    ``x.numpy()`` of a tensor that requires grad raises ``RuntimeError`` at the call, and an
    in-place tensorplay op on a written leaf that requires grad raises torch's leaf error
    (``custom_op`` kernels run opaque instead: see ``custom_op``). The op has no kernel yet: attach them
    with ``impl``, ``register_kernel`` or ``Library(ns, "IMPL").impl``; a call before that raises
    ``DispatchError`` listing what is registered. With ``lib``, closing that library removes the op.

    Returns the ``CustomOpDef``. Each operator is defined once, as in torch.library: defining a
    name that exists (through ``define``, a ``Library``, or ``custom_op``) raises
    ``AlreadyDefinedError`` (a ``RuntimeError``) naming where the first definition came from;
    close the ``Library`` that defined it first to define it again.

    ``tags`` are kept on ``op.tags``; a schema tagged ``Tag.inplace`` or ``Tag.out`` must have
    that tag's shape (``(Tensor(a!) x, ...) -> Tensor(a!)``; ``(..., *, Tensor(a!) out) ->
    Tensor(a!)``), as torch 2.13's ``Library.define`` checks: see ``custom_op``'s ``tags``.

    Raises ``ValueError`` for a bad name (two dots, an empty or non-identifier overload, the
    overload ``default``), no schema, a schema given twice or naming another op,
    a malformed schema (``SchemaError``), a tagged schema without its tag's shape (naming the
    argument), or a ``lib`` of another namespace / of kind ``"IMPL"``;
    ``TypeError`` for non-string arguments.
    """
    api = f"define({qualname!r})"
    if not isinstance(qualname, str):
        raise TypeError(f"{api}: qualname must be a str such as 'mylib::op', got "
                        f"{type(qualname).__name__}")
    if schema is None:
        if "(" not in qualname:
            raise ValueError(f"{api}: give a schema, either as the second argument or pasted into "
                             f"qualname: 'ns::op(Tensor x) -> Tensor'")
        sch = _parse_schema(qualname, api)
        if not sch.name:
            raise ValueError(f"{api}: the schema has no operator name; write 'ns::op(...) -> ...'")
    else:
        if "(" in qualname:
            raise ValueError(f"{api}: the schema is given twice (in qualname and as schema=); "
                             f"pass qualname='ns::op' with schema='(...) -> ...'")
        _check_name(qualname, api, overload=True)
        sch = _parse_schema(schema, api)
        if sch.qualname and sch.qualname != qualname:
            raise ValueError(f"{api}: schema {schema!r} names {sch.qualname!r}, not {qualname!r}")
        sch = sch.with_name(qualname)
    _check_name(sch.qualname, api, overload=True)
    _check_lib(lib, api, sch.namespace, defining=True)
    tags = _tags(tags, api)
    check_tagged_schema(sch, tags, api)
    module, where = _site(None)
    _use_namespace(sch.namespace)
    with _registry.transaction():
        op = _new_op(sch.qualname, sch, sch.mutated_args, (), tags, module, where, api,
                     defined_by="define" if lib is None else f"Library({lib.ns!r}, {lib.kind!r})")
    if lib is not None:
        lib._handles.append(RegistrationHandle(lambda: _registry.unregister_op(op)))
        lib._ops.append(op.name)
    return op


@overload
def impl(qualname: str | CustomOpDef[..., Any], types: DeviceTypes, func: None = None, /, *,
         lib: Library | None = None) -> Callable[[_F], _F]: ...


@overload
def impl(qualname: str | CustomOpDef[..., Any], types: DeviceTypes, func: _F, /, *,
         lib: Library | None = None) -> _F: ...


@overload
def impl(qualname: Library, types: str, func: str | None = None, /) -> Callable[[_F], _F]: ...


def impl(qualname, types, func=None, /, *, lib=None):
    """Attach ``func`` as the kernel of op ``qualname`` (``"ns::op"``, an overload
    ``"ns::op.overload"``, or a ``CustomOpDef``) for
    ``types`` (same as ``torch.library.impl``); decorator when ``func`` is omitted.

    torch's older form, which torch still accepts, is a decorator too:
    ``impl(lib, name, dispatch_key="")`` with a ``Library`` first, then the op's name (as
    ``Library.impl`` takes it: ``"op"`` in the library's namespace, ``"ns::op"``...) and a
    dispatch key; ``@impl(lib, "op", "CPU") def f(x): ...`` is ``lib.impl("op", f, "CPU")`` (the
    same registration, undone when the library closes) and returns ``f``. A function given in
    that form, or ``lib=``, raises ``TypeError`` (as torch's).

    ``types``: concrete devices (``"cpu"``, ``"CUDA"``, a list) or composite spellings
    (``"CompositeExplicitAutograd"``/``"CompositeImplicitAutograd"``/``"default"``/``None``: the
    device-agnostic slot), or torch's autograd dispatch keys (``"Autograd"``, ``"AutogradCPU"``,
    ``"AutogradCUDA"``; see ``Library.impl``), alone or in the list. ``func`` must take the op's
    parameters. With ``lib`` the registration is undone when the library closes. Returns
    ``func``.

    Raises ``LookupError`` when the op does not exist, ``ValueError`` for a bad device spelling
    or autograd key, a built-in op, a ``func`` that cannot bind the schema, or a device kernel
    on an op that cannot dispatch to it.
    """
    if isinstance(qualname, Library):
        return _impl_on_library(qualname, types, func, lib)
    api = f"impl({qualname!r})"
    op = _resolve(qualname, api)
    _check_lib(lib, api, op.namespace)
    return _register_kernel(op, types, func, lib, api)


def _impl_on_library(library, name, dispatch_key, lib):
    """``impl(library, name, dispatch_key)``: torch's older form of ``impl``, a decorator doing
    ``library.impl(name, f, dispatch_key)`` (``dispatch_key`` None: omitted, the library's
    default key). Raises ``TypeError`` for a function in the key's place or ``lib=`` (torch's
    form takes neither)."""
    api = f"impl({library!r}, {name!r})"
    if lib is not None:
        raise TypeError(f"{api}: lib= is not taken with a Library as first argument (torch's "
                        f"older form impl(lib, name, dispatch_key)); the registration belongs "
                        f"to that library already")
    if dispatch_key is None:
        dispatch_key = ""
    if not isinstance(dispatch_key, str):
        raise TypeError(f"{api}: with a Library first, impl(lib, name, dispatch_key) is a "
                        f"decorator (torch's older form): the third argument is a dispatch key "
                        f"such as 'CPU', got {dispatch_key!r}. Write @impl(lib, {name!r}, 'CPU') "
                        f"over the function, or lib.impl({name!r}, fn, 'CPU')")

    def wrap(f):
        library.impl(name, f, dispatch_key)
        return f
    return wrap


_NO_TYPES = object()   # _split_autograd: every key given was an autograd key


def _split_autograd(types, api):
    """``(autograd keys, the other types)`` of ``impl``/``register_kernel``'s ``types``: the
    registry keys of torch's autograd dispatch keys among them (``_registry.autograd_key``), and
    the rest as given (``_NO_TYPES`` when nothing is left: an empty list would mean the
    device-agnostic slot). Anything that is not a list of spellings is left to
    ``register_kernel``'s own checks."""
    if isinstance(types, str):
        k = _registry.autograd_key(types, api)
        return ((), types) if k is None else ((k,), _NO_TYPES)
    if types is None or hasattr(types, "type"):
        return (), types
    try:
        items = list(types)
    except TypeError:
        return (), types
    keys = [_registry.autograd_key(t, api) for t in items]
    if not any(k is not None for k in keys):
        return (), types
    rest = [t for t, k in zip(items, keys) if k is None]
    return tuple(dict.fromkeys(k for k in keys if k is not None)), (rest or _NO_TYPES)


def _register_kernel(op, types, func, lib, api):
    """``impl``/``register_kernel``: the device kernels through ``op.register_kernel``, torch's
    autograd keys through ``op._register_autograd_kernel``; decorator when ``func`` is None."""
    ag, rest = _split_autograd(types, api)
    if not ag:
        return op.register_kernel(types, func, _lib=lib)

    def inner(f):
        if rest is not _NO_TYPES:
            op.register_kernel(rest, f, _lib=lib)
        return op._register_autograd_kernel(ag, f, api=api, _lib=lib)
    return inner if func is None else inner(func)


@overload
def register_kernel(op: str | CustomOpDef[..., Any], device_types: DeviceTypes, func: None = None,
                    /, *, lib: Library | None = None) -> Callable[[_F], _F]: ...


@overload
def register_kernel(op: str | CustomOpDef[..., Any], device_types: DeviceTypes, func: _F, /, *,
                    lib: Library | None = None) -> _F: ...


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """Register ``func`` as the kernel of ``op`` (a ``CustomOpDef``, ``"ns::op"`` or
    ``"ns::op.overload"``) for
    ``device_types``; ``None``/empty iterable/composite spellings mean the device-agnostic slot.
    Usable directly or as a decorator (same as ``torch.library.register_kernel``); returns ``func``.

    A kernel for a concrete device wins over the device-agnostic one for calls on that device.
    torch's autograd dispatch keys (``"Autograd"``, ``"AutogradCPU"``...) are taken as
    ``impl`` takes them (torch's ``register_kernel`` passes them on to ``impl``; the
    ``CustomOpDef.register_kernel`` method takes device types only, as torch's).
    Raises ``LookupError`` for an unknown op name, ``ValueError`` for a bad spelling or a ``func``
    whose signature cannot take the op's parameters, ``TypeError`` for a bad ``op``.
    """
    api = f"register_kernel({op!r})"
    o = _resolve(op, api)
    _check_lib(lib, api, o.namespace)
    return _register_kernel(o, device_types, func, lib, api)


@overload
def register_fake(op: str | CustomOpDef[..., Any], func: None = None, /, *,
                  lib: Library | None = None, _stacklevel: int = 1) -> Callable[[_F], _F]: ...


@overload
def register_fake(op: str | CustomOpDef[..., Any], func: _F, /, *, lib: Library | None = None,
                  _stacklevel: int = 1) -> _F: ...


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1):
    """Register the fake (meta) kernel of ``op`` (a ``CustomOpDef``, ``"ns::op"`` or
    ``"ns::op.overload"``); directly or
    as a decorator (same as ``torch.library.register_fake``). Returns ``func``.

    The fake kernel receives fake tensors (shape, dtype, device, strides; no data) and returns fake
    outputs with the metadata the real kernel would produce. Raises ``LookupError`` for an unknown
    op, ``ValueError`` when ``func``'s signature cannot take the op's parameters (checked at
    registration, naming the missing parameter).

    Without one: an op that returns nothing and mutates declared arguments gets a fake that does
    nothing (same as torch: a custom op may not change its arguments' metadata); otherwise a
    device-agnostic kernel runs on the fake tensors as its own fake; otherwise running the op on
    fake tensors (``FakeTensorMode``, ``tensorplay.compile``, opcheck's ``test_faketensor``)
    raises an error naming ``register_fake``.
    """
    api = f"register_fake({op!r})"
    o = _resolve(op, api)
    _check_lib(lib, api, o.namespace)
    return o.register_fake(func, _lib=lib)


@overload
def register_autograd(op: str | CustomOpDef[..., Any], backward: None = None, /, *,
                      setup_context: Callable[..., Any] | None = None,
                      lib: Library | None = None) -> Callable[[_F], _F]: ...


@overload
def register_autograd(op: str | CustomOpDef[..., Any], backward: _F, /, *,
                      setup_context: Callable[..., Any] | None = None,
                      lib: Library | None = None) -> _F: ...


def register_autograd(op, backward=None, /, *, setup_context=None, lib=None):
    """Register the backward formula of ``op`` (a ``CustomOpDef``, ``"ns::op"`` or
    ``"ns::op.overload"``); same as
    ``torch.library.register_autograd``.

    ``setup_context(ctx, inputs, output)`` saves what ``backward(ctx, *grads)`` needs; backward
    returns one gradient per op input (``None`` for non-differentiable ones). Without a formula a
    kernel written with tensorplay ops is differentiated through its body. Raises ``LookupError``
    for an unknown op, ``ValueError`` when ``backward``/``setup_context`` is not callable or has
    the wrong signature, or the op mutates its inputs (same rule as torch). Returns ``backward``;
    with ``backward`` omitted, a decorator.
    """
    api = f"register_autograd({op!r})"
    o = _resolve(op, api)
    _check_lib(lib, api, o.namespace)
    return o.register_autograd(backward, setup_context=setup_context, _lib=lib)


def get_kernel(op: str | CustomOpDef[..., Any], dispatch_key: str) -> Callable[..., Any]:
    """The kernel registered for exactly ``dispatch_key``.

    ``op``: a ``CustomOpDef`` or ``"ns::op"``, with an optional overload name as torch spells
    them (``"ns::op.out"``: that overload; ``"ns::op.default"``: ``ns::op``; ``"tp::add.Tensor"``:
    a built-in op stands for all of torch's overloads of its name). ``dispatch_key``: ``"cpu"``,
    ``"cuda"`` (any case), ``"default"`` or a composite spelling (the device-agnostic slot), or
    torch's autograd keys (``"Autograd"``, ``"AutogradCPU"``...: the kernel ``Library.impl``
    registered there). A concrete key does not fall back to the device-agnostic kernel (nor
    ``"AutogradCPU"`` to ``"Autograd"``): ask ``"default"`` for that. Raises ``LookupError`` when
    nothing usable is registered for the key -- a kernel disabled by ``set_kernel_enabled`` counts
    as absent -- or the op does not exist; ``ValueError`` for an unknown spelling.
    """
    o = _resolve(op, f"get_kernel({op!r})")
    api = f"get_kernel({o.name!r}, {dispatch_key!r})"
    ag = _registry.autograd_key(dispatch_key, api)
    if ag is not None:
        # torch's autograd keys: exactly that key's kernel (AutogradCPU does not fall back to
        # Autograd, as a concrete device key does not fall back to 'default')
        found = o.autograd_kernels
        k = found.get(_registry.autograd_key_name(ag))
        if k is None:
            raise LookupError(f"{api}: no kernel registered for {dispatch_key!r} (autograd keys "
                              f"registered: {', '.join(sorted(found)) or 'none'})")
        return k
    key = _registry.normalize_device_type(dispatch_key, api)
    if o.is_builtin and key != "default" and o.active_kernel(key) is None:
        # a built-in op's kernels are bound by its device's backend when that loads: load it
        # (as a call on that device would) before reading the kernel
        from . import _devices
        try:
            _devices.load(key)
        except Exception as e:  # noqa: BLE001 - no such device: one LookupError naming it
            raise LookupError(f"{api}: {e}") from e
    k = o.active_kernel(key)
    if k is None:
        registered = ", ".join(sorted(o.kernels)) or "none"
        if o.kernel_stack(key) and not o.is_kernel_enabled(key):
            raise LookupError(f"{api}: the {key!r} kernel is disabled by set_kernel_enabled "
                              f"(registered: {registered}); re-enable it to get it")
        fix = "" if key == "default" else " (a concrete key never falls back to 'default')"
        raise LookupError(f"{api}: no kernel registered for {key!r}{fix} (registered: "
                          f"{registered})")
    return k


def fallthrough_kernel(*args, **kwargs):
    """Placeholder with torch's name; passing it to ``Library.impl`` raises ``ValueError``
    (tensorplay has no fallthrough keys). Calling it raises ``NotImplementedError``."""
    raise NotImplementedError("fallthrough_kernel: fallthrough kernels are not supported by "
                              "tensorplay; register a real kernel")


def opcheck(op: str | CustomOpDef[..., Any], args: tuple[Any, ...],
            kwargs: dict[str, Any] | None = None, *, test_utils: str | Sequence[str] = "DEFAULT",
            raise_exception: bool = True, atol: float | None = None,
            rtol: float | None = None) -> dict[str, Any]:
    """Check that ``op`` is registered correctly on one sample; see
    ``tensorplay.testing.opcheck.opcheck`` (same idea as ``torch.library.opcheck``).

    Returns ``{test name: failure}`` (empty: all passed); with ``raise_exception`` a failure raises
    ``OpCheckError`` carrying that mapping. The caller's tensors are never mutated.
    """
    from .testing.opcheck import opcheck as _opcheck
    return _opcheck(op, args, kwargs, test_utils=test_utils, raise_exception=raise_exception,
                    atol=atol, rtol=rtol)


class Library:
    """A scope of registrations in one namespace (same as ``torch.library.Library``).

    ``kind``: ``"DEF"`` (defines ops; at most one open DEF library per namespace), ``"FRAGMENT"``
    (defines more ops in a namespace), ``"IMPL"`` (only attaches kernels). ``dispatch_key`` is the
    default key of ``impl``. Every registration made through the library (``define``, ``impl``,
    and the module-level functions given ``lib=``) is undone by ``_destroy()`` (alias ``close()``,
    also on ``with`` exit), newest first.

    Raises ``ValueError`` for an unknown kind, a namespace that is not an identifier, or the
    reserved namespace ``"tp"`` (built-ins come from the core and device plugins);
    ``AlreadyDefinedError`` (a ``RuntimeError`` as in torch, also a ``ValueError``) for a second
    open DEF library of a namespace, naming where the first was created; a closed library refuses
    further registrations (``RuntimeError``). A library opened by a plugin that then fails to load
    is closed by the plugin's rollback.

    Where we differ from torch: a library is *not* closed when it is garbage-collected (torch
    registers a finalizer, so ``Library("ns", "IMPL").impl(...)`` on a temporary silently undoes
    itself); registrations stay until ``_destroy()``/``close()``/``with`` exit.

    Example::

        with tensorplay.library.Library("mylib", "FRAGMENT") as L:
            L.define("twice(Tensor x) -> Tensor")
            L.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
            tensorplay.ops.mylib.twice(tensorplay.ones(2))   # tensor([2.0, 2.0])
        # here mylib::twice no longer exists
    """

    _live_defs: dict = {}

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("DEF", "FRAGMENT", "IMPL"):
            raise ValueError(f"Library({ns!r}, {kind!r}): kind must be 'DEF', 'FRAGMENT' or "
                             f"'IMPL'")
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"Library({ns!r}, {kind!r}): the namespace must be a Python "
                             f"identifier such as 'mylib'")
        if ns == _registry.RESERVED_NAMESPACE:
            raise _registry.reserved_error(f"Library({ns!r}, {kind!r})",
                                           f"the namespace {ns!r}")
        api = f"Library({ns!r}, {kind!r})"
        # Meta: impl registers fakes; torch's autograd keys: impl registers autograd kernels
        if dispatch_key and str(dispatch_key).lower() != "meta" and \
                _registry.autograd_key(dispatch_key, api) is None:
            _registry.normalize_device_type(dispatch_key, api)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._handles: list = []
        self._ops: list = []
        self._where = _site(None)[1]
        self._closed = False
        _use_namespace(ns)
        if kind == "DEF":
            with _registry.transaction():
                other = Library._live_defs.get(ns)
                if other is not None:
                    raise AlreadyDefinedError(
                        f"Library({ns!r}, 'DEF'): namespace {ns!r} already has a DEF library "
                        f"(created at {other._where}); use kind='FRAGMENT' to add ops to it, or "
                        f"close the other one first")
                Library._live_defs[ns] = self
        # opened while a plugin loads: if that plugin fails, its rollback closes this library
        # (releasing the namespace and everything registered through it)
        _registry.record(RegistrationHandle(self._destroy))

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"Library({self.ns!r}, {self.kind!r}) [{state}]"

    def _check_open(self, api: str) -> None:
        if self._closed:
            raise RuntimeError(f"{api}: {self!r} was closed; create a new Library to register")

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Define ``<ns>::<name>`` from ``"name(Tensor x) -> Tensor"`` (a name already carrying
        this namespace is accepted) and return the operator's name as the schema writes it,
        without an overload, as torch does: ``"name"`` (``"ns::name"`` when written so).
        ``"name.overload(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"`` defines the overload
        ``<ns>::<name>.overload`` and returns ``"name"`` (see ``define``).
        ``alias_analysis`` is accepted for torch compatibility and ignored (aliasing comes from
        the schema's annotations); ``tags`` are kept on the op. Under autograd the op follows
        ``define``'s rule (torch's autograd fallback: the kernel runs with grad mode on).

        Raises ``ValueError`` on an IMPL library, for another namespace, or a malformed schema
        (``SchemaError``); ``RuntimeError`` when the library is closed. See ``define``.
        """
        api = f"Library({self.ns!r}, {self.kind!r}).define"
        self._check_open(api)
        if not isinstance(schema, str):
            raise TypeError(f"{api}: schema must be a str such as 'op(Tensor x) -> Tensor'")
        head = schema.split("(")[0]
        text = schema if "::" in head else f"{self.ns}::{schema.lstrip()}"
        define(text, lib=self, tags=tags)
        # torch returns the parsed schema's operator name: as written, overload dropped
        return head.strip().partition(".")[0]

    def impl(self, op_name: str | CustomOpDef[..., Any], fn: Callable[..., Any],
             dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Attach ``fn`` as the kernel of ``op_name`` (``"op"`` or ``"op.overload"`` in this
        namespace, ``"ns::op"``, ``"ns::op.overload"`` or a ``CustomOpDef``) for ``dispatch_key`` (default: the library's key, else the
        device-agnostic slot). ``"Meta"`` registers the fake kernel. Undone when the library
        closes.

        torch's autograd keys: ``"Autograd"`` makes ``fn`` the op's autograd kernel on every
        device, ``"AutogradCPU"``/``"AutogradCUDA"`` on that device only (winning over
        ``"Autograd"`` there). It runs for calls where an input requires grad and grad mode is
        on, instead of the op's formula (``register_autograd``, shadowed meanwhile: ``backward_fn``
        is None) or differentiating through the kernel. torch's pattern, as documented::

            class TripleFn(tensorplay.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return tensorplay.ops.mylib.triple(x)   # below autograd: grad mode is off
                @staticmethod
                def backward(ctx, g):
                    return g * 3
            lib.impl("triple", TripleFn.apply, "Autograd")

        ``Function.forward`` runs with grad mode off, and with grad mode off a call goes below
        autograd (the device kernel), so there is no separate "below autograd" guard (torch's is
        the private ``torch._C._AutoDispatchBelowAutograd``): ``with tensorplay.no_grad():`` is
        it, in a plain function too. Where we differ: torch calls the autograd kernel on every
        call; here calls without an input that requires grad, or with grad mode off, go below
        autograd directly (an ``autograd.Function`` returns the same). ``tensorplay.compile``
        runs such an op's calls that need a gradient eagerly (through this kernel); ``opcheck``
        checks its gradients like a formula's.

        Raises ``LookupError`` for an unknown op, ``ValueError`` for an op of another namespace
        (same rule as torch), a bad key (an autograd key of an unknown device: ``AutogradOther``,
        ``AutogradMeta``), a built-in op, ``fallthrough_kernel``, ``with_keyset=True`` or a
        ``fn`` that cannot take the op's parameters; ``RuntimeError`` when the library is closed.
        """
        api = f"Library({self.ns!r}, {self.kind!r}).impl"
        self._check_open(api)
        if with_keyset:
            raise ValueError(f"{api}: with_keyset=True is not supported (tensorplay kernels do "
                             f"not receive a dispatch key set)")
        if fn is fallthrough_kernel:
            raise ValueError(f"{api}: fallthrough kernels are not supported by tensorplay")
        if isinstance(op_name, CustomOpDef):
            name = op_name.name
        elif isinstance(op_name, str):
            name = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        else:
            raise TypeError(f"{api}: op_name must be a str or a CustomOpDef, got {op_name!r}")
        op = _resolve(name, api)
        if op.namespace != self.ns:
            raise ValueError(f"{api}: operator {op.name!r} is not in namespace {self.ns!r}; use "
                             f"Library({op.namespace!r}, 'IMPL') for it")
        key = dispatch_key or self.dispatch_key or "default"
        low = key.lower() if isinstance(key, str) else ""
        if low == "meta":
            op.register_fake(fn, _lib=self)
            return
        ag = _registry.autograd_key(key, api)
        if ag is not None:
            op._register_autograd_kernel((ag,), fn, api=api, _lib=self)
            return
        op.register_kernel(key, fn, _lib=self)

    def _destroy(self) -> None:
        """Undo every registration made through this library, newest first (idempotent)."""
        with _registry.transaction():
            if self._closed:
                return
            self._closed = True
            handles, self._handles = self._handles, []
            for h in reversed(handles):
                h.destroy()
            self._ops.clear()
            if Library._live_defs.get(self.ns) is self:
                del Library._live_defs[self.ns]

    close = _destroy

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> bool:
        self._destroy()
        return False
