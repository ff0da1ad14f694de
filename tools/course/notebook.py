"""Building, reading and writing course notebooks the same way everywhere.

The cell builders enforce the course's rules (fixed readable ids, solution
regions, one-line check cells); ``course build`` (:mod:`course.build`) makes every
cell of a chapter source with them::

    from course.notebook import md, code, solution, check_cell, write_notebook

    cells = [
        md("# 03 Autograd", id="intro"),
        code("from course import check", id="setup"),
        solution("03.2", '''def backward(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION''', id="ex-03-2-solution"),
        check_cell("03.2", "backward", points=2, id="ex-03-2-check"),
    ]
    write_notebook("solutions/03_autograd.ipynb", cells, title="Autograd")

Every notebook written here is nbformat 4.5 with readable, fixed cell ids and
is serialised byte for byte the same way each time (sorted keys, one-space
indent, trailing newline), so regenerating a notebook never makes a diff.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import nbformat
from nbformat import NotebookNode

#: nbformat 4.5's pattern for cell ids.
CELL_ID_PATTERN = re.compile(r"^[a-zA-Z0-9-_]{1,64}$")

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


class NotebookFormatError(ValueError):
    """A notebook (or a list of cells) breaks the course's notebook rules."""


def _check_id(id: str) -> str:
    if not isinstance(id, str) or not CELL_ID_PATTERN.match(id):
        raise NotebookFormatError(
            f"cell id {id!r} is not valid: use 1-64 characters from a-z A-Z 0-9 - _ "
            "(for example 'ex-01-2-check')"
        )
    return id


def _source(source: str) -> str:
    # Authors write sources as triple-quoted strings: drop one leading and
    # trailing newline so cells do not start or end with an empty line.
    if source.startswith("\n"):
        source = source[1:]
    return source.rstrip("\n")


def md(source: str, id: str) -> NotebookNode:
    """A markdown cell."""
    return nbformat.v4.new_markdown_cell(_source(source), id=_check_id(id))


def code(source: str, id: str, tags: Iterable[str] = (), grader_runs: str | None = None) -> NotebookNode:
    """A plain code cell (its output is never stored).

    ``grader_runs``: the source ``course grade`` runs instead of this cell, for an optional cell
    that only costs time when grading (importing PyTorch for a comparison, say).  It must leave
    behind whatever later cells use (``torch = None``).  The grader reads it from solutions/, so a
    learner's copy cannot change it.
    """
    cell = nbformat.v4.new_code_cell(_source(source), id=_check_id(id))
    if tags:
        cell.metadata["tags"] = list(tags)
    if grader_runs is not None:
        cell.metadata["grader"] = {"runs_instead": _source(grader_runs)}
    return cell


def grader_replacement(cell) -> str | None:
    """The source the grader runs instead of this cell (see ``code(grader_runs=...)``), if any."""
    g = cell.get("metadata", {}).get("grader")
    if isinstance(g, dict) and isinstance(g.get("runs_instead"), str):
        return g["runs_instead"]
    return None


def solution(exercise: str, source: str, id: str) -> NotebookNode:
    """A solution cell of `exercise`: the answer goes between the markers.

    ``### BEGIN SOLUTION`` / ``### END SOLUTION`` regions are replaced by
    ``# YOUR CODE HERE`` + ``raise NotImplementedError()`` in the learner's
    notebook (see :func:`course.student.stub_source`).
    """
    src = _source(source)
    if BEGIN_SOLUTION not in src or END_SOLUTION not in src:
        raise NotebookFormatError(
            f"solution cell {id!r} of exercise {exercise} has no "
            f"'{BEGIN_SOLUTION}' ... '{END_SOLUTION}' region: the answer would leak "
            "into the learner's notebook"
        )
    cell = nbformat.v4.new_code_cell(src, id=_check_id(id))
    cell.metadata["tags"] = ["solution"]
    cell.metadata["grading"] = {"exercise": _check_exercise(exercise)}
    return cell


def check_cell(exercise: str, obj: str, points: int, id: str) -> NotebookNode:
    """The check cell of `exercise`: exactly ``check("NN.M", obj)``.

    `obj` is the name of the learner's object (a function or class) that the
    check is run against.
    """
    if not obj.isidentifier():
        raise NotebookFormatError(f"check cell {id!r}: {obj!r} is not a Python name")
    if not isinstance(points, int) or points <= 0:
        raise NotebookFormatError(f"check cell {id!r}: points must be a positive int")
    cell = nbformat.v4.new_code_cell(check_source(exercise, obj), id=_check_id(id))
    cell.metadata["tags"] = ["check", "nbval-check-output"]
    cell.metadata["grading"] = {"exercise": _check_exercise(exercise), "points": points}
    return cell


def check_source(exercise: str, obj: str) -> str:
    return f'check("{exercise}", {obj})'


_EXERCISE = re.compile(r"^\d\d\.\d+$")


def _check_exercise(exercise: str) -> str:
    if not isinstance(exercise, str) or not _EXERCISE.match(exercise):
        raise NotebookFormatError(f"exercise id {exercise!r} must look like '03.2'")
    return exercise


def new_notebook(cells: list[NotebookNode], title: str, chapter: str | None = None) -> NotebookNode:
    """A notebook with the course's fixed metadata; validates the cells."""
    ids = [c.get("id") for c in cells]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise NotebookFormatError(f"duplicate cell ids: {', '.join(dup)}")
    for c in cells:
        _check_id(c.get("id"))
    nb = nbformat.v4.new_notebook()
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.cells = list(cells)
    nb.metadata = NotebookNode(
        {
            "kernelspec": dict(KERNELSPEC),
            "language_info": {"name": "python"},
            "course": {"title": title},
        }
    )
    if chapter is not None:
        nb.metadata["course"]["chapter"] = chapter
    return nb


def write_notebook(path: str | Path, cells: list[NotebookNode], title: str, chapter: str | None = None) -> Path:
    """Write `cells` as a deterministic nbformat 4.5 notebook at `path`.

    The chapter ("03") defaults to the two digits the file name starts with.
    """
    path = Path(path)
    if chapter is None:
        m = re.match(r"^(\d\d)_", path.name)
        chapter = m.group(1) if m else None
    nb = new_notebook(cells, title, chapter)
    save(nb, path)
    return path


def dumps(nb: NotebookNode) -> str:
    """Serialise like Jupyter does (sorted keys, indent 1), plus a trailing newline.

    Validates first, so a malformed notebook is never written.
    """
    nbformat.validate(nb)
    return nbformat.writes(nb, version=4) + "\n"


def save(nb: NotebookNode, path: str | Path) -> None:
    """Write `nb` to `path` (only if the bytes change, so mtimes stay put)."""
    path = Path(path)
    text = dumps(nb)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def read(path: str | Path) -> NotebookNode:
    """Read a notebook as nbformat 4 (multi-line strings joined)."""
    return nbformat.read(str(path), as_version=4)


def _metadata(cell) -> dict:
    md = cell.get("metadata")
    return md if isinstance(md, dict) else {}


def tags(cell) -> list[str]:
    """The cell's tags; a learner's file may hold a single tag as a string (or junk): never a crash."""
    raw = _metadata(cell).get("tags")
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, (list, tuple)):
        return [t for t in raw if isinstance(t, str)]
    return []


def exercise_of(cell) -> str | None:
    g = _metadata(cell).get("grading")
    ex = g.get("exercise") if isinstance(g, dict) else None
    return ex if isinstance(ex, str) else None


def is_check(cell) -> bool:
    return cell.get("cell_type") == "code" and "check" in tags(cell) and exercise_of(cell) is not None


def is_solution(cell) -> bool:
    return cell.get("cell_type") == "code" and "solution" in tags(cell) and exercise_of(cell) is not None


def check_cells(nb) -> list:
    return [c for c in nb.cells if is_check(c)]


def exercises(nb) -> list[str]:
    """Exercise ids of a notebook, in the order of their check cells."""
    return [exercise_of(c) for c in check_cells(nb)]
