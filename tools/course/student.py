"""Learner notebooks from solution notebooks: ``course make-student`` and ``course reset``."""
from __future__ import annotations

import copy
from pathlib import Path

from nbformat import NotebookNode

from . import notebook as nbio
from .notebook import BEGIN_SOLUTION, END_SOLUTION
from .paths import CourseError, chapter_of_name

STUB_LINES = ("# YOUR CODE HERE", "raise NotImplementedError()")


# ------------------------------------------------------------------ paths


def solution_for(path: Path, solutions_dir: Path) -> Path:
    """The solutions notebook a learner's notebook is graded against."""
    exact = solutions_dir / path.name
    if exact.is_file():
        return exact
    chapter = chapter_of_name(path.name)
    if chapter is not None:
        found = sorted(solutions_dir.glob(f"{chapter}_*.ipynb"))
        if len(found) == 1:
            return found[0]
    known = ", ".join(p.name for p in sorted(solutions_dir.glob("*.ipynb"))) or "none"
    raise CourseError(
        f"{path.name}: no solutions notebook for it in {solutions_dir} "
        f"(file names must start with the chapter number, like 03_autograd.ipynb; known: {known})"
    )


# ------------------------------------------------------------------ stubs


def stub_source(source: str) -> str:
    """Replace every BEGIN/END SOLUTION region by the stub at the region's indentation."""
    out: list[str] = []
    inside = False
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped.startswith(BEGIN_SOLUTION):
            if inside:
                raise CourseError(f"nested '{BEGIN_SOLUTION}' in:\n{source}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + s for s in STUB_LINES)
        elif stripped.startswith(END_SOLUTION):
            if not inside:
                raise CourseError(f"'{END_SOLUTION}' without '{BEGIN_SOLUTION}' in:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise CourseError(f"'{BEGIN_SOLUTION}' without '{END_SOLUTION}' in:\n{source}")
    return "\n".join(out)


#: the tag that makes JupyterLab (and nbval) go on after a cell that raises: a check cell of an unfinished
#: exercise raises NotAttempted, and without it Run All would stop there, at the first exercise
RAISES_EXCEPTION = "raises-exception"


def student_cell(cell: NotebookNode) -> NotebookNode:
    """The learner's version of one solutions cell: stubbed, no outputs; a check cell may raise."""
    cell = copy.deepcopy(cell)
    if cell.cell_type == "code":
        cell.source = stub_source(cell.source)
        cell.outputs = []
        cell.execution_count = None
        if nbio.is_check(cell) and RAISES_EXCEPTION not in nbio.tags(cell):
            cell.metadata["tags"] = [*nbio.tags(cell), RAISES_EXCEPTION]
    return cell


def student_notebook(solution_nb: NotebookNode) -> NotebookNode:
    nb = copy.deepcopy(solution_nb)
    nb.cells = [student_cell(c) for c in nb.cells]
    nb.metadata.pop("widgets", None)
    return nb


def make_student(solutions_dir: Path, notebooks_dir: Path, check: bool = False) -> list[str]:
    """Write notebooks_dir/*.ipynb from solutions_dir/*.ipynb.

    With `check`, write nothing and return the names that are out of date
    (or missing, or without a solutions notebook). Otherwise return the names written.
    """
    # Hidden files are not chapters (editors' and older graders' temporary copies).
    sources = sorted(p for p in solutions_dir.glob("*.ipynb") if not p.name.startswith("."))
    if not sources:
        raise CourseError(f"no notebooks in {solutions_dir}")
    changed: list[str] = []
    for src in sources:
        text = nbio.dumps(student_notebook(nbio.read(src)))
        dst = notebooks_dir / src.name
        current = dst.read_text(encoding="utf-8") if dst.is_file() else None
        if current != text:
            changed.append(src.name if current is not None else f"{src.name} (missing)")
            if not check:
                notebooks_dir.mkdir(parents=True, exist_ok=True)
                dst.write_text(text, encoding="utf-8")
    if check:
        names = {p.name for p in sources}
        # (hidden files: the grader's temporary *.graded.ipynb copies)
        changed += [f"{p.name} (no solutions notebook)" for p in sorted(notebooks_dir.glob("*.ipynb"))
                    if p.name not in names and not p.name.startswith(".")]
    return changed


# ------------------------------------------------------------------ reset


def reset_exercise(path: Path, exercise: str, solutions_dir: Path) -> list[str]:
    """Put exercise `exercise` of the learner notebook `path` back to its stub.

    Only the exercise's solution and check cells are touched (matched by id,
    then by metadata.grading.exercise; missing ones are re-inserted). Returns
    a description of what was done.
    """
    ref = nbio.read(solution_for(path, solutions_dir))
    ref_cells = [c for c in ref.cells if nbio.exercise_of(c) == exercise and (nbio.is_solution(c) or nbio.is_check(c))]
    if not ref_cells:
        known = ", ".join(nbio.exercises(ref))
        raise CourseError(f"{path.name} has no exercise {exercise} (its exercises: {known})")
    try:
        nb = nbio.read(path)
    except Exception as e:  # noqa: BLE001 - any unreadable notebook
        raise CourseError(f"cannot read {path}: {e}") from None
    done: list[str] = []
    ref_ids = [c.get("id") for c in ref.cells]
    for rc in ref_cells:
        new = student_cell(rc)
        kind = "check" if nbio.is_check(rc) else "solution"
        idx = next((i for i, c in enumerate(nb.cells) if c.get("id") == rc.id), None)
        if idx is None:
            idx = next((i for i, c in enumerate(nb.cells)
                        if nbio.exercise_of(c) == exercise and kind in nbio.tags(c)), None)
        if idx is not None:
            if "id" in nb.cells[idx]:
                new.id = nb.cells[idx].id
            else:
                new.pop("id", None)
            nb.cells[idx] = new
            done.append(f"reset the {kind} cell")
        else:
            # re-insert after the nearest earlier cell of the solutions notebook
            pos = len(nb.cells)
            for prev in reversed(ref_ids[: ref_ids.index(rc.id)]):
                j = next((i for i, c in enumerate(nb.cells) if c.get("id") == prev), None)
                if j is not None:
                    pos = j + 1
                    break
            if nb.nbformat_minor < 5:
                new.pop("id", None)
            nb.cells.insert(pos, new)
            done.append(f"restored the deleted {kind} cell")
    nbio.save(nb, path)
    return done
