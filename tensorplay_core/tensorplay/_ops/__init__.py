"""Built-in operators (namespace ``tp``): schema + fake rule + backward formula side by side.

Importing this package defines every built-in op; array kernels are attached per device by
``install_backend`` when a device plugin's backend is first used (``tensorplay.backends.first_use``)
and again when a loaded array backend turns bf16-correct (``_kernels.lowp.enable``).
"""

from ._define import BUILTINS, defop, install_backend, ops
from . import elementwise, reduction, linalg, nn, shape, views, copy, creation, indexing  # noqa: F401
from . import sorting_topk  # noqa: F401
from . import special  # noqa: F401
from . import opmath  # noqa: F401  (float16/bfloat16 ops of several steps)
from . import _docs

_docs.apply(BUILTINS)      # help(tp.add): the op's docstring (after every op is defined)

__all__ = ["BUILTINS", "defop", "install_backend", "ops"]
