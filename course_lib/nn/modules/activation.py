"""Activation modules (``torch/nn/modules/activation.py``)."""
from __future__ import annotations

import math

from ... import _creation as C
from ... import _dtype
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "ReLU6", "ELU",
           "Softplus", "Hardtanh", "PReLU", "MultiheadAttention", "Softmin", "Softmax2d", "LogSigmoid", "Mish",
           "Hardswish", "Hardsigmoid", "SELU", "CELU", "GLU", "Softsign", "Tanhshrink", "Threshold", "Softshrink",
           "Hardshrink"]


class ReLU(Module):
    """max(x, 0)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU6(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu6(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class GELU(Module):
    """x * Phi(x)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={repr(self.approximate)}"


class SiLU(Module):
    """x * sigmoid(x)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    def forward(self, input):
        return input.sigmoid()


class Tanh(Module):
    def forward(self, input):
        return input.tanh()


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace_str}"


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_str}"


class Softmax(Module):
    """softmax along ``dim``."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log_softmax along ``dim``."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x if x > 0 else a * x, with ``a`` learned: one shared, or one per channel (``num_parameters``)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(C.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


def _mask_to_additive(mask, dtype):
    """A boolean mask (True: do not attend) as 0 / -inf of ``dtype``; a float mask as it is."""
    if mask is None or mask.dtype is not _dtype.bool_:
        return mask
    return C.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))


class MultiheadAttention(Module):
    """Attention with ``num_heads`` heads: project query, key and value, attend per head
    (softmax(q k^T / sqrt(head_dim) + masks) v), concatenate the heads and project out.

    Parameters as in PyTorch (``in_proj_weight`` (3E, E) stacking q, k, v, or ``q/k/v_proj_weight`` when
    ``kdim``/``vdim`` differ; ``in_proj_bias``; ``out_proj``), so a PyTorch state_dict loads.
    ``forward`` returns ``(output, weights)``: the weights averaged over heads (or per head with
    ``average_attn_weights=False``), or None with ``need_weights=False``.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = dict(dtype=dtype, device=device)
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(C.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(C.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(C.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(C.empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(C.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(C.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(C.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not is_batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                               "method `generate_square_subsequent_mask` to create this mask.")
        L, N, E = query.shape
        H, hd = self.num_heads, self.head_dim
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        q, k, v = F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)
        attn_mask = _mask_to_additive(attn_mask, q.dtype)
        key_padding_mask = _mask_to_additive(key_padding_mask, q.dtype)
        if self.bias_k is not None:
            from ... import cat
            k = cat([k, self.bias_k.repeat(1, N, 1)])
            v = cat([v, self.bias_v.repeat(1, N, 1)])
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        # (L, N, E) -> (N, H, L, hd)
        q = q.reshape(L, N, H, hd).permute(1, 2, 0, 3)
        k = k.reshape(k.shape[0], N, H, hd).permute(1, 2, 0, 3)
        v = v.reshape(v.shape[0], N, H, hd).permute(1, 2, 0, 3)
        if self.add_zero_attn:
            from ... import cat
            k = cat([k, C.zeros((N, H, 1, hd), dtype=k.dtype, device=k.device)], 2)
            v = cat([v, C.zeros((N, H, 1, hd), dtype=v.dtype, device=v.device)], 2)
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        S = k.shape[2]
        scores = (q * (1.0 / math.sqrt(hd))).matmul(k.transpose(-2, -1))       # (N, H, L, S)
        if attn_mask is not None:
            scores = scores + (attn_mask.reshape(N, H, L, S) if attn_mask.dim() == 3 else attn_mask)
        if key_padding_mask is not None:
            scores = scores + key_padding_mask.reshape(N, 1, 1, S)
        weights = F.softmax(scores, -1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, self.dropout)
        out = weights.matmul(v).permute(2, 0, 1, 3).reshape(L, N, E)            # (L, N, E)
        out = self.out_proj(out)
        if not is_batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)
        return out, (weights if is_batched else weights.squeeze(0))


class _Inplace(Module):
    """An activation with only an ``inplace`` flag: ``_fn(input, inplace)``."""

    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    _fn = F.mish


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6."""

    _fn = F.hardswish

    def extra_repr(self) -> str:
        return ""


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""

    _fn = F.hardsigmoid

    def extra_repr(self) -> str:
        return ""


class SELU(_Inplace):
    """scale * elu(x, alpha) with the self-normalising constants."""

    _fn = F.selu


class CELU(Module):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softmin(Module):
    """softmax(-x) along ``dim``."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """softmax over the channels (dim -3) at each spatial position of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class LogSigmoid(Module):
    """log(sigmoid(x))."""

    def forward(self, input):
        return F.logsigmoid(input)


class GLU(Module):
    """a * sigmoid(b), with a and b the halves of the input along ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class Threshold(Module):
    """x where x > threshold, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Softshrink(Module):
    """x -/+ lambd outside [-lambd, lambd], 0 inside."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Module):
    """x outside [-lambd, lambd], 0 inside."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)
