"""``memory_format`` of the conversions (``float()``, ``double()``, ... and ``to()``), ``clone``, ``contiguous`` and
``is_contiguous``: channels_last (4-d) and channels_last_3d (5-d) as PyTorch lays them out.

Before, ``Tensor.float()`` and friends and ``to()`` accepted ``memory_format`` and ignored it, ``contiguous``
and ``clone`` returned a contiguous tensor for any format, and ``is_contiguous`` answered for the contiguous
format whatever was asked.  Strides, aliasing and errors are compared with torch 2.13 when it is installed
(course_lib names memory formats by strings: ``"channels_last"`` for ``torch.channels_last``).
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl


def _cl4(L, F):
    return L.randn(2, 3, 4, 5).contiguous(memory_format=F("channels_last"))


CASES = [
 lambda L, F: L.randn(2,3,4,5).float(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,4,5).double(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,4,5).double(memory_format=F("channels_last")).float(),
 lambda L, F: L.randn(2,3,4,5).double(memory_format=F("channels_last")).float(memory_format=F("contiguous_format")),
 lambda L, F: L.randn(2,3,4,5).contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,4,5,6).contiguous(memory_format=F("channels_last_3d")),
 lambda L, F: L.randn(2,3,4,5,6).contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(3,4).contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(3,4).float(memory_format=F("channels_last")),
 lambda L, F: L.randn(3,4).clone(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,4,5).clone(memory_format=F("channels_last")),
 lambda L, F: L.randn(3,4).T.contiguous(memory_format=F("preserve_format")),
 lambda L, F: L.randn(3,4).T.is_contiguous(memory_format=F("preserve_format")),
 lambda L, F: L.randn(2,1,4,5).is_contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,1,1).is_contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(0,3,4,5).is_contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,4,5).is_contiguous(memory_format=F("channels_last_3d")),
 lambda L, F: L.randn(2,3,4,5).permute(0,2,3,1).is_contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,5,4,3).permute(0,3,2,1).is_contiguous(memory_format=F("channels_last")),
 lambda L, F: (lambda y: y.to(memory_format=F("channels_last")) is y)(_cl4(L, F)),
 lambda L, F: (lambda y: y.contiguous(memory_format=F("channels_last")) is y)(_cl4(L, F)),
 lambda L, F: (lambda y: y.float() is y)(_cl4(L, F)),
 lambda L, F: (lambda y: y.to(memory_format=F("contiguous_format")) is y)(L.randn(3,4).T),
 lambda L, F: (lambda y: y.to(memory_format=F("contiguous_format")) is y)(_cl4(L, F)),
 lambda L, F: L.randn(3,4).T.double(),
 lambda L, F: L.randn(3,8)[:, ::2].double(),
 lambda L, F: L.randn(2,3,4,5).permute(0,2,3,1)[:, ::2].double(),
 lambda L, F: L.randn(2,3,4,5).to(L.float64, memory_format=F("channels_last")),
 lambda L, F: L.empty(2,3,4,5, device="meta").float(memory_format=F("channels_last")),
 lambda L, F: L.empty(2,3,4,5, device="meta").clone(memory_format=F("channels_last")),
 lambda L, F: L.empty(2,3,4,5, device="meta").contiguous(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,4,5).bool(memory_format=F("channels_last")),
 lambda L, F: L.randn(2,3,4,5).int(memory_format=F("channels_last_3d")),
 lambda L, F: L.randn(2,3,4,5).contiguous(memory_format=F("channels_last")).float(memory_format=F("channels_last")),
]


def _observe(f, lib, fmt):
    try:
        r = f(lib, fmt)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return f"{type(e).__name__}: {e}"
    return tuple(r.stride()) if hasattr(r, "stride") else r


@pytest.mark.parametrize("i", range(len(CASES)))
def test_as_torch(i):
    torch = require_torch()
    want = _observe(CASES[i], torch, lambda n: getattr(torch, n))
    got = _observe(CASES[i], cl, lambda n: n)
    assert got == want


def test_values_survive_the_layout():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    y = cl.tensor(x).double(memory_format="channels_last")
    assert y.stride() == (60, 1, 15, 3) and y.is_contiguous(memory_format="channels_last")
    np.testing.assert_array_equal(y.numpy(), x.astype(np.float64))
    y = cl.tensor(x).clone(memory_format="channels_last")
    assert y.stride() == (60, 1, 15, 3)
    np.testing.assert_array_equal(y.numpy(), x)
    y = cl.tensor(x).contiguous(memory_format="channels_last").contiguous()
    assert y.is_contiguous()
    np.testing.assert_array_equal(y.numpy(), x)
    y = cl.tensor(x).permute(0, 2, 3, 1)[:, ::2].double()
    np.testing.assert_array_equal(y.numpy(), x.transpose(0, 2, 3, 1)[:, ::2])


def test_conversions_take_memory_format_by_keyword_only():
    with pytest.raises(TypeError):
        cl.randn(2, 3, 4, 5).float("channels_last")
    assert cl.randn(2, 3, 4, 5).float(memory_format=None).is_contiguous()


def test_is_contiguous_channels_last_rule():
    t = cl.empty(2, 3, 4, 5).contiguous(memory_format="channels_last")
    assert t.is_contiguous(memory_format="channels_last") and not t.is_contiguous()
    assert not cl.empty(2, 3, 4, 5).is_contiguous(memory_format="channels_last")
    assert cl.empty(2, 1, 4, 5).is_contiguous(memory_format="channels_last")  # C == 1: both layouts
    assert not cl.empty(2, 3, 4).is_contiguous(memory_format="channels_last")
