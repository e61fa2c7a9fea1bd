"""Conformance: the same operator tests run on every installed device type, checked against cpu.

* ``test_builtin_op_matches_cpu`` -- every sample of every built-in op (the core's table
  ``tensorplay.testing.builtin_samples``, which must cover every ``tp::`` op) is run on the
  cpu and again made on the device under test; results must agree in values,
  shape, dtype, strides and storage offset, and live on that device. In-place ops are compared
  on the mutated tensor too.
* ``test_builtin_backward_matches_cpu`` -- the same samples' gradients (float64) agree with cpu.
* ``test_case`` -- composite programs through the Tensor API (views, indexing, in-place chains,
  dtype promotion, reductions, float16, ...). On cpu each is checked against an independent
  NumPy reference; on every other device against the cpu result.
* ``test_gradcheck_on_device`` -- finite-difference gradient checks run on the device itself.

Device types come from the installed plugins (``cpu``, ``cuda``, ...). A device whose plugin
reports it unavailable is skipped with the plugin's reason; ``cuda`` parameters carry the
``cuda`` marker (``pytest -m cuda`` selects them). Every test also runs on ``gpustandin``
(conftest's ``gpu_stand_in``): NumPy standing in for a GPU array library, so the kernels' device
branch runs where there is no GPU (CI); there the built-in ops run with host reads refused, as
under ``cupyx.allow_synchronize(False)``, but for the few that read by design (``_READS_BACK``).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import tensorplay as tp
from tensorplay.testing import assert_close, builtin_samples
from tensorplay.testing.opcheck import NONDETERMINISTIC_TAGS

# every built-in op (namespace ``tp``), by name: the public spelling of the op table
BUILTINS = {n: getattr(tp.ops.tp, n) for n in dir(tp.ops.tp)}
O = tp.ops.tp

# -- devices ---------------------------------------------------------------------------------------


def _device_types() -> list[str]:
    types = set()
    for r in tp.plugins.records():
        types.update(r.devices)
    types.discard("meta")
    return sorted(types)


_STAND_IN = "gpustandin"     # conftest's gpu_stand_in


def _params(include_cpu: bool):
    out = []
    for t in _device_types():
        if t == "cpu" and not include_cpu:
            continue
        marks = [pytest.mark.cuda] if t == "cuda" else []
        out.append(pytest.param(t, marks=marks, id=t))
    out.append(pytest.param(_STAND_IN, id=_STAND_IN))
    return out


@pytest.fixture(autouse=True)
def _stand_in_registered(request):
    """The GPU stand-in registered (once per module) for the tests that run on it."""
    spec = getattr(request.node, "callspec", None)
    if spec is not None and spec.params.get("device_type") == _STAND_IN:
        request.getfixturevalue("gpu_stand_in")


# Built-in ops whose kernels read a device array back on the host by design, with the reason
# (torch's CUDA kernels read the first three back as well; the others are checks torch does on
# the device, an asynchronous assert, at the price of a poisoned context).
_READS_BACK = {
    "nonzero": "the result's size", "masked_select": "the result's size",
    "masked_scatter_": "the count of the mask's elements",
    "gather": "index bounds", "scatter": "index bounds", "scatter_": "index bounds",
    # (CuPy's take, scatter and add.at wrap any index modulo the size: checked by the kernels)
    "index": "index bounds", "index_put_": "index bounds", "index_add": "index bounds",
    "scatter_add": "index bounds", "scatter_reduce": "index bounds",
    "floor_divide": "integer division by zero", "remainder": "integer division by zero",
    "_div_floor": "integer division by zero",
    "fmod": "integer division by zero", "searchsorted": "the sorter's bounds",
    "to_device": "a copy to the host (a sample moves the tensor to cpu)",
}


def _no_sync(dev, name):
    """Host reads refused while ``tp::name`` runs on the stand-in (a no-op elsewhere)."""
    if dev.type != _STAND_IN or name in _READS_BACK:
        return contextlib.nullcontext()
    return tp.backends.get(_STAND_IN).forbid_sync()


def _need(device_type: str) -> tp.device:
    if device_type == _STAND_IN:
        return tp.device(_STAND_IN)
    ok, why = tp.plugins.device_status(device_type)
    if not ok:
        pytest.skip(f"device {device_type!r} unavailable: {why}")
    return tp.device(device_type, 0) if device_type == "cuda" else tp.device(device_type)


_CPU = tp.device("cpu")

# -- moving arguments / comparing results -------------------------------------------------------------


def _move(x, dev):
    if isinstance(x, tp.Tensor):
        return x.detach().to(dev)
    if isinstance(x, list):
        return [_move(y, dev) for y in x]
    if isinstance(x, tuple):
        return tuple(_move(y, dev) for y in x)
    if isinstance(x, tp.device) and x.type == "cpu":
        return dev
    return x


def _tol(dtype):
    name = dtype.name
    if name == "float64":
        return dict(rtol=1e-9, atol=1e-12)
    if name == "float32":
        return dict(rtol=2e-5, atol=2e-6)
    if name == "float16":
        return dict(rtol=2e-3, atol=1e-3)
    return dict(rtol=0, atol=0)


def _same(got, want, dev, what, values=True):
    """``got`` (on ``dev``) agrees with ``want`` (cpu): structure, metadata and values."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), \
            f"{what}: got {type(got).__name__} of {len(got)}, cpu gave {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, dev, f"{what}[{i}]", values)
        return
    if not isinstance(want, tp.Tensor):
        assert got == want, f"{what}: {got!r} != cpu {want!r}"
        return
    assert isinstance(got, tp.Tensor), f"{what}: got {type(got).__name__}, cpu gave a Tensor"
    assert got.device == dev, f"{what}: result on {got.device}, expected {dev}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {got.shape} vs cpu {want.shape}"
    assert got.dtype is want.dtype, f"{what}: dtype {got.dtype} vs cpu {want.dtype}"
    if got.numel() > 1:
        assert [s for s, n in zip(got.stride(), got.shape) if n > 1] == \
            [s for s, n in zip(want.stride(), want.shape) if n > 1], \
            f"{what}: strides {got.stride()} vs cpu {want.stride()}"
    assert got.storage_offset() == want.storage_offset(), f"{what}: storage offset differs"
    if values:
        assert_close(got.detach().cpu(), want.detach(), msg=f"{what}: ", **_tol(want.dtype))


# -- every built-in op, every sample -----------------------------------------------------------------

# the core's sample table: the same calls the device plugins hand to `tensorplay check`
_NOT_DIFF = builtin_samples.NOT_DIFFERENTIABLE


def _samples(name, dev=_CPU):
    """The samples of ``tp::name`` made directly on ``dev`` (same seed: the same values as on
    cpu, so the cpu run is the reference)."""
    return builtin_samples.samples(name, dev)


def _random(op) -> bool:
    """Random or uninitialised outputs (torch's tags): compared by metadata, not values."""
    return bool(NONDETERMINISTIC_TAGS.intersection(op.tags))


def test_builtin_table_available():
    """The conformance run relies on the built-in sample table; it must cover every op."""
    assert set(builtin_samples.names()) == set(BUILTINS), \
        sorted(set(BUILTINS) ^ set(builtin_samples.names()))


def test_samples_are_made_on_the_requested_device_with_the_same_values():
    """Every tensor (and ``device=`` argument) of a sample lives on the device asked for, and
    the same seed gives the same values (Python's generator, then tensorplay.tensor: the device
    only decides where they are stored)."""
    for name in builtin_samples.names():
        a, b = _samples(name), _samples(name)
        for s, t in zip(a, b):
            for x, y in zip(list(s.args) + list(s.kwargs.values()),
                            list(t.args) + list(t.kwargs.values())):
                for u, v in zip(x if isinstance(x, list) else [x], y if isinstance(y, list) else [y]):
                    if isinstance(u, tp.Tensor):
                        assert u.device == _CPU
                        assert str(u.tolist()) == str(v.tolist()), name    # NaN-safe
                    elif isinstance(u, tp.device):
                        assert u == _CPU


def _builtin_cases():
    return [(n, i) for n in builtin_samples.names() for i in range(len(_samples(n)))]


@pytest.mark.parametrize("device_type", _params(include_cpu=False))
@pytest.mark.parametrize("name,i", _builtin_cases())
def test_builtin_op_matches_cpu(device_type, name, i):
    dev = _need(device_type)
    op = BUILTINS[name]
    s_cpu = _samples(name)[i]
    s_dev = _samples(name, dev)[i]
    args, kwargs = list(s_dev.args), s_dev.kwargs
    want = op(*s_cpu.args, **s_cpu.kwargs)
    with _no_sync(dev, name):
        got = op(*args, **kwargs)
    values = not _random(op)
    _same(got, want, dev, f"tp::{name} sample {i} on {dev}", values=values)
    if op.mutates_args:
        _same(args[0], s_cpu.args[0], dev, f"tp::{name} sample {i}: mutated input on {dev}")
    if name in ("rand",):
        v = got.cpu().numpy()
        assert ((v >= 0) & (v < 1)).all()
    if name == "randint":
        v = got.cpu().numpy()
        assert ((v >= s_dev.args[0]) & (v < s_dev.args[1])).all()


def _grad_cases():
    out = []
    for n in builtin_samples.names():
        if n in _NOT_DIFF or not BUILTINS[n].has_autograd:
            continue
        for i, s in enumerate(_samples(n)):
            if s.grad:
                out.append((n, i))
    return out


def _grads(op, s, dev):
    leaves, args = [], []
    for a in s.args:
        if isinstance(a, tp.Tensor) and a.dtype.is_floating_point:
            t = _move(a, dev).requires_grad_(True)
            leaves.append(t)
            args.append(t)
        elif isinstance(a, list):
            lst = []
            for x in a:
                if isinstance(x, tp.Tensor) and x.dtype.is_floating_point:
                    x = _move(x, dev).requires_grad_(True)
                    leaves.append(x)
                    lst.append(x)
                else:
                    lst.append(_move(x, dev))
            args.append(lst)
        else:
            args.append(_move(a, dev))
    kwargs = {k: _move(v, dev) for k, v in s.kwargs.items()}
    if op.mutates_args:
        args[0] = O.clone(args[0])
    out = op(*args, **kwargs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
            if isinstance(o, tp.Tensor) and o.dtype.is_floating_point]
    # a fixed, non-uniform weighting so every output element matters differently
    loss = None
    for o in outs:
        w = tp.arange(o.numel(), dtype=o.dtype, device=dev).reshape(o.shape) * 0.01 + 0.5
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    return tp.autograd.grad([loss], leaves, allow_unused=True)


@pytest.mark.parametrize("device_type", _params(include_cpu=False))
@pytest.mark.parametrize("name,i", _grad_cases())
def test_builtin_backward_matches_cpu(device_type, name, i):
    dev = _need(device_type)
    op = BUILTINS[name]
    want = _grads(op, _samples(name)[i], _CPU)
    got = _grads(op, _samples(name)[i], dev)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), f"tp::{name} sample {i}: gradient {k} presence differs"
        if g is not None:
            _same(g, w, dev, f"tp::{name} sample {i}: gradient {k} on {dev}")


# -- composite programs through the Tensor API -----------------------------------------------------

def _r(*shape, dtype=np.float32, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed + len(shape)).uniform(lo, hi, shape).astype(dtype)


def _setitem(tp_or_np, a, idx, mask):
    b = a.copy() if isinstance(a, np.ndarray) else a.clone()
    b[0] = 1.0
    b[:, 1] = -3.0
    b[1:3, ::2] = 7.0
    # index_put rows (a copy: torch refuses a value sharing the written tensor's memory)
    b[idx] = b[0].copy() if isinstance(b, np.ndarray) else b[0].clone()
    b[mask] = 0.5
    return b


def _inplace(_, a, b):
    c = a.copy() if isinstance(a, np.ndarray) else a.clone()
    c += b
    c *= 2.0
    c -= 1.0
    if isinstance(c, np.ndarray):
        c = np.clip(c, -1.5, 1.5)
        c = np.maximum(c, 0)
    else:
        c.clamp_(-1.5, 1.5)
        c.relu_()
    return c


# name -> (program(tp-or-np module, *inputs), inputs builder, numpy reference or None)
CASES = {
    "broadcast_arith": (
        lambda m, a, b: (a * b + a / (abs(b) + 1) - 3) ** 2,
        lambda: (_r(3, 1), _r(4, seed=1)), None),
    "int_float_promotion": (
        lambda m, x, y: (x * 2.5, x / y, x + y, x * 3),
        lambda: (np.arange(1, 7, dtype=np.int64).reshape(2, 3),
                 np.array([2, 3, 4], dtype=np.int64)),
        lambda m, x, y: ((x * 2.5).astype(np.float32), (x / y).astype(np.float32), x + y, x * 3)),
    "float16_chain": (
        lambda m, a, b: (m.exp(a) * b + a) if m is np else (a.exp() * b + a),
        lambda: (_r(4, 5, dtype=np.float16, lo=-1, hi=1), _r(5, dtype=np.float16, seed=3)), None),
    "unary_math": (
        lambda m, a: [f(a) for f in (
            lambda x: x.exp() if not isinstance(x, np.ndarray) else np.exp(x),
            lambda x: (abs(x) + 1).log() if not isinstance(x, np.ndarray) else np.log(abs(x) + 1),
            lambda x: (abs(x) + 0.1).sqrt() if not isinstance(x, np.ndarray) else np.sqrt(abs(x) + 0.1),
            lambda x: x.tanh() if not isinstance(x, np.ndarray) else np.tanh(x),
            lambda x: x.sigmoid() if not isinstance(x, np.ndarray) else 1 / (1 + np.exp(-x)),
            lambda x: x.sin() if not isinstance(x, np.ndarray) else np.sin(x),
            lambda x: x.cos() if not isinstance(x, np.ndarray) else np.cos(x),
            lambda x: x.relu() if not isinstance(x, np.ndarray) else np.maximum(x, 0),
            lambda x: -x,
            lambda x: abs(x))],
        lambda: (_r(5, 6, dtype=np.float64),), None),
    "comparisons_logic": (
        lambda m, a, b: ((a > 0) & (b < 0.5), (a >= b) | ~(a < 0), a == b * 0 + a, a != b),
        lambda: (_r(3, 4), _r(3, 4, seed=5)), None),
    "where_and_clamp": (
        lambda m, a, b: (m.where(a > 0, a, 0.0), m.where(a > b, a, b), a.clip(-0.5, 0.5)),
        lambda: (_r(3, 4), _r(4, seed=2)), None),
    "reductions": (
        lambda m, a: (a.sum(1), a.mean(0, keepdim=True), a.amax(), a.argmax(1), a.sum()),
        lambda: (_r(6, 7, dtype=np.float64),),
        lambda m, a: (a.sum(1), a.mean(0, keepdims=True), a.max(), a.argmax(1), a.sum())),
    "var_std_norm_max": (
        lambda m, a: (a.var(), a.std(1), a.norm(), a.max(1)[0], a.max(1)[1], a.min(0)[0]),
        lambda: (_r(5, 4, dtype=np.float64),),
        lambda m, a: (a.var(ddof=1), a.std(1, ddof=1), np.sqrt((a * a).sum()), a.max(1),
                      a.argmax(1), a.min(0))),
    "int_sum_promotes": (
        lambda m, x: (x.sum(), x.sum(0)),
        lambda: (np.arange(12, dtype=np.int32).reshape(3, 4),),
        lambda m, x: (x.sum(dtype=np.int64), x.sum(0, dtype=np.int64))),
    "matmul_shapes": (
        lambda m, a, b, v: (a @ b, b.t() @ v, a[0] @ b[:, 0]),
        lambda: (_r(2, 3, 4), _r(4, 5, seed=1), _r(4, seed=2)),
        lambda m, a, b, v: (a @ b, b.T @ v, a[0] @ b[:, 0])),
    "softmax_family": (
        lambda m, a: (tp.softmax(a, -1), tp.log_softmax(a, 0)),
        lambda: (_r(4, 6, dtype=np.float64),),
        lambda m, a: (np.exp(a) / np.exp(a).sum(-1, keepdims=True),
                      a - np.log(np.exp(a).sum(0, keepdims=True)))),
    "cat_stack": (
        lambda m, a, b: (m.concatenate([a, b], 0), m.stack([a, a], 1)) if m is np else
        (tp.cat([a, b], 0), tp.stack([a, a], 1)),
        lambda: (_r(2, 3), _r(4, 3, seed=1)), None),
    "views": (
        lambda m, a: (a[0].T.copy() if m is np else a[0].t().contiguous(),
                      a.transpose(1, 0, 2).reshape(-1) if m is np else a.permute(1, 0, 2).reshape(-1),
                      a[1:, ::2], a[..., None].repeat(3, -1) * 2 if m is np
                      else a[..., None].expand(2, 3, 4, 3) * 2,
                      a[0][None][0], a[:, 1, 1:3]),
        lambda: (_r(2, 3, 4),),
        None),
    "gather_and_mask": (
        lambda m, a, idx: (a[idx], a[:, idx[:2]], a[a > 0], a[idx][:, 0]),
        lambda: (_r(4, 5), np.array([3, 0, 3, 1], dtype=np.int64)), None),
    "setitem": (
        lambda m, a, idx, mask: _setitem(m, a, idx, mask),
        lambda: (_r(4, 5), np.array([3, 1], dtype=np.int64),
                 np.random.default_rng(9).uniform(size=(4, 5)) > 0.5), None),
    "inplace_chain": (_inplace, lambda: (_r(3, 4), _r(4, seed=4)), None),
    "dtype_casts": (
        lambda m, a: (a.astype(np.int32), a.astype(np.float64), (a > 0).astype(np.float32),
                      a.astype(np.float16)) if m is np else
        (a.to(tp.int32), a.double(), (a > 0).float(), a.half()),
        lambda: (_r(3, 4, lo=-5, hi=5),), None),
    "torch_habits": (
        lambda m, a, idx: (a.sort(1).values, a.argsort(0), a.max(1).values, a.max(1).indices,
                           a.min(0).indices, a.cumsum(1), a.prod(0), (a > 0).all(1),
                           (a > 1).any(0), a.gather(1, idx), a.round(), a.floor(), a.ceil(),
                           a.argmin(), a.isfinite(), tp.eye(3, 4, device=a.device),
                           tp.linspace(-1, 1, 5, device=a.device)),
        lambda: (_r(4, 5, dtype=np.float64), np.array([[0, 4], [1, 1], [3, 2], [0, 0]])),
        lambda m, a, idx: (np.sort(a, 1), np.argsort(a, 0, kind="stable"), a.max(1), a.argmax(1),
                           a.argmin(0), np.cumsum(a, 1), a.prod(0), (a > 0).all(1),
                           (a > 1).any(0), np.take_along_axis(a, idx, 1), np.round(a),
                           np.floor(a), np.ceil(a), a.argmin(), np.isfinite(a),
                           np.eye(3, 4, dtype=np.float32),
                           np.linspace(-1, 1, 5).astype(np.float32))),
    "pow_family": (
        lambda m, a: (abs(a) ** 1.5, 2.0 ** a, a ** 2, m.maximum(a, 0.25) if m is np
                      else a.maximum(tp.full_like(a, 0.25))),
        lambda: (_r(3, 4, dtype=np.float64),), None),
}


def _np_inputs(name):
    return CASES[name][1]()


def _run(name, dev):
    prog = CASES[name][0]
    ins = [tp.tensor(x, device=dev) for x in _np_inputs(name)]
    return prog(tp, *ins)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


@pytest.mark.parametrize("device_type", _params(include_cpu=True))
@pytest.mark.parametrize("name", sorted(CASES))
def test_case(device_type, name):
    dev = _need(device_type)
    got = _run(name, dev)
    if dev.type == "cpu":
        # cpu: against an independent NumPy program (the reference, or the program run on numpy)
        ref = CASES[name][2] or CASES[name][0]
        want = _as_list(ref(np, *_np_inputs(name)))
        got_l = _as_list(got)
        assert len(got_l) == len(want)
        for k, (g, w) in enumerate(zip(got_l, want)):
            w = np.asarray(w)
            assert tuple(g.shape) == w.shape, f"{name}[{k}]: shape {g.shape} vs numpy {w.shape}"
            assert g.dtype.name == w.dtype.name, f"{name}[{k}]: dtype {g.dtype} vs numpy {w.dtype}"
            assert_close(g, tp.tensor(w), msg=f"{name}[{k}] vs numpy: ", **_tol(g.dtype))
    else:
        _same(got, _run(name, _CPU), dev, f"{name} on {dev}")


def test_cases_have_a_numpy_check_on_cpu():
    """Every case is checked against NumPy on cpu: a case whose program cannot run on numpy must
    carry an explicit reference (otherwise its cpu parameter could not fail)."""
    for name, (prog, build, ref) in CASES.items():
        if ref is None:
            prog(np, *build())   # raises if the program is tensorplay-only


# -- gradients on the device itself ------------------------------------------------------------------

GRAD_CASES = {
    "mlp": (lambda x, w1, w2: ((x @ w1).tanh() @ w2).sigmoid().sum(),
            lambda: (_r(3, 4, dtype=np.float64), _r(4, 5, dtype=np.float64, seed=1),
                     _r(5, 2, dtype=np.float64, seed=2))),
    "cross_entropy": (lambda x: -(tp.log_softmax(x, -1)[:, 1]).mean(),
                      lambda: (_r(4, 3, dtype=np.float64),)),
    "gather_repeat": (lambda x: (x[tp.tensor([0, 2, 2, 1], device=x.device)] ** 2).sum(),
                      lambda: (_r(3, 4, dtype=np.float64),)),
    "mask_select": (lambda x: (x[x > 0] * 3).sum(), lambda: (_r(3, 4, dtype=np.float64),)),
    "broadcast_views": (lambda x, y: ((x.t() * y).reshape(-1)[::2] / (y.abs() + 1).sum()).sum(),
                        lambda: (_r(3, 4, dtype=np.float64), _r(3, dtype=np.float64, seed=7))),
    "reductions": (lambda x: x.amax(1).sum() + x.norm() + x.var(0).sum(),
                   lambda: (_r(4, 5, dtype=np.float64),)),
    "cat_stack_where": (lambda x, y: tp.where(x > 0, tp.cat([x, y], 0)[:3], x * 2).sum() +
                        tp.stack([x, x * y[:1]], 0).exp().mean(),
                        lambda: (_r(3, 4, dtype=np.float64), _r(2, 4, dtype=np.float64, seed=3))),
}


@pytest.mark.parametrize("device_type", _params(include_cpu=True))
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck_on_device(device_type, name):
    dev = _need(device_type)
    fn, build = GRAD_CASES[name]
    ins = tuple(tp.tensor(x, device=dev, requires_grad=True) for x in build())
    assert tp.autograd.gradcheck(fn, ins, eps=1e-6, atol=1e-6, rtol=1e-4), name
    grads = tp.autograd.grad([fn(*ins)], list(ins))
    assert all(g.device == dev for g in grads)
    if dev.type != "cpu":
        cins = tuple(tp.tensor(x, requires_grad=True) for x in build())
        want = tp.autograd.grad([fn(*cins)], list(cins))
        for k, (g, w) in enumerate(zip(grads, want)):
            _same(g, w, dev, f"{name}: gradient {k}")
