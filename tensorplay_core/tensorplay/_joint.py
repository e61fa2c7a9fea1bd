"""AOT autograd for ``tensorplay.compile``: a captured graph run as ONE autograd node.

Same idea as ``torch.compile``'s AOTAutograd. When a compiled function runs with grad mode on and
an input (or a tensor it reads from a closure, a global, an attribute: a graph constant)
requires grad, the per-op path replays every op through dispatch and each records its own
autograd node, which the engine then walks node by node. Here instead, for a graph this module
handles (``unsupported`` says which: anything else keeps the per-op path, unchanged), one plan
per graph, set of sizes and set of tensors requiring grad (``JointPlan``, made on the first call
that needs it; a plan that cannot be made leaves that key on the per-op path, never failing a
call):

* forward: the captured graph replayed under ``no_grad`` by a runner generated as
  ``compile``'s are (``compile._generate``; built-in ops called through the backend entry their
  dispatch reaches, chains of ``FUSE_MIN_NODES``+ elementwise ops fused), returning the outputs
  and the forward values the backward reads;
* tracing: ``joint_backward`` walks the forward graph's differentiable nodes in reverse, builds
  a ``FunctionCtx`` per node, runs the op's ``setup_context`` on the node's inputs and output
  and its backward formula on the node's output gradient, and sums the gradients reaching each
  value as the engine does (torch's rules: ``needs_input_grad``, a built-in node that no
  gradient reached does not run, a user formula on a path from an output runs with zeros, a
  user formula's gradients are summed to its input's shape and cast to its dtype). It runs once,
  captured by ``_capture`` like a user function (capture tensors: a formula that reads values
  fails here, and the graph keeps the per-op path);
* backward, ``"replay"`` (the default, ``BACKWARD``): each traced node's formula called on the
  saved values with the ctx its ``setup_context`` made while traced (forward values mapped to
  the saved ones, ``_Step``), as one generated straight-line function (``_replayer``): eager's
  formulas with their fused-kernel fast paths, without the engine's per-node work. Where a
  ``setup_context`` computed a tensor (it is no forward value), ``"graph"``: the captured
  backward graph, pruned (only the forward values it reads are saved) and generated like any
  graph (its chains fused). The graph loses the formulas' fast paths (capture tensors have no
  data), which measured slower (benchmarks/README.md, session 55);
* the node: one ``FunctionNode`` named ``CompiledFunctionBackward`` (torch's name) with an edge
  per tensor requiring grad, so hooks on inputs, ``.grad`` accumulation, ``backward(inputs=)``,
  ``autograd.grad``, ``retain_graph`` and the "backward through the graph a second time" error
  work as for any node. Outputs that do not require grad eagerly are marked non-differentiable.

Custom ops at array level (``ARRAY_COMPOSITES``, cpu float32/float64): a custom op's body
(the forward's call, ``_composite_kernel``) and its formula (the replayed backward's direct
call, ``_array_formula``) traced once per plan (``_trace_array``); where every op of one is
elementwise or a sum/mean over given dims, it runs as one chain of eager's array kernels
(``_chain_of``, ``_array_fn``: eager's bits, no Tensor between ops). Where the body and the
formula trace together (``_array_pair``), the formula's steps that do not read the gradient are
the body's own steps (same op, same arrays), computed once in the forward and saved. Only a
body and formula that compute and read nothing that may change unseen are traced
(``_read_guards``; the globals and closure values they read are checked each call). Anything
else keeps the op's dispatch and the formula's per-op calls.

Gradients that the plan does not give exactly are computed by *recomputing*: the forward graph
replayed op by op with autograd from the node's inputs, then ``autograd.grad`` (``_Vjp``,
itself a differentiable ``autograd.Function``): a backward run with grad mode on
(``create_graph=True``: double backward, to any order), and a graph with several outputs of
which some got no gradient (eager skips the formulas that only those would reach).
torch.compile refuses double backward; this gives eager's derivatives.
"""

from __future__ import annotations

import builtins
import dis
import operator
import threading
import types

from . import _capture, _dispatch, _fusion, _pytree
from ._capture import Value
from ._kernels.array_backend import ArrayBackend
from ._tensor import Tensor
from ._schema import NO_DEFAULT
from ._tensor_base import set_history
from .autograd import grad_mode as _gm
from .autograd.graph import NodeName, edge_of
from .autograd.function import (
    Function,
    FunctionCtx,
    FunctionNode,
    _conform,
    attach,
    op_autograd_info,
)

__all__ = ["Joint", "JointPlan", "unsupported"]

NODE_NAME = NodeName("CompiledFunctionBackward")   # (grad_fn.name() callable, as torch)
_new = object.__new__
# fuse the elementwise chains of the generated forward / backward (``_fusion``) that have at
# least FUSE_MIN_NODES ops: on the cpu plugin a chain of two small ops (bias add + relu,
# neg + div of a loss) cost more fused than op by op (bench_train's step, batch 1 and 64:
# 3.5% and 11% more process time with them fused), and the per-op path then runs them with
# grad mode off anyway (no recording to save)
FUSE_FWD = True
FUSE_BWD = True
FUSE_MIN_NODES = 3
# the forward calls each built-in op's backend entry straight (``_kernels``)
DIRECT = True
# a custom op's body (forward) and autograd formula (replayed backward) traced once per plan to
# array level where every op of it is elementwise or a reduction on cpu float32/float64
# (``_array_chain``): one call of the backend's reference kernels on the native arrays, no Tensor
# between ops; anything else keeps the op's dispatch / the formula's per-op calls
ARRAY_COMPOSITES = True
# and where the body and formula trace together, the formula's steps that do not read the
# gradient (its recomputation of the body's values) run once in the forward, saved
ARRAY_PAIRS = True
# how the backward runs: "replay" (the ops' formulas called straight, on the saved values, with
# the ctx each setup_context made when traced -- their fused-kernel fast paths included) where
# every setup_context saved only forward values, else "graph" (the traced backward graph);
# "graph" forces the graph
BACKWARD = "replay"
_MAX_PLANS = 16            # (sizes, constants requiring grad) planned per graph


class Unsupported(Exception):
    """The graph (or this call of it) is not handled: the per-op path runs it."""


class _CallFailed(Exception):
    """The planning run of the graph raised: the call's own error, which the per-op path then
    raises as eager does (nothing is cached for the key)."""


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
        if sid in shared or v.root is not None or v.fake.view_base is not None:
            # (an output viewing a value made inside: eager's view relation, which an in-place
            # write to the output follows into its base's history, is not one this node has)
            return "an output is a view (of an input, of a tensor the function reads, of " \
                   "another output or of a value made inside)"
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
                 "fwd", "grad_idx", "graph", "n_checked", "n_in", "n_out", "n_saved", "needs",
                 "nondiff", "replay", "spec", "structure")

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
        if _dispatch._state.mode is not None:
            return entry.run(leaves)      # (fake/meta tensors, a dispatch mode: op by op)
        key = (sig, crg)
        plan = self.plans.get(key, False)
        if plan is False:
            if any(t.native is None for t in leaves) or any(c.native is None for c in consts):
                return entry.run(leaves)
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
            except _CallFailed:
                return None          # these values fail eagerly: the per-op path raises it;
                                     # the next call of these sizes plans again
            except Exception:  # noqa: BLE001 - any other failure: the per-op path for the key
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
    except Exception as e:  # noqa: BLE001 - the call's own error (a singular matrix...)
        raise _CallFailed() from e
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

    want = [pos[id(graph.inputs[i])] for i in diff_in] + \
        [pos[id(graph.consts[j])] for j in diff_consts]
    steps: list = []

    def joint_backward(*cts):
        return _trace(graph, dnodes, rg, cts[:nf], pos, cts[nf:], out_pos, want, steps)

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
    replay = BACKWARD == "replay" and all(st is not None for st in steps)
    pairs: dict = {}               # node index -> (kernel, node): _array_pair
    # the saved values whose version the backward checks (eager's "modified by an inplace
    # operation" error): first in the forward's saved values
    n_checked = len(saved_idx)
    if replay:
        # the values the formulas' ctx hold: saved by the forward instead. Those the formulas
        # saved with save_for_backward first: version-checked, as eager checks them; then those
        # a ctx holds as plain attributes, which eager does not check. Nothing else: an input
        # no formula reads (``x * 2``'s x) may be written in place before backward, as eager
        # (graph mode checks every value its graph reads: what it computes from them is no
        # value eager saved at the call)
        if ARRAY_COMPOSITES:
            for st in steps:
                if not st.user:
                    continue
                made = _array_pair(st, env, fvals, graph)
                if made is not None:
                    pairs[made[1].index] = made
                else:
                    st.fast = _array_formula(st, real)
        checked = sorted({i for st in steps for i in st.saved if i >= 0})
        rest = sorted({i for st in steps for i in st.positions()}.difference(checked))
        need = checked + rest
        n_checked = len(checked)
        at = {i: k for k, i in enumerate(need)}
        for st in steps:
            st.bind(at)
        saved_idx = need
    plan = JointPlan()
    plan.graph = bgraph
    plan.forward_graph = graph
    if replay:
        plan.bwd = _replayer(steps, out_pos, want)
    else:
        # the backward graph reads the saved values, then the output gradients it uses
        bgraph.inputs = [bgraph.inputs[i] for i in saved_idx] + \
            [bgraph.inputs[nf + k] for k in grad_idx]
        _fusion.plan(bgraph)
        bgraph.groups = [ch for ch in bgraph.groups
                         if FUSE_BWD and len(ch.nodes) >= FUSE_MIN_NODES]
        plan.bwd = _generate(bgraph, checked=False)[0]
        if bgraph.custom_ops():
            plan.bwd_checked = _generate(bgraph, checked=True)[0]
    plan.replay = replay
    # the forward: the graph's outputs, then the saved values, fused where it can
    fg = _capture.Graph(graph.name)
    fg.inputs, fg.consts = graph.inputs, graph.consts
    fg.nodes = [pairs[n.index][1] if n.index in pairs else n for n in graph.nodes]
    fg.output = tuple(outvals) + tuple(fvals[i] for i in saved_idx)
    fg.entry_grad = fg.exit_grad = True
    fused = [n.fused for n in graph.nodes]
    try:
        _fusion.plan(fg)
        fg.groups = [ch for ch in fg.groups if FUSE_FWD and len(ch.nodes) >= FUSE_MIN_NODES]
    finally:
        for n, f in zip(graph.nodes, fused):
            n.fused = f
    kernels = _kernels(graph, env) if DIRECT else {}
    if ARRAY_COMPOSITES:
        for n in graph.nodes:
            if not n.op.is_builtin:
                k = pairs[n.index][0] if n.index in pairs else _composite_kernel(n, env)
                if k is not None:
                    kernels[n.index] = k
    plan.fwd = _generate(fg, checked=False, kernels=kernels)[0]
    plan.n_out = len(outvals)
    plan.n_saved = len(saved_idx)
    plan.n_checked = n_checked
    plan.n_in = len(graph.inputs)
    plan.grad_idx = grad_idx
    plan.diff_in = diff_in
    plan.diff_consts = diff_consts
    plan.diff_out = diff_out
    plan.nondiff = [k for k in range(len(outvals)) if k not in set(diff_out)]
    plan.spec = joint.spec
    k = len(diff_in) + len(diff_consts)
    plan.structure = ["t"] * k
    plan.needs = (True,) * k
    return plan


def _kernels(graph, env) -> dict:
    """Node index -> the backend entry its op's dispatch reached in the planning run, for the
    built-in ops (the forward runs with grad mode off, on the backend the guards fix, outside
    any dispatch mode: the dispatch key is known); custom ops keep their dispatch (its checks
    of non-tensor arguments)."""
    out = {}
    for n in graph.nodes:
        op = n.op
        if not op.is_builtin:
            continue
        tensors = _dispatch.flat_tensors(_sub(n.args, env), _sub(n.kwargs, env))
        if not tensors:
            continue
        try:
            key = _dispatch.backend_key(tensors)
        except Exception:  # noqa: BLE001 - several devices and the like: dispatch decides
            continue
        k = op.table.get(key)
        if k is not None:
            out[n.index] = k
    return out


# ---------------------------------------------------------------------------------------------
# custom ops at array level: a body or formula traced once per plan, run as one chain

_ARRAY_FLOATS = frozenset(("float32", "float64"))
_ARRAY_REDUCTIONS = frozenset(("sum", "mean"))


def _array_reduction(n) -> bool:
    """``x.sum(dims, keepdim)`` / ``x.mean(...)`` over explicit dims, result in ``x``'s
    dtype: the reference kernel takes the arguments as eager's adapter hands them."""
    if n.op.opname not in _ARRAY_REDUCTIONS or len(n.args) != 3 or \
            n.kwargs not in ({}, {"dtype": None}) or n.result is not n.outputs[0]:
        return False
    x, dims, keepdim = n.args
    return (x.__class__ is Value and keepdim.__class__ is bool and
            dims.__class__ in (list, tuple) and len(dims) > 0 and
            all(d.__class__ is int for d in dims) and n.outputs[0].fake.dtype is x.fake.dtype)


# What a body or formula may read and still be traced once per plan. Tracing runs the Python
# function once, so anything it reads that may change later, and anything it does besides
# computing (a print, a counter, a list append), would be frozen at that one run: such a
# function runs itself on every call, as eager and as torch.compile's opaque custom ops do.
_PURE_BUILTINS = frozenset((
    "abs", "all", "any", "bool", "divmod", "enumerate", "float", "getattr", "hasattr", "int",
    "isinstance", "len", "list", "max", "min", "pow", "range", "reversed", "round", "slice",
    "sum", "tuple", "zip", "ValueError", "TypeError", "RuntimeError", "NotImplementedError"))
_WRITE_OPS = frozenset((
    "STORE_GLOBAL", "STORE_DEREF", "STORE_ATTR", "STORE_SUBSCR", "STORE_SLICE", "STORE_NAME",
    "DELETE_GLOBAL", "DELETE_DEREF", "DELETE_ATTR", "DELETE_SUBSCR", "DELETE_NAME",
    "IMPORT_NAME", "IMPORT_FROM"))
_SCALARS = (int, float, bool, str, complex, type(None))
_MISSING = object()


def _read_guards(fn, guards=None, depth=0):
    """The reads of ``fn`` (a Python function; its nested code and the Python functions it
    calls by name, three deep) that a trace may bake in, as ``[(holder, name, value)]`` -- a
    global or closure cell holding a number, string, None or a function, to be found the same
    object on each later call -- or None when ``fn`` cannot be traced once: it writes a global,
    closure cell, attribute or item, imports, calls a builtin outside ``_PURE_BUILTINS``
    (``print``...), or reads any other object (a list, dict, array, instance: their contents
    may change unseen). tensorplay and math (the modules and their functions) are stable;
    another module is not (``random``, ``numpy.random``, ``time``)."""
    code = getattr(fn, "__code__", None)
    if code is None or depth > 3:
        return None
    guards = [] if guards is None else guards
    glb = fn.__globals__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))

    def stable(v, holder, name):
        if isinstance(v, types.ModuleType):
            # tensorplay's and math's functions compute; another module's may draw random
            # numbers (random, numpy.random), read the clock or do I/O
            return v.__name__.partition(".")[0] in ("tensorplay", "math")
        if isinstance(v, _SCALARS):
            guards.append((holder, name, v))
            return True
        if callable(v) and (getattr(v, "__module__", None) or "").partition(".")[0] in (
                "tensorplay", "math"):
            return True
        if isinstance(v, types.FunctionType):
            guards.append((holder, name, v))
            return _read_guards(v, guards, depth + 1) is not None
        return False

    codes = [code]
    while codes:
        c = codes.pop()
        codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        for ins in dis.get_instructions(c):
            op = ins.opname
            if op in _WRITE_OPS:
                return None
            if op == "LOAD_GLOBAL":
                name = ins.argval
                v = glb.get(name, _MISSING)
                if v is _MISSING:
                    if name not in _PURE_BUILTINS or not hasattr(builtins, name):
                        return None
                elif not stable(v, glb, name):
                    return None
            elif op in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
                cell = cells.get(ins.argval)
                if cell is None:
                    continue             # a cell of fn's own (a local captured by nested code)
                try:
                    v = cell.cell_contents
                except ValueError:
                    return None
                if not stable(v, cell, None):
                    return None
    return guards


def _reads_unchanged(guards):
    """A no-argument test that every read in ``guards`` (``_read_guards``) still finds the
    object the trace saw, or None when there is nothing to test."""
    if not guards:
        return None
    gs = tuple(guards)

    def same():
        for holder, name, v in gs:
            cur = holder.get(name, _MISSING) if name is not None else holder.cell_contents
            if cur is not v:
                return False
        return True
    return same


def _trace_array(fn, leaves, name):
    """``fn(*leaves)`` traced (capture tensors, grad mode off, as the engine runs formulas and
    the forward runs bodies): its graph when every node is an elementwise op or a sum/mean on
    cpu float32/float64 and it reads no tensor from outside; else None -- ``fn`` cannot be
    traced (data-dependent Python, ``.numpy()``/``.item()``...) or holds something else (writes,
    views, matmuls, factories, a grad-mode change): the caller keeps the eager call."""
    if not leaves or any(t.device.type != "cpu" for t in leaves):
        return None
    prev = _gm._state.enabled
    _gm._state.enabled = False
    try:
        g = _capture.capture(fn, lambda ts: (tuple(ts), {}), list(leaves), name=name)
    except Exception:  # noqa: BLE001 - not traceable: the eager call
        return None
    finally:
        _gm._state.enabled = prev
    if g.consts or not g.nodes:
        return None
    for n in g.nodes:
        if n.kind != "op" or n.grad_enabled or n.is_barrier or not n.op.is_builtin or \
                not (_array_reduction(n) or _fusion._fusible(n)) or \
                n.outputs[0].fake.dtype.name not in _ARRAY_FLOATS:
            return None
    return g


def _chain_of(nodes, outs):
    """``(run, inputs)``: ``nodes`` (traced by ``_trace_array``, in order) as one chain whose
    outputs are ``outs`` (values the nodes make): ``run(*tensors)`` is ``compile``'s chain
    runner over the values ``inputs`` (read from outside the nodes, in first-use order) --
    the steps on the native arrays with the cpu backend's reference kernels (eager's kernels,
    so eager's bits; ``_array_fn``), or node by node through dispatch when the runner's own
    conditions say so. None when the backend has no kernel for a step."""
    from .compile import _chain_runner
    from . import _devices
    be = _devices.loaded.get("cpu")
    if be is None:
        return None
    inputs, steps, dtypes = _fusion.steps_of(nodes, tuple)
    produced = {id(n.outputs[0]): j for j, n in enumerate(nodes)}
    expr = _fusion.ElementwiseExpr(len(inputs), tuple(steps),
                                   tuple(produced[id(v)] for v in outs), tuple(dtypes),
                                   nodes[0].outputs[0].fake.device)
    ch = _fusion.FusedChain(0, list(nodes), inputs, list(outs), expr)
    fused = _array_fn(expr, be, [v.fake.dtype for v in inputs])
    if fused is None:
        return None
    # (not the backend's own fuser: the cpu plugin's blocked fuser is for elementwise chains)
    ch._compiled[be] = fused
    return _chain_runner(ch), inputs


def _array_chain(fn, leaves, name):
    """``fn(*leaves)`` as one chain (``_trace_array``, ``_chain_of``): ``(run, take, tmpl,
    kind, parts)`` -- ``run`` over the leaves at ``take``; ``fn``'s result rebuilt from
    ``tmpl`` (per part: (0, k) the chain's output k, (1, i) leaf i itself, (2, None) None) in
    a ``kind`` (tuple, list, or None: one tensor); ``parts`` its values. None: the eager call."""
    g = _trace_array(fn, leaves, name)
    if g is None:
        return None
    produced = {id(n.outputs[0]) for n in g.nodes}
    # fn's result: a tensor or a tuple/list of tensors and Nones; each tensor a step's result
    # or one of fn's arguments (returned as the argument itself, as eager)
    res = g.output
    many = res.__class__ in (tuple, list)
    parts = list(res) if many else [res]
    at_in = {id(v): i for i, v in enumerate(g.inputs)}
    outs, out_k, tmpl = [], {}, []
    for v in parts:
        if v is None:
            tmpl.append((2, None))
        elif v.__class__ is Value and id(v) in produced:
            if id(v) not in out_k:
                out_k[id(v)] = len(outs)
                outs.append(v)
            tmpl.append((0, out_k[id(v)]))
        elif v.__class__ is Value and id(v) in at_in:
            tmpl.append((1, at_in[id(v)]))
        else:
            return None
    if not outs:
        return None
    made = _chain_of(g.nodes, outs)
    if made is None:
        return None
    run, inputs = made
    return run, tuple(at_in[id(v)] for v in inputs), tmpl, res.__class__ if many else None, parts


# the reference kernels of float arithmetic (``_kernels.binary``) and the array function each
# calls once its operands are one floating dtype, or a floating array and a Python number
# (``Context.prep`` returns them unchanged then)
_ARITH_FN = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}
_BINARY_MODULE = "tensorplay._kernels.binary"


def _array_fn(expr, be, in_dtypes):
    """``run(arrays) -> [arrays]``: ``expr``'s steps with ``be``'s reference kernels (eager's
    kernels: eager's bits) on whole arrays, as one generated straight-line function: the
    kernels' NumPy error state ("ignore", ``_kernels.xp._quiet``) set once around all of them
    instead of by each kernel's wrapper; float32/float64 arithmetic whose operand dtypes the
    trace fixed (``in_dtypes``: the inputs') calls the array function its kernel would reach
    (``xp.add``...) without the kernel's promotion steps. None when a step has no kernel."""
    from . import _codegen
    table = be.kernels()
    ks = [table.get(st.op) for st in expr.steps]
    if any(k is None for k in ks):
        return None
    ns: dict = {}
    quiet = None
    # (the reference kernels' array namespace: an ArrayBackend's declared ``xp``)
    xp = be.xp if isinstance(be, ArrayBackend) else None

    def dtype_of(a):
        return in_dtypes[a[1]] if a[0] == "in" else expr.dtypes[a[1]] if a[0] == "step" \
            else None

    for j, k in enumerate(ks):
        q = getattr(k, "_tp_quiet", None)
        if q is not None:
            quiet = q
            k = k.__wrapped__
        ns[f"k{j}"] = k
        st = expr.steps[j]
        fname = _ARITH_FN.get(st.op)
        if fname is None or xp is None or getattr(k, "__module__", "") != _BINARY_MODULE or \
                len(st.args) != 2:
            continue
        dt = dtype_of(st.args[0])
        if dt is None or dt.name not in _ARRAY_FLOATS or expr.dtypes[j] is not dt:
            continue
        b = st.args[1]
        if dtype_of(b) is dt or (b[0] == "const" and b[1].__class__ in (float, int)):
            ns[f"k{j}"] = getattr(xp, fname)
    lines = ["def run(arrays):"]
    if expr.n_inputs:
        lines.append("    " + "".join(f"a{i}, " for i in range(expr.n_inputs)) + "= arrays")
    body = []
    for j, st in enumerate(expr.steps):
        args = []
        for kind, x in st.args:
            if kind == "in":
                args.append(f"a{x}")
            elif kind == "step":
                args.append(f"t{x}")
            else:
                lit = _codegen.literal(x)
                args.append(lit if lit is not None else _codegen.bind(ns, x, "c"))
        body.append(f"t{j} = k{j}({', '.join(args)})")
    if quiet is not None:
        ns["__set"], ns["__reset"], ns["__state"] = quiet
        lines.append("    token = __set(__state)")
        lines.append("    try:")
        lines += ["        " + b for b in body]
        lines.append("    finally:")
        lines.append("        __reset(token)")
    else:
        lines += ["    " + b for b in body]
    lines.append("    return [" + "".join(f"t{o}, " for o in expr.outputs) + "]")
    return _codegen.function("\n".join(lines), ns, "run", "<tensorplay.compile array chain>")


def _body_of(n):
    """``(call_body, targs)`` for custom-op node ``n``: ``call_body(*tensors)`` runs the body
    its cpu call runs (its device-agnostic kernel) with the node's arguments, the tensors at
    ``targs`` replaced; None when the node is not that (a cpu kernel registered, keyword or
    nested tensor arguments, writes, several results)."""
    op = n.op
    if n.kwargs or op.mutates_args or n.result.__class__ is not Value:
        return None
    if any(isinstance(a, (list, tuple, dict)) for a in n.args):
        return None
    body = op.active_kernel("default")
    if body is None or op.active_kernel("cpu") is not None:
        return None
    targs = [i for i, a in enumerate(n.args) if a.__class__ is Value]
    args = list(n.args)

    def call_body(*ts):
        a = list(args)
        for i, t in zip(targs, ts):
            a[i] = t
        return body(*a)
    return call_body, targs


def _composite_kernel(n, env):
    """The forward's callable for custom-op node ``n`` (its arguments as the generated forward
    passes them): the body traced to array level (``_array_chain``), or None (the op's
    dispatch). Only an op whose cpu call runs its device-agnostic body, with tensor arguments
    passed positionally, one tensor result the body makes; the op's table is checked by
    identity on each call (a kernel registered or disabled since: the op's dispatch again)."""
    op = n.op
    call_body, targs = _body_of(n) or (None, None)
    if call_body is None:
        return None
    guards = _read_guards(op.active_kernel("default"))
    if guards is None:
        return None
    same = _reads_unchanged(guards)
    real = [env[id(n.args[i])] for i in targs]
    made = _array_chain(call_body, real, f"{op.name}_body")
    if made is None:
        return None
    run, take, tmpl, kind, parts = made
    want = n.result.fake
    if kind is not None or tmpl[0][0] != 0 or parts[0].fake.shape != want.shape or \
            parts[0].fake.dtype is not want.dtype:
        return None
    pick = tuple(targs[j] for j in take)
    table = op.table
    guard = table.get("autograd")

    def kernel(*a):
        if table.get("autograd") is not guard or (same is not None and not same()):
            return op(*a)
        return run(*[a[i] for i in pick])[0]
    return kernel


def _traced_ctx(static, saved):
    """A ctx as the replayed backward makes it (``_replayer``), on capture tensors."""
    c = _new(FunctionCtx)
    c.__dict__.update(static)
    c._saved = saved
    c._saved_versions = tuple(None if t is None else t.storage_ref.version for t in saved)
    return c


def _cse_key(n, canon):
    """What makes two traced nodes compute the same array: the op, its arguments (values by
    identity after ``canon``, constants by type and value) and keywords."""
    def one(a):
        if a.__class__ is Value:
            return ("v", id(canon.get(id(a), a)))
        if a.__class__ in (list, tuple):
            return (a.__class__, tuple(one(x) for x in a))
        return (a.__class__, a)
    return (n.op, tuple(one(a) for a in n.args),
            tuple((k, one(v)) for k, v in sorted(n.kwargs.items())))


def _array_pair(st, env, fvals, graph):
    """A custom op's body and formula traced together (one function of the body's tensor
    arguments and the output's gradient): the steps that do not read the gradient -- the
    body's, and the formula's recomputation of the body's values (a layer norm's mean, centred
    input, inverse deviation), each computed once (same op on the same arrays: the same bits)
    -- run in the forward, and the values of them the formula's other steps read are saved
    (``ctx._tp_pre``); the backward runs the steps that read the gradient. Returns
    ``(kernel, node, extras)``: the forward's callable (the body's result and the saved
    values), the node standing for the custom op's in the forward graph (its result: the
    output then ``extras``, new values) and sets ``st.fast`` and ``st.dyn``; or None (the body
    and formula apart: ``_composite_kernel`` / ``_array_formula``).

    Falls back as those do: the op's table changed since (the op's dispatch; the formula), a
    gradient laid out otherwise than traced (the formula on the ctx's saved values)."""
    from .fake import make_fake
    n = st.node
    if n is None or st.dyn or len(st.outs) != 1 or not ARRAY_PAIRS:
        return None
    made = _body_of(n)
    if made is None:
        return None
    call_body, targs = made
    guards = _read_guards(n.op.active_kernel("default"))
    if guards is None or _read_guards(st.fn, guards) is None:
        return None
    same = _reads_unchanged(guards)
    # each value the ctx saves is a tensor argument of the node or its output
    src = []
    for p in st.saved:
        if p < 0:
            src.append(None)
            continue
        v = fvals[p]
        if v is n.result:
            src.append(-1)
            continue
        j = next((j for j, i in enumerate(targs) if n.args[i] is v), None)
        if j is None:
            return None
        src.append(j)
    fn, static = st.fn, st.static
    shape, dtype, device = st.meta[0]
    g0 = make_fake(shape, dtype, device)
    nt = len(targs)

    def both(*ts):
        out = call_body(*ts[:nt])
        sv = tuple(None if k is None else out if k < 0 else ts[k] for k in src)
        return out, fn(_traced_ctx(static, sv), ts[nt])

    g = _trace_array(both, [env[id(n.args[i])] for i in targs] + [g0], f"{n.op.name}_joint")
    if g is None:
        return None
    out_v, res = g.output
    gin = g.inputs[nt]
    # split: forward steps (no gradient read; repeated ones dropped) and backward steps
    canon: dict = {}
    seen: dict = {}
    dep = {id(gin)}
    fwd, bwd = [], []
    for m in g.nodes:
        if any(id(a) in dep for a in m.inputs()):
            bwd.append(m)
            dep.add(id(m.outputs[0]))
            continue
        key = _cse_key(m, canon)
        first = seen.get(key)
        if first is not None:
            canon[id(m.outputs[0])] = first
            continue
        seen[key] = m.outputs[0]
        fwd.append(m)
    if not bwd or not fwd:
        return None

    def c(v):
        return canon.get(id(v), v)

    # the nodes with their arguments read through ``canon`` (copies: the traced graph's nodes
    # stay as traced), for the chains and their node-by-node fallbacks alike
    def rebuilt(ms):
        out = []
        for m in ms:
            k = _capture.Node(m.index, m.kind, m.op,
                              tuple(c(a) if a.__class__ is Value else a for a in m.args),
                              dict(m.kwargs), m.grad_enabled)
            k.result = m.result
            k.outputs = m.outputs
            out.append(k)
        return out
    fwd, bwd = rebuilt(fwd), rebuilt(bwd)
    made_in = {id(m.outputs[0]) for m in fwd}
    at_in = {id(v): i for i, v in enumerate(g.inputs[:nt])}
    out_v = c(out_v)
    if id(out_v) not in made_in:
        return None
    # the formula's result: each part a backward step's value, the gradient, a forward value
    # (saved) or None
    many = res.__class__ in (tuple, list)
    parts = list(res) if many else [res]
    bmade = {id(m.outputs[0]) for m in bwd}
    extras: list = []               # forward values the backward reads: saved
    ex_at: dict = {}

    def extra(v):
        if id(v) not in ex_at:
            if id(v) not in made_in and id(v) not in at_in:
                raise Unsupported("a value from outside")
            ex_at[id(v)] = len(extras)
            extras.append(v)
        return ex_at[id(v)]

    try:
        for m in bwd:
            for a in m.inputs():
                if a is not gin and id(a) not in bmade:
                    extra(a)
        bouts, bk, tmpl = [], {}, []
        for v in parts:
            if v is None:
                tmpl.append((2, None))
                continue
            if v.__class__ is not Value:
                return None
            v = c(v)
            if id(v) in bmade:
                if id(v) not in bk:
                    bk[id(v)] = len(bouts)
                    bouts.append(v)
                tmpl.append((0, bk[id(v)]))
            elif v is gin:
                tmpl.append((3, None))
            else:
                tmpl.append((1, extra(v)))
    except Unsupported:
        return None
    if not bouts:
        return None
    fouts = [out_v] + [v for v in extras if id(v) in made_in and v is not out_v]
    fmade = _chain_of(fwd, fouts)
    bmade_ = _chain_of(bwd, bouts)
    if fmade is None or bmade_ is None:
        return None
    run_f, f_in = fmade
    run_b, b_in = bmade_
    f_pick = tuple(targs[at_in[id(v)]] for v in f_in)
    f_at = {id(v): k for k, v in enumerate(fouts)}
    # each saved value: (True, k) the forward chain's output k, (False, i) the node's argument i
    ext = tuple((True, f_at[id(v)]) if id(v) in f_at else (False, targs[at_in[id(v)]])
                for v in extras)
    b_take = tuple(len(extras) if v is gin else ex_at[id(v)] for v in b_in)
    op = n.op
    table = op.table
    guard = table.get("autograd")
    n_ex = len(extras)

    # a read the trace baked in changed (``same``): this plan runs the body and the formula
    # from then on (a forward that fell back saved placeholders, so its backward must not take
    # the traced path even if the read changes back in between)
    moved = [False]

    def kernel(*a):
        if table.get("autograd") is not guard or moved[0] or (same is not None and not same()):
            moved[0] = moved[0] or table.get("autograd") is guard
            o = op(*a)
            return (o,) * (1 + n_ex)    # (placeholders: the backward runs the formula)
        r = run_f(*[a[i] for i in f_pick])
        return (r[0], *[r[k] if o else a[k] for o, k in ext])

    stride = g0.stride_tuple

    def fast(c_, g):
        if g.stride_tuple != stride or table.get("autograd") is not guard or moved[0]:
            return fn(c_, g)
        xs = c_._tp_pre + (g,)
        r = run_b(*[xs[j] for j in b_take])
        out = [r[k] if w == 0 else xs[k] if w == 1 else g if w == 3 else None for w, k in tmpl]
        if not many:
            return out[0]
        return out if res.__class__ is list else tuple(out)

    # the forward graph's node: the custom op's output, then the saved values (new values of
    # the forward graph, saved by the forward like the others)
    vals = [Value(graph, "node", v.fake) for v in extras]
    node = _capture.Node(n.index, n.kind, n.op, n.args, n.kwargs, n.grad_enabled)
    node.result = (n.result, *vals)
    node.outputs = [n.result, *vals]
    at = len(fvals)
    fvals.extend(vals)
    st.dyn.append(("_tp_pre", _Rebuild(tuple, [_Rebuild("t", at + k) for k in range(n_ex)])))
    st.fast = fast
    return kernel, node


def _array_formula(st, real):
    """A user formula's replacement for the replayed backward's direct call ``fn(ctx, g)``:
    the formula traced to array level on the values its ctx saves (a ctx holding tensors as
    other attributes, several outputs: None). The formula itself runs when the gradient comes
    with other strides than the traced (contiguous) one: a layout the trace did not see (the
    arrays' reductions would sum in another order than eager's contiguous results)."""
    from .fake import make_fake
    if st.dyn or len(st.outs) != 1:
        return None
    fn, static, saved = st.fn, st.static, st.saved
    guards = _read_guards(fn)
    if guards is None:
        return None
    same = _reads_unchanged(guards)
    shape, dtype, device = st.meta[0]
    g0 = make_fake(shape, dtype, device)
    leaves = [real[p] for p in saved if p >= 0] + [g0]
    n_s = len(leaves) - 1

    def call_formula(*ts):
        it = iter(ts[:n_s])
        return fn(_traced_ctx(static, tuple(None if p < 0 else next(it) for p in saved)), ts[-1])

    made = _array_chain(call_formula, leaves, f"{st.name}_backward")
    if made is None:
        return None
    run, take, tmpl, kind, _ = made
    stride = g0.stride_tuple
    idx = tuple(i for i, p in enumerate(saved) if p >= 0)

    def fast(c, g):
        if g.stride_tuple != stride or (same is not None and not same()):
            return fn(c, g)
        s = c._saved
        xs = [s[i] for i in idx]
        xs.append(g)
        r = run(*[xs[j] for j in take])
        out = [r[k] if w == 0 else xs[k] if w == 1 else None for w, k in tmpl]
        if kind is None:
            return out[0]
        return out if kind is list else tuple(out)
    return fast


def _trace(graph, dnodes, rg, fv, pos, gouts, out_pos, want, steps):
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

    leaf_at = {id(t): i for i, t in enumerate(fv)}

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
        st = _Step.make(ctx, leaf_at, info, structure, outs, out_t, tins, rg, pos, user, reach,
                        t_of)
        if st is not None:
            st.node = n
        steps.append(st)
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


class _Step:
    """One node of a replayed backward: its formula and the ctx its setup_context made while
    traced, with each forward value the ctx holds replaced by the saved value's index."""

    __slots__ = ("conform", "dyn", "fast", "fn", "ins", "meta", "name", "node", "outs",
                 "run_empty", "saved", "static", "structure", "user")

    @classmethod
    def make(cls, ctx, leaf_at, info, structure, outs, out_t, tins, rg, pos, user, reach, t_of):
        """The step of a node whose ctx was just set up on capture tensors, or None when the ctx
        holds a tensor that is not a forward value (a setup_context that computed one): such a
        graph's backward runs as the traced graph."""
        st = cls()
        d = dict(ctx.__dict__)
        saved = d.pop("_saved", ())
        d.pop("_saved_versions", None)
        d.pop("_released", None)
        try:
            st.saved = tuple(-1 if t is None else leaf_at[id(t)] for t in saved)
            st.dyn = []
            st.static = {}
            for k, v in d.items():
                r = _rebuilder(v, leaf_at)
                if r is None and v.__class__ in (list, dict, set):
                    r = _Copy(v)       # (a formula may change it: each call gets its own)
                if r is None and isinstance(v, _capture.SizeTuple):
                    # a size the setup read while traced (sum's ctx.shape): a plain tuple, as
                    # _rebuilder makes those inside objects -- the capture's tuple would mark a
                    # size read (three frames) on every replayed read
                    v = tuple(tuple.__iter__(v))
                if r is None:
                    st.static[k] = v
                else:
                    st.dyn.append((k, r))
        except KeyError:
            return None
        st.fn = info.backward
        st.fast = None
        st.user = user
        st.name = info.name
        st.structure = structure
        st.meta = tuple((tuple(t.shape), t.dtype, t.device) for t in out_t)
        st.outs = tuple(pos[id(o)] if id(o) in rg else None for o in outs)
        st.ins = tuple(pos[id(v)] if v is not None and id(v) in rg else None for v in tins)
        st.conform = tuple((tuple(t_of(v).shape), t_of(v).dtype, t_of(v).device)
                           if user and v is not None and id(v) in rg else None for v in tins)
        st.run_empty = user and any(pos[id(o)] in reach for o in outs)
        return st

    def positions(self):
        out = [i for i in self.saved if i >= 0]
        for _, r in self.dyn:
            out.extend(r.positions)
        return out

    def bind(self, at):
        """Positions of forward values -> indices into the forward's saved values."""
        self.saved = tuple(-1 if i < 0 else at[i] for i in self.saved)
        for _, r in self.dyn:
            r.bind(at)


class _Rebuild:
    """An attribute of a ctx that holds forward values (a tensor, or a tuple/list with some):
    ``self(saved)`` builds it from the saved values."""

    __slots__ = ("kind", "parts", "positions")

    def __init__(self, kind, parts):
        self.kind = kind            # "t": one tensor (parts: its position); tuple / list
        self.parts = parts
        self.positions = [parts] if kind == "t" else [
            i for p in parts if isinstance(p, _Rebuild) for i in p.positions]

    def bind(self, at):
        if self.kind == "t":
            self.parts = at[self.parts]
        else:
            for p in self.parts:
                if isinstance(p, _Rebuild):
                    p.bind(at)

    def __call__(self, saved):
        if self.kind == "t":
            return saved[self.parts]
        seq = [p(saved) if isinstance(p, _Rebuild) else p for p in self.parts]
        return seq if self.kind is list else self.kind(seq)


class _Copy:
    """A mutable attribute of a ctx template without tensors: a shallow copy per call."""

    __slots__ = ("value",)
    positions = ()

    def __init__(self, value):
        self.value = value

    def bind(self, at):
        pass

    def __call__(self, saved):
        return self.value.copy()


def _rebuilder(v, leaf_at, depth=0):
    """None when ``v`` holds no tensor; a ``_Rebuild`` when it holds forward values (in a
    tuple or list); ``KeyError`` for a tensor anywhere else (not a forward value, or inside an
    object: the step cannot be replayed). Sizes read while tracing become plain tuples."""
    if isinstance(v, Tensor):
        return _Rebuild("t", leaf_at[id(v)])
    t = v.__class__
    if t is tuple or t is list:
        parts = [_rebuilder(x, leaf_at, depth + 1) for x in v]
        if all(p is None for p in parts):
            return None
        return _Rebuild(t, [p if p is not None else x for p, x in zip(parts, v)])
    if isinstance(v, dict) or depth > 3:
        if isinstance(v, dict) and any(isinstance(x, Tensor) for x in v.values()):
            raise KeyError("a tensor in a dict")
        return None
    slots = getattr(t, "__slots__", None)
    names = list(getattr(v, "__dict__", {}) or ()) + (
        [slots] if isinstance(slots, str) else list(slots or ()))
    for n in names:
        x = getattr(v, n, None)
        if isinstance(x, _capture.SizeTuple):
            object.__setattr__(v, n, tuple(tuple.__iter__(x)))
        elif x is not None and _rebuilder(x, leaf_at, depth + 1) is not None:
            raise KeyError("a tensor inside an object")
    return None


def _replayer(steps, out_pos, want):
    """``bwd(saved, grads)``: the traced nodes' formulas called in reverse order on the saved
    values, the gradients summed per value (the engine's rules, see ``_trace``), as one
    generated straight-line function (no per-node object, loop or list): each step makes its
    ctx from its template, casts a gradient of another dtype to its output's, calls the formula
    and shapes its result as ``FunctionNode`` does. Only generated names reach the text."""
    from . import _codegen
    ns: dict = {"__new": object.__new__, "__C": FunctionCtx, "__conform": _conform,
                "__T": Tensor, "__FN": FunctionNode}
    used = set(out_pos) | set(want)
    for st in steps:
        used.update(p for p in st.outs if p is not None)
        used.update(p for p in st.ins if p is not None)
    lines = ["def bwd(S, G):"]
    lines += [f"    a{p} = None" for p in sorted(used)]
    for k, p in enumerate(out_pos):
        lines.append(f"    a{p} = G[{k}] if a{p} is None else a{p} + G[{k}]")
    for k, st in enumerate(steps):
        ns[f"__t{k}"] = st.static
        # (the direct calls: the formula traced to array level where it could be, the formula
        # itself else; the FunctionNode path below keeps the formula)
        ns[f"__bw{k}"] = st.fast or st.fn
        ns[f"__n{k}"] = FunctionNode(st.name, st.fn, None, (), st.structure, st.meta)
        body = ["c = __new(__C)", f"c.__dict__.update(__t{k})"]
        if st.saved:
            items = "".join("None, " if i < 0 else f"S[{i}], " for i in st.saved)
            vers = "".join("None, " if i < 0 else f"S[{i}].storage_ref.version, "
                           for i in st.saved)
            body += [f"c._saved = ({items})", f"c._saved_versions = ({vers})"]
        for m, (name, r) in enumerate(st.dyn):
            ns[f"__r{k}_{m}"] = r
            ns[f"__a{k}_{m}"] = name
            body.append(f"setattr(c, __a{k}_{m}, __r{k}_{m}(S))")
        one = len(st.outs) == 1 and not st.run_empty
        if one:
            p = st.outs[0]
            ns[f"__dt{k}"] = st.meta[0][1]
            head = [f"g = a{p}", f"a{p} = None", "if g is not None:"]
            body += [f"if g.raw_dtype is not __dt{k}: g = g.to(__dt{k})",
                     f"r = __bw{k}(c, g)"]
        else:
            gs = "".join("None, " if p is None else f"a{p}, " for p in st.outs)
            head = [f"gs = ({gs})"] + [f"a{p} = None" for p in st.outs if p is not None]
            if not st.run_empty:
                head.append("if gs.count(None) != len(gs):")
            else:
                head.append("if True:")
            # (a node per call: the generated function is shared by threads)
            ns[f"__s{k}"] = (st.name, st.fn)
            call = (f"r = __FN(__s{k}[0], __s{k}[1], c, (), __n{k}.structure, "
                    f"__n{k}._out_meta).apply(gs)")
            if len(st.outs) == 1:
                # one output whose gradient came in its dtype (a custom op's, every step):
                # what FunctionNode.apply calls, without the node (the result is shaped below)
                ns[f"__dt{k}"] = st.meta[0][1]
                body += [f"if gs[0] is not None and gs[0].raw_dtype is __dt{k}: "
                         f"r = __bw{k}(c, gs[0])",
                         f"else: {call}"]
            else:
                body.append(call)
        n_t = len(st.ins)
        if st.structure == ["t"]:
            # one tensor input: a bare gradient is what shaped gives as (r,)
            body.append(f"if r.__class__ is not tuple: r = (r,) if r.__class__ is not list "
                        f"else __n{k}.shaped(r)")
            body.append(f"elif len(r) != 1: r = __n{k}.shaped(r)")
        elif st.structure == ["t", None]:
            # a tensor and a number (x * 3.0): (g, None) needs no reshaping (r[0] is read)
            body.append(f"if r.__class__ is not tuple or len(r) != 2 or r[1] is not None: "
                        f"r = __n{k}.shaped(r)")
        elif all(x == "t" for x in st.structure) and n_t == len(st.structure):
            body.append(f"if r.__class__ is not tuple or len(r) != {n_t}: "
                        f"r = __n{k}.shaped(r)")
        else:
            body.append(f"r = __n{k}.shaped(r)")
        for m, (q, cm) in enumerate(zip(st.ins, st.conform)):
            if q is None:
                continue
            body.append(f"x = r[{m}]")
            body.append("if x is not None:")
            if cm is not None:
                ns[f"__cm{k}_{m}"] = cm
                ns[f"__nm{k}"] = st.name
                # (the device by identity first: Device's == is a Python method)
                body.append(f"    if x.__class__ is not __T or x.raw_shape != __cm{k}_{m}[0] or "
                            f"x.raw_dtype is not __cm{k}_{m}[1] or (x.raw_device is not "
                            f"__cm{k}_{m}[2] and x.raw_device != __cm{k}_{m}[2]): "
                            f"x = __fix(__nm{k}, {m}, x, __cm{k}_{m})")
            body.append(f"    a{q} = x if a{q} is None else a{q} + x")
        lines += ["    " + h for h in head]
        lines += ["        " + b for b in body]
    lines.append(f"    return ({''.join(f'a{p}, ' for p in want)})")
    ns["__fix"] = _fix_user_grad
    src = "\n".join(lines)
    fn = _codegen.function(src, ns, "bwd", "<tensorplay.compile replayed backward>")
    fn.source = src
    return fn


def _fix_user_grad(name, i, g, meta):
    """A user formula's gradient ``i`` that does not fit its input: torch's checks and
    reductions (``UserFunctionNode``)."""
    if not isinstance(g, Tensor):
        raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - "
                           f"expected a Tensor or None (got {type(g).__name__})")
    return _conform(name, i, g, meta)


_version_of = operator.attrgetter("storage_ref.version")


def _run(plan, leaves, consts):
    """One call on the AOT path: the forward runner under no_grad, one node recorded."""
    st = _gm._state
    st.enabled = False
    try:
        res = plan.fwd(leaves)
    finally:
        st.enabled = True
    n_out = plan.n_out
    diff = [leaves[i] for i in plan.diff_in]
    if plan.diff_consts:
        diff.extend(consts[j] for j in plan.diff_consts)
    ctx = _new(FunctionCtx)
    d = ctx.__dict__
    d["_op_name"] = NODE_NAME
    d["materialize_grads"] = False
    # save_for_backward's bookkeeping without its generic loop, each value with its version
    # now: the forward values the formulas read (the first ``plan.n_checked``, those eager's
    # formulas save, are checked by the backward), then every input and constant, which only a
    # recompute reads (``_recompute`` checks them then). All of it is released (the engine
    # empties ``_saved``) when a backward without retain_graph has run
    saved = (*res[n_out:], *leaves, *consts)
    d["_saved"] = saved
    d["_saved_versions"] = tuple(map(_version_of, saved))
    d["plan"] = plan
    d["needs_input_grad"] = plan.needs
    if n_out != 1 or plan.nondiff:
        outs = res[:n_out]
        if plan.nondiff:
            if n_out == 1:             # (an output that requires no grad: no node at all)
                return _pytree.tree_unflatten(plan.spec, outs)
            ctx.mark_non_differentiable(*(outs[k] for k in plan.nondiff))
        attach(NODE_NAME, _backward, ctx, diff, tuple(outs), Tensor)
        return _pytree.tree_unflatten(plan.spec, outs)
    out = res[0]
    # attach's work for one output and tensors that all require grad (edge_of's common cases
    # inline: a non-view with history, a leaf whose accumulator exists)
    edges = []
    for t in diff:
        if t.view_base is None:
            fn = t.raw_grad_fn
            if fn is not None:
                edges.append((fn, t.output_nr))
                continue
            acc = t.accumulator
            if acc is not None:
                edges.append((acc, 0))
                continue
        edges.append(edge_of(t))
    node = _new(FunctionNode)
    node.name = NODE_NAME
    node.fn = _backward
    node.ctx = ctx
    node.next_edges = tuple(edges)
    node.structure = plan.structure
    node._out_meta = ((out.raw_shape, out.raw_dtype, out.raw_device),)
    node._retained = None
    set_history(out, node, 0)
    return out if plan.spec == _pytree.LEAF else _pytree.tree_unflatten(plan.spec, (out,))


def _backward(ctx, *grads):
    plan = ctx.plan
    saved = ctx._saved
    if ctx._released:
        ctx.saved_tensors  # noqa: B018 - backward through the graph a second time: raises
    k = plan.n_checked
    if k and tuple(map(_version_of, saved[:k])) != ctx._saved_versions[:k]:
        _refuse(saved[:k], ctx._saved_versions[:k])
    diff_out = plan.diff_out
    gs = [grads[k] if k < len(grads) else None for k in diff_out]
    # (by identity: `None in gs` would call each gradient's Tensor.__eq__)
    missing = False
    for g in gs:
        if g is None:
            missing = True
            break
    if missing or _gm._state.enabled:
        return _recompute(ctx, saved, grads)
    if plan.replay:
        return plan.bwd(saved, gs)
    args = list(saved[:plan.n_saved])
    args.extend(gs[k] for k in plan.grad_idx)
    if plan.bwd_checked:
        run, plan.bwd_checked = plan.bwd_checked, False
        return tuple(run(args))
    return tuple(plan.bwd(args))


def _refuse(saved, versions):
    """A value the formulas saved was written in place since the call: ``saved_tensors``
    raises eager's error (naming its index among those)."""
    c = _new(FunctionCtx)
    d = c.__dict__
    d["_op_name"] = NODE_NAME
    d["_saved"] = saved
    d["_saved_versions"] = versions
    c.saved_tensors  # noqa: B018 - raises


# ---------------------------------------------------------------------------------------------
# recomputing: eager's gradients from the node's inputs (double backward, missing gradients)

def _recompute(ctx, saved, grads):
    plan = ctx.plan
    n0, n_in = plan.n_saved, plan.n_in
    versions = ctx._saved_versions
    for i, t in enumerate(saved[n0:]):
        ver = versions[n0 + i]
        if t.storage_ref.version != ver:
            what = f"input {i}" if i < n_in else \
                f"graph constant {i - n_in} (a tensor it reads from a closure, global or attribute)"
            raise RuntimeError(
                f"autograd ({NODE_NAME}): one of the variables needed for gradient computation "
                f"has been modified by an inplace operation: {what} of the compiled function "
                f"(shape {tuple(t.shape)}) is at version {t.storage_ref.version}; expected version "
                f"{ver} instead. This backward (create_graph=True, or one that reached only some of "
                f"the outputs) recomputes the compiled graph from its inputs and constants, "
                f"which must be unchanged since the call. Clone it before modifying it.")
    leaves, consts = saved[n0:n0 + n_in], saved[n0 + n_in:]
    diff = [leaves[i] for i in plan.diff_in] + [consts[j] for j in plan.diff_consts]
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
