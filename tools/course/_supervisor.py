"""The supervisor of one grading run: ``python -I -S _supervisor.py FD PARENT WORKDIR -- pytest ...``.

Started by the grader in a session of its own; runs the given command (pytest, which starts the
notebook's kernel) as its child, handing it the results socket `FD` and closing its own copy. On
Linux it is a *child subreaper*: a process of the run that double-forks or starts a new session
is re-parented to the supervisor instead of to init, so it stays in the supervisor's tree. When
the command ends, or the supervisor gets SIGTERM (the grader's time limits) or its parent dies,
every process of that tree is killed, then the supervisor exits with the command's status. If the
grader died, nobody else will remove the notebook's private folder WORKDIR: the supervisor does.

Standard library only and run with ``-I -S``: nothing of the course, the notebook or site-packages
is imported.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class _Stop(Exception):
    pass


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids, from /proc."""
    out: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            out.setdefault(int(fields[1]), []).append(int(name))
    return out


def _descendants(root: int) -> list[int]:
    tree = _children_map()
    out, todo = [], list(tree.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += tree.get(pid, [])
    return out


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_tree(child: int) -> None:
    """SIGKILL the child's process group and every descendant, until none is left."""
    try:
        os.killpg(child, signal.SIGKILL)
    except OSError:
        pass
    for _ in range(200):
        pids = _descendants(os.getpid())
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)
        _reap()


def main(argv: list[str]) -> int:
    fd, parent, workdir = int(argv[0]), int(argv[1]), argv[2]
    cmd = argv[argv.index("--") + 1:]
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    def stop(signum, frame):
        raise _Stop()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    status = 1
    child = -1
    try:
        if os.getppid() != parent:  # the grader died before the death signal was set
            return 1
        child = os.fork()
        if child == 0:  # pytest, in the supervisor's process group
            try:
                os.setpgid(0, 0)
                os.set_inheritable(fd, True)
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                    signal.signal(sig, signal.SIG_DFL)
                os.execv(cmd[0], cmd)
            finally:
                os._exit(127)
        os.close(fd)
        while True:
            pid, st = os.waitpid(-1, 0)  # reaps adopted orphans too
            if pid == child:
                status = os.waitstatus_to_exitcode(st)
                status = 128 - status if status < 0 else status
                break
    except (_Stop, ChildProcessError):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if child > 0:
            _kill_tree(child)
        _reap()
        if os.getppid() != parent and os.path.basename(workdir).startswith("course-grade-"):
            shutil.rmtree(workdir, ignore_errors=True)  # the grader is gone
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
