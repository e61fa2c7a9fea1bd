"""Built-in operators (namespace ``tp``): schema + fake rule + backward formula side by side.

Importing this package defines every built-in op; array kernels are attached per device by
``install_backend`` when a device plugin's backend is first used (``_devices`` announces it).
"""

from .. import _backend, _devices
from ._define import BUILTINS, defop, install_backend, ops
from . import elementwise, reduction, linalg, nn, shape, views, copy, creation, indexing  # noqa: F401
from . import sorting_topk  # noqa: F401
from . import _docs

_docs.apply(BUILTINS)      # help(tp.add): the op's docstring (after every op is defined)


def _bind_reference(xp, backend) -> dict:
    """The reference kernels bound to ``xp`` (``_kernels.xp.bind``), imported on the first
    backend's first use, not at ``import tensorplay`` (the module is large)."""
    from .._kernels import xp as reference
    return reference.bind(xp, backend)


# told by _devices when a backend loads (lower layers never import this package): bind the
# built-in kernels; ArrayBackend.kernels() binds the reference kernels through this binder
_backend.reference_kernels.append(_bind_reference)
_devices.on_load.append(install_backend)

__all__ = ["BUILTINS", "defop", "install_backend", "ops"]
