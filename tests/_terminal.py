"""``tensorplay check`` run with its stderr on a pseudo-terminal (where it prints progress), for
the tests of what a user sees there."""

from __future__ import annotations

import os
import subprocess
import sys


def check_on_a_terminal(*args: str, timeout: float = 600) -> tuple[int, str, str]:
    """``tensorplay check ARGS`` in a fresh process, stderr on a pseudo-terminal (``COLUMNS`` and
    ``LINES`` unset): ``(exit status, stdout, what the terminal received)``. POSIX only (callers
    skip without ``os.openpty``)."""
    import pty
    m, s = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    p = subprocess.Popen([sys.executable, "-m", "tensorplay.cli", "check", *args],
                         stdout=subprocess.PIPE, stderr=s, text=True, env=env)
    out, _ = p.communicate(timeout=timeout)
    os.close(s)
    data = b""
    while True:
        try:
            chunk = os.read(m, 65536)
        except OSError:      # the pty's other end closed: Linux reports EIO at the end
            break
        if not chunk:
            break
        data += chunk
    os.close(m)
    return p.returncode, out, data.decode(errors="replace")
