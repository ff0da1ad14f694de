"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (``torch/optim/sgd.py``)."""
from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _use_grad

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""For each parameter p with gradient g:

    .. math::
        g \leftarrow g + \lambda p \qquad
        b \leftarrow \mu b + (1 - \tau) g \;(\text{first step: } b = g) \qquad
        g \leftarrow g + \mu b \text{ (nesterov) or } b \qquad
        p \leftarrow p - \gamma g

    The arithmetic runs on the parameters' numpy views in their own dtype, in the
    same order as PyTorch's single-tensor implementation, so trajectories match.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False, foreach=None,
                 differentiable: bool = False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, mom, damp, wd = group["lr"], group["momentum"], group["dampening"], group["weight_decay"]
            maximize = group["maximize"]
            for p in group["params"]:
                g = p._grad     # (p.grad without the property: parameters are leaves, its warning never applies)
                if g is None:
                    continue
                d_p = g._np()
                if maximize:
                    d_p = -d_p
                w = p._np()
                if wd != 0:
                    d_p = d_p + wd * w
                if mom != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        from .._ops.common import wrap
                        buf = wrap(np.array(d_p, copy=True), p.dtype)
                        state["momentum_buffer"] = buf
                    else:
                        b = buf._np()
                        b *= mom
                        b += (1 - damp) * d_p
                        buf._bump_version()
                    d_p = d_p + mom * buf._np() if group["nesterov"] else buf._np()
                w -= lr * d_p
                p._bump_version()
        return loss
