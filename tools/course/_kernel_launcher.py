"""Start a grading kernel under limits:
``python -I -S _kernel_launcher.py [options] -- python -m ipykernel_launcher ...``.

The grader's pytest plugin puts this in front of the kernel's command. It sets the resource limits
(they hold for the kernel and everything it starts), drops pytest's own variables from the
environment, sends the kernel's own stdout to /dev/null
(the notebook's output reaches the grader through Jupyter's messages, never through a file), then
replaces itself with the kernel. Standard library only, run with ``-I -S``.

Limits (0 = leave as it is):

- ``--memory MB``: the data segment (``RLIMIT_DATA``: heap and anonymous mappings; Linux >= 4.7),
  elsewhere the address space (``RLIMIT_AS``);
- ``--processes N``: at most N more processes of this user than are running now (``RLIMIT_NPROC``
  counts every process of the user, and does not apply to root);
- ``--file-size MB``: the largest file the kernel may write (``RLIMIT_FSIZE``); no core files.
"""
from __future__ import annotations

import os
import sys

MB = 1024 * 1024


def _set(resource, which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        resource.setrlimit(which, (value, hard))


def _user_processes() -> int:
    uid = os.getuid()
    n = 0
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    n += 1
            except OSError:
                pass
    return n


def apply_limits(memory_mb: int, processes: int, file_size_mb: int) -> None:
    import resource

    if memory_mb > 0:
        which = resource.RLIMIT_DATA if sys.platform.startswith("linux") else resource.RLIMIT_AS
        _set(resource, which, memory_mb * MB)
    if processes > 0 and os.geteuid() != 0 and hasattr(resource, "RLIMIT_NPROC"):
        _set(resource, resource.RLIMIT_NPROC, _user_processes() + processes)
    if file_size_mb > 0:
        _set(resource, resource.RLIMIT_FSIZE, file_size_mb * MB)
    _set(resource, resource.RLIMIT_CORE, 0)


def main(argv: list[str]) -> None:
    split = argv.index("--")
    opts, cmd = argv[:split], argv[split + 1:]
    values = {"--memory": 0, "--processes": 0, "--file-size": 0}
    for key, value in zip(opts[::2], opts[1::2]):
        values[key] = int(value)
    apply_limits(values["--memory"], values["--processes"], values["--file-size"])
    for key in [k for k in os.environ if k.startswith("PYTEST_")]:  # pytest's own, set in its process
        del os.environ[key]
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
