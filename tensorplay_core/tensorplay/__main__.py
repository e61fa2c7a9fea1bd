"""``python -m tensorplay``: the ``tensorplay`` command (same arguments and exit status)."""

import sys

from tensorplay.cli import main

if __name__ == "__main__":
    sys.exit(main())
