"""The course as a learner uses it: JupyterLab in headless Chromium, Run All on every notebook.

Every solutions notebook runs with no error output, each figure is an image that loaded, each widget
rendered (no "Loading widget..." and no text such as ``VBox(children=...)``), and the browser console has
no errors. A fresh learner notebook runs top to bottom too: only check cells raise (NotAttempted), and
only demos that name the exercise they need say it is not done. Chapter 02's stride explorer and chapter
03's backward stepper react to the mouse and keyboard. See conftest.py for the setup; ``make test`` runs
this after the main suite: ``pytest tests/browser -p no:xdist``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from jupyterlab_driver import EXPLORER_OFFSET, EXPLORER_PRESET, IMAGE_MIMES, STEPPER_STEPS, WIDGET_MIME

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(p.name for p in (ROOT / "solutions").glob("[0-9]*.ipynb"))
#: a figure that reached the notebook as text only (matplotlib's repr), not as an image
FIGURE_AS_TEXT = re.compile(r"^<Figure size .*>$", re.M)
#: an output that says an exercise is not done yet, and how a demo names the exercise it needs
NOT_DONE = re.compile(r"not attempted|NotImplementedError|YOUR CODE HERE", re.I)
NAMES_EXERCISE = re.compile(r"(finish|needs?) exercises? \d\d\.\d+", re.I)


def _param(folder: str):
    return pytest.mark.parametrize("nb", [f"{folder}/{n}" for n in NAMES], ids=[n[:2] for n in NAMES])


def _ran(run) -> list:
    """Problems common to both kinds of notebook: cells that did not run, figures and widgets, the console."""
    assert run.error is None, f"{run.path}: {run.error}"
    problems = []
    not_run = [c["id"] for c in run.code_cells() if c["count"] is None]
    if not_run:
        problems.append(f"{len(not_run)} cells did not run (the kernel drops the cells queued after an error): "
                        + ", ".join(not_run[:5]) + (", ..." if len(not_run) > 5 else ""))
    for c in run.code_cells():
        images = sum(any(m in o["mimes"] for m in IMAGE_MIMES) for o in c["outputs"])
        widgets = sum(WIDGET_MIME in o["mimes"] for o in c["outputs"])
        if any(FIGURE_AS_TEXT.search(o["text"]) and not set(o["mimes"]) & set(IMAGE_MIMES) for o in c["outputs"]):
            problems.append(f"{c['id']}: a figure came out as text, not as an image")
        if not (images or widgets):
            continue
        s = run.shown.get(c["index"])
        if s is None:
            problems.append(f"{c['id']}: its output was never looked at")
            continue
        if s["images"] < images or s["loaded"] < s["images"]:
            problems.append(f"{c['id']}: {s['loaded']} of {s['images']} images loaded, the model holds {images}")
        if widgets and (s["widgets"] == 0 or s["loading"] or s["text_repr"]):
            problems.append(f"{c['id']}: a widget did not render; the output shows {s['text']!r}")
    for c in run.code_cells():
        said = "".join(o["text"] for o in c["outputs"])
        if c["id"] == "env-check" and not said.rstrip().endswith("All set."):
            problems.append(f"env-check: course doctor in JupyterLab's kernel is not happy: {said!r}")
    return problems + [f"browser {line}" for line in run.console]


@_param("solutions")
def test_solutions_notebook_runs_clean_in_jupyterlab(nb, lab_runs):
    run = lab_runs[nb]
    problems = [f"{c['id']}: {o['ename']}: {o['evalue']}" for c in run.code_cells() for o in c["outputs"]
                if o["output_type"] == "error"]
    problems += _ran(run)
    assert not problems, f"{nb} in JupyterLab:\n  " + "\n  ".join(problems)


@_param("notebooks")
def test_fresh_learner_notebook_runs_to_the_end_in_jupyterlab(nb, lab_runs):
    run = lab_runs[nb]
    problems = _ran(run)
    checks = [c for c in run.code_cells() if "check" in c["tags"]]
    assert checks, f"{nb} has no check cell"
    for c in run.code_cells():
        errors = [o for o in c["outputs"] if o["output_type"] == "error"]
        if "check" in c["tags"]:
            if [o["ename"] for o in errors] != ["NotAttempted"]:
                problems.append(f"{c['id']}: a fresh check cell should say NotAttempted, not {errors}")
            continue
        problems += [f"{c['id']}: {o['ename']}: {o['evalue']}" for o in errors]
        said = "".join(o["text"] for o in c["outputs"])
        if NOT_DONE.search(said) and not NAMES_EXERCISE.search(said):
            problems.append(f"{c['id']}: says something is not done without naming the exercise: {said[:200]!r}")
    assert not problems, f"{nb} after Run All in JupyterLab:\n  " + "\n  ".join(problems)


def _screenshots_exist(it) -> None:
    assert it.screenshots and all(p.is_file() and p.stat().st_size > 0 for p in it.screenshots)


@pytest.mark.parametrize("nb", ["solutions/02_strides_and_views.ipynb"], ids=["02"])
def test_stride_explorer_follows_a_preset_and_turns_red_past_the_storage(nb, lab_runs):
    run = lab_runs[nb]
    assert run.error is None and run.interaction is not None, run.error
    it = run.interaction
    assert it.error is None, f"{it.error} (screenshots: {[str(p) for p in it.screenshots]})"
    before, preset, offset = it.before, it.after["preset"], it.after["offset"]
    assert "storage.as_strided((3, 4), (1, 3), 0)" in before["status"]
    assert EXPLORER_PRESET[1] in preset["status"] and "as_strided would raise" not in preset["status"]
    assert EXPLORER_OFFSET[1] in offset["status"] and offset["sliders"]["offset"] == EXPLORER_OFFSET[0]
    assert len({before["figure"], preset["figure"], offset["figure"]}) == 3, "the figure did not change"
    assert before["figures"] == preset["figures"] == offset["figures"] == 1
    _screenshots_exist(it)


@pytest.mark.parametrize("nb", ["solutions/03_autograd.ipynb"], ids=["03"])
def test_backward_stepper_moves_by_the_arrow_keys(nb, lab_runs):
    run = lab_runs[nb]
    assert run.error is None and run.interaction is not None, run.error
    it = run.interaction
    assert it.error is None, f"{it.error} (screenshots: {[str(p) for p in it.screenshots]})"
    assert it.before["sliders"]["steps run"] == "0" and float(it.before["max"]) > STEPPER_STEPS
    states = [it.before] + [it.after[k] for k in range(1, STEPPER_STEPS + 1)]
    for k, state in enumerate(states[1:], start=1):
        assert state["sliders"]["steps run"] == str(k) and float(state["now"]) == k
    assert len({s["figure"] for s in states}) == len(states), "a step did not change the figure"
    assert all(s["figures"] == 1 for s in states), "the stepper should show one figure, replaced at each step"
    _screenshots_exist(it)
