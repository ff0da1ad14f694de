"""Core workloads (issue 3): per-op overhead, large elementwise, reduction, matmul."""
from __future__ import annotations

import numpy as np
from harness import torch_or_none, workload

import course_lib as cl


def _inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape, dtype=np.float32)
    b = rng.standard_normal(shape, dtype=np.float32)
    return a, b


@workload("add, 10 float32 (per-op overhead)", target_us=5.0, note="target: <= 1.5x torch")
def add_small(quick: bool):
    an, bn = _inputs(10)
    a, b = cl.tensor(an), cl.tensor(bn)
    fns = {"course_lib": lambda: a + b, "numpy": lambda: an + bn}
    torch = torch_or_none()
    if torch is not None:
        at, bt = torch.from_numpy(an), torch.from_numpy(bn)
        fns["torch"] = lambda: at + bt
    return fns


@workload("add, 4M float32", target_ratio=1.3)
def add_large(quick: bool):
    an, bn = _inputs(1000 if quick else 4_000_000)
    a, b = cl.tensor(an), cl.tensor(bn)
    fns = {"course_lib": lambda: a + b, "numpy": lambda: an + bn}
    torch = torch_or_none()
    if torch is not None:
        at, bt = torch.from_numpy(an), torch.from_numpy(bn)
        fns["torch"] = lambda: at + bt
    return fns


@workload("sum(dim=0) of transposed 2048x2048 float32", target_ratio=1.3, rtol=1e-3, atol=1e-3)
def sum_transposed(quick: bool):
    n = 32 if quick else 2048
    xn, _ = _inputs((n, n))
    x = cl.tensor(xn)
    fns = {"course_lib": lambda: x.t().sum(0), "numpy": lambda: xn.T.sum(0)}
    torch = torch_or_none()
    if torch is not None:
        xt = torch.from_numpy(xn)
        fns["torch"] = lambda: xt.t().sum(0)
    return fns


@workload("matmul 512x512 float32", target_ratio=1.3, rtol=1e-4, atol=1e-3)
def matmul(quick: bool):
    n = 16 if quick else 512
    an, bn = _inputs((n, n))
    a, b = cl.tensor(an), cl.tensor(bn)
    fns = {"course_lib": lambda: a @ b, "numpy": lambda: an @ bn}
    torch = torch_or_none()
    if torch is not None:
        at, bt = torch.from_numpy(an), torch.from_numpy(bn)
        fns["torch"] = lambda: at @ bt
    return fns
