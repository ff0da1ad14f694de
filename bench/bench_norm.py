"""Normalization workloads (chapter 05): BatchNorm2d and LayerNorm forward + backward.

The numpy floor is the same computation the fused kernels do (statistics, normalise,
affine; then the fused backward formula), without the framework around it.  The
"unfused" workload builds batch norm from primitive ops, as a learner would at first:
compare its course_lib time with the fused one.
"""
from __future__ import annotations

import numpy as np
from harness import torch_or_none, workload

import course_lib as cl
import course_lib.nn.functional as F


def _bn_numpy(x, g, w, b, eps=1e-5):
    axes = (0, 2, 3)
    mean = x.mean(axes, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axes, keepdims=True)
    invstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * invstd
    y = xhat * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
    dxhat = g * w.reshape(1, -1, 1, 1)
    dx = (dxhat - dxhat.mean(axes, keepdims=True) - xhat * (dxhat * xhat).mean(axes, keepdims=True)) * invstd
    dw = (g * xhat).sum(axes)
    db = g.sum(axes)
    return dx, dw, db, y


def _bn_inputs(quick):
    shape = (4, 8, 8, 8) if quick else (32, 64, 32, 32)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(shape[1], dtype=np.float32)
    b = rng.standard_normal(shape[1], dtype=np.float32)
    return x, g, w, b


def _unfused_bn(x, w, b, eps=1e-5):
    mean = x.mean((0, 2, 3), keepdim=True)
    xc = x - mean
    var = (xc * xc).mean((0, 2, 3), keepdim=True)
    return xc * (var + eps).rsqrt() * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


def _bn_workload(quick, fused: bool):
    xn, gn, wn, bn_ = _bn_inputs(quick)
    w = cl.tensor(wn, requires_grad=True)
    b = cl.tensor(bn_, requires_grad=True)
    g = cl.tensor(gn)

    def course():
        x = cl.tensor(xn, requires_grad=True)
        out = F.batch_norm(x, None, None, w, b, training=True) if fused else _unfused_bn(x, w, b)
        out.backward(g)
        return x.grad

    fns = {"course_lib": course, "numpy": lambda: _bn_numpy(xn, gn, wn, bn_)[0]}
    torch = torch_or_none()
    if torch is not None:
        wt = torch.tensor(wn, requires_grad=True)
        bt = torch.tensor(bn_, requires_grad=True)
        gt = torch.from_numpy(gn)

        def tfn():
            xt = torch.tensor(xn, requires_grad=True)
            torch.nn.functional.batch_norm(xt, None, None, wt, bt, training=True).backward(gt)
            return xt.grad
        fns["torch"] = tfn
    return fns


@workload("BatchNorm2d fwd+bwd 32x64x32x32 (fused node)", rtol=1e-3, atol=1e-3,
          note="target: within 1.5x of torch")
def batchnorm_fused(quick: bool):
    return _bn_workload(quick, fused=True)


@workload("BatchNorm2d fwd+bwd 32x64x32x32 (unfused composition)", rtol=1e-3, atol=1e-3,
          note="compare with the fused row: target fused >= 1.5x faster")
def batchnorm_unfused(quick: bool):
    return _bn_workload(quick, fused=False)


@workload("LayerNorm(512) fwd+bwd 64x128x512", rtol=1e-3, atol=1e-3, note="target: the numpy floor in eager mode")
def layernorm(quick: bool):
    shape = (4, 8, 16) if quick else (64, 128, 512)
    rng = np.random.default_rng(1)
    xn = rng.standard_normal(shape, dtype=np.float32)
    gn = rng.standard_normal(shape, dtype=np.float32)
    wn = rng.standard_normal(shape[-1], dtype=np.float32)
    bn_ = rng.standard_normal(shape[-1], dtype=np.float32)
    w = cl.tensor(wn, requires_grad=True)
    b = cl.tensor(bn_, requires_grad=True)
    g = cl.tensor(gn)

    def course():
        x = cl.tensor(xn, requires_grad=True)
        F.layer_norm(x, (shape[-1],), w, b).backward(g)
        return x.grad

    def floor():
        mean = xn.mean(-1, keepdims=True)
        xc = xn - mean
        invstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5)
        xhat = xc * invstd
        _ = xhat * wn + bn_
        dxhat = gn * wn
        dx = (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)) * invstd
        _ = (gn * xhat).sum((0, 1)), gn.sum((0, 1))
        return dx

    fns = {"course_lib": course, "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        wt = torch.tensor(wn, requires_grad=True)
        bt = torch.tensor(bn_, requires_grad=True)
        gt = torch.from_numpy(gn)

        def tfn():
            xt = torch.tensor(xn, requires_grad=True)
            torch.nn.functional.layer_norm(xt, (shape[-1],), wt, bt).backward(gt)
            return xt.grad
        fns["torch"] = tfn
    return fns
