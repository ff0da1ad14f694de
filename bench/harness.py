"""A small benchmark harness: named workloads, course_lib beside numpy and torch.

Each workload provides the same computation three ways: with course_lib, with
numpy directly (the *floor*: what course_lib's kernels cost without any
framework around them) and with real torch when it is installed.  All of them
are timed side by side in one process, round-robin, and the table reports the
median time per call and the ratios.  Timings are never asserted: machines are
noisy.  See ``bench/README.md`` for the workload API.

    python bench/run.py              # every bench/bench_*.py
    python bench/run.py --quick      # tiny sizes, one call each (CI: it must keep working)
    python bench/run.py --json out.json -k add
"""
from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Workload", "workload", "REGISTRY", "torch_or_none", "run", "format_table", "main"]

IMPLS = ("course_lib", "numpy", "torch")


@dataclass
class Workload:
    """One named benchmark.

    ``make(quick)`` builds the inputs and returns ``{"course_lib": fn, "numpy": fn,
    "torch": fn}`` (zero-argument callables; leave out ``"torch"`` when torch is not
    installed).  ``quick`` asks for tiny sizes.  The results of the course_lib and
    numpy callables are compared once (``np.allclose`` with ``rtol``/``atol``).
    """
    name: str
    make: Callable[[bool], dict]
    module: str = ""
    target_ratio: float | None = None   # goal for course_lib / numpy
    target_us: float | None = None      # goal for course_lib's time per call, in microseconds
    rtol: float = 1e-5
    atol: float = 1e-6
    note: str = ""


REGISTRY: list[Workload] = []


def workload(name: str, *, target_ratio: float | None = None, target_us: float | None = None,
             rtol: float = 1e-5, atol: float = 1e-6, note: str = ""):
    """Decorator that registers ``make(quick) -> {impl: fn}`` as a workload.

    >>> @workload("add 4M float32", target_ratio=1.3)
    ... def add_4m(quick):
    ...     n = 1000 if quick else 4_000_000
    ...     ...
    ...     return {"course_lib": lambda: a + b, "numpy": lambda: an + bn}
    """
    def deco(make):
        REGISTRY.append(Workload(name, make, module=make.__module__, target_ratio=target_ratio,
                                 target_us=target_us, rtol=rtol, atol=atol, note=note))
        return make
    return deco


_TORCH = []


def torch_or_none():
    """The ``torch`` module if it is installed, else None (imported once)."""
    if not _TORCH:
        try:
            import torch
        except ImportError:
            torch = None
        _TORCH.append(torch)
    return _TORCH[0]


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------
def _calibrate(fn, min_time: float) -> int:
    """Calls per timed sample so that one sample lasts at least ``min_time`` seconds."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or number >= 1_000_000:
            return number
        number = max(number * 2, int(number * min_time / max(dt, 1e-9) * 1.2))


def _sample(fn, number: int) -> float:
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number
    finally:
        if gc_was:
            gc.enable()


def _settle(seconds: float = 0.02) -> None:
    """Let torch's worker threads go idle: while they spin-wait after an op they steal the CPU
    from whatever runs next (measured: +25% on the next 512x512 matmul on a 2-core machine)."""
    time.sleep(seconds)


def _to_numpy(x):
    if isinstance(x, (tuple, list)):
        return [_to_numpy(v) for v in x]
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach()
    return np.asarray(x)


def _same(a, b, rtol, atol) -> bool:
    a, b = _to_numpy(a), _to_numpy(b)
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(_same(x, y, rtol, atol) for x, y in zip(a, b))
    return a.shape == b.shape and np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)


def measure(w: Workload, *, quick: bool = False, repeat: int = 7, warmup: int = 3,
            min_time: float = 0.02) -> dict:
    """Time one workload; returns a row for the table (seconds per call, ratios, check)."""
    fns = w.make(quick)
    fns = {k: v for k, v in fns.items() if k in IMPLS and v is not None}
    row = {"name": w.name, "module": w.module, "quick": quick, "times": {}, "target_ratio": w.target_ratio,
           "target_us": w.target_us, "ok": True, "note": w.note}
    outs = {k: fn() for k, fn in fns.items()}   # first call: also the warm-up and the check
    if "course_lib" in outs and "numpy" in outs and not _same(outs["course_lib"], outs["numpy"], w.rtol, w.atol):
        row["ok"] = False
        row["note"] = (row["note"] + "; " if row["note"] else "") + "course_lib result differs from numpy"
    del outs
    if quick:
        for k, fn in fns.items():
            row["times"][k] = _sample(fn, 1)
    else:
        for _ in range(warmup):
            for fn in fns.values():
                fn()
        numbers = {k: _calibrate(fn, min_time) for k, fn in fns.items()}
        samples: dict = {k: [] for k in fns}
        order = list(fns)
        rng = random.Random(0)
        for _ in range(repeat):               # round-robin, so load changes hit every impl alike
            rng.shuffle(order)                # ... and no impl always runs right after another
            for k in order:
                samples[k].append(_sample(fns[k], numbers[k]))
                if k == "torch":
                    _settle()
        row["times"] = {k: statistics.median(v) for k, v in samples.items()}
        row["min_times"] = {k: min(v) for k, v in samples.items()}
    t = row["times"]
    row["ratio_numpy"] = t["course_lib"] / t["numpy"] if "course_lib" in t and "numpy" in t else None
    row["ratio_torch"] = t["course_lib"] / t["torch"] if "course_lib" in t and "torch" in t else None
    return row


def run(workloads, *, quick: bool = False, repeat: int = 7, progress=None) -> list[dict]:
    rows = []
    for w in workloads:
        if progress:
            progress(w.name)
        rows.append(measure(w, quick=quick, repeat=repeat))
    return rows


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------
def _fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _target(row) -> str:
    parts = []
    t = row["times"].get("course_lib")
    if row["target_us"] is not None:
        met = t is not None and t * 1e6 <= row["target_us"]
        parts.append(f"<={row['target_us']:g} us {'ok' if met else 'MISSED'}")
    if row["target_ratio"] is not None:
        r = row["ratio_numpy"]
        met = r is not None and r <= row["target_ratio"]
        parts.append(f"<={row['target_ratio']:g}x np {'ok' if met else 'MISSED'}")
    return ", ".join(parts) or "-"


def format_table(rows: list[dict]) -> str:
    """One plain-text table: times per call and ratios (course_lib / numpy, course_lib / torch)."""
    quick = any(r["quick"] for r in rows)
    header = ["workload", "course_lib", "numpy", "torch", "cl/numpy", "cl/torch", "target" if not quick else "check"]
    lines = []
    for r in rows:
        t = r["times"]
        last = ("ok" if r["ok"] else "MISMATCH") if quick else _target(r) + ("" if r["ok"] else "; MISMATCH")
        lines.append([r["name"], _fmt_time(t.get("course_lib")), _fmt_time(t.get("numpy")),
                      _fmt_time(t.get("torch")), _fmt_ratio(r["ratio_numpy"]), _fmt_ratio(r["ratio_torch"]), last])
    widths = [max(len(x[i]) for x in [header] + lines) for i in range(len(header))]
    out = []
    for k, x in enumerate([header] + lines):
        cells = [x[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(x[1:-1], widths[1:-1])] + [x[-1]]
        out.append("  ".join(cells).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    if quick:
        out.append("(--quick: tiny sizes, one call each; the times mean nothing)")
    return "\n".join(out)


def environment() -> dict:
    import platform
    torch = torch_or_none()
    return {"python": platform.python_version(), "numpy": np.__version__,
            "torch": getattr(torch, "__version__", None), "machine": platform.machine()}


def main(argv=None, workloads=None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, one call each (for CI)")
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON ('-' for stdout only)")
    p.add_argument("-k", dest="filter", default="", help="only workloads whose name contains this")
    p.add_argument("--repeat", type=int, default=7, help="timed samples per implementation (median reported)")
    args = p.parse_args(argv)
    ws = [w for w in (workloads if workloads is not None else REGISTRY) if args.filter in w.name]
    torch_or_none()
    rows = run(ws, quick=args.quick, repeat=args.repeat)
    if args.json == "-":
        json.dump({"env": environment(), "rows": rows}, sys.stdout, indent=1)
        print()
    else:
        print(format_table(rows))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"env": environment(), "rows": rows}, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1
