"""Parameter initialisation (``torch.nn.init``).

In PyTorch: ``torch/nn/init.py``.  Every function fills a tensor in place under
``no_grad`` and returns it.  The fan-in/fan-out and gain rules are PyTorch's, so
``kaiming_uniform_(w, a=math.sqrt(5))`` (what Linear and Conv use by default)
gives the same distribution as in PyTorch (not the same numbers: the random
streams differ).
"""
from __future__ import annotations

import math

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_",
           "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_", "sparse_",
           "_calculate_fan_in_and_fan_out"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (relu: sqrt(2), tanh: 5/3, ...)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with values drawn from U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with values drawn from N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """N(mean, std^2) redrawn until inside [a, b] (by inverse-CDF sampling)."""
    with no_grad():
        tensor.normal_(mean, std, generator=generator)
        return tensor.clamp_(a, b)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import eye
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015)."""
    if 0 in tensor.shape:
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0, std, generator)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The identity convolution: 1 at the centre of the kernel for in-channel c -> out-channel c (per group)."""
    import numpy as np
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    if tensor.device.type == "meta":
        return tensor
    out_per_group = sizes[0] // groups
    d = np.arange(min(out_per_group, sizes[1]))
    out_idx = (np.arange(groups)[:, None] * out_per_group + d).reshape(-1)
    values = np.zeros(sizes, dtype=tensor.dtype.np)
    values[(out_idx, np.tile(d, groups)) + tuple(s // 2 for s in sizes[2:])] = 1
    from .. import tensor as _tensor
    with no_grad():
        return tensor.copy_(_tensor(values))


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix (Saxe et al., 2013): the Q of the QR decomposition of a normal matrix, its
    columns' signs fixed by R's diagonal, times ``gain``; dims after the first are flattened."""
    import numpy as np
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or tensor.device.type == "meta":
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)._np().astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    from .. import tensor as _tensor
    with no_grad():
        tensor.view(rows, cols).copy_(_tensor(q * gain, dtype=tensor.dtype))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """N(0, std) entries with a fraction ``sparsity`` of each column (chosen at random) set to zero."""
    import numpy as np
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if tensor.device.type == "meta":
        return tensor
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    from .. import rand
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        order = np.argsort(rand(rows, cols, generator=generator)._np(), axis=0)   # a random permutation per column
        tensor._np()[order[:num_zeros], np.arange(cols)] = 0
        tensor._bump_version()
    return tensor
