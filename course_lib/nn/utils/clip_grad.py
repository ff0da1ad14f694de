"""Gradient clipping (``torch/nn/utils/clip_grad.py``), run without recording a graph."""
from __future__ import annotations

import types
import warnings
from typing import Iterable, Union

from ... import _creation as C
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]

_tensor_or_tensors = Union[Tensor, Iterable[Tensor]]


def get_total_norm(tensors: _tensor_or_tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together: the norm of their individual norms."""
    from ... import linalg, stack
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return C.tensor(0.0)
    with no_grad():
        total_norm = linalg.vector_norm(stack([linalg.vector_norm(t, norm_type) for t in tensors]), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grad_norm_(parameters: _tensor_or_tensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``; returns the total norm
    before clipping.  The factor is min(1, max_norm / (total_norm + 1e-6)), as in PyTorch."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grads_with_norm_(parameters: _tensor_or_tensors, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients in place by min(1, max_norm / (total_norm + 1e-6)) (``total_norm`` computed before,
    e.g. by ``get_total_norm``)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    with no_grad():
        clip_coef_clamped = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped)


def clip_grad_norm(parameters: _tensor_or_tensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated spelling of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _tensor_or_tensors, clip_value: float, foreach=None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    with no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
