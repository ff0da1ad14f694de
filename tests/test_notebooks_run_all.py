"""Run All on every fresh learner notebook gets to the end (in a file of its own, so the test runner can put
these slow runs on another worker than test_notebooks.py's grading run)."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from course import notebook as nbio

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted(p for p in (ROOT / "solutions").glob("*.ipynb") if not p.name.startswith("."))
NOTEBOOKS = ROOT / "notebooks"
params = pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)


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
    nb.cells.insert(0, nbformat.v4.new_code_cell(HIDE_PYTORCH, id="hide-pytorch"))
    NotebookClient(nb, timeout=300, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    errors = [(c, next(o for o in c.outputs if o.output_type == "error")) for c in nb.cells
              if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)]
    broken = [f"{c.id}: {e.ename}: {e.evalue}" for c, e in errors if not nbio.is_check(c)]
    assert not broken, f"cells other than checks raised in {path.name}: {broken}"
    checks = nbio.check_cells(nb)
    assert {c.id: e.ename for c, e in errors} == {c.id: "NotAttempted" for c in checks}
