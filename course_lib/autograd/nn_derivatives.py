"""Derivatives of the neural-network ops in ``course_lib/_ops/nn_ops.py``.

Like their PyTorch counterparts (``convolution_backward``, ``max_pool2d_with_indices_backward``,
``nll_loss_backward``, ``embedding_dense_backward``) the formulas call a dedicated
backward kernel.  Those kernels are not themselves differentiable in course_lib, so
``create_graph=True`` through these ops gives no second derivative (PyTorch can).
"""
from __future__ import annotations

from .._ops.dispatcher import dispatch
from .._ops.registry import OPS
from .derivatives import ALL, _shape, derivative


@derivative("convolution", "ConvolutionBackward0", save={"input": ALL, "weight": ALL})
def _convolution(ctx, g):
    has_bias = ctx.needs_input_grad[2] if len(ctx.needs_input_grad) > 2 else False
    gi, gw, gb = dispatch(OPS["convolution_backward"], (g, ctx.input, ctx.weight, ctx.stride, ctx.padding,
                                                        ctx.dilation, ctx.groups, True))
    n = ctx.needs_input_grad
    return (gi if n[0] else None), (gw if n[1] else None), (gb if has_bias else None)


@derivative("max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0", save={"self": ALL, "result1": ALL})
def _max_pool(ctx, g, g_idx=None):
    return dispatch(OPS["max_pool2d_backward"], (g, ctx.self, ctx.result1))  # result1: the indices


@derivative("avg_pool2d", "AvgPool2DBackward0", save={"self": ALL})
def _avg_pool(ctx, g):
    return dispatch(OPS["avg_pool2d_backward"], (g, ctx.self, ctx.kernel_size, ctx.stride, ctx.padding,
                                                 ctx.ceil_mode, ctx.count_include_pad, ctx.divisor_override))


@derivative("nll_loss_forward", "NllLossBackward0",
            save={"self": ALL, "target": ALL, "weight": ALL, "total_weight": ALL})
def _nll(ctx, g, g_tw=None):
    return (dispatch(OPS["nll_loss_backward"], (g, ctx.self, ctx.target, ctx.weight, ctx.reduction,
                                                ctx.ignore_index, ctx.total_weight)), None, None)


@derivative("embedding", "EmbeddingBackward0", save={"indices": ALL})
def _embedding(ctx, g):
    return dispatch(OPS["embedding_dense_backward"], (g, ctx.indices, _shape(ctx, "weight")[0],
                                                      ctx.padding_idx, ctx.scale_grad_by_freq)), None


# ---------------------------------------------------------------------------
# normalization: one fused backward node per layer
# ---------------------------------------------------------------------------
def _composite_norm_backward(x, g, gamma_b, axes, eps, subtract_mean=True):
    """The same formula as the fused kernel, written with differentiable ops (used when
    ``create_graph=True``, so second derivatives work)."""
    if subtract_mean:
        mean = x.mean(axes, keepdim=True)
        xc = x - mean
    else:
        xc = x
    invstd = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    xhat = xc * invstd
    dxhat = g * gamma_b if gamma_b is not None else g
    proj = (dxhat * xhat).mean(axes, keepdim=True)
    if subtract_mean:
        dx = (dxhat - dxhat.mean(axes, keepdim=True) - xhat * proj) * invstd
    else:
        dx = (dxhat - xhat * proj) * invstd
    return dx, xhat


def _creating_graph() -> bool:
    from .._ops.dispatcher import grad_state
    return grad_state.enabled


# result1, result2: the batch's mean and inverse standard deviation; in eval mode the formula uses the
# running statistics instead (saved in training too, as PyTorch does, but not read there: they are
# updated in place by every forward)
@derivative("native_batch_norm", "NativeBatchNormBackward0",
            save={"input": ALL, "weight": ALL, "running_mean": ALL, "running_var": ALL, "result1": ALL,
                  "result2": ALL})
def _batch_norm(ctx, g, *_stats_grads):
    x, w = ctx.input, ctx.weight
    n = ctx.needs_input_grad
    if _creating_graph():
        nd = x.dim()
        axes = (0,) + tuple(range(2, nd))
        shp = (1, -1) + (1,) * (nd - 2)
        wb = w.reshape(shp) if w is not None else None
        if ctx.training:
            dx, xhat = _composite_norm_backward(x, g, wb, axes, ctx.eps)
        else:
            invstd = (ctx.running_var.reshape(shp) + ctx.eps).rsqrt()
            xhat = (x - ctx.running_mean.reshape(shp)) * invstd
            dx = g * invstd * (wb if wb is not None else 1)
        return dx, (g * xhat).sum(axes) if len(n) > 1 and n[1] else None, g.sum(axes) if len(n) > 2 and n[2] else None
    # in training the running statistics are not needed (and may have been updated since)
    rm, rv = (None, None) if ctx.training else (ctx.running_mean, ctx.running_var)
    dx, dw, db = dispatch(OPS["native_batch_norm_backward"], (g, x, w, rm, rv, ctx.result1, ctx.result2,
                                                              ctx.training, ctx.eps))
    return (dx if n[0] else None), (dw if len(n) > 1 and n[1] else None), (db if len(n) > 2 and n[2] else None)


@derivative("native_layer_norm", "NativeLayerNormBackward0",
            save={"input": ALL, "weight": ALL, "bias": ALL, "result1": ALL, "result2": ALL})  # mean, rstd
def _layer_norm(ctx, g, *_stats_grads):
    x, w = ctx.input, ctx.weight
    n = ctx.needs_input_grad
    ns = tuple(ctx.normalized_shape)
    if _creating_graph():
        axes = tuple(range(x.dim() - len(ns), x.dim()))
        lead = tuple(range(x.dim() - len(ns)))
        dx, xhat = _composite_norm_backward(x, g, w, axes, ctx.eps)
        dw = (g * xhat).sum(lead) if lead else g * xhat
        db = g.sum(lead) if lead else g
        return dx, (dw if len(n) > 1 and n[1] else None), (db if len(n) > 2 and n[2] else None)
    dx, dw, db = dispatch(OPS["native_layer_norm_backward"], (g, x, ns, ctx.result1, ctx.result2, w, ctx.bias))
    return (dx if n[0] else None), (dw if len(n) > 1 and n[1] else None), (db if len(n) > 2 and n[2] else None)


@derivative("native_group_norm", "NativeGroupNormBackward0",
            save={"input": ALL, "weight": ALL, "result1": ALL, "result2": ALL})  # mean, rstd
def _group_norm(ctx, g, *_stats_grads):
    x, w = ctx.input, ctx.weight
    n = ctx.needs_input_grad
    N, C, G = ctx.N, ctx.C, ctx.group
    if _creating_graph():
        xg = x.reshape(N, G, -1)
        gg = g.reshape(N, G, C // G, -1)
        wb = w.reshape(1, G, C // G, 1) if w is not None else None
        xg4 = xg.reshape(N, G, C // G, -1)
        dx, xhat = _composite_norm_backward(xg4, gg, wb, (2, 3), ctx.eps)
        xh = xhat.reshape(N, C, -1)
        g3 = g.reshape(N, C, -1)
        return (dx.reshape(x.shape), (g3 * xh).sum((0, 2)) if len(n) > 1 and n[1] else None,
                g3.sum((0, 2)) if len(n) > 2 and n[2] else None)
    dx, dw, db = dispatch(OPS["native_group_norm_backward"], (g, x, ctx.result1, ctx.result2, w, N, C, ctx.HxW, G))
    return (dx if n[0] else None), (dw if len(n) > 1 and n[1] else None), (db if len(n) > 2 and n[2] else None)


@derivative("rms_norm_fused", "RmsNormBackward0", save={"input": ALL, "weight": ALL, "result1": ALL})  # rstd
def _rms_norm(ctx, g, *_stats_grads):
    x, w = ctx.input, ctx.weight
    n = ctx.needs_input_grad
    ns = tuple(ctx.normalized_shape)
    if _creating_graph():
        axes = tuple(range(x.dim() - len(ns), x.dim()))
        lead = tuple(range(x.dim() - len(ns)))
        dx, xhat = _composite_norm_backward(x, g, w, axes, ctx.eps, subtract_mean=False)
        dw = (g * xhat).sum(lead) if lead else g * xhat
        return dx, (dw if len(n) > 1 and n[1] else None)
    dx, dw = dispatch(OPS["rms_norm_backward"], (g, x, ns, ctx.result1, w))
    return (dx if n[0] else None), (dw if len(n) > 1 and n[1] else None)


# ---------------------------------------------------------------------------
# losses with a node of their own (formulas in course_lib ops: create_graph differentiates them again)
# ---------------------------------------------------------------------------
def _loss_scale(ctx, g, grad):
    """``grad`` times the incoming gradient, divided by the element count for reduction='mean'."""
    out = grad * g
    if ctx.reduction == 1:
        out = out / max(grad.numel(), 1)
    return out


@derivative("mse_loss", "MseLossBackward0", save={"self": ALL, "target": ALL})
def _mse_loss(ctx, g):
    gs = _loss_scale(ctx, g, (ctx.self - ctx.target) * 2)
    return gs, -gs


@derivative("binary_cross_entropy", "BinaryCrossEntropyBackward0",
            save={"self": ALL, "target": ALL, "weight": ALL})
def _bce(ctx, g):
    x, t, w = ctx.self, ctx.target, ctx.weight
    gs = (x - t) / ((1 - x) * x).clamp(min=1e-12)
    gt = (1 - x).log().clamp(min=-100) - x.log().clamp(min=-100)
    if w is not None:
        gs, gt = gs * w, gt * w
    return _loss_scale(ctx, g, gs), _loss_scale(ctx, g, gt), None


@derivative("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0",
            save={"self": ALL, "target": ALL, "weight": ALL, "pos_weight": ALL})
def _bce_logits(ctx, g):
    x, t, w, pw = ctx.self, ctx.target, ctx.weight, ctx.pos_weight
    if pw is None:
        gs, gt = x.sigmoid() - t, -x
    else:
        gs = (1 + (pw - 1) * t) * x.sigmoid() - pw * t
        gt = -x - (pw - 1) * _log_sigmoid(x)
    if w is not None:
        gs, gt = gs * w, gt * w
    return _loss_scale(ctx, g, gs), _loss_scale(ctx, g, gt), None, None


def _log_sigmoid(x):
    """log(sigmoid(x)) = -(max(-x, 0) + log(1 + exp(-|x|))), stable for large |x|."""
    return -((-x).clamp(min=0) + ((-x.abs()).exp() + 1).log())


@derivative("smooth_l1_loss", "SmoothL1LossBackward0", save={"self": ALL, "target": ALL})
def _smooth_l1(ctx, g):
    from .. import where
    d = ctx.self - ctx.target
    beta = ctx.beta
    grad = d.sign() if beta == 0 else where(d.abs() < beta, d / beta, d.sign())
    gs = _loss_scale(ctx, g, grad)
    return gs, -gs


@derivative("huber_loss", "HuberLossBackward0", save={"self": ALL, "target": ALL})
def _huber(ctx, g):
    from .. import where
    d = ctx.self - ctx.target
    delta = ctx.delta
    gs = _loss_scale(ctx, g, where(d.abs() < delta, d, d.sign() * delta))
    return gs, -gs
