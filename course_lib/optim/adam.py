"""Adam and AdamW (``torch/optim/adam.py``, ``adamw.py``)."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._ops.common import wrap
from ._single_tensor import check_adam_args
from .optimizer import Optimizer, _use_grad

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba, 2015), following PyTorch's single-tensor implementation step by step:

    .. math::
        m \leftarrow m + (1-\beta_1)(g - m) \quad
        v \leftarrow \beta_2 v + (1-\beta_2) g^2 \quad
        p \leftarrow p - \frac{\gamma}{1-\beta_1^t} \frac{m}{\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon}

    ``weight_decay`` adds λp to the gradient (L2); AdamW instead shrinks p by (1 - γλ) first.
    """

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 amsgrad: bool = False, *, foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None, decoupled_weight_decay: bool = False):
        check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay or self._decoupled)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad._np()
                if group["maximize"]:
                    grad = -grad
                w = p._np()
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = wrap(np.zeros((), np.float32), _dtype.float32)
                    state["exp_avg"] = wrap(np.zeros_like(w), p.dtype)
                    state["exp_avg_sq"] = wrap(np.zeros_like(w), p.dtype)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = wrap(np.zeros_like(w), p.dtype)
                step_t = state["step"]
                step_t._np()[...] += 1
                step = float(step_t._np())
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        w *= 1 - lr * wd
                    else:
                        grad = grad + wd * w
                m = state["exp_avg"]._np()
                v = state["exp_avg_sq"]._np()
                m += (1 - beta1) * (grad - m)      # lerp_(grad, 1 - beta1)
                v *= beta2
                v += (1 - beta2) * grad * grad      # addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = math.sqrt(bias_correction2)
                if group["amsgrad"]:
                    vmax = state["max_exp_avg_sq"]._np()
                    np.maximum(vmax, v, out=vmax)
                    denom = np.sqrt(vmax) / bias_correction2_sqrt + eps
                else:
                    denom = np.sqrt(v) / bias_correction2_sqrt + eps
                w -= step_size * (m / denom)        # addcdiv_(exp_avg, denom, value=-step_size)
                for k in ("exp_avg", "exp_avg_sq", "step"):
                    state[k]._bump_version()
                p._bump_version()
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): p <- p (1 - lr * wd) before the Adam step."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, *, maximize: bool = False, foreach=None, capturable: bool = False,
                 differentiable: bool = False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
