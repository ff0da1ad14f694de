"""Shared pieces of the kernels: wrapping numpy results, broadcasting, promotion, dims.

In PyTorch: ``aten/src/ATen/ExpandUtils.h`` (broadcasting),
``aten/src/ATen/native/TypeProperties.cpp`` (``result_type``),
``c10/core/WrapDimMinimal.h`` (negative dims).
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .. import _storage as _storage_mod
from .._storage import Storage
from .._tensor import Tensor
from .._tensor_base import _STRIDES, TensorBase, contiguous_strides, wrap_dim  # noqa: F401 (kernels import these here)


def wrap(arr, dtype: _dtype.dtype | None = None):
    """Make a new contiguous tensor that owns ``arr`` (a numpy result).

    The array becomes the tensor's storage without a copy when it is already
    C-contiguous and of the right dtype.  This runs once per op, so it is kept
    to a few attribute reads (see ``bench/bench_core.py``).

    Deliberate difference: results are always C-contiguous; PyTorch's
    TensorIterator gives pointwise results the memory layout of their inputs
    (``x.t().exp()`` has the strides of ``x.t()`` there).
    """
    if type(arr) is not _ndarray:
        arr = np.asarray(arr)
    if dtype is None:
        dtype = _dtype._BY_NP[arr.dtype]
    else:
        adt = arr.dtype
        if adt is not dtype.np and adt != dtype.np:
            arr = arr.astype(dtype.np)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    shape = arr.shape
    # Storage(flat, dtype) and Tensor._make(...) written out: this runs for every op result, and the
    # two calls cost as much as the rest of the function (the accounting is Storage.__init__'s).
    flat = arr if len(shape) == 1 else arr.ravel()
    st = _new_object(Storage)
    st.data = flat
    st.dtype = dtype
    st.device = "cpu"
    st._owner = None
    st._size = n = flat.shape[0]
    st._nbytes = nb = n * dtype.itemsize
    ms = _mem_state
    ms[0] += nb
    ms[2] += 1
    if ms[0] > ms[1]:
        ms[1] = ms[0]
    t = _new_object(Tensor)
    t._storage = st
    t._offset = 0
    t._shape = shape
    if len(shape) == 1:
        t._stride = (1,)
    else:
        strides = _STRIDES.get(shape)
        t._stride = strides if strides is not None else contiguous_strides(shape)
    t.dtype = dtype
    t._np_cache = arr
    t._requires_grad = False
    return t


_ndarray = np.ndarray
_new_object = object.__new__
_mem_state = _storage_mod._mem_state


def empty_meta(shape, dtype: _dtype.dtype):
    """A tensor on the meta device: shape and dtype, no data."""
    shape = tuple(shape)
    n = 1
    for s in shape:
        n *= s
    return Tensor._make(Storage(None, dtype, "meta", size=n), 0, shape, contiguous_strides(shape), dtype)


# ---------------------------------------------------------------------------
# broadcasting
# ---------------------------------------------------------------------------
def broadcast_shapes(*shapes) -> tuple:
    """The shape all of ``shapes`` broadcast to, or PyTorch's error.

    Shapes are aligned on the right; each pair of sizes must be equal or one of them 1.
    Like PyTorch's ``infer_size`` (``aten/src/ATen/ExpandUtils.cpp``) the shapes are
    folded left to right and each pair is checked from the *last* dim backwards, so
    the error names the right-most mismatching dim ("tensor a" is the shape so far).
    """
    out = tuple(shapes[0]) if shapes else ()
    for s in shapes[1:]:
        if s != out:
            out = _infer_size(out, tuple(s))
    return out


def _infer_size(a: tuple, b: tuple) -> tuple:
    na, nb = len(a), len(b)
    ndim = na if na > nb else nb
    out = [0] * ndim
    for i in range(ndim - 1, -1, -1):
        off = ndim - 1 - i
        da, db = na - 1 - off, nb - 1 - off
        sa = a[da] if da >= 0 else 1
        sb = b[db] if db >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) "
                f"at non-singleton dimension {i}")
        out[i] = sb if sa == 1 else sa
    return tuple(out)


def broadcast_two(a: tuple, b: tuple) -> tuple:
    if a == b:
        return a
    return _infer_size(a, b)


# ---------------------------------------------------------------------------
# type promotion
# ---------------------------------------------------------------------------
def _combine(higher, lower):
    # c10's combine_categories: a higher tier wins unless the lower tier is of a higher category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _dtype._FLOAT:
        return higher
    if higher is _dtype.bool_ or lower.category == _dtype._FLOAT:
        return _dtype.promote_types(higher, lower)
    return higher


def result_type(*args) -> _dtype.dtype:
    """PyTorch's ``result_type``: tensors with dims > 0-d tensors > Python scalars.

    Within a tier the dtypes are promoted; a lower tier only matters when it is of a
    higher category (bool < integer < float).
    """
    dim = zero = wrapped = None
    T = TensorBase
    for a in args:
        if isinstance(a, T):
            d = a.dtype
            if a._shape:
                dim = d if dim is None else _dtype.promote_types(dim, d)
            else:
                zero = d if zero is None else _dtype.promote_types(zero, d)
        elif a is None:
            continue
        else:
            d = _dtype.scalar_dtype(a)
            wrapped = d if wrapped is None else _dtype.promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))


def binary_result_type(a, b) -> _dtype.dtype:
    """``result_type(a, b)`` with a fast path for two tensors of one dtype."""
    T = TensorBase
    if isinstance(a, T) and isinstance(b, T) and a.dtype is b.dtype:
        return a.dtype
    return result_type(a, b)


# ---------------------------------------------------------------------------
# dims
# ---------------------------------------------------------------------------
def wrap_dims(dims, ndim: int) -> tuple:
    if isinstance(dims, int):
        return (wrap_dim(dims, ndim),)
    out = tuple([wrap_dim(d, ndim) for d in dims])
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out[0]} appears multiple times in the list of dims")
    return out


def to_np_scalar(value, dtype: _dtype.dtype):
    """A Python scalar as a numpy 0-d array of ``dtype`` (integers wrap around like C)."""
    return np.asarray(value).astype(dtype.np)




def checked_scalar(value, dtype: _dtype.dtype):
    """A Python number converted to ``dtype`` the way PyTorch converts a ``Scalar`` argument
    (``c10::checked_convert``): an error if it overflows the dtype, except that negative
    numbers may wrap into unsigned types (-1 -> 255) and infinities fit floating types.

    Used by fill_, masked_fill, where, clamp, pow's exponent and ``alpha``; arithmetic
    with a Python number wraps instead (``int8 + 1000``), as in PyTorch.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if dtype is _dtype.bool_ or value is True or value is False:
        return np.asarray(value).astype(dtype.np)
    if dtype.category == _dtype._FLOAT:
        if dtype is not _dtype.float64 and isinstance(value, (int, float)) and math.isfinite(value) \
                and abs(value) > float(np.finfo(dtype.np).max):
            raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dtype, 'checked')} "
                               "without overflow")
        return np.asarray(value, dtype=np.float64).astype(dtype.np)
    info = np.iinfo(dtype.np)
    if isinstance(value, float) and not math.isfinite(value):
        bad = True
    elif info.min == 0:
        bad = value > info.max or (value < 0 and -value > info.max)
    else:
        bad = value < info.min or value > info.max
    if bad:
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dtype, 'checked')} without overflow")
    return np.asarray(int(value)).astype(dtype.np)


def type_name(t) -> str:
    """'torch.FloatTensor'-style names PyTorch uses in messages (here 'course_lib.FloatTensor')."""
    return f"torch.{t.dtype._tensor_name}Tensor"


def like_sequence(a: tuple | list, items) -> tuple | list:
    """``items`` in a container of ``a``'s type: a list, a tuple, or a named tuple (``return_types.max``,
    whose constructor takes the fields one by one)."""
    if hasattr(a, "_fields"):
        return type(a)(*items)
    return type(a)(items)
