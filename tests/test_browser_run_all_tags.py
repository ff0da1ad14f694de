"""What JupyterLab needs from the learner notebooks for Run All to reach the end (tests/browser runs it for real).

JupyterLab sends each cell with ``stop_on_error``, so the kernel drops every cell queued after one that raised,
unless the cell is tagged ``raises-exception``. A fresh learner notebook's check cells raise NotAttempted.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from course import notebook as nbio
from course.student import RAISES_EXCEPTION, reset_exercise, student_notebook

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted(p for p in (ROOT / "solutions").glob("*.ipynb") if not p.name.startswith("."))


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_learner_check_cells_let_run_all_go_on(path):
    learner = nbio.read(ROOT / "notebooks" / path.name)
    checks = nbio.check_cells(learner)
    assert checks and all(RAISES_EXCEPTION in nbio.tags(c) for c in checks)
    others = [c.id for c in learner.cells if RAISES_EXCEPTION in nbio.tags(c) and not nbio.is_check(c)]
    assert others == [], "only check cells may raise in a learner notebook"
    # the solutions keep their tags: there every check passes
    assert not any(RAISES_EXCEPTION in nbio.tags(c) for c in nbio.read(path).cells)


def test_reset_puts_back_a_check_cell_that_lets_run_all_go_on(tmp_path):
    nb = student_notebook(nbio.read(ROOT / "solutions" / "00_welcome.ipynb"))
    check = nbio.check_cells(nb)[0]
    check.metadata["tags"] = ["check"]
    nbio.save(nb, tmp_path / "00_welcome.ipynb")
    reset_exercise(tmp_path / "00_welcome.ipynb", nbio.exercise_of(check), ROOT / "solutions")
    again = next(c for c in nbio.read(tmp_path / "00_welcome.ipynb").cells if c.id == check.id)
    assert RAISES_EXCEPTION in nbio.tags(again)
