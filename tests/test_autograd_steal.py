"""AccumulateGrad keeps a gradient nobody else holds as ``.grad`` without copying it.

PyTorch does the same (``AccumulateGrad::accumulateGrad`` steals the incoming tensor when
``is_tensor_stealable``: no other reference, storage not shared).  The copy it saves is a full
pass over every parameter's gradient.  What must never happen is that ``.grad`` ends up
sharing memory with a tensor or array somebody else can still see.
"""
from __future__ import annotations

import numpy as np
import pytest

import course_lib as cl
import course_lib.nn.functional as F
from course_lib.autograd import graph


@pytest.fixture
def copies(monkeypatch):
    calls = []
    orig = graph._fresh_copy

    def counting(g):
        calls.append(g)
        return orig(g)

    monkeypatch.setattr(graph, "_fresh_copy", counting)
    return calls


def test_fresh_gradients_are_kept_without_a_copy(copies):
    cl.manual_seed(0)
    x = cl.randn(4, 8, requires_grad=True)
    w = cl.randn(8, requires_grad=True)
    F.layer_norm(x * 2, (8,), w, w).backward(cl.randn(4, 8))
    assert copies == []
    x.grad = None
    m = cl.randn(8, 3, requires_grad=True)
    ((x @ m).relu() * 2).sum().backward()
    assert copies == []
    assert x.grad is not None and m.grad is not None


def _assert_independent(a, b):
    before = b.numpy().copy()
    a.add_(1.0)
    assert np.array_equal(b.numpy(), before), "the two share memory"


def test_a_gradient_a_hook_kept_is_copied(copies):
    x = cl.randn(3, 4, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 3).sum().backward()
    assert len(copies) == 1
    _assert_independent(x.grad, kept[0])


def test_a_numpy_view_a_hook_kept_is_not_aliased(copies):
    x = cl.randn(3, 4, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g.numpy()))
    (x * 3).sum().backward()
    before = kept[0].copy()
    x.grad.add_(1.0)
    assert np.array_equal(kept[0], before)

    y = cl.randn(3, 4, requires_grad=True)
    kept2 = []
    y.register_hook(lambda g: kept2.append(g.numpy().reshape(-1)))   # a view of a view
    (y * 3).sum().backward()
    before = kept2[0].copy()
    y.grad.add_(1.0)
    assert np.array_equal(kept2[0], before)


def test_the_callers_gradient_is_never_taken():
    x = cl.randn(3, 4, requires_grad=True)
    g = cl.ones(3, 4)
    x.clone().backward(g)          # CloneBackward hands g on unchanged
    assert x.grad is not g
    _assert_independent(g, x.grad)
    z = cl.randn(3, 4, requires_grad=True)
    gz = cl.ones(3, 4)
    z.backward(gz)                 # the root is the leaf itself
    _assert_independent(gz, z.grad)


def test_one_gradient_reaching_two_leaves_is_not_shared():
    a = cl.randn(5, requires_grad=True)
    b = cl.randn(5, requires_grad=True)
    (a + b).sum().backward()       # AddBackward passes the same tensor to both
    _assert_independent(a.grad, b.grad)


def test_retained_intermediate_gradient_is_separate():
    x = cl.randn(2, 3, requires_grad=True)
    y = x.clone()
    y.retain_grad()
    (y * 1).sum().backward()
    _assert_independent(x.grad, y.grad)


def test_gradient_that_is_a_view_is_copied(copies):
    x = cl.randn(2, 6, requires_grad=True)
    y = x.view(12)
    g = cl.randn(12)
    y.backward(g)                  # ViewBackward returns g.view(2, 6): it shares g's storage
    assert len(copies) == 1
    _assert_independent(g, x.grad)


def test_accumulating_into_an_existing_grad_leaves_the_incoming_tensor_alone():
    x = cl.randn(3, requires_grad=True)
    (x * 2).sum().backward()
    first = x.grad
    (x * 2).sum().backward()
    assert x.grad is first        # accumulated in place, as in PyTorch
    assert np.allclose(x.grad.numpy(), 4.0)


def test_linear_gradients_are_kept_without_a_copy(copies):
    # weight.grad is the transpose of the transposed product (grad_out^T @ input)^T, computed in the
    # weight's own layout; bias.grad is a sum viewed to the bias's shape: both are views of results
    # nobody else holds, so they become .grad as they are (PyTorch's mm_mat2_backward does the same)
    cl.manual_seed(0)
    lin = cl.nn.Linear(6, 4)
    x = cl.randn(5, 6)
    F.cross_entropy(lin(x), cl.tensor([0, 1, 2, 3, 0])).backward()
    assert copies == []
    for p in (lin.weight, lin.bias):
        assert not p.grad._is_view() and p.grad.is_contiguous() and p.grad.shape == p.shape
    expected = (cl.tensor(x.numpy().T) @ cl.ones(5, 4)).t()
    lin.weight.grad = None
    lin(x).sum().backward()
    assert np.allclose(lin.weight.grad.numpy(), expected.numpy())


def test_a_transposed_gradient_a_hook_kept_is_not_aliased(copies):
    x = cl.randn(5, 3)
    w = cl.randn(4, 3, requires_grad=True)
    wt = w.t()
    kept = []
    wt.register_hook(lambda g: kept.append(g))          # the (3, 4) view whose transpose is w's gradient
    (x @ wt).sum().backward()
    assert len(copies) == 1
    _assert_independent(w.grad, kept[0])

    w2 = cl.randn(4, 3, requires_grad=True)
    wt2 = w2.t()
    kept2 = []
    wt2.register_hook(lambda g: kept2.append(g.numpy()))  # a numpy view of it
    (x @ wt2).sum().backward()
    before = kept2[0].copy()
    w2.grad.add_(1.0)
    assert np.array_equal(kept2[0], before)


def test_a_viewed_bias_gradient_whose_sum_a_hook_kept_is_not_aliased():
    x = cl.randn(5, 3)
    b = cl.randn(1, 3, requires_grad=True)
    kept = []
    y = x + b
    y.register_hook(lambda g: kept.append(g))
    y.sum().backward()
    assert b.grad.shape == (1, 3)
    _assert_independent(b.grad, kept[0])
