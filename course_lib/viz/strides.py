"""Stride diagrams: which storage cell does each element of a strided tensor read?

A strided tensor is a *geometry* over a flat storage: element ``[i0, i1, ...]``
reads storage cell ``offset + i0 * stride[0] + i1 * stride[1] + ...``.

- :func:`draw_strides` draws that as a static matplotlib figure: the storage as
  a row of numbered cells, the tensor as a grid (a row of 2-D slices for three or
  more dims) above it, and an arrow (for small tensors) and a shared colour from
  each element to the cell it reads.  It takes a tensor (course_lib or torch) or
  a geometry ``(shape, stride, offset)``.
- :func:`stride_explorer` wraps the same figure in ipywidgets: type a shape and
  strides, slide the offset and the storage size, or pick a preset, and watch
  the arrows move.

In PyTorch the geometry lives in ``c10/core/TensorImpl.h`` (``sizes_and_strides_``,
``storage_offset_``); ``as_strided`` (``aten/src/ATen/native/TensorShape.cpp``)
checks that it stays inside the storage, as :func:`geometry_error` does here.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["Geometry", "geometry_of", "storage_indices", "geometry_error", "draw_strides", "stride_explorer",
           "PRESETS"]

UNREAD = "#eeeeee"
OUTSIDE = "#d62728"


class Geometry(NamedTuple):
    """A strided view: ``shape``, ``stride`` and ``offset`` in elements over ``storage_size`` cells."""

    shape: tuple
    stride: tuple
    offset: int
    storage_size: int

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self) -> bool:
        """PyTorch's rule: empty tensors are contiguous; size-1 dims are skipped."""
        if 0 in self.shape:
            return True
        expected = 1
        for size, st in zip(reversed(self.shape), reversed(self.stride)):
            if size == 1:
                continue
            if st != expected:
                return False
            expected *= size
        return True


def _contiguous_strides(shape: Sequence[int]) -> tuple:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def _extent(shape, stride, offset) -> int:
    """Cells a storage needs so every element is inside it (offset + 1 for an empty tensor)."""
    if 0 in shape:
        return offset + 1
    return offset + 1 + sum((s - 1) * st for s, st in zip(shape, stride))


def geometry_of(obj, storage_size: int | None = None) -> Geometry:
    """The :class:`Geometry` of a tensor, a ``Geometry``, or a tuple ``(shape, stride[, offset])``.

    A tensor's storage size is that of its storage; for a tuple it defaults to
    the smallest storage the view fits in.

    >>> geometry_of(((2, 3), (1, 2)))
    Geometry(shape=(2, 3), stride=(1, 2), offset=0, storage_size=6)
    """
    if isinstance(obj, Geometry):
        shape, stride, offset = obj.shape, obj.stride, obj.offset
        storage_size = obj.storage_size if storage_size is None else storage_size
    elif hasattr(obj, "stride") and hasattr(obj, "storage_offset"):
        shape, stride, offset = tuple(obj.shape), tuple(obj.stride()), obj.storage_offset()
        if storage_size is None:
            try:
                storage_size = obj.untyped_storage().nbytes() // obj.element_size()
            except Exception:  # noqa: BLE001 - a tensor-like without a storage: use the extent
                storage_size = None
    elif isinstance(obj, (tuple, list)) and len(obj) in (2, 3):
        shape, stride = tuple(obj[0]), tuple(obj[1])
        offset = obj[2] if len(obj) == 3 else 0
    else:
        raise TypeError(f"draw a tensor or a geometry (shape, stride, offset), not {type(obj).__name__}")
    shape = tuple(int(s) for s in shape)
    stride = tuple(int(s) for s in stride)
    offset = int(offset)
    if len(shape) != len(stride):
        raise ValueError(f"shape {shape} and stride {stride} must have the same length")
    if any(s < 0 for s in shape) or any(s < 0 for s in stride) or offset < 0:
        raise ValueError(f"sizes, strides and the offset must be >= 0, got shape {shape}, stride {stride}, "
                         f"offset {offset}")
    if storage_size is None:
        storage_size = _extent(shape, stride, offset)
    return Geometry(shape, stride, offset, int(storage_size))


def storage_indices(shape: Sequence[int], stride: Sequence[int], offset: int = 0) -> np.ndarray:
    """For every element, the storage cell it reads: ``offset + sum(index[d] * stride[d])``.

    >>> storage_indices((2, 3), (1, 2)).tolist()
    [[0, 2, 4], [1, 3, 5]]
    """
    idx = np.full((), offset, dtype=np.int64)
    for size, st in zip(shape, stride):
        idx = idx[..., None] + np.arange(size, dtype=np.int64) * st
    return idx


def geometry_error(geom: Geometry) -> str | None:
    """Why this geometry is not a valid view of its storage (as ``as_strided`` would say), or None."""
    need = _extent(geom.shape, geom.stride, geom.offset)
    if geom.numel == 0:
        need = geom.offset
    if need > geom.storage_size:
        return (f"sizes {list(geom.shape)}, strides {list(geom.stride)}, storage offset {geom.offset} need a "
                f"storage of {need} elements, but it has {geom.storage_size}: as_strided would raise")
    return None


# ---------------------------------------------------------------------------- drawing


def _figure_class():
    from matplotlib.figure import Figure

    class StrideFigure(Figure):
        """A Figure that shows itself in Jupyter (no pyplot needed, nothing left open)."""

        def _repr_png_(self):
            import io

            from matplotlib.backends.backend_agg import FigureCanvasAgg

            FigureCanvasAgg(self)
            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=90)
            return buf.getvalue()

    return StrideFigure


def _fmt(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "T" if v else "F"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return f"{v:.0f}." if v.is_integer() and abs(v) < 1e4 else f"{v:.3g}"
    return str(v)


def _storage_values(obj, geom: Geometry):
    """The storage's values when `obj` is a tensor with data (else None)."""
    if not (hasattr(obj, "stride") and hasattr(obj, "untyped_storage")):
        return None
    try:
        if getattr(obj, "is_meta", False):
            return None
        # the whole storage as a 1-D tensor of obj's dtype, without copying
        flat = obj.as_strided((geom.storage_size,), (1,), 0)
        if hasattr(flat, "detach"):
            flat = flat.detach()
        values = np.asarray(flat.numpy())
        return values if values.shape == (geom.storage_size,) else None
    except Exception:  # noqa: BLE001 - values are decoration only
        return None


def _slices(geom: Geometry, idx: np.ndarray):
    """The tensor as a list of (label, 2-D array of storage indices, 2-D multi-index prefix)."""
    nd = len(geom.shape)
    if nd == 0:
        return [("", idx.reshape(1, 1), ())]
    if nd == 1:
        return [("", idx.reshape(1, -1), ())]
    if nd == 2:
        return [("", idx, ())]
    lead = geom.shape[:-2]
    out = []
    for prefix in np.ndindex(*lead):
        label = "[" + ", ".join(str(i) for i in prefix) + ", :, :]"
        out.append((label, idx[prefix], prefix))
    return out


def draw_strides(obj, *, storage_size: int | None = None, arrows: bool | None = None, title: str | None = None,
                 ax=None, max_elements: int = 256, max_cells: int = 64):
    """Draw which storage cell each element of a strided tensor reads; returns the matplotlib Figure.

    ``obj`` is a tensor (course_lib or torch) or a geometry ``(shape, stride, offset)``.
    The storage is the row of numbered cells at the bottom; the tensor is drawn
    above it (tensors with three or more dims as a row of 2-D slices). Each
    element shows the storage index it reads (and its value, for a tensor) in
    that cell's colour; cells no element reads stay grey, and elements outside
    the storage are red. ``arrows`` (default: when there are at most 24
    elements) draws an arrow from each element to its cell.

    >>> fig = draw_strides(((2, 3), (1, 2), 0))     # a transposed 3x2 matrix
    >>> fig.axes[0].get_title()
    'shape (2, 3)  stride (1, 2)  offset 0'
    """
    geom = geometry_of(obj, storage_size)
    n = geom.numel
    if n > max_elements:
        raise ValueError(f"{n} elements are too many to draw (at most {max_elements}); draw a smaller tensor "
                         "or a slice of it")
    idx = storage_indices(geom.shape, geom.stride, geom.offset)
    values = _storage_values(obj, geom)
    # how many elements read each storage cell (cells past the end of the storage counted too)
    reads = np.bincount(idx.reshape(-1), minlength=geom.storage_size) if n else np.zeros(geom.storage_size, int)
    lo, hi = _storage_window(geom, idx, max_cells)
    light = _cell_colours(reads, geom.storage_size)

    slices = _slices(geom, idx)
    gap = 1.0
    widths = [max(a.shape[1], 1) for _, a, _ in slices]
    grid_h = max(max(a.shape[0], 1) for _, a, _ in slices)
    top_w = sum(widths) + gap * (len(slices) - 1)
    total_w = max(top_w, hi - lo, 6)
    base_y = 3.0  # tensor grids start here; the storage row is y in [0, 1]

    if ax is None:
        fig = _figure_class()(figsize=(min(0.55 * total_w + 1.5, 14), 0.55 * (grid_h + 4.6) + 0.2))
        ax = fig.add_axes((0.01, 0.01, 0.98, 0.9))
    else:
        fig = ax.figure

    cell_x = _draw_storage_row(ax, geom, reads, values, light, lo, hi, total_w)
    if arrows is None:
        arrows = 0 < n <= (24 if len(geom.shape) <= 2 else 12)
    _draw_tensor_slices(ax, geom, slices, widths, values, light, cell_x if arrows else None,
                        x0=(total_w - top_w) / 2, base_y=base_y, grid_h=grid_h, gap=gap)
    if n == 0:
        ax.text(total_w / 2, base_y + 0.5, "(no elements)", ha="center", va="center", fontsize=9)

    contiguous = "contiguous" if geom.is_contiguous() else "not contiguous"
    overlap = " · some cells are read more than once" if n and reads.max() > 1 else ""
    problem = geometry_error(geom)
    note = f"{n} element{'s' if n != 1 else ''} · {contiguous}{overlap}"
    if problem:
        note += " · reads outside the storage!"
    ax.text(total_w / 2, base_y + grid_h + 1.25, note, ha="center", va="bottom", fontsize=8.5,
            color=OUTSIDE if problem else "#333333")
    ax.set_title(title if title is not None else
                 f"shape {geom.shape}  stride {geom.stride}  offset {geom.offset}", fontsize=10)
    ax.set_xlim(-0.6, total_w + 0.6)
    ax.set_ylim(-1.3, base_y + grid_h + 1.9)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def _storage_window(geom: Geometry, idx: np.ndarray, max_cells: int) -> tuple:
    """Which storage cells to draw, ``range(lo, hi)``: all of them, or a window around the ones read."""
    lo, hi = 0, geom.storage_size
    if hi - lo > max_cells:
        if geom.numel:
            lo = max(int(idx.min()) - 1, 0)
            hi = min(max(int(idx.max()) + 2, lo + 1), geom.storage_size)
        else:
            lo, hi = max(geom.offset - 1, 0), min(geom.offset + 2, geom.storage_size)
        if hi - lo > max_cells:
            raise ValueError(f"the elements read span {hi - lo} storage cells, too many to draw "
                             f"(at most {max_cells})")
    return lo, hi


def _cell_colours(reads: np.ndarray, storage_size: int):
    """``light(i)``: the face colour of storage cell ``i`` and of the elements that read it.

    A cell some element reads gets its own tab20 colour mixed with white (opaque, so arrows can
    pass behind the grid); a cell no element reads is grey, and an index past the end of the
    storage white.
    """
    from matplotlib import colormaps

    cmap = colormaps["tab20"]

    def light(i: int):
        if i >= storage_size:
            return "white"
        if not reads[i]:
            return UNREAD
        return tuple(0.4 + 0.6 * v for v in cmap(i % 20)[:3])

    return light


def _draw_storage_row(ax, geom: Geometry, reads: np.ndarray, values, light, lo: int, hi: int,
                      total_w: float) -> dict:
    """The storage cells ``lo..hi-1`` as a row at y in [0, 1], centred; returns each cell's x."""
    from matplotlib.patches import Rectangle

    n_cells = hi - lo
    s_x0 = (total_w - n_cells) / 2
    cell_x = {}
    for k, i in enumerate(range(lo, hi)):
        x = s_x0 + k
        cell_x[i] = x
        ax.add_patch(Rectangle((x, 0), 1, 1, facecolor=light(i), edgecolor="#444444", lw=0.8, zorder=2))
        text = _fmt(values[i].item()) if values is not None else str(i)
        ax.text(x + 0.5, 0.5, text, ha="center", va="center", fontsize=8.5, zorder=3)
        ax.text(x + 0.5, -0.3, str(i), ha="center", va="center", fontsize=6.5, color="#555555")
        if reads[i] > 1:
            ax.text(x + 0.95, 1.08, f"×{reads[i]}", ha="right", va="bottom", fontsize=6.5, color="#333333")
    if lo > 0:
        ax.text(s_x0 - 0.2, 0.5, "…", ha="right", va="center", fontsize=10)
    if hi < geom.storage_size:
        ax.text(s_x0 + n_cells + 0.2, 0.5, "…", ha="left", va="center", fontsize=10)
    n_read = int((reads[:geom.storage_size] > 0).sum())
    ax.text(s_x0, -0.85, f"storage: {geom.storage_size} cells, {n_read} read", fontsize=8.5, va="center")
    return cell_x


def _draw_tensor_slices(ax, geom: Geometry, slices: list, widths: list, values, light, cell_x: dict | None, *,
                        x0: float, base_y: float, grid_h: int, gap: float) -> None:
    """The tensor's 2-D slices left to right above the storage row: each element in its cell's
    colour with the index it reads (and its value); with ``cell_x``, an arrow to that cell."""
    from matplotlib import colormaps
    from matplotlib.patches import FancyArrowPatch, Rectangle

    cmap = colormaps["tab20"]
    for (label, grid, _), w in zip(slices, widths):
        rows, cols = grid.shape
        for r in range(rows):
            for c in range(cols):
                y = base_y + (grid_h - 1 - r)
                si = int(grid[r, c])
                outside = si >= geom.storage_size
                ax.add_patch(Rectangle((x0 + c, y), 1, 1, facecolor=light(si), zorder=2,
                                       edgecolor=OUTSIDE if outside else "#444444", lw=1.6 if outside else 0.8,
                                       hatch="///" if outside else None))
                if values is not None and not outside:
                    ax.text(x0 + c + 0.5, y + 0.6, _fmt(values[si].item()), ha="center", va="center",
                            fontsize=8.5, zorder=3)
                    ax.text(x0 + c + 0.5, y + 0.22, f"s[{si}]", ha="center", va="center", fontsize=6.5, zorder=3)
                else:
                    ax.text(x0 + c + 0.5, y + 0.5, f"s[{si}]", ha="center", va="center", fontsize=8, zorder=3,
                            color=OUTSIDE if outside else "black")
                if cell_x is not None and si in cell_x:
                    ax.add_patch(FancyArrowPatch((x0 + c + 0.5, y + 0.5), (cell_x[si] + 0.5, 1.0),
                                                 arrowstyle="-|>", mutation_scale=7, lw=0.8, zorder=1,
                                                 color=cmap(si % 20), shrinkA=0, shrinkB=1))
        # index labels: rows on the left, columns on top
        if len(geom.shape) >= 2:
            for r in range(rows):
                ax.text(x0 - 0.15, base_y + grid_h - 1 - r + 0.5, str(r), ha="right", va="center", fontsize=6.5,
                        color="#777777")
        if len(geom.shape) >= 1:
            for c in range(cols):
                ax.text(x0 + c + 0.5, base_y + grid_h + 0.12, str(c), ha="center", va="bottom", fontsize=6.5,
                        color="#777777")
        if label:
            ax.text(x0, base_y + grid_h + 0.55, label, fontsize=8, va="bottom", family="monospace")
        x0 += w + gap


# ---------------------------------------------------------------------------- the explorer

#: name -> (shape, stride, offset, storage size): views of a 3x4 matrix (storage 0..11) and friends
PRESETS = {
    "contiguous 3x4": ((3, 4), (4, 1), 0, 12),
    "transpose: .t()": ((4, 3), (1, 4), 0, 12),
    "row 1: x[1]": ((4,), (1,), 4, 12),
    "column 2: x[:, 2]": ((3,), (4,), 2, 12),
    "every other column: x[:, ::2]": ((3, 2), (4, 2), 0, 12),
    "block: x[1:, 1:3]": ((2, 2), (4, 1), 5, 12),
    "diagonal: x.diagonal()": ((3,), (5,), 0, 12),
    "broadcast a row: x[0].expand(3, 4)": ((3, 4), (0, 1), 0, 12),
    "sliding windows: arange(8).unfold(0, 3, 1)": ((6, 3), (1, 1), 0, 8),
    "3-D: arange(12).view(2, 3, 2)": ((2, 3, 2), (6, 2, 1), 0, 12),
}


def _parse_ints(text: str, what: str) -> tuple:
    text = text.strip().strip("()[]").strip()
    if not text:
        return ()
    try:
        return tuple(int(p) for p in text.replace(" ", ",").split(",") if p.strip())
    except ValueError:
        raise ValueError(f"{what}: write whole numbers separated by commas, like 2, 3") from None


def stride_explorer(shape: Sequence[int] = (3, 4), stride: Sequence[int] | None = None, offset: int = 0,
                    storage_size: int | None = None):
    """An ipywidgets explorer: edit shape, strides, offset and storage size; see which cells are read.

    Returns the widget (display it, or make it the last expression of a cell).
    ``stride`` defaults to the contiguous strides of ``shape`` and
    ``storage_size`` to the smallest storage the view fits in. The figure is
    :func:`draw_strides`'s; ``explorer.geometry()`` gives the current geometry.
    """
    import ipywidgets as W
    from IPython.display import display

    shape = tuple(shape)
    stride = _contiguous_strides(shape) if stride is None else tuple(stride)
    start = geometry_of((shape, stride, offset), storage_size)

    preset = W.Dropdown(options=["(your own)"] + list(PRESETS), value="(your own)", description="preset",
                        layout=W.Layout(width="420px"))
    shape_box = W.Text(value=", ".join(map(str, start.shape)), description="shape", continuous_update=False)
    stride_box = W.Text(value=", ".join(map(str, start.stride)), description="stride", continuous_update=False)
    storage_slider = W.IntSlider(value=start.storage_size, min=1, max=max(64, start.storage_size),
                                 description="storage", continuous_update=False)
    offset_slider = W.IntSlider(value=start.offset, min=0, max=max(start.storage_size - 1, start.offset),
                                description="offset", continuous_update=False)
    status = W.HTML()
    out = W.Output()
    state = {"geometry": start, "busy": False}

    def current() -> Geometry:
        return geometry_of((_parse_ints(shape_box.value, "shape"), _parse_ints(stride_box.value, "stride"),
                            offset_slider.value), storage_slider.value)

    def redraw(*_):
        if state["busy"]:
            return
        offset_slider.max = max(storage_slider.value - 1, 0)
        try:
            geom = current()
            fig = draw_strides(geom)
        except (ValueError, TypeError) as e:
            status.value = f"<span style='color:{OUTSIDE}'>{e}</span>"
            return
        state["geometry"] = geom
        problem = geometry_error(geom)
        call = f"storage.as_strided({geom.shape}, {geom.stride}, {geom.offset})"
        status.value = (f"<code>{call}</code> · is_contiguous: {geom.is_contiguous()}"
                        + (f"<br><span style='color:{OUTSIDE}'>{problem}</span>" if problem else ""))
        out.clear_output(wait=True)
        with out:
            display(fig)

    def on_preset(change):
        if change["new"] not in PRESETS:
            return
        shp, st, off, size = PRESETS[change["new"]]
        state["busy"] = True
        try:
            storage_slider.max = max(storage_slider.max, size)
            storage_slider.value = size
            offset_slider.max = max(size - 1, 0)
            offset_slider.value = off
            shape_box.value = ", ".join(map(str, shp))
            stride_box.value = ", ".join(map(str, st))
        finally:
            state["busy"] = False
        redraw()

    def on_edit(change):
        if not state["busy"] and preset.value != "(your own)":
            state["busy"] = True
            preset.value = "(your own)"
            state["busy"] = False
        redraw()

    preset.observe(on_preset, names="value")
    for w in (shape_box, stride_box, storage_slider, offset_slider):
        w.observe(on_edit, names="value")
    redraw()
    box = W.VBox([preset, W.HBox([shape_box, stride_box]), W.HBox([offset_slider, storage_slider]), status, out])
    box.geometry = lambda: state["geometry"]
    return box
