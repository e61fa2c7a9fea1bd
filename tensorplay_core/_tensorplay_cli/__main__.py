"""``python -m _tensorplay_cli``: the ``tensorplay`` console script."""

import sys

from _tensorplay_cli import main

sys.exit(main())
