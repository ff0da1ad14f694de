"""Pictures and widgets for the chapters (matplotlib + ipywidgets).

Nothing is imported until it is used, so ``import course_lib`` never pays for
matplotlib or ipywidgets. ``course_lib.viz.draw_strides`` imports
``course_lib.viz.strides`` on first access; a name listed in the ``__all__`` of
any module of this package is found the same way.
"""
from __future__ import annotations

import importlib
import pkgutil

#: name -> module of this package that defines it (modules not listed here are searched by __all__)
_LAZY = {
    "draw_strides": "strides",
    "stride_explorer": "strides",
    "make_dot": "graph",
}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    module = _LAZY.get(name)
    if module is not None:
        return getattr(importlib.import_module(f".{module}", __name__), name)
    for info in pkgutil.iter_modules(__path__):
        if info.name == name:
            return importlib.import_module(f".{name}", __name__)
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f".{info.name}", __name__)
        if name in getattr(mod, "__all__", ()):
            return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | {m.name for m in pkgutil.iter_modules(__path__)})
