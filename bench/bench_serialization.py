"""Serialization workloads (chapter 07): save and load of a 200 MB state_dict, eager and mmap.

course_lib.save / course_lib.load beside torch.save / torch.load, with numpy's own zip of
arrays (``np.savez`` / ``np.load``) as the floor: the same bytes in the same kind of
container, without pickle, persistent ids or tensors.

Targets (issue 8): save and load within 1.5x of torch; ``load(mmap=True)`` in under 5 % of
the eager load.  Things to know when reading the numbers:

- ``course_lib.save`` to a path is atomic and durable: it writes a temporary file, calls
  ``fdatasync`` and renames it.  ``torch.save`` and ``np.savez`` write in place and do not
  sync, so part of the difference is the disk making the bytes durable.  The "save ... to
  memory" workload leaves the disk out.
- ``course_lib.load`` checks the CRC-32 of every storage only with ``CHECK_CRC32 = True``
  (torch's loader never does); the "CRC checks on" workload shows the cost.
- The files are read from the page cache (they were just written): this measures the
  loaders, not the disk.

    python bench/run.py --module serialization          # the table
    python bench/bench_serialization.py                 # the table + the mmap/eager ratio
    python bench/bench_serialization.py --quick         # tiny sizes (CI)
"""
from __future__ import annotations

import atexit
import io
import os
import shutil
import sys
import tempfile

import numpy as np
from harness import measuring, torch_or_none, workload

import course_lib as cl

_DIR = tempfile.mkdtemp(prefix="bench-serialization-")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)


def _state_dict(quick: bool) -> dict[str, np.ndarray]:
    """50 float32 tensors of 1M elements (200 MB); quick: 4 of 1000."""
    n, size = (4, 1000) if quick else (50, 1 << 20)
    rng = np.random.default_rng(0)
    return {f"layer{i}.weight": rng.standard_normal(size, dtype=np.float32) for i in range(n)}


def _files(quick: bool) -> dict:
    """Write the state_dict once per size with each library measured in this process; reuse the files
    across workloads."""
    key = "quick" if quick else "full"
    cached = _FILES.get(key)
    if cached is not None:
        return cached
    arrays = _state_dict(quick)
    paths = {"course_lib": os.path.join(_DIR, f"{key}_cl.pt"), "numpy": os.path.join(_DIR, f"{key}.npz"),
             "torch": os.path.join(_DIR, f"{key}_torch.pt"), "npy": os.path.join(_DIR, f"{key}_npy")}
    if measuring("course_lib"):
        cl.save({k: cl.from_numpy(v) for k, v in arrays.items()}, paths["course_lib"])
    if measuring("numpy"):
        np.savez(paths["numpy"], **arrays)
        os.makedirs(paths["npy"], exist_ok=True)
        for k, v in arrays.items():
            np.save(os.path.join(paths["npy"], f"{k}.npy"), v)
    torch = torch_or_none()
    if torch is not None:
        torch.save({k: torch.from_numpy(v) for k, v in arrays.items()}, paths["torch"])
    _FILES[key] = (arrays, paths)
    return _FILES[key]


_FILES: dict = {}


def _as_list(sd) -> list:
    return list(sd.values())


@workload("save 200 MB state_dict to a file", note="course_lib: atomic + fdatasync; torch, np.savez: neither")
def save_file(quick: bool):
    arrays = _state_dict(quick)
    sd = {k: cl.from_numpy(v) for k, v in arrays.items()}
    out = {k: os.path.join(_DIR, f"save_{k}") for k in ("course_lib", "numpy", "torch")}

    fns = {"course_lib": lambda: cl.save(sd, out["course_lib"]) or 0.0,
           "numpy": lambda: np.savez(out["numpy"] + ".npz", **arrays) or 0.0}
    torch = torch_or_none()
    if torch is not None:
        tsd = {k: torch.from_numpy(v) for k, v in arrays.items()}
        fns["torch"] = lambda: torch.save(tsd, out["torch"]) or 0.0
    return fns


@workload("save 200 MB state_dict to memory", note="BytesIO: serialization without the disk")
def save_memory(quick: bool):
    arrays = _state_dict(quick)
    sd = {k: cl.from_numpy(v) for k, v in arrays.items()}

    def course():
        cl.save(sd, io.BytesIO())
        return 0.0

    def floor():
        np.savez(io.BytesIO(), **arrays)
        return 0.0

    fns = {"course_lib": course, "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        tsd = {k: torch.from_numpy(v) for k, v in arrays.items()}

        def torch_save():
            torch.save(tsd, io.BytesIO())
            return 0.0
        fns["torch"] = torch_save
    return fns


@workload("load 200 MB state_dict")
def load_eager(quick: bool):
    arrays, paths = _files(quick)

    def floor():
        with np.load(paths["numpy"]) as z:
            return [z[k] for k in z.files]

    fns = {"course_lib": lambda: _as_list(cl.load(paths["course_lib"])), "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        fns["torch"] = lambda: _as_list(torch.load(paths["torch"], weights_only=True))
    return fns


@workload("load 200 MB state_dict, CRC checks on", note="course_lib.serialization.CHECK_CRC32 = True")
def load_eager_crc(quick: bool):
    from course_lib import serialization as S

    arrays, paths = _files(quick)

    def course():
        S.CHECK_CRC32 = True
        try:
            return _as_list(cl.load(paths["course_lib"]))
        finally:
            S.CHECK_CRC32 = False

    def floor():
        with np.load(paths["numpy"]) as z:
            return [z[k] for k in z.files]

    fns = {"course_lib": course, "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        fns["torch"] = lambda: _as_list(torch.load(paths["torch"], weights_only=True))
    return fns


@workload("load 200 MB state_dict, mmap=True", note="numpy: np.load(mmap_mode='r') of one .npy per tensor")
def load_mmap(quick: bool):
    arrays, paths = _files(quick)
    names = list(arrays)

    def floor():
        return [np.load(os.path.join(paths["npy"], f"{k}.npy"), mmap_mode="r") for k in names]

    fns = {"course_lib": lambda: _as_list(cl.load(paths["course_lib"], mmap=True)), "numpy": floor}
    torch = torch_or_none()
    if torch is not None:
        fns["torch"] = lambda: _as_list(torch.load(paths["torch"], weights_only=True, mmap=True))
    return fns


def summary(rows: list[dict]) -> str:
    """The issue's targets, from the table's rows."""
    by = {r["name"]: r for r in rows}
    lines = []
    for name in ("save 200 MB state_dict to a file", "save 200 MB state_dict to memory", "load 200 MB state_dict",
                 "load 200 MB state_dict, CRC checks on"):
        r = by.get(name)
        if r and r["ratio_torch"] is not None:
            met = "ok" if r["ratio_torch"] <= 1.5 else "MISSED"
            lines.append(f"{name}: course_lib / torch = {r['ratio_torch']:.2f}x (target <= 1.5x: {met})")
    eager, mm = by.get("load 200 MB state_dict"), by.get("load 200 MB state_dict, mmap=True")
    if eager and mm:
        ratio = mm["times"]["course_lib"] / eager["times"]["course_lib"]
        lines.append(f"course_lib.load(mmap=True) / course_lib.load = {ratio:.1%} (target < 5%: "
                     f"{'ok' if ratio < 0.05 else 'MISSED'})")
        if "torch" in mm["times"] and "torch" in eager["times"]:
            lines.append(f"torch.load(mmap=True) / torch.load = {mm['times']['torch'] / eager['times']['torch']:.1%}")
    return "\n".join(lines)


if __name__ == "__main__":
    import harness

    quick = "--quick" in sys.argv
    ws = [w for w in harness.REGISTRY if w.module == __name__]
    result = harness.run(ws, quick=quick, repeat=3 if not quick else 1)
    print(harness.format_table(result))
    if not quick:
        print()
        print(summary(result))
    sys.exit(0 if all(r["ok"] for r in result) else 1)
