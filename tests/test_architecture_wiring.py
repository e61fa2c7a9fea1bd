"""The run-time wiring between tensorplay's layers stays visible (issue 30, items 2 and 5).

The import contract (``test_layers.py``) keeps imports pointing down, but it cannot see wiring
that happens at run time: a module that, while it is imported, appends a function to another
tensorplay module's hook list or assigns a name into it (``_devices.on_load.append(f)``,
``_registry.kernel_checks.append(f)``, ``_tensor._getitem = f``), or a module that reaches
another through ``sys.modules`` or ``importlib``. A reader of the lower module cannot follow
either. These tests scan the source of the ``tensorplay`` package (ast, no import) and refuse
both, so the wiring cannot grow back:

* no statement executed at import time (module level, not inside a function or class body)
  writes into another tensorplay module: ``mod.x = ...``, ``mod.x[k] = ...``, ``mod.x += ...``,
  ``mod.hooks.append(...)`` (or ``extend``/``insert``/``add``/``update``/``setdefault``);
* no ``sys.modules`` read except the plugin manager's look at a *third-party* plugin module's
  import state (listed below with the reason); never a tensorplay module;
* no ``importlib.import_module`` / ``__import__`` of a tensorplay module, except the three
  documented routes up: a device's first use (``_devices.load`` ->
  ``tensorplay.backends.first_use``), a lookup of an op a pack not loaded yet may define
  (``_registry.lookup`` -> ``tensorplay.plugins.packs.load_for``) and a loaded array backend's
  first bf16 tensor (``_kernels.lowp.enable`` -> ``tensorplay._ops.install_backend``).

Each scanner is also run on planted snippets, so a scan that finds nothing proves something.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tensorplay_core" / "tensorplay"

_MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "__setitem__"}

# ``sys.modules`` reads allowed, by (module, function): each looks at a third-party plugin
# module named by an entry point (never a tensorplay module) to see whether the user's own
# import of it is still running, so the plugin manager defers it instead of finding it half-made.
_SYS_MODULES_ALLOWED = {
    ("tensorplay.plugins.loading", "load_all"): "a plugin module's import state",
    ("tensorplay.plugins.loading", "finish_deferred"): "a deferred plugin module's import state",
    ("tensorplay.plugins.packs", "_mid_import"): "an op pack's modules' import state",
    ("tensorplay.plugins.state", "priority_of"): "a plugin module still being imported",
}

# The upward routes by module name, each one call at run time, documented where it is: the bottom
# floor hands a device's first use to the function at the top that may import every piece (see
# ``_devices.load``'s docstring); a registry lookup of a name not defined yet asks the plugin
# manager to load the pack that may define it (``_registry.lookup``); a loaded array backend's
# first bf16 tensor re-binds the built-in ops' kernels, now bf16-correct (``_kernels.lowp.enable``).
_IMPORT_ROUTES_ALLOWED = {("tensorplay._devices", "load"): "tensorplay.backends",
                          ("tensorplay._registry", "lookup"): "tensorplay.plugins.packs",
                          ("tensorplay._kernels.lowp", "enable"): "tensorplay._ops"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources():
    for path in sorted(PKG.rglob("*.py")):
        yield _module_name(path), path.read_text(encoding="utf-8")


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import ...`` inside ``module``."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _tensorplay_module_aliases(tree: ast.Module, module: str, is_package: bool) -> dict:
    """Names bound at module level to another tensorplay module (``from . import _devices``,
    ``import tensorplay._registry as reg``, ``from tensorplay import backends``), each with the
    module's full name."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = _resolve(module, is_package, node.level, node.module)
            if src.split(".")[0] != "tensorplay":
                continue
            for a in node.names:
                full = f"{src}.{a.name}" if src else a.name
                # a submodule or subpackage imported by name (``from . import _devices``)
                if (PKG.parent / Path(*full.split("."))).with_suffix(".py").exists() or \
                        (PKG.parent / Path(*full.split(".")) / "__init__.py").exists():
                    if full != module:
                        names[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "tensorplay" and a.name != module:
                    names[a.asname or a.name.split(".")[0]] = a.name if a.asname else "tensorplay"
    return names


def _import_time_statements(tree: ast.Module):
    """The statements run when the module is imported: module level, including the bodies of
    module-level ``if``/``try``/``with``/``for``/``while``, never a function or class body."""
    todo = list(tree.body)
    while todo:
        st = todo.pop(0)
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield st
        for field in ("body", "orelse", "finalbody"):
            todo.extend(getattr(st, field, []) or [])
        for h in getattr(st, "handlers", []) or []:
            todo.extend(h.body)


def _root_name(node) -> str | None:
    """``a`` for ``a.b``, ``a.b.c``, ``a.b[k]``; ``None`` for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _writes_into(node, aliases: set) -> bool:
    """Whether assignment target ``node`` writes into a module named by ``aliases``."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(_writes_into(e, aliases) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _writes_into(node.value, aliases)
    return isinstance(node, (ast.Attribute, ast.Subscript)) and _root_name(node) in aliases


# The composition root: ``tensorplay/__init__.py`` imports every layer, so it alone may connect
# them at import time (one call: ``_registry.install_entry_builders``; and ``plugins.load_all``).
COMPOSITION_ROOT = "tensorplay"


def _calls_into(node, aliases: dict, module: str) -> bool:
    """Whether ``node`` calls a function of another tensorplay module (``_registry.f(...)``,
    ``pkg.sub.f(...)``); a call into the module's own subpackage (``_ops._docs.apply`` in the
    package ``tensorplay._ops``) is the module's own business."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    root = _root_name(node.func)
    return root in aliases and not aliases[root].startswith(module + ".")


def import_time_wiring(source: str, module: str, is_package: bool = False) -> list:
    """``["line N: text"]``: statements of ``source`` (module ``module``) that, at import time,
    write into another tensorplay module, add to one of its hook lists, or call one of its
    functions (a subscription such as ``_registry.add_builder("meta", f)``: the receiving module
    cannot show who calls it). The package root, which connects the layers, may call."""
    tree = ast.parse(source)
    aliases = _tensorplay_module_aliases(tree, module, is_package)
    if not aliases:
        return []
    found = []
    for st in _import_time_statements(tree):
        hit = False
        if isinstance(st, ast.Assign):
            hit = any(_writes_into(t, aliases) for t in st.targets)
        elif isinstance(st, (ast.AugAssign, ast.AnnAssign)):
            hit = _writes_into(st.target, aliases)
        elif isinstance(st, ast.Delete):
            hit = any(_writes_into(t, aliases) for t in st.targets)
        if not hit:
            for node in ast.walk(st):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    continue
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in _MUTATORS and \
                        isinstance(node.func.value, (ast.Attribute, ast.Subscript)) and \
                        _root_name(node.func.value) in aliases:
                    hit = True
                    break
                if module != COMPOSITION_ROOT and _calls_into(node, aliases, module):
                    hit = True
                    break
        if hit:
            found.append(f"line {st.lineno}: {ast.get_source_segment(source, st)}")
    return found


def _enclosing_function(tree: ast.Module, lineno: int) -> str:
    best, best_start = "<module>", -1
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                f.lineno <= lineno <= (f.end_lineno or f.lineno) and f.lineno > best_start:
            best, best_start = f.name, f.lineno
    return best


def _is_tensorplay_name(node) -> bool:
    """A module name argument that names a tensorplay module (a string constant starting with
    ``tensorplay``, or built from ``__package__`` / ``__name__``)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and \
                n.value.split(".")[0] == "tensorplay":
            return True
        if isinstance(n, ast.Name) and n.id in ("__package__", "__name__"):
            return True
    return False


def hidden_imports(source: str, module: str) -> list:
    """``["function: what"]``: reads of ``sys.modules`` and imports by name
    (``importlib.import_module``, ``__import__``) in ``source`` that the allow-lists above do
    not name. A ``sys.modules`` read of a tensorplay module is never allowed."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "modules" and \
                isinstance(node.value, ast.Name) and node.value.id == "sys":
            where = _enclosing_function(tree, node.lineno)
            if (module, where) not in _SYS_MODULES_ALLOWED:
                found.append(f"{where}: sys.modules (line {node.lineno})")
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name == "modules" or name not in ("import_module", "__import__"):
                continue
            if not node.args or not _is_tensorplay_name(node.args[0]):
                continue
            where = _enclosing_function(tree, node.lineno)
            target = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
            if _IMPORT_ROUTES_ALLOWED.get((module, where)) != target:
                found.append(f"{where}: {name}({ast.get_source_segment(source, node.args[0])})"
                             f" (line {node.lineno})")
    # sys.modules["tensorplay..."] / sys.modules.get("tensorplay...") even where allowed
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_sys_modules(node.value) and \
                _is_tensorplay_name(node.slice):
            found.append(f"{_enclosing_function(tree, node.lineno)}: a tensorplay module "
                         f"from sys.modules (line {node.lineno})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                _is_sys_modules(node.func.value) and node.args and \
                _is_tensorplay_name(node.args[0]):
            found.append(f"{_enclosing_function(tree, node.lineno)}: a tensorplay module "
                         f"from sys.modules (line {node.lineno})")
    return sorted(set(found))


def _is_sys_modules(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "modules" and \
        isinstance(node.value, ast.Name) and node.value.id == "sys"


# -- the scan of the package ---------------------------------------------------------------------

# Findings known and being removed, each one exactly (module -> {finding without its line}):
# nothing else may appear. An entry no longer found is reported as a warning (delete it then; a
# warning, not a failure, so branches removing them can merge in any order -- the same policy as
# the import contract's ``ignore_imports``). Empty since the ``Tensor`` split (issue 30 item 1)
# removed the injections into ``_tensor`` and ``_schema``'s ``sys.modules`` read.
_PENDING: dict = {}


def _without_line(finding: str) -> str:
    """``"_t._O = _O"`` for ``"line 33: _t._O = _O"``; ``"f: sys.modules"`` for
    ``"f: sys.modules (line 8)"``."""
    if finding.startswith("line "):
        return finding.partition(": ")[2]
    return finding.rpartition(" (line ")[0]


def _unexpected(scan) -> dict:
    found, seen = {}, set()
    for module, source in _sources():
        hits = scan(module, source)
        for h in hits:
            key = (module, _without_line(h))
            if key[1] in _PENDING.get(module, ()):
                seen.add(key)
            else:
                found.setdefault(module, []).append(h)
    return found, seen


def _is_package(module: str) -> bool:
    return (PKG.parent / Path(*module.split(".")) / "__init__.py").exists()


def test_no_module_wires_itself_into_another_at_import_time():
    found, _ = _unexpected(lambda m, s: import_time_wiring(s, m, _is_package(m)))
    assert found == {}, ("import-time writes into other tensorplay modules (call the function "
                         "that needs the piece from the layer that may import it instead): "
                         f"{found}")


def test_no_module_reaches_another_behind_the_import_system():
    found, _ = _unexpected(lambda m, s: hidden_imports(s, m))
    assert found == {}, ("sys.modules reads or imports by name that the import contract cannot "
                         f"see (import the module, or call down instead): {found}")


def test_pending_findings_are_still_there():
    import warnings
    _, a = _unexpected(lambda m, s: import_time_wiring(s, m, _is_package(m)))
    _, b = _unexpected(lambda m, s: hidden_imports(s, m))
    gone = sorted({(m, f) for m, fs in _PENDING.items() for f in fs} - a - b)
    if gone:
        warnings.warn(f"test_architecture_wiring._PENDING names findings that are gone; delete "
                      f"them: {gone}", stacklevel=1)


def test_the_allow_lists_name_code_that_exists():
    # an allowed entry whose function was renamed or removed must go, not linger as a loophole
    funcs = {}
    for module, source in _sources():
        funcs[module] = {f.name for f in ast.walk(ast.parse(source))
                         if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    stale = [k for k in (*_SYS_MODULES_ALLOWED, *_IMPORT_ROUTES_ALLOWED)
             if k[1] not in funcs.get(k[0], ())]
    assert stale == []


# -- the scanners find what they are for (planted snippets) ------------------------------------

def test_the_wiring_scan_finds_planted_hooks_and_injections():
    planted = (
        "from .. import _devices, _tensor\n"
        "import tensorplay._registry as reg\n"
        "from tensorplay import _factories\n"
        "def f(b):\n    return b\n"
        "_devices.on_load.append(f)\n"
        "reg.kernel_checks.insert(0, f)\n"
        "_tensor._getitem, _tensor._setitem = f, f\n"
        "_factories.hooks['x'] = f\n"
        "if True:\n    _devices.loaders += [f]\n"
        "reg.add_entry_builder('meta', f)\n"          # a subscription: a call into another module
        "x = _factories.helpers.make(f)\n"
    )
    hits = import_time_wiring(planted, "tensorplay._ops.planted")
    assert sorted(int(h.split(":")[0][5:]) for h in hits) == [6, 7, 8, 9, 11, 12, 13], hits
    # the package root connects the layers: its calls are the wiring, in one place
    assert import_time_wiring("from . import _registry\n_registry.install(1)\n",
                              "tensorplay", is_package=True) == []


def test_the_wiring_scan_leaves_run_time_writes_and_own_state_alone():
    clean = (
        "from .. import _devices\n"
        "hooks = []\n"
        "hooks.append(len)\n"                       # its own list
        "def publish(b):\n"
        "    _devices.loaded[b.device_type] = b\n"  # run time, not import time
        "class C:\n    _devices.x = 1\n"            # a class body is not scanned (never wiring)
        "import numpy as np\n"
        "np.x = 1\n"                                # not a tensorplay module
        "np.seterr(all='ignore')\n"
        "def later():\n    _devices.load('cpu')\n"  # a call at run time
    )
    assert import_time_wiring(clean, "tensorplay.backends") == []
    # a package calling its own submodule at import is its own business
    own = "from . import _docs\n_docs.apply()\n"
    assert import_time_wiring(own, "tensorplay._ops", is_package=True) == []


def test_the_hidden_import_scan_finds_planted_lookups():
    planted = (
        "import sys, importlib\n"
        "def a():\n    return sys.modules.get('tensorplay._tensor')\n"
        "def b():\n    return sys.modules[__package__ + '._tensor']\n"
        "def c():\n    return importlib.import_module('tensorplay.plugins')\n"
        "def d():\n    return __import__('tensorplay.cli')\n"
    )
    hits = hidden_imports(planted, "tensorplay._registry")
    assert {h.split(":")[0] for h in hits} == {"a", "b", "c", "d"}, hits
    # the one allowed route is allowed only where it is documented, to the module it names
    route = "from importlib import import_module\ndef load(t):\n" \
            "    return import_module('tensorplay.backends').first_use(t)\n"
    assert hidden_imports(route, "tensorplay._devices") == []
    assert hidden_imports(route, "tensorplay._registry") != []
    other = route.replace("tensorplay.backends", "tensorplay.library")
    assert hidden_imports(other, "tensorplay._devices") != []
