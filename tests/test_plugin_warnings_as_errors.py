"""A failing or suspicious plugin never breaks ``import tensorplay``, even when a warnings filter
turns warnings into errors (``python -W error``, pytest's ``filterwarnings = error``): the
``PluginWarning`` is then shown on stderr and the plugin is recorded, as without the filter."""

from __future__ import annotations

import pytest
from _plugin_dists import BROKEN_IMPORT, GOOD, PluginEnv

ERROR_FILTER = '''
_W.__exit__(None, None, None)
warnings.simplefilter("error")
'''

CHECK = '''
import tensorplay as tp
out = {"plugins": {p["dist"]: p["status"] for p in tp.plugins.list()},
       "sum": (tp.ones(2) + 1).tolist()}
result(out)
'''


@pytest.fixture
def env(tmp_path):
    return PluginEnv(tmp_path)


def test_broken_plugin_with_error_filter_does_not_break_import(env):
    env.dist("broken-pack", plugins={"brokenpack": "brokenpack"},
             modules={"brokenpack": BROKEN_IMPORT})
    env.dist("good-pack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    r = env.run(ERROR_FILTER + CHECK)
    assert r.rc == 0, r.stderr
    assert r.data["plugins"]["broken-pack"] == "failed"
    assert r.data["plugins"]["good-pack"] == "loaded"
    assert r.data["sum"] == [2.0, 2.0]
    assert "PluginWarning" in r.stderr and "broken-pack" in r.stderr
    assert "libbroken.so" in r.stderr


def test_shadowed_plugin_with_error_filter_does_not_break_import(env):
    env.dist("empty-pack", plugins={"emptypack": "emptypack"},
             modules={"emptypack": "x = 1\n"})
    r = env.run(ERROR_FILTER + CHECK)
    assert r.rc == 0, r.stderr
    assert r.data["plugins"]["empty-pack"] == "loaded"
    assert "registered no hooks" in r.stderr


def test_unknown_control_name_with_error_filter_does_not_break_import(env):
    env.dist("good-pack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    r = env.run(ERROR_FILTER + CHECK, TENSORPLAY_PLUGINS="cpu,goodpack,nosuchpack")
    assert r.rc == 0, r.stderr
    assert "nosuchpack" in r.stderr


def test_python_W_error_flag(env):
    env.dist("broken-pack", plugins={"brokenpack": "brokenpack"},
             modules={"brokenpack": BROKEN_IMPORT})
    # leave PRELUDE's recording context and drop its "always" filter: the interpreter's own
    # filters (-W error, from PYTHONWARNINGS) apply again
    r = env.run("_W.__exit__(None, None, None)\nassert warnings.filters[0][0] == 'always'\n"
                "warnings.filters.pop(0)\nassert warnings.filters[0][0] == 'error'\n" + CHECK,
                PYTHONWARNINGS="error")
    assert r.rc == 0, r.stderr
    assert r.data["plugins"]["broken-pack"] == "failed"
    assert "libbroken.so" in r.stderr


def test_without_filter_the_warning_is_still_a_warning(env):
    env.dist("broken-pack", plugins={"brokenpack": "brokenpack"},
             modules={"brokenpack": BROKEN_IMPORT})
    r = env.run(CHECK.replace("result(out)", 'out["w"] = plugin_warnings()\nresult(out)'))
    assert r.rc == 0, r.stderr
    assert any("broken-pack" in w for w in r.data["w"])
    assert "PluginWarning" not in r.stderr
