"""``tensorplay.Tag``: the operator tags of ``torch.Tag``, accepted by ``custom_op``/``define``
(``tags=``) and kept on the op (``op.tags``).

Each member is also its name as a string (``Tag.inplace == "inplace"``), so code comparing tags
with strings and code using the enum agree. TensorPlay reads ``nondeterministic_seeded`` and
``nondeterministic_bitwise`` (``opcheck`` compares such ops' results by metadata only); the others
are kept for introspection and for code ported from torch.
"""

from __future__ import annotations

import enum

__all__ = ["Tag"]


class Tag(str, enum.Enum):
    """Operator tags, same names as ``torch.Tag``."""

    core = "core"
    cudagraph_unsafe = "cudagraph_unsafe"
    data_dependent_output = "data_dependent_output"
    dynamic_output_shape = "dynamic_output_shape"
    flexible_layout = "flexible_layout"
    generated = "generated"
    inplace = "inplace"
    inplace_view = "inplace_view"
    maybe_aliasing_or_mutating = "maybe_aliasing_or_mutating"
    needs_contiguous_strides = "needs_contiguous_strides"
    needs_exact_strides = "needs_exact_strides"
    needs_fixed_stride_order = "needs_fixed_stride_order"
    nondeterministic_bitwise = "nondeterministic_bitwise"
    nondeterministic_seeded = "nondeterministic_seeded"
    out = "out"
    pointwise = "pointwise"
    pt2_compliant_tag = "pt2_compliant_tag"
    reduction = "reduction"
    view_copy = "view_copy"

    def __str__(self) -> str:
        return f"Tag.{self.name}"
