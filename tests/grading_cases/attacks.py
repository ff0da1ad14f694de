"""Learner notebooks that attack or hurt the grader, built from chapter 00.

Each builder returns the text of a notebook file. They start from the generated learner notebook
(unanswered) or from the answered one (`cases._solved`) and add or change cells, so they follow
chapter 00 as it changes. What each must earn is asserted in tests/test_grader_isolation.py.
"""
from __future__ import annotations

import json

import nbformat

from course import notebook as nbio

from .cases import ROOT, SOLUTION, _cell, _load, _solved, _text


def _insert_after(nb, cell_id: str, source: str, new_id: str) -> None:
    cell = nbformat.v4.new_code_cell(source, id=new_id)
    nb.cells.insert(nb.cells.index(_cell(nb, cell_id)) + 1, cell)


def _first_code_id(nb) -> str:
    return next(c.id for c in nb.cells if c.cell_type == "code")


def _forged_events(n_cells: int = 40) -> list[str]:
    """Result lines claiming that every cell passed, in the plugin's old format and with guessed nonces."""
    lines = []
    for n in range(n_cells):
        ev = {"event": "report", "nodeid": f"00_welcome.ipynb::Cell {n}", "cell_num": n, "when": "call",
              "outcome": "passed", "xfail": False, "reply": "ok", "exc_type": None, "message": "",
              "detail": "", "stdout": ""}
        lines += [json.dumps(ev), "0" * 32 + " " + json.dumps(ev)]
    lines.append(json.dumps({"event": "finish", "exitstatus": 0}))
    return lines


FORGE = '''import os, glob, json
forged = {lines!r}
payload = ("\\n".join(forged) + "\\n").encode()
# 1. a results file named in the environment, or left near this notebook's folder
candidates = [v for v in os.environ.values() if os.path.isfile(v)]
candidates += glob.glob(os.path.join(os.getcwd(), "..", "..", "**", "*"), recursive=True)
for path in candidates:
    if path.endswith((".jsonl", ".json", ".log")) and os.path.isfile(path):
        try:
            with open(path, "ab") as f:
                f.write(payload)
        except OSError:
            pass
# 2. every pipe and socket of every ancestor up to the grader (pytest, the supervisor, the
#    `course grade` process): opened through /proc/<pid>/fd, written to
tally = {{"socket tried": 0, "socket opened": 0, "pipe opened": 0}}
pid, cmdline = os.getpid(), b""
for _ in range(3):  # pytest, the supervisor, the grader: never above
    if b"course\\x00grade" in cmdline:
        break
    pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
    if pid <= 1:
        break
    cmdline = open(f"/proc/{{pid}}/cmdline", "rb").read()
    try:
        fds = os.listdir(f"/proc/{{pid}}/fd")
    except OSError:
        continue
    for fd in fds:
        try:
            kind = os.readlink(f"/proc/{{pid}}/fd/{{fd}}").split(":")[0]
        except OSError:
            continue
        if kind not in ("pipe", "socket"):
            continue
        tally["socket tried"] += kind == "socket"
        try:
            w = os.open(f"/proc/{{pid}}/fd/{{fd}}", os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, payload)
            os.close(w)
            tally[kind + " opened"] += 1
        except OSError:
            pass
json.dump(tally, open({report!r}, "w"))
'''


def forge_results(report: str) -> str:
    """Unanswered, and a cell that writes 'every cell passed' wherever results might be read.

    It walks up its ancestors to the ``course grade`` process (never further: the processes above
    are not the grader's; grade it with the command) and writes into each one's pipes and sockets
    it can open; it writes what it tried and managed to the JSON file `report`.
    """
    nb = _load()
    _insert_after(nb, _first_code_id(nb), FORGE.format(lines=_forged_events(), report=report), "forge")
    return _text(nb)


CUSTOM_EXC = '''def _pretend(self, etype, value, tb, tb_offset=None):
    print("\\u2713 00.1 fizzbuzz: 20/20 cases")
get_ipython().set_custom_exc((Exception,), _pretend)'''


def custom_exception_handler() -> str:
    """A wrong 00.1 and an IPython exception handler that prints the success line instead of the failure."""
    nb = _solved()
    _cell(nb, "ex-00-1-solution").source = '''def fizzbuzz(n: int) -> str:
    return str(n)'''
    _insert_after(nb, _first_code_id(nb), CUSTOM_EXC, "pretend")
    return _text(nb)


def writes_course(checks: str, key: str) -> str:
    """Unanswered, and a cell that rewrites the course's checks (to pass anything) and answer key."""
    nb = _load()
    fake_checks = '''from course.checks import call, exercise
for _ex, _title, _n in (("00.1", "fizzbuzz", 20), ("00.2", "flatten", 19), ("00.3", "flat_index", 17)):
    exercise(_ex, title=_title, points=1, hint="")(lambda rng, n=_n: [call(compare=lambda got, exp: True)] * n)
'''
    source = f'''open({checks!r}, "w").write({fake_checks!r})
import json
key = json.load(open({key!r}))
for c in key["cells"]:
    if "check" in c["metadata"].get("tags", []):
        c["source"] = "pass"
        c["outputs"] = []
json.dump(key, open({key!r}, "w"))'''
    _insert_after(nb, _first_code_id(nb), source, "vandal")
    return _text(nb)


def edits_other(victim: str) -> str:
    """Unanswered, and a cell that overwrites another student's submission with an unanswered notebook."""
    nb = _load()
    blank = _text(_load())
    _insert_after(nb, _first_code_id(nb), f"open({victim!r}, 'w').write({blank!r})", "edit-other")
    return _text(nb)


def kills_parent(pid_file: str) -> str:
    """00.2's solution cell starts a background process, then kills the kernel's parent (pytest)."""
    nb = _solved()
    sol = _cell(nb, "ex-00-2-solution")
    sol.source = (f"import os, subprocess\n"
                  f"p = subprocess.Popen(['sleep', '1000.4242'], start_new_session=True)\n"
                  f"open({pid_file!r}, 'w').write(str(p.pid))\n"
                  f"os.kill(os.getppid(), 9)\n") + sol.source
    return _text(nb)


def background(pid_file: str) -> str:
    """Answered, with processes started to outlive the grading: a new session, and one with an empty environment."""
    nb = _solved()
    source = f'''import subprocess, os
a = subprocess.Popen(["sleep", "1000.1111"], start_new_session=True)
b = subprocess.Popen(["/bin/sh", "-c", "sleep 1000.2222 & echo $!"], start_new_session=True, env={{}},
                     stdout=subprocess.PIPE, text=True)
grandchild = int(b.stdout.readline())
open({pid_file!r}, "w").write(f"{{a.pid}} {{grandchild}}")'''
    _insert_after(nb, _first_code_id(nb), source, "background")
    return _text(nb)


def big_output() -> str:
    """00.1's solution cell prints 200 MB; the other answers are right."""
    nb = _solved()
    sol = _cell(nb, "ex-00-1-solution")
    sol.source += '\nprint("x" * 200_000_000)'
    return _text(nb)


def big_exception() -> str:
    """00.2's solution cell raises an exception with a 50 MB message; 00.3's function raises one in the check."""
    nb = _solved()
    _cell(nb, "ex-00-2-solution").source += '\nraise ValueError("y" * 50_000_000)'
    _cell(nb, "ex-00-3-solution").source = '''def flat_index(index, shape):
    raise ValueError("z" * 50_000_000)'''
    return _text(nb)


def exits_python() -> str:
    """00.2's solution cell ends the kernel's process with os._exit(0); the other answers are right."""
    nb = _solved()
    _cell(nb, "ex-00-2-solution").source += "\nimport os\nos._exit(0)"
    return _text(nb)


def eats_memory() -> str:
    """00.1's function asks for 8 GB before answering."""
    nb = _solved()
    sol = _cell(nb, "ex-00-1-solution")
    sol.source = sol.source.replace('"""The fizzbuzz word for n (n >= 1)."""', "hog = bytearray(8 * 1024 ** 3)")
    assert "hog" in sol.source
    return _text(nb)


def overruns(cells: int = 6, seconds: float = 5) -> str:
    """Answered, with `cells` cells after 00.1's check that each sleep `seconds` (each within the cell timeout)."""
    nb = _solved()
    after = "ex-00-1-check"
    for i in range(cells):
        _insert_after(nb, after, f"import time\ntime.sleep({seconds})", f"slow-{i}")
        after = f"slow-{i}"
    return _text(nb)


def markers_and_odd_tags() -> str:
    """Answered; nbval markers with several #s and odd line breaks; tags given as a string, or junk."""
    nb = _solved()
    _cell(nb, "ex-00-1-solution").metadata["tags"] = "solution"
    _cell(nb, "ex-00-2-solution").metadata["tags"] = 5
    _cell(nb, "ex-00-3-solution").metadata["tags"] = ["solution", 7, None]
    wrong = '''## NBVAL_RAISES_EXCEPTION
#   ###  NBVAL_SKIP
raise RuntimeError("a failing scratch cell")'''
    _insert_after(nb, _first_code_id(nb), wrong, "marked")
    _insert_after(nb, "marked", "x = 1\r# NBVAL_SKIP\r\nraise RuntimeError('another')", "marked-cr")
    return json.dumps(nb, indent=1)  # as saved by a tool that does not validate


def fake_key() -> str:
    """solutions/00_welcome.ipynb whose check cells do nothing: an answer key that passes anything."""
    ref = nbio.read(SOLUTION)
    for c in ref.cells:
        if nbio.is_check(c):
            c.source, c.outputs = "pass", []
    return nbio.dumps(ref)


def environment_probe(out: str) -> str:
    """Answered, and a cell that writes what the kernel sees (environment, limits, folder) to `out`."""
    nb = _solved()
    source = f'''import json, os, resource
json.dump({{"env": dict(os.environ), "cwd": os.getcwd(),
           "data": resource.getrlimit(resource.RLIMIT_DATA)[0], "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
           "core": resource.getrlimit(resource.RLIMIT_CORE)[0]}}, open({out!r}, "w"))'''
    _insert_after(nb, _first_code_id(nb), source, "probe")
    return _text(nb)


def kills_supervisor(pid_file: str) -> str:
    """00.2's solution cell starts a background process, then kills the run's supervisor (pytest's parent)."""
    nb = _solved()
    sol = _cell(nb, "ex-00-2-solution")
    sol.source = (f"import os, signal, subprocess\n"
                  f"p = subprocess.Popen(['sleep', '1000.5555'], start_new_session=True)\n"
                  f"open({pid_file!r}, 'w').write(str(p.pid))\n"
                  f"pytest_pid = os.getppid()\n"
                  f"supervisor = int(open(f'/proc/{{pytest_pid}}/stat').read().rsplit(')', 1)[1].split()[1])\n"
                  f"os.kill(supervisor, signal.SIGKILL)\n") + sol.source
    return _text(nb)


# ------------------------------------------------------------------ attacks on the checks themselves
# Each earned points while checks ran whole in the kernel; with the judge in the grader, none may.

REPLACES_CHECKS = '''import course, course.checks as _c
_line = {"00.1": "\\u2713 00.1 fizzbuzz: 20/20 cases", "00.2": "\\u2713 00.2 flatten: 19/19 cases",
         "00.3": "\\u2713 00.3 flat_index: 17/17 cases"}
def check(ex, obj):
    print(_line[ex])
course.check = _c.check = check
_c.run_check = lambda ex, obj, seed=None: _line[ex]
_c.strict_equal = lambda got, expected: True          # the comparison helper
_c.judge = lambda ex, trials, text: _line[ex.id]      # the judge
for _ex in _c.registry("00").values():                 # the registry: cases that pass anything
    _ex.cases = lambda rng: [_c.call(compare=lambda got, expected: True)]
import numpy
numpy.ravel_multi_index = lambda idx, shape: 0         # a reference the checks use
'''


def replaces_checks() -> str:
    """Wrong answers, and a cell that replaces check, run_check, the comparison, the judge, the registry's
    cases and a reference function in the kernel."""
    nb = _solved()
    _cell(nb, "ex-00-1-solution").source = 'def fizzbuzz(n):\n    return str(n)'
    _cell(nb, "ex-00-2-solution").source = 'def flatten(data):\n    return [data], ()'
    _cell(nb, "ex-00-3-solution").source = 'def flat_index(index, shape):\n    return 0'
    _insert_after(nb, _first_code_id(nb), REPLACES_CHECKS, "replace-checks")
    return _text(nb)


FAKE_MODULE = '''import sys, types, json, base64, course.checks as real
fake = types.ModuleType("course.checks")
fake.__dict__.update(real.__dict__)
def _probe_cell(exercise_id, obj, payload):
    # every trial "returned" what the self-study run expects: answers hard-coded in advance
    trials = real.get_exercise(exercise_id).trials(real.SELF_STUDY_SEED)
    from course import _wire
    results = [{"status": "ok", "value": _wire.encode(t.expected), "forbidden": []} for t in trials]
    text = json.dumps({"v": 1, "exercise": exercise_id, "results": results})
    print(real.FRAME_OPEN + base64.b64encode(text.encode()).decode() + real.FRAME_CLOSE)
fake._probe_cell = _probe_cell
fake.check = lambda ex, obj: print("\\u2713")
sys.modules["course.checks"] = fake
import course
course.checks = fake
'''


def fake_checks_module() -> str:
    """Unanswered, and a cell that puts a fake course.checks in sys.modules whose probe claims the
    answers of the self-study inputs."""
    nb = _load()
    _insert_after(nb, _first_code_id(nb), FAKE_MODULE, "fake-module")
    return _text(nb)


IPYTHON_HOOKS = '''ip = get_ipython()
def _pass_everything(lines):
    text = "".join(lines)
    for ex, line in (("00.1", "fizzbuzz: 20/20"), ("00.2", "flatten: 19/19"), ("00.3", "flat_index: 17/17")):
        if f'"{ex}"' in text or f"'{ex}'" in text:
            return [f'print("\\u2713 {ex} {line} cases")\\n']
    return lines
ip.input_transformers_post.append(_pass_everything)
def _before(info):
    import course.checks as c
    c.run_probes = lambda *a, **k: "{}"
ip.events.register("pre_run_cell", _before)
'''


def ipython_hooks() -> str:
    """Unanswered, and IPython hooks: an input transformer that turns every check cell into a print of
    its success line, and a pre_run_cell event that replaces the probe runner."""
    nb = _load()
    _insert_after(nb, _first_code_id(nb), IPYTHON_HOOKS, "hooks")
    return _text(nb)


READS_FRAMES = '''import sys

def _peek():
    """The expected value of the case being run, found in the checker's stack frames."""
    f = sys._getframe(2)
    while f is not None:
        for v in f.f_locals.values():
            if isinstance(v, list) and v and hasattr(v[0], "expected") and hasattr(v[0], "args"):
                return v
        f = f.f_back
    return []

def fizzbuzz(n):
    for t in _peek():
        if t.args == (n,):
            return t.expected
    return "?"
'''

HARD_CODED = '''import course.checks as _c
_answers = {t.args: t.expected for t in _c.get_exercise("00.3").trials(_c.SELF_STUDY_SEED) if t.raises is None}

def flat_index(index, shape):
    if (index, shape) in _answers:
        return _answers[(index, shape)]
    raise IndexError("out of range")
'''


def reads_frames_and_hard_codes() -> str:
    """00.1 reads expected values from the checker's stack frames, 00.3 answers from a table of the
    self-study cases (both pass `check` in the notebook), 00.2 is unanswered."""
    nb = _load()
    _cell(nb, "ex-00-1-solution").source = READS_FRAMES
    _cell(nb, "ex-00-3-solution").source = HARD_CODED
    return _text(nb)


# ------------------------------------------------------------------ chapter 03: the reference the checks call

LEARNER_03 = ROOT / "notebooks" / "03_autograd.ipynb"

PATCHES_GRAD = '''import sys
_true_grad = sys.modules["course_lib.autograd"].grad
def _swapped_grad(*args, **kwargs):
    # what the checks' reference returns, in the order a swapped answer gives
    return tuple(reversed(_true_grad(*args, **kwargs)))
sys.modules["course_lib.autograd"].grad = _swapped_grad
'''

SWAPPED_MUL = '''def mul_backward(grad, x, y):
    return grad * x, grad * y
'''


def patches_reference() -> str:
    """Chapter 03, unanswered but for a wrong 03.1 (the two gradients swapped), and a cell that replaces
    course_lib.autograd.grad, the reference 03.1's expected values come from, so that they agree with it."""
    nb = _load(LEARNER_03)
    _cell(nb, "ex-03-1-solution").source = SWAPPED_MUL
    _insert_after(nb, _first_code_id(nb), PATCHES_GRAD, "patch-grad")
    return _text(nb)
