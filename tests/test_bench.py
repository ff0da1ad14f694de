"""The benchmarks keep working: run bench/run.py --quick (tiny sizes, no timing asserts)."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_bench_quick_runs_and_checks_results():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--json", "-"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    data = json.loads(r.stdout)
    names = [row["name"] for row in data["rows"]]
    assert any("per-op overhead" in n for n in names)
    for row in data["rows"]:
        assert row["ok"], row
        assert row["times"]["course_lib"] > 0 and row["times"]["numpy"] > 0


def test_bench_table_format():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--module", "core", "-k", "matmul"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["workload", "course_lib", "numpy", "torch"]
    assert any(line.startswith("matmul 512x512") for line in lines)
