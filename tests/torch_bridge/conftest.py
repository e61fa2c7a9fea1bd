"""The tensorplay-torch bridge's tests: they need PyTorch, so they run only in the nox ``torch``
session (``TENSORPLAY_TORCH_TESTS=1``, torch installed, the newuser pack installed with
``install_newuser_pack.py``). Anywhere else -- the core's suite, where torch is absent or blocked
(``TENSORPLAY_BLOCK_TORCH=1``) -- nothing here is collected and nothing imports torch."""

from __future__ import annotations

import os

import pytest

RUN = os.environ.get("TENSORPLAY_TORCH_TESTS", "").strip().lower() in ("1", "true", "yes", "on")

if not RUN:
    collect_ignore_glob = ["test_*.py"]
elif os.environ.get("TENSORPLAY_BLOCK_TORCH", "").strip().lower() in ("1", "true", "yes", "on"):
    raise pytest.UsageError("TENSORPLAY_TORCH_TESTS=1 with TENSORPLAY_BLOCK_TORCH=1: the bridge's "
                            "tests need torch; unset one of them")
else:
    os.environ.setdefault("TRITON_INTERPRET", "1")   # Triton ops of the packs, on cpu


@pytest.fixture(scope="session")
def bridged():
    """Every installed pack bridged to torch (``tensorplay_torch.register()``), once."""
    import tensorplay_torch
    tensorplay_torch.register()
    return tensorplay_torch.bridged_ops()
