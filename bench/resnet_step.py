"""A small ResNet training step (chapter 04's model), eager and compiled, for the benchmark harness.

Chapter 04's ``ResNet`` with one ``BasicBlock`` per stage, 10 classes, 3x32x32 inputs, batch 8,
SGD with momentum; compiled with ``aot_module`` + ``compile_fx`` (min-cut partitioner).  There is
no numpy column (no hand-written numpy ResNet backward), so ``run.py`` does not discover this
file (its name does not start with ``bench_``): run it with

    python bench/compile_table.py --harness     # steady state, each library in its own process

``compile_table.py`` also uses these helpers for the compile-time and first-call columns.
"""
from __future__ import annotations

import numpy as np
from harness import measuring, torch_or_none, workload

import course_lib as cl
import course_lib.nn as nn

F = nn.functional


# ---------------------------------------------------------------------------
def small_resnet():
    """Chapter 04's ResNet with one BasicBlock per stage, 10 classes, for 32x32 inputs."""
    from course_lib.models.resnet import BasicBlock, ResNet
    cl.manual_seed(0)
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, small_input=True)


def resnet_data(quick: bool):
    rng = np.random.default_rng(3)
    n, hw = (2, 8) if quick else (8, 32)
    return rng.standard_normal((n, 3, hw, hw), dtype=np.float32), rng.integers(0, 10, n)


def resnet_step(model, forward, x, y):
    """One SGD-with-momentum step of ``model`` run through ``forward``; returns the loss."""
    opt = cl.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def compile_resnet(model):
    from course_lib._functorch import aot_module
    from course_lib._functorch.partitioners import min_cut_rematerialization_partition
    from course_lib._inductor import compile_fx
    return aot_module(model, compile_fx, compile_fx, partition_fn=min_cut_rematerialization_partition)


def _resnet_workload(quick: bool, compiled: bool) -> dict:
    xn, yn = resnet_data(quick)
    fns = {}
    if measuring("course_lib"):
        model = small_resnet()
        x, y = cl.from_numpy(xn), cl.from_numpy(yn)
        step = resnet_step(model, compile_resnet(model) if compiled else model, x, y)
        step()   # the first call compiles (and, compiled or not, warms up)
        fns["course_lib"] = step
    torch = torch_or_none()
    if torch is not None:
        tmodel = _torch_resnet(torch)
        topt = torch.optim.SGD(tmodel.parameters(), lr=0.05, momentum=0.9)
        xt, yt = torch.from_numpy(xn), torch.from_numpy(yn)

        def torch_step():
            topt.zero_grad()
            loss = torch.nn.functional.cross_entropy(tmodel(xt), yt)
            loss.backward()
            topt.step()
            return loss
        fns["torch"] = torch_step
    return fns


def _torch_resnet(torch):
    """The same architecture in torch (torchvision's BasicBlock layout), for the torch column."""
    tnn = torch.nn

    class Block(tnn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = tnn.BatchNorm2d(cout)
            self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = tnn.BatchNorm2d(cout)
            self.down = None if stride == 1 and cin == cout else tnn.Sequential(
                tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    torch.manual_seed(0)
    layers = [tnn.Conv2d(3, 64, 3, 1, 1, bias=False), tnn.BatchNorm2d(64), tnn.ReLU()]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers.append(Block(cin, cout, stride))
        cin = cout
    layers += [tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(512, 10)]
    return tnn.Sequential(*layers)


@workload("small ResNet train step 8x3x32x32 (eager)", note="eager course_lib, torch eager; no numpy column")
def resnet_step_eager(quick: bool):
    return _resnet_workload(quick, compiled=False)


@workload("small ResNet train step 8x3x32x32 (compiled)",
          note="aot_module + compile_fx vs torch eager; compile and first call: bench/compile_table.py")
def resnet_step_compiled(quick: bool):
    return _resnet_workload(quick, compiled=True)
