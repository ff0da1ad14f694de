"""Planted wrong answers for chapter 02 (strides and views): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

from course_lib._ops.common import wrap_dim

_EXPRESSIONS_02 = [
    "t.view(4, 6)", "t.reshape(6, 4)", "t.transpose(0, 1).reshape(6, 4)", "t[:, :2].reshape(2, 8)",
    "t[:, :2].reshape(16)", "t.unsqueeze(0)", "t.squeeze()", "t[:, :1].expand(2, 5, 4)", "t[:1].expand_as(t)",
    "t.transpose(0, 2)", "t.permute(2, 0, 1)", "t.contiguous()", "t.transpose(0, 1).contiguous()", "t.clone()",
    "t.detach()",
]


# ------------------------------------------------------------------ 02.1 predict_copies
def predict_copies_noncontiguous_reshape_copies():
    # "reshape copies when the input is not contiguous; contiguous() copies": both too pessimistic
    copies = {"t.transpose(0, 1).reshape(6, 4)", "t[:, :2].reshape(2, 8)", "t[:, :2].reshape(16)",
              "t.contiguous()", "t.transpose(0, 1).contiguous()", "t.clone()"}
    return {e: e in copies for e in _EXPRESSIONS_02}


def predict_copies_only_clone():
    return {e: e == "t.clone()" for e in _EXPRESSIONS_02}


# ------------------------------------------------------------------ 02.2 is_contiguous
def is_contiguous_exact_strides(shape, stride):
    # compares with the row-major strides: forgets that size-1 and empty dims don't matter
    expected, acc = [], 1
    for s in reversed(shape):
        expected.append(acc)
        acc *= max(s, 1)
    return tuple(stride) == tuple(reversed(expected))


def is_contiguous_no_empty_rule(shape, stride):
    expected = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size == 1:
            continue
        if st != expected:
            return False
        expected *= size
    return True


def is_contiguous_decreasing_strides(shape, stride):
    return all(a >= b for a, b in zip(stride, stride[1:])) and (not stride or stride[-1] == 1)


# ------------------------------------------------------------------ 02.3 transpose_geometry
def transpose_geometry_shape_only(shape, stride, offset, dim0, dim1):
    nd = len(shape)
    a, b = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    if nd == 0:
        return (), (), offset
    shape = list(shape)
    shape[a], shape[b] = shape[b], shape[a]
    return tuple(shape), tuple(stride), offset


def transpose_geometry_no_wrap(shape, stride, offset, dim0, dim1):
    # Python's negative list indices stand in for wrap_dim: a 0-d tensor fails, -3 of 2 dims is not caught
    shape, stride = list(shape), list(stride)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return tuple(shape), tuple(stride), offset


# ------------------------------------------------------------------ 02.4 permute_geometry
def permute_geometry_inverse(shape, stride, offset, dims):
    # puts old dim i at position dims[i] (the inverse permutation)
    nd = len(shape)
    if len(dims) != nd:
        raise RuntimeError("wrong number of dims")
    dims = [wrap_dim(d, nd) for d in dims]
    if len(set(dims)) != nd:
        raise RuntimeError("duplicate dims")
    new_shape, new_stride = [0] * nd, [0] * nd
    for i, d in enumerate(dims):
        new_shape[d], new_stride[d] = shape[i], stride[i]
    return tuple(new_shape), tuple(new_stride), offset


def permute_geometry_no_checks(shape, stride, offset, dims):
    return tuple(shape[d] for d in dims), tuple(stride[d] for d in dims), offset


def permute_geometry_duplicates_before_wrapping(shape, stride, offset, dims):
    # looks for duplicates among the dims as given: (0, -2) on 2 dims gets through
    nd = len(shape)
    if len(dims) != nd:
        raise RuntimeError("wrong number of dims")
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    dims = [wrap_dim(d, nd) for d in dims]
    return tuple(shape[d] for d in dims), tuple(stride[d] for d in dims), offset


# ------------------------------------------------------------------ 02.5 narrow_geometry
def _narrow_02(shape, stride, offset, dim, start, length, move):
    if len(shape) == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    size = shape[d]
    if not -size <= start <= size:
        raise IndexError("start out of range")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError("bad length")
    return shape[:d] + (length,) + shape[d + 1:], tuple(stride), offset + move(start, stride[d], length)


def narrow_geometry_offset_unchanged(shape, stride, offset, dim, start, length):
    return _narrow_02(shape, stride, offset, dim, start, length, lambda start, st, n: 0)


def narrow_geometry_offset_by_start(shape, stride, offset, dim, start, length):
    return _narrow_02(shape, stride, offset, dim, start, length, lambda start, st, n: start)


def narrow_geometry_empty_offset_zero(shape, stride, offset, dim, start, length):
    # right, except that an empty result keeps the old offset (course_lib's choice, not PyTorch's)
    return _narrow_02(shape, stride, offset, dim, start, length, lambda start, st, n: start * st if n else 0)


# ------------------------------------------------------------------ 02.6 select_geometry
def select_geometry_keeps_dim(shape, stride, offset, dim, index):
    if len(shape) == 0:
        raise IndexError("0-d")
    d = wrap_dim(dim, len(shape))
    if not -shape[d] <= index < shape[d]:
        raise IndexError("index out of range")
    index %= shape[d]
    return shape[:d] + (1,) + shape[d + 1:], tuple(stride), offset + index * stride[d]


def select_geometry_no_stride(shape, stride, offset, dim, index):
    if len(shape) == 0:
        raise IndexError("0-d")
    d = wrap_dim(dim, len(shape))
    if not -shape[d] <= index < shape[d]:
        raise IndexError("index out of range")
    index %= shape[d]
    return shape[:d] + shape[d + 1:], stride[:d] + stride[d + 1:], offset + index


def select_geometry_no_negative_index(shape, stride, offset, dim, index):
    if len(shape) == 0:
        raise IndexError("0-d")
    d = wrap_dim(dim, len(shape))
    if not 0 <= index < shape[d]:
        raise IndexError("index out of range")
    return shape[:d] + shape[d + 1:], stride[:d] + stride[d + 1:], offset + index * stride[d]


# ------------------------------------------------------------------ 02.7 compute_stride
def compute_stride_contiguous_only(oldshape, oldstride, newshape):
    # only views of contiguous tensors: misses every non-contiguous tensor that can still be viewed
    expected = 1
    for size, st in zip(reversed(oldshape), reversed(oldstride)):
        if size != 1 and st != expected and 0 not in oldshape:
            return None
        expected *= size
    out, acc = [], 1
    for s in reversed(newshape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def compute_stride_no_size1_skip(oldshape, oldstride, newshape):
    # the chunk test forgets that a size-1 old dim never breaks a chunk
    if len(oldshape) == 0:
        return (1,) * len(newshape)
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0:
        if tuple(oldshape) == tuple(newshape):
            return tuple(oldstride)
        out, acc = [], 1
        for s in reversed(newshape):
            out.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(out))
    newstride = [0] * len(newshape)
    view_d, base, t_n, v_n = len(newshape) - 1, oldstride[-1], 1, 1
    for d in range(len(oldshape) - 1, -1, -1):
        t_n *= oldshape[d]
        if d == 0 or oldstride[d - 1] != t_n * base:
            while view_d >= 0 and (v_n < t_n or newshape[view_d] == 1):
                newstride[view_d] = v_n * base
                v_n *= newshape[view_d]
                view_d -= 1
            if v_n != t_n:
                return None
            if d > 0:
                base, t_n, v_n = oldstride[d - 1], 1, 1
    return tuple(newstride) if view_d == -1 else None


# ------------------------------------------------------------------ 02.8 expand_geometry
def expand_geometry_keeps_strides(shape, stride, offset, size):
    # grows size-1 dims but keeps their stride: reads past the one element instead of repeating it
    size = tuple(size)
    nd = len(shape)
    if len(size) < nd:
        raise RuntimeError("too few sizes")
    off = len(size) - nd
    new_stride = []
    new_shape = []
    for i, target in enumerate(size):
        j = i - off
        if j < 0:
            if target < 0:
                raise RuntimeError("-1 in a new dim")
            new_shape.append(target)
            new_stride.append(0)
            continue
        if target == -1:
            target = shape[j]
        if shape[j] != target and shape[j] != 1:
            raise RuntimeError("mismatch")
        new_shape.append(target)
        new_stride.append(stride[j])
    return tuple(new_shape), tuple(new_stride), offset


def expand_geometry_new_dims_stride_0(shape, stride, offset, size):
    # every new leading dim gets stride 0, also when its size is 1 (PyTorch gives those unsqueeze's stride)
    size = tuple(size)
    nd = len(shape)
    if len(size) < nd:
        raise RuntimeError("too few sizes")
    off = len(size) - nd
    new_shape, new_stride = [], []
    for i, target in enumerate(size):
        j = i - off
        if j < 0:
            if target < 0:
                raise RuntimeError("-1 in a new dim")
            new_shape.append(target)
            new_stride.append(0)
            continue
        if target == -1:
            target = shape[j]
        if shape[j] == target:
            new_shape.append(target)
            new_stride.append(stride[j])
        elif shape[j] == 1:
            new_shape.append(target)
            new_stride.append(0)
        else:
            raise RuntimeError("mismatch")
    return tuple(new_shape), tuple(new_stride), offset


# ------------------------------------------------------------------ 02.9 broadcast_shapes
def _broadcast_pair_02(a, b, message):
    ndim = max(len(a), len(b))
    a = (1,) * (ndim - len(a)) + tuple(a)
    b = (1,) * (ndim - len(b)) + tuple(b)
    out = []
    for d, (m, n) in enumerate(zip(a, b)):
        if m != n and m != 1 and n != 1:
            raise RuntimeError(message(m, n, d))
        out.append(n if m == 1 else m)
    return tuple(out)


def broadcast_shapes_left_aligned(*shapes):
    # pads on the right instead of the left
    result = ()
    for s in shapes:
        ndim = max(len(result), len(s))
        a = tuple(result) + (1,) * (ndim - len(result))
        b = tuple(s) + (1,) * (ndim - len(s))
        result = _broadcast_pair_02(a, b, lambda m, n, d: f"The size of tensor a ({m}) must match the size of "
                                                          f"tensor b ({n}) at non-singleton dimension {d}")
    return result


def broadcast_shapes_swapped_message(*shapes):
    result = ()
    for s in shapes:
        result = _broadcast_pair_02(result, s, lambda m, n, d: f"The size of tensor a ({n}) must match the size "
                                                               f"of tensor b ({m}) at non-singleton dimension {d}")
    return result


def broadcast_shapes_all_at_once(*shapes):
    # counts the dim in the final number of dims instead of in the pair met so far
    ndim = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    out = [1] * ndim
    for s in padded:
        for d, n in enumerate(s):
            if out[d] != n and out[d] != 1 and n != 1:
                raise RuntimeError(f"The size of tensor a ({out[d]}) must match the size of tensor b ({n}) "
                                   f"at non-singleton dimension {d}")
            if out[d] == 1:
                out[d] = n
    return tuple(out)


# ------------------------------------------------------------------ 02.10 index_geometry
def _index_02(shape, stride, offset, index, none_stride=None, wrap_ints=True, clamp=True):
    if not isinstance(index, tuple):
        index = (index,)
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    if consumed > len(shape):
        raise IndexError("too many indices")
    shape, stride = list(shape), list(stride)
    d, left = 0, consumed
    for item in index:
        if item is None:
            st = shape[d] * stride[d] if d < len(shape) else 1
            shape.insert(d, 1)
            stride.insert(d, st if none_stride is None else none_stride)
            d += 1
        elif item is Ellipsis:
            d += len(shape) - d - left
        elif isinstance(item, int):
            if not -shape[d] <= item < shape[d]:
                raise IndexError("index out of range")
            offset += (item % shape[d] if wrap_ints else item) * stride[d]
            del shape[d], stride[d]
            left -= 1
        else:
            step = 1 if item.step is None else item.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if clamp:
                start, stop, _ = slice(item.start, item.stop).indices(shape[d])
            else:
                start = item.start or 0
                stop = shape[d] if item.stop is None else min(item.stop, shape[d])
            stop = max(stop, start)
            offset += start * stride[d]
            shape[d] = (stop - start + step - 1) // step
            stride[d] *= step
            d += 1
            left -= 1
    return tuple(shape), tuple(stride), offset


def index_geometry_none_stride_1(shape, stride, offset, index):
    return _index_02(shape, stride, offset, index, none_stride=1)


def index_geometry_negative_ints_unwrapped(shape, stride, offset, index):
    return _index_02(shape, stride, offset, index, wrap_ints=False)


def index_geometry_negative_slices_unwrapped(shape, stride, offset, index):
    return _index_02(shape, stride, offset, index, clamp=False)


WRONG = {
    "02.1": [predict_copies_noncontiguous_reshape_copies, predict_copies_only_clone],
    "02.2": [is_contiguous_exact_strides, is_contiguous_no_empty_rule, is_contiguous_decreasing_strides],
    "02.3": [transpose_geometry_shape_only, transpose_geometry_no_wrap],
    "02.4": [permute_geometry_inverse, permute_geometry_no_checks, permute_geometry_duplicates_before_wrapping],
    "02.5": [narrow_geometry_offset_unchanged, narrow_geometry_offset_by_start, narrow_geometry_empty_offset_zero],
    "02.6": [select_geometry_keeps_dim, select_geometry_no_stride, select_geometry_no_negative_index],
    "02.7": [compute_stride_contiguous_only, compute_stride_no_size1_skip],
    "02.8": [expand_geometry_keeps_strides, expand_geometry_new_dims_stride_0],
    "02.9": [broadcast_shapes_left_aligned, broadcast_shapes_swapped_message, broadcast_shapes_all_at_once],
    "02.10": [index_geometry_none_stride_1, index_geometry_negative_ints_unwrapped,
              index_geometry_negative_slices_unwrapped],
}
