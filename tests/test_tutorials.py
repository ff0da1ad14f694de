"""Tutorial-style programs, written against ``import torch``, print the same under course_lib as under torch.

Each program in ``tests/tutorials/`` is the kind of code PyTorch's own tutorials teach (tensors, autograd,
nn and a training loop, data loading, saving, optimizers and schedulers, losses, hooks).  ``run.py``
runs them all in one process with real torch and in another with ``import torch`` meaning course_lib.
The outputs must agree: the text exactly (course_lib's reprs name ``course_lib`` where torch's name
``torch``, and object addresses differ), the numbers to float32 rounding (``1.204409`` beside
``1.204410``: the two libraries sum in different orders).
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from oracle import require_torch

HERE = Path(__file__).resolve().parent / "tutorials"
PROGRAMS = sorted(p.name for p in HERE.glob("t[0-9]*.py"))
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _run(lib: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    out = subprocess.run([sys.executable, str(HERE / "run.py"), lib, *PROGRAMS], capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return _ADDRESS.sub(" at 0x…", out.stdout)


def _close(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=2e-4, abs_tol=1e-6)


def _differences(expected: str, actual: str) -> list[str]:
    """The lines that differ in their text or in a number beyond float32 rounding."""
    out = []
    e_lines, a_lines = expected.splitlines(), actual.splitlines()
    if len(e_lines) != len(a_lines):
        out.append(f"{len(e_lines)} lines from torch, {len(a_lines)} from course_lib")
    for i, (e, a) in enumerate(zip(e_lines, a_lines)):
        if e == a:
            continue
        same_text = _NUMBER.split(e) == _NUMBER.split(a)
        en, an = _NUMBER.findall(e), _NUMBER.findall(a)
        if not (same_text and len(en) == len(an) and all(map(_close, en, an))):
            out.append(f"line {i + 1}:\n  torch:      {e}\n  course_lib: {a}")
    return out


def test_the_comparison_catches_a_changed_number_or_word():
    assert _differences("loss 1.204409 [6]", "loss 1.204410 [6]") == []
    assert _differences("loss 1.2044 [6]", "loss 1.2144 [6]")
    assert _differences("tensor([1, 2])", "tensor([1, 3])")
    assert _differences("Accuracy: 50.0%", "Accurate: 50.0%")
    assert _differences("a\nb", "a")


@pytest.mark.slow
def test_tutorial_programs_print_the_same_under_course_lib_as_under_torch():
    require_torch()
    assert len(PROGRAMS) >= 3
    expected, actual = _run("torch"), _run("course_lib")
    assert "Traceback" not in expected
    diffs = _differences(expected, actual)
    assert not diffs, "\n".join(diffs[:20])
