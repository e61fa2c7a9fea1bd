"""Third-party Triton kernels as tensorplay ops (see tests/test_corpus.py and cases.py)."""


def all_cases():
    """Every corpus case whose op is a ``triton_op``, library by library (imports the libraries'
    kernels: needs triton)."""
    from .flaggems.cases import CASES as flaggems
    from .liger.cases import CASES as liger
    from .unsloth.cases import CASES as unsloth
    return [*liger, *unsloth, *flaggems]


def function_cases():
    """The corpus cases whose op is a library's own ``autograd.Function`` (``apply``), not a
    ``triton_op``: checked by ``corpus.check.check_function`` instead of ``opcheck``."""
    from .attorch.cases import CASES as attorch
    return [*attorch]
