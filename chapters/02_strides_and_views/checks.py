"""Checks for chapter 02 (strides and views).

Every geometry exercise returns ``(shape, stride, offset)``: a tuple of ints, a
tuple of ints and an int, exactly what ``Tensor.as_strided(shape, stride, offset)``
takes. Expected values come from running the same op on a course_lib tensor of
that geometry (``_reference``), except for a few edge cases where course_lib
does not (yet) behave like PyTorch; those are literals observed with torch
2.13.0 and marked ``# torch``.
"""
from __future__ import annotations

from typing import Any, Callable

from course.checks import Case, case, exercise

# ---------------------------------------------------------------- helpers


def _cl():
    import course_lib

    return course_lib


def _tensor(shape: tuple, stride: tuple, offset: int):
    """A course_lib tensor with this geometry, over a storage just big enough."""
    if all(s > 0 for s in shape):
        need = offset + 1 + sum((s - 1) * st for s, st in zip(shape, stride))
    else:
        need = offset + 1
    return _cl().zeros(need).as_strided(shape, stride, offset)


def _geometry(t) -> tuple:
    return (tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride()), int(t.storage_offset()))


class _Raises:
    """Marker for an expected exception in a case table."""

    def __init__(self, exc: type[BaseException]):
        self.exc = exc


def _reference(op: Callable[[], Any]):
    """What the reference gives: its value, or _Raises(type) if it raises."""
    try:
        return op()
    except Exception as e:  # noqa: BLE001 - any error the reference raises is the expected one
        return _Raises(type(e))


def _case(fn, args: tuple, expected, name: str) -> Case:
    if isinstance(expected, _Raises):
        return case(fn, *args, name=name, raises=expected.exc)
    return case(fn, *args, name=name, expected=expected)


_REF = object()  # "ask the reference" in a case table


def _geometry_cases(fn, name: str, table: list, op: Callable) -> list[Case]:
    """Cases for `fn(shape, stride, offset, *args)`; table rows are (shape, stride, offset, args, expected),
    with expected _REF to run `op(tensor, *args)` on course_lib."""
    out = []
    for shape, stride, offset, args, expected in table:
        if expected is _REF:
            expected = _reference(lambda: _geometry(op(_tensor(shape, stride, offset), *args)))
        out.append(_case(fn, (shape, stride, offset) + tuple(args), expected, name))
    return out


# ---------------------------------------------------------------- 02.1 views or copies

#: t = course_lib.arange(24.).reshape(2, 3, 4) in every expression
COPY_EXPRESSIONS = [
    "t.view(4, 6)",
    "t.reshape(6, 4)",
    "t.transpose(0, 1).reshape(6, 4)",
    "t[:, :2].reshape(2, 8)",
    "t[:, :2].reshape(16)",
    "t.unsqueeze(0)",
    "t.squeeze()",
    "t[:, :1].expand(2, 5, 4)",
    "t[:1].expand_as(t)",
    "t.transpose(0, 2)",
    "t.permute(2, 0, 1)",
    "t.contiguous()",
    "t.transpose(0, 1).contiguous()",
    "t.clone()",
    "t.detach()",
]


def copies_in_course_lib(expression: str) -> bool:
    """Does `expression` (on t = arange(24.).reshape(2, 3, 4)) give a tensor with new storage?"""
    cl = _cl()
    t = cl.arange(24.).reshape(2, 3, 4)
    r = eval(expression, {"t": t, "course_lib": cl})  # noqa: S307 - fixed expressions above
    return r.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()


@exercise("02.1", title="predict_copies", points=1,
          hint="a result copies when it cannot be written as (shape, stride, offset) over t's storage; run the "
               "verification cell: its untyped_storage().data_ptr() differs from t's. Keys are the strings of "
               "EXPRESSIONS.")
def _predict_copies(predict_copies):
    def entry(expr):
        return lambda: predict_copies()[expr]

    predict_copies()  # a stub raises NotImplementedError here: NOT ATTEMPTED
    return [Case(f"predict_copies()[{expr!r}]", entry(expr), copies_in_course_lib(expr)) for expr in COPY_EXPRESSIONS]


# ---------------------------------------------------------------- 02.2 is_contiguous

_CONTIGUITY = [
    ((), ()),
    ((5,), (1,)),
    ((5,), (2,)),
    ((3,), (0,)),
    ((1,), (0,)),
    ((2, 3), (3, 1)),
    ((2, 3), (1, 2)),
    ((2, 3), (0, 1)),
    ((1, 3), (0, 1)),
    ((2, 3), (4, 1)),
    ((2, 1), (3, 1)),
    ((5, 1), (1, 5)),
    ((1, 5), (1, 1)),
    ((1, 1), (5, 9)),
    ((3, 1, 4), (4, 4, 1)),
    ((3, 1, 4), (4, 999, 1)),
    ((2, 1, 3), (3, 1, 1)),
    ((2, 2, 2), (4, 2, 1)),
    ((2, 2, 2), (4, 1, 2)),
    ((2, 2, 2), (2, 4, 1)),
    ((4, 3, 2), (1, 4, 12)),
    ((2, 0, 3), (3, 3, 1)),
    ((2, 0, 3), (7, 7, 7)),
    ((0,), (5,)),
    ((3, 0), (0, 0)),
]


@exercise("02.2", title="is_contiguous", points=1,
          hint="if any size is 0, return True. Otherwise walk the dims from last to first with expected = 1: "
               "skip dims of size 1; any other dim needs stride == expected, then expected *= size. "
               "Return a Python bool.")
def _is_contiguous(is_contiguous):
    return [case(is_contiguous, shape, stride, name="is_contiguous",
                 expected=bool(_tensor(shape, stride, 0).is_contiguous()))
            for shape, stride in _CONTIGUITY]


# ---------------------------------------------------------------- 02.3 transpose

_TRANSPOSE = [
    ((2, 3), (3, 1), 0, (0, 1), _REF),
    ((2, 3), (3, 1), 0, (1, 0), _REF),
    ((2, 3, 4), (12, 4, 1), 0, (0, 2), _REF),
    ((2, 3, 4), (12, 4, 1), 5, (1, 2), _REF),
    ((2, 3, 4), (12, 4, 1), 0, (-1, 0), _REF),
    ((2, 3, 4), (12, 4, 1), 0, (1, 1), _REF),
    ((4, 3, 2), (1, 4, 12), 3, (-3, -2), _REF),
    ((2, 3), (0, 1), 1, (0, 1), _REF),
    ((2, 0, 3), (3, 3, 1), 0, (0, 1), _REF),
    ((5,), (2,), 1, (0, -1), _REF),
    ((), (), 4, (0, -1), ((), (), 4)),  # torch: a 0-d tensor accepts dims 0 and -1
    ((2, 3), (3, 1), 0, (0, 2), _REF),
    ((2, 3), (3, 1), 0, (-3, 0), _REF),
    ((), (), 0, (0, 1), _REF),
]


@exercise("02.3", title="transpose_geometry", points=1,
          hint="wrap negative dims with wrap_dim(dim, len(shape)) (IndexError when out of range), then swap "
               "the two sizes and the two strides; the offset does not change. Return tuples.")
def _transpose_geometry(transpose_geometry):
    return _geometry_cases(transpose_geometry, "transpose_geometry", _TRANSPOSE,
                           lambda t, d0, d1: t.transpose(d0, d1))


# ---------------------------------------------------------------- 02.4 permute

_PERMUTE = [
    ((2, 3), (3, 1), 0, ((1, 0),), _REF),
    ((2, 3, 4), (12, 4, 1), 0, ((2, 0, 1),), _REF),
    ((2, 3, 4), (12, 4, 1), 7, ((0, 1, 2),), _REF),
    ((2, 3, 4), (12, 4, 1), 0, ((-1, 0, 1),), _REF),
    ((2, 3, 4, 5), (60, 20, 5, 1), 0, ((0, 2, 3, 1),), _REF),
    ((4, 3, 2), (1, 4, 12), 2, ((2, 1, 0),), _REF),
    ((3, 1), (0, 1), 0, ((1, 0),), _REF),
    ((0, 2), (2, 1), 0, ((1, 0),), _REF),
    ((), (), 3, ((),), _REF),
    ((2, 3), (3, 1), 0, ((0,),), _REF),
    ((2, 3), (3, 1), 0, ((0, 1, 2),), _REF),
    ((2, 3), (3, 1), 0, ((0, 0),), _REF),
    ((2, 3), (3, 1), 0, ((1, -2),), _REF),
    ((2, 3), (3, 1), 0, ((0, -2),), _REF),     # a duplicate only after wrapping: -2 is dim 0
    ((2, 3, 4), (12, 4, 1), 0, ((-1, 0, 2),), _REF),
    ((2, 3), (3, 1), 0, ((0, 2),), _REF),
]


@exercise("02.4", title="permute_geometry", points=1,
          hint="new dim i takes the size and stride of old dim dims[i] (wrapped with wrap_dim). "
               "RuntimeError if len(dims) != len(shape) or a dim repeats; IndexError if a dim is out of range.")
def _permute_geometry(permute_geometry):
    return _geometry_cases(permute_geometry, "permute_geometry", _PERMUTE, lambda t, dims: t.permute(dims))


# ---------------------------------------------------------------- 02.5 narrow

_NARROW = [
    ((5,), (1,), 0, (0, 1, 3), _REF),
    ((5,), (1,), 0, (0, 0, 5), _REF),
    ((5,), (1,), 0, (0, -2, 2), _REF),
    ((2, 3, 4), (12, 4, 1), 0, (2, 1, 2), _REF),
    ((2, 3, 4), (12, 4, 1), 3, (1, 2, 1), _REF),
    ((2, 3, 4), (12, 4, 1), 0, (-1, 3, 1), _REF),
    ((4, 3), (1, 4), 0, (1, 1, 2), _REF),
    ((3, 4), (0, 1), 2, (0, 1, 2), _REF),
    ((0, 4), (4, 1), 0, (1, 1, 2), _REF),
    ((5,), (2,), 1, (0, 5, 0), ((0,), (2,), 11)),  # torch: offset moves by start even when length is 0
    ((5,), (1,), 0, (0, 2, 0), ((0,), (1,), 2)),   # torch
    ((5,), (1,), 0, (0, 3, 3), _REF),
    ((5,), (1,), 0, (0, 6, 0), _REF),
    ((5,), (1,), 0, (0, -6, 1), _REF),
    ((5,), (1,), 0, (0, 2, -1), _REF),
    ((5,), (1,), 0, (1, 0, 1), _REF),
    ((), (), 0, (0, 0, 1), _Raises(RuntimeError)),  # torch: narrow() cannot be applied to a 0-dim tensor.
]


@exercise("02.5", title="narrow_geometry", points=1,
          hint="wrap dim; start may be negative (start += size) and must lie in [-size, size], else IndexError; "
               "RuntimeError if length < 0 or start + length > size, or for a 0-d tensor. The dim's size becomes "
               "length and the offset moves by start * stride[dim] (even when length is 0).")
def _narrow_geometry(narrow_geometry):
    return _geometry_cases(narrow_geometry, "narrow_geometry", _NARROW,
                           lambda t, dim, start, length: t.narrow(dim, start, length))


# ---------------------------------------------------------------- 02.6 select

_SELECT = [
    ((3,), (1,), 0, (0, 1), _REF),
    ((2, 3), (3, 1), 0, (0, 1), _REF),
    ((2, 3), (3, 1), 0, (1, 2), _REF),
    ((2, 3, 4), (12, 4, 1), 0, (1, 2), _REF),
    ((2, 3, 4), (12, 4, 1), 5, (2, 3), _REF),
    ((2, 3, 4), (12, 4, 1), 0, (-1, -1), _REF),
    ((3, 2), (1, 3), 0, (0, -3), _REF),
    ((4, 3), (0, 1), 1, (0, 3), _REF),
    ((2, 0), (1, 1), 0, (0, 1), _REF),
    ((1, 1), (7, 9), 2, (1, 0), _REF),
    ((2, 3), (3, 1), 0, (1, 3), _REF),
    ((2, 3), (3, 1), 0, (0, -3), _REF),
    ((0, 2), (2, 1), 0, (0, 0), _REF),
    ((2, 3), (3, 1), 0, (2, 0), _REF),
    ((), (), 0, (0, 0), _REF),
]


@exercise("02.6", title="select_geometry", points=1,
          hint="IndexError for a 0-d tensor, a bad dim, or an index outside [-size, size); wrap a negative "
               "index; drop the dim from shape and stride and add index * stride[dim] to the offset.")
def _select_geometry(select_geometry):
    return _geometry_cases(select_geometry, "select_geometry", _SELECT,
                           lambda t, dim, index: t.select(dim, index))


# ---------------------------------------------------------------- 02.7 compute_stride

_VIEWS = [
    ((2, 3, 4), (12, 4, 1), (6, 4)),
    ((2, 3, 4), (12, 4, 1), (24,)),
    ((2, 3, 4), (12, 4, 1), (4, 6)),
    ((2, 3, 4), (12, 4, 1), (2, 3, 2, 2)),
    ((2, 3, 4), (12, 4, 1), (1, 24, 1)),
    ((3, 2), (1, 3), (6,)),
    ((3, 2), (1, 3), (3, 2, 1)),
    ((3, 2), (1, 3), (3, 1, 2)),
    ((3, 2), (1, 3), (2, 3)),
    ((2, 2, 4), (12, 4, 1), (2, 8)),
    ((2, 2, 4), (12, 4, 1), (16,)),
    ((2, 2, 4), (12, 4, 1), (4, 4)),
    ((2, 6), (12, 1), (2, 3, 2)),
    ((2, 6), (12, 1), (12,)),
    ((2, 3, 4), (12, 1, 3), (2, 3, 2, 2)),
    ((2, 3, 4), (12, 1, 3), (6, 4)),
    ((4,), (2,), (2, 2)),
    ((6,), (0,), (2, 3)),
    ((2, 3), (0, 1), (6,)),
    ((2, 3), (0, 1), (2, 3, 1)),
    ((2, 3), (0, 1), (1, 2, 3)),
    ((3, 1, 4), (4, 999, 1), (12,)),
    ((3, 1, 4), (4, 999, 1), (3, 4)),
    ((2, 1, 3), (3, 100, 1), (6,)),
    ((2, 1, 3), (1, 100, 2), (6,)),
    ((2, 1, 3), (1, 100, 2), (2, 3)),
    ((6,), (1,), (1, 6, 1)),
    ((), (), ()),
    ((), (), (1, 1)),
    ((1,), (1,), ()),
    ((1, 1), (7, 3), ()),
    ((2, 0, 3), (3, 3, 1), (2, 0, 3)),
    ((2, 0, 3), (7, 7, 7), (2, 0, 3)),
    ((2, 0, 3), (3, 3, 1), (0, 6)),
    ((0,), (1,), (3, 0, 2)),
]


@exercise("02.7", title="compute_stride", points=3,
          hint="handle 0-d and empty inputs first. Then walk old dims right to left; a chunk ends at d when "
               "d == 0 or (oldshape[d-1] != 1 and oldstride[d-1] != chunk numel * chunk_base_stride). At each "
               "chunk end, give new dims (right to left) strides view_numel * chunk_base_stride until the "
               "numels match (size-1 new dims join too); no match -> None.")
def _compute_stride(compute_stride):
    from course_lib._ops.views import compute_stride as reference

    return [case(compute_stride, old, stride, new, name="compute_stride", expected=reference(old, stride, new))
            for old, stride, new in _VIEWS]


# ---------------------------------------------------------------- 02.8 expand

_EXPAND = [
    ((3,), (1,), 0, ((2, 3),), _REF),
    ((3, 1), (1, 1), 0, ((3, 4),), _REF),
    ((3, 1), (1, 1), 2, ((2, 3, 4),), _REF),
    ((1, 3), (3, 1), 0, ((0, 3),), _REF),
    ((2, 3), (3, 1), 0, ((2, 3),), _REF),
    ((2, 3), (3, 1), 0, ((-1, 3),), _REF),
    ((2, 3), (3, 1), 0, ((4, -1, -1),), _REF),
    ((1, 3), (7, 1), 0, ((1, 3),), _REF),
    ((1,), (1,), 5, ((4,),), _REF),
    ((2, 1), (1, 1), 0, ((3, 2, 1),), _REF),
    ((3,), (1,), 0, ((1, 3),), ((1, 3), (3, 1), 0)),              # torch: a new dim of size 1 gets
    ((3,), (1,), 0, ((2, 1, 3),), ((2, 1, 3), (0, 3, 1), 0)),     # size * stride of the dim to its
    ((2, 1), (1, 1), 0, ((1, 2, 1),), ((1, 2, 1), (2, 1, 1), 0)),  # right, as unsqueeze would
    ((), (), 3, ((2, 3),), _REF),
    ((), (), 0, ((1,),), _REF),
    ((), (), 0, ((),), _REF),
    ((2, 3), (3, 1), 0, ((4, 3),), _REF),
    ((2, 3), (3, 1), 0, ((3,),), _REF),
    ((3,), (1,), 0, ((-1, 3),), _REF),
    ((3,), (1,), 0, ((0,),), _REF),
]


@exercise("02.8", title="expand_geometry", points=2,
          hint="align size and shape on the right and go from the last dim to the first; an old dim of size 1 "
               "may grow, with stride 0; a new leading dim gets stride 0, or, if its size is 1, size * stride "
               "of the dim to its right (1 if none). A 0-d tensor expands with all strides 0.")
def _expand_geometry(expand_geometry):
    return _geometry_cases(expand_geometry, "expand_geometry", _EXPAND, lambda t, size: t.expand(size))


# ---------------------------------------------------------------- 02.9 broadcast_shapes


def _message_parts(text: str, width: int = 48) -> tuple[str, ...]:
    """Cut a long message at spaces into parts of at most `width` characters (joined they give it back),
    so a failure shows every part in full."""
    parts, current = [], ""
    for word in text.split(" "):
        piece = word if not current else " " + word
        if current and len(current) + len(piece) > width:
            parts.append(current)
            current = " " + word
        else:
            current += piece
    parts.append(current)
    return tuple(parts)


def _outcome(fn: Callable[[], Any]):
    """fn's value, or (ExceptionName, message parts...) when it raises."""
    try:
        return fn()
    except (KeyboardInterrupt, SystemExit, NotImplementedError):
        raise
    except Exception as e:  # noqa: BLE001 - the type and message are compared
        return (type(e).__name__,) + _message_parts(str(e))


def _mismatch(a: int, b: int, dim: int) -> tuple:
    return ("RuntimeError",) + _message_parts(
        f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension {dim}")


_BROADCAST = [
    (((2, 3), (3, 2)), _REF),          # two clashes: PyTorch names the right-most (dimension 1)
    ((), ()),  # torch: no shapes at all broadcast to ()
    (((2, 3),), _REF),
    (((2, 3), (3,)), _REF),
    (((2, 1), (1, 3)), _REF),
    (((5, 1, 4), (3, 1)), _REF),
    (((), (2,)), _REF),
    (((), ()), _REF),
    (((1,), (0,)), _REF),
    (((2, 0), (1,)), _REF),
    (((2,), (3, 1), (1, 1, 1)), _REF),
    (((8, 1, 6, 1), (7, 1, 5)), _REF),
    (((1, 1), (1,), (4, 1, 1)), _REF),
    (((2, 3), (4,)), _REF),
    (((3,), (4,)), _REF),
    (((0,), (3,)), _REF),
    (((2, 3), (3,), (4, 1, 5)), _REF),
    (((2, 4), (3, 1, 4), (5,)), _REF),
    (((3,), (4,), (2, 1, 1)), _mismatch(3, 4, 0)),  # torch: the dim counts in the shapes met so far
    (((3, 1), (1, 4), (5, 1, 1), (2, 3, 4)), _mismatch(5, 2, 0)),  # torch
]


@exercise("02.9", title="broadcast_shapes", points=2,
          hint="fold left to right: result = (); for each shape, align result and shape on the right (missing "
               "sizes count as 1); compare dims from the right, sizes equal or one of them 1, else RuntimeError("
               "'The size of tensor a (A) must match the size of tensor b (B) at non-singleton dimension D') for the "
               "right-most clash, D counted in the pair's result.")
def _broadcast_shapes(broadcast_shapes):
    cl = _cl()
    out = []
    for shapes, expected in _BROADCAST:
        if expected is _REF:
            expected = _outcome(lambda: tuple(cl.broadcast_shapes(*shapes)))
        out.append(Case(f"broadcast_shapes({', '.join(map(repr, shapes))})",
                        (lambda s=shapes: _outcome(lambda: broadcast_shapes(*s))), expected))
    return out


# ---------------------------------------------------------------- 02.10 basic indexing

_E = Ellipsis
_S = slice
_A = ((2, 3, 4), (12, 4, 1), 0)      # course_lib.zeros(2, 3, 4)
_B = ((4, 3, 2), (1, 4, 12), 5)      # a transposed tensor, 5 elements into its storage
_INDEX = [
    (_A, 0, _REF),
    (_A, -1, _REF),
    (_A, (1, 2), _REF),
    (_A, (1, 2, 3), _REF),
    (_A, (-1, -3, -4), _REF),
    (_A, _S(None), _REF),
    (_A, (), _REF),
    (_A, (_E,), _REF),
    (_A, (_S(None), _S(None, None, 2)), _REF),
    (_A, (_S(None), _S(None, None, 2), _S(1, None)), _REF),
    (_A, (_E, 1), _REF),
    (_A, (1, _E, _S(1, 3)), _REF),
    (_A, (_E, _S(None, None, 3)), _REF),
    (_A, None, _REF),
    (_A, (_S(None), None), _REF),
    (_A, (_E, None), _REF),
    (_A, (0, None), _REF),
    (_A, (None, _E, None), _REF),
    (_A, (None, 1, None, _S(0, 2)), _REF),
    (_A, _S(-1, None), _REF),
    (_A, _S(1, 100), _REF),
    (_A, _S(-100, 1), _REF),
    (_A, (_S(None), _S(-2, None, 5)), _REF),
    (_A, _S(5, None), ((0, 3, 4), (12, 4, 1), 24)),             # torch: start is clamped to the size and
    (_A, (_S(None), _S(2, 1)), ((2, 0, 4), (12, 4, 1), 8)),     # the offset moves even for an empty slice
    (_B, (_S(1, None), 0), _REF),
    (_B, (_E, 1), _REF),
    (_B, (_S(None, None, 2), None, 2), _REF),
    (((3, 4), (0, 1), 2), 2, _REF),
    (((3, 4), (0, 1), 2), _S(None, None, 2), _REF),
    (((), (), 7), (), _REF),
    (((), (), 7), _E, _REF),
    (((), (), 7), None, _REF),
    (((), (), 7), (None, None), _REF),
    (((), (), 7), (_E, None), _REF),
    (((0, 3), (3, 1), 0), (_S(None), 1), _REF),
    (((1, 5), (5, 1), 0), 0, _REF),
    (_A, 2, _REF),
    (_A, (0, -4), _REF),
    (_A, (0, 0, 0, 0), _REF),
    (_A, _S(None, None, -1), _REF),
    (_A, (_S(None), _S(None, None, 0)), _Raises(ValueError)),
    (((), (), 7), 0, _REF),
    (((0, 3), (3, 1), 0), 0, _REF),
]


@exercise("02.10", title="index_geometry", points=3,
          hint="make index a tuple and count the dims its ints and slices consume; ... skips the dims nobody "
               "else consumes. Walk it keeping the current dim d: an int selects (d stays), a slice narrows "
               "with a step (d += 1), None inserts a size-1 dim with unsqueeze's stride (d += 1).")
def _index_geometry(index_geometry):
    out = []
    for (shape, stride, offset), index, expected in _INDEX:
        if expected is _REF:
            expected = _reference(lambda: _geometry(_tensor(shape, stride, offset)[index]))
        out.append(_case(index_geometry, (shape, stride, offset, index), expected, "index_geometry"))
    return out
