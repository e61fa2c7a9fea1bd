"""tensorplay.compile with data-dependent output sizes (session 62).

Boolean-mask selection (``x[x > 0]``, ``masked_select``), ``unique``/``unique_consecutive``,
``nonzero(as_tuple=True)``, ``argwhere`` compile (their fakes give a data-dependent size, as
``nonzero``'s), the graph reused for another number of selected elements; ops whose size
cannot be stated run eagerly (a graph break, the reason in ``graph_skips``), never an error
eager does not raise; two data-dependent sizes combined (``a + b``, ``a @ b``) are assumed
equal while capturing and checked when the graph runs (eager's error when they differ), and
no message shows the placeholder numbers standing for them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library
from tensorplay.errors import GraphBreak

# two inputs of one shape selecting different numbers of elements: one graph serves both
_XS = ([1.0, -2.0, 3.0, 0.5, -1.0, 3.0, 3.0, -5.0, 8.0], [-1.0, 2.0, 2.0, -4.0, 0.0, 7.0, 7.0, 7.0,
                                                          1.0])
_OTHER = [4.0, -1.0, 4.0, 2.0, 0.0, 2.0]     # another shape: the results are still eager's

_PLACEHOLDER = re.compile(r"\d{15,}")   # a placeholder of a data-dependent size (>= 2**62)


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# the patterns users write; each compiles into one graph (fullgraph=True: no break)
CAPTURED = {
    "x[x > 0].sum()": lambda x: x[x > 0].sum(),
    "x[x > 0] * 2": lambda x: x[x > 0] * 2,
    "masked_select(x, x > 0) * 2": lambda x: tp.masked_select(x, x > 0) * 2,
    "x.masked_select(2-D mask)": lambda x: x.reshape(-1, 1).expand(-1, 2).masked_select(
        (x > 0).reshape(-1, 1)) + 1,
    "x[mask 2-D]": lambda x: x.reshape(-1, 1).expand(-1, 3)[(x > 0).reshape(-1, 1).expand(-1, 3)],
    "unique(x).sum()": lambda x: tp.unique(x).sum(),
    "unique(x) * 3": lambda x: tp.unique(x) * 3,
    "unique(x, return_counts)": lambda x: tp.unique(x, return_counts=True),
    "unique(x, return_inverse)": lambda x: tp.unique(x, return_inverse=True),
    "unique(x, inverse, counts)": lambda x: tp.unique(x, return_inverse=True, return_counts=True),
    "unique values * counts": lambda x: (lambda u, c: u * c)(*tp.unique(x, return_counts=True)),
    "x.unique(sorted=False)": lambda x: x.unique(sorted=False) + 0,
    "unique_consecutive(x)": lambda x: tp.unique_consecutive(x) - 1,
    "unique_consecutive(x, counts, inverse)": lambda x: tp.unique_consecutive(
        x, return_inverse=True, return_counts=True),
    "unique(rows, dim=0, inverse, counts)": lambda x: tp.unique(
        x.reshape(-1, 3) > 0, dim=0, return_inverse=True, return_counts=True),
    "unique_consecutive(rows, dim=0, counts)": lambda x: tp.unique_consecutive(
        x.reshape(-1, 3) > 0, dim=0, return_counts=True),
    "unique(x[x > 0], return_counts)": lambda x: tp.unique(x[x > 0], return_counts=True),
    "nonzero(as_tuple=True)": lambda x: tp.nonzero(x > 0, as_tuple=True)[0] * 2,
    "argwhere(x).float().mean()": lambda x: tp.argwhere(x > 0).float().mean(),
    "x[nonzero(x > 0)[:, 0]]": lambda x: x[(x > 0).nonzero()[:, 0]].sum(),
}


@pytest.mark.parametrize("name", list(CAPTURED))
def test_data_dependent_patterns_compile_into_one_graph(name):
    fn = CAPTURED[name]
    f = tp.compile(fn, fullgraph=True)
    for values in _XS:
        x = tp.tensor(values)
        _same(f(x), fn(x))
    assert f.captures == 1 and not f.graph_skips
    _same(f(tp.tensor(_OTHER)), fn(tp.tensor(_OTHER)))


@pytest.mark.parametrize("values", _XS)
def test_compiled_results_match_numpy(values):
    a = np.asarray(values, dtype=np.float32)
    x = tp.tensor(values)
    u, inv, cnt = np.unique(a, return_inverse=True, return_counts=True)
    got = tp.compile(lambda t: (t[t > 0].sum(), tp.unique(t, return_inverse=True,
                                                            return_counts=True)))(x)
    np.testing.assert_allclose(got[0].item(), a[a > 0].sum(), rtol=1e-6)
    np.testing.assert_array_equal(got[1][0].numpy(), u)
    np.testing.assert_array_equal(got[1][1].numpy(), inv.reshape(a.shape))
    np.testing.assert_array_equal(got[1][2].numpy(), cnt)


def test_nothing_selected_and_everything_selected():
    f = tp.compile(lambda x: (x[x > 0] * 2, tp.unique(x[x > 0], return_counts=True)))
    for values in ([-1.0, -2.0], [1.0, 2.0, 2.0], []):
        x = tp.tensor(values)
        _same(f(x), (x[x > 0] * 2, tp.unique(x[x > 0], return_counts=True)))


def test_masked_select_keeps_eager_errors_under_compile():
    # errors eager raises without the values stay eager's under compile
    f = tp.compile(lambda x, m: tp.masked_select(x, m))
    with pytest.raises(RuntimeError, match="BoolTensor"):
        f(tp.ones(3), tp.ones(3))
    with pytest.raises(RuntimeError) as eager:
        tp.masked_select(tp.ones(3), tp.ones(4) > 0)
    with pytest.raises(RuntimeError) as compiled:
        f(tp.ones(3), tp.ones(4) > 0)
    assert str(compiled.value) == str(eager.value)


@pytest.mark.parametrize("fn", [lambda x: x[x > 0].sum(dim=3),
                                lambda x: tp.cat([x[x > 0], x.int()]) + "a"])
def test_errors_not_decided_by_the_size_stay_eagers(fn):
    x = tp.tensor(_XS[0])
    with pytest.raises(Exception) as eager:
        fn(x)
    for fullgraph in (False, True):
        with pytest.raises(type(eager.value)) as compiled:
            tp.compile(fn, fullgraph=fullgraph)(x)
        assert not isinstance(compiled.value, GraphBreak)
        assert not _PLACEHOLDER.search(str(compiled.value))


def test_grad_through_boolean_mask_under_compile():
    def fn(x):
        return (x[x > 0] ** 2).sum()
    f = tp.compile(fn)
    for values in _XS:
        x = tp.tensor(values, requires_grad=True)
        xe = tp.tensor(values, requires_grad=True)
        f(x).backward()
        fn(xe).backward()
        np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy())
    assert not f.graph_skips


# -- sizes needed as numbers: a clean graph break (or a capture), eager's result ---------------

def _put(x, mask, v):
    y = x.clone()
    y[mask] = v
    return y


MAY_BREAK = {
    "repeat_interleave(x, tensor repeats)": lambda x: tp.repeat_interleave(
        x, (x > 0).long() + 1).sum(),
    "bincount": lambda x: tp.bincount((x > 0).long()).float() * 2,
    "zeros(x[x > 0].shape[0])": lambda x: tp.zeros(x[x > 0].shape[0]) + 1,
    "if len(x[x > 0]) > 2": lambda x: x + 1 if len(x[x > 0]) > 2 else x - 1,
    "rows[row mask]": lambda x: x.reshape(3, 3)[x.reshape(3, 3)[:, 0] > 0].sum(0),
    "x[mask] = x[mask] * 2": lambda x: _put(x, x > 0, x[x > 0] * 2),
    "stack of two selections": lambda x: tp.stack([x[x > 0], x[x < 0]]).sum(0),
    "x[x > 0].view(2, 3)": lambda x: x[x > 0].view(2, 3),
    # comparing two data-dependent shapes: the branch eager takes, never the placeholders'
    "a.shape == b.shape": lambda x: (lambda a, b: a + b if a.shape == b.shape else a * 0)(
        x[x > 0], x[x > 1]),
    "a.shape != (4,)": lambda x: x[x > 0] * 2 if x[x > 0].shape != (4,) else x[x > 0],
    "unique(x[x > 0], return_inverse)": lambda x: tp.unique(x[x > 0], return_inverse=True),
}


@pytest.mark.parametrize("name", list(MAY_BREAK))
def test_sizes_needed_as_numbers_give_eager_results(name):
    fn = MAY_BREAK[name]
    f = tp.compile(fn)
    for values in _XS + ([1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0, 9.0],
                         [2.0, -1.0, 3.0, 4.0, -5.0, 6.0, -7.0, -8.0, -9.0]):
        x = tp.tensor(values)
        try:
            want = fn(x)
        except RuntimeError as e:         # (stack, view: eager refuses these sizes)
            with pytest.raises(type(e)):
                f(x)
            continue
        _same(f(x), want)
    for r in f.graph_skips.values():
        assert r.startswith("runs eagerly: ") and not _PLACEHOLDER.search(r)


def test_scalar_put_through_a_mask_is_captured():
    fn = lambda x: _put(x, x > 0, 0.0) * 2      # noqa: E731
    f = tp.compile(fn, fullgraph=True)
    for values in _XS:
        _same(f(tp.tensor(values)), fn(tp.tensor(values)))
    assert f.captures == 1


def test_reading_a_data_dependent_size_with_fullgraph_names_it():
    f = tp.compile(lambda x: tp.zeros(x[x > 0].shape[0]), fullgraph=True)
    with pytest.raises(GraphBreak, match=r"data-dependent") as e:
        f(tp.tensor([1.0, -1.0, 2.0]))
    assert "u" in str(e.value) and not _PLACEHOLDER.search(str(e.value))


# -- two data-dependent sizes combined -------------------------------------------------------

def _custom_nonzero(name):
    @library.custom_op(f"dyn62::{name}", mutates_args=())
    def nz(x: tp.Tensor) -> tp.Tensor:
        return tp.tensor(np.stack(np.nonzero(x.numpy(force=True)), axis=1), device=x.device)

    @nz.register_fake
    def _(x):
        return x.new_empty([library.get_ctx().new_dynamic_size(), x.dim()], dtype=tp.int64)
    return nz


def test_two_data_dependent_sizes_combine_and_are_checked_when_run():
    nz = _custom_nonzero("nz_two")
    fns = {"y.t() @ y": lambda t: nz(t).t() @ nz(t),
           "y + y": lambda t: nz(t) + nz(t),
           "masked_select + masked_select": lambda t: t[t > 0] + tp.masked_select(t, t != 0),
           "nonzero * unique": lambda t: nz(t)[:, 0] * tp.unique(t[t != 0])}
    for name, fn in fns.items():
        f = tp.compile(fn, fullgraph=True)
        for values in ([0, 1, 2, 3, 4, 0], [5, 0, 6, 0, 0, 0]):
            x = tp.tensor(values)
            _same(f(x), fn(x))
        assert f.captures == 1, name
    # sizes that differ when the graph runs: eager's error, no placeholder in it
    g = tp.compile(lambda t: t[t > 0] + t[t > 1], fullgraph=True)
    _same(g(tp.tensor([2, 3])), tp.tensor([4, 6]))
    with pytest.raises(RuntimeError) as e:
        g(tp.tensor([1, 2, 3]))
    with pytest.raises(type(e.value)):
        (lambda t: t[t > 0] + t[t > 1])(tp.tensor([1, 2, 3]))
    assert not _PLACEHOLDER.search(str(e.value))
    h = tp.compile(lambda t: nz(t).t() @ nz(t > 1))
    with pytest.raises(RuntimeError) as e:
        h(tp.tensor([1, 2, 3]))
    assert not _PLACEHOLDER.search(str(e.value))


def test_data_dependent_size_against_a_static_one():
    # (u0,) + (3,): assumed to match while capturing, eager's result or eager's error when run
    fn = lambda t, w: t[t > 0] + w          # noqa: E731
    f = tp.compile(fn)
    w = tp.tensor([10.0, 20.0, 30.0])
    _same(f(tp.tensor([1.0, -1.0, 2.0, 3.0]), w), fn(tp.tensor([1.0, -1.0, 2.0, 3.0]), w))
    _same(f(tp.tensor([1.0, -1.0]), w), fn(tp.tensor([1.0, -1.0]), w))   # (1,) broadcasts
    with pytest.raises(RuntimeError) as e:
        f(tp.tensor([1.0, 2.0]), w)
    with pytest.raises(type(e.value)):
        fn(tp.tensor([1.0, 2.0]), w)
    assert not _PLACEHOLDER.search(str(e.value))
