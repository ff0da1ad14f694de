"""Mixed precision against torch 2.13.0: autocast's dtypes, values and gradients, the weight-cast cache,
GradScaler's scale schedule, skipped steps, state and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
from course_lib.amp import GradScaler


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def _exprs(lib, F, a, b, h, img, w, y):
    return {
        "matmul": lambda: a @ b, "mm": lambda: lib.mm(a, b), "addmm": lambda: lib.addmm(a, a, b),
        "bmm": lambda: lib.bmm(a[None], b[None]), "linear": lambda: F.linear(a, b, a[0]),
        "conv2d": lambda: F.conv2d(img, w, padding=1), "add mixed": lambda: h + a, "relu": lambda: F.relu(h),
        "softmax": lambda: F.softmax(h, 1), "sum": lambda: h.sum(), "exp": lambda: h.exp(),
        "prod": lambda: h.prod(), "cat": lambda: lib.cat([h, a]), "stack half": lambda: lib.stack([h, h]),
        "nll_loss": lambda: F.nll_loss(F.log_softmax(a, 1), y), "dot": lambda: lib.dot(a[0], b[0]),
        "float64 matmul": lambda: a.double() @ b.double(), "layer_norm": lambda: F.layer_norm(h, (4,)),
        "max_pool2d": lambda: F.max_pool2d(img.half(), 2), "mean": lambda: h.mean(),
    }


def test_autocast_gives_each_op_torchs_dtype_and_values(torch):
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((2, 4, 4), dtype=np.float32)
    imgn, wn = rng.standard_normal((2, 3, 6, 6), dtype=np.float32), rng.standard_normal((4, 3, 3, 3), dtype=np.float32)
    yn = np.array([0, 1, 2, 3])

    def run(lib, F):
        a, b, img, w, y = (lib.from_numpy(v.copy()) for v in (an, bn, imgn, wn, yn))
        with lib.autocast("cpu", dtype=lib.float16):
            return {k: f() for k, f in _exprs(lib, F, a, b, a.half(), img, w, y).items()}

    ours, theirs = run(cl, cl.nn.functional), run(torch, torch.nn.functional)
    for k in theirs:
        assert str(ours[k].dtype).split(".")[1] == str(theirs[k].dtype).split(".")[1], k
        np.testing.assert_allclose(ours[k].float().numpy(), theirs[k].float().numpy(), rtol=2e-3, atol=2e-3,
                                   err_msg=k)


def test_autocast_training_gradients_and_weight_cast_cache_match_torch(torch):
    rng = np.random.default_rng(1)
    xn, w1n, w2n = (rng.standard_normal(s, dtype=np.float32) for s in ((8, 5), (6, 5), (3, 6)))
    yn = rng.integers(0, 3, 8)

    def run(lib):
        F = lib.nn.functional
        x, y = lib.from_numpy(xn.copy()), lib.from_numpy(yn.copy())
        w1, w2 = (lib.from_numpy(v.copy()).requires_grad_() for v in (w1n, w2n))
        with lib.autocast("cpu", dtype=lib.float16):
            h = F.relu(F.linear(x, w1))
            z = F.linear(h, w2) + F.linear(h, w2) * 0.5     # w2 used twice: one cached cast
            loss = F.nll_loss(F.log_softmax(z.float(), 1), y)
        loss.backward()
        casts, seen, todo = 0, set(), [loss.grad_fn]
        while todo:
            fn = todo.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            casts += type(fn).__name__ == "ToCopyBackward0"
            todo += [f for f, _ in fn.next_functions]
        return z.dtype, loss.item(), w1.grad.numpy(), w2.grad.numpy(), casts

    ours, theirs = run(cl), run(torch)
    assert str(ours[0]) == "course_lib.float16" and str(theirs[0]) == "torch.float16"
    assert ours[1] == pytest.approx(theirs[1], rel=2e-3)
    for o, t in zip(ours[2:4], theirs[2:4]):
        assert o.dtype == t.dtype == np.float32
        np.testing.assert_allclose(o, t, rtol=1e-2, atol=2e-3)
    assert ours[4] == theirs[4]


def test_autocast_nesting_disabling_and_unsupported_dtype(torch):
    a = cl.randn(3, 3)
    with cl.autocast("cpu", dtype=cl.float16):
        assert cl.amp.is_autocast_enabled("cpu") and (a @ a).dtype is cl.float16
        with cl.autocast("cpu", dtype=cl.float16, enabled=False):
            assert not cl.amp.is_autocast_enabled("cpu") and (a @ a).dtype is cl.float32
        assert (a @ a).dtype is cl.float16
    assert not cl.amp.is_autocast_enabled("cpu") and (a @ a).dtype is cl.float32
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        with cl.autocast("cpu", dtype=cl.float64):
            assert (a @ a).dtype is cl.float32
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        with torch.autocast("cpu", dtype=torch.float64):
            pass
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]

    @cl.autocast("cpu", dtype=cl.float16)
    def f(x):
        return x @ x
    assert f(a).dtype is cl.float16


def _scaler_run(lib, steps, bad_steps, **kwargs):
    rng = np.random.default_rng(2)
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.from_numpy(rng.standard_normal((2, 3), dtype=np.float32)))
        lin.bias.zero_()
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", **kwargs)
    x = lib.from_numpy(rng.standard_normal((4, 3), dtype=np.float32))
    trace = []
    for i in range(steps):
        opt.zero_grad()
        loss = (lin(x) ** 2).mean()
        scaler.scale(loss).backward()
        if i in bad_steps:
            lin.weight.grad[0, 0] = float("inf") if i % 2 else float("nan")
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), scaler._get_growth_tracker(), lin.weight.detach().numpy().copy()))
    return trace, scaler.state_dict()


def test_grad_scaler_schedule_skipped_steps_and_state_match_torch(torch):
    kw = dict(init_scale=8.0, growth_interval=3)
    ours, sd_o = _scaler_run(cl, 9, {2, 6, 7}, **kw)
    theirs, sd_t = _scaler_run(torch, 9, {2, 6, 7}, **kw)
    for (so, go, wo), (st, gt, wt) in zip(ours, theirs):
        assert (so, go) == (st, gt)
        np.testing.assert_allclose(wo, wt, rtol=1e-6, atol=1e-7)
    assert sd_o == sd_t
    fresh = GradScaler("cpu")
    fresh.load_state_dict(sd_o)
    assert fresh.state_dict() == sd_o


def test_grad_scaler_errors_match_torch(torch):
    def errors(lib):
        out = []
        lin = lib.nn.Linear(2, 2)
        opt = lib.optim.SGD(lin.parameters(), lr=0.1)
        s = lib.amp.GradScaler("cpu")
        for call in (lambda: s.update(), lambda: s.unscale_(opt), lambda: s.load_state_dict({})):
            try:
                call()
            except (RuntimeError, AssertionError) as e:
                out.append((type(e).__name__, str(e)))
        s.scale(lin(lib.ones(1, 2)).sum()).backward()
        s.unscale_(opt)
        for call in (lambda: s.unscale_(opt), lambda: s.step(opt, closure=lambda: 0)):
            try:
                call()
            except RuntimeError as e:
                out.append((type(e).__name__, str(e)))
        s.step(opt)
        try:
            s.step(opt)
        except RuntimeError as e:
            out.append((type(e).__name__, str(e)))
        half = lib.nn.Linear(2, 2).half()
        hopt = lib.optim.SGD(half.parameters(), lr=0.1)
        s2 = lib.amp.GradScaler("cpu")
        s2.scale(half(lib.ones(1, 2).half()).sum()).backward()
        try:
            s2.unscale_(hopt)
        except ValueError as e:
            out.append((type(e).__name__, str(e)))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            off = lib.amp.GradScaler()
        out.append((off.is_enabled(), [str(x.message) for x in w], off.get_scale(), off.state_dict()))
        return out

    assert errors(cl) == errors(torch)
