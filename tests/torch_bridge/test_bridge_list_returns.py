"""Differentiable ops returning ``Tensor[]``, ``Tensor?`` or a tuple mixing them with ``Tensor`` and
non-tensor values, bridged with autograd: forward values, gradients equal to TensorPlay's own
backward of the same op and to torch's own equivalent computation (an output left out of the loss
gets zeros, one that is None gets None, as TensorPlay hands them to the formula), saved tensors
and ``ctx`` attributes as for ``Tensor`` returns, fakes for ``torch.compile``,
``torch.library.opcheck``, and errors naming op and pack. Formula ops and composite ones."""

from __future__ import annotations

import pytest
import tensorplay as tp
import tensorplay_torch
import torch
from tensorplay import library

NS = "bridgelist"
SEEN: dict = {}


# -- split_halves(Tensor x) -> Tensor[] (formula) ----------------------------------------------

@library.custom_op(f"{NS}::split_halves", mutates_args=())
def split_halves(x: tp.Tensor) -> list[tp.Tensor]:
    n = x.shape[0] // 2
    return [x[:n] * 2.0, x[n:].sin()]


def _split_setup(ctx, inputs, output):
    ctx.n = inputs[0].shape[0] // 2
    ctx.out_count = len(output)
    ctx.save_for_backward(inputs[0])


def _split_backward(ctx, *grads):
    # TensorPlay hands a formula one gradient per element of a Tensor[] return (zeros for an
    # element left out of the loss)
    SEEN["split_grads"] = [None if g is None else tuple(g.shape) for g in grads]
    SEEN["split_ctx"] = (ctx.n, ctx.out_count, len(ctx.saved_tensors))
    (x,) = ctx.saved_tensors
    g0, g1 = grads
    return tp.cat([g0 * 2.0, g1 * x[ctx.n:].cos()])


split_halves.register_autograd(_split_backward, setup_context=_split_setup)


def _t_split_halves(x):
    n = x.shape[0] // 2
    return [x[:n] * 2.0, x[n:].sin()]


# -- maybe_scaled(Tensor x, bool flag) -> (Tensor, Tensor?, float) (formula) ------------------

@library.custom_op(f"{NS}::maybe_scaled", mutates_args=())
def maybe_scaled(x: tp.Tensor, flag: bool) -> tuple[tp.Tensor, tp.Tensor | None, float]:
    return x * 2.0, (x * x if flag else None), 1.5


def _maybe_setup(ctx, inputs, output):
    ctx.flag = inputs[1]
    ctx.second_is_none = output[1] is None
    ctx.save_for_backward(inputs[0])


def _maybe_backward(ctx, g0, g1, g2):
    SEEN["maybe_grads"] = (g0 is None, g1 is None, g2 is None)
    SEEN["maybe_ctx"] = (ctx.flag, ctx.second_is_none)
    (x,) = ctx.saved_tensors
    gx = g0 * 2.0
    if g1 is not None:
        gx = gx + g1 * 2.0 * x
    return gx, None


maybe_scaled.register_autograd(_maybe_backward, setup_context=_maybe_setup)


def _t_maybe_scaled(x, flag):
    return x * 2.0, (x * x if flag else None), 1.5


# -- parts(Tensor x, Tensor w) -> (Tensor[], Tensor) (formula) --------------------------------

@library.custom_op(f"{NS}::parts", mutates_args=())
def parts(x: tp.Tensor, w: tp.Tensor) -> tuple[list[tp.Tensor], tp.Tensor]:
    return [x * w, x + w, x.exp()], (x * w).sum()


def _parts_setup(ctx, inputs, output):
    ctx.k = len(output[0])
    ctx.save_for_backward(inputs[0], inputs[1], output[0][2])


def _parts_backward(ctx, glist, gsum):
    # a list output's gradient is a list (one per element), beside the tensor output's
    SEEN["parts_grads"] = (type(glist).__name__, len(glist), tuple(gsum.shape))
    SEEN["parts_ctx"] = (ctx.k, len(ctx.saved_tensors))
    x, w, ex = ctx.saved_tensors
    g_mul, g_add, g_exp = glist
    gx = g_mul * w + g_add + g_exp * ex + gsum * w
    gw = g_mul * x + g_add + gsum * x
    return gx, gw


parts.register_autograd(_parts_backward, setup_context=_parts_setup)


def _t_parts(x, w):
    return [x * w, x + w, x.exp()], (x * w).sum()


# -- composites (no formula: differentiated through the body) ---------------------------------

@library.custom_op(f"{NS}::halves_body", mutates_args=())
def halves_body(x: tp.Tensor) -> list[tp.Tensor]:
    n = x.shape[0] // 2
    return [x[:n] * 3.0, x[n:] * x[n:]]


def _t_halves_body(x):
    n = x.shape[0] // 2
    return [x[:n] * 3.0, x[n:] * x[n:]]


@library.custom_op(f"{NS}::parts_body", mutates_args=())
def parts_body(x: tp.Tensor, flag: bool) -> tuple[list[tp.Tensor], tp.Tensor | None]:
    return [x * 2.0, x.exp()], (x * x if flag else None)


def _t_parts_body(x, flag):
    return [x * 2.0, x.exp()], (x * x if flag else None)


# -- a formula that raises: the error names op and pack ---------------------------------------

@library.custom_op(f"{NS}::bad_backward", mutates_args=())
def bad_backward(x: tp.Tensor) -> list[tp.Tensor]:
    return [x * 2.0, x * 3.0]


def _bad_backward(ctx, *grads):
    raise ValueError("deliberately broken formula")


bad_backward.register_autograd(_bad_backward)

tensorplay_torch.register(namespace=NS)
OPS = getattr(torch.ops, NS)


# -- helpers ----------------------------------------------------------------------------------

def _flat(out):
    if isinstance(out, (list, tuple)):
        return [y for o in out for y in _flat(o)]
    return [out]


def _tensors(out):
    return [o for o in _flat(out) if isinstance(o, (torch.Tensor, tp.Tensor))]


def _to_tp(v, grad=False):
    if isinstance(v, torch.Tensor):
        t = tensorplay_torch.to_tensorplay(v.detach().clone())
        return t.requires_grad_(True) if grad else t
    return v


def _np(t):
    return None if t is None else (t.detach().numpy() if isinstance(t, torch.Tensor) else
                                   t.detach().numpy())


def _grads_tp(op, args, cotangents, grad_args):
    """TensorPlay's own gradients of ``op`` at ``args`` (torch tensors) for the cotangents (one
    per tensor output; None: left out of the loss)."""
    targs = [_to_tp(a, i in grad_args) for i, a in enumerate(args)]
    out = op(*targs)
    outs = _tensors(out)
    roots, gs = [], []
    for o, c in zip(outs, cotangents):
        if c is not None:
            roots.append(o)
            gs.append(_to_tp(c))
    grads = tp.autograd.grad(roots, [targs[i] for i in grad_args], gs, allow_unused=True)
    return [None if g is None else torch.from_numpy(g.numpy().copy()) for g in grads]


def _grads_torch(fn, args, cotangents, grad_args):
    """torch's gradients of ``fn`` (a bridged op, or torch's own equivalent) at ``args``."""
    targs = [a.detach().clone().requires_grad_(True) if i in grad_args else a
             for i, a in enumerate(args)]
    out = fn(*targs)
    outs = _tensors(out)
    roots, gs = [], []
    for o, c in zip(outs, cotangents):
        if c is not None:
            roots.append(o)
            gs.append(c)
    grads = torch.autograd.grad(roots, [targs[i] for i in grad_args], gs, allow_unused=True)
    return [g if g is None else g.detach() for g in grads], out


def _cotangents(out, use):
    """One cotangent per tensor output: seeded values where ``use`` says so, else None."""
    gen = torch.Generator().manual_seed(7)
    outs = _tensors(out)
    return [torch.randn(o.shape, generator=gen, dtype=o.dtype) if u else None
            for o, u in zip(outs, use)]


def _check_case(name, tp_op, torch_fn, args, use, grad_args):
    bridged = getattr(OPS, name)
    out = bridged(*args)
    want = torch_fn(*args)
    # forward: same structure (list for a list output, None where None, non-tensors kept)
    assert type(out) is type(want) or (isinstance(out, (list, tuple)) and
                                        isinstance(want, (list, tuple)))
    for o, w in zip(_flat(out), _flat(want)):
        if isinstance(w, torch.Tensor):
            torch.testing.assert_close(o, w)
        else:
            assert o == w
    cot = _cotangents(want, use)
    got, _ = _grads_torch(bridged, args, cot, grad_args)
    ref, _ = _grads_torch(torch_fn, args, cot, grad_args)
    own = _grads_tp(tp_op, args, cot, grad_args)
    for g, r, o in zip(got, ref, own):
        torch.testing.assert_close(g, r)
        torch.testing.assert_close(g, o)


# -- forward and backward ---------------------------------------------------------------------

CASES = [
    # (op name, TensorPlay op, torch's own computation, args, outputs used, differentiated args)
    pytest.param("split_halves", split_halves, _t_split_halves, (torch.randn(6),),
                 (True, True), (0,), id="split_halves-all"),
    pytest.param("split_halves", split_halves, _t_split_halves, (torch.randn(6),),
                 (False, True), (0,), id="split_halves-second-only"),
    pytest.param("split_halves", split_halves, _t_split_halves, (torch.randn(5),),
                 (True, False), (0,), id="split_halves-first-only"),
    pytest.param("maybe_scaled", maybe_scaled, _t_maybe_scaled, (torch.randn(4), True),
                 (True, True), (0,), id="maybe_scaled-both"),
    pytest.param("maybe_scaled", maybe_scaled, _t_maybe_scaled, (torch.randn(4), True),
                 (True, False), (0,), id="maybe_scaled-first-only"),
    pytest.param("maybe_scaled", maybe_scaled, _t_maybe_scaled, (torch.randn(4), False),
                 (True,), (0,), id="maybe_scaled-none"),
    pytest.param("parts", parts, _t_parts, (torch.randn(3), torch.randn(3)),
                 (True, True, True, True), (0, 1), id="parts-all"),
    pytest.param("parts", parts, _t_parts, (torch.randn(3), torch.randn(3)),
                 (False, True, False, False), (0, 1), id="parts-one-list-element"),
    pytest.param("parts", parts, _t_parts, (torch.randn(3), torch.randn(3)),
                 (False, False, False, True), (0,), id="parts-tensor-only"),
    pytest.param("halves_body", halves_body, _t_halves_body, (torch.randn(4),),
                 (False, True), (0,), id="halves_body-second-only"),
    pytest.param("parts_body", parts_body, _t_parts_body, (torch.randn(3), True),
                 (True, False, True), (0,), id="parts_body-some"),
    pytest.param("parts_body", parts_body, _t_parts_body, (torch.randn(3), False),
                 (False, True), (0,), id="parts_body-none"),
]


@pytest.mark.parametrize("name, tp_op, torch_fn, args, use, grad_args", CASES)
def test_forward_and_gradients_match_tensorplay_and_torch(name, tp_op, torch_fn, args, use,
                                                          grad_args):
    _check_case(name, tp_op, torch_fn, args, use, grad_args)


def test_a_list_return_formula_gets_one_gradient_per_element_and_its_ctx():
    x = torch.randn(6, requires_grad=True)
    a, b = OPS.split_halves(x)
    assert a.grad_fn is not None and b.grad_fn is not None
    SEEN.clear()
    b.sum().backward()          # the first element is left out of the loss: zeros, as TensorPlay
    assert SEEN["split_grads"] == [(3,), (3,)]
    assert SEEN["split_ctx"] == (3, 2, 1)
    torch.testing.assert_close(x.grad, torch.cat([torch.zeros(3), x.detach()[3:].cos()]))
    # TensorPlay's own call hands the formula the same
    SEEN.clear()
    tx = tp.randn(6, requires_grad=True)
    split_halves(tx)[1].sum().backward()
    assert SEEN["split_grads"] == [(3,), (3,)] and SEEN["split_ctx"] == (3, 2, 1)


@pytest.mark.parametrize("flag", [True, False])
def test_an_optional_return_gets_none_where_it_is_none_as_in_tensorplay(flag):
    x = torch.randn(4, requires_grad=True)
    a, b, c = OPS.maybe_scaled(x, flag)
    assert (b is None) is (not flag) and c == 1.5
    SEEN.clear()
    a.sum().backward()
    bridged = (SEEN["maybe_grads"], SEEN["maybe_ctx"])
    SEEN.clear()
    tx = tp.randn(4, requires_grad=True)
    maybe_scaled(tx, flag)[0].sum().backward()
    assert bridged == (SEEN["maybe_grads"], SEEN["maybe_ctx"])
    assert bridged == ((False, not flag, True), (flag, not flag))


def test_a_list_inside_a_tuple_gets_a_list_of_gradients_and_saved_outputs():
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    (lst, s) = OPS.parts(x, w)
    assert isinstance(lst, list) and len(lst) == 3 and all(t.requires_grad for t in lst)
    SEEN.clear()
    lst[1].sum().backward()
    bridged = (SEEN["parts_grads"], SEEN["parts_ctx"])
    SEEN.clear()
    tx, tw = tp.randn(3, requires_grad=True), tp.randn(3, requires_grad=True)
    parts(tx, tw)[0][1].sum().backward()
    assert bridged == (SEEN["parts_grads"], SEEN["parts_ctx"])
    assert bridged == (("list", 3, ()), (3, 3))
    torch.testing.assert_close(x.grad, torch.ones(3))
    torch.testing.assert_close(w.grad, torch.ones(3))


def test_without_grad_the_outputs_keep_their_structure():
    with torch.no_grad():
        out = OPS.parts(torch.randn(3), torch.randn(3))
    assert isinstance(out, tuple) and isinstance(out[0], list) and len(out[0]) == 3
    out = OPS.split_halves(torch.randn(4))
    assert isinstance(out, list) and len(out) == 2


def test_a_formula_that_raises_names_op_and_pack():
    x = torch.randn(3, requires_grad=True)
    a, b = OPS.bad_backward(x)
    with pytest.raises(ValueError) as e:
        (a.sum() + b.sum()).backward()
    # the formula's exception arrives unchanged; op and pack are named in its note (PEP 678)
    msg = "\n".join([str(e.value), *getattr(e.value, "__notes__", [])])
    assert f"{NS}::bad_backward" in msg and "pack" in msg and "deliberately broken" in msg


# -- torch.library.opcheck --------------------------------------------------------------------

OPCHECK = [
    pytest.param("split_halves", (torch.randn(6, requires_grad=True),), id="split_halves"),
    pytest.param("split_halves", (torch.randn(5),), id="split_halves-nograd"),
    pytest.param("maybe_scaled", (torch.randn(4, requires_grad=True), True), id="maybe-true"),
    pytest.param("maybe_scaled", (torch.randn(4, requires_grad=True), False), id="maybe-false"),
    pytest.param("parts", (torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)),
                 id="parts"),
    pytest.param("parts", (torch.randn(3, requires_grad=True), torch.randn(3)), id="parts-x"),
    pytest.param("halves_body", (torch.randn(4, requires_grad=True),), id="halves_body"),
    pytest.param("parts_body", (torch.randn(3, requires_grad=True), True), id="parts_body"),
    pytest.param("parts_body", (torch.randn(3, requires_grad=True), False), id="parts_body-none"),
]


@pytest.mark.parametrize("name, args", OPCHECK)
def test_opcheck_passes(name, args):
    res = torch.library.opcheck(getattr(OPS, name).default, args)
    assert all(v == "SUCCESS" for v in res.values()), res


# -- torch.compile(fullgraph=True) ------------------------------------------------------------

def _loss_split(x):
    a, b = OPS.split_halves(x)
    return (b * b).sum()


def _loss_split_all(x):
    a, b = OPS.split_halves(x)
    return (a * 3.0).sum() + (b * b).sum()


def _loss_maybe(x):
    a, b, c = OPS.maybe_scaled(x, True)
    return (a * c).sum() + b.sum()


def _loss_maybe_none(x):
    a, b, c = OPS.maybe_scaled(x, False)
    return (a * c).sum() if b is None else a.sum()


def _loss_parts(x, w):
    lst, s = OPS.parts(x, w)
    return lst[0].sum() + (lst[2] * 2.0).sum() + s


def _loss_parts_partial(x, w):
    lst, s = OPS.parts(x, w)
    return lst[1].pow(2).sum()


def _loss_bodies(x):
    a, b = OPS.halves_body(x)
    lst, sq = OPS.parts_body(x, True)
    return a.sum() + b.sum() + lst[1].sum() + sq.sum()


COMPILED = [
    pytest.param(_loss_split, 1, id="split-partial"),
    pytest.param(_loss_split_all, 1, id="split-all"),
    pytest.param(_loss_maybe, 1, id="maybe"),
    pytest.param(_loss_maybe_none, 1, id="maybe-none"),
    pytest.param(_loss_parts, 2, id="parts"),
    pytest.param(_loss_parts_partial, 2, id="parts-partial"),
    pytest.param(_loss_bodies, 1, id="bodies"),
]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn, nargs", COMPILED)
def test_compile_fullgraph_matches_eager(fn, nargs, backend):
    if backend == "inductor" and fn in (_loss_maybe, _loss_maybe_none):
        pytest.skip("inductor lowers no custom op with a float output (torch's own custom_op "
                    "fails the same: 'FallbackKernel output type float is not supported')")
    torch._dynamo.reset()
    args = [torch.randn(6) for _ in range(nargs)]

    def run(f):
        xs = [a.clone().requires_grad_(True) for a in args]
        loss = f(*xs)
        return loss.detach(), torch.autograd.grad(loss, xs)

    want = run(fn)
    compiled = torch.compile(fn, fullgraph=True, backend=backend)
    for _ in range(2):
        torch.testing.assert_close(run(compiled), want, rtol=1e-5, atol=1e-6)


def test_compiled_backward_runs_the_formula_with_its_ctx():
    """Under torch.compile the backward goes through the backward op: the formula still gets a
    list of gradients for a list inside a tuple, its ctx attributes and saved tensors."""
    torch._dynamo.reset()
    x, w = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    SEEN.clear()
    loss = torch.compile(_loss_parts_partial, fullgraph=True, backend="aot_eager")(x, w)
    loss.backward()
    assert SEEN["parts_grads"] == ("list", 3, ()) and SEEN["parts_ctx"] == (3, 3)
    torch.testing.assert_close(x.grad, 2 * (x + w).detach())
