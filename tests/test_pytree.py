"""One walker over nested argument structures (``tensorplay._pytree``): flatten/unflatten/map
over lists, tuples, dicts and named tuples of tensors, with a spec; used by compile, capture,
opcheck and the aot check."""

from __future__ import annotations

import collections

import pytest
import tensorplay as tp
from tensorplay import _pytree   # the private module's own unit tests (no public spelling)

pytestmark = pytest.mark.usefixtures("cpu")

Pair = collections.namedtuple("Pair", "a b")


def test_flatten_unflatten_round_trip_keeps_containers_and_constants():
    a, b, c = tp.ones(1), tp.zeros(2), tp.ones(3)
    tree = ([a, (b, 3, "s")], {"k": c, "n": None}, Pair(a, 2.5))
    leaves, spec = _pytree.tree_flatten(tree, tp.Tensor)
    assert [id(x) for x in leaves] == [id(a), id(b), id(c), id(a)]
    hash(spec)                                    # hashable when the constants are
    new = [tp.full((1,), 7.0), b, c, a]
    out = _pytree.tree_unflatten(spec, new)
    assert type(out) is tuple and type(out[0]) is list and type(out[2]) is Pair
    assert out[0][0] is new[0] and out[0][1] == (b, 3, "s") and out[1] == {"k": c, "n": None}
    assert out[2].b == 2.5


def test_map_and_leaves_agree_and_subclasses_are_constants():
    class L(list):
        pass

    x = tp.ones(2)
    tree = {"a": [x, L([x])], "b": Pair(x, x)}
    assert len(_pytree.tree_leaves(tree, tp.Tensor)) == 3      # L(...) is a constant
    m = _pytree.tree_map(lambda t: t * 2.0, tree, tp.Tensor)
    assert m["a"][0].tolist() == [2.0, 2.0] and m["a"][1] is tree["a"][1]
    assert type(m["b"]) is Pair and m["b"].a.tolist() == [2.0, 2.0]


def test_unhashable_constants_get_an_identity_key():
    lst = {1, 2}                                  # a set: a constant, unhashable
    _, spec = _pytree.tree_flatten((tp.ones(1), {"cfg": lst}), tp.Tensor)
    with pytest.raises(TypeError):
        hash(spec)
    hash(_pytree.spec_key(spec))


def test_compiled_function_takes_named_tuples_of_tensors_as_inputs():
    f = tp.compile(lambda p: p.a * 2.0 + p.b)
    for _ in range(3):
        out = f(Pair(tp.ones(2), tp.full((2,), 3.0)))
        assert out.tolist() == [5.0, 5.0]
    assert f.captures == 1                        # the tensors are inputs, not constants
