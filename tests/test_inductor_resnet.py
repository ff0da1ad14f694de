"""The chapter-04 ResNet trained with compile_fx (through aot_module) follows eager course_lib's loss curve."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import course_lib as cl  # noqa: E402
from course_lib._functorch import aot_module  # noqa: E402
from course_lib._functorch.partitioners import min_cut_rematerialization_partition  # noqa: E402
from course_lib._inductor import compile_fx  # noqa: E402
from course_lib.models.resnet import BasicBlock, ResNet  # noqa: E402


def _train(compiled: bool, x, y, steps: int = 5):
    cl.manual_seed(0)
    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, small_input=True)
    forward = aot_module(model, compile_fx, compile_fx,
                         partition_fn=min_cut_rematerialization_partition) if compiled else model
    opt = cl.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = cl.nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model.state_dict()


def test_compiled_resnet_training_matches_eager_loss_curve_and_state():
    rng = np.random.default_rng(0)
    x = cl.from_numpy(rng.standard_normal((2, 3, 8, 8), dtype=np.float32))
    y = cl.from_numpy(rng.integers(0, 10, 2))
    eager, eager_state = _train(False, x, y)
    compiled, compiled_state = _train(True, x, y)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)
    assert eager[-1] < eager[0]   # it learns: the curve is not flat
    for name, t in eager_state.items():   # weights and BatchNorm running statistics
        np.testing.assert_allclose(compiled_state[name].numpy(), t.numpy(), rtol=1e-3, atol=1e-4, err_msg=name)
