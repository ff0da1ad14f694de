"""``inplace=True`` of the activations, functional and module: the result is written into the input.

Before, ``silu``, ``elu``, ``hardtanh`` and ``relu6`` (and the ``SiLU``, ``ELU``, ``Hardtanh`` and ``ReLU6``
modules) accepted ``inplace`` and returned a new tensor, leaving the input unchanged.  Values, gradients,
dtype errors and the leaf error are compared with torch 2.13 when it is installed.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.nn as nn
import course_lib.nn.functional as F

X = [-3.0, -0.5, 0.0, 0.25, 2.0, 7.0]

# name -> (course_lib call, torch call); both take (module namespace, input, inplace)
ACTIVATIONS = {
    "relu": lambda F_, x, ip: F_.relu(x, inplace=ip),
    "leaky_relu": lambda F_, x, ip: F_.leaky_relu(x, 0.2, ip),
    "silu": lambda F_, x, ip: F_.silu(x, inplace=ip),
    "elu": lambda F_, x, ip: F_.elu(x, 0.7, ip),
    "hardtanh": lambda F_, x, ip: F_.hardtanh(x, -0.5, 1.5, ip),
    "relu6": lambda F_, x, ip: F_.relu6(x, inplace=ip),
}
MODULES = {
    "ReLU": lambda nn_: nn_.ReLU(inplace=True),
    "LeakyReLU": lambda nn_: nn_.LeakyReLU(0.2, inplace=True),
    "SiLU": lambda nn_: nn_.SiLU(inplace=True),
    "ELU": lambda nn_: nn_.ELU(0.7, inplace=True),
    "Hardtanh": lambda nn_: nn_.Hardtanh(-0.5, 1.5, inplace=True),
    "ReLU6": lambda nn_: nn_.ReLU6(inplace=True),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_inplace_writes_into_input(name):
    f = ACTIVATIONS[name]
    x = cl.tensor(X)
    expected = f(F, cl.tensor(X), False)
    out = f(F, x, True)
    assert out is x
    assert x._version == 1
    np.testing.assert_allclose(x.numpy(), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_inplace_reaches_functional(name):
    x = cl.tensor(X)
    out = MODULES[name](nn)(x)
    assert out is x and x._version == 1


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_inplace_matches_torch_values_and_gradients(name):
    torch = require_torch()
    import torch.nn.functional as TF
    f = ACTIVATIONS[name]
    xs = cl.tensor(X, requires_grad=True)
    y = xs * 1
    out = f(F, y, True)
    assert out is y
    out.sum().backward()
    xt = torch.tensor(X, requires_grad=True)
    yt = xt * 1
    outt = f(TF, yt, True)
    outt.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), outt.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_inplace_on_leaf_refused(name):
    torch = require_torch()
    import torch.nn.functional as TF
    f = ACTIVATIONS[name]
    with pytest.raises(RuntimeError) as et:
        f(TF, torch.tensor(X, requires_grad=True), True)
    with pytest.raises(RuntimeError) as e:
        f(F, cl.tensor(X, requires_grad=True), True)
    assert str(e.value) == str(et.value)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("inplace", [False, True])
def test_integer_input_as_torch(name, inplace):
    torch = require_torch()
    import torch.nn.functional as TF
    f = ACTIVATIONS[name]
    try:
        want = f(TF, torch.tensor([-3, 0, 2, 9]), inplace)
    except Exception as e:  # noqa: BLE001 - compared below
        with pytest.raises(type(e)) as got:
            f(F, cl.tensor([-3, 0, 2, 9]), inplace)
        assert str(got.value) == str(e)
        return
    got = f(F, cl.tensor([-3, 0, 2, 9]), inplace)
    assert got.dtype is cl.int64
    assert got.tolist() == want.tolist()


def test_hardtanh_bounds_checked():
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(cl.tensor(X), 2.0, 1.0)


def test_dropout_inplace_records_the_mask():
    # before: the values were copied through .data, so the gradient ignored the mask and the version stayed
    cl.manual_seed(0)
    x = cl.randn(64, requires_grad=True)
    y = x * 1
    out = F.dropout(y, 0.5, True, True)
    assert out is y and y._version == 1
    out.sum().backward()
    kept = out.detach().numpy() != 0
    np.testing.assert_array_equal(x.grad.numpy(), np.where(kept, 2.0, 0.0))
    z = cl.ones(3)
    assert F.dropout(z, 1.0, True, True) is z and z.tolist() == [0.0, 0.0, 0.0]
    z = cl.ones(3)
    assert F.dropout(z, 0.0, True, True) is z and z._version == 0
    assert nn.Dropout(0.5, inplace=True)(y) is y


def test_dropout_inplace_errors_as_torch():
    torch = require_torch()
    import torch.nn.functional as TF
    for make, lib in ((lambda L: L.randn(3, requires_grad=True), "leaf"), (lambda L: L.arange(4), "int")):
        with pytest.raises(RuntimeError) as et:
            TF.dropout(make(torch), 0.5, True, True)
        with pytest.raises(RuntimeError) as e:
            F.dropout(make(cl), 0.5, True, True)
        assert str(e.value) == str(et.value), lib
    with pytest.raises(RuntimeError) as et:
        TF.dropout(torch.arange(4), 0.5, True)
    with pytest.raises(RuntimeError) as e:
        F.dropout(cl.arange(4), 0.5, True)
    assert str(e.value) == str(et.value)
