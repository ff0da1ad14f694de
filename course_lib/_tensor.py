"""The Tensor: a view (offset, shape, stride) of a Storage, plus autograd fields.

In PyTorch: ``c10/core/TensorImpl.h`` (sizes, strides, storage_offset, dtype,
device, version counter) and ``torch/_tensor.py`` (the Python methods).

Most methods are not written here: ``course_lib._ops.bindings`` generates them
from the op registry (``Tensor.add``, ``Tensor.sum``, ``Tensor.view``, ...), the
way PyTorch generates ``python_variable_methods.cpp`` from
``native_functions.yaml``.  What is here is the metadata, the numpy view of the
data, Python protocol methods and the autograd entry points.
"""
from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import _dtype as D
from ._device import device as _device
from ._ops import common as _common
from ._ops import dispatcher as _dispatcher
from ._size import Size

__all__ = ["Tensor"]


class _VersionCounter:
    """Shared by a tensor and all its views; in-place ops bump it."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class Tensor:
    """A multi-dimensional array: a strided view of a ``Storage``.

    >>> import course_lib as cl
    >>> t = cl.arange(6.).view(2, 3)
    >>> t.shape, t.stride(), t.storage_offset()
    (course_lib.Size([2, 3]), (3, 1), 0)
    """

    __slots__ = (
        "_storage", "_offset", "_shape", "_stride", "dtype", "_npc", "_requires_grad",
        "__weakref__", "__dict__",
    )
    # Fields that most tensors never change live in the instance __dict__ and start as
    # these class-level defaults, so that making a tensor (on every op) sets only the
    # slots above.  (PyTorch's TensorImpl does the same with its lazily allocated
    # AutogradMeta.)
    _base = None          # the tensor this one is a view of (the root, for views of views)
    _vcs = None           # the version counter, made on first use (see ``_vc``)
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
    def _make(cls, storage, offset: int, shape: tuple, stride: tuple, dtype: D.dtype,
              base: "Tensor | None" = None, vc: _VersionCounter | None = None) -> "Tensor":
        t = object.__new__(cls)
        t._storage = storage
        t._offset = offset
        t._shape = shape
        t._stride = stride
        t.dtype = dtype
        t._npc = None
        t._requires_grad = False
        if base is not None:
            t._base = base
        if vc is not None:
            t._vcs = vc
        return t

    @property
    def _vc(self) -> _VersionCounter:
        """The version counter shared with every view (made on first use: most tensors never need one)."""
        v = self._vcs
        if v is None:
            v = self._vcs = _VersionCounter()
        return v

    @_vc.setter
    def _vc(self, value: _VersionCounter) -> None:
        self._vcs = value

    def __new__(cls, *args, **kwargs):
        # Tensor(data) behaves like course_lib.tensor(data) for convenience; subclasses
        # (Parameter) build themselves from an existing tensor.
        from ._creation import tensor
        if args and isinstance(args[0], Tensor):
            return args[0]
        return tensor(args[0] if args else [], **kwargs)

    def _view(self, shape: tuple, stride: tuple, offset: int) -> "Tensor":
        """A new tensor sharing this one's storage and version counter (``_base`` = root)."""
        base = self._base if self._base is not None else self
        return Tensor._make(self._storage, offset, shape, stride, self.dtype, base, self._vc)

    def _np(self) -> np.ndarray:
        """The numpy view of exactly this tensor's elements (cached; shares memory)."""
        a = self._npc
        if a is None:
            data = self._storage.data
            if data is None:
                raise NotImplementedError(
                    "Cannot access data of a tensor on the meta device: it has a shape and a dtype, but no values")
            shape = self._shape
            if self._stride == _common.contiguous_strides(shape):
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
            self._npc = a
        return a

    # -- metadata ---------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The shape (a ``Size``), or the size of one dimension."""
        if dim is None:
            return Size(self._shape)
        return self._shape[_common.wrap_dim(dim, len(self._shape))]

    def stride(self, dim: int | None = None):
        """Steps in elements between neighbours along each dimension."""
        if dim is None:
            return self._stride
        return self._stride[_common.wrap_dim(dim, len(self._shape))]

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
        return self._storage.data is None

    @property
    def is_cpu(self) -> bool:
        return self._storage.data is not None

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return False

    def is_contiguous(self, memory_format=None) -> bool:
        """PyTorch's rule (``c10/core/Contiguity.h``): empty tensors are contiguous; dims of
        size 1 are skipped; every other stride must equal the product of the sizes after it."""
        expected = 1
        shape, stride = self._shape, self._stride
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

    # -- autograd fields ----------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if not value:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a "
                    "computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return
        if value and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded op (user-made tensors, detached results)."""
        return self.grad_fn is None

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
                "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
                "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
                "instead. See github.com/pytorch/pytorch/pull/30531 for more information.",
                UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value._shape != self._shape:
                raise RuntimeError("assigned grad has data of a different size")
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
        self._grad = value

    @property
    def data(self) -> "Tensor":
        """The same data without autograd history (like ``detach()``, but not tracked)."""
        t = Tensor._make(self._storage, self._offset, self._shape, self._stride, self.dtype)
        t._npc = self._npc
        return t

    @data.setter
    def data(self, other: "Tensor") -> None:
        self._storage, self._offset = other._storage, other._offset
        self._shape, self._stride, self.dtype = other._shape, other._stride, other.dtype
        self._npc = other._npc

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None and not self._retains_grad:
            import weakref
            node = self.grad_fn
            if node._retains_grad_hooks is None:
                node._retains_grad_hooks = {}
            node._retains_grad_hooks[self._output_nr] = weakref.ref(self)
            self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute gradients of this tensor w.r.t. the graph leaves (``torch.autograd.backward``)."""
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        from .autograd.graph import register_tensor_hook
        return register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a leaf's ``.grad`` has been accumulated."""
        from .autograd.graph import register_post_accumulate_grad_hook
        return register_post_accumulate_grad_hook(self, hook)

    # -- conversion -----------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A numpy array sharing memory with this tensor."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._storage.data is None:
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
                            "to host memory first.")
        return self._np()

    def tolist(self):
        if self._storage.data is None:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return self._np().tolist()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        if self._storage.data is None:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._np().reshape(()).item()

    def __float__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self.dtype.category == D._FLOAT:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'more than one value' if n else 'no values'} is ambiguous")
        return bool(self.item())

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __array__(self, dtype=None, copy=None):
        a = self._np()
        return a.astype(dtype) if dtype is not None else a

    def __hash__(self):
        return id(self)

    def __repr__(self, *, tensor_contents=None) -> str:
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        if not self._shape and self._storage.data is not None:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        # Plain pickling (not course_lib.save): rebuild from a numpy copy.
        from ._creation import _rebuild_from_numpy
        return (_rebuild_from_numpy, (np.array(self._np()), self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        from ._creation import _clone_for_deepcopy
        r = _clone_for_deepcopy(self, memo)
        memo[id(self)] = r
        return r

    @property
    def is_cuda(self) -> bool:
        return False

    def cpu(self) -> "Tensor":
        return self

    def type(self, dtype=None):
        if dtype is None:
            return f"torch.{self.dtype._tensor_name}Tensor"
        return self.to(dtype)

    def new_tensor(self, data, dtype=None, requires_grad=False):
        from ._creation import tensor
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    @staticmethod
    def _new_size(size) -> tuple:
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        for s in size:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        return tuple(size)

    def new_zeros(self, *size, dtype=None):
        from ._creation import zeros
        return zeros(self._new_size(size), dtype=dtype or self.dtype)

    def new_ones(self, *size, dtype=None):
        from ._creation import ones
        return ones(self._new_size(size), dtype=dtype or self.dtype)

    def new_empty(self, *size, dtype=None):
        from ._creation import empty
        return empty(self._new_size(size), dtype=dtype or self.dtype)

    def new_full(self, size, fill_value, dtype=None):
        from ._creation import full
        return full(size, fill_value, dtype=dtype or self.dtype)


def _make_plain(storage, offset: int, shape: tuple, stride: tuple, dtype: D.dtype) -> Tensor:
    """``Tensor._make`` for a fresh, non-view tensor: the fast path every kernel result takes."""
    t = _new_object(Tensor)
    t._storage = storage
    t._offset = offset
    t._shape = shape
    t._stride = stride
    t.dtype = dtype
    t._npc = None
    t._requires_grad = False
    return t


_new_object = object.__new__
_ndarray = np.ndarray
_dispatcher._Tensor = Tensor
_common.Tensor = Tensor
_common._make_plain = _make_plain
