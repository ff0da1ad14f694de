"""RMSprop (``torch/optim/rmsprop.py``)."""
from __future__ import annotations

import numpy as np

from ._single_tensor import call_closure, params_with_grad, step_tensor, zeros_state
from .optimizer import Optimizer, _use_grad

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""RMSprop (Hinton), following PyTorch's single-tensor implementation step by step:

    .. math::
        v \leftarrow \alpha v + (1-\alpha) g^2 \quad
        p \leftarrow p - \gamma \frac{g}{\sqrt{v} + \epsilon}

    ``centered`` subtracts the square of the running mean of g from v; ``momentum`` keeps a buffer
    b <- μ b + g / (sqrt(v) + ε) and steps by -γ b; ``weight_decay`` adds λp to the gradient.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = call_closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            for p, w, grad, state in params_with_grad(self, group):
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["square_avg"] = zeros_state(p)
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_state(p)
                    if group["centered"]:
                        state["grad_avg"] = zeros_state(p)
                state["step"]._np()[...] += 1
                if wd != 0:
                    grad = grad + wd * w
                v = state["square_avg"]._np()
                v *= alpha
                v += (1 - alpha) * grad * grad                  # addcmul_(grad, grad, value=1 - alpha)
                if group["centered"]:
                    g_avg = state["grad_avg"]._np()
                    g_avg += (1 - alpha) * (grad - g_avg)       # lerp_(grad, 1 - alpha)
                    avg = np.sqrt(v + (-1 * g_avg) * g_avg)
                else:
                    avg = np.sqrt(v)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._np()
                    buf *= momentum
                    buf += grad / avg                           # addcdiv_(grad, avg)
                    w += -lr * buf
                else:
                    w += -lr * (grad / avg)                     # addcdiv_(grad, avg, value=-lr)
        return loss
