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


def _layout_like(self, dtype, device, memory_format, fname: str):
    """An uninitialised tensor shaped like ``self`` laid out as ``memory_format`` asks (``empty_like``'s rule)."""
    from .._creation import _empty_like_layout
    return _empty_like_layout(self, dtype, device, memory_format, fname)


def _copy_into(out, self):
    np.copyto(out._np(), self._np(), casting="unsafe")
    return out


_CHANNELS_LAST = ("channels_last", "channels_last_3d")


def _clone_meta(self, memory_format="preserve_format"):
    if memory_format in _CHANNELS_LAST:
        return _layout_like(self, self.dtype, "meta", memory_format, "clone")
    return empty_meta(self._shape, self.dtype)


@register("clone(Tensor self, *, MemoryFormat? memory_format=preserve_format) -> Tensor", meta=_clone_meta, kind="copy")
def clone(self, memory_format="preserve_format"):
    """A copy with its own storage; a dense tensor keeps its stride order (preserve_format), channels_last
    (4-d) and channels_last_3d (5-d) lay the channels innermost."""
    if memory_format in _CHANNELS_LAST:
        return _copy_into(_layout_like(self, self.dtype, self._storage.device, memory_format, "clone"), self)
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
    """``self`` if already contiguous in ``memory_format``, else a copy laid out that way."""
    if memory_format == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if self.is_contiguous(memory_format=memory_format):
        return self
    return _dispatch("clone", self, memory_format)


def _to_copy_meta(self, dtype=None, device=None, memory_format=None):
    if device not in (None, "meta"):
        return _to_copy(self, dtype, device, memory_format)
    return _layout_like(self, dtype or self.dtype, "meta", memory_format, "to")


@register("_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None, MemoryFormat? memory_format=None) "
          "-> Tensor", variants=(), meta=_to_copy_meta, kind="copy")
def _to_copy(self, dtype=None, device=None, memory_format=None):
    """A copy converted to ``dtype`` and/or moved to ``device``, laid out as ``memory_format`` asks
    (None: preserve, as ``empty_like``)."""
    dt = dtype or self.dtype
    if device == "meta":
        return _to_copy_meta(self, dtype, device, memory_format)
    if self._storage.data is None:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    if memory_format in (None, "preserve_format") and self.is_contiguous():
        return wrap(self._np().astype(dt.np, copy=True), dt)
    return _copy_into(_layout_like(self, dt, device or self._storage.device, memory_format, "to"), self)


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
