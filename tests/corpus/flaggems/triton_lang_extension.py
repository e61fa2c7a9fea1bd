"""FlagGems' device helpers used by its kernels: flag_gems/utils/triton_lang_extension.py, verbatim.

Upstream: https://github.com/FlagOpen/FlagGems at commit 532ff438c70343d7aec9becdabb76a71225a0553 (Apache-2.0, see kernels.py / LICENSE).
Only the helpers the corpus's kernels call are copied.
"""
# ruff: noqa

import triton
from triton import language as tl


# --- src/flag_gems/utils/triton_lang_extension.py:19-31 ---

@triton.jit
def program_id(
    axis: int,
) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)


@triton.jit
def num_programs(
    axis: int,
) -> tl.tensor:
    return tl.num_programs(axis).to(tl.int64)


