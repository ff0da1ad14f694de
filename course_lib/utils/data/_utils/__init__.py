"""Helpers of the DataLoader that run in worker processes too.

In PyTorch: ``torch/utils/data/_utils/__init__.py`` (constants, the exit flag)
and ``torch/_utils.py`` (``ExceptionWrapper``).  Like PyTorch, the functions a
worker runs live in module scope, in this folder, so that the ``spawn`` start
method can pickle them by name:

- ``collate.py``   ``default_collate`` / ``default_convert``
- ``fetch.py``     turns a (batch of) index(es) into a (collated) batch
- ``worker.py``    the loop each worker process runs
- ``shared_memory.py``  how batches travel from a worker to the main process
- ``signal_handling.py``  what to say when a worker dies
- ``pin_memory.py``  a no-op here: pinned memory only matters for GPU copies
"""
from __future__ import annotations

import atexit
import sys
import traceback

IS_WINDOWS = sys.platform == "win32"

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds a worker waits on its index queue before checking that the main
process is still alive (PyTorch's value)."""

WORKER_STATUS_CHECK_INTERVAL = 0.1
"""Seconds the main process waits on the result queue before checking that
every worker is still alive.  PyTorch learns about dead workers from SIGCHLD
and waits 5 s; course_lib polls instead, so it waits less."""

python_exit_status = False
"""True once the interpreter is shutting down: iterators then skip the
polite shutdown (queues and processes may already be half torn down)."""


def _set_python_exit_flag() -> None:
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


class KeyErrorMessage(str):
    """A string whose repr is itself: ``KeyError(msg)`` prints ``msg`` with its newlines."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, to re-raise in another process.

    The exception object itself may not pickle (or may pickle without its
    traceback), so only its type and the formatted text travel.  ``reraise``
    builds a new exception of the same type whose message is
    ``Caught <Type> in DataLoader worker process N.`` plus the original
    traceback.
    """

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            # KeyError shows repr() of its argument, which would print "\n" literally.
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        # No local name for the exception: exception -> traceback -> this frame -> exception would be a
        # reference cycle, and the iterator (in the traceback's frames) would wait for the garbage collector
        # to stop its workers.
        raise self._exception(msg)

    def _exception(self, msg: str) -> BaseException:
        try:
            return self.exc_type(msg)
        except Exception:
            # the type needs other constructor arguments: say it with a RuntimeError
            return RuntimeError(msg)


from . import collate, fetch, pin_memory, shared_memory, signal_handling, worker  # noqa: E402,F401
