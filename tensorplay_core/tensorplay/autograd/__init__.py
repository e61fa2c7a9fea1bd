"""Autograd: the backward walk, ``Function``, ``grad``, ``gradcheck`` and grad mode.

No per-op math lives here: each op's backward formula sits beside its forward (``tensorplay/_ops``).
"""

from .function import Function, FunctionCtx
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .api import backward, grad
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["Function", "FunctionCtx", "GradcheckError", "backward", "grad", "gradcheck",
           "gradgradcheck", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]
