"""Keeping one notebook's grading run away from everything else (used by :mod:`course.grader`).

- :class:`FileSnapshot`: files read into memory before any learner code runs, written into each
  run's private folder (the checks, the `course` and `course_lib` packages, the answer key), so that
  what a notebook writes to the course's folders cannot change its own grading or a later one;
- :class:`Watch`: fingerprints of the course's files (content hashes) and of the packages the
  grading runs on (size, times), compared before and after each notebook to report edits;
- :func:`kernel_env`: the scrubbed environment of the grading run;
- :func:`kill_marked`: after a run, kill what is left of it anywhere on the machine (processes whose
  environment carries the run's marker), a backstop behind the run's supervisor (``_supervisor.py``).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import signal
import site
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

#: environment variable that marks every process of one grading run (its value is random per run)
MARKER_ENV = "COURSE_GRADING_RUN"
#: folders never copied or fingerprinted
_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git", ".pytest_cache", ".hypothesis"}
#: packages the grading run is made of (pytest side and kernel side): fingerprinted by size and times
HARNESS_PACKAGES = ("nbval", "_pytest", "pytest", "pluggy", "jupyter_client", "jupyter_core", "nbformat",
                    "ipykernel", "IPython", "traitlets", "zmq", "comm")


def _walk(root: Path, include: Callable[[Path], bool] | None = None) -> list[Path]:
    """Regular files under `root` (symlinks and the folders of `_SKIP_DIRS` left out), sorted."""
    out: list[Path] = []
    if root.is_file() and not root.is_symlink():
        return [root]
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if not p.is_symlink() and p.is_file() and (include is None or include(p)):
                out.append(p)
    return out


@dataclass(frozen=True)
class FileSnapshot:
    """Files read once into memory: ``(path relative to the snapshot's root, bytes, mtime_ns)``."""

    files: tuple[tuple[str, bytes, int], ...] = ()

    @classmethod
    def of(cls, root: Path, include: Callable[[Path], bool] | None = None, prefix: str = "") -> "FileSnapshot":
        """The files under `root` (a folder or one file), stored under ``prefix/relative path``."""
        files = []
        for p in _walk(root, include):
            rel = p.name if p == root else p.relative_to(root).as_posix()
            files.append((f"{prefix}/{rel}" if prefix else rel, p.read_bytes(), p.stat().st_mtime_ns))
        return cls(tuple(files))

    def __add__(self, other: "FileSnapshot") -> "FileSnapshot":
        return FileSnapshot(self.files + other.files)

    def names(self) -> list[str]:
        return [rel for rel, _, _ in self.files]

    def read(self, rel: str) -> bytes:
        return next(data for name, data, _ in self.files if name == rel)

    def write(self, dest: Path) -> None:
        """Write every file under `dest` (created), with its original modification time."""
        for rel, data, mtime in self.files:
            p = dest / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            os.utime(p, ns=(mtime, mtime))


# ---------------------------------------------------------------- fingerprints


def package_dir(name: str) -> Path | None:
    """The folder of an importable package (None if it is not installed or is a single module)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _startup_files() -> list[Path]:
    """Files every Python start-up runs: ``*.pth`` and ``sitecustomize``/``usercustomize`` in site dirs."""
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    out = []
    for d in map(Path, dirs):
        if d.is_dir():
            out += [p for p in sorted(d.iterdir())
                    if p.suffix == ".pth" or p.stem in ("sitecustomize", "usercustomize")]
    return out


class Watch:
    """Fingerprints of files to compare before and after a run.

    `hashed` folders are fingerprinted by content (the course's own files: small), `stat_roots` by
    size, modification and change times (the packages the run is made of: many files; the change
    time cannot be set back by a program that edits a file).
    """

    def __init__(self, hashed: Iterable[Path] = (), stat_roots: Iterable[Path] = ()):
        self.hashed = [Path(p) for p in hashed]
        self.stat_roots = [Path(p) for p in stat_roots]

    def add_stat(self, paths: Iterable[Path]) -> None:
        self.stat_roots += [Path(p) for p in paths]

    def state(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for root in self.hashed:
            for p in _walk(root) if root.exists() else []:
                try:
                    out[str(p)] = hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()
                except OSError:
                    out[str(p)] = "unreadable"
        for root in self.stat_roots:
            for p in _walk(root) if root.exists() else []:
                try:
                    st = p.stat()
                except OSError:
                    continue
                out[str(p)] = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
        return out

    @staticmethod
    def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
        """Paths added, removed or changed between two states."""
        return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def course_watch(solutions_dir: Path, chapters_dir: Path | None, libs: Iterable[Path]) -> Watch:
    """The course's files (answer key, chapters, tools, library) and what the grading runs on."""
    hashed = [solutions_dir] + ([chapters_dir] if chapters_dir is not None else []) + list(libs)
    stats = [d for name in HARNESS_PACKAGES if (d := package_dir(name)) is not None]
    return Watch(hashed, stats + _startup_files())


# ---------------------------------------------------------------- environment

#: variables the grading run keeps from the grader's environment (everything else is dropped)
_KEEP = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH",
         "VIRTUAL_ENV", "CONDA_PREFIX", "SYSTEMROOT", "GLIBC_TUNABLES",
         "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
         "NUMEXPR_NUM_THREADS", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8"}
_KEEP_PREFIXES = ("LC_", "MALLOC_")
_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def kernel_env(run_dir: Path, lib: Path, chapters: Path | None, marker: str) -> dict[str, str]:
    """The environment of a grading run (pytest and the kernel): nothing but what they need.

    Every path in it is inside the run's own private folder `run_dir`: the libraries, the checks,
    the temporary folder and IPython's and Jupyter's folders (so a notebook cannot plant start-up
    files or find other runs' connection files in shared places).
    """
    env = {k: v for k, v in os.environ.items() if k in _KEEP or k.startswith(_KEEP_PREFIXES)}
    # One BLAS/OpenMP thread per kernel: grading runs several kernels side by side on small
    # machines, and oversubscribed BLAS threads make small matrix products far slower.
    for var in _THREADS:
        env.setdefault(var, "1")
    env.setdefault("PATH", os.defpath)
    home = run_dir / "home"
    for d in ("tmp", "home/ipython", "home/jupyter/runtime", "home/jupyter/config", "home/jupyter/data"):
        (run_dir / d).mkdir(parents=True, exist_ok=True)
    env.update({
        "PYTHONPATH": str(lib),
        "TMPDIR": str(run_dir / "tmp"),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_RUNTIME_DIR": str(home / "jupyter" / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "jupyter" / "config"),
        "JUPYTER_DATA_DIR": str(home / "jupyter" / "data"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "MPLBACKEND": "Agg",
        MARKER_ENV: marker,
    })
    if chapters is not None:
        from .paths import CHAPTERS_ENV

        env[CHAPTERS_ENV] = str(chapters)
    return env


# ---------------------------------------------------------------- processes


def marked_processes(marker: str) -> list[int]:
    """Processes (other than this one) whose environment holds ``COURSE_GRADING_RUN=<marker>``."""
    needle = f"{MARKER_ENV}={marker}".encode()
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry.name))
    return found


def kill_marked(marker: str, rounds: int = 50) -> int:
    """SIGKILL every process of the run `marker` until none is left (a fork loop is outrun). Returns how many."""
    killed: set[int] = set()
    for _ in range(rounds):
        pids = [p for p in marked_processes(marker)]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    return len(killed)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
