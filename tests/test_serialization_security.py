"""Malicious pickles: ``course_lib.load`` (weights_only=True, the default) refuses every one
of them *before anything runs*.

Each payload, if it ran, would create a marker file in the test's temporary folder or
append to ``RECORDED``; each test asserts that neither happened.  Where real PyTorch is
installed, the same archives go to ``torch.load(weights_only=True)`` too: it must refuse
them as well, with the same words.
"""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap
from collections import OrderedDict

import pytest
from test_serialization_helpers import arg, binunicode, call, course_pickle, craft, global_op, pickle_program

import course_lib as cl
from course_lib import serialization as S

pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")

RECORDED: list = []


def record(*args):
    """The harmless 'payload function': it only appends to a list."""
    RECORDED.append(args)


class Reduce:
    """Pickles as a call func(*args), the way every pickle payload works."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


@pytest.fixture
def marker(tmp_path):
    RECORDED.clear()
    m = tmp_path / "PWNED"
    yield m
    assert not m.exists(), "a payload ran: the marker file was created"
    assert RECORDED == [], "a payload ran: record() was called"


def touch_cmd(marker) -> str:
    return f"touch {marker}"


def load_raw(raw: bytes, **kw):
    return cl.load(io.BytesIO(raw), **kw)


def refused(raw: bytes, match: str):
    with pytest.raises(pickle.UnpicklingError) as info:
        load_raw(raw)
    msg = str(info.value)
    assert msg.startswith("Weights only load failed."), msg
    assert match in msg, msg
    return msg


def torch_refuses_too(raw: bytes, ours: str | None = None):
    """torch.load refuses the same archive; its WeightsUnpickler message matches ours."""
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(Exception) as info:
        torch.load(io.BytesIO(raw), weights_only=True)
    if ours is not None:
        theirs = str(info.value)
        for key in ("WeightsUnpickler error: ", "\n\n"):
            if key in theirs:
                core = theirs.split(key, 1)[1].split("\n\nCheck the documentation")[0].strip()
                assert core.replace("torch.serialization", "course_lib.serialization") in ours, (core, ours)
                break


# ------------------------------------------------------------------ code execution through GLOBAL + REDUCE


def test_os_system_via_pickle(marker):
    raw = craft(pickle.dumps(Reduce(os.system, touch_cmd(marker)), protocol=2))
    msg = refused(raw, f"Trying to load unsupported GLOBAL {os.system.__module__}.system whose module "
                       f"{os.system.__module__} is blocked.")
    assert "Please file an issue" not in msg and "trusted source" in msg
    torch_refuses_too(raw, msg)


@pytest.mark.parametrize("module", ["os", "posix", "nt", "sys"])
def test_blocked_modules(marker, module):
    raw = craft(pickle_program(call(module, "system", touch_cmd(marker))))
    msg = refused(raw, f"Trying to load unsupported GLOBAL {module}.system whose module {module} is blocked.")
    torch_refuses_too(raw, msg)


def test_blocked_modules_stay_blocked_even_if_allowlisted(marker):
    raw = craft(pickle.dumps(Reduce(os.system, touch_cmd(marker)), protocol=2))
    with S.safe_globals([os.system, (os.system, "os.system")]):
        refused(raw, "is blocked")


@pytest.mark.parametrize("func, args, shown", [
    # protocol 2 writes Python 2 module names: subprocess is "commands" (torch shows the same)
    (subprocess.check_call, (["touch", "MARKER"],), "commands.check_call"),
    (subprocess.Popen, (["touch", "MARKER"],), "commands.Popen"),
    (eval, ("open('MARKER', 'w').close()",), "eval"),
    (exec, ("open('MARKER', 'w').close()",), "exec"),
    (__import__, ("os",), "__import__"),
    (getattr, (os, "system"), "getattr"),
    (open, ("MARKER", "w"), "io.open"),
    (record, ("ran",), "test_serialization_security.record"),
])
def test_unsupported_globals_are_named(marker, func, args, shown):
    args = tuple([str(marker) if a == "MARKER" else a for a in x] if isinstance(x, list)
                 else x.replace("MARKER", str(marker)) if isinstance(x, str) else x for x in args)
    try:
        data = pickle.dumps(Reduce(func, *args), protocol=2)
    except (TypeError, pickle.PicklingError):  # getattr(os, ...): pickling a module fails; build it by hand
        data = pickle_program(global_op("builtins", "getattr") + b"(" + call("builtins", "__import__", "os")
                              + arg("system") + b"tR")
    raw = craft(data)
    msg = refused(raw, f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
                       f"`course_lib.serialization.add_safe_globals([{shown}])`")
    torch_refuses_too(raw, msg)


def test_getattr_import_chain(marker):
    body = (global_op("builtins", "getattr") + b"(" + call("builtins", "__import__", "os") + arg("system")
            + b"tR" + b"(" + arg(touch_cmd(marker)) + b"tR")
    raw = craft(pickle_program(body))
    refused(raw, "GLOBAL getattr was not an allowed global")
    torch_refuses_too(raw)


def test_the_escape_hatch_really_runs_code():
    """weights_only=False is the documented, explicit way to run the file's code."""
    RECORDED.clear()
    raw = craft(pickle.dumps(Reduce(record, "ran"), protocol=2))
    assert load_raw(raw, weights_only=False) is None
    assert RECORDED == [("ran",)]
    with S.safe_globals([record]):  # allowlisting a function means trusting every call to it
        load_raw(raw)
    assert RECORDED == [("ran",), ("ran",)]
    RECORDED.clear()


# ------------------------------------------------------------------ REDUCE / NEWOBJ / BUILD on unexpected things


@pytest.mark.parametrize("body, match", [
    (binunicode("os.system") + b"(" + arg("x") + b"tR", "Trying to call reduce for unrecognized function os.system"),
    (b"}" + b"(tR", "Trying to call reduce for unrecognized function {}"),
    (b"]" + b"q\x00" + b"h\x00" + b"(tR", "Trying to call reduce for unrecognized function []"),
    (global_op("_codecs", "encode") + b"(" + arg("x") + arg("latin1") + b"t\x81",
     "Can only create new object for nn.Parameter or classes allowlisted"),
    (b"]" + b"}" + b"b", "Can only build Tensor, Parameter, OrderedDict or types allowlisted"),
    (b"}" + arg(1) + b"a", "Can only append to lists"),
    (b"}" + b"(" + arg(1) + b"e", "Can only extend lists"),
    (b"]" + arg(1) + arg(2) + b"s", "Can only SETITEM for dict, collections.OrderedDict, collections.Counter"),
    (b"(" + binunicode("module") + binunicode("os") + b"tQ", "Only persistent_load of storage is allowed"),
    (binunicode("storage") + b"Q", "persistent_load id must be tuple or int"),
    (call("builtins", "bytearray", 2 ** 30), "may only be called with data"),
    (call("torch._tensor", "_rebuild_from_type_v2", b"ccollections\nCounter\n", b"ccollections\nCounter\n",
          b")", b"N"), "_rebuild_from_type_v2 may only call a tensor rebuild function"),
], ids=["reduce-str", "reduce-dict", "reduce-memo-list", "newobj-function", "build-list", "append-dict",
        "appends-dict", "setitem-list", "persid-module", "persid-str", "bytearray-size", "from-type-counter"])
def test_restricted_opcodes(marker, body, match):
    refused(craft(pickle_program(body)), match)


def test_private_tensor_state_is_refused(marker):
    """A tensor's Python attributes come back through _rebuild_from_type_v2's state; course_lib keeps
    its internals in attributes starting with '_', so a file may not set those."""
    pkl, storages = course_pickle(cl.ones(2))
    evil = (b"\x80\x02" + global_op("torch._tensor", "_rebuild_from_type_v2") + b"("
            + global_op("torch._utils", "_rebuild_tensor_v2") + global_op("torch", "Tensor")
            + b"(" + pkl[pkl.index(b"(") + 1:pkl.rindex(b"t")] + b"t" + b"}" + binunicode("_storage") + b"NstR.")
    refused(craft(evil, storages), "refusing to set the private tensor attribute '_storage'")


def test_storage_type_is_not_callable(marker):
    refused(craft(pickle_program(call("torch", "FloatStorage", 3))), "malformed pickle data")


# ------------------------------------------------------------------ other protocols and opcodes


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_newer_protocols_are_refused(marker, protocol):
    data = pickle.dumps(Reduce(os.system, touch_cmd(marker)), protocol=protocol)
    raw = craft(data)
    op = data[2]  # protocol 4/5 start with FRAME (149); protocol 3 goes straight to GLOBAL
    if protocol >= 4:
        refused(raw, f"Unsupported operand {op}")
        torch_refuses_too(raw, f"Unsupported operand {op}")
    else:
        with pytest.warns(UserWarning, match="Detected pickle protocol 3"):
            refused(raw, "is blocked")


def test_harmless_protocol_4_file_is_refused_too(marker):
    raw = craft(pickle.dumps({"a": 1}, protocol=4))
    refused(raw, "Unsupported operand 149")


@pytest.mark.parametrize("body, opcode", [
    (binunicode("posix") + binunicode("system") + b"\x93", 147),   # STACK_GLOBAL (protocol 4)
    (b"(" + arg("x") + b"iposix\nsystem\n", 105),                    # INST (protocol 0)
    (b"(" + global_op("collections", "OrderedDict") + b"o", 111),    # OBJ (protocol 1)
    (b"B\x03\x00\x00\x00abc", 66),                                   # BINBYTES (protocol 3)
    (b"S'abc'\n", 83),                                                # STRING (protocol 0)
    (b"\x82\x01", 130),                                               # EXT1 (copyreg extension registry)
], ids=["STACK_GLOBAL", "INST", "OBJ", "BINBYTES", "STRING", "EXT1"])
def test_opcodes_outside_the_subset(marker, body, opcode):
    raw = craft(pickle_program(body))
    refused(raw, f"Unsupported operand {opcode}")
    torch_refuses_too(raw, f"Unsupported operand {opcode}")


# ------------------------------------------------------------------ payloads hidden in real checkpoints


def test_payload_nested_in_a_valid_state_dict(marker, tmp_path):
    sd = OrderedDict([("layer.weight", cl.ones(2, 2)), ("layer.bias", cl.zeros(2))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("layer", {"version": Reduce(os.system, touch_cmd(marker))})])
    path = tmp_path / "sd.pt"
    cl.save({"model": sd, "epoch": 3, "history": [[1.0, (2.0, [Reduce(record, "deep")])]]}, path)
    assert S.get_unsafe_globals_in_checkpoint(path) == [f"{os.system.__module__}.system",
                                                        "test_serialization_security.record"]
    with pytest.raises(pickle.UnpicklingError, match="is blocked"):
        cl.load(path)
    torch_refuses_too(path.read_bytes())


def test_payload_in_a_file_torch_wrote(marker, tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(2), "evil": [Reduce(record, "from torch")]}, tmp_path / "t.pt")
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL test_serialization_security.record was not an allowed"):
        cl.load(tmp_path / "t.pt")


def test_inspecting_globals_runs_nothing(marker, tmp_path):
    raw = craft(pickle.dumps([Reduce(os.system, touch_cmd(marker)), Reduce(eval, "1")], protocol=2))
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == sorted([f"{os.system.__module__}.system",
                                                                           "builtins.eval"])


# ------------------------------------------------------------------ resource attacks


def test_deeply_nested_tuples_do_not_crash_the_process():
    """Hashing a tuple nested a million deep overflows CPython's C stack (a segfault);
    the unpickler refuses to build it.  Run in a subprocess, so a crash would show as one."""
    script = textwrap.dedent("""
        import io, pickle, course_lib as cl
        from test_serialization_helpers import craft
        body = b")" + b"\\x85" * 1_000_000 + b"q\\x00}h\\x00K\\x01s"
        try:
            cl.load(io.BytesIO(craft(b"\\x80\\x02" + body + b".")))
        except pickle.UnpicklingError as e:
            print("refused:", "nested more than" in str(e))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.strip() == "refused: True"


def test_huge_claimed_storage_is_refused_before_allocating(marker):
    pkl, storages = course_pickle(cl.ones(2))
    evil = pkl.replace(b"K\x02t", b"\x8a\x05\x00\x00\x00\x00\x10t")  # numel 2 -> 2**36 (256 GiB of float32)
    assert evil != pkl
    with pytest.raises(RuntimeError, match=r"holds 8 bytes, but the pickle says it holds 68719476736 float32"):
        load_raw(craft(evil, storages))


def test_truncated_pickle_is_a_clean_error(marker):
    pkl, storages = course_pickle({"w": cl.ones(2)})
    for cut in (1, 2, 10, len(pkl) // 2, len(pkl) - 1):
        with pytest.raises(pickle.UnpicklingError, match="truncated|malformed"):
            load_raw(craft(pkl[:cut], storages))


def _refused_quickly(body: bytes, expected: str) -> None:
    """Load in a child process (a regression would hang, not fail) and expect a quick refusal."""
    script = textwrap.dedent(f"""
        import io, pickle, time, course_lib as cl
        from test_serialization_helpers import craft
        t0 = time.perf_counter()
        try:
            cl.load(io.BytesIO(craft({body!r})))
        except pickle.UnpicklingError as e:
            print("refused:", {expected!r} in str(e), time.perf_counter() - t0 < 5)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.strip() == "refused: True True", proc.stdout


def test_error_about_a_memo_bomb_list_is_quick():
    """Each of 40 lists holds the one before twice (through the memo): its repr would have 2**40
    items.  Calling it is refused, and the message shows it briefly."""
    body = b"]q\x00" + b"".join(b"]h" + bytes([i - 1]) + b"ah" + bytes([i - 1]) + b"aq" + bytes([i])
                                for i in range(1, 40))
    _refused_quickly(pickle_program(body + b")R"), "Trying to call reduce for unrecognized function [[[[...], [...]")
    _refused_quickly(pickle_program(body + b")\x81"), "Can only create new object for nn.Parameter")


def test_memo_bomb_tuple_used_as_a_key_is_refused():
    """The same with tuples: hashing the top one (a dict key) would visit 2**60 items."""
    body = b")q\x00" + b"".join(b"h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"\x86q" + bytes([i])
                                for i in range(1, 60))
    _refused_quickly(pickle_program(body + b"}h\x3bK\x01s"), "items in all (through references to the same tuples)")


def test_shared_tuples_in_a_real_checkpoint_still_load():
    t = (1, 2, 3)
    sd = {"shapes": [t] * 1000, "nested": ((t, t), (t, t))}
    assert load_raw(craft(course_pickle(sd)[0])) == sd


def test_unknown_encoding_is_an_unpickling_error(marker):
    refused(craft(pickle_program(call("_codecs", "encode", "abc", "no-such-codec"))),
            "LookupError: unknown encoding: no-such-codec")
