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
devices, or not contiguous; arguments, or tensors the function reads, needing grad while an op of
the graph runs with grad mode on (the graph records no autograd history); graphs that mutate a tensor, call a random
op (a replay would repeat the same numbers) or an op tagged ``cudagraph_unsafe``; outputs
sharing memory with an argument, a constant or each other, or not contiguous (copies out would
lose the sharing or the strides); signatures beyond the first ``MAX_GRAPHS`` recorded; a
recording that failed (e.g. a custom op that synchronises with the host; on cuda, a matmul:
CuPy refuses cuBLAS calls during a capture); a recording holding no more device launches than
the copies a replay adds (``_few_launches``: one fused chain of two arguments and one output is one
launch against three copies), where a replay costs more than a normal run and gives the same
values. Calls from several threads take turns on one
recorded graph (a lock: its static inputs are shared); a backend's ``replay`` may offer
``before()``/``after()``, called under that lock around each call's device work, to order the
work of calls made on different streams, and ``launches``, the number of device operations the
recording holds (cuda: the CUDA graph's nodes); without it the runner's structure is counted
(``compile._Entry.launches``: one per fused chain, one per op that is not a view).
"""

from __future__ import annotations

import threading

from . import _pytree
from ._tensor import Tensor
from ._tensor_base import shared_storage
from .autograd import grad_mode as _gm

__all__ = ["GraphReplay", "run"]

_WARM = "warm"     # the signature ran once; the next call records
MAX_GRAPHS = 16    # recorded signatures kept per compiled graph (each pins its arrays)
MAX_SKIPS = 64     # reasons kept in CompiledFunction.graph_skips (the newest)
# a graph whose replay would save no launch runs without one (``_few_launches``); the tests of
# the replay machinery itself, whose graphs are one or two launches, turn this off
SKIP_FEW_LAUNCHES = True


class GraphReplay:
    """One recorded graph of one compiled graph and exact signature: call it with the
    arguments' tensors (``leaves``) to get the outputs as fresh tensors."""

    __slots__ = ("backend", "consts", "device", "lock", "outs", "replay", "spec", "static_in",
                 "struct")

    def __init__(self, entry, leaves):
        t0 = leaves[0]
        # the static inputs are shared: one call at a time copies in, replays and copies out
        # (the backend's replay orders the device work of calls made on different streams)
        self.lock = threading.Lock()
        self.consts = [c.const for c in entry.graph.consts]
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
        replay = self.replay
        with self.lock, be.device_guard(dev):
            before = getattr(replay, "before", None)
            if before is not None:
                before()
            for s, t in zip(self.static_in, leaves):
                assign(s.native, t.native)
            replay()
            wrap = be.wrap
            fresh = [wrap(_copy(be, o, dev), dev) if o is not None else v
                     for o, v in zip(self.outs, self.spec)]
            after = getattr(replay, "after", None)
            if after is not None:
                after()
        return _pytree.tree_unflatten(self.struct, fresh)

    def consts_need_grad(self) -> bool:
        """A tensor the graph holds as a constant requires grad now (it may have been made to
        after the recording): the call must record autograd history, so it runs normally."""
        for c in self.consts:
            if c.needs_grad:
                return True
        return False


class _GradModeReplay(GraphReplay):
    """The replay of a graph whose function changes the grad mode it leaves set
    (``tp.set_grad_enabled(False)`` called as a function): a replay runs no Python, so it sets
    that mode after the device work, as the normal run does."""

    __slots__ = ("exit_grad",)

    def __init__(self, entry, leaves):
        super().__init__(entry, leaves)
        self.exit_grad = entry.graph.exit_grad

    def __call__(self, leaves):
        out = GraphReplay.__call__(self, leaves)
        _gm._state.enabled = self.exit_grad
        return out


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
    # whether an op of the graph records autograd history when an input needs grad: the grad
    # mode each node ran under (the mode now may be the one the capture left set, and a function
    # may turn grad on after entering with it off)
    grad = any(n.grad_enabled for n in graph.nodes)
    for t in leaves:
        if t.device != dev or t.backend is not be:
            return "the tensor arguments are on more than one device"
        if t.native is None:
            return "an argument is not a real tensor"
        if not t.is_contiguous():
            return "an argument is not contiguous"
        if grad and t.needs_grad:
            return "an argument requires grad (graphs record no autograd history)"
    if grad:
        for c in graph.consts:
            if c.const.needs_grad:
                return "a tensor the function reads requires grad (graphs record no autograd history)"
    for n in graph.nodes:              # random ops first: some use in-place steps internally
        tags = (getattr(n.op, "tags", ()) or ()) if n.kind == "op" else ()
        if "nondeterministic_seeded" in tags:
            return f"the graph calls a random op ({n.target}): a replay repeats its numbers"
        if "cudagraph_unsafe" in tags:
            return f"the graph calls {n.target}, tagged cudagraph_unsafe"
    for n in graph.nodes:
        if n.kind == "detach" or n.kind == "data" or n.kind == "multi_output":
            continue                   # an alias without history, a mark: nothing is mutated
        if n.kind == "disabled":
            return f"the graph calls {n.target}, run eagerly (tensorplay.compiler.disable)"
        if n.kind != "op" or n.is_barrier:
            return f"the graph mutates a tensor ({n.target})"
    return None


def _outputs_reason(out, leaves, graph) -> str | None:
    """Why the outputs of a normal run could not be copied out of a graph faithfully, or None:
    an output sharing memory with an argument, a constant or another output (copies would not
    share it), or not contiguous (a copy would change its strides)."""
    # storages by memory: x.data (a version counter of its own) is x's (shared_storage)
    roots = {id(shared_storage(t.storage_ref)) for t in leaves}
    roots.update(id(shared_storage(c.const.storage_ref)) for c in graph.consts)
    found: list = []
    _pytree.tree_flatten(out, Tensor, found)
    seen: set = set()
    for t in found:
        if not isinstance(t, Tensor):
            continue
        r = id(shared_storage(t.storage_ref))
        if r in roots:
            return "an output is an argument, a tensor the function reads, or a view of one"
        if r in seen:
            return "outputs share memory with each other (one is a view of another)"
        seen.add(r)
        if not t.is_contiguous():
            return "an output is not contiguous (a copy out of the graph would change its strides)"
    return None


def _skip(cf, sig, reason) -> None:
    skips = cf.graph_skips
    skips.pop(sig, None)
    if len(skips) >= MAX_SKIPS:
        del skips[next(iter(skips))]     # the oldest
    skips[sig] = reason


def _no_capture():
    from ._backend import Backend
    return Backend.capture_graph


def run(cf, entry, sig, leaves):
    """One call of compiled function ``cf`` with ``mode="reduce-overhead"``: ``entry``'s graph on
    ``leaves``, whose exact signature is ``sig``."""
    graphs = entry.replays
    g = graphs.get(sig)
    if g.__class__ is GraphReplay or g.__class__ is _GradModeReplay:
        if g.consts_need_grad() and entry.grad_inside:
            return entry.run(leaves)
        return g(leaves)
    if g is None:
        reason = why_not(entry.graph, leaves)
        out = entry.run(leaves)
        if reason is None:
            reason = _outputs_reason(out, leaves, entry.graph)
        if reason is None:
            graphs[sig] = _WARM
        else:
            _skip(cf, sig, reason)
            if "requires grad" not in reason:
                graphs[sig] = reason     # for good; a tensor's requires_grad may change: asked again
        return out
    if g is not _WARM:
        return entry.run(leaves)         # a reason: this signature runs without a graph
    if entry.grad_inside and any(c.const.needs_grad for c in entry.graph.consts):
        return entry.run(leaves)         # a constant was made to require grad since
    if sum(isinstance(v, GraphReplay) for v in graphs.values()) >= MAX_GRAPHS:
        # each graph pins its arrays: the first MAX_GRAPHS signatures recorded keep theirs
        reason = f"{MAX_GRAPHS} signatures of this graph are recorded already (the limit)"
        graphs[sig] = reason
        _skip(cf, sig, reason)
        return entry.run(leaves)
    try:
        g = (GraphReplay if entry.graph.exit_grad == entry.graph.entry_grad
             else _GradModeReplay)(entry, leaves)
    except (NotImplementedError, RuntimeError) as e:
        reason = f"recording failed ({type(e).__name__}: {e})"
        graphs[sig] = reason
        _skip(cf, sig, reason)
        return entry.run(leaves)
    reason = _few_launches(g, entry)
    if reason is not None:
        # dropped: its arrays (on cuda, its memory pool) go with it
        graphs[sig] = reason
        _skip(cf, sig, reason)
        return entry.run(leaves)
    graphs[sig] = g
    cf.graph_skips.pop(sig, None)
    return g(leaves)


def _few_launches(g, entry) -> str | None:
    """Why recording ``g`` of ``entry``'s graph saves nothing, or None when it may: a replay
    makes one copy per argument in and one per tensor output out besides its graph launch, so
    a graph holding no more launches than those copies gives no fewer launches per call, and
    the copies add device traffic (at 2^24 float32 elements, one fused chain of two arguments:
    150 µs a replay against 45 µs without, an H200). The count is the backend's, when its
    recording reports one (``replay.launches``: cuda counts the CUDA graph's nodes), else the
    runner's structure (``_Entry.launches``). Skipping changes the cost only: the normal run
    gives the same values, in fresh tensors as a replay's copies out do."""
    if not SKIP_FEW_LAUNCHES:
        return None
    copies = len(g.static_in)
    for o in g.outs:
        if o is not None:
            copies += 1
    n = getattr(g.replay, "launches", None)
    if n is None:
        n = entry.launches(g.backend)
    if n > copies:
        return None
    return (f"the graph makes {n} device launch{'es' if n != 1 else ''}, no more than the "
            f"{copies} copies a replay adds (arguments in, outputs out): it runs without a "
            f"graph, which costs less and gives the same results")
