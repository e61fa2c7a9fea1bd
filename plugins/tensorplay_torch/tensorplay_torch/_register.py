"""Registration: TensorPlay ops become torch custom ops ``torch.ops.<ns>.<op>``.

For each op: ``torch.library`` defines ``<ns>::<op>`` with the op's own schema text (TensorPlay's
grammar is torch's: mutation and alias annotations, defaults, keyword-only arguments, tags kept),
registers a kernel for ``cpu`` and ``cuda`` (DLPack both ways, the TensorPlay op dispatched on
the tensors' device; on cuda inside torch's current stream), the fake kernel (``_fake``) and the
autograd (``_autograd``). Each op's registrations go into torch ``Library`` objects of its
own, kept here for the life of the process: torch undoes a library's registrations when it is
destroyed, which is how an op that fails half-way is taken out again while the other ops of its
namespace stay registered. Before anything is registered, a name torch would refuse or take for
its own (a reserved or torch-owned namespace, an operator torch already has) is refused with a
``BridgeError`` naming the op, its pack and what to do.
"""

from __future__ import annotations

import threading

import tensorplay as tp
import torch

from . import _autograd
from ._convert import (DYNAMO_HOOK, RETURNS, BridgeError, alias_error, check_aliasing,
                       check_returns, cuda_unavailable, fresh_returns, out_to_torch,
                       pick_written, plan_args, planned_args_to_tp, reraise, result_to_torch,
                       return_spec, set_eval_frame, skip_dynamo, to_tp, written_returns)
from ._fake import make_fake_kernel
from ._seed import seeded_call

__all__ = ["bridged_ops", "register"]

_TPTensor = tp.Tensor
_inference_mode = torch.is_inference_mode_enabled
_lock = threading.RLock()
_LIBS: dict[str, tuple] = {}     # "ns::op" -> its FRAGMENT libraries (kept alive)
_BRIDGED: dict[str, object] = {}                 # "ns::op" -> the TensorPlay op bridged
_SIGNATURES: dict[str, tuple] = {}               # "ns::op" -> (schema text, tags) bridged


def _where(op) -> str:
    return f"tensorplay-torch: op {op.name} (pack {op.owner or op.source or 'user code'})"


def _kernel(op, where):
    """torch kernel (cpu) of TensorPlay op ``op``: tensors cross by DLPack, the op dispatches
    on their device, results cross back. The arguments to convert are worked out once
    (``plan_args``). Per-call checks beyond the conversions: an output the schema declares no
    alias for must not share an input's storage (``check_aliasing``; for the common one
    tensor in, one tensor out form one attribute read and an identity test), the results must
    be what the schema declares (``out_to_torch``/``check_returns``: their number, a tensor
    where it says ``Tensor``; nothing more for one tensor where the schema declares one), and an
    op that writes arguments refuses inference tensors outside inference mode (as torch's
    in-place ops do)."""
    plan = plan_args(op.schema)
    tensors, others, kw = plan
    # an op tagged nondeterministic_seeded runs with TensorPlay's generator seeded from torch's
    # (``_seed``: torch.manual_seed makes it reproducible); any other op is called as it is
    call = seeded_call(op) if "nondeterministic_seeded" in _autograd._tag_names(op) else op
    fresh = fresh_returns(op)
    single = len(op.schema.returns) == 1 and not op.schema.returns_tuple and fresh == (0,)
    # one tensor returned bare is what the schema declares (else check_returns says what is)
    bare_ok = single and op.schema.returns[0].type in ("Tensor", "Tensor?")
    # one output, only plain Tensor arguments to compare it with: identity tests inline
    simple = single and not others and not kw

    def run(a, k):
        try:
            out = call(*a, **k)
        except BridgeError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
            reraise(e, f"{where}: the TensorPlay kernel raised")
        if out.__class__ is _TPTensor:      # one tensor (the common case): one call less
            if not bare_ok:
                check_returns(out, where)   # raises: the schema declares something else
            if simple:
                st = out.storage_ref
                n = len(a)
                for i in tensors:
                    if i < n and a[i].storage_ref is st:
                        alias_error(op, where, 0, i)
            elif fresh:
                check_aliasing(op, where, out, a, k, fresh)
            return result_to_torch(out, where)
        if fresh:
            check_aliasing(op, where, out, a, k, fresh)
        return out_to_torch(out, where)

    # Each kernel keeps TorchDynamo out itself (``skip_dynamo``, ``set_eval_frame``), as
    # torch.library.register_kernel's wrapper would with four Python frames more per call.
    mutated = _mutated_positions(op)
    written = written_returns(op)
    if written is not None and mutated != ((), ()):
        mpos, mkw = mutated

        def kernel(*args, **kwargs):
            # returns only arguments it writes: the TensorPlay op writes them (its own eager
            # check makes sure it returned them), torch gets its own argument objects back
            prior = set_eval_frame(None)
            try:
                if not _inference_mode():
                    _refuse_inference_writes(args, kwargs, mpos, mkw, where)
                a, k = planned_args_to_tp(plan, args, kwargs, where)
                try:
                    call(*a, **k)
                except BridgeError:
                    raise
                except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
                    reraise(e, f"{where}: the TensorPlay kernel raised")
                return pick_written(args, kwargs, written)
            finally:
                set_eval_frame(prior)
    elif mutated != ((), ()):
        mpos, mkw = mutated

        def kernel(*args, **kwargs):
            prior = set_eval_frame(None)
            try:
                if not _inference_mode():
                    _refuse_inference_writes(args, kwargs, mpos, mkw, where)
                return run(*planned_args_to_tp(plan, args, kwargs, where))
            finally:
                set_eval_frame(prior)
    elif tensors == (0,) and not others and not kw and single and bare_ok:
        # the common form (one leading tensor, everything else passes as it is, one output): no
        # list copy, no loops, no planner call per call; the aliasing check is one identity test
        def kernel(x, *args, **kwargs):
            prior = set_eval_frame(None)
            try:
                tx = to_tp(x, where)
                try:
                    out = call(tx, *args, **kwargs)
                except BridgeError:
                    raise
                except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
                    reraise(e, f"{where}: the TensorPlay kernel raised")
                if out.__class__ is _TPTensor:
                    if out.storage_ref is tx.storage_ref:
                        alias_error(op, where, 0, 0)
                    return result_to_torch(out, where)
                return out_to_torch(out, where)
            finally:
                set_eval_frame(prior)
    elif tensors == (0,) and not others and not kw:
        # the common form (one leading tensor, everything else passes as it is): no list
        # copy, no loops, no planner call per call
        def kernel(x, *args, **kwargs):
            prior = set_eval_frame(None)
            try:
                return run((to_tp(x, where), *args), kwargs)
            finally:
                set_eval_frame(prior)
    else:
        def kernel(*args, **kwargs):
            prior = set_eval_frame(None)
            try:
                return run(*planned_args_to_tp(plan, args, kwargs, where))
            finally:
                set_eval_frame(prior)
    kernel.__name__ = f"{op.opname}_kernel"
    return skip_dynamo(kernel)


def _mutated_positions(op):
    """``(positions, keyword names)`` of the arguments ``op`` writes (positional ones by index
    in torch's ``args``, keyword-only ones by name)."""
    names = set(op.mutates_args)
    pos = tuple(i for i, a in enumerate(x for x in op.schema.arguments if not x.kwarg_only)
                if a.name in names)
    kws = tuple(a.name for a in op.schema.arguments if a.name in names and a.kwarg_only)
    return pos, kws


def _refuse_inference_writes(args, kwargs, pos, kws, where):
    """torch's rule for in-place ops: an inference tensor is written only inside
    ``torch.inference_mode()`` (``RuntimeError`` with torch's own words otherwise)."""
    n = len(args)
    for v in [args[i] for i in pos if i < n] + [kwargs.get(k) for k in kws]:
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(t, torch.Tensor) and t.is_inference():
                raise RuntimeError(
                    f"{where}: Inplace update to inference tensor outside InferenceMode is not "
                    f"allowed (the op writes an inference tensor, as torch refuses for its own "
                    f"in-place ops). Run it inside torch.inference_mode(), or clone the tensor "
                    f"outside it first.")


def _register_kernel(lib, op, device, kernel):
    """``kernel`` as ``op``'s torch kernel for ``device`` ("cpu" or "cuda")."""
    if DYNAMO_HOOK:             # the kernel keeps TorchDynamo out itself
        lib.impl(op.opname, kernel, "CPU" if device == "cpu" else "CUDA")
    else:                       # pragma: no cover - older torch: register_kernel's wrapper does
        torch.library.register_kernel(op.name, device, kernel, lib=lib)


_STREAMS: dict = {}   # (device index, stream pointer) -> cupy.cuda.ExternalStream
# [cupy, torch's current device (C), its current stream's pointer (C), the CUDA runtime's
# current device (CuPy's, C), CuPy's current stream (C)]
_CUDA: list = []


def _cuda_functions(where="tensorplay-torch"):
    """``_CUDA``, filled on the first cuda call: torch's current device and raw current stream
    read by its own C functions (what ``torch.cuda.current_stream().cuda_stream`` returns,
    without building a ``torch.cuda.Stream`` per call), or through ``torch.cuda`` where a
    torch lacks them; and the CUDA runtime's current device as CuPy reads it. Without CuPy
    (no ``tensorplay-cuda[cuda12|cuda13]``) raises ``DeviceUnavailable`` (a ``BridgeError``
    and TensorPlay's ``DeviceUnavailableError``) naming op ``where``, the device and the
    install line."""
    try:
        import cupy
    except ImportError as e:
        raise cuda_unavailable(where, e) from e
    get_device = getattr(torch._C, "_cuda_getDevice", None)
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get_device is None or raw_stream is None:    # pragma: no cover - other torch builds
        get_device = torch.cuda.current_device

        def raw_stream(index):
            return torch.cuda.current_stream(index).cuda_stream
    _CUDA[:] = [cupy, get_device, raw_stream, cupy.cuda.runtime.getDevice,
                cupy.cuda.get_current_stream]
    return _CUDA


def _external(cupy, index: int, ptr: int):
    """CuPy's stream object for torch's stream ``ptr`` on device ``index``, made once."""
    key = (index, ptr)
    ext = _STREAMS.get(key)
    if ext is None:
        ext = _STREAMS[key] = cupy.cuda.ExternalStream(ptr, index)
    return ext


def _on_torch_stream(fn, where="tensorplay-torch"):
    """``fn`` (a kernel of op ``where``, named in the error when CuPy is missing) run with CuPy's
    current device and stream set to torch's current ones, so that TensorPlay's cuda kernels
    (CuPy, Triton through tensorplay-triton) enqueue on torch's stream with no synchronisation
    added. Where torch's current device already is the CUDA runtime's
    (CuPy's; the common case) only the stream is entered: ``cupy.cuda.Device``'s context would
    set the same device again on exit (the cuda backend's ``guard_kernel`` skips it the same
    way); and where CuPy's current stream already is torch's (the same stream pointer: both on
    the default stream, the common case) nothing is entered."""
    def cuda_kernel(*args, **kwargs):
        prior = set_eval_frame(None)
        try:
            cupy, get_device, raw_stream, runtime_device, cupy_stream = (
                _CUDA or _cuda_functions(where))
            index = get_device()
            ptr = raw_stream(index)
            if runtime_device() == index:
                if cupy_stream().ptr == ptr:
                    return fn(*args, **kwargs)
                with _external(cupy, index, ptr):
                    return fn(*args, **kwargs)
            with cupy.cuda.Device(index), _external(cupy, index, ptr):
                return fn(*args, **kwargs)
        finally:
            set_eval_frame(prior)
    cuda_kernel.__name__ = fn.__name__.replace("_kernel", "_cuda_kernel")
    return skip_dynamo(cuda_kernel)


def _tags(op):
    """``op``'s tags as torch's, with ``torch.Tag.pt2_compliant_tag`` added where the op is
    (``_pt2_compliant``), as ``torch.library.custom_op`` adds it to every op it defines."""
    tags = [getattr(torch.Tag, t) for t in op.tags if hasattr(torch.Tag, t)]
    if _pt2_compliant(op) and torch.Tag.pt2_compliant_tag not in tags:
        tags.insert(0, torch.Tag.pt2_compliant_tag)
    return tuple(tags)


# what a bridged op's fake cannot describe to torch: an output size that depends on the data
_DATA_DEPENDENT = frozenset({"dynamic_output_shape", "data_dependent_output"})


def _pt2_compliant(op) -> bool:
    """Whether torch.compile / export can take bridged ``op`` as it is (``pt2_compliant_tag``):
    its fake kernel has something to run -- a fake rule of the op's own (``register_fake``), a
    Triton op's, or a device-agnostic body -- and the op is not tagged as having data-dependent
    output sizes (which TensorPlay's fakes cannot give torch). The rest of what the tag promises
    (schema, fake, autograd registration, AOT dispatch) is what torch's opcheck checks, and the
    bridge passes it for such ops (tests/torch_bridge/test_opcheck*.py, test_bridge43.py).
    Not an op tagged ``nondeterministic_seeded`` that is differentiated through its body (no
    formula): torch.compile's backward would run that body again without the forward's seed, and
    the bridge refuses it there (opcheck's AOT test with inputs requiring grad fails)."""
    tags = _autograd._tag_names(op)
    if _DATA_DEPENDENT & tags:
        return False
    if "nondeterministic_seeded" in tags and op.backward_fn is None and not op.mutates_args:
        return False
    return bool(op.has_fake or op.is_triton or op.active_kernel("default") is not None)


def _define_backward(lib, name, schema, bridge):
    lib.define(name + schema)
    qual = f"{_autograd.BACKWARD_NS}::{name}"
    where = bridge.where
    bridge.cuda_kernel = _on_torch_stream(bridge.backward_kernel, where)
    bridge.cuda_eager = _on_torch_stream(bridge.eager_backward, where)
    bridge.cuda_run = _on_torch_stream(bridge._direct_run, where)
    bridge.cuda_direct = _on_torch_stream(bridge.direct_backward, where)
    torch.library.register_kernel(qual, "cpu", bridge.backward_kernel, lib=lib)
    torch.library.register_kernel(qual, "cuda", bridge.cuda_kernel, lib=lib)
    torch.library.register_fake(qual, bridge.backward_fake, lib=lib)
    return getattr(getattr(torch.ops, _autograd.BACKWARD_NS), name).default


def _bump_versions(op, lib):
    """An op that writes arguments bumps their version counters (``ADInplaceOrView``), so torch's
    autograd sees the writes (saved tensors, in-place checks): as ``torch.library.custom_op``."""
    names = set(op.mutates_args)
    pos = [i for i, a in enumerate(op.schema.arguments) if a.name in names and not a.kwarg_only]
    kws = [a.name for a in op.schema.arguments if a.name in names and a.kwarg_only]
    overload = getattr(getattr(torch.ops, op.namespace), op.opname).default
    after = torch._C._after_ADInplaceOrView_keyset
    bump = torch.autograd.graph.increment_version

    def adinplaceorview(keyset, *args, **kwargs):
        for i in pos:
            if i < len(args) and args[i] is not None:
                bump(args[i])
        for k in kws:
            if kwargs.get(k) is not None:
                bump(kwargs[k])
        return overload.redispatch(keyset & after, *args, **kwargs)
    lib.impl(op.opname, adinplaceorview, "ADInplaceOrView", with_keyset=True)


def _backend_select(op, lib):
    """An op without tensor arguments dispatches on its ``device`` argument (TensorPlay's rule,
    and torch's for factory functions)."""
    names = [a.name for a in op.schema.arguments]
    idx = names.index("device")
    overload = getattr(getattr(torch.ops, op.namespace), op.opname).default

    def backend_select(keyset, *args, **kwargs):
        dev = kwargs.get("device") if idx >= len(args) else args[idx]
        dev = torch.device("cpu") if dev is None else torch.device(dev)
        key = getattr(torch._C.DispatchKey, torch._C._dispatch_key_for_device(dev.type))
        return overload.redispatch(torch._C.DispatchKeySet(key), *args, **kwargs)
    lib.impl(op.opname, backend_select, "BackendSelect", with_keyset=True)


# torch's own operator namespaces, refused as a pack's: torch itself refuses "prim"
# (TorchScript's); its compilers, functionalization and compiled autograd take ops in "aten" and
# "prims" for its own (ATen's operators, torch._prims' primitives)
_TORCH_NAMESPACES = {"aten": "the namespace of torch's ATen operators",
                     "prims": "the namespace of torch's primitives (torch._prims)"}
_schemas_of = getattr(torch._C, "_jit_get_schemas_for_operator", lambda name: [])


def _rename(op) -> str:
    return (f"Rename the op's namespace in its pack (e.g. {op.namespace.strip('_') + '_ops'!r}: "
            f"torch.ops.<namespace> is where torch users find it)")


def _refuse_name(op, where) -> None:
    """``BridgeError`` when torch would refuse ``op``'s name or take it for one of its own
    (before anything is registered): a namespace of torch's own operators, a ``torch.ops``
    attribute that is not an op namespace (``higher_order``, ``load_library``...), an operator
    name torch already has (any overload: defining another would add one to it)."""
    ns = op.namespace
    if ns in _TORCH_NAMESPACES:
        raise BridgeError(f"{where}: namespace {ns!r} is {_TORCH_NAMESPACES[ns]} (refused on the "
                          f"torch side: torch's compilers and functionalization treat every op "
                          f"there as one of its own). {_rename(op)}.")
    space = getattr(torch.ops, ns, None)
    if not isinstance(space, torch._ops._OpNamespace):
        raise BridgeError(f"{where}: torch.ops.{ns} is torch's own "
                          f"{type(space).__name__} object, not a namespace of custom ops "
                          f"(refused on the torch side: torch.ops.{ns}.{op.opname} would not "
                          f"reach the op). {_rename(op)}.")
    existing = _schemas_of(op.name)
    if existing:
        shown = "; ".join(str(x) for x in existing[:3]) + ("; ..." if len(existing) > 3 else "")
        raise BridgeError(f"{where}: torch already has an operator {op.name} ({shown}) (refused "
                          f"on the torch side: another library, or a torch.library call, defines "
                          f"torch.ops.{ns}.{op.opname}; defining it again would fail or add an "
                          f"overload to that operator). Rename the op in its pack, or leave the "
                          f"other library out of this process.")


def _define_refused(op, where, e) -> str:
    """The message when torch's ``Library.define`` refuses ``op``'s schema (``e``): a default
    torch's schema parser cannot read is named with what to do; a name defined meanwhile gets
    the other-library hint; anything else quotes the schema."""
    head = (f"{where}: torch refused to define it (torch side): {type(e).__name__}: "
            f"{' '.join(str(e).split())}")
    bad = []
    for a in op.schema.arguments:
        if not a.has_default:
            continue
        text = str(a)
        try:
            _parse_schema(f"f({text}) -> ()")
        except Exception:  # noqa: BLE001 - any parse failure: this default is the cause
            bad.append((a, text.partition("=")[2]))
    if bad:
        parts = "; ".join(f"argument {a.name!r} has default {d}" for a, d in bad)
        floats = [a for a, _ in bad if a.type == "float"]
        fix = (f"make it optional with default None (e.g. `float? {floats[0].name}=None`, and "
               f"read None as that value in the kernel), or give it a finite default"
               if floats else "give it a default torch's schema grammar can write")
        return (f"{head}. torch's schema parser cannot read a default of the op's schema "
                f"{op.schema.signature_str()}: {parts} (torch takes finite numbers only: no "
                f"inf, -inf, nan). To bridge it, {fix}.")
    if "multiple times" in str(e):
        return (f"{head}. Another library already defines torch.ops.{op.namespace}."
                f"{op.opname}: rename the op in its pack, or leave that library out.")
    return f"{head}. The op's schema as TensorPlay has it: {op.schema.signature_str()}"


_parse_schema = torch._C.parse_schema


def _bridge(op, libs: list, where: str) -> None:
    """Register ``op`` with torch; the ``Library`` objects used are appended to ``libs`` (the
    caller destroys them when this raises). Raises ``BridgeError`` naming the op, its pack and
    the side that refused."""
    _refuse_name(op, where)
    try:
        lib = torch.library.Library(op.namespace, "FRAGMENT")
    except Exception as e:  # noqa: BLE001 - e.g. ValueError: torch reserves the namespace
        raise BridgeError(f"{where}: torch refused the namespace {op.namespace!r} (torch side): "
                          f"{type(e).__name__}: {e} {_rename(op)}.") from e
    libs.append(lib)
    try:
        lib.define(op.opname + op.schema.signature_str(), tags=_tags(op))
    except Exception as e:  # noqa: BLE001 - RuntimeError, or IndexError from torch's parser
        raise BridgeError(_define_refused(op, where, e)) from e
    step = "registering its kernels with torch (torch side)"
    RETURNS[where] = return_spec(op)        # what the kernels' results must be
    try:
        kernel = _kernel(op, where)
        cuda_kernel = _on_torch_stream(kernel, where)
        _register_kernel(lib, op, "cpu", kernel)
        _register_kernel(lib, op, "cuda", cuda_kernel)
        torch.library.register_fake(op.name, _checked_fake(make_fake_kernel(op, where), where),
                                    lib=lib)
        if op.mutates_args:
            _bump_versions(op, lib)
        if not any(a.is_tensor_like for a in op.schema.arguments) and \
                "device" in [a.name for a in op.schema.arguments]:
            _backend_select(op, lib)
        step = "bridging its autograd (torch side)"
        overload = getattr(getattr(torch.ops, op.namespace), op.opname).default

        def define_backward(name, schema, bridge):
            bw_lib = torch.library.Library(_autograd.BACKWARD_NS, "FRAGMENT")
            libs.append(bw_lib)
            return _define_backward(bw_lib, name, schema, bridge)
        autograd_kernel = _autograd.bridge_autograd(op, where, overload, define_backward,
                                                    (kernel, cuda_kernel))
        if autograd_kernel is not None:
            lib.impl(op.opname, autograd_kernel, "Autograd", with_keyset=True)
    except BridgeError:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised as BridgeError naming op, pack and side
        raise BridgeError(f"{where}: could not be bridged: {step} raised {type(e).__name__}: "
                          f"{e}") from e


def _checked_fake(fake, where):
    """The pack's fake kernel (``make_fake_kernel``) with its results checked against the op's
    schema (``check_returns``), as the real kernels' are: torch reads them by the schema."""
    def fake_kernel(*args, **kwargs):
        out = fake(*args, **kwargs)
        check_returns(out, where, torch.Tensor)
        return out
    fake_kernel.__name__ = fake.__name__
    return fake_kernel


def _undo(libs, where=None) -> None:
    """Take an op's registrations (``libs``, complete or partial) out of torch again."""
    if where is not None:
        RETURNS.pop(where, None)
    for lib in reversed(libs):
        destroy = getattr(lib, "_destroy", None)   # what collecting the library runs, now
        if destroy is not None:
            destroy()


def _resolve(name: str):
    ns, _, opname = name.partition("::")
    return getattr(getattr(tp.ops, ns), opname)


def _select(namespace, plugin):
    """``(ops, namespaces asked for that have no op)``; ``BridgeError`` when none has one."""
    if plugin is not None:
        return [op for op, _ in tp.plugins.plugin_ops(plugin)], []
    tp.plugins.load_all()
    unknown = []
    if namespace is None:
        names = [r["name"] for r in tp.plugins.ops_table() if not r["builtin"]]
    else:
        spaces = [namespace] if isinstance(namespace, str) else list(namespace)
        names = []
        for ns in spaces:
            rows = tp.plugins.ops_table(ns)
            if not rows:
                unknown.append(ns)
            names += [r["name"] for r in rows]
        if not names:
            raise BridgeError(f"tensorplay_torch.register: no TensorPlay op in namespace(s) "
                              f"{', '.join(spaces)} (see `tensorplay ops`)")
    return [_resolve(n) for n in names], unknown


def register(namespace: str | list[str] | None = None, *, plugin: str | None = None) -> list[str]:
    """Register TensorPlay ops as torch custom ops ``torch.ops.<ns>.<op>``.

    ``namespace``: one namespace (``"example"``) or a list of them; ``plugin``: every op one
    plugin (distribution or entry-point name) ships; neither: every op of every installed pack
    (TensorPlay's built-in ``tp::`` ops are never bridged). Ops already bridged are skipped, so
    the call is idempotent. An op redefined in TensorPlay since it was bridged (e.g. a notebook
    cell run again) keeps its torch registration: with the same schema the new definition is
    what runs; with another schema (or tags) the op is reported as failing, naming the old and
    the new schema, and calls keep the old schema until Python is restarted -- torch cannot
    redefine an op in a running process (taking the old definition out and defining the new
    one leaves every ``torch.ops.<ns>.<op>`` object held from before dangling: calling one
    crashes the interpreter).

    Each op keeps its schema text (mutation and alias annotations, defaults, keyword-only
    arguments), gets kernels for torch's ``cpu`` and ``cuda`` (zero-copy DLPack; on cuda in torch's
    current stream), a fake kernel from the pack's fake, and autograd from the pack's
    ``register_autograd`` formula (or through its device-agnostic body; ops that mutate get
    none, as torch allows none). Same rules as ``torch.library.custom_op`` ops: torch's
    ``pt2_compliant_tag`` is added where the op has a fake rule to run (``_pt2_compliant``), and
    an op tagged ``nondeterministic_seeded`` draws with TensorPlay's generator seeded from
    torch's on each call (``torch.manual_seed`` makes it reproducible; ``_seed``). At call time:
    a kernel's exception reaches the caller unchanged (same object, type and attributes, as
    ``custom_op``'s), with a note naming the op, the pack and the side; results that are not
    what the schema declares (their number, a tensor where it says ``Tensor``) raise
    ``BridgeError`` before torch reads them; a cuda call without CuPy raises a ``BridgeError``
    that is also ``tensorplay.errors.DeviceUnavailableError``, with the install line.

    Default dtype: the bodies run in TensorPlay, so floating tensors they create (``tp.zeros``,
    ``tp.arange(n) * 0.1``, Python floats) get TensorPlay's default dtype,
    ``tp.get_default_dtype()`` (float32 unless set) -- not torch's: ``torch.set_default_dtype``
    does not reach them. Set both (``tp.set_default_dtype(tensorplay_torch.DTYPES[
    torch.get_default_dtype()])``), or pass dtypes explicitly. (Both defaults are process-wide;
    the bridge does not switch TensorPlay's per call, which would race with other threads
    running TensorPlay code and cost every call.)

    Returns the qualified names bridged by this call. An op that cannot be bridged never stops
    the others: every other op is registered, what was registered of the failing one is taken out
    of torch again, and then one ``BridgeError`` (a ``RuntimeError``) is raised naming each
    failing op, its pack and the side that refused, with what to do: torch, when the name is
    taken (its schema quoted), when the namespace is torch's own (``prim``, which torch
    reserves; ``aten``, ``prims``; ``torch.ops`` attributes such as ``higher_order``), or
    when its schema parser cannot read a default (``float x=inf``: the argument named). Its
    ``bridged`` attribute lists the ops this call did register, ``failed`` maps each failing op
    to its message. A later call retries only the failed ones. A namespace of the list with no
    TensorPlay op (a typo) is an error too, raised the same way after the others are
    registered (its ``unknown`` attribute lists those namespaces); a single such namespace
    raises at once. ``KeyError``/``LookupError`` from TensorPlay for an unknown plugin.
    """
    with _lock:
        done, failed = [], {}
        ops, unknown = _select(namespace, plugin)
        for op in ops:
            if op.is_builtin:
                continue
            signature = (op.schema.signature_str(), tuple(op.tags))
            if op.name in _BRIDGED:
                if _SIGNATURES[op.name] != signature:
                    failed[op.name] = _redefined(op, _SIGNATURES[op.name], signature)
                continue
            where = _where(op)
            libs: list = []
            try:
                _bridge(op, libs, where)
            except Exception as e:  # noqa: BLE001 - named in the BridgeError raised below
                _undo(libs, where)
                failed[op.name] = str(e) if isinstance(e, BridgeError) else \
                    f"{where}: could not be bridged: {type(e).__name__}: {e}"
                continue
            _LIBS[op.name] = tuple(libs)
            _BRIDGED[op.name] = op
            _SIGNATURES[op.name] = signature
            done.append(op.name)
        if failed or unknown:
            lines = [f"  - {m}" for m in failed.values()]
            lines += [f"  - namespace {ns!r}: no TensorPlay op in it (a typo? see `tensorplay "
                      f"ops`)" for ns in unknown]
            what = f"{len(failed)} op(s) could not be bridged" if failed else \
                f"unknown namespace(s) {', '.join(map(repr, unknown))}"
            err = BridgeError(f"tensorplay_torch.register: {what}; the other {len(done)} op(s) "
                              f"of this call are registered:\n" + "\n".join(lines))
            err.bridged, err.failed, err.unknown = done, failed, unknown
            raise err
        return done


def _redefined(op, old, new) -> str:
    """The message for an op redefined in TensorPlay with another schema (or tags) since it was
    bridged (``old``/``new``: ``(schema text, tags)``)."""
    def show(sig):
        return sig[0] + (f" (tags {', '.join(sig[1])})" if sig[1] else "")
    return (f"{_where(op)}: redefined in TensorPlay since it was bridged, with schema "
            f"{show(new)}; torch keeps the first definition, {show(old)} (refused on the torch "
            f"side: torch cannot redefine an op in a running process -- taking the old "
            f"definition out would leave every torch.ops.{op.namespace}.{op.opname} object "
            f"held from before dangling, and calling one crashes). Calls through torch keep the "
            f"old schema: restart Python to bridge the new one (or give the new definition "
            f"another name).")


def bridged_ops() -> list[str]:
    """Qualified names of every op bridged so far in this process."""
    return sorted(_BRIDGED)
