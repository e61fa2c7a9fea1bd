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

:func:`host` runs the released HOST functions of a module the same way (upstream's text, only
what is asked for and what it uses), with ``torch`` bound to the framework given (tensorplay), the
module's kernels passed through ``wrap`` (``wrap_triton``) and the library's own imports loaded
likewise: :data:`HOST_BINDINGS`; library names bound instead of loaded (a registry, a vendor's
device module): :data:`HOST_SUPPLIED`; what is replaced because tensorplay lacks it:
:data:`HOST_OVERRIDES`; torch names tensorplay lacks, found while binding: :data:`MISSING`.
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
    package: str | None = None  # the import package, where not the wheel's name (fla-core: fla)

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
    # flash-linear-attention (https://github.com/fla-org/flash-linear-attention): its kernels and
    # host code ship as `fla-core` (package `fla`; `flash-linear-attention` adds the layers/models)
    Pin("fla-core", "0.6.0", "fla_core-0.6.0-py3-none-any.whl",
        "b0708b70e0b119cd58a0a5146ea56cb175cef6ed969d8ac60267e3e077ce3ebd",
        "21cc3735e00260dba738ac3ca321102373ba5267fd7035e98fc99dac245affe4", package="fla"),
    # Apple's Cut Cross-Entropy (https://github.com/apple/ml-cross-entropy): a 22 KB wheel, the
    # linear-cross-entropy kernels (logits never materialized) and their host code
    Pin("cut-cross-entropy", "25.1.1", "cut_cross_entropy-25.1.1-py3-none-any.whl",
        "e46f26d348f6a67927d17e65c5a212e795be13dcad5b10a77a200d6b8102d9d1",
        "c1ab652d9d5f304e6257066172e2d133ff71162a9be5503600656f185a3ab032"),
]}


class UpstreamUnavailable(RuntimeError):
    """The pinned wheel is neither in the cache nor downloadable (the message says why)."""


# Top-level imports of upstream modules that are not run, by module root: the kernels never
# name them (checked at load: a kept definition naming an unsupplied name fails the load).
DROPPED_IMPORTS = {
    "torch": "host code only (tensors, autograd.Function, DTensor); no kernel names torch; "
             "host() binds it to the framework it is given (HOST_BINDINGS)",
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
    "einops": "fla's host code (rearrange in module layers); no kernel names it",
    "fla": "flash-linear-attention's own modules (fla.utils: hardware detection through torch, "
           "env flags, decorators; fla.backends: the backend registry; fla.ops.utils.cache: the "
           "autotuner reading tuned configs): what the kernels use of them is in SUPPLIED; the "
           "host code's imports of them are loaded by host() (HOST_BINDINGS)",
    "cut_cross_entropy": "Cut Cross-Entropy's own modules imported by its kernel modules "
                         "(tl_utils' jit helpers, tl_autotune's config choice): what the kernels "
                         "use of them is in SUPPLIED; the host code's imports of them are loaded "
                         "by host() (HOST_BINDINGS)",
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
    way; with ``attr``, that module's attribute)."""

    def __init__(self, target=None, *, upstream=None, attr=None):
        self.target, self.upstream, self.attr = target, upstream, attr

    def resolve(self):
        if self.upstream is not None:
            mod = module(*self.upstream)
            return getattr(mod, self.attr) if self.attr else mod
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
    ("fla-core", None): {
        "autotune_cache_kwargs": ({}, "fla.utils.env: {'cache_results': FLA_CACHE_RESULTS} where "
                                      "triton.autotune takes cache_results (Triton's on-disk "
                                      "record of timings: which config runs is unchanged; the "
                                      "interpreter times nothing)"),
        "IS_AMD": (False, "fla.utils.hardware: AMD detection through torch / triton's driver; "
                          "False on NVIDIA and on cpu (the interpreter), as released there"),
        **{n: (Ref(f"corpus.fla.runtime:{n}"),
               f"fla.utils.hardware.{n}: computed there through torch.cuda at import; the same "
               "expression on tensorplay.cuda (corpus/fla/runtime.py), False without a GPU")
           for n in ("IS_NVIDIA", "IS_NVIDIA_HOPPER", "IS_NVIDIA_BLACKWELL", "IS_TF32_SUPPORTED",
                     "IS_TMA_SUPPORTED", "IS_GATHER_SUPPORTED")},
        **{n: (Ref(f"corpus.fla.runtime:{n}"),
               f"fla.utils.env.{n}: triton's version against {n[13:].replace('_', '.')} "
               "(packaging's parse; compare_version's numeric parts here, corpus/fla/runtime.py)")
           for n in ("TRITON_ABOVE_3_4_0", "TRITON_ABOVE_3_5_1", "TRITON_ABOVE_3_6_0",
                     "TRITON_ABOVE_3_7_1", "TRITON_ABOVE_3_8_0")},
        "IS_INTEL": (False, "fla.utils.hardware: the same for Intel GPUs"),
        "IS_NPU": (False, "fla.utils.hardware: the same for Ascend NPUs"),
        "check_shared_mem": (lambda arch="none", tensor_idx=0: False,
                             "fla.utils.hardware.check_shared_mem: whether the device's shared "
                             "memory reaches an arch's (through triton's driver and torch's device "
                             "count); False, its answer without a GPU (the interpreter), which "
                             "only picks the smaller autotune block lists (cumsum's BS_LIST)"),
        "fla_cache_autotune": (Ref("triton:autotune"),
                               "fla.ops.utils.cache.fla_cache_autotune: triton.autotune whose "
                               "Autotuner first looks for a tuned config in fla/configs/<GPU "
                               "name>/<kernel>.json (FLA_CACHE_MODE); the wheel ships none, so "
                               "it falls back to triton's autotune: that one"),
        **{n: (Ref(upstream=("fla-core", "fla/ops/utils/op.py", [n]), attr=n),
               f"from fla.ops.utils.op: this wheel's jit {n}, loaded as the kernels are")
           for n in ("exp", "exp2", "log", "log2", "unflatten_program_id", "safe_dot",
                     "make_tensor_descriptor", "gather")},
    },
    **{("cut-cross-entropy", f"cut_cross_entropy/{mod}.py"): {
        **{n: (Ref(upstream=("cut-cross-entropy", "cut_cross_entropy/tl_utils.py", [n]), attr=n),
               f"from cut_cross_entropy.tl_utils: this wheel's {n}, loaded as the kernels are")
           for n in names},
        auto: (Ref(upstream=("cut-cross-entropy", "cut_cross_entropy/tl_autotune.py", [auto]),
                   attr=auto),
               f"from cut_cross_entropy.tl_autotune: this wheel's {auto}, loaded as the kernels "
               "are (without CCE_AUTOTUNE=1, as released: triton.heuristics fixing its best "
               "config)"),
        **extra,
    } for mod, names, auto, extra in [
        ("cce_lse_forward", ["tl_logaddexp", "tl_softcapping"], "cce_forward_autotune", {
            "torch": (Ref("tensorplay"),
                      "torch -> tensorplay: the DOT_PRECISION heuristic asks "
                      "torch.get_float32_matmul_precision() ('high': tf32, else ieee); "
                      "tensorplay's answers the same question")}),
        ("indexed_dot", [], "indexed_dot_autotune", {}),
        ("cce_backward", ["tl_and_reduce_fn", "tl_lock_add", "tl_softcapping",
                          "tl_softcapping_grad"], "cce_backward_autotune", {}),
    ]},
    ("cut-cross-entropy", "cut_cross_entropy/tl_autotune.py"): {
        "torch": (Ref("tensorplay"),
                  "torch -> tensorplay: early_config_prune / estimate_matmul_time ask torch.cuda "
                  "for the device and its capability, only when CCE_AUTOTUNE=1 (autotuning on a "
                  "GPU); tensorplay.cuda answers the same questions"),
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
        if not isinstance(n, ast.Module):       # an `if` block's own imports (Unsloth's nullcontext)
            params |= {(al.asname or al.name).split(".")[0] for imp in _all_imports(n) for al in imp.names}
        # functions and classes defined inside (fla's `def grid(meta)` in a host function)
        params |= {x.name for x in ast.walk(n)
                   if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and x is not n}
        return ({x.id for x in names if isinstance(x.ctx, ast.Load)}
                - {x.id for x in names if isinstance(x.ctx, (ast.Store, ast.Del))} - params)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return free(node)
    a = node.args
    params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    # a function's own imports bind locals (poly_norm_backward's `import math`)
    params |= {(al.asname or al.name).split(".")[0] for imp in _all_imports(node) for al in imp.names}
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
    for i in candidates:    # names defined only inside a top-level `if`/`try` (fla's jit `exp`,
        if isinstance(body[i], (ast.If, ast.Try)):     # chosen by an env flag): that block
            for n in _defined_deep(body[i]) - set(defs):
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
        bound |= _defined_deep(node)    # an `if`/`else` binding a constant in both branches too
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
    if cached is not None:
        # more names of a module already run: only the statements not run yet run, in the same
        # namespace, so the kernels handed out before stay the objects in use (one compilation
        # cache; host code loaded later launches them)
        mod = cached
        todo = [n for n in kept if (n.lineno, n.col_offset) not in mod.__corpus_ran_at__]
    else:
        name = "corpus_upstream." + path[:-3].replace("/", ".")
        mod, todo = types.ModuleType(name), kept
        mod.__file__ = str(file)
        mod.__corpus_ran_at__ = set()    # the statements run, by their place in the file
        sys.modules[name] = mod     # inspect.getmodule / Triton find the functions' module
    mod.__corpus_names__ = tuple(sorted(wanted))
    for k, (v, _) in supplied.items():
        if k in used and k not in mod.__dict__:
            mod.__dict__[k] = v.resolve() if isinstance(v, Ref) else v
    exec(compile(ast.Module(body=todo, type_ignores=[]), str(file), "exec"), mod.__dict__)
    mod.__corpus_ran_at__ |= {(n.lineno, n.col_offset) for n in todo}
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


# --- host code ------------------------------------------------------------------------------
#
# :func:`host` runs a module's released HOST functions (the code around the launches: shapes,
# allocations, block sizes, the launch itself) the same way: upstream's text, only the requested
# top-level definitions and what they use, each compiled at its own line numbers. What differs
# from :func:`module` is the namespace they run in (:data:`HOST_BINDINGS`): ``torch`` is the
# framework the caller passes (tensorplay; torch on the reference side of
# benchmarks/bench_corpus.py), the module's kernels are :func:`module`'s objects passed through the
# caller's ``wrap`` (``tensorplay.library.wrap_triton``), and the library's own imports (``from
# liger_kernel.ops.utils import calculate_settings``, ``from ..utils import ...``) are that
# module's host definitions, loaded the same way. Where the released text asks the framework for
# something tensorplay lacks, the definition is replaced (:data:`HOST_OVERRIDES`, each with why;
# applied only when the framework is tensorplay) or the host function stays the corpus's own (the
# library's ops.py says which and why).

HOST_BINDINGS = {
    "torch": "the framework passed to host() (`torch -> tensorplay`: the module itself, the "
             "migration's only rename); `import torch.x.y as z` / `from torch.x import y` bind "
             "that module's attributes",
    "<kernels>": "a name the host code launches (a top-level def decorated by triton.* or "
                 "libentry) is module()'s kernel object passed through `wrap` "
                 "(tensorplay.library.wrap_triton): a raw `kernel[grid](...)` inside a triton_op "
                 "body must be `wrap_triton(kernel)[grid](...)`; the kernels themselves keep "
                 "their own namespace (module()), where other jit functions call them unwrapped",
    "<own imports>": "`from <library>.<module> import name` (or relative): that module's host "
                     "definition of `name`, loaded by host() with the same framework and wrap",
}


# (distribution, module path or None for all its modules) -> {name: (value, why)}: definitions
# replaced when the framework is tensorplay (the released one runs on torch). Each is a FINDING
# about tensorplay's torch surface, or a device tensorplay has no backend for.
HOST_OVERRIDES = {
    ("fla-core", None): {
        "autocast_custom_fwd": (lambda fn: fn,
                                "fla.utils.hardware: functools.partial(torch.amp.custom_fwd, "
                                "device_type=<device>) (defined in an `if` on torch's version, "
                                "checked with `packaging`); tensorplay has no torch.amp (no "
                                "autocast), so the decorator's one effect, running the forward and "
                                "backward under the caller's autocast state, has nothing to carry: "
                                "the identity"),
        "autocast_custom_bwd": (lambda fn: fn, "fla.utils.hardware: torch.amp.custom_bwd's partial; "
                                               "the identity, as autocast_custom_fwd"),
    },
    ("unsloth", "unsloth/device_type.py"): {
        "get_device_type": (lambda: "cuda",
                            "asks torch.xpu / torch.accelerator when cuda is not available and raises "
                            "NotImplementedError('... only works on NVIDIA, AMD and Intel GPUs') "
                            "without one (tensorplay.xpu and tensorplay.accelerator answer as "
                            "torch's on such a machine): 'cuda', the released answer on an NVIDIA "
                            "GPU and under its own test-only cpu fallback (UNSLOTH_ALLOW_CPU=1), so "
                            "the cpu interpreter runs the cuda branches as Unsloth's cpu tests do"),
    },
}


class _DeviceGuard:
    """FlagGems' ``torch_device_fn`` (``flag_gems.runtime``: the vendor's torch device module,
    ``torch.cuda`` on nvidia), for the framework given: ``device(d)`` is the framework's
    ``cuda.device(d)`` guard for a cuda device and no guard for a cpu one (the interpreter)."""

    def __init__(self, framework, wrap):
        self._framework = framework

    def device(self, d):
        import contextlib
        if getattr(d, "type", None) == "cuda":
            return self._framework.cuda.device(d)
        return contextlib.nullcontext()


class _LigerDispatch:
    """liger_kernel.backends.dispatch for the corpus: the op's Triton implementation, as released
    (its module in the wheel, loaded by host() with the same framework and wrap)."""

    TRITON = {"jsd_loss_and_grad": ("liger_kernel/ops/backends/_triton/jsd.py",
                                    "jsd_loss_and_grad_triton")}

    def __init__(self, framework, wrap):
        self._framework, self._wrap = framework, wrap

    def __call__(self, op_name, *args, impl=None, backend=None, **kwargs):
        path, name = self.TRITON[op_name]
        fn = host_module("liger-kernel", path, [name], framework=self._framework,
                         wrap=self._wrap).__dict__[name]
        return fn(*args, **kwargs)


def _register_op(*args, **kwargs):
    return lambda fn: fn


def _fla_dispatch(entry_point):
    """fla.backends.dispatch with no backend available: the function itself (``@dispatch``), or
    for ``@dispatch('<operation>')`` a decorator returning it."""
    return (lambda fn: fn) if isinstance(entry_point, str) else entry_point


def _fla_device_ctx(framework, wrap):
    """fla.utils.hardware.custom_device_ctx(index) for the framework given: its ``cuda.device``
    guard for an index, none for ``None`` (a cpu tensor's index: the interpreter)."""
    import contextlib

    def custom_device_ctx(index):
        if index is None:
            return contextlib.nullcontext()
        return framework.cuda.device(index)
    return custom_device_ctx


# (distribution, module path or None for all its modules) -> {name: (factory(framework, wrap),
# why)}: names the released host code imports from its library's modules that host() does not
# load (they pull in what the host code does not use), bound for every framework
HOST_SUPPLIED = {
    ("liger-kernel", None): {
        "dispatch": (_LigerDispatch,
                     "liger_kernel.backends.dispatch: picks an implementation of a primitive "
                     "(jsd_loss_and_grad: Triton, or CuTe-DSL on Hopper+) by device and "
                     "preference, reading torch's device state; here always the Triton one, "
                     "liger_kernel/ops/backends/_triton/jsd.py's jsd_loss_and_grad_triton as "
                     "released (the one dispatch picks without CuTe-DSL installed)"),
        "register_op": (lambda framework, wrap: _register_op,
                        "liger_kernel.backends.register_op: enters the function in that "
                        "registry; here the identity (dispatch above calls the function)"),
        "Capability": (lambda framework, wrap: dict,
                       "liger_kernel.backends.Capability: register_op's capability record, "
                       "unused with the identity register_op"),
    },
    ("fla-core", None): {
        "dispatch": (lambda framework, wrap: _fla_dispatch,
                     "fla.backends.dispatch (`@dispatch` or `@dispatch('<operation>')`): wraps a "
                     "host function so that a registered backend (Ascend's triton, TileLang) that "
                     "is available, enabled and accepts the call runs instead; with none of them "
                     "(no NPU, no tilelang) the function itself runs: the identity"),
        "custom_device_ctx": (_fla_device_ctx,
                              "fla.utils.hardware.custom_device_ctx (input_guard's device guard): "
                              "torch.<device>.device(index), the device module chosen by "
                              "fla.utils.hardware's detection through torch and triton's driver at "
                              "import; the framework's cuda.device(index), none for a cpu tensor "
                              "(index None), as released"),
    },
    ("flag-gems", None): {
        "torch_device_fn": (_DeviceGuard,
                            "from flag_gems.runtime: the vendor's torch device module (torch.cuda "
                            "on nvidia), chosen by flag_gems.runtime's vendor detection (torch, "
                            "YAML, every backend); the host code uses only its .device(d) guard: "
                            "the framework's cuda.device(d) on cuda, none on cpu (the interpreter, "
                            "where torch.cuda.device would refuse a cpu device)"),
    },
}


class HostUnsupported(RuntimeError):
    """The released host code reached a torch API that tensorplay lacks (a FINDING)."""


class _Missing:
    """A name the released host code imports from torch that tensorplay lacks: bound (so the
    functions that only name it on another device's branch load), raising when used."""

    def __init__(self, what, why):
        self._what, self._why = what, why

    def _fail(self, *a, **k):
        raise HostUnsupported(f"released host code used {self._what}: {self._why}")

    __call__ = _fail

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._fail()


# what the framework lacks, found while binding released host code: {(dist, path, name): what}
MISSING: dict[tuple[str, str, str], str] = {}


def _is_kernel(node) -> bool:
    """A kernel definition: a def decorated by ``triton.*`` / ``libentry``, or Unsloth's
    ``k = triton.jit(k)`` / ``k = triton.heuristics({...})(k)``."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        return ast.unparse(node.value.func).startswith(("triton.jit", "triton.heuristics",
                                                        "triton.autotune", "libentry"))
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for d in node.decorator_list:
        text = ast.unparse(d)
        if text.startswith(("triton.", "libentry", "tl.")):
            return True
    return False


def _defined_deep(node) -> set[str]:
    """Top-level names a statement binds, also inside a top-level ``if``/``try`` (kl_div.py's
    ``MAX_FUSED_SIZE``, chosen by an ``if`` on the device)."""
    if isinstance(node, (ast.If, ast.Try)):
        subs = [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                *(s for h in getattr(node, "handlers", []) for s in h.body)]
        return set().union(*(_defined_deep(s) for s in subs))
    return _defined(node)


def _import_bindings(node):
    """``name -> (module, attr or None, level)`` bound by the imports in a statement."""
    out = {}
    for imp in _all_imports(node):
        for a in imp.names:
            if isinstance(imp, ast.Import):
                if a.asname:
                    out[a.asname] = (a.name, None, 0)
                else:
                    root = a.name.split(".")[0]
                    out.setdefault(root, (root, None, 0))
            else:
                out[a.asname or a.name] = (imp.module or "", a.name, imp.level)
    return out


def _host_select(tree, names, path, pinned):
    """The host statements to run for ``names``: like :func:`_select`, but the kernels a host
    statement names, the names bound by dropped imports and the ``pinned`` ones (overrides and
    supplied values, which win over the module's own definitions) are returned to be bound."""
    body = tree.body
    keep, defs, kernels, imported = set(), {}, {}, {}
    for i, node in enumerate(body):
        if _only_imports(node):
            roots = set().union(*(_import_roots(n) for n in _all_imports(node)))
            if not roots & set(DROPPED_IMPORTS):
                keep.add(i)
                for n in _defined(node):
                    defs.setdefault(n, []).append(i)
            else:
                for n, b in _import_bindings(node).items():
                    imported.setdefault(n, b)
        elif _is_kernel(node):
            for n in _defined(node):
                kernels[n] = i
        else:
            for n in _defined_deep(node):
                defs.setdefault(n, []).append(i)
    for n in kernels:       # Unsloth's plain `def k` before `k = triton.jit(k)`: a kernel
        defs.pop(n, None)
    missing = [n for n in names if n not in defs and n not in pinned and n not in imported
               and n not in kernels]
    if missing:
        raise RuntimeError(f"{path}: no top-level host definition of {missing} in this release")
    bound = set(dir(builtins)) | {"__name__", "__file__"}
    used_pinned, used_kernels, used_imported = set(), set(), set()
    todo, seen = [*sorted(keep), *(i for n in names if n not in pinned for i in defs.get(n, ()))], set()
    # asked for by another module's import: a kernel (wrapped), or a name this one imports
    used_kernels |= {n for n in names if n not in pinned and n not in defs and n in kernels}
    used_imported |= {n for n in names if n not in pinned and n not in defs and n in imported}
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        keep.add(i)
        for name in _free_names(body[i]):
            if name in pinned:
                used_pinned.add(name)
            elif name in defs:
                todo.extend(j for j in defs[name] if j not in seen)
            elif name in kernels:
                used_kernels.add(name)
            elif name in imported:
                used_imported.add(name)
            elif name not in bound:
                label = getattr(body[i], "name", None) or ast.unparse(body[i]).splitlines()[0][:60]
                raise RuntimeError(f"{path}: {label} names {name!r}, bound nowhere in the module")
    return ([body[i] for i in sorted(keep)], used_pinned, sorted(used_kernels),
            {n: imported[n] for n in used_imported})


def _module_path(dist, modname, level, path):
    """The wheel path of module ``modname`` imported from ``path`` (``level`` dots)."""
    if level:
        base = path.split("/")[:-level]
        parts = base + ([p for p in modname.split(".") if p] if modname else [])
    else:
        parts = modname.split(".")
    stem = "/".join(parts)
    with zipfile.ZipFile(wheel(dist)) if (cache_dir() / PINS[dist].wheel).is_file() else \
            _NoZip(dist) as z:
        names = set(z.namelist())
    for cand in (stem + ".py", stem + "/__init__.py"):
        if cand in names:
            return cand
    return None


class _NoZip:
    """The wheel's file list from its RECORD copy under CACHE/src (no wheel in the cache)."""

    def __init__(self, dist):
        self.dist = dist

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def namelist(self):
        pin = PINS[self.dist]
        record = pin.src / pin.record
        if not record.is_file() or _sha256(record) != pin.record_sha256:
            wheel(self.dist)            # downloads, or raises UpstreamUnavailable
            with zipfile.ZipFile(wheel(self.dist)) as z:
                return z.namelist()
        return [line.split(",")[0] for line in record.read_text(encoding="utf-8").splitlines()]


def _framework_attr(framework, dotted):
    obj = framework
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


_HOSTS: dict[tuple, types.ModuleType] = {}


def host_module(dist: str, path: str, names, *, framework, wrap) -> types.ModuleType:
    """Module ``path``'s released host definitions ``names`` (and what they use) run with
    ``torch`` bound to ``framework`` and the module's kernels passed through ``wrap``
    (:data:`HOST_BINDINGS`, :data:`HOST_OVERRIDES`)."""
    key = (dist, path, id(framework), id(wrap))
    cached = _HOSTS.get(key)
    if cached is not None and all(n in cached.__dict__ for n in names):
        return cached
    wanted = set(names) | (set(cached.__corpus_names__) if cached is not None else set())
    src = read_text(dist, path)
    file = PINS[dist].src / path
    tree = ast.parse(src, filename=str(file))
    pinned = {k: (v.resolve() if isinstance(v, Ref) else v) for k, (v, _) in _supplied(dist, path).items()}
    if framework.__name__ != "torch":
        for where in ((dist, None), (dist, path)):
            pinned.update({k: v for k, (v, _) in HOST_OVERRIDES.get(where, {}).items()})
    for where in ((dist, None), (dist, path)):
        pinned.update({k: make(framework, wrap)
                       for k, (make, _) in HOST_SUPPLIED.get(where, {}).items()})
    pinned["torch"] = framework
    kept, used_pinned, kernels, imported = _host_select(tree, sorted(wanted), path, pinned)
    ns = {"__name__": "corpus_upstream_host." + path[:-3].replace("/", "."), "__file__": str(file)}
    ns.update({k: pinned[k] for k in used_pinned})
    if kernels:
        kmod = module(dist, path, kernels)
        ns.update({k: wrap(getattr(kmod, k)) for k in kernels})
    for name, (modname, attr, level) in imported.items():
        root = modname.split(".")[0]
        if level == 0 and root == "torch":
            dotted = modname + ("." + attr if attr else "")
            try:
                ns[name] = _framework_attr(framework, dotted)
            except AttributeError:
                why = f"{framework.__name__} has no {dotted.replace('torch', framework.__name__, 1)}"
                MISSING[(dist, path, name)] = why
                ns[name] = _Missing(dotted, why)
            continue
        target = _module_path(dist, modname, level, path) if (level or root in _packages(dist)) else None
        if target is None or attr is None:
            raise RuntimeError(f"{path}: the host code names {name!r} (import of {modname!r}), "
                               "which host() neither binds nor loads")
        ns[name] = host_module(dist, target, [attr], framework=framework, wrap=wrap).__dict__[attr]
    mod = types.ModuleType(ns["__name__"])
    mod.__dict__.update(ns)
    mod.__corpus_names__ = tuple(sorted(wanted))
    # as module() does: a released @dataclass finds its module there (its field annotations are
    # strings, under this file's `from __future__ import annotations` that compile() passes on)
    sys.modules[ns["__name__"]] = mod
    exec(compile(ast.Module(body=kept, type_ignores=[]), str(file), "exec"), mod.__dict__)
    for n in wanted:
        if n not in mod.__dict__ and n in pinned:
            mod.__dict__[n] = pinned[n]
    _HOSTS[key] = mod
    return mod


def _packages(dist):
    pin = PINS[dist]
    return {pin.package or pin.wheel.split("-")[0]}


def host(dist: str, spec: dict[str, list[str]], *, framework, wrap) -> dict[str, object]:
    """``{module path in the wheel: [host names]}`` -> ``{name: object}``
    (:func:`host_module`). A name requested from two modules is an error."""
    out: dict[str, object] = {}
    for path, names in spec.items():
        mod = host_module(dist, path, names, framework=framework, wrap=wrap)
        for n in names:
            if n in out:
                raise RuntimeError(f"{n} requested from two modules")
            out[n] = mod.__dict__[n]
    return out
