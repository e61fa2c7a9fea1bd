"""Architecture rules about ``Tensor`` and import-time wiring, checked on the source (ast).

1. ``Tensor``'s private slots belong to its two modules: ``tensorplay/_tensor_base.py`` (the
   slots, the one constructor, metadata, dispatch keys) and ``tensorplay/_tensor.py`` (the
   user-facing class with its methods). Every other module of the core and of the plugins we ship
   goes through the base's public functions, so a reader finds every writer of a field in two
   files. Generated source counts: a string literal spelling ``x._data`` or naming a slot for
   ``getattr``/``setattr`` is a slot access too.
2. No module assigns a name onto another tensorplay module while it is imported
   (``othermodule.name = value`` at module level, or ``setattr(othermodule, ...)``): a name
   injected from above is wiring a reader cannot follow (DESIGN.md, "Connections").

Failures list every offender as ``path:line: what`` so the fix is mechanical.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import _sources

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "tensorplay_core" / "tensorplay"
# the two modules that own the slots
OWNERS = {CORE / "_tensor_base.py", CORE / "_tensor.py"}
TENSOR_CLASS_NAMES = {"Tensor", "TensorBase"}
# torch's own attributes that share a name with a TensorPlay slot, read on *torch* tensors by the
# bridge (file, attribute): torch.Tensor._base is torch's view base, the only way torch offers to
# tell a view of a leaf (its in-place refusal). Anything else of that name there still fails.
FOREIGN = {("tensorplay_torch/_autograd.py", "_base")}   # path: the end of the file's path


def _source_files() -> list[Path]:
    """Every module of the core package and of the plugin packages we ship (tests/_sources.py:
    the checkout's plugins/, or the installed packages when the suite runs from the sdist)."""
    return _sources.source_files()


def test_the_scanned_plugins_are_the_shipped_ones():
    """The scans read every plugin package under plugins/ (a new plugin is not left out), and
    each is found: the checkout's folder, or the installed package when the suite runs from the
    core's sdist, which has no plugins/."""
    plugins = ROOT / "plugins"
    if plugins.is_dir():
        assert sorted(p.name for p in plugins.iterdir() if (p / p.name).is_dir()) == \
            sorted(_sources.SHIPPED_PLUGINS)
    found = _sources.plugin_dirs()
    assert set(_sources.REQUIRED_PLUGINS) <= set(found), found
    for name, d in found.items():
        assert (d / "__init__.py").is_file(), (name, d)


def _private_slots() -> set[str]:
    """The private fields and helpers of ``tensorplay.Tensor`` and its bases: ``_``-prefixed
    slots and methods (not dunders, not ``_version``, torch's public name for the version
    counter)."""
    import tensorplay
    names: set[str] = set()
    for cls in tensorplay.Tensor.__mro__[:-1]:      # not object
        names.update(getattr(cls, "__slots__", ()))
        names.update(vars(cls))
    return {s for s in names if s.startswith("_") and not s.startswith("__")} - {"_version"}


def _rel(path: Path) -> str:
    return _sources.display(path)


def _tensor_subclasses(tree: ast.Module) -> set[str]:
    """Classes of this module that derive from a tensor class (their ``self`` is a tensor)."""
    names = set(TENSOR_CLASS_NAMES)
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for b in node.bases:
                base = b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", None)
                if base is not None and base.lstrip("_") in names:
                    out.add(node.name)
    return out


class _SlotScan(ast.NodeVisitor):
    def __init__(self, path: Path, slots: set[str], tree: ast.Module):
        self.path, self.slots = path, slots
        self.tensor_classes = _tensor_subclasses(tree)
        self.class_stack: list[str] = []
        self.found: list[str] = []
        self.docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                           if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                             ast.AsyncFunctionDef))
                           and n.body and isinstance(n.body[0], ast.Expr)
                           and isinstance(n.body[0].value, ast.Constant)}
        # a class's own ``__slots__`` names its own fields (e.g. a torch-tensor look-alike)
        self.docstrings |= {id(c) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                            and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                    for t in n.targets)
                            for c in ast.walk(n.value) if isinstance(c, ast.Constant)}
        alt = "|".join(sorted(slots))
        self.in_source = re.compile(rf"[\w\)\]]\.({alt})\b")

    def _hit(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{_rel(self.path)}:{node.lineno}: {what}")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.class_stack.append(node.name)
        self.generic_visit(node)
        self.class_stack.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.slots and not any(
                _rel(self.path).endswith(f) and node.attr == a for f, a in FOREIGN):
            own = (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
                   and self.class_stack and self.class_stack[-1] not in self.tensor_classes)
            if not own:   # ``self._x`` of a module's own non-tensor class is that class's field
                self._hit(node, f"reads/writes .{node.attr}")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.docstrings:
            if node.value in self.slots:
                self._hit(node, f"names {node.value!r} in a string")
            else:
                for m in self.in_source.finditer(node.value):
                    self._hit(node, f"generated source reads/writes .{m.group(1)}")


def test_no_module_outside_the_tensor_modules_touches_a_private_slot():
    slots = _private_slots()
    assert {"_data", "_storage", "_dkey", "_requires_grad", "_shape", "_device"} <= slots, slots
    found: list[str] = []
    for path in _source_files():
        if path in OWNERS:
            continue
        tree = ast.parse(path.read_text(), str(path))
        scan = _SlotScan(path, slots, tree)
        scan.visit(tree)
        found += scan.found
    assert not found, (
        f"{len(found)} access(es) to Tensor's private slots outside tensorplay/_tensor_base.py "
        "and tensorplay/_tensor.py; use the public functions of tensorplay._tensor_base "
        "(new_tensor, native, ...) or Tensor's public attributes instead:\n" + "\n".join(found))


def _tensorplay_module_aliases(tree: ast.Module, path: Path) -> set[str]:
    """Local names this module binds to other tensorplay modules (``from . import x``,
    ``import tensorplay.x as y``, ``from tensorplay import x``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level > 0 or mod == "tensorplay" or mod.startswith("tensorplay"):
                for a in node.names:
                    names.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "tensorplay" or a.name.startswith("tensorplay"):
                    names.add(a.asname or a.name.split(".")[0])
    return names


def _module_level_statements(body):
    """Statements run at import time: the module body, into if/try/with/for blocks (not
    functions or classes)."""
    for stmt in body:
        yield stmt
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(
                    stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _module_level_statements(inner)


def test_no_module_assigns_names_onto_another_tensorplay_module_at_import():
    found: list[str] = []
    for path in _source_files():
        tree = ast.parse(path.read_text(), str(path))
        aliases = _tensorplay_module_aliases(tree, path)
        for stmt in _module_level_statements(tree.body):
            targets = []
            if isinstance(stmt, ast.Assign):
                targets = stmt.targets
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
                targets = [stmt.target]
            for t in targets:
                for node in ast.walk(t):
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                            and node.value.id in aliases:
                        found.append(f"{_rel(path)}:{stmt.lineno}: assigns "
                                     f"{node.value.id}.{node.attr}")
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                c = stmt.value
                if isinstance(c.func, ast.Name) and c.func.id == "setattr" and c.args and \
                        isinstance(c.args[0], ast.Name) and c.args[0].id in aliases:
                    found.append(f"{_rel(path)}:{stmt.lineno}: setattr({c.args[0].id}, ...)")
    assert not found, ("modules assign names onto other tensorplay modules at import time; "
                       "import what you need plainly from the layer below instead:\n"
                       + "\n".join(found))
