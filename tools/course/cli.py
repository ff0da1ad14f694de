"""The ``course`` command: ``course grade | make-student | reset | execute | build``."""
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
    g.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write results as JSON to FILE (or to stdout instead of the scoreboard)")
    g.add_argument("--batch", type=Path, metavar="DIR",
                   help="instructor mode: grade every notebook under DIR (DIR/<student>/<NN_name>.ipynb)")
    g.add_argument("--csv", type=Path, metavar="FILE", help="with --batch: write the gradebook to FILE")
    g.add_argument("-n", "--jobs", type=_jobs, default=1, metavar="N",
                   help="notebooks graded in parallel ('auto' = number of CPUs); a notebook is never split")
    g.add_argument("--solutions", type=Path, metavar="DIR", help="the solutions/ folder (found automatically)")

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

    e = sub.add_parser("execute", help="(authors) run solutions notebooks and store the check outputs",
                       description="Run each notebook top to bottom in this environment; store the outputs "
                                   "of check cells only; fail if any cell raises.")
    e.add_argument("notebooks", nargs="+")
    e.add_argument("--timeout", type=int, default=600, help="seconds a cell may run (default 600)")

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
        if args.command == "execute":
            from .execute import main as execute_main

            return execute_main(args.notebooks, args.timeout)
        if args.command == "build":
            return _build(args)
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


def _student_of(path: Path, batch: Path) -> str:
    rel = path.relative_to(batch)
    return rel.parts[0] if len(rel.parts) > 1 else path.stem


def _grade(args) -> int:
    from .grader import grade_many, scoreboard

    if args.batch is None and not args.notebooks:
        raise CourseError("name the notebooks to grade, e.g. `course grade notebooks/00_welcome.ipynb`")
    if args.csv is not None and args.batch is None:
        raise CourseError("--csv goes with --batch DIR")
    if args.timeout <= 0:
        raise CourseError("--timeout must be positive")
    if args.batch is not None:
        if not args.batch.is_dir():
            raise CourseError(f"{args.batch}: not a folder")
        paths = sorted(p for p in args.batch.rglob("*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts and not p.name.endswith(".graded.ipynb"))
        if not paths:
            raise CourseError(f"{args.batch}: no notebooks found")
    else:
        paths = list(args.notebooks)
    results = grade_many(paths, args.solutions, args.timeout, args.jobs)

    to_stdout = args.json == "-"
    if not to_stdout:
        for res in results:
            print(scoreboard(res))
            print()
        if len(results) > 1:
            ok = sum(r.passed for r in results)
            print(f"{ok}/{len(results)} notebooks fully passed; "
                  f"{sum(r.points for r in results)}/{sum(r.max_points for r in results)} points")
    if args.json:
        data = json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False)
        if to_stdout:
            print(data)
        else:
            Path(args.json).write_text(data + "\n", encoding="utf-8")
    if args.batch is not None:
        if args.csv is not None:
            with open(args.csv, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["student", "chapter", "exercise", "status", "points", "max_points", "message"])
                for path, res in zip(paths, results):
                    student = _student_of(path, args.batch)
                    if res.error:
                        w.writerow([student, res.chapter or "", "", "ERROR", 0, 0, res.error])
                    for e in res.exercises:
                        w.writerow([student, res.chapter or "", e.exercise, e.status, e.points, e.max_points,
                                    e.message.splitlines()[0] if e.message else ""])
            if not to_stdout:
                print(f"gradebook written to {args.csv}")
        # a class with failing students is not a failure of the command
        return 0
    return 0 if all(r.passed for r in results) else 1
