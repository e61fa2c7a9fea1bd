"""``opcheck``: check that an operator is registered correctly (same idea as
``torch.library.opcheck``).

Six checks, each run on *clones* of the sample inputs (the caller's tensors are never touched).
What each proves is below; none proves second derivatives, other values than the sample's, or
speed.

* ``test_schema`` -- inputs not declared mutated keep their values, shape, strides, storage
  offset and version; no output overlaps the memory (address range) of an input or of another
  output, whichever library made it, except an output the schema declares to be a written
  input (``-> Tensor(a!)`` of a ``Tag.inplace``/``Tag.out`` op), which must be that input
  object itself; the returned value has the structure the schema declares. Declared mutation
  is trusted.
* ``test_autograd_registration`` -- with every floating, non-mutated input requiring grad, each
  floating output requires grad and a backward pass brings a gradient of the right shape to every
  such input, without writing the incoming gradient (grad_output) in place: autograd owns it
  (``op(x).sum().backward()`` hands the backward a broadcast, stride-0 gradient, which refuses
  the write; torch's opcheck fails such an op too). A missing ``register_autograd`` formula is legal (CompositeImplicitAutograd).
  Exempt, as in torch: integer/bool outputs, outputs the registered formula marks
  non-differentiable (``ctx.mark_non_differentiable``), and inputs for which the registered
  formula returns ``None`` (a declaration). An op that is not differentiable on purpose (a
  quantiser, a rounding op) says so with such a formula; without one, a kernel that leaves the
  autograd graph fails (stricter than torch on purpose). As in torch's opcheck, an op without a
  formula whose sample has no input that requires grad is skipped (nothing asks for its
  gradient: an inference-only NumPy op passes). Proves that gradients *arrive*, not that they
  are right.
* ``test_gradients`` -- the gradients are *right*: the vector-Jacobian product of the registered
  formula (or, without one, of autograd through the kernel's tensorplay ops) is compared with
  central finite differences of the op itself, one input at a time, along a random direction
  and contracted with a random output cotangent. In float64 where the kernel runs in float64;
  otherwise (Triton kernels, float32-only kernels) step and tolerance come from the dtype. At
  non-smooth points (relu at 0, max ties, floor/round) it retries with half the step and at a
  nearby point, and skips the input with the reason rather than fail; it fails only on a stable
  disagreement, naming the input, the worst output element, analytical vs numerical values and
  the formula's file and line. An analytical gradient with NaN/inf elements where the op is
  finite fails, saying how many elements and where the first is. Same scope rules as ``test_autograd_registration`` (mutating
  ops, non-differentiable outputs, ``None`` gradients, samples not asking for grad); ops tagged
  nondeterministic are skipped. Not in torch's opcheck (whose docs ask users to run gradcheck).
* ``test_layouts`` -- each sample re-run with the same values in other memory layouts
  (contiguous, transposed, with a storage offset, a padded slice, expanded where the op only
  reads the input) gives the contiguous result (values compared with the per-dtype tolerances;
  mutated inputs compared too). Catches kernels that ignore strides (read ``numel()`` elements
  from the data pointer). An op that raises for a layout (an explicit refusal such as "out must
  be contiguous") is not failed for it. Not in torch's opcheck.
* ``test_faketensor`` -- the fake kernel (run under ``FakeTensorMode`` on fake copies of the
  inputs) reproduces the real outputs' count, shape, dtype, device, strides and storage offset.
* ``test_aot_dispatch_dynamic`` -- delegated to ``tensorplay.testing.aot.check`` (capture +
  execution through ``tensorplay.compile``), on the sample and on a second input shape grown
  consistently (one size grows in every tensor that has it; see ``tensorplay.testing.aot``).
  When no size can grow without breaking what ties it to the other arguments (offsets,
  lengths), or the op's kernel rejects the grown sample, the check is a
  ``"skip"`` whose message says that the sample passed and why the second shape was not run.

``run_checks`` is the detailed form used by ``tensorplay check``: it also says which checks had
nothing to check (``"skip"``) and how long each took.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

# core modules used on every check (testing is imported after the core: no cycle); imported
# here once rather than in the functions, where each relative import costs a package lookup
from .. import _factories, _pytree
from .. import _registry
from .. import fake as _fake
from .._ops.views import make_view
from .._tensor import Tensor as _Tensor
from ..autograd import api as _api
from .._tensor_base import set_view, shared_storage
from ..autograd.grad_mode import enable_grad, no_grad
from . import _layouts
from .assertions import _all_true, assert_close

__all__ = ["opcheck", "run_checks", "CheckResult", "ALL_TESTS", "DEFAULT_TESTS",
           "describe_kernel", "kernel_keys", "checking"]

ALL_TESTS = ("test_schema", "test_autograd_registration", "test_gradients", "test_layouts",
             "test_faketensor", "test_aot_dispatch_dynamic")
DEFAULT_TESTS = ALL_TESTS

#: Operator tags (torch's names) whose outputs' values are not a function of the inputs (random,
#: uninitialised): the checks compare such outputs by metadata (shape, dtype) only.
NONDETERMINISTIC_TAGS = frozenset({"nondeterministic_seeded", "nondeterministic_bitwise"})


@dataclass
class CheckResult:
    """Outcome of one check: ``status`` is ``"pass"``, ``"fail"`` or ``"skip"`` (nothing to check,
    e.g. the autograd check on an op without floating inputs); ``message`` explains a failure or a
    skip; ``seconds`` is the wall time of the check."""

    name: str
    status: str
    message: str = ""
    seconds: float = 0.0


class _Skip(Exception):
    """Raised inside a check: nothing to check for this op/sample (reported as ``skip``)."""


class _Fail(Exception):
    """Raised inside a check with the failure message (without the ``opcheck(...)`` prefix)."""


# ----------------------------------------------------------------------------------------------
# public entry points

def opcheck(op, args, kwargs=None, *, test_utils="DEFAULT", raise_exception=True, atol=None,
            rtol=None) -> dict[str, str]:
    """Run the selected checks of ``op`` on one sample and return the failures.

    Arguments:

    * ``op`` -- a ``CustomOpDef`` (``tensorplay.library.custom_op`` result, ``tensorplay.ops.ns.op``)
      or a qualified name ``"ns::op"``.
    * ``args``/``kwargs`` -- one sample call, ``op(*args, **kwargs)``, with real tensors on any
      device. They are cloned for every check (tensors inside lists too, strides and
      ``requires_grad`` kept); the caller's tensors are never mutated.
    * ``test_utils`` -- ``"DEFAULT"`` (all six checks, described in this module's docstring),
      one check name, or an iterable of names from ``test_schema``,
      ``test_autograd_registration``, ``test_gradients``, ``test_layouts``,
      ``test_faketensor``, ``test_aot_dispatch_dynamic``. Unknown names: ``ValueError`` listing
      the valid ones.
    * ``raise_exception`` -- when True (default) any failure raises
      ``tensorplay.errors.OpCheckError`` (a ``RuntimeError``) whose ``.failures`` is the mapping.
    * ``atol``/``rtol`` -- tolerances for value comparisons (default: per dtype, as
      ``tensorplay.testing.assert_close``), passed to the compile check; for
      ``test_gradients``, the relative tolerance of the directional derivative and an
      absolute one added to it (default: per dtype of the computation).

    What the checks prove: inputs are not modified behind the schema's back and outputs are
    fresh (``test_schema``); gradients reach every floating input with the right shape
    (``test_autograd_registration``) and have the right values, against finite differences
    (``test_gradients``); strides are honoured (``test_layouts``); the fake kernel predicts the
    outputs' metadata (``test_faketensor``); the op compiles (``test_aot_dispatch_dynamic``).
    What they do not: second derivatives, values at inputs other than the sample's, speed. An
    op without a formula whose sample has no input requiring grad skips both autograd checks
    (torch's rule).

    Returns ``{test_name: message}`` for the failed checks; empty means every check passed. Every
    message names the op, the kernel that ran (dispatch key, ``module:function``, plugin) and
    says how to fix the problem. An unknown ``"ns::op"`` raises ``LookupError``; when the plugin
    that provides it failed to load, the message names the plugin, its error and the fix. Semantics follow
    ``torch.library.opcheck``; where torch checks through dispatcher
    internals, these checks observe storages, version counters and fake tensors directly.

    Example::

        >>> opcheck(tensorplay.ops.example.rms_norm, (x, w), raise_exception=False)
        {}
    """
    results = run_checks(op, args, kwargs, test_utils=test_utils, atol=atol, rtol=rtol)
    failures = {k: r.message for k, r in results.items() if r.status == "fail"}
    if failures and raise_exception:
        from ..errors import OpCheckError
        name = _resolve(op).name
        lines = "\n".join(f"  {k}: {v}" for k, v in failures.items())
        raise OpCheckError(f"opcheck({name!r}): {len(failures)} of {len(results)} checks "
                           f"failed:\n{lines}", failures)
    return failures


def run_checks(op, args, kwargs=None, *, test_utils="DEFAULT", atol=None,
               rtol=None, kernel=None) -> dict[str, CheckResult]:
    """Like ``opcheck`` but returns a ``CheckResult`` per selected check (pass/fail/skip + time).

    ``kernel``: which registered kernel to check -- ``None`` (the one a call on the sample's
    device dispatches to), the sample's device type (its device kernel) or ``"default"`` (the
    device-agnostic kernel, even when a device kernel would normally win: the device kernel is
    disabled with ``set_kernel_enabled`` for the duration). ``kernel_keys(op, device)`` lists
    the keys that have a kernel.

    Never raises for a failing op (a kernel that raises is a failed check); raises ``ValueError``
    for unknown ``test_utils`` names or a ``kernel`` that is not registered for the sample's
    device, and ``TypeError``/``LookupError`` for an ``op`` that is not an operator.
    """
    o = _resolve(op)
    tests = _select(test_utils)
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    kwargs = dict(kwargs or {})
    dev = _sample_device(args, kwargs)
    key = kernel if kernel is not None else _dispatched_key(o, dev)
    if kernel is not None and kernel not in kernel_keys(o, dev):
        raise ValueError(f"run_checks({o.name!r}, kernel={kernel!r}): no such kernel for device "
                         f"{dev} (kernels: {', '.join(kernel_keys(o, dev)) or 'none'})")
    where = None    # the kernel's description, made for the first failure only
    out = {}
    with _forcing(o, key, dev), _Checking():
        for name in tests:
            t0 = time.perf_counter()
            try:
                note = _CHECKS[name](o, args, kwargs, atol, rtol)
                # a check may pass with a note (e.g. inputs it could not compare, and why)
                res = CheckResult(name, "pass", note if isinstance(note, str) else "")
            except _Skip as e:
                res = CheckResult(name, "skip", str(e))
            except _Fail as e:
                where = where or f" [kernel {describe_kernel(o, key, dev)}]"
                res = CheckResult(name, "fail", f"opcheck({o.name!r}) {name}{where}: {e}")
            except Exception as e:   # a bug in a check (or the core) is still reported, never passed
                where = where or f" [kernel {describe_kernel(o, key, dev)}]"
                res = CheckResult(name, "fail", f"opcheck({o.name!r}) {name}{where}: the check "
                                                f"itself raised {type(e).__name__}: {e}")
            res.seconds = time.perf_counter() - t0
            out[name] = res
    return out


# ----------------------------------------------------------------------------------------------
# checks in progress (device plugins' own checks of kernels key on it)

_CHECKING = [0]
_CHECKING_LOCK = threading.Lock()


def checking() -> bool:
    """True while ``run_checks`` (``opcheck``, ``tensorplay check``, ``check_plugin``) is running
    in this process, on any thread. Device plugins read it to turn on checks of the kernels
    themselves that are too slow for every call: tensorplay-triton then bounds-checks every
    load/store of kernels run through Triton's interpreter (cpu), so a kernel that reads or
    writes outside its tensors fails the check instead of passing by chance
    (``TENSORPLAY_TRITON_BOUNDS`` overrides: ``1`` always, ``0`` never)."""
    return _CHECKING[0] > 0


class _Checking:
    __slots__ = ()

    def __enter__(self):
        with _CHECKING_LOCK:
            _CHECKING[0] += 1
        return self

    def __exit__(self, *exc):
        with _CHECKING_LOCK:
            _CHECKING[0] -= 1
        return False


# ----------------------------------------------------------------------------------------------
# which kernel runs

def _sample_device(args, kwargs):
    found = []
    _map_tensors((args, tuple(kwargs.values())), lambda t: found.append(t) or t)
    big = [t for t in found if t.ndim > 0] or found
    if big:
        return big[0].device.type
    d = kwargs.get("device")
    if d is not None:
        from .._device import Device
        return Device(d).type
    return "default"


def kernel_keys(op, device_type) -> list:
    """Dispatch keys of ``op`` that have an enabled kernel usable on ``device_type``: the
    device's own kernel (``device_type``), then the device-agnostic one (``"default"``). A
    built-in ``tp::`` op answers ``[device_type]`` (its kernels come from the device plugin)."""
    if op.is_builtin:
        return [device_type]
    keys = []
    if device_type != "default" and op.active_kernel(device_type) is not None:
        keys.append(device_type)
    if op.active_kernel("default") is not None:
        keys.append("default")
    return keys


def _dispatched_key(op, device_type):
    keys = kernel_keys(op, device_type)
    return keys[0] if keys else device_type


def _kernel_fn(op, key):
    stack = op.kernel_stack(key)
    if not stack:
        return None, None
    return stack[-1].fn, stack[-1].owner


def describe_kernel(op, key, device_type=None) -> str:
    """Who runs ``op`` for dispatch key ``key``: ``"cpu: pkg.mod:fn (plugin tensorplay-x)"``,
    ``"default: pkg.mod:fn (user code)"``; a kernel named in entry-point metadata and not
    imported yet is shown by that ``module:function``; built-in ops by their device plugin."""
    if op.is_builtin:
        from ..plugins import manager
        try:
            dist = manager._provider_dist(key)
        except Exception:   # noqa: BLE001 - description only
            dist = "?"
        return f"{key}: built-in (plugin {dist})"
    fn, owner = _kernel_fn(op, key)
    if fn is None:
        return f"{key}: none registered"
    lazy = getattr(fn, "_tensorplay_lazy_target", None)
    if lazy is not None:
        target = str(lazy) if isinstance(lazy, str) else _fn_name(lazy)
    else:
        target = _fn_name(fn)
    who = f"plugin {owner}" if isinstance(owner, str) else \
        (f"plugin {op.owner}" if op.owner and owner is None else "user code")
    return f"{key}: {target} ({who})"


def _fn_name(fn) -> str:
    inner = getattr(fn, "__wrapped__", None) or fn
    mod = getattr(inner, "__module__", None) or "?"
    name = getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or repr(inner)
    return f"{mod}:{name}"


class _forcing:
    """Run the checks on kernel ``key``: for ``"default"``, the device's own kernel is disabled
    (``set_kernel_enabled``) while they run, so the device-agnostic kernel is what dispatch picks."""

    def __init__(self, op, key, device_type):
        self.cm = None
        if (key == "default" and not op.is_builtin and device_type != "default"
                and op.active_kernel(device_type) is not None):
            self.cm = op.set_kernel_enabled(device_type, False)

    def __enter__(self):
        if self.cm is not None:
            self.cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self.cm is not None:
            self.cm.__exit__(*exc)
        return False


# ----------------------------------------------------------------------------------------------
# helpers

def _resolve(op):
    if isinstance(op, _registry.CustomOpDef):
        return op
    if isinstance(op, str):
        try:
            return _registry.lookup(op)
        except LookupError as e:
            # the op call's own rule: when the plugin that provides it failed to load, say which
            # plugin, its error and the fix (its exception chained)
            from ..plugins import manager
            hint = rec = None
            try:
                rec = manager.op_failure(op)
                hint = manager.op_failure_hint(op)
            except Exception:   # noqa: BLE001 - the lookup error below still stands
                pass
            if hint:
                raise LookupError(f"opcheck: {e}; {hint}") from getattr(rec, "error", None)
            raise LookupError(f"opcheck: {e}") from None
    raise TypeError(f"opcheck: expected a CustomOpDef (e.g. a tensorplay.library.custom_op "
                    f"result) or a qualified name 'ns::op', got {op!r}")


def _select(test_utils) -> tuple:
    if isinstance(test_utils, str):
        names = list(DEFAULT_TESTS) if test_utils == "DEFAULT" else [test_utils]
    else:
        try:
            names = list(test_utils)
        except TypeError:
            raise ValueError(f"opcheck: test_utils must be 'DEFAULT', a check name or an iterable "
                             f"of check names, got {test_utils!r}") from None
        expanded = []
        for n in names:
            expanded.extend(DEFAULT_TESTS if n == "DEFAULT" else [n])
        names = expanded
    bad = [n for n in names if n not in ALL_TESTS]
    if bad:
        raise ValueError(f"opcheck: unknown test_utils {', '.join(map(repr, bad))}; valid: "
                         f"{', '.join(ALL_TESTS)} (or 'DEFAULT' for all of them)")
    return tuple(dict.fromkeys(names))


def _T():
    return _Tensor


def _clone_tensor(t, requires_grad=None):
    """A copy of ``t`` with the same shape, dtype, device, strides and storage offset, in a new
    storage, detached. ``requires_grad``: None keeps ``t``'s flag."""
    if t.native is None:
        raise _Fail("sample inputs must be real tensors, got a fake/meta tensor "
                    f"(shape {tuple(t.shape)}); opcheck makes its own fake copies")
    src = t.detach()
    if src.is_contiguous() and not src.storage_offset():
        # the common case, a row-major sample (no expanded dimension: it would not be
        # contiguous): its clone keeps the layout (``src`` is detached: nothing is recorded)
        c = src.clone()
        if (t.requires_grad if requires_grad is None else requires_grad) and \
                c.dtype.is_floating_point:
            c.requires_grad_(True)
        return c
    with no_grad():
        # expanded dimensions (stride 0, size > 1) cannot be written: copy one slice, re-expand
        zero = [d for d, (n, st) in enumerate(zip(src.shape, src.stride())) if st == 0 and n > 1]
        for d in zero:
            src = src.narrow(d, 0, 1)
        if src.is_contiguous() and src.storage_offset() == 0:
            c = src.clone()
        else:
            # keep the exact layout (strides decide what kernels and fake rules see)
            span = 1 + sum((s - 1) * st for s, st in zip(src.shape, src.stride())) \
                if all(src.shape) else 0
            flat = _factories.empty(src.storage_offset() + span, dtype=src.dtype,
                                    device=src.device)
            c = make_view(flat, src.shape, src.stride(), src.storage_offset())
            set_view(c, None, c.view_version)   # owns its storage
            c.copy_(src)
            c.storage_ref.version = 0
        if zero:
            c = c.expand(*t.shape)
    if (t.requires_grad if requires_grad is None else requires_grad) and c.dtype.is_floating_point:
        c.requires_grad_(True)
    return c


def _map_tensors(value, fn):
    """Apply ``fn`` to every tensor in ``value`` (a tensor, or a list/tuple/dict, nested)."""
    return _pytree.tree_map(fn, value, _T())


def _clone_inputs(args, kwargs, requires_grad=None):
    f = (lambda t: _clone_tensor(t, requires_grad))
    return (tuple(_map_tensors(a, f) for a in args),
            {k: _map_tensors(v, f) for k, v in kwargs.items()})


def _named_values(op, args, kwargs) -> list:
    """``[(name, value)]`` for the given arguments, named by the schema (``arg3`` when unknown)."""
    positional = [a.name for a in op.schema.arguments if not a.kwarg_only]
    out = []
    for i, v in enumerate(args):
        out.append((positional[i] if i < len(positional) else f"arg{i}", v))
    out.extend(kwargs.items())
    return out


def _named_tensors(op, args, kwargs) -> list:
    """``[(label, tensor, param_name)]`` for every tensor input (``xs[1]`` for list elements)."""
    T = _T()
    out = []
    for name, v in _named_values(op, args, kwargs):
        if isinstance(v, T):
            out.append((name, v, name))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                if isinstance(x, T):
                    out.append((f"{name}[{i}]", x, name))
    return out


def _mutated(op) -> set:
    names = set(op.mutates_args)
    names.update(a.name for a in op.schema.arguments if a.is_write)
    return names


def _flat_outputs(out) -> list:
    """``[(label, value)]`` of the returned values: ``0``, ``1``, ``1[0]`` for nested lists."""
    if isinstance(out, (tuple, list)):
        res = []
        for i, v in enumerate(out):
            if isinstance(v, (tuple, list)):
                res.extend((f"{i}[{j}]", x) for j, x in enumerate(v))
            else:
                res.append((str(i), v))
        return res
    return [("0", out)]


def _call(op, args, kwargs, what):
    try:
        return op(*args, **kwargs)
    except Exception as e:
        raise _Fail(f"calling the op {what} raised {type(e).__name__}: {e}") from e


def _host(t):
    # (reading the values needs no detached alias: ``native`` and ``backend`` are the tensor's
    # own, with or without history)
    return t.backend.to_host(t.native)


def _same_values(a, b) -> bool:
    import numpy as np
    x, y = np.asarray(_host(a)), np.asarray(_host(b))
    if x.shape != y.shape:
        return False
    if x.dtype == y.dtype and x.dtype.kind in "biuf" and _all_true(x == y):
        return True     # (the common answer, without array_equal's NaN handling)
    if x.dtype.kind in "fc":
        return bool(np.array_equal(x, y, equal_nan=True))
    return bool(np.array_equal(x, y))


def _describe(v) -> str:
    T = _T()
    if isinstance(v, T):
        return f"Tensor{list(v.shape)}"
    if isinstance(v, (list, tuple)):
        return f"{type(v).__name__} of {len(v)}"
    return type(v).__name__


# ----------------------------------------------------------------------------------------------
# test_schema

def _check_return_structure(op, out) -> list:
    """Problems with how ``out`` matches the schema's declared returns."""
    T = _T()
    rets = op.schema.returns
    sig = op.schema.signature_str().split("->", 1)[-1].strip()

    def fits(value, rtype):
        base = rtype.rstrip("?")
        if rtype.endswith("[]"):
            return isinstance(value, (list, tuple)) and all(
                isinstance(x, T) or (x is None and "?" in rtype) for x in value)
        if base == "Tensor":
            return isinstance(value, T) or (value is None and rtype.endswith("?"))
        return True   # scalars: the schema language is not checked against Python values

    if not rets:
        if out is not None:
            return [f"the op returned {_describe(out)} but its schema declares no return (-> ()); "
                    f"return None, or fix the return annotation"]
        return []
    if len(rets) == 1:
        if not fits(out, rets[0].type):
            return [f"the op returned {_describe(out)} but its schema declares -> {sig}; fix the "
                    f"kernel or the return annotation"]
        return []
    if not isinstance(out, (tuple, list)) or len(out) != len(rets):
        return [f"the op returned {_describe(out)} but its schema declares {len(rets)} outputs "
                f"-> {sig}"]
    return [f"output {i} is {_describe(v)} but the schema declares {r.type}"
            for i, (v, r) in enumerate(zip(out, rets)) if not fits(v, r.type)]


def _test_schema(op, args, kwargs, atol, rtol):
    T = _T()
    a, k = _clone_inputs(args, kwargs, requires_grad=False)
    # the op runs on the clones; the caller's tensors, never given to it, are the snapshot of
    # the values before the call
    mutated = _mutated(op)
    inputs = _named_tensors(op, a, k)
    before = [(t.shape, t.stride(), t.storage_offset(), t._version) for _, t, _ in inputs]
    out = _call(op, a, k, "on cloned sample inputs")
    problems = []
    # 1. undeclared mutation (declared mutation is trusted, as in eager calls)
    for (label, t, pname), (shape, stride, off, ver), (_, s, _) in zip(
            inputs, before, _named_tensors(op, args, kwargs)):
        if pname in mutated:
            continue
        what = []
        if tuple(t.shape) != tuple(shape):
            what.append(f"shape {tuple(shape)} -> {tuple(t.shape)}")
        if tuple(t.stride()) != tuple(stride):
            what.append(f"strides {tuple(stride)} -> {tuple(t.stride())}")
        if t.storage_offset() != off:
            what.append(f"storage offset {off} -> {t.storage_offset()}")
        if t._version != ver:
            what.append(f"version counter {ver} -> {t._version} (an in-place op wrote it)")
        if tuple(t.shape) == tuple(s.shape) and not _same_values(t, s):
            what.append("values changed")
        if what:
            problems.append(
                f"input '{label}' was modified although it is not declared mutated "
                f"({'; '.join(what)}). Declare it with mutates_args=({pname!r},) (schema "
                f"Tensor(a!) {pname}), or write to a copy instead")
    # 2. aliasing: outputs must be fresh memory (same rule as torch.library.custom_op). Memory
    # ranges are compared, not storage objects: an output made by another array library over an
    # input's memory (tp.from_numpy(np.ravel(x.numpy()))) has a storage of its own.
    in_ranges = [(label, pname, t, _mem_range(t)) for label, t, pname in inputs]
    allowed = _declared_return_aliases(op)
    seen_out = []
    for label, v in _flat_outputs(out):
        if not isinstance(v, T):
            continue
        rng = _mem_range(v)
        for ilabel, pname, t, irng in in_ranges:
            if (label, pname) in allowed:
                # a declared alias: a view (Tensor(a), built-in view ops) shares the storage; a
                # written one (Tensor(a!): Tag.inplace / Tag.out returns, built-in in-place ops)
                # must be that input itself, not a copy or a view of it (torch's rule)
                if allowed[label, pname] and v is not t:
                    problems.append(
                        f"output {label} should be input '{ilabel}' itself (the schema declares "
                        f"it: {op.schema.signature_str()}) but is another tensor; return the "
                        f"argument the op wrote, not a copy or a view of it")
                    break
                continue
            if _same_storage(v, t) or _overlap(rng, irng):
                kind = "is" if v is t else (
                    "is a view of / shares storage with" if _same_storage(v, t) else
                    "shares memory with (overlapping addresses, e.g. a NumPy/CuPy view of it "
                    "wrapped again)")
                problems.append(
                    f"output {label} {kind} input '{ilabel}': outputs of a custom op must not "
                    f"alias its inputs. Return a copy instead (e.g. `return x.clone()`, or "
                    f"np.array(..., copy=True) before wrapping)")
                break
        for plabel, pv, prng in seen_out:
            if _same_storage(pv, v) or _overlap(rng, prng):
                how = ("shares storage with output {} (same tensor or a view of it)"
                       if _same_storage(pv, v) else
                       "shares memory with output {} (overlapping addresses)").format(plabel)
                problems.append(
                    f"output {label} {how}: each output must be a fresh tensor. Return a copy "
                    f"(e.g. `.clone()`)")
                break
        else:
            seen_out.append((label, v, rng))
    # 3. the returned structure matches the schema
    problems.extend(_check_return_structure(op, out))
    if problems:
        raise _Fail("; ".join(problems))


def _mem_range(t):
    """``(device, first byte, end byte)`` of the memory ``t`` can address; None when it has no
    elements or no memory (fake)."""
    if t.native is None or t.numel() == 0:
        return None
    try:
        ptr = t.data_ptr()
    except Exception:   # noqa: BLE001 - a backend without addresses: storage identity only
        return None
    item = t.element_size()
    lo = hi = 0
    for size, st in zip(t.shape, t.stride()):
        if st >= 0:
            hi += (size - 1) * st
        else:
            lo += (size - 1) * st
    return (str(t.device), ptr + lo * item, ptr + (hi + 1) * item)


def _same_storage(a, b) -> bool:
    """Whether ``a`` and ``b`` share a storage; ``x.data`` (a version counter of its own over
    ``x``'s memory) counts as ``x``'s, as torch's (fake tensors have no addresses to compare)."""
    return shared_storage(a.storage_ref) is shared_storage(b.storage_ref)


def _overlap(a, b) -> bool:
    return a is not None and b is not None and a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def _declared_return_aliases(op) -> dict:
    """``{(output label, input name): written}`` for the pairs the schema declares as aliases:
    ``Tensor(a)`` returns of built-in view ops (``written`` False), ``Tensor(a!)`` returns of
    built-in in-place ops and of ``Tag.inplace``/``Tag.out`` custom ops (the only custom ops
    allowed to return what they write; ``check_tagged_schema`` refuses any other written return
    at definition). A written one must be that input itself."""
    by_alias = {a.alias: a.name for a in op.schema.arguments if a.alias}
    return {(str(i), by_alias[r.alias]): r.is_write for i, r in enumerate(op.schema.returns)
            if r.alias and r.alias in by_alias}


# ----------------------------------------------------------------------------------------------
# test_autograd_registration

_GRAPH_HINT = ("kernel breaks the autograd graph (e.g. computes with numpy / .numpy() / detach); "
               "compute with tensorplay ops, or register a formula with register_autograd")


NO_GRAD_ASKED = ("no sample input requires grad and the op has no formula (register_autograd): "
                 "nothing asks for its gradient (same rule as torch's opcheck); give the "
                 "differentiable inputs of a sample requires_grad=True to check the gradient "
                 "autograd derives from the kernel")


def _any_requires_grad(args, kwargs) -> bool:
    found = []
    _map_tensors((args, tuple(kwargs.values())), lambda t: found.append(t) or t)
    return any(t.requires_grad for t in found)


def _formula_raised(op, e) -> str | None:
    """When ``e`` was raised inside the op's autograd formula (its ``setup_context`` or
    ``backward``, found among the traceback's frames), a clause naming that function; else None
    (the kernel, or the core, raised)."""
    parts = [(f, "setup_context") for f in (op.setup_context_fn,) if f is not None]
    parts += [(f, "backward") for f in (op.backward_fn,) if f is not None]
    codes = {getattr(f, "__code__", None): (f, role) for f, role in parts}
    codes.pop(None, None)
    tb = e.__traceback__
    while tb is not None:
        hit = codes.get(tb.tb_frame.f_code)
        if hit is not None:
            f, role = hit
            return (f"the op's {role} ({getattr(f, '__module__', '?')}:"
                    f"{getattr(f, '__qualname__', f)}) raised {type(e).__name__}: "
                    f"{str(e).rstrip('.')}")
        tb = tb.tb_next
    return None


def _formula_fix(role_clause: str) -> str:
    return (f"{role_clause}, when the op was called with inputs that require grad; the kernel "
            f"itself ran. Fix the formula: setup_context(ctx, inputs, output) receives all of "
            f"the op's inputs as one tuple, in the schema's order (as in torch.library)")


NO_DERIVATIVE_NOTE = ("the op has no derivative: its backward raises torch's \"derivative for "
                      "... is not implemented\" by design (floor_divide's, as torch's)")


def _no_derivative(e) -> bool:
    """Whether a backward's error is the declaration that the op has no derivative (torch's
    ``not_implemented`` formulas raise "derivative for aten::<op> is not implemented"): the
    gradient checks do not apply, as they do not to an op without a formula."""
    msg = str(e)
    return isinstance(e, RuntimeError) and msg.startswith("derivative for ") and \
        "is not implemented" in msg


def _left_graph(e) -> bool:
    """Whether a kernel's error says that it read an input that requires grad outside
    tensorplay (``x.numpy()`` refuses such a tensor and says to detach it)."""
    msg = str(e)
    return "requires grad" in msg and ("numpy" in msg or "detach" in msg)


def _test_autograd(op, args, kwargs, atol, rtol):
    T = _T()
    if _mutated(op):
        raise _Skip(f"the op mutates {', '.join(sorted(_mutated(op)))}; ops with mutated "
                    f"arguments have no autograd formula (torch.library rule)")
    a, k = _clone_inputs(args, kwargs, requires_grad=False)
    diff = [(label, t) for label, t, _ in _named_tensors(op, a, k) if t.dtype.is_floating_point]
    if not diff:
        raise _Skip("no floating-point tensor inputs")
    formula = op.has_autograd

    def plain_run():
        """The plain run (no input requires grad, grad mode off) says which outputs exist: an
        op none of whose outputs is floating has nothing differentiable (integer/bool outputs
        are exempt), so a kernel reading its inputs with .numpy() is correct and the check does
        not apply. Made where its answer decides (a skip, the run with grad failing or giving
        no floating output): a run with grad that gives floating outputs has settled it.
        Raises that skip; returns whether the plain run succeeded."""
        try:
            pa, pk = _clone_inputs(args, kwargs, requires_grad=False)
            with no_grad():
                plain = op(*pa, **pk)
        except Exception:   # noqa: BLE001 - the run with grad reports the failure
            return False
        if not any(isinstance(v, T) and v.dtype.is_floating_point
                   for _, v in _flat_outputs(plain)):
            raise _Skip("no floating-point tensor outputs (from the plain run): nothing is "
                        "differentiable, integer/bool outputs are exempt")
        return True

    if not formula and not _any_requires_grad(args, kwargs):
        plain_run()
        # torch's opcheck: nothing asks for the gradient of an op without a formula (an
        # inference-only NumPy kernel is correct as it is)
        raise _Skip(NO_GRAD_ASKED)
    for _, t in diff:
        t.requires_grad_(True)
    with enable_grad():
        try:
            out = op(*a, **k)
        except Exception as e:
            plain_ok = plain_run()
            if plain_ok and "in-place" in str(e) and "leaf" in str(e):
                # an in-place write into a leaf input that requires grad: not a graph break
                raise _Fail(
                    f"the kernel writes in place into an input that requires grad "
                    f"({', '.join(lbl for lbl, _ in diff)}): it raised {type(e).__name__}: "
                    f"{str(e).rstrip('.')}. A custom op must not modify an input it does not "
                    f"declare: write to a copy (x = x.clone()) inside the kernel, or declare "
                    f"the input in mutates_args") from e
            if plain_ok and _left_graph(e):
                # it runs without grad and fails only because it reads an input that requires
                # grad outside tensorplay (x.numpy() refuses those): it leaves the graph
                raise _Fail(
                    f"the kernel leaves the autograd graph: it runs on the sample without grad, "
                    f"but with inputs that require grad ({', '.join(lbl for lbl, _ in diff)}) "
                    f"it raised {type(e).__name__}: {str(e).rstrip('.')}. A kernel that calls "
                    f".numpy()/.tolist()/.item() on such inputs breaks the autograd graph unless "
                    f"the op has a backward formula. Fix: "
                    f"register one with {op.opname}"
                    f".register_autograd(backward, setup_context=...) and read the inputs "
                    f"with x.detach().numpy() inside the kernel (or compute with tensorplay "
                    f"ops); if the op is not differentiable, mark its outputs "
                    f"non-differentiable (register_autograd with a setup_context calling "
                    f"ctx.mark_non_differentiable(*outputs))") from e
            blame = _formula_raised(op, e)
            if blame is not None:
                raise _Fail(_formula_fix(blame)) from e
            if plain_ok:
                raise _Fail(f"the kernel runs on the sample without grad, but with inputs that "
                            f"require grad ({', '.join(lbl for lbl, _ in diff)}) it raised "
                            f"{type(e).__name__}: {str(e).rstrip('.')}. A custom op's kernel "
                            f"must accept inputs that require grad (it sees them as they are "
                            f"passed)") from e
            # it fails without grad too: the kernel's own error, not an autograd matter
            raise _Fail(f"calling the op on the sample raised {type(e).__name__}: "
                        f"{str(e).rstrip('.')} (with and without grad)") from e
        outs = [(label, v) for label, v in _flat_outputs(out)
                if isinstance(v, T) and v.dtype.is_floating_point]
        if not outs:
            plain_run()
            raise _Skip("no floating-point tensor outputs")
        # A registered formula is the op's declaration: outputs it marks non-differentiable
        # (ctx.mark_non_differentiable: they come back with requires_grad=False) and inputs it
        # returns None for get no gradient, as in torch. Without a formula, an output that does
        # not require grad means the kernel left the graph.
        broken = [label for label, v in outs if not v.requires_grad]
        if broken and not formula:
            raise _Fail(
                f"output {', '.join(broken)} does not require grad although the inputs "
                f"({', '.join(lbl for lbl, _ in diff)}) do: the {_GRAPH_HINT}. If the op is not "
                f"differentiable on purpose, say so with a formula: register_autograd with a "
                f"setup_context that calls ctx.mark_non_differentiable(*outputs), or a backward "
                f"returning None for every input")
        roots = [v for _, v in outs if v.requires_grad]
        if not roots:
            return    # every output declared non-differentiable by the formula
        seeds = [_factories.ones_like(v) for v in roots]
        versions = [sd._version for sd in seeds]
        try:
            grads = _api.grad(roots, [t for _, t in diff], seeds, allow_unused=True)
        except Exception as e:
            if _no_derivative(e):
                raise _Skip(NO_DERIVATIVE_NOTE) from e
            why = str(e).rstrip(". ")
            # the eager safety net's own error (a kernel that left the graph) already says
            # what to do; a formula that raised is named with where it is defined
            if "register_autograd" in why:
                advice = ""
            elif formula:
                from ._gradients import formula_where
                advice = (f". Fix: check the formula registered with register_autograd at "
                          f"{formula_where(op)}")
            else:
                advice = (". The op has no formula: autograd differentiated the tensorplay ops "
                          "of its kernel; check them, or register a formula with "
                          "register_autograd")
            raise _Fail(f"backward raised {type(e).__name__}: {why}{advice}") from e
    problems = _grad_output_writes(op, [lbl for lbl, v in outs if v.requires_grad], seeds,
                                   versions)
    for (label, t), g in zip(diff, grads):
        if g is None:
            if formula:
                continue    # an explicit None from the registered formula: a declaration
            problems.append(
                f"no gradient reached input '{label}' (dropped gradient): the output does not "
                f"depend on it through tensorplay ops. Keep the computation on tensorplay ops "
                f"(no .numpy()/.detach()/.item()), or register a formula with register_autograd "
                f"(returning None for it declares that it gets no gradient)")
        elif tuple(g.shape) != tuple(t.shape):
            problems.append(f"the gradient of input '{label}' has shape {tuple(g.shape)} but the "
                            f"input has shape {tuple(t.shape)}; the backward formula must return "
                            f"one gradient per input with that input's shape (reduce broadcast "
                            f"dimensions with .sum)")
        elif g.device != t.device:
            problems.append(f"the gradient of input '{label}' is on {g.device} but the input is "
                            f"on {t.device}")
    if problems:
        raise _Fail("; ".join(problems))


def _grad_output_writes(op, labels, seeds, versions) -> list:
    """Problems for the incoming gradients (``seeds``, all ones, version counters ``versions``
    before the backward) that the backward wrote in place: a changed version counter (a
    tensorplay in-place op) or changed values (a write through ``.numpy()``, which the counter
    does not see)."""
    import numpy as np
    written = [lbl for lbl, sd, ver in zip(labels, seeds, versions)
               if sd._version != ver or not _all_true(np.asarray(_host(sd)) == 1)]
    if not written:
        return []
    if op.has_autograd:
        from ._gradients import formula_where
        where = f"the formula registered with register_autograd at {formula_where(op)}"
    else:
        where = "the backward of an op the kernel calls"
    return [f"the backward writes its grad_output in place (the incoming gradient of output "
            f"{', '.join(written)} changed during the backward): autograd owns that tensor -- "
            f"{op.opname}(x).sum().backward() hands it a broadcast (stride-0) gradient and the "
            f"write raises, and a gradient shared with another branch of the graph would be "
            f"corrupted. Fix: in {where}, clone before writing (g = g.clone()) or compute out "
            f"of place (g * 2 instead of g.mul_(2))"]


# ----------------------------------------------------------------------------------------------
# test_layouts

def _test_layouts(op, args, kwargs, atol, rtol):
    T = _T()
    mutated = _mutated(op)
    named = _named_tensors(op, args, kwargs)
    if not any(t.numel() > 0 and t.ndim > 0 for _, t, _ in named):
        raise _Skip("no tensor input with elements: every layout is the same")
    tagged = NONDETERMINISTIC_TAGS.intersection(getattr(op, "tags", ()))
    if tagged:
        raise _Skip(f"the op is tagged {', '.join(sorted(tagged))}: its values differ from run "
                    f"to run, so layouts cannot be compared by value")

    named_vals = _named_values(op, args, kwargs)
    names = [n for n, _ in named_vals]
    npos = len(args)

    def laid(kind):
        """The sample with every eligible tensor in layout ``kind`` -> (args, kwargs, labels)."""
        changed = []

        def f(t, label, pname):
            if kind == "expanded" and pname in mutated:
                return _layouts.build(t, _layouts.contiguous_strides(tuple(t.shape))), False
            return _layouts.relayout(t, kind)
        out = {}
        for name, v in named_vals:
            if isinstance(v, T):
                nt, ch = f(v, name, name)
                if ch:
                    changed.append(name)
                out[name] = nt
            elif isinstance(v, (list, tuple)) and any(isinstance(x, T) for x in v):
                items = []
                for i, x in enumerate(v):
                    if isinstance(x, T):
                        nt, ch = f(x, f"{name}[{i}]", name)
                        if ch:
                            changed.append(f"{name}[{i}]")
                        items.append(nt)
                    else:
                        items.append(x)
                out[name] = type(v)(items)
            else:
                out[name] = v
        a = tuple(out[n] for n in names[:npos])
        k = {n: out[n] for n in names[npos:]}
        return a, k, changed

    def contiguous_of(a, k):
        f = (lambda t: _layouts.build(t, _layouts.contiguous_strides(tuple(t.shape))))
        return (tuple(_map_tensors(v, f) for v in a), {n: _map_tensors(v, f) for n, v in k.items()})

    def run(a, k):
        with no_grad():
            out = op(*a, **k)
        if not mutated:
            return out, []
        return out, [t for _, t, p in _named_tensors(op, a, k) if p in mutated]

    problems, refused, ran = [], [], 0
    n_in = sum(t.numel() for _, t, _ in named)
    ref_a, ref_k = contiguous_of(args, kwargs)
    try:
        ref = run(ref_a, ref_k)
    except Exception as e:
        raise _Fail(f"calling the op on contiguous copies of the sample raised "
                    f"{type(e).__name__}: {e}") from e
    for kind in _layouts.LAYOUT_KINDS:
        a, k, changed = laid(kind)
        if not changed:
            continue
        if kind == "expanded":
            # other values (the first row repeated): their own contiguous reference
            ra, rk = contiguous_of(a, k)
            try:
                want = run(ra, rk)
            except Exception:   # noqa: BLE001 - these values are not valid for the op: skip kind
                continue
        else:
            want = ref
        try:
            got = run(a, k)
        except Exception as e:   # noqa: BLE001 - an explicit refusal is not a wrong result
            refused.append(f"{kind} ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
            continue
        ran += 1
        wl, gl = _flat_outputs(want[0]), _flat_outputs(got[0])
        bad = []
        for (label, w), (_, g) in zip(wl, gl):
            if isinstance(w, T) and isinstance(g, T):
                try:
                    _layout_close(g, w, atol, rtol, n_in)
                except AssertionError as e:
                    bad.append(f"output {label}: {str(e).splitlines()[0]}")
        for i, (w, g) in enumerate(zip(want[1], got[1])):
            try:
                assert_close(g, w, atol=atol, rtol=rtol)
            except AssertionError as e:
                bad.append(f"mutated input {i}: {str(e).splitlines()[0]}")
        if bad:
            problems.append(f"with {kind} inputs ({', '.join(changed)}) the result differs from "
                            f"the contiguous one: {'; '.join(bad)}")
    if problems:
        raise _Fail("; ".join(problems) + ". The kernel ignores strides or the storage offset "
                    "(e.g. it reads numel() elements from the data pointer): read inputs "
                    "through their strides (x.numpy() is a strided view), or make them "
                    "contiguous first (x = x.contiguous())")
    if not ran:
        raise _Skip("no other layout applies to these inputs" if not refused else
                    f"the op refuses every other layout: {'; '.join(refused)}")


# ----------------------------------------------------------------------------------------------
# test_faketensor

_EPS = {"float16": 9.77e-4, "bfloat16": 7.82e-3, "float32": 1.19e-7, "float64": 2.22e-16}


def _layout_close(g, w, atol, rtol, n_in):
    """``assert_close(g, w)`` for ``test_layouts``; with the default tolerances, a floating
    result may also differ by the rounding of a sum taken in another order (eps * sqrt(n), n the
    inputs' element count, relative to the largest value): elementwise results follow their
    inputs' layout (torch's rule), so a reduction over one reads them in another order, as in
    torch. A kernel that ignores strides is off by far more."""
    try:
        assert_close(g, w, atol=atol, rtol=rtol)
    except AssertionError:
        eps = _EPS.get(g.dtype.name)
        if atol is not None or rtol is not None or eps is None or not n_in:
            raise
        r = eps * n_in ** 0.5
        big = w.detach().abs().max().item() if w.numel() else 0.0
        assert_close(g, w, rtol=r, atol=r * big)


def _test_faketensor(op, args, kwargs, atol, rtol):
    T = _T()
    a, k = _clone_inputs(args, kwargs, requires_grad=False)
    # the fake inputs copy the clones' metadata, taken before the real run (a second clone
    # would have the same; fakes carry no values), not requiring grad
    fa = tuple(_map_tensors(v, _fake.from_real) for v in a)
    fk = {n: _map_tensors(v, _fake.from_real) for n, v in k.items()}
    real = _call(op, a, k, "on real sample inputs")
    hint = _fake_hint(op)
    try:
        with _fake.FakeTensorMode():
            fout = op(*fa, **fk)
    except Exception as e:
        raise _Fail(f"running the fake kernel raised {type(e).__name__}: "
                    f"{str(e).rstrip().rstrip('.')}. {hint}") from e
    rl, fl = _flat_outputs(real), _flat_outputs(fout)
    if len(rl) != len(fl) or isinstance(real, (tuple, list)) != isinstance(fout, (tuple, list)):
        raise _Fail(f"the real kernel returned {_describe(real)} but the fake kernel returned "
                    f"{_describe(fout)}. {hint}")
    problems = []
    for (label, r), (_, f) in zip(rl, fl):
        if isinstance(r, T) != isinstance(f, T):
            problems.append(f"output {label}: real kernel gave {_describe(r)}, fake kernel gave "
                            f"{_describe(f)}")
            continue
        if not isinstance(r, T):
            continue
        if f.native is not None:
            problems.append(f"output {label}: the fake kernel returned a real tensor (with data); "
                            f"create outputs with x.new_empty(...)/tensorplay.empty(...) inside it")
        diffs = []
        rs, fs = tuple(r.shape), tuple(f.shape)
        # a data-dependent size (get_ctx().new_dynamic_size(), as in torch) stands for whatever
        # the real kernel returns there; the strides then depend on it, and are not compared
        dynamic = any(_fake.is_dynamic_size(n) for n in fs)
        if dynamic and len(fs) == len(rs):
            fs = tuple(b if _fake.is_dynamic_size(a) else a for a, b in zip(fs, rs))
        if rs != fs:
            diffs.append(f"shape {rs} vs fake {tuple(f.shape)}")
        if r.dtype is not f.dtype:
            diffs.append(f"dtype {r.dtype} vs fake {f.dtype}")
        if r.device != f.device:
            diffs.append(f"device {r.device} vs fake {f.device}")
        if not dynamic and rs == fs and not _same_strides(r, f):
            diffs.append(f"strides {tuple(r.stride())} vs fake {tuple(f.stride())}")
        if r.storage_offset() != f.storage_offset():
            diffs.append(f"storage offset {r.storage_offset()} vs fake {f.storage_offset()}")
        if diffs:
            problems.append(f"output {label}: real {'; '.join(diffs)}")
    if problems:
        raise _Fail("the fake kernel does not reproduce the real outputs' metadata: "
                    + "; ".join(problems) + f". {hint}")


def _same_strides(r, f) -> bool:
    """Strides agree on every dimension of size > 1 (a size-0/1 dimension's stride is not
    observable; same rule as torch's ``compare_tensor_meta``). Checked on every device (C09)."""
    if r.numel() == 0:
        return True
    return all(a == b for s, a, b in zip(r.shape, r.stride(), f.stride()) if s > 1)


def _fake_hint(op) -> str:
    n = op.opname
    if op.fake_impl is None and not op.is_builtin:
        return (f"No fake kernel is registered for {op.name}; add one with @{n}.register_fake "
                f"(or tensorplay.library.register_fake({op.name!r})) returning empty tensors with "
                f"the real outputs' shapes, dtypes and strides (e.g. x.new_empty(shape)).")
    return (f"Fix the fake kernel registered with @{n}.register_fake so that it returns tensors "
            f"with the real outputs' shapes, dtypes and strides.")


# ----------------------------------------------------------------------------------------------
# test_aot_dispatch_dynamic

def _test_aot(op, args, kwargs, atol, rtol):
    try:
        from . import aot
    except ImportError as e:
        raise _Fail(f"not available: tensorplay.compile is not installed ({e})") from e
    a, k = _clone_inputs(args, kwargs)
    detailed = getattr(aot, "check_result", None)
    try:
        if detailed is None:
            res, skipped, note = aot.check(op, a, k, atol=atol, rtol=rtol), None, None
        else:
            r = detailed(op, a, k, atol=atol, rtol=rtol)
            res, skipped, note = r.message, r.skipped, r.note
    except ImportError as e:   # tensorplay.compile (or what it needs) missing: never a pass
        raise _Fail(f"not available: tensorplay.compile is not installed ({e})") from e
    if res is not None:
        raise _Fail(str(res))
    if skipped is not None:
        # the sample passed, the dynamic-shape half was not run: a skip with the reason, never
        # a pass
        raise _Skip(f"compiled and eager agree on the sample; {skipped}")
    return note


def _test_gradients(op, args, kwargs, atol, rtol):
    return _gradients.test_gradients(op, args, kwargs, atol, rtol)


_CHECKS = {
    "test_schema": _test_schema,
    "test_autograd_registration": _test_autograd,
    "test_gradients": _test_gradients,
    "test_layouts": _test_layouts,
    "test_faketensor": _test_faketensor,
    "test_aot_dispatch_dynamic": _test_aot,
}


# (imported last: it imports names defined above from this module)
from . import _gradients  # noqa: E402
