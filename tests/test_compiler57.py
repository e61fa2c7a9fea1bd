"""``tensorplay.compiler``'s companions of ``mode="reduce-overhead"`` under torch's names
(``cudagraph_mark_step_begin``, ``reset``) and torch's ``"max-autotune"`` modes mapped onto
tensorplay's (no autotuning: ``max-autotune`` keeps its CUDA graphs, i.e. is
``"reduce-overhead"``; ``max-autotune-no-cudagraphs`` is ``"default"``)."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

import tensorplay as tp  # noqa: E402
from tensorplay.testing.backend import MockBackend  # noqa: E402

from test_compile_reduce_overhead import chain  # noqa: E402  (the reduce-overhead tests' chain)


@pytest.fixture
def mock(monkeypatch):
    from tensorplay import _replay
    # record graphs of few launches too (this file tests which mode replays, not the rule)
    monkeypatch.setattr(_replay, "SKIP_FEW_LAUNCHES", False)
    with MockBackend("mockg57", graphs=True) as be:
        yield be


def _graph_calls(be):
    return [c for c in be.calls if c.endswith("_graph")]


def _pair():
    tp.manual_seed(0)
    return tp.randn(8).to("mockg57"), tp.randn(8).to("mockg57")


def test_torch_loop_with_cudagraph_mark_step_begin(mock):
    step = tp.compile(lambda x: (x * 2).relu() + 1.0, mode="reduce-overhead")
    outs = []
    for i in range(4):
        assert tp.compiler.cudagraph_mark_step_begin() is None
        outs.append(step(tp.full((2,), float(i)).to("mockg57")))
    # every iteration's result stays its own (replays copy outputs out: nothing to overwrite)
    assert [o.tolist() for o in outs] == [[1.0, 1.0], [3.0, 3.0], [5.0, 5.0], [7.0, 7.0]]
    assert "replay_graph" in _graph_calls(mock)


@pytest.mark.parametrize("mode,runs_as,replays", [
    ("max-autotune", "reduce-overhead", True),
    ("max-autotune-no-cudagraphs", "default", False)])
def test_max_autotune_modes_map_onto_ours(mock, mode, runs_as, replays):
    x, y = _pair()
    c = tp.compile(chain, mode=mode)
    assert c.mode == runs_as
    want = chain(x, y)
    for _ in range(3):
        got = c(x, y)
        assert tp.equal(got[0], want[0]) and tp.equal(got[1], want[1])
    assert ("replay_graph" in _graph_calls(mock)) is replays
    # compiling again with the mode it maps to keeps the compiled function
    assert tp.compile(c, mode=runs_as) is c
    assert tp.compile(c, mode=mode) is c


def test_max_autotune_on_cpu():
    assert tp.compile(lambda x: x + 1, mode="max-autotune")(tp.ones(1)).tolist() == [2.0]
    assert tp.compile(lambda x: x + 1,
                      mode="max-autotune-no-cudagraphs")(tp.ones(1)).tolist() == [2.0]


def test_unknown_mode_names_the_accepted_ones():
    with pytest.raises(ValueError, match="max-autotune-no-cudagraphs"):
        tp.compile(chain, mode="max_autotune")


def test_reset_drops_every_compiled_graph():
    def f(x):
        return x * 2 + 1

    c1, c2 = tp.compile(f), tp.compile(lambda x: x.sin())
    x = tp.ones(3)
    c1(x), c1(x), c2(x)
    assert (c1.captures, c1.cache_size, c2.cache_size) == (1, 1, 1)
    assert tp.compiler.reset() is None
    assert (c1.cache_size, c2.cache_size, c1.graph) == (0, 0, None)
    assert c1(x).tolist() == [3.0, 3.0, 3.0]
    assert c1.captures == 2                          # captured again


def test_reset_drops_reduce_overhead_recordings(mock):
    x, y = _pair()
    c = tp.compile(chain, mode="reduce-overhead")
    c(x, y), c(x, y), c(x, y)
    assert _graph_calls(mock).count("capture_graph") == 1
    tp.compiler.reset()
    c(x, y), c(x, y)
    assert _graph_calls(mock).count("capture_graph") == 2


def test_names_are_public():
    assert {"reset", "cudagraph_mark_step_begin"} <= set(tp.compiler.__all__)
