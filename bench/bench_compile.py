"""Compiled course_lib (chapter 08): ``course_lib._inductor.compile_fx`` beside eager.

The seed's chain of 8 pointwise ops on 4M float32 (``y = x*1.5 + 0.5; y = sin(y)*y;
y = exp(-|y|) + y*y; tanh(y) - 0.1*y``).  Eager, every op reads and writes a 16 MB array; compiled,
one fused kernel reads ``x`` once and writes the result once.  Two rows: "eager" times eager
course_lib and torch eager, "compiled" times ``compile_fx`` of the ``make_fx`` graph and
``torch.compile`` (each compiled once while the workload is built: compile time is not in the
row).  The numpy column is the same chain in numpy in both rows, the eager floor.
Target: the compiled course_lib row >= 4x faster than the eager course_lib row.
"""
from __future__ import annotations

import numpy as np
from harness import measuring, torch_or_none, workload

import course_lib as cl


def _chain(lib, x):
    y = x * 1.5 + 0.5
    y = lib.sin(y) * y
    y = lib.exp(-lib.abs(y)) + y * y
    return lib.tanh(y) - 0.1 * y


def _inputs(quick: bool) -> np.ndarray:
    n = 1000 if quick else 4_000_000
    return np.random.default_rng(0).standard_normal(n, dtype=np.float32)


def _chain_workload(quick: bool, compiled: bool) -> dict:
    xn = _inputs(quick)
    x = cl.from_numpy(xn)
    fns = {"numpy": lambda: _chain(np, xn)}
    if measuring("course_lib"):
        if compiled:
            from course_lib._inductor import compile_fx
            from course_lib.fx.experimental.proxy_tensor import make_fx
            kernel = compile_fx(make_fx(lambda x: _chain(cl, x))(x), [x])
            fns["course_lib"] = lambda: kernel(x)
        else:
            fns["course_lib"] = lambda: _chain(cl, x)
    torch = torch_or_none()
    if torch is not None:
        xt = torch.from_numpy(xn)
        if compiled:
            try:
                fn = torch.compile(lambda x: _chain(torch, x))
                fn(xt)
            except Exception:   # no C++ compiler for inductor: no torch column
                fn = None
            if fn is not None:
                fns["torch"] = lambda: fn(xt)
        else:
            fns["torch"] = lambda: _chain(torch, xt)
    return fns


@workload("pointwise chain 8 ops 4M float32 (eager)", rtol=1e-5, atol=1e-6,
          note="eager course_lib, eager torch")
def chain_eager(quick: bool):
    return _chain_workload(quick, compiled=False)


@workload("pointwise chain 8 ops 4M float32 (compiled)", rtol=1e-5, atol=1e-6,
          note="compile_fx vs torch.compile; target: course_lib >= 4x faster than the eager row")
def chain_compiled(quick: bool):
    return _chain_workload(quick, compiled=True)
