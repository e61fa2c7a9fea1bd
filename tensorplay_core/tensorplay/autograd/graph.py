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


class Node:
    """A backward function. ``next_edges[i]`` is ``(node, nr)`` or ``None`` for input ``i``;
    ``apply(grads)`` maps output gradients (one per forward output) to input gradients."""

    __slots__ = ("next_edges", "__weakref__", "_out_meta")

    name = "Node"

    def apply(self, grads):  # pragma: no cover - abstract
        raise NotImplementedError

    def name_(self):
        return self.name

    def __repr__(self) -> str:
        return f"<{self.name}>"

    @property
    def next_functions(self):
        """Same shape as ``torch.autograd.graph.Node.next_functions``."""
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)


class AccumulateGrad(Node):
    """Sink for a leaf tensor: adds the incoming gradient to ``variable.grad``."""

    __slots__ = ("variable",)
    name = "AccumulateGrad"

    def __init__(self, variable):
        self.variable = variable
        self.next_edges = ()
        self._out_meta = None

    def apply(self, grads):
        g = grads[0]
        v = self.variable
        if g is None:
            return ()
        with _gm.no_grad():
            if g.shape != v.shape:
                g = g.sum_to_size(v.shape)
            if v.grad is None:
                # a gradient may be shared by several leaves (e.g. add's backward): own a copy
                v.grad = g.detach().clone()
            else:
                v.grad = v.grad + g.detach()
        return ()


    def accumulate(self, g, owned=False):
        """``apply((g,))``; ``owned``: no one else holds ``g``, so when it is a plain dense
        tensor on storage of its own, ``.grad`` takes it without the defensive copy."""
        if owned and self.variable.grad is None and g.__class__ is _TENSOR[0] and \
                g._shape == self.variable._shape and _exclusive(g):
            v = self.variable
            v.grad = g if not (g._requires_grad or g.grad_fn is not None or g._capture is not None
                               or g._accum is not None) else g.detach()
            return ()
        return self.apply((g,))


_TENSOR: list = [None]   # tensorplay.Tensor, once imported


def _getrefcount(x):
    return sys.getrefcount(x) - 1   # minus this call's own argument


def _exclusive(g) -> bool:
    """``g`` is dense, covers its whole storage, and nothing else references that storage
    or its array (refcounts: the storage is held by ``g`` alone; the array by ``g._data`` and,
    when it is the root, by the storage)."""
    st = g._storage
    data = g._data
    if data is None or g._offset != 0 or g._base is not None or g._retains_grad or \
            g.grad is not None or not g.is_contiguous() or \
            st.nbytes != g.numel() * g._dtype.itemsize:
        return False
    # sys.getrefcount also counts its argument and our local name: storage -> g._storage +
    # st + arg; data -> g._data (+ st.root when it is the root array) + data + arg
    return sys.getrefcount(st) <= 3 and \
        sys.getrefcount(data) <= (4 if st.root is data else 3)


def edge_of(t):
    """The edge a gradient for tensor ``t`` flows into, or ``None`` if it needs none."""
    if not t._requires_grad:
        return None
    if t._base is not None and t._vver != t._storage.version and t._base._requires_grad:
        from .function import regenerate_view_grad_fn
        regenerate_view_grad_fn(t)
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    return (t._grad_accumulator(), 0)


def _topo(roots):
    """Nodes reachable from ``roots`` with, for each, how many edges point at it."""
    deps: dict = {}
    seen = set()
    stack = [r for r in roots if r is not None]
    order = []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        order.append(n)
        for e in n.next_edges:
            if e is not None:
                deps[e[0]] = deps.get(e[0], 0) + 1
                if id(e[0]) not in seen:
                    stack.append(e[0])
    return deps


def run_backward(roots, grad_roots, *, keep_graph=False, create_graph=False, inputs=None,
                 allow_unused=False, accumulate=True):
    """Core engine. ``roots``: list of edges ``(node, nr)``; ``grad_roots``: their gradients.

    With ``inputs`` (a list of tensors), returns their gradients instead of accumulating into
    leaves (``autograd.grad``); otherwise accumulates into ``.grad`` of every reachable leaf.
    """
    Tensor = _TENSOR[0]
    if Tensor is None:
        from .._tensor import Tensor
        _TENSOR[0] = Tensor

    capture = {}
    if inputs is not None:
        targets = {}
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor) or not t.requires_grad:
                raise RuntimeError(f"autograd.grad: input {i} does not require grad")
            e = edge_of(t)
            targets.setdefault((id(e[0]), e[1]), []).append(i)
    root_nodes = [e[0] for e in roots if e is not None]
    deps = _topo(root_nodes)
    # pending[node] = list of grads per output index
    pending: dict = {}
    for e, g in zip(roots, grad_roots):
        if e is None:
            continue
        slot = pending.setdefault(e[0], {})
        slot[e[1]] = g if e[1] not in slot else slot[e[1]] + g
    ready = [n for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0]
    with _gm.set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            slot = pending.pop(node, {})
            if inputs is not None:
                for nr, g in slot.items():
                    for i in targets.get((id(node), nr), ()):
                        capture[i] = g if i not in capture else capture[i] + g
                if isinstance(node, AccumulateGrad):
                    continue
            n_out = max(slot) + 1 if slot else 1
            if isinstance(node, AccumulateGrad):
                if accumulate:
                    g = slot.pop(0, None)
                    # only this frame holds g (local + call argument): the leaf may own it as is
                    # instead of a copy (torch's AccumulateGrad "steals" such gradients too)
                    owned = not create_graph and g is not None and _getrefcount(g) <= 2
                    node.accumulate(g, owned)
                    del g
                continue
            grads = tuple(slot.get(i) for i in range(max(n_out, _num_outputs(node))))
            if all(g is None for g in grads):
                in_grads = (None,) * len(node.next_edges)
            else:
                in_grads = node.apply(grads)
            if not keep_graph:
                _release(node)
            for e, g in zip(node.next_edges, in_grads):
                if e is None:
                    continue
                nxt, nr = e
                if g is not None:
                    s = pending.setdefault(nxt, {})
                    s[nr] = g if nr not in s else s[nr] + g
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
            in_grads = g = grads = None   # the pending slots hold the gradients now
    if inputs is not None:
        out = []
        for i, t in enumerate(inputs):
            g = capture.get(i)
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"autograd.grad: input {i} was not used in the graph; pass allow_unused=True "
                    f"to get None for it")
            if g is not None and not create_graph:
                g = g.detach()
            out.append(g)
        return tuple(out)
    return None


def _num_outputs(node) -> int:
    m = getattr(node, "_out_meta", None)
    return len(m) if m else 1


def _release(node):
    rel = getattr(node, "release", None)
    if rel is not None:
        rel()
