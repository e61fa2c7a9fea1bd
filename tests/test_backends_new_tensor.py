"""``tensorplay.backends.new_tensor``: the public constructor a backend's ``wrap`` builds tensors
with (issue 30 item 1: plugins no longer reach into ``tensorplay._tensor``/``_tensor_base``)."""

import numpy as np

import tensorplay as tp
from tensorplay.backends import Storage, new_tensor


def test_new_tensor_makes_a_fresh_tensor_viewing_the_storage():
    be = tp.backends.get("cpu")
    root = np.arange(6, dtype=np.float32)
    view = root.reshape(2, 3).T                        # shape (3, 2), strides (1, 3) elements
    t = new_tensor(Storage(root, root.nbytes, be), view, (3, 2), (1, 3), 0, tp.float32,
                   tp.device("cpu"), be)
    assert type(t) is tp.Tensor
    assert (t.shape, t.stride(), t.storage_offset(), t.dtype, t.device) == \
        ((3, 2), (1, 3), 0, tp.float32, tp.device("cpu"))
    assert not t.requires_grad and t.grad_fn is None and t.is_leaf
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert (t * 2).tolist() == [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]]
    t[0, 0] = 7.0                                      # writes reach the storage's root
    assert root[0] == 7.0
    t.requires_grad = True                             # a leaf like any other
    (t * t).sum().backward()
    assert t.grad.tolist() == [[14.0, 6.0], [2.0, 8.0], [4.0, 10.0]]


def test_shipped_plugins_build_tensors_through_the_public_constructor():
    """No shipped plugin imports ``tensorplay._tensor_base`` (the constructor's private home):
    they make tensors with ``tensorplay.backends.new_tensor``/``wrap_native``."""
    import ast

    import _sources
    found = []
    paths = _sources.source_files(core=False)      # the checkout's plugins/ or the installed ones
    assert paths, "no plugin source found"
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n == "tensorplay._tensor_base" or n.startswith("tensorplay._tensor_base.")
                   for n in names):
                found.append(f"{_sources.display(path)}:{node.lineno}")
    assert found == [], found
