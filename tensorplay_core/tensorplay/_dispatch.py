"""The call path: device key from the arguments -> kernel -> run. Kept flat.

For every op, ``make_call`` generates (once, at definition) a ``__call__`` with the op's exact
Python signature, so argument binding is done by the interpreter itself. Its body reads the
``_dkey`` attribute of each tensor parameter, compares them with ``is`` and indexes the op's
dispatch table. Only when keys differ (mixed devices, autograd, fake, capture) does it leave the
fast path for ``resolve_key``. No hook calls, no validation the contract says is trusted
(``mutates_args`` is trusted in eager mode; ``opcheck`` verifies it).

The non-device entries of the table (``meta``, ``autograd``, ``capture``) are built here too.
"""

from __future__ import annotations

import keyword

from .autograd import grad_mode as _gm
from .errors import DispatchError

# Mode stack for calls that have no tensor argument (factories): FakeTensorMode / capture push
# their key here. Read by the generated code with one index.
_mode: list = [None]

_KIND_TENSOR, _KIND_OPT, _KIND_LIST, _KIND_DEVICE = "tensor", "optional_tensor", "tensor_list", "device"


def _tensor_type():
    T = _T_CACHE[0]
    if T is None:
        from ._tensor import Tensor
        T = _T_CACHE[0] = Tensor
    return T


_T_CACHE: list = [None]   # the Tensor class, once imported (no import machinery per call)


def flat_tensors(args, kwargs=None) -> list:
    """Every Tensor among ``args``/``kwargs`` values, looking one level into lists/tuples."""
    T = _tensor_type()
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
    (0-dim cpu tensors may join any device, as in torch).
    """
    if not tensors:
        if device is None:
            if _mode[0] is not None:
                return _mode[0]
            return "default"
        return _mode[0] or _device_key(op, device)
    keys = {t._dkey for t in tensors}
    if "capture" in keys:
        return "capture"
    # str(device) -> a tensor on it that decides (None: only 0-dim cpu tensors there, which may
    # join any device, as in torch). Fake tensors count with the device they stand for.
    devs = {}
    for t in tensors:
        d = t._device
        s = str(d)
        scalar = d.type == "cpu" and t.ndim == 0
        if devs.get(s) is None:
            devs[s] = None if scalar else t
    if len(devs) > 1:
        real = [t for t in devs.values() if t is not None]
        if len(real) != 1:
            names = ", ".join(sorted(devs))
            raise DispatchError(
                f"{op._api()}: expected all tensors on one device, found tensors on {names}. "
                f"Move them with .to(device) first.")
    if "autograd" in keys:
        return "autograd"
    if "meta" in keys:
        return "meta"
    if len(devs) > 1:   # cpu scalar + device tensor: the device tensor decides
        return real[0]._bkey
    return tensors[0]._bkey


def backend_key(tensors) -> str:
    """Dispatch key below autograd: ``meta`` if any tensor is fake, else the device type."""
    k = None
    for t in tensors:
        b = t._bkey
        if b == "meta":
            return "meta"
        if k is None or (t.ndim != 0 or t._device.type != "cpu"):
            k = b
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
        raise TypeError(f"{op._api()}: argument '{pname}' must be a device such as "
                        f"tensorplay.device('cpu') or 'cuda:0', got {type(device).__name__} "
                        f"({device!r:.60}): {e}") from None


def bad_arguments(op, values: dict, exc=None):
    """Off the fast path: reading the device of the arguments failed (``exc``, an
    ``AttributeError``/``TypeError``). Raise ``TypeError`` naming the first argument whose value
    does not fit its schema type (``Tensor``, ``Tensor?``, ``Tensor[]``); if every argument fits,
    re-raise ``exc`` (e.g. the ``TypeError`` of a bad ``device`` argument)."""
    T = _tensor_type()
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
            ok = isinstance(v, (list, tuple)) and all(
                isinstance(x, T) or (x is None and a.type.startswith("Tensor?")) for x in v)
        if not ok:
            raise TypeError(f"{op._api()}: argument '{a.name}' must be {a.type}, got "
                            f"{type(v).__name__} ({v!r:.60})")
    if exc is not None:
        raise exc
    raise TypeError(f"{op._api()}: could not dispatch arguments {values!r:.200}")


def call_arg(a, pyname: str) -> str:
    """Source text passing schema argument ``a`` (held in local ``pyname``) to a kernel:
    positionally, or by keyword for keyword-only arguments (``**{'from': from_}`` when the name is
    a Python keyword, since ``from=...`` is not valid syntax)."""
    if not a.kwarg_only:
        return pyname
    if keyword.iskeyword(a.name):
        return f"**{{{a.name!r}: {pyname}}}"
    return f"{a.name}={pyname}"


def _pyname(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) or name.startswith("__") else name


def make_call(op, scalar_ok=()) -> None:
    """Generate ``op.__call__`` with the op's signature and install it on a per-op subclass."""
    sch = op.schema
    params, call_args, ns, names = [], [], {}, []
    kw_started = False
    tensor_params = []   # (pyname, kind)
    none_ok = set()      # lists whose elements may be None
    device_param = None
    named_device = None
    mutated = []
    for i, a in enumerate(sch.arguments):
        n = _pyname(a.name)
        names.append((a.name, n))
        if a.kwarg_only and not kw_started:
            params.append("*")
            kw_started = True
        if a.default is not _no_default():
            ns[f"__d{i}"] = a.default
            params.append(f"{n}=__d{i}")
        else:
            params.append(n)
        call_args.append(call_arg(a, n))
        kind = a.kind
        if a.name in scalar_ok:
            kind = "scalar_ok"
        if kind in (_KIND_TENSOR, _KIND_OPT, _KIND_LIST, "scalar_ok"):
            tensor_params.append((n, kind))
            if kind == _KIND_LIST and a.type.startswith("Tensor?"):
                none_ok.add(n)          # Tensor?[]: None elements allowed
        elif kind == _KIND_DEVICE and device_param is None:
            device_param = n
        elif a.name == "device" and a.kind == "other" and named_device is None:
            named_device = n    # SPEC §3: "a parameter named device" (e.g. typed str)
        if a.is_write:
            mutated.append((n, kind))
    if device_param is None:
        device_param = named_device
    sig = ", ".join(["__op"] + params)
    call = ", ".join(call_args)
    allvals = "{" + ", ".join(f"{a!r}: {n}" for a, n in names) + "}"
    tens = "[" + ", ".join(n for n, _ in tensor_params) + "]"
    lines = [f"def __call__({sig}):"]
    first_required = next((n for n, k in tensor_params if k == _KIND_TENSOR), None)
    body = []   # the key lives in "__k": a parameter may be called "k"
    if first_required is not None:
        body.append(f"__k = {first_required}._dkey")
        start = "k"
    else:
        body.append("__k = None")
    # keys that differ only because one of two tensors on the same device requires grad (a
    # weight and an input): "autograd", as resolve_key would say, without the slow path
    mixed = (f"__ag if {{n}}._device is {first_required}._device and {{n}}._bkey is "
             f"{first_required}._bkey and (__k is __ag and {{n}}._dkey is {{n}}._bkey or "
             f"{{n}}._dkey is __ag and __k is {first_required}._bkey) else ")
    for n, kind in tensor_params:
        if n == first_required:
            continue
        if kind == _KIND_TENSOR:
            body.append(f"if {n}._dkey is not __k: __k = {mixed.format(n=n)}__slow(__op, {allvals})")
        elif kind == "scalar_ok":
            slow = (f"{mixed.format(n=n)}__slow(__op, {allvals})" if first_required is not None
                    else f"__slow(__op, {allvals})")
            body.append(f"if {n}.__class__ is not __T:\n"
                        f"        if {n}.__class__ not in __scalars: __k = __slow(__op, {allvals})\n"
                        f"    elif {n}._dkey is not __k: __k = {slow}")
        elif kind == _KIND_OPT:
            body.append(f"if {n} is not None and {n}._dkey is not __k: __k = __slow(__op, {allvals})")
        else:
            skip_none = "__t is not None and " if n in none_ok else ""
            body.append(f"for __t in {n}:\n"
                        f"        if {skip_none}__t._dkey is not __k: __k = __slow(__op, {allvals}); break")
    if first_required is None:
        dev = device_param if device_param is not None else "None"
        if device_param is not None:
            # factories: a Device argument gives its type at once (same result as _device_key)
            body.append(f"if __k is None: __k = __mode[0] or ({dev}.type if {dev}.__class__ is __Dev "
                        f"else __slow(__op, {allvals}, {dev}))")
        else:
            body.append(f"if __k is None: __k = __slow(__op, {allvals}, {dev})")
    lines.append("    try:")
    lines.extend("        " + b.replace("\n", "\n    ") for b in body)
    lines.append("    except (AttributeError, TypeError) as __e:")
    lines.append(f"        __bad(__op, {allvals}, __e)")
    if mutated and not op.is_builtin:
        # eager execution trusts mutates_args; we only keep _version honest (bookkeeping, no check)
        lines.append(f"    __r = __table[__k]({call})")
        for n, kind in mutated:
            if kind == _KIND_TENSOR:
                lines.append(f"    {n}._storage.version += 1")
            elif kind == _KIND_OPT:
                lines.append(f"    if {n} is not None: {n}._storage.version += 1")
            elif kind == _KIND_LIST:
                lines.append(f"    for __t in {n}:\n        if __t is not None: __t._storage.version += 1")
        lines.append("    return __r")
    else:
        lines.append(f"    return __table[__k]({call})")
    src = "\n".join(lines)
    from ._device import Device
    ns.update(__table=op.table, __slow=_slow_key, __bad=bad_arguments, __T=_tensor_type(),
              __mode=_mode, __Dev=Device, __ag="autograd",
              __scalars=(int, float, bool))
    exec(compile(src, f"<tensorplay dispatch {op.name}>", "exec"), ns)
    fn = ns["__call__"]
    fn.__doc__ = op.__doc__
    fn.__qualname__ = op.name   # "ns::op() missing 1 required positional argument: 'x'"
    cls = type(_class_name(op), (type(op) if type(op).__dict__.get("_generated") is None
                                 else type(op).__mro__[1],), {"__call__": fn, "_generated": True,
                                                               "_call_source": src})
    op.__class__ = cls


def _class_name(op) -> str:
    return "CustomOpDef"


def _slow_key(op, values: dict, device=None):
    tensors = []
    T = _tensor_type()
    for v in values.values():
        if isinstance(v, T):
            tensors.append(v)
        elif isinstance(v, (list, tuple)):
            tensors.extend(x for x in v if isinstance(x, T))
    if not tensors:
        for a in op.schema.arguments:
            if a.kind == _KIND_TENSOR and not isinstance(values.get(a.name), T) and \
                    not isinstance(values.get(a.name), (int, float)):
                bad_arguments(op, values)
    return resolve_key(op, tensors, device)


def _no_default():
    from ._schema import NO_DEFAULT
    return NO_DEFAULT


# ---------------------------------------------------------------------------------------------
# Non-device table entries.

def make_fake_entry(op):
    """``meta`` entry: the registered fake kernel; else the built-in shape rule; else the
    device-agnostic kernel run on fake tensors (CompositeImplicitAutograd ops need no fake);
    else an error pointing to ``register_fake``."""
    if op._fake is not None:
        return op._fake
    if op._meta_default is not None:
        return op._meta_default
    default = op._active("default")
    if default is not None:
        return default

    def no_fake(*args, **kwargs):
        raise DispatchError(
            f"{op._api()}: no fake kernel registered, so it cannot run on fake/meta tensors or be "
            f"captured by tensorplay.compile. Add one with @{op._opname}.register_fake (or "
            f"tensorplay.library.register_fake({op.name!r})) returning empty tensors of the "
            f"output shapes.")
    return no_fake


def make_autograd_entry(op):
    """``autograd`` entry: redispatch below autograd, recording a graph node when needed."""
    from .autograd import function as _fn
    return _fn.make_op_autograd(op)


def make_capture_entry(op):
    """``capture`` entry: record the call as a graph node (``tensorplay.compile``)."""
    def capture(*args, **kwargs):
        from . import _capture
        return _capture.record_call(op, args, kwargs)
    return capture
