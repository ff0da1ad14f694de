"""Copies: ``clone``, ``contiguous``, ``_to_copy`` (what ``.to()`` calls) and ``copy_``.

In PyTorch: ``aten/src/ATen/native/Copy.cpp`` (``copy_``),
``TensorFactories.cpp`` (``clone``), ``TensorConversions.cpp`` (``_to_copy``)
and ``TensorProperties.cpp`` (``contiguous``).
"""
from __future__ import annotations

import numpy as np

from .._parallel import parallel_copy
from .._tensor import Tensor
from .common import broadcast_shapes, broadcast_two, empty_meta, wrap
from .inplace import check_inplace, check_no_internal_overlap, check_no_partial_overlap
from .registry import OPS, register


def _dispatch(name, *args):
    from .dispatcher import dispatch
    return dispatch(OPS[name], args)


def _clone_meta(self, memory_format="preserve_format"):
    return empty_meta(self._shape, self.dtype)


@register("clone(Tensor self, *, MemoryFormat? memory_format=preserve_format) -> Tensor", meta=_clone_meta, kind="copy")
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
    t = Tensor._make(Storage(flat, self.dtype), 0, r.shape, tuple(s // isz for s in r.strides), self.dtype)
    t._np_cache = r
    return t


@register("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
          variants=("method",), kind="composite")
def contiguous(self, memory_format="contiguous_format"):
    """``self`` if already contiguous, else a contiguous copy."""
    if self.is_contiguous():
        return self
    return _dispatch("clone", self, "contiguous_format")


def _to_copy_meta(self, dtype=None, device=None):
    return empty_meta(self._shape, dtype or self.dtype) if device in (None, "meta") else _to_copy(self, dtype, device)


@register("_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None) -> Tensor", variants=(),
          meta=_to_copy_meta, kind="copy")
def _to_copy(self, dtype=None, device=None):
    """A copy converted to ``dtype`` and/or moved to ``device``."""
    dt = dtype or self.dtype
    if device == "meta":
        return empty_meta(self._shape, dt)
    if self._storage.data is None:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    return wrap(self._np().astype(dt.np, copy=True), dt)



def _copy_meta(self, src, non_blocking=False):
    check_inplace(self, src._shape if isinstance(src, Tensor) else (), self.dtype)
    return self


@register("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", variants=("method",),
          meta=_copy_meta, is_inplace=True, kind="copy")
def copy_(self, src, non_blocking=False):
    """Copy ``src``'s values (broadcast and cast) into ``self``."""
    check_no_internal_overlap(self)
    if isinstance(src, Tensor):
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
