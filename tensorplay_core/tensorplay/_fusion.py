"""Elementwise fusion for ``tensorplay.compile``.

``plan(graph)`` finds *chains*: maximal runs of consecutive graph nodes that are elementwise
built-in ops (``tp::add``, ``tp::mul``, ``tp::exp``, ``tp::where``...), with one tensor output
each, all on one device, under one grad mode. Only consecutive nodes are grouped, so nothing is
ever moved: a barrier (an op with mutated arguments) or any other node ends a chain. Each chain
becomes an ``ElementwiseExpr`` -- the description handed to a backend's fuser.

A backend whose ``fuses_row_reductions`` is true also gets *row reductions* inside its chains:
``sum``/``mean``/``amax``/``amin`` of a floating value over its last dim
(``Step(op, (x, ("const", (-1,)), ("const", keepdim)))``). With ``keepdim=True`` the later steps
of the chain may broadcast the ``(..., 1)`` result against the full rows -- a row softmax or a
layer norm is then one chain, which that backend runs as one kernel per call (one program per
row); with ``keepdim=False`` the reduction ends the chain (its result has another rank, so it
leaves the chain as an output: ``(x * y).sum(-1)``). Elsewhere the reductions end chains, as any
other node does.

At run time a chain runs fused only when no input requires grad under grad mode (autograd needs
the per-op nodes) and every input is a real tensor; otherwise its nodes run one by one through
dispatch, exactly as eager.

Backend protocol (optional): ``backend.fuse_elementwise(expr) -> callable | None``. The callable
takes the native arrays of ``expr``'s inputs (in order) and returns a list of native arrays, one
per ``expr.outputs`` entry, equal to running the steps one by one; returning None declines (the
generic fuser below is used then). Backends own their fusers: the cpu plugin generates one
single-pass blocked NumPy function per chain (``tensorplay_cpu.fusion``), the cuda plugin one
Triton or ``cupy.ElementwiseKernel`` kernel (``tensorplay_cuda.triton_fusion``/``cupy_fusion``).

Generic fuser (any backend built on ``ArrayBackend``; also the fallback of the backends' own
fusers): evaluates the chain with the backend's own reference kernels (``backend.kernels()``, so
results are the eager ones bit for bit), on NumPy in cache-sized blocks (each block allocates its
temporaries; the cpu plugin's fuser writes into reused block buffers instead). Non-contiguous or
broadcast inputs fall back to whole-array evaluation (still one Python function, no dispatch, no
Tensor objects).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._kernels.elementwise import OPS as ELEMENTWISE

__all__ = [
    "BLOCK",
    "FUSIBLE",
    "ElementwiseExpr",
    "FusedChain",
    "Step",
    "generic_fuser",
    "plan",
]

# built-in ops whose kernels are elementwise (output element i depends on input elements i): the
# ops of the elementwise table, which gives each fuser their forms
FUSIBLE = frozenset(ELEMENTWISE)
# reductions a backend with ``fuses_row_reductions`` takes inside chains (over the last dim)
ROW_REDUCTIONS = frozenset(("sum", "mean", "amax", "amin"))
_ROW_FLOATS = frozenset(("float16", "bfloat16", "float32", "float64"))

BLOCK = 1 << 16      # elements per block of the generic cpu fuser (256 KiB of float32)
_MIN_BLOCKED = 1 << 16


@dataclass(frozen=True)
class Step:
    """One elementwise op of a chain: ``op`` is the built-in op's kernel name (``"mul"``);
    ``args`` are ``("in", i)`` (input ``i`` of the chain), ``("step", j)`` (result of step
    ``j``) or ``("const", value)`` (a Python scalar or dtype)."""

    op: str
    args: tuple


@dataclass
class ElementwiseExpr:
    """A fusible chain: ``n_inputs`` tensor inputs, ``steps`` in order, ``outputs`` (step indices
    whose results leave the chain), ``dtypes`` (tensorplay dtype of each step's result at
    capture), ``device`` (a ``tensorplay.device``)."""

    n_inputs: int
    steps: tuple
    outputs: tuple
    dtypes: tuple
    device: object

    def __str__(self):
        names = [f"in{i}" for i in range(self.n_inputs)]
        lines = []
        for j, s in enumerate(self.steps):
            a = ", ".join(names[x[1]] if x[0] == "in" else f"t{x[1]}" if x[0] == "step"
                          else repr(x[1]) for x in s.args)
            lines.append(f"t{j} = {s.op}({a})")
        return "; ".join(lines) + f" -> {', '.join(f't{o}' for o in self.outputs)}"


@dataclass
class FusedChain:
    """A planned chain: graph nodes (consecutive), its input values and output values."""

    number: int
    nodes: list
    inputs: list            # graph Values read from outside the chain
    outputs: list           # graph Values used after the chain
    expr: ElementwiseExpr
    _compiled: dict = field(default_factory=dict)   # backend -> callable | None
    # compile's generated runner of this chain (made once, shared by the graph's checked and
    # unchecked runners)
    runner: object = None


def _fusible(node) -> bool:
    from ._capture import Value
    if node.kind != "op" or not node.op.is_builtin or node.op.mutates_args:
        return False
    if node.op.opname not in FUSIBLE or node.kwargs:
        return False
    if len(node.outputs) != 1 or node.result is not node.outputs[0]:
        return False
    out = node.outputs[0].fake
    if not out.is_contiguous():
        # a result laid out otherwise (torch's elementwise rule follows the operands' layout):
        # the fusers make row-major arrays, so the eager kernel runs it
        return False
    dev = out.device
    for a in node.args:
        if isinstance(a, Value):
            if a.fake.device != dev:
                return False
        elif isinstance(a, (list, tuple, dict)):
            return False
    return True


def _row_reduction(node) -> bool:
    """Whether ``node`` is a row reduction (see the module docstring) on a device whose backend
    fuses them."""
    from ._capture import Value
    if node.kind != "op" or not node.op.is_builtin or node.op.opname not in ROW_REDUCTIONS:
        return False
    if len(node.outputs) != 1 or node.result is not node.outputs[0] or len(node.args) != 3:
        return False
    if node.kwargs and node.kwargs != {"dtype": None}:
        return False
    x, dims, keepdim = node.args
    if not isinstance(x, Value) or keepdim.__class__ is not bool or x.fake.ndim == 0:
        return False
    if not isinstance(dims, (list, tuple)) or len(dims) != 1 or \
            dims[0] not in (-1, x.fake.ndim - 1) or dims[0].__class__ is not int:
        return False
    if x.fake.dtype.name not in _ROW_FLOATS or node.outputs[0].fake.dtype != x.fake.dtype:
        return False
    from . import _devices
    be = _devices.backend_of(x.fake.device.type)
    return be is not None and bool(be.fuses_row_reductions)


def plan(graph) -> list:
    """Group consecutive fusible nodes of ``graph`` into chains (2 nodes or more); sets
    ``node.fused`` and returns the ``FusedChain`` list (also stored as ``graph.groups``). A
    chain with row reductions must also hold an elementwise step."""
    runs, cur = [], []
    for n in graph.nodes:
        row = not _fusible(n) and _row_reduction(n)
        ok = row or _fusible(n)
        if ok and (not cur or (cur[0].grad_enabled == n.grad_enabled and
                               cur[0].outputs[0].fake.device == n.outputs[0].fake.device)):
            cur.append(n)
            if row and n.args[2] is False:      # another rank: nothing after it joins
                if len(cur) > 1:
                    runs.append(cur)
                cur = []
            continue
        if len(cur) > 1:
            runs.append(cur)
        cur = [n] if ok and not (row and n.args[2] is False) else []
    if len(cur) > 1:
        runs.append(cur)
    # a run of row reductions alone (x.sum(-1, keepdim=True) then .amax(...)) is no chain: the
    # eager reduction kernels serve it as well
    runs = [r for r in runs if any(_fusible(n) for n in r)]
    # uses of each value after a given node index (and by the graph output)
    last_use: dict = {}
    for n in graph.nodes:
        for v in n.inputs():
            last_use[id(v)] = max(last_use.get(id(v), -1), n.index)
    out_vals: list = []
    _collect(graph.output, out_vals)
    for v in out_vals:
        last_use[id(v)] = len(graph.nodes) + 1
    chains = []
    for run in runs:
        inputs, steps, dtypes = steps_of(run)
        end = run[-1].index
        outs = [j for j, n in enumerate(run) if last_use.get(id(n.outputs[0]), -1) > end]
        if not outs:
            outs = [len(run) - 1]
        expr = ElementwiseExpr(len(inputs), tuple(steps), tuple(outs), tuple(dtypes),
                               run[0].outputs[0].fake.device)
        ch = FusedChain(len(chains), run, inputs, [run[j].outputs[0] for j in outs], expr)
        for n in run:
            n.fused = ch.number
        chains.append(ch)
    graph.groups = chains
    return chains


def _row_dims(dims):
    # a row reduction's dims, normalised (the fusers read (-1,))
    return (-1,)


def steps_of(nodes, dims=_row_dims):
    """``(inputs, steps, dtypes)`` of ``nodes`` (consecutive, each one tensor output) as chain
    steps: ``inputs`` the values read from outside them (first-use order), ``steps`` the
    ``Step``s, ``dtypes`` each result's dtype. A reduction's dims become ``("const", dims(d))``
    (default: the row reduction's ``(-1,)``), its keepdim a constant; Python numbers the
    constants the eager kernels compute with (``_const_value``)."""
    from ._capture import Value
    produced: dict = {}
    inputs, in_idx, steps, dtypes = [], {}, [], []
    for n in nodes:
        args = []
        for a in n.args:
            if isinstance(a, Value):
                if id(a) in produced:
                    args.append(("step", produced[id(a)]))
                else:
                    if id(a) not in in_idx:
                        in_idx[id(a)] = len(inputs)
                        inputs.append(a)
                    args.append(("in", in_idx[id(a)]))
            elif n.op.opname in ROW_REDUCTIONS:
                args.append(("const", dims(a) if isinstance(a, (list, tuple)) else a))
            else:
                args.append(("const", _const_value(n.op.kernel_name, a, n.args)))
        produced[id(n.outputs[0])] = len(steps)
        steps.append(Step(n.op.kernel_name, tuple(args)))
        dtypes.append(n.outputs[0].fake.dtype)
    return inputs, steps, dtypes


def _const_value(op, value, args):
    """The constant a fuser computes with for the Python number ``value`` among ``args`` of
    ``op``: rounded to the op's common dtype when that is float16/bfloat16 and torch rounds it
    there (``_dtype.scalar_operand``), so every fuser, whatever its compute dtype, computes with
    the eager kernels' value."""
    from . import _dtype
    from ._capture import Value
    if op not in _dtype.SCALAR_ROUNDED or value.__class__ not in (int, float):
        return value
    t = next((a.fake for a in args if isinstance(a, Value)), None)
    if t is None:
        return value
    common = _dtype.result_type(t.dtype, 2 if t.ndim else 1, _dtype.wrapped_dtype(value), 0)
    r = _dtype.scalar_operand(op, value, common)
    if value.__class__ is int and r.__class__ is float:
        import math
        return int(r) if math.isfinite(r) else value    # an int stays an int constant
    return r


def _collect(x, out):
    from ._capture import _collect_values
    _collect_values(x, out)


def get_fused(chain: FusedChain, backend):
    """The callable running ``chain`` on ``backend``'s native arrays, or None (no fuser)."""
    return fused_for(chain._compiled, chain.expr, backend)


def fused_for(compiled: dict, expr: ElementwiseExpr, backend):
    """``get_fused`` on a chain's parts: its ``_compiled`` table (filled here) and its ``expr``
    (for callers that must not hold the chain itself, such as its own generated runner)."""
    fn = compiled.get(backend, False)
    if fn is False:
        fn = backend.fuse_elementwise(expr)
        if fn is None:
            fn = generic_fuser(expr, backend)
        compiled[backend] = fn
    return fn


def generic_fuser(expr: ElementwiseExpr, backend):
    """Fuser for ``ArrayBackend``s: the backend's reference kernels, blocked on NumPy.

    Returns ``run(arrays) -> list of arrays`` or None when the backend has no kernels for one of
    the steps.
    """
    np = backend.np
    if np is None:
        return None
    table = backend.kernels()
    ks = [table.get(s.op) for s in expr.steps]
    if any(k is None for k in ks):
        return None
    # (row reductions: whole arrays, their rows must not be cut into blocks)
    blocked_ok = getattr(np, "__name__", "") == "numpy" and not any(
        s.op in ROW_REDUCTIONS for s in expr.steps)
    steps = [(k, s.args) for k, s in zip(ks, expr.steps)]
    outputs = expr.outputs

    def evaluate(env):
        tmp = []
        for k, args in steps:
            tmp.append(k(*[env[a[1]] if a[0] == "in" else tmp[a[1]] if a[0] == "step" else a[1]
                           for a in args]))
        return [tmp[o] for o in outputs]

    def run(arrays):
        if blocked_ok:
            shape = None
            n = 0
            ok = True
            for a in arrays:
                if a.ndim == 0:
                    continue
                if shape is None:
                    shape = a.shape
                    n = a.size
                if a.shape != shape or not a.flags.c_contiguous:
                    ok = False
                    break
            if ok and shape is not None and n >= _MIN_BLOCKED:
                return _blocked(arrays, shape, n)
        return [np.asarray(r) for r in evaluate(arrays)]

    def _blocked(arrays, shape, n):
        flats = [a.reshape(-1) if a.ndim else a for a in arrays]
        first = evaluate([f[:BLOCK] if f.ndim else f for f in flats])
        outs = [np.empty(n, dtype=r.dtype) for r in first]
        if any(r.shape != (min(BLOCK, n),) for r in first):
            return [np.asarray(r) for r in evaluate(arrays)]    # not elementwise after all
        for o, r in zip(outs, first):
            o[:BLOCK] = r
        for s in range(BLOCK, n, BLOCK):
            e = s + BLOCK
            res = evaluate([f[s:e] if f.ndim else f for f in flats])
            for o, r in zip(outs, res):
                o[s:e] = r
        return [o.reshape(shape) for o in outs]

    return run
