"""``repr(tensor)``: torch's printing rules (``torch._tensor_str`` with its default options).

* floats: 4 decimals (``tensor([1.0000, 2.5000])``); all-integral values print as ``1.``;
  scientific notation (``1.0000e-05``) when the non-zero magnitudes span more than 1000x, exceed
  1e8 or go below 1e-4; every element padded to one width;
* more than 1000 elements are summarised: the first and last 3 along each dimension with
  ``...`` between;
* lines wrap at 80 columns; ``dtype=`` is shown unless it is the default float dtype, int64 or
  bool; ``device=`` unless cpu; empty tensors show ``size=`` (unless 1-D) and a non-default dtype.

Only the elements that are printed are copied to the host (views are taken first), so printing a
large tensor is cheap. Pure Python: the core imports no array library.
"""

from __future__ import annotations

import math

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    """Width and style (int-like, fixed, scientific) chosen from the values that are printed."""

    def __init__(self, values, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        absv = [abs(v) for v in finite]
        lo, hi = min(absv), max(absv)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                fmt = f"{{:.{PRECISION}e}}"
                self.max_width = max(len(fmt.format(v)) for v in finite)
            else:
                self.max_width = max(len(f"{v:.0f}") + 1 for v in finite)
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            fmt = f"{{:.{PRECISION}e}}"
            self.max_width = max(len(fmt.format(v)) for v in finite)
        else:
            fmt = f"{{:.{PRECISION}f}}"
            self.max_width = max(len(fmt.format(v)) for v in finite)

    def format(self, v) -> str:
        if self.floating:
            if self.sci_mode:
                s = f"{{:{self.max_width}.{PRECISION}e}}".format(v)
            elif self.int_mode:
                s = f"{v:.0f}"
                if math.isfinite(v):
                    s += "."
            else:
                s = f"{{:.{PRECISION}f}}".format(v)
        else:
            s = str(v)
        return " " * (self.max_width - len(s)) + s


def _flat(x):
    if isinstance(x, list):
        for y in x:
            yield from _flat(y)
    else:
        yield x


def _summarized_values(t, summarize: bool) -> list:
    """The values that will be printed (torch's ``get_summarized_data``), as a flat list."""
    if not summarize:
        return list(_flat(t.tolist()))
    if t.ndim == 0:
        return [t.item()]
    n = t.shape[0]
    idx = range(n) if n <= 2 * EDGEITEMS else \
        list(range(EDGEITEMS)) + list(range(n - EDGEITEMS, n))
    if t.ndim == 1:
        return [t[i].item() for i in idx]
    out = []
    for i in idx:
        out.extend(_summarized_values(t[i], True))
    return out


def _vector(t, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / (fmt.max_width + 2))))
    n = t.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in t[:EDGEITEMS].tolist()] + [" ..."] +
                [fmt.format(v) for v in t[n - EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in t.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _body(t, indent: int, summarize: bool, fmt: _Formatter) -> str:
    nd = t.ndim
    if nd == 0:
        return fmt.format(t.item())
    if nd == 1:
        return _vector(t, indent, summarize, fmt)
    n = t.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        slices = ([_body(t[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."] +
                  [_body(t[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)])
    else:
        slices = [_body(t[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (nd - 1) + " " * (indent + 1)).join(slices) + "]"


def tensor_str(t, indent: int) -> str:
    """The bracketed values of real tensor ``t`` (no ``tensor(`` prefix or suffixes)."""
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > THRESHOLD
    fmt = _Formatter(_summarized_values(t, summarize), t.dtype.is_floating_point)
    return _body(t, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    parts.append(")")
    return "".join(parts)


def grad_fn_name(t):
    """The name ``repr`` shows for ``t.grad_fn`` (None: no history): ``"Invalid"`` where reading
    it raises (a view whose base was written in place after its creation forbade it, e.g. an
    output of ``unbind``), as torch's ``repr`` prints ``grad_fn=<Invalid>``."""
    try:
        fn = t.grad_fn
    except RuntimeError:
        return "Invalid"
    return None if fn is None else fn.name


def tensor_repr(t) -> str:
    """``repr`` of a real tensor, torch's layout: ``tensor([...], device=..., dtype=...,
    grad_fn=<...>)``."""
    from . import _dtype
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = _dtype.get_default_dtype()
    d = t.detach()    # views of it record nothing
    if d.numel() == 0:
        if d.ndim != 1:
            suffixes.append(f"size={tuple(d.shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if t.dtype not in (default, _dtype.int64, _dtype.bool):
            suffixes.append(f"dtype={t.dtype}")
        body = tensor_str(d, indent)
    name = grad_fn_name(t)
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
