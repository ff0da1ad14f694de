"""What to tell the user when a worker process dies.

In PyTorch: ``torch/utils/data/_utils/signal_handling.py`` installs a SIGCHLD
handler, and ``torch/csrc/DataLoader.cpp`` (``_error_if_any_worker_fails``)
asks the kernel with ``waitid`` how each worker ended.  course_lib gets the
same facts from ``multiprocessing``: while the main process waits for a batch
it checks every ``WORKER_STATUS_CHECK_INTERVAL`` seconds whether each worker
is still alive, and a dead worker's ``exitcode`` says how it died (a negative
exit code is the number of the signal that killed it).  The messages are
PyTorch's.
"""
from __future__ import annotations

import signal


def worker_failure(worker) -> RuntimeError:
    """The error for one worker (a ``multiprocessing.Process``) that has died."""
    code = worker.exitcode
    if code is not None and code < 0:
        try:
            name = signal.strsignal(-code) or f"Unknown signal {-code}"
        except (ValueError, AttributeError):  # no strsignal on some platforms
            name = f"Unknown signal {-code}"
        msg = f"DataLoader worker (pid {worker.pid}) is killed by signal: {name}. "
        if -code == getattr(signal, "SIGBUS", None):
            msg += ("It is possible that dataloader's workers are out of shared memory. "
                    "Please try to raise your shared memory limit.")
        return RuntimeError(msg)
    if code:
        return RuntimeError(
            f"DataLoader worker (pid {worker.pid}) exited unexpectedly with exit code {code}. "
            "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.")
    return RuntimeError(f"DataLoader worker (pid(s) {worker.pid}) exited unexpectedly")


def workers_failure(workers: list) -> RuntimeError:
    """The error for dead workers: the first one's story, or all their pids."""
    if len(workers) == 1 or any(w.exitcode for w in workers):
        for w in workers:
            if w.exitcode:
                return worker_failure(w)
    pids = ", ".join(str(w.pid) for w in workers)
    return RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")
