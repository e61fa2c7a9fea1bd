"""Entry module of the ``tensorplay`` console script (``python -m _tensorplay_cli`` too).

It lives outside the ``tensorplay`` package on purpose: ``import tensorplay`` reads the plugin
environment controls (``TENSORPLAY_STRICT_PLUGINS``, ``TENSORPLAY_TRACE_PLUGINS``, ...) and loads
the plugins, and an error there happens before ``tensorplay.cli`` could catch anything. Here it
becomes one line on stderr: exit status 2 for a malformed control (a usage error, like a bad
option), 1 for a plugin failure that strict mode turned into an error. Everything else is
``tensorplay.cli.main``.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv=None) -> int:
    """Run the ``tensorplay`` command (see ``tensorplay.cli``) and return its exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["--version"], ["-V"]):
        # a constant: answered before `import tensorplay` loads (and can be broken by) plugins
        from importlib.metadata import version
        print(f"tensorplay {version('tensorplay-core')}")
        return 0
    try:
        from tensorplay.cli import main as cli_main
    except Exception as e:  # noqa: BLE001 - only errors of `import tensorplay` with a control set
        control = getattr(e, "control", None)
        if control is None and type(e).__name__ != "PluginError":
            raise                  # not an environment or plugin problem: a real bug, in full
        msg = " ".join(str(e).split())
        print(f"tensorplay: {msg}", file=sys.stderr, flush=True)
        return 2 if control is not None else 1
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
