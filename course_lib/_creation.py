"""Making tensors: ``tensor()`` from Python data, and the factory functions.

In PyTorch: ``torch/csrc/utils/tensor_new.cpp`` (``torch.tensor``: shape
inference, dtype inference and the *recursive store*),
``aten/src/ATen/native/TensorFactories.cpp`` (``zeros``, ``full``, ``eye``,
``empty_strided``, the ``*_like`` functions), ``RangeFactories.cpp``
(``arange``, ``linspace``) and ``torch/csrc/utils/tensor_numpy.cpp``
(``from_numpy``).

``tensor(data)`` works in three steps, exactly like PyTorch:

1. ``_compute_sizes``: walk the *first* element of each nested sequence to get
   the shape (``[[1, 2], [3, 4]]`` -> ``(2, 2)``);
2. ``_infer_scalar_type``: look at *every* element to pick the dtype (bool if
   all are bools, int64 if ints, the default float dtype if any is a float);
3. ``_recursive_store``: walk the nested sequences again and write each value
   into a flat buffer, checking every length against the shape from step 1.
   A ragged list is only discovered here, which is why its error names the
   dimension and the length that was expected.

For large, well-formed nested lists of Python numbers step 2 and 3 are done by
numpy instead (the result is the same; ``_fast_path`` says when that is safe).
"""
from __future__ import annotations

import builtins
import copy as _copy
import itertools
import math
import operator
import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from . import _dtype
from ._device import device as _device_cls
from ._ops import common as _common
from ._ops.dispatcher import dispatch as _dispatch
from ._ops.out_arg import check_out, check_out_dtype, resize_output, write_out
from ._ops.registry import OPS as _OPS
from ._ops.registry import register as _register
from ._parallel import parallel_copy
from ._size import Size
from ._storage import Storage
from ._tensor import Tensor

__all__ = [
    "tensor", "as_tensor", "from_numpy", "scalar_tensor",
    "zeros", "ones", "full", "empty", "empty_strided", "arange", "linspace", "eye",
    "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
]

_MAX_DIMS = 64
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


# ---------------------------------------------------------------------------
# small argument helpers shared by every factory
# ---------------------------------------------------------------------------
_PY_TYPE_DTYPES = {builtins.float: _dtype.float64, builtins.int: _dtype.int64, builtins.bool: _dtype.bool_}


def _parse_dtype(dtype, fname: str = "tensor"):
    """``None``, a course_lib dtype, or the Python types ``float``/``int``/``bool``."""
    if dtype is None or isinstance(dtype, _dtype.dtype):
        return dtype
    d = _PY_TYPE_DTYPES.get(dtype)
    if d is not None:
        return d
    raise TypeError(f"{fname}(): argument 'dtype' must be course_lib.dtype, not {type(dtype).__name__}")


def _parse_device(device) -> str | None:
    """``None``, ``'cpu'``, ``'meta'`` or a ``device``; returns the type string."""
    if device is None:
        return None
    return _device_cls(device).type


def _parse_size(size: tuple, fname: str) -> tuple:
    """Sizes given as varargs (``zeros(2, 3)``) or one sequence (``zeros((2, 3))``)."""
    if len(size) == 1 and not isinstance(size[0], (builtins.int, np.integer)) \
            and not (isinstance(size[0], Tensor) and size[0].dim() == 0):
        seq = size[0]
        if not isinstance(seq, (tuple, list, Size)):
            raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, "
                            f"not {type(seq).__name__}")
        size = seq
    out = []
    for i, s in enumerate(size):
        try:
            out.append(operator.index(s))
        except TypeError:
            raise TypeError(f"{fname}(): argument 'size' failed to unpack the object at pos {i + 1} "
                            f"with error \"type must be tuple of ints,but got {type(s).__name__}\"") from None
    return tuple(out)


def _check_sizes(shape: tuple, fname: str = "") -> None:
    for s in shape:
        if s < 0:
            if fname == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")


def _check_requires_grad(t, requires_grad: bool):
    if requires_grad:
        if not t.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _new(shape: tuple, dtype: _dtype.dtype, device: str | None, fill=None, requires_grad: bool = False):
    """A fresh contiguous tensor; ``fill`` None means uninitialised (``empty``)."""
    if device == "meta":
        return _check_requires_grad(_common.empty_meta(shape, dtype), requires_grad)
    if fill is None:
        arr = np.empty(shape, dtype=dtype.np)
    elif fill == 0 and math.copysign(1.0, fill) > 0:       # not -0.0
        arr = np.zeros(shape, dtype=dtype.np)
    else:
        arr = np.full(shape, fill, dtype=dtype.np)
    return _check_requires_grad(_common.wrap(arr, dtype), requires_grad)


def _tp_name(obj) -> str:
    """The type name CPython prints in messages: 'list', 'numpy.float32', ..."""
    tp = type(obj)
    if tp.__module__ == "builtins":
        return tp.__name__
    return f"{tp.__module__}.{tp.__qualname__}"


# ---------------------------------------------------------------------------
# tensor(): shape inference, dtype inference, recursive store
# ---------------------------------------------------------------------------
def _is_sequence(obj) -> bool:
    """CPython's ``PySequence_Check``: lists, tuples, ranges, strings, numpy arrays, ...

    Tensors are not sequences here (PyTorch treats a tensor inside a list as one
    value), nor are numpy scalars and dicts.
    """
    if isinstance(obj, (list, tuple)):
        return True
    if isinstance(obj, (dict, np.generic, Tensor)):
        return False
    return hasattr(type(obj), "__getitem__") and hasattr(type(obj), "__len__")


def _compute_sizes(seq) -> list:
    """The shape of nested sequences, from the first element of each level.

    >>> _compute_sizes([[1, 2, 3], [4, 5, 6]])
    [2, 3]
    """
    sizes = []
    while _is_sequence(seq):
        length = len(seq)
        sizes.append(length)
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{_tp_name(seq)}'")
        if length == 0:
            break
        seq = seq[0]
    return sizes


def _infer_scalar_type(obj) -> _dtype.dtype:
    """The dtype PyTorch gives ``obj``: promote the types of all its elements.

    bool < int64 < the default float dtype; numpy arrays and scalars keep their
    own dtype; a tensor element contributes its dtype; an empty list is float.
    """
    if isinstance(obj, (np.ndarray, np.generic)):
        return _dtype.from_numpy_dtype(obj.dtype)
    if isinstance(obj, builtins.float):
        return _dtype.get_default_dtype()
    if isinstance(obj, builtins.bool):
        return _dtype.bool_
    if isinstance(obj, builtins.int):
        return _dtype.int64
    if isinstance(obj, Tensor):
        return obj.dtype
    if isinstance(obj, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{_tp_name(obj)}'")
    if _is_sequence(obj):
        if len(obj) == 0:
            return _dtype.get_default_dtype()
        result = None
        for item in obj:
            if item is obj:
                raise TypeError("new(): self-referential lists are incompatible")
            d = _infer_scalar_type(item)
            result = d if result is None else _dtype.promote_types(result, d)
        return result
    raise RuntimeError(f"Could not infer dtype of {_tp_name(obj)}")


# C type limits used by PyTorch's checked conversions (c10/util/TypeCast.h).
_INT_LIMITS = {
    "int64": (_INT64_MIN, _INT64_MAX), "int32": (-(2 ** 31), 2 ** 31 - 1),
    "int16": (-(2 ** 15), 2 ** 15 - 1), "int8": (-128, 127), "uint8": (0, 255),
}


def _int_overflows(v: int, dtype: _dtype.dtype) -> bool:
    """c10's ``overflows<To>(int64 v)``: unsigned types also accept -max..-1 (they wrap)."""
    lo, hi = _INT_LIMITS[dtype.name]
    if lo == 0:
        return v > hi or (v < 0 and -v > hi)
    return v < lo or v > hi


def _float_overflows(f: float, dtype: _dtype.dtype) -> bool:
    """c10's ``overflows<To>(double f)`` for an integer ``To``: NaN, inf or out of range."""
    if f != f or f in (math.inf, -math.inf):
        return True
    lo, hi = _INT_LIMITS[dtype.name]
    return f < builtins.float(lo) or f > builtins.float(hi)


def _wrap_int(v: int, dtype: _dtype.dtype) -> int:
    """Two's-complement wrap of ``v`` into ``dtype`` (what the C cast does)."""
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1
    if dtype.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _as_double(obj) -> float:
    """CPython's ``PyFloat_AsDouble``: ``__float__``, else ``__index__``, else TypeError."""
    tp = type(obj)
    if tp is builtins.float:
        return obj
    if hasattr(tp, "__float__"):
        return tp.__float__(obj)
    if hasattr(tp, "__index__"):
        return builtins.float(tp.__index__(obj))
    raise TypeError(f"must be real number, not {_tp_name(obj)}")


def _store_scalar(obj, dtype: _dtype.dtype):
    """Convert one leaf value the way ``torch::utils::store_scalar`` does.

    Returns a Python number ready to be written into a buffer of ``dtype``.
    """
    T = Tensor
    cat = dtype.category
    if isinstance(obj, T):
        # A tensor used as a number: what float() / operator.index() on it do in PyTorch.
        if cat == _dtype._FLOAT:
            if obj.numel() != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            return np.asarray(obj._np().reshape(()).item(), dtype=np.float64).astype(dtype.np).item()
        if obj.numel() != 1 or obj.dtype.category == _dtype._FLOAT:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        obj = obj._np().reshape(()).item()
    if cat == _dtype._FLOAT:
        d = _as_double(obj)
        if dtype is _dtype.float64:
            return d
        with np.errstate(over="ignore"):           # too large -> inf, as the C cast does
            f = np.float32(d)
            return (np.float16(f) if dtype is _dtype.float16 else f).item()
    if cat == _dtype._BOOL:
        if isinstance(obj, builtins.float):
            return obj != 0                       # NaN is True, as in C
        if isinstance(obj, np.bool_):
            return builtins.bool(obj)
        return operator.index(obj) != 0
    # integer dtypes
    if isinstance(obj, builtins.float):
        if _float_overflows(obj, dtype):
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
        return _wrap_int(builtins.int(obj), dtype)
    v = operator.index(obj)
    if v < _INT64_MIN or v > _INT64_MAX:
        raise ValueError("Overflow when unpacking long long")
    if dtype is not _dtype.int64 and _int_overflows(v, dtype):
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
    return _wrap_int(v, dtype)


_warned_ndarray_list = [False]


def _recursive_store(buf: np.ndarray, offset: int, sizes: list, strides: list, dim: int,
                     dtype: _dtype.dtype, obj) -> None:
    """Write the values of nested sequence ``obj`` into the flat buffer ``buf``.

    ``offset`` is where ``obj``'s first element goes; ``strides`` are the
    contiguous strides of ``sizes``.  This is PyTorch's ``recursive_store``:
    at the innermost level each value is converted by ``_store_scalar``; above
    it, each level must have exactly ``sizes[dim]`` items.

    >>> buf = np.zeros(4, dtype=np.int64)
    >>> _recursive_store(buf, 0, [2, 2], [2, 1], 0, _dtype.int64, [[1, 2], [3, 4]]); buf.tolist()
    [1, 2, 3, 4]
    """
    ndim = len(sizes)
    if dim == ndim:
        buf[offset] = _store_scalar(obj, dtype)
        return
    n = sizes[dim]
    if isinstance(obj, Tensor):
        # Iterating a tensor yields its sub-tensors (a 0-d tensor is not iterable).
        items = None if obj.dim() == 0 else [_common.wrap(np.array(r)) for r in obj._np()]
    else:
        try:
            items = list(iter(obj))
        except TypeError:
            items = None
    if items is None:
        raise TypeError("not a sequence")
    if len(items) != n:
        raise ValueError(f"expected sequence of length {n} at dim {dim} (got {len(items)})")
    step = strides[dim]
    for item in items:
        if isinstance(item, np.ndarray):
            if not _warned_ndarray_list[0]:
                _warned_ndarray_list[0] = True
                warnings.warn(
                    "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider "
                    "converting the list to a single numpy.ndarray with numpy.array() before converting "
                    "to a tensor.", UserWarning, stacklevel=4)
            # A whole block of the right shape: convert it at once (same values, no loop).
            if item.shape == tuple(sizes[dim + 1:]):
                block = _convert_numbers(item, dtype, numpy_scalars=True)
                if block is not None:
                    buf[offset:offset + block.size] = block.reshape(-1)
                    offset += step
                    continue
        _recursive_store(buf, offset, sizes, strides, dim + 1, dtype, item)
        offset += step


def _convert_numbers(a: np.ndarray, dtype: _dtype.dtype, numpy_scalars: bool) -> np.ndarray | None:
    """Vectorised ``_store_scalar`` over an array of numbers (bool, int64 or float arrays).

    ``numpy_scalars`` says the values stand for numpy scalars (elements of an
    ndarray inside a list) rather than Python numbers: numpy's bools and
    non-float64 floats are then not accepted as integers, as in PyTorch.
    Returns None when some element needs the element-by-element path (which
    raises PyTorch's error for it); raises the overflow errors itself.
    """
    kind = a.dtype.kind
    cat = dtype.category
    if cat == _dtype._FLOAT:
        with np.errstate(all="ignore"):
            # Each value goes to double first, then to the dtype (as the C code casts).
            d = a if a.dtype == np.float64 else a.astype(np.float64)
            if dtype is _dtype.float16:
                return d.astype(np.float32).astype(np.float16)
            return d.astype(dtype.np)
    if kind == "f" and numpy_scalars and a.dtype != np.float64:
        return None            # 'numpy.float32' object cannot be interpreted as an integer
    if kind == "b" and numpy_scalars and cat != _dtype._BOOL:
        return None            # 'numpy.bool' object cannot be interpreted as an integer
    if cat == _dtype._BOOL:
        return a != 0 if kind != "b" else a.copy()
    if kind == "f":
        if a.size:
            lo, hi = _INT_LIMITS[dtype.name]
            bad = ~((a >= builtins.float(lo)) & (a <= builtins.float(hi)))   # NaN is bad too
            if bad.any():
                raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
        with np.errstate(all="ignore"):
            return a.astype(np.int64).astype(dtype.np)
    if kind in "iu" and dtype is not _dtype.int64 and a.size:
        lo, hi = _INT_LIMITS[dtype.name]
        mn, mx = int(a.min()), int(a.max())
        if _int_overflows(mn, dtype) or _int_overflows(mx, dtype):
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
    if kind not in "iub":
        return None
    return a.astype(dtype.np)


_SCALAR_TYPES = {builtins.float, builtins.int, builtins.bool}


def _fast_path(data, sizes: list, dtype: _dtype.dtype | None):
    """numpy does steps 2 and 3 at once when every leaf is a Python bool, int or float.

    Returns a numpy array of the final dtype, or None to take the reference path.
    """
    if len(sizes) == 0 or 0 in sizes:
        return None
    try:
        arr = np.array(data)
    except (ValueError, TypeError, OverflowError):
        return None
    if arr.dtype not in (np.float64, np.int64, np.bool_) or list(arr.shape) != sizes:
        return None
    flat = data
    for _ in range(len(sizes) - 1):
        flat = itertools.chain.from_iterable(flat)
    types = set(map(type, flat))
    if not types <= _SCALAR_TYPES:
        return None
    if arr.dtype == np.float64 and builtins.float not in types:
        return None  # numpy made floats of ints beyond int64 (e.g. [0, 2**63]): the reference path raises
    if dtype is None:
        if builtins.float in types:
            dtype = _dtype.get_default_dtype()
        elif builtins.int in types:
            dtype = _dtype.int64
        else:
            dtype = _dtype.bool_
    elif (dtype.category == _dtype._INT and builtins.float in types and builtins.int in types):
        return None  # exact big ints and truncated floats in one list: keep them apart
    return _convert_numbers(arr, dtype, numpy_scalars=False)


def _check_numpy(arr: np.ndarray) -> _dtype.dtype:
    d = _dtype.from_numpy_dtype(arr.dtype) if arr.dtype.isnative else None
    if d is None:
        raise ValueError("given numpy array has byte order different from the native byte order. "
                         "Conversion between byte orders is currently not supported.")
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making a "
            "copy of your array  with array.copy().) ")
    return d


def tensor(data, *, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False):
    """A new tensor holding a copy of ``data`` (nested lists/tuples, numbers, numpy arrays, tensors).

    >>> tensor([[1, 2], [3, 4]])
    tensor([[1, 2],
            [3, 4]])
    >>> tensor([1, 2.5]).dtype, tensor([True]).dtype
    (course_lib.float32, course_lib.bool)
    >>> tensor([[1, 2], [3]])
    Traceback (most recent call last):
    ValueError: expected sequence of length 2 at dim 1 (got 1)

    Modes see the new tensor as the argument of ``lift_fresh`` (``aten.lift_fresh``), a constant.
    """
    _check_pin_memory(pin_memory)
    t = _tensor(data, dtype, device)
    if t._storage.data is not None:
        t = _dispatch(_OPS["lift_fresh"], (t,))
    return _check_requires_grad(t, requires_grad)


def _tensor(data, dtype, device, _caller: str = "torch.tensor", _stacklevel: int = 3):
    """``tensor(data)`` before modes see it: shape inference, dtype inference, recursive store."""
    dtype = _parse_dtype(dtype)
    dev = _parse_device(device)
    T = Tensor
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{_tp_name(data)}'")
    if isinstance(data, T):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
            "or sourceTensor.detach().clone().requires_grad_(True), rather than "
            f"{_caller}(sourceTensor).", UserWarning, stacklevel=_stacklevel)
        dtype = dtype or data.dtype
        if dev is None:
            dev = data.device.type
        if dev == "meta" or data.is_meta:
            if dev != "meta":
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            return _common.empty_meta(data._shape, dtype)
        with np.errstate(all="ignore"):
            arr = parallel_copy(data._np(), dtype.np)
        return _common.wrap(arr, dtype)
    if isinstance(data, np.ndarray):
        src = _check_numpy(data)
        dtype = dtype or src
        if dev == "meta":
            return _common.empty_meta(data.shape, dtype)
        with np.errstate(all="ignore"):
            arr = parallel_copy(data, dtype.np)
        return _common.wrap(arr, dtype)

    sizes = _compute_sizes(data)
    arr = _fast_path(data, sizes, dtype)
    if arr is not None:
        dtype = dtype or _dtype._BY_NP[arr.dtype]
    else:
        if dtype is None:
            dtype = _infer_scalar_type(data)
        if dev == "meta":
            return _common.empty_meta(tuple(sizes), dtype)
        n = _numel(sizes)
        buf = np.empty(n, dtype=dtype.np)
        if n > 0:
            _recursive_store(buf, 0, sizes, list(_common.contiguous_strides(tuple(sizes))), 0, dtype, data)
        arr = buf.reshape(sizes)
    if dev == "meta":
        return _common.empty_meta(tuple(sizes), dtype)
    return _common.wrap(arr, dtype)


def as_tensor(data, dtype: _dtype.dtype | None = None, device=None):
    """Like ``tensor`` but shares memory when it can: a tensor of the right dtype is
    returned as is, a numpy array becomes a tensor over the same memory."""
    dtype = _parse_dtype(dtype, "as_tensor")
    dev = _parse_device(device)
    T = Tensor
    if isinstance(data, T):
        if (dtype is None or dtype is data.dtype) and (dev is None or dev == data.device.type):
            return data
        return _convert(data, dtype or data.dtype, dev or data.device.type)
    if isinstance(data, np.ndarray) and dev != "meta":
        t = from_numpy(data)
        if dtype is None or dtype is t.dtype:
            return t
        return _convert(t, dtype, "cpu")
    return tensor(data, dtype=dtype, device=dev)


def _convert(t, dtype: _dtype.dtype, dev: str):
    """A copy of ``t`` with another dtype and/or device (a tiny ``Tensor.to``)."""
    if dev == "meta" or t.is_meta:
        return _common.empty_meta(t._shape, dtype)
    with np.errstate(all="ignore"):
        return _common.wrap(np.array(t._np(), dtype=dtype.np), dtype)


_warned_readonly = [False]


def from_numpy(ndarray: np.ndarray):
    """A tensor sharing memory with a numpy array (writes show through both ways).

    The strides are the array's strides in elements; the storage spans the
    array's memory from its first element to its last, as in PyTorch.
    Negative strides are refused (a tensor's strides are never negative).
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {_tp_name(ndarray)})")
    dtype = _check_numpy(ndarray)
    isz = ndarray.itemsize
    if any(s % isz for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    if not ndarray.flags.writeable and not _warned_readonly[0]:
        _warned_readonly[0] = True
        warnings.warn(
            "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
            "This means writing to this tensor will result in undefined behavior. You may want to copy "
            "the array to protect its data or make it writable before converting it to a tensor. This "
            "type of warning will be suppressed for the rest of this program.", UserWarning, stacklevel=2)
    shape = ndarray.shape
    strides = tuple(s // isz for s in ndarray.strides)
    if 0 in shape:
        extent = 0
    else:
        extent = 1 + builtins.sum((n - 1) * s for n, s in zip(shape, strides))
    flat = _np_as_strided(ndarray, shape=(extent,), strides=(isz,), writeable=ndarray.flags.writeable)
    storage = Storage(flat, dtype, owner=ndarray)
    t = Tensor._make(storage, 0, shape, strides, dtype)
    return _dispatch(_OPS["lift_fresh"], (t,))   # what a mode sees of it, as in PyTorch


def _scalar_tensor_kernel(s, dtype=None, device=None):
    """The ``scalar_tensor`` op: a 0-d tensor holding ``s``."""
    dtype = dtype or _dtype.get_default_dtype()
    return _new((), dtype, device, _checked_fill(s, dtype))


def scalar_tensor(s, *, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False):
    """A 0-d tensor holding ``s`` (default float dtype unless ``dtype`` is given)."""
    T = Tensor
    if isinstance(s, T):
        s = s.item()
    if not isinstance(s, (builtins.int, builtins.float, np.number, np.bool_)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {_tp_name(s)}")
    _check_pin_memory(pin_memory)
    t = _dispatch(_OPS["scalar_tensor"], (s, _parse_dtype(dtype, "scalar_tensor"), _parse_device(device)))
    return _check_requires_grad(t, requires_grad)


# ---------------------------------------------------------------------------
# factories: each is an op (kind "factory") whose kernel makes the tensor, so that dispatch modes,
# make_fx and meta tensors see it (``aten.zeros``).  The Python function parses the arguments,
# calls the dispatcher, then applies ``requires_grad`` and ``out=`` (PyTorch's binding does the same:
# ``requires_grad`` is not part of the op's schema).
# ---------------------------------------------------------------------------
def _check_pin_memory(pin_memory) -> None:
    """``pin_memory=True`` needs an accelerator; course_lib, like a CPU-only PyTorch, has none."""
    if pin_memory:
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                           "allocator is available on this system.")


def _with_out(out, fname: str, op, args: tuple, dtype, dev, requires_grad: bool, warn: str | None = None,
              autograd_name: str | None = None, inputs: tuple = ()):
    """``fname(..., out=out)``: run ``op`` with ``out``'s dtype and device, write the result into ``out``."""
    check_out(out, fname, autograd_name or f"aten::{fname}", inputs)
    dtype, dev = check_out_dtype(out, dtype, dev)
    r = _dispatch(op, args + (dtype, dev))
    write_out(out, r, warn)
    return _check_requires_grad(out, requires_grad)


def _zeros_kernel(size, dtype=None, device=None):
    """The ``zeros`` op."""
    _check_sizes(size, "zeros")
    return _new(tuple(size), dtype or _dtype.get_default_dtype(), device, 0)


def _ones_kernel(size, dtype=None, device=None):
    """The ``ones`` op."""
    _check_sizes(size)
    return _new(tuple(size), dtype or _dtype.get_default_dtype(), device, 1)


def _empty_kernel(size, dtype=None, device=None):
    """The ``empty`` op."""
    _check_sizes(size)
    return _new(tuple(size), dtype or _dtype.get_default_dtype(), device, None)


def zeros(*size, out=None, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
          pin_memory: bool = False):
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    shape = _parse_size(size, "zeros")
    dtype, dev = _parse_dtype(dtype, "zeros"), _parse_device(device)
    _check_pin_memory(pin_memory)
    if out is not None:
        return _with_out(out, "zeros", _OPS["zeros"], (shape,), dtype, dev, requires_grad)
    return _check_requires_grad(_dispatch(_OPS["zeros"], (shape, dtype, dev)), requires_grad)


def ones(*size, out=None, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
         pin_memory: bool = False):
    """A tensor of ones: ``ones(2, 3)`` or ``ones((2, 3))``."""
    shape = _parse_size(size, "ones")
    dtype, dev = _parse_dtype(dtype, "ones"), _parse_device(device)
    _check_pin_memory(pin_memory)
    if out is not None:
        return _with_out(out, "ones", _OPS["ones"], (shape,), dtype, dev, requires_grad)
    return _check_requires_grad(_dispatch(_OPS["ones"], (shape, dtype, dev)), requires_grad)


def empty(*size, out=None, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
          pin_memory: bool = False):
    """An uninitialised tensor (whatever the memory held): ``empty(2, 3)``.

    With ``out=``, ``out`` is resized to ``size`` (its values stay what they were)."""
    shape = _parse_size(size, "empty")
    dtype, dev = _parse_dtype(dtype, "empty"), _parse_device(device)
    _check_pin_memory(pin_memory)
    if out is not None:
        check_out(out, "empty", "aten::empty")
        check_out_dtype(out, dtype, dev)
        _check_sizes(shape)
        resize_output(out, shape)
        return _check_requires_grad(out, requires_grad)
    return _check_requires_grad(_dispatch(_OPS["empty"], (shape, dtype, dev)), requires_grad)


def _checked_fill(value, dtype: _dtype.dtype):
    """A fill value converted to ``dtype`` with PyTorch's overflow check (``Scalar.to<T>()``)."""
    T = Tensor
    if isinstance(value, T):
        value = value.item()
    cat = dtype.category
    msg = f"value cannot be converted to type {_dtype.c_type_name(dtype, 'checked')} without overflow"
    if cat == _dtype._BOOL:
        return builtins.bool(value)
    if isinstance(value, (builtins.bool, np.bool_)):
        return builtins.int(value)
    if isinstance(value, (builtins.int, np.integer)):
        v = builtins.int(value)
        if v < _INT64_MIN or v > _INT64_MAX:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        if cat == _dtype._INT:
            if dtype is not _dtype.int64 and _int_overflows(v, dtype):
                raise RuntimeError(msg)
            return _wrap_int(v, dtype)
        value = builtins.float(v)
    f = builtins.float(value)
    if cat == _dtype._INT:
        if _float_overflows(f, dtype):
            raise RuntimeError(msg)
        return _wrap_int(builtins.int(f), dtype)
    if dtype is not _dtype.float64 and math.isfinite(f) and abs(f) > np.finfo(dtype.np).max:
        raise RuntimeError(msg)
    return f


def _full_kernel(size, fill_value, dtype=None, device=None):
    """The ``full`` op: ``dtype`` None follows the value (bool, int64 or the default float dtype)."""
    _check_sizes(size)
    if dtype is None:
        v = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
        dtype = _dtype.scalar_dtype(v)
    return _new(tuple(size), dtype, device, _checked_fill(fill_value, dtype))


def full(size, fill_value, *, out=None, dtype: _dtype.dtype | None = None, device=None,
         requires_grad: bool = False, pin_memory: bool = False):
    """A tensor filled with ``fill_value``; its dtype follows the value like PyTorch
    (bool -> bool, int -> int64, float -> the default float dtype)."""
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {_tp_name(size)}")
    shape = _parse_size((size,), "full")
    dtype, dev = _parse_dtype(dtype, "full"), _parse_device(device)
    _check_pin_memory(pin_memory)
    if out is not None:
        return _with_out(out, "full", _OPS["full"], (shape, fill_value), dtype, dev, requires_grad)
    return _check_requires_grad(_dispatch(_OPS["full"], (shape, fill_value, dtype, dev)), requires_grad)


def _empty_strided_kernel(size, stride, dtype=None, device=None):
    """The ``empty_strided`` op."""
    shape, stride = tuple(size), tuple(stride)
    if len(shape) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    _check_sizes(shape)
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(stride)}")
    dtype = dtype or _dtype.get_default_dtype()
    n = 0 if 0 in shape else 1 + builtins.sum((s - 1) * st for s, st in zip(shape, stride))
    storage = Storage.empty(n, dtype, device or "cpu")
    return Tensor._make(storage, 0, shape, stride, dtype)


def empty_strided(size, stride, *, dtype: _dtype.dtype | None = None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False):
    """An uninitialised tensor with the given strides; the storage is just big enough."""
    shape = _parse_size((size,), "empty_strided")
    stride = _parse_size((stride,), "empty_strided")
    dtype, dev = _parse_dtype(dtype, "empty_strided"), _parse_device(device)
    _check_pin_memory(pin_memory)
    return _check_requires_grad(_dispatch(_OPS["empty_strided"], (shape, stride, dtype, dev)), requires_grad)


def _scalar_value(x):
    T = Tensor
    if isinstance(x, T):
        return x.item()
    if isinstance(x, np.generic):
        return x.item()
    return x


def _fmt_scalar(x) -> str:
    """How c10 prints a Scalar in messages: ints as ints, floats in %g style."""
    if isinstance(x, builtins.float):
        if math.isnan(x) or math.isinf(x):
            return repr(x)
        return f"{x:g}"
    return str(x)


def arange(start=0, end=None, step=1, *, out=None, dtype: _dtype.dtype | None = None, device=None,
           requires_grad: bool = False, pin_memory: bool = False):
    """Values from ``start`` up to (not including) ``end`` spaced by ``step``.

    int64 when every argument is an integer, else the default float dtype. The
    length is ``ceil((end - start) / step)``; element ``i`` is ``start + i * step``
    computed in double precision (int64 arithmetic for int64 results).
    """
    if end is None:
        start, end = 0, start
    start, end, step = _scalar_value(start), _scalar_value(end), _scalar_value(step)
    dtype, dev = _parse_dtype(dtype, "arange"), _parse_device(device)
    _check_pin_memory(pin_memory)
    op = _OPS["arange"]
    if out is None:
        return _check_requires_grad(_dispatch(op, (start, end, step, dtype, dev)), requires_grad)
    check_out(out, "arange", "aten::arange")
    dtype, dev = check_out_dtype(out, dtype, dev)
    r = _dispatch(op, (start, end, step, dtype, dev))
    n, have = r._shape[0], out.numel()
    warn = None
    if have != n:
        warn = (f"The number of elements in the out tensor of shape {list(out._shape)} is {have} which does not "
                f"match the computed number of elements {n}. Note that this may occur as a result of rounding "
                f"error. The out tensor will be resized to a tensor of shape ({n},).")
    write_out(out, r, warn)
    return _check_requires_grad(out, requires_grad)


def _arange_kernel(start, end, step=1, dtype=None, device=None):
    """The ``arange`` op (``arange(end)`` arrives as ``arange(0, end, 1)``)."""
    if dtype is None:
        any_float = any(isinstance(v, builtins.float) for v in (start, end, step))
        dtype = _dtype.get_default_dtype() if any_float else _dtype.int64
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    fs, fe, fstep = builtins.float(start), builtins.float(end), builtins.float(step)
    if fstep == 0 or fstep != fstep:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(fs) and math.isfinite(fe)):
        raise RuntimeError(f"unsupported range: {_fmt_scalar(start)} -> {_fmt_scalar(end)}")
    if not ((fstep > 0 and fe >= fs) or (fstep < 0 and fe <= fs)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is _dtype.int64:
        # PyTorch converts the three values to int64 first (truncating floats).
        xs, xe, xst = builtins.int(start), builtins.int(end), builtins.int(step)
        if xst == 0:
            raise ValueError("step must be nonzero")
        sgn = (xst > 0) - (xst < 0)
        q = xe - xs + xst - sgn
        n = abs(q) // abs(xst) * (1 if (q >= 0) == (xst > 0) else -1)   # C division truncates
        n = max(n, 0)
        values = None if device == "meta" else xs + np.arange(n, dtype=np.int64) * np.int64(xst)
    else:
        size_d = math.ceil((fe - fs) / fstep)
        if size_d < 0 or size_d > _INT64_MAX:
            raise RuntimeError("invalid size, possible overflow?")
        n = builtins.int(size_d)
        values = None
        if device != "meta":
            # PyTorch's vectorised kernel can differ from start + i * step in the last bit.
            if dtype.category == _dtype._FLOAT:
                acc = np.float32 if dtype is _dtype.float16 else np.float64
                values = acc(fs) + np.arange(n, dtype=acc) * acc(fstep)
            else:
                xs, xst = builtins.int(start), builtins.int(step)
                values = xs + np.arange(n, dtype=np.int64) * np.int64(xst)
    if device == "meta":
        return _common.empty_meta((n,), dtype)
    with np.errstate(all="ignore"):
        return _common.wrap(values.astype(dtype.np), dtype)


def _fma(a, b, c):
    """``a * b + c`` rounded once, as a fused multiply-add (vectorised, float64).

    The product's rounding error is recovered exactly (Dekker's two-product),
    the sum's by two-sum, and both are added back.  PyTorch's compiled kernels
    contract ``start + step * i`` into an FMA, so this reproduces their last bit.
    """
    a, b, c = np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64)
    p = a * b
    split = 134217729.0                      # 2**27 + 1
    ta, tb = split * a, split * b
    ah, bh = ta - (ta - a), tb - (tb - b)
    al, bl = a - ah, b - bh
    ep = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    es = (p - (s - bb)) + (c - bb)
    return s + (ep + es)


def linspace(start, end, steps: int, *, out=None, dtype: _dtype.dtype | None = None, device=None,
             requires_grad: bool = False, pin_memory: bool = False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    As in PyTorch's kernel, ``step = (end - start) / (steps - 1)``; the first half
    counts up from ``start`` (``start + step * i``) and the second half counts down
    from ``end`` (``end - step * (steps - 1 - i)``), so both ends are exact.  The
    arithmetic is PyTorch's too: float32 with a fused multiply-add, float16 in
    half precision, integer results in double precision and then truncated.
    """
    if isinstance(steps, builtins.float) or not isinstance(steps, (builtins.int, np.integer)):
        raise TypeError(f"linspace(): argument 'steps' (position 3) must be int, not {_tp_name(steps)}")
    steps = builtins.int(steps)
    start, end = _scalar_value(start), _scalar_value(end)
    dtype, dev = _parse_dtype(dtype, "linspace"), _parse_device(device)
    _check_pin_memory(pin_memory)
    if out is not None:
        return _with_out(out, "linspace", _OPS["linspace"], (start, end, steps), dtype, dev, requires_grad)
    return _check_requires_grad(_dispatch(_OPS["linspace"], (start, end, steps, dtype, dev)), requires_grad)


def _linspace_kernel(start, end, steps, dtype=None, device=None):
    """The ``linspace`` op."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype or _dtype.get_default_dtype()
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    if device == "meta":
        return _common.empty_meta((steps,), dtype)
    idx = np.arange(steps)
    up = idx < max(steps // 2, 1)          # a single step is ``start``
    down_n = (steps - 1 - idx)
    with np.errstate(all="ignore"):
        if dtype is _dtype.float16:
            h, f = np.float16, np.float32
            s, e = h(start), h(end)
            st = h(f(h(f(e) - f(s))) / f(h(steps - 1))) if steps > 1 else h(0)
            p_up = (f(st) * idx.astype(h).astype(f)).astype(h).astype(f)
            p_dn = (f(st) * down_n.astype(h).astype(f)).astype(h).astype(f)
            arr = np.where(up, f(s) + p_up, f(e) - p_dn).astype(h)
        else:
            if dtype.category == _dtype._FLOAT:
                s, e = dtype.np.type(start), dtype.np.type(end)
                st = (e - s) / dtype.np.type(steps - 1) if steps > 1 else dtype.np.type(0)
            else:
                s = builtins.float(_wrap_int(builtins.int(start), dtype))
                e = builtins.float(_wrap_int(builtins.int(end), dtype))
                st = (e - s) / (steps - 1) if steps > 1 else 0.0
            vals = np.where(up, _fma(st, idx, s), _fma(-builtins.float(st), down_n, e))
            if dtype.category != _dtype._FLOAT:
                vals = np.trunc(vals)
            arr = vals.astype(dtype.np)
    return _common.wrap(arr, dtype)


def eye(n: int, m: int | None = None, *, out=None, dtype: _dtype.dtype | None = None, device=None,
        requires_grad: bool = False, pin_memory: bool = False):
    """The ``n x m`` identity matrix (``m`` defaults to ``n``)."""
    for name, v, pos in (("n", n, 1), ("m", m, 2)):
        if v is not None and (isinstance(v, builtins.float) or not isinstance(v, (builtins.int, np.integer))):
            raise TypeError(f"eye(): argument '{name}' (position {pos}) must be int, not {_tp_name(v)}")
    dtype, dev = _parse_dtype(dtype, "eye"), _parse_device(device)
    _check_pin_memory(pin_memory)
    if out is not None:
        return _with_out(out, "eye", _OPS["eye"], (n, m), dtype, dev, requires_grad)
    return _check_requires_grad(_dispatch(_OPS["eye"], (n, m, dtype, dev)), requires_grad)


def _eye_kernel(n, m=None, dtype=None, device=None):
    """The ``eye`` op."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is None:
        m = n
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dtype = dtype or _dtype.get_default_dtype()
    if device == "meta":
        return _common.empty_meta((n, m), dtype)
    return _common.wrap(np.eye(n, m, dtype=dtype.np), dtype)


# ---------------------------------------------------------------------------
# *_like
# ---------------------------------------------------------------------------
def _is_non_overlapping_and_dense(shape, stride) -> bool:
    """c10's ``compute_non_overlapping_and_dense``: some permutation of the dims is contiguous."""
    if len(shape) == 1:
        return shape[0] < 2 or stride[0] == 1
    perm = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, stride[d] if shape[d] >= 2 else 0))
    require = 1
    for d in perm:
        if shape[d] < 2:
            return True
        if stride[d] != require:
            return False
        require *= shape[d]
    return True


def _infer_dense_strides(shape, stride) -> tuple:
    """ATen's ``infer_dense_strides``: contiguous strides in the order of the input's strides."""
    ndim = len(shape)
    if ndim == 0:
        return ()
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(d0, d1):
        s0, s1 = stride[d0], stride[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, ndim):
        dim1 = i
        for j in range(1, i + 1):
            dim0 = i - j
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    out = [0] * ndim
    cur = 1
    for d in perm:
        out[d] = cur
        if shape[d] > 1:
            cur *= shape[d]
    return tuple(out)


def _like_strides(t) -> tuple:
    """Strides of ``empty_like(t)`` (memory_format=preserve): keep t's layout when dense."""
    shape, stride = t._shape, t._stride
    if t.is_contiguous() or _is_non_overlapping_and_dense(shape, stride):
        return stride
    return _infer_dense_strides(shape, stride)


# Memory formats are strings in course_lib (PyTorch has torch.contiguous_format, ... objects).
_MEMORY_FORMATS = ("preserve_format", "contiguous_format", "channels_last", "channels_last_3d")


def _format_strides(t, memory_format, fname: str) -> tuple:
    """The strides of a ``*_like(t, memory_format=...)`` result."""
    if memory_format is None or memory_format == "preserve_format":
        return _like_strides(t)
    shape = t._shape
    if memory_format == "contiguous_format":
        return _common.contiguous_strides(shape)
    if memory_format in ("channels_last", "channels_last_3d"):
        rank = 4 if memory_format == "channels_last" else 5
        if len(shape) != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {memory_format} format")
        # N, C, (D,) H, W laid out as N, (D,) H, W, C
        order = (0,) + tuple(range(2, rank)) + (1,)
        stride = [0] * rank
        acc = 1
        for d in reversed(order):
            stride[d] = acc
            acc *= max(shape[d], 1)
        return tuple(stride)
    raise ValueError(f"{fname}(): memory_format must be one of {', '.join(_MEMORY_FORMATS)}, "
                     f"not {memory_format!r}")


def _empty_like_layout(t, dtype, device, memory_format=None, fname: str = "empty_like"):
    """An uninitialised tensor shaped like ``t`` with the strides ``memory_format`` asks for."""
    shape = t._shape
    stride = _format_strides(t, memory_format, fname)
    n = 0 if 0 in shape else 1 + builtins.sum((s - 1) * st for s, st in zip(shape, stride))
    return Tensor._make(Storage.empty(n, dtype, device), 0, shape, stride, dtype)


def _like_kernel(self, dtype, device, memory_format, fill, fname):
    r = _empty_like_layout(self, dtype or self.dtype, device or self._storage.device, memory_format, fname)
    if fill is not None and r._storage.data is not None:
        r._np()[...] = fill
    return r


def _zeros_like_kernel(self, dtype=None, device=None, memory_format=None):
    """The ``zeros_like`` op."""
    return _like_kernel(self, dtype, device, memory_format, 0, "zeros_like")


def _ones_like_kernel(self, dtype=None, device=None, memory_format=None):
    """The ``ones_like`` op."""
    return _like_kernel(self, dtype, device, memory_format, 1, "ones_like")


def _empty_like_kernel(self, dtype=None, device=None, memory_format=None):
    """The ``empty_like`` op."""
    return _like_kernel(self, dtype, device, memory_format, None, "empty_like")


def _full_like_kernel(self, fill_value, dtype=None, device=None, memory_format=None):
    """The ``full_like`` op."""
    fill = _checked_fill(fill_value, dtype or self.dtype)
    return _like_kernel(self, dtype, device, memory_format, fill, "full_like")


def _like_args(input, dtype, device, pin_memory, fname: str) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {_tp_name(input)}")
    _check_pin_memory(pin_memory)
    return _parse_dtype(dtype, fname), _parse_device(device)


def zeros_like(input, *, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
               memory_format=None, pin_memory: bool = False):
    """Zeros with ``input``'s shape, dtype, device (and layout, when it is dense)."""
    dtype, dev = _like_args(input, dtype, device, pin_memory, "zeros_like")
    return _check_requires_grad(_dispatch(_OPS["zeros_like"], (input, dtype, dev, memory_format)), requires_grad)


def ones_like(input, *, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
              memory_format=None, pin_memory: bool = False):
    """Ones with ``input``'s shape, dtype and device."""
    dtype, dev = _like_args(input, dtype, device, pin_memory, "ones_like")
    return _check_requires_grad(_dispatch(_OPS["ones_like"], (input, dtype, dev, memory_format)), requires_grad)


def empty_like(input, *, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
               memory_format=None, pin_memory: bool = False):
    """Uninitialised, with ``input``'s shape, dtype and device."""
    dtype, dev = _like_args(input, dtype, device, pin_memory, "empty_like")
    return _check_requires_grad(_dispatch(_OPS["empty_like"], (input, dtype, dev, memory_format)), requires_grad)


def full_like(input, fill_value, *, dtype: _dtype.dtype | None = None, device=None,
              requires_grad: bool = False, memory_format=None, pin_memory: bool = False):
    """``fill_value`` everywhere, with ``input``'s shape, dtype and device."""
    dtype, dev = _like_args(input, dtype, device, pin_memory, "full_like")
    return _check_requires_grad(_dispatch(_OPS["full_like"], (input, fill_value, dtype, dev, memory_format)),
                                requires_grad)


def rand_like(input, *, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
              generator=None, memory_format=None, pin_memory: bool = False):
    """Uniform random numbers in [0, 1) with ``input``'s shape, dtype and device."""
    from ._random import rand_like as _f
    return _f(input, dtype=dtype, device=device, requires_grad=requires_grad, generator=generator,
              memory_format=memory_format, pin_memory=pin_memory)


def randn_like(input, *, dtype: _dtype.dtype | None = None, device=None, requires_grad: bool = False,
               generator=None, memory_format=None, pin_memory: bool = False):
    """Standard normal random numbers with ``input``'s shape, dtype and device."""
    from ._random import randn_like as _f
    return _f(input, dtype=dtype, device=device, requires_grad=requires_grad, generator=generator,
              memory_format=memory_format, pin_memory=pin_memory)


# ---------------------------------------------------------------------------
# the registry entries of the factories (aten's schemas without layout and pin_memory, which course_lib
# checks in the Python functions above)
# ---------------------------------------------------------------------------
_FACTORY_OPTIONS = "ScalarType? dtype=None, Device? device=None"
for _schema, _kernel in (
        (f"zeros(SymInt[] size, *, {_FACTORY_OPTIONS}) -> Tensor", _zeros_kernel),
        (f"ones(SymInt[] size, *, {_FACTORY_OPTIONS}) -> Tensor", _ones_kernel),
        (f"empty(SymInt[] size, *, {_FACTORY_OPTIONS}) -> Tensor", _empty_kernel),
        (f"full(SymInt[] size, Scalar fill_value, *, {_FACTORY_OPTIONS}) -> Tensor", _full_kernel),
        (f"empty_strided(SymInt[] size, SymInt[] stride, *, {_FACTORY_OPTIONS}) -> Tensor", _empty_strided_kernel),
        (f"scalar_tensor(Scalar s, *, {_FACTORY_OPTIONS}) -> Tensor", _scalar_tensor_kernel),
        (f"arange(Scalar start, Scalar end, Scalar step=1, *, {_FACTORY_OPTIONS}) -> Tensor", _arange_kernel),
        (f"linspace(Scalar start, Scalar end, int steps, *, {_FACTORY_OPTIONS}) -> Tensor", _linspace_kernel),
        (f"eye(SymInt n, SymInt? m=None, *, {_FACTORY_OPTIONS}) -> Tensor", _eye_kernel),
        (f"zeros_like(Tensor self, *, {_FACTORY_OPTIONS}, MemoryFormat? memory_format=None) -> Tensor",
         _zeros_like_kernel),
        (f"ones_like(Tensor self, *, {_FACTORY_OPTIONS}, MemoryFormat? memory_format=None) -> Tensor",
         _ones_like_kernel),
        (f"empty_like(Tensor self, *, {_FACTORY_OPTIONS}, MemoryFormat? memory_format=None) -> Tensor",
         _empty_like_kernel),
        (f"full_like(Tensor self, Scalar fill_value, *, {_FACTORY_OPTIONS}, MemoryFormat? memory_format=None) "
         f"-> Tensor", _full_like_kernel)):
    # The Python functions are written here by hand (argument parsing, requires_grad, out=); the kernel
    # reads the device argument, so it is the meta kernel too (PyTorch's BackendSelect picks by device).
    _register(_schema, variants=("function",), kind="factory", manual_binding=True)(_kernel)


# ---------------------------------------------------------------------------
# Tensor.new_zeros, new_ones, new_empty, new_full, new_empty_strided, new_tensor: factories whose dtype and
# device default to self's.  They are registry ops taking self (aten.new_zeros, ...), so modes see them.
# ---------------------------------------------------------------------------
def _new_like_self(fill, fname: str):
    def kernel(self, size, dtype=None, device=None):
        _check_sizes(size)
        return _new(tuple(size), dtype or self.dtype, device or self._storage.device, fill)
    kernel.__name__ = fname
    kernel.__doc__ = f"The ``{fname}`` op: ``{fname.split('_')[1]}`` with self's dtype and device by default."
    return kernel


def _new_full_kernel(self, size, fill_value, dtype=None, device=None):
    """The ``new_full`` op: ``full`` with self's dtype and device by default."""
    _check_sizes(size)
    dtype = dtype or self.dtype
    return _new(tuple(size), dtype, device or self._storage.device, _checked_fill(fill_value, dtype))


def _new_empty_strided_kernel(self, size, stride, dtype=None, device=None):
    """The ``new_empty_strided`` op: ``empty_strided`` with self's dtype and device by default."""
    return _empty_strided_kernel(size, stride, dtype or self.dtype, device or self._storage.device)


for _schema, _kernel in (
        (f"new_zeros(Tensor self, SymInt[] size, *, {_FACTORY_OPTIONS}) -> Tensor", _new_like_self(0, "new_zeros")),
        (f"new_ones(Tensor self, SymInt[] size, *, {_FACTORY_OPTIONS}) -> Tensor", _new_like_self(1, "new_ones")),
        (f"new_empty(Tensor self, SymInt[] size, *, {_FACTORY_OPTIONS}) -> Tensor",
         _new_like_self(None, "new_empty")),
        (f"new_full(Tensor self, SymInt[] size, Scalar fill_value, *, {_FACTORY_OPTIONS}) -> Tensor",
         _new_full_kernel),
        (f"new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, {_FACTORY_OPTIONS}) -> Tensor",
         _new_empty_strided_kernel)):
    _register(_schema, variants=("method",), kind="factory", manual_binding=True)(_kernel)


def new_factory(self, fname: str, size: tuple, extra: tuple, dtype, device, requires_grad: bool,
                pin_memory: bool):
    """``Tensor.new_zeros(size, ...)`` and friends: check the options, dispatch ``fname``'s op."""
    dtype, dev = _parse_dtype(dtype, fname), _parse_device(device)
    _check_pin_memory(pin_memory)
    op = _OPS[fname]
    return _check_requires_grad(_dispatch(op, (self, size) + extra + (dtype, dev)), requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False):
    """``Tensor.new_tensor(data)``: ``tensor(data)`` with self's dtype and device by default."""
    _check_pin_memory(pin_memory)
    dtype = _parse_dtype(dtype, "new_tensor") or self.dtype
    dev = _parse_device(device) or self._storage.device
    t = _tensor(data, dtype, dev, _caller="tensor.new_tensor", _stacklevel=4)
    if t._storage.data is not None:
        t = _dispatch(_OPS["lift_fresh"], (t,))
    return _check_requires_grad(t, requires_grad)


def _lift_fresh(self):
    """``tensor(data)``'s result, shown to modes: the tensor itself (PyTorch's ``aten.lift_fresh``)."""
    return self


def _lift_fresh_copy(self):
    """A copy of a constant tensor: what ``make_fx`` records for ``lift_fresh``, so that the graph never
    hands out (and lets a caller modify) the constant it holds."""
    if self._storage.data is None:
        return _common.empty_meta(self._shape, self.dtype)
    return _common.wrap(self._np().copy(), self.dtype)


_register("lift_fresh(Tensor(a) self) -> Tensor(a)", variants=(), kind="factory")(_lift_fresh)
_register("lift_fresh_copy(Tensor self) -> Tensor", variants=(), kind="factory")(_lift_fresh_copy)


# ---------------------------------------------------------------------------
# pickling and deepcopy support (used by Tensor.__reduce_ex__ / __deepcopy__)
# ---------------------------------------------------------------------------
def _rebuild_from_numpy(arr: np.ndarray, requires_grad: bool = False):
    """Unpickle a tensor from the numpy copy ``Tensor.__reduce_ex__`` stored."""
    arr = np.array(arr, order="C")
    t = _common.wrap(arr, _dtype.from_numpy_dtype(arr.dtype))
    t._requires_grad = builtins.bool(requires_grad)
    return t


def _clone_for_deepcopy(t, memo: dict):
    """``copy.deepcopy`` of a tensor: new storage (shared between tensors that shared
    one, through ``memo``), same layout, same ``requires_grad``, a deep-copied ``.grad``.
    The result has ``type(t)``, so a Parameter stays a Parameter."""
    if t.grad_fn is not None:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
            "the moment.  If you were attempting to deepcopy a module, this may be because of a "
            "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
    st = t._storage
    new_st = memo.get(id(st))
    if new_st is None:
        if st.data is None:
            new_st = Storage(None, st.dtype, st.device, size=st.size())
        else:
            new_st = Storage(st.data.copy(), st.dtype, st.device)
        memo[id(st)] = new_st
        memo.setdefault(id(memo), []).append(st)   # keep the original alive, as copy.deepcopy does
    r = type(t)._make(new_st, t._offset, t._shape, t._stride, t.dtype)
    r._requires_grad = t._requires_grad
    r._is_param = t._is_param
    if t._grad is not None:
        r._grad = _copy.deepcopy(t._grad, memo)
    d = getattr(t, "__dict__", None)
    if d:
        r.__dict__.update(_copy.deepcopy(d, memo))
    return r
