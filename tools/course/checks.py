"""The check runtime: ``check("00.1", fizzbuzz)``.

Each chapter registers its exercises in ``chapters/NN_name/checks.py``, loaded the
first time one of its exercises is checked::

    from course.checks import call, exercise

    @exercise("00.1", title="fizzbuzz", points=1, hint="Test 15 before 3 and 5.")
    def _fizzbuzz(rng):
        ns = [1, 3, 5, 15] + [int(n) for n in rng.integers(1, 10_000, size=4)]
        return [call(n, expected=_REFERENCE[n % 15] or str(n)) for n in ns]

A check has three parts, so that grading can keep two of them out of the learner's process:

- **inputs** (the function decorated by :func:`exercise`, given a ``numpy.random.Generator``):
  the list of :class:`Trial` s, each with the arguments to send and what the judge expects.
  When grading, the generator is seeded with a secret drawn for that grading, so results
  cannot be written into a notebook in advance;
- **probe** (runs in the learner's kernel): calls the learner's object on a trial's arguments
  and returns plain data (:mod:`course._wire` carries it): by default ``obj(*args)``; a
  module-level function of the checks given as ``probe(fn, ...)`` for anything else (a class,
  several steps, observations such as call counts);
- **judge** (in the grader; in self-study, here): compares what came back with the expected
  value and turns it into the fixed success line or a :class:`CheckFailure`.

In self-study ``check`` runs all three here and prints the line (``✓ 00.1 fizzbuzz: 8/8
cases``) or raises :class:`CheckFailure` with the case, what was expected, what came back and
the hint; in Jupyter only that message is shown. If the learner's object still raises
``NotImplementedError`` it raises :class:`NotAttempted` (the grader's NOT ATTEMPTED). When
grading, the check cell calls :func:`_probe_cell` instead, which prints what the probes saw in
one framed line within the check's time budget; the grader decodes it (:mod:`course._wire`, never
pickle) and judges.

An exercise may name functions the learner's code must not call (``forbid=``): the probe
watches calls made from outside course_lib while the learner's code runs and reports them, and
what the watch could not follow (its profile function switched off, a thread it cannot watch, a
process); see :class:`_ForbiddenCalls`.
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

from . import _wire
from ._wire import Opaque, Raised
from .paths import chapter_dirs, find_chapters_dir, load_chapter_module

__all__ = [
    "check", "exercise", "call", "probe", "Trial", "Exercise", "CheckFailure", "NotAttempted", "CheckTimeout",
    "ProbeError", "get_exercise", "registry", "run_check", "chapter_checks", "strict_equal", "judge",
    "trials_payload", "run_probes", "load_checks_source", "SELF_STUDY_SEED",
]

#: the seed of a check's random inputs in self-study (grading draws a secret one)
SELF_STUDY_SEED = 20260


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


class CheckTimeout(CheckFailure):
    """When graded, a case was still running when the check's time budget ran out."""


class ProbeError(ValueError):
    """What came back from a probe is missing or not well formed (never a pass)."""


# ---------------------------------------------------------------- trials (inputs + what the judge expects)


@dataclass
class Trial:
    """One case: the arguments sent to the kernel, how the probe uses them, and what the judge expects.

    `label` reads like the call (``fizzbuzz(15)``); when empty, it is made from the exercise's
    title and the arguments. `probe` is None (call the learner's object with the arguments) or a
    module-level function ``probe(obj, *args, **kwargs)`` of the chapter's checks (or of this
    module) that runs in the kernel and returns plain data. `raises` is the exception type the
    call must raise (then `expected` is unused) and `match` its exact message, if given.
    `compare(got, expected)` returns True, False, or a text saying what is wrong.
    """

    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    expected: Any = None
    compare: Callable[[Any, Any], bool | str] | None = None
    raises: type[BaseException] | None = None
    match: str | None = None
    probe: Callable[..., Any] | None = None


def call(*args: Any, expected: Any = None, name: str | None = None, label: str = "",
         compare: Callable[[Any, Any], bool | str] | None = None, raises: type[BaseException] | None = None,
         match: str | None = None, **kwargs: Any) -> Trial:
    """A trial calling the learner's object: ``obj(*args, **kwargs)``, labelled ``name(args)``.

    `name` defaults to the exercise's title. The arguments are sent to the kernel, so each call
    gets fresh copies: a learner's function that mutates its input cannot change the next case.
    """
    if name is not None and not label:
        label = _call_label(name, args, kwargs)
    return Trial(label, tuple(args), dict(kwargs), expected, compare, raises, match, None)


def probe(fn: Callable[..., Any], *args: Any, expected: Any = None, label: str = "",
          compare: Callable[[Any, Any], bool | str] | None = None, raises: type[BaseException] | None = None,
          match: str | None = None, **kwargs: Any) -> Trial:
    """A trial whose probe is `fn`: ``fn(obj, *args, **kwargs)`` runs in the kernel and returns plain data.

    `fn` must be a module-level function of the chapter's checks (the kernel finds it by name).
    """
    qualname = getattr(fn, "__qualname__", "")
    if not callable(fn) or "<" in qualname or not qualname:
        raise ValueError(f"probe {fn!r}: a probe must be a module-level function (the kernel finds it by name)")
    return Trial(label, tuple(args), dict(kwargs), expected, compare, raises, match, fn)


def _call_label(name: str, args: tuple, kwargs: dict) -> str:
    parts = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


@dataclass
class Exercise:
    id: str
    title: str
    points: int
    hint: str
    #: ``inputs(rng) -> list[Trial]``
    cases: Callable[[Any], list] = field(repr=False)
    #: functions the learner's code must not call: shown name -> function
    forbid: dict[str, Any] = field(default_factory=dict, repr=False)
    #: seconds all the probes of one grading may take (the rest are stopped and fail)
    time_budget: float = 20.0

    def trials(self, seed: int) -> list[Trial]:
        """The trials drawn with `seed`, each labelled."""
        import numpy as np

        trials = list(self.cases(np.random.default_rng(seed)))
        for t in trials:
            if not isinstance(t, Trial):
                raise TypeError(f"exercise {self.id}: its inputs must be Trials (call(...), probe(...)), "
                                f"not {type(t).__name__}")
            if not t.label:
                t.label = _call_label(self.title, t.args, t.kwargs)
        return trials


_REGISTRY: dict[str, Exercise] = {}
_TARGET: list[dict[str, Exercise]] = []  # while load_checks_source runs: where @exercise registers


def exercise(id: str, *, title: str, points: int, hint: str, forbid: dict[str, Any] | list | None = None,
             time_budget: float = 20.0):
    """Register the decorated function as the check of exercise `id`.

    The function takes ``rng`` (a ``numpy.random.Generator``) and returns the exercise's
    :class:`Trial` s. `forbid` names functions the learner's code must not call
    (``{"cl.result_type": cl.result_type}``; a list uses each function's qualified name).
    `time_budget`: seconds all the probes may take when graded (keep it well under the cell timeout).
    """
    import inspect

    if isinstance(forbid, (list, tuple)):
        forbid = {f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', repr(f))}": f for f in forbid}

    def register(fn: Callable[[Any], list]) -> Callable[[Any], list]:
        target = _TARGET[-1] if _TARGET else _REGISTRY
        if id in target:
            raise ValueError(f"exercise {id} is registered twice")
        if list(inspect.signature(fn).parameters)[:1] != ["rng"]:
            raise TypeError(f"exercise {id}: its inputs function must take `rng` (a numpy Generator) and return "
                            "Trials; see docs/AUTHORING.md, Writing a check")
        target[id] = Exercise(id, title, points, hint, fn, forbid=dict(forbid or {}), time_budget=time_budget)
        return fn

    return register


def load_checks_source(chapter: str, source: bytes | str, filename: str) -> dict[str, Exercise]:
    """The exercises a chapter's checks.py registers, run from `source` into a module of its own.

    The grader loads the checks it judges with this, from the copy it read before any learner code
    ran; the module is not put in ``sys.modules`` (the kernel's copy is the one probes run from).
    """
    module = ModuleType(f"course_chapter{chapter}_checks")
    module.__file__ = filename
    found: dict[str, Exercise] = {}
    code = compile(source, filename, "exec")
    name = module.__name__
    saved = sys.modules.get(name)
    sys.modules[name] = module  # for dataclasses and the like, while it runs
    _TARGET.append(found)
    try:
        exec(code, module.__dict__)  # noqa: S102 - the course's own checks, read before grading
    finally:
        _TARGET.pop()
        if saved is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved
    return found


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
    """`value` shown on one line, cut short (a 2-D array's repr spans lines: they are joined)."""
    import re

    if isinstance(value, Opaque):
        return re.sub(r"\n\s*", " ", f"{value.text} ({value.type_name})")
    text = re.sub(r"\n\s*", " ", _short(value))
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
        where = f"{path}: " if path else ""
        if i == len(got) or i == len(expected):
            return f"{where}lengths differ: expected {len(expected)} characters, got {len(got)}"
        return f"{where}at character {i}: expected {expected[i:i + 20]!r}, got {got[i:i + 20]!r}"
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


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return f" (in {f.name}, line {f.lineno})"


# ---------------------------------------------------------------- the probe (runs in the kernel)

#: what frames the probe's results on the kernel's stdout: ``@@course-probe:<base64>:@@``
FRAME_OPEN, FRAME_CLOSE = "@@course-probe:", ":@@"
_WIRE_VERSION = 1


def _probe_ref(fn: Callable | None) -> str | None:
    if fn is None:
        return None
    return f"{fn.__module__}:{fn.__qualname__}"


def trials_payload(ex: Exercise, trials: list[Trial], budget: float | None = None) -> str:
    """What a grading check cell sends the kernel: each trial's probe (by name) and arguments, and the
    seconds the probes may take (default: the exercise's ``time_budget``)."""
    import json

    return json.dumps({"v": _WIRE_VERSION, "exercise": ex.id, "budget": ex.time_budget if budget is None else budget,
                       "trials": [[_probe_ref(t.probe), _wire.encode(t.args), _wire.encode(t.kwargs)]
                                  for t in trials]}, separators=(",", ":"))


def _find_probe(ref: str | None, ex: Exercise) -> Callable:
    if ref is None:
        return _call_obj
    module_name, _, qualname = ref.partition(":")
    module = sys.modules.get(module_name)
    if module_name not in (__name__, ex.cases.__module__) or module is None:
        raise ProbeError(f"probe {ref!r} is not one of the checks'")
    target: Any = module
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _call_obj(obj: Any, *args: Any, **kwargs: Any) -> Any:
    return obj(*args, **kwargs)


def _trusted_prefixes(ex: Exercise) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Where code whose calls to a forbidden function do not count lives: (folders, files), real paths.

    course_lib itself, this package, and the exercise's checks module.
    """
    import os

    dirs = [os.path.realpath(os.path.dirname(os.path.abspath(__file__))) + os.sep]
    cl = sys.modules.get("course_lib")
    if cl is not None and getattr(cl, "__file__", None):
        dirs.append(os.path.realpath(os.path.dirname(os.path.abspath(cl.__file__))) + os.sep)
    module = sys.modules.get(ex.cases.__module__)
    files = (os.path.realpath(os.path.abspath(module.__file__)),) \
        if module is not None and getattr(module, "__file__", None) else ()
    return tuple(dirs), files


# Which file a running frame's code really comes from. A code object only names its file (co_filename),
# which any code can claim (compile(src, "<course_lib>/x.py", "exec")); a frame counts as running a
# module's code only if its code object equals one compiled from that file's text (same bytecode,
# constants, names and line numbers) and it runs in the namespace of the module loaded from that file.
_REALPATHS: dict[str, str] = {}
_FILE_CODES: dict[str, frozenset] = {}
_CODE_FILES: dict[int, tuple[Any, str | None]] = {}  # id(code) -> (code, kept alive; its verified file)


def _realpath(filename: str) -> str:
    import os

    path = _REALPATHS.get(filename)
    if path is None:
        path = _REALPATHS[filename] = os.path.realpath(filename)
    return path


def _file_codes(path: str) -> frozenset:
    """The code objects compiled from the Python file at `path` (the module's and all nested ones)."""
    codes = _FILE_CODES.get(path)
    if codes is None:
        import types

        found: set = set()
        try:
            with open(path, "rb") as f:
                todo = [compile(f.read(), path, "exec", dont_inherit=True)]
        except (OSError, SyntaxError, ValueError):
            todo = []
        while todo:
            code = todo.pop()
            found.add(code)
            todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        codes = _FILE_CODES[path] = frozenset(found)
    return codes


def _code_file(code: Any, roots: tuple[str, ...]) -> str | None:
    """The real path of the file `code` was compiled from, if that file is under one of `roots` (real
    paths, folders ending in a separator) and `code` is that file's own code; else None (cached)."""
    entry = _CODE_FILES.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1]
    path = _realpath(code.co_filename)
    if not path.endswith(".py") or not path.startswith(roots):
        return None
    verified = path if code in _file_codes(path) else None
    _CODE_FILES[id(code)] = (code, verified)
    return verified


def _frame_file(frame: Any, roots: tuple[str, ...]) -> str | None:
    """The real path of the module file (under `roots`) whose own code `frame` runs, in the namespace of
    the module loaded from it; else None."""
    path = _code_file(frame.f_code, roots)
    if path is None:
        return None
    g = frame.f_globals
    module = sys.modules.get(g.get("__name__"))
    if module is None or getattr(module, "__dict__", None) is not g:
        return None
    file = getattr(module, "__file__", None)
    return path if isinstance(file, str) and _realpath(file) == path else None


_STDLIB: list[str] = []


def _stdlib_dir() -> str:
    """The real path of the standard library's folder, ending in a separator."""
    if not _STDLIB:
        import os
        import sysconfig

        _STDLIB.append(os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep)
    return _STDLIB[0]


#: Why a case fails when the watch could not see all the learner's code run (a result's "unwatched").
UNWATCHED = {
    "profile": "the check watches for forbidden calls with sys.setprofile; your code switched it off",
    "thread": "the check watches for forbidden calls in the threads it can follow; your code started a thread "
              "it cannot (with _thread, or with threading's profile hook changed): do the work in the calling "
              "thread",
    "thread running": "your code left a thread running when it returned, which the check cannot watch for "
                      "forbidden calls: join the threads it starts, or do the work in the calling thread",
    "process": "the check cannot follow forbidden calls into another process; your code started one (os.fork, "
               "subprocess, multiprocessing): do the work in this process",
}

#: what starts a process (os's names; subprocess and multiprocessing's spawn use _posixsubprocess.fork_exec)
_PROCESS_STARTERS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve", "spawnv",
                     "spawnve")
#: the watch active in this process (threads it started report to it)
_ACTIVE: "_ForbiddenCalls | None" = None


def _thread_profile(frame, event, arg):
    """The profile function of threads started while a watch is active (threading.setprofile); it removes
    itself once no watch is."""
    watch = _ACTIVE
    if watch is None:
        sys.setprofile(None)
    else:
        watch._profile(frame, event, arg)


class CFunction:
    """A forbidden C function named by its module and name, for a library the checks must not import
    (``CFunction("torch._C", "_select_conv_backend")``): matched by name when the learner's code calls it."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name


class _ForbiddenCalls:
    """While active, records which of `forbid` is called from outside the trusted code (sys.setprofile).

    Python functions are matched by their code objects (so any alias, import or bound method of
    them is caught), C functions by identity. A call counts unless its caller is trusted: a frame
    running code really compiled from a file under `trusted` (folders, files), in the namespace of the
    module loaded from it (see :func:`_frame_file`). The watch also notes in `unwatched` (keys of
    :data:`UNWATCHED`) what it could not follow: a call to ``sys.setprofile`` from outside the trusted
    code, or its profile function (or threading's profile hook) not in place at the end; a thread started
    with ``_thread`` or while threading's profile hook was not the watch's; a thread the learner's code
    started still running at the end; a new process. Threads started with ``threading`` while it is
    active are watched too. What a watched thread calls through C (``map(sys.setprofile, [None])``) is
    not seen: only its effect at the end is.
    """

    def __init__(self, forbid: dict[str, Any], trusted: tuple[tuple[str, ...], tuple[str, ...]]):
        import _thread
        import os

        try:
            from _posixsubprocess import fork_exec
        except ImportError:  # pragma: no cover - not POSIX
            fork_exec = None
        self.codes: dict[Any, str] = {}
        self.c_calls: dict[int, Any] = {}  # id of a C function -> a forbidden name, or a method to run
        self.c_named: dict[tuple[str, str], str] = {}   # (module, name) of a C function -> a forbidden name
        for name, fn in forbid.items():
            if isinstance(fn, CFunction):
                self.c_named[(fn.module, fn.name)] = name
                continue
            fn = getattr(fn, "__func__", fn)
            seen = 0
            while fn is not None and seen < 8:
                code = getattr(fn, "__code__", None)
                if code is not None:
                    self.codes[code] = name
                else:
                    self.c_calls[id(fn)] = name
                fn, seen = getattr(fn, "__wrapped__", None), seen + 1
        self._on = bool(self.codes or self.c_calls or self.c_named)
        if self._on:
            self.c_calls.update({id(_thread.start_new_thread): self._thread_started,
                                 id(_thread.start_new): self._thread_started})
            self.c_calls[id(sys.setprofile)] = self._setprofile_called
            starters = [getattr(os, name) for name in _PROCESS_STARTERS if hasattr(os, name)]
            self.c_calls.update({id(fn): self._process_started for fn in starters + [fork_exec] if fn is not None})
        self.forbid = forbid  # keeps the builtins alive, so their ids stay theirs
        self.trusted_dirs, self.trusted_files = trusted
        self._stdlib = _stdlib_dir()
        self._roots = self.trusted_dirs + self.trusted_files + (self._stdlib,)
        self._keep = (fork_exec, _thread.start_new_thread, _thread.start_new, os)  # their ids stay theirs
        self.seen: list[str] = []
        self.unwatched: list[str] = []
        self._threads: list[tuple[Any, bool]] = []  # (thread, started by trusted code) started while active

    def _trusted(self, frame) -> bool:
        path = _frame_file(frame, self._roots)
        return path is not None and (path.startswith(self.trusted_dirs) or path in self.trusted_files)

    def _outside(self, frame) -> bool:
        return frame is None or not self._trusted(frame)

    def _started_by_trusted(self, frame) -> bool:
        """Whether the first frame from `frame` up that is not the standard library's is trusted code."""
        stdlib = self._stdlib
        while frame is not None:
            path = _frame_file(frame, self._roots)
            if path is None or not path.startswith(stdlib) or "-packages" in path:
                return path is not None and (path.startswith(self.trusted_dirs) or path in self.trusted_files)
            frame = frame.f_back
        return False

    def _note(self, why: str) -> None:
        if why not in self.unwatched:
            self.unwatched.append(why)

    def _profile(self, frame, event, arg):
        if event == "call":
            name = self.codes.get(frame.f_code)
            if name is not None and name not in self.seen and self._outside(frame.f_back):
                self.seen.append(name)
        elif event == "c_call":
            name = self.c_calls.get(id(arg))
            if name is None:
                if not self.c_named:
                    return
                name = self.c_named.get((getattr(arg, "__module__", None), getattr(arg, "__name__", None)))
                if name is None:
                    return
            if type(name) is str:
                if name not in self.seen and self._outside(frame):
                    self.seen.append(name)
            else:
                name(frame)

    def _thread_started(self, frame) -> None:
        """A C call to _thread.start_new_thread from `frame`: watched if threading.Thread.start starts it
        with the watch's hook in place."""
        import threading

        thread = frame.f_locals.get("self") if frame.f_code is threading.Thread.start.__code__ else None
        real = isinstance(thread, threading.Thread) and "_bootstrap" not in vars(thread) \
            and type(thread)._bootstrap is threading.Thread._bootstrap \
            and type(thread)._bootstrap_inner is threading.Thread._bootstrap_inner
        if not real or threading._profile_hook is not _thread_profile:
            self._note("thread")
        else:
            self._threads.append((thread, self._started_by_trusted(frame.f_back)))

    def _process_started(self, frame) -> None:
        if not self._started_by_trusted(frame):
            self._note("process")

    def _setprofile_called(self, frame) -> None:
        if frame.f_code not in _OWN_SETPROFILE and not self._trusted(frame):
            self._note("profile")

    def __enter__(self) -> "_ForbiddenCalls":
        import _thread
        import threading

        global _ACTIVE
        self._old = sys.getprofile()
        if self._on:
            self._old_hook, self._outer = threading._profile_hook, _ACTIVE
            self._count = _thread._count()
            _ACTIVE = self
            threading.setprofile(_thread_profile)
            sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        import _thread
        import threading

        global _ACTIVE
        if not self._on:
            return
        if sys.getprofile() != self._profile or threading._profile_hook is not _thread_profile:
            self._note("profile")
        alive = [trusted for t, trusted in self._threads if t.is_alive()]
        if not all(alive) or _thread._count() - self._count > len(alive):
            self._note("thread running")
        _ACTIVE = self._outer
        threading.setprofile(self._old_hook)
        sys.setprofile(self._old)


#: the watch's own calls to sys.setprofile (allowed whatever the trusted files are)
_OWN_SETPROFILE = frozenset({_ForbiddenCalls.__exit__.__code__, _thread_profile.__code__})


def _where_text(exc: BaseException) -> str:
    try:
        return _where(exc)
    except Exception:  # noqa: BLE001
        return ""


class ProbeTimeout(BaseException):
    """A probe ran past the check's time budget (a BaseException: ``except Exception`` does not catch it)."""


@contextlib.contextmanager
def _alarm(seconds: float):
    """Raise ProbeTimeout in this (main) thread after `seconds`; nothing off the main thread."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum, frame):
        raise ProbeTimeout()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _request(exercise_id: str, payload: str) -> tuple[list, float | None]:
    """The trials' specs and the time budget a check cell's payload carries."""
    import json

    request = json.loads(payload)
    if not isinstance(request, dict) or request.get("exercise") != exercise_id \
            or not isinstance(request.get("trials"), list):
        raise ProbeError("the check cell's inputs are not for this exercise")
    budget = request.get("budget")
    return request["trials"], float(budget) if isinstance(budget, (int, float)) and budget > 0 else None


def _forbidden_object(obj: Any, codes: dict) -> list[str]:
    """The forbidden functions `obj` is: the function itself, or a method of the class itself or of a base
    defined in a chapter's checks (a base from course_lib, such as ``nn.Module``, is the learner's to use)."""
    candidates = [obj]
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if klass is obj or str(getattr(klass, "__module__", "")).startswith("course_chapter"):
                candidates += list(vars(klass).values())
    found: list[str] = []
    for c in candidates:
        f = getattr(c, "__func__", c)
        name = codes.get(getattr(f, "__code__", None))
        if name is not None and name not in found:
            found.append(name)
    return found


def _probe_results(ex: Exercise, obj: Any, specs: list, budget: float | None):
    """Run each trial's probe on the learner's `obj`, yielding what each saw (wire data), in order.

    Each result is ``{"status": "ok"|"raised"|"not_attempted"|"timeout"|"skipped", "value": <wire>,
    "forbidden": [...], "unwatched": [...]}`` (the forbidden functions called, and keys of
    :data:`UNWATCHED`: what the forbidden-call watch could not follow).
    Every trial decodes its own fresh arguments; output the learner's code prints is swallowed. The first
    NotImplementedError ends the run. With a `budget` (seconds for all the trials), a trial still running
    when it is spent is stopped and reported as "timeout" (the value is the budget), the trials after it
    as skipped.
    """
    import time

    trusted = _trusted_prefixes(ex)
    deadline = None if budget is None else time.monotonic() + budget
    # the learner's object may be a forbidden function itself (or a class holding one): the check, not the
    # learner's code, then makes the calls, which the watch does not count
    given = _forbidden_object(obj, _ForbiddenCalls(ex.forbid, trusted).codes) if ex.forbid else []
    for k, (ref, args_wire, kwargs_wire) in enumerate(specs):
        fn = _find_probe(ref, ex)
        args, kwargs = _wire.decode(args_wire), _wire.decode(kwargs_wire)
        watch = _ForbiddenCalls(ex.forbid, trusted)
        watch.seen.extend(given)
        timer = _alarm(deadline - time.monotonic()) if deadline is not None else contextlib.nullcontext()
        try:
            with timer, contextlib.redirect_stdout(io.StringIO()), watch:
                value = fn(obj, *args, **kwargs)
            result = {"status": "ok", "value": _wire.encode(value)}
        except NotImplementedError:
            yield {"status": "not_attempted", "value": None, "forbidden": []}
            return
        except ProbeTimeout:
            yield {"status": "timeout", "value": float(budget), "forbidden": list(watch.seen),
                   "unwatched": list(watch.unwatched)}
            for _ in specs[k + 1:]:
                yield {"status": "skipped", "value": None, "forbidden": []}
            return
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # noqa: BLE001 - the learner's error is what is observed
            result = {"status": "raised", "value": _wire.exception_wire(e, _where_text(e))}
        result["forbidden"], result["unwatched"] = list(watch.seen), list(watch.unwatched)
        yield result


def run_probes(exercise_id: str, obj: Any, payload: str, budget: float | None = None) -> str:
    """All the trials' probes on the learner's `obj` (see :func:`_probe_results`); their results as JSON text.

    `budget` defaults to the payload's, else the exercise's ``time_budget``.
    """
    import json

    ex = get_exercise(exercise_id)
    specs, sent = _request(exercise_id, payload)
    budget = budget if budget is not None else sent if sent is not None else ex.time_budget
    results = list(_probe_results(ex, obj, specs, budget))
    return json.dumps({"v": _WIRE_VERSION, "exercise": exercise_id, "results": results}, separators=(",", ":"))


def _probe_cell(exercise_id: str, obj: Any, payload: str) -> None:
    """What a check cell runs when graded: the probes, their results printed in one framed line."""
    import base64

    text = run_probes(exercise_id, obj, payload)
    frame = base64.b64encode(text.encode("utf-8")).decode("ascii")
    sys.stdout.write(f"{FRAME_OPEN}{frame}{FRAME_CLOSE}\n")
    sys.stdout.flush()


def read_frames(stdout: str) -> list[str]:
    """The framed results in a check cell's stdout (the grader wants exactly one)."""
    import base64
    import re

    out = []
    for m in re.finditer(re.escape(FRAME_OPEN) + r"([A-Za-z0-9+/=]*)" + re.escape(FRAME_CLOSE), stdout):
        try:
            out.append(base64.b64decode(m.group(1), validate=True).decode("utf-8"))
        except ValueError:
            out.append("")
    return out


# ---------------------------------------------------------------- the judge (in the grader)


_STATUSES = ("ok", "raised", "not_attempted", "timeout", "skipped")


def _decode_result(r: Any) -> dict:
    """One probe result with its value decoded; ProbeError if it is malformed."""
    if not isinstance(r, dict) or r.get("status") not in _STATUSES:
        raise ProbeError("the check's results are malformed")
    forbidden, unwatched = r.get("forbidden", []), r.get("unwatched", [])
    if not isinstance(forbidden, list) or not all(isinstance(f, str) for f in forbidden) \
            or not isinstance(unwatched, list) or not all(isinstance(u, str) and u in UNWATCHED for u in unwatched):
        raise ProbeError("the check's results are malformed")
    try:
        value = _wire.decode(r.get("value"))
    except (_wire.WireError, RecursionError) as e:
        raise ProbeError(f"the check's results cannot be read ({e})") from None
    if r["status"] == "raised" and not isinstance(value, Raised) \
            or r["status"] == "timeout" and type(value) is not float:
        raise ProbeError("the check's results are malformed")
    return {"status": r["status"], "value": value, "forbidden": forbidden, "unwatched": unwatched}


def _results(text: str, exercise_id: str, n: int) -> list[dict]:
    """The probes' results, decoded (values as Python objects); ProbeError if malformed."""
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError, TypeError):
        raise ProbeError("the check's results cannot be read (not JSON)") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("exercise") != exercise_id or not isinstance(results, list):
        raise ProbeError("the check's results are not for this exercise")
    out = [_decode_result(r) for r in results]
    stopped = bool(out) and out[-1]["status"] == "not_attempted"
    if len(out) != n and not (stopped and len(out) <= n):
        raise ProbeError(f"the check's results hold {len(out)} cases, not {n}")
    return out


def judge(ex: Exercise, trials: list[Trial], results_text: str) -> str:
    """Decide from what the probes saw: the success line, or CheckFailure / NotAttempted.

    ProbeError if `results_text` is not a well-formed answer to these trials (never a pass).
    """
    results = _results(results_text, ex.id, len(trials))
    for i, (t, r) in enumerate(zip(trials, results), 1):
        _judge_one(ex, t, r, i, len(trials))
    return _success(ex, len(trials))


def _success(ex: Exercise, n: int) -> str:
    return f"✓ {ex.id} {ex.title}: {n}/{n} cases"


def _judge_one(ex: Exercise, t: Trial, r: dict, i: int, n: int) -> None:
    """Raise CheckFailure (or NotAttempted) if result `r` of trial `t` (case i of n) is wrong."""
    head = f"{ex.id} {ex.title}"
    hint = f"  hint:     {ex.hint}"
    if r["status"] == "not_attempted":
        raise NotAttempted(_not_attempted(head))
    top = f"✗ {head}: case {i}/{n} failed\n  input:    {t.label}\n"
    if r["status"] == "timeout":
        raise CheckTimeout(f"{top}  got:      still running when the check's time limit of {r['value']:g} s ran "
                           f"out (an infinite loop, or far too slow?)\n{hint}")
    if r["status"] == "skipped":
        raise CheckFailure(f"{top}  got:      not run: an earlier case used up the check's time\n{hint}")
    forbidden = r.get("forbidden", [])
    if forbidden:
        raise CheckFailure(f"{top}  got:      your code calls {', '.join(forbidden)}, which this exercise asks "
                           f"you not to use: write it yourself\n{hint}")
    unwatched = r.get("unwatched", [])
    if unwatched:
        raise CheckFailure(f"{top}  got:      {'; '.join(UNWATCHED[u] for u in unwatched)}\n{hint}")
    got = r.get("value")
    expected_raise = None
    if t.raises is not None:
        expected_raise = f"raises {t.raises.__name__}" + (f": {t.match}" if t.match is not None else "")
    if r["status"] == "raised":
        if t.raises is not None and got.is_a(t.raises) and (t.match is None or got.message == t.match):
            return
        expected = expected_raise or _describe(t.expected)
        raise CheckFailure(f"{top}  expected: {expected}\n"
                           f"  got:      raised {got.name}: {got.message}{got.where}\n{hint}")
    if expected_raise is not None:
        raise CheckFailure(f"{top}  expected: {expected_raise}\n"
                           f"  got:      {_describe(got)} (no exception)\n{hint}")
    try:
        verdict = (t.compare or strict_equal)(got, t.expected)
    except Exception:  # noqa: BLE001 - a value the comparison cannot handle is not equal
        verdict = False
    if verdict is True or (verdict is not False and not isinstance(verdict, str) and bool(verdict)):
        return
    why = f"  why:      {verdict}\n" if isinstance(verdict, str) and verdict else ""
    raise CheckFailure(f"{top}  expected: {_describe(t.expected)}\n  got:      {_describe(got)}\n"
                       f"{why}{_difference_line(got, t.expected) if not why else ''}{hint}")


# ---------------------------------------------------------------- running




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


def run_check(exercise_id: str, obj: Any, seed: int | None = None) -> str:
    """Inputs, probe and judge, all here; return the success line or raise CheckFailure/NotAttempted.

    `seed` draws the random inputs (default :data:`SELF_STUDY_SEED`). Inputs and results go
    through the wire format both ways, as when grading, so what passes here passes there.
    """
    import json

    ex = get_exercise(exercise_id)
    trials = ex.trials(SELF_STUDY_SEED if seed is None else seed)
    specs, _ = _request(exercise_id, trials_payload(ex, trials))
    # judged as each comes back, so a wrong answer stops at its first failing case
    for i, (t, r) in enumerate(zip(trials, _probe_results(ex, obj, specs, None)), 1):
        _judge_one(ex, t, _decode_result(json.loads(json.dumps(r))), i, len(trials))
    return _success(ex, len(trials))
