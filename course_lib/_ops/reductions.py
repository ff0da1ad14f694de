"""Reductions: sum, mean, prod, var/std (and var_mean/std_mean), max/min/argmax/argmin, amax/amin, aminmax,
logsumexp, all/any, count_nonzero, nansum/nanmean, and the running cumsum, cumprod, cummax and cummin.

In PyTorch: ``aten/src/ATen/native/ReduceOps.cpp``.  Each takes ``dim`` (None for
all dims, an int, or a tuple) and ``keepdim``.  Integer and bool inputs of
``sum``/``prod`` give int64; ``mean``/``var`` refuse them.
"""
from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import empty_meta, wrap, wrap_dim, wrap_dims
from .registry import register

_add_reduce = np.add.reduce


def _return_type(name: str):
    """A (values, indices) named tuple printed like ``torch.return_types.max``."""
    return _return_type_fields(name, ("values", "indices"))


def _return_type_fields(name: str, fields: tuple):
    """A named tuple with ``fields`` printed like ``torch.return_types.<name>``."""
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"course_lib.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                               "__module__": "course_lib.return_types"})
    return cls


# torch.return_types.max etc.
max_ret = _return_type("max")
min_ret = _return_type("min")


def _axes(self, dim):
    """numpy axis argument and the reduced dims, from PyTorch's dim (None, int, tuple or [])."""
    nd = len(self._shape)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None, tuple(range(nd))
    if nd == 0:
        ds = wrap_dims(dim, 0)
        return None, ()
    ds = wrap_dims(dim, nd)
    return ds, ds


def _out_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _reduce_meta(out_dtype_fn):
    def meta(self, dim=None, keepdim=False, *rest, **kw):
        _, dims = _axes(self, dim)
        return empty_meta(_out_shape(self._shape, dims, keepdim), out_dtype_fn(self, *rest))
    return meta


def _sum_dtype(self, dtype=None, *rest):
    if dtype is not None:
        return dtype
    return _dtype.int64 if self.dtype.category != _dtype._FLOAT else self.dtype


def _float_only(name):
    def f(self, *rest):
        dt = rest[-1] if rest and isinstance(rest[-1], _dtype.dtype) else None
        if dt is not None:
            if dt.category != _dtype._FLOAT:
                raise RuntimeError(
                    f"{name}(): could not infer output dtype. Optional dtype must be either a floating point or "
                    f"complex dtype. Got: {dt._tensor_name}")
            return dt
        if self.dtype.category != _dtype._FLOAT:
            if name in ("var", "std"):
                raise RuntimeError("std and var only support floating point and complex dtypes")
            raise RuntimeError(
                f"{name}(): could not infer output dtype. Input dtype must be either a floating point or "
                f"complex dtype. Got: {self.dtype._tensor_name}")
        return self.dtype
    return f


def _finish(r, self, axis, dims, keepdim, dt):
    if keepdim and axis is None and len(self._shape):
        r = np.reshape(r, (1,) * len(self._shape))
    return wrap(np.asarray(r), dt)


@register("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          meta=_reduce_meta(_sum_dtype), kind="reduction")
def sum(self, dim=None, keepdim=False, dtype=None):  # noqa: A001
    """Sum over ``dim`` (all dims by default); integers and bools sum to int64."""
    axis, dims = _axes(self, dim)
    dt = _sum_dtype(self, dtype)
    # np.add.reduce is what np.sum calls, without np.sum's Python-level argument handling
    return _finish(_add_reduce(self._np(), axis=axis, dtype=dt.np, keepdims=keepdim), self, axis, dims, keepdim, dt)


@register("mean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          meta=_reduce_meta(_float_only("mean")), kind="reduction")
def mean(self, dim=None, keepdim=False, dtype=None):
    """Average over ``dim``; only floating point inputs (as in PyTorch)."""
    dt = _float_only("mean")(self, dtype)
    axis, dims = _axes(self, dim)
    a = self._np()
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice is nan, silently
        r = np.mean(a, axis=axis, keepdims=keepdim, dtype=dt.np)
    return _finish(r, self, axis, dims, keepdim, dt)


@register("prod(Tensor self, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          meta=_reduce_meta(_sum_dtype), kind="reduction")
def prod(self, dim=None, keepdim=False, dtype=None):
    """Product over one dim (or all)."""
    axis, dims = _axes(self, dim)
    dt = _sum_dtype(self, dtype)
    return _finish(np.prod(self._np(), axis=axis, keepdims=keepdim, dtype=dt.np), self, axis, dims, keepdim, dt)


def _var_meta(self, dim=None, correction=1, keepdim=False):
    _, dims = _axes(self, dim)
    return empty_meta(_out_shape(self._shape, dims, keepdim), _float_only("var")(self))


def _check_nonempty(self, dims, dim_given: bool, name: str, exc=RuntimeError):
    """PyTorch's errors for reducing nothing: no dim given on an empty tensor, or a dim of size 0."""
    if not dim_given:
        if self.numel() == 0:
            raise exc(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                      "Specify the reduction dim with the 'dim' argument.")
        return
    for d in dims:
        if self._shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _var_std(self, dim, correction, keepdim, name, fn):
    dt = _float_only(name)(self)
    axis, dims = _axes(self, dim)
    n = 1
    for d in dims:
        n *= self._shape[d]
    if n - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=4)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = fn(self._np(), axis=axis, ddof=correction, keepdims=keepdim)
    return _finish(r, self, axis, dims, keepdim, dt)


@register("var(Tensor self, int[1]? dim=None, *, Scalar? correction=1, bool keepdim=False) -> Tensor",
          meta=_var_meta, kind="reduction", manual_binding=True)
def var(self, dim=None, correction=1, keepdim=False):
    """Variance with Bessel's ``correction`` (1: unbiased, 0: biased)."""
    return _var_std(self, dim, correction, keepdim, "var", np.var)


@register("std(Tensor self, int[1]? dim=None, *, Scalar? correction=1, bool keepdim=False) -> Tensor",
          meta=_var_meta, kind="reduction", manual_binding=True)
def std(self, dim=None, correction=1, keepdim=False):
    """Standard deviation with Bessel's ``correction``."""
    return _var_std(self, dim, correction, keepdim, "std", np.std)


def _amax_meta(self, dim=(), keepdim=False):
    _, dims = _axes(self, dim)
    return empty_meta(_out_shape(self._shape, dims, keepdim), self.dtype)


def _amax_amin(self, dim, keepdim, fn, name):
    axis, dims = _axes(self, dim)
    _check_nonempty(self, dims, not (dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)), name)
    return _finish(fn(self._np(), axis=axis, keepdims=keepdim), self, axis, dims, keepdim, self.dtype)


@register("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", meta=_amax_meta, kind="reduction")
def amax(self, dim=(), keepdim=False):
    """Largest value over ``dim`` (all dims by default); gradient splits evenly between ties."""
    return _amax_amin(self, dim, keepdim, np.max, "amax")


@register("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", meta=_amax_meta, kind="reduction")
def amin(self, dim=(), keepdim=False):
    """Smallest value over ``dim`` (all dims by default)."""
    return _amax_amin(self, dim, keepdim, np.min, "amin")


def _arg_meta(self, dim=None, keepdim=False):
    if dim is None:
        return empty_meta((1,) * len(self._shape) if keepdim else (), _dtype.int64)
    d = wrap_dim(dim, len(self._shape))
    return empty_meta(_out_shape(self._shape, (d,), keepdim), _dtype.int64)


def _argreduce(self, dim, keepdim, fn, name):
    if self.dtype is _dtype.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    a = self._np()
    if dim is None:
        if self.numel() == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        r = fn(a.reshape(-1))
        if keepdim:
            return wrap(np.full((1,) * len(self._shape), r, dtype=np.int64), _dtype.int64)
        return wrap(np.asarray(r, dtype=np.int64), _dtype.int64)
    d = wrap_dim(dim, len(self._shape))
    if not self._shape:
        return wrap(np.zeros((), np.int64), _dtype.int64)
    if self._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return wrap(np.asarray(fn(a, axis=d, keepdims=keepdim), dtype=np.int64), _dtype.int64)


@register("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", meta=_arg_meta, kind="reduction")
def argmax(self, dim=None, keepdim=False):
    """Index of the largest value (of the flattened tensor when ``dim`` is None); first one on ties."""
    return _argreduce(self, dim, keepdim, _nan_argmax, "argmax")


@register("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", meta=_arg_meta, kind="reduction")
def argmin(self, dim=None, keepdim=False):
    """Index of the smallest value; first one on ties."""
    return _argreduce(self, dim, keepdim, _nan_argmin, "argmin")


def _nan_argmax(a, axis=None, keepdims=False):
    # NaN counts as the maximum, as in PyTorch; numpy's argmax does the same.
    return np.argmax(a, axis=axis, keepdims=keepdims)


def _nan_argmin(a, axis=None, keepdims=False):
    return np.argmin(a, axis=axis, keepdims=keepdims)


def _maxmin_meta(self, dim=None, keepdim=False):
    if dim is None:
        return empty_meta((), self.dtype)
    if isinstance(dim, Tensor):
        from .common import broadcast_two
        return empty_meta(broadcast_two(self._shape, dim._shape), self.dtype)
    d = wrap_dim(dim, len(self._shape))
    shape = _out_shape(self._shape, (d,), keepdim)
    return max_ret(empty_meta(shape, self.dtype), empty_meta(shape, _dtype.int64))


def _maxmin(self, dim, keepdim, reduce, argfn, name, ret):
    if dim is None:
        if self.numel() == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument.")
        return wrap(np.asarray(reduce(self._np())), self.dtype)
    d = wrap_dim(dim, len(self._shape))
    a = self._np()
    if not self._shape:
        return ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _dtype.int64))
    if self._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    idx = argfn(a, axis=d, keepdims=True)
    vals = np.take_along_axis(a, idx, axis=d)
    if not keepdim:
        idx = np.squeeze(idx, axis=d)
        vals = np.squeeze(vals, axis=d)
    return ret(wrap(vals, self.dtype), wrap(idx.astype(np.int64, copy=False), _dtype.int64))


@register("max(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", meta=_maxmin_meta, kind="reduction")
def max(self, dim=None, keepdim=False):  # noqa: A001
    """Largest element; with ``dim``, a (values, indices) pair; ``max(a, b)`` is ``maximum``."""
    if isinstance(dim, Tensor):
        from .pointwise import maximum
        return maximum.cpu(self, dim)
    return _maxmin(self, dim, keepdim, np.max, np.argmax, "max", max_ret)


@register("min(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", meta=_maxmin_meta, kind="reduction")
def min(self, dim=None, keepdim=False):  # noqa: A001
    """Smallest element; with ``dim``, a (values, indices) pair; ``min(a, b)`` is ``minimum``."""
    if isinstance(dim, Tensor):
        from .pointwise import minimum
        return minimum.cpu(self, dim)
    return _maxmin(self, dim, keepdim, np.min, np.argmin, "min", min_ret)


def _lse_meta(self, dim, keepdim=False):
    _, dims = _axes(self, dim)
    dt = self.dtype if self.dtype.category == _dtype._FLOAT else _dtype.get_default_dtype()
    return empty_meta(_out_shape(self._shape, dims, keepdim), dt)


@register("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", meta=_lse_meta, kind="reduction")
def logsumexp(self, dim, keepdim=False):
    """log(sum(exp(x))) over ``dim``, computed stably by subtracting the max first."""
    axis, dims = _axes(self, dim)
    dt = self.dtype if self.dtype.category == _dtype._FLOAT else _dtype.get_default_dtype()
    a = self._np().astype(dt.np, copy=False)
    if a.size == 0:
        with np.errstate(divide="ignore"):
            r = np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdim))
        return _finish(r, self, axis, dims, keepdim, dt)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    if not keepdim:
        r = np.squeeze(r, axis=axis) if axis is not None else r.reshape(())
    return _finish(r, self, axis, dims, keepdim, dt)


def _bool_axes(self, dim):
    """all/any: ``dim=()`` reduces nothing (unlike sum, where it means every dim)."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return (), ()
    return _axes(self, dim)


def _bool_meta(self, dim=None, keepdim=False):
    _, dims = _bool_axes(self, dim)
    result_dtype = _dtype.uint8 if self.dtype is _dtype.uint8 else _dtype.bool_
    return empty_meta(_out_shape(self._shape, dims, keepdim), result_dtype)


def _all_any(self, dim, keepdim, fn):
    axis, dims = _bool_axes(self, dim)
    dt = _dtype.uint8 if self.dtype is _dtype.uint8 else _dtype.bool_   # uint8 in, uint8 out (as in PyTorch)
    return _finish(fn(self._np(), axis=axis, keepdims=keepdim), self, axis, dims, keepdim, dt)


@register("all(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", meta=_bool_meta, kind="reduction")
def all(self, dim=None, keepdim=False):  # noqa: A001
    """True where every element over ``dim`` is non-zero (uint8 inputs give uint8)."""
    return _all_any(self, dim, keepdim, np.all)


@register("any(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", meta=_bool_meta, kind="reduction")
def any(self, dim=None, keepdim=False):  # noqa: A001
    """True where some element over ``dim`` is non-zero (uint8 inputs give uint8)."""
    return _all_any(self, dim, keepdim, np.any)


@register("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", meta=None, kind="reduction")
def cumsum(self, dim, dtype=None):
    """Running sum along ``dim``."""
    dt = _sum_dtype(self, dtype)
    d = wrap_dim(dim, len(self._shape))
    a = self._np()
    return wrap(np.cumsum(a, axis=d, dtype=dt.np) if self._shape else a.astype(dt.np), dt)


def _cumsum_meta(self, dim, dtype=None):
    wrap_dim(dim, len(self._shape))
    return empty_meta(self._shape, _sum_dtype(self, dtype))


cumsum.meta = _cumsum_meta


def _cumprod_meta(self, dim, dtype=None):
    wrap_dim(dim, len(self._shape))
    return empty_meta(self._shape, _sum_dtype(self, dtype))


@register("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", meta=_cumprod_meta, kind="reduction")
def cumprod(self, dim, dtype=None):
    """Running product along ``dim``; integers and bools multiply in int64."""
    dt = _sum_dtype(self, dtype)
    d = wrap_dim(dim, len(self._shape))
    a = self._np()
    return wrap(np.cumprod(a, axis=d, dtype=dt.np) if self._shape else a.astype(dt.np), dt)


def _count_nonzero_meta(self, dim=None):
    _, dims = _axes(self, dim)
    return empty_meta(_out_shape(self._shape, dims, False), _dtype.int64)


@register("count_nonzero(Tensor self, int[1]? dim=None) -> Tensor", meta=_count_nonzero_meta, kind="reduction")
def count_nonzero(self, dim=None):
    """How many elements over ``dim`` (all dims by default) are not zero, as int64."""
    axis, dims = _axes(self, dim)
    r = np.count_nonzero(self._np(), axis=axis)
    return wrap(np.asarray(r, dtype=np.int64), _dtype.int64)


@register("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          meta=_reduce_meta(_sum_dtype), kind="reduction")
def nansum(self, dim=None, keepdim=False, dtype=None):
    """Sum over ``dim`` counting NaN as zero; integers and bools sum to int64."""
    axis, dims = _axes(self, dim)
    dt = _sum_dtype(self, dtype)
    a = self._np()
    if self.dtype.is_floating_point:
        a = np.where(np.isnan(a), 0, a)
    return _finish(_add_reduce(a, axis=axis, dtype=dt.np, keepdims=keepdim), self, axis, dims, keepdim, dt)


def _nanmean_check(self, dtype):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{self.dtype._tensor_name}")


@register("nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          kind="composite")
def nanmean(self, dim=None, keepdim=False, dtype=None):
    """Mean over ``dim`` of the elements that are not NaN: ``nansum / count of non-NaN`` (as in PyTorch)."""
    from .dispatcher import dispatch
    from .registry import OPS
    _nanmean_check(self, dtype)
    not_nan = dispatch(OPS["logical_not"], (dispatch(OPS["isnan"], (self,)),))
    count = dispatch(OPS["sum"], (not_nan, dim, keepdim, None))
    return dispatch(OPS["div"], (dispatch(OPS["nansum"], (self, dim, keepdim, dtype)), count, None))


aminmax_ret = _return_type_fields("aminmax", ("min", "max"))


def _aminmax_check(self, dim):
    if dim is None:
        if self.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        return None, tuple(range(len(self._shape)))
    d = wrap_dim(dim, len(self._shape))
    if self._shape and self._shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return (d if self._shape else None), ((d,) if self._shape else ())


def _aminmax_meta(self, dim=None, keepdim=False):
    _, dims = _aminmax_check(self, dim)
    shape = _out_shape(self._shape, dims, keepdim)
    return aminmax_ret(empty_meta(shape, self.dtype), empty_meta(shape, self.dtype))


@register("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
          meta=_aminmax_meta, kind="reduction")
def aminmax(self, dim=None, keepdim=False):
    """The smallest and the largest value over ``dim`` (all dims by default), as a (min, max) pair."""
    axis, dims = _aminmax_check(self, dim)
    a = self._np()
    lo = _finish(np.min(a, axis=axis, keepdims=keepdim), self, axis, dims, keepdim, self.dtype)
    hi = _finish(np.max(a, axis=axis, keepdims=keepdim), self, axis, dims, keepdim, self.dtype)
    return aminmax_ret(lo, hi)


def _var_mean_meta(self, dim=None, correction=1, keepdim=False):
    _, dims = _axes(self, dim)
    dt = _float_only("var")(self)
    shape = _out_shape(self._shape, dims, keepdim)
    return empty_meta(shape, dt), empty_meta(shape, dt)


def _var_std_mean(self, dim, correction, keepdim, name, fn):
    if self.dtype.category != _dtype._FLOAT:
        raise RuntimeError(f"{name}_mean only support floating point and complex dtypes")
    spread = _var_std(self, dim, correction, keepdim, name, fn)
    axis, dims = _axes(self, dim)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.mean(self._np(), axis=axis, keepdims=keepdim)
    return spread, _finish(m, self, axis, dims, keepdim, self.dtype)


@register("var_mean(Tensor self, int[1]? dim=None, *, Scalar? correction=1, bool keepdim=False) -> (Tensor, Tensor)",
          meta=_var_mean_meta, variants=("function",), kind="reduction", manual_binding=True)
def var_mean(self, dim=None, correction=1, keepdim=False):
    """Variance and mean over ``dim`` in one call, as a plain (var, mean) tuple."""
    return _var_std_mean(self, dim, correction, keepdim, "var", np.var)


@register("std_mean(Tensor self, int[1]? dim=None, *, Scalar? correction=1, bool keepdim=False) -> (Tensor, Tensor)",
          meta=_var_mean_meta, variants=("function",), kind="reduction", manual_binding=True)
def std_mean(self, dim=None, correction=1, keepdim=False):
    """Standard deviation and mean over ``dim`` in one call, as a plain (std, mean) tuple."""
    return _var_std_mean(self, dim, correction, keepdim, "std", np.std)


cummax_ret = _return_type_fields("cummax", ("values", "indices"))
cummin_ret = _return_type_fields("cummin", ("values", "indices"))


def _cummaxmin_meta(ret):
    def meta(self, dim):
        wrap_dim(dim, len(self._shape))
        return ret(empty_meta(self._shape, self.dtype), empty_meta(self._shape, _dtype.int64))
    return meta


def _cummaxmin(self, dim, ufunc, ret):
    """Running max (min) along ``dim`` and the index it came from: the latest of equal values, and a NaN
    stays once seen (PyTorch's cummax_cummin_helper: ``isnan(x) || x >= out`` moves the index)."""
    d = wrap_dim(dim, len(self._shape))
    a = self._np()
    if not self._shape:
        return ret(wrap(a.copy(), self.dtype), wrap(np.zeros((), np.int64), _dtype.int64))
    vals = ufunc.accumulate(a, axis=d)
    moved = a == vals
    if self.dtype.is_floating_point:
        moved |= np.isnan(a)
    pos = np.arange(a.shape[d]).reshape((-1,) + (1,) * (a.ndim - d - 1))
    idx = np.maximum.accumulate(np.where(moved, pos, 0), axis=d)
    return ret(wrap(vals, self.dtype), wrap(idx.astype(np.int64, copy=False), _dtype.int64))


@register("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", meta=_cummaxmin_meta(cummax_ret),
          kind="reduction")
def cummax(self, dim):
    """Running maximum along ``dim`` and the index of each maximum."""
    return _cummaxmin(self, dim, np.maximum, cummax_ret)


@register("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", meta=_cummaxmin_meta(cummin_ret),
          kind="reduction")
def cummin(self, dim):
    """Running minimum along ``dim`` and the index of each minimum."""
    return _cummaxmin(self, dim, np.minimum, cummin_ret)
