"""RAdam (``torch/optim/radam.py``)."""
from __future__ import annotations

import numpy as np

from ._single_tensor import call_closure, check_adam_args, params_with_grad, step_tensor, zeros_state
from .optimizer import Optimizer, _use_grad

__all__ = ["RAdam"]


class RAdam(Optimizer):
    r"""Rectified Adam (Liu et al., 2020), following PyTorch's single-tensor step: while the variance of the
    adaptive term is intractable (ρ_t ≤ 5) the step is plain momentum SGD, γ m̂; afterwards Adam's step scaled by
    the rectification r_t = sqrt((ρ_t-4)(ρ_t-2)ρ_∞ / ((ρ_∞-4)(ρ_∞-2)ρ_t))."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = call_closure(closure)
        for group in self.param_groups:
            (beta1, beta2), lr, eps, wd = group["betas"], group["lr"], group["eps"], group["weight_decay"]
            for p, w, grad, state in params_with_grad(self, group):
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["exp_avg"] = zeros_state(p)
                    state["exp_avg_sq"] = zeros_state(p)
                state["step"]._np()[...] += 1
                step = float(state["step"]._np())
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        w *= 1 - lr * wd
                    else:
                        grad = grad + wd * w
                m, v = state["exp_avg"]._np(), state["exp_avg_sq"]._np()
                m += (1 - beta1) * (grad - m)
                v *= beta2
                v += (1 - beta2) * grad * grad
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = m / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive_lr = bias_correction2 ** 0.5 / (np.sqrt(v) + eps)
                    w -= bias_corrected_exp_avg * lr * adaptive_lr * rect
                else:
                    w -= bias_corrected_exp_avg * lr
        return loss
