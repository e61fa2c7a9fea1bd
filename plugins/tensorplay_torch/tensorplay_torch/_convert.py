"""Values across the bridge: torch tensors <-> TensorPlay tensors through DLPack (zero-copy, views
and strides kept), dtypes and devices both ways, and whole argument lists. On cpu the same
memory crosses through NumPy views instead (``Tensor.numpy()`` and ``from_numpy`` on both sides:
zero-copy too, and cheaper per call than a DLPack capsule).

DLPack has no bfloat16 that NumPy (the cpu plugin's storage) can import, so a cpu bfloat16
tensor crosses as the int16 view of the same memory and is reinterpreted on the other side
(still zero-copy). Everything else crosses as itself.

Errors are ``BridgeError`` naming the op, the pack and the side that refused (a dtype or device
TensorPlay lacks, or one torch lacks).
"""

from __future__ import annotations

import numpy as np
import tensorplay as tp
import torch
from tensorplay import _devices as _tp_devices
from tensorplay import errors as _tp_errors

__all__ = [
    "DTYPES",
    "BridgeError",
    "alias_error",
    "args_to_tp",
    "check_aliasing",
    "fresh_returns",
    "out_to_torch",
    "plan_args",
    "planned_args_to_tp",
    "RETURNS",
    "check_returns",
    "cuda_unavailable",
    "DeviceUnavailable",
    "reraise",
    "result_to_torch",
    "return_spec",
    "same_stream_to_torch",
    "to_tensorplay",
    "to_torch",
    "to_tp",
    "torch_dtype",
    "tp_dtype",
]


class BridgeError(RuntimeError):
    """A value could not cross between torch and TensorPlay (the message names the op, the
    pack and the side that refused it)."""


def reraise(e: BaseException, prefix: str):
    """Raise ``e`` again unchanged -- the same object: its type, arguments and attributes (callers,
    torch's opcheck included, catch it by type and read its attributes; as
    ``torch.library.custom_op`` passes a kernel's exception through) -- with a note (PEP 678:
    printed under the message in tracebacks from Python 3.11; on 3.10 only kept in
    ``__notes__``) naming the op, the pack and the side: ``prefix``, then the exception's type and
    the first line of its message. An exception passing the same place twice gets the note
    once.

    One exception is converted: TensorPlay's ``OpReturnError`` (a kernel or fake kernel returned
    what the op's schema does not declare, refused by the op's own call) becomes a
    ``ReturnsError``, a ``BridgeError`` that is still an ``OpReturnError``, with ``prefix`` in its
    message: the bridge refuses such results with a ``BridgeError`` naming the op and the pack
    (``check_returns``), whichever side finds them first."""
    if isinstance(e, _tp_errors.OpReturnError) and not isinstance(e, BridgeError):
        raise ReturnsError(f"{prefix}: {e}") from e
    text = str(e).strip().split("\n", 1)[0]
    if len(text) > 300:
        text = text[:297] + "..."
    note = f"{prefix}: {type(e).__name__}: {text}" if text else f"{prefix}: {type(e).__name__}"
    notes = getattr(e, "__notes__", None)
    if notes is None or (isinstance(notes, list) and note not in notes):
        try:
            add = getattr(e, "add_note", None)
            if add is not None:
                add(note)
            else:                       # Python 3.10: kept where tools (pytest) read notes
                e.__notes__ = [*(notes or ()), note]
        except Exception:  # noqa: BLE001, S110 - __notes__ replaced by something else: no note
            pass
    raise e


class ReturnsError(BridgeError, _tp_errors.OpReturnError):
    """A bridged op's kernel (or fake kernel) returned what its schema does not declare, as
    TensorPlay's call found it: both a ``BridgeError`` and TensorPlay's
    ``tensorplay.errors.OpReturnError`` (``reraise``)."""


class DeviceUnavailable(BridgeError, _tp_errors.DeviceUnavailableError):
    """A bridged op was called on a device TensorPlay cannot use here (e.g. cuda without CuPy):
    both a ``BridgeError`` and TensorPlay's ``tensorplay.errors.DeviceUnavailableError``."""


def cuda_unavailable(where: str, cause: BaseException) -> DeviceUnavailable:
    """The error for a call on torch's cuda device when TensorPlay cannot run there (``cause``:
    what importing CuPy or setting up the cuda backend raised): names the op (``where``), the
    device, TensorPlay's reason and the install line."""
    try:
        ok, why = tp.plugins.device_status("cuda")
    except Exception:  # noqa: BLE001 - no status: the import error says enough
        ok, why = False, None
    if isinstance(cause, ImportError) and getattr(cause, "name", None) == "cupy":
        reason = "CuPy, which TensorPlay's cuda kernels run on, cannot be imported"
    else:
        reason = f"{type(cause).__name__}: {cause}"
    if not ok and why:
        reason += f"; TensorPlay says: {why}"
    return DeviceUnavailable(
        f"{where}: cannot run on device 'cuda' (refused on the TensorPlay side): {reason}. "
        f"Install TensorPlay's cuda plugin with the CuPy of your CUDA driver: pip install "
        f"'tensorplay-cuda[cuda13]' (CUDA 13 driver) or 'tensorplay-cuda[cuda12]' (CUDA 12) "
        f"-- from a clone, -e 'plugins/tensorplay_cuda[cuda13]' -- then restart Python; "
        f"or pass cpu tensors (device='cpu').")


# torch dtype <-> TensorPlay dtype: the floating types, the integer types, bool
DTYPES = {
    torch.float16: tp.float16, torch.bfloat16: tp.bfloat16, torch.float32: tp.float32,
    torch.float64: tp.float64, torch.int8: tp.int8, torch.int16: tp.int16,
    torch.int32: tp.int32, torch.int64: tp.int64, torch.uint8: tp.uint8, torch.bool: tp.bool,
    torch.uint32: tp.uint32,
}
_TO_TORCH = {v: k for k, v in DTYPES.items()}

_from_dlpack = tp.from_dlpack
_from_numpy = tp.from_numpy
_backend = tp.backends.get
_CPU = tp.device("cpu")
_torch_from_numpy = torch.from_numpy
_torch_from_dlpack = torch.from_dlpack
_Tensor = torch.Tensor
_TPTensor = tp.Tensor
_BF16 = torch.bfloat16
_TP_BF16 = tp.bfloat16
_ndarray = np.ndarray


def tp_dtype(dt, where: str = "tensorplay-torch"):
    """The TensorPlay dtype of torch dtype ``dt``; ``BridgeError`` when TensorPlay has none."""
    try:
        return DTYPES[dt]
    except KeyError:
        raise BridgeError(
            f"{where}: torch dtype {dt} has no TensorPlay equivalent (refused on the TensorPlay "
            f"side; supported: {', '.join(str(d) for d in DTYPES)}). Convert the tensor first, "
            f"e.g. x.to(torch.float32).") from None


def torch_dtype(dt, where: str = "tensorplay-torch"):
    """The torch dtype of TensorPlay dtype ``dt``; ``BridgeError`` when torch has none."""
    try:
        return _TO_TORCH[dt]
    except KeyError:
        raise BridgeError(f"{where}: TensorPlay dtype {dt} has no torch equivalent (refused on "
                          f"the torch side)") from None


def tp_device(d):
    """The TensorPlay device of torch device ``d`` (``cpu``, ``cuda:N``, ``meta``)."""
    return tp.device(d.type) if d.index is None else tp.device(d.type, d.index)


def torch_device(d):
    return torch.device(d.type) if d.index is None else torch.device(d.type, d.index)


# TorchDynamo's frame hook, turned off by the bridge's kernels themselves (what
# torch.library.register_kernel's wrapper, torch._disable_dynamo, does with four Python frames
# per call): ``set_eval_frame(None)`` around the kernel's work, and the kernel's own code marked
# "skip" (torch._dynamo.eval_frame.skip_code), so a kernel called eagerly under torch.compile is
# never traced itself. ``DYNAMO_HOOK`` is False on a torch without these C functions: the
# kernels are then registered through register_kernel's wrapper instead.
try:
    from torch._C._dynamo import eval_frame as _ef
    set_eval_frame = _ef.set_eval_frame
    _SKIP = _ef._FrameExecStrategy(_ef._FrameAction.SKIP, _ef._FrameAction.DEFAULT)
    _set_code_exec_strategy = _ef.set_code_exec_strategy
    DYNAMO_HOOK = True
except (ImportError, AttributeError):   # pragma: no cover - older torch
    DYNAMO_HOOK = False

    def set_eval_frame(callback):
        return None


def skip_dynamo(fn):
    """Mark ``fn``'s code so that TorchDynamo never traces a frame of it (its callees still
    need ``set_eval_frame(None)``); returns ``fn``."""
    if DYNAMO_HOOK:
        _set_code_exec_strategy(getattr(fn, "__func__", fn).__code__, _SKIP)
    return fn


def to_tp(t, where: str = "tensorplay-torch"):
    """TensorPlay tensor sharing ``t``'s memory (same shape, strides, storage offset)."""
    try:
        if t.is_cpu:
            # torch's and NumPy's own zero-copy views (C calls) are several times cheaper than
            # a DLPack capsule round trip (torch's __dlpack__ is Python); NumPy has no bfloat16
            if t.dtype is _BF16:
                return _bf16_to_tp(t)
            # the trusted path of tensorplay.from_numpy: torch's .numpy() is always a plain
            # ndarray, so the public function's argument check is skipped (the backend still
            # refuses a dtype TensorPlay lacks); the backend is looked up per call (replaceable).
            # A tensor requiring grad (below torch's autograd, or saved for backward): force=True
            # is torch's detach-and-view in one call (cheaper than .detach().numpy(); still a
            # view of the same memory for every dtype in DTYPES)
            a = t.numpy(force=True) if t.requires_grad else t.numpy()
            be = _LOADED.get("cpu")
            if be is not None and be is _CPU_WRAP[0] and a.flags.c_contiguous:
                return _CPU_WRAP[1](a, _CPU)    # what wrap_shared does for it, one frame less
            return _cpu_wrap_shared(a)
        if t.is_cuda and t.numel():
            return _cuda_to_tp(t)
        if t.requires_grad:      # below torch's autograd the inputs still carry the flag
            t = t.detach()
        return _from_dlpack(t)
    except BridgeError:
        raise
    except Exception as e:
        if t.dtype not in DTYPES:
            tp_dtype(t.dtype, where)
        raise BridgeError(_to_tp_refused(t, e, where)) from e


def _to_tp_refused(t, e, where) -> str:
    """Why torch tensor ``t`` could not cross (``e``: what was raised): a functorch-wrapped
    tensor (vmap, ``is_grads_batched=True``, grad transforms) has no memory of its own to
    share; otherwise a missing device plugin is suggested only when it really is missing."""
    head = (f"{where}: a torch tensor ({t.dtype}, {t.device}, shape {tuple(t.shape)}) could "
            f"not be passed to TensorPlay")
    functorch = getattr(torch._C, "_functorch", None)
    legacy = getattr(functorch, "is_legacy_batchedtensor", None)
    if functorch is not None and ((legacy is not None and legacy(t)) or
                                  functorch.is_batchedtensor(t) or
                                  functorch.is_functorch_wrapped_tensor(t) or
                                  torch._C._are_functorch_transforms_active()):
        return (f"{head}: it is a functorch-wrapped tensor (torch.func.vmap, grad transforms, "
                f"or torch.autograd.grad(..., is_grads_batched=True), which runs backward "
                f"under vmap): batched tensors have no memory of their own to share with "
                f"TensorPlay, so the bridge does not support them (a limit of the bridge). "
                f"Loop over the batch instead (e.g. [torch.autograd.grad(y, x, g, retain_graph=True) for g in grads]).")
    msg = f"{head} (refused on the TensorPlay side: {type(e).__name__}: {e})."
    try:
        ok, why = tp.plugins.device_status(t.device.type)
    except Exception:  # noqa: BLE001 - an unknown device type: say it is not installed
        ok, why = False, None
    if not ok:
        msg += (f" TensorPlay cannot use device {t.device.type!r}: "
                f"{why or f'is its plugin (tensorplay-{t.device.type}) installed?'}")
    return msg


# the cpu backend whose wrap_shared is ArrayBackend's (a contiguous array goes straight to its
# wrap) and that wrap, bound: [backend, wrap]; refreshed when the loaded cpu backend changes
_CPU_WRAP: list = [None, None]
_LOADED = _tp_devices.loaded   # device type -> loaded backend (the core's own table)


def _cpu_wrap_shared(a):
    be = _backend("cpu")
    if be is not _CPU_WRAP[0]:
        from tensorplay._kernels.array_backend import ArrayBackend
        if type(be).wrap_shared is ArrayBackend.wrap_shared:
            _CPU_WRAP[:] = [be, be.wrap]
    return be.wrap_shared(a, _CPU)


_CUPY_NDARRAY: list = [None]   # cupy.ndarray once a cuda tensor crossed (to_torch's fast case)
_torch_c_from_dlpack = torch._C._from_dlpack
# [{torch dtype: CuPy dtype}, cupy.ndarray, cupy.cuda.UnownedMemory, cupy.cuda.MemoryPointer],
# set on the first cuda tensor (bound once: each is two attribute lookups per call otherwise)
_CUPY: list = []
_CUDA_DEVICES: dict = {}   # index -> tensorplay.device("cuda", index)


def _cupy_setup():
    import cupy
    be = _backend("cuda")
    _CUPY[:] = [{dt: be.native_dtype(tdt) for dt, tdt in DTYPES.items()}, cupy.ndarray,
                cupy.cuda.UnownedMemory, cupy.cuda.MemoryPointer]
    _CUPY_NDARRAY[0] = cupy.ndarray
    return _CUPY


def _cuda_to_tp(t):
    """A TensorPlay cuda tensor over ``t``'s memory (``t`` not empty), built from its address, sizes and strides.

    Why not DLPack here: on an H200 host ``tensorplay.from_dlpack`` of a 1-element torch tensor
    took 26 µs (torch's ``__dlpack__`` looks up and compares streams in Python, then CuPy imports
    the capsule), a CuPy array over the same address 1.6 µs. No stream handshake is needed: the
    bridged kernels run on torch's current stream (``cuda_eager``), the stream ``t`` was
    produced on. The array keeps ``t`` alive (``UnownedMemory``'s owner). Dtypes TensorPlay
    lacks are refused by ``tp_dtype`` as on cpu."""
    native, ndarray, unowned, pointer = _CUPY or _cupy_setup()
    nd = native.get(t.dtype)
    if nd is None:
        tp_dtype(t.dtype)
    idx = t.get_device()        # (an int: ``t.device.index`` builds a torch.device per call)
    dev = _CUDA_DEVICES.get(idx)
    if dev is None:
        dev = _CUDA_DEVICES[idx] = tp.device("cuda", idx)
    be = _LOADED.get("cuda")    # the lookup tensorplay.backends.get makes, without its frame
    if be is None:
        be = _backend("cuda")
    if t.is_contiguous():
        # the common case (gradients, activations): a row-major CuPy array, wrapped as the
        # backend wraps its own results (no strides to pass, no span to sum, no device guard:
        # nothing is copied); ``nbytes`` is numel * element size, one call
        mem = unowned(t.data_ptr(), t.nbytes, t, idx)
        return be.wrap(ndarray(tuple(t.shape), nd, pointer(mem, 0)), dev)
    item = t.element_size()
    stride = t.stride()
    span = (sum((n - 1) * s for n, s in zip(t.shape, stride)) + 1) * item
    mem = unowned(t.data_ptr(), span, t, idx)
    arr = ndarray(tuple(t.shape), nd, pointer(mem, 0), tuple(s * item for s in stride))
    return be.wrap_shared(arr, dev)


def to_torch(t, where: str = "tensorplay-torch"):
    """torch tensor sharing TensorPlay tensor ``t``'s memory (same shape, strides, storage
    offset, device; dtypes as ``DTYPES``; a tensor requiring grad crosses detached, as
    ``to_tensorplay`` does). Raises ``BridgeError`` naming the side that refused (e.g. a fake
    tensor, which has no data)."""
    a = t.native
    if a.__class__ is _ndarray and t.raw_dtype is not _TP_BF16:
        # a cpu tensor's own array (what t.numpy(force=True) returns, without its checks'
        # frames: a tensor requiring grad crosses detached); NumPy has no bfloat16
        try:
            return _torch_from_numpy(a)
        except Exception:  # noqa: BLE001, S110 - a dtype torch lacks: the path below says so
            pass
    try:
        if t.device.type == "cpu":
            # the public NumPy view (force: a tensor requiring grad crosses detached; a fake
            # tensor, which has no data, raises); NumPy has no bfloat16
            if t.dtype is not _TP_BF16:
                return _torch_from_numpy(t.numpy(force=True))
            return _bf16_to_torch(t)
        if t.requires_grad:
            t = t.detach()
        return _torch_from_dlpack(t)
    except Exception as e:
        raise BridgeError(f"{where}: a TensorPlay result ({t.dtype}, {t.device}, shape "
                          f"{tuple(t.shape)}) could not be passed to torch through DLPack "
                          f"(refused on the torch side: {type(e).__name__}: {e})") from e


def result_to_torch(t, where: str = "tensorplay-torch"):
    """``to_torch`` for what the bridge's own kernels return to torch (they run on torch's
    current CUDA stream, ``_register._on_torch_stream``): a cuda tensor's CuPy array goes by a
    DLPack capsule straight into torch's C import (``same_stream_to_torch``), without
    ``torch.from_dlpack``'s Python stream handshake (``current_stream``,
    ``__dlpack__(stream=)``), which the public ``to_torch`` keeps for arrays made on any
    stream. Anything else as ``to_torch``."""
    a = t.native
    if a.__class__ is _ndarray and t.raw_dtype is not _TP_BF16:
        try:                    # as to_torch's first case, without its frame
            return _torch_from_numpy(a)
        except Exception:  # noqa: BLE001, S110 - a dtype torch lacks: to_torch says so
            pass
    elif a.__class__ is _CUPY_NDARRAY[0] and t.raw_dtype is not _TP_BF16 and a.size:
        try:                    # same_stream_to_torch, without its frame
            return _torch_c_from_dlpack(a.__dlpack__(stream=-1))
        except Exception:  # noqa: BLE001, S110 - the public path (and its errors)
            pass
    return to_torch(t, where)


def same_stream_to_torch(a):
    """torch tensor over device array ``a`` (any object with ``__dlpack__``, e.g. a CuPy
    array) made on torch's current stream: its DLPack capsule, asked for with ``stream=-1``
    (the DLPack protocol's "establish no stream order"), goes straight into torch's C import.

    Why ``-1``: the producer's work was enqueued on the stream torch will read on
    (``_register._on_torch_stream`` makes torch's current stream CuPy's), so no ordering is
    needed; ``stream=None`` would mean the legacy default stream, for which CuPy records an
    event on its current stream and makes the legacy stream wait on it -- work added per call
    that the consumer does not need. CuPy's ``toDlpack()``, which did the same, is deprecated:
    CuPy 14 warns on every call (``cupy.VisibleDeprecationWarning``, shown by default; the
    warning machinery alone costs ~0.6 µs a call). The capsule is the legacy (unversioned) one
    torch imports on every supported version. Raises what ``__dlpack__`` or torch's import
    raise."""
    return _torch_c_from_dlpack(a.__dlpack__(stream=-1))


def to_tensorplay(t):
    """TensorPlay tensor sharing torch tensor ``t``'s memory (same shape, strides, storage
    offset, device; dtypes as ``DTYPES``; a tensor requiring grad is detached). Raises
    ``BridgeError`` for a dtype TensorPlay lacks or a device without its TensorPlay plugin."""
    return to_tp(t)


def _bf16_to_tp(t):
    import ml_dtypes
    import numpy as np
    return tp.from_numpy(np.from_dlpack(t.view(torch.int16)).view(ml_dtypes.bfloat16))


def _bf16_to_torch(t):
    import numpy as np
    return _torch_from_dlpack(t.numpy(force=True).view(np.int16)).view(_BF16)


def _value_to_tp(v, where):
    """Any non-tensor argument value: lists (of tensors), dtypes, devices; others as they are."""
    if isinstance(v, _Tensor):
        return to_tp(v, where)
    if isinstance(v, (list, tuple)):
        return [_value_to_tp(x, where) for x in v]
    if isinstance(v, torch.dtype):
        return tp_dtype(v, where)
    if isinstance(v, torch.device):
        return tp_device(v)
    return v


def written_returns(op):
    """For an op whose every return is an argument it writes (``Tensor(a!)`` returns: a
    ``Tag.inplace`` op returns its first argument, a ``Tag.out`` op its ``out=`` tensors),
    ``((is keyword-only, position in torch's args or name, default), ...)`` per return; else
    None. The kernels (real and fake) hand torch those argument objects back, as torch's own in-place and out=
    ops return ``self``/``out`` (identity, the version counter, autograd metadata) -- a new torch
    tensor over the same memory would be another object with a counter of its own."""
    sch = op.schema
    if not sch.returns:
        return None
    positional = [a for a in sch.arguments if not a.kwarg_only]
    picks = []
    for r in sch.returns:
        hit = None
        if r.is_write:
            for a in sch.arguments:
                if a.is_write and a.alias == r.alias:
                    hit = ((True, a.name, a.default) if a.kwarg_only else
                           (False, positional.index(a), a.name))
                    break
        if hit is None:
            return None
        picks.append(hit)
    return tuple(picks)


def pick_written(args, kwargs, picks):
    """The torch arguments ``written_returns`` names: one tensor, or a tuple of them."""
    out = []
    for kw, where, other in picks:
        if kw:
            out.append(kwargs.get(where, other))
        else:
            out.append(args[where] if where < len(args) else kwargs[other])
    return out[0] if len(out) == 1 else tuple(out)


def fresh_returns(op) -> tuple:
    """Indices of ``op``'s tensor returns the schema declares no alias for (``Tensor``, not
    ``Tensor(a)``/``Tensor(a!)``): those must not share memory with an input."""
    return tuple(j for j, r in enumerate(op.schema.returns)
                 if r.alias is None and r.type.startswith("Tensor"))


def check_aliasing(op, where, out, a, k, fresh):
    """Raise ``BridgeError`` when an output in ``fresh`` (``fresh_returns``) shares its
    TensorPlay storage with an input (``a``: the TensorPlay arguments in schema order, the
    positional ones at least; ``k``: keyword arguments by name) or with another such output:
    torch takes a custom op's outputs as new memory (``torch.library.custom_op`` refuses an
    alias at call time), so an undeclared alias makes eager and ``torch.compile`` disagree.

    The test is storage identity (the ``Storage`` TensorPlay shares between a tensor and every
    view of it): a kernel that returns an input or a TensorPlay view of one is caught; memory
    wrapped again outside TensorPlay (e.g. a NumPy view of an input wrapped anew) is not."""
    # the common case, nothing shared, first: the outputs' storages against the inputs' (plain
    # loops and identity tests: a comprehension costs a frame per call)
    if out.__class__ is _TPTensor:
        if 0 not in fresh:
            return
        sts = [out.storage_ref]
    elif out.__class__ is tuple or out.__class__ is list:
        sts = []
        j = 0
        for o in out:
            if j in fresh and o.__class__ is _TPTensor:
                st = o.storage_ref
                if st in sts:                   # two outputs share memory
                    _find_alias(op, where, out, a, k, fresh)
                sts.append(st)
            j += 1
        if not sts:
            return
    else:
        return
    for v in a:
        if v.__class__ is _TPTensor:
            if v.storage_ref in sts:
                _find_alias(op, where, out, a, k, fresh)
        elif v.__class__ is list or v.__class__ is tuple:
            for x in v:
                if x.__class__ is _TPTensor and x.storage_ref in sts:
                    _find_alias(op, where, out, a, k, fresh)
    if k:
        for v in k.values():
            for x in (v if v.__class__ is list or v.__class__ is tuple else (v,)):
                if x.__class__ is _TPTensor and x.storage_ref in sts:
                    _find_alias(op, where, out, a, k, fresh)


def _find_alias(op, where, out, a, k, fresh):
    """``check_aliasing``'s error, once it knows an output shares memory: which one, and with
    what."""
    ins = {}
    for i, v in enumerate(a):
        if isinstance(v, _TPTensor):
            ins[id(v.storage_ref)] = i
        elif v.__class__ in (list, tuple):
            for x in v:
                if isinstance(x, _TPTensor):
                    ins[id(x.storage_ref)] = i
    if k:
        for name, v in k.items():
            for x in (v if v.__class__ in (list, tuple) else (v,)):
                if isinstance(x, _TPTensor):
                    ins[id(x.storage_ref)] = name
    outs = (out,) if isinstance(out, _TPTensor) else \
        out if isinstance(out, (tuple, list)) else ()
    for j, o in enumerate(outs):
        if j not in fresh or not isinstance(o, _TPTensor):
            continue
        sid = id(o.storage_ref)
        if sid in ins:
            alias_error(op, where, j, ins[sid])
        ins[sid] = ("output", j)


def alias_error(op, where, j, source):
    """``source``: an argument's index in schema order or its name, or ``("output", j)``."""
    if isinstance(source, tuple):
        what = f"output {source[1]}"
    else:
        name = op.schema.arguments[source].name if isinstance(source, int) else source
        what = f"input {name!r}"
    raise BridgeError(
        f"{where}: output {j} aliases {what} (shares its memory), but the schema "
        f"{op.schema.signature_str()} declares no alias: a custom op's outputs must be new "
        f"tensors (torch.library.custom_op refuses this too; eager and torch.compile would "
        f"disagree). Return a copy (e.g. x.clone()) from the kernel, or declare the alias in "
        f"the schema (e.g. \"(Tensor(a) x) -> Tensor(a)\").")


def plan_args(schema):
    """Per-op conversion plan, made once at registration: ``(tensors, others, kw_others)`` --
    the positions of plain ``Tensor`` arguments, the positions of other arguments that may hold
    tensors, dtypes or devices (optional tensors, lists of tensors, ``ScalarType``, ``Device``),
    and the keyword-only arguments of either kind. Everything else passes through untouched."""
    tensors, others, kw = [], [], []
    for i, a in enumerate(a for a in schema.arguments if not a.kwarg_only):
        if a.type == "Tensor":
            tensors.append(i)
        elif _needs_conversion(a):
            others.append(i)
    kw = [a.name for a in schema.arguments if a.kwarg_only and _needs_conversion(a)]
    return tuple(tensors), tuple(others), tuple(kw)


def _needs_conversion(a) -> bool:
    return a.is_tensor_like or "ScalarType" in a.type or "Device" in a.type


def planned_args_to_tp(plan, args, kwargs, where):
    """``args_to_tp`` by ``plan_args``'s plan: only the arguments that can hold torch values are
    looked at (a plain ``Tensor`` argument is converted without a type test)."""
    tensors, others, kw = plan
    a = list(args)
    n = len(a)
    for i in tensors:
        if i < n:
            a[i] = to_tp(a[i], where)
    for i in others:
        if i < n:
            a[i] = _value_to_tp(a[i], where)
    if kwargs and kw:
        kwargs = dict(kwargs)
        for k in kw:
            if k in kwargs:
                kwargs[k] = _value_to_tp(kwargs[k], where)
    return a, kwargs


def args_to_tp(args, kwargs, where):
    """``(args, kwargs)`` of a torch call with every tensor (and dtype, device) made TensorPlay's."""
    a = [to_tp(v, where) if type(v) is _Tensor else _value_to_tp(v, where) for v in args]
    if kwargs:
        kwargs = {k: _value_to_tp(v, where) for k, v in kwargs.items()}
    return a, kwargs


# what each bridged op's kernel must return, by the op's ``where`` text (the prefix of its
# messages, also handed to its autograd kernel): ``return_spec``'s tuple. Filled in by
# ``_register`` when an op is bridged, emptied when its registration is taken out.
RETURNS: dict = {}


def return_spec(op) -> tuple:
    """``(op, n, plain, kinds)`` for ``check_returns``: ``n`` the number of returns, or -1 for
    one return not in a tuple; ``plain`` True when every return is a plain ``Tensor`` (the fast
    case); ``kinds`` per return: ``"T"`` (``Tensor``), ``"T?"``, ``"L"`` (``Tensor[]``),
    ``"L?"`` (``Tensor?[]``) or ``"N"`` (not a tensor)."""
    rets = op.schema.returns
    kinds = tuple({"Tensor": "T", "Tensor?": "T?", "Tensor[]": "L", "Tensor?[]": "L?"}
                  .get(r.type, "N") for r in rets)
    n = -1 if len(rets) == 1 and not op.schema.returns_tuple else len(rets)
    return op, n, all(k == "T" for k in kinds), kinds


def _fits(o, kind, tensor) -> bool:
    if kind == "T":
        return isinstance(o, tensor)
    if kind == "T?":
        return o is None or isinstance(o, tensor)
    if kind in ("L", "L?"):
        return isinstance(o, (list, tuple)) and all(
            isinstance(x, tensor) or (kind == "L?" and x is None) for x in o)
    return not isinstance(o, tensor)


def check_returns(out, where, tensor=_TPTensor) -> None:
    """Raise ``BridgeError`` when ``out`` (what op ``where``'s kernel returned; ``tensor``: the
    tensor class expected, torch's for a fake kernel's converted result) is not what the op's
    schema declares: the number of outputs, and a tensor where it says ``Tensor`` (a list of
    them for ``Tensor[]``; ``Tensor?`` allows None) and none where it says another type.
    torch reads a custom op's results by its schema: too many crashes the interpreter, too few
    or a ``None`` goes through silently, the others fail deep in torch naming nothing. Nothing
    is checked for an op not in ``RETURNS``."""
    spec = RETURNS.get(where)
    if spec is None:
        return
    op, n, _, kinds = spec
    if n == -1:
        if _fits(out, kinds[0], tensor):
            return
    elif n == 0:
        if out is None:
            return
    elif (out.__class__ is tuple or out.__class__ is list) and len(out) == n:
        for o, k in zip(out, kinds):
            if not _fits(o, k, tensor):
                break
        else:
            return
    raise BridgeError(_returns_error(op, where, out, tensor))


def _describe(o, tensor, top=True) -> str:
    if isinstance(o, tensor):
        return "a Tensor" if top else "Tensor"
    if o is None:
        return "None"
    if isinstance(o, (tuple, list)):
        inner = ", ".join(_describe(x, tensor, False) for x in o[:8]) + \
            (", ..." if len(o) > 8 else "")
        if not top:
            return f"{type(o).__name__}[{inner}]"
        return f"a {type(o).__name__} of {len(o)} ({inner})"
    return type(o).__name__ if not top else f"a {type(o).__name__} ({o!r:.40})"


def _returns_error(op, where, out, tensor) -> str:
    rets = op.schema.returns
    types = ", ".join(r.type for r in rets)
    if not rets:
        declared, want = "no output", "None"
    elif len(rets) == 1 and not op.schema.returns_tuple:
        declared, want = f"one output ({types})", f"one {types}"
    else:
        declared, want = f"{len(rets)} outputs ({types})", f"a tuple of {len(rets)} ({types})"
    return (f"{where}: the kernel returned {_describe(out, tensor)}, but the op's schema "
            f"{op.schema.signature_str()} declares {declared} (refused on the TensorPlay side, "
            f"before torch reads the results by that schema: too many outputs crash torch, "
            f"others fail or pass silently). Make the kernel return {want}, or change the "
            f"schema to what it returns.")


def out_to_torch(out, where):
    """A TensorPlay op's result as torch's (``result_to_torch``: from the bridge's kernels):
    a tensor, a tuple/list of them, None, a scalar. For a bridged op (``where`` in
    ``RETURNS``) the result is checked against its schema first (``check_returns``; for the
    common tuple of tensors a length test and one class test per output)."""
    spec = RETURNS.get(where)
    if spec is not None:
        if spec[2] and out.__class__ is tuple and len(out) == spec[1]:
            for o in out:
                if o.__class__ is not _TPTensor:
                    check_returns(out, where)
                    break
        else:
            check_returns(out, where)
    return _out_to_torch(out, where)


def _out_to_torch(out, where):
    if out.__class__ is _TPTensor or isinstance(out, _TPTensor):
        return result_to_torch(out, where)
    if out is None:
        return None
    if isinstance(out, (tuple, list)):
        return type(out)(_out_to_torch(o, where) for o in out) if type(out) in (tuple, list) \
            else tuple(_out_to_torch(o, where) for o in out)
    return out
