"""Sorting and selection: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, quantile,
nanquantile, unique, searchsorted, bucketize.

In PyTorch: ``aten/src/ATen/native/Sorting.cpp`` (sort, topk, kthvalue, median, mode, quantile),
``Unique.cpp`` and ``Bucketization.cpp``.  The kernels sort with numpy's stable sort, so
equal elements keep their order (PyTorch's ``stable=True``; with ``stable=False`` PyTorch
may order ties differently).  NaN sorts as the largest value, as in PyTorch.  Ops that
return values and indices return named tuples printed like ``torch.return_types.sort``.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import empty_meta, wrap, wrap_dim
from .reductions import _return_type_fields as return_type
from .registry import register

__all__: list[str] = []

_I64 = _dtype.int64


sort_ret = return_type("sort", ("values", "indices"))
topk_ret = return_type("topk", ("values", "indices"))
kthvalue_ret = return_type("kthvalue", ("values", "indices"))
median_ret = return_type("median", ("values", "indices"))
mode_ret = return_type("mode", ("values", "indices"))


def _argsort(a: np.ndarray, d: int, descending: bool) -> np.ndarray:
    """Stable argsort along ``d``; descending keeps equal elements in their original order (NaN first)."""
    if not descending:
        return np.argsort(a, axis=d, kind="stable")
    # sort the reversed array ascending, then reverse: ties end up in ascending original order
    idx = np.flip(np.argsort(np.flip(a, d), axis=d, kind="stable"), d)
    return (a.shape[d] - 1) - idx


def _reduced(shape: tuple, d: int, keepdim: bool) -> tuple:
    return shape[:d] + (1,) + shape[d + 1:] if keepdim else shape[:d] + shape[d + 1:]


# ---------------------------------------------------------------------------
# sort, argsort, msort
# ---------------------------------------------------------------------------
def _sort_meta(self, dim=-1, descending=False, stable=None):
    wrap_dim(dim, len(self._shape))
    return sort_ret(empty_meta(self._shape, self.dtype), empty_meta(self._shape, _I64))


@register("sort(Tensor self, int dim=-1, bool descending=False, *, bool? stable=None) -> "
          "(Tensor values, Tensor indices)", meta=_sort_meta, kind="indexing")
def sort(self, dim=-1, descending=False, stable=None):
    """Sort along ``dim``: (values, indices) with ``values == self.gather(dim, indices)``."""
    d = wrap_dim(dim, len(self._shape))
    a = self._np()
    if not self._shape:
        return sort_ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _I64))
    idx = _argsort(a, d, descending)
    return sort_ret(wrap(np.take_along_axis(a, idx, axis=d), self.dtype), wrap(idx, _I64))


def _dispatch(name: str, *args):
    from .dispatcher import dispatch
    from .registry import OPS
    return dispatch(OPS[name], args)


@register("argsort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False) -> Tensor",
          kind="composite")
def argsort(self, dim=-1, descending=False, stable=False):
    """The indices that sort ``self`` along ``dim`` (``sort(...).indices``)."""
    return _dispatch("sort", self, dim, descending, stable)[1]


@register("msort(Tensor self) -> Tensor", kind="composite")
def msort(self):
    """Sort along the first dim (``sort(self, 0).values``)."""
    return _dispatch("sort", self, 0, False, None)[0]


# ---------------------------------------------------------------------------
# topk, kthvalue
# ---------------------------------------------------------------------------
def _topk_check(self, k, dim):
    d = wrap_dim(dim, len(self._shape))
    n = self._shape[d] if self._shape else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    if self.dtype is _dtype.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    return d


def _topk_meta(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    d = _topk_check(self, k, dim)
    shape = self._shape[:d] + (k,) + self._shape[d + 1:] if self._shape else ()
    return topk_ret(empty_meta(shape, self.dtype), empty_meta(shape, _I64))


@register("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
          "(Tensor values, Tensor indices)", meta=_topk_meta, kind="indexing")
def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim``, in order (also when ``sorted=False``)."""
    d = _topk_check(self, k, dim)
    a = self._np()
    if not self._shape:
        return topk_ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _I64))
    idx = np.take(_argsort(a, d, largest), np.arange(k), axis=d)
    return topk_ret(wrap(np.take_along_axis(a, idx, axis=d), self.dtype), wrap(idx, _I64))


def _kth_check(self, k, dim):
    d = wrap_dim(dim, len(self._shape))
    n = self._shape[d] if self._shape else 1
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return d


def _kth_meta(self, k, dim=-1, keepdim=False):
    d = _kth_check(self, k, dim)
    shape = _reduced(self._shape, d, keepdim) if self._shape else ()
    return kthvalue_ret(empty_meta(shape, self.dtype), empty_meta(shape, _I64))


def _select_sorted(self, d, pos, keepdim, ret):
    """The element at position ``pos`` of each sorted slice along ``d`` and its index."""
    a = self._np()
    if not self._shape:
        return ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _I64))
    idx = np.take(_argsort(a, d, False), [pos], axis=d)
    vals = np.take_along_axis(a, idx, axis=d)
    if not keepdim:
        idx, vals = np.squeeze(idx, d), np.squeeze(vals, d)
    return ret(wrap(vals, self.dtype), wrap(idx, _I64))


@register("kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
          meta=_kth_meta, kind="reduction")
def kthvalue(self, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element along ``dim`` (``k`` counts from 1) and its index."""
    d = _kth_check(self, k, dim)
    return _select_sorted(self, d, k - 1, keepdim, kthvalue_ret)


# ---------------------------------------------------------------------------
# median, mode
# ---------------------------------------------------------------------------
def _median_check(self, dim, name="median"):
    if self.dtype is _dtype.bool_:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    if dim is None:
        return None
    d = wrap_dim(dim, len(self._shape))
    if self._shape and self._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return d


def _median_meta(self, dim=None, keepdim=False):
    d = _median_check(self, dim)
    if d is None:
        return empty_meta((), self.dtype)
    shape = _reduced(self._shape, d, keepdim) if self._shape else ()
    return median_ret(empty_meta(shape, self.dtype), empty_meta(shape, _I64))


@register("median(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", meta=_median_meta, kind="reduction")
def median(self, dim=None, keepdim=False):
    """The lower median (of all elements, or with ``dim`` a (values, indices) pair); NaN if a NaN is present."""
    d = _median_check(self, dim)
    a = self._np()
    if d is None:
        flat = a.reshape(-1)
        if flat.size == 0:
            return wrap(np.asarray(np.nan, dtype=a.dtype), self.dtype)
        if self.dtype.is_floating_point and np.isnan(flat).any():
            return wrap(np.asarray(np.nan, dtype=a.dtype), self.dtype)
        k = (flat.size - 1) // 2
        return wrap(np.asarray(np.partition(flat, k)[k]), self.dtype)
    if not self._shape:
        return median_ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _I64))
    idx = np.take(_argsort(a, d, False), [(self._shape[d] - 1) // 2], axis=d)
    if self.dtype.is_floating_point:
        # a slice with a NaN has median NaN, at the index of its first NaN
        nan = np.isnan(a)
        has_nan = nan.any(axis=d, keepdims=True)
        if has_nan.any():
            idx = np.where(has_nan, np.argmax(nan, axis=d, keepdims=True), idx)
    vals = np.take_along_axis(a, idx, axis=d)
    if not keepdim:
        idx, vals = np.squeeze(idx, d), np.squeeze(vals, d)
    return median_ret(wrap(vals, self.dtype), wrap(idx, _I64))


def _mode_meta(self, dim=-1, keepdim=False):
    d = _median_check(self, dim, "mode")
    shape = _reduced(self._shape, d, keepdim) if self._shape else ()
    return mode_ret(empty_meta(shape, self.dtype), empty_meta(shape, _I64))


@register("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
          meta=_mode_meta, kind="reduction")
def mode(self, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and its last index."""
    d = _median_check(self, dim, "mode")
    a = self._np()
    if not self._shape:
        return mode_ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _I64))
    moved = np.moveaxis(a, d, -1)
    n = moved.shape[-1]
    rows = moved.reshape(-1, n)
    order = np.argsort(rows, axis=1, kind="stable")
    s = np.take_along_axis(rows, order, axis=1)
    pos = np.arange(n)
    new = s[:, 1:] != s[:, :-1]                         # a run of equal values starts after each True
    start = np.ones(s.shape, bool)
    start[:, 1:] = new
    end = np.ones(s.shape, bool)
    end[:, :-1] = new
    run_start = np.maximum.accumulate(np.where(start, pos, 0), axis=1)
    run_end = np.minimum.accumulate(np.where(end, pos, n)[:, ::-1], axis=1)[:, ::-1]
    best = np.argmax(run_end - run_start, axis=1)[:, None]   # first longest run: the smallest value
    last = np.take_along_axis(run_end, best, axis=1)          # its last element: the largest index
    vals = np.take_along_axis(s, last, axis=1).reshape(moved.shape[:-1])
    idx = np.take_along_axis(order, last, axis=1).reshape(moved.shape[:-1])
    if keepdim:
        vals, idx = np.expand_dims(vals, d), np.expand_dims(idx, d)
    return mode_ret(wrap(vals, self.dtype), wrap(idx, _I64))


# ---------------------------------------------------------------------------
# unique
# ---------------------------------------------------------------------------
def _unique_meta(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    raise NotImplementedError("unique: the output's shape depends on the values, which a meta tensor does not have")


@register("unique(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False, "
          "int? dim=None) -> Tensor", meta=_unique_meta, kind="indexing")
def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct elements (or slices along ``dim``), sorted; optionally the inverse indices and the counts.

    Returns a tensor, or a tuple ``(output, inverse)``, ``(output, counts)`` or ``(output, inverse, counts)``.
    Each NaN counts as distinct, as in PyTorch.  ``sorted=False`` still sorts (PyTorch's CPU kernel does too).
    """
    a = self._np()
    if dim is None:
        out, inv, counts = np.unique(a.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        inv = inv.reshape(self._shape)
    else:
        d = wrap_dim(dim, len(self._shape))
        out, inv, counts = np.unique(a, return_inverse=True, return_counts=True, axis=d, equal_nan=False)
        inv = inv.reshape(-1)
    result = [wrap(out, self.dtype)]
    if return_inverse:
        result.append(wrap(inv.astype(np.int64, copy=False), _I64))
    if return_counts:
        result.append(wrap(counts.astype(np.int64, copy=False), _I64))
    return result[0] if len(result) == 1 else tuple(result)


# ---------------------------------------------------------------------------
# searchsorted, bucketize
# ---------------------------------------------------------------------------
def _search_check(sorted_sequence, self, right, side, sorter):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    bs = sorted_sequence._shape
    vs = self._shape if isinstance(self, Tensor) else ()
    if len(bs) > 1 and (len(vs) != len(bs) or vs[:-1] != bs[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(bs)} and input value tensor {list(vs)}")
    if sorter is not None and sorter._shape != bs:
        raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                           f"tensor {list(bs)}and got sorter tensor {list(sorter._shape)}")
    return right


def _search_meta(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    _search_check(sorted_sequence, self, right, side, sorter)
    return empty_meta(self._shape if isinstance(self, Tensor) else (), _dtype.int32 if out_int32 else _I64)


def _searchsorted(seq: np.ndarray, values: np.ndarray, right: bool) -> np.ndarray:
    """Insertion points of ``values`` in the rows of ``seq`` (1-D, or one row per leading index)."""
    side = "right" if right else "left"
    if seq.ndim <= 1:
        return np.searchsorted(seq, values, side=side)
    # one searchsorted over all rows: replace the values by their ranks among all the numbers,
    # then shift row r's ranks by r * (number of ranks), so that the rows stay sorted one after another
    n = seq.shape[-1]
    rows = int(np.prod(seq.shape[:-1]))
    both = np.concatenate([seq.reshape(-1), values.reshape(-1)])
    _, rank = np.unique(both, return_inverse=True)
    big = int(rank.max()) + 1 if rank.size else 1
    keys = rank[:seq.size].reshape(rows, n) + np.arange(rows)[:, None] * big
    q = rank[seq.size:].reshape(rows, -1) + np.arange(rows)[:, None] * big
    pos = np.searchsorted(keys.reshape(-1), q, side=side) - np.arange(rows)[:, None] * n
    return pos.reshape(values.shape)


@register("searchsorted(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, "
          "str? side=None, Tensor? sorter=None) -> Tensor", meta=_search_meta, variants=("function",),
          kind="indexing")
def searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    """Where each value of ``self`` would go in the sorted last dim of ``sorted_sequence`` to keep it sorted."""
    right = _search_check(sorted_sequence, self, right, side, sorter)
    seq = sorted_sequence._np()
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._np(), axis=-1)
    values = self._np() if isinstance(self, Tensor) else np.asarray(self)
    pos = _searchsorted(seq, values, right)
    dt = _dtype.int32 if out_int32 else _I64
    return wrap(np.asarray(pos).astype(dt.np, copy=False), dt)


def _bucketize_check(boundaries):
    if len(boundaries._shape) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({len(boundaries._shape)})")


def _bucketize_meta(self, boundaries, out_int32=False, right=False):
    _bucketize_check(boundaries)
    return empty_meta(self._shape if isinstance(self, Tensor) else (), _dtype.int32 if out_int32 else _I64)


@register("bucketize(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor",
          meta=_bucketize_meta, variants=("function",), kind="indexing")
def bucketize(self, boundaries, out_int32=False, right=False):
    """The bucket of each value of ``self`` for the sorted 1-D ``boundaries`` (``searchsorted``, roles swapped)."""
    _bucketize_check(boundaries)
    values = self._np() if isinstance(self, Tensor) else np.asarray(self)
    pos = np.searchsorted(boundaries._np(), values, side="right" if right else "left")
    dt = _dtype.int32 if out_int32 else _I64
    return wrap(np.asarray(pos).astype(dt.np, copy=False), dt)


# ---------------------------------------------------------------------------
# nanmedian, quantile, nanquantile
# ---------------------------------------------------------------------------
nanmedian_ret = return_type("nanmedian", ("values", "indices"))


def _nanmedian_meta(self, dim=None, keepdim=False):
    d = _median_check(self, dim, "nanmedian")
    if d is None:
        return empty_meta((), self.dtype)
    shape = _reduced(self._shape, d, keepdim) if self._shape else ()
    return nanmedian_ret(empty_meta(shape, self.dtype), empty_meta(shape, _I64))


@register("nanmedian(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", meta=_nanmedian_meta,
          kind="reduction")
def nanmedian(self, dim=None, keepdim=False):
    """``median`` ignoring NaN: the lower median of the other elements (NaN only where all are NaN)."""
    d = _median_check(self, dim, "nanmedian")
    if not self.dtype.is_floating_point:
        return median.cpu(self, dim, keepdim) if d is None else \
            nanmedian_ret(*median.cpu(self, dim, keepdim))
    a = self._np()
    if d is None:
        flat = a.reshape(-1)
        flat = flat[~np.isnan(flat)]
        if flat.size == 0:
            return wrap(np.asarray(np.nan, dtype=a.dtype), self.dtype)
        k = (flat.size - 1) // 2
        return wrap(np.asarray(np.partition(flat, k)[k]), self.dtype)
    if not self._shape:
        return nanmedian_ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _I64))
    order = _argsort(a, d, False)                                        # NaN sorts last
    count = np.sum(~np.isnan(a), axis=d, keepdims=True)
    idx = np.take_along_axis(order, np.maximum(count - 1, 0) // 2, axis=d)
    vals = np.take_along_axis(a, idx, axis=d)
    if not keepdim:
        idx, vals = np.squeeze(idx, d), np.squeeze(vals, d)
    return nanmedian_ret(wrap(vals, self.dtype), wrap(idx, _I64))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan: bool):
    """PyTorch's quantile_impl with course_lib ops (so autograd goes through sort, gather and lerp):
    sort the slices, rank = q * (count - 1), then pick or interpolate between the two nearest values."""
    name = "nanquantile()" if ignore_nan else "quantile()"
    if self.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{name} input tensor must be either float or double dtype")
    if self.numel() == 0:
        raise RuntimeError(f"{name} input tensor must be non-empty")
    if isinstance(q, Tensor):
        if len(q._shape) > 1:
            raise RuntimeError(f"{name} q must be a scalar or 1D tensor")
        if q.dtype is not self.dtype:
            raise RuntimeError(f"{name} q tensor must be same dtype as the input tensor")
        if q._storage.data is not None:
            qv = q._np()
            if qv.size and not ((qv >= 0) & (qv <= 1)).all():
                raise RuntimeError(f"{name} q values must be in the range [0, 1]")
        one_q = not q._shape
        qt = q
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name} q must be in the range [0, 1] but got {q}")
        one_q = True
        qt = wrap(np.asarray(q, dtype=self.dtype.np), self.dtype)   # 0-d: joins tensors on any device
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name} interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    nd = len(self._shape)
    if dim is None:
        x = _dispatch("reshape", self, (-1,))
    else:
        d = wrap_dim(dim, nd)
        x = _dispatch("movedim", self, d, -1) if nd else _dispatch("reshape", self, (1,))
    s = _dispatch("sort", x, -1, False, None)[0]                         # NaN last
    n = x._shape[-1]
    nan = _dispatch("isnan", x)
    if ignore_nan:   # rank among the non-NaN values; an all-NaN slice reads its first (NaN) value
        count = _dispatch("sum", _dispatch("logical_not", nan), (-1,), True, None)
        last = _dispatch("_to_copy", _dispatch("clamp", _dispatch("sub", count, 1, 1), 0, None), self.dtype)
        ranks = _dispatch("mul", _dispatch("unsqueeze", qt, 0) if qt._shape else qt, last)
    else:            # a slice with a NaN takes rank n - 1, its (last sorted) NaN
        ranks = _dispatch("where", _dispatch("any", nan, (-1,), True), float(n - 1),
                          _dispatch("mul", qt, n - 1))
    if interpolation == "nearest":
        ranks = _dispatch("round", ranks)
    low = _dispatch("floor", ranks)
    below = _dispatch("gather", s, -1, _dispatch("_to_copy", low, _I64))
    if interpolation in ("lower", "nearest"):
        r = below
    else:
        above = _dispatch("gather", s, -1, _dispatch("_to_copy", _dispatch("ceil", ranks), _I64))
        if interpolation == "higher":
            r = above
        else:
            w = 0.5 if interpolation == "midpoint" else _dispatch("sub", ranks, low, 1)
            r = _dispatch("lerp", below, above, w)
    # r: (..., len(q)) or (..., 1) for one q -> (len(q), ...) or (...), then the reduced dims as asked
    r = _dispatch("squeeze", r, -1) if one_q else _dispatch("movedim", r, -1, 0)
    if keepdim:
        lead = () if one_q else r._shape[:1]
        if dim is None:
            r = _dispatch("reshape", r, lead + (1,) * nd)
        elif nd:
            r = _dispatch("unsqueeze", r, d + len(lead))
    return r


@register("quantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation='linear') "
          "-> Tensor", kind="composite")
def quantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    """The ``q``-th quantiles over ``dim`` (all elements by default); NaN where a slice has a NaN."""
    return _quantile(self, q, dim, keepdim, interpolation, False)


@register("nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation='linear') "
          "-> Tensor", kind="composite")
def nanquantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    """``quantile`` ignoring NaN (NaN only where a slice is all NaN)."""
    return _quantile(self, q, dim, keepdim, interpolation, True)
