"""``course execute``: refresh the stored outputs of solutions notebooks.

Runs a notebook top to bottom in the current environment, keeps the outputs
of check cells only (their fixed success line), strips every other output,
and writes the notebook back deterministically. Any error stops it loudly.
"""
from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

from . import notebook as nbio
from .paths import CourseError


def _current_env_kernel_manager():
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    class CurrentEnv(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            # the ipykernel of this Python, whatever kernels the user has installed
            return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                          **ipykernel.kernelspec.get_kernel_dict())

    return KernelManager(kernel_name="python3", kernel_spec_manager=CurrentEnv())


def _coalesce(outputs: list) -> list:
    """Join consecutive stream outputs of the same stream (the kernel may
    send one print in several messages, depending on timing)."""
    out: list = []
    for o in outputs:
        if (o.output_type == "stream" and out and out[-1].output_type == "stream"
                and out[-1].name == o.name):
            out[-1].text += o.text
        else:
            out.append(copy.deepcopy(o))
    return out


def execute_notebook(path: Path, timeout: int = 600, short: bool = False) -> list[str]:
    """Execute `path` and store check-cell outputs only. Returns the checked lines.

    `short`: a cell tagged ``long`` (a full training run) runs its ``grader_runs=`` replacement instead;
    the stored outputs (check cells only) must not depend on which ran.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    nb = nbio.read(path)
    run = copy.deepcopy(nb)
    if short:
        for cell in run.cells:
            if cell.cell_type == "code" and "long" in nbio.tags(cell) and nbio.grader_replacement(cell):
                cell.source = nbio.grader_replacement(cell)
    client = NotebookClient(
        run, timeout=timeout, km=_current_env_kernel_manager(), allow_errors=False,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    try:
        with open(os.devnull, "w") as devnull:  # the kernel's own chatter
            client.execute(stderr=devnull)
    except CellTimeoutError as e:
        raise CourseError(f"{path}: a cell ran longer than {timeout} s:\n{e}") from None
    except CellExecutionError as e:
        raise CourseError(f"{path}: a cell raised an error, nothing was written:\n{e}") from None
    lines: list[str] = []
    count = 0
    for cell, ran in zip(nb.cells, run.cells):
        if cell.cell_type != "code":
            continue
        count += 1
        if nbio.is_check(cell):
            outputs = _coalesce([o for o in ran.outputs
                                 if o.output_type != "display_data" or "text/plain" in o.get("data", {})])
            cell.outputs = outputs
            # nbval compares outputs only of cells with an execution count;
            # the cell's position in the top-to-bottom run is deterministic.
            cell.execution_count = count
            for o in outputs:
                if o.output_type == "stream" and o.name == "stdout":
                    lines.extend(o.text.splitlines())
                elif o.output_type == "error":
                    raise CourseError(f"{path}: check cell {cell.get('id')} raised {o.ename}")
            if not any(o.output_type == "stream" and o.name == "stdout" for o in outputs):
                raise CourseError(f"{path}: check cell {cell.get('id')} printed nothing")
            for o in outputs:
                if o.output_type == "stream" and o.name == "stderr":
                    raise CourseError(f"{path}: check cell {cell.get('id')} wrote to stderr:\n{o.text}")
        else:
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    nbio.save(nb, path)
    return lines


def main(paths: list[str], timeout: int, short: bool = False) -> int:
    status = 0
    for p in paths:
        path = Path(p)
        if not path.is_file():
            print(f"course execute: {p}: no such file", file=sys.stderr)
            status = 1
            continue
        try:
            lines = execute_notebook(path, timeout, short)
        except CourseError as e:
            print(f"course execute: {e}", file=sys.stderr)
            status = 1
            continue
        print(f"{path}: {len(lines)} check output(s) stored")
        for line in lines:
            print(f"  {line}")
    return status
