"""`course execute` reproduces a solutions notebook byte for byte.

What else it would catch in every chapter is covered elsewhere, so two chapters run here (the smallest, and
the capstone with its cells tagged long): test_checks.py compares each stored success line with the check
run again (test_check_passes_on_solution), the grading test (tests/test_notebooks.py) runs every solutions
notebook's cells under the grader, and the browser test runs every solutions notebook whole, measurements
and comparisons with PyTorch included. In a file of its own so that the test runner spreads these slow
runs over its workers.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = [ROOT / "solutions" / name for name in ("00_welcome.ipynb", "09_capstone.ipynb")]


@pytest.mark.slow
@pytest.mark.parametrize("src", SOLUTIONS, ids=lambda p: p.stem)
def test_execute_is_deterministic(src, tmp_path):
    """Re-executing the solutions notebook reproduces it byte for byte (the cells tagged long, full training
    runs, in their shorter version: the stored outputs are the check cells' and do not depend on them)."""
    copy = tmp_path / src.name
    copy.write_bytes(src.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    out = subprocess.run([sys.executable, "-m", "course", "execute", "--short", str(copy)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert copy.read_bytes() == src.read_bytes(), f"{src.name}: `course execute` changes it"
