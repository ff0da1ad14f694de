"""Chapter 09 ships its trained ResNet to PyTorch: course_lib's state_dict, saved with course_lib.save,
loads with torch.load(weights_only=True) into a torch.nn ResNet of the same structure (strict names and
shapes), which then gives the same logits and the same predictions."""
from __future__ import annotations

import numpy as np
from oracle import require_torch

import course_lib as cl
from course_lib.datasets import Patterns
from course_lib.models.resnet import BasicBlock, ResNet

WIDTHS = (4, 8, 8, 16)


def _torch_resnet(torch, widths, num_classes):
    """The notebook's torch.nn ResNet: torchvision's BasicBlock structure and module names."""
    tnn = torch.nn

    class Block(tnn.Module):
        def __init__(self, inplanes, planes, stride):
            super().__init__()
            self.conv1 = tnn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = tnn.BatchNorm2d(planes)
            self.relu = tnn.ReLU(inplace=True)
            self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = tnn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = tnn.Sequential(tnn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                 tnn.BatchNorm2d(planes))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class Net(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tnn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
            self.bn1 = tnn.BatchNorm2d(widths[0])
            self.relu = tnn.ReLU(inplace=True)
            self.maxpool = tnn.MaxPool2d(3, 2, 1)
            inplanes = widths[0]
            for i, planes in enumerate(widths):
                setattr(self, f"layer{i + 1}", tnn.Sequential(Block(inplanes, planes, 1 if i == 0 else 2)))
                inplanes = planes
            self.avgpool = tnn.AdaptiveAvgPool2d(1)
            self.fc = tnn.Linear(widths[-1], num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return Net()


def test_trained_weights_give_the_same_predictions_in_torch(tmp_path):
    torch = require_torch()
    data = Patterns(96, seed=3)
    x = cl.from_numpy(np.ascontiguousarray(data.data.transpose(0, 3, 1, 2)).astype(np.float32) / 255 - 0.5)
    y = cl.tensor(data.targets)
    cl.manual_seed(0)
    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, widths=WIDTHS)
    opt = cl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for i in range(3):             # a few steps: weights and BatchNorm statistics away from their initial values
        loss = cl.nn.functional.cross_entropy(model(x[32 * i:32 * i + 32]), y[32 * i:32 * i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with cl.no_grad():
        logits = model(x).numpy()
    path = tmp_path / "weights.pt"
    cl.save(model.state_dict(), path)

    net = _torch_resnet(torch, WIDTHS, 10)
    net.load_state_dict(torch.load(path, weights_only=True))          # strict=True: every name and shape
    net.eval()
    with torch.no_grad():
        theirs = net(torch.from_numpy(x.numpy())).numpy()
    assert np.abs(model.bn1.running_mean.numpy()).max() > 0
    np.testing.assert_allclose(theirs, logits, rtol=1e-4, atol=1e-5)
    assert (theirs.argmax(1) == logits.argmax(1)).all()
