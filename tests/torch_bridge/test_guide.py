"""docs/guides/use-from-pytorch.md runs as written: its ```python blocks, in order, in a fresh
interpreter (as tests/test_docs.py runs the other guides, which need no torch)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "use-from-pytorch.md"


def test_the_guide_runs(tmp_path):
    blocks = [b.split("```")[0] for b in GUIDE.read_text().split("```python\n")[1:]]
    assert len(blocks) >= 5
    code = "\n".join(blocks) + "\nprint('GUIDE-OK')\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path, check=False)
    assert p.returncode == 0 and "GUIDE-OK" in p.stdout, p.stdout + p.stderr
    assert "complex64" in p.stdout and "refused on the TensorPlay side" in p.stdout
