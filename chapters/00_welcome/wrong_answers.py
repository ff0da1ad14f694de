"""Planted wrong answers for chapter 00 (welcome): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations


# ------------------------------------------------------------------ 00.1 fizzbuzz
def fizzbuzz_15_last(n):
    # tests 3 and 5 before 15: never says FizzBuzz
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    if n % 15 == 0:
        return "FizzBuzz"
    return str(n)


def fizzbuzz_returns_int(n):
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return n


def fizzbuzz_lowercase(n):
    return {0: "fizzbuzz"}.get(n % 15, "fizz" if n % 3 == 0 else "buzz" if n % 5 == 0 else str(n))


# ------------------------------------------------------------------ 00.2 flatten
def flatten_no_ragged_check(data):
    if not isinstance(data, list):
        return [data], ()
    flat, shape = [], None
    for item in data:
        f, s = flatten_no_ragged_check(item)
        shape = s
        flat.extend(f)
    return flat, (len(data),) + (shape or ())


def flatten_shape_as_list(data):
    if not isinstance(data, list):
        return [data], []
    flat, inner = [], None
    for item in data:
        f, s = flatten_shape_as_list(item)
        if inner is not None and s != inner:
            raise ValueError("ragged")
        inner = s
        flat.extend(f)
    return flat, [len(data)] + (inner or [])


def flatten_scalar_shape_1(data):
    if not isinstance(data, list):
        return [data], (1,)
    flat, inner = [], None
    for item in data:
        f, s = flatten_scalar_shape_1(item)
        if inner is not None and s != inner:
            raise ValueError("ragged")
        inner = s
        flat.extend(f)
    inner = () if inner == (1,) else inner
    return flat, (len(data),) + (inner or ())


def flatten_empty_inner_lost(data):
    # right except that [[], []] comes back as shape (2,)
    if not isinstance(data, list):
        return [data], ()
    flat, inner = [], None
    for item in data:
        f, s = flatten_empty_inner_lost(item)
        if inner is not None and s != inner:
            raise ValueError("ragged")
        inner = s
        flat.extend(f)
    if inner == (0,):
        inner = ()
    return flat, (len(data),) + (inner or ())


def flatten_compares_first_size_only(data):
    # checks only that the items have the same length, not that their whole shapes agree
    if not isinstance(data, list):
        return [data], ()
    flat, inner = [], None
    for item in data:
        f, s = flatten_compares_first_size_only(item)
        if inner is not None and s[:1] != inner[:1]:
            raise ValueError("ragged")
        inner = s
        flat.extend(f)
    return flat, (len(data),) + (inner or ())


# ------------------------------------------------------------------ 00.3 flat_index
def flat_index_column_major(index, shape):
    position, step = 0, 1
    for i, size in zip(index, shape):
        if not 0 <= i < size:
            raise IndexError(i)
        position += i * step
        step *= size
    return position


def flat_index_no_bounds(index, shape):
    position, step = 0, 1
    for i, size in zip(reversed(index), reversed(shape)):
        position += i * step
        step *= size
    return position


def flat_index_sum(index, shape):
    if any(not 0 <= i < s for i, s in zip(index, shape)):
        raise IndexError(index)
    return sum(index)


WRONG = {
    "00.1": [fizzbuzz_15_last, fizzbuzz_returns_int, fizzbuzz_lowercase],
    "00.2": [flatten_no_ragged_check, flatten_shape_as_list, flatten_scalar_shape_1, flatten_empty_inner_lost,
             flatten_compares_first_size_only],
    "00.3": [flat_index_column_major, flat_index_no_bounds, flat_index_sum],
}
