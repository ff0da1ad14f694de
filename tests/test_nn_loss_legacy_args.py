"""The losses' legacy ``size_average``/``reduce`` and ``mse_loss``'s ``weight``.

Before, every loss accepted ``size_average`` and ``reduce`` and ignored them (always the ``reduction``),
and ``mse_loss`` ignored ``weight``.  PyTorch maps the legacy pair to a reduction with a deprecation
warning; values and warnings are compared with torch 2.13 when it is installed.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.nn as nn
import course_lib.nn.functional as F

INP = np.array([[0.2, 0.7, 0.1], [0.9, 0.4, 0.6]], np.float32)
TGT = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]], np.float32)
LOGITS = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]], np.float32)
CLASSES = np.array([2, 0])

# name -> f(F, tensor_ctor, **legacy)
LOSSES = {
    "mse_loss": lambda F_, T, **k: F_.mse_loss(T(INP), T(TGT), **k),
    "l1_loss": lambda F_, T, **k: F_.l1_loss(T(INP), T(TGT), **k),
    "smooth_l1_loss": lambda F_, T, **k: F_.smooth_l1_loss(T(INP), T(TGT), **k),
    "nll_loss": lambda F_, T, **k: F_.nll_loss(T(LOGITS), T(CLASSES), **k),
    "cross_entropy": lambda F_, T, **k: F_.cross_entropy(T(LOGITS), T(CLASSES), **k),
    "binary_cross_entropy": lambda F_, T, **k: F_.binary_cross_entropy(T(INP), T(TGT), **k),
    "binary_cross_entropy_with_logits": lambda F_, T, **k: F_.binary_cross_entropy_with_logits(T(LOGITS), T(TGT),
                                                                                              **k),
}
LEGACY = [dict(size_average=s, reduce=r) for s, r in itertools.product((None, True, False), repeat=2)
          if (s, r) != (None, None)]
EXPECTED = {(True, True): "mean", (None, True): "mean", (True, None): "mean", (False, True): "sum",
            (False, None): "sum", (True, False): "none", (False, False): "none", (None, False): "none"}


def _run(f, *args, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = f(*args, **kw)
    return out, [(x.category, str(x.message)) for x in w]


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("legacy", LEGACY, ids=lambda d: f"{d['size_average']}-{d['reduce']}")
def test_legacy_args_pick_the_reduction(name, legacy):
    red = EXPECTED[(legacy["size_average"], legacy["reduce"])]
    out, warns = _run(LOSSES[name], F, cl.tensor, **legacy)
    ref = LOSSES[name](F, cl.tensor, reduction=red)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    assert warns == [(UserWarning, "size_average and reduce args will be deprecated, please use "
                                   f"reduction='{red}' instead.")]


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("legacy", LEGACY[:4], ids=lambda d: f"{d['size_average']}-{d['reduce']}")
def test_legacy_args_as_torch(name, legacy):
    torch = require_torch()
    import torch.nn.functional as TF
    out, warns = _run(LOSSES[name], F, cl.tensor, **legacy)
    tout, twarns = _run(LOSSES[name], TF, torch.tensor, **legacy)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5)
    assert warns == twarns


@pytest.mark.parametrize("cls", ["MSELoss", "L1Loss", "SmoothL1Loss", "NLLLoss", "CrossEntropyLoss", "BCELoss",
                                 "BCEWithLogitsLoss"])
def test_loss_modules_map_legacy_args(cls):
    torch = require_torch()
    m, warns = _run(getattr(nn, cls), size_average=False)
    tm, twarns = _run(getattr(torch.nn, cls), size_average=False)
    assert m.reduction == tm.reduction == "sum"
    assert warns == twarns
    with pytest.warns(UserWarning, match="reduction=.none."):
        assert getattr(nn, cls)(reduce=False, reduction="mean").reduction == "none"


def test_mse_loss_weight():
    torch = require_torch()
    w = np.array([[1.0, 2.0, 0.0], [0.5, 1.0, 3.0]], np.float32)
    for red in ("mean", "sum", "none"):
        x = cl.tensor(INP, requires_grad=True)
        out = F.mse_loss(x, cl.tensor(TGT), reduction=red, weight=cl.tensor(w))
        xt = torch.tensor(INP, requires_grad=True)
        tout = torch.nn.functional.mse_loss(xt, torch.tensor(TGT), reduction=red, weight=torch.tensor(w))
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
        out.sum().backward()
        tout.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="^Weights and input must have the same size.$"):
        F.mse_loss(cl.tensor(INP), cl.tensor(TGT), weight=cl.ones(3))
    with pytest.raises(ValueError, match=r"^Invalid reduction mode: avg\. Expected one of 'none', 'mean', 'sum'\.$"):
        F.mse_loss(cl.tensor(INP), cl.tensor(TGT), reduction="avg", weight=cl.ones(2, 3))
