"""Image transforms: ``Compose``, ``ToTensor``, ``Normalize``, ``RandomCrop``, ``RandomHorizontalFlip``.

In torchvision: ``torchvision/transforms/transforms.py`` (same names, same
arguments).  Images are numpy arrays of shape (H, W) or (H, W, C) before
``ToTensor`` (torchvision also takes PIL images) and course_lib tensors of
shape (C, H, W) after it.

Random transforms draw from course_lib's global generator, as torchvision's
draw from torch's: in DataLoader workers each worker's generator is seeded
differently (base seed + worker id), so workers do not repeat each other's
augmentations.

>>> t = Compose([ToTensor(), Normalize((0.5,), (0.5,))])
>>> x = t(np.full((2, 2), 255, dtype=np.uint8))
>>> x
tensor([[[1., 1.],
         [1., 1.]]])
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["Compose", "ToTensor", "Normalize", "RandomCrop", "RandomHorizontalFlip"]


def _cl():
    import course_lib
    return course_lib


def _is_tensor(x) -> bool:
    return isinstance(x, _cl().Tensor)


class Compose:
    """Apply transforms one after another."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + "("] + [f"    {t}" for t in self.transforms] + [")"]
        return "\n".join(lines)


class ToTensor:
    """(H, W[, C]) numpy image -> (C, H, W) tensor; ``uint8`` becomes float32 in [0, 1], other dtypes are kept."""

    def __call__(self, pic):
        cl = _cl()
        if not isinstance(pic, np.ndarray):
            if hasattr(pic, "mode") and hasattr(pic, "size"):  # a PIL image
                pic = np.asarray(pic)
            else:
                raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if pic.ndim not in {2, 3}:
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic[:, :, None]
        chw = np.ascontiguousarray(pic.transpose(2, 0, 1))
        if chw.dtype == np.uint8:
            return cl.from_numpy((chw / np.float32(255)).astype(np.float32))
        return cl.from_numpy(chw)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class Normalize:
    """``(x - mean[c]) / std[c]`` for each channel ``c`` of a float tensor (..., C, H, W)."""

    def __init__(self, mean, std, inplace: bool = False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor):
        cl = _cl()
        if not _is_tensor(tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.ndim < 3:
            raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{tensor.size()}")
        mean = cl.as_tensor(self.mean, dtype=tensor.dtype)
        std = cl.as_tensor(self.std, dtype=tensor.dtype)
        if (std == 0).any():
            raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
        if mean.ndim == 1:
            mean = mean.view(-1, 1, 1)
        if std.ndim == 1:
            std = std.view(-1, 1, 1)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return (tensor - mean) / std

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


def _setup_size(size, error_msg: str) -> tuple:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return tuple(size)


def _hw(img) -> tuple:
    """(height, width) of a (..., H, W) tensor or an (H, W[, C]) numpy image."""
    if _is_tensor(img):
        return img.shape[-2], img.shape[-1]
    return img.shape[0], img.shape[1]


class RandomCrop:
    """Crop a random ``size`` window, after optional padding.

    ``padding``: int (all sides), (left/right, top/bottom) or (left, top,
    right, bottom); ``pad_if_needed`` pads images smaller than ``size``;
    ``padding_mode``: ``'constant'`` (with ``fill``), ``'edge'``, ``'reflect'``
    or ``'symmetric'``.
    """

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant"):
        self.size = tuple(_setup_size(size, error_msg="Please provide only two dimensions (h, w) for size."))
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img, output_size: tuple) -> tuple:
        """Random (top, left, height, width) of a crop of ``output_size`` inside ``img``."""
        cl = _cl()
        h, w = _hw(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = int(cl.randint(0, h - th + 1, size=(1,)).item())
        j = int(cl.randint(0, w - tw + 1, size=(1,)).item())
        return i, j, th, tw

    def _pad(self, img, left: int, top: int, right: int, bottom: int):
        mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}[
            self.padding_mode]
        kw = {"constant_values": self.fill} if mode == "constant" else {}
        if _is_tensor(img):
            a = img.numpy()
            widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
            return _cl().from_numpy(np.pad(a, widths, mode=mode, **kw))
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
        return np.pad(img, widths, mode=mode, **kw)

    def __call__(self, img):
        if self.padding is not None:
            p = self.padding
            if isinstance(p, numbers.Number):
                p = (p, p, p, p)
            elif len(p) == 1:
                p = (p[0],) * 4
            elif len(p) == 2:
                p = (p[0], p[1], p[0], p[1])
            img = self._pad(img, *p)
        h, w = _hw(img)
        if self.pad_if_needed and w < self.size[1]:
            d = self.size[1] - w
            img = self._pad(img, d, 0, d, 0)
        if self.pad_if_needed and h < self.size[0]:
            d = self.size[0] - h
            img = self._pad(img, 0, d, 0, d)
        i, j, th, tw = self.get_params(img, self.size)
        if _is_tensor(img):
            return img[..., i:i + th, j:j + tw]
        return img[i:i + th, j:j + tw]

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip:
    """Mirror left-right with probability ``p``."""

    def __init__(self, p: float = 0.5):
        self.p = p

    def __call__(self, img):
        cl = _cl()
        if cl.rand(1).item() < self.p:
            if _is_tensor(img):
                return img.flip(-1)
            return img[:, ::-1].copy()
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"
