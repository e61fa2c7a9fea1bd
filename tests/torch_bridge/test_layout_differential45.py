"""Layouts against torch itself (session 45). Companion of tests/test_layout45.py (torch-free).

1. ``*_like`` (empty, zeros, ones, full, rand, randn, randint), ``Tensor.clone``
   with every ``memory_format`` (default, preserve, contiguous, channels_last, channels_last_3d)
   on dense inputs (row-major, transposed, permuted, channels-last, size-1 dims with odd
   strides, empty) and non-dense ones (sliced, expanded, sliced and permuted, offset): the same
   strides as torch, or the same error (type and words).
2. ``Tensor.contiguous(memory_format=)``, ``Tensor.is_contiguous(memory_format=)``,
   ``empty(..., memory_format=)``: same results / errors; clone's values and gradients.
3. Elementwise results of non-row-major inputs: torch's TensorIterator layout (session 46).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import numpy as np  # noqa: E402

import tensorplay as tp  # noqa: E402


def _fmt(L, name):
    return None if name is None else getattr(L, name)


INPUTS = {
    "contiguous": lambda L: L.zeros(2, 3, 4),
    "transposed": lambda L: L.zeros(4, 3, 7).transpose(0, -1),
    "t2d": lambda L: L.zeros(3, 5).t(),
    "permuted4d": lambda L: L.zeros(2, 3, 4, 5).permute(0, 2, 3, 1),
    "channels_last4d": lambda L: L.zeros(2, 4, 5, 3).permute(0, 3, 1, 2),
    "channels_last5d": lambda L: L.zeros(2, 4, 5, 6, 3).permute(0, 4, 1, 2, 3),
    "size1_odd": lambda L: L.zeros(3, 1, 4).as_strided((3, 1, 4), (4, 99, 1)),
    "size1_perm": lambda L: L.zeros(4, 1, 3).permute(2, 1, 0),
    "empty_t": lambda L: L.zeros(0, 3).t(),
    "sliced": lambda L: L.zeros(2, 3, 4)[:, :, ::2],
    "sliced_t": lambda L: L.zeros(4, 6)[:, ::2].t(),
    "sliced_perm": lambda L: L.zeros(2, 3, 4, 5)[:, :, :, ::2].permute(0, 2, 3, 1),
    "expanded": lambda L: L.zeros(3, 1).expand(3, 4),
    "expanded_t": lambda L: L.zeros(1, 3).expand(4, 3).t(),
    "offset_t": lambda L: L.zeros(10)[2:].view(2, 4).t(),
    "scalar": lambda L: L.zeros(()),
    "equal_strides": lambda L: L.zeros(1, 3, 1).expand(2, 3, 2).permute(2, 1, 0),
}

LIKES = {
    "empty_like": lambda L, t, **k: L.empty_like(t, **k),
    "zeros_like": lambda L, t, **k: L.zeros_like(t, **k),
    "ones_like": lambda L, t, **k: L.ones_like(t, **k),
    "full_like": lambda L, t, **k: L.full_like(t, 2.0, **k),
    "rand_like": lambda L, t, **k: L.rand_like(t, **k),
    "randn_like": lambda L, t, **k: L.randn_like(t, **k),
    "randint_like": lambda L, t, **k: L.randint_like(t, 3, 9, **k),
    "Tensor.clone": lambda L, t, **k: t.clone(**k),
}

FORMATS = [None, "preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]


def _outcome(fn):
    try:
        r = fn()
    except (RuntimeError, TypeError) as e:
        return ("raise", type(e).__name__, str(e).split("\n")[0])
    return ("ok", tuple(r.shape), tuple(r.stride()))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fn", list(LIKES))
@pytest.mark.parametrize("inp", list(INPUTS))
def test_like_and_clone_layouts_match_torch(inp, fn, fmt):
    def run(L):
        t = INPUTS[inp](L)
        kw = {} if fmt is None else {"memory_format": _fmt(L, fmt)}
        return _outcome(lambda: LIKES[fn](L, t, **kw))
    assert run(tp) == run(torch)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("inp", list(INPUTS))
def test_contiguous_and_is_contiguous_match_torch(inp, fmt):
    def run(L):
        t = INPUTS[inp](L)
        kw = {} if fmt is None else {"memory_format": _fmt(L, fmt)}
        c = _outcome(lambda: t.contiguous(**kw))
        same = None if c[0] != "ok" else (t.contiguous(**kw) is t)
        return c, same, t.is_contiguous(**kw)
    assert run(tp) == run(torch)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4, 5), (2, 3, 4, 5, 6), (2, 1, 1, 1), (2, 0, 3, 4)])
def test_empty_memory_format_matches_torch(shape, fmt):
    def run(L):
        kw = {} if fmt is None else {"memory_format": _fmt(L, fmt)}
        return _outcome(lambda: L.empty(*shape, **kw))
    assert run(tp) == run(torch)


@pytest.mark.parametrize("fn", ["new_empty", "new_zeros", "new_ones", "new_full"])
@pytest.mark.parametrize("inp", ["transposed", "permuted4d", "sliced_perm"])
def test_new_factories_match_torch(inp, fn):
    def run(L):
        t = INPUTS[inp](L)
        args = (tuple(t.shape),) + ((1.5,) if fn == "new_full" else ())
        ok = _outcome(lambda: getattr(t, fn)(*args))
        bad = _outcome(lambda: getattr(t, fn)(*args, memory_format=L.preserve_format))
        return ok, bad[:2]
    assert run(tp) == run(torch)


def test_memory_format_objects_match_torch():
    for name in ["preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]:
        assert repr(getattr(tp, name)) == repr(getattr(torch, name)).replace("torch", "tensorplay")
        assert isinstance(getattr(tp, name), tp.memory_format)


@pytest.mark.parametrize("fmt", FORMATS[:4])
@pytest.mark.parametrize("inp", ["transposed", "permuted4d", "sliced_perm", "expanded_t"])
def test_clone_values_and_gradients_match_torch(inp, fmt):
    def run(L):
        t = INPUTS[inp](L)                                  # the layout under test
        shape = tuple(t.shape)
        base = L.tensor(np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape))
        x = L.empty_like(t, dtype=L.float64).copy_(base).requires_grad_()
        kw = {} if fmt is None else {"memory_format": _fmt(L, fmt)}
        try:
            c = x.clone(**kw)
        except RuntimeError as e:
            return "raise", str(e)
        w = L.tensor(np.linspace(0.5, 3.0, c.numel()).reshape(tuple(c.shape)))
        (c * w).sum().backward()
        return tuple(c.stride()), c.detach().numpy().tolist(), x.grad.numpy().tolist()
    assert run(tp) == run(torch)


ELEMENTWISE = {
    "t*2": lambda L, x, y: x.t() * 2,
    "t+t": lambda L, x, y: x.t() + y.t(),
    "exp(t)": lambda L, x, y: L.exp(x.t()),
    "t+ones(4,1)": lambda L, x, y: x.t() + L.ones(4, 1),
    "t.to(float64)": lambda L, x, y: x.t().to(L.float64),
}


@pytest.mark.parametrize("case", list(ELEMENTWISE))
def test_elementwise_result_layout_matches_torch(case):
    """Session 46: torch's TensorIterator rule (``_kernels.elementwise.iter_strides``); the
    wider differential is tests/torch_bridge/test_layout_differential46.py."""
    def run(L):
        x = L.arange(12.0).reshape(3, 4)
        y = x + 1
        r = ELEMENTWISE[case](L, x, y)
        v = r.numpy() if L is tp else r.detach().numpy()
        return tuple(r.stride()), [float(f"{e:.6g}") for e in v.ravel().tolist()]
    assert run(tp) == run(torch)


@pytest.mark.parametrize("case", ["c+t", "sliced*2", "sum0"])
def test_elementwise_layouts_that_already_agree(case):
    """The neighbours that agree: a row-major first operand decides, a sliced input's result is
    row-major, a reduction's result is row-major."""
    def run(L):
        x = L.arange(12.0).reshape(3, 4)
        r = {"c+t": lambda: (x + 1).t().contiguous() + x.t(),
             "sliced*2": lambda: x[:, ::2] * 2,
             "sum0": lambda: L.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1).sum(0)}[case]()
        return tuple(r.stride()), r.numpy().tolist()
    assert run(tp) == run(torch)
