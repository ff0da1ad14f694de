"""The check runtime: ``check("00.1", fizzbuzz)``.

Each chapter registers its exercises in ``chapters/NN_name/checks.py``, loaded the
first time one of its exercises is checked::

    from course.checks import case, exercise

    @exercise("00.1", title="fizzbuzz", points=1, hint="Test 15 before 3 and 5.")
    def _fizzbuzz(fizzbuzz):
        return [case(fizzbuzz, n, expected=_reference(n)) for n in range(1, 13)]

The decorated function receives the LEARNER's object and returns the list of
cases to run against it. Expected values come from literals or from the
reference course_lib, never from the learner's object.

On success ``check`` prints exactly one fixed line, ``✓ 00.1 fizzbuzz: 12/12 cases``.
On failure it raises :class:`CheckFailure` with the case, what was expected,
what came back and the hint; in Jupyter only that message is shown. If the
learner's object still raises ``NotImplementedError`` it raises
:class:`NotAttempted`, which the grader reports as NOT ATTEMPTED.
"""
from __future__ import annotations

import contextlib
import io
import math
import reprlib
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from .paths import chapter_dirs, find_chapters_dir, load_chapter_module

__all__ = [
    "check", "exercise", "case", "Case", "Exercise", "CheckFailure", "NotAttempted",
    "get_exercise", "registry", "run_check", "chapter_checks", "strict_equal",
]


class CheckFailure(AssertionError):
    """A check found a case where the learner's answer is wrong."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing the traceback.
        return self.message.splitlines()


class NotAttempted(CheckFailure):
    """The learner's object still raises NotImplementedError (the stub)."""


@dataclass
class Case:
    """One call to check: `label` reads like the call (``fizzbuzz(15)``)."""

    label: str
    run: Callable[[], Any]
    expected: Any = None
    compare: Callable[[Any, Any], bool] | None = None
    #: the exception type the call must raise (then `expected` is unused)
    raises: type[BaseException] | None = None


def case(fn: Callable, *args: Any, expected: Any = None, name: str | None = None,
         compare: Callable[[Any, Any], bool] | None = None,
         raises: type[BaseException] | None = None, **kwargs: Any) -> Case:
    """A case calling ``fn(*args, **kwargs)``, labelled ``name(args)``.

    `name` defaults to the exercise's function name as the learner wrote it.
    Arguments are deep-copied for each call so a learner's function that
    mutates its input cannot change the next case or the label.
    """
    import copy

    label_name = name or getattr(fn, "__name__", "f")
    parts = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    label = f"{label_name}({', '.join(parts)})"
    return Case(label, lambda: fn(*copy.deepcopy(args), **copy.deepcopy(kwargs)), expected, compare, raises)


@dataclass
class Exercise:
    id: str
    title: str
    points: int
    hint: str
    cases: Callable[[Any], list[Case]] = field(repr=False)


_REGISTRY: dict[str, Exercise] = {}


def exercise(id: str, *, title: str, points: int, hint: str):
    """Register the decorated case builder as the check of exercise `id`."""

    def register(fn: Callable[[Any], list[Case]]) -> Callable[[Any], list[Case]]:
        if id in _REGISTRY:
            raise ValueError(f"exercise {id} is registered twice")
        _REGISTRY[id] = Exercise(id, title, points, hint, fn)
        return fn

    return register


def chapter_checks(chapter: str, chapters: Path | None = None) -> ModuleType | None:
    """The checks module of `chapter` (``"03"``): ``chapters/03_*/checks.py``, loaded once.

    None if the chapter has no checks. `chapters` defaults to the course's ``chapters/``.
    """
    before = set(_REGISTRY)
    try:
        return load_chapter_module(chapter, "checks", chapters)
    except BaseException:
        for key in set(_REGISTRY) - before:  # a module that failed half-way registers nothing
            del _REGISTRY[key]
        raise


def get_exercise(exercise_id: str) -> Exercise:
    """The registered exercise `exercise_id` (``"03.2"``); loads its chapter."""
    if exercise_id not in _REGISTRY:
        chapter_checks(str(exercise_id).split(".")[0])
    try:
        return _REGISTRY[exercise_id]
    except KeyError:
        raise KeyError(f"no exercise {exercise_id!r}: is the id in the check cell right?") from None


def registry(chapter: str | None = None) -> dict[str, Exercise]:
    """Registered exercises (of one chapter, or of every chapter)."""
    if chapter is not None:
        chapter_checks(chapter)
        return {k: v for k, v in sorted(_REGISTRY.items()) if k.startswith(chapter + ".")}
    for number in chapter_dirs(find_chapters_dir()):
        chapter_checks(number)
    return dict(sorted(_REGISTRY.items()))


# ---------------------------------------------------------------- comparing


def strict_equal(got: Any, expected: Any) -> bool:
    """Equal values of the same types, recursively (``True`` is not ``1``,
    a tuple is not a list); floats compare with a small tolerance."""
    if type(got) is not type(expected):
        if not (isinstance(expected, float) and type(got) is int):
            return False
    if isinstance(expected, float):
        return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, (list, tuple)):
        return len(got) == len(expected) and all(strict_equal(g, e) for g, e in zip(got, expected))
    if isinstance(expected, dict):
        return got.keys() == expected.keys() and all(strict_equal(got[k], expected[k]) for k in expected)
    return got == expected


_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = 12
_repr.maxlevel = 4


def _short(value: Any) -> str:
    return _repr.repr(value)


def _describe(value: Any) -> str:
    text = _short(value)
    if isinstance(value, (list, tuple, dict, set)) or value is None or isinstance(value, (int, float, str, bool)):
        return text
    return f"{text} ({type(value).__name__})"


def _as_array(value: Any):
    """A numpy array for tensors and arrays (None for anything else); no import of numpy unless needed."""
    if type(value).__module__.startswith("numpy") and hasattr(value, "shape"):
        return value
    if hasattr(value, "_shape") and hasattr(value, "numpy"):  # a course_lib (or torch) tensor
        try:
            return value.detach().numpy()
        except Exception:
            return None
    return None


def _first_difference(got: Any, expected: Any, path: str = "") -> str | None:
    """Where `got` first differs from `expected`: "at [1][0]: expected 3, got 4", or None if unknown.

    Long values are shown cut short in a failure message; this names the element that differs, so the
    difference is never hidden in the part that was cut.
    """
    if isinstance(expected, str) and isinstance(got, str):
        if got == expected:
            return None
        i = next((k for k, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
        if i == len(got) or i == len(expected):
            return f"lengths differ: expected {len(expected)} characters, got {len(got)}"
        return f"at character {i}: expected {expected[i:i + 20]!r}, got {got[i:i + 20]!r}"
    e_arr, g_arr = _as_array(expected), _as_array(got)
    if e_arr is not None and g_arr is not None:
        if tuple(e_arr.shape) != tuple(g_arr.shape):
            return f"{path or 'shape'}: expected shape {tuple(e_arr.shape)}, got {tuple(g_arr.shape)}"
        import numpy as np
        with np.errstate(invalid="ignore"):
            same = np.isclose(g_arr, e_arr, rtol=1e-5, atol=1e-8, equal_nan=True) \
                if e_arr.dtype.kind in "fc" or g_arr.dtype.kind in "fc" else g_arr == e_arr
        bad = np.argwhere(~np.asarray(same))
        if bad.size == 0:
            return None
        idx = tuple(int(k) for k in bad[0])
        return (f"at {path}{list(idx)}: expected {e_arr[idx].item()!r}, got {g_arr[idx].item()!r} "
                f"({len(bad)} of {e_arr.size} elements differ)")
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(got) != len(expected):
            return f"{path or 'length'}: expected {len(expected)} items, got {len(got)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            if not _equalish(g, e):
                inner = _first_difference(g, e, f"{path}[{k}]")
                return inner or f"at {path}[{k}]: expected {_short(e)}, got {_short(g)}"
        return None
    if isinstance(expected, dict) and isinstance(got, dict):
        if got.keys() != expected.keys():
            missing = sorted(map(str, expected.keys() - got.keys()))
            extra = sorted(map(str, got.keys() - expected.keys()))
            return f"{path or 'keys'}: missing keys {missing}, unexpected keys {extra}"
        for k in expected:
            if not _equalish(got[k], expected[k]):
                inner = _first_difference(got[k], expected[k], f"{path}[{k!r}]")
                return inner or f"at {path}[{k!r}]: expected {_short(expected[k])}, got {_short(got[k])}"
    return None


def _equalish(got: Any, expected: Any) -> bool:
    try:
        return bool(strict_equal(got, expected))
    except Exception:
        return False


def _difference_line(got: Any, expected: Any) -> str:
    """The "differs:" line of a failure, when a value was shown cut short (else both are shown whole)."""
    try:
        if _short(got) == repr(got) and _short(expected) == repr(expected):
            return ""
        diff = _first_difference(got, expected)
    except Exception:
        diff = None
    return f"  differs:  {diff}\n" if diff else ""


_MAX_ERROR_TEXT = 300


def _error_text(exc: BaseException) -> str:
    """``str(exc)``, cut to a few lines: a learner's exception may carry megabytes of text."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ of the learner's
        return f"<{type(exc).__name__} whose message cannot be shown>"
    if len(text) > _MAX_ERROR_TEXT:
        text = f"{text[:_MAX_ERROR_TEXT]}... ({len(text):,} characters in all)"
    return text


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return f" (in {f.name}, line {f.lineno})"


# ---------------------------------------------------------------- running


def run_check(exercise_id: str, obj: Any) -> str:
    """Run every case; return the success line or raise CheckFailure/NotAttempted."""
    ex = get_exercise(exercise_id)
    head = f"{ex.id} {ex.title}"
    hint = f"  hint:     {ex.hint}"
    try:
        # Learner code's prints would change the checked output: swallow them.
        with contextlib.redirect_stdout(io.StringIO()):
            cases = list(ex.cases(obj))
    except NotImplementedError:
        raise NotAttempted(_not_attempted(head)) from None
    except Exception as e:
        raise CheckFailure(
            f"✗ {head}: could not use your object {_describe(obj)}: "
            f"{type(e).__name__}: {_error_text(e)}{_where(e)}\n{hint}"
        ) from None
    n = len(cases)
    for i, c in enumerate(cases, 1):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                got = c.run()
        except NotImplementedError:
            raise NotAttempted(_not_attempted(head)) from None
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:
            if c.raises is not None and isinstance(e, c.raises):
                continue
            expected = f"raises {c.raises.__name__}" if c.raises else _describe(c.expected)
            raise CheckFailure(
                f"✗ {head}: case {i}/{n} failed\n"
                f"  input:    {c.label}\n"
                f"  expected: {expected}\n"
                f"  got:      raised {type(e).__name__}: {_error_text(e)}{_where(e)}\n{hint}"
            ) from None
        if c.raises is not None:
            raise CheckFailure(
                f"✗ {head}: case {i}/{n} failed\n"
                f"  input:    {c.label}\n"
                f"  expected: raises {c.raises.__name__}\n"
                f"  got:      {_describe(got)} (no exception)\n{hint}"
            )
        try:
            ok = (c.compare or strict_equal)(got, c.expected)
        except Exception:
            ok = False
        if not ok:
            raise CheckFailure(
                f"✗ {head}: case {i}/{n} failed\n"
                f"  input:    {c.label}\n"
                f"  expected: {_describe(c.expected)}\n"
                f"  got:      {_describe(got)}\n"
                f"{_difference_line(got, c.expected)}{hint}"
            )
    return f"✓ {head}: {n}/{n} cases"


def _not_attempted(head: str) -> str:
    return (f"… {head}: not attempted yet (your code still raises NotImplementedError).\n"
            "  Replace `raise NotImplementedError()` with your code, run that cell, then this one.")


def check(exercise_id: str, obj: Any) -> None:
    """Check the learner's `obj` against exercise `exercise_id`.

    Prints one fixed line on success; raises CheckFailure (or NotAttempted).
    """
    line = run_check(exercise_id, obj)
    sys.stdout.write(line + "\n")  # one write: one stream message
    sys.stdout.flush()
