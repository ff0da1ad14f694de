"""Checks for chapter 07 (serialization).

Expected values come from the reference: ``course_lib.serialization`` (its pickler,
its archive writer, ``course_lib.load``) and ``course_lib._weights_only_unpickler``.
Every payload a check feeds to the learner's code is harmless: if it runs, it only
appends to ``RECORDED`` below, which is how a check notices that it ran.
"""
from __future__ import annotations

import io
import pickle
import tempfile
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np

from course.checks import Case, exercise

RECORDED: list = []


def _record(*args):
    """The harmless payload function: remembers that it was called (and with what)."""
    RECORDED.append(args)
    return f"recorded {args!r}"


class Point:
    """A small class for allowlist cases (pickled by reference: this module's Point)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


def _cl():
    import course_lib

    return course_lib


def _outcome(fn, *args):
    """fn(*args), or ("ExcType", "message") if it raises (NotImplementedError passes through)."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - the learner's error is the value being checked
        return (type(e).__name__, str(e))


def _raised_type(fn, *args) -> str:
    try:
        fn(*args)
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001
        return type(e).__name__
    return "no exception"


# ------------------------------------------------------------------ describing loaded objects


def _describe(obj, groups: dict | None = None):
    """A comparable summary: tensors by dtype, geometry, values and which storage they share."""
    cl = _cl()
    groups = {} if groups is None else groups
    if isinstance(obj, cl.Tensor):
        group = groups.setdefault(id(obj._storage), len(groups))
        vals = np.array(obj._np()).tolist() if obj._storage.data is not None else None
        return ("tensor", obj.dtype.name, tuple(obj.shape), tuple(obj.stride()), obj.storage_offset(), vals,
                f"storage #{group}")
    if isinstance(obj, dict):
        meta = getattr(obj, "_metadata", None)
        return (type(obj).__name__, [(k, _describe(v, groups)) for k, v in obj.items()],
                _describe(meta, groups) if meta is not None else None)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_describe(v, groups) for v in obj])
    return obj


def _saved(obj) -> bytes:
    buf = io.BytesIO()
    _cl().save(obj, buf)
    return buf.getvalue()


def _sample_objects():
    """Fresh checkpoints to save, built the same way on every call (seeded)."""
    cl = _cl()
    rng = np.random.default_rng(7)
    base = cl.from_numpy(rng.standard_normal(12).astype(np.float32))
    sd = OrderedDict([("0.weight", cl.from_numpy(rng.standard_normal((3, 2)).astype(np.float32))),
                      ("0.bias", cl.zeros(3)), ("1.num_batches_tracked", cl.tensor(4))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("0", {"version": 1})])
    return [
        ("views of one storage", {"base": base, "tail": base[4:], "grid_t": base.view(3, 4).t(),
                                  "every_other": base[1::2], "copy": base.clone()}),
        ("a state_dict with _metadata", sd),
        ("dtypes, 0-d and empty", [cl.tensor(3), cl.tensor([True, False]), cl.ones(2, 2, dtype=cl.float16),
                                   cl.arange(4, dtype=cl.uint8), cl.empty(0, 3), cl.tensor([-1, 2], dtype=cl.int8)]),
        ("nested containers", {"model": {"w": cl.arange(6.).view(2, 3)}, "history": [(1, 0.5), (2, 0.25)],
                               "name": "run-7", "step": 3}),
    ]


# ------------------------------------------------------------------ 07.1 make_payload


def _payload_run(make_payload, args):
    RECORDED.clear()
    payload = make_payload(_record, *args)
    at_creation = len(RECORDED)
    data = pickle.dumps(payload, protocol=2)
    at_dumps = len(RECORDED)
    result = pickle.loads(data)
    calls = list(RECORDED)
    RECORDED.clear()
    return {"calls while making it": at_creation, "calls while pickling": at_dumps,
            "calls while unpickling": calls, "pickle.loads returned": result}


def _payload_refused(make_payload):
    from course_lib import _weights_only_unpickler as W

    RECORDED.clear()
    data = pickle.dumps(make_payload(_record, "should not run"), protocol=2)
    try:
        W.Unpickler(data).load()
        outcome = "loaded"
    except pickle.UnpicklingError as e:
        outcome = "refused, naming the function" if _RECORD_PATH in str(e) else str(e)
    ran = len(RECORDED)
    RECORDED.clear()
    return (outcome, f"{ran} calls")


@exercise("07.1", title="make_payload", points=1,
          hint="give the object a __reduce__ method that returns (fn, args): pickle stores that as "
               "GLOBAL fn + REDUCE, and pickle.loads calls fn(*args). Don't call fn yourself.")
def _make_payload(make_payload):
    out = []
    for args in (("hello",), (1, 2, 3), ()):
        expected = {"calls while making it": 0, "calls while pickling": 0, "calls while unpickling": [args],
                    "pickle.loads returned": f"recorded {args!r}"}
        label = f"pickle.loads(pickle.dumps(make_payload({', '.join(['record', *map(repr, args)])})))"
        out.append(Case(label, lambda a=args: _payload_run(make_payload, a), expected))
    out.append(Case("course_lib's weights_only unpickler on make_payload(record, 'should not run')",
                    lambda: _payload_refused(make_payload), ("refused, naming the function", "0 calls")))
    return out


# ------------------------------------------------------------------ 07.2 tensor_persistent_id


def _reference_pid(obj, storages):
    cl = _cl()
    if not isinstance(obj, cl.Storage):
        return None
    for key, seen in storages.items():
        if seen is obj:
            break
    else:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", obj.dtype._storage_name, key, str(obj.device), obj.size())


def _pid_sequence(fn, objs):
    """Call fn on each object in turn with one shared dict; report results and the dict's contents."""
    storages: dict = {}
    results = [fn(o, storages) for o in objs]
    index = {id(o): i for i, o in enumerate(objs)}
    contents = {k: f"object #{index.get(id(v), '?')}" for k, v in storages.items()} \
        if isinstance(storages, dict) else storages
    return results, contents


def _pid_cases(fn):
    cl = _cl()
    Storage = cl.Storage
    s_float = cl.arange(6.)._storage
    s_long = cl.arange(3)._storage
    twin = Storage(s_float.data.copy(), cl.float32)           # equal bytes, a different storage
    s_bool = cl.tensor([True, False])._storage
    s_empty = cl.empty(0, dtype=cl.float16)._storage
    s_meta = cl.empty(5, device="meta")._storage
    t = cl.ones(2)
    sequences = [
        ("not storages", [3, "x", None, [1, 2], t]),
        ("one storage", [s_float]),
        ("the same storage twice", [s_float, s_float]),
        ("two storages, then the first again", [s_float, s_long, s_float]),
        ("equal bytes, different storages", [s_float, twin]),
        ("a tensor, then its storage", [t, t._storage]),
        ("bool, empty float16 and meta storages", [s_bool, s_empty, s_meta]),
    ]
    out = []
    for label, objs in sequences:
        names = ", ".join(_short_obj(o) for o in objs)
        out.append(Case(f"storages = {{}}; [tensor_persistent_id(o, storages) for o in [{names}]]; storages",
                        lambda o=objs: _pid_sequence(fn, o), _pid_sequence(_reference_pid, objs)))
    return out


def _short_obj(o) -> str:
    cl = _cl()
    if isinstance(o, cl.Storage):
        return f"<{o.dtype.name} storage of {o.size()}{' on meta' if o.device == 'meta' else ''}>"
    if isinstance(o, cl.Tensor):
        return "<tensor>"
    return repr(o)


@exercise("07.2", title="tensor_persistent_id", points=2,
          hint="None unless isinstance(obj, cl.Storage); look for obj among storages.values() by identity "
               "(`is`), else add it under the key str(len(storages)); return ('storage', "
               "STORAGE_NAMES[obj.dtype], key, str(obj.device), obj.size()).")
def _tensor_persistent_id(tensor_persistent_id):
    return _pid_cases(tensor_persistent_id)


# ------------------------------------------------------------------ 07.4 tensor_persistent_load


class _Records:
    """A fake read_record that counts its calls."""

    def __init__(self, records: dict):
        self.records = records
        self.reads = 0

    def __call__(self, name):
        self.reads += 1
        return self.records[name]


def _storage_summary(s):
    cl = _cl()
    if not isinstance(s, cl.Storage):
        return f"not a course_lib Storage: {type(s).__name__}"
    return (s.dtype.name, s.data.tolist(), bool(s.data.flags.writeable))


def _load_run(fn, pids, records):
    rec = _Records(records)
    cache: dict = {}
    got = [fn(pid, rec, cache) for pid in pids]
    same = [a is b for a, b in zip(got, got[1:])]
    return [_storage_summary(s) for s in got], f"{rec.reads} reads", same, sorted(cache)


def _pload_cases(fn):
    records = {
        "data/0": np.arange(4, dtype=np.float32).tobytes(),
        "data/1": np.array([-5, 7], dtype=np.int64).tobytes(),
        "data/2": np.array([True, False, True]).tobytes(),
        "data/3": np.array([0.5, -2.0], dtype=np.float16).tobytes(),
        "data/4": bytes([1, 255]),
        "data/5": b"",
    }
    good = [
        ("a float32 storage", [("storage", "FloatStorage", "0", "cpu", 4)]),
        ("the same key twice: read once, same object", [("storage", "FloatStorage", "0", "cpu", 4)] * 2),
        ("int64 then bool", [("storage", "LongStorage", "1", "cpu", 2), ("storage", "BoolStorage", "2", "cpu", 3)]),
        ("float16, uint8 and an empty one", [("storage", "HalfStorage", "3", "cpu", 2),
                                             ("storage", "ByteStorage", "4", "cpu", 2),
                                             ("storage", "FloatStorage", "5", "cpu", 0)]),
    ]
    from course_lib import serialization as S

    def reference(pid, read_record, cache):
        key = pid[2]
        if key not in cache:
            dtype = S._STORAGE_TYPES[pid[1]].dtype
            arr = np.frombuffer(read_record(f"data/{key}"), dtype.np).copy()
            cache[key] = _cl().Storage(arr, dtype)
        return cache[key]

    out = []
    for label, pids in good:
        out.append(Case(f"{label}: tensor_persistent_load(pid, read_record, cache) for pid in {pids!r}",
                        lambda p=pids: _load_run(fn, p, records), _load_run(reference, pids, records)))
    bad = [
        (("storage", "FloatStorage", "0", "cpu", 5), "RuntimeError"),   # the record holds 4 floats, not 5
        (("storage", "LongStorage", "1", "cpu", 1), "RuntimeError"),
        (("module", "os", "system", "cpu", 1), "UnpicklingError"),
    ]
    for pid, exc in bad:
        out.append(Case(f"tensor_persistent_load({pid!r}, read_record, {{}}) raises",
                        lambda p=pid: _raised_type(fn, p, _Records(records), {}), exc))
    return out


@exercise("07.4", title="tensor_persistent_load", points=2,
          hint="check pid[0] == 'storage' (else pickle.UnpicklingError); return cache[key] if it is there; "
               "else read f'data/{key}', check len(data) == numel * dtype.itemsize (else RuntimeError), "
               "np.frombuffer(data, dtype.np).copy() (frombuffer alone is read-only), wrap it in "
               "cl.Storage(array, dtype) and remember it in cache.")
def _tensor_persistent_load(tensor_persistent_load):
    return _pload_cases(tensor_persistent_load)


# ------------------------------------------------------------------ 07.3 rebuild_tensor


def _tensor_summary(t, storage):
    cl = _cl()
    if not isinstance(t, cl.Tensor):
        return f"not a course_lib Tensor: {type(t).__name__}"
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.dtype.name, np.array(t._np()).tolist(),
            "shares the storage" if t._storage is storage else "does not share the storage")


def _rebuild_run(fn, args):
    cl = _cl()
    storage = cl.arange(6.)._storage
    return _tensor_summary(fn(storage, *args), storage)


@exercise("07.3", title="rebuild_tensor", points=2,
          hint="cl.Tensor._make(storage, storage_offset, tuple(size), tuple(stride), storage.dtype) makes the "
               "view without copying; before that raise RuntimeError if a size, stride or the offset is "
               "negative, if len(size) != len(stride), or if a non-empty view's last element, "
               "offset + sum((n - 1) * s), is not < len(storage).")
def _rebuild_tensor(rebuild_tensor):
    from course_lib import serialization as S

    def reference(storage, offset, size, stride):
        return S._rebuild_tensor(storage, offset, size, stride)

    good = [(0, (2, 3), (3, 1)), (2, (4,), (1,)), (0, (3, 2), (1, 3)), (1, (2, 2), (1, 2)), (5, (), ()),
            (3, (), ()), (0, (6,), (1,)), (6, (0,), (1,)), (0, (2, 0, 3), (0, 3, 1)), (0, (2, 3), (0, 1)),
            (4, (1, 2), (7, 1)),
            # empty views read nothing, so they fit wherever they start (PyTorch's set_ accepts them too)
            (7, (0,), (1,)), (100, (0, 3), (3, 1))]
    out = []
    for args in good:
        out.append(Case(f"rebuild_tensor(arange(6.) storage, {', '.join(map(repr, args))})",
                        lambda a=args: _rebuild_run(rebuild_tensor, a), _rebuild_run(reference, args)))
    bad = [(1, (2, 3), (3, 1)), (0, (7,), (1,)), (6, (), ()), (0, (2,), (-1,)), (0, (2, 3), (1,)),
           (-1, (2,), (1,)), (0, (-2,), (1,)), (3, (2, 2), (2, 1))]
    for args in bad:
        out.append(Case(f"rebuild_tensor(arange(6.) storage, {', '.join(map(repr, args))}) raises",
                        lambda a=args: _raised_type(lambda: _rebuild_run(rebuild_tensor, a)), "RuntimeError"))
    return out


# ------------------------------------------------------------------ 07.5 write_archive


def _write_run(fn, prefix, obj):
    """(record names in order, compressed ones, ones with wrong bytes, what course_lib.load makes of it)."""
    from course_lib import serialization as S

    buf = io.BytesIO()
    pickler = S._Pickler(buf, 2)
    pickler.dump(obj)
    data_pkl = buf.getvalue()
    expected = {f"{prefix}/data.pkl": data_pkl, f"{prefix}/byteorder": b"little", f"{prefix}/version": b"3\n"}
    expected.update({f"{prefix}/data/{k}": s.data.tobytes() for k, s in pickler.storages.items()})
    out = io.BytesIO()
    fn(out, prefix, data_pkl, dict(pickler.storages))
    raw = out.getvalue()
    try:
        infos = zipfile.ZipFile(io.BytesIO(raw)).infolist()
    except zipfile.BadZipFile:
        return "not a zip archive"
    z = zipfile.ZipFile(io.BytesIO(raw))
    records = [i.filename for i in infos]
    compressed = [i.filename for i in infos if i.compress_type != zipfile.ZIP_STORED]
    wrong = [n for n in records if n in expected and z.read(n) != expected[n]]
    try:
        loaded = _cl().load(io.BytesIO(raw))
        load = ("course_lib.load gives back the object" if _describe(loaded) == _describe(obj)
                else "course_lib.load gives a different object")
    except Exception as e:  # noqa: BLE001
        load = f"course_lib.load fails: {type(e).__name__}"
    return (records, f"compressed: {compressed}", f"wrong bytes: {wrong}", load)


def _reference_write(f, prefix, data_pkl, storages):
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(f"{prefix}/data.pkl", data_pkl)
        z.writestr(f"{prefix}/byteorder", b"little")
        for key, storage in storages.items():
            z.writestr(f"{prefix}/data/{key}", storage.data.tobytes())
        z.writestr(f"{prefix}/version", b"3\n")


@exercise("07.5", title="write_archive", points=2,
          hint="with zipfile.ZipFile(f, 'w', compression=zipfile.ZIP_STORED) as z: z.writestr(name, bytes) "
               "for data.pkl first, then byteorder (b'little'), each data/<key> (storage.data.tobytes()) in "
               "the dict's order, and version (b'3\\n'); every name starts with prefix + '/'.")
def _write_archive(write_archive):
    out = []
    for (label, obj), prefix in zip(_sample_objects(), ["archive", "model", "sd", "checkpoint"]):
        out.append(Case(f"write_archive(BytesIO(), {prefix!r}, data_pkl, storages) of {label}",
                        lambda p=prefix, o=obj: _write_run(write_archive, p, o),
                        _write_run(_reference_write, prefix, obj)))
    return out


# ------------------------------------------------------------------ 07.6 RestrictedUnpickler


def _program(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


def _call(module: str, name: str, *args: str) -> bytes:
    strs = b"".join(b"X" + len(a.encode()).to_bytes(4, "little") + a.encode() for a in args)
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n(" + strs + b"tR"


_RECORD_PATH = f"{__name__}._record"
_EVAL_SOURCE = f"__import__({__name__!r}, fromlist=['_record'])._record('eval ran')"


def _unpickle_run(cls, data: bytes, allowed: dict):
    RECORDED.clear()
    try:
        obj = cls(io.BytesIO(data), dict(allowed)).load()
        result = ("loaded", obj)
    except NotImplementedError:
        raise
    except pickle.UnpicklingError as e:
        names = [n for n in ("posix.system", "os.system", "nt.system", "sys.exit", "__builtin__.eval",
                             "commands.check_call", _RECORD_PATH) if n in str(e)]
        result = ("UnpicklingError", f"names {names[0]}" if names else "does not name the global")
    except Exception as e:  # noqa: BLE001
        result = (type(e).__name__, str(e)[:60])
    ran = list(RECORDED)
    RECORDED.clear()
    return result + (f"payload calls: {len(ran)}",)


def _find_class_cases(cls):
    safe = {"collections.OrderedDict": OrderedDict, f"{__name__}.Point": Point}
    # If a name slips through, the "dangerous" function is really _record: harmless, but noticed.
    trap = dict(safe, **{"posix.system": _record, "os.system": _record, "nt.system": _record,
                         "sys.exit": _record})
    od = OrderedDict([("a", 1), ("b", [2, 3])])
    cases = [
        ("an OrderedDict", pickle.dumps(od, protocol=2), safe, ("loaded", od)),
        ("an allowlisted class, Point(1, 2)", pickle.dumps(Point(1, 2), protocol=2), safe, ("loaded", Point(1, 2))),
        ("a module whose name starts with 'os' is not os",
         _program(_call("ossify", "Point", "1", "2")), dict(safe, **{"ossify.Point": Point}), ("loaded", Point("1", "2"))),
        ("posix.system, even though it is in `allowed`", _program(_call("posix", "system", "touch x")), trap,
         ("UnpicklingError", "names posix.system")),
        ("os.system, even though it is in `allowed`", _program(_call("os", "system", "touch x")), trap,
         ("UnpicklingError", "names os.system")),
        ("nt.system, even though it is in `allowed`", _program(_call("nt", "system", "dir")), trap,
         ("UnpicklingError", "names nt.system")),
        ("sys.exit, even though it is in `allowed`", _program(_call("sys", "exit", "bye")), trap,
         ("UnpicklingError", "names sys.exit")),
        ("eval (not in `allowed`)", _program(_call("__builtin__", "eval", _EVAL_SOURCE)), safe,
         ("UnpicklingError", "names __builtin__.eval")),
        ("subprocess.check_call (not in `allowed`)", _program(_call("commands", "check_call", "touch")), safe,
         ("UnpicklingError", "names commands.check_call")),
        ("a function that is not in `allowed`", pickle.dumps(_Reduce(_record, "ran"), protocol=2), safe,
         ("UnpicklingError", f"names {_RECORD_PATH}")),
    ]
    return [Case(f"RestrictedUnpickler(BytesIO(<{label}>), allowed).load()",
                 lambda d=data, a=allowed: _unpickle_run(cls, d, a), expected + ("payload calls: 0",))
            for label, data, allowed, expected in cases]


class _Reduce:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


@exercise("07.6", title="RestrictedUnpickler", points=2,
          hint="in find_class(self, module, name): full = f'{module}.{name}'; if module in BLOCKED_MODULES "
               "raise pickle.UnpicklingError (before looking at the allowlist!); if full is in self.allowed "
               "return self.allowed[full]; otherwise raise pickle.UnpicklingError naming full. Never call "
               "super().find_class.")
def _restricted_unpickler(RestrictedUnpickler):
    if not (isinstance(RestrictedUnpickler, type) and issubclass(RestrictedUnpickler, pickle.Unpickler)):
        raise TypeError("RestrictedUnpickler must be a subclass of pickle.Unpickler")
    return _find_class_cases(RestrictedUnpickler)


# ------------------------------------------------------------------ 07.7 my_load


def _my_load_run(fn, raw: bytes):
    return _describe(fn(io.BytesIO(raw)))


#: a small checkpoint written by real torch.save (torch 2.13.0), shipped beside this file
#: (make_torch_file.py writes it): its records are in the folder "from_torch/"
TORCH_FILE = Path(__file__).resolve().with_name("from_torch.pt")


def _saved_to_path(obj, name: str) -> bytes:
    """The bytes of ``course_lib.save(obj, <a temporary folder>/name)``: the archive's folder is the file's stem."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        _cl().save(obj, path)
        return path.read_bytes()


def _my_load_refuses(fn):
    raw = _saved({"w": _cl().ones(2), "gift": [_Reduce(_record, "from a checkpoint")]})
    RECORDED.clear()
    try:
        fn(io.BytesIO(raw))
        result = "loaded"
    except NotImplementedError:
        raise
    except pickle.UnpicklingError:
        result = "UnpicklingError"
    except Exception as e:  # noqa: BLE001
        result = type(e).__name__
    ran = len(RECORDED)
    RECORDED.clear()
    return (result, f"payload calls: {ran}")


@exercise("07.7", title="my_load", points=2,
          hint="open zipfile.ZipFile(f); the prefix is the first name up to '/'; read_record(name) reads "
               "f'{prefix}/{name}'; allowed maps 'collections.OrderedDict', 'torch._utils._rebuild_tensor_v2' "
               "(a function calling your rebuild_tensor) and 'torch.FloatStorage' & co. (to the storage "
               "names); set unpickler.persistent_load to call tensor_persistent_load with ONE cache dict.")
def _my_load(my_load):
    out = []
    for label, obj in _sample_objects():
        raw = _saved(obj)
        out.append(Case(f"my_load(BytesIO(<course_lib.save of {label}>))",
                        lambda r=raw: _my_load_run(my_load, r), _my_load_run(_cl().load, raw)))
    label, obj = _sample_objects()[0]
    raw = _saved_to_path(obj, "views.pt")
    out.append(Case(f"my_load(open('views.pt', 'rb')), course_lib.save of {label} to that path (folder 'views/')",
                    lambda r=raw: _my_load_run(my_load, r), _my_load_run(_cl().load, raw)))
    raw = TORCH_FILE.read_bytes()
    out.append(Case("my_load(open('from_torch.pt', 'rb')), written by torch.save (torch 2.13.0)",
                    lambda r=raw: _my_load_run(my_load, r), _my_load_run(_cl().load, raw)))
    out.append(Case("my_load(BytesIO(<a checkpoint with a payload inside>))", lambda: _my_load_refuses(my_load),
                    ("UnpicklingError", "payload calls: 0")))
    return out
