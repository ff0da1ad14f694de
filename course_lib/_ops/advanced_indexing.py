"""Advanced indexing: ``index``, ``index_put_``, ``gather``, ``index_select``, ``masked_fill`` and
``nonzero`` (``scatter_add`` and the other scatters are in ``scatter.py``).  Each picks or writes
elements by integer or bool tensors and (reading) always copies.

In PyTorch: ``aten/src/ATen/native/TensorAdvancedIndexing.cpp`` and ``IndexingUtils.h``
(how index tensors are checked).  ``x[...]`` reaches ``index``/``index_put_`` through
``indexing.py``.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import broadcast_two, checked_scalar, empty_meta, wrap, wrap_dim
from .copies import clone
from .registry import OPS, register

_FULL = slice(None)


def _index_arrays(self, indices):
    """numpy index tuple for ``index``: None entries become full slices; checked like PyTorch."""
    out = []
    dim = 0
    int_shapes = []
    bounds = []
    for idx in indices:
        if idx is None:
            out.append(_FULL)
            dim += 1
            continue
        a = idx._np()
        if idx.dtype is _dtype.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                          "instead.", UserWarning, stacklevel=4)
            a = a.astype(bool)
        if a.dtype == np.bool_:
            for k, s in enumerate(a.shape):
                if dim + k >= len(self._shape) or self._shape[dim + k] != s:
                    raise IndexError(f"The shape of the mask {list(a.shape)} at index {k} does not match the shape "
                                     f"of the indexed tensor {list(self._shape)} at index {dim + k}")
            out.append(a)
            int_shapes.append((a.sum(),) if a.ndim else ())
            dim += a.ndim
            continue
        if idx.dtype is not _dtype.int64 and idx.dtype is not _dtype.int32:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if dim >= len(self._shape):
            raise IndexError(f"too many indices for tensor of dimension {len(self._shape)}")
        bounds.append((a, dim, self._shape[dim]))
        out.append(a)
        int_shapes.append(a.shape)
        dim += 1
    if len(int_shapes) > 1:
        try:
            np.broadcast_shapes(*int_shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(str(list(map(int, s))) for s in int_shapes)) from None
    for a, d, n in bounds:  # after the shapes, as in PyTorch
        if a.size:
            lo, hi = a.min(), a.max()
            if hi >= n or lo < -n:
                bad = hi if hi >= n else lo
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    return tuple(out)


def _index_meta(self, indices):
    """The shape of ``self[indices]`` from shapes alone; bool masks make it depend on the values."""
    items = []
    for idx in indices:
        if idx is None:
            items.append(_FULL)
        elif idx.dtype is _dtype.bool_ or idx.dtype is _dtype.uint8:
            if idx._storage.data is None:
                raise NotImplementedError("index with a boolean mask on the meta device: the output shape "
                                          "depends on the mask's values")
            items.append(idx._np().astype(bool))
        else:
            items.append(np.zeros(idx._shape, np.intp))
    dummy = np.broadcast_to(np.zeros((), np.int8), self._shape)
    return empty_meta(dummy[tuple(items)].shape, self.dtype)


@register("index(Tensor self, Tensor?[] indices) -> Tensor", variants=(), meta=_index_meta, kind="indexing")
def index(self, indices):
    """Advanced indexing (integer or bool tensors): always a copy."""
    return wrap(np.array(self._np()[_index_arrays(self, indices)]), self.dtype)


def _index_put_meta(self, indices, values, accumulate=False):
    return self


@register("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
          variants=("method",), meta=_index_put_meta, is_inplace=True, kind="indexing")
def index_put_(self, indices, values, accumulate=False):
    """``self[indices] = values`` (or ``+=`` with ``accumulate``, adding repeated indices up)."""
    if 0 in self._stride and any(st == 0 and sz > 1 for sz, st in zip(self._shape, self._stride)):
        warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
                      "performing this operation. This also applies to advanced indexing e.g. tensor[indices] = "
                      "tensor", UserWarning, stacklevel=3)
    idx = _index_arrays(self, indices)
    v = values._np() if isinstance(values, Tensor) else values
    a = self._np()
    if accumulate:
        np.add.at(a, idx, v)
    else:
        a[idx] = v
    self._vc.value += 1
    return self


@register("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
          variants=(), meta=lambda self, indices, values, accumulate=False: empty_meta(self._shape, self.dtype),
          kind="indexing")
def index_put(self, indices, values, accumulate=False):
    """Out-of-place ``index_put_`` (used by autograd for the backward of ``index``)."""
    r = clone.cpu(self, "contiguous_format")
    index_put_.cpu(r, indices, values, accumulate)
    r._vc.value = 0
    return r


def _gather_meta(self, dim, index):
    return empty_meta(index._shape, self.dtype)


@register("gather(Tensor self, int dim, Tensor index) -> Tensor", meta=_gather_meta, kind="indexing")
def gather(self, dim, index):
    """out[i][j] = self[index[i][j]][j] (for dim 0): pick along ``dim`` by ``index``."""
    d = wrap_dim(dim, len(self._shape))
    _check_gather(self, d, index)
    if not self._shape:  # a 0-d self: every index is 0 (checked)
        return wrap(np.broadcast_to(self._np(), index._shape).copy(), self.dtype)
    # index may be smaller than self in the other dims: only that corner of self is read
    a = self._np()[tuple(slice(0, s) if k != d else slice(None) for k, s in enumerate(index._shape))]
    return wrap(np.take_along_axis(a, index._np(), axis=d), self.dtype)


def _check_gather(self, d, index):
    if index.dtype is not _dtype.int64 and index.dtype is not _dtype.int32:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    nd = max(len(self._shape), 1)
    if max(len(index._shape), 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k, (i, s) in enumerate(zip(index._shape, self._shape)):
        if k != d and i > s:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index._shape)} to be "
                               f"no larger than self {list(self._shape)} apart from dimension {d}")
    a = index._np()
    n = self._shape[d] if self._shape else 1
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi >= n:
            raise RuntimeError(f"index {hi if hi >= n else lo} is out of bounds for dimension {d} with size {n}")


@register("index_select(Tensor self, int dim, Tensor index) -> Tensor",
          meta=lambda self, dim, index: empty_meta(
              self._shape[:wrap_dim(dim, len(self._shape))] + index._shape
              + self._shape[wrap_dim(dim, len(self._shape)) + 1:], self.dtype), kind="indexing")
def index_select(self, dim, index):
    """Rows (or slices along ``dim``) picked by a 1-D index tensor."""
    d = wrap_dim(dim, len(self._shape))
    _check_index_select(self, d, index)
    if not self._shape:
        return wrap(self._np().reshape(index._shape).copy(), self.dtype)
    return wrap(np.take(self._np(), index._np(), axis=d), self.dtype)


def _check_index_select(self, d, index):
    if index.dtype is not _dtype.int64 and index.dtype is not _dtype.int32:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if len(index._shape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    n = self._shape[d] if self._shape else 1
    a = index._np()
    if a.size and (a.min() < 0 or a.max() >= n):
        raise IndexError("index out of range in self")


@register("nonzero(Tensor self, *, bool as_tuple=False) -> Tensor", variants=("function", "method"), kind="indexing")
def nonzero(self, as_tuple=False):
    """Indices of the non-zero elements, one row each: shape (count, ndim), int64.

    ``as_tuple=True``: one 1-D tensor of indices per dim instead (a 0-d input counts as 1-D).
    """
    if as_tuple:
        return tuple(wrap(i.astype(np.int64), _dtype.int64) for i in np.nonzero(np.atleast_1d(self._np())))
    return wrap(np.argwhere(self._np()).astype(np.int64), _dtype.int64)


def _check_masked_fill(self, mask, value):
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype.c_type_name(mask.dtype, 'demangled')}")
    if isinstance(value, Tensor) and value._shape:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{len(value._shape)} dimension(s).")
    if mask._shape != self._shape and broadcast_two(mask._shape, self._shape) != self._shape:
        # the mask is expanded to self's shape
        OPS["expand"].cpu(mask, self._shape)


def _masked_fill_meta(self, mask, value):
    _check_masked_fill(self, mask, value)
    return empty_meta(self._shape, self.dtype)


@register("masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor", meta=_masked_fill_meta,
          inplace="masked_fill_", kind="indexing")
def masked_fill(self, mask, value):
    """A copy with ``value`` where ``mask`` is True."""
    _check_masked_fill(self, mask, value)
    if isinstance(value, Tensor):
        value = np.asarray(value._np()).astype(self.dtype.np)
    else:
        value = checked_scalar(value, self.dtype)
    return wrap(np.where(mask._np(), value, self._np()), self.dtype)
