"""The benchmarks keep working and stay honest: bench/run.py --quick (tiny sizes, no timing asserts),
each library in its own process with the stated thread settings, the memory column, the self-check,
and a wrong or failing workload failing the run."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, str(BENCH))
    try:
        import harness
        yield harness
    finally:
        sys.path.remove(str(BENCH))


def _quick(*args: str) -> dict:
    r = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--json", "-", *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return json.loads(r.stdout)


def test_bench_quick_runs_and_checks_results():
    # every workload at one thread; the default thread setting on one module (its processes and settings are
    # made the same way for every module: running all of them twice would double the test's time)
    data, default_run = _quick("--threads", "1"), _quick("--threads", "default", "--module", "core")
    core = {row["name"] for row in default_run["rows"]}
    assert core and core <= {row["name"] for row in data["rows"]}
    data["rows"] += default_run["rows"]
    data["settings"].update(default_run["settings"])
    data["self_check"] = data.get("self_check", []) + default_run.get("self_check", [])
    names = {row["name"] for row in data["rows"]}
    for wanted in ("per-op overhead", "MLP train step 784-256-10", "Conv2d fwd+bwd", "BatchNorm2d fwd+bwd",
                   "LayerNorm(512)", "resnet18 forward", "save 200 MB", "load 200 MB state_dict"):
        assert any(wanted in n for n in names), wanted
    impls = ["course_lib", "numpy"] + (["torch"] if HAS_TORCH else [])
    # both thread settings, stated and as the children measured them
    assert set(data["settings"]) == {"1", "default"}
    one = data["settings"]["1"]
    assert "OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1" in one["description"]
    assert one["measured"]["course_lib"] == 1 and one["measured"]["env"]["OMP_NUM_THREADS"] == "1"
    assert one["measured"]["blas"] in (1, None)
    if HAS_TORCH:
        assert one["measured"]["torch"] == 1
    default = data["settings"]["default"]["measured"]
    assert default["env"] == {"OMP_NUM_THREADS": None, "OPENBLAS_NUM_THREADS": None, "MKL_NUM_THREADS": None}
    assert default["course_lib"] == len(os.sched_getaffinity(0))
    for setting in ("1", "default"):
        rows = [row for row in data["rows"] if row["threads"] == setting]
        assert {row["name"] for row in rows} == (names if setting == "1" else core)
        for row in rows:
            assert row["ok"], row
            for impl in impls:
                assert row["times"][impl] > 0, (row["name"], impl)
                assert row["cpu_times"][impl] >= 0, (row["name"], impl)
                assert isinstance(row["memory"][impl], int) and row["memory"][impl] >= 0, (row["name"], impl)
            # every library in its own process; torch never loaded where course_lib or numpy is timed
            pids = {row["process"][impl]["pid"] for impl in impls}
            assert len(pids) == len(impls) and os.getpid() not in pids
            assert not row["process"]["course_lib"]["torch_loaded"] and not row["process"]["numpy"]["torch_loaded"]
            # course_lib's malloc tuning: course_lib and its numpy floor have it, torch runs with glibc's defaults
            if row["process"]["course_lib"]["malloc_tuned"] is not None:
                assert row["process"]["numpy"]["malloc_tuned"] == row["process"]["course_lib"]["malloc_tuned"]
                if HAS_TORCH:
                    assert row["process"]["torch"]["malloc_tuned"] is False
    if HAS_TORCH:
        assert [c["threads"] for c in data["self_check"]] == ["1", "default"]
        for c in data["self_check"]:
            assert c["harness"] > 0 and c["standalone"] > 0 and c["difference"] >= 0
            assert c["harness"] == min(min(x) for x in c["harness_samples"])
            assert c["ok"] == (c["warning"] is None)


def test_bench_table_format():
    r = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--module", "core", "-k", "matmul",
                        "--threads", "1", "--no-self-check", "--clock", "cpu"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("threads=1: 1 thread: OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1")
    assert "each library in its own fresh process" in lines[0]
    assert lines[1].split()[:4] == ["workload", "course_lib", "numpy", "torch"]
    assert "peak MiB cl/np/torch" in lines[1]
    assert any(line.startswith("matmul 512x512") for line in lines)
    assert any(line.startswith("times: CPU time of the calling process per call") for line in lines)


BROKEN = '''
import numpy as np
import course_lib as cl
from harness import workload

@workload("wrong result")
def wrong(quick):
    xn = np.arange(8, dtype=np.float32)
    x = cl.tensor(xn)
    return {"course_lib": lambda: x + 1, "numpy": lambda: xn.copy()}

@workload("raises")
def raises(quick):
    return {"course_lib": lambda: 1 / 0, "numpy": lambda: np.zeros(1)}

@workload("allocates 64 MiB")
def allocates(quick):
    n = 16 * 2**20   # float32: 64 MiB, every page written
    return {"course_lib": lambda: cl.ones(n).sum(), "numpy": lambda: np.ones(n, np.float32).sum(),
            "torch": None}
'''


def test_wrong_or_failing_workload_fails_the_run_and_memory_is_measured(tmp_path):
    (tmp_path / "bench_broken.py").write_text(textwrap.dedent(BROKEN))
    out = tmp_path / "out.json"
    code = (f"import sys; sys.path[:0] = [{str(BENCH)!r}, {str(ROOT)!r}, {str(tmp_path)!r}]\n"
            "import harness, bench_broken\n"
            f"sys.exit(harness.main(['--quick', '--threads', '1', '--no-self-check', '--json', {str(out)!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert "MISMATCH" in r.stdout and "ERROR" in r.stdout
    rows = {row["name"]: row for row in json.loads(out.read_text())["rows"]}
    assert not rows["wrong result"]["ok"] and "differs from numpy" in rows["wrong result"]["note"]
    assert not rows["raises"]["ok"] and "ZeroDivisionError" in rows["raises"]["errors"]["course_lib"]
    big = rows["allocates 64 MiB"]
    assert big["ok"], big
    if big["memory"]["numpy"] is not None:   # Linux: VmHWM can be reset
        for impl in ("course_lib", "numpy"):
            assert 60 * 2**20 <= big["memory"][impl] <= 200 * 2**20, (impl, big["memory"])
        assert rows["wrong result"]["memory"]["numpy"] < 8 * 2**20


def test_peak_memory_counts_a_calls_temporaries(harness):
    first = harness.peak_memory(lambda: np.ones(4 * 2**20).sum())       # 32 MiB, freed before the call returns
    if first is None:
        pytest.skip("VmHWM cannot be reset here")
    again = harness.peak_memory(lambda: np.ones(4 * 2**20).sum())       # freed pages given back: counted again
    small = harness.peak_memory(lambda: np.ones(16).sum())
    assert first >= 30 * 2**20 and again >= 30 * 2**20
    assert small < 4 * 2**20


def test_child_environment_states_the_threads(harness, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    one, default = harness.child_env("1"), harness.child_env("default")
    assert all(one[k] == "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    assert not any(k in default for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    with pytest.raises(ValueError):
        harness.child_env("4")
    assert harness.child_env("1", "torch")["COURSE_LIB_DEFAULT_MALLOC"] == "1"
    assert "COURSE_LIB_DEFAULT_MALLOC" not in harness.child_env("1", "course_lib")


def test_self_check_warns_when_the_harness_and_a_standalone_process_disagree(harness):
    assert harness.self_check_verdict(2.2e-3, 2.4e-3) == (pytest.approx(0.2 / 2.2), None)
    diff, warning = harness.self_check_verdict(15.7e-3, 2.2e-3)   # the distortion the old harness had
    assert diff == pytest.approx(15.7 / 2.2 - 1) and warning.startswith("WARNING")
    assert "15.70 ms" in warning and "2.20 ms" in warning
    assert harness.self_check_verdict(None, 2.2e-3)[1] is not None
    rows = harness.Rows([], checks=[{"threads": "default", "warning": warning, "harness": 15.7e-3,
                                     "standalone": 2.2e-3, "difference": diff}])
    assert warning in harness.format_table(rows)


def test_libraries_leave_torch_out(harness):
    # a chapter's grading run replaces torch by None: the harness must be able to time without it
    sys.path.insert(0, str(ROOT))
    try:
        import bench_core  # noqa: F401  (registers the workloads)
    finally:
        sys.path.remove(str(ROOT))
    ws = [w for w in harness.REGISTRY if w.name.startswith("add, 10 float32")]
    rows = harness.run(ws, quick=True, libraries=("course_lib", "numpy"), self_check=True)
    assert set(rows[0]["times"]) == {"course_lib", "numpy"} and set(rows[0]["process"]) == {"course_lib", "numpy"}
    assert rows.checks == [] and rows[0]["ok"]
    with pytest.raises(ValueError, match="unknown libraries"):
        harness.run(ws, libraries=("jax",))


def test_notebook_workloads_need_a_file(harness):
    w = harness.Workload("defined in a cell", lambda quick: {}, module="__main__", path=None)
    with pytest.raises(ValueError, match="defined in a file"):
        harness.run([w])


def test_rounds_rotate_the_order_of_the_libraries(harness):
    impls = ["course_lib", "numpy", "torch"]
    order = list(harness._schedule(1, ("1", "default"), impls, rounds=3))
    assert len(order) == 3 * 2 * 3
    for s in ("1", "default"):
        by_round = [[impl for r_, g, s_, impl in order if r_ == r and s_ == s] for r in range(3)]
        assert all(sorted(x) == sorted(impls) for x in by_round)
        for position in range(3):   # every library runs first, second and last once
            assert sorted(x[position] for x in by_round) == sorted(impls)
