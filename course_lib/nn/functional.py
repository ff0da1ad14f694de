"""``nn.functional``: the stateless functions behind the layers.

In PyTorch: ``torch/nn/functional.py``.  Most are a few lines composing
registered ops (so autograd, modes and meta tensors work through them); a few
(convolution, pooling, nll_loss, embedding) call a dedicated op with its own
kernel and derivative.
"""
from __future__ import annotations

import math as _math
import warnings as _warnings
from typing import TYPE_CHECKING

from .. import _dtype
from .._ops.dispatcher import dispatch as _dispatch
from .._ops.registry import OPS as _OPS
from ..amp import autocast_mode as _amp
from . import _reduction as _Reduction

if TYPE_CHECKING:
    from .._tensor import Tensor

del annotations  # the __future__ feature object: not a name of this module's API

__all__ = [
    "linear", "bilinear", "relu", "relu_", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
    "dropout", "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "embedding", "one_hot",
    "mse_loss", "l1_loss", "nll_loss", "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "pad", "flatten", "normalize", "softplus", "elu", "hardtanh", "relu6", "logsigmoid", "smooth_l1_loss",
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "dropout2d", "prelu", "huber_loss",
    "kl_div", "max_pool1d", "avg_pool1d", "interpolate", "upsample", "conv_transpose2d",
    "scaled_dot_product_attention", "embedding_bag", "dropout1d", "softmin", "mish", "hardsigmoid", "hardswish",
    "selu", "celu", "glu", "softsign", "tanhshrink", "threshold", "softshrink", "hardshrink", "cosine_similarity",
    "pairwise_distance", "adaptive_avg_pool1d", "pixel_shuffle", "pixel_unshuffle",
]


def _op(name, *args):
    return _dispatch(_OPS[name], args)


# ---------------------------------------------------------------------------
# linear layers
# ---------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b.  2-d input with a bias is one ``addmm`` (grad_fn AddmmBackward0), as in PyTorch."""
    input, weight, bias = _amp.lower_precision_inputs(input, weight, bias)   # autocast: a listed op
    if input.dim() == 2 and bias is not None:
        return _op("addmm", bias, input, weight.t(), 1, 1)
    out = input.matmul(weight.t())
    if bias is not None:
        out = out + bias
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_k = x1^T W_k x2 + b_k."""
    out = ((input1.unsqueeze(-2).unsqueeze(-2) @ weight.unsqueeze(0)) @ input2.unsqueeze(-2).unsqueeze(-1))
    out = out.squeeze(-1).squeeze(-1)
    return out + bias if bias is not None else out


# ---------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def _float_only(input: Tensor, kernel: str) -> None:
    """PyTorch's dtype dispatch of a floating-point-only activation kernel."""
    if not input.is_floating_point():
        raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{input.dtype._tensor_name}\'')


def _write_into(input: Tensor, fn) -> Tensor:
    """The in-place form of an activation composed of several ops: ``fn(input)`` written into ``input``.

    When autograd records, ``fn`` reads a clone of ``input`` (as PyTorch keeps ``original_self`` for an
    in-place op whose derivative needs the input), so that overwriting ``input`` leaves the values the
    backward needs intact.  The node is ``CopyBackwards`` (PyTorch: the activation's own node, e.g.
    ``SiluBackward0``); the gradient is the same.
    """
    from ..autograd.grad_mode import is_grad_enabled
    src = input.clone() if input.requires_grad and is_grad_enabled() else input
    return input.copy_(fn(src))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x if x > 0 else negative_slope * x."""
    from .. import where
    _float_only(input, "leaky_relu")
    if inplace:
        return _write_into(input, lambda x: where(x > 0, x, x * negative_slope))
    return where(input > 0, input, input * negative_slope)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (Phi the standard normal CDF); ``approximate='tanh'`` uses the tanh formula."""
    if approximate == "tanh":
        return 0.5 * input * (1 + (_math.sqrt(2 / _math.pi) * (input + 0.044715 * input * input * input)).tanh())
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return 0.5 * input * (1 + (input * (1 / _math.sqrt(2))).erf())


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    _float_only(input, "silu")
    if inplace:
        return _write_into(input, lambda x: x * x.sigmoid())
    return input * input.sigmoid()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""
    from .. import where
    bx = input * beta
    return where(bx > threshold, input, (bx.clamp(max=threshold).exp() + 1).log() / beta)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x if x > 0 else alpha * (exp(x) - 1)."""
    from .. import where
    _float_only(input, "elu")

    def f(x):
        return where(x > 0, x, (x.clamp(max=0).exp() - 1) * alpha)
    return _write_into(input, f) if inplace else f(input)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]; the gradient is 1 strictly inside and 0 at and beyond the bounds
    (PyTorch's ``hardtanh_backward``; ``clamp``'s gradient is 1 at the bounds)."""
    from .. import where
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.is_floating_point():  # the bounds are cast to the integer type (truncated), as in PyTorch
        lo, hi = int(min_val), int(max_val)
        return input.clamp_(lo, hi) if inplace else input.clamp(lo, hi)

    def f(x):
        return where(x <= min_val, min_val, where(x >= max_val, max_val, x))
    return _write_into(input, f) if inplace else f(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): ``hardtanh(x, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    return -softplus(-input)


def _softmax_dim(ndim: int, stacklevel: int) -> int:
    _warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as "
                  "an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x_i) / sum_j exp(x_j) along ``dim``."""
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    return _op("softmax", input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(x)), computed stably."""
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    return _op("log_softmax", input, dim, dtype)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``."""
    norm = (input.abs() ** p).sum(dim, keepdim=True) ** (1.0 / p)
    return input / norm.clamp(min=eps)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) (training only)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if not input.is_floating_point():
        raise RuntimeError(f"result type Float can't be cast to the desired output type {input.dtype._tensor_name}")

    def f(x):
        if p == 1.0:
            return x * 0
        from .._creation import empty_like
        mask = empty_like(x).bernoulli_(1 - p)
        return x * mask * (1.0 / (1 - p))
    return _write_into(input, f) if inplace else f(input)


# ---------------------------------------------------------------------------
# convolution and pooling
# ---------------------------------------------------------------------------
def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _same_padding(weight_spatial, dilation, n):
    pads = []
    for k, d in zip(weight_spatial, _ntuple(dilation, n)):
        total = d * (k - 1)
        if total % 2:
            return None
        pads.append(total // 2)
    return tuple(pads)


def _conv(input, weight, bias, stride, padding, dilation, groups, n):
    if input.dim() != n + 2:
        unbatched = input.dim() == n + 1
        if not unbatched:
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to conv{n}d, but got "
                               f"input of size: {list(input.shape)}")
        out = _conv(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, n)
        return out.squeeze(0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            if any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
            sym = _same_padding(weight.shape[2:], dilation, n)
            if sym is None:
                # asymmetric: pad the input by hand (extra on the right, as PyTorch does)
                pads = []
                for k, d in reversed(list(zip(weight.shape[2:], _ntuple(dilation, n)))):
                    total = d * (k - 1)
                    pads += [total // 2, total - total // 2]
                input = pad(input, pads)
                padding = 0
            else:
                padding = sym
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
    return _op("convolution", input, weight, bias, _ntuple(stride, n), _ntuple(padding, n), _ntuple(dilation, n),
               False, (0,) * n, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-d convolution: ``F.conv2d`` -> the registry's ``convolution`` op -> the im2col CPU kernel."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-d convolution (same path as conv2d)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum of each window."""
    if stride is None:
        stride = ()
    out, idx = _op("max_pool2d_with_indices", input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """The mean of each window."""
    if stride is None:
        stride = ()
    return _op("avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output size: window i spans [floor(i*H/o), ceil((i+1)*H/o))."""
    H, W = input.shape[-2:]
    oh, ow = _ntuple(output_size, 2)
    oh = H if oh is None else oh
    ow = W if ow is None else ow
    if H % oh == 0 and W % ow == 0:
        kh, kw = H // oh, W // ow
        return avg_pool2d(input, (kh, kw), (kh, kw))
    from .. import stack
    rows = []
    for i in range(oh):
        h0, h1 = (i * H) // oh, -((-(i + 1) * H) // oh)
        cols = []
        for j in range(ow):
            w0, w1 = (j * W) // ow, -((-(j + 1) * W) // ow)
            cols.append(input[..., h0:h1, w0:w1].mean((-2, -1)))
        rows.append(stack(cols, -1))
    return stack(rows, -2)


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last dims: ``pad = (left, right, top, bottom, ...)`` (constant mode)."""
    if mode != "constant":
        raise NotImplementedError(f"course_lib's F.pad supports mode='constant' only, got {mode!r}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    from .. import cat, full
    out = input
    nd = input.dim()
    for k in range(len(pad) // 2):
        d = nd - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        parts = []
        if lo > 0:
            s = list(out.shape)
            s[d] = lo
            parts.append(full(s, value or 0, dtype=input.dtype, device=input.device))
        core = out
        if lo < 0:
            core = core.narrow(d, -lo, core.shape[d] + lo)
        if hi < 0:
            core = core.narrow(d, 0, core.shape[d] + hi)
        parts.append(core)
        if hi > 0:
            s = list(out.shape)
            s[d] = hi
            parts.append(full(s, value or 0, dtype=input.dtype, device=input.device))
        out = cat(parts, d) if len(parts) > 1 else core
    return out


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return input.flatten(start_dim, end_dim)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``.

    ``max_norm``: first rescale, in place and without recording a gradient, the rows ``input`` names whose
    ``norm_type``-norm exceeds it (``embedding_renorm_``).  ``scale_grad_by_freq``: divide each row's gradient
    by how often its index occurs in ``input``.  ``sparse=True`` is refused (no sparse tensors here).
    """
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        from ..autograd.grad_mode import no_grad
        input = input.contiguous()
        with no_grad():
            _op("embedding_renorm_", weight, input, max_norm, norm_type)
    return _op("embedding", weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The sum, mean or max of the embedding rows of each bag, without materialising each bag separately.

    Bags: the rows of a 2-d ``input``, or the slices of a 1-d ``input`` starting at ``offsets``.  ``padding_idx``
    entries are left out of their bag; an empty bag gives zeros.  Sum and mean are one matrix product of a
    (bags x entries) weighting matrix with the looked-up rows; max gathers each bag into a padded row and takes
    its ``amax``.  (PyTorch has a dedicated ``embedding_bag`` kernel; the values and gradients are the same.)
    """
    import numpy as np

    from .. import tensor as _tensor
    if weight.dtype is _dtype.int64 and input.is_floating_point():
        _warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, input, "
                       "...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it must "
                         f"have the same shape as the input ({input.shape})".replace("course_lib.Size", "torch.Size"))
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}"
                             .replace("course_lib._tensor", "torch"))
        n_bags, length = input.shape
        fixed_length = length > 0
        starts = np.arange(0, input.numel(), max(length, 1))[:n_bags]
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        fixed_length = False
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = offsets.numpy().astype(np.int64)
        if include_last_offset:
            starts = starts[:-1]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if sparse or scale_grad_by_freq:
        raise NotImplementedError("course_lib's embedding_bag has no sparse gradients and no scale_grad_by_freq")
    rows = embedding(input, weight, max_norm=max_norm, norm_type=norm_type)      # (entries, dim)
    if fixed_length and padding_idx is None:  # equal bags, all entries kept: a reduction over a reshape
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.unsqueeze(-1)
        rows = rows.reshape(n_bags, length, weight.shape[1])
        return rows.sum(1) if mode == "sum" else rows.mean(1) if mode == "mean" else rows.amax(1)
    idx = input.numpy().astype(np.int64)
    n, n_bags = idx.shape[0], starts.shape[0]
    bag = np.searchsorted(starts, np.arange(n), side="right") - 1                  # each entry's bag
    keep = bag >= 0
    if padding_idx is not None:
        keep &= idx != (padding_idx if padding_idx >= 0 else weight.shape[0] + padding_idx)
    if mode == "max":
        counts = np.bincount(bag[keep], minlength=n_bags)
        width = max(int(counts.max(initial=0)), 1)
        slot = np.zeros((n_bags, width), np.int64)
        filled = np.zeros((n_bags, width), bool)
        pos = np.flatnonzero(keep)  # the kept entries, bag by bag: the rank within a bag is a running count
        rank = np.arange(pos.shape[0]) - np.concatenate(([0], np.cumsum(counts)))[bag[pos]]
        slot[bag[pos], rank] = pos
        filled[bag[pos], rank] = True
        gathered = rows.index_select(0, _tensor(slot.reshape(-1), device=rows.device)).reshape(n_bags, width, -1)
        mask = _tensor(~filled, device=rows.device).unsqueeze(-1)
        out = gathered.masked_fill(mask, float("-inf")).amax(1)
        return out.masked_fill(_tensor(counts == 0, device=rows.device).unsqueeze(-1), 0.0)
    matrix = np.zeros((n_bags, n), dtype=weight.dtype.np)
    matrix[bag[keep], np.flatnonzero(keep)] = 1.0
    if mode == "mean":
        counts = matrix.sum(1, keepdims=True)
        matrix = matrix / np.maximum(counts, 1)
    bags = _tensor(matrix, device=rows.device)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(-1)
    return bags.matmul(rows)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Integer class labels to one-hot int64 vectors."""
    from .. import arange
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1
    return (tensor.unsqueeze(-1) == arange(num_classes)).long()


# ---------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------
def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _red(reduction: str) -> int:
    """The reduction enum a loss op takes (PyTorch's ``_Reduction.get_enum``)."""
    r = _RED.get(reduction)
    if r is None:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return r


def _check_size(input, target):
    if target.shape != input.shape:
        _warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.".replace("course_lib.Size", "torch.Size"), UserWarning, stacklevel=3)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error; with ``weight`` (the input's size), the weighted sum over the sum of the weights."""
    input, target = _amp.fp32_inputs(input, target)   # autocast: a float32-list op
    _check_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if weight is None:
        return _op("mse_loss", input, target, _red(reduction))     # MseLossBackward0, as in PyTorch
    d = input - target
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    wse = d * d * weight
    if reduction == "none":
        return wse
    if reduction == "sum":
        return wse.sum()
    if reduction == "mean":
        return wse.sum() / weight.sum()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Mean absolute error."""
    input, target = _amp.fp32_inputs(input, target)   # autocast: a float32-list op
    _check_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; d = input - target."""
    input, target = _amp.fp32_inputs(input, target)   # autocast: a float32-list op
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if beta == 0.0:          # as PyTorch: plain L1 (its node is l1_loss's)
        return l1_loss(input, target, reduction=reduction)
    return _op("smooth_l1_loss", input, target, _red(reduction), beta)     # SmoothL1LossBackward0


_RED = {"none": 0, "mean": 1, "sum": 2}


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of the target classes (input holds log-probabilities)."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if reduction not in _RED:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() >= 2 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    out, _ = _op("nll_loss_forward", input, target, weight, _RED[reduction], ignore_index)
    return out


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim (1, or 0 for 1-d input), then nll_loss; or soft targets (probabilities).

    ``label_smoothing`` mixes the one-hot target with the uniform distribution.
    """
    input, target, weight = _amp.fp32_inputs(input, target, weight)   # autocast: float32
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if label_smoothing < 0.0 or label_smoothing > 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    cdim = 0 if input.dim() == 1 else 1
    logp = log_softmax(input, cdim)
    C = input.shape[cdim]
    if target.is_floating_point():
        # class probabilities
        t = target * (1 - label_smoothing) + label_smoothing / C if label_smoothing else target
        w = weight.reshape([-1] + [1] * (input.dim() - cdim - 1)) if weight is not None else None
        loss = -(logp * t * w if w is not None else logp * t).sum(cdim)
        if reduction == "mean":
            return loss.sum() / (loss.numel() if input.dim() > 1 else 1) if input.dim() > 1 else loss
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    # smoothing term: -sum_c w_c * logp_c / C, over non-ignored targets
    w = weight.reshape([-1] + [1] * (input.dim() - cdim - 1)) if weight is not None else None
    smooth = -(logp * w if w is not None else logp).sum(cdim)
    valid = (target != ignore_index)
    smooth = smooth * valid
    if reduction == "none":
        s = smooth
    elif reduction == "sum":
        s = smooth.sum()
    else:
        if weight is not None:
            from .. import where, zeros_like
            tw = weight[where(valid, target, zeros_like(target))] * valid
            s = smooth.sum() / tw.sum()
        else:
            s = smooth.sum() / valid.sum()
    return nll * (1 - label_smoothing) + s * (label_smoothing / C)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """-(t log p + (1 - t) log(1 - p)), with the logs clamped at -100 as in PyTorch."""
    input, target, weight = _amp.fp32_inputs(input, target, weight)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.".replace("course_lib.Size",
                                                                                         "torch.Size"))
    if bool(((input < 0) | (input > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    return _op("binary_cross_entropy", input, target, weight, _red(reduction))   # BinaryCrossEntropyBackward0


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """BCE on logits, computed stably: (1 - t) x + (1 + (pw - 1) t) * log(1 + exp(-x))."""
    input, target, weight, pos_weight = _amp.fp32_inputs(input, target, weight, pos_weight)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})"
                         .replace("course_lib.Size", "torch.Size"))
    return _op("binary_cross_entropy_with_logits", input, target, weight, pos_weight, _red(reduction))


# ---------------------------------------------------------------------------
# normalization (kernels in course_lib/_ops/normalization.py)
# ---------------------------------------------------------------------------
def _verify_batch_size(size) -> None:
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"torch.Size({list(size)})")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims.

    Training: batch statistics (biased variance), and running_mean/var updated in place with
    ``momentum`` (running_var with the unbiased variance).  Eval: the running statistics.
    """
    if training:
        _verify_batch_size(tuple(input.shape))
    elif running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    out, _, _ = _op("native_batch_norm", input, weight, bias, running_mean, running_var, training, momentum, eps)
    return out


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims of each sample (same in train and eval)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    out, _, _ = _op("native_layer_norm", input, tuple(normalized_shape), weight, bias, eps)
    return out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise each sample over groups of channels (and the spatial dims)."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    N, C = input.shape[0], input.shape[1]
    if C % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    HxW = input.numel() // (N * C) if N * C else 0
    out, _, _ = _op("native_group_norm", input, weight, bias, N, C, HxW, num_groups, eps)
    return out


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims.

    As in PyTorch, this is batch norm on the input viewed as (1, N*C, *spatial); running statistics
    (if tracked) are the average over the batch of the per-instance ones.
    """
    if use_input_stats:
        _verify_spatial_size(tuple(input.shape))
    N, C = input.shape[0], input.shape[1]
    x = input.reshape((1, N * C) + tuple(input.shape[2:]))
    rm = running_mean.repeat(N) if running_mean is not None else None
    rv = running_var.repeat(N) if running_var is not None else None
    w = weight.repeat(N) if weight is not None else None
    b = bias.repeat(N) if bias is not None else None
    out, _, _ = _op("native_batch_norm", x, w, b, rm, rv, use_input_stats, momentum, eps)
    if running_mean is not None and use_input_stats:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            running_mean.copy_(rm.view(N, C).mean(0))
            running_var.copy_(rv.view(N, C).mean(0))
    return out.view(tuple(input.shape))


def _verify_spatial_size(size) -> None:
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size torch.Size({list(size)})")


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (eps defaults to the dtype's machine epsilon)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if eps is None:
        import numpy as np
        eps = float(np.finfo(input.dtype.np).eps)
    out, _ = _op("rms_norm_fused", input, tuple(normalized_shape), weight, eps)
    return out


# ---------------------------------------------------------------------------
# more layers, composed of the ops above (autograd comes from the ops)
# ---------------------------------------------------------------------------
def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (``input[n, c]``) with probability ``p``, scaling the rest by 1 / (1 - p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        _warnings.warn(f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated and will result "
                       "in an error in a future release. To retain the behavior and silence this warning, please use "
                       "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                       "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                       "inputs).", stacklevel=2)
    if inp_dim == 3:
        _warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                       "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                       "This behavior will change in a future release to interpret the input as one without a batch "
                       "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                       "switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Zero whole channels ``input[n, c]`` with probability ``p``; scale the others by 1 / (1 - p)."""
    if not training or p == 0.0:
        return input

    def f(x):
        if p == 1.0:
            return x * 0
        from .._creation import empty
        mask = empty(tuple(x.shape[:2]) + (1,) * (x.dim() - 2), dtype=x.dtype, device=x.device).bernoulli_(1 - p)
        return x * (mask * (1.0 / (1 - p)))
    return _write_into(input, f) if inplace else f(input)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability ``p``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.dim() == 3:
        return _feature_dropout(input, p, training, inplace)
    out = _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)  # (C, L): one sample
    return input.copy_(out) if inplace and out is not input else out


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x if x > 0 else a * x, with one learned ``a`` per channel (dim 1) or one shared."""
    input, weight = _amp.lower_precision_inputs(input, weight)
    from .. import where
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if input.dim() == 0 or n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape((n,) + (1,) * (input.dim() - 2))
    return where(input > 0, input, weight * input)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); d = input - target."""
    input, target = _amp.fp32_inputs(input, target)   # autocast: a float32-list op
    from .. import where
    _check_size(input, target)
    if weight is None:
        return _op("huber_loss", input, target, _red(reduction), delta)     # HuberLossBackward0
    d = (input - target).abs()
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Pointwise KL divergence t (log t - x) of log-probabilities ``input`` from ``target``.

    ``log_target``: ``target`` holds log-probabilities.  ``reduction='batchmean'`` divides the sum by the batch
    size (the mathematical KL divergence); ``'mean'`` divides by the number of elements (and warns, as PyTorch).
    """
    input, target = _amp.fp32_inputs(input, target)
    from .. import where
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    elif reduction == "mean":
        _warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                       "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                       "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                       stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:  # xlogy(t, t) - t x: 0 where t == 0 (log of 1 there keeps the gradient finite)
        loss = target * where(target > 0, target, 1).log() - target * input
    if reduction == "batchmean":
        out = loss.sum()
        return out / input.shape[0] if input.dim() != 0 else out
    return _reduce(loss, reduction)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum of each window along the last dim: ``max_pool2d`` over a height of 1."""
    k, s, p, d = (_ntuple(v, 1)[0] for v in (kernel_size, kernel_size if stride is None or stride == () else stride,
                                             padding, dilation))
    out, idx = _op("max_pool2d_with_indices", input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    return (out.squeeze(-2), idx.squeeze(-2)) if return_indices else out.squeeze(-2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window along the last dim: ``avg_pool2d`` over a height of 1."""
    k, s, p = (_ntuple(v, 1)[0] for v in (kernel_size, kernel_size if stride is None or stride == () else stride,
                                          padding))
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def _source_index(out_size: int, in_size: int, scale: float | None, align_corners: bool, nearest: str | None):
    """Each output position's source coordinate along one dim (numpy), as PyTorch's upsample kernels compute it
    (``nearest``: 'nearest' floors dst * ratio, 'nearest-exact' floors (dst + 0.5) * ratio, in float32)."""
    import numpy as np
    dst = np.arange(out_size, dtype=np.float64)
    if nearest:
        ratio = np.float32(in_size / out_size if scale is None else 1.0 / scale)
        offset = np.float32(0.5 if nearest == "nearest-exact" else 0.0)
        src = np.floor((dst.astype(np.float32) + offset) * ratio).astype(np.int64)
        return np.minimum(src, in_size - 1)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return dst * ratio
    ratio = in_size / out_size if scale is None else 1.0 / scale
    return np.maximum((dst + 0.5) * ratio - 0.5, 0.0)


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims (all but the first two): ``'nearest'`` / ``'nearest-exact'`` (any of 1-3 spatial
    dims), ``'linear'`` (3-d input) or ``'bilinear'`` (4-d input) by gathering source rows (``index_select``) and
    blending them; ``'area'`` (4-d input) is ``adaptive_avg_pool2d``."""
    from .. import tensor as _tensor
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)) and len(size) != dim:
            raise ValueError("Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please provide "
                             "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             "format.")
        out_sizes = list(_ntuple(size, dim))
        scales = [None] * dim
    else:
        if isinstance(scale_factor, (list, tuple)) and len(scale_factor) != dim:
            raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                             f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             "scale_factor in (s1, s2, ...,sK) format.")
        factors = _ntuple(scale_factor, dim)
        out_sizes = [int(_math.floor(float(input.shape[i + 2]) * factors[i])) for i in range(dim)]
        scales = [None if recompute_scale_factor else float(f) for f in factors]
    if antialias:
        raise NotImplementedError("course_lib's interpolate has no antialias")
    linear_modes = {"linear": 1, "bilinear": 2}
    if mode in ("nearest", "nearest-exact"):
        out = input
        for i in range(dim):
            idx = _source_index(out_sizes[i], input.shape[i + 2], scales[i], False, mode)
            out = out.index_select(i + 2, _tensor(idx, device=input.device))
        return out
    if mode == "area" and dim == 2:
        return adaptive_avg_pool2d(input, out_sizes)
    if mode not in linear_modes:
        raise NotImplementedError("course_lib's interpolate supports modes nearest, nearest-exact, linear, bilinear "
                                  f"and area (4-d input), not {mode!r}")
    if linear_modes[mode] != dim:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {linear_modes[mode] + 2}D input")
    import numpy as np
    out = input
    for i in range(dim):
        in_size = input.shape[i + 2]
        src = _source_index(out_sizes[i], in_size, scales[i], align_corners, None)
        i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
        i1 = np.minimum(i0 + 1, in_size - 1)
        shape = [1] * out.dim()
        shape[i + 2] = out_sizes[i]
        lam = _tensor((src - i0).reshape(shape), dtype=input.dtype, device=input.device)
        lo = out.index_select(i + 2, _tensor(i0, device=input.device))
        hi = out.index_select(i + 2, _tensor(i1, device=input.device))
        out = lo + (hi - lo) * lam
    return out


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of ``interpolate``."""
    _warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The gradient of conv2d with respect to its input, as a layer: spread the input ``stride`` apart (zeros
    between), pad it by ``dilation * (k - 1) - padding`` (plus ``output_padding`` after), and convolve with
    stride 1 with the weight flipped in space and its in/out channels swapped (per group).

    ``weight`` is (in_channels, out_channels / groups, kH, kW), as in PyTorch.
    """
    input, weight, bias = _amp.lower_precision_inputs(input, weight, bias)
    from .. import flip
    if input.dim() == 3:
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                                dilation).squeeze(0)
    if input.dim() != 4:
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
                           f"size: {list(input.shape)}")
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = (_ntuple(v, 2) for v in (stride, padding, output_padding, dilation))
    for op_, s_, d_ in ((oph, sh, dh), (opw, sw, dw)):
        if op_ >= s_ and op_ >= d_:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_height: {oph} output_padding_width: {opw} stride_height: {sh} "
                               f"stride_width: {sw} dilation_height: {dh} dilation_width: {dw}")
    N, C, H, W = input.shape
    c_in, c_out_g, kh, kw = weight.shape
    x = input
    if sh > 1 or sw > 1:  # (N, C, H, 1, W, 1) padded to (N, C, H, sh, W, sw): each value followed by zeros
        x = pad(x.reshape(N, C, H, 1, W, 1), (0, sw - 1, 0, 0, 0, sh - 1))
        x = x.reshape(N, C, H * sh, W * sw)[:, :, :(H - 1) * sh + 1, :(W - 1) * sw + 1]
    eh, ew = dh * (kh - 1) - ph, dw * (kw - 1) - pw
    x = pad(x, (ew, ew + opw, eh, eh + oph))
    w = weight.reshape(groups, c_in // groups, c_out_g, kh, kw).transpose(1, 2)
    w = flip(w.reshape(groups * c_out_g, c_in // groups, kh, kw), [2, 3])
    return conv2d(x, w, bias, 1, 0, (dh, dw), groups)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over the last two dims; a boolean mask keeps where True."""
    from .. import ones
    L, S = query.shape[-2], key.shape[-2]
    scale = 1 / _math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        keep = ones(L, S, dtype=_dtype.bool_, device=query.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is _dtype.bool_:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    attn = softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p)
    return attn.matmul(value)



# ---------------------------------------------------------------------------
# more activations, distances, pooling and pixel shuffling, composed of registered ops
# ---------------------------------------------------------------------------
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    return softmax(-input, dim, dtype=dtype)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    def f(x):
        return x * softplus(x).tanh()
    return _write_into(input, f) if inplace else f(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    def f(x):
        return hardtanh(x + 3, 0.0, 6.0) / 6
    return _write_into(input, f) if inplace else f(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    def f(x):
        return x * hardtanh(x + 3, 0.0, 6.0) / 6
    return _write_into(input, f) if inplace else f(input)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    def f(x):
        return elu(x, _SELU_ALPHA) * _SELU_SCALE
    return _write_into(input, f) if inplace else f(input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    from .. import where
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")

    def f(x):
        return where(x > 0, x, ((x / alpha).clamp(max=0).exp() - 1) * alpha)
    return _write_into(input, f) if inplace else f(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), with a and b the two halves of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else ``value``."""
    from .. import where

    def f(x):
        return where(x > threshold, x, value)
    return _write_into(input, f) if inplace else f(input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    from .. import where
    if lambd < 0:
        import numpy as np
        top = float(np.finfo(input.dtype.np).max) if input.is_floating_point() else float(np.iinfo(input.dtype.np).max)
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype {input.dtype._tensor_name}, but "
                           f"found {lambd:g}")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    from .. import where
    return where((input > lambd) | (input < -lambd), input, input * 0)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along ``dim`` (broadcast)."""
    n1 = (x1 * x1).sum(dim, keepdim=True).sqrt().clamp(min=eps)
    n2 = (x2 * x2).sum(dim, keepdim=True).sqrt().clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim."""
    d = (x1 - x2 + eps).abs()
    if p == float("inf"):
        return d.amax(-1, keepdim=keepdim)
    return (d ** p).sum(-1, keepdim=keepdim) ** (1.0 / p)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of the last dim to ``output_size`` (the 2-d one over a height of 1)."""
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _ntuple(output_size, 1)[0])).squeeze(-2)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): each group of r^2 channels becomes an r x r block."""
    r = upscale_factor
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of ``pixel_shuffle``."""
    r = downscale_factor
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h}"
                           f" is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w} "
                           f"is not divisible by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)
