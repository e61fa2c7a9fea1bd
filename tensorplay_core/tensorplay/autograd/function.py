"""``autograd.Function``, the op-level autograd wrapper, and saved-tensor bookkeeping.

Two ways an op becomes differentiable (same model as torch.library):

* an explicit formula (``register_autograd`` for custom ops; the ``backward`` written beside
  each built-in op's forward in ``tensorplay/_ops``): the kernel runs below autograd and one
  ``FunctionNode`` is recorded;
* no formula (CompositeImplicitAutograd): the kernel runs with grad mode on, so the tensorplay
  ops inside it record the graph themselves; a custom op's kernel that calls ``.numpy()`` with
  grad mode on left the graph for part of its math, and its outputs get a node whose backward
  raises torch's "no autograd formula was registered" (``KERNEL_MARK``).

A custom op that writes arguments (``Tensor(a!)``; it has no formula) is the second kind, with
``check_written_args`` and ``rebase_written_args`` at its boundary: a written leaf is written as
torch.library's custom ops write it (version bumped, no error), and a written non-leaf whose
history the kernel left as it was (it wrote the array) gets a node whose backward raises.
"""

from __future__ import annotations

import threading

from .. import _codegen, _pytree
from .._ops.views import _CMETA, creation_meta, mark_custom_function_output
from .. import _tensor_base as _tb
from .._registry import setup_context_form
from .._schema import mutation_tag
from .._tensor_base import TensorBase, instance_class, live_views, made_in_no_grad, \
    set_grad_fn, set_history, set_history_source, set_requires_grad, set_view_version
from . import grad_mode as _gm
from .graph import AccumulateGrad as _AccumulateGrad
from .graph import Node, NodeName, edge_of, edge_of_source, move_retained_grad, node_name


_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")


# The kernel mark: while the kernel of a custom op without a formula runs with grad mode on as a
# composite (its tensorplay ops record the graph), the key KERNEL_MARK of the thread's grad-mode
# dict (``grad_mode._state.__dict__``, per thread; the entry reads that dict for the grad flag
# anyway) holds a list that Tensor.numpy() appends to when called there with grad mode on. A
# kernel that went through NumPy left the graph for part of its math, so the gradient its ops
# recorded is incomplete: its outputs then get a NoFormulaBackward node that raises, as torch's
# opaque custom ops do, instead of a silently wrong gradient; and numpy() there works on an
# input that requires grad, as in torch's kernels (which run with grad mode off).
# kernel_gate[0] turns True (for good) when a first mark opens: until then numpy() reads only
# this plain list, not the thread-local.
KERNEL_MARK = "kernel_mark"
kernel_gate = [False]

_dispatch_state = None


def _capturing() -> bool:
    """True while ``tensorplay.compile`` captures in this thread."""
    global _dispatch_state
    st = _dispatch_state
    if st is None:
        from .. import _dispatch      # (imported late: _dispatch's imports reach autograd)
        st = _dispatch_state = _dispatch._state
    return st.mode == "capture"


class FunctionCtx:
    """The ``ctx`` of ``setup_context``/``backward`` (same surface as torch's).

    ``save_for_backward(*tensors)``, ``saved_tensors`` (raises ``RuntimeError`` if a saved
    tensor was modified in place since it was saved: torch's version-counter check),
    ``needs_input_grad`` (tuple of bool per forward input, set before ``forward`` runs),
    ``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``; any other attribute
    can be stored freely. A ``backward`` that does not support double backward is decorated
    with ``once_differentiable`` (this module).
    """

    # Defaults live on the class: a ctx is made per recorded call, and an empty __init__ costs
    # nothing (the instance gets only what setup_context/backward set).
    _saved = ()
    _saved_versions = ()
    needs_input_grad = ()
    _non_diff = frozenset()     # ids of outputs marked non-differentiable
    materialize_grads = True
    _op_name = "Function"

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` (or None) for ``backward``; their versions are recorded so that an
        in-place change before backward is reported by ``saved_tensors``. ``TypeError`` for
        anything else (torch's words; store other values as attributes of ``ctx``)."""
        self._saved = tensors
        n = len(tensors)
        try:
            # the common counts without a generator (recorded on every op call), each version
            # read off the storage (what the ``_version`` property returns, without its frame;
            # an object that is not a tensor takes the generic line below)
            T = _tb._instance_class
            if n == 2 and tensors[0].__class__ is T and tensors[1].__class__ is T:
                a, b = tensors
                self._saved_versions = (a.storage_ref.version, b.storage_ref.version)
            elif n == 1 and tensors[0].__class__ is T:
                self._saved_versions = (tensors[0].storage_ref.version,)
            else:
                self._saved_versions = tuple(t._version if t is not None else None
                                             for t in tensors)
        except AttributeError:   # something without a version (free unless raised)
            for i, t in enumerate(tensors):
                if t is not None and not isinstance(t, TensorBase):
                    self._saved = ()
                    raise TypeError(
                        f"save_for_backward can only save variables, but argument {i} is of "
                        f"type {type(t).__name__} (store other values as attributes of ctx)"
                    ) from None
            raise

    _released = False   # set by release() (class default: no per-ctx cost on the hot path)

    def release(self):
        """Free the saved tensors (the engine calls this after the node ran without
        ``retain_graph``); a later ``saved_tensors`` raises torch's "backward through the graph
        a second time" error. A ctx that saved nothing stays usable (torch does the same)."""
        if self._saved:
            self._released = True
        self._saved = ()

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(_FREED_MSG)
        saved = self._saved
        # (versions read off the storage of plain tensors: the ``_version`` property without its
        # frame; anything else takes the loop)
        if len(saved) == 2:
            # the common count (a binary op's formula, run once per node in every backward):
            # the version check without the generic loop's iterators; a mismatch or a None takes
            # the loop below (which raises, or skips the None)
            a, b = saved
            va, vb = self._saved_versions
            T = _tb._instance_class
            if a.__class__ is T and b.__class__ is T and \
                    a.storage_ref.version == va and b.storage_ref.version == vb:
                return saved
        elif len(saved) == 1:
            a = saved[0]
            if a.__class__ is _tb._instance_class and \
                    a.storage_ref.version == self._saved_versions[0]:
                return saved
        for i, (t, v) in enumerate(zip(saved, self._saved_versions)):
            if t is not None and t._version != v:
                # torch's words first (users search for them), then which tensor and the fix
                raise RuntimeError(
                    f"autograd ({self._op_name}): one of the variables needed for gradient "
                    f"computation has been modified by an inplace operation: the tensor saved "
                    f"for backward at index {i} (shape {tuple(t.shape)}) is at version "
                    f"{t._version}; expected version {v} instead (it was modified by an in-place "
                    f"operation after it was saved). Clone it before modifying it.")
        return self._saved

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient history (e.g. integer indices), as in torch."""
        self._non_diff = self._non_diff.union(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool):
        """With False, ``backward`` receives None (not zeros) for outputs without a gradient."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """Declare inputs that ``forward`` modified in place (and returns): as in torch, their
        version is bumped (so tensors saved before the write are refused in backward, even
        when the write went through ``.numpy()``) and their history is rebased onto this node;
        a view's base gets a ``CopySlices`` history (the Function may then return only that
        view). ``RuntimeError`` for a leaf that requires grad (or a view of one) and for a dirty
        input that is not returned."""
        self._dirty = tensors


def _formula_grads(grads, out_meta, materialize):
    """What a formula's ``backward`` receives (torch's engine): one gradient per output of the
    op, each in its output's dtype; for an output that got no gradient, zeros of its shape, dtype
    and device (``None`` with ``ctx.set_materialize_grads(False)``, and always ``None`` for an
    output that is not a Tensor). ``grads`` may be shorter than ``out_meta``."""
    out = []
    n = len(grads)
    for i, m in enumerate(out_meta):
        g = grads[i] if i < n else None
        if m is None:
            g = None
        elif g is None:
            if materialize:
                from .. import _factories
                g = _factories.zeros(m[0], dtype=m[1], device=m[2])
        elif g.raw_dtype is not m[1]:
            g = g.to(m[1])
        out.append(g)
    return tuple(out)


_T_NONE = ["t", None]   # structure of a (Tensor, Scalar) call: apply's fast path compares to it


class FunctionNode(Node):
    """Graph node that calls a Python backward ``fn(ctx, *grads)`` and returns its result as
    one gradient per edge. The structure of the result is held to torch's rules (see
    ``UserFunctionNode``'s first point); the gradients themselves are not checked here."""

    __slots__ = ("fn", "ctx", "structure", "name")

    def __init__(self, name, fn, ctx, edges, structure, out_meta):
        self.name = name if name.__class__ is NodeName else NodeName(name)
        self.fn = fn
        self.ctx = ctx
        self.next_edges = edges
        self.structure = structure   # per forward input: None | "t" | ("l", n)
        # per output: (shape, dtype, device), or None for an output that is not a Tensor
        self._out_meta = out_meta
        self._retained = None         # set: the engine's getattr on an unset slot costs 0.2 µs

    # (function_node_source below builds a node without this frame: keep the two in step)

    def apply(self, grads):
        """The formula's gradients, one per edge (a tuple). ``UserFunctionNode.apply`` calls it,
        then checks each gradient against its input. ``RuntimeError`` for a result of the wrong
        structure: the checks cost nothing on the fast paths below and one test per argument
        that is not a tensor on the general path."""
        ctx = self.ctx
        # the common case, one output whose gradient came with its dtype, costs one check (and
        # the formula is called with it, no argument tuple built)
        g = grads[0]
        if g is None or len(grads) > 1 or g.raw_dtype is not self._out_meta[0][1]:
            res = self.fn(ctx, *_formula_grads(grads, self._out_meta, ctx.materialize_grads))
        else:
            res = self.fn(ctx, g)
        return self.shaped(res)

    def shaped(self, res):
        """The formula's result ``res`` as one gradient per edge, with torch's checks of its
        structure (``apply``'s second half: the engine, which calls a built-in formula itself,
        calls this for a result that is not already one gradient per tensor input)."""
        structure = self.structure
        if res.__class__ is tuple:
            if len(res) == len(structure):
                for s in structure:
                    if s != "t":
                        break
                else:
                    return res   # one gradient per tensor input: already the engine's shape
                if structure == _T_NONE and res[1] is None:
                    # a tensor and a number (x * 3.0): the number's slot has no edge (what the
                    # general path below gives, without its loop)
                    return (res[0],)
        elif len(structure) == 1 and structure[0] == "t" and not isinstance(res, list):
            return (res,)   # one tensor input, a bare gradient: what the general path gives
        # the general path, with torch's checks of the result's structure (PyNode)
        n = len(structure)
        if not isinstance(res, tuple):
            # a bare gradient, or a list that is the gradient of a single Tensor[] input
            res = (res,) if not isinstance(res, list) or n == 1 else tuple(res)
        if len(res) < n:
            res = tuple(res) + (None,) * (n - len(res))
        elif len(res) > n and any(r is not None for r in res[n:]):
            raise RuntimeError(
                f"function {self.name} returned an incorrect number of gradients (expected {n}, "
                f"got {len(res)})")
        out = []
        for s, g in zip(structure, res):
            if s is None:
                # torch's PyNode: an argument that is not a tensor (a number, a None, a list of
                # numbers) gets no gradient; None (or a list of Nones) is the only valid answer
                if g is not None and not (isinstance(g, (list, tuple)) and
                                          all(x is None for x in g)):
                    _structure_error(self.name, structure, res)
            elif s == "t":
                out.append(g)
            elif g is None:
                out.extend((None,) * s[1])
            elif isinstance(g, (list, tuple)) and len(g) == s[1]:
                out.extend(g)
            else:
                _structure_error(self.name, structure, res)
        return tuple(out)

    def release(self):
        ctx = self.ctx   # FunctionCtx.release, inlined (once per node in every backward)
        if ctx._saved:
            ctx._released = True
            ctx._saved = ()


class UserFunctionNode(FunctionNode):
    """``FunctionNode`` of a formula written by a user (a custom op's ``register_autograd``, an
    ``autograd.Function``): its gradients are validated as torch's engine validates every node's
    (``validate_outputs``, engine.cpp). Built-in formulas are right by construction and keep
    ``FunctionNode``, which checks only the structure of the result (the first point below).

    Per gradient ``i`` (one per tensor input, in the order of ``next_edges``):

    * the result's structure: a gradient for an argument that is not a tensor must be None
      (``RuntimeError``, as torch's PyNode), a ``Tensor[]`` argument's gradient is a list of one
      gradient (or None) per element, extra gradients are allowed only when None;
    * no check where the input needs no gradient (no edge) or the gradient is None (stays None);
    * a gradient that is not a tensor: ``RuntimeError``;
    * shape: when the input's shape is expandable to the gradient's (torch's
      ``at::is_expandable_to(input, grad)``: no more dimensions, each trailing one equal or 1) the
      gradient is summed to the input's shape (``at::sum_to``); otherwise ``RuntimeError:
      Function <name> returned an invalid gradient at index <i> - got [..] but expected shape
      compatible with [..]``;
    * dtype: cast to the input's (torch casts every real dtype);
    * device: a 0-d gradient is moved to the input's device, any other is refused (``... -
      expected device cpu but got meta``).

    The input's shape, dtype and device are read where torch reads its ``InputMetadata``: off the
    node the edge leads to (an ``AccumulateGrad``'s leaf, another node's ``_out_meta``), so
    recording costs nothing more; the common case costs one comparison of shape, dtype and
    device per gradient.

    Runs even when no gradient reached it (``always_run``, torch's engine): ``backward`` then
    gets zeros, or None after ``ctx.set_materialize_grads(False)``."""

    __slots__ = ()
    always_run = True

    def apply(self, grads):
        # FunctionNode.apply: the formula called and its result shaped (and checked) as one
        # gradient per edge; a frame more than inlining it, paid by user formulas only
        out = FunctionNode.apply(self, grads)
        edges = self.next_edges
        if len(out) == 1:
            # one tensor input (the common case): the checks without the loop
            g = out[0]
            e = edges[0]
            if g is None or e is None:
                return out   # stays None; an input that needs no gradient is not checked (torch)
            node = e[0]
            try:
                if node.__class__ is _AccumulateGrad:
                    v = node.variable
                    if g.raw_shape == v.raw_shape and g.raw_dtype is v.raw_dtype and \
                            g.raw_device is v.raw_device:
                        return out
                else:
                    m = node._out_meta[e[1]]
                    if g.raw_shape == m[0] and g.raw_dtype is m[1] and g.raw_device is m[2]:
                        return out
            except AttributeError:   # not a tensor: _fix says so
                pass
            return (self._fix(0, g, e),)
        fixed = None
        for i, g in enumerate(out):
            e = edges[i]
            if g is None or e is None:
                continue
            node = e[0]
            try:
                if node.__class__ is _AccumulateGrad:
                    v = node.variable
                    if g.raw_shape == v.raw_shape and g.raw_dtype is v.raw_dtype and \
                            g.raw_device is v.raw_device:
                        continue
                else:
                    m = node._out_meta[e[1]]
                    if g.raw_shape == m[0] and g.raw_dtype is m[1] and g.raw_device is m[2]:
                        continue
            except AttributeError:
                pass
            if fixed is None:
                fixed = list(out)
            fixed[i] = self._fix(i, g, e)
        if fixed is not None:
            return tuple(fixed)
        return out

    def _fix(self, i, g, e):
        """Gradient ``i``, ``g``, that does not match its input (the input edge ``e`` leads to)
        in shape, dtype or device: reduced and cast, or ``RuntimeError``."""
        if not isinstance(g, TensorBase):
            raise RuntimeError(
                f"Function {self.name} returned an invalid gradient at index {i} - expected a "
                f"Tensor or None (got {type(g).__name__})")
        node = e[0]
        if node.__class__ is _AccumulateGrad:
            v = node.variable
            meta = (v.raw_shape, v.raw_dtype, v.raw_device)
        else:
            meta = node._out_meta[e[1]]
        return _conform(self.name, i, g, meta)


def _structure_error(name, structure, res):
    """Raise the ``RuntimeError`` for the first slot of the formula's result ``res`` (already
    one entry per forward input) that does not fit ``structure``, as torch's PyNode words it:
    a gradient for an argument that is not a tensor, or a ``Tensor[]`` argument's gradient
    that is not a list of one gradient (or None) per element. Off the hot path: the loop in
    ``FunctionNode.apply`` calls it only once it has seen such a slot."""
    for pos, (s, g) in enumerate(zip(structure, res), 1):
        if s is None:
            if g is not None and not (isinstance(g, (list, tuple)) and
                                      all(x is None for x in g)):
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position "
                    f"{pos}, but the corresponding forward input was not a Tensor")
        elif s != "t" and g is not None and not (isinstance(g, (list, tuple)) and
                                                  len(g) == s[1]):
            got = f"{len(g)} gradients" if isinstance(g, (list, tuple)) else type(g).__name__
            raise RuntimeError(
                f"function {name} returned an invalid gradient at position {pos}: the forward "
                f"input is a list of {s[1]} tensors, so its gradient is a list of {s[1]} "
                f"gradients (or None), got {got}")
    raise AssertionError("no slot of the result breaks the structure")   # pragma: no cover


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _conform(name, i, g, meta):
    """Gradient ``i`` of node ``name`` made to fit its input's ``(shape, dtype, device)``
    ``meta``, or ``RuntimeError``: torch's ``InputMetadata::maybe_reduce`` (shape), then the
    dtype cast, then the device check of ``validate_outputs``, in that order."""
    shape, dtype, device = meta
    gshape = g.raw_shape
    if gshape != shape:
        nd = len(shape)
        lead = len(gshape) - nd
        # is_expandable_to(input shape, gradient shape): no more dims, trailing ones equal or 1
        if lead < 0 or any(s != 1 and s != t for s, t in zip(shape, gshape[lead:])):
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {i} - got "
                f"{_shape_str(gshape)} but expected shape compatible with {_shape_str(shape)}")
        g = g.sum_to_size(shape)   # at::sum_to: the leading dims and the input's 1s summed
    if g.raw_dtype is not dtype:
        g = g.to(dtype)
    if g.raw_device is not device and g.raw_device != device:
        if g.dim() != 0:
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {i} - expected device "
                f"{device} but got {g.raw_device}")
        g = g.to(device)
    return g


def function_node_source(var, name, fn, ctx, edges, structure, out_meta) -> list:
    """Source lines binding ``var`` to ``FunctionNode(name, fn, ctx, edges, structure,
    out_meta)`` without its ``__init__`` frame (one node per recorded op call), for the autograd
    entries generated per op; arguments are source expressions, each evaluated once, and the
    namespace binds ``__new`` to ``object.__new__`` and ``__FN`` to ``FunctionNode`` (or
    ``UserFunctionNode`` for a user's formula: the same fields)."""
    return [f"{var} = __new(__FN)",
            f"{var}.name = {name}",
            f"{var}.fn = {fn}",
            f"{var}.ctx = {ctx}",
            f"{var}.next_edges = {edges}",
            f"{var}.structure = {structure}",
            f"{var}._out_meta = {out_meta}",
            f"{var}._retained = None"]


def _structure_and_edges(values, T, lists=True):
    """For forward inputs ``values``: the gradient structure and the edges of tensor inputs.
    ``lists``: a list or tuple of tensors is an input too (an op's ``Tensor[]`` argument);
    False for ``autograd.Function``, whose inputs are its direct tensor arguments only
    (torch's ``THPFunction_apply``)."""
    structure, edges, needs = [], [], []
    for v in values:
        if isinstance(v, T):
            structure.append("t")
            e = edge_of(v)
            edges.append(e)
            needs.append(e is not None)
        elif lists and isinstance(v, (list, tuple)) and v and any(isinstance(x, T) for x in v):
            structure.append(("l", len(v)))
            es = [edge_of(x) if isinstance(x, T) else None for x in v]
            edges.extend(es)
            needs.append(any(e is not None for e in es))
        else:
            structure.append(None)
            needs.append(False)
    return structure, tuple(edges), tuple(needs)


def attach(name, backward, ctx, values, output, T, se=None, node_cls=FunctionNode):
    """Record a ``node_cls`` node (a ``FunctionNode``; ``UserFunctionNode`` for a user's formula)
    for ``output`` (a Tensor or tuple/list of Tensors). ``se``: ``_structure_and_edges(values,
    T)`` when the caller has it already."""
    structure, edges, needs = se if se is not None else _structure_and_edges(values, T)
    ctx.needs_input_grad = needs
    if not any(needs):
        return output
    if isinstance(output, T):   # one output (the common case): no generator
        outs = (output,)
        meta = ((output.raw_shape, output.raw_dtype, output.raw_device),)
    else:
        outs = output if isinstance(output, (tuple, list)) else (output,)
        if outs.__class__ is tuple and backward is not None and \
                any(o.__class__ is list for o in outs):
            # a Tensor[] output beside others ("-> (Tensor[], Tensor)"): each element is an
            # output of the node; the formula gets that output's gradient as a list
            outs, backward = _grouped_outputs(outs, backward)
        meta = tuple((o.raw_shape, o.raw_dtype, o.raw_device) if isinstance(o, T) else None
                     for o in outs)
    node = node_cls(name, backward, ctx, edges, structure, meta)
    non_diff = ctx._non_diff
    for i, o in enumerate(outs):
        if isinstance(o, T) and o.raw_dtype.is_floating_point and (not non_diff or
                                                               id(o) not in non_diff):
            set_history(o, node, i)
    return output


def _grouped_outputs(outs, backward):
    """``(flat outputs, backward)`` for a tuple of outputs holding lists of tensors: the lists'
    elements are outputs of the node in their own right (each gets history and a gradient), and
    ``backward`` gets one gradient per output of the op as torch hands them, a list (one per
    element) for a list output."""
    flat, groups = [], []
    for o in outs:
        if o.__class__ is list:
            groups.append(len(o))
            flat.extend(o)
        else:
            groups.append(None)
            flat.append(o)

    def grouped_backward(ctx, *grads):
        n = len(grads)
        regrouped, k = [], 0
        for m in groups:
            if m is None:
                regrouped.append(grads[k] if k < n else None)
                k += 1
            else:
                regrouped.append([grads[j] if j < n else None for j in range(k, k + m)])
                k += m
        return backward(ctx, *regrouped)
    grouped_backward.__wrapped__ = backward
    return tuple(flat), grouped_backward


class AutogradInfo:
    """What recording autograd history needs to know about a differentiable callable (the narrow
    protocol of torch's ``make_autograd_impl``): ``name`` of its graph node
    (``"ns::opBackward"``), ``op_name`` (named in ``ctx`` errors), ``backward(ctx, *grads)``
    (None: no formula), ``setup(ctx, inputs, output)`` (None: nothing to save) and ``node``, the
    class of the graph node (``UserFunctionNode``, which validates the gradients the formula
    returns, unless the formula is a built-in's). Built once per op (``op_autograd_info``) or per
    ``Function.apply`` call (``Function._autograd_info``)."""

    __slots__ = ("name", "op_name", "backward", "setup", "node")

    def __init__(self, name, op_name, backward, setup, node=None):
        self.name = node_name(name)   # (the nodes made per call take it as is)
        self.op_name = op_name
        self.backward = backward
        self.setup = setup
        self.node = UserFunctionNode if node is None else node


def op_autograd_info(op) -> AutogradInfo:
    """``op``'s formula as an ``AutogradInfo``. A custom op's formula is held to torch's rules:
    its four-argument ``setup_context`` gets the keyword-only inputs as a dict, its backward
    must return a gradient per input (``RuntimeError`` naming the op otherwise: too few or too
    many), and the gradients it returns are validated (``UserFunctionNode``)."""
    backward = op.backward_fn
    setup = op.setup_context_fn
    if backward is not None and not op.is_builtin:
        setup = _torch_setup_form(op, setup)
        backward = _count_checked(
            backward, _needed_gradients(op),
            lambda n, got: f"{op.name}: the backward formula registered with register_autograd "
                           f"returned an incorrect number of gradients (expected {n}, got {got}): "
                           f"return one gradient (or None) per input of the op, in schema order",
            len(op.schema.arguments))
    return AutogradInfo(f"{op.name}Backward", op.name, backward, setup,
                        FunctionNode if op.is_builtin else UserFunctionNode)


def make_op_autograd(op):
    """Build the ``autograd`` table entry of ``op`` (see module docstring) from its
    ``AutogradInfo``: the in-place entry for built-in ops that write an argument, else the entry
    generated with the op's signature, else the generic entry below (same behaviour)."""
    from .. import _dispatch
    info = op_autograd_info(op)
    if op.is_builtin and op.mutates_args:
        return _make_inplace_autograd(op, info)
    if not op.is_builtin and op.tags and mutation_tag(op.tags) == "out":
        return _out_tagged_autograd(op)
    fast = _generated_entry(op, info)   # same behaviour, exact signature
    if fast is not None:
        return fast
    backward = info.backward
    names = op.param_names
    written = () if op.is_builtin else written_params(op)
    define = runs_with_grad(op)

    def autograd_entry(*args, **kwargs):
        tensors = _dispatch.flat_tensors(args, kwargs)
        bkey = _dispatch.backend_key(tensors)
        if not _gm._state.enabled or backward is None:
            # no grad: straight below autograd. No formula: CompositeImplicitAutograd -- the
            # kernel's own tensorplay ops record the graph.
            if backward is None and op.is_builtin:
                with _gm.no_grad():
                    return op.entry(bkey)(*args, **kwargs)
            if backward is None and define:
                return composite_call(bkey, args, kwargs)   # torch's fallback: no mark
            if backward is None:
                # a custom op's composite kernel: watch for .numpy() (KERNEL_MARK)
                g = _gm._state.__dict__
                prev = g.get(KERNEL_MARK)
                g[KERNEL_MARK] = mark = []
                kernel_gate[0] = True
                try:
                    out = composite_call(bkey, args, kwargs)
                finally:
                    g[KERNEL_MARK] = prev
                if mark:
                    return no_formula_outputs(op.name, out, list(args) + list(kwargs.values()),
                                              True)
                return out
            return op.entry(bkey)(*args, **kwargs)
        with _gm.no_grad():
            out = op.entry(bkey)(*args, **kwargs)
        values = list(args) + [kwargs.get(n, _missing) for n in names[len(args):]]
        values = [v for v in values if v is not _missing] if len(values) != len(names) else values
        return _record(info, tuple(values), out)

    def composite_call(bkey, args, kwargs):
        """The no-formula call of a custom op (the composite path, grad mode on or off)."""
        if written and _gm._state.enabled:
            # a custom op that writes arguments (as in the generated entry)
            values = list(args) + [kwargs.get(n, None) for n in names[len(args):]]
            pend, leaf = check_written_args(op.name, written,
                                            [values[i] for i, _, _ in written])
            if leaf and not define:
                before = _dispatch.written_versions([values[i] for i, _, _ in written],
                                                    [k for _, _, k in written])
                with _gm.no_grad():
                    out = op.entry(bkey)(*args, **kwargs)
                # nothing was recorded: the call bumps each written argument once
                _dispatch.reset_written(before)
            else:
                out = op.entry(bkey)(*args, **kwargs)
            if pend:
                rebase_written_args(op.name, pend, values)
            return no_formula_outputs(op.name, out, values)
        out = op.entry(bkey)(*args, **kwargs)
        return no_formula_outputs(op.name, out, list(args) + list(kwargs.values()))

    return autograd_entry


_missing = object()


def _out_tagged_autograd(op):
    """``autograd`` entry of a ``Tag.out`` custom op: like torch's built-in ``out=`` ops (and
    torch 2.13's ``Tag.out`` custom ops), it does not support automatic differentiation: with
    grad mode on and an argument that requires grad, the call raises ``RuntimeError``; under
    ``no_grad`` it runs below autograd (nothing is recorded)."""
    from .. import _dispatch

    def out_autograd_entry(*args, **kwargs):
        if _gm._state.enabled:
            raise RuntimeError(
                f"{op.name}(): functions with out=... arguments don't support automatic "
                f"differentiation, but one of the arguments requires grad (the op is tagged "
                f"Tag.out, as torch's out= variants). Call it under tensorplay.no_grad(), pass "
                f"detached tensors, or use a functional op that returns a new tensor for "
                f"gradients.")
        tensors = _dispatch.flat_tensors(args, kwargs)
        return op.entry(_dispatch.backend_key(tensors))(*args, **kwargs)
    return out_autograd_entry


def _count_checked(backward, n, message, most=None):
    """``backward`` that raises ``RuntimeError(message(n, got))`` when it returns fewer than
    ``n`` gradients, or more than ``most`` (torch's checks: an ``autograd.Function`` may return
    more, but only Nones, which ``UserFunctionNode`` checks: ``most`` None; a custom op's formula
    one per input, ``make_autograd_impl``)."""
    def checked_backward(ctx, *grads):
        res = backward(ctx, *grads)
        got = len(res) if isinstance(res, tuple) or (isinstance(res, list) and n != 1) else 1
        if got < n or (most is not None and got > most):
            raise RuntimeError(message(n, got))
        return res
    return checked_backward


def _needed_gradients(op) -> int:
    """How many gradients a registered formula must return at least: one per argument, but
    trailing keyword-only non-tensor arguments may be left out (torch's ``register_autograd``
    asks for gradients of the positional inputs only)."""
    from .. import _dispatch
    args = op.schema.arguments
    n = len(args)
    while n and args[n - 1].kwarg_only and args[n - 1].kind not in (
            _dispatch._KIND_TENSOR, _dispatch._KIND_OPT, _dispatch._KIND_LIST):
        n -= 1
    return n


def _torch_setup_form(op, setup):
    """``setup`` called as ``setup(ctx, inputs, output)``: torch's four-argument form gets the
    positional inputs as ``inputs`` and the keyword-only ones (defaults filled in) as the dict
    ``keyword_only_inputs``, as ``torch.library.register_autograd`` passes them."""
    if setup is None or setup_context_form(setup) != 4:
        return setup
    args = op.schema.arguments
    npos = sum(1 for a in args if not a.kwarg_only)
    kw = tuple((i, a.name) for i, a in enumerate(args) if a.kwarg_only)

    def setup_context(ctx, inputs, output):
        return setup(ctx, tuple(inputs[:npos]), {n: inputs[i] for i, n in kw}, output)
    setup_context.__wrapped__ = setup
    return setup_context


class NoFormulaBackward(Node):
    """Node of an output that a kernel without a registered formula produced without autograd
    history while an input required grad (it left the graph: ``.numpy()``, a raw kernel launch
    into a fresh tensor). Its gradient is unknown, so backward through it raises, as torch does
    for an op with no autograd kernel."""

    __slots__ = ("_name", "op_name", "via_numpy")

    def __init__(self, op_name, edges, out_meta, via_numpy=False):
        self.op_name = op_name
        self.via_numpy = via_numpy
        self.name = f"{op_name}NotDifferentiable"
        self.next_edges = edges
        self._out_meta = out_meta
        self._retained = None

    # (a rare node: its name set through a property, so a subclass's ``self.name = "..."``
    # is a NodeName too)
    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):
        self._name = node_name(value)

    def apply(self, grads):
        which = ", ".join(str(i) for i, g in enumerate(grads) if g is not None)
        if self.via_numpy:
            # torch's words (torch._library.autograd: its custom ops are opaque), then why here
            raise RuntimeError(
                f"Trying to backward through {self.op_name} but no autograd formula was "
                f"registered. Please use register_autograd to add one: "
                f"tensorplay.library.register_autograd({self.op_name!r}, backward, "
                f"setup_context=...). (Backprop through output {which}: the kernel called "
                f".numpy() (or read an input's values with .tolist()/.item()/float()) with "
                f"grad mode on, which breaks the autograd graph (it leaves the autograd "
                f"graph there): part of its math "
                f"is outside the graph, and the gradient its tensorplay ops recorded would be "
                f"wrong. Fix: register a formula and read the inputs with x.detach().numpy() "
                f"in the kernel; or compute the kernel with tensorplay ops only (differentiable "
                f"without a formula); or, if the op is not differentiable on purpose, register "
                f"a formula whose setup_context calls ctx.mark_non_differentiable on the "
                f"outputs.)")
        raise RuntimeError(
            f"{self.op_name}: trying to backprop through output {which}, which the kernel "
            f"returned without autograd history although an input requires grad: the kernel "
            f"breaks the autograd graph (.numpy(), .detach(), a raw kernel launch into a fresh "
            f"tensor) and the op has no backward formula (autograd kernel was not registered to "
            f"the Autograd key(s) but we are trying to backprop through it). Register one with "
            f"tensorplay.library.register_autograd({self.op_name!r}, backward, "
            f"setup_context=...); or compute the kernel with tensorplay ops; or, if the op is "
            f"not differentiable on purpose, register a formula whose setup_context calls "
            f"ctx.mark_non_differentiable on the outputs (or whose backward returns None).")


def no_formula_outputs(op_name, out, values, via_numpy=False):
    """After a kernel without a formula ran with grad mode on: give each floating output that
    has no history a ``NoFormulaBackward`` node when a tensor among ``values`` requires grad
    (the eager safety net against silently missing gradients). ``via_numpy``: the kernel called
    ``.numpy()`` (``KERNEL_MARK``): every floating output gets the node, its recorded history
    replaced. Returns ``out``."""
    T = TensorBase
    if isinstance(out, T):
        outs = (out,)
    elif isinstance(out, (tuple, list)):
        outs = out
    else:
        return out
    bad = [i for i, o in enumerate(outs) if isinstance(o, T) and
           (via_numpy or not o.needs_grad) and o.raw_dtype.is_floating_point and
           o.native is not None]
    if not bad or not _gm.is_grad_enabled():
        return out
    from .. import _dispatch
    inputs = _dispatch.flat_tensors(values)
    edges = [edge_of(t) for t in inputs]
    if all(e is None for e in edges):
        return out
    meta = tuple((o.raw_shape, o.raw_dtype, o.raw_device) if isinstance(o, T) else None
                 for o in outs)
    node = NoFormulaBackward(op_name, tuple(edges), meta, via_numpy)
    for i in bad:
        o = outs[i]
        if not any(o is t for t in inputs):   # an input returned as is keeps its own state
            set_history(o, node, i)
    return out


class WrittenNoFormulaBackward(NoFormulaBackward):
    """History given to an argument that a custom op writes (``Tensor(a!)``) when its kernel
    wrote it outside the autograd graph (through its array, a kernel launch) while it required
    grad: the tensor's old history no longer describes its value and a mutating op has no
    formula, so backward through it raises naming the op and the argument (never a silently
    wrong gradient). Its edges keep the inputs' and the old history's nodes in the graph."""

    __slots__ = ("arg_name",)

    def __init__(self, op_name, arg_name, edges, out_meta):
        super().__init__(op_name, edges, out_meta)
        self.arg_name = arg_name
        self.name = f"{op_name}WrittenNotDifferentiable"

    def apply(self, grads):
        raise RuntimeError(
            f"{self.op_name}: trying to backprop through argument '{self.arg_name}', which the op "
            f"wrote (mutates_args) outside the autograd graph: its kernel writes the tensor's "
            f"array (or launches a kernel into it) and an op that mutates its arguments cannot "
            f"have a backward formula, so the gradient of the new value is unknown. Write the "
            f"value with tensorplay ops inside the kernel (out.copy_(result)); or make a "
            f"functional op that returns the result and register_autograd on it; or pass a "
            f"tensor that does not require grad (out.detach()) if no gradient should flow.")


def runs_with_grad(op) -> bool:
    """Whether custom op ``op``, when it has no formula, runs its kernel as torch's autograd
    fallback runs a ``Library.define`` op's: with grad mode on, no kernel mark (``.numpy()`` of
    a tensor that requires grad raises in the kernel, an in-place op of the kernel on a written
    leaf that requires grad refuses), as opposed to a ``custom_op``/``triton_op``, whose kernel
    torch runs opaque to autograd (``KERNEL_MARK``, a written leaf written with grad off)."""
    return not op.is_builtin and op.defined_by not in ("custom_op", "triton_op")


def written_params(op) -> tuple:
    """``(index, name, kind)`` of every tensor parameter that custom op ``op`` writes (alias
    ``!`` in its schema: ``mutates_args``, ``Tensor(a!)``); empty for ops that write nothing."""
    from .. import _dispatch
    kinds = (_dispatch._KIND_TENSOR, _dispatch._KIND_OPT, _dispatch._KIND_LIST)
    return tuple((i, a.name, a.kind) for i, a in enumerate(op.schema.arguments)
                 if a.is_write and a.kind in kinds)


def check_written_args(op_name, written, values) -> list:
    """Before the kernel of a custom op that writes arguments runs with grad mode on.

    ``written``: ``written_params(op)``; ``values``: the written arguments' values, in that
    order. A leaf tensor that requires grad, or a view of one, is written without error, as
    torch.library's custom ops write it (its version is bumped, so a saved copy of it fails
    backward), and the kernel must then run with grad mode off. Returns ``(pending, leaf)``:
    ``pending`` is ``[(tensor, name, history_root, grad_fn)]`` for the written non-leaf tensors
    that require grad (``history_root``: the view's base, or the tensor itself), for
    ``rebase_written_args`` to compare after the kernel; ``leaf`` is True when a written tensor
    is a leaf that requires grad or a view of one (run the kernel under ``no_grad``).
    """
    pending = []
    leaf = False
    for (_, name, kind), v in zip(written, values):
        if v is None:
            continue
        for t in (v if kind == "tensor_list" else (v,)):
            if t is None:
                continue
            base = t.view_base
            # a leaf that requires grad (or a view of one) is written as torch.library's
            # custom ops write it: no error, its version bumped (a tensor saved for backward
            # then fails backward); it has no history to become stale. The kernel then runs
            # with grad off, as torch's runs below autograd: its own in-place tensorplay ops
            # would otherwise refuse the leaf (torch.library's custom ops never record them)
            if t.needs_grad and t.raw_grad_fn is None or \
                    base is not None and base.needs_grad and base.raw_grad_fn is None:
                leaf = True
                continue
            if t.needs_grad:
                root = base if base is not None and base.needs_grad else t
                pending.append((t, name, root, root.raw_grad_fn))
    return pending, leaf


def rebase_written_args(op_name, pending, values) -> None:
    """After the kernel: each written tensor of ``pending`` (``check_written_args``) whose
    history the kernel left as it was (it wrote the array, not through tensorplay ops, which
    record their own history) gets a ``WrittenNoFormulaBackward`` node -- on its base when it
    is a view (the view's history is regenerated from the base's, as after any in-place write).
    ``values``: every argument of the call (the node's edges)."""
    from .. import _dispatch
    for t, name, root, before in pending:
        if root.raw_grad_fn is not before:
            continue      # the kernel's own tensorplay ops rebased it (or an earlier argument did)
        edges = [edge_of(x) for x in _dispatch.flat_tensors(values)]
        if root is not t:
            edges.append(edge_of(root))
        node = WrittenNoFormulaBackward(op_name, name, tuple(edges),
                                        ((root.raw_shape, root.raw_dtype, root.raw_device),))
        _rebase(root, node)
        # the edges above regenerated the history of the arguments that are views of root
        # (``edge_of``) from its old history, at the current version: point them at the new one
        # on their next use (the call's version bump need not change the version again)
        for x in _dispatch.flat_tensors(values):
            if x.view_base is root:
                set_view_version(x, -1)


def _record(info, values, out):
    """The one recording step of an op's autograd entry, after its kernel ran below autograd on
    the inputs ``values`` (a tuple): make the ctx, run ``info.setup``, attach the node."""
    se = _structure_and_edges(values, TensorBase)
    ctx = FunctionCtx()
    ctx._op_name = info.op_name
    if info.setup is not None:
        ctx.needs_input_grad = se[2]
        info.setup(ctx, values, out)
    return attach(info.name, info.backward, ctx, values, out, TensorBase, se, info.node)




def _generated_entry(op, info):
    """``autograd_entry`` generated with the op's own signature (like ``_dispatch.make_call``):
    the interpreter binds the arguments, the backend key of a one-tensor op is read off the
    tensor, and grad mode is switched with a flag write instead of a context manager. Same
    results as the generic entry below; ``None`` for ops without tensor parameters."""
    from .. import _dispatch
    Tensor = instance_class()
    name, backward, setup = info.name, info.backward, info.setup
    call, tensor_names = [], []
    ns = {}
    names = _codegen.py_names(op.schema.arguments)   # collision-free ("from" vs "from_")
    params, gaps, renamed = _codegen.signature(op.schema.arguments, names, ns)
    for n, a in zip(names, op.schema.arguments):
        call.append(_codegen.call_arg(a, n))
        if a.kind in (_dispatch._KIND_TENSOR, _dispatch._KIND_OPT, _dispatch._KIND_LIST):
            tensor_names.append((n, a.kind))
    if not tensor_names or gaps or renamed:
        # (a keyword-only "from"/"__x" arrives by its schema name; "(Tensor? x=None, Tensor y)"
        # has no Python signature: generic entry)
        return None
    scalar_ok = set(getattr(op, "_scalar_ok", ()) or ())
    call_s = ", ".join(call)
    vals = _codegen.values(names)
    kinds = {n: (a.kind, a.name in scalar_ok) for n, a in zip(names, op.schema.arguments)}
    required = [n for n, _ in tensor_names if kinds[n] == (_dispatch._KIND_TENSOR, False)]
    maybe = [n for n, _ in tensor_names if kinds[n] == (_dispatch._KIND_TENSOR, True)]
    if required and len(required) + len(maybe) == len(tensor_names):
        # Tensor parameters (plus scalar_ok ones holding numbers) that all have one backend key
        # k: backend_key(...) is k
        first = required[0]
        bkey = f"{first}.backend_key"
        conds = [f"{n}.backend_key is {first}.backend_key" for n in required[1:]] + [
            f"({n}.__class__ is not __T or {n}.backend_key is {first}.backend_key)" for n in maybe]
        if conds:
            bkey = f"{bkey} if {' and '.join(conds)} else __bk(__flat({vals}))"
    else:
        bkey = f"__bk(__flat({vals}))"
    lines = [f"def autograd_entry({', '.join(params)}):",
             f"    __bkey = {bkey}",
             # the table is a plain dict: a key not in it yet goes to op.entry (as _dispatch)
             "    try:", "        __kern = __table[__bkey]", "    except KeyError:",
             "        __kern = None", "    if __kern is None:", "        __kern = __miss(__bkey)"]
    if backward is None:
        if op.is_builtin:   # no formula, built-in: run below autograd with grad off
            lines += ["    __g = __en.__dict__", "    if not __g['enabled']:",
                      f"        return __kern({call_s})",
                      "    __g['enabled'] = False", "    try:", f"        return __kern({call_s})",
                      "    finally:", "        __g['enabled'] = True"]
        else:
            # CompositeImplicitAutograd: the body's own ops record the graph. An output without
            # history (the kernel left the graph) gets a node that raises in backward; so does
            # every output when the kernel called .numpy() with grad on (KERNEL_MARK)
            seg_at = len(lines)
            written = written_params(op)
            # a define-based op (torch's autograd fallback, no custom_op wrapper): its kernel
            # runs with grad mode on, whatever it writes
            define = runs_with_grad(op)
            if written:
                # an op that writes arguments (its only autograd path: such ops have no
                # formula), with grad on: a written leaf runs a custom_op's kernel with grad
                # off; rebase the history of a written tensor the kernel wrote outside the
                # graph after it. Only here, where an input requires grad: calls without one
                # never come here.
                wvals = "(" + "".join(f"{names[i]}, " for i, _, _ in written) + ")"
                # two slot reads only for the common call (the written tensor is a plain
                # tensor without grad, another input requires grad): a written tensor that
                # needs grad or is a view (of what might be a leaf) takes the checks
                conds = []
                for i, _, kind in written:
                    n = names[i]
                    if kind == _dispatch._KIND_TENSOR:
                        conds.append(f"{n}.needs_grad or {n}.view_base is not None")
                    elif kind == _dispatch._KIND_OPT:
                        conds.append(f"{n} is not None and ({n}.needs_grad or "
                                     f"{n}.view_base is not None)")
                    else:
                        conds.append("True")
                # (grad mode is on here: checked before, see below)
                lines += [f"    if {' or '.join(conds)}:",
                          f"        __pend, __leaf = __chkw(__opname, __written, {wvals})"]
                if define:
                    # (a leaf written by the kernel's own in-place ops refuses, as torch's)
                    lines += [f"        __out = __kern({call_s})"]
                else:
                    lines += ["        if __leaf:",
                              f"            __wv = __wvers({wvals}, __wkinds)",
                              "            with __nog():",
                              f"                __out = __kern({call_s})",
                              # nothing was recorded: the call bumps each written argument once
                              "            __wreset(__wv)",
                              "        else:",
                              f"            __out = __kern({call_s})"]
                lines += [f"        if __pend: __rebw(__opname, __pend, {vals})",
                          "    else:",
                          f"        __out = __kern({call_s})"]
                ns.update(__chkw=check_written_args, __rebw=rebase_written_args, __nog=_gm.no_grad,
                          __written=written, __wvers=_dispatch.written_versions,
                          __wreset=_dispatch.reset_written,
                          __wkinds=tuple(k for _, _, k in written))
            else:
                lines += [f"    __out = __kern({call_s})"]
            seg = ["    " + x for x in lines[seg_at:]]
            del lines[seg_at:]
            # grad mode off (an input requires grad, under no_grad): nothing to record or to
            # mark, straight to the kernel (the call's version bumps are the dispatcher's)
            lines += ["    __g = __en.__dict__",
                      f"    if not __g['enabled']: return __kern({call_s})"]
            if define:
                # no kernel mark: .numpy() of a tensor that requires grad raises in the kernel
                lines += [x[4:] for x in seg]
            else:
                lines += ["    __prev = __g.get(__KM)", "    __g[__KM] = __m = []",
                          "    if not __gate[0]: __gate[0] = True",
                          "    try:", *seg, "    finally:", "        __g[__KM] = __prev",
                          f"    if __m: return __nf(__opname, __out, {vals}, True)"]
                ns.update(__KM=KERNEL_MARK, __gate=kernel_gate)
            lines += ["    if __out.__class__ is __T and __out.needs_grad:",
                      "        return __out",
                      f"    return __nf(__opname, __out, {vals})"]
    else:
        # grad mode is per thread: __g is this thread's dict of the flag (one lookup, then plain
        # dict reads/writes, half the cost of three thread-local attribute accesses)
        lines += ["    __g = __en.__dict__", "    if not __g['enabled']:",
                  f"        return __kern({call_s})",
                  "    __g['enabled'] = False", "    try:", f"        __out = __kern({call_s})",
                  "    finally:", "        __g['enabled'] = True"]
        args = op.schema.arguments
        plain = all(a.kind == _dispatch._KIND_TENSOR or
                    (a.kind not in (_dispatch._KIND_OPT, _dispatch._KIND_LIST) and
                     not a.type.endswith("[]"))
                    for a in args)
        if plain:
            # _record inlined: every tensor parameter is one Tensor (or, where the op takes a
            # Scalar too, a number), the others are scalars, so _structure_and_edges' result is
            # known in shape: ["t" | None per parameter]
            tens = [(n, a.name in scalar_ok) for n, a in zip(names, args)
                    if a.kind == _dispatch._KIND_TENSOR]
            edge_parts = []
            for j, (n, maybe_scalar) in enumerate(tens):
                if maybe_scalar:
                    lines += [f"    __t{j} = isinstance({n}, __T)",
                              f"    if not __t{j}:",
                              f"        __e{j} = None",
                              "    else:",
                              *("        " + x for x in edge_of_source(f"__e{j}", n))]
                    edge_parts.append(f"((__e{j},) if __t{j} else ())")
                else:
                    lines += ["    " + x for x in edge_of_source(f"__e{j}", n)]
                    edge_parts.append(f"(__e{j},)")
            needs, struct, j = [], [], 0
            for a in args:
                if a.kind == _dispatch._KIND_TENSOR:
                    needs.append(f"__e{j} is not None")
                    struct.append(f"('t' if __t{j} else None)" if tens[j][1] else "'t'")
                    j += 1
                else:
                    needs.append("False")
                    struct.append("None")
            edges = " + ".join(edge_parts) if edge_parts else "()"
            lines += [f"    __needs = ({', '.join(needs)},)", "    __ctx = __Ctx()",
                      "    __ctx._op_name = __opname", "    __ctx.needs_input_grad = __needs"]
            if setup is not None:
                lines += [f"    __setup(__ctx, {vals}, __out)"]
            ret = (f"    return __attach(__name, __bw, __ctx, {vals}, __out, __T, "
                   f"([{', '.join(struct)}], {edges}, __needs), __FN)")
            rets = op.schema.returns
            if len(rets) == 1 and rets[0].type == "Tensor" and rets[0].alias is None:
                # attach inlined for the common case: one floating Tensor output, nothing marked
                # non-differentiable (anything else takes attach as written)
                any_need = " or ".join(needs) if needs else "False"
                lines += [f"    if not ({any_need}):",
                          "        return __out",
                          "    if __out.__class__ is not __T or not __out.raw_dtype.is_floating_point"
                          " or __ctx._non_diff:",
                          ret.replace("    return", "        return", 1),
                          *("    " + x for x in function_node_source(
                              "__n", "__name", "__bw", "__ctx", edges, f"[{', '.join(struct)}]",
                              "((__out.raw_shape, __out.raw_dtype, __out.raw_device),)")),
                          *("    " + x for x in set_history_source("__out", "__n", "0")),
                          "    return __out"]
            else:
                lines.append(ret)
        else:
            lines += [f"    return __rec(__info, {vals}, __out)"]
    ns.update(__en=_gm._state, __table=op.table, __miss=op.entry, __bk=_dispatch.backend_key,
              __flat=_dispatch.flat_tensors, __rec=_record, __info=info, __name=name, __opname=op.name,
              __bw=backward, __setup=setup, __edge=edge_of, __Ctx=FunctionCtx, __attach=attach,
              __T=Tensor, __nf=no_formula_outputs, __FN=info.node, __ag="autograd",
              __new=object.__new__)
    src = "\n".join(lines)
    fn = _codegen.function(src, ns, "autograd_entry", f"<tensorplay autograd {op.name}>")
    return fn


def _rebase(t, node, skip=None):
    """``t`` (written in place) made output 0 of ``node``, its ``retain_grad()`` moved along
    (torch's ``rebase_history``; ``register_hook`` functions stay on the old history); when
    ``t`` is the base of views, their history follows: lazily, as torch's, when ``t`` required
    grad before the write (the write bumped the storage version, so each view's history is
    regenerated from the base's current one where it is next read: ``Tensor.grad_fn``,
    ``autograd.graph.edge_of``), at once when this write is what makes ``t`` require grad (its
    views then require grad too: ``refresh_views``; but ``skip``, the written view that the
    caller rebases itself). So k writes, one to each of k views of one base, cost O(k), not
    O(k) each."""
    had = t.needs_grad
    if t.retains_grad_flag:
        old = t.raw_grad_fn, t.output_nr
        set_history(t, node, 0)
        move_retained_grad(t, *old)
    else:
        set_history(t, node, 0)
    if not had and t.view_version.__class__ is list:   # a base with views (a view's: an int)
        refresh_views(t, skip)


_NO_GRAD_VIEW_WRITE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block (if "
    "you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked).")
_NO_GRAD_VIEW_REBASED = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) "
    "or both outside (if you want the inplace to be tracked).")


def refresh_views(base, skip=None):
    """After ``base`` got a new history in place that made it require grad: every live view of
    it (but ``skip``) follows, as torch's views do (their ``requires_grad`` and ``grad_fn`` are
    their base's current ones; ``_rebase`` leaves the views of a base that required grad
    already to regenerate their history lazily). A view that had no history of its own made with grad mode on gets an
    ``AsStridedBackward`` of the base's new history now (so ``grad_fn``, ``requires_grad`` and
    the ops that read it see it, the view of a base that required no grad included); one made
    under ``no_grad``, or one whose creation forbids it (an output of ``unbind``/``split``/
    ``chunk``, ``_check_view_creation``), requires grad and is left stale, so using it raises
    torch's error (``regenerate_view_grad_fn``). One pass over the views (each view's creation
    read with it: no search per view)."""
    views = live_views(base, True)
    if not views:
        return
    ver = base.storage_ref.version
    node = base.raw_grad_fn
    if node is not None:
        # (regenerate_view_grad_fn, its base's part computed once for all the views)
        base_geom = (base.raw_shape, base.stride_tuple, base.offset)
        numel = base.storage_ref.nbytes // base.raw_dtype.itemsize
        edges = (edge_of(base),)
    for v, no_grad in views:
        if v is skip or not v.raw_dtype.is_floating_point:
            continue
        if not v.needs_grad:
            set_requires_grad(v, True)
        if no_grad and v.raw_grad_fn is None or _CMETA and creation_meta(v) is not None:
            set_view_version(v, -1)      # stale: its next use raises
            continue
        set_view_version(v, ver)
        if node is None:
            continue
        old = v.raw_grad_fn, v.output_nr
        shape = v.raw_shape
        set_grad_fn(v, AsStridedBackward(base_geom, (shape, v.stride_tuple, v.offset), numel,
                                         edges, ((shape, v.raw_dtype, v.raw_device),)), 0)
        if v.retains_grad_flag:
            move_retained_grad(v, *old)  # a retain_grad() made before: the current value's grad


_MULTI_VIEW = (" This view is the output of a function that returns multiple views. Such "
               "functions do not allow the output views to be modified inplace. You should "
               "replace the inplace operation by an out-of-place one.")
_CUSTOM_VIEW = (" This view was created inside a custom Function (or because an input was "
                 "returned as-is) and the autograd logic to handle view+inplace would override "
                 "the custom backward associated with the custom Function, leading to incorrect "
                 "gradients. This behavior is forbidden. You can fix this by cloning the output "
                 "of the custom Function.")
_NO_GRAD_VIEW = (" Given that this use case is ambiguous and error-prone, it is forbidden. You "
                 "can clarify your code by moving both the view and the inplace either both "
                 "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                 "outside (if you want the inplace to be tracked).")


def view_rebase_message(t, kind, name, nr, indirect) -> str:
    """torch's ``handle_view_on_rebase`` words for view ``t`` written in place (``indirect``:
    its base or another view of its base was) when its creation meta (``kind``: ``"multi"``,
    ``"no_grad"``, ``"custom"``: an ``autograd.Function``'s output; ``name``/``nr``: the
    multi-view function's (or Function's) output, None for a view of one,
    ``_ops/views.creation_meta``) forbids it."""
    obj = "its base or another view of its base has been" if indirect else "is being"
    node = t.raw_grad_fn
    if node is not None and name is None:
        name, nr = node.name, t.output_nr
    if kind == "no_grad" or node is None:
        prefix = (f"Output {nr} of {name} is a view of a view which was created in"
                  if node is not None else "A view was created in")
        msg = f"{prefix} no_grad mode and {obj} modified inplace with grad mode enabled."
    else:
        msg = f"Output {nr} of {name} is a view and {obj} modified inplace."
    return msg + (_MULTI_VIEW if kind == "multi" else _CUSTOM_VIEW if kind == "custom" else
                  _NO_GRAD_VIEW)


def _check_view_creation(api, t):
    """``RuntimeError`` (torch's words) when ``t`` is a view that its creation forbids writing
    in place while autograd records (the caller knows it does): an output of a function
    returning several views (``unbind``, ``split``, ``chunk``), a view of one, or a view of a
    view made under ``no_grad`` (the views made under ``no_grad`` themselves: ``check_inplace``)."""
    if _CMETA and t.view_base is not None:
        m = creation_meta(t)
        if m is not None:
            raise RuntimeError(f"{api}: {view_rebase_message(t, *m, False)}")


def check_inplace(api, t):
    """torch's checks before an in-place op records autograd history on ``t``: a view made under
    ``no_grad`` that requires grad, a view whose creation forbids the write (an output of a
    multi-view function such as ``unbind``, ``_check_view_creation``), a leaf that requires
    grad, a view of one (``RuntimeError``, torch's words first)."""
    b = t.view_base
    if b is not None and t.needs_grad and t.raw_grad_fn is None and made_in_no_grad(t):
        raise RuntimeError(f"{api}: {_NO_GRAD_VIEW_WRITE}")
    if t.needs_grad:
        _check_view_creation(api, t)
    if t.needs_grad and t.raw_grad_fn is None and t.grad_fn is None:
        # (the property: torch's is_leaf, a stale view's history regenerated; a capture tensor's)
        raise RuntimeError(
            f"{api}: a leaf Variable that requires grad is being used in an in-place operation. "
            f"Update parameters inside `with tensorplay.no_grad():`, or write to a copy "
            f"(x = x.clone()) instead.")
    if b is not None and b.needs_grad and b.raw_grad_fn is None:
        raise RuntimeError(
            f"{api}: a view of a leaf Variable that requires grad is being used in an in-place "
            f"operation. Clone the leaf first (y = x.clone()) and modify views of the clone, or "
            f"do it inside `with tensorplay.no_grad():`.")


def _make_inplace_autograd(op, info):
    """``autograd`` entry of a built-in op that writes its first argument (``copy_``, ``add_`` ...).

    Like torch: refuses to modify a leaf that requires grad (or a view of one); the formula's
    ``setup`` runs *before* the write (so it may save the original value); the written tensor's
    history is rebased onto the new node. When the written tensor is a view, the base's history
    is rebased instead (torch's ``CopySlices``) and the view becomes an ``AsStridedBackward`` of
    the base, so gradients through the base and through every view see the write.
    """
    from .. import _dispatch
    Tensor = instance_class()
    backward, setup, name, api = info.backward, info.setup, info.name, info.op_name
    names = op.param_names

    def inplace_entry(*args, **kwargs):
        if len(args) == 2 and not kwargs and args[1].__class__ is Tensor and \
                args[0].backend_key is args[1].backend_key:
            bkey = args[0].backend_key   # one backend (an optimizer's p.add_(update)): no flattening
        else:
            bkey = _dispatch.backend_key(_dispatch.flat_tensors(args, kwargs))
        if not _gm._state.enabled:
            return op.entry(bkey)(*args, **kwargs)
        values = list(args) + [kwargs.get(n, _missing) for n in names[len(args):]]
        self_ = values[0]
        check_inplace(api, self_)
        structure, edges, needs = _structure_and_edges(values, Tensor)
        if not any(needs):
            return op.entry(bkey)(*args, **kwargs)
        if self_.view_base is not None:
            # torch's check_inplace: the write would record history (an input requires grad)
            if self_.raw_grad_fn is None and made_in_no_grad(self_):
                raise RuntimeError(f"{api}: {_NO_GRAD_VIEW_WRITE}")
            _check_view_creation(api, self_)
        if backward is None:
            raise RuntimeError(
                f"{api}: this in-place op has no backward formula, so it cannot write tensors "
                f"that are part of an autograd graph. Run it under tensorplay.no_grad() or on "
                f"detached tensors.")
        ctx = FunctionCtx()
        ctx._op_name = api
        ctx.needs_input_grad = needs
        if setup is not None:
            setup(ctx, tuple(values), self_)
        base = self_.view_base
        view_geom = (self_.raw_shape, self_.stride_tuple, self_.offset)
        base_edge = edge_of(base) if base is not None else None
        with _gm.no_grad():
            out = op.entry(bkey)(*args, **kwargs)
        meta = ((self_.raw_shape, self_.raw_dtype, self_.raw_device),)
        if base is None:
            # its retain_grad() and its views follow the new history (_rebase)
            _rebase(self_, FunctionNode(name, backward, ctx, edges, structure, meta))
            return out
        inner = FunctionNode(name, backward, ctx, edges, structure, meta)
        base_geom = (base.raw_shape, base.stride_tuple, base.offset)
        numel = base.storage_ref.nbytes // base.raw_dtype.itemsize
        node = CopySlices(inner, base_geom, view_geom, numel, (base_edge,) + edges[1:],
                          ((base.raw_shape, base.raw_dtype, base.raw_device),))
        _rebase(base, node, self_)    # (its other views follow: refresh_views)
        _rebase(self_, AsStridedBackward(base_geom, view_geom, numel, ((node, 0),), meta))
        set_view_version(self_, self_.storage_ref.version)
        return out

    return inplace_entry


def _scratch_view(flat, geom):
    """View ``geom`` of the gradient buffer ``flat``; when ``flat`` carries history (a
    ``create_graph=True`` backward wrote graph tensors into it) the view follows that history,
    so double backward sees through the buffer."""
    from .._ops.views import make_view
    v = make_view(flat, *geom)
    if flat.needs_grad and _gm._state.enabled:
        set_requires_grad(v, True)
        _regenerate_view_grad_fn(v)    # (a fresh view, current: no staleness check, no lock)
    return v


class _ScratchNode(Node):
    """Base of the two nodes that rebuild a gradient for a view and its base in a zeroed
    scratch buffer of the base's storage (``numel`` elements), through the geometries
    ``(shape, strides, offset)`` of the base (``base_geom``) and of the view (``view_geom``)."""

    __slots__ = ("base_geom", "view_geom", "numel")

    def __init__(self, base_geom, view_geom, numel, edges, out_meta):
        self.base_geom = base_geom
        self.view_geom = view_geom
        self.numel = numel
        self.next_edges = edges
        self._out_meta = out_meta

    def _scattered(self, g, geom):
        """The zeroed buffer with ``g`` copied into its view ``geom``."""
        flat = g.new_zeros((self.numel,))
        _scratch_view(flat, geom).copy_(g)
        return flat


class CopySlices(_ScratchNode):
    """Backward of an in-place op on a view, recorded on the view's base (torch's CopySlices).

    Given the gradient of the base after the write, the gradient of the base before the write is
    the same except inside the view's region, where it is the op's gradient for its ``self``;
    the op's gradients for its other inputs flow to them unchanged.
    """

    __slots__ = ("inner",)
    name = "CopySlices"

    def __init__(self, inner, base_geom, view_geom, numel, edges, out_meta):
        super().__init__(base_geom, view_geom, numel, edges, out_meta)
        self.inner = inner

    def apply(self, grads):
        flat = self._scattered(grads[0], self.base_geom)
        res = self.inner.apply((_scratch_view(flat, self.view_geom).clone(),))
        region = _scratch_view(flat, self.view_geom)
        if res[0] is None:
            region.fill_(0)
        else:
            region.copy_(res[0])
        return (_scratch_view(flat, self.base_geom),) + tuple(res[1:])

    def release(self):
        self.inner.release()


class AsStridedBackward(_ScratchNode):
    """Backward of a view of a base, rebuilt after the base's history changed in place."""

    __slots__ = ()
    name = "AsStridedBackward"

    def apply(self, grads):
        flat = self._scattered(grads[0], self.view_geom)
        return (_scratch_view(flat, self.base_geom),)


def regenerate_view_grad_fn(t):
    """Point view ``t``'s history at its base's current history (after an in-place write to
    the base or another view of it changed that history); called lazily by ``edge_of``
    (``refresh_views`` does the same for every view at once). ``RuntimeError`` (torch's words)
    for a view whose creation forbids it: made under ``no_grad``, an output of a multi-view
    function (``unbind``, ``split``, ``chunk``) or a view of either.

    Thread-safe: two threads regenerating one view at once get one node (torch's one node per
    view history). Only this path takes the lock (the callers read ``grad_fn`` without it when
    the view is current); staleness is checked again under it, and the view's version is set
    after its new node, so a lock-free reader that finds the view current finds the new node."""
    with _REGEN_LOCK:
        if t.view_version != t.storage_ref.version:
            _regenerate_view_grad_fn(t)


_REGEN_LOCK = threading.RLock()   # (re-entrant: edge_of(base) below never comes back, but cheap)


def _regenerate_view_grad_fn(t):
    base = t.view_base
    if base.needs_grad:
        # torch's handle_view_on_rebase: a view made under no_grad has no history to regenerate
        if t.raw_grad_fn is None and made_in_no_grad(t):
            raise RuntimeError(_NO_GRAD_VIEW_REBASED)
        if _CMETA:
            m = creation_meta(t)
            if m is not None:
                raise RuntimeError(view_rebase_message(t, *m, True))
    version = t.storage_ref.version
    if base.raw_grad_fn is None:
        set_view_version(t, version)
        return
    numel = base.storage_ref.nbytes // base.raw_dtype.itemsize
    old = t.raw_grad_fn, t.output_nr
    set_grad_fn(t, AsStridedBackward((base.raw_shape, base.stride_tuple, base.offset),
                                     (t.raw_shape, t.stride_tuple, t.offset), numel, (edge_of(base),),
                                     ((t.raw_shape, t.raw_dtype, t.raw_device),)), 0)
    if t.retains_grad_flag:
        move_retained_grad(t, *old)    # a retain_grad() made before: the current value's gradient
    set_view_version(t, version)       # last: a reader that sees it current sees the new node


def _alias_returned_inputs(out, args, T, dirty=(), ctx=None):
    """A ``forward`` that returns one of its inputs gets a fresh alias (a view sharing storage)
    as the output, so recording history never rewrites the input's own ``grad_fn`` (torch
    does the same). An input marked non-differentiable (``ctx.mark_non_differentiable``)
    comes back as a detached alias (``requires_grad=False``, no ``grad_fn``), as torch's
    ``_process_backward_mode_ad`` returns it; the alias joins ``ctx``'s non-differentiable
    outputs, so ``attach`` leaves it without history."""
    non_diff = ctx._non_diff if ctx is not None else ()

    def fix(o):
        if any(o is a for a in args) and not any(o is d for d in dirty):
            if non_diff and id(o) in non_diff:
                d = o.detach()
                ctx._non_diff = ctx._non_diff.union((id(d),))
                return d
            from .._ops.views import make_view
            return make_view(o, o.raw_shape, o.stride_tuple, o.offset)
        return o
    return _pytree.tree_map(fix, out, T)


def _mark_view_outputs(name, out, T, dirty):
    """Each output of ``Function`` ``name`` that is a view with autograd history (made inside
    ``forward``, or the alias of an input returned as-is) refuses in-place writes while autograd
    records, as torch's (``_ops/views.mark_custom_function_output``). A dirty input returned
    (``mark_dirty``) is exempt: the Function wrote it itself."""
    if out.__class__ is not tuple and out.__class__ is not list:
        if isinstance(out, T) and out.view_base is not None and out.raw_grad_fn is not None \
                and not (dirty and any(out is d for d in dirty)):
            mark_custom_function_output(out, name, 0)
        return
    for i, o in enumerate(out):
        if isinstance(o, T) and o.view_base is not None and o.raw_grad_fn is not None and \
                not (dirty and any(o is d for d in dirty)):
            mark_custom_function_output(o, name, i)


def _n_positional(fn) -> int:
    """How many positional parameters ``fn`` (a plain function) names; 0 when unknown."""
    code = getattr(fn, "__code__", None)
    return code.co_argcount if code is not None else 0


def _bound_args(fn, args, kwargs) -> tuple:
    """``(args, kwargs)`` bound to ``fn``'s parameters, defaults filled in: every parameter that
    can be positional in ``args``, the keyword-only ones in ``kwargs`` (torch's
    ``bind_default_args`` for a Function with ``setup_context``, whose ``inputs`` are
    ``args``). ``TypeError`` as a call of ``fn`` with them would raise."""
    import inspect
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _check_dirty_returned(dirty, out):
    """torch's rule: every input marked dirty is one of the outputs (``RuntimeError``)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for t in dirty:
        if not any(o is t for o in outs):
            raise RuntimeError(
                "Some elements marked as dirty during the forward method were not returned as "
                "output. The inputs that are modified inplace must all be outputs of the "
                "Function.")


class _DirtyViewNode(Node):
    """A Function's node, seen with the gradient of its dirty view input (edge ``j``) first:
    the ``inner`` node ``CopySlices`` expects (its edge 0 is the written tensor)."""

    __slots__ = ("node", "j")
    name = "DirtyView"

    def __init__(self, node, j):
        self.node = node
        self.j = j
        self.next_edges = node.next_edges
        self._out_meta = node._out_meta
        self._retained = None

    def apply(self, grads):
        res = self.node.apply(grads)
        j = self.j
        return (res[j],) + tuple(res[:j]) + tuple(res[j + 1:])

    def release(self):
        self.node.release()


def _rebase_dirty_view(fname, t, args, structure, out, T):
    """``t``, a view that the Function wrote in place (``mark_dirty``) and now has the Function's
    node as history: rebase its base's history on a ``CopySlices`` of that node (torch's
    ``rebase_history`` for views), so gradients through the base and its other views see the
    write. ``RuntimeError`` when the Function has more than one output (torch's rule)."""
    if not isinstance(out, T):
        raise RuntimeError(
            f"{fname}: if your Function modifies inplace an input that is a view of another "
            f"Tensor, your Function cannot return more than one Tensor (torch's rule). Make "
            f"sure the input is not a view (.clone() it), or return only that Tensor.")
    j = 0
    for a, s in zip(args, structure):
        if a is t:
            break
        j += 1 if s == "t" else (s[1] if s is not None else 0)
    else:
        return   # not a direct argument: nothing to rebase (torch ignores it too)
    _check_view_creation(fname, t)    # (torch's rebase_history: handle_view_on_rebase)
    node = t.raw_grad_fn
    base = t.view_base
    base_edge = edge_of(base)
    edges = node.next_edges
    base_geom = (base.raw_shape, base.stride_tuple, base.offset)
    view_geom = (t.raw_shape, t.stride_tuple, t.offset)
    numel = base.storage_ref.nbytes // base.raw_dtype.itemsize
    cs = CopySlices(_DirtyViewNode(node, j), base_geom, view_geom, numel,
                    (base_edge,) + tuple(edges[:j]) + tuple(edges[j + 1:]),
                    ((base.raw_shape, base.raw_dtype, base.raw_device),))
    _rebase(base, cs, t)
    set_history(t, AsStridedBackward(base_geom, view_geom, numel, ((cs, 0),),
                                     ((t.raw_shape, t.raw_dtype, t.raw_device),)), 0)
    set_view_version(t, t.storage_ref.version)


_ONCE_MSG = ("trying to differentiate twice a function that was marked with "
             "@once_differentiable")


class _DelayedErrorNode(Node):
    """History of what a ``once_differentiable`` backward returned while its incoming
    gradients required grad: differentiating through it raises (torch's ``DelayedError``)."""

    __slots__ = ()
    name = "OnceDifferentiableBackward"

    def __init__(self, edges, out_meta):
        self.next_edges = edges
        self._out_meta = out_meta
        self._retained = None

    def apply(self, grads):
        raise RuntimeError(_ONCE_MSG)


def once_differentiable(fn):
    """Decorator of a Function's ``backward`` that does not support double backward (as
    ``torch.autograd.function.once_differentiable``): ``fn`` runs with grad mode off, and when
    grad mode is on (``create_graph=True``) and a tensor argument (an incoming gradient)
    requires grad, its floating outputs get a history that raises ``RuntimeError: trying to
    differentiate twice a function that was marked with @once_differentiable`` when a
    backward reaches it. That history's edges lead to the incoming gradients (torch's lead to
    detached copies of the outputs), so ``autograd.grad`` towards them raises the same error
    rather than calling them unused."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with _gm.no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not _gm._state.enabled:
            return outputs
        T = TensorBase
        edges = tuple(edge_of(a) for a in args if isinstance(a, T) and a.requires_grad)
        if not edges:
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        node = _DelayedErrorNode(edges, tuple(
            (o.raw_shape, o.raw_dtype, o.raw_device) if isinstance(o, T) else None for o in outs))
        res = []
        for i, o in enumerate(outs):
            if isinstance(o, T) and o.raw_dtype.is_floating_point:
                o = o.detach()
                set_history(o, node, i)
            res.append(o)
        return tuple(res) if isinstance(outputs, tuple) else res[0]
    return wrapper


class Function:
    """Custom differentiable function (same surface as ``torch.autograd.Function``).

    Subclass with ``forward(ctx, *args)`` (or ``forward(*args)`` + ``setup_context(ctx, inputs,
    output)``) and ``backward(ctx, *grads)`` (or, torch's other name, ``vjp``: one of the two,
    ``RuntimeError`` for both); call ``YourFn.apply(*args)``. ``backward`` gets one gradient per
    output and returns one per forward argument (``None`` where there is none; extra trailing
    Nones are allowed). Decorate a ``backward`` that does not support double backward with
    ``once_differentiable``. Checked against torch's documented examples in
    ``tests/test_torch_autograd_function_docs.py``.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError("autograd.Function subclasses must implement forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    setup_context = None
    vjp = None   # torch's other name for backward: a subclass defines one of the two

    @classmethod
    def _autograd_info(cls) -> AutogradInfo:
        """The class as an ``AutogradInfo``: node ``<Class>Backward``, ``backward`` checked to
        return a gradient per argument, ``setup_context`` when a class up to ``Function``
        defines one (then ``forward`` takes no ctx)."""
        setup = cls.__dict__.get("setup_context")
        if setup is None:
            for base in cls.__mro__[1:]:
                if base is Function:
                    break
                if base.__dict__.get("setup_context") is not None:
                    setup = base.__dict__["setup_context"]
                    break
        if setup is not None and isinstance(setup, (staticmethod, classmethod)):
            setup = setup.__func__
        name = f"{cls.__name__}Backward"
        if cls.vjp is not None:
            if cls.backward is not Function.backward:
                raise RuntimeError(
                    f"{cls.__name__}: Implementing both 'backward' and 'vjp' for a custom "
                    f"Function is not allowed. You should only implement one of them.")
            return AutogradInfo(name, cls.__name__, (lambda c, *g: cls.vjp(c, *g)), setup)
        return AutogradInfo(name, cls.__name__, (
            lambda c, *g: cls.backward(c, *g)), setup)

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` without recording, then record one node whose backward is
        ``cls.backward`` when grad mode is on and a tensor argument requires grad. An output
        that is one of the inputs is returned as a fresh alias (torch does the same).

        As torch: ``ctx.needs_input_grad`` is set before ``forward`` runs (a combined forward
        may read it); with ``setup_context``, its ``inputs`` are ``forward``'s arguments with
        keyword arguments and defaults bound (``inspect.Signature.bind``); an input marked
        dirty gets its version bumped and must be returned (``RuntimeError`` otherwise), and
        a dirty view of another tensor rebases that tensor's history too (one output only)."""
        Tensor = TensorBase
        info = cls._autograd_info()
        ctx = FunctionCtx()
        ctx._op_name = info.op_name
        setup = info.setup
        if setup is not None and (kwargs or len(args) < _n_positional(cls.forward)):
            args, kwargs = _bound_args(cls.forward, args, kwargs)   # torch's bind_default_args
        # edges are collected before forward (torch's THPFunction_apply): a dirty input's
        # history is the one from before the write
        se = _structure_and_edges(args, Tensor, lists=False)
        ctx.needs_input_grad = se[2]
        with _gm.no_grad():
            if setup is not None:
                out = cls.forward(*args, **kwargs)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        if setup is not None:
            setup(ctx, args, out)
        dirty = getattr(ctx, "_dirty", ())
        if dirty:
            _check_dirty_returned(dirty, out)
            for t in dirty:
                # torch bumps the version of every dirty tensor: a write the version counter
                # did not see (through .numpy()) still invalidates what was saved before it
                t.storage_ref.version += 1
            if ctx._saved:
                # torch records the saved tensors' versions once forward is done (after this
                # bump): saving the written input in forward stays valid
                ctx.save_for_backward(*ctx._saved)
        if not _gm._state.enabled:
            # nothing recorded: an input returned as-is comes back as a detached alias, as
            # torch's (the input itself would carry its requires_grad and history out of the
            # no_grad block, and a later backward would flow through it)
            if any(se[2]):
                out = _pytree.tree_map(
                    lambda o: o.detach() if (any(o is a for a in args) and
                                             not any(o is d for d in dirty)) else o, out, Tensor)
            return out
        if _capturing() and any(se[2]):
            from ..errors import GraphBreak
            raise GraphBreak(
                f"tensorplay.compile: autograd.Function {cls.__name__}.apply was called inside the "
                f"compiled function with an input that requires grad; its backward cannot be "
                f"captured (the graph would run its forward without it: wrong gradients), so "
                f"the function runs eagerly (with fullgraph=True: this error). To compile it, "
                f"call the Function outside the compiled function, or make it a custom op with "
                f"register_autograd (captured as one node, its formula used by backward).")
        for t in dirty:
            check_inplace(f"{cls.__name__}.apply", t)
        out = _alias_returned_inputs(out, args, Tensor, dirty, ctx)
        before = [(t.raw_grad_fn, t.output_nr) for t in dirty] if dirty else None
        name = info.name
        out = attach(name, _count_checked(
            info.backward, len(args),
            lambda n, got: f"function {name} returned an incorrect number of gradients "
                           f"(expected {n}, got {got})"), ctx, args, out, Tensor, se,
                     node_cls=info.node)
        if not (isinstance(out, Tensor) and out.view_base is None):   # (one plain output: done)
            _mark_view_outputs(cls.__name__, out, Tensor, dirty)
        if dirty:
            for t, (fn, nr) in zip(dirty, before):
                if t.view_base is not None and t.raw_grad_fn is not fn:   # the node: its history
                    _rebase_dirty_view(cls.__name__, t, args, se[0], out, Tensor)
                elif t.view_version.__class__ is list and t.raw_grad_fn is not fn:
                    refresh_views(t)    # a base with views: they follow its new history
                if t.retains_grad_flag:
                    move_retained_grad(t, fn, nr)   # torch's rebase_history moves retain_grad
        return out


def make_autograd_entry(op):
    """``autograd`` entry: redispatch below autograd, recording a graph node when needed.

    A built-in op's entry is generated on its first call under autograd (a stand-in until then
    replaces itself in the table): importing tensorplay and loading a backend rebuild every
    built-in's table, and most programs use few ops with gradients. Custom ops build theirs at
    registration, where a bad ``register_autograd`` is reported. A custom op with kernels at
    torch's autograd keys (``Library.impl(name, fn, "Autograd")``) runs them for calls that
    record, around this entry (``_dispatch.autograd_kernel_entry``)."""
    if not op.is_builtin:
        if op._autograd_kernel_fns:
            from .. import _dispatch
            return _dispatch.autograd_kernel_entry(op, make_op_autograd(op))
        return make_op_autograd(op)
    real = None

    def lazy_autograd(*args, **kwargs):
        nonlocal real
        if real is None:
            real = make_op_autograd(op)
        if op.table.get("autograd") is lazy_autograd:
            op.table["autograd"] = real
        return real(*args, **kwargs)
    return lazy_autograd

