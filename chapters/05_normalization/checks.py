"""Checks for chapter 05 (normalization).

The learner's functions take numpy arrays and return numpy arrays (course_lib tensors are accepted
too). Expected values come from course_lib's library, computed in the grader (``Tensor.mean``/``var``,
``nn.functional.batch_norm``, ``layer_norm``, ``group_norm``, and autograd through the unfused
composition for the backward) or from the literals of PyTorch's fact sheet (torch 2.13.0). Each
exercise mixes fixed cases with cases drawn from ``rng``.

Arrays are compared with a tolerance (``rtol=1e-4``, ``atol=1e-6``, so float32 answers pass). A
failure names the first output and element that differ, for example ``running_var[1]: expected 1.9,
got 2.1 (shape (2,))``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import course_lib as cl
from course.checks import call, exercise, probe
from course_lib import autograd as _autograd
from course_lib.autograd import engine as _engine
from course_lib.nn import functional as F

RTOL, ATOL = 1e-4, 1e-6


# ---------------------------------------------------------------- helpers


def _as_array(value: Any) -> np.ndarray | None:
    """The learner's value as a float64 numpy array (None if it is not array-like)."""
    if isinstance(value, cl.Tensor):
        value = value.detach().numpy()
    if isinstance(value, (np.ndarray, np.generic, list, tuple, float, int)) and not isinstance(value, bool):
        try:
            return np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return None
    return None


def _arrays(names: tuple[str, ...]) -> Callable[[Any, Any], bool | str]:
    """Compare the learner's output (one array, or a tuple of len(names)) with the expected arrays.

    Returns True, or which output and element differ first.
    """
    def compare(got: Any, expected: tuple) -> bool | str:
        if len(names) == 1:
            got = (got,)
        elif not isinstance(got, (tuple, list)) or len(got) != len(names):
            n = len(got) if isinstance(got, (tuple, list)) else 1
            return f"{type(got).__name__} of {n}, not a tuple of {len(names)} arrays ({', '.join(names)})"
        for name, g, w in zip(names, got, expected):
            a = _as_array(g)
            if a is None:
                return f"{name} is a {type(g).__name__}, not an array"
            if a.shape != w.shape:
                return f"{name} has shape {a.shape}, expected {w.shape}"
            bad = ~np.isclose(a, w, rtol=RTOL, atol=ATOL)
            if bad.any():
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                at = f"[{', '.join(map(str, index))}]" if index else ""
                return f"{name}{at}: expected {float(w[index]):.6g}, got {float(a[index]):.6g} (shape {w.shape})"
        return True
    return compare


def _label(fn_name: str, args: dict) -> str:
    parts = []
    for name, value in args.items():
        if isinstance(value, np.ndarray):
            parts.append(f"{name}={np.round(value, 4).tolist()}" if value.size <= 8 else
                         f"{name}=<{value.shape} array>")
        else:
            parts.append(f"{name}={value!r}")
    return f"{fn_name}({', '.join(parts)})"


def _case(fn_name: str, names: tuple[str, ...], args: dict, expected: tuple | np.ndarray | None = None,
          raises: type[BaseException] | None = None):
    """A trial calling the learner's function with `args` as keyword arguments."""
    label = _label(fn_name, args)
    if raises is not None:
        return call(raises=raises, label=label, **args)
    values = expected if isinstance(expected, tuple) else (expected,)
    return call(expected=tuple(np.asarray(v, dtype=np.float64) for v in values), compare=_arrays(names),
                label=label, **args)


def _data(rng, shape: tuple, loc: float = 1.5, scale: float = 2.0) -> np.ndarray:
    """Test data with a non-zero mean and a non-unit spread (so a missing centring or scaling shows)."""
    return rng.normal(loc, scale, size=shape)


def _shape(rng, min_dims: int = 2, max_dims: int = 4, low: int = 1, high: int = 5) -> tuple:
    return tuple(int(n) for n in rng.integers(low, high + 1, size=int(rng.integers(min_dims, max_dims + 1))))


def _t(a: np.ndarray, requires_grad: bool = False):
    return cl.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _np(t) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


# ---------------------------------------------------------------- 05.1 moments

_MOMENTS = [
    (1, (8, 3), (0,)),
    (2, (8, 3), (1,)),
    (3, (4, 3, 2, 2), (0, 2, 3)),
    (4, (4, 3, 2, 2), (1, 2, 3)),
    (5, (4, 3, 2, 2), (2, 3)),
    (6, (2, 5, 7), (-1,)),
    (7, (2, 5, 7), (0, -1)),
    (8, (3, 4), (0, 1)),
    (9, (6,), (0,)),
]


@exercise("05.1", title="moments", points=1,
          hint="x.mean(axis=axes, keepdims=True); the variance is the mean of (x - mean)**2 over the same axes "
               "(divide by n, not n - 1). Keep the reduced dims as size 1.")
def _moments(rng):
    table = [(_data(np.random.default_rng(seed), shape), axes) for seed, shape, axes in _MOMENTS]
    for _ in range(3):  # a random shape, some of its axes (some negative), in a random order
        shape = _shape(rng, 1, 4, high=4)
        picked = rng.permutation(len(shape))[:int(rng.integers(1, len(shape) + 1))]
        axes = tuple(int(a) - len(shape) if rng.random() < 0.3 else int(a) for a in picked)
        table.append((_data(rng, shape), axes))
    out = []
    for x, axes in table:
        xt = _t(x)
        mean = _np(xt.mean(axes, keepdim=True))
        var = _np(xt.var(axes, unbiased=False, keepdim=True))
        out.append(_case("moments", ("mean", "var"), {"x": x, "axes": axes}, (mean, var)))
    return out


# ---------------------------------------------------------------- 05.2 batch_norm_forward

#: fact sheet (torch 2.13.0): BatchNorm1d(2) on this x, one training step
_FACT_X = np.array([[1., 2.], [3., 6.], [5., 10.], [7., 2.]])
_FACT_Y = np.array([[-1.34163940, -0.90453357], [-0.44721314, 0.30151123],
                    [0.44721314, 1.50755596], [1.34163940, -0.90453357]])
_FACT_RM = np.array([0.4, 0.5])
_FACT_RV = np.array([1.5666666, 2.3666668])


def _bn_reference(x, running_mean, running_var, momentum, eps, training):
    rm, rv = _t(running_mean), _t(running_var)
    y = F.batch_norm(_t(x), rm, rv, None, None, training, momentum, eps)
    return _np(y), _np(rm), _np(rv)


_BN = [
    # seed, shape, momentum, eps, training
    (11, (6, 3), 0.1, 1e-5, True),
    (12, (4, 3, 5), 0.1, 1e-5, True),
    (13, (5, 2, 3, 3), 0.1, 1e-5, True),
    (14, (2, 4), 0.1, 1e-5, True),
    (15, (5, 2, 3, 3), 0.5, 1e-5, True),
    (16, (5, 2, 3, 3), 0.1, 0.5, True),
    (17, (6, 3), 0.1, 1e-5, False),
    (18, (5, 2, 3, 3), 0.1, 0.5, False),
    (19, (1, 3), 0.1, 1e-5, False),
    (20, (1, 2, 4), 0.1, 1e-5, True),
]

_BN_NAMES = ("y", "running_mean", "running_var")


def _bn_args(rng, shape, momentum=0.1, eps=1e-5, training=True) -> dict:
    C = shape[1]
    return {"x": _data(rng, shape), "running_mean": rng.normal(0, 1, C), "running_var": rng.uniform(0.5, 2.0, C),
            "momentum": momentum, "eps": eps, "training": training}


def _changed_inputs(batch_norm_forward, **args) -> list[str]:
    """Probe: call the function; name the array arguments it changed in place."""
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    batch_norm_forward(**args)
    return [f"{k} was changed in place" for k, v in before.items() if not np.array_equal(args[k], v)]


@exercise("05.2", title="batch_norm_forward", points=3,
          hint="reduce over every dim but 1: axes = (0, 2, 3, ...). Training: normalise with the batch mean and "
               "the biased variance; new running = (1 - momentum) * running + momentum * batch statistic, with "
               "the unbiased variance (n / (n - 1) times the biased one) for running_var; ValueError if n == 1. "
               "Eval: normalise with the running statistics and return them unchanged.")
def _batch_norm_forward(rng):
    name = "batch_norm_forward"
    fact = {"x": _FACT_X, "running_mean": np.zeros(2), "running_var": np.ones(2), "momentum": 0.1, "eps": 1e-5,
            "training": True}
    out = [_case(name, _BN_NAMES, fact, (_FACT_Y, _FACT_RM, _FACT_RV))]
    table = [_bn_args(np.random.default_rng(seed), shape, momentum, eps, training)
             for seed, shape, momentum, eps, training in _BN]
    for _ in range(3):
        shape = _shape(rng, 2, 4)
        shape = (shape[0] + 1,) + shape[1:]  # at least 2 values per channel
        table.append(_bn_args(rng, shape, round(float(rng.uniform(0.05, 0.9)), 2), float(rng.choice([1e-5, 0.1])),
                              bool(rng.integers(0, 2))))
    for args in table:
        out.append(_case(name, _BN_NAMES, args, _bn_reference(**args)))
    # the inputs must come back untouched: new buffers are returned, not written into running_mean/var
    for args in [_bn_args(np.random.default_rng(22), (6, 3)),
                 _bn_args(np.random.default_rng(23), (4, 2, 3), training=False),
                 _bn_args(rng, (int(rng.integers(2, 6)),) + _shape(rng, 1, 3), training=True)]:
        out.append(probe(_changed_inputs, expected=[], label=_label(name, args) + ": the inputs afterwards", **args))
    # one value per channel: PyTorch refuses to train on it
    for shape in [(1, 3), (1, 2, 1, 1), (1, int(rng.integers(1, 5)))]:
        C = shape[1]
        args = {"x": _data(rng, shape), "running_mean": np.zeros(C), "running_var": np.ones(C), "momentum": 0.1,
                "eps": 1e-5, "training": True}
        out.append(_case(name, _BN_NAMES, args, raises=ValueError))
    return out


# ---------------------------------------------------------------- 05.3 batch_norm_backward


def _unfused_grads(x, dy, gamma, eps):
    """(dx, dgamma, dbeta) by course_lib autograd through batch norm written with primitive ops."""
    nd = x.ndim
    axes = (0,) + tuple(range(2, nd))
    shp = (1, -1) + (1,) * (nd - 2)
    xt, g = _t(x, True), _t(gamma, True)
    b = cl.zeros(x.shape[1], dtype=cl.float64, requires_grad=True)
    mean = xt.mean(axes, keepdim=True)
    var = ((xt - mean) ** 2).mean(axes, keepdim=True)
    y = (xt - mean) / (var + eps).sqrt() * g.reshape(shp) + b.reshape(shp)
    y.backward(_t(dy))
    return _np(xt.grad), _np(g.grad), _np(b.grad)


_BWD = [
    # seed, shape, eps, gamma kind
    (31, (6, 3), 1e-5, "random"),
    (32, (4, 3, 5), 1e-5, "random"),
    (33, (5, 2, 3, 3), 1e-5, "random"),
    (34, (2, 4), 1e-5, "random"),
    (35, (5, 2, 3, 3), 0.5, "random"),
    (36, (8, 3), 1e-5, "ones"),
    (37, (4, 3, 2, 2), 1e-5, "with zero"),
    (38, (6, 3), 1e-5, "constant dy"),
]


def _bwd_args(x_rng, rng, shape, eps, kind) -> dict:
    C = shape[1]
    x = _data(x_rng, shape)
    dy = np.full(shape, 0.7) if kind == "constant dy" else rng.normal(0, 1, shape)
    gamma = np.ones(C) if kind == "ones" else rng.normal(1, 0.5, C)
    if kind == "with zero":
        gamma[min(1, C - 1)] = 0.0
    return {"x": x, "dy": dy, "gamma": gamma, "eps": eps}


@exercise("05.3", title="batch_norm_backward", points=3,
          hint="recompute mean, invstd = 1/sqrt(biased var + eps) and xhat over axes = (0, 2, 3, ...); "
               "dxhat = dy * gamma (broadcast over dim 1); dx = invstd * (dxhat - mean(dxhat) - xhat * "
               "mean(dxhat * xhat)) with keepdims; dgamma = sum(dy * xhat), dbeta = sum(dy) over the same axes.",
          forbid={"Tensor.backward": cl.Tensor.backward, "autograd.backward": _autograd.backward,
                  "autograd.grad": _autograd.grad, "the autograd engine": _engine.run_backward})
def _batch_norm_backward(rng):
    # dy is drawn from its own stream: drawn from x's, it would be a linear function of x
    table = [_bwd_args(np.random.default_rng(seed), np.random.default_rng(seed + 100), shape, eps, kind)
             for seed, shape, eps, kind in _BWD]
    for kind in ("random", "random", "with zero"):
        shape = _shape(rng, 2, 4)
        shape = (shape[0] + 1,) + shape[1:]
        table.append(_bwd_args(rng, rng, shape, float(rng.choice([1e-5, 0.5])), kind))
    return [_case("batch_norm_backward", ("dx", "dgamma", "dbeta"), args, _unfused_grads(**args)) for args in table]


# ---------------------------------------------------------------- 05.4 layer_norm

#: fact sheet (torch 2.13.0): LayerNorm(3) on [[1, 2, 4], [0, 0, 3]]
_LN_X = np.array([[1., 2., 4.], [0., 0., 3.]])
_LN_Y = np.array([[-1.06904137, -0.26726028, 1.33630180], [-0.70710498, -0.70710498, 1.41420996]])

_LN = [
    # seed, shape, normalized_shape, affine, eps
    (41, (4, 6), (6,), False, 1e-5),
    (42, (2, 3, 5), (5,), True, 1e-5),
    (43, (2, 3, 4), (3, 4), True, 1e-5),
    (44, (2, 3, 4), (2, 3, 4), False, 1e-5),
    (45, (3, 2, 2, 5), (2, 5), True, 0.5),
    (46, (7,), (7,), True, 1e-5),
    (47, (2, 3, 5), 5, False, 1e-5),
]


def _ln_args(rng, shape, ns, affine, eps) -> dict:
    x = _data(rng, shape)
    nst = (ns,) if isinstance(ns, int) else ns
    w = rng.normal(1, 0.5, nst) if affine else None
    b = rng.normal(0, 1, nst) if affine else None
    return {"x": x, "normalized_shape": ns, "weight": w, "bias": b, "eps": eps}


def _ln_reference(x, normalized_shape, weight, bias, eps) -> np.ndarray:
    nst = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    return _np(F.layer_norm(_t(x), nst, None if weight is None else _t(weight), None if bias is None else _t(bias),
                            eps))


@exercise("05.4", title="layer_norm", points=2,
          hint="an int normalized_shape means (n,); reduce over the last len(normalized_shape) axes of each sample "
               "(biased variance, eps inside the square root), then y * weight + bias (broadcast from the right). "
               "RuntimeError when x.shape does not end with normalized_shape.")
def _layer_norm(rng):
    name = "layer_norm"
    base = {"x": _LN_X, "normalized_shape": (3,), "weight": None, "bias": None, "eps": 1e-5}
    out = [_case(name, ("y",), base, _LN_Y)]
    table = [_ln_args(np.random.default_rng(seed), shape, ns, affine, eps) for seed, shape, ns, affine, eps in _LN]
    for _ in range(3):
        shape = _shape(rng, 2, 4)
        k = int(rng.integers(1, len(shape) + 1))
        ns = shape[-k:] if k > 1 or rng.random() < 0.5 else shape[-1]
        table.append(_ln_args(rng, shape, tuple(ns) if isinstance(ns, tuple) else ns, bool(rng.integers(0, 2)),
                              float(rng.choice([1e-5, 0.5]))))
    out += [_case(name, ("y",), args, _ln_reference(**args)) for args in table]
    bad = [((2, 3), (4,)), ((2, 3, 4), (3,))]
    shape = _shape(rng, 2, 3, low=2)
    bad.append((shape, (shape[-1] + int(rng.integers(1, 3)),)))
    for shape, ns in bad:
        out.append(_case(name, ("y",), {"x": _data(rng, shape), "normalized_shape": ns, "weight": None, "bias": None,
                                        "eps": 1e-5}, raises=RuntimeError))
    return out


# ---------------------------------------------------------------- 05.5 group_norm

_GN = [
    # seed, shape, groups, affine, eps
    (51, (2, 6, 3, 3), 3, False, 1e-5),
    (52, (2, 6, 3, 3), 2, True, 1e-5),
    (53, (3, 4, 5), 2, True, 1e-5),
    (54, (2, 6, 2, 2), 1, False, 1e-5),
    (55, (2, 6, 2, 2), 6, False, 1e-5),
    (56, (4, 6), 3, True, 1e-5),
    (57, (2, 4, 2, 3), 2, True, 0.5),
]


def _gn_args(rng, shape, groups, affine, eps) -> dict:
    C = shape[1]
    x = _data(rng, shape)
    w = rng.normal(1, 0.5, C) if affine else None
    b = rng.normal(0, 1, C) if affine else None
    return {"x": x, "num_groups": groups, "weight": w, "bias": b, "eps": eps}


def _gn_reference(x, num_groups, weight, bias, eps) -> np.ndarray:
    return _np(F.group_norm(_t(x), num_groups, None if weight is None else _t(weight),
                            None if bias is None else _t(bias), eps))


@exercise("05.5", title="group_norm", points=2,
          hint="RuntimeError unless C % num_groups == 0. Reshape x to (N, num_groups, -1): each row of the last "
               "axis is one group (C/G consecutive channels and their positions); normalise it (biased variance), "
               "reshape back to x.shape, then apply weight/bias per channel: shape (1, C, 1, 1, ...).")
def _group_norm(rng):
    name = "group_norm"
    table = [_gn_args(np.random.default_rng(seed), shape, groups, affine, eps)
             for seed, shape, groups, affine, eps in _GN]
    for _ in range(3):  # C a multiple of a random group count, 2 to 4 groups of 1 to 3 channels
        groups = int(rng.integers(2, 5))
        shape = (int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))) + _shape(rng, 0, 2, high=4)
        table.append(_gn_args(rng, shape, groups, bool(rng.integers(0, 2)), 1e-5))
    out = [_case(name, ("y",), args, _gn_reference(**args)) for args in table]
    groups = int(rng.integers(2, 5))
    for shape, g in [((2, 4, 3), 3), ((2, groups * 2 + 1, 2), groups)]:
        out.append(_case(name, ("y",), {"x": _data(rng, shape), "num_groups": g, "weight": None, "bias": None,
                                        "eps": 1e-5}, raises=RuntimeError))
    return out
