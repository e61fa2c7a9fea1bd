"""PyTorch's own documentation examples, run on torch and on TensorPlay: code nobody here wrote.

torch_doc_examples.txt holds the ``>>>`` examples of PyTorch 2.13.0's docstrings, verbatim
(written by _extract_doc_examples.py; PyTorch's BSD license is in the file's header): every
function of ``tensorplay.__all__`` that torch has, and every ``torch.Tensor`` method with
examples (run when ``tensorplay.Tensor`` has that method, skipped saying so otherwise).

Each docstring's examples are one session, run statement by statement twice: as written, on
torch, and translated by names only (``torch`` -> ``tp``, ``import torch`` -> ``import tensorplay
as tp``) on TensorPlay. Random values are made the same on both sides: ``randn``, ``rand``,
``randint``, ``randn_like``, ``rand_like``, ``randperm``, ``empty``, ``empty_like``,
``empty_strided`` call the library's own function (its arguments, dtype, shape, strides,
device, ``requires_grad`` are the library's), then its values are overwritten in place with the
next values of a NumPy generator seeded alike on both sides; ``multinomial``'s sample is checked
(valid indices, distinct without replacement, never a zero weight while a non-zero one is left)
and replaced the same way. Every value an expression statement returns (what the REPL prints)
and every ``print`` argument is compared: dtype, shape and values of a tensor (floating values
within a few ulps, NaN and the sign of zero included), type and value of a Python object, the
type name and field names of a named tuple (torch's ``return_types``), each element of a tuple
or list (``torch.Size`` is a tuple). A statement that raises on torch must raise on TensorPlay.

Where TensorPlay raises and torch does not, the variables torch's statement bound are copied
into TensorPlay's session (through NumPy), so one failure does not hide the statements after it.

``LENIENT`` lists the statements where TensorPlay deliberately differs (the reason given);
``KNOWN`` those not fixed yet, each an ``xfail(strict=True)`` case of its own (Tensor method gaps
are named so). Any other divergence fails, and so does a listed statement that agrees now.
``python tests/torch_bridge/test_torch_doc_examples.py`` prints the figures.
"""

from __future__ import annotations

import ast
import codeop
import math
import pathlib
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402
from _compare import values_match  # noqa: E402

CORPUS = pathlib.Path(__file__).with_name("torch_doc_examples.txt")

# Deliberate differences: {regular expression matching "example: statement" (the torch
# source): the reason}. A pattern must match some statement that diverges.
LENIENT: dict[str, str] = {
    r"torch\.set_default_dtype: torch\.tensor\(\[1\.2, 3j\]\)\.dtype.*|"
    r"torch\.is_floating_point: .*torch\.complex64.*|Tensor\.view: x\.view\(torch\.cfloat\).*|"
    r"Tensor\.(real|imag): x(=torch\.randn\(4, dtype=torch\.cfloat\)|\.real|\.imag)?":
        "no complex dtypes: TensorPlay's dtypes are SPEC section 2's list (floating, integer, "
        "bool)",
    r"torch\.from_dlpack: (import torch\.utils\.dlpack|capsule = .*|t3 = .*|t2|t)":
        "the legacy DLPack capsule API (torch.utils.dlpack.to_dlpack, from_dlpack(capsule)) is "
        "not provided: from_dlpack takes an object with __dlpack__ (the array API standard's "
        "protocol); t2 and t then differ because the capsule's tensor t3, copied from torch's "
        "session, shares no memory with them",
    r"torch\.no_grad: with torch\.no_grad\(\):\n    a = torch\.nn\.Parameter.*":
        "TensorPlay has no torch.nn (an operator platform: SPEC section 2's surface)",
    r"torch\.inference_mode: y\._version":
        "inference_mode is no_grad for TensorPlay: tensors made inside are ordinary tensors "
        "with a version counter (tensorplay.inference_mode's docstring: torch's "
        "inference-tensor restrictions are not modelled); torch's raise on _version",
    r"torch\.logsumexp: torch\.dist\(torch\.logsumexp\(a, 1\), .*":
        "the example prints the distance between two float32 computations of one value, "
        "rounding noise: each library's logsumexp is within 1 ulp of the exact value (on one "
        "element TensorPlay's rounds up, torch's down)",
    r"torch\.(acosh|atanh): (a|torch\.(acosh|atanh)\(a\))":
        "the example draws its input with Tensor.uniform_, whose random values this harness does "
        "not make alike on both sides (it does so for the factories listed in the module "
        "docstring); the ops themselves are compared in test_torch_gaps44.py",
    r"torch\.sort: x\.sort\(\)":
        "sort(stable=False) is stable in TensorPlay (NumPy's stable sort); the order torch's "
        "unstable kernel gives equal elements is unspecified (the example shows it differing)",
}
# Statements whose values are uninitialised memory (a method's: the factories above are made
# deterministic): dtype and shape compared, not values.
UNINITIALISED = [r"Tensor\.new_empty: tensor\.new_empty\(\(2, 3\)\)"]
# Divergences not fixed yet: {pattern: reason}; each an xfail(strict=True) case below.
KNOWN: dict[str, str] = {}    # none left (session 45: out= and Tensor.resize_)


# -- the corpus -------------------------------------------------------------------------------------

def load_corpus(path=CORPUS):
    """{"torch.add": [statement source, ...]}: a ``>>>`` line and its ``...`` lines are one
    statement, as in doctest; a ``>>>`` line that continues an unfinished statement (a slip in
    some docstrings) is joined to it."""
    blocks: dict[str, list[list[str]]] = {}
    name = None
    for line in path.read_text().splitlines():
        if line.startswith("#### "):
            name = line[5:].strip()
            blocks[name] = []
            continue
        if name is None or not line.startswith((">>>", "...")):
            continue
        text = line[4:] if line[3:4] == " " else line[3:]
        if line.startswith("...") and blocks[name]:
            blocks[name][-1].append(text)
        elif blocks[name] and _unfinished("\n".join(blocks[name][-1])):
            blocks[name][-1].append(text)
        else:
            blocks[name].append([text])
    return {n: [s for s in ("\n".join(g) for g in groups) if s.strip() and not all(
        x.strip().startswith("#") or not x.strip() for x in s.split("\n"))]
        for n, groups in blocks.items()}


def _unfinished(src):
    try:
        return codeop.compile_command(src, symbol="exec") is None and not src.rstrip().endswith(":")
    except SyntaxError:
        return False


def translate(src):
    """torch -> tp, names only."""
    src = re.sub(r"^import torch$", "import tensorplay as tp", src, flags=re.M)
    return re.sub(r"\btorch\b", "tp", src)


# -- deterministic random values ------------------------------------------------------------------

class _Det:
    """``mod`` (torch or tensorplay) with its random and uninitialised factories made
    deterministic: the library's function runs, then the values are overwritten in place with
    the next values of a seeded NumPy generator (the same sequence on both sides)."""

    def __init__(self, mod):
        self._mod, self._rng = mod, np.random.default_rng(0)

    def __getattr__(self, name):
        return getattr(self._mod, name)

    def _fill(self, r, kind="normal", low=0, high=2):
        mod, dt = self._mod, str(r.dtype).split(".")[-1]
        shape = tuple(r.shape)
        g = self._rng
        if dt == "bool":
            vals = g.random(shape) > 0.5
        elif dt.startswith(("int", "uint")):
            vals = g.integers(low, high, shape) if kind == "int" else g.integers(-5, 6, shape)
            vals = vals.astype(dt)
        else:
            vals = g.integers(low, high, shape).astype("float64") if kind == "int" else \
                g.random(shape) if kind == "uniform" else g.standard_normal(shape)
            vals = vals.astype("float32" if dt == "bfloat16" else dt)
        src = mod.from_numpy(np.array(vals).reshape(shape)).to(r.dtype)
        with mod.no_grad():
            r.copy_(src)
        return r

    def randn(self, *a, **k):
        return self._fill(self._mod.randn(*a, **k))

    def rand(self, *a, **k):
        return self._fill(self._mod.rand(*a, **k), "uniform")

    def randn_like(self, *a, **k):
        return self._fill(self._mod.randn_like(*a, **k))

    def rand_like(self, *a, **k):
        return self._fill(self._mod.rand_like(*a, **k), "uniform")

    def empty(self, *a, **k):
        return self._fill(self._mod.empty(*a, **k))

    def empty_like(self, *a, **k):
        return self._fill(self._mod.empty_like(*a, **k))

    def empty_strided(self, *a, **k):
        return self._fill(self._mod.empty_strided(*a, **k))

    def randint(self, *a, **k):
        r = self._mod.randint(*a, **k)
        pos = [x for x in a if not isinstance(x, (tuple, list))]
        low, high = (0, pos[0]) if len(pos) == 1 else tuple(pos[:2]) if pos else (0, 0)
        low, high = k.get("low", low), k.get("high", high)
        return self._fill(r, "int", low, high)

    def randperm(self, n, *a, **k):
        r = self._mod.randperm(n, *a, **k)
        src = self._mod.from_numpy(self._rng.permutation(n)).to(r.dtype)
        with self._mod.no_grad():
            r.copy_(src)
        return r

    def multinomial(self, input, num_samples, replacement=False, **k):
        r = self._mod.multinomial(input, num_samples, replacement, **k)
        p = np.asarray(input.detach().tolist(), dtype="float64").reshape(-1, input.shape[-1])
        got = np.asarray(r.tolist()).reshape(p.shape[0], num_samples)
        for row, s in zip(p, got):
            positive = int((row > 0).sum())
            bad = (s < 0).any() or (s >= row.size).any()
            bad = bad or (not replacement and len(set(s.tolist())) != s.size)
            zero_picks = sum(row[i] == 0 for i in s[: min(positive, s.size)])
            if bad or zero_picks:
                raise AssertionError(f"multinomial: invalid sample {s.tolist()} of weights "
                                     f"{row.tolist()}")
        keys = np.log(np.where(p > 0, p, 0) + 0.0, where=p > 0, out=np.full(p.shape, -np.inf))
        if replacement:
            c = np.cumsum(p, -1)
            u = self._rng.random((p.shape[0], num_samples)) * c[:, -1:]
            vals = (u[:, :, None] >= c[:, None, :]).sum(-1)
        else:
            keys = keys + self._rng.gumbel(size=p.shape)
            vals = np.argsort(-keys, -1, kind="stable")[:, :num_samples]
        src = self._mod.from_numpy(vals.reshape(tuple(r.shape)).astype("int64"))
        r.copy_(src)
        return r


# -- running a session ----------------------------------------------------------------------------

def _summary(r, lib):
    """A comparable picture of a value: ("T", dtype, shape, values), ("S", kind, items) or
    ("V", type name, value)."""
    T = torch.Tensor if lib == "torch" else tp.Tensor
    if isinstance(r, T):
        dt = str(r.dtype).split(".")[-1]
        if dt.startswith("complex"):
            return ("V", "complex tensor", dt)
        vals = np.asarray(r.detach().tolist()).reshape(tuple(r.shape))
        return ("T", dt, tuple(r.shape), vals)
    if isinstance(r, (tuple, list)):
        fields = getattr(type(r), "_fields", None) or getattr(type(r), "__match_args__", None)
        if fields:
            kind = (type(r).__name__,) + tuple(fields)
        else:
            kind = "list" if isinstance(r, list) else "tuple"
        return ("S", kind, tuple(_summary(x, lib) for x in r))
    if isinstance(r, (torch.dtype, tp.dtype)):
        return ("V", "dtype", str(r).split(".")[-1])
    if isinstance(r, (torch.device, tp.device)):
        return ("V", "device", str(r))
    if isinstance(r, np.ndarray):
        return ("V", "ndarray", str(r.dtype), r.tolist())
    if r is None or isinstance(r, (bool, int, float, str, np.generic)):
        return ("V", type(r).__name__, r)
    return ("V", "object", type(r).__name__)


def _same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "T" and (len(a) == 3 or len(b) == 3):    # uninitialised values: not compared
        return a[:3] == b[:3]
    if a[0] == "S":
        return a[1] == b[1] and len(a[2]) == len(b[2]) and all(map(_same, a[2], b[2]))
    if a[0] == "V":
        if a[1] != b[1] or len(a) != len(b):
            return False
        x, y = a[2], b[2]
        if isinstance(x, float) and isinstance(y, float):
            return x == y or math.isclose(x, y, rel_tol=1e-6) or (math.isnan(x) and math.isnan(y))
        return a[2:] == b[2:]
    if a[1] != b[1] or a[2] != b[2]:
        return False
    return values_match(a[1], a[3], b[3])


def _show(s):
    if s[0] == "T" and len(s) == 3:
        return f"T {s[1]} {s[2]} (values not compared)"
    if s[0] == "T":
        return f"T {s[1]} {s[2]} {np.array2string(s[3].ravel()[:12], precision=6)}"
    if s[0] == "S":
        return f"{s[1]}(" + ", ".join(_show(x) for x in s[2]) + ")"
    return repr(s[1:])


def _to_tp(v):
    """A torch value as TensorPlay's (for the session after a TensorPlay failure)."""
    if isinstance(v, torch.Tensor):
        dt = str(v.dtype).split(".")[-1]
        if not hasattr(tp, dt) or dt.startswith("complex"):
            raise TypeError(dt)
        a = v.detach()
        arr = (a.float() if dt == "bfloat16" else a).numpy().copy()
        t = tp.from_numpy(arr).to(getattr(tp, dt))
        return t.requires_grad_(v.requires_grad) if v.requires_grad and v.is_leaf else t
    if isinstance(v, torch.dtype):
        return getattr(tp, str(v).split(".")[-1])
    if isinstance(v, (tuple, list)) and not isinstance(v, torch.Size):
        out = [_to_tp(x) for x in v]
        return type(v)(out) if type(v) in (tuple, list) else tuple(out)
    return v


class _Session:
    def __init__(self, lib):
        self.lib = lib
        mod = torch if lib == "torch" else tp
        self.printed = []
        self.ns = {"numpy": np, "np": np, "math": math, "print": self._print,
                   ("torch" if lib == "torch" else "tp"): _Det(mod)}

    def _print(self, *args, **kwargs):
        self.printed.extend(_summary(a, self.lib) for a in args)

    def run(self, src):
        """("ok", [summaries]) or ("raised", message)."""
        self.printed = []
        if self.lib == "torch" and src.strip() == "import torch":
            return "ok", []
        if self.lib == "tp" and src.strip() == "import tensorplay as tp":
            return "ok", []
        try:
            tree = ast.parse(src)
            if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
                v = eval(compile(ast.Expression(tree.body[0].value), "<example>", "eval"), self.ns)
                return "ok", self.printed + ([] if v is None and self.printed else [_summary(v, self.lib)])
            exec(compile(tree, "<example>", "exec"), self.ns)
            return "ok", list(self.printed)
        except Exception as e:     # noqa: BLE001 - a refusal of either side is an outcome
            return "raised", f"{type(e).__name__}: {str(e)[:300]}"


def run_example(name):
    """[(label, outcome, detail)] for each statement of the example ``name``; outcome is
    "match", "both raised", "diverged" (values differ, or only torch raised) or "raised" (only
    TensorPlay raised)."""
    stmts = CORPUS_EXAMPLES[name]
    t_sess, p_sess = _Session("torch"), _Session("tp")
    dflt_t, dflt_p = torch.get_default_dtype(), tp.get_default_dtype()
    out = []
    try:
        for src in stmts:
            label = f"{name}: {src}"
            before = dict(t_sess.ns)
            t = t_sess.run(src)
            p = p_sess.run(translate(src))
            if t[0] == "raised" and p[0] == "raised":
                out.append((label, "both raised", ""))
            elif t[0] == "ok" and p[0] == "ok":
                if any(re.fullmatch(u, label, re.S) for u in UNINITIALISED):
                    t, p = (("ok", [x[:3] for x in r[1]]) for r in (t, p))
                same = len(t[1]) == len(p[1]) and all(map(_same, t[1], p[1]))
                detail = "" if same else (f"torch {[_show(x) for x in t[1]]}, tensorplay "
                                          f"{[_show(x) for x in p[1]]}")
                out.append((label, "match" if same else "diverged", detail))
            elif t[0] == "raised":
                out.append((label, "diverged", f"torch raised {t[1]}, tensorplay returned "
                                               f"{[_show(x) for x in p[1]]}"))
            else:
                out.append((label, "raised", f"tensorplay raised {p[1]}"))
                # the torch session's new or rebound values, into TensorPlay's
                for k, v in t_sess.ns.items():
                    if k in ("torch", "print") or before.get(k, _MISSING) is v and k in p_sess.ns:
                        continue
                    try:
                        p_sess.ns[k] = _to_tp(v)
                    except Exception:  # noqa: BLE001 - complex values: left out
                        p_sess.ns.pop(k, None)
    finally:
        torch.set_default_dtype(dflt_t)
        tp.set_default_dtype(dflt_p)
        torch.set_grad_enabled(True)
        tp.set_grad_enabled(True)
    return out


_MISSING = object()
CORPUS_EXAMPLES = load_corpus()


def _runs(name):
    """Whether TensorPlay has the function or method the example documents."""
    kind, _, attr = name.partition(".")
    return hasattr(tp, attr) if kind == "torch" else hasattr(tp.Tensor, attr)


def _listed(label, table):
    return [p for p in table if re.fullmatch(p, label, re.S)]


def _check(name, ignore=()):
    wrong, hit, diverged = [], set(), set()
    for label, outcome, detail in run_example(name):
        pats = _listed(label, LENIENT) + _listed(label, KNOWN)
        hit.update(pats)
        if outcome in ("match", "both raised"):
            continue
        if pats:
            diverged.update(pats)
        else:
            wrong.append(f"{label!r}: {outcome}: {detail}")
    assert not wrong, f"{len(wrong)} divergences:\n" + "\n".join(wrong)
    stale = sorted(p for p in hit - diverged if p not in ignore)
    assert not stale, f"listed but agreeing now: {stale}"


@pytest.mark.parametrize("name", [
    n if _runs(n) else pytest.param(n, marks=pytest.mark.skip(
        reason=f"tensorplay has no {n.replace('torch.', 'tensorplay.')}"))
    for n in CORPUS_EXAMPLES])
def test_doc_example_matches_torch(name):
    _check(name)


@pytest.mark.parametrize("pattern", [
    pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=v),
                 id=re.sub(r"\W+", "_", k.split(":")[0]).strip("_"))
    for k, v in KNOWN.items()])
def test_known_divergences(pattern):
    rows = [r for n in CORPUS_EXAMPLES if _runs(n) for r in run_example(n)
            if re.fullmatch(pattern, r[0], re.S)]
    assert rows, f"no statement matches {pattern!r}"
    wrong = [f"{label!r}: {outcome}: {detail}" for label, outcome, detail in rows
             if outcome not in ("match", "both raised")]
    assert not wrong, "\n".join(wrong[:5])


def test_listed_patterns_match_statements():
    labels = [f"{n}: {s}" for n, stmts in CORPUS_EXAMPLES.items() for s in stmts]
    unmatched = [p for p in (*LENIENT, *KNOWN, *UNINITIALISED)
                 if not any(re.fullmatch(p, x, re.S) for x in labels)]
    assert not unmatched, f"patterns matching no statement: {unmatched}"


def test_corpus_is_the_vendored_torch_examples():
    assert len(CORPUS_EXAMPLES) >= 150
    assert sum(map(len, CORPUS_EXAMPLES.values())) >= 700
    assert "torch.add" in CORPUS_EXAMPLES and "Tensor.view" in CORPUS_EXAMPLES


def figures():
    """Examples and statements by outcome (an example: the worst of its statements)."""
    ex = {"ran": 0, "matched": 0, "diverged": 0, "raised": 0, "not run": 0}
    st = {"match": 0, "both raised": 0, "diverged": 0, "raised": 0}
    rows = []
    for n in CORPUS_EXAMPLES:
        if not _runs(n):
            ex["not run"] += 1
            continue
        ex["ran"] += 1
        res = run_example(n)
        outs = {o for _, o, _ in res}
        for label, o, d in res:
            st[o] += 1
            if o in ("diverged", "raised"):
                rows.append(f"{o:8} {label!r} {d[:300]}")
        ex["raised" if "raised" in outs else "diverged" if "diverged" in outs else "matched"] += 1
    return ex, st, rows


if __name__ == "__main__":
    e, s, r = figures()
    print("\n".join(r))
    print("examples:", e)
    print("statements:", s)
