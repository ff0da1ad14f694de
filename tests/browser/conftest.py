"""Fixtures of the browser test: Chromium, Playwright, one JupyterLab server and every notebook's Run All.

The notebooks the selected tests need are run once, in two browsers at a time (``COURSE_BROWSER_LANES``),
over copies in a folder of their own (a cell tagged ``long``, a full training run, runs its shorter
``grader_runs=`` version there, as in the other tests' Run All); the screenshots, JupyterLab's log and the
notebooks as JupyterLab saved them are kept in a folder named at the end of pytest's output
(``COURSE_BROWSER_ARTIFACTS`` chooses it).
Without Chromium or Playwright the tests are skipped with the reason; in CI (``CI=true`` or
``COURSE_REQUIRE_ORACLE=1``) they fail instead.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from jupyterlab_driver import INTERACTIONS, LabServer, find_chromium, run_notebooks

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("CI", "").lower() == "true" or os.environ.get("COURSE_REQUIRE_ORACLE") == "1"
_artifacts: list[Path] = []


def unavailable(reason: str):
    """Skip, or in CI fail, because something the browser test needs is missing."""
    if REQUIRED:
        pytest.fail(f"{reason} [CI=true or COURSE_REQUIRE_ORACLE=1: the browser test is required]", pytrace=False)
    pytest.skip(reason)


_timings: list[str] = []


def pytest_terminal_summary(terminalreporter):
    for line in _timings:
        terminalreporter.write_line(f"browser test: {line}")
    for folder in _artifacts:
        terminalreporter.write_line(f"browser test: screenshots, JupyterLab's log and the run notebooks are in "
                                    f"{folder}")


@pytest.fixture(scope="session")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        given = os.environ.get("COURSE_CHROMIUM")
        unavailable(f"COURSE_CHROMIUM={given} is not an executable" if given else
                    "the browser test needs Chromium: `apt-get install chromium` (Debian, Ubuntu), or set "
                    "COURSE_CHROMIUM to a Chrome or Chromium executable")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("the browser test needs Playwright for Python: `make browser` installs it "
                    "(pip install -e 'tools[browser]')")
    return found


@pytest.fixture(scope="session")
def artifacts() -> Path:
    given = os.environ.get("COURSE_BROWSER_ARTIFACTS")
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="course-browser-"))
    (folder / "screenshots").mkdir(parents=True, exist_ok=True)
    _artifacts.append(folder)
    return folder


def _longest_first(path: str) -> tuple:
    """Later chapters run longer (chapter 08 compiles with numba): start them first, so two lanes end together."""
    return Path(path).name, path


def _copy_shortened(src: Path, dst: Path) -> None:
    """Copy a notebook, the cells tagged ``long`` in its solutions notebook replaced by their shorter version."""
    key = json.loads((ROOT / "solutions" / src.name).read_text(encoding="utf-8"))
    short = {c["id"]: c["metadata"]["grader"]["runs_instead"] for c in key["cells"]
             if "long" in c.get("metadata", {}).get("tags", []) and "grader" in c.get("metadata", {})}
    nb = json.loads(src.read_text(encoding="utf-8"))
    for c in nb["cells"]:
        if c.get("id") in short:
            c["source"] = short[c["id"]]
    dst.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@pytest.fixture(scope="session")
def lab_runs(request, chromium, artifacts) -> dict:
    """path -> NotebookRun for every notebook a selected test asks for (parameter ``nb``)."""
    wanted = {item.callspec.params["nb"] for item in request.session.items
              if hasattr(item, "callspec") and "nb" in item.callspec.params}
    lab = artifacts / "lab"
    for folder in ("solutions", "notebooks"):
        (lab / folder).mkdir(parents=True, exist_ok=True)
        for nb in (ROOT / folder).glob("[0-9]*.ipynb"):
            _copy_shortened(nb, lab / folder / nb.name)
    server = LabServer(lab, artifacts / "jupyterlab.log")
    start = time.monotonic()
    server.start()
    _timings.append(f"JupyterLab answered after {time.monotonic() - start:.1f} s")
    try:
        lanes = int(os.environ.get("COURSE_BROWSER_LANES", min(2, os.cpu_count() or 1)))
        start = time.monotonic()
        runs = run_notebooks(chromium, server.url, sorted(wanted, key=_longest_first, reverse=True),
                             artifacts / "screenshots", INTERACTIONS, lanes=lanes)
        _timings.append(f"{len(runs)} notebooks in {time.monotonic() - start:.0f} s on {lanes} lanes: "
                        + ", ".join(f"{p} {r.seconds:.0f} s" for p, r in sorted(runs.items())))
        return runs
    finally:
        server.stop()
