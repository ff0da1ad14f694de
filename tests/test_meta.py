"""The meta device: every op gives the same shape and dtype on meta tensors as on CPU.

A generic test over the registry: each op is called through the dispatcher with
sample arguments, once with CPU tensors and once with the same tensors moved to
the meta device; results must agree in shape and dtype (and live on meta).
Shape errors must be raised on meta as on CPU, with the same message.
"""
from __future__ import annotations

import numpy as np
import pytest

import course_lib as cl
from course_lib._ops.dispatcher import dispatch
from course_lib._ops.registry import OPS


def T(*shape, dtype="float32", values=None):
    """A sample tensor: ``values`` or 0.5, 1.5, 2.5, ... (int dtypes: 0, 1, 2, ...)."""
    n = int(np.prod(shape)) if shape else 1
    a = np.asarray(values if values is not None else (np.arange(n) % 5 + (0.5 if "float" in dtype else 0)))
    return cl.tensor(a.reshape(shape).astype(dtype))


def I(*values_shape, values):  # noqa: E743 - an index tensor
    return T(*values_shape, dtype="int64", values=values)


B = lambda *s, values: T(*s, dtype="bool", values=values)  # noqa: E731

# op name -> list of argument tuples, in schema order (defaults may be left out)
SAMPLES = {
    "rsub": [(T(2, 3), T(3)), (T(2, 3), 2.0)],
    "isclose": [(T(2, 3), T(3))],
    "clamp": [(T(2, 3), -1.0, 1.0), (T(2, 3), T(3), None)],
    "where": [(B(2, 3, values=[1, 0, 1, 0, 1, 0]), T(2, 3), T(3)), (B(3, values=[1, 0, 1]), 1.0, T(2, 3))],
    "lerp": [(T(2, 3), T(3), 0.5), (T(2, 3), T(2, 3), T(3))],
    "sum": [(T(2, 3),), (T(2, 3), 1, True), (T(2, 3), (0, 1)), (T(2, 3, dtype="int32"), 0)],
    "mean": [(T(2, 3),), (T(2, 3), -1, True)],
    "prod": [(T(2, 3),), (T(2, 3, dtype="int64"), 1)],
    "var": [(T(2, 3),), (T(2, 3), 1, 0, True)],
    "std": [(T(2, 3),), (T(2, 3), (0, 1))],
    "amax": [(T(2, 3),), (T(2, 3), 1, True)],
    "amin": [(T(2, 3), (0,))],
    "argmax": [(T(2, 3),), (T(2, 3), 1, True)],
    "argmin": [(T(2, 3), 0)],
    "max": [(T(2, 3),), (T(2, 3), 1), (T(2, 3), 0, True), (T(2, 3), T(3))],
    "min": [(T(2, 3),), (T(2, 3), 1)],
    "logsumexp": [(T(2, 3), 1), (T(2, 3, dtype="int64"), (0, 1), True)],
    "all": [(T(2, 3),), (T(2, 3, dtype="uint8"), 1)],
    "any": [(T(2, 3), 0, True)],
    "cumsum": [(T(2, 3), 1), (T(2, 3, dtype="bool"), 0)],
    "view": [(T(2, 3), (3, 2)), (T(2, 3), (-1,))],
    "_unsafe_view": [(T(2, 3), (6,))],
    "reshape": [(T(2, 3), (3, -1)), (T(2, 3).t(), (6,))],
    "flatten": [(T(2, 3, 4), 1), (T(2, 3),)],
    "unflatten": [(T(2, 6), 1, (2, 3))],
    "transpose": [(T(2, 3, 4), 0, 2)],
    "permute": [(T(2, 3, 4), (2, 0, 1))],
    "movedim": [(T(2, 3, 4), 0, 2)],
    "unsqueeze": [(T(2, 3), 1)],
    "squeeze": [(T(2, 1, 3),), (T(2, 1, 3), 1)],
    "expand": [(T(3), (2, 3)), (T(3, 1), (-1, 4))],
    "expand_as": [(T(3), T(2, 3))],
    "broadcast_to": [(T(3), (4, 3))],
    "select": [(T(2, 3), 1, 2)],
    "slice": [(T(4, 3), 0, 1, 4, 2)],
    "narrow": [(T(4, 3), 1, 1, 2)],
    "diagonal": [(T(3, 4),), (T(2, 3, 4), 1, 1, 2)],
    "unfold": [(T(2, 5), 1, 2, 1)],
    "as_strided": [(T(3, 4), (2, 2), (1, 2), 1)],
    "unbind": [(T(2, 3), 1)],
    "split": [(T(5, 3), 2), (T(5, 3), (1, 4))],
    "chunk": [(T(5, 3), 2, 0)],
    "detach": [(T(2, 3),)],
    "alias": [(T(2, 3),)],
    "_view_scatter": [(T(2, 2), (3, 4), (2, 2), (4, 1), 1)],
    "_view_gather": [(T(3, 4), (2, 2), (4, 1), 1)],
    "dot": [(T(3), T(3))],
    "mv": [(T(2, 3), T(3))],
    "mm": [(T(2, 3), T(3, 4))],
    "bmm": [(T(2, 2, 3), T(2, 3, 4))],
    "addmm": [(T(4), T(2, 3), T(3, 4))],
    "matmul": [(T(3), T(3)), (T(2, 3), T(3)), (T(3), T(3, 2)), (T(2, 3), T(3, 4)), (T(5, 2, 3), T(3)),
               (T(2, 1, 2, 3), T(4, 3, 5)), (T(3), T(2, 3, 4))],
    "clone": [(T(2, 3).t(),)],
    "contiguous": [(T(2, 3).t(),)],
    "_to_copy": [(T(2, 3), cl.float64)],
    "copy_": [(T(2, 3), T(3))],
    "fill_": [(T(2, 3), 2.0)],
    "zero_": [(T(2, 3),)],
    "bernoulli": [(T(2, 3, values=[0, .5, 1, 0, .5, 1]),), (T(2, 3), 0.5)],
    "bernoulli_": [(T(2, 3), 0.5), (T(2, 3), T(3, values=[0, .5, 1]))],
    "masked_fill": [(T(2, 3), B(3, values=[1, 0, 1]), 0.0)],
    "masked_fill_": [(T(2, 3), B(3, values=[1, 0, 1]), 0.0)],
    "cat": [([T(2, 3), T(1, 3)],), ([T(2, 3), T(2, 1, dtype="int64")], 1)],
    "stack": [([T(2, 3), T(2, 3)], 1)],
    "index": [(T(4, 3), [I(2, values=[0, 3])]), (T(4, 3), [None, I(2, 2, values=[0, 1, 2, 0])]),
              (T(4, 3, 2), [I(2, values=[0, 1]), None, I(1, values=[1])])],
    "index_put_": [(T(4, 3), [I(2, values=[0, 3])], T(3), False)],
    "index_put": [(T(4, 3), [I(2, values=[0, 3])], T(3), True)],
    "gather": [(T(3, 4), 1, I(3, 2, values=[0, 1, 2, 3, 0, 1]))],
    "scatter_add": [(T(3, 4), 1, I(3, 2, values=[0, 1, 2, 3, 0, 1]), T(3, 2))],
    "index_select": [(T(3, 4), 1, I(2, values=[3, 0]))],
    "tril": [(T(3, 4),)],
    "triu": [(T(3, 4), 1)],
    "flip": [(T(3, 4), (0, 1))],
    "softmax": [(T(2, 3), 1)],
    "log_softmax": [(T(2, 3), 0)],
    "_log_softmax_backward_data": [(T(2, 3), T(2, 3), 1, cl.float32)],
    "threshold_backward": [(T(2, 3), T(2, 3), 0)],
    "convolution": [(T(1, 2, 5, 5), T(3, 2, 3, 3), T(3), (1, 1), (1, 1), (1, 1), False, (0, 0), 1)],
    "max_pool2d_with_indices": [(T(1, 2, 4, 4), (2, 2))],
    "avg_pool2d": [(T(1, 2, 4, 4), (2, 2))],
    "nll_loss_forward": [(T(3, 4), I(3, values=[0, 3, 1]), None, 1, -100)],
    "embedding": [(T(5, 3), I(2, 2, values=[0, 4, 1, 1]))],
    "embedding_renorm_": [(T(5, 3), I(3, values=[0, 4, 4]), 0.5, 2.0)],
    "new_zeros": [(T(2, 3, dtype="float64"), (4,))],
    "new_ones": [(T(2, 3, dtype="int32"), (4, 1))],
    "new_empty": [(T(2, 3), (0, 2))],
    "new_full": [(T(2, 3, dtype="float64"), (2,), 1.5)],
    "new_empty_strided": [(T(2, 3), (2, 2), (1, 2))],
    "native_batch_norm": [(T(4, 3), T(3), T(3), None, None, True, 0.1, 1e-5)],
    "native_layer_norm": [(T(4, 3), (3,), T(3), T(3), 1e-5)],
    "rms_norm_fused": [(T(4, 3), (3,), T(3), 1e-5)],
    "native_group_norm": [(T(2, 4, 3), T(4), T(4), 2, 4, 3, 2, 1e-5)],
}
# binary pointwise ops: tensor-tensor with broadcasting and tensor-scalar
for _name in ("add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "atan2",
              "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
    SAMPLES.setdefault(_name, [(T(2, 3), T(3, dtype="float64")),
                               (T(2, 3, dtype="int64"), T(3, dtype="int32", values=[1, 2, 3]))]
                       + ([] if _name in ("maximum", "minimum") else [(T(2, 3, dtype="int32"), 2)]))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    SAMPLES.setdefault(_name, [(T(2, 3, dtype="int64"), T(3, dtype="int8"))])
for _name in ("add_", "sub_", "mul_", "div_", "floor_divide_", "remainder_", "pow_", "eq_", "ne_", "lt_", "le_",
              "gt_", "ge_"):
    SAMPLES.setdefault(_name, [(T(2, 3), T(3)), (T(2, 3), 2)])
for _name in ("bitwise_and_", "bitwise_or_", "bitwise_xor_"):
    SAMPLES.setdefault(_name, [(T(2, 3, dtype="int64"), T(3, dtype="int64"))])
SAMPLES["clamp_"] = [(T(2, 3), 0.0, 1.0)]
SAMPLES["bitwise_not"] = SAMPLES["bitwise_not_"] = [(T(2, 3, dtype="int32"),), (T(3, dtype="bool"),)]
SAMPLES["lerp_"] = [(T(2, 3), T(3), 0.5)]

# sorting, selection and linalg (square or well-shaped matrices)
SAMPLES.update({
    "sort": [(T(2, 3),), (T(2, 3), 0, True, True)], "topk": [(T(2, 3), 2), (T(2, 3), 1, 0, False)],
    "kthvalue": [(T(2, 3), 2), (T(2, 3), 1, 0, True)], "median": [(T(2, 3),), (T(2, 3), 1, True)],
    "mode": [(T(2, 3),), (T(2, 3), 0, True)], "cumprod": [(T(2, 3), 1), (T(2, 3, dtype="int32"), 0)],
    "count_nonzero": [(T(2, 3),), (T(2, 3), (0, 1))], "nansum": [(T(2, 3), 1, True)],
    "aminmax": [(T(2, 3),), (T(2, 3), 1, True)], "var_mean": [(T(2, 3), 1)], "std_mean": [(T(2, 3), None, 0, True)],
    "searchsorted": [(T(4, dtype="int64", values=[1, 3, 5, 7]), T(2, 3, dtype="int64"), True)],
    "bucketize": [(T(2, 3), T(4, values=[0.5, 1.5, 2.5, 3.5]), True, True)],
    "linalg_vector_norm": [(T(2, 3),), (T(2, 3), 1, 1, True)],
    "linalg_inv": [(T(2, 2, values=[2.0, 1.0, 1.0, 3.0]),)], "inverse": [(T(2, 2, values=[2.0, 1.0, 1.0, 3.0]),)],
    "linalg_det": [(T(3, 3),)], "det": [(T(2, 2),)],
    "linalg_solve": [(T(2, 2, values=[2.0, 1.0, 1.0, 3.0]), T(2, 3)), (T(2, 2, values=[2.0, 1.0, 1.0, 3.0]), T(2))],
    "linalg_svd": [(T(2, 3),), (T(2, 3, 4), False)], "linalg_svdvals": [(T(3, 2),)],
    "linalg_qr": [(T(3, 2),), (T(2, 3), "complete"), (T(2, 3), "r")],
    "linalg_eigh": [(T(2, 2, values=[2.0, 1.0, 1.0, 3.0]),)],
    "cummax": [(T(2, 3), 1)], "cummin": [(T(2, 3, dtype="int64"), 0)], "nanmedian": [(T(2, 3),), (T(2, 3), 0, True)],
    "quantile": [(T(2, 3), 0.5), (T(2, 3), T(2, values=[0.2, 0.7]), 1, True)], "nanquantile": [(T(2, 3), 0.3, 0)],
    "linalg_cholesky": [(T(2, 2, values=[2.0, 1.0, 1.0, 3.0]),), (T(2, 2, values=[2.0, 1.0, 1.0, 3.0]), True)],
    "linalg_slogdet": [(T(2, 2),)], "linalg_pinv": [(T(3, 2),)], "linalg_eigvalsh": [(T(2, 2),)],
    "linalg_matrix_rank": [(T(2, 3, 4),)], "linalg_matrix_power": [(T(2, 2), 3), (T(2, 2), 0), (T(2, 2), -1)],
    "linalg_multi_dot": [([T(3), T(3, 2), T(2)],), ([T(2, 3), T(3, 3)],)],
    "trace": [(T(2, 3),), (T(3, 3, dtype="int32"),)], "dist": [(T(2, 3), T(3), 3)], "slogdet": [(T(2, 2),)],
    "logdet": [(T(2, 2, values=[2.0, 1.0, 1.0, 3.0]),)], "pinverse": [(T(3, 2),)], "matrix_power": [(T(2, 2), 2)],
    "linalg_cross": [(T(2, 3), T(1, 3)), (T(3, 2), T(3, 2), 0)], "cross": [(T(2, 3), T(2, 3), 1)],
    "linalg_vecdot": [(T(2, 3), T(3))], "linalg_cond": [(T(2, 2, values=[2.0, 1.0, 1.0, 3.0]),)],
    "diff": [(T(2, 3),), (T(2, 3), 2, 0, T(1, 3))],
})

# factories and random ops: the meta run passes device="meta" (see test_meta_matches_cpu)
SAMPLES.update({
    "arange": [(0, 5, 1), (0.0, 2.0, 0.5)], "linspace": [(0.0, 1.0, 5)], "eye": [(3,), (2, 4)],
    "empty": [((2, 3),)], "zeros": [((2, 3),)], "ones": [((2, 3),)], "full": [((2, 3), 1.5), ((2,), 3)],
    "empty_strided": [((2, 3), (1, 2))], "scalar_tensor": [(2.5,)], "full_like": [(T(2, 3), 2.0)],
    "rand": [((2, 3),)], "randn": [((2, 3),)], "randint": [(0, 5, (2, 3))], "randperm": [(5,)],
    "randint_like": [(T(2, 3), 0, 5)], "geometric_": [(T(2, 3), 0.5)],
    "multinomial": [(T(2, 3, values=[.2, .3, .5, .1, .1, .8]), 2)],
})

# scatters, index arithmetic, stacks and the other ops of _ops/scatter.py and _ops/combining.py
_IDX22 = I(2, 2, values=[0, 1, 3, 0])
SAMPLES.update({
    "scatter": [(T(3, 4), 1, _IDX22, T(2, 2)), (T(3, 4), 1, _IDX22, None, 2.0)],
    "scatter_": [(T(3, 4), 1, _IDX22, T(2, 2))],
    "scatter_add_": [(T(3, 4), 0, I(2, 2, values=[0, 1, 2, 0]), T(2, 2))],
    "scatter_reduce": [(T(3, 4), 1, _IDX22, T(2, 2), "amax"), (T(3, 4), 1, _IDX22, T(2, 2), "mean", False)],
    "scatter_reduce_": [(T(3, 4), 1, _IDX22, T(2, 2), "prod")],
    "index_add": [(T(3, 4), 0, I(2, values=[0, 2]), T(2, 4))],
    "index_add_": [(T(3, 4), 1, I(2, values=[0, 0]), T(3, 2), 2.0)],
    "index_fill": [(T(3, 4), 1, I(1, values=[3]), 2.0)], "index_fill_": [(T(3, 4), 0, I(2, values=[0, -1]), 1)],
    "take_along_dim": [(T(3, 4), I(3, 1, values=[0, 1, 3]), 1), (T(3, 4), I(2, values=[1, 7]))],
    "hstack": [([T(2, 3), T(2, 1)],)], "vstack": [([T(3), T(2, 3)],)], "dstack": [([T(2, 3), T(2, 3)],)],
    "column_stack": [([T(3), T(3, 2)],)], "repeat": [(T(2, 3), (2, 1, 2))], "tile": [(T(2, 3), (2,))],
    "repeat_interleave": [(T(2, 3), 2, 1), (T(2, 3), I(2, values=[1, 3]), 0, 4)],
    "_repeat_interleave_index": [(I(3, values=[1, 0, 2]), 3)],
    "outer": [(T(3), T(2))], "kron": [(T(2, 3), T(2))], "broadcast_tensors": [([T(2, 3), T(3)],)],
    "meshgrid": [([T(3), T(2)], "xy")], "diag": [(T(3),), (T(3, 4), 1)], "diag_embed": [(T(2, 3), -1)],
    "diagonal_copy": [(T(3, 4), 1)], "roll": [(T(2, 3), 1), (T(2, 3), (1, 2), (0, 1))],
    "einsum": [("ij,jk->ik", [T(2, 3), T(3, 4)]), ("...i,i", [T(2, 3), T(3)])], "logspace": [(0, 2, 3)],
})

# ops whose output shape depends on the values: no meta kernel, as in PyTorch
DATA_DEPENDENT = {"nonzero", "masked_select", "unique"}
# backward helpers of the nn ops: exercised by the autograd tests through their forward ops
BACKWARD_HELPERS = {n for n in OPS if n.endswith("_backward") or n.endswith("_dense_backward")}


def _auto_sample(op):
    """Arguments for a simple unary-style op: Tensor args get a (2, 3) float tensor, the rest their defaults."""
    args = []
    for a in op.args:
        if a.is_tensor:
            args.append(T(2, 3))
        elif a.default is not None:
            break
        else:
            return None
    return [tuple(args)]


def _samples(name):
    op = OPS[name]
    if name in SAMPLES:
        return SAMPLES[name]
    return _auto_sample(op)


def _to_meta(x):
    if isinstance(x, cl.Tensor):
        return x.to("meta")
    if isinstance(x, list):
        return [_to_meta(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_to_meta(v) for v in x)
    return x


def _copy(x):
    if isinstance(x, cl.Tensor):
        return x.clone()
    if isinstance(x, list):
        return [_copy(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_copy(v) for v in x)
    return x


def _full_args(op, args):
    """Fill in schema defaults so the op can be called positionally through the dispatcher."""
    from course_lib._ops.bindings import _default
    out = list(args)
    for a in op.args[len(args):]:
        out.append(eval(_default(a.default)))  # noqa: S307 - schema literals
    return tuple(out)


def _describe(r):
    if isinstance(r, cl.Tensor):
        return ("tensor", tuple(r.shape), r.dtype)
    if isinstance(r, (tuple, list)):
        return tuple(_describe(v) for v in r)
    return r


def _meta_ok(r):
    if isinstance(r, cl.Tensor):
        return r.is_meta
    if isinstance(r, (tuple, list)):
        return all(_meta_ok(v) for v in r)
    return True


CASES = [n for n in sorted(OPS) if n not in DATA_DEPENDENT and n not in BACKWARD_HELPERS]


@pytest.mark.parametrize("name", CASES)
def test_meta_matches_cpu(name):
    op = OPS[name]
    samples = _samples(name)
    if not samples:
        pytest.skip(f"no sample arguments for {name} ({op.schema}); add one to SAMPLES")
    for args in samples:
        full = _full_args(op, args)
        cpu = dispatch(op, _copy(full))
        meta_args = _to_meta(full)
        if any(a.name == "device" for a in op.args):   # a factory: asked for meta
            meta_args = tuple("meta" if a.name == "device" else v for a, v in zip(op.args, meta_args))
        meta = dispatch(op, meta_args)
        assert _describe(meta) == _describe(cpu), (name, args)
        assert _meta_ok(meta), name


def test_every_core_op_has_a_sample():
    core = {n for n, op in OPS.items() if op.cpu.__module__.split(".")[-1] in
            ("pointwise", "reductions", "views", "linalg", "copies", "inplace", "fill", "joins",
             "advanced_indexing", "transformations", "softmax", "scatter", "combining")} - DATA_DEPENDENT
    missing = sorted(n for n in core if not _samples(n))
    assert not missing, f"core ops without meta samples: {missing}"


def test_data_dependent_ops_refuse_meta():
    with pytest.raises(NotImplementedError):
        cl.nonzero(cl.ones(2, 3, device="meta"))
    with pytest.raises(NotImplementedError):
        cl.ones(2, 3, device="meta")[cl.ones(2, 3, device="meta") > 0]


@pytest.mark.parametrize("expr", [
    "M(2, 3) + M(4)",
    "M(2, 3) @ M(4, 5)",
    "M(3) @ M(4)",
    "M(2, 3) @ M(4)",
    "M(2, 2, 3) @ M(3, 3, 4)",
    "M(2, 3).view(4)",
    "M(2, 3).t().view(6)",
    "M(2, 3).expand(4, 3)",
    "M(2, 3).sum(2)",
    "M(2, 3).mean(dtype=cl.int64)",
    "M(2, 3, dtype=cl.int64).mean()",
    "M(3, dtype=cl.int64).add_(M(3))",
    "M(3).add_(M(2, 3))",
    "cl.cat([M(2, 3), M(2, 4)])",
    "cl.stack([M(2), M(3)])",
    "M(2, 3).permute(0, 0)",
    "M(2, 3).narrow(1, 2, 2)",
    "M(2, 3).transpose(0, 2)",
    "cl.where(M(2, 3) > 0, M(3, 2), M(3))",
    "M(2, 3).softmax(0, dtype=cl.int64)",
])
def test_meta_raises_like_cpu(expr):
    def run(device):
        def M(*shape, dtype=cl.float32):
            return cl.ones(*shape, dtype=dtype, device=device)
        try:
            eval(expr, {"cl": cl, "M": M})  # noqa: S307
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
        return None
    cpu, meta = run("cpu"), run("meta")
    assert cpu is not None, f"{expr} should fail on cpu"
    assert meta == cpu
