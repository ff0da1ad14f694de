"""Adagrad (``torch/optim/adagrad.py``)."""
from __future__ import annotations

import numpy as np

from .._ops.common import wrap
from ._single_tensor import call_closure, params_with_grad, step_tensor
from .optimizer import Optimizer, _use_grad

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad (Duchi et al., 2011), following PyTorch's single-tensor implementation:

    .. math::
        s \leftarrow s + g^2 \quad
        p \leftarrow p - \frac{\gamma}{1 + (t-1)\eta} \frac{g}{\sqrt{s} + \epsilon}

    (η is ``lr_decay``).  As in PyTorch the state (``step``, ``sum`` filled with
    ``initial_accumulator_value``) is made for every parameter at construction.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if fused:
            raise RuntimeError("course_lib's Adagrad has no fused implementation")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = step_tensor()
                state["sum"] = wrap(np.full_like(p._np(), initial_accumulator_value), p.dtype)

    @_use_grad
    def step(self, closure=None):
        loss = call_closure(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, wd = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
            for _, w, grad, state in params_with_grad(self, group):
                step_t = state["step"]
                step_t._np()[...] += 1
                step = float(step_t._np())
                if wd != 0:
                    grad = grad + wd * w
                clr = lr / (1 + (step - 1) * lr_decay)
                s = state["sum"]._np()
                s += 1 * grad * grad                            # addcmul_(grad, grad, value=1)
                std = np.sqrt(s)
                std += eps
                w += -clr * (grad / std)                        # addcdiv_(grad, std, value=-clr)
        return loss
