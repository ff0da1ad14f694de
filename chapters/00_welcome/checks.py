"""Checks for chapter 00 (welcome): three pure-Python warm-ups.

Each check has fixed edge cases and cases drawn from `rng` (a secret seed when grading). Expected
values are literals, or come from the way the inputs were built (00.2) or from numpy (00.3).
"""
from __future__ import annotations

import numpy as np

from course.checks import call, exercise

#: fizzbuzz's word for n by n % 15 ("" means str(n))
_WORDS = ["FizzBuzz", "", "", "Fizz", "", "Buzz", "Fizz", "", "", "Fizz", "Buzz", "", "Fizz", "", ""]


@exercise("00.1", title="fizzbuzz", points=1,
          hint="test divisibility by 15 (both 3 and 5) before testing 3 and 5 alone; "
               "other numbers come back as strings, str(n).")
def _fizzbuzz(rng):
    ns = [1, 2, 3, 4, 5, 6, 9, 10, 14, 15, 30, 98, 99, 100, 105]
    ns += [int(n) for n in rng.integers(106, 1_000_000, size=5)]
    return [call(n, expected=_WORDS[n % 15] or str(n)) for n in ns]


def _nest(flat: list, shape: tuple) -> object:
    """The nested lists of `shape` holding `flat` in row-major order (a number for shape ())."""
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])]


def _random_nested(rng) -> tuple[object, list, tuple]:
    shape = tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(1, 5))))
    flat = [int(v) for v in rng.integers(-99, 100, size=int(np.prod(shape)))]
    return _nest(flat, shape), flat, shape


@exercise("00.2", title="flatten", points=2,
          hint="recurse: a number has shape () and flattens to [x]; a list's shape is "
               "(len(list),) + the shape its items share; items of different shapes -> ValueError.")
def _flatten(rng):
    cases = [
        ([[1, 2, 3], [4, 5, 6]], ([1, 2, 3, 4, 5, 6], (2, 3))),
        ([1, 2, 3], ([1, 2, 3], (3,))),
        (7, ([7], ())),
        (2.5, ([2.5], ())),
        ([[1], [2], [3]], ([1, 2, 3], (3, 1))),
        ([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], ([1, 2, 3, 4, 5, 6, 7, 8], (2, 2, 2))),
        ([[0.5, -1.0, 2.0]], ([0.5, -1.0, 2.0], (1, 3))),
        ([], ([], (0,))),
        ([[], []], ([], (2, 0))),
    ]
    for _ in range(3):
        data, flat, shape = _random_nested(rng)
        cases.append((data, (flat, shape)))
    out = [call(data, expected=exp) for data, exp in cases]
    # the last two agree on their items' first size, and differ only deeper down
    ragged = [[[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [[[1], [2]], [[3], [4, 5]]], [[[1, 2]], [[3]]],
              [[[1, 2], [3, 4]], [[5], [6]]]]
    # a random nested list (two or more dims, two or more items) whose last innermost list has one item more
    shape = (int(rng.integers(2, 4)),) + tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(1, 4))))
    data = _nest([int(v) for v in rng.integers(-99, 100, size=int(np.prod(shape)))], shape)
    inner = data
    for _ in range(len(shape) - 1):
        inner = inner[-1]
    inner.append(int(rng.integers(-99, 100)))
    ragged.append(data)
    out += [call(r, raises=ValueError) for r in ragged]
    return out


@exercise("00.3", title="flat_index", points=2,
          hint="row-major: the last dimension moves fastest, so the step of dimension d "
               "is the product of the sizes after d; check 0 <= i < size in every dimension.")
def _flat_index(rng):
    cases = [((), ()), ((2,), (5,)), ((0, 0), (3, 4)), ((1, 2), (3, 4)), ((2, 3), (3, 4)), ((1, 0, 3), (2, 3, 4)),
             ((1, 2, 3), (2, 3, 4)), ((0, 1, 0, 1), (2, 2, 2, 2)), ((4, 0), (5, 1))]
    for _ in range(3):
        shape = tuple(int(n) for n in rng.integers(1, 9, size=int(rng.integers(1, 6))))
        cases.append((tuple(int(rng.integers(0, n)) for n in shape), shape))
    out = [call(idx, shape, expected=int(np.ravel_multi_index(idx, shape)) if shape else 0) for idx, shape in cases]
    bad = [((3, 0), (3, 4)), ((0, 4), (3, 4)), ((-1, 0), (3, 4)), ((0,), (0,))]
    shape = tuple(int(n) for n in rng.integers(1, 9, size=3))
    idx = [int(rng.integers(0, n)) for n in shape]
    idx[int(rng.integers(0, 3))] = shape[1] + shape[0] + shape[2]  # past the end of its dimension
    bad.append((tuple(idx), shape))
    out += [call(idx, shape, raises=IndexError) for idx, shape in bad]
    return out
