"""Oracle tests: files move both ways between course_lib and real PyTorch (torch 2.13.0).

course_lib.save -> torch.load(weights_only=True) and torch.save -> course_lib.load, for
every dtype course_lib has, 0-d and empty tensors, non-contiguous views and shared
storages, Parameters, nested containers, OrderedDicts with ``_metadata``, meta tensors,
mmap, and whole ResNet-18 state_dicts with identical outputs.
"""
from __future__ import annotations

import io
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
from oracle import require_torch
from test_serialization_helpers import course_pickle, craft, layout, record_spans, values

import course_lib as cl
from course_lib import nn
from course_lib.models import resnet18

pytestmark = pytest.mark.oracle

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
SHAPES = [(), (0,), (1,), (7,), (2, 3), (3, 0, 2), (2, 3, 4)]


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def np_data(dtype: str, shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        a = rng.integers(0, 2, n).astype(bool)
    elif dtype.startswith("float"):
        a = (rng.standard_normal(n) * 50).astype(dtype)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return a.reshape(shape)


def torch_layout(t) -> tuple:
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), str(t.dtype).split(".")[-1])


def same_storage_torch(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def cl_to_torch(torch, obj, tmp_path, **load_kwargs):
    path = tmp_path / "from_course_lib.pt"
    cl.save(obj, path)
    return torch.load(path, weights_only=True, **load_kwargs)


def torch_to_cl(torch, obj, tmp_path, **load_kwargs):
    path = tmp_path / "from_torch.pt"
    torch.save(obj, path)
    return cl.load(path, **load_kwargs)


# ------------------------------------------------------------------ tensors, every dtype and shape


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_course_lib_to_torch_every_dtype_and_shape(torch, tmp_path, dtype, shape):
    a = np_data(dtype, shape)
    src = cl.from_numpy(a.copy())
    t = cl_to_torch(torch, src, tmp_path)
    assert type(t) is torch.Tensor
    assert torch_layout(t) == layout(src) and layout(src)[0] == shape and layout(src)[3] == dtype
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_torch_to_course_lib_every_dtype_and_shape(torch, tmp_path, dtype, shape):
    a = np_data(dtype, shape, seed=1)
    src = torch.from_numpy(a.copy())
    r = torch_to_cl(torch, src, tmp_path)
    assert type(r) is cl.Tensor
    assert layout(r) == torch_layout(src)
    np.testing.assert_array_equal(values(r), a)


def test_extreme_float_bits_both_ways(torch, tmp_path):
    a = np.array([np.inf, -np.inf, np.nan, -0.0, 1e-45, 3.4e38], np.float32)
    t = cl_to_torch(torch, cl.from_numpy(a.copy()), tmp_path)
    assert t.numpy().tobytes() == a.tobytes()
    r = torch_to_cl(torch, torch.from_numpy(a.copy()), tmp_path)
    assert values(r).tobytes() == a.tobytes()


# ------------------------------------------------------------------ views and shared storages


def test_views_course_lib_to_torch(torch, tmp_path):
    base = cl.arange(24.)
    obj = {"base": base, "tail": base[2:], "t": base.view(4, 6).t(), "step": base[1::3],
           "sel": base.view(2, 3, 4).permute(2, 0, 1)[1], "clone": base.clone()}
    r = cl_to_torch(torch, obj, tmp_path)
    for k, v in obj.items():
        assert torch_layout(r[k]) == layout(v), k
        np.testing.assert_array_equal(r[k].numpy(), values(v))
    for k in ("tail", "t", "step", "sel"):
        assert same_storage_torch(r[k], r["base"]), k
    assert not same_storage_torch(r["clone"], r["base"])
    r["base"][13] = -1.0
    assert r["t"][1, 2].item() == -1.0  # the view sees the write: memory is shared again


def test_views_torch_to_course_lib(torch, tmp_path):
    base = torch.arange(24.)
    obj = {"base": base, "tail": base[2:], "t": base.view(4, 6).t(), "step": base[1::3],
           "sel": base.view(2, 3, 4).permute(2, 0, 1)[1], "clone": base.clone()}
    r = torch_to_cl(torch, obj, tmp_path)
    for k, v in obj.items():
        assert layout(r[k]) == torch_layout(v), k
        np.testing.assert_array_equal(values(r[k]), v.numpy())
    for k in ("tail", "t", "step", "sel"):
        assert r[k]._storage is r["base"]._storage, k
    assert r["clone"]._storage is not r["base"]._storage
    r["base"][13] = -1.0
    assert values(r["t"])[1, 2] == -1.0


def test_storage_records_match_torch(torch, tmp_path):
    """Same object, same storages: course_lib writes the records torch.save writes."""
    base = cl.arange(10.)
    cl.save({"a": base, "b": base[5:], "c": cl.ones(3, dtype=cl.int64)}, tmp_path / "c.pt")
    tb = torch.arange(10.)
    torch.save({"a": tb, "b": tb[5:], "c": torch.ones(3, dtype=torch.int64)}, tmp_path / "t.pt")
    zc, zt = zipfile.ZipFile(tmp_path / "c.pt"), zipfile.ZipFile(tmp_path / "t.pt")
    assert zc.namelist() == [n.replace("t/", "c/", 1) for n in zt.namelist()]
    for name in zt.namelist():
        if "/data/" in name or name.endswith(("version", "byteorder", "format_version", "alignment")):
            assert zc.read(name.replace("t/", "c/", 1)) == zt.read(name), name


def test_data_pkl_is_byte_identical_to_torch_for_a_state_dict(torch):
    tm = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 1))
    cm = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 1))
    tb, cb = io.BytesIO(), io.BytesIO()
    torch.save(tm.state_dict(), tb)
    cl.save(cm.state_dict(), cb)
    assert zipfile.ZipFile(cb).read("archive/data.pkl") == zipfile.ZipFile(tb).read("archive/data.pkl")


# ------------------------------------------------------------------ Parameters, containers, odd values


def test_parameters_both_ways(torch, tmp_path):
    r = cl_to_torch(torch, {"p": nn.Parameter(cl.ones(2, 3)), "f": nn.Parameter(cl.zeros(2), requires_grad=False),
                            "g": cl.ones(2, requires_grad=True)}, tmp_path)
    assert type(r["p"]) is torch.nn.Parameter and r["p"].requires_grad and r["p"].shape == (2, 3)
    assert type(r["f"]) is torch.nn.Parameter and not r["f"].requires_grad
    assert type(r["g"]) is torch.Tensor and r["g"].requires_grad
    back = torch_to_cl(torch, {"p": torch.nn.Parameter(torch.ones(2, 3)),
                               "f": torch.nn.Parameter(torch.zeros(2), requires_grad=False),
                               "g": torch.ones(2, requires_grad=True)}, tmp_path)
    assert type(back["p"]) is nn.Parameter and back["p"].requires_grad
    assert type(back["f"]) is nn.Parameter and not back["f"].requires_grad
    assert type(back["g"]) is cl.Tensor and back["g"].requires_grad


def _containers(lib, tensor):
    sd = OrderedDict([("0.weight", tensor([[1.0, 2.0]])), ("0.bias", tensor([0.5]))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("0", {"version": 1})])
    return {
        "sd": sd, "nested": [1, (2, [3.5, {"deep": tensor([7])}]), None], "text": "héllo",
        "numbers": (0, -1, 255, 256, 65535, 65536, -2 ** 31, 2 ** 31, 2 ** 63, -2 ** 80, 1.5, float("-inf")),
        "flags": (True, False), "bytes": b"\x00\x01\xff", "set": {1, 2}, "complex": 2 - 3j,
        "bytearray": bytearray(b"ab"), "dtype": lib.float16, "device": lib.device("cpu"),
        "size": lib.Size([2, 3]),
    }


def test_nested_containers_course_lib_to_torch(torch, tmp_path):
    r = cl_to_torch(torch, _containers(cl, cl.tensor), tmp_path)
    expected = _containers(torch, torch.tensor)
    assert type(r["sd"]) is OrderedDict and r["sd"]._metadata == expected["sd"]._metadata
    assert torch.equal(r["sd"]["0.weight"], expected["sd"]["0.weight"])
    assert r["nested"][1][1][1]["deep"].tolist() == [7]
    for k in ("text", "numbers", "flags", "bytes", "set", "complex", "bytearray", "dtype", "device", "size"):
        assert r[k] == expected[k] and type(r[k]) is type(expected[k]), k


def test_nested_containers_torch_to_course_lib(torch, tmp_path):
    r = torch_to_cl(torch, _containers(torch, torch.tensor), tmp_path)
    expected = _containers(cl, cl.tensor)
    assert type(r["sd"]) is OrderedDict and r["sd"]._metadata == expected["sd"]._metadata
    assert values(r["sd"]["0.weight"]).tolist() == [[1.0, 2.0]]
    assert values(r["nested"][1][1][1]["deep"]).tolist() == [7]
    for k in ("text", "numbers", "flags", "bytes", "set", "complex", "bytearray", "dtype", "device", "size"):
        assert r[k] == expected[k] and type(r[k]) is type(expected[k]), k


def test_meta_tensors_both_ways(torch, tmp_path):
    r = cl_to_torch(torch, {"m": cl.empty(3, 4, device="meta").t()}, tmp_path)
    assert r["m"].is_meta and torch_layout(r["m"]) == ((4, 3), (1, 4), 0, "float32")
    back = torch_to_cl(torch, {"m": torch.empty(3, 4, device="meta", dtype=torch.int8).t()}, tmp_path)
    assert back["m"].device == cl.device("meta") and layout(back["m"]) == ((4, 3), (1, 4), 0, "int8")


def test_tensor_with_python_attributes_from_torch(torch, tmp_path):
    t = torch.ones(2)
    t.note = "hello"
    r = torch_to_cl(torch, {"t": t}, tmp_path)
    assert type(r["t"]) is cl.Tensor and r["t"].note == "hello"


def test_unsupported_torch_dtypes_are_named(torch, tmp_path):
    for dtype, name in ((torch.bfloat16, "torch.BFloat16Storage"), (torch.complex64, "torch.ComplexFloatStorage"),
                        (torch.uint16, "torch.uint16")):
        with pytest.raises(RuntimeError, match=f"course_lib cannot load GLOBAL {name}: torch.load allows it"):
            torch_to_cl(torch, torch.ones(2, dtype=dtype), tmp_path)


# ------------------------------------------------------------------ mmap, map_location, byte order


def test_mmap_both_ways(torch, tmp_path):
    base = cl.arange(1000.)
    cl.save({"a": base, "b": base[100:200]}, tmp_path / "c.pt")
    r = torch.load(tmp_path / "c.pt", weights_only=True, mmap=True)
    assert same_storage_torch(r["a"], r["b"]) and r["b"][0].item() == 100.0
    tb = torch.arange(1000.)
    torch.save({"a": tb, "b": tb[100:200]}, tmp_path / "t.pt")
    back = cl.load(tmp_path / "t.pt", mmap=True)
    assert back["b"]._storage is back["a"]._storage and values(back["b"])[0] == 100.0
    assert not back["a"]._storage.data.flags.owndata


def test_torch_file_to_meta(torch, tmp_path):
    r = torch_to_cl(torch, torch.nn.Linear(4, 3).state_dict(), tmp_path, map_location="meta")
    assert {k: (tuple(v.shape), v.device.type) for k, v in r.items()} == {"weight": ((3, 4), "meta"),
                                                                          "bias": ((3,), "meta")}


def test_big_endian_file_reads_the_same_in_both(torch, tmp_path):
    pkl, _ = course_pickle({"w": cl.arange(5.), "i": cl.arange(3)})
    raw = craft(pkl, {"0": np.arange(5, dtype=">f4").tobytes(), "1": np.arange(3, dtype=">i8").tobytes()},
                byteorder=b"big")
    (tmp_path / "big.pt").write_bytes(raw)
    t = torch.load(tmp_path / "big.pt", weights_only=True)
    c = cl.load(tmp_path / "big.pt")
    for k in ("w", "i"):
        np.testing.assert_array_equal(values(c[k]), t[k].numpy())
    np.testing.assert_array_equal(t["w"].numpy(), np.arange(5.0))


def test_torch_reads_deflated_and_unaligned_course_lib_style_archives(torch):
    """The facts course_lib's reader relies on, checked on the oracle too."""
    pkl, storages = course_pickle({"w": cl.arange(5.)})
    for raw in (craft(pkl, storages, compression=zipfile.ZIP_DEFLATED), craft(pkl, storages, prefix="x")):
        assert torch.load(io.BytesIO(raw), weights_only=True)["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert values(cl.load(io.BytesIO(raw))["w"]).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_torch_reads_zip64_archives(torch, tmp_path, monkeypatch):
    from course_lib import serialization as S
    monkeypatch.setattr(S, "_FORCE_ZIP64", True)
    base = cl.arange(300_000.)
    cl.save({"w": base, "tail": base[10:]}, tmp_path / "z64.pt")
    for mmap in (False, True):
        r = torch.load(tmp_path / "z64.pt", weights_only=True, mmap=mmap)
        assert r["w"][-1].item() == 299_999.0 and same_storage_torch(r["w"], r["tail"])


def test_torch_alignment_matches(torch, tmp_path):
    torch.save({"a": torch.ones(3), "b": torch.zeros(5)}, tmp_path / "t.pt")
    cl.save({"a": cl.ones(3), "b": cl.zeros(5)}, tmp_path / "c.pt")
    for path in (tmp_path / "t.pt", tmp_path / "c.pt"):
        spans = record_spans(path.read_bytes())
        assert all(off % 64 == 0 for name, (off, _) in spans.items() if "/data/" in name), path


# ------------------------------------------------------------------ optimizers and whole models


def test_optimizer_checkpoint_course_lib_to_torch(torch, tmp_path):
    from course_lib import optim
    m = nn.Linear(3, 2)
    opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m(cl.randn(4, 3)).sum().backward()
    opt.step()
    r = cl_to_torch(torch, {"model": m.state_dict(), "optimizer": opt.state_dict()}, tmp_path)
    tm = torch.nn.Linear(3, 2)
    tm.load_state_dict(r["model"])
    topt = torch.optim.SGD(tm.parameters(), lr=0.5, momentum=0.1)
    topt.load_state_dict(r["optimizer"])
    assert topt.param_groups[0]["lr"] == 0.1 and topt.param_groups[0]["momentum"] == 0.9
    np.testing.assert_array_equal(topt.state[tm.weight]["momentum_buffer"].numpy(),
                                  values(opt.state_dict()["state"][0]["momentum_buffer"]))


def torch_resnet18(torch, num_classes: int):
    """torchvision's resnet18, written out (torchvision is not a dependency): same module names."""
    tnn = torch.nn

    class BasicBlock(tnn.Module):
        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = tnn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = tnn.BatchNorm2d(planes)
            self.relu = tnn.ReLU(inplace=True)
            self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = tnn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet(tnn.Module):
        def __init__(self):
            super().__init__()
            self.inplanes = 64
            self.conv1 = tnn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = tnn.BatchNorm2d(64)
            self.relu = tnn.ReLU(inplace=True)
            self.maxpool = tnn.MaxPool2d(3, 2, 1)
            self.layer1 = self._make_layer(64, 2)
            self.layer2 = self._make_layer(128, 2, 2)
            self.layer3 = self._make_layer(256, 2, 2)
            self.layer4 = self._make_layer(512, 2, 2)
            self.avgpool = tnn.AdaptiveAvgPool2d((1, 1))
            self.fc = tnn.Linear(512, num_classes)

        def _make_layer(self, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = tnn.Sequential(tnn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                            tnn.BatchNorm2d(planes))
            layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes
            layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
            return tnn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet()


def _randomize_torch_buffers(torch, model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
            elif name.endswith("num_batches_tracked"):
                b.fill_(17)


@pytest.mark.slow
def test_resnet18_course_lib_to_torch(torch, tmp_path):
    cl.manual_seed(0)
    cm = resnet18(num_classes=10)
    for name, b in cm.named_buffers():  # non-trivial running statistics, so eval() uses them
        if name.endswith("running_mean"):
            b.copy_(cl.randn(*b.shape) * 0.1)
        elif name.endswith("running_var"):
            b.copy_(cl.rand(*b.shape) + 0.5)
        elif name.endswith("num_batches_tracked"):
            b.fill_(17)
    cl.save(cm.state_dict(), tmp_path / "resnet18.pt")
    tm = torch_resnet18(torch, 10)
    tm.load_state_dict(torch.load(tmp_path / "resnet18.pt", weights_only=True), strict=True)
    assert tm.bn1.num_batches_tracked.item() == 17
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    cm.eval()
    tm.eval()
    with cl.no_grad():
        out_c = values(cm(cl.from_numpy(x.copy())))
    with torch.no_grad():
        out_t = tm(torch.from_numpy(x.copy())).numpy()
    np.testing.assert_allclose(out_c, out_t, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_resnet18_torch_to_course_lib(torch, tmp_path):
    torch.manual_seed(0)
    tm = torch_resnet18(torch, 10)
    _randomize_torch_buffers(torch, tm, 1)
    torch.save(tm.state_dict(), tmp_path / "resnet18.pt")
    cm = resnet18(num_classes=10)
    sd = cl.load(tmp_path / "resnet18.pt")
    assert list(sd) == list(cm.state_dict())
    cm.load_state_dict(sd, strict=True)
    x = np.random.default_rng(1).standard_normal((2, 3, 64, 64)).astype(np.float32)
    cm.eval()
    tm.eval()
    with cl.no_grad():
        out_c = values(cm(cl.from_numpy(x.copy())))
    with torch.no_grad():
        out_t = tm(torch.from_numpy(x.copy())).numpy()
    np.testing.assert_allclose(out_c, out_t, rtol=1e-4, atol=1e-4)
    # and back again: course_lib's re-save of the loaded model is what torch saved
    cl.save(cm.state_dict(), tmp_path / "again.pt")
    again = torch.load(tmp_path / "again.pt", weights_only=True)
    for k, v in tm.state_dict().items():
        assert torch.equal(again[k], v), k
