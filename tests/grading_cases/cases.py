"""Learner notebooks for the grader's edge cases, built from chapter 00.

Each builder returns the text of a notebook file as a learner could have
saved it. They start from the generated learner notebook (notebooks/) and
fill in answers, so they follow chapter 00 as it changes.
"""
from __future__ import annotations

import json
from pathlib import Path

import nbformat

from course import notebook as nbio

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "00_welcome.ipynb"
LEARNER = ROOT / "notebooks" / "00_welcome.ipynb"

WRONG_FIZZBUZZ = '''def fizzbuzz(n: int) -> str:
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)'''

LOOPING_FLAT_INDEX = '''def flat_index(index, shape):
    while True:
        pass'''

SWALLOWS_INTERRUPT = '''import time

def flatten(data):
    while True:
        try:
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass'''

PRINTS_AND_SWALLOWS = '''import time

def flatten(data):
    while True:
        try:
            print("still going", flush=True)
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass'''


def _load(path=LEARNER):
    return nbio.read(path)


def _cell(nb, cell_id):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def _solved():
    """The learner notebook with every exercise answered correctly."""
    nb = _load()
    ref = _load(SOLUTION)
    for c in ref.cells:
        if nbio.is_solution(c):
            _cell(nb, c.id).source = "\n".join(
                line for line in c.source.split("\n")
                if not line.strip().startswith(("### BEGIN SOLUTION", "### END SOLUTION")))
    return nb


def _ran(cell, text=None, error=None, count=1):
    cell.execution_count = count
    if text is not None:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    if error is not None:
        cell.outputs = [nbformat.v4.new_output("error", ename=error[0], evalue=error[1], traceback=error[2])]


def _text(nb) -> str:
    return nbio.dumps(nb)


def correct():
    return _text(_solved())


def unfilled():
    return LEARNER.read_text(encoding="utf-8")


def wrong():
    nb = _solved()
    _cell(nb, "ex-00-1-solution").source = WRONG_FIZZBUZZ
    return _text(nb)


def wrong_then_saved():
    """Ran the failing check and saved: the stored output is the learner's own failure."""
    nb = _solved()
    _cell(nb, "ex-00-1-solution").source = WRONG_FIZZBUZZ
    msg = "✗ 00.1 fizzbuzz: case 10/20 failed"
    _ran(_cell(nb, "ex-00-1-check"), error=("CheckFailure", msg, [msg]), count=3)
    return _text(nb)


def edited_check():
    """A wrong answer whose check cell was edited to print the success line (and tagged to skip)."""
    nb = _solved()
    _cell(nb, "ex-00-1-solution").source = WRONG_FIZZBUZZ
    chk = _cell(nb, "ex-00-1-check")
    chk.source = 'print("✓ 00.1 fizzbuzz: 20/20 cases")'
    chk.metadata["tags"] = ["check", "nbval-skip"]
    _ran(chk, text="✓ 00.1 fizzbuzz: 20/20 cases\n", count=2)
    return _text(nb)


def deleted_check():
    """00.2's check cell deleted, with a wrong answer (ragged lists accepted); 00.3 has a syntax error."""
    nb = _solved()
    _cell(nb, "ex-00-2-solution").source = '''def flatten(data):
    if not isinstance(data, list):
        return [data], ()
    flat, inner = [], ()
    for item in data:
        f, inner = flatten(item)
        flat.extend(f)
    return flat, (len(data),) + inner'''
    nb.cells = [c for c in nb.cells if c.get("id") != "ex-00-2-check"]
    # and a syntax error in 00.3
    _cell(nb, "ex-00-3-solution").source = "def flat_index(index, shape)\n    return 0"
    return _text(nb)


def cut_and_pasted_check():
    """00.3's check cut and pasted above its solution (new id); 00.1's pasted at the end."""
    nb = _solved()
    chk3 = _cell(nb, "ex-00-3-check")
    chk1 = _cell(nb, "ex-00-1-check")
    nb.cells = [c for c in nb.cells if c is not chk3 and c is not chk1]
    chk3.id, chk1.id = "a1b2c3d4", "e5f6a7b8"
    sol3 = nb.cells.index(_cell(nb, "ex-00-3-solution"))
    nb.cells.insert(sol3, chk3)
    nb.cells.append(chk1)
    _cell(nb, "ex-00-1-solution").source = WRONG_FIZZBUZZ
    return _text(nb)


def nbformat_44():
    """Saved by an old Jupyter: nbformat 4.4, no cell ids (and the prints and scratch cell of `noisy`)."""
    raw = json.loads(noisy())
    raw["nbformat_minor"] = 4
    for c in raw["cells"]:
        del c["id"]
    return json.dumps(raw, indent=1)


def syntax_error():
    nb = _solved()
    _cell(nb, "ex-00-2-solution").source = "def flatten(data)\n    return [data], ()"
    return _text(nb)


def noisy():
    """Correct answers, debugging prints, and a scratch cell of the learner's that fails."""
    nb = _solved()
    sol = _cell(nb, "ex-00-1-solution")
    sol.source = sol.source.replace('"""The fizzbuzz word for n (n >= 1)."""', 'print("called with", n)')
    scratch = nbformat.v4.new_code_cell("undefined_name + 1", id="my-scratch")
    nb.cells.insert(nb.cells.index(sol) + 1, scratch)
    return _text(nb)


def infinite_loops():
    """00.1's solution cell never ends; 00.3's function never returns."""
    nb = _solved()
    _cell(nb, "ex-00-1-solution").source = "while True:\n    pass"
    _cell(nb, "ex-00-3-solution").source = LOOPING_FLAT_INDEX
    return _text(nb)


def swallows_interrupt():
    nb = _solved()
    _cell(nb, "ex-00-2-solution").source = SWALLOWS_INTERRUPT
    return _text(nb)


def prints_and_swallows():
    nb = _solved()
    _cell(nb, "ex-00-2-solution").source = PRINTS_AND_SWALLOWS
    return _text(nb)


def invalid_json():
    return correct()[:2000]


def another_chapter():
    nb = _solved()
    nb.metadata["course"]["chapter"] = "01"
    for c in nb.cells:
        g = c.metadata.get("grading")
        if g:
            g["exercise"] = g["exercise"].replace("00.", "01.")
    return _text(nb)


# name -> builder; the file is written as <name>/00_welcome.ipynb
# (several cases share a notebook where they touch different exercises: each
# notebook graded costs a kernel start)
FAST = {
    "correct": correct, "unfilled": unfilled, "wrong_then_saved": wrong_then_saved,
    "edited_check": edited_check, "deleted_check": deleted_check,
    "cut_and_pasted_check": cut_and_pasted_check, "nbformat_44": nbformat_44,
    "invalid_json": invalid_json, "another_chapter": another_chapter,
}
TIMEOUTS = {
    "infinite_loops": infinite_loops, "swallows_interrupt": swallows_interrupt,
    "prints_and_swallows": prints_and_swallows,
}


def write(builders: dict, root: Path) -> dict[str, Path]:
    paths = {}
    for name, build in builders.items():
        path = root / name / "00_welcome.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(build(), encoding="utf-8")
        paths[name] = path
    return paths
