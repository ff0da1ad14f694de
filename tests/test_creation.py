"""tensor() and the factory functions: library tests and comparisons with real torch."""
from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from oracle import require_torch

import course_lib as cl
from course_lib import _creation as C


def dname(dtype) -> str:
    return str(dtype).split(".")[-1]


def outcome(fn):
    """('ok', dtype name, shape, values as a list) or ('error', type name, message), plus warnings."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn()
        except Exception as e:  # noqa: BLE001 - we compare exception types
            res = ("error", type(e).__name__, str(e))
        else:
            if r.device.type == "meta":
                res = ("ok", dname(r.dtype), tuple(r.shape), "meta")
            else:
                a = np.array(r.detach().numpy() if hasattr(r, "detach") and r.requires_grad else r.numpy(),
                             dtype=np.float64 if r.dtype.is_floating_point else None)
                res = ("ok", dname(r.dtype), tuple(r.shape), a.tolist(), bool(r.requires_grad))
    msgs = sorted(str(x.message).split(" (Triggered internally")[0] for x in w)
    return res, msgs


def same(a, b) -> bool:
    """Outcomes equal, with NaN equal to NaN."""
    if a[0] != b[0] or len(a) != len(b):
        return False
    if a[0] == "error":
        return a == b
    if a[:3] != b[:3] or a[4:] != b[4:]:
        return False
    x, y = np.array(a[3], dtype=object), np.array(b[3], dtype=object)
    if a[3] == "meta" or b[3] == "meta":
        return a[3] == b[3]
    fx, fy = np.array(a[3], dtype=np.float64), np.array(b[3], dtype=np.float64)
    return x.shape == y.shape and bool(np.array_equal(fx, fy, equal_nan=True))


# ---------------------------------------------------------------------------
# tensor(): library tests
# ---------------------------------------------------------------------------
def test_shape_and_dtype_inference():
    t = cl.tensor([[1, 2], [3, 4]])
    assert t.shape == (2, 2) and t.dtype is cl.int64 and t.stride() == (2, 1)
    assert cl.tensor([1, 2.5]).dtype is cl.float32
    assert cl.tensor([True, False]).dtype is cl.bool
    assert cl.tensor([True, 1]).dtype is cl.int64
    assert cl.tensor([]).dtype is cl.float32 and cl.tensor([]).shape == (0,)
    assert cl.tensor(3).shape == () and cl.tensor(3.5).item() == 3.5
    assert cl.tensor(np.float64(1)).dtype is cl.float64
    assert cl.tensor([np.int32(1), np.int16(2)]).dtype is cl.int32
    assert cl.tensor(((1, 2), (3, 4))).tolist() == [[1, 2], [3, 4]]
    assert cl.tensor(range(3)).tolist() == [0, 1, 2]


def test_compute_sizes_walks_first_elements():
    assert C._compute_sizes([[1, 2, 3], [4, 5, 6]]) == [2, 3]
    assert C._compute_sizes([[], [1]]) == [2, 0]
    assert C._compute_sizes(5) == []


@pytest.mark.parametrize("data, exc, msg", [
    ([[1, 2], [3]], ValueError, "expected sequence of length 2 at dim 1 (got 1)"),
    ([[1, 2], 3], TypeError, "not a sequence"),
    ([1, [2, 3]], TypeError, "'list' object cannot be interpreted as an integer"),
    ([1., [2, 3]], TypeError, "must be real number, not list"),
    ([[[1, 2], [3, 4]], [[1, 2], [3]]], ValueError, "expected sequence of length 2 at dim 2 (got 1)"),
    ([None], RuntimeError, "Could not infer dtype of NoneType"),
    ("abc", TypeError, "new(): invalid data type 'str'"),
])
def test_ragged_and_bad_inputs_raise_pytorch_errors(data, exc, msg):
    with pytest.raises(exc) as info:
        cl.tensor(data)
    assert str(info.value) == msg


def test_recursive_store_is_the_reference_for_the_fast_path():
    data = [[1.5, 2, True], [4, -5.25, 6]]
    sizes = C._compute_sizes(data)
    dtype = C._infer_scalar_type(data)
    buf = np.empty(6, dtype=dtype.np)
    C._recursive_store(buf, 0, sizes, [3, 1], 0, dtype, data)
    fast = C._fast_path(data, sizes, None)
    assert fast is not None and fast.dtype == np.float32
    np.testing.assert_array_equal(buf.reshape(2, 3), fast)
    np.testing.assert_array_equal(cl.tensor(data).numpy(), fast)


def test_tensor_copies_numpy_and_tensors():
    a = np.arange(6.).reshape(2, 3)
    t = cl.tensor(a)
    a[0, 0] = 99
    assert t.tolist()[0][0] == 0.0 and t.dtype is cl.float64
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        u = cl.tensor(t)
    assert u._storage is not t._storage and u.tolist() == t.tolist()


def test_requires_grad_only_for_floats():
    assert cl.tensor([1.], requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        cl.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point"):
        cl.arange(3, requires_grad=True)


def test_meta_device():
    t = cl.tensor([[1, 2]], device="meta")
    assert t.is_meta and t.shape == (1, 2) and t.dtype is cl.int64
    assert cl.zeros(2, 3, device="meta").is_meta
    assert cl.eye(2, device="meta").shape == (2, 2)


# ---------------------------------------------------------------------------
# tensor(): against torch
# ---------------------------------------------------------------------------
TENSOR_CASES = [
    "T.tensor([[1,2],[3]])", "T.tensor([[1,2],3])", "T.tensor([1,[2,3]])", "T.tensor([[1.,2],3])",
    "T.tensor([1.,[2,3]])", "T.tensor([True,[2,3]])", "T.tensor([[True],[False, True]])",
    "T.tensor([1,[2,3]], dtype=T.float32)", "T.tensor([1,[2,3]], dtype=T.bool)", "T.tensor([1,[2,3]], dtype=T.int32)",
    "T.tensor([1,[2,3]], dtype=T.float16)", "T.tensor([[1,2],[3,4,5]])", "T.tensor([[[1,2],[3,4]],[[1,2],[3]]])",
    "T.tensor([])", "T.tensor([[],[]])", "T.tensor([[]])", "T.tensor([[], [1]])", "T.tensor([[1], []])",
    "T.tensor([[[]]])", "T.tensor([1, 2.5])", "T.tensor([True, 1])", "T.tensor([True, 1.5])",
    "T.tensor([np.float64(1), 2])", "T.tensor([np.int32(1), 2])", "T.tensor([np.int32(1), np.int16(2)])",
    "T.tensor([np.uint8(1), np.int8(2)])", "T.tensor(np.float64(1))", "T.tensor(np.int32(3))",
    "T.tensor(np.bool_(True))",
    "T.tensor([np.bool_(True)])", "T.tensor([np.bool_(True), 2])", "T.tensor([np.float32(1.5)], dtype=T.int64)",
    "T.tensor([np.float64(1.5)], dtype=T.int64)", "T.tensor([np.float32(1.5), 2])",
    "T.tensor([T.tensor(1.), T.tensor(2.)])", "T.tensor([T.tensor([1.,2]), T.tensor([3.,4])])",
    "T.tensor([T.tensor(1., dtype=T.float64), 2])", "T.tensor([T.tensor([1,2]), T.tensor([3])])",
    "T.tensor([T.tensor([1,2]), [3, 4]])", "T.tensor([[3, 4], T.tensor([1,2])])", "T.tensor([T.tensor([1,2]), 3])",
    "T.tensor([1, T.tensor(2)])", "T.tensor([T.tensor(1.5), 2], dtype=T.int64)",
    "T.tensor([T.tensor(1.5)], dtype=T.bool)",
    "T.tensor([[1,2], T.tensor(3)])", "T.tensor([T.tensor([[1]]), 2])", "T.tensor([T.tensor(True), False])",
    "T.tensor([[1.5,2], T.tensor([1,2])], dtype=T.int64)",
    "T.tensor([np.array([1,2]), np.array([3,4])])", "T.tensor([np.array([1.,2]), [3,4]])",
    "T.tensor([[1,2],np.array([3,4])])", "T.tensor([[1,2],np.array([3,4,5])])", "T.tensor([[1,2],np.array([3.5,4])])",
    "T.tensor([[1,2],np.array([3,4], dtype=np.float32)])", "T.tensor([np.array([True, False]), [1, 2]])",
    "T.tensor([[1,2], np.array(3)])", "T.tensor([np.array(3), 4])", "T.tensor([4, np.array(3)])",
    "T.tensor([4, np.array([3])])", "T.tensor([np.array([3]), 4])",
    "T.tensor('abc')", "T.tensor(['a'])", "T.tensor([None])", "T.tensor(None)", "T.tensor([1, None])",
    "T.tensor({1:2})", "T.tensor(object())", "T.tensor([1, 'a'])", "T.tensor(['a', 1])", "T.tensor([[1,2],'ab'])",
    "T.tensor((1,2))", "T.tensor(range(3))", "T.tensor([range(2), range(2)])",
    "T.tensor([1.7, -1.7], dtype=T.int64)", "T.tensor([300], dtype=T.uint8)", "T.tensor([-1], dtype=T.uint8)",
    "T.tensor([-255], dtype=T.uint8)", "T.tensor([-256], dtype=T.uint8)", "T.tensor([-1.7], dtype=T.uint8)",
    "T.tensor([255.9], dtype=T.uint8)", "T.tensor([-128.5], dtype=T.int8)", "T.tensor([127.9], dtype=T.int8)",
    "T.tensor([2**40], dtype=T.int32)", "T.tensor([2**63])", "T.tensor([2**64])", "T.tensor([-2**63])",
    "T.tensor([1e10], dtype=T.int32)", "T.tensor([float('nan')], dtype=T.int64)",
    "T.tensor([float('inf')], dtype=T.int64)",
    "T.tensor([2.0**63], dtype=T.int64)", "T.tensor([9.2e18], dtype=T.int64)",
    "T.tensor([2**31-1, -2**31], dtype=T.int32)",
    "T.tensor([2, 0, 0.5], dtype=T.bool)", "T.tensor([float('nan')], dtype=T.bool)", "T.tensor([2**64], dtype=T.bool)",
    "T.tensor([2**64], dtype=T.float32)", "T.tensor([True], dtype=T.float32)", "T.tensor([1e40])",
    "T.tensor([1e40], dtype=T.float16)", "T.tensor([65520.], dtype=T.float16)", "T.tensor([2**60+1], dtype=T.float32)",
    "T.tensor([1.5, 2**60+1], dtype=T.int64)", "T.tensor([0.1, 1/3, 2/3], dtype=T.float16)",
    "T.tensor(3)", "T.tensor(3.5)", "T.tensor(True)", "T.tensor(1.5, dtype=T.int32)", "T.tensor(2**63)",
    "T.tensor([[1,2]], requires_grad=True)", "T.tensor([1.], requires_grad=True)",
    "T.tensor([1], dtype=T.float64, requires_grad=True)", "T.tensor(T.ones(2))", "T.tensor(T.ones(2), dtype=T.int64)",
    "T.tensor(T.tensor([1.,2.], requires_grad=True))", "T.tensor(np.ones((2,2)))", "T.tensor(np.ones((2,2))[:, ::-1])",
    "T.tensor(np.array(3.5), dtype=T.int32)", "T.tensor(np.array([300.]), dtype=T.uint8)",
    "T.tensor(np.array([[1, 2], [3, 4]], dtype=np.int8).T)", "T.tensor(np.ones(3).astype('>f8'))",
    "T.tensor([[1,2],[3,4]], dtype=T.float64)", "T.tensor(1, device='meta')", "T.tensor([[1,2]], device='meta')",
    "T.tensor([[1,2],[3,4]], dtype=float)", "T.tensor([1.5], dtype=int)", "T.tensor([1, 0], dtype=bool)",
]


@pytest.mark.oracle
@pytest.mark.parametrize("expr", TENSOR_CASES)
def test_tensor_matches_torch(expr):
    torch = require_torch()
    C._warned_ndarray_list[0] = False
    ours = outcome(lambda: eval(expr, {"T": cl, "np": np}))
    theirs = outcome(lambda: eval(expr, {"T": torch, "np": np}))
    assert same(ours[0], theirs[0]), (ours, theirs)
    if ours[1] or theirs[1]:
        # torch warns about lists of arrays only once per process; compare the other warnings
        a = [m for m in ours[1] if "list of numpy.ndarrays" not in m]
        b = [m for m in theirs[1] if "list of numpy.ndarrays" not in m]
        assert a == b


scalars = st.one_of(
    st.booleans(), st.integers(-300, 300), st.integers(-2 ** 64, 2 ** 64),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e3, 1e3),
    st.sampled_from([0.5, -0.0, 1.0, 255.0, 256.0, -1.0, 1e10]),
)


@st.composite
def nested(draw):
    """Nested lists, mostly rectangular, sometimes ragged or with a list where a number should be."""
    depth = draw(st.integers(0, 3))
    shape = draw(st.lists(st.integers(0, 4), min_size=depth, max_size=depth))
    kind = draw(st.sampled_from(["bool", "int", "float", "mixed", "mixed"]))
    leaf = {"bool": st.booleans(), "int": st.integers(-2 ** 63, 2 ** 63 - 1) | st.integers(-300, 300),
            "float": st.floats(allow_nan=True, allow_infinity=True), "mixed": scalars}[kind]
    corrupt = draw(st.integers(0, 4)) == 0

    def build(level):
        if level == len(shape):
            if corrupt and draw(st.integers(0, 6)) == 0:
                return draw(st.sampled_from([[1, 2], [], [1.5], (True,)]))
            return draw(leaf)
        n = shape[level]
        if corrupt and draw(st.integers(0, 5)) == 0:
            n = draw(st.integers(0, 5))
            if level + 1 < len(shape) and draw(st.booleans()):
                return draw(leaf)
        return [build(level + 1) for _ in range(n)]
    return build(0)


DTYPE_NAMES = [None, "float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.oracle
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=nested(), dtype=st.sampled_from(DTYPE_NAMES))
@example(data=[[False, False], [0, 2**63]], dtype=None)   # numpy makes float64 of these ints
@example(data=[0, -2**63 - 1], dtype="int64")
@example(data=[0, 2**63], dtype="float32")
def test_random_nested_lists_match_torch(data, dtype):
    torch = require_torch()
    ours = outcome(lambda: cl.tensor(data, dtype=dtype and getattr(cl, dtype)))
    theirs = outcome(lambda: torch.tensor(data, dtype=dtype and getattr(torch, dtype)))
    assert same(ours[0], theirs[0]), (data, dtype, ours, theirs)


@settings(max_examples=200, deadline=None)
@given(data=nested(), dtype=st.sampled_from(DTYPE_NAMES))
def test_fast_path_agrees_with_recursive_store(data, dtype):
    """Whatever numpy computes on the fast path, the readable reference path computes too."""
    d = dtype and getattr(cl, dtype)
    try:
        sizes = C._compute_sizes(data)
        fast = C._fast_path(data, sizes, d)
    except Exception:  # noqa: BLE001 - the reference raises the error in that case
        return
    if fast is None:
        return
    ref_dtype = d or C._infer_scalar_type(data)
    buf = np.empty(fast.size, dtype=ref_dtype.np)
    C._recursive_store(buf, 0, sizes, list(cl.zeros(sizes).stride()), 0, ref_dtype, data)
    assert fast.dtype == buf.dtype
    np.testing.assert_array_equal(buf.reshape(fast.shape), fast)


# ---------------------------------------------------------------------------
# factories
# ---------------------------------------------------------------------------
def test_sizes_as_varargs_or_sequence():
    for t in (cl.zeros(2, 3), cl.zeros((2, 3)), cl.zeros([2, 3]), cl.zeros(cl.Size([2, 3]))):
        assert t.shape == (2, 3) and t.dtype is cl.float32
    assert cl.ones(2, dtype=cl.int64).tolist() == [1, 1]
    assert cl.empty(3, 0).shape == (3, 0)
    assert cl.zeros([]).shape == ()


def test_full_infers_dtype_from_value():
    assert cl.full((2,), True).dtype is cl.bool
    assert cl.full((2,), 3).dtype is cl.int64
    assert cl.full((2,), 3.).dtype is cl.float32
    assert cl.full((2,), 1.5, dtype=cl.int64).tolist() == [1, 1]


def test_arange_linspace_eye_basics():
    assert cl.arange(5).tolist() == [0, 1, 2, 3, 4] and cl.arange(5).dtype is cl.int64
    assert cl.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert cl.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert cl.eye(2, 3).tolist() == [[1., 0., 0.], [0., 1., 0.]]
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        cl.arange(0, 5, 0)


FACTORY_CASES = [
    "T.zeros(2,3)", "T.zeros((2,3))", "T.zeros([2,3])", "T.zeros(2, dtype=T.int64)", "T.zeros(-1)", "T.zeros(2,-1)",
    "T.zeros(2.5)", "T.zeros(2, 2.5)", "T.zeros((2, None))", "T.zeros('a')", "T.zeros([])", "T.ones(0)",
    "T.zeros(np.int64(2))", "T.zeros(2, dtype=float)", "T.ones(-1)", "T.empty(-2).shape", "T.ones(3, dtype=T.bool)",
    "T.full((-1,),1.)", "T.full((2,), True)", "T.full((2,), 3)", "T.full((2,), 3.)", "T.full((2,), 3, dtype=T.float64)",
    "T.full([2], 1.5, dtype=T.int64)", "T.full(2, 1.)", "T.full((2,), T.tensor(3.))", "T.full((), 7)",
    "T.full((2,), np.float32(1.))", "T.full((2,2), float('nan'))", "T.full((2,), 300, dtype=T.uint8)",
    "T.full((2,), -1, dtype=T.uint8)", "T.full((2,), 1e10, dtype=T.int32)", "T.full((2,), 200, dtype=T.int8)",
    "T.full((2,), 2**40, dtype=T.int16)", "T.full((2,), 2**63)", "T.full((2,), 5, dtype=T.bool)",
    "T.full((2,), 1e39, dtype=T.float32)", "T.full((2,), 70000., dtype=T.float16)",
    "T.full((2,), float('nan'), dtype=T.int64)",
    "T.full((2,), 2.5, dtype=T.uint8)", "T.full((2,), -2.5, dtype=T.uint8)", "T.full((2,), -256, dtype=T.uint8)",
    "T.full((2,), float('inf'))", "T.full((2,), -0.0)",
    "T.arange(5)", "T.arange(5.)", "T.arange(0, 5, 2)", "T.arange(0, 5, 0.5)", "T.arange(1, 0)", "T.arange(0, 5, 0)",
    "T.arange(0, 5, -1)", "T.arange(5, 0, -1)", "T.arange(0, 1, 0.1)", "T.arange(1, 4, dtype=T.float64)",
    "T.arange(0.5, 3, dtype=T.int64)", "T.arange(float('nan'))", "T.arange(float('inf'))", "T.arange(-1)",
    "T.arange(0,-3,-1.5)", "T.arange(True)", "T.arange(3, dtype=T.bool)", "T.arange(3, dtype=T.uint8)",
    "T.arange(T.tensor(3))", "T.arange(T.tensor(3.))", "T.arange(np.float64(3))", "T.arange(np.int32(3))",
    "T.arange(3., requires_grad=True)", "T.arange(0., float('nan'))", "T.arange(1.5, float('inf'))",
    "T.arange(0, 10, float('nan'))", "T.arange(float('-inf'), 0)", "T.arange(2**62, 2**63-1, 2**61)",
    "T.arange(0.5, 3.5, dtype=T.int32)", "T.arange(0, 2.5, 0.5, dtype=T.int32)",
    "T.arange(-3, 3, 0.7, dtype=T.float16)",
    "T.arange(0, 5, 1.5, dtype=T.int64)", "T.arange(-1.5, 2.2, 0.7, dtype=T.int64)", "T.arange(0, 1, 1e-20)",
    "T.arange(start=2, end=5)", "T.arange(end=5)", "T.arange(2, end=5, step=2)", "T.arange(1e9, 1e9+5)",
    "T.arange(10, dtype=T.float16)", "T.arange(3, device='meta')",
    "T.linspace(0, 1, 5)", "T.linspace(0, 10, 5, dtype=T.int64)", "T.linspace(0, 1, 1)", "T.linspace(0, 1, 0)",
    "T.linspace(0, 1, -1)", "T.linspace(3, -1, 7)", "T.linspace(-3.3,7.7,13)", "T.linspace(0, 10, 4, dtype=T.int64)",
    "T.linspace(10, 0, 4, dtype=T.int64)", "T.linspace(0, 255, 7, dtype=T.uint8)",
    "T.linspace(-1, 1, 6, dtype=T.int64)",
    "T.linspace(-7, 5, 6, dtype=T.int32)", "T.linspace(0, 1, 5, dtype=T.bool)", "T.linspace(T.tensor(0.), 1, 3)",
    "T.linspace(1, 2, 5, requires_grad=True)", "T.linspace(0, 1, 5, dtype=T.float64)", "T.linspace(0, 1, 2.5)",
    "T.eye(3)", "T.eye(2,3)", "T.eye(3, 2)", "T.eye(3, dtype=T.int64)", "T.eye(-1)", "T.eye(0)", "T.eye(2,-1)",
    "T.eye(2, dtype=T.bool)", "T.eye(2, requires_grad=True)", "T.eye(2.0)",
    "T.scalar_tensor(3)", "T.scalar_tensor(True)", "T.scalar_tensor(3, dtype=T.int64)",
    "T.scalar_tensor(2.5, dtype=T.int64)",
    "T.scalar_tensor(T.tensor(2.))", "T.scalar_tensor([1])",
    "T.as_tensor([1,2])", "T.as_tensor(np.array([1,2],dtype=np.int32))", "T.as_tensor(T.ones(2), dtype=T.float64)",
    "T.as_tensor(np.ones(3)[::-1])", "T.as_tensor(3)", "T.as_tensor(3.5, dtype=T.float64)",
    "T.from_numpy(np.ones(3)[::-1])", "T.from_numpy([1,2])", "T.from_numpy(np.array(3))",
    "T.from_numpy(np.ones(3).astype('>f8'))", "T.from_numpy(np.lib.stride_tricks.as_strided(np.ones(8), (2,), (3,)))",
    "T.from_numpy(np.ones((3,1))[::-1])",
    "T.zeros_like(T.ones(2, dtype=T.int32))", "T.full_like(T.ones(2, dtype=T.int32), 2.7)",
    "T.full_like(T.ones(2), 2.7, dtype=T.int64)", "T.full_like(T.ones(2, dtype=T.uint8), 300)",
    "T.full_like(T.ones(2, dtype=T.int64), True)", "T.ones_like(T.zeros(2, 3, device='meta'))",
    "T.rand_like(T.ones(2, dtype=T.int64))", "T.randn_like(T.ones(2, dtype=T.int64))",
    "T.empty_strided((2,3),(1,)).shape", "T.empty_strided((2,3),(-1,1)).shape", "T.empty_strided((-1,),(1,)).shape",
    "T.ones(2, requires_grad=True)", "T.ones(2, dtype=T.int64, requires_grad=True)",
    "T.zeros(2, 3, dtype=T.float64, device='meta')", "T.empty(2, device='meta')",
]


@pytest.mark.oracle
@pytest.mark.parametrize("expr", FACTORY_CASES)
def test_factories_match_torch(expr):
    torch = require_torch()
    ours = outcome(lambda: eval(expr, {"T": cl, "np": np}))
    theirs = outcome(lambda: eval(expr, {"T": torch, "np": np}))
    if theirs[0][0] == "error" and theirs[0][1] == "TypeError" and "invalid combination" in theirs[0][2]:
        # torch's argument parser lists every overload; we only promise the exception type.
        assert ours[0][:2] == theirs[0][:2]
        return
    if theirs[0][0] == "error" and "must be torch.dtype" in theirs[0][2]:
        theirs = ((theirs[0][0], theirs[0][1], theirs[0][2].replace("torch.dtype", "course_lib.dtype")), theirs[1])
    assert same(ours[0], theirs[0]), (ours, theirs)


@pytest.mark.oracle
@settings(max_examples=300, deadline=None)
@given(start=st.one_of(st.integers(-50, 50), st.floats(-50, 50)),
       length=st.one_of(st.integers(0, 60), st.floats(0, 60)),
       step=st.one_of(st.integers(-7, 7).filter(bool), st.floats(0.01, 7), st.floats(-7, -0.01)),
       dtype=st.sampled_from([None, "float32", "float64", "int64", "int32", "float16"]))
def test_arange_random_matches_torch(start, length, step, dtype):
    torch = require_torch()
    end = start + (length if step > 0 else -length)
    ours = outcome(lambda: cl.arange(start, end, step, dtype=dtype and getattr(cl, dtype)))
    theirs = outcome(lambda: torch.arange(start, end, step, dtype=dtype and getattr(torch, dtype)))
    assert ours[0][:3] == theirs[0][:3], (start, end, step, dtype, ours, theirs)
    if ours[0][0] == "ok":
        # Same length and dtype; floats may differ in the last bit (torch's kernel is vectorised).
        np.testing.assert_allclose(ours[0][3], theirs[0][3], rtol=1e-3 if dtype == "float16" else 1e-6,
                                   atol=1e-2 if dtype == "float16" else 1e-5)


@pytest.mark.oracle
@settings(max_examples=300, deadline=None)
@given(start=st.one_of(st.integers(-100, 100), st.floats(-100, 100)),
       end=st.one_of(st.integers(-100, 100), st.floats(-100, 100)),
       steps=st.integers(0, 300),
       dtype=st.sampled_from([None, "float32", "float64", "float16", "int64", "int32", "int16", "uint8"]))
def test_linspace_random_matches_torch(start, end, steps, dtype):
    """PyTorch's halfway split, FMA and half-precision arithmetic: integers exact, floats
    within 2 ulp (torch's vectorised inner loop rounds some elements differently)."""
    torch = require_torch()
    if dtype == "uint8":
        start, end = abs(start), abs(end)
    ours = cl.linspace(start, end, steps, dtype=dtype and getattr(cl, dtype))
    theirs = torch.linspace(start, end, steps, dtype=dtype and getattr(torch, dtype))
    assert dname(ours.dtype) == dname(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    if ours.dtype.is_floating_point:
        np.testing.assert_array_max_ulp(ours.numpy(), theirs.numpy(), maxulp=2)
        if steps:
            assert ours.numpy()[0] == theirs.numpy()[0] and ours.numpy()[-1] == theirs.numpy()[-1]
    else:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---------------------------------------------------------------------------
# *_like, empty_strided, from_numpy, as_tensor
# ---------------------------------------------------------------------------
@st.composite
def strided_layouts(draw):
    """(shape, strides, offset) of a view of a small buffer: permuted, sliced, expanded."""
    ndim = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    base = cl.zeros(shape).stride()
    perm = draw(st.permutations(range(ndim)))
    shape = [shape[p] for p in perm]
    strides = [base[p] for p in perm]
    for i in range(ndim):
        if draw(st.integers(0, 3)) == 0:
            strides[i] *= draw(st.integers(2, 3))
        if draw(st.integers(0, 5)) == 0:
            strides[i] = 0
        if draw(st.integers(0, 6)) == 0:
            shape[i] = draw(st.sampled_from([0, 1]))
    return tuple(shape), tuple(strides)


@pytest.mark.oracle
@settings(max_examples=200, deadline=None)
@given(layout=strided_layouts(), fn=st.sampled_from(["zeros_like", "ones_like", "empty_like", "rand_like",
                                                      "randn_like", "full_like"]))
def test_like_functions_keep_layout_like_torch(layout, fn):
    torch = require_torch()
    shape, strides = layout
    size = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if 0 not in shape else 0
    x_t = torch.zeros(max(size, 1)).as_strided(shape, strides)
    x_c = cl.Tensor._make(cl.zeros(max(size, 1))._storage, 0, shape, strides, cl.float32)
    args = (2.5,) if fn == "full_like" else ()
    r_t, r_c = getattr(torch, fn)(x_t, *args), getattr(cl, fn)(x_c, *args)
    assert tuple(r_c.shape) == tuple(r_t.shape)
    assert r_c.stride() == r_t.stride(), (shape, strides)
    assert r_c.untyped_storage().nbytes() == r_t.untyped_storage().nbytes()


def test_zeros_like_values_and_dtype():
    x = cl.ones(2, 3, dtype=cl.int32)
    z = cl.zeros_like(x)
    assert z.dtype is cl.int32 and z.tolist() == [[0, 0, 0], [0, 0, 0]]
    assert cl.full_like(x, 7).tolist() == [[7] * 3] * 2
    assert cl.ones_like(x, dtype=cl.float64).dtype is cl.float64


@pytest.mark.oracle
@pytest.mark.parametrize("shape, strides", [((2, 3), (1, 2)), ((2, 3), (0, 1)), ((2, 0), (5, 1)), ((), ()),
                                             ((3, 1, 4), (4, 999, 1)), ((2, 2), (3, 7))])
def test_empty_strided_storage_size_matches_torch(shape, strides):
    torch = require_torch()
    a, b = cl.empty_strided(shape, strides), torch.empty_strided(shape, strides)
    assert a.stride() == b.stride() and tuple(a.shape) == tuple(b.shape)
    assert a.untyped_storage().nbytes() == b.untyped_storage().nbytes()


@pytest.mark.oracle
@pytest.mark.parametrize("make", [
    lambda: np.ones(3), lambda: np.ones(3)[1:], lambda: np.ones(7)[::2], lambda: np.ones((2, 3)).T,
    lambda: np.ones((2, 0)), lambda: np.ones((2, 1))[:, ::2], lambda: np.arange(24.).reshape(2, 3, 4)[:, 1:, ::3],
    lambda: np.array(3), lambda: np.ones(4, dtype=np.float32).view(np.int32)[1:3].reshape(2, 1),
    lambda: np.broadcast_to(np.ones(3), (2, 3)), lambda: np.ones(8, dtype=np.uint8)[1:],
])
def test_from_numpy_layout_matches_torch(make):
    torch = require_torch()
    a = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = cl.from_numpy(a), torch.from_numpy(a)
    assert ours.stride() == theirs.stride() and ours.storage_offset() == theirs.storage_offset()
    assert ours.untyped_storage().nbytes() == theirs.untyped_storage().nbytes()
    assert dname(ours.dtype) == dname(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_from_numpy_shares_memory_both_ways():
    a = np.zeros((3, 4))
    t = cl.from_numpy(a[:, 1:])
    a[0, 1] = 5.0
    assert t.tolist()[0][0] == 5.0
    t.numpy()[2, 2] = 7.0
    assert a[2, 3] == 7.0
    assert t.data_ptr() == a[:, 1:].__array_interface__["data"][0]


def test_as_tensor_shares_when_it_can():
    a = np.ones(3)
    t = cl.as_tensor(a)
    assert np.shares_memory(t.numpy(), a)
    assert not np.shares_memory(cl.as_tensor(a, dtype=cl.float32).numpy(), a)
    u = cl.ones(3)
    assert cl.as_tensor(u) is u and cl.as_tensor(u, dtype=cl.float32) is u
    assert cl.as_tensor(u, dtype=cl.float64) is not u


# ---------------------------------------------------------------------------
# pickling and deepcopy helpers
# ---------------------------------------------------------------------------
def test_pickle_round_trip():
    t = cl.tensor([[1.5, 2.0], [3.0, 4.0]], requires_grad=True)
    u = pickle.loads(pickle.dumps(t))
    assert u.tolist() == t.tolist() and u.requires_grad and u.dtype is cl.float32


def test_deepcopy_copies_data_keeps_requires_grad_and_grad():
    t = cl.tensor([1., 2.], requires_grad=True)
    t.grad = cl.tensor([0.5, 0.5])
    u = copy.deepcopy(t)
    assert u._storage is not t._storage and u.tolist() == [1., 2.] and u.requires_grad
    assert u.grad is not t.grad and u.grad.tolist() == [0.5, 0.5]
    t.numpy(force=True)[0] = 9.0
    assert u.tolist()[0] == 1.0


def test_deepcopy_keeps_subclass_and_storage_sharing():
    class MyParam(cl.Tensor):
        pass

    base = cl.arange(6.)
    p = MyParam._make(base._storage, 0, (6,), (1,), cl.float32)
    v = cl.Tensor._make(base._storage, 2, (2,), (1,), cl.float32)
    p2, v2 = copy.deepcopy([p, v])
    assert type(p2) is MyParam
    assert p2._storage is v2._storage and p2._storage is not base._storage
    assert v2.tolist() == [2.0, 3.0]


def test_deepcopy_of_non_leaf_is_refused():
    class MulBackward0:
        pass

    t = cl.tensor([1., 2.])
    t.grad_fn = MulBackward0()
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(t)


def test_fill_zero_keeps_negative_zero():
    assert math.copysign(1.0, cl.full((1,), -0.0).item()) == -1.0
