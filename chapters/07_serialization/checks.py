"""Checks for chapter 07 (serialization).

Expected values come from course_lib's library, run in the grader (its pickler's ``persistent_id``,
``_rebuild_tensor``, ``course_lib.save`` and ``course_lib.load``), from numpy on the bytes a case
hands over, or from how the case was built (the records an archive must hold; what a payload must
do). Storages, unpicklers, payloads and checkpoints with a payload inside cannot travel to the
kernel (and this module is not importable in the grader, so nothing that pickles one of its names
is built there): the probes build them in the kernel from names, seeds or bytes. Every payload a
check feeds to the learner's code is harmless: if it runs, it only appends to ``RECORDED`` below,
which is how a probe notices that it ran.
"""
from __future__ import annotations

import io
import pickle
import tempfile
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np

import course_lib as cl
from course.checks import exercise, probe
from course_lib import _weights_only_unpickler as W
from course_lib import serialization as S

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


class _Reduce:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


# ------------------------------------------------------------------ describing loaded objects


def _describe(obj, groups: dict | None = None):
    """A comparable summary: tensors by dtype, geometry, values and which storage they share."""
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
    if type(obj) in (str, int, float, bool, type(None)):
        return obj
    return f"<{type(obj).__name__} object>"


def _saved(obj) -> bytes:
    buf = io.BytesIO()
    cl.save(obj, buf)
    return buf.getvalue()


def _sample_objects() -> dict:
    """Fresh checkpoints to save, built the same way on every call (seeded)."""
    rng = np.random.default_rng(7)
    base = cl.from_numpy(rng.standard_normal(12).astype(np.float32))
    sd = OrderedDict([("0.weight", cl.from_numpy(rng.standard_normal((3, 2)).astype(np.float32))),
                      ("0.bias", cl.zeros(3)), ("1.num_batches_tracked", cl.tensor(4))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("0", {"version": 1})])
    return {
        "views of one storage": {"base": base, "tail": base[4:], "grid_t": base.view(3, 4).t(),
                                 "every_other": base[1::2], "copy": base.clone()},
        "a state_dict with _metadata": sd,
        "dtypes, 0-d and empty": [cl.tensor(3), cl.tensor([True, False]), cl.ones(2, 2, dtype=cl.float16),
                                  cl.arange(4, dtype=cl.uint8), cl.empty(0, 3), cl.tensor([-1, 2], dtype=cl.int8)],
        "nested containers": {"model": {"w": cl.arange(6.).view(2, 3)}, "history": [(1, 0.5), (2, 0.25)],
                              "name": "run-7", "step": 3},
    }


_DTYPES = [cl.float32, cl.float64, cl.float16, cl.int64, cl.int32, cl.int8, cl.uint8, cl.bool]


def _random_checkpoint(seed: int) -> OrderedDict:
    """A random checkpoint: tensors of random dtypes and shapes, some of them views of another, in
    dicts, lists and tuples."""
    r = np.random.default_rng(seed)
    out: OrderedDict = OrderedDict()
    for k in range(int(r.integers(2, 5))):
        dtype = _DTYPES[int(r.integers(0, len(_DTYPES)))]
        shape = tuple(int(n) for n in r.integers(1, 5, size=int(r.integers(1, 3))))
        t = cl.from_numpy(_numbers(r, shape, dtype.np))
        out[f"t{k}"] = t
        if r.random() < 0.5:
            out[f"t{k}_view"] = t.reshape(-1)[int(r.integers(0, t.numel())):]
    if r.random() < 0.5:
        out["list"] = [out["t0"], int(r.integers(0, 100)), ("tag", float(np.round(r.random(), 3)))]
    return out


def _numbers(r, shape: tuple, np_dtype) -> np.ndarray:
    """Random values of `shape` that `np_dtype` holds exactly (small integers for the integer types)."""
    if np.dtype(np_dtype).kind == "f":
        return np.round(r.standard_normal(shape) * 5, 2).astype(np_dtype)
    return r.integers(0 if np.dtype(np_dtype).kind in "ub" else -9, 2 if np.dtype(np_dtype).kind == "b" else 10,
                      size=shape).astype(np_dtype)


def _checkpoint(spec):
    return _random_checkpoint(spec) if isinstance(spec, int) else _sample_objects()[spec]


def _checkpoint_text(spec) -> str:
    return f"_random_checkpoint({spec})" if isinstance(spec, int) else spec


# ------------------------------------------------------------------ 07.1 make_payload


def _payload_run(make_payload, args: tuple) -> dict:
    """Probe: when the payload calls the function (making, pickling, unpickling it) and what loads returns."""
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


_RECORD_PATH = f"{__name__}._record"


def _payload_refused(make_payload) -> tuple:
    """Probe: what course_lib's weights_only unpickler does with a payload, and whether it ran."""
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
def _make_payload(rng):
    words = ["hello", "rm -rf /", "x", "", "checkpoint", "λ"]
    arg_sets: list = [("hello",), (1, 2, 3), ()]
    arg_sets.append(tuple(str(w) for w in rng.choice(words, size=int(rng.integers(1, 4)))))
    arg_sets.append(tuple(int(v) for v in rng.integers(-99, 100, size=int(rng.integers(1, 4)))))
    out = []
    for args in arg_sets:
        expected = {"calls while making it": 0, "calls while pickling": 0, "calls while unpickling": [args],
                    "pickle.loads returned": f"recorded {args!r}"}
        label = f"pickle.loads(pickle.dumps(make_payload({', '.join(['record', *map(repr, args)])})))"
        out.append(probe(_payload_run, args, expected=expected, label=label))
    out.append(probe(_payload_refused, expected=("refused, naming the function", "0 calls"),
                     label="course_lib's weights_only unpickler on make_payload(record, 'should not run')"))
    return out


# ------------------------------------------------------------------ 07.2 tensor_persistent_id


def _pid_objects() -> dict:
    """The objects a persistent_id case may pass, by name (fresh ones each call)."""
    s_float = cl.arange(6.)._storage
    t = cl.ones(2)
    return {
        "3": 3, "'x'": "x", "None": None, "[1, 2]": [1, 2], "<tensor>": t, "<tensor>'s storage": t._storage,
        "<float32 storage of 6>": s_float,
        "<int64 storage of 3>": cl.arange(3)._storage,
        "<float32 storage of 6, equal bytes>": cl.Storage(s_float.data.copy(), cl.float32),
        "<bool storage of 2>": cl.tensor([True, False])._storage,
        "<float16 storage of 0>": cl.empty(0, dtype=cl.float16)._storage,
        "<float32 storage of 5 on meta>": cl.empty(5, device="meta")._storage,
        "<float64 storage of 4>": cl.zeros(4, dtype=cl.float64)._storage,
        "<uint8 storage of 3>": cl.zeros(3, dtype=cl.uint8)._storage,
    }


_STORAGE_OBJECTS = [n for n in _pid_objects() if "storage" in n]


def _pid_sequence(tensor_persistent_id, names: list) -> tuple:
    """Probe: call it on each named object in turn with one shared dict; its results and the dict's contents."""
    pool = _pid_objects()
    objs = [pool[n] for n in names]
    storages: dict = {}
    results = [tensor_persistent_id(o, storages) for o in objs]
    return results, _contents(storages, objs)


def _contents(storages, objs: list):
    index = {id(o): i for i, o in enumerate(objs)}
    if not isinstance(storages, dict):
        return f"<{type(storages).__name__} object>"
    return {k: f"object #{index.get(id(v), '?')}" for k, v in storages.items()}


def _library_pids(names: list) -> tuple:
    """What course_lib's pickler's persistent_id gives for the same objects (storage types by name)."""
    pool = _pid_objects()
    objs = [pool[n] for n in names]
    pickler = S._Pickler(io.BytesIO())
    results = []
    for o in objs:
        pid = pickler.persistent_id(o)
        results.append(None if pid is None else (pid[0], pid[1].name) + tuple(pid[2:]))
    return results, _contents(pickler.storages, objs)


@exercise("07.2", title="tensor_persistent_id", points=2,
          hint="None unless isinstance(obj, cl.Storage); look for obj among storages.values() by identity "
               "(`is`), else add it under the key str(len(storages)); return ('storage', "
               "STORAGE_NAMES[obj.dtype], key, str(obj.device), obj.size()).")
def _tensor_persistent_id(rng):
    sequences = [
        ["3", "'x'", "None", "[1, 2]", "<tensor>"],
        ["<float32 storage of 6>"],
        ["<float32 storage of 6>", "<float32 storage of 6>"],
        ["<float32 storage of 6>", "<int64 storage of 3>", "<float32 storage of 6>"],
        ["<float32 storage of 6>", "<float32 storage of 6, equal bytes>"],
        ["<tensor>", "<tensor>'s storage"],
        ["<bool storage of 2>", "<float16 storage of 0>", "<float32 storage of 5 on meta>"],
    ]
    for _ in range(3):  # storages (some repeated) and an object that is not one, in a random order
        pick = [str(n) for n in rng.choice(_STORAGE_OBJECTS, size=int(rng.integers(3, 7)))]
        pick.insert(int(rng.integers(0, len(pick) + 1)), str(rng.choice(["3", "'x'", "<tensor>"])))
        sequences.append(pick)
    return [probe(_pid_sequence, names, expected=_library_pids(names),
                  label=f"storages = {{}}; [tensor_persistent_id(o, storages) for o in [{', '.join(names)}]]; "
                        "storages")
            for names in sequences]


# ------------------------------------------------------------------ 07.3 rebuild_tensor


def _tensor_summary(t, storage):
    if type(t) is not cl.Tensor:
        return f"not a course_lib Tensor: {type(t).__name__}"
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.dtype.name, np.array(t._np()).tolist(),
            "shares the storage" if t._storage is storage else "does not share the storage")


def _rebuild_run(rebuild_tensor, offset: int, size: tuple, stride: tuple):
    """Probe: rebuild_tensor on the storage of arange(6.); the tensor it makes, summarised."""
    storage = cl.arange(6.)._storage
    return _tensor_summary(rebuild_tensor(storage, offset, size, stride), storage)


def _rebuild_trial(args: tuple):
    label = f"rebuild_tensor(arange(6.) storage, {', '.join(map(repr, args))})"
    try:
        expected = _rebuild_run(S._rebuild_tensor, *args)
    except RuntimeError:
        return probe(_rebuild_run, *args, raises=RuntimeError, label=label + " raises")
    return probe(_rebuild_run, *args, expected=expected, label=label)


@exercise("07.3", title="rebuild_tensor", points=2,
          hint="cl.Tensor._make(storage, storage_offset, tuple(size), tuple(stride), storage.dtype) makes the "
               "view without copying; before that raise RuntimeError if a size, stride or the offset is "
               "negative, if len(size) != len(stride), or if a non-empty view's last element, "
               "offset + sum((n - 1) * s), is not < len(storage).")
def _rebuild_tensor(rng):
    cases = [(0, (2, 3), (3, 1)), (2, (4,), (1,)), (0, (3, 2), (1, 3)), (1, (2, 2), (1, 2)), (5, (), ()),
             (3, (), ()), (0, (6,), (1,)), (6, (0,), (1,)), (0, (2, 0, 3), (0, 3, 1)), (0, (2, 3), (0, 1)),
             (4, (1, 2), (7, 1)),
             # empty views read nothing, so they fit wherever they start (PyTorch's set_ accepts them too)
             (7, (0,), (1,)), (100, (0, 3), (3, 1)),
             (1, (2, 3), (3, 1)), (0, (7,), (1,)), (6, (), ()), (0, (2,), (-1,)), (0, (2, 3), (1,)),
             (-1, (2,), (1,)), (0, (-2,), (1,)), (3, (2, 2), (2, 1))]
    for _ in range(5):  # random geometry: about half of it fits in the 6 elements
        ndim = int(rng.integers(0, 4))
        size = tuple(int(n) for n in rng.integers(0 if rng.random() < 0.2 else 1, 4, size=ndim))
        stride = tuple(int(s) for s in rng.integers(0, 4, size=ndim))
        cases.append((int(rng.integers(0, 8)), size, stride))
    return [_rebuild_trial(args) for args in cases]


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
    if type(s) is not cl.Storage:
        return f"not a course_lib Storage: {type(s).__name__}"
    return (s.dtype.name, s.data.tolist(), bool(s.data.flags.writeable))


def _load_run(tensor_persistent_load, pids: list, records: dict) -> tuple:
    """Probe: load each pid in turn with one cache; (storages, reads, consecutive results identical?, cache keys)."""
    rec = _Records(records)
    cache: dict = {}
    got = [tensor_persistent_load(pid, rec, cache) for pid in pids]
    same = [a is b for a, b in zip(got, got[1:])]
    return [_storage_summary(s) for s in got], f"{rec.reads} reads", same, sorted(cache)


def _load_one(tensor_persistent_load, pid: tuple, records: dict):
    """Probe: one pid with a fresh cache (for the pids that must be refused)."""
    return _storage_summary(tensor_persistent_load(pid, _Records(records), {}))


_NP_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
              "LongStorage": np.int64, "IntStorage": np.int32, "CharStorage": np.int8, "ByteStorage": np.uint8,
              "BoolStorage": np.bool_}


def _expected_loads(pids: list, records: dict) -> tuple:
    """What the loads must give, from the records' bytes read with numpy: one read per key, one object per key."""
    summaries = []
    for _, name, key, _, _ in pids:
        arr = np.frombuffer(records[f"data/{key}"], _NP_DTYPES[name])
        summaries.append((cl.from_numpy(arr.copy()).dtype.name, arr.tolist(), True))
    keys = [p[2] for p in pids]
    return summaries, f"{len(set(keys))} reads", [a == b for a, b in zip(keys, keys[1:])], sorted(set(keys))


@exercise("07.4", title="tensor_persistent_load", points=2,
          hint="check pid[0] == 'storage' (else pickle.UnpicklingError); return cache[key] if it is there; "
               "else read f'data/{key}', check len(data) == numel * dtype.itemsize (else RuntimeError), "
               "np.frombuffer(data, dtype.np).copy() (frombuffer alone is read-only), wrap it in "
               "cl.Storage(array, dtype) and remember it in cache.")
def _tensor_persistent_load(rng):
    records = {
        "data/0": np.arange(4, dtype=np.float32).tobytes(),
        "data/1": np.array([-5, 7], dtype=np.int64).tobytes(),
        "data/2": np.array([True, False, True]).tobytes(),
        "data/3": np.array([0.5, -2.0], dtype=np.float16).tobytes(),
        "data/4": bytes([1, 255]),
        "data/5": b"",
    }
    fixed = {"0": ("FloatStorage", 4), "1": ("LongStorage", 2), "2": ("BoolStorage", 3), "3": ("HalfStorage", 2),
             "4": ("ByteStorage", 2), "5": ("FloatStorage", 0)}
    # random records: each key holds numbers of a random storage type
    names = list(_NP_DTYPES)
    for k in range(6, 9):
        name = names[int(rng.integers(0, len(names)))]
        n = int(rng.integers(1, 6))
        records[f"data/{k}"] = _numbers(rng, (n,), _NP_DTYPES[name]).tobytes()
        fixed[str(k)] = (name, n)

    def pid(key):
        return ("storage", fixed[key][0], key, "cpu", fixed[key][1])

    sequences = [
        ("a float32 storage", [pid("0")]),
        ("the same key twice: read once, same object", [pid("0")] * 2),
        ("int64 then bool", [pid("1"), pid("2")]),
        ("float16, uint8 and an empty one", [pid("3"), pid("4"), pid("5")]),
    ]
    for _ in range(2):
        keys = [str(k) for k in rng.choice(["6", "7", "8", "0", "1"], size=int(rng.integers(2, 6)))]
        sequences.append(("random keys, some repeated", [pid(k) for k in keys]))
    out = [probe(_load_run, pids, records, expected=_expected_loads(pids, records),
                 label=f"{label}: tensor_persistent_load(pid, read_record, cache) for pid in {pids!r}")
           for label, pids in sequences]
    key = str(rng.choice(["6", "7", "8"]))
    bad = [(("storage", "FloatStorage", "0", "cpu", 5), RuntimeError),   # the record holds 4 floats, not 5
           (("storage", "LongStorage", "1", "cpu", 1), RuntimeError),
           (("storage", fixed[key][0], key, "cpu", fixed[key][1] + 1), RuntimeError),
           (("module", "os", "system", "cpu", 1), pickle.UnpicklingError)]
    for p, exc in bad:
        out.append(probe(_load_one, p, records, raises=exc, label=f"tensor_persistent_load({p!r}, read_record, {{}}) "
                                                                  "raises"))
    return out


# ------------------------------------------------------------------ 07.5 write_archive


def _write_run(write_archive, prefix: str, spec) -> dict:
    """Probe: the archive write_archive makes of a checkpoint's data.pkl and storages, examined."""
    obj = _checkpoint(spec)
    buf = io.BytesIO()
    pickler = S._Pickler(buf, 2)
    pickler.dump(obj)
    data_pkl = buf.getvalue()
    right = {f"{prefix}/data.pkl": data_pkl, f"{prefix}/byteorder": b"little", f"{prefix}/version": b"3\n"}
    right.update({f"{prefix}/data/{k}": s.data.tobytes() for k, s in pickler.storages.items()})
    out = io.BytesIO()
    write_archive(out, prefix, data_pkl, dict(pickler.storages))
    raw = out.getvalue()
    try:
        z = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        return {"zip archive": False}
    infos = z.infolist()
    try:
        loaded = cl.load(io.BytesIO(raw))
        load = "gives back the object" if _describe(loaded) == _describe(_checkpoint(spec)) \
            else "gives a different object"
    except Exception as e:  # noqa: BLE001
        load = f"fails: {type(e).__name__}"
    return {"zip archive": True, "records": [i.filename for i in infos],
            "compressed": [i.filename for i in infos if i.compress_type != zipfile.ZIP_STORED],
            "wrong bytes": [i.filename for i in infos
                            if i.filename in right and z.read(i.filename) != right[i.filename]],
            "course_lib.load": load}


def _archive_expected(prefix: str, spec) -> dict:
    """The records the archive must hold, in order: data.pkl, byteorder, each storage, version."""
    pickler = S._Pickler(io.BytesIO(), 2)
    pickler.dump(_checkpoint(spec))
    records = [f"{prefix}/data.pkl", f"{prefix}/byteorder"] + [f"{prefix}/data/{k}" for k in pickler.storages] + \
        [f"{prefix}/version"]
    return {"zip archive": True, "records": records, "compressed": [], "wrong bytes": [],
            "course_lib.load": "gives back the object"}


@exercise("07.5", title="write_archive", points=2,
          hint="with zipfile.ZipFile(f, 'w', compression=zipfile.ZIP_STORED) as z: z.writestr(name, bytes) "
               "for data.pkl first, then byteorder (b'little'), each data/<key> (storage.data.tobytes()) in "
               "the dict's order, and version (b'3\\n'); every name starts with prefix + '/'.")
def _write_archive(rng):
    cases: list = list(zip(["archive", "model", "sd", "checkpoint"], _sample_objects()))
    for _ in range(2):
        prefix = "".join(str(c) for c in rng.choice(list("abcdefghij_0123"), size=int(rng.integers(1, 9))))
        cases.append((prefix, int(rng.integers(0, 2**31 - 1))))
    return [probe(_write_run, prefix, spec, expected=_archive_expected(prefix, spec),
                  label=f"write_archive(BytesIO(), {prefix!r}, data_pkl, storages) of {_checkpoint_text(spec)}")
            for prefix, spec in cases]


# ------------------------------------------------------------------ 07.6 RestrictedUnpickler


def _program(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


def _call(module: str, name: str, *args: str) -> bytes:
    strs = b"".join(b"X" + len(a.encode()).to_bytes(4, "little") + a.encode() for a in args)
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n(" + strs + b"tR"


_EVAL_SOURCE = f"__import__({__name__!r}, fromlist=['_record'])._record('eval ran')"

#: what `allowed` may map a name to, by name (a "dangerous" function is really _record: harmless, but noticed)
_ALLOWED_VALUES = {"OrderedDict": OrderedDict, "Point": Point, "record": _record}
_SAFE = {"collections.OrderedDict": "OrderedDict", f"{__name__}.Point": "Point"}
_TRAP = dict(_SAFE, **{"posix.system": "record", "os.system": "record", "nt.system": "record",
                       "sys.exit": "record"})


def _pickled(spec) -> bytes:
    """The pickle to load: bytes as they are, or one built here (it names this module's classes)."""
    if isinstance(spec, bytes):
        return spec
    kind, *args = spec
    obj = {"OrderedDict": lambda: OrderedDict(args[0]), "Point": lambda: Point(*args),
           "reduce": lambda: _Reduce(_record, *args)}[kind]()
    return pickle.dumps(obj, protocol=2)


def _plain(obj):
    """A loaded object as data: Points as ("Point", x, y)."""
    if type(obj) is Point:
        return ("Point", obj.x, obj.y)
    return obj


def _unpickle_run(RestrictedUnpickler, spec, allowed: dict, named: str) -> tuple:
    """Probe: RestrictedUnpickler(BytesIO(data), allowed).load(); what happened (whether an UnpicklingError's
    message names the global `named`), and calls of the payload."""
    if not (isinstance(RestrictedUnpickler, type) and issubclass(RestrictedUnpickler, pickle.Unpickler)):
        return ("not a subclass of pickle.Unpickler", "payload calls: 0")
    RECORDED.clear()
    try:
        allowed_values = {k: _ALLOWED_VALUES[v] for k, v in allowed.items()}
        obj = RestrictedUnpickler(io.BytesIO(_pickled(spec)), allowed_values).load()
        result: tuple = ("loaded", _plain(obj))
    except NotImplementedError:
        raise
    except pickle.UnpicklingError as e:
        result = ("UnpicklingError", f"names {named}" if named in str(e) else "does not name the global")
    except Exception as e:  # noqa: BLE001
        result = (type(e).__name__, str(e)[:60])
    ran = list(RECORDED)
    RECORDED.clear()
    return result + (f"payload calls: {len(ran)}",)


@exercise("07.6", title="RestrictedUnpickler", points=2,
          hint="in find_class(self, module, name): full = f'{module}.{name}'; if module in BLOCKED_MODULES "
               "raise pickle.UnpicklingError (before looking at the allowlist!); if full is in self.allowed "
               "return self.allowed[full]; otherwise raise pickle.UnpicklingError naming full. Never call "
               "super().find_class.")
def _restricted_unpickler(rng):
    od = [("a", 1), ("b", [2, 3])]
    cases = [
        ("an OrderedDict", ("OrderedDict", od), _SAFE, ("loaded", OrderedDict(od))),
        ("an allowlisted class, Point(1, 2)", ("Point", 1, 2), _SAFE, ("loaded", ("Point", 1, 2))),
        ("a module whose name starts with 'os' is not os", _program(_call("ossify", "Point", "1", "2")),
         dict(_SAFE, **{"ossify.Point": "Point"}), ("loaded", ("Point", "1", "2"))),
        ("posix.system, even though it is in `allowed`", _program(_call("posix", "system", "touch x")), _TRAP,
         ("UnpicklingError", "names posix.system")),
        ("os.system, even though it is in `allowed`", _program(_call("os", "system", "touch x")), _TRAP,
         ("UnpicklingError", "names os.system")),
        ("nt.system, even though it is in `allowed`", _program(_call("nt", "system", "dir")), _TRAP,
         ("UnpicklingError", "names nt.system")),
        ("sys.exit, even though it is in `allowed`", _program(_call("sys", "exit", "bye")), _TRAP,
         ("UnpicklingError", "names sys.exit")),
        ("eval (not in `allowed`)", _program(_call("__builtin__", "eval", _EVAL_SOURCE)), _SAFE,
         ("UnpicklingError", "names __builtin__.eval")),
        ("subprocess.check_call (not in `allowed`)", _program(_call("commands", "check_call", "touch")), _SAFE,
         ("UnpicklingError", "names commands.check_call")),
        ("a function that is not in `allowed`", ("reduce", "ran"), _SAFE, ("UnpicklingError", f"names {_RECORD_PATH}")),
    ]
    x, y = (int(v) for v in rng.integers(-50, 50, size=2))
    cases.append((f"an allowlisted class, Point({x}, {y})", ("Point", x, y), _SAFE, ("loaded", ("Point", x, y))))
    module = str(rng.choice(["os", "posix", "nt", "sys"]))
    name = str(rng.choice(["system", "exit", "popen", "execv", "remove"]))
    cases.append((f"{module}.{name}, even though it is in `allowed`", _program(_call(module, name, "touch y")),
                  dict(_SAFE, **{f"{module}.{name}": "record"}), ("UnpicklingError", f"names {module}.{name}")))
    out = []
    for label, spec, allowed, expected in cases:
        named = expected[1][len("names "):] if expected[0] == "UnpicklingError" else ""
        out.append(probe(_unpickle_run, spec, allowed, named, expected=expected + ("payload calls: 0",),
                         label=f"RestrictedUnpickler(BytesIO(<{label}>), allowed).load()"))
    return out


# ------------------------------------------------------------------ 07.7 my_load


#: a small checkpoint written by real torch.save (torch 2.13.0), shipped beside this file
#: (make_torch_file.py writes it): its records are in the folder "from_torch/"
TORCH_FILE = Path(__file__).resolve().with_name("from_torch.pt")
_TORCH_BYTES = TORCH_FILE.read_bytes()


def _my_load_run(my_load, raw: bytes):
    """Probe: what my_load makes of the file's bytes, summarised (dtypes, geometry, values, shared storages)."""
    return _describe(my_load(io.BytesIO(raw)))


def _saved_to_path(obj, name: str) -> bytes:
    """The bytes of ``course_lib.save(obj, <a temporary folder>/name)``: the archive's folder is the file's stem."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        cl.save(obj, path)
        return path.read_bytes()


def _my_load_refuses(my_load) -> tuple:
    """Probe: my_load on a checkpoint with a payload inside (built here); what happened and whether it ran."""
    raw = _saved({"w": cl.ones(2), "gift": [_Reduce(_record, "from a checkpoint")]})
    RECORDED.clear()
    try:
        my_load(io.BytesIO(raw))
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
def _my_load(rng):
    files = [(f"BytesIO(<course_lib.save of {label}>)", _saved(obj)) for label, obj in _sample_objects().items()]
    files.append(("open('views.pt', 'rb')), course_lib.save of views of one storage to that path (folder 'views/'",
                  _saved_to_path(_sample_objects()["views of one storage"], "views.pt")))
    seed = int(rng.integers(0, 2**31 - 1))
    stem = "".join(str(c) for c in rng.choice(list("abcdefgh_0123"), size=int(rng.integers(1, 8))))
    files.append((f"open('{stem}.pt', 'rb')), course_lib.save of _random_checkpoint({seed}) to that path "
                  f"(folder '{stem}/')", _saved_to_path(_random_checkpoint(seed), f"{stem}.pt")))
    files.append(("open('from_torch.pt', 'rb')), written by torch.save (torch 2.13.0)", _TORCH_BYTES))
    out = [probe(_my_load_run, raw, expected=_describe(cl.load(io.BytesIO(raw))), label=f"my_load({label})")
           for label, raw in files]
    out.append(probe(_my_load_refuses, expected=("UnpicklingError", "payload calls: 0"),
                     label="my_load(BytesIO(<a checkpoint with a payload inside>))"))
    return out
