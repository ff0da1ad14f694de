"""The normalization kernel (``grouped_norm_forward/backward``) and intra-op threads.

The kernel cuts its groups into chunks and runs them on ``course_lib._parallel``'s threads.
These tests make the chunks small so that every shape spans several of them, and check:
results against the readable reference chapter 05 shows (``_ops/normalization_reference.py``)
on random shapes, chunk sizes, dtypes and thread counts, and against a float64 reference written
from the formulas here; bit-for-bit equality between 1 and 2 threads; inputs whose mean is large
compared with their spread (where a one-pass variance would lose everything); non-contiguous
inputs; and the helpers of ``_parallel``.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import course_lib as cl
import course_lib.nn.functional as F
from course_lib import _parallel
from course_lib._ops import normalization as N
from course_lib._ops import normalization_reference as R
from course_lib.utils.data import DataLoader, Dataset


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(N, "_CHUNK_ELEMS", 64)
    yield


@pytest.fixture
def threads():
    before = cl.get_num_threads()
    yield
    cl.set_num_threads(before)


def _ref_forward(x3, eps, w, b, param, subtract_mean=True):
    x = x3.astype(np.float64)
    mean = x.mean(axis=(0, 2), keepdims=True) if subtract_mean else np.zeros((1, x.shape[1], 1))
    xc = x - mean
    var = (xc * xc).mean(axis=(0, 2), keepdims=True)
    r = 1 / np.sqrt(var + eps)
    xhat = xc * r
    if param == "group":
        gam = 1 if w is None else w.astype(np.float64)[None, :, None]
        bet = 0 if b is None else b.astype(np.float64)[None, :, None]
    else:
        gam = 1 if w is None else w.astype(np.float64)
        bet = 0 if b is None else b.astype(np.float64)
    return xhat * gam + bet, mean.ravel(), r.ravel(), xhat


def _ref_backward(dy3, xhat, r, w, param, subtract_mean=True):
    dy = dy3.astype(np.float64)
    if param == "group":
        gam = 1 if w is None else w.astype(np.float64)[None, :, None]
        dgamma, dbeta = (dy * xhat).sum((0, 2)), dy.sum((0, 2))
    else:
        gam = 1 if w is None else w.astype(np.float64)
        dgamma, dbeta = (dy * xhat).sum((0, 1)), dy.sum((0, 1))
    d = dy * gam
    mean_d = d.mean(axis=(0, 2), keepdims=True) if subtract_mean else 0
    proj = (d * xhat).mean(axis=(0, 2), keepdims=True)
    dx = r[None, :, None] * (d - mean_d - xhat * proj)
    return dx, dgamma, dbeta


CASES = [
    # (A, G, B), param, with weight, with bias, subtract_mean
    ((5, 7, 9), "group", True, True, True),      # BatchNorm-like, several chunks of groups
    ((3, 4, 1), "group", True, False, True),     # BatchNorm1d: B == 1
    ((1, 13, 11), "group", False, False, True),  # GroupNorm / InstanceNorm-like
    ((1, 17, 6), "inner", True, True, True),     # LayerNorm-like
    ((1, 9, 5), "inner", False, False, True),    # LayerNorm without affine
    ((1, 10, 7), "inner", True, False, False),   # RMSNorm
]


@pytest.mark.parametrize("shape,param,has_w,has_b,sub", CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernel_matches_the_formulas(small_chunks, shape, param, has_w, has_b, sub, dtype):
    rng = np.random.default_rng(0)
    A, G, B = shape
    x = rng.standard_normal(shape).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    n = G if param == "group" else B
    w = rng.standard_normal(n).astype(dtype) if has_w else None
    b = rng.standard_normal(n).astype(dtype) if has_b else None
    y, mean, rstd, var = N.grouped_norm_forward(x, 1e-5, w, b, param, subtract_mean=sub)
    ry, rmean, rr, xhat = _ref_forward(x, 1e-5, w, b, param, sub)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    assert y.dtype == dtype and y.shape == shape and y.flags.c_contiguous
    np.testing.assert_allclose(y, ry, **tol)
    np.testing.assert_allclose(rstd, rr, **tol)
    np.testing.assert_allclose(mean, rmean, **tol)
    dx, dgamma, dbeta = N.grouped_norm_backward(dy, x, mean, rstd, w, param, subtract_mean=sub)
    rdx, rdg, rdb = _ref_backward(dy, xhat, rr, w, param, sub)
    np.testing.assert_allclose(dx, rdx, **tol)
    np.testing.assert_allclose(dbeta, rdb, **tol)
    if has_w or param == "group":
        np.testing.assert_allclose(dgamma, rdg, **tol)


def _random_case(seed: int):
    """A random (A, G, B) problem for the kernel: shape, layout of gamma/beta, dtype, chunk size."""
    rng = np.random.default_rng(seed)
    param = "group" if seed % 2 else "inner"
    A = int(rng.integers(1, 6)) if param == "group" else 1   # "inner" (LayerNorm, RMSNorm) has A == 1
    G, B = int(rng.integers(1, 24)), int(rng.integers(1, 18))
    dtype = np.float32 if seed % 4 < 2 else np.float64
    sub = param == "group" or bool(rng.integers(0, 2))       # without the mean: RMSNorm
    n = G if param == "group" else B
    w = rng.standard_normal(n).astype(dtype) if rng.integers(0, 2) else None
    b = rng.standard_normal(n).astype(dtype) if rng.integers(0, 2) else None
    x = (rng.standard_normal((A, G, B)) * rng.uniform(0.1, 10) + rng.uniform(-3, 3)).astype(dtype)
    dy = rng.standard_normal((A, G, B)).astype(dtype)
    # chunks of grain = chunk // (A * B) groups: from one group per chunk to all of them, so
    # that the last chunk is often a short one
    chunk = int(rng.integers(1, 4 * A * B + 2))
    return x, dy, w, b, param, sub, chunk


# Largest difference from the float64 reference, relative to max(1, its largest magnitude). The
# kernel computes in the data's dtype with float64 statistics; float32's dx has the most rounding
# (xc and dxhat are float32, and dx is a difference of nearly equal terms).
_TOL = {np.float64: dict(default=1e-12), np.float32: dict(default=1e-5, dx=5e-4)}


def _assert_close(name, got, want, dtype):
    assert (got is None) == (want is None), name
    if want is None:
        return
    assert got.shape == want.shape, (name, got.shape, want.shape)
    tol = _TOL[dtype].get(name, _TOL[dtype]["default"])
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    assert err <= tol, f"{name}: {err:.2e} > {tol:.0e}"


@pytest.mark.parametrize("seed", range(64))
def test_kernel_matches_the_readable_reference(monkeypatch, threads, seed):
    x, dy, w, b, param, sub, chunk = _random_case(seed)
    monkeypatch.setattr(N, "_CHUNK_ELEMS", chunk)
    ref_y, ref_mean, ref_rstd, ref_var = R.grouped_norm_forward_reference(x, 1e-5, w, b, param, sub)
    ref_dx, ref_dgamma, ref_dbeta = R.grouped_norm_backward_reference(dy, x, ref_mean, ref_rstd, w, param, sub)
    runs = []
    for n_threads in (1, 2):
        cl.set_num_threads(n_threads)
        y, mean, rstd, var = N.grouped_norm_forward(x, 1e-5, w, b, param, subtract_mean=sub)
        dx, dgamma, dbeta = N.grouped_norm_backward(dy, x, mean, rstd, w, param, subtract_mean=sub)
        assert y.dtype == x.dtype and dx.dtype == x.dtype and y.flags.c_contiguous and dx.flags.c_contiguous
        for name, got, want in (("y", y, ref_y), ("mean", mean, ref_mean), ("rstd", rstd, ref_rstd),
                                ("var", var, ref_var), ("dx", dx, ref_dx), ("dgamma", dgamma, ref_dgamma),
                                ("dbeta", dbeta, ref_dbeta)):
            _assert_close(name, got, want, x.dtype.type)
        runs.append((y, mean, rstd, var, dx, dgamma, dbeta))
    for one, two in zip(*runs):   # the same bits for any number of threads
        assert (one is None and two is None) or np.array_equal(one, two)


def test_reference_agrees_with_the_formulas():
    # the reference itself, against the float64 formulas written out in this file
    for seed in range(8):
        x, dy, w, b, param, sub, _ = _random_case(seed)
        y, mean, rstd, var = R.grouped_norm_forward_reference(x, 1e-5, w, b, param, sub)
        fy, fmean, frstd, xhat = _ref_forward(x, 1e-5, w, b, param, sub)
        dtype = x.dtype.type
        _assert_close("y", y, fy, dtype)
        _assert_close("rstd", rstd, frstd, dtype)
        dx, dgamma, dbeta = R.grouped_norm_backward_reference(dy, x, mean, rstd, w, param, sub)
        fdx, fdgamma, fdbeta = _ref_backward(dy, xhat, frstd, w, param, sub)
        _assert_close("dx", dx, fdx, dtype)
        _assert_close("dbeta", dbeta, fdbeta, dtype)
        if w is not None or param == "group":
            _assert_close("dgamma", dgamma, fdgamma, dtype)


@pytest.mark.parametrize("layer", ["batch", "layer", "group", "rms", "instance"])
def test_one_thread_and_two_give_identical_bits(small_chunks, threads, layer):
    cl.manual_seed(0)
    x = cl.randn(6, 8, 5, 3, requires_grad=True)
    w = cl.randn(8, requires_grad=True)
    b = cl.randn(8, requires_grad=True)
    wl = cl.randn(5, 3, requires_grad=True)
    g = cl.randn(6, 8, 5, 3)
    fns = {
        "batch": lambda: F.batch_norm(x, None, None, w, b, training=True),
        "layer": lambda: F.layer_norm(x, (5, 3), wl, wl),
        "group": lambda: F.group_norm(x, 4, w, b),
        "rms": lambda: F.rms_norm(x, (5, 3), wl),
        "instance": lambda: F.instance_norm(x, weight=w, bias=b),
    }
    results = []
    for n in (1, 2):
        cl.set_num_threads(n)
        for t in (x, w, b, wl):
            t.grad = None
        out = fns[layer]()
        out.backward(g)
        grads = [t.grad.numpy().copy() for t in (x, w, b, wl) if t.grad is not None]
        results.append([out.detach().numpy().copy()] + grads)
    for a, c in zip(*results):
        assert np.array_equal(a, c)


def test_large_mean_small_spread_keeps_its_precision():
    # mean 1000, spread 0.01: E[x^2] - mean^2 would cancel every significant digit in float32
    rng = np.random.default_rng(1)
    base = 1000 + 0.01 * rng.standard_normal((16, 4, 32))
    x = cl.tensor(base.astype(np.float32), requires_grad=True)
    y = F.layer_norm(x, (32,))
    ref = (base - base.mean(-1, keepdims=True)) / np.sqrt(base.var(-1, keepdims=True) + 1e-5)
    assert np.abs(y.detach().numpy() - ref).max() < 2e-2
    yb = F.batch_norm(x, None, None, training=True)
    refb = (base - base.mean((0, 2), keepdims=True)) / np.sqrt(base.var((0, 2), keepdims=True) + 1e-5)
    assert np.abs(yb.detach().numpy() - refb).max() < 2e-2


def test_non_contiguous_inputs(small_chunks):
    cl.manual_seed(2)
    base = cl.randn(7, 5, 6, 4)
    x = base.permute(0, 3, 1, 2)           # (7, 4, 5, 6), not contiguous
    xc = x.contiguous()
    for fn in (lambda t: F.batch_norm(t, None, None, training=True), lambda t: F.layer_norm(t, (5, 6)),
               lambda t: F.group_norm(t, 2), lambda t: F.rms_norm(t, (6,))):
        np.testing.assert_allclose(fn(x).numpy(), fn(xc).numpy(), rtol=1e-6, atol=1e-6)


def test_empty_batch_of_rows():
    x = cl.randn(0, 5, requires_grad=True)
    w = cl.randn(5, requires_grad=True)
    y = F.layer_norm(x, (5,), w, w)
    assert tuple(y.shape) == (0, 5)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 5)
    assert np.array_equal(w.grad.numpy(), np.zeros(5, np.float32))


# ---------------------------------------------------------------------------
# course_lib._parallel
# ---------------------------------------------------------------------------
def test_parallel_chunks_results_in_chunk_order(threads):
    for n in (1, 2, 3):
        cl.set_num_threads(n)
        assert _parallel.parallel_chunks(10, 3, lambda b, e: (b, e)) == [(0, 3), (3, 6), (6, 9), (9, 10)]
        assert _parallel.parallel_chunks(0, 3, lambda b, e: (b, e)) == []


def test_parallel_chunks_uses_other_threads_and_runs_nested_calls_inline(threads):
    cl.set_num_threads(2)
    seen = set()
    nested = []

    def fn(b, e):
        seen.add(threading.get_ident())
        time.sleep(0.05)               # releases the GIL: the other thread takes the next chunk
        nested.append(_parallel.parallel_chunks(4, 1, lambda b2, e2: threading.get_ident()))
        return b

    _parallel.parallel_chunks(4, 1, fn)
    assert len(seen) == 2
    for idents in nested:
        assert len(set(idents)) == 1 and idents[0] in seen   # inline, on the thread that called
    assert not _parallel.in_parallel_region()


def test_parallel_chunks_reraises(threads):
    cl.set_num_threads(2)

    def fn(b, e):
        if b == 3:
            raise ValueError("chunk 3 failed")
        return b

    with pytest.raises(ValueError, match="chunk 3 failed"):
        _parallel.parallel_chunks(4, 1, fn)
    assert _parallel.parallel_chunks(4, 1, lambda b, e: b) == [0, 1, 2, 3]   # the pool still works


def test_set_num_threads_checks_its_argument(threads):
    # the wording of torch 2.13.0's torch.set_num_threads
    for bad in (0, -1):
        with pytest.raises(RuntimeError, match="^set_num_threads expects a positive integer$"):
            cl.set_num_threads(bad)
    for bad, name in ((1.5, "float"), (True, "bool")):
        with pytest.raises(RuntimeError, match=f"^set_num_threads expects an int, but got {name}$"):
            cl.set_num_threads(bad)
    cl.set_num_threads(3)
    assert cl.get_num_threads() == 3


def test_pool_is_recreated_after_fork(threads):
    cl.set_num_threads(2)
    _parallel.parallel_chunks(2, 1, lambda b, e: b)
    assert _parallel._pool is not None
    _parallel._reset_after_fork()
    assert _parallel._pool is None
    assert _parallel.parallel_chunks(4, 1, lambda b, e: b) == [0, 1, 2, 3]


@pytest.mark.parametrize("n", [1, 2])
def test_parallel_copy_matches_np_array(monkeypatch, threads, n):
    monkeypatch.setattr(_parallel, "_COPY_MIN", 1)
    monkeypatch.setattr(_parallel, "_COPY_GRAIN", 7)
    cl.set_num_threads(n)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 4, 5))
    for src, dtype in [(a, None), (a.transpose(2, 0, 1), None), (a[::2, :, ::-1], np.float32),
                       (a * 100, np.int32), (a > 0, None)]:
        got = _parallel.parallel_copy(src, dtype)
        want = np.array(src, dtype=dtype, order="C")
        assert got.dtype == want.dtype and got.flags.c_contiguous and np.array_equal(got, want)
        assert not np.shares_memory(got, src)
    t = cl.tensor(a.transpose(1, 0, 2))
    assert np.array_equal(t.numpy(), a.transpose(1, 0, 2)) and t.is_contiguous()
    c = t.clone()
    assert np.array_equal(c.numpy(), t.numpy()) and not np.shares_memory(c.numpy(), t.numpy())


@pytest.mark.parametrize("axes,view", [((0, 2, 3), "bn"), ((1, 2, 3), "ln"), ((2, 3), "in")])
def test_readable_reference_agrees_with_the_kernel(axes, view):
    # norm_stats / norm_backward are what chapter 05 shows; the layers run grouped_norm_*
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 6, 3, 5))
    dy = rng.standard_normal(x.shape)
    gamma = rng.standard_normal(6)
    N_, C = x.shape[:2]
    if view == "bn":
        x3, dy3, param, g = x.reshape(N_, C, -1), dy.reshape(N_, C, -1), "group", gamma
        gb = gamma.reshape(1, C, 1, 1)
    elif view == "ln":
        x3, dy3, param = x.reshape(1, N_, -1), dy.reshape(1, N_, -1), "inner"
        g = gamma.repeat(15)                     # LayerNorm((6, 3, 5)) with a per-channel weight
        gb = gamma.reshape(1, C, 1, 1) * np.ones((1, C, 3, 5))
    else:
        x3, dy3, param, g, gb = x.reshape(1, N_ * C, -1), dy.reshape(1, N_ * C, -1), "group", None, None
    xhat, mean, invstd, _ = R.norm_stats(x, axes, 1e-5)
    y3, m3, r3, _ = N.grouped_norm_forward(x3, 1e-5, g, None, param)
    expect_y = xhat * gb if gb is not None else xhat
    np.testing.assert_allclose(y3.reshape(x.shape), expect_y, rtol=1e-10, atol=1e-12)
    dx = R.norm_backward(dy, xhat, invstd, axes, gb)
    dx3, _, _ = N.grouped_norm_backward(dy3, x3, m3, r3, g, param)
    np.testing.assert_allclose(dx3.reshape(x.shape), dx, rtol=1e-9, atol=1e-12)


class _NormedRows(Dataset):
    """Each item runs a threaded kernel inside the worker process."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        cl.manual_seed(i)
        x = cl.randn(16, 8)
        return F.layer_norm(x, (8,)).sum(1), F.layer_norm(x, (8,))


def test_dataloader_workers_forked_after_the_pool_started(small_chunks, threads):
    # the parent's pool threads do not exist in a forked worker: the pool must be rebuilt there
    cl.set_num_threads(2)
    ds = _NormedRows()
    _parallel.parallel_chunks(4, 1, lambda b, e: b)      # the parent's pool is running
    assert _parallel._pool is not None
    inline = [ds[i][1].numpy() for i in range(len(ds))]
    loader = DataLoader(ds, batch_size=2, num_workers=2, timeout=30)
    got = [b[1].numpy() for b in loader]
    np.testing.assert_array_equal(np.concatenate(got), np.stack(inline))
