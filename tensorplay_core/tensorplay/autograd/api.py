"""``tensorplay.autograd.backward`` and ``tensorplay.autograd.grad`` (torch semantics)."""

from __future__ import annotations

from .._tensor_base import TensorBase
from .graph import backward_root, edge_of, run_backward


def _tensors_arg(x, api, arg, *, none_ok=False):
    """``x`` (a Tensor or a sequence of them; ``None`` items when ``none_ok``) as a list, or a
    ``TypeError`` naming ``api``'s argument ``arg`` (torch raises TypeError there too)."""
    T = TensorBase
    if isinstance(x, T):
        return [x]
    items = list(x) if isinstance(x, (list, tuple)) else None
    what = "Tensors or None" if none_ok else "Tensors"
    if items is None:
        raise TypeError(f"{api}: {arg} must be a Tensor or a sequence (list/tuple) of {what}; "
                        f"got {type(x).__name__}")
    for i, t in enumerate(items):
        if not (isinstance(t, T) or (none_ok and t is None)):
            raise TypeError(f"{api}: {arg}[{i}] must be a Tensor{' or None' if none_ok else ''}; "
                            f"got {type(t).__name__}")
    return items




_FACTORIES: list = [None]   # tensorplay._factories, once imported (no import per call)
_MODE: list = [None]        # tensorplay._dispatch._state (per-thread mode), once imported
_CPU_SEEDS: dict = {}       # (shape, dtype) -> read-only numpy array of ones


def _ones_seed(t):
    """``ones_like(t)``, the implicit gradient of a one-element output. A real tensor outside
    fake/capture modes gets it straight from its backend (same values, dtype, device and
    layout as the ``tp::full`` kernel gives; a quarter of the cost)."""
    if t.native is not None and t.capture_info is None:
        mode = _MODE[0]
        if mode is None:
            from .._dispatch import _state as mode
            _MODE[0] = mode
        if mode.mode is None:
            b = t.backend
            if t.raw_device.type != "cpu":
                return b.wrap(b.full(t.raw_shape, 1, t.raw_dtype, t.raw_device), t.raw_device)
            # cpu: copy a read-only template (one per shape/dtype; seeds have one element)
            key = (t.raw_shape, t.raw_dtype)
            tpl = _CPU_SEEDS.get(key)
            if tpl is None:
                tpl = b.full(t.raw_shape, 1, t.raw_dtype, t.raw_device)
                tpl.flags.writeable = False
                if len(_CPU_SEEDS) < 64:
                    _CPU_SEEDS[key] = tpl
            return b.wrap(tpl.copy(), t.raw_device)
    f = _FACTORIES[0]
    if f is None:
        from .. import _factories as f
        _FACTORIES[0] = f
    return f.ones_like(t)


_ONE_ELEMENT = frozenset({(), (1,), (1, 1)})   # shapes whose implicit seed is ones (fast path)


def _roots(tensors, grad_tensors, api, grad_arg):
    roots, grads = [], []
    gl = ([None] * len(tensors) if grad_tensors is None else
          _tensors_arg(grad_tensors, api, grad_arg, none_ok=True))
    if len(gl) != len(tensors):
        raise RuntimeError(f"{api}: got {len(tensors)} tensors but {len(gl)} gradients")
    for i, (t, g) in enumerate(zip(tensors, gl)):
        if not t.requires_grad:
            raise RuntimeError(
                f"{api}: element {i} of tensors does not require grad and does not have a "
                f"grad_fn (shape {tuple(t.shape)}). Set requires_grad=True on an input first.")
        if g is not None:
            if g.raw_shape != t.raw_shape:
                # torch's validate_outputs: a broadcastable gradient is refused too
                raise RuntimeError(
                    f"{api}: Mismatch in shape: grad_output[{i}] has a shape of "
                    f"{tuple(g.raw_shape)} and output[{i}] has a shape of {tuple(t.raw_shape)}. "
                    f"Pass a gradient of the output's shape.")
        else:
            if t.numel() != 1:
                raise RuntimeError(f"{api}: grad can be implicitly created only for scalar "
                                   f"outputs; got shape {tuple(t.shape)}. Pass a gradient.")
            g = _ones_seed(t)
        roots.append(edge_of(t))
        grads.append(g)
    return roots, grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaves) into each leaf's ``.grad`` (same as ``torch.autograd.backward``).

    ``tensors``: a Tensor or sequence; ``grad_tensors``: matching gradients (may be omitted for
    one-element outputs). Raises ``TypeError`` when ``tensors``, ``grad_tensors`` or ``inputs``
    is not a Tensor or a sequence of them, ``RuntimeError`` when a tensor does not require grad
    or a non-scalar output has no gradient given.
    """
    if grad_tensors is None and inputs is None and not create_graph:
        # (not a view: its grad_fn is the slot, read without the property's frame)
        fn = getattr(tensors, "raw_grad_fn", None)
        if fn is not None and tensors.view_base is None and tensors.raw_shape in _ONE_ELEMENT:
            # y.backward() of a one-element non-leaf (the training-loop case): the implicit
            # seed goes straight to the engine, which hands it on without a copy
            backward_root(fn, tensors.output_nr, _ones_seed(tensors), bool(retain_graph))
            return None
    tensors = _tensors_arg(tensors, "backward", "tensors")
    roots, grads = _roots(tensors, grad_tensors, "backward", "grad_tensors (gradient)")
    keep = create_graph if retain_graph is None else retain_graph
    if inputs is not None:
        ins = _tensors_arg(inputs, "backward", "inputs")
        if not ins:
            raise RuntimeError("backward: inputs must not be empty (pass None to accumulate "
                               "into every leaf)")
        for i, t in enumerate(ins):
            if not t.requires_grad:
                raise RuntimeError(f"backward: inputs[{i}] does not require grad (torch: One of "
                                   f"the differentiated Tensors does not require grad)")
            if t.grad_fn is not None:
                t.retain_grad()   # torch's: a non-leaf input's .grad is its retained gradient
        # only the nodes on a path to the inputs run, the inputs' own included: a leaf's
        # AccumulateGrad (hooks, .grad, post-accumulate hooks), a non-leaf's grad_fn (hooks,
        # retain_grad's store), as torch's engine does
        run_backward(roots, grads, keep_graph=keep, create_graph=create_graph, inputs=ins,
                     accumulate_inputs=True)
        return None
    run_backward(roots, grads, keep_graph=keep, create_graph=create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching ``.grad`` (same as ``torch.autograd.grad``).

    Returns a tuple with one gradient per input; ``None`` for unused inputs when
    ``allow_unused=True``, otherwise an unused input raises ``RuntimeError``. ``outputs`` and
    ``inputs`` must be a Tensor or a sequence of Tensors, ``grad_outputs`` ``None``, a Tensor
    or a sequence of Tensors/None: ``TypeError`` naming the argument otherwise (torch's rule).
    ``materialize_grads=True``: zeros instead of None for unused inputs (``allow_unused``
    defaults to it; ``allow_unused=False`` with it is torch's ValueError). Only the nodes on a
    path to ``inputs`` run; an input's tensor hooks run on the gradient ``grad`` returns.
    """
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _tensors_arg(outputs, "autograd.grad", "outputs")
    ins = _tensors_arg(inputs, "autograd.grad", "inputs")
    if not ins:
        raise RuntimeError("autograd.grad: inputs must not be empty (torch: grad requires "
                           "non-empty inputs)")
    roots, grads = _roots(outs, grad_outputs, "autograd.grad", "grad_outputs")
    keep = create_graph if retain_graph is None else retain_graph
    res = run_backward(roots, grads, keep_graph=keep, create_graph=create_graph, inputs=ins,
                       allow_unused=allow_unused)
    if materialize_grads and None in res:
        from .. import _factories
        res = tuple(g if g is not None else
                    _factories.zeros_like(t, requires_grad=bool(create_graph))
                    for g, t in zip(res, ins))
    return res
