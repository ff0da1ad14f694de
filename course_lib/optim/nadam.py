"""NAdam (``torch/optim/nadam.py``)."""
from __future__ import annotations

import numpy as np

from ._single_tensor import call_closure, check_adam_args, params_with_grad, step_tensor, zeros_state
from .optimizer import Optimizer, _use_grad

__all__ = ["NAdam"]


class NAdam(Optimizer):
    r"""Adam with Nesterov momentum (Dozat, 2016), following PyTorch's single-tensor step: the momentum
    coefficient μ_t = β₁ (1 - ½ 0.96^{t ψ}) (ψ = ``momentum_decay``) and the product of the μ's (a float32
    ``mu_product`` in the state) weight the gradient and the first moment in the update."""

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        check_adam_args(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = call_closure(closure)
        for group in self.param_groups:
            (beta1, beta2), lr, eps, wd = group["betas"], group["lr"], group["eps"], group["weight_decay"]
            psi = group["momentum_decay"]
            for p, w, grad, state in params_with_grad(self, group):
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["mu_product"] = step_tensor(1.0)
                    state["exp_avg"] = zeros_state(p)
                    state["exp_avg_sq"] = zeros_state(p)
                state["step"]._np()[...] += 1
                step = float(state["step"]._np())
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        w *= 1 - lr * wd
                    else:
                        grad = grad + wd * w
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
                mu_t = state["mu_product"]._np()
                mu_t *= np.float32(mu)                         # a float32 tensor in PyTorch too
                mu_product = float(mu_t)
                m, v = state["exp_avg"]._np(), state["exp_avg_sq"]._np()
                m += (1 - beta1) * (grad - m)
                v *= beta2
                v += (1 - beta2) * grad * grad
                denom = np.sqrt(v / bias_correction2) + eps
                w += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (grad / denom)
                w += (-lr * mu_next / (1.0 - mu_product * mu_next)) * (m / denom)
        return loss
