"""Saving to a path atomically: a temporary file, its lock, and cleaning up after a killed save.

In PyTorch: nothing; ``torch.save`` opens the path and writes in place (``_open_file`` in
``torch/serialization.py``), so a crash mid-save leaves a half-written checkpoint.
``course_lib.save`` and ``course_lib.safetensors.save_file`` write through :func:`_atomic_write`
instead: the file at the path holds either the old bytes or the new ones, never a mix.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import threading
from typing import IO, Callable

try:
    import fcntl as _fcntl
except ImportError:  # Windows
    _fcntl = None


def _fsync_dir(path: str) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _temp_pattern(base: str) -> re.Pattern:
    """Names of the temporary files a save of ``base`` writes: ``.NAME.<pid>-<12 hex>.tmp`` (and
    ``.NAME.<12 hex>.tmp``, the name before the process id was added)."""
    return re.compile(r"\." + re.escape(base) + r"\.(?:(\d+)-)?[0-9a-f]{12}\.tmp\Z")


def _process_alive(pid: int) -> bool:
    """Whether another process with this id runs (on POSIX; elsewhere the caller relies on
    Windows refusing to delete a file that is open)."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists but belongs to another user
    return True


def _remove_if_unlocked(path: str) -> None:
    """Delete a temporary file unless a live save holds its lock (see ``_atomic_write``)."""
    if _fcntl is None:
        try:
            os.unlink(path)  # Windows: fails while the writing process has the file open
        except OSError:
            pass
        return
    try:  # (no following links, and no blocking on a FIFO someone named like a temporary file)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)  # held by a live save: BlockingIOError
        st, now = os.fstat(fd), os.lstat(path)
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temps(folder: str, base: str) -> None:
    """Remove the temporary files that saves of ``folder/base`` killed mid-write left behind.

    A temporary file is stale when no process holds its lock and the process named in it
    is gone (or is this one: its id was reused): a save in progress in another process or
    thread is never touched.  Errors are ignored: cleaning up must not make a save fail.
    """
    prefix, pattern = f".{base}.", _temp_pattern(base)
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    with entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            m = pattern.match(entry.name)
            if m is None:
                continue
            pid = int(m.group(1) or 0)
            # The process's own id: an earlier process that had the same id (containers reuse
            # them); the lock tells whether a thread of this process is writing it.
            if pid and pid != os.getpid() and _process_alive(pid):
                continue
            _remove_if_unlocked(entry.path)


def _lock_new_temp(fd: int, tmp: str) -> int | None:
    """Lock the temporary file just created, for as long as the save runs; return the locked
    descriptor (a duplicate, so closing the file does not release it), None if a cleanup in
    another process removed the file between its creation and the lock (then take another)."""
    if _fcntl is None:
        return os.dup(fd)
    lock_fd = os.dup(fd)
    try:
        _fcntl.flock(lock_fd, _fcntl.LOCK_EX)
    except OSError:  # a file system without locks: the process id in the name still protects it
        return lock_fd
    try:
        st, now = os.fstat(lock_fd), os.lstat(tmp)
        if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            return lock_fd
    except OSError:
        pass
    os.close(lock_fd)
    return None


def _atomic_write(path, write: Callable[[IO[bytes]], None]) -> None:
    """Write a file through ``write(f)`` so that ``path`` holds either the old or the new bytes.

    The data goes to a temporary file ``.NAME.<pid>-<hex>.tmp`` in the same folder (same
    file system, so the rename is atomic), is flushed and fsynced, then ``os.replace``
    puts it in place and the folder is fsynced so the rename survives a power cut.  On
    any exception the temporary file is removed and the old file is untouched.

    A process killed mid-save (SIGKILL, power cut) cannot remove its temporary file, so
    each save first removes the stale ones of the same path: the save holds an
    exclusive lock (``flock``) on its temporary file until the rename, and a temporary
    file is deleted only when its lock is free and the process named in it is gone.
    """
    target = os.path.realpath(os.fspath(path))  # write through symlinks, like open() would
    folder, base = os.path.split(target)
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {os.path.dirname(os.fspath(path)) or folder} does not exist.")
    _remove_stale_temps(folder, base)
    while True:
        tmp = os.path.join(folder, f".{base}.{os.getpid()}-{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        lock_fd = _lock_new_temp(fd, tmp)
        if lock_fd is not None:
            break
        os.close(fd)
    old_fd = None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            getattr(os, "fdatasync", os.fsync)(f.fileno())
        if os.path.exists(target):
            try:
                shutil.copymode(target, tmp)
                # Keep the old file open across the rename: the file system then frees its
                # blocks when we close it (in the background below), not inside os.replace.
                old_fd = os.open(target, os.O_RDONLY)
            except OSError:
                pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if old_fd is not None:
            os.close(old_fd)
        raise
    finally:
        os.close(lock_fd)
    if old_fd is not None:
        threading.Thread(target=os.close, args=(old_fd,), daemon=True).start()
    _fsync_dir(folder)
