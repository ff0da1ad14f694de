"""Views: random chains of view ops checked against numpy doing the same thing.

For every step of a random chain (view, reshape, flatten, unflatten, transpose,
t, mT, permute, movedim, squeeze, unsqueeze, expand, narrow, select, unbind,
split, chunk, diagonal, unfold, as_strided, slicing, None, ...) we check:

* shape and values equal numpy's result;
* where numpy's result is a view of the same memory, course_lib's is too, with
  the same first-element address and the same strides (dims of size > 1);
* views share the storage, the version counter and ``_base`` (the root);
* an in-place write through the final view lands in the root's memory where
  numpy says it should, and bumps the shared version counter; so does
  ``__setitem__`` through a view.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from view_chains import shapes, view_chains

import course_lib as cl

SETTINGS = settings(max_examples=int(__import__("os").environ.get("COURSE_HYPOTHESIS_EXAMPLES", 300)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = ["float32", "int64", "float64", "uint8"]


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _positions(view: np.ndarray, storage: np.ndarray) -> np.ndarray:
    """Index in ``storage`` of every element of ``view`` (a numpy view of it), from numpy's own metadata."""
    isz = storage.itemsize
    off = (_addr(view) - _addr(storage)) // isz
    idx = np.full((), off, dtype=np.int64)
    for size, stride in zip(view.shape, view.strides):
        idx = idx[..., None] + np.arange(size, dtype=np.int64) * (stride // isz)
    return idx


def _shares(np_result: np.ndarray, storage: np.ndarray) -> bool:
    return np_result.size > 0 and np.shares_memory(np_result, storage)


def run_chain(shape, steps, dtype):
    storage = (np.arange(math.prod(shape)) % 251).astype(dtype)
    root = cl.from_numpy(storage.reshape(shape))
    x, a = root, storage.reshape(shape)
    vbase = root  # what ``_base`` of a view must be: the last non-view tensor in the chain
    trail = []
    for step in steps:
        trail.append(step.text)
        where = f"{shape}{''.join(trail)}"
        try:
            y = step.tensor(x)
        except RuntimeError as e:
            if step.text.startswith(".as_strided(") and storage.size < math.prod(shape):
                # the chain drew as_strided's offset for the root's storage, but an earlier reshape
                # copied into a smaller one: PyTorch refuses the out-of-bounds view the same way
                assert "out of bounds for storage of size" in str(e), f"{where}: {e}"
                return None
            # view() may refuse; then numpy must have had to copy too
            assert step.text.startswith(".view("), f"{where}: {e}"
            assert "view size is not compatible" in str(e), where
            assert not np.shares_memory(a.reshape(step.shape), a) or a.size == 0 or \
                math.prod(step.shape) <= 1, where
            return None
        b = step.numpy(a, storage)
        if y is x:
            assert step.may_be_self, f"{where}: returned its input"
            a = b
            continue
        assert tuple(y.shape) == tuple(b.shape) == tuple(step.shape), where
        assert np.array_equal(y._np(), b), where
        copied = y.untyped_storage() != x.untyped_storage()
        if copied:
            assert step.may_copy, f"{where}: a view op copied"
            assert y._base is None and not y._is_view() and y.is_contiguous(), where
            # numpy copies too, unless it found a view that course_lib's (PyTorch's) rule doesn't
            storage = np.ascontiguousarray(y._np()).reshape(-1)
            assert np.array_equal(storage, b.reshape(-1)), where
            x, a = y, y._np()
            root = vbase = y
            continue
        # shares the storage: a view (detach too, without being a view)
        assert y._vc is x._vc, f"{where}: version counter not shared"
        if step.is_view or step.may_copy:
            assert y._is_view() and y._base is vbase, where
        else:
            assert not y._is_view() and y._base is None, where
            vbase = y
        if _shares(b, storage) and y.numel() > 0:
            assert y.data_ptr() == _addr(b), f"{where}: first element at a different address"
            isz = storage.itemsize
            for i, (size, s_cl, s_np) in enumerate(zip(y.shape, y.stride(), b.strides)):
                if size > 1:
                    assert s_cl * isz == s_np, f"{where}: stride of dim {i}: {y.stride()} vs {b.strides}"
        x, a = y, b
    return root, storage, x, a


@SETTINGS
@given(view_chains(), st.sampled_from(DTYPES))
def test_view_chains_match_numpy(chain, dtype):
    shape, steps = chain
    run_chain(shape, steps, dtype)


@SETTINGS
@given(view_chains(), st.sampled_from(DTYPES), st.integers(1, 5))
def test_inplace_write_through_view_chain(chain, dtype, k):
    shape, steps = chain
    out = run_chain(shape, steps, dtype)
    if out is None:
        return
    root, storage, y, b = out
    if y.numel() == 0 or not _shares(b, storage):
        return
    pos = _positions(b, storage)
    if len(np.unique(pos)) != pos.size:
        # elements share memory (expand, overlapping as_strided): PyTorch refuses most writes
        if any(st == 0 and sz > 1 for sz, st in zip(y.shape, y.stride())):
            with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
                y.add_(k)
        return
    before = storage.copy()
    v0 = root._version
    y.add_(k)
    expected = before.copy()
    expected[pos.reshape(-1)] = (before[pos.reshape(-1)] + k).astype(storage.dtype)
    assert np.array_equal(storage, expected)
    assert root._version == v0 + 1 and y._version == v0 + 1
    # __setitem__ through the view: the first index along dim 0 (or everything for 0-d)
    idx = (0,) if y.dim() else (Ellipsis,)
    before = storage.copy()
    y[idx] = 7
    expected = before.copy()
    expected[pos[idx].reshape(-1)] = 7
    assert np.array_equal(storage, expected)
    assert root._version == v0 + 2


# ---------------------------------------------------------------------------
# fixed cases from the fact sheet (section 1)
# ---------------------------------------------------------------------------
def test_fact_sheet_views():
    t = cl.zeros(2, 3, 4)
    cases = {
        "view": (t.view(6, 4), (6, 4), (4, 1), 0),
        "transpose": (t.transpose(0, 2), (4, 3, 2), (1, 4, 12), 0),
        "unsqueeze": (t.unsqueeze(1), (2, 1, 3, 4), (12, 12, 4, 1), 0),
        "narrow": (t.narrow(2, 1, 2), (2, 3, 2), (12, 4, 1), 1),
        "select": (t.select(1, 2), (2, 4), (12, 1), 8),
        "slicing": (t[:, ::2, 1:], (2, 2, 3), (12, 8, 1), 1),
        "diagonal": (t.diagonal(dim1=1, dim2=2), (2, 3), (12, 5), 0),
        "unfold": (t.unfold(2, 2, 1), (2, 3, 3, 2), (12, 4, 1, 1), 0),
        "expand": (cl.zeros(3).expand(2, 3), (2, 3), (0, 1), 0),
    }
    for name, (v, shape, stride, offset) in cases.items():
        assert (tuple(v.shape), v.stride(), v.storage_offset()) == (shape, stride, offset), name
        assert v._is_view(), name
    v = t.view(24)[2:].view(2, 11)
    assert v._base is t  # a view of a view has the root as its base


def test_copies_and_non_views():
    t = cl.zeros(2, 3, 4)
    assert not t.transpose(0, 1).reshape(6, 4)._is_view()
    assert t.transpose(0, 1).reshape(6, 4).untyped_storage() != t.untyped_storage()
    assert not t[[0, 1]]._is_view() and t[[0, 1]].untyped_storage() != t.untyped_storage()
    d = t.detach()
    assert not d._is_view() and d.untyped_storage() == t.untyped_storage()
    assert t.contiguous() is t
    m = cl.zeros(4, 6)
    assert m[::2].reshape(2, 3, 2)._is_view()
    assert not m[::2].reshape(12)._is_view()
    assert cl.zeros(2, 3).clone().untyped_storage() != cl.zeros(2, 3).untyped_storage()


@pytest.mark.parametrize("make,expected", [
    (lambda: cl.empty(1, 5).t(), True),
    (lambda: cl.empty(12).as_strided((3, 1, 4), (4, 999, 1)), True),
    (lambda: cl.zeros(3).expand(2, 3), False),
    (lambda: cl.empty(2, 3)[:, :1], False),
    (lambda: cl.empty(2, 0, 3).transpose(0, 2), True),
    (lambda: cl.empty(3, 4).t(), False),
    (lambda: cl.empty(3, 1).t(), True),
    (lambda: cl.empty(()), True),
])
def test_is_contiguous_rule(make, expected):
    assert make().is_contiguous() is expected


@SETTINGS
@given(shapes())
def test_contiguous_strides(shape):
    t = cl.empty(shape)
    expected = tuple(math.prod(max(s, 1) for s in shape[i + 1:]) for i in range(len(shape)))
    assert t.stride() == expected and t.is_contiguous()
    assert t.untyped_storage().nbytes() == math.prod(shape) * 4


def test_storage_metadata():
    t = cl.arange(24.).reshape(2, 3, 4)
    assert t.stride() == (12, 4, 1) and t.storage_offset() == 0
    assert t.untyped_storage().nbytes() == 96
    assert type(t.untyped_storage()).__name__ == "UntypedStorage"
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        t.storage()
    v = t[1, 2]
    assert v.data_ptr() == t.data_ptr() + (12 + 8) * 4
    assert v.untyped_storage() == t.untyped_storage()


def test_version_counter_shared_and_bumped():
    x = cl.zeros(2, 3)
    v = x[0]
    w = x.t()
    d = x.detach()
    assert x._version == v._version == w._version == d._version == 0
    v.add_(1)
    assert x._version == w._version == d._version == 1
    x[1] = 5.0
    assert v._version == 2
    w.zero_()
    d.fill_(3)
    x.copy_(cl.ones(2, 3))
    assert x._version == 5
    y = x.clone()
    assert y._version == 0  # a copy has its own counter
    x.data.add_(1)  # .data has its own counter, as in PyTorch
    assert x._version == 5


def test_setitem_writes_through_views():
    x = cl.zeros(3, 4)
    x.t()[1] = 2.0
    assert x[:, 1].tolist() == [2.0, 2.0, 2.0]
    x[1:, ::2] = cl.tensor([5.0, 6.0])
    assert x.tolist() == [[0, 2, 0, 0], [5, 2, 6, 0], [5, 2, 6, 0]]
    v = x.view(12)
    v[x.view(12) > 4] = -1.0  # advanced indexing on a view writes into the same storage
    assert x.tolist() == [[0, 2, 0, 0], [-1, 2, -1, 0], [-1, 2, -1, 0]]
    x[..., None][0, 0] = 9
    assert x[0, 0].item() == 9.0


def test_expanded_write_errors():
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        cl.zeros(3).expand(2, 3).add_(1)
    cl.zeros(3).expand(2, 3).fill_(1)  # fill_ and zero_ are allowed, as in PyTorch
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        x = cl.arange(5.0)
        x[1:].copy_(x[:-1])
