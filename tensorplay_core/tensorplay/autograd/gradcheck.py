"""``gradcheck``: compare analytical gradients with central finite differences (torch semantics)."""

from __future__ import annotations


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Check the gradients of ``fn`` at ``inputs`` against finite differences.

    ``inputs``: a tuple of arguments; floating Tensors with ``requires_grad=True`` are checked
    (use float64 for tight tolerances, as with ``torch.autograd.gradcheck``). Each output element
    is perturbed through a vector-Jacobian product per output element. Returns True when every
    entry agrees within ``atol + rtol * |numerical|``; otherwise raises ``RuntimeError`` naming the
    input, the output and the worst entry (or returns False when ``raise_exception=False``).
    """
    from .._tensor import Tensor
    from .api import grad as _grad
    from .grad_mode import no_grad
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
            base = x.detach().clone()
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
                    if abs(num - ana) > atol + rtol * abs(num):
                        msg = (f"gradcheck: Jacobian mismatch for output {oi} with respect to input "
                               f"{i}: d out[{j}] / d in[{k}] numerical={num:.6g} "
                               f"analytical={ana:.6g}")
                        if raise_exception:
                            raise RuntimeError(msg)
                        return False
    return True
