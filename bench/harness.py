"""A small benchmark harness: named workloads, course_lib beside numpy and torch, each in its own process.

Each workload provides the same computation three ways: with course_lib, with numpy directly
(the *floor*: what course_lib's kernels cost without any framework around them) and with real
torch when it is installed.  Every implementation is timed in a **fresh child process** that
imports only what it needs (the course_lib and numpy children never import torch), with the
same thread settings for all three, so that one library's thread pools cannot slow another's:
in one process, torch's OpenMP workers and numpy's BLAS threads spin against each other (a
512x512 torch matmul measured 15.7 ms beside numpy and 2.2 ms alone).

The children run in rounds, the libraries in a rotating order, and the table reports the median
over rounds, so a burst of load elsewhere on the machine does not land on one library only.  The
first call's results come back to the parent (pickled numpy arrays), which checks course_lib's
result against numpy's.  Each child also reports the peak resident memory of one call of each
workload, and a self-check compares torch's 512x512 matmul measured through the harness with a
standalone ``python -c`` that imports only torch.  Timings are never asserted: machines are noisy.
See ``bench/README.md`` for the workload API and the method.

    python bench/run.py                      # every bench/bench_*.py, at 1 thread and the default
    python bench/run.py --quick              # tiny sizes, one call each (CI: it must keep working)
    python bench/run.py --threads 1 --json out.json -k add
"""
from __future__ import annotations

import ctypes
import gc
import importlib.util
import json
import os
import pathlib
import pickle
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

__all__ = ["Workload", "workload", "REGISTRY", "torch_or_none", "measuring", "peak_memory", "Rows", "run",
           "format_table", "self_check_verdict", "environment", "main"]

HERE = pathlib.Path(__file__).resolve().parent
IMPLS = ("course_lib", "numpy", "torch")
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: the thread settings a run can use, as stated in the table header and the JSON
SETTINGS = {
    "1": "1 thread: OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1, torch.set_num_threads(1), "
         "course_lib.set_num_threads(1)",
    "default": "machine default: no *_NUM_THREADS variables, no set_num_threads calls",
}
SELF_CHECK_NAME = "self-check: torch matmul 512x512 float32"
SELF_CHECK_TOLERANCE = 0.25


@dataclass
class Workload:
    """One named benchmark.

    ``make(quick)`` builds the inputs and returns ``{"course_lib": fn, "numpy": fn, "torch": fn}``
    (zero-argument callables; ``"torch"`` only when ``torch_or_none()`` is not None).  ``quick``
    asks for tiny sizes.  The first results of the course_lib and numpy callables are compared
    (``np.allclose`` with ``rtol``/``atol``).  ``path`` is the file that defines the workload: a
    child process imports it from there.
    """
    name: str
    make: Callable[[bool], dict]
    module: str = ""
    target_ratio: float | None = None   # goal for course_lib / numpy
    target_us: float | None = None      # goal for course_lib's time per call, in microseconds
    rtol: float = 1e-5
    atol: float = 1e-6
    note: str = ""
    path: str | None = None


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
        module = sys.modules.get(make.__module__)
        path = getattr(module, "__file__", None)
        REGISTRY.append(Workload(name, make, module=make.__module__, target_ratio=target_ratio,
                                 target_us=target_us, rtol=rtol, atol=atol, note=note,
                                 path=str(pathlib.Path(path).resolve()) if path else None))
        return make
    return deco


#: in a child process: the implementation it measures (None in the parent or a notebook)
_ACTIVE: str | None = None
_TORCH: list = []


def measuring(impl: str) -> bool:
    """Whether this process measures ``impl`` (a child measures one; anywhere else: all of them).

    A workload may use it to skip expensive set-up that only another implementation needs."""
    return _ACTIVE is None or _ACTIVE == impl


def torch_or_none():
    """The ``torch`` module if it is installed and this process measures torch, else None.

    The children that time course_lib and numpy never import torch, so its thread pool does not
    exist there."""
    if not measuring("torch"):
        return None
    if not _TORCH:
        try:
            import torch
        except ImportError:
            torch = None
        _TORCH.append(torch)
    return _TORCH[0]


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


# ---------------------------------------------------------------------------
# measuring, inside a child
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


def _sample(fn, number: int) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of this process) per call, over ``number`` calls, GC off."""
    gc_was = gc.isenabled()
    gc.disable()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(number):
            fn()
        t1, c1 = time.perf_counter(), time.process_time()
        return (t1 - t0) / number, (c1 - c0) / number
    finally:
        if gc_was:
            gc.enable()


def _status_kib(field: str) -> int | None:
    """A ``VmRSS``/``VmHWM``-style field of /proc/self/status, in KiB (None where there is none)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset VmHWM (the peak resident size) to the current size: Linux, ``echo 5 > clear_refs``."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    rss, hwm = _status_kib("VmRSS"), _status_kib("VmHWM")
    return rss is not None and hwm is not None and hwm <= rss + 1024


def _malloc_trim() -> None:
    """Give the allocator's free pages back to the system (glibc), so they do not hide new allocations."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_memory(fn: Callable[[], object]) -> int | None:
    """Bytes of resident memory one call of ``fn`` adds at its peak, results and temporaries included.

    VmHWM (peak resident size) is reset to the current size just before the call and read after
    it; free pages the allocator kept from earlier calls are returned first.  None where the peak
    cannot be reset (not Linux)."""
    gc.collect()
    _malloc_trim()
    if not _reset_peak_rss():
        return None
    base = _status_kib("VmRSS")
    fn()
    peak = _status_kib("VmHWM")
    return max(0, peak - base) * 1024


def _blas_threads() -> int | None:
    """The thread count of the OpenBLAS numpy loaded, asked through its C API (None if not found)."""
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({m for m in re.findall(r"(/\S+\.so[.\d]*)", f.read()) if "openblas" in m.lower()})
    except OSError:
        return None
    for lib in libs:
        handle = ctypes.CDLL(lib)
        for symbol in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                       "openblas_get_num_threads64_", "openblas_get_num_threads"):
            fn = getattr(handle, symbol, None)
            if fn is not None:
                return int(fn())
    return None


def _thread_counts() -> dict:
    cl, torch = sys.modules.get("course_lib"), sys.modules.get("torch")
    return {"env": {k: os.environ.get(k) for k in THREAD_ENV},
            "course_lib": cl.get_num_threads() if cl is not None else None,
            "torch": torch.get_num_threads() if torch is not None else None,
            "blas": _blas_threads()}


def _to_numpy(x):
    if isinstance(x, (tuple, list)):
        return [_to_numpy(v) for v in x]
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach()
    return np.array(x, copy=True)


def _same(a, b, rtol, atol) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(_same(x, y, rtol, atol) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)


def _self_check_make(quick: bool) -> dict:
    torch = torch_or_none()
    if torch is None:
        return {}
    torch.manual_seed(0)
    a, b = torch.randn(512, 512), torch.randn(512, 512)   # the standalone process does the same
    return {"torch": lambda: a @ b}


_SELF_CHECK = Workload(SELF_CHECK_NAME, _self_check_make, module="harness", path=str(pathlib.Path(__file__).resolve()))

#: the standalone half of the self-check: only torch imported, timed like ``_calibrate``/``_sample``
_STANDALONE = r"""
import gc, json, sys, time
import torch
threads, repeat, min_time = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if threads == "1":
    torch.set_num_threads(1)
torch.manual_seed(0)
a, b = torch.randn(512, 512), torch.randn(512, 512)
for _ in range(3):
    a @ b
number = 1
while True:
    t0 = time.perf_counter()
    for _ in range(number):
        a @ b
    dt = time.perf_counter() - t0
    if dt >= min_time:
        break
    number = max(number * 2, int(number * min_time / max(dt, 1e-9) * 1.2))
gc.disable()
samples, cpu_samples = [], []
for _ in range(repeat):
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(number):
        a @ b
    t1, c1 = time.perf_counter(), time.process_time()
    samples.append((t1 - t0) / number)
    cpu_samples.append((c1 - c0) / number)
print(json.dumps({"samples": samples, "cpu_samples": cpu_samples, "torch_threads": torch.get_num_threads()}))
"""


def _measure_here(w: Workload, impl: str, *, quick: bool, repeat: int, min_time: float,
                  result_path: str | None) -> dict:
    """Time one workload's ``impl`` in this process: check call, memory call, warm-up, samples."""
    entry = {"name": w.name, "path": w.path, "provided": False, "samples": [], "cpu_samples": [], "number": 0,
             "memory": None, "error": None, "result": None}
    start = time.perf_counter()
    try:
        fns = {k: v for k, v in w.make(quick).items() if k in IMPLS and v is not None}
        fn = fns.get(impl)
        if fn is None:
            return entry
        entry["provided"] = True
        out = fn()                                  # first call: the result for the check
        if result_path is not None:
            with open(result_path, "wb") as f:
                pickle.dump(_to_numpy(out), f, protocol=pickle.HIGHEST_PROTOCOL)
            entry["result"] = result_path
        del out
        entry["memory"] = peak_memory(fn)           # second call: peak resident memory
        if quick:
            wall, cpu = _sample(fn, 1)
            entry["samples"], entry["cpu_samples"], entry["number"] = [wall], [cpu], 1
            return entry
        t0, calls = time.perf_counter(), 0
        while calls < 3 and (calls == 0 or time.perf_counter() - t0 < 0.2):   # warm-up
            fn()
            calls += 1
        per_call = (time.perf_counter() - t0) / calls
        number = 1 if per_call >= min_time else _calibrate(fn, min_time)
        pairs = [_sample(fn, number) for _ in range(repeat)]
        entry["samples"], entry["cpu_samples"] = [p[0] for p in pairs], [p[1] for p in pairs]
        entry["number"] = number
    except Exception as e:   # reported in the row; the run then fails
        entry["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
    finally:
        entry["seconds"] = time.perf_counter() - start   # set-up included: where a slow run spends its time
    return entry


def _import_file(name: str, path: str):
    """Import the module at ``path`` (``__main__`` comes in under the file's stem)."""
    if name == "__main__" or not name:
        name = pathlib.Path(path).stem
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) and \
            pathlib.Path(sys.modules[name].__file__).resolve() == pathlib.Path(path).resolve():
        return sys.modules[name]
    folder = str(pathlib.Path(path).resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _child_main(spec_path: str) -> int:
    """Entry point of a child (``bench/_child.py``): measure one implementation, write a JSON report."""
    global _ACTIVE
    with open(spec_path) as f:
        spec = json.load(f)
    _ACTIVE = impl = spec["impl"]
    one = spec["threads"] == "1"
    if impl == "torch":
        import torch
        if one:
            torch.set_num_threads(1)
    import course_lib
    if one:
        course_lib.set_num_threads(1)
    import_errors = {}
    for item in spec["workloads"]:
        if item["path"] != _SELF_CHECK.path and item["path"] not in import_errors:
            try:
                _import_file(item["module"], item["path"])
                import_errors[item["path"]] = None
            except Exception as e:
                import_errors[item["path"]] = f"import failed: {type(e).__name__}: {e}"
    gc.collect()
    gc.freeze()   # the libraries' objects stay out of later collections: peak_memory's gc.collect() stays cheap
    entries = []
    for item in spec["workloads"]:
        if item["path"] == _SELF_CHECK.path and item["name"] == SELF_CHECK_NAME:   # full size even in --quick
            entries.append(_measure_here(_SELF_CHECK, impl, quick=False, repeat=max(spec["repeat"], 3),
                                         min_time=spec["min_time"], result_path=None))
            continue
        missing = {"name": item["name"], "path": item["path"], "provided": False, "samples": [], "memory": None,
                   "result": None, "seconds": 0.0}
        found = [w for w in REGISTRY if w.path == item["path"] and w.name == item["name"]]
        if import_errors[item["path"]] or not found:
            entries.append(missing | {"error": import_errors[item["path"]] or "workload not found in its module"})
            continue
        entries.append(_measure_here(found[-1], impl, quick=spec["quick"], repeat=spec["repeat"],
                                     min_time=spec["min_time"], result_path=item.get("result")))
    report = {"impl": impl, "pid": os.getpid(), "threads": _thread_counts(), "torch_loaded": "torch" in sys.modules,
              "malloc_tuned": getattr(sys.modules.get("course_lib._storage"), "_malloc_tuned", None),
              "workloads": entries}
    with open(spec["out"], "w") as f:
        json.dump(report, f)
    return 0


# ---------------------------------------------------------------------------
# the parent: children in rounds, then rows
# ---------------------------------------------------------------------------
def child_env(setting: str, impl: str | None = None) -> dict:
    """The environment of a child: the thread variables set (``"1"``) or removed (``"default"``).

    Importing course_lib tunes glibc's malloc for the whole process; a torch child imports it for
    the workloads' set-up only, so there it is told not to (``COURSE_LIB_DEFAULT_MALLOC``): torch
    is timed with the allocator a torch user has.  The numpy floor keeps course_lib's settings."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV and k != "COURSE_LIB_DEFAULT_MALLOC"}
    if setting == "1":
        env.update({k: "1" for k in THREAD_ENV})
    elif setting != "default":
        raise ValueError(f"threads must be '1' or 'default', got {setting!r}")
    if impl == "torch":
        env["COURSE_LIB_DEFAULT_MALLOC"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent)] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def _spawn(impl: str, setting: str, items: list[dict], *, quick: bool, repeat: int, min_time: float,
           tmp: str, tag: str) -> dict:
    """Run one child; its report, or a report whose every workload carries the child's error."""
    spec_path, out = os.path.join(tmp, f"{tag}.spec.json"), os.path.join(tmp, f"{tag}.out.json")
    with open(spec_path, "w") as f:
        json.dump({"impl": impl, "threads": setting, "quick": quick, "repeat": repeat, "min_time": min_time,
                   "workloads": items, "out": out}, f)
    proc = subprocess.run([sys.executable, str(HERE / "_child.py"), spec_path], env=child_env(setting, impl),
                          capture_output=True, text=True, timeout=600 if quick else 7200)
    if proc.returncode == 0 and os.path.exists(out):
        with open(out) as f:
            return json.load(f)
    error = f"{impl} child exited with {proc.returncode}: {proc.stderr.strip()[-1500:]}"
    return {"impl": impl, "pid": None, "threads": None, "torch_loaded": None,
            "workloads": [{"name": i["name"], "path": i["path"], "provided": True, "samples": [],
                           "memory": None, "result": None, "error": error} for i in items]}


def _standalone_matmul(setting: str, *, repeat: int, min_time: float) -> dict:
    """The self-check's reference: torch's 512x512 matmul in a process that imports only torch."""
    proc = subprocess.run([sys.executable, "-c", _STANDALONE, setting, str(repeat), str(min_time)],
                          env=child_env(setting, "torch"), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"samples": [], "error": proc.stderr.strip()[-1500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def self_check_verdict(harness_s: float | None, standalone_s: float | None,
                       tolerance: float = SELF_CHECK_TOLERANCE) -> tuple[float | None, str | None]:
    """(relative difference, warning or None) between the harness's and the standalone torch time."""
    if not harness_s or not standalone_s:
        return None, "self-check incomplete: torch's matmul could not be timed both ways"
    diff = max(harness_s, standalone_s) / min(harness_s, standalone_s) - 1
    if diff <= tolerance:
        return diff, None
    return diff, (f"WARNING: torch's 512x512 float32 matmul took {_fmt_time(harness_s)} through the harness "
                  f"but {_fmt_time(standalone_s)} in a standalone process importing only torch ({diff:.0%} apart, "
                  f"more than the {tolerance:.0%} allowed for noise): the torch column may be distorted, or the "
                  "machine was busy; rerun on a quiet machine")


class Rows(list):
    """The rows of a run (one dict per workload and thread setting), plus ``settings`` (what each
    thread setting was, as the children reported it) and ``checks`` (the self-check, if run)."""

    def __init__(self, rows: Iterable[dict] = (), settings: dict | None = None, checks: list | None = None):
        super().__init__(rows)
        self.settings = settings or {}
        self.checks = checks or []


def _rotate(seq: list, k: int) -> list:
    k %= len(seq)
    return seq[k:] + seq[:k]


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _groups(ws: list[Workload], quick: bool) -> list[list[int]]:
    """Indices of the workloads one child runs: those of one module (``quick``: all of them)."""
    if quick:
        return [list(range(len(ws)))]
    by_path: dict[str, list[int]] = {}
    for i, w in enumerate(ws):
        by_path.setdefault(w.path, []).append(i)
    return list(by_path.values())


def _schedule(n_groups: int, settings: tuple, impls: list[str], rounds: int):
    """(round, group, setting, impl) in the order the children run: round after round, so every round
    holds every library; within a round the order of the libraries rotates."""
    for r in range(rounds):
        for g in range(n_groups):
            for s in settings:
                for impl in _rotate(impls, r + g):
                    yield r, g, s, impl


def run(workloads: Iterable[Workload], *, quick: bool = False, repeat: int | None = None,
        rounds: int | None = None, threads: str = "1", self_check: bool = False, min_time: float = 0.02,
        libraries: Iterable[str] | None = None, progress: Callable[[str], None] | None = None) -> Rows:
    """Time ``workloads``: every implementation in fresh child processes, ``rounds`` rounds.

    ``threads`` is ``"1"``, ``"default"`` or ``"both"``.  A child times the workloads of one
    module (``quick``: of all modules) for one library: ``repeat`` samples of calls lasting about
    ``min_time`` seconds each.  Rows report the median over rounds of each child's median.
    ``quick``: tiny sizes, one round, one call.  ``self_check``: also time torch's 512x512 matmul
    through the harness and in a standalone process (``Rows.checks``).  ``libraries``: a subset of
    ``("course_lib", "numpy", "torch")`` to time (default: all; torch only if installed).
    """
    ws = list(workloads)
    for w in ws:
        if not w.path or not os.path.exists(w.path):
            raise ValueError(f"workload {w.name!r} is not defined in a file (module {w.module!r}): a fresh "
                             "process must import it, so define it in a .py file, not in a notebook cell")
    settings = ("1", "default") if threads == "both" else (threads,)
    for s in settings:
        child_env(s)   # validates
    rounds = 1 if quick else (rounds or 3)
    repeat = 1 if quick else (repeat or 3)
    has_torch = _torch_installed()
    wanted = IMPLS if libraries is None else tuple(libraries)
    unknown = set(wanted) - set(IMPLS)
    if unknown:
        raise ValueError(f"unknown libraries {sorted(unknown)}: choose from {IMPLS}")
    impls = [i for i in IMPLS if i in wanted and (i != "torch" or has_torch)]
    has_torch = has_torch and "torch" in impls
    groups = _groups(ws, quick)
    self_check = self_check and has_torch
    acc: dict = {}          # (setting, workload index, impl) -> per-round data
    reports: dict = {}      # (setting, impl) -> thread counts the child reported
    checks = {s: {"harness": [], "standalone": [], "errors": []} for s in settings}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for n, (r, g, s, impl) in enumerate(_schedule(len(groups), settings, impls, rounds)):
            group = groups[g]
            items = [{"name": ws[i].name, "module": ws[i].module, "path": ws[i].path,
                      "result": os.path.join(tmp, f"{s}-{i}-{impl}.pkl")
                      if r == 0 and impl in ("course_lib", "numpy") else None} for i in group]
            check_here = self_check and impl == "torch" and g == 0
            if check_here:   # the harness half of the self-check runs last in this torch child
                items.append({"name": SELF_CHECK_NAME, "module": "harness", "path": _SELF_CHECK.path,
                              "result": None})
            if not items:
                continue
            if progress:
                where = "self-check" if not group else "all modules" if quick else ws[group[0]].module
                progress(f"round {r + 1}/{rounds}, threads={s}: {impl} ({where})")

            def child():
                return _spawn(impl, s, items, quick=quick, repeat=repeat, min_time=min_time, tmp=tmp, tag=f"c{n}")

            if check_here:   # the two halves back to back, alternating which goes first
                rep = child() if r % 2 == 0 else None
                sa = _standalone_matmul(s, repeat=max(repeat, 3), min_time=min_time)
                rep = rep or child()
                if sa.get("samples"):
                    checks[s]["standalone"].append(sa["samples"])
                else:
                    checks[s]["errors"].append(sa.get("error"))
                mine = rep["workloads"][-1]
                if mine["samples"]:
                    checks[s]["harness"].append(mine["samples"])
                elif mine["error"]:
                    checks[s]["errors"].append(mine["error"])
            else:
                rep = child()
            if rep.get("threads"):
                reports.setdefault((s, impl), rep["threads"])
            for i, entry in zip(group, rep["workloads"]):
                d = acc.setdefault((s, i, impl), {"rounds": [], "mins": [], "cpu_rounds": [], "memory": [],
                                                  "errors": [], "provided": False})
                _collect(d, entry, rep if r == 0 else None)
        rows = Rows(settings={s: _setting_info(s, reports) for s in settings})
        for s in settings:
            for i, w in enumerate(ws):
                rows.append(_row(w, s, {impl: acc.get((s, i, impl)) for impl in impls}, quick, rows.settings[s]))
    for s in settings if self_check else ():
        # the fastest sample of each half: load elsewhere on the machine only ever adds time, while a
        # thread pool that disturbs torch inside the harness slows every sample
        c = checks[s]
        h = min((x for xs in c["harness"] for x in xs), default=None)
        sa = min((x for xs in c["standalone"] for x in xs), default=None)
        diff, warning = self_check_verdict(h, sa)
        rows.checks.append({"threads": s, "name": SELF_CHECK_NAME, "statistic": "fastest sample of each half",
                            "harness": h, "standalone": sa, "harness_samples": c["harness"],
                            "standalone_samples": c["standalone"],
                            "harness_median": _median([x for xs in c["harness"] for x in xs]),
                            "standalone_median": _median([x for xs in c["standalone"] for x in xs]),
                            "difference": diff, "tolerance": SELF_CHECK_TOLERANCE, "ok": warning is None,
                            "warning": warning, "errors": [e for e in c["errors"] if e]})
    return rows


def _collect(d: dict, entry: dict, first_report: dict | None) -> None:
    """Add one child's entry for a workload to its per-round data."""
    d["provided"] |= bool(entry["provided"])
    if entry["samples"]:
        d["rounds"].append(statistics.median(entry["samples"]))
        d["mins"].append(min(entry["samples"]))
    if entry.get("cpu_samples"):
        d["cpu_rounds"].append(statistics.median(entry["cpu_samples"]))
    if entry["memory"] is not None:
        d["memory"].append(entry["memory"])
    if entry["error"]:
        d["errors"].append(entry["error"])
    if entry.get("result"):
        d["result"] = entry["result"]
    if first_report is not None:
        d["process"] = {k: first_report.get(k) for k in ("pid", "torch_loaded", "malloc_tuned")}


def _setting_info(setting: str, reports: dict) -> dict:
    counts = {}
    for (s, impl), t in reports.items():
        if s != setting:
            continue
        if impl == "torch":
            counts["torch"] = t.get("torch")
        else:
            counts.setdefault("course_lib", t.get("course_lib"))
            counts.setdefault("blas", t.get("blas"))
        counts.setdefault("env", t.get("env"))
    return {"setting": setting, "description": SETTINGS[setting], "measured": counts,
            "process": "each library in its own fresh process"}


def _row(w: Workload, setting: str, data: dict, quick: bool, setting_info: dict) -> dict:
    row = {"name": w.name, "module": w.module, "threads": setting, "thread_counts": setting_info["measured"],
           "quick": quick, "times": {}, "min_times": {}, "round_times": {}, "cpu_times": {}, "cpu_round_times": {},
           "memory": {}, "process": {},
           "target_ratio": w.target_ratio, "target_us": w.target_us, "ok": True, "note": w.note, "errors": {}}
    notes = [w.note] if w.note else []
    for impl, d in data.items():
        if d is None or not d["provided"]:
            continue
        if d["rounds"]:
            row["times"][impl] = statistics.median(d["rounds"])
            row["min_times"][impl] = min(d["mins"])
            row["round_times"][impl] = d["rounds"]
        if d["cpu_rounds"]:
            row["cpu_times"][impl] = statistics.median(d["cpu_rounds"])
            row["cpu_round_times"][impl] = d["cpu_rounds"]
        row["memory"][impl] = int(statistics.median(d["memory"])) if d["memory"] else None
        if "process" in d:
            row["process"][impl] = d["process"]
        if d["errors"]:
            row["ok"] = False
            row["errors"][impl] = d["errors"][0]
            notes.append(f"{impl} raised {d['errors'][0].splitlines()[0]}")
    cl, npy = data.get("course_lib"), data.get("numpy")
    if cl and npy and cl.get("result") and npy.get("result"):
        with open(cl["result"], "rb") as f:
            a = pickle.load(f)
        with open(npy["result"], "rb") as f:
            b = pickle.load(f)
        if not _same(a, b, w.rtol, w.atol):
            row["ok"] = False
            notes.append("course_lib result differs from numpy")
    row["note"] = "; ".join(notes)
    t = row["times"]
    row["ratio_numpy"] = t["course_lib"] / t["numpy"] if "course_lib" in t and "numpy" in t else None
    row["ratio_torch"] = t["course_lib"] / t["torch"] if "course_lib" in t and "torch" in t else None
    return row


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


def _fmt_mib(b: int | None) -> str:
    if b is None:
        return "-"
    mib = b / 2 ** 20
    return f"{mib:.0f}" if mib >= 10 else f"{mib:.1f}"


def _ratio(times: dict, other: str) -> float | None:
    return times["course_lib"] / times[other] if "course_lib" in times and times.get(other) else None


def _target(row, times: dict) -> str:
    parts = []
    t = times.get("course_lib")
    if row["target_us"] is not None:
        met = t is not None and t * 1e6 <= row["target_us"]
        parts.append(f"<={row['target_us']:g} us {'ok' if met else 'MISSED'}")
    if row["target_ratio"] is not None:
        r = _ratio(times, "numpy")
        met = r is not None and r <= row["target_ratio"]
        parts.append(f"<={row['target_ratio']:g}x np {'ok' if met else 'MISSED'}")
    return ", ".join(parts) or "-"


def _setting_header(setting: str, info: dict | None) -> str:
    text = f"threads={setting}: {SETTINGS.get(setting, setting)}"
    m = (info or {}).get("measured") or {}
    got = [f"{k} {m[k]}" for k in ("torch", "course_lib", "blas") if m.get(k) is not None]
    if got:
        text += " (measured: " + ", ".join(got).replace("blas", "OpenBLAS") + " threads)"
    return text + "; each library in its own fresh process"


#: what the table's times are
CLOCKS = {"wall": "wall-clock time per call",
          "cpu": "CPU time of the calling process per call (time.process_time): on a busy machine it leaves "
                 "out the time spent waiting for a core; meaningful at threads=1, for work done in the calling "
                 "process (not DataLoader workers)"}


def format_table(rows: list[dict], clock: str = "wall") -> str:
    """Plain-text tables, one per thread setting: times per call (``clock``: ``"wall"`` or ``"cpu"``),
    ratios, peak memory per library."""
    quick = any(r["quick"] for r in rows)
    key = {"wall": "times", "cpu": "cpu_times"}[clock]
    settings = getattr(rows, "settings", {})
    header = ["workload", "course_lib", "numpy", "torch", "cl/numpy", "cl/torch", "peak MiB cl/np/torch",
              "target" if not quick else "check"]
    out = []
    for setting in dict.fromkeys(r.get("threads", "1") for r in rows):
        if out:
            out.append("")
        out.append(_setting_header(setting, settings.get(setting) or {"measured": next(
            (r.get("thread_counts") for r in rows if r.get("threads") == setting), None)}))
        lines = []
        for r in (r for r in rows if r.get("threads", "1") == setting):
            t, mem = r.get(key, {}), r.get("memory", {})
            last = ("ok" if r["ok"] else "MISMATCH") if quick else _target(r, t) + ("" if r["ok"] else "; MISMATCH")
            if not r["ok"] and r.get("errors"):
                last = last.replace("MISMATCH", "ERROR")
            lines.append([r["name"], _fmt_time(t.get("course_lib")), _fmt_time(t.get("numpy")),
                          _fmt_time(t.get("torch")), _fmt_ratio(_ratio(t, "numpy")), _fmt_ratio(_ratio(t, "torch")),
                          " / ".join(_fmt_mib(mem.get(k)) for k in IMPLS), last])
        widths = [max(len(x[i]) for x in [header] + lines) for i in range(len(header))]
        for k, x in enumerate([header] + lines):
            cells = [x[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(x[1:-1], widths[1:-1])] + [x[-1]]
            out.append("  ".join(cells).rstrip())
            if k == 0:
                out.append("  ".join("-" * w for w in widths))
    if rows:
        n_rounds = max((len(v) for r in rows for v in r.get("round_times", {}).values()), default=1)
        out.append("")
        out.append(f"times: {CLOCKS[clock]}; median over {n_rounds} round(s) of fresh processes, libraries in "
                   "rotating order")
        out.append("peak MiB: resident memory one call adds at its peak (VmHWM), in the calling process")
    for c in getattr(rows, "checks", []):
        if c["warning"]:
            out.append(f"threads={c['threads']}: {c['warning']}")
        else:
            out.append(f"self-check, threads={c['threads']}: torch's 512x512 matmul {_fmt_time(c['harness'])} through "
                       f"the harness, {_fmt_time(c['standalone'])} standalone (fastest samples, "
                       f"{c['difference']:.0%} apart): ok")
    if quick:
        out.append("(--quick: tiny sizes, one call each; the times mean nothing)")
    return "\n".join(out)


def environment() -> dict:
    """Versions, CPUs and load average (the run happens on a machine others may share)."""
    import platform
    try:
        from importlib.metadata import version
        torch_version = version("torch") if _torch_installed() else None
    except Exception:
        torch_version = None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    return {"python": platform.python_version(), "numpy": np.__version__, "torch": torch_version,
            "machine": platform.machine(), "cpus": cpus,
            "loadavg": os.getloadavg() if hasattr(os, "getloadavg") else None}


def main(argv=None, workloads=None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, one round, one call each (for CI)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout only)")
    p.add_argument("-k", dest="filter", default="", help="only workloads whose name contains this")
    p.add_argument("--threads", choices=("1", "default", "both"), default="both",
                   help="thread setting of every library: 1, the machine's default, or both (two tables)")
    p.add_argument("--rounds", type=int, default=3, help="fresh processes per library and module (median reported)")
    p.add_argument("--repeat", type=int, default=3, help="timed samples in each process")
    p.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                   help="times in the table: wall clock, or CPU time of the process (steadier on a busy machine)")
    p.add_argument("--no-self-check", dest="self_check", action="store_false",
                   help="skip timing torch's matmul standalone against the harness")
    args = p.parse_args(argv)
    ws = [w for w in (workloads if workloads is not None else REGISTRY) if args.filter in w.name]
    env_start = environment()

    def progress(msg):
        print(f"  {msg}", file=sys.stderr, flush=True)

    rows = run(ws, quick=args.quick, repeat=args.repeat, rounds=args.rounds, threads=args.threads,
               self_check=args.self_check, progress=progress)
    env = env_start | {"loadavg_end": environment()["loadavg"]}
    data = {"env": env, "method": {"isolation": "each library in its own fresh process",
                                   "rounds": 1 if args.quick else args.rounds,
                                   "samples_per_process": 1 if args.quick else args.repeat,
                                   "statistic": "median over rounds of each process's median",
                                   "clocks": CLOCKS,
                                   "memory": "VmHWM after one call minus VmRSS before it (peak reset via "
                                             "/proc/self/clear_refs), bytes"},
            "settings": rows.settings, "self_check": rows.checks, "rows": list(rows)}
    if args.json == "-":
        json.dump(data, sys.stdout, indent=1)
        print()
    else:
        print(format_table(rows, args.clock))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(data, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1
