"""Write torch_doc_examples.txt: the ``>>>`` examples of PyTorch's docstrings, verbatim.

Run by hand (``python tests/torch_bridge/_extract_doc_examples.py``) with torch installed, to
vendor the examples of another torch version; test_torch_doc_examples.py reads the file, so the
corpus does not move when the installed torch does. Selected: every name of
``tensorplay.__all__`` that torch has (its docstring: ``torch/_torch_docs.py`` and the Python
functions), and every ``torch.Tensor`` attribute whose docstring has examples
(``torch/_tensor_docs.py``), whether TensorPlay has it yet or not (the test runs those it has).

Only the source lines are kept (``>>>`` and their ``...`` continuation lines); the outputs
torch's docs show are not: the test runs torch itself as the reference.
"""

from __future__ import annotations

import pathlib

HEADER = """\
# The code examples (">>>" source lines only) of PyTorch {version}'s docstrings: the functions
# of tensorplay.__all__ that torch has, and every torch.Tensor method with examples. Written by
# _extract_doc_examples.py; read by test_torch_doc_examples.py. Copied verbatim from PyTorch,
# which carries this license:
#
{license}
"""


def examples(doc: str | None) -> list[str]:
    """The example source lines of a docstring: ``>>>`` lines and the ``...`` lines right after."""
    out, in_example = [], False
    for line in (doc or "").splitlines():
        s = line.strip()
        if s.startswith(">>>"):
            out.append(s)
            in_example = True
        elif in_example and s.startswith("..."):
            out.append(s)
        else:
            in_example = False
    return out


def main() -> None:
    import torch

    import tensorplay as tp

    lic = pathlib.Path(torch.__file__).parent.parent / \
        f"torch-{torch.__version__}.dist-info" / "licenses" / "LICENSE"
    text = lic.read_text().split("\n\n3. Neither")[0] if lic.exists() else ""
    # the BSD license of PyTorch's own part (up to the end of its conditions and disclaimer)
    full = lic.read_text() if lic.exists() else ""
    start = full.find("From PyTorch:")
    end = full.find("SUCH DAMAGE.")
    text = full[start:end + len("SUCH DAMAGE.")] if start >= 0 and end > 0 else text
    blocks = []
    for name in tp.__all__:
        obj = getattr(torch, name, None)
        if obj is None or isinstance(obj, type(torch)):
            continue
        ex = examples(getattr(obj, "__doc__", None))
        if ex:
            blocks.append((f"torch.{name}", ex))
    for name in sorted(dir(torch.Tensor)):
        if name.startswith("__"):
            continue
        doc = getattr(getattr(torch.Tensor, name, None), "__doc__", None)
        ex = examples(doc if isinstance(doc, str) else None)
        if ex:
            blocks.append((f"Tensor.{name}", ex))
    out = [HEADER.format(version=torch.__version__.split("+")[0],
                         license="\n".join(("# " + x).rstrip() for x in text.splitlines()))]
    for name, ex in blocks:
        out.append(f"#### {name}")
        out.extend(ex)
    path = pathlib.Path(__file__).with_name("torch_doc_examples.txt")
    path.write_text("\n".join(out) + "\n")
    print(f"{path}: {len(blocks)} docstrings, {sum(len(e) for _, e in blocks)} lines")


if __name__ == "__main__":
    main()
