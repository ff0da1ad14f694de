"""Pinned memory without an accelerator: ``pin_memory_device``, ``pin_memory(batch, device)``,
``Tensor.pin_memory()`` and ``is_pinned()``, as PyTorch built for the CPU only.

Before, ``DataLoader(pin_memory_device=...)`` was dropped without a word, and ``_utils.pin_memory.pin_memory``
returned any batch unchanged (PyTorch refuses to pin on a machine with no accelerator).  Compared with
torch 2.13 (CPU) when it is installed.
"""
from __future__ import annotations

import collections
import warnings

import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.utils.data as D
from course_lib.utils.data._utils import pin_memory as _pin

DEPRECATED = ("pin_memory_device is deprecated, the current accelerator will be used as the device,"
              "ignore pin_memory_device='cuda'.")


def _messages(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = f()
    return out, [str(x.message) for x in w]


def test_pin_memory_device_warns_each_epoch(monkeypatch):
    monkeypatch.setattr(_pin, "_noted", [True])
    loader = D.DataLoader(list(range(4)), batch_size=2, pin_memory=True, pin_memory_device="cuda")
    for _ in range(2):
        out, msgs = _messages(lambda: [b.tolist() for b in loader])
        assert out == [[0, 1], [2, 3]]
        assert msgs == [DEPRECATED]
    # without pin_memory the device is not read, as in PyTorch
    _, msgs = _messages(lambda: list(D.DataLoader(list(range(4)), batch_size=2, pin_memory_device="cuda")))
    assert msgs == []


def test_pin_memory_device_as_torch():
    torch = require_torch()
    _, theirs = _messages(lambda: list(torch.utils.data.DataLoader(list(range(4)), batch_size=2, pin_memory=True,
                                                                   pin_memory_device="cuda")))
    assert theirs[0] == DEPRECATED


Pair = collections.namedtuple("Pair", "a b")
BATCHES = {
    "tensor": lambda L: L.zeros(2),
    "list": lambda L: [L.zeros(2), "x"],
    "dict": lambda L: {"a": L.zeros(2)},
    "namedtuple": lambda L: Pair(L.zeros(1), 3),
}


@pytest.mark.parametrize("name", sorted(BATCHES))
@pytest.mark.parametrize("device", [None, "cuda"])
def test_pinning_a_batch_refused_as_torch(name, device):
    torch = require_torch()
    from torch.utils.data._utils.pin_memory import pin_memory as tpin
    with pytest.raises(RuntimeError) as et:
        tpin(BATCHES[name](torch), device)
    with pytest.raises(RuntimeError) as e:
        _pin.pin_memory(BATCHES[name](cl), device)
    assert str(e.value) == str(et.value)


def test_batches_without_tensors_pass_through():
    assert _pin.pin_memory(["a", (1, 2), {"k": b"v"}]) == ["a", (1, 2), {"k": b"v"}]


def test_tensor_pin_memory_and_is_pinned_as_torch():
    torch = require_torch()
    for args in ((), ("cpu",)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as et:
                torch.zeros(2).pin_memory(*args)
            with pytest.raises(RuntimeError) as e:
                cl.zeros(2).pin_memory(*args)
        assert str(e.value) == str(et.value)
    with pytest.raises(RuntimeError) as et:
        torch.zeros(2, device="meta").pin_memory()
    with pytest.raises(RuntimeError) as e:
        cl.zeros(2, device="meta").pin_memory()
    assert str(e.value) == str(et.value)
    assert cl.zeros(2).is_pinned() is False
    with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.is_pinned"):
        assert cl.zeros(2).is_pinned("cuda") is False
