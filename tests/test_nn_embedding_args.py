"""``embedding``'s ``max_norm``, ``norm_type``, ``scale_grad_by_freq`` and ``sparse``.

Before, ``F.embedding`` and ``nn.Embedding`` accepted these and ignored them: no row was renormalised,
gradients were never scaled by frequency and ``sparse=True`` gave a dense gradient without a word.  Values,
gradients and the in-place renormalisation are compared with torch 2.13 when it is installed.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.nn as nn
import course_lib.nn.functional as F
from course_lib.utils import TorchDispatchMode

W = (np.random.default_rng(0).standard_normal((6, 3)) * 2).astype(np.float32)
IDX = np.array([[0, 2, 2], [5, 0, 2]])


def _norms(w):
    return np.linalg.norm(w, axis=1)


def test_max_norm_renormalises_used_rows_in_place():
    w = cl.tensor(W)
    out = F.embedding(cl.tensor(IDX), w, max_norm=1.0)
    used = np.unique(IDX)
    unused = np.setdiff1d(np.arange(6), used)
    new = w.numpy()
    assert np.all(_norms(new[used]) <= 1.0 + 1e-6)
    np.testing.assert_array_equal(new[unused], W[unused])
    np.testing.assert_array_equal(out.numpy(), new[IDX])
    assert w._version == 1


def test_scale_grad_by_freq_divides_by_counts():
    w = cl.tensor(W, requires_grad=True)
    F.embedding(cl.tensor(IDX), w, scale_grad_by_freq=True).sum().backward()
    counts = np.bincount(IDX.ravel(), minlength=6)
    expected = np.where(counts[:, None] > 0, 1.0, 0.0) * np.ones((6, 3))
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_as_torch(norm_type, padding_idx):
    torch = require_torch()
    w = cl.tensor(W, requires_grad=True)
    wt = torch.tensor(W, requires_grad=True)
    kw = dict(padding_idx=padding_idx, max_norm=1.5, norm_type=norm_type, scale_grad_by_freq=True)
    o = F.embedding(cl.tensor(IDX), w, **kw)
    ot = torch.nn.functional.embedding(torch.tensor(IDX), wt, **kw)
    np.testing.assert_allclose(o.detach().numpy(), ot.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.detach().numpy(), wt.detach().numpy(), rtol=1e-6)
    assert w._version == wt._version
    g = np.arange(o.numel(), dtype=np.float32).reshape(o.shape)
    o.backward(cl.tensor(g))
    ot.backward(torch.tensor(g))
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-6)


def test_module_passes_its_arguments_and_repr():
    torch = require_torch()
    kw = dict(max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)
    m = nn.Embedding(6, 3, _weight=cl.tensor(W), **kw)
    tm = torch.nn.Embedding(6, 3, _weight=torch.tensor(W), **kw)
    np.testing.assert_allclose(m(cl.tensor(IDX)).detach().numpy(), tm(torch.tensor(IDX)).detach().numpy(),
                               rtol=1e-6)
    assert repr(m) == repr(tm)
    assert repr(nn.Embedding(5, 2, sparse=True)) == repr(torch.nn.Embedding(5, 2, sparse=True))


def test_sparse_refused():
    with pytest.raises(NotImplementedError, match="no sparse tensors.*sparse COO"):
        F.embedding(cl.tensor([0, 1]), cl.randn(3, 2), sparse=True)
    with pytest.raises(NotImplementedError, match="no sparse tensors"):
        nn.Embedding(3, 2, sparse=True)(cl.tensor([0, 1]))


def test_renorm_errors_as_torch():
    torch = require_torch()
    for idx in ([0, 9], [0, -9]):
        with pytest.raises(IndexError) as et:
            torch.embedding_renorm_(torch.tensor(W), torch.tensor(idx), 1.0, 2.0)
        with pytest.raises(IndexError) as e:
            cl.embedding_renorm_(cl.tensor(W), cl.tensor(idx), 1.0, 2.0)
        assert str(e.value) == str(et.value)
    with pytest.raises(RuntimeError) as et:
        torch.embedding_renorm_(torch.tensor(W), torch.tensor([0.0]), 1.0, 2.0)
    with pytest.raises(RuntimeError) as e:
        cl.embedding_renorm_(cl.tensor(W), cl.tensor([0.0]), 1.0, 2.0)
    assert str(e.value) == str(et.value)


def test_mode_sees_renorm_and_meta_works():
    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.name)
            return func(*args, **(kwargs or {}))

    with Log() as log:
        F.embedding(cl.tensor(IDX), cl.tensor(W), max_norm=1.0)
    assert log.names[-2:] == ["embedding_renorm_", "embedding"]
    out = F.embedding(cl.empty(2, 3, dtype=cl.int64, device="meta"), cl.empty(6, 3, device="meta"), max_norm=1.0)
    assert out.shape == (2, 3, 3) and out.device.type == "meta"
