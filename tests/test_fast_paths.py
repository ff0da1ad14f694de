"""Hand-inlined fast paths, each held to the readable code it stands for.

Where course_lib writes a common case out by hand for speed, the result must be the one the
readable version gives: the same values, dtype, shape, strides, version, storage fields and
memory accounting.  Each test runs the fast path and the readable one (the fast path switched
off, or the readable code written out here) on the same inputs and compares everything.

=====================================  ==============================================================
fast path                              readable version
=====================================  ==============================================================
``common.wrap`` (every kernel result)  ``Tensor._make(Storage(flat, dtype), 0, shape, strides, dtype)``
memory accounting in ``Storage``       ``course_lib.memory._allocated`` / ``_freed``
  and ``wrap``
same-dtype ``add`` / ``mul``           the general path: ``binary_result_type``, ``_apply_binary``, ``wrap``
  (``pointwise._same_dtype``)
``common.binary_result_type``          ``common.result_type``
numpy ``sum_to_size`` (no graph of     ``g.sum(dims, keepdim=True).view(shape)`` through the dispatcher
  the backward recorded)
one-kernel backwards of relu and       their formulas in course_lib ops (what ``create_graph=True``
  log_softmax, nll_loss's gather         records)
=====================================  ==============================================================
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import course_lib as cl
import course_lib.nn.functional as F
from course_lib import _dtype, memory
from course_lib._ops import common, pointwise
from course_lib._storage import Storage
from course_lib.autograd.variable_type import sum_to_size

DTYPES = [_dtype.bool_, _dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32, _dtype.int64, _dtype.float16,
          _dtype.float32, _dtype.float64]
_MISSING = object()


# ---------------------------------------------------------------------------
# comparing two objects field by field
# ---------------------------------------------------------------------------
def _slots(obj) -> list:
    names = []
    for cls in type(obj).__mro__:
        names += [s for s in cls.__dict__.get("__slots__", ()) if s not in ("__weakref__", "__dict__")]
    return names


def _same_array(a: np.ndarray, b: np.ndarray, where: str) -> None:
    assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides, where
    np.testing.assert_array_equal(a, b, err_msg=where)


def assert_same_state(fast, slow, where: str = "tensor") -> None:
    """Every slot and instance attribute of two tensors (and of their storages) agree: arrays by
    type, dtype, shape, strides and values; the numpy cache by whether it shares the storage's memory."""
    assert type(fast) is type(slow), where
    for name in _slots(fast):
        f, s = getattr(fast, name, _MISSING), getattr(slow, name, _MISSING)
        if isinstance(f, Storage):
            assert isinstance(s, Storage), f"{where}.{name}"
            assert_same_state(f, s, f"{where}.{name}")
        elif isinstance(f, np.ndarray):
            assert isinstance(s, np.ndarray), f"{where}.{name}"
            _same_array(f, s, f"{where}.{name}")
            if isinstance(fast, cl.Tensor):
                assert np.shares_memory(f, fast._storage.data) == np.shares_memory(s, slow._storage.data), name
        else:
            assert f == s if name != "dtype" else f is s, f"{where}.{name}: {f!r} != {s!r}"
    assert fast.__dict__.keys() == slow.__dict__.keys() if hasattr(fast, "__dict__") else True, where


def assert_same_tensor(fast, slow) -> None:
    """The same result as seen through the public API, plus the same internal state."""
    assert fast.dtype is slow.dtype and fast.shape == slow.shape and fast.stride() == slow.stride()
    assert fast.storage_offset() == slow.storage_offset() and fast._version == slow._version
    assert fast.requires_grad == slow.requires_grad and fast.is_leaf == slow.is_leaf
    _same_array(fast.numpy(), slow.numpy(), "values")
    assert_same_state(fast, slow)


# ---------------------------------------------------------------------------
# wrap: Storage(...) and Tensor._make(...) written out, with the memory accounting
# ---------------------------------------------------------------------------
def readable_wrap(arr, dtype=None):
    """What ``common.wrap`` does, through the constructors it inlines."""
    arr = np.asarray(arr)
    if dtype is None:
        dtype = _dtype._BY_NP[arr.dtype]
    arr = np.asarray(arr, dtype=dtype.np, order="C")
    t = cl.Tensor._make(Storage(arr.reshape(-1), dtype), 0, arr.shape, common.contiguous_strides(arr.shape), dtype)
    t._np_cache = arr
    return t


@pytest.fixture
def mem_state():
    """``memory._state`` set to known numbers for a test, then put back."""
    saved = list(memory._state)
    yield memory._state
    memory._state[:] = saved


def _arrays():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((4, 6)) * 10
    yield "2-d", base.astype(np.float32), None
    yield "0-d", np.array(3.5), None
    yield "1-d", np.arange(5, dtype=np.int64), None
    yield "empty", np.zeros((0, 3), np.float32), None
    yield "3-d", rng.standard_normal((2, 3, 4)), None
    yield "transposed", base.T, None                       # not C-contiguous: copied
    yield "cast", base.astype(np.float32), _dtype.float64        # a dtype to convert to
    yield "strided cast", base[:, ::2], _dtype.int32
    yield "bool", base > 0, None
    yield "numpy scalar", np.float32(2.0), None
    for dt in DTYPES:
        yield f"to {dt}", np.arange(6).reshape(2, 3), dt


@pytest.mark.parametrize("name,arr,dtype", list(_arrays()), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("start", [(0, 0, 0), (100, 10_000, 7), (5000, 5000, 3)])   # below and at the peak
def test_wrap_is_storage_and_tensor_make(mem_state, name, arr, dtype, start):
    mem_state[:] = start
    fast = common.wrap(arr, dtype)
    after_fast = list(mem_state)
    mem_state[:] = start
    slow = readable_wrap(arr, dtype)
    after_slow = list(mem_state)
    assert after_fast == after_slow
    assert_same_tensor(fast, slow)
    assert np.shares_memory(fast._np_cache, arr) == np.shares_memory(slow._np_cache, arr)
    del fast, slow                                      # freed while the test's numbers are in place


@pytest.mark.parametrize("start", [(0, 0, 0), (100, 10_000, 7), (5000, 5000, 3)])
@pytest.mark.parametrize("n,dtype", [(0, _dtype.float32), (1, _dtype.bool_), (1000, _dtype.float64), (7, _dtype.int16)])
def test_storage_accounting_is_allocated_and_freed(mem_state, start, n, dtype):
    nbytes = n * dtype.itemsize
    mem_state[:] = start
    st = Storage(np.zeros(n, dtype.np), dtype)
    inline = list(mem_state)
    mem_state[:] = start
    memory._allocated(nbytes)
    assert inline == mem_state
    del st
    after_free = list(mem_state)
    mem_state[:] = inline
    memory._freed(nbytes)
    assert after_free == mem_state
    # storages that wrap memory owned by something else, and meta storages, are not counted
    mem_state[:] = start
    owned = Storage(np.zeros(n, dtype.np), dtype, owner=object())
    meta = Storage(None, dtype, "meta", size=n)
    del owned, meta
    assert mem_state == list(start)


# ---------------------------------------------------------------------------
# add and mul of two tensors of one dtype
# ---------------------------------------------------------------------------
def _general_path(fn, a, b):
    """The path add and mul take for any other operands (``alpha == 1``)."""
    dt = common.binary_result_type(a, b)
    return pointwise.wrap(pointwise._apply_binary(fn, a, b, dt), dt)


def _operand_pairs(dt):
    rng = np.random.default_rng(1)

    def make(shape):
        a = rng.standard_normal(shape) * 5
        return cl.tensor(a.astype(dt.np) if dt is not _dtype.bool_ else a > 0, dtype=dt)

    m = make((3, 4))
    yield "same shape", make((3, 4)), make((3, 4))
    yield "broadcast", make((3, 1)), make((4,))
    yield "0-d", make(()), make((2, 2))
    yield "transposed", m.t(), make((4, 3))
    yield "strided view", make((4, 6))[:, ::2], make((4, 3))
    yield "empty", make((0, 3)), make((1, 3))
    yield "self", m, m


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_same_dtype_add_mul_is_the_general_path(monkeypatch, dt, op):
    fn = getattr(cl, op)
    for _name, a, b in _operand_pairs(dt):
        with np.errstate(all="ignore"):
            fast = fn(a, b)
            with monkeypatch.context() as m:
                m.setattr(pointwise, "_same_dtype", _general_path)
                slow = fn(a, b)
        assert_same_tensor(fast, slow)


def test_same_dtype_add_mul_broadcast_error_is_the_general_paths(monkeypatch):
    a, b = cl.ones(2, 3), cl.ones(4)
    for fn in (cl.add, cl.mul):
        with pytest.raises(RuntimeError) as fast:
            fn(a, b)
        with monkeypatch.context() as m:
            m.setattr(pointwise, "_same_dtype", _general_path)
            with pytest.raises(RuntimeError) as slow:
                fn(a, b)
        assert str(fast.value) == str(slow.value)


def test_same_dtype_add_mul_under_autograd_is_the_general_path(monkeypatch):
    def run():
        x = cl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        w = cl.tensor([0.5, -1.0], requires_grad=True)
        y = (x * w + w).sum()
        y.backward()
        return y, x.grad, w.grad

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(pointwise, "_same_dtype", _general_path)
        slow = run()
    for f, s in zip(fast, slow):
        assert_same_tensor(f.detach(), s.detach())
    assert type(fast[0].grad_fn) is type(slow[0].grad_fn)


def test_binary_result_type_fast_path_is_result_type():
    operands = [cl.ones(2, dtype=dt) for dt in DTYPES] + [cl.tensor(1.5), cl.tensor(2), True, 3, 2.5]
    for a, b in itertools.product(operands, repeat=2):
        if not isinstance(a, cl.Tensor) and not isinstance(b, cl.Tensor):
            continue
        assert common.binary_result_type(a, b) is common.result_type(a, b), (a, b)


# ---------------------------------------------------------------------------
# backward kernels that skip the dispatcher when no graph of the backward is recorded
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("g_shape,shape", [
    ((4, 3), (3,)), ((4, 3), (1, 3)), ((4, 3), (4, 1)), ((2, 4, 3), (4, 3)), ((2, 4, 3), (1, 1)),
    ((5,), ()), ((2, 1, 3), (1, 3)), ((0, 3), (3,)), ((4, 3), (4, 3)),
])
@pytest.mark.parametrize("dt", [_dtype.float32, _dtype.float64, _dtype.float16, _dtype.int64])
def test_sum_to_size_numpy_path_is_sum_and_view(g_shape, shape, dt):
    rng = np.random.default_rng(2)
    g = cl.tensor((rng.standard_normal(g_shape) * 4).astype(dt.np))
    with cl.no_grad():
        fast = sum_to_size(g, shape)          # numpy, when no graph of the backward is recorded
    with cl.enable_grad():
        slow = sum_to_size(g, shape)          # sum(dims, keepdim=True).view(shape) through the dispatcher
    # the same values, dtype, shape and strides; the dispatched version may be a view of its sum
    # (``.grad`` never keeps such a view: AccumulateGrad lays it out as a fresh tensor)
    assert fast.dtype is slow.dtype and fast.shape == slow.shape and fast.stride() == slow.stride()
    _same_array(fast.numpy(), slow.numpy(), "values")
    assert fast._version == slow._version == 0 and not fast.requires_grad and not slow.requires_grad


def _grads(loss_fn, create_graph: bool):
    rng = np.random.default_rng(3)
    x = cl.tensor(rng.standard_normal((5, 7)).astype(np.float32), requires_grad=True)
    w = cl.tensor(rng.standard_normal((7,)).astype(np.float32), requires_grad=True)
    loss = loss_fn(x, w)
    loss.backward(create_graph=create_graph)
    return x.grad.detach(), w.grad.detach()


@pytest.mark.parametrize("name,loss_fn", [
    ("broadcast add/mul", lambda x, w: (x * w + w).sum()),
    ("relu", lambda x, w: (F.relu(x * w) * w).sum()),
    ("log_softmax", lambda x, w: (F.log_softmax(x * w, dim=1) * w).sum()),
    ("cross_entropy", lambda x, w: F.cross_entropy(x * w, cl.tensor([0, 3, 6, 2, 2]))),
])
def test_one_kernel_backwards_are_their_formulas(name, loss_fn):
    # backward() takes the one-kernel and numpy paths; create_graph=True records the formulas'
    # ops instead.  The gradients agree bit for bit.
    fast = _grads(loss_fn, create_graph=False)
    slow = _grads(loss_fn, create_graph=True)
    for f, s in zip(fast, slow):
        assert f.dtype is s.dtype and f.shape == s.shape and f.stride() == s.stride()
        _same_array(f.numpy(), s.numpy(), name)
