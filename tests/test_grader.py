"""The grader on every edge case of issue 2, with notebooks built in tmp dirs.

Grading runs a kernel per notebook, so the notebooks of each group are graded
once per module, in parallel (one notebook per worker), and the tests read the
results.
"""
from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from grading_cases import cases  # tests/ is on sys.path (rootdir-less "prepend" import)

from course import notebook as nbio
from course.build import build, read_source, source_text
from course.grader import ERROR, FAIL, NOT_ATTEMPTED, PASS, TIMEOUT, grade_many, grade_notebook
from course.paths import CourseError
from course.student import make_student, stub_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
JOBS = 2


def _statuses(res):
    return {e.exercise: e.status for e in res.exercises}


@pytest.fixture(scope="module")
def fast(tmp_path_factory):
    paths = cases.write(cases.FAST, tmp_path_factory.mktemp("fast"))
    names = list(paths)
    results = grade_many([paths[n] for n in names], SOLUTIONS, timeout=30, jobs=JOBS)
    return {n: (paths[n], r) for n, r in zip(names, results)}


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    paths = cases.write(cases.TIMEOUTS, tmp_path_factory.mktemp("slow"))
    names = list(paths)
    results = grade_many([paths[n] for n in names], SOLUTIONS, timeout=3, jobs=JOBS)
    return {n: (paths[n], r) for n, r in zip(names, results)}


def _no_leftovers(path: Path):
    left = [p.name for p in path.parent.iterdir() if p.name != path.name]
    assert not left, f"grader left files behind: {left}"


def test_correct(fast):
    path, res = fast["correct"]
    assert res.error is None
    assert _statuses(res) == {"00.1": PASS, "00.2": PASS, "00.3": PASS}
    assert res.passed and res.points == res.max_points == 5
    assert res.notes == []
    _no_leftovers(path)


def test_unfilled_is_not_attempted(fast):
    _, res = fast["unfilled"]
    assert set(_statuses(res).values()) == {NOT_ATTEMPTED}
    assert res.points == 0 and not res.passed


def test_wrong_answer_fails_with_the_case(fast):
    _, res = fast["cut_and_pasted_check"]  # 00.1 is answered wrongly there
    assert _statuses(res)["00.1"] == FAIL
    msg = res.exercises[0].message
    assert msg.startswith("✗ 00.1 fizzbuzz: case 10/20 failed")
    assert "expected: 'FizzBuzz'" in msg and "got:      'Fizz'" in msg and "hint:" in msg
    assert "Traceback" not in msg and "File " not in msg  # IPython showed only the message
    assert res.points == 4


def test_wrong_then_saved_compares_with_the_solutions_output(fast):
    _, res = fast["wrong_then_saved"]
    assert _statuses(res)["00.1"] == FAIL


def test_edited_check_cell_is_restored(fast):
    _, res = fast["edited_check"]
    assert _statuses(res)["00.1"] == FAIL
    assert any("00.1" in n and "restored" in n for n in res.notes)


def test_deleted_check_cell_is_put_back(fast):
    _, res = fast["deleted_check"]
    assert _statuses(res) == {"00.1": PASS, "00.2": FAIL, "00.3": FAIL}
    assert "expected: raises ValueError" in res.exercises[1].message
    assert any("00.2" in n and "put back" in n for n in res.notes)


def test_cut_and_pasted_check_cell_is_found_and_moved_after_its_solution(fast):
    _, res = fast["cut_and_pasted_check"]
    # 00.3's check was pasted above its solution cell; run there it would fail
    assert _statuses(res) == {"00.1": FAIL, "00.2": PASS, "00.3": PASS}
    assert res.notes == []


def test_nbformat_44_without_ids(fast):
    _, res = fast["nbformat_44"]
    assert res.error is None and res.passed


def test_syntax_error(fast):
    _, res = fast["deleted_check"]  # 00.3 has a syntax error there
    assert _statuses(res)["00.3"] == FAIL
    assert res.exercises[2].message.startswith("your solution cell raised SyntaxError")


def test_prints_and_failing_scratch_cells_do_not_change_verdicts(fast):
    _, res = fast["nbformat_44"]  # prints in fizzbuzz, a failing cell of the learner's
    assert res.passed
    assert len(res.notes) == 1 and "NameError" in res.notes[0]


def test_invalid_json(fast):
    path, res = fast["invalid_json"]
    assert res.exercises == [] and not res.passed
    assert "invalid JSON at line" in res.error
    _no_leftovers(path)


def test_notebook_of_another_chapter(fast):
    _, res = fast["another_chapter"]
    assert "chapter 01, not of chapter 00" in res.error


def test_missing_file(tmp_path):
    res = grade_notebook(tmp_path / "00_welcome.ipynb", SOLUTIONS)
    assert res.error.endswith("file not found") and not res.passed


def test_unknown_chapter(tmp_path):
    path = tmp_path / "42_unknown.ipynb"
    path.write_text(cases.correct(), encoding="utf-8")
    res = grade_notebook(path, SOLUTIONS)
    assert "no solutions notebook" in res.error


@pytest.mark.slow
def test_infinite_loops_time_out_and_later_exercises_are_graded(slow):
    path, res = slow["infinite_loops"]
    assert _statuses(res) == {"00.1": TIMEOUT, "00.2": PASS, "00.3": TIMEOUT}
    assert "longer than 3 s" in res.exercises[0].message  # the solution cell itself loops
    # the check's probes stop a case at their own time limit, inside the 3 s cell timeout
    assert "time limit of 1 s ran out" in res.exercises[2].message
    _no_leftovers(path)


@pytest.mark.slow
def test_code_swallowing_keyboard_interrupt(slow):
    _, res = slow["swallows_interrupt"]
    assert _statuses(res) == {"00.1": PASS, "00.2": TIMEOUT, "00.3": PASS}
    # the probe's own timer stops it (not a KeyboardInterrupt, which this code would swallow)
    assert "time limit of 1 s ran out" in res.exercises[1].message


@pytest.mark.slow
def test_code_that_prints_forever_and_swallows_interrupt_is_killed(slow):
    _, res = slow["prints_and_swallows"]
    assert _statuses(res) == {"00.1": PASS, "00.2": TIMEOUT, "00.3": PASS}


# ------------------------------------------------------------------ the command line


def _course(*args, cwd=ROOT, timeout=300):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "course", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_cli_grade_json_and_exit_status(tmp_path):
    good = tmp_path / "a" / "00_welcome.ipynb"
    bad = tmp_path / "b" / "00_welcome.ipynb"
    for p, text in ((good, cases.correct()), (bad, cases.invalid_json())):
        p.parent.mkdir()
        p.write_text(text, encoding="utf-8")
    out = _course("grade", "a/00_welcome.ipynb", "--solutions", SOLUTIONS, "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data[0]["passed"] and data[0]["points"] == 5
    assert [e["status"] for e in data[0]["exercises"]] == [PASS] * 3
    out = _course("grade", bad, tmp_path / "missing" / "00_welcome.ipynb", "--solutions", SOLUTIONS, "-n", "2")
    assert out.returncode == 1
    assert "invalid JSON" in out.stdout and "file not found" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_cli_batch_csv(tmp_path):
    batch = tmp_path / "submissions"
    for student, make_notebook in (("alice", cases.correct), ("bob", cases.unfilled), ("carol", cases.invalid_json)):
        (batch / student).mkdir(parents=True)
        (batch / student / "00_welcome.ipynb").write_text(make_notebook(), encoding="utf-8")
    book = tmp_path / "gradebook.csv"
    out = _course("grade", "--batch", batch, "--csv", book, "-n", "auto", "--solutions", SOLUTIONS)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = list(csv.DictReader(book.open(encoding="utf-8")))
    table = {(r["student"], r["exercise"]): (r["status"], r["points"]) for r in rows}
    assert table[("alice", "00.2")] == (PASS, "2")
    assert table[("bob", "00.3")] == (NOT_ATTEMPTED, "0")
    assert table[("carol", "")] == (ERROR, "0")
    assert {r["chapter"] for r in rows if r["student"] != "carol"} == {"00"}


def test_cli_usage_errors_are_messages():
    out = _course("grade")
    assert out.returncode == 2 and "name the notebooks" in out.stderr and "Traceback" not in out.stderr


# ------------------------------------------------------------------ make-student, reset, execute


def test_stub_source_keeps_indentation():
    src = "def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\nz = 2"
    assert stub_source(src) == "def f(x):\n    y = 1\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nz = 2"
    top = "### BEGIN SOLUTION\nx = 1\n### END SOLUTION"
    assert stub_source(top) == "# YOUR CODE HERE\nraise NotImplementedError()"


def test_make_student_check_and_rewrite(tmp_path):
    notebooks = tmp_path / "notebooks"
    missing = [f"{p.name} (missing)" for p in sorted(SOLUTIONS.glob("*.ipynb"))]
    assert make_student(SOLUTIONS, notebooks, check=True) == missing
    written = make_student(SOLUTIONS, notebooks)
    first = {p.name: p.read_bytes() for p in notebooks.glob("*.ipynb")}
    assert written and make_student(SOLUTIONS, notebooks) == []  # byte-identical on rerun
    assert first == {p.name: p.read_bytes() for p in notebooks.glob("*.ipynb")}
    target = notebooks / "00_welcome.ipynb"
    target.write_text(target.read_text(encoding="utf-8").replace("YOUR CODE HERE", "edited"), encoding="utf-8")
    out = _course("make-student", "--check", "--solutions", SOLUTIONS, "--notebooks", notebooks)
    assert out.returncode == 1 and "00_welcome.ipynb" in out.stdout


def test_reset_restores_one_exercise_only(tmp_path):
    path = tmp_path / "00_welcome.ipynb"
    text = cases.deleted_check()  # 00.2 answered wrongly and its check deleted
    path.write_text(text, encoding="utf-8")
    before = nbio.read(path)
    out = _course("reset", path, "00.2", "--solutions", SOLUTIONS)
    assert out.returncode == 0, out.stderr
    after = nbio.read(path)
    learner = nbio.read(ROOT / "notebooks" / "00_welcome.ipynb")
    by_id = {c.id: c for c in after.cells}
    assert by_id["ex-00-2-solution"].source == next(c for c in learner.cells if c.id == "ex-00-2-solution").source
    assert "ex-00-2-check" in by_id, "the deleted check cell is back"
    ids = [c.id for c in after.cells]
    assert ids.index("ex-00-2-check") == ids.index("ex-00-2-solution") + 1
    for c in before.cells:  # everything else untouched
        if c.id not in ("ex-00-2-solution",):
            assert by_id[c.id] == c
    out = _course("reset", path, "00.9", "--solutions", SOLUTIONS)
    assert out.returncode == 2 and "no exercise 00.9" in out.stderr


def test_execute_fails_loudly_on_an_error(tmp_path):
    path = tmp_path / "00_broken.ipynb"
    nbio.write_notebook(path, [nbio.code("1 / 0", id="boom"), nbio.check_cell("00.1", "x", 1, id="c")], title="b")
    before = path.read_bytes()
    out = _course("execute", path)
    assert out.returncode == 1 and "ZeroDivisionError" in out.stderr
    assert path.read_bytes() == before


def _ref_with_optional_cell():
    ref = nbio.read(next(SOLUTIONS.glob("05_*.ipynb")))
    cell = next(c for c in ref.cells if c.get("id") == "bn-torch")
    assert nbio.grader_replacement(cell) is not None
    return ref, cell


def test_grader_runs_the_replacement_of_an_optional_cell():
    from course.grader import build_graded_copy
    ref, cell = _ref_with_optional_cell()
    learner = nbio.read(ROOT / "notebooks" / "05_normalization.ipynb")
    plan = build_graded_copy(learner, ref, {})
    graded = next(c for c in plan.nb.cells if c.get("id") == "bn-torch")
    assert graded.source == nbio.grader_replacement(cell)
    assert "torch = None" in graded.source and "import torch" not in graded.source
    # a learner who edits the cell's metadata cannot keep it: the replacement comes from solutions/
    mine = next(c for c in learner.cells if c.get("id") == "bn-torch")
    mine.metadata.pop("grader", None)
    mine.source = "import torch  # my own version"
    plan = build_graded_copy(learner, ref, {})
    assert next(c for c in plan.nb.cells if c.get("id") == "bn-torch").source == graded.source


def _assigned_names(source: str) -> set:
    """Names a cell binds at its top level (assignments and imports)."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _tested_for_none(source: str) -> set:
    """Names a cell compares with ``is None`` / ``is not None``."""
    return {n.left.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Compare)
            and isinstance(n.left, ast.Name) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Is, ast.IsNot))
            and isinstance(n.comparators[0], ast.Constant) and n.comparators[0].value is None}


def test_replacements_never_touch_solution_or_check_cells():
    replaced = 0
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        cells = [c for c in nbio.read(path).cells if c.cell_type == "code"]
        for i, c in enumerate(cells):
            replacement = nbio.grader_replacement(c)
            if replacement is None:
                continue
            replaced += 1
            assert not nbio.is_check(c) and not nbio.is_solution(c), (path.name, c.get("id"))
            # what later cells test for (`torch is None`, `harness is None`) is still defined, as None
            tested = set().union(*(_tested_for_none(d.source) for d in cells[i + 1:]))
            needed = _assigned_names(c.source) & tested
            assert needed <= _assigned_names(replacement), (path.name, c.get("id"), needed)
            for name in needed:
                assert f"{name} = None" in replacement, (path.name, c.get("id"), name)
    assert replaced >= 3


# ------------------------------------------------------------------ build (chapter sources)

DEMO_SOURCE = '''# ---
# jupyter:
#   course:
#     title: Demo
# ---

# %% [markdown] id="intro"
# # 00 · Demo

# %% id="ex-00-1-solution" tags=["solution"] exercise="00.1"
def double(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION


# %% id="ex-00-1-check" tags=["check", "nbval-check-output"] exercise="00.1" points=1
check("00.1", double)

# %% id="optional" grader_runs="torch = None"
import torch
'''


def _demo_chapter(tmp_path, text=DEMO_SOURCE):
    folder = tmp_path / "chapters" / "00_demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notebook.py").write_text(text, encoding="utf-8")
    return tmp_path / "chapters", tmp_path / "solutions"


def test_build_writes_the_solutions_notebook(tmp_path):
    chapters, solutions = _demo_chapter(tmp_path)
    assert build(chapters, solutions, check=True) == ["00_demo.ipynb (missing)"]
    assert build(chapters, solutions) == ["00_demo.ipynb (missing)"]
    nb = nbio.read(solutions / "00_demo.ipynb")
    assert nb.metadata["course"] == {"title": "Demo", "chapter": "00"}
    intro, sol, chk, opt = nb.cells
    assert (intro.id, intro.cell_type, intro.source) == ("intro", "markdown", "# 00 · Demo")
    assert sol.metadata == {"tags": ["solution"], "grading": {"exercise": "00.1"}}
    assert sol.source.startswith("def double(x):\n    ### BEGIN SOLUTION")
    assert chk.metadata == {"tags": ["check", "nbval-check-output"], "grading": {"exercise": "00.1", "points": 1}}
    assert chk.source == 'check("00.1", double)' and chk.outputs == [] and chk.execution_count is None
    assert nbio.grader_replacement(opt) == "torch = None" and opt.source == "import torch"
    assert source_text(*read_source(chapters / "00_demo" / "notebook.py")) == DEMO_SOURCE
    assert build(chapters, solutions) == []
    # blank lines between cells are layout, not content
    assert "SOLUTION\n\n\n#" in DEMO_SOURCE
    _demo_chapter(tmp_path, DEMO_SOURCE.replace("SOLUTION\n\n\n#", "SOLUTION\n\n#"))
    assert build(chapters, solutions) == []


def test_build_keeps_stored_outputs_of_unchanged_check_cells(tmp_path):
    import nbformat

    chapters, solutions = _demo_chapter(tmp_path)
    build(chapters, solutions)
    path = solutions / "00_demo.ipynb"
    nb = nbio.read(path)
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="✓ 00.1 double: 3/3 cases\n")]
    nb.cells[2].execution_count = 2
    nbio.save(nb, path)
    _demo_chapter(tmp_path, DEMO_SOURCE.replace("return 2 * x", "return x + x"))
    assert build(chapters, solutions) == ["00_demo.ipynb"]
    kept = nbio.read(path).cells[2]
    assert kept.outputs == nb.cells[2].outputs and kept.execution_count == 2
    # a check cell that changes loses its output (run `course execute`)
    _demo_chapter(tmp_path, DEMO_SOURCE.replace("double", "twice"))
    build(chapters, solutions)
    assert nbio.read(path).cells[2].outputs == []
    out = _course("build", "--check", "--chapters", chapters, "--solutions", solutions)
    assert out.returncode == 0 and "up to date" in out.stdout
    _demo_chapter(tmp_path, DEMO_SOURCE.replace("Demo", "Demo two"))
    out = _course("build", "--check", "--chapters", chapters, "--solutions", solutions)
    assert out.returncode == 1 and "00_demo.ipynb" in out.stdout


@pytest.mark.parametrize("old, new, message", [
    ('points=1', 'points=1 point=2', "unknown header keys ['point']"),
    ('# %% [markdown] id="intro"', '# %% [markdown]', "without id"),
    ('# %% [markdown] id="intro"', '# %% [markdown] id="intro" tags=["x"]', "only an id"),
    ('check("00.1", double)', 'check("00.1", double)  # mine', "exactly check"),
    ('check("00.1", double)', 'check("00.2", double)', "exactly check"),
    ('    ### END SOLUTION\n', '', "no '### BEGIN SOLUTION' ... '### END SOLUTION' region"),
    (' exercise="00.1"\ndef', '\ndef', "exercise id None"),
    ('points=1', 'points=0', "points must be a positive int"),
    ('id="optional"', 'id="optional" exercise="00.1"', "do not belong"),
    ('tags=["check", "nbval-check-output"]', 'tags=["check"]', "tags must be ['check', 'nbval-check-output']"),
    ('id="intro"', 'id="ex-00-1-check"', "duplicate cell ids"),
    ('id="intro"', 'id="intro cell"', "not valid"),
    ('#     title: Demo\n', '', "must give the title"),
])
def test_build_refuses_a_malformed_source(tmp_path, old, new, message):
    assert old in DEMO_SOURCE
    chapters, solutions = _demo_chapter(tmp_path, DEMO_SOURCE.replace(old, new, 1))
    with pytest.raises(CourseError, match=re.escape(message)):
        build(chapters, solutions)
    assert not solutions.exists()


def test_make_student_skips_hidden_notebooks(tmp_path):
    """A hidden *.ipynb in solutions/ (an editor's or a grader's temporary copy) is no chapter."""
    sol, nb = tmp_path / "solutions", tmp_path / "notebooks"
    sol.mkdir()
    shutil.copy(SOLUTIONS / "00_welcome.ipynb", sol / "00_welcome.ipynb")
    shutil.copy(SOLUTIONS / "00_welcome.ipynb", sol / ".00_welcome.1a2b.graded.ipynb")
    assert make_student(sol, nb) == ["00_welcome.ipynb (missing)"]
    assert sorted(p.name for p in nb.iterdir()) == ["00_welcome.ipynb"]
