"""Checks for chapter 02 (strides and views).

Every geometry exercise returns ``(shape, stride, offset)``: a tuple of ints, a
tuple of ints and an int, exactly what ``Tensor.as_strided(shape, stride, offset)``
takes. Expected values come from running the same op on a course_lib tensor of
that geometry (``_reference``), except for a few edge cases where course_lib
does not (yet) behave like PyTorch; those are literals observed with torch
2.13.0 and marked ``# torch``. Each exercise adds geometries drawn from ``rng``,
and forbids the course_lib op it rebuilds (and ``as_strided``, which would let
the op compute the answer).
"""
from __future__ import annotations

from typing import Any, Callable

import course_lib as cl
from course.checks import Trial, call, exercise, probe
from course_lib._ops import views as _views


def _forbid(*methods: str) -> dict:
    """``{"Tensor.transpose": cl.Tensor.transpose, ...}`` for the geometry exercises."""
    return {f"Tensor.{m}": getattr(cl.Tensor, m) for m in methods + ("as_strided",)}

# ---------------------------------------------------------------- helpers


def _tensor(shape: tuple, stride: tuple, offset: int):
    """A course_lib tensor with this geometry, over a storage just big enough."""
    if all(s > 0 for s in shape):
        need = offset + 1 + sum((s - 1) * st for s, st in zip(shape, stride))
    else:
        need = offset + 1
    return cl.zeros(need).as_strided(shape, stride, offset)


def _geometry(t) -> tuple:
    return (tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride()), int(t.storage_offset()))


class _Raises:
    """Marker for an expected exception in a case table (and its message, when it is checked)."""

    def __init__(self, exc: type[BaseException], message: str | None = None):
        self.exc, self.message = exc, message


def _reference(op: Callable[[], Any], message: bool = False):
    """What the reference gives: its value, or _Raises(type) if it raises (with its message if asked)."""
    try:
        return op()
    except Exception as e:  # noqa: BLE001 - any error the reference raises is the expected one
        return _Raises(type(e), str(e) if message else None)


def _case(args: tuple, expected) -> Trial:
    if isinstance(expected, _Raises):
        return call(*args, raises=expected.exc, match=expected.message)
    return call(*args, expected=expected)


_REF = object()  # "ask the reference" in a case table


def _geometry_cases(table: list, op: Callable) -> list[Trial]:
    """Trials for `fn(shape, stride, offset, *args)`; table rows are (shape, stride, offset, args, expected),
    with expected _REF to run `op(tensor, *args)` on course_lib."""
    out = []
    for shape, stride, offset, args, expected in table:
        if expected is _REF:
            expected = _reference(lambda: _geometry(op(_tensor(shape, stride, offset), *args)))
        out.append(_case((shape, stride, offset) + tuple(args), expected))
    return out


def _random_geometry(rng, max_dims: int = 4) -> tuple:
    """A random (shape, stride, offset): sizes 0..4 (rarely 0), strides 0..12, offset 0..5."""
    ndim = int(rng.integers(0, max_dims + 1))
    shape = tuple(int(n) for n in rng.choice([0, 1, 2, 3, 4], p=[0.05, 0.2, 0.3, 0.25, 0.2], size=ndim))
    stride = tuple(int(v) for v in rng.integers(0, 13, size=ndim))
    return shape, stride, int(rng.integers(0, 6))


def _dim(rng, ndim: int) -> int:
    """A dim for `ndim` dims, negative half the time (and, rarely, one out of range)."""
    n = max(ndim, 1)
    return int(rng.integers(-n - (rng.random() < 0.1), n + (rng.random() < 0.1)))


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
    t = cl.arange(24.).reshape(2, 3, 4)
    r = eval(expression, {"t": t, "course_lib": cl})  # noqa: S307 - fixed expressions above
    return r.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()


@exercise("02.1", title="predict_copies", points=1,
          hint="a result copies when it cannot be written as (shape, stride, offset) over t's storage; run the "
               "verification cell: its untyped_storage().data_ptr() differs from t's. Keys are the strings of "
               "EXPRESSIONS.")
def _predict_copies(rng):
    return [probe(_prediction, expr, expected=copies_in_course_lib(expr), label=f"predict_copies()[{expr!r}]")
            for expr in COPY_EXPRESSIONS]


def _prediction(fn, expr: str):
    """Probe: the learner's prediction for one expression."""
    return fn()[expr]


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
               "Return a Python bool.", forbid=_forbid("is_contiguous"))
def _is_contiguous(rng):
    table = list(_CONTIGUITY)
    for _ in range(4):  # a random geometry, and the contiguous strides of a random shape, perhaps permuted
        shape, stride, _ = _random_geometry(rng)
        table.append((shape, stride))
        shape = _random_geometry(rng)[0]
        stride = tuple(int(v) for v in cl.empty(shape).stride())
        if len(shape) > 1 and rng.random() < 0.5:
            perm = [int(k) for k in rng.permutation(len(shape))]
            stride = tuple(stride[k] for k in perm)
        table.append((shape, stride))
    return [call(shape, stride, expected=bool(_tensor(shape, stride, 0).is_contiguous())) for shape, stride in table]


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
               "the two sizes and the two strides; the offset does not change. Return tuples.",
          forbid=_forbid("transpose"))
def _transpose_geometry(rng):
    table = list(_TRANSPOSE)
    for _ in range(5):
        shape, stride, offset = _random_geometry(rng)
        table.append((shape, stride, offset, (_dim(rng, len(shape)), _dim(rng, len(shape))), _REF))
    return _geometry_cases(table, lambda t, d0, d1: t.transpose(d0, d1))


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
               "RuntimeError if len(dims) != len(shape) or a dim repeats; IndexError if a dim is out of range.",
          forbid=_forbid("permute"))
def _permute_geometry(rng):
    table = list(_PERMUTE)
    for k in range(5):
        shape, stride, offset = _random_geometry(rng)
        dims = [int(d) for d in rng.permutation(len(shape))]
        dims = [d - len(shape) if rng.random() < 0.3 else d for d in dims]  # some written negative
        if k == 4 and len(dims) > 1:  # a repeat that shows only after wrapping
            dims[0] = dims[1] - len(shape) if dims[1] >= 0 else dims[1] + len(shape)
        table.append((shape, stride, offset, (tuple(dims),), _REF))
    return _geometry_cases(table, lambda t, dims: t.permute(dims))


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
               "length and the offset moves by start * stride[dim] (even when length is 0).",
          forbid=_forbid("narrow"))
def _narrow_geometry(rng):
    table = list(_NARROW)
    for _ in range(5):
        shape, stride, offset = _random_geometry(rng)
        shape = shape or (3,)
        stride = stride or (1,)
        dim = _dim(rng, len(shape))
        size = shape[dim] if -len(shape) <= dim < len(shape) else 1
        start = int(rng.integers(0, size + 1))
        length = int(rng.integers(0, size - start + 1)) + (rng.random() < 0.1)  # rarely one too long
        if start < size and rng.random() < 0.3:
            start -= size  # the same start, written negative
        table.append((shape, stride, offset, (dim, start, length), _REF))
    return _geometry_cases(table, lambda t, dim, start, length: t.narrow(dim, start, length))


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
               "index; drop the dim from shape and stride and add index * stride[dim] to the offset.",
          forbid=_forbid("select"))
def _select_geometry(rng):
    table = list(_SELECT)
    for _ in range(5):
        shape, stride, offset = _random_geometry(rng)
        shape, stride = shape or (2,), stride or (3,)
        dim = _dim(rng, len(shape))
        size = shape[dim] if -len(shape) <= dim < len(shape) else 1
        table.append((shape, stride, offset, (dim, int(rng.integers(-size - 1, size + 1))), _REF))
    return _geometry_cases(table, lambda t, dim, index: t.select(dim, index))


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
               "numels match (size-1 new dims join too); no match -> None.",
          forbid={"course_lib's compute_stride": _views.compute_stride, "Tensor.view": cl.Tensor.view,
                  "Tensor.as_strided": cl.Tensor.as_strided})
def _compute_stride(rng):
    table = list(_VIEWS)
    for _ in range(6):  # a random strided geometry viewed as a random regrouping of its sizes
        shape, stride, _ = _random_geometry(rng)
        shape = tuple(n or 1 for n in shape)
        sizes = [n for n in shape if n > 1]
        new: list[int] = []
        while sizes:
            k = int(rng.integers(1, min(len(sizes), 3) + 1))
            group = 1
            for n in sizes[:k]:
                group *= n
            new.append(group)
            sizes = sizes[k:]
        for _ in range(int(rng.integers(0, 3))):
            new.insert(int(rng.integers(0, len(new) + 1)), 1)
        table.append((shape, stride, tuple(new)))
    return [call(old, stride, new, expected=_views.compute_stride(old, stride, new)) for old, stride, new in table]


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
               "of the dim to its right (1 if none). A 0-d tensor expands with all strides 0.",
          forbid=_forbid("expand"))
def _expand_geometry(rng):
    table = list(_EXPAND)
    for _ in range(5):
        shape, stride, offset = _random_geometry(rng, max_dims=3)
        size = [n if n != 1 else int(rng.integers(1, 5)) for n in shape]
        size = [-1 if rng.random() < 0.2 else n for n in size]
        size = [int(n) for n in rng.integers(2, 4, size=int(rng.integers(0, 2)))] + size
        table.append((shape, stride, offset, (tuple(size),), _REF))
    return _geometry_cases(table, lambda t, size: t.expand(size))


# ---------------------------------------------------------------- 02.9 broadcast_shapes


def _mismatch(a: int, b: int, dim: int) -> _Raises:
    return _Raises(RuntimeError, f"The size of tensor a ({a}) must match the size of tensor b ({b}) "
                                 f"at non-singleton dimension {dim}")


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
               "right-most clash, D counted in the pair's result.",
          forbid={"cl.broadcast_shapes": cl.broadcast_shapes})
def _broadcast_shapes(rng):
    table = list(_BROADCAST)
    for _ in range(6):  # shapes cut from one random shape, some sizes set to 1, perhaps one clash
        full = [int(n) for n in rng.integers(2, 6, size=int(rng.integers(1, 5)))]
        shapes = []
        for _ in range(int(rng.integers(2, 4))):
            tail = full[len(full) - int(rng.integers(0, len(full) + 1)):]
            shapes.append(tuple(1 if rng.random() < 0.3 else n for n in tail))
        if rng.random() < 0.4 and shapes[-1]:
            k = int(rng.integers(0, len(shapes[-1])))
            shapes[-1] = shapes[-1][:k] + (shapes[-1][k] + 1,) + shapes[-1][k + 1:]
        table.append((tuple(shapes), _REF))
    out = []
    for shapes, expected in table:
        if expected is _REF:
            expected = _reference(lambda: tuple(cl.broadcast_shapes(*shapes)), message=True)
        label = f"broadcast_shapes({', '.join(map(repr, shapes))})"
        if isinstance(expected, _Raises):
            out.append(call(*shapes, raises=expected.exc, match=expected.message, label=label))
        else:
            out.append(call(*shapes, expected=expected, label=label))
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
               "with a step (d += 1), None inserts a size-1 dim with unsqueeze's stride (d += 1).",
          forbid=_forbid("__getitem__"))
def _index_geometry(rng):
    table = list(_INDEX)
    for _ in range(6):
        geometry = _random_geometry(rng)
        shape = geometry[0]
        index: list = []
        d = 0
        while d < len(shape) and rng.random() < 0.8:
            kind = rng.random()
            n = shape[d]
            if kind < 0.3 and n:
                index.append(int(rng.integers(-n, n)))
                d += 1
            elif kind < 0.45:
                index.append(None)
            else:
                start = int(rng.integers(-n - 1, n + 2))
                stop = None if rng.random() < 0.3 else int(rng.integers(-n - 1, n + 2))
                index.append(slice(start, stop, int(rng.integers(1, 4))))
                d += 1
        if rng.random() < 0.3:
            index.insert(int(rng.integers(0, len(index) + 1)), Ellipsis)
        table.append((geometry, tuple(index), _REF))
    out = []
    for (shape, stride, offset), index, expected in table:
        if expected is _REF:
            expected = _reference(lambda: _geometry(_tensor(shape, stride, offset)[index]))
        out.append(_case((shape, stride, offset, index), expected))
    return out
