"""opcheck's ``test_aot_dispatch_dynamic``: does ``tensorplay.compile`` reproduce eager?

``check(op, args, kwargs)`` compiles ``lambda *a, **k: op(*a, **k)``, runs it and the op eagerly
on separate clones of the sample, and compares outputs, inputs after the call (mutations) and
input gradients. Then, when the op's fake rule is shape-generic, it does the same on a second
input shape (below) and requires that the cached graph is reused (no second capture; unless
int arguments grew with it: ints are constants of the graph, guarded by value).
Same idea as ``torch.library.opcheck``'s ``test_aot_dispatch_dynamic``, which traces the op once
with every dimension symbolic (``dynamic=True``) and runs no other shape; here the op's kernels
run on a second, real shape, so that shape must be one the op accepts.

The second shape (``_grow``): one size ``S`` of the sample grows to ``S + 1`` in *every*
dimension of *every* tensor that has it (the values of the new slices copy the last slice, so
index tensors stay valid), so sizes the op requires to match -- ``(m, k) @ (k, n)``, a weight of
``x``'s last size -- still match. ``S`` is the first of the sample's sizes (the first tensor's
leading size first, then the others in order; 0 and 1 never: the compile guards specialise
them, as torch's do) that no 1-d integer tensor ties to another argument in a way growing
cannot follow:

* offsets: non-decreasing, with ``S + 1`` entries while another argument has a size ``S``
  (``B + 1`` offsets for ``B`` rows), or ``S`` entries while another has a size ``S - 1``;
* lengths: ``S`` non-negative entries summing to another argument's size.

(Offsets ending at ``S`` and lengths summing to ``S`` are no tie: the grown row is just not
referenced. Other integer tensors -- indices -- grow with copied values, which stay valid.)

Python ``int`` arguments equal to ``S`` (or to the element count of a tensor with a dimension
``S``) may be sizes: a size tied to none is preferred; when every size is, the ints grow with it
(to ``S + 1``, or to the grown count: ``reshape(x, [6])`` of a ``(3, 2)`` sample becomes
``[8]`` for ``(4, 2)``).

When every size is tied, or the op's kernel rejects the grown sample (raises), the second-shape
run is not made and the result says why (``check_result(...).skipped``; ``opcheck`` reports the
check as skipped with that reason). A kernel that reads or writes out of bounds on a grown
sample of floating tensors only (a device plugin's out-of-bounds report: a mask that the
sample's size hid) is a failure; where integer tensors or ints were grown with it, it cannot be
told from a sample the op does not accept, and is a skip whose reason quotes the report. When
the op's fake kernel rejects the grown shapes the op is not shape-generic and only the sample's
shape is checked (a note says so).
"""

from __future__ import annotations

from .. import _dispatch, _factories, _pytree, _registry
from .. import compile as _compile
from ..fake import make_fake
from .._tensor import Tensor as _Tensor
from ..autograd import api as _api
from ..autograd.grad_mode import no_grad
from ._layouts import contiguous_strides as _contiguous_strides, empty, strides_like
from .assertions import assert_close
from .opcheck import NONDETERMINISTIC_TAGS, _clone_tensor

__all__ = ["check", "check_result", "AotResult"]


class AotResult:
    """What ``check_result`` found: ``message`` (a failure naming the op, or None), ``skipped``
    (why the second-shape run was not made although the sample passed, or None) and ``note``
    (what else was left unchecked and why, or None)."""

    __slots__ = ("message", "note", "skipped")

    def __init__(self, message=None, skipped=None, note=None):
        self.message = message
        self.skipped = skipped
        self.note = note

    def __repr__(self):
        return f"AotResult(message={self.message!r}, skipped={self.skipped!r}, note={self.note!r})"


def check(op, args, kwargs=None, *, atol=None, rtol=None):
    """Compare compiled and eager execution of ``op`` on one sample; None when they agree.

    Arguments: ``op`` (a ``CustomOpDef`` or ``"ns::op"``), ``args``/``kwargs`` (one sample call;
    never mutated: every run uses clones keeping strides and ``requires_grad``), ``atol``/``rtol``
    (value tolerances; default per dtype as ``tensorplay.testing.assert_close``).

    Returns a failure message naming the op (what differed, and how to fix it), or None.
    Gradients are compared for floating inputs that require grad in the sample and are not
    mutated by the op. Output values are not compared for an op tagged
    ``"nondeterministic_seeded"`` or ``"nondeterministic_bitwise"`` (random or uninitialised
    values; shapes and dtypes still are). The second-shape run (module doc) is not made when no
    size can grow consistently, or when the op's fake kernel or eager kernel rejects the grown
    sample; ``check_result`` says whether it was made and why not.
    """
    return check_result(op, args, kwargs, atol=atol, rtol=rtol).message


def check_result(op, args, kwargs=None, *, atol=None, rtol=None) -> AotResult:
    """``check`` with the reason when the second-shape run was not made (an ``AotResult``)."""
    if not isinstance(op, _registry.CustomOpDef):
        op = _registry.lookup(op)
    kwargs = dict(kwargs or {})
    args = tuple(args)
    name = op.name

    # the op bound as a default value, not read from a closure cell: fn reads no Python value
    # that tensorplay.compile must guard, so no guard function is generated for each check
    # (the guards are tensorplay.compile's own matter, tested with it; this check is the op's)
    def fn(*a, _tensorplay_checked_op=op, **k):
        return _tensorplay_checked_op(*a, **k)

    compiled = _compile(fn)
    compiled._self_contained = True     # (fn reaches nothing outside its arguments and op)
    msg = _compare(op, compiled, args, kwargs, atol, rtol, "the sample")
    if msg is not None:
        return AotResult(f"{name}: {msg}")
    captures = compiled.captures
    plan, why = _growth_size(op, args, kwargs)
    if plan is None:
        if why is None:
            return AotResult(note="no second input shape: the sample has no dimension of size "
                                  "2 or more (sizes 0 and 1 are specialised by the compile "
                                  "guards)")
        return AotResult(skipped=f"the second input shape was not run: {why}")
    size, ints, exact = plan
    gargs, gkwargs = _grow(args, kwargs, size, ints)
    grown = f"size {size} grown to {size + 1} in every tensor that has it" + (
        "" if not ints else " (int arguments with it: " +
        ", ".join(f"{a} -> {b}" for a, b in ints.items()) + ")")
    bad = _fake_rejects(op, gargs, gkwargs)
    if bad is not None:
        return AotResult(note=f"no second input shape: the fake kernel rejects the sample with "
                              f"{grown} ({bad}): the op is not shape-generic in that size")
    msg = _compare(op, compiled, gargs, gkwargs, atol, rtol, "a second input shape",
                   grown=(grown, exact))
    if isinstance(msg, _Rejected):
        return AotResult(skipped=f"the second input shape was not run: the op's kernel rejects "
                                 f"the sample with {grown} ({msg.error})")
    if msg is not None:
        return AotResult(f"{name}: {msg}")
    # (int arguments are constants of the graph, guarded by value: new ints, a new graph)
    if compiled.captures != captures and not ints:
        return AotResult(
            f"{name}: the compiled graph was captured again for a second input shape "
            f"({grown}); a shape-generic op must not make the graph size dependent. Make sure "
            f"its fake kernel does not read sizes into Python values that end up in the graph.")
    return AotResult()


class _Rejected(str):
    """``_compare``'s answer when the eager call on the grown sample raised (not a failure)."""

    error = ""


def _bounds_error(e) -> bool:
    """True when ``e`` (or what it was raised from) is a device plugin's out-of-bounds report
    (tensorplay-triton's ``TritonBoundsError``: ``tensorplay_bounds_error``): a kernel bug, never
    a rejection of the shapes."""
    seen = 0
    while e is not None and seen < 16:
        if getattr(e, "tensorplay_bounds_error", False):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


# ----------------------------------------------------------------------------------------------

def _T():
    return _Tensor


def _clone(t):
    """A detached copy keeping shape, strides, storage offset, dtype, device and requires_grad
    (one implementation, shared with opcheck)."""
    return _clone_tensor(t)


def _map(x, fn):
    return _pytree.tree_map(fn, x, _T())


def _leaves(x, out):
    return _pytree.tree_leaves(x, _T(), out)


def _mutated_names(op):
    return set(op.mutates_args)


def _grad_inputs(op, args, kwargs):
    """Tensors of the call that should receive gradients: floating, requires_grad, not mutated."""
    if not any(t.requires_grad for t in _leaves((args, kwargs), [])):
        return []    # (the common sample: nothing asks for gradients)
    mutated = _mutated_names(op)
    names = [a.name for a in op.schema.arguments]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    out = []
    for n, v in bound.items():
        if n in mutated:
            continue
        for t in _leaves(v, []):
            if t.requires_grad and t.dtype.is_floating_point and t.grad_fn is None:
                out.append(t)
    return out


def _run(op, runner, args, kwargs, weights=None):
    """Run ``runner`` on clones; returns (outputs, inputs after the call, input grads).
    ``weights``: a dict keeping the cotangents made so far by (shape, dtype, device), so that
    the eager and the compiled run of one shape make them once."""
    a = _map(args, _clone)
    k = _map(kwargs, _clone)
    mutated = _mutated_names(op)
    if mutated:    # a mutated input cannot require grad (its values are overwritten)
        names = [x.name for x in op.schema.arguments]
        for n, v in list(zip(names, a)) + list(k.items()):
            if n in mutated:
                for t in _leaves(v, []):
                    if t.requires_grad:
                        t.requires_grad_(False)
    grads_of = _grad_inputs(op, a, k)
    out = runner(*a, **k)
    grads = None
    outs = _leaves(out, [])
    diff = [o for o in outs if o.requires_grad and o.dtype.is_floating_point]
    if grads_of and diff:
        loss = None
        for o in diff:
            term = (o * _weights(o, weights)).sum()
            loss = term if loss is None else loss + term
        gs = _api.grad(loss, grads_of, allow_unused=True)
        grads = list(gs)
    return out, _leaves((a, k), []), grads


def _weights(o, cache=None):
    """Deterministic, non-uniform cotangent of ``o``'s shape (catches wrong gradients)."""
    key = (tuple(o.shape), o.dtype, o.device)
    if cache is not None and key in cache:
        return cache[key]
    w = _make_weights(o)
    if cache is not None:
        cache[key] = w
    return w


def _make_weights(o):
    with no_grad():
        n = o.numel()
        w = _factories.arange(n, dtype=o.dtype, device=o.device).sin() + 1.5
        return w.reshape(list(o.shape)) if o.ndim else w.reshape([])


def _close(a, b, atol, rtol) -> str | None:
    try:
        assert_close(a, b, atol=atol, rtol=rtol)
    except AssertionError as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - e.g. incomparable outputs
        return f"{type(e).__name__}: {e}"
    return None


def _compare(op, compiled, args, kwargs, atol, rtol, which, grown=None) -> str | None:
    """None when compiled and eager agree on the call; else what differed. ``grown``:
    ``(description, exact)`` of a grown sample, on which an eager call that raises is a
    ``_Rejected`` (the op does not accept the invented shapes), except an out-of-bounds report
    when ``exact`` (only floating tensors grew: the sample is one the op must accept)."""
    weights: dict = {}     # the cotangents, shared by the eager and the compiled run
    try:
        e_out, e_in, e_grads = _run(op, op, args, kwargs, weights)
    except Exception as e:  # noqa: BLE001 - any failure is a reported failure
        if grown is not None and (not grown[1] or not _bounds_error(e)):
            r = _Rejected("rejected")
            r.error = f"{type(e).__name__}: {_first_line(e)}"
            return r
        if grown is not None:
            return f"the eager call on {which} ({grown[0]}) raised {type(e).__name__}: {e}"
        return f"the eager call on {which} raised {type(e).__name__}: {e}"
    try:
        c_out, c_in, c_grads = _run(op, compiled, args, kwargs, weights)
    except Exception as e:  # noqa: BLE001 - any failure is a reported failure
        return (f"tensorplay.compile of a function calling the op failed on {which}: "
                f"{type(e).__name__}: {e}")
    eo, co = _leaves(e_out, []), _leaves(c_out, [])
    # random / uninitialised outputs (torch's tags): metadata only, as torch's aot check does
    # with skip_correctness_check
    values = not NONDETERMINISTIC_TAGS.intersection(getattr(op, "tags", ()))
    if len(eo) != len(co):
        return f"compiled call returned {len(co)} tensor(s), eager {len(eo)} on {which}"
    for i, (x, y) in enumerate(zip(eo, co)):
        if tuple(x.shape) != tuple(y.shape) or x.dtype is not y.dtype:
            return (f"output {i} on {which}: compiled gave shape {tuple(y.shape)} {y.dtype}, "
                    f"eager {tuple(x.shape)} {x.dtype}")
        m = _close(y, x, atol, rtol) if values else None
        if m:
            return f"output {i} on {which} differs between compiled and eager: {m}"
    for i, (x, y) in enumerate(zip(e_in, c_in)):
        m = _close(y, x, atol, rtol)
        if m:
            return (f"input tensor {i} after the call on {which} differs between compiled and "
                    f"eager (mutation): {m}")
    if (e_grads is None) != (c_grads is None):
        return (f"gradients on {which}: eager {'has' if e_grads is not None else 'has no'} "
                f"gradients, compiled {'has' if c_grads is not None else 'has no'}")
    if e_grads is not None:
        for i, (x, y) in enumerate(zip(e_grads, c_grads)):
            if (x is None) != (y is None):
                return (f"gradient of input {i} on {which}: eager "
                        f"{'None' if x is None else 'a tensor'}, compiled "
                        f"{'None' if y is None else 'a tensor'}")
            if x is not None:
                m = _close(y, x, atol, rtol)
                if m:
                    return f"gradient of input {i} on {which} differs between compiled and eager: {m}"
    return None


def _first_line(e) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else ""


def _is_int_tensor(t) -> bool:
    dt = t.dtype
    return not dt.is_floating_point and not getattr(dt, "is_complex", False) and \
        dt.name not in ("bool",)


def _named_leaves(op, args, kwargs):
    """``[(argument name, value)]`` of the call (names from the op's schema where known)."""
    names = [a.name for a in op.schema.arguments] if op is not None else []
    out = [(names[i] if i < len(names) else f"#{i}", v) for i, v in enumerate(args)]
    out.extend(kwargs.items())
    return out


def _growth_size(op, args, kwargs):
    """``((S, ints, exact), None)``: the size to grow (module doc), the int arguments that grow
    with it (``{old: new}``) and whether only floating tensors grow (no integer tensor, no int);
    ``(None, reason)`` when every candidate size is tied; ``(None, None)`` when there is no size
    >= 2."""
    tensors = [t for t in _leaves((args, kwargs), []) if t.ndim >= 1]
    cands: list = []
    if tensors:
        cands.append(int(tensors[0].shape[0]))
    for t in tensors:
        cands.extend(int(s) for s in t.shape)
    cands = [c for c in dict.fromkeys(cands) if c >= 2]
    if not cands:
        return None, None
    named = _named_leaves(op, args, kwargs)
    ints = []
    for n, v in named:
        for x in _pytree.tree_leaves(v, int, []):
            if x.__class__ is not bool:
                ints.append((n, int(x)))
    int_tensors = []
    for n, v in named:
        for t in _leaves(v, []):
            if _is_int_tensor(t):
                int_tensors.append((n, t, _int_facts(t)))
    reasons = []
    untied = []
    for size in cands:
        why = _tensor_tie(size, tensors, int_tensors)
        if why is not None:
            reasons.append(f"size {size}: {why}")
            continue
        grow_ints = _int_growth(size, tensors, ints)
        if not grow_ints:
            return (size, {}, not any(size in tuple(t.shape) for _, t, _ in int_tensors)), None
        untied.append((size, grow_ints))
    if untied:      # every untied size is also an int argument: the ints grow with it
        size, grow_ints = untied[0]
        return (size, grow_ints, False), None
    return None, ("no size of the sample can grow without breaking what ties it to the other "
                  "arguments (" + "; ".join(reasons) + ")")


def _int_facts(t):
    """``(values, non-decreasing)`` of a 1-d integer tensor (None for other ranks)."""
    if t.ndim != 1 or t.numel() > 1 << 16:
        return None
    with no_grad():
        vals = [int(v) for v in t.tolist()]
    return vals, all(a <= b for a, b in zip(vals, vals[1:]))


def _tensor_tie(size, tensors, int_tensors):
    """Why a 1-d integer tensor ties ``size`` to another argument (offsets, lengths), or None.

    Growing ``S`` breaks offsets that stay ``S + 1`` entries long while another argument's ``S``
    rows grow, offsets of ``S`` entries that grow while another argument's ``S - 1`` rows do not,
    and lengths of ``S`` entries (a copied entry) whose sum is another argument's size. Offsets
    ending at ``S``, or lengths summing to ``S``, only leave the grown row unreferenced."""
    for n, t, facts in int_tensors:
        if facts is None:
            continue
        vals, ordered = facts
        length = len(vals)
        others = {int(d) for u in tensors if u is not t for d in u.shape}
        if ordered and ((length == size + 1 and size in others) or
                        (length == size and size - 1 in others)):
            return (f"integer tensor argument '{n}' {_show(vals)} looks like offsets "
                    f"(non-decreasing, {length} entries) for another argument's size "
                    f"{length - 1}")
        total = sum(vals)
        if length == size and min(vals, default=0) >= 0 and total in others:
            return (f"integer tensor argument '{n}' {_show(vals)} looks like lengths of "
                    f"{size} segments (sum {total}, another argument's size)")
    return None


def _show(vals) -> str:
    return str(vals) if len(vals) <= 8 else f"[{vals[0]}, {vals[1]}, ..., {vals[-1]}]"


def _int_growth(size, tensors, ints) -> dict:
    """``{old: new}`` for the int arguments that may give ``size``: equal to it, or to the
    element count of a tensor with a dimension ``size`` (grown to that tensor's new count)."""
    counts = {}
    for t in tensors:
        shape = tuple(int(d) for d in t.shape)
        if size in shape:
            n = 1
            g = 1
            for d in shape:
                n *= d
                g *= d + 1 if d == size else d
            counts.setdefault(n, g)
    out = {}
    for _, v in ints:
        if v == size:
            out[v] = size + 1
        elif v in counts:
            out[v] = counts[v]
    return out


def _grow(args, kwargs, size, ints=None):
    """The sample with every dimension of size ``size`` of every tensor grown to ``size + 1``
    (the values of the new slice copy the last one, so index tensors stay valid), in the same
    layout kind as the sample, and every int argument in ``ints`` (``{old: new}``) replaced."""

    def grow(t):
        dims = [d for d, s in enumerate(t.shape) if s == size]
        if not dims:
            return t
        with no_grad():
            src = t.detach()
            shape = tuple(src.shape)
            gshape = tuple(s + 1 if d in dims else s for d, s in enumerate(shape))
            # the same layout kind as the sample (memory order, inner step, padding, storage
            # offset, expanded dimensions): the second run differs from the first by sizes
            # only, so the compile guards see the same contiguity facts
            if not src.storage_offset() and src.stride_tuple == _contiguous_strides(shape):
                # a row-major sample (the common case) grows row-major: the factory's tensor
                zero = ()
                g = _factories.empty(gshape, dtype=src.dtype, device=src.device)
            else:
                stride = strides_like(shape, src.stride(), gshape)
                # written in place (no concatenated copy to lay out again): the sample into
                # the leading slices, then each grown dimension's new slice copies its last
                # one, in the order of ``dims`` (as concatenating along each in turn). A
                # stride-0 (expanded) dimension is one slice expanded: nothing to write along
                # it.
                zero = [d for d in range(len(shape)) if stride[d] == 0 and gshape[d] != 1]
                bshape = tuple(1 if d in zero else n for d, n in enumerate(gshape))
                bstride = tuple(1 if d in zero else st for d, st in enumerate(stride))
                g = empty(bshape, bstride, src.storage_offset(), src.dtype, src.device)
            if g.numel():
                body, part = g, src
                for d in zero:
                    part = part.narrow(d, 0, 1)
                for d in dims:
                    if d not in zero:
                        body = body.narrow(d, 0, size)
                body.copy_(part)
                for d in dims:
                    if d not in zero:
                        g.narrow(d, size, 1).copy_(g.narrow(d, size - 1, 1))
            g.storage_ref.version = 0
            if zero:
                g = g.expand(*gshape)
        if t.requires_grad:
            g.requires_grad_(True)
        return g
    gargs, gkwargs = _map(args, grow), _map(kwargs, grow)
    if ints:
        def sub(v):
            return ints.get(v, v) if v.__class__ is int else v
        gargs = _pytree.tree_map(sub, gargs, int)
        gkwargs = _pytree.tree_map(sub, gkwargs, int)
    return gargs, gkwargs


def _fake_rejects(op, args, kwargs):
    """None when the op's fake kernel accepts the grown inputs (on fake copies); else its error."""
    def fk(t):
        return make_fake(t.shape, t.dtype, t.device, t.stride(), offset=t.storage_offset())
    mst = _dispatch._state
    prev = mst.mode
    mst.mode = "meta"
    try:
        op.entry("meta")(*_map(args, fk), **_map(kwargs, fk))
    except Exception as e:  # noqa: BLE001 - the fake rejects the shapes: not shape-generic
        return f"{type(e).__name__}: {_first_line(e)}"
    finally:
        mst.mode = prev
    return None


def _shape_generic(op, args, kwargs) -> bool:
    """True when the op's fake kernel accepts ``args``/``kwargs`` (on fake copies)."""
    return _fake_rejects(op, args, kwargs) is None
