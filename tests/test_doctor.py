"""`course doctor`: each check finds what it says it finds, with one line saying what to fix."""
from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course import doctor
from course.doctor import FAIL, OK, WARN

ROOT = Path(__file__).resolve().parents[1]


def _one(findings, status):
    assert len(findings) == 1, findings
    f = findings[0]
    assert f.status == status, f
    assert "\n" not in f.message
    return f.message


def test_this_environment_is_ready_and_the_command_says_so():
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "course", "doctor"], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "All set."
    checks = [line.split(":")[0].split(maxsplit=1)[1] for line in lines[1:-1]]
    assert checks == ["Python", "packages", "kernel", "widgets", "write access", "BLAS threads", "torch"]
    assert not [line for line in lines if line.startswith(f"  {FAIL}")]


def test_python_too_old_says_which_version_is_needed():
    assert "3.9.18 is too old, the course needs 3.10" in _one(doctor.check_python((3, 9, 18)), FAIL)
    assert _one(doctor.check_python((3, 10, 0)), OK) == "3.10.0"


def test_a_missing_or_too_old_package_is_one_line_each():
    real = md.version

    def version(name):
        if name == "nbval":
            raise md.PackageNotFoundError(name)
        return "3.0" if name == "jupyterlab" else real(name)

    found = doctor.check_packages(version=version)
    assert [f.status for f in found] == [FAIL, FAIL]
    messages = sorted(f.message for f in found)
    assert messages[0].startswith("jupyterlab 3.0 is installed, the course needs jupyterlab>=4.0: run `")
    assert messages[1].startswith("nbval is not installed: run `make course`")
    # course_lib's viz extra is followed: matplotlib is course_lib[viz]'s, not the tools' own requirement
    assert "matplotlib" in _one(doctor.check_packages(), OK)
    assert "not installed in this Python" in _one(doctor.check_packages(dist="no-such-course-dist"), FAIL)


def _kernel_dir(tmp_path: Path, argv0: str) -> object:
    from jupyter_client.kernelspec import KernelSpecManager

    spec = tmp_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [argv0, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))
    return KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")], ensure_native_kernel=False)


def test_a_kernel_running_another_python_is_reported_with_how_to_remove_it(tmp_path):
    other = tmp_path / "python"
    other.write_text("#!/bin/sh\necho /some/other/env\n")
    other.chmod(0o755)
    msg = _one(doctor.check_kernel(kernel_spec_manager=_kernel_dir(tmp_path, str(other))), FAIL)
    assert "runs the Python in /some/other/env, not this one" in msg
    assert "jupyter kernelspec remove python3" in msg


def test_a_kernel_of_this_python_passes_and_a_missing_one_fails(tmp_path):
    this = _kernel_dir(tmp_path / "a", sys.executable)
    assert "runs this Python" in _one(doctor.check_kernel(kernel_spec_manager=this), OK)
    bare = _kernel_dir(tmp_path / "b", "python")  # jupyter_client starts it with JupyterLab's own Python
    assert "runs this Python" in _one(doctor.check_kernel(kernel_spec_manager=bare), OK)
    assert "has no `no-such-kernel` kernel" in _one(doctor.check_kernel("no-such-kernel", bare), FAIL)


def test_a_missing_widget_extension_says_widgets_would_show_as_text(tmp_path):
    msg = _one(doctor.check_widgets([tmp_path]), FAIL)
    assert "widget extension is missing" in msg and "VBox(children=...)" in msg
    (tmp_path / doctor.WIDGET_EXTENSION).parent.mkdir(parents=True)
    (tmp_path / doctor.WIDGET_EXTENSION).write_text("{}")
    assert "jupyterlab_widgets" in _one(doctor.check_widgets([tmp_path]), OK)
    real = md.version
    old = doctor.check_widgets([tmp_path], version=lambda n: "1.0.0" if n == "jupyterlab_widgets" else real(n))
    assert "jupyterlab_widgets 1.0.0 does not match ipywidgets" in _one(old, FAIL)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write in a read-only folder")
def test_a_read_only_folder_is_reported(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        found = doctor.check_write_access({"your notebooks' folder": ro, "the temporary folder": tmp_path})
    finally:
        ro.chmod(0o700)
    assert f"cannot write in your notebooks' folder ({ro})" in _one(found, FAIL)


def test_write_access_names_the_places_and_fails_on_a_file_in_the_way(tmp_path):
    assert _one(doctor.check_write_access({"a": tmp_path, "b": tmp_path / "not" / "yet"}), OK) == "a, b"
    (tmp_path / "file").write_text("")
    assert "cannot write in c" in _one(doctor.check_write_access({"c": tmp_path / "file" / "sub"}), FAIL)


def test_blas_threads_read_the_variable_that_blas_reads():
    assert _one(doctor.check_blas_threads({"OPENBLAS_NUM_THREADS": "1"}, cpus=8, blas="openblas"),
                OK) == "1 (OPENBLAS_NUM_THREADS=1)"
    assert _one(doctor.check_blas_threads({"OMP_NUM_THREADS": "1"}, cpus=8, blas="openblas"), OK)
    msg = _one(doctor.check_blas_threads({"OMP_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": ""}, cpus=8,
                                         blas="openblas"), WARN)
    assert "may run 4 threads" in msg and "OPENBLAS_NUM_THREADS=1" in msg
    assert "MKL_NUM_THREADS=1" in _one(doctor.check_blas_threads({}, cpus=2, blas="mkl"), WARN)
    assert _one(doctor.check_blas_threads({}, cpus=1, blas="openblas"), OK) == "1 (1 core)"


def test_torch_is_optional_but_only_the_oracle_version_is_right():
    def absent(name):
        raise md.PackageNotFoundError(name)

    assert "not installed (optional: `make oracle`" in _one(doctor.check_torch(absent), OK)
    assert "2.12.0 is installed, the course compares with 2.13.0" in _one(doctor.check_torch(lambda n: "2.12.0"),
                                                                         WARN)
    assert _one(doctor.check_torch(lambda n: "2.13.0+cpu"), OK).startswith("2.13.0+cpu")


def test_report_counts_problems_and_a_crashing_check_is_a_problem(monkeypatch, capsys):
    def broken():
        raise ImportError("no module named jupyter_client")

    monkeypatch.setattr(doctor, "CHECKS", (lambda: doctor.check_python((3, 12, 1)), broken))
    assert doctor.run() is None  # chapter 00's cell shows the printed report, and no repr after it
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "  ok    Python: 3.12.1"
    assert out[2].startswith("  FIX   broken: the check itself failed (ImportError: no module named jupyter_client)")
    assert out[-1] == "1 problem to fix (the lines marked FIX)."
    assert doctor.main([]) == 1 and capsys.readouterr().out.splitlines() == out
    assert len(doctor.diagnose()) == 2
