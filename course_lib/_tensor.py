"""The Tensor class: ``TensorBase`` plus its methods (``torch/_tensor.py``).

In PyTorch, ``torch._C.TensorBase`` (C++) holds the data and the methods generated from
``native_functions.yaml`` (``python_variable_methods.cpp``) and ``torch/_tensor.py``
subclasses it with Python methods.  Here ``Tensor`` is put together from

* ``TensorBase`` (``_tensor_base.py``): storage, offset, shape, stride, dtype, metadata;
* ``VariableMethods`` (``_ops/python_variable_methods.py``): one method per op, generated
  from the registry by ``python -m course_lib._ops.bindings`` (``Tensor.add``, ``Tensor.sum``...);
* ``PythonMethods`` (``_ops/python_methods.py``): the hand-written bindings (operators,
  ``to`` and the casts, ``var``/``std``, properties such as ``T``);
* the methods below: autograd entry points, conversions and Python protocols.

Every method of ``Tensor`` is a ``def`` in one of these four class bodies.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import _dtype
from ._ops.dispatcher import dispatch as _dispatch
from ._ops.python_methods import PythonMethods
from ._ops.python_variable_methods import VariableMethods
from ._ops.registry import OPS as _OPS
from ._storage import Storage
from ._tensor_base import TensorBase

__all__ = ["Tensor"]


class Tensor(TensorBase, VariableMethods, PythonMethods):
    """A multi-dimensional array: a strided view of a ``Storage``.

    >>> import course_lib as cl
    >>> t = cl.arange(6.).view(2, 3)
    >>> t.shape, t.stride(), t.storage_offset()
    (course_lib.Size([2, 3]), (3, 1), 0)
    """

    __slots__ = ()

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

    # -- autograd fields ----------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if getattr(self._storage, "_capture", None) is not None:
            self._storage.data  # noqa: B018 - a lazy tensor of graph capture: its graph ends first
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
        t._np_cache = self._np_cache
        return t

    @data.setter
    def data(self, other: "Tensor") -> None:
        self._storage, self._offset = other._storage, other._offset
        self._shape, self._stride, self.dtype = other._shape, other._stride, other.dtype
        self._np_cache = other._np_cache

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
        if self.dtype.category == _dtype._FLOAT:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        n = self.numel()
        if n != 1:
            values = "more than one value" if n else "no values"
            raise RuntimeError(f"Boolean value of Tensor with {values} is ambiguous")
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
        """numpy's protocol: the values as an array sharing memory when it can; ``copy=True`` always copies,
        ``copy=False`` refuses a conversion that would have to copy (numpy 2's contract)."""
        a = self._np()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return a.astype(dtype)
        return a.copy() if copy else a

    def __repr__(self, *, tensor_contents=None) -> str:
        """``tensor_contents`` replaces the printed values (what subclasses pass, as in PyTorch)."""
        from ._tensor_str import tensor_repr
        return tensor_repr(self, tensor_contents=tensor_contents)

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

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
        """A new tensor holding a copy of ``data``, with self's dtype and device unless given."""
        from ._creation import new_tensor
        return new_tensor(self, data, dtype, device, requires_grad, pin_memory)

    @staticmethod
    def _new_size(size, fname: str) -> tuple:
        from ._creation import _parse_size
        return _parse_size(size, fname)

    @staticmethod
    def _new_size_seq(size, fname: str) -> tuple:
        """A size that must be a sequence (``new_full``, ``new_empty_strided``), as PyTorch's parser wants."""
        from ._creation import _parse_size
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{type(size).__name__}")
        return _parse_size((size,), fname)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, pin_memory=False):
        """Zeros of ``size``, with self's dtype and device unless given (``aten.new_zeros``)."""
        from ._creation import new_factory
        return new_factory(self, "new_zeros", self._new_size(size, "new_zeros"), (), dtype, device, requires_grad,
                           pin_memory)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False, pin_memory=False):
        """Ones of ``size``, with self's dtype and device unless given (``aten.new_ones``)."""
        from ._creation import new_factory
        return new_factory(self, "new_ones", self._new_size(size, "new_ones"), (), dtype, device, requires_grad,
                           pin_memory)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False, pin_memory=False):
        """An uninitialised tensor of ``size``, with self's dtype and device unless given (``aten.new_empty``)."""
        from ._creation import new_factory
        return new_factory(self, "new_empty", self._new_size(size, "new_empty"), (), dtype, device, requires_grad,
                           pin_memory)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
                 pin_memory=False):
        """``fill_value`` everywhere, with self's dtype and device unless given (``aten.new_full``)."""
        from ._creation import new_factory
        return new_factory(self, "new_full", self._new_size_seq(size, "new_full"), (fill_value,), dtype, device,
                           requires_grad, pin_memory)

    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                          pin_memory=False):
        """An uninitialised tensor of ``size`` and ``stride``, with self's dtype and device unless given."""
        from ._creation import new_factory
        return new_factory(self, "new_empty_strided", self._new_size_seq(size, "new_empty_strided"),
                           (tuple(stride),), dtype, device, requires_grad, pin_memory)

    def pin_memory(self, device=None) -> "Tensor":
        """Refused: pinned memory is for copies to an accelerator, and course_lib (like PyTorch built for the
        CPU only) has none.  PyTorch's errors and its deprecation warning for ``device``."""
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please do not pass this "
                          "argument.", DeprecationWarning, stacklevel=2)
        if self.is_meta:
            raise RuntimeError(f"cannot pin 'Meta{self.dtype._tensor_name}Type' only dense CPU tensors can be "
                               "pinned")
        if device is not None and str(device) == "cpu":
            raise RuntimeError("CPU device type not an accelerator.")
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def is_pinned(self, device=None) -> bool:
        """Always False: course_lib never pins memory (see ``pin_memory``)."""
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.is_pinned() is deprecated. Please do not pass this "
                          "argument.", DeprecationWarning, stacklevel=2)
        return False

    def detach_(self) -> "Tensor":
        """Detach in place: ``self`` becomes a leaf without history."""
        if self._base is not None and self.grad_fn is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        self.grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    # -- Python operators with a number on the left (torch/_tensor.py) -------------------
    def __rfloordiv__(self, other):
        if not isinstance(other, (int, float, bool)):
            return NotImplemented
        return _dispatch(_OPS["floor_divide"], (_scalar_tensor(other), self))

    def __rmod__(self, other):
        if not isinstance(other, (int, float, bool)):
            return NotImplemented
        return _dispatch(_OPS["remainder"], (_scalar_tensor(other), self))

    def __rpow__(self, other):
        return _dispatch(_OPS["pow"], (_scalar_tensor(other), self))

    # -- indexing (python_variable_indexing.cpp): see _ops/indexing.py --------------------
    def __getitem__(self, index):
        return _getitem(self, index)

    def __setitem__(self, index, value) -> None:
        _setitem(self, index, value)

    # -- random fills (the kernels are in _random.py) ------------------------------------
    def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator=None) -> "Tensor":
        """Fill with uniform random numbers in [from, to)."""
        return _random._uniform_(self, from_, to, generator=generator)

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> "Tensor":
        """Fill with normal random numbers."""
        return _random._normal_(self, mean, std, generator=generator)

    def random_(self, from_=None, to=None, *, generator=None) -> "Tensor":
        """Fill with random integers: ``random_(to)`` draws from [0, to), ``random_(from, to)``
        from [from, to), ``random_()`` from [0, the largest integer the dtype holds exactly]."""
        return _random._random_(self, from_, to, generator=generator)

    def bernoulli_(self, p=0.5, *, generator=None) -> "Tensor":
        """Fill with 0/1 draws that are 1 with probability ``p`` (a number or a tensor)."""
        return _random._bernoulli_(self, p, generator=generator)

    def exponential_(self, lambd: float = 1.0, *, generator=None) -> "Tensor":
        """Fill with exponential random numbers of rate ``lambd``."""
        return _random._exponential_(self, lambd, generator=generator)

    def geometric_(self, p: float, *, generator=None) -> "Tensor":
        """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
        return _random._geometric_(self, p, generator=generator)

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None) -> "Tensor":
        """Fill with ``exp`` of normal(mean, std) numbers."""
        return _random._log_normal_(self, mean, std, generator=generator)

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> "Tensor":
        """Fill with Cauchy random numbers."""
        return _random._cauchy_(self, median, sigma, generator=generator)

    def bernoulli(self, p=None, *, generator=None) -> "Tensor":
        """0/1 draws, each 1 with the probability given by ``self`` (or ``p``)."""
        return _random.bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples, replacement=False, *, generator=None) -> "Tensor":
        """Indices drawn from the categorical distributions in the rows of ``self``."""
        return _random.multinomial(self, num_samples, replacement, generator=generator)


def _scalar_tensor(value) -> Tensor:
    """A Python number as a 0-d tensor of the dtype it promotes as (bool, int64 or the default float)."""
    dt = _dtype.scalar_dtype(value)
    return Tensor._make(Storage(np.asarray(value, dtype=dt.np).reshape(1), dt), 0, (), (), dt)


# The kernels make Tensors (``_ops/common.py`` imports the class above), so the modules that need
# them are imported once the class exists.
from . import _random  # noqa: E402
from ._ops.indexing import getitem as _getitem  # noqa: E402
from ._ops.indexing import setitem as _setitem  # noqa: E402
