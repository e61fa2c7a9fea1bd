"""How a built-in op is declared: schema + fake (shape) rule + backward formula, side by side.

``defop`` creates the registry record (namespace ``tp``) and its generated call path. Array
kernels come later, from device plugins: when a backend loads, ``install_backend`` generates for
each op an *adapter* that unwraps tensor arguments to native arrays, calls the backend's kernel
(the reference kernel from ``tensorplay/_kernels/xp.py`` bound to its ``xp``), and wraps results.
Ops whose implementation is device-independent core code (views, composites) pass ``default=``.
"""

from __future__ import annotations

from .. import _codegen, _dispatch, _dtype, _pytree, _registry
from .._dispatch import grad_state as _gm_state
from .._schema import FunctionSchema
from .._tensor_base import TensorBase, check_partial_overlap, instance_class

BUILTINS: dict[str, _registry.CustomOpDef] = {}


class _Ns:
    """Attribute access to the built-in ops: ``ops.add`` is the ``tp::add`` record."""

    def __getattr__(self, name):
        try:
            return BUILTINS[name]
        except KeyError:
            raise AttributeError(f"no built-in op tp::{name}") from None


ops = _Ns()


def defop(schema: str, *, meta=None, backward=None, setup=None, default=None, kernel=None,
          scalar_ok=(), differentiable=True, tags=(), number_self=None, partial=(),
          overlap_ok=None):
    """Declare built-in op ``tp::<name>`` from its schema.

    ``meta(*args)`` returns fake outputs (shape/dtype/strides); ``setup(ctx, inputs, output)`` +
    ``backward(ctx, *grads)`` give the formula (tensorplay ops only, so it runs on every device);
    ``default`` is a device-independent implementation (views, composites); ``kernel`` names the
    array kernel (default: the op name); ``scalar_ok`` lists Tensor parameters that also take
    Python numbers. ``differentiable=False`` says the op has no gradient (integer or random
    outputs); like an op without ``backward`` it gets no formula. ``tags``: torch's operator tags (``"nondeterministic_seeded"``: random
    values, compared by metadata only in checks). ``number_self``: for a binary op that torch
    also calls with a Python number first (``pow(2, t)``, ``bitwise_and(5, t)``), the Tensor
    method computing it with the tensor second (``"__rpow__"``), used on the dispatcher's error
    path only (``_dispatch.bad_arguments``). ``partial``: the tensor arguments that may not
    share only part of the written argument's memory (torch's in-place ops: RuntimeError, see
    ``_dispatch.make_call``). ``overlap_ok``: when a write into an expanded tensor is allowed
    (``_dispatch.make_call``; default: refused, as torch's in-place ops).
    """
    sch = FunctionSchema.parse(schema if "::" in schema.split("(")[0] else "tp::" + schema)
    mutated = tuple(a.name for a in sch.arguments if a.is_write)
    if meta is not None and mutated:
        meta = _bumping(meta)
    op = _registry.CustomOpDef(
        sch.qualname, sch, mutates_args=mutated, builtin=True, source="tensorplay._ops",
        tags=tags, builtin_fake=meta,
        kernel_name=kernel or sch.qualname.split("::")[1].split(".")[0],
        scalar_ok=scalar_ok, array_kernel=default is None,
        backward=backward, setup_context=setup if backward is not None else None)
    _dispatch.make_call(op, scalar_ok=scalar_ok, number_self=number_self,
                        out=out_call if sch.qualname.split("::")[1] in OUT_OPS else None,
                        partial=partial, overlap_ok=overlap_ok)
    _registry.register_op(op)
    if default is not None:
        _registry.add_kernel(op, "default", default)
    BUILTINS[sch.qualname.split("::")[1]] = op
    # an instance attribute too: `O.mul` in formulas and Tensor methods is then a plain
    # attribute read, not a __getattr__ call (~0.15 us on every built-in call through `ops`)
    ops.__dict__[sch.qualname.split("::")[1]] = op
    return op


# -- out= ---------------------------------------------------------------------------------------
# The built-in op records that are torch functions taking ``out=`` (``tensorplay.mul`` is the
# ``tp::mul`` record): their generated call takes a keyword-only ``out`` (``_dispatch.make_call``)
# and hands a call passing it to ``out_call``. The value is the op's dtype rule for ``out``
# (``write_out``). torch's relu, isnan, isinf, isfinite and clone take no out=; neither do these.
OUT_OPS = {name: "cast" for name in (
    "mul", "pow", "floor_divide", "remainder", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
    "ge", "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "bitwise_not", "neg", "exp", "log", "sqrt",
    "rsqrt", "tanh", "sigmoid", "abs", "sin", "cos", "erf", "expm1", "log1p", "log2", "log10",
    "exp2", "tan", "asin", "acos", "atan", "sinh", "cosh", "floor", "ceil", "trunc", "atan2",
    "hypot", "nextafter", "fmod", "copysign", "asinh", "acosh", "atanh", "fmax", "fmin")}
# torch's unary ops that keep their input's dtype (not the floating ones such as exp): out must
# have the result's dtype
OUT_OPS.update(matmul="exact", sign="found", neg="found", abs="found", floor="found",
               ceil="found", trunc="found", bitwise_not="found")

# torch's names of the dtypes in its out= messages (c10::ScalarType / caffe2's TypeMeta)
_SCALAR_NAMES = {k: (_dtype.SCALAR_TYPE_NAMES[k], meta) for k, meta in {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
    "uint8": "unsigned char", "bool": "bool"}.items()}


def _dtname(dt, meta=False) -> str:
    names = _SCALAR_NAMES.get(str(dt).rsplit(".", 1)[-1])
    return str(dt) if names is None else names[meta]


def out_call(op, out, extra, values: dict):
    """A call of built-in op ``op`` with ``out=``: ``write_out`` of the op's result (the
    generated call's handler, see ``OUT_OPS``). ``extra``: a positional argument past the op's
    own (``TypeError``, as torch: ``out`` is keyword-only)."""
    if extra is not None:
        n = sum(not a.kwarg_only for a in op.schema.arguments)
        raise TypeError(f"{op.name}() takes {n} positional argument{'s' * (n != 1)} but more "
                        f"were given")
    pos, kw = [], {}
    for a in op.schema.arguments:
        if a.kwarg_only:
            kw[a.name] = values[a.name]
        else:
            pos.append(values[a.name])
    name = op.name.split("::")[1]
    return write_out(name, out, op, pos, kw, OUT_OPS[name], stacklevel=4)


def hide_out_slot(fn):
    """For a hot public function written ``f(input, other, _p=None, out=None, *, ...)`` with
    ``if out is not _p:`` first (the cheap form of a keyword-only ``out``, as the generated op
    calls have it, see ``_dispatch.make_call``): its ``inspect.signature`` without ``_p`` and
    with ``out`` keyword-only, as torch's. Returns ``fn``."""
    import inspect
    sig = inspect.signature(fn)
    params = [p.replace(kind=p.KEYWORD_ONLY) if p.name == "out" else p
              for p in sig.parameters.values() if p.name != "_p"]
    fn.__signature__ = sig.replace(parameters=params)
    return fn


def no_extra(p, api: str) -> None:
    """``TypeError`` when ``hide_out_slot``'s hidden slot took a positional argument."""
    if p is not None:
        raise TypeError(f"{api}() takes 2 positional arguments but more were given")


def _tensors_in(values):
    for v in values:
        if isinstance(v, TensorBase):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, TensorBase))


def check_out_grad(api: str, outs, results) -> None:
    """torch's autograd rule for ``out=``: with grad mode on, a result that requires grad (a
    differentiable result of an input that requires grad: not argmax's, eq's...) or an ``out``
    tensor that requires grad is a ``RuntimeError`` (nothing written)."""
    if not _gm_state.enabled:
        return
    for t in (*results, *outs):
        if t.needs_grad:
            raise RuntimeError(f"{api}(): functions with out=... arguments don't support "
                               f"automatic differentiation, but one of the arguments requires "
                               f"grad.")


def check_out_overlap(out, inputs) -> None:
    """torch's rule (``partial_overlap``): ``out`` may be an input itself (the same bytes with the
    same strides) or share none of an input's memory, but must not share only some of it:
    ``RuntimeError`` then (nothing written). ``x.data`` (and views of it) count as ``x``'s
    storage, as torch's; layouts that are not dense (``x[::2]`` beside ``x[1::2]``) are not
    refused, as torch's."""
    for t in _tensors_in(inputs):
        check_partial_overlap(out, t)


def check_out_type(api: str, out, n: int = 1):
    """``out`` as a tuple of ``n`` tensors; ``TypeError`` (torch's words) for anything else."""
    if n == 1:
        if not isinstance(out, TensorBase):
            raise TypeError(f"{api}(): argument 'out' must be Tensor, not {type(out).__name__}")
        return (out,)
    if not isinstance(out, (tuple, list)) or len(out) != n or \
            not all(isinstance(o, TensorBase) for o in out):
        raise TypeError(f"{api}(): argument 'out' must be tuple of {n} Tensors, not "
                        f"{type(out).__name__}")
    return tuple(out)


def write_out(api: str, out, fn, args=(), kwargs=None, rule="cast", n: int = 1,
              stacklevel: int = 3, grad: bool = True, warn: bool = True):
    """The ``out=`` form of a torch function, for every function that takes it (torch's rules):

    * ``out``: a tensor, or a tuple of ``n`` tensors for a function returning ``n`` (``sort``,
      ``topk``, ``max(dim)``...); ``TypeError`` otherwise.
    * autograd: with grad mode on, a result requiring grad (the function is differentiable
      and an input requires grad) or an ``out`` tensor requiring grad is a ``RuntimeError``
      ("functions with out=... arguments don't support automatic differentiation");
      ``grad=False``: torch has no such check for this function (softmax, log_softmax): the
      result is computed without a graph.
    * ``fn(*args, **kwargs)`` (the function called without ``out``; passed apart rather than
      as a closure, so the public functions' calls without ``out=`` make no cells) gives the
      result; its dtype must suit each ``out``'s: ``rule`` ``"cast"``
      (``torch.can_cast``: float results into float or complex outs, ints into ints and floats,
      bools anywhere), ``"exact"`` (matmul: the same dtype) or ``"found"`` (the same dtype,
      structured-kernel wording); the same device too. ``RuntimeError`` otherwise.
    * ``out`` sharing only part of an input's memory is a ``RuntimeError``; ``out`` being an
      input itself is fine (the result is computed first).
    * ``out`` of another shape is resized (``Tensor.resize_``'s rule, without its grad check),
      silently when it has no elements (or ``warn=False``: the factories), with torch's
      ``UserWarning`` otherwise; inside ``tensorplay.compile`` (a captured ``out``) a resize
      is a ``RuntimeError`` (no recorded op resizes).
    * the result is copied in (cast to ``out``'s dtype; the version counter bumped once) and
      ``out`` is returned (a tuple: the result's named tuple type over the ``out`` tensors).
    Nothing is written when a check fails. ``stacklevel``: the warning's, the caller of the
    public function (3: that function calls ``write_out`` directly)."""
    import warnings

    from .._dtype import can_cast
    from .copy import resize_tensor
    outs = check_out_type(api, out, n)
    kwargs = kwargs or {}
    inputs = (*args, *kwargs.values())    # tensors and lists of them: the overlap check's
    if grad:
        result = fn(*args, **kwargs)
    else:
        with _dispatch.NoGradBlock():
            result = fn(*args, **kwargs)
    results = (result,) if n == 1 else tuple(result)
    if not all(isinstance(r, TensorBase) for r in results):
        # a form of the function that torch gives no out= (where(condition) alone: a tuple)
        raise TypeError(f"{api}(): this form of {api} takes no out= argument")
    check_out_grad(api, outs, results)
    for o, r in zip(outs, results):
        if o.raw_device != r.raw_device:
            raise RuntimeError(f"Attempting to copy from device {r.raw_device} to device "
                               f"{o.raw_device}, but cross-device copies are not allowed!")
        odt, rdt = o.raw_dtype, r.raw_dtype
        if rule == "cast" and not can_cast(rdt, odt):
            raise RuntimeError(f"result type {_dtname(rdt)} can't be cast to the desired output "
                               f"type {_dtname(odt)}")
        if rule == "exact" and odt is not rdt:
            raise RuntimeError(f"Expected out tensor to have dtype {_dtname(rdt, True)}, but got "
                               f"{_dtname(odt, True)} instead")
        if rule == "found" and odt is not rdt:
            raise RuntimeError(f"Found dtype {_dtname(odt)} but expected {_dtname(rdt)}")
        if rule == "bool" and str(odt).rsplit(".", 1)[-1] not in ("bool", "uint8"):
            raise RuntimeError(f"{api} only supports bool tensor for result, got: "
                               f"{_dtname(odt)}")
        check_out_overlap(o, inputs)
        if 0 in o.stride_tuple and (api in POINTWISE_OUT or tuple(o.raw_shape) == tuple(
                r.raw_shape) and api not in REDUCE_INTO_EXPANDED):
            # (torch's TensorIterator refuses an expanded out before it would resize it)
            _check_out_expanded(api, o)
    for o, r in zip(outs, results):
        shape = tuple(r.raw_shape)
        if 0 in o.stride_tuple and api in REDUCE_INTO_EXPANDED and \
                tuple(o.raw_shape) == shape and _expanded_dims(o):
            _reduce_into_expanded(api, o, r)
            continue
        if tuple(o.raw_shape) != shape:
            if o.capture_info is not None:
                # a resize is no op tensorplay.compile records: the replay would write into the
                # out as it came
                raise RuntimeError(f"{api}(): inside tensorplay.compile, out= needs an out tensor "
                                   f"of the result's shape {list(shape)} (got "
                                   f"{list(o.raw_shape)}): resize it before the compiled call")
            if warn and o.numel():
                warnings.warn(
                    f"An output with one or more elements was resized since it had shape "
                    f"{list(o.raw_shape)}, which does not match the required output shape "
                    f"{list(shape)}. This behavior is deprecated, and in a future PyTorch release "
                    f"outputs will not be resized unless they have zero elements. You can "
                    f"explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                    f"with t.resize_(0).", UserWarning, stacklevel=stacklevel)
            resize_tensor(o, shape, public=False)
        ops.copy_(o, r)
    if n == 1:
        return outs[0]
    return type(result)(*outs) if hasattr(result, "_fields") else outs


# out= of torch's TensorIterator (pointwise) functions: an expanded out is refused before any
# resize (torch.add(ones(1, 3), 1, out=zeros(1, 3).expand(2, 3)) is a RuntimeError, not a resize)
POINTWISE_OUT = frozenset(OUT_OPS) - {"matmul"} | {
    "add", "sub", "div", "clamp", "clamp_max", "clamp_min", "clip", "where", "digamma", "erfc",
    "erfinv", "float_power", "heaviside", "ldexp", "lgamma", "logaddexp", "logical_xor",
    "mvlgamma", "polygamma", "reciprocal", "round", "signbit", "sinc", "square", "xlogy", "take",
    "index_select"}
# torch's reduction kernels write an expanded out of the result's shape: its dims of stride 0
# join the reduction (tp.sum(ones(2, 3), 0, out=zeros(1).expand(3)) is [6., 6., 6.]), the value
# landing in the one shared element. Reducing the result again along those dims gives it for
# these (sum, max, min, prod, all, any of partial results); mean, var, std, norm, argmax and the
# scans refuse (mean, logsumexp, cumsum: as torch; var, std, norm, argmax: torch goes on)
REDUCE_INTO_EXPANDED = {"sum": "sum", "nansum": "sum", "amax": "amax", "amin": "amin",
                        "prod": "prod", "all": "all", "any": "any"}


def _expanded_dims(o) -> list:
    return [d for d, (n, st) in enumerate(zip(o.raw_shape, o.stride_tuple)) if st == 0 and n > 1]


def _reduce_into_expanded(api: str, o, r) -> None:
    """Write result ``r`` into the expanded ``out`` ``o`` of reduction ``api``, as torch's
    reduction kernels do: reduced again along ``o``'s expanded dims, into ``o`` narrowed to size
    1 there (its own memory, no element shared)."""
    dims = _expanded_dims(o)
    if r.raw_dtype is not o.raw_dtype:
        r = ops.to_dtype(r, o.raw_dtype)
    red = REDUCE_INTO_EXPANDED[api]
    if red == "prod":
        for d in dims:
            r = ops.prod(r, [d], True)
    else:
        r = getattr(ops, red)(r, dims, True)
    for d in dims:
        o = ops.slice(o, d, 0, 1, 1)
    ops.copy_(o, r)


def _check_out_expanded(api: str, o) -> None:
    """An ``out`` with a dimension of stride 0 and size > 1 (an expanded tensor: several
    elements share one memory location) is torch's "unsupported operation" RuntimeError, named
    for the function called and its ``out`` argument (the copy into it would name itself,
    ``copy_`` and its ``self``), before anything is written."""
    for n, st in zip(o.raw_shape, o.stride_tuple):
        if st == 0 and n > 1:
            raise _dispatch.OverlapError(api, "out", tuple(o.raw_shape), tuple(o.stride_tuple))


def factory_out(api: str, out, dtype, fn, args, kwargs):
    """The ``out=`` form of factory ``api`` (``zeros``, ``arange``, ``rand``...), as torch:
    ``dtype`` (None: ``out``'s) must be ``out``'s dtype (``RuntimeError`` naming both
    otherwise), the device is ``out``'s; ``fn(*args, **kwargs, dtype=, device=)`` (the factory
    called without ``out``) builds the values, which
    ``write_out`` puts into ``out`` (resized silently when its shape differs). ``empty``
    writes nothing: ``out`` is only resized (its version bumped then, as torch's)."""
    from .._dtype import as_dtype
    from .copy import resize_tensor
    (o,) = check_out_type(api, out)
    if dtype is not None and as_dtype(dtype) is not o.raw_dtype:
        raise RuntimeError(f"dtype {_dtname(as_dtype(dtype))} does not match dtype of out "
                           f"parameter ({_dtname(o.raw_dtype)})")
    r = fn(*args, **kwargs, dtype=o.raw_dtype, device=o.raw_device)
    if api == "empty":
        check_out_grad(api, (o,), ())
        if tuple(o.raw_shape) != tuple(r.raw_shape):
            resize_tensor(o, tuple(r.raw_shape), public=False)
            o.storage_ref.version += 1
        return o
    # arange warns when it resizes a non-empty out (torch's arange does); the others do not
    return write_out(api, o, _same, (r,), None, "exact", stacklevel=4, warn=api == "arange")


def _same(r):
    return r


def fused(name, ref, *tensors, args=()):
    """The backend's fused kernel ``name`` (see ``_kernels/xp``: one kernel for a formula that
    would take several op calls) on ``ref`` and ``tensors``' arrays, wrapped as a Tensor; or
    None when the formula must take the op-by-op path: grad mode on (``create_graph``: the ops
    record the graph), a fake, captured or lower-precision tensor, tensors on other devices or of
    another dtype than ``ref``, or a backend without that kernel. The kernel runs the same NumPy
    steps as the op-by-op formula, so the values are the same."""
    if _gm_state.enabled:
        return None
    b, dev, dt = ref.backend_key, ref.raw_device, ref.raw_dtype
    if ref.capture_info is not None or ref.native is None or dt.itemsize < 4 or dt._kind != "f":
        return None
    for t in tensors:
        if t.backend_key is not b or t.raw_dtype is not dt or t.capture_info is not None or \
                (t.raw_device is not dev and t.raw_device != dev):
            return None
    be = ref.backend
    k = be.kernels().get(name)
    if k is None:
        return None
    if len(tensors) == 1:   # the formulas' counts, without building a list per call
        r = k(ref.native, tensors[0].native, *args)
    elif len(tensors) == 2:
        r = k(ref.native, tensors[0].native, tensors[1].native, *args)
    else:
        r = k(ref.native, *[t.native for t in tensors], *args)
    if r.__class__ is tuple:   # several gradients (None where not needed)
        w = be.wrap
        if len(r) == 2:   # matmul's (no generator frame)
            a, b = r
            return (w(a, dev) if a is not None else None, w(b, dev) if b is not None else None)
        return tuple(w(x, dev) if x is not None else None for x in r)
    return be.wrap(r, dev)


def _bumping(meta):
    """Fake rule of an in-place op: also bump the written fake tensor's version (as real runs do)."""
    def inplace_meta(*args, **kwargs):
        out = meta(*args, **kwargs)
        out.storage_ref.version += 1
        return out
    inplace_meta.__wrapped__ = meta
    return inplace_meta


def install_backend(backend):
    """Bind every built-in op's array kernel for ``backend.device_type`` (on first device use).
    Each op's adapter is generated on that op's first call on the device (``_lazy_adapter``), so
    loading a backend costs no code generation for the ops a program never calls. Returns a
    callable unbinding them (a test backend leaving)."""
    kernels = backend.kernels()
    handles = []
    for name, op in BUILTINS.items():
        if not op.has_array_kernel:
            continue
        k = kernels.get(op.kernel_name)
        if k is None:
            continue
        handles.append(_registry.add_kernel(op, backend.device_type,
                                            _lazy_adapter(op, k, backend)))

    def uninstall():
        for h in reversed(handles):
            h.destroy()
    return uninstall


def _lazy_adapter(op, kernel, backend):
    """A stand-in for ``make_adapter(op, kernel, backend)``: its first call generates the adapter
    and puts it in the op's dispatch table in its own place, so later calls reach the adapter
    directly (the per-call path is the eager one's). It stays the registered kernel (undo handles
    and kernel stacks see one entry); after a table rebuild its next call puts the adapter back."""
    key = backend.device_type
    real = None

    def lazy_adapter(*args, **kwargs):
        nonlocal real
        if real is None:
            real = make_adapter(op, kernel, backend)
        table = op.table
        if table.get(key) is lazy_adapter:     # only while this stand-in is the active kernel
            table[key] = real
        return real(*args, **kwargs)

    return lazy_adapter


def make_adapter(op, kernel, backend, writes=False):
    """Generate ``adapter(<op params>)``: tensors -> native arrays -> kernel -> tensors.

    A quiet kernel (``_kernels/xp._quiet``) is called unwrapped inside its quiet context
    (``_tp_quiet_run``: ``run(kernel, ...)``), or between its two error-state writes
    (``_tp_quiet``) where it has no such context or ``writes`` is true: the adapter taken when
    the context is in use (``run`` refuses to enter it again before calling the kernel)."""
    sch = op.schema
    args = []
    first_tensor = None
    device_param = None
    ns = {}
    pn = _codegen.py_names(sch.arguments)
    params = _codegen.signature(sch.arguments, pn, ns)[0]   # built-in schemas: no gaps
    for i, a in enumerate(sch.arguments):
        n = pn[i]
        kind = a.kind
        if a.name in op.scalar_ok:
            args.append(f"({n}.native if {n}.__class__ is __T else {n})")
            if first_tensor is None:
                first_tensor = None
        elif kind == "tensor":
            args.append(f"{n}.native")
            if first_tensor is None:
                first_tensor = n
        elif kind == "optional_tensor":
            args.append(f"({n}.native if {n} is not None else None)")
        elif kind == "tensor_list":
            args.append(f"[__x.native if __x is not None else None for __x in {n}]")
            if first_tensor is None:
                first_tensor = f"{n}[0]"
        else:
            if kind == "device" and device_param is None:
                device_param = n
            args.append(n)
        args[-1] = _codegen.call_arg(a, n, args[-1])
    if first_tensor is not None:
        dev = f"{first_tensor}.raw_device"
    elif device_param is not None:
        # a Device already (the factories canonicalise theirs): no constructor call per op
        # (canonical: "cpu:0" is cpu, "cuda" is cuda:0; kept on the Device, one attribute read)
        dev = (f"({device_param}._canon if {device_param}.__class__ is __D and "
               f"{device_param}._canon is not None else __canon({device_param}))")
    else:
        dev = "__D('cpu')"
    lines = [f"def adapter({', '.join(params)}):"]
    # optional Backend features, declared with their defaults (tensorplay.backends.Backend)
    align = backend.align_device
    guard = backend.device_guard if backend.device_guard_needed() else None
    # (one device of this type in the process: no switch, no `with` per call)
    allvals = "{" + ", ".join(f"{a.name!r}: {n}" for n, a in zip(pn, sch.arguments)) + "}"
    # try/except is free on Python 3.11+ unless raised: a kernel's ValueError/TypeError/
    # IndexError (numpy's "operands could not be broadcast", "`indices` must be an integer
    # array", ...) is re-explained by the op's fake rule, which raises torch's words -- the
    # words tensorplay.compile reports for the same call, since it runs that rule
    exc = ("except (ValueError, TypeError, IndexError, AttributeError) as __e:\n"
           f"    __kerr(__op, __e, {allvals})")
    quiet = getattr(kernel, "_tp_quiet", None)
    qrun = None if writes else getattr(kernel, "_tp_quiet_run", None)
    if qrun is not None:
        # each kernel call made as run(kernel, ...) in the quiet context: no writes around it
        ns.update(__qrun=qrun[0], __qbusy=qrun[1],
                  __writes=_writes_adapter(op, kernel, backend))
        quiet = None
        kernel = kernel.__wrapped__
        # run() refused to enter the quiet context (in use: a kernel calling a kernel, another
        # thread inside one) before calling the kernel: the same call with the two writes
        fwd = ", ".join(_codegen.call_arg(a, n) for n, a in zip(pn, sch.arguments))
        exc += ("\nexcept RuntimeError as __e:"
                "\n    if __e.args != __qbusy or __e.__traceback__.tb_next is not None:"
                "\n        raise"
                f"\n    return __writes({fwd})")

        def kcall(fn, a):
            return f"__qrun({fn}, {a})"
    else:
        def kcall(fn, a):
            return f"{fn}({a})"
    call = kcall("__k", ", ".join(args))
    # a backend that names its `root_storage` gets results built inline, and (one device of its
    # type, no quiet wrapper) the inline ufunc case ahead of the device bookkeeping
    early = guard is None and quiet is None and backend.root_storage is not None
    fast = _float_ufunc_lines(op, kernel if quiet is None else kernel.__wrapped__, backend, ns,
                              early, kcall)
    if fast and _layout_guard(op, pn, ns, backend):
        fast = _layout_returns(fast, ns, backend)
    if fast and early:
        # the inline ufunc case first, before any device bookkeeping: operands on one device
        # need no aligning, and no guard is entered on this backend
        lines += ["    try:", *("        " + x for x in fast),
                  *("    " + x for x in exc.split("\n"))]
        fast = []
    lines.append(f"    __dev = {dev}")
    if align is not None:
        # Backends with several devices of one type (cuda:0, cuda:1) share a dispatch key, so the
        # fast path cannot see an index mismatch: every tensor argument must be on __dev (one
        # `is` test each); __align moves a 0-dim cpu tensor there or raises naming both. When the
        # first tensor is such a cpu scalar, the first tensor of this backend's type decides.
        _Tns = instance_class()
        ns.update(__align=align, __api=op.name, __bt=backend.device_type,
                  __pick=lambda ts: next((t.raw_device for t in ts if t.__class__ is _Tns and
                                          t.raw_device.type == backend.device_type), ts[0].raw_device))
        tens = [n if a.kind != "tensor_list" else f"*{n}" for n, a in zip(pn, sch.arguments)
                if a.kind in ("tensor", "optional_tensor", "tensor_list") or a.name in op.scalar_ok]
        if first_tensor is not None:
            # __dev is the first tensor's device: that tensor needs aligning only when __pick
            # chose another device
            lines += ["    if __dev.type != __bt:",
                      f"        __dev = __pick([{', '.join(tens)}])"]
            if "[" not in first_tensor:
                lines.append(f"        if {first_tensor}.raw_device is not __dev: "
                             f"{first_tensor} = __align({first_tensor}, __dev, __api)")
        for n, a in zip(pn, sch.arguments):
            fix = f"{n} = __align({n}, __dev, __api)"
            if a.name in op.scalar_ok:
                lines.append(f"    if {n}.__class__ is __T and {n}.raw_device is not __dev: {fix}")
            elif a.kind == "tensor" and n == first_tensor:
                pass      # aligned above
            elif a.kind == "tensor":
                lines.append(f"    if {n}.raw_device is not __dev: {fix}")
            elif a.kind == "optional_tensor":
                lines.append(f"    if {n} is not None and {n}.raw_device is not __dev: {fix}")
            elif a.kind == "tensor_list":
                lines.append(f"    if any(__x is not None and __x.raw_device is not __dev for __x in {n}): "
                             f"{n} = [__x if __x is None or __x.raw_device is __dev else "
                             f"__align(__x, __dev, __api) for __x in {n}]")
    ind = "    "
    if guard is not None:
        lines.append("    with __guard(__dev):")
        ind = "        "
    if quiet is not None:
        # the kernel's quiet wrapper (NumPy floating point errors ignored for the call, see
        # _kernels/xp._quiet) inlined: the same two context-variable writes, one frame less
        kernel = kernel.__wrapped__
        ns.update(__qset=quiet[0], __qreset=quiet[1], __qstate=quiet[2])
        lines.append(f"{ind}__tok = __qset(__qstate)")
    lines.append(f"{ind}try:")
    lines += [ind + "    " + x for x in fast]
    exc = "\n".join(ind + x for x in exc.split("\n"))
    if quiet is not None:
        exc += f"\n{ind}finally:\n{ind}    __qreset(__tok)"

    ind += "    "
    mutated = [a for a in sch.arguments if a.is_write]
    if mutated:
        m = pn[sch.arguments.index(mutated[0])]
        lines.append(f"{ind}{call}")
        lines.append(f"{ind}{m}.storage_ref.version += 1")
        lines.append(f"{ind}return {m}")
    elif len(sch.returns) == 1 and not sch.returns[0].type.endswith("[]"):
        built = _alloc_build_lines(op, first_tensor, backend, ns)
        if built:
            lines.append(f"{ind}__r = {call}")
            lines += [ind + x for x in built]
            lines.append(f"{ind}return __wrap(__r, __dev)")
        elif op.kernel_name in _INLINE_RESULT and _row_major_build(backend, ns, "__dev"):
            # (clone: Tensor.clone's layout test paid for by wrap's frame, as the elementwise ops)
            lines.append(f"{ind}__r = {call}")
            lines += [ind + x for x in _row_major_build(backend, ns, "__dev")]
            lines.append(f"{ind}return __wrap(__r, __dev)")
        elif _layout_guard(op, pn, ns, backend):
            # an elementwise op (its fake rule's mark): torch's result layout when an operand
            # is not row-major (_kernels/elementwise.layout_for), wrap's row-major otherwise
            lines.append(f"{ind}__r = {call}")
            lines.append(f"{ind}if {ns['__lguard']}:")
            lines += [f"{ind}    {x}" for x in _row_major_build(backend, ns, "__dev")]
            lines.append(f"{ind}    return __wrap(__r, __dev)")
            lines.append(f"{ind}return __wrap_ew(__r, __dev, ({ns['__largs']})")
        else:
            lines.append(f"{ind}return __wrap({call}, __dev)")
    elif len(sch.returns) == 1:
        lines.append(f"{ind}return [__wrap(__r, __dev) for __r in {call}]")
    else:
        lines.append(f"{ind}return tuple(__wrap(__r, __dev) for __r in {call})")
    lines.append(exc)
    from .._device import Device, canonical
    if "__lguard" in ns:
        from .._backend import _CONTIG_CACHE
        ns.update(__wrap_ew=backend.wrap_elementwise, __C=_CONTIG_CACHE)
    ns.update(__k=kernel, __wrap=backend.wrap, __T=instance_class(), __D=Device, __canon=canonical,
               __guard=guard,
              __op=op, __kerr=kernel_error)
    return _codegen.function("\n".join(lines), ns, "adapter",
                             f"<tensorplay kernel {op.name}.{backend.device_type}>")


# ops whose row-major results are built inline too (wrap's fast case without its frame): clone,
# and the reductions and products of a training step (13 results a step of bench_train's MLP)
_INLINE_RESULT = frozenset({"clone", "mean", "sum", "matmul", "log_softmax", "softmax"})


def _row_major_build(backend, ns, dev) -> list:
    """Source lines (unindented) building the result tensor of kernel result ``__r`` on device
    ``dev`` inline when it is a row-major array of the backend's class with a cached shape and
    dtype -- ``ArrayBackend.wrap``'s own fast case without its frame (which pays for the layout
    test before it); [] for a backend with another ``wrap`` (its own rules)."""
    from .._backend import _CONTIG_CACHE
    from .._kernels.array_backend import ArrayBackend, _WrapStorage
    from .._tensor_base import new_tensor_source
    nd = getattr(backend.np, "ndarray", None)
    if type(backend).wrap is not ArrayBackend.wrap or nd is None:
        return []
    # (wrap's own storage class, made as wrap makes it: a call with no arguments)
    ns.update(__LRS=_WrapStorage, __nd=nd, __be=backend, __new=object.__new__, __C=_CONTIG_CACHE,
              __dtc=backend._dtype_cache)
    return ["if __r.__class__ is __nd and __r.flags.c_contiguous:",
            "    __s = __r.shape",
            "    __sd = __C.get(__s)",
            "    __dt = __dtc.get(__r.dtype)",
            "    if __sd is not None and __dt is not None:",
            "        __st = __LRS()",
            "        __st.root = __r",
            "        __st.version = 0",
            "        __st.backend = __be",
            *("        " + x for x in new_tensor_source(
                "__t", "__st", "__r", "__s", "__sd", "__dt", dev, "__be")),
            "        return __t"]


def _layout_returns(lines, ns, backend) -> list:
    """``lines`` with each ``return __wrap(<expr>, <dev>)`` made layout-aware (see
    ``_layout_guard``): row-major operands keep ``wrap``, others take ``wrap_elementwise``."""
    out = []
    for line in lines:
        body = line.lstrip()
        if body.startswith("return __wrap(") and body.endswith(")"):
            ind = line[:len(line) - len(body)]
            expr, dev = body[len("return __wrap("):-1].rsplit(", ", 1)
            if expr != "__r":
                out.append(f"{ind}__r = {expr}")
            out += [f"{ind}if {ns['__lguard']}:",
                    *(f"{ind}    {x}" for x in _row_major_build(backend, ns, dev)),
                    f"{ind}    return __wrap(__r, {dev})",
                    f"{ind}return __wrap_ew(__r, {dev}, ({ns['__largs']})"]
        else:
            out.append(line)
    return out


def _layout_guard(op, pn, ns, backend) -> bool:
    """For an elementwise op (its fake rule carries ``_tp_layout``: how many leading arguments
    are its operands) on an ``ArrayBackend`` (``wrap_elementwise``): put in ``ns`` the source of the
    test that every operand is a number or a row-major tensor (``__lguard``: the result is then
    row-major) and of the operands' tuple (``__largs``); False for any other op."""
    from .._kernels.array_backend import ArrayBackend
    k = getattr(op.builtin_fake, "_tp_layout", None)
    if not k or not isinstance(backend, ArrayBackend):
        return False     # (another Backend's results stay row-major: its wrap's)
    tests, names = [], []
    first = None
    pairs = list(zip(pn, op.schema.arguments))
    for n, a in (pairs[:k] if k.__class__ is int else [pairs[i] for i in k]):
        t = f"{n}.stride_tuple is __C.get({n}.raw_shape)"
        if first is None:
            first = n
        else:
            # the first operand's cached tuple: an operand with exactly those strides cannot
            # turn the order of a row-major first operand (one dict read fewer for equal shapes)
            t = f"({n}.stride_tuple is {first}.stride_tuple or {t})"
        if a.name in op.scalar_ok:
            t = f"({n}.__class__ is not __T or {t})"
            if getattr(op.builtin_fake, "_tp_number_parameter", False):
                n = f"({n} if {n}.__class__ is __T else None)"    # (no operand: left out)
        elif a.kind == "optional_tensor":
            t = f"({n} is None or {t})"
        tests.append(t)
        names.append(n)
    ns["__lguard"] = " and ".join(tests)
    ns["__largs"] = ", ".join(names) + "," + (
        "), True" if getattr(op.builtin_fake, "_tp_layout_preserve", False) else ")")
    return True


def _writes_adapter(op, kernel, backend):
    """``make_adapter(op, kernel, backend, writes=True)``, generated on its first call (the
    adapter's rare path: its quiet context in use)."""
    real = None

    def writes_adapter(*args, **kwargs):
        nonlocal real
        if real is None:
            real = make_adapter(op, kernel, backend, writes=True)
        return real(*args, **kwargs)
    return writes_adapter


# factory ops whose array kernel returns a fresh row-major array of the backend's array class
# (empty: np.empty/cupy.empty; full: np.full/np.zeros/cupy.full), built inline by the adapter
_ALLOC_KERNELS = frozenset({"empty", "full"})


def _alloc_build_lines(op, first_tensor, backend, ns) -> list:
    """Source lines (unindented, to put before ``return __wrap(__r, __dev)``) building the result
    of allocation op ``op`` (``tp::empty``/``tp::full``: every factory and ``new_*``/``*_like``
    call) inline, as the backend's own ``wrap`` would build it, without its frame and checks; or
    [] when the backend's ``wrap`` is not known here.

    The backend's ``empty``/``full`` must carry the ``_tp_fresh_alloc`` mark (they return a fresh
    row-major array of ``backend.np.ndarray``: ``ArrayBackend``'s own, the cuda plugin's). Its
    ``wrap`` must be known: ``ArrayBackend.wrap`` unchanged (a ``Storage`` with ``nbytes``), or a backend naming
    ``root_storage`` (its ``Storage`` class made with no arguments; the result's device must
    carry an index, as that backend's ``wrap`` requires for its own fast case). The result must
    be the backend's array class with a shape whose row-major strides are cached and a dtype the
    backend has seen; anything else falls through to ``wrap``."""
    if op.kernel_name not in _ALLOC_KERNELS or first_tensor is not None or \
            op.schema.returns[0].type != "Tensor":
        return []
    from .._backend import _CONTIG_CACHE, Storage
    from .._kernels.array_backend import ArrayBackend
    from .._tensor_base import new_tensor_source
    rs = backend.root_storage
    if not isinstance(backend, ArrayBackend) or not (
            getattr(type(backend).empty, "_tp_fresh_alloc", False) and
            getattr(type(backend).full, "_tp_fresh_alloc", False)):
        return []   # only allocations known to give a fresh row-major array of class `nd`
    nd, cache = backend.np.ndarray, backend._dtype_cache
    if rs is not None:
        cond = " and __dev.index is not None"
        st = ["__st = __RS()"]
    elif type(backend).wrap is ArrayBackend.wrap:
        cond = ""
        st = ["__st = __new(__S)", "__st.nbytes = __r.nbytes"]
    else:
        return []
    ns.update(__RS=rs, __S=Storage, __nd=nd, __C=_CONTIG_CACHE, __be=backend,
              __new=object.__new__, __dtc=cache)
    return ["if __r.__class__ is __nd:",
            "    __s = __r.shape",
            "    __sd = __C.get(__s)",
            "    __dt = __dtc.get(__r.dtype)",
            f"    if __sd is not None and __dt is not None{cond}:",
            *("        " + x for x in st),
            "        __st.root = __r",
            "        __st.version = 0",
            "        __st.backend = __be",
            *("        " + x for x in new_tensor_source(
                "__t", "__st", "__r", "__s", "__sd", "__dt", "__dev", "__be")),
            "        return __t"]


def _dtype_test(n: str, dtypes, name: str, ns) -> str:
    """The generated test that tensor ``n`` has one of ``dtypes`` (bound as ``name``), or, with
    no dtypes named, any floating dtype."""
    if dtypes is None:
        return f"{n}.raw_dtype._kind == 'f'"
    ns[name] = frozenset(dtypes)
    return f"{n}.raw_dtype in {name}"


def _float_ufunc_lines(op, kernel, backend, ns, early, kcall=None) -> list:
    """Source lines (unindented) of the adapter's inline ufunc and dense cases, or [] when
    ``op``/``kernel`` have none: the kernel's own fast cases without its frame and promotion step.

    A kernel with ``_tp_float_ufunc`` says: a floating tensor with a tensor of the same dtype or
    a Python number (a binary op), or a floating tensor alone (a unary op), is exactly that ufunc
    of the arrays (see _kernels/xp: add, sub, mul, div; tensorplay_cuda.eager), and the result
    has the tensor's dtype (and its shape when the operands' shapes are equal). It may narrow the
    case: ``_tp_float_dtypes`` (the dtypes where that holds, default every floating one),
    ``_tp_number_dtypes`` (those where it holds with a Python number too, default the same:
    float16 has no ufunc for torch's number rule -- the number rounded through float32, or read
    at float32 by mul/div -- so its kernels leave it out), ``_tp_float_max`` (arrays of at least
    that many elements take the kernel's own large-array path).

    A backend with ``root_storage`` (a ``Storage`` class made with no arguments, its byte size
    that of its root array), or an ``ArrayBackend`` keeping its ``wrap`` (the cpu backend: that
    ``wrap`` builds a ``RootStorage``, made here the same way), gets the result tensor built
    here, without ``wrap``'s frame or its reads of the array's shape and dtype, when the result
    is one of the backend's arrays and the operands are row-major dense (their strides the
    cached row-major tuple, the same tuple for both: the result is then dense too): shape,
    strides, dtype and device are the operand's. Anything else goes through ``wrap``. ``early``:
    the lines run before the operands are aligned to one device, so they test that themselves.
    ``kcall(fn, args)``: the source of a kernel call (``make_adapter``'s, which runs it in the
    quiet context), default ``fn(args)``.

    A kernel with ``_tp_dense_ufunc`` (on such a backend; with ``_tp_float_ufunc`` too, or,
    for a binary op, alone) says: on the arrays of row-major dense operands of one shape, at any
    size, that callable computes the op, returning a fresh row-major array of the backend's
    class with the operands' shape (tensorplay_cuda: one lean launch of a generated kernel), of
    the operand's dtype, or of ``_tp_dense_result`` where the kernel names one (a tensorplay
    dtype: ``bool`` for a comparison). Which operands (each set of tensorplay dtypes, the
    operand's):

    * ``_tp_dense_dtypes`` (default: those of the ufunc case, or every floating dtype): one
      tensor alone (a unary op), two tensors of one such dtype, or one and a Python
      ``float``/``int`` (passed as is);
    * ``_tp_dense_int_dtypes`` (default none): two tensors of one such dtype, or one and a
      Python ``int`` within int32's range (-2**31 to 2**31 - 1), never a ``float`` (an integer
      tensor's op with a float is a floating result) -- int32/int64 ``add``, ``sub``, ``mul``,
      ``maximum``, ``minimum``, which keep the dtype, and the comparisons;
    * ``_tp_dense_pair_dtypes`` (default none): two tensors of one such dtype only (a
      comparison of float16 or float64 tensors: with a number, torch's rounding rule is the
      kernel's).

    The adapter calls it in those cases -- before the ufunc case and its size bound -- and the
    ufunc (where the kernel has one) or the kernel in the others. A binary kernel with
    ``_tp_splat`` too says: on an operand of ``_tp_dense_dtypes`` whose strides are all 0 (a
    broadcast of one element, the gradient ``sum``/``mean`` hand back) and a Python number, that
    callable returns a fresh row-major array of the operand's shape holding the op's value, or
    None where it does not take the call (the adapter then goes on to the ufunc case).
    ``_tp_dense_calls``, ``(calls, float_calls, top, large_calls, large_float_calls, big)``,
    says: ``calls[dtype](a[, b], n)`` (the operand's tensorplay dtype; ``float_calls[dtype](a,
    number, n)`` with a Python ``float``) computes what the dense callable would for such
    operands of ``0 < n < top`` elements (``n`` the array's size), and the large dicts' calls
    the same for ``top <= n < big`` with ``n % 16 == 0``, or return None (nothing computed): the
    adapter calls them directly, without the dense callable's frame and its own look-ups; a
    dtype not in the dict, or a None, takes the dense callable. With it, ``_tp_dense_int_calls``
    (a dict) says the same of ``int_calls[dtype](a, number, n)`` for a Python ``int`` within
    int32's range and ``0 < n < top``.

    A binary kernel with ``_tp_dense_mixed``, ``(mixed, results, calls, top)``, says: on the
    arrays of two row-major tensors of one shape with at least one dimension, of fewer than
    ``top`` elements, whose dtypes ``(first, second)`` are a key of ``results`` (two different
    dtypes), ``mixed(a, b)`` computes the op, returning a fresh row-major array of the operands'
    shape and dtype ``results[(first, second)]`` (tensorplay_cuda: ``int64 * bool``, torch's
    promotion; bool for a comparison); ``calls[(first, second)](a, b, n)`` (a dict, filled as
    launches are kept) the same for ``0 < n``, or None (nothing computed). Anything else -- a
    0-d pair, ``top`` elements or more -- takes the kernel.
    """
    c = kcall if kcall is not None else (lambda fn, a: f"{fn}({a})")
    fast = getattr(kernel, "_tp_float_ufunc", None)
    dense = getattr(kernel, "_tp_dense_ufunc", None)
    args_ = op.schema.arguments
    if (fast is None and dense is None) or not args_ or len(args_) > 2 or \
            args_[0].kind != "tensor" or any(a.is_write for a in args_) or \
            len(op.schema.returns) != 1 or op.schema.returns[0].type != "Tensor":
        return []
    unary = len(args_) == 1
    if not unary and (args_[1].name not in op.scalar_ok or args_[1].kwarg_only):
        return []
    if fast is None and unary:
        return []        # (a dense case without the ufunc case: binary ops only)
    pn = _codegen.py_names(args_)
    s_ = pn[0]
    o_ = None if unary else pn[1]
    fd = getattr(kernel, "_tp_float_dtypes", None)
    if fast is not None:
        ns["__f"] = fast
        isf = _dtype_test(s_, fd, "__fd", ns)
        fnum = getattr(kernel, "_tp_number_dtypes", fd)
        isn = isf if fnum == fd else _dtype_test(s_, fnum, "__fn", ns)
        fmax = getattr(kernel, "_tp_float_max", None)
        if fmax is not None:
            ns["__fmax"] = fmax
            isf += f" and {s_}.native.size < __fmax"
            isn += f" and {s_}.native.size < __fmax"
    same = f" and {o_}.raw_device is {s_}.raw_device" if early else ""
    dev = f"{s_}.raw_device" if early else "__dev"
    rs = backend.root_storage
    make_st = "__RS()"
    if rs is None:
        from .._kernels.array_backend import ArrayBackend
        if isinstance(backend, ArrayBackend) and type(backend).wrap is ArrayBackend.wrap and \
                getattr(backend.np, "ndarray", None) is not None:
            # ArrayBackend's own wrap: its result (the RootStorage class wrap makes, called with
            # no arguments: ~0.3 k instructions less than object.__new__) built here
            from .._kernels.array_backend import _WrapStorage
            rs = _WrapStorage
    if rs is None and fast is None:
        return []        # (the dense case builds its result here: not on such a backend)
    if rs is None and unary:
        return [f"if {isf}:",
                f"    return __wrap({c('__f', f'{s_}.native')}, {dev})"]
    if rs is None:
        return [f"if {o_}.__class__ is __T:",
                f"    if {s_}.raw_dtype is {o_}.raw_dtype{same} and {isf}:",
                f"        return __wrap({c('__f', f'{s_}.native, {o_}.native')}, {dev})",
                f"elif ({o_}.__class__ is float or {o_}.__class__ is int) and {isn}:",
                f"    return __wrap({c('__f', f'{s_}.native, {o_}')}, {dev})"]
    from .._backend import _CONTIG_CACHE
    from .._tensor_base import new_tensor_source
    ns.update(__RS=rs, __nd=backend.np.ndarray, __C=_CONTIG_CACHE, __be=backend,
              __new=object.__new__)

    def build(dtype):
        # tensorplay._tensor_base.new_tensor inlined, with the operand's metadata (the operand
        # known dense: the result of the dense case needs no stride test) and result ``dtype``
        return [f"if __r.__class__ is __nd and {s_}.stride_tuple is __C.get({s_}.raw_shape):",
                f"    __st = {make_st}",
                "    __st.root = __r",
                "    __st.version = 0",
                "    __st.backend = __be",
                *("    " + x for x in new_tensor_source(
                    "__t", "__st", "__r", f"{s_}.raw_shape", f"{s_}.stride_tuple", dtype,
                    f"{s_}.raw_device", "__be")),
                "    return __t"]
    built = build(f"{s_}.raw_dtype")
    if dense is None:
        if unary:
            return [f"if {isf}:",
                    f"    __r = {c('__f', f'{s_}.native')}",
                    *("    " + x for x in built),
                    f"    return __wrap(__r, {dev})"]
        return [f"if {o_}.__class__ is __T:",
                f"    if {s_}.raw_dtype is {o_}.raw_dtype{same} and {isf}:",
                f"        __r = {c('__f', f'{s_}.native, {o_}.native')}",
                f"        if {s_}.raw_shape == {o_}.raw_shape and {s_}.stride_tuple is {o_}.stride_tuple:",
                *("            " + x for x in built),
                f"        return __wrap(__r, {dev})",
                f"elif ({o_}.__class__ is float or {o_}.__class__ is int) and {isn}:",
                f"    __r = {c('__f', f'{s_}.native, {o_}')}",
                *("    " + x for x in built),
                f"    return __wrap(__r, {dev})"]
    ns["__fdense"] = dense
    dd = getattr(kernel, "_tp_dense_dtypes", fd)
    isd = _dtype_test(s_, dd, "__dd", ns)
    kept = getattr(kernel, "_tp_dense_calls", None)
    if kept is not None:
        (ns["__dcalls"], ns["__dfcalls"], ns["__dtop"], ns["__dlcalls"], ns["__dlfcalls"],
         ns["__dbig"]) = kept
    # the dtypes taken with a tensor of their own dtype only, or with an int within int32 too
    # (never a float: an integer tensor's op with a float is a floating result)
    ints = frozenset(getattr(kernel, "_tp_dense_int_dtypes", ()) or ())
    extra = ints | frozenset(getattr(kernel, "_tp_dense_pair_dtypes", ()) or ())
    if not extra:
        isp = isd
    elif dd is not None:
        ns["__dp"] = frozenset(dd) | extra         # (one set test for two tensors)
        isp = f"{s_}.raw_dtype in __dp"
    else:
        ns["__dp"] = extra
        isp = f"({isd} or {s_}.raw_dtype in __dp)"
    if ints:
        ns["__di"] = ints
    icalls = getattr(kernel, "_tp_dense_int_calls", None) if kept is not None else None
    if icalls is not None:
        ns["__dicalls"] = icalls
    result = getattr(kernel, "_tp_dense_result", None)
    if result is not None:
        ns["__dres"] = result
    rdt = f"{s_}.raw_dtype" if result is None else "__dres"

    def dense_call(other, number=False):
        # the lines computing __r in the dense case (unindented): the kept launch for the
        # operand's dtype (_tp_dense_calls, _tp_dense_int_calls) where one is kept and the size
        # is within its bound, else the dense callable. ``number``: True for a Python float or
        # int, "int" for an int the caller found within int32
        args = f"{s_}.native" if other is None else f"{s_}.native, {other}"
        if kept is None or (number == "int" and icalls is None):
            return [f"__r = {c('__fdense', args)}"]
        both = "__a" if other is None else f"__a, {other}"
        lines = [f"__a = {s_}.native",
                 "__n = __a.size"]
        if number == "int":
            return lines + ["if 0 < __n < __dtop:",
                            f"    __c = __dicalls.get({s_}.raw_dtype)",
                            "else:",
                            "    __c = None",
                            f"if __c is None or (__r := {c('__c', both + ', __n')}) is None:",
                            f"    __r = {c('__fdense', both)}"]
        small, large = ("__dfcalls", "__dlfcalls") if number else ("__dcalls", "__dlcalls")
        if number:
            lines += [f"if {other}.__class__ is not float:"]
            if icalls is None:
                lines += ["    __c = None"]
            else:
                # (an int's kept launch takes it as an int32 argument)
                lines += [f"    __c = __dicalls.get({s_}.raw_dtype) if 0 < __n < __dtop and "
                          f"-0x80000000 <= {other} <= 0x7FFFFFFF else None"]
            lines += ["elif 0 < __n < __dtop:"]
        else:
            lines += ["if 0 < __n < __dtop:"]
        # (the large kept launches take a multiple of 16 elements; None: an address off
        # 16-byte alignment, nothing launched, the dense callable then)
        return lines + [f"    __c = {small}.get({s_}.raw_dtype)",
                        "elif __dtop <= __n < __dbig and not __n & 15:",
                        f"    __c = {large}.get({s_}.raw_dtype)",
                        "else:",
                        "    __c = None",
                        f"if __c is None or (__r := {c('__c', both + ', __n')}) is None:",
                        f"    __r = {c('__fdense', both)}"]
    # the dense case: its result is a fresh row-major array of the operand's shape
    dense_built = ["if __r.__class__ is __nd:", *build(rdt)[1:]]
    layout = f"{s_}.stride_tuple is __C.get({s_}.raw_shape)"
    if unary:
        return [f"if {isd} and {layout}:",
                *("    " + x for x in dense_call(None)),
                *("    " + x for x in dense_built),
                f"    return __wrap(__r, {dev})",
                f"if {isf}:",
                f"    __r = {c('__f', f'{s_}.native')}",
                *("    " + x for x in built),
                f"    return __wrap(__r, {dev})"]
    splat = []
    if getattr(kernel, "_tp_splat", None) is not None:
        # a broadcast of one element (every stride 0) with a number: the kernel's one launch
        # into a fresh row-major array (its strides the cached row-major tuple), else on
        ns["__fsplat"] = kernel._tp_splat
        splat = [f"    if {isd} and not any({s_}.stride_tuple):",
                 f"        __r = {c('__fsplat', f'{s_}.native, {o_}')}",
                 "        if __r is not None:",
                 f"            __sd = __C.get({s_}.raw_shape)",
                 "            if __r.__class__ is __nd and __sd is not None:",
                 f"                __st = {make_st}",
                 "                __st.root = __r",
                 "                __st.version = 0",
                 "                __st.backend = __be",
                 *("                " + x for x in new_tensor_source(
                     "__t", "__st", "__r", f"{s_}.raw_shape", "__sd", f"{s_}.raw_dtype",
                     f"{s_}.raw_device", "__be")),
                 "                return __t",
                 f"            return __wrap(__r, {dev})"]
    lines = [f"if {o_}.__class__ is __T:",
             f"    if {s_}.raw_dtype is {o_}.raw_dtype{same}:",
             f"        if {isp} and {s_}.raw_shape == {o_}.raw_shape and {s_}.stride_tuple is {o_}.stride_tuple "
             f"and {layout}:",
             *("            " + x for x in dense_call(f"{o_}.native")),
             *("            " + x for x in dense_built),
             f"            return __wrap(__r, {dev})"]
    if fast is not None:
        lines += [f"        if {isf}:",
                  f"            __r = {c('__f', f'{s_}.native, {o_}.native')}",
                  f"            if {s_}.raw_shape == {o_}.raw_shape and {s_}.stride_tuple is {o_}.stride_tuple:",
                  *("                " + x for x in built),
                  f"            return __wrap(__r, {dev})"]
    mixed = getattr(kernel, "_tp_dense_mixed", None)
    if mixed is not None:
        # two dtypes of its table, one shape with dimensions, both row-major, fewer than its
        # bound's elements: the two-dtype callable (its kept launch for the pair, when kept),
        # the result of the table's dtype (__m) built here
        ns["__fmixed"], ns["__mres"], ns["__mcalls"], ns["__mtop"] = mixed
        lines += [f"    elif (__m := __mres.get(__p := ({s_}.raw_dtype, {o_}.raw_dtype))) is not None "
                  f"and {s_}.raw_shape and {s_}.raw_shape == {o_}.raw_shape and "
                  f"{s_}.stride_tuple is {o_}.stride_tuple and {layout}{same}:",
                  f"        __a = {s_}.native",
                  "        __n = __a.size",
                  "        if __n < __mtop:",
                  "            if not __n or (__c := __mcalls.get(__p)) is None or "
                  f"(__r := {c('__c', f'__a, {o_}.native, __n')}) is None:",
                  f"                __r = {c('__fmixed', f'__a, {o_}.native')}",
                  "            if __r.__class__ is __nd:",
                  *("            " + x for x in build("__m")[1:]),
                  f"            return __wrap(__r, {dev})"]
    lines += [f"elif {o_}.__class__ is float or {o_}.__class__ is int:",
              f"    if {isd} and {layout}:",
              *("        " + x for x in dense_call(o_, number=True)),
              *("        " + x for x in dense_built),
              f"        return __wrap(__r, {dev})"]
    if ints:
        # an int within int32 (a kernel argument) with a tensor of those dtypes
        lines += [f"    if {o_}.__class__ is int and {s_}.raw_dtype in __di and "
                  f"-0x80000000 <= {o_} <= 0x7FFFFFFF and {layout}:",
                  *("        " + x for x in dense_call(o_, number="int")),
                  *("        " + x for x in dense_built),
                  f"        return __wrap(__r, {dev})"]
    lines += splat
    if fast is not None:
        lines += [f"    if {isn}:",
                  f"        __r = {c('__f', f'{s_}.native, {o_}')}",
                  *("        " + x for x in built),
                  f"        return __wrap(__r, {dev})"]
    return lines


def check_tensor_arguments(op, values: dict) -> None:
    """Raise ``TypeError`` (from None) naming the first ``Tensor`` argument of built-in ``op``
    whose value in ``values`` (schema name -> value) is not a tensor (nor a Python int or float
    where the op takes a number, ``op.scalar_ok``): ``tp::add: argument 'other' must be a Tensor
    or a Python number, got str ('a')``. Off the fast path: run when a kernel or a shape rule
    failed."""
    Tensor = TensorBase
    # an op serving several (index for index_select, index_put_ for index_fill_): the one called
    api = values.get("api")
    name = api if api.__class__ is str else op.name.partition('::')[2]
    for a in op.schema.arguments:
        v = values.get(a.name)
        if a.kind == "tensor" and not isinstance(v, Tensor) and not (
                a.name in op.scalar_ok and isinstance(v, (int, float))):
            what = "Tensor or a Python number" if a.name in op.scalar_ok else "Tensor"
            raise TypeError(f"{op.name}: argument '{a.name}' must be a {what}, got "
                            f"{type(v).__name__} ({v!r:.60})") from None
        if a.type in _INT_TYPES and v is not None and (v.__class__ is bool or not isinstance(
                v, (int, Tensor)) and not hasattr(type(v), "__index__")):
            # (torch's parser: x.max((0, 1)) is "argument 'dim' must be int, not tuple")
            raise TypeError(f"{name}(): argument '{a.name}' must be int, "
                            f"not {type(v).__name__}") from None
        if a.type in _INTS_TYPES and isinstance(v, (list, tuple)):
            for i, e in enumerate(v):
                if e.__class__ is bool or not isinstance(e, (int, Tensor)) and \
                        not hasattr(type(e), "__index__"):
                    raise TypeError(f"{name}(): argument '{a.name}' must be "
                                    f"tuple of ints, but found element of type "
                                    f"{type(e).__name__} at pos {i}") from None


_INT_TYPES = frozenset({"int", "int?", "SymInt", "SymInt?"})
_INTS_TYPES = frozenset({"int[]", "int[]?", "SymInt[]", "SymInt[]?"})


def kernel_error(op, err, values):
    """A kernel raised ``err`` (numpy's ValueError/TypeError): raise the op's own error instead.

    Runs the op's fake rule on fake copies of the arguments, which raises torch's message
    (shape mismatch, bad dim, ...) naming the op; otherwise re-raises ``err``'s type with the
    op's name in front of its message. ``tensorplay.compile`` explains a failed shape rule the
    same way (``check_tensor_arguments`` first, then the rule's own error), so a call refused
    eagerly is refused with the same words while a function is captured.
    """
    Tensor = TensorBase
    check_tensor_arguments(op, values)
    meta = op.builtin_fake
    if meta is not None:
        from ..fake import from_real

        def fk(v):
            return _pytree.tree_map(lambda t: from_real(t.detach()), v, Tensor)
        # (only the tensor arguments are faked: a 0-dim int tensor given as an int argument, a
        # dim, stays real, for the rule to read its value or name it as torch does)
        args = op.schema.arguments
        pos = [fk(values[a.name]) if a.is_tensor_like else values[a.name]
               for a in args if not a.kwarg_only]
        kw = {a.name: fk(values[a.name]) if a.is_tensor_like else values[a.name]
              for a in args if a.kwarg_only}
        try:
            meta(*pos, **kw)
        except (RuntimeError, IndexError, ValueError, TypeError) as e:
            raise e.with_traceback(None) from None
    if str(err).startswith(op.name) or getattr(err, "complete", False):
        raise err     # (already naming the op, or a kernel's message in torch's words in full)
    try:
        new = type(err)(f"{op.name}: {err}")
    except Exception:  # noqa: BLE001 - an exception type with an unusual constructor
        raise err from None
    raise new from err
