"""Derivatives of the neural-network ops in ``course_lib/_ops/nn_ops.py``.

Like their PyTorch counterparts (``convolution_backward``, ``max_pool2d_with_indices_backward``,
``nll_loss_backward``, ``embedding_dense_backward``) the formulas call a dedicated
backward kernel.  Those kernels are not themselves differentiable in course_lib, so
``create_graph=True`` through these ops gives no second derivative (PyTorch can).
"""
from __future__ import annotations

from .._ops.dispatcher import dispatch
from .._ops.registry import OPS
from .derivatives import ALL, derivative, _shape


@derivative("convolution", "ConvolutionBackward0", save={"input": ALL, "weight": ALL})
def _convolution(ctx, g):
    has_bias = ctx.needs_input_grad[2] if len(ctx.needs_input_grad) > 2 else False
    gi, gw, gb = dispatch(OPS["convolution_backward"], (g, ctx.input, ctx.weight, ctx.stride, ctx.padding,
                                                        ctx.dilation, ctx.groups, True))
    n = ctx.needs_input_grad
    return (gi if n[0] else None), (gw if n[1] else None), (gb if has_bias else None)


def _mp_kernel():
    op = OPS["max_pool2d_with_indices"]
    inner = op.autograd

    def kernel(op_, args):
        out = inner(op_, args)
        if out[0].grad_fn is not None:
            out[0].grad_fn._saved["indices"] = out[1]
        return out
    op.autograd = kernel


@derivative("max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0", save={"self": ALL})
def _max_pool(ctx, g, g_idx=None):
    return dispatch(OPS["max_pool2d_backward"], (g, ctx.self, ctx.indices))


_mp_kernel()


@derivative("avg_pool2d", "AvgPool2DBackward0", save={"self": ALL})
def _avg_pool(ctx, g):
    return dispatch(OPS["avg_pool2d_backward"], (g, ctx.self, ctx.kernel_size, ctx.stride, ctx.padding,
                                                 ctx.ceil_mode, ctx.count_include_pad, ctx.divisor_override))


def _nll_kernel():
    op = OPS["nll_loss_forward"]
    inner = op.autograd

    def kernel(op_, args):
        out = inner(op_, args)
        if out[0].grad_fn is not None:
            out[0].grad_fn._saved["total_weight"] = out[1]
        return out
    op.autograd = kernel


@derivative("nll_loss_forward", "NllLossBackward0", save={"self": ALL, "target": ALL, "weight": ALL})
def _nll(ctx, g, g_tw=None):
    return (dispatch(OPS["nll_loss_backward"], (g, ctx.self, ctx.target, ctx.weight, ctx.reduction,
                                                ctx.ignore_index, ctx.total_weight)), None, None)


_nll_kernel()


@derivative("embedding", "EmbeddingBackward0", save={"indices": ALL})
def _embedding(ctx, g):
    return dispatch(OPS["embedding_dense_backward"], (g, ctx.indices, _shape(ctx, "weight")[0],
                                                      ctx.padding_idx)), None
