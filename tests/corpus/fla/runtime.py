"""What flash-linear-attention's modules read from ``fla.utils`` at import (ours): the hardware
flags ``fla.utils.hardware`` computes through torch and Triton's driver, and the Triton version
flags of ``fla.utils.env``, answered here for the machine the corpus runs on (tensorplay.cuda,
triton's version). They choose autotune config lists and workarounds (Blackwell's 8-warp race,
Hopper's warp counts); the interpreter (cpu, no GPU) gets fla's answers without a GPU: every
device flag False.
"""

from __future__ import annotations

import operator
import os

import tensorplay
import triton

from .._upstream import _triton_version_at_least


def _capability():
    try:
        if tensorplay.cuda.is_available():
            return tensorplay.cuda.get_device_capability(0), tensorplay.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - fla's own detection falls back the same way
        pass
    return None, ""


_CAP, _NAME = _capability()
IS_NVIDIA = _CAP is not None
# fla.utils.hardware's expressions, with torch.cuda -> tensorplay.cuda
IS_NVIDIA_HOPPER = IS_NVIDIA and ("NVIDIA H" in _NAME or _CAP[0] == 9)
IS_NVIDIA_BLACKWELL = IS_NVIDIA and _CAP[0] in (10, 12)
IS_TF32_SUPPORTED = IS_NVIDIA and _CAP[0] >= 8
IS_GATHER_SUPPORTED = hasattr(triton.language, "gather")
IS_TMA_SUPPORTED = (IS_NVIDIA and _CAP[0] >= 9 and os.environ.get("FLA_USE_TMA", "0") == "1"
                    and (hasattr(triton.language, "_experimental_make_tensor_descriptor")
                         or hasattr(triton.language, "make_tensor_descriptor")))

TRITON_ABOVE_3_4_0 = _triton_version_at_least("triton", operator.ge, "3.4.0")
TRITON_ABOVE_3_5_1 = _triton_version_at_least("triton", operator.ge, "3.5.1")
TRITON_ABOVE_3_6_0 = _triton_version_at_least("triton", operator.ge, "3.6.0")
TRITON_ABOVE_3_7_1 = _triton_version_at_least("triton", operator.ge, "3.7.1")
TRITON_ABOVE_3_8_0 = _triton_version_at_least("triton", operator.ge, "3.8.0")

# fla's own guard in chunk_bwd_dqkwg (fla/ops/common/chunk_o.py): the gated backward (simple GLA
# with a gate g) raises RuntimeError on a machine with a Hopper GPU and Triton >= 3.4.0, < 3.7.1
# (fla's #640). The flags describe the machine, so the guard fires for cpu tensors there too.
GATED_BWD_REFUSED = IS_NVIDIA_HOPPER and TRITON_ABOVE_3_4_0 and not TRITON_ABOVE_3_7_1
