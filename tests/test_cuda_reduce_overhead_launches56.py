"""On a GPU: ``tensorplay.compile(fn, mode="reduce-overhead")`` runs a signature without a CUDA
graph when the recording holds no more nodes than the copies a replay adds (issue 32 item 1:
the 8-op chain is one kernel; a replay added three copies and cost 150 µs against 45 at 2^24).
The cuda backend counts the recorded graph's nodes (``tensorplay_cuda.backend.graph_nodes``,
``replay.launches``). Skips without a usable CUDA device; the rule's cpu tests are in
``tests/test_compile_reduce_overhead_launches56.py``."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tensorplay_cuda")

import tensorplay as tp  # noqa: E402
from _fusion_cases import chain8  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")]


def many_launches(x, y):
    """Seven chains split by six column maxima (reductions over dim 0 never join a chain):
    thirteen launches or more against 2 + 1 copies."""
    a = x * y
    for _ in range(6):
        a = (a - a.amax(0, keepdim=True)).tanh()
    return a


def test_the_recording_reports_its_graph_nodes():
    from tensorplay_cuda.backend import graph_nodes
    be = tp.backends.get("cuda")
    x = tp.randn(4096, device="cuda")

    def one():
        return x * 2.0

    def three():
        return ((x * 2.0) + 1.0).exp()

    for fn, n in ((one, 1), (three, 3)):
        for _ in range(6):                          # past the eager ops' warm-up calls
            want = fn()
        result, replay = be.capture_graph(fn, x.device)
        assert replay.launches == n == graph_nodes(replay.graph), fn.__name__
        replay()
        assert tp.equal(result, want), fn.__name__


@pytest.mark.parametrize("n", [1 << 10, 1 << 20, 1000003])
def test_the_fused_chain_runs_without_a_graph_with_default_results(n):
    tp.manual_seed(0)
    x, y = tp.randn(n, device="cuda"), tp.randn(n, device="cuda")
    c = tp.compile(chain8, mode="reduce-overhead")
    d = tp.compile(chain8)
    for i in range(4):
        assert tp.equal(c(x, y), d(x, y)), i
    ((sig, reason),) = c.graph_skips.items()
    assert sig[0] == ((n,), (n,))
    assert reason.startswith("the graph makes 1 device launch, no more than the 3 copies")
    x.mul_(-1.0)                                    # new values, same tensors
    assert tp.equal(c(x, y), d(x, y))
    first = c(x, y)
    keep = first.clone()
    c(y, x)
    assert tp.equal(first, keep)                    # fresh tensors, as a replay's


def test_a_graph_of_many_launches_is_still_recorded_and_replayed():
    tp.manual_seed(1)
    x, y = tp.randn(64, 1024, device="cuda"), tp.randn(64, 1024, device="cuda")
    c = tp.compile(many_launches, mode="reduce-overhead")
    d = tp.compile(many_launches)
    for i in range(5):
        assert tp.equal(c(x, y), d(x, y)), i
    assert c.graph_skips == {}
    y.add_(0.5)                                     # mutated between calls
    assert tp.equal(c(x, y), d(x, y))


def test_new_shapes_decide_again():
    c, cd = tp.compile(chain8, mode="reduce-overhead"), tp.compile(chain8)
    m, md = tp.compile(many_launches, mode="reduce-overhead"), tp.compile(many_launches)
    for rows in (64, 7, 64, 7):
        x, y = tp.randn(rows, 1024, device="cuda"), tp.randn(rows, 1024, device="cuda")
        for _ in range(3):
            assert tp.equal(c(x, y), cd(x, y)) and tp.equal(m(x, y), md(x, y))
    assert len(c.graph_skips) == 2 and m.graph_skips == {}
