"""Scattering and index arithmetic: ``scatter``, ``scatter_add``, ``scatter_reduce``, ``index_add``,
``index_fill``, ``masked_select`` and ``take_along_dim``.

In PyTorch: ``aten/src/ATen/native/TensorAdvancedIndexing.cpp`` (the kernels),
``ScatterGatherChecks.h`` (``scatter_gather_dtype_check``, ``scatter_shape_check``) and
``ReduceOpsUtils.h`` (the identities ``scatter_reduce`` starts from when ``include_self=False``).

Every kernel is one numpy call on the whole index: ``np.add.at`` / ``np.multiply.at`` /
``np.maximum.at`` / ``np.minimum.at`` accumulate repeated indices, plain advanced-index
assignment writes.  ``index`` of ``scatter`` along ``dim`` addresses
``out[i0, ..., index[i0, ..., ik], ..., in]``: the other coordinates come from ``np.indices``.

Deliberate difference: ``scatter`` without ``reduce`` at repeated indices keeps the last
written value (numpy's order); PyTorch leaves which one wins unspecified.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import broadcast_shapes, empty_meta, wrap, wrap_dim
from .dispatcher import dispatch
from .registry import OPS, register

_warned_reduce = [False]  # scatter's reduce= deprecation has been reported (PyTorch warns once per process)
_REDUCE_UFUNC = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum, "amin": np.minimum}


def _nd(t) -> int:
    """``ensure_nonempty_dim``: a 0-d tensor counts as 1-d in the scatter/gather checks."""
    return max(len(t._shape), 1)


def _size(t, d: int) -> int:
    return t._shape[d] if t._shape else 1


def _check_scatter(self, d: int, index, src, method: str) -> None:
    """PyTorch's ``scatter_gather_dtype_check`` and ``scatter_shape_check``."""
    if index.dtype is not _dtype.int64 and index.dtype is not _dtype.int32:
        raise RuntimeError(f"{method}(): Expected dtype int32/int64 for index")
    if src is not None and src.dtype is not self.dtype:
        raise RuntimeError(f"{method}(): Expected self.dtype to be equal to src.dtype")
    if index._shape and 0 in index._shape:
        return
    if _nd(index) != _nd(self):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and _nd(index) != _nd(src):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    bad = any(_size(index, k) > _size(self, k) for k in range(_nd(self)) if k != d)
    if src is not None:
        bad = bad or any(_size(index, k) > _size(src, k) for k in range(_nd(self)))
    if bad:
        msg = (f"Expected index {list(index._shape)} to be no larger than self {list(self._shape)} apart from "
               f"dimension {d}")
        if src is not None:
            msg += f" and to be no larger size than src {list(src._shape)}"
        raise RuntimeError(msg)


def _scatter_grid(self, d: int, index):
    """The numpy index tuple that ``scatter`` along ``d`` writes through (bounds checked); None for a
    0-d ``self`` or ``index`` (one element)."""
    idx = index._np().astype(np.intp, copy=False)
    n = _size(self, d)
    if idx.size:
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            raise RuntimeError(f"index {int(idx[bad].flat[0])} is out of bounds for dimension {d} with size {n}")
    if not idx.ndim or not self._shape:
        return None
    grids = list(np.indices(idx.shape, sparse=True))
    grids[d] = idx
    return tuple(grids)


def _src_values(src, index):
    """The corner of ``src`` that ``index`` covers (``src`` may be larger than ``index``)."""
    a = src._np()
    if a.ndim == 0:
        return a
    return a[tuple(slice(0, s) for s in index._shape)]


def _ufunc_at(ufunc, out: np.ndarray, grid: tuple, values) -> None:
    """``ufunc.at(out, grid, values)`` for a grid of one index array per axis, through flat indices when
    ``out`` is C-contiguous: numpy's fast path for one index array is several times faster than a tuple of
    broadcast index arrays, and it visits the elements in the same order, so the result is the same bit for
    bit."""
    if (not out.flags.c_contiguous or len(grid) != out.ndim
            or not all(isinstance(g, np.ndarray) for g in grid)):
        ufunc.at(out, grid, values)
        return
    lin = grid[0] * (out.strides[0] // out.itemsize)
    for k in range(1, out.ndim):
        lin = lin + grid[k] * (out.strides[k] // out.itemsize)
    values = np.asarray(values)
    shape = np.broadcast_shapes(lin.shape, values.shape)
    ufunc.at(out.reshape(-1), np.broadcast_to(lin, shape).reshape(-1), np.broadcast_to(values, shape).reshape(-1))


def _scatter_into(out: np.ndarray, self, d: int, index, values, ufunc=None) -> None:
    """Write (or accumulate with ``ufunc``) ``values`` into ``out`` at ``index`` along ``d``."""
    grid = _scatter_grid(self, d, index)
    if grid is None:
        # 0-d self or index: one element (index 0 along the only dim)
        flat = out.reshape(-1)
        v = np.asarray(values).reshape(-1)[:1]
        if index._np().size:
            if ufunc is None:
                flat[:1] = v
            else:
                ufunc.at(flat, np.zeros(1, np.intp), v)
        return
    if ufunc is None:
        out[grid] = values
    else:
        _ufunc_at(ufunc, out, grid, values)


def _same_meta(self, *args, **kwargs):
    return empty_meta(self._shape, self.dtype)


# ---------------------------------------------------------------------------
# scatter
# ---------------------------------------------------------------------------
def _scatter_meta(self, dim, index, src=None, value=None, reduce=None):
    d = wrap_dim(dim, _nd(self))
    _check_scatter(self, d, index, src if isinstance(src, Tensor) else None, "scatter")
    return empty_meta(self._shape, self.dtype)


@register("scatter(Tensor self, int dim, Tensor index, Tensor? src=None, *, Scalar? value=None, str? reduce=None) "
          "-> Tensor", meta=_scatter_meta, inplace="scatter_", kind="indexing")
def scatter(self, dim, index, src=None, value=None, reduce=None):
    """A copy of ``self`` with ``src`` (a tensor, or the number ``value``) written at ``index`` along ``dim``.

    ``reduce='add'`` or ``'multiply'`` accumulates instead (deprecated with a tensor ``src``:
    ``scatter_reduce`` replaces it).
    """
    if src is None and value is None:
        raise TypeError("scatter() missing 1 required positional arguments: \"src\"")
    v = src if src is not None else value
    is_tensor = isinstance(v, Tensor)
    d = wrap_dim(dim, _nd(self))
    _check_scatter(self, d, index, v if is_tensor else None, "scatter")
    ufunc = None
    if reduce is not None:
        if is_tensor and not _warned_reduce[0]:  # TORCH_WARN_ONCE: once per process
            _warned_reduce[0] = True
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in "
                          "a future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                          UserWarning, stacklevel=3)
        if reduce == "add":
            ufunc = np.add
        elif reduce == "multiply":
            ufunc = np.multiply
        else:
            raise RuntimeError("reduce argument must be either add or multiply.")
    out = np.array(self._np(), copy=True)
    if index._np().size:
        vals = _src_values(v, index) if is_tensor else np.asarray(v).astype(self.dtype.np)
        _scatter_into(out, self, d, index, vals, ufunc)
    return wrap(out, self.dtype)


@register("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
          meta=lambda self, dim, index, src: (_check_scatter(self, wrap_dim(dim, _nd(self)), index, src,
                                                             "scatter"), empty_meta(self._shape, self.dtype))[1],
          inplace="scatter_add_", kind="indexing")
def scatter_add(self, dim, index, src):
    """A copy of ``self`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
    d = wrap_dim(dim, _nd(self))
    _check_scatter(self, d, index, src, "scatter")
    out = np.array(self._np(), copy=True)
    if index._np().size:
        _scatter_into(out, self, d, index, _src_values(src, index), np.add)
    return wrap(out, self.dtype)


def _identity(reduce: str, dtype: _dtype.dtype):
    """What ``scatter_reduce`` puts at a written position before reducing when ``include_self=False``."""
    if reduce == "prod":
        return 1
    if reduce == "amax":
        return -np.inf if dtype.is_floating_point else (False if dtype is _dtype.bool_ else np.iinfo(dtype.np).min)
    if reduce == "amin":
        return np.inf if dtype.is_floating_point else (True if dtype is _dtype.bool_ else np.iinfo(dtype.np).max)
    return 0


def _reduce_name(reduce: str) -> str:
    r = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if r not in _REDUCE_UFUNC:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    return r


def _scatter_reduce_meta(self, dim, index, src, reduce, include_self=True):
    _reduce_name(reduce)
    _check_scatter(self, wrap_dim(dim, _nd(self)), index, src, "scatter")
    return empty_meta(self._shape, self.dtype)


@register("scatter_reduce(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) "
          "-> Tensor", meta=_scatter_reduce_meta, inplace="scatter_reduce_", kind="indexing")
def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    """Reduce ``src`` into a copy of ``self`` at ``index`` along ``dim``: sum, prod, mean, amax or amin.

    With ``include_self=False`` the values of ``self`` at written positions take no part.
    """
    r = _reduce_name(reduce)
    d = wrap_dim(dim, _nd(self))
    _check_scatter(self, d, index, src, "scatter")
    out = np.array(self._np(), copy=True)
    if not index._np().size:
        return wrap(out, self.dtype)
    if not include_self:
        _scatter_into(out, self, d, index, np.asarray(_identity(r, self.dtype)).astype(self.dtype.np))
    _scatter_into(out, self, d, index, _src_values(src, index), _REDUCE_UFUNC[r])
    if r == "mean":
        count = np.full(out.shape, 1 if include_self else 0, dtype=np.int64)
        _scatter_into(count, self, d, index, np.ones(index._shape, np.int64), np.add)
        count[count == 0] = 1
        if self.dtype.is_floating_point:
            out = (out / count).astype(self.dtype.np)
        else:
            out = np.floor_divide(out, count).astype(self.dtype.np)
    return wrap(out, self.dtype)


# ---------------------------------------------------------------------------
# index_add, index_fill
# ---------------------------------------------------------------------------
def _check_index_add(self, d: int, index, source) -> None:
    if index.dtype is not _dtype.int64 and index.dtype is not _dtype.int32:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {index.dtype._tensor_name}")
    if len(index._shape) > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {len(index._shape)} with type: "
                         f"{index.dtype._tensor_name} and size: {list(index._shape)}")
    if self.dtype is not source.dtype:
        raise RuntimeError(f"index_add_(): self ({self.dtype._tensor_name}) and source ({source.dtype._tensor_name}) "
                           f"must have the same scalar type")
    n_idx = index._shape[0] if index._shape else 1
    if source._shape and n_idx != source._shape[d if self._shape else 0]:
        raise RuntimeError(f"index_add_(): Number of indices ({n_idx}) should be equal to source.size(dim): "
                           f"({source._shape[d]}), for dim: {d}")
    if len(source._shape) == len(self._shape) and self._shape:
        if any(a != b for k, (a, b) in enumerate(zip(self._shape, source._shape)) if k != d):
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(self._shape)} source.shape = {list(source._shape)}")


def _index_add_meta(self, dim, index, source, alpha=1):
    _check_index_add(self, wrap_dim(dim, _nd(self)), index, source)
    return empty_meta(self._shape, self.dtype)


@register("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
          meta=_index_add_meta, inplace="index_add_", kind="indexing")
def index_add(self, dim, index, source, alpha=1):
    """A copy of ``self`` with ``alpha * source`` added to the slices ``index`` picks along ``dim``."""
    d = wrap_dim(dim, _nd(self))
    _check_index_add(self, d, index, source)
    out = np.array(self._np(), copy=True)
    idx = index._np().astype(np.intp, copy=False).reshape(-1)
    n = _size(self, d)
    if idx.size:
        bad = (idx < 0) | (idx >= n)        # PyTorch refuses negative indices here
        if bad.any():
            # PyTorch's CPU kernel, as observed in 2.13.0: alpha 1 along the first or last of 2 or more dims
            # goes through scatter (its message), anything else through a loop over the indices (IndexError)
            nd = len(self._shape)
            if nd <= 1 or alpha != 1 or d not in (0, nd - 1):
                raise IndexError("index out of range in self")
            raise RuntimeError(f"index {int(idx[bad][0])} is out of bounds for dimension {d} with size {n}")
    src = source._np()
    if alpha != 1:
        src = src * np.asarray(alpha).astype(self.dtype.np)
    if not self._shape:
        np.add.at(out.reshape(1), idx, src.reshape(-1))
    else:
        src = src.reshape(source._shape if source._shape else (1,))
        grid = list(np.indices(src.shape, sparse=True)) if src.ndim == out.ndim else None
        if grid is not None:
            grid[d] = idx.reshape(tuple(-1 if k == d else 1 for k in range(out.ndim)))
            _ufunc_at(np.add, out, tuple(grid), src)
        else:
            np.add.at(out, (slice(None),) * d + (idx,), src)
    return wrap(out, self.dtype)


def _check_index_fill(self, d: int, index) -> np.ndarray:
    if index.dtype is not _dtype.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if len(index._shape) > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    idx = index._np().astype(np.intp, copy=False).reshape(-1)
    n = _size(self, d)
    if idx.size:
        bad = (idx < -n) | (idx >= n)
        if bad.any():
            raise IndexError(f"index {int(idx[bad][0])} is out of bounds for dimension {d} with size {n}")
    return idx


def _index_fill_meta(self, dim, index, value):
    if index._storage.data is not None:
        _check_index_fill(self, wrap_dim(dim, _nd(self)), index)
    return empty_meta(self._shape, self.dtype)


@register("index_fill(Tensor self, int dim, Tensor index, Tensor value) -> Tensor", meta=_index_fill_meta,
          inplace="index_fill_", kind="indexing")
def index_fill(self, dim, index, value):
    """A copy of ``self`` with ``value`` (a number or a 0-d tensor) in the slices ``index`` picks along ``dim``."""
    d = wrap_dim(dim, _nd(self))
    idx = _check_index_fill(self, d, index)
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{len(value._shape)} dimension(s).")
        value = value._np()
    out = np.array(self._np(), copy=True)
    v = np.asarray(value).astype(self.dtype.np)
    if not self._shape:
        if idx.size:
            out[()] = v
    else:
        out[(slice(None),) * d + (idx,)] = v
    return wrap(out, self.dtype)


# ---------------------------------------------------------------------------
# masked_select, take_along_dim
# ---------------------------------------------------------------------------
def _masked_select_meta(self, mask):
    raise NotImplementedError("masked_select on the meta device: the output shape depends on the mask's values")


@register("masked_select(Tensor self, Tensor mask) -> Tensor", meta=_masked_select_meta, kind="indexing")
def masked_select(self, mask):
    """The elements of ``self`` where ``mask`` is True, as a 1-D tensor (the two are broadcast first)."""
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask._shape, self._shape)
    a = np.broadcast_to(self._np(), shape)
    m = np.broadcast_to(mask._np(), shape)
    return wrap(a[m], self.dtype)


@register("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor", kind="composite")
def take_along_dim(self, indices, dim=None):
    """Pick values of ``self`` at ``indices`` along ``dim`` (``gather`` after broadcasting the other dims);
    without ``dim``, ``indices`` index the flattened tensor.

    In PyTorch a CompositeImplicitAutograd function (``TensorAdvancedIndexing.cpp``): what runs is
    ``reshape``/``expand`` and ``gather``, whose node (``GatherBackward0``) the result has.
    """
    if indices.dtype is not _dtype.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype._tensor_name}")
    if dim is None:
        flat = dispatch(OPS["reshape"], (self, (-1,)))
        return dispatch(OPS["gather"], (flat, 0, dispatch(OPS["reshape"], (indices, (-1,)))))
    if len(self._shape) != len(indices._shape):
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {len(self._shape)} dimensions for input, and {len(indices._shape)} dimensions "
                           f"for indices")
    d = wrap_dim(dim, len(self._shape))
    sizes = list(self._shape)
    sizes[d] = indices._shape[d]
    shape = broadcast_shapes(tuple(sizes), indices._shape)
    if indices._shape != shape:
        indices = dispatch(OPS["expand"], (indices, shape))
    sizes = list(shape)
    sizes[d] = self._shape[d]
    x = self if self._shape == tuple(sizes) else dispatch(OPS["expand"], (self, tuple(sizes)))
    return dispatch(OPS["gather"], (x, d, indices))
