"""Random chains of view ops, for hypothesis: one recipe applied to course_lib, torch and numpy.

``chain_steps(data, shape)`` draws a list of ``Step``s, each valid for the shape it
receives.  A step applies to a course_lib or torch tensor (``step.tensor(x)``,
the same method calls in both) and to a numpy array (``step.numpy(a, root)``,
the same computation written with numpy; ``root`` is the 1-D array under every
view, for ``as_strided``).  ``step.is_view`` says whether the step must return
a view (shared storage, ``_base`` set); reshape-like steps may copy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided, sliding_window_view


@dataclass
class Step:
    text: str                       # readable form: ".transpose(0, 2)"
    tensor: Callable                # x -> result, for course_lib and torch alike
    numpy: Callable                 # (a, root) -> numpy result
    shape: tuple                    # the result's shape
    is_view: bool = True            # must the result share storage (and be a view)?
    may_copy: bool = False          # reshape/flatten: view when possible, else a copy
    may_be_self: bool = False       # flatten of one dim returns its input itself

    def __repr__(self):
        return self.text


def _np_squeeze(a, dims):
    keep = tuple(d for d in dims if a.shape[d] == 1)
    return np.squeeze(a, axis=keep) if keep else a


def _np_unfold(a, d, size, step):
    if a.ndim == 0:
        return a.reshape(1)
    w = sliding_window_view(a, size, axis=d)
    idx = [slice(None)] * w.ndim
    idx[d] = slice(None, None, step)
    return w[tuple(idx)]


def _factorizations(n: int, parts: int, draw) -> tuple:
    """A random shape with ``parts`` dims and ``n`` elements (n may be 0)."""
    if parts == 0:
        return ()
    dims = []
    rest = n
    for _ in range(parts - 1):
        if rest == 0:
            dims.append(draw(st.integers(0, 3)))
            continue
        divs = [k for k in range(1, rest + 1) if rest % k == 0]
        k = draw(st.sampled_from(divs))
        dims.append(k)
        rest //= k
    dims.append(rest if n else (0 if not any(d == 0 for d in dims) else draw(st.integers(0, 3))))
    order = draw(st.permutations(range(parts)))
    return tuple(dims[i] for i in order)


def draw_step(draw, shape: tuple, storage_size: int) -> Step:
    nd = len(shape)
    n = math.prod(shape)
    kinds = ["view", "reshape", "flatten", "unsqueeze", "squeeze", "expand", "transpose", "permute", "slice",
             "index", "none_ellipsis", "as_strided", "detach", "alias", "movedim"]
    if nd >= 1:
        kinds += ["narrow", "select", "unbind", "split", "chunk", "unfold", "unflatten", "int_index"]
    if nd <= 2:
        kinds.append("t")
    if nd >= 2:
        kinds += ["diagonal", "mT"]
    kind = draw(st.sampled_from(kinds))
    dim = (lambda: draw(st.integers(-nd, nd - 1))) if nd else (lambda: draw(st.sampled_from([0, -1])))
    pos = lambda d: d % nd if nd else 0  # noqa: E731

    if kind in ("view", "reshape"):
        new = _factorizations(n, draw(st.integers(0, 4)) if n == 1 else draw(st.integers(1, 4)), draw)
        if n == 1 and not new:
            new = ()
        spec = list(new)
        if spec and n and draw(st.booleans()):
            spec[draw(st.integers(0, len(spec) - 1))] = -1
        spec = tuple(spec)
        return Step(f".{kind}({spec})", lambda x, s=spec, k=kind: getattr(x, k)(s),
                    lambda a, r, s=new: a.reshape(s), new, is_view=(kind == "view"), may_copy=(kind == "reshape"))
    if kind == "flatten":
        if nd == 0:
            return Step(".flatten()", lambda x: x.flatten(), lambda a, r: a.reshape(1), (1,), may_copy=True)
        s, e = sorted((pos(dim()), pos(dim())))
        new = shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]
        return Step(f".flatten({s}, {e})", lambda x: x.flatten(s, e), lambda a, r: a.reshape(new), new,
                    may_copy=True, may_be_self=(s == e))
    if kind == "unflatten":
        d = pos(dim())
        sizes = _factorizations(shape[d], draw(st.integers(1, 3)), draw)
        new = shape[:d] + sizes + shape[d + 1:]
        return Step(f".unflatten({d}, {sizes})", lambda x: x.unflatten(d, sizes), lambda a, r: a.reshape(new), new)
    if kind == "unsqueeze":
        d = draw(st.integers(-nd - 1, nd))
        p = d % (nd + 1)
        new = shape[:p] + (1,) + shape[p:]
        return Step(f".unsqueeze({d})", lambda x: x.unsqueeze(d), lambda a, r: np.expand_dims(a, p), new)
    if kind == "squeeze":
        if nd == 0 or draw(st.booleans()):
            new = tuple(s for s in shape if s != 1)
            return Step(".squeeze()", lambda x: x.squeeze(), lambda a, r: _np_squeeze(a, tuple(range(a.ndim))), new)
        d = dim()
        p = pos(d)
        new = shape[:p] + shape[p + 1:] if shape[p] == 1 else shape
        return Step(f".squeeze({d})", lambda x: x.squeeze(d), lambda a, r: _np_squeeze(a, (p,)), new)
    if kind == "expand":
        lead = draw(st.integers(0, 2))
        size = [draw(st.integers(0, 3)) for _ in range(lead)]
        for s in shape:
            size.append(draw(st.sampled_from([s, -1] + ([0, 2, 3] if s == 1 else []))))
        size = tuple(size)
        new = tuple(size[i] if size[i] != -1 else shape[i - lead] for i in range(len(size)))
        return Step(f".expand({size})", lambda x: x.expand(size), lambda a, r: np.broadcast_to(a, new), new)
    if kind == "transpose":
        a, b = dim(), dim()
        if nd == 0:
            return Step(f".transpose({a}, {b})", lambda x: x.transpose(a, b), lambda arr, r: arr, ())
        pa, pb = pos(a), pos(b)
        new = list(shape)
        new[pa], new[pb] = new[pb], new[pa]
        return Step(f".transpose({a}, {b})", lambda x: x.transpose(a, b), lambda arr, r: np.swapaxes(arr, pa, pb),
                    tuple(new))
    if kind == "t":
        new = shape[::-1]
        return Step(".t()", lambda x: x.t(), lambda a, r: a.T, new)
    if kind == "mT":
        new = shape[:-2] + (shape[-1], shape[-2])
        return Step(".mT", lambda x: x.mT, lambda a, r: np.swapaxes(a, -1, -2), new)
    if kind == "permute":
        perm = tuple(draw(st.permutations(range(nd))))
        return Step(f".permute{perm}", lambda x: x.permute(*perm) if perm else x.permute(()),
                    lambda a, r: np.transpose(a, perm), tuple(shape[p] for p in perm))
    if kind == "movedim":
        if nd == 0:
            return Step(".movedim(0, 0)", lambda x: x.movedim(0, 0), lambda a, r: a, ())
        s, d = pos(dim()), pos(dim())
        perm = [i for i in range(nd) if i != s]
        perm.insert(d, s)
        return Step(f".movedim({s}, {d})", lambda x: x.movedim(s, d), lambda a, r: np.moveaxis(a, s, d),
                    tuple(shape[p] for p in perm))
    if kind == "narrow":
        d = dim()
        p = pos(d)
        start = draw(st.integers(0, shape[p]))
        length = draw(st.integers(0, shape[p] - start))
        new = shape[:p] + (length,) + shape[p + 1:]
        idx = (slice(None),) * p + (slice(start, start + length),)
        return Step(f".narrow({d}, {start}, {length})", lambda x: x.narrow(d, start, length),
                    lambda a, r: a[idx], new)
    if kind in ("select", "int_index"):
        p = pos(dim())
        if shape[p] == 0:
            return draw_step(draw, shape, storage_size)
        i = draw(st.integers(-shape[p], shape[p] - 1))
        new = shape[:p] + shape[p + 1:]
        idx = (slice(None),) * p + (i,)
        if kind == "select":
            return Step(f".select({p}, {i})", lambda x: x.select(p, i), lambda a, r: a[idx], new)
        text = "[" + ", ".join([":"] * p + [str(i)]) + "]"
        return Step(text, lambda x: x[idx], lambda a, r: a[idx], new)
    if kind == "slice":
        if nd == 0:
            return Step("[...]", lambda x: x[...], lambda a, r: a[...], ())
        idx = []
        new = []
        for s in shape[:draw(st.integers(1, nd))]:
            start = draw(st.one_of(st.none(), st.integers(-s - 2, s + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-s - 2, s + 2)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            sl = slice(start, stop, step)
            idx.append(sl)
            new.append(len(range(*sl.indices(s))))
        new = tuple(new) + shape[len(idx):]
        idx = tuple(idx)
        text = "[" + ", ".join(f"{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}"
                               f"{'' if s.step is None else ':' + str(s.step)}" for s in idx) + "]"
        return Step(text, lambda x: x[idx], lambda a, r: a[idx], new)
    if kind == "none_ellipsis":
        choice = draw(st.sampled_from(["none", "ell_none", "none_ell", "ell"]))
        idx = {"none": (None,), "ell_none": (Ellipsis, None), "none_ell": (None, Ellipsis), "ell": (Ellipsis,)}[choice]
        new = {"none": (1,) + shape, "ell_none": shape + (1,), "none_ell": (1,) + shape, "ell": shape}[choice]
        return Step(f"[{idx}]", lambda x: x[idx], lambda a, r: a[idx], new)
    if kind == "index":
        # several basic indices at once: ints, slices, None, ...
        items, new = [], []
        d = 0
        used_ellipsis = False
        while d < nd and draw(st.booleans()):
            k = draw(st.sampled_from(["int", "slice", "none"] + ([] if used_ellipsis else ["ellipsis"])))
            if k == "int" and shape[d] > 0:
                i = draw(st.integers(-shape[d], shape[d] - 1))
                items.append(i)
                d += 1
            elif k == "slice":
                bound = st.one_of(st.none(), st.integers(-4, 4))
                sl = slice(draw(bound), draw(bound), draw(st.one_of(st.none(), st.integers(1, 3))))
                items.append(sl)
                new.append(len(range(*sl.indices(shape[d]))))
                d += 1
            elif k == "none":
                items.append(None)
                new.append(1)
            elif k == "ellipsis":
                used_ellipsis = True
                items.append(Ellipsis)
                break
        idx = tuple(items)
        return Step(f"[{idx}]", lambda x: x[idx], lambda a, r: a[idx], np.empty(shape, dtype=np.bool_)[idx].shape)
    if kind == "unbind":
        p = pos(dim())
        if shape[p] == 0:
            return draw_step(draw, shape, storage_size)
        i = draw(st.integers(0, shape[p] - 1))
        idx = (slice(None),) * p + (i,)
        return Step(f".unbind({p})[{i}]", lambda x: x.unbind(p)[i], lambda a, r: a[idx], shape[:p] + shape[p + 1:])
    if kind in ("split", "chunk"):
        p = pos(dim())
        size = shape[p]
        if kind == "split":
            k = draw(st.integers(1, max(size, 1)))
            pieces = list(range(0, size, k)) or [0]
            j = draw(st.integers(0, len(pieces) - 1))
            start, length = pieces[j], min(k, size - pieces[j])
            text, fn = f".split({k}, {p})[{j}]", (lambda x: x.split(k, p)[j])
        else:
            c = draw(st.integers(1, 4))
            k = max(-(-size // c), 1) if size else 0
            pieces = list(range(0, size, k)) if size else [0] * c
            j = draw(st.integers(0, len(pieces) - 1))
            start, length = (pieces[j], min(k, size - pieces[j])) if size else (0, 0)
            text, fn = f".chunk({c}, {p})[{j}]", (lambda x: x.chunk(c, p)[j])
        idx = (slice(None),) * p + (slice(start, start + length),)
        return Step(text, fn, lambda a, r: a[idx], shape[:p] + (length,) + shape[p + 1:])
    if kind == "diagonal":
        d1 = pos(dim())
        d2 = pos(dim())
        if d1 == d2:
            return draw_step(draw, shape, storage_size)
        off = draw(st.integers(-3, 3))
        n1, n2 = shape[d1], shape[d2]
        length = max(min(n1, n2 - off), 0) if off >= 0 else max(min(n1 + off, n2), 0)
        new = tuple(s for i, s in enumerate(shape) if i not in (d1, d2)) + (length,)
        return Step(f".diagonal({off}, {d1}, {d2})", lambda x: x.diagonal(off, d1, d2),
                    lambda a, r: np.diagonal(a, off, d1, d2), new)
    if kind == "unfold":
        p = pos(dim())
        size = draw(st.integers(0, shape[p]))
        step = draw(st.integers(1, 3))
        count = (shape[p] - size) // step + 1
        new = shape[:p] + (count,) + shape[p + 1:] + (size,)
        return Step(f".unfold({p}, {size}, {step})", lambda x: x.unfold(p, size, step),
                    lambda a, r: _np_unfold(a, p, size, step), new)
    if kind == "as_strided":
        k = draw(st.integers(0, 3))
        size = tuple(draw(st.integers(0, 3)) for _ in range(k))
        stride = tuple(draw(st.integers(0, 4)) for _ in range(k))
        reach = sum((s - 1) * t for s, t in zip(size, stride)) if all(size) else 0
        if reach >= storage_size:
            return draw_step(draw, shape, storage_size)
        off = draw(st.integers(0, storage_size - 1 - reach)) if storage_size else 0
        if storage_size == 0 and all(size):
            return draw_step(draw, shape, storage_size)

        def np_as_strided(a, r, size=size, stride=stride, off=off):
            isz = r.itemsize
            return as_strided(r[off:], size, tuple(t * isz for t in stride), writeable=False)
        return Step(f".as_strided({size}, {stride}, {off})", lambda x: x.as_strided(size, stride, off),
                    np_as_strided, size)
    if kind == "detach":
        return Step(".detach()", lambda x: x.detach(), lambda a, r: a, shape, is_view=False)
    if kind == "alias":
        return Step("[...]", lambda x: x[...], lambda a, r: a[...], shape)
    raise AssertionError(kind)


@st.composite
def shapes(draw, max_dims: int = 4, max_side: int = 4):
    """Shapes with 0..max_dims dims, sides 0..max_side (0 and 1 often)."""
    nd = draw(st.integers(0, max_dims))
    return tuple(draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4][:max_side + 3])) for _ in range(nd))


@st.composite
def view_chains(draw, max_steps: int = 5):
    """(shape, steps): a start shape and a random chain of view ops valid along the way."""
    shape = draw(shapes())
    storage_size = math.prod(shape)
    steps = []
    cur = shape
    for _ in range(draw(st.integers(1, max_steps))):
        step = draw_step(draw, cur, storage_size)
        steps.append(step)
        if step.shape is None:
            break
        cur = step.shape
    return shape, steps
