"""One op that cannot be bridged never stops the others of its namespace: ``register`` bridges
every op it can, undoes what it had registered of the failing one, and then raises one
``BridgeError`` naming each failing op, its pack and the side (torch or TensorPlay) that refused."""

from __future__ import annotations

import pytest
import tensorplay as tp
import tensorplay_torch
import torch
from tensorplay import library


def _define(name, body):
    library.define(f"bridgefail::{name}", "(Tensor x) -> Tensor")
    library.impl(f"bridgefail::{name}", "default", body)


def test_a_failing_op_is_named_and_the_rest_of_its_namespace_is_registered():
    taken = torch.library.Library("bridgefail", "FRAGMENT")      # torch already has this name
    taken.define("taken(Tensor x) -> Tensor")
    _define("before", lambda x: x * 2.0)
    _define("taken", lambda x: x * 3.0)
    _define("after", lambda x: x * 4.0)
    with pytest.raises(tensorplay_torch.BridgeError) as e:
        tensorplay_torch.register(namespace="bridgefail")
    msg = str(e.value)
    assert "bridgefail::taken" in msg and "torch side" in msg and "pack test_bridge_failures" in msg
    assert "bridgefail::before" not in msg and "bridgefail::after" not in msg
    assert sorted(e.value.bridged) == ["bridgefail::after", "bridgefail::before"]
    assert list(e.value.failed) == ["bridgefail::taken"]
    assert {"bridgefail::before", "bridgefail::after"} <= set(tensorplay_torch.bridged_ops())
    assert "bridgefail::taken" not in tensorplay_torch.bridged_ops()
    x = torch.arange(3.0, requires_grad=True)
    torch.testing.assert_close(torch.ops.bridgefail.before(x), x * 2.0)
    y = torch.ops.bridgefail.after(x)
    torch.testing.assert_close(y, x * 4.0)
    torch.testing.assert_close(torch.autograd.grad(y.sum(), x)[0], torch.full((3,), 4.0))
    assert tp.ops.bridgefail.taken(tp.ones(1)).tolist() == [3.0]   # TensorPlay unaffected
    # a second call retries only what failed, and says so again
    with pytest.raises(tensorplay_torch.BridgeError, match="bridgefail::taken") as e:
        tensorplay_torch.register(namespace="bridgefail")
    assert e.value.bridged == []
    # once torch's name is free again, the next call bridges it
    del taken
    assert tensorplay_torch.register(namespace="bridgefail") == ["bridgefail::taken"]
    torch.testing.assert_close(torch.ops.bridgefail.taken(x), x * 3.0)
