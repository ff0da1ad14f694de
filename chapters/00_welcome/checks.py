"""Checks for chapter 00 (welcome): three pure-Python warm-ups."""
from __future__ import annotations

from course.checks import case, exercise


def _fizzbuzz_reference(n: int) -> str:
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)


@exercise("00.1", title="fizzbuzz", points=1,
          hint="test divisibility by 15 (both 3 and 5) before testing 3 and 5 alone; "
               "other numbers come back as strings, str(n).")
def _fizzbuzz(fizzbuzz):
    ns = [1, 2, 3, 4, 5, 6, 9, 10, 14, 15, 30, 98, 99, 100, 105]
    return [case(fizzbuzz, n, name="fizzbuzz", expected=_fizzbuzz_reference(n)) for n in ns]


@exercise("00.2", title="flatten", points=2,
          hint="recurse: a number has shape () and flattens to [x]; a list's shape is "
               "(len(list),) + the shape its items share; items of different shapes -> ValueError.")
def _flatten(flatten):
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
    out = [case(flatten, data, name="flatten", expected=exp) for data, exp in cases]
    # the last two agree on their items' first size, and differ only deeper down
    for ragged in ([[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [[[1], [2]], [[3], [4, 5]]], [[[1, 2]], [[3]]],
                   [[[1, 2], [3, 4]], [[5], [6]]]):
        out.append(case(flatten, ragged, name="flatten", raises=ValueError))
    return out


@exercise("00.3", title="flat_index", points=2,
          hint="row-major: the last dimension moves fastest, so the step of dimension d "
               "is the product of the sizes after d; check 0 <= i < size in every dimension.")
def _flat_index(flat_index):
    cases = [
        ((), (), 0),
        ((2,), (5,), 2),
        ((0, 0), (3, 4), 0),
        ((1, 2), (3, 4), 6),
        ((2, 3), (3, 4), 11),
        ((1, 0, 3), (2, 3, 4), 15),
        ((1, 2, 3), (2, 3, 4), 23),
        ((0, 1, 0, 1), (2, 2, 2, 2), 5),
        ((4, 0), (5, 1), 4),
    ]
    out = [case(flat_index, idx, shape, name="flat_index", expected=exp) for idx, shape, exp in cases]
    for idx, shape in (((3, 0), (3, 4)), ((0, 4), (3, 4)), ((-1, 0), (3, 4)), ((0,), (0,))):
        out.append(case(flat_index, idx, shape, name="flat_index", raises=IndexError))
    return out
