"""Graph replay for ``tensorplay.compile(fn, mode="reduce-overhead")`` (CUDA graphs).

A compiled graph's runner makes one launch per fused chain or unfused op, each costing host
time; on a device whose backend records work into a replayable graph
(``Backend.capture_graph``: CUDA graphs on cuda), ``mode="reduce-overhead"`` records those
launches once per exact call signature and replays them with one graph launch, as
``torch.compile(mode="reduce-overhead")`` does.

Per compiled graph (a ``compile._Entry``) and exact signature (sizes and strides of every tensor
argument), the calls go:

1. first call: a normal run (it compiles the kernels and fills every cache the recording must
   not trigger), and the reasons the signature cannot use a graph are looked for (``why_not``);
2. second call: the tensor arguments are copied into *static inputs* (arrays owned by the
   replay), the runner is recorded on them (``Backend.capture_graph``), then as every later call:
3. copy each argument into its static input, replay the graph, and return **fresh tensors**:
   each output is copied out of the graph's static output (one device copy per output), so a
   result stays valid after later calls -- unlike torch, whose outputs are overwritten by the
   next replay. The copies are part of every call's cost, and what the benchmarks measure.

Signatures that run without a graph (every call a normal run; the reason is kept in
``CompiledFunction.graph_skips``): arguments on a device without graph capture, or on several
devices, or not contiguous; arguments needing grad while grad mode is on (the graph records no
autograd history); graphs that mutate an argument or call a random op (a replay would repeat the
same numbers); outputs sharing memory with an argument or returning one; a recording that
failed (e.g. a custom op that synchronises with the host; on cuda, a matmul: CuPy refuses
cuBLAS calls during a capture).
"""

from __future__ import annotations

from . import _pytree
from ._tensor import Tensor
from .autograd import grad_mode as _gm

__all__ = ["GraphReplay", "run"]

_WARM = "warm"     # the signature ran once; the next call records
MAX_GRAPHS = 16    # recorded signatures kept per compiled graph (each pins its arrays)


class GraphReplay:
    """One recorded graph of one compiled graph and exact signature: call it with the
    arguments' tensors (``leaves``) to get the outputs as fresh tensors."""

    __slots__ = ("backend", "device", "outs", "replay", "spec", "static_in", "struct")

    def __init__(self, entry, leaves):
        t0 = leaves[0]
        be = self.backend = t0.backend
        dev = self.device = t0.device
        with be.device_guard(dev):
            self.static_in = [be.wrap(_copy(be, t.native, dev), dev) for t in leaves]
            static_in = self.static_in

            def record():
                return entry.run(static_in)

            result, self.replay = be.capture_graph(record, dev)
        outs: list = []
        self.struct = _pytree.tree_flatten(result, Tensor, outs)[1]
        # (the static output's array, the Tensor itself) per leaf; non-tensor leaves as they are
        self.outs = [t.native if isinstance(t, Tensor) else None for t in outs]
        self.spec = outs

    def __call__(self, leaves):
        be = self.backend
        dev = self.device
        assign = be.assign
        with be.device_guard(dev):
            for s, t in zip(self.static_in, leaves):
                assign(s.native, t.native)
            self.replay()
            wrap = be.wrap
            fresh = [wrap(_copy(be, o, dev), dev) if o is not None else v
                     for o, v in zip(self.outs, self.spec)]
        return _pytree.tree_unflatten(self.struct, fresh)


def _copy(be, arr, dev):
    """A new array on ``dev`` with ``arr``'s values (row-major)."""
    out = be.empty(tuple(arr.shape), be.dtype_of(arr), dev)
    be.assign(out, arr)
    return out


def why_not(graph, leaves) -> str | None:
    """Why this call signature runs without a graph, or None when it can record one."""
    if not leaves:
        return "the function takes no tensor arguments"
    t0 = leaves[0]
    be, dev = t0.backend, t0.device
    if type(be).capture_graph is _no_capture():
        return f"device '{dev}' cannot capture graphs"
    grad = _gm._state.enabled
    for t in leaves:
        if t.device != dev or t.backend is not be:
            return "the tensor arguments are on more than one device"
        if t.native is None:
            return "an argument is not a real tensor"
        if not t.is_contiguous():
            return "an argument is not contiguous"
        if grad and t.needs_grad:
            return "an argument requires grad (graphs record no autograd history)"
    for n in graph.nodes:
        if n.kind != "op" or n.is_barrier:
            return f"the graph mutates a tensor ({n.target})"
        if "nondeterministic_seeded" in (getattr(n.op, "tags", ()) or ()):
            return f"the graph calls a random op ({n.target}): a replay repeats its numbers"
    return None


def _aliases(out, leaves, graph) -> bool:
    """Whether an output shares memory with an argument or a constant of the graph (or is
    one): a copy out of the graph would lose that sharing."""
    roots = {id(t.storage_ref) for t in leaves}
    roots.update(id(c.const.storage_ref) for c in graph.consts)
    found: list = []
    _pytree.tree_flatten(out, Tensor, found)
    return any(isinstance(t, Tensor) and id(t.storage_ref) in roots for t in found)


def _no_capture():
    from ._backend import Backend
    return Backend.capture_graph


def run(cf, entry, sig, leaves):
    """One call of compiled function ``cf`` with ``mode="reduce-overhead"``: ``entry``'s graph on
    ``leaves``, whose exact signature is ``sig``."""
    graphs = entry.replays
    g = graphs.get(sig)
    if g is None and len(graphs) >= MAX_GRAPHS:
        graphs.clear()           # each graph holds its static arrays: keep a bounded number
    if g.__class__ is GraphReplay:
        return g(leaves)
    if g is None:
        reason = why_not(entry.graph, leaves)
        out = entry.run(leaves)
        if reason is None and _aliases(out, leaves, entry.graph):
            reason = "an output is an argument or a view of one"
        graphs[sig] = _WARM if reason is None else reason
        if reason is not None:
            cf.graph_skips[sig] = reason
        return out
    if g is _WARM:
        try:
            g = GraphReplay(entry, leaves)
        except (NotImplementedError, RuntimeError) as e:
            reason = f"recording failed ({type(e).__name__}: {e})"
            graphs[sig] = reason
            cf.graph_skips[sig] = reason
            return entry.run(leaves)
        graphs[sig] = g
        return g(leaves)
    return entry.run(leaves)      # a reason: this signature runs without a graph
