"""What FlagGems' kernels take from ``flag_gems.runtime`` and ``flag_gems.utils`` (ours).

The kernels' decorators ask ``runtime.get_tuned_config(name)`` (autotune configs) and
``runtime.get_heuristic_config(name)`` (``triton.heuristics`` functions). FlagGems answers from
the vendor backend it detects through torch; for nvidia, from
``flag_gems/runtime/backend/_nvidia/tune_configs.yaml`` and ``heuristics_config_utils.py``. Here
both are read from the same pinned wheel as the kernels (``corpus._upstream``):

* :func:`get_tuned_config`: the op's YAML entry (a small reader of the YAML the file uses: no
  PyYAML needed), each entry one ``triton.Config`` (``num_warps`` 4 and ``num_stages`` 2 unless
  given, FlagGems' defaults), a ``gen: true`` entry expanded over every combination of the lists
  its ``param_map`` names;
* :func:`get_heuristic_config`: the op's entry of ``HEURISTICS_CONFIGS``, the functions it names
  run as released (their one torch call, the SM count, answered by :data:`torch_cuda_shim`);
* :func:`libentry`: FlagGems' launch cache (it reads torch's current stream and device): a no-op,
  as ``wrap_triton`` launches the JITFunction it wraps.
"""

from __future__ import annotations

import ast
import itertools
import types

import triton

from .._host import current_sm_count
from .._upstream import module, read_text

DIST = "flag-gems"
_BACKEND = "flag_gems/runtime/backend/_nvidia/"
_DEFAULTS = {"num_warps": 4, "num_stages": 2}


def libentry():
    return lambda fn: fn


class _Cuda:
    """``torch.cuda``'s two calls in FlagGems' SM-count heuristic, answered by tensorplay.cuda."""

    @staticmethod
    def current_device():
        import tensorplay
        return tensorplay.cuda.current_device() if tensorplay.cuda.is_available() else None

    @staticmethod
    def get_device_properties(index):
        import tensorplay
        if index is None:        # no GPU: one program, what the corpus's host code uses on cpu
            return types.SimpleNamespace(multi_processor_count=current_sm_count())
        return tensorplay.cuda.get_device_properties(index)


torch_cuda_shim = types.SimpleNamespace(cuda=_Cuda)


# --- tune_configs.yaml ------------------------------------------------------------------------

def _scalar(text):
    text = text.strip()
    if text == "{}":
        return {}
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def _parse_block(lines, i, indent):
    """Lines[i:] at ``indent`` -> (value, next line): a list (``- ``) or a mapping (``key:``)."""
    if lines[i][1].startswith("- "):
        out = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
            # a list item: its first line moved right past the dash, then its other lines
            sub = [(indent + 2, lines[i][1][2:])]
            j = i + 1
            while j < len(lines) and lines[j][0] > indent:
                sub.append(lines[j])
                j += 1
            if ":" in sub[0][1]:
                out.append(_parse_block(sub, 0, indent + 2)[0])
            else:
                out.append(_scalar(sub[0][1]))
            i = j
        return out, i
    out = {}
    while i < len(lines) and lines[i][0] == indent:
        key, _, rest = lines[i][1].partition(":")
        if rest.strip():
            out[key.strip()] = _scalar(rest)
            i += 1
        elif i + 1 < len(lines) and lines[i + 1][0] > indent:
            out[key.strip()], i = _parse_block(lines, i + 1, lines[i + 1][0])
        else:
            out[key.strip()] = None
            i += 1
    return out, i


def _yaml_entry(text, name):
    """The value of top-level key ``name`` of the YAML ``text`` (block style, as the file is)."""
    lines = []
    for raw in text.splitlines():
        body = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if body.strip():
            lines.append((len(body) - len(body.lstrip()), body.strip()))
    for i, (indent, body) in enumerate(lines):
        if indent == 0 and body == f"{name}:":
            return _parse_block(lines, i + 1, lines[i + 1][0])[0]
    raise KeyError(f"{name}: not in {_BACKEND}tune_configs.yaml")


def _configs(entry):
    if not entry.get("gen"):
        kw = {k: entry.get(k, v) for k, v in _DEFAULTS.items()}
        return [triton.Config(dict(entry.get("META") or {}), **kw)]
    pmap = entry["param_map"]
    slots = [("META", k, v) for k, v in (pmap.get("META") or {}).items()]
    slots += [("kw", k, v) for k, v in pmap.items() if k != "META"]
    # a value naming one of the entry's lists iterates over it; any other value is fixed
    choices = [entry[v] if isinstance(v, str) and isinstance(entry.get(v), list) else [v]
               for _, _, v in slots]
    out = []
    for combo in itertools.product(*choices):
        meta, kw = {}, dict(_DEFAULTS)
        for (where, key, _), value in zip(slots, combo):
            (meta if where == "META" else kw)[key] = value
        out.append(triton.Config(meta, **kw))
    return out


def get_tuned_config(name):
    entries = _yaml_entry(read_text(DIST, _BACKEND + "tune_configs.yaml"), name)
    return [c for e in entries for c in _configs(e)]


# --- heuristics_config_utils.py ---------------------------------------------------------------

def get_heuristic_config(name):
    path = _BACKEND + "heuristics_config_utils.py"
    tree = ast.parse(read_text(DIST, path))
    (table,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "HEURISTICS_CONFIGS" for t in n.targets)]
    (entry,) = [v for k, v in zip(table.keys, table.values)
                if isinstance(k, ast.Constant) and k.value == name]
    names = {k.value: v.id for k, v in zip(entry.keys, entry.values)}
    mod = module(DIST, path, sorted(set(names.values())))
    return {key: getattr(mod, fn) for key, fn in names.items()}
