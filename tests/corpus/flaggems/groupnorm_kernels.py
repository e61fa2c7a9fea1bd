"""FlagGems' group norm kernels, as released in PyPI's flag-gems 5.0.2 wheel (a module of its own:
its ``weight_bias_backward_kernel`` has the name of layer norm's). See kernels.py."""

from __future__ import annotations

from .._upstream import load

DIST = "flag-gems"

KERNELS = {
    "flag_gems/ops/groupnorm.py": ["group_norm_kernel", "group_norm_backward_kernel",
                                   "weight_bias_backward_kernel"],
}

globals().update(load(DIST, KERNELS))
