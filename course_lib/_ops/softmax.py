"""``softmax``, ``log_softmax`` and the fused backward of ``log_softmax``.

In PyTorch: ``aten/src/ATen/native/SoftMax.cpp`` (and ``native/cpu/SoftMaxKernel.cpp``,
whose kernel names appear in the dtype errors).
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .common import empty_meta, wrap, wrap_dim
from .registry import register


def _softmax_dtype(self, dtype, name, dim=-1):
    dt = dtype if dtype is not None else self.dtype
    if dt.category != _dtype._FLOAT:
        nd = len(self._shape)
        last = nd == 0 or wrap_dim(dim, nd) == nd - 1
        kernel = f"{name}_lastdim_kernel_impl" if last else f"{name}_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._tensor_name}'")
    return dt


def _softmax_meta(self, dim, dtype=None):
    wrap_dim(dim, len(self._shape))
    return empty_meta(self._shape, _softmax_dtype(self, dtype, "softmax", dim))


@register("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", meta=_softmax_meta, kind="nn")
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


@register("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", meta=_softmax_meta, kind="nn")
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
          variants=(), meta=lambda grad_output, output, dim, input_dtype: empty_meta(output._shape, output.dtype),
          kind="nn")
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
