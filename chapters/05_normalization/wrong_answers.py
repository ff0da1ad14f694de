"""Planted wrong answers for chapter 05 (normalization): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

import numpy as np


def _axes_05(x):
    return (0,) + tuple(range(2, x.ndim))


def _shape_05(x):
    return (1, -1) + (1,) * (x.ndim - 2)


# ------------------------------------------------------------------ 05.1 moments
def moments_unbiased(x, axes):
    return x.mean(axis=axes, keepdims=True), x.var(axis=axes, ddof=1, keepdims=True)


def moments_no_keepdims(x, axes):
    return x.mean(axis=axes), x.var(axis=axes)


def moments_other_axes(x, axes):
    """Reduces over the axes NOT given (confusing 'normalise over' with 'keep')."""
    axes = tuple(a % x.ndim for a in axes)
    rest = tuple(a for a in range(x.ndim) if a not in axes) or axes
    return x.mean(axis=rest, keepdims=True), x.var(axis=rest, keepdims=True)


def moments_uncentred(x, axes):
    """E[x^2] instead of E[(x - mean)^2]."""
    return x.mean(axis=axes, keepdims=True), (x * x).mean(axis=axes, keepdims=True)


# ------------------------------------------------------------------ 05.2 batch_norm_forward
def _bn_05(x, running_mean, running_var, momentum, eps, training, *, norm_ddof=0, update=True, running_ddof=1,
           swap_momentum=False, eval_batch_stats=False, axes=None, check_n=True):
    axes = _axes_05(x) if axes is None else axes
    shape = _shape_05(x)
    n = x.size // x.shape[1]
    if training or eval_batch_stats:
        if training and check_n and n == 1:
            raise ValueError("Expected more than 1 value per channel when training")
        mean, var = x.mean(axis=axes), x.var(axis=axes, ddof=norm_ddof)
        running = x.var(axis=axes, ddof=running_ddof) if n > running_ddof else x.var(axis=axes) * np.inf
        a, b = (momentum, 1 - momentum) if swap_momentum else (1 - momentum, momentum)
        if training and update:
            new_mean, new_var = a * running_mean + b * mean, a * running_var + b * running
        else:
            new_mean, new_var = running_mean.copy(), running_var.copy()
    else:
        mean, var = running_mean, running_var
        new_mean, new_var = running_mean.copy(), running_var.copy()
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return y, new_mean, new_var


def batch_norm_forward_updates_in_place(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    # right values, but the buffers passed in are updated in place, as a BatchNorm module updates its own,
    # and returned: the caller's arrays change
    y, new_mean, new_var = _bn_05(x, running_mean, running_var, momentum, eps, training)
    running_mean[...] = new_mean
    running_var[...] = new_var
    return y, running_mean, running_var


def batch_norm_forward_unbiased_normalisation(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, norm_ddof=1)


def batch_norm_forward_no_running_update(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, update=False)


def batch_norm_forward_biased_running_var(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, running_ddof=0)


def batch_norm_forward_momentum_swapped(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, swap_momentum=True)


def batch_norm_forward_eval_uses_batch(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, eval_batch_stats=True)


def batch_norm_forward_batch_axis_only(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    """Statistics over dim 0 only (per channel and position): right for (N, C), wrong with spatial dims."""
    if not training:
        return _bn_05(x, running_mean, running_var, momentum, eps, training)
    if x.shape[0] == 1:
        raise ValueError("Expected more than 1 value per channel when training")
    C = x.shape[1]
    mean, var = x.mean(axis=0), x.var(axis=0)
    y = (x - mean) / np.sqrt(var + eps)
    batch_mean = mean.reshape(C, -1).mean(axis=1)
    batch_var = x.var(axis=0, ddof=1).reshape(C, -1).mean(axis=1)
    return (y, (1 - momentum) * running_mean + momentum * batch_mean,
            (1 - momentum) * running_var + momentum * batch_var)


def batch_norm_forward_no_size_check(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _bn_05(x, running_mean, running_var, momentum, eps, training, check_n=False)


# ------------------------------------------------------------------ 05.3 batch_norm_backward
def _bn_backward_05(x, dy, gamma, eps, *, centre=True, project=True, use_gamma=True, swap=False, ddof=0,
                    invstd_factor=True):
    axes = _axes_05(x)
    shape = _shape_05(x)
    mean = x.mean(axis=axes, keepdims=True)
    invstd = 1 / np.sqrt(x.var(axis=axes, ddof=ddof, keepdims=True) + eps)
    xhat = (x - mean) * invstd
    dxhat = dy * gamma.reshape(shape) if use_gamma else dy
    dx = dxhat.copy()
    if centre:
        dx = dx - dxhat.mean(axis=axes, keepdims=True)
    if project:
        dx = dx - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True)
    if invstd_factor:
        dx = dx * invstd
    dgamma, dbeta = (dy * xhat).sum(axis=axes), dy.sum(axis=axes)
    return (dx, dbeta, dgamma) if swap else (dx, dgamma, dbeta)


def batch_norm_backward_no_mean_term(x, dy, gamma, eps=1e-5):
    """Forgets that the mean depends on x: no - mean(dxhat)."""
    return _bn_backward_05(x, dy, gamma, eps, centre=False)


def batch_norm_backward_no_variance_term(x, dy, gamma, eps=1e-5):
    """Forgets that the variance depends on x: no - xhat * mean(dxhat * xhat)."""
    return _bn_backward_05(x, dy, gamma, eps, project=False)


def batch_norm_backward_treats_stats_as_constants(x, dy, gamma, eps=1e-5):
    """dx = dy * gamma * invstd, as in eval mode."""
    return _bn_backward_05(x, dy, gamma, eps, centre=False, project=False)


def batch_norm_backward_no_gamma(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, use_gamma=False)


def batch_norm_backward_param_grads_swapped(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, swap=True)


def batch_norm_backward_unbiased(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, ddof=1)


def batch_norm_backward_no_invstd(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, invstd_factor=False)


def batch_norm_backward_param_grads_over_batch_only(x, dy, gamma, eps=1e-5):
    """dgamma, dbeta summed over dim 0 only: shape (C, *spatial) instead of (C,) once there are spatial dims."""
    dx, _, _ = _bn_backward_05(x, dy, gamma, eps)
    axes = _axes_05(x)
    xhat = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def batch_norm_backward_by_autograd(x, dy, gamma, eps=1e-5):
    """The right arrays, from course_lib's autograd (the task asks for the fused formula, not autograd)."""
    import course_lib as cl
    from course_lib.nn import functional as F

    xt = cl.tensor(x, requires_grad=True)
    g = cl.tensor(gamma, requires_grad=True)
    b = cl.zeros(x.shape[1], dtype=xt.dtype, requires_grad=True)
    F.batch_norm(xt, None, None, g, b, True, 0.1, eps).backward(cl.tensor(dy))
    return xt.grad.numpy(), g.grad.numpy(), b.grad.numpy()


# ------------------------------------------------------------------ 05.4 layer_norm
def _ln_05(x, normalized_shape, weight, bias, eps, *, axes=None, ddof=0, eps_outside=False, check=True):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if check and tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, ...]")
    axes = tuple(range(x.ndim - len(ns), x.ndim)) if axes is None else axes
    mean = x.mean(axis=axes, keepdims=True)
    std = x.std(axis=axes, ddof=ddof, keepdims=True)
    y = (x - mean) / (std + eps if eps_outside else np.sqrt(std ** 2 + eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def layer_norm_over_batch(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """BatchNorm's axis: statistics over the samples (dim 0) instead of within each sample."""
    return _ln_05(x, normalized_shape, weight, bias, eps, axes=(0,))


def layer_norm_last_dim_only(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, axes=(-1,))


def layer_norm_unbiased(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, ddof=1)


def layer_norm_eps_outside_sqrt(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, eps_outside=True)


def layer_norm_no_shape_check(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, check=False)


# ------------------------------------------------------------------ 05.5 group_norm
def _gn_05(x, num_groups, weight, bias, eps, *, interleaved=False, per_position=False, ddof=0, check=True):
    N, C = x.shape[:2]
    if check and C % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups")
    if interleaved:  # channels c, c + G, c + 2G, ... in one group
        g = np.swapaxes(x.reshape(N, C // num_groups, num_groups, -1), 1, 2)
        axes = (2, 3)
    else:
        g = x.reshape(N, num_groups, C // num_groups, -1)
        axes = (2,) if per_position else (2, 3)
    y = (g - g.mean(axis=axes, keepdims=True)) / np.sqrt(g.var(axis=axes, ddof=ddof, keepdims=True) + eps)
    if interleaved:
        y = np.swapaxes(y, 1, 2)
    y = y.reshape(x.shape)
    shape = (1, C) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def group_norm_interleaved_groups(x, num_groups, weight=None, bias=None, eps=1e-5):
    """reshape(N, C // G, G, -1): every G-th channel in a group, not C/G neighbouring ones."""
    return _gn_05(x, num_groups, weight, bias, eps, interleaved=True)


def group_norm_per_position(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Statistics over a group's channels at each position, not over the positions too."""
    return _gn_05(x, num_groups, weight, bias, eps, per_position=True)


def group_norm_unbiased(x, num_groups, weight=None, bias=None, eps=1e-5):
    return _gn_05(x, num_groups, weight, bias, eps, ddof=1)


def group_norm_no_divisibility_check(x, num_groups, weight=None, bias=None, eps=1e-5):
    N, C = x.shape[:2]
    if C % num_groups:
        g = x.reshape(N, num_groups, -1) if x.size % (N * num_groups) == 0 else x.reshape(N, 1, -1)
        return ((g - g.mean(axis=2, keepdims=True)) / np.sqrt(g.var(axis=2, keepdims=True) + eps)).reshape(x.shape)
    return _gn_05(x, num_groups, weight, bias, eps, check=False)


WRONG = {
    "05.1": [moments_unbiased, moments_no_keepdims, moments_other_axes, moments_uncentred],
    "05.2": [batch_norm_forward_updates_in_place, batch_norm_forward_unbiased_normalisation,
             batch_norm_forward_no_running_update,
             batch_norm_forward_biased_running_var, batch_norm_forward_momentum_swapped,
             batch_norm_forward_eval_uses_batch, batch_norm_forward_batch_axis_only,
             batch_norm_forward_no_size_check],
    "05.3": [batch_norm_backward_no_mean_term, batch_norm_backward_no_variance_term,
             batch_norm_backward_treats_stats_as_constants, batch_norm_backward_no_gamma,
             batch_norm_backward_param_grads_swapped, batch_norm_backward_unbiased, batch_norm_backward_no_invstd,
             batch_norm_backward_param_grads_over_batch_only, batch_norm_backward_by_autograd],
    "05.4": [layer_norm_over_batch, layer_norm_last_dim_only, layer_norm_unbiased, layer_norm_eps_outside_sqrt,
             layer_norm_no_shape_check],
    "05.5": [group_norm_interleaved_groups, group_norm_per_position, group_norm_unbiased,
             group_norm_no_divisibility_check],
}
