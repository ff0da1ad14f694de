"""Run All on every fresh learner notebook gets to the end (in a file of its own, so the test runner can put
these slow runs on another worker than test_notebooks.py's grading run).

A chapter whose cells all run the same under ``course grade`` (no ``grader_runs=`` replacement, no
``import torch``) is left out: test_notebooks.py grades its learner notebook, which runs the same cells
in a kernel and fails on any cell other than a check that raises. A cell tagged ``long`` (a full
training run: minutes) runs its ``grader_runs=`` replacement here too.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course import notebook as nbio

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted(p for p in (ROOT / "solutions").glob("*.ipynb") if not p.name.startswith("."))
NOTEBOOKS = ROOT / "notebooks"
_TORCH_IMPORT = re.compile(r"^\s*(import torch|from torch\b)|find_spec\([\'\"]torch", re.M)


def _runs_differently_when_graded(path: Path) -> bool:
    """A cell the grader replaces, or one that imports PyTorch (the grader's kernel may have it)."""
    return any(c.cell_type == "code" and (nbio.grader_replacement(c) is not None or _TORCH_IMPORT.search(c.source))
               for c in nbio.read(path).cells)


RUN_ALL = [p for p in SOLUTIONS if _runs_differently_when_graded(p)]
params = pytest.mark.parametrize("path", RUN_ALL, ids=lambda p: p.stem)


#: run first in the kernel of the test below: PyTorch looks absent, as on a learner's machine without it
HIDE_PYTORCH = 'import sys\nsys.modules["torch"] = None  # `import torch` raises ImportError; find_spec gives None'


@pytest.mark.slow
@params
def test_run_all_on_a_fresh_learner_notebook(path):
    """Run All on a learner notebook, nothing filled in and PyTorch absent, gets to the end: every demo and
    figure runs (one that needs an unfinished exercise prints a line saying so), and the only errors are the
    check cells' NotAttempted."""
    from nbclient import NotebookClient

    nb = nbio.read(NOTEBOOKS / path.name)
    shortened = {c.id: nbio.grader_replacement(c) for c in nbio.read(path).cells if "long" in nbio.tags(c)}
    for c in nb.cells:
        if c.id in shortened:
            c.source = shortened[c.id]
    nb.cells.insert(0, nbformat.v4.new_code_cell(HIDE_PYTORCH, id="hide-pytorch"))
    NotebookClient(nb, timeout=300, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    errors = [(c, next(o for o in c.outputs if o.output_type == "error")) for c in nb.cells
              if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)]
    broken = [f"{c.id}: {e.ename}: {e.evalue}" for c, e in errors if not nbio.is_check(c)]
    assert not broken, f"cells other than checks raised in {path.name}: {broken}"
    checks = nbio.check_cells(nb)
    assert {c.id: e.ename for c, e in errors} == {c.id: "NotAttempted" for c in checks}


def test_long_cells_have_a_shorter_version():
    """A cell tagged ``long`` says what runs in its place under the grader and in Run All above."""
    bad = [f"{p.stem}: {c.id}" for p in SOLUTIONS for c in nbio.read(p).cells
           if "long" in nbio.tags(c) and not nbio.grader_replacement(c)]
    assert not bad, bad

