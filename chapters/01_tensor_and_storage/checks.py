"""Checks for chapter 01 (tensor and storage).

Expected values come from course_lib's library (strides of ``cl.empty``, ``as_strided`` views over
``arange``, ``tensor()``, its ``_recursive_store``, ``python_source`` and ``result_type``) or from
literals for PyTorch's error messages; 01.7's from ``registry.parse_schema`` and the refusals of
``registry.register`` (which raises before it touches ``OPS``). Each exercise adds cases drawn from
``rng``. The probes (the functions taking ``fn`` first) run in the learner's kernel.
"""
from __future__ import annotations

import inspect
import math

import numpy as np

import course_lib as cl
from course.checks import call, exercise, probe
from course_lib import _creation
from course_lib._ops import bindings as _bindings
from course_lib._ops import common as _common
from course_lib._ops import registry as _registry
from course_lib._ops.registry import OpDef


def _numel(shape) -> int:
    return math.prod(shape)


def _random_shape(rng, max_dims: int = 4, max_size: int = 5, low: int = 0) -> tuple:
    return tuple(int(n) for n in rng.integers(low, max_size + 1, size=int(rng.integers(0, max_dims + 1))))


def _raising(fn, *args) -> tuple[type[BaseException], str] | None:
    """(exception type, message) if ``fn(*args)`` raises, else None."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


def _under_float64(fn, *args):
    """Probe: ``fn(*args)`` with the default dtype set to float64 (put back afterwards)."""
    old = cl.get_default_dtype()
    cl.set_default_dtype(cl.float64)
    try:
        return fn(*args)
    finally:
        cl.set_default_dtype(old)


# ------------------------------------------------------------------ 01.1 contiguous_strides


@exercise("01.1", title="contiguous_strides", points=1,
          hint="walk the shape from the last dimension to the first: the last stride is 1, and each "
               "stride is the previous one times max(size, 1); return a tuple of Python ints.",
          forbid={"course_lib's contiguous_strides": _common.contiguous_strides})
def _contiguous_strides(rng):
    shapes = [(2, 3), (), (5,), (2, 3, 4), (4, 1), (3, 1, 4), (1,), (1, 1, 1), (2, 0, 3), (0,),
              (0, 0), (2, 3, 0), (7, 5, 3, 2)]
    shapes += [_random_shape(rng, max_dims=6, max_size=9) for _ in range(4)]
    return [call(s, expected=tuple(int(v) for v in cl.empty(s).stride())) for s in shapes]


# ------------------------------------------------------------------ 01.2 storage_index


def _reference_storage_index(index, shape, stride, offset):
    """Read the answer from course_lib: a view over arange() holds storage indices as values."""
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride) if n > 0)
    view = cl.arange(extent).as_strided(shape, stride, offset)
    return (view[index] if index else view).item()


@exercise("01.2", title="storage_index", points=2,
          hint="wrap a negative index i to i + size first, then check 0 <= i < size (IndexError with "
               "PyTorch's message otherwise); the answer is offset + sum(index[d] * stride[d]).")
def _storage_index(rng):
    good = [
        ((1, 2), (2, 3), (3, 1), 0),
        ((), (), (), 0),
        ((), (), (), 5),
        ((0, 0), (2, 3), (3, 1), 0),
        ((2, 1), (3, 2), (1, 3), 0),          # a transposed view
        ((1, 2, 3), (2, 3, 4), (12, 4, 1), 1),
        ((1, 3), (2, 4), (12, 1), 8),         # zeros(2, 3, 4).select(1, 2)
        ((3, 2), (4, 3), (0, 1), 0),          # expand: stride 0 reads one row again and again
        ((1, 0, 2), (2, 1, 3), (3, 999, 1), 0),  # the stride of a size-1 dim is never used
        ((4,), (5,), (2,), 3),                # every other element, from offset 3
        ((-1, -1), (2, 3), (3, 1), 0),
        ((-2, 0), (2, 3), (3, 1), 0),
        ((0, -3), (2, 3), (1, 2), 7),
    ]
    for _ in range(4):  # random geometry, index and sign
        shape = _random_shape(rng, max_size=6, low=1)
        stride = tuple(int(v) for v in rng.integers(0, 13, size=len(shape)))
        index = tuple(int(rng.integers(-n, n)) for n in shape)
        good.append((index, shape, stride, int(rng.integers(0, 10))))
    out = [call(*args, expected=_reference_storage_index(*args)) for args in good]
    bad = [
        ((2, 0), (2, 3), (3, 1), 0, "index 2 is out of bounds for dimension 0 with size 2"),
        ((0, -4), (2, 3), (3, 1), 0, "index -4 is out of bounds for dimension 1 with size 3"),
        ((0, 3), (2, 3), (3, 1), 0, "index 3 is out of bounds for dimension 1 with size 3"),
        ((0,), (0,), (1,), 0, "index 0 is out of bounds for dimension 0 with size 0"),
        ((1, 0), (1, 4), (4, 1), 2, "index 1 is out of bounds for dimension 0 with size 1"),
    ]
    shape = _random_shape(rng, max_size=6, low=1) or (3,)
    d = int(rng.integers(0, len(shape)))
    i = shape[d] + int(rng.integers(0, 4)) if rng.integers(0, 2) else -shape[d] - 1 - int(rng.integers(0, 4))
    index = tuple(i if k == d else 0 for k in range(len(shape)))
    bad.append((index, shape, tuple(int(v) for v in cl.empty(shape).stride()), 0,
                f"index {i} is out of bounds for dimension {d} with size {shape[d]}"))
    for index, shape, stride, offset, message in bad:
        out.append(call(index, shape, stride, offset, raises=IndexError, match=message))
    return out


# ------------------------------------------------------------------ 01.3 infer_shape_and_dtype


def _reference_infer(data):
    t = cl.tensor(data)
    return tuple(t.shape), t.dtype


def _random_data(rng):
    """Nested lists of a random shape whose numbers are bools, ints or floats (mixed at random)."""
    shape = _random_shape(rng, max_dims=3, max_size=3, low=1)
    kinds = rng.choice(["bool", "int", "float"], size=2)
    values = []
    for k in rng.choice(kinds, size=_numel(shape)):
        values.append(bool(rng.integers(0, 2)) if k == "bool" else int(rng.integers(-9, 10)) if k == "int"
                      else float(rng.integers(-90, 90)) / 8)

    def nest(flat, dims):
        if not dims:
            return flat[0]
        step = len(flat) // dims[0]
        return [nest(flat[k * step:(k + 1) * step], dims[1:]) for k in range(dims[0])]

    return nest(values, shape)


@exercise("01.3", title="infer_shape_and_dtype", points=2,
          hint="shape: follow the first item of each list down until you reach a number (or an empty "
               "list); dtype: look at every number, and test bool before int (True is an int in Python); "
               "a float gives cl.get_default_dtype(), an empty list too.")
def _infer_shape_and_dtype(rng):
    datas = [
        [[1, 2], [3, 4]], 7, True, 2.5, [1, 2, 3], [True, False], [True, 2], [[1, 2], [3, 4.5]], [[True], [2.5]],
        [[False, True], [True, True]], [[1, 2, 3]], [[[1]]], ((1, 2), (3, 4)), [(1.5, 2), (3, 4)], [], [[], []],
        [[[], []]],
    ]
    datas += [_random_data(rng) for _ in range(4)]
    out = [call(d, expected=_reference_infer(d)) for d in datas]
    for d in ([1, 2.5], [[0.5]], [True, 1]):
        out.append(probe(_under_float64, d, expected=_under_float64(_reference_infer, d),
                         label=f"infer_shape_and_dtype({d!r}) after cl.set_default_dtype(cl.float64)"))
    for d, message in (([None], "Could not infer dtype of NoneType"),
                       ([[1, 2], [3, None]], "Could not infer dtype of NoneType"),
                       ([1, {}], "Could not infer dtype of dict")):
        out.append(call(d, raises=RuntimeError, match=message))
    return out


# ------------------------------------------------------------------ 01.4 recursive_store


def _reference_store(n, offset, sizes, strides, dtype, obj):
    buf = np.full(n, None, dtype=object)
    _creation._recursive_store(buf, offset, list(sizes), list(strides), 0, dtype, obj)
    return buf.tolist()


def _store(fn, n, offset, sizes, strides, dtype, obj):
    """Probe: the learner's recursive_store into a list of n Nones; the list afterwards."""
    buf = [None] * n
    fn(buf, offset, sizes, strides, 0, dtype, obj)
    return buf


def _store_trial(obj, sizes, strides=None, dtype=cl.int64, n=None, offset=0):
    strides = tuple(int(v) for v in cl.empty(sizes).stride()) if strides is None else strides
    n = _numel(sizes) if n is None else n
    label = (f"buf = [None] * {n}; recursive_store(buf, {offset}, {sizes}, {strides}, 0, "
             f"cl.{dtype.name}, {obj!r}); buf")
    error = _raising(_reference_store, n, offset, sizes, strides, dtype, obj)
    if error is not None:
        return probe(_store, n, offset, sizes, strides, dtype, obj, raises=error[0], match=error[1], label=label)
    return probe(_store, n, offset, sizes, strides, dtype, obj, label=label,
                 expected=_reference_store(n, offset, sizes, strides, dtype, obj))


@exercise("01.4", title="recursive_store", points=3,
          hint="if dim == len(sizes), obj is one number: buf[offset] = store_scalar(obj, dtype). Otherwise "
               "obj must be a sequence of exactly sizes[dim] items (TypeError 'not a sequence' / ValueError "
               "'expected sequence of length N at dim D (got M)'); store item k at offset + k * strides[dim].")
def _recursive_store(rng):
    t = _store_trial
    out = [
        t([[1, 2], [3, 4]], (2, 2)),
        t(7, ()),
        t([5, 6, 7], (3,)),
        t([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], (2, 2, 2)),
        t(((1, 2), (3, 4)), (2, 2)),
        t([1.0, 2.5, 0.1], (3,), dtype=cl.float32),
        t([1.0, 2.5, 0.1], (3,), dtype=cl.float64),
        t([True, 2], (2,)),
        t([[True, False]], (1, 2), dtype=cl.bool),
        t([1.7, -1.7], (2,)),
        t([1, True], (2,), dtype=cl.float32),
        t([[5]], (1, 1)),
        t([[], []], (2, 0)),
        t([[1, 2], [3, 4]], (2, 2), strides=(1, 2)),      # column-major layout
        t([9, 8], (2,), n=5, offset=2),                   # into the middle of a buffer
        t([1, 2, 3], (3,), strides=(2,), n=5),            # every other cell
        t([[1, 2], [3]], (2, 2)),
        t([[1, 2], [3, 4, 5]], (2, 2)),
        t([[1], []], (2, 1)),
        t([1, 2, 3], (2,)),
        t([[[1, 2], [3, 4]], [[5, 6], [7]]], (2, 2, 2)),
        t([[1, 2], 3], (2, 2)),
        t(5, (2,)),
        t([1, [2, 3]], (2,)),
        t([1.0, [2, 3]], (2,), dtype=cl.float32),
    ]
    for _ in range(3):  # random data stored through a random permutation of the dims, after an offset
        data = _random_data(rng)
        sizes = tuple(cl.tensor(data).shape)
        perm = rng.permutation(len(sizes))
        base = cl.empty(tuple(sizes[k] for k in perm)).stride()
        strides = tuple(int(base[list(perm).index(d)]) for d in range(len(sizes)))
        offset = int(rng.integers(0, 4))
        out.append(t(data, sizes, strides=strides, n=offset + _numel(sizes), offset=offset,
                     dtype=[cl.float32, cl.int64, cl.float64][int(rng.integers(0, 3))]))
    return out


# ------------------------------------------------------------------ 01.5 binding_source


class _Dispatched:
    """What the fake ``_dispatch`` returns, so the check can see the binding returned it."""

    def __init__(self, args):
        self.args = args


_OP = object()


def _compile(source, name: str):
    def fake_dispatch(op, args):
        return _Dispatched(args) if op is _OP else "_dispatch was called with something else than _op"

    if not isinstance(source, str):
        raise TypeError(f"binding_source must return a str, not {type(source).__name__}")
    ns = {"_dispatch": fake_dispatch, "_op": _OP}
    exec(compile(source, f"<binding of {name}>", "exec"), ns)  # noqa: S102 - the learner's generated code
    fn = ns.get(name)
    if not callable(fn):
        raise ValueError(f"the source does not define a function named {name!r}")
    return fn


def _signature(source, name):
    """(name, parameter, ...) with '*' where keyword-only parameters start."""
    fn = _compile(source, name)
    parts, star = [fn.__name__], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(str(p))
    return tuple(parts)


def _call(source, name, args, kwargs):
    out = _compile(source, name)(*args, **kwargs)
    if isinstance(out, _Dispatched):
        return out.args
    if isinstance(out, str):
        return out
    return f"the binding returned {out!r}, not what _dispatch returned"


def _reference_source(schema: str) -> str:
    return _bindings.python_source(OpDef(schema, None, None))


def _call_label(name, args, kwargs):
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _literal_defaults(schema: str) -> bool:
    """True if every default of the schema is a Python literal (as the exercise's schemas are) and
    no argument is named after a Python keyword (``uniform_``'s ``from``: a generated ``def`` could
    not name it, which is why those ops' bindings are written by hand)."""
    import ast
    import keyword

    from course_lib._ops.registry import parse_schema

    for a in parse_schema(schema)[1]:
        if keyword.iskeyword(a.name):
            return False
        if a.default is not None:
            try:
                ast.literal_eval("()" if a.default == "[]" else a.default)
            except (ValueError, SyntaxError):
                return False
    return True


def _binding_signature(fn, schema, name):
    """Probe: the signature of the function the learner's generated source defines."""
    return _signature(fn(schema), name)


def _binding_call(fn, schema, name, args, kwargs):
    """Probe: what the learner's generated function passes to _dispatch for this call."""
    return _call(fn(schema), name, args, kwargs)


_SCHEMAS = [
    ("neg(Tensor self) -> Tensor", [(("x",), {})]),
    ("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
     [(("x", "y"), {}), (("x", "y"), {"alpha": 2}), (("x", "y", 2), None)]),
    ("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
     [(("x",), {}), (("x", 1, True), {"dtype": "float64"})]),
    ("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", [(("x",), {})]),
    ("zero_(Tensor(a!) self) -> Tensor(a!)", [(("x",), {})]),
    ("split(Tensor(a -> *) self, SymInt[1] split_size, int dim=0) -> Tensor(a)[]", [(("x", 2), {})]),
    ("stack(Tensor[] tensors, int dim=0) -> Tensor", [((["a", "b"], 1), {})]),
    ("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",
     [(("x", "y"), {})]),
    ("var(Tensor self, int[1]? dim=None, *, Scalar? correction=1, bool keepdim=False) -> Tensor",
     [(("x",), {"keepdim": True}), (("x", 0, 0), None)]),
    ("flatten(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", [(("x",), {})]),
    ("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
     "bool count_include_pad=True, int? divisor_override=None) -> Tensor", [(("x", 2), {})]),
]


@exercise("01.5", title="binding_source", points=2,
          hint="parse_schema(schema) gives the name and the args (.name, .default, .kwarg_only); put '*' "
               "before the first keyword-only arg, write defaults as they are except [] -> (), and pass "
               "all args on as one tuple: (self,) needs its comma.")
def _binding_source(rng):
    schemas = list(_SCHEMAS)
    registered = sorted(op.schema for op in cl.OPS.values() if _literal_defaults(op.schema))
    for k in rng.choice(len(registered), size=3, replace=False):  # three ops of the registry, at random
        schemas.append((registered[int(k)], []))
    out = []
    for schema, calls in schemas:
        name = schema.split("(", 1)[0]
        ref = _reference_source(schema)
        out.append(probe(_binding_signature, schema, name, expected=_signature(ref, name),
                         label=f"binding_source({schema!r}) -> (function name, parameters)"))
        for args, kwargs in calls:
            label = f"{_call_label(name, args, kwargs or {})} with the generated {name} passes to _dispatch"
            if kwargs is None:  # too many positional arguments: Python refuses the call
                out.append(probe(_binding_call, schema, name, args, {}, raises=TypeError,
                                 label=label.replace(" passes to _dispatch", "")))
                continue
            out.append(probe(_binding_call, schema, name, args, kwargs, expected=_call(ref, name, args, kwargs),
                             label=label))
    return out


# ------------------------------------------------------------------ 01.6 result_type


def _make(spec):
    """('t', shape, dtype name) -> a zeros tensor; anything else is a Python scalar."""
    if isinstance(spec, tuple):
        return cl.zeros(spec[1], dtype=getattr(cl, spec[2]))
    return spec


def _spec_label(spec) -> str:
    if isinstance(spec, tuple):
        return f"zeros({spec[1]}, dtype=cl.{spec[2]})"
    return repr(spec)


_PAIRS = [
    (("t", (3,), "int64"), ("t", (3,), "float32")),
    (("t", (2,), "bool"), ("t", (2,), "bool")),
    (("t", (2,), "bool"), ("t", (2,), "int64")),
    (("t", (2,), "bool"), 1),
    (("t", (2,), "int32"), ("t", (2,), "int64")),
    (("t", (2,), "uint8"), ("t", (2,), "int8")),
    (("t", (2,), "float32"), ("t", (2,), "float64")),
    (("t", (2,), "int64"), 2.5),
    (("t", (2,), "int32"), 5),
    (("t", (2,), "float32"), ("t", (), "float64")),
    (("t", (2,), "int64"), ("t", (), "float64")),
    (("t", (2,), "uint8"), ("t", (), "int64")),
    (("t", (), "int64"), ("t", (), "float32")),
    (("t", (), "int32"), 5),
    (("t", (), "bool"), 5),
    (True, False),
    (2, 2.5),
    (2, True),
    (("t", (2,), "int64"), True),
    (("t", (2,), "bool"), 2.5),
    (("t", (2,), "float16"), ("t", (), "float64")),
    (("t", (2,), "float16"), 1.5),
    (("t", (0,), "int32"), ("t", (), "int64")),
    (("t", (1,), "int8"), ("t", (), "int64")),
    (("t", (1,), "int8"), 1000),
    (("t", (), "int8"), ("t", (2,), "bool")),
    (("t", (), "float64"), ("t", (2, 3), "int16")),
    (("t", (), "bool"), ("t", (), "uint8")),
    (("t", (2,), "int64"), ("t", (), "float16")),
    (("t", (2, 0), "int8"), ("t", (1,), "int16")),
    (("t", (), "bool"), 2.5),
]
_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _random_operand(rng):
    kind = int(rng.integers(0, 4))
    if kind == 3:  # a Python scalar
        return [True, 3, 1.5][int(rng.integers(0, 3))]
    shape = () if kind == 0 else tuple(int(n) for n in rng.integers(0, 3, size=int(rng.integers(1, 3))))
    return ("t", shape, _DTYPES[int(rng.integers(0, len(_DTYPES)))])


@exercise("01.6", title="result_type", points=2,
          hint="sort the operands into three tiers: tensors with dim() > 0, 0-d tensors, Python scalars "
               "(bool -> cl.bool, int -> cl.int64, float -> the default dtype); promote within a tier; a lower "
               "tier changes the answer only if its category (bool < int < float) is higher.",
          forbid={"cl.result_type": cl.result_type})
def _result_type(rng):
    pairs = list(_PAIRS) + [(_random_operand(rng), _random_operand(rng)) for _ in range(6)]
    out = [call(_make(a), _make(b), expected=cl.result_type(_make(a), _make(b)),
                label=f"result_type({_spec_label(a)}, {_spec_label(b)})") for a, b in pairs]
    for a, b in ((("t", (2,), "int64"), 2.5), (("t", (2,), "float32"), 2.5), (2, 0.5)):
        out.append(probe(_under_float64, _make(a), _make(b),
                         expected=_under_float64(cl.result_type, _make(a), _make(b)),
                         label=f"result_type({_spec_label(a)}, {_spec_label(b)}) after "
                               "cl.set_default_dtype(cl.float64)"))
    return out


# ------------------------------------------------------------------ 01.7 OpRegistry


def _plain_signature(signature) -> tuple:
    """(name, [(type, name, default, kwarg_only), ...], returns) as plain tuples and lists."""
    name, args, returns = signature
    return (name, [tuple(a) for a in args], returns)


def _course_lib_signature(schema: str) -> tuple:
    """What course_lib's parser makes of ``schema``, in the exercise's format."""
    name, args, returns = _registry.parse_schema(schema)
    return (name, [(a.type, a.name, a.default, a.kwarg_only) for a in args], returns)


def _course_lib_refusal(schema: str) -> tuple[str, str]:
    """(type name, message) of course_lib's ``register`` refusing ``schema`` (a bad schema, or a name in
    ``OPS`` already); it raises before it touches ``OPS``."""
    try:
        _registry.register(schema, kind="pointwise")(lambda *args: None)
    except ValueError as e:
        return "ValueError", str(e)
    raise AssertionError(f"course_lib's register accepted {schema!r}")  # pragma: no cover - a bug in the check


def _registry_table(cls, schemas):
    """Probe: a fresh ``cls()``, each schema registered on a kernel of its own, in order. Returns the table
    (names in order, which kernel each entry holds, the signatures), whether each decorator returned its
    kernel, and the first registration's error as (type name, message), after which it stops."""
    reg = cls()
    kernels, returned, error = [], [], None
    for i, schema in enumerate(schemas):
        def kernel(*args, _i=i):
            return _i
        kernels.append(kernel)
        try:
            decorator = reg.register(schema)
            returned.append(decorator(kernel) is kernel)
        except Exception as e:  # noqa: BLE001 - the learner's refusal is data
            if isinstance(e, NotImplementedError):
                raise
            error = (type(e).__name__, str(e))
            break
    table = reg.table
    if not isinstance(table, dict):
        return {"table": f"table is a {type(table).__name__}, not a dict"}
    entries = list(table.items())
    which = [next((k for k, fn in enumerate(kernels) if entry[0] is fn), None) for _, entry in entries]
    return {"names": [name for name, _ in entries], "kernels": which,
            "signatures": [_plain_signature(entry[1]) for _, entry in entries],
            "decorator returned the kernel": returned, "error": error}


def _expected_table(schemas, refused: str | None = None) -> dict:
    """What ``_registry_table`` must return: every schema before ``refused`` (the last one) registered."""
    kept = schemas[:-1] if refused is not None else schemas
    sigs = [_course_lib_signature(s) for s in kept]
    return {"names": [s[0] for s in sigs], "kernels": list(range(len(kept))), "signatures": sigs,
            "decorator returned the kernel": [True] * len(kept),
            "error": None if refused is None else _course_lib_refusal(refused)}


_REGISTRY_SCHEMAS = [
    "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
    "unbind(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
    "max(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor",
    "ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None) -> Tensor",
    "  relu_(Tensor(a!) self) -> Tensor(a!)  ",
    "seed() -> int",
    "lerp(Tensor self,Tensor end,Scalar weight)->Tensor",
    # a default holding '=' (it starts at the first '='), spaces around '=' (stripped), and commas inside an
    # alias annotation's parentheses (not separators)
    'split_on(Tensor self, str sep="=", *, str? pair="k=v") -> Tensor[]',
    "clamp_to(Tensor self, Scalar min = 0, int dim =-1, bool flag= True) -> Tensor",
    "swap_(Tensor(a, b!) self, Tensor(b, c) other) -> Tensor(a, b!)",
]
_ARG_TYPES = ["Tensor", "Tensor?", "Tensor(a)", "Tensor(b!)", "Tensor[]", "Scalar", "Scalar?", "int", "int?",
              "int[]", "int[2]", "SymInt[1]?", "bool", "float", "float?", "ScalarType?", "str", "Generator?"]
_DEFAULTS = {"Tensor?": ["None"], "Scalar": ["1", "0.5"], "Scalar?": ["None"], "int": ["0", "-1"], "int?": ["None"],
             "int[]": ["[]"], "int[2]": ["[1, 1]", "0"], "SymInt[1]?": ["None"], "bool": ["False", "True"],
             "float": ["1e-05", "0.0"], "float?": ["None"], "ScalarType?": ["None"], "str": ['"mean"'],
             "Generator?": ["None"]}
_ARG_NAMES = ["self", "other", "dim", "keepdim", "weight", "bias", "eps", "out_dtype", "size", "reduction",
              "generator", "alpha", "beta", "index", "src", "tensors", "p", "stride"]
_RETURNS = ["Tensor", "Tensor(a)", "Tensor[]", "(Tensor, Tensor)", "(Tensor values, Tensor indices)", "()", "bool",
            "Tensor(a!)"]
_OP_WORDS = ["fused", "scaled", "masked", "batch", "sparse", "quant", "linear", "conv", "pool", "norm", "clip",
             "gather", "scatter", "sort", "roll", "pad", "mix", "shift"]


def _random_schema(rng, name: str) -> str:
    """A schema in native_functions.yaml's style: a few arguments, sometimes a '*', defaults at the end."""
    n = int(rng.integers(0, 6))
    names = [str(a) for a in rng.choice(_ARG_NAMES, size=n, replace=False)]
    star = int(rng.integers(1, n + 1)) if n and rng.random() < 0.6 else None
    parts, defaults_from = [], int(rng.integers(1, n + 1)) if n else 0
    for i, arg in enumerate(names):
        if i == star:
            parts.append("*")
        typ = _ARG_TYPES[int(rng.integers(0, len(_ARG_TYPES)))] if i else "Tensor"
        options = _DEFAULTS.get(typ)
        default = f"={options[int(rng.integers(0, len(options)))]}" if options and i >= defaults_from else ""
        parts.append(f"{typ} {arg}{default}")
    return f"{name}({', '.join(parts)}) -> {_RETURNS[int(rng.integers(0, len(_RETURNS)))]}"


def _random_op_names(rng, n: int) -> list[str]:
    words = rng.choice(_OP_WORDS, size=2 * n, replace=False)
    return [f"{words[2 * k]}_{words[2 * k + 1]}" for k in range(n)]


@exercise("01.7", title="OpRegistry", points=2,
          hint="register(schema) parses first (re.match(r'^(\\w+)\\((.*)\\)\\s*->\\s*(.+)$', schema.strip()), else "
               "ValueError(f'bad schema: {schema!r}')), splits the arguments at commas outside [] and (), and "
               "returns a decorator that refuses a name already in the table (ValueError(f'op {name} registered "
               "twice')) before it stores (fn, (name, args, returns)) and returns fn.",
          forbid={"course_lib's parse_schema": _registry.parse_schema, "course_lib's register": _registry.register,
                  "course_lib's OpDef": OpDef.__init__, "course_lib's _split_args": _registry._split_args})
def _op_registry(rng):
    def table(schemas, refused=None, label=""):
        return probe(_registry_table, list(schemas), expected=_expected_table(list(schemas), refused), label=label)

    out = [table(_REGISTRY_SCHEMAS[:1], label=f"register({_REGISTRY_SCHEMAS[0]!r}) -> table")]
    out += [table([s], label=f"the signature of {s!r}") for s in _REGISTRY_SCHEMAS[1:]]
    names = _random_op_names(rng, 5)
    schemas = [_random_schema(rng, name) for name in names]
    out.append(table(schemas, label="five random schemas in one registry: " + "; ".join(schemas)))
    registered = sorted(op.schema for op in cl.OPS.values())
    picks = [registered[int(k)] for k in rng.choice(len(registered), size=4, replace=False)]
    out.append(table(picks, label="four schemas of course_lib's registry: " + "; ".join(picks)))
    # refusals, with their messages from course_lib's own register: a second op of a name (as an overload
    # would be), an overload name, a schema without '-> returns'; the table keeps what came before
    real = [op for op in cl.OPS.values() if op.args and op.args[0].is_tensor]
    first, other = (real[int(k)] for k in rng.choice(len(real), size=2, replace=False))
    again = f"{first.name}(Tensor self, Scalar other, Scalar alpha=1) -> Tensor"
    out.append(table([first.schema, other.schema, again], refused=again,
                     label=f"{first.name} registered twice: {first.schema!r}, then {again!r}"))
    dotted = f"{first.name}.Tensor(Tensor self, Tensor other) -> Tensor"
    out.append(table([other.schema, dotted], refused=dotted, label=f"an overload name: register({dotted!r})"))
    # (the message repeats the schema as given, surrounding spaces included)
    for bad in ("relu(Tensor self)", f"{other.name} Tensor self -> Tensor", "  relu(Tensor self)  "):
        out.append(table([first.schema, bad], refused=bad, label=f"a bad schema: register({bad!r})"))
    return out
