"""Kernels and helpers for tests/test_triton_spellings.py, written the way kernel libraries write
them in a module of their own: ``from __future__ import annotations`` (every annotation a string),
libdevice functions imported by name at import time, ``@triton.jit`` helpers called from kernels
defined in another module, constexpr spelled ``triton.language.constexpr``."""
from __future__ import annotations

import triton
import triton.language
import triton.language as tl
from triton.language.extra.libdevice import exp2 as _exp2
from triton.language.extra.libdevice import tanh


@triton.jit
def gelu_tanh(x):
    """A helper another module's kernel calls: libdevice ``tanh`` bound by name here."""
    k: tl.constexpr = 0.7978845608028654
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)))


@triton.jit
def pow2(x):
    return _exp2(x)


@triton.jit
def future_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FULL: triton.language.constexpr):
    """Under ``from __future__ import annotations``: both annotations are strings."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if FULL:
        x = gelu_tanh(x)
    tl.store(out_ptr + offs, x, mask=m)
