"""The small exception tree of TensorPlay.

::

    Exception
    ├── ValueError
    │   └── SchemaError            malformed schema string / unsupported annotation
    ├── RuntimeError
    │   ├── AlreadyDefinedError    an operator (or a namespace's DEF library) defined twice
    │   │                          (also a ValueError, the type earlier releases raised)
    │   ├── NonFunctionalFormulaError  register_autograd on an op that mutates its inputs
    │   │                          (also a ValueError, the type earlier releases raised)
    │   ├── DeviceStringError      a device string or index tensorplay.device refuses ("CPU",
    │   │                          "cuda:x", " cpu", index -1; also a ValueError, the type
    │   │                          earlier releases raised)
    │   ├── DispatchError          no kernel for a device, mixed devices, ...
    │   │   └── NoKernelError      no kernel registered for the call's device (also a
    │   │                          NotImplementedError, the type torch raises)
    │   ├── OpCheckError           opcheck found failures (carries ``.failures``)
    │   ├── OpReturnError          a custom op's kernel (or fake kernel) returned a value that
    │   │                          does not have its schema's returns (also a TypeError)
    │   ├── PluginError            a plugin failed to load / conflicts (carries the record)
    │   ├── DeviceUnavailableError a device's plugin is installed but the device cannot be used
    │   └── CompileError           tensorplay.compile cannot capture/run a function (or a fake lies)
    │       └── GraphBreak         code a graph cannot hold (data-dependent Python such as
    │           │                  bool(tensor)/.item(), backward(), an autograd.Function
    │           │                  needing grad): the function runs eagerly unless fullgraph=True
    │           │                  (errors eager raises too keep their eager type under compile)
    │           └── DataDependentGraphBreak  a tensor's values read as Python values while
    │                              capturing (also a DispatchError, the type earlier releases raised)
    └── LookupError                get_kernel with nothing usable (plain LookupError)

Every message starts with the API that raised it, says what is wrong, what was expected or
available, and how to fix it.
"""

from __future__ import annotations

# (defined with the device vocabulary, the layer below every one that parses a device string)
from ._devices import DeviceStringError  # noqa: F401


class SchemaError(ValueError):
    """A schema string could not be parsed, or a Python signature cannot be expressed as a schema."""


class AlreadyDefinedError(RuntimeError, ValueError):
    """An operator, or the DEF library of a namespace, is defined a second time while the first is
    alive (same rule and type as torch.library: ``RuntimeError``). Also a ``ValueError``, the type
    earlier tensorplay releases raised, so existing ``except ValueError`` code keeps working."""


class NonFunctionalFormulaError(RuntimeError, ValueError):
    """``register_autograd`` on an op that mutates its inputs (``mutates_args``, ``Tensor(a!)``):
    such an op cannot have a formula (same rule and type as torch.library: ``RuntimeError``).
    Also a ``ValueError``, the type earlier tensorplay releases raised."""


class DispatchError(RuntimeError):
    """A call could not be routed to a kernel (no kernel for the device, mixed devices, ...)."""


class NoKernelError(DispatchError, NotImplementedError):
    """An op has no kernel (enabled) for the device a call dispatched to. Also a
    ``NotImplementedError``, the type torch's dispatcher raises for "Could not run 'ns::op' with
    arguments from the 'CPU' backend", so ``except NotImplementedError`` code ported from torch
    catches it."""


class OpReturnError(RuntimeError, TypeError):
    """A custom op's kernel, or its fake kernel, returned a value that does not have the
    structure of the op's schema returns (one Tensor, a tuple of the declared length, None for
    ``-> ()``...). torch raises at the same call, a ``RuntimeError`` for most such values and a
    ``TypeError`` for a non-sequence where several outputs are declared: this is both, so code
    ported from torch catches it either way."""


class OpCheckError(RuntimeError):
    """``opcheck`` found failures; ``.failures`` maps test name to the failure description."""

    def __init__(self, message: str, failures: dict[str, str] | None = None):
        super().__init__(message)
        self.failures = dict(failures or {})


class PluginError(RuntimeError):
    """A plugin failed to load, declared an incompatible API, or conflicts with another plugin."""


class DeviceUnavailableError(RuntimeError):
    """A device type is known but cannot be used here (plugin missing, failed, or no hardware)."""


class CompileError(RuntimeError):
    """``tensorplay.compile`` could not capture or run a function for a reason of its own: a
    missing or wrong fake kernel, a tensor leaked out of a capture.
    Errors the same code raises eagerly keep their eager type under compile; data-dependent
    Python (``bool(tensor)``, ``.item()``...) and a data-dependent size read as a number are a
    ``GraphBreak`` (see ``tensorplay.compile``)."""


class GraphBreak(CompileError):
    """The function being captured by ``tensorplay.compile`` does something a graph cannot hold:
    data-dependent Python (``bool(tensor)``, ``.item()``, ``float(t)``, ``t.tolist()``...: a
    ``DataDependentGraphBreak``), ``Tensor.backward()``, an ``autograd.Function`` whose backward
    must run, called on inputs that require grad. As torch.compile's graph break: without
    ``fullgraph=True`` the call, and every later call, runs the function eagerly (the reason in
    ``CompiledFunction.graph_skips``); with it, this error, raised by the call."""


class DataDependentGraphBreak(GraphBreak, DispatchError):
    """A ``GraphBreak`` for Python code that needs a captured tensor's values (``if t.sum() > 0``,
    ``t.item()``, ``int(t)``, ``t.tolist()``, ``t.numpy()``...) or a data-dependent size as a
    number (``x[x > 0].shape[0]``): the message names the construct and how to keep it in the
    graph. Also a ``DispatchError``, the type earlier tensorplay
    releases raised for it, so ``except DispatchError`` around a ``fullgraph=True`` call keeps
    working."""
