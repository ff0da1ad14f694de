"""Neural-network kernels: convolution (im2col), pooling, embedding, dropout masks, losses.

In PyTorch: ``aten/src/ATen/native/Convolution.cpp`` (the ``convolution`` op that
``F.conv2d`` reaches), ``NaiveConvolutionTransposed2d.cpp`` / ``Unfold2d.cpp``
(im2col), ``DilatedMaxPool2d.cpp``, ``AdaptiveAveragePooling.cpp``, ``Loss.cpp``,
``LossNLL.cpp``.

The convolution kernel turns the input into *columns* with ``as_strided``: a
(N, C, kh, kw, Ho, Wo) view of the padded input where element
[n, c, i, j, y, x] is the input pixel under kernel position (i, j) when the
output pixel is (y, x).  Then the convolution is one tensor contraction with the
weight.  The geometry of that view depends only on (input shape, kernel shape,
stride, padding, dilation, groups), so it is computed once and kept in a small
LRU cache, like the primitive cache of PyTorch's oneDNN path.
"""
from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _dtype
from .common import empty_meta, wrap
from .registry import register


# ---------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def conv_plan(in_shape: tuple, w_shape: tuple, stride: tuple, padding: tuple, dilation: tuple, groups: int):
    """Everything about a convolution's geometry that doesn't depend on the values.

    Returns (padded spatial shape, output spatial shape, window view shape).  Cached:
    a training loop calls the same convolution with the same shapes every step.
    """
    nsp = len(in_shape) - 2
    C = in_shape[1]
    Cout, Cg = w_shape[0], w_shape[1]
    if C != Cg * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(w_shape)}, expected input{list(in_shape)} to have "
            f"{Cg * groups} channels, but got {C} channels instead")
    if Cout % groups != 0:
        raise RuntimeError("out_channels must be divisible by groups")
    padded = tuple(in_shape[2 + k] + 2 * padding[k] for k in range(nsp))
    ksz = w_shape[2:]
    out = []
    for k in range(nsp):
        eff = dilation[k] * (ksz[k] - 1) + 1
        if padded[k] < eff:
            raise RuntimeError(
                f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                f"({' x '.join(map(str, ksz))}). Kernel size can't be greater than actual input size")
        out.append((padded[k] - eff) // stride[k] + 1)
    return padded, tuple(out)


def _windows(xp: np.ndarray, ksz, out_sp, stride, dilation):
    """The (N, C, *kernel, *out) im2col view of a padded input (no copy)."""
    s = xp.strides
    nsp = len(ksz)
    shape = xp.shape[:2] + tuple(ksz) + tuple(out_sp)
    strides = s[:2] + tuple(s[2 + k] * dilation[k] for k in range(nsp)) + \
        tuple(s[2 + k] * stride[k] for k in range(nsp))
    return as_strided(xp, shape, strides, writeable=False)


def _pad(x: np.ndarray, padding) -> np.ndarray:
    """Zero padding on both sides of each spatial dim."""
    if not any(padding):
        return x
    return _pad_with(x, [(0, 0)] * (x.ndim - len(padding)) + [(p, p) for p in padding], 0)


def _pad_with(x: np.ndarray, pads, fill) -> np.ndarray:
    """``np.pad(x, pads, constant_values=fill)`` as one allocation and one copy (np.pad costs
    several times more on the small arrays of a network's later layers)."""
    shape = tuple(n + a + b for n, (a, b) in zip(x.shape, pads))
    out = np.full(shape, fill, dtype=x.dtype) if fill else np.zeros(shape, dtype=x.dtype)
    out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, pads))] = x
    return out


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _conv_meta(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    nsp = len(weight._shape) - 2
    _, out_sp = conv_plan(input._shape, weight._shape, _tuple(stride, nsp), _tuple(padding, nsp),
                          _tuple(dilation, nsp), groups)
    return empty_meta((input._shape[0], weight._shape[0]) + out_sp, input.dtype)


@register("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
          "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
          meta=_conv_meta, variants=("function",), kind="nn")
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """N-d convolution (1-d and 2-d here) by im2col: a strided window view and one contraction."""
    if transposed:
        raise NotImplementedError("transposed convolution is not implemented in course_lib")
    nsp = len(weight._shape) - 2
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({input.dtype._tensor_name}Type) and weight type "
                           f"({weight.dtype._tensor_name}Type) should be the same")
    stride, padding, dilation = _tuple(stride, nsp), _tuple(padding, nsp), _tuple(dilation, nsp)
    _, out_sp = conv_plan(input._shape, weight._shape, stride, padding, dilation, groups)
    x = _pad(input._np(), padding)
    w = weight._np()
    win = _windows(x, weight._shape[2:], out_sp, stride, dilation)
    out = _contract_forward(win, w, groups, nsp)
    if bias is not None:
        out += bias._np().reshape((1, -1) + (1,) * nsp)
    return wrap(out, input.dtype)


# Below this many output pixels per image the products are done with the batch folded into the
# columns: a per-image product would stream the whole weight matrix once per image (resnet's last
# layers have 2x2 outputs and 9 MB weights), which costs more than the transposing copies.
_BATCHED_MIN_PIXELS = 64


def _columns(win, nsp, batched: bool):
    """im2col: the window view copied to matrices with one row per (channel, kernel position).

    ``batched``: (N, C*K, L), one (C*K, L) matrix per image, copied in the window view's own order.
    Otherwise (C*K, N*L): the batch folded into the columns.
    """
    N, C = win.shape[:2]
    K = int(np.prod(win.shape[2:2 + nsp]))
    if batched:
        return np.ascontiguousarray(win).reshape(N, C * K, -1)
    order = (1,) + tuple(range(2, 2 + nsp)) + (0,) + tuple(range(2 + nsp, 2 + 2 * nsp))
    return np.ascontiguousarray(win.transpose(order)).reshape(C * K, -1)


def _contract_forward(win, w, groups, nsp):
    """out = W (Cout, C*K) @ columns: one BLAS product per group (per image and group when batched, which
    writes the result directly in the (N, Cout, *out) layout)."""
    N = win.shape[0]
    Cout = w.shape[0]
    out_sp = tuple(win.shape[2 + nsp:])
    L = int(np.prod(out_sp))
    batched = L >= _BATCHED_MIN_PIXELS
    cols = _columns(win, nsp, batched)
    wm = w.reshape(Cout, -1)
    Cout_g = Cout // groups
    rows = wm.shape[1]
    if batched:
        if groups == 1:
            out = np.matmul(wm, cols)
        else:
            out = np.empty((N, Cout, L), dtype=np.result_type(w, win))
            for gi in range(groups):
                o_sl, r_sl = slice(gi * Cout_g, (gi + 1) * Cout_g), slice(gi * rows, (gi + 1) * rows)
                out[:, o_sl] = np.matmul(wm[o_sl], cols[:, r_sl])
        return out.reshape((N, Cout) + out_sp)
    if groups == 1:
        out = wm @ cols
    else:
        out = np.empty((Cout, N * L), dtype=np.result_type(w, win))
        for gi in range(groups):
            out[gi * Cout_g:(gi + 1) * Cout_g] = wm[gi * Cout_g:(gi + 1) * Cout_g] @ cols[gi * rows:(gi + 1) * rows]
    return np.ascontiguousarray(out.reshape((Cout, N) + out_sp).swapaxes(0, 1))


def _convolution_backward_meta(grad, input, weight, stride, padding, dilation, groups, has_bias):
    b = empty_meta((weight._shape[0],), weight.dtype) if has_bias else None
    return empty_meta(input._shape, input.dtype), empty_meta(weight._shape, weight.dtype), b


@register("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[] stride, SymInt[] padding, "
          "SymInt[] dilation, SymInt groups, bool has_bias) -> (Tensor, Tensor, Tensor)", variants=(),
          meta=_convolution_backward_meta, kind="nn")
def convolution_backward(grad_output, input, weight, stride, padding, dilation, groups, has_bias):
    """Gradients of ``convolution`` w.r.t. input (col2im), weight (columns x grad) and bias (a sum)."""
    nsp = len(weight._shape) - 2
    stride, padding, dilation = _tuple(stride, nsp), _tuple(padding, nsp), _tuple(dilation, nsp)
    padded, out_sp = conv_plan(input._shape, weight._shape, stride, padding, dilation, groups)
    g = grad_output._np()
    w = weight._np()
    x = _pad(input._np(), padding)
    N, C = input._shape[:2]
    Cout = weight._shape[0]
    ksz = weight._shape[2:]
    K = int(np.prod(ksz))
    L = int(np.prod(out_sp))
    Cg, Cout_g = C // groups, Cout // groups
    win = _windows(x, ksz, out_sp, stride, dilation)
    wm = w.reshape(Cout, Cg * K)
    gw = np.empty((Cout, Cg * K), dtype=w.dtype)
    if L >= _BATCHED_MIN_PIXELS:
        # per image: grad[n] (Cout, L) is already a matrix of the (N, Cout, L) gradient
        g3 = g.reshape(N, Cout, L)
        cols = _columns(win, nsp, True)          # (N, C*K, L)
        dcols = np.empty_like(cols)
        for gi in range(groups):
            o_sl = slice(gi * Cout_g, (gi + 1) * Cout_g)
            r_sl = slice(gi * Cg * K, (gi + 1) * Cg * K)
            # weight: sum over images of grad[n] x columns[n]^T; columns: W^T x grad[n]
            gw[o_sl] = np.matmul(g3[:, o_sl], cols[:, r_sl].transpose(0, 2, 1)).sum(0)
            dcols[:, r_sl] = np.matmul(wm[o_sl].T, g3[:, o_sl])
        dcols = dcols.reshape((N, C) + tuple(ksz) + tuple(out_sp))
    else:
        # grad as an (Cout, N*L) matrix, like the folded forward's output before its final transpose
        gmat = np.ascontiguousarray(g.reshape(N, Cout, L).swapaxes(0, 1)).reshape(Cout, N * L)
        cols = _columns(win, nsp, False)         # (C*K, N*L)
        dcols = np.empty_like(cols)
        for gi in range(groups):
            o_sl = slice(gi * Cout_g, (gi + 1) * Cout_g)
            r_sl = slice(gi * Cg * K, (gi + 1) * Cg * K)
            gw[o_sl] = gmat[o_sl] @ cols[r_sl].T     # weight: grad x columns^T
            dcols[r_sl] = wm[o_sl].T @ gmat[o_sl]    # columns: W^T x grad
        dcols = np.moveaxis(dcols.reshape((C,) + tuple(ksz) + (N,) + tuple(out_sp)), 1 + nsp, 0)
    gw = gw.reshape(weight._shape)
    # col2im: add each kernel position's block (N, C, *out) back into the padded input gradient
    gx = np.zeros((N, C) + tuple(padded), dtype=g.dtype)
    for pos in np.ndindex(*ksz):
        sl = tuple(slice(pos[k] * dilation[k], pos[k] * dilation[k] + stride[k] * (out_sp[k] - 1) + 1, stride[k])
                   for k in range(nsp))
        gx[(slice(None), slice(None)) + sl] += dcols[(slice(None), slice(None)) + pos]
    if any(padding):
        gx = gx[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, input._shape[2:]))]
    gb = g.sum(axis=(0,) + tuple(range(2, 2 + nsp))) if has_bias else None
    return (wrap(np.ascontiguousarray(gx), input.dtype), wrap(gw.astype(w.dtype, copy=False), weight.dtype),
            wrap(gb, weight.dtype) if gb is not None else None)


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------
def _pool_out(n, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff
    o = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, name):
    k = _tuple(kernel_size, 2)
    s = _tuple(stride if stride not in (None, []) and stride != () else kernel_size, 2)
    p = _tuple(padding, 2)
    d = _tuple(dilation, 2)
    for i in range(2):
        if p[i] > k[i] // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    H, W = input._shape[-2:]
    out = (_pool_out(H, k[0], s[0], p[0], d[0], ceil_mode), _pool_out(W, k[1], s[1], p[1], d[1], ceil_mode))
    if out[0] <= 0 or out[1] <= 0:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, input._shape[-3:]))}). Calculated output size: "
                           f"({input._shape[-3]}x{out[0]}x{out[1]}). Output size is too small")
    return k, s, p, d, out


def _pool_windows(x, k, s, p, d, out, fill):
    # pad (plus extra room for ceil_mode) with `fill`, then a strided window view
    H, W = x.shape[-2:]
    need_h = (out[0] - 1) * s[0] + d[0] * (k[0] - 1) + 1
    need_w = (out[1] - 1) * s[1] + d[1] * (k[1] - 1) + 1
    extra_h = max(0, need_h - (H + 2 * p[0]))
    extra_w = max(0, need_w - (W + 2 * p[1]))
    pads = [(0, 0)] * (x.ndim - 2) + [(p[0], p[0] + extra_h), (p[1], p[1] + extra_w)]
    xp = _pad_with(x, pads, fill) if any(sum(t) for t in pads) else x
    st = xp.strides
    shape = xp.shape[:-2] + out + k
    strides = st[:-2] + (st[-2] * s[0], st[-1] * s[1], st[-2] * d[0], st[-1] * d[1])
    return as_strided(xp, shape, strides, writeable=False), xp.shape


def _window_max(win: np.ndarray, k: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The maximum of each (..., kh, kw) window and the position (i * kw + j) of its first
    occurrence (a NaN counts as the maximum), like ``argmax`` over the flattened windows.

    One pass per kernel position over (..., Ho, Wo) slices of the window view, instead of copying
    every window out (``reshape`` of the strided view) and reducing over the copy: kh * kw maxima,
    then the positions walked backwards, each ``arg -= (slice == max) * (arg - q)`` (arithmetic: a
    masked assignment with a random mask is an order of magnitude slower).
    """
    nk = k[0] * k[1]
    vals = np.array(win[..., 0, 0])
    for q in range(1, nk):
        np.maximum(vals, win[..., q // k[1], q % k[1]], out=vals)
    am = np.full(vals.shape, nk - 1, dtype=np.int8 if nk <= 127 else np.int32)
    if nk == 1:
        return vals, am
    nan = vals.dtype.kind == "f" and bool(np.isnan(vals).any())
    tmp = np.empty_like(am)
    for q in range(nk - 2, -1, -1):
        v = win[..., q // k[1], q % k[1]]
        eq = v == vals
        if nan:
            eq |= v != v      # the first NaN of a window whose maximum is NaN
        np.subtract(am, q, out=tmp)
        tmp *= eq
        am -= tmp
    return vals, am


def _maxpool_meta(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    k, s, p, d, out = _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
    sh = input._shape[:-2] + out
    return empty_meta(sh, input.dtype), empty_meta(sh, _dtype.int64)


@register("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", meta=_maxpool_meta,
          variants=(), kind="nn")
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-d max pooling; also returns the flat (h * W + w) index of each maximum, as PyTorch does."""
    k, s, p, d, out = _pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
    x = self._np()
    fill = -np.inf if self.dtype.is_floating_point else np.iinfo(self.dtype.np).min
    win, pshape = _pool_windows(x, k, s, p, d, out, fill)
    vals, am = _window_max(win, k)
    # index in the unpadded input
    ki, kj = np.divmod(am.astype(np.int64), k[1])
    oy = np.arange(out[0]).reshape(-1, 1)
    ox = np.arange(out[1]).reshape(1, -1)
    hh = oy * s[0] + ki * d[0] - p[0]
    ww = ox * s[1] + kj * d[1] - p[1]
    idx = hh * self._shape[-1] + ww
    return wrap(np.ascontiguousarray(vals), self.dtype), wrap(idx.astype(np.int64), _dtype.int64)


@register("max_pool2d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor", variants=(),
          meta=lambda grad_output, self, indices: empty_meta(self._shape, grad_output.dtype), kind="nn")
def max_pool2d_backward(grad_output, self, indices):
    """Route each output gradient to the input element that was the maximum."""
    H, W = self._shape[-2:]
    lead = int(np.prod(self._shape[:-2]))
    g = grad_output._np().reshape(lead, -1)
    idx = indices._np().reshape(lead, -1) + (np.arange(lead) * H * W)[:, None]
    out = np.bincount(idx.reshape(-1), weights=g.reshape(-1).astype(np.float64), minlength=lead * H * W)
    return wrap(out.astype(grad_output.dtype.np).reshape(self._shape), grad_output.dtype)


def _avgpool_meta(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
    k, s, p, d, out = _pool_geometry(self, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    return empty_meta(self._shape[:-2] + out, self.dtype)


def _avg_divisor(H, W, k, s, p, out, ceil_mode, count_include_pad, divisor_override):
    if divisor_override:
        return np.full(out, float(divisor_override))
    oy = np.arange(out[0])
    ox = np.arange(out[1])
    hs = oy * s[0] - p[0]
    ws = ox * s[1] - p[1]
    he = np.minimum(hs + k[0], H + p[0])
    we = np.minimum(ws + k[1], W + p[1])
    if count_include_pad:
        return ((he - hs)[:, None] * (we - ws)[None, :]).astype(np.float64)
    hs2, ws2 = np.maximum(hs, 0), np.maximum(ws, 0)
    he2, we2 = np.minimum(he, H), np.minimum(we, W)
    return ((he2 - hs2)[:, None] * (we2 - ws2)[None, :]).astype(np.float64)


@register("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
          "bool count_include_pad=True, int? divisor_override=None) -> Tensor", meta=_avgpool_meta,
          variants=(), kind="nn")
def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-d average pooling (padding counts as zeros unless ``count_include_pad=False``)."""
    k, s, p, d, out = _pool_geometry(self, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    x = self._np()
    win, _ = _pool_windows(x, k, s, p, d, out, 0)
    tot = win.sum(axis=(-2, -1), dtype=np.float64)
    div = _avg_divisor(x.shape[-2], x.shape[-1], k, s, p, out, ceil_mode, count_include_pad, divisor_override)
    return wrap((tot / div).astype(self.dtype.np), self.dtype)


@register("avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, "
          "bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor", variants=(),
          meta=lambda grad_output, self, *a: empty_meta(self._shape, grad_output.dtype), kind="nn")
def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    """Spread each output gradient evenly over its window."""
    k, s, p, d, out = _pool_geometry(self, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    H, W = self._shape[-2:]
    div = _avg_divisor(H, W, k, s, p, out, ceil_mode, count_include_pad, divisor_override)
    g = grad_output._np() / div
    need_h = (out[0] - 1) * s[0] + k[0]
    need_w = (out[1] - 1) * s[1] + k[1]
    gp = np.zeros(self._shape[:-2] + (max(H + 2 * p[0], need_h), max(W + 2 * p[1], need_w)), np.float64)
    for i in range(k[0]):
        for j in range(k[1]):
            gp[..., i:i + s[0] * (out[0] - 1) + 1:s[0], j:j + s[1] * (out[1] - 1) + 1:s[1]] += g
    gx = gp[..., p[0]:p[0] + H, p[1]:p[1] + W]
    return wrap(np.ascontiguousarray(gx).astype(grad_output.dtype.np), grad_output.dtype)


# ---------------------------------------------------------------------------
# losses that need a dedicated kernel
# ---------------------------------------------------------------------------
def _nll_meta(self, target, weight=None, reduction=1, ignore_index=-100):
    if reduction == 0:
        return empty_meta(target._shape, self.dtype), empty_meta((), self.dtype)
    return empty_meta((), self.dtype), empty_meta((), self.dtype)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


@register("nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) "
          "-> (Tensor output, Tensor total_weight)", variants=(), meta=_nll_meta, kind="nn")
def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """Negative log likelihood: -self[n, target[n]] (times the class weight), reduced."""
    x = self._np()
    t = target._np()
    if target.dtype is not _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._tensor_name}")
    if x.ndim == 1:
        x = x[None]
        t = t.reshape(1)
    C = x.shape[1]
    valid = t != ignore_index
    tt = np.where(valid, t, 0)
    if valid.any() and (tt.min() < 0 or tt.max() >= C):
        bad = tt[(tt < 0) | (tt >= C)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    if x.ndim == 2 and tt.ndim == 1:
        picked = x[np.arange(x.shape[0]), tt]   # (N, C): one fancy index
    else:
        xl = np.moveaxis(x, 1, -1)   # the class dim last: (N, d1.., C)
        picked = np.take_along_axis(xl, tt[..., None], axis=-1)[..., 0]
    if weight is not None:
        w = np.where(valid, weight._np()[tt], 0).astype(x.dtype)
    else:
        w = valid.astype(x.dtype)
    losses = -picked * w
    if reduction == 0:
        out = losses.reshape(target._shape)
        return wrap(np.ascontiguousarray(out), self.dtype), wrap(np.zeros((), x.dtype), self.dtype)
    tw = w.sum()
    if reduction == 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = losses.sum() / tw
    else:
        out = losses.sum()
    return wrap(np.asarray(out, dtype=x.dtype), self.dtype), wrap(np.asarray(tw, dtype=x.dtype), self.dtype)


@register("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, "
          "SymInt ignore_index, Tensor total_weight) -> Tensor", variants=(),
          meta=lambda grad_output, self, *a: empty_meta(self._shape, self.dtype), kind="nn")
def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    x = self._np()
    t = target._np()
    squeeze = x.ndim == 1
    if squeeze:
        t = t.reshape(1)
    C = self._shape[-1] if squeeze else self._shape[1]
    valid = t != ignore_index
    tt = np.where(valid, t, 0)
    if weight is not None:
        w = np.where(valid, weight._np()[tt], 0).astype(x.dtype)
    else:
        w = valid.astype(x.dtype)
    g = grad_output._np()
    if reduction == 0:
        coef = -w * g.reshape(tt.shape)
    elif reduction == 1:
        coef = -w * g / total_weight._np()
    else:
        coef = -w * g
    gl = np.zeros(tt.shape + (C,), x.dtype)
    if gl.ndim == 2:
        gl[np.arange(gl.shape[0]), tt] = coef.astype(x.dtype)   # (N, C): one fancy index
        gx = gl
    else:
        np.put_along_axis(gl, tt[..., None], coef[..., None].astype(x.dtype), axis=-1)
        gx = np.moveaxis(gl, -1, 1)
    if squeeze:
        gx = gx[0]
    return wrap(np.ascontiguousarray(gx), self.dtype)


def _check_embedding_indices(indices, op: str, arg: int) -> None:
    if indices.dtype.category != _dtype._INT:
        raise RuntimeError(f"Expected tensor for argument #{arg} 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{indices.dtype._tensor_name}Tensor instead (while checking "
                           f"arguments for {op})")


def _check_sparse(sparse: bool) -> None:
    if sparse:
        raise NotImplementedError("course_lib has no sparse tensors: with sparse=True PyTorch's embedding makes "
                                  "the weight's gradient a sparse COO tensor (only the rows used in the batch); "
                                  "use sparse=False for a dense gradient")


def _embedding_meta(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    _check_sparse(sparse)
    return empty_meta(indices._shape + weight._shape[1:], weight.dtype)


@register("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
          "bool sparse=False) -> Tensor", variants=("function",), meta=_embedding_meta, kind="nn")
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by integer ``indices``.  ``scale_grad_by_freq`` acts in the backward;
    ``sparse=True`` (a sparse gradient) is refused: course_lib has no sparse tensors."""
    _check_embedding_indices(indices, "embedding", 1)
    _check_sparse(sparse)
    i = indices._np()
    n = weight._shape[0]
    if i.size and (i.min() < 0 or i.max() >= n):
        raise IndexError("index out of range in self")
    return wrap(weight._np()[i], weight.dtype)


@register("embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)",
          variants=("function",), is_inplace=True, meta=lambda self, indices, max_norm, norm_type: self, kind="nn")
def embedding_renorm_(self, indices, max_norm, norm_type):
    """Scale each row of ``self`` that ``indices`` names and whose ``norm_type``-norm exceeds ``max_norm``
    down to norm ``max_norm`` (by ``max_norm / (norm + 1e-7)``), in place; each row once."""
    _check_embedding_indices(indices, "embedding_renorm_", 2)
    rows = np.unique(indices._np().reshape(-1))
    n = self._shape[0]
    if rows.size and (rows[0] < -n or rows[-1] >= n):
        bad = rows[-1] if rows[-1] >= n else rows[0]
        raise IndexError(f"select(): index {bad} out of range for tensor of size {list(self._shape)} at dimension 0")
    w = self._np()
    picked = w[rows]
    norms = np.linalg.norm(picked.reshape(len(rows), -1), ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        scale = (max_norm / (norms[big].astype(np.float64) + 1e-7)).astype(w.dtype)
        w[rows[big]] = picked[big] * scale.reshape((-1,) + (1,) * (picked.ndim - 1))
    self._vc.value += 1
    return self


@register("embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, "
          "bool scale_grad_by_freq=False) -> Tensor", variants=(),
          meta=lambda g, i, n, p, s=False: empty_meta((n,) + g._shape[i.dim():], g.dtype), kind="nn")
def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq=False):
    """Sum the gradient rows into the rows they were picked from; with ``scale_grad_by_freq`` each is
    first divided by how often its index occurs in ``indices``."""
    i = indices._np().reshape(-1)
    D_ = grad_output._shape[indices.dim():]
    g = grad_output._np().reshape(-1, int(np.prod(D_)) if D_ else 1)
    if scale_grad_by_freq:
        counts = np.bincount(i, minlength=num_weights)
        g = g / counts[i].astype(g.dtype)[:, None]
    out = np.zeros((num_weights, g.shape[1]), grad_output.dtype.np)
    np.add.at(out, i, g)
    if padding_idx >= 0:
        out[padding_idx] = 0
    return wrap(out.reshape((num_weights,) + D_), grad_output.dtype)
