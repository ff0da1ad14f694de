"""Checks for chapter 05 (normalization).

The learner's functions take numpy arrays and return numpy arrays (course_lib
tensors are accepted too).  Expected values come from the reference course_lib
(``Tensor.mean``/``var``, ``nn.functional.batch_norm``, ``layer_norm``,
``group_norm``, and autograd through the unfused composition for the backward)
or from the literals of PyTorch's fact sheet (torch 2.13.0).

Arrays are compared with a tolerance (``rtol=1e-4``, ``atol=1e-6``, so float32
answers pass).  A failure names the first output and element that differ, for
example ``running_var[1] = 2.1 (shape (2,))``, rather than printing whole arrays.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from course.checks import Case, exercise

RTOL, ATOL = 1e-4, 1e-6


# ---------------------------------------------------------------- helpers


def _cl():
    import course_lib

    return course_lib


def _as_array(value: Any) -> np.ndarray | None:
    """The learner's value as a float64 numpy array (None if it is not array-like)."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a course_lib or torch tensor
        value = value.detach().numpy()
    if isinstance(value, (np.ndarray, np.generic, list, tuple, float, int)):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        return arr
    return None


class ndarray:  # noqa: N801 - named for the failure message: "got: y[0, 1] = 0.5 (ndarray)"
    """Named arrays (a function's outputs) with a one-line repr for failure messages.

    After a failed comparison, ``where`` holds the output name and index that
    differed, and the repr shows that element (or the shape, when shapes differ).
    """

    def __init__(self, names: tuple[str, ...], values: tuple):
        self.names = names
        self.values = values
        self.where: tuple[str, Any] | None = None

    def __repr__(self) -> str:
        if self.where is None:
            name, arr = self.names[0], self.values[0]
            if isinstance(arr, str):
                return arr
            if not isinstance(arr, np.ndarray):
                return f"{name} = {type(arr).__name__}"
            return f"{name}: shape {tuple(arr.shape)}, first {_num(arr.reshape(-1)[0]) if arr.size else '-'}"
        name, index = self.where
        arr = self.values[self.names.index(name)] if name in self.names else None
        if not isinstance(arr, np.ndarray):
            return f"{name} = {type(arr).__name__ if arr is not None else 'missing'}"
        if index is None:
            return f"{name} of shape {tuple(arr.shape)}"
        idx = ", ".join(map(str, index))
        return f"{name}[{idx}] = {_num(arr[index])} (shape {tuple(arr.shape)})"


def _num(v) -> str:
    return f"{float(v):.6g}"


def _wrap(names: tuple[str, ...], got: Any) -> ndarray:
    """The learner's return value as named arrays (one name: a single array; several: a tuple)."""
    if len(names) == 1:
        return ndarray(names, (_as_array(got) if _as_array(got) is not None else got,))
    if not isinstance(got, (tuple, list)) or len(got) != len(names):
        n = len(got) if isinstance(got, (tuple, list)) else 1
        return ndarray(("result",), (f"{type(got).__name__} of {n}, not a tuple of {len(names)} arrays",))
    return ndarray(names, tuple(_as_array(g) if _as_array(g) is not None else g for g in got))


def _close(got: ndarray, want: ndarray) -> bool:
    """Same names, shapes and values (within tolerance); on a mismatch mark where, in both."""
    if got.names != want.names:  # not a tuple of the right length: its repr says so
        return False
    for name, g, w in zip(want.names, got.values, want.values):
        if not isinstance(g, np.ndarray) or g.shape != w.shape:
            got.where = want.where = (name, None)
            return False
        bad = ~np.isclose(g, w, rtol=RTOL, atol=ATOL)
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            got.where = want.where = (name, index)
            return False
    return True


def _describe_array(name: str, a: np.ndarray) -> str:
    if a.size <= 8:
        return f"{name}={np.round(a, 4).tolist()}"
    return f"{name}=<{a.shape} array>"


def _label(fn_name: str, *args: tuple[str, Any]) -> str:
    parts = []
    for name, value in args:
        if isinstance(value, np.ndarray):
            parts.append(_describe_array(name, value))
        else:
            parts.append(f"{name}={value!r}")
    return f"{fn_name}({', '.join(parts)})"


def _array_case(fn: Callable, fn_name: str, names: tuple[str, ...], args: list[tuple[str, Any]],
                expected: tuple | np.ndarray | None = None, raises: type[BaseException] | None = None) -> Case:
    """A case calling ``fn(**dict(args))`` (fresh copies of the arrays each time)."""

    def run():
        kwargs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args}
        out = fn(**kwargs)
        return out if raises is not None else _wrap(names, out)

    if raises is not None:
        return Case(_label(fn_name, *args), run, raises=raises)
    values = expected if isinstance(expected, tuple) else (expected,)
    want = ndarray(names, tuple(np.asarray(v, dtype=np.float64) for v in values))
    return Case(_label(fn_name, *args), run, want, compare=_close)


def _changed_inputs(fn: Callable, args: list[tuple[str, Any]]) -> list[str]:
    """Call ``fn(**dict(args))`` on copies; name the array arguments it changed in place."""
    kwargs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args}
    fn(**kwargs)
    return [f"{k} was changed in place" for k, v in args
            if isinstance(v, np.ndarray) and not np.array_equal(kwargs[k], v)]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _data(seed: int, shape: tuple, loc: float = 1.5, scale: float = 2.0) -> np.ndarray:
    """Test data with a non-zero mean and a non-unit spread (so a missing centring or scaling shows)."""
    return _rng(seed).normal(loc, scale, size=shape)


def _t(a: np.ndarray, requires_grad: bool = False):
    return _cl().tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


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
def _moments(moments):
    out = []
    for seed, shape, axes in _MOMENTS:
        x = _data(seed, shape)
        xt = _t(x)
        mean = _np(xt.mean(axes, keepdim=True))
        var = _np(xt.var(axes, unbiased=False, keepdim=True))
        out.append(_array_case(moments, "moments", ("mean", "var"), [("x", x), ("axes", axes)], (mean, var)))
    return out


# ---------------------------------------------------------------- 05.2 batch_norm_forward

#: fact sheet (torch 2.13.0): BatchNorm1d(2) on this x, one training step
_FACT_X = np.array([[1., 2.], [3., 6.], [5., 10.], [7., 2.]])
_FACT_Y = np.array([[-1.34163940, -0.90453357], [-0.44721314, 0.30151123],
                    [0.44721314, 1.50755596], [1.34163940, -0.90453357]])
_FACT_RM = np.array([0.4, 0.5])
_FACT_RV = np.array([1.5666666, 2.3666668])


def _bn_reference(x, running_mean, running_var, momentum, eps, training):
    F = _cl().nn.functional
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


@exercise("05.2", title="batch_norm_forward", points=3,
          hint="reduce over every dim but 1: axes = (0, 2, 3, ...). Training: normalise with the batch mean and "
               "the biased variance; new running = (1 - momentum) * running + momentum * batch statistic, with "
               "the unbiased variance (n / (n - 1) times the biased one) for running_var; ValueError if n == 1. "
               "Eval: normalise with the running statistics and return them unchanged.")
def _batch_norm_forward(batch_norm_forward):
    f, name = batch_norm_forward, "batch_norm_forward"
    zeros, ones = np.zeros(2), np.ones(2)
    fact = [("x", _FACT_X), ("running_mean", zeros), ("running_var", ones), ("momentum", 0.1), ("eps", 1e-5),
            ("training", True)]
    out = [_array_case(f, name, _BN_NAMES, fact, (_FACT_Y, _FACT_RM, _FACT_RV))]
    for seed, shape, momentum, eps, training in _BN:
        C = shape[1]
        x = _data(seed, shape)
        rng = _rng(seed + 100)
        rm, rv = rng.normal(0, 1, C), rng.uniform(0.5, 2.0, C)
        args = [("x", x), ("running_mean", rm), ("running_var", rv), ("momentum", momentum), ("eps", eps),
                ("training", training)]
        out.append(_array_case(f, name, _BN_NAMES, args, _bn_reference(x, rm, rv, momentum, eps, training)))
    # the inputs must come back untouched: new buffers are returned, not written into running_mean/var
    for seed, shape, training in [(22, (6, 3), True), (23, (4, 2, 3), False)]:
        C = shape[1]
        rng = _rng(seed + 100)
        args = [("x", _data(seed, shape)), ("running_mean", rng.normal(0, 1, C)),
                ("running_var", rng.uniform(0.5, 2.0, C)), ("momentum", 0.1), ("eps", 1e-5), ("training", training)]
        out.append(Case(_label(name, *args) + ": the inputs afterwards",
                        lambda args=args: _changed_inputs(f, args), []))
    # one value per channel: PyTorch refuses to train on it
    for shape in [(1, 3), (1, 2, 1, 1)]:
        C = shape[1]
        args = [("x", _data(21, shape)), ("running_mean", np.zeros(C)), ("running_var", np.ones(C)),
                ("momentum", 0.1), ("eps", 1e-5), ("training", True)]
        out.append(_array_case(f, name, _BN_NAMES, args, raises=ValueError))
    return out


# ---------------------------------------------------------------- 05.3 batch_norm_backward


def _unfused_grads(x, dy, gamma, eps):
    """(dx, dgamma, dbeta) by course_lib autograd through batch norm written with primitive ops."""
    nd = x.ndim
    axes = (0,) + tuple(range(2, nd))
    shp = (1, -1) + (1,) * (nd - 2)
    xt, g = _t(x, True), _t(gamma, True)
    b = _cl().zeros(x.shape[1], dtype=_cl().float64, requires_grad=True)
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


@exercise("05.3", title="batch_norm_backward", points=3,
          hint="recompute mean, invstd = 1/sqrt(biased var + eps) and xhat over axes = (0, 2, 3, ...); "
               "dxhat = dy * gamma (broadcast over dim 1); dx = invstd * (dxhat - mean(dxhat) - xhat * "
               "mean(dxhat * xhat)) with keepdims; dgamma = sum(dy * xhat), dbeta = sum(dy) over the same axes.")
def _batch_norm_backward(batch_norm_backward):
    out = []
    for seed, shape, eps, kind in _BWD:
        rng = _rng(seed + 100)  # not seed: dy drawn from x's stream would be a linear function of x
        C = shape[1]
        x = _data(seed, shape)
        dy = np.full(shape, 0.7) if kind == "constant dy" else rng.normal(0, 1, shape)
        gamma = np.ones(C) if kind == "ones" else rng.normal(1, 0.5, C)
        if kind == "with zero":
            gamma[1] = 0.0
        args = [("x", x), ("dy", dy), ("gamma", gamma), ("eps", eps)]
        out.append(_array_case(batch_norm_backward, "batch_norm_backward", ("dx", "dgamma", "dbeta"), args,
                               _unfused_grads(x, dy, gamma, eps)))
    return out


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


@exercise("05.4", title="layer_norm", points=2,
          hint="an int normalized_shape means (n,); reduce over the last len(normalized_shape) axes of each sample "
               "(biased variance, eps inside the square root), then y * weight + bias (broadcast from the right). "
               "RuntimeError when x.shape does not end with normalized_shape.")
def _layer_norm(layer_norm):
    F = _cl().nn.functional
    f, name = layer_norm, "layer_norm"
    base = [("x", _LN_X), ("normalized_shape", (3,)), ("weight", None), ("bias", None), ("eps", 1e-5)]
    out = [_array_case(f, name, ("y",), base, _LN_Y)]
    for seed, shape, ns, affine, eps in _LN:
        rng = _rng(seed + 100)
        x = _data(seed, shape)
        nst = (ns,) if isinstance(ns, int) else ns
        w = rng.normal(1, 0.5, nst) if affine else None
        b = rng.normal(0, 1, nst) if affine else None
        expected = _np(F.layer_norm(_t(x), nst, None if w is None else _t(w), None if b is None else _t(b), eps))
        out.append(_array_case(f, name, ("y",), [("x", x), ("normalized_shape", ns), ("weight", w), ("bias", b),
                                                 ("eps", eps)], expected))
    for shape, ns in [((2, 3), (4,)), ((2, 3, 4), (3,))]:
        out.append(_array_case(f, name, ("y",), [("x", _data(48, shape)), ("normalized_shape", ns),
                                                 ("weight", None), ("bias", None), ("eps", 1e-5)],
                               raises=RuntimeError))
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


@exercise("05.5", title="group_norm", points=2,
          hint="RuntimeError unless C % num_groups == 0. Reshape x to (N, num_groups, -1): each row of the last "
               "axis is one group (C/G consecutive channels and their positions); normalise it (biased variance), "
               "reshape back to x.shape, then apply weight/bias per channel: shape (1, C, 1, 1, ...).")
def _group_norm(group_norm):
    F = _cl().nn.functional
    f, name = group_norm, "group_norm"
    out = []
    for seed, shape, groups, affine, eps in _GN:
        rng = _rng(seed + 100)
        C = shape[1]
        x = _data(seed, shape)
        w = rng.normal(1, 0.5, C) if affine else None
        b = rng.normal(0, 1, C) if affine else None
        expected = _np(F.group_norm(_t(x), groups, None if w is None else _t(w), None if b is None else _t(b), eps))
        out.append(_array_case(f, name, ("y",), [("x", x), ("num_groups", groups), ("weight", w), ("bias", b),
                                                 ("eps", eps)], expected))
    out.append(_array_case(f, name, ("y",), [("x", _data(58, (2, 4, 3))), ("num_groups", 3), ("weight", None),
                                             ("bias", None), ("eps", 1e-5)], raises=RuntimeError))
    return out
