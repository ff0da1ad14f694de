"""The capstone's dataset (course_lib.datasets.patterns) and the ResNet ``widths`` argument."""
from __future__ import annotations

import doctest

import numpy as np
import pytest

import course_lib as cl
from course_lib.datasets import patterns
from course_lib.datasets.patterns import PATTERN_CLASSES, Patterns, make_patterns
from course_lib.models.resnet import BasicBlock, ResNet, resnet18


def test_docstring_examples():
    result = doctest.testmod(patterns, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_patterns_are_deterministic_balanced_and_seed_dependent():
    a, la = make_patterns(2100, seed=3)      # more than one generation block
    b, lb = make_patterns(2100, seed=3)
    c, _ = make_patterns(50, seed=4)
    assert np.array_equal(a, b) and np.array_equal(la, lb)
    assert not np.array_equal(a[:50], c)
    assert a.shape == (2100, 32, 32, 3) and a.dtype == np.uint8
    assert np.bincount(la, minlength=10).tolist() == [210] * 10
    # colour tells nothing: every class covers the whole range in every channel
    for k in range(10):
        means = a[la == k].reshape(-1, 1024, 3).mean(1)
        assert means.min() < 90 and means.max() > 160


def test_striped_classes_differ_from_solid_inside_the_shape():
    images, labels = make_patterns(60, seed=0, noise=0.0)
    spread = images.astype(np.int16).reshape(60, -1, 3).std(1).mean(1)
    # without noise a solid image has two colours and a striped one three
    colours = [len(np.unique(im.reshape(-1, 3), axis=0)) for im in images]
    assert all(n == 2 + (label % 2) for n, label in zip(colours, labels))
    assert spread.min() > 0


def test_dataset_is_cifar_shaped_and_applies_transforms():
    from course_lib.datasets.transforms import Compose, Normalize, ToTensor
    ds = Patterns(20, seed=1, transform=Compose([ToTensor(), Normalize((0.5,) * 3, (0.5,) * 3)]),
                  target_transform=lambda t: t + 100)
    x, y = ds[3]
    assert ds.data.shape == (20, 32, 32, 3) and isinstance(ds.targets[0], int)
    assert tuple(x.shape) == (3, 32, 32) and x.dtype == cl.float32 and y == ds.targets[3] + 100
    assert float(x.min()) >= -1 and float(x.max()) <= 1
    assert ds.classes == PATTERN_CLASSES and len(ds) == 20


def test_make_patterns_errors():
    with pytest.raises(ValueError, match="size must be at least 16"):
        make_patterns(4, size=8)
    with pytest.raises(ValueError, match="n must be non-negative"):
        make_patterns(-1)


def test_resnet_widths_keep_module_names_and_set_channels():
    small = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, widths=(8, 16, 32, 64))
    assert small.conv1.out_channels == 8 and small.layer4[0].conv2.out_channels == 64
    assert small.fc.in_features == 64
    assert small(cl.randn(2, 3, 32, 32)).shape == (2, 10)
    two = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10, widths=(8, 16, 32, 64))
    keys = list(two.state_dict())
    assert keys == list(resnet18(num_classes=10, widths=(4, 4, 4, 4)).state_dict())
    assert {"conv1.weight", "layer2.0.downsample.0.weight", "layer4.1.bn2.running_var", "fc.bias"} <= set(keys)
    with pytest.raises(ValueError, match="widths should be 4 positive channel counts"):
        ResNet(BasicBlock, [1, 1, 1, 1], widths=(8, 16, 32))
    with pytest.raises(ValueError, match="layers should be 4 block counts"):
        ResNet(BasicBlock, [1, 1, 1], widths=(8, 16, 32, 64))
