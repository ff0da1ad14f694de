"""Every solutions/*.ipynb and its generated notebooks/ copy follow the course's rules."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from course import notebook as nbio
from course.build import read_source, solutions_notebook, source_text
from course.checks import get_exercise
from course.grader import NOT_ATTEMPTED, PASS, grade_many
from course.paths import chapter_dirs
from course.student import make_student, student_notebook

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted(p for p in (ROOT / "solutions").glob("*.ipynb") if not p.name.startswith("."))
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = ROOT / "chapters"
RANDOM_ID = re.compile(r"^[0-9a-f]{8}(-[0-9a-f]{4}){0,4}([0-9a-f]{8})?$")  # what Jupyter generates

params = pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])


def test_there_are_solutions():
    assert SOLUTIONS


@params
def test_format_45_and_canonical(path):
    nb = nbio.read(path)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5)
    nbformat.validate(nb)
    assert path.read_text(encoding="utf-8") == nbio.dumps(nb), (
        "not written canonically: rewrite with `course execute` (or the chapter's build script)")
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@params
def test_unique_readable_ids(path):
    ids = [c.get("id") for c in nbio.read(path).cells]
    assert len(ids) == len(set(ids)), "duplicate cell ids"
    for cid in ids:
        assert nbio.CELL_ID_PATTERN.match(cid)
        assert not RANDOM_ID.match(cid) and re.search(r"[a-z]{2}", cid), f"cell id {cid!r} is not readable"


@params
def test_outputs_only_on_check_cells_and_no_errors(path):
    for cell in nbio.read(path).cells:
        if cell.cell_type != "code":
            continue
        if nbio.is_check(cell):
            assert cell.outputs, f"check cell {cell.id} has no stored output: run `course execute`"
            assert cell.execution_count is not None, "nbval skips outputs of cells with no execution count"
            assert all(o.output_type == "stream" and o.name == "stdout" for o in cell.outputs), cell.id
            text = "".join(o.text for o in cell.outputs)
            assert re.fullmatch(r"✓ \d\d\.\d+ .+: (\d+)/\1 cases\n", text), text
            assert not re.search(r"0x[0-9a-f]{6,}|/tmp/|\d+\.\d+ ?(s|ms|µs)\b", text)
        else:
            assert cell.outputs == [] and cell.execution_count is None, f"cell {cell.id} has stored output"


@params
def test_no_widget_state(path):
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in raw["metadata"]
    assert "application/vnd.jupyter.widget-state+json" not in path.read_text(encoding="utf-8")


@params
def test_every_exercise_has_a_solution_and_a_check_cell(path):
    nb = nbio.read(path)
    chapter = path.name[:2]
    checks = nbio.check_cells(nb)
    assert checks, "no exercises"
    exercises = [nbio.exercise_of(c) for c in checks]
    assert len(exercises) == len(set(exercises)), "an exercise has two check cells"
    solutions = {nbio.exercise_of(c) for c in nb.cells if nbio.is_solution(c)}
    assert solutions == set(exercises)
    for c in nb.cells:
        if nbio.is_solution(c):
            assert nbio.BEGIN_SOLUTION in c.source and nbio.END_SOLUTION in c.source, c.id
    for c in checks:
        ex = nbio.exercise_of(c)
        assert ex.startswith(chapter + ".")
        call = ast.parse(c.source).body
        assert len(call) == 1 and c.source == f'check("{ex}", {call[0].value.args[1].id})', c.source
        assert set(nbio.tags(c)) == {"check", "nbval-check-output"}
        assert c.metadata["grading"]["points"] == get_exercise(ex).points
        # the check comes after the exercise's solution cells
        ids = [x.id for x in nb.cells]
        sol_pos = [ids.index(x.id) for x in nb.cells if nbio.is_solution(x) and nbio.exercise_of(x) == ex]
        assert max(sol_pos) < ids.index(c.id)


def test_notebooks_in_sync_with_solutions():
    assert make_student(ROOT / "solutions", NOTEBOOKS, check=True) == [], "run `course make-student`"


@params
def test_learner_notebook_has_no_answers(path):
    learner = nbio.read(NOTEBOOKS / path.name)
    assert learner == student_notebook(nbio.read(path))
    for c in learner.cells:
        assert nbio.BEGIN_SOLUTION not in c.get("source", "")
        assert c.get("outputs", []) == []


def test_every_solutions_notebook_has_a_chapter_source():
    assert {f"{d.name}.ipynb" for d in chapter_dirs(CHAPTERS).values()} == {p.name for p in SOLUTIONS}


@params
def test_chapter_source_builds_the_solutions_notebook(path):
    """solutions/NN_name.ipynb is what `course build` makes of chapters/NN_name/notebook.py."""
    stored = nbio.read(path)
    built = solutions_notebook(CHAPTERS / path.stem, stored)
    strip = lambda c: {k: v for k, v in c.items() if k not in ("outputs", "execution_count")}  # noqa: E731
    assert [strip(c) for c in stored.cells] == [strip(c) for c in built.cells], (
        f"solutions/{path.name} and chapters/{path.stem}/notebook.py differ: run `course build`, "
        "then `course execute` and `course make-student`")
    assert nbio.dumps(built) == path.read_text(encoding="utf-8"), "run `course build`"


@params
def test_chapter_source_round_trips(path, tmp_path):
    """Writing a chapter source's cells back in the percent format loses nothing (ids, roles, code, prose)."""
    title, cells = read_source(CHAPTERS / path.stem / "notebook.py")
    copy = tmp_path / "notebook.py"
    copy.write_text(source_text(title, cells), encoding="utf-8")
    assert read_source(copy) == (title, cells)


@pytest.mark.slow
def test_solutions_pass_and_learner_notebooks_fail_the_grader():
    """Every solutions notebook passes under the grader. The learner notebooks graded here are those that Run
    All (test_notebooks_run_all.py) leaves out: Run All already runs the others' learner notebooks, and
    test_checks.py runs every check on its unfilled stub."""
    from test_notebooks_run_all import RUN_ALL  # tests/ is on sys.path

    learner = [NOTEBOOKS / p.name for p in SOLUTIONS if p not in RUN_ALL]
    assert learner, "every chapter is in Run All: grade at least one learner notebook here"
    paths = SOLUTIONS + learner
    results = grade_many(paths, ROOT / "solutions", timeout=60, jobs=2)
    for res in results[: len(SOLUTIONS)]:
        assert res.error is None, res.error
        bad = [(e.exercise, e.status, e.message) for e in res.exercises if e.status != PASS]
        assert not bad and res.passed, f"{res.path}: {bad}"
        assert res.notes == [], res.notes
    for res in results[len(SOLUTIONS):]:
        assert res.error is None, res.error
        leaked = [e.exercise for e in res.exercises if e.status != NOT_ATTEMPTED]
        assert not leaked, f"{res.path}: these checks did not report NOT ATTEMPTED: {leaked}"
        # no other cell fails: a demo that needs an unfinished exercise says so in one line, or falls back
        # on the reference (chapter 04's figure)
        assert res.notes == [], f"{res.path}: {res.notes}"


@params
def test_task_text_names_every_forbidden_call(path):
    """Every function an exercise's check forbids is named, in backticks, in the markdown above its solution:
    a learner never meets a rule the task did not state."""
    missing, task, seen = [], "", set()
    for cell in nbio.read(path).cells:
        if cell.cell_type == "markdown":
            task = cell.source
        elif nbio.is_solution(cell) and (ex := nbio.exercise_of(cell)) not in seen:
            seen.add(ex)
            for shown, fn in get_exercise(ex).forbid.items():
                name = getattr(fn, "__name__", shown.rsplit(".", 1)[-1])
                if not re.search(rf"`[^`\n]*(?<!\w){re.escape(name)}(?!\w)[^`\n]*`", task):
                    missing.append(f"{ex}: {shown}")
    assert not missing, missing


@params
def test_demo_cells_do_not_rebind_solution_names(path):
    """A demo cell that assigns a name a solution cell defines replaces the learner's answer when it is re-run
    (and a later exercise that calls that answer then calls the demo's value)."""
    sol, other = {}, []
    for c in nbio.read(path).cells:
        if c.cell_type != "code":
            continue
        tree = ast.parse(c.source)
        tops = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if nbio.is_solution(c):
            sol.update(dict.fromkeys(tops, c.id))
        else:
            other.append((c.id, bound | tops))
    hits = [(cid, n, sol[n]) for cid, names in other for n in sorted(names & set(sol))]
    assert not hits, hits
