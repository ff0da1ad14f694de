"""Compile time, first call and steady state of compiled course_lib, like the seed's torch.compile table.

    python bench/compile_table.py              # toy_example, the MLP step (two ways) and the small ResNet step
    python bench/compile_table.py --steps 20   # more steady-state steps
    python bench/compile_table.py --quick      # tiny sizes (checks that it runs)
    python bench/compile_table.py --harness    # the ResNet steady state through the harness (resnet_step.py)

For each model it trains two copies from the same initial weights, one eager and one compiled
(``aot_module`` + ``compile_fx`` for the ResNet; the ``mode="reduce-overhead"`` programs of
``bench_compile.compiled_mlp_step`` for the MLP, and the eager step through
``course_lib.compile(step, mode="reduce-overhead")``; the seed's ``toy_example`` through
``course_lib.compile``), and reports per copy: the first step (for the
compiled copy it includes tracing the joint graph, partitioning it and generating and compiling the
kernels with numba: "compile" is that first step minus a steady one), the median of the next
steps, and whether the two loss curves agree to float tolerance.  One process, course_lib only,
the thread setting of the environment; the benchmark tables (``bench/run.py``) time the steady
state again, each library in its own process.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
for p in (str(HERE.parent), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import bench_compile as bc  # noqa: E402
import numpy as np  # noqa: E402
import resnet_step as rs  # noqa: E402

import course_lib as cl  # noqa: E402
import course_lib._dynamo as dynamo  # noqa: E402


def _run(step, n: int) -> tuple[float, float, list[float]]:
    """First-call seconds, median steady seconds over ``n`` more calls, and the losses."""
    t = time.perf_counter()
    losses = [float(step().item())]
    first = time.perf_counter() - t
    times = []
    for _ in range(n):
        t = time.perf_counter()
        losses.append(float(step().item()))
        times.append(time.perf_counter() - t)
    return first, statistics.median(times), losses


def resnet_rows(quick: bool, steps: int) -> list[dict]:
    xn, yn = rs.resnet_data(quick)
    x, y = cl.from_numpy(xn), cl.from_numpy(yn)
    out = {}
    for mode in ("eager", "compiled"):
        model = rs.small_resnet()
        forward = rs.compile_resnet(model) if mode == "compiled" else model
        out[mode] = _run(rs.resnet_step(model, forward, x, y), steps)
    return _rows(f"small ResNet step {tuple(xn.shape)}", out)


def mlp_rows(quick: bool, steps: int) -> list[dict]:
    init, xn, yn = bc._mlp_init(quick)
    x, y = cl.from_numpy(xn), cl.from_numpy(yn)
    out = {}
    for mode in ("eager", "compiled"):
        params = [cl.from_numpy(a.copy()).requires_grad_() for a in init]
        if mode == "compiled":
            t = time.perf_counter()
            step = bc.compiled_mlp_step(params, x, y)
            build = time.perf_counter() - t
        else:
            opt = cl.optim.SGD(params, lr=bc._LR)

            def step(params=params, opt=opt):
                opt.zero_grad()
                loss = bc._mlp_loss(*params, x, y)
                loss.backward()
                opt.step()
                return loss
            build = 0.0
        first, steady, losses = _run(step, steps)
        out[mode] = (first + build, steady, losses)
    sizes = "-".join(str(a.shape[1]) for a in init[::2]) + f"-{init[-1].shape[0]}"
    return _rows(f"MLP {sizes} step, batch {len(yn)} (reduce-overhead)", out)


def mlp_dynamo_rows(quick: bool, steps: int) -> list[dict]:
    """The eager step itself through ``course_lib.compile(step, mode="reduce-overhead")``: captured while it
    runs, its backward compiled into the forward's graph; the first call captures and compiles."""
    init, xn, yn = bc._mlp_init(quick)
    x, y = cl.from_numpy(xn), cl.from_numpy(yn)
    out = {}
    for mode in ("eager", "compiled"):
        params = [cl.from_numpy(a.copy()).requires_grad_() for a in init]
        opt = cl.optim.SGD(params, lr=bc._LR)

        def step(params=params, opt=opt):
            opt.zero_grad()
            loss = bc._mlp_loss(*params, x, y)
            loss.backward()
            opt.step()
            return loss
        if mode == "compiled":
            dynamo.reset()
            step = cl.compile(step, mode="reduce-overhead")
        out[mode] = _run(step, steps)
    sizes = "-".join(str(a.shape[1]) for a in init[::2]) + f"-{init[-1].shape[0]}"
    return _rows(f"MLP {sizes} step, batch {len(yn)} (course_lib.compile)", out)


def toy_example(a, b):
    x = a / (cl.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def toy_rows(quick: bool, steps: int) -> list[dict]:
    """The seed's ``toy_example`` through ``course_lib.compile`` (inductor): the first call captures and
    compiles its first graph and the branch it takes; the steady calls are cache hits."""
    rng = np.random.default_rng(0)
    a = cl.from_numpy(rng.standard_normal(10).astype(np.float32))
    b = cl.from_numpy(np.abs(rng.standard_normal(10)).astype(np.float32))
    out = {}
    for mode in ("eager", "compiled"):
        fn = toy_example
        if mode == "compiled":
            dynamo.reset()
            fn = cl.compile(toy_example)
        out[mode] = _run(lambda fn=fn: fn(a, b).sum(), steps)
    return _rows("toy_example (course_lib.compile, inductor)", out)


def _rows(name: str, out: dict) -> list[dict]:
    same = bool(np.allclose(out["eager"][2], out["compiled"][2], rtol=1e-4, atol=1e-5))
    rows = []
    for mode, (first, steady, losses) in out.items():
        compile_s = max(first - steady, 0.0) if mode == "compiled" else 0.0
        rows.append({"workload": name, "mode": mode, "compile_s": compile_s,
                     "first_s": first, "steady_ms": steady * 1e3, "losses": losses, "same_losses": same})
    return rows


def format_rows(rows: list[dict]) -> str:
    head = f"{'workload':<52} {'mode':<9} {'compile':>9} {'1st call':>9} {'steady':>11} {'speed-up':>8}  losses match"
    lines = [head, "-" * len(head)]
    eager = {r["workload"]: r["steady_ms"] for r in rows if r["mode"] == "eager"}
    for r in rows:
        speed = eager[r["workload"]] / r["steady_ms"]
        lines.append(f"{r['workload']:<52} {r['mode']:<9} {r['compile_s']:>8.2f}s {r['first_s']:>8.2f}s "
                     f"{r['steady_ms']:>8.2f} ms {speed:>7.2f}x  {'yes' if r['same_losses'] else 'NO'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--harness", action="store_true",
                   help="time the ResNet step's steady state through the harness instead (both thread settings)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = p.parse_args(argv)
    if args.harness:
        import harness
        ws = [w for w in harness.REGISTRY if w.module == "resnet_step"]
        rows = harness.run(ws, quick=args.quick, threads="both", self_check=False)
        print(harness.format_table(rows, args.clock))
        return 0 if all(r["ok"] for r in rows) else 1
    rows = (toy_rows(args.quick, args.steps) + mlp_rows(args.quick, args.steps)
            + mlp_dynamo_rows(args.quick, args.steps) + resnet_rows(args.quick, args.steps if not args.quick else 2))
    print(f"threads: course_lib {cl.get_num_threads()}")
    print(format_rows(rows))
    return 0 if all(r["same_losses"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
