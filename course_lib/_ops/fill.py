"""Filling a tensor with one value: ``fill_`` and ``zero_``.

In PyTorch: ``aten/src/ATen/native/Fill.cpp``.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .common import checked_scalar
from .registry import register


@register("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", variants=("method",), is_inplace=True,
          meta=lambda self, value: self, kind="fill")
def fill_(self, value):
    """Set every element to ``value``."""
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{len(value._shape)} dimensions.")
        value = np.asarray(value._np()).astype(self.dtype.np)
    else:
        value = checked_scalar(value, self.dtype)
    self._np()[...] = value
    self._vc.value += 1
    return self


@register("zero_(Tensor(a!) self) -> Tensor(a!)", variants=("method",), is_inplace=True, meta=lambda self: self,
          kind="fill")
def zero_(self):
    """Set every element to zero."""
    self._np()[...] = 0
    self._vc.value += 1
    return self
