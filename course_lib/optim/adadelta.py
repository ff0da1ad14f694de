"""Adadelta (``torch/optim/adadelta.py``)."""
from __future__ import annotations

import numpy as np

from ._single_tensor import call_closure, params_with_grad, step_tensor, zeros_state
from .optimizer import Optimizer, _use_grad

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta (Zeiler, 2012), following PyTorch's single-tensor implementation:

    .. math::
        v \leftarrow \rho v + (1-\rho) g^2 \quad
        \Delta = \frac{\sqrt{u + \epsilon}}{\sqrt{v + \epsilon}} g \quad
        u \leftarrow \rho u + (1-\rho) \Delta^2 \quad
        p \leftarrow p - \gamma \Delta
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = call_closure(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, w, grad, state in params_with_grad(self, group):
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["square_avg"] = zeros_state(p)
                    state["acc_delta"] = zeros_state(p)
                state["step"]._np()[...] += 1
                if wd != 0:
                    grad = grad + wd * w
                v, u = state["square_avg"]._np(), state["acc_delta"]._np()
                v *= rho
                v += (1 - rho) * grad * grad
                std = np.sqrt(v + eps)
                delta = np.sqrt(u + eps) / std * grad
                u *= rho
                u += (1 - rho) * delta * delta
                w += -lr * delta
        return loss
