"""Run the benchmarks: every ``bench/bench_*.py`` module's workloads, one table.

    python bench/run.py [--quick] [--json PATH|-] [-k NAME] [--repeat N] [--module core]
"""
from __future__ import annotations

import importlib
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:
    sys.path.insert(1, str(HERE.parent))  # course_lib from this checkout

import harness  # noqa: E402


def discover(only: list[str] | None = None) -> list[str]:
    """Import ``bench/bench_*.py`` (sorted; ``only`` filters by the part after ``bench_``)."""
    names = []
    for path in sorted(HERE.glob("bench_*.py")):
        short = path.stem[len("bench_"):]
        if only and short not in only and path.stem not in only:
            continue
        importlib.import_module(path.stem)
        names.append(path.stem)
    return names


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    only = []
    while "--module" in argv:
        i = argv.index("--module")
        only.append(argv[i + 1])
        del argv[i:i + 2]
    discover(only or None)
    return harness.main(argv)


if __name__ == "__main__":
    sys.exit(main())
