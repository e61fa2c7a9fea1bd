"""Third-party Triton kernels as tensorplay ops (see tests/test_corpus.py and cases.py)."""


def all_cases():
    """Every corpus case, library by library (imports the libraries' kernels: needs triton)."""
    from .flaggems.cases import CASES as flaggems
    from .liger.cases import CASES as liger
    from .unsloth.cases import CASES as unsloth
    return [*liger, *unsloth, *flaggems]
