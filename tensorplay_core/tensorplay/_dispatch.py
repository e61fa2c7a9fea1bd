"""The call path: device key from the arguments -> kernel -> run. Kept flat.

For every op, ``make_call`` generates (once, at definition) a ``__call__`` with the op's exact
Python signature, so argument binding is done by the interpreter itself. Its body reads the
``_dkey`` attribute of each tensor parameter, compares them with ``is`` and indexes the op's
dispatch table. Only when keys differ (mixed devices, autograd, fake, capture) does it leave the
fast path for ``resolve_key``. No hook calls, no validation the contract says is trusted
(``mutates_args`` is trusted in eager mode; ``opcheck`` verifies it). A custom op's result gets
one class test (and a length for several outputs) against its schema's returns, as torch
converts it (``_return_test``); only a miss takes the slow path (``bad_return``).

The non-device entries of the table (``meta``, ``autograd``, ``capture``) are built by the layers
that own them (``fake``, ``autograd.function``, ``_capture``); the package root installs those
builders in the registry (``_registry.install_entry_builders``).
"""

from __future__ import annotations

import threading

from . import _codegen, _registry
from ._schema import NO_DEFAULT, mutation_tag
from ._tensor_base import TensorBase, check_partial_overlap, instance_class
from .errors import DispatchError


class _ModeState(threading.local):
    """The dispatch mode of the calling thread for calls that have no tensor argument
    (factories): ``"meta"`` inside ``FakeTensorMode``, ``"capture"`` while ``tensorplay.compile``
    captures, else None. Per thread, as in torch: a new thread starts with no mode. Read by the
    generated code with one attribute lookup."""

    def __init__(self):
        self.mode = None


_state = _ModeState()


class _GradState(threading.local):
    """Per-thread grad flag (``tensorplay.autograd.grad_mode`` sets it; re-exported there as
    ``_state``); ``__init__`` runs once in each thread that reads it, so every new thread starts
    with grad enabled (torch semantics). It lives here, below the ops, because the built-in ops'
    fused formulas read it too; readers bind the object at import and read ``.enabled`` with one
    C-level attribute lookup."""

    def __init__(self):
        self.enabled = True
        self.saved = []      # the engine's grad-off stack (autograd.graph._GRAD_OFF)


grad_state = _GradState()


class GradModeCtx:
    """Set this thread's grad mode to ``mode`` for a block (``with``) or a decorated function,
    and put the previous mode back after. ``autograd.grad_mode``'s ``no_grad``/``enable_grad``/
    ``inference_mode`` are its public subclasses; the built-in ops below autograd use
    ``NoGradBlock`` (their composite bodies run their inner ops without recording)."""

    mode = True

    def __enter__(self):
        g = grad_state.__dict__          # this thread's flags: one thread-local lookup
        self.prev = g["enabled"]
        g["enabled"] = self.mode
        return self

    def __exit__(self, *exc):
        grad_state.enabled = self.prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__():
                return fn(*a, **k)
        return wrapper


class NoGradBlock(GradModeCtx):
    """Grad mode off for the block (what ``tensorplay.no_grad`` does), for the ops layer."""

    mode = False

_KIND_TENSOR, _KIND_OPT, _KIND_LIST, _KIND_DEVICE = "tensor", "optional_tensor", "tensor_list", "device"


def flat_tensors(args, kwargs=None) -> list:
    """Every Tensor among ``args``/``kwargs`` values, looking one level into lists/tuples."""
    T = TensorBase
    out = []
    for v in (list(args) + list(kwargs.values())) if kwargs else args:
        if isinstance(v, T):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(x for x in v if isinstance(x, T))
    return out


def resolve_key(op, tensors, device=None) -> str:
    """The slow path: choose the dispatch key when the tensor arguments disagree.

    Priority: capture > autograd (an input requires grad) > meta (fake inputs) > device type.
    Raises ``DispatchError`` naming both devices when tensors live on different devices
    (0-dim cpu tensors may join any device, as in torch), captured calls included.
    """
    if not tensors:
        mode = _state.mode
        if device is None:
            if mode is not None:
                return mode
            return "default"
        return mode or _device_key(op, device)
    keys = {t.dispatch_key for t in tensors}
    # capture tensors count with the device they stand for: a call on several devices is
    # refused below before it is recorded, as eagerly (and before any shape rule runs)
    # str(device) -> a tensor on it that decides (None: only 0-dim cpu tensors there, which may
    # join any device, as in torch). Fake tensors count with the device they stand for.
    devs = {}
    for t in tensors:
        d = t.device
        s = str(d)
        scalar = d.type == "cpu" and t.ndim == 0
        if devs.get(s) is None:
            devs[s] = None if scalar else t
    if len(devs) > 1:
        real = [t for t in devs.values() if t is not None]
        if len(real) != 1:
            names = ", ".join(sorted(devs))
            raise DispatchError(
                f"{op.label}: expected all tensors on one device, found tensors on {names}. "
                f"Move them with .to(device) first.")
    if "capture" in keys:
        return "capture"
    if "autograd" in keys:
        return "autograd"
    if "meta" in keys:
        return "meta"
    if len(devs) > 1:   # cpu scalar + device tensor: the device tensor decides
        return real[0].backend_key
    return tensors[0].backend_key


def backend_key(tensors) -> str:
    """Dispatch key below autograd: ``meta`` if any tensor is fake, else the device type."""
    k = None
    for t in tensors:
        b = t.backend_key
        if b == "meta":
            return "meta"
        if k is None or (t.ndim != 0 or t.device.type != "cpu"):
            k = b
    return k


def autograd_kernel_entry(op, below):
    """The ``autograd`` table entry of an op with kernels at torch's autograd keys
    (``op._autograd_kernel_fns``: ``"default"`` for ``Autograd``, device types for
    ``Autograd<Device>``), around ``below``, the entry the autograd layer built otherwise.

    The entry is reached only by calls where an input requires grad. With grad mode on the
    registered kernel runs: the one of the call's device (the type the tensors are on, or
    stand for when fake), else the ``Autograd`` one, else ``below``. With grad mode off the
    call goes to ``below``, which runs the op below autograd: that is how the usual kernel, an
    ``autograd.Function``'s ``apply`` whose ``forward`` (run with grad off) calls the op again,
    reaches the device kernel instead of itself. Built at registration: ops without such
    kernels keep ``below`` itself, and with only ``Autograd`` registered the entry costs one
    grad-mode read."""
    kernels = dict(op._autograd_kernel_fns)
    g = grad_state
    only = kernels.get("default") if len(kernels) == 1 else None
    if only is not None:
        def autograd_kernel(*args, **kwargs):
            if g.enabled:
                return only(*args, **kwargs)
            return below(*args, **kwargs)
        return autograd_kernel
    fallback = kernels.get("default", below)

    def autograd_kernel_by_device(*args, **kwargs):
        if g.enabled:
            fn = kernels.get(_device_type(flat_tensors(args, kwargs)), fallback)
            return fn(*args, **kwargs)
        return below(*args, **kwargs)
    return autograd_kernel_by_device


def _device_type(tensors) -> str | None:
    """The device type a call's tensors are on (a fake tensor's: the device it stands for); a
    0-dim cpu tensor yields to a tensor on another device, as in ``resolve_key``."""
    k = None
    for t in tensors:
        d = t.device.type
        if k is None or t.ndim != 0 or d != "cpu":
            k = d
    return k


def _device_key(op, device) -> str:
    """Dispatch key of a call without tensors: the type of its ``device`` argument.

    Raises ``TypeError`` naming the parameter when the value is not a device (a
    ``tensorplay.device``, a string such as ``"cpu"``/``"cuda:1"``, or a CUDA index).
    """
    from ._device import Device
    try:
        return Device(device).type
    except (TypeError, ValueError) as e:
        pname = next((a.name for a in op.schema.arguments if a.kind == _KIND_DEVICE), "device")
        raise TypeError(f"{op.label}: argument '{pname}' must be a device such as "
                        f"tensorplay.device('cpu') or 'cuda:0', got {type(device).__name__} "
                        f"({device!r:.60}): {e}") from None


def bad_arguments(op, values: dict, exc=None, number_self=None):
    """Off the fast path: reading the device of the arguments failed (``exc``, an
    ``AttributeError``/``TypeError``). Raise ``TypeError`` naming the first argument whose value
    does not fit its schema type (``Tensor``, ``Tensor?``, ``Tensor[]``); if every argument fits,
    re-raise ``exc`` (e.g. the ``TypeError`` of a bad ``device`` argument).

    ``number_self`` (a built-in binary op's, ``defop(number_self=...)``): the name of the
    Tensor method that computes ``op(number, tensor)`` with the tensor second, e.g.
    ``"__rpow__"`` for ``pow(2, t)`` (torch's ``pow.Scalar`` overload); a Python number as the
    first argument with a tensor second is answered by it (its result returned) instead of
    refused. Only this error path pays for it."""
    T = TensorBase
    if number_self is not None:
        args = op.schema.arguments
        s, o = values.get(args[0].name), values.get(args[1].name)
        s = as_number(s)         # a NumPy scalar first: the number torch reads it as
        if isinstance(s, (int, float)) and isinstance(o, T) and len(values) == 2:
            r = getattr(o, number_self)(s)
            if r is not NotImplemented:
                return r
    scalar_ok = getattr(op, "_scalar_ok", ())
    for a in op.schema.arguments:
        v = values.get(a.name)
        kind = a.kind
        ok = True
        if kind == _KIND_TENSOR:
            ok = isinstance(v, T) or (a.name in scalar_ok and isinstance(v, (int, float, bool)))
        elif kind == _KIND_OPT:
            ok = v is None or isinstance(v, T)
        elif kind == _KIND_LIST:
            ok = (v is None and a.type.endswith("?")) or isinstance(v, (list, tuple)) and all(
                isinstance(x, T) or (x is None and a.type.startswith("Tensor?")) for x in v)
        if not ok:
            # from None: the caller's failed read of a non-tensor's device is not news
            raise TypeError(f"{op.label}: argument '{a.name}' must be {a.type}, got "
                            f"{type(v).__name__} ({v!r:.60})") from None
    if exc is not None:
        raise exc
    raise TypeError(f"{op.label}: could not dispatch arguments {values!r:.200}")


class _Unset:
    """Default of a generated parameter that the caller must still supply (a positional
    argument after one with a default, a renamed keyword-only argument)."""

    __slots__ = ()

    def __repr__(self):
        return "<required>"


_UNSET = _Unset()

# schema base type -> (exact classes taken without a check, torch's type name)
_CHECKED = {"SymInt": ((int,), "int"), "int": ((int,), "int"), "float": ((float, int), "float"),
            "bool": ((bool,), "bool"), "str": ((str,), "str"),
            "Scalar": ((float, int), "number")}


def _accepts(base: str, v) -> bool:
    """Whether ``v`` fits the non-tensor schema type ``base`` of a custom op's argument (torch's
    dispatcher rules: ``int`` takes bools but refuses floats, ``float`` takes ints but not
    strings, ``bool`` only bools)."""
    t = type(v)
    if base in ("SymInt", "int"):
        # ints, bools (torch.library's custom ops take True for an int: it is an int) and
        # integer-like objects (numpy integers and bools: __index__); floats have no __index__
        return hasattr(t, "__index__") or _np_bool(t)
    if base == "float":
        return t is not str and (hasattr(t, "__float__") or hasattr(t, "__index__"))
    if base == "bool":
        return t is bool or _np_bool(t)
    if base == "str":
        return isinstance(v, str)
    if base == "Scalar":
        return t is not str and (hasattr(t, "__float__") or hasattr(t, "__index__") or
                                 hasattr(t, "__complex__"))
    return True


def _np_bool(t) -> bool:
    return t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")


def _type_name(a) -> str:
    return a.type.replace("SymInt", "int")


def check_arg(op, i: int, v) -> None:
    """Off the fast path: argument ``i`` of ``op`` (a non-tensor schema type) does not have the
    exact expected class. Return when it fits anyway (an int subclass, a numpy scalar, ``None``
    for an optional type, a tuple for a list); else raise ``TypeError`` with torch's message:
    ``Expected a value of type 'int' for argument 'n' but instead found type 'float'.``"""
    from ._schema import _type_info
    a = op.schema.arguments[i]
    info = _type_info(a.type)
    ok = True
    if v is None:
        ok = info.accepts_none
    elif info.is_list:
        if isinstance(v, (list, tuple)):
            ok = all((x is None and info.elem_optional) or (x is not None and _accepts(info.base, x))
                     for x in v)
        else:
            # "int[2] stride=1" broadcasts a single int, as in torch; "int[]" refuses a scalar
            ok = info.size is not None and info.base in ("SymInt", "int") and _accepts(info.base, v)
    else:
        ok = _accepts(info.base, v)
    if not ok:
        raise TypeError(f"{op.label}: Expected a value of type '{_type_name(a)}' for argument "
                        f"'{a.name}' but instead found type '{type(v).__name__}'.")


def as_number(v):
    """``v`` given where an op takes a tensor or a number: a NumPy scalar becomes the Python
    number torch's argument parser reads it as -- ``np.integer`` -> ``int``; ``np.bool_``,
    ``np.floating`` -> ``float`` (torch reads a NumPy bool as a double: ``int64 tensor *
    np.bool_(True)`` is float32); ``np.complexfloating`` -> ``complex`` -- so it promotes as a
    Python number does (weakly), eagerly and in a capture alike. Anything else (a 0-dim
    ``ndarray`` included) is returned unchanged, for the dispatch to accept or refuse."""
    t = v.__class__
    if t.__module__ != "numpy" or t.__name__ == "ndarray" or getattr(v, "ndim", None) != 0:
        return v
    kind = getattr(getattr(v, "dtype", None), "kind", None)
    if kind in ("i", "u"):
        return int(v)
    if kind in ("f", "b"):
        return float(v)
    if kind == "c":
        return complex(v)
    return v


def _missing(op, name: str):
    raise TypeError(f"{op.name}() missing 1 required argument: '{name}'")


def _check_source(a, i: int, n: str):
    """Generated check of non-tensor argument ``a`` (local ``n``): class comparisons only (per
    element for lists) on the fast path; ``check_arg`` decides the rest (and raises)."""
    from ._schema import _type_info
    info = _type_info(a.type)
    exact = _CHECKED.get(info.base)
    if exact is None:
        return None
    cond = " and ".join(f"{{e}}.__class__ is not __c_{c.__name__}" for c in exact[0])
    if info.is_list:
        elem = cond.format(e="__x")
        head = f"{n}.__class__ is not __c_list and {n}.__class__ is not __c_tuple"
        items = n
        if info.list_optional:
            head = f"{n} is not None and {head}"
            items = f"{n} if {n} is not None else ()"
        return (f"if {head}: __chk(__op, {i}, {n})\n"
                f"else:\n"
                f"    for __x in {items}:\n"
                f"        if {elem}: __chk(__op, {i}, {n}); break")
    c = cond.format(e=n)
    if info.accepts_none:
        c = f"{n} is not None and {c}"
    return f"if {c}: __chk(__op, {i}, {n})"


def make_call(op, scalar_ok=(), number_self=None, out=None, partial=(),
              overlap_ok=None) -> None:
    """Generate ``op.__call__`` with the op's signature and install it on a per-op subclass.

    ``out``: for a built-in op that torch's function of the same name gives ``out=``, the
    handler ``out(op, out_value, extra, {schema name: value})`` of a call passing ``out=`` (not
    None): the generated call then takes ``out`` after the schema's positional parameters and
    hands such a call to the handler before any dispatch. ``out`` is keyword-only as torch's:
    a hidden positional parameter ``__p=None`` before it takes an extra positional argument,
    which the handler refuses (``TypeError``); both are positional parameters with defaults
    (copied from the defaults tuple: a keyword-only default would cost a dict lookup per
    call), and a call without them pays one ``out is not __p`` test. ``inspect.signature``
    shows ``out`` keyword-only and no ``__p``. The Tensor methods bound to the op
    (``bind_methods``) keep the function without ``out`` (methods take no ``out=``, as torch's).

    ``partial``: names of tensor arguments that the op's first written argument must not
    partially overlap (torch's ``assert_no_partial_overlap`` of its in-place ops: ``add_``,
    ``copy_``...; ``_tensor_base.partial_overlap``). The call tests whether such an argument's
    storage root is the written one's (two slot reads a side, one ``is``; a Python number in a
    ``scalar_ok`` argument pays nothing) and only then calls ``check_partial_overlap``.

    ``overlap_ok``: None (the default) refuses a write into an expanded tensor (a written
    argument with a dimension of stride 0 and size > 1: ``check_overlap``); a tuple of schema
    names allows it when none of those arguments is a Tensor (``()``: always), for the built-in
    ops torch writes through such memory (``fill_`` with a number, ``masked_fill_``,
    ``index_put_``: every element sharing a location gets the same value, or torch does not
    check).

    The generated function takes exactly the schema's parameters (the op itself is bound in its
    namespace, not a parameter, so arity errors count the caller's arguments). Schema names are
    the only text taken from the schema; every value (defaults, the op, the table) is bound by
    name in the function's namespace. ``number_self``: see ``bad_arguments`` (a number as the
    first argument, handled on the error path only).
    """
    sch = op.schema
    call_args, ns, names = [], {}, []
    tensor_params = []   # (pyname, kind)
    none_ok = set()      # lists whose elements may be None
    list_opt = set()     # lists that may be None
    overlap = []         # written tensor arguments: refused when expanded (stride 0, size > 1)
    device_param = None
    named_device = None
    mutated = []
    checks = []          # non-tensor argument checks (custom ops)
    pynames = _codegen.py_names(sch.arguments)
    # required: parameters given the _UNSET default that the caller must supply ((Tensor? x=None,
    # Tensor y): accepted by torch's parser; Python needs a default there); renamed_kw: keyword-
    # only args under another name (a keyword-only "class"/"__x": callers pass **{"class": v}, as
    # in torch, or class_=v)
    params, required, renamed_kw = _codegen.signature(sch.arguments, pynames, ns)
    if out is not None and "out" in pynames:
        out = None      # a schema argument named out: the call takes it as the schema says
    at = params.index("*") if "*" in params else len(params)
    out_params = [*params[:at], "__p=None", "out=None", *params[at:]]
    for i, a in enumerate(sch.arguments):
        n = pynames[i]
        names.append((a.name, n))
        call_args.append(_codegen.call_arg(a, n))
        kind = a.kind
        if a.name in scalar_ok:
            kind = "scalar_ok"
        if kind in (_KIND_TENSOR, _KIND_OPT, _KIND_LIST, "scalar_ok"):
            tensor_params.append((n, kind))
            if kind == _KIND_LIST and a.type.startswith("Tensor?"):
                none_ok.add(n)          # Tensor?[]: None elements allowed
            if kind == _KIND_LIST and a.type.endswith("?"):
                list_opt.add(n)         # Tensor[]?: the list may be None
        elif kind == _KIND_DEVICE and device_param is None:
            device_param = n
        elif a.name == "device" and a.kind == "other" and named_device is None:
            named_device = n    # SPEC §3: "a parameter named device" (e.g. typed str)
        if kind == "other" and not op.is_builtin:
            c = _check_source(a, i, n)
            if c is not None:
                checks.append(c)
        if a.is_write:
            mutated.append((n, kind))
            overlap.append((i, n, kind))
    if device_param is None:
        device_param = named_device
    # partial= (schema names) -> {parameter: the first written parameter}
    partial_names, scalar_names = {}, set()
    if partial:
        w = next(pynames[i] for i, a in enumerate(sch.arguments) if a.is_write)
        for i, a in enumerate(sch.arguments):
            if a.name in partial:
                if a.kind != _KIND_TENSOR:
                    raise ValueError(f"{op.name}: partial= names {a.name}, not a Tensor argument")
                partial_names[pynames[i]] = w
                if a.name in scalar_ok:
                    scalar_names.add(pynames[i])
    if renamed_kw:
        params.append("**__kw")
        out_params.append("**__kw")
    sig = ", ".join(params)
    call = ", ".join(call_args)
    ns["__names"] = tuple(a.name for a in sch.arguments)
    allvals = "__vals(__names, (" + "".join(f"{n}, " for _, n in names) + "))"
    lines = [f"def __call__({sig}):"]
    if renamed_kw:
        lines.append("    if __kw:")
        for i, name, n in renamed_kw:
            ns[f"__n{i}"] = name
            lines.append(f"        if __n{i} in __kw: {n} = __kwarg(__op, __kw, __n{i}, {n})")
        lines.append("        if __kw: __extra(__op, __kw)")
        for i, name, n in renamed_kw:
            if sch.arguments[i].default is not NO_DEFAULT:
                lines.append(f"    if {n} is __unset: {n} = __d{i}")
    for i, name, n in required:
        ns[f"__n{i}"] = name
        lines.append(f"    if {n} is __unset: __missing(__op, __n{i})")
    lines.extend("    " + c.replace("\n", "\n    ") for c in checks)
    out_at = len(lines)    # where a call with out= leaves for the handler
    first_required = next((n for n, k in tensor_params if k == _KIND_TENSOR), None)
    body = []   # the key lives in "__k": a parameter may be called "k"
    if first_required is not None:
        body.append(f"__k = {first_required}.dispatch_key")
    else:
        body.append("__k = None")
    # keys that differ only because one of two tensors on the same device requires grad (a
    # weight and an input): "autograd", as resolve_key would say, without the slow path
    mixed = (f"__ag if {{n}}.raw_device is {first_required}.raw_device and {{n}}.backend_key is "
             f"{first_required}.backend_key and (__k is __ag and {{n}}.dispatch_key is {{n}}.backend_key or "
             f"{{n}}.dispatch_key is __ag and __k is {first_required}.backend_key) else ")
    for n, kind in tensor_params:
        if n == first_required:
            continue
        if kind == _KIND_TENSOR:
            body.append(f"if {n}.dispatch_key is not __k: __k = {mixed.format(n=n)}__slow(__op, {allvals})")
        elif kind == "scalar_ok" and n in partial_names:
            # the same tests, with the partial-overlap one in the tensor branch (a number pays
            # nothing): a storage root that is the written argument's gets a closer look
            slow = (f"{mixed.format(n=n)}__slow(__op, {allvals})" if first_required is not None
                    else f"__slow(__op, {allvals})")
            w = partial_names[n]
            body.append(f"if {n}.__class__ is not __T:\n"
                        f"        if {n}.__class__ not in __scalars:\n"
                        f"            {n} = __num({n})\n"
                        f"            __k = __slow(__op, {allvals})\n"
                        f"            if isinstance({n}, __TB): __povl({w}, {n})\n"
                        f"    else:\n"
                        f"        if {n}.dispatch_key is not __k: __k = {slow}\n"
                        f"        if {n}.storage_ref.root is {w}.storage_ref.root and {n} is not {w}: "
                        f"__povl({w}, {n})")
        elif kind == "scalar_ok":
            slow = (f"{mixed.format(n=n)}__slow(__op, {allvals})" if first_required is not None
                    else f"__slow(__op, {allvals})")
            # (a number of another class -- a NumPy scalar -- is read as torch reads it, on
            # the path a Python number never takes: __num)
            body.append(f"if {n}.__class__ is not __T:\n"
                        f"        if {n}.__class__ not in __scalars:\n"
                        f"            {n} = __num({n}); __k = __slow(__op, {allvals})\n"
                        f"    elif {n}.dispatch_key is not __k: __k = {slow}")
        elif kind == _KIND_OPT:
            body.append(f"if {n} is not None and {n}.dispatch_key is not __k: __k = __slow(__op, {allvals})")
        else:
            skip_none = "__t is not None and " if n in none_ok else ""
            items = f"({n} or ())" if n in list_opt else n    # Tensor[]?: None is no tensors
            body.append(f"for __t in {items}:\n"
                        f"        if {skip_none}__t.dispatch_key is not __k: __k = __slow(__op, {allvals}); break")
    if first_required is None:
        dev = device_param if device_param is not None else "None"
        if device_param is not None:
            # factories: a Device argument gives its type at once (same result as _device_key)
            body.append(f"if __k is None: __k = __mst.mode or ({dev}.type if {dev}.__class__ is __Dev "
                        f"else __slow(__op, {allvals}, {dev}))")
        else:
            body.append(f"if __k is None: __k = __slow(__op, {allvals}, {dev})")
    lines.append("    try:")
    lines.extend("        " + b.replace("\n", "\n    ") for b in body)
    lines.append("    except (AttributeError, TypeError) as __e:")
    if number_self is None:
        lines.append(f"        __bad(__op, {allvals}, __e)")
    else:   # pow(2, t): answered there (a number has no dispatch key), refused otherwise
        ns["__nself"] = number_self
        lines.append(f"        return __bad(__op, {allvals}, __e, __nself)")
    # writes through overlapping memory (an expanded tensor) are refused, as torch does: one
    # C-level scan of the strides per written argument; calls that write nothing pay nothing.
    # tuple.__contains__ itself: a capture tensor's strides would count the scan as a size read
    unless = ""
    if overlap_ok is not None:
        tensor_args = [pynames[j] for j, a in enumerate(sch.arguments) if a.name in overlap_ok]
        if not tensor_args:
            overlap = []
        else:
            unless = " or ".join(f"isinstance({n}, __TB)" for n in tensor_args)
            unless = f"({unless}) and "
    for i, n, kind in overlap:
        if kind == _KIND_TENSOR:
            lines.append(f"    if {unless}__has({n}.stride_tuple, 0): __overlap(__op, {i}, {n})")
        elif kind == _KIND_OPT:
            lines.append(f"    if {n} is not None and __has({n}.stride_tuple, 0): __overlap(__op, {i}, {n})")
        elif kind == _KIND_LIST:
            lines.append(f"    for __t in {n} or ():\n"
                         f"        if __t is not None and __has(__t.stride_tuple, 0): __overlap(__op, {i}, __t)")
    # an input sharing only part of the written argument's memory is refused, as torch's
    # in-place ops (partial: schema names; a Python-number-or-Tensor argument is tested in the
    # dispatch-key code above, in its tensor branch). The storage roots decide who is looked at
    # closer: x.data's storage (a DataStorage) reads x's root; fake tensors have none (None is
    # None: the closer look compares the storages themselves)
    for n, w in partial_names.items():
        if n not in scalar_names:
            lines.append(f"    if {n}.storage_ref.root is {w}.storage_ref.root and {n} is not {w}: "
                         f"__povl({w}, {n})")
    # the table is a plain dict (fastest subscript); a key not in it yet goes to op.entry (first
    # use of a device, a device-agnostic fallback, or the DispatchError), called outside the
    # except clause so its errors are not shown as raised "during handling of" the KeyError
    lookup = ["    try:", "        __f = __table[__k]", "    except KeyError:", "        __f = None",
              "    if __f is None:", "        __f = __miss(__k)"]
    # a custom op's result must have its schema's returns (torch converts it to them and raises
    # at the call): one class test (and a length) on the result, the slow path only on a miss.
    # Eager, fake (meta), autograd and compiled calls all return through here. Aliasing and
    # mutation are not checked (trusted, as mutates_args; opcheck's test_schema checks them)
    ret_test = None if op.is_builtin else _return_test(op.schema)
    if ret_test is not None:
        ns["__badret"], ns["__len"] = bad_return, len
    if mutated and not op.is_builtin:
        # eager execution trusts mutates_args; we only keep _version honest (bookkeeping, no
        # check): one bump per written argument per call (see bump_written)
        lines.extend(lookup)
        if len(mutated) == 1 and mutated[0][1] == _KIND_TENSOR:
            # bump_written inlined for the common op: one written tensor
            n = mutated[0][0]
            lines += [f"    __s = {n}.storage_ref", "    __v = __s.version",
                      f"    __r = __f({call})",
                      "    if __s.version == __v or not __gs.enabled:",
                      "        __s.version = __v + 1"]
        else:
            kinds = tuple(kind for _, kind in mutated)
            ns["__wkinds"] = kinds
            lines += [f"    __w = __wvers(({''.join(n + ', ' for n, _ in mutated)}), __wkinds)",
                      f"    __r = __f({call})",
                      "    __wbump(__w)"]
        tagged = _tagged_return_check(op, [n for n, _ in mutated])
        if tagged:
            # Tag.inplace / Tag.out ops (only): the kernel must return the written argument(s)
            # themselves, as torch checks after the kernel; identity tests, nothing for others
            lines.append(tagged)
            ns["__tagret"] = bad_tagged_return
        if ret_test is not None:
            lines.append(f"    if {ret_test}: __badret(__op, __k, __r)")
        lines.append("    return __r")
    else:
        lines.extend(lookup)
        if ret_test is not None:
            lines += [f"    __r = __f({call})", f"    if {ret_test}: __badret(__op, __k, __r)",
                      "    return __r"]
        else:
            lines.append(f"    return __f({call})")
    src = "\n".join(lines)
    plain_src = None
    if out is not None:
        plain_src = src
        src = "\n".join([f"def __call__({', '.join(out_params)}):", *lines[1:out_at],
                         f"    if out is not __p: return __outcall(__op, out, __p, {allvals})",
                         *lines[out_at:]])
        ns["__outcall"] = out
    from ._device import Device
    ns.update(__op=op, __table=op.table, __miss=op.entry, __slow=_slow_key, __bad=bad_arguments,
              __T=instance_class(),
              __mst=_state, __Dev=Device, __ag="autograd", __scalars=(int, float, bool),
              __unset=_UNSET, __missing=_missing, __chk=check_arg, __vals=_values,
              __kwarg=_take_kwarg, __extra=_extra_kwargs, __c_int=int, __c_float=float,
              __c_bool=bool, __c_str=str, __c_list=list, __c_tuple=tuple,
              __overlap=check_overlap, __has=tuple.__contains__, __gs=grad_state,
              __wvers=written_versions, __wbump=bump_written, __povl=check_partial_overlap,
              __TB=TensorBase, __num=as_number)
    fn = _codegen.function(src, ns, "__call__", f"<tensorplay dispatch {op.name}>")
    fn.__doc__ = op.__doc__
    fn.__qualname__ = op.name   # "ns::op() missing 1 required positional argument: 'x'"
    plain = None
    if plain_src is not None:   # the methods' function: the same call without out=
        plain = _codegen.function(plain_src, ns, "__call__", f"<tensorplay dispatch {op.name}>")
        plain.__doc__, plain.__qualname__ = op.__doc__, op.name
    # no __call__ in the class: the op is called through functools.partial's C call path, which
    # runs fn (see _registry.CustomOpDef)
    cls = type(_class_name(op), (type(op) if type(op).__dict__.get("_generated") is None
                                 else type(op).__mro__[1],),
               {"_generated": True, "_call_source": src, "_plain_call": plain,
                "__slots__": (),   # the record is slotted: same layout, so __class__ can change
                "__dict__": _registry.NO_INSTANCE_DICT,
                # inspect.signature(op): the caller's parameters (no hidden self)
                "__signature__": property(lambda self: _signature(fn, self))})
    op.__class__ = cls
    _registry.set_call(op, fn, plain)


def _signature(fn, op):
    """``inspect.signature(op)``: the generated function's parameters as a caller may pass them.
    The generator's plumbing is left out: the ``**__kw`` that takes a keyword-only argument by
    its schema name (``**{"lambda": v}``; a Python keyword cannot be a parameter name, so the
    signature shows the ``lambda_`` the call also accepts) and the ``<required>`` placeholder of
    such an argument, which shows its schema default or, without one, no default (it is
    required). Only a positional argument without a default after one with a default keeps the
    placeholder (a Python signature cannot say that)."""
    import inspect
    sig = inspect.signature(fn)
    args = op.schema.arguments
    by_py = dict(zip(_codegen.py_names(args), args))
    params = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD or p.name == "__p":
            continue
        if p.name == "out" and p.kind is p.POSITIONAL_OR_KEYWORD:
            p = p.replace(kind=p.KEYWORD_ONLY)    # make_call's out=: keyword-only, as torch's
        a = by_py.get(p.name)
        if p.default is _UNSET and a is not None and a.kwarg_only:
            p = p.replace(default=(inspect.Parameter.empty if a.default is NO_DEFAULT
                                   else a.default))
        params.append(p)
    return sig.replace(parameters=params)



def _return_kind(rtype: str) -> str | None:
    """What a call checks of a value returned for schema return type ``rtype``: ``"tensor"``
    (``Tensor``), ``"optional"`` (``Tensor?``), ``"list"`` (``Tensor[]``, ``Tensor?[]``),
    ``"optional_list"`` (``Tensor[]?``), or None (numbers, strings, dtypes...: not checked at
    the call)."""
    if not rtype.startswith("Tensor"):
        return None
    if "[]" in rtype:
        return "optional_list" if rtype.endswith("?") else "list"
    return "optional" if rtype == "Tensor?" else "tensor"


def _return_test(schema) -> str | None:
    """The generated condition (on ``__r``) that sends a custom op's result to ``bad_return``:
    true whenever the result may not have the structure of ``schema``'s returns. The cheapest
    test that decides the common result: one class test, and a length for several outputs
    (a plain Tensor, a tuple for several outputs, a list for ``Tensor[]`` pass on the spot;
    anything else -- None for a ``Tensor``, a subclass, a named tuple or a list for several
    outputs, a 1-tuple for ``-> (Tensor)`` -- gets ``return_problem``'s answer). None when
    nothing is checked (one non-tensor return)."""
    rets = schema.returns
    if not rets:
        return "__r is not None"
    if len(rets) > 1:
        # (a list, as torch takes too, passes on the slow path)
        return f"__r.__class__ is not __c_tuple or __len(__r) != {len(rets)}"
    kind = _return_kind(rets[0].type)
    if kind == "tensor":
        return "__r.__class__ is not __T"
    if kind == "optional":
        return "__r is not None and __r.__class__ is not __T"
    if kind == "list":
        return "__r.__class__ is not __c_list"
    if kind == "optional_list":
        return "__r is not None and __r.__class__ is not __c_list"
    return None


def return_problem(schema, result) -> str | None:
    """What ``schema``'s returns declare (``"2 outputs"``, ``"one Tensor"``...) when ``result``
    does not have their structure; None when it has.

    The rule (torch's conversion of a custom op's result, structure only): ``-> ()`` takes None;
    ``Tensor`` a Tensor, or None (torch's undefined tensor); ``Tensor?`` a Tensor or None;
    ``Tensor[]`` a list or tuple (``Tensor[]?`` also None); several returns a tuple or list
    (named tuples too) of that length; one parenthesised return (``-> (Tensor)``) its value or
    a 1-tuple of it. Elements of a returned sequence and non-tensor returns are not looked at
    (``opcheck`` checks them)."""
    rets = schema.returns
    if not rets:
        return None if result is None else "no output"
    if len(rets) > 1:
        if isinstance(result, (tuple, list)) and len(result) == len(rets):
            return None
        return f"{len(rets)} outputs"
    kind = _return_kind(rets[0].type)
    if kind is None or _fits(kind, result):
        return None
    if schema.returns_tuple and isinstance(result, (tuple, list)) and len(result) == 1 and \
            _fits(kind, result[0]):
        return None
    return {"tensor": "one Tensor", "optional": "a Tensor or None",
            "list": "a list of Tensors", "optional_list": "a list of Tensors or None"}[kind]


def _fits(kind: str, v) -> bool:
    if kind == "list":
        return isinstance(v, (list, tuple))
    return v is None or isinstance(v, (list, tuple) if kind == "optional_list" else TensorBase)


def _describe_value(v) -> str:
    if isinstance(v, TensorBase):
        return f"a Tensor of shape {tuple(v.shape)}"
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)}"
    if v is None:
        return "None"
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) <= 40 else r[:37] + '...'}"


def bad_return(op, key, result) -> None:
    """A custom op's result failed the call's quick test (``_return_test``): return when it has
    the structure of the schema's returns after all (``return_problem``), else raise
    ``OpReturnError`` (a ``RuntimeError`` and a ``TypeError``, as torch raises one or the other)
    naming the op, the kernel that returned it (``key``: the dispatch key of the call; ``meta``
    and ``capture`` ran the fake kernel), the schema's returns, what came back and the fix."""
    schema = op.schema
    why = return_problem(schema, result)
    if why is None:
        return
    from .errors import OpReturnError
    rets = schema.returns
    fake = key in ("meta", "capture")
    if fake:
        fk = op.fake_kernel
        who = (f"its fake kernel ({fk.source})" if fk is not None else
               "its kernel, run as its fake kernel (no register_fake),")
    else:
        if key == "autograd":
            # (the device kernel ran below autograd: named when the op has one kernel)
            srcs = {_registry._source_of(k) for k in
                    (op.active_kernel(d) for d in op.kernel_stacks()) if k is not None}
            src = srcs.pop() if len(srcs) == 1 else None
            who = "its kernel"
        else:
            k = op.active_kernel(key) or op.active_kernel("default")
            src = _registry._source_of(k) if k is not None else None
            who = f"its {key} kernel"
        who += f" ({src})" if src else ""
    if not rets:
        fix = "return None"
    elif len(rets) > 1:
        fix = f"return a tuple of {len(rets)} ({', '.join(r.type for r in rets)})"
    else:
        fix = {"tensor": "return a Tensor", "optional": "return a Tensor or None",
               "list": "return a list of Tensors",
               "optional_list": "return a list of Tensors or None"}[_return_kind(rets[0].type)]
    raise OpReturnError(
        f"{op.name}: {who} returned {_describe_value(result)}, but its schema "
        f"{schema.signature_str()} declares {why}. Fix the "
        f"{'fake ' if fake and op.fake_kernel is not None else ''}kernel to {fix}, or make the return annotation (or schema) say what it returns "
        f"(torch.library raises at the call as well).")


def _tagged_return_check(op, written) -> str | None:
    """Generated line checking what a ``Tag.inplace``/``Tag.out`` custom op's kernel returned:
    the written arguments themselves (``written``: their local names, in schema order; only the
    first for ``Tag.inplace``). None for every other op."""
    kind = mutation_tag(op.tags) if op.tags else None
    if kind is None or not written:
        return None
    if kind == "inplace":
        written = written[:1]
    if len(written) == 1:
        cond = f"__r is not {written[0]}"
    else:
        cond = (f"(__r.__class__ is not __c_tuple and __r.__class__ is not __c_list) or "
                f"len(__r) != {len(written)} or " +
                " or ".join(f"__r[{i}] is not {n}" for i, n in enumerate(written)))
    return f"    if {cond}: __tagret(__op, __k, __r)"


def bad_tagged_return(op, key, result) -> None:
    """A ``Tag.inplace``/``Tag.out`` custom op's kernel returned something else than the
    argument(s) it writes: ``RuntimeError`` naming the op, the tag and the argument(s) (torch
    checks the same after the kernel). Fake kernels (``meta``) and captures are not checked: a
    registered fake may return new fake tensors, as torch allows."""
    if key == "meta" or key == "capture":
        return
    kind = mutation_tag(op.tags)
    written = [a.name for a in op.schema.arguments if a.is_write]
    if kind == "inplace":
        written = written[:1]
    T = TensorBase
    if isinstance(result, T):
        got = f"a Tensor of shape {tuple(result.shape)} that is not " + \
            ("it" if len(written) == 1 else "them")
    elif isinstance(result, (tuple, list)):
        got = f"a {type(result).__name__} of {len(result)} that are not them, in order"
    else:
        got = type(result).__name__
    what = ("its first argument " if kind == "inplace" else "its out argument(s) ") + \
        ", ".join(repr(n) for n in written)
    raise RuntimeError(
        f"{op.name}: the op is tagged Tag.{kind}, so its kernel must return {what} itself (the "
        f"tensor objects it wrote, not a copy or a view), but it returned {got}. Return "
        f"{', '.join(written)} (same rule as torch.library.custom_op), or drop the tag and "
        f"return nothing you write.")


def written_versions(values, kinds) -> list:
    """``[(storage, version)]`` of every tensor a custom op's call writes, read before its kernel
    runs: ``values`` are the written arguments (a Tensor, an optional one, a list of them), in
    schema order, ``kinds`` their kinds (``_KIND_TENSOR``/``_KIND_OPT``/``_KIND_LIST``). Read by
    ``bump_written`` after the kernel (and ``reset_written``)."""
    out = []
    for v, kind in zip(values, kinds):
        if v is None:
            continue
        for t in (v if kind == _KIND_LIST else (v,)):
            if t is not None:
                st = t.storage_ref
                out.append((st, st.version))
    return out


def bump_written(before) -> None:
    """After a custom op's kernel: each written argument bumps its tensor's version once, as
    torch's ``ADInplaceOrView`` kernel of a mutating custom op does (``increment_version`` per
    written argument, then the kernel runs below ``ADInplaceOrView``: its own in-place ops bump
    nothing, a write through the array is counted by that bump). ``before``:
    ``written_versions``. Arguments sharing a storage (views of one tensor) bump its counter once
    each.

    With grad mode off the kernel's own bumps are replaced by those (nothing was recorded, so no
    saved tensor saw them). With grad mode on, autograd may have recorded the kernel's tensorplay
    ops (CompositeImplicitAutograd) and saved a written tensor between two of its writes: the
    kernel's bumps are kept then when there are more of them (a version never goes back under a
    graph that saw it), so a kernel writing an argument once still counts one."""
    exact = not grad_state.enabled
    target = {}
    for st, v in before:
        k = id(st)
        hit = target.get(k)
        target[k] = (st, v + 1) if hit is None else (st, hit[1] + 1)
    for st, v in target.values():
        if exact or st.version < v:
            st.version = v


def reset_written(before) -> None:
    """Put back the versions ``written_versions`` read, after a kernel that ran with grad mode
    off (nothing recorded saw its own bumps): the op's call then bumps each written argument
    once (``bump_written``), as torch's."""
    for st, v in before:
        st.version = v

class OverlapError(RuntimeError):
    """Writing a tensor several of whose elements share one memory location (torch's
    "unsupported operation: more than one element of the written-to tensor ..."). ``who``: the
    op or method named; ``argument``, ``shape``, ``stride``: the written tensor."""

    def __init__(self, who: str, argument: str, shape: tuple, stride: tuple):
        self.who, self.argument, self.shape, self.stride = who, argument, shape, stride
        super().__init__(
            f"{who}: argument '{argument}' (shape {shape}, stride {stride}): unsupported "
            f"operation: more than one element of the written-to tensor refers to a single memory "
            f"location. Please clone() the tensor before performing the operation.")

    def named(self, who: str) -> "OverlapError":
        """The same error naming ``who``: an in-place method made of an op and a ``copy_``
        names itself, not the ``copy_`` that found the overlap."""
        return OverlapError(who, self.argument, self.shape, self.stride)


def check_overlap(op, i: int, t, who: str | None = None) -> None:
    """Refuse to write argument ``i`` of ``op`` when ``t`` has a dimension of stride 0 and size
    greater than 1 (an ``expand``ed tensor: several elements share one memory location), with
    torch's message; raises :class:`OverlapError` (a ``RuntimeError``) naming ``who`` (default:
    the op; a built-in op by its bare name, ``add_``, a custom op by ``ns::name``) and the
    argument."""
    if any(st == 0 and sz > 1 for sz, st in zip(tuple(tuple.__iter__(t.shape)),
                                                tuple(tuple.__iter__(t.stride_tuple)))):
        if who is None:
            who = op.name[4:] if op.name.startswith("tp::") else op.name
        raise OverlapError(who, op.schema.arguments[i].name, tuple(t.shape),
                           tuple(t.stride_tuple))


def _values(names, vals) -> dict:
    return dict(zip(names, vals))


def _take_kwarg(op, kw: dict, name: str, current):
    """``**{"class": v}`` for the keyword-only argument ``class`` (held as ``class_``)."""
    v = kw.pop(name)
    if current is not _UNSET:
        raise TypeError(f"{op.name}() got multiple values for argument '{name}'")
    return v


def _extra_kwargs(op, kw: dict):
    name = next(iter(kw))
    raise TypeError(f"{op.name}() got an unexpected keyword argument '{name}'")


def _class_name(op) -> str:
    return "CustomOpDef"


def _slow_key(op, values: dict, device=None):
    tensors = flat_tensors(tuple(values.values()))
    T = TensorBase
    # the generated call stops reading a Tensor[] argument at its first element that needs this
    # path: every element is checked here
    for a in op.schema.arguments:
        v = values.get(a.name)
        if a.kind == _KIND_LIST and v is not None and not all(
                x.__class__ is T or isinstance(x, T) or (x is None and a.type.startswith("Tensor?"))
                for x in v):
            bad_arguments(op, values)
    if not tensors:
        for a in op.schema.arguments:
            if a.kind == _KIND_TENSOR and not isinstance(values.get(a.name), T) and \
                    not isinstance(values.get(a.name), (int, float)):
                bad_arguments(op, values)
    return resolve_key(op, tensors, device)
