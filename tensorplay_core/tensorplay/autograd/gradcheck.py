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



_FAST_HINT = ("; fast_mode compares v^T J u for one random direction u per input and v per "
              "output; the entry-wise (fast_mode=False) check says: ")


def _refuse(api: str, **flags) -> None:
    """``NotImplementedError`` for a check this autograd cannot run, only when it is asked for."""
    for name, (value, why) in flags.items():
        if value:
            raise NotImplementedError(f"{api}: {name}=True is not supported: {why}; pass "
                                      f"{name}=False (the default)")


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences
    (``torch.autograd.gradcheck``, same signature and checks).

    ``inputs``: a tensor or a tuple of arguments; floating Tensors with ``requires_grad=True``
    are checked (use float64 for tight tolerances, as with torch). Entry-wise (default): the
    analytical Jacobian is built one row per output element (one ``autograd.grad`` each) and
    compared with central differences ``(f(x + eps) - f(x - eps)) / 2 eps``, one input element
    at a time; every entry must agree within ``atol + rtol * |numerical|`` (``torch.allclose``
    semantics: a NaN on either side, or an infinity against a finite value, disagrees).

    * ``fast_mode=True``: torch's fast gradcheck. For each checked input ``i`` and output ``o``
      it compares one number, ``v^T J u``, where ``u`` (per input) and ``v`` (per output) are
      fixed pseudo-random non-negative unit vectors: analytically ``(v^T J) . u`` (one backward
      per output), numerically ``v . (f(x + eps u) - f(x - eps u)) / 2 eps`` (two calls per
      input), with ``atol`` scaled by ``sum(u) * sum(v)`` as torch does. Far fewer calls for large
      inputs; a mismatch then reruns the entry-wise check for the message.
    * ``nondet_tol``: every analytical Jacobian (or ``v^T J``) is computed twice; entries further
      apart than ``nondet_tol`` (default 0: bit-identical) fail as "Backward is not reentrant".
    * Always (as torch): backward with zero ``grad_outputs`` must give zero (or no) input
      gradients of each input's dtype, device and shape ("backward not multiplied by
      grad_output", "grad is incorrect type/device/size").
    * ``check_undefined_grad`` (default True): with several outputs, a backward run from all
      outputs but one (that one gets no gradient, torch's "undefined" output grad) must work and
      give zero or no input gradients.
    * ``check_grad_dtypes``: an analytical gradient whose dtype differs from its input's fails.
    * ``check_backward_ad=False`` skips the backward checks (then nothing is checked: with
      ``check_forward_ad`` also False that is torch's error, here ``ValueError``).
    * ``masked``: accepted for torch's signature; it only concerns sparse inputs, which
      tensorplay does not have, so it changes nothing.
    * ``check_forward_ad``, ``check_batched_grad``, ``check_batched_forward_grad``: tensorplay
      has no forward-mode AD and no batched (vmap) gradients: ``NotImplementedError`` naming the
      argument when one is True (False, the default, is accepted).

    Returns True when every check passes; otherwise raises ``GradcheckError`` (a
    ``RuntimeError``) naming the check, the output, the input, the entry and both values in
    full precision, or returns False when ``raise_exception=False``. ``ValueError`` when no
    input requires grad.

    Example::

        x = tensorplay.randn(3, dtype=tensorplay.float64, requires_grad=True)
        assert tensorplay.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
        assert tensorplay.autograd.gradcheck(tensorplay.sin, (x,), fast_mode=True)
    """
    _refuse("gradcheck",
            check_forward_ad=(check_forward_ad, "tensorplay has no forward-mode AD"),
            check_batched_grad=(check_batched_grad, "tensorplay has no batched (vmap) "
                                "gradients"),
            check_batched_forward_grad=(check_batched_forward_grad, "tensorplay has no "
                                        "forward-mode AD nor batched gradients"))
    if not check_backward_ad:
        raise ValueError("gradcheck: Expected at least one of check_forward_ad or "
                         "check_backward_ad to be True (tensorplay has only backward AD)")
    try:
        _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                   check_grad_dtypes, fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
               check_grad_dtypes, fast_mode) -> None:
    """``gradcheck``'s checks; raises ``GradcheckError`` on the first failure."""
    from .._tensor_base import TensorBase as Tensor
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad; set requires_grad=True on the "
                         "floating inputs to check")

    def outputs_of(args):
        out = func(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]

    outs = outputs_of(inputs)
    if fast_mode:
        try:
            _fast_check(inputs, diff, outs, outputs_of, eps, atol, rtol, nondet_tol,
                        check_grad_dtypes)
        except _FastMismatch as e:
            try:    # the entry-wise check names the entry (torch reruns slow mode too)
                _slow_check(inputs, diff, outs, outputs_of, eps, atol, rtol, nondet_tol,
                            check_grad_dtypes)
            except GradcheckError as slow:
                raise GradcheckError(f"{e}{_FAST_HINT}{slow}") from None
            raise GradcheckError(str(e)) from None
    else:
        _slow_check(inputs, diff, outs, outputs_of, eps, atol, rtol, nondet_tol,
                    check_grad_dtypes)
    _check_zero_grad_outputs(inputs, diff, outs)
    if check_undefined_grad:
        _check_undefined_grad(inputs, diff, outputs_of)


class _FastMismatch(GradcheckError):
    """fast_mode's ``v^T J u`` disagreed (the entry-wise check then words the error)."""


def _analytic_twice(vjp, nondet_tol, what: str):
    """``vjp()`` (a list of floats) run twice: torch's reentrancy check with ``nondet_tol``."""
    first, second = vjp(), vjp()
    for a, b in zip(first, second):
        # torch's test, ``|a - b| > nondet_tol``: a NaN difference (NaN, inf - inf) is not a
        # reentrancy failure; the comparison with finite differences judges it
        if a != b and abs(a - b) > nondet_tol:
            raise GradcheckError(
                f"gradcheck: Backward is not reentrant, i.e., running backward with same input "
                f"and grad_output multiple times gives different values ({what}: {a!r} then "
                f"{b!r}), although analytical gradient matches numerical gradient. The "
                f"tolerance for nondeterminism was {nondet_tol!r} (nondet_tol).")
    return first


def _grad_of(out_list, x_list, gos):
    from .api import grad as _grad
    return _grad(out_list, x_list, gos, retain_graph=True, allow_unused=True)


def _dtype_check(g, x, check_grad_dtypes, i):
    if check_grad_dtypes and g is not None and g.dtype != x.dtype:
        raise GradcheckError(f"gradcheck: Gradient has dtype mismatch: input {i} is {x.dtype}, "
                             f"its gradient {g.dtype} (check_grad_dtypes=True)")


def _mismatch_msg(oi, i, where, num, ana, atol, rtol) -> str:
    # repr: the shortest digits that tell two different floats apart
    msg = (f"gradcheck: Jacobian mismatch for output {oi} with respect to input {i}: {where} "
           f"numerical={num!r} analytical={ana!r} (atol={atol!r}, rtol={rtol!r})")
    if math.isnan(num) or math.isnan(ana):
        side = ("both are" if math.isnan(num) and math.isnan(ana) else
                "the numerical one (the function's value next to the input) is"
                if math.isnan(num) else "the analytical one (the backward's result) is")
        msg += f"; {side} NaN"
    return msg


def _slow_check(inputs, diff, outs, outputs_of, eps, atol, rtol, nondet_tol,
                check_grad_dtypes) -> None:
    from .grad_mode import no_grad
    from .._dtype import contiguous_format
    for oi, out in enumerate(outs):
        flat_out = out.reshape(-1)
        n_out = flat_out.numel()
        for i in diff:
            x = inputs[i]
            # analytical Jacobian rows (each twice: the reentrancy check)
            analytic = []
            for j in range(n_out):
                if not out.requires_grad:
                    analytic.append([0.0] * x.numel())
                    continue

                def row(j=j, x=x, i=i, flat_out=flat_out):
                    g = _grad_of([flat_out[j]], [x], None)[0]
                    _dtype_check(g, x, check_grad_dtypes, i)
                    return g.reshape(-1).tolist() if g is not None else [0.0] * x.numel()
                analytic.append(_analytic_twice(row, nondet_tol,
                                                f"d out{oi}[{j}] / d in{i}"))
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
                        raise GradcheckError(_mismatch_msg(oi, i, f"d out[{j}] / d in[{k}]",
                                                           num, ana, atol, rtol))


def _unit_vector(rnd, n: int) -> list[float]:
    """``n`` uniform [0, 1) values scaled to unit norm (torch's ``_vec_from_tensor``)."""
    v = [rnd.random() for _ in range(n)]
    norm = math.sqrt(sum(e * e for e in v)) or 1.0
    return [e / norm for e in v]


def _fast_check(inputs, diff, outs, outputs_of, eps, atol, rtol, nondet_tol,
                check_grad_dtypes) -> None:
    """torch's fast gradcheck: ``v^T J u`` analytically and numerically, per (input, output)."""
    import random

    from .. import _factories
    from .grad_mode import no_grad
    rnd = random.Random(0)     # fixed: a failure reproduces (torch uses its own generator too)
    us = {i: _unit_vector(rnd, inputs[i].numel()) for i in diff}
    vs = [_unit_vector(rnd, o.numel()) for o in outs]
    xs = [inputs[i] for i in diff]
    # analytical: (v^T J_i) . u_i, for every output (one backward per output, twice)
    ana = {}
    for oi, out in enumerate(outs):
        if not out.requires_grad:
            for i in diff:
                ana[i, oi] = 0.0
            continue
        v = _factories.tensor(vs[oi], dtype=out.dtype, device=out.device).reshape(
            list(out.shape))

        def vju(out=out, v=v):
            gs = _grad_of([out], xs, [v])
            res = []
            for i, g in zip(diff, gs):
                _dtype_check(g, inputs[i], check_grad_dtypes, i)
                res.append(0.0 if g is None else
                           sum(a * b for a, b in zip(g.reshape(-1).tolist(), us[i])))
            return res
        for i, a in zip(diff, _analytic_twice(vju, nondet_tol, f"v^T J u of output {oi}")):
            ana[i, oi] = a
    # numerical: v . (f(x + eps u) - f(x - eps u)) / 2 eps, for every input
    for i in diff:
        x = inputs[i]
        u = _factories.tensor(us[i], dtype=x.dtype, device=x.device).reshape(list(x.shape))
        with no_grad():
            base = x.detach()
            args = list(inputs)
            args[i] = base + eps * u
            plus = outputs_of(args)
            args[i] = base - eps * u
            minus = outputs_of(args)
        su = sum(us[i])
        for oi in range(len(outs)):
            d = [(p - m) / (2 * eps) for p, m in zip(plus[oi].reshape(-1).tolist(),
                                                        minus[oi].reshape(-1).tolist())]
            num = sum(a * b for a, b in zip(d, vs[oi]))
            tol = atol * su * sum(vs[oi])    # torch's _adjusted_atol: atol in v^T J u units
            if not _close(ana[i, oi], num, tol, rtol):
                raise _FastMismatch(_mismatch_msg(oi, i, "v^T J u", num, ana[i, oi], tol,
                                                  rtol))


def _check_zero_grad_outputs(inputs, diff, outs) -> None:
    """torch's ``_test_backward_mul_by_grad_output``: zero grad_outputs give zero input grads of
    each input's dtype, device and shape."""
    from .. import _factories
    live = [o for o in outs if o.requires_grad]
    if not live:
        return
    xs = [inputs[i] for i in diff]
    gs = _grad_of(live, xs, [_factories.zeros_like(o) for o in live])
    for i, x, g in zip(diff, xs, gs):
        if g is None:
            continue
        bad = ("backward not multiplied by grad_output" if bool((g != 0).any()) else
               "grad is incorrect type" if g.dtype != x.dtype else
               "grad is incorrect device" if g.device != x.device else
               "grad is incorrect size" if tuple(g.shape) != tuple(x.shape) else None)
        if bad:
            raise GradcheckError(f"gradcheck: {bad} (input {i}: backward from zero "
                                 f"grad_outputs gave a {g.dtype} gradient of shape "
                                 f"{tuple(g.shape)} on {g.device}; expected zeros of "
                                 f"{x.dtype} {tuple(x.shape)} on {x.device})")


def _check_undefined_grad(inputs, diff, outputs_of) -> None:
    """torch's undefined-output-grad check: from a fresh forward, backward from every output but
    one (that one's gradient is undefined) with zero gradients must run and give zero input
    gradients. One output: the zero-grad_outputs check above already is that case."""
    from .. import _factories
    from .grad_mode import enable_grad
    xs = [inputs[i] for i in diff]
    with enable_grad():
        n = len(outputs_of(inputs))
    if n < 2:
        return
    for skip in range(n):
        with enable_grad():
            outs = outputs_of(inputs)
        used = [o for j, o in enumerate(outs) if j != skip and o.requires_grad]
        if not used:
            continue
        try:
            gs = _grad_of(used, xs, [_factories.zeros_like(o) for o in used])
        except RuntimeError as e:
            raise GradcheckError(
                f"gradcheck: Expected backward function to handle undefined output grads: the "
                f"backward from every output but output {skip} (which got no gradient) raised "
                f"{type(e).__name__}: {e} (check_undefined_grad=False skips this check)") from e
        for i, g in zip(diff, gs):
            if g is not None and bool((g != 0).any()):
                raise GradcheckError(
                    f"gradcheck: Expected all input grads to be undefined or zero when all "
                    f"output grads are undefined or zero: input {i} got a nonzero gradient "
                    f"with output {skip} undefined and the others zero "
                    f"(check_undefined_grad=False skips this check)")


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False, seed: int = 0) -> bool:
    """Check second derivatives of ``func`` (``torch.autograd.gradgradcheck``, same signature
    plus ``seed``).

    Runs ``gradcheck`` on ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs,
    grad_outputs, create_graph=True)``, so the backward formulas themselves must be
    differentiable. ``grad_outputs`` default to fixed pseudo-random tensors in [-1, 1)
    (``seed``) shaped like ``func``'s floating outputs, with their dtype and device;
    ``gen_non_contig_grad_outputs=True`` makes them non-contiguous (every other element of a
    buffer twice as long in the last dimension). ``eps``, ``atol``, ``rtol``, ``nondet_tol``,
    ``check_undefined_grad``, ``check_grad_dtypes``, ``fast_mode``, ``masked`` and
    ``raise_exception`` are ``gradcheck``'s, applied to that function. ``check_rev_over_rev``
    (default True) is this reverse-over-reverse check; ``check_fwd_over_rev`` and
    ``check_batched_grad`` need forward-mode AD / batched gradients, which tensorplay does not
    have: ``NotImplementedError`` naming the argument when True. ``ValueError`` (torch: an
    assertion) when ``check_rev_over_rev`` is False, as then nothing would be checked.
    Raises/returns as ``gradcheck`` (``GradcheckError`` on a mismatch, NaN included).
    """
    _refuse("gradgradcheck",
            check_fwd_over_rev=(check_fwd_over_rev, "tensorplay has no forward-mode AD"),
            check_batched_grad=(check_batched_grad, "tensorplay has no batched (vmap) "
                                "gradients"))
    if not check_rev_over_rev:
        raise ValueError("gradgradcheck: Expected at least one of check_fwd_over_rev or "
                         "check_rev_over_rev to be True (tensorplay has only "
                         "reverse-over-reverse)")
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
        outs = floating_outputs(func(*inputs))
    if grad_outputs is None:
        rnd = random.Random(seed)
        def make(o):
            shape = list(o.shape)
            if gen_non_contig_grad_outputs and shape:
                # every other element of a buffer twice as long in the last dimension
                wide = shape[:-1] + [2 * shape[-1]]
                n = 1
                for d in wide:
                    n *= d
                buf = _factories.tensor([rnd.uniform(-1.0, 1.0) for _ in range(n)],
                                        dtype=o.dtype, device=o.device).reshape(wide)
                return buf[..., ::2].requires_grad_(True)
            return (_factories.tensor([rnd.uniform(-1.0, 1.0) for _ in range(o.numel())],
                                      dtype=o.dtype, device=o.device).reshape(shape)
                    .requires_grad_(True))
        grad_outputs = tuple(make(o) for o in outs)
    grad_outputs = tuple(grad_outputs)
    n = len(inputs)

    def first_grad(*args):
        with enable_grad():
            ins = [x.detach().requires_grad_(True) if m and not x.requires_grad else x
                   for x, m in zip(args[:n], mask)]
            gos = list(args[n:])
            os_ = floating_outputs(func(*ins))
            keep = [i for i, o in enumerate(os_) if o.requires_grad]
            diff = [x for x, m in zip(ins, mask) if m]
            if not keep:
                return tuple(_factories.zeros_like(x) for x in diff)
            gs = _grad([os_[i] for i in keep], diff, [gos[i] for i in keep],
                       create_graph=True, allow_unused=True)
            return tuple(g if g is not None else _factories.zeros_like(x)
                         for g, x in zip(gs, diff))

    return gradcheck(first_grad, tuple(inputs) + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode, masked=masked)
