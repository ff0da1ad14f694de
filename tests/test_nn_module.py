"""nn.Module semantics: registration, traversal, modes, conversions, state_dict, hooks, repr.

Expected values are PyTorch 2.13.0's (see reference/pytorch-facts.md section 3); the
oracle tests in test_nn_oracle.py compare with real torch directly.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import course_lib as cl
from course_lib import nn


def small():
    cl.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))


# ---------------------------------------------------------------------------
# __setattr__ routing
# ---------------------------------------------------------------------------
def test_setattr_routes_parameters_modules_buffers_and_plain_tensors():
    m = nn.Module()
    m.w = nn.Parameter(cl.zeros(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("buf", cl.ones(3))
    m.t = cl.zeros(1)
    assert list(m._parameters) == ["w"]
    assert list(m._modules) == ["sub"]
    assert list(m._buffers) == ["buf"]
    assert "t" in m.__dict__ and "t" not in m._buffers
    # a tensor assigned to an existing buffer name stays a buffer
    m.buf = cl.zeros(4)
    assert m._buffers["buf"].shape == (4,)
    # None keeps the slot
    m.w = None
    assert m._parameters == {"w": None}


def test_parameter_replaces_plain_attribute():
    m = nn.Module()
    m.x = 3
    m.x = nn.Parameter(cl.zeros(1))
    assert "x" in m._parameters and "x" not in m.__dict__


def test_setattr_type_errors_match_pytorch():
    m = nn.Module()
    m.w = nn.Parameter(cl.zeros(2))
    m.sub = nn.Linear(1, 1)
    m.register_buffer("buf", cl.zeros(1))
    with pytest.raises(TypeError) as e:
        m.w = cl.zeros(2)
    assert str(e.value) == "cannot assign 'torch.FloatTensor' as parameter 'w' (torch.nn.Parameter or None expected)"
    with pytest.raises(TypeError) as e:
        m.sub = cl.zeros(2)
    assert str(e.value) == ("cannot assign 'torch.FloatTensor' as child module 'sub' "
                            "(torch.nn.Module or None expected)")
    with pytest.raises(TypeError) as e:
        m.buf = 3
    assert str(e.value) == "cannot assign 'int' as buffer 'buf' (torch.nn.Buffer, torch.Tensor or None expected)"


def test_assign_before_init():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(cl.zeros(1))
            super().__init__()

    with pytest.raises(AttributeError, match=r"^cannot assign parameters before Module.__init__\(\) call$"):
        Bad()


def test_delattr_and_getattr_error():
    m = nn.Linear(2, 2)
    del m.bias
    assert "bias" not in m._parameters
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'bias'"):
        m.bias


def test_buffer_marker_and_non_persistent():
    m = nn.Module()
    m.a = nn.Buffer(cl.zeros(2))
    m.b = nn.Buffer(cl.ones(2), persistent=False)
    m.register_buffer("c", None)
    assert type(m._buffers["a"]) is cl.Tensor
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert list(m.state_dict()) == ["a"]
    assert m._non_persistent_buffers_set == {"b"}


def test_register_errors():
    m = nn.Module()
    with pytest.raises(KeyError):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError):
        m.register_parameter("p", cl.zeros(1))
    with pytest.raises(TypeError):
        m.add_module("x", 3)
    m.x = 1
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.register_buffer("x", cl.zeros(1))


def test_get_submodule_parameter_buffer():
    m = nn.Sequential(nn.Sequential(nn.Linear(2, 3)), nn.BatchNorm1d(3))
    assert m.get_submodule("0.0") is m[0][0]
    assert m.get_parameter("0.0.weight") is m[0][0].weight
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    with pytest.raises(AttributeError):
        m.get_submodule("0.9")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        m.get_parameter("1.running_mean")


# ---------------------------------------------------------------------------
# traversal
# ---------------------------------------------------------------------------
def test_traversal_dedup_matches_pytorch():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, lin, nn.Sequential(lin))
    assert [n for n, _ in m.named_modules()] == ["", "0", "2"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "0", "1", "2", "2.0"]
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(m.parameters())) == 2
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias", "2.0.weight", "2.0.bias"]
    assert [n for n, _ in m.named_children()] == ["0", "2"]


def test_named_parameters_prefix_recurse():
    m = small()
    assert [n for n, _ in m.named_parameters(prefix="model")] == [
        "model.0.weight", "model.0.bias", "model.1.weight", "model.1.bias"]
    assert list(m.named_parameters(recurse=False)) == []


# ---------------------------------------------------------------------------
# modes and conversions
# ---------------------------------------------------------------------------
def test_train_eval_recurse_and_return_self():
    m = small()
    assert m.eval() is m
    assert not any(x.training for x in m.modules())
    assert m.train() is m and all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="^training mode is expected to be boolean$"):
        m.train("no")


def test_to_double_keeps_parameter_objects_and_int_buffers():
    m = small()
    w = m[0].weight
    m.to(cl.float64)
    assert m[0].weight is w and w.dtype is cl.float64
    assert m[1].running_mean.dtype is cl.float64
    assert m[1].num_batches_tracked.dtype is cl.int64
    m.half()
    assert w.dtype is cl.float16
    m.float()
    assert w.dtype is cl.float32
    with pytest.raises(TypeError) as e:
        m.to(cl.int32)
    assert str(e.value) == ("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            "dtype=torch.int32")


def test_zero_grad_sets_none_and_apply():
    m = small()
    m(cl.randn(4, 3)).sum().backward()
    assert m[0].weight.grad is not None
    m.zero_grad()
    assert m[0].weight.grad is None
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "BatchNorm1d", "Sequential"]


def test_requires_grad_():
    m = small().requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


# ---------------------------------------------------------------------------
# state_dict
# ---------------------------------------------------------------------------
def test_state_dict_keys_metadata_and_sharing():
    m = small()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                        "1.num_batches_tracked"]
    assert sd._metadata == {"": {"version": 1}, "0": {"version": 1}, "1": {"version": 2}}
    nbt = sd["1.num_batches_tracked"]
    assert nbt.dtype is cl.int64 and nbt.shape == () and nbt.item() == 0
    assert not sd["0.weight"].requires_grad
    assert sd["0.weight"].data_ptr() == m[0].weight.data_ptr()
    assert m.state_dict(keep_vars=True)["0.weight"] is m[0].weight


def test_load_state_dict_strict_error_text():
    m = small()
    sd = m.state_dict()
    del sd["1.running_mean"], sd["1.running_var"]
    sd["extra.w"] = cl.zeros(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: '
                            '"1.running_mean", "1.running_var". \n\tUnexpected key(s) in state_dict: "extra.w". ')


def test_load_state_dict_non_strict_and_repr():
    m = small()
    sd = m.state_dict()
    r = m.load_state_dict(sd)
    assert repr(r) == "<All keys matched successfully>"
    del sd["1.running_var"]
    sd["x"] = cl.zeros(1)
    r = m.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["1.running_var"] and r.unexpected_keys == ["x"]
    assert repr(r) == "_IncompatibleKeys(missing_keys=['1.running_var'], unexpected_keys=['x'])"


def test_size_mismatch_raises_even_non_strict_and_leaves_model_untouched():
    m = small()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    sd = OrderedDict((k, v + 1 if v.is_floating_point() else v) for k, v in m.state_dict().items())
    sd["0.weight"] = cl.zeros(5, 5)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd, strict=False)
    assert ("size mismatch for 0.weight: copying a param with shape torch.Size([5, 5]) from checkpoint, the shape "
            "in current model is torch.Size([2, 3]).") in str(e.value)
    for k, v in m.state_dict().items():
        assert np.array_equal(v.numpy(), before[k].numpy()), k


def test_load_copies_in_place_casts_dtype_and_assign_replaces():
    m = small()
    w = m[0].weight
    sd = {k: (v.double() + 1 if v.is_floating_point() else v) for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    assert m[0].weight is w and w.dtype is cl.float32
    np.testing.assert_allclose(w.detach().numpy(), sd["0.weight"].numpy().astype(np.float32))
    m.load_state_dict(sd, assign=True)
    assert m[0].weight is not w and isinstance(m[0].weight, nn.Parameter)


def test_old_batchnorm_checkpoint_without_num_batches_tracked():
    m = small()
    sd = m.state_dict()
    del sd["1.num_batches_tracked"]
    sd._metadata["1"] = {"version": 1}
    assert repr(m.load_state_dict(sd)) == "<All keys matched successfully>"
    plain = {k: v for k, v in m.state_dict().items() if k != "1.num_batches_tracked"}  # no _metadata
    assert repr(m.load_state_dict(plain)) == "<All keys matched successfully>"
    sd2 = m.state_dict()
    del sd2["1.num_batches_tracked"]  # version 2 metadata: really missing
    with pytest.raises(RuntimeError, match="Missing key"):
        m.load_state_dict(sd2)


# ---------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------
def test_forward_pre_and_post_hook_semantics():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", type(args).__name__)))
    h2 = m.register_forward_pre_hook(lambda mod, args: args[0] * 0)     # single value -> wrapped
    h3 = m.register_forward_hook(lambda mod, args, out: out + 100)       # replaces the output
    out = m(cl.ones(1, 2))
    assert calls == [("pre", "tuple")]
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None] + 100, rtol=1e-6)
    for h in (h1, h2, h3):
        h.remove()
    assert not m._forward_hooks and not m._forward_pre_hooks


def test_forward_hooks_with_kwargs():
    class Scale(nn.Module):
        def forward(self, x, *, k=1):
            return x * k

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"k": 3}), with_kwargs=True)
    seen = {}
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.update(kwargs), with_kwargs=True)
    assert m(cl.ones(1), k=2).item() == 3
    assert seen == {"k": 3}


def test_full_backward_hooks_order_and_replacement():
    m = nn.Linear(2, 2)
    order = []

    def pre(mod, grad_output):
        order.append("pre")

    def post(mod, grad_input, grad_output):
        order.append("post")
        return (grad_input[0] * 0,)

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(post)
    x = cl.ones(1, 2, requires_grad=True)
    m(x).sum().backward()
    assert order == ["pre", "post"]
    assert np.all(x.grad.numpy() == 0)


def test_full_backward_hook_without_input_grad_warns():
    m = nn.Linear(2, 2)
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append(gi))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect to "
                                         "module outputs since no inputs require gradients"):
        m(cl.ones(1, 2)).sum().backward()
    assert got == [(None,)]


# ---------------------------------------------------------------------------
# repr
# ---------------------------------------------------------------------------
def test_repr_nested_and_extra_repr():
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                      nn.Sequential(nn.Flatten(), nn.Linear(8, 2)))
    assert repr(m) == (
        "Sequential(\n"
        "  (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)\n"
        "  (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "  (2): ReLU(inplace=True)\n"
        "  (3): Sequential(\n"
        "    (0): Flatten(start_dim=1, end_dim=-1)\n"
        "    (1): Linear(in_features=8, out_features=2, bias=True)\n"
        "  )\n"
        ")")
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == (
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)")


# ---------------------------------------------------------------------------
# containers
# ---------------------------------------------------------------------------
def test_sequential_indexing_slicing_append():
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(m[-1], nn.Linear) and m[1] is m._modules["1"]
    s = m[1:]
    assert isinstance(s, nn.Sequential) and list(s._modules) == ["1", "2"]
    m.append(nn.Sigmoid())
    assert len(m) == 4
    del m[0]
    assert list(m._modules) == ["0", "1", "2"]
    with pytest.raises(IndexError):
        m[10]


def test_modulelist_and_moduledict():
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    ml.append(nn.ReLU())
    assert len(ml) == 4
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]


def test_default_init_bounds_linear_and_conv():
    cl.manual_seed(0)
    lin = nn.Linear(100, 50)
    b = 1 / np.sqrt(100)
    assert np.abs(lin.weight.detach().numpy()).max() <= b + 1e-7
    assert np.abs(lin.bias.detach().numpy()).max() <= b + 1e-7
    assert lin.weight.detach().numpy().std() == pytest.approx(b / np.sqrt(3), rel=0.1)
    conv = nn.Conv2d(4, 8, 3)
    bc = 1 / np.sqrt(4 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= bc + 1e-7


def test_dropout_train_eval():
    cl.manual_seed(0)
    d = nn.Dropout(0.5)
    x = cl.ones(1000)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
