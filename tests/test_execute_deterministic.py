"""`course execute` reproduces every solutions notebook byte for byte.

One notebook per test, in a file of its own so that the test runner spreads these slow runs (each executes a
whole chapter, measurements included) over its workers instead of adding them to test_grader.py's.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted(p for p in (ROOT / "solutions").glob("*.ipynb") if not p.name.startswith("."))


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
