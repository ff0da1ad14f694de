"""pytest plugin loaded by the grader (``-p course._pytest_plugin``) in the pytest process that runs nbval.

The results channel: the grader hands this process one end of a Unix socket pair (its number in
``COURSE_GRADER_FD``) and, on stdin, a secret nonce. At import the variable is removed from the
environment, the socket is made non-inheritable and stdin is closed, all before nbval starts the
kernel: the kernel (started with close_fds, from this environment) has neither the socket nor the
nonce, and a socket cannot be opened through ``/proc/<pid>/fd`` (a pipe can). On Linux this
process also makes itself non-dumpable, so that a kernel running as the same (non-root) user
cannot read the nonce through ``/proc/<pid>/``, and asks to be
killed if its parent, the run's supervisor, dies. Every event is one line,
``<nonce> <json>``: when a cell starts, and how each cell ended (outcome, the kernel's reply status,
nbval's message, the cell's error output, each field cut to a bounded size; for a check cell, the
probe's framed results whole, which the grader judges).

It also adjusts nbval (0.11) for grading:

- the kernel is started through ``_kernel_launcher.py`` under the limits in ``COURSE_KERNEL_LIMITS``;
- a cell whose ``execute_reply`` is not ``ok`` fails, even when the kernel showed no error
  (a custom exception handler, an interrupted cell that printed the expected line);
- a kernel that dies is noticed at once (``KernelDied``) instead of after the cell timeout, and
  the run stops there;
- a cell whose output passes ``max_output`` bytes fails (``OutputTooLarge``), its kernel is stopped
  and the run stops there; nbval's debug logging, which formats every message even when logging
  is off, is skipped.
"""
from __future__ import annotations

import json
import os
import sys
import time
from queue import Empty

# Loaded with -p, so before nbval: nbformat -> jsonschema would otherwise
# import the optional rfc3987_syntax grammar, which takes seconds and is
# never used for notebooks.
sys.modules.setdefault("rfc3987_syntax", None)

import pytest  # noqa: E402

from course.checks import FRAME_CLOSE, FRAME_OPEN  # noqa: E402 - imported before any kernel starts

FD_ENV = "COURSE_GRADER_FD"
LIMITS_ENV = "COURSE_KERNEL_LIMITS"
MAX_FIELD = 32 * 1024  # characters kept of one text field of an event
POLL = 0.2  # seconds between checks that the kernel is still alive


class KernelDied(Exception):
    """The kernel process ended while a cell ran."""


class OutputTooLarge(Exception):
    """A cell's output passed the limit."""


def _take_channel() -> tuple[int | None, str, dict]:
    fd_text = os.environ.pop(FD_ENV, None)
    limits = json.loads(os.environ.pop(LIMITS_ENV, "") or "{}")
    if fd_text is None:
        return None, "", limits
    fd = int(fd_text)
    os.set_inheritable(fd, False)
    nonce = b""
    while not nonce.endswith(b"\n") and len(nonce) < 256:
        chunk = os.read(0, 256 - len(nonce))
        if not chunk:
            break
        nonce += chunk
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None)
            libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: /proc/<this pid>/ closed to the kernel
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG: die with the supervisor
        except (OSError, AttributeError):
            pass
    return fd, nonce.decode().strip(), limits


_FD, _NONCE, _LIMITS = _take_channel()
_REPLIES: dict[str, str] = {}  # execute request id -> the kernel's reply status
_STATE: dict = {"item": None, "msg_id": None, "output": 0}


def _write(event: dict) -> None:
    if _FD is None:
        return
    data = f"{_NONCE} {json.dumps(event)}\n".encode()
    try:
        while data:
            data = data[os.write(_FD, data):]
    except OSError:  # the grader is gone
        pass


def _cut(text, limit: int = MAX_FIELD) -> str:
    text = str(text or "")
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit:,} characters cut] ...\n{text[-half:]}"


def _cut_lines(lines, limit: int = MAX_FIELD) -> list[str]:
    """The last lines of a traceback, at most `limit` characters in all."""
    out, total = [], 0
    for line in reversed(list(lines or [])):
        line = _cut(line, limit // 2)
        if total + len(line) > limit and out:
            break
        out.append(line)
        total += len(line)
    return out[::-1]


def _output_size(msg: dict) -> int:
    content = msg.get("content") or {}
    kind = msg.get("msg_type")
    if kind == "stream":
        return len(content.get("text") or "")
    if kind == "error":
        return (len(content.get("ename") or "") + len(content.get("evalue") or "")
                + sum(len(line) for line in content.get("traceback") or []))
    if kind in ("display_data", "execute_result", "update_display_data"):
        return sum(len(v) if isinstance(v, str) else len(str(v)) for v in (content.get("data") or {}).values())
    return 0


# ---------------------------------------------------------------- adjusting nbval


def _patch_nbval() -> None:
    from nbval import kernel as nbk
    from nbval import plugin as nbp

    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_kernel_launcher.py")
    limit_args = []
    for key, opt in (("memory_mb", "--memory"), ("processes", "--processes"), ("file_size_mb", "--file-size")):
        if _LIMITS.get(key):
            limit_args += [opt, str(int(_LIMITS[key]))]
    max_output = int(_LIMITS.get("max_output") or 0)

    get_spec = nbk.NbvalKernelspecManager.get_kernel_spec

    def get_kernel_spec(self, kernel_name):
        spec = get_spec(self, kernel_name)
        if kernel_name == nbk.CURRENT_ENV_KERNEL_NAME and _FD is not None:
            spec.argv = [sys.executable, "-I", "-S", launcher, *limit_args, "--", *spec.argv]
        return spec

    def get_message(self, stream, timeout=None):
        # nbval's version formats every message for a debug log, even with logging off:
        # minutes for a 200 MB output
        if stream == "iopub":
            return self.kc.get_iopub_msg(timeout=timeout)
        if stream == "shell":
            return self.kc.get_shell_msg(timeout=timeout)
        raise ValueError(f"Invalid stream specified: {stream!r}")

    def _wait(kernel, stream, timeout):
        """A message, checking between short waits that the kernel is alive."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL if deadline is None else min(POLL, max(0.0, deadline - time.monotonic()))
            try:
                return kernel.get_message(stream, timeout=left)
            except Empty:
                if not kernel.is_alive():
                    raise KernelDied("the Python kernel died (its process ended) while running this cell") from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    def await_reply(self, msg_id, timeout=None):
        while True:
            msg = _wait(self, "shell", timeout)
            if msg["parent_header"].get("msg_id") == msg_id:
                status = (msg.get("content") or {}).get("status")
                _REPLIES[msg_id] = str(status)
                if status == "aborted":
                    raise RuntimeError("Kernel aborted execution request")
                return

    execute = nbk.RunningKernel.execute_cell_input

    def execute_cell_input(self, cell_input, allow_stdin=None):
        msg_id = execute(self, cell_input, allow_stdin=allow_stdin)
        _STATE["msg_id"] = msg_id
        return msg_id

    def get_kernel_message(self, timeout=None, stream="iopub"):
        msg = _wait(self.kernel, stream, timeout)
        _STATE["output"] += _output_size(msg)
        if max_output and _STATE["output"] > max_output:
            raise OutputTooLarge(f"the cell's output passed the limit of {max_output / 1e6:g} MB; "
                                 "the cell was stopped")
        return msg

    runtest = nbp.IPyNbCell.runtest

    def checked_runtest(self):
        _STATE.update(item=self, msg_id=None, output=0)
        runtest(self)
        status = _REPLIES.get(_STATE["msg_id"]) if _STATE["msg_id"] else None
        if status != "ok":
            self.raise_cell_error(f"the kernel's reply to this cell was {status!r}, not 'ok'")

    nbk.NbvalKernelspecManager.get_kernel_spec = get_kernel_spec
    nbk.RunningKernel.get_message = get_message
    nbk.RunningKernel.await_reply = await_reply
    nbk.RunningKernel.execute_cell_input = execute_cell_input
    nbp.IPyNbFile.get_kernel_message = get_kernel_message
    nbp.IPyNbCell.runtest = checked_runtest


_patch_nbval()


# ---------------------------------------------------------------- events


def pytest_runtest_logstart(nodeid, location):
    _write({"event": "start", "nodeid": nodeid, "time": time.time()})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if call.when != "call" and rep.passed:
        return
    exc = call.excinfo.value if call.excinfo is not None else None
    if isinstance(exc, (KernelDied, OutputTooLarge)):
        kernel = getattr(item.parent, "kernel", None)
        if kernel is not None and kernel.is_alive():
            kernel.stop()
        item.session.shouldstop = str(exc)
    msg_id = _STATE["msg_id"] if _STATE["item"] is item else None
    event = {
        "event": "report",
        "nodeid": item.nodeid,
        "cell_num": getattr(item, "cell_num", None),
        "when": call.when,
        "outcome": rep.outcome,
        "xfail": hasattr(rep, "wasxfail"),
        "reply": _REPLIES.get(msg_id) if msg_id else None,
        "exc_type": type(exc).__name__ if exc is not None else None,
        "message": _cut(exc) if exc is not None else "",
        "detail": _cut(getattr(exc, "inner_traceback", "") or ""),
        "stdout": "",
    }
    stdout = []
    for out in getattr(item, "test_outputs", None) or []:
        if out.get("output_type") == "error":
            event["ename"] = _cut(out.get("ename"), 200)
            event["evalue"] = _cut(out.get("evalue"), 4000)
            event["traceback"] = _cut_lines(out.get("traceback"))
        elif out.get("output_type") == "stream" and out.get("name") == "stdout":
            stdout.append(out.get("text", ""))
    text = "".join(stdout)
    event["stdout"] = _cut(text)
    cell = getattr(item, "cell", None)
    if cell is not None and "check" in ((cell.get("metadata") or {}).get("tags") or []):
        event["probe_output"] = _probe_frames(text)
    _write(event)
    item.test_outputs = None  # nbval keeps every cell's outputs to the end otherwise


def _probe_frames(text: str) -> str:
    """The framed probe results in a check cell's stdout, whole (at most a few; the grader wants one)."""
    frames, start = [], 0
    while len(frames) < 3:
        i = text.find(FRAME_OPEN, start)
        j = text.find(FRAME_CLOSE, i + len(FRAME_OPEN)) if i >= 0 else -1
        if j < 0:
            break
        frames.append(text[i:j + len(FRAME_CLOSE)])
        start = j + len(FRAME_CLOSE)
    return "\n".join(frames)


def pytest_collectreport(report):
    if report.failed:
        _write({"event": "collect_error", "message": _cut(report.longrepr)})


def pytest_sessionfinish(session, exitstatus):
    _write({"event": "finish", "exitstatus": int(exitstatus)})
