"""Failure messages of the check runtime name the first element that differs."""
from __future__ import annotations

import numpy as np
import pytest

import course_lib as cl
from course.checks import CheckFailure, _first_difference, call, exercise, run_check


def test_long_strings_name_the_first_differing_character():
    got, expected = "x" * 100, "x" * 70 + "y" + "x" * 29
    assert _first_difference(got, expected) == ("at character 70: expected 'yxxxxxxxxxxxxxxxxxxx', "
                                                "got 'xxxxxxxxxxxxxxxxxxxx'")


def test_arrays_and_tensors_name_the_index_and_count():
    e = np.arange(100.0)
    g = e.copy()
    g[57] = -1.0
    assert _first_difference(g, e) == "at [57]: expected 57.0, got -1.0 (1 of 100 elements differ)"
    t = cl.arange(12.0).reshape(3, 4)
    assert _first_difference(t + cl.tensor([0.0, 0, 0, 1]), t) == \
        "at [0, 3]: expected 3.0, got 4.0 (3 of 12 elements differ)"
    assert _first_difference(np.zeros((2, 3)), np.zeros((3, 2))) == "shape: expected shape (3, 2), got (2, 3)"


def test_nested_containers():
    assert _first_difference([1, (2, [3, 4])], [1, (2, [3, 5])]) == "at [1][1][1]: expected 5, got 4"
    assert _first_difference([1, (2, np.arange(3))], [1, (2, np.array([0, 1, 7]))]) == \
        "at [1][1][2]: expected 7, got 2 (1 of 3 elements differ)"
    assert _first_difference({"a": 1}, {"b": 1}) == "keys: missing keys ['b'], unexpected keys ['a']"
    assert _first_difference([1, 2], [1, 2, 3]) == "length: expected 3 items, got 2"
    assert _first_difference([1, 2], [1, 2]) is None
    assert _first_difference(["ok", {"k": "abc"}], ["ok", {"k": "abd"}]) == \
        "[1]['k']: at character 2: expected 'd', got 'c'"
    assert _first_difference([("a", "xy")], [("a", "x")]) == \
        "[0][1]: lengths differ: expected 1 characters, got 2"


def test_the_message_carries_the_difference_line(monkeypatch):
    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))

    @exercise("96.1", title="ramp", points=1, hint="Count from zero.")
    def _ramp(rng):
        return [call(200, expected=list(range(200)))]

    with pytest.raises(CheckFailure) as info:
        run_check("96.1", lambda n: [k if k != 150 else 0 for k in range(n)])
    lines = str(info.value).splitlines()
    assert lines[4] == "  differs:  at [150]: expected 150, got 0"
    assert lines[5] == "  hint:     Count from zero."


def test_values_shown_whole_get_no_difference_line(monkeypatch):
    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))

    @exercise("96.2", title="word", points=1, hint="Say it.")
    def _word(rng):
        return [call(expected="Fizz")]

    with pytest.raises(CheckFailure) as info:
        run_check("96.2", lambda: "3")
    assert "differs" not in str(info.value)


def test_judged_checks_show_the_difference_and_why(monkeypatch):
    """The same messages from the judge (inputs, probe and judge split), plus a compare that says what is wrong."""
    from course import checks

    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))

    @exercise("96.3", title="ramp", points=1, hint="Count from zero.")
    def _ramp(rng):
        return [call(200, expected=list(range(200))),
                call(3, expected=[0, 1, 2], compare=lambda got, exp: got == exp or f"{len(got)} items")]

    with pytest.raises(CheckFailure) as info:
        run_check("96.3", lambda n: [k if k != 150 else 0 for k in range(n)])
    lines = str(info.value).splitlines()
    assert lines[:2] == ["✗ 96.3 ramp: case 1/2 failed", "  input:    ramp(200)"]
    assert lines[4] == "  differs:  at [150]: expected 150, got 0"
    with pytest.raises(CheckFailure) as info:
        run_check("96.3", lambda n: list(range(n)) if n > 3 else [0])
    assert "  why:      1 items" in str(info.value).splitlines()
