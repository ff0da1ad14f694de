"""Tensor, Storage, dtypes and metadata: library tests (no torch needed).

The fact sheet's tables (``reference/pytorch-facts.md`` section 1) are checked
here word for word; ``test_oracle_core.py`` checks the same against real torch.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import course_lib as cl
from course_lib import _dtype


# ---------------------------------------------------------------------------
# dtypes and promotion
# ---------------------------------------------------------------------------
def test_dtypes_and_aliases():
    assert cl.float is cl.float32 and cl.double is cl.float64 and cl.half is cl.float16
    assert cl.long is cl.int64 and cl.int is cl.int32 and cl.short is cl.int16
    assert repr(cl.float32) == "course_lib.float32"
    assert [d.itemsize for d in _dtype.ALL_DTYPES] == [4, 8, 2, 8, 4, 2, 1, 1, 1]
    assert cl.float16.is_floating_point and not cl.int8.is_floating_point and not cl.bool.is_floating_point
    assert pickle.loads(pickle.dumps(cl.int16)) is cl.int16


def _t(dt, zero_dim=False):
    return cl.ones((), dtype=dt) if zero_dim else cl.ones(2, dtype=dt)


# (inputs, result) from the fact sheet's result_type table
RESULT_TYPE_TABLE = [
    ((_t(cl.int64), _t(cl.float32)), cl.float32),
    ((_t(cl.bool), _t(cl.bool)), cl.bool),
    ((_t(cl.bool), _t(cl.int64)), cl.int64),
    ((_t(cl.bool), 1), cl.int64),
    ((_t(cl.int32), _t(cl.int64)), cl.int64),
    ((_t(cl.uint8), _t(cl.int8)), cl.int16),
    ((_t(cl.float32), _t(cl.float64)), cl.float64),
    ((_t(cl.int64), 2.5), cl.float32),
    ((_t(cl.int32), 5), cl.int32),
    ((_t(cl.float32), _t(cl.float64, True)), cl.float32),
    ((_t(cl.int64), _t(cl.float64, True)), cl.float64),
    ((_t(cl.uint8), _t(cl.int64, True)), cl.uint8),
]


@pytest.mark.parametrize("args,expected", RESULT_TYPE_TABLE)
def test_result_type_fact_sheet(args, expected):
    assert cl.result_type(*args) is expected


def test_default_dtype_drives_float_results():
    assert cl.get_default_dtype() is cl.float32
    try:
        cl.set_default_dtype(cl.float64)
        assert cl.result_type(_t(cl.int64), 2.5) is cl.float64
        assert (cl.tensor([1, 2]) / 2).dtype is cl.float64
        assert cl.tensor([1.5]).dtype is cl.float64
    finally:
        cl.set_default_dtype(cl.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        cl.set_default_dtype(cl.int64)


def test_dtype_rules_from_the_fact_sheet():
    assert cl.tensor([1, 2]).dtype is cl.int64 and cl.tensor([True]).dtype is cl.bool
    assert cl.arange(3).dtype is cl.int64 and cl.zeros(2).dtype is cl.float32
    assert cl.from_numpy(np.zeros(2)).dtype is cl.float64
    assert (cl.tensor([1, 2], dtype=cl.int8) + 1000).tolist() == [-23, -22]  # wraps like C
    assert (cl.tensor([1, 2]) / 2).dtype is cl.float32
    assert (cl.tensor([-3]) // 2).item() == -2
    assert (cl.tensor([1]) < 2).dtype is cl.bool
    assert cl.tensor([True, True]).sum().dtype is cl.int64 and cl.tensor([1, 2], dtype=cl.int8).sum().dtype is cl.int64


# ---------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------
def test_metadata():
    t = cl.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, cl.Size) and t.size() == t.shape
    assert t.size(1) == 3 and t.size(-1) == 4 and t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.dim() == t.ndim == 3 and t.numel() == 24 and t.element_size() == 4 and t.itemsize == 4
    assert t.nbytes == 96 and t.dtype is cl.float32 and t.device == cl.device("cpu") and t.device == "cpu"
    assert t.storage_offset() == 0 and t.is_contiguous() and not t._is_view() and t._version == 0
    assert cl.zeros(()).shape == () and cl.zeros(()).stride() == () and cl.zeros(()).numel() == 1
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        t.size(3)


def test_size_type():
    s = cl.Size([2, 3, 4])
    assert isinstance(s, tuple) and s == (2, 3, 4) and s.numel() == 24 and cl.Size([]).numel() == 1
    assert repr(s) == "course_lib.Size([2, 3, 4])"
    assert isinstance(s[1:], cl.Size) and s[1:] == (3, 4) and isinstance(s[0], int)
    assert isinstance(s + (5,), cl.Size) and pickle.loads(pickle.dumps(s)) == s


def test_device():
    assert cl.device("cpu") is cl.device("cpu") and repr(cl.device("meta")) == "device(type='meta')"
    assert str(cl.device("cpu:0")) == "cpu:0" and cl.device("cpu:0").index == 0
    with pytest.raises(RuntimeError, match="Expected one of cpu, meta device type"):
        cl.device("tpu")
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        cl.zeros(2).to("cuda")


def test_storage_shares_and_counts_bytes():
    t = cl.arange(6.)
    v = t.view(2, 3)[1]
    s = t.untyped_storage()
    assert s == v.untyped_storage() and s.nbytes() == 24 and len(s) == 24
    assert v.data_ptr() == t.data_ptr() + 3 * 4
    assert s.numpy().dtype == np.uint8 and s.numpy().shape == (24,)
    assert t.clone().untyped_storage() != s
    m = cl.zeros(2, 3, device="meta")
    assert m.untyped_storage().nbytes() == 24 and m.data_ptr() == 0


def test_memory_accounting_follows_storages():
    before = cl.memory.memory_allocated()
    t = cl.zeros(1000)
    assert cl.memory.memory_allocated() == before + 4000
    v = t.view(10, 100)  # a view allocates nothing
    assert cl.memory.memory_allocated() == before + 4000
    del t, v
    assert cl.memory.memory_allocated() == before


# ---------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------
def test_numpy_round_trip_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = cl.from_numpy(a)
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    n = t.numpy()
    n[1, 2] = -1
    assert a[1, 2] == -1 and np.shares_memory(n, a)
    assert t.t().numpy().strides == (4, 12)


def test_scalars_and_lists():
    assert cl.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert cl.tensor(2.5).item() == 2.5 and isinstance(cl.tensor(7).item(), int)
    assert float(cl.tensor([3.5])) == 3.5 and int(cl.tensor(3)) == 3 and bool(cl.tensor([True]))
    assert len(cl.zeros(4, 2)) == 4 and [r.shape for r in cl.zeros(3, 2)] == [(2,)] * 3
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        cl.zeros(2).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(cl.zeros(2))
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(cl.tensor(1.))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(cl.tensor(1.))
    assert f"{cl.tensor(2.5):.2f}" == "2.50"


def test_to_and_casts():
    t = cl.arange(3.)
    assert t.to(cl.float32) is t and t.to("cpu") is t and t.float() is t
    assert t.to(cl.float32, copy=True) is not t
    assert t.long().dtype is cl.int64 and t.int().dtype is cl.int32 and t.half().dtype is cl.float16
    assert t.double().dtype is cl.float64 and t.bool().tolist() == [False, True, True]
    assert t.byte().dtype is cl.uint8 and t.char().dtype is cl.int8 and t.short().dtype is cl.int16
    assert (t * 1.7).long().tolist() == [0, 1, 3]  # truncates like C
    assert t.to(cl.zeros(1, dtype=cl.int64)).dtype is cl.int64
    m = t.to("meta")
    assert m.is_meta and m.shape == (3,) and m.device == cl.device("meta")
    assert t.type() == "torch.FloatTensor" and t.long().type() == "torch.LongTensor"


def test_requires_grad_only_floats():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        cl.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        cl.tensor([1, 2]).requires_grad_()


# ---------------------------------------------------------------------------
# the fact sheet's error table, word for word (also checked against torch in test_oracle_core)
# ---------------------------------------------------------------------------
def _raises(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg


M = cl.arange(6.).view(2, 3)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: M.T.view(6), RuntimeError,
     "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
     "contiguous subspaces). Use .reshape(...) instead."),
    (lambda: cl.zeros(6).view(4), RuntimeError, "shape '[4]' is invalid for input of size 6"),
    (lambda: cl.zeros(6).view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: cl.zeros(2, 3).expand(4, 3), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 0.  "
     "Target sizes: [4, 3].  Tensor sizes: [2, 3]"),
    (lambda: cl.zeros(2, 3).expand(3), RuntimeError,
     "expand(torch.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be greater or equal to "
     "the number of dimensions in the tensor (2)"),
    (lambda: cl.zeros(2, 3) + cl.zeros(4), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    (lambda: cl.zeros(2, 3) @ cl.zeros(4, 5), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: cl.mm(cl.zeros(2, 3), cl.zeros(4, 5)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: cl.zeros(3) @ cl.zeros(4), RuntimeError,
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 "
     "and 4 elements respectively"),
    (lambda: cl.zeros(2, 3) @ cl.zeros(4), RuntimeError, "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda: cl.zeros(2, 2, 3) @ cl.zeros(3, 3, 4), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: cl.tensor(1.) @ cl.tensor(2.), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 0D and 0D"),
    (lambda: cl.tensor([[1, 2], [3]]), ValueError, "expected sequence of length 2 at dim 1 (got 1)"),
    (lambda: cl.tensor([[1, 2], 3]), TypeError, "not a sequence"),
    (lambda: cl.tensor([1, [2, 3]]), TypeError, "'list' object cannot be interpreted as an integer"),
    (lambda: cl.tensor([1, 2], requires_grad=True), RuntimeError,
     "Only Tensors of floating point and complex dtype can require gradients"),
    (lambda: cl.zeros(3, dtype=cl.int64).add_(cl.zeros(3)), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    (lambda: cl.zeros(2, 3).sum(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: cl.zeros(3, dtype=cl.int64).mean(), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
    (lambda: cl.zeros(3)[::-1], ValueError, "step must be greater than zero"),
    (lambda: cl.zeros(2, dtype=cl.bool) - cl.zeros(2, dtype=cl.bool), RuntimeError,
     "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
     "operator instead."),
])
def test_fact_sheet_error_table(fn, exc, msg):
    _raises(fn, exc, msg)


def test_fact_sheet_warnings_and_no_ops():
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        cl.zeros(2, 3, 4).T
    assert cl.zeros(2, 3).squeeze(0).shape == (2, 3)  # silent no-op on a non-1 dim
