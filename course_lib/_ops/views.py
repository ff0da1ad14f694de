"""View ops: new (shape, stride, offset) over the same storage, no data copied.

In PyTorch: ``aten/src/ATen/native/TensorShape.cpp`` (view, expand, transpose,
select, narrow, unfold, diagonal, ...) and ``aten/src/ATen/TensorUtils.cpp``
(``computeStride``, the rule that decides whether ``view`` is possible).

A view kernel never touches data, so the same function serves the CPU and the
meta device.  Views share the storage and the version counter of their base.
Ops that *may* copy (``reshape``, ``contiguous``) are composites: they call
``view`` or ``clone`` through the dispatcher, so autograd and modes see the op
that really ran.
"""
from __future__ import annotations

import builtins as _builtins

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import contiguous_strides, empty_meta, type_name, wrap, wrap_dim, wrap_dims
from .registry import register


def _dispatch(name, *args):
    from .dispatcher import dispatch
    from .registry import OPS
    return dispatch(OPS[name], args)


# ---------------------------------------------------------------------------
# shape arithmetic
# ---------------------------------------------------------------------------
def check_int_sizes(shape, fname: str, argname: str) -> None:
    """PyTorch's argument-parser error for a size that is not an int (``x.view(2, 3.0)``)."""
    for i, s in enumerate(shape):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{fname}(): argument '{argname}' failed to unpack the object at pos {i + 1} with "
                            f"error \"type must be tuple of ints,but got {type(s).__name__}\"")


def infer_size(shape, numel: int) -> tuple:
    """Replace a single -1 in ``shape`` so the sizes multiply to ``numel``."""
    newsize = 1
    infer_dim = None
    for i, s in enumerate(shape):
        if s == -1:
            if infer_dim is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer_dim = i
        elif s >= 0:
            newsize *= s
        else:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if numel == newsize or (infer_dim is not None and newsize > 0 and numel % newsize == 0):
        if infer_dim is not None:
            if newsize == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {list(shape)} because the unspecified "
                    "dimension size -1 can be any value and is ambiguous")
            shape = list(shape)
            shape[infer_dim] = numel // newsize
        return tuple(shape)
    raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")


def compute_stride(oldshape: tuple, oldstride: tuple, newshape: tuple):
    """Strides that let a tensor of (oldshape, oldstride) be viewed as ``newshape``, or None.

    PyTorch's ``computeStride``: walk the old dims from the right, grouping them into
    chunks that are contiguous among themselves; each chunk must be split or merged into
    new dims exactly, without crossing a chunk boundary.
    """
    if not oldshape:
        return (1,) * len(newshape)
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0 and tuple(oldshape) == tuple(newshape):
        return tuple(oldstride)
    newstride = [0] * len(newshape)
    if numel == 0:
        for d in range(len(newshape) - 1, -1, -1):
            newstride[d] = 1 if d == len(newshape) - 1 else max(newshape[d + 1], 1) * newstride[d + 1]
        return tuple(newstride)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1
                             and oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def _sizes(size) -> tuple:
    """Accept view(2, 3), view((2, 3)) and view(Size([2, 3]))."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(s) for s in size)


# ---------------------------------------------------------------------------
# view / reshape / flatten
# ---------------------------------------------------------------------------
@register("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", variants=("method",), kind="view",
          is_view=True)
def view(self, size):
    """Reinterpret the elements with a new shape, without copying (fails if strides don't allow)."""
    if isinstance(size, _dtype.dtype):
        return view_dtype(self, size)
    if len(size) == 1 and isinstance(size[0], _dtype.dtype):
        return view_dtype(self, size[0])
    check_int_sizes(size, "view", "size")
    shape = infer_size(size, self.numel())
    stride = compute_stride(self._shape, self._stride, shape)
    if stride is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans "
            "across two contiguous subspaces). Use .reshape(...) instead.")
    return self._view(shape, stride, self._offset)


def view_dtype(self, dtype):
    """The same bytes read as another dtype (``x.view(torch.int32)``).  Not a view for
    ``_is_view()`` (as in PyTorch), but it shares the storage and the version counter.

    With a different element size the last dim is rescaled; PyTorch's conditions apply.
    """
    old, new = self.dtype.itemsize, dtype.itemsize
    shape, stride, offset = self._shape, self._stride, self._offset
    if old != new:
        if not shape:
            raise RuntimeError("self.dim() cannot be 0 to view " + _dt_name(self.dtype) + " as " + _dt_name(dtype)
                               + " (different element sizes)")
        if stride[-1] != 1:
            raise RuntimeError("self.stride(-1) must be 1 to view " + _dt_name(self.dtype) + " as "
                               + _dt_name(dtype) + " (different element sizes), but got " + str(stride[-1]))
        if new > old:
            r = new // old
            if shape[-1] % r:
                raise RuntimeError(f"self.size(-1) must be divisible by {r} to view {_dt_name(self.dtype)} as "
                                   f"{_dt_name(dtype)} (different element sizes), but got {shape[-1]}")
            if offset % r:
                raise RuntimeError(f"self.storage_offset() must be divisible by {r} to view {_dt_name(self.dtype)} "
                                   f"as {_dt_name(dtype)} (different element sizes), but got {offset}")
            for k, st in enumerate(stride[:-1]):
                if st % r:
                    raise RuntimeError(f"self.stride({k}) must be divisible by {r} to view {_dt_name(self.dtype)} "
                                       f"as {_dt_name(dtype)} (different element sizes), but got {st}")
            shape = shape[:-1] + (shape[-1] // r,)
            stride = tuple(st // r for st in stride[:-1]) + (1,)
            offset //= r
        else:
            r = old // new
            shape = shape[:-1] + (shape[-1] * r,)
            stride = tuple(st * r for st in stride[:-1]) + (1,)
            offset *= r
    from .._storage import Storage
    st = self._storage
    if st.data is not None:
        raw = st.data.view(np.uint8)
        data = raw[:len(raw) - len(raw) % new].view(dtype.np)
        size = data.shape[0]
    else:
        data, size = None, st._size * old // new
    new_st = Storage(data, dtype, st.device, size=size, owner=st)
    return Tensor._make(new_st, offset, shape, stride, dtype, vc=self._vc)


def _dt_name(dt) -> str:
    return dt._tensor_name


@register("_unsafe_view(Tensor self, SymInt[] size) -> Tensor", variants=(), kind="view")
def _unsafe_view(self, size):
    """``view`` of a freshly made tensor (what ``reshape`` uses after copying); not a view for autograd."""
    shape = infer_size(size, self.numel())
    return Tensor._make(self._storage, self._offset, shape, contiguous_strides(shape), self.dtype)


@register("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", kind="composite")
def reshape(self, shape):
    """A view when the strides allow one, else a contiguous copy."""
    check_int_sizes(shape, "reshape", "shape")
    shape = infer_size(shape, self.numel())
    if compute_stride(self._shape, self._stride, shape) is not None:
        return _dispatch("view", self, shape)
    return _dispatch("_unsafe_view", _dispatch("clone", self, "contiguous_format"), shape)


@register("flatten(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", kind="composite")
def flatten(self, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (a view when possible)."""
    nd = len(self._shape)
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if nd == 0:
        return reshape.cpu(self, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    n = 1
    for k in self._shape[s:e + 1]:
        n *= k
    return reshape.cpu(self, self._shape[:s] + (n,) + self._shape[e + 1:])


@register("unflatten(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)", kind="composite")
def unflatten(self, dim, sizes):
    """Split one dim into ``sizes`` (one of which may be -1)."""
    d = wrap_dim(dim, len(self._shape))
    sizes = tuple(sizes)
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    sizes = infer_size(sizes, self._shape[d]) if -1 in sizes else sizes
    n = 1
    for k in sizes:
        n *= k
    if n != self._shape[d]:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({self._shape[d]}) in the input tensor")
    return _dispatch("view", self, self._shape[:d] + sizes + self._shape[d + 1:])


# ---------------------------------------------------------------------------
# transpose family
# ---------------------------------------------------------------------------
@register("transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", kind="view", is_view=True)
def transpose(self, dim0, dim1):
    """Swap two dims: swap their sizes and strides."""
    nd = len(self._shape)
    a, b = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    if nd == 0:
        return self._view((), (), self._offset)
    shape, stride = list(self._shape), list(self._stride)
    shape[a], shape[b] = shape[b], shape[a]
    stride[a], stride[b] = stride[b], stride[a]
    return self._view(tuple(shape), tuple(stride), self._offset)


@register("t(Tensor(a) self) -> Tensor(a)", kind="view", is_view=True)
def t(self):
    """Transpose a tensor of at most 2 dims."""
    nd = len(self._shape)
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    if nd < 2:
        return self._view(self._shape, self._stride, self._offset)
    return self._view(self._shape[::-1], self._stride[::-1], self._offset)


@register("permute(Tensor(a) self, int[] dims) -> Tensor(a)", kind="view", is_view=True)
def permute(self, dims):
    """Reorder the dims: size and stride of new dim i are those of old dim dims[i]."""
    nd = len(self._shape)
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    ds = tuple(wrap_dim(d, nd) for d in dims)
    if len(set(ds)) != len(ds):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return self._view(tuple(self._shape[d] for d in ds), tuple(self._stride[d] for d in ds), self._offset)


@register("movedim(Tensor(a) self, int[1] source, int[1] destination) -> Tensor(a)", kind="composite")
def movedim(self, source, destination):
    nd = len(self._shape)
    src = wrap_dims(source, nd)
    dst = wrap_dims(destination, nd)
    if nd == 0:
        return _dispatch("alias", self)
    if len(src) != len(dst):
        raise RuntimeError("movedim: Invalid source or destination dims")
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return _dispatch("permute", self, tuple(order))


# ---------------------------------------------------------------------------
# adding and removing size-1 dims; broadcasting by stride 0
# ---------------------------------------------------------------------------
@register("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", kind="view", is_view=True)
def unsqueeze(self, dim):
    """Insert a size-1 dim; its stride is chosen so the tensor stays as contiguous as it was."""
    nd = len(self._shape)
    d = wrap_dim(dim, nd + 1)
    st = self._shape[d] * self._stride[d] if d < nd else 1
    return self._view(self._shape[:d] + (1,) + self._shape[d:], self._stride[:d] + (st,) + self._stride[d:],
                      self._offset)


@register("squeeze(Tensor(a) self, int[1]? dim=None) -> Tensor(a)", kind="view", is_view=True)
def squeeze(self, dim=None):
    """Remove size-1 dims (all, or the given ones; a given dim of size > 1 is left alone)."""
    nd = len(self._shape)
    if dim is None:
        keep = [i for i in range(nd) if self._shape[i] != 1]
    else:
        ds = wrap_dims(dim, nd)
        keep = [i for i in range(nd) if not (i in ds and self._shape[i] == 1)]
    return self._view(tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep), self._offset)


@register("expand(Tensor(a) self, SymInt[] size) -> Tensor(a)", variants=("method",), kind="view", is_view=True)
def expand(self, size):
    """Broadcast to ``size`` without copying: new and size-1 dims get stride 0 (-1 keeps a size)."""
    size = tuple(size)
    nd = len(self._shape)
    if len(size) < nd:
        raise RuntimeError(
            f"expand({type_name(self)}{{{list(self._shape)}}}, size={list(size)}): the number of sizes provided "
            f"({len(size)}) must be greater or equal to the number of dimensions in the tensor ({nd})")
    # PyTorch's inferExpandGeometry: right to left; a new leading dim of size 1 gets the stride
    # a contiguous tensor would have there, any dim that really grows gets stride 0.
    ndim = len(size)
    shape, stride = [0] * ndim, [0] * ndim
    for i in range(ndim - 1, -1, -1):
        j = i - (ndim - nd)
        if j >= 0:
            cur, cst = self._shape[j], self._stride[j]
        else:
            if size[i] < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({size[i]}) isn't allowed in a leading, non-existing "
                    f"dimension {i}")
            cur, cst = 1, (shape[i + 1] * stride[i + 1] if i + 1 < ndim else 0)
        target = cur if size[i] == -1 else size[i]
        if cur != target:
            if cur != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target}) must match the existing size ({cur}) at "
                    f"non-singleton dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: "
                    f"{list(self._shape)}")
            cur, cst = target, 0
        shape[i], stride[i] = cur, cst
    return self._view(tuple(shape), tuple(stride), self._offset)


@register("expand_as(Tensor(a) self, Tensor other) -> Tensor(a)", variants=("method",), kind="composite")
def expand_as(self, other):
    return _dispatch("expand", self, other._shape)


@register("broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)", kind="composite")
def broadcast_to(self, size):
    return _dispatch("expand", self, tuple(size))


# ---------------------------------------------------------------------------
# picking parts
# ---------------------------------------------------------------------------
@register("select(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", kind="view", is_view=True)
def select(self, dim, index):
    """Fix ``dim`` at ``index``: that dim disappears and the offset moves."""
    nd = len(self._shape)
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    n = self._shape[d]
    if index < -n or index >= n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self._shape)} "
                         f"at dimension {d}")
    if index < 0:
        index += n
    return self._view(self._shape[:d] + self._shape[d + 1:], self._stride[:d] + self._stride[d + 1:],
                      self._offset + index * self._stride[d])


@register("slice(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
          variants=(), kind="view", is_view=True)
def slice(self, dim=0, start=None, end=None, step=1):  # noqa: A001
    """``x[start:end:step]`` along ``dim`` (positive steps only)."""
    if step <= 0:
        raise ValueError("step must be greater than zero")
    d = wrap_dim(dim, len(self._shape))
    n = self._shape[d]
    start, end, _ = _builtins.slice(start, end, 1).indices(n)
    length = max(0, (end - start + step - 1) // step)
    shape = self._shape[:d] + (length,) + self._shape[d + 1:]
    stride = self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1:]
    return self._view(shape, stride, self._offset + start * self._stride[d])


@register("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)", kind="view",
          is_view=True)
def narrow(self, dim, start, length):
    """``length`` elements of ``dim`` from ``start``."""
    if not self._shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(self._shape))
    n = self._shape[d]
    if start < -n or start > n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    return slice.cpu(self, d, start, start + length, 1)


@register("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", kind="view",
          is_view=True)
def diagonal(self, offset=0, dim1=0, dim2=1):
    """The diagonal of dims (dim1, dim2) as a new last dim with stride stride1 + stride2."""
    nd = len(self._shape)
    a, b = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = self._shape[a], self._shape[b]
    off = self._offset
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        if length:
            off += offset * self._stride[b]
    else:
        length = max(min(n1 + offset, n2), 0)
        if length:
            off -= offset * self._stride[a]
    keep = [i for i in range(nd) if i not in (a, b)]
    shape = tuple(self._shape[i] for i in keep) + (length,)
    stride = tuple(self._stride[i] for i in keep) + (self._stride[a] + self._stride[b],)
    return self._view(shape, stride, off)


@register("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", variants=("method",),
          kind="view", is_view=True)
def unfold(self, dimension, size, step):
    """All windows of ``size`` along a dim, ``step`` apart, as a new last dim (a sliding-window view)."""
    nd = len(self._shape)
    d = wrap_dim(dimension, nd) if nd else 0
    n = self._shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if not nd:
        return self._view((size,), (1,), self._offset)
    count = (n - size) // step + 1
    shape = self._shape[:d] + (count,) + self._shape[d + 1:] + (size,)
    stride = self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1:] + (self._stride[d],)
    return self._view(shape, stride, self._offset)


@register("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
          kind="view", is_view=True)
def as_strided(self, size, stride, storage_offset=None):
    """Any (size, stride, offset) over the same storage, checked to stay inside it."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    off = self._offset if storage_offset is None else storage_offset
    if any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    for s in stride:
        if s < 0:
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                               f"{list(stride)}")
    if all(s > 0 for s in size):
        need = off + sum((s - 1) * st for s, st in zip(size, stride)) + 1
        if need > self._storage._size:
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, and itemsize "
                f"{self.dtype.itemsize} requiring a storage size of {need * self.dtype.itemsize} are out of "
                f"bounds for storage of size {self._storage._size * self.dtype.itemsize}")
    return self._view(size, stride, off)


# ---------------------------------------------------------------------------
# several views at once (composites, so autograd records one view op per piece)
# ---------------------------------------------------------------------------
@register("unbind(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", kind="composite")
def unbind(self, dim=0):
    """All slices along ``dim``, as a tuple of views."""
    if not self._shape:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, len(self._shape))
    return tuple(_dispatch("select", self, d, i) for i in range(self._shape[d]))


@register("split(Tensor(a -> *) self, SymInt[1] split_size, int dim=0) -> Tensor(a)[]", kind="composite")
def split(self, split_size, dim=0):
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    if not self._shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, len(self._shape))
    n = self._shape[d]
    if isinstance(split_size, int):
        if split_size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
        if split_size == 0 and n != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        if split_size == 0 or n == 0:
            sizes = [0]  # an empty dim still gives one (empty) piece
        else:
            sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
    else:
        sizes = list(split_size)
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension "
                f"{d}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(_dispatch("narrow", self, d, start, s))
        start += s
    return tuple(out)


@register("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", kind="composite")
def chunk(self, chunks, dim=0):
    """``chunks`` pieces of ceil(n / chunks) along ``dim`` (fewer if they run out)."""
    if not self._shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, len(self._shape))
    n = self._shape[d]
    size = max((n + chunks - 1) // chunks, 1) if n else 0
    if n == 0:
        return tuple(_dispatch("narrow", self, d, 0, 0) for _ in range(chunks))
    return split.cpu(self, size, d)


# ---------------------------------------------------------------------------
# detaching
# ---------------------------------------------------------------------------
@register("detach(Tensor(a) self) -> Tensor(a)", kind="view")
def detach(self):
    """Same storage and version counter, no autograd history (not a view for ``_is_view``)."""
    t = Tensor._make(self._storage, self._offset, self._shape, self._stride, self.dtype, vc=self._vc)
    t._np_cache = self._np_cache
    return t


@register("alias(Tensor(a) self) -> Tensor(a)", variants=(), kind="view", is_view=True)
def alias(self):
    return self._view(self._shape, self._stride, self._offset)


# ---------------------------------------------------------------------------
# the backward of element-picking views (select, slice, diagonal, unfold, as_strided)
# ---------------------------------------------------------------------------
def _geometry_index(size, stride, offset) -> np.ndarray:
    """Flat positions, in a contiguous buffer, of the elements of the view (size, stride, offset)."""
    idx = np.full((), offset, dtype=np.int64)
    for s, st in zip(size, stride):
        idx = idx[..., None] + np.arange(s, dtype=np.int64) * st
    return idx


def _non_overlapping(size, stride) -> bool:
    dims = sorted((st, s) for s, st in zip(size, stride) if s != 1)
    extent = 1
    for st, s in dims:
        if st < extent:
            return False
        extent = max(extent, st * s)
    return True


@register("_view_scatter(Tensor grad, int[] input_size, int[] size, int[] stride, int offset) -> Tensor",
          variants=(), meta=lambda grad, input_size, size, stride, offset: empty_meta(tuple(input_size), grad.dtype),
          kind="indexing")
def _view_scatter(grad, input_size, size, stride, offset):
    """Zeros of ``input_size`` with ``grad`` added where the view (size, stride, offset) of a
    contiguous tensor of that shape has its elements (overlapping elements add up)."""
    input_size = tuple(input_size)
    n = 1
    for s in input_size:
        n *= s
    g = grad._np()
    if any(s == 0 for s in size):
        return wrap(np.zeros(input_size, grad.dtype.np), grad.dtype)
    if _non_overlapping(size, stride):
        out = np.zeros(n, grad.dtype.np)
        isz = out.itemsize
        np.lib.stride_tricks.as_strided(out[offset:], tuple(size), tuple(s * isz for s in stride))[...] = g
    else:
        idx = _geometry_index(size, stride, offset).reshape(-1)
        out = np.bincount(idx, weights=g.reshape(-1).astype(np.float64), minlength=n).astype(grad.dtype.np)
    return wrap(out.reshape(input_size), grad.dtype)


@register("_view_gather(Tensor self, int[] size, int[] stride, int offset) -> Tensor", variants=(),
          meta=lambda self, size, stride, offset: empty_meta(tuple(size), self.dtype), kind="indexing")
def _view_gather(self, size, stride, offset):
    """A copy of the view (size, stride, offset) of a contiguous copy of ``self``."""
    a = np.ascontiguousarray(self._np()).reshape(-1)
    isz = a.itemsize
    v = np.lib.stride_tricks.as_strided(a[offset:], tuple(size), tuple(s * isz for s in stride))
    return wrap(np.array(v), self.dtype)


def _as_strided_backward_general(grad, x, size, stride, storage_offset):
    """as_strided's backward when the input is not contiguous: scatter into the storage's
    geometry, then read the input's elements back out (not differentiable twice)."""
    nstore = x._storage._size
    off = x._offset if storage_offset is None else storage_offset
    idx_out = _geometry_index(tuple(size), tuple(stride), off).reshape(-1)
    buf = np.bincount(idx_out, weights=grad._np().reshape(-1).astype(np.float64), minlength=nstore)
    idx_in = _geometry_index(x._shape, x._stride, x._offset)
    # elements of the input that overlap each other share one storage slot: count them once
    return wrap(buf[idx_in].astype(grad.dtype.np), grad.dtype)
