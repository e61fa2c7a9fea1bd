"""Session 49: divergences from torch 2.13 (cpu) found by checking torch itself (values noted
next to each test)."""
import math

import pytest

import tensorplay as tp

inf, nan = math.inf, math.nan


def _expanded():
    base = tp.tensor([1.0])
    return base, base.expand(3)


# -- 3. writing into an expanded tensor -----------------------------------------------------------
# torch allows the writes that give every element sharing a location the same value (fill_ with
# a number, zero_, masked_fill_, index_put_ / index_fill_ / x[idx] = v) and refuses the others
# (copy_, fill_ with a Tensor, arithmetic, random fills, x[:] = v, index_copy_, scatter_...)
@pytest.mark.parametrize("write, want", [
    (lambda t: t.fill_(2.0), 2.0),
    (lambda t: t.fill_(2), 2.0),
    (lambda t: t.fill_(True), 1.0),
    (lambda t: t.zero_(), 0.0),
    (lambda t: t.detach().fill_(3.0), 3.0),
    (lambda t: t.masked_fill_(tp.tensor([True, False, True]), 7.0), 7.0),
    (lambda t: t.masked_fill_(tp.tensor([True, False, True]), tp.tensor(7.0)), 7.0),
    (lambda t: t.index_fill_(0, tp.tensor([0]), 7.0), 7.0),
    (lambda t: t.index_put_((tp.tensor([0]),), tp.tensor(9.0)), 9.0),
    (lambda t: t.__setitem__(tp.tensor([0, 2]), 5.0), 5.0),
    (lambda t: t.__setitem__(tp.tensor([True, False, True]), 5.0), 5.0),
    (lambda t: t.__setitem__(0, 4.0), 4.0),
])
@pytest.mark.filterwarnings("ignore:Use of index_put_ on expanded tensors:UserWarning")  # torch's
def test_expanded_write_allowed(write, want):
    base, t = _expanded()
    v = t._version
    write(t)
    assert base.tolist() == [want]
    assert t._version == v + 1


@pytest.mark.parametrize("write", [
    lambda t: t.fill_(tp.tensor(3.0)),
    lambda t: t.copy_(tp.tensor([1.0, 2.0, 3.0])),
    lambda t: t.copy_(tp.tensor(5.0)),
    lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.neg_(), lambda t: t.clamp_(0, 1),
    lambda t: t.normal_(), lambda t: t.uniform_(), lambda t: t.bernoulli_(),
    lambda t: t.random_(5), lambda t: t.exponential_(),
    lambda t: t.__setitem__(slice(None), 4.0),
    lambda t: t.__setitem__(Ellipsis, 4.0),
    lambda t: t.__setitem__(slice(0, 2), 4.0),
    lambda t: t.index_copy_(0, tp.tensor([0]), tp.tensor([7.0])),
    lambda t: t.index_add_(0, tp.tensor([0]), tp.tensor([7.0])),
    lambda t: t.scatter_(0, tp.tensor([0]), 7.0),
    lambda t: t.masked_scatter_(tp.tensor([True, False, True]), tp.tensor([4.0, 5.0])),
])
def test_expanded_write_refused(write):
    base, t = _expanded()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        write(t)
    assert base.tolist() == [1.0]


def test_expanded_fill_nd():
    b = tp.tensor([[1.0], [2.0]])
    b.expand(2, 3).fill_(4.0)
    assert b.tolist() == [[4.0], [4.0]]
    z = tp.ones(2, 2)
    z.unsqueeze(1).expand(2, 3, 2).zero_()
    assert z.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # a row of an expanded matrix is itself expanded: x[0] = v refused (torch: copy_)
    with pytest.raises(RuntimeError, match="single memory location"):
        b.expand(2, 3)[0] = 5.0


# -- 2. vector_norm(x, ord=0): torch's backward gives no gradient (undefined) ----------------------
@pytest.mark.parametrize("f", [
    lambda x: tp.linalg.vector_norm(x, 0),
    lambda x: tp.linalg.vector_norm(x, 0.0, dim=-1).sum(),
    lambda x: tp.linalg.vector_norm(x, 0, dtype=tp.float64),
    lambda x: tp.linalg.norm(x.reshape(-1), 0),
    lambda x: tp.norm(x, p=0),
    lambda x: x.norm(p=0),
])
def test_norm0_has_history_but_no_gradient(f):
    x = tp.tensor([[1.0, 0.0], [2.0, nan]], requires_grad=True)
    y = f(x)
    assert y.requires_grad and y.grad_fn is not None
    y.backward()
    assert x.grad is None
    with pytest.raises(RuntimeError, match="not used in the graph"):
        tp.autograd.grad(f(x), x)
    assert tp.autograd.grad(f(x), x, allow_unused=True) == (None,)


def test_norm0_beside_another_path():
    x = tp.tensor([1.0, 0.0, 2.0], requires_grad=True)
    (tp.linalg.vector_norm(x * 2, 0) * 3 + (x * x).sum()).backward()
    assert x.grad.tolist() == [2.0, 0.0, 4.0]
    h = tp.tensor([1.0, 0.0, 2.0], dtype=tp.float16, requires_grad=True)
    y = tp.linalg.vector_norm(h, 0)
    assert y.dtype is tp.float16 and y.item() == 2.0
    y.backward()
    assert h.grad is None
    with tp.no_grad():
        assert not tp.linalg.vector_norm(x, 0).requires_grad


# -- 4. cdist with NaN, p = inf and p = 0 (torch 2.13 cpu values) ---------------------------------
def _cdist(a, b, p, weights=None):
    x1 = tp.tensor(a, requires_grad=True)
    x2 = tp.tensor(b, requires_grad=True)
    d = tp.cdist(x1, x2, p)
    (d * (weights if weights is not None else 1.0)).sum().backward()
    with tp.no_grad():
        plain = tp.cdist(x1, x2, p).tolist()
    assert plain == d.tolist() or str(plain) == str(d.tolist())
    return d.tolist(), x1.grad.tolist(), x2.grad.tolist()


def _same(got, want):
    assert str(got) == str(want), (got, want)


@pytest.mark.parametrize("a, b, d, g1, g2", [
    ([[nan, 1.0]], [[0.0, 0.0]], [[1.0]], [[nan, 1.0]], [[nan, -1.0]]),
    ([[1.0, 2.0]], [[nan, 0.0]], [[2.0]], [[nan, 1.0]], [[nan, -1.0]]),
    ([[inf, 1.0]], [[inf, 0.0]], [[1.0]], [[nan, 1.0]], [[nan, -1.0]]),
    ([[1.0, nan]], [[1.0, nan]], [[0.0]], [[0.0, nan]], [[0.0, nan]]),
    ([[nan]], [[0.0]], [[0.0]], [[nan]], [[nan]]),
    ([[inf, 1.0]], [[0.0, 0.0]], [[inf]], [[nan, 0.0]], [[nan, 0.0]]),
    ([[1.0, 2.0]], [[3.0, 2.0]], [[2.0]], [[-1.0, 0.0]], [[1.0, 0.0]]),
    ([[nan, 1.0], [2.0, 3.0]], [[0.0, 0.0], [1.0, 1.0]], [[1.0, 0.0], [3.0, 2.0]],
     [[nan, 1.0], [0.0, 2.0]], [[nan, -2.0], [nan, -1.0]]),
])
def test_cdist_inf_skips_nan(a, b, d, g1, g2):
    _same(_cdist(a, b, inf), (d, g1, g2))


@pytest.mark.parametrize("a, b, d", [
    ([[nan, 1.0]], [[0.0, 0.0]], [[nan]]),
    ([[inf, 1.0]], [[inf, 0.0]], [[nan]]),
    ([[1.0, nan]], [[1.0, nan]], [[nan]]),
    ([[inf, 1.0]], [[0.0, 0.0]], [[2.0]]),
    ([[1.0, 2.0]], [[3.0, 2.0]], [[1.0]]),
    ([[nan, 1.0], [2.0, 3.0]], [[0.0, 0.0], [1.0, 1.0]], [[nan, nan], [2.0, 2.0]]),
])
def test_cdist_0_nan_counts_as_nan_and_zero_gradient(a, b, d):
    zeros = lambda t: [[0.0] * len(r) for r in t]     # noqa: E731
    _same(_cdist(a, b, 0), (d, zeros(a), zeros(b)))


def test_cdist_batched_nan():
    a = [[[1.0, nan], [2.0, 3.0]]]
    b = [[[0.0, 0.0]], [[1.0, 5.0]]]
    w = tp.arange(1.0, 5.0).reshape(2, 2, 1)
    _same(_cdist(a, b, inf, w), ([[[1.0], [3.0]], [[0.0], [2.0]]],
                                 [[[1.0, nan], [0.0, -2.0]]], [[[-1.0, nan]], [[0.0, nan]]]))
    _same(_cdist(a, b, 0, w), ([[[nan], [2.0]], [[nan], [2.0]]],
                               [[[0.0, 0.0], [0.0, 0.0]]], [[[0.0, 0.0]], [[0.0, 0.0]]]))


def test_norm0_and_cdist_under_compile_keep_a_history():
    # tensorplay.compile records built-in ops only: the compiled versions keep the values and
    # a (zero / torch-formula) gradient instead of losing the history
    x1 = tp.tensor([[1.0, nan], [2.0, 3.0]], dtype=tp.float64, requires_grad=True)
    x2 = tp.tensor([[0.0, 0.0], [1.0, 5.0]], dtype=tp.float64, requires_grad=True)
    for p in (0, inf):
        y = tp.compile(lambda a, b: tp.cdist(a, b, p) * 1)(x1, x2)
        assert y.requires_grad
        _same(y.tolist(), tp.cdist(x1, x2, p).tolist())
    y = tp.compile(lambda a: tp.linalg.vector_norm(a, 0) * 1)(x1)
    assert y.requires_grad and y.item() == 4.0


# -- 1. max()/min() of all elements: torch's evenly_distribute_backward (cpu) ---------------------
def _grad(f, values, g=1.0):
    x = tp.tensor(values, requires_grad=True)
    y = f(x)
    y.backward(tp.full_like(y, g))
    return x.grad.tolist()


@pytest.mark.parametrize("values, g, gmax, gmin", [
    ([inf, 1.0, 2.0], inf, [inf, 0.0, 0.0], [0.0, inf, 0.0]),
    ([inf, 1.0, 2.0], nan, [nan, 0.0, 0.0], [0.0, nan, 0.0]),
    ([inf, inf, 1.0], 1.0, [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]),
    ([inf, inf, 1.0], -inf, [-inf, -inf, 0.0], [0.0, 0.0, -inf]),
    ([-inf, -inf, 1.0], inf, [0.0, 0.0, inf], [inf, inf, 0.0]),
    ([1.0, 2.0, 2.0], inf, [0.0, inf, inf], [inf, 0.0, 0.0]),
    ([nan, 1.0, inf], 1.0, [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
    ([nan, nan, 1.0], 1.0, [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]),
    ([inf, nan], 1.0, [0.0, 1.0], [0.0, 1.0]),
    ([nan, 1.0], inf, [inf, 0.0], [inf, 0.0]),
])
def test_max_min_of_all_gradient(values, g, gmax, gmin):
    _same(_grad(lambda x: x.max(), values, g), gmax)
    _same(_grad(lambda x: x.min(), values, g), gmin)
    _same(_grad(lambda x: tp.max(x), values, g), gmax)
    _same(_grad(lambda x: tp.min(x), values, g), gmin)


@pytest.mark.parametrize("values, g, gamax", [
    ([inf, 1.0, 2.0], inf, [inf, nan, nan]),      # amax keeps torch's g / count * mask
    ([nan, 1.0], 1.0, [nan, nan]),
    ([inf, inf, 1.0], 1.0, [0.5, 0.5, 0.0]),
])
def test_amax_gradient_unchanged(values, g, gamax):
    _same(_grad(lambda x: x.amax(), values, g), gamax)
    _same(_grad(lambda x: x.max(0).values, [1.0, 3.0, 3.0], g), [0.0, g, 0.0])


def test_max_of_all_keeps_dtype_and_0dim():
    x = tp.tensor([[1.0, -2.0], [3.0, nan]], dtype=tp.float16, requires_grad=True)
    x.max().backward()
    assert x.grad.dtype is tp.float16 and str(x.grad.tolist()) == "[[0.0, 0.0], [0.0, 1.0]]"
    x0 = tp.tensor(3.0, requires_grad=True)
    x0.min().backward()
    assert x0.grad.item() == 1.0
    with pytest.raises(RuntimeError):
        tp.tensor([], requires_grad=True).max()


# the inf norms: torch's sgn(x) * (g / count * mask), mask = |x| == norm or NaN; sgn(NaN) = 0
@pytest.mark.parametrize("values, g, want", [
    ([nan, 1.0], 1.0, [0.0, 0.0]),
    ([nan, -2.0], 2.0, [0.0, -0.0]),
    ([nan, inf], 1.0, [0.0, 0.0]),
    ([nan, 1.0], inf, [nan, nan]),
    ([inf, 1.0, 2.0], inf, [inf, nan, nan]),
    ([-inf, -inf, 1.0], 1.0, [-0.5, -0.5, 0.0]),
])
def test_inf_norm_gradient_with_nan(values, g, want):
    _same(_grad(lambda x: tp.linalg.vector_norm(x, inf), values, g), want)
    if values[0] != values[0]:
        _same(_grad(lambda x: tp.linalg.vector_norm(x, -inf), values, g), want)
        _same(_grad(lambda x: tp.norm(x, inf), values, g), want)


def test_inf_norm_rows_and_keepdim():
    _same(_grad(lambda x: tp.linalg.vector_norm(x, inf, dim=-1), [[nan, 1.0], [2.0, 3.0]]),
          [[0.0, 0.0], [0.0, 1.0]])
    _same(_grad(lambda x: tp.linalg.vector_norm(x, -inf, dim=(0, 1), keepdim=True),
                [[1.0, -5.0], [3.0, 2.0]]), [[1.0, -0.0], [0.0, 0.0]])


@pytest.mark.parametrize("mask, want", [([True, False], 7.0), ([False, True], 7.0),
                                        ([False, False], 1.0)])
@pytest.mark.parametrize("dev", ["cpu", "gpustandin"])
def test_expanded_masked_fill_writes_only_the_true_positions(mask, want, dev, request):
    # torch writes only where the mask is True: a False position after a True one does not
    # put the old value back (also on conftest's GPU stand-in: the kernel's device branch)
    if dev != "cpu":
        request.getfixturevalue("gpu_stand_in")
    b = tp.tensor([1.0], device=dev)
    b.expand(2).masked_fill_(tp.tensor(mask, device=dev), 7.0)
    assert b.tolist() == [want]
    b = tp.tensor([[1.0], [2.0]], device=dev)
    b.expand(2, 3).masked_fill_(tp.tensor([[True, False, False], [False, False, True]],
                                          device=dev), 7.0)
    assert b.tolist() == [[7.0], [7.0]]


# -- dtype= of the norms: no narrowing, as torch (2.13: "should be convertible without narrowing")
@pytest.mark.parametrize("call, api", [
    (lambda x, dt: tp.linalg.vector_norm(x, dtype=dt), "linalg.vector_norm"),
    (lambda x, dt: tp.linalg.norm(x, dtype=dt), "linalg.vector_norm"),
    (lambda x, dt: tp.norm(x, dtype=dt), "linalg.vector_norm"),
    (lambda x, dt: tp.linalg.matrix_norm(x.reshape(2, 2), dtype=dt), "linalg.matrix_norm"),
    (lambda x, dt: tp.linalg.matrix_norm(x.reshape(2, 2), "nuc", dtype=dt),
     "linalg.matrix_norm"),
], ids=["vector_norm", "linalg.norm", "norm", "matrix_norm", "matrix_norm nuc"])
def test_norm_dtype_refuses_narrowing(call, api):
    x = tp.tensor([3.0, -4.0, 1.0, 2.0])
    with pytest.raises(RuntimeError, match=rf"{api}: the dtype of the input \(Float\) should be "
                                           r"convertible without narrowing to the specified "
                                           r"dtype \(Half\)"):
        call(x, tp.float16)
    with pytest.raises(RuntimeError, match=r"\(Double\) should be convertible without narrowing "
                                           r"to the specified dtype \(Float\)"):
        call(x.double(), tp.float32)
    with pytest.raises(RuntimeError, match=r"\(Half\) should be .* dtype \(BFloat16\)"):
        call(x.half(), tp.bfloat16)
    r = call(x, tp.float64)                      # widening: computed in float64
    assert r.dtype == tp.float64
    assert r.item() == pytest.approx(call(x.double(), None).item(), rel=1e-15)
    assert call(x.half(), tp.float32).dtype == tp.float32
