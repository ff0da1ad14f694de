"""The leaf of the tensor: ``TensorBase``, a strided view of a Storage and its metadata.

In PyTorch: ``c10/core/TensorImpl.h`` (sizes, strides, storage_offset, dtype, device, version
counter), exposed to Python as ``torch._C.TensorBase``; ``torch/_tensor.py`` subclasses it.

This module imports only numpy and the modules below it (dtypes, devices, sizes, storage), so
every other module can import it: ``isinstance(x, TensorBase)`` is how the dispatcher, the
kernels and autograd recognise a tensor.  The class users see is ``course_lib.Tensor``
(``_tensor.py``): ``TensorBase`` plus the generated op methods and the hand-written ones.
"""
from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import _dtype
from ._device import device as _device
from ._size import Size

__all__ = ["TensorBase", "contiguous_strides", "wrap_dim"]


_STRIDES: dict = {}


def contiguous_strides(shape: tuple) -> tuple:
    """Row-major strides, in elements: stride[i] = prod(max(size[j], 1) for j > i).

    >>> contiguous_strides((2, 3, 4))
    (12, 4, 1)
    """
    r = _STRIDES.get(shape)
    if r is None:
        strides = []
        acc = 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= max(s, 1)
        r = tuple(reversed(strides))
        if len(_STRIDES) < 4096:
            _STRIDES[shape] = r
    return r


def wrap_dim(dim: int, ndim: int) -> int:
    """Turn a possibly negative ``dim`` into 0..ndim-1 (0-d tensors accept -1 and 0)."""
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


class _VersionCounter:
    """Shared by a tensor and all its views; in-place ops bump it."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class TensorBase:
    """The metadata of a tensor: storage, offset, shape, stride and dtype, plus the numpy view.

    Subclassed by ``course_lib.Tensor``; op results are always ``Tensor`` objects.
    """

    __slots__ = (
        "_storage", "_offset", "_shape", "_stride", "dtype", "_np_cache", "_requires_grad",
        "__weakref__", "__dict__",
    )
    # Fields that most tensors never change live in the instance __dict__ and start as
    # these class-level defaults, so that making a tensor (on every op) sets only the
    # slots above.  (PyTorch's TensorImpl does the same with its lazily allocated
    # AutogradMeta.)
    _base = None          # the tensor this one is a view of (the root, for views of views)
    _version_counter = None  # the version counter, made on first use (see ``_vc``)
    _grad = None
    grad_fn = None
    _output_nr = 0
    _retains_grad = False
    _hooks = None
    _post_acc_hooks = None
    _grad_acc = None
    _is_param = False

    # -- construction ---------------------------------------------------------
    @classmethod
    def _make(cls, storage, offset: int, shape: tuple, stride: tuple, dtype: _dtype.dtype,
              base: "TensorBase | None" = None, vc: _VersionCounter | None = None) -> "TensorBase":
        """A new ``cls`` over ``storage`` (no copy); ``base``/``vc`` make it a view sharing a version counter."""
        t = object.__new__(cls)
        t._storage = storage
        t._offset = offset
        t._shape = shape
        t._stride = stride
        t.dtype = dtype
        t._np_cache = None
        t._requires_grad = False
        if base is not None:
            t._base = base
        if vc is not None:
            t._version_counter = vc
        return t

    @property
    def _vc(self) -> _VersionCounter:
        """The version counter shared with every view (made on first use: most tensors never need one)."""
        v = self._version_counter
        if v is None:
            v = self._version_counter = _VersionCounter()
        return v

    @_vc.setter
    def _vc(self, value: _VersionCounter) -> None:
        self._version_counter = value

    def _np(self) -> np.ndarray:
        """The numpy view of exactly this tensor's elements (cached; shares memory)."""
        a = self._np_cache
        if a is None:
            data = self._storage.data
            if data is None:
                raise NotImplementedError(
                    "Cannot access data of a tensor on the meta device: it has a shape and a dtype, but no values")
            shape = self._shape
            if self._stride == contiguous_strides(shape):
                n = 1
                for s in shape:
                    n *= s
                a = data[self._offset:self._offset + n].reshape(shape)
            else:
                isz = self.dtype.itemsize
                strides = tuple(s * isz for s in self._stride)
                try:
                    # the ndarray constructor over the storage's buffer: ten times cheaper than
                    # as_strided, and it checks that the view stays inside the storage
                    a = _ndarray(shape, data.dtype, data, self._offset * isz, strides)
                except (ValueError, TypeError):
                    a = as_strided(data[self._offset:], shape, strides, writeable=True)
            self._np_cache = a
        return a

    # -- metadata ---------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The shape (a ``Size``), or the size of one dimension."""
        if dim is None:
            return Size(self._shape)
        return self._shape[wrap_dim(dim, len(self._shape))]

    def stride(self, dim: int | None = None):
        """Steps in elements between neighbours along each dimension."""
        if dim is None:
            return self._stride
        return self._stride[wrap_dim(dim, len(self._shape))]

    def storage_offset(self) -> int:
        """Index in the storage of this tensor's first element."""
        return self._offset

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def ndimension(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        n = 1
        for s in self._shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    @property
    def device(self) -> _device:
        return _device(self._storage.device)

    @property
    def is_meta(self) -> bool:
        return self._storage.device == "meta"

    @property
    def is_cpu(self) -> bool:
        return self._storage.device != "meta"

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return False

    def is_contiguous(self, memory_format=None) -> bool:
        """PyTorch's rule (``c10/core/Contiguity.h``): empty tensors are contiguous; dims of
        size 1 are skipped; every other stride must equal the product of the sizes after it.

        ``memory_format="channels_last"`` (4-d) / ``"channels_last_3d"`` (5-d): the same rule with the
        channels innermost (dims in the order N, (D,) H, W, C); tensors of another rank are not.
        Unlike PyTorch, whose memory formats are objects (``torch.channels_last``), course_lib names them with
        strings (``"contiguous_format"``, ``"channels_last"``, ``"channels_last_3d"``, ``"preserve_format"``),
        here and in ``contiguous``, ``clone``, ``to`` and the casts.
        """
        shape, stride = self._shape, self._stride
        if memory_format == "channels_last" or memory_format == "channels_last_3d":
            rank = 4 if memory_format == "channels_last" else 5
            if len(shape) != rank:
                return False
            expected = 1
            for d in (1,) + tuple(range(rank - 1, 1, -1)) + (0,):  # C, W, H, (D,) N: innermost first
                s = shape[d]
                if s != 1:
                    if stride[d] != expected:
                        return False
                    expected *= s
            return True
        expected = 1
        for s in shape:
            if s == 0:
                return True
        for i in range(len(shape) - 1, -1, -1):
            s = shape[i]
            if s == 1:
                continue
            if stride[i] != expected:
                return False
            expected *= s
        return True

    def _suggest_memory_format(self) -> str:
        """PyTorch's ``suggest_memory_format``: ``channels_last(_3d)`` when the strides order a 4-d (5-d)
        tensor's dims as N, (D,) H, W, C (ambiguous layouts count as contiguous), else ``contiguous_format``."""
        shape, stride = self._shape, self._stride
        rank = len(shape)
        if rank not in (4, 5) or stride[1] == 0:
            return "contiguous_format"
        lo = 0
        for d in (1,) + tuple(range(rank - 1, 1, -1)) + (0,):
            if shape[d] == 0 or stride[d] < lo or (d == 0 and lo == stride[1]):
                return "contiguous_format"
            lo = stride[d] * shape[d] if shape[d] > 1 else stride[d]
        return "channels_last" if rank == 4 else "channels_last_3d"

    def untyped_storage(self):
        """The bytes behind this tensor (shared with every view of it)."""
        return self._storage.untyped()

    def storage(self):
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter to you "
                      "if you are using storages directly.  To access UntypedStorage directly, use "
                      "tensor.untyped_storage() instead of tensor.storage()", UserWarning, stacklevel=2)
        return self._storage

    def data_ptr(self) -> int:
        """Address of the first element (storage address + offset * itemsize)."""
        return self._storage.data_ptr() + self._offset * self.dtype.itemsize

    def _is_view(self) -> bool:
        return self._base is not None

    @property
    def _version(self) -> int:
        return self._vc.value

    def _bump_version(self) -> None:
        self._vc.value += 1


_ndarray = np.ndarray
