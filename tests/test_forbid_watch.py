"""The forbidden-call watch (``@exercise(..., forbid=...)``): the ways around it that it closes.

Each learner answer below returns the right value by calling the forbidden reference (cl.result_type)
where the watch used not to look: in another thread, with the watch switched off, or from code that
claims to be course_lib's by its file name. Each must fail its case; course_lib's own threads and
course_lib calling the reference on the learner's behalf must not.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

from course import checks
from course.checks import CheckFailure, ProbeError, run_check

FORBID_99 = """
import course_lib as cl
from course.checks import call, exercise

@exercise("99.5", title="promote", points=1, hint="", forbid={"cl.result_type": cl.result_type})
def _promote(rng):
    return [call(cl.zeros(2, dtype=cl.int64), 2.5, expected=cl.float32)]
"""

CL_DIR = os.path.dirname(__import__("course_lib").__file__)
CL_FILE = sys.modules["course_lib._tensor"].__file__ if "course_lib._tensor" in sys.modules \
    else os.path.join(CL_DIR, "_tensor.py")

CALLS = "your code calls cl\\.result_type, which this exercise asks"
SWITCHED_OFF = "the check watches for forbidden calls with sys.setprofile; your code switched it off"

LEARNERS = {
    "a threading.Thread": (CALLS, """
import threading, course_lib as cl
def promote(a, b):
    out = []
    t = threading.Thread(target=lambda: out.append(cl.result_type(a, b)))
    t.start(); t.join()
    return out[0]
"""),
    "the forbidden function as a thread's target": (CALLS, """
import threading, course_lib as cl
def promote(a, b):
    class T(threading.Thread):
        def run(self):
            self.out = cl.result_type(a, b)
    t = T(); t.start(); t.join()
    return t.out
"""),
    "a concurrent.futures pool": (CALLS, """
import concurrent.futures, course_lib as cl
def promote(a, b):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return pool.submit(cl.result_type, a, b).result()
"""),
    "_thread.start_new_thread": ("your code started a thread it cannot", """
import _thread, course_lib as cl
def promote(a, b):
    out, done = [], _thread.allocate_lock()
    done.acquire()
    def run():
        out.append(cl.result_type(a, b)); done.release()
    _thread.start_new_thread(run, ())
    done.acquire()
    return out[0]
"""),
    "threading's profile hook removed": ("switched it off", """
import threading, course_lib as cl
def promote(a, b):
    threading.setprofile(None)
    out = []
    t = threading.Thread(target=lambda: out.append(cl.result_type(a, b)))
    t.start(); t.join()
    return out[0]
"""),
    "a thread left running": ("your code left a thread running", """
import threading, time, course_lib as cl
stop = threading.Event()
def promote(a, b):
    threading.Thread(target=stop.wait, daemon=True).start()
    return cl.promote_types(a.dtype, cl.float32)
"""),
    "sys.setprofile(None)": (SWITCHED_OFF, """
import sys, course_lib as cl
def promote(a, b):
    sys.setprofile(None)
    return cl.result_type(a, b)
"""),
    "another profile function": (SWITCHED_OFF, """
import sys, course_lib as cl
def promote(a, b):
    sys.setprofile(lambda *args: None)
    return cl.result_type(a, b)
"""),
    "sys.setprofile called from C": (SWITCHED_OFF, """
import sys, course_lib as cl
def promote(a, b):
    list(map(sys.setprofile, [None]))
    return cl.result_type(a, b)
"""),
    "a fake course_lib file name": (CALLS, f"""
import os, course_lib as cl
src = "def promote(a, b):\\n    return cl.result_type(a, b)\\n"
exec(compile(src, os.path.join({CL_DIR!r}, "fx", "x.py"), "exec"))
"""),
    "a real course_lib file name": (CALLS, f"""
import course_lib as cl
src = "def promote(a, b):\\n    return cl.result_type(a, b)\\n"
exec(compile(src, {CL_FILE!r}, "exec"))
"""),
    "a real course_lib file name, in its module's namespace": (CALLS, f"""
import sys, course_lib as cl
m = sys.modules["course_lib._tensor"]
src = "def _learners_promote(a, b):\\n    import course_lib\\n    return course_lib.result_type(a, b)\\n"
exec(compile(src, {CL_FILE!r}, "exec"), m.__dict__)
promote = m._learners_promote
"""),
    "os.fork": ("the check cannot follow forbidden calls into another process", """
import os, course_lib as cl
def promote(a, b):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return cl.promote_types(a.dtype, cl.float32)
"""),
    "a subprocess": ("the check cannot follow forbidden calls into another process", """
import subprocess, course_lib as cl
def promote(a, b):
    subprocess.run(["true"])
    return cl.promote_types(a.dtype, cl.float32)
"""),
}


@pytest.fixture
def chapter99(tmp_path, monkeypatch):
    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))
    folder = tmp_path / "99_demo"
    folder.mkdir()
    (folder / "checks.py").write_text(FORBID_99)
    monkeypatch.setenv("COURSE_CHAPTERS", str(tmp_path))
    yield
    sys.modules.pop("course_chapter99_checks", None)
    sys.modules["course_lib._tensor"].__dict__.pop("_learners_promote", None)


def _learner(source: str):
    ns: dict = {"__name__": "__main__"}
    exec(compile(source, "<learner cell>", "exec"), ns)
    return ns["promote"]


@pytest.mark.parametrize("name", list(LEARNERS))
def test_a_way_around_the_watch_fails_the_case(chapter99, name):
    message, source = LEARNERS[name]
    with pytest.raises(CheckFailure, match=message):
        run_check("99.5", _learner(source))
    assert sys.getprofile() is None


def test_course_lib_threads_and_calls_on_the_learners_behalf_pass(chapter99):
    """course_lib's intra-op pool starting (and keeping) threads during the case is not the learner's doing."""
    import course_lib as cl
    from course_lib import _parallel

    before = _parallel.get_num_threads()
    _parallel.set_num_threads(before + 2)  # a new pool: its threads start while the case runs
    try:
        def promote(a, b):
            assert _parallel.parallel_chunks(8, 1, lambda i, j: i) == list(range(8))
            return (cl.zeros(1, dtype=a.dtype) + b).dtype

        assert run_check("99.5", promote).startswith("✓ 99.5")
    finally:
        _parallel.set_num_threads(before)


def test_an_unknown_unwatched_reason_is_malformed():
    ex = checks.Exercise("99.6", "x", 1, "", lambda rng: [])
    text = json.dumps({"exercise": "99.6", "results": [{"status": "ok", "value": 1, "unwatched": ["nothing"]}]})
    with pytest.raises(ProbeError, match="malformed"):
        checks.judge(ex, [checks.call(expected=1)], text)


def test_a_c_function_named_by_module_and_name_is_caught_and_no_other():
    """``CFunction`` forbids a C function of a library the checks do not import (torch._C's), by its name."""
    import math

    watch = checks._ForbiddenCalls({"math.sqrt": checks.CFunction("math", "sqrt")}, ((), ()))
    with watch:
        math.floor(2.5)
    assert watch.seen == []
    with checks._ForbiddenCalls({"math.sqrt": checks.CFunction("math", "sqrt")}, ((), ())) as w2:
        math.sqrt(2.0)
    assert w2.seen == ["math.sqrt"]
