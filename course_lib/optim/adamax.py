"""Adamax (``torch/optim/adamax.py``)."""
from __future__ import annotations

import numpy as np

from ._single_tensor import call_closure, check_adam_args, params_with_grad, step_tensor, zeros_state
from .optimizer import Optimizer, _use_grad

__all__ = ["Adamax"]


class Adamax(Optimizer):
    r"""Adamax (Kingma & Ba, 2015): Adam with the infinity norm, following PyTorch's single-tensor step:

    .. math::
        m \leftarrow m + (1-\beta_1)(g - m) \quad
        u \leftarrow \max(\beta_2 u, |g| + \epsilon) \quad
        p \leftarrow p - \frac{\gamma}{1-\beta_1^t} \frac{m}{u}
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False, capturable: bool = False):
        check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
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
                    state["exp_inf"] = zeros_state(p)
                state["step"]._np()[...] += 1
                step = float(state["step"]._np())
                if wd != 0:
                    grad = grad + wd * w
                m, u = state["exp_avg"]._np(), state["exp_inf"]._np()
                m += (1 - beta1) * (grad - m)                  # lerp_(grad, 1 - beta1)
                u *= beta2
                np.maximum(u, np.abs(grad) + eps, out=u)
                clr = lr / (1 - beta1 ** step)
                w += -clr * (m / u)                            # addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
