"""``tensorplay.compile(fn, mode="reduce-overhead")`` drops a recording that saves no launch.

A replay copies every tensor argument into the graph's static inputs and every tensor output out
of it: a graph holding no more device launches than those copies launches no less often than a
normal run and moves the data twice more (issue 32 item 1: one fused chain at 2^24 elements, 150
µs a replay against 45 µs a normal run, an H200). Such a signature runs as ``"default"``, with the
reason in ``graph_skips``; the results are the same either way. On the shipped test backend
(``MockBackend(graphs=True)``: the launches are counted from the runner's structure, or taken
from the recording when the backend reports them); ``tests/test_cuda_reduce_overhead_launches56.py``
runs the rule on CUDA graphs.
"""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

import tensorplay as tp  # noqa: E402
from _fusion_cases import chain8 as one_launch  # noqa: E402  (one fused chain: 1 launch, 3 copies)
from tensorplay.testing.backend import MockBackend  # noqa: E402

DEV = "mockl"


def six_launches(x, y):
    """Three chains split by three cumsums (not elementwise): six launches, 3 copies."""
    a = (x * y).cumsum(0)
    b = (a + 1.0).cumsum(0)
    return (b * 0.5).cumsum(0)


def views_and_one_chain(x):
    """Two views (no launch) around one fused chain: one launch against 2 copies."""
    return (x.reshape(4, 2) * 2.0 + 1.0).unsqueeze(0)


def graph_calls(be):
    return [c for c in be.calls if c.endswith("_graph")]


class CountingBackend(MockBackend):
    """The test backend whose recordings report how many launches they hold
    (``replay.launches``), as the cuda backend's CUDA graphs report their nodes."""

    def __init__(self, *a, reported, **k):
        super().__init__(*a, **k)
        self.reported = reported

    def capture_graph(self, fn, device):
        result, replay = super().capture_graph(fn, device)
        replay.launches = self.reported
        return result, replay


@pytest.fixture
def mock():
    with MockBackend(DEV, graphs=True) as be:
        yield be


def _pair(n=8):
    tp.manual_seed(0)
    return tp.randn(n).to(DEV), tp.randn(n).to(DEV)


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and tp.equal(a, b)


def test_a_one_launch_graph_runs_without_a_graph_and_says_why(mock):
    x, y = _pair()
    c = tp.compile(one_launch, mode="reduce-overhead")
    d = tp.compile(one_launch)
    for i in range(5):
        assert _same(c(x, y), d(x, y)), i
        assert _same(c(x, y), one_launch(x, y)), i
    # recorded once (to count), dropped, never replayed; every later call a normal run
    assert graph_calls(mock) == ["capture_graph"]
    ((sig, reason),) = c.graph_skips.items()
    assert sig == (((8,), (8,)), ((1,), (1,)))
    assert reason == ("the graph makes 1 device launch, no more than the 3 copies a replay adds "
                      "(arguments in, outputs out): it runs without a graph, which costs less "
                      "and gives the same results")


def test_a_graph_of_more_launches_than_copies_is_still_recorded_and_replayed(mock):
    x, y = _pair()
    c = tp.compile(six_launches, mode="reduce-overhead")
    want = six_launches(x, y)
    for i in range(5):
        assert _same(c(x, y), want), i
    assert graph_calls(mock) == ["capture_graph"] + ["replay_graph"] * 4
    assert c.graph_skips == {}


def test_views_are_not_counted_as_launches(mock):
    x = tp.randn(8).to(DEV)
    c = tp.compile(views_and_one_chain, mode="reduce-overhead")
    for _ in range(3):
        assert _same(c(x), views_and_one_chain(x))
    (reason,) = c.graph_skips.values()
    assert reason.startswith("the graph makes 1 device launch, no more than the 2 copies")


def test_new_shapes_decide_again_and_the_results_stay_eager(mock):
    one = tp.compile(one_launch, mode="reduce-overhead")
    six = tp.compile(six_launches, mode="reduce-overhead")
    for n in (8, 5, 8, 5, 8, 5):
        tp.manual_seed(n)
        x, y = tp.randn(n).to(DEV), tp.randn(n).to(DEV)
        assert _same(one(x, y), one_launch(x, y)), n
        assert _same(six(x, y), six_launches(x, y)), n
    assert sorted(sig[0][0] for sig in one.graph_skips) == [(5,), (8,)]
    assert six.graph_skips == {}
    # each shape of the six-launch graph recorded once; the one-launch graph's recordings
    # (one per shape) dropped
    assert graph_calls(mock).count("capture_graph") == 4
    assert graph_calls(mock).count("replay_graph") == 4


def test_inputs_mutated_between_calls_are_read_by_both_paths(mock):
    x, y = _pair()
    one = tp.compile(one_launch, mode="reduce-overhead")
    six = tp.compile(six_launches, mode="reduce-overhead")
    for step in range(4):
        assert _same(one(x, y), one_launch(x, y)), step
        assert _same(six(x, y), six_launches(x, y)), step
        x.mul_(-1.5)                  # in place, outside the function
        y.add_(0.25)
    assert len(one.graph_skips) == 1 and six.graph_skips == {}
    assert "replay_graph" in graph_calls(mock)


def test_a_returned_result_is_not_changed_by_later_calls_on_either_path(mock):
    x, y = _pair()
    for fn in (one_launch, six_launches):
        c = tp.compile(fn, mode="reduce-overhead")
        first = [c(x, y) for _ in range(3)]
        kept = [t.tolist() for t in first]
        x2, y2 = tp.randn(8).to(DEV), tp.randn(8).to(DEV)
        c(x2, y2)
        assert [t.tolist() for t in first] == kept, fn.__name__


@pytest.mark.parametrize("reported,recorded", [(3, False), (4, True), (0, False), (40, True)])
def test_a_count_the_backend_reports_decides_at_copies_plus_one(reported, recorded):
    # the chain is one launch by structure; the backend's count is what decides: 2 arguments
    # in and 1 output out are 3 copies, so 3 launches skip and 4 record
    with CountingBackend(DEV, graphs=True, reported=reported) as be:
        x, y = _pair()
        c = tp.compile(one_launch, mode="reduce-overhead")
        for i in range(4):
            assert _same(c(x, y), one_launch(x, y)), i
        if recorded:
            assert c.graph_skips == {}
            assert graph_calls(be) == ["capture_graph"] + ["replay_graph"] * 3
        else:
            (reason,) = c.graph_skips.values()
            launch = "launch" if reported == 1 else "launches"
            assert reason.startswith(f"the graph makes {reported} device {launch}, no more "
                                     f"than the 3 copies")
            assert graph_calls(be) == ["capture_graph"]


def test_the_rule_can_be_turned_off_for_tests_of_the_replay_itself(mock, monkeypatch):
    from tensorplay import _replay
    monkeypatch.setattr(_replay, "SKIP_FEW_LAUNCHES", False)
    x, y = _pair()
    c = tp.compile(one_launch, mode="reduce-overhead")
    for _ in range(3):
        assert _same(c(x, y), one_launch(x, y))
    assert graph_calls(mock) == ["capture_graph", "replay_graph", "replay_graph"]
    assert c.graph_skips == {}
