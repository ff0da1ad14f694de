"""Fuzzing ``course_lib.load`` at the level of pickle opcodes, not bytes.

Valid checkpoints (course_lib's own, plus hand-written pickles in PyTorch's other
formats: legacy BUILD on tensors and Parameters, tensors with Python attributes,
``_rebuild_tensor_v3``, meta tensors) are disassembled into opcodes, and each case
applies one to three mutations: delete, duplicate, insert, replace or swap opcodes;
turn a REDUCE into a BUILD or NEWOBJ and back; BUILD a state (a dtype, a device's
type, a fake tensor, a legacy ``set_`` tuple with a huge or shifted view) on the
object some opcode left on the stack; point a REDUCE or BUILD at another
allowlisted global; set an integer (a size, stride, offset or numel) to a huge or
negative value; point a memo reference at another object; change a string (a storage
key, a device, an attribute name); change a tuple's arity.

Every load must either

- return objects in which every tensor lies inside its storage (offset + the largest
  reachable index < the storage's size, dtype and itemsize those of the storage,
  checked arithmetically, then every element read), or
- raise ``pickle.UnpicklingError`` or ``RuntimeError``.

Why those two: PyTorch raises ``RuntimeError`` for views and storages it refuses
(``set_``'s checks, "numel: integer multiplication overflow", record sizes) and
``UnpicklingError`` for opcodes and globals it refuses; for other malformed data it lets
whatever Python raised escape (``TypeError``, ``AttributeError``, ``IndexError``,
``KeyError``, ``ValueError``, ``EOFError``).  course_lib turns that last group into
``UnpicklingError`` naming the original error (its documented rule), so the set here is
PyTorch's two deliberate kinds and nothing else.

No load may crash the process (the campaign runs in a child process), take more than
a few seconds, or change process state: the default dtype, the dtypes, the cached
devices, the allowlists, the storage types.  Seeded and bounded: the same few thousand
files on every run, in a few seconds.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import pickletools
import random
import struct
import subprocess
import sys
from collections import Counter, OrderedDict

import numpy as np
from test_serialization_helpers import arg, binunicode, course_pickle, craft, global_op

import course_lib as cl
from course_lib import _device, _dtype
from course_lib import _weights_only_unpickler as W
from course_lib import serialization as S

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = 3000
SEED = 20240612
ALLOWED_ERRORS = (pickle.UnpicklingError, RuntimeError)


# ------------------------------------------------------------------ seed checkpoints


def _long1(v: int) -> bytes:
    b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(b)]) + b


def _pid(key: str, numel: int, storage: str = "FloatStorage") -> bytes:
    return (b"(" + binunicode("storage") + global_op("torch", storage) + binunicode(key) + binunicode("cpu")
            + _long1(numel) + b"tQ")


def _tup(values) -> bytes:
    return b"(" + b"".join(_long1(v) for v in values) + b"t"


_OD = global_op("collections", "OrderedDict") + b")R"


def _rebuild(key="0", numel=6, offset=0, size=(2, 3), stride=(3, 1)) -> bytes:
    return (global_op("torch._utils", "_rebuild_tensor_v2") + b"(" + _pid(key, numel) + _long1(offset) + _tup(size)
            + _tup(stride) + b"\x89" + _OD + b"tR")


def _seeds() -> list[tuple[bytes, dict[str, bytes]]]:
    """(data.pkl, storages) of each valid checkpoint the mutations start from."""
    cl.manual_seed(0)
    base = cl.arange(24.)
    sd = OrderedDict([("w", cl.nn.Parameter(cl.randn(3, 4))), ("b", cl.zeros(4)), ("n", cl.tensor(7)),
                      ("half", cl.ones(5, dtype=cl.float16)), ("mask", cl.tensor([True, False]))])
    sd._metadata = OrderedDict([("", {"version": 1})])
    seeds = [course_pickle({"model": sd, "views": [base, base[3:], base.view(4, 6).t(), base[::5]],
                            "meta": cl.empty(3, 4, device="meta").t(), "dev": cl.device("cpu"), "dt": cl.int64,
                            "size": cl.Size([2, 3]), "extra": {"set": {1, 2}, "bytes": b"\x00\x01", "c": 1 + 2j}})]
    six = {"0": np.arange(6, dtype=np.float32).tobytes()}
    p2 = b"\x80\x02"
    # legacy BUILD on a tensor: set_(storage, offset, size, stride)
    seeds.append((p2 + _rebuild() + b"(" + _pid("0", 6) + _long1(1) + _tup((2, 2)) + _tup((1, 2)) + b"tb.", six))
    # legacy BUILD on a Parameter: Tensor.__setstate__((requires_grad, None, hooks))
    seeds.append((p2 + global_op("torch._utils", "_rebuild_parameter") + b"(" + _rebuild() + b"\x88" + _OD + b"tR"
                  + b"\x89N" + _OD + b"\x87b.", six))
    # a tensor with Python attributes, and a Parameter with state
    attrs = b"}(" + arg("note") + arg("hi") + arg("grad") + _rebuild(size=(6,), stride=(1,)) + b"u"
    seeds.append((p2 + b"]q\x00(" + global_op("torch._tensor", "_rebuild_from_type_v2") + b"("
                  + global_op("torch._utils", "_rebuild_tensor_v2") + global_op("torch", "Tensor") + b"("
                  + _pid("0", 6) + _long1(0) + _tup((6,)) + _tup((1,)) + b"\x89" + _OD + b"t" + attrs + b"tR"
                  + global_op("torch._utils", "_rebuild_parameter_with_state") + b"(" + _rebuild() + b"\x88" + _OD
                  + b"N}(" + arg("tag") + arg(3) + b"u\x86tRe.", six))
    # _rebuild_tensor_v3 over untyped bytes, NEWOBJ Parameter, a Counter, a meta tensor
    seeds.append((p2 + b"(" + global_op("torch._utils", "_rebuild_tensor_v3") + b"("
                  + b"(" + binunicode("storage") + global_op("torch.storage", "UntypedStorage") + binunicode("1")
                  + binunicode("cpu") + _long1(24) + b"tQ" + _long1(0) + _tup((3,)) + _tup((2,)) + b"\x89" + _OD
                  + global_op("torch", "float32") + b"tR"
                  + global_op("torch.nn.parameter", "Parameter") + b"(" + _rebuild() + b"\x89t\x81"
                  + global_op("collections", "Counter") + b"(}(" + arg("a") + arg(2) + b"utR"
                  + global_op("torch._utils", "_rebuild_meta_tensor_no_storage") + b"(" + global_op("torch", "int8")
                  + _tup((2, 3)) + _tup((3, 1)) + b"\x89tR" + b"t.", dict(six, **{"1": bytes(range(24))})))
    return seeds


# ------------------------------------------------------------------ mutations


def _ops(pkl: bytes) -> list[bytes]:
    """The pickle as a list of opcodes, each with its argument bytes."""
    starts = [pos for _, _, pos in pickletools.genops(pkl)]
    return [pkl[a:b] for a, b in zip(starts, starts[1:] + [len(pkl)])]


_INTS = [0, 1, 2, 3, 4, 7, 255, 256, -1, -2, 2 ** 31 - 1, -2 ** 31, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 2 ** 63,
         -2 ** 63, 2 ** 64, 2 ** 80]
_STRINGS = ["0", "1", "2", "cpu", "meta", "cpu:1", "storage", "data", "dtype", "_storage", "type", "requires_grad",
            "grad", "note", "_metadata", "shape", ""]
_GLOBALS = [global_op(m, n) for m, n in [
    ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor"), ("torch._utils", "_rebuild_tensor_v3"),
    ("torch._utils", "_rebuild_parameter"), ("torch._utils", "_rebuild_parameter_with_state"),
    ("torch._utils", "_rebuild_meta_tensor_no_storage"), ("torch._tensor", "_rebuild_from_type_v2"),
    ("torch.nn.parameter", "Parameter"), ("torch", "Tensor"), ("torch", "Size"), ("torch", "device"),
    ("torch", "float32"), ("torch", "int64"), ("torch", "uint8"), ("torch", "FloatStorage"), ("torch", "LongStorage"),
    ("torch.storage", "UntypedStorage"), ("collections", "OrderedDict"), ("collections", "Counter"),
    ("builtins", "set"), ("builtins", "complex"), ("builtins", "bytearray"), ("_codecs", "encode")]]
_SNIPPETS = [b"b", b"R", b"\x81", b"Q", b"(", b"t", b"\x85", b"\x86", b"\x87", b")", b"]", b"}", b"N", b"\x88",
             b"\x89", b"s", b"u", b"a", b"e", b".", b"h\x00", b"h\x05", b"q\x00",
             b"N}(" + arg("type") + arg("meta") + b"u\x86",                                # BUILD state for a device
             b"}(" + arg("dtype") + global_op("torch", "int64") + b"u",                    # BUILD {'dtype': int64}
             b"}(" + arg("data") + _OD + b"u",                                             # {'data': OrderedDict()}
             b"}(" + arg("_storage") + b"N" + arg("_shape") + _tup((1 << 20,)) + b"u",     # fake tensor fields
             _tup((1 << 40, 1 << 40)), _tup((0, 0)), _tup((-1,)), _tup((1 << 62,))]


_STATES = [b"N", b")", b"}", b"N}(" + arg("type") + arg("meta") + b"u\x86", b"N}(" + arg("index") + arg(1) + b"u\x86",
           b"}(" + arg("dtype") + global_op("torch", "int64") + b"u", b"}(" + arg("data") + _OD + b"u",
           b"}(" + arg("note") + arg("x") + b"u", b"\x89N" + _OD + b"\x87",
           b"(" + _pid("0", 6) + b"t", b"(" + _pid("0", 6) + _long1(0) + _tup((1 << 20,)) + _tup((1,)) + b"t",
           b"(" + _pid("0", 6) + _long1(2) + _tup((2, 2)) + _tup((2, 1)) + b"t",
           b"(" + _pid("0", 6) + _long1(0) + _tup((1 << 40, 1 << 40)) + _tup((0, 0)) + b"t",
           b"(" + _pid("0", 6) + _long1(5) + _tup((3,)) + b"Nt"]


def _int_op(v: int) -> bytes:
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -2 ** 31 <= v < 2 ** 31:
        return b"J" + struct.pack("<i", v)
    return _long1(v)


def _mutate(rng: random.Random, ops: list[bytes], pool: list[bytes]) -> tuple[list[bytes], list[str]]:
    ops = list(ops)
    done = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        i = rng.randrange(1, len(ops)) if len(ops) > 1 else 0
        op = ops[i][:1]
        kind = rng.choice(("delete", "duplicate", "insert", "replace", "swap", "build_reduce", "build_on", "global",
                           "int", "int", "memo", "string", "tuple"))
        if kind == "delete" and len(ops) > 2:
            del ops[i]
        elif kind == "duplicate":
            ops.insert(i, ops[i])
        elif kind == "insert":
            ops.insert(i, rng.choice(pool + _SNIPPETS))
        elif kind == "replace":
            ops[i] = rng.choice(pool + _SNIPPETS)
        elif kind == "swap":
            j = min(len(ops) - 1, max(1, i + rng.randint(-6, 6)))
            ops[i], ops[j] = ops[j], ops[i]
        elif kind == "build_reduce":
            targets = [k for k, o in enumerate(ops) if o[:1] in (b"R", b"b", b"\x81")]
            if targets:
                k = rng.choice(targets)
                ops[k] = rng.choice([o for o in (b"R", b"b", b"\x81") if o != ops[k][:1]])
        elif kind == "build_on":  # BUILD a state on whatever the op before leaves on the stack
            targets = [k for k, o in enumerate(ops) if o[:1] in (b"R", b"b", b"\x81", b"h", b"Q", b"c")]
            if targets:
                k = rng.choice(targets) + 1
                ops[k:k] = [rng.choice(_STATES), b"b"]
        elif kind == "global":
            targets = [k for k, o in enumerate(ops) if o[:1] == b"c"]
            if targets:
                ops[rng.choice(targets)] = rng.choice(_GLOBALS)
        elif kind == "int":
            targets = [k for k, o in enumerate(ops) if o[:1] in (b"K", b"M", b"J", b"\x8a")]
            if targets:
                ops[rng.choice(targets)] = _int_op(rng.choice(_INTS))
        elif kind == "memo":
            targets = [k for k, o in enumerate(ops) if o[:1] in (b"h", b"q")]
            if targets:
                k = rng.choice(targets)
                ops[k] = ops[k][:1] + bytes([rng.randrange(0, 16)])
        elif kind == "string":
            targets = [k for k, o in enumerate(ops) if o[:1] == b"X"]
            if targets:
                ops[rng.choice(targets)] = binunicode(rng.choice(_STRINGS))
        elif kind == "tuple":
            targets = [k for k, o in enumerate(ops) if o[:1] in (b"\x85", b"\x86", b"\x87", b"t", b")")]
            if targets:
                k = rng.choice(targets)
                ops[k] = rng.choice([o for o in (b"\x85", b"\x86", b"\x87", b")") if o != ops[k][:1]])
        done.append(f"{kind}@{i}({op!r})")
    return ops, done


# ------------------------------------------------------------------ what a loaded object must satisfy


def _tensor_problem(t) -> str | None:
    """Why ``t`` is unsafe, or None: it must lie inside a consistent storage."""
    s = t._storage
    if type(s) is not cl.Storage:
        return f"storage is a {type(s).__name__}"
    if t.dtype is not s.dtype or not isinstance(t.dtype, _dtype.dtype):
        return f"tensor dtype {t.dtype} over a {s.dtype} storage"
    if s.data is not None and (not isinstance(s.data, np.ndarray) or s.data.ndim != 1 or s.data.dtype != s.dtype.np
                               or s.data.shape[0] != s._size or s._nbytes != s._size * s.dtype.itemsize):
        return "storage buffer does not match its size or dtype"
    shape, stride, offset = t._shape, t._stride, t._offset
    if not (type(shape) is tuple and type(stride) is tuple and len(shape) == len(stride)
            and all(type(v) is int for v in shape + stride) and type(offset) is int):
        return f"malformed view {shape!r:.60} {stride!r:.60} {offset!r:.20}"
    if any(n < 0 for n in shape) or offset < 0:
        return f"negative size or offset: {shape} {offset}"
    if 0 in shape:
        return None
    if any(st < 0 for st in stride):
        return f"negative stride {stride}"
    last = offset + sum((n - 1) * st for n, st in zip(shape, stride))
    if last >= s._size:
        return f"view reaches element {last} of a storage of {s._size}"
    numel = 1
    for n in shape:
        numel *= n
    if s.data is not None and numel <= 1 << 20:
        np.array(t._np(), copy=True)  # read every element (a crash here is a failure too)
    return None


def _walk_problems(obj) -> list[str]:
    """Every tensor reachable from ``obj`` (containers, attributes, gradients), checked."""
    problems, seen, todo = [], set(), [obj]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, cl.Tensor):
            p = _tensor_problem(x)
            if p:
                problems.append(p)
            todo.extend(x.__dict__.values())
        elif isinstance(x, cl.Storage):
            todo.append(cl.Tensor._make(x, 0, (len(x),), (1,), x.dtype))
        elif isinstance(x, dict):
            todo.extend(x.keys())
            todo.extend(x.values())
            todo.extend(getattr(x, "__dict__", {}).values())
        elif isinstance(x, (list, tuple, set, frozenset)):
            todo.extend(x)
    return problems


def _state() -> tuple:
    cpu = cl.device("cpu")
    return (cl.get_default_dtype(), id(cpu), cpu.type, cpu.index, cl.device("meta").type,
            [(d.name, d.np, d.itemsize, d.category, d.is_signed, d._storage_name, d._tensor_name)
             for d in _dtype.ALL_DTYPES],
            set(W._marked_safe_globals_set), dict(W._get_allowed_globals()),
            {k: (v.name, v.dtype) for k, v in S._STORAGE_TYPES.items()}, S._load_state.v3_views)


def _devices() -> dict:
    return {k: (id(v), v.type, v.index) for k, v in _device._CACHE.items()}


# ------------------------------------------------------------------ the campaign (runs in a child process)


def campaign(seed: int, cases: int) -> dict:
    import faulthandler
    import signal
    import time

    faulthandler.enable()

    def too_slow(signum, frame):
        raise TimeoutError("load took more than 5 s")

    signal.signal(signal.SIGALRM, too_slow)
    rng = random.Random(seed)
    seeds = [(_ops(pkl), storages) for pkl, storages in _seeds()]
    pool = [op for ops, _ in seeds for op in ops]
    stats = {"cases": 0, "loaded": 0, "refused": Counter(), "unexpected": [], "unsafe": [], "state": [], "slow": []}
    before, devices = _state(), _devices()
    import warnings
    warnings.simplefilter("ignore")
    for case in range(cases):
        ops, storages = seeds[rng.randrange(len(seeds))]
        mutated, how = _mutate(rng, ops, pool)
        raw = craft(b"".join(mutated), storages)
        label = f"case {case}: {' '.join(how)}"
        print(label, file=sys.stderr, flush=True)
        stats["cases"] += 1
        t0 = time.perf_counter()
        signal.alarm(5)
        try:
            obj = cl.load(io.BytesIO(raw), map_location="meta" if case % 10 == 9 else None)
            problems = _walk_problems(obj)
            stats["loaded"] += 1
            if problems:
                stats["unsafe"].append(f"{label}: {problems[:3]}")
        except ALLOWED_ERRORS as e:
            stats["refused"][type(e).__name__] += 1
        except TimeoutError:
            stats["slow"].append(label)
        except Exception as e:  # noqa: BLE001 - anything else is what we are looking for
            stats["unexpected"].append(f"{label}: {type(e).__name__}: {e}"[:400])
        finally:
            signal.alarm(0)
        if time.perf_counter() - t0 > 2:
            stats["slow"].append(f"{label}: {time.perf_counter() - t0:.1f} s")
        if _state() != before or not devices.items() <= _devices().items():
            stats["state"].append(label)
            before, devices = _state(), _devices()
    return stats


def test_seeds_load_and_are_safe():
    for pkl, storages in _seeds():
        obj = cl.load(io.BytesIO(craft(pkl, storages)))
        assert _walk_problems(obj) == []


def test_the_checker_sees_an_out_of_bounds_view():
    """The campaign's check is not vacuous: it reports a view past its storage and a dtype that
    is not the storage's (what the attacks of issue 12 produced)."""
    s = cl.arange(4.)._storage
    past_the_end = cl.Tensor._make(s, 2, (4,), (1,), cl.float32)
    assert _walk_problems([past_the_end]) == ["view reaches element 5 of a storage of 4"]
    assert "over a" in _walk_problems({"t": cl.Tensor._make(s, 0, (2,), (1,), cl.int64)})[0]


def test_opcode_mutations_load_safely_or_fail_cleanly():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    code = ("import json, test_serialization_opcode_fuzz as f; "
            f"print(json.dumps(f.campaign({SEED}, {CASES})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    last = "\n".join(proc.stderr.splitlines()[-30:])
    assert proc.returncode == 0, f"the fuzzing process died (status {proc.returncode}):\n{last}"
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stats["unexpected"] == [], stats["unexpected"][:10]
    assert stats["unsafe"] == [], stats["unsafe"][:10]
    assert stats["state"] == [], stats["state"][:10]
    assert stats["slow"] == [], stats["slow"][:10]
    assert stats["cases"] == CASES
    # the mutations reach both outcomes, and both kinds of refusal
    assert stats["loaded"] > CASES // 20, stats
    assert set(stats["refused"]) == {"UnpicklingError", "RuntimeError"}, stats
