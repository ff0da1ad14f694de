"""Copies rearranged: ``flip``, and the triangles ``tril``/``triu``.

In PyTorch: ``aten/src/ATen/native/TensorTransformations.cpp`` (``flip``) and
``TriangularOps.cpp`` (``tril``, ``triu``).
"""
from __future__ import annotations

import numpy as np

from .common import empty_meta, wrap, wrap_dims
from .registry import register


def _tri_meta(self, diagonal=0):
    return empty_meta(self._shape, self.dtype)


@register("tril(Tensor self, int diagonal=0) -> Tensor", meta=_tri_meta, kind="transformation")
def tril(self, diagonal=0):
    """Lower triangle (the rest zero) of the last two dims."""
    if len(self._shape) < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return wrap(np.tril(self._np(), diagonal), self.dtype)


@register("triu(Tensor self, int diagonal=0) -> Tensor", meta=_tri_meta, kind="transformation")
def triu(self, diagonal=0):
    """Upper triangle (the rest zero) of the last two dims."""
    if len(self._shape) < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return wrap(np.triu(self._np(), diagonal), self.dtype)


@register("flip(Tensor self, int[] dims) -> Tensor", meta=lambda self, dims: empty_meta(self._shape, self.dtype),
          kind="transformation")
def flip(self, dims):
    """A copy reversed along ``dims``."""
    ds = wrap_dims(dims, len(self._shape))
    if not self._shape:
        return wrap(self._np().copy(), self.dtype)
    return wrap(np.flip(self._np(), ds).copy(), self.dtype)
