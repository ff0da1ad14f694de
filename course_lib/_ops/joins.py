"""Joining tensors: ``cat`` (along an existing dim) and ``stack`` (along a new one).

In PyTorch: ``aten/src/ATen/native/TensorShape.cpp`` (the same file holds the view ops,
which are ``views.py`` here).
"""
from __future__ import annotations

import numpy as np

from .common import empty_meta, result_type, wrap, wrap_dim
from .registry import register


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


@register("cat(Tensor[] tensors, int dim=0) -> Tensor", meta=_cat_meta, variants=("function",), kind="join")
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


@register("stack(Tensor[] tensors, int dim=0) -> Tensor", meta=_stack_meta, variants=("function",), kind="join")
def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dim."""
    d, dt = _stack_check(tensors, dim)
    return wrap(np.stack([t._np() for t in tensors], axis=d, dtype=dt.np), dt)
