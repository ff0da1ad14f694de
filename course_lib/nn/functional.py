"""``nn.functional``: the stateless functions behind the layers.

In PyTorch: ``torch/nn/functional.py``.  Most are a few lines composing
registered ops (so autograd, modes and meta tensors work through them); a few
(convolution, pooling, nll_loss, embedding) call a dedicated op with its own
kernel and derivative.
"""
from __future__ import annotations

import math
import warnings

from .. import _dtype
from .._ops.dispatcher import dispatch
from .._ops.registry import OPS
from .._tensor import Tensor
from . import _reduction as _Reduction

__all__ = [
    "linear", "bilinear", "relu", "relu_", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
    "dropout", "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "embedding", "one_hot",
    "mse_loss", "l1_loss", "nll_loss", "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "pad", "flatten", "normalize", "softplus", "elu", "hardtanh", "relu6", "logsigmoid", "smooth_l1_loss",
]


def _op(name, *args):
    return dispatch(OPS[name], args)


# ---------------------------------------------------------------------------
# linear layers
# ---------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b.  2-d input with a bias is one ``addmm`` (grad_fn AddmmBackward0), as in PyTorch."""
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
        return 0.5 * input * (1 + (math.sqrt(2 / math.pi) * (input + 0.044715 * input * input * input)).tanh())
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return 0.5 * input * (1 + (input * (1 / math.sqrt(2))).erf())


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
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as "
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
            parts.append(full(s, value or 0, dtype=input.dtype))
        core = out
        if lo < 0:
            core = core.narrow(d, -lo, core.shape[d] + lo)
        if hi < 0:
            core = core.narrow(d, 0, core.shape[d] + hi)
        parts.append(core)
        if hi > 0:
            s = list(out.shape)
            s[d] = hi
            parts.append(full(s, value or 0, dtype=input.dtype))
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


def _check_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.".replace("course_lib.Size", "torch.Size"), UserWarning, stacklevel=3)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error; with ``weight`` (the input's size), the weighted sum over the sum of the weights."""
    _check_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    d = input - target
    if weight is None:
        return _reduce(d * d, reduction)
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
    _check_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    from .. import where
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    d = (input - target).abs()
    return _reduce(where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


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
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.".replace("course_lib.Size",
                                                                                         "torch.Size"))
    if bool(((input < 0) | (input > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """BCE on logits, computed stably: (1 - t) x + (1 + (pw - 1) t) * log(1 + exp(-x))."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})"
                         .replace("course_lib.Size", "torch.Size"))
    log_sig_neg = (-input).clamp(min=0) + ((-input.abs()).exp() + 1).log()  # log(1 + exp(-x)), stable
    if pos_weight is not None:
        lw = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + lw * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


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
