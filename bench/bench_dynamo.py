"""Graph capture's cost per call (chapter 08): a cache hit of ``course_lib.compile`` beside eager.

``lambda x: x + 1`` on 10 floats, so the arithmetic is nothing and the rows show the fixed cost of a
call.  Two rows, each timing course_lib, numpy (``xn + 1``, the floor) and torch in their own processes:

1. "eager": the plain call, eager course_lib and eager torch;
2. "compiled hit": the function compiled with ``backend="eager"`` (the captured graph runs as Python,
   so the difference to row 1 is what capture adds), ``course_lib.compile`` and ``torch.compile``.
   Each compiles on a first call while the workload is built, so the row times cache hits only:
   course_lib replays the recorded op (no graph node, no meta run) and calls the compiled graph,
   torch checks its guards and calls its graph.
Target (issue 16): course_lib's hit <= 20 us above the compiled callable itself, i.e. row 2 minus
row 1 for course_lib.
"""
from __future__ import annotations

import numpy as np
from harness import measuring, torch_or_none, workload

import course_lib as cl


def _add_one(x):
    return x + 1


def _workload(compiled: bool) -> dict:
    xn = np.random.default_rng(0).standard_normal(10).astype(np.float32)
    fns = {"numpy": lambda: xn + 1}
    if measuring("course_lib"):
        x = cl.from_numpy(xn)
        fn = _add_one
        if compiled:
            fn = cl.compile(_add_one, backend="eager")
            fn(x)       # capture and compile: the timed calls are hits
        fns["course_lib"] = lambda: fn(x)
    torch = torch_or_none()
    if torch is not None:
        xt = torch.from_numpy(xn)
        tfn = _add_one
        if compiled:
            tfn = torch.compile(_add_one, backend="eager")
            tfn(xt)
        fns["torch"] = lambda: tfn(xt)
    return fns


@workload("x + 1 on 10 float32 (eager call)", note="the call's fixed cost: eager course_lib, eager torch")
def hit_eager(quick: bool):
    return _workload(compiled=False)


@workload("x + 1 on 10 float32 (compiled, cache hit)",
          note="course_lib.compile vs torch.compile, backend='eager'; target: <= 20 us above the eager row")
def hit_compiled(quick: bool):
    return _workload(compiled=True)
