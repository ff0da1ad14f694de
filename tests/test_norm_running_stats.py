"""Regression: BatchNorm's running-statistics update does not bump the buffers' version counters.

In PyTorch the update happens inside the kernel (``batch_norm_cpu_update_stats_template``
in ``aten/src/ATen/native/Normalization.cpp``), not through an in-place op that
autograd sees, so ``running_mean._version`` is unchanged by a training step.  One
visible consequence: an eval-mode forward followed by a training-mode forward of the
same layer (which updates the running statistics the eval-mode node saved) still
back-propagates, with the *updated* statistics.  course_lib used to bump the versions
and raise "one of the variables needed for gradient computation has been modified by
an inplace operation" there.

An explicit in-place op on a buffer (``copy_``, ``fill_``) still bumps its version, as
in PyTorch.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.nn.functional as F
from course_lib import nn


def test_training_step_leaves_buffer_versions_alone():
    bn = nn.BatchNorm1d(3)
    before = (bn.running_mean._version, bn.running_var._version, bn.num_batches_tracked._version)
    bn(cl.randn(4, 3))
    after = (bn.running_mean._version, bn.running_var._version, bn.num_batches_tracked._version)
    assert after[:2] == before[:2]
    assert after[2] == before[2] + 1  # num_batches_tracked.add_(1) is an ordinary in-place op
    rm, rv = cl.zeros(3), cl.ones(3)
    F.batch_norm(cl.randn(4, 3), rm, rv, training=True)
    assert (rm._version, rv._version) == (0, 0)
    assert rm.abs().sum().item() > 0  # ... but the values were updated


def test_explicit_in_place_op_on_a_buffer_still_bumps_its_version():
    bn = nn.BatchNorm1d(3)
    v = bn.running_mean._version
    bn.running_mean.fill_(0.5)
    assert bn.running_mean._version == v + 1
    bn.eval()
    x = cl.randn(4, 3, requires_grad=True)
    y = bn(x)
    bn.running_var.fill_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_eval_forward_then_training_forward_then_backward_matches_torch():
    torch = require_torch()
    rng = np.random.default_rng(0)
    x_eval = rng.normal(0, 1, (4, 3))
    x_train = rng.normal(2, 3, (5, 3))
    grads = []
    for lib, N in [(cl, nn), (torch, torch.nn)]:
        bn = N.BatchNorm1d(3).double()
        bn.eval()
        x = lib.tensor(x_eval, requires_grad=True)
        y = bn(x)
        bn.train()
        bn(lib.tensor(x_train))          # updates the running statistics the eval node saved
        (y * lib.tensor(np.arange(12.).reshape(4, 3))).sum().backward()
        grads.append((x.grad.numpy(), bn.weight.grad.numpy(), bn.running_var.detach().numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_old_checkpoint_keeps_the_modules_own_num_batches_tracked():
    """A version-1 state_dict has no num_batches_tracked: torch keeps the module's current count
    (0 for a fresh module), rather than resetting it to 0."""
    from collections import OrderedDict

    torch = require_torch()
    counts = []
    for lib, N in [(cl, nn), (torch, torch.nn)]:
        bn = N.BatchNorm1d(2)
        for _ in range(5):
            bn(lib.randn(4, 2))
        old = OrderedDict((k, v) for k, v in bn.state_dict().items() if k != "num_batches_tracked")
        old._metadata = OrderedDict({"": {"version": 1}})
        bn.load_state_dict(old)
        fresh = N.BatchNorm1d(2)
        fresh.load_state_dict(old)
        counts.append((int(bn.num_batches_tracked.item()), int(fresh.num_batches_tracked.item())))
    assert counts[0] == counts[1] == (5, 0)
