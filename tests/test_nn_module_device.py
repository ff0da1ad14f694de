"""``device=`` of the layers' constructors: parameters and buffers are created there.

Before, ``Linear``, ``Bilinear``, ``Conv1d``/``Conv2d``, the norm layers and ``Embedding`` accepted ``device``
and ignored it (``nn.Linear(2, 3, device="meta")`` held data on the CPU).  Compared with torch 2.13 when it
is installed.
"""
from __future__ import annotations

import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.nn as nn

LAYERS = {
    "Linear": lambda nn_: nn_.Linear(2, 3, device="meta"),
    "Bilinear": lambda nn_: nn_.Bilinear(2, 2, 3, device="meta"),
    "Conv2d": lambda nn_: nn_.Conv2d(2, 3, 3, device="meta"),
    "Conv1d": lambda nn_: nn_.Conv1d(2, 3, 3, bias=False, device="meta"),
    "BatchNorm2d": lambda nn_: nn_.BatchNorm2d(3, device="meta"),
    "InstanceNorm2d": lambda nn_: nn_.InstanceNorm2d(3, affine=True, track_running_stats=True, device="meta"),
    "LayerNorm": lambda nn_: nn_.LayerNorm(4, device="meta"),
    "GroupNorm": lambda nn_: nn_.GroupNorm(2, 4, device="meta"),
    "RMSNorm": lambda nn_: nn_.RMSNorm(4, device="meta"),
    "Embedding": lambda nn_: nn_.Embedding(5, 2, padding_idx=0, device="meta"),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_parameters_and_buffers_on_the_device(name):
    m = LAYERS[name](nn)
    state = m.state_dict()
    assert state and all(t.is_meta for t in state.values()), {k: t.device for k, t in state.items()}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_as_torch(name):
    torch = require_torch()
    mine = {k: (tuple(t.shape), t.device.type) for k, t in LAYERS[name](nn).state_dict().items()}
    theirs = {k: (tuple(t.shape), t.device.type) for k, t in LAYERS[name](torch.nn).state_dict().items()}
    assert mine == theirs


def test_meta_layer_runs_on_meta_input():
    out = nn.Linear(2, 3, device="meta")(cl.empty(4, 2, device="meta"))
    assert out.is_meta and tuple(out.shape) == (4, 3)
