"""RMSprop (``torch/optim/rmsprop.py``)."""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._ops.common import wrap
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
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
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
                    state["square_avg"] = wrap(np.zeros_like(w), p.dtype)
                    if momentum > 0:
                        state["momentum_buffer"] = wrap(np.zeros_like(w), p.dtype)
                    if group["centered"]:
                        state["grad_avg"] = wrap(np.zeros_like(w), p.dtype)
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
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss
