"""Autograd workloads (issue 4): the per-op cost of recording a graph, and an MLP trained with raw ops.

* ``y = x * w + b`` on 10 elements, forward and backward: almost no arithmetic, so
  the time is the framework: dispatch, recording nodes, the engine loop,
  accumulating ``.grad``.  Target: course_lib within 4x of torch.
* a 3-layer MLP 784-256-256-10 at batch 128, forward and backward, written with raw
  tensor ops (``@``, ``+``, ``relu``, ``log_softmax``, ``gather``, ``mean``): here the
  matrix products dominate.  Target: course_lib within 1.5x of torch.

The numpy floor writes the same forward and backward passes by hand.

    python bench/run.py --module autograd          # the table
    python bench/bench_autograd.py [--quick]       # the table and the targets against torch
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

#: the issue's targets: course_lib time / torch time
TORCH_TARGETS = {
    "y = x*w + b, 10 elems, fwd+bwd": 4.0,
    "MLP 784-256-256-10 b128 fwd+bwd (raw ops)": 1.5,
}


@workload("y = x*w + b, 10 elems, fwd+bwd", note="target: <= 4x torch")
def small_ops(quick: bool):
    rng = np.random.default_rng(0)
    xn, wn, bn = (rng.standard_normal(10).astype(np.float32) for _ in range(3))
    x = cl.tensor(xn)
    w = cl.tensor(wn, requires_grad=True)
    b = cl.tensor(bn, requires_grad=True)

    def course_lib():
        w.grad = None
        b.grad = None
        y = x * w + b
        y.sum().backward()
        return w.grad, b.grad

    def floor():
        y = xn * wn + bn
        y.sum()
        gy = np.ones_like(y)
        return gy * xn, gy.copy()

    fns = {"course_lib": course_lib, "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        xt = torch.from_numpy(xn)
        wt = torch.from_numpy(wn.copy()).requires_grad_()
        bt = torch.from_numpy(bn.copy()).requires_grad_()

        def torch_fn():
            wt.grad = None
            bt.grad = None
            y = xt * wt + bt
            y.sum().backward()
            return wt.grad, bt.grad
        fns["torch"] = torch_fn
    return fns


def _mlp_params(rng, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


@workload("MLP 784-256-256-10 b128 fwd+bwd (raw ops)", note="target: <= 1.5x torch", rtol=1e-4, atol=1e-5)
def mlp(quick: bool):
    batch, sizes = (4, (12, 8, 8, 3)) if quick else (128, (784, 256, 256, 10))
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    yn = rng.integers(0, sizes[-1], batch)
    pn = _mlp_params(rng, sizes)
    x = cl.tensor(xn)
    y = cl.tensor(yn).unsqueeze(1)
    ps = [cl.tensor(p.copy(), requires_grad=True) for p in pn]

    def course_lib():
        for p in ps:
            p.grad = None
        w1, b1, w2, b2, w3, b3 = ps
        h = (x @ w1 + b1).relu()
        h = (h @ w2 + b2).relu()
        logits = h @ w3 + b3
        loss = -cl.log_softmax(logits, 1).gather(1, y).mean()
        loss.backward()
        return [p.grad for p in ps]

    def floor():
        w1, b1, w2, b2, w3, b3 = pn
        z1 = xn @ w1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2 + b2
        h2 = np.maximum(z2, 0)
        z3 = h2 @ w3 + b3
        m = z3.max(1, keepdims=True)
        lsm = z3 - m - np.log(np.exp(z3 - m).sum(1, keepdims=True))
        -lsm[np.arange(batch), yn].mean()
        g3 = np.exp(lsm)
        g3[np.arange(batch), yn] -= 1
        g3 /= batch
        gw3, gb3 = h2.T @ g3, g3.sum(0)
        g2 = (g3 @ w3.T) * (z2 > 0)
        gw2, gb2 = h1.T @ g2, g2.sum(0)
        g1 = (g2 @ w2.T) * (z1 > 0)
        gw1, gb1 = xn.T @ g1, g1.sum(0)
        return [gw1, gb1, gw2, gb2, gw3, gb3]

    fns = {"course_lib": course_lib, "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        xt = torch.from_numpy(xn)
        yt = torch.from_numpy(yn).unsqueeze(1)
        pt = [torch.from_numpy(p.copy()).requires_grad_() for p in pn]

        def torch_fn():
            for p in pt:
                p.grad = None
            w1, b1, w2, b2, w3, b3 = pt
            h = (xt @ w1 + b1).relu()
            h = (h @ w2 + b2).relu()
            logits = h @ w3 + b3
            loss = -torch.log_softmax(logits, 1).gather(1, yt).mean()
            loss.backward()
            return [p.grad for p in pt]
        fns["torch"] = torch_fn
    return fns


def torch_targets(rows) -> list[str]:
    out = []
    for r in rows:
        goal = TORCH_TARGETS.get(r["name"])
        ratio = r.get("ratio_torch")
        if goal is None or ratio is None:
            continue
        out.append(f"{r['name']}, threads={r['threads']}: {ratio:.2f}x torch (target <= {goal:g}x) "
                   f"{'ok' if ratio <= goal else 'MISSED'}")
    return out


if __name__ == "__main__":
    from harness import REGISTRY, format_table, run

    quick = "--quick" in sys.argv
    ws = [w for w in REGISTRY if w.module == __name__ or w.module.endswith("bench_autograd")]
    rows = run(ws, quick=quick)
    print(format_table(rows))
    if not quick:
        for line in torch_targets(rows):
            print(line)
