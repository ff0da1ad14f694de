"""environment.yml (conda) and pyproject.toml (pip) must list the same packages."""
from __future__ import annotations

import re
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


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_parser_reads_a_known_file():
    text = ("name: x\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11  # pinned\n"
            "  - numpy>=1\n  - pip\n  - pip:\n      - -e .\n")
    assert parse_environment_yml(text) == {
        "name": "x", "channels": ["conda-forge"], "dependencies": ["python=3.11", "numpy>=1", "pip"],
        "pip": ["-e ."],
    }


def test_name_python_and_course_lib(env):
    assert env["name"] == "pytorch-from-the-inside"
    assert "python=3.11" in env["dependencies"]
    assert env["pip"] == ["-e ."], "course_lib itself must be installed editable with pip"


def test_same_packages_and_bounds(env, project):
    conda = dict(_split(d) for d in env["dependencies"] if not d.startswith(("python=", "python ")) and d != "pip")
    pip = dict(_split(d) for d in project["dependencies"])
    assert sorted(conda) == sorted(pip), (
        f"only in environment.yml: {sorted(set(conda) - set(pip))}; "
        f"only in pyproject.toml: {sorted(set(pip) - set(conda))}"
    )
    for name in pip:
        assert conda[name] == pip[name], f"{name}: environment.yml says {conda[name]!r}, pyproject.toml {pip[name]!r}"


def test_python_versions_agree(env, project):
    required = project["requires-python"]  # e.g. ">=3.10"
    m = re.match(r">=\s*3\.(\d+)", required)
    assert m, required
    pinned = next(d for d in env["dependencies"] if d.startswith("python="))
    assert int(pinned.split("=")[1].split(".")[1]) >= int(m.group(1))


def test_installed_environment_satisfies_pyproject(project):
    """The environment running the tests has every dependency installed."""
    from importlib.metadata import PackageNotFoundError, version

    missing = []
    for req in project["dependencies"]:
        name, _ = _split(req)
        try:
            version(name)
        except PackageNotFoundError:
            missing.append(name)
    assert not missing, f"not installed: {missing}"
