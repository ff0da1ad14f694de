"""course_lib.save / course_lib.load on their own: round trips, the archive layout, views,
map_location, mmap, atomic saves, and clear errors for broken files.

Interop with real PyTorch is in test_serialization_interop.py, malicious pickles in
test_serialization_security.py, fuzzing in test_serialization_fuzz.py.
"""
from __future__ import annotations

import io
import mmap
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_serialization_helpers import (
    call,
    course_pickle,
    craft,
    layout,
    pickle_program,
    record_spans,
    saved_bytes,
    values,
)

import course_lib as cl
from course_lib import memory, nn
from course_lib import serialization as S
from course_lib._storage import Storage

ALL_DTYPES = [cl.float32, cl.float64, cl.float16, cl.int64, cl.int32, cl.int16, cl.int8, cl.uint8, cl.bool]
SHAPES = [(), (0,), (1,), (5,), (2, 3), (2, 0, 3), (2, 3, 4)]


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    cl.save(obj, buf)
    buf.seek(0)
    return cl.load(buf, **load_kwargs)


def make(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype is cl.bool:
        a = rng.integers(0, 2, n).astype(bool)
    elif dtype.is_floating_point:
        a = (rng.standard_normal(n) * 100).astype(dtype.np)
    else:
        info = np.iinfo(dtype.np)
        a = rng.integers(info.min, info.max, n, dtype=dtype.np, endpoint=True)
    return cl.from_numpy(a.reshape(shape).copy())


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_roundtrip_every_dtype_and_shape(dtype, shape):
    t = make(dtype, shape)
    r = roundtrip(t)
    assert type(r) is cl.Tensor
    assert layout(r) == layout(t)
    np.testing.assert_array_equal(values(r), values(t))


def test_extreme_values_survive():
    f = cl.tensor([np.inf, -np.inf, np.nan, -0.0, 1e-45, 3.4e38], dtype=cl.float32)
    r = roundtrip(f)
    assert values(r).tobytes() == values(f).tobytes()  # bit for bit, NaN and -0.0 included
    i = cl.tensor([-2 ** 63, 2 ** 63 - 1], dtype=cl.int64)
    np.testing.assert_array_equal(values(roundtrip(i)), values(i))


def test_views_share_storage_after_loading():
    base = cl.arange(6.)
    sd = {"a": base, "b": base[2:], "c": base.view(2, 3).t(), "d": base.clone()}
    raw = saved_bytes(sd)
    names = zipfile.ZipFile(io.BytesIO(raw)).namelist()
    assert [n for n in names if "/data/" in n] == ["archive/data/0", "archive/data/1"]  # base once, clone once
    r = cl.load(io.BytesIO(raw))
    assert r["a"]._storage is r["b"]._storage is r["c"]._storage
    assert r["d"]._storage is not r["a"]._storage
    assert layout(r["b"]) == ((4,), (1,), 2, "float32")
    assert layout(r["c"]) == ((3, 2), (1, 3), 0, "float32")
    r["a"][3] = 100.0
    assert values(r["b"])[1] == 100.0 and values(r["c"])[0, 1] == 100.0
    assert values(r["d"])[3] == 3.0


def test_whole_storage_is_written_for_a_small_slice():
    big = cl.zeros(1000)
    raw = saved_bytes({"s": big[10:12]})
    z = zipfile.ZipFile(io.BytesIO(raw))
    assert z.getinfo("archive/data/0").file_size == 4000
    r = cl.load(io.BytesIO(raw))["s"]
    assert layout(r) == ((2,), (1,), 10, "float32") and len(r._storage) == 1000


def test_same_tensor_twice_loads_as_one_object():
    t = cl.ones(3)
    r = roundtrip([t, t, {"again": t}])
    assert r[0] is r[1] is r[2]["again"]


def test_parameters_and_requires_grad():
    p = nn.Parameter(cl.randn(2, 3))
    frozen = nn.Parameter(cl.ones(2), requires_grad=False)
    x = cl.ones(3, requires_grad=True)
    r = roundtrip({"p": p, "frozen": frozen, "x": x, "y": x * 2, "plain": cl.ones(2)})
    assert type(r["p"]) is nn.Parameter and r["p"].requires_grad
    assert type(r["frozen"]) is nn.Parameter and not r["frozen"].requires_grad
    assert type(r["x"]) is cl.Tensor and r["x"].requires_grad and r["x"].is_leaf
    assert r["y"].requires_grad and r["y"].is_leaf and r["y"].grad_fn is None  # saved as a leaf
    assert not r["plain"].requires_grad
    np.testing.assert_array_equal(values(r["p"]), values(p))


def test_parameter_sharing_storage_with_a_tensor():
    w = cl.arange(6.).view(2, 3)
    p = nn.Parameter(w)
    r = roundtrip({"p": p, "row": w[1]})
    assert r["p"]._storage is r["row"]._storage


def test_nested_containers_and_python_values():
    sd = OrderedDict([("w", cl.ones(2)), ("b", cl.zeros(1))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("layer", {"version": 2})])
    obj = {
        "sd": sd, "list": [1, -5, 70000, 2 ** 70, -2 ** 70, 2.5, float("inf"), None, True, False],
        "tuple": (1, ("nested", [cl.tensor(7)])), "str": "héllo ✓", "bytes": b"\x00\xffab",
        "set": {1, 2, 3}, "complex": 1 + 2j, "bytearray": bytearray(b"xyz"), "empty": ((), [], {}),
        "dtype": cl.float16, "device": cl.device("meta"), "size": cl.Size([2, 3]),
    }
    r = roundtrip(obj)
    assert type(r["sd"]) is OrderedDict and list(r["sd"]) == ["w", "b"]
    assert r["sd"]._metadata == sd._metadata
    assert r["list"] == obj["list"]
    assert r["tuple"][1][0] == "nested" and values(r["tuple"][1][1][0]) == 7
    for k in ("str", "bytes", "set", "complex", "bytearray", "empty"):
        assert r[k] == obj[k] and type(r[k]) is type(obj[k]), k
    assert r["dtype"] is cl.float16 and r["device"] == cl.device("meta")
    assert type(r["size"]) is cl.Size and r["size"] == (2, 3)


def test_meta_tensors_roundtrip_without_data():
    m = cl.empty(3, 4, device="meta")
    raw = saved_bytes({"m": m})
    assert not [n for n in zipfile.ZipFile(io.BytesIO(raw)).namelist() if "/data/" in n]
    r = cl.load(io.BytesIO(raw))["m"]
    assert r.device == cl.device("meta") and layout(r) == layout(m)


def test_storage_saved_directly():
    s = cl.arange(4, dtype=cl.int16)._storage
    r = roundtrip({"s": s})["s"]
    assert isinstance(r, Storage) and r.dtype is cl.int16 and r.data.tolist() == [0, 1, 2, 3]


def test_storages_viewing_the_same_data_as_different_dtypes_are_refused():
    a = np.zeros(4, np.float32)
    s1, s2 = Storage(a, cl.float32), Storage(a.view(np.int32), cl.int32)
    t1, t2 = cl.Tensor._make(s1, 0, (4,), (1,), cl.float32), cl.Tensor._make(s2, 0, (4,), (1,), cl.int32)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        cl.save([t1, t2], io.BytesIO())


@st.composite
def view_chains(draw):
    """A base tensor and a random chain of views of it."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    base = cl.arange(float(np.prod(shape))).view(*shape)
    t = base
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["t", "slice", "select", "permute", "unsqueeze"]))
        if kind == "t" and t.dim() >= 2:
            d0, d1 = draw(st.permutations(range(t.dim())))[:2]
            t = t.transpose(d0, d1)
        elif kind == "slice" and t.dim() >= 1:
            d = draw(st.integers(0, t.dim() - 1))
            n = t.shape[d]
            start = draw(st.integers(0, n))
            step = draw(st.integers(1, 3))
            idx = [slice(None)] * t.dim()
            idx[d] = slice(start, n, step)
            t = t[tuple(idx)]
        elif kind == "select" and t.dim() >= 1 and t.shape[0] > 0:
            t = t[draw(st.integers(0, t.shape[0] - 1))]
        elif kind == "permute" and t.dim() >= 1:
            t = t.permute(*draw(st.permutations(range(t.dim()))))
        elif kind == "unsqueeze":
            t = t.unsqueeze(draw(st.integers(0, t.dim())))
    return base, t


@settings(max_examples=60, deadline=None)
@given(view_chains())
def test_any_view_chain_roundtrips_with_layout_and_sharing(chain):
    base, view = chain
    r = roundtrip({"base": base, "view": view})
    assert layout(r["view"]) == layout(view)
    np.testing.assert_array_equal(values(r["view"]), values(view))
    assert r["view"]._storage is r["base"]._storage


# ------------------------------------------------------------------ the archive


def test_archive_layout_matches_torch_save(tmp_path):
    path = tmp_path / "sd.pt"
    cl.save({"w": cl.ones(2, 3), "n": cl.tensor(4)}, path)
    z = zipfile.ZipFile(path)
    assert z.namelist() == ["sd/data.pkl", "sd/.format_version", "sd/.storage_alignment", "sd/byteorder",
                            "sd/data/0", "sd/data/1", "sd/version", "sd/.data/serialization_id"]
    assert z.read("sd/version") == b"3\n"
    assert z.read("sd/.format_version") == b"1" and z.read("sd/.storage_alignment") == b"64"
    assert z.read("sd/byteorder") == sys.byteorder.encode()
    assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    assert len(z.read("sd/.data/serialization_id")) == 40
    assert z.read("sd/data/0") == np.ones(6, np.float32).tobytes()
    for name, (offset, _) in record_spans(path.read_bytes()).items():
        assert offset % 64 == 0, name
    assert pickle.loads(z.read("sd/data.pkl")[:2] + b"N.") is None  # protocol 2 header


def test_prefix_from_file_name_and_archive_for_buffers(tmp_path):
    cl.save(cl.ones(1), tmp_path / "model.v2.pth")
    assert zipfile.ZipFile(tmp_path / "model.v2.pth").namelist()[0] == "model.v2/data.pkl"
    assert zipfile.ZipFile(io.BytesIO(saved_bytes(cl.ones(1)))).namelist()[0] == "archive/data.pkl"


def test_archives_pass_zipfile_checks_small_and_large_records():
    raw = saved_bytes({"small": cl.arange(10.), "large": cl.arange(600_000.), "i": cl.arange(300_000)})
    z = zipfile.ZipFile(io.BytesIO(raw))
    assert z.testzip() is None  # every CRC-32 right (the large ones are computed in a second thread)
    assert z.read("archive/data/1") == np.arange(600_000, dtype=np.float32).tobytes()


def test_forced_zip64_archives_read_back(monkeypatch, tmp_path):
    monkeypatch.setattr(S, "_FORCE_ZIP64", True)
    path = tmp_path / "z64.pt"
    cl.save({"w": cl.arange(300_000.), "n": cl.tensor(3)}, path)
    raw = path.read_bytes()
    assert b"PK\x06\x06" in raw[-200:] and b"PK\x06\x07" in raw[-100:]  # zip64 end records
    assert zipfile.ZipFile(path).testzip() is None
    for name, (offset, _) in record_spans(raw).items():
        assert offset % 64 == 0, name
    r = cl.load(path)
    assert values(r["w"])[-1] == 299_999.0 and values(r["n"]) == 3
    assert values(cl.load(path, mmap=True)["w"])[5] == 5.0


def test_saving_after_other_bytes_in_the_same_file():
    buf = io.BytesIO()
    buf.write(b"some header of another format" * 3)
    cl.save({"w": cl.arange(5.)}, buf)
    raw = buf.getvalue()
    assert zipfile.ZipFile(io.BytesIO(raw)).testzip() is None
    assert values(cl.load(io.BytesIO(raw))["w"]).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_saving_is_deterministic():
    obj = {"w": cl.arange(10.), "v": cl.arange(10.)[3:]}
    assert saved_bytes(obj) == saved_bytes(obj)


def test_loads_any_prefix_unaligned_deflated_and_without_byteorder():
    pkl, storages = course_pickle({"w": cl.arange(5.)})
    for raw in (craft(pkl, storages, prefix="whatever"), craft(pkl, storages, compression=zipfile.ZIP_DEFLATED),
                craft(pkl, storages, byteorder=None)):
        np.testing.assert_array_equal(values(cl.load(io.BytesIO(raw))["w"]), np.arange(5.0, dtype=np.float32))


def test_big_endian_files_are_byteswapped(tmp_path):
    pkl, _ = course_pickle({"w": cl.arange(5.), "i": cl.arange(3), "b": cl.tensor([1, 2], dtype=cl.uint8)})
    storages = {"0": np.arange(5, dtype=">f4").tobytes(), "1": np.arange(3, dtype=">i8").tobytes(),
                "2": bytes([1, 2])}
    raw = craft(pkl, storages, byteorder=b"big")
    (tmp_path / "big.pt").write_bytes(raw)
    for r in (cl.load(io.BytesIO(raw)), cl.load(tmp_path / "big.pt", mmap=True)):
        np.testing.assert_array_equal(values(r["w"]), np.arange(5.0))
        np.testing.assert_array_equal(values(r["i"]), np.arange(3))
        np.testing.assert_array_equal(values(r["b"]), [1, 2])


def test_save_to_file_objects_and_pathlike(tmp_path):
    with open(tmp_path / "f.pt", "wb") as f:
        cl.save(cl.ones(2), f)
    with open(tmp_path / "f.pt", "rb") as f:
        assert values(cl.load(f)).tolist() == [1.0, 1.0]
    cl.save(cl.ones(2), str(tmp_path / "s.pt"))
    assert values(cl.load(str(tmp_path / "s.pt"))).tolist() == [1.0, 1.0]
    with pytest.raises(AttributeError, match="file-like object"):
        cl.save(cl.ones(1), 42)


def test_save_to_a_non_seekable_stream_still_loads():
    class Pipe(io.RawIOBase):
        def __init__(self):
            self.chunks = []

        def writable(self):
            return True

        def write(self, b):
            self.chunks.append(bytes(b))
            return len(b)

    pipe = Pipe()
    cl.save({"w": cl.arange(3.)}, pipe)
    r = cl.load(io.BytesIO(b"".join(pipe.chunks)))
    assert values(r["w"]).tolist() == [0.0, 1.0, 2.0]


# ------------------------------------------------------------------ atomic saves


def _tmp_leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_failed_save_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    cl.save({"w": cl.ones(3)}, path)
    before = path.read_bytes()
    real = S._ArchiveWriter.write_record

    def failing(self, name, data):
        if name == "data/1":
            raise OSError("disk full (injected)")
        return real(self, name, data)

    monkeypatch.setattr(S._ArchiveWriter, "write_record", failing)
    with pytest.raises(OSError, match="injected"):
        cl.save({"w": cl.zeros(3), "v": cl.zeros(1000)}, path)
    assert path.read_bytes() == before
    assert _tmp_leftovers(tmp_path) == []
    assert values(cl.load(path)["w"]).tolist() == [1.0, 1.0, 1.0]


def test_interrupted_save_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    cl.save({"w": cl.ones(3)}, path)
    before = path.read_bytes()

    def interrupt(self, name, data):
        raise KeyboardInterrupt

    monkeypatch.setattr(S._ArchiveWriter, "write_record", interrupt)
    with pytest.raises(KeyboardInterrupt):
        cl.save({"w": cl.zeros(3)}, path)
    assert path.read_bytes() == before and _tmp_leftovers(tmp_path) == []


def test_unpicklable_object_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "ckpt.pt"
    cl.save([1, 2], path)
    with pytest.raises((TypeError, pickle.PicklingError, AttributeError)):
        cl.save({"f": lambda x: x}, path)
    assert cl.load(path) == [1, 2] and _tmp_leftovers(tmp_path) == []


def test_process_killed_mid_save_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "ckpt.pt"
    cl.save({"w": cl.ones(3)}, path)
    before = path.read_bytes()
    script = textwrap.dedent(f"""
        import os, course_lib as cl
        from course_lib import serialization as S
        real = S._ArchiveWriter.write_record
        def dying(self, name, data):
            if name == "data/0":
                os._exit(3)   # the process dies half way: no cleanup, no exception
            return real(self, name, data)
        S._ArchiveWriter.write_record = dying
        cl.save({{"w": cl.zeros(100000)}}, {str(path)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert path.read_bytes() == before
    assert values(cl.load(path)["w"]).tolist() == [1.0, 1.0, 1.0]


def test_save_replaces_the_file_and_keeps_its_mode(tmp_path):
    path = tmp_path / "ckpt.pt"
    cl.save([1], path)
    os.chmod(path, 0o640)
    cl.save([2], path)
    assert cl.load(path) == [2]
    assert (os.stat(path).st_mode & 0o777) == 0o640


def test_save_through_a_symlink_writes_the_target(tmp_path):
    real = tmp_path / "real.pt"
    cl.save([1], real)
    link = tmp_path / "link.pt"
    link.symlink_to(real)
    cl.save([2], link)
    assert link.is_symlink() and cl.load(real) == [2]


def test_save_into_a_missing_folder():
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        cl.save([1], "/nonexistent-folder-xyz/ckpt.pt")


# ------------------------------------------------------------------ map_location


def _cuda_file() -> bytes:
    """A file as a GPU machine writes it: the storage's location tag is 'cuda:0'."""
    pkl, storages = course_pickle({"w": cl.arange(3.)})
    return craft(pkl.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"), storages)


@pytest.mark.parametrize("where", ["cpu", cl.device("cpu"), {"cpu": "cpu"}, None])
def test_map_location_cpu(where):
    r = roundtrip({"w": cl.arange(3.)}, map_location=where)
    assert r["w"].device == cl.device("cpu") and values(r["w"]).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("where", ["meta", cl.device("meta"), {"cpu": "meta"}])
def test_map_location_meta_gives_shapes_without_reading_data(where, monkeypatch):
    base = cl.arange(12.)
    raw = saved_bytes({"a": base.view(3, 4), "b": base.view(3, 4).t()[1:], "n": cl.tensor(5)})
    monkeypatch.setattr(S._ArchiveReader, "read_into", lambda *a: pytest.fail("meta load read data"))
    r = cl.load(io.BytesIO(raw), map_location=where)
    assert all(t.device == cl.device("meta") for t in r.values())
    assert layout(r["b"]) == ((3, 3), (1, 4), 1, "float32")
    assert r["a"]._storage is r["b"]._storage


def test_map_location_callable_is_called_once_per_storage():
    calls = []

    def where(storage, location):
        calls.append((len(storage), location))
        return None

    base = cl.arange(4.)
    r = roundtrip({"a": base, "b": base[1:], "c": cl.ones(2)}, map_location=where)
    assert calls == [(4, "cpu"), (2, "cpu")]
    assert values(r["b"]).tolist() == [1.0, 2.0, 3.0]


def test_map_location_callable_may_return_a_storage():
    def to_meta(storage, location):
        return Storage(None, storage.dtype, "meta", size=len(storage))

    r = roundtrip({"a": cl.arange(4.)}, map_location=to_meta)
    assert r["a"].device == cl.device("meta")
    with pytest.raises(TypeError, match="must return a course_lib Storage or None"):
        roundtrip({"a": cl.arange(4.)}, map_location=lambda s, loc: "cpu")


def test_files_from_a_gpu_need_a_map_location():
    raw = _cuda_file()
    with pytest.raises(RuntimeError, match=r"device 'cuda:0'.*map_location='cpu'"):
        cl.load(io.BytesIO(raw))
    for where in ("cpu", {"cuda:0": "cpu"}, lambda s, loc: s):
        assert values(cl.load(io.BytesIO(raw), map_location=where)["w"]).tolist() == [0.0, 1.0, 2.0]
    assert cl.load(io.BytesIO(raw), map_location="meta")["w"].device == cl.device("meta")


def test_bad_map_locations():
    raw = saved_bytes(cl.ones(1))
    with pytest.raises(TypeError, match="map_location must be"):
        cl.load(io.BytesIO(raw), map_location=3)
    with pytest.raises(RuntimeError, match="Expected one of cpu, meta device type"):
        cl.load(io.BytesIO(raw), map_location="tpu")
    with pytest.raises(TypeError, match="map_location dict"):
        cl.load(io.BytesIO(raw), map_location={"cpu": 1})


# ------------------------------------------------------------------ mmap


def test_mmap_maps_storages_without_reading_them(tmp_path, monkeypatch):
    base = cl.arange(100_000.)
    path = tmp_path / "big.pt"
    cl.save({"a": base, "b": base[10:20], "i": cl.arange(7)}, path)
    monkeypatch.setattr(S._ArchiveReader, "read_into", lambda *a: pytest.fail("mmap load read data"))
    before = memory.memory_allocated()
    r = cl.load(path, mmap=True)
    assert memory.memory_allocated() == before  # mapped storages are not allocations
    a = r["a"]._storage.data
    assert not a.flags.owndata and a.flags.writeable
    assert isinstance(a.base, memoryview) and isinstance(a.base.obj, mmap.mmap)
    assert isinstance(r["a"]._storage._owner, mmap.mmap)
    assert a.ctypes.data % 64 == 0  # the mapping is page aligned and the record 64-byte aligned in the file
    assert r["b"]._storage is r["a"]._storage
    np.testing.assert_array_equal(values(r["b"]), np.arange(10, 20, dtype=np.float32))
    assert values(r["i"]).tolist() == list(range(7))


def test_mmap_is_copy_on_write(tmp_path):
    path = tmp_path / "w.pt"
    cl.save({"w": cl.zeros(4)}, path)
    before = path.read_bytes()
    r = cl.load(path, mmap=True)
    r["w"][1] = 5.0
    assert values(r["w"]).tolist() == [0.0, 5.0, 0.0, 0.0]
    del r
    assert path.read_bytes() == before


def test_mmap_needs_a_path_and_stored_records(tmp_path):
    raw = saved_bytes(cl.ones(2))
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        cl.load(io.BytesIO(raw), mmap=True)
    pkl, storages = course_pickle({"w": cl.arange(5.)})
    path = tmp_path / "deflated.pt"
    path.write_bytes(craft(pkl, storages, compression=zipfile.ZIP_DEFLATED))
    with pytest.raises(RuntimeError, match=r"ZIP_STORED.*data/0.*compressed"):
        cl.load(path, mmap=True)
    assert values(cl.load(path)["w"]).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]  # fine without mmap


def test_mmap_with_meta_and_empty_storages(tmp_path):
    path = tmp_path / "e.pt"
    cl.save({"e": cl.empty(0, 3), "w": cl.ones(2)}, path)
    r = cl.load(path, mmap=True)
    assert layout(r["e"]) == ((0, 3), (3, 1), 0, "float32")
    assert cl.load(path, mmap=True, map_location="meta")["w"].device == cl.device("meta")


# ------------------------------------------------------------------ broken files


def _load_raw(raw: bytes, **kw):
    return cl.load(io.BytesIO(raw), **kw)


@pytest.mark.parametrize("raw, match", [
    (b"", "not a readable zip archive"),
    (b"hello, not a checkpoint", "not a readable zip archive"),
    (pickle.dumps({"a": 1}), "not a readable zip archive"),
])
def test_not_a_zip(raw, match):
    with pytest.raises(RuntimeError, match=match):
        _load_raw(raw)


def test_missing_records():
    pkl, storages = course_pickle({"w": cl.arange(3.)})
    with pytest.raises(RuntimeError, match=r"no 'archive/version' record"):
        _load_raw(craft(pkl, storages, version=None))
    with pytest.raises(RuntimeError, match=r"record 'archive/data.pkl' is missing"):
        _load_raw(craft(pkl, storages, omit=("data.pkl",)))
    with pytest.raises(RuntimeError, match=r"record 'archive/data/0' is missing"):
        _load_raw(craft(pkl, {}))
    empty = io.BytesIO()
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(RuntimeError, match="empty"):
        _load_raw(empty.getvalue())
    flat = io.BytesIO()
    with zipfile.ZipFile(flat, "w") as z:
        z.writestr("data.pkl", pkl)
    with pytest.raises(RuntimeError, match="not in a subdirectory"):
        _load_raw(flat.getvalue())


def test_storage_shorter_than_the_pickle_says():
    pkl, storages = course_pickle({"w": cl.arange(6.)})
    with pytest.raises(RuntimeError, match=r"holds 16 bytes, but the pickle says it holds 6 float32 elements \(24"):
        _load_raw(craft(pkl, {"0": storages["0"][:16]}))


def test_tensor_reaching_past_its_storage():
    pkl, storages = course_pickle({"w": cl.arange(6.)})
    bad = pkl.replace(b"K\x00K\x06\x85", b"K\x02K\x06\x85")  # storage offset 0 -> 2
    assert bad != pkl
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[6\], strides \[1\], storage offset 2, and "
                                           r"itemsize 4 requiring a storage size of 32 are out of bounds for "
                                           r"storage of size 24"):
        _load_raw(craft(bad, storages))


def test_corrupted_storage_bytes_fail_the_crc():
    raw = bytearray(saved_bytes({"w": cl.arange(100.)}))
    offset, size = record_spans(bytes(raw))["archive/data/0"]
    raw[offset + size // 2] ^= 0x10
    with pytest.raises(RuntimeError, match=r"archive/data/0' fails its CRC-32 check"):
        _load_raw(bytes(raw))


def test_corrupted_large_storage_fails_the_background_crc(monkeypatch):
    monkeypatch.setattr(S, "CHECK_CRC32", True)
    raw = bytearray(saved_bytes({"a": cl.arange(400_000.), "b": cl.arange(400_000.)}))
    offset, size = record_spans(bytes(raw))["archive/data/0"]
    raw[offset + size - 3] ^= 0x01
    with pytest.raises(RuntimeError, match=r"archive/data/0' fails its CRC-32 check"):
        _load_raw(bytes(raw))


def test_large_storages_are_crc_checked_only_on_request():
    raw = bytearray(saved_bytes({"w": cl.arange(300_000.)}))
    offset, size = record_spans(bytes(raw))["archive/data/0"]
    raw[offset + 4] ^= 0x10
    assert values(_load_raw(bytes(raw))["w"])[1] != 1.0  # loads, with the damaged number (as torch.load would)


def test_truncated_file():
    raw = saved_bytes({"w": cl.arange(100.)})
    with pytest.raises(RuntimeError, match="not a readable zip archive"):
        _load_raw(raw[: len(raw) // 2])


def test_bad_version_and_byteorder():
    pkl, storages = course_pickle({"w": cl.ones(1)})
    with pytest.raises(RuntimeError, match="version 99"):
        _load_raw(craft(pkl, storages, version=b"99\n"))
    with pytest.raises(RuntimeError, match="not a number"):
        _load_raw(craft(pkl, storages, version=b"three"))
    with pytest.raises(RuntimeError, match="Unknown endianness type"):
        _load_raw(craft(pkl, storages, byteorder=b"middle"))


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(IsADirectoryError):
        cl.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        cl.load(tmp_path / "nope.pt")


def test_dtypes_course_lib_does_not_have():
    pkl, storages = course_pickle({"w": cl.ones(2, dtype=cl.float16)})
    bad = pkl.replace(b"ctorch\nHalfStorage\n", b"ctorch\nBFloat16Storage\n")
    with pytest.raises(RuntimeError, match="course_lib cannot load GLOBAL torch.BFloat16Storage: torch.load "
                                           "allows it, but course_lib does not support that dtype"):
        _load_raw(craft(bad, storages))


def test_rebuild_tensor_v3_reinterprets_bytes():
    """_rebuild_tensor_v3 (untyped byte storage + dtype), as PyTorch writes for its newer dtypes."""
    from test_serialization_helpers import arg, binunicode, global_op
    raw_bytes = np.arange(3, dtype=np.float32).tobytes()
    pid = (b"(" + binunicode("storage") + global_op("torch.storage", "UntypedStorage") + binunicode("0")
           + binunicode("cpu") + arg(12) + b"tQ")
    body = (global_op("torch._utils", "_rebuild_tensor_v3") + b"(" + pid + arg(0) + arg(3) + b"\x85" + arg(1)
            + b"\x85" + arg(False) + global_op("collections", "OrderedDict") + b")R"
            + global_op("torch", "float32") + b"tR")
    r = _load_raw(craft(pickle_program(body), {"0": raw_bytes}))
    assert values(r).tolist() == [0.0, 1.0, 2.0] and r.dtype is cl.float32


# ------------------------------------------------------------------ safe and unsafe loading


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)


def test_custom_classes_need_an_allowlist():
    raw = saved_bytes({"p": Point(1, 2), "w": cl.ones(1)})
    with pytest.raises(pickle.UnpicklingError) as info:
        _load_raw(raw)
    msg = str(info.value)
    assert msg.startswith("Weights only load failed.")
    assert ("WeightsUnpickler error: Unsupported global: GLOBAL test_serialization.Point was not an allowed "
            "global by default. Please use `course_lib.serialization.add_safe_globals([test_serialization.Point])` "
            "or the `course_lib.serialization.safe_globals([test_serialization.Point])` context manager to "
            "allowlist this global if you trust this class/function.") in msg
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == ["test_serialization.Point"]
    with S.safe_globals([Point]):
        assert _load_raw(raw)["p"] == Point(1, 2)
        assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(raw)) == []
    assert S.get_safe_globals() == []
    S.add_safe_globals([(Point, "test_serialization.Point")])
    try:
        assert _load_raw(raw)["p"] == Point(1, 2)
    finally:
        S.clear_safe_globals()
    assert _load_raw(raw, weights_only=False)["p"] == Point(1, 2)


def test_weights_only_false_maps_torch_names_too():
    base = cl.arange(6.)
    r = roundtrip({"a": base, "b": base[2:], "p": nn.Parameter(cl.ones(1))}, weights_only=False)
    assert r["a"]._storage is r["b"]._storage and type(r["p"]) is nn.Parameter
    pkl = pickle_program(call("torch.nn.modules.linear", "Linear", 2, 3))
    with pytest.raises(RuntimeError, match="it is a PyTorch object"):
        _load_raw(craft(pkl), weights_only=False)


def test_checkpoint_with_optimizer_and_scheduler_loads_weights_only():
    from course_lib import optim
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.Adam(m.parameters(), lr=0.01)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2)
    m(cl.randn(5, 3)).sum().backward()
    opt.step()
    sched.step()
    ckpt = {"model": m.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "rng": cl.get_rng_state(), "epoch": 3}
    r = roundtrip(ckpt)
    assert r["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]
    assert r["scheduler"] == sched.state_dict()
    assert list(r["model"]) == list(m.state_dict()) and r["model"]._metadata == m.state_dict()._metadata
