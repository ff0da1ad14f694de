"""Pictures of tensors over their storage (matplotlib, static).

``draw_storage(x)`` draws the flat storage of ``x`` as a row of numbered cells
and ``x`` above it as a grid: every element shows its value and the index of
the storage cell it reads (``s[4]``), and shares that cell's colour.  Pass
several tensors that share one storage (``draw_storage([x, x.t(), x[1]])``) to
see that views are new metadata over the same cells.

In PyTorch the same split is ``c10/core/StorageImpl.h`` (the bytes) versus
``c10/core/TensorImpl.h`` (sizes, strides, storage offset, dtype).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["draw_storage", "storage_indices"]


def storage_indices(t) -> np.ndarray:
    """For each element of ``t``, the index of the storage cell it reads.

    ``offset + sum(index[d] * stride[d])``, computed for all indices at once.

    >>> import course_lib as cl
    >>> storage_indices(cl.arange(6).view(2, 3).t()).tolist()
    [[0, 3], [1, 4], [2, 5]]
    """
    shape, stride = tuple(t.shape), t.stride()
    out = np.full(shape, t.storage_offset(), dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, stride)):
        step = np.arange(n, dtype=np.int64) * s
        out = out + step.reshape((n,) + (1,) * (len(shape) - d - 1))
    return out


def _fmt(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "T" if v else "F"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return f"{v:.0f}." if v.is_integer() and abs(v) < 1e4 else f"{v:.3g}"
    return str(v)


def _grid(t) -> tuple[np.ndarray, np.ndarray | None]:
    """Storage indices and values of ``t`` as a 2-D grid (0-d -> 1x1, 1-d -> one row)."""
    idx = storage_indices(t)
    vals = None if t.is_meta else t.numpy(force=True)
    if idx.ndim == 0:
        idx = idx.reshape(1, 1)
        vals = None if vals is None else vals.reshape(1, 1)
    elif idx.ndim == 1:
        idx = idx.reshape(1, -1)
        vals = None if vals is None else vals.reshape(1, -1)
    elif idx.ndim > 2:
        idx = idx.reshape(-1, idx.shape[-1])
        vals = None if vals is None else vals.reshape(-1, vals.shape[-1])
    return idx, vals


def draw_storage(tensors, labels: Sequence[str] | None = None, ax=None, title: str | None = None,
                 max_cells: int = 40):
    """Draw the tensors (one, or several sharing a storage) above their storage.

    Returns the matplotlib Figure.  Tensors with more than two dimensions are
    drawn with their leading dimensions stacked as rows.  Only the first
    ``max_cells`` storage cells are drawn.
    """
    import matplotlib.pyplot as plt

    tensors, labels = _tensors_and_labels(tensors, labels)
    storage = tensors[0]._storage
    n_cells = min(storage.size(), max_cells)
    grids = [_grid(t) for t in tensors]
    used = {int(i) for idx, _ in grids for i in idx.reshape(-1)}
    cmap = plt.get_cmap("tab20")

    def colour(i):
        # cells some tensor reads get a colour of their own; the others stay grey
        return cmap(i % 20) if i in used else "#f2f2f2"

    metas = [(f"{label}", f"shape {tuple(t.shape)}, stride {t.stride()}",
              f"offset {t.storage_offset()}, {t.dtype.name}") for t, label in zip(tensors, labels)]
    gap = 1.0
    # a slot is as wide as its grid or its caption (about 0.1 cell per character)
    widths = [max(g[0].shape[1], 1, 0.1 * max(len(line) for line in m)) for g, m in zip(grids, metas)]
    top_w = sum(widths) + gap * (len(grids) - 1)
    total_w = max(top_w, n_cells)
    grid_h = max(max(g[0].shape[0], 1) for g in grids)

    if ax is None:
        fig, ax = plt.subplots(figsize=(min(0.62 * total_w + 1.2, 14), 0.62 * (grid_h + 4.1) + 0.4))
    else:
        fig = ax.figure

    _draw_storage_row(ax, storage, n_cells, colour, s_x0=(total_w - n_cells) / 2)
    base_y = 2.2
    x0 = (total_w - top_w) / 2
    for grid, t, meta, w in zip(grids, tensors, metas, widths):
        _draw_tensor(ax, grid, t.numel(), meta, colour, x0=x0, base_y=base_y, grid_h=grid_h)
        x0 += w + gap

    ax.set_xlim(-0.3, total_w + 0.3)
    ax.set_ylim(-1.3, base_y + grid_h + 1.8)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)
    return fig


def _tensors_and_labels(tensors, labels) -> tuple[list, list]:
    """``draw_storage``'s arguments checked: a non-empty list of tensors sharing one storage, one label each."""
    from .._tensor import Tensor

    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    if not tensors:
        raise ValueError("draw_storage needs at least one tensor")
    storage = tensors[0]._storage
    for t in tensors[1:]:
        if t._storage is not storage:
            raise ValueError("draw_storage: the tensors do not share one storage "
                             "(draw them one call each)")
    if labels is None:
        labels = ["x"] if len(tensors) == 1 else [f"t{i}" for i in range(len(tensors))]
    if len(labels) != len(tensors):
        raise ValueError(f"draw_storage: {len(labels)} labels for {len(tensors)} tensors")
    return tensors, list(labels)


def _draw_storage_row(ax, storage, n_cells: int, colour, *, s_x0: float) -> None:
    """The first ``n_cells`` storage cells as a row at y in [0, 1], with their values and indices."""
    from matplotlib.patches import Rectangle

    data = storage.data
    for i in range(n_cells):
        ax.add_patch(Rectangle((s_x0 + i, 0), 1, 1, facecolor=colour(i), alpha=0.55, edgecolor="#444444"))
        text = "?" if data is None else _fmt(data[i].item())
        ax.text(s_x0 + i + 0.5, 0.5, text, ha="center", va="center", fontsize=9)
        ax.text(s_x0 + i + 0.5, -0.3, str(i), ha="center", va="center", fontsize=7, color="#555555")
    more = f" (first {n_cells} shown)" if storage.size() > n_cells else ""
    ax.text(s_x0, -0.85, f"storage: {storage.size()} × {storage.dtype.name}, "
                         f"{storage.nbytes()} bytes{more}", fontsize=9, va="center")


def _draw_tensor(ax, grid: tuple, numel: int, meta: tuple, colour, *, x0: float, base_y: float,
                 grid_h: int) -> None:
    """One tensor's grid (from ``_grid``) at ``x0``: each element's value and the cell it reads, in
    that cell's colour, under the tensor's name, shape, stride, offset and dtype."""
    from matplotlib.patches import Rectangle

    idx, vals = grid
    rows, cols = idx.shape
    for r in range(rows):
        for c in range(cols):
            y = base_y + (grid_h - 1 - r)
            si = int(idx[r, c])
            ax.add_patch(Rectangle((x0 + c, y), 1, 1, facecolor=colour(si), alpha=0.55,
                                   edgecolor="#444444"))
            v = "?" if vals is None else _fmt(vals[r, c].item())
            ax.text(x0 + c + 0.5, y + 0.58, v, ha="center", va="center", fontsize=9)
            ax.text(x0 + c + 0.5, y + 0.22, f"s[{si}]", ha="center", va="center", fontsize=6.5,
                    color="#333333")
    if numel == 0:
        ax.text(x0 + 0.5, base_y + grid_h - 0.5, "(no elements)", fontsize=8, va="center")
    name, line1, line2 = meta
    ax.text(x0, base_y + grid_h + 0.2, f"{line1}\n{line2}", fontsize=8, va="bottom")
    ax.text(x0, base_y + grid_h + 1.15, name, fontsize=10, va="bottom", weight="bold")
