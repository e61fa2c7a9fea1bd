"""AOT autograd for ``tensorplay.compile``: a captured graph run as ONE autograd node.

Same idea as ``torch.compile``'s AOTAutograd. When a compiled function runs with grad mode on and
an input (or a tensor it reads from a closure, a global, an attribute: a graph constant)
requires grad, the per-op path replays every op through dispatch and each records its own
autograd node (about 20 Python frames per op between the entry, the ctx and the engine). Here
instead, for a graph this module handles (``unsupported`` says which: anything else keeps the
per-op path, unchanged):

* forward: the captured graph replayed under ``no_grad`` by a runner generated as
  ``compile``'s are (``compile._generate``: elementwise chains fused), returning the outputs and
  the forward values the backward reads;
* backward: a second generated runner, the *backward graph*, derived once per graph, set of
  sizes and set of tensors requiring grad (``JointPlan``) by *tracing the autograd formulas*:
  ``joint_backward`` walks the forward graph's nodes in reverse, builds a ``FunctionCtx`` per
  node, runs the op's ``setup_context`` on the node's (captured) inputs and output and its
  backward formula on the node's output gradient, and sums the gradients reaching each value
  as the engine does (torch's rules: ``needs_input_grad``, a built-in node that no gradient
  reached does not run, a user formula runs with zeros, a user formula's gradients are summed
  to its input's shape and cast to its dtype). That function is captured by ``_capture`` like
  a user function, pruned (only the forward values it reads are saved) and generated like any
  graph, so the formulas' ops fuse too;
* the node: one ``FunctionNode`` named ``CompiledFunctionBackward`` (torch's name) with an edge
  per tensor requiring grad (``autograd.function.attach``), so hooks on inputs, ``.grad``
  accumulation, ``backward(inputs=)``, ``autograd.grad``, ``retain_graph`` and the "backward
  through the graph a second time" error work as for any node. Outputs that do not require
  grad eagerly are marked non-differentiable.

Gradients that the generated backward does not give exactly are computed by *recomputing*:
the forward graph replayed op by op with autograd from the node's inputs, then
``autograd.grad`` (``_Vjp``, itself a differentiable ``autograd.Function``): a backward run
with grad mode on (``create_graph=True``: double backward, to any order), and a graph with
several outputs of which some got no gradient (eager skips the formulas that only those would
reach). torch.compile refuses double backward; this gives eager's second derivatives.
"""

from __future__ import annotations

import threading

from . import _capture, _fusion, _pytree
from ._capture import Value
from ._tensor import Tensor
from ._schema import NO_DEFAULT
from .autograd import grad_mode as _gm
from .autograd.function import (
    Function,
    FunctionCtx,
    FunctionNode,
    _conform,
    attach,
    op_autograd_info,
)

__all__ = ["Joint", "JointPlan", "unsupported"]

NODE_NAME = "CompiledFunctionBackward"
# fuse the elementwise chains of the generated forward / backward (``_fusion``)
FUSE_FWD = True
FUSE_BWD = True
_MAX_PLANS = 16            # (sizes, constants requiring grad) planned per graph


class Unsupported(Exception):
    """The graph (or this call of it) is not handled: the per-op path runs it."""


def unsupported(graph) -> str | None:
    """Why ``graph`` cannot run as one autograd node (None: it can, for calls where something
    requires grad). Decided once per cached graph, on its structure."""
    if not graph.entry_grad or not graph.exit_grad:
        return "the function runs with grad mode off, or turns it off"
    for n in graph.nodes:
        if n.kind != "op":
            return f"the graph calls {n.target} (autograd state changed inside the function)"
        if n.is_barrier:
            return f"the graph mutates a tensor ({n.target})"
        if not n.grad_enabled:
            return f"{n.target} runs with grad mode off"
        if "nondeterministic_seeded" in (getattr(n.op, "tags", ()) or ()):
            return f"the graph calls a random op ({n.target})"
        res = n.result
        if not (res.__class__ is Value or (isinstance(res, (tuple, list)) and
                                           all(r.__class__ is Value for r in res))):
            return f"{n.target} returns a nested or non-tensor structure"
    outs = _pytree.tree_leaves(graph.output, Value)
    if not outs:
        return "the function returns no tensor"
    seen = set()
    shared = {id(v.fake.storage_ref) for v in (*graph.inputs, *graph.consts)}
    for v in outs:
        if v.kind != "node":
            return "an output is an input or a tensor the function reads"
        if id(v) in seen:
            return "an output is returned twice"
        seen.add(id(v))
        if not v.fake.dtype.is_floating_point:
            return "an output is not floating point"
        sid = id(v.fake.storage_ref)
        if sid in shared:
            return "an output is a view of an input, of a tensor the function reads, or of " \
                   "another output"
        shared.add(sid)
    return None


def _call_values(op, args, kwargs) -> tuple:
    """Every argument of a call in schema order, defaults filled in: what an op's autograd entry
    hands ``setup_context`` as ``inputs``."""
    vals = list(args)
    for a in op.schema.arguments[len(args):]:
        if a.name in kwargs:
            vals.append(kwargs[a.name])
        elif a.default is not NO_DEFAULT:
            vals.append(a.default)
        else:
            break
    return tuple(vals)


def _sub(x, env):
    return _pytree.tree_map(lambda v: env[id(v)], x, Value)


def interpret(graph, env) -> None:
    """Run ``graph``'s nodes op by op through dispatch (autograd records under the current grad
    mode), ``env`` mapping ``id(Value)`` of every input and constant to its tensor; binds every
    node output in ``env``."""
    for n in graph.nodes:
        out = n.op(*_sub(n.args, env), **_sub(n.kwargs, env))
        res = n.result
        if res.__class__ is Value:
            env[id(res)] = out
        else:
            for v, t in zip(res, out):
                env[id(v)] = t


def _outputs(n) -> list:
    r = n.result
    return [r] if r.__class__ is Value else list(r)


class JointPlan:
    """The generated forward and backward of one graph for one set of sizes and of tensors
    requiring grad (``Joint.plan``)."""

    __slots__ = ("bwd", "bwd_checked", "diff_consts", "diff_in", "diff_out", "forward_graph",
                 "fwd", "grad_idx", "graph", "n_out", "n_saved", "nondiff", "spec")

    def __init__(self):
        self.bwd_checked = False


class Joint:
    """The AOT path of one cached graph: ``joint(sig, leaves, entry)`` runs a call."""

    def __init__(self, graph):
        self.graph = graph
        self.plans: dict = {}            # (sig, constants' requires_grad) -> JointPlan | None
        self.lock = threading.Lock()
        self.consts = [c.const for c in graph.consts]
        self.outvals = _pytree.tree_leaves(graph.output, Value)
        self.spec = _pytree.tree_flatten(graph.output, Value, [])[1]

    def __call__(self, sig, leaves, entry):
        consts = self.consts
        if consts:
            crg = tuple([c.needs_grad for c in consts])
            any_rg = True in crg
        else:
            crg = ()
            any_rg = False
        if not any_rg:
            for t in leaves:
                if t.needs_grad:
                    any_rg = True
                    break
            else:
                return entry.run(leaves)
        key = (sig, crg)
        plan = self.plans.get(key, False)
        if plan is False:
            plan = self._plan(key, leaves, crg)
        if plan is None:
            return entry.run(leaves)
        return _run(plan, leaves, consts)

    def _plan(self, key, leaves, crg):
        with self.lock:
            plan = self.plans.get(key, False)
            if plan is not False:
                return plan
            try:
                plan = _make_plan(self, leaves, crg)
            except (Unsupported, Exception):   # noqa: BLE001 - any failure: the per-op path
                plan = None
            if len(self.plans) >= _MAX_PLANS:
                self.plans.clear()
            self.plans[key] = plan
            return plan


def _make_plan(joint, leaves, crg):
    from .compile import _generate
    from .fake import make_fake
    graph = joint.graph
    # which values require grad (as eager's entries decide it) and the differentiable nodes
    rg: set = set()
    diff_in = []                   # indices of the inputs requiring grad
    for i, (v, t) in enumerate(zip(graph.inputs, leaves)):
        if t.needs_grad:
            rg.add(id(v))
            diff_in.append(i)
    diff_consts = []
    for j, (c, r) in enumerate(zip(graph.consts, crg)):
        if r:
            rg.add(id(c))
            diff_consts.append(j)
    dnodes = []
    for n in graph.nodes:
        if not any(id(v) in rg for v in n.inputs()):
            continue
        op = n.op
        if op.backward_fn is None:
            if op.is_builtin:
                continue           # not differentiable: its outputs require no grad
            raise Unsupported(f"{op.name} has no autograd formula")
        dnodes.append(n)
        for o in _outputs(n):
            if o.fake.dtype.is_floating_point:
                rg.add(id(o))
    outvals = joint.outvals
    diff_out = [k for k, v in enumerate(outvals) if id(v) in rg]
    if not diff_out:
        raise Unsupported("no output requires grad")
    # every forward value, real, from one eager (no_grad) run of the graph
    env = {}
    for v, t in zip(graph.inputs, leaves):
        env[id(v)] = t
    for c in graph.consts:
        env[id(c)] = c.const
    prev = _gm._state.enabled
    _gm._state.enabled = False
    try:
        interpret(graph, env)
    finally:
        _gm._state.enabled = prev
    fvals = [*graph.inputs, *graph.consts, *(o for n in graph.nodes for o in _outputs(n))]
    nf = len(fvals)
    grad_leaves = []
    for k in diff_out:
        t = env[id(outvals[k])]
        grad_leaves.append(make_fake(t.shape, t.dtype, t.device))
    # (detached: the capture's inputs require no grad, as the engine's formulas see them)
    real = [env[id(v)].detach() for v in fvals]
    pos = {id(v): i for i, v in enumerate(fvals)}
    out_pos = [pos[id(outvals[k])] for k in diff_out]

    def joint_backward(*cts):
        return _trace(graph, dnodes, rg, cts[:nf], pos, cts[nf:], out_pos,
                      [pos[id(graph.inputs[i])] for i in diff_in] +
                      [pos[id(graph.consts[j])] for j in diff_consts])

    prev = _gm._state.enabled
    _gm._state.enabled = False     # the engine runs formulas with grad mode off
    try:
        bgraph = _capture.capture(joint_backward, lambda cts: (tuple(cts), {}),
                                  real + grad_leaves, name=f"{graph.name}_backward")
    finally:
        _gm._state.enabled = prev
    used = set()
    for n in bgraph.nodes:
        for v in n.inputs():
            used.add(id(v))
    for v in _pytree.tree_leaves(bgraph.output, Value):
        used.add(id(v))
    saved_idx = [i for i in range(nf) if id(bgraph.inputs[i]) in used]
    grad_idx = [k for k in range(len(diff_out)) if id(bgraph.inputs[nf + k]) in used]
    bgraph.inputs = [bgraph.inputs[i] for i in saved_idx] + \
        [bgraph.inputs[nf + k] for k in grad_idx]
    _fusion.plan(bgraph)
    if not FUSE_BWD:
        bgraph.groups = []
    plan = JointPlan()
    plan.graph = bgraph
    plan.forward_graph = graph
    plan.bwd = _generate(bgraph, checked=False)[0]
    if bgraph.custom_ops():
        plan.bwd_checked = _generate(bgraph, checked=True)[0]
    # the forward: the graph's outputs, then the saved values, fused where it can
    fg = _capture.Graph(graph.name)
    fg.inputs, fg.nodes, fg.consts = graph.inputs, graph.nodes, graph.consts
    fg.output = tuple(outvals) + tuple(fvals[i] for i in saved_idx)
    fg.entry_grad = fg.exit_grad = True
    fused = [n.fused for n in graph.nodes]
    try:
        _fusion.plan(fg)
        if not FUSE_FWD:
            fg.groups = []
    finally:
        for n, f in zip(graph.nodes, fused):
            n.fused = f
    plan.fwd = _generate(fg, checked=False)[0]
    plan.n_out = len(outvals)
    plan.n_saved = len(saved_idx)
    plan.grad_idx = grad_idx
    plan.diff_in = diff_in
    plan.diff_consts = diff_consts
    plan.diff_out = diff_out
    plan.nondiff = [k for k in range(len(outvals)) if k not in set(diff_out)]
    plan.spec = joint.spec
    return plan


def _trace(graph, dnodes, rg, fv, pos, gouts, out_pos, want):
    """``joint_backward``'s body, run on capture tensors: ``fv`` the forward values (in ``pos``
    order), ``gouts`` the gradients of the differentiable outputs (at ``out_pos``); returns the
    gradients of the values at ``want`` (None where none reaches)."""
    acc: dict = {}                 # position -> summed gradient
    for p, g in zip(out_pos, gouts):
        acc[p] = g if p not in acc else acc[p] + g
    # values a gradient can reach from the outputs (an edge path): a user formula on such a
    # path runs even when no gradient reached it (with zeros), as the engine runs it
    reach = set(out_pos)
    for n in reversed(dnodes):
        if any(pos[id(o)] in reach for o in _outputs(n)):
            for v in n.inputs():
                if id(v) in rg:
                    reach.add(pos[id(v)])

    def t_of(x):
        return fv[pos[id(x)]]

    for n in reversed(dnodes):
        op = n.op
        outs = _outputs(n)
        grads = tuple(acc.pop(pos[id(o)], None) if id(o) in rg else None for o in outs)
        user = not op.is_builtin
        if all(g is None for g in grads) and not (user and any(pos[id(o)] in reach for o in outs)):
            continue
        info = op_autograd_info(op)
        values = _call_values(op, _sub(n.args, {id(v): t_of(v) for v in n.inputs()}),
                              _sub(n.kwargs, {id(v): t_of(v) for v in n.inputs()}))
        gvals = _call_values(op, n.args, n.kwargs)
        structure, needs, tins = [], [], []
        for x, gx in zip(values, gvals):
            if isinstance(x, Tensor):
                structure.append("t")
                needs.append(id(gx) in rg)
                tins.append(gx)
            elif isinstance(x, (list, tuple)) and x and any(isinstance(y, Tensor) for y in x):
                structure.append(("l", len(x)))
                needs.append(any(isinstance(y, Value) and id(y) in rg for y in gx))
                tins.extend(y if isinstance(y, Value) else None for y in gx)
            else:
                structure.append(None)
                needs.append(False)
        ctx = FunctionCtx()
        ctx._op_name = info.op_name
        ctx.needs_input_grad = tuple(needs)
        out_t = [t_of(o) for o in outs]
        output = out_t[0] if n.result.__class__ is Value else type(n.result)(out_t)
        if info.setup is not None:
            info.setup(ctx, values, output)
        if ctx._non_diff:
            for o, t in zip(outs, out_t):
                if id(t) in ctx._non_diff and id(o) in rg:
                    raise Unsupported(f"{op.name} marks a floating output non-differentiable")
        meta = tuple((t.shape, t.dtype, t.device) for t in out_t)
        node = FunctionNode(info.name, info.backward, ctx, (), structure, meta)
        res = node.apply(grads)
        for i, (v, g) in enumerate(zip(tins, res)):
            if g is None or v is None or id(v) not in rg:
                continue
            if user:
                x = t_of(v)
                if not isinstance(g, Tensor):
                    raise Unsupported(f"{op.name}'s formula returned a non-tensor gradient")
                if g.shape != x.shape or g.dtype is not x.dtype or g.device != x.device:
                    g = _conform(info.name, i, g, (x.shape, x.dtype, x.device))
            p = pos[id(v)]
            acc[p] = g if p not in acc else acc[p] + g
    return tuple(acc.get(p) for p in want)


def _run(plan, leaves, consts):
    """One call on the AOT path: the forward runner under no_grad, one node recorded."""
    st = _gm._state
    st.enabled = False
    try:
        res = plan.fwd(leaves)
    finally:
        st.enabled = True
    n_out = plan.n_out
    outs = res[:n_out]
    diff = [leaves[i] for i in plan.diff_in] + [consts[j] for j in plan.diff_consts]
    ctx = FunctionCtx()
    ctx._op_name = NODE_NAME
    ctx.materialize_grads = False
    ctx.save_for_backward(*res[n_out:], *diff)
    ctx.plan = plan
    ctx.leaves = leaves
    ctx.consts = consts
    ctx.versions = tuple([t.storage_ref.version for t in leaves])
    if plan.nondiff:
        ctx.mark_non_differentiable(*(outs[k] for k in plan.nondiff))
    attach(NODE_NAME, _backward, ctx, diff, outs[0] if n_out == 1 else tuple(outs), Tensor)
    return _pytree.tree_unflatten(plan.spec, outs)


def _backward(ctx, *grads):
    plan = ctx.plan
    saved = ctx.saved_tensors      # (the version check: a saved value written in place raises)
    diff_out = plan.diff_out
    gs = [grads[k] if k < len(grads) else None for k in diff_out]
    if _gm._state.enabled or None in gs:
        return _recompute(ctx, saved[plan.n_saved:], grads)
    args = list(saved[:plan.n_saved])
    args.extend(gs[k] for k in plan.grad_idx)
    if plan.bwd_checked:
        run, plan.bwd_checked = plan.bwd_checked, False
        return tuple(run(args))
    return tuple(plan.bwd(args))


# ---------------------------------------------------------------------------------------------
# recomputing: eager's gradients from the node's inputs (double backward, missing gradients)

def _recompute(ctx, diff, grads):
    plan = ctx.plan
    leaves, consts = ctx.leaves, ctx.consts
    for t, ver in zip(leaves, ctx.versions):
        if t.storage_ref.version != ver:
            raise RuntimeError(
                f"autograd ({NODE_NAME}): an input of the compiled function was modified by an "
                f"inplace operation after the call, and the gradient must be recomputed from "
                f"it (a backward with create_graph=True, or one that reached only some of its "
                f"outputs). Clone it before modifying it.")
    graph = plan.forward_graph
    outs_k = [k for k in plan.diff_out if k < len(grads) and grads[k] is not None]
    vs = [grads[k] for k in outs_k]
    din, dco = plan.diff_in, plan.diff_consts
    outvals = _pytree.tree_leaves(graph.output, Value)

    def forward(*xs):
        env = {}
        for v, t in zip(graph.inputs, leaves):
            env[id(v)] = t
        for c, t in zip(graph.consts, consts):
            env[id(c)] = t
        for x, i in zip(xs, din):
            env[id(graph.inputs[i])] = x
        for x, j in zip(xs[len(din):], dco):
            env[id(graph.consts[j])] = x
        interpret(graph, env)
        return [env[id(outvals[k])] for k in outs_k]

    higher = _gm._state.enabled
    return _Vjp.apply(forward, len(diff), higher, *diff, *vs)


class _Vjp(Function):
    """``J_fn(xs)^T vs`` as a differentiable function of ``xs`` and ``vs``: ``fn`` recomputed
    with autograd from detached copies, ``autograd.grad`` of its outputs; its backward is the
    same construction one order up, so derivatives of any order are eager's."""

    @staticmethod
    def forward(ctx, fn, n_in, higher, *tensors):
        ctx.fn, ctx.n_in = fn, n_in
        ctx.save_for_backward(*tensors)
        with _gm.enable_grad():
            dets = [t.detach().requires_grad_(True) for t in tensors]
            res = _vjp_of(fn, n_in, higher)(*dets)
        return tuple(r.detach() for r in res)

    @staticmethod
    def backward(ctx, *us):
        tensors = ctx.saved_tensors
        higher = _gm._state.enabled
        g = _vjp_of(ctx.fn, ctx.n_in, True)
        return (None, None, None) + _Vjp.apply(g, len(tensors), higher, *tensors, *us)


def _vjp_of(fn, n_in, create_graph):
    """``g(*xs, *vs)``: the gradients of ``fn(*xs)``'s outputs (cotangents ``vs``) with respect
    to ``xs``, each a tensor (zeros where nothing flows)."""
    from .autograd.api import grad as _grad

    def g(*args):
        xs, vs = args[:n_in], args[n_in:]
        with _gm.enable_grad():
            outs = fn(*xs)
            pairs = [(o, v) for o, v in zip(outs, vs) if v is not None and o.requires_grad]
            if pairs:
                gs = _grad([o for o, _ in pairs], list(xs), [v for _, v in pairs],
                           create_graph=create_graph, allow_unused=True)
            else:
                gs = (None,) * len(xs)
        from ._factories import zeros_like
        return tuple(zeros_like(x) if r is None else r for x, r in zip(xs, gs))
    return g
