"""Copies, joins, casts, in-place writes, indexing and softmax.

In PyTorch: ``aten/src/ATen/native/TensorShape.cpp`` (cat, stack),
``Copy.cpp`` (copy_), ``TensorConversions.cpp`` (to), ``TensorAdvancedIndexing.cpp``
(index, index_put_), ``torch/csrc/autograd/python_variable_indexing.cpp``
(how ``x[...]`` is turned into select/slice/unsqueeze/index calls) and
``SoftMax.cpp``.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from .._parallel import parallel_copy
from .common import (broadcast_shapes, broadcast_two, checked_scalar, contiguous_strides, empty_meta, result_type,
                     wrap, wrap_dim, wrap_dims)
from .registry import OPS, OpDef, register

_T = None


def _dispatch(name, *args):
    from .dispatcher import dispatch
    return dispatch(OPS[name], args)


# ---------------------------------------------------------------------------
# copies
# ---------------------------------------------------------------------------
def _clone_meta(self, memory_format="preserve_format"):
    return empty_meta(self._shape, self.dtype)


@register("clone(Tensor self, *, MemoryFormat? memory_format=preserve_format) -> Tensor", meta=_clone_meta)
def clone(self, memory_format="preserve_format"):
    """A copy with its own storage; a dense tensor keeps its stride order (preserve_format)."""
    a = self._np()
    if memory_format == "contiguous_format" or a.flags.c_contiguous:
        return wrap(parallel_copy(a), self.dtype)
    r = np.array(a, order="K", copy=True)
    flat = r.ravel(order="K")
    if not np.shares_memory(flat, r):
        return wrap(np.ascontiguousarray(r), self.dtype)
    from .._storage import Storage
    isz = self.dtype.itemsize
    t = _T._make(Storage(flat, self.dtype), 0, r.shape, tuple(s // isz for s in r.strides), self.dtype)
    t._npc = r
    return t


@register("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
          kind="composite")
def contiguous(self, memory_format="contiguous_format"):
    """``self`` if already contiguous, else a contiguous copy."""
    if self.is_contiguous():
        return self
    return _dispatch("clone", self, "contiguous_format")


def _to_copy_meta(self, dtype=None, device=None):
    return empty_meta(self._shape, dtype or self.dtype) if device in (None, "meta") else _to_copy(self, dtype, device)


@register("_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor", variants=(),
          meta=_to_copy_meta)
def _to_copy(self, dtype=None, device=None):
    """A copy converted to ``dtype`` and/or moved to ``device``."""
    dt = dtype or self.dtype
    if device == "meta":
        return empty_meta(self._shape, dt)
    if self._storage.data is None:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    return wrap(self._np().astype(dt.np, copy=True), dt)


# ---------------------------------------------------------------------------
# in-place writes
# ---------------------------------------------------------------------------
def can_cast(src: D.dtype, dst: D.dtype) -> bool:
    """PyTorch's ``canCast``: no float -> integer, no non-bool -> bool."""
    if src.category == D._FLOAT and dst.category != D._FLOAT:
        return False
    if src is not D.bool_ and dst is D.bool_:
        return False
    return True


def check_no_internal_overlap(self) -> None:
    """Refuse to write into a tensor whose elements share memory (an ``expand``-ed one), as PyTorch does."""
    if 0 in self._stride:
        for sz, st in zip(self._shape, self._stride):
            if st == 0 and sz > 1:
                raise RuntimeError(
                    "unsupported operation: more than one element of the written-to tensor refers to a single "
                    "memory location. Please clone() the tensor before performing the operation.")


def _non_overlapping_and_dense(t) -> bool:
    dims = sorted((st, sz) for sz, st in zip(t._shape, t._stride) if sz != 1)
    expected = 1
    for st, sz in dims:
        if st != expected:
            return False
        expected *= sz
    return True


def check_no_partial_overlap(self, other) -> None:
    """PyTorch's ``assert_no_partial_overlap``: an in-place op may not read memory it writes at another
    place (``x[1:].copy_(x[:-1])``).  Reading exactly the written elements (``x.add_(x)``) is fine;
    layouts too hard to analyse (not dense) are let through, as in PyTorch."""
    if not isinstance(other, _T) or other._storage is not self._storage or other is self:
        return
    n, m = self.numel(), other.numel()
    if n == 0 or m == 0 or not _non_overlapping_and_dense(self) or not _non_overlapping_and_dense(other):
        return
    a0, b0 = self._offset, other._offset
    a1, b1 = a0 + n, b0 + m
    if (a0 == b0 and a1 == b1 and self._stride == other._stride) or not (a0 < b1 and b0 < a1):
        return
    raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor refer "
                       "to a single memory location. Please clone() the tensor before performing the operation.")


def check_inplace(self, shape: tuple, dtype: D.dtype) -> None:
    """The checks every in-place op makes before writing into ``self``."""
    check_no_internal_overlap(self)
    if shape != self._shape and broadcast_two(self._shape, shape) != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                           f"{list(broadcast_shapes(self._shape, shape))}")
    if not can_cast(dtype, self.dtype):
        raise RuntimeError(f"result type {dtype._tensor_name} can't be cast to the desired output type "
                           f"{self.dtype._tensor_name}")


def write_inplace(self, result) -> None:
    """Copy ``result``'s values into ``self``'s storage (through any view) and bump its version."""
    check_inplace(self, result._shape, result.dtype)
    if self._storage.data is not None:
        np.copyto(self._np(), result._np(), casting="unsafe")
    self._vc.value += 1


def make_inplace(op: OpDef) -> OpDef:
    """Register ``op_`` (e.g. ``add_``): compute ``op`` out of place, then write into ``self``.

    Deliberate difference: PyTorch computes in place element by element, so on a tensor
    whose elements overlap in memory in ways its checks let through (an ``as_strided``
    view with overlapping windows) later elements may see earlier writes; here every
    element is computed from the values before the op.
    """
    schema = op.schema.replace(f"{op.name}(Tensor self", f"{op.inplace}(Tensor(a!) self", 1)
    schema = schema.rsplit("->", 1)[0] + "-> Tensor(a!)"
    out_kernel = op.cpu
    out_meta = op.meta

    if op.name == "masked_fill":
        def kernel(self, *args):
            if 0 in self._stride and any(st == 0 and sz > 1 for sz, st in zip(self._shape, self._stride)):
                warnings.warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor "
                              "before performing this operation. This also applies to advanced indexing e.g. "
                              "tensor[mask] = scalar", UserWarning, stacklevel=3)
                r = out_kernel(self, *args)
                np.copyto(self._np(), r._np(), casting="unsafe")
                self._vc.value += 1
                return self
            write_inplace(self, out_kernel(self, *args))
            return self
    elif op.name == "clamp":
        def kernel(self, *args):
            if not any(isinstance(a, _T) for a in args):
                # clamp_ with number bounds words its cast error with C++ type names (PyTorch's quirk)
                from .linalg import _NAMES
                dt = result_type(self, *args)
                if not can_cast(dt, self.dtype):
                    raise RuntimeError(f"result type {dt._tensor_name} can't be cast to the desired output type "
                                       f"{_NAMES[self.dtype.name]}")
            check_no_internal_overlap(self)
            for a in args:
                if isinstance(a, _T) and a._storage is self._storage:
                    check_no_partial_overlap(self, a)
            write_inplace(self, out_kernel(self, *args))
            return self
    else:
        def kernel(self, *args):
            check_no_internal_overlap(self)
            for a in args:
                if isinstance(a, _T) and a._storage is self._storage:
                    check_no_partial_overlap(self, a)
            try:
                r = out_kernel(self, *args)
            except NotImplementedError:
                # PyTorch checks the output (shape, castability) before it picks a kernel for the
                # dtype: if that check fails too, its error is the one to report
                # (int64.bitwise_and_(float) is a cast error, not "not implemented for 'Float'")
                try:
                    m = out_meta(self, *args)
                except Exception:  # noqa: BLE001 - the kernel's own error stands
                    raise
                check_inplace(self, m._shape, m.dtype)
                raise
            write_inplace(self, r)
            return self

    def meta(self, *args):
        r = out_meta(self, *args)
        check_inplace(self, r._shape, r.dtype)
        return self

    kernel.__name__ = op.inplace
    kernel.__doc__ = f"In-place version of ``{op.name}``: writes the result into ``self``."
    new = register(schema, meta=meta, variants=("method",), kind=op.kind, is_inplace=True)(kernel)
    new.functional = op
    return new


def _copy_meta(self, src, non_blocking=False):
    check_inplace(self, src._shape if isinstance(src, _T) else (), self.dtype)
    return self


@register("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", variants=("method",),
          meta=_copy_meta, is_inplace=True)
def copy_(self, src, non_blocking=False):
    """Copy ``src``'s values (broadcast and cast) into ``self``."""
    check_no_internal_overlap(self)
    if isinstance(src, _T):
        check_no_partial_overlap(self, src)
        if src._shape != self._shape and broadcast_two(self._shape, src._shape) != self._shape:
            raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                               f"{list(broadcast_shapes(self._shape, src._shape))}")
        if src._storage.data is None:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        np.copyto(self._np(), src._np(), casting="unsafe")
    else:
        self._np()[...] = src
    self._vc.value += 1
    return self


@register("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", variants=("method",), is_inplace=True,
          meta=lambda self, value: self)
def fill_(self, value):
    """Set every element to ``value``."""
    if isinstance(value, _T):
        if value._shape:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{len(value._shape)} dimensions.")
        value = np.asarray(value._np()).astype(self.dtype.np)
    else:
        value = checked_scalar(value, self.dtype)
    self._np()[...] = value
    self._vc.value += 1
    return self


@register("zero_(Tensor(a!) self) -> Tensor(a!)", variants=("method",), is_inplace=True, meta=lambda self: self)
def zero_(self):
    """Set every element to zero."""
    self._np()[...] = 0
    self._vc.value += 1
    return self


def _check_masked_fill(self, mask, value):
    from .linalg import _NAMES
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_NAMES[mask.dtype.name]}")
    if isinstance(value, _T) and value._shape:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{len(value._shape)} dimension(s).")
    if mask._shape != self._shape and broadcast_two(mask._shape, self._shape) != self._shape:
        # the mask is expanded to self's shape
        OPS["expand"].cpu(mask, self._shape)


def _masked_fill_meta(self, mask, value):
    _check_masked_fill(self, mask, value)
    return empty_meta(self._shape, self.dtype)


@register("masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor", meta=_masked_fill_meta,
          inplace="masked_fill_")
def masked_fill(self, mask, value):
    """A copy with ``value`` where ``mask`` is True."""
    _check_masked_fill(self, mask, value)
    if isinstance(value, _T):
        value = np.asarray(value._np()).astype(self.dtype.np)
    else:
        value = checked_scalar(value, self.dtype)
    return wrap(np.where(mask._np(), value, self._np()), self.dtype)


# ---------------------------------------------------------------------------
# joining
# ---------------------------------------------------------------------------
def _cat_check(tensors, dim):
    if len(tensors) == 0:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ref = next((t for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)), tensors[0])
    nd = len(ref._shape)
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, nd)
    for i, t in enumerate(tensors):
        if len(t._shape) == 1 and t._shape[0] == 0:
            continue  # legacy: empty 1-D tensors are skipped
        if len(t._shape) != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {len(t._shape)}")
        for j in range(nd):
            if j != d and t._shape[j] != ref._shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._shape[j]} but got size {t._shape[j]} for tensor number {i} in the list.")
    return d, result_type(*[t for t in tensors])


def _cat_meta(tensors, dim=0):
    d, dt = _cat_check(tensors, dim)
    parts = [t for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)] or [tensors[0]]
    shape = list(parts[0]._shape)
    shape[d] = sum(t._shape[d] for t in parts)
    return empty_meta(tuple(shape), dt)


@register("cat(Tensor[] tensors, int dim=0) -> Tensor", meta=_cat_meta, variants=("function",))
def cat(tensors, dim=0):
    """Join tensors along an existing dim (their dtypes are promoted)."""
    d, dt = _cat_check(tensors, dim)
    arrs = [t._np() for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)]
    if not arrs:
        return wrap(np.zeros((0,), dt.np), dt)
    return wrap(np.concatenate(arrs, axis=d, dtype=dt.np), dt)


def _stack_check(tensors, dim):
    if len(tensors) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at entry 0 and "
                               f"{list(t._shape)} at entry {i}")
    return wrap_dim(dim, len(s0) + 1), result_type(*tensors)


def _stack_meta(tensors, dim=0):
    d, dt = _stack_check(tensors, dim)
    s0 = tensors[0]._shape
    return empty_meta(s0[:d] + (len(tensors),) + s0[d:], dt)


@register("stack(Tensor[] tensors, int dim=0) -> Tensor", meta=_stack_meta, variants=("function",))
def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dim."""
    d, dt = _stack_check(tensors, dim)
    return wrap(np.stack([t._np() for t in tensors], axis=d, dtype=dt.np), dt)


# ---------------------------------------------------------------------------
# gathering
# ---------------------------------------------------------------------------
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
        if idx.dtype is D.uint8:
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
        if idx.dtype is not D.int64 and idx.dtype is not D.int32:
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


import builtins as _b  # noqa: E402

_FULL = _b.slice(None)


def _index_meta(self, indices):
    """The shape of ``self[indices]`` from shapes alone; bool masks make it depend on the values."""
    items = []
    for idx in indices:
        if idx is None:
            items.append(_FULL)
        elif idx.dtype is D.bool_ or idx.dtype is D.uint8:
            if idx._storage.data is None:
                raise NotImplementedError("index with a boolean mask on the meta device: the output shape "
                                          "depends on the mask's values")
            items.append(idx._np().astype(bool))
        else:
            items.append(np.zeros(idx._shape, np.intp))
    dummy = np.broadcast_to(np.zeros((), np.int8), self._shape)
    return empty_meta(dummy[tuple(items)].shape, self.dtype)


@register("index(Tensor self, Tensor?[] indices) -> Tensor", variants=(), meta=_index_meta)
def index(self, indices):
    """Advanced indexing (integer or bool tensors): always a copy."""
    return wrap(np.array(self._np()[_index_arrays(self, indices)]), self.dtype)


def _index_put_meta(self, indices, values, accumulate=False):
    return self


@register("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
          variants=("method",), meta=_index_put_meta, is_inplace=True)
def index_put_(self, indices, values, accumulate=False):
    """``self[indices] = values`` (or ``+=`` with ``accumulate``, adding repeated indices up)."""
    if 0 in self._stride and any(st == 0 and sz > 1 for sz, st in zip(self._shape, self._stride)):
        warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
                      "performing this operation. This also applies to advanced indexing e.g. tensor[indices] = "
                      "tensor", UserWarning, stacklevel=3)
    idx = _index_arrays(self, indices)
    v = values._np() if isinstance(values, _T) else values
    a = self._np()
    if accumulate:
        np.add.at(a, idx, v)
    else:
        a[idx] = v
    self._vc.value += 1
    return self


@register("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
          variants=(), meta=lambda self, indices, values, accumulate=False: empty_meta(self._shape, self.dtype))
def index_put(self, indices, values, accumulate=False):
    """Out-of-place ``index_put_`` (used by autograd for the backward of ``index``)."""
    r = clone.cpu(self, "contiguous_format")
    index_put_.cpu(r, indices, values, accumulate)
    r._vc.value = 0
    return r


def _gather_meta(self, dim, index):
    return empty_meta(index._shape, self.dtype)


@register("gather(Tensor self, int dim, Tensor index) -> Tensor", meta=_gather_meta)
def gather(self, dim, index):
    """out[i][j] = self[index[i][j]][j] (for dim 0): pick along ``dim`` by ``index``."""
    d = wrap_dim(dim, len(self._shape))
    _check_gather(self, d, index)
    # index may be smaller than self in the other dims: only that corner of self is read
    a = self._np()[tuple(_b.slice(0, s) if k != d else _b.slice(None) for k, s in enumerate(index._shape))]
    return wrap(np.take_along_axis(a, index._np(), axis=d), self.dtype)


def _check_gather(self, d, index):
    if index.dtype is not D.int64 and index.dtype is not D.int32:
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


@register("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
          meta=lambda self, dim, index, src: empty_meta(self._shape, self.dtype))
def scatter_add(self, dim, index, src):
    """A copy of ``self`` with ``src`` added at ``index`` along ``dim`` (backward of ``gather``)."""
    d = wrap_dim(dim, len(self._shape))
    out = np.array(self._np(), copy=True)
    idx = index._np()
    grids = list(np.indices(idx.shape, sparse=True))
    grids[d] = idx
    np.add.at(out, tuple(grids), src._np()[tuple(_b.slice(0, s) for s in idx.shape)])
    return wrap(out, self.dtype)


@register("index_select(Tensor self, int dim, Tensor index) -> Tensor",
          meta=lambda self, dim, index: empty_meta(
              self._shape[:wrap_dim(dim, len(self._shape))] + index._shape
              + self._shape[wrap_dim(dim, len(self._shape)) + 1:], self.dtype))
def index_select(self, dim, index):
    """Rows (or slices along ``dim``) picked by a 1-D index tensor."""
    d = wrap_dim(dim, len(self._shape))
    _check_index_select(self, d, index)
    if not self._shape:
        return wrap(self._np().reshape(index._shape).copy(), self.dtype)
    return wrap(np.take(self._np(), index._np(), axis=d), self.dtype)


def _check_index_select(self, d, index):
    if index.dtype is not D.int64 and index.dtype is not D.int32:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if len(index._shape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    n = self._shape[d] if self._shape else 1
    a = index._np()
    if a.size and (a.min() < 0 or a.max() >= n):
        raise IndexError("index out of range in self")


@register("nonzero(Tensor self) -> Tensor", variants=("function", "method"))
def nonzero(self):
    """Indices of the non-zero elements, one row each: shape (count, ndim), int64."""
    return wrap(np.argwhere(self._np()).astype(np.int64), D.int64)


def _tri_meta(self, diagonal=0):
    return empty_meta(self._shape, self.dtype)


@register("tril(Tensor self, int diagonal=0) -> Tensor", meta=_tri_meta)
def tril(self, diagonal=0):
    """Lower triangle (the rest zero) of the last two dims."""
    if len(self._shape) < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return wrap(np.tril(self._np(), diagonal), self.dtype)


@register("triu(Tensor self, int diagonal=0) -> Tensor", meta=_tri_meta)
def triu(self, diagonal=0):
    """Upper triangle (the rest zero) of the last two dims."""
    if len(self._shape) < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return wrap(np.triu(self._np(), diagonal), self.dtype)


@register("flip(Tensor self, int[] dims) -> Tensor", meta=lambda self, dims: empty_meta(self._shape, self.dtype))
def flip(self, dims):
    """A copy reversed along ``dims``."""
    ds = wrap_dims(dims, len(self._shape))
    if not self._shape:
        return wrap(self._np().copy(), self.dtype)
    return wrap(np.flip(self._np(), ds).copy(), self.dtype)


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------
def _softmax_dtype(self, dtype, name, dim=-1):
    dt = dtype if dtype is not None else self.dtype
    if dt.category != D._FLOAT:
        nd = len(self._shape)
        last = nd == 0 or wrap_dim(dim, nd) == nd - 1
        kernel = f"{name}_lastdim_kernel_impl" if last else f"{name}_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._tensor_name}'")
    return dt


def _softmax_meta(self, dim, dtype=None):
    wrap_dim(dim, len(self._shape))
    return empty_meta(self._shape, _softmax_dtype(self, dtype, "softmax", dim))


@register("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", meta=_softmax_meta)
def softmax(self, dim, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, computed stably (the max is subtracted first)."""
    dt = _softmax_dtype(self, dtype, "softmax", dim)
    d = wrap_dim(dim, len(self._shape))
    a = self._np().astype(dt.np, copy=False)
    if not self._shape:
        return wrap(np.ones((), dt.np), dt)
    e = np.exp(a - np.maximum.reduce(a, axis=d, keepdims=True)) if a.size else a.copy()
    e /= np.add.reduce(e, axis=d, keepdims=True)
    return wrap(e, dt)


@register("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", meta=_softmax_meta)
def log_softmax(self, dim, dtype=None):
    """x - logsumexp(x) along ``dim``."""
    dt = _softmax_dtype(self, dtype, "log_softmax", dim)
    d = wrap_dim(dim, len(self._shape))
    a = self._np().astype(dt.np, copy=False)
    if not self._shape:
        return wrap(np.zeros((), dt.np), dt)
    if not a.size:
        return wrap(a.copy(), dt)
    s = a - np.maximum.reduce(a, axis=d, keepdims=True)
    s -= np.log(np.add.reduce(np.exp(s), axis=d, keepdims=True))
    return wrap(s, dt)


@register("_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
          variants=(), meta=lambda grad_output, output, dim, input_dtype: empty_meta(output._shape, output.dtype))
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    """The gradient of log_softmax in one kernel: grad - exp(output) * grad.sum(dim).

    What ``LogSoftmaxBackward0`` runs when no graph of the backward is recorded (PyTorch's op of the
    same name); the same numpy calls as the formula's ops, so the values are identical.
    """
    g = grad_output._np()
    d = wrap_dim(dim, len(output._shape))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.subtract(g, np.multiply(np.exp(output._np()), np.add.reduce(g, axis=d, dtype=g.dtype, keepdims=True)))
    return wrap(r, grad_output.dtype)


# ---------------------------------------------------------------------------
# x[...] and x[...] = v
# ---------------------------------------------------------------------------
def _as_index_tensor(obj):
    """A list (or numpy array) used as an index, as a tensor: bools stay a mask, everything else
    becomes int64 (``x[[1.]]`` is ``x[[1]]`` in PyTorch; ``x[[]]`` picks nothing)."""
    from .._creation import tensor
    if isinstance(obj, _T):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype == np.bool_:
            return wrap(np.array(obj), D.bool_)
        return wrap(np.asarray(obj).astype(np.int64), D.int64)
    if isinstance(obj, str):
        raise TypeError("new(): invalid data type 'str'")
    t = tensor(obj)
    if t.dtype is not D.bool_ and t.dtype is not D.int64:
        t = wrap(t._np().astype(np.int64), D.int64)
    return t


def _treat_sequence_as_tuple(index) -> bool:
    """NumPy's old rule, kept by PyTorch: a short list holding a sequence, slice, ``...``, None or
    tensor is read as a tuple of indices (``x[[0, slice(None)]]`` is ``x[0, :]``)."""
    if isinstance(index, tuple):
        return True
    if isinstance(index, _T) or not isinstance(index, (list, range, str)):
        return False
    if len(index) >= 32:
        return False
    for obj in index:
        if isinstance(obj, (_T, list, tuple, range, str, _b.slice, np.ndarray)) or obj is Ellipsis or obj is None:
            return True
    return False


def _specified_dims(index: tuple) -> int:
    n = 0
    for it in index:
        if it is None or it is Ellipsis or it is True or it is False:
            continue
        if isinstance(it, _T) and (it.dtype is D.bool_ or it.dtype is D.uint8):
            n += len(it._shape)
        else:
            n += 1
    return n


def _bool_index(value: bool):
    """``x[True]`` / ``x[False]``: an index tensor over a new size-1 dim (advanced indexing)."""
    return wrap(np.zeros(1 if value else 0, np.int64), D.int64)


def _int_index(it):
    """The Python int of an integer index (int, numpy integer or 0-d int64/int32 tensor), else None."""
    if isinstance(it, (int, np.integer)) and not isinstance(it, (bool, np.bool_)):
        return int(it)
    if isinstance(it, _T) and not it._shape and (it.dtype is D.int64 or it.dtype is D.int32):
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
        elif isinstance(it, _b.slice):
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
        elif isinstance(it, _T) and not it._shape and (it.dtype is D.bool_ or it.dtype is D.uint8):
            result = _dispatch("unsqueeze", result, dim)
            add_index(_bool_index(bool(it.item())))
            dim += 1
        elif isinstance(it, (_T, list, tuple, range, np.ndarray, str)):
            t = _as_index_tensor(list(it) if isinstance(it, (tuple, range)) else it)
            add_index(t)
            dim += len(t._shape) if (t.dtype is D.bool_ or t.dtype is D.uint8) else 1
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
    if type(index) is _b.slice:
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
        if isinstance(value, _T):
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
    if not isinstance(value, _T):
        from .._creation import tensor
        value = tensor(value, dtype=self.dtype)
    _dispatch("index_put_", view, advanced, value, False)


def _install(tensor_cls):
    global _T
    _T = tensor_cls
