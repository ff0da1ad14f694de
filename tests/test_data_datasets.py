"""course_lib.datasets: the IDX reader (MNIST format), procedural datasets and transforms."""
from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import course_lib as cl
from course_lib.datasets import transforms as T
from course_lib.datasets.mnist import MNIST, FashionMNIST, read_idx, write_idx
from course_lib.datasets.synthetic import SyntheticImages, SyntheticTabular
from course_lib.utils.data import DataLoader

DOCTEST_MODULES = ["course_lib.datasets.synthetic", "course_lib.datasets.transforms", "course_lib.datasets.mnist",
                   "course_lib.utils.data", "course_lib.utils.data.dataset", "course_lib.utils.data.sampler",
                   "course_lib.utils.data.dataloader", "course_lib.utils.data._utils.collate"]


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


# ----------------------------------------------------------------------------- IDX

@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("gz", [False, True])
def test_idx_round_trip(tmp_path, dtype, gz):
    a = (np.arange(2 * 3 * 4) - 5).astype(dtype).reshape(2, 3, 4)
    path = tmp_path / ("a.idx" + (".gz" if gz else ""))
    write_idx(path, a)
    b = read_idx(path)
    assert b.dtype == np.dtype(dtype) and b.shape == (2, 3, 4) and (a == b).all()


def test_idx_header_is_the_documented_one(tmp_path):
    path = tmp_path / "labels"
    write_idx(path, np.array([7, 2, 1], dtype=np.uint8))
    raw = path.read_bytes()
    assert raw == bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 7, 2, 1])
    path = tmp_path / "f"
    write_idx(path, np.array([1.0], dtype=np.float32))
    assert path.read_bytes() == bytes([0, 0, 0x0D, 1, 0, 0, 0, 1]) + np.array([1.0], ">f4").tobytes()


def test_idx_errors(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(bad)
    bad.write_bytes(bytes([0, 0, 0x42, 1, 0, 0, 0, 1, 0]))
    with pytest.raises(ValueError, match="unknown IDX element type 0x42"):
        read_idx(bad)
    bad.write_bytes(bytes([0, 0, 0x08, 1, 0, 0, 0, 5, 1, 2]))
    with pytest.raises(ValueError, match=r"says \(5,\) of uint8 \(13 bytes\), but the file has 10 bytes"):
        read_idx(bad)
    with pytest.raises(TypeError, match="IDX cannot store int64"):
        write_idx(tmp_path / "x", np.zeros(2, np.int64))


def _write_mnist(root, cls, n_train=6, n_test=3, gz=False):
    raw = root / cls.__name__ / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    out = {}
    for train, n in ((True, n_train), (False, n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) * 3 % 10).astype(np.uint8)
        img_name, lab_name = cls.resources[train]
        suffix = ".gz" if gz else ""
        write_idx(raw / (img_name + suffix), images)
        write_idx(raw / (lab_name + suffix), labels)
        out[train] = (images, labels)
    return out


@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
@pytest.mark.parametrize("gz", [False, True])
def test_mnist_reads_idx_files(tmp_path, cls, gz):
    written = _write_mnist(tmp_path, cls, gz=gz)
    train = cls(str(tmp_path), train=True)
    test = cls(str(tmp_path), train=False)
    assert len(train) == 6 and len(test) == 3
    img, label = train[4]
    assert img.dtype == np.uint8 and img.shape == (28, 28)
    assert (img == written[True][0][4]).all() and label == 2 and isinstance(label, int)
    assert "Split: Test" in repr(test)
    with_t = cls(str(tmp_path), transform=T.ToTensor(), target_transform=lambda y: y + 100)
    x, y = with_t[0]
    assert x.shape == (1, 28, 28) and x.dtype is cl.float32 and y == 100
    batches = list(DataLoader(with_t, batch_size=4))
    assert batches[0][0].shape == (4, 1, 28, 28) and batches[0][1].tolist() == [100, 103, 106, 109]


def test_mnist_missing_files_and_download(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found.*train-images-idx3-ubyte"):
        MNIST(str(tmp_path))
    with pytest.raises(RuntimeError, match="does not download"):
        FashionMNIST(str(tmp_path), download=True)


# ----------------------------------------------------------------------------- procedural datasets

def test_synthetic_images_are_deterministic_per_index():
    ds = SyntheticImages(50, size=12, channels=3, num_classes=4, seed=1)
    img, label = ds[7]
    assert img.shape == (12, 12, 3) and img.dtype == np.uint8 and 0 <= label < 4
    again = SyntheticImages(50, size=12, channels=3, num_classes=4, seed=1)
    assert (again[7][0] == img).all() and again[7][1] == label == ds.label(7)
    other = SyntheticImages(50, size=12, channels=3, num_classes=4, seed=2)
    assert not (other[7][0] == img).all()
    assert (ds[-43][0] == img).all()
    with pytest.raises(IndexError):
        ds[50]
    labels = [ds.label(i) for i in range(50)]
    assert set(labels) == {0, 1, 2, 3}
    # work makes a sample slower to compute, not different in kind
    busy = SyntheticImages(50, size=12, channels=3, num_classes=4, seed=1, work=3)
    assert busy[7][1] == label and busy[7][0].shape == img.shape


def test_synthetic_images_through_transforms_and_workers():
    ds = SyntheticImages(16, size=8, channels=1, seed=0, transform=T.ToTensor())
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert x.shape == (4, 1, 8, 8) and x.dtype is cl.float32 and y.dtype is cl.int64
    one = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, batch_size=4)]
    two = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, batch_size=4, num_workers=2)]
    assert one == two


def test_synthetic_tabular():
    ds = SyntheticTabular(200, num_features=5, num_classes=3, seed=0)
    x, y = ds[3]
    assert x.shape == (5,) and x.dtype is cl.float32 and isinstance(y, int)
    assert ds.data.shape == (200, 5) and ds.targets.dtype is cl.int64
    assert set(ds.targets.tolist()) == {0, 1, 2}
    again = SyntheticTabular(200, num_features=5, num_classes=3, seed=0)
    assert again.data.tolist() == ds.data.tolist()


# ----------------------------------------------------------------------------- transforms

def test_to_tensor():
    hwc = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    x = T.ToTensor()(hwc)
    assert x.shape == (3, 2, 3) and x.dtype is cl.float32
    assert np.allclose(x.numpy(), hwc.transpose(2, 0, 1) / 255.0)
    gray = T.ToTensor()(np.zeros((4, 5), np.uint8))
    assert gray.shape == (1, 4, 5)
    floats = T.ToTensor()(np.full((2, 2, 1), 3.0))
    assert floats.dtype is cl.float64 and floats.max().item() == 3.0  # not scaled
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([1, 2])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 1 dimensions."):
        T.ToTensor()(np.zeros(3, np.uint8))


def test_normalize():
    x = cl.tensor([[[1.0, 2.0]], [[3.0, 5.0]]])
    y = T.Normalize((1.0, 3.0), (1.0, 2.0))(x)
    assert y.tolist() == [[[0.0, 1.0]], [[0.0, 1.0]]]
    assert x.tolist() == [[[1.0, 2.0]], [[3.0, 5.0]]]  # not in place
    T.Normalize((1.0, 3.0), (1.0, 2.0), inplace=True)(x)
    assert x.tolist() == [[[0.0, 1.0]], [[0.0, 1.0]]]
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got course_lib.int64."):
        T.Normalize((0,), (1,))(cl.zeros(1, 2, 2, dtype=cl.int64))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize((0,), (0,))(cl.zeros(1, 2, 2))
    with pytest.raises(ValueError, match=r"Expected tensor to be a tensor image of size \(..., C, H, W\)"):
        T.Normalize((0,), (1,))(cl.zeros(2, 2))


def test_random_crop():
    img = cl.arange(25.).view(1, 5, 5)
    cl.manual_seed(0)
    crops = [T.RandomCrop(3)(img) for _ in range(30)]
    assert all(c.shape == (1, 3, 3) for c in crops)
    corners = {c[0, 0, 0].item() for c in crops}
    assert corners <= {0.0, 1.0, 2.0, 5.0, 6.0, 7.0, 10.0, 11.0, 12.0} and len(corners) > 3
    for c in crops:  # each crop is a window of the image
        i, j = divmod(int(c[0, 0, 0].item()), 5)
        assert c.tolist() == img[:, i:i + 3, j:j + 3].tolist()
    padded = T.RandomCrop(7, padding=1)(img)
    assert padded.shape == (1, 7, 7) and padded[0, 0].tolist() == [0.0] * 7
    assert T.RandomCrop(6, pad_if_needed=True)(img).shape == (1, 6, 6)
    assert T.RandomCrop((2, 4))(np.zeros((5, 5, 3))).shape == (2, 4, 3)
    edge = T.RandomCrop(7, padding=1, padding_mode="edge")(img)
    assert edge[0, 0, 0].item() == 0.0 and edge[0, 6, 6].item() == 24.0
    with pytest.raises(ValueError, match=r"Required crop size \(6, 6\) is larger than input image size \(5, 5\)"):
        T.RandomCrop(6)(img)
    cl.manual_seed(3)
    a = [T.RandomCrop(3)(img).tolist() for _ in range(5)]
    cl.manual_seed(3)
    assert [T.RandomCrop(3)(img).tolist() for _ in range(5)] == a


def test_random_horizontal_flip_and_compose():
    img = cl.arange(6.).view(1, 2, 3)
    assert T.RandomHorizontalFlip(p=1.0)(img).tolist() == [[[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]]
    assert T.RandomHorizontalFlip(p=0.0)(img).tolist() == img.tolist()
    assert T.RandomHorizontalFlip(p=1.0)(np.arange(6).reshape(2, 3)).tolist() == [[2, 1, 0], [5, 4, 3]]
    cl.manual_seed(0)
    flips = [T.RandomHorizontalFlip()(img)[0, 0, 0].item() for _ in range(200)]
    assert 60 < flips.count(2.0) < 140
    pipeline = T.Compose([T.ToTensor(), T.RandomHorizontalFlip(1.0), T.Normalize((0.5,), (0.5,))])
    out = pipeline(np.array([[0, 255]], dtype=np.uint8))
    assert out.tolist() == [[[1.0, -1.0]]]
    assert repr(pipeline).splitlines()[0] == "Compose(" and "RandomHorizontalFlip(p=1.0)" in repr(pipeline)


class SameImage(SyntheticImages):
    """Every index gives the same picture: only the augmentation differs between samples."""

    def __getitem__(self, index):
        return self.transform(np.arange(64, dtype=np.float32).reshape(1, 8, 8)), index


def test_workers_augment_differently():
    # each worker's course_lib generator is seeded with base_seed + worker_id
    ds = SameImage(8, transform=T.Compose([cl.from_numpy, T.RandomCrop(4)]))

    def corners(seed):
        loader = DataLoader(ds, batch_size=None, num_workers=2, generator=cl.Generator().manual_seed(seed))
        return [x[0, 0, 0].item() for x, _ in loader]

    got = corners(0)
    assert got == corners(0)                    # reproducible
    assert got[0::2] != got[1::2]               # worker 0 (even samples) and worker 1 (odd) differ
    assert got != corners(1)
