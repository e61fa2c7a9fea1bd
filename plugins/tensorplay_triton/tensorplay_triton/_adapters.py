"""What Triton is handed in place of a tensorplay ``Tensor``.

* ``CudaArg`` -- compiled kernels on cuda: ``data_ptr()`` (a Python ``int``) and a hashable
  ``dtype`` whose ``str()`` ends in the Triton type name (tensorplay's own ``DType``: its ``str`` is
  ``"tensorplay.float32"``). Triton sees only a base pointer, so the tensor must be contiguous
  (checked by the launcher before an adapter is made).
* ``HostArg`` -- Triton's interpreter (``TRITON_INTERPRET=1``) on cpu tensors: the interpreter
  copies every tensor argument through torch-tensor methods (``untyped_storage()``,
  ``storage_offset()``, ``size()``, ``stride()``, ``new_empty``, ``set_``, ``copy_``). ``HostArg``
  answers them over the tensor's NumPy storage, and its storage's ``cpu()`` is the storage itself,
  so the interpreter reads and writes the tensor's memory directly (no copies).
* ``CudaInterpArg`` -- the interpreter on cuda tensors: the storage's ``cpu()`` downloads it and
  ``copy_`` uploads the interpreter's result back.

All adapters keep the tensorplay tensor (``.tensor``) and implement the few in-place methods that
``@triton.autotune`` hooks call on arguments (``zero_``, ``clone``, ``copy_``).
"""

from __future__ import annotations

import numpy as np


class _AutotuneMethods:
    """``zero_``/``clone``/``copy_`` used by ``reset_to_zero`` and ``restore_value``."""

    __slots__ = ()

    def zero_(self):
        self.tensor.zero_()
        return self

    def clone(self):
        return type(self)(self.tensor.clone())

    def copy_(self, other):
        src = getattr(other, "tensor", None)
        src = other if src is None else src
        self.tensor.copy_(src)
        return self

    def numel(self) -> int:
        return self.tensor.numel()

    def element_size(self) -> int:
        return self.tensor.element_size()

    @property
    def shape(self):
        return self.tensor.shape

    @property
    def device(self):
        return self.tensor.device

    def size(self, dim=None):
        return self.tensor.size(dim)

    def stride(self, dim=None):
        return self.tensor.stride(dim)


class CudaArg(_AutotuneMethods):
    """A contiguous cuda tensor as a Triton pointer argument."""

    __slots__ = ("_ptr", "dtype", "tensor")

    def __init__(self, t):
        self.tensor = t
        self.dtype = t.dtype
        self._ptr = t.backend.data_ptr(t.native)

    def data_ptr(self) -> int:
        return self._ptr

    def __repr__(self) -> str:
        return f"<tensorplay cuda pointer {self.dtype} shape={self.tensor.shape} at 0x{self._ptr:x}>"


# -- interpreter -------------------------------------------------------------------------------

def _np_ptr(a) -> int:
    return a.__array_interface__["data"][0]


class HostStorage:
    """A NumPy array as the "untyped storage" the interpreter copies through."""

    __slots__ = ("_ptr", "array")

    def __init__(self, array):
        self.array = array
        self._ptr = _np_ptr(array) if array.size else 0

    def data_ptr(self) -> int:
        return self._ptr

    def cpu(self):
        return self          # already host memory: the interpreter works in place

    def copy_(self, other):
        if other is not self and other.array is not self.array:
            np.copyto(self.array.reshape(-1), other.array.reshape(-1))
        return self


class HostArg:
    """torch-tensor look-alike over host memory, as Triton's interpreter needs it."""

    __slots__ = ("_item", "_offset", "_size", "_storage", "_stride", "dtype", "tensor")

    def __init__(self, t=None, storage=None):
        self.tensor = t
        if t is not None:
            self.dtype = t.dtype
            self._item = t.dtype.itemsize
            self._storage = storage if storage is not None else HostStorage(t.storage_ref.root)
            self._offset = t.offset
            self._size = tuple(t.shape)
            self._stride = tuple(t.stride_tuple)
        else:
            self.dtype = None
            self._item = 1
            self._storage = None
            self._offset = 0
            self._size = ()
            self._stride = ()

    # interpreter protocol
    def data_ptr(self) -> int:
        return self._storage.data_ptr() + self._offset * self._item

    def untyped_storage(self):
        return self._storage

    def storage_offset(self) -> int:
        return self._offset

    def size(self, dim=None):
        return self._size if dim is None else self._size[dim]

    def stride(self, dim=None):
        return self._stride if dim is None else self._stride[dim]

    @property
    def shape(self):
        return self._size

    @property
    def device(self):
        return "cpu"

    def element_size(self) -> int:
        return self._item

    def numel(self) -> int:
        n = 1
        for s in self._size:
            n *= s
        return n

    def new_empty(self, *size, device=None, **_):
        h = HostArg()
        h.dtype = self.dtype
        h._item = self._item
        return h

    def set_(self, storage, offset, size, stride):
        self._storage = storage
        self._offset = int(offset)
        self._size = tuple(size)
        self._stride = tuple(stride)
        return self

    def copy_(self, other):
        src = getattr(other, "tensor", None)
        if self.tensor is not None and src is not None:
            self.tensor.copy_(src)
            return self
        raise NotImplementedError("tensorplay-triton: HostArg.copy_ needs tensorplay tensors on "
                                  "both sides")

    # autotune hooks on interpreted kernels
    def zero_(self):
        self.tensor.zero_()
        return self

    def clone(self):
        return HostArg(self.tensor.clone())

    def __repr__(self) -> str:
        return f"<tensorplay host tensor {self.dtype} shape={self._size}>"


class CudaStorage:
    """A cuda tensor's storage as the interpreter sees it: ``cpu()`` downloads, ``copy_`` uploads."""

    __slots__ = ("root",)

    def __init__(self, root):
        self.root = root

    def data_ptr(self) -> int:
        return int(self.root.data.ptr)

    def cpu(self):
        import cupy
        return HostStorage(np.ascontiguousarray(cupy.asnumpy(self.root)))

    def copy_(self, host):
        self.root.set(host.array.reshape(self.root.shape))
        return self


class CudaInterpArg(HostArg):
    """A cuda tensor handed to an *interpreted* kernel (device memory round-trips through the host)."""

    __slots__ = ()

    def __init__(self, t):
        super().__init__(t, storage=CudaStorage(t.storage_ref.root))

    def data_ptr(self) -> int:
        return self._storage.data_ptr() + self._offset * self._item

    def clone(self):
        return CudaInterpArg(self.tensor.clone())
