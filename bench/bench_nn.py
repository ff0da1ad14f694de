"""nn workloads (issue 5): an MLP training step, a convolution forward + backward, resnet18 inference.

Each workload runs the same computation three ways, each in its own fresh process
(see ``harness.py``): course_lib (modules, dispatcher, autograd, optimizer), the
numpy floor (the same kernels course_lib uses, written straight in numpy, with
no framework around them), and real torch.  The issue's targets compare with
torch, so they are stated in each workload's note and checked by ``torch_targets``;
``python bench/bench_nn.py`` prints the table and that verdict.

    python bench/run.py --module nn            # the tables, 1 thread and default (medians over 3 rounds)
    python bench/run.py --module nn --quick    # tiny sizes, one call each (CI)
    python bench/bench_nn.py [--quick] [--threads 1|default|both]   # the table and the targets against torch
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for p in (str(HERE), str(HERE.parent)):
    if p not in sys.path:
        sys.path.insert(0, p)

from harness import torch_or_none, workload  # noqa: E402

import course_lib as cl  # noqa: E402
from course_lib import nn  # noqa: E402
from course_lib.nn import functional as F  # noqa: E402

#: targets, course_lib time / torch time (issue 13, measured each library in its own process)
TORCH_TARGETS = {
    "MLP train step 784-256-10, batch 128, SGD": 1.5,
    "Conv2d fwd+bwd 32x3x32x32, 64 filters 3x3, pad 1": 1.2,
    "resnet18 forward 8x3x64x64, eval": 1.5,
}


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------
# numpy floor helpers: the kernels course_lib runs, without the framework
# ---------------------------------------------------------------------------
def _np_log_softmax(z):
    m = z.max(1, keepdims=True)
    e = z - m
    return e - np.log(np.exp(e).sum(1, keepdims=True))


def _np_im2col(x, k, stride, pad):
    """(C*k*k, N*Ho*Wo) columns of x (N, C, H, W): the same layout as course_lib's kernel."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    N, C, H, W = x.shape
    Ho, Wo = (H - k) // stride + 1, (W - k) // stride + 1
    s = x.strides
    win = np.lib.stride_tricks.as_strided(x, (N, C, k, k, Ho, Wo), (s[0], s[1], s[2], s[3], s[2] * stride,
                                                                       s[3] * stride), writeable=False)
    cols = np.ascontiguousarray(win.transpose(1, 2, 3, 0, 4, 5)).reshape(C * k * k, N * Ho * Wo)
    return cols, (N, Ho, Wo), x.shape


def _np_conv(x, w, stride=1, pad=0):
    cols, (N, Ho, Wo), _ = _np_im2col(x, w.shape[2], stride, pad)
    out = w.reshape(w.shape[0], -1) @ cols
    return np.ascontiguousarray(out.reshape(w.shape[0], N, Ho, Wo).swapaxes(0, 1))


# ---------------------------------------------------------------------------
# MLP training step
# ---------------------------------------------------------------------------
@workload("MLP train step 784-256-10, batch 128, SGD", rtol=1e-4, atol=1e-5,
          note="target: course_lib within 1.5x of torch")
def mlp_step(quick: bool):
    n_in, n_hidden, n_out, batch = (16, 8, 4, 4) if quick else (784, 256, 10, 128)
    rng = _rng(0)
    xn = rng.standard_normal((batch, n_in), dtype=np.float32)
    yn = rng.integers(0, n_out, batch)
    cl.manual_seed(0)
    model = nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU(), nn.Linear(n_hidden, n_out))
    init = [p.detach().numpy().copy() for p in model.parameters()]
    opt = cl.optim.SGD(model.parameters(), lr=0.01)
    x, y = cl.tensor(xn), cl.tensor(yn)

    def course():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    w1, b1, w2, b2 = (a.copy() for a in init)
    onehot = np.eye(n_out, dtype=np.float32)[yn]

    def floor():
        h = xn @ w1.T + b1
        a = np.maximum(h, 0)
        z = a @ w2.T + b2
        logp = _np_log_softmax(z)
        loss = -(logp * onehot).sum() / batch
        dz = (np.exp(logp) - onehot) / batch
        gw2, gb2 = dz.T @ a, dz.sum(0)
        da = dz @ w2
        dh = da * (h > 0)
        gw1, gb1 = dh.T @ xn, dh.sum(0)
        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            p -= 0.01 * g
        return np.float32(loss)

    fns = {"course_lib": course, "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Linear(n_in, n_hidden), torch.nn.ReLU(), torch.nn.Linear(n_hidden, n_out))
        with torch.no_grad():
            for p, a in zip(tm.parameters(), init):
                p.copy_(torch.from_numpy(a))
        topt = torch.optim.SGD(tm.parameters(), lr=0.01)
        xt, yt = torch.from_numpy(xn), torch.from_numpy(yn)

        def torch_step():
            topt.zero_grad()
            loss = torch.nn.functional.cross_entropy(tm(xt), yt)
            loss.backward()
            topt.step()
            return loss
        fns["torch"] = torch_step
    return fns


# ---------------------------------------------------------------------------
# Conv2d forward + backward
# ---------------------------------------------------------------------------
@workload("Conv2d fwd+bwd 32x3x32x32, 64 filters 3x3, pad 1", rtol=1e-3, atol=1e-3,
          note="target: course_lib within 1.2x of torch")
def conv_fwd_bwd(quick: bool):
    N, C, H, Cout = (2, 3, 6, 4) if quick else (32, 3, 32, 64)
    rng = _rng(1)
    xn = rng.standard_normal((N, C, H, H), dtype=np.float32)
    wn = (rng.standard_normal((Cout, C, 3, 3)) * 0.2).astype(np.float32)
    bn = rng.standard_normal(Cout).astype(np.float32)
    gn = rng.standard_normal((N, Cout, H, H), dtype=np.float32)
    x = cl.tensor(xn, requires_grad=True)
    w = cl.tensor(wn, requires_grad=True)
    b = cl.tensor(bn, requires_grad=True)
    g = cl.tensor(gn)

    def course():
        x.grad = w.grad = b.grad = None
        out = F.conv2d(x, w, b, padding=1)
        out.backward(g)
        return out, x.grad, w.grad, b.grad

    def floor():
        cols, (n, ho, wo), padded = _np_im2col(xn, 3, 1, 1)
        wm = wn.reshape(Cout, -1)
        out = np.ascontiguousarray((wm @ cols).reshape(Cout, n, ho, wo).swapaxes(0, 1)) + bn.reshape(1, -1, 1, 1)
        gmat = np.ascontiguousarray(gn.reshape(n, Cout, -1).swapaxes(0, 1)).reshape(Cout, -1)
        gw = (gmat @ cols.T).reshape(wn.shape)
        dcols = (wm.T @ gmat).reshape(C, 3, 3, n, ho, wo)
        gx = np.zeros((n, C) + padded[2:], np.float32)
        for i in range(3):
            for j in range(3):
                gx[:, :, i:i + ho, j:j + wo] += dcols[:, i, j].swapaxes(0, 1)
        gx = np.ascontiguousarray(gx[:, :, 1:-1, 1:-1])
        return out, gx, gw, gn.sum(axis=(0, 2, 3))

    fns = {"course_lib": course, "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        xt = torch.from_numpy(xn).requires_grad_()
        wt = torch.from_numpy(wn).requires_grad_()
        bt = torch.from_numpy(bn).requires_grad_()
        gt = torch.from_numpy(gn)

        def torch_fb():
            xt.grad = wt.grad = bt.grad = None
            out = torch.nn.functional.conv2d(xt, wt, bt, padding=1)
            out.backward(gt)
            return out, xt.grad, wt.grad, bt.grad
        fns["torch"] = torch_fb
    return fns


# ---------------------------------------------------------------------------
# resnet18 inference
# ---------------------------------------------------------------------------
def _torch_resnet18(torch, sd: dict, num_classes: int):
    """torchvision's resnet18 written out in torch.nn (torchvision is not a dependency), with `sd` loaded."""
    tn = torch.nn

    class Block(tn.Module):
        def __init__(self, inp, planes, stride):
            super().__init__()
            self.conv1 = tn.Conv2d(inp, planes, 3, stride, 1, bias=False)
            self.bn1 = tn.BatchNorm2d(planes)
            self.relu = tn.ReLU(inplace=True)
            self.conv2 = tn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = tn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inp != planes:
                self.downsample = tn.Sequential(tn.Conv2d(inp, planes, 1, stride, bias=False), tn.BatchNorm2d(planes))

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + idt)

    class ResNet18(tn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = tn.BatchNorm2d(64)
            self.relu = tn.ReLU(inplace=True)
            self.maxpool = tn.MaxPool2d(3, 2, 1)
            inp = 64
            for i, planes in enumerate((64, 128, 256, 512), 1):
                stride = 1 if i == 1 else 2
                setattr(self, f"layer{i}", tn.Sequential(Block(inp, planes, stride), Block(planes, planes, 1)))
                inp = planes
            self.avgpool = tn.AdaptiveAvgPool2d((1, 1))
            self.fc = tn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    m = ResNet18()
    m.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()}, strict=True)
    return m.eval()


def _np_resnet18(sd: dict):
    """The same network as a numpy function: im2col convolutions, eval-mode batch norm folded to scale/shift."""
    p = {k: v.numpy() for k, v in sd.items()}

    def bn(x, name):
        scale = p[name + ".weight"] / np.sqrt(p[name + ".running_var"] + 1e-5)
        shift = p[name + ".bias"] - p[name + ".running_mean"] * scale
        return x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)

    def block(x, name, stride):
        out = np.maximum(bn(_np_conv(x, p[name + ".conv1.weight"], stride, 1), name + ".bn1"), 0)
        out = bn(_np_conv(out, p[name + ".conv2.weight"], 1, 1), name + ".bn2")
        if name + ".downsample.0.weight" in p:
            x = bn(_np_conv(x, p[name + ".downsample.0.weight"], stride, 0), name + ".downsample.1")
        return np.maximum(out + x, 0)

    def forward(x):
        x = np.maximum(bn(_np_conv(x, p["conv1.weight"], 2, 3), "bn1"), 0)
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        s = xp.strides
        Ho, Wo = (xp.shape[2] - 3) // 2 + 1, (xp.shape[3] - 3) // 2 + 1
        win = np.lib.stride_tricks.as_strided(xp, xp.shape[:2] + (Ho, Wo, 3, 3),
                                              s[:2] + (2 * s[2], 2 * s[3], s[2], s[3]))
        x = win.max(axis=(-2, -1))
        for i in range(1, 5):
            x = block(x, f"layer{i}.0", 1 if i == 1 else 2)
            x = block(x, f"layer{i}.1", 1)
        x = x.mean(axis=(2, 3))
        return x @ p["fc.weight"].T + p["fc.bias"]
    return forward


@workload("resnet18 forward 8x3x64x64, eval", rtol=1e-3, atol=1e-3,
          note="target: course_lib within 1.5x of torch")
def resnet18_eval(quick: bool):
    from course_lib.models import resnet18
    N, H, classes = (1, 32, 10) if quick else (8, 64, 1000)
    cl.manual_seed(0)
    model = resnet18(num_classes=classes).eval()
    rng = _rng(2)
    with cl.no_grad():  # non-trivial running statistics
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(cl.tensor((rng.standard_normal(m.num_features) * 0.1).astype(np.float32)))
                m.running_var.copy_(cl.tensor((rng.random(m.num_features) + 0.5).astype(np.float32)))
    sd = model.state_dict()
    xn = rng.standard_normal((N, 3, H, H), dtype=np.float32)
    x = cl.tensor(xn)

    def course():
        with cl.no_grad():
            return model(x)

    fns = {"course_lib": course, "numpy": lambda: _np_resnet18(sd)(xn)}
    torch = torch_or_none()
    if torch is not None:
        tm = _torch_resnet18(torch, sd, classes)
        xt = torch.from_numpy(xn)

        def torch_fwd():
            with torch.no_grad():
                return tm(xt)
        fns["torch"] = torch_fwd
    return fns


# ---------------------------------------------------------------------------
def torch_targets(rows) -> list[str]:
    """One line per workload with a torch target: met or missed."""
    out = []
    for r in rows:
        target = TORCH_TARGETS.get(r["name"])
        if target is None or r.get("ratio_torch") is None:
            continue
        verdict = "ok" if r["ratio_torch"] <= target else "MISSED"
        out.append(f"{r['name']}, threads={r['threads']}: course_lib/torch = {r['ratio_torch']:.2f}x "
                   f"(target <= {target:g}x) {verdict}")
    return out


def main(argv=None) -> int:
    import argparse

    import harness
    p = argparse.ArgumentParser(description="nn benchmarks: course_lib beside numpy and torch")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", choices=("1", "default", "both"), default="1")
    p.add_argument("-k", dest="filter", default="")
    args = p.parse_args(argv)
    ws = [w for w in harness.REGISTRY if w.module == __name__ and args.filter in w.name]
    rows = harness.run(ws, quick=args.quick, repeat=args.repeat, threads=args.threads)
    print(harness.format_table(rows))
    if not args.quick:
        print()
        print("\n".join(torch_targets(rows)))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
