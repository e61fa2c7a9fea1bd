"""torch's everyday tensor surface (issue 29 §3): copy, pickle, format, advanced indexing, and
the methods/functions the issue probed. Values are compared with NumPy."""

import copy
import pickle

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.fake import FakeTensorMode


def _np(t):
    return t.detach().numpy()


# -- copy.deepcopy ------------------------------------------------------------------------------
def test_deepcopy_copies_values_dtype_and_leaf_state():
    for dt in (tp.float32, tp.float64, tp.int64, tp.bool, tp.bfloat16, tp.float16):
        x = tp.tensor([[1, 0], [3, 4]]).to(dt)
        y = copy.deepcopy(x)
        assert y.dtype is dt and y.shape == x.shape and y.device == x.device
        np.testing.assert_array_equal(_np(y.float()), _np(x.float()))
        y[0, 0] = 7     # a copy, not an alias
        assert x[0, 0].item() == 1


def test_deepcopy_requires_grad_and_grad():
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    c = copy.deepcopy(w)
    assert c.requires_grad and c.is_leaf and c.grad_fn is None
    np.testing.assert_array_equal(_np(c.grad), [2.0, 4.0])
    assert c.grad is not w.grad
    (c * 3).sum().backward()      # the copy is a leaf of its own
    np.testing.assert_array_equal(_np(c.grad), [5.0, 7.0])
    np.testing.assert_array_equal(_np(w.grad), [2.0, 4.0])


def test_deepcopy_keeps_shared_identity_in_containers():
    x = tp.ones(3)
    a, b = copy.deepcopy([x, x])
    assert a is b and a is not x


def test_deepcopy_of_non_leaf_is_refused_as_torch():
    w = tp.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(w * 2)


# -- pickle -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "bool", "bfloat16",
                                "float16", "uint8"])
def test_pickle_roundtrip_by_value(dt):
    dtype = getattr(tp, dt)
    x = tp.arange(6).reshape(2, 3).to(dtype)
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is dtype and y.shape == (2, 3) and y.device == x.device
    np.testing.assert_array_equal(_np(y.float()), _np(x.float()))


def test_pickle_views_and_requires_grad():
    base = tp.arange(12.0).reshape(3, 4)
    v = base[:, 1::2].t()
    y = pickle.loads(pickle.dumps(v))
    np.testing.assert_array_equal(_np(y), _np(v))
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    z = pickle.loads(pickle.dumps(w))
    assert z.requires_grad and z.is_leaf
    obj = pickle.loads(pickle.dumps({"w": w, "n": 3}))
    np.testing.assert_array_equal(_np(obj["w"]), [1.0, 2.0])


def test_pickle_fake_or_meta_is_refused_clearly():
    m = tp.empty(2, 3, device="meta")
    with pytest.raises(RuntimeError, match="pickle.*meta"):
        pickle.dumps(m)
    with FakeTensorMode():
        f = tp.empty(2)
        with pytest.raises(RuntimeError, match="pickle"):
            pickle.dumps(f)


# -- format -------------------------------------------------------------------------------------
def test_format_zero_dim_uses_the_spec():
    assert f"{tp.tensor(3.14159):.2f}" == "3.14"
    assert format(tp.tensor(7), "04d") == "0007"
    assert f"{tp.tensor(True)}" == "True"
    assert f"{tp.tensor(2.5):>6}" == "   2.5"


def test_format_other_tensors():
    t = tp.tensor([1.0, 2.0])
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="format"):
        f"{t:.2f}"


# -- advanced indexing --------------------------------------------------------------------------
def _idx_cases():
    a = np.arange(3 * 4 * 5 * 2, dtype=np.float64).reshape(3, 4, 5, 2)
    return a, [
        ([0, 2],),
        (np.array([1, 0, 2]),),
        ([0, 1], [1, 0]),
        (np.array([[0, 1], [2, 2]]), np.array([1, 3])),
        (slice(None), [0, 3], [4, 1]),            # adjacent after a slice: stays in place
        ([0, 2], slice(None), [1, 4]),            # separated: result dims go first
        (slice(None), [0, 3], slice(1, 4), [1, 0]),
        (Ellipsis, [1, 0], [0, 1]),
        ([-1, 0], [-2, 3]),
        (None, [0, 1], [1, 2]),
        (np.array([True, False, True]), [1, 3]),  # bool mask + int array
        (np.array([[True, False, True, False]] * 3), [0, 1, 1, 0, 1, 0]),
        (np.int64(2), [1, 1]),
    ]


def test_advanced_indexing_matches_numpy():
    a, cases = _idx_cases()
    t = tp.tensor(a)
    for idx in cases:
        tidx = tuple(tp.tensor(i) if isinstance(i, list) and len(i) > 4 else i for i in idx)
        expect = a[idx]
        got = t[tidx if len(tidx) > 1 else tidx[0]]
        assert got.shape == expect.shape, idx
        np.testing.assert_array_equal(_np(got), expect, err_msg=str(idx))


def test_ints_are_selects_before_advanced_indexing_as_torch():
    # torch applies an int index as select first (NumPy would broadcast it with the arrays)
    a = np.arange(3 * 4 * 5 * 2).reshape(3, 4, 5, 2)
    t = tp.tensor(a)
    got = t[1, :, [0, 2]]
    assert got.shape == (4, 2, 2)
    np.testing.assert_array_equal(_np(got), a[1][:, [0, 2]])
    got = t[[0, 1], 2, [3, 4]]
    np.testing.assert_array_equal(_np(got), a[:, 2][[0, 1], [3, 4]])


def test_advanced_indexing_with_index_tensors():
    a = np.arange(12).reshape(3, 4)
    t = tp.tensor(a)
    i, j = tp.tensor([0, 2, 1]), tp.tensor([3, 0, 1])
    np.testing.assert_array_equal(_np(t[i, j]), a[[0, 2, 1], [3, 0, 1]])
    np.testing.assert_array_equal(_np(t[i[:, None], j]), a[np.array([0, 2, 1])[:, None],
                                                             [3, 0, 1]])


def test_advanced_indexing_errors():
    t = tp.zeros(3, 4)
    with pytest.raises(IndexError):
        t[[0, 3], [0, 1]]
    with pytest.raises(IndexError, match="shape mismatch"):
        t[[0, 1], [0, 1, 2]]


def test_advanced_indexing_backward_accumulates_repeats():
    a = np.arange(12.0).reshape(3, 4)
    x = tp.tensor(a, requires_grad=True)
    w = np.array([1.0, 2.0, 3.0])
    (x[[0, 2, 0], [1, 3, 1]] * tp.tensor(w)).sum().backward()
    g = np.zeros_like(a)
    np.add.at(g, ([0, 2, 0], [1, 3, 1]), w)
    np.testing.assert_array_equal(_np(x.grad), g)
    x.grad = None
    x[:, [0, 2]].sum().backward()
    g = np.zeros_like(a)
    g[:, [0, 2]] = 1
    np.testing.assert_array_equal(_np(x.grad), g)


def test_advanced_indexing_under_fake_mode_gives_shapes():
    with FakeTensorMode():
        t = tp.empty(3, 4, 5)
        i = tp.zeros(2, dtype=tp.int64)
        assert t[i, :, i].shape == (2, 4)
        assert t[:, i, i].shape == (3, 2)


# -- the methods and functions issue 29 probed ---------------------------------------------------
PROBED_METHODS = ("repeat repeat_interleave unbind nonzero masked_select index_select select flip "
                  "roll tril triu diag sign reciprocal eq ne ge equal allclose type bfloat16 byte "
                  "uniform_ normal_ random_ scatter scatter_ unique register_hook apply_ addmm "
                  "bmm").split()
PROBED_FUNCTIONS = ("einsum bmm mm outer dot tensordot finfo iinfo isclose logsumexp std var norm "
                    "broadcast_to broadcast_tensors meshgrid randperm multinomial chunk split "
                    "unbind flatten narrow as_strided tril triu diag flip roll unique nonzero "
                    "repeat_interleave equal addmm baddbmm").split()
NOT_YET: set = set()


def test_probe_counts():
    assert len(PROBED_METHODS) == 32 and len(PROBED_FUNCTIONS) == 35
    have_m = [m for m in PROBED_METHODS if hasattr(tp.Tensor, m)]
    have_f = [f for f in PROBED_FUNCTIONS if hasattr(tp, f)]
    assert set(PROBED_METHODS) - set(have_m) <= NOT_YET
    assert set(PROBED_FUNCTIONS) - set(have_f) <= NOT_YET
    for f in have_f:
        assert f in tp.__all__ or f in ("allclose",), f


A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 7.5


def test_shape_functions():
    t = tp.tensor(A)
    for a, b in zip(t.unbind(1), np.moveaxis(A, 1, 0)):
        np.testing.assert_array_equal(_np(a), b)
    np.testing.assert_array_equal(_np(t.select(2, -1)), A[:, :, -1])
    np.testing.assert_array_equal(_np(t.flip(0, 2)), A[::-1, :, ::-1])
    np.testing.assert_array_equal(_np(tp.flip(t, [1])), A[:, ::-1])
    np.testing.assert_array_equal(_np(t.roll(2, 2)), np.roll(A, 2, 2))
    np.testing.assert_array_equal(_np(t.roll(-5)), np.roll(A, -5))
    np.testing.assert_array_equal(_np(tp.roll(t, (1, -1), (0, 1))), np.roll(A, (1, -1), (0, 1)))
    for k in (-2, -1, 0, 1, 3):
        np.testing.assert_array_equal(_np(t.tril(k)), np.tril(A, k))
        np.testing.assert_array_equal(_np(tp.triu(t, k)), np.triu(A, k))
    v = np.array([1.0, 2.0, 3.0])
    m = A[0]
    for k in (-2, -1, 0, 1, 2):
        np.testing.assert_array_equal(_np(tp.diag(tp.tensor(v), k)), np.diag(v, k))
        np.testing.assert_array_equal(_np(tp.tensor(m).diag(k)), np.diag(m, k))
    np.testing.assert_array_equal(_np(t.repeat(2, 1, 1, 2)), np.tile(A, (2, 1, 1, 2)))
    np.testing.assert_array_equal(_np(t.repeat_interleave(2, 1)), np.repeat(A, 2, 1))
    np.testing.assert_array_equal(_np(tp.repeat_interleave(t, tp.tensor([1, 0, 2]), 1)),
                                  np.repeat(A, [1, 0, 2], 1))
    np.testing.assert_array_equal(_np(t.repeat_interleave(3)), np.repeat(A, 3))
    idx = tp.tensor([2, 0, 2])
    np.testing.assert_array_equal(_np(t.index_select(1, idx)), A[:, [2, 0, 2]])
    mask = A[0] > 0
    np.testing.assert_array_equal(_np(t.masked_select(tp.tensor(mask))),
                                  A[np.broadcast_to(mask, A.shape)])
    np.testing.assert_array_equal(_np(tp.flatten(t, 1)), A.reshape(2, 12))
    assert [c.shape for c in tp.chunk(t, 2, 2)] == [(2, 3, 2)] * 2
    assert [c.shape for c in tp.split(t, [1, 3], 2)] == [(2, 3, 1), (2, 3, 3)]
    np.testing.assert_array_equal(_np(tp.narrow(t, 2, 1, 2)), A[:, :, 1:3])
    a, b = tp.broadcast_tensors(tp.ones(3, 1), tp.zeros(4))
    assert a.shape == b.shape == (3, 4)
    assert tp.broadcast_to(tp.ones(3), (2, 3)).shape == (2, 3)
    for ix in ("ij", "xy"):
        gs = tp.meshgrid(tp.tensor([1, 2, 3]), tp.tensor([4, 5]), indexing=ix)
        ns = np.meshgrid([1, 2, 3], [4, 5], indexing=ix)
        for g, n in zip(gs, ns):
            np.testing.assert_array_equal(_np(g), n)


def test_composites_backward_match_numpy():
    x = tp.tensor(A, requires_grad=True)
    w = np.random.default_rng(0).standard_normal((2, 3, 4))
    for fn, ref_grad in [
        (lambda t: t.flip(2), w[:, :, ::-1]),
        (lambda t: t.roll(1, 2), np.roll(w, -1, 2)),
        (lambda t: t.tril(), np.tril(w)),
    ]:
        x.grad = None
        (fn(x) * tp.tensor(w)).sum().backward()
        np.testing.assert_allclose(_np(x.grad), ref_grad)
    x.grad = None
    x.repeat(1, 2, 1).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.full(A.shape, 2.0))


def test_comparisons_and_conversions():
    t = tp.tensor([1.0, 2.0, float("nan"), float("inf")])
    u = tp.tensor([1.0, 2.0 + 1e-9, float("nan"), float("inf")])
    np.testing.assert_array_equal(_np(t.isclose(u)), [True, True, False, True])
    np.testing.assert_array_equal(_np(tp.isclose(t, u, equal_nan=True)), [True] * 4)
    assert not t.allclose(u) and t.allclose(u, equal_nan=True)
    assert tp.equal(tp.tensor([1, 2]), tp.tensor([1, 2]))
    assert not tp.tensor([1, 2]).equal(tp.tensor([1, 3]))
    assert not tp.equal(tp.tensor([1, 2]), tp.tensor([[1, 2]]))
    np.testing.assert_array_equal(_np(t.eq(1.0)), [True, False, False, False])
    np.testing.assert_array_equal(_np(t.ne(u)), [False, False, True, False])  # float32 2+1e-9 is 2
    np.testing.assert_array_equal(_np(t.ge(2.0)), [False, True, False, True])
    np.testing.assert_array_equal(_np(tp.tensor([-2, 0, 3]).sign()), [-1, 0, 1])
    r = tp.tensor([2, 4]).reciprocal()
    assert r.dtype is tp.float32
    np.testing.assert_array_equal(_np(r), [0.5, 0.25])
    assert tp.tensor([1.0]).type() == "tensorplay.FloatTensor"
    assert tp.tensor([1.0]).type(tp.int64).dtype is tp.int64
    assert tp.tensor([1.0]).type("tensorplay.DoubleTensor").dtype is tp.float64
    assert tp.tensor([1.0]).bfloat16().dtype is tp.bfloat16
    assert tp.tensor([300]).byte().item() == 44


def test_linear_algebra_matches_numpy():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    c = rng.standard_normal((3, 5))
    ta, tb, tc = tp.tensor(a), tp.tensor(b), tp.tensor(c)
    np.testing.assert_allclose(_np(tp.mm(ta, tb)), a @ b)
    np.testing.assert_allclose(_np(tc.addmm(ta, tb, beta=0.5, alpha=2)), 0.5 * c + 2 * a @ b)
    ba, bb = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(_np(tp.tensor(ba).bmm(tp.tensor(bb))), ba @ bb)
    np.testing.assert_allclose(_np(tp.baddbmm(tp.tensor(c), tp.tensor(ba), tp.tensor(bb))),
                               c + ba @ bb)
    v, u = rng.standard_normal(4), rng.standard_normal(4)
    np.testing.assert_allclose(tp.dot(tp.tensor(v), tp.tensor(u)).item(), v @ u)
    np.testing.assert_allclose(_np(tp.outer(tp.tensor(v), tp.tensor(u[:3]))), np.outer(v, u[:3]))
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3, 5))
    np.testing.assert_allclose(_np(tp.tensordot(tp.tensor(x), tp.tensor(y), ([1, 2], [1, 0]))),
                               np.tensordot(x, y, ([1, 2], [1, 0])))
    np.testing.assert_allclose(_np(tp.tensordot(ta, tb, 1)), np.tensordot(a, b, 1))
    for eq, ops in [("ij,jk->ik", (a, b)), ("ij,jk", (a, b)), ("ii->i", (a[:3, :3],)),
                    ("ii", (a[:3, :3],)), ("bij,bjk->bik", (ba, bb)), ("i,j->ij", (v, u)),
                    ("...ij,...jk->...ik", (ba, bb)), ("ij->ji", (a,)), ("ij->", (a,)),
                    ("bij,jk,bik->b", (ba, b, ba @ b))]:
        got = tp.einsum(eq, *[tp.tensor(o) for o in ops])
        np.testing.assert_allclose(_np(got), np.einsum(eq, *ops), err_msg=eq)
    with pytest.raises(RuntimeError):
        tp.mm(tp.tensor(v), tb)
    xa = tp.tensor(a, requires_grad=True)
    tp.einsum("ij,jk->ik", xa, tb).sum().backward()
    np.testing.assert_allclose(_np(xa.grad), np.ones((3, 5)) @ b.T)


def test_reductions():
    x = np.array([[1.0, 2.0, 1000.0], [-np.inf, -np.inf, -np.inf]])
    got = _np(tp.logsumexp(tp.tensor(x), 1))
    np.testing.assert_allclose(got, [1000.0, -np.inf])
    y = A.reshape(6, 4)
    np.testing.assert_allclose(_np(tp.tensor(y).logsumexp((0, 1), keepdim=True)),
                               np.log(np.exp(y).sum(keepdims=True)))
    np.testing.assert_allclose(_np(tp.std(tp.tensor(y), 0)), y.std(0, ddof=1))
    np.testing.assert_allclose(_np(tp.var(tp.tensor(y), 1, correction=0)), y.var(1))
    for p in ("fro", 1, 3, float("inf")):
        ref = np.linalg.norm(y.ravel(), 2 if p == "fro" else p)
        np.testing.assert_allclose(tp.norm(tp.tensor(y), p).item(), ref)
    np.testing.assert_allclose(_np(tp.norm(tp.tensor(y), 2, 1)), np.linalg.norm(y, axis=1))


def test_unique():
    x = np.array([[3, 1, 2], [1, 3, 5]])
    vals, inv, cnt = tp.unique(tp.tensor(x), return_inverse=True, return_counts=True)
    v, i, c = np.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(_np(vals), v)
    np.testing.assert_array_equal(_np(inv), i.reshape(x.shape))
    np.testing.assert_array_equal(_np(cnt), c)
    np.testing.assert_array_equal(_np(tp.tensor([2.0, 2.0]).unique()), [2.0])


def test_dtype_info():
    assert tp.finfo(tp.float32).eps == np.finfo(np.float32).eps
    assert tp.finfo(tp.float64).max == np.finfo(np.float64).max
    assert tp.finfo(tp.float16).tiny == np.finfo(np.float16).tiny
    assert tp.finfo().bits == 32
    assert tp.iinfo(tp.int32).min == np.iinfo(np.int32).min
    assert tp.iinfo(tp.uint8).max == 255
    with pytest.raises(TypeError):
        tp.finfo(tp.int64)


def test_random_functions():
    tp.manual_seed(0)
    p = tp.randperm(10)
    assert p.dtype is tp.int64 and sorted(p.tolist()) == list(range(10))
    probs = tp.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 0.0]])
    s = tp.multinomial(probs, 2)
    assert s.shape == (2, 2)
    assert set(s[0].tolist()) == {1, 2} and s[1, 0].item() == 0
    s = tp.multinomial(tp.tensor([1.0, 0.0, 3.0]), 4000, replacement=True)
    counts = np.bincount(_np(s), minlength=3)
    assert counts[1] == 0 and 0.2 < counts[0] / 4000 < 0.3
    t = tp.empty(1000)
    assert t.uniform_(2, 3) is t
    assert 2 <= t.min().item() and t.max().item() < 3
    t.normal_(5, 0.1)
    assert abs(t.mean().item() - 5) < 0.05
    r = tp.empty(100, dtype=tp.int64).random_(3, 6)
    assert set(r.tolist()) <= {3, 4, 5}
    a = tp.tensor([1.0, 2.0])
    assert a.apply_(lambda v: v * 10) is a
    np.testing.assert_array_equal(_np(a), [10.0, 20.0])


def test_scatter_matches_numpy_and_backward():
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 3, 2], [1, 2, 0]])
    src = -np.arange(1.0, 7.0).reshape(2, 3)
    ref = x.copy()
    np.put_along_axis(ref[:2, :], idx, src, 1)
    t = tp.tensor(x)
    np.testing.assert_array_equal(_np(t.scatter(1, tp.tensor(idx), tp.tensor(src))), ref)
    np.testing.assert_array_equal(_np(t), x)          # out of place
    ref2 = x.copy()
    np.put_along_axis(ref2[:2, :], idx, 9.0, 1)
    np.testing.assert_array_equal(_np(tp.scatter(t, 1, tp.tensor(idx), value=9.0)), ref2)
    assert t.scatter_(1, tp.tensor(idx), 9.0) is t
    np.testing.assert_array_equal(_np(t), ref2)
    a = tp.tensor(x, requires_grad=True)
    s = tp.tensor(np.ones((2, 4)), requires_grad=True)
    a.scatter(1, tp.tensor(idx), s).sum().backward()
    ga = np.ones_like(x)
    np.put_along_axis(ga[:2, :], idx, 0.0, 1)
    np.testing.assert_array_equal(_np(a.grad), ga)
    np.testing.assert_array_equal(_np(s.grad), [[1, 1, 1, 0], [1, 1, 1, 0]])
    with pytest.raises(RuntimeError, match="out of bounds"):
        t.scatter(1, tp.tensor([[4]]), 1.0)
    with pytest.raises(RuntimeError, match="dtype"):
        t.scatter(1, tp.tensor(idx), tp.ones(2, 3, dtype=tp.float32))


def test_advanced_index_assignment_matches_numpy():
    a, cases = _idx_cases()
    for idx in cases:
        ref = a.copy()
        t = tp.tensor(a)
        shape = a[idx].shape
        val = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1000
        ref[idx] = val
        t[idx if len(idx) > 1 else idx[0]] = tp.tensor(val)
        np.testing.assert_array_equal(_np(t), ref, err_msg=str(idx))
        ref[idx] = -1.0
        t[idx if len(idx) > 1 else idx[0]] = -1.0
        np.testing.assert_array_equal(_np(t), ref, err_msg=str(idx))
    # a non-contiguous target (written back through copy_), and a broadcast value
    base = np.arange(40.0).reshape(5, 8)
    t = tp.tensor(base)
    ref = base.copy()
    # (a float64 value: torch's index_put_ refuses another dtype)
    t[:, ::2][[0, 4], [1, 3]] = tp.tensor(7.0, dtype=tp.float64)
    ref[:, ::2][[0, 4], [1, 3]] = 7.0
    np.testing.assert_array_equal(_np(t), ref)


def test_advanced_index_assignment_backward():
    x = tp.tensor(np.zeros((3, 4)), requires_grad=True)
    # (x's dtype: torch's index_put_ refuses another)
    v = tp.tensor([2.0, 3.0], dtype=tp.float64, requires_grad=True)
    y = x * 1.0
    y[[0, 2], [1, 3]] = v
    (y * tp.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
    g = np.arange(12.0).reshape(3, 4)
    g[[0, 2], [1, 3]] = 0
    np.testing.assert_array_equal(_np(x.grad), g)
    np.testing.assert_array_equal(_np(v.grad), [1.0, 11.0])


def test_register_hook_on_leaf_and_non_leaf():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = x.register_hook(lambda g: seen.append(_np(g).copy()))
    x.register_hook(lambda g: g * 10)            # replaces the leaf's gradient
    (x * 3).sum().backward()
    np.testing.assert_array_equal(seen[0], [3.0, 3.0])
    np.testing.assert_array_equal(_np(x.grad), [30.0, 30.0])
    h.remove()
    h.remove()
    x.grad = None
    (x * x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(_np(x.grad), [20.0, 40.0])

    w = tp.tensor([1.0, -1.0], requires_grad=True)
    y = w * 2
    y.retain_grad()
    y.register_hook(lambda g: g + 1)              # changes what flows on to w
    (y * y).sum().backward()
    np.testing.assert_array_equal(_np(y.grad), [5.0, -3.0])   # retain_grad sees it after hooks
    np.testing.assert_array_equal(_np(w.grad), [10.0, -6.0])
    with pytest.raises(RuntimeError, match="require"):
        tp.ones(2).register_hook(lambda g: g)


def test_register_hook_in_a_longer_graph():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x.exp()
    b = a * 2
    b.register_hook(lambda g: g * 0)
    c = a.sum() + b.sum()
    c.backward()
    np.testing.assert_allclose(_np(x.grad), np.exp([1.0, 2.0, 3.0]))


def test_as_strided_matches_numpy_and_backward():
    from numpy.lib.stride_tricks import as_strided as np_as_strided
    a = np.arange(12.0)
    t = tp.tensor(a)
    for size, stride, off in [((3, 4), (4, 1), 0), ((2, 2), (1, 4), 0), ((3, 2), (4, 1), 1),
                              ((4, 3), (1, 1), 2)]:
        ref = np_as_strided(a[off:], size, [s * 8 for s in stride])
        got = tp.as_strided(t, size, stride, off)
        np.testing.assert_array_equal(_np(got), ref)
    v = t.as_strided((2,), (3,), 1)
    v[0] = 100.0                     # a view: writes reach the base
    assert t[1].item() == 100.0
    with pytest.raises(RuntimeError, match="storage"):
        t.as_strided((4, 4), (4, 1))
    x = tp.tensor(np.arange(6.0), requires_grad=True)
    x.as_strided((2, 3), (1, 1)).sum().backward()     # overlapping windows: counts add up
    np.testing.assert_array_equal(_np(x.grad), [1, 2, 2, 1, 0, 0])


def test_view_dtype_matches_numpy():
    a = np.array([[1.5, -2.0, 3.25], [0.0, 7.0, -1.0]], dtype=np.float32)
    t = tp.tensor(a)
    for dt, nd in [(tp.int32, np.int32), (tp.int16, np.int16), (tp.uint8, np.uint8),
                   (tp.float64, None), (tp.float32, np.float32)]:
        if nd is None:
            continue
        v = t.view(dt)
        assert v.dtype is dt
        np.testing.assert_array_equal(_np(v), a.view(nd))
    b = np.arange(8, dtype=np.int16).reshape(2, 4)
    np.testing.assert_array_equal(_np(tp.tensor(b).view(tp.float32)), b.view(np.float32))
    np.testing.assert_array_equal(_np(tp.tensor(b)[:, 2:].view(tp.int32)),
                                  b[:, 2:].copy().view(np.int32))
    v = t.view(tp.int32)                # shares memory: a write shows through both
    v[0, 0] = 0
    assert t[0, 0].item() == 0.0
    with pytest.raises(RuntimeError, match="stride 1"):
        t.t().view(tp.int16)
    with pytest.raises(RuntimeError, match="divisible"):
        t.view(tp.float64)
    with FakeTensorMode():
        f = tp.empty(2, 4)
        assert f.view(tp.float64).shape == (2, 2) and f.view(tp.uint8).shape == (2, 16)


def test_view_dtype_is_not_differentiable():
    x = tp.ones(2, 2, requires_grad=True)
    y = x.view(tp.int32)
    assert not y.requires_grad
    z = x.view(tp.float32)
    assert z.dtype is tp.float32


@pytest.mark.cuda
def test_surface_on_cuda_matches_cpu():
    """The new ops on cuda give the cpu's values (run on a GPU machine; skipped elsewhere)."""
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    from tensorplay.testing import check_plugin
    res = check_plugin("tensorplay-cuda", "cuda:0",
                       ops=["tp::scatter", "tp::scatter_", "tp::as_strided", "tp::view_dtype"])
    assert res and all(r.status == "passed" for r in res), [r.describe() for r in res]
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    c = tp.tensor(a, device="cuda")
    np.testing.assert_array_equal(c[[0, 1], :, [1, 2]].cpu().numpy(), a[[0, 1], :, [1, 2]])
    np.testing.assert_array_equal(c.flip(2).roll(1, 1).tril().cpu().numpy(),
                                  np.tril(np.roll(a[:, :, ::-1], 1, 1)))
    np.testing.assert_allclose(tp.einsum("bij,bjk->bik", c, c.transpose(1, 2)).cpu().numpy(),
                               a @ a.transpose(0, 2, 1))
    v, i, n = c.unique(return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(v.cpu().numpy(), np.unique(a))
    y = pickle.loads(pickle.dumps(c))
    assert y.device == c.device
    np.testing.assert_array_equal(y.cpu().numpy(), a)
    assert copy.deepcopy(c).device == c.device
