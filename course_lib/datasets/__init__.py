"""Small datasets for the course, generated from a seed (nothing is downloaded).

``shapes``: tiny grayscale images of four shapes (square, disk, plus, cross), for
training a first network in seconds (chapter 04).

``synthetic``: procedural colour images (``SyntheticImages``, optionally made
CPU-expensive with ``work``) and tables (``SyntheticTabular``), for chapter 06.

``patterns``: 32x32 colour images of five shapes, solid or striped (10 classes,
``Patterns``, shaped like torchvision's ``CIFAR10``), for the capstone (chapter 09).

``graphs``: stochastic block model graphs as edge lists, and the graph operations of
chapter 09 (``gcn_norm``, ``propagate``, ``mean_aggregate``, ``random_walks``).

``mnist``: MNIST and Fashion-MNIST read from their IDX files (``read_idx``,
``write_idx``); ``transforms``: ``Compose``, ``ToTensor``, ``Normalize``,
``RandomCrop``, ``RandomHorizontalFlip`` (torchvision's names).
"""
from . import transforms  # noqa: F401
from .mnist import MNIST, FashionMNIST, read_idx, write_idx  # noqa: F401
from .patterns import PATTERN_CLASSES, Patterns, make_patterns  # noqa: F401
from .shapes import SHAPE_CLASSES, Shapes, make_shapes  # noqa: F401
from .synthetic import SyntheticImages, SyntheticTabular  # noqa: F401

__all__ = ["SHAPE_CLASSES", "Shapes", "make_shapes", "PATTERN_CLASSES", "Patterns", "make_patterns",
           "SyntheticImages", "SyntheticTabular", "MNIST", "FashionMNIST",
           "read_idx", "write_idx", "transforms"]
