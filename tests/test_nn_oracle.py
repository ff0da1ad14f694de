"""Oracle tests: course_lib.nn / optim / models against real PyTorch 2.13.0.

The same architecture is built in both libraries, weights are copied from course_lib
into torch through the state_dict (so key names and order must match), and outputs,
gradients, buffers and optimizer trajectories are compared in float64.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
import course_lib.nn.functional as F
from course_lib import nn, optim

RTOL, ATOL = 1e-9, 1e-10


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def to_torch_sd(torch, sd):
    return {k: torch.tensor(v.numpy()) for k, v in sd.items()}


def close(a, b, rtol=RTOL, atol=ATOL):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def run_both(torch, m, mt, x, *, train=True, steps=1, seed=0, extra_inputs=()):
    """Forward + backward in both; returns (outputs, input grads) after ``steps`` steps."""
    rng = np.random.default_rng(seed)
    mt.load_state_dict(to_torch_sd(torch, m.state_dict()))
    m.train(train)
    mt.train(train)
    for _ in range(steps):
        xc = cl.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        oc, ot = m(xc, *extra_inputs[0]) if extra_inputs else m(xc), None
        ot = mt(xt, *extra_inputs[1]) if extra_inputs else mt(xt)
        go = rng.standard_normal(tuple(ot.shape))
        oc.backward(cl.tensor(go))
        ot.backward(torch.tensor(go))
    close(oc, ot)
    close(xc.grad, xt.grad)
    for (n, p), (nt, pt) in zip(m.named_parameters(), mt.named_parameters()):
        assert n == nt
        close(p.grad, pt.grad)
    for (n, b), (nt, bt) in zip(m.named_buffers(), mt.named_buffers()):
        assert n == nt
        close(b, bt)
    assert list(m.state_dict()) == list(mt.state_dict())


# ---------------------------------------------------------------------------
# layers
# ---------------------------------------------------------------------------
def test_linear_and_bilinear(torch):
    rng = np.random.default_rng(1)
    for bias in (True, False):
        m = nn.Linear(5, 3, bias=bias).double()
        mt = torch.nn.Linear(5, 3, bias=bias).double()
        run_both(torch, m, mt, rng.standard_normal((4, 5)))
        run_both(torch, m, mt, rng.standard_normal((2, 4, 5)))
        run_both(torch, m, mt, rng.standard_normal(5))
    x = cl.randn(4, 5, requires_grad=True)
    assert type(nn.Linear(5, 3)(x).grad_fn).__name__ == "AddmmBackward0"
    assert type(nn.Linear(5, 3, bias=False)(x).grad_fn).__name__ == "MmBackward0"
    b = nn.Bilinear(3, 4, 2).double()
    bt = torch.nn.Bilinear(3, 4, 2).double()
    bt.load_state_dict(to_torch_sd(torch, b.state_dict()))
    x1, x2 = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    close(b(cl.tensor(x1), cl.tensor(x2)), bt(torch.tensor(x1), torch.tensor(x2)))


CONV_CASES = [
    dict(in_channels=3, out_channels=4, kernel_size=3),
    dict(in_channels=3, out_channels=6, kernel_size=3, stride=2, padding=1),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    dict(in_channels=4, out_channels=8, kernel_size=3, groups=2, bias=False),
    dict(in_channels=4, out_channels=4, kernel_size=3, groups=4, padding="same"),
    dict(in_channels=2, out_channels=3, kernel_size=4, padding="same"),  # asymmetric 'same'
    dict(in_channels=2, out_channels=3, kernel_size=3, padding="valid", dilation=2),
]


@pytest.mark.parametrize("kw", CONV_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_conv2d_all_options(torch, kw):
    rng = np.random.default_rng(2)
    cl.manual_seed(0)
    m = nn.Conv2d(**kw).double()
    mt = torch.nn.Conv2d(**kw).double()
    run_both(torch, m, mt, rng.standard_normal((2, kw["in_channels"], 9, 8)))
    assert repr(m) == repr(mt)


@pytest.mark.parametrize("kw", CONV_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_conv2d_per_image_products(torch, kw):
    # 16x16 inputs give at least 64 output pixels per image: the kernels then multiply image by image
    # (the (N, C*K, L) column layout) instead of folding the batch into the columns
    rng = np.random.default_rng(5)
    cl.manual_seed(0)
    m = nn.Conv2d(**kw).double()
    mt = torch.nn.Conv2d(**kw).double()
    run_both(torch, m, mt, rng.standard_normal((3, kw["in_channels"], 16, 17)))


def test_conv1d(torch):
    rng = np.random.default_rng(3)
    m = nn.Conv1d(3, 5, 3, stride=2, padding=1).double()
    mt = torch.nn.Conv1d(3, 5, 3, stride=2, padding=1).double()
    run_both(torch, m, mt, rng.standard_normal((2, 3, 11)))
    run_both(torch, m, mt, rng.standard_normal((2, 3, 150)))   # 75 outputs: per-image products


@pytest.mark.parametrize("mk", [
    lambda nn_: nn_.MaxPool2d(2),
    lambda nn_: nn_.MaxPool2d(3, stride=2, padding=1),
    lambda nn_: nn_.MaxPool2d(3, stride=2, ceil_mode=True),
    lambda nn_: nn_.MaxPool2d(2, dilation=2),
    lambda nn_: nn_.AvgPool2d(2),
    lambda nn_: nn_.AvgPool2d(3, stride=2, padding=1),
    lambda nn_: nn_.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
    lambda nn_: nn_.AvgPool2d(3, stride=2, ceil_mode=True),
    lambda nn_: nn_.AdaptiveAvgPool2d((1, 1)),
    lambda nn_: nn_.AdaptiveAvgPool2d((3, 2)),
    lambda nn_: nn_.AdaptiveAvgPool2d(4),
])
def test_pools(torch, mk):
    rng = np.random.default_rng(4)
    run_both(torch, mk(nn), mk(torch.nn), rng.standard_normal((2, 3, 7, 9)))


@pytest.mark.parametrize("name,kw", [("ReLU", {}), ("LeakyReLU", {"negative_slope": 0.2}), ("GELU", {}),
                                     ("GELU", {"approximate": "tanh"}), ("SiLU", {}), ("Sigmoid", {}), ("Tanh", {}),
                                     ("Softmax", {"dim": 1}), ("LogSoftmax", {"dim": -1}), ("ELU", {}),
                                     ("Softplus", {}), ("Hardtanh", {}), ("ReLU6", {})])
def test_activations(torch, name, kw):
    rng = np.random.default_rng(5)
    m, mt = getattr(nn, name)(**kw), getattr(torch.nn, name)(**kw)
    x = rng.standard_normal((4, 6)) * 3
    tol = dict(rtol=2e-7, atol=2e-7) if name == "GELU" and not kw else {}
    xc, xt = cl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oc, ot = m(xc), mt(xt)
    close(oc, ot, **tol)
    go = rng.standard_normal(x.shape)
    oc.backward(cl.tensor(go))
    ot.backward(torch.tensor(go))
    close(xc.grad, xt.grad, **tol)
    assert repr(m) == repr(mt)


def test_flatten_unflatten_identity_embedding(torch):
    rng = np.random.default_rng(6)
    run_both(torch, nn.Flatten(), torch.nn.Flatten(), rng.standard_normal((2, 3, 4)))
    run_both(torch, nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3)), rng.standard_normal((2, 6)))
    e, et = nn.Embedding(10, 4, padding_idx=0).double(), torch.nn.Embedding(10, 4, padding_idx=0).double()
    et.load_state_dict(to_torch_sd(torch, e.state_dict()))
    idx = rng.integers(0, 10, (3, 5))
    oc, ot = e(cl.tensor(idx)), et(torch.tensor(idx))
    close(oc, ot)
    go = rng.standard_normal(tuple(ot.shape))
    oc.backward(cl.tensor(go))
    ot.backward(torch.tensor(go))
    close(e.weight.grad, et.weight.grad)


def _loss_pair(torch, fc, ft, inputs_c, inputs_t):
    oc, ot = fc(*inputs_c), ft(*inputs_t)
    close(oc, ot)
    g = np.random.default_rng(7).standard_normal(tuple(ot.shape))
    oc.backward(cl.tensor(g))
    ot.backward(torch.tensor(g))
    close(inputs_c[0].grad, inputs_t[0].grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses(torch, reduction):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 5))
    y = rng.standard_normal((6, 5))
    t = np.array([0, 4, 2, -100, 1, 3])
    w = rng.random(5) + 0.5
    p = 1 / (1 + np.exp(-x))
    yb = (rng.random((6, 5)) > 0.5).astype(np.float64)

    def pair(arr, grad=True):
        return cl.tensor(arr, requires_grad=grad), torch.tensor(arr, requires_grad=grad)

    for fc, ft, arrs in [
        (nn.MSELoss(reduction=reduction), torch.nn.MSELoss(reduction=reduction), (x, y)),
        (nn.L1Loss(reduction=reduction), torch.nn.L1Loss(reduction=reduction), (x, y)),
        (nn.SmoothL1Loss(reduction=reduction), torch.nn.SmoothL1Loss(reduction=reduction), (x, y)),
        (nn.BCELoss(reduction=reduction), torch.nn.BCELoss(reduction=reduction), (p, yb)),
        (nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=cl.tensor(w)),
         torch.nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=torch.tensor(w)), (x, yb)),
    ]:
        a, b = pair(arrs[0])
        c, d = pair(arrs[1], grad=False)
        _loss_pair(torch, fc, ft, (a, c), (b, d))
    for kw in [{}, {"ignore_index": -100}, {"label_smoothing": 0.1}, {"ignore_index": 2, "label_smoothing": 0.2}]:
        for weighted in (False, True):
            wkw_c = {"weight": cl.tensor(w)} if weighted else {}
            wkw_t = {"weight": torch.tensor(w)} if weighted else {}
            tt = np.where(t == -100, kw.get("ignore_index", -100), t)
            a, b = pair(x)
            _loss_pair(torch, nn.CrossEntropyLoss(reduction=reduction, **kw, **wkw_c),
                       torch.nn.CrossEntropyLoss(reduction=reduction, **kw, **wkw_t),
                       (a, cl.tensor(tt)), (b, torch.tensor(tt)))
            a, b = pair(x)
            _loss_pair(torch, nn.NLLLoss(reduction=reduction, ignore_index=kw.get("ignore_index", -100), **wkw_c),
                       torch.nn.NLLLoss(reduction=reduction, ignore_index=kw.get("ignore_index", -100), **wkw_t),
                       (a, cl.tensor(tt)), (b, torch.tensor(tt)))
    # soft targets and spatial targets
    probs = rng.random((6, 5))
    probs /= probs.sum(1, keepdims=True)
    a, b = pair(x)
    _loss_pair(torch, nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.1),
               torch.nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.1),
               (a, cl.tensor(probs)), (b, torch.tensor(probs)))
    xs = rng.standard_normal((2, 4, 3, 3))
    ts = rng.integers(0, 4, (2, 3, 3))
    a, b = pair(xs)
    _loss_pair(torch, nn.CrossEntropyLoss(reduction=reduction), torch.nn.CrossEntropyLoss(reduction=reduction),
               (a, cl.tensor(ts)), (b, torch.tensor(ts)))


def test_cross_entropy_grad_fn_name(torch):
    out = F.cross_entropy(cl.randn(3, 4, requires_grad=True), cl.tensor([0, 1, 2]))
    assert type(out.grad_fn).__name__ == "NllLossBackward0"


# ---------------------------------------------------------------------------
# normalization (issue: normalization layers)
# ---------------------------------------------------------------------------
NORM_CASES = [
    ("BatchNorm1d", (2,), {}, (8, 2)),
    ("BatchNorm1d", (3,), {}, (4, 3, 5)),
    ("BatchNorm1d", (3,), {"momentum": None}, (4, 3, 5)),
    ("BatchNorm1d", (3,), {"affine": False}, (4, 3)),
    ("BatchNorm1d", (3,), {"track_running_stats": False}, (4, 3)),
    ("BatchNorm2d", (3,), {}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"momentum": 0.3, "eps": 1e-3}, (2, 3, 4, 6)),
    ("BatchNorm3d", (2,), {}, (2, 2, 3, 3, 3)),
    ("LayerNorm", (5,), {}, (4, 3, 5)),
    ("LayerNorm", ((3, 5),), {"bias": False}, (4, 3, 5)),
    ("LayerNorm", ((3, 5),), {"elementwise_affine": False}, (4, 3, 5)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5, 2)),
    ("GroupNorm", (1, 4), {"affine": False}, (3, 4, 6)),
    ("GroupNorm", (4, 4), {"eps": 1e-3}, (3, 4, 2, 2)),
    ("InstanceNorm1d", (3,), {}, (4, 3, 6)),
    ("InstanceNorm2d", (3,), {"affine": True}, (4, 3, 5, 5)),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, (4, 3, 5, 5)),
    ("InstanceNorm2d", (3,), {}, (3, 5, 5)),  # unbatched
    ("RMSNorm", (5,), {}, (4, 3, 5)),
    ("RMSNorm", ((3, 5),), {"eps": 1e-5}, (4, 3, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", NORM_CASES,
                         ids=[f"{n}{a}{k}{s}" for n, a, k, s in NORM_CASES])
def test_norm_layers_train_then_eval(torch, name, args, kw, shape):
    rng = np.random.default_rng(9)
    m = getattr(nn, name)(*args, **kw).double()
    mt = getattr(torch.nn, name)(*args, **kw).double()
    with cl.no_grad():
        for p in m.parameters():
            p.copy_(cl.tensor(rng.standard_normal(tuple(p.shape))))
    x = rng.standard_normal(shape) * 2 + 1
    run_both(torch, m, mt, x, train=True, steps=3)
    run_both(torch, m, mt, x * 0.5, train=False, steps=1)
    assert repr(m) == repr(mt)


def test_batchnorm_fact_sheet_example():
    bn = nn.BatchNorm1d(2)
    bn(cl.tensor([[1., 2], [3, 6], [5, 10], [7, 2]]))
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.4, 0.5], rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), [1.5666666, 2.3666668], rtol=1e-6)
    assert bn.num_batches_tracked.item() == 1


def test_norm_errors_match_pytorch():
    with pytest.raises(ValueError) as e:
        nn.BatchNorm1d(2)(cl.ones(1, 2))
    assert str(e.value) == "Expected more than 1 value per channel when training, got input size torch.Size([1, 2])"
    with pytest.raises(ValueError, match=r"^expected 2D or 3D input \(got 4D input\)$"):
        nn.BatchNorm1d(2)(cl.ones(2, 2, 2, 2))
    with pytest.raises(ValueError, match=r"^expected 4D input \(got 2D input\)$"):
        nn.BatchNorm2d(2)(cl.ones(2, 2))
    with pytest.raises(RuntimeError, match="^running_mean should contain 2 elements not 3$"):
        F.batch_norm(cl.ones(4, 2), cl.zeros(3), cl.ones(3), training=True)
    with pytest.raises(ValueError, match=r"^num_channels \(4\) must be divisible by num_groups \(3\)$"):
        nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError) as e:
        nn.LayerNorm(4)(cl.ones(2, 3))
    assert str(e.value) == ("Given normalized_shape=[4], expected input with shape [*, 4], but got input of "
                            "size[2, 3]")


def test_norm_defaults_and_state_dicts():
    assert list(nn.InstanceNorm2d(3).state_dict()) == []
    assert list(nn.BatchNorm1d(3, track_running_stats=False).state_dict()) == ["weight", "bias"]
    assert nn.BatchNorm1d(3, track_running_stats=False).running_mean is None
    ln = nn.LayerNorm((2, 3))
    assert ln.weight.shape == (2, 3) and ln.eps == 1e-5
    out = nn.LayerNorm(3)(cl.tensor([[1., 2, 4], [0, 0, 3]]))
    np.testing.assert_allclose(out.detach().numpy(), [[-1.06904137, -0.26726028, 1.33630180],
                                                      [-0.70710498, -0.70710498, 1.41420996]], rtol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
    lambda x, w, b: F.batch_norm(x, cl.zeros(4, dtype=cl.float64), cl.ones(4, dtype=cl.float64) * 2, w, b, False),
    lambda x, w, b: F.layer_norm(x, (3, 3), w.reshape(2, 2)[:1].repeat(1, 1).reshape(-1)[:1].expand(3, 3), None),
    lambda x, w, b: F.group_norm(x, 2, w, b),
    lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
    lambda x, w, b: F.rms_norm(x, (3,), w[:3], 1e-6),
])
def test_norm_gradcheck_and_gradgradcheck(fn):
    cl.manual_seed(1)
    x = cl.randn(3, 4, 3, 3, dtype=cl.float64, requires_grad=True)
    w = cl.randn(4, dtype=cl.float64, requires_grad=True)
    b = cl.randn(4, dtype=cl.float64, requires_grad=True)
    assert cl.autograd.gradcheck(fn, (x, w, b))
    assert cl.autograd.gradgradcheck(fn, (x, w, b))


def test_fused_backward_equals_unfused_composition():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((6, 3, 4, 4))
    g = rng.standard_normal((6, 3, 4, 4))
    w0, b0 = rng.standard_normal(3), rng.standard_normal(3)

    def unfused(x, w, b):
        mean = x.mean((0, 2, 3), keepdim=True)
        var = ((x - mean) ** 2).mean((0, 2, 3), keepdim=True)
        return (x - mean) / (var + 1e-5).sqrt() * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)

    grads = []
    for f in (lambda x, w, b: F.batch_norm(x, None, None, w, b, True), unfused):
        xs, ws, bs = (cl.tensor(a, requires_grad=True) for a in (x, w0, b0))
        out = f(xs, ws, bs)
        out.backward(cl.tensor(g))
        grads.append((out.detach().numpy(), xs.grad.numpy(), ws.grad.numpy(), bs.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    # the fused version is one node
    xs = cl.tensor(x, requires_grad=True)
    assert type(F.batch_norm(xs, None, None, training=True).grad_fn).__name__ == "NativeBatchNormBackward0"


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------
def to_torch_module(torch, m):
    """Rebuild a course_lib module tree with torch.nn modules of the same names and arguments."""
    from course_lib.models.resnet import BasicBlock, Bottleneck, ResNet
    tn = torch.nn
    if isinstance(m, nn.Conv2d):
        return tn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.dilation, m.groups,
                         m.bias is not None)
    if isinstance(m, nn.BatchNorm2d):
        return tn.BatchNorm2d(m.num_features, m.eps, m.momentum)
    if isinstance(m, nn.Linear):
        return tn.Linear(m.in_features, m.out_features, m.bias is not None)
    if isinstance(m, nn.ReLU):
        return tn.ReLU(m.inplace)
    if isinstance(m, nn.MaxPool2d):
        return tn.MaxPool2d(m.kernel_size, m.stride, m.padding)
    if isinstance(m, nn.AdaptiveAvgPool2d):
        return tn.AdaptiveAvgPool2d(m.output_size)
    if isinstance(m, nn.Identity):
        return tn.Identity()
    if isinstance(m, nn.Sequential):
        return tn.Sequential(*[to_torch_module(torch, c) for c in m])
    if isinstance(m, (BasicBlock, Bottleneck, ResNet)):
        holder = tn.Module()
        for name, child in m.named_children():
            setattr(holder, name, to_torch_module(torch, child))
        kind = type(m)

        def forward(x, _h=holder, _k=kind):
            if _k is ResNet:
                x = _h.maxpool(_h.relu(_h.bn1(_h.conv1(x))))
                x = _h.layer4(_h.layer3(_h.layer2(_h.layer1(x))))
                return _h.fc(torch.flatten(_h.avgpool(x), 1))
            idt = _h.downsample(x) if hasattr(_h, "downsample") else x
            if _k is BasicBlock:
                out = _h.bn2(_h.conv2(_h.relu(_h.bn1(_h.conv1(x)))))
            else:
                out = _h.relu(_h.bn2(_h.conv2(_h.relu(_h.bn1(_h.conv1(x))))))
                out = _h.bn3(_h.conv3(out))
            return _h.relu(out + idt)
        holder.forward = forward
        return holder
    raise TypeError(type(m))


TORCHVISION_RESNET18_KEYS_HEAD = ["conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
                                  "bn1.num_batches_tracked", "layer1.0.conv1.weight", "layer1.0.bn1.weight"]


@pytest.mark.parametrize("builder,small", [("resnet18", False), ("resnet18", True), ("resnet50", True)])
def test_resnet_eval_matches_torch(torch, builder, small):
    from course_lib import models
    cl.manual_seed(0)
    m = getattr(models, builder)(num_classes=10, small_input=small).double()
    rng = np.random.default_rng(11)
    with cl.no_grad():  # non-trivial running statistics
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.copy_(cl.tensor(rng.standard_normal(mod.num_features) * 0.1))
                mod.running_var.copy_(cl.tensor(rng.random(mod.num_features) + 0.5))
    mt = to_torch_module(torch, m).double()
    sd = m.state_dict()
    assert mt.load_state_dict(to_torch_sd(torch, sd), strict=True)
    assert list(sd) == list(mt.state_dict())
    m.eval()
    mt.eval()
    x = rng.standard_normal((2, 3, 32, 32))
    xc, xt = cl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oc, ot = m(xc), mt(xt)
    close(oc, ot, rtol=1e-8, atol=1e-9)
    oc.sum().backward()
    ot.sum().backward()
    close(xc.grad, xt.grad, rtol=1e-7, atol=1e-9)


def test_resnet18_torchvision_key_names():
    from course_lib.models import resnet18
    keys = list(resnet18().state_dict())
    assert keys[:8] == TORCHVISION_RESNET18_KEYS_HEAD
    assert len(keys) == 122
    assert "layer2.0.downsample.0.weight" in keys and "layer2.0.downsample.1.running_var" in keys
    assert keys[-2:] == ["fc.weight", "fc.bias"]


# ---------------------------------------------------------------------------
# optimizers and schedulers: 20-step trajectories
# ---------------------------------------------------------------------------
OPT_CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.2, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": False}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.02, "weight_decay": 0.05, "amsgrad": True}),
]


TRAJECTORY_CASES = [(n, k, "none") for n, k in OPT_CASES] + [
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "step"), ("Adam", {"lr": 0.01}, "cosine"),
    ("AdamW", {"lr": 0.01}, "lambda"), ("SGD", {"lr": 0.1}, "cosine")]


@pytest.mark.parametrize("name,kw,sched", TRAJECTORY_CASES, ids=[f"{n}{k}-{s}" for n, k, s in TRAJECTORY_CASES])
def test_optimizer_trajectories(torch, name, kw, sched):
    rng = np.random.default_rng(12)
    cl.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    mt = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    mt.load_state_dict(to_torch_sd(torch, m.state_dict()))
    oc = getattr(optim, name)(m.parameters(), **kw)
    ot = getattr(torch.optim, name)(mt.parameters(), **kw)
    mk = {"step": lambda lib, o: lib.lr_scheduler.StepLR(o, 5, 0.5),
          "cosine": lambda lib, o: lib.lr_scheduler.CosineAnnealingLR(o, 7, 1e-4),
          "lambda": lambda lib, o: lib.lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + e)),
          "none": None}[sched]
    sc, st = (mk(optim, oc), mk(torch.optim, ot)) if mk else (None, None)
    X, Y = rng.standard_normal((16, 4)), rng.standard_normal((16, 3))
    for _ in range(20):
        oc.zero_grad()
        ot.zero_grad()
        F.mse_loss(m(cl.tensor(X)), cl.tensor(Y)).backward()
        torch.nn.functional.mse_loss(mt(torch.tensor(X)), torch.tensor(Y)).backward()
        oc.step()
        ot.step()
        if sc:
            sc.step()
            st.step()
            assert sc.get_last_lr() == pytest.approx(st.get_last_lr(), rel=1e-12)
    for p, pt in zip(m.parameters(), mt.parameters()):
        close(p, pt, rtol=1e-9, atol=1e-11)
    sdc, sdt = oc.state_dict(), ot.state_dict()
    assert sdc["param_groups"][0].keys() == sdt["param_groups"][0].keys()
    assert sdc["param_groups"][0]["params"] == sdt["param_groups"][0]["params"]
    for k in sdt["state"]:
        assert sorted(sdc["state"][k]) == sorted(sdt["state"][k])
        for key, v in sdt["state"][k].items():
            close(sdc["state"][k][key], v, rtol=1e-9, atol=1e-11)


def test_optimizer_state_dict_round_trip_resumes_identically():
    rng = np.random.default_rng(13)
    X, Y = cl.tensor(rng.standard_normal((8, 3))).float(), cl.tensor(rng.standard_normal((8, 2))).float()

    def make():
        cl.manual_seed(0)
        m = nn.Linear(3, 2)
        return m, optim.Adam(m.parameters(), lr=0.05)

    def step(m, o):
        o.zero_grad()
        F.mse_loss(m(X), Y).backward()
        o.step()

    m1, o1 = make()
    for _ in range(10):
        step(m1, o1)
    m2, o2 = make()
    for _ in range(5):
        step(m2, o2)
    m3, o3 = make()
    m3.load_state_dict(m2.state_dict())
    o3.load_state_dict(o2.state_dict())
    for _ in range(5):
        step(m3, o3)
    for a, b in zip(m1.parameters(), m3.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_optimizer_errors():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.SGD(nn.Linear(1, 1).parameters(), lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1, nesterov=True)
    p = nn.Linear(1, 1).weight
    o = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        o.add_param_group({"params": [p]})
