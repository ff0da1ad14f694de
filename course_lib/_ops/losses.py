"""Loss ops with a backward node of their own: ``MseLossBackward0``, ``BinaryCrossEntropyBackward0``, ...

In PyTorch: ``aten/src/ATen/native/Loss.cpp`` (``mse_loss``, ``binary_cross_entropy_with_logits``,
``smooth_l1_loss``, ``huber_loss``) and ``LossNLL.cpp``'s neighbour ``BinaryCrossEntropy.cpp``.  Each is an
op in ``native_functions.yaml`` with its own entry in ``derivatives.yaml``, so a loss computed by
``F.mse_loss`` ends in ``MseLossBackward0``, not in the node of its last arithmetic step.  The forward is
one numpy expression; the formulas in ``autograd/nn_derivatives.py`` are written with course_lib ops, so
``create_graph=True`` differentiates them again.

Of the five, only ``binary_cross_entropy_with_logits`` is a ``course_lib.`` function, as in PyTorch
(the others are ``torch._C._nn`` functions there); ``nn.functional`` calls them all.  ``reduction`` is
the enum PyTorch passes down (0 none, 1 mean, 2 sum).  Inputs broadcast against each
other as in PyTorch's ops (``F.mse_loss`` warns first when the shapes differ).
"""
from __future__ import annotations

import numpy as np

from .common import broadcast_shapes, empty_meta, wrap
from .registry import register

__all__ = ["mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss"]


def _reduce(x: np.ndarray, reduction: int) -> np.ndarray:
    if reduction == 1:
        return np.asarray(x.mean() if x.size else np.float64("nan"), dtype=x.dtype)
    if reduction == 2:
        return np.asarray(x.sum(), dtype=x.dtype)
    return np.ascontiguousarray(x)


def _result(x: np.ndarray, self, target):
    from .common import binary_result_type
    return wrap(x, binary_result_type(self, target))


def _loss_meta(self, target, *args):
    from .common import binary_result_type
    reduction = next((a for a in args if isinstance(a, int) and not isinstance(a, bool)), 1)
    shape = broadcast_shapes(self._shape, target._shape) if reduction == 0 else ()
    return empty_meta(shape, binary_result_type(self, target))


def _np2(self, target):
    from .common import binary_result_type
    dt = binary_result_type(self, target).np
    return self._np().astype(dt, copy=False), target._np().astype(dt, copy=False)


@register("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", variants=(),
          meta=_loss_meta, kind="nn")
def mse_loss(self, target, reduction=1):
    """(self - target)^2, reduced."""
    x, t = _np2(self, target)
    d = x - t
    return _result(_reduce(d * d, reduction), self, target)


def _bce_meta(self, target, weight=None, reduction=1):
    return _loss_meta(self, target, reduction)


@register("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
          variants=(), meta=_bce_meta, kind="nn")
def binary_cross_entropy(self, target, weight=None, reduction=1):
    """-w (t log p + (1 - t) log(1 - p)), each log clamped at -100 as in PyTorch."""
    x, t = _np2(self, target)
    with np.errstate(divide="ignore", invalid="ignore"):
        lx = np.maximum(np.log(x), -100)
        l1x = np.maximum(np.log1p(-x), -100)
    loss = -(t * lx + (1 - t) * l1x)
    if weight is not None:
        loss = loss * weight._np()
    return _result(_reduce(loss.astype(x.dtype, copy=False), reduction), self, target)


def _bcel_meta(self, target, weight=None, pos_weight=None, reduction=1):
    return _loss_meta(self, target, reduction)


@register("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
          "Tensor? pos_weight=None, int reduction=1) -> Tensor", variants=("function",), meta=_bcel_meta, kind="nn")
def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None, reduction=1):
    """(1 - t) x + (1 + (pw - 1) t) log(1 + exp(-x)), computed stably, times the weight, reduced."""
    x, t = _np2(self, target)
    log_sig_neg = np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))     # log(1 + exp(-x))
    if pos_weight is not None:
        loss = (1 - t) * x + (1 + (pos_weight._np() - 1) * t) * log_sig_neg
    else:
        loss = (1 - t) * x + log_sig_neg
    if weight is not None:
        loss = loss * weight._np()
    return _result(_reduce(loss.astype(x.dtype, copy=False), reduction), self, target)


@register("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) -> Tensor",
          variants=(), meta=_loss_meta, kind="nn")
def smooth_l1_loss(self, target, reduction=1, beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta = 0: |d|)."""
    x, t = _np2(self, target)
    d = np.abs(x - t)
    loss = d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _result(_reduce(loss.astype(x.dtype, copy=False), reduction), self, target)


@register("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.0) -> Tensor",
          variants=(), meta=_loss_meta, kind="nn")
def huber_loss(self, target, reduction=1, delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    x, t = _np2(self, target)
    d = np.abs(x - t)
    loss = np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _result(_reduce(loss.astype(x.dtype, copy=False), reduction), self, target)
