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
    import warnings
    try:
        with warnings.catch_warnings(record=True) as caught:
            from tensorplay.cli import main as cli_main
    except Exception as e:  # noqa: BLE001 - only errors of `import tensorplay` with a control set
        control = getattr(e, "control", None)
        if control is None and type(e).__name__ != "PluginError":
            raise                  # not an environment or plugin problem: a real bug, in full
        if control is None:        # --strict (TENSORPLAY_STRICT_PLUGINS=1): the traceback too
            import traceback
            traceback.print_exception(e)
        msg = " ".join(str(e).split())
        print(f"tensorplay: {msg}", file=sys.stderr, flush=True)
        return 2 if control is not None else 1
    # the global plugin flags re-run the command in a fresh interpreter, which says its own
    # plugins' failures (the plugins loaded here are not the ones the command uses)
    rerun = any(a in ("--plugins", "--disable-plugins", "--strict")
                or a.startswith(("--plugins=", "--disable-plugins=")) for a in args)
    _say_warnings(caught, quiet_plugins=rerun)
    return cli_main(argv)


def _say_warnings(caught, quiet_plugins: bool) -> None:
    """The warnings of ``import tensorplay`` as a command line says them: a plugin that failed
    to load is one line (its error, where its own code raised it, and how to see the
    traceback), never a Python warning pointing into tensorplay's loader; other plugin warnings
    one line each; any other warning as Python shows it."""
    import warnings
    from tensorplay.plugins import PluginWarning, records
    from tensorplay.plugins.blame import failure_site
    said = False
    for w in caught:
        if not issubclass(w.category, PluginWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
            continue
        text = " ".join(str(w.message).split())
        if "failed to load" in text or "(incompatible)" in text:
            if not said and not quiet_plugins:
                said = True
                for rec in records():
                    if rec.status in ("failed", "incompatible") and rec.error is not None:
                        site = failure_site(rec.error)
                        where = f" ({site[0]}:{site[1]})" if site else ""
                        err = " ".join(str(rec.error).split()).rstrip(".")
                        print(f"warning: plugin {rec.dist} failed to load: "
                              f"{type(rec.error).__name__}: {err}{where}; --strict shows the "
                              f"traceback", file=sys.stderr)
        elif not quiet_plugins:
            print(f"warning: {text.removeprefix('tensorplay: ')}", file=sys.stderr)
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
