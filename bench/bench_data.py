"""Data loading workloads (chapter 06): worker processes and shared memory.

Every call is one epoch over a ``DataLoader`` whose workers persist between
epochs (``persistent_workers=True``), so the table shows throughput, not
process start-up.  The numpy floor is the same work done serially in this
process, without any loader: read the samples, stack them.

- ``CPU-bound``: each sample costs about 2 ms of numpy work
  (``SyntheticImages(size=32, work=15)``).  With 2 workers the epoch should take
  at most 1/1.7 of the serial floor on two free cores (target ``<=0.59x np``).
- ``transfer``: batches of 64 x 3 x 128 x 128 float32 (12.6 MB) from samples
  that cost nothing, so that only the trip from the worker to the main process
  is measured: through shared memory (the default) and pickled through the
  result queue's pipe (``set_sharing_strategy("pickle")``).  Shared memory should
  be at least 3x faster.  torch's "pickled" column sends numpy batches, which
  torch pickles.

Run alone (``python bench/bench_data.py``) it also prints the three ratios of
issue 7: 2 workers against 0, shared memory against pickling, course_lib
against torch.
"""
from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
for p in (str(HERE), str(HERE.parent)):
    if p not in sys.path:
        sys.path.insert(0, p)

import numpy as np  # noqa: E402
from harness import torch_or_none, workload  # noqa: E402

from course_lib.datasets.synthetic import SyntheticImages  # noqa: E402
from course_lib.utils import data as D  # noqa: E402

# ----------------------------------------------------------------------------- datasets (module level: picklable)

class Frames(D.Dataset):
    """Sample i is a view of one of 64 precomputed images: costs nothing to load."""

    def __init__(self, n: int, shape: tuple):
        self.n = n
        self.frames = np.random.default_rng(0).random((64, *shape), dtype=np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.frames[i % 64]


def _torch_dataset(base):
    """The same samples for torch's DataLoader."""
    torch = torch_or_none()

    class Wrapped(torch.utils.data.Dataset):
        def __len__(self):
            return len(base)

        def __getitem__(self, i):
            return base[i]

    return Wrapped()


def _checksum_images(batches) -> float:
    # cheap to compute, so the timing stays about loading: one pixel of every image and every label
    total = 0.0
    for images, labels in batches:
        total += float(np.asarray(images)[:, 0, 0, 0].sum(dtype=np.float64)) + float(np.asarray(labels).sum())
    return total


def _checksum_frames(batches) -> float:
    return sum(float(np.asarray(b)[:, 0, 0, 0].sum(dtype=np.float64)) for b in batches)


def _serial_floor(dataset, batch_size: int, collate):
    n = len(dataset)

    def floor():
        return [collate([dataset[i] for i in range(k, min(k + batch_size, n))]) for k in range(0, n, batch_size)]
    return floor


def _stack_pairs(samples):
    return np.stack([s[0] for s in samples]), np.array([s[1] for s in samples])


def _numpy_batch(samples):
    # module level, so torch's workers can use it to send plain numpy batches (which it pickles)
    return np.stack(samples)


def _epoch(loader, checksum):
    return lambda: checksum(iter(loader))


def _loader_fns(dataset, batch_size, num_workers, checksum, floor_collate, strategy="shared_memory",
                torch_collate=None):
    """{course_lib, numpy, torch}: one epoch each; course_lib's sharing strategy is set per call."""
    loader = D.DataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                          persistent_workers=num_workers > 0)

    def course_lib_epoch():
        old = D.get_sharing_strategy()
        D.set_sharing_strategy(strategy)  # read when the (first) iterator starts its workers
        try:
            return checksum(iter(loader))
        finally:
            D.set_sharing_strategy(old)

    floor = _serial_floor(dataset, batch_size, floor_collate)
    fns = {"course_lib": course_lib_epoch, "numpy": lambda: checksum(floor())}
    torch = torch_or_none()
    if torch is not None:
        kw = {"collate_fn": torch_collate} if torch_collate is not None else {}
        tloader = torch.utils.data.DataLoader(_torch_dataset(dataset), batch_size=batch_size,
                                              num_workers=num_workers, persistent_workers=num_workers > 0, **kw)
        fns["torch"] = _epoch(tloader, checksum)
    return fns


# ----------------------------------------------------------------------------- workloads

def _busy(quick: bool):
    return SyntheticImages(16 if quick else 256, size=8 if quick else 32, seed=0, work=1 if quick else 15)


@workload("data: CPU-bound 2 ms/sample, 256 samples, 0 workers", target_ratio=1.1, rtol=1e-9, atol=0,
          note="one epoch; the loader's own overhead on top of the serial floor")
def cpu_bound_0(quick: bool):
    return _loader_fns(_busy(quick), 16, 0, _checksum_images, _stack_pairs)


@workload("data: CPU-bound 2 ms/sample, 256 samples, 2 workers", target_ratio=1 / 1.7, rtol=1e-9, atol=0,
          note="persistent workers; target: 2 workers >= 1.7x the serial floor")
def cpu_bound_2(quick: bool):
    return _loader_fns(_busy(quick), 16, 2, _checksum_images, _stack_pairs)


def _frames(quick: bool):
    return Frames(8 if quick else 64 * 6, (3, 8, 8) if quick else (3, 128, 128))


@workload("data: 6 batches 64x3x128x128 f32, 2 workers, shared memory", rtol=1e-6, atol=0,
          note="persistent workers; numpy: stacking the batches in this process")
def transfer_shared(quick: bool):
    return _loader_fns(_frames(quick), 4 if quick else 64, 2, _checksum_frames, _numpy_batch)


@workload("data: 6 batches 64x3x128x128 f32, 2 workers, pickled", rtol=1e-6, atol=0,
          note="persistent workers; torch: numpy batches, which it pickles")
def transfer_pickled(quick: bool):
    return _loader_fns(_frames(quick), 4 if quick else 64, 2, _checksum_frames, _numpy_batch, strategy="pickle",
                       torch_collate=_numpy_batch)


# ----------------------------------------------------------------------------- standalone

def _summary(rows) -> str:
    by = {r["name"]: r["times"] for r in rows}
    keys = sorted(by)
    get = {("cpu", 0): next((by[k] for k in keys if "CPU-bound" in k and "0 workers" in k), None),
           ("cpu", 2): next((by[k] for k in keys if "CPU-bound" in k and "2 workers" in k), None),
           ("shm",): next((by[k] for k in keys if "shared memory" in k), None),
           ("pickle",): next((by[k] for k in keys if "pickled" in k), None)}
    lines = ["", "issue 7 targets (medians):"]
    zero, two = get[("cpu", 0)], get[("cpu", 2)]
    if zero and two:
        lines.append(f"  2 workers vs 0 workers (course_lib): {zero['course_lib'] / two['course_lib']:.2f}x "
                     "(target >= 1.7x on two free cores)")
    shm, pick = get[("shm",)], get[("pickle",)]
    if shm and pick:
        lines.append(f"  shared memory vs pickling (course_lib): {pick['course_lib'] / shm['course_lib']:.2f}x "
                     "(target >= 3x)")
    for r in rows:
        t = r["times"]
        if "torch" in t:
            lines.append(f"  course_lib / torch, {r['name'][6:]}, threads={r['threads']}: "
                         f"{t['course_lib'] / t['torch']:.2f}x (target <= 1.3x)")
    return "\n".join(lines)


def main(argv=None) -> int:
    import harness

    argv = list(sys.argv[1:] if argv is None else argv)
    quick = "--quick" in argv
    mine = [w for w in harness.REGISTRY if w.module == __name__]
    rows = harness.run(mine, quick=quick, progress=lambda name: print(f"  {name} ...", file=sys.stderr))
    print(harness.format_table(rows))
    print(_summary(rows))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
