"""Nested argument structures: flatten, unflatten and map over containers of leaves (same idea as
``torch.utils._pytree``).

Containers are exact ``list``, ``tuple`` and ``dict`` and named tuples (rebuilt with their own
class); the leaves are the instances of the class the caller names (``Tensor``, a capture
``Value``); anything else is a constant, kept as is (in a spec: stored in it). Subclasses of
``list``/``dict`` and other tuple subclasses are constants, as in torch.

A *spec* describes a structure with its leaves taken out; it is a plain tuple, hashable when the
constants in it are (``spec_key`` otherwise):

======================================= ==========================================
``LEAF``                                one leaf
``(list, children)``                    a list (``tuple`` likewise)
``(dict, keys, children)``              a dict, keys in order
``(NamedTupleClass, children)``         a named tuple
``("c", value)``                        a constant
======================================= ==========================================

This module imports nothing of TensorPlay (a value-type layer): callers pass the leaf class.
"""

from __future__ import annotations

__all__ = ["LEAF", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map", "spec_key"]

LEAF = "T"


def _is_namedtuple(t) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields") and hasattr(t, "_make")


def tree_flatten(tree, leaf, leaves=None):
    """``(leaves, spec)`` of ``tree``: its leaves (instances of ``leaf``) in depth-first order,
    appended to ``leaves`` when given, and the spec that ``tree_unflatten`` rebuilds it from."""
    if leaves is None:
        leaves = []
    return leaves, _flatten(tree, leaf, leaves)


def _flatten(obj, leaf, leaves):
    if isinstance(obj, leaf):
        leaves.append(obj)
        return LEAF
    t = type(obj)
    if t is tuple or t is list:
        return (t, tuple([_flatten(x, leaf, leaves) for x in obj]))
    if t is dict:
        return (dict, tuple(obj.keys()), tuple([_flatten(v, leaf, leaves) for v in obj.values()]))
    if _is_namedtuple(t):
        return (t, tuple([_flatten(x, leaf, leaves) for x in obj]))
    return ("c", obj)


def tree_unflatten(spec, leaves):
    """The structure described by ``spec`` with its leaves taken in order from the iterable
    ``leaves`` (constants come from the spec)."""
    return _unflatten(spec, iter(leaves))


def _unflatten(spec, it):
    if spec.__class__ is str:      # LEAF
        return next(it)
    head = spec[0]
    if head == "c":
        return spec[1]
    if head is dict:
        return dict(zip(spec[1], [_unflatten(s, it) for s in spec[2]]))
    items = [_unflatten(s, it) for s in spec[1]]
    if head is list:
        return items
    if head is tuple:
        return tuple(items)
    return head._make(items)


def spec_key(spec):
    """A hashable stand-in for ``spec``: unhashable constants count by identity (and type)."""
    if spec.__class__ is str:
        return spec
    if spec[0] == "c":
        try:
            hash(spec[1])
            return spec
        except TypeError:
            return ("id", id(spec[1]), type(spec[1]))
    if spec[0] is dict:
        return (dict, spec[1], tuple(spec_key(s) for s in spec[2]))
    return (spec[0], tuple(spec_key(s) for s in spec[1]))


def tree_leaves(tree, leaf, out=None) -> list:
    """The leaves (instances of ``leaf``) of ``tree`` in depth-first order, appended to ``out``
    when given."""
    if out is None:
        out = []
    if isinstance(tree, leaf):
        out.append(tree)
        return out
    t = type(tree)
    if t is list or t is tuple or (_is_namedtuple(t)):
        for x in tree:
            tree_leaves(x, leaf, out)
    elif t is dict:
        for x in tree.values():
            tree_leaves(x, leaf, out)
    return out


def tree_map(fn, tree, leaf):
    """``tree`` with every leaf (instance of ``leaf``) replaced by ``fn(leaf)``; containers are
    rebuilt (new lists/tuples/dicts, named tuples of their own class), constants kept."""
    if isinstance(tree, leaf):
        return fn(tree)
    t = type(tree)
    if t is list:
        return [tree_map(fn, x, leaf) for x in tree]
    if t is tuple:
        return tuple([tree_map(fn, x, leaf) for x in tree])
    if t is dict:
        return {k: tree_map(fn, v, leaf) for k, v in tree.items()}
    if _is_namedtuple(t):
        return t._make([tree_map(fn, x, leaf) for x in tree])
    return tree
