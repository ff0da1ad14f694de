"""course_lib.safetensors: the format by hand, checked against its specification, against
the reference implementation (the ``safetensors`` package, when installed) and by fuzzing."""
from __future__ import annotations

import json
import os
import random
import struct

import numpy as np
import pytest
from test_serialization_helpers import layout, values

import course_lib as cl
from course_lib import safetensors as st

DTYPES = [cl.float32, cl.float64, cl.float16, cl.int64, cl.int32, cl.int16, cl.int8, cl.uint8, cl.bool]


def sample():
    rng = np.random.default_rng(0)
    return {
        "b.weight": cl.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)),
        "a.bias": cl.from_numpy(rng.standard_normal(4).astype(np.float64)),
        "steps": cl.tensor(7),
        "mask": cl.tensor([True, False, True]),
        "half": cl.ones(2, 2, dtype=cl.float16),
        "bytes": cl.arange(5, dtype=cl.uint8),
        "small": cl.tensor([-1, 2], dtype=cl.int8),
        "i16": cl.tensor([300, -300], dtype=cl.int16),
        "i32": cl.tensor([1 << 20], dtype=cl.int32),
        "empty": cl.empty(0, 3),
        "scalar": cl.tensor(2.5),
    }


def test_roundtrip_every_dtype_0d_and_empty():
    t = sample()
    r = st.load(st.save(t))
    assert list(r) == sorted(t, key=lambda n: (-st._ORDER.index(st._NAMES[t[n].dtype]), n))
    for name, v in t.items():
        assert layout(r[name]) == layout(v), name
        np.testing.assert_array_equal(values(r[name]), values(v))


def test_layout_follows_the_spec():
    data = st.save({"w": cl.tensor([[1.0, 2.0], [3.0, 4.0]])}, metadata={"format": "pt"})
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0 and data[8:9] == b"{"
    header = json.loads(data[8:8 + n])
    assert header == {"__metadata__": {"format": "pt"},
                      "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}
    assert data[8 + n:] == np.array([1, 2, 3, 4], "<f4").tobytes()


def test_reads_a_file_built_from_the_spec_by_hand():
    header = b'{"weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},' \
             b'"__metadata__":{"source":"hand"},"n":{"dtype":"I64","shape":[],"data_offsets":[16,24]}}'
    data = struct.pack("<Q", len(header)) + header + np.array([1, 2, 3, 4], "<f4").tobytes() \
        + np.array([9], "<i8").tobytes()
    r = st.load(data)
    assert values(r["weight"]).tolist() == [[1.0, 2.0], [3.0, 4.0]] and values(r["n"]) == 9


def test_files_meta_and_atomic_save(tmp_path):
    path = tmp_path / "model.safetensors"
    st.save_file(sample(), path, metadata={"epoch": "3"})
    r = st.load_file(path)
    np.testing.assert_array_equal(values(r["b.weight"]), values(sample()["b.weight"]))
    m = st.load_file(path, device="meta")
    assert m["b.weight"].device == cl.device("meta") and tuple(m["b.weight"].shape) == (3, 4)
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_loaded_tensors_are_writable_and_independent():
    r = st.load(st.save({"a": cl.zeros(3), "b": cl.zeros(3)}))
    r["a"][0] = 5.0
    assert values(r["b"]).tolist() == [0.0, 0.0, 0.0] and r["a"]._storage is not r["b"]._storage


def test_refuses_shared_and_non_contiguous_tensors():
    base = cl.arange(6.)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        st.save({"a": base, "b": base[2:]})
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        st.save({"t": base.view(2, 3).t()})
    st.save({"t": base.view(2, 3).t().contiguous()})  # the fix the message suggests
    with pytest.raises(TypeError, match="metadata must be a dict of str to str"):
        st.save({"a": base}, metadata={"epoch": 3})
    with pytest.raises(ValueError, match="meta device"):
        st.save({"m": cl.empty(2, device="meta")})


def _header_file(header: dict | bytes, buffer: bytes = b"") -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + buffer


@pytest.mark.parametrize("data, match", [
    (b"\x01\x02", "HeaderTooSmall"),
    (struct.pack("<Q", 2 ** 40) + b"{}", "HeaderTooLarge"),
    (struct.pack("<Q", 100) + b"{}", "InvalidHeaderLength"),
    (_header_file(b"[]"), "InvalidHeaderStart"),
    (_header_file(b"{not json"), "InvalidHeaderDeserialization"),
    (_header_file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],'
                  b'"data_offsets":[0,4]}}', b"\0" * 4), "duplicate key"),
    (_header_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4), "TensorInvalidInfo"),
    (_header_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "InvalidOffset"),
    (_header_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4), "InvalidOffset"),
    (_header_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 9),
     "MetadataIncompleteBuffer"),
    (_header_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 2),
     "MetadataIncompleteBuffer"),
    (_header_file({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2),
     "dtype BF16, which course_lib does not have"),
    (_header_file({"a": {"dtype": "X99", "shape": [1], "data_offsets": [0, 2]}}, b"\0" * 2), "unknown dtype"),
    (_header_file({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4), "invalid shape"),
    (_header_file({"__metadata__": {"n": 1}}), "must map strings to strings"),
    (_header_file({"a": [1, 2]}), "needs exactly dtype, shape and data_offsets"),
])
def test_invalid_files_are_named(data, match):
    with pytest.raises(st.SafetensorError, match=match):
        st.load(data)


def test_fuzz_never_crashes():
    data = st.save(sample(), metadata={"k": "v"})
    rng = random.Random(5)
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(3000):
        b = bytearray(data)
        if i % 3 == 0:
            b = b[: rng.randrange(len(b))]
        else:
            b[rng.randrange(len(b))] ^= rng.randrange(1, 256)
        try:
            st.load(bytes(b))
            outcomes["loaded"] += 1
        except st.SafetensorError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and outcomes["loaded"] > 0


# ------------------------------------------------------------------ the reference implementation


@pytest.fixture(scope="module")
def reference():
    try:
        import safetensors.numpy as ref
    except ImportError:
        reason = "the reference safetensors package is not installed (pip install 'course_lib[oracle]')"
        if os.environ.get("COURSE_REQUIRE_ORACLE") == "1":
            pytest.fail(reason + " [COURSE_REQUIRE_ORACLE=1]", pytrace=False)
        pytest.skip(reason)
    return ref


def test_byte_identical_to_the_reference(reference):
    t = sample()
    arrays = {k: values(v) for k, v in t.items()}
    for metadata in (None, {"format": "pt"}):
        assert st.save(t, metadata=metadata) == reference.save(arrays, metadata=metadata)
    # with several metadata keys the reference's order is a hash map's (it varies between runs):
    # the header must parse to the same JSON and the data bytes must be identical
    metadata = {"format": "pt", "note": "héllo"}
    ours, theirs = st.save(t, metadata=metadata), reference.save(arrays, metadata=metadata)
    n1, n2 = struct.unpack("<Q", ours[:8])[0], struct.unpack("<Q", theirs[:8])[0]
    assert n1 == n2
    assert json.loads(ours[8:8 + n1]) == json.loads(theirs[8:8 + n2])
    assert ours[8 + n1:] == theirs[8 + n2:]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_both_ways_with_the_reference(reference, dtype, tmp_path):
    a = (np.arange(12) % 5).astype(dtype.np).reshape(3, 4)
    path = tmp_path / "x.safetensors"
    st.save_file({"x": cl.from_numpy(a.copy()), "s": cl.from_numpy(np.array(a[0, 1]))}, path)
    r = reference.load_file(str(path))
    np.testing.assert_array_equal(r["x"], a)
    assert r["s"].shape == () and r["s"] == a[0, 1]
    reference.save_file({"x": a, "e": np.zeros((0, 2), a.dtype)}, str(path), metadata={"m": "1"})
    back = st.load_file(path)
    np.testing.assert_array_equal(values(back["x"]), a)
    assert tuple(back["e"].shape) == (0, 2)
