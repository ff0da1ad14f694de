"""Scheduling: group pointwise Values into fused kernels and plan buffers by liveness.

In PyTorch: ``torch/_inductor/scheduler.py`` (``FusedSchedulerNode``, ``can_fuse``) and the
wrapper's buffer reuse (``codegen/wrapper.py``: ``buf3 = buf0; del buf0  # reuse``).

Fusion rule, kept simple: walk the Values in program order; consecutive pointwise Values with
the same output shape form one group (inputs of a smaller shape are read through broadcast
indexing).  A reduction of a Value of that shape joins the group and gives it a row geometry
(``outer`` rows of ``inner`` columns): from then on pointwise Values of one element per row (the
reduction's result and what is computed from it, a mean or an rstd) join too, as do later
reductions over the same rows and reductions over the columns (a LayerNorm backward's dweight).
Such a group becomes a *row kernel*: a loop over rows with inner loops over the columns (see
``codegen``).  A Value that reads a column reduction of the open group closes it (that result is
only complete after the loop over all rows).  An extern op that reads nothing from the open group
is run before it, so it does not split the group; one that does read it closes the group.  Inside
a group only the Values read after it (or returned) are written to memory: the rest live in
registers of the loop body.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import Value


@dataclass(eq=False)
class FusionGroup:
    """One generated kernel: ``values`` computed in one loop over ``shape``; ``outputs`` stored."""

    name: str
    shape: tuple[int, ...]
    geometry: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    values: list[Value] = field(default_factory=list)
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)


@dataclass(eq=False)
class ExternStep:
    """A call of course_lib's kernel (or a ``getitem`` of a tuple result)."""

    value: Value


Step = "FusionGroup | ExternStep"


def _mutates(v: Value) -> bool:
    op = v.target
    return v.kind == "extern" and (bool(getattr(op, "is_inplace", False)) or op.name.endswith("_"))


def is_row_shape(shape: tuple[int, ...], geometry: tuple) -> bool:
    """Whether a Value of ``shape`` holds one element per row of ``geometry`` (a kept or dropped dim)."""
    outer, inner = geometry
    return shape == outer + (1,) * len(inner) or shape == outer


def _joins(group: FusionGroup, v: Value) -> bool:
    """Whether ``v`` can be computed in ``group`` (and, for a reduction, sets its geometry)."""
    if any(a.kind == "reduction" and a.axis == "cols" and a in group.values for a in v.inputs()):
        return False
    if v.kind == "pointwise":
        # a value of one element per row joins only if it is computed from the group (a mean, an rstd): one that
        # reads only values from outside is independent of the rows' loop and starts a kernel of its own
        return v.shape == group.shape or (group.geometry is not None and is_row_shape(v.shape, group.geometry)
                                          and any(a in group.values for a in v.inputs()))
    x = v.args[0]
    if x.shape != group.shape or (group.geometry is not None and group.geometry != v.geometry):
        return False
    group.geometry = v.geometry
    return True


def schedule(values: list[Value], outputs: list[Value]) -> list:
    """The steps (fusion groups and extern calls) that compute ``values``, in a valid order."""
    steps: list = []
    group: FusionGroup | None = None
    hoisted: list[ExternStep] = []
    n_groups = 0

    def close() -> None:
        nonlocal group
        steps.extend(hoisted)
        hoisted.clear()
        if group is not None:
            steps.append(group)
        group = None

    for v in values:
        if v.kind in ("pointwise", "reduction"):
            if group is None or not _joins(group, v):
                close()
                shape = v.shape if v.kind == "pointwise" else v.args[0].shape
                group = FusionGroup(f"kernel{n_groups}", shape)
                n_groups += 1
                _joins(group, v)
            group.values.append(v)
        elif v.kind in ("extern", "getitem"):
            in_group = group is not None and any(a in group.values for a in v.inputs())
            if group is not None and not in_group and not _mutates(v) and not any(
                    _mutates(h.value) for h in hoisted):
                hoisted.append(ExternStep(v))
            else:
                close()
                steps.append(ExternStep(v))
    close()

    returned = set(map(id, outputs))
    for s in steps:
        if isinstance(s, FusionGroup):
            members = set(map(id, s.values))
            for v in s.values:
                for a in v.inputs():
                    if id(a) not in members and a not in s.inputs:
                        s.inputs.append(a)
                if id(v) in returned or v.writes is not None or any(id(u) not in members for u in v.users):
                    s.outputs.append(v)
    return steps
