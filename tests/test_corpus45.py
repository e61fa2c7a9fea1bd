"""What running third-party host code showed beyond the corpus cases (session 45).

Host code written for torch allocates a kernel's outputs with ``torch.empty_like(x)`` and
passes one set of strides for input and output (attorch's batch norm transposes its input to
(spatial, feat, batch) and allocates ``output = empty_like(input_3d)``; Triton's tutorial 06
backward writes ``dq = empty_like(q)`` with ``q``'s strides). torch's ``*_like`` and ``clone``
default to ``memory_format=torch.preserve_format``: a dense, non-overlapping input's strides are
copied, so the output has the input's layout and those strides describe it. tensorplay's are
always C-contiguous: the same host code then gets an output whose layout differs from torch's
(attorch's batch norm returns a non-contiguous tensor where torch's is contiguous), and a
kernel given the input's strides for it writes in the wrong places. That is core behaviour
(``tensorplay/_factories.py``'s ``_like_self``, ``Tensor.clone``), which now follows torch's rule
(``layout_strides``): the tests below check it, with the neighbours (non-dense inputs get dense
strides).

The second finding is a bug of the libraries' own host code that tensorplay turns into an error:
torch hands a ``Function``'s backward the gradient of ``out.sum()`` as an expanded tensor
(strides 0), and attorch's activation backward kernel reads it as contiguous (under torch it
reads past the one element: wrong gradients). ``wrap_triton`` refuses the stride-0 argument,
naming it, instead of running.
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402

# what torch 2.13 gives (preserve_format), checked against torch when these tests were written
_DENSE_LAYOUTS = {
    # name: (make the input, torch's strides for a *_like / clone of it)
    "transposed": (lambda: tensorplay.zeros(4, 3, 7).transpose(0, -1), (1, 7, 21)),
    "channels_last": (lambda: tensorplay.zeros(2, 3, 4, 5).permute(0, 2, 3, 1), (60, 5, 1, 20)),
}
_NOT_DENSE = {
    "sliced": (lambda: tensorplay.zeros(2, 3, 4)[:, :, ::2], (6, 2, 1)),
    "expanded": (lambda: tensorplay.zeros(3, 1).expand(3, 4), (4, 1)),
}
_LIKE = {
    "empty_like": lambda t: tensorplay.empty_like(t),
    "zeros_like": lambda t: tensorplay.zeros_like(t),
    "ones_like": lambda t: tensorplay.ones_like(t),
    "full_like": lambda t: tensorplay.full_like(t, 2.0),
    "randn_like": lambda t: tensorplay.randn_like(t),
    "clone": lambda t: t.clone(),
}


@pytest.mark.parametrize("fn", list(_LIKE))
@pytest.mark.parametrize("layout", list(_DENSE_LAYOUTS))
def test_like_and_clone_keep_a_dense_inputs_strides(layout, fn):
    make, torch_strides = _DENSE_LAYOUTS[layout]
    t = make()
    out = _LIKE[fn](t)
    assert out.shape == t.shape
    assert out.stride() == torch_strides, (fn, layout, out.stride())


@pytest.mark.parametrize("fn", list(_LIKE))
@pytest.mark.parametrize("layout", list(_NOT_DENSE))
def test_like_and_clone_of_a_non_dense_input_are_contiguous(layout, fn):
    """The neighbours: an input with gaps or stride-0 dims gets torch's contiguous strides."""
    make, torch_strides = _NOT_DENSE[layout]
    t = make()
    out = _LIKE[fn](t)
    assert out.shape == t.shape and out.stride() == torch_strides, (fn, layout, out.stride())


def test_output_allocated_like_a_transposed_input_takes_its_strides():
    """The host-code pattern: ``out = empty_like(x_t)``; the kernel is given ``x_t``'s strides for
    both. With torch's layout the values land where ``out``'s own strides say; here a strided copy
    through ``x_t``'s strides into ``out``'s storage stands in for the kernel."""
    x = tensorplay.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)).transpose(0, -1)
    out = tensorplay.empty_like(x)
    flat = out.as_strided((out.numel(),), (1,))            # out's storage, as the kernel sees it
    src = x.numpy()
    for idx in np.ndindex(*x.shape):
        flat[int(np.dot(idx, x.stride()))] = float(src[idx])
    np.testing.assert_array_equal(out.numpy(), src)


def test_function_backward_refuses_sums_expanded_gradient():
    """``out.sum().backward()`` through attorch's activation Function: the gradient is expanded
    (strides 0, as torch's is too); attorch's backward kernel reads it as contiguous. tensorplay
    refuses the launch, naming the argument; the usual ``mean`` loss (a fresh tensor) runs (see
    tests/test_corpus.py::test_function_backward_after_a_mean_loss)."""
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    from corpus.attorch import layers
    from tensorplay_triton import TritonLaunchError
    x = tensorplay.tensor(np.random.default_rng(0).standard_normal((3, 21)).astype(np.float32),
                          requires_grad=True)
    out = layers.ActFuncAutoGrad.apply(x, "gelu", 0.0, False)
    with pytest.raises(TritonLaunchError, match=r"output_grad_pointer.*non-contiguous.*stride \(0,"):
        out.sum().backward()
