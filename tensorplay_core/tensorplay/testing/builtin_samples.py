"""Sample inputs for every built-in ``tp::`` operator, on any device.

One table, used by the device plugins' ``tensorplay_sample_inputs`` hooks (so that
``tensorplay check --plugin tensorplay-cpu`` runs ``opcheck`` over the built-in ops with the
device's kernels) and by the core's own tests (gradcheck, fake rules, conformance across
devices). Each entry covers the op's cases that matter: broadcasting both ways, 0-dim tensors,
Python scalars, integer and bool inputs, non-contiguous views, negative dims, keyword arguments.

Values are made with Python's ``random.Random(seed)`` and ``tensorplay.tensor(..., device=...)``
(no NumPy), so the same ``seed`` gives bit-identical samples on every device: a sample made on
``cuda`` holds exactly the values of the one made on ``cpu``.

API::

    samples("add", device="cpu")          # [BuiltinSample(args, kwargs, grad, fake), ...]
    sample_inputs(op, device)             # hook form: [SampleInput], None when not a built-in
    NOT_DIFFERENTIABLE                    # built-ins with no backward formula, by design

Random and uninitialised outputs (``rand``, ``empty``, ...) are marked on the ops themselves, with
torch's tags (``op.tags``: ``"nondeterministic_seeded"``/``"nondeterministic_bitwise"``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = [
    "NOT_DIFFERENTIABLE",
    "SAMPLES",
    "BuiltinSample",
    "names",
    "sample_inputs",
    "samples",
]

#: Built-in ops with no backward formula by design (comparisons, predicates, index results,
#: factories). Every other built-in has a formula and at least one sample with ``grad=True``.
NOT_DIFFERENTIABLE = frozenset({
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "argmax",
    "empty", "full", "arange", "rand", "randn", "argmin", "all", "any", "isnan", "isinf",
    "isfinite", "argsort", "eye", "linspace", "randint", "nonzero", "view_dtype", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "heaviside", "searchsorted"})

#: Built-in ops whose backward raises torch's "derivative for aten::<op> is not implemented"
#: (their output requires grad, as torch's): no gradcheck sample.
NO_DERIVATIVE = frozenset({"floor_divide"})

DEFAULT_SEED = 1234


@dataclass
class BuiltinSample:
    """One call ``op(*args, **kwargs)``. ``grad=False``: not a gradcheck sample (integer-only
    inputs, a point where the op is not differentiable); ``fake=False``: the output's shape
    depends on the input's values (``masked_select``, ``nonzero``), so the fake kernel gives a
    data-dependent size there (``get_ctx().new_dynamic_size()``), not the real one."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    grad: bool = True
    fake: bool = True
    name: str = ""


def S(*args, grad=True, fake=True, **kwargs):
    return BuiltinSample(args, kwargs, grad, fake)


class _Gen:
    """Small tensors on one device from one seeded stream (``random.Random``)."""

    def __init__(self, device, seed):
        # The pieces of the public API the samples use, imported from their own modules (this
        # package sits below the package root in the layer contract).
        from types import SimpleNamespace

        from .. import _device, _dtype, _factories
        tp = SimpleNamespace(device=_device.device, tensor=_factories.tensor,
                             zeros=_factories.zeros, **{n: getattr(_dtype, n) for n in (
                                 "float16", "float32", "float64", "int8", "uint8", "int16", "int32",
                                 "int64", "bool")})
        self.tp = tp
        self.device = tp.device(device)
        self.rng = random.Random(seed)
        self.f64 = tp.float64

    def _make(self, flat, shape, dtype):
        def nest(vals, dims):
            if not dims:
                return vals[0]
            step = len(vals) // dims[0] if dims[0] else 0
            return [nest(vals[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]
        if shape and not flat:     # 0 elements: nested lists cannot carry the shape
            return self.tp.zeros(list(shape), dtype=dtype, device=self.device)
        data = nest(flat, list(shape)) if shape else flat[0]
        return self.tp.tensor(data, dtype=dtype, device=self.device)

    @staticmethod
    def _numel(shape):
        n = 1
        for s in shape:
            n *= s
        return n

    def T(self, *shape, lo=-1.0, hi=1.0, dtype=None):
        """Uniform values in [lo, hi) (float64 unless ``dtype``)."""
        vals = [self.rng.uniform(lo, hi) for _ in range(self._numel(shape))]
        return self._make(vals, shape, dtype or self.f64)

    def NZ(self, *shape, dtype=None):
        """Values bounded away from 0 (for relu/abs/sign kinks): |x| in [0.2, 1]."""
        vals = [self.rng.uniform(0.2, 1.0) * self.rng.choice((-1.0, 1.0))
                for _ in range(self._numel(shape))]
        return self._make(vals, shape, dtype or self.f64)

    def POS(self, *shape, dtype=None):
        return self.T(*shape, lo=0.5, hi=2.0, dtype=dtype)

    def DISTINCT(self, *shape, dtype=None):
        """A permutation of well-separated values (no ties for max/min/sort)."""
        n = self._numel(shape)
        perm = list(range(n))
        self.rng.shuffle(perm)
        return self._make([p * 0.37 - 1.0 for p in perm], shape, dtype or self.f64)

    def DISTINCT_UP(self, *shape):
        return self.DISTINCT(*shape) + 0.1

    def MASK(self, *shape):
        return self._make([self.rng.random() > 0.5 for _ in range(self._numel(shape))], shape,
                          self.tp.bool)

    def INT(self, *shape, lo=-100, hi=100, dtype=None):
        """Uniform integers in [lo, hi] (int32 unless ``dtype``)."""
        vals = [self.rng.randint(lo, hi) for _ in range(self._numel(shape))]
        return self._make(vals, shape, dtype or self.tp.int32)

    def IDX(self, values):
        return self.tp.tensor(values, dtype=self.tp.int64, device=self.device)

    def V(self, values, dtype=None):
        """Fixed values (special points: NaN, inf, zeros, ties)."""
        return self.tp.tensor(values, dtype=dtype, device=self.device)


def _binary(a="T", b="T"):
    def build(g):
        ma, mb = getattr(g, a), getattr(g, b)
        return [S(ma(3, 1), mb(4)),                   # broadcasting both ways
                S(ma(2, 3), mb()),                    # 0-dim tensor operand
                S(ma(2, 3), 2.5),                     # Python scalar
                S(g.IDX([[1, 2], [3, 4]]), g.IDX([2, 3]), grad=False)]
    return build


def _bitwise(g):
    """and/or/xor: integers (broadcast both ways, promoted, a 0-dim operand, a Python int, a
    non-contiguous view) and bools (bool & bool stays bool; with a Python bool)."""
    tp, I = g.tp, g.INT
    return [S(I(3, 1), I(4)),
            S(I(2, 3, dtype=tp.int8, lo=-128, hi=127), I(3, lo=-2**31, hi=2**31 - 1)),
            S(I(2, 3, dtype=tp.int16), I(dtype=tp.int64)),
            S(I(2, 3, dtype=tp.int64, lo=-2**63, hi=2**63 - 1), 0x0F0F),
            S(I(3, 2, dtype=tp.uint8, lo=0, hi=255).transpose(0, 1), I(2, 3, dtype=tp.int8)),
            S(g.MASK(2, 3), g.MASK(3)), S(g.MASK(4), True), S(g.MASK(2, 2), 3)]


def _shift(g):
    """Shifts: amounts inside and outside ``[0, bits)`` (negative ones too), tensor and Python
    int amounts, promotion, a bool tensor with an int amount (int64)."""
    tp, I = g.tp, g.INT
    return [S(I(3, 1, dtype=tp.int32, lo=-1000, hi=1000), I(4, lo=-2, hi=34)),
            S(I(2, 5, dtype=tp.int8, lo=-128, hi=127), I(5, dtype=tp.int8, lo=-2, hi=10)),
            S(I(2, 3, dtype=tp.uint8, lo=0, hi=255), I(3, dtype=tp.int16, lo=0, hi=10)),
            S(I(2, 3, dtype=tp.int64, lo=-2**40, hi=2**40), 3),
            S(I(4, dtype=tp.int16), I(dtype=tp.int64, lo=0, hi=15)),
            S(I(3, 2, dtype=tp.int64).transpose(0, 1), I(2, 3, lo=0, hi=63)),
            S(g.MASK(4), 2)]


def _unary(make="T"):
    def build(g):
        m = getattr(g, make)
        return [S(m(2, 3)), S(m()), S(m(4, dtype=g.tp.float32), grad=False)]
    return build


def _inplace(g):
    return [S(g.T(2, 3), g.T(3)), S(g.T(2, 3), g.T(2, 1)), S(g.T(2, 3), 1.5)]


def _reduce_max_min(g):
    return [S(g.DISTINCT(2, 3)), S(g.DISTINCT(2, 3), [1]), S(g.DISTINCT(2, 3, 2), [0, 2], True)]


def _unary_float(lo=-1.0, hi=1.0, ints=(0, 1)):
    """A floating function of one operand in its domain [lo, hi): float64 with gradients, a
    0-dim one, float32, and an int64 tensor (promoted to the default float dtype)."""
    def build(g):
        return [S(g.T(2, 3, lo=lo, hi=hi)), S(g.T(lo=lo, hi=hi)),
                S(g.T(4, lo=lo, hi=hi, dtype=g.tp.float32), grad=False),
                S(g.IDX(list(ints)), grad=False)]
    return build


# -- matrices for the tp::linalg_* ops (session 46, h-linalg46): made from the seeded stream
def _mats(g, shape, make, dtype=None):
    """A batch ``shape`` (``(..., m, n)``) of matrices, each ``make(rng, m, n)`` (nested lists)."""
    *batch, m, n = shape
    count = g._numel(batch)
    flat = [v for _ in range(count) for row in make(g.rng, m, n) for v in row]
    return g._make(flat, tuple(shape), dtype or g.f64)


def _rand(rng, m, n):
    return [[rng.uniform(-1.0, 1.0) for _ in range(n)] for _ in range(m)]


def _wellcond(rng, m, n):
    """Diagonally dominant (well-conditioned): random values plus ``n`` on the diagonal."""
    a = _rand(rng, m, n)
    for i in range(min(m, n)):
        a[i][i] += n
    return a


def _spd(rng, m, n):
    """Symmetric positive-definite: ``M M^T + n I``."""
    a = _rand(rng, n, n)
    return [[sum(a[i][k] * a[j][k] for k in range(n)) + (n if i == j else 0.0)
             for j in range(n)] for i in range(n)]


def _sym(rng, m, n):
    """Symmetric with well-separated eigenvalues: small random symmetric part plus 0, 1.5, 3...
    on the diagonal."""
    a = _rand(rng, n, n)
    return [[0.2 * (a[i][j] + a[j][i]) + (1.5 * i if i == j else 0.0) for j in range(n)]
            for i in range(n)]


def _lin(make):
    def build(g, *shape, dtype=None):
        return _mats(g, shape, make, dtype)
    return build


_WC, _SPD, _SYM, _RM = _lin(_wellcond), _lin(_spd), _lin(_sym), _lin(_rand)


# name -> builder(g) -> [BuiltinSample]; g makes tensors on the requested device
SAMPLES = {
    "add": _binary(), "sub": _binary(), "rsub": _binary(), "mul": _binary(),
    "div": _binary(b="POS"),
    "rdiv": lambda g: [S(g.POS(2, 3), 2.5), S(g.POS(3), 3)],
    "pow": lambda g: [S(g.POS(3, 1), g.T(4)), S(g.POS(2, 3), 3), S(g.POS(2, 3), 2.5),
                      S(g.T(2, 3), 2), S(g.POS(2, 2), 0), S(g.IDX([1, 2, 3]), 2, grad=False)],
    "rpow": lambda g: [S(g.T(2, 3), 2.0), S(g.T(3), 3), S(g.IDX([1, 2]), 2, grad=False)],
    "floor_divide": lambda g: [S(g.T(3, 1), g.POS(4), grad=False), S(g.T(2, 3), 0.7, grad=False),
                               S(g.IDX([[7, -7], [5, 0]]), g.IDX([2, 3]), grad=False),
                               S(g.IDX([7, -7]), 3, grad=False)],
    # div(rounding_mode='floor'/'trunc')'s op: floor_divide's values, gradient zeros
    "_div_floor": lambda g: [S(g.T(3, 1), g.POS(4)), S(g.T(2, 3), 0.7),
                             S(g.IDX([[7, -7], [5, 0]]), g.IDX([2, 3]), grad=False)],
    "remainder": lambda g: [S(g.T(3, 1, lo=0.1, hi=0.9), g.T(4, lo=1.0, hi=1.5)),
                            S(g.T(2, 3, lo=-0.9, hi=-0.1), g.T(3, lo=1.0, hi=1.5)),
                            S(g.T(2, 3, lo=0.1, hi=0.9), 1.0),
                            S(g.IDX([7, -7]), g.IDX([3, 3]), grad=False)],
    "maximum": _binary("DISTINCT", "DISTINCT_UP"),
    "minimum": _binary("DISTINCT", "DISTINCT_UP"),
    "neg": _unary(), "exp": _unary(), "log": _unary("POS"), "sqrt": _unary("POS"),
    "rsqrt": _unary("POS"), "tanh": _unary(), "sigmoid": _unary(), "relu": _unary("NZ"),
    "abs": _unary("NZ"), "sin": _unary(), "cos": _unary(), "erf": _unary(), "sign": _unary("NZ"),
    "where": lambda g: [S(g.MASK(2, 3), g.T(2, 3), g.T(3)), S(g.MASK(3), g.T(2, 3), 0.0),
                        S(g.MASK(2, 3), 1.0, g.T(2, 1)), S(g.MASK(2), 1, 0, grad=False)],
    "sum": lambda g: [S(g.T(2, 3)), S(g.T(2, 3), [1]), S(g.T(2, 3, 2), [0, 2], True),
                      S(g.T(2, 3), [-1], dtype=g.f64), S(g.IDX([1, 2]), grad=False),
                      S(g.T(), [0])],                       # 0-dim: dim 0 / -1 allowed
    "mean": lambda g: [S(g.T(2, 3)), S(g.T(2, 3), [0]), S(g.T(2, 3, 2), [1], True),
                       S(g.T(), [-1], True)],
    "amax": lambda g: _reduce_max_min(g) + [S(g.DISTINCT(), [0])],
    "amin": _reduce_max_min,
    "argmax": lambda g: [S(g.DISTINCT(2, 3)), S(g.DISTINCT(2, 3), 1),
                         S(g.DISTINCT(2, 3), 0, True), S(g.DISTINCT(), 0)],
    "argmin": lambda g: [S(g.DISTINCT(2, 3)), S(g.DISTINCT(2, 3), 1),
                         S(g.DISTINCT(2, 3), 0, True), S(g.DISTINCT(), 0)],
    "matmul": lambda g: [S(g.T(2, 3), g.T(3, 4)), S(g.T(3), g.T(3, 2)), S(g.T(2, 3), g.T(3)),
                         S(g.T(3), g.T(3)), S(g.T(2, 2, 3), g.T(3, 2)),
                         S(g.T(2, 3), g.T(2, 3, 2))],
    "softmax": lambda g: [S(g.T(2, 3), 1), S(g.T(2, 3), 0), S(g.T(4), -1)],
    "log_softmax": lambda g: [S(g.T(2, 3), 1), S(g.T(2, 3), 0)],
    "cat": lambda g: [S([g.T(2, 3), g.T(2, 1)], 1), S([g.T(1, 3), g.T(2, 3)]),
                      S([g.T(2), g.T(3), g.T(1)], -1)],
    "stack": lambda g: [S([g.T(2, 3), g.T(2, 3)], 1), S([g.T(3), g.T(3), g.T(3)])],
    "view": lambda g: [S(g.T(2, 3), [3, 2]), S(g.T(2, 3), [-1]), S(g.T(6), [2, 1, 3])],
    "reshape": lambda g: [S(g.T(2, 3), [3, 2]), S(g.T(2, 3).transpose(0, 1), [6])],
    "permute": lambda g: [S(g.T(2, 3, 4), [2, 0, 1]), S(g.T(2, 3), [1, 0])],
    "transpose": lambda g: [S(g.T(2, 3), 0, 1), S(g.T(2, 3, 4), -1, 0)],
    "expand": lambda g: [S(g.T(3, 1), [3, 4]), S(g.T(3), [2, 3]), S(g.T(1, 3), [2, -1, 3])],
    "unsqueeze": lambda g: [S(g.T(2, 3), 0), S(g.T(2, 3), -1), S(g.T(2, 3), 1)],
    "squeeze": lambda g: [S(g.T(2, 1, 3)), S(g.T(2, 1, 3), [1]), S(g.T(1, 3), [0, 1])],
    "slice": lambda g: [S(g.T(4, 3), 0, 1, 3), S(g.T(4, 5), 1, 0, None, 2), S(g.T(4, 3), 0, -2)],
    "narrow": lambda g: [S(g.T(4, 3), 0, 1, 2), S(g.T(4, 3), 1, 2, 1)],
    "select": lambda g: [S(g.T(4, 3), 0, 1), S(g.T(4, 3), 1, -1)],
    "clone": lambda g: [S(g.T(2, 3)), S(g.T(2, 3).transpose(0, 1))],
    "to_dtype": lambda g: [S(g.T(2, 3), g.f64), S(g.T(2, 3), g.tp.float32, grad=False),
                           S(g.T(3), g.tp.int32, grad=False)],
    "to_device": lambda g: [S(g.T(2, 3), g.device)],
    "copy_": lambda g: [S(g.T(2, 3), g.T(3)), S(g.T(2, 3), g.T(2, 3)), S(g.T(2, 3), 0.5)],
    "fill_": lambda g: [S(g.T(2, 3), g.T()), S(g.T(2, 3), 1.5)],
    "add_": _inplace, "mul_": _inplace, "sub_": _inplace,
    "div_": lambda g: [S(g.T(2, 3), g.POS(3)), S(g.T(2, 3), g.POS(2, 1)), S(g.T(2, 3), 1.5)],
    # index ops: the empty batch is explicit (a derived one would keep out-of-range indices)
    "index": lambda g: [S(g.T(4, 3), 0, g.IDX([0, 2, 2])),
                        S(g.T(4, 3), 1, g.IDX([[0, 1], [2, 0]])),
                        S(g.T(0, 3), 1, g.IDX([2, 0]))],
    "index_add": lambda g: [S(g.T(4, 3), 0, g.IDX([0, 2, 2]), g.T(3, 3)),
                            S(g.T(4, 3), 1, g.IDX([1]), g.T(4, 1)),
                            S(g.T(0, 3), 1, g.IDX([1]), g.T(0, 1))],
    "masked_select": lambda g: [S(g.T(2, 3), g.MASK(2, 3), fake=False),
                                S(g.T(2, 3), g.MASK(3), fake=False)],
    "nonzero": lambda g: [S(g.T(2, 3), grad=False, fake=False),
                          S(g.MASK(4), grad=False, fake=False)],
    "masked_scatter_": lambda g: [S(g.T(2, 3), g.MASK(2, 3), g.T(2, 3)),
                                  S(g.T(2, 3), g.MASK(2, 3), g.T(8))],
    "masked_fill_": lambda g: [S(g.T(2, 3), g.MASK(2, 3), g.T()),
                               S(g.T(2, 3), g.MASK(3), 0.5)],
    "index_put_": lambda g: [S(g.T(4, 3), 0, g.IDX([0, 2]), g.T(2, 3)),
                             S(g.T(4, 3), 1, g.IDX([1]), 0.5),
                             S(g.T(4, 3), 0, g.IDX([3]), g.T(3)),
                             S(g.T(0, 3), 1, g.IDX([1]), 0.5)],
    "eq": _binary(), "ne": _binary(), "lt": _binary(), "le": _binary(), "gt": _binary(),
    "ge": _binary(), "logical_and": _binary(), "logical_or": _binary(),
    "logical_not": lambda g: [S(g.T(2, 3)), S(g.MASK(3))],
    "bitwise_and": _bitwise, "bitwise_or": _bitwise, "bitwise_xor": _bitwise,
    "bitwise_left_shift": _shift, "bitwise_right_shift": _shift,
    "bitwise_not": lambda g: [S(g.INT(2, 3)), S(g.INT(3, 2, dtype=g.tp.int8, lo=-128,
                                                     hi=127).transpose(0, 1)),
                              S(g.INT(dtype=g.tp.uint8, lo=0, hi=255)), S(g.MASK(3))],
    "empty": lambda g: [S([2, 3], dtype=g.tp.float32, device=g.device)],
    "full": lambda g: [S([2, 3], 1.5, dtype=g.f64, device=g.device),
                       S([4], 7, dtype=g.tp.int16, device=g.device)],
    "arange": lambda g: [S(0, 5, 1, dtype=g.tp.int64, device=g.device),
                         S(0.0, 1.0, 0.3, dtype=g.tp.float32, device=g.device),
                         S(5, 0, -2, dtype=g.tp.int32, device=g.device)],
    "rand": lambda g: [S([2, 3], dtype=g.tp.float32, device=g.device)],
    "randn": lambda g: [S([3], dtype=g.f64, device=g.device)],
    "randint": lambda g: [S(0, 10, [2, 3], dtype=g.tp.int64, device=g.device),
                          S(-5, 5, [7], dtype=g.tp.int32, device=g.device)],
    "eye": lambda g: [S(3, 3, dtype=g.tp.float32, device=g.device),
                      S(2, 4, dtype=g.tp.int64, device=g.device),
                      S(0, 2, dtype=g.f64, device=g.device)],
    "linspace": lambda g: [S(0.0, 1.0, 5, dtype=g.tp.float32, device=g.device),
                           S(-2, 3, 7, dtype=g.f64, device=g.device),
                           S(1.0, 1.0, 1, dtype=g.tp.float32, device=g.device),
                           S(0, 10, 4, dtype=g.tp.int64, device=g.device),
                           S(0.0, 1.0, 0, dtype=g.tp.float32, device=g.device)],
    "all": lambda g: [S(g.MASK(2, 3)), S(g.MASK(2, 3), [1]), S(g.T(2, 3), [0], True),
                      S(g.IDX([[1, 0], [2, 3]]), [-1])],
    "any": lambda g: [S(g.MASK(2, 3)), S(g.MASK(2, 3), [1]), S(g.T(2, 3), [0], True),
                      S(g.IDX([[0, 0], [2, 0]]), [-1])],
    "isnan": lambda g: [S(g.V([float("nan"), 1.0, float("inf")])), S(g.T(2, 3)),
                        S(g.IDX([1, 2]))],
    "isinf": lambda g: [S(g.V([float("nan"), -float("inf"), float("inf"), 0.0])),
                        S(g.IDX([1, 2]))],
    "isfinite": lambda g: [S(g.V([float("nan"), -float("inf"), 2.0])), S(g.T(2, 3)),
                           S(g.IDX([1]))],
    "floor": lambda g: [S(g.T(2, 3, lo=-3, hi=3)), S(g.T()), S(g.IDX([1, -2]), grad=False)],
    "trunc": lambda g: [S(g.T(2, 3, lo=-3, hi=3)), S(g.T()), S(g.IDX([1, -2]), grad=False)],
    "expm1": _unary_float(-2.0, 2.0, (0, 1, -3)), "log1p": _unary_float(-0.5, 2.0, (0, 4)),
    "log2": _unary_float(0.5, 3.0, (1, 8)), "log10": _unary_float(0.5, 3.0, (1, 100)),
    "exp2": _unary_float(-2.0, 2.0, (0, 3, -2)), "tan": _unary_float(-1.2, 1.2, (0, 1)),
    "asin": _unary_float(-0.9, 0.9, (0, 1)), "acos": _unary_float(-0.9, 0.9, (0, 1, -1)),
    "atan": _unary_float(-3.0, 3.0, (0, 5)), "sinh": _unary_float(-2.0, 2.0, (0, 2)),
    "cosh": _unary_float(-2.0, 2.0, (0, -2)),
    "ceil": lambda g: [S(g.T(2, 3, lo=-3, hi=3)), S(g.T()), S(g.IDX([1, -2]), grad=False)],
    "round": lambda g: [S(g.T(2, 3, lo=-3, hi=3)),
                        S(g.V([0.5, 1.5, 2.5, -0.5, 1.26, -2.74], g.f64), grad=False),
                        S(g.T(4, lo=-3, hi=3), decimals=2), S(g.IDX([7, -3]), grad=False)],
    "prod": lambda g: [S(g.T(2, 3)), S(g.T(2, 3), [1]), S(g.T(2, 3), [0], True),
                       S(g.V([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5]], g.f64), [1]),
                       S(g.V([0.5, 0.0, -2.0], g.f64)),
                       S(g.IDX([[1, 2], [3, 4]]), [0], grad=False),
                       S(g.T(2, 3), [-1], dtype=g.f64)],
    "cumsum": lambda g: [S(g.T(2, 3), 1), S(g.T(2, 3), 0), S(g.T(), 0),
                         S(g.IDX([[1, 2], [3, 4]]), -1, grad=False),
                         S(g.MASK(5), 0, grad=False), S(g.T(3), 0, dtype=g.f64)],
    "max": lambda g: [S(g.DISTINCT(2, 3), 1), S(g.DISTINCT(2, 3), 0, True),
                      S(g.DISTINCT(4), -1), S(g.DISTINCT(), 0),
                      S(g.IDX([[3, 1], [2, 9]]), 1, grad=False)],
    "min": lambda g: [S(g.DISTINCT(2, 3), 1), S(g.DISTINCT(2, 3), 0, True),
                      S(g.DISTINCT(4), -1), S(g.IDX([[3, 1], [2, 9]]), 1, grad=False)],
    "sort": lambda g: [S(g.DISTINCT(2, 3)), S(g.DISTINCT(2, 3), 0, True),
                       S(g.DISTINCT(5), -1, False, stable=True), S(g.DISTINCT(), 0),
                       S(g.IDX([[3, 1, 3], [2, 2, 0]]), 1, grad=False),
                       S(g.V([2.0, float("nan"), -1.0, 2.0]), grad=False)],
    "topk": lambda g: [S(g.DISTINCT(2, 5), 2), S(g.DISTINCT(3, 4), 3, 0),
                       S(g.DISTINCT(6), 4, -1, False), S(g.DISTINCT(2, 3), 0, 1),
                       S(g.DISTINCT(2, 3), 3, 1, largest=True, sorted=False),
                       S(g.DISTINCT(), 1), S(g.IDX([[3, 1, 3], [2, 2, 0]]), 2, 1, grad=False),
                       S(g.V([2.0, float("nan"), -1.0, 5.0]), 2, grad=False)],
    "searchsorted": lambda g: [
        S(g.V([1.0, 2.0, 2.0, 3.0]), g.V([0.5, 2.0, 3.5, float("nan")]), grad=False),
        S(g.V([1.0, 2.0, 2.0, 3.0]), g.V([[2.0, 3.0], [1.0, 0.0]]), right=True, grad=False),
        S(g.V([[1.0, 2.0, 3.0], [0.0, 5.0, 6.0]]), g.V([[2.0], [5.5]]), grad=False),
        S(g.V([[1.0, 2.0, 3.0], [0.0, 5.0, 6.0]]), g.V([[2.0, 9.0], [-1.0, 5.0]]), right=True,
          out_int32=True, grad=False),
        S(g.V([3.0, 1.0, 2.0]), g.V([1.5, 2.5]), sorter=g.IDX([1, 2, 0]), grad=False),
        S(g.IDX([1, 3, 5, 7]), g.IDX([0, 3, 8]), grad=False)],
    "argsort": lambda g: [S(g.DISTINCT(2, 3)), S(g.DISTINCT(2, 3), 0, True),
                          S(g.IDX([3, 1, 3, 1, 0]), stable=True),
                          S(g.IDX([3, 1, 3, 1]), 0, True)],
    "gather": lambda g: [S(g.T(3, 4), 1, g.IDX([[0, 3, 3], [1, 1, 0], [2, 0, 1]])),
                         S(g.T(3, 4), 0, g.IDX([[2, 0, 1, 2]])),
                         S(g.T(4), 0, g.IDX([3, 3, 0])),
                         S(g.IDX([[1, 2], [3, 4]]), 1, g.IDX([[1], [0]]), grad=False)],
    "scatter_add": lambda g: [S(g.T(3, 4), 1, g.IDX([[0, 3, 3], [1, 1, 0]]), g.T(2, 3)),
                              S(g.T(3, 4), 0, g.IDX([[2, 0, 2, 2]]), g.T(2, 4)),
                              S(g.T(4), 0, g.IDX([3, 3, 0]), g.T(3)),
                              S(g.IDX([[1, 2], [3, 4]]), 1, g.IDX([[1], [0]]),
                                g.IDX([[5], [6]]), grad=False)],
    "as_strided": lambda g: [S(g.T(3, 4), [2, 2], [1, 4]),
                             S(g.T(3, 4), [3, 2], [4, 1], 1),
                             S(g.T(6), [2, 3], [1, 1])],
    "view_dtype": lambda g: [S(g.T(2, 3), g.tp.int64, grad=False),
                             S(g.T(2, 3), g.tp.int32, grad=False),
                             S(g.IDX([[1, 2], [3, 4]]), g.tp.float64, grad=False)],
    "scatter": lambda g: [S(g.T(3, 4), 1, g.IDX([[0, 3, 2], [1, 2, 0]]), g.T(2, 3)),
                          S(g.T(3, 4), 0, g.IDX([[2, 0, 1, 2]]), g.T(2, 4)),
                          S(g.T(4), 0, g.IDX([3, 0]), 0.5)],
    "scatter_": lambda g: [S(g.T(3, 4), 1, g.IDX([[0, 3, 2], [1, 2, 0]]), g.T(2, 3)),
                           S(g.T(4), 0, g.IDX([3, 0]), 0.5)],
    # session 44 (h-gaps44): two-operand math and inverse hyperbolics
    "atan2": lambda g: [S(g.T(3, 1), g.T(4)), S(g.T(2, 3), g.POS(2, 3)),
                        S(g.T(2, 3, dtype=g.tp.float32), g.T(3), grad=False),
                        S(g.IDX([1, -2]), g.IDX([3, 0]), grad=False)],
    "hypot": lambda g: [S(g.T(3, 1), g.T(4)), S(g.T(2, 3), g.POS(2, 3)),
                        S(g.T(4, dtype=g.tp.float32), g.T(4), grad=False)],
    "nextafter": lambda g: [S(g.T(3, 1), g.T(4)),
                            S(g.T(2, 3, dtype=g.tp.float32), g.T(3, dtype=g.tp.float32),
                              grad=False)],
    # session 56: operands apart (the gradient's pick is not at a tie for finite differences)
    "fmax": lambda g: [S(g.T(3, 1, lo=0.1, hi=0.4), g.T(4, lo=0.6, hi=0.9)),
                       S(g.T(2, 3, lo=0.6, hi=0.9), g.T(3, lo=-0.9, hi=-0.1)),
                       S(g.IDX([1, 5]), g.IDX([3, 2]), grad=False)],
    "fmin": lambda g: [S(g.T(3, 1, lo=0.1, hi=0.4), g.T(4, lo=0.6, hi=0.9)),
                       S(g.T(2, 3, lo=0.6, hi=0.9), g.T(3, lo=-0.9, hi=-0.1)),
                       S(g.IDX([1, 5]), g.IDX([3, 2]), grad=False)],
    "fmod": lambda g: [S(g.T(3, 1, lo=0.1, hi=0.9), g.T(4, lo=1.0, hi=1.5)),
                       S(g.T(2, 3, lo=-0.9, hi=-0.1), g.T(3, lo=1.0, hi=1.5)),
                       S(g.T(2, 3, lo=0.1, hi=0.9), 1.0),
                       S(g.IDX([7, -7]), g.IDX([3, 3]), grad=False),
                       S(g.IDX([7, -7]), 3, grad=False)],
    "copysign": lambda g: [S(g.NZ(2, 3), g.NZ(3)), S(g.NZ(2, 3), -1.0),
                           S(g.IDX([1, -2]), g.IDX([3, -1]), grad=False)],
    "asinh": _unary_float(-2.0, 2.0, (0, 3, -2)), "acosh": _unary_float(1.1, 3.0, (1, 4)),
    "atanh": _unary_float(-0.9, 0.9, (0,)),
    "xlogy": lambda g: [S(g.T(3, 1), g.POS(4)), S(g.T(2, 3), g.POS(3)),
                        S(g.T(2, 3), 2.5), S(g.IDX([0, 2, 3]), g.IDX([1, 0, 2]), grad=False),
                        S(g.V([0.0, 1.5, 0.0], g.f64), g.V([0.0, float("nan"), 2.0], g.f64),
                          grad=False)],
    "scatter_reduce": lambda g: [
        S(g.T(3, 4), 1, g.IDX([[0, 0, 2], [1, 1, 0]]), g.T(2, 3), "prod"),
        S(g.T(3, 4), 0, g.IDX([[2, 0, 2, 2]]), g.T(2, 4), "amax"),
        S(g.T(3, 4), 1, g.IDX([[0, 0, 2], [3, 1, 3]]), g.T(2, 3), "amin", include_self=False),
        S(g.T(3, 4), 1, g.IDX([[0, 0, 2], [1, 1, 0]]), g.T(2, 3), "prod", include_self=False),
        S(g.T(3, 4), 1, g.IDX([[0, 0, 2], [1, 1, 0]]), g.T(2, 3), "sum"),
        S(g.T(3, 4), 0, g.IDX([[2, 0, 2, 2]]), g.T(2, 4), "mean", include_self=False),
        S(g.IDX([[3, 1], [2, 9]]), 1, g.IDX([[1, 1], [0, 0]]), g.IDX([[4, 5], [6, 7]]), "amax",
          grad=False)],
    # session 46 (h-linalg46): decompositions and solvers. cholesky and eigh read one triangle
    # of a symmetric input while their gradient is, as torch's, that of a symmetric input, so
    # only 1x1 matrices are gradcheck samples (tests/test_linalg46.py checks them symmetrised);
    # full_matrices=True only for square inputs (the extra singular vectors are not unique)
    "linalg_det": lambda g: [S(_WC(g, 3, 3)), S(_WC(g, 2, 3, 3)),
                             S(_WC(g, 3, 3).transpose(0, 1)), S(_RM(g, 2, 2)),
                             S(_WC(g, 3, 3, dtype=g.tp.float32), grad=False),
                             S(g.T(0, 2, 2), grad=False)],
    "linalg_slogdet": lambda g: [S(_WC(g, 3, 3)), S(_WC(g, 2, 3, 3) * -1.0),
                                 S(_WC(g, 3, 3, dtype=g.tp.float32), grad=False)],
    "linalg_inv_ex": lambda g: [S(_WC(g, 3, 3)), S(_WC(g, 2, 3, 3), check_errors=True),
                                S(_WC(g, 3, 3).transpose(0, 1)),
                                S(_WC(g, 4, 4, dtype=g.tp.float32), grad=False)],
    "linalg_solve": lambda g: [S(_WC(g, 3, 3), _RM(g, 3, 2)), S(_WC(g, 2, 3, 3), _RM(g, 3, 1)),
                               S(_WC(g, 1, 3, 3), _RM(g, 2, 3, 2)),
                               S(_WC(g, 3, 3, dtype=g.tp.float32),
                                 _RM(g, 3, 2, dtype=g.tp.float32), grad=False)],
    "linalg_cholesky_ex": lambda g: [S(_SPD(g, 2, 1, 1)), S(_SPD(g, 1, 1), upper=True),
                                     S(_SPD(g, 3, 3), grad=False),
                                     S(_SPD(g, 2, 3, 3), upper=True, grad=False),
                                     S(_SPD(g, 3, 3, dtype=g.tp.float32), check_errors=True,
                                       grad=False)],
    "linalg_qr": lambda g: [S(_RM(g, 4, 3)), S(_RM(g, 2, 3, 3)), S(_RM(g, 3, 5)),
                            S(_RM(g, 3, 4), "complete"),
                            S(_RM(g, 4, 3, dtype=g.tp.float32), grad=False)],
    "linalg_svd": lambda g: [S(_RM(g, 4, 3), False), S(_RM(g, 2, 3, 5), False),
                             S(_RM(g, 3, 3)), S(_RM(g, 3, 3), full_matrices=False),
                             S(_RM(g, 4, 3, dtype=g.tp.float32), False, grad=False)],
    "linalg_eigh": lambda g: [S(_SYM(g, 2, 1, 1)), S(_SYM(g, 1, 1), "U"),
                              S(_SYM(g, 3, 3), grad=False), S(_SYM(g, 2, 3, 3), "U", grad=False),
                              S(_SYM(g, 4, 4, dtype=g.tp.float32), grad=False)],
}
# special functions (session 46): domains away from poles and kinks; values at special points
SAMPLES.update({
    "lgamma": _unary_float(0.2, 4.0, (1, 3)), "digamma": _unary_float(0.3, 4.0, (1, 5)),
    "polygamma": lambda g: [S(1, g.T(2, 3, lo=0.3, hi=3.0)), S(0, g.T(lo=0.5, hi=2.0)),
                            S(3, g.T(4, lo=0.5, hi=3.0, dtype=g.tp.float32), grad=False),
                            S(2, g.IDX([1, 4]), grad=False)],
    "mvlgamma": lambda g: [S(g.T(2, 3, lo=2.0, hi=4.0), 3), S(g.T(lo=1.0, hi=2.0), 1),
                           S(g.IDX([2, 5]), 2, grad=False)],
    "erfc": _unary_float(-2.0, 3.0, (0, 2)), "erfcx": _unary_float(-1.0, 8.0, (0, 7)),
    "erfinv": _unary_float(-0.9, 0.9, (0, 1)), "ndtri": _unary_float(0.05, 0.95, (0, 1)),
    "i0": _unary_float(-3.0, 3.0, (0, 2)), "i0e": _unary_float(-3.0, 3.0, (1, 25)),
    "i1": _unary_float(-3.0, 3.0, (0, 2)), "i1e": _unary_float(-3.0, 3.0, (1, 25)),
    "sinc": _unary_float(-2.0, 2.0, (0, 3)),
    "logit": lambda g: [S(g.T(2, 3, lo=0.1, hi=0.9)), S(g.T(3, lo=0.2, hi=0.8), 0.25),
                        S(g.V([0.0, 0.5, 1.0, float("nan")], g.f64), 0.1, grad=False),
                        S(g.IDX([0, 1]), grad=False)],
    "xlog1py": lambda g: [S(g.T(3, 1), g.POS(4)), S(g.T(2, 3), g.POS(3)), S(g.T(2, 3), 2.5),
                          S(g.IDX([0, 2, 3]), g.IDX([1, 0, 2]), grad=False),
                          S(g.V([0.0, 1.5, 0.0], g.f64), g.V([-1.0, float("nan"), 2.0], g.f64),
                            grad=False)],
    "heaviside": lambda g: [S(g.V([-1.5, 0.0, 2.0], g.f64), g.T(3), grad=False),
                            S(g.V([[0.0], [3.0]], g.f64), g.T(4), grad=False),
                            S(g.IDX([-2, 0, 5]), g.IDX([7]), grad=False)],
    "ldexp": lambda g: [S(g.T(2, 3), g.IDX([1, -2, 3])), S(g.T(3, 1), g.T(4, lo=-2, hi=2)),
                        S(g.T(4, dtype=g.tp.float32), g.IDX([0, 1, 2, 3]), grad=False)],
    "frexp": lambda g: [S(g.T(2, 3, lo=-9.0, hi=9.0)),
                        S(g.V([0.0, -0.0, 1.0, -3.0, 8.0], g.f64), grad=False),
                        S(g.T(4, dtype=g.tp.float32), grad=False)],
})
# the norms' root (session 48): positive sums of powers (the gradient at 0 is masked, a kink);
# the value 0 without gradients (its root is 0 for p > 0, inf for p < 0)
SAMPLES["_norm_root"] = lambda g: [
    S(g.POS(2, 3), 2.0), S(g.POS(3), 3.0), S(g.POS(2, 2), 0.5), S(g.POS(3), -1.5),
    S(g.POS(dtype=g.tp.float32), 2.0, grad=False), S(g.V([0.0, 4.0], g.f64), 2.0, grad=False),
    S(g.V([0.0, 8.0], g.f64), -3.0, grad=False), S(g.IDX([4, 9]), 2.0, grad=False)]

# float16/bfloat16 ops of several steps at float32 (session 55; their callers take them for
# float16/bfloat16 results only): float64 samples for the gradients (the kernels compute any
# floating dtype), float16 ones for the float32 path; broadcasting, a number operand/weight
SAMPLES["_add_alpha"] = lambda g: [
    S(g.T(2, 3), g.T(3), 0.3), S(g.T(3, 1), g.T(2, 1, 4), -2.0), S(g.T(2, 3), 2.5, 0.5),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(3, dtype=g.tp.float16), 0.3, grad=False),
    S(g.T(4, dtype=g.tp.float16), 2.7, -1.5, grad=False)]
SAMPLES["_addcmul"] = lambda g: [
    S(g.T(2, 3), g.T(3), g.T(2, 1), 0.7), S(g.T(3), g.T(2, 3), g.T(2, 3), -2.0),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(2, 3, dtype=g.tp.float16),
      g.T(3, dtype=g.tp.float16), 0.7, grad=False)]
SAMPLES["_addcdiv"] = lambda g: [
    S(g.T(2, 3), g.T(3), g.POS(2, 1), 0.7), S(g.T(3), g.T(2, 3), g.POS(2, 3), -2.0),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(2, 3, dtype=g.tp.float16),
      g.POS(3, dtype=g.tp.float16), 0.7, grad=False)]
SAMPLES["_lerp"] = lambda g: [
    S(g.T(2, 3), g.T(3), 0.3), S(g.T(2, 3), g.T(2, 3), 0.8), S(g.T(2, 3), g.T(3), g.T(2, 1)),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(2, 3, dtype=g.tp.float16), 0.3, grad=False),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(3, dtype=g.tp.float16),
      g.T(2, 1, lo=-0.5, hi=1.5, dtype=g.tp.float16), grad=False)]

# the one-kernel gradients of float16/bfloat16 tanh/sigmoid/softmax/log_softmax (session 55):
# (grad_output, output[, dim]); float64 samples check their own gradients (a second backward)
SAMPLES["_tanh_backward"] = lambda g: [
    S(g.T(2, 3), g.T(2, 3, lo=-0.9, hi=0.9)), S(g.T(3), g.T(2, 3, lo=-0.9, hi=0.9)),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(2, 3, lo=-0.9, hi=0.9, dtype=g.tp.float16), grad=False)]
SAMPLES["_sigmoid_backward"] = lambda g: [
    S(g.T(2, 3), g.T(2, 3, lo=0.1, hi=0.9)), S(g.T(3), g.T(2, 3, lo=0.1, hi=0.9)),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(2, 3, lo=0.1, hi=0.9, dtype=g.tp.float16), grad=False)]
SAMPLES["_softmax_backward_data"] = lambda g: [
    S(g.T(2, 3), g.T(2, 3, lo=0.1, hi=0.9), 1), S(g.T(2, 3), g.T(2, 3, lo=0.1, hi=0.9), 0),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(2, 3, lo=0.1, hi=0.9, dtype=g.tp.float16), -1,
      grad=False)]
SAMPLES["_log_softmax_backward_data"] = lambda g: [
    S(g.T(2, 3), g.T(2, 3, lo=-2.0, hi=-0.1), 1), S(g.T(2, 3), g.T(2, 3, lo=-2.0, hi=-0.1), 0),
    S(g.T(2, 3, dtype=g.tp.float16), g.T(2, 3, lo=-2.0, hi=-0.1, dtype=g.tp.float16), -1,
      grad=False)]


def names() -> list:
    """The built-in op names (without ``tp::``) that have samples, sorted."""
    return sorted(SAMPLES)


def samples(name: str, device="cpu", *, seed: int = DEFAULT_SEED) -> list:
    """The samples of built-in op ``name`` (``"add"`` or ``"tp::add"``) as ``BuiltinSample``s,
    every tensor (and every ``device=`` argument) on ``device``. Deterministic: the same ``seed``
    gives the same values on every device. Raises ``KeyError`` for an op with no entry."""
    short = name.removeprefix("tp::")
    try:
        build = SAMPLES[short]
    except KeyError:
        raise KeyError(f"builtin_samples: no samples for built-in op {name!r} (known: "
                       f"{', '.join(sorted(SAMPLES))})") from None
    out = build(_Gen(device, seed))
    for i, s in enumerate(out):
        s.name = f"tp::{short}#{i}"
    return out


#: Checks that do not apply to an op by its definition: ``{op: {check: reason}}``.
SKIP_CHECKS = {
    **{op: {"test_gradients": "the op reads one triangle of its symmetric input while its "
                              "gradient, as torch's, is that of a symmetric input: finite "
                              "differences of single elements do not apply (torch's own tests "
                              "symmetrise the input first; tests/test_linalg46.py does)"}
       for op in ("linalg_cholesky_ex", "linalg_eigh")},
    "as_strided": {"test_layouts": "as_strided addresses its input's storage with the strides "
                                   "it is given, so its values depend on the input's memory "
                                   "layout by definition (as torch.as_strided)"},
}


def sample_inputs(op, device, *, seed: int = DEFAULT_SEED):
    """The ``tensorplay_sample_inputs`` hook's answer for built-in ops: ``SampleInput``s of
    ``op`` on ``device``, or ``None`` when ``op`` is not a built-in ``tp::`` op with samples.

    Every check runs on every sample, those whose output size depends on the values
    (``masked_select``, ``nonzero``) included: ``test_faketensor`` and
    ``test_aot_dispatch_dynamic`` take the real size where the fake has a data-dependent one.
    An op in ``SKIP_CHECKS`` carries ``skip_checks`` (``{check name: reason}``), which
    ``tensorplay.testing.check_plugin`` reports as skipped with that reason."""
    from ..plugins import SampleInput
    name = getattr(op, "name", op)
    if not isinstance(name, str) or not name.startswith("tp::") or name[4:] not in SAMPLES:
        return None
    out = []
    for s in samples(name, device, seed=seed):
        si = SampleInput(tuple(s.args), dict(s.kwargs), s.name)
        if name[4:] in SKIP_CHECKS:
            si.skip_checks = {**(getattr(si, "skip_checks", None) or {}), **SKIP_CHECKS[name[4:]]}
        out.append(si)
    return out
