"""Generated source lives as long as its function (issue 28, "Memory").

Every generated function (an op's dispatch entry, its autograd entry, a compiled graph's
runner and guards) registers its text with ``linecache`` so tracebacks show the line. The text
must go with the function: recapturing past the compile cache's limit, defining and closing
``Library`` ops, and dropping compiled functions keep ``linecache`` and the memory in use flat.

``TP_LEAK_CYCLES`` sets the cycles per test (default 600, a few seconds each on a small CI machine;
the issue's figure is 10,000): the tests compare the first and the second half of the run, so
a per-cycle leak shows at any length.
"""

from __future__ import annotations

import gc
import linecache
import os
import tracemalloc

import pytest

import tensorplay as tp
from tensorplay.library import Library

pytestmark = pytest.mark.usefixtures("cpu")

CYCLES = int(os.environ.get("TP_LEAK_CYCLES", "600"))
# bytes a cycle may add to the memory in use (a leaked generated text is 1-3 kB per cycle)
SLACK_PER_CYCLE = 100


def _flat(cycle, n=CYCLES):
    """Run ``cycle(i)`` ``n`` times after a warm-up (past the compile cache's 64 graphs).
    Returns the growth of ``linecache`` entries over each half and of the memory in use
    (``tracemalloc``) over the second half. Traced from before the warm-up: ``tracemalloc``
    only sees what is allocated while it runs, so the working set a cycle replaces (cached
    graphs, re-sized tables) must be traced before the measured half starts."""
    tracemalloc.start()
    try:
        for i in range(100):
            cycle(-1 - i)
        gc.collect()
        lines0 = len(linecache.cache)
        for i in range(n // 2):
            cycle(i)
        gc.collect()
        lines1, mem1 = len(linecache.cache), tracemalloc.get_traced_memory()[0]
        for i in range(n // 2, n):
            cycle(i)
        gc.collect()
        lines2, mem2 = len(linecache.cache), tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return {"lines_first_half": lines1 - lines0, "lines_second_half": lines2 - lines1,
            "bytes_second_half": mem2 - mem1}


def _check(growth, n=CYCLES):
    assert growth["lines_first_half"] <= 8 and growth["lines_second_half"] <= 8, growth
    assert growth["bytes_second_half"] < SLACK_PER_CYCLE * (n // 2), growth


def test_recaptures_release_their_source():
    scale = [1.0]

    def f(x):
        return x * scale[0] + 1

    compiled = tp.compile(f)
    x = tp.ones(3)

    def cycle(i):          # a new value read by f: a miss, a capture, the oldest graph evicted
        scale[0] = float(i) + 0.5
        compiled(x)

    growth = _flat(cycle)
    assert compiled.cache_size == 64 and compiled.captures >= CYCLES
    _check(growth)


def test_closed_library_ops_release_their_source():
    x = tp.ones(3)

    def cycle(i):
        with Library("leakns", "DEF") as lib:
            lib.define("f(Tensor x) -> Tensor")
            lib.impl("f", lambda x: x + 1, "CompositeExplicitAutograd")
            assert tp.ops.leakns.f(x).tolist() == [2.0, 2.0, 2.0]

    _check(_flat(cycle))
    assert not hasattr(tp.ops.leakns, "f")


def test_dropped_compiled_functions_release_their_source():
    x = tp.ones(3)

    def f(x):
        return x + 1

    def cycle(i):
        tp.compile(f)(x)

    _check(_flat(cycle))


def test_tracebacks_still_show_generated_lines():
    # the text stays while the function lives: an error inside an op names the generated line
    import traceback

    with Library("leakns2", "DEF") as lib:
        lib.define("g(Tensor x) -> Tensor")

        def bad(x):
            raise RuntimeError("boom")
        lib.impl("g", bad, "CompositeExplicitAutograd")
        try:
            tp.ops.leakns2.g(tp.ones(1))
        except RuntimeError as e:
            frames = traceback.extract_tb(e.__traceback__)
    generated = [fr for fr in frames if fr.filename.startswith("<tensorplay")]
    assert generated and all(fr.line for fr in generated), frames
