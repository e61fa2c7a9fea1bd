"""Put this directory on PYTHONPATH with TENSORPLAY_BLOCK_TORCH=1 to make ``import torch`` fail in
every Python process started from there (pytest, its subprocesses, ``tensorplay check``, benchmarks).
Self-contained: it must not import tensorplay (site start-up runs before any path tweaks)."""

import os
import sys

if os.environ.get("TENSORPLAY_BLOCK_TORCH") == "1":
    class _TorchBlocker:
        tensorplay_blocks_torch = True

        def find_spec(self, fullname, path=None, target=None):
            if fullname.partition(".")[0] in ("torch", "torchvision", "torchaudio"):
                raise ImportError(f"import of {fullname!r} blocked by tensorplay "
                                  f"(TENSORPLAY_BLOCK_TORCH=1)", name=fullname)

    sys.meta_path.insert(0, _TorchBlocker())
