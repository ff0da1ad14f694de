"""repr(tensor) in PyTorch's format: fixed cases and random tensors against real torch.

The only allowed difference from torch's output is the module name in the dtype
suffix (``dtype=course_lib.float64`` for ``dtype=torch.float64``).
"""
from __future__ import annotations

import contextlib
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from oracle import require_torch

import course_lib as cl
from course_lib import _tensor_str

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def cl_from(a: np.ndarray):
    return cl.tensor(a)


def torch_repr(torch, a: np.ndarray, **kw) -> str:
    return repr(torch.tensor(a, **kw)).replace("torch.", "course_lib.")


@contextlib.contextmanager
def both_printoptions(torch, **kw):
    old = _tensor_str.get_printoptions()
    old_t = torch._tensor_str.get_printoptions()
    cl.set_printoptions(**kw)
    torch.set_printoptions(**kw)
    try:
        yield
    finally:
        cl.set_printoptions(**old)
        torch.set_printoptions(**old_t)


@contextlib.contextmanager
def both_default_dtype(torch, name):
    old, old_t = cl.get_default_dtype(), torch.get_default_dtype()
    cl.set_default_dtype(getattr(cl, name))
    torch.set_default_dtype(getattr(torch, name))
    try:
        yield
    finally:
        cl.set_default_dtype(old)
        torch.set_default_dtype(old_t)


# ---------------------------------------------------------------------------
# fixed cases (no torch needed): the formats the chapters show
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("data, kw, expected", [
    ([[1., 2.], [3., 4.]], {}, "tensor([[1., 2.],\n        [3., 4.]])"),
    (3., {}, "tensor(3.)"),
    (3.5, {}, "tensor(3.5000)"),
    ([1., 1e10], {}, "tensor([1.0000e+00, 1.0000e+10])"),
    ([1, 2], {}, "tensor([1, 2])"),
    ([True, False], {}, "tensor([ True, False])"),
    ([1., 2.], {"dtype": cl.float64}, "tensor([1., 2.], dtype=course_lib.float64)"),
    ([1, 2], {"dtype": cl.int32}, "tensor([1, 2], dtype=course_lib.int32)"),
    ([], {}, "tensor([])"),
    ([1., float("nan"), float("inf")], {}, "tensor([1., nan, inf])"),
    ([0.1, -2.5], {"requires_grad": True}, "tensor([ 0.1000, -2.5000], requires_grad=True)"),
])
def test_fixed_reprs(data, kw, expected):
    assert repr(cl.tensor(data, **kw)) == expected


def test_empty_and_meta_suffixes():
    assert repr(cl.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(cl.zeros(0, dtype=cl.int64)) == "tensor([], dtype=course_lib.int64)"
    assert repr(cl.zeros(2, 3, device="meta")) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(cl.tensor(1, device="meta")) == "tensor(..., device='meta', size=(), dtype=course_lib.int64)"


def test_grad_fn_suffix_uses_the_node_class_name():
    class MulBackward0:
        pass

    t = cl.tensor([1., 2.])
    t.grad_fn = MulBackward0()
    t._requires_grad = True
    assert repr(t) == "tensor([1., 2.], grad_fn=<MulBackward0>)"


def test_summarised_large_tensor():
    r = repr(cl.arange(2000))
    assert r == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"


def test_set_printoptions_resets_sci_mode_like_torch():
    old = _tensor_str.get_printoptions()
    try:
        cl.set_printoptions(sci_mode=True)
        assert repr(cl.tensor([1., 2.])) == "tensor([1.0000e+00, 2.0000e+00])"
        cl.set_printoptions(precision=2)          # sci_mode goes back to None
        assert repr(cl.tensor([1.125])) == "tensor([1.12])"
    finally:
        cl.set_printoptions(**old)


def test_printoptions_context_manager_restores():
    with _tensor_str.printoptions(precision=1):
        assert repr(cl.tensor([1.25])) == "tensor([1.2])"
    assert repr(cl.tensor([1.25])) == "tensor([1.2500])"


# ---------------------------------------------------------------------------
# oracle: fixed tricky cases
# ---------------------------------------------------------------------------
TRICKY = [
    np.array([0.0, -0.0]), np.array([1e-5, 1.0]), np.array([1e-4, 1.0]), np.array([1.0, 1000.0]),
    np.array([1.0, 1000.1]), np.array([1e8, 1.0]), np.array([1.5e8]), np.array([123456789.0]),
    np.array([float("nan")]), np.array([float("inf"), -float("inf"), 0.0]), np.array([0.0, 0.0]),
    np.array([-1.5, 2.25, 1e-3]), np.array([[1e-10, 1], [2, 3]]), np.array([[1.0, -2.0], [3.5, 4e5]]),
    np.arange(30, dtype=np.float64).reshape(2, 3, 5) / 7, np.arange(1100, dtype=np.float64),
    np.arange(1100, dtype=np.float64).reshape(11, 100), np.linspace(-1, 1, 5000).reshape(5, 10, 100),
    np.arange(120, dtype=np.int64).reshape(2, 3, 4, 5) - 60, np.array([[True, False], [False, True]]),
    np.array([-128, 127], dtype=np.int8), np.array([0, 255], dtype=np.uint8), np.array([65504.0], dtype=np.float16),
    np.array([2.0 ** -24], dtype=np.float16), np.arange(100, dtype=np.float32) * 1.1,
    np.zeros((2, 0, 3)), np.zeros((0,), dtype=np.int32), np.array(7, dtype=np.int16), np.array(-0.0),
    np.array([1e300, 1e-300]), np.array([2 ** 62, -(2 ** 62)], dtype=np.int64),
]


@pytest.mark.oracle
@pytest.mark.parametrize("i", range(len(TRICKY)))
def test_tricky_reprs_match_torch(i):
    torch = require_torch()
    a = TRICKY[i]
    assert repr(cl_from(a)) == torch_repr(torch, a)


@pytest.mark.oracle
@pytest.mark.parametrize("opts", [
    dict(precision=2), dict(precision=8), dict(linewidth=40), dict(linewidth=200), dict(threshold=10),
    dict(edgeitems=1, threshold=5), dict(edgeitems=0, threshold=5), dict(sci_mode=True), dict(sci_mode=False),
    dict(profile="short"), dict(profile="full"),
])
def test_printoptions_match_torch(opts):
    torch = require_torch()
    cases = [np.arange(60, dtype=np.float64).reshape(3, 4, 5) / 3, np.array([1e-6, 1.0, 1e6]),
             np.arange(40, dtype=np.int64), np.array([1.5, 2.5], dtype=np.float32), np.zeros((2, 0)),
             np.arange(2000, dtype=np.float32).reshape(40, 50)]
    with both_printoptions(torch, **opts):
        for a in cases:
            assert repr(cl_from(a)) == torch_repr(torch, a), (opts, a.shape)


@pytest.mark.oracle
def test_requires_grad_and_meta_and_empty_match_torch():
    torch = require_torch()
    for shape in [(0,), (0, 3), (2, 0, 1), ()]:
        for dt in ["float32", "float64", "int64", "bool", "int32"]:
            if shape == ():
                continue
            got = repr(cl.zeros(shape, dtype=getattr(cl, dt)))
            assert got == repr(torch.zeros(shape, dtype=getattr(torch, dt))).replace("torch.", "course_lib.")
    for shape in [(2, 3), (), (5,)]:
        for dt in ["float32", "float64", "int64", "float16"]:
            got = repr(cl.zeros(shape, dtype=getattr(cl, dt), device="meta"))
            exp = repr(torch.zeros(shape, dtype=getattr(torch, dt), device="meta"))
            assert got == exp.replace("torch.", "course_lib.")
    a = np.linspace(-3, 3, 37).reshape(37)
    assert repr(cl.tensor(a, requires_grad=True)) == torch_repr(torch, a, requires_grad=True)
    b = np.arange(20.0).reshape(4, 5)
    assert repr(cl.tensor(b, dtype=cl.float32, requires_grad=True)) == \
        torch_repr(torch, b, dtype=torch.float32, requires_grad=True)


@pytest.mark.oracle
def test_grad_fn_suffix_matches_torch_wrapping():
    torch = require_torch()

    class MulBackward0:
        pass

    for n in [3, 9, 14, 30]:
        a = np.arange(n, dtype=np.float32) / 3
        t = cl.tensor(a)
        t._requires_grad = True
        t.grad_fn = MulBackward0()
        exp = repr(torch.tensor(a, requires_grad=True) * 1)
        assert repr(t) == exp


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["float64", "float16"])
def test_default_dtype_changes_which_dtype_is_shown(name):
    torch = require_torch()
    with both_default_dtype(torch, name):
        for a in [np.array([1.5, 2.0]), np.array([1.5, 2.0], dtype=np.float32), np.zeros(0),
                  np.array([1, 2]), np.zeros((0, 2), dtype=np.float32)]:
            assert repr(cl_from(a)) == torch_repr(torch, a)
        assert repr(cl.zeros(2, device="meta")) == repr(torch.zeros(2, device="meta"))


# ---------------------------------------------------------------------------
# oracle: random tensors
# ---------------------------------------------------------------------------
@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(0, 4))
    big = draw(st.booleans()) and ndim >= 1
    max_side = 12 if big else 5
    shape = tuple(draw(st.lists(st.integers(0 if ndim > 1 else 1, max_side), min_size=ndim, max_size=ndim)))
    if dtype == "bool":
        elems = st.booleans()
    elif dtype.startswith("int") or dtype == "uint8":
        info = np.iinfo(dtype)
        lo, hi = draw(st.sampled_from([(-5, 5), (-1000, 1000), (int(info.min), int(info.max))]))
        elems = st.integers(max(lo, int(info.min)), min(hi, int(info.max)))
    else:
        kind = draw(st.sampled_from(["ints", "small", "wide", "any", "special"]))
        width = 16 if dtype == "float16" else (32 if dtype == "float32" else 64)
        if kind == "ints":
            elems = st.integers(-300, 300).map(float)
        elif kind == "small":
            elems = st.floats(-10, 10, width=width)
        elif kind == "wide":
            lim = 6e4 if width == 16 else 2.0 ** 40
            elems = st.floats(-lim, lim, width=width)
        elif kind == "special":
            elems = st.sampled_from([0.0, -0.0, 1.0, float("nan"), float("inf"), -float("inf"), 1e-5, 2.5])
        else:
            elems = st.floats(width=width, allow_nan=True, allow_infinity=True)
    a = draw(hnp.arrays(np.dtype(dtype), shape, elements=elems))
    if big and a.ndim >= 1 and draw(st.booleans()):
        reps = (1,) * (a.ndim - 1) + (draw(st.integers(80, 250)),)
        a = np.tile(a, reps)
    return a


@pytest.mark.oracle
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(a=arrays(), opts=st.sampled_from([{}, {}, {}, dict(precision=2), dict(linewidth=50),
                                         dict(sci_mode=False), dict(edgeitems=2, threshold=50)]))
def test_random_tensors_repr_matches_torch(a, opts):
    torch = require_torch()
    with both_printoptions(torch, **opts):
        assert repr(cl_from(a)) == torch_repr(torch, a)


@pytest.mark.oracle
@settings(max_examples=60, deadline=None)
@given(a=arrays(), perm_seed=st.integers(0, 1000))
def test_non_contiguous_views_print_like_torch(a, perm_seed):
    torch = require_torch()
    if a.ndim < 2:
        return
    perm = np.random.default_rng(perm_seed).permutation(a.ndim)
    view = np.ascontiguousarray(a).transpose(perm)[..., ::2]
    ours = cl.from_numpy(view)      # a strided view of the same memory
    assert repr(ours) == repr(torch.from_numpy(view)).replace("torch.", "course_lib.")


# ---------------------------------------------------------------------------
# summarised printing reads only the elements it shows
# ---------------------------------------------------------------------------
HUGE_VIEWS = {
    "expand-1d": (lambda m: m.zeros(1).expand(10 ** 12),
                  "tensor([0., 0., 0.,  ..., 0., 0., 0.])"),
    "expand-2d": (lambda m: m.tensor([[1.5], [-2.0], [1e5]]).expand(3, 10 ** 12),
                  "tensor([[ 1.5000e+00,  1.5000e+00,  1.5000e+00,  ...,  1.5000e+00,\n"
                  "          1.5000e+00,  1.5000e+00],\n"
                  "        [-2.0000e+00, -2.0000e+00, -2.0000e+00,  ..., -2.0000e+00,\n"
                  "         -2.0000e+00, -2.0000e+00],\n"
                  "        [ 1.0000e+05,  1.0000e+05,  1.0000e+05,  ...,  1.0000e+05,\n"
                  "          1.0000e+05,  1.0000e+05]])"),
    "expand-transposed": (lambda m: m.arange(10).expand(10 ** 11, 10).t(),
                          "tensor([[0, 0, 0,  ..., 0, 0, 0],\n"
                          "        [1, 1, 1,  ..., 1, 1, 1],\n"
                          "        [2, 2, 2,  ..., 2, 2, 2],\n"
                          "        ...,\n"
                          "        [7, 7, 7,  ..., 7, 7, 7],\n"
                          "        [8, 8, 8,  ..., 8, 8, 8],\n"
                          "        [9, 9, 9,  ..., 9, 9, 9]])"),
}


@pytest.mark.parametrize("name", list(HUGE_VIEWS))
def test_summarised_repr_of_a_huge_expanded_tensor_is_instant(name):
    # 10**12 elements: the formatter used to copy the whole view first (MemoryError: 3.64 TiB)
    build, expected = HUGE_VIEWS[name]
    t = build(cl)
    start = time.perf_counter()
    r = repr(t)
    assert time.perf_counter() - start < 1.0
    assert r == expected


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(HUGE_VIEWS))
def test_summarised_repr_of_a_huge_expanded_tensor_matches_torch(name):
    torch = require_torch()
    build, _ = HUGE_VIEWS[name]
    assert repr(build(cl)) == repr(build(torch))


def test_summarised_repr_memory_stays_far_below_the_tensor_size():
    t = cl.zeros(1).expand(2 * 10 ** 8)          # 800 MB if it were materialised
    t2 = cl.arange(6.).view(2, 3).t().expand(10 ** 7, 3, 2)
    tracemalloc.start()
    try:
        r, r2 = repr(t), repr(t2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r == "tensor([0., 0., 0.,  ..., 0., 0., 0.])"
    assert r2.startswith("tensor([[[0., 3.],\n") and r2.endswith("[2., 5.]]])")
    assert peak < 1_000_000, peak


def test_summarised_repr_without_edge_items_reads_nothing():
    old = _tensor_str.get_printoptions()
    cl.set_printoptions(edgeitems=0)
    tracemalloc.start()
    try:
        r1 = repr(cl.zeros(1).expand(10 ** 12))
        r2 = repr(cl.arange(3.).view(3, 1).expand(3, 10 ** 12))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        cl.set_printoptions(**old)
    # what torch prints for these shapes (its formatter would copy the 1-D one whole)
    assert r1 == "tensor([...], size=(1000000000000,))"
    assert r2 == "tensor([...], size=(3, 1000000000000))"
    assert peak < 1_000_000, peak


@st.composite
def strided_views(draw):
    """A small storage seen through a large strided view: (base, shape, stride, offset), numel > 1000.

    Strides may be 0 (expanded dims), any order (transposed), or skip elements
    (sliced); the view stays inside the storage.
    """
    a = draw(arrays())
    base = a.reshape(-1)
    assume(base.size >= 1)
    ndim = draw(st.integers(1, 4))
    shape = [draw(st.one_of(st.integers(1, 9), st.integers(7, 60), st.integers(1000, 10 ** 9)))
             for _ in range(ndim)]
    assume(1000 < int(np.prod(shape, dtype=object)) <= 10 ** 15)
    offset = draw(st.integers(0, base.size - 1))
    budget = base.size - 1 - offset               # furthest element still inside the storage
    stride = [0] * ndim
    for d in draw(st.permutations(range(ndim))):
        if shape[d] > 1 and budget >= shape[d] - 1:
            stride[d] = draw(st.integers(0, budget // (shape[d] - 1)))
            budget -= stride[d] * (shape[d] - 1)
    return base, tuple(shape), tuple(stride), offset


@pytest.mark.oracle
@settings(max_examples=90, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large,
                                                                   HealthCheck.filter_too_much])
@given(view=strided_views(), opts=st.sampled_from([{}, {}, dict(precision=2), dict(linewidth=50),
                                                    dict(sci_mode=False), dict(edgeitems=1),
                                                    dict(edgeitems=5, threshold=50)]))
def test_large_strided_views_print_like_torch(view, opts):
    # (Not edgeitems=0: torch's formatter then copies a whole 1-D tensor, up to 10**15 elements here.)
    torch = require_torch()
    base, shape, stride, offset = view
    ours = cl.as_strided(cl.tensor(base), shape, stride, offset)
    theirs = torch.as_strided(torch.tensor(base), shape, stride, offset)
    with both_printoptions(torch, **opts):
        assert repr(ours) == repr(theirs).replace("torch.", "course_lib.")
