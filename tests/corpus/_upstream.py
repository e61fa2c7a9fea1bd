"""The corpus's third-party Triton kernels, read from their libraries' released wheels (ours).

Nothing of a library's code is committed here. Each library is pinned (:data:`PINS`: the PyPI
distribution, version, wheel file and its sha256); :func:`wheel` finds that wheel in the cache
folder or downloads it there once, without installing it or any dependency::

    python -m pip download --no-deps --only-binary=:all: NAME==VERSION -d CACHE

The cache folder is ``$TENSORPLAY_CORPUS_WHEELS`` when set, else ``.corpus-wheels/`` at the
repository root (git-ignored). Every file read from a wheel is also written there verbatim,
under ``CACHE/src/<dist>-<version>/`` with the wheel's RECORD; a machine without network uses
the wheels already in the cache or, without them, those copies, each checked against the RECORD
whose sha256 is pinned (copy ``CACHE/src``, about 1 MB for the whole corpus, or the whole
folder; or point the variable at one). With neither, :func:`load` raises :class:`UpstreamUnavailable` saying why,
and the corpus's cases skip with that reason.

:func:`load` reads the named modules' source out of the wheel (``zipfile``; ``inspect`` and
Triton read the verbatim copy under ``CACHE/src``, the file the code is compiled from) and runs,
in one fresh namespace per module, only what the kernels need: the requested
top-level names and every top-level definition they use (helpers, constants, defaults,
decorator arguments), the module's own imports of the standard library and of Triton, and the
``if``/``try`` blocks that choose those imports (libdevice's ``rsqrt`` / ``tanh``). Each kept
statement is upstream's text as released, compiled at its own line numbers. The imports not run
are listed in :data:`DROPPED_IMPORTS`; the names the kept statements use from them are supplied
by the loader (:data:`SUPPLIED`, per library and module, only where used), each with why. A kept
definition naming anything else fails the load (a new release that needs more says so).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import types
import zipfile

_REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Pin:
    dist: str          # the PyPI distribution
    version: str
    wheel: str         # the wheel's file name
    sha256: str        # of that wheel, as PyPI serves it
    record_sha256: str  # of the wheel's RECORD (the sha256 of every file in it)

    @property
    def record(self) -> str:
        return f"{self.wheel.split('-')[0]}-{self.version}.dist-info/RECORD"

    @property
    def src(self) -> pathlib.Path:
        """Where the files read from the wheel are written, verbatim (with its RECORD)."""
        return cache_dir() / "src" / f"{self.dist}-{self.version}"


PINS = {p.dist: p for p in [
    Pin("liger-kernel", "0.8.5", "liger_kernel-0.8.5-py3-none-any.whl",
        "60789cd576af073ab9b192b570d2597fd0cdad489cd62fb44fb16256d43754c9",
        "2f09f33fc5fb36d62fabf6ea6338407a215307dfeadb904328ffdfa1883dff66"),
    Pin("flag-gems", "5.0.2", "flag_gems-5.0.2-py3-none-any.whl",
        "d7c5a6121bf2d3f7daddde43bfa7cae739de6cb5b294dcfe7ae6173045c35552",
        "f2a25135fc1c12cfc7557265cc803e0944b418ca687872802d1de01adffc069f"),
    # the release whose unsloth/kernels are those of the commit the corpus's host code was written
    # against (015bdef0d94a, 2026-08-22; the kernel files last changed 2026-07-28)
    Pin("unsloth", "2026.8.19", "unsloth-2026.8.19-py3-none-any.whl",
        "7e6d7bc77517883fef116b0ef49880b810373ee46cb54bbb026a9811ea2abdd2",
        "07221b1ad889d3049b7b49954787134ae8f2dbff4b336db3064914ee904c8ec4"),
]}


class UpstreamUnavailable(RuntimeError):
    """The pinned wheel is neither in the cache nor downloadable (the message says why)."""


# Top-level imports of upstream modules that are not run, by module root: the kernels never
# name them (checked at load: a kept definition naming an unsupplied name fails the load).
DROPPED_IMPORTS = {
    "torch": "host code only (tensors, autograd.Function, DTensor); no kernel names torch, and "
             "the corpus's host code is ours (tests/corpus/<library>/ops.py, on tensorplay)",
    "liger_kernel": "the library's own host helpers (calculate_settings, ensure_contiguous, "
                    "infer_device, ...) and cross-module imports; the helpers that an "
                    "import-choosing block calls are in SUPPLIED",
    "packaging": "liger_kernel.ops.utils's version parsing (host code)",
    "flag_gems": "FlagGems' runtime (vendor detection through torch, YAML configs), its launch "
                 "cache and device helpers: what the kernels use of them is in SUPPLIED",
    ".": "a library's own modules imported relatively (Unsloth's .utils: host helpers, device "
         "detection through torch); what the kernels use of them is in SUPPLIED",
    "unsloth_zoo": "Unsloth's companion package (patching, loss helpers, Version): host code",
    "transformers": "Unsloth's host code (a logger, the model classes it patches)",
}


def _triton_version_at_least(package: str, op, target: str) -> bool:
    # liger_kernel.ops.utils.compare_version's contract (``op(version(package), Version(target))``)
    # without ``packaging``: the numeric release parts only (triton's versions are plain X.Y.Z)
    import importlib.metadata

    def parts(v):
        out = []
        for p in v.split("+")[0].split("."):
            digits = "".join(c for c in p if c.isdigit()) if p[:1].isdigit() else ""
            if not digits:
                break
            out.append(int(digits))
        return tuple(out)
    return op(parts(importlib.metadata.version(package)), parts(target))


class Ref:
    """A supplied value resolved when a module is loaded: ``"pkg.mod"`` or ``"pkg.mod:attr"``
    (imported), or ``upstream=(dist, path, names)`` (another module of the wheel, loaded the same
    way)."""

    def __init__(self, target=None, *, upstream=None):
        self.target, self.upstream = target, upstream

    def resolve(self):
        if self.upstream is not None:
            return module(*self.upstream)
        import importlib
        mod, _, attr = self.target.partition(":")
        obj = importlib.import_module(mod)
        return getattr(obj, attr) if attr else obj


# Names the kept statements of an upstream module use that a dropped import bound, supplied by
# the loader: (distribution, module path in the wheel or None for all its modules) ->
# {name: (value or Ref, why)}.
SUPPLIED = {
    ("liger-kernel", None): {
        "compare_version": (_triton_version_at_least,
                            "liger_kernel.ops.utils.compare_version: in the `if` that picks libdevice's "
                            "rsqrt/tanh (triton >= 3.0); same answer for triton's X.Y.Z versions"),
        "is_npu_available": (lambda: False,
                             "liger_kernel.utils.is_npu_available: in the same `if`; Ascend NPUs are "
                             "no tensorplay device"),
    },
    ("flag-gems", None): {
        "runtime": (Ref("corpus.flaggems.runtime"),
                    "flag_gems.runtime: get_tuned_config / get_heuristic_config, which the kernels' "
                    "decorators call; corpus/flaggems/runtime.py answers them from this wheel's "
                    "nvidia tune_configs.yaml and heuristics_config_utils.py (flag_gems' own "
                    "runtime detects the vendor through torch)"),
        "libentry": (Ref("corpus.flaggems.runtime:libentry"),
                     "flag_gems.utils.libentry: a launch cache reading torch's current stream and "
                     "device; a no-op decorator (wrap_triton launches the JITFunction it wraps)"),
        "tle": (Ref(upstream=("flag-gems", "flag_gems/utils/triton_lang_extension.py",
                              ["program_id", "num_programs"])),
                "flag_gems.utils.triton_lang_extension: this wheel's module, loaded as the kernels are"),
        "tl_extra_shim": (Ref("triton.language.extra.cuda.libdevice"),
                          "flag_gems.utils.tl_extra_shim: the vendor's libdevice, which FlagGems "
                          "imports as triton.language.extra.<vendor>.libdevice; nvidia's "
                          "(groupnorm.py binds rsqrt from it)"),
    },
    ("unsloth", None): {
        "triton_tanh": (Ref("triton.language.extra.libdevice:tanh"),
                        "from .utils: unsloth/kernels/utils.py binds it to libdevice.tanh for "
                        "triton >= 3.0 off xpu (an `if` on its torch-based DEVICE_TYPE)"),
        "triton_cast": (Ref("triton.language:cast"),
                        "from .utils: tl.cast, bound in the same `if` of unsloth/kernels/utils.py"),
    },
    ("flag-gems", "flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py"): {
        "torch": (Ref("corpus.flaggems.runtime:torch_cuda_shim"),
                  "torch -> tensorplay: softmax_heur_tile_k asks torch.cuda for the SM count "
                  "(get_device_properties(current_device()).multi_processor_count); answered by "
                  "tensorplay.cuda, and 1 without a GPU (the interpreter; torch would raise)"),
    },
}


def _supplied(dist, path):
    out = dict(SUPPLIED.get((dist, None), {}))
    out.update(SUPPLIED.get((dist, path), {}))
    return out


def cache_dir() -> pathlib.Path:
    """``$TENSORPLAY_CORPUS_WHEELS``, else ``.corpus-wheels`` at the repository root."""
    env = os.environ.get("TENSORPLAY_CORPUS_WHEELS")
    return pathlib.Path(env) if env else _REPO / ".corpus-wheels"


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_WHEELS: dict[str, pathlib.Path] = {}


def wheel(dist: str) -> pathlib.Path:
    """The pinned wheel of ``dist`` in the cache, downloaded there first if missing.

    Raises :class:`UpstreamUnavailable` when it is missing and cannot be downloaded (no network,
    no pip), and ``RuntimeError`` when the file there is not the pinned one (wrong sha256)."""
    if dist in _WHEELS:
        return _WHEELS[dist]
    pin = PINS[dist]
    cache = cache_dir()
    path = cache / pin.wheel
    if not path.is_file():
        _download(pin, cache)
    got = _sha256(path)
    if got != pin.sha256:
        raise RuntimeError(f"{path}: sha256 {got}, not the pinned {pin.sha256} of "
                           f"{pin.dist}=={pin.version}; delete it to download it again")
    _WHEELS[dist] = path
    return path


def _download(pin: Pin, cache: pathlib.Path) -> None:
    spec = f"{pin.dist}=={pin.version}"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".download-", dir=cache)
    except OSError as e:
        raise UpstreamUnavailable(f"{spec}: cache folder {cache} not writable ({e})") from None
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--no-input", "--retries", "1", "--timeout", "30",
               "-q", spec, "-d", tmp]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise UpstreamUnavailable(f"{spec}: not in {cache} and `pip download` failed: {e}") from None
        got = os.path.join(tmp, pin.wheel)
        if proc.returncode != 0 or not os.path.isfile(got):
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise UpstreamUnavailable(
                f"{spec}: not in {cache} (set TENSORPLAY_CORPUS_WHEELS to a cache folder holding "
                f"{pin.wheel}, or the src/ folder that a run with the wheel wrote there) and "
                f"`pip download` failed (exit {proc.returncode}): "
                + " | ".join(tail))
        os.replace(got, cache / pin.wheel)      # atomic: concurrent runs see all or nothing
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- what of a module is run ----------------------------------------------------------------

def _import_roots(node):
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom):
        return {(node.module or "").split(".")[0]} if node.level == 0 else {"."}
    return set()


def _only_imports(node) -> bool:
    """An import, or an ``if``/``try`` whose every branch holds only imports and ``pass``."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(node, ast.If):
        return all(_only_imports(n) for n in [*node.body, *node.orelse])
    if isinstance(node, ast.Try):
        return all(_only_imports(n) for n in
                   [*node.body, *node.orelse, *node.finalbody, *(s for h in node.handlers for s in h.body)])
    return False


def _all_imports(node):
    for n in ast.walk(node):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            yield n


def _defined(node) -> set[str]:
    """Top-level names a statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    out = set()
    targets = (node.targets if isinstance(node, ast.Assign)
               else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
    for t in targets:
        out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    for imp in _all_imports(node):
        out |= {(a.asname or a.name).split(".")[0] for a in imp.names}
    return out


def _free_names(node) -> set[str]:
    """Names a kept statement reads from module scope (not a function's parameters and locals,
    nor a comprehension's variables)."""
    def free(n):
        names = [x for x in ast.walk(n) if isinstance(x, ast.Name)]
        params = {x.arg for x in ast.walk(n) if isinstance(x, ast.arg)}    # lambdas' parameters
        return ({x.id for x in names if isinstance(x.ctx, ast.Load)}
                - {x.id for x in names if isinstance(x.ctx, (ast.Store, ast.Del))} - params)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return free(node)
    a = node.args
    params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    inner = free(ast.Module(body=node.body, type_ignores=[])) - params
    # decorators, defaults and annotations are evaluated at module scope
    outer = [*node.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None),
             *(x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.annotation)]
    return inner.union(*(free(e) for e in outer))


def _select(tree, names, module, supplied):
    """The top-level statements to run: the module's imports of modules that are not dropped
    (and the ``if``/``try`` blocks made only of such imports), ``names``' definitions and every
    top-level definition they use, in upstream's order."""
    body = tree.body
    keep, candidates = set(), []
    for i, node in enumerate(body):
        if _only_imports(node):
            roots = set().union(*(_import_roots(n) for n in _all_imports(node)))
            if not roots & set(DROPPED_IMPORTS):
                keep.add(i)
        else:
            candidates.append(i)
    defs: dict[str, list[int]] = {}
    for i in [*sorted(keep), *candidates]:
        for n in _defined(body[i]):
            defs.setdefault(n, []).append(i)
    missing = [n for n in names if n not in defs]
    if missing:
        raise RuntimeError(f"{module}: no top-level definition of {missing} in this release")
    todo, seen = [*sorted(keep), *(i for n in names for i in defs[n])], set()
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        keep.add(i)
        todo.extend(j for name in _free_names(body[i]) for j in defs.get(name, ()) if j not in seen)
    kept = [body[i] for i in sorted(keep)]
    bound = set(dir(builtins)) | set(supplied) | {"__name__", "__file__"}
    for node in kept:
        bound |= _defined(node)
    used = set()
    for node in kept:
        free = _free_names(node)
        used |= free
        unbound = free - bound
        if unbound:
            label = getattr(node, "name", None) or ast.unparse(node).splitlines()[0][:60]
            raise RuntimeError(f"{module}: {label} names {sorted(unbound)}, which the loader does "
                               "not run or supply (see DROPPED_IMPORTS / SUPPLIED)")
    return kept, used & set(supplied)


_MODULES: dict[tuple[str, str], types.ModuleType] = {}


def _write(file: pathlib.Path, data: bytes) -> None:
    if file.is_file() and file.read_bytes() == data:
        return
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, file)       # atomic: concurrent readers see all or nothing


def _recorded(pin: Pin, path: str, data: bytes) -> bool:
    """``data`` is file ``path`` of the pinned release: the copy of the wheel's RECORD under
    ``pin.src`` has the pinned sha256 and lists ``path`` with ``data``'s sha256."""
    import base64
    record = pin.src / pin.record
    if not record.is_file() or _sha256(record) != pin.record_sha256:
        return False
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest}," in record.read_text(encoding="utf-8")


def read_text(dist: str, path: str) -> str:
    """The text of file ``path`` of ``dist``'s pinned release, written verbatim under
    ``Pin.src`` (with the wheel's RECORD) the first time it is read from the wheel.

    Without the wheel in the cache, a copy under ``Pin.src`` is used when the wheel's RECORD
    copied there has the pinned sha256 and gives that file's sha256 (so a machine without network
    needs only ``CACHE/src``, well under a megabyte, not the wheels); else the wheel is downloaded
    (:func:`wheel`)."""
    pin = PINS[dist]
    if not (cache_dir() / pin.wheel).is_file() and dist not in _WHEELS:
        copy = pin.src / path
        if copy.is_file() and _recorded(pin, path, copy.read_bytes()):
            return copy.read_text(encoding="utf-8")
    with zipfile.ZipFile(wheel(dist)) as z:
        data = z.read(path)
        _write(pin.src / pin.record, z.read(pin.record))
    _write(pin.src / path, data)
    return data.decode("utf-8")


def module(dist: str, path: str, names) -> types.ModuleType:
    """Upstream module ``path`` (inside the wheel) with ``names`` and what they need run."""
    key = (dist, path)
    cached = _MODULES.get(key)
    if cached is not None and all(hasattr(cached, n) for n in names):
        return cached
    src = read_text(dist, path)
    file = PINS[dist].src / path
    tree = ast.parse(src, filename=str(file))
    wanted = set(names) | (set(cached.__dict__.get("__corpus_names__", ())) if cached else set())
    supplied = _supplied(dist, path)
    kept, used = _select(tree, sorted(wanted), path, supplied)
    code = compile(ast.Module(body=kept, type_ignores=[]), str(file), "exec")
    name = "corpus_upstream." + path[:-3].replace("/", ".")
    mod = types.ModuleType(name)
    mod.__file__ = str(file)
    mod.__corpus_names__ = tuple(sorted(wanted))
    mod.__dict__.update({k: v.resolve() if isinstance(v, Ref) else v
                         for k, (v, _) in supplied.items() if k in used})
    sys.modules[name] = mod     # inspect.getmodule / Triton find the functions' module
    exec(code, mod.__dict__)
    _MODULES[key] = mod
    return mod


def load(dist: str, spec: dict[str, list[str]]) -> dict[str, object]:
    """``{module path in the wheel: [names]}`` -> ``{name: object}``, each name from its module
    (:func:`module`). A name requested from two modules is an error."""
    out: dict[str, object] = {}
    for path, names in spec.items():
        mod = module(dist, path, names)
        for n in names:
            if n in out:
                raise RuntimeError(f"{n} requested from two modules")
            out[n] = getattr(mod, n)
    return out
