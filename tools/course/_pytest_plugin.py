"""pytest plugin loaded by the grader (``-p course._pytest_plugin``).

Appends one JSON line per event to the file named by ``COURSE_GRADER_EVENTS``:
when a cell starts, and how each cell ended (outcome, nbval's message, the
cell's error output). Lines are flushed at once so the grader can watch a
run and still read what happened if it has to kill it.
"""
from __future__ import annotations

import json
import os
import sys
import time

# Loaded with -p, so before nbval: nbformat -> jsonschema would otherwise
# import the optional rfc3987_syntax grammar, which takes seconds and is
# never used for notebooks.
sys.modules.setdefault("rfc3987_syntax", None)

import pytest

_PATH = os.environ.get("COURSE_GRADER_EVENTS")


def _write(event: dict) -> None:
    if not _PATH:
        return
    with open(_PATH, "a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


def pytest_runtest_logstart(nodeid, location):
    _write({"event": "start", "nodeid": nodeid, "time": time.time()})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if call.when != "call" and rep.passed:
        return
    exc = call.excinfo.value if call.excinfo is not None else None
    event = {
        "event": "report",
        "nodeid": item.nodeid,
        "cell_num": getattr(item, "cell_num", None),
        "when": call.when,
        "outcome": rep.outcome,
        "xfail": hasattr(rep, "wasxfail"),
        "exc_type": type(exc).__name__ if exc is not None else None,
        "message": str(exc) if exc is not None else "",
        "detail": str(getattr(exc, "inner_traceback", "") or ""),
        "stdout": "",
    }
    for out in getattr(item, "test_outputs", None) or []:
        if out.get("output_type") == "error":
            event["ename"] = out.get("ename")
            event["evalue"] = out.get("evalue")
            event["traceback"] = list(out.get("traceback") or [])
        elif out.get("output_type") == "stream" and out.get("name") == "stdout":
            event["stdout"] += out.get("text", "")
    _write(event)


def pytest_collectreport(report):
    if report.failed:
        _write({"event": "collect_error", "message": str(report.longrepr)})


def pytest_sessionfinish(session, exitstatus):
    _write({"event": "finish", "exitstatus": int(exitstatus)})
