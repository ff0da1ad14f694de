"""Making and combining tensors: ``hstack``/``vstack``/``dstack``/``column_stack``, ``repeat``/``tile``,
``repeat_interleave``, ``outer``, ``kron``, ``broadcast_tensors``, ``meshgrid``, ``diag`` (with
``diag_embed`` and ``diagonal_copy``), ``roll``, ``einsum`` and ``logspace``.

In PyTorch: ``aten/src/ATen/native/TensorShape.cpp`` (stacks, ``tile``, ``meshgrid``,
``diag_embed``), ``Repeat.cpp`` (``repeat_interleave``), ``LinearAlgebra.cpp`` (``outer``, ``kron``),
``TensorTransformations.cpp`` (``roll``), ``Linear.cpp`` (``einsum``), ``RangeFactories.cpp``
(``logspace``) and ``torch/functional.py`` (the Python signatures of ``meshgrid``,
``broadcast_tensors`` and ``einsum``, which take their tensors as varargs or as one list).

Most of these are composites in PyTorch too (CompositeImplicitAutograd): they decompose into
``cat``, ``expand``, ``mul``, ``index_select``..., so their results carry those ops' nodes
(``hstack`` gives ``CatBackward0``, ``outer`` ``MulBackward0``), as here.  ``repeat``, ``roll``,
``diag_embed``, ``diagonal_copy`` and ``einsum`` have kernels and derivatives of their own.

Deliberate difference: PyTorch's ``einsum`` contracts through ``bmm`` (its result's node is a view or
permute of that); here it is one op with numpy's ``einsum`` kernel, and its derivative
(``EinsumBackward0``) is one ``einsum`` per input, so higher derivatives are einsums too.
"""
from __future__ import annotations

import string
import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import broadcast_shapes, contiguous_strides, empty_meta, wrap, wrap_dim, wrap_dims
from .dispatcher import dispatch
from .registry import OPS, register

__all__ = ["broadcast_tensors", "meshgrid", "einsum", "logspace"]


def _d(name, *args):
    return dispatch(OPS[name], args)


# ---------------------------------------------------------------------------
# stacks: atleast_Nd, then cat
# ---------------------------------------------------------------------------
def _nonempty(tensors, fname: str) -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{fname} expects a non-empty TensorList")
    return tensors


def _atleast(t, n: int):
    """``atleast_1d``/``2d``/``3d``: a 0-d tensor becomes (1,)*n, a 1-d one (1, k) or (1, k, 1), a 2-d one
    (m, k, 1)."""
    nd = len(t._shape)
    if nd >= n:
        return t
    if nd == 0:
        return _d("reshape", t, (1,) * n)
    if n == 2:
        return _d("unsqueeze", t, 0)
    if nd == 1:
        return _d("unsqueeze", _d("unsqueeze", t, 0), 2)
    return _d("unsqueeze", t, 2)


@register("hstack(Tensor[] tensors) -> Tensor", variants=("function",), kind="composite")
def hstack(tensors):
    """Join along the second dim (the first for 1-d tensors)."""
    ts = [_atleast(t, 1) for t in _nonempty(tensors, "hstack")]
    return _d("cat", ts, 0 if len(ts[0]._shape) == 1 else 1)


@register("vstack(Tensor[] tensors) -> Tensor", variants=("function",), kind="composite")
def vstack(tensors):
    """Join along the first dim, 1-d tensors as rows."""
    return _d("cat", [_atleast(t, 2) for t in _nonempty(tensors, "vstack")], 0)


@register("dstack(Tensor[] tensors) -> Tensor", variants=("function",), kind="composite")
def dstack(tensors):
    """Join along the third dim (depth), after making each tensor at least 3-d."""
    return _d("cat", [_atleast(t, 3) for t in _nonempty(tensors, "dstack")], 2)


@register("column_stack(Tensor[] tensors) -> Tensor", variants=("function",), kind="composite")
def column_stack(tensors):
    """Join along the second dim, 0-d and 1-d tensors as columns."""
    ts = [(_d("reshape", t, (t.numel(), 1)) if len(t._shape) <= 1 else t)
          for t in _nonempty(tensors, "column_stack")]
    return _d("cat", ts, 1)


# ---------------------------------------------------------------------------
# repeat, tile, repeat_interleave
# ---------------------------------------------------------------------------
def _repeat_shape(self, repeats) -> tuple:
    repeats = tuple(int(r) for r in repeats)
    if len(repeats) < len(self._shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    full = (1,) * (len(repeats) - len(self._shape)) + self._shape
    target = [r * s for r, s in zip(repeats, full)]
    for s in target:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {target}")
    return tuple(target)


@register("repeat(Tensor self, SymInt[] repeats) -> Tensor", variants=("method",), kind="copy",
          meta=lambda self, repeats: empty_meta(_repeat_shape(self, repeats), self.dtype))
def repeat(self, repeats):
    """The tensor tiled: dim i repeated ``repeats[i]`` times (extra leading repeats add dims)."""
    shape = _repeat_shape(self, repeats)
    a = self._np().reshape((1,) * (len(shape) - len(self._shape)) + self._shape)
    return wrap(np.tile(a, tuple(int(r) for r in repeats)), self.dtype)


@register("tile(Tensor self, SymInt[] dims) -> Tensor", kind="composite")
def tile(self, dims):
    """``repeat`` with ``dims`` padded with leading 1s to the tensor's number of dims."""
    dims = tuple(dims)
    if len(dims) < len(self._shape):
        dims = (1,) * (len(self._shape) - len(dims)) + dims
    return _d("repeat", self, dims)


def _repeat_counts_meta(repeats, output_size=None):
    if output_size is None:
        raise NotImplementedError("repeat_interleave on the meta device needs output_size: the output shape depends "
                                  "on the repeats' values")
    return empty_meta((output_size,), repeats.dtype)


@register("_repeat_interleave_index(Tensor repeats, *, SymInt? output_size=None) -> Tensor", variants=(),
          meta=_repeat_counts_meta, kind="indexing")
def _repeat_interleave_index(repeats, output_size=None):
    """``repeat_interleave(repeats)``: ``i`` repeated ``repeats[i]`` times (PyTorch's ``repeat_interleave.Tensor``)."""
    if len(repeats._shape) != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype is not _dtype.int64 and repeats.dtype is not _dtype.int32:
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{repeats.dtype._tensor_name}'")
    r = repeats._np()
    if r.size and r.min() < 0:
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and int(r.sum()) != output_size:
        raise RuntimeError("allocated size does not match required size")
    return wrap(np.repeat(np.arange(r.size, dtype=r.dtype), r), repeats.dtype)


@register("repeat_interleave(Tensor self, Tensor? repeats=None, int? dim=None, *, SymInt? output_size=None) -> Tensor",
          kind="composite")
def repeat_interleave(self, repeats=None, dim=None, output_size=None):
    """Each element (or slice along ``dim``) repeated ``repeats`` times in place; ``repeats`` is an int or a
    tensor of one count per element.  ``repeat_interleave(counts)`` alone gives the index that does it."""
    if repeats is None:
        return _d("_repeat_interleave_index", self, output_size)
    x = self
    if dim is None:
        x = _d("flatten", x, 0, -1)
        dim = 0
    d = wrap_dim(dim, max(len(x._shape), 1))
    if isinstance(repeats, Tensor):
        if len(repeats._shape) > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        n = x._shape[d] if x._shape else 1
        if len(repeats._shape) == 0 or repeats._shape[0] == 1:
            repeats = _d("expand", _d("reshape", repeats, (1,)), (n,))
        elif repeats._shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats._shape[0]} and input.size({d}) = {n}")
        index = _d("_repeat_interleave_index", repeats, output_size)
        return _d("index_select", x, d, index)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    if not x._shape:
        x = _d("reshape", x, (1,))
    shape = x._shape
    y = _d("expand", _d("unsqueeze", x, d + 1), shape[:d + 1] + (r,) + shape[d + 1:])
    return _d("view", _d("clone", y, "contiguous_format"), shape[:d] + (shape[d] * r,) + shape[d + 1:])


# ---------------------------------------------------------------------------
# outer, kron, broadcast_tensors, meshgrid
# ---------------------------------------------------------------------------
@register("outer(Tensor self, Tensor vec2) -> Tensor", kind="composite")
def outer(self, vec2):
    """The outer product of two vectors: ``out[i, j] = self[i] * vec2[j]``."""
    for name, t in (("self", self), ("vec2", vec2)):
        if len(t._shape) != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {len(t._shape)}-D")
    return _d("mul", _d("reshape", self, (self._shape[0], 1)), vec2)


@register("kron(Tensor self, Tensor other) -> Tensor", kind="composite")
def kron(self, other):
    """The Kronecker product: every element of ``self`` times the whole of ``other``, laid out in blocks."""
    nd = max(len(self._shape), len(other._shape))
    a_shape = (1,) * (nd - len(self._shape)) + self._shape
    b_shape = (1,) * (nd - len(other._shape)) + other._shape
    a = _d("reshape", self, tuple(s for sa in a_shape for s in (sa, 1)))
    b = _d("reshape", other, tuple(s for sb in b_shape for s in (1, sb)))
    return _d("_unsafe_view", _d("mul", a, b), tuple(sa * sb for sa, sb in zip(a_shape, b_shape)))


@register("broadcast_tensors(Tensor[] tensors) -> Tensor[]", variants=(), kind="composite")
def _broadcast_tensors(tensors):
    shape = broadcast_shapes(*[t._shape for t in tensors])
    return [t if t._shape == shape else _d("expand", t, shape) for t in tensors]


def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common broadcast shape (views; a tensor already of that shape is
    returned as it is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(dispatch(OPS["broadcast_tensors"], (list(tensors),)))


@register("meshgrid(Tensor[] tensors, *, str? indexing=None) -> Tensor[]", variants=(), kind="composite")
def _meshgrid(tensors, indexing=None):
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if len(t._shape) > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=4)
        indexing = "ij"
    elif indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = []
    for i, t in enumerate(ts):
        view = tuple(-1 if k == i else 1 for k in range(len(ts)))
        out.append(_d("expand", _d("view", t, view), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return out


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 1-d tensors: with ``indexing='ij'`` output ``k`` varies along dim ``k``;
    ``'xy'`` swaps the first two dims (matrix vs. Cartesian indexing).  Without ``indexing`` it is 'ij',
    with PyTorch's warning that it will become required."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(dispatch(OPS["meshgrid"], (list(tensors), indexing)))


# ---------------------------------------------------------------------------
# diag, diag_embed, diagonal_copy
# ---------------------------------------------------------------------------
def _diag_embed_shape(self, offset, dim1, dim2) -> tuple:
    nd = len(self._shape) + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (self._shape[-1] if self._shape else 1) + abs(offset)
    rest = list(self._shape[:-1])
    for d in sorted((d1, d2)):
        rest.insert(d, n)
    return tuple(rest), d1, d2


@register("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", kind="transformation",
          meta=lambda self, offset=0, dim1=-2, dim2=-1: empty_meta(_diag_embed_shape(self, offset, dim1, dim2)[0],
                                                                   self.dtype))
def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals (``offset`` over dims ``dim1``, ``dim2``) are the last dim of ``self``;
    zeros elsewhere."""
    shape, d1, d2 = _diag_embed_shape(self, offset, dim1, dim2)
    out = np.zeros(shape, self.dtype.np)
    _diag_view(out, offset, d1, d2)[...] = self._np()
    return wrap(out, self.dtype)


def _diag_view(a: np.ndarray, offset: int, d1: int, d2: int) -> np.ndarray:
    """The writable view of ``a``'s diagonal that ``np.diagonal`` reads (which is read-only)."""
    idx = [slice(None)] * a.ndim
    idx[d2 if offset >= 0 else d1] = slice(abs(offset), None)
    base = a[tuple(idx)]
    n = min(base.shape[d1], base.shape[d2])
    rest = [k for k in range(a.ndim) if k not in (d1, d2)]
    shape = tuple(base.shape[k] for k in rest) + (n,)
    strides = tuple(base.strides[k] for k in rest) + (base.strides[d1] + base.strides[d2],)
    return np.lib.stride_tricks.as_strided(base, shape, strides)


def _diagonal_copy_meta(self, offset=0, dim1=0, dim2=1):
    return empty_meta(_d("diagonal", empty_meta(self._shape, self.dtype), offset, dim1, dim2)._shape, self.dtype)


@register("diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor", variants=("function",),
          meta=_diagonal_copy_meta, kind="copy")
def diagonal_copy(self, offset=0, dim1=0, dim2=1):
    """``diagonal`` as a copy instead of a view."""
    return wrap(np.diagonal(self._np(), offset, wrap_dim(dim1, len(self._shape)),
                            wrap_dim(dim2, len(self._shape))).copy(), self.dtype)


@register("diag(Tensor self, int diagonal=0) -> Tensor", kind="composite")
def diag(self, diagonal=0):
    """A 1-d tensor as the ``diagonal``-th diagonal of a square matrix, or a matrix's diagonal as a 1-d copy."""
    nd = len(self._shape)
    if nd == 1:
        return _d("diag_embed", self, diagonal, 0, 1)
    if nd == 2:
        return _d("diagonal_copy", self, diagonal, 0, 1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


def diagonal_geometry(shape: tuple, offset: int, dim1: int, dim2: int) -> tuple:
    """(size, stride, storage offset) of ``diagonal(offset, dim1, dim2)`` of a contiguous tensor of ``shape``
    (the backward of ``diagonal_copy`` writes its gradient there)."""
    st = contiguous_strides(shape)
    d1, d2 = wrap_dim(dim1, len(shape)), wrap_dim(dim2, len(shape))
    if offset >= 0:
        n, start = min(shape[d1], shape[d2] - offset), offset * st[d2]
    else:
        n, start = min(shape[d1] + offset, shape[d2]), -offset * st[d1]
    n = max(n, 0)
    rest = [k for k in range(len(shape)) if k not in (d1, d2)]
    return (tuple(shape[k] for k in rest) + (n,), tuple(st[k] for k in rest) + (st[d1] + st[d2],),
            start if n else 0)


# ---------------------------------------------------------------------------
# roll
# ---------------------------------------------------------------------------
def _roll_args(self, shifts, dims):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return shifts, None
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return shifts, wrap_dims(dims, len(self._shape))


@register("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", kind="transformation",
          meta=lambda self, shifts, dims=(): (_roll_args(self, shifts, dims), empty_meta(self._shape, self.dtype))[1])
def roll(self, shifts, dims=()):
    """Elements shifted cyclically by ``shifts`` along ``dims`` (without ``dims``: over the flattened tensor)."""
    shifts, ds = _roll_args(self, shifts, dims)
    a = self._np()
    if ds is None:
        return wrap(np.roll(a.reshape(-1), shifts[0]).reshape(a.shape), self.dtype)
    return wrap(np.roll(a, shifts, ds), self.dtype)


# ---------------------------------------------------------------------------
# einsum
# ---------------------------------------------------------------------------
_LETTERS = string.ascii_letters


def einsum_subscripts(equation: str, shapes: list) -> tuple:
    """An equation spelled out: (one subscript string per operand, the output's), ``...`` replaced by
    letters of its own, and a dim of size 1 that is broadcast against a larger one given a label no
    other operand has (so nothing is broadcast: the derivative can sum over it like any label)."""
    for k, c in enumerate(equation):
        if not (c.isascii() and c.isalpha()) and c not in ",. " and equation[k:k + 2] != "->" \
                and equation[k - 1:k + 1] != "->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {k} in the equation string, subscripts "
                               f"must be in [a-zA-Z]")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(ins) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    fresh = iter(c for c in _LETTERS if c not in used)
    n_ell = max((len(s) - len(sub.replace("...", "")) for sub, s in zip(ins, shapes) if "..." in sub), default=0)
    ell_labels = "".join(next(fresh) for _ in range(n_ell))
    ell_sizes = [1] * n_ell
    for sub, s in zip(ins, shapes):
        if "..." in sub:
            k = len(s) - len(sub.replace("...", ""))
            lead = sub.index("...")
            for j in range(k):
                size = s[lead + j]
                pos = n_ell - k + j
                if size != 1:
                    if ell_sizes[pos] not in (1, size):
                        raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->"
                                           f"remapped): {list(s)}")
                    ell_sizes[pos] = size
    out_ins = []
    for sub, s in zip(ins, shapes):
        if "..." in sub:
            k = len(s) - len(sub.replace("...", ""))
            labels = []
            for j in range(k):
                pos = n_ell - k + j
                labels.append(next(fresh) if s[sub.index("...") + j] == 1 and ell_sizes[pos] != 1
                              else ell_labels[pos])
            sub = sub.replace("...", "".join(labels))
        if len(sub) != len(s):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(sub)}) does not match the "
                               f"number of dimensions ({len(s)}) for operand {len(out_ins)} and no ellipsis was given")
        out_ins.append(sub)
    if arrow:
        for k, c in enumerate(rhs):
            if c.isalpha() and c not in lhs:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   f"operand")
            if c.isalpha() and c in rhs[:k]:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
        out = rhs.replace("...", ell_labels)
    else:
        counts = {}
        for c in lhs:
            if c.isalpha():
                counts[c] = counts.get(c, 0) + 1
        out = ell_labels + "".join(sorted(c for c, n in counts.items() if n == 1))
    sizes = {}
    for k, (sub, s) in enumerate(zip(out_ins, shapes)):
        for c, n in zip(sub, s):
            if c in sizes and sizes[c] != n and 1 not in (sizes[c], n):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast "
                                   f"with previously seen size {sizes[c]}")
            sizes[c] = n if c not in sizes or sizes[c] == 1 else sizes[c]
    return out_ins, out


def _einsum_check(equation, tensors):
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"expected scalar type {tensors[0].dtype._tensor_name} but found {t.dtype._tensor_name}")
    return einsum_subscripts(equation, [t._shape for t in tensors])


def _einsum_meta(equation, tensors, path=None):
    ins, out = _einsum_check(equation, tensors)
    sizes = {}
    for sub, t in zip(ins, tensors):
        for c, n in zip(sub, t._shape):
            sizes[c] = max(sizes.get(c, 1), n)
    return empty_meta(tuple(sizes[c] for c in out), tensors[0].dtype)


@register("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", variants=(), meta=_einsum_meta,
          kind="linalg")
def _einsum(equation, tensors, path=None):
    """Sum of products over the labels of ``equation`` (numpy's ``einsum`` on the spelled-out equation)."""
    ins, out = _einsum_check(equation, tensors)
    arrays = [t._np() for t in tensors]
    r = np.einsum(",".join(ins) + "->" + out, *arrays, optimize=len(arrays) > 2)
    return wrap(np.asarray(r, dtype=tensors[0].dtype.np), tensors[0].dtype)


def einsum(equation: str, *operands) -> Tensor:
    """``einsum(equation, *operands)`` (or one list of operands): Einstein summation, as ``torch.einsum``."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    return dispatch(OPS["einsum"], (equation, list(operands), None))


def einsum_backward(equation: str, tensors: list, g, k: int):
    """The gradient of ``einsum(equation, tensors)`` with respect to operand ``k``: one einsum of ``g`` and the
    other operands.  A label repeated in operand ``k`` (a diagonal) is tied to a fresh one by an identity
    matrix; a label only operand ``k`` has (summed away in the forward) gets a vector of ones."""
    ins, out = einsum_subscripts(equation, [t._shape for t in tensors])
    sub = ins[k]
    used = set("".join(ins) + out)
    fresh = iter(c for c in _LETTERS if c not in used)
    sizes = dict(zip(sub, tensors[k]._shape))
    target, extra_subs, extra = [], [], []
    seen = set()
    for c in sub:
        if c in seen:
            f = next(fresh)
            extra_subs.append(c + f)
            extra.append(_d("eye", sizes[c], None, g.dtype, None))
            target.append(f)
        else:
            seen.add(c)
            target.append(c)
    others = [i for i in range(len(tensors)) if i != k]
    present = set(out) | set("".join(ins[i] for i in others))
    for c in seen - present:
        extra_subs.append(c)
        extra.append(_d("ones", (sizes[c],), g.dtype, None))
    subs = [out] + [ins[i] for i in others] + extra_subs
    eq = ",".join(subs) + "->" + "".join(target)
    return dispatch(OPS["einsum"], (eq, [g] + [tensors[i] for i in others] + extra, None))


# ---------------------------------------------------------------------------
# logspace
# ---------------------------------------------------------------------------
def _logspace_kernel(start, end, steps, base=10.0, dtype=None, device=None):
    """The ``logspace`` op: ``base ** linspace(start, end, steps)``, computed in double precision.

    Deliberate difference: PyTorch's float32 kernel computes the exponents in float32 and a vectorised
    ``pow``; values can differ from it in the last bit.
    """
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype or _dtype.get_default_dtype()
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    if device == "meta":
        return empty_meta((steps,), dtype)
    if not dtype.is_floating_point:  # PyTorch's integer kernel truncates start and end first
        start, end = int(start), int(end)
    idx = np.arange(steps, dtype=np.float64)
    step = (float(end) - float(start)) / (steps - 1) if steps > 1 else 0.0
    up = idx < max(steps // 2, 1)  # the first half counts up from start, the second down from end
    exps = np.where(up, float(start) + step * idx, float(end) - step * (steps - 1 - idx))
    with np.errstate(all="ignore"):
        # (float_power calls the C library's pow, as PyTorch's kernel does; np.power of float64 may take a
        # SIMD pow on CPUs with AVX-512, 1 ulp away from it for 5% of exponents)
        vals = np.float_power(float(base), exps)
    if not dtype.is_floating_point:
        vals = np.trunc(vals)
    return wrap(vals.astype(dtype.np), dtype)


register("logspace(Scalar start, Scalar end, int steps, float base=10.0, *, ScalarType? dtype=None, "
         "Device? device=None) -> Tensor", variants=(), kind="factory")(_logspace_kernel)


def logspace(start, end, steps: int, base: float = 10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced on a log scale."""
    from .. import _creation as c
    if isinstance(steps, float) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"logspace(): argument 'steps' (position 3) must be int, not {type(steps).__name__}")
    start, end = c._scalar_value(start), c._scalar_value(end)
    dtype, dev = c._parse_dtype(dtype, "logspace"), c._parse_device(device)
    op = OPS["logspace"]
    if out is not None:
        return c._with_out(out, "logspace", op, (start, end, int(steps), float(base)), dtype, dev, requires_grad)
    return c._check_requires_grad(dispatch(op, (start, end, int(steps), float(base), dtype, dev)), requires_grad)
