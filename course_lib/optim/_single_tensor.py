"""What the hand-written optimizers share: the closure call and the per-parameter loop over numpy arrays."""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from .. import _dtype
from .._ops.common import wrap


def check_adam_args(lr: float, eps: float, betas, weight_decay: float) -> None:
    """The Adam family's argument checks (Adam, AdamW, Adamax, NAdam, RAdam), with PyTorch's messages."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def call_closure(closure: Callable | None):
    """Re-evaluate the model with grad mode on (``step`` itself runs under no_grad)."""
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        return closure()


def params_with_grad(optimizer, group: dict) -> Iterator[tuple]:
    """(param, its numpy array, the gradient's array (negated with maximize), its state) for each param that has
    a gradient; versions are bumped after the caller's update (the loop body runs before the bump)."""
    for p in group["params"]:
        if p.grad is None:
            continue
        grad = p.grad._np()
        if group.get("maximize"):
            grad = -grad
        state = optimizer.state[p]
        yield p, p._np(), grad, state
        for t in state.values():
            if hasattr(t, "_bump_version"):
                t._bump_version()
        p._bump_version()


def step_tensor(value: float = 0.0):
    """A float32 0-d tensor, as PyTorch keeps ``step`` (and NAdam's ``mu_product``)."""
    return wrap(np.full((), value, np.float32), _dtype.float32)


def zeros_state(p):
    """A zero buffer shaped and typed like ``p``."""
    return wrap(np.zeros_like(p._np()), p.dtype)
