"""CPU (NumPy) kernels named in entry-point metadata: imported on their first call, not at
``import tensorplay``.

``pyproject.toml`` declares them (group ``tensorplay.kernels``, ``"ns::op.device" =
"module:function"``)::

    [project.entry-points."tensorplay.kernels"]
    "example::rms_norm.cpu" = "tensorplay_example_ops.cpu_kernels:rms_norm"

When the pack loads (the first use of namespace ``example``: ``pyproject.toml`` declares it in
``tensorplay.namespaces``), the plugin manager registers a stand-in kernel for
(``example::rms_norm``, ``cpu``) from that line alone; the first cpu call imports this module (and so NumPy), checks the
function against the op's schema, puts it in place of the stand-in and runs it. cpu calls then
go straight here; other devices keep the pack's device-agnostic kernel. Gradients come from the
op's explicit ``register_autograd`` formula, so a NumPy kernel is fine for it.
"""

from __future__ import annotations

import numpy as np
import tensorplay

__all__ = ["rms_norm"]


def rms_norm(x, weight, eps: float = 1e-6):
    """``example::rms_norm`` on cpu with NumPy: ``x / sqrt(mean(x**2, -1) + eps) * weight``.

    ``x``: (..., H) floating cpu tensor; ``weight``: (H,). Returns a new contiguous tensor of the
    promoted dtype (same metadata as the op's fake kernel).
    """
    from .ops import check_rms_norm
    rdt = check_rms_norm(x, weight)
    xn = x.detach().numpy()
    wn = weight.detach().numpy()
    dt = np.result_type(xn, wn)
    # float16/bfloat16 compute in float32 (their squares overflow), rounded once at the end
    work = np.dtype(np.float32) if dt.itemsize < 4 else dt
    xd = xn.astype(work, copy=False)
    ms = np.mean(xd * xd, axis=-1, keepdims=True)
    out = (xd / np.sqrt(ms + eps)) * wn.astype(work, copy=False)
    res = tensorplay.from_numpy(np.ascontiguousarray(out, dtype=work))
    return res if res.dtype is rdt else res.to(rdt)
