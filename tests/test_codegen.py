"""Generated functions are compiled in one place (``tensorplay._codegen``): each gets a stable
file name naming the generator and the op/graph, and its source is registered with linecache, so
a traceback through generated code shows the generated line (not a blank)."""

from __future__ import annotations

import traceback

import pytest
import tensorplay as tp
from tensorplay import library

pytestmark = pytest.mark.usefixtures("cpu")


class _Boom(Exception):
    pass


def _raise(*args, **kwargs):
    raise _Boom("kernel failed")


def _frames(exc):
    return [(f.filename, f.line) for f in traceback.extract_tb(exc.__traceback__)]


def test_dispatch_frame_shows_the_generated_line():
    with library.Library("cgtb", "FRAGMENT") as lib:
        boom = library.define("cgtb::boom(Tensor x, float scale=2.0) -> Tensor", lib=lib)
        boom.register_kernel(None, _raise)
        with pytest.raises(_Boom) as ei:
            boom(tp.ones(2))
    frames = _frames(ei.value)
    gen = [(fn, line) for fn, line in frames if fn.startswith("<tensorplay dispatch cgtb::boom")]
    assert gen, frames
    assert "return __f(x, scale)" in gen[0][1]   # the generated call, readable in the traceback


def test_autograd_and_compile_frames_show_their_lines():
    with library.Library("cgtb2", "FRAGMENT") as lib:
        f = library.define("cgtb2::f(Tensor x) -> Tensor", lib=lib)
        f.register_kernel(None, _raise)
        f.register_fake(lambda x: x.new_empty(x.shape))
        f.register_autograd(lambda ctx, g: g)
        with pytest.raises(_Boom) as ei:
            f(tp.ones(2, requires_grad=True))
        frames = _frames(ei.value)
        ag = [line for fn, line in frames if fn.startswith("<tensorplay autograd cgtb2::f")]
        assert ag and "__kern(x)" in ag[0], frames

        g = tp.compile(lambda x: f(x * 2.0))
        with pytest.raises(_Boom) as ei:
            g(tp.ones(2))
        frames = _frames(ei.value)
        run = [line for fn, line in frames if fn.startswith("<tensorplay.compile")]
        assert run and any("op" in line for line in run), frames


def test_an_op_defined_again_gets_its_own_file_name():
    names = []
    for _ in range(2):
        with library.Library("cgtb3", "FRAGMENT") as lib:
            g = library.define("cgtb3::g(Tensor x) -> Tensor", lib=lib)
            g.register_kernel(None, _raise)
            with pytest.raises(_Boom) as ei:
                g(tp.ones(1))
        names += [fn for fn, _ in _frames(ei.value) if fn.startswith("<tensorplay dispatch cgtb3::g")]
    assert len(names) == 2 and names[0] != names[1], names
