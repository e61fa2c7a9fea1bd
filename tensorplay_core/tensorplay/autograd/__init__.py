"""Autograd: the backward walk, ``Function``, ``grad``, ``gradcheck`` and grad mode.

No per-op math lives here: each op's backward formula sits beside its forward (``tensorplay/_ops``).
"""

from .function import Function, FunctionCtx
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .api import backward, grad
from .gradcheck import gradcheck, gradgradcheck
from .. import _tensor
from . import grad_mode as _grad_mode, graph as _graph

# Tensor.backward, leaf gradient accumulators and the grad-mode flag Tensor methods read
_tensor._backward = backward
_tensor._AccumulateGrad = _graph.AccumulateGrad
_tensor._grad_state = _grad_mode._state
_tensor._output_hooks = _graph.output_hooks

__all__ = ["Function", "FunctionCtx", "backward", "grad", "gradcheck", "gradgradcheck", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled"]
