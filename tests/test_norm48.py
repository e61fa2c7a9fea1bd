"""Session 48 (h-norm48): the norms' root as one built-in op, ``tp::_norm_root`` (``s ** (1/p)``,
``sqrt`` for p = 2, whose gradient is 0 where the root is 0, as torch's norm backward), which
``linalg.vector_norm`` (so ``norm``, ``dist``, ``renorm``, ``cdist``) and ``std`` take; the
gradient of ``vector_norm`` with a negative ``ord`` at a zero element; ``cdist``'s gradient at an
infinite element with ``p = inf``. Torch-free (the values checked here are torch 2.13's, read
from it; the torch differential of the family is tests/torch_bridge/test_corr47_differential.py).
"""

from __future__ import annotations

import math

import pytest

import tensorplay as tp
from tensorplay import fake, library
from tensorplay import linalg as LA

ROOT = tp.ops.tp._norm_root


def _leaf(vals, dtype=tp.float64, device="cpu"):
    return tp.tensor(vals, dtype=dtype, device=device, requires_grad=True)


def _grad(fn, *arrays):
    ts = [_leaf(a) for a in arrays]
    fn(*ts).sum().backward()
    return [t.grad.tolist() for t in ts]


# -- the op itself -------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2.0, 3.0, 1.5, 0.5, -1.0, -2.5])
def test_root_values_are_sqrt_and_pow(p):
    s = tp.tensor([0.25, 1.0, 7.5, 0.0], dtype=tp.float64)
    want = tp.sqrt(s) if p == 2 else tp.pow(s, 1.0 / p)
    assert ROOT(s, p).tolist() == want.tolist()
    s32 = s.to(tp.float32)
    r32 = ROOT(s32, p)
    assert r32.dtype is tp.float32 and r32.tolist() == (tp.sqrt(s32) if p == 2 else
                                                         tp.pow(s32, 1.0 / p)).tolist()


def test_root_dtypes_and_refusal():
    assert ROOT(tp.tensor([4, 9]), 2.0).tolist() == [2.0, 3.0]       # integers: default float
    assert ROOT(tp.tensor([4.0], dtype=tp.bfloat16), 2.0).dtype is tp.bfloat16
    assert ROOT(tp.tensor([4.0], dtype=tp.float16), 2.0).item() == 2.0
    with pytest.raises(RuntimeError, match="p must not be 0"):
        ROOT(tp.tensor([4.0]), 0.0)


@pytest.mark.parametrize("p", [2.0, 3.0, 1.5, 0.5])
def test_root_gradient_is_zero_at_zero(p):
    s = _leaf([0.0, 4.0])
    ROOT(s, p).sum().backward()
    g = s.grad.tolist()
    assert g[0] == 0.0
    assert g[1] == pytest.approx(4.0 ** (1.0 / p - 1.0) / p, rel=1e-15)


def test_root_gradient_negative_p_at_infinite_sum():
    # p < 0: an infinite sum (a zero element's |x|**p) has root 0, gradient 0
    s = _leaf([math.inf, 8.0])
    r = ROOT(s, -3.0)
    assert r.tolist() == [0.0, 0.5]
    r.sum().backward()
    assert s.grad.tolist()[0] == 0.0
    assert s.grad.tolist()[1] == pytest.approx(-(8.0 ** (-1 / 3 - 1)) / 3, rel=1e-15)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("p", [2.0, 3.0, 0.5, -1.5])
def test_root_gradient_one_kernel_equals_op_by_op(p, dtype):
    # the backward's one-kernel form (no graph) and its op-by-op form (create_graph=True, which
    # records the ops) give the same values, bit for bit
    s = tp.tensor([0.0, 0.3, 1.25, 7.0, math.inf], dtype=dtype, requires_grad=True)
    g = tp.tensor([1.5, -2.0, 0.25, 3.0, 1.0], dtype=dtype)
    (a,) = tp.autograd.grad(ROOT(s, p), s, g)
    (b,) = tp.autograd.grad(ROOT(s, p), s, g, create_graph=True)
    assert b.grad_fn is not None and a.grad_fn is None
    assert a.dtype is dtype and a.tolist() == b.tolist()
    assert a.tolist()[0] == (0.0 if p > 0 else -math.inf)   # p < 0: root(0) is inf, unmasked
    # s = inf: r**(1-p) / p is 0 for p > 1, inf for 0 < p < 1; for p < 0 the root is 0: masked
    assert a.tolist()[4] == (math.inf if 0 < p < 1 else 0.0)


@pytest.mark.parametrize("p", [2.0, 3.0, 0.5, -1.5])
def test_root_gradcheck_float64(p):
    s = tp.tensor([0.5, 1.25, 3.0], dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: ROOT(t, p), (s,), eps=1e-6, atol=1e-7, rtol=1e-6)
    assert tp.autograd.gradgradcheck(lambda t: ROOT(t, p), (s,), eps=1e-6, atol=1e-6,
                                     rtol=1e-5)


@pytest.mark.parametrize("p", [2.0, 3.0, -1.0])
def test_root_opcheck(p):
    s = tp.tensor([[0.5, 1.25], [3.0, 2.0]], dtype=tp.float64, requires_grad=True)
    assert library.opcheck(ROOT, (s, p)) == {}
    assert library.opcheck(ROOT, (tp.tensor([0.0, 4.0]), p)) == {}


def test_root_fake_rule():
    with fake.FakeTensorMode():
        s = tp.zeros(2, 3, dtype=tp.float64)
        r = ROOT(s, 2.0)
        assert r.is_fake and r.shape == (2, 3) and r.dtype is tp.float64
        assert ROOT(tp.zeros(4, dtype=tp.int64), 3.0).dtype is tp.float32


# -- one op with history where four were -------------------------------------------------------
def _ops_of(t):
    """The nodes of ``t``'s graph, by name, from its grad_fn down."""
    seen, stack, names = set(), [t.grad_fn], []
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.append(n.name)
        stack.extend(f for f, _ in n.next_functions)
    return names


def test_norm_and_std_record_one_root():
    x = tp.randn(4, 5, requires_grad=True)
    for r in (tp.norm(x), x.norm(3), LA.vector_norm(x, 2, 1), x.std(), x.std(0),
              tp.std_mean(x)[0], tp.dist(x, x.detach() + 1.0)):
        names = _ops_of(r)
        assert names[0] == "tp::_norm_rootBackward", names
        assert not any(n.startswith(("tp::where", "tp::eq")) for n in names), names


# -- the users: gradients at zero as torch 2.13's ----------------------------------------------
@pytest.mark.parametrize("p", [2, 3, 1.5, 0.5, -1, -2.5])
def test_vector_norm_of_zeros_and_a_zero_row(p):
    g = _grad(lambda x: LA.vector_norm(x, p, 1), [[0.0, 0.0], [3.0, 4.0]])[0]
    assert g[0] == [0.0, 0.0] and all(math.isfinite(v) for v in g[1])


@pytest.mark.parametrize("p", [-1.0, -2.0, -0.5])
def test_vector_norm_negative_ord_with_a_zero_element(p):
    # torch 2.13: the norm is 0 and its gradient 0 everywhere (was NaN at the zero element)
    x = _leaf([0.0, 1.0, -2.0])
    n = LA.vector_norm(x, p)
    assert n.item() == 0.0
    n.backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_vector_norm_negative_ord_gradient_without_zeros():
    # torch 2.13's value and gradient of vector_norm([3, 1, -2], -1.5)
    x = _leaf([3.0, 1.0, -2.0])
    n = LA.vector_norm(x, -1.5)
    assert n.item() == pytest.approx(0.7479278215671977, rel=1e-14)
    n.backward()
    want = [0.031034595157571683, 0.4837814604472069, -0.08552128782363788]
    assert x.grad.tolist() == pytest.approx(want, rel=1e-13)
    assert tp.autograd.gradcheck(lambda t: LA.vector_norm(t, -1.5), (x.detach().requires_grad_(),))


def test_std_var_family_masked():
    g = _grad(lambda x: x.std(1), [[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])[0]
    assert g[0] == [0.0] * 3 and g[1] == pytest.approx([-0.5, 0.0, 0.5])
    g = _grad(lambda x: tp.std_mean(x, 0)[0], [[1.0, 1.0], [1.0, 3.0]])[0]
    assert g[0][0] == 0.0 and g[1][0] == 0.0 and g[0][1] == pytest.approx(-1 / math.sqrt(2))


def test_dist_renorm_norm_at_zero():
    a = [[1.0, -2.0], [0.5, 3.0]]
    for p in (2, 3, 0.5, -1):
        assert _grad(lambda x, y: tp.dist(x, y, p), a, a) == [[[0.0, 0.0], [0.0, 0.0]]] * 2
    g = _grad(lambda x: tp.renorm(x, 3, 0, 1.0), [[0.0, 0.0], [3.0, 4.0]])[0]
    assert g[0] == [1.0, 1.0] and all(math.isfinite(v) for v in g[1])
    assert _grad(lambda x: tp.norm(x), [0.0, 0.0]) == [[0.0, 0.0]]


def test_cdist_inf_gradient_at_an_infinite_element():
    # torch 2.13: the infinite element's gradient is NaN (its |diff| - dist is inf - inf), the
    # row's other elements 0; a finite row keeps the whole gradient on its maxima
    a = _leaf([[0.0, math.inf, 1.0], [1.0, 2.0, 3.0]])
    b = _leaf([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    d = tp.cdist(a, b, math.inf)
    assert d.tolist() == [[math.inf, math.inf], [0.0, 2.0]]
    d.sum().backward()
    ga, gb = a.grad.tolist(), b.grad.tolist()
    assert ga[0][0] == 0.0 and math.isnan(ga[0][1]) and ga[0][2] == 0.0
    assert ga[1] == [0.0, 0.0, 1.0]
    assert gb[0][0] == 0.0 and math.isnan(gb[0][1]) and gb[0][2] == 0.0
    assert gb[1][0] == 0.0 and math.isnan(gb[1][1]) and gb[1][2] == -1.0   # b[1] meets a[0]


@pytest.mark.parametrize("p", [2.0, 3.0, 1.5])
def test_cdist_finite_p_gradient_at_an_infinite_element(p):
    g = _grad(lambda a, b: tp.cdist(a, b, p), [[0.0, math.inf, 1.0]], [[1.0, 2.0, 3.0]])
    for row in (g[0][0], g[1][0]):
        assert row[0] == 0.0 and math.isnan(row[1]) and row[2] == 0.0


def test_where_untaken_branch_gradient_is_zero_under_inf_and_nan():
    # torch 2.13: x.grad [inf, 0, -inf], y.grad [0, nan, 0] (g * 0 gave NaN in the zeros)
    x, y = _leaf([1.0, 2.0, 3.0]), _leaf([4.0, 5.0, 6.0])
    tp.where(tp.tensor([True, False, True]), x, y).backward(
        tp.tensor([math.inf, math.nan, -math.inf], dtype=tp.float64))
    gx, gy = x.grad.tolist(), y.grad.tolist()
    assert gx[0] == math.inf and gx[1] == 0.0 and gx[2] == -math.inf
    assert gy[0] == 0.0 and math.isnan(gy[1]) and gy[2] == 0.0
    s = tp.where(tp.tensor([True, False]), _leaf([1.0, 2.0]), 0.0)   # a number branch
    s.backward(tp.tensor([math.nan, math.inf], dtype=tp.float64))


@pytest.mark.parametrize("p", [0.5, 0.25])
def test_cdist_small_p_zero_difference_beside_an_infinite_one(p):
    # torch 2.13: the zero difference's gradient is 0 (was NaN through where's backward)
    g = _grad(lambda a, b: tp.cdist(a, b, p), [[0.0, math.inf, 1.0]], [[1.0, 1.0, 1.0]])
    assert g[0][0][2] == 0.0 and g[1][0][2] == 0.0
    assert g[0][0][0] == -math.inf and math.isnan(g[0][0][1])


# -- tensorplay.compile: the root is captured as one op, gradients as eager -------------------
def test_compiled_norm_and_std_gradients_at_zero():
    def f(x):
        return tp.norm(x, dim=1) + x.std(1) + LA.vector_norm(x, -1, 1)

    cf = tp.compile(f)
    for vals in ([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]], [[1.0, 1.0, 1.0], [3.0, 0.0, 2.0]]):
        xe, xc = _leaf(vals), _leaf(vals)
        re, rc = f(xe), cf(xc)
        assert rc.tolist() == pytest.approx(re.tolist(), rel=1e-14)
        re.sum().backward()
        rc.sum().backward()
        for gc, ge in zip(xc.grad.tolist(), xe.grad.tolist()):
            assert gc == pytest.approx(ge, rel=1e-14)


def test_compiled_zero_row_gradient_is_zero():
    cf = tp.compile(lambda x: tp.norm(x, dim=1) + x.std(1))
    x = _leaf([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]])
    cf(x).sum().backward()
    g = x.grad.tolist()
    assert g[0] == [0.0, 0.0, 0.0] and all(math.isfinite(v) for v in g[1])


# -- GPU ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dev", [pytest.param("cuda", marks=pytest.mark.cuda), "gpustandin"])
def test_norm_root_on_cuda(dev, request):
    """On a GPU (and on conftest's stand-in for one, which runs the kernels' device branch
    where there is no GPU): the op's values as the cpu's, gradients 0 at a zero norm and a
    constant row."""
    if dev == "cuda":
        ok, why = tp.plugins.device_status("cuda")
        if not ok:
            pytest.skip(f"cuda unavailable: {why}")
    else:
        request.getfixturevalue("gpu_stand_in")
    vals = [[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]
    for p in (2, 3, 0.5, -1):
        xc, xh = _leaf(vals, device=dev), _leaf(vals)
        rc, rh = LA.vector_norm(xc, p, 1), LA.vector_norm(xh, p, 1)
        assert rc.device.type == dev
        assert rc.cpu().tolist() == pytest.approx(rh.tolist(), rel=1e-14)
        rc.sum().backward()
        rh.sum().backward()
        assert sum(xc.grad.cpu().tolist(), []) == pytest.approx(sum(xh.grad.tolist(), []),
                                                                rel=1e-13)   # (approx: flat)
        assert xc.grad.cpu().tolist()[0] == [0.0, 0.0, 0.0]
    s = _leaf([0.0, 4.0], device=dev)
    ROOT(s, 2.0).sum().backward()
    assert s.grad.cpu().tolist() == [0.0, 0.25]
    x = _leaf([[2.0, 2.0], [1.0, 3.0]], device=dev)
    x.std(1).sum().backward()
    assert x.grad.cpu().tolist()[0] == [0.0, 0.0]
    assert library.opcheck(ROOT, (tp.tensor([[0.5, 1.25]], dtype=tp.float64, device=dev,
                                            requires_grad=True), 2.0)) == {}
