"""What a derivative declaration can save (derivatives.yaml's names), and that no op needs a hand-written
autograd wrapper to stash extra values on its node."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.nn.functional as F
from course_lib._ops.registry import OPS
from course_lib.autograd import derivatives, nn_derivatives
from course_lib.autograd.variable_type import Derivative, autograd_kernel


def _same(a, b) -> bool:
    return a.shape == b.shape and a.dtype is b.dtype and np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_every_op_uses_the_generic_autograd_kernel():
    # an op's Autograd key is the generic kernel (or the one derivative() makes to pick a node name per
    # overload, or the one-node-for-all-pieces kernel of split/chunk/unbind): no wrapper that edits
    # node._saved after the fact
    for op in OPS.values():
        if op.autograd is None or op.autograd is autograd_kernel:
            continue
        assert op.autograd.__module__ == derivatives.__name__, op.name
        assert op.autograd.__qualname__ in ("derivative.<locals>.deco.<locals>.kernel",
                                            "_multi_view.<locals>.kernel"), (op.name, op.autograd.__qualname__)
    for mod in (derivatives, nn_derivatives):
        import inspect
        assert "._saved[" not in inspect.getsource(mod), mod.__name__


def test_second_outputs_are_saved_as_result1():
    x = cl.randn(3, 4, requires_grad=True)
    values, indices = x.max(1)
    assert _same(values.grad_fn._saved_result1, indices)
    values.sum().backward()
    assert x.grad.sum().item() == 3.0

    img = cl.randn(1, 1, 4, 4, requires_grad=True)
    out, idx = OPS["max_pool2d_with_indices"](img, (2, 2), (2, 2), (0, 0), (1, 1), False)
    assert _same(out.grad_fn._saved_result1, idx)

    h = cl.randn(2, 3, 5, requires_grad=True)
    y, mean, rstd = OPS["native_layer_norm"](h, (5,), None, None, 1e-5)
    node = y.grad_fn
    assert _same(node._saved_result1, mean) and _same(node._saved_result2, rstd)
    # a saved output comes back with its node as grad_fn, like the result itself
    assert node._saved_result1.grad_fn is node and node._saved_result1._output_nr == 1


def test_named_outputs_and_running_stats_are_saved_by_name():
    logp = cl.randn(4, 3, requires_grad=True).log_softmax(1)
    loss = F.nll_loss(logp, cl.tensor([0, 1, 2, 0]))
    assert loss.grad_fn._saved_total_weight.item() == 4.0

    bn = cl.nn.BatchNorm1d(3)
    y = bn(cl.randn(5, 3, requires_grad=True))
    node = y.grad_fn
    assert node._saved_running_mean is bn.running_mean and node._saved_training is True
    assert node._saved_result1.shape == (3,) and node._saved_result2.shape == (3,)


def test_geometry_and_list_sizes_are_saved_without_the_values():
    x = cl.randn(4, 6, requires_grad=True)
    base = x * 1
    y = base.as_strided((2, 3), (6, 2), 1)
    assert y.grad_fn._saved_self_geometry == ((4, 6), (6, 1), 0, 24)
    a, b = cl.randn(2, 3, requires_grad=True), cl.randn(4, 3)
    c = cl.cat([a, b])
    assert c.grad_fn._saved_tensors_args_sizes == ((2, 3), (4, 3))
    c.sum().backward()
    assert a.grad.shape == (2, 3)


def test_a_view_regenerated_after_an_in_place_change_saves_its_base_geometry():
    x = cl.randn(4, 3, requires_grad=True)
    base = x * 1
    view = base[1]
    base.mul_(2)
    assert type(view.grad_fn).__name__ == "AsStridedBackward0"
    assert view.grad_fn._saved_self_geometry == ((4, 3), (3, 1), 0, 12)
    view.sum().backward()
    assert x.grad.tolist() == [[0, 0, 0], [2, 2, 2], [0, 0, 0], [0, 0, 0]]


def test_an_unknown_save_name_is_an_error():
    with pytest.raises(ValueError, match="cannot save 'nonsense'"):
        Derivative(OPS["exp"], "ExpBackward0", {"nonsense": None}, lambda ctx, g: g)


def test_saved_names_match_torch():
    torch = require_torch()
    x_t = torch.randn(3, 4, requires_grad=True)
    x_c = cl.tensor(x_t.detach().numpy(), requires_grad=True)
    cases = [
        (lambda x: torch.nn.functional.layer_norm(x, (4,)), lambda x: F.layer_norm(x, (4,)),
         ("_saved_result1", "_saved_result2")),
        (lambda x: torch.nn.functional.nll_loss(x.log_softmax(1), torch.tensor([0, 1, 2])),
         lambda x: F.nll_loss(x.log_softmax(1), cl.tensor([0, 1, 2])), ("_saved_total_weight",)),
        (lambda x: torch.nn.functional.batch_norm(x, torch.zeros(4), torch.ones(4), training=True),
         lambda x: F.batch_norm(x, cl.zeros(4), cl.ones(4), training=True),
         ("_saved_result1", "_saved_result2", "_saved_running_mean", "_saved_running_var")),
        (lambda x: torch.nn.functional.max_pool2d_with_indices(x.view(1, 1, 3, 4), 2)[0],
         lambda x: OPS["max_pool2d_with_indices"](x.view(1, 1, 3, 4), (2, 2), (2, 2), (0, 0), (1, 1), False)[0],
         ("_saved_result1",)),
    ]
    for f_t, f_c, names in cases:
        n_t, n_c = f_t(x_t).grad_fn, f_c(x_c).grad_fn
        assert n_t.name() == type(n_c).__name__
        for name in names:
            assert hasattr(n_t, name) and hasattr(n_c, name), (n_t.name(), name)
