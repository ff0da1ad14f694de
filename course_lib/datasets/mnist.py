"""MNIST and Fashion-MNIST from IDX files, and the IDX format itself.

In torchvision: ``torchvision/datasets/mnist.py`` (``read_sn3_pascalvincent_tensor``
reads the format).  course_lib never downloads: put the four files of the
dataset (as distributed, optionally gzipped) in ``<root>/MNIST/raw/`` or
``<root>/FashionMNIST/raw/`` (torchvision's layout), or write your own with
:func:`write_idx`.

The IDX format (``http://yann.lecun.com/exdb/mnist/``)::

    byte 0-1   0, 0
    byte 2     element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
    byte 3     number of dimensions, d
    then       d sizes, each a big-endian 32-bit unsigned int
    then       the elements, row-major, big-endian

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "x.idx")
>>> write_idx(path, np.arange(6, dtype=np.uint8).reshape(2, 3))
>>> read_idx(path)
array([[0, 1, 2],
       [3, 4, 5]], dtype=uint8)
"""
from __future__ import annotations

import gzip
import os
import struct

import numpy as np

from ..utils.data.dataset import Dataset

__all__ = ["read_idx", "write_idx", "MNIST", "FashionMNIST"]

_IDX_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_CODES = {dt.newbyteorder("=").str[1:]: code for code, dt in _IDX_TYPES.items()}


def _open(path: str):
    with open(path, "rb") as f:
        head = f.read(2)
    return gzip.open(path, "rb") if head == b"\x1f\x8b" else open(path, "rb")


def read_idx(path: str) -> np.ndarray:
    """The array stored in an IDX file (gzipped or not), in native byte order."""
    with _open(path) as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (it must start with two zero bytes)")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"{path}: unknown IDX element type 0x{code:02X}")
    if len(data) < 4 + 4 * ndim:
        raise ValueError(f"{path}: truncated IDX header")
    shape = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    dtype = _IDX_TYPES[code]
    count = int(np.prod(shape, dtype=np.int64))
    offset = 4 + 4 * ndim
    expected = offset + count * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"{path}: IDX header says {shape} of {dtype.newbyteorder('=')} "
                         f"({expected} bytes), but the file has {len(data)} bytes")
    return np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(shape).astype(
        dtype.newbyteorder("="))


def write_idx(path: str, array: np.ndarray, compress: bool | None = None) -> None:
    """Write ``array`` as an IDX file (gzipped if ``compress`` or if ``path`` ends in ``.gz``)."""
    array = np.asarray(array)
    key = array.dtype.newbyteorder("=").str[1:]
    if key not in _IDX_CODES:
        raise TypeError(f"IDX cannot store {array.dtype}: use uint8, int8, int16, int32, float32 or float64")
    code = _IDX_CODES[key]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    body = np.ascontiguousarray(array, dtype=_IDX_TYPES[code]).tobytes()
    if compress is None:
        compress = str(path).endswith(".gz")
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(header + body)


class MNIST(Dataset):
    """Handwritten digits, 28x28 grayscale: ``ds[i]`` is ``(image, label)``.

    ``image`` is a ``uint8`` numpy array of shape (28, 28) (torchvision gives a
    PIL image; ``transforms.ToTensor()`` accepts both), ``label`` an int.
    ``train=True`` reads the 60,000 training images, ``False`` the 10,000 test
    images.  ``transform`` / ``target_transform`` are applied on access.
    """

    resources = {
        True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
        False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
    }
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root: str, train: bool = True, transform=None, target_transform=None,
                 download: bool = False):
        if download:
            raise RuntimeError("course_lib does not download datasets: put the IDX files in "
                               f"{self.raw_folder_of(root)}")
        self.root = root
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        images, labels = (self._find(name) for name in self.resources[train])
        self.data = read_idx(images)
        self.targets = read_idx(labels).astype(np.int64)
        if self.data.ndim != 3 or self.targets.ndim != 1 or len(self.data) != len(self.targets):
            raise ValueError(f"{images} and {labels} do not hold N images and N labels: "
                             f"shapes {self.data.shape} and {self.targets.shape}")

    @classmethod
    def raw_folder_of(cls, root: str) -> str:
        return os.path.join(root, cls.__name__, "raw")

    @property
    def raw_folder(self) -> str:
        return self.raw_folder_of(self.root)

    def _find(self, name: str) -> str:
        for candidate in (name, name + ".gz"):
            path = os.path.join(self.raw_folder, candidate)
            if os.path.isfile(path):
                return path
        raise RuntimeError(f"Dataset not found: {os.path.join(self.raw_folder, name)}[.gz] is missing. "
                           "course_lib does not download datasets: copy the IDX files there.")

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        img, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self) -> str:
        split = "Train" if self.train else "Test"
        return (f"Dataset {self.__class__.__name__}\n    Number of datapoints: {len(self)}\n"
                f"    Root location: {self.root}\n    Split: {split}")


class FashionMNIST(MNIST):
    """Zalando's clothes images, in MNIST's format and file names (``<root>/FashionMNIST/raw``)."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
