"""opcheck's ``test_aot_dispatch_dynamic``: does ``tensorplay.compile`` reproduce eager?

``check(op, args, kwargs)`` compiles ``lambda *a, **k: op(*a, **k)``, runs it and the op eagerly
on separate clones of the sample, and compares outputs, inputs after the call (mutations) and
input gradients. Then, when the op's fake rule is shape-generic, it does the same on a second
input shape -- the leading dimension of every tensor whose leading size equals the first
tensor's grows by one -- and requires that the cached graph is reused (no second capture).
Same idea as ``torch.library.opcheck``'s ``test_aot_dispatch_dynamic``.
"""

from __future__ import annotations

from .. import _pytree
from .. import _factories
from .._tensor import Tensor as _Tensor
from ..autograd import api as _api
from ..autograd.grad_mode import no_grad
from ._layouts import build, strides_like
from ._layouts import empty as _layouts_empty
from .assertions import assert_close
from .opcheck import NONDETERMINISTIC_TAGS, _clone_tensor

__all__ = ["check"]


def check(op, args, kwargs=None, *, atol=None, rtol=None):
    """Compare compiled and eager execution of ``op`` on one sample; None when they agree.

    Arguments: ``op`` (a ``CustomOpDef`` or ``"ns::op"``), ``args``/``kwargs`` (one sample call;
    never mutated: every run uses clones keeping strides and ``requires_grad``), ``atol``/``rtol``
    (value tolerances; default per dtype as ``tensorplay.testing.assert_close``).

    Returns a failure message naming the op (what differed, and how to fix it), or None.
    Gradients are compared for floating inputs that require grad in the sample and are not
    mutated by the op. Output values are not compared for an op tagged
    ``"nondeterministic_seeded"`` or ``"nondeterministic_bitwise"`` (random or uninitialised
    values; shapes and dtypes still are). The second-shape run is skipped when the op's fake kernel or eager kernel
    rejects the grown shapes (the op is not shape-generic).
    """
    from .. import compile as _compile
    from .._registry import CustomOpDef, lookup

    if not isinstance(op, CustomOpDef):
        op = lookup(op)
    kwargs = dict(kwargs or {})
    args = tuple(args)
    name = op.name

    # the op bound as a default value, not read from a closure cell: fn reads no Python value
    # that tensorplay.compile must guard, so no guard function is generated for each check
    # (the guards are tensorplay.compile's own matter, tested with it; this check is the op's)
    def fn(*a, _tensorplay_checked_op=op, **k):
        return _tensorplay_checked_op(*a, **k)

    compiled = _compile(fn)
    msg = _compare(op, compiled, args, kwargs, atol, rtol, "the sample")
    if msg is not None:
        return f"{name}: {msg}"
    captures = compiled.captures
    grown = _grow(args, kwargs)
    if grown is None:
        return None
    gargs, gkwargs = grown
    if not _shape_generic(op, gargs, gkwargs):
        return None
    msg = _compare(op, compiled, gargs, gkwargs, atol, rtol, "a second input shape")
    if msg is not None:
        return f"{name}: {msg}"
    if compiled.captures != captures:
        return (f"{name}: the compiled graph was captured again for a second input shape "
                f"(leading dimension changed); a shape-generic op must not make the graph size "
                f"dependent. Make sure its fake kernel does not read sizes into Python values "
                f"that end up in the graph.")
    return None


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


def _compare(op, compiled, args, kwargs, atol, rtol, which) -> str | None:
    weights: dict = {}     # the cotangents, shared by the eager and the compiled run
    try:
        e_out, e_in, e_grads = _run(op, op, args, kwargs, weights)
    except Exception as e:  # noqa: BLE001 - any failure is a reported failure
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
        m = _close(y.detach(), x.detach(), atol, rtol) if values else None
        if m:
            return f"output {i} on {which} differs between compiled and eager: {m}"
    for i, (x, y) in enumerate(zip(e_in, c_in)):
        m = _close(y.detach(), x.detach(), atol, rtol)
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


def _grow(args, kwargs):
    """The sample with the leading dimension grown by one on every tensor whose leading size
    equals the first tensor's (values: the original ones plus a copy of the first row, so index
    tensors stay valid). None when there is no tensor with a leading dimension."""
    first = next((t for t in _leaves((args, kwargs), []) if t.ndim >= 1), None)
    if first is None:
        return None
    lead = first.shape[0]
    if lead < 2:
        # 0 and 1 are specialised by the compile guards (as torch does): growing them is a new
        # graph by design, so there is no "same graph, other size" run to make
        return None

    def grow(t):
        if t.ndim >= 1 and t.shape[0] == lead:
            with no_grad():
                src = t.detach()
                shape = tuple(src.shape)
                gshape = (lead + 1,) + shape[1:]
                # the same layout kind as the sample (memory order, inner step, padding,
                # storage offset, expanded dimensions): the second run differs from the first by
                # sizes only, so the compile guards see the same contiguity facts
                stride = strides_like(shape, src.stride(), gshape)
                if 0 in stride:   # expanded dimensions: build() re-expands constant values
                    g = build(_factories.cat([src, src[:1]], 0), stride, src.storage_offset())
                else:             # written in place: no intermediate concatenation
                    g = _layouts_empty(gshape, stride, src.storage_offset(), src.dtype,
                                       src.device)
                    g.narrow(0, 0, lead).copy_(src)
                    g.narrow(0, lead, 1).copy_(src.narrow(0, 0, 1))
                    g.storage_ref.version = 0
            if t.requires_grad:
                g.requires_grad_(True)
            return g
        return t
    return _map(args, grow), _map(kwargs, grow)


def _shape_generic(op, args, kwargs) -> bool:
    """True when the op's fake kernel accepts the grown inputs (on fake copies)."""
    from .. import _dispatch
    from ..fake import make_fake

    def fk(t):
        return make_fake(t.shape, t.dtype, t.device, t.stride(), offset=t.storage_offset())
    mst = _dispatch._state
    prev = mst.mode
    mst.mode = "meta"
    try:
        op.entry("meta")(*_map(args, fk), **_map(kwargs, fk))
    except Exception:  # noqa: BLE001 - the fake rejects the shapes: not shape-generic
        return False
    finally:
        mst.mode = prev
    return True
