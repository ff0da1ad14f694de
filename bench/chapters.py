"""The course_lib-vs-torch comparisons the chapters show, as workloads for the harness.

Not part of ``run.py``'s table (the file is not named ``bench_*.py``): a chapter's measurement
section imports it and runs one family, so that its numbers come from a process per library
with the same thread settings, like the bench table's::

    import sys; sys.path.insert(0, "../bench")        # from notebooks/
    import harness, chapters
    rows = harness.run(chapters.family("ch01 add"), threads="1")
    print(harness.format_table(rows))

Families: ``ch01 add`` (``x + y`` from 1 to a million float32 elements), ``ch04 conv`` (a 3x3
convolution, 16 -> 32 channels, 16x16 images, forward, batch 1 to 32), ``ch07 load`` (a 100 MB
checkpoint saved by course_lib, loaded eagerly and with ``mmap=True``, and a first pass over it).
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for p in (str(HERE), str(HERE.parent)):
    if p not in sys.path:
        sys.path.insert(0, p)

from harness import REGISTRY, Workload, measuring, torch_or_none, workload  # noqa: E402

import course_lib as cl  # noqa: E402
from course_lib.nn import functional as F  # noqa: E402

ADD_SIZES = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
CONV_BATCHES = (1, 2, 4, 8, 16, 32)


def family(prefix: str) -> list[Workload]:
    """The workloads of this file whose name starts with ``prefix`` (``"ch01 add"``, ...)."""
    return [w for w in REGISTRY if w.path == str(Path(__file__).resolve()) and w.name.startswith(prefix)]


# ---------------------------------------------------------------------------- chapter 01: x + y by size
def _add(n: int):
    def make(quick: bool):
        rng = np.random.default_rng(0)
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        x, y = cl.from_numpy(a), cl.from_numpy(b)
        fns = {"course_lib": lambda: x + y, "numpy": lambda: a + b}
        torch = torch_or_none()
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            fns["torch"] = lambda: ta + tb
        return fns
    return make


for _n in ADD_SIZES:
    workload(f"ch01 add, {_n} float32")(_add(_n))


# ---------------------------------------------------------------------------- chapter 04: conv by batch
def _floor_conv(x, w):
    """course_lib's kernel without the framework: pad, window view, one (C*9, H*W) column matrix per
    image, one batched product that writes (N, O, H*W) directly (``_contract_forward``'s batched path)."""
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    s = xp.strides
    win = np.lib.stride_tricks.as_strided(xp, (N, C, 3, 3, H, W), s + s[2:])
    cols = np.ascontiguousarray(win).reshape(N, C * 9, H * W)
    return np.matmul(w.reshape(w.shape[0], -1), cols).reshape(N, -1, H, W)


def _conv(n: int):
    def make(quick: bool):
        rng = np.random.default_rng(0)
        w_np = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
        x_np = rng.standard_normal((n, 16, 16, 16)).astype(np.float32)
        w, x = cl.tensor(w_np), cl.tensor(x_np)
        fns = {"course_lib": lambda: F.conv2d(x, w, padding=1), "numpy": lambda: _floor_conv(x_np, w_np)}
        torch = torch_or_none()
        if torch is not None:
            xt, wt = torch.from_numpy(x_np), torch.from_numpy(w_np)
            fns["torch"] = lambda: torch.nn.functional.conv2d(xt, wt, padding=1)
        return fns
    return make


for _n in CONV_BATCHES:
    workload(f"ch04 conv 3x3 16->32 16x16 fwd, batch {_n}", rtol=1e-4, atol=1e-4)(_conv(_n))


# ---------------------------------------------------------------------------- chapter 07: load 100 MB
_DIR = tempfile.mkdtemp(prefix="bench-chapters-")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)


def _checkpoint() -> tuple[str, str]:
    """The chapter's checkpoint (24 float32 tensors of 1024x1024, 100 MB) saved by course_lib, and
    the same arrays as one .npy file per tensor (the numpy floor); written once per process."""
    pt, npy = os.path.join(_DIR, "big.pt"), os.path.join(_DIR, "npy")
    if not os.path.exists(pt) and not os.path.exists(npy):
        rng = np.random.default_rng(0)
        arrays = {f"layer{i}.weight": rng.standard_normal((1024, 1024), dtype=np.float32) for i in range(24)}
        if measuring("course_lib") or measuring("torch"):   # torch.load reads the file course_lib saved
            cl.save({k: cl.from_numpy(v) for k, v in arrays.items()}, pt)
        if measuring("numpy"):
            os.makedirs(npy)
            for k, v in arrays.items():
                np.save(os.path.join(npy, f"{k}.npy"), v)
    return pt, npy


def _load(mmap: bool, touch: bool):
    def make(quick: bool):
        pt, npy = _checkpoint()
        names = [f"layer{i}.weight" for i in range(24)]

        def finish(values):
            return [float(v.sum()) for v in values] if touch else [v.shape for v in values]

        fns = {"course_lib": lambda: finish(cl.load(pt, mmap=mmap).values()),
               "numpy": lambda: finish([np.load(os.path.join(npy, f"{k}.npy"), mmap_mode="r" if mmap else None)
                                        for k in names])}
        torch = torch_or_none()
        if torch is not None:
            fns["torch"] = lambda: finish(torch.load(pt, weights_only=True, mmap=mmap).values())
        return fns
    return make


workload("ch07 load 100 MB", rtol=1e-4, note="numpy: np.load of one .npy per tensor")(_load(False, False))
workload("ch07 load 100 MB, mmap=True", rtol=1e-4)(_load(True, False))
workload("ch07 load 100 MB, mmap=True, then a first pass (sum of every tensor)", rtol=1e-4)(_load(True, True))
