"""opcheck names the part of the op that raised: a ``setup_context`` (or backward) that raises
when the op is called with inputs that require grad is reported as the formula's error, not the
kernel's (a fresh user's finding, session 57: on torch's own numpy_mul doc example with its
``y, = inputs`` slip, the message said the kernel must accept inputs that require grad)."""

import tensorplay as tp
from tensorplay.library import custom_op, opcheck


@custom_op("blame57::numpy_mul", mutates_args=())
def numpy_mul(x: tp.Tensor, y: float) -> tp.Tensor:
    return tp.from_numpy(x.detach().numpy() * y)


@numpy_mul.register_fake
def _(x, y):
    return tp.empty_like(x)


def _setup_context(ctx, inputs, output):
    y, = inputs          # the slip: inputs is (x, y)
    ctx.y = y


def _backward(ctx, grad):
    return grad * ctx.y, None


numpy_mul.register_autograd(_backward, setup_context=_setup_context)


def test_setup_context_error_is_blamed_on_setup_context():
    r = opcheck(numpy_mul, (tp.randn(3), 3.14), raise_exception=False)
    assert set(r) >= {"test_autograd_registration"}
    for name, msg in r.items():
        assert "setup_context" in msg and "_setup_context" in msg, (name, msg)
        assert "ValueError" in msg
        assert "must accept inputs that require grad" not in msg, (name, msg)
