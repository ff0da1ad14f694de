"""Hand-written Tensor methods: Python operators, ``to``/casts, indexing, and a few
PyTorch methods whose argument parsing doesn't fit the generated bindings.

In PyTorch: ``torch/_tensor.py`` (``__rsub__``, ``__rdiv__``, ...) and
``torch/csrc/autograd/python_variable_methods.cpp`` (``to``, ``type`` ...).
Everything here still goes through the dispatcher.
"""
from __future__ import annotations

import warnings

from .. import _dtype as D
from .dispatcher import dispatch
from .registry import OPS
from . import indexing

_T = None


def _op(name):
    op = OPS[name]

    def call(*args):
        return dispatch(op, args)
    return call


def _trailing_defaults(op, n_given: int) -> tuple:
    """Default values of the op's arguments after the first ``n_given`` (e.g. add's alpha=1)."""
    from .bindings import _default
    return tuple(eval(_default(a.default)) for a in op.args[n_given:])  # noqa: S307 (schema literals)


def _binary(name, reflected=False):
    op = OPS[name]
    extra = _trailing_defaults(op, 2)
    T = _T
    if reflected:
        def fn(self, other):
            return dispatch(op, (self, other) + extra)
    elif len(extra) == 1:
        e0 = extra[0]

        def fn(self, other):
            if isinstance(other, T) or isinstance(other, _NUMBER) or hasattr(other, "__index__"):
                return dispatch(op, (self, other, e0))
            return NotImplemented
    elif extra:
        def fn(self, other):
            if isinstance(other, T) or isinstance(other, _NUMBER) or hasattr(other, "__index__"):
                return dispatch(op, (self, other) + extra)
            return NotImplemented
    else:
        def fn(self, other):
            if isinstance(other, T) or isinstance(other, _NUMBER) or hasattr(other, "__index__"):
                return dispatch(op, (self, other))
            return NotImplemented
    return fn


_NUMBER = (int, float, bool)


def _rbinary(name):
    op = OPS[name]
    extra = _trailing_defaults(op, 2)

    def fn(self, other):
        if not isinstance(other, (int, float, bool)):
            return NotImplemented
        return dispatch(op, (_scalar_tensor(other), self) + extra)
    return fn


def _inplace(name):
    op = OPS[name]
    extra = _trailing_defaults(op, 2)

    def fn(self, other):
        return dispatch(op, (self, other) + extra)
    return fn


def _scalar_tensor(value):
    """A Python number as a 0-d tensor of the dtype it promotes as (bool, int64 or the default float)."""
    import numpy as np
    from .common import wrap
    dt = D.scalar_dtype(value)
    return wrap(np.asarray(value, dtype=dt.np), dt)


def _rtruediv(self, other):
    # 1 / x is reciprocal(x) * 1, as in PyTorch (grad_fn MulBackward0)
    return dispatch(OPS["mul"], (dispatch(OPS["reciprocal"], (self,)), other))


def _rpow(self, other):
    return dispatch(OPS["pow"], (_scalar_tensor(other), self))


def _matmul(self, other):
    if not isinstance(other, _T):
        return NotImplemented  # x @ 2: Python's TypeError, as in PyTorch
    return dispatch(OPS["matmul"], (self, other))


def _rmatmul(self, other):
    if not isinstance(other, _T):
        return NotImplemented
    return dispatch(OPS["matmul"], (other, self))


def to(self, *args, **kwargs):
    """Convert dtype and/or device: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``.

    Returns ``self`` when nothing changes (unless ``copy=True``).
    """
    from .._device import device as Device
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if isinstance(dev, str):
        _check_device_string(dev)
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, _T):
            dtype, dev = a.dtype, a._storage.device
        elif isinstance(a, (str, Device)):
            if isinstance(a, str):
                _check_device_string(a)
            dev = str(Device(a))
        elif isinstance(a, bool):
            copy = copy or a
    same_dev = dev is None or dev == self._storage.device
    if (dtype is None or dtype is self.dtype) and same_dev and not copy:
        return self
    return dispatch(OPS["_to_copy"], (self, dtype, None if same_dev else dev))


def _check_device_string(dev: str) -> None:
    """PyTorch's errors for devices a CPU-only build doesn't have (course_lib has only cpu and meta)."""
    kind = dev.split(":")[0]
    if kind == "cuda":
        raise AssertionError("Torch not compiled with CUDA enabled")
    if kind in ("xla", "mps", "xpu", "hpu", "ipu", "mtia", "hip", "ve", "lazy", "vulkan", "fpga", "maia"):
        raise RuntimeError(f"PyTorch is not linked with support for {kind} devices")


def _cuda(self, device=None, non_blocking=False):
    raise AssertionError("Torch not compiled with CUDA enabled")


def _invert(self):
    if self.dtype.category == D._FLOAT:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return dispatch(OPS["bitwise_not"], (self,))


def _caster(dt):
    def fn(self, memory_format=None):
        return to(self, dt)
    fn.__name__ = dt.name
    fn.__doc__ = f"``self.to({dt!r})``"
    return fn


def _var_like(name):
    op = OPS[name]

    def fn(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        # var(dim, unbiased, keepdim) is the old signature; correction= the new one.
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        return dispatch(op, (self, dim, correction, keepdim))
    fn.__name__ = name
    fn.__doc__ = op.doc
    return fn


def _T_prop(self):
    if len(self._shape) != 2:
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
            "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
            "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
            UserWarning, stacklevel=2)
    return dispatch(OPS["permute"], (self, tuple(range(len(self._shape) - 1, -1, -1))))


def _mT(self):
    if len(self._shape) < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {len(self._shape)}-D tensor.")
    return dispatch(OPS["transpose"], (self, -2, -1))


def _size_args(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def repeat(self, *sizes):
    """Tile the tensor: dim i repeated sizes[i] times (new leading dims allowed)."""
    sizes = _size_args(sizes)
    if len(sizes) < len(self._shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    full = (1,) * (len(sizes) - len(self._shape)) + self._shape
    target_shape = [r * s for r, s in zip(sizes, full)]
    for s in target_shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {target_shape}")
    x = self
    pad = len(sizes) - len(self._shape)
    x = dispatch(OPS["view"], (x, (1,) * pad + self._shape)) if pad else x
    # expand a size-1 dim in front of each dim, then fold: a view + one copy
    shape = x._shape
    inter = []
    target = []
    for r, s in zip(sizes, shape):
        inter += [1, s]
        target += [r, s]
    y = dispatch(OPS["reshape"], (x, tuple(inter)))
    y = dispatch(OPS["expand"], (y, tuple(target)))
    return dispatch(OPS["reshape"], (y, tuple(r * s for r, s in zip(sizes, shape))))


def install(tensor_cls, namespace: dict) -> None:
    global _T
    _T = tensor_cls
    T = tensor_cls
    for dunder, name in (("__add__", "add"), ("__sub__", "sub"), ("__mul__", "mul"), ("__truediv__", "div"),
                         ("__floordiv__", "floor_divide"), ("__mod__", "remainder"), ("__pow__", "pow"),
                         ("__and__", "bitwise_and"), ("__or__", "bitwise_or"),
                         ("__xor__", "bitwise_xor"), ("__eq__", "eq"), ("__ne__", "ne"), ("__lt__", "lt"),
                         ("__le__", "le"), ("__gt__", "gt"), ("__ge__", "ge")):
        setattr(T, dunder, _binary(name))
    for dunder, name in (("__radd__", "add"), ("__rmul__", "mul"), ("__rand__", "bitwise_and"),
                         ("__ror__", "bitwise_or"), ("__rxor__", "bitwise_xor")):
        setattr(T, dunder, _binary(name, reflected=True))
    T.__rsub__ = lambda self, other: dispatch(OPS["rsub"], (self, other, 1))
    T.__rtruediv__ = _rtruediv
    T.__rfloordiv__ = _rbinary("floor_divide")
    T.__rmod__ = _rbinary("remainder")
    T.__rpow__ = _rpow
    T.__matmul__ = _matmul
    T.__rmatmul__ = _rmatmul
    for dunder, name in (("__iadd__", "add_"), ("__isub__", "sub_"), ("__imul__", "mul_"),
                         ("__itruediv__", "div_"), ("__ifloordiv__", "floor_divide_"), ("__imod__", "remainder_"),
                         ("__ipow__", "pow_"), ("__iand__", "bitwise_and_"), ("__ior__", "bitwise_or_"),
                         ("__ixor__", "bitwise_xor_")):
        setattr(T, dunder, _inplace(name))
    T.__neg__ = lambda self: dispatch(OPS["neg"], (self,))
    T.__pos__ = lambda self: self
    T.__abs__ = lambda self: dispatch(OPS["abs"], (self,))
    T.__invert__ = _invert
    T.cuda = _cuda
    T.__getitem__ = indexing.getitem
    T.__setitem__ = indexing.setitem
    T.__hash__ = lambda self: id(self)

    T.to = to
    for name, dt in (("float", D.float32), ("double", D.float64), ("half", D.float16), ("long", D.int64),
                     ("int", D.int32), ("short", D.int16), ("char", D.int8), ("byte", D.uint8), ("bool", D.bool_)):
        setattr(T, name, _caster(dt))
    T.var = _var_like("var")
    T.std = _var_like("std")
    namespace["var"] = lambda input, dim=None, unbiased=None, keepdim=False, *, correction=None: \
        T.var(input, dim, unbiased, keepdim, correction=correction)
    namespace["std"] = lambda input, dim=None, unbiased=None, keepdim=False, *, correction=None: \
        T.std(input, dim, unbiased, keepdim, correction=correction)
    T.T = property(_T_prop)
    T.mT = property(_mT)
    T.H = property(_T_prop)
    T.repeat = repeat
    T.expand_as = lambda self, other: dispatch(OPS["expand"], (self, other._shape))
    T.view_as = lambda self, other: dispatch(OPS["view"], (self, other._shape))
    T.reshape_as = lambda self, other: dispatch(OPS["reshape"], (self, other._shape))
    T.type_as = lambda self, other: to(self, other.dtype)
    # ravel is contiguous().view(-1) in PyTorch: a view even when a copy was needed first
    T.ravel = lambda self: dispatch(OPS["view"], (dispatch(OPS["contiguous"], (self, "contiguous_format")), (-1,)))
    T.swapaxes = T.swapdims = lambda self, a, b: dispatch(OPS["transpose"], (self, a, b))
    T.div_ = lambda self, other, *, rounding_mode=None: dispatch(OPS["div_"], (self, other, rounding_mode))
    T.true_divide = lambda self, other: dispatch(OPS["div"], (self, other, None))
    T.clip = T.clamp
    T.clip_ = T.clamp_
    T.absolute = T.abs
    T.negative = T.neg
    T.multiply = T.mul
    T.subtract = T.sub
    T.divide = T.div
    T.greater = T.gt
    T.less = T.lt
    for alias, name in (("clip", "clamp"), ("absolute", "abs"), ("negative", "neg"), ("multiply", "mul"),
                        ("subtract", "sub"), ("divide", "div"), ("true_divide", "div"), ("greater", "gt"),
                        ("less", "lt"), ("concat", "cat"), ("concatenate", "cat")):
        namespace[alias] = namespace[name]
    namespace["swapaxes"] = namespace["swapdims"] = T.swapaxes
    namespace["repeat"] = repeat
