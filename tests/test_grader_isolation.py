"""The grader against notebooks that attack it or hurt it (issue 15, section 1).

Each attacking notebook is chapter 00's learner notebook with cells added or changed
(tests/grading_cases/attacks.py); it is graded and must earn what its honest part deserves, harm
no other submission and leave nothing running. Notebooks that only need the grader as a library
are graded in one parallel batch per module; the attacks on the command (a batch folder, the
results channel, killing the grader) go through ``course grade`` in a subprocess.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from grading_cases import attacks, cases  # tests/ is on sys.path (rootdir-less "prepend" import)

from course import notebook as nbio
from course.cli import find_submissions
from course.grader import (
    ERROR,
    FAIL,
    NOT_ATTEMPTED,
    PASS,
    TIMEOUT,
    CourseSnapshot,
    Limits,
    _strip_markers,
    _titles_from_source,
    build_graded_copy,
    grade_many,
)
from course.paths import find_solutions_dir
from course.student import stub_source

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
JOBS = 2


def _statuses(res):
    return {e.exercise: e.status for e in res.exercises}


def _alive(pid: int) -> bool:
    """True if `pid` is a live process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()]


def _course(*args, cwd=ROOT, timeout=600, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "course", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)


def _private_course(root: Path) -> Path:
    """A copy of the course's solutions/ and chapters/ that a notebook may vandalise; its solutions/."""
    shutil.copytree(SOLUTIONS, root / "solutions")
    shutil.copytree(ROOT / "chapters", root / "chapters", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "solutions"


# ------------------------------------------------------------------ no kernel needed


@pytest.mark.parametrize("source", [
    "## NBVAL_SKIP\nx = 1",
    "x = 1\n   ###   NBVAL_RAISES_EXCEPTION   \n",
    "#NBVAL_IGNORE_OUTPUT",
    "x = 1\r# NBVAL_SKIP\r\ny = 2",
    "x = 1\u2028# NBVAL_CHECK_OUTPUT\x0cy = 2",
    "# PYTEST_VALIDATE_IGNORE_OUTPUT",
])
def test_every_nbval_marker_is_stripped(source):
    from nbval.plugin import find_comment_markers

    assert list(find_comment_markers(source)), "the case must hold a marker nbval obeys"
    stripped = _strip_markers(source)
    assert list(find_comment_markers(stripped)) == []
    assert stripped.count("x = 1") == source.count("x = 1")  # the code stays


def test_odd_tags_and_metadata_do_not_crash_the_graded_copy():
    learner = nbio.read(ROOT / "notebooks" / "00_welcome.ipynb")
    ref = nbio.read(SOLUTIONS / "00_welcome.ipynb")
    odd = [("solution",), 5, ["solution", 7, None], {"a": 1}, None]
    for cell, tags in zip([c for c in learner.cells if c.cell_type == "code"], odd):
        cell.metadata["tags"] = tags if not isinstance(tags, tuple) else tags[0]
        cell.metadata["grading"] = {"exercise": ["not", "a", "string"]} if tags == 5 else cell.metadata.get("grading")
        cell.metadata["collapsed"] = "not a boolean"
    plan = build_graded_copy(learner, ref, {})
    nbio.dumps(plan.nb)  # validates
    assert [r for r in plan.roles if r[0] == "check"] == [("check", e) for e in nbio.exercises(ref)]


def test_titles_are_read_without_running_the_checks():
    source = (b'raise SystemExit("never run")\n'
              b'@exercise("07.1", title="make_payload", points=1, hint="")\ndef f(x): pass')
    assert _titles_from_source(source) == {"07.1": "make_payload"}
    assert _titles_from_source(b"def broken(:") == {}


def test_snapshot_is_not_changed_by_later_edits(tmp_path):
    solutions = _private_course(tmp_path)
    snap = CourseSnapshot.take(solutions)
    checks = tmp_path / "chapters" / "00_welcome" / "checks.py"
    before = snap.chapters.read("00_welcome/checks.py")
    checks.write_text("raise SystemExit")
    (solutions / "00_welcome.ipynb").write_text("{}")
    assert snap.chapters.read("00_welcome/checks.py") == before
    _, ref = snap.ref_for(Path("00_welcome.ipynb"))
    assert nbio.exercises(ref) == ["00.1", "00.2", "00.3"]
    assert "00_welcome/notebook.py" not in snap.chapters.names()  # sources with the answers stay out
    assert "00_welcome/wrong_answers.py" not in snap.chapters.names()
    changed = snap.watch.changed(snap.watch.state(), snap.watch.state())
    assert changed == []


def test_batch_never_takes_an_answer_key_from_under_the_submissions(tmp_path):
    subs = tmp_path / "subs"
    (subs / "solutions").mkdir(parents=True)
    (subs / "solutions" / "00_welcome.ipynb").write_text(attacks.fake_key())
    assert find_solutions_dir(subs) == subs / "solutions"  # what an unguarded search finds
    found = find_solutions_dir(subs, exclude=subs)
    assert subs not in found.parents


def test_find_submissions_reports_what_it_skips(tmp_path):
    subs = tmp_path / "subs"
    for rel in ("alice/00_welcome.ipynb", "alice/.ipynb_checkpoints/00_welcome-checkpoint.ipynb",
                "bob/solutions/00_welcome.ipynb", "bob/course_lib/x.ipynb", "bob/00_welcome.ipynb",
                "solutions/00_welcome.ipynb", "carol/tools/a.ipynb", "carol/chapters/a.ipynb"):
        (subs / rel).parent.mkdir(parents=True, exist_ok=True)
        (subs / rel).write_text("{}")
    (subs / "dave").mkdir()
    (subs / "dave" / "00_welcome.ipynb").symlink_to(SOLUTIONS / "00_welcome.ipynb")
    (subs / "erin").symlink_to(subs / "alice")
    paths, skipped = find_submissions(subs)
    assert [p.relative_to(subs).as_posix() for p in paths] == ["alice/00_welcome.ipynb", "bob/00_welcome.ipynb"]
    assert {p.relative_to(subs).as_posix() for p, _ in skipped} == {
        "alice/.ipynb_checkpoints", "bob/solutions", "bob/course_lib", "solutions", "carol/tools",
        "carol/chapters", "dave/00_welcome.ipynb", "erin"}
    assert all(why for _, why in skipped)


# ------------------------------------------------------------------ graded as a library


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks")
    builders = {
        "custom_exc": attacks.custom_exception_handler,
        "big_output": attacks.big_output,
        "big_exception": attacks.big_exception,
        "exits": attacks.exits_python,
        "memory": attacks.eats_memory,
        "background": lambda: attacks.background(str(root / "background.pids")),
        "markers": attacks.markers_and_odd_tags,
        "probe": lambda: attacks.environment_probe(str(root / "probe.json")),
        "kills_supervisor": lambda: attacks.kills_supervisor(str(root / "supervisor.pid")),
        "replaces_checks": attacks.replaces_checks,
        "fake_module": attacks.fake_checks_module,
        "ipython_hooks": attacks.ipython_hooks,
        "frames_and_table": attacks.reads_frames_and_hard_codes,
    }
    paths = cases.write(builders, root)
    os.environ["COURSE_TEST_SECRET"] = "a variable of the grader's that no kernel may see"
    try:
        results = grade_many(list(paths.values()), SOLUTIONS, 30, JOBS, limits=Limits(memory_mb=1024))
    finally:
        del os.environ["COURSE_TEST_SECRET"]
    return root, {n: (paths[n], r) for n, r in zip(paths, results)}


def test_the_kernel_gets_a_scrubbed_environment_and_limits(attacked):
    root, tbl = attacked
    assert tbl["probe"][1].passed
    seen = json.loads((root / "probe.json").read_text())
    env = seen["env"]
    assert "COURSE_TEST_SECRET" not in env
    assert not [k for k in env if k.startswith("PYTEST_") or k in ("COURSE_GRADER_FD", "COURSE_KERNEL_LIMITS")]
    # every path it names is inside the notebook's own private folder (or the system's)
    private = Path(seen["cwd"]).parent
    assert private.name.startswith("run") and private.parent.name.startswith("course-grade-")
    for key in ("PYTHONPATH", "TMPDIR", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "COURSE_CHAPTERS"):
        assert Path(env[key]).is_relative_to(private), key
    assert env["OPENBLAS_NUM_THREADS"] == "1" and env["MPLBACKEND"] == "Agg"
    assert seen["data"] == 1024 * 2 ** 20 and seen["core"] == 0 and seen["fsize"] == 2048 * 2 ** 20
    assert not private.exists()  # removed after grading


def test_a_custom_exception_handler_does_not_make_a_failing_check_pass(attacked):
    _, res = attacked[1]["custom_exc"]
    assert _statuses(res)["00.1"] == FAIL and res.exercises[0].points == 0
    assert "case 3/20 failed" in res.exercises[0].message


@pytest.mark.parametrize("name", ["replaces_checks", "fake_module", "ipython_hooks", "frames_and_table"])
def test_replacing_the_checks_in_the_kernel_earns_nothing(attacked, name):
    """check, run_check, the comparison, the judge, the registry, a reference, course.checks in sys.modules,
    IPython hooks, expected values read from stack frames, answers hard-coded from the self-study inputs."""
    _, res = attacked[1][name]
    assert res.error is None and res.exercises
    assert res.points == 0, [(e.exercise, e.status, e.message) for e in res.exercises]
    if name in ("replaces_checks", "frames_and_table"):  # wrong answers fail, with the case
        assert _statuses(res)["00.1"] == FAIL and _statuses(res)["00.3"] == FAIL


def test_a_200_mb_output_stops_that_cell(attacked):
    _, res = attacked[1]["big_output"]
    assert res.error is None
    assert _statuses(res) == {"00.1": ERROR, "00.2": PASS, "00.3": PASS}
    assert "output passed the limit of 16 MB" in res.exercises[0].message


def test_a_50_mb_exception_message(attacked):
    _, res = attacked[1]["big_exception"]
    assert res.error is None
    assert _statuses(res) == {"00.1": PASS, "00.2": ERROR, "00.3": FAIL}
    assert "output passed the limit" in res.exercises[1].message  # raised by the solution cell itself
    msg = res.exercises[2].message  # raised in the learner's function, inside the check
    assert "50,000,000 characters in all" in msg and len(msg) < 2000


def test_os_exit_is_reported_as_the_kernel_dying(attacked):
    _, res = attacked[1]["exits"]
    assert _statuses(res) == {"00.1": PASS, "00.2": ERROR, "00.3": PASS}
    assert "kernel died" in res.exercises[1].message and "interrupted" not in res.exercises[1].message


def test_the_kernel_memory_is_limited(attacked):
    _, res = attacked[1]["memory"]
    assert _statuses(res)["00.1"] == FAIL
    assert "MemoryError" in res.exercises[0].message and "1024 MB" in res.exercises[0].message


def test_background_processes_do_not_survive_the_grading(attacked):
    root, tbl = attacked
    _, res = tbl["background"]
    assert res.passed
    pids = _pids(root / "background.pids")
    assert len(pids) == 2
    assert not [p for p in pids if _alive(p)], "a process started by the notebook outlived its grading"


def test_a_notebook_that_kills_the_supervisor_leaves_nothing_running(attacked):
    root, tbl = attacked
    _, res = tbl["kills_supervisor"]
    assert _statuses(res) == {"00.1": PASS, "00.2": ERROR, "00.3": PASS}, (
        [(e.exercise, e.status, e.message) for e in res.exercises], res.notes, res.warnings)
    assert "killed" in res.exercises[1].message
    assert not _alive(_pids(root / "supervisor.pid")[0])


def test_nbval_markers_and_string_tags(attacked):
    _, res = attacked[1]["markers"]
    assert res.error is None and res.passed
    assert any("a failing scratch cell" in n for n in res.notes)  # the marker did not excuse it
    assert any("another" in n for n in res.notes)


def test_nothing_is_written_beside_the_learner_files(attacked):
    _, tbl = attacked
    for name, (path, _) in tbl.items():
        assert [p.name for p in path.parent.iterdir()] == [path.name], name


def test_the_notebook_time_limit(tmp_path):
    path = tmp_path / "slow" / "00_welcome.ipynb"
    path.parent.mkdir()
    path.write_text(attacks.overruns(cells=6, seconds=5))  # six 5 s cells, each within the cell timeout
    t0 = time.monotonic()
    (res,) = grade_many([path], SOLUTIONS, 10, 1, limits=Limits(cell_timeout=10, notebook_timeout=20))
    assert time.monotonic() - t0 < 40
    assert _statuses(res) == {"00.1": PASS, "00.2": TIMEOUT, "00.3": TIMEOUT}
    assert "time limit of 20 s" in res.exercises[1].message
    assert any("slow-" in n and "longer than 20 s in total" in n for n in res.notes)


def test_edits_to_the_course_change_no_grading_and_are_reported(tmp_path):
    solutions = _private_course(tmp_path / "course")
    checks = tmp_path / "course" / "chapters" / "00_welcome" / "checks.py"
    key = solutions / "00_welcome.ipynb"
    vandal = tmp_path / "vandal" / "00_welcome.ipynb"
    victim = tmp_path / "victim" / "00_welcome.ipynb"
    for p, text in ((vandal, attacks.writes_course(str(checks), str(key))), (victim, cases.unfilled())):
        p.parent.mkdir()
        p.write_text(text)
    res_vandal, res_victim = grade_many([vandal, victim], solutions, 30, 1)  # the vandal first
    assert "exercise(" in checks.read_text() and '"pass"' in key.read_text(), "the attack did not happen"
    for res in (res_vandal, res_victim):
        assert res.error is None
        assert set(_statuses(res).values()) == {NOT_ATTEMPTED} and res.points == 0
    warning = " ".join(res_vandal.warnings)
    assert "checks.py" in warning and "00_welcome.ipynb" in warning and "changed" in warning
    assert not any("checks.py" in w for w in res_victim.warnings)


# ------------------------------------------------------------------ through the command


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    subs = root / "subs"
    files = {
        "solutions/00_welcome.ipynb": attacks.fake_key(),  # a "student" named solutions
        "alice/00_welcome.ipynb": cases.correct(),
        "mallory/00_welcome.ipynb": cases.unfilled(),
        "mallory/solutions/00_welcome.ipynb": attacks.fake_key(),
        "mallory/course_lib/__init__.py": "raise SystemExit('a fake course_lib')\n",
        "mallory/chapters/00_welcome/checks.py": "raise SystemExit('fake checks')\n",
        "carl/00_welcome.ipynb": attacks.edits_other(str(subs / "dave" / "00_welcome.ipynb")),
        "dave/00_welcome.ipynb": cases.correct(),
        "kim/00_welcome.ipynb": attacks.kills_parent(str(root / "kim.pid")),
        "forger/00_welcome.ipynb": attacks.forge_results(str(root / "forger.json")),
    }
    for rel, text in files.items():
        (subs / rel).parent.mkdir(parents=True, exist_ok=True)
        (subs / rel).write_text(text, encoding="utf-8")
    (subs / "trudy").mkdir()
    (subs / "trudy" / "00_welcome.ipynb").symlink_to(SOLUTIONS / "00_welcome.ipynb")  # the answer key
    book, out_json = root / "book.csv", root / "out.json"
    # run from inside the submissions: the answer key must still come from the course
    out = _course("grade", "--batch", subs, "--csv", book, "--json", out_json, "-n", "2",
                  "--notebook-timeout", "240", "--memory", "2048", cwd=subs)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = list(csv.DictReader(book.open(encoding="utf-8")))
    results = {Path(r["path"]).parent.name: r for r in json.loads(out_json.read_text())}
    return root, out, rows, results


def _points(rows, student):
    return sum(int(r["points"]) for r in rows if r["student"] == student and r["status"] not in ("SKIPPED", "WARNING"))


def test_batch_skips_and_reports_folders_posing_as_the_course(batch):
    _, out, rows, results = batch
    skipped = {r["message"].split(":")[0] for r in rows if r["status"] == "SKIPPED"}
    assert skipped == {"solutions", "mallory/solutions", "mallory/course_lib", "mallory/chapters",
                       "trudy/00_welcome.ipynb"}
    for name in ("solutions", "course_lib", "trudy"):
        assert re.search(rf"skipped .*{name}", out.stdout)
    assert "trudy" not in results and "solutions" not in results
    assert _points(rows, "mallory") == 0
    assert set(_statuses_of(results["mallory"]).values()) == {NOT_ATTEMPTED}
    assert _points(rows, "alice") == 5


def _statuses_of(result: dict) -> dict:
    return {e["exercise"]: e["status"] for e in result["exercises"]}


def test_batch_one_student_cannot_change_another_submission(batch):
    root, _, rows, results = batch
    assert _points(rows, "dave") == 5 and results["dave"]["passed"], results["dave"]
    assert (root / "subs" / "dave" / "00_welcome.ipynb").read_text() != cases.correct(), "the attack did not happen"
    assert any("dave" in w for w in results["carl"]["warnings"])
    assert any(r["student"] == "carl" and r["status"] == "WARNING" for r in rows)


def test_batch_a_notebook_that_kills_its_parent(batch):
    root, _, rows, results = batch
    assert _statuses_of(results["kim"]) == {"00.1": PASS, "00.2": ERROR, "00.3": PASS}
    assert "killed" in next(e["message"] for e in results["kim"]["exercises"] if e["exercise"] == "00.2")
    assert not _alive(_pids(root / "kim.pid")[0])
    assert _points(rows, "alice") == 5  # the others are graded


def test_batch_forged_results_earn_nothing(batch):
    root, _, rows, results = batch
    assert _points(rows, "forger") == 0
    assert set(_statuses_of(results["forger"]).values()) == {NOT_ATTEMPTED}
    # the results channels are sockets, which cannot be opened through /proc/<pid>/fd: the forger
    # found at least one (its own run's, in pytest and in the grader) and wrote to none
    tally = json.loads((root / "forger.json").read_text())
    assert tally["socket tried"] >= 1 and tally["socket opened"] == 0, tally
    # so no unsigned line reached the grader (one that did would be reported and ignored)
    forged = [w for w in results["forger"]["warnings"] if "did not come from the grader" in w]
    assert not forged, forged
    # a student graded beside the forger is not affected either
    assert _points(rows, "alice") == 5 and _points(rows, "dave") == 5, (results["alice"], results["dave"])


@pytest.mark.slow
def test_the_gradebook_keeps_what_was_graded_when_the_grader_is_killed(tmp_path):
    subs = tmp_path / "subs"
    (subs / "a").mkdir(parents=True)
    (subs / "b").mkdir()
    (subs / "a" / "00_welcome.ipynb").write_text(cases.correct())
    (subs / "b" / "00_welcome.ipynb").write_text(attacks.background(str(tmp_path / "b.pids"))
                                                 .replace("1000.1111", "1000.3333"))
    slow = nbio.read(subs / "b" / "00_welcome.ipynb")
    slow.cells.append(nbio.code("import time\ntime.sleep(120)", id="wait"))
    nbio.save(slow, subs / "b" / "00_welcome.ipynb")
    book = tmp_path / "book.csv"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["TMPDIR"] = str(tmp_path / "tmp")  # where the grader makes its private folders
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "course", "grade", "--batch", str(subs), "--csv", str(book),
                             "--solutions", str(SOLUTIONS)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (tmp_path / "b.pids").exists():
            time.sleep(0.2)
        assert (tmp_path / "b.pids").exists(), "b's notebook never started"
        time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait()
    rows = list(csv.DictReader(book.open(encoding="utf-8")))
    assert {(r["student"], r["status"]) for r in rows} == {("a", PASS)}
    deadline = time.monotonic() + 15  # the supervisor cleans up after its parent died
    while time.monotonic() < deadline and (list((tmp_path / "tmp").iterdir())
                                           or any(_alive(p) for p in _pids(tmp_path / "b.pids"))):
        time.sleep(0.2)
    assert not [p for p in _pids(tmp_path / "b.pids") if _alive(p)]
    assert list((tmp_path / "tmp").iterdir()) == [], "the killed grader's private folder was left behind"


# ------------------------------------------------------------------ course release


def test_release_has_no_solution_code_and_grades_like_the_course(tmp_path):
    dest = tmp_path / "release"
    out = _course("release", dest)
    assert out.returncode == 0, out.stderr
    files = [p for p in dest.rglob("*") if p.is_file()]
    rel = {p.relative_to(dest).as_posix() for p in files}
    assert not [r for r in rel if r.endswith(("notebook.py", "wrong_answers.py")) and r.startswith("chapters/")]
    assert {"Makefile", "README.md", "pyproject.toml", "tools/pyproject.toml", "course_lib/__init__.py",
            "tools/course/grader.py", "chapters/00_welcome/checks.py", "notebooks/00_welcome.ipynb",
            "key/00_welcome.ipynb"} <= rel
    assert not any(r.startswith(("solutions/", "tests/")) for r in rel)
    texts = {p.relative_to(dest).as_posix(): p.read_text(encoding="utf-8", errors="replace") for p in files}
    # No solution region's code: not one line of it in the notebooks (learner's and key/), not the
    # region anywhere else. course_lib (the library the course teaches) and the chapters' checks.py
    # are left out: the learner's kernel runs the checks, and until they move out of the kernel
    # some hold reference code for the exercises they check.
    # a line some learner notebook shows (a demo in chapter 01 may be a line of chapter 08's answer) is no secret
    learner = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "notebooks").glob("*.ipynb")))
    for ref_path in sorted(SOLUTIONS.glob("*.ipynb")):
        for cell in nbio.read(ref_path).cells:
            if not nbio.is_solution(cell):
                continue
            regions = re.findall(r"### BEGIN SOLUTION\n(.*?)\n\s*### END SOLUTION", cell.source, re.S)
            assert regions, cell.id
            for region in regions:
                lines = [line.strip() for line in region.splitlines() if len(line.strip()) >= 16]
                lines = [line for line in lines if json.dumps(line)[1:-1] not in learner]  # shown to learners anyway
                whole = textwrap.dedent(region).strip()
                for name, text in texts.items():
                    if name.startswith("course_lib/") or re.fullmatch(r"chapters/\w+/checks\.py", name):
                        continue
                    if name.endswith(".ipynb"):
                        leaked = [line for line in lines if json.dumps(line)[1:-1] in text]
                    else:
                        leaked = [whole] if "\n" in whole and whole in text else []
                    assert not leaked, f"{ref_path.name} {cell.id}: solution code in {name}: {leaked[:2]}"
    # key/ is the learner notebook plus the check cells' stored outputs
    key = nbio.read(dest / "key" / "00_welcome.ipynb")
    ref = nbio.read(SOLUTIONS / "00_welcome.ipynb")
    assert [c.outputs for c in nbio.check_cells(key)] == [c.outputs for c in nbio.check_cells(ref)]
    for c in key.cells:
        if nbio.is_solution(c):
            assert c.source == stub_source(next(r.source for r in ref.cells if r.get("id") == c.id))

    # the released grader grades a learner's notebook with key/ (nothing of the full course)
    work = dest / "mine"
    work.mkdir()
    (work / "00_welcome.ipynb").write_text(cases.correct())
    tampered = dest / "other" / "00_welcome.ipynb"  # graded against a key/ whose stored output differs
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = f"{dest / 'tools'}{os.pathsep}{dest}"
    run = subprocess.run([sys.executable, "-c",
                          "import course, course_lib; print(course.__file__, course_lib.__file__)"],
                         cwd=dest, env=env, capture_output=True, text=True)
    assert run.stdout.split() == [str(dest / "tools" / "course" / "__init__.py"),
                                  str(dest / "course_lib" / "__init__.py")]
    run = subprocess.run([sys.executable, "-m", "course", "grade", "mine/00_welcome.ipynb",
                          "notebooks/00_welcome.ipynb", "--json", "-", "-n", "2"],
                         cwd=dest, env=env, capture_output=True, text=True, timeout=300)
    data = {Path(r["path"]).parent.name: r for r in json.loads(run.stdout)}
    assert data["mine"]["passed"] and data["mine"]["points"] == 5
    assert {e["status"] for e in data["notebooks"]["exercises"]} == {NOT_ATTEMPTED}
    # proof that key/ is what it graded against: change a stored output there
    keyfile = dest / "key" / "00_welcome.ipynb"
    keyfile.write_text(keyfile.read_text().replace("20/20 cases", "19/20 cases"))
    tampered.parent.mkdir()
    tampered.write_text(cases.correct())
    run = subprocess.run([sys.executable, "-m", "course", "grade", "other/00_welcome.ipynb", "--json", "-"],
                         cwd=dest, env=env, capture_output=True, text=True, timeout=300)
    (res,) = json.loads(run.stdout)
    assert res["exercises"][0]["status"] == ERROR and "19/20" in res["exercises"][0]["message"]


def test_release_refuses_a_folder_in_use(tmp_path):
    (tmp_path / "x").write_text("mine")
    out = _course("release", tmp_path)
    assert out.returncode == 2 and "not an empty folder" in out.stderr


def test_a_kernel_that_cannot_start_is_one_clear_error(tmp_path):
    path = tmp_path / "00_welcome.ipynb"
    path.write_text(cases.correct())
    (res,) = grade_many([path], SOLUTIONS, 30, 1, limits=Limits(memory_mb=100))
    assert res.exercises == [] and "the Python kernel did not start" in res.error and "100 MB" in res.error


def test_the_frame_and_table_attacks_pass_in_self_study():
    """What makes them attacks: in the notebook (checks run there) they pass; graded, they earn nothing."""
    from course.checks import run_check

    for source, ex, name in ((attacks.READS_FRAMES, "00.1", "fizzbuzz"), (attacks.HARD_CODED, "00.3", "flat_index")):
        ns: dict = {}
        exec(source, ns)
        assert run_check(ex, ns[name]).startswith(f"✓ {ex}")


def test_drawing_inputs_is_one_thread_at_a_time(monkeypatch):
    """Input builders may change course_lib's global state (01.3 sets the default dtype to compute an expected
    value): parallel gradings in one grader must not draw inputs at the same time."""
    import threading

    from course import checks
    from course.grader import _draw_trials

    inside, overlaps = [], []

    def builder(rng):
        inside.append(1)
        if len(inside) > 1:
            overlaps.append(1)
        time.sleep(0.05)
        inside.pop()
        return [checks.call(1, expected=1)]

    ex = checks.Exercise("00.1", "fizzbuzz", 1, "", builder)
    ref = nbio.read(SOLUTIONS / "00_welcome.ipynb")
    threads = [threading.Thread(target=_draw_trials, args=(ref, {"00.1": ex}, k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not overlaps


@pytest.mark.slow
def test_a_forbidden_reference_call_fails_when_graded(tmp_path):
    """01.6 answered by calling cl.result_type under another name: the kernel's profiler sees it, the grader
    fails the case and names the function; every other exercise stays NOT ATTEMPTED."""
    nb = nbio.read(ROOT / "notebooks" / "01_tensor_and_storage.ipynb")
    cell = next(c for c in nb.cells if c.get("id") == "ex-01-6-solution")
    cell.source = ("from course_lib import result_type as promote\n\n"
                   "def result_type(a, b):\n    return promote(a, b)\n")
    path = tmp_path / "01_tensor_and_storage.ipynb"
    nbio.save(nb, path)
    (res,) = grade_many([path], SOLUTIONS, 30, 1)
    ex = {e.exercise: e for e in res.exercises}
    assert ex["01.6"].status == FAIL and ex["01.6"].points == 0
    assert "your code calls cl.result_type, which this exercise asks you not to use" in ex["01.6"].message
    assert {e.status for k, e in ex.items() if k != "01.6"} == {NOT_ATTEMPTED}


def test_replacing_the_reference_passes_in_self_study(monkeypatch):
    """What makes patches_reference an attack: with the reference replaced in the notebook, check() passes
    a wrong 03.1 there (expected values are computed beside the learner's code)."""
    import course_lib.autograd as ag
    from course.checks import CheckFailure, run_check

    ns: dict = {}
    exec(attacks.SWAPPED_MUL, ns)
    with pytest.raises(CheckFailure):
        run_check("03.1", ns["mul_backward"])
    true_grad = ag.grad
    monkeypatch.setattr(ag, "grad", lambda *a, **k: tuple(reversed(true_grad(*a, **k))))
    assert run_check("03.1", ns["mul_backward"]).startswith("✓ 03.1")


@pytest.mark.slow
def test_replacing_the_reference_earns_nothing_when_graded(tmp_path):
    path = tmp_path / "03_autograd.ipynb"
    path.write_text(attacks.patches_reference(), encoding="utf-8")
    (res,) = grade_many([path], SOLUTIONS, 30, 1)
    assert res.error is None and res.points == 0
    assert _statuses(res)["03.1"] == FAIL and "case 1/7 failed" in res.exercises[0].message
    assert {s for ex, s in _statuses(res).items() if ex != "03.1"} == {NOT_ATTEMPTED}


def test_a_check_cell_without_a_judge_raises_when_graded():
    """Every check cell runs its probe with the grader's inputs; one whose exercise the course's checks do not
    have raises (so it is an ERROR, never a pass), and no check cell is left for nbval to compare."""
    learner = nbio.read(ROOT / "notebooks" / "00_welcome.ipynb")
    ref = nbio.read(SOLUTIONS / "00_welcome.ipynb")
    plan = build_graded_copy(learner, ref, {}, [], {"00.1": '{"exercise": "00.1"}'})
    checks = {nbio.exercise_of(c): c for c in plan.nb.cells if nbio.is_check(c)}
    assert checks["00.1"].source.startswith("from course.checks import _probe_cell; _probe_cell('00.1', fizzbuzz, ")
    assert checks["00.2"].source.startswith("raise RuntimeError('the checks in chapters/ have no exercise 00.2")
    assert all("nbval-check-output" not in c.metadata.get("tags", []) and not c.get("outputs")
               for c in checks.values())
