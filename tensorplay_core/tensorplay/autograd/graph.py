"""The backward walk: graph nodes, edges, and the engine (micrograd's shape, torch's semantics).

A ``Node`` is created when an op runs on inputs that require grad. It knows, for each
differentiable input, the *edge* ``(node, input_nr)`` that input's gradient flows to: the input's
own ``grad_fn`` (non-leaf) or an ``AccumulateGrad`` node (leaf). The engine walks the graph in
topological order from the roots, summing gradients that meet (``+=``), and either accumulates
into ``.grad`` of leaves (``backward``) or returns them (``grad``).
"""

from __future__ import annotations

import sys

from . import grad_mode as _gm
from .. import _tensor_base as _tb
from .._backend import _CONTIG_CACHE
from .._tensor_base import TensorBase, instance_class, set_accumulator


class NodeName(str):
    """A graph node's name: the string itself (``node.name == "MulBackward"``, f-strings, as the
    library reads it) and, called, torch's ``Node.name()`` method (``grad_fn.name()`` gives it as
    a plain ``str``). Made once per op or node class, never per node."""

    __slots__ = ()

    def __call__(self) -> str:
        return str.__str__(self)


def node_name(name):
    """``name`` as a ``NodeName`` (as is when it is one)."""
    return name if name.__class__ is NodeName else NodeName(name)


class Node:
    """A backward function. ``next_edges[i]`` is ``(node, nr)`` or ``None`` for input ``i``;
    ``apply(grads)`` maps output gradients (one per forward output) to input gradients.
    ``name``: a ``NodeName`` (a subclass's class-level string is made one here)."""

    __slots__ = ("next_edges", "__weakref__", "_out_meta", "_retained")

    name = NodeName("Node")

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        n = cls.__dict__.get("name")
        if n.__class__ is str:
            cls.name = NodeName(n)
    # run even when no gradient reached it (torch's engine runs every node it reaches; a
    # built-in formula turns undefined gradients into undefined ones, which skipping it gives,
    # but a user's Python formula runs: with zeros, or None after set_materialize_grads(False))
    always_run = False

    def apply(self, grads):  # pragma: no cover - abstract
        raise NotImplementedError

    def name_(self):
        return self.name

    def register_prehook(self, hook):
        """torch's ``Node.register_prehook``: ``hook(grad_outputs)`` runs before the node
        computes its gradients (after the output tensors' hooks and ``retain_grad``) and may
        return a tuple of replacement ``grad_outputs``. Returns a handle with ``remove()``.
        Nodes without hooks pay nothing (the engine's existing ``_retained`` test)."""
        return _NodeHookHandle(_node_hooks(self).pre, hook)

    def register_hook(self, hook):
        """torch's ``Node.register_hook``: ``hook(grad_inputs, grad_outputs)`` runs after the
        node computed its gradients and may return a tuple of replacement ``grad_inputs``.
        Returns a handle with ``remove()``."""
        return _NodeHookHandle(_node_hooks(self).post, hook)

    def release(self):
        """Free what the node saved for backward (the engine calls it unless the graph is
        retained); nothing to free by default."""

    def __repr__(self) -> str:
        return f"<{self.name}>"

    @property
    def next_functions(self):
        """Same shape as ``torch.autograd.graph.Node.next_functions``."""
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)


class LeafHooks(list):
    """A leaf's hooks, on its ``AccumulateGrad`` node: the ``Tensor.register_hook`` functions
    (the list itself: run on the gradient before it is accumulated) and ``post``, the
    ``register_post_accumulate_grad_hook`` functions (run with the tensor once ``.grad`` holds
    the sum). True when either has one, so the node's one ``if self.hooks`` test sends a hooked
    leaf to ``apply`` and a leaf without hooks pays nothing for them."""

    __slots__ = ("post", "node")

    def __init__(self):
        super().__init__()
        self.post = []
        self.node = None    # the node's own hooks (register_prehook/register_hook), a NodeHooks

    def __bool__(self):
        return list.__len__(self) > 0 or len(self.post) > 0 or self.node is not None


class AccumulateGrad(Node):
    """Sink for a leaf tensor: adds the incoming gradient to ``variable.grad``."""

    __slots__ = ("variable", "hooks")
    name = "AccumulateGrad"

    def __init__(self, variable):
        self.variable = variable
        self.next_edges = ()
        self._out_meta = None
        self.hooks = None      # the leaf's hooks (a LeafHooks, made by the first registration)

    def apply(self, grads):
        g = grads[0]
        v = self.variable
        if g is None:
            return ()
        hooks = self.hooks
        if hooks:
            g = run_hooks(hooks, g)
            nh = hooks.node
            if nh is not None and nh.pre:
                (g,) = run_node_prehooks(nh.pre, (g,))
            if g is not None:
                accumulate_into(v, g)
            if hooks.post:
                run_post_hooks(hooks.post, v)
            if nh is not None and nh.post:
                run_node_posthooks(nh.post, (), (g,))
            return ()
        accumulate_into(v, g)
        return ()

    def accumulate(self, g, owned=False):
        """``apply((g,))``; ``owned``: no one else holds ``g``, so when it is a plain dense
        tensor on storage of its own, ``.grad`` takes it without the defensive copy."""
        v = self.variable
        if self.hooks:
            return self.apply((g,))    # a hook may keep or replace g: no ownership shortcut
        # (_tb._instance_class: instance_class() without its call, once per leaf per backward)
        if v.raw_grad is None and g.__class__ is _tb._instance_class and \
                g.raw_shape == v.raw_shape and g.raw_dtype is v.raw_dtype:
            if owned and _exclusive(g):
                _tb.set_grad(v, g if not (g.needs_grad or g.raw_grad_fn is not None or
                                          g.view_base is not None or g.capture_info is not None or
                                          g.accumulator is not None) else g.detach())
                return ()
            if not _gm.is_grad_enabled():
                # shared with another leaf (add's backward hands one gradient to both inputs):
                # apply()'s copy, without its no_grad block and detach (grad mode is off here)
                _tb.set_grad(v, _own_copy(g))
                return ()
        return self.apply((g,))


def accumulate_into(v, g) -> None:
    """Add the gradient ``g`` into ``v.grad``, as torch's AccumulateGrad (after the leaf's hooks;
    ``backward(inputs=...)`` for every tensor it names): ``g`` cast to ``v``'s dtype and summed
    to its shape; with grad mode on (``create_graph=True``) out of place and recorded, else a
    first gradient is an owned copy (never the caller's tensor or one shared with another leaf)
    and a later one is added into ``.grad`` in place. A ``.grad`` set by hand that does not fit
    ``v`` (another dtype, shape or device, or ``v``'s own memory) is refused here with torch's
    reason (torch refuses the assignment itself): RuntimeError."""
    if v.raw_grad is not None:
        _check_grad_fits(v, v.raw_grad)
    if _gm.is_grad_enabled():
        # backward(create_graph=True): .grad keeps its history, as torch's accumulation with
        # grad mode on (a clone, or grad + g, recorded), so a second backward through x.grad
        # gives the second derivative (a gradient penalty's x.grad.norm().backward())
        if g.raw_dtype is not v.raw_dtype:
            g = g.to(v.raw_dtype)
        if g.raw_shape != v.raw_shape:
            g = g.sum_to_size(v.raw_shape)
        _tb.set_grad(v, g.clone() if v.raw_grad is None else v.raw_grad + g)
        return
    with _gm.no_grad():
        if g.raw_dtype is not v.raw_dtype:
            g = g.to(v.raw_dtype)   # a formula's gradient takes its input's dtype (torch)
        if g.raw_shape != v.raw_shape:
            g = g.sum_to_size(v.raw_shape)
        if v.raw_grad is None:
            # a gradient may be shared by several leaves (e.g. add's backward): own a copy
            _tb.set_grad(v, _own_copy(g.detach()))
        else:
            # in place, as torch's AccumulateGrad with grad mode off (``grad += new``): the
            # .grad object stays the same one -- references to it (an optimizer's, a
            # user's) see the sum, and a grad_fn left by a create_graph backward is kept
            v.raw_grad.add_(g.detach())


def _check_grad_fits(v, gr) -> None:
    """RuntimeError unless ``gr`` can be ``v``'s ``.grad`` (torch's checks of ``x.grad = gr``)."""
    why = None
    if not isinstance(gr, _tb.TensorBase):
        why = f"is a {type(gr).__name__}, not a Tensor"
    elif gr is v or (gr.storage_ref is not None and gr.storage_ref is v.storage_ref):
        why = "shares the tensor's own memory (torch: can't assign Variable as its own grad)"
    elif gr.raw_dtype is not v.raw_dtype:
        why = f"has dtype {gr.raw_dtype}, not the tensor's {v.raw_dtype}"
    elif gr.raw_shape != v.raw_shape:
        why = f"has shape {tuple(gr.raw_shape)}, not the tensor's {tuple(v.raw_shape)}"
    elif gr.raw_device != v.raw_device:
        why = f"is on {gr.raw_device}, not the tensor's {v.raw_device}"
    if why is not None:
        raise RuntimeError(f"backward: the .grad assigned to a tensor {why}, so the gradient "
                           f"cannot be accumulated into it; assign a tensor of the same dtype, "
                           f"shape and device (e.g. tensorplay.zeros_like(x)), or None")


def _own_copy(g):
    """A row-major copy of ``g`` (what ``g.clone()`` gives: same values and layout), written in
    one pass. For a gradient that is not row-major -- a broadcast such as the backward of
    ``sum(dim)`` or ``mean`` hands on, a transposed view -- ``clone``'s kernel takes NumPy's and
    CuPy's order-K copy (column-major for a row broadcast) and the result is laid out again: two
    full-size writes; an empty tensor filled by ``copy_`` is one."""
    if g.__class__ is not instance_class() or g.native is None or g.capture_info is not None or \
            g.is_contiguous():
        return g.clone()
    out = g.new_empty(g.raw_shape)
    out.copy_(g)
    return out


def grad_accumulator(t) -> AccumulateGrad:
    """The leaf ``t``'s gradient accumulator node, made on first use (one per leaf, so hooks
    registered on it and every graph edge into the leaf meet in one node)."""
    acc = t.accumulator
    if acc is None:
        acc = AccumulateGrad(t)
        set_accumulator(t, acc)
    return acc




class _GradOffCtx:
    """``set_grad_enabled(False)`` without an object per use (reentrant: a stack of modes).
    The saved modes live in the calling thread's grad state, like the flag itself."""

    __slots__ = ()

    def __enter__(self):
        g = _gm._state.__dict__     # this thread's flags: one thread-local lookup
        g["saved"].append(g["enabled"])
        g["enabled"] = False

    def __exit__(self, *exc):
        g = _gm._state.__dict__
        g["enabled"] = g["saved"].pop()
        return False


_GRAD_OFF = _GradOffCtx()


def _contiguous_strides(shape):
    from .._backend import contiguous_strides_cached
    global _contiguous_strides
    _contiguous_strides = contiguous_strides_cached
    return contiguous_strides_cached(shape)


def _getrefcount(x):
    return sys.getrefcount(x) - 1   # minus this call's own argument


def _exclusive(g) -> bool:
    """``g`` is a dense tensor whose array is its whole storage, and nothing else references
    that storage or that array (so ``.grad`` may take it without a copy)."""
    st = g.storage_ref
    data = g.native
    sd = g.stride_tuple
    # a fresh result holds the cached row-major tuple itself: the identity test settles it
    # without the function call (the comparison decides any other tuple)
    if data is None or g.offset != 0 or g.retains_grad_flag or g.raw_grad is not None or \
            (sd is not _CONTIG_CACHE.get(g.raw_shape) and sd != _contiguous_strides(g.raw_shape)):
        return False
    if g.view_base is not None:
        return _exclusive_view(g)
    if st.root is not data:
        return False
    # sys.getrefcount also counts its argument and our local name: storage -> g.storage_ref +
    # st + arg; array -> g.native + st.root + data + arg
    return sys.getrefcount(st) <= 3 and sys.getrefcount(data) <= 4


def _exclusive_view(g) -> bool:
    """``g`` is a dense view of all of a fresh tensor (a formula's ``dx.reshape(x.shape)``), and
    only ``g`` holds that tensor, its storage and its array: ``.grad`` may take it (torch's
    AccumulateGrad steals such a gradient too) instead of copying all of it."""
    # st and data read here, not passed in: Python < 3.11 keeps a call's arguments on the
    # caller's stack too (one reference more each), so the counts below would depend on it
    st = g.storage_ref
    data = g.native
    base = g.view_base
    root = st.root
    if base.view_base is not None or base.native is not root or base.offset != 0 or \
            base.retains_grad_flag or base.raw_grad is not None or base.numel() != g.numel() or \
            base.stride_tuple != _contiguous_strides(base.raw_shape):
        return False
    # (the caller's locals st and data count too) base -> g.view_base + base + arg; storage ->
    # base.storage_ref + g.storage_ref + 2 locals + arg; g's array -> g.native + 2 locals + arg; the
    # root array -> base.native + st.root + root + arg, and the view array's own reference to it
    # when the backend keeps one (numpy, CuPy)
    held = 5 if getattr(data, "base", None) is root else 4
    return (sys.getrefcount(base) <= 3 and sys.getrefcount(st) <= 5 and
            sys.getrefcount(data) <= 4 and sys.getrefcount(root) <= held)


def current_grad_fn(t):
    """``t.grad_fn`` after regenerating the history of a view whose base (or another view of it)
    was written in place since it was last set, as torch's ``grad_fn`` getter does; what
    ``register_hook`` and ``retain_grad`` register on (the next backward uses that history)."""
    if t.view_base is not None and t.view_version != t.storage_ref.version and \
            t.view_base.needs_grad:
        from .function import regenerate_view_grad_fn
        regenerate_view_grad_fn(t)
    return t.raw_grad_fn


def edge_of(t):
    """The edge a gradient for tensor ``t`` flows into, or ``None`` if it needs none."""
    if not t.needs_grad:
        return None
    if t.view_base is not None and t.view_version != t.storage_ref.version and t.view_base.needs_grad:
        from .function import regenerate_view_grad_fn
        regenerate_view_grad_fn(t)
    fn = t.raw_grad_fn
    if fn is not None:
        return (fn, t.output_nr)
    if t.view_base is not None and t.view_base.needs_grad:
        # a view without history of a base that requires grad (made under no_grad, or before
        # the base required grad): torch gives it no accumulator, its gradient goes nowhere
        return (_Discard(), 0)
    return (grad_accumulator(t), 0)


class _Discard(Node):
    """Where the gradient of a view without history of a base requiring grad goes: nowhere
    (one per edge, so ``autograd.grad`` finds such a view unused, as torch's)."""

    __slots__ = ()
    name = "Discard"

    def __init__(self):
        self.next_edges = ()
        self._out_meta = None
        self._retained = None

    def apply(self, grads):
        return ()


def edge_of_source(var, t, edge="__edge") -> list:
    """Source lines binding ``var`` to ``edge_of(t)`` without its frame in the common cases (no
    grad needed; a non-view with a ``grad_fn``; a non-view leaf whose accumulator exists), for
    the autograd entries generated per op (recorded on every differentiable call); any other
    tensor (a view, whose history may need regenerating; a leaf's first use) calls ``edge``,
    the namespace's name for ``edge_of``. ``t`` is a source name."""
    return [f"if not {t}.needs_grad:",
            f"    {var} = None",
            f"elif {t}.view_base is not None:",
            f"    {var} = {edge}({t})",
            f"elif {t}.raw_grad_fn is not None:",
            f"    {var} = ({t}.raw_grad_fn, {t}.output_nr)",
            f"elif {t}.accumulator is not None:",
            f"    {var} = ({t}.accumulator, 0)",
            "else:",
            f"    {var} = {edge}({t})"]


def _topo(roots):
    """Nodes reachable from ``roots`` with, for each, how many edges point at it."""
    deps: dict = {}
    stack = list(dict.fromkeys(r for r in roots if r is not None))
    roots_seen = set(stack)   # nodes hash by identity
    while stack:
        for e in stack.pop().next_edges:
            if e is not None:
                nxt = e[0]
                if nxt in deps:
                    deps[nxt] += 1
                else:   # first edge into nxt: walk it once (unless it is a root, walked already)
                    deps[nxt] = 1
                    if nxt not in roots_seen:
                        stack.append(nxt)
    return deps


def _leaf_edges(edges, n) -> bool:
    """``edges`` (``n`` of them, 1 or 2) lead to distinct leaves' AccumulateGrad nodes (or
    nowhere)."""
    e0 = edges[0]
    if e0 is not None and (e0[0].__class__ is not AccumulateGrad or e0[1] != 0):
        return False
    if n == 1:
        return e0 is not None
    e1 = edges[1]
    if e1 is None:
        return e0 is not None
    return e1[0].__class__ is AccumulateGrad and e1[1] == 0 and (e0 is None or e0[0] is not e1[0])


def _distinct_leaf_edges(edges) -> bool:
    """Every edge of ``edges`` (any number) leads to a leaf's AccumulateGrad node (output 0) or
    nowhere, no leaf twice, at least one leaf: the graph of a node whose inputs are all leaves
    (a compiled function's one node, ``CompiledFunctionBackward``, with an edge per parameter)."""
    seen = set()     # (nodes hash by identity)
    for e in edges:
        if e is not None:
            a = e[0]
            if a.__class__ is not AccumulateGrad or e[1] != 0 or a in seen:
                return False
            seen.add(a)
    return bool(seen)


def backward_root(node, nr, g, keep_graph=False):
    """``Tensor.backward()`` of one root: ``run_backward([(node, nr)], [g], keep_graph=...)``.
    ``g`` is handed over (no one else holds it), so a leaf may own it as its ``.grad``."""
    edges = node.next_edges
    n = len(edges)
    if node.__class__ is not AccumulateGrad and (
            _leaf_edges(edges, n) if n == 1 or n == 2 else n > 2 and _distinct_leaf_edges(edges)):
        # one node whose inputs are distinct leaves (y = f(x) or f(x, w); a compiled training
        # step's loss, an edge per parameter; y.backward()): _walk's steps for this graph,
        # without its bookkeeping (dependency counts, pending slots)
        ret = node._retained
        # one gradient per output of the node (None but the root's), as _walk gives (every
        # node but AccumulateGrad has its _out_meta tuple)
        m = node._out_meta
        grads = (g,) if nr == 0 and len(m) == 1 else tuple(g if i == nr else None
                                                           for i in range(len(m)))
        del g
        with _GRAD_OFF:
            in_grads = node.apply(grads) if ret is None else _apply_hooked(node, ret, grads)
            grads = None
            if not keep_graph:
                node.release()
            if n == 1:
                ig = in_grads[0]
                in_grads = None
                if ig is not None:
                    # only this frame holds ig: the leaf may own it (see _walk; counted before
                    # the call, where ig on the stack would count once more)
                    owned = sys.getrefcount(ig) <= 2
                    edges[0][0].accumulate(ig, owned)
                return
            if n > 2:
                # _walk's order: the leaves' nodes run in edge order (torch's), each gradient
                # owned when no other leaf's slot holds it too
                gs = list(in_grads[:n])   # (_walk's zip: a gradient beyond the edges: dropped)
                in_grads = None
                for i, e in enumerate(edges):
                    if e is None and i < len(gs):
                        gs[i] = None      # a gradient nobody takes: dropped before any is owned
                for i in range(len(gs)):
                    g = gs[i]
                    if g is not None:
                        gs[i] = None
                        owned = sys.getrefcount(g) <= 2      # (as for one leaf)
                        edges[i][0].accumulate(g, owned)
                        g = None
                return
            g0, g1 = in_grads if len(in_grads) == 2 else (tuple(in_grads) + (None, None))[:2]
            in_grads = None
            e0, e1 = edges
            if e0 is None:
                g0 = None   # a gradient nobody takes: dropped first, so the other may be owned
            if e1 is None:
                g1 = None
            if g0 is not None:
                # a gradient given to both leaves (add's) is copied by the first, owned by the
                # second
                owned = sys.getrefcount(g0) <= 2
                e0[0].accumulate(g0, owned)
                g0 = None
            if g1 is not None:
                owned = sys.getrefcount(g1) <= 2
                e1[0].accumulate(g1, owned)
        return
    deps: dict = {}   # _topo((node,)), inlined: one root, so no root bookkeeping
    stack = [node]
    while stack:
        for e in stack.pop().next_edges:
            if e is not None:
                nxt = e[0]
                if nxt in deps:
                    deps[nxt] += 1
                else:
                    deps[nxt] = 1
                    stack.append(nxt)
    pending = {node: g if nr == 0 else {nr: g}}   # (_walk's two forms of a slot)
    del g
    with _GRAD_OFF:
        _walk([node] if node not in deps else [], pending, deps, keep_graph, False)


_FUNCTION_NODE = None   # autograd.function.FunctionNode, read on the first walk (_function_node)


def _function_node():
    global _FUNCTION_NODE
    from .function import FunctionNode   # (that module imports this one)
    _FUNCTION_NODE = FunctionNode
    return FunctionNode


def _leaves_first_in_edge_order(ready, base) -> None:
    """``ready[base:]`` became ready in edge order when one node ran: put the leaves'
    AccumulateGrad nodes on top, so they run next and in edge order (``ready`` is popped from
    the end), the other nodes below in the order they had. torch's ready queue runs an
    AccumulateGrad before any other node (its priority is the highest) and, for the two or
    three leaves of one node, in edge order -- so leaf hooks, ``.grad`` accumulation and
    post-accumulate-grad hooks run in torch's order (``a * b * c``: c, then a, b). With four or
    more leaves on one node torch's order is its heap's tie-breaking; here it stays edge
    order. Only when a node made two or more nodes ready."""
    if len(ready) - base == 2:      # (a binary op's two inputs: a swap, no lists)
        first = ready[base]
        if first.__class__ is AccumulateGrad:   # on top, above the other (a leaf or not)
            ready[base] = ready[base + 1]
            ready[base + 1] = first
        return
    new = ready[base:]
    leaves = [n for n in new if n.__class__ is AccumulateGrad]
    if leaves:
        leaves.reverse()
        ready[base:] = [n for n in new if n.__class__ is not AccumulateGrad] + leaves


def _walk(ready, pending, deps, keep_graph, create_graph):
    """The engine loop of ``backward``: run each node once all its consumers ran, summing the
    gradients that meet, and accumulate into the leaves' ``.grad``.

    ``pending[node]``: the gradients that reached ``node`` so far, a dict output number ->
    gradient, or (what this loop stores for the common case, one gradient of output 0) that
    gradient itself: no dict per edge. Callers may pass either form."""
    AG = AccumulateGrad
    FN = _FUNCTION_NODE if _FUNCTION_NODE is not None else _function_node()
    refcount = sys.getrefcount
    while ready:
        node = ready.pop()
        slot = pending.pop(node, None)
        if slot is not None and slot.__class__ is dict and not slot:
            slot = None   # (an empty dict: no gradient reached the node)
        if node.__class__ is AG:
            if slot is not None:
                g = slot if slot.__class__ is not dict else slot.pop(0, None)
                slot = None
                if g is not None:
                    # only this frame holds g (local + call argument): the leaf may own it as
                    # is instead of a copy (torch's AccumulateGrad "steals" such gradients too)
                    # (counted before the call: as an argument on the stack g counts once more)
                    owned = not create_graph and refcount(g) <= 2
                    node.accumulate(g, owned)
                    g = None
            continue
        if slot is not None or node.always_run:   # slot: at least one gradient reached it
            try:     # set by every node but a few rare ones (no getattr call per node)
                m = node._out_meta
                retained = node._retained
            except AttributeError:
                m = getattr(node, "_out_meta", None)
                retained = getattr(node, "_retained", None)
            if node.__class__ is FN and slot.__class__ is not dict and retained is None and \
                    len(m) == 1 and slot.raw_dtype is m[0][1]:
                # the common node: a built-in formula of one output whose one gradient came
                # in its dtype, no hooks (a FunctionNode is never always_run: slot is that
                # gradient). FunctionNode.apply's first case inlined, called with the slot
                # itself (no gradient tuple built and read back); a result already one gradient
                # per tensor input returned as is, a (tensor, number) call's as apply gives it,
                # any other shaped by FunctionNode.shaped; then FunctionNode.release's steps
                ctx = node.ctx
                in_grads = node.fn(ctx, slot)
                g = slot
                slot = None
                st = node.structure
                n = len(st)
                if in_grads.__class__ is tuple and len(in_grads) == n and n <= 2 and \
                        st[0] == "t":
                    if n == 2 and st[1] != "t":
                        # (x * 3.0: the number's slot has no edge and must get None)
                        in_grads = (in_grads[0],) if st[1] is None and in_grads[1] is None \
                            else node.shaped(in_grads)
                elif n == 1 and in_grads.__class__ is g.__class__ and st[0] == "t":
                    # one tensor input and a bare gradient (neg, relu, sum): what shaped
                    # gives it, without its frame
                    in_grads = (in_grads,)
                else:
                    in_grads = node.shaped(in_grads)
                if not keep_graph and ctx._saved:
                    ctx._released = True
                    ctx._saved = ()
            else:
                if slot is None:
                    grads = (None,) * (len(m) if m else 1)
                elif slot.__class__ is not dict:   # output 0's gradient alone
                    grads = (slot,) if m is None or len(m) == 1 else \
                        (slot,) + (None,) * (len(m) - 1)
                elif (m is None or len(m) == 1) and len(slot) == 1 and 0 in slot:
                    grads = (slot[0],)
                else:
                    n_all = len(m) if m else 1
                    n_out = max(slot) + 1
                    if n_out > n_all:  # noqa: PLR1730 - no max() call per node
                        n_all = n_out
                    grads = tuple(slot.get(i) for i in range(n_all))
                slot = None
                in_grads = node.apply(grads) if retained is None else \
                    _apply_hooked(node, retained, grads)
                grads = None
                if not keep_graph:
                    node.release()
            base = len(ready)
            for e, g in zip(node.next_edges, in_grads):
                if e is None:
                    continue
                nxt = e[0]
                if g is not None:
                    nr = e[1]
                    s = pending.get(nxt)
                    if s is None:
                        pending[nxt] = g if nr == 0 else {nr: g}
                    elif s.__class__ is not dict:   # output 0's gradient so far
                        pending[nxt] = s + g if nr == 0 else {0: s, nr: g}
                    else:
                        s[nr] = g if nr not in s else s[nr] + g
                    s = None
                c = deps[nxt] - 1
                deps[nxt] = c
                if not c:
                    ready.append(nxt)
            if len(ready) - base > 1:
                _leaves_first_in_edge_order(ready, base)
            in_grads = g = None   # the pending slots hold the gradients now
        else:
            if not keep_graph:
                node.release()
            for e in node.next_edges:
                if e is not None:
                    nxt = e[0]
                    c = deps[nxt] - 1
                    deps[nxt] = c
                    if not c:
                        ready.append(nxt)


def run_backward(roots, grad_roots, *, keep_graph=False, create_graph=False, inputs=None,
                 allow_unused=False, accumulate_inputs=False):
    """Core engine. ``roots``: list of edges ``(node, nr)``; ``grad_roots``: their gradients.

    Without ``inputs``: accumulates into ``.grad`` of every reachable leaf (``backward()``).
    With ``inputs`` (a list of tensors) only the nodes on a path from the roots to the inputs'
    nodes run, as torch's engine (``_reach``): a branch that leads elsewhere runs neither its
    formula nor its hooks. ``accumulate_inputs`` (``backward(inputs=...)``): the inputs' own
    nodes run too -- a leaf's AccumulateGrad (its hooks, ``.grad``, its post-accumulate hooks),
    a non-leaf's ``grad_fn`` (its hooks and ``retain_grad`` store: the caller retains its grad);
    returns None. Otherwise (``autograd.grad``) returns the inputs' gradients, each captured
    where it reaches the input's node: after that node's tensor hooks and ``retain_grad`` store
    when the node is not needed to reach another input (the node itself does not run), before
    them when it is (torch's rule: the hooks then run with the node)."""
    capture = {}
    root_nodes = [e[0] for e in roots if e is not None]
    deps = _topo(root_nodes)
    pending: dict = {}
    for e, g in zip(roots, grad_roots):
        if e is None:
            continue
        slot = pending.setdefault(e[0], {})
        slot[e[1]] = g if e[1] not in slot else slot[e[1]] + g
    if len(root_nodes) == 1:   # one root (y.backward()): no dedup needed
        ready = root_nodes if deps.get(root_nodes[0], 0) == 0 else []
    else:
        ready = [n for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0]
    if inputs is None:
        grad_roots = g = slot = None   # only pending holds the root gradients now
        with (_GRAD_OFF if not create_graph else _gm.set_grad_enabled(True)):
            _walk(ready, pending, deps, keep_graph, create_graph)
        return None
    targets: dict = {}   # id(node) -> {output nr: [input indexes]}
    target_nodes = []
    for i, t in enumerate(inputs):
        if not isinstance(t, TensorBase) or not t.requires_grad:
            raise RuntimeError(f"autograd.grad: input {i} does not require grad")
        e = edge_of(t)
        by_nr = targets.get(id(e[0]))
        if by_nr is None:
            by_nr = targets[id(e[0])] = {}
            target_nodes.append(e[0])
        by_nr.setdefault(e[1], []).append(i)
    reach = _reach(root_nodes, set(target_nodes))
    # torch runs a lone root's node even when no input lies below it (its hooks run)
    lone_root = root_nodes[0] if len(roots) == 1 and root_nodes else None
    if lone_root is not None:
        reach[lone_root] = True
    ready = [n for n in ready if reach.get(n)]
    with (_GRAD_OFF if not create_graph else _gm.set_grad_enabled(True)):
        while ready:
            node = ready.pop()
            slot = pending.pop(node, {})
            is_ag = node.__class__ is AccumulateGrad
            m = getattr(node, "_out_meta", None)   # the node's number of outputs
            n_all = len(m) if m else 1
            if slot:
                n_out = max(slot) + 1
                if n_out > n_all:  # noqa: PLR1730 - no max() call per node
                    n_all = n_out
            grads = (slot.get(0),) if n_all == 1 else tuple(slot.get(i) for i in range(n_all))
            slot = None
            retained = None if is_ag else getattr(node, "_retained", None)
            by_nr = targets.get(id(node)) if not accumulate_inputs else None
            if by_nr is not None:
                # autograd.grad's input: needed to reach another input (or the lone root, run
                # as torch runs it) -- capture before the node's hooks, which run with it;
                # else run the tensor hooks and retain_grad's store, capture, and stop here
                needed = node is lone_root or (not is_ag and any(
                    e is not None and reach.get(e[0]) for e in node.next_edges))
                if not needed:
                    if is_ag:
                        hooks = node.hooks
                        if hooks and grads[0] is not None:
                            grads = (run_hooks(hooks, grads[0]),)
                    elif retained is not None:
                        grads = _keep_retained(retained, grads)
                for nr, idx in by_nr.items():
                    g = grads[nr] if nr < len(grads) else None
                    if g is not None:
                        for i in idx:
                            capture[i] = g if i not in capture else capture[i] + g
                if not needed:
                    continue
            if is_ag:
                if accumulate_inputs and grads[0] is not None:
                    g = grads[0]
                    grads = None
                    # only this frame holds g (local + call argument): the leaf may own it
                    owned = not create_graph and _getrefcount(g) <= 2
                    node.accumulate(g, owned)
                    g = None
                continue
            for g in grads:
                if g is not None or node.always_run:
                    in_grads = node.apply(grads) if retained is None else \
                        _apply_hooked(node, retained, grads)
                    break
            else:
                in_grads = (None,) * len(node.next_edges)
            if not keep_graph:
                _release(node)
            base = len(ready)
            for e, g in zip(node.next_edges, in_grads):
                if e is None:
                    continue
                nxt, nr = e
                if not reach.get(nxt):
                    continue    # leads to no input: never runs (torch's engine skips it)
                if g is not None:
                    s = pending.setdefault(nxt, {})
                    s[nr] = g if nr not in s else s[nr] + g
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
            if len(ready) - base > 1:
                _leaves_first_in_edge_order(ready, base)
            in_grads = g = grads = None   # the pending slots hold the gradients now
    if accumulate_inputs:
        return None
    out = []
    for i, t in enumerate(inputs):
        g = capture.get(i)
        if g is None and not allow_unused:
            raise RuntimeError(
                f"autograd.grad: input {i} was not used in the graph; pass allow_unused=True "
                f"to get None for it")
        if g is not None:
            if g.raw_dtype is not t.raw_dtype:
                g = g.to(t.raw_dtype)   # a formula's gradient takes its input's dtype (torch)
            if not create_graph:
                g = g.detach()
        out.append(g)
    return tuple(out)


def _reach(roots, targets) -> dict:
    """For each node reachable from ``roots``: True when it is one of ``targets`` or one of them
    lies below it (torch's ``exec_info``: the nodes the engine runs for ``inputs``). Iterative
    depth-first walk, each node once (a deep graph does not hit the recursion limit)."""
    reach: dict = {}
    for r in roots:
        if r in reach:
            continue
        reach[r] = r in targets
        stack = [(r, iter(r.next_edges))]
        while stack:
            node, it = stack[-1]
            for e in it:
                if e is None:
                    continue
                nxt = e[0]
                seen = reach.get(nxt)
                if seen is None:
                    reach[nxt] = nxt in targets
                    stack.append((nxt, iter(nxt.next_edges)))
                    break
                if seen:
                    reach[node] = True
            else:
                stack.pop()
                if stack and reach[node]:
                    reach[stack[-1][0]] = True
    return reach


class OutputHooks:
    """What runs on the gradient of one output of a node before the node's backward: the
    ``Tensor.register_hook`` functions of that (non-leaf) tensor, in order, then
    ``retain_grad``'s store into its ``.grad`` (torch runs that one last). Kept in the node's
    ``_retained`` dict by output number."""

    __slots__ = ("ref", "hooks")

    def __init__(self):
        self.ref = None        # weakref to the tensor that retains its grad
        self.hooks = []


def output_hooks(node, nr) -> OutputHooks:
    """The node's ``OutputHooks`` of output ``nr`` (created on first use)."""
    return _retained_entry(node, nr, OutputHooks)


def _retained_entry(node, key, make):
    """``node._retained[key]`` (output ``nr``'s hooks, or the node's own under None), made by
    ``make()`` on first use."""
    if getattr(node, "_retained", None) is None:
        node._retained = {}
    h = node._retained.get(key)
    if h is None:
        h = node._retained[key] = make()
    return h


def move_retained_grad(t, old, old_nr) -> None:
    """After ``t``'s history changed from output ``old_nr`` of node ``old`` to its current
    ``grad_fn`` (an in-place write rebased it, or a view's history was regenerated from its
    written base): ``retain_grad()``'s store moves to the new node, so ``t.grad`` is the gradient
    of the tensor's current value; the ``register_hook`` functions stay on the old node (they see
    the gradient of the value they were registered on). torch's
    ``update_tensor_hooks_on_new_gradfn``. Callers check ``t.retains_grad_flag`` first (the
    common write has nothing to move)."""
    new = t.raw_grad_fn
    if old is None or new is None or new is old and t.output_nr == old_nr:
        return
    ret = getattr(old, "_retained", None)
    entry = ret.get(old_nr) if ret else None
    if entry is None or entry.ref is None or entry.ref() is not t:
        return
    output_hooks(new, t.output_nr).ref = entry.ref
    entry.ref = None


def run_post_hooks(post, v) -> None:
    """The leaf ``v``'s post-accumulate-grad hooks, in order, each called with ``v`` (its
    ``.grad`` just accumulated), as torch's: a hook returns None or ``v`` itself (``lambda p:
    p.add_(p.grad, alpha=-lr)``, torch's own example); another tensor is a RuntimeError,
    anything else a TypeError (torch's words)."""
    for fn in list(post):
        r = fn(v)
        if r is not None and r is not v:
            if not isinstance(r, TensorBase):
                raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")


def post_accumulate(v) -> None:
    """Run ``v``'s post-accumulate-grad hooks if it has any (``backward(inputs=...)``, which
    accumulates into the named tensors itself rather than through their nodes)."""
    acc = v.accumulator
    hooks = acc.hooks if acc is not None else None
    if hooks and hooks.post:
        run_post_hooks(hooks.post, v)


def run_hooks(hooks, g):
    """``g`` through ``hooks`` in order: a hook returning a tensor replaces it (torch's rule)."""
    for fn in list(hooks):
        r = fn(g)
        if r is not None:
            _check_hook_result(fn, g, r)
            g = r
    return g


def _check_hook_result(fn, g, r):
    """torch's check of a tensor hook's replacement gradient (``check_variable_result``): a
    Tensor (else TypeError) of the dtype, device and shape of the gradient it was given (else
    RuntimeError, naming the hook as torch does)."""
    name = getattr(fn, "__name__", None)
    name = name if isinstance(name, str) else "<unknown>"
    if not isinstance(r, TensorBase):
        raise TypeError(
            f"expected Tensor, but hook '{name}' returned '{type(r).__name__}'; a tensor hook "
            f"(register_hook) must return a Tensor or None")
    if r.raw_dtype is not g.raw_dtype or r.device != g.device:
        was, got = g.type(), r.type()
        if r.device != g.device:
            was, got = f"{was} on {g.device}", f"{got} on {r.device}"
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {was} got {got}); a tensor hook "
            f"(register_hook) must return a gradient of the dtype and device it was given "
            f"(cast it back, e.g. with .to(grad.dtype))")
    if r.raw_shape != g.raw_shape:
        raise RuntimeError(
            f"hook '{name}' has changed the size of value (was {list(g.raw_shape)} got "
            f"{list(r.raw_shape)}); a tensor hook (register_hook) must return a gradient of "
            f"the shape it was given")


def _keep_retained(retained, grads):
    """Run the output hooks (``Tensor.register_hook``) on the gradients reaching a node, then
    ``Tensor.retain_grad``'s accumulation into non-leaf ``.grad``; returns the gradients."""
    for nr, entry in list(retained.items()):
        if nr is None or nr >= len(grads) or grads[nr] is None:
            continue    # (None: the node's own hooks, NodeHooks; _apply_hooked runs them)
        if entry.hooks:
            g = run_hooks(entry.hooks, grads[nr])
            grads = grads[:nr] + (g,) + grads[nr + 1:]
        t = entry.ref() if entry.ref is not None else None
        if t is None or t.raw_grad_fn is None:
            continue
        # with create_graph (grad mode on) .grad keeps the gradient's history, as torch's
        # retain_grad hook (a backward through it gives the second derivative)
        g = grads[nr] if _gm.is_grad_enabled() else grads[nr].detach()
        if g.raw_dtype is not t.raw_dtype:
            g = g.to(t.raw_dtype)
        # (unchecked: after a shape-changing in-place op t's shape is not the old history's)
        _tb.set_grad(t, g.clone() if t.raw_grad is None else t.raw_grad + g)
    return grads


class NodeHooks:
    """A node's own hooks (``Node.register_prehook`` / ``register_hook``): ``pre`` run on its
    gradients before it computes, ``post`` after. Kept in the node's ``_retained`` dict under
    key ``None`` (a leaf's AccumulateGrad: in its ``LeafHooks.node``)."""

    __slots__ = ("pre", "post")

    def __init__(self):
        self.pre = []
        self.post = []


class _NodeHookHandle:
    """A node hook's handle: ``remove()`` unregisters it (idempotent)."""

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks, fn):
        if not callable(fn):
            raise TypeError(f"register_hook/register_prehook: expected a callable hook, got "
                            f"{type(fn).__name__}")
        hooks.append(fn)
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


def _node_hooks(node) -> NodeHooks:
    """The node's ``NodeHooks`` (made on first use)."""
    if node.__class__ is AccumulateGrad:
        if node.hooks is None:
            node.hooks = LeafHooks()
        if node.hooks.node is None:
            node.hooks.node = NodeHooks()
        return node.hooks.node
    return _retained_entry(node, None, NodeHooks)


def _apply_hooked(node, retained, grads):
    """``node.apply(grads)`` for a node with output hooks or hooks of its own, in torch's order:
    the output tensors' hooks and ``retain_grad`` store, the node's pre-hooks, the node, its
    post-hooks."""
    grads = _keep_retained(retained, grads)
    nh = retained.get(None)
    if nh is None:
        return node.apply(grads)
    if nh.pre:
        grads = run_node_prehooks(nh.pre, grads)
    in_grads = node.apply(grads)
    if nh.post:
        in_grads = run_node_posthooks(nh.post, tuple(in_grads), grads)
    return in_grads


def _hook_result(fn, r, old):
    """A node hook's result ``r`` checked against the values ``old`` it may replace (torch's
    checks and words); ``old`` when ``r`` is None."""
    if r is None:
        return old
    name = getattr(fn, "__name__", None)
    name = name if isinstance(name, str) else "<unknown>"
    if not isinstance(r, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(r).__name__}'")
    if len(r) != len(old):
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got "
                           f"{len(r)}, but expected {len(old)})")
    for v, o in zip(r, old):
        if v is not None and not isinstance(v, TensorBase):
            raise TypeError(f"expected Variable or None (got {type(v).__name__})")
        if v is not None and o is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
    return r


def run_node_prehooks(hooks, grads):
    """``grads`` (a node's gradient outputs) through its pre-hooks in order."""
    for fn in list(hooks):
        grads = _hook_result(fn, fn(grads), grads)
    return grads


def run_node_posthooks(hooks, in_grads, grads):
    """A node's computed ``in_grads`` through its post-hooks ``fn(in_grads, grads)`` in order."""
    for fn in list(hooks):
        in_grads = _hook_result(fn, fn(in_grads, grads), in_grads)
    return in_grads


def _release(node):
    rel = getattr(node, "release", None)
    if rel is not None:
        rel()
