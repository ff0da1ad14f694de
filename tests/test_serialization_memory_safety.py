"""A file cannot corrupt memory or process state through ``course_lib.load`` (weights_only=True).

The attacks here run no code: they use only allowlisted globals, and BUILD (set an
object's state) to point a tensor outside its storage, to change its dtype, or to
rewrite the shared ``device('cpu')`` object.  BUILD does exactly what PyTorch's
weights_only unpickler does with it:

- on a tensor, ``tensor.set_(*state)`` (PyTorch's legacy format), with ``set_``'s checks;
- on a Parameter, ``Tensor.__setstate__``;
- on an ``OrderedDict``, attributes (a state_dict's ``_metadata``), allowed;
- on the other allowlisted types, ``__setstate__`` or the instance's attributes: devices
  and dtypes are immutable, so that fails, with PyTorch's words.

Where PyTorch raises a ``TypeError`` or ``AttributeError`` for malformed data, course_lib
raises ``pickle.UnpicklingError`` whose text carries that error ("malformed pickle data ...
TypeError: set_() received an invalid combination of arguments"): that is its documented
rule for a bad pickle.  Each test also checks that the process state is unchanged.
"""
from __future__ import annotations

import io
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from test_serialization_helpers import arg, binunicode, call, course_pickle, craft, global_op, pickle_program

import course_lib as cl
from course_lib import _device, _dtype
from course_lib import _weights_only_unpickler as W
from course_lib import serialization as S

pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")

P2 = b"\x80\x02"
ORDERED_DICT = global_op("collections", "OrderedDict") + b")R"


def long1(v: int) -> bytes:
    """LONG1: any int, including ones beyond 32 bits."""
    b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(b)]) + b


def int_tuple(values) -> bytes:
    return b"(" + b"".join(long1(v) for v in values) + b"t"


def pid(key: str = "0", numel: int = 4, storage: str = "FloatStorage") -> bytes:
    """The persistent id of storage record data/<key> (BINPERSID included)."""
    return (b"(" + binunicode("storage") + global_op("torch", storage) + binunicode(key) + binunicode("cpu")
            + long1(numel) + b"tQ")


def rebuild(size=(4,), stride=(1,), offset=0, key="0", numel=4) -> bytes:
    """Opcodes for _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())."""
    return (global_op("torch._utils", "_rebuild_tensor_v2") + b"(" + pid(key, numel) + long1(offset)
            + int_tuple(size) + int_tuple(stride) + b"\x89" + ORDERED_DICT + b"tR")


def from_type_v2(state: bytes, inner: bytes | None = None) -> bytes:
    """_rebuild_from_type_v2(_rebuild_tensor_v2, Tensor, (args of rebuild()), state): a tensor
    with Python attributes, as torch.save writes one."""
    args = inner if inner is not None else (pid() + long1(0) + int_tuple((4,)) + int_tuple((1,)) + b"\x89"
                                            + ORDERED_DICT)
    return (global_op("torch._tensor", "_rebuild_from_type_v2") + b"(" + global_op("torch._utils", "_rebuild_tensor_v2")
            + global_op("torch", "Tensor") + b"(" + args + b"t" + state + b"tR")


def dict_of(*pairs) -> bytes:
    return b"}(" + b"".join(arg(k) + v for k, v in pairs) + b"u"


FOUR_FLOATS = {"0": np.arange(4, dtype=np.float32).tobytes()}


def snapshot() -> tuple:
    """The process state a file must never change (devices first made by the file may be added
    to the device cache; the ones there before must stay as they were)."""
    cpu = cl.device("cpu")
    return (cl.get_default_dtype(), id(cpu), cpu.type, cpu.index,
            [(d.name, d.np, d.itemsize, d.category, d.is_signed, d._storage_name) for d in _dtype.ALL_DTYPES],
            set(W._marked_safe_globals_set), dict(W._get_allowed_globals()),
            {k: (v.name, v.dtype) for k, v in S._STORAGE_TYPES.items()}, S._load_state.v3_views)


def device_cache() -> dict:
    return {k: (id(v), v.type, v.index) for k, v in _device._CACHE.items()}


@pytest.fixture
def unchanged():
    """Asserts, after the test, that the process state is what it was, and that new tensors are fine."""
    before, devices = snapshot(), device_cache()
    yield
    assert snapshot() == before
    assert devices.items() <= device_cache().items()
    z = cl.zeros(2, device="cpu")
    assert z.device.type == "cpu" and not z.is_meta and z.tolist() == [0.0, 0.0]
    assert cl.ones(3).to("cpu").device == cl.device("cpu") and cl.ones(3).to("cpu").sum().item() == 3.0
    assert cl.float32.itemsize == 4 and cl.int64.itemsize == 8


def load(pkl: bytes, storages: dict | None = None):
    return cl.load(io.BytesIO(craft(pkl, storages)))


def refused(pkl: bytes, storages: dict | None, error: type, match: str) -> str:
    with pytest.raises(error) as info:
        load(pkl, storages)
    msg = str(info.value)
    assert match in msg, msg
    return msg


def torch_result(pkl: bytes, storages: dict | None = None):
    """What torch.load(weights_only=True) does with the same archive: ('ok', obj) or (error type, text)."""
    torch = pytest.importorskip("torch")
    try:
        return "ok", torch.load(io.BytesIO(craft(pkl, storages)), weights_only=True)
    except Exception as e:  # noqa: BLE001 - we compare whatever torch raises
        text = str(e)
        if "WeightsUnpickler error: " in text:
            text = text.split("WeightsUnpickler error: ", 1)[1]
        return type(e).__name__, text.strip()


# ------------------------------------------------------------------ issue attack 1: BUILD {'dtype': int64}


def test_build_dtype_on_a_tensor_is_refused(unchanged):
    """Loaded, the tensor read 8 bytes per element from a storage of 4-byte floats (heap bytes)."""
    pkl, storages = course_pickle(cl.ones(1000))
    evil = pkl[:-1] + dict_of(("dtype", global_op("torch", "int64"))) + b"b."
    refused(evil, storages, pickle.UnpicklingError,
            "TypeError: set_() received an invalid combination of arguments - got (str), but expected one of:")
    kind, text = torch_result(evil, storages)
    assert kind == "TypeError" and text.startswith("set_() received an invalid combination of arguments - got (str)")


@pytest.mark.parametrize("name, value, torch_kind", [
    ("dtype", global_op("torch", "int64"), "AttributeError"),
    ("shape", int_tuple((1 << 20,)), "AttributeError"),
    ("grad_fn", b"N", "AttributeError"),
    ("device", call("torch", "device", "meta"), "AttributeError"),
    ("data", ORDERED_DICT, "TypeError"),
    ("requires_grad", arg("yes"), "RuntimeError"),
    ("grad", arg(1), "TypeError"),
])
def test_tensor_attributes_from_state_go_through_checked_setters(unchanged, name, value, torch_kind):
    """A tensor's Python attributes (``_rebuild_from_type_v2``'s state) are set as PyTorch's C tensor
    allows: its own attributes are not writable, data/requires_grad/grad are checked."""
    pkl = P2 + from_type_v2(dict_of((name, value))) + b"."
    kind, text = torch_result(pkl, FOUR_FLOATS)
    assert kind == torch_kind, (kind, text)
    ours = text.replace("torch._C.TensorBase", "course_lib.Tensor")
    error = RuntimeError if kind == "RuntimeError" else pickle.UnpicklingError
    msg = refused(pkl, FOUR_FLOATS, error, ours)
    if error is pickle.UnpicklingError:
        assert f"{kind}: {ours}" in msg


def test_a_gradient_on_another_device_is_refused(unchanged):
    meta = (global_op("torch._utils", "_rebuild_meta_tensor_no_storage") + b"(" + global_op("torch", "float32")
            + int_tuple((4,)) + int_tuple((1,)) + b"\x89tR")
    pkl = P2 + from_type_v2(dict_of(("grad", meta))) + b"."
    expected = ("attempting to assign a gradient with device type 'meta' to a tensor with device type 'cpu'. Please "
                "ensure that the gradient and the tensor are on the same device")
    refused(pkl, FOUR_FLOATS, RuntimeError, expected)
    assert torch_result(pkl, FOUR_FLOATS) == ("RuntimeError", expected)


def test_tensor_python_attributes_still_load(unchanged):
    t = load(P2 + from_type_v2(dict_of(("note", arg("hello")), ("grad", rebuild()))) + b".", FOUR_FLOATS)
    assert t.note == "hello" and t.grad.tolist() == [0.0, 1.0, 2.0, 3.0] and t.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_parameter_with_state_is_checked_too(unchanged):
    pkl = (P2 + global_op("torch._utils", "_rebuild_parameter_with_state") + b"(" + rebuild() + b"\x88" + ORDERED_DICT
           + dict_of(("dtype", global_op("torch", "int64"))) + b"tR.")
    refused(pkl, FOUR_FLOATS, pickle.UnpicklingError,
            "AttributeError: attribute 'dtype' of 'course_lib.Tensor' objects is not writable")
    assert torch_result(pkl, FOUR_FLOATS)[0] == "AttributeError"


# ------------------------------------------------------------------ issue attack 2: an OrderedDict posing as a tensor


def fake_tensor() -> bytes:
    """An OrderedDict with a tensor's private fields: a 16-byte storage claimed to hold 2**20 floats."""
    fields = dict_of(("_storage", pid()), ("_offset", long1(0)), ("_shape", int_tuple((1 << 20,))),
                     ("_stride", int_tuple((1,))), ("dtype", global_op("torch", "float32")), ("_np_cache", b"N"))
    return ORDERED_DICT + fields + b"b"


def test_build_data_from_a_fake_tensor_is_refused(unchanged):
    """BUILD {'data': fake} on a real tensor copied the fake's shape over a 16-byte storage."""
    evil = P2 + rebuild() + dict_of(("data", fake_tensor())) + b"b."
    refused(evil, FOUR_FLOATS, pickle.UnpicklingError, "TypeError: set_() received an invalid combination of arguments")
    assert torch_result(evil, FOUR_FLOATS)[0] == "TypeError"


def test_data_from_a_fake_tensor_in_state_is_refused(unchanged):
    evil = P2 + from_type_v2(dict_of(("data", fake_tensor()))) + b"."
    refused(evil, FOUR_FLOATS, pickle.UnpicklingError,
            "TypeError: Variable data has to be a tensor, but got collections.OrderedDict")
    assert torch_result(evil, FOUR_FLOATS) == ("TypeError", "Variable data has to be a tensor, but got "
                                                            "collections.OrderedDict")


def test_ordered_dict_attributes_still_load_as_in_pytorch(unchanged):
    """BUILD on an OrderedDict sets attributes in PyTorch too (state_dict._metadata): it stays allowed.
    The fake is then only an OrderedDict with attributes; no tensor uses it."""
    od = load(P2 + fake_tensor() + b".", FOUR_FLOATS)
    assert type(od) is OrderedDict and od._shape == (1 << 20,) and isinstance(od._storage, cl.Storage)
    kind, value = torch_result(P2 + fake_tensor() + b".", FOUR_FLOATS)
    assert kind == "ok" and value._shape == (1 << 20,)


def test_unsafe_globals_report_matches_pytorch_for_these_files(tmp_path):
    """``get_unsafe_globals_in_checkpoint`` lists globals, as PyTorch's does: these files use only
    allowlisted ones, so both report nothing; the load refuses them for what BUILD does."""
    torch = pytest.importorskip("torch")
    for pkl in (P2 + rebuild() + dict_of(("data", fake_tensor())) + b"b.",
                P2 + call("torch", "device", "cpu") + b"N" + dict_of(("type", arg("meta"))) + b"\x86b."):
        raw = craft(pkl, FOUR_FLOATS)
        assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == []
        assert torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == []


# ------------------------------------------------------------------ issue attack 3: BUILD on device('cpu')


def test_build_on_the_cached_cpu_device_is_refused(unchanged):
    """A ~50-byte pickle turned every later zeros(2, device='cpu') into a meta tensor."""
    evil = pickle_program(call("torch", "device", "cpu") + b"N" + dict_of(("type", arg("meta"))) + b"\x86b")
    assert len(evil) < 60
    refused(evil, None, pickle.UnpicklingError,
            "AttributeError: attribute 'type' of 'course_lib.device' objects is not writable")
    assert torch_result(evil) == ("AttributeError", "attribute 'type' of 'torch.device' objects is not writable")


@pytest.mark.parametrize("state, message", [
    (b"N" + dict_of(("index", arg(3))) + b"\x86", "attribute 'index' of 'course_lib.device' objects is not writable"),
    (b"N" + dict_of(("foo", arg(3))) + b"\x86", "'course_lib.device' object has no attribute 'foo'"),
    (dict_of(("type", arg("meta"))), "'device' object has no attribute '__dict__'"),
])
def test_build_on_a_device_other_states(unchanged, state, message):
    evil = pickle_program(call("torch", "device", "cpu") + state + b"b")
    refused(evil, None, pickle.UnpicklingError, message)
    assert torch_result(evil)[0] == "AttributeError"


def test_devices_and_dtypes_are_immutable_with_pytorchs_words():
    torch = pytest.importorskip("torch")
    cases = [(cl.device("cpu"), torch.device("cpu"), n) for n in ("type", "index", "foo")]
    cases += [(cl.float32, torch.float32, n) for n in ("itemsize", "is_signed", "is_floating_point", "foo")]
    for ours, theirs, name in cases:
        for action in (lambda o: setattr(o, name, 1), lambda o: delattr(o, name)):
            with pytest.raises(AttributeError) as expected:
                action(theirs)
            with pytest.raises(AttributeError) as got:
                action(ours)
            assert str(got.value) == str(expected.value).replace("torch.", "course_lib."), name
    assert cl.device("cpu").type == "cpu" and cl.float32.itemsize == 4


def test_device_index_is_checked_as_in_pytorch():
    torch = pytest.importorskip("torch")
    for args in (("cpu", -1), ("cpu", "x"), ("cpu", True), ("cpu:1", 2)):
        with pytest.raises(Exception) as expected:
            torch.device(*args)
        with pytest.raises(type(expected.value), match="^" + str(expected.value).replace("(", r"\(")
                           .replace(")", r"\)") + "$"):
            cl.device(*args)
    assert cl.device("cpu", 1).index == 1


# ------------------------------------------------------------------ BUILD on the other allowlisted types


_BUILD_TARGETS = {
    "set": global_op("builtins", "set") + b"(]tR",
    "complex": global_op("builtins", "complex") + b"(K\x01K\x02tR",
    "bytearray": global_op("builtins", "bytearray") + b"(" + arg("ab") + arg("latin1") + b"tR",
    "bytes": global_op("_codecs", "encode") + b"(" + arg("ab") + arg("latin1") + b"tR",
    "Size": global_op("torch", "Size") + b"(" + int_tuple((2,)) + b"tR",
    "dtype": global_op("torch", "float32"),
    "StorageType": global_op("torch", "FloatStorage"),
    "OrderedDict": ORDERED_DICT,
    "Counter": global_op("collections", "Counter") + b")R",
    "dict": b"}",
    "function": global_op("torch._utils", "_rebuild_tensor_v2"),
}
_STATES = {"none": b"N", "empty": b"}", "dict": dict_of(("a", arg(1))),
           "slots": b"N" + dict_of(("a", arg(1))) + b"\x86"}


@pytest.mark.parametrize("state", list(_STATES))
@pytest.mark.parametrize("target", list(_BUILD_TARGETS))
def test_build_on_allowlisted_types_does_what_pytorch_does(unchanged, target, state):
    """For each allowlisted type and kind of state, course_lib loads exactly when PyTorch does; when
    PyTorch refuses with an UnpicklingError, the first line is the same; other errors are carried
    in course_lib's UnpicklingError under their own name."""
    pkl = P2 + _BUILD_TARGETS[target] + _STATES[state] + b"b."
    kind, text = torch_result(pkl)
    try:
        value = load(pkl)
    except pickle.UnpicklingError as e:
        assert kind != "ok", f"torch loads it ({text!r}), course_lib refuses: {e}"
        first = text.splitlines()[0]
        if kind == "UnpicklingError":
            expected = first.split(", but got")[0]
        else:
            expected = f"{kind}: " + first.replace("torch.", "").split("'")[0]
        assert expected in str(e), (kind, text, str(e))
    else:
        assert kind == "ok", f"torch refuses ({kind}: {text}), course_lib loads {value!r}"
        assert type(value).__name__ == type(text).__name__ or target in ("dtype", "Size", "StorageType")


# ------------------------------------------------------------------ legacy BUILD on a tensor: set_ with its checks


@pytest.mark.parametrize("state", [
    b")",                                                                   # set_(): empty
    b"(" + pid() + b"t",                                                    # all of the storage
    b"(" + pid() + long1(1) + int_tuple((2,)) + int_tuple((1,)) + b"t",     # a view of it
    b"(" + pid() + long1(1) + int_tuple((3,)) + b"Nt",                      # stride None: contiguous
    b"(" + pid() + long1(0) + int_tuple((2, 2)) + int_tuple((1, 2)) + b"t",  # transposed
    b"(" + rebuild() + b"t",                                                # another tensor's view
], ids=["empty", "storage", "view", "contiguous", "transposed", "tensor"])
def test_legacy_build_on_a_tensor_loads_like_pytorch(unchanged, state):
    pkl = P2 + rebuild() + state + b"b."
    kind, expected = torch_result(pkl, FOUR_FLOATS)
    assert kind == "ok"
    t = load(pkl, FOUR_FLOATS)
    assert tuple(t.shape) == tuple(expected.shape) and t.stride() == expected.stride()
    assert t.storage_offset() == expected.storage_offset() and t.tolist() == expected.tolist()


@pytest.mark.parametrize("state, error, message", [
    (b"(" + pid() + long1(0) + int_tuple((100,)) + int_tuple((1,)) + b"t", RuntimeError,
     "setStorage: sizes [100], strides [1], storage offset 0, and itemsize 4 requiring a storage size of 400 are "
     "out of bounds for storage of size 16"),
    (b"(" + pid() + long1(3) + int_tuple((2,)) + int_tuple((1,)) + b"t", RuntimeError, "are out of bounds for storage"),
    (b"(" + pid() + long1(0) + int_tuple((2,)) + int_tuple((4,)) + b"t", RuntimeError, "are out of bounds for storage"),
    (b"(" + rebuild() + long1(2) + int_tuple((4,)) + int_tuple((1,)) + b"t", RuntimeError,
     "are out of bounds for storage"),
    (b"(" + pid() + long1(-1) + int_tuple((1,)) + int_tuple((1,)) + b"t", RuntimeError,
     "Tensor: invalid storage offset -1"),
    (b"(" + pid() + long1(0) + int_tuple((2,)) + int_tuple((-1,)) + b"t", RuntimeError,
     "Storage size calculation overflowed with sizes=[2] and strides=[-1]"),
    (b"(" + pid() + long1(0) + int_tuple((1 << 32, 1 << 32)) + int_tuple((0, 0)) + b"t", RuntimeError,
     "numel: integer multiplication overflow"),
    (b"(" + pid() + long1(0) + int_tuple((2, 2)) + int_tuple((1,)) + b"t", RuntimeError,
     "unequal size length (2) and stride length (1)"),
    (b"(" + pid("1", 2, "LongStorage") + b"t", RuntimeError,
     "Expected a Storage of type float or an UntypedStorage, but got type Long for argument 1 'storage'"),
    (b"N", pickle.UnpicklingError, "TypeError: Tensor.set_() argument after * must be an iterable, not NoneType"),
    (b"\x88NN\x87", pickle.UnpicklingError,
     "TypeError: set_() received an invalid combination of arguments - got (bool, NoneType, NoneType)"),
], ids=["too-big", "offset-past-end", "stride-past-end", "tensor-source-past-end", "negative-offset",
        "negative-stride", "numel-overflow", "unequal-lengths", "wrong-dtype", "none", "setstate-tuple"])
def test_legacy_build_on_a_tensor_is_bounds_checked(unchanged, state, error, message):
    storages = dict(FOUR_FLOATS, **{"1": np.zeros(2, np.int64).tobytes()})
    pkl = P2 + rebuild() + state + b"b."
    refused(pkl, storages, error, message)
    kind, text = torch_result(pkl, storages)
    assert kind != "ok"
    if error is RuntimeError and "out of bounds" not in message:
        assert kind == "RuntimeError" and text == message  # PyTorch's: "Trying to resize storage that is not resizable"


def test_legacy_build_on_a_tensor_that_requires_grad():
    pkl = P2 + rebuild().replace(b"\x89" + ORDERED_DICT, b"\x88" + ORDERED_DICT) + b"(" + pid() + b"tb."
    refused(pkl, FOUR_FLOATS, RuntimeError,
            "a leaf Variable that requires grad is being used in an in-place operation.")
    assert torch_result(pkl, FOUR_FLOATS)[0] == "RuntimeError"


def parameter(state: bytes) -> bytes:
    return (P2 + global_op("torch._utils", "_rebuild_parameter") + b"(" + rebuild() + b"\x89" + ORDERED_DICT + b"tR"
            + state + b"b.")


@pytest.mark.parametrize("state, loads", [
    (b"\x88N" + ORDERED_DICT + b"\x87", True),                               # (requires_grad, _, hooks)
    (b"(" + rebuild() + b"K\x00N\x89" + ORDERED_DICT + b"t", True),          # legacy Variable (5 items)
    (b"(" + pid() + long1(1) + int_tuple((2,)) + int_tuple((1,)) + b"t", True),  # legacy Tensor (4 items): set_
    (arg("x") + b"N" + ORDERED_DICT + b"\x87", False),                       # requires_grad must be a bool
    (b"(" + ORDERED_DICT + b"K\x00N\x89" + ORDERED_DICT + b"t", False),      # data must be a tensor
    (b"(" + pid() + long1(1) + int_tuple((9,)) + int_tuple((1,)) + b"t", False),  # out of bounds
    (dict_of(("dtype", global_op("torch", "int64"))), False),                # not a 3-tuple
    (b"N", False),
], ids=["3-tuple", "variable", "set_", "rg-str", "data-od", "set_-oob", "dict", "none"])
def test_build_on_a_parameter_is_tensor_setstate(unchanged, state, loads):
    pkl = parameter(state)
    kind, expected = torch_result(pkl, FOUR_FLOATS)
    assert (kind == "ok") == loads, (kind, expected)
    if loads:
        p = load(pkl, FOUR_FLOATS)
        assert type(p) is cl.nn.Parameter and p.tolist() == expected.tolist()
        assert p.requires_grad == expected.requires_grad
    else:
        with pytest.raises((RuntimeError, pickle.UnpicklingError)):
            load(pkl, FOUR_FLOATS)


# ------------------------------------------------------------------ sizes whose element count overflows int64


@pytest.mark.parametrize("size, stride", [
    ((1 << 40, 1 << 40), (0, 0)),
    ((1 << 32, 1 << 32), (1, 1)),
    ((1 << 62, 4), (0, 0)),
    ((-2,), (1,)),
])
def test_numel_overflow_is_refused_as_in_pytorch(unchanged, size, stride):
    """A view of 2**80 elements at stride 0 fits in a 16-byte storage, but its element count does not
    fit in int64 (numel() and every loop over the tensor would wrap around)."""
    pkl = P2 + rebuild(size, stride) + b"."
    refused(pkl, FOUR_FLOATS, RuntimeError, "numel: integer multiplication overflow")
    assert torch_result(pkl, FOUR_FLOATS) == ("RuntimeError", "numel: integer multiplication overflow")


@pytest.mark.parametrize("size, stride", [((1 << 40, 1 << 40), (0, 0)), ((1 << 32, 1 << 32), (1, 1))])
def test_numel_overflow_on_the_meta_device_too(unchanged, size, stride):
    pkl = (P2 + global_op("torch._utils", "_rebuild_meta_tensor_no_storage") + b"(" + global_op("torch", "float32")
           + int_tuple(size) + int_tuple(stride) + b"\x89tR.")
    refused(pkl, None, RuntimeError, "numel: integer multiplication overflow")
    assert torch_result(pkl) == ("RuntimeError", "numel: integer multiplication overflow")


@pytest.mark.parametrize("size, stride, offset", [
    ((2,), (1 << 62,), 0), ((2,), ((1 << 63) - 1,), 0), ((2,), (1,), 1 << 62), ((2,), (-1,), 0),
])
def test_storage_size_overflow_is_refused_as_in_pytorch(unchanged, size, stride, offset):
    pkl = P2 + rebuild(size, stride, offset) + b"."
    expected = f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}"
    refused(pkl, FOUR_FLOATS, RuntimeError, expected)
    assert torch_result(pkl, FOUR_FLOATS) == ("RuntimeError", expected)


def test_sizes_beyond_int64_are_refused():
    pkl = P2 + rebuild((1 << 63,), (1,)) + b"."
    refused(pkl, FOUR_FLOATS, pickle.UnpicklingError,
            "set_(): argument 'size' failed to unpack the object at pos 1 with error "
            "\"Overflow when unpacking long long\"")
    assert torch_result(pkl, FOUR_FLOATS)[0] == "TypeError"


def test_a_view_numpy_cannot_hold_is_refused():
    """2**63 - 1 elements at stride 0 are in bounds and PyTorch loads them, but a numpy view of them
    would have more than 2**63 - 1 bytes: course_lib refuses at load rather than fail on first use."""
    refused(P2 + rebuild(((1 << 63) - 1,), (0,)) + b".", FOUR_FLOATS, RuntimeError, "course_lib cannot hold a tensor")


def test_valid_edge_views_still_load():
    for size, stride, offset in [((0, (1 << 63) - 1), (1, 1), 0), ((0,), (1,), 100), ((1 << 20, 4), (0, 0), 3),
                                 ((2, 2), (0, 1), 2)]:
        t = load(P2 + rebuild(size, stride, offset) + b".", FOUR_FLOATS)
        assert tuple(t.shape) == size and t.stride() == stride and t.storage_offset() == offset


# ------------------------------------------------------------------ allowlisted tensor subclasses


class MyTensor(cl.Tensor):
    """A tensor subclass a user allowlists with ``safe_globals``."""


def test_build_on_an_allowlisted_tensor_subclass_is_tensor_setstate(unchanged):
    """PyTorch runs Tensor.__setstate__ (legacy formats, checked) on any tensor subclass; it never
    updates the instance's attributes wholesale (course_lib keeps _grad, grad_fn, _base there)."""
    sub = (global_op("torch._tensor", "_rebuild_from_type_v2") + b"(" + global_op("torch._utils", "_rebuild_tensor_v2")
           + global_op(__name__, "MyTensor") + b"(" + pid() + long1(0) + int_tuple((4,)) + int_tuple((1,)) + b"\x89"
           + ORDERED_DICT + b"t}tR")
    with S.safe_globals([MyTensor]):
        t = load(P2 + sub + b"\x88N" + ORDERED_DICT + b"\x87b.", FOUR_FLOATS)
        assert type(t) is MyTensor and t.requires_grad and t.tolist() == [0.0, 1.0, 2.0, 3.0]
        refused(P2 + sub + dict_of(("_grad", rebuild()), ("grad_fn", b"N")) + b"b.", FOUR_FLOATS,
                pickle.UnpicklingError, "ValueError: not enough values to unpack (expected 3, got 2)")
        refused(P2 + sub + b"(" + pid() + long1(0) + int_tuple((9,)) + int_tuple((1,)) + b"tb.", FOUR_FLOATS,
                RuntimeError, "are out of bounds for storage of size 16")
