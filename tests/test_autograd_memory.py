"""The storage allocation tracker (course_lib.memory) and what autograd keeps alive."""
from __future__ import annotations

import gc

import course_lib as cl
from course_lib import memory


def _fresh():
    gc.collect()
    memory.reset_peak_memory_stats()
    return memory.memory_allocated()


def test_new_storage_counts_and_is_freed():
    base = _fresh()
    t = cl.zeros(1000)
    assert memory.memory_allocated() - base == 4000
    del t
    gc.collect()
    assert memory.memory_allocated() == base
    assert memory.max_memory_allocated() - base == 4000


def test_views_do_not_count():
    t = cl.zeros(10, 10, dtype=cl.float64)
    base = _fresh()
    views = [t[1], t.t(), t.view(100), t[:, 2:5], t.unsqueeze(0), t.expand(3, 10, 10), t.detach()]
    assert memory.memory_allocated() == base
    del views


def test_reset_peak():
    base = _fresh()
    a = cl.zeros(500)
    del a
    gc.collect()
    assert memory.max_memory_allocated() - base == 2000
    memory.reset_peak_memory_stats()
    assert memory.max_memory_allocated() == memory.memory_allocated()
    stats = memory.memory_stats()
    assert stats["allocated_bytes.current"] == memory.memory_allocated()


def test_saved_tensors_hold_memory_until_backward():
    x = cl.randn(1000, requires_grad=True)
    base = _fresh()
    y = x.exp()      # ExpBackward0 saves y
    z = y.sin()      # SinBackward0 saves y as its input
    out = z.sum()
    del y, z
    gc.collect()
    held = memory.memory_allocated() - base
    assert held >= 4000          # y is still alive: the graph keeps it
    out.backward()
    del out
    gc.collect()
    # after backward only x.grad (4000 bytes) is new
    assert memory.memory_allocated() - base == 4000


def test_retain_graph_keeps_saved_tensors():
    x = cl.randn(1000, requires_grad=True)
    base = _fresh()
    out = x.exp().sum()
    out.backward(retain_graph=True)
    gc.collect()
    assert memory.memory_allocated() - base >= 8000  # x.grad and the saved exp result
    out.backward()
    del out
    gc.collect()
    assert memory.memory_allocated() - base == 4000


def test_no_grad_keeps_nothing():
    x = cl.randn(1000, requires_grad=True)
    base = _fresh()
    with cl.no_grad():
        y = x
        for _ in range(5):
            y = y.exp().sin()
    del y
    gc.collect()
    assert memory.memory_allocated() == base
    assert memory.max_memory_allocated() - base <= 3 * 4000


def test_activation_memory_grows_with_depth():
    x = cl.randn(1000, requires_grad=True)
    held = []
    for depth in (2, 4, 8):
        base = _fresh()
        y = x
        for _ in range(depth):
            y = y.tanh()
        held.append(memory.memory_allocated() - base)
        del y
        gc.collect()
    assert held == [2 * 4000, 4 * 4000, 8 * 4000]
