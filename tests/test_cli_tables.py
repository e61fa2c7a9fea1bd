"""The ``tensorplay`` tables at narrow widths (issue 29 §5): identifiers -- distribution names,
versions, op names, kernels -- are never split across lines, with the plain renderer and with
rich (``TENSORPLAY_CLI_RICH=1``/``0``); free text wraps, and rows overflow before a name breaks.
Run as users run it, through the console script's entry module."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

RICH = [pytest.param("0", id="plain"),
        pytest.param("1", id="rich", marks=pytest.mark.skipif(
            importlib.util.find_spec("rich") is None, reason="rich is not installed"))]


def cli(*args, columns=None, rich="0"):
    e = dict(os.environ)
    e.pop("COLUMNS", None)
    if columns:
        e["COLUMNS"] = str(columns)
    e["TENSORPLAY_CLI_RICH"] = rich
    p = subprocess.run([sys.executable, "-m", "_tensorplay_cli", *args], capture_output=True,
                       text=True, env=e, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def _whole(text: str, names) -> list:
    """The names that do not appear whole (as a token) anywhere in ``text``."""
    return [n for n in names if not re.search(rf"(?<![\w.:-]){re.escape(n)}(?![\w.:-])", text)]


@pytest.fixture(scope="module")
def plugin_names():
    recs = json.loads(cli("plugins", "--json"))
    names = {r["dist"] for r in recs} | {r["version"] for r in recs}
    ops = {o for r in recs for o in r["ops"]}
    return names, ops


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("rich", RICH)
def test_plugins_table_never_splits_names(plugin_names, columns, rich):
    names, ops = plugin_names
    out = cli("plugins", columns=columns, rich=rich)
    assert not _whole(out, names | ops), out
    if rich == "0" and columns == 80:     # the plain table fits 80 columns (names whole)
        assert max(len(line) for line in out.splitlines()) <= columns, out


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("rich", RICH)
def test_ops_table_never_splits_names(columns, rich):
    infos = json.loads(cli("ops", "-n", "example", "--json"))
    names = {i["name"] for i in infos} | {i["plugin"] for i in infos}
    out = cli("ops", "-n", "example", columns=columns, rich=rich)
    assert not _whole(out, names), out
    # the schema is free text: it wraps between words, never inside one
    words = {w for i in infos for w in i["schema"].split()}
    assert not _whole(out, words), out


@pytest.mark.parametrize("rich", RICH)
def test_check_table_never_splits_ops_or_kernels(tmp_path, rich):
    res = tmp_path / "r.json"
    out = cli("check", "--plugin", "example_ops", "--device", "cpu", "--test-utils",
              "test_schema", "-q", "--json", str(res), columns=60, rich=rich)
    rows = json.loads(res.read_text())["rows"]
    names = {r["op"] for r in rows} | {r["kernel"].split()[1] for r in rows}
    assert not _whole(out, names), out
