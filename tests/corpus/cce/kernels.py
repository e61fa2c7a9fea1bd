"""Cut Cross-Entropy's Triton kernels, as released: read from PyPI's cut-cross-entropy 25.1.1 wheel
at run time (``corpus._upstream``; nothing of Cut Cross-Entropy's code is in this repository).

Upstream: https://github.com/apple/ml-cross-entropy, released as PyPI cut-cross-entropy==25.1.1
(package ``cut_cross_entropy``; the pin and the wheel's sha256: ``corpus._upstream.PINS``).
Licence: Apple's sample-code licence (LICENSE next to this file, from the wheel). Each name below
is the kernel of that name in ``cut_cross_entropy/<module>.py``: a plain ``def`` made a kernel by
``triton.jit``, then ``triton.heuristics`` and the library's ``*_autotune()`` (without
``CCE_AUTOTUNE=1``, a ``triton.heuristics`` fixing its best block sizes), run as released (the
names the modules import from ``cut_cross_entropy.tl_utils`` / ``tl_autotune``:
``corpus._upstream.SUPPLIED``). Without the wheel (no cache, no network), importing this module
raises ``corpus._upstream.UpstreamUnavailable`` and the Cut Cross-Entropy cases skip with its
reason.
"""

from __future__ import annotations

from .._upstream import load

DIST = "cut-cross-entropy"

KERNELS = {
    # the log-sum-exp of e @ c.T, one (BLOCK_B, BLOCK_V) tile of logits at a time, merged across
    # vocabulary tiles under a lock (atomic_cas / atomic_xchg)
    "cut_cross_entropy/cce_lse_forward.py": ["_cce_lse_forward_kernel"],
    # -(e[i] . c[targets[i]]), accumulated over D tiles with atomic_add
    "cut_cross_entropy/indexed_dot.py": ["_indexed_neg_dot_forward_kernel"],
    # d/de and d/dc of the loss: the logits recomputed tile by tile, softmax minus the one-hot
    # target, multiplied back into dE / dC under locks (tl_lock_add)
    "cut_cross_entropy/cce_backward.py": ["_cce_backward_kernel"],
}

globals().update(load(DIST, KERNELS))
