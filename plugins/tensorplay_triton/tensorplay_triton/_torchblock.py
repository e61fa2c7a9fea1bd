"""Make PyTorch unimportable in this process, to prove tensorplay-triton never needs it.

``install()`` puts a meta-path finder first on ``sys.meta_path`` that raises ``ImportError`` for
``torch`` and its submodules (and for ``torchvision``/``torchaudio``, which import it). Used by the
tests (``TENSORPLAY_BLOCK_TORCH=1``) and by ``tools/block_torch/sitecustomize.py``, which does it at
interpreter start-up when that directory is on ``PYTHONPATH``.
"""

from __future__ import annotations

import sys

_BLOCKED = ("torch", "torchvision", "torchaudio")


class TorchBlocker:
    """Meta-path finder refusing ``torch`` (marker: ``tensorplay_blocks_torch``)."""

    tensorplay_blocks_torch = True

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in _BLOCKED:
            raise ImportError(f"import of {fullname!r} blocked by tensorplay (TENSORPLAY_BLOCK_TORCH=1)"
                              f": tensorplay must run without PyTorch", name=fullname)

    def find_module(self, fullname, path=None):   # pragma: no cover - old protocol
        return None


def is_installed() -> bool:
    """True when a ``TorchBlocker`` is on ``sys.meta_path``."""
    return any(getattr(f, "tensorplay_blocks_torch", False) for f in sys.meta_path)


def install() -> None:
    """Block ``torch`` from now on. Raises ``RuntimeError`` if torch was already imported."""
    already = [m for m in sys.modules if m.partition(".")[0] in _BLOCKED]
    if already:
        raise RuntimeError(f"torch is already imported ({', '.join(sorted(already)[:3])}); block it "
                           f"before anything imports it (sitecustomize or the top of conftest)")
    if not is_installed():
        sys.meta_path.insert(0, TorchBlocker())
