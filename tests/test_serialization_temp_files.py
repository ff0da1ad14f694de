"""Temporary files of saves killed mid-write are cleaned up by the next save of the same path.

``course_lib.save(obj, "ckpt.pt")`` writes ``.ckpt.pt.<pid>-<hex>.tmp`` beside the target
and renames it over ``ckpt.pt`` at the end, holding a lock on it meanwhile.  A process
killed with SIGKILL leaves the temporary file (as large as the checkpoint); the next
save of the same path removes it, but never the temporary file of a save still running
in another process.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import course_lib as cl
from course_lib import serialization as S

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and flock are POSIX")

HERE = os.path.dirname(os.path.abspath(__file__))


def temps(folder, name="ckpt.pt") -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}.") and p.name.endswith(".tmp"))


def start_paused_save(path, numel: int) -> subprocess.Popen:
    """A child process that saves a tensor of ``numel`` float32 to ``path`` and stops after writing
    the temporary file, before renaming it: it prints "written" and waits for a line on stdin."""
    script = textwrap.dedent(f"""
        import sys, course_lib as cl
        from course_lib import serialization as S
        real = S._write_archive
        def paused(obj, f, prefix, protocol):
            real(obj, f, prefix, protocol)
            f.flush()
            print("written", flush=True)
            sys.stdin.readline()
        S._write_archive = paused
        cl.save({{"w": cl.full(({numel},), 7.0)}}, {str(path)!r})
        print("saved", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line == "written\n", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def test_a_save_removes_the_temporary_file_of_a_killed_save(tmp_path):
    path = tmp_path / "ckpt.pt"
    cl.save({"w": cl.ones(3)}, path)
    proc = start_paused_save(path, 16 << 20)  # 64 MB
    (stale,) = temps(tmp_path)
    assert f".ckpt.pt.{proc.pid}-" in stale and (tmp_path / stale).stat().st_size > 64 << 20
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdin.close(), proc.stdout.close(), proc.stderr.close()
    assert temps(tmp_path) == [stale]                      # nothing could remove it
    assert cl.load(path)["w"].tolist() == [1.0, 1.0, 1.0]  # the old file survived
    cl.save({"w": cl.zeros(2)}, path)
    assert temps(tmp_path) == []
    assert cl.load(path)["w"].tolist() == [0.0, 0.0]


def test_the_temporary_file_of_a_running_save_survives(tmp_path):
    path = tmp_path / "ckpt.pt"
    proc = start_paused_save(path, 1 << 16)
    try:
        (live,) = temps(tmp_path)
        cl.save({"w": cl.zeros(2)}, path)  # another process saves the same path meanwhile
        assert temps(tmp_path) == [live]
        assert cl.load(path)["w"].tolist() == [0.0, 0.0]
        out, err = proc.communicate("go\n", timeout=60)  # the paused save finishes: its rename works
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and out == "saved\n", err
    assert temps(tmp_path) == []
    w = cl.load(path)["w"]
    assert w.shape == (1 << 16,) and w[0].item() == 7.0


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_which_temporary_files_are_stale(tmp_path):
    """Only temporary files of this path, whose lock is free and whose process is gone (or is
    this process: an earlier one had the same id), or named the old way without a process id."""
    path = tmp_path / "ckpt.pt"
    gone = dead_pid()
    names = {
        f".ckpt.pt.{gone}-0123456789ab.tmp": False,      # killed save: removed
        ".ckpt.pt.0123456789ab.tmp": False,               # a killed save of an older version: removed
        f".ckpt.pt.{os.getpid()}-00000000000a.tmp": False,  # an earlier process with this process's id
        f".ckpt.pt.{os.getppid()}-0123456789ab.tmp": True,  # its process runs: kept
        f".other.pt.{gone}-0123456789ab.tmp": True,       # another path's: kept
        f".ckpt.pt.{gone}-0123456789ab.tmp.bak": True,    # not a temporary file name: kept
        "ckpt.pt.tmp": True,
    }
    for name in names:
        (tmp_path / name).write_bytes(b"x" * 100)
    cl.save([1], path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["ckpt.pt"] + [n for n, kept in names.items() if kept])


def test_a_locked_temporary_file_is_kept_even_if_its_process_id_looks_dead(tmp_path):
    """The lock decides (a process in another PID namespace, or on another host sharing the
    folder, has an id that means nothing here)."""
    name = tmp_path / f".ckpt.pt.{dead_pid()}-0123456789ab.tmp"
    name.write_bytes(b"x")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, os, sys
        fd = os.open({str(name)!r}, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        sys.stdin.readline()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        cl.save([1], tmp_path / "ckpt.pt")
        assert name.exists()
    finally:
        holder.communicate("done\n", timeout=60)
    cl.save([2], tmp_path / "ckpt.pt")
    assert not name.exists() and cl.load(tmp_path / "ckpt.pt") == [2]


def test_a_symlink_or_fifo_named_like_a_temporary_file_is_harmless(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    gone = dead_pid()
    link = tmp_path / f".ckpt.pt.{gone}-0123456789ab.tmp"
    link.symlink_to(victim)
    fifo = tmp_path / f".ckpt.pt.{gone}-0123456789ac.tmp"
    os.mkfifo(fifo)
    cl.save([1], tmp_path / "ckpt.pt")  # must not block on the FIFO nor touch the link's target
    assert victim.read_text() == "keep me" and link.is_symlink() and fifo.exists()
    assert cl.load(tmp_path / "ckpt.pt") == [1]


def test_a_save_in_another_thread_of_this_process_is_safe(tmp_path, monkeypatch):
    """Saves of the same path from two threads: the second's cleanup sees the first's temporary
    file (same process id) and leaves it, because the first holds its lock."""
    import threading

    path = tmp_path / "ckpt.pt"
    written, go = threading.Event(), threading.Event()
    real = S._write_archive

    def paused(obj, f, prefix, protocol):
        real(obj, f, prefix, protocol)
        if obj == ["first"]:
            written.set()
            go.wait(60)

    monkeypatch.setattr(S, "_write_archive", paused)
    errors = []
    t = threading.Thread(target=lambda: _save_or_record(["first"], path, errors))
    t.start()
    assert written.wait(60)
    cl.save(["second"], path)
    assert len(temps(tmp_path)) == 1
    go.set()
    t.join(60)
    assert errors == [] and temps(tmp_path) == [] and cl.load(path) == ["first"]


def _save_or_record(obj, path, errors):
    try:
        cl.save(obj, path)
    except Exception as e:  # noqa: BLE001
        errors.append(e)
