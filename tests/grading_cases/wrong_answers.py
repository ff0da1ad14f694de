"""Planted wrong answers: for every exercise, implementations each check must reject.

Keyed by exercise id. tests/test_checks.py asserts that every exercise found in
solutions/*.ipynb has at least one entry here and that the check fails on each
(with CheckFailure, not NotAttempted).
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
    "00.2": [flatten_no_ragged_check, flatten_shape_as_list, flatten_scalar_shape_1, flatten_empty_inner_lost],
    "00.3": [flat_index_column_major, flat_index_no_bounds, flat_index_sum],
}


# ================================================================== chapter 01 (tensor and storage)
# ------------------------------------------------------------------ 01.1 contiguous_strides
def contiguous_strides_no_max(shape):
    # forgets max(size, 1): a size-0 dimension zeroes every stride before it
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def contiguous_strides_column_major(shape):
    strides, step = [], 1
    for size in shape:
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides)


def contiguous_strides_list(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return list(reversed(strides))


def contiguous_strides_off_by_one(shape):
    # multiplies in its own size too: (2, 3) -> (6, 3)
    strides, step = [], 1
    for size in reversed(shape):
        step *= max(size, 1)
        strides.append(step)
    return tuple(reversed(strides))


# ------------------------------------------------------------------ 01.2 storage_index
def storage_index_no_offset(index, shape, stride, offset):
    position = 0
    for d, (i, size, step) in enumerate(zip(index, shape, stride)):
        j = i + size if i < 0 else i
        if not 0 <= j < size:
            raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
        position += j * step
    return position


def storage_index_row_major(index, shape, stride, offset):
    # ignores the strides: assumes a contiguous tensor
    position, step = offset, 1
    for d in reversed(range(len(shape))):
        i, size = index[d], shape[d]
        j = i + size if i < 0 else i
        if not 0 <= j < size:
            raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
        position += j * step
        step *= max(size, 1)
    return position


def storage_index_no_negative(index, shape, stride, offset):
    position = offset
    for d, (i, size, step) in enumerate(zip(index, shape, stride)):
        if not 0 <= i < size:
            raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
        position += i * step
    return position


def storage_index_wrapped_message(index, shape, stride, offset):
    # right positions, but the message shows the wrapped index and no dimension
    position = offset
    for i, size, step in zip(index, shape, stride):
        j = i + size if i < 0 else i
        if not 0 <= j < size:
            raise IndexError(f"index {j} is out of range")
        position += j * step
    return position


# ------------------------------------------------------------------ 01.3 infer_shape_and_dtype
def _ch01_shape(data):
    shape = []
    while isinstance(data, (list, tuple)):
        shape.append(len(data))
        if not data:
            break
        data = data[0]
    return tuple(shape)


def infer_shape_and_dtype_int_before_bool(data):
    import course_lib as cl

    def dtype_of(obj):
        if isinstance(obj, int):          # True is an int: bools come out as int64
            return cl.int64
        if isinstance(obj, bool):
            return cl.bool
        if isinstance(obj, float):
            return cl.get_default_dtype()
        if isinstance(obj, (list, tuple)):
            result = cl.get_default_dtype() if not obj else None
            for item in obj:
                d = dtype_of(item)
                result = d if result is None else cl.promote_types(result, d)
            return result
        raise RuntimeError(f"Could not infer dtype of {type(obj).__name__}")

    return _ch01_shape(data), dtype_of(data)


def infer_shape_and_dtype_first_leaf(data):
    # the dtype of the first number only: [[1, 2], [3, 4.5]] comes out int64
    import course_lib as cl
    leaf = data
    while isinstance(leaf, (list, tuple)) and leaf:
        leaf = leaf[0]
    if isinstance(leaf, (list, tuple)):
        return _ch01_shape(data), cl.get_default_dtype()
    if isinstance(leaf, bool):
        return _ch01_shape(data), cl.bool
    if isinstance(leaf, int):
        return _ch01_shape(data), cl.int64
    if isinstance(leaf, float):
        return _ch01_shape(data), cl.get_default_dtype()
    raise RuntimeError(f"Could not infer dtype of {type(leaf).__name__}")


def infer_shape_and_dtype_float32_always(data):
    # hard-codes float32 instead of the default dtype
    import course_lib as cl

    def dtype_of(obj):
        if isinstance(obj, bool):
            return cl.bool
        if isinstance(obj, int):
            return cl.int64
        if isinstance(obj, float):
            return cl.float32
        if isinstance(obj, (list, tuple)):
            result = cl.float32 if not obj else None
            for item in obj:
                d = dtype_of(item)
                result = d if result is None else cl.promote_types(result, d)
            return result
        raise RuntimeError(f"Could not infer dtype of {type(obj).__name__}")

    return _ch01_shape(data), dtype_of(data)


def infer_shape_and_dtype_empty_is_int(data):
    import course_lib as cl

    def dtype_of(obj):
        if isinstance(obj, bool):
            return cl.bool
        if isinstance(obj, int):
            return cl.int64
        if isinstance(obj, float):
            return cl.get_default_dtype()
        if isinstance(obj, (list, tuple)):
            result = cl.int64 if not obj else None
            for item in obj:
                d = dtype_of(item)
                result = d if result is None else cl.promote_types(result, d)
            return result
        raise RuntimeError(f"Could not infer dtype of {type(obj).__name__}")

    return _ch01_shape(data), dtype_of(data)


# ------------------------------------------------------------------ 01.4 recursive_store
def recursive_store_ignores_strides(buf, offset, sizes, strides, dim, dtype, obj):
    # contiguous only: moves by the number of elements below, whatever the strides say
    from course_lib._creation import _store_scalar
    if dim == len(sizes):
        buf[offset] = _store_scalar(obj, dtype)
        return
    if not isinstance(obj, (list, tuple)):
        raise TypeError("not a sequence")
    if len(obj) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(obj)})")
    step = 1
    for s in sizes[dim + 1:]:
        step *= s
    for item in obj:
        recursive_store_ignores_strides(buf, offset, sizes, strides, dim + 1, dtype, item)
        offset += step


def recursive_store_no_length_check(buf, offset, sizes, strides, dim, dtype, obj):
    from course_lib._creation import _store_scalar
    if dim == len(sizes):
        buf[offset] = _store_scalar(obj, dtype)
        return
    if not isinstance(obj, (list, tuple)):
        raise TypeError("not a sequence")
    for item in obj[:sizes[dim]]:
        recursive_store_no_length_check(buf, offset, sizes, strides, dim + 1, dtype, item)
        offset += strides[dim]


def recursive_store_raw_values(buf, offset, sizes, strides, dim, dtype, obj):
    # stores the Python value as it is: 0.1 is not rounded to float32, True stays True in int64
    if dim == len(sizes):
        if isinstance(obj, (list, tuple)):
            raise TypeError(f"'{type(obj).__name__}' object cannot be interpreted as an integer")
        buf[offset] = obj
        return
    if not isinstance(obj, (list, tuple)):
        raise TypeError("not a sequence")
    if len(obj) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(obj)})")
    for item in obj:
        recursive_store_raw_values(buf, offset, sizes, strides, dim + 1, dtype, item)
        offset += strides[dim]


def recursive_store_message_dim_plus_one(buf, offset, sizes, strides, dim, dtype, obj):
    # counts dimensions from 1 in the error message
    from course_lib._creation import _store_scalar
    if dim == len(sizes):
        buf[offset] = _store_scalar(obj, dtype)
        return
    if not isinstance(obj, (list, tuple)):
        raise TypeError("not a sequence")
    if len(obj) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim + 1} (got {len(obj)})")
    for item in obj:
        recursive_store_message_dim_plus_one(buf, offset, sizes, strides, dim + 1, dtype, item)
        offset += strides[dim]


# ------------------------------------------------------------------ 01.5 binding_source
def _ch01_schema(schema):
    from course_lib._ops.registry import parse_schema
    return parse_schema(schema)


def binding_source_no_star(schema):
    # keyword-only arguments become positional ones
    name, args, _ = _ch01_schema(schema)
    params = [a.name if a.default is None else f"{a.name}={'()' if a.default == '[]' else a.default}" for a in args]
    names = [a.name for a in args]
    packed = ", ".join(names) + ("," if len(names) == 1 else "")
    return f"def {name}({', '.join(params)}):\n    return _dispatch(_op, ({packed}))\n"


def binding_source_no_trailing_comma(schema):
    name, args, _ = _ch01_schema(schema)
    params, star = [], False
    for a in args:
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        params.append(a.name if a.default is None else f"{a.name}={'()' if a.default == '[]' else a.default}")
    packed = ", ".join(a.name for a in args)
    return f"def {name}({', '.join(params)}):\n    return _dispatch(_op, ({packed}))\n"


def binding_source_list_default(schema):
    # keeps [] as a (shared, mutable) list default
    name, args, _ = _ch01_schema(schema)
    params, star = [], False
    for a in args:
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        params.append(a.name if a.default is None else f"{a.name}={a.default}")
    names = [a.name for a in args]
    packed = ", ".join(names) + ("," if len(names) == 1 else "")
    return f"def {name}({', '.join(params)}):\n    return _dispatch(_op, ({packed}))\n"


def binding_source_no_return(schema):
    name, args, _ = _ch01_schema(schema)
    params, star = [], False
    for a in args:
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        params.append(a.name if a.default is None else f"{a.name}={'()' if a.default == '[]' else a.default}")
    names = [a.name for a in args]
    packed = ", ".join(names) + ("," if len(names) == 1 else "")
    return f"def {name}({', '.join(params)}):\n    _dispatch(_op, ({packed}))\n"


# ------------------------------------------------------------------ 01.6 result_type
def _ch01_scalar_dtype(x):
    import course_lib as cl
    return cl.bool if isinstance(x, bool) else cl.int64 if isinstance(x, int) else cl.get_default_dtype()


def result_type_zero_dim_is_dimensioned(a, b):
    # a 0-d tensor counts as a dimensioned one
    import course_lib as cl
    tensors = [x.dtype for x in (a, b) if isinstance(x, cl.Tensor)]
    scalars = [_ch01_scalar_dtype(x) for x in (a, b) if not isinstance(x, cl.Tensor)]
    cat = lambda d: 2 if d.is_floating_point else 0 if d is cl.bool else 1
    result = None
    for tier in (tensors, scalars):
        if not tier:
            continue
        d = tier[0]
        for e in tier[1:]:
            d = cl.promote_types(d, e)
        result = d if result is None else cl.promote_types(result, d) if cat(d) > cat(result) else result
    return result


def result_type_promote_everything(a, b):
    # plain promotion, no tiers: int32 tensor + 5 -> int64
    import course_lib as cl
    da = a.dtype if isinstance(a, cl.Tensor) else _ch01_scalar_dtype(a)
    db = b.dtype if isinstance(b, cl.Tensor) else _ch01_scalar_dtype(b)
    return cl.promote_types(da, db)


def result_type_python_float_is_float64(a, b):
    import course_lib as cl

    def dt(x):
        if isinstance(x, cl.Tensor):
            return x.dtype
        return cl.bool if isinstance(x, bool) else cl.int64 if isinstance(x, int) else cl.float64

    cat = lambda d: 2 if d.is_floating_point else 0 if d is cl.bool else 1
    tiers = [None, None, None]
    for x in (a, b):
        t = (0 if x.dim() > 0 else 1) if isinstance(x, cl.Tensor) else 2
        tiers[t] = dt(x) if tiers[t] is None else cl.promote_types(tiers[t], dt(x))
    result = None
    for d in tiers:
        if d is not None:
            result = d if result is None else cl.promote_types(result, d) if cat(d) > cat(result) else result
    return result


WRONG.update({
    "01.1": [contiguous_strides_no_max, contiguous_strides_column_major, contiguous_strides_list,
             contiguous_strides_off_by_one],
    "01.2": [storage_index_no_offset, storage_index_row_major, storage_index_no_negative,
             storage_index_wrapped_message],
    "01.3": [infer_shape_and_dtype_int_before_bool, infer_shape_and_dtype_first_leaf,
             infer_shape_and_dtype_float32_always, infer_shape_and_dtype_empty_is_int],
    "01.4": [recursive_store_ignores_strides, recursive_store_no_length_check, recursive_store_raw_values,
             recursive_store_message_dim_plus_one],
    "01.5": [binding_source_no_star, binding_source_no_trailing_comma, binding_source_list_default,
             binding_source_no_return],
    "01.6": [result_type_zero_dim_is_dimensioned, result_type_promote_everything,
             result_type_python_float_is_float64],
})


# ================================================================== chapter 02 (strides and views)
from course_lib._ops.common import wrap_dim as _wrap_dim_02  # noqa: E402

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
    a, b = _wrap_dim_02(dim0, nd), _wrap_dim_02(dim1, nd)
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
    dims = [_wrap_dim_02(d, nd) for d in dims]
    if len(set(dims)) != nd:
        raise RuntimeError("duplicate dims")
    new_shape, new_stride = [0] * nd, [0] * nd
    for i, d in enumerate(dims):
        new_shape[d], new_stride[d] = shape[i], stride[i]
    return tuple(new_shape), tuple(new_stride), offset


def permute_geometry_no_checks(shape, stride, offset, dims):
    return tuple(shape[d] for d in dims), tuple(stride[d] for d in dims), offset


# ------------------------------------------------------------------ 02.5 narrow_geometry
def _narrow_02(shape, stride, offset, dim, start, length, move):
    if len(shape) == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim_02(dim, len(shape))
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
    d = _wrap_dim_02(dim, len(shape))
    if not -shape[d] <= index < shape[d]:
        raise IndexError("index out of range")
    index %= shape[d]
    return shape[:d] + (1,) + shape[d + 1:], tuple(stride), offset + index * stride[d]


def select_geometry_no_stride(shape, stride, offset, dim, index):
    if len(shape) == 0:
        raise IndexError("0-d")
    d = _wrap_dim_02(dim, len(shape))
    if not -shape[d] <= index < shape[d]:
        raise IndexError("index out of range")
    index %= shape[d]
    return shape[:d] + shape[d + 1:], stride[:d] + stride[d + 1:], offset + index


def select_geometry_no_negative_index(shape, stride, offset, dim, index):
    if len(shape) == 0:
        raise IndexError("0-d")
    d = _wrap_dim_02(dim, len(shape))
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


WRONG.update({
    "02.1": [predict_copies_noncontiguous_reshape_copies, predict_copies_only_clone],
    "02.2": [is_contiguous_exact_strides, is_contiguous_no_empty_rule, is_contiguous_decreasing_strides],
    "02.3": [transpose_geometry_shape_only, transpose_geometry_no_wrap],
    "02.4": [permute_geometry_inverse, permute_geometry_no_checks],
    "02.5": [narrow_geometry_offset_unchanged, narrow_geometry_offset_by_start, narrow_geometry_empty_offset_zero],
    "02.6": [select_geometry_keeps_dim, select_geometry_no_stride, select_geometry_no_negative_index],
    "02.7": [compute_stride_contiguous_only, compute_stride_no_size1_skip],
    "02.8": [expand_geometry_keeps_strides, expand_geometry_new_dims_stride_0],
    "02.9": [broadcast_shapes_left_aligned, broadcast_shapes_swapped_message, broadcast_shapes_all_at_once],
    "02.10": [index_geometry_none_stride_1, index_geometry_negative_ints_unwrapped,
              index_geometry_negative_slices_unwrapped],
})


# ================================================================== chapter 06 (data loading)
import collections.abc as _abc_06  # noqa: E402

import numpy as _np_06  # noqa: E402


class BatchSamplerAlwaysDropsLast:
    # never yields the short last batch
    def __init__(self, sampler, batch_size, drop_last):
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []

    def __len__(self):
        return len(self.sampler) // self.batch_size


class BatchSamplerYieldsEmptyTail(BatchSamplerAlwaysDropsLast):
    # yields the leftover list even when it is empty
    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if not self.drop_last:
            yield batch

    def __len__(self):
        return len(self.sampler) // self.batch_size + (0 if self.drop_last else 1)


class BatchSamplerLenAlwaysFloor(BatchSamplerYieldsEmptyTail):
    # batches right, length rounded down even without drop_last
    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        return len(self.sampler) // self.batch_size


class BatchSamplerTuples(BatchSamplerLenAlwaysFloor):
    # tuples instead of lists
    def __iter__(self):
        for b in BatchSamplerLenAlwaysFloor.__iter__(self):
            yield tuple(b)

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _collate_06(batch, *, float_dtype="float64", seq=list, strings=None, namedtuples=True, strict=True):
    import course_lib as cl

    def rec(b):
        elem = b[0]
        if isinstance(elem, cl.Tensor):
            return cl.stack(list(b), 0)
        if isinstance(elem, _np_06.ndarray):
            return cl.stack([cl.as_tensor(x) for x in b], 0)
        if isinstance(elem, float):
            return cl.tensor(b, dtype=getattr(cl, float_dtype)) if float_dtype else cl.tensor(b)
        if isinstance(elem, int):
            return cl.tensor(b)
        if isinstance(elem, str):
            return strings(b) if strings else b
        if isinstance(elem, _abc_06.Mapping):
            return {k: rec([d[k] for d in b]) for k in elem}
        if namedtuples and isinstance(elem, tuple) and hasattr(elem, "_fields"):
            return type(elem)(*(rec(v) for v in zip(*b)))
        if isinstance(elem, _abc_06.Sequence):
            return seq(rec(v) for v in zip(*b))
        if strict:
            raise TypeError(type(elem))
        return b

    return rec(batch)


def collate_float32(batch):
    return _collate_06(batch, float_dtype=None)


def collate_tuples_stay_tuples(batch):
    return _collate_06(batch, seq=tuple)


def collate_strings_as_lists(batch):
    return _collate_06(batch, strings=list)


def collate_namedtuple_as_list(batch):
    return _collate_06(batch, namedtuples=False)


def collate_unknown_passes_through(batch):
    return _collate_06(batch, strict=False)


class SingleProcessIterAlwaysBatches:
    # ignores batch_size=None: always iterates batch_sampler
    def __init__(self, loader):
        self.dataset, self.collate_fn = loader.dataset, loader.collate_fn
        self.indices = iter(loader.batch_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        return self.collate_fn([self.dataset[i] for i in next(self.indices)])


class SingleProcessIterDefaultCollate(SingleProcessIterAlwaysBatches):
    # ignores the loader's collate_fn
    def __init__(self, loader):
        from course_lib.utils.data import default_collate, default_convert

        self.dataset = loader.dataset
        self.batching = loader.batch_sampler is not None
        self.collate_fn = default_collate if self.batching else default_convert
        self.indices = iter(loader.batch_sampler if self.batching else loader.sampler)

    def __next__(self):
        index = next(self.indices)
        if self.batching:
            return self.collate_fn([self.dataset[i] for i in index])
        return self.collate_fn(self.dataset[index])


class SingleProcessIterOwnBatches(SingleProcessIterDefaultCollate):
    # rebuilds the batches from sampler and batch_size, forgetting drop_last and batch_sampler
    def __init__(self, loader):
        self.dataset, self.collate_fn = loader.dataset, loader.collate_fn
        self.batching = loader.batch_size is not None
        if self.batching:
            idx = list(loader.sampler)
            bs = loader.batch_size
            self.indices = iter([idx[k:k + bs] for k in range(0, len(idx), bs)])
        else:
            self.indices = iter(loader.sampler)


def worker_loop_no_error_handling(dataset, index_queue, result_queue, collate_fn, worker_id):
    while True:
        task = index_queue.get()
        if task is None:
            return
        task_id, indices = task
        result_queue.put((task_id, collate_fn([dataset[i] for i in indices])))


def worker_loop_batches_only(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            return
        try:
            result_queue.put(collate_fn([dataset[i] for i in task[1]]))
        except Exception:
            result_queue.put(ExceptionWrapper(where=f"in DataLoader worker process {worker_id}"))


def worker_loop_stops_at_error(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            return
        task_id, indices = task
        try:
            result_queue.put((task_id, collate_fn([dataset[i] for i in indices])))
        except Exception:
            result_queue.put((task_id, ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")))
            return


def worker_loop_wrong_where(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            return
        task_id, indices = task
        try:
            batch = collate_fn([dataset[i] for i in indices])
        except Exception:
            batch = ExceptionWrapper(where="in DataLoader worker process")
        result_queue.put((task_id, batch))


def worker_loop_ignores_none(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            continue
        task_id, indices = task
        try:
            batch = collate_fn([dataset[i] for i in indices])
        except Exception:
            batch = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        result_queue.put((task_id, batch))


def in_order_reads_everything_first(arrivals):
    for _, batch in sorted(arrivals):
        yield batch


def in_order_one_per_arrival(arrivals):
    waiting, next_id = {}, 0
    for task_id, batch in arrivals:
        waiting[task_id] = batch
        if next_id in waiting:
            yield waiting.pop(next_id)
            next_id += 1


def in_order_yields_pairs(arrivals):
    waiting, next_id = {}, 0
    for task_id, batch in arrivals:
        waiting[task_id] = batch
        while next_id in waiting:
            yield next_id, waiting.pop(next_id)
            next_id += 1


def in_order_arrival_order(arrivals):
    for _, batch in arrivals:
        yield batch


WRONG.update({
    "06.1": [BatchSamplerAlwaysDropsLast, BatchSamplerYieldsEmptyTail, BatchSamplerLenAlwaysFloor,
             BatchSamplerTuples],
    "06.2": [collate_float32, collate_tuples_stay_tuples, collate_strings_as_lists, collate_namedtuple_as_list,
             collate_unknown_passes_through],
    "06.3": [SingleProcessIterAlwaysBatches, SingleProcessIterDefaultCollate, SingleProcessIterOwnBatches],
    "06.4": [worker_loop_no_error_handling, worker_loop_batches_only, worker_loop_stops_at_error,
             worker_loop_wrong_where, worker_loop_ignores_none],
    "06.5": [in_order_reads_everything_first, in_order_one_per_arrival, in_order_yields_pairs,
             in_order_arrival_order],
})


# ================================================================== chapter 03 (autograd)
# ------------------------------------------------------------------ 03.1 mul_backward
def mul_backward_swapped(grad, x, y):
    return grad * x, grad * y


def mul_backward_no_grad(grad, x, y):
    return y, x


# ------------------------------------------------------------------ 03.2 div_backward
def div_backward_wrong_sign(grad, x, y):
    return grad / y, grad * x / (y * y)


def div_backward_missing_x(grad, x, y):
    return grad / y, -grad / (y * y)


# ------------------------------------------------------------------ 03.3 log_backward
def log_backward_times_x(grad, x):
    return grad * x


def log_backward_ignores_grad(grad, x):
    return 1 / x


# ------------------------------------------------------------------ 03.4 unbroadcast
def unbroadcast_leading_only(grad, shape):
    lead = grad.dim() - len(shape)
    return grad.sum(tuple(range(lead))) if lead > 0 else grad


def unbroadcast_drops_ones(grad, shape):
    lead = grad.dim() - len(shape)
    if lead > 0:
        grad = grad.sum(tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
    return grad.sum(dims) if dims else grad


def unbroadcast_mean(grad, shape):
    lead = grad.dim() - len(shape)
    if lead > 0:
        grad = grad.mean(tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
    return grad.mean(dims, keepdim=True) if dims else grad


# ------------------------------------------------------------------ 03.5 sum_backward
def sum_backward_no_unsqueeze(grad, input_shape, dim, keepdim):
    return grad.expand(tuple(input_shape))


def sum_backward_unsorted_dims(grad, input_shape, dim, keepdim):
    n = len(input_shape)
    dims = tuple(range(n)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if not keepdim:
        for d in dims:  # not sorted: dim=(2, 0) unsqueezes at 2 first, past the end
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(input_shape))


def sum_backward_divides(grad, input_shape, dim, keepdim):
    n = len(input_shape)
    dims = tuple(range(n)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    dims = tuple(sorted(d % n for d in dims))
    count = 1
    for d in dims:
        count *= input_shape[d]
    if not keepdim:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(input_shape)) / count  # that is mean's backward


# ------------------------------------------------------------------ 03.6 matmul_backward
def matmul_backward_no_transpose(grad, a, b):
    return grad @ b, a @ grad


def matmul_backward_swapped(grad, a, b):
    return a.t() @ grad, grad @ b.t()


# ------------------------------------------------------------------ 03.7 topological_sort
def topological_sort_dfs_preorder(root):
    order, stack, seen = [], [root], {root}
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return order


def topological_sort_bfs(root):
    order, queue, seen = [], [root], {root}
    while queue:
        node = queue.pop(0)
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order


def topological_sort_recursive(root):
    order, seen = [], set()

    def visit(node):
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                visit(nxt)
        order.append(node)
    visit(root)
    return order[::-1]  # right order, but a 3000-deep chain overflows the stack


def topological_sort_duplicates(root):
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return order


# ------------------------------------------------------------------ 03.8 run_backward
def run_backward_dfs_pushes_total(root):
    # propagates node.grad (everything accumulated so far) at every visit: counts paths twice
    root.grad += 1.0
    stack = [root]
    while stack:
        node = stack.pop()
        for p, local in zip(node.parents, node.local_grads):
            p.grad += local * node.grad
            stack.append(p)


def run_backward_visit_once(root):
    # each node passes its gradient on the first time it is reached, before all users added theirs
    root.grad += 1.0
    stack, seen = [root], {id(root)}
    while stack:
        node = stack.pop()
        for p, local in zip(node.parents, node.local_grads):
            p.grad += local * node.grad
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)


def run_backward_resets(root):
    users = {}
    stack, seen = [root], {id(root)}
    while stack:
        node = stack.pop()
        for p in node.parents:
            users[id(p)] = users.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    pending = {id(root): 1.0}
    ready = [root]
    while ready:
        node = ready.pop()
        node.grad = pending.pop(id(node), 0.0)  # overwrites: no accumulation across calls
        for p, local in zip(node.parents, node.local_grads):
            pending[id(p)] = pending.get(id(p), 0.0) + local * node.grad
            users[id(p)] -= 1
            if users[id(p)] == 0:
                ready.append(p)


# ------------------------------------------------------------------ 03.9 numerical_jacobian
def _nj(fn, x, eps, transpose=False, denom=2.0, restore=True):
    import numpy as np
    import course_lib as cl
    xc = x.detach().clone()
    flat = xc.view(-1)
    cols = []
    with cl.no_grad():
        for j in range(xc.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = fn(xc).detach().numpy().reshape(-1).copy()
            flat[j] = orig - eps
            minus = fn(xc).detach().numpy().reshape(-1).copy()
            if restore:
                flat[j] = orig
            cols.append((plus - minus) / (denom * eps))
    j = np.stack(cols, axis=1)
    return j.T if transpose else j


def numerical_jacobian_transposed(fn, x, eps=1e-6):
    return _nj(fn, x, eps, transpose=True)


def numerical_jacobian_divides_by_eps(fn, x, eps=1e-6):
    return _nj(fn, x, eps, denom=1.0)


def numerical_jacobian_no_restore(fn, x, eps=1e-6):
    return _nj(fn, x, 1e-3, restore=False)


# ------------------------------------------------------------------ 03.10 Softplus
def _softplus_classes():
    from course_lib.autograd import Function

    class SoftplusWrongBackward(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.exp() + 1).log()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (-x).sigmoid()

    class SoftplusNoSave(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return (x.exp() + 1).log()

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.x.sigmoid()

    class SoftplusWrongForward(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp().log1p() if False else x.relu()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.sigmoid()

    class SoftplusNotAFunction:
        @staticmethod
        def apply(x):
            return (x.exp() + 1).log()

    return [SoftplusWrongBackward, SoftplusNoSave, SoftplusWrongForward, SoftplusNotAFunction]


WRONG.update({
    "03.1": [mul_backward_swapped, mul_backward_no_grad],
    "03.2": [div_backward_wrong_sign, div_backward_missing_x],
    "03.3": [log_backward_times_x, log_backward_ignores_grad],
    "03.4": [unbroadcast_leading_only, unbroadcast_drops_ones, unbroadcast_mean],
    "03.5": [sum_backward_no_unsqueeze, sum_backward_unsorted_dims, sum_backward_divides],
    "03.6": [matmul_backward_no_transpose, matmul_backward_swapped],
    "03.7": [topological_sort_dfs_preorder, topological_sort_bfs, topological_sort_recursive,
             topological_sort_duplicates],
    "03.8": [run_backward_dfs_pushes_total, run_backward_visit_once, run_backward_resets],
    "03.9": [numerical_jacobian_transposed, numerical_jacobian_divides_by_eps, numerical_jacobian_no_restore],
    "03.10": _softplus_classes(),
})


# ================================================================== chapter 07 (serialization)
import io as _io07
import pickle as _pickle07
import zipfile as _zipfile07
from collections import OrderedDict as _OrderedDict07

_STORAGE_NAMES07 = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
                    "uint8": "ByteStorage", "bool": "BoolStorage"}


def _cl07():
    import course_lib

    return course_lib


def _dtype_of07(name):
    cl = _cl07()
    return {v: getattr(cl, k) for k, v in _STORAGE_NAMES07.items()}[name]


# ------------------------------------------------------------------ 07.1 make_payload
def make_payload_calls_now(fn, *args):
    # runs fn while making the "payload": the pickle then holds only its result
    return fn(*args)


def make_payload_drops_args(fn, *args):
    class Payload:
        def __reduce__(self):
            return (fn, ())

    return Payload()


def make_payload_list_args(fn, *args):
    class Payload:
        def __reduce__(self):
            return (fn, list(args))  # pickle wants a tuple

    return Payload()


# ------------------------------------------------------------------ 07.2 tensor_persistent_id
def persistent_id_new_key_every_time(obj, storages):
    if not isinstance(obj, _cl07().Storage):
        return None
    key = str(len(storages))
    storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.size())


def persistent_id_nbytes(obj, storages):
    if not isinstance(obj, _cl07().Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.nbytes())


def persistent_id_dtype_name(obj, storages):
    if not isinstance(obj, _cl07().Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", obj.dtype.name, key, str(obj.device), obj.size())


def persistent_id_by_equal_bytes(obj, storages):
    # "the same storage" by comparing contents: two equal storages get one key
    import numpy as np
    if not isinstance(obj, _cl07().Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj or (
        s.dtype is obj.dtype and s.data is not None and obj.data is not None and s.size() == obj.size()
        and np.array_equal(s.data, obj.data))), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.size())


def persistent_id_tensors_too(obj, storages):
    cl = _cl07()
    if isinstance(obj, cl.Tensor):
        obj = obj._storage
    if not isinstance(obj, cl.Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.size())


# ------------------------------------------------------------------ 07.3 rebuild_tensor
def _checked07(storage, offset, size, stride, strict=True):
    size, stride = tuple(size), tuple(stride)
    if offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride) or len(size) != len(stride):
        raise RuntimeError("bad geometry")
    if all(n > 0 for n in size):
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if (last >= len(storage)) if strict else (last > len(storage)):
            raise RuntimeError("out of bounds")
    return size, stride


def rebuild_tensor_copies(storage, storage_offset, size, stride):
    cl = _cl07()
    size, stride = _checked07(storage, storage_offset, size, stride)
    copy = cl.Storage(storage.data.copy(), storage.dtype)
    return cl.Tensor._make(copy, storage_offset, size, stride, storage.dtype)


def rebuild_tensor_no_checks(storage, storage_offset, size, stride):
    return _cl07().Tensor._make(storage, storage_offset, tuple(size), tuple(stride), storage.dtype)


def rebuild_tensor_off_by_one(storage, storage_offset, size, stride):
    size, stride = _checked07(storage, storage_offset, size, stride, strict=False)
    return _cl07().Tensor._make(storage, storage_offset, size, stride, storage.dtype)


def rebuild_tensor_contiguous(storage, storage_offset, size, stride):
    size, _ = _checked07(storage, storage_offset, size, stride)
    contiguous, step = [], 1
    for n in reversed(size):
        contiguous.insert(0, step)
        step *= max(n, 1)
    return _cl07().Tensor._make(storage, storage_offset, size, tuple(contiguous), storage.dtype)


# ------------------------------------------------------------------ 07.4 tensor_persistent_load
def _pload07(pid, read_record, cache, *, use_cache=True, copy=True, check=True, dtype=None):
    import numpy as np
    typename, name, key, location, numel = pid
    if typename != "storage":
        raise _pickle07.UnpicklingError("not a storage")
    if use_cache and key in cache:
        return cache[key]
    dtype = dtype or _dtype_of07(name)
    data = read_record(f"data/{key}")
    if check and len(data) != numel * dtype.itemsize:
        raise RuntimeError("size mismatch")
    arr = np.frombuffer(data, dtype.np)
    storage = _cl07().Storage(arr.copy() if copy else arr, dtype)
    cache[key] = storage
    return storage


def persistent_load_no_cache(pid, read_record, cache):
    return _pload07(pid, read_record, cache, use_cache=False)


def persistent_load_read_only(pid, read_record, cache):
    return _pload07(pid, read_record, cache, copy=False)


def persistent_load_no_size_check(pid, read_record, cache):
    return _pload07(pid, read_record, cache, check=False)


def persistent_load_always_float32(pid, read_record, cache):
    return _pload07(pid, read_record, cache, dtype=_cl07().float32)


# ------------------------------------------------------------------ 07.5 write_archive
def _write07(f, prefix, data_pkl, storages, *, compression=_zipfile07.ZIP_STORED, version=True,
             version_first=False, use_prefix=True):
    name = (lambda n: f"{prefix}/{n}") if use_prefix else (lambda n: n)
    with _zipfile07.ZipFile(f, "w", compression=compression) as z:
        if version_first and version:
            z.writestr(name("version"), b"3\n")
        z.writestr(name("data.pkl"), data_pkl)
        z.writestr(name("byteorder"), b"little")
        for key, storage in storages.items():
            z.writestr(name(f"data/{key}"), storage.data.tobytes())
        if version and not version_first:
            z.writestr(name("version"), b"3\n")


def write_archive_deflated(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, compression=_zipfile07.ZIP_DEFLATED)


def write_archive_no_version(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, version=False)


def write_archive_version_first(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, version_first=True)


def write_archive_no_prefix(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, use_prefix=False)


# ------------------------------------------------------------------ 07.6 RestrictedUnpickler
class _Restricted07(_pickle07.Unpickler):
    def __init__(self, file, allowed):
        super().__init__(file)
        self.allowed = allowed


class UnpicklerAllowlistFirst(_Restricted07):
    # an allowlisted name wins over the blocklist: posix.system gets through
    def find_class(self, module, name):
        full = f"{module}.{name}"
        if full in self.allowed:
            return self.allowed[full]
        if module in {"os", "posix", "nt", "sys"}:
            raise _pickle07.UnpicklingError(f"blocked {full}")
        raise _pickle07.UnpicklingError(f"refusing {full}")


class UnpicklerStartswithOs(_Restricted07):
    def find_class(self, module, name):
        full = f"{module}.{name}"
        if module.startswith(("os", "posix", "nt", "sys")):
            raise _pickle07.UnpicklingError(f"blocked {full}")
        if full not in self.allowed:
            raise _pickle07.UnpicklingError(f"refusing {full}")
        return self.allowed[full]


class UnpicklerFallsBackToImport(_Restricted07):
    def find_class(self, module, name):
        full = f"{module}.{name}"
        if module in {"os", "posix", "nt", "sys"}:
            raise _pickle07.UnpicklingError(f"blocked {full}")
        if full in self.allowed:
            return self.allowed[full]
        return super().find_class(module, name)


class UnpicklerKeyError(_Restricted07):
    def find_class(self, module, name):
        if module in {"os", "posix", "nt", "sys"}:
            raise _pickle07.UnpicklingError(f"blocked {module}.{name}")
        return self.allowed[f"{module}.{name}"]  # KeyError, not UnpicklingError


# ------------------------------------------------------------------ 07.7 my_load
def _my_load07(f, *, shared_cache=True, restricted=True):
    from course_lib import serialization as S

    class Unpickler(_pickle07.Unpickler):
        def find_class(self, module, name):
            full = f"{module}.{name}"
            if full == "collections.OrderedDict":
                return _OrderedDict07
            if full == "torch._utils._rebuild_tensor_v2":
                return lambda storage, offset, size, stride, *rest: S._rebuild_tensor(storage, offset, size, stride)
            if module == "torch" and name in _STORAGE_NAMES07.values():
                return name
            if restricted:
                raise _pickle07.UnpicklingError(f"refusing {full}")
            return super().find_class(module, name)

    with _zipfile07.ZipFile(f) as z:
        folder = z.namelist()[0].split("/")[0]
        cache = {}
        u = Unpickler(_io07.BytesIO(z.read(f"{folder}/data.pkl")))
        u.persistent_load = lambda pid: _pload07(pid, lambda n: z.read(f"{folder}/{n}"),
                                                 cache if shared_cache else {})
        return u.load()


def my_load_cache_per_call(f):
    return _my_load07(f, shared_cache=False)


def my_load_unrestricted(f):
    return _my_load07(f, restricted=False)


WRONG.update({
    "07.1": [make_payload_calls_now, make_payload_drops_args, make_payload_list_args],
    "07.2": [persistent_id_new_key_every_time, persistent_id_nbytes, persistent_id_dtype_name,
             persistent_id_by_equal_bytes, persistent_id_tensors_too],
    "07.3": [rebuild_tensor_copies, rebuild_tensor_no_checks, rebuild_tensor_off_by_one, rebuild_tensor_contiguous],
    "07.4": [persistent_load_no_cache, persistent_load_read_only, persistent_load_no_size_check,
             persistent_load_always_float32],
    "07.5": [write_archive_deflated, write_archive_no_version, write_archive_version_first, write_archive_no_prefix],
    "07.6": [UnpicklerAllowlistFirst, UnpicklerStartswithOs, UnpicklerFallsBackToImport, UnpicklerKeyError],
    "07.7": [my_load_cache_per_call, my_load_unrestricted],
})


# ================================================================== chapter 04 (modules)

# ------------------------------------------------------------------ 04.1 MiniModule.__setattr__
def _mini_module_class(setattr_impl):
    """A MiniModule (as given in the notebook) with a wrong __setattr__."""
    class MiniModule:
        def __init__(self):
            object.__setattr__(self, "_parameters", {})
            object.__setattr__(self, "_buffers", {})
            object.__setattr__(self, "_modules", {})

        def register_buffer(self, name, tensor):
            self._buffers[name] = tensor

        def __getattr__(self, name):
            for store in ("_parameters", "_buffers", "_modules"):
                d = self.__dict__.get(store, {})
                if name in d:
                    return d[name]
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

        def __setattr__(self, name, value):
            setattr_impl(self, name, value, MiniModule)
    return MiniModule


def _setattr_no_registration(self, name, value, cls):
    object.__setattr__(self, name, value)   # everything becomes a plain attribute


def _setattr_no_removal(self, name, value, cls):
    # registers, but never deletes the old entry: `self.w = 1; self.w = Parameter(...)` leaves w shadowed
    from course_lib import nn
    if isinstance(value, nn.Parameter):
        self.__dict__["_parameters"][name] = value
    elif isinstance(value, cls):
        self.__dict__["_modules"][name] = value
    elif name in self.__dict__.get("_buffers", {}):
        self.__dict__["_buffers"][name] = value
    else:
        object.__setattr__(self, name, value)


def _setattr_no_type_errors(self, name, value, cls):
    # routes correctly but silently accepts anything for an existing slot
    from course_lib import nn
    params = self.__dict__.get("_parameters")
    if isinstance(value, nn.Parameter):
        if params is None:
            raise AttributeError("cannot assign parameters before Module.__init__() call")
        for d in (self.__dict__, self._buffers, self._modules):
            d.pop(name, None)
        params[name] = value
    elif params is not None and name in params:
        params[name] = value
    elif isinstance(value, cls):
        for d in (self.__dict__, self._parameters, self._buffers):
            d.pop(name, None)
        self._modules[name] = value
    elif name in self.__dict__.get("_modules", {}):
        self._modules[name] = value
    elif name in self.__dict__.get("_buffers", {}):
        self._buffers[name] = value
    else:
        object.__setattr__(self, name, value)


def _setattr_short_messages(self, name, value, cls):
    # right routing and error types, but messages of its own
    from course_lib import nn
    import course_lib as cl
    params = self.__dict__.get("_parameters")
    if isinstance(value, nn.Parameter):
        if params is None:
            raise AttributeError("call __init__ first")
        for d in (self.__dict__, self._buffers, self._modules):
            d.pop(name, None)
        params[name] = value
    elif params is not None and name in params:
        if value is not None:
            raise TypeError(f"{name} must be a Parameter")
        params[name] = None
    elif isinstance(value, cls):
        for d in (self.__dict__, self._parameters, self._buffers):
            d.pop(name, None)
        self._modules[name] = value
    elif name in self.__dict__.get("_modules", {}):
        if value is not None:
            raise TypeError(f"{name} must be a module")
        self._modules[name] = None
    elif name in self.__dict__.get("_buffers", {}):
        if value is not None and not isinstance(value, cl.Tensor):
            raise TypeError(f"{name} must be a tensor")
        self._buffers[name] = value
    else:
        object.__setattr__(self, name, value)


# ------------------------------------------------------------------ 04.2 named_parameters
def named_parameters_no_dedup(module, prefix=""):
    out = []
    for key, p in module._parameters.items():
        if p is not None:
            out.append((prefix + "." + key if prefix else key, p))
    for name, child in module._modules.items():
        if child is not None:
            out += named_parameters_no_dedup(child, prefix + "." + name if prefix else name)
    return out


def named_parameters_children_first(module, prefix=""):
    out, seen = [], set()

    def walk(mod, pre):
        for name, child in mod._modules.items():
            if child is not None:
                walk(child, pre + "." + name if pre else name)
        for key, p in mod._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((pre + "." + key if pre else key, p))
    walk(module, prefix)
    return out


def named_parameters_leading_dot(module, prefix=""):
    out, seen = [], set()

    def walk(mod, pre):
        for key, p in mod._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((pre + "." + key, p))
        for name, child in mod._modules.items():
            if child is not None:
                walk(child, pre + "." + name)
    walk(module, prefix)
    return [(n[1:] if n.startswith(".") else n, p) for n, p in out] if prefix else [(n, p) for n, p in out]


# ------------------------------------------------------------------ 04.3 load_state_dict
def _load_sd(module, state_dict, strict=True, *, check_first=True, strict_sizes=True, order="mu", copy=True):
    import course_lib as cl
    own = module.state_dict(keep_vars=True)
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    messages = []
    parts = {"m": (missing, "Missing"), "u": (unexpected, "Unexpected")}
    for c in order:
        keys, word = parts[c]
        if strict and keys:
            messages.append("{} key(s) in state_dict: {}. ".format(word, ", ".join(f'"{k}"' for k in keys)))
    sizes = []
    for key, old in own.items():
        if key in state_dict and tuple(state_dict[key].shape) != tuple(old.shape):
            new = state_dict[key]
            sizes.append(f"size mismatch for {key}: copying a param with shape torch.Size({list(new.shape)}) "
                         f"from checkpoint, the shape in current model is torch.Size({list(old.shape)}).")
    if strict or strict_sizes:
        messages += sizes
    if not check_first:
        with cl.no_grad():
            for key, old in own.items():
                if key in state_dict and tuple(state_dict[key].shape) == tuple(old.shape):
                    old.copy_(state_dict[key])
    if messages:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(messages))
    with cl.no_grad():
        for key, old in own.items():
            if key in state_dict:
                if copy:
                    old.copy_(state_dict[key])
                else:
                    name = key.rpartition(".")[0]
                    mod = module.get_submodule(name)
                    leaf = key.rpartition(".")[2]
                    if leaf in mod._parameters:
                        mod._parameters[leaf] = cl.nn.Parameter(state_dict[key].clone())
                    else:
                        mod._buffers[leaf] = state_dict[key].clone()
    return missing, unexpected


def load_state_dict_copies_before_checking(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, check_first=False)


def load_state_dict_sizes_only_when_strict(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, strict_sizes=False)


def load_state_dict_unexpected_first(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, order="um")


def load_state_dict_replaces_parameters(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, copy=False)


# ------------------------------------------------------------------ 04.4 record_activations
def _record(model, x, types, *, remove=True, name_of=None, correction=1, per_module=False, clear_all=False):
    import course_lib as cl
    records, handles = [], []
    for name, module in model.named_modules():
        if isinstance(module, types):
            label = name_of(name, module) if name_of else name

            def hook(mod, args, out, label=label):
                o = out.detach()
                std = o.std(correction=correction).item() if correction != 1 else o.std().item()
                rec = (label, o.mean().item(), std, (o == 0).float().mean().item())
                if per_module:
                    for i, r in enumerate(records):
                        if r[0] == label:
                            records[i] = rec
                            return
                records.append(rec)
            handles.append(module.register_forward_hook(hook))
    with cl.no_grad():
        model(x)
    if remove:
        for h in handles:
            h.remove()
    if clear_all:
        for m in model.modules():
            m._forward_hooks.clear()
    return records


def record_activations_keeps_hooks(model, x, types):
    return _record(model, x, types, remove=False)


def record_activations_type_names(model, x, types):
    return _record(model, x, types, name_of=lambda name, m: type(m).__name__)


def record_activations_population_std(model, x, types):
    return _record(model, x, types, correction=0)


def record_activations_one_per_module(model, x, types):
    return _record(model, x, types, per_module=True)


def record_activations_clears_every_hook(model, x, types):
    return _record(model, x, types, remove=False, clear_all=True)


# ------------------------------------------------------------------ 04.5 MyLinear
def _my_linear_class(*, transposed=False, bias_attr=False, init="uniform", add_bias=True):
    import math

    import course_lib as cl
    from course_lib import nn

    class MyLinear(nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.in_features, self.out_features = in_features, out_features
            shape = (in_features, out_features) if transposed else (out_features, in_features)
            self.weight = nn.Parameter(cl.empty(*shape))
            bound = 1 / math.sqrt(in_features)
            if init == "uniform":
                nn.init.uniform_(self.weight, -bound, bound)
            else:
                nn.init.normal_(self.weight, 0.0, 1.0)
            if bias:
                self.bias = nn.Parameter(cl.empty(out_features))
                nn.init.uniform_(self.bias, -bound, bound)
            elif bias_attr:
                self.bias = None
            else:
                self.register_parameter("bias", None)

        def forward(self, x):
            out = x @ self.weight if transposed else x @ self.weight.t()
            if add_bias and self.bias is not None:
                out = out + self.bias
            return out
    return MyLinear


# ------------------------------------------------------------------ 04.6 conv2d_im2col
def _conv_np(x, weight, bias=None, stride=1, padding=0, *, flip=False, pad_one_side=False, no_bias=False,
             kernel_major=False):
    import numpy as np
    O, C, kh, kw = weight.shape
    if flip:
        weight = weight[:, :, ::-1, ::-1]
    if padding:
        pads = ((0, 0), (0, 0), (padding, 0), (padding, 0)) if pad_one_side else \
            ((0, 0), (0, 0), (padding, padding), (padding, padding))
        xp = np.pad(x, pads)
    else:
        xp = x
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    N, _, Ho, Wo = win.shape[:4]
    if kernel_major:
        cols = win.transpose(0, 2, 3, 4, 5, 1).reshape(N, Ho, Wo, -1)   # (kh, kw, C) order: wrong for C > 1
    else:
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(N, Ho, Wo, -1)
    out = cols @ weight.reshape(O, -1).T
    if bias is not None and not no_bias:
        out = out + bias
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def conv2d_im2col_flipped_kernel(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, flip=True)


def conv2d_im2col_pads_one_side(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, pad_one_side=True)


def conv2d_im2col_no_bias(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, no_bias=True)


def conv2d_im2col_kernel_major_columns(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, kernel_major=True)


def conv2d_im2col_float64(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x.astype("float64"), weight.astype("float64"), None if bias is None else bias.astype("float64"),
                    stride, padding)


# ------------------------------------------------------------------ 04.7 make_layer
def _make_layer(block, inplanes, planes, blocks, stride=1, *, stride_only=False, stride_everywhere=False,
                forget_expansion=False, no_bn=False):
    from course_lib import nn
    from course_lib.models.resnet import conv1x1
    width = planes * block.expansion
    downsample = None
    need = stride != 1 if stride_only else (stride != 1 or inplanes != width)
    if need:
        parts = [conv1x1(inplanes, width, stride)] + ([] if no_bn else [nn.BatchNorm2d(width)])
        downsample = nn.Sequential(*parts)
    layers = [block(inplanes, planes, stride, downsample)]
    nxt = planes if forget_expansion else width
    for _ in range(1, blocks):
        if stride_everywhere and stride != 1:
            layers.append(block(nxt, planes, stride, nn.Sequential(conv1x1(nxt, width, stride), nn.BatchNorm2d(width))))
        else:
            layers.append(block(nxt, planes))
    return nn.Sequential(*layers), nxt


def make_layer_downsample_only_for_stride(block, inplanes, planes, blocks, stride=1):
    return _make_layer(block, inplanes, planes, blocks, stride, stride_only=True)


def make_layer_stride_in_every_block(block, inplanes, planes, blocks, stride=1):
    return _make_layer(block, inplanes, planes, blocks, stride, stride_everywhere=True)


def make_layer_downsample_without_bn(block, inplanes, planes, blocks, stride=1):
    return _make_layer(block, inplanes, planes, blocks, stride, no_bn=True)


def make_layer_forgets_expansion(block, inplanes, planes, blocks, stride=1):
    layer, _ = _make_layer(block, inplanes, planes, blocks, stride)
    return layer, planes


# ------------------------------------------------------------------ 04.8 sgd_step
def _sgd(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *, damp_first=False,
         decay_after=False, nesterov_plain=False, share_grad=False):
    import course_lib as cl
    with cl.no_grad():
        for p in params:
            if p.grad is None:
                continue
            g = p.grad
            if weight_decay != 0 and not decay_after:
                g = g + weight_decay * p
            if momentum != 0:
                s = state.setdefault(p, {})
                buf = s.get("momentum_buffer")
                if buf is None:
                    first = g if share_grad else g.clone()
                    buf = s["momentum_buffer"] = first * (1 - dampening) if damp_first else first
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g + momentum * buf if (nesterov and not nesterov_plain) else buf
            if weight_decay != 0 and decay_after:
                g = g + weight_decay * p
            p.add_(g, alpha=-lr)


def sgd_step_dampens_first_step(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, momentum, dampening, weight_decay, nesterov, damp_first=True)


def sgd_step_decay_after_momentum(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, momentum, dampening, weight_decay, nesterov, decay_after=True)


def sgd_step_ignores_nesterov(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, momentum, dampening, weight_decay, nesterov, nesterov_plain=True)


def sgd_step_no_momentum(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, 0.0, dampening, weight_decay, False)


WRONG.update({
    "04.1": [_mini_module_class(_setattr_no_registration), _mini_module_class(_setattr_no_removal),
             _mini_module_class(_setattr_no_type_errors), _mini_module_class(_setattr_short_messages)],
    "04.2": [named_parameters_no_dedup, named_parameters_children_first, named_parameters_leading_dot],
    "04.3": [load_state_dict_copies_before_checking, load_state_dict_sizes_only_when_strict,
             load_state_dict_unexpected_first, load_state_dict_replaces_parameters],
    "04.4": [record_activations_keeps_hooks, record_activations_type_names, record_activations_population_std,
             record_activations_one_per_module, record_activations_clears_every_hook],
    "04.5": [_my_linear_class(transposed=True), _my_linear_class(bias_attr=True), _my_linear_class(init="normal"),
             _my_linear_class(add_bias=False)],
    "04.6": [conv2d_im2col_flipped_kernel, conv2d_im2col_pads_one_side, conv2d_im2col_no_bias,
             conv2d_im2col_kernel_major_columns, conv2d_im2col_float64],
    "04.7": [make_layer_downsample_only_for_stride, make_layer_stride_in_every_block, make_layer_downsample_without_bn,
             make_layer_forgets_expansion],
    "04.8": [sgd_step_dampens_first_step, sgd_step_decay_after_momentum, sgd_step_ignores_nesterov,
             sgd_step_no_momentum],
})


# ================================================================== chapter 05 (normalization)
import numpy as _np05  # noqa: E402


def _axes_05(x):
    return (0,) + tuple(range(2, x.ndim))


def _shape_05(x):
    return (1, -1) + (1,) * (x.ndim - 2)


# ------------------------------------------------------------------ 05.1 moments
def moments_unbiased(x, axes):
    return x.mean(axis=axes, keepdims=True), x.var(axis=axes, ddof=1, keepdims=True)


def moments_no_keepdims(x, axes):
    return x.mean(axis=axes), x.var(axis=axes)


def moments_other_axes(x, axes):
    """Reduces over the axes NOT given (confusing 'normalise over' with 'keep')."""
    axes = tuple(a % x.ndim for a in axes)
    rest = tuple(a for a in range(x.ndim) if a not in axes) or axes
    return x.mean(axis=rest, keepdims=True), x.var(axis=rest, keepdims=True)


def moments_uncentred(x, axes):
    """E[x^2] instead of E[(x - mean)^2]."""
    return x.mean(axis=axes, keepdims=True), (x * x).mean(axis=axes, keepdims=True)


# ------------------------------------------------------------------ 05.2 batch_norm_forward
def _bn_05(x, running_mean, running_var, momentum, eps, training, *, norm_ddof=0, update=True, running_ddof=1,
           swap_momentum=False, eval_batch_stats=False, axes=None, check_n=True):
    axes = _axes_05(x) if axes is None else axes
    shape = _shape_05(x)
    n = x.size // x.shape[1]
    if training or eval_batch_stats:
        if training and check_n and n == 1:
            raise ValueError("Expected more than 1 value per channel when training")
        mean, var = x.mean(axis=axes), x.var(axis=axes, ddof=norm_ddof)
        running = x.var(axis=axes, ddof=running_ddof) if n > running_ddof else x.var(axis=axes) * _np05.inf
        a, b = (momentum, 1 - momentum) if swap_momentum else (1 - momentum, momentum)
        if training and update:
            new_mean, new_var = a * running_mean + b * mean, a * running_var + b * running
        else:
            new_mean, new_var = running_mean.copy(), running_var.copy()
    else:
        mean, var = running_mean, running_var
        new_mean, new_var = running_mean.copy(), running_var.copy()
    y = (x - mean.reshape(shape)) / _np05.sqrt(var.reshape(shape) + eps)
    return y, new_mean, new_var


def batch_norm_forward_unbiased_normalisation(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, norm_ddof=1)


def batch_norm_forward_no_running_update(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, update=False)


def batch_norm_forward_biased_running_var(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, running_ddof=0)


def batch_norm_forward_momentum_swapped(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, swap_momentum=True)


def batch_norm_forward_eval_uses_batch(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    return _bn_05(x, running_mean, running_var, momentum, eps, training, eval_batch_stats=True)


def batch_norm_forward_batch_axis_only(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    """Statistics over dim 0 only (per channel and position): right for (N, C), wrong with spatial dims."""
    if not training:
        return _bn_05(x, running_mean, running_var, momentum, eps, training)
    if x.shape[0] == 1:
        raise ValueError("Expected more than 1 value per channel when training")
    C = x.shape[1]
    mean, var = x.mean(axis=0), x.var(axis=0)
    y = (x - mean) / _np05.sqrt(var + eps)
    batch_mean = mean.reshape(C, -1).mean(axis=1)
    batch_var = x.var(axis=0, ddof=1).reshape(C, -1).mean(axis=1)
    return (y, (1 - momentum) * running_mean + momentum * batch_mean,
            (1 - momentum) * running_var + momentum * batch_var)


def batch_norm_forward_no_size_check(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _bn_05(x, running_mean, running_var, momentum, eps, training, check_n=False)


# ------------------------------------------------------------------ 05.3 batch_norm_backward
def _bn_backward_05(x, dy, gamma, eps, *, centre=True, project=True, use_gamma=True, swap=False, ddof=0,
                    invstd_factor=True):
    axes = _axes_05(x)
    shape = _shape_05(x)
    mean = x.mean(axis=axes, keepdims=True)
    invstd = 1 / _np05.sqrt(x.var(axis=axes, ddof=ddof, keepdims=True) + eps)
    xhat = (x - mean) * invstd
    dxhat = dy * gamma.reshape(shape) if use_gamma else dy
    dx = dxhat.copy()
    if centre:
        dx = dx - dxhat.mean(axis=axes, keepdims=True)
    if project:
        dx = dx - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True)
    if invstd_factor:
        dx = dx * invstd
    dgamma, dbeta = (dy * xhat).sum(axis=axes), dy.sum(axis=axes)
    return (dx, dbeta, dgamma) if swap else (dx, dgamma, dbeta)


def batch_norm_backward_no_mean_term(x, dy, gamma, eps=1e-5):
    """Forgets that the mean depends on x: no - mean(dxhat)."""
    return _bn_backward_05(x, dy, gamma, eps, centre=False)


def batch_norm_backward_no_variance_term(x, dy, gamma, eps=1e-5):
    """Forgets that the variance depends on x: no - xhat * mean(dxhat * xhat)."""
    return _bn_backward_05(x, dy, gamma, eps, project=False)


def batch_norm_backward_treats_stats_as_constants(x, dy, gamma, eps=1e-5):
    """dx = dy * gamma * invstd, as in eval mode."""
    return _bn_backward_05(x, dy, gamma, eps, centre=False, project=False)


def batch_norm_backward_no_gamma(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, use_gamma=False)


def batch_norm_backward_param_grads_swapped(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, swap=True)


def batch_norm_backward_unbiased(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, ddof=1)


def batch_norm_backward_no_invstd(x, dy, gamma, eps=1e-5):
    return _bn_backward_05(x, dy, gamma, eps, invstd_factor=False)


def batch_norm_backward_param_grads_over_batch_only(x, dy, gamma, eps=1e-5):
    """dgamma, dbeta summed over dim 0 only: shape (C, *spatial) instead of (C,) once there are spatial dims."""
    dx, _, _ = _bn_backward_05(x, dy, gamma, eps)
    axes = _axes_05(x)
    xhat = (x - x.mean(axis=axes, keepdims=True)) / _np05.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


# ------------------------------------------------------------------ 05.4 layer_norm
def _ln_05(x, normalized_shape, weight, bias, eps, *, axes=None, ddof=0, eps_outside=False, check=True):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if check and tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, ...]")
    axes = tuple(range(x.ndim - len(ns), x.ndim)) if axes is None else axes
    mean = x.mean(axis=axes, keepdims=True)
    std = x.std(axis=axes, ddof=ddof, keepdims=True)
    y = (x - mean) / (std + eps if eps_outside else _np05.sqrt(std ** 2 + eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def layer_norm_over_batch(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """BatchNorm's axis: statistics over the samples (dim 0) instead of within each sample."""
    return _ln_05(x, normalized_shape, weight, bias, eps, axes=(0,))


def layer_norm_last_dim_only(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, axes=(-1,))


def layer_norm_unbiased(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, ddof=1)


def layer_norm_eps_outside_sqrt(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, eps_outside=True)


def layer_norm_no_shape_check(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln_05(x, normalized_shape, weight, bias, eps, check=False)


# ------------------------------------------------------------------ 05.5 group_norm
def _gn_05(x, num_groups, weight, bias, eps, *, interleaved=False, per_position=False, ddof=0, check=True):
    N, C = x.shape[:2]
    if check and C % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups")
    if interleaved:  # channels c, c + G, c + 2G, ... in one group
        g = _np05.swapaxes(x.reshape(N, C // num_groups, num_groups, -1), 1, 2)
        axes = (2, 3)
    else:
        g = x.reshape(N, num_groups, C // num_groups, -1)
        axes = (2,) if per_position else (2, 3)
    y = (g - g.mean(axis=axes, keepdims=True)) / _np05.sqrt(g.var(axis=axes, ddof=ddof, keepdims=True) + eps)
    if interleaved:
        y = _np05.swapaxes(y, 1, 2)
    y = y.reshape(x.shape)
    shape = (1, C) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def group_norm_interleaved_groups(x, num_groups, weight=None, bias=None, eps=1e-5):
    """reshape(N, C // G, G, -1): every G-th channel in a group, not C/G neighbouring ones."""
    return _gn_05(x, num_groups, weight, bias, eps, interleaved=True)


def group_norm_per_position(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Statistics over a group's channels at each position, not over the positions too."""
    return _gn_05(x, num_groups, weight, bias, eps, per_position=True)


def group_norm_unbiased(x, num_groups, weight=None, bias=None, eps=1e-5):
    return _gn_05(x, num_groups, weight, bias, eps, ddof=1)


def group_norm_no_divisibility_check(x, num_groups, weight=None, bias=None, eps=1e-5):
    N, C = x.shape[:2]
    if C % num_groups:
        g = x.reshape(N, num_groups, -1) if x.size % (N * num_groups) == 0 else x.reshape(N, 1, -1)
        return ((g - g.mean(axis=2, keepdims=True)) / _np05.sqrt(g.var(axis=2, keepdims=True) + eps)).reshape(x.shape)
    return _gn_05(x, num_groups, weight, bias, eps, check=False)


WRONG.update({
    "05.1": [moments_unbiased, moments_no_keepdims, moments_other_axes, moments_uncentred],
    "05.2": [batch_norm_forward_unbiased_normalisation, batch_norm_forward_no_running_update,
             batch_norm_forward_biased_running_var, batch_norm_forward_momentum_swapped,
             batch_norm_forward_eval_uses_batch, batch_norm_forward_batch_axis_only,
             batch_norm_forward_no_size_check],
    "05.3": [batch_norm_backward_no_mean_term, batch_norm_backward_no_variance_term,
             batch_norm_backward_treats_stats_as_constants, batch_norm_backward_no_gamma,
             batch_norm_backward_param_grads_swapped, batch_norm_backward_unbiased, batch_norm_backward_no_invstd,
             batch_norm_backward_param_grads_over_batch_only],
    "05.4": [layer_norm_over_batch, layer_norm_last_dim_only, layer_norm_unbiased, layer_norm_eps_outside_sqrt,
             layer_norm_no_shape_check],
    "05.5": [group_norm_interleaved_groups, group_norm_per_position, group_norm_unbiased,
             group_norm_no_divisibility_check],
})
