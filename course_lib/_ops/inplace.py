"""In-place writes: the checks every ``op_`` makes, and the ``op_`` variants themselves.

In PyTorch: ``aten/src/ATen/MemoryOverlap.cpp`` (``assert_no_internal_overlap``,
``assert_no_partial_overlap``), ``c10/core/ScalarType.h`` (``canCast``), the output
checks of ``TensorIterator.cpp`` (shape, castability) and the in-place variants
torchgen generates from ``native_functions.yaml`` (``add_`` beside ``add``).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import broadcast_shapes, broadcast_two, result_type
from .registry import OpDef, register


def can_cast(src: _dtype.dtype, dst: _dtype.dtype) -> bool:
    """PyTorch's ``canCast``: no float -> integer, no non-bool -> bool."""
    if src.category == _dtype._FLOAT and dst.category != _dtype._FLOAT:
        return False
    if src is not _dtype.bool_ and dst is _dtype.bool_:
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
    if not isinstance(other, Tensor) or other._storage is not self._storage or other is self:
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


def check_inplace(self, shape: tuple, dtype: _dtype.dtype) -> None:
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
    out_meta = op.meta
    if op.name == "masked_fill":
        kernel = _masked_fill_inplace_kernel(op.cpu)
    elif op.name == "clamp":
        kernel = _clamp_inplace_kernel(op.cpu)
    else:
        kernel = _inplace_kernel(op.cpu, out_meta)

    def meta(self, *args):
        r = out_meta(self, *args)
        check_inplace(self, r._shape, r.dtype)
        return self

    kernel.__name__ = op.inplace
    kernel.__doc__ = f"In-place version of ``{op.name}``: writes the result into ``self``."
    new = register(schema, meta=meta, variants=("method",), kind=op.kind, is_inplace=True)(kernel)
    new.functional = op
    return new


def _check_overlaps(self, args: tuple) -> None:
    """``self`` may not overlap itself, nor partly overlap a tensor argument it will be computed from."""
    check_no_internal_overlap(self)
    for a in args:
        if isinstance(a, Tensor) and a._storage is self._storage:
            check_no_partial_overlap(self, a)


def _inplace_kernel(out_kernel, out_meta):
    """The kernel of most ``op_``: the checks, ``op`` out of place, the write into ``self``."""
    def kernel(self, *args):
        _check_overlaps(self, args)
        try:
            r = out_kernel(self, *args)
        except NotImplementedError:
            # PyTorch checks the output (shape, castability) before it picks a kernel for the
            # dtype: if that check fails too, its error is the one to report
            # (int64.bitwise_and_(float) is a cast error, not "not implemented for 'Float'")
            m = out_meta(self, *args)
            check_inplace(self, m._shape, m.dtype)
            raise
        write_inplace(self, r)
        return self
    return kernel


def _masked_fill_inplace_kernel(out_kernel):
    """``masked_fill_``: on an expanded ``self`` PyTorch warns (deprecated) and writes anyway."""
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
    return kernel


def _clamp_inplace_kernel(out_kernel):
    """``clamp_``: with number bounds, the cast error names the C++ type (PyTorch's quirk)."""
    def kernel(self, *args):
        if not any(isinstance(a, Tensor) for a in args):
            dt = result_type(self, *args)
            if not can_cast(dt, self.dtype):
                raise RuntimeError(f"result type {dt._tensor_name} can't be cast to the desired output type "
                                   f"{_dtype.c_type_name(self.dtype, 'demangled')}")
        _check_overlaps(self, args)
        write_inplace(self, out_kernel(self, *args))
        return self
    return kernel
