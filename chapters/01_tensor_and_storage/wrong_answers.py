"""Planted wrong answers for chapter 01 (tensor and storage): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations


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
    def cat(d):
        return 2 if d.is_floating_point else 0 if d is cl.bool else 1
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

    def cat(d):
        return 2 if d.is_floating_point else 0 if d is cl.bool else 1
    tiers = [None, None, None]
    for x in (a, b):
        t = (0 if x.dim() > 0 else 1) if isinstance(x, cl.Tensor) else 2
        tiers[t] = dt(x) if tiers[t] is None else cl.promote_types(tiers[t], dt(x))
    result = None
    for d in tiers:
        if d is not None:
            result = d if result is None else cl.promote_types(result, d) if cat(d) > cat(result) else result
    return result


# ------------------------------------------------------------------ 01.7 OpRegistry
def _ch01_split(argtext, depth_aware=True, opening="([", closing=")]"):
    parts, depth, current = [], 0, ""
    for ch in argtext:
        if depth_aware:
            depth += (ch in opening) - (ch in closing)
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _ch01_args(parts, star_is_arg=False, last_equals=False, strip_default=True):
    args, kwarg_only = [], False
    for part in parts:
        if part == "*" and not star_is_arg:
            kwarg_only = True
            continue
        if last_equals and "=" in part:
            decl, default = part.rsplit("=", 1)
        else:
            decl, _, default = part.partition("=")
        typ, _, name = decl.strip().rpartition(" ")
        args.append((typ.strip(), name.strip(), (default.strip() if strip_default else default) or None, kwarg_only))
    return args


def _ch01_parse(schema, name_pattern=r"\w+", depth_aware=True, opening="([", closing=")]", message_stripped=False,
                **arg_options):
    import re
    m = re.match(rf"^({name_pattern})\((.*)\)\s*->\s*(.+)$", schema.strip())
    if m is None:
        raise ValueError(f"bad schema: {(schema.strip() if message_stripped else schema)!r}")
    name, argtext, returns = m.groups()
    return name, _ch01_args(_ch01_split(argtext, depth_aware, opening, closing), **arg_options), returns.strip()


class _Ch01Registry:
    def __init__(self):
        self.table = {}

    def parse(self, schema):
        return _ch01_parse(schema)

    def register(self, schema):
        signature = self.parse(schema)

        def decorator(fn):
            if signature[0] in self.table:
                raise ValueError(f"op {signature[0]} registered twice")
            self.table[signature[0]] = (fn, signature)
            return fn
        return decorator


class OpRegistry_overwrites(_Ch01Registry):
    # a second registration of a name replaces the first, as a dict would
    def register(self, schema):
        signature = self.parse(schema)

        def decorator(fn):
            self.table[signature[0]] = (fn, signature)
            return fn
        return decorator


class OpRegistry_comma_split(_Ch01Registry):
    # splits the arguments at every comma: int[1] dim=[-2, -1] becomes two arguments
    def parse(self, schema):
        return _ch01_parse(schema, depth_aware=False)


class OpRegistry_default_after_last_equals(_Ch01Registry):
    # the default is what follows the last '=': sep="=" loses its default
    def parse(self, schema):
        return _ch01_parse(schema, last_equals=True)


class OpRegistry_default_not_stripped(_Ch01Registry):
    # keeps the spaces around a default: 'Scalar min = 0' has the default ' 0'
    def parse(self, schema):
        return _ch01_parse(schema, strip_default=False)


class OpRegistry_depth_brackets_only(_Ch01Registry):
    # the depth counter sees only [ and ]: Tensor(a, b!) self becomes two arguments
    def parse(self, schema):
        return _ch01_parse(schema, opening="[", closing="]")


class OpRegistry_message_stripped(_Ch01Registry):
    # the bad-schema message shows schema.strip() instead of the schema as given
    def parse(self, schema):
        return _ch01_parse(schema, message_stripped=True)


class OpRegistry_first_arrow(_Ch01Registry):
    # splits the schema at its first '->': Tensor(a -> *) self breaks it
    def parse(self, schema):
        head, _, returns = schema.strip().partition("->")
        head = head.strip()
        if "(" not in head or not head.endswith(")") or not returns.strip():
            raise ValueError(f"bad schema: {schema!r}")
        name, _, argtext = head[:-1].partition("(")
        return name.strip(), _ch01_args(_ch01_split(argtext)), returns.strip()


class OpRegistry_accepts_overloads(_Ch01Registry):
    # takes add.Tensor(...) as an op named 'add.Tensor'
    def parse(self, schema):
        return _ch01_parse(schema, name_pattern=r"[\w.]+")


class OpRegistry_star_is_an_argument(_Ch01Registry):
    # keeps the '*' as an argument (type '', name '*') and marks nothing keyword-only
    def parse(self, schema):
        import re
        m = re.match(r"^(\w+)\((.*)\)\s*->\s*(.+)$", schema.strip())
        if m is None:
            raise ValueError(f"bad schema: {schema!r}")
        name, argtext, returns = m.groups()
        return name, _ch01_args(_ch01_split(argtext), star_is_arg=True), returns.strip()


class OpRegistry_returns_wrapper(_Ch01Registry):
    # the decorator returns a wrapper instead of the kernel itself, and stores the wrapper
    def register(self, schema):
        signature = self.parse(schema)

        def decorator(fn):
            if signature[0] in self.table:
                raise ValueError(f"op {signature[0]} registered twice")

            def binding(*args, **kwargs):
                return fn(*args, **kwargs)
            self.table[signature[0]] = (binding, signature)
            return binding
        return decorator


class OpRegistry_uses_course_lib(_Ch01Registry):
    # right table, but parsed by course_lib's own parser, which the task forbids
    def parse(self, schema):
        from course_lib._ops.registry import parse_schema
        name, args, returns = parse_schema(schema)
        return name, [(a.type, a.name, a.default, a.kwarg_only) for a in args], returns


class OpRegistry_uses_opdef(_Ch01Registry):
    # right table, but parsed by building course_lib's OpDef, which the task forbids
    def parse(self, schema):
        from course_lib._ops.registry import OpDef
        op = OpDef(schema, None, None)
        return op.name, [(a.type, a.name, a.default, a.kwarg_only) for a in op.args], op.returns


WRONG = {
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
    "01.7": [OpRegistry_overwrites, OpRegistry_comma_split, OpRegistry_first_arrow, OpRegistry_accepts_overloads,
             OpRegistry_star_is_an_argument, OpRegistry_returns_wrapper, OpRegistry_uses_course_lib,
             OpRegistry_uses_opdef, OpRegistry_default_after_last_equals, OpRegistry_default_not_stripped,
             OpRegistry_depth_brackets_only, OpRegistry_message_stripped],
}
