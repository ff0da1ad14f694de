"""``course release DIR``: the course as students get it, without the answers.

Written into DIR:

- ``notebooks/``: the learner notebooks (every solution region stubbed, no outputs), generated
  from solutions/ as ``course make-student`` does, and the data files beside them;
- ``key/``: what the grader needs from solutions/: the same stubbed notebooks, but with the check
  cells' stored outputs (and execution counts) kept. ``course grade`` finds ``key/`` where a full
  course has ``solutions/``;
- ``chapters/NN_name/checks.py``: the checks (never a chapter's ``notebook.py`` source, which holds
  the solutions, nor its ``wrong_answers.py``);
- ``course_lib/``, ``tools/`` (the ``course`` package with the grader), ``pyproject.toml``,
  ``README.md``, ``Makefile`` and ``environment.yml``, so that ``make course`` works there.

Work graded from a release is graded the same as with the full course: the cell ids, check
cells and stored outputs are the same, and an instructor's full course grades students who only
had the release.
"""
from __future__ import annotations

import copy
from pathlib import Path

from . import notebook as nbio
from ._isolation import FileSnapshot, package_dir
from .notebook import BEGIN_SOLUTION
from .paths import CourseError, chapter_dirs
from .student import student_notebook

#: files at the top of the course a release carries (those that exist)
TOP_FILES = ("README.md", "Makefile", "pyproject.toml", "environment.yml", "LICENSE")


def key_notebook(solution_nb):
    """A solutions notebook with every solution region stubbed; check cells keep their stored outputs."""
    key = student_notebook(solution_nb)
    stored = {c.get("id"): c for c in solution_nb.cells if nbio.is_check(c)}
    for cell in key.cells:
        if cell.get("id") in stored:
            cell.outputs = copy.deepcopy(stored[cell.id].outputs)
            cell.execution_count = stored[cell.id].execution_count
    return key


def _leaks(text: str) -> bool:
    return BEGIN_SOLUTION in text


def release(dest: Path, solutions_dir: Path) -> list[str]:
    """Write the release of the course whose answer key is `solutions_dir` into `dest`; the files written."""
    solutions_dir = Path(solutions_dir).resolve()
    root = solutions_dir.parent
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise CourseError(f"{dest}: not an empty folder; give a new or empty one")
    sources = sorted(p for p in solutions_dir.glob("*.ipynb") if not p.name.startswith("."))
    if not sources:
        raise CourseError(f"no notebooks in {solutions_dir}")
    course_pkg = Path(__file__).resolve().parent
    course_lib = package_dir("course_lib")
    if course_lib is None:
        raise CourseError("course_lib is not installed in this Python")

    written: list[str] = []

    def put(rel: str, text: str) -> None:
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        written.append(rel)

    for src in sources:
        nb = nbio.read(src)
        for folder, made in (("notebooks", student_notebook(nb)), ("key", key_notebook(nb))):
            text = nbio.dumps(made)
            if _leaks(text):
                raise CourseError(f"{src.name}: a solution region survived the stubbing; nothing more written")
            put(f"{folder}/{src.name}", text)
    files = FileSnapshot()
    notebooks = root / "notebooks"
    if notebooks.is_dir():  # data files the chapters read beside the notebooks
        files += FileSnapshot.of(notebooks, lambda p: p.suffix != ".ipynb" and not p.name.startswith("."),
                                 prefix="notebooks")
    for name, folder in chapter_dirs(root / "chapters").items():
        files += FileSnapshot.of(folder, lambda p: p.name not in ("notebook.py", "wrong_answers.py"),
                                 prefix=f"chapters/{folder.name}")
    files += FileSnapshot.of(course_lib, prefix="course_lib")
    files += FileSnapshot.of(course_pkg, prefix="tools/course")
    for name in ("pyproject.toml", "README.md"):
        if (course_pkg.parent / name).is_file():
            files += FileSnapshot.of(course_pkg.parent / name, prefix="tools")
    for name in TOP_FILES:
        if (root / name).is_file():
            files += FileSnapshot.of(root / name)
    files.write(dest)
    written += files.names()
    return written
