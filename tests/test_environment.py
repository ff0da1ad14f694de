"""environment.yml (conda) and the two pyprojects (pip) must list the same packages.

pyproject.toml is course_lib, the library: numpy only, plotting and widgets as the "viz" extra.
tools/pyproject.toml is the course's tooling (the `course` package), which needs course_lib[viz].
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _split(req: str) -> tuple[str, str]:
    m = _REQ.match(req)
    assert m, f"cannot parse requirement {req!r}"
    return _norm(m.group(1)), m.group(2).replace(" ", "")


def parse_environment_yml(text: str) -> dict:
    """The few keys of environment.yml we use, without needing PyYAML:
    name, channels, dependencies (strings) and the nested pip list."""
    out: dict = {"name": None, "channels": [], "dependencies": [], "pip": []}
    section = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith("- -e") else raw.rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        item = line.strip()
        if indent == 0:
            key, _, value = item.partition(":")
            if key == "name":
                out["name"] = value.strip()
            section = key if key in ("channels", "dependencies") else None
        elif item.startswith("- pip:"):
            section = "pip"
        elif item.startswith("- ") and section == "pip" and indent > 4:
            out["pip"].append(item[2:].strip())
        elif item.startswith("- ") and section in ("channels", "dependencies"):
            if section == "dependencies" and indent <= 4:
                out["dependencies"].append(item[2:].strip())
            elif section == "channels":
                out["channels"].append(item[2:].strip())
    return out


@pytest.fixture(scope="module")
def env() -> dict:
    return parse_environment_yml((ROOT / "environment.yml").read_text(encoding="utf-8"))


def _project(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))["project"]


@pytest.fixture(scope="module")
def library() -> dict:
    return _project(ROOT / "pyproject.toml")


@pytest.fixture(scope="module")
def tools() -> dict:
    return _project(ROOT / "tools" / "pyproject.toml")


@pytest.fixture(scope="module")
def pip_requirements(library, tools) -> dict:
    """name -> version bounds of everything the two pyprojects install (course_lib itself excluded)."""
    extras = library["optional-dependencies"]
    reqs = list(library["dependencies"]) + list(extras["viz"]) + list(extras["compile"])
    reqs += [r for r in tools["dependencies"] if _split(r)[0] != "course-lib"]
    out: dict = {}
    for req in reqs:
        name, bounds = _split(req)
        assert out.get(name, bounds) == bounds, f"{name} has two different bounds"
        out[name] = bounds
    return out


def test_parser_reads_a_known_file():
    text = ("name: x\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11  # pinned\n"
            "  - numpy>=1\n  - pip\n  - pip:\n      - -e .\n")
    assert parse_environment_yml(text) == {
        "name": "x", "channels": ["conda-forge"], "dependencies": ["python=3.11", "numpy>=1", "pip"],
        "pip": ["-e ."],
    }


def test_name_python_and_both_distributions(env):
    assert env["name"] == "pytorch-from-the-inside"
    assert "python=3.11" in env["dependencies"]
    assert env["pip"] == ["-e .", "-e tools"], "course_lib and the course's tools must be installed editable with pip"


def test_same_packages_and_bounds(env, pip_requirements):
    conda = dict(_split(d) for d in env["dependencies"] if not d.startswith(("python=", "python ")) and d != "pip")
    pip = pip_requirements
    assert sorted(conda) == sorted(pip), (
        f"only in environment.yml: {sorted(set(conda) - set(pip))}; "
        f"only in the pyprojects: {sorted(set(pip) - set(conda))}"
    )
    for name in pip:
        assert conda[name] == pip[name], f"{name}: environment.yml says {conda[name]!r}, the pyprojects {pip[name]!r}"


def test_python_versions_agree(env, library, tools):
    pinned = next(d for d in env["dependencies"] if d.startswith("python="))
    for project in (library, tools):
        required = project["requires-python"]  # e.g. ">=3.10"
        m = re.match(r">=\s*3\.(\d+)", required)
        assert m, required
        assert int(pinned.split("=")[1].split(".")[1]) >= int(m.group(1))


def test_installed_environment_satisfies_the_pyprojects(pip_requirements):
    """The environment running the tests has every dependency installed."""
    from importlib.metadata import PackageNotFoundError, version

    missing = []
    for name in list(pip_requirements) + ["course-lib", "pytorch-course"]:
        try:
            version(name)
        except PackageNotFoundError:
            missing.append(name)
    assert not missing, f"not installed: {missing}"


def test_course_lib_depends_on_numpy_only(library, tools):
    """The library installs numpy and nothing else; the course's tools need it with its viz extra."""
    assert [_split(r)[0] for r in library["dependencies"]] == ["numpy"]
    assert sorted(_split(r)[0] for r in library["optional-dependencies"]["viz"]) == ["ipywidgets", "matplotlib", "tqdm"]
    assert "course_lib[viz]" in tools["dependencies"]
    assert "scripts" not in library and tools["scripts"] == {"course": "course.cli:main"}
    # the installed distribution's metadata says the same (reinstall with `make` if this fails)
    from importlib.metadata import requires

    unconditional = [r for r in requires("course_lib") or [] if ";" not in r]
    assert [_split(r)[0] for r in unconditional] == ["numpy"], requires("course_lib")


def test_importing_course_lib_imports_no_course_tooling():
    code = ("import sys, course_lib, course_lib.nn, course_lib.utils.data, course_lib.viz\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in (\n"
            "    'matplotlib', 'ipywidgets', 'jupyter', 'jupyter_core', 'jupyterlab', 'jupytext', 'nbformat',\n"
            "    'nbclient', 'nbval', 'IPython', 'pytest', '_pytest', 'hypothesis', 'course'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "", f"import course_lib imported: {out.stdout.strip()}"
    assert not (ROOT / "course_lib" / "grading").exists(), "the course's tooling lives in tools/course/"
