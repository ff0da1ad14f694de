"""Where the course's folders are: ``solutions/`` and ``chapters/``, and loading a chapter's modules.

Both folders sit at the top of the course's checkout. They are looked for above a given folder
(the notebook being graded), above the current directory, then in the checkout this package
was installed from (``pip install -e tools``). A learner's release (``course release``) has
``key/`` instead of ``solutions/``: the same notebooks with every solution cell stubbed, which
is all the grader needs. Light on purpose: the check runtime imports it in every notebook.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType


class CourseError(Exception):
    """An error with a message meant for the person at the keyboard."""


#: environment variable naming the chapters/ folder; the grader sets it for the kernels it starts
CHAPTERS_ENV = "COURSE_CHAPTERS"
_CHAPTER_DIR = re.compile(r"^(\d\d)_\w+$")
#: folders holding the answer key, in order of preference: the full course's solutions/, a release's key/
KEY_DIRS = ("solutions", "key")


def repo_root() -> Path | None:
    """The checkout (or release) this package was installed from (editable install), if any."""
    root = Path(__file__).resolve().parents[2]
    return root if any((root / name).is_dir() for name in KEY_DIRS) else None


def _candidates(near: Path | None) -> list[Path]:
    """Folders that may be the top of the course: above `near`, above the current directory, the checkout."""
    out: list[Path] = []
    for start in (near, Path.cwd()):
        if start is not None:
            out += [start.resolve(), *start.resolve().parents]
    root = repo_root()
    if root is not None:
        out.append(root)
    return out


def find_solutions_dir(near: Path | None = None, exclude: Path | None = None) -> Path:
    """`solutions/` of the course (or `key/` of a release): looked for above `near`, above the
    current directory, then in the checkout this package was installed from.

    Folders inside `exclude` are never used (``course grade --batch``: never a folder under the
    submissions, where a student could have put one).
    """
    banned = exclude.resolve() if exclude is not None else None
    for d in _candidates(near):
        for name in KEY_DIRS:
            key = d / name
            if banned is not None and (key.resolve() == banned or banned in key.resolve().parents):
                continue
            if key.is_dir() and any(key.glob("*.ipynb")):
                return key
    raise CourseError("cannot find the course's solutions/ folder; pass --solutions DIR")


def find_chapters_dir(near: Path | None = None) -> Path:
    """`chapters/` of the course (``$COURSE_CHAPTERS`` if set, else found like `solutions/`)."""
    if os.environ.get(CHAPTERS_ENV):
        return Path(os.environ[CHAPTERS_ENV])
    for d in _candidates(near):
        if chapter_dirs(d / "chapters"):
            return d / "chapters"
    raise CourseError(f"cannot find the course's chapters/ folder: work inside the course's folder, "
                      f"or set {CHAPTERS_ENV}=/path/to/chapters (the commands also take --chapters DIR)")


def chapter_dirs(chapters: Path) -> dict[str, Path]:
    """``{"03": chapters/03_autograd, ...}``: the folders ``NN_name`` that hold a ``notebook.py``
    (the chapter's source) or a ``checks.py`` (a release's chapters/ has only the checks)."""
    found: dict[str, Path] = {}
    for d in sorted(chapters.iterdir()) if chapters.is_dir() else []:
        m = _CHAPTER_DIR.match(d.name)
        if m and ((d / "notebook.py").is_file() or (d / "checks.py").is_file()):
            if m.group(1) in found:
                raise CourseError(f"{chapters}: two folders for chapter {m.group(1)}: "
                                  f"{found[m.group(1)].name}, {d.name}")
            found[m.group(1)] = d
    return found


def chapter_of_name(name: str) -> str | None:
    """The chapter a file name starts with: ``"03"`` for ``03_autograd.ipynb``."""
    m = re.match(r"^(\d\d)[_\-. ]", name)
    return m.group(1) if m else None


def load_chapter_module(chapter: str, name: str, chapters: Path | None = None) -> ModuleType | None:
    """``chapters/NN_*/<name>.py`` loaded once as module ``course_chapterNN_<name>``; None if there is none.

    Chapter folders start with digits, so their modules are loaded by file path; the module is
    registered in ``sys.modules`` so that what it defines pickles by reference.
    """
    module_name = f"course_chapter{chapter}_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    folder = chapter_dirs(chapters if chapters is not None else find_chapters_dir()).get(chapter)
    path = folder / f"{name}.py" if folder is not None else None
    if path is None or not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
