"""Make ``tests/packs/newuser_pack`` an installed TensorPlay plugin for the torch session.

The pack has no ``pyproject.toml`` (tests/test_newuser_pack.py installs it into throw-away
environments); this writes what an editable install would: a ``.dist-info`` naming its entry
point (group ``tensorplay.plugins``, ``newuser = newuser_pack``) and a ``.pth`` file putting the
pack's directory on ``sys.path``. ``python install_newuser_pack.py [DIR]`` writes into ``DIR``
(default: this interpreter's site-packages; use a directory on ``PYTHONPATH`` to keep a venv
untouched -- ``.pth`` files are then not read, so put the pack's directory on it too).
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

PACK = Path(__file__).resolve().parents[1] / "packs" / "newuser_pack"


def install(target: Path) -> Path:
    info = target / "tensorplay_newuser_pack-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorplay-newuser-pack\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text("[tensorplay.plugins]\nnewuser = newuser_pack\n")
    (target / "tensorplay_newuser_pack.pth").write_text(f"{PACK}\n")
    return info


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(sysconfig.get_paths()["purelib"])
    print(f"installed tensorplay-newuser-pack (tests/packs/newuser_pack): {install(where)}")
