"""``test_gradients``: the values of an op's gradients, compared with finite differences of the op.

``test_autograd_registration`` proves that gradients *arrive* (right inputs, right shapes); this
check proves that they are *right*: the vector-Jacobian product the op's backward gives (its
``register_autograd`` formula, or for an op without one, autograd through the tensorplay ops of
its kernel) is compared with central differences of the op itself, one input at a time::

    numerical  = u . (f(x + h v) - f(x - h v)) / 2h        (u: random output cotangent,
    analytical = (J^T u) . v                                 v: random input direction)

Projections. One such projection of a wrong Jacobian lands inside the tolerance by chance about
``rtol * |J| / |error|`` of the time (1 draw in 100 for a 15% error in float32; the draws are
seeded by the op's name, the sample's values vary): so two independent pairs ``(u, v)`` are
drawn and every combination ``u_a . J v_b`` compared (one backward per ``u``, two calls of the
op per ``v``), and three wherever a disagreement is re-examined, since a pass there overrules
a failure. The projections that cannot tell (a kink inside the step, not finite) are left out;
of the others the majority decides, and a pass needs two independent ones.

Not in ``torch.library.opcheck`` (whose documentation asks users to run ``gradcheck``
themselves).

Precision. The op runs in float64 when its kernel accepts float64 inputs and returns float64
outputs (NumPy kernels); else in float32 when the sample is float16/bfloat16 and the kernel
accepts float32 (forward and backward: an op whose backward refuses the raised precision, as
Cut Cross-Entropy's asserts half-precision embeddings, runs in the sample's own dtypes); else in
the sample's own dtypes (Triton ops are never tried in float64). The
step ``h`` and the relative tolerance come from the lowest precision involved (``_STEP``,
``_RTOL``); the rounding noise of the outputs, estimated from their values and the dtype's
epsilon, is added to the tolerance, and the perturbed inputs are read back after the cast so
the analytical side uses the step the kernel really saw. A disagreement found in float64 is
checked again in float32 (or the sample's own dtype) before it is reported (a kernel that
takes float64 but computes in float32 internally is not a wrong formula); an agreement there
clears it only when its tolerance, relative to the size of the comparison, is finer than the
disagreement found (it would have seen it).

Non-smooth points (relu at 0, ties of max, integer-valued steps such as floor or round) must not
fail: when the first comparison disagrees, it is repeated with half the step, then at a nearby
point (the inputs moved by a few steps, fresh random ``u`` and ``v``; this breaks exact ties and
zeros). The input passes when any of these agrees; it is skipped, with the reason, when the
numerical derivative itself changes with the step size more than the disagreement (a jump
inside the step), when the one-sided slopes ``(f(x+hv) - f(x)) / h`` and ``(f(x) - f(x-hv)) / h``
differ by a good part of the disagreement at both steps (a kink inside the step: its central
difference does not change with the step), or when it is not finite; it fails only when most
comparisons at the nearby point are smooth, stable and disagree.

A gradient with NaN/inf elements where the op is finite on both sides of the step disagrees in
every comparison (an infinite one would otherwise widen the relative tolerance to infinity and
pass); the failure counts the NaN/inf elements and names the first.

Same scope rules as ``test_autograd_registration``: mutating ops, integer/bool inputs and
outputs, outputs the formula marks non-differentiable and inputs the formula returns ``None``
for are not compared, except an input the sample itself marks ``requires_grad``: for it ``None``
is a zero gradient and is compared (torch's gradcheck rule); an op without a formula whose sample has no input that requires grad is
skipped (as torch's opcheck does); an op tagged nondeterministic is skipped.
"""

from __future__ import annotations

import math
import threading
import zlib

from .. import _factories
from .._dtype import float32, float64
from ..autograd import api as _api
from ..autograd.grad_mode import enable_grad, no_grad
from .assertions import _all_true
from .opcheck import (NO_DERIVATIVE_NOTE, NO_GRAD_ASKED, NONDETERMINISTIC_TAGS, _Fail,
                      _flat_outputs, _formula_fix, _formula_raised, _host, _map_tensors,
                      _no_derivative,
                      _mutated, _named_tensors, _Skip, _T)

#: relative step (times ``max(1, |x|)``), per dtype of the computation: about eps^(1/3), the
#: balance of the truncation error (h^2) and the rounding error (eps / h) of central differences
_STEP = {"float64": 1e-6, "float32": 1e-3, "float16": 3e-2, "bfloat16": 1e-1}
#: relative tolerance of the directional derivative, per dtype (the truncation error, h^2 f''')
_RTOL = {"float64": 1e-4, "float32": 3e-3, "float16": 5e-2, "bfloat16": 1e-1}
#: independent random projections (u_k, v_k) compared at the sample point, every combination
#: u_a . J v_b: a wrong Jacobian agrees with the formula in one projection by chance about
#: ``rtol * |J| / |error|`` of the time (1 in 100 for a 15% error in float32), in two
#: independent ones about the square of that
_PAIRS = 2
#: the same where a disagreement is re-examined (nearby point, lower precision): a pass there
#: overrules a failure, so it must not come from one lucky projection either
_PAIRS_RETRY = 3
#: machine epsilon per dtype
_EPS = {"float64": 2.2e-16, "float32": 1.2e-7, "float16": 9.8e-4, "bfloat16": 7.8e-3}
#: rounding noise of one computed output element, in units of eps * |value|
_NOISE_ULPS = 8.0
#: the nearby point of the retry: inputs moved by this many steps
_MOVE_STEPS = 20.0
#: one-sided slopes differing by this fraction of a disagreement mark it as non-smooth
_KINK = 0.25
#: output elements examined to name the worst one (one backward each; failure path only)
_WORST_CAP = 64


def _dname(dt) -> str:
    return str(dt).rsplit(".", 1)[-1]


def _lowest(dtypes) -> str:
    """The least precise of ``dtypes`` known to the tables (float32 for others)."""
    names = [_dname(d) for d in dtypes if _dname(d) in _EPS] or ["float32"]
    return max(names, key=lambda n: _EPS[n])


def _f64(t):
    """``t``'s values as a float64 NumPy array (read from the host)."""
    import numpy as np
    h = np.asarray(_host(t))
    if h.dtype.kind == "f":
        # a host array of a NumPy floating dtype (float16/32/64): NumPy's widening is exact, as
        # the device's cast to float64 is (bfloat16, a storage type of its own, is cast there)
        return np.asarray(h, dtype=np.float64)
    return np.asarray(_host(t.detach().to(float64)), dtype=np.float64)


def _to_tensor(arr, like):
    """``arr`` (float64 NumPy) as a contiguous tensor of ``like``'s dtype and device."""
    import numpy as np
    t = _factories.from_numpy(np.array(arr, dtype=np.float64, order="C"))  # keeps 0-d
    if t.dtype is not like.dtype:       # (float64, the common computation dtype: as it is)
        t = t.to(like.dtype)
    if t.device is not like.device:     # (devices are canonical: one object each)
        t = t.to(like.device)
    return t


def formula_where(op) -> str:
    fn = op.backward_fn
    inner = getattr(fn, "__wrapped__", None) or fn
    code = getattr(inner, "__code__", None)
    name = getattr(inner, "__qualname__", None) or repr(inner)
    if code is None:
        return name
    return f"{code.co_filename}:{code.co_firstlineno} ({name})"


def _fix(op) -> str:
    if op.has_autograd:
        return f"check the formula registered with register_autograd at {formula_where(op)}"
    return ("the op has no formula, so its gradient is autograd's through the tensorplay ops of "
            "its kernel: check for a part of the computation autograd does not see (.detach(), "
            "a NumPy round trip, an in-place write to a saved tensor) or a wrong formula of an op "
            "it calls, or register a formula with register_autograd")


class _Sample:
    """The sample as a flat list of tensor slots, so one input can be replaced at a time."""

    def __init__(self, op, args, kwargs):
        T = _T()
        self.op, self.args, self.kwargs = op, args, kwargs
        found = []
        _map_tensors((args, tuple(kwargs.values())), lambda t: found.append(t) or t)
        self.tensors = found
        names = {id(t): label for label, t, _ in _named_tensors(op, args, kwargs)}
        params = {id(t): p for _, t, p in _named_tensors(op, args, kwargs)}
        mutated = _mutated(op)
        self.labels = [names.get(id(t), f"tensor input #{i}") for i, t in enumerate(found)]
        self.diff = [i for i, t in enumerate(found) if isinstance(t, T)
                     and t.dtype.is_floating_point and params.get(id(t)) not in mutated]
        # the inputs the sample's author marked requires_grad: a formula's None for one of
        # them is compared as a zero gradient (torch's gradcheck), not taken as a declaration
        self.asked = {i for i in self.diff if found[i].requires_grad}

    def with_tensors(self, new):
        """(args, kwargs) with the flat tensor slots replaced by ``new`` (same order)."""
        it = iter(new)
        a = tuple(_map_tensors(v, lambda t: next(it)) for v in self.args)
        k = {n: _map_tensors(v, lambda t: next(it)) for n, v in self.kwargs.items()}
        return a, k

    def describe(self, tensors=None) -> str:
        T = _T()
        ts = self.tensors if tensors is None else tensors
        return ", ".join(f"{lbl}: {_dname(t.dtype)} {tuple(t.shape)}"
                         for lbl, t in zip(self.labels, ts) if isinstance(t, T))


def test_gradients(op, args, kwargs, atol, rtol):
    """The check (see the module docstring). Raises ``_Skip``/``_Fail``; returns a note (or
    None) when it passed with some inputs not compared."""
    if _mutated(op):
        raise _Skip(f"the op mutates {', '.join(sorted(_mutated(op)))}; ops with mutated "
                    f"arguments have no autograd formula (torch.library rule)")
    tagged = NONDETERMINISTIC_TAGS.intersection(getattr(op, "tags", ()))
    if tagged:
        raise _Skip(f"the op is tagged {', '.join(sorted(tagged))}: its values differ from run "
                    f"to run, so finite differences do not apply")
    s = _Sample(op, args, kwargs)
    if not s.diff:
        raise _Skip("no floating-point tensor inputs")
    if not op.has_autograd and not any(t.requires_grad for t in s.tensors):
        raise _Skip(NO_GRAD_ASKED)
    if all(s.tensors[i].numel() == 0 for i in s.diff):
        raise _Skip("the floating-point inputs have no elements")
    sample_dtypes = {s.tensors[i].dtype for i in s.diff}
    candidates = []
    if not op.is_triton:
        candidates.append(float64)
    if _lowest(sample_dtypes) in ("float16", "bfloat16"):
        candidates.append(float32)
    candidates.append(None)      # the sample's own dtypes
    tried = []
    for dt in candidates:
        if dt is not None and dt in sample_dtypes and len(sample_dtypes) == 1:
            dt = None            # the sample already is in that dtype
        if dt in tried:
            continue
        # whether the kernel takes ``dt`` is seen on the comparison's own first call (no
        # separate trial run): None when it does not
        verdicts = _compare(s, _base(s, dt, probe=False), atol, rtol, probe=dt)
        if verdicts is None:
            continue
        tried.append(dt)
        unsure = {i for i, v in verdicts.items() if v[0] in ("bad", "unstable", "nonfinite")}
        if unsure and dt is not None:
            # what disagrees at a raised precision is compared again at a lower one: a kernel
            # may accept float64 yet compute in float32 inside (its rounding then looks like a
            # wrong or unstable derivative). Float32 when the kernel takes it (half-precision
            # finite differences are too coarse to tell a factor of 2), else the sample's own
            # dtypes; an "ok" there clears a "bad" only when its tolerance was finer than the
            # disagreement found (it would have seen it)
            re_base = _base(s, float32) if dt is float64 and float32 in candidates else None
            if re_base is None:
                re_base = _base(s, None, strict=True)
            again = _compare(s, re_base, atol, rtol, only=unsure, pairs=_PAIRS_RETRY)
            for i in unsure:
                a, b = verdicts[i], again.get(i, verdicts[i])
                if a[0] != "bad":
                    verdicts[i] = b
                elif b[0] == "none" or (b[0] == "ok" and b[1]["rel_tol"] <
                                        _rel(abs(a[1]["m1"]["err"]), a[1]["m1"])):
                    verdicts[i] = b
                # else: wrong at the raised precision, and the lower one cannot clear it; the
                # raised precision's figures are the ones reported
        return _verdict(op, s, verdicts)
    raise _Fail("the op could not be run on contiguous copies of the sample's inputs")


def _base(s, dtype, strict=False, probe=True):
    """Contiguous detached copies of the sample's tensors, the floating ones in ``dtype`` (None:
    their own). None when the kernel does not take ``dtype`` (raises, or returns floating
    outputs in another dtype) -- unless ``strict``, where its error is the check's failure.
    ``probe=False``: the copies only (the caller sees whether the kernel takes them)."""
    new = []
    with no_grad():
        for i, t in enumerate(s.tensors):
            c = t.detach()
            if i in s.diff and dtype is not None:
                c = c.to(dtype)
            # always a copy: the caller's tensors are never touched, whatever the kernel does
            new.append(c.contiguous().clone())
        if dtype is None and not strict or not probe:
            return new
        a, k = s.with_tensors(new)
        try:
            out = s.op(*a, **k)
        except Exception as e:   # noqa: BLE001 - the kernel does not take this dtype
            if strict or dtype is None:
                raise _Fail(f"calling the op on contiguous copies of the sample raised "
                            f"{type(e).__name__}: {e}") from e
            return None
    T = _T()
    if dtype is not None:
        floats = [v for _, v in _flat_outputs(out) if isinstance(v, T) and
                  v.dtype.is_floating_point]
        if not floats or any(v.dtype is not dtype for v in floats):
            return None
    return new


def _compare(s, base, atol, rtol, only=None, probe=None, pairs=_PAIRS):
    """``{slot: verdict}`` for the differentiable inputs (``only``: these slots), comparing at
    the sample point (``pairs`` projections) and, for those that disagree, at a nearby point
    (``_PAIRS_RETRY`` projections). ``probe``: the dtype ``base`` was cast to; None (no
    verdicts) when the kernel does not take it."""
    seed = zlib.crc32(s.op.name.encode()) & 0x7FFFFFFF
    rng = _rng(seed)
    first = _attempt(s, base, atol, rtol, rng, only, probe, pairs)
    if first is None:
        return None
    retry = {i for i, v in first.items() if v[0] in ("bad", "unstable", "nonfinite")}
    if not retry:
        return first
    moved = _moved(s, base, rng)
    second = _attempt(s, moved, atol, rtol, rng, retry, pairs=_PAIRS_RETRY)
    out = dict(first)
    for i in retry:
        a, b = first[i], second.get(i, first[i])
        if b[0] in ("ok", "none"):
            out[i] = b                      # an exact kink/tie at the sample point
        elif b[0] == "bad":
            # most comparisons at the nearby point are smooth, stable and disagree: wrong,
            # whatever the sample point said (a kink there, or a split vote of its few
            # projections); the sample point's figures when it disagreed too
            out[i] = a if a[0] == "bad" else b
        else:
            out[i] = a if a[0] != "bad" else b   # unstable/not finite there: a skip
    return out


_rngs = threading.local()


def _rng(seed):
    """``np.random.default_rng(seed)`` in its initial state. Seeding costs tens of µs (the seed
    sequence's hashing): each thread keeps one generator per seed and rewinds it to its saved
    initial state instead."""
    import numpy as np
    cache = getattr(_rngs, "by_seed", None)
    if cache is None:
        cache = _rngs.by_seed = {}
    hit = cache.get(seed)
    if hit is None:
        g = np.random.default_rng(seed)
        if len(cache) > 64:
            cache.clear()
        cache[seed] = (g, g.bit_generator.state)
        return g
    g, state = hit
    g.bit_generator.state = state
    return g


def _moved(s, base, rng):
    """``base`` with every differentiable input moved by ``_MOVE_STEPS`` steps (random signs)."""
    new = list(base)
    with no_grad():
        for i in s.diff:
            t = base[i]
            if t.numel() == 0:
                continue
            x = _f64(t)
            h = _STEP[_lowest([t.dtype])]
            new[i] = _to_tensor(x + _MOVE_STEPS * h * _scale(x) * rng.standard_normal(x.shape), t)
    return new


def _scale(x):
    import numpy as np
    return np.maximum(1.0, np.abs(x))


def _attempt(s, base, atol, rtol, rng, only=None, probe=None, pairs=1):
    """One comparison at the point ``base``, over ``pairs`` independent projections (every
    combination of their cotangents and directions, combined by ``_tally``): ``{slot: (status,
    info)}`` with status ``"ok"``, ``"none"`` (the formula returns None: not compared),
    ``"bad"``, ``"unstable"`` or ``"nonfinite"``."""
    import numpy as np
    T = _T()
    op = s.op
    # every differentiable input requires grad (as in the op's real use: what a kernel records
    # may depend on it); ``only`` limits which of them are compared
    req = [i for i in s.diff if base[i].numel() > 0]
    leaves = list(base)
    with no_grad():
        for i in req:
            leaves[i] = base[i].detach().clone().requires_grad_(True)
    a, k = s.with_tensors(leaves)
    with enable_grad():
        try:
            out = op(*a, **k)
        except Exception as e:
            if probe is not None:       # the kernel does not take this dtype: None
                return None
            if not op.has_autograd:     # the kernel leaves the graph: the other check's finding
                raise _Skip(f"calling the op with inputs that require grad raised "
                            f"{type(e).__name__} (test_autograd_registration reports it)") from e
            blame = _formula_raised(op, e)
            if blame is not None:
                raise _Fail(_formula_fix(blame)) from e
            raise _Fail(f"calling the op with inputs that require grad raised "
                        f"{type(e).__name__}: {e}") from e
        outs = [(lbl, v) for lbl, v in _flat_outputs(out)
                if isinstance(v, T) and v.dtype.is_floating_point]
        if probe is not None and (not outs or any(v.dtype is not probe for _, v in outs)):
            return None                 # floating outputs in another dtype: not taken either
        if not outs:
            raise _Skip("no floating-point tensor outputs")
        roots = [(lbl, v) for lbl, v in outs if v.requires_grad]
        if not roots:
            if op.has_autograd:
                raise _Skip("the formula marks every output non-differentiable")
            raise _Skip("no output requires grad: the kernel records no autograd graph and the "
                        "op has no formula (test_autograd_registration reports that)")
        f0 = {lbl: _f64(v) for lbl, v in roots}
        for lbl, v in f0.items():
            if not _all_true(np.isfinite(v)):
                raise _Skip(f"output {lbl} is not finite at the sample: finite differences "
                            f"do not apply")
        # ``pairs`` independent projections: cotangents u_k here, directions v_k below; every
        # combination u_a . J v_b is compared (one backward per u, two calls per v and step)
        us_k, grads_k = [], []
        for _ in range(pairs):
            us = {lbl: rng.standard_normal(v.shape) for lbl, v in f0.items()}
            seeds = [_to_tensor(us[lbl], v) for lbl, v in roots]
            try:
                grads = _api.grad([v for _, v in roots], [leaves[i] for i in req], seeds,
                                  retain_graph=True, allow_unused=True)
            except Exception as e:
                if probe is not None:
                    # the raised precision is not taken by the op's backward (a library that
                    # asserts half-precision inputs there, its forward taking any): as a
                    # forward refusing it, None: the next candidate (the sample's own dtypes)
                    return None
                if not op.has_autograd:     # a graph break: the other check's finding
                    raise _Skip(f"backward raised {type(e).__name__} (test_autograd_registration "
                                f"reports it)") from e
                if _no_derivative(e):
                    raise _Skip(NO_DERIVATIVE_NOTE) from e
                raise _Fail(f"backward raised {type(e).__name__}: {str(e).rstrip('. ')}. "
                            f"Fix: {_fix(op)}") from e
            us_k.append(us)
            grads_k.append(grads)
    out_dtypes = [v.dtype for _, v in roots]
    res = {}
    for n, i in enumerate(req):
        t = base[i]
        x = _f64(t)
        # drawn for every input, compared or not: the same draws whatever ``only`` selects
        vs = [rng.standard_normal(x.shape) * _scale(x) for _ in range(pairs)]
        if only is not None and i not in only:
            continue
        gs = [grads[n] for grads in grads_k]
        none = all(g is None for g in gs)
        if none and op.has_autograd and i not in s.asked:
            res[i] = ("none", None)          # the formula declares: no gradient for this input
            continue
        g64s = []
        for g in gs:
            if g is None:
                # torch's rule (autograd, gradcheck): None is a zero gradient. For an input the
                # sample itself asks a gradient for (requires_grad), it is compared like any
                # other: None for an input the op's value moves with is a wrong formula
                g64s.append(np.zeros(tuple(t.shape)))
                continue
            if tuple(g.shape) != tuple(t.shape):
                raise _Fail(f"the gradient of input '{s.labels[i]}' has shape {tuple(g.shape)} "
                            f"but the input has shape {tuple(t.shape)}. Fix: {_fix(op)}")
            g64s.append(_f64(g))
        # a gradient with NaN/inf elements: its projections are NaN (summing +inf and -inf
        # would warn), which no comparison accepts (_agrees)
        finite = [_all_true(np.isfinite(g)) for g in g64s]
        prec = _lowest([t.dtype, *out_dtypes])
        h = _STEP[prec]
        r = rtol if rtol is not None else _RTOL[prec]

        def measure(step, v, x=x, t=t, i=i, g64s=g64s, prec=prec, r=r, finite=finite):
            """The comparisons along ``v`` at ``step``, one per cotangent (the same two calls
            of the op serve them all); None where the op is not finite there."""
            ap, am = x + step * v, x - step * v
            xp, xm = _to_tensor(ap, t), _to_tensor(am, t)
            # the step the kernel really saw (after the cast; float64 inputs are the arrays)
            d = ap - am if t.dtype is float64 else _f64(xp) - _f64(xm)
            vals = []
            for xx in (xp, xm):
                new = list(base)
                new[i] = xx
                aa, kk = s.with_tensors(new)
                with no_grad():
                    o = dict((lbl, w) for lbl, w in _flat_outputs(op(*aa, **kk)))
                vals.append({lbl: _f64(o[lbl]) for lbl, _ in roots})
            fp, fm = vals
            if not all(_all_true(np.isfinite(fp[lbl])) and _all_true(np.isfinite(fm[lbl]))
                       for lbl in fp):
                return None
            # per output, what every cotangent is contracted with
            diff = [fp[lbl] - fm[lbl] for lbl in fp]
            # the one-sided slopes' difference, (f(x+hv) - 2 f(x) + f(x-hv)) / h: h f''(v, v)
            # where the op is smooth (small), but a whole jump of the slope where an element's
            # kink lies inside the step (relu at 0, ties), whatever the step
            curv = [fp[lbl] - 2 * f0[lbl] + fm[lbl] for lbl in fp]
            mag = [fp[lbl] ** 2 + fm[lbl] ** 2 for lbl in fp]
            out = []
            for us, g64, fin in zip(us_k, g64s, finite):
                u = [us[lbl] for lbl in fp]
                num = sum(float(np.vdot(a, b)) for a, b in zip(u, diff)) / (2 * step)
                asym = sum(float(np.vdot(a, b)) for a, b in zip(u, curv)) / step
                if fin:
                    contrib = g64 * d
                    ana = float(contrib.sum()) / (2 * step)
                    spread = math.sqrt(float(np.vdot(contrib, contrib))) / (2 * step)
                else:
                    ana, spread = math.nan, 0.0
                noise = _NOISE_ULPS * _EPS[prec] * math.sqrt(
                    sum(float(np.vdot(a * a, b)) for a, b in zip(u, mag))) / (2 * step)
                scale = max(abs(ana), abs(num), spread)
                tol = r * scale + noise + (atol or 0.0)
                out.append({"num": num, "ana": ana, "tol": tol, "err": num - ana,
                            "scale": scale, "step": step, "asym": asym, "us": us,
                            "fp": fp, "fm": fm, "d": d, "g": g64})
            return out

        verdicts = []                       # (status, figures, cotangent k, direction j)
        for j, v in enumerate(vs):
            m1s = measure(h, v)
            if m1s is None:
                verdicts += [("nonfinite", None, k, j) for k in range(pairs)]
                continue
            m2s = None
            for k, m1 in enumerate(m1s):
                if _agrees(m1):
                    verdicts.append(("ok", m1, k, j))
                    continue
                if m2s is None:
                    m2s = measure(h / 2, v) or ()
                verdicts.append((*(_judge(m1, m2s[k]) if m2s else ("nonfinite", None)), k, j))
        res[i] = _tally(verdicts, pairs)
        if res[i][0] == "bad":
            m1, m2 = res[i][1]
            info = {"m1": m1, "m2": m2, "prec": prec, "dtype": _dname(t.dtype),
                    "sample": s.describe(base), "none": none}
            if math.isfinite(m1["ana"]):     # else _verdict counts the NaN/inf elements
                info["per_output"], info["worst"] = _diagnose(roots, m1["us"], leaves[i], m1)
            res[i] = ("bad", info)
    return res


def _tally(verdicts, pairs):
    """One input's verdict from its comparisons ``(status, figures, cotangent k, direction j)``.

    A wrong formula disagrees in (nearly) every projection, and agrees in one only by chance;
    a right one agrees in every projection that can tell, and disagrees in one only where a
    kink inside the step escaped the kink tests (many kinks: many projections cannot tell, and
    a few of the others disagree). So: ``"bad"`` (the clearest disagreement's ``(m1, m2)``)
    when most of all the comparisons disagree; ``"ok"`` when more agree than disagree and the
    agreeing ones are two independent projections (two cotangents, two directions) or all
    there are -- one lucky projection proves nothing; otherwise what could not tell
    (``"unstable"``, ``"nonfinite"``), or ``"unstable"`` for a split vote."""
    ok = [(m, k, j) for st, m, k, j in verdicts if st == "ok"]
    bad = [m for st, m, _, _ in verdicts if st == "bad"]
    if 2 * len(bad) > len(verdicts):
        return "bad", max(bad, key=lambda mm: abs(mm[0]["err"]) / max(mm[0]["tol"], 1e-300))
    need = min(2, pairs)
    if len(ok) > len(bad) and len({k for _, k, _ in ok}) >= need and \
            len({j for _, _, j in ok}) >= need:
        return "ok", {"tol": max(m["tol"] for m, _, _ in ok),
                      "rel_tol": max(_rel(m["tol"], m) for m, _, _ in ok)}
    odd = [(st, m) for st, m, _, _ in verdicts if st in ("unstable", "nonfinite")]
    if odd:
        return odd[0]
    m1, m2 = bad[0]
    return "unstable", {"m1": m1, "m2": m2}

def _agrees(m) -> bool:
    """Whether the comparison ``m`` agrees. A non-finite analytical side never does (the
    numerical one is finite here): ``NaN <= tol`` is False already, but an infinite gradient
    makes the tolerance (``rtol * scale``) infinite too, and ``inf <= inf`` would pass it."""
    return math.isfinite(m["ana"]) and abs(m["err"]) <= m["tol"]


def _rel(x, m) -> float:
    """``x`` relative to the size of the comparison ``m`` (inf where that is zero)."""
    return x / m["scale"] if m["scale"] > 0 else math.inf


def _judge(m1, m2):
    """The verdict of one comparison that disagreed at the step (``m1``), given the same at
    half the step (``m2``): ``("ok", m2)``, ``("unstable", (m1, m2))`` or ``("bad", (m1, m2))``."""
    if _agrees(m2):
        return "ok", m2
    if not (math.isfinite(m1["ana"]) and math.isfinite(m2["ana"])):
        # the backward gave NaN/inf where the op is finite on both sides: no step size or kink
        # explains that (the nearby point still gets its say, as for any disagreement)
        return "bad", (m1, m2)
    drift = abs(m1["err"] - m2["err"])
    if drift > max(m1["tol"], m2["tol"]) and min(abs(m1["err"]), abs(m2["err"])) <= \
            3 * drift + m2["tol"]:
        return "unstable", {"m1": m1, "m2": m2}
    if all(abs(m["asym"]) > _KINK * abs(m["err"]) for m in (m1, m2)):
        # the slopes on the two sides differ by as much as the disagreement at both steps:
        # kinks inside the step (a kink's central difference is stable in the step, so the
        # drift test above cannot see it), not a wrong formula
        return "unstable", {"m1": m1, "m2": m2}
    return "bad", (m1, m2)

def _diagnose(roots, us, leaf, m):
    """Where a disagreement comes from (failure path only, one backward per figure):
    ``(per_output, worst)`` -- ``per_output`` ``[(label, analytical, numerical)]`` of each
    output's share of the directional derivative (several outputs only), ``worst`` ``(gap,
    label, index, analytical, numerical)`` of the output element that disagrees most, searched
    in the worst output over up to ``_WORST_CAP`` elements (None when it cannot be said)."""
    import numpy as np
    step, d = m["step"], m["d"]

    def directional(cotangents):
        # every output gets a cotangent (zeros but the chosen ones): a formula sees them all
        seeds = [_to_tensor(cotangents.get(lbl, np.zeros(tuple(v.shape))), v)
                 for lbl, v in roots]
        g = _api.grad([v for _, v in roots], [leaf], seeds, retain_graph=True,
                      allow_unused=True)[0]
        return 0.0 if g is None else float(np.sum(_f64(g) * d)) / (2 * step)

    nums = {lbl: (m["fp"][lbl] - m["fm"][lbl]) / (2 * step) for lbl, _ in roots}
    per = []
    target = roots[0][0]
    try:
        if len(roots) > 1:
            for lbl, _ in roots:
                per.append((lbl, directional({lbl: us[lbl]}), float(np.sum(us[lbl] * nums[lbl]))))
            target = max(per, key=lambda p: abs(p[1] - p[2]))[0]
        v = dict(roots)[target]
        flat = np.abs(nums[target]).ravel()
        n = flat.size
        if n <= _WORST_CAP:
            picks = range(n)
        else:   # the largest numerical derivatives and an even spread of the others
            top = np.argsort(flat)[-_WORST_CAP // 2:]
            spread = np.linspace(0, n - 1, _WORST_CAP // 2).astype(int)
            picks = sorted(set(top.tolist()) | set(spread.tolist()))
        best = None
        for j in picks:
            onehot = np.zeros(n)
            onehot[j] = 1.0
            ana = directional({target: onehot.reshape(tuple(v.shape))})
            nj = float(nums[target].ravel()[j])
            if best is None or abs(ana - nj) > best[0]:
                idx = tuple(int(q) for q in np.unravel_index(j, tuple(v.shape)))
                best = (abs(ana - nj), target, idx, ana, nj)
    except Exception:   # noqa: BLE001 - the headline figures still stand
        return per, None
    return per, best


def _nonfinite_part(label, m, info) -> str:
    """The failure of an input whose analytical gradient is not finite: how many elements are
    NaN/inf and where the first is (the headline figures, NaN, would say nothing)."""
    import numpy as np
    g = m["g"]
    nan, inf = np.isnan(g), np.isinf(g)
    kinds = [f"{what} in {int(mask.sum())}" for what, mask in (("NaN", nan), ("inf", inf))
             if mask.any()]
    first = tuple(int(q) for q in np.argwhere(nan | inf)[0]) if (nan | inf).any() else ()
    return (f"the analytical gradient of input '{label}' (what the backward returns) is not "
            f"finite: {' and '.join(kinds)} of {g.size} elements (first at "
            f"[{', '.join(map(str, first))}]), although the op is finite at and around the "
            f"sample (finite differences give {_fmt(m['num'])} along a random direction, "
            f"{info['prec']}, step {_fmt(m['step'])}). Look in the backward for 0 * inf, inf - "
            f"inf, 0 / 0, or sqrt/log/pow of a value outside its domain (a where() whose "
            f"unselected branch is not finite still passes NaN gradients: mask its input)")


def _fmt(x) -> str:
    return f"{x:.6g}"


def _verdict(op, s, verdicts):
    bad = {i: v[1] for i, v in verdicts.items() if v[0] == "bad"}
    if bad:
        parts = []
        for i, info in bad.items():
            m = info["m1"]
            if not math.isfinite(m["ana"]):
                parts.append(_nonfinite_part(s.labels[i], m, info))
                continue
            w = info.get("worst")
            where = ""
            if w is not None:
                idx = ", ".join(map(str, w[2]))
                where = (f"; worst output element: output {w[1]}[{idx}] with analytical "
                         f"{_fmt(w[3])} vs numerical {_fmt(w[4])}")
            per = info.get("per_output") or []
            if per:
                where = ("; per output: " + ", ".join(
                    f"output {lbl} analytical {_fmt(a)} vs numerical {_fmt(n)}"
                    for lbl, a, n in per)) + where
                # an output the formula gives nothing for, although the op's value moves with
                # the input through it: statistics or indices that are not differentiable
                dropped = [lbl for lbl, a, n in per
                           if a == 0.0 and abs(n) > m["tol"] / max(1, len(per))]
                if dropped:
                    where += (f". The formula passes no gradient through output "
                              f"{', '.join(dropped)}: if that output is not differentiable "
                              f"(statistics saved for the backward, indices), say so in "
                              f"setup_context with ctx.mark_non_differentiable(...)")
            if info.get("none"):
                where += (f". The formula returns None for input '{s.labels[i]}' (a zero "
                          f"gradient) although the op's value moves with it: return its "
                          f"gradient, or pass that input without requires_grad if it is not "
                          f"meant to be differentiated")
            parts.append(
                f"the gradient of input '{s.labels[i]}' is wrong: along a random direction "
                f"(contracted with a random output cotangent) the analytical derivative is "
                f"{_fmt(m['ana'])} but finite differences of the op give {_fmt(m['num'])} "
                f"(off by {_fmt(abs(m['err']))}, tolerance {_fmt(m['tol'])}, "
                f"{info['prec']}, step {_fmt(m['step'])}; with half the step: "
                f"{_fmt(info['m2']['ana'])} vs {_fmt(info['m2']['num'])}){where}")
        raise _Fail(f"{'; '.join(parts)}. Sample: {s.describe()}. Fix: {_fix(op)}")
    skipped = {i: v for i, v in verdicts.items() if v[0] in ("unstable", "nonfinite")}
    compared = [i for i, v in verdicts.items() if v[0] == "ok"]
    notes = []
    for i, (st, info) in skipped.items():
        if st == "nonfinite":
            notes.append(f"input '{s.labels[i]}': the op is not finite next to the sample, "
                         f"finite differences do not apply")
        else:
            m1, m2 = info["m1"], info["m2"]
            notes.append(f"input '{s.labels[i]}': non-smooth at the sample (the numerical "
                         f"derivative changes with the step: {_fmt(m1['num'])} at step "
                         f"{_fmt(m1['step'])}, {_fmt(m2['num'])} at {_fmt(m2['step'])}; a kink, "
                         f"tie or jump such as relu at 0, max ties, floor/round), not compared")
    declared = [s.labels[i] for i, v in verdicts.items() if v[0] == "none"]
    if declared:
        notes.append(f"no gradient for {', '.join(declared)} (the formula returns None): "
                     f"not compared")
    if not compared:
        raise _Skip("; ".join(notes) or "nothing to compare")
    return "; ".join(notes) or None
