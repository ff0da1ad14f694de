"""``x[index]`` and ``x[index] = value``: Python's indexing turned into op calls.

In PyTorch: ``torch/csrc/autograd/python_variable_indexing.cpp`` and ``applySlicing`` in
``aten/src/ATen/TensorIndexing.h``.  Ints, slices, ``None`` and ``...`` become view ops
(``select``, ``slice``, ``unsqueeze``); tensors, lists and bools become advanced indices,
applied by ``index`` / ``index_put_`` (``advanced_indexing.py``).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import wrap
from .registry import OPS


def _dispatch(name, *args):
    from .dispatcher import dispatch
    return dispatch(OPS[name], args)


def _as_index_tensor(obj):
    """A list (or numpy array) used as an index, as a tensor: bools stay a mask, everything else
    becomes int64 (``x[[1.]]`` is ``x[[1]]`` in PyTorch; ``x[[]]`` picks nothing)."""
    from .._creation import tensor
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype == np.bool_:
            return wrap(np.array(obj), _dtype.bool_)
        return wrap(np.asarray(obj).astype(np.int64), _dtype.int64)
    if isinstance(obj, str):
        raise TypeError("new(): invalid data type 'str'")
    t = tensor(obj)
    if t.dtype is not _dtype.bool_ and t.dtype is not _dtype.int64:
        t = wrap(t._np().astype(np.int64), _dtype.int64)
    return t


def _treat_sequence_as_tuple(index) -> bool:
    """NumPy's old rule, kept by PyTorch: a short list holding a sequence, slice, ``...``, None or
    tensor is read as a tuple of indices (``x[[0, slice(None)]]`` is ``x[0, :]``)."""
    if isinstance(index, tuple):
        return True
    if isinstance(index, Tensor) or not isinstance(index, (list, range, str)):
        return False
    if len(index) >= 32:
        return False
    for obj in index:
        if isinstance(obj, (Tensor, list, tuple, range, str, slice, np.ndarray)) or obj is Ellipsis or obj is None:
            return True
    return False


def _specified_dims(index: tuple) -> int:
    n = 0
    for it in index:
        if it is None or it is Ellipsis or it is True or it is False:
            continue
        if isinstance(it, Tensor) and (it.dtype is _dtype.bool_ or it.dtype is _dtype.uint8):
            n += len(it._shape)
        else:
            n += 1
    return n


def _bool_index(value: bool):
    """``x[True]`` / ``x[False]``: an index tensor over a new size-1 dim (advanced indexing)."""
    return wrap(np.zeros(1 if value else 0, np.int64), _dtype.int64)


def _int_index(it):
    """The Python int of an integer index (int, numpy integer or 0-d int64/int32 tensor), else None."""
    if isinstance(it, (int, np.integer)) and not isinstance(it, (bool, np.bool_)):
        return int(it)
    if isinstance(it, Tensor) and not it._shape and (it.dtype is _dtype.int64 or it.dtype is _dtype.int32):
        return int(it.item())
    return None


def _select(result, dim: int, i: int):
    if not result._shape:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                         "in C++ to convert a 0-dim tensor to a number")
    n = result._shape[dim]
    if i < -n or i >= n:
        raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
    return _dispatch("select", result, dim, i)


def _slice(result, dim: int, it):
    if not result._shape:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    step = 1 if it.step is None else int(it.step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = None if it.start is None else int(it.start)
    stop = None if it.stop is None else int(it.stop)
    if start in (None, 0) and step == 1 and (stop is None or stop >= result._shape[dim]):
        return result
    return _dispatch("slice", result, dim, start, stop, step)


def apply_slicing(self, index):
    """``x[index]`` as PyTorch does it (``torch/csrc/autograd/python_variable_indexing.cpp``):
    ints, slices, ``None`` and ``...`` become view ops (select, slice, unsqueeze); tensors,
    lists and Python bools become advanced indices, applied afterwards by ``index`` (a copy).

    Returns (view, list of advanced indices per dim, or None when there are none).
    """
    if _treat_sequence_as_tuple(index):
        if not isinstance(index, tuple):
            warnings.warn(
                "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
                "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
                "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result",
                UserWarning, stacklevel=3)
        index = tuple(index)
    else:
        index = (index,)
    nd = len(self._shape)
    specified = _specified_dims(index)
    if specified > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    result = self
    dim = 0
    advanced: list = []

    def add_index(t):
        while len(advanced) < dim:
            advanced.append(None)
        advanced.append(t)

    for it in index:
        i = _int_index(it)
        if i is not None:
            result = _select(result, dim, i)
        elif isinstance(it, slice):
            result = _slice(result, dim, it)
            dim += 1
        elif it is Ellipsis:
            dim += nd - specified
        elif it is None:
            result = _dispatch("unsqueeze", result, dim)
            dim += 1
        elif it is True or it is False:
            result = _dispatch("unsqueeze", result, dim)
            add_index(_bool_index(it))
            dim += 1
        elif isinstance(it, Tensor) and not it._shape and (it.dtype is _dtype.bool_ or it.dtype is _dtype.uint8):
            result = _dispatch("unsqueeze", result, dim)
            add_index(_bool_index(bool(it.item())))
            dim += 1
        elif isinstance(it, (Tensor, list, tuple, range, np.ndarray, str)):
            t = _as_index_tensor(list(it) if isinstance(it, (tuple, range)) else it)
            add_index(t)
            dim += len(t._shape) if (t.dtype is _dtype.bool_ or t.dtype is _dtype.uint8) else 1
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(it).__name__})")
    if not advanced:
        return result, None
    return result, advanced


def getitem(self, index):
    """``self[index]``: views for ints, slices, None and ...; a copy when a tensor/list/bool index is present."""
    if type(index) is int:
        return _select(self, 0, index)
    if type(index) is slice:
        result = _slice(self, 0, index)
        return _dispatch("alias", self) if result is self else result
    result, advanced = apply_slicing(self, index)
    if advanced is None:
        if result is self:
            return _dispatch("alias", self)
        return result
    return _dispatch("index", result, advanced)


def setitem(self, index, value):
    """``self[index] = value``: write through a view (``copy_``), or ``index_put_`` for advanced indices.

    As in PyTorch, a tensor value first loses its leading size-1 dims and is then
    ``expand``-ed to the view's shape (so the errors are expand's).
    """
    view, advanced = apply_slicing(self, index)
    if advanced is None:
        if isinstance(value, Tensor):
            v = value
            k = 0
            while k < len(v._shape) and v._shape[k] == 1:
                k += 1
            if k:
                v = _dispatch("view", v, v._shape[k:])
            if v._shape != view._shape:
                v = _dispatch("expand", v, view._shape)
            _dispatch("copy_", view, v)
        else:
            _dispatch("fill_", view, value)
        return
    if not isinstance(value, Tensor):
        from .._creation import tensor
        value = tensor(value, dtype=self.dtype)
    _dispatch("index_put_", view, advanced, value, False)
