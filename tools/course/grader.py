"""``course grade``: grade learner notebooks against the solutions' check cells.

Recipe (see docs/DESIGN.md, "Known traps of nbval as a grader"): plain ``pytest --nbval`` is not
a grader, so for each learner notebook we

1. read, before any learner code runs, what grading needs (:class:`CourseSnapshot`): the
   solutions notebooks (the answer key), the chapters' checks, the `course` and `course_lib`
   packages, and fingerprints of the course's files; with ``--batch``, every submission too;
2. take the check cells (source and expected output) from the matching solutions notebook and
   find them in the learner's copy by cell id, then by ``metadata.grading.exercise``; edited ones
   are restored, deleted ones re-inserted after the exercise's solution cell;
3. rebuild the learner's cells without their outputs, nbval tags, comment markers or metadata;
4. write that graded copy into a private temporary folder of its own (mode 0700) beside private
   copies of the checks and libraries, and run ``pytest --nbval-lax --nbval-current-env`` on it
   under a supervisor (``_supervisor.py``) with a scrubbed environment, kernel limits (memory,
   processes, file size), a per-cell timeout, a per-cell output cap and a total time limit for the
   notebook; results come back through a Unix socket pair only pytest and the grader hold (unlike
   a pipe, it cannot be opened through ``/proc/<pid>/fd``, not even by root), each line signed
   with a nonce the kernel never sees (``_pytest_plugin.py``);
5. after a cell timed out, killed its kernel, flooded its output or killed the run, replace that
   cell (a solution cell by its stub, any other cell by ``pass``) and run again, so later
   exercises are still graded;
6. kill whatever is left of the run, map each cell's result back to its exercise, and report
   files of the course that changed while the notebook ran.
"""
from __future__ import annotations

import ast
import copy
import json
import os
import re
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from . import _isolation as iso
from . import checks as chk
from . import notebook as nbio
from .paths import CourseError, chapter_dirs, chapter_of_name, find_solutions_dir
from .student import stub_source

PASS, FAIL, NOT_ATTEMPTED, TIMEOUT, ERROR = "PASS", "FAIL", "NOT ATTEMPTED", "TIMEOUT", "ERROR"

NBVAL_TAGS = {"nbval-check-output", "nbval-ignore-output", "nbval-raises-exception", "nbval-skip",
              "nbval-lax", "raises-exception"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: what a check cell runs when the course's checks have no such exercise (never a pass)
NO_CHECK = ("raise RuntimeError('the checks in chapters/ have no exercise {ex}: are chapters/ and the answer key "
            "from the same version?')")
NBVAL_OUTPUT_TIMEOUT = 5  # seconds nbval waits for a kernel message
MAX_RERUNS = 5
_FD_ENV, _LIMITS_ENV = "COURSE_GRADER_FD", "COURSE_KERNEL_LIMITS"  # read by _pytest_plugin
_MAX_EVENT_LINE = 4 * 1024 * 1024
_MAX_DATA_FILE = 16 * 1024 * 1024  # larger files beside the notebooks (a learner's checkpoints) are not copied


@dataclass(frozen=True)
class Limits:
    """What grading one notebook may use."""

    cell_timeout: float = 30.0  # seconds one cell may run
    notebook_timeout: float = 300.0  # seconds for the whole notebook, reruns included
    memory_mb: int = 4096  # the kernel's data segment (RLIMIT_DATA; RLIMIT_AS off Linux)
    processes: int = 256  # processes the kernel may start (RLIMIT_NPROC; not for root)
    output_mb: float = 16.0  # output of one cell
    file_size_mb: int = 2048  # largest file the kernel may write


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
    #: things an instructor must look at: course files changed while this notebook ran, forged results
    warnings: list[str] = field(default_factory=list)
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


# ---------------------------------------------------------------- what grading needs, read once


def _titles_from_source(source: bytes) -> dict[str, str]:
    """``{"03.2": "mul_backward"}`` from the ``@exercise(...)`` decorators of a checks.py, without running it."""
    titles: dict[str, str] = {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return titles
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "exercise" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            title = next((k.value.value for k in node.keywords if k.arg == "title"
                          and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)), "")
            titles[node.args[0].value] = title
    return titles


def _data_file(path: Path) -> bool:
    """Files beside the course's learner notebooks that a run gets a copy of (relative paths keep working)."""
    return path.suffix != ".ipynb" and not path.name.startswith(".") and path.stat().st_size <= _MAX_DATA_FILE


def _chapter_file(path: Path) -> bool:
    """Files of a chapter folder a grading run needs: its checks, not its source or wrong answers."""
    return path.name not in ("notebook.py", "wrong_answers.py")


@dataclass
class CourseSnapshot:
    """Everything grading reads from the course, read once before any learner code runs.

    Edits to the files on disk after this (by a notebook being graded, say) change no grading
    made with this snapshot; :attr:`watch` finds them.
    """

    solutions_dir: Path
    refs: dict[str, bytes]  # solutions notebook name -> file contents
    chapters: iso.FileSnapshot  # NN_name/checks.py, ... (None of the chapters' sources)
    libs: iso.FileSnapshot  # course/..., course_lib/...
    data: iso.FileSnapshot  # files beside the course's learner notebooks (data a chapter reads)
    titles: dict[str, str]
    watch: iso.Watch
    #: chapter -> its exercises as the grader judges them (checks.py run from the bytes above)
    judged: dict[str, dict[str, chk.Exercise]] = field(default_factory=dict, repr=False)
    _parsed: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def take(cls, solutions_dir: Path, wanted: set[str] | None = None) -> "CourseSnapshot":
        """Read the course now; `wanted` (chapter numbers) limits the checks loaded to those chapters' (None: all)."""
        solutions_dir = Path(solutions_dir).resolve()
        if not solutions_dir.is_dir():
            raise CourseError(f"{solutions_dir}: no such folder")
        refs = {p.name: p.read_bytes() for p in sorted(solutions_dir.glob("*.ipynb"))
                if not p.name.startswith(".") and not p.is_symlink()}
        chapters_dir = solutions_dir.parent / "chapters"
        dirs = chapter_dirs(chapters_dir)
        chapters = iso.FileSnapshot()
        for d in dirs.values():
            chapters += iso.FileSnapshot.of(d, _chapter_file, prefix=d.name)
        titles: dict[str, str] = {}
        for rel in chapters.names():
            if rel.endswith("/checks.py") and (wanted is None or chapter_of_name(rel) in wanted):
                titles.update(_titles_from_source(chapters.read(rel)))
        course_pkg = Path(__file__).resolve().parent
        course_lib = iso.package_dir("course_lib")
        if course_lib is None:
            raise CourseError("course_lib is not installed in this Python")
        libs = iso.FileSnapshot.of(course_pkg, prefix="course") + iso.FileSnapshot.of(course_lib, prefix="course_lib")
        data = iso.FileSnapshot()
        notebooks = solutions_dir.parent / "notebooks"
        if notebooks.is_dir():
            data = iso.FileSnapshot.of(notebooks, _data_file)
        watch = iso.course_watch(solutions_dir, chapters_dir if dirs else None, [course_pkg, course_lib])
        # the judge side of every check, loaded now, before any learner code runs
        judged: dict[str, dict[str, chk.Exercise]] = {}
        for rel in chapters.names():
            folder, _, name = rel.partition("/")
            if name == "checks.py" and (number := chapter_of_name(folder)) is not None \
                    and (wanted is None or number in wanted):
                judged[number] = chk.load_checks_source(number, chapters.read(rel), str(chapters_dir / rel))
        return cls(solutions_dir, refs, chapters, libs, data, titles, watch, judged)

    def judged_for(self, chapter: str) -> dict[str, chk.Exercise]:
        """The chapter's exercises as judged; loaded now, from the snapshot's bytes, if `take` left them out."""
        with self._lock:
            if chapter not in self.judged:
                rel = next((r for r in self.chapters.names() if r.endswith("/checks.py")
                            and chapter_of_name(r) == chapter), None)
                if rel is None:
                    return {}
                self.titles.update(_titles_from_source(self.chapters.read(rel)))
                self.judged[chapter] = chk.load_checks_source(
                    chapter, self.chapters.read(rel), str(self.solutions_dir.parent / "chapters" / rel))
            return self.judged[chapter]

    def ref_for(self, path: Path) -> tuple[str, nbformat.NotebookNode]:
        """The solutions notebook a learner's notebook is graded against (name, notebook)."""
        name = path.name if path.name in self.refs else None
        if name is None and (chapter := chapter_of_name(path.name)) is not None:
            found = [n for n in self.refs if n.startswith(f"{chapter}_")]
            name = found[0] if len(found) == 1 else None
        if name is None:
            known = ", ".join(self.refs) or "none"
            raise CourseError(
                f"{path.name}: no solutions notebook for it in {self.solutions_dir} "
                f"(file names must start with the chapter number, like 03_autograd.ipynb; known: {known})")
        with self._lock:
            if name not in self._parsed:
                self._parsed[name] = nbformat.reads(self.refs[name].decode("utf-8"), as_version=4)
            return name, self._parsed[name]


# ---------------------------------------------------------------- reading


def _read_learner(path: Path, data: bytes | None = None) -> nbformat.NotebookNode:
    if data is None:
        if path.is_symlink():
            raise CourseError(f"{path}: a symbolic link; grade the file itself")
        if not path.exists():
            raise CourseError(f"{path}: file not found")
        if not path.is_file():
            raise CourseError(f"{path}: not a file")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise CourseError(f"{path}: cannot read it ({e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
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
    if not isinstance(nb.get("cells"), list):
        raise CourseError(f"{path}: its cells are not a list")
    if not isinstance(nb.get("metadata"), dict):
        nb.metadata = nbformat.NotebookNode()
    for cell in nb.cells:
        if not isinstance(cell, dict):
            raise CourseError(f"{path}: a cell is not a JSON object")
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise CourseError(f"{path}: a cell has an unknown cell_type {cell.get('cell_type')!r}")
        if not isinstance(cell.get("source", ""), str):
            raise CourseError(f"{path}: a cell's source is not text")
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = nbformat.NotebookNode()
    return nb


def _learner_chapter(nb) -> str | None:
    course = nb.metadata.get("course")
    chapter = course.get("chapter") if isinstance(course, dict) else None
    if chapter:
        return str(chapter)
    chapters = {e.split(".")[0] for c in nb.cells if (e := nbio.exercise_of(c))}
    return chapters.pop() if len(chapters) == 1 else None


# ---------------------------------------------------------------- graded copy


@dataclass
class _Plan:
    """The graded copy and what each of its code cells is."""

    nb: nbformat.NotebookNode
    roles: list[tuple[str, str | None]]  # per code cell: ("check"|"solution"|"other", exercise)
    ids: list[str]  # per code cell


#: the comment markers nbval obeys (a line ``#`` ... ``NBVAL_SKIP``, with any number of ``#``)
_NBVAL_MARKERS = ("NBVAL_", "PYTEST_VALIDATE_")


def _strip_markers(source: str) -> str:
    """Neutralise every nbval comment marker, however many ``#`` and whatever line break nbval sees."""
    out = []
    for line in source.splitlines(keepends=True):  # the same line breaks as nbval's splitlines()
        body = line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        stripped = body.strip()
        if stripped.startswith("#") and stripped.lstrip("#").strip().startswith(_NBVAL_MARKERS):
            line = body[: len(body) - len(body.lstrip())] + "#" + line[len(body):]
        out.append(line)
    return "".join(out)


def _learner_cell(cell, cid: str) -> nbformat.NotebookNode:
    """The learner's cell rebuilt from its source: no outputs, nbval markers, nbval tags or other metadata."""
    source = cell.get("source", "")
    kind = cell.get("cell_type")
    md = {}
    tags = [t for t in nbio.tags(cell) if t not in NBVAL_TAGS]
    if tags:
        md["tags"] = tags
    grading = cell.get("metadata", {}).get("grading")
    if isinstance(grading, dict) and isinstance(grading.get("exercise"), str):
        md["grading"] = {"exercise": grading["exercise"]}
    if kind == "code":
        return nbformat.v4.new_code_cell(_strip_markers(source), id=cid, metadata=md)
    if kind == "markdown":
        return nbformat.v4.new_markdown_cell(source, id=cid, metadata=md)
    return nbformat.v4.new_raw_cell(source, id=cid, metadata=md)


def probe_source(check_source: str, payload: str) -> str:
    """The check cell a grading run executes for ``check("NN.M", obj)``: the probe, given the inputs."""
    call = ast.parse(check_source).body[0].value
    exercise = call.args[0].value
    obj = ast.get_source_segment(check_source, call.args[1])
    return f"from course.checks import _probe_cell; _probe_cell({exercise!r}, {obj}, {payload!r})"


def build_graded_copy(learner, ref, replaced: dict[str, str], notes: list[str] | None = None,
                      probes: dict[str, str] | None = None) -> _Plan:
    """The notebook actually run: learner's cells + the solutions' check cells.

    `replaced` maps cell ids of the graded copy to the source that replaces
    them (cells that timed out in an earlier run). `probes` maps each exercise to the inputs its
    check cell sends (:func:`course.checks.trials_payload`): that check cell runs the probe and
    prints its results, which the grader judges (nbval does not compare them); a check cell of an
    exercise the checks do not have raises.
    """
    probes = probes or {}
    notes = notes if notes is not None else []
    # readable, unique ids (nbformat 4.4 notebooks have none)
    seen: set[str] = set()
    cells = []
    for i, c in enumerate(learner.cells):
        cid = c.get("id")
        if not isinstance(cid, str) or cid in seen or not nbio.CELL_ID_PATTERN.match(cid):
            cid = f"learner-cell-{i}"
            while cid in seen:
                cid += "-x"
        seen.add(cid)
        cells.append(_learner_cell(c, cid))

    ref_checks = nbio.check_cells(ref)
    ref_ids = [c.get("id") for c in ref.cells]
    placed: list[tuple[object, object]] = []  # (ref check, learner cell to replace or None)
    used: set[int] = set()
    for rc in ref_checks:
        ex = nbio.exercise_of(rc)
        match = next((c for c in cells if c["id"] == rc.id), None)
        if match is None:
            match = next((c for c in cells if id(c) not in used and c.get("cell_type") == "code"
                          and nbio.exercise_of(c) == ex and "check" in nbio.tags(c)), None)
        if match is not None:
            used.add(id(match))
            if match.get("source", "").strip() != rc.source.strip() or match.get("cell_type") != "code":
                notes.append(f"{ex}: your check cell was edited; the original was restored")
        else:
            notes.append(f"{ex}: the check cell was missing; it was put back")
        placed.append((rc, match))

    # other cells that still claim to be check cells (copies) become plain code
    for c in cells:
        if id(c) not in used and "check" in nbio.tags(c):
            c.metadata["tags"] = [t for t in nbio.tags(c) if t != "check"]
            c.metadata.pop("grading", None)

    def graded_check(rc):
        ex = nbio.exercise_of(rc)
        if ex in probes:
            g = nbformat.v4.new_code_cell(probe_source(rc.source, probes[ex]), id=rc.id)
            g.metadata = nbformat.NotebookNode({"tags": ["check"], "grading": copy.deepcopy(rc.metadata["grading"])})
            return g
        g = nbformat.v4.new_code_cell(NO_CHECK.format(ex=ex), id=rc.id)
        g.metadata = nbformat.NotebookNode({"tags": ["check"], "grading": copy.deepcopy(rc.metadata["grading"])})
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
    stopped_by: str | None = None  # "cell" (no answer within the cell's budget) or "notebook" (total time)
    current: int | None = None  # code cell running when the run ended
    forged: int = 0  # lines on the results channel without the run's nonce

    @property
    def lost_at(self) -> int | None:
        """The cell that was running when the run died without finishing (not stopped by us)."""
        if self.finished or self.stopped_by is not None:
            return None
        return self.current


def _cell_num(nodeid: str) -> int | None:
    m = re.search(r"::Cell (\d+)$", nodeid)
    return int(m.group(1)) if m else None


def _tail(path: Path, size: int = 8192) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - size))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _stop(proc: subprocess.Popen) -> None:
    """Ask the supervisor to end the run (it kills the run's processes); force it if it does not."""
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    iso.kill_group(proc.pid)
    proc.wait()


def _run_pytest(nb: nbformat.NotebookNode, name: str, snap: CourseSnapshot, limits: Limits,
                run_dir: Path, deadline: float) -> _Run:
    """Run the graded copy `nb` once, in `run_dir`, until it ends or a time limit is reached."""
    lib, nbdir = run_dir / "lib", run_dir / "nb"
    snap.libs.write(lib)
    chapters = None
    if snap.chapters.files:
        chapters = run_dir / "chapters"
        snap.chapters.write(chapters)
    snap.data.write(nbdir)
    nbdir.mkdir(parents=True, exist_ok=True)
    (nbdir / name).write_text(nbio.dumps(nb), encoding="utf-8")
    ini = run_dir / "pytest.ini"
    ini.write_text("[pytest]\n")
    marker, nonce = secrets.token_hex(8), secrets.token_hex(16)
    env = iso.kernel_env(run_dir, lib, chapters, marker)
    env[_LIMITS_ENV] = json.dumps({"memory_mb": limits.memory_mb, "processes": limits.processes,
                                   "file_size_mb": limits.file_size_mb,
                                   "max_output": int(limits.output_mb * 1e6)})
    # a socket pair, not a pipe: another run's kernel (same user, or root) could open a pipe the
    # grader holds through /proc/<pid>/fd and interleave bytes with this run's lines; a socket
    # cannot be opened that way
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read_fd, write_fd = ours.detach(), theirs.detach()
    nonce_r, nonce_w = os.pipe()
    os.write(nonce_w, f"{nonce}\n".encode())
    os.close(nonce_w)
    env[_FD_ENV] = str(write_fd)
    cmd = [sys.executable, "-I", "-S", str(lib / "course" / "_supervisor.py"), str(write_fd), str(os.getpid()),
           str(run_dir.parent), "--",
           sys.executable, "-m", "pytest", name,
           "--nbval-lax", "--nbval-current-env", f"--nbval-cell-timeout={limits.cell_timeout:g}",
           "--noconftest", "-c", str(ini), "--rootdir", str(nbdir),
           "-p", "no:cacheprovider", "-p", "course._pytest_plugin",
           # plugins a notebook run never needs; each costs start-up time
           "-p", "no:xdist", "-p", "no:hypothesispytest",
           "-q", "--tb=no", "--color=no", "-o", "console_output_style=classic"]
    log_path = run_dir / "pytest.log"
    reports: dict[int, dict] = {}
    started: list[int] = []
    finished, collect_error, forged = False, None, 0
    killed_at, stopped_by, current = None, None, None
    nonce_prefix = nonce.encode() + b" "
    max_line = max(_MAX_EVENT_LINE, int(limits.output_mb * 1.5e6) + (1 << 20))  # a check cell's probe results
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=nbdir, env=env, stdin=nonce_r, stdout=log, stderr=subprocess.STDOUT,
                                    pass_fds=(write_fd,), start_new_session=True)
    finally:
        os.close(write_fd)
        os.close(nonce_r)

    def handle(line: bytes) -> None:
        nonlocal finished, collect_error, forged, current
        if not line.startswith(nonce_prefix):
            forged += 1
            return
        try:
            ev = json.loads(line[len(nonce_prefix):])
        except ValueError:
            forged += 1
            return
        kind = ev.get("event")
        if kind == "start":
            current = _cell_num(ev.get("nodeid", ""))
            if current is not None:
                started.append(current)
        elif kind == "report":
            n = ev.get("cell_num")
            if n is not None and (n not in reports or reports[n]["outcome"] == "passed"):
                reports[n] = ev
            if ev.get("when") == "call":
                current = None
        elif kind == "collect_error":
            collect_error = ev.get("message", "")
        elif kind == "finish":
            finished, current = True, None

    budget_cell = limits.cell_timeout + NBVAL_OUTPUT_TIMEOUT + 10
    sel = selectors.DefaultSelector()
    sel.register(read_fd, selectors.EVENT_READ)
    buf = b""
    eof = False
    last_event = time.monotonic()
    exited_at = None
    try:
        while True:
            if not eof and sel.select(timeout=0.05):
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    eof = True
                else:
                    last_event = time.monotonic()
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        handle(line)
                    if len(buf) > max_line:
                        forged, buf = forged + 1, b""
            elif eof:
                time.sleep(0.05)
            now = time.monotonic()
            if proc.poll() is not None:
                exited_at = exited_at or now
                if eof or now - exited_at > 2:
                    break
                continue
            if now > deadline:
                stopped_by, killed_at = "notebook", None
                _stop(proc)
                break
            # backstop: nbval's own timeout did not stop the cell (output keeps
            # coming, or the kernel does not answer), or the start-up hangs
            if now - last_event > (budget_cell if current is not None else 120):
                stopped_by, killed_at = "cell", current
                _stop(proc)
                break
    finally:
        sel.close()
        if proc.poll() is None:
            _stop(proc)
        proc.wait()
        iso.kill_group(proc.pid)
        iso.kill_marked(marker)
        os.close(read_fd)
    return _Run(reports, started, killed_at, finished, collect_error, _tail(log_path),
                stopped_by=stopped_by, current=current, forged=forged)


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
        return "\n".join(line for line in _clean(rep.get("traceback", [])) if line.strip())
    tb = [line for line in _clean(rep.get("traceback", [])) if line.strip() and not set(line.strip()) <= {"-"}]
    if tb:
        # IPython's traceback: keep the last lines (where, and the exception)
        return "\n".join(tb[-last:])
    if ename:
        return f"{ename}: {rep.get('evalue', '')}"
    return rep.get("message", "")


def _is_timeout(rep: dict) -> bool:
    return "Timeout of" in rep.get("message", "") and "waiting for output" not in rep.get("message", "")


def _is_kernel_lost(rep: dict) -> bool:
    return rep.get("exc_type") == "KernelDied" or "waiting for output" in rep.get("message", "")


KERNEL_DIED = ("the Python kernel died while running this cell (does the code end Python, "
               "e.g. with os._exit(), or crash it?)")


def _stopped_cells(plan: _Plan, run: _Run, limits: Limits) -> dict[str, tuple[str, str]]:
    """Cells this run had to stop, by id: (status for their exercise, why)."""
    new: dict[str, tuple[str, str]] = {}
    t = f"{limits.cell_timeout:g}"
    for n, rep in run.reports.items():
        if rep.get("xfail") or n >= len(plan.ids):
            continue
        cid = plan.ids[n]
        if rep.get("exc_type") == "OutputTooLarge":
            new[cid] = (ERROR, f"the cell's output passed the limit of {limits.output_mb:g} MB; it was stopped")
        elif _is_kernel_lost(rep):
            new[cid] = (ERROR, KERNEL_DIED)
        elif _is_timeout(rep) and "Failed to interrupt" in rep.get("message", ""):
            new[cid] = (TIMEOUT, f"a cell ran longer than {t} s and could not be interrupted "
                                 "(does it catch KeyboardInterrupt?)")
        elif _is_timeout(rep):
            new[cid] = (TIMEOUT, f"a cell ran longer than {t} s (an infinite loop?)")
    if run.killed_at is not None and run.killed_at < len(plan.ids):
        new[plan.ids[run.killed_at]] = (TIMEOUT, f"a cell ran longer than {t} s and could not be "
                                                 "interrupted (does it catch KeyboardInterrupt?)")
    if run.stopped_by == "notebook" and run.current is not None and run.current < len(plan.ids):
        new[plan.ids[run.current]] = (TIMEOUT, f"the notebook ran longer than {limits.notebook_timeout:g} s "
                                               "in total (the notebook time limit); it was stopped in this cell")
    if run.lost_at is not None and run.lost_at < len(plan.ids):
        new.setdefault(plan.ids[run.lost_at], (ERROR, "the grading run was killed while this cell ran "
                                                      "(does the code kill processes?)"))
    return new


#: drawing inputs and judging run the chapters' checks, which may touch course_lib's global state
#: (the default dtype, grad mode): one grading thread at a time
_CHECKS_LOCK = threading.Lock()


@dataclass
class _Judged:
    """An exercise the grader judges: its checks, the trials drawn for this grading, their payload."""

    exercise: chk.Exercise
    trials: list[chk.Trial]
    payload: str


def _judge(j: _Judged, rep: dict, expected_line: str) -> tuple[str, str]:
    """(status, message) for a check cell that ran its probe and whose kernel replied 'ok'."""
    frames = chk.read_frames(rep.get("probe_output") or "")
    if len(frames) != 1:
        why = "none came back" if not frames else f"{len(frames)} sets came back, not one"
        return ERROR, f"the check's results could not be read ({why}); was the check cell's output changed?"
    try:
        with _CHECKS_LOCK:
            line = chk.judge(j.exercise, j.trials, frames[0])
    except chk.NotAttempted:
        return NOT_ATTEMPTED, "still raises NotImplementedError"
    except chk.CheckTimeout as e:
        return TIMEOUT, e.message
    except chk.CheckFailure as e:
        return FAIL, e.message
    except chk.ProbeError as e:
        return ERROR, f"{e}; was the check cell's output changed?"
    except Exception as e:  # noqa: BLE001 - a judge that breaks never passes
        return ERROR, f"the check could not judge the results ({type(e).__name__}: {str(e)[:300]})"
    if expected_line and line != expected_line.strip():
        return ERROR, (f"the check printed {line!r} but the solutions expect {expected_line.strip()!r}: "
                       "are course_lib and solutions/ from the same version?")
    return PASS, ""


def _verdicts(plan: _Plan, run: _Run, ref, titles, stopped: dict[str, tuple[str, str]],
              limits: Limits, judged: dict[str, _Judged] | None = None) -> list[ExerciseResult]:
    judged = judged or {}
    results = []
    check_points = {nbio.exercise_of(c): int(c.metadata["grading"].get("points", 1)) for c in nbio.check_cells(ref)}
    for ex in nbio.exercises(ref):
        pts = check_points[ex]
        title = titles.get(ex, "")

        def result(status, message=""):
            if status != PASS and "MemoryError" in message:
                message += f"\n(when grading, the notebook may use {limits.memory_mb} MB of memory)"
            return ExerciseResult(ex, title, status, pts if status == PASS else 0, pts, message.strip())

        sol_cells = [n for n, (role, e) in enumerate(plan.roles) if role == "solution" and e == ex]
        chk = next(n for n, (role, e) in enumerate(plan.roles) if role == "check" and e == ex)
        mine = [plan.ids[n] for n in sol_cells + [chk]]
        hit = [cid for cid in mine if cid in stopped]
        if hit:
            results.append(result(*stopped[hit[0]]))
            continue
        rep = run.reports.get(chk)
        sol_reps = [run.reports[n] for n in sol_cells if n in run.reports and run.reports[n]["outcome"] == "failed"]
        if rep is None:
            if run.stopped_by == "notebook":
                results.append(result(TIMEOUT, f"not graded: the notebook reached its time limit of "
                                               f"{limits.notebook_timeout:g} s before this check ran"))
            else:
                results.append(result(ERROR, "not graded: the grading run stopped before this check ran"
                                      + (f"\n{run.collect_error}" if run.collect_error else "")))
            continue
        if rep["outcome"] == "passed" and not rep.get("xfail"):
            if rep.get("reply") == "ok" and ex in judged:
                key_cell = next(c for c in nbio.check_cells(ref) if nbio.exercise_of(c) == ex)
                key_line = "".join(o.get("text", "") for o in key_cell.get("outputs", [])
                                   if o.get("output_type") == "stream")
                results.append(result(*_judge(judged[ex], rep, key_line)))
            else:
                results.append(result(ERROR, f"the check did not finish normally (the kernel replied "
                                             f"{rep.get('reply')!r})"))
            continue
        if rep.get("xfail"):
            results.append(result(ERROR, "not graded: an earlier cell timed out too often"))
            continue
        if any(s.get("ename") == "NotImplementedError" for s in sol_reps):
            results.append(result(NOT_ATTEMPTED, "still raises NotImplementedError"))
            continue
        if sol_reps:
            text = _error_text(sol_reps[0]).splitlines() or ["an error"]
            results.append(result(FAIL, "\n".join([f"your solution cell raised {text[-1]}"] + text[:-1])))
            continue
        if _is_kernel_lost(rep) or rep.get("exc_type") == "RuntimeError":
            results.append(result(ERROR, KERNEL_DIED))
            continue
        earlier = [n for n in range(chk) if n in run.reports and run.reports[n]["outcome"] == "failed"
                   and plan.roles[n][0] == "other"]
        msg = _error_text(rep)
        if earlier:
            msg += f"\n(an earlier cell failed first: cell id {plan.ids[earlier[0]]!r})"
        results.append(result(ERROR, "the check could not run:\n" + msg))
    return results


def _cell_notes(plan: _Plan, run: _Run, stopped: dict[str, tuple[str, str]], replaced: dict[str, str]) -> list[str]:
    notes = []
    for n, (role, _ex) in enumerate(plan.roles):
        rep = run.reports.get(n)
        cid = plan.ids[n]
        if role == "other" and cid in stopped:
            notes.append(f"code cell {n + 1} (id {cid}): {stopped[cid][1]}"
                         + ("; it was skipped" if cid in replaced else ""))
        elif role == "other" and rep is not None and rep["outcome"] == "failed" and not rep.get("xfail"):
            first = _error_text(rep, last=1)
            notes.append(f"code cell {n + 1} (id {plan.ids[n]}) raised an error: {first}")
    return notes


# ---------------------------------------------------------------- grading


def grade_notebook(path: str | Path, solutions_dir: str | Path | None = None, timeout: float = 30,
                   keep: bool = False, *, limits: Limits | None = None, snapshot: CourseSnapshot | None = None,
                   data: bytes | None = None, watch: iso.Watch | None = None) -> NotebookResult:
    """Grade one learner notebook; never raises (problems become `error`).

    `snapshot` is what was read from the course (taken here if not given); `data` the notebook's
    bytes if already read; `watch` what to fingerprint before and after (default: the snapshot's).
    `keep` leaves the private folder of the run in place (for debugging).
    """
    path = Path(path)
    limits = limits or Limits(cell_timeout=timeout)
    t0 = time.monotonic()
    result = NotebookResult(str(path))
    try:
        if snapshot is None:
            number = chapter_of_name(path.name)
            snapshot = CourseSnapshot.take(Path(solutions_dir) if solutions_dir else find_solutions_dir(path.parent),
                                           None if number is None else {number})
        _grade(path, data, snapshot, limits, keep, result, watch or snapshot.watch)
    except CourseError as e:
        result.error = str(e)
        result.exercises = []
    except Exception as e:  # noqa: BLE001 - the grader reports, it does not crash
        result.error = f"internal grader error ({type(e).__name__}: {str(e)[:500]}); please report it"
        result.exercises = []
    result.seconds = round(time.monotonic() - t0, 2)
    return result


def _grade(path: Path, data: bytes | None, snap: CourseSnapshot, limits: Limits, keep: bool,
           result: NotebookResult, watch: iso.Watch) -> None:
    learner = _read_learner(path, data)
    ref_name, ref = snap.ref_for(path)
    course_md = ref.metadata.get("course", {})
    chapter = (course_md.get("chapter") if isinstance(course_md, dict) else None) or chapter_of_name(ref_name)
    result.chapter = chapter
    theirs = _learner_chapter(learner)
    if theirs is not None and chapter is not None and theirs != chapter:
        raise CourseError(
            f"{path}: this is the notebook of chapter {theirs}, not of chapter {chapter} "
            f"({ref_name}); grade it under its own name (e.g. {theirs}_....ipynb)"
        )
    if not nbio.check_cells(ref):
        raise CourseError(f"{snap.solutions_dir / ref_name}: the solutions notebook has no check cells")

    judged = _draw_trials(ref, snap.judged_for(chapter) if chapter else {}, secrets.randbits(64),
                          _probe_budget(limits))
    probes = {ex: j.payload for ex, j in judged.items()}
    before = watch.state()
    deadline = time.monotonic() + limits.notebook_timeout
    work = Path(tempfile.mkdtemp(prefix="course-grade-"))  # mode 0700
    stopped: dict[str, tuple[str, str]] = {}  # graded-copy cell id -> (status, reason)
    replaced: dict[str, str] = {}
    ref_solutions = {nbio.exercise_of(c): c for c in ref.cells if nbio.is_solution(c)}
    forged = 0
    try:
        for attempt in range(MAX_RERUNS + 1):
            notes: list[str] = []
            plan = build_graded_copy(learner, ref, replaced, notes, probes)
            run_dir = work / f"run{attempt}"
            run_dir.mkdir()
            run = _run_pytest(plan.nb, ref_name, snap, limits, run_dir, deadline)
            forged += run.forged
            if not keep:
                shutil.rmtree(run_dir, ignore_errors=True)
            if not run.reports and not run.started and run.stopped_by is None:
                tail = "\n".join(run.log.strip().splitlines()[-8:])
                raise CourseError(f"{path}: the grading run did not start:\n{run.collect_error or tail}")
            if run.reports and all(r.get("when") == "setup" and r["outcome"] == "failed" for r in run.reports.values()):
                why = next(iter(run.reports.values())).get("message", "")[:300]
                raise CourseError(f"{path}: the Python kernel did not start ({why}); when grading it may use "
                                  f"{limits.memory_mb} MB of memory")
            new = {k: v for k, v in _stopped_cells(plan, run, limits).items() if k not in stopped}
            stopped.update(new)
            if not new or attempt == MAX_RERUNS or run.stopped_by == "notebook":
                break
            for cid in new:
                role, ex = plan.roles[plan.ids.index(cid)]
                if role == "solution" and ex in ref_solutions:
                    replaced[cid] = stub_source(ref_solutions[ex].source)
                else:
                    replaced[cid] = "pass"
        result.notes = notes + _cell_notes(plan, run, stopped, replaced)
        result.exercises = _verdicts(plan, run, ref, snap.titles, stopped, limits, judged)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            result.notes.append(f"the grading runs were kept in {work}")
        changed = iso.Watch.changed(before, watch.state())
        if changed:
            shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
            result.warnings.append(f"files changed on disk while this notebook was graded: {shown} "
                                   "(this grading used the copies read before it started)")
        if forged:
            result.warnings.append(f"{forged} line(s) on the grader's results channel did not come from the "
                                   "grader (a forgery attempt?); they were ignored")


def _probe_budget(limits: Limits) -> float:
    """Seconds a check's probes may take: well inside the cell's time limit, so a slow case fails as that case."""
    return max(1.0, min(0.8 * limits.cell_timeout, limits.cell_timeout - 5.0))


def _draw_trials(ref, exercises: dict[str, chk.Exercise], seed: int,
                 budget: float | None = None) -> dict[str, _Judged]:
    """The trials of each exercise of `ref` that the grader judges, drawn with this grading's secret `seed`."""
    out = {}
    for rc in nbio.check_cells(ref):
        ex = exercises.get(nbio.exercise_of(rc))
        if ex is None:
            continue
        with _CHECKS_LOCK:
            trials = ex.trials(seed)
            seconds = ex.time_budget if budget is None else min(ex.time_budget, budget)
            out[ex.id] = _Judged(ex, trials, chk.trials_payload(ex, trials, seconds))
    return out


def snapshots_for(paths: list[Path], solutions_dir: Path | None) -> dict[Path, CourseSnapshot | CourseError]:
    """The course snapshot each notebook is graded with (one per solutions folder), all taken now."""
    by_dir: dict[Path, CourseSnapshot | CourseError] = {}
    out: dict[Path, CourseSnapshot | CourseError] = {}
    # only the checks of the chapters being graded are loaded (all of them if a name shows no chapter)
    numbers = {chapter_of_name(Path(p).name) for p in paths}
    wanted = None if None in numbers else numbers
    for p in paths:
        try:
            d = Path(solutions_dir) if solutions_dir else find_solutions_dir(Path(p).parent)
            d = d.resolve()
            if d not in by_dir:
                by_dir[d] = CourseSnapshot.take(d, wanted)
            out[p] = by_dir[d]
        except CourseError as e:
            out[p] = e
    return out


def grade_many(paths: list[Path], solutions_dir: Path | None, timeout: float, jobs: int, *,
               limits: Limits | None = None,
               on_result: Callable[[Path, NotebookResult], None] | None = None) -> list[NotebookResult]:
    """Grade notebooks in parallel, one notebook per worker (never split); results in the order of `paths`.

    Before any notebook runs, the course (answer key, checks, libraries) and every notebook are read
    into memory: a notebook's run cannot change what another is graded against, nor the other's
    submission. `on_result` is called (from a worker thread, one call at a time) as each result arrives.
    """
    paths = [Path(p) for p in paths]
    limits = limits or Limits(cell_timeout=timeout)
    snaps = snapshots_for(paths, solutions_dir)
    data: dict[int, bytes | None] = {}
    for i, p in enumerate(paths):
        try:
            data[i] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
        except OSError:
            data[i] = None
    lock = threading.Lock()

    def one(i: int) -> NotebookResult:
        p, snap = paths[i], snaps[paths[i]]
        if isinstance(snap, CourseError):
            res = NotebookResult(str(p), error=str(snap))
        else:
            watch = iso.Watch(snap.watch.hashed, snap.watch.stat_roots + [q for q in paths if q.is_file()])
            res = grade_notebook(p, limits=limits, snapshot=snap, data=data[i], watch=watch)
        if on_result is not None:
            with lock:
                on_result(p, res)
        return res

    if jobs <= 1 or len(paths) <= 1:
        return [one(i) for i in range(len(paths))]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, range(len(paths))))


# ---------------------------------------------------------------- reporting


def scoreboard(res: NotebookResult, max_lines: int = 6) -> str:
    head = f"{res.path}" + (f"  (chapter {res.chapter})" if res.chapter else "")
    lines = [head]
    for w in res.warnings:
        lines.append(f"  WARNING  {w}")
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
