"""The normalization family's arithmetic, stated readably: the reference the fast kernel is held to.

Chapter 05 shows ``norm_stats`` and ``norm_backward``: statistics, xhat and the fused backward over
any axes, in a few numpy lines.  The layers (``F.batch_norm``, ``F.layer_norm``, ``F.group_norm``,
``F.instance_norm``, ``F.rms_norm``) do not call them: they run ``grouped_norm_forward`` /
``grouped_norm_backward`` in ``normalization.py``, the same arithmetic cut into cache-sized chunks
on intra-op threads.  ``grouped_norm_forward_reference`` and ``grouped_norm_backward_reference``
below have the fast kernel's signature and are built from the two readable functions;
``tests/test_norm_kernels.py`` holds the fast kernel to them (random shapes, chunk boundaries,
float32 and float64, one and two threads).

In PyTorch the readable versions are the Python decompositions, ``torch/_refs/__init__.py``
(``native_layer_norm``, ``native_group_norm``) and ``torch/_decomp/decompositions.py``
(``native_batch_norm`` and the backwards); the fast ones are the C++ kernels in
``aten/src/ATen/native/cpu/`` (``batch_norm_kernel.cpp``, ``layer_norm_kernel.cpp``,
``group_norm_kernel.cpp``).
"""
from __future__ import annotations

import numpy as np


def norm_stats(x: np.ndarray, axes: tuple, eps: float, subtract_mean: bool = True):
    """(xhat, mean, invstd, biased var) with the statistics kept as broadcastable (keepdims) arrays."""
    if subtract_mean:
        mean = x.mean(axis=axes, keepdims=True)
        xc = x - mean
    else:
        mean = None
        xc = x.copy()
    sq = xc * xc
    var = sq.mean(axis=axes, keepdims=True)
    invstd = 1.0 / np.sqrt(var + eps)
    xc *= invstd.astype(xc.dtype, copy=False)   # xc becomes xhat, in place
    return xc, mean, invstd, var


def norm_backward(dy: np.ndarray, xhat: np.ndarray, invstd: np.ndarray, axes: tuple, gamma_b,
                  subtract_mean: bool = True) -> np.ndarray:
    """The fused dx: invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), with few temporaries."""
    dxhat = dy * gamma_b if gamma_b is not None else dy.copy()
    t = dxhat * xhat
    proj = t.mean(axis=axes, keepdims=True)
    if subtract_mean:
        dxhat -= dxhat.mean(axis=axes, keepdims=True)
    np.multiply(xhat, proj, out=t)
    dxhat -= t
    dxhat *= invstd.astype(dxhat.dtype, copy=False)
    return dxhat


# ---------------------------------------------------------------------------
# the fast kernel's interface, on the readable functions
# ---------------------------------------------------------------------------
def _affine_shape(param: str) -> tuple:
    """How gamma/beta broadcast against an (A, G, B) array: per group g, or per position along B."""
    return (1, -1, 1) if param == "group" else (1, 1, -1)


def grouped_norm_forward_reference(x3: np.ndarray, eps: float, weight=None, bias=None, param: str = "group",
                                   subtract_mean: bool = True):
    """What ``normalization.grouped_norm_forward`` computes: normalise ``x3`` (A, G, B) per group g over
    axes A and B, then ``* weight + bias``.  Returns ``(y, mean, rstd, var)`` like the kernel: y of
    x3's dtype, the others float64 vectors of length G (mean is zeros without ``subtract_mean``)."""
    x = x3.astype(np.float64)
    xhat, mean, invstd, var = norm_stats(x, (0, 2), eps, subtract_mean)
    y = xhat
    if weight is not None:
        y = y * np.asarray(weight, np.float64).reshape(_affine_shape(param))
    if bias is not None:
        y = y + np.asarray(bias, np.float64).reshape(_affine_shape(param))
    G = x3.shape[1]
    mean = np.zeros(G) if mean is None else mean.reshape(G)
    return y.astype(x3.dtype), mean, invstd.reshape(G), var.reshape(G)


def grouped_norm_backward_reference(dy3: np.ndarray, x3: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                                    weight=None, param: str = "group", subtract_mean: bool = True):
    """What ``normalization.grouped_norm_backward`` computes: ``(dx, dgamma, dbeta)`` from the forward's
    float64 ``mean`` and ``rstd`` vectors.  dgamma and dbeta are float64, per group (``param="group"``)
    or per position along B (``param="inner"``, where dgamma is None without a weight, as in the kernel)."""
    G = x3.shape[1]
    x = x3.astype(np.float64)
    dy = dy3.astype(np.float64)
    rstd_b = np.asarray(rstd, np.float64).reshape(1, G, 1)
    xc = x - np.asarray(mean, np.float64).reshape(1, G, 1) if subtract_mean else x
    xhat = xc * rstd_b
    gamma_b = None if weight is None else np.asarray(weight, np.float64).reshape(_affine_shape(param))
    dx = norm_backward(dy, xhat, rstd_b, (0, 2), gamma_b, subtract_mean)
    sum_axes = (0, 2) if param == "group" else (0, 1)
    dbeta = dy.sum(axis=sum_axes)
    dgamma = (dy * xhat).sum(axis=sum_axes)
    if param == "inner" and weight is None:
        dgamma = None
    return dx.astype(x3.dtype), dgamma, dbeta
