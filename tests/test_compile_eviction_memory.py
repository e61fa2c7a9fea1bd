"""A graph ``tensorplay.compile`` evicts from its cache (or drops on ``reset()``) is freed at once,
by reference counting, not only when the cyclic garbage collector runs: a graph holds its constants
(closed-over tensors, on a GPU device memory too) and its generated code, and with the collector
idle (or late: evicted graphs reach its oldest generation) they stayed alive -- 299 graphs of a
function recaptured per size, where the cache keeps 64."""

from __future__ import annotations

import gc
import weakref

import pytest

import tensorplay as tp


@pytest.fixture
def no_collector():
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _per_size(x):
    # reads a size as a Python value: one graph per input size
    return (x - 1).tanh() * 3 + x.shape[0]


def test_evicted_graphs_are_freed_without_the_cyclic_collector(no_collector):
    w = tp.randn(1)                        # a closed-over constant: every graph holds it
    c = tp.compile(lambda x: _per_size(x) * w)
    refs = []
    for n in range(1, 150):
        c(tp.randn(n))
        refs.append(weakref.ref(c.graph))
    alive = sum(r() is not None for r in refs)
    assert c.cache_size == 64
    assert alive <= c.cache_size, f"{alive} graphs alive, the cache holds {c.cache_size}"
    # and every graph still cached still runs
    x = tp.randn(149)
    assert tp.allclose(c(x), _per_size(x) * w)


def test_reset_frees_the_graphs(no_collector):
    c = tp.compile(_per_size)
    refs = []
    for n in (3, 4, 5):
        c(tp.randn(n))
        refs.append(weakref.ref(c.graph))
    c.reset()
    assert [r() for r in refs] == [None, None, None]


def test_a_dropped_compiled_function_frees_its_graphs(no_collector):
    c = tp.compile(_per_size)
    c(tp.randn(3))
    r = weakref.ref(c.graph)
    del c
    assert r() is None


def _chain(x):
    a = x * 2.0 + 1.0                      # fused on cpu (a chain of elementwise ops)
    return (a - x).relu().tanh() * x.shape[0]


def _reductions(x):
    m = x.amax(-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True) + x.shape[-1]


def _lists(x):
    a, b = x.split([1, x.shape[0] - 1])    # an op returning a list of tensors
    return (a.sum() + b.sum()) * 2.0


@pytest.mark.parametrize("fn, make", [
    (_chain, lambda n: tp.randn(n)),
    (_reductions, lambda n: tp.randn(3, n)),
    (_lists, lambda n: tp.randn(n + 1)),
    (_chain, lambda n: tp.randn(n, requires_grad=True)),
], ids=["fused chain", "reductions", "list outputs", "requires grad"])
def test_no_graph_outlives_its_cache_entry(no_collector, fn, make):
    c = tp.compile(fn)
    refs = []
    for n in range(2, 80):
        out = c(make(n))
        if out.requires_grad:
            out.sum().backward()
        refs.append(weakref.ref(c.graph))
    del out
    assert sum(r() is not None for r in refs) <= c.cache_size
    c.reset()
    assert all(r() is None for r in refs)
