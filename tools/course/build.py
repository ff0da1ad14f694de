"""``course build``: chapter sources -> solutions notebooks.

A chapter's source is ``chapters/NN_name/notebook.py`` in jupytext's percent format: code
cells are real code, markdown cells are comments, and every cell header carries the cell's
fixed id and its role::

    # %% [markdown] id="ex-03-2-task"
    # %% id="ex-03-2-solution" tags=["solution"] exercise="03.2"
    # %% id="ex-03-2-check" tags=["check", "nbval-check-output"] exercise="03.2" points=2
    # %% id="measure-torch" grader_runs="torch = None"

The file's YAML header holds the notebook's title (``jupyter: course: title:``); the chapter
number comes from the folder's name. Building validates every cell with the helpers of
:mod:`.notebook` and writes ``solutions/NN_name.ipynb``, keeping the output stored there for
each check cell whose source did not change (``course execute`` refreshes them).
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from . import notebook as nbio
from .notebook import NotebookFormatError
from .paths import CourseError, chapter_dirs

#: the keys a cell header may carry
HEADER_KEYS = ("id", "tags", "exercise", "points", "grader_runs")
#: jupytext's own layout hints (blank lines around a cell), ignored
LAYOUT_KEYS = ("cell_marker", "lines_to_next_cell", "lines_to_end_of_cell_marker")
FORMAT = "py:percent"
_CHECK_CALL = re.compile(r'check\("([^"]*)", ([A-Za-z_]\w*)\)')


def _header(cell: NotebookNode) -> dict:
    """The header keys of one notebook cell (the inverse of :func:`_cell`)."""
    header: dict = {"id": cell.id}
    md = cell.get("metadata", {})
    if md.get("tags"):
        header["tags"] = list(md["tags"])
    grading = md.get("grading")
    if grading:
        header["exercise"] = grading["exercise"]
        if "points" in grading:
            header["points"] = grading["points"]
    if nbio.grader_replacement(cell) is not None:
        header["grader_runs"] = nbio.grader_replacement(cell)
    unknown = sorted(set(md) - {"tags", "grading", "grader"})
    if unknown:
        raise NotebookFormatError(f"cell {cell.id!r}: metadata {unknown} has no place in a chapter source")
    return header


def source_text(title: str, cells: list[NotebookNode]) -> str:
    """The percent-format source of a notebook with `title` and `cells`."""
    import jupytext

    nb = nbformat.v4.new_notebook()
    nb.metadata = NotebookNode({"course": {"title": title},
                                "jupytext": {"notebook_metadata_filter": "course,-all"}})
    for c in cells:
        jc = copy.deepcopy(c)
        jc.metadata = NotebookNode(_header(c))
        jc.pop("id", None)
        nb.cells.append(jc)
    return jupytext.writes(nb, fmt=FORMAT)


def _cell(jc: NotebookNode, where: str) -> NotebookNode:
    """One cell read from a source file, validated and given its notebook metadata."""
    header = {k: v for k, v in jc.metadata.items() if k not in LAYOUT_KEYS}
    cid = header.get("id")
    where = f"{where}: cell {cid!r}" if cid else f"{where}: a cell without id=... in its header"
    unknown = sorted(set(header) - set(HEADER_KEYS))
    if unknown:
        raise NotebookFormatError(f"{where}: unknown header keys {unknown} (known: {', '.join(HEADER_KEYS)})")
    if cid is None:
        raise NotebookFormatError(where)
    tags = header.get("tags", [])
    if jc.cell_type == "markdown":
        if set(header) != {"id"}:
            raise NotebookFormatError(f"{where}: a markdown cell's header has only an id")
        return nbio.md(jc.source, cid)
    if jc.cell_type != "code":
        raise NotebookFormatError(f"{where}: only code and markdown cells, not {jc.cell_type}")
    if "solution" in tags:
        allowed = {"id", "tags", "exercise"}
        cell = nbio.solution(header.get("exercise"), jc.source, cid)
    elif "check" in tags:
        allowed = {"id", "tags", "exercise", "points"}
        m = _CHECK_CALL.fullmatch(jc.source.strip())
        if not m or m.group(1) != header.get("exercise"):
            raise NotebookFormatError(
                f'{where}: a check cell is exactly check("{header.get("exercise")}", name_of_your_object)')
        cell = nbio.check_cell(m.group(1), m.group(2), header.get("points"), cid)
    else:
        allowed = {"id", "tags", "grader_runs"}
        cell = nbio.code(jc.source, cid, tags=tags, grader_runs=header.get("grader_runs"))
    if set(header) - allowed:
        raise NotebookFormatError(f"{where}: {sorted(set(header) - allowed)} do not belong to this kind of cell")
    if nbio.tags(cell) != list(tags):
        raise NotebookFormatError(f"{where}: its tags must be {nbio.tags(cell)}")
    if cell.source != jc.source:
        raise NotebookFormatError(f"{where}: starts or ends with an empty line")
    return cell


def read_source(path: str | Path) -> tuple[str, list[NotebookNode]]:
    """(title, cells) of a chapter source, every cell validated."""
    import jupytext

    path = Path(path)
    try:
        jnb = jupytext.read(path, fmt=FORMAT)
    except OSError as e:
        raise CourseError(f"{path}: cannot read it ({e})") from None
    course = jnb.metadata.get("course")
    title = course.get("title") if isinstance(course, dict) else None
    if not isinstance(title, str) or not title:
        raise CourseError(f"{path}: the header must give the title:\n"
                          "# ---\n# jupyter:\n#   course:\n#     title: ...\n# ---")
    try:
        return title, [_cell(c, str(path)) for c in jnb.cells]
    except NotebookFormatError as e:
        raise CourseError(str(e)) from None


def solutions_notebook(folder: Path, stored: NotebookNode | None = None) -> NotebookNode:
    """The solutions notebook of chapter `folder`, with the check outputs of `stored` kept.

    A check cell keeps its stored output if `stored` has a check cell with the same id and
    source; its execution count is its position among the code cells, as ``course execute``
    numbers it.
    """
    title, cells = read_source(folder / "notebook.py")
    try:
        nb = nbio.new_notebook(cells, title, chapter=folder.name[:2])
    except NotebookFormatError as e:
        raise CourseError(f"{folder / 'notebook.py'}: {e}") from None
    old = {c.get("id"): c for c in stored.cells if nbio.is_check(c)} if stored is not None else {}
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        count += 1
        before = old.get(cell.id)
        if nbio.is_check(cell) and before is not None and before.source == cell.source and before.outputs:
            cell.outputs = copy.deepcopy(before.outputs)
            cell.execution_count = count
    return nb


def build(chapters: Path, solutions: Path, only: list[str] | None = None, check: bool = False) -> list[str]:
    """Write ``solutions/NN_name.ipynb`` from each ``chapters/NN_name/notebook.py``.

    `only` names chapters ("03"). Returns the names written; with `check`, writes nothing and
    returns the names that are out of date (or missing).
    """
    dirs = {n: d for n, d in chapter_dirs(chapters).items() if (d / "notebook.py").is_file()}
    if not dirs:
        raise CourseError(f"no chapter sources in {chapters} (folders NN_name with a notebook.py)")
    wanted = list(dirs) if not only else [c.zfill(2) for c in only]
    missing = [c for c in wanted if c not in dirs]
    if missing:
        raise CourseError(f"no chapter {', '.join(missing)} in {chapters} (there are {', '.join(dirs)})")
    changed = []
    for chapter in wanted:
        target = solutions / f"{dirs[chapter].name}.ipynb"
        stored = nbio.read(target) if target.is_file() else None
        text = nbio.dumps(solutions_notebook(dirs[chapter], stored))
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if text != current:
            changed.append(target.name if current is not None else f"{target.name} (missing)")
            if not check:
                solutions.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
    return changed
