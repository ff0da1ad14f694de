"""Normalization kernels: one implementation, parameterised by the reduction axes.

In PyTorch: ``aten/src/ATen/native/Normalization.cpp`` (batch norm),
``layer_norm.cpp``, ``group_norm.cpp`` and their CPU kernels in
``native/cpu/``.  Each returns the output plus the statistics its backward needs
(mean and inverse standard deviation), and has one *fused* backward kernel.

Every member of the family computes

    xhat = (x - mean) * invstd,   invstd = 1 / sqrt(var_biased + eps)
    y    = xhat * gamma + beta

and differs only in the axes the statistics are taken over:

=============  ==========================  ==========================
layer          statistics over             gamma/beta shape
=============  ==========================  ==========================
BatchNorm      N and spatial (all but C)   (C,)
LayerNorm      the trailing normalized dims normalized_shape
InstanceNorm   spatial, per (n, c)         (C,)
GroupNorm      (C/G, spatial) per (n, g)   (C,)
RMSNorm        trailing dims, no mean      normalized_shape
=============  ==========================  ==========================

The fused backward (per statistics group of m elements, with dxhat = dy * gamma):

    dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    dgamma = sum(dy * xhat),  dbeta = sum(dy)    (over the axes gamma is broadcast along)

This file is the fast version: one kernel (``grouped_norm_forward`` / ``grouped_norm_backward``)
cut into cache-sized chunks on intra-op threads.  The readable version, which chapter 05 shows
(``norm_stats``, ``norm_backward``), is ``normalization_reference.py``, with
``grouped_norm_forward_reference`` / ``grouped_norm_backward_reference`` of the same signature as
the kernel; ``tests/test_norm_kernels.py`` holds the kernel to them.
"""
from __future__ import annotations

import threading

import numpy as np

from .._parallel import parallel_chunks
from .common import empty_meta, wrap
from .registry import register

# ---------------------------------------------------------------------------
# the kernel every layer calls: statistics per group of an (A, G, B) view
# ---------------------------------------------------------------------------
# Every member of the family can view its input as a 3-d array (A, G, B) whose statistics are
# taken per index g over the axes A and B:
#
#   BatchNorm     (N, C, H*W)       one group per channel
#   InstanceNorm  (1, N*C, H*W)     one group per (sample, channel)   [batch norm on a reshaped input]
#   GroupNorm     (1, N*G, C/G*H*W) one group per (sample, group)
#   LayerNorm     (1, rows, D)      one group per row; D = prod(normalized_shape)
#   RMSNorm       (1, rows, D)      as LayerNorm, without the mean
#
# gamma and beta are either per group (``param="group"``: BatchNorm) or per position along B
# (``param="inner"``: LayerNorm, RMSNorm; then A is 1).  GroupNorm's per-channel affine is applied
# around the kernel.  The groups are cut into chunks of about _CHUNK_ELEMS elements; each chunk is
# normalised with all its passes while it is in cache, and chunks run on the intra-op threads
# (course_lib._parallel).  Sums along B use BLAS (a matrix-vector product with a vector of ones)
# and np.vecdot; the arithmetic on the small per-group vectors is done in float64.
_CHUNK_ELEMS = 1 << 18
_ONES: dict = {}


def _ones(n: int, dtype) -> np.ndarray:
    key = (n, np.dtype(dtype))
    v = _ONES.get(key)
    if v is None:
        v = np.ones(n, dtype)
        v.flags.writeable = False
        if len(_ONES) > 64:
            _ONES.clear()
        _ONES[key] = v
    return v


_SCRATCH = threading.local()


def _scratch(slot: str, shape: tuple, dtype) -> np.ndarray:
    """A per-thread work array reused from chunk to chunk (a fresh chunk-sized allocation would
    page-fault its way into memory on every call)."""
    n = int(np.prod(shape))
    buf = getattr(_SCRATCH, slot, None)
    if buf is None or buf.dtype != dtype or buf.size < n:
        buf = np.empty(max(n, _CHUNK_ELEMS), dtype)
        setattr(_SCRATCH, slot, buf)
    return buf[:n].reshape(shape)


def _grain(A: int, B: int) -> int:
    return max(1, _CHUNK_ELEMS // max(1, A * B))


def _col(v: np.ndarray, dt) -> np.ndarray:
    """A per-group float64 vector as a (g, 1) column of the data's dtype, ready to broadcast."""
    return v.astype(dt, copy=False)[:, None]


def _per_group(v: np.ndarray, A: int, B: int, dt) -> np.ndarray:
    """A per-group vector shaped to broadcast against an (A, g, B) chunk.

    With A > 1 (BatchNorm) it is written out to a (g, B) block, so that numpy's loop runs over
    g*B contiguous elements per sample; a (g, 1) column would make it loop row by row, which
    numpy does through small buffers at about half the speed.
    """
    if A == 1 or B == 1:
        return _col(v, dt)
    e = _scratch("e", (v.shape[0], B), dt)
    np.copyto(e, _col(v, dt))
    return e


def _sum0(v: np.ndarray) -> np.ndarray:
    """Sum over the leading axis A, in float64."""
    return v[0].astype(np.float64) if v.shape[0] == 1 else v.sum(0, dtype=np.float64)


def _rowsum(a: np.ndarray, ones: np.ndarray) -> np.ndarray:
    """Sums along the last axis: a matrix-vector product with ones (BLAS), or nothing to do if B == 1."""
    return a[..., 0] if a.shape[-1] == 1 else np.matmul(a, ones)


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum(a * b) along the last axis, without the product as a temporary."""
    return a[..., 0] * b[..., 0] if a.shape[-1] == 1 else np.vecdot(a, b)


def _tile(v, rows: int, dt):
    """``v`` (B,) repeated on ``rows`` rows: a contiguous operand instead of a broadcast one (faster)."""
    if v is None:
        return None
    t = np.empty((rows, v.shape[0]), dt)
    t[...] = v
    return t


def grouped_norm_forward(x3: np.ndarray, eps: float, weight=None, bias=None, param: str = "group",
                         subtract_mean: bool = True):
    """Normalise ``x3`` (A, G, B) per group g over axes A and B; then ``* weight + bias``.

    Returns ``(y, mean, rstd, var)``: y is a new contiguous (A, G, B) array, the others float64
    vectors of length G (the biased variance; mean is zeros without ``subtract_mean``).
    """
    A, G, B = x3.shape
    m = A * B
    dt = x3.dtype
    y = np.empty((A, G, B), dt)
    mean = np.zeros(G)
    var = np.empty(G)
    rstd = np.empty(G)
    ones = _ones(B, dt)
    if param == "inner" and A != 1:
        raise ValueError("param='inner' needs A == 1")

    grain = _grain(A, B)
    if param == "inner":
        rows = min(grain, G)
        w_t, b_t = _tile(weight, rows, dt), _tile(bias, rows, dt)

    def chunk(g0, g1):
        xb, yb = x3[:, g0:g1], y[:, g0:g1]
        if subtract_mean:
            mu = _sum0(_rowsum(xb, ones)) / m
            np.subtract(xb, _per_group(mu, A, B, dt), out=yb)
            v = _sum0(_rowdot(yb, yb)) / m
            mean[g0:g1] = mu
            src = yb
        else:
            v = _sum0(_rowdot(xb, xb)) / m
            src = xb
        r = 1.0 / np.sqrt(v + eps)
        var[g0:g1] = v
        rstd[g0:g1] = r
        if param == "group":
            k = r if weight is None else r * weight[g0:g1]
            np.multiply(src, _per_group(k, A, B, dt), out=yb)
            if bias is not None:
                yb += _per_group(bias[g0:g1].astype(np.float64, copy=False), A, B, dt)
        else:
            np.multiply(src, _col(r, dt), out=yb)
            n = g1 - g0
            if weight is not None:
                yb[0] *= w_t[:n]
            if bias is not None:
                yb[0] += b_t[:n]

    parallel_chunks(G, grain, chunk)
    return y, mean, rstd, var


def grouped_norm_backward(dy3: np.ndarray, x3: np.ndarray, mean: np.ndarray, rstd: np.ndarray, weight=None,
                          param: str = "group", subtract_mean: bool = True):
    """The fused backward of ``grouped_norm_forward``: ``(dx, dgamma, dbeta)``.

    Per group of m elements, with xc = x - mean, r = rstd and dxhat = dy * gamma:
        s1 = sum(dxhat),  s2 = sum(dxhat * xc)
        dx = r * dxhat  -  r^3 * s2 / m * xc  -  r * s1 / m        (without the mean: no s1 term)
    which is r * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) computed as k1*dxhat + k2*xc + k3.
    dgamma = sum(dy * xhat) and dbeta = sum(dy), per group (``param="group"``) or per position
    along B (``param="inner"``).  ``mean`` and ``rstd`` are the forward's float64 vectors.
    """
    A, G, B = x3.shape
    m = A * B
    dt = x3.dtype
    dx = np.empty((A, G, B), dt)
    ones = _ones(B, dt)
    inner = param == "inner"
    if inner and A != 1:
        raise ValueError("param='inner' needs A == 1")
    mean = np.asarray(mean, np.float64).reshape(G)
    rstd = np.asarray(rstd, np.float64).reshape(G)
    if inner:
        dgamma = None
        dbeta = None
    else:
        dgamma = np.empty(G)
        dbeta = np.empty(G)

    grain = _grain(A, B)
    if inner:
        w_t = _tile(weight, min(grain, G), dt)

    def chunk(g0, g1):
        xb, dyb, dxb = x3[:, g0:g1], dy3[:, g0:g1], dx[:, g0:g1]
        r = rstd[g0:g1]
        if subtract_mean:
            xc = np.subtract(xb, _per_group(mean[g0:g1], A, B, dt), out=_scratch("xc", xb.shape, dt))
        else:
            xc = xb
        partial = None
        if inner:
            # A == 1: rows of B.  With P = dy * xc, every sum is a matrix-vector product:
            #   s1 = dy @ gamma,  s2 = P @ gamma,  dgamma += r @ P,  dbeta += 1 @ dy
            dy2 = dyb[0]
            gv = ones if weight is None else weight.astype(dt, copy=False)
            P = np.multiply(dy2, xc[0], out=_scratch("p", dy2.shape, dt))
            s2 = np.matmul(P, gv).astype(np.float64)
            s1 = np.matmul(dy2, gv).astype(np.float64) if subtract_mean else None
            pg = np.matmul(r.astype(dt), P) if weight is not None else None
            partial = (pg, np.matmul(_ones(g1 - g0, dt), dy2))
            if weight is not None:
                np.multiply(dy2, w_t[:g1 - g0], out=dxb[0])
                d = dxb
            else:
                d = dyb
            k1 = r
            k2 = -(r ** 3) * s2 / m
        else:
            d = dyb
            k1 = r if weight is None else r * weight[g0:g1]
            s2 = _sum0(_rowdot(d, xc))
            s1 = _sum0(_rowsum(d, ones))
            dgamma[g0:g1] = s2 * r
            dbeta[g0:g1] = s1
            k2 = -k1 * r * r * s2 / m
        np.multiply(d, _per_group(k1, A, B, dt), out=dxb)
        if xc is xb:
            xc = np.multiply(xb, _per_group(k2, A, B, dt), out=_scratch("xc", xb.shape, dt))
        else:
            xc *= _per_group(k2, A, B, dt)
        dxb += xc
        if subtract_mean:
            dxb += _per_group(-k1 * s1 / m, A, B, dt)
        return partial

    partials = parallel_chunks(G, grain, chunk)
    if inner:
        dbeta = np.sum([p[1] for p in partials], axis=0, dtype=np.float64) if partials else np.zeros(B)
        if weight is not None:
            dgamma = np.sum([p[0] for p in partials], axis=0, dtype=np.float64) if partials else np.zeros(B)
    return dx, dgamma, dbeta


def _param_sums(dy, xhat, axes_excl):
    dgamma = np.sum(dy * xhat, axis=axes_excl)
    dbeta = np.sum(dy, axis=axes_excl)
    return dgamma, dbeta


# ---------------------------------------------------------------------------
# batch norm
# ---------------------------------------------------------------------------
def _bn_axes(ndim):
    return (0,) + tuple(range(2, ndim))


def _bn_shape(ndim):
    return (1, -1) + (1,) * (ndim - 2)


def _bn_meta(input, weight, bias, running_mean, running_var, training, momentum, eps):
    C = input._shape[1]
    return empty_meta(input._shape, input.dtype), empty_meta((C,), input.dtype), empty_meta((C,), input.dtype)


@register("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
          "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", variants=("function",),
          meta=_bn_meta, kind="nn")
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """Batch norm over all dims but 1.  In training it updates running_mean/var in place
    (running_var with the *unbiased* batch variance) and returns (out, mean, invstd)."""
    x = input._np()
    C = input._shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    if training:
        w = weight._np().reshape(-1) if weight is not None else None
        b = bias._np().reshape(-1) if bias is not None else None
        y3, mean, invstd, var_b = grouped_norm_forward(x.reshape(x.shape[0], C, -1), eps, w, b, "group")
        y = y3.reshape(x.shape)
        n = x.size // C
        # The running statistics are updated inside the kernel, without bumping their version
        # counters: as in PyTorch, where an eval-mode node that saved them still back-propagates
        # (with the updated values) after a later training step of the same layer.
        if running_mean is not None:
            rm = running_mean._np()
            rm *= (1 - momentum)
            rm += momentum * mean.reshape(-1).astype(rm.dtype)
        if running_var is not None:
            rv = running_var._np()
            unbiased = var_b.reshape(-1) * n / max(n - 1, 1)
            rv *= (1 - momentum)
            rv += momentum * unbiased.astype(rv.dtype)
        save_mean = mean.reshape(-1)
        save_invstd = invstd.reshape(-1)
    else:
        shp = _bn_shape(x.ndim)
        w_b = weight._np().reshape(shp) if weight is not None else None
        b_b = bias._np().reshape(shp) if bias is not None else None
        mean = running_mean._np().reshape(shp)
        invstd = 1.0 / np.sqrt(running_var._np().reshape(shp) + eps)
        k = invstd if w_b is None else invstd * w_b
        y = (x - mean) * k.astype(x.dtype, copy=False)
        if b_b is not None:
            y += b_b
        save_mean = np.zeros(0, x.dtype)
        save_invstd = np.zeros(0, x.dtype)
    dt = input.dtype
    return (wrap(np.ascontiguousarray(y, dtype=dt.np), dt), wrap(save_mean.astype(dt.np), dt),
            wrap(save_invstd.astype(dt.np), dt))


def _bn_bwd_meta(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps):
    C = input._shape[1]
    return empty_meta(input._shape, input.dtype), empty_meta((C,), input.dtype), empty_meta((C,), input.dtype)


@register("native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, "
          "Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps) "
          "-> (Tensor, Tensor, Tensor)", variants=(), meta=_bn_bwd_meta, kind="nn")
def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps):
    """The fused backward of batch norm: (dx, dgamma, dbeta) in one pass over the data."""
    x = input._np()
    dy = grad_out._np()
    if train:
        C = x.shape[1]
        dx3, dgamma, dbeta = grouped_norm_backward(
            dy.reshape(x.shape[0], C, -1), x.reshape(x.shape[0], C, -1), save_mean._np(), save_invstd._np(),
            None if weight is None else weight._np().reshape(-1), "group")
        dx = dx3.reshape(x.shape)
    else:
        axes = _bn_axes(x.ndim)
        shp = _bn_shape(x.ndim)
        g = weight._np().reshape(shp) if weight is not None else None
        mean = running_mean._np().reshape(shp)
        invstd = 1.0 / np.sqrt(running_var._np().reshape(shp) + eps)
        xhat = (x - mean) * invstd
        dx = dy * invstd * (g if g is not None else 1)
        dgamma, dbeta = _param_sums(dy, xhat, axes)
    dt = input.dtype
    return (wrap(np.ascontiguousarray(dx, dtype=dt.np), dt), wrap(np.asarray(dgamma, dtype=dt.np), dt),
            wrap(np.asarray(dbeta, dtype=dt.np), dt))


# ---------------------------------------------------------------------------
# layer norm and RMS norm: statistics over the trailing dims
# ---------------------------------------------------------------------------
def _check_normalized_shape(input, normalized_shape):
    ns = tuple(normalized_shape)
    if len(ns) == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if tuple(input._shape[-len(ns):]) != ns or input.dim() < len(ns):
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input._shape)}")
    return ns


def _ln_meta(input, normalized_shape, weight, bias, eps):
    ns = _check_normalized_shape(input, normalized_shape)
    stat = input._shape[:-len(ns)] + (1,) * len(ns)
    return empty_meta(input._shape, input.dtype), empty_meta(stat, input.dtype), empty_meta(stat, input.dtype)


@register("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) "
          "-> (Tensor, Tensor, Tensor)", variants=("function",), meta=_ln_meta, kind="nn")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Layer norm over the trailing ``normalized_shape`` dims; returns (out, mean, rstd)."""
    ns = _check_normalized_shape(input, normalized_shape)
    x = input._np()
    D = int(np.prod(ns))
    stat = x.shape[:x.ndim - len(ns)] + (1,) * len(ns)
    y3, mean, invstd, _ = grouped_norm_forward(
        x.reshape(1, -1, D), eps, None if weight is None else weight._np().reshape(-1),
        None if bias is None else bias._np().reshape(-1), "inner")
    dt = input.dtype
    return (wrap(y3.reshape(x.shape), dt), wrap(mean.astype(dt.np).reshape(stat), dt),
            wrap(invstd.astype(dt.np).reshape(stat), dt))


@register("native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, "
          "Tensor rstd, Tensor? weight, Tensor? bias) -> (Tensor, Tensor, Tensor)", variants=(),
          meta=lambda g, input, ns, mean, rstd, weight, bias: (
              empty_meta(input._shape, input.dtype), empty_meta(tuple(ns), input.dtype),
              empty_meta(tuple(ns), input.dtype)), kind="nn")
def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias):
    """Fused layer-norm backward: (dx, dgamma, dbeta)."""
    ns = tuple(normalized_shape)
    x = input._np()
    dy = grad_out._np()
    D = int(np.prod(ns))
    dx3, dgamma, dbeta = grouped_norm_backward(
        dy.reshape(1, -1, D), x.reshape(1, -1, D), mean._np(), rstd._np(),
        None if weight is None else weight._np().reshape(-1), "inner")
    dt = input.dtype
    dgamma = np.zeros(ns, dt.np) if dgamma is None else np.asarray(dgamma, dtype=dt.np).reshape(ns)
    return (wrap(dx3.reshape(x.shape), dt), wrap(dgamma, dt), wrap(np.asarray(dbeta, dtype=dt.np).reshape(ns), dt))


@register("rms_norm_fused(Tensor input, SymInt[] normalized_shape, Tensor? weight, float eps) -> (Tensor, Tensor)",
          variants=(), meta=lambda input, ns, weight, eps: (
              empty_meta(input._shape, input.dtype),
              empty_meta(input._shape[:-len(ns)] + (1,) * len(ns), input.dtype)), kind="nn")
def rms_norm_fused(input, normalized_shape, weight, eps):
    """RMS norm: x / sqrt(mean(x^2) + eps) * weight, over the trailing dims; returns (out, rstd)."""
    ns = _check_normalized_shape(input, normalized_shape)
    x = input._np()
    D = int(np.prod(ns))
    stat = x.shape[:x.ndim - len(ns)] + (1,) * len(ns)
    y3, _, invstd, _ = grouped_norm_forward(x.reshape(1, -1, D), eps,
                                            None if weight is None else weight._np().reshape(-1), None,
                                            "inner", subtract_mean=False)
    dt = input.dtype
    return wrap(y3.reshape(x.shape), dt), wrap(invstd.astype(dt.np).reshape(stat), dt)


@register("rms_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor rstd, Tensor? weight) "
          "-> (Tensor, Tensor)", variants=(),
          meta=lambda g, input, ns, rstd, weight: (empty_meta(input._shape, input.dtype),
                                                   empty_meta(tuple(ns), input.dtype)), kind="nn")
def rms_norm_backward(grad_out, input, normalized_shape, rstd, weight):
    ns = tuple(normalized_shape)
    x = input._np()
    dy = grad_out._np()
    D = int(np.prod(ns))
    R = x.size // D if D else 0
    dx3, dgamma, _ = grouped_norm_backward(dy.reshape(1, -1, D), x.reshape(1, -1, D), np.zeros(R), rstd._np(),
                                           None if weight is None else weight._np().reshape(-1), "inner",
                                           subtract_mean=False)
    dt = input.dtype
    dgamma = np.zeros(ns, dt.np) if dgamma is None else np.asarray(dgamma, dtype=dt.np).reshape(ns)
    return wrap(dx3.reshape(x.shape), dt), wrap(dgamma, dt)


# ---------------------------------------------------------------------------
# group norm (instance norm is group norm with one channel per group)
# ---------------------------------------------------------------------------
def _gn_meta(input, weight, bias, N, C, HxW, group, eps):
    return (empty_meta(input._shape, input.dtype), empty_meta((N, group), input.dtype),
            empty_meta((N, group), input.dtype))


@register("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, "
          "float eps) -> (Tensor, Tensor, Tensor)", variants=("function",), meta=_gn_meta, kind="nn")
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """Group norm: statistics per (sample, group of C/G channels); gamma/beta per channel."""
    x3 = input._np().reshape(1, N * group, -1)
    y3, mean, invstd, _ = grouped_norm_forward(x3, eps)
    y = y3.reshape(N, C, -1)
    if weight is not None:
        y *= weight._np().reshape(C, 1)
    if bias is not None:
        y += bias._np().reshape(C, 1)
    dt = input.dtype
    return (wrap(y.reshape(input._shape), dt), wrap(mean.reshape(N, group).astype(dt.np), dt),
            wrap(invstd.reshape(N, group).astype(dt.np), dt))


@register("native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, "
          "SymInt N, SymInt C, SymInt HxW, int group) -> (Tensor, Tensor, Tensor)", variants=(),
          meta=lambda g, input, mean, rstd, weight, N, C, HxW, group: (
              empty_meta(input._shape, input.dtype), empty_meta((C,), input.dtype), empty_meta((C,), input.dtype)),
              kind="nn")
def native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group):
    """Fused group-norm backward: the kernel's backward on dxhat = dy * gamma, plus per-channel sums."""
    x = input._np().reshape(N, C, -1)
    dy = grad_out._np().reshape(N, C, -1)
    dt = input.dtype
    dxhat = dy * weight._np().reshape(C, 1).astype(dy.dtype, copy=False) if weight is not None else dy
    mean64 = mean._np().astype(np.float64).reshape(-1)
    rstd64 = rstd._np().astype(np.float64).reshape(-1)
    dx3, _, _ = grouped_norm_backward(dxhat.reshape(1, N * group, -1), x.reshape(1, N * group, -1), mean64, rstd64)
    # dgamma, dbeta per channel: sums over samples and positions of dy * xhat and dy
    xhat = x.reshape(N, group, -1) - mean64.reshape(N, group, 1).astype(x.dtype)
    xhat *= rstd64.reshape(N, group, 1).astype(x.dtype)
    dgamma = np.vecdot(dy, xhat.reshape(N, C, -1)).sum(0, dtype=np.float64)
    dbeta = np.matmul(dy, _ones(dy.shape[2], dy.dtype)).sum(0, dtype=np.float64)
    return (wrap(dx3.reshape(input._shape), dt), wrap(dgamma.astype(dt.np), dt), wrap(dbeta.astype(dt.np), dt))
