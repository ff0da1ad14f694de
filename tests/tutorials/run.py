"""Run tutorial-style programs, written against ``import torch``, with real PyTorch or with course_lib.

    python tests/tutorials/run.py torch t01_tensors.py ...
    python tests/tutorials/run.py course_lib t01_tensors.py ...

With ``course_lib``, ``import torch`` (and ``import torch.nn``, ``from torch.utils.data import ...``)
gives course_lib's modules: every ``torch.X`` module name is an alias of ``course_lib.X``, the same
module object.  Each program runs in a namespace of its own; its output follows a ``### name`` line.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import io
import pathlib
import sys
import traceback

HERE = pathlib.Path(__file__).resolve().parent


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``torch.X`` -> the module ``course_lib.X`` (imported once: one class per name)."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("course_lib" + spec.name[len("torch"):])

    def exec_module(self, module):
        pass


def main(lib: str, programs: list[str]) -> None:
    if lib == "course_lib":
        sys.meta_path.insert(0, _Alias())
    import numpy as np
    np.set_printoptions(precision=4)
    for name in programs:
        path = HERE / name
        out = io.StringIO()
        ns = {"__name__": "__main__", "__file__": str(path)}
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(path.read_text(), str(path), "exec"), ns)
            except Exception:  # noqa: BLE001 - the traceback is part of the output to compare
                print("".join(traceback.format_exc().splitlines(True)[-1:]))
        text = out.getvalue()
        if lib == "course_lib":
            text = text.replace("course_lib", "torch")
        sys.stdout.write(f"### {name}\n{text}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
