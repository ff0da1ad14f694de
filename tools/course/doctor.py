"""``course doctor``: is this Python ready for the course?

Checks, one line each: the Python version, the packages the course's tools and ``course_lib[viz]``
declare (with their version bounds), the ``python3`` kernel JupyterLab will start, JupyterLab's widget
extension, write access where the course writes, BLAS threads, and the optional oracle (real PyTorch).
Every problem is one line that says what to fix. ``run()`` prints the report (chapter 00's environment
cell calls it); ``course doctor`` prints it and exits with 1 when a check failed.

Warnings (BLAS threads, a torch other than the one the course compares with) do not fail: the course
works, only slower or with some comparison cells skipped.
"""
from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: the Python the course needs (tools/pyproject.toml's requires-python)
MIN_PYTHON = (3, 10)
#: the distribution of the course's tools (tools/pyproject.toml), whose requirements are checked
TOOLS_DIST = "pytorch-course"
#: the PyTorch release the oracle comparisons use
ORACLE_TORCH = "2.13.0"
#: shown first in the packages line
MAIN_PACKAGES = ("numpy", "matplotlib", "ipywidgets", "jupyterlab")
WIDGET_EXTENSION = Path("@jupyter-widgets", "jupyterlab-manager", "package.json")

OK, WARN, FAIL = "ok", "warn", "FIX"


@dataclass(frozen=True)
class Finding:
    """The outcome of one check: ``status`` is ``ok``, ``warn`` or ``FIX``; ``message`` is one line."""

    check: str
    status: str
    message: str

    def line(self) -> str:
        return f"  {self.status:<5} {self.check}: {self.message}"


def _python_cmd() -> str:
    return sys.executable or "python"


def _canonical(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()


# ---------------------------------------------------------------------------- checks


def check_python(version_info: tuple = tuple(sys.version_info)) -> list[Finding]:
    """The Python version against :data:`MIN_PYTHON`."""
    shown = ".".join(map(str, version_info[:3]))
    if tuple(version_info[:2]) < MIN_PYTHON:
        need = ".".join(map(str, MIN_PYTHON))
        return [Finding("Python", FAIL, f"{shown} is too old, the course needs {need} or newer: create the "
                                        f"environment with a newer python3 (`make course PYTHON=python3.12`)")]
    return [Finding("Python", OK, shown)]


def _requirements(dist: str, extras: tuple = ()) -> list:
    from packaging.requirements import Requirement

    out = []
    for text in md.requires(dist) or []:
        req = Requirement(text)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras or ("",)):
            out.append(req)
    return out


def check_packages(dist: str = TOOLS_DIST, version: Callable[[str], str] = md.version) -> list[Finding]:
    """Every requirement of the course's tools and of ``course_lib[viz]`` is installed, within its bounds."""
    try:
        reqs = _requirements(dist)
    except md.PackageNotFoundError:
        return [Finding("packages", FAIL, f"the course's tools ({dist}) are not installed in this Python: "
                                          f"run `make course` in the course's folder")]
    for req in [r for r in reqs if r.extras]:
        try:
            reqs += _requirements(req.name, tuple(sorted(req.extras)))
        except md.PackageNotFoundError:
            pass  # reported below as not installed
    problems, found = [], {}
    for req in reqs:
        key = _canonical(req.name)
        if key in found:
            continue
        try:
            found[key] = have = version(req.name)
        except md.PackageNotFoundError:
            found[key] = None
            problems.append(Finding("packages", FAIL, f"{req.name} is not installed: run `make course` "
                                                      f"(or `{_python_cmd()} -m pip install '{req}'`)"))
            continue
        if req.specifier and not req.specifier.contains(have, prereleases=True):
            problems.append(Finding("packages", FAIL, f"{req.name} {have} is installed, the course needs "
                                                      f"{req.name}{req.specifier}: run `{_python_cmd()} -m pip "
                                                      f"install '{req.name}{req.specifier}'`"))
    if problems:
        return problems
    main = [f"{n} {found[n]}" for n in MAIN_PACKAGES if found.get(n)]
    rest = len([k for k, v in found.items() if v and k not in MAIN_PACKAGES])
    return [Finding("packages", OK, ", ".join(main) + (f" and {rest} more, as the course needs" if rest else ""))]


def _prefix_of(python: str) -> str | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                             timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def check_kernel(name: str = "python3", kernel_spec_manager=None) -> list[Finding]:
    """The kernel JupyterLab starts for the course's notebooks runs this Python (its ``sys.prefix``)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    ksm = kernel_spec_manager if kernel_spec_manager is not None else KernelSpecManager()
    try:
        spec = ksm.get_kernel_spec(name)
    except NoSuchKernel:
        return [Finding("kernel", FAIL, f"JupyterLab has no `{name}` kernel: run `{_python_cmd()} -m pip install "
                                        f"ipykernel` (make course does)")]
    exe = spec.argv[0] if spec.argv else ""
    # jupyter_client starts a spec whose command is a bare `python` with the Python JupyterLab runs in
    if exe in {"python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"}:
        lab = Path(_python_cmd()).with_name("jupyter-lab")
        if lab.exists():
            return [Finding("kernel", OK, f"JupyterLab's {name} kernel runs this Python")]
        return [Finding("kernel", FAIL, f"JupyterLab is not installed beside this Python, so its {name} kernel "
                                        f"may run another one: run `make course`")]
    prefix = _prefix_of(exe)
    if prefix is not None and os.path.realpath(prefix) == os.path.realpath(sys.prefix):
        return [Finding("kernel", OK, f"JupyterLab's {name} kernel runs this Python")]
    where = f"Python in {prefix}" if prefix else f"{exe}, which does not start"
    return [Finding("kernel", FAIL, f"JupyterLab's {name} kernel ({spec.resource_dir}) runs the {where}, not "
                                    f"this one ({sys.prefix}): remove it with `jupyter kernelspec remove {name}` "
                                    f"and run `make course`")]


def check_widgets(labextension_dirs: list | None = None, version: Callable[[str], str] = md.version) -> list[Finding]:
    """JupyterLab's ipywidgets extension is installed and matches ipywidgets (else widgets show as text)."""
    from packaging.requirements import Requirement

    if labextension_dirs is None:
        from jupyter_core.paths import jupyter_path

        labextension_dirs = jupyter_path("labextensions")
    fix = f"`{_python_cmd()} -m pip install --force-reinstall ipywidgets jupyterlab_widgets`"
    if not any((Path(d) / WIDGET_EXTENSION).is_file() for d in labextension_dirs):
        return [Finding("widgets", FAIL, f"JupyterLab's widget extension is missing (widgets would show as text "
                                         f"such as VBox(children=...)): run {fix}")]
    try:
        have = version("jupyterlab_widgets")
        needs = [Requirement(r) for r in md.requires("ipywidgets") or []]
    except md.PackageNotFoundError:
        return [Finding("widgets", FAIL, f"ipywidgets or jupyterlab_widgets is not installed: run {fix}")]
    for req in needs:
        if _canonical(req.name) == "jupyterlab-widgets" and not req.specifier.contains(have, prereleases=True):
            return [Finding("widgets", FAIL, f"jupyterlab_widgets {have} does not match ipywidgets, which needs "
                                             f"{req.name}{req.specifier}: run {fix}")]
    return [Finding("widgets", OK, f"JupyterLab's widget extension is installed (jupyterlab_widgets {have})")]


def _writable(folder: Path) -> bool:
    """Creating (and removing) a file in `folder`, or in its nearest existing parent, works."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".course-doctor-"):
            return True
    except OSError:
        return False


def _default_places() -> dict:
    from jupyter_core.paths import jupyter_runtime_dir

    from .paths import CourseError, find_solutions_dir

    try:
        notebooks = find_solutions_dir().parent / "notebooks"
    except CourseError:
        notebooks = Path.cwd()
    if not notebooks.is_dir():
        notebooks = Path.cwd()
    return {"your notebooks' folder": notebooks, "Jupyter's runtime folder": Path(jupyter_runtime_dir()),
            "the temporary folder": Path(tempfile.gettempdir())}


def check_write_access(places: Mapping[str, Path] | None = None) -> list[Finding]:
    """Files can be written where the course writes: the notebooks, Jupyter's runtime files, temporary files."""
    places = _default_places() if places is None else places
    bad = [Finding("write access", FAIL, f"cannot write in {what} ({path}): make it writable for "
                                         f"this user (or copy the course to a folder of your own)")
           for what, path in places.items() if not _writable(Path(path))]
    return bad or [Finding("write access", OK, ", ".join(places))]


#: the variables each BLAS reads for its thread count, first found wins
BLAS_THREAD_VARS = {"openblas": ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"),
                    "mkl": ("MKL_NUM_THREADS", "OMP_NUM_THREADS"),
                    "accelerate": ("VECLIB_MAXIMUM_THREADS",)}


def _numpy_blas() -> str:
    import numpy as np

    try:
        name = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"].lower()
    except Exception:  # older numpy, or a build without that section
        return "openblas"
    return next((k for k in BLAS_THREAD_VARS if k in name), "openblas")


def check_blas_threads(env: Mapping[str, str] = os.environ, cpus: int | None = None,
                       blas: str | None = None) -> list[Finding]:
    """numpy's BLAS runs one thread (``make course`` sets it): more fight course_lib's own threads for the cores."""
    blas = _numpy_blas() if blas is None else blas
    cpus = (os.cpu_count() or 1) if cpus is None else cpus
    names = BLAS_THREAD_VARS.get(blas, BLAS_THREAD_VARS["openblas"])
    var = next((v for v in names if env.get(v, "").strip()), None)
    try:
        threads = int(env[var]) if var else cpus
    except ValueError:
        threads = cpus
    if threads <= 1 or cpus <= 1:
        return [Finding("BLAS threads", OK, f"{threads} ({var}={env[var]})" if var else f"{threads} ({cpus} core)")]
    return [Finding("BLAS threads", WARN, f"numpy's BLAS ({blas}) may run {threads} threads beside course_lib's "
                                          f"own, which slows training: start JupyterLab with `make course`, or "
                                          f"with {names[0]}=1 set")]


def check_torch(version: Callable[[str], str] = md.version) -> list[Finding]:
    """The optional oracle: torch, exactly :data:`ORACLE_TORCH`, or absent (comparison cells are skipped)."""
    try:
        have = version("torch")
    except md.PackageNotFoundError:
        return [Finding("torch", OK, f"not installed (optional: `make oracle` installs torch=={ORACLE_TORCH} "
                                     f"for the comparison cells)")]
    if have.split("+")[0] != ORACLE_TORCH:
        return [Finding("torch", WARN, f"{have} is installed, the course compares with {ORACLE_TORCH}: run "
                                       f"`make oracle`")]
    return [Finding("torch", OK, f"{have}, the version the course compares with")]


CHECKS: tuple = (check_python, check_packages, check_kernel, check_widgets, check_write_access,
                 check_blas_threads, check_torch)


def diagnose() -> list[Finding]:
    """Run every check; a check that crashes is reported as a problem, not raised."""
    out: list[Finding] = []
    for check in CHECKS:
        try:
            out += check()
        except Exception as e:  # a broken install can break a check itself: say so and go on
            name = check.__name__.removeprefix("check_").replace("_", " ")
            out.append(Finding(name, FAIL, f"the check itself failed ({type(e).__name__}: {e}): run `make course`"))
    return out


def report(findings: list[Finding]) -> str:
    """The lines ``course doctor`` prints: one per check or problem, then a verdict."""
    lines = ["course doctor: is this Python ready for the course?", *(f.line() for f in findings)]
    failed = sum(f.status == FAIL for f in findings)
    if failed:
        lines.append(f"{failed} problem{'s' if failed > 1 else ''} to fix (the lines marked {FAIL}).")
    else:
        lines.append("All set.")
    return "\n".join(lines)


def run() -> None:
    """Print the report; chapter 00's environment cell calls this (it returns nothing, so that the cell
    shows the report only; :func:`diagnose` gives the findings)."""
    print(report(diagnose()))


def main(argv: list[str] | None = None) -> int:
    """``course doctor``: exit status 0 when nothing needs fixing (warnings allowed), 1 otherwise."""
    findings = diagnose()
    print(report(findings))
    return 1 if any(f.status == FAIL for f in findings) else 0
