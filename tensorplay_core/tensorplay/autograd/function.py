"""``autograd.Function``, the op-level autograd wrapper, and saved-tensor bookkeeping.

Two ways an op becomes differentiable (same model as torch.library):

* an explicit formula (``register_autograd`` for custom ops; the ``backward`` written beside
  each built-in op's forward in ``tensorplay/_ops``): the kernel runs below autograd and one
  ``FunctionNode`` is recorded;
* no formula (CompositeImplicitAutograd): the kernel runs with grad mode on, so the tensorplay
  ops inside it record the graph themselves.
"""

from __future__ import annotations

from . import grad_mode as _gm
from .graph import Node, edge_of


class FunctionCtx:
    """The ``ctx`` of ``setup_context``/``backward`` (same surface as torch's).

    ``save_for_backward(*tensors)``, ``saved_tensors`` (raises ``RuntimeError`` if a saved
    tensor was modified in place since it was saved: torch's version-counter check),
    ``needs_input_grad`` (tuple of bool per forward input), ``mark_non_differentiable``,
    ``set_materialize_grads``; any other attribute can be stored freely.
    """

    def __init__(self):
        self._saved = ()
        self._saved_versions = ()
        self.needs_input_grad = ()
        self._non_diff = set()
        self.materialize_grads = True
        self._op_name = "Function"

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._saved_versions = tuple(t._version if t is not None else None for t in tensors)

    @property
    def saved_tensors(self):
        for i, (t, v) in enumerate(zip(self._saved, self._saved_versions)):
            if t is not None and t._version != v:
                raise RuntimeError(
                    f"autograd ({self._op_name}): one of the tensors saved for backward (index "
                    f"{i}, shape {tuple(t.shape)}) was modified by an in-place operation after it "
                    f"was saved (version {v} -> {t._version}). Clone it before modifying it.")
        return self._saved

    def mark_non_differentiable(self, *tensors):
        self._non_diff.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        pass


class FunctionNode(Node):
    """Graph node that calls a Python backward ``fn(ctx, *grads)``."""

    __slots__ = ("fn", "ctx", "structure", "name")

    def __init__(self, name, fn, ctx, edges, structure, out_meta):
        self.name = name
        self.fn = fn
        self.ctx = ctx
        self.next_edges = edges
        self.structure = structure   # per forward input: None | "t" | ("l", n)
        self._out_meta = out_meta     # per output: (shape, dtype, device) to materialize zeros

    def apply(self, grads):
        from .. import _factories
        if self.ctx.materialize_grads:
            grads = tuple(g if g is not None else _factories.zeros(m[0], dtype=m[1], device=m[2])
                          for g, m in zip(grads, self._out_meta))
        res = self.fn(self.ctx, *grads)
        if not isinstance(res, tuple):
            # a bare gradient, or a list that is the gradient of a single Tensor[] input
            res = (res,) if not isinstance(res, list) or len(self.structure) == 1 else tuple(res)
        if len(res) < len(self.structure):
            res = tuple(res) + (None,) * (len(self.structure) - len(res))
        if len(res) > len(self.structure) and any(r is not None for r in res[len(self.structure):]):
            raise RuntimeError(
                f"{self.name}: backward returned {len(res)} gradients but the forward has "
                f"{len(self.structure)} inputs")
        out = []
        for s, g in zip(self.structure, res):
            if s is None:
                continue
            if s == "t":
                out.append(g)
            else:
                gl = list(g) if g is not None else [None] * s[1]
                out.extend(gl)
        return tuple(out)

    def release(self):
        self.ctx._saved = ()


def _structure_and_edges(values, T):
    """For forward inputs ``values``: the gradient structure and the edges of tensor inputs."""
    structure, edges, needs = [], [], []
    for v in values:
        if isinstance(v, T):
            structure.append("t")
            e = edge_of(v)
            edges.append(e)
            needs.append(e is not None)
        elif isinstance(v, (list, tuple)) and v and any(isinstance(x, T) for x in v):
            structure.append(("l", len(v)))
            es = [edge_of(x) if isinstance(x, T) else None for x in v]
            edges.extend(es)
            needs.append(any(e is not None for e in es))
        else:
            structure.append(None)
            needs.append(False)
    return structure, tuple(edges), tuple(needs)


def attach(name, backward, ctx, values, output, T):
    """Record a FunctionNode for ``output`` (a Tensor or tuple/list of Tensors)."""
    structure, edges, needs = _structure_and_edges(values, T)
    ctx.needs_input_grad = needs
    if not any(needs):
        return output
    outs = output if isinstance(output, (tuple, list)) else (output,)
    meta = tuple((o.shape, o.dtype, o.device) if isinstance(o, T) else ((), None, None)
                 for o in outs)
    node = FunctionNode(name, backward, ctx, edges, structure, meta)
    for i, o in enumerate(outs):
        if isinstance(o, T) and o.dtype.is_floating_point and id(o) not in ctx._non_diff:
            o._set_grad_fn(node, i)
    return output


def make_op_autograd(op):
    """Build the ``autograd`` table entry of ``op`` (see module docstring)."""
    from .. import _dispatch
    from .._tensor import Tensor
    table = op.table
    backward = op._backward
    setup = op._setup_context
    names = op._param_names
    positional = [a.name for a in op.schema.arguments if not a.kwarg_only]
    name = f"{op.name}Backward"

    def autograd_entry(*args, **kwargs):
        tensors = _dispatch.flat_tensors(args, kwargs)
        bkey = _dispatch.backend_key(tensors)
        if not _gm._enabled[0] or backward is None:
            # no grad: straight below autograd. No formula: CompositeImplicitAutograd -- the
            # kernel's own tensorplay ops record the graph.
            if backward is None and op.is_builtin:
                with _gm.no_grad():
                    return table[bkey](*args, **kwargs)
            return table[bkey](*args, **kwargs)
        with _gm.no_grad():
            out = table[bkey](*args, **kwargs)
        values = list(args) + [kwargs.get(n, _missing) for n in names[len(args):]]
        values = [v for v in values if v is not _missing] if len(values) != len(names) else values
        ctx = FunctionCtx()
        ctx._op_name = op.name
        if setup is not None:
            ctx.needs_input_grad = _structure_and_edges(values, Tensor)[2]
            setup(ctx, tuple(values), out)
        return attach(name, backward, ctx, values, out, Tensor)

    return autograd_entry


_missing = object()


class FunctionMeta(type):
    pass


class Function:
    """Custom differentiable function (same surface as ``torch.autograd.Function``).

    Subclass with ``forward(ctx, *args)`` (or ``forward(*args)`` + ``setup_context(ctx, inputs,
    output)``) and ``backward(ctx, *grads)``; call ``YourFn.apply(*args)``. ``backward`` returns
    one gradient per forward argument (``None`` where there is none).
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError("autograd.Function subclasses must implement forward")

    @staticmethod
    def backward(ctx, *grads):  # pragma: no cover - abstract
        raise NotImplementedError("autograd.Function subclasses must implement backward")

    setup_context = None

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        ctx = FunctionCtx()
        ctx._op_name = cls.__name__
        setup = cls.__dict__.get("setup_context")
        if setup is None:
            for base in cls.__mro__[1:]:
                if base is Function:
                    break
                if base.__dict__.get("setup_context") is not None:
                    setup = base.__dict__["setup_context"]
                    break
        with _gm.no_grad():
            if setup is not None:
                out = cls.forward(*args, **kwargs)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        ctx.needs_input_grad = _structure_and_edges(args, Tensor)[2]
        if setup is not None:
            fn = setup.__func__ if isinstance(setup, (staticmethod, classmethod)) else setup
            fn(ctx, args, out)
        if not _gm._enabled[0]:
            return out
        return attach(f"{cls.__name__}Backward", lambda c, *g: cls.backward(c, *g), ctx,
                      args, out, Tensor)
