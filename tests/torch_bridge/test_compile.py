"""``torch.compile(fullgraph=True)`` of a model built from bridged ops: no graph break (fullgraph
raises on one), and the eager result, forward and backward."""

from __future__ import annotations

import pytest
import torch
from models import BridgedMLP, batch


def _run(model, x, t):
    loss = model(x, t)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return loss.detach(), grads


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_compiled_model_matches_eager_forward_and_backward(bridged, backend):
    torch._dynamo.reset()
    model = BridgedMLP()
    x, t = batch(0)
    want = _run(model, x, t)
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    for step in range(2):                     # the second call runs the cached graph
        got = _run(compiled, x, t)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    x2, t2 = batch(1)
    torch.testing.assert_close(_run(compiled, x2, t2), _run(model, x2, t2), rtol=1e-5, atol=1e-6)


def test_bridged_ops_are_single_graph_nodes(bridged):
    """The captured graph calls the bridged ops themselves (opaque nodes, no graph break)."""
    torch._dynamo.reset()
    seen = []

    def backend(gm, inputs):
        seen.append(str(gm.graph))
        return gm.forward

    model = BridgedMLP()
    torch.compile(model, fullgraph=True, backend=backend)(*batch(0))
    graph = "\n".join(seen)
    for op in ("example.gelu", "newuser.layer_norm", "example.rms_norm",
               "example.softmax_cross_entropy"):
        assert op in graph, graph
