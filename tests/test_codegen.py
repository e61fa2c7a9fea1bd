"""Generated functions are compiled in one place (``tensorplay._codegen``): each gets a stable
file name naming the generator and the op/graph, and its source is registered with linecache, so
a traceback through generated code shows the generated line (not a blank)."""

from __future__ import annotations

import linecache
import traceback

import pytest
import tensorplay as tp
from tensorplay import library

pytestmark = pytest.mark.usefixtures("cpu")


class _Boom(Exception):
    pass


def _raise(*args, **kwargs):
    raise _Boom("kernel failed")


def _frames(exc):
    return [(f.filename, f.line) for f in traceback.extract_tb(exc.__traceback__)]


def test_dispatch_frame_shows_the_generated_line():
    with library.Library("cgtb", "FRAGMENT") as lib:
        boom = library.define("cgtb::boom(Tensor x, float scale=2.0) -> Tensor", lib=lib)
        boom.register_kernel(None, _raise)
        with pytest.raises(_Boom) as ei:
            boom(tp.ones(2))
    frames = _frames(ei.value)
    gen = [(fn, line) for fn, line in frames if fn.startswith("<tensorplay dispatch cgtb::boom")]
    assert gen, frames
    assert "__f(x, scale)" in gen[0][1]   # the generated call, readable in the traceback


def test_autograd_and_compile_frames_show_their_lines():
    with library.Library("cgtb2", "FRAGMENT") as lib:
        f = library.define("cgtb2::f(Tensor x) -> Tensor", lib=lib)
        f.register_kernel(None, _raise)
        f.register_fake(lambda x: x.new_empty(x.shape))
        f.register_autograd(lambda ctx, g: g)
        with pytest.raises(_Boom) as ei:
            f(tp.ones(2, requires_grad=True))
        frames = _frames(ei.value)
        ag = [line for fn, line in frames if fn.startswith("<tensorplay autograd cgtb2::f")]
        assert ag and "__kern(x)" in ag[0], frames

        g = tp.compile(lambda x: f(x * 2.0))
        with pytest.raises(_Boom) as ei:
            g(tp.ones(2))
        frames = _frames(ei.value)
        run = [line for fn, line in frames if fn.startswith("<tensorplay.compile")]
        assert run and any("op" in line for line in run), frames


def test_an_op_defined_again_gets_a_file_name_per_text():
    # redefined while the first definition is alive (``g`` still holds it): another schema is
    # another text and gets its own file name; the same schema again is the same text, shared
    names, texts = [], []
    for schema in ("(Tensor x) -> Tensor", "(Tensor x, float s=1.0) -> Tensor",
                   "(Tensor x) -> Tensor"):
        with library.Library("cgtb3", "FRAGMENT") as lib:
            g = library.define("cgtb3::g" + schema, lib=lib)
            g.register_kernel(None, _raise)
            with pytest.raises(_Boom) as ei:
                g(tp.ones(1))
            fn = [fn for fn, _ in _frames(ei.value) if fn.startswith("<tensorplay dispatch cgtb3::g")]
            names += fn
            texts += ["".join(linecache.cache[n][2]) for n in fn]
    assert len(names) == 3 and names[0] != names[1] and texts[0] != texts[1], names
    assert names[2] in (names[0], "<tensorplay dispatch cgtb3::g>") and texts[2] == texts[0], names


def _no_recompile_limit(monkeypatch):
    """Lift ``tensorplay.compile``'s recompile limit (8 graphs for calls differing only in
    Python values; past it such calls run eagerly): the tests below need a capture per value."""
    import importlib
    monkeypatch.setattr(importlib.import_module("tensorplay.compile"), "RECOMPILE_LIMIT", 10**9)


def test_recaptures_of_one_graph_share_their_compiled_text(monkeypatch):
    # A value the function reads changes on every call: each call is a cache miss and a new
    # capture of the same graph (the value is bound by name, never pasted into the text), while
    # the compile cache keeps the 64 newest graphs alive. Identical generated text is one file
    # name in tracebacks and in linecache, compiled once: numbering the copies apart made every
    # capture compile its five functions again, and grew the set of file names (CI on 3.13).
    # (The recompile limit, 8 graphs for changed values, is lifted to keep capturing here.)
    _no_recompile_limit(monkeypatch)
    scale = [1.0]

    def cg_shared(x):
        return x * scale[0] + 1

    compiled = tp.compile(cg_shared)
    x = tp.ones(3)
    for i in range(200):
        scale[0] = i + 0.5
        assert compiled(x).tolist() == [i + 1.5] * 3
    assert compiled.cache_size == 64 and compiled.captures == 200
    names = {n for n in linecache.cache
             if n.startswith("<tensorplay.compile") and ("cg_shared" in n or "chain" in n)}
    mine = {n for n in names if "cg_shared" in n}
    # the checked and unchecked runs (same text: one name) and the guards
    assert 1 <= len(mine) <= 3, sorted(mine)


def test_different_text_under_one_name_gets_its_own_file_name():
    # two live functions of one generator and name whose texts differ: each traceback line
    # must map to its own text
    def f(x):
        return x + 1

    def g(x):
        return x * 2 - 1

    f.__name__ = g.__name__ = "cg_same_name"
    cf, cg = tp.compile(f), tp.compile(g)
    assert cf(tp.ones(2)).tolist() == [2.0, 2.0] and cg(tp.ones(2)).tolist() == [1.0, 1.0]
    names = {n for n in linecache.cache if n.startswith("<tensorplay.compile cg_same_name")}
    texts = {"".join(linecache.cache[n][2]) for n in names}
    assert len(texts) == len(names) >= 2, names


def test_generating_while_the_collector_frees_generated_functions(monkeypatch):
    # Evicted graphs are freed by the cyclic collector, which runs inside any allocation --
    # including those made while a new function is being generated: their functions'
    # finalizers then run in the middle of the generator's bookkeeping. A collection at nearly
    # every allocation makes that happen on every capture.
    import gc

    _no_recompile_limit(monkeypatch)

    scale = [1.0]

    def cg_collected(x):
        return x * scale[0] - 1

    compiled = tp.compile(cg_collected)
    x = tp.ones(2)
    old = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        for i in range(150):
            scale[0] = i + 0.5
            assert compiled(x).tolist() == [i - 0.5] * 2
    finally:
        gc.set_threshold(*old)
    del compiled
    gc.collect()
    left = [n for n in linecache.cache if "cg_collected" in n]
    assert not left, left


def test_library_churn_under_frequent_collections():
    # ops defined and closed while the collector frees the previous ones' functions (the
    # stress test's library threads met a finalizer changing the tables mid-bookkeeping)
    import gc

    from tensorplay.library import Library

    x = tp.ones(2)
    old = gc.get_threshold()
    gc.set_threshold(1, 1, 1)
    try:
        for i in range(400):
            with Library("cgchurn", "DEF") as lib:
                lib.define("h(Tensor x) -> Tensor")
                lib.impl("h", lambda x: x + 1, "CompositeExplicitAutograd")
                assert tp.ops.cgchurn.h(x).tolist() == [2.0, 2.0]
                g = tp.compile(lambda x: tp.ops.cgchurn.h(x) * 2)
                assert g(x).tolist() == [4.0, 4.0]
    finally:
        gc.set_threshold(*old)
    del g
    gc.collect()
    assert not [n for n in linecache.cache if "cgchurn" in n]


def test_a_collection_while_generating_never_loses_the_text_just_found():
    """A function generated from a text whose other functions are garbage in a reference cycle
    (a closed Library's ops): the cyclic collector may run at any allocation while the text is
    looked up, and its finalizers release those functions -- the lookup must not then use the
    entry they dropped (it raised KeyError in full-suite runs, at a GC-timing dependent point).
    The internal generator is called directly: only it lets the test place the collection at
    every allocation in turn (each threshold below moves it one allocation further)."""
    import gc

    from tensorplay import _codegen

    src = "def f(a):\n    return a\n"
    old_threshold = gc.get_threshold()
    try:
        for k in range(1, 80):
            # the young generation only: it resets the allocation count the threshold below
            # counts from (a full collection in a full suite's heap took 0.3 s a round)
            gc.collect(0)
            old = _codegen.function(src, {}, "f", "<tensorplay test cg_race>")
            box = [old]
            box.append(box)             # only the cyclic collector frees it
            del old, box
            gc.set_threshold(k)
            try:
                g = _codegen.function(src, {}, "f", "<tensorplay test cg_race>")
            finally:
                gc.set_threshold(*old_threshold)
            assert g(3) == 3
            del g
    finally:
        gc.set_threshold(*old_threshold)
        gc.collect()
    assert not [n for n in linecache.cache if n.startswith("<tensorplay test cg_race")]
