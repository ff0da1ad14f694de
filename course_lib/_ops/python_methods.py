"""Hand-written bindings: Python operators, ``to`` and the casts, ``var``/``std`` and a few
methods whose argument parsing doesn't fit the generated ones.

In PyTorch: the manual entries of ``torch/csrc/autograd/python_variable_methods.cpp``
(``__add__``, ``to``, ``float``, ``cuda``, ...) and ``torch/_tensor.py``.  Everything here
still goes through the dispatcher.  ``PythonMethods`` is one of ``Tensor``'s bases (see
``course_lib/_tensor.py``); the module-level functions below become ``course_lib.var``,
``course_lib.clip``, ...

An op whose binding is written here is registered with ``manual_binding=True``, so the
generator (``bindings.py``) does not write one too; ``tests/test_dispatcher.py`` checks that
no name is both generated and hand-written.
"""
from __future__ import annotations

import warnings

from .. import _dtype
from .._device import device as _device
from .._tensor_base import TensorBase
from . import python_torch_functions as _functions
from .dispatcher import dispatch
from .python_variable_methods import VariableMethods as _Generated
from .registry import OPS

__all__ = ["var", "std", "swapaxes", "swapdims", "clip", "absolute", "negative", "multiply",
           "subtract", "divide", "true_divide", "greater", "less", "concat", "concatenate", "var_mean", "std_mean"]

# What a binary operator accepts on its right; anything else returns NotImplemented so that Python
# tries the other operand (``x + "a"`` is Python's TypeError, as in PyTorch).  Two tensors of one
# class, the usual case, are recognised first by a cheaper test than isinstance with a tuple.
_OPERAND = (TensorBase, int, float, bool)


class PythonMethods:
    """The hand-written methods of ``Tensor`` (the generated ones are in ``VariableMethods``)."""

    __slots__ = ()

    # -- binary operators: x + y is x.add(y), ... -------------------------------------
    def __add__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["add"], (self, other, 1))
        return NotImplemented

    def __sub__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["sub"], (self, other, 1))
        return NotImplemented

    def __mul__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["mul"], (self, other))
        return NotImplemented

    def __truediv__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["div"], (self, other, None))
        return NotImplemented

    def __floordiv__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["floor_divide"], (self, other))
        return NotImplemented

    def __mod__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["remainder"], (self, other))
        return NotImplemented

    def __pow__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["pow"], (self, other))
        return NotImplemented

    def __and__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["bitwise_and"], (self, other))
        return NotImplemented

    def __or__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["bitwise_or"], (self, other))
        return NotImplemented

    def __xor__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["bitwise_xor"], (self, other))
        return NotImplemented

    def __matmul__(self, other):
        if not isinstance(other, TensorBase):
            return NotImplemented  # x @ 2: Python's TypeError, as in PyTorch
        return dispatch(OPS["matmul"], (self, other))

    # -- comparisons ------------------------------------------------------------------
    def __eq__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["eq"], (self, other))
        return NotImplemented

    def __ne__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["ne"], (self, other))
        return NotImplemented

    def __lt__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["lt"], (self, other))
        return NotImplemented

    def __le__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["le"], (self, other))
        return NotImplemented

    def __gt__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["gt"], (self, other))
        return NotImplemented

    def __ge__(self, other):
        if other.__class__ is self.__class__ or isinstance(other, _OPERAND) or hasattr(other, "__index__"):
            return dispatch(OPS["ge"], (self, other))
        return NotImplemented

    def __hash__(self):
        # by identity, as in PyTorch (defining __eq__ would otherwise make tensors unhashable)
        return id(self)

    # -- reflected operators: 2 + x is x.__radd__(2) ----------------------------------------
    # (those that need a number as a tensor, __rfloordiv__, __rmod__ and __rpow__, are in _tensor.py)
    def __radd__(self, other):
        return dispatch(OPS["add"], (self, other, 1))

    def __rmul__(self, other):
        return dispatch(OPS["mul"], (self, other))

    def __rand__(self, other):
        return dispatch(OPS["bitwise_and"], (self, other))

    def __ror__(self, other):
        return dispatch(OPS["bitwise_or"], (self, other))

    def __rxor__(self, other):
        return dispatch(OPS["bitwise_xor"], (self, other))

    def __rsub__(self, other):
        return dispatch(OPS["rsub"], (self, other, 1))

    def __rtruediv__(self, other):
        # 1 / x is reciprocal(x) * 1, as in PyTorch (grad_fn MulBackward0)
        return dispatch(OPS["mul"], (dispatch(OPS["reciprocal"], (self,)), other))

    def __rmatmul__(self, other):
        if not isinstance(other, TensorBase):
            return NotImplemented
        return dispatch(OPS["matmul"], (other, self))

    # -- in-place operators: x += y is x.add_(y) ------------------------------------------
    def __iadd__(self, other):
        return dispatch(OPS["add_"], (self, other, 1))

    def __isub__(self, other):
        return dispatch(OPS["sub_"], (self, other, 1))

    def __imul__(self, other):
        return dispatch(OPS["mul_"], (self, other))

    def __itruediv__(self, other):
        return dispatch(OPS["div_"], (self, other, None))

    def __ifloordiv__(self, other):
        return dispatch(OPS["floor_divide_"], (self, other))

    def __imod__(self, other):
        return dispatch(OPS["remainder_"], (self, other))

    def __ipow__(self, other):
        return dispatch(OPS["pow_"], (self, other))

    def __iand__(self, other):
        return dispatch(OPS["bitwise_and_"], (self, other))

    def __ior__(self, other):
        return dispatch(OPS["bitwise_or_"], (self, other))

    def __ixor__(self, other):
        return dispatch(OPS["bitwise_xor_"], (self, other))

    # -- unary operators -----------------------------------------------------------------
    def __neg__(self):
        return dispatch(OPS["neg"], (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return dispatch(OPS["abs"], (self,))

    def __invert__(self):
        if self.dtype.category == _dtype._FLOAT:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return dispatch(OPS["bitwise_not"], (self,))

    # -- dtype and device ------------------------------------------------------------------
    def equal(self, other) -> bool:
        """``course_lib.equal(self, other)``: same shape and the same values."""
        from .._compare import equal
        return equal(self, other)

    def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """``course_lib.allclose(self, other, ...)``."""
        from .._compare import allclose
        return allclose(self, other, rtol, atol, equal_nan)

    def to(self, *args, **kwargs):
        """Convert dtype and/or device: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``.

        Returns ``self`` when nothing changes (unless ``copy=True``).
        """
        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)  # a no-op on CPU, as in PyTorch
        memory_format = kwargs.pop("memory_format", None)
        if memory_format == "preserve_format":
            memory_format = None
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if isinstance(dev, str):
            _check_device_string(dev)
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, TensorBase):
                dtype, dev = a.dtype, a._storage.device
            elif isinstance(a, (str, _device)):
                if isinstance(a, str):
                    _check_device_string(a)
                dev = str(_device(a))
            elif isinstance(a, bool):
                copy = copy or a
        same_dev = dev is None or dev == self._storage.device
        if ((dtype is None or dtype is self.dtype) and same_dev and not copy
                and (memory_format is None or memory_format == self._suggest_memory_format())):
            return self
        args = (self, dtype, None if same_dev else dev)
        return dispatch(OPS["_to_copy"], args if memory_format is None else args + (memory_format,))

    def cuda(self, device=None, non_blocking=False):
        raise AssertionError("Torch not compiled with CUDA enabled")

    def type_as(self, other):
        return self.to(other.dtype)

    def float(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.float32, memory_format=memory_format)``"""
        return self.to(_dtype.float32, memory_format=memory_format)

    def double(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.float64, memory_format=memory_format)``"""
        return self.to(_dtype.float64, memory_format=memory_format)

    def half(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.float16, memory_format=memory_format)``"""
        return self.to(_dtype.float16, memory_format=memory_format)

    def long(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.int64, memory_format=memory_format)``"""
        return self.to(_dtype.int64, memory_format=memory_format)

    def int(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.int32, memory_format=memory_format)``"""
        return self.to(_dtype.int32, memory_format=memory_format)

    def short(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.int16, memory_format=memory_format)``"""
        return self.to(_dtype.int16, memory_format=memory_format)

    def char(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.int8, memory_format=memory_format)``"""
        return self.to(_dtype.int8, memory_format=memory_format)

    def byte(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.uint8, memory_format=memory_format)``"""
        return self.to(_dtype.uint8, memory_format=memory_format)

    def bool(self, *, memory_format="preserve_format"):
        """``self.to(course_lib.bool, memory_format=memory_format)``"""
        return self.to(_dtype.bool_, memory_format=memory_format)

    # -- reductions with PyTorch's two signatures (manual_binding in the registry) ----------------
    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """Variance with Bessel's ``correction`` (1: unbiased, 0: biased).

        ``var(dim, unbiased, keepdim)`` is the old signature, ``correction=`` the new one.
        """
        return dispatch(OPS["var"], _var_args(self, dim, unbiased, keepdim, correction))

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """Standard deviation with Bessel's ``correction`` (1: unbiased, 0: biased).

        ``std(dim, unbiased, keepdim)`` is the old signature, ``correction=`` the new one.
        """
        return dispatch(OPS["std"], _var_args(self, dim, unbiased, keepdim, correction))

    # -- shapes ------------------------------------------------------------------------------
    @property
    def T(self):
        """The dims in reverse order (deprecated by PyTorch for other than 2-d tensors)."""
        if len(self._shape) != 2:
            warnings.warn(
                "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and "
                "it will throw an error in a future release. Consider `x.mT` to transpose batches of matrices "
                "or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                UserWarning, stacklevel=2)
        return dispatch(OPS["permute"], (self, tuple(range(len(self._shape) - 1, -1, -1))))

    H = T  # the conjugate transpose: the same for real tensors

    @property
    def mT(self):
        """The last two dims swapped (a batch of transposed matrices)."""
        if len(self._shape) < 2:
            raise RuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {len(self._shape)}-D tensor.")
        return dispatch(OPS["transpose"], (self, -2, -1))

    def view_as(self, other):
        return dispatch(OPS["view"], (self, other._shape))

    def reshape_as(self, other):
        return dispatch(OPS["reshape"], (self, other._shape))

    def ravel(self):
        # ravel is contiguous().view(-1) in PyTorch: a view even when a copy was needed first
        return dispatch(OPS["view"], (dispatch(OPS["contiguous"], (self, "contiguous_format")), (-1,)))

    def swapaxes(self, a, b):
        return dispatch(OPS["transpose"], (self, a, b))

    swapdims = swapaxes

    def true_divide(self, other):
        return dispatch(OPS["div"], (self, other, None))

    # -- aliases: other names of generated methods (PyTorch declares them as ops of their own) ----
    clip = _Generated.clamp
    clip_ = _Generated.clamp_
    absolute = _Generated.abs
    negative = _Generated.neg
    multiply = _Generated.mul
    subtract = _Generated.sub
    divide = _Generated.div
    greater = _Generated.gt
    less = _Generated.lt


def _var_args(self, dim, unbiased, keepdim, correction) -> tuple:
    """The dispatcher's arguments of var/std for either of PyTorch's signatures."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return (self, dim, correction, keepdim)


def _check_device_string(dev: str) -> None:
    """PyTorch's errors for devices a CPU-only build doesn't have (course_lib has only cpu and meta)."""
    kind = dev.split(":")[0]
    if kind == "cuda":
        raise AssertionError("Torch not compiled with CUDA enabled")
    if kind in ("xla", "mps", "xpu", "hpu", "ipu", "mtia", "hip", "ve", "lazy", "vulkan", "fpga", "maia"):
        raise RuntimeError(f"PyTorch is not linked with support for {kind} devices")


# ---------------------------------------------------------------------------
# module-level functions: course_lib.var, course_lib.clip, ...
# ---------------------------------------------------------------------------
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance with Bessel's ``correction`` (see ``Tensor.var``)."""
    return dispatch(OPS["var"], _var_args(input, dim, unbiased, keepdim, correction))


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation with Bessel's ``correction`` (see ``Tensor.std``)."""
    return dispatch(OPS["std"], _var_args(input, dim, unbiased, keepdim, correction))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance and mean in one call, a (var, mean) tuple (see ``Tensor.var``)."""
    return dispatch(OPS["var_mean"], _var_args(input, dim, unbiased, keepdim, correction))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation and mean in one call, a (std, mean) tuple (see ``Tensor.std``)."""
    return dispatch(OPS["std_mean"], _var_args(input, dim, unbiased, keepdim, correction))


def swapaxes(self, a, b):
    return dispatch(OPS["transpose"], (self, a, b))


swapdims = swapaxes
clip = _functions.clamp
absolute = _functions.abs
negative = _functions.neg
multiply = _functions.mul
subtract = _functions.sub
divide = _functions.div
true_divide = _functions.div
greater = _functions.gt
less = _functions.lt
concat = _functions.cat
concatenate = _functions.cat
