"""``gradcheck``: compare analytical gradients with central finite differences (torch semantics)."""

from __future__ import annotations

import math


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck``/``gradgradcheck`` (``raise_exception=True``) when an analytical
    gradient disagrees with finite differences (torch's ``torch.autograd.GradcheckError``)."""


def _close(ana: float, num: float, atol: float, rtol: float) -> bool:
    """``torch.allclose(ana, num, rtol, atol)`` for one entry (``equal_nan=False``): equal
    values (infinities of one sign included) are close; NaN on either side, or an infinity
    against anything else, is not; else ``|ana - num| <= atol + rtol * |num|``."""
    if ana == num:
        return True
    err = abs(ana - num)
    # NaN compares False and an infinite error is never within a tolerance (even an infinite
    # one, rtol * |inf|): both fail, as in torch.isclose
    return math.isfinite(err) and err <= atol + rtol * abs(num)



def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Check the gradients of ``fn`` at ``inputs`` against finite differences.

    ``inputs``: a tuple of arguments; floating Tensors with ``requires_grad=True`` are checked
    (use float64 for tight tolerances, as with ``torch.autograd.gradcheck``). The analytical
    Jacobian is built one row per output element (one ``autograd.grad`` each) and compared with
    central differences ``(f(x + eps) - f(x - eps)) / 2 eps``, one input element at a time.
    Returns True when every entry agrees within ``atol + rtol * |numerical|`` (``torch.allclose``
    semantics: a NaN on either side, or an infinity against a finite value, disagrees);
    otherwise raises ``GradcheckError`` (a ``RuntimeError``) naming the output, the input, the
    entry and both values in full precision (or returns False when ``raise_exception=False``).
    ``ValueError`` when no input requires grad.

    Example::

        x = tensorplay.randn(3, dtype=tensorplay.float64, requires_grad=True)
        assert tensorplay.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    """
    from .._tensor_base import TensorBase as Tensor
    from .api import grad as _grad
    from .grad_mode import no_grad
    from .._dtype import contiguous_format
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad; set requires_grad=True on the "
                         "floating inputs to check")

    def outputs_of(args):
        out = fn(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]

    outs = outputs_of(inputs)
    for oi, out in enumerate(outs):
        flat_out = out.reshape(-1)
        n_out = flat_out.numel()
        for i in diff:
            x = inputs[i]
            # analytical Jacobian rows
            analytic = []
            for j in range(n_out):
                if not out.requires_grad:
                    analytic.append([0.0] * x.numel())
                    continue
                g = _grad([flat_out[j]], [x], retain_graph=True, allow_unused=True)[0]
                analytic.append(g.reshape(-1).tolist() if g is not None else [0.0] * x.numel())
            # numerical Jacobian columns
            # row-major, so that flat is a view of it (clone keeps a dense input's strides)
            base = x.detach().clone(memory_format=contiguous_format)
            flat = base.reshape(-1)
            for k in range(x.numel()):
                orig = flat[k].item()
                with no_grad():
                    flat[k] = orig + eps
                    args = list(inputs)
                    args[i] = base
                    plus = outputs_of(args)[oi].reshape(-1).tolist()
                    flat[k] = orig - eps
                    minus = outputs_of(args)[oi].reshape(-1).tolist()
                    flat[k] = orig
                for j in range(n_out):
                    num = (plus[j] - minus[j]) / (2 * eps)
                    ana = analytic[j][k]
                    if not _close(ana, num, atol, rtol):
                        # repr: the shortest digits that tell two different floats apart
                        msg = (f"gradcheck: Jacobian mismatch for output {oi} with respect to input "
                               f"{i}: d out[{j}] / d in[{k}] numerical={num!r} "
                               f"analytical={ana!r} (atol={atol!r}, rtol={rtol!r})")
                        if math.isnan(num) or math.isnan(ana):
                            side = ("both are" if math.isnan(num) and math.isnan(ana) else
                                    "the numerical one (the function's value next to the input) "
                                    "is" if math.isnan(num) else "the analytical one (the "
                                    "backward's result) is")
                            msg += f"; {side} NaN"
                        if raise_exception:
                            raise GradcheckError(msg)
                        return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0) -> bool:
    """Check second derivatives of ``fn`` (same as ``torch.autograd.gradgradcheck``).

    Runs ``gradcheck`` on ``(inputs, grad_outputs) -> autograd.grad(fn(inputs), inputs,
    grad_outputs, create_graph=True)``, so the backward formulas themselves must be
    differentiable. ``grad_outputs`` default to fixed pseudo-random float64 tensors (``seed``)
    shaped like ``fn``'s floating outputs. Raises/returns as ``gradcheck`` (``GradcheckError``
    on a mismatch, NaN included).
    """
    import random

    from .. import _factories
    from .._tensor_base import TensorBase as Tensor
    from .api import grad as _grad
    from .grad_mode import enable_grad
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    mask = [isinstance(x, Tensor) and x.requires_grad for x in inputs]
    if not any(mask):
        raise ValueError("gradgradcheck: no input requires grad; set requires_grad=True on the "
                         "floating inputs to check")

    def floating_outputs(out):
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]

    with enable_grad():
        outs = floating_outputs(fn(*inputs))
    if grad_outputs is None:
        rnd = random.Random(seed)
        grad_outputs = tuple(
            _factories.tensor([rnd.uniform(-1.0, 1.0) for _ in range(o.numel())],
                              dtype=o.dtype, device=o.device).reshape(list(o.shape))
            .requires_grad_(True) for o in outs)
    grad_outputs = tuple(grad_outputs)
    n = len(inputs)

    def first_grad(*args):
        with enable_grad():
            ins = [x.detach().requires_grad_(True) if m and not x.requires_grad else x
                   for x, m in zip(args[:n], mask)]
            gos = list(args[n:])
            os_ = floating_outputs(fn(*ins))
            keep = [i for i, o in enumerate(os_) if o.requires_grad]
            diff = [x for x, m in zip(ins, mask) if m]
            if not keep:
                return tuple(_factories.zeros_like(x) for x in diff)
            gs = _grad([os_[i] for i in keep], diff, [gos[i] for i in keep],
                       create_graph=True, allow_unused=True)
            return tuple(g if g is not None else _factories.zeros_like(x)
                         for g, x in zip(gs, diff))

    return gradcheck(first_grad, tuple(inputs) + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
