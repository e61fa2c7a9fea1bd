"""Bitwise ops (``tp::bitwise_and``/``or``/``xor``/``not``/``left_shift``/``right_shift``) and the
Tensor operators ``&``, ``|``, ``^``, ``~``, ``<<``, ``>>`` (and ``&=`` ...) as torch defines them:
integer and bool operands only (bool & bool stays bool: logical), torch's promotion, shifts by
amounts outside ``[0, bits)`` as torch's kernels give them (0 to the left, the sign to the right).

Expected values come from torch's documentation examples and, for the full grids, from Python's
own integer operators wrapped to the dtype (two's complement), with torch's shift rule spelled out
in ``_ref``. The same ops are checked under fake tensors, ``tensorplay.compile`` (the cpu fuser's
generated code, on sizes that take its blocked path), ``opcheck``, the Triton chain generator
(through Triton's interpreter on NumPy arrays, the source the GPU compiles) and, where a GPU is
present, on cuda."""

from __future__ import annotations

import itertools
import random

import pytest
import tensorplay as tp
from tensorplay import fake

pytestmark = pytest.mark.usefixtures("cpu")

INTS = [tp.int8, tp.uint8, tp.int16, tp.int32, tp.int64]
BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
OPERATOR = {"bitwise_and": "__and__", "bitwise_or": "__or__", "bitwise_xor": "__xor__",
            "bitwise_left_shift": "__lshift__", "bitwise_right_shift": "__rshift__"}


def _bits(dt):
    return dt.itemsize * 8


def _wrap(v, dt):
    """Python int ``v`` as a value of integer dtype ``dt`` (two's complement, as a cast)."""
    if dt is tp.bool:
        return bool(v)
    w = _bits(dt)
    v &= (1 << w) - 1
    if dt.is_signed and v >= 1 << (w - 1):
        v -= 1 << w
    return v


def _ref(op, a, b, dt):
    """torch's result of ``op`` on Python ints ``a``, ``b`` already of dtype ``dt``."""
    w = _bits(dt)
    if op == "bitwise_and":
        return _wrap(a & b, dt)
    if op == "bitwise_or":
        return _wrap(a | b, dt)
    if op == "bitwise_xor":
        return _wrap(a ^ b, dt)
    if op == "bitwise_left_shift":      # torch: 0 for a negative amount or one >= the width
        return 0 if b < 0 or b >= w else _wrap(a << b, dt)
    if op == "bitwise_right_shift":     # torch: a >> (w - 1) (signed) / 0 (unsigned) outside
        if b < 0 or b >= w:
            return a >> (w - 1) if dt.is_signed else 0
        return a >> b
    raise AssertionError(op)


# -- torch's documented examples ------------------------------------------------------------------

def test_torch_documentation_examples():
    i8 = tp.int8
    a, b = tp.tensor([-1, -2, 3], dtype=i8), tp.tensor([1, 0, 3], dtype=i8)
    for r, want in ((tp.bitwise_and(a, b), [1, 0, 3]), (tp.bitwise_or(a, b), [-1, -2, 3]),
                    (tp.bitwise_xor(a, b), [-2, -2, 0]), (tp.bitwise_not(a), [0, 1, -4]),
                    (tp.bitwise_left_shift(a, b), [-2, -2, 24]),
                    (tp.bitwise_right_shift(tp.tensor([-2, -7, 31], dtype=i8), b), [-1, -7, 3])):
        assert r.dtype is i8 and r.tolist() == want
    p, q = tp.tensor([True, True, False]), tp.tensor([False, True, False])
    assert tp.bitwise_and(p, q).tolist() == [False, True, False]
    assert tp.bitwise_or(p, q).tolist() == [True, True, False]
    assert tp.bitwise_xor(p, q).tolist() == [True, False, False]
    assert tp.bitwise_not(p).tolist() == [False, False, True]
    for r in (p & q, p | q, p ^ q, ~p, tp.bitwise_and(p, q)):
        assert r.dtype is tp.bool


def test_the_operators_are_bitwise_on_integers():
    # the report: `&` gave tensor([True, True, True]) and `~` gave bools
    x, y = tp.tensor([1, 2, 3]), tp.tensor([3, 3, 3])
    assert (x & y).dtype is tp.int64 and (x & y).tolist() == [1, 2, 3]
    assert (x | y).tolist() == [3, 3, 3]
    assert (x ^ y).tolist() == [2, 1, 0]
    assert (~x).dtype is tp.int64 and (~x).tolist() == [-2, -3, -4]
    assert (x << y).tolist() == [8, 16, 24]
    assert (tp.tensor([8, 16, -24]) >> y).tolist() == [1, 2, -3]
    assert (x & 2).tolist() == [0, 2, 2] and (x | 4).tolist() == [5, 6, 7]
    assert (x ^ 1).tolist() == [0, 3, 2] and (x << 2).tolist() == [4, 8, 12]
    assert (x >> 1).tolist() == [0, 1, 1]


def test_methods_match_the_functions():
    x, y = tp.tensor([5, -6, 7], dtype=tp.int16), tp.tensor([3, 1, 2], dtype=tp.int16)
    for name in BINARY:
        assert getattr(x, name)(y).tolist() == getattr(tp, name)(x, y).tolist()
        assert getattr(x, OPERATOR[name])(y).tolist() == getattr(tp, name)(x, y).tolist()
    assert x.bitwise_not().tolist() == tp.bitwise_not(x).tolist() == (~x).tolist()
    assert tp.bitwise_and is tp.ops.tp.bitwise_and


# -- values over whole grids ------------------------------------------------------------------------

def _grid(dt, n_random=40, seed=0):
    """Edge values of ``dt`` plus random ones; shift amounts around the width (negative too)."""
    w = _bits(dt)
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if dt.is_signed else (0, (1 << w) - 1)
    rng = random.Random(seed)
    vals = sorted({lo, lo + 1, -1 if dt.is_signed else 2, 0, 1, 2, 3, hi - 1, hi} |
                  {rng.randint(lo, hi) for _ in range(n_random)})
    shifts = sorted({s for s in range(-2, w + 3) if lo <= s <= hi} | {lo, hi})
    return vals, shifts


@pytest.mark.parametrize("dt", INTS, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_every_pair_of_a_grid_matches_pythons_integers(op, dt):
    vals, shifts = _grid(dt)
    rhs = shifts if "shift" in op else vals
    pairs = list(itertools.product(vals, rhs))
    a = tp.tensor([p[0] for p in pairs], dtype=dt)
    b = tp.tensor([p[1] for p in pairs], dtype=dt)
    r = getattr(tp, op)(a, b)
    assert r.dtype is dt
    assert r.tolist() == [_ref(op, x, y, dt) for x, y in pairs]
    # the same with the right operand a Python int
    for y in rhs[:: max(1, len(rhs) // 12)]:
        r = getattr(tp, op)(a, y)
        assert r.dtype is dt and r.tolist() == [_ref(op, x, y, dt) for x, _ in pairs], y


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_bitwise_not_over_a_grid(dt):
    vals, _ = _grid(dt)
    r = tp.bitwise_not(tp.tensor(vals, dtype=dt))
    assert r.dtype is dt and r.tolist() == [_wrap(~v, dt) for v in vals]


def test_int8_pairs_exhaustively():
    vals = list(range(-128, 128))
    a = tp.tensor([x for x in vals for _ in vals], dtype=tp.int8)
    b = tp.tensor([y for _ in vals for y in vals], dtype=tp.int8)
    for op in BINARY:
        want = [_ref(op, x, y, tp.int8) for x in vals for y in vals]
        assert getattr(tp, op)(a, b).tolist() == want, op


# -- promotion, scalars, reversed operands --------------------------------------------------------

@pytest.mark.parametrize("op", BINARY)
def test_promotion_follows_torch(op):
    f = getattr(tp, op)
    i8, i32 = tp.tensor([3, -4], dtype=tp.int8), tp.tensor([1, 2], dtype=tp.int32)
    u8 = tp.tensor([3, 4], dtype=tp.uint8)
    assert f(i8, i32).dtype is tp.int32
    assert f(i32, i8).dtype is tp.int32
    assert f(u8, i8).dtype is tp.int16                       # uint8 with int8: int16
    assert f(i8, 1).dtype is tp.int8                         # a Python int does not promote
    assert f(i8, True).dtype is tp.int8
    assert f(i8, tp.tensor(2)).dtype is tp.int8              # nor does a 0-dim tensor
    assert f(tp.tensor(3, dtype=tp.int8), tp.tensor(2)).dtype is tp.int64   # both 0-dim
    m = tp.tensor([True, False])
    assert f(m, 1).dtype is tp.int64                         # bool with an int: int64
    assert f(m, i8).dtype is tp.int8
    # values of a mixed-dtype call: computed in the promoted dtype
    assert f(i8, i32).tolist() == [_ref(op, x, y, tp.int32) for x, y in ((3, 1), (-4, 2))]


def test_bool_operands_stay_logical():
    m, n = tp.tensor([True, True, False, False]), tp.tensor([True, False, True, False])
    assert (m & n).tolist() == [True, False, False, False]
    assert (m | n).tolist() == [True, True, True, False]
    assert (m ^ n).tolist() == [False, True, True, False]
    assert (~m).tolist() == [False, False, True, True]
    assert (m & True).dtype is tp.bool and (m & True).tolist() == m.tolist()
    assert (m ^ True).tolist() == (~m).tolist()
    # a Python int with a bool tensor: int64, as torch
    assert (m & 1).dtype is tp.int64 and (m & 1).tolist() == [1, 1, 0, 0]
    assert (m << 1).dtype is tp.int64 and (m << 1).tolist() == [2, 2, 0, 0]


def test_python_ints_out_of_the_dtypes_range_wrap_as_torch():
    x = tp.tensor([127, -1, 5], dtype=tp.int8)
    assert (x & 1000).dtype is tp.int8
    assert (x & 1000).tolist() == [v & _wrap(1000, tp.int8) for v in (127, -1, 5)]
    u = tp.tensor([255, 1], dtype=tp.uint8)
    assert (u & -1).tolist() == [255, 1] and (u ^ -1).tolist() == [0, 254]


def test_reversed_operands():
    x = tp.tensor([1, 2, 12], dtype=tp.int16)
    assert (6 & x).tolist() == [0, 2, 4] and (6 & x).dtype is tp.int16
    assert (6 | x).tolist() == [7, 6, 14]
    assert (6 ^ x).tolist() == [7, 4, 10]
    assert (1 << x).tolist() == [2, 4, 4096] and (1 << x).dtype is tp.int16
    assert (4096 >> x).tolist() == [2048, 1024, 1]
    assert (-1 << tp.tensor([20], dtype=tp.int16)).tolist() == [0]       # shift >= 16 bits
    m = tp.tensor([True, False])
    assert (True & m).tolist() == [True, False] and (True & m).dtype is tp.bool
    assert (False | m).tolist() == [True, False] and (True ^ m).tolist() == [False, True]
    # a 0-dim int8 tensor: the number is a wrapped scalar (int8 result), not an int64 tensor
    z = tp.tensor(3, dtype=tp.int8)
    assert (1 << z).dtype is tp.int8 and (1 << z).item() == 8
    assert (300 >> tp.tensor([1], dtype=tp.uint8)).tolist() == [_wrap(300, tp.uint8) >> 1]
    assert (2 << m).dtype is tp.int64 and (2 << m).tolist() == [4, 2]


def test_non_tensor_operands_are_refused_by_python():
    x = tp.tensor([1, 2])
    for bad in ("a", None, [1]):
        with pytest.raises(TypeError):
            x & bad
        with pytest.raises(TypeError):
            bad ^ x
        with pytest.raises(TypeError):
            bad << x


# -- broadcasting, layouts ------------------------------------------------------------------------

def test_broadcasting_and_non_contiguous_inputs():
    a = tp.arange(12, dtype=tp.int32).reshape(3, 4)
    col = tp.tensor([[1], [2], [3]], dtype=tp.int32)
    r = a & col
    assert r.shape == (3, 4)
    assert r.tolist() == [[v & c[0] for v in row] for row, c in zip(a.tolist(), col.tolist())]
    at = a.t()                                 # (4, 3), non-contiguous
    assert not at.is_contiguous()
    bt = (a * 7 + 1).t()
    for op in BINARY:
        b = bt % 5 if "shift" in op else bt
        got = getattr(tp, op)(at, b)
        want = [[_ref(op, x, y, tp.int32) for x, y in zip(r1, r2)]
                for r1, r2 in zip(at.tolist(), b.tolist())]
        assert got.shape == (4, 3) and got.tolist() == want, op
    assert (~at).tolist() == [[~v for v in row] for row in at.tolist()]
    sl = tp.arange(10, dtype=tp.int64)[::3]   # a strided 1-D view
    assert (sl ^ 5).tolist() == [v ^ 5 for v in (0, 3, 6, 9)]
    with pytest.raises(RuntimeError, match="size"):
        tp.bitwise_and(tp.zeros(3, dtype=tp.int32), tp.zeros(4, dtype=tp.int32))


def test_empty_and_zero_dim():
    e = tp.zeros(0, 3, dtype=tp.int32)
    assert (e & 1).shape == (0, 3) and (~e).shape == (0, 3)
    z = tp.tensor(6, dtype=tp.int64)
    assert (z & 3).shape == () and (z & 3).item() == 2 and (~z).item() == -7


# -- in-place ------------------------------------------------------------------------------------

def test_in_place_operators_and_methods():
    x = tp.tensor([12, 10, 7], dtype=tp.int32)
    keep, v = x, x._version
    x &= 6
    assert x is keep and x.tolist() == [4, 2, 6] and x._version == v + 1
    x |= tp.tensor([1, 1, 1], dtype=tp.int32)
    assert x is keep and x.tolist() == [5, 3, 7] and x._version == v + 2
    x ^= 2
    assert x.tolist() == [7, 1, 5]
    x <<= 2
    assert x.tolist() == [28, 4, 20]
    x >>= tp.tensor([1, 2, 3], dtype=tp.int32)
    assert x is keep and x.tolist() == [14, 1, 2] and x._version == v + 5
    y = tp.tensor([3, 5], dtype=tp.int16)
    for name, other, want in (("bitwise_and_", 6, [2, 4]), ("bitwise_or_", 1, [3, 5]),
                              ("bitwise_xor_", 7, [4, 2]), ("bitwise_left_shift_", 2, [16, 8]),
                              ("bitwise_right_shift_", 3, [2, 1])):
        before = y._version
        assert getattr(y, name)(other) is y
        assert y.tolist() == want and y.dtype is tp.int16 and y._version == before + 1, name
    assert y.bitwise_not_() is y and y.tolist() == [-3, -2]


def test_in_place_writes_through_views_and_keeps_the_dtype():
    base = tp.tensor([[1, 2], [3, 4]], dtype=tp.int8)
    row = base[1]
    row |= tp.tensor([64, 64], dtype=tp.int32)      # int32 result cast into int8, as torch
    assert row.dtype is tp.int8 and base.tolist() == [[1, 2], [67, 68]]
    col = base[:, 0]
    col ^= -1
    assert base.tolist() == [[-2, 2], [-68, 68]]
    m = tp.tensor([True, False])
    m &= True
    assert m.dtype is tp.bool and m.tolist() == [True, False]
    m |= tp.tensor([False, True])
    assert m.tolist() == [True, True]


def test_in_place_refuses_a_result_of_a_higher_category():
    m = tp.tensor([True, False])
    for other in (1, tp.tensor([1, 0])):
        with pytest.raises(RuntimeError, match="bitwise_and_.*can't be cast"):
            m &= other
        with pytest.raises(RuntimeError, match="can't be cast"):
            m.bitwise_or_(other)
    assert m.tolist() == [True, False]
    with pytest.raises(RuntimeError, match="output with shape"):
        tp.tensor([1, 2], dtype=tp.int32).bitwise_and_(tp.ones(3, 2, dtype=tp.int32))


# -- refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", BINARY)
def test_floating_operands_are_refused_naming_op_and_dtype(op):
    f = getattr(tp, op)
    i = tp.tensor([1, 2])
    for a, b, name in ((tp.tensor([1.0, 2.0]), i, "Float"), (i, 1.5, "Float"),
                       (i, tp.tensor([1.0, 2.0], dtype=tp.float64), "Double"),
                       (tp.tensor([1.0], dtype=tp.float16), 1, "Half")):
        with pytest.raises(RuntimeError, match=rf"{op}.*not implemented for '{name}'"):
            f(a, b)
    with pytest.raises(RuntimeError, match=rf"{op}.*'Float'"):
        getattr(tp.tensor([1.0]), OPERATOR[op])(1)


def test_bitwise_not_refuses_floats_and_shifts_refuse_bools():
    with pytest.raises(RuntimeError, match="bitwise_not.*not implemented for 'Float'"):
        ~tp.tensor([1.0])
    m = tp.tensor([True, False])
    for op in ("bitwise_left_shift", "bitwise_right_shift"):
        with pytest.raises(RuntimeError, match=rf"{op}.*not implemented for 'Bool'"):
            getattr(tp, op)(m, m)
        with pytest.raises(RuntimeError, match=rf"{op}.*'Bool'"):
            getattr(tp, op)(m, True)


def test_bfloat16_is_refused():
    pytest.importorskip("ml_dtypes")
    x = tp.tensor([1.0, 2.0], dtype=tp.bfloat16)
    with pytest.raises(RuntimeError, match="bitwise_xor.*'BFloat16'"):
        x ^ 1
    with pytest.raises(RuntimeError, match="bitwise_and.*'BFloat16'"):
        tp.tensor([1, 2]) & x
    with pytest.raises(RuntimeError, match="bitwise_not.*'BFloat16'"):
        ~x


def test_no_gradient():
    for op in ("bitwise_and", "bitwise_not", "bitwise_left_shift"):
        assert not getattr(tp.ops.tp, op).has_autograd
    x = tp.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Float"):
        x & 1


# -- fake tensors, compile, opcheck --------------------------------------------------------------

def test_fake_tensors_give_torch_dtypes_and_shapes():
    a = fake.from_real(tp.zeros(3, 1, dtype=tp.int8))
    b = fake.from_real(tp.zeros(4, dtype=tp.int32))
    m = fake.from_real(tp.zeros(2, dtype=tp.bool))
    for op in BINARY:
        r = getattr(tp, op)(a, b)
        assert r.shape == (3, 4) and r.dtype is tp.int32 and r.is_fake, op
        assert getattr(tp, op)(a, 1).dtype is tp.int8
    assert (~a).dtype is tp.int8 and (~a).shape == (3, 1)
    assert (m & m).dtype is tp.bool and (m & 1).dtype is tp.int64 and (~m).dtype is tp.bool
    with pytest.raises(RuntimeError, match="bitwise_or.*'Float'"):
        a | fake.from_real(tp.zeros(1))
    with pytest.raises(RuntimeError, match="bitwise_left_shift.*'Bool'"):
        m << m
    v = a._version
    a &= 3
    assert a._version == v + 1 and a.dtype is tp.int8
    with fake.FakeTensorMode():
        x = tp.zeros(5, dtype=tp.int16)
        assert (x ^ x).dtype is tp.int16 and (x >> 2).is_fake


def _chain(x, y, m):
    a = (x & y) | (x << 3)
    a = a ^ ~y
    a = (a >> 2) & 0x0F0F
    k = (m | (a > 100)) & ~m
    return a, k ^ m, x ^ -1


@pytest.mark.parametrize("dt", [tp.int8, tp.uint8, tp.int32, tp.int64], ids=str)
@pytest.mark.parametrize("n", [37, 1 << 15, (1 << 16) + 5])
def test_compiled_chains_equal_eager(dt, n):
    """Small sizes take the generic fuser; from 2^15 elements the cpu fuser's generated blocked
    code (the bitwise ufuncs in place) runs, from its first call."""
    tp.manual_seed(n)
    x = tp.randint(-128 if dt.is_signed else 0, 128, (n,), dtype=tp.int64).to(dt)
    y = tp.randint(0, 8, (n,), dtype=tp.int64).to(dt)
    m = tp.rand(n) > 0.5
    cf = tp.compile(_chain)
    want = _chain(x, y, m)
    for _ in range(2):
        got = cf(x, y, m)
        for g, w in zip(got, want):
            assert g.dtype is w.dtype and g.shape == w.shape
            assert g.tolist() == w.tolist()


def test_compiled_shifts_by_tensors_out_of_range_equal_eager():
    vals, shifts = _grid(tp.int32)
    pairs = list(itertools.product(vals, shifts)) * 40     # > 2^15 elements: the blocked path
    a = tp.tensor([p[0] for p in pairs], dtype=tp.int32)
    b = tp.tensor([p[1] for p in pairs], dtype=tp.int32)

    def f(a, b):
        return (a << b) ^ (a >> b), ~(a << b)

    cf = tp.compile(f)
    for _ in range(2):
        got = cf(a, b)
        assert [g.tolist() for g in got] == [w.tolist() for w in f(a, b)]
    assert got[0].tolist()[: len(pairs) // 40] == [
        _wrap(_ref("bitwise_left_shift", x, y, tp.int32) ^
              _ref("bitwise_right_shift", x, y, tp.int32), tp.int32) for x, y in pairs[:len(pairs) // 40]]


def test_compile_refuses_floats_as_eager_does():
    cf = tp.compile(lambda x: (x * 2) & 1)
    with pytest.raises(RuntimeError, match="bitwise_and.*'Float'"):
        cf(tp.ones(3))


def test_compiled_in_place_operators():
    def f(x, y):
        z = x.clone()
        z &= y
        z <<= 1
        return z

    x, y = tp.tensor([7, 12, 5], dtype=tp.int32), tp.tensor([3, 4, 1], dtype=tp.int32)
    assert tp.compile(f)(x, y).tolist() == f(x, y).tolist() == [6, 8, 2]


def test_opcheck_passes_on_the_new_ops():
    from tensorplay.testing import builtin_samples
    for name in BINARY + ["bitwise_not"]:
        op = getattr(tp.ops.tp, name)
        samples = builtin_samples.samples(name, "cpu")
        assert len(samples) >= 3 and name in builtin_samples.NOT_DIFFERENTIABLE
        for s in samples:
            assert tp.library.opcheck(op, s.args, s.kwargs, raise_exception=False) == {}, s.name


def test_docstrings_name_torchs_rule():
    for name in BINARY + ["bitwise_not"]:
        doc = getattr(tp, name).__doc__
        assert f"torch.{name}" in doc and "integer" in doc, name
        assert name in tp.__all__
    for name in ("bitwise_and_", "bitwise_not_", "bitwise_left_shift_", "__rlshift__"):
        assert getattr(tp.Tensor, name).__doc__, name


# -- the Triton chain generator (interpreted on NumPy arrays here, compiled on a GPU) -------------

def _triton_chain():
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    return pytest.importorskip("tensorplay_cuda.triton_fusion")


# (no bool shifts: torch refuses them, so a capture never makes such a chain)
@pytest.mark.parametrize("op,dt", [(op, dt) for op in BINARY + ["bitwise_not"]
                                   for dt in INTS + [tp.bool]
                                   if not (dt is tp.bool and "shift" in op)], ids=str)
def test_triton_chain_matches_eager(op, dt):
    tf = _triton_chain()
    from tensorplay.backends import ElementwiseExpr, Step
    if dt is tp.bool:
        vals = [False, True]
        rhs = vals
    else:
        vals, rhs = _grid(dt)
        rhs = _grid(dt)[1] if "shift" in op else vals
    pairs = list(itertools.product(vals, rhs))
    a = tp.tensor([p[0] for p in pairs], dtype=dt)
    b = tp.tensor([p[1] for p in pairs], dtype=dt)
    be = tp.backends.get("cpu")
    if op == "bitwise_not":
        steps, ins, want = [Step(op, (("in", 0),))], [a], tp.bitwise_not(a)
    else:
        steps, ins, want = [Step(op, (("in", 0), ("in", 1)))], [a, b], getattr(tp, op)(a, b)
    expr = ElementwiseExpr(len(ins), tuple(steps), (0,), (dt,), tp.device("cpu"))
    got, = tf.TritonChain(expr, be).run([t.numpy() for t in ins])
    assert be.dtype_of(got) is dt
    assert got.tolist() == want.tolist()
    if op != "bitwise_not":
        # Python int / bool constants (out-of-range shifts too): kernel arguments cast to the
        # dtype
        for c in {rhs[0], rhs[len(rhs) // 2], rhs[-1]}:
            expr = ElementwiseExpr(1, (Step(op, (("in", 0), ("const", c))),), (0,), (dt,),
                                   tp.device("cpu"))
            got, = tf.TritonChain(expr, be).run([a.numpy()])
            assert got.tolist() == getattr(tp, op)(a, c).tolist(), c


def test_triton_chain_mixes_bitwise_steps_with_promotion():
    tf = _triton_chain()
    from tensorplay.backends import ElementwiseExpr, Step
    tp.manual_seed(3)
    x = tp.randint(-100, 100, (700,), dtype=tp.int64).to(tp.int8)
    y = tp.randint(0, 10, (700,), dtype=tp.int32)
    steps = (Step("bitwise_and", (("in", 0), ("in", 1))),          # int8 & int32 -> int32
             Step("bitwise_left_shift", (("step", 0), ("const", 3))),
             Step("bitwise_not", (("step", 1),)),
             Step("bitwise_xor", (("step", 2), ("const", 1000))),
             Step("bitwise_right_shift", (("step", 3), ("in", 1))),
             Step("gt", (("step", 4), ("const", 0))),
             Step("bitwise_or", (("step", 5), ("const", False))))
    dts = (tp.int32,) * 5 + (tp.bool, tp.bool)
    expr = ElementwiseExpr(2, steps, (4, 6), dts, tp.device("cpu"))
    a4 = ((~((x & y) << 3)) ^ 1000) >> y
    a6 = (a4 > 0) | False
    got = tf.TritonChain(expr, tp.backends.get("cpu")).run([x.numpy(), y.numpy()])
    assert got[0].tolist() == a4.tolist() and got[1].tolist() == a6.tolist()


def test_triton_forms_of_the_table():
    tf = _triton_chain()
    from tensorplay._kernels.elementwise import OPS
    from tensorplay.backends import ElementwiseExpr, Step
    for op, sym in (("bitwise_and", "&"), ("bitwise_or", "|"), ("bitwise_xor", "^")):
        assert OPS[op].family == "bitwise" and OPS[op].triton == f"{{0}} {sym} {{1}}"
        expr = ElementwiseExpr(2, (Step(op, (("in", 0), ("in", 1))),), (0,), (tp.int16,), None)
        src = tf.generate(expr, [tp.int16, tp.int16], ("c", "c"), 0, False)[0]
        assert f"t0 = (x0 {sym} x1).to(tl.int16)" in src
    assert OPS["bitwise_not"].triton == "~{0}"
    # floating steps are not the generator's (the capture refuses them before)
    expr = ElementwiseExpr(2, (Step("bitwise_and", (("in", 0), ("in", 1))),), (0,),
                           (tp.float32,), None)
    with pytest.raises(tf.Unsupported):
        tf.generate(expr, [tp.float32, tp.float32], ("c", "c"), 0, False)


# -- cuda (a GPU and the tensorplay-cuda plugin) -------------------------------------------------

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dt", INTS, ids=str)
def test_cuda_eager_matches_cpu(dt):
    vals, shifts = _grid(dt)
    pairs = list(itertools.product(vals, vals + shifts))
    a = tp.tensor([p[0] for p in pairs], dtype=dt)
    b = tp.tensor([p[1] for p in pairs], dtype=dt)
    ac, bc = a.to("cuda"), b.to("cuda")
    for op in BINARY:
        r = getattr(tp, op)(ac, bc)
        assert r.device.type == "cuda" and r.dtype is dt
        assert r.cpu().tolist() == getattr(tp, op)(a, b).tolist(), op
        assert getattr(tp, op)(ac, 3).cpu().tolist() == getattr(tp, op)(a, 3).tolist(), op
    assert (~ac).cpu().tolist() == (~a).tolist()
    m = tp.tensor([True, False, True]).to("cuda")
    assert (m & ~m).cpu().tolist() == [False] * 3 and (m ^ True).cpu().tolist() == [False, True,
                                                                                        False]
    x = ac.clone()
    x &= 5
    assert x.cpu().tolist() == (a & 5).tolist()
    with pytest.raises(RuntimeError, match="bitwise_and.*'Float'"):
        tp.ones(2, device="cuda") & 1


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("n", [37, (1 << 20) + 3])
def test_cuda_compiled_chains_equal_eager(n):
    tp.manual_seed(n)
    x = tp.randint(-128, 128, (n,), dtype=tp.int64).to(tp.int32).to("cuda")
    y = tp.randint(0, 40, (n,), dtype=tp.int64).to(tp.int32).to("cuda")
    m = (tp.rand(n) > 0.5).to("cuda")
    cf = tp.compile(_chain)
    want = _chain(x, y, m)
    for _ in range(2):
        for g, w in zip(cf(x, y, m), want):
            assert g.dtype is w.dtype and g.cpu().tolist() == w.cpu().tolist()
