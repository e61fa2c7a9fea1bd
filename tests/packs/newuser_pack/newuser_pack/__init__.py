"""``tensorplay-newuser-pack``: an op pack written the way a newcomer writes one, from real
kernels -- NumPy forward kernels with ``register_autograd`` formulas, a Triton forward with its
own Triton backward kernel, and ops returning statistics that are not differentiable.

Used by ``tests/test_newuser_pack.py``: installed into a throw-away environment (entry point
``newuser = newuser_pack``) and checked with ``tensorplay check``. ``NEWUSER_FAULT`` (read when the
ops are registered) plants one classic fault, to prove the check catches it:

* ``strides``  -- ``scaled_softmax``'s NumPy kernel reads ``numel()`` elements from the data
  pointer (ignores strides and padding);
* ``alias``    -- ``flatten``'s kernel returns ``tp.from_numpy(np.ravel(x.numpy()))`` (shares
  the input's memory through NumPy);
* ``hidden_default`` -- the device-agnostic kernel of ``scaled_softmax`` (hidden on cpu by the
  NumPy kernel) returns float64 for float32 inputs;
* ``zero_size`` -- ``scaled_softmax``'s NumPy kernel takes a global ``max()`` (fails on empty
  batches; the pack ships no empty sample for it).
"""

from __future__ import annotations

import pluggy

hookimpl = pluggy.HookimplMarker("tensorplay")
TENSORPLAY_API_VERSION = 1


@hookimpl
def tensorplay_register_ops(registrar):
    from . import numpy_ops, triton_ops  # noqa: F401  (defining the ops is the import's effect)


@hookimpl
def tensorplay_sample_inputs(op, device):
    from ._samples import samples_for
    return samples_for(op.name, device)
