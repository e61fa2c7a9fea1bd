"""Throw-away plugin distributions on disk, and a subprocess to import tensorplay with them.

``PluginEnv(tmp_path)`` builds, in one temporary directory put first on ``PYTHONPATH``:

* a plugin module (``NAME.py``) per distribution, from source text;
* ``DIST-VERSION.dist-info/`` with ``METADATA`` and ``entry_points.txt`` -- all that
  ``importlib.metadata`` needs to see an installed distribution.

``run(code, **env)`` runs ``code`` in a fresh interpreter (so ``import tensorplay`` scans and loads
these plugins, under the given environment controls) and returns a ``Result`` with ``rc``,
``stdout``, ``stderr`` and ``data``: the object the code printed as JSON after ``RESULT:``.
Plugin modules can call ``mark("text")`` (injected helper) to prove they were executed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass

# Bytecode cache shared by the subprocesses (outside the tree): without it, an environment with
# PYTHONDONTWRITEBYTECODE=1 recompiles the whole core in every subprocess (~0.3 s each).
_PYCACHE = os.path.join(tempfile.gettempdir(), f"tensorplay-test-pycache-{os.getuid()}")

# Prepended to each plugin module: records that the module's code ran (file survives a failed
# import, unlike sys.modules entries).
_MARK = '''\
def mark(text, _path={path!r}):
    with open(_path, "a") as f:
        f.write(text + "\\n")
'''

# Prepended to every subprocess script.
PRELUDE = '''\
import json, sys, warnings
warnings.simplefilter("always")
_W = warnings.catch_warnings(record=True)
WARNINGS = _W.__enter__()
def result(obj):
    print("RESULT:" + json.dumps(obj, default=str))
def plugin_warnings():
    import tensorplay.plugins.manager as m
    return [str(w.message) for w in WARNINGS if issubclass(w.category, m.PluginWarning)]
def raises(fn, *a, **k):
    """(exception type name, message, cause type name, cause message) or None."""
    try:
        fn(*a, **k)
    except BaseException as e:
        c = e.__cause__
        return [type(e).__name__, str(e), type(c).__name__ if c else None, str(c) if c else None]
    return None
'''


# The plugin distributions of this repository (plugins/*/pyproject.toml and the example op pack
# with a ``tensorplay.plugins`` entry point; test_fresh62 checks the list against a checkout).
OWN_PLUGINS = ("tensorplay-cpu", "tensorplay-cuda", "tensorplay-example-ops", "tensorplay-triton")


def own_plugins(*extra: str) -> str:
    """A ``TENSORPLAY_PLUGINS`` allow-list of this repository's installed plugins (and the
    distributions ``extra``, e.g. a test's throw-away ones): tests about what *our* plugins do at
    ``import tensorplay`` (no array library imported) run under it, so an op pack a user
    installed beside them -- one importing NumPy at load is theirs to do -- leaves those tests
    meaningful instead of failing them. Ours not installed here are left out (the allow-list
    warns of names it does not find)."""
    from importlib import metadata
    installed = []
    for name in OWN_PLUGINS:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        installed.append(name)
    return ",".join(installed + list(extra))


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str

    @property
    def data(self):
        for line in self.stdout.splitlines():
            if line.startswith("RESULT:"):
                return json.loads(line[len("RESULT:"):])
        raise AssertionError(f"subprocess printed no RESULT (rc={self.rc})\nstdout:\n"
                             f"{self.stdout}\nstderr:\n{self.stderr}")


class PluginEnv:
    """A directory of throw-away distributions (see module docstring)."""

    def __init__(self, root):
        self.root = str(root)
        self.marks = os.path.join(self.root, "_marks.txt")

    def module(self, name: str, source: str) -> None:
        """Write module ``name`` (``a.b`` makes package ``a``) with ``mark()`` available."""
        parts = name.split(".")
        d = self.root
        for p in parts[:-1]:
            d = os.path.join(d, p)
            os.makedirs(d, exist_ok=True)
            init = os.path.join(d, "__init__.py")
            if not os.path.exists(init):
                open(init, "w").close()
        with open(os.path.join(d, parts[-1] + ".py"), "w") as f:
            f.write(_MARK.format(path=self.marks) + textwrap.dedent(source))

    def dist(self, name: str, version: str = "1.0", *, plugins: dict | None = None,
             kernels: dict | None = None, modules: dict | None = None,
             namespaces: dict | None = None) -> None:
        """Install distribution ``name``: ``plugins`` = {entry-point name: module} (group
        ``tensorplay.plugins``), ``kernels`` = {"ns::op.dev": "mod:fn"} (``tensorplay.kernels``),
        ``namespaces`` = {namespace: module} (``tensorplay.namespaces``: an op pack imported on
        first use), ``modules`` = {module name: source}."""
        for mod, src in (modules or {}).items():
            self.module(mod, src)
        info = os.path.join(self.root, f"{name.replace('-', '_')}-{version}.dist-info")
        os.makedirs(info, exist_ok=True)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = []
        for group, eps in (("tensorplay.plugins", plugins), ("tensorplay.kernels", kernels),
                           ("tensorplay.namespaces", namespaces)):
            if eps:
                lines.append(f"[{group}]")
                lines += [f"{k} = {v}" for k, v in eps.items()]
                lines.append("")
        with open(os.path.join(info, "entry_points.txt"), "w") as f:
            f.write("\n".join(lines))

    def executed(self) -> list[str]:
        """The ``mark()`` lines written so far by plugin modules."""
        if not os.path.exists(self.marks):
            return []
        with open(self.marks) as f:
            return f.read().split()

    def run(self, code: str, timeout: float = 120, **env) -> Result:
        """Run ``PRELUDE + code`` in a fresh interpreter with this directory on ``PYTHONPATH``
        and ``env`` (``None`` values unset a variable; the plugin controls are unset unless
        given)."""
        e = dict(os.environ)
        for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_DISABLE_PLUGINS", "TENSORPLAY_STRICT_PLUGINS",
                  "TENSORPLAY_TRACE_PLUGINS", "TENSORPLAY_PLUGIN_SCAN", "TENSORPLAY_KERNEL_OVERRIDE",
                  "TENSORPLAY_DEVICE_PROVIDER_cpu", "TENSORPLAY_DEVICE_PROVIDER_cuda"):
            e.pop(k, None)
        e.pop("PYTHONDONTWRITEBYTECODE", None)
        e["PYTHONPYCACHEPREFIX"] = _PYCACHE
        e["PYTHONPATH"] = os.pathsep.join([self.root] + [p for p in
                                                         [os.environ.get("PYTHONPATH")] if p])
        for k, v in env.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        p = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], env=e,
                           capture_output=True, text=True, timeout=timeout, cwd=self.root,
                           check=False)
        return Result(p.returncode, p.stdout, p.stderr)


# ---- plugin sources used by several tests ---------------------------------------------------

GOOD = '''
import tensorplay
from tensorplay.plugins import hookimpl, SampleInput
mark("good")

@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("goodns::double", mutates_args=())
    def double(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 2

    @double.register_fake
    def _(x):
        return x.new_empty(x.shape)

@hookimpl
def tensorplay_sample_inputs(op, device):
    if op.name == "goodns::double":
        return [SampleInput((tensorplay.ones(3, device=device),), name="ones3")]
    return None
'''

BROKEN_IMPORT = '''
import tensorplay
mark("broken")
tensorplay.library.define("brokenns::op(Tensor x) -> Tensor")
raise ImportError("libbroken.so: cannot open shared object file")
'''
