"""utils.checkpoint: same values and gradients, less memory."""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest

import course_lib as cl
from course_lib import memory
from course_lib.utils.checkpoint import checkpoint, checkpoint_sequential


def layer(h):
    return (h * 0.9).sin()


def run(depth, segments, x):
    if segments:
        return checkpoint_sequential([layer] * depth, segments, x)
    y = x
    for _ in range(depth):
        y = layer(y)
    return y


def measure(depth, segments, n=20000):
    cl.manual_seed(0)
    x = cl.randn(n, requires_grad=True)
    gc.collect()
    base = memory.memory_allocated()
    memory.reset_peak_memory_stats()
    y = run(depth, segments, x)
    after_forward = memory.memory_allocated() - base
    y.sum().backward()
    peak = memory.max_memory_allocated() - base
    return x.grad.numpy().copy(), after_forward, peak


def test_checkpoint_same_values_and_grads():
    cl.manual_seed(1)
    w1 = cl.randn(5, 6, requires_grad=True)
    w2 = cl.randn(6, 3, requires_grad=True)
    x = cl.randn(4, 5, requires_grad=True)

    def block(h):
        return ((h @ w1).tanh() @ w2).sigmoid()

    y_ref = block(x)
    y_ref.sum().backward()
    ref = [t.grad.numpy().copy() for t in (x, w1, w2)]
    for t in (x, w1, w2):
        t.grad = None
    y = checkpoint(block, x, use_reentrant=False)
    np.testing.assert_array_equal(y.detach().numpy(), y_ref.detach().numpy())
    assert type(y.grad_fn).__name__ == "SigmoidBackward0"  # the real ops are recorded
    y.sum().backward()
    for t, r in zip((x, w1, w2), ref):
        np.testing.assert_allclose(t.grad.numpy(), r, rtol=1e-6)


@pytest.mark.parametrize("depth", [8, 32])
def test_checkpoint_sequential_drops_peak_memory(depth):
    g_ref, fwd_ref, peak_ref = measure(depth, 0)
    g_ck, fwd_ck, peak_ck = measure(depth, int(math.sqrt(depth)))
    np.testing.assert_allclose(g_ck, g_ref, rtol=1e-6)
    act = 20000 * 4
    segments = int(math.sqrt(depth))
    size = depth // segments
    last = depth - size * (segments - 1)   # the last segment is not checkpointed
    assert fwd_ref >= depth * act          # every layer's input is kept
    assert fwd_ck <= (segments + last + 1) * act  # segment inputs + the last segment's activations
    assert peak_ck < peak_ref * (0.6 if depth >= 32 else 0.9)


def test_checkpoint_replays_random_numbers():
    x = cl.ones(1000, requires_grad=True)

    def noisy(h):
        return h * cl.rand(1000)

    cl.manual_seed(3)
    y = checkpoint(noisy, x)
    y.sum().backward()
    cl.manual_seed(3)
    expected = cl.rand(1000)
    np.testing.assert_array_equal(x.grad.numpy(), expected.numpy())


def test_checkpoint_with_retain_graph_recomputes_again():
    x = cl.tensor([0.5, 1.0], requires_grad=True)
    y = checkpoint(lambda h: (h * h).exp(), x)
    y.sum().backward(retain_graph=True)
    g1 = x.grad.clone()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1.numpy())


def test_checkpoint_autograd_grad():
    x = cl.tensor([0.5, 1.0], requires_grad=True)
    (g,) = cl.autograd.grad(checkpoint(lambda h: h.sin(), x).sum(), x)
    np.testing.assert_allclose(g.numpy(), np.cos([0.5, 1.0]), rtol=1e-6)
    assert x.grad is None


def test_checkpoint_detects_nondeterminism():
    x = cl.tensor([1.0, 2.0], requires_grad=True)
    calls = []

    def fn(h):
        calls.append(1)
        return h.exp() if len(calls) == 1 else h.exp().exp()

    y = checkpoint(fn, x)
    with pytest.raises(RuntimeError, match="A different number of tensors was saved"):
        y.sum().backward()


def test_reentrant_not_implemented():
    with pytest.raises(NotImplementedError):
        checkpoint(lambda h: h, cl.ones(1), use_reentrant=True)


def test_checkpoint_sequential_with_module_like_list():
    fs = [lambda h: h * 2, lambda h: h.exp(), lambda h: h - 1, lambda h: h.sin()]
    x = cl.tensor([0.1, 0.2], requires_grad=True)
    y = checkpoint_sequential(fs, 2, x)
    y.sum().backward()
    g = x.grad.numpy().copy()
    x.grad = None
    h = x
    for f in fs:
        h = f(h)
    h.sum().backward()
    np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-6)
