"""attorch's Triton kernels (the modules next to this file are upstream's, copied verbatim).

Upstream: https://github.com/BobMcDear/attorch at commit 67c2772baf33913ef51c2d1064f746ca17b63749
(attorch/: act_kernels.py, cross_entropy_loss_kernels.py, dropout_kernels.py, glu_kernels.py,
layer_norm_kernels.py, nll_loss_kernels.py, p_loss_kernels.py, rms_norm_kernels.py,
softmax_kernels.py copied whole under their own names,
so that their relative imports are upstream's; utils.py copied with its torch lines CHANGED).
The autograd Functions that launch them are in layers.py. Licence: MIT, notice below and in
LICENSE next to this file.

    MIT License

    Copyright (c) 2023 Borna Ahmadzadeh

    Permission is hereby granted, free of charge, to any person obtaining a copy
    of this software and associated documentation files (the "Software"), to deal
    in the Software without restriction, including without limitation the rights
    to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
    copies of the Software, and to permit persons to whom the Software is
    furnished to do so, subject to the following conditions:

    The above copyright notice and this permission notice shall be included in all
    copies or substantial portions of the Software.

    THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
    IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
    FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
    AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
    LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
    OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
    SOFTWARE.
"""

from .act_kernels import act_func_backward_kernel, act_func_forward_kernel
from .cross_entropy_loss_kernels import (cross_entropy_loss_backward_kernel,
                                         cross_entropy_loss_forward_kernel)
from .nll_loss_kernels import nll_loss_backward_kernel, nll_loss_forward_kernel
from .glu_kernels import glu_backward_kernel, glu_forward_kernel
from .layer_norm_kernels import layer_norm_backward_kernel, layer_norm_forward_kernel
from .p_loss_kernels import p_loss_backward_kernel, p_loss_forward_kernel
from .rms_norm_kernels import rms_norm_backward_kernel, rms_norm_forward_kernel
from .softmax_kernels import softmax_backward_kernel, softmax_forward_kernel

__all__ = [
    "act_func_backward_kernel", "act_func_forward_kernel", "cross_entropy_loss_backward_kernel",
    "cross_entropy_loss_forward_kernel", "nll_loss_backward_kernel", "nll_loss_forward_kernel",
    "glu_backward_kernel",
    "glu_forward_kernel", "layer_norm_backward_kernel", "layer_norm_forward_kernel",
    "p_loss_backward_kernel", "p_loss_forward_kernel", "rms_norm_backward_kernel",
    "rms_norm_forward_kernel", "softmax_backward_kernel", "softmax_forward_kernel",
]
