"""Small datasets for the course, generated from a seed (nothing is downloaded).

``shapes``: tiny grayscale images of four shapes (square, disk, plus, cross), for
training a first network in seconds (chapter 04).
"""
from .shapes import SHAPE_CLASSES, Shapes, make_shapes  # noqa: F401

__all__ = ["SHAPE_CLASSES", "Shapes", "make_shapes"]
