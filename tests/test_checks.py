"""The checks framework and every registered check.

Every check must be able to fail: it passes on the solution, reports
NotAttempted on the unfilled stub, and fails on each planted wrong answer.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from course import notebook as nbio
from course.checks import (Case, CheckFailure, NotAttempted, case, chapter_checks, check, exercise, get_exercise,
                           registry, run_check, strict_equal)
from course.paths import chapter_dirs, load_chapter_module
from course.student import stub_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted(p for p in (ROOT / "solutions").glob("*.ipynb") if not p.name.startswith("."))
CHAPTERS = ROOT / "chapters"


def _wrong_answers(chapter: str) -> dict:
    """WRONG of chapters/NN_name/wrong_answers.py: exercise id -> planted wrong answers."""
    module = load_chapter_module(chapter, "wrong_answers", CHAPTERS)
    return module.WRONG if module is not None else {}


WRONG = {ex: answers for chapter in chapter_dirs(CHAPTERS) for ex, answers in _wrong_answers(chapter).items()}


def _exercises():
    """(exercise id, solutions notebook, solution sources, name the check cell passes)."""
    out = []
    for path in SOLUTIONS:
        nb = nbio.read(path)
        for chk in nbio.check_cells(nb):
            ex = nbio.exercise_of(chk)
            call = ast.parse(chk.source).body[0].value
            obj_name = call.args[1].id
            sources = [c.source for c in nb.cells if nbio.is_solution(c) and nbio.exercise_of(c) == ex]
            expected = "".join(o.get("text", "") for o in chk.outputs if o.get("output_type") == "stream")
            out.append(pytest.param(ex, path, sources, obj_name, expected, id=ex))
    return out


EXERCISES = _exercises()


def _solution_namespace(path: Path) -> dict:
    """Run the notebook's solution cells (in order) in one namespace."""
    ns: dict = {"__name__": "__notebook__"}
    exec("import numpy as np\nimport course_lib\nfrom course import check", ns)
    nb = nbio.read(path)
    for cell in nb.cells:
        if nbio.is_solution(cell):
            try:
                exec(compile(cell.source, f"<{path.name}:{cell.id}>", "exec"), ns)
            except Exception as e:  # noqa: BLE001
                pytest.skip(f"{path.name}:{cell.id} needs the notebook's context ({type(e).__name__}: {e}); "
                            "tests/test_notebooks.py grades the whole notebook")
    return ns


def test_solutions_have_exercises():
    assert SOLUTIONS, "no solutions notebooks"
    assert EXERCISES, "no check cells in solutions/"


@pytest.mark.parametrize("ex, path, sources, obj_name, expected", EXERCISES)
def test_check_passes_on_solution(ex, path, sources, obj_name, expected, capsys):
    ns = _solution_namespace(path)
    check(ex, ns[obj_name])
    out = capsys.readouterr().out
    assert out == expected, "the stored check output is stale: run `course execute` on the solutions notebook"
    assert re.fullmatch(rf"✓ {re.escape(ex)} \S.*: (\d+)/\1 cases\n", out)


@pytest.mark.parametrize("ex, path, sources, obj_name, expected", EXERCISES)
def test_check_reports_not_attempted_on_stub(ex, path, sources, obj_name, expected):
    ns = _solution_namespace(path)
    for src in sources:
        exec(compile(stub_source(src), "<stub>", "exec"), ns)
    with pytest.raises(NotAttempted):
        check(ex, ns[obj_name])


@pytest.mark.parametrize("ex, path, sources, obj_name, expected", EXERCISES)
def test_check_fails_on_every_planted_wrong_answer(ex, path, sources, obj_name, expected):
    wrong = WRONG.get(ex)
    assert wrong, f"chapters/{path.stem}/wrong_answers.py has no wrong answer for {ex}"
    for fn in wrong:
        with pytest.raises(CheckFailure) as info:
            check(ex, fn)
        assert not isinstance(info.value, NotAttempted), fn.__name__
        msg = str(info.value)
        assert msg.startswith(f"✗ {ex} "), msg
        assert "hint:" in msg and len(msg.splitlines()) <= 8, msg


@pytest.mark.parametrize("ex, path, sources, obj_name, expected", EXERCISES)
def test_points_agree_with_registry(ex, path, sources, obj_name, expected):
    chk = next(c for c in nbio.check_cells(nbio.read(path)) if nbio.exercise_of(c) == ex)
    assert chk.metadata["grading"]["points"] == get_exercise(ex).points


def test_every_registered_exercise_is_in_a_notebook():
    in_notebooks = {p.values[0] for p in EXERCISES}
    assert set(registry()) <= in_notebooks, "registered checks without a check cell in solutions/"


def test_wrong_answers_only_for_known_exercises():
    assert set(WRONG) <= set(registry())


def test_each_chapter_keeps_its_own_checks_and_wrong_answers():
    for chapter, folder in chapter_dirs(CHAPTERS).items():
        assert set(_wrong_answers(chapter)) == set(registry(chapter)), (
            f"{folder.name}/wrong_answers.py must plant wrong answers for exactly the exercises "
            f"of {folder.name}/checks.py")
        assert chapter_checks(chapter).__file__ == str(folder / "checks.py")


# ------------------------------------------------------------------ the framework


def test_failure_message_is_short_and_specific():
    def fizzbuzz(n):
        return str(n)

    with pytest.raises(CheckFailure) as info:
        check("00.1", fizzbuzz)
    lines = str(info.value).splitlines()
    assert lines[0] == "✗ 00.1 fizzbuzz: case 3/15 failed"
    assert lines[1:4] == ["  input:    fizzbuzz(3)", "  expected: 'Fizz'", "  got:      '3'"]
    assert lines[4].startswith("  hint:")
    # what IPython shows instead of a traceback
    assert info.value._render_traceback_() == lines


def test_learner_exception_is_reported_with_where():
    def flat_index(index, shape):
        return index[5]

    with pytest.raises(CheckFailure) as info:
        check("00.3", flat_index)
    msg = str(info.value)
    assert "got:      raised IndexError: tuple index out of range" in msg
    assert "in flat_index, line" in msg


def test_missing_exception_is_a_failure():
    flat_index_no_bounds = load_chapter_module("00", "wrong_answers", CHAPTERS).flat_index_no_bounds

    with pytest.raises(CheckFailure) as info:
        check("00.3", flat_index_no_bounds)
    msg = str(info.value)
    assert "case 10/13 failed" in msg
    assert "expected: raises IndexError" in msg and "(no exception)" in msg


def test_learner_prints_do_not_change_the_success_line(capsys):
    def fizzbuzz(n):
        print("debugging", n)
        return "FizzBuzz" if n % 15 == 0 else "Fizz" if n % 3 == 0 else "Buzz" if n % 5 == 0 else str(n)

    check("00.1", fizzbuzz)
    assert capsys.readouterr().out == "✓ 00.1 fizzbuzz: 15/15 cases\n"


def test_not_attempted_is_a_check_failure():
    def fizzbuzz(n):
        raise NotImplementedError()

    with pytest.raises(NotAttempted) as info:
        check("00.1", fizzbuzz)
    assert isinstance(info.value, CheckFailure)
    assert "not attempted" in str(info.value)


def test_unknown_exercise():
    with pytest.raises(KeyError, match="no exercise '99.9'"):
        check("99.9", print)


def test_registration_and_case_count(monkeypatch):
    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))

    @exercise("98.1", title="double", points=1, hint="multiply by two")
    def _double(fn):
        return [case(fn, x, expected=2 * x) for x in range(4)]

    assert run_check("98.1", lambda x: x + x) == "✓ 98.1 double: 4/4 cases"
    with pytest.raises(CheckFailure, match=r"case 1/4 failed"):
        run_check("98.1", lambda x: x + 1)
    with pytest.raises(ValueError, match="registered twice"):
        exercise("98.1", title="again", points=1, hint="")(_double)


def test_case_label_and_argument_copy():
    seen = []

    def f(xs):
        xs.append(1)
        seen.append(list(xs))
        return len(xs)

    c = case(f, [0], expected=2)
    assert isinstance(c, Case) and c.label == "f([0])"
    assert c.run() == 2 and c.run() == 2  # the learner cannot mutate the case's input


@pytest.mark.parametrize("got, expected, ok", [
    (1, 1, True), (True, 1, False), (1, 1.0, True), (1.0 + 1e-13, 1.0, True), ((1, 2), [1, 2], False),
    ([1, (2, 3)], [1, (2, 3)], True), ("1", 1, False), ({"a": [1]}, {"a": [1]}, True), (None, 0, False),
])
def test_strict_equal(got, expected, ok):
    assert strict_equal(got, expected) is ok


CHECKS_97 = """
from course.checks import case, exercise

@exercise("97.1", title="double", points=1, hint="multiply by two")
def _double(fn):
    return [case(fn, x, expected=2 * x) for x in range(3)]
"""


def test_checks_load_from_the_chapter_folder(tmp_path, monkeypatch):
    import sys

    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))
    folder = tmp_path / "97_demo"
    folder.mkdir()
    (folder / "notebook.py").write_text("")
    (folder / "checks.py").write_text(CHECKS_97 + "\nraise RuntimeError('half-way')\n")
    monkeypatch.setenv("COURSE_CHAPTERS", str(tmp_path))
    try:
        with pytest.raises(RuntimeError, match="half-way"):
            run_check("97.1", lambda x: x + x)
        assert "97.1" not in checks._REGISTRY and "course_chapter97_checks" not in sys.modules
        (folder / "checks.py").write_text(CHECKS_97)
        assert run_check("97.1", lambda x: x + x) == "✓ 97.1 double: 3/3 cases"
        assert sys.modules["course_chapter97_checks"].__file__ == str(folder / "checks.py")
        assert list(registry("97")) == ["97.1"]
    finally:
        sys.modules.pop("course_chapter97_checks", None)


def test_check_runtime_import_is_light():
    """Every notebook does `from course import check`: no Jupyter, nbformat or plotting behind it."""
    import subprocess
    import sys

    code = ("import sys, course\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in (\n"
            "    'matplotlib', 'nbformat', 'nbclient', 'jupytext', 'jupyter_client', 'pytest', 'numpy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""
