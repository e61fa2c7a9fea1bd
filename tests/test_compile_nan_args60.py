"""A NaN given to a compiled function as a number keeps one graph (session 60).

``nan != nan``, so a guard or cache key that compares a NaN constant by value never matched:
every call with a fresh ``float("nan")`` captured ``fn`` again (10 calls, 10 captures), as a
plain float, a NumPy scalar, inside a container argument or read from a global. torch.compile
guards a NaN float with ``math.isnan`` and replays its graph. Values that differ still
recapture: a NaN against a number, and a zero against a zero of the other sign.
"""
import math

import pytest

import tensorplay as tp


def _nan(r):
    return all(math.isnan(e) for e in r.tolist())


@pytest.mark.parametrize("how", ["plain", "dict", "tuple", "kwarg"])
def test_a_fresh_nan_each_call_is_captured_once(how):
    f = tp.compile(lambda t, s: t * (s["s"] if how == "dict" else s[0] if how == "tuple" else s))
    x = tp.tensor([1.0, 2.0])
    for _ in range(10):
        v = float("nan")
        r = f(x, {"s": v}) if how == "dict" else f(x, (v,)) if how == "tuple" else \
            f(x, s=v) if how == "kwarg" else f(x, v)
        assert _nan(r)
    assert f.captures == 1, f"captured {f.captures} times for 10 calls with a NaN"


def test_numpy_nan_scalars_are_captured_once():
    np = pytest.importorskip("numpy")
    for make in (np.float32, np.float64):
        f = tp.compile(lambda t, s: t + float(s))
        x = tp.tensor([1.0])
        for _ in range(6):
            assert _nan(f(x, make("nan")))
        assert f.captures == 1, (make, f.captures)


def test_nan_and_numbers_still_get_graphs_of_their_own():
    f = tp.compile(lambda t, s: t * s)
    x = tp.tensor([1.0, -2.0])
    assert f(x, 2.0).tolist() == [2.0, -4.0]
    assert _nan(f(x, float("nan")))
    assert f(x, 3.0).tolist() == [3.0, -6.0]            # not the NaN graph
    assert _nan(f(x, float("nan")))
    assert f(x, 2.0).tolist() == [2.0, -4.0]
    assert f.captures == 3


@pytest.mark.parametrize("first, then", [(float("nan"), 2.0), (0.0, -0.0), (-0.0, 0.0)])
def test_a_global_read_in_the_function_keeps_one_graph_and_sees_changes(first, then):
    ns = {"S": first}
    exec("def body(t):\n    return t * S\n", ns)
    f = tp.compile(ns["body"])
    x = tp.tensor([1.0])
    for _ in range(5):
        ns["S"] = float(repr(first))     # a fresh object of the same value each call
        r = f(x).tolist()[0]
        assert repr(r) == repr(1.0 * first), r
    assert f.captures == 1, f.captures
    ns["S"] = then
    assert repr(f(x).tolist()[0]) == repr(1.0 * then)       # the sign or value it bakes in


@pytest.mark.parametrize("first, then", [(float("nan"), 2.0), (0.0, -0.0)])
def test_a_global_list_of_numbers_keeps_one_graph_and_sees_changes(first, then):
    ns = {"C": [first, 1.0]}
    exec("def body(t):\n    return t * C[0]\n", ns)
    f = tp.compile(ns["body"])
    x = tp.tensor([1.0])
    for _ in range(5):
        ns["C"] = [float(repr(first)), 1.0]
        assert repr(f(x).tolist()[0]) == repr(1.0 * first)
    assert f.captures == 1, f.captures
    ns["C"][0] = then                                         # changed in place
    assert repr(f(x).tolist()[0]) == repr(1.0 * then)


def test_a_big_global_table_with_a_zero_keeps_one_graph_and_sees_its_sign():
    # a table too big to snapshot item by item is compared whole: its zeros by sign too
    ns = {"T": [0.0] + [1.0] * 300}
    exec("def body(t):\n    return t * T[0]\n", ns)
    f = tp.compile(ns["body"])
    x = tp.tensor([1.0])
    for _ in range(3):
        ns["T"] = [0.0] + [1.0] * 300
        assert repr(f(x).tolist()[0]) == "0.0"
    assert f.captures == 1, f.captures
    ns["T"][0] = -0.0
    assert repr(f(x).tolist()[0]) == "-0.0"
