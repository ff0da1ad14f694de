"""``Tensor.new_zeros``, ``new_ones``, ``new_empty``, ``new_full``, ``new_empty_strided`` and ``new_tensor``.

Before, they took ``self``'s dtype but not its device (a meta tensor's ``new_zeros`` held data on the CPU),
dropped ``device``, ``requires_grad`` and ``pin_memory``, and a dispatch mode saw ``aten.zeros`` instead of
``aten.new_zeros``.  Compared with torch 2.13 when it is installed.
"""
from __future__ import annotations

import warnings

import pytest
from oracle import require_torch

import course_lib as cl
from course_lib.utils import TorchDispatchMode


def _lib(x):
    return cl if isinstance(x, cl.Tensor) else __import__("torch")


CALLS = {
    "new_zeros": lambda x: x.new_zeros(2, 3),
    "new_zeros_seq": lambda x: x.new_zeros((2, 3)),
    "new_ones": lambda x: x.new_ones((3,)),
    "new_empty": lambda x: x.new_empty(2),
    "new_full": lambda x: x.new_full((2,), 5),
    "new_empty_strided": lambda x: x.new_empty_strided((2, 2), (1, 2)),
    "new_tensor": lambda x: x.new_tensor([1, 2]),
    "new_zeros_int": lambda x: x.new_zeros(2, dtype=_lib(x).int32),
}


class _Names(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_keeps_dtype_and_device_of_self(name):
    x = cl.empty(2, 3, dtype=cl.float64, device="meta")
    r = CALLS[name](x)
    assert r.device.type == "meta" and r.is_meta
    if name != "new_zeros_int":
        assert r.dtype is cl.float64
    x = cl.randn(2, 3, dtype=cl.float64)
    assert CALLS[name](x).device.type == "cpu"


def test_explicit_options():
    x = cl.randn(2, dtype=cl.float64)
    assert x.new_zeros(2, device="meta").is_meta
    assert x.new_tensor([1.0], device="meta").is_meta
    assert x.new_ones(2, dtype=cl.float32).dtype is cl.float32
    assert x.new_zeros(2, requires_grad=True).requires_grad
    assert x.new_full((2,), 1.5, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="pin_memory=True"):
        x.new_zeros(2, pin_memory=True)
    with pytest.raises(RuntimeError, match="floating point"):
        x.new_zeros(2, dtype=cl.int64, requires_grad=True)


def test_modes_see_aten_names():
    torch = require_torch()
    from torch.utils._python_dispatch import TorchDispatchMode as TMode

    class TNames(TMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    calls = [c for n, c in sorted(CALLS.items()) if n != "new_zeros_int"]
    with _Names() as mine:
        for c in calls:
            c(cl.randn(2, 3, dtype=cl.float64))
    x = torch.randn(2, 3, dtype=torch.float64)
    with TNames() as theirs:
        for c in calls:
            c(x)
    assert [n for n in mine.names if n not in ("randn", "normal_")] == theirs.names


@pytest.mark.parametrize("name", sorted(CALLS))
def test_as_torch(name):
    torch = require_torch()
    x = cl.randn(2, 3, dtype=cl.float64)
    xt = torch.randn(2, 3, dtype=torch.float64)
    r, rt = CALLS[name](x), CALLS[name](xt)
    assert tuple(r.shape) == tuple(rt.shape) and r.stride() == rt.stride()
    assert str(r.dtype).split(".")[-1] == str(rt.dtype).split(".")[-1]
    if name not in ("new_empty", "new_empty_strided"):
        assert r.tolist() == rt.tolist()


def test_errors_and_warning_as_torch():
    torch = require_torch()
    for f in (lambda x: x.new_zeros(-1), lambda x: x.new_full(2, 5), lambda x: x.new_ones(2, "a")):
        with pytest.raises(Exception) as et:
            f(torch.zeros(1))
        with pytest.raises(type(et.value)) as e:
            f(cl.zeros(1))
        assert str(e.value) == str(et.value)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = cl.zeros(2, dtype=cl.float64).new_tensor(cl.tensor([1, 2]))
        torch.zeros(2, dtype=torch.float64).new_tensor(torch.tensor([1, 2]))
    assert r.dtype is cl.float64
    assert len(w) == 2 and str(w[0].message) == str(w[1].message) and w[0].filename == __file__
