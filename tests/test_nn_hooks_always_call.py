"""``register_forward_hook(always_call=True)``: the hook runs even when forward raises (it was accepted and
ignored before), as in ``torch/nn/modules/module.py``'s ``_call_impl``."""
from __future__ import annotations

import warnings

import pytest

import course_lib as cl
from course_lib import nn
from course_lib.nn.modules.module import register_module_forward_hook


class Boom(nn.Module):
    def forward(self, x):
        raise ValueError("boom")


def _run(module_cls, register, torch_mod=None):
    """Register hooks with ``register(module, log)``, call the module, return (log, error, warnings)."""
    log = []
    m = module_cls()
    register(m, log)
    err = None
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            m(cl.ones(2) if torch_mod is None else torch_mod.ones(2))
        except Exception as e:       # noqa: BLE001 - compared below
            err = e
    return log, err, [str(x.message) for x in w]


def test_always_call_hook_runs_when_forward_raises():
    def register(m, log):
        m.register_forward_hook(lambda mod, args, out: log.append(("plain", out)))
        m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mod, args, kw, out: log.append(("kwargs", kw, out)), with_kwargs=True,
                                always_call=True)
    log, err, w = _run(Boom, register)
    assert isinstance(err, ValueError) and str(err) == "boom"
    assert log == [("always", None), ("kwargs", {}, None)]
    assert w == []


def test_always_call_hook_runs_once_when_a_later_hook_raises():
    def register(m, log):
        m.register_forward_hook(lambda mod, args, out: log.append("first"), always_call=True)
        m.register_forward_hook(lambda mod, args, out: 1 / 0)
        m.register_forward_hook(lambda mod, args, out: log.append("third"), always_call=True)
    log, err, _ = _run(nn.Identity, register)
    assert isinstance(err, ZeroDivisionError)
    assert log == ["first", "third"]     # first ran normally, third in the error path; neither twice


def test_an_always_call_hook_error_is_a_warning_and_the_forward_error_wins():
    def register(m, log):
        m.register_forward_hook(lambda mod, args, out: [][1], always_call=True)
    log, err, w = _run(Boom, register)
    assert isinstance(err, ValueError)
    assert w == ["module forward hook with ``always_call=True`` raised an exception that was silenced as another "
                 "error was raised in forward: list index out of range"]


def test_without_always_call_nothing_runs_after_an_error():
    def register(m, log):
        m.register_forward_hook(lambda mod, args, out: log.append("plain"))
    log, err, _ = _run(Boom, register)
    assert isinstance(err, ValueError) and log == []


def test_global_always_call_hook():
    log = []
    h = register_module_forward_hook(lambda mod, args, out: log.append(type(mod).__name__), always_call=True)
    try:
        with pytest.raises(ValueError):
            Boom()(cl.ones(2))
        nn.Identity()(cl.ones(2))
    finally:
        h.remove()
    assert log == ["Boom", "Identity"]


def test_global_with_kwargs_hook():
    seen = []
    h = register_module_forward_hook(lambda mod, args, kw, out: seen.append(kw), with_kwargs=True)
    try:
        nn.Identity()(cl.ones(2))
    finally:
        h.remove()
    assert seen == [{}]


def test_always_call_hook_sees_args_changed_by_a_pre_hook_and_its_result_is_dropped():
    def register(m, log):
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_hook(lambda mod, args, out: log.append(args[0].tolist()) or "ignored", always_call=True)
    log, err, _ = _run(Boom, register)
    assert isinstance(err, ValueError) and log == [[2.0, 2.0]]


def test_prepend_and_with_kwargs_of_the_other_hooks():
    log = []
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
    m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
    m.register_forward_pre_hook(lambda mod, args, kw: log.append(("prekw", kw)), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append("post1"))
    m.register_forward_hook(lambda mod, args, out: log.append("post0"), prepend=True)
    m(cl.ones(1))
    assert log == ["pre0", "pre1", ("prekw", {}), "post0", "post1"]


@pytest.mark.oracle
def test_same_hook_order_and_warnings_as_torch():
    from oracle import require_torch
    torch = require_torch()

    class TBoom(torch.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    def register(m, log):
        m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mod, args, out: [][1], always_call=True)
        m.register_forward_hook(lambda mod, args, kw, out: log.append(("kwargs", kw, out)), with_kwargs=True,
                                always_call=True)
        m.register_forward_hook(lambda mod, args, out: log.append("plain"))
    ours = _run(Boom, register)
    theirs = _run(TBoom, register, torch)
    assert ours[0] == theirs[0]
    assert type(ours[1]) is type(theirs[1]) and str(ours[1]) == str(theirs[1])
    assert ours[2] == theirs[2]
