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
from course.checks import (
    CheckFailure,
    CheckTimeout,
    NotAttempted,
    Trial,
    call,
    chapter_checks,
    check,
    exercise,
    get_exercise,
    probe,
    registry,
    run_check,
    strict_equal,
)
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
    assert lines[0] == "✗ 00.1 fizzbuzz: case 3/20 failed"
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
    assert "case 13/17 failed" in msg
    assert "expected: raises IndexError" in msg and "(no exception)" in msg


def test_learner_prints_do_not_change_the_success_line(capsys):
    def fizzbuzz(n):
        print("debugging", n)
        return "FizzBuzz" if n % 15 == 0 else "Fizz" if n % 3 == 0 else "Buzz" if n % 5 == 0 else str(n)

    check("00.1", fizzbuzz)
    assert capsys.readouterr().out == "✓ 00.1 fizzbuzz: 20/20 cases\n"


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
    def _double(rng):
        return [call(x, expected=2 * x) for x in range(4)]

    assert run_check("98.1", lambda x: x + x) == "✓ 98.1 double: 4/4 cases"
    with pytest.raises(CheckFailure, match=r"case 1/4 failed"):
        run_check("98.1", lambda x: x + 1)
    with pytest.raises(ValueError, match="registered twice"):
        exercise("98.1", title="again", points=1, hint="")(_double)


def _appends_one(fn, xs):
    """A probe that lets the learner's function mutate its argument, then shows the argument."""
    n = fn(xs)
    return n, xs


def test_trial_label_and_fresh_arguments(monkeypatch):
    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))

    @exercise("98.2", title="count", points=1, hint="")
    def _count(rng):
        return [call([0], expected=2), probe(_appends_one, [0], expected=(2, [0, 1]))] * 2

    t = get_exercise("98.2").trials(0)[0]
    assert isinstance(t, Trial) and t.label == "count([0])"

    def f(xs):
        xs.append(1)
        return len(xs)

    # each trial decodes its own copy of [0]: the learner cannot mutate the next case's input
    assert run_check("98.2", f) == "✓ 98.2 count: 4/4 cases"


def test_an_inputs_function_must_take_rng(monkeypatch):
    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))
    with pytest.raises(TypeError, match="must take `rng`"):
        exercise("98.3", title="old", points=1, hint="")(lambda fn: [])


@pytest.mark.parametrize("got, expected, ok", [
    (1, 1, True), (True, 1, False), (1, 1.0, True), (1.0 + 1e-13, 1.0, True), ((1, 2), [1, 2], False),
    ([1, (2, 3)], [1, (2, 3)], True), ("1", 1, False), ({"a": [1]}, {"a": [1]}, True), (None, 0, False),
])
def test_strict_equal(got, expected, ok):
    assert strict_equal(got, expected) is ok


CHECKS_97 = """
from course.checks import call, exercise

@exercise("97.1", title="double", points=1, hint="multiply by two")
def _double(rng):
    return [call(x, expected=2 * x) for x in range(3)]
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


# ------------------------------------------------------------------ inputs, probe and judge


def _solution_objects():
    """(exercise, solutions notebook, name of the solution's object) for every exercise."""
    out = []
    for param in EXERCISES:
        ex, path, _sources, obj_name, _expected = param.values
        out.append(pytest.param(ex, path, obj_name, id=ex))
    return out


@pytest.mark.parametrize("ex, path, obj_name", _solution_objects())
def test_solution_passes_with_other_seeds(ex, path, obj_name):
    """Grading draws a secret seed: the solution passes whatever it is, with the same line."""
    ns = _solution_namespace(path)
    lines = {run_check(ex, ns[obj_name], seed=seed) for seed in (1, 2, 2**63 - 1)}
    assert len(lines) == 1


def test_inputs_change_with_the_seed():
    ex = get_exercise("00.1")
    assert [t.args for t in ex.trials(1)] != [t.args for t in ex.trials(2)]
    assert [t.args for t in ex.trials(1)] == [t.args for t in ex.trials(1)]


def test_hard_coded_answers_fail_on_other_seeds():
    """A function that only knows the self-study inputs fails when grading draws other ones."""
    from course.checks import SELF_STUDY_SEED

    answers = {t.args: t.expected for t in get_exercise("00.1").trials(SELF_STUDY_SEED)}
    run_check("00.1", lambda n: answers[(n,)])
    with pytest.raises(CheckFailure, match="KeyError"):
        run_check("00.1", lambda n: answers[(n,)], seed=12345)


def test_judge_never_passes_missing_or_malformed_results():
    from course.checks import ProbeError, judge, run_probes, trials_payload

    ex = get_exercise("00.3")
    trials = ex.trials(7)
    good = run_probes("00.3", lambda idx, shape: 0, trials_payload(ex, trials))
    with pytest.raises(CheckFailure):
        judge(ex, trials, good)
    for bad in ("", "null", "[]", '{"exercise": "00.3"}', '{"exercise": "00.1", "results": []}',
                '{"exercise": "00.3", "results": []}', good.replace('"exercise":"00.3"', '"exercise":"00.2"'),
                '{"exercise": "00.3", "results": [{"status": "ok", "value": ["pickle", "x"]}]}',
                '{"exercise": "00.3", "results": [{"status": "raised", "value": 1}]}'):
        with pytest.raises(ProbeError):
            judge(ex, trials, bad)


def test_wire_round_trip_keeps_types():
    import numpy as np

    import course_lib as cl
    from course import _wire

    values = [None, True, 1, 2.5, float("inf"), "s", b"\x00b", (1, [2, (3,)]), {"a": 1, (1, 2): [3]}, {1, 2},
              slice(1, None, 2), Ellipsis, 1 + 2j, np.int64(3), np.float32(1.5), np.arange(6).reshape(2, 3),
              cl.float64, cl.Size([2, 3]), np.dtype("int32")]
    for v in values:
        back = _wire.loads(_wire.dumps(v))
        assert type(back) is type(v) and (back == v if not isinstance(v, np.ndarray) else (back == v).all()), v
    t = cl.arange(6, dtype=cl.float32).reshape(2, 3).t().requires_grad_()
    back = _wire.loads(_wire.dumps(t))
    assert back.dtype == cl.float32 and back.shape == (3, 2) and back.requires_grad
    assert back.detach().numpy().tolist() == t.detach().numpy().tolist()
    p = _wire.loads(_wire.dumps(cl.nn.Parameter(cl.zeros(2))))
    assert type(p) is cl.nn.Parameter

    class Odd:
        def __repr__(self):
            return "odd!"

    back = _wire.loads(_wire.dumps([Odd(), (1,) * 3]))
    assert isinstance(back[0], _wire.Opaque) and back[0].type_name == "Odd" and repr(back[0]) == "odd!"


@pytest.mark.parametrize("text", [
    '["opaque"]', '["ndarray", "|O", [1], "AA=="]', '["ndarray", "<i8", [2], "AA=="]', '["tensor", "Tensor", '
    '"__class__", [1], "cpu", false, ""]', '["dtype", "__spec__"]', '["global", "os", "system"]', '["tuple"]',
    '[1, 2]', '["dict", [[["list", []], 1]]]', "[" * 100000, '{"a": 1}',
])
def test_wire_refuses_what_it_does_not_know(text):
    from course import _wire

    with pytest.raises(_wire.WireError):
        _wire.loads(text)


FORBID_99 = """
import course_lib as cl
from course.checks import call, exercise

@exercise("99.5", title="promote", points=1, hint="", forbid={"cl.result_type": cl.result_type})
def _promote(rng):
    return [call(cl.zeros(2, dtype=cl.int64), 2.5, expected=cl.float32)]
"""


@pytest.mark.parametrize("source", [
    "import course_lib as cl\ndef promote(a, b):\n    return cl.result_type(a, b)",
    "from course_lib import result_type as r\ndef promote(a, b):\n    return r(a, b)",
    "import course_lib\nm = course_lib\ndef promote(a, b):\n    return m.result_type(a, b)",
    "import course_lib as cl, functools\ndef promote(a, b):\n    return functools.partial(cl.result_type, a)(b)",
    "import course_lib as cl\ndef promote(a, b):\n    return list(map(cl.result_type, [a], [b]))[0]",
    "import course_lib as cl, types\nf = types.FunctionType(cl.result_type.__code__, cl.result_type.__globals__)\n"
    "def promote(a, b):\n    return f(a, b)",
])
def test_forbidden_calls_are_caught_however_imported(tmp_path, monkeypatch, source):
    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))
    folder = tmp_path / "99_demo"
    folder.mkdir()
    (folder / "checks.py").write_text(FORBID_99)
    monkeypatch.setenv("COURSE_CHAPTERS", str(tmp_path))
    import sys

    try:
        ns: dict = {}
        exec(compile(source, "<learner cell>", "exec"), ns)
        with pytest.raises(CheckFailure, match=r"your code calls cl\.result_type, which this exercise asks"):
            run_check("99.5", ns["promote"])
        # course_lib calling it on the learner's behalf is not the learner calling it
        import course_lib as cl
        assert run_check("99.5", lambda a, b: (cl.zeros(1, dtype=a.dtype) + b).dtype).startswith("✓ 99.5")
    finally:
        sys.modules.pop("course_chapter99_checks", None)


def test_grader_loads_checks_without_touching_the_registry():
    from course import checks

    source = (CHAPTERS / "00_welcome" / "checks.py").read_bytes()
    before = dict(checks._REGISTRY)
    found = checks.load_checks_source("00", source, str(CHAPTERS / "00_welcome" / "checks.py"))
    assert set(found) == {"00.1", "00.2", "00.3"} and checks._REGISTRY == before


def test_probes_stop_at_the_time_budget_and_never_pass():
    """When graded, every trial runs; one that runs past the check's budget is stopped, the rest are skipped."""
    import json
    import time

    from course.checks import judge, run_probes, trials_payload

    ex = get_exercise("00.1")
    trials = ex.trials(3)

    def slow_at_15(n):
        if n == 15:
            time.sleep(30)
        return "FizzBuzz" if n % 15 == 0 else "Fizz" if n % 3 == 0 else "Buzz" if n % 5 == 0 else str(n)

    t0 = time.monotonic()
    text = run_probes("00.1", slow_at_15, trials_payload(ex, trials), budget=1.0)
    assert time.monotonic() - t0 < 5
    statuses = [r["status"] for r in json.loads(text)["results"]]
    k = [t.args for t in trials].index((15,))
    assert statuses == ["ok"] * k + ["timeout"] + ["skipped"] * (len(trials) - k - 1)
    with pytest.raises(CheckTimeout, match=rf"case {k + 1}/{len(trials)} failed[\s\S]*time limit of 1 s ran out"):
        judge(ex, trials, text)


def test_the_payload_carries_the_time_budget():
    """The grader keeps the probes' budget inside the cell's time limit (course grade --timeout)."""
    import json

    from course.checks import run_probes, trials_payload
    from course.grader import Limits, _probe_budget

    ex = get_exercise("00.1")
    assert json.loads(trials_payload(ex, ex.trials(1)))["budget"] == ex.time_budget
    assert _probe_budget(Limits(cell_timeout=30)) == 24 and _probe_budget(Limits(cell_timeout=4)) == 1
    payload = trials_payload(ex, ex.trials(1), budget=0.5)
    statuses = [r["status"] for r in json.loads(run_probes("00.1", lambda n: __import__("time").sleep(1),
                                                           payload))["results"]]
    assert statuses[0] == "timeout" and set(statuses[1:]) == {"skipped"}


def test_every_op_the_binding_check_may_draw_has_a_reference_binding():
    """01.5 draws three registered ops with a secret seed: each one it may draw must give a reference
    source that compiles (an arg named ``from`` would make every learner's grading an internal error)."""
    checks = load_chapter_module("01", "checks", CHAPTERS)
    import course_lib as cl

    drawable = [op.schema for op in cl.OPS.values() if checks._literal_defaults(op.schema)]
    assert len(drawable) > 100
    for schema in drawable:
        name = schema.split("(", 1)[0]
        checks._signature(checks._reference_source(schema), name)
    assert not checks._literal_defaults(cl.OPS["uniform_"].schema)


def test_a_forbidden_reference_given_as_the_answer_is_refused():
    """The learner's object may be the forbidden reference itself (or a subclass of a checks' reference class):
    the check makes the calls then, so the watch reports it from the object; a course_lib base class the
    learner subclasses (nn.Module, whose methods 04.9 forbids) is not a reference."""
    from course.checks import _forbidden_object, _ForbiddenCalls, chapter_checks
    from course_lib import nn

    m = chapter_checks("09")
    codes = _ForbiddenCalls(get_exercise("09.2").forbid, ((), ())).codes
    assert _forbidden_object(m.ReferenceCheckpointer, codes) == ["ReferenceCheckpointer.save",
                                                                 "ReferenceCheckpointer.load"]

    class Mine(m.ReferenceCheckpointer):
        pass

    assert _forbidden_object(Mine, codes)
    assert _forbidden_object(m.reference_run_epoch, _ForbiddenCalls(get_exercise("09.1").forbid, ((), ())).codes)

    class Net(nn.Module):
        def forward(self, x):
            return x

    assert _forbidden_object(Net, _ForbiddenCalls(get_exercise("04.9").forbid, ((), ())).codes) == []
