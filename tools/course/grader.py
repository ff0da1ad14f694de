"""``course grade``: grade learner notebooks against the solutions' check cells.

Recipe (see docs/DESIGN.md, "Known traps of nbval as a grader"): plain ``pytest --nbval`` is not
a grader, so for each learner notebook we

1. take the check cells (source and expected output) from the matching
   ``solutions/`` notebook and find them in the learner's copy by cell id,
   then by ``metadata.grading.exercise``; edited ones are restored, deleted
   ones re-inserted after the exercise's solution cell;
2. strip the learner's outputs and any nbval tags or comment markers;
3. write that graded copy next to the learner's file (so relative paths
   keep working) and run ``pytest --nbval-lax --nbval-current-env`` on it
   with ``--noconftest``, an empty ini and ``--rootdir``, a per-cell
   timeout, and a watchdog that kills the run if the kernel stops answering;
4. after a timeout, replace the cell that timed out (a solution cell by its
   stub, any other cell by ``pass``) and run again, so later exercises are
   still graded;
5. map each cell's result back to its exercise and remove the temporary files.
"""
from __future__ import annotations

import copy
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from . import notebook as nbio
from .paths import CHAPTERS_ENV, CourseError, chapter_dirs, chapter_of_name, find_solutions_dir
from .student import solution_for, stub_source

PASS, FAIL, NOT_ATTEMPTED, TIMEOUT, ERROR = "PASS", "FAIL", "NOT ATTEMPTED", "TIMEOUT", "ERROR"

NBVAL_TAGS = {"nbval-check-output", "nbval-ignore-output", "nbval-raises-exception", "nbval-skip",
              "nbval-lax", "raises-exception"}
_NBVAL_MARKER = re.compile(r"^(\s*)#\s*NBVAL_\w+\s*$", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CHECK_IMPORT = "from course import check; "
NBVAL_OUTPUT_TIMEOUT = 5  # seconds nbval waits for a kernel message
MAX_RERUNS = 5


@dataclass
class ExerciseResult:
    exercise: str
    title: str
    status: str
    points: int
    max_points: int
    message: str = ""


@dataclass
class NotebookResult:
    path: str
    chapter: str | None = None
    exercises: list[ExerciseResult] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def points(self) -> int:
        return sum(e.points for e in self.exercises)

    @property
    def max_points(self) -> int:
        return sum(e.max_points for e in self.exercises)

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.exercises) and all(e.status == PASS for e in self.exercises)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(points=self.points, max_points=self.max_points, passed=self.passed)
        return d


# ---------------------------------------------------------------- reading


def _read_learner(path: Path) -> nbformat.NotebookNode:
    if not path.exists():
        raise CourseError(f"{path}: file not found")
    if not path.is_file():
        raise CourseError(f"{path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CourseError(f"{path}: cannot read it ({e})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise CourseError(
            f"{path}: not a valid notebook: invalid JSON at line {e.lineno}, column {e.colno} "
            f"({e.msg}). Was it cut short while saving? Jupyter keeps the last checkpoint in "
            ".ipynb_checkpoints/; or start again from a fresh copy (course make-student)."
        ) from None
    if not isinstance(raw, dict) or "cells" not in raw or "nbformat" not in raw:
        raise CourseError(f"{path}: this JSON file is not a Jupyter notebook")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:  # noqa: BLE001 - nbformat raises many kinds
        raise CourseError(f"{path}: not a notebook nbformat can read: {e}") from None
    for cell in nb.cells:
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise CourseError(f"{path}: a cell has an unknown cell_type {cell.get('cell_type')!r}")
        if not isinstance(cell.get("source", ""), str):
            raise CourseError(f"{path}: a cell's source is not text")
        cell.setdefault("metadata", nbformat.NotebookNode())
    return nb


def _learner_chapter(nb) -> str | None:
    chapter = nb.metadata.get("course", {}).get("chapter") if isinstance(nb.metadata.get("course"), dict) else None
    if chapter:
        return str(chapter)
    chapters = {e.split(".")[0] for c in nb.cells if (e := nbio.exercise_of(c))}
    return chapters.pop() if len(chapters) == 1 else None


def _titles(ref, chapters: Path | None) -> dict[str, str]:
    from .checks import chapter_checks, get_exercise

    titles = {}
    for ex in nbio.exercises(ref):
        try:
            chapter_checks(ex.split(".")[0], chapters)
            titles[ex] = get_exercise(ex).title
        except Exception:  # noqa: BLE001 - a broken check module is reported by the run itself
            titles[ex] = ""
    return titles


# ---------------------------------------------------------------- graded copy


@dataclass
class _Plan:
    """The graded copy and what each of its code cells is."""

    nb: nbformat.NotebookNode
    roles: list[tuple[str, str | None]]  # per code cell: ("check"|"solution"|"other", exercise)
    ids: list[str]  # per code cell


def _strip_learner_cell(cell) -> None:
    if cell.get("cell_type") == "code":
        cell.outputs = []
        cell.execution_count = None
        cell.source = _NBVAL_MARKER.sub(r"\1#", cell.source)
    md = cell.metadata
    if "tags" in md:
        md["tags"] = [t for t in md["tags"] if t not in NBVAL_TAGS]
    for key in ("nbval", "widgets"):
        md.pop(key, None)


def build_graded_copy(learner, ref, replaced: dict[str, str], notes: list[str] | None = None) -> _Plan:
    """The notebook actually run: learner's cells + the solutions' check cells.

    `replaced` maps cell ids of the graded copy to the source that replaces
    them (cells that timed out in an earlier run).
    """
    notes = notes if notes is not None else []
    cells = [copy.deepcopy(c) for c in learner.cells]
    # readable, unique ids (nbformat 4.4 notebooks have none)
    seen: set[str] = set()
    for i, c in enumerate(cells):
        cid = c.get("id")
        if not cid or cid in seen or not nbio.CELL_ID_PATTERN.match(str(cid)):
            cid = f"learner-cell-{i}"
            while cid in seen:
                cid += "-x"
            c["id"] = cid
        seen.add(cid)
        _strip_learner_cell(c)

    ref_checks = nbio.check_cells(ref)
    ref_ids = [c.get("id") for c in ref.cells]
    placed: list[tuple[object, object]] = []  # (ref check, learner cell to replace or None)
    used: set[int] = set()
    for rc in ref_checks:
        ex = nbio.exercise_of(rc)
        match = next((c for c in cells if c["id"] == rc.id), None)
        how = "id"
        if match is None:
            match = next((c for c in cells if id(c) not in used and c.get("cell_type") == "code"
                          and nbio.exercise_of(c) == ex and "check" in nbio.tags(c)), None)
            how = "exercise"
        if match is not None:
            used.add(id(match))
            if match.get("source", "").strip() != rc.source.strip() or match.get("cell_type") != "code":
                notes.append(f"{ex}: your check cell was edited; the original was restored")
            elif how == "exercise":
                pass  # cut and pasted (new id): nothing to tell
        else:
            notes.append(f"{ex}: the check cell was missing; it was put back")
        placed.append((rc, match))

    # other cells that still claim to be check cells (copies) become plain code
    for c in cells:
        if id(c) not in used and "check" in nbio.tags(c):
            c.metadata["tags"] = [t for t in nbio.tags(c) if t != "check"]
            c.metadata.pop("grading", None)

    def graded_check(rc):
        g = copy.deepcopy(rc)
        g.source = CHECK_IMPORT + rc.source
        g.execution_count = rc.execution_count or 1
        g.metadata["tags"] = ["check", "nbval-check-output"]
        return g

    ref_solution_ids = {c.id: nbio.exercise_of(c) for c in ref.cells if nbio.is_solution(c)}

    def solution_exercise(c) -> str | None:
        if c.get("cell_type") != "code":
            return None
        if nbio.is_solution(c):
            return nbio.exercise_of(c)
        return ref_solution_ids.get(c["id"])

    for rc, match in placed:
        ex = nbio.exercise_of(rc)
        new = graded_check(rc)
        if match is not None:
            cells[cells.index(match)] = new
        else:
            cells.append(new)  # positioned below
        # put the check after the exercise's last solution cell (or where the
        # solutions notebook has it, if the learner has no solution cell)
        cells.remove(new)
        sol_pos = [i for i, c in enumerate(cells) if solution_exercise(c) == ex]
        if sol_pos:
            cells.insert(sol_pos[-1] + 1, new)
            continue
        pos = len(cells)
        for prev in reversed(ref_ids[: ref_ids.index(rc.id)]):
            j = next((i for i, c in enumerate(cells) if c["id"] == prev), None)
            if j is not None:
                pos = j + 1
                break
        cells.insert(pos, new)

    # optional cells the solutions mark as skipped when grading (by id; never solution or check cells)
    instead = {c.get("id"): r for c in ref.cells if (r := nbio.grader_replacement(c)) is not None}
    for c in cells:
        if c.get("cell_type") == "code" and c["id"] in instead and not nbio.is_check(c) \
                and solution_exercise(c) is None:
            c.source = instead[c["id"]]

    # cells that timed out before: stub or pass
    for c in cells:
        if c["id"] in replaced:
            c.source = replaced[c["id"]]

    nb = nbformat.v4.new_notebook()
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.metadata = copy.deepcopy(ref.metadata)
    nb.cells = cells
    roles, ids = [], []
    for c in cells:
        if c.get("cell_type") != "code":
            continue
        ids.append(c["id"])
        if nbio.is_check(c):
            roles.append(("check", nbio.exercise_of(c)))
        elif (ex := solution_exercise(c)) is not None:
            roles.append(("solution", ex))
        else:
            roles.append(("other", None))
    return _Plan(nb, roles, ids)


# ---------------------------------------------------------------- running


@dataclass
class _Run:
    reports: dict[int, dict]  # code-cell index -> report event
    started: list[int]
    killed_at: int | None  # code cell running when the watchdog killed the run
    finished: bool
    collect_error: str | None
    log: str


def _cell_num(nodeid: str) -> int | None:
    m = re.search(r"::Cell (\d+)$", nodeid)
    return int(m.group(1)) if m else None


def _import_paths() -> list[str]:
    """Folders that make this `course` package and its `course_lib` importable in the grading run."""
    import importlib.util

    paths = [Path(__file__).resolve().parents[1]]
    spec = importlib.util.find_spec("course_lib")
    if spec is not None and spec.origin:
        paths.append(Path(spec.origin).resolve().parents[1])
    return list(dict.fromkeys(str(p) for p in paths))


def _run_pytest(graded: Path, timeout: float, workdir: Path, chapters: Path | None) -> _Run:
    events = workdir / "events.jsonl"
    events.write_text("")
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n")
    cmd = [sys.executable, "-m", "pytest", graded.name,
           "--nbval-lax", "--nbval-current-env", f"--nbval-cell-timeout={timeout:g}",
           "--noconftest", "-c", str(ini), "--rootdir", str(graded.parent),
           "-p", "no:cacheprovider", "-p", "course._pytest_plugin",
           # plugins a notebook run never needs; each costs start-up time
           "-p", "no:xdist", "-p", "no:hypothesispytest",
           "-q", "--color=no", "-o", "console_output_style=classic"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # One BLAS/OpenMP thread per kernel: grading runs several kernels side by side on small
    # machines, and oversubscribed BLAS threads make small matrix products far slower.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    env["COURSE_GRADER_EVENTS"] = str(events)
    env["PYTHONPATH"] = os.pathsep.join(_import_paths() + [p for p in [os.environ.get("PYTHONPATH")] if p])
    if chapters is not None:  # the checks of the same course as the solutions
        env[CHAPTERS_ENV] = str(chapters)
    env.setdefault("MPLBACKEND", "Agg")
    log_path = workdir / "pytest.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=graded.parent, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        killed_at = None
        budget_cell = timeout + NBVAL_OUTPUT_TIMEOUT + 10
        last_change, last_size, current = time.monotonic(), -1, None
        while proc.poll() is None:
            time.sleep(0.05)
            size = events.stat().st_size
            if size != last_size:
                last_size, last_change = size, time.monotonic()
                current = None
                for line in events.read_text(encoding="utf-8").splitlines():
                    ev = json.loads(line)
                    if ev["event"] == "start":
                        current = _cell_num(ev["nodeid"])
                    elif ev["event"] in ("report", "finish"):
                        if ev["event"] == "finish" or ev.get("when") == "call":
                            current = None
            quiet = time.monotonic() - last_change
            # backstop: nbval's own timeout did not stop the cell (output keeps
            # coming, or the kernel does not answer), or the start-up hangs
            if quiet > (budget_cell if current is not None else 120):
                killed_at = current
                _kill(proc)
                break
    reports: dict[int, dict] = {}
    started: list[int] = []
    finished, collect_error = False, None
    for line in events.read_text(encoding="utf-8").splitlines():
        ev = json.loads(line)
        if ev["event"] == "start":
            n = _cell_num(ev["nodeid"])
            if n is not None:
                started.append(n)
        elif ev["event"] == "report":
            n = ev.get("cell_num")
            if n is not None and (n not in reports or reports[n]["outcome"] == "passed"):
                reports[n] = ev
        elif ev["event"] == "collect_error":
            collect_error = ev["message"]
        elif ev["event"] == "finish":
            finished = True
    return _Run(reports, started, killed_at, finished, collect_error,
                log_path.read_text(encoding="utf-8", errors="replace"))


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # pytest and its kernel
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


# ---------------------------------------------------------------- verdicts


def _clean(lines) -> list[str]:
    if isinstance(lines, str):
        lines = lines.splitlines()
    out = []
    for line in lines:
        out.extend(_ANSI.sub("", line).splitlines())
    return out


def _error_text(rep: dict, last: int = 4) -> str:
    ename = rep.get("ename")
    if ename in ("CheckFailure", "NotAttempted"):
        return "\n".join(l for l in _clean(rep.get("traceback", [])) if l.strip())
    tb = [l for l in _clean(rep.get("traceback", [])) if l.strip() and not set(l.strip()) <= {"-"}]
    if tb:
        # IPython's traceback: keep the last lines (where, and the exception)
        return "\n".join(tb[-last:])
    if ename:
        return f"{ename}: {rep.get('evalue', '')}"
    return rep.get("message", "")


def _is_timeout(rep: dict) -> bool:
    return "Timeout of" in rep.get("message", "") and "waiting for output" not in rep.get("message", "")


def _is_kernel_lost(rep: dict) -> bool:
    return "waiting for output" in rep.get("message", "")


def _verdicts(plan: _Plan, run: _Run, ref, titles, timed_out: dict[str, str], notes: list[str]) -> list[ExerciseResult]:
    results = []
    by_id = {cid: n for n, cid in enumerate(plan.ids)}
    check_points = {nbio.exercise_of(c): int(c.metadata["grading"].get("points", 1)) for c in nbio.check_cells(ref)}
    for ex in nbio.exercises(ref):
        pts = check_points[ex]
        title = titles.get(ex, "")

        def result(status, message=""):
            return ExerciseResult(ex, title, status, pts if status == PASS else 0, pts, message.strip())

        sol_cells = [n for n, (role, e) in enumerate(plan.roles) if role == "solution" and e == ex]
        chk = next(n for n, (role, e) in enumerate(plan.roles) if role == "check" and e == ex)
        mine = [plan.ids[n] for n in sol_cells + [chk]]
        hit = [cid for cid in mine if cid in timed_out]
        if hit:
            results.append(result(*_timeout_verdict(timed_out[hit[0]])))
            continue
        rep = run.reports.get(chk)
        sol_reps = [run.reports[n] for n in sol_cells if n in run.reports and run.reports[n]["outcome"] == "failed"]
        if rep is None:
            results.append(result(ERROR, "not graded: the grading run stopped before this check ran"
                                  + (f"\n{run.collect_error}" if run.collect_error else "")))
            continue
        if rep["outcome"] == "passed" and not rep.get("xfail"):
            results.append(result(PASS))
            continue
        if rep.get("xfail"):
            results.append(result(ERROR, "not graded: an earlier cell timed out too often"))
            continue
        if rep.get("ename") == "NotAttempted" or any(s.get("ename") == "NotImplementedError" for s in sol_reps):
            results.append(result(NOT_ATTEMPTED, "still raises NotImplementedError"))
            continue
        if rep.get("ename") == "CheckFailure":
            results.append(result(FAIL, _error_text(rep)))
            continue
        if sol_reps:
            text = _error_text(sol_reps[0]).splitlines() or ["an error"]
            results.append(result(FAIL, "\n".join([f"your solution cell raised {text[-1]}"] + text[:-1])))
            continue
        if rep.get("message", "").startswith("Cell outputs differ"):
            expected = next((o.get("text", "") for o in next(c for c in nbio.check_cells(ref) if nbio.exercise_of(c) == ex).outputs
                             if o.get("output_type") == "stream"), "")
            results.append(result(ERROR, f"the check printed {rep.get('stdout', '').strip()!r} but the solutions "
                                  f"expect {expected.strip()!r}: are course_lib and solutions/ from the same version?"))
            continue
        if _is_kernel_lost(rep) or rep.get("exc_type") == "RuntimeError":
            results.append(result(ERROR, "the Python kernel died while checking (does your code exit Python?)"))
            continue
        earlier = [n for n in range(chk) if n in run.reports and run.reports[n]["outcome"] == "failed"
                   and plan.roles[n][0] == "other"]
        msg = _error_text(rep)
        if earlier:
            msg += f"\n(an earlier cell failed first: cell id {plan.ids[earlier[0]]!r})"
        results.append(result(ERROR, "the check could not run:\n" + msg))
    return results


def _timeout_verdict(reason: str) -> tuple[str, str]:
    return (ERROR, reason) if reason.startswith("the Python kernel") else (TIMEOUT, reason)


# ---------------------------------------------------------------- grading


def grade_notebook(path: str | Path, solutions_dir: str | Path | None = None, timeout: float = 30,
                   keep: bool = False) -> NotebookResult:
    """Grade one learner notebook; never raises (problems become `error`)."""
    path = Path(path)
    t0 = time.monotonic()
    result = NotebookResult(str(path))
    try:
        _grade(path, Path(solutions_dir) if solutions_dir else None, timeout, keep, result)
    except CourseError as e:
        result.error = str(e)
        result.exercises = []
    except Exception as e:  # noqa: BLE001 - the grader reports, it does not crash
        result.error = f"internal grader error ({type(e).__name__}: {e}); please report it"
        result.exercises = []
    result.seconds = round(time.monotonic() - t0, 2)
    return result


def _grade(path: Path, solutions_dir: Path | None, timeout: float, keep: bool, result: NotebookResult) -> None:
    learner = _read_learner(path)
    solutions_dir = solutions_dir or find_solutions_dir(path.parent)
    ref_path = solution_for(path, solutions_dir)
    ref = nbio.read(ref_path)
    chapter = ref.metadata.get("course", {}).get("chapter") or chapter_of_name(ref_path.name)
    result.chapter = chapter
    theirs = _learner_chapter(learner)
    if theirs is not None and chapter is not None and theirs != chapter:
        raise CourseError(
            f"{path}: this is the notebook of chapter {theirs}, not of chapter {chapter} "
            f"({ref_path.name}); grade it under its own name (e.g. {theirs}_....ipynb)"
        )
    if not nbio.check_cells(ref):
        raise CourseError(f"{ref_path}: the solutions notebook has no check cells")
    chapters = solutions_dir.parent / "chapters"
    chapters = chapters.resolve() if chapter_dirs(chapters) else None
    titles = _titles(ref, chapters)

    token = secrets.token_hex(4)
    graded = path.absolute().parent / f".{path.stem}.{token}.graded.ipynb"
    workdir = Path(tempfile.mkdtemp(prefix=".grading-"))
    timed_out: dict[str, str] = {}  # graded-copy cell id -> reason
    replaced: dict[str, str] = {}
    ref_solutions = {nbio.exercise_of(c): c for c in ref.cells if nbio.is_solution(c)}
    try:
        for attempt in range(MAX_RERUNS + 1):
            notes: list[str] = []
            plan = build_graded_copy(learner, ref, replaced, notes)
            try:
                graded.write_text(nbio.dumps(plan.nb), encoding="utf-8")
            except OSError as e:
                raise CourseError(f"{path}: cannot write the graded copy next to it ({e})") from None
            run = _run_pytest(graded, timeout, workdir, chapters)
            if not run.reports and not run.started:
                tail = "\n".join(run.log.strip().splitlines()[-8:])
                raise CourseError(f"{path}: the grading run did not start:\n{run.collect_error or tail}")
            new = {}
            for n, rep in run.reports.items():
                if rep.get("xfail"):
                    continue
                if _is_timeout(rep) and "Failed to interrupt" in rep.get("message", ""):
                    new[plan.ids[n]] = (f"a cell ran longer than {timeout:g} s and could not be interrupted "
                                        "(does it catch KeyboardInterrupt?)")
                elif _is_timeout(rep):
                    new[plan.ids[n]] = f"a cell ran longer than {timeout:g} s (an infinite loop?)"
                elif _is_kernel_lost(rep):
                    new[plan.ids[n]] = "the Python kernel died or stopped answering while running this code"
            if run.killed_at is not None:
                new[plan.ids[run.killed_at]] = (f"a cell ran longer than {timeout:g} s and could not be "
                                                "interrupted (does it catch KeyboardInterrupt?)")
            new = {k: v for k, v in new.items() if k not in timed_out}
            if not new or attempt == MAX_RERUNS:
                break
            timed_out.update(new)
            for cid in new:
                n = plan.ids.index(cid)
                role, ex = plan.roles[n]
                if role == "solution" and ex in ref_solutions:
                    replaced[cid] = stub_source(ref_solutions[ex].source)
                else:
                    replaced[cid] = "pass"
        timed_out.update(new)
        result.notes = notes + _cell_notes(plan, run, timed_out)
        result.exercises = _verdicts(plan, run, ref, titles, timed_out, result.notes)
    finally:
        if not keep:
            graded.unlink(missing_ok=True)
            shutil.rmtree(workdir, ignore_errors=True)


def _cell_notes(plan: _Plan, run: _Run, timed_out: dict[str, str]) -> list[str]:
    notes = []
    for n, (role, _ex) in enumerate(plan.roles):
        rep = run.reports.get(n)
        if role == "other" and rep is not None and rep["outcome"] == "failed" and not rep.get("xfail") \
                and plan.ids[n] not in timed_out:
            first = _error_text(rep, last=1)
            notes.append(f"code cell {n + 1} (id {plan.ids[n]}) raised an error: {first}")
        elif role == "other" and plan.ids[n] in timed_out:
            notes.append(f"code cell {n + 1} (id {plan.ids[n]}): {timed_out[plan.ids[n]]}; it was skipped")
    return notes


def grade_many(paths: list[Path], solutions_dir: Path | None, timeout: float, jobs: int) -> list[NotebookResult]:
    """Grade notebooks in parallel, one notebook per worker (never split)."""
    if jobs <= 1 or len(paths) <= 1:
        return [grade_notebook(p, solutions_dir, timeout) for p in paths]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda p: grade_notebook(p, solutions_dir, timeout), paths))


# ---------------------------------------------------------------- reporting


def scoreboard(res: NotebookResult, max_lines: int = 6) -> str:
    head = f"{res.path}" + (f"  (chapter {res.chapter})" if res.chapter else "")
    lines = [head]
    if res.error:
        lines.append(f"  ERROR  {res.error}")
        return "\n".join(lines)
    width = max([len(f"{e.exercise} {e.title}") for e in res.exercises] + [10])
    for e in res.exercises:
        name = f"{e.exercise} {e.title}".ljust(width)
        lines.append(f"  {name}  {e.status:<13}  {e.points}/{e.max_points}")
        if e.status != PASS and e.message:
            msg = e.message.splitlines()
            shown = msg[:max_lines] + (["..."] if len(msg) > max_lines else [])
            lines.extend("      " + m for m in shown)
    lines.append(f"  {'total'.ljust(width)}  {'':<13}  {res.points}/{res.max_points}")
    for note in res.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)
