"""The ``course`` command: ``course grade | make-student | reset | doctor | execute | build | release``."""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

# nbformat -> jsonschema would import the optional rfc3987_syntax grammar,
# which takes seconds and is never needed for notebooks.
sys.modules.setdefault("rfc3987_syntax", None)

from .paths import CourseError, find_chapters_dir, find_solutions_dir  # noqa: E402


def _jobs(value: str) -> int:
    if value == "auto":
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("use a number or 'auto'") from None
    if n < 1:
        raise argparse.ArgumentTypeError("use at least 1")
    return n


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="course", description="PyTorch from the inside: grade and build notebooks.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser("grade", help="grade notebooks and print a scoreboard",
                       description="Grade learner notebooks against the check cells of solutions/. "
                                   "Exit status 0 only when every exercise passes.")
    g.add_argument("notebooks", nargs="*", type=Path, help="notebooks to grade, e.g. notebooks/00_welcome.ipynb")
    g.add_argument("--timeout", type=float, default=30, help="seconds a cell may run (default 30)")
    g.add_argument("--notebook-timeout", type=float, default=300, metavar="SECONDS",
                   help="seconds one notebook may run in all, reruns after a timeout included (default 300)")
    g.add_argument("--memory", type=int, default=4096, metavar="MB",
                   help="memory a notebook's kernel may use, in MB (default 4096)")
    g.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write results as JSON to FILE (or to stdout instead of the scoreboard)")
    g.add_argument("--batch", type=Path, metavar="DIR",
                   help="instructor mode: grade every notebook under DIR (DIR/<student>/<NN_name>.ipynb)")
    g.add_argument("--csv", type=Path, metavar="FILE", help="with --batch: write the gradebook to FILE")
    g.add_argument("-n", "--jobs", type=_jobs, default=1, metavar="N",
                   help="notebooks graded in parallel ('auto' = number of CPUs); a notebook is never split")
    g.add_argument("--solutions", type=Path, metavar="DIR",
                   help="the solutions/ folder (found automatically; with --batch never under DIR)")

    rel = sub.add_parser("release", help="(instructors) write the course as students get it, without the answers",
                         description="Write into DIR the learner notebooks, course_lib, the tools (with the grader), "
                                     "the chapters' checks and key/: the solutions notebooks with every solution "
                                     "cell stubbed (check cells and their outputs kept), which is all grading needs. "
                                     "No solution code, chapter source or planted wrong answer is written.")
    rel.add_argument("dest", type=Path, metavar="DIR", help="an empty or new folder")
    rel.add_argument("--solutions", type=Path, metavar="DIR", help="the solutions/ folder (found automatically)")

    m = sub.add_parser("make-student", help="build notebooks/ from solutions/",
                       description="Write each solutions/NN_*.ipynb as notebooks/NN_*.ipynb with stubs "
                                   "instead of the answers and no outputs.")
    m.add_argument("--check", action="store_true", help="write nothing; exit 1 if notebooks/ is out of date")
    m.add_argument("--solutions", type=Path, metavar="DIR")
    m.add_argument("--notebooks", type=Path, metavar="DIR")

    r = sub.add_parser("reset", help="restore one exercise's stub in your notebook",
                       description="Put one exercise (its solution and check cells) back as it was handed out; "
                                   "the other cells are not touched.")
    r.add_argument("notebook", type=Path)
    r.add_argument("exercise", help="exercise id, e.g. 03.2")
    r.add_argument("--solutions", type=Path, metavar="DIR")

    sub.add_parser("doctor", help="check that this Python, JupyterLab and the packages are ready for the course",
                   description="Check the Python version, the course's packages, the kernel JupyterLab will use, "
                               "the widget extension, write access, BLAS threads and the optional torch; "
                               "print one line per problem saying what to fix. Exit status 1 if something "
                               "must be fixed.")

    e = sub.add_parser("execute", help="(authors) run solutions notebooks and store the check outputs",
                       description="Run each notebook top to bottom in this environment; store the outputs "
                                   "of check cells only; fail if any cell raises.")
    e.add_argument("notebooks", nargs="+")
    e.add_argument("--timeout", type=int, default=600, help="seconds a cell may run (default 600)")
    e.add_argument("--short", action="store_true",
                   help="cells tagged long (full training runs) run their shorter grader_runs= version")

    b = sub.add_parser("build", help="(authors) build solutions/ from the chapter sources in chapters/",
                       description="Write each chapters/NN_name/notebook.py as solutions/NN_name.ipynb, keeping "
                                   "the stored output of every check cell that did not change.")
    b.add_argument("only", nargs="*", metavar="CHAPTER", help="chapter numbers, e.g. 03 (default: every chapter)")
    b.add_argument("--check", action="store_true", help="write nothing; exit 1 if solutions/ is out of date")
    b.add_argument("--chapters", type=Path, metavar="DIR", help="the chapters/ folder (found automatically)")
    b.add_argument("--solutions", type=Path, metavar="DIR", help="the solutions/ folder (default: beside chapters/)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "grade":
            return _grade(args)
        if args.command == "make-student":
            return _make_student(args)
        if args.command == "reset":
            return _reset(args)
        if args.command == "doctor":
            from .doctor import main as doctor_main

            return doctor_main()
        if args.command == "execute":
            from .execute import main as execute_main

            return execute_main(args.notebooks, args.timeout, args.short)
        if args.command == "build":
            return _build(args)
        if args.command == "release":
            return _release(args)
    except CourseError as e:
        print(f"course {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"course {args.command}: interrupted", file=sys.stderr)
        return 130
    return 2


def _dirs(args) -> tuple[Path, Path]:
    solutions = args.solutions or find_solutions_dir()
    notebooks = getattr(args, "notebooks", None) or solutions.parent / "notebooks"
    return solutions, notebooks


def _make_student(args) -> int:
    from .student import make_student

    solutions, notebooks = _dirs(args)
    changed = make_student(solutions, notebooks, check=args.check)
    if args.check:
        if changed:
            print(f"{notebooks} is out of date with {solutions}:")
            for name in changed:
                print(f"  {name}")
            print("run `course make-student` to regenerate it")
            return 1
        print(f"{notebooks} is up to date")
        return 0
    for name in changed:
        print(f"wrote {notebooks / name.split(' ')[0]}")
    if not changed:
        print(f"{notebooks} was already up to date")
    return 0


def _build(args) -> int:
    from . import notebook as nbio
    from .build import build

    chapters = args.chapters or find_chapters_dir()
    solutions = args.solutions or chapters.parent / "solutions"
    changed = build(chapters, solutions, args.only, check=args.check)
    if args.check:
        if changed:
            print(f"{solutions} is out of date with {chapters}:")
            for name in changed:
                print(f"  {name}")
            print("run `course build` to rebuild it")
            return 1
        print(f"{solutions} is up to date")
        return 0
    for name in changed:
        path = solutions / name.split(" ")[0]
        print(f"wrote {path}")
        if any(not c.outputs for c in nbio.check_cells(nbio.read(path))):
            print(f"  a check cell has no stored output: run `course execute {path}`")
    if not changed:
        print(f"{solutions} was already up to date")
    return 0


def _reset(args) -> int:
    from .student import reset_exercise

    if not args.notebook.is_file():
        raise CourseError(f"{args.notebook}: file not found")
    solutions = args.solutions or find_solutions_dir(args.notebook.parent)
    done = reset_exercise(args.notebook, args.exercise, solutions)
    print(f"{args.notebook}: exercise {args.exercise}: " + "; ".join(done)
          + ". If the notebook is open in Jupyter, reload it (File > Reload Notebook from Disk).")
    return 0


def _release(args) -> int:
    from .release import release

    solutions = args.solutions or find_solutions_dir()
    written = release(args.dest, solutions)
    print(f"wrote {len(written)} files to {args.dest} (learner notebooks, key/, course_lib, tools, the checks)")
    return 0


#: folders under a student's folder that are never graded (they could pose as the course's own)
SKIPPED_FOLDERS = ("solutions", "key", "course_lib", "course", "chapters", "tools", ".ipynb_checkpoints")


def _student_of(path: Path, batch: Path) -> str:
    rel = path.relative_to(batch)
    return rel.parts[0] if len(rel.parts) > 1 else path.stem


def find_submissions(batch: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The notebooks under `batch` to grade, and what was skipped with why (never silently).

    Symbolic links (to another student's file, or to the answer key) and folders named like the
    course's own (``solutions``, ``course_lib``, ...) are skipped.
    """
    paths: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(batch):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            p = here / d
            if p.is_symlink():
                skipped.append((p, "a symbolic link is not followed"))
            elif d in SKIPPED_FOLDERS:
                skipped.append((p, f"a folder named {d}/ under a student's folder is not graded"))
            else:
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            p = here / f
            if not f.endswith(".ipynb"):
                continue
            if p.is_symlink():
                skipped.append((p, "a symbolic link is not graded"))
            else:
                paths.append(p)
    return sorted(paths), skipped


_CSV_HEADER = ["student", "chapter", "exercise", "status", "points", "max_points", "message"]


def _csv_rows(student: str, res) -> list[list]:
    rows = []
    if res.error:
        rows.append([student, res.chapter or "", "", "ERROR", 0, 0, res.error])
    for e in res.exercises:
        rows.append([student, res.chapter or "", e.exercise, e.status, e.points, e.max_points,
                     e.message.splitlines()[0] if e.message else ""])
    for w in res.warnings:
        rows.append([student, res.chapter or "", "", "WARNING", 0, 0, f"{Path(res.path).name}: {w}"])
    return rows


def _grade(args) -> int:
    from .grader import Limits, grade_many, scoreboard

    if args.batch is None and not args.notebooks:
        raise CourseError("name the notebooks to grade, e.g. `course grade notebooks/00_welcome.ipynb`")
    if args.csv is not None and args.batch is None:
        raise CourseError("--csv goes with --batch DIR")
    if args.timeout <= 0 or args.notebook_timeout <= 0:
        raise CourseError("--timeout and --notebook-timeout must be positive")
    if args.memory < 256:
        raise CourseError("--memory: give at least 256 (MB)")
    limits = Limits(cell_timeout=args.timeout, notebook_timeout=args.notebook_timeout, memory_mb=args.memory)
    to_stdout = args.json == "-"
    skipped: list[tuple[Path, str]] = []
    solutions = args.solutions
    if args.batch is not None:
        if not args.batch.is_dir():
            raise CourseError(f"{args.batch}: not a folder")
        # the answer key comes from the course, never from under the submissions
        solutions = solutions or find_solutions_dir(exclude=args.batch)
        paths, skipped = find_submissions(args.batch)
        if not paths and not skipped:
            raise CourseError(f"{args.batch}: no notebooks found")
    else:
        paths = list(args.notebooks)
    out = sys.stderr if to_stdout else sys.stdout
    for p, why in skipped:
        print(f"skipped {p}: {why}", file=out)

    book = None
    writer = None
    if args.batch is not None and args.csv is not None:
        book = open(args.csv, "w", newline="", encoding="utf-8")
        writer = csv.writer(book)
        writer.writerow(_CSV_HEADER)
        for p, why in skipped:
            rel = p.relative_to(args.batch)
            student = rel.parts[0] if len(rel.parts) > 1 else p.name
            writer.writerow([student, "", "", "SKIPPED", 0, 0, f"{rel.as_posix()}: {why}"])
        _flush(book)

    def arrived(path: Path, res) -> None:
        if not to_stdout:
            print(scoreboard(res), flush=True)
            print(flush=True)
        if writer is not None:
            writer.writerows(_csv_rows(_student_of(path, args.batch), res))
            _flush(book)

    try:
        results = grade_many(paths, solutions, args.timeout, args.jobs, limits=limits, on_result=arrived)
    finally:
        if book is not None:
            book.close()

    if not to_stdout and len(results) > 1:
        ok = sum(r.passed for r in results)
        print(f"{ok}/{len(results)} notebooks fully passed; "
              f"{sum(r.points for r in results)}/{sum(r.max_points for r in results)} points")
    warned = [r for r in results if r.warnings]
    if warned:
        print(f"WARNING: {len(warned)} notebook(s) have warnings (files changed during grading, forged "
              "results): see WARNING above" + (" and in the gradebook" if args.csv else ""), file=out)
    if args.json:
        data = json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False)
        if to_stdout:
            print(data)
        else:
            Path(args.json).write_text(data + "\n", encoding="utf-8")
    if args.batch is not None:
        if args.csv is not None and not to_stdout:
            print(f"gradebook written to {args.csv}")
        # a class with failing students is not a failure of the command
        return 0
    return 0 if all(r.passed for r in results) else 1


def _flush(f) -> None:
    f.flush()
    try:
        os.fsync(f.fileno())
    except OSError:
        pass
