"""``opcheck``: check that an operator is registered correctly (SPEC §3, same idea as
``torch.library.opcheck``).

Four checks, each run on *clones* of the sample inputs (the caller's tensors are never touched):

* ``test_schema`` -- inputs not declared mutated keep their values, shape, strides, storage
  offset and version; no output aliases an input's storage or another output's storage; the
  returned value has the structure the schema declares. Declared mutation is trusted.
* ``test_autograd_registration`` -- with every floating, non-mutated input requiring grad, each
  floating output requires grad and a backward pass brings a gradient of the right shape to every
  such input. A missing ``register_autograd`` formula is legal (CompositeImplicitAutograd).
* ``test_faketensor`` -- the fake kernel (run under ``FakeTensorMode`` on fake copies of the
  inputs) reproduces the real outputs' count, shape, dtype, device, strides and storage offset.
* ``test_aot_dispatch_dynamic`` -- delegated to ``tensorplay.testing.aot.check`` (capture +
  execution through ``tensorplay.compile``).

``run_checks`` is the detailed form used by ``tensorplay check``: it also says which checks had
nothing to check (``"skip"``) and how long each took.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["opcheck", "run_checks", "CheckResult", "ALL_TESTS", "DEFAULT_TESTS"]

ALL_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
             "test_aot_dispatch_dynamic")
DEFAULT_TESTS = ALL_TESTS


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
    * ``test_utils`` -- ``"DEFAULT"`` (all four checks), one check name, or an iterable of names
      from ``test_schema``, ``test_autograd_registration``, ``test_faketensor``,
      ``test_aot_dispatch_dynamic``. Unknown names: ``ValueError`` listing the valid ones.
    * ``raise_exception`` -- when True (default) any failure raises
      ``tensorplay.errors.OpCheckError`` (a ``RuntimeError``) whose ``.failures`` is the mapping.
    * ``atol``/``rtol`` -- tolerances for value comparisons (default: per dtype, as
      ``tensorplay.testing.assert_close``), passed to the compile check.

    Returns ``{test_name: message}`` for the failed checks; empty means every check passed. Every
    message names the op and says how to fix the problem. Semantics follow SPEC §3 (the owner's
    documentation) and ``torch.library.opcheck``; where torch checks through dispatcher
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
               rtol=None) -> dict[str, CheckResult]:
    """Like ``opcheck`` but returns a ``CheckResult`` per selected check (pass/fail/skip + time).

    Never raises for a failing op (a kernel that raises is a failed check); raises ``ValueError``
    for unknown ``test_utils`` names and ``TypeError``/``LookupError`` for an ``op`` that is not an
    operator.
    """
    o = _resolve(op)
    tests = _select(test_utils)
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    kwargs = dict(kwargs or {})
    out = {}
    for name in tests:
        t0 = time.perf_counter()
        try:
            _CHECKS[name](o, args, kwargs, atol, rtol)
            res = CheckResult(name, "pass")
        except _Skip as e:
            res = CheckResult(name, "skip", str(e))
        except _Fail as e:
            res = CheckResult(name, "fail", f"opcheck({o.name!r}) {name}: {e}")
        except Exception as e:   # a bug in a check (or in the core) is still reported, never passed
            res = CheckResult(name, "fail", f"opcheck({o.name!r}) {name}: the check itself raised "
                                            f"{type(e).__name__}: {e}")
        res.seconds = time.perf_counter() - t0
        out[name] = res
    return out


# ----------------------------------------------------------------------------------------------
# helpers

def _resolve(op):
    from .._registry import CustomOpDef, lookup
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str):
        try:
            return lookup(op)
        except LookupError as e:
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
    from .._tensor import Tensor
    return Tensor


def _clone_tensor(t, requires_grad=None):
    """A copy of ``t`` with the same shape, dtype, device, strides and storage offset, in a new
    storage, detached. ``requires_grad``: None keeps ``t``'s flag."""
    from ..autograd.grad_mode import no_grad
    if t._data is None:
        raise _Fail("sample inputs must be real tensors, got a fake/meta tensor "
                    f"(shape {tuple(t.shape)}); opcheck makes its own fake copies")
    with no_grad():
        src = t.detach()
        # expanded dimensions (stride 0, size > 1) cannot be written: copy one slice, re-expand
        zero = [d for d, (n, st) in enumerate(zip(src.shape, src.stride())) if st == 0 and n > 1]
        for d in zero:
            src = src.narrow(d, 0, 1)
        if src.is_contiguous() and src.storage_offset() == 0:
            c = src.clone()
        else:
            # keep the exact layout (strides decide what kernels and fake rules see)
            from .. import _factories
            from .._ops.views import make_view
            span = 1 + sum((s - 1) * st for s, st in zip(src.shape, src.stride())) \
                if all(src.shape) else 0
            flat = _factories.empty(src.storage_offset() + span, dtype=src.dtype,
                                    device=src.device)
            c = make_view(flat, src.shape, src.stride(), src.storage_offset())
            c._base = None
            c.copy_(src)
            c._storage.version = 0
        if zero:
            c = c.expand(*t.shape)
    if (t.requires_grad if requires_grad is None else requires_grad) and c.dtype.is_floating_point:
        c.requires_grad_(True)
    return c


def _map_tensors(value, fn):
    """Apply ``fn`` to every tensor in ``value`` (a tensor, or a list/tuple, nested)."""
    T = _T()
    if isinstance(value, T):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, fn) for v in value)
    return value


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
    return t.detach()._backend.to_host(t.detach()._data)


def _same_values(a, b) -> bool:
    import numpy as np
    x, y = np.asarray(_host(a)), np.asarray(_host(b))
    if x.shape != y.shape:
        return False
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
    snap_a, snap_k = _clone_inputs(args, kwargs, requires_grad=False)
    mutated = _mutated(op)
    inputs = _named_tensors(op, a, k)
    before = [(t.shape, t.stride(), t.storage_offset(), t._version) for _, t, _ in inputs]
    out = _call(op, a, k, "on cloned sample inputs")
    problems = []
    # 1. undeclared mutation (declared mutation is trusted: SPEC §3)
    for (label, t, pname), (shape, stride, off, ver), (_, s, _) in zip(
            inputs, before, _named_tensors(op, snap_a, snap_k)):
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
    # 2. aliasing: outputs must be fresh storages (same rule as torch.library.custom_op)
    in_storages = {}
    for label, t, pname in inputs:
        in_storages.setdefault(id(t._storage), (label, pname))
    allowed = _declared_return_aliases(op)
    seen_out = {}
    for label, v in _flat_outputs(out):
        if not isinstance(v, T):
            continue
        hit = in_storages.get(id(v._storage))
        if hit is not None and (label, hit[1]) not in allowed:
            kind = "is" if any(v is t for _, t, _ in inputs) else "is a view of / shares storage with"
            problems.append(
                f"output {label} {kind} input '{hit[0]}' (same storage): outputs of a custom op "
                f"must not alias its inputs. Return a copy instead (e.g. `return x.clone()`)")
        prev = seen_out.get(id(v._storage))
        if prev is not None:
            problems.append(
                f"output {label} shares storage with output {prev} (same tensor or a view of "
                f"it): each output must be a fresh tensor. Return a copy (e.g. `.clone()`)")
        else:
            seen_out[id(v._storage)] = label
    # 3. the returned structure matches the schema
    problems.extend(_check_return_structure(op, out))
    if problems:
        raise _Fail("; ".join(problems))


def _declared_return_aliases(op) -> set:
    """``{(output label, input name)}`` pairs the schema declares as aliases (``Tensor(a!)``
    returns of built-in in-place ops); custom ops never declare them."""
    by_alias = {a.alias: a.name for a in op.schema.arguments if a.alias}
    return {(str(i), by_alias[r.alias]) for i, r in enumerate(op.schema.returns)
            if r.alias and r.alias in by_alias}


# ----------------------------------------------------------------------------------------------
# test_autograd_registration

_GRAPH_HINT = ("kernel breaks the autograd graph (e.g. computes with numpy / .numpy() / detach); "
               "compute with tensorplay ops, or register a formula with register_autograd")


def _test_autograd(op, args, kwargs, atol, rtol):
    from ..autograd import api as _api
    from ..autograd.grad_mode import enable_grad
    from .. import _factories
    T = _T()
    if _mutated(op):
        raise _Skip(f"the op mutates {', '.join(sorted(_mutated(op)))}; ops with mutated "
                    f"arguments have no autograd formula (torch.library rule)")
    a, k = _clone_inputs(args, kwargs, requires_grad=False)
    diff = [(label, t) for label, t, _ in _named_tensors(op, a, k) if t.dtype.is_floating_point]
    if not diff:
        raise _Skip("no floating-point tensor inputs")
    for _, t in diff:
        t.requires_grad_(True)
    with enable_grad():
        try:
            out = op(*a, **k)
        except Exception as e:
            raise _Fail(f"calling the op with inputs that require grad raised "
                        f"{type(e).__name__}: {str(e).rstrip('.')}. (A kernel that calls "
                        f".numpy()/.tolist()/.item() on its inputs or detaches them breaks the "
                        f"autograd graph: compute with tensorplay ops, or register a formula "
                        f"with register_autograd.)") from e
        outs = [(label, v) for label, v in _flat_outputs(out)
                if isinstance(v, T) and v.dtype.is_floating_point]
        if not outs:
            raise _Skip("no floating-point tensor outputs")
        broken = [label for label, v in outs if not v.requires_grad]
        if broken:
            raise _Fail(
                f"output {', '.join(broken)} does not require grad although the inputs "
                f"({', '.join(lbl for lbl, _ in diff)}) do: the {_GRAPH_HINT}")
        roots = [v for _, v in outs]
        seeds = [_factories.ones_like(v) for v in roots]
        try:
            grads = _api.grad(roots, [t for _, t in diff], seeds, allow_unused=True)
        except Exception as e:
            raise _Fail(f"backward raised {type(e).__name__}: {e}. Check the backward formula "
                        f"(register_autograd) or the kernel's differentiable ops") from e
    problems = []
    for (label, t), g in zip(diff, grads):
        if g is None:
            problems.append(
                f"no gradient reached input '{label}' (dropped gradient): the output does not "
                f"depend on it through tensorplay ops, or the backward formula returns None for "
                f"it. Keep the computation on tensorplay ops (no .numpy()/.detach()/.item()), "
                f"or return its gradient from the formula registered with register_autograd")
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


# ----------------------------------------------------------------------------------------------
# test_faketensor

def _test_faketensor(op, args, kwargs, atol, rtol):
    from .. import fake as _fake
    T = _T()
    a, k = _clone_inputs(args, kwargs, requires_grad=False)
    real = _call(op, a, k, "on real sample inputs")
    a2, k2 = _clone_inputs(args, kwargs, requires_grad=False)
    fa = tuple(_map_tensors(v, _fake.from_real) for v in a2)
    fk = {n: _map_tensors(v, _fake.from_real) for n, v in k2.items()}
    hint = _fake_hint(op)
    try:
        with _fake.FakeTensorMode():
            fout = op(*fa, **fk)
    except Exception as e:
        raise _Fail(f"running the fake kernel raised {type(e).__name__}: {e}. {hint}") from e
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
        if f._data is not None:
            problems.append(f"output {label}: the fake kernel returned a real tensor (with data); "
                            f"create outputs with x.new_empty(...)/tensorplay.empty(...) inside it")
        diffs = []
        if tuple(r.shape) != tuple(f.shape):
            diffs.append(f"shape {tuple(r.shape)} vs fake {tuple(f.shape)}")
        if r.dtype is not f.dtype:
            diffs.append(f"dtype {r.dtype} vs fake {f.dtype}")
        if r.device != f.device:
            diffs.append(f"device {r.device} vs fake {f.device}")
        if tuple(r.shape) == tuple(f.shape) and not _same_strides(r, f):
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
    n = op._opname
    if op._fake is None and not op.is_builtin:
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
    try:
        res = aot.check(op, a, k, atol=atol, rtol=rtol)
    except ImportError as e:   # tensorplay.compile (or what it needs) missing: never a pass
        raise _Fail(f"not available: tensorplay.compile is not installed ({e})") from e
    if res is not None:
        raise _Fail(str(res))


_CHECKS = {
    "test_schema": _test_schema,
    "test_autograd_registration": _test_autograd,
    "test_faketensor": _test_faketensor,
    "test_aot_dispatch_dynamic": _test_aot,
}
