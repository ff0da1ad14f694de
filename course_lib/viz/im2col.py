"""im2col as a picture: which input pixel lands in which cell of the column matrix.

``draw_im2col(channels=2, height=4, width=4, kernel=3, stride=1, padding=0)``
draws three panels:

1. the input, one small grid per channel, each pixel numbered; the window
   under one chosen output pixel is outlined;
2. the *column matrix*: one row per (channel, kernel row, kernel column), one
   column per output pixel; each cell shows the number of the input pixel it
   copies (``0`` cells come from zero padding);
3. the one matrix product that finishes the convolution:
   ``weight (O, C*kh*kw) @ columns (C*kh*kw, Ho*Wo) -> output (O, Ho*Wo)``.

In course_lib the columns are ``_columns`` in ``course_lib/_ops/nn_ops.py``
(with the batch folded into the columns); in PyTorch's CPU path without
oneDNN they are built by ``aten/src/ATen/native/Unfold2d.cpp``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["draw_im2col", "im2col_indices"]

_CHANNEL_COLOURS = ["#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1", "#d9d9d9"]


def im2col_indices(channels: int, height: int, width: int, kernel: int, stride: int = 1,
                   padding: int = 0) -> np.ndarray:
    """The column matrix of input *positions*: entry [r, col] is ``c * H * W + y * W + x`` of the
    input pixel copied there, or -1 for zero padding.  Shape ``(C * k * k, Ho * Wo)``.

    >>> im2col_indices(1, 3, 3, 2).tolist()
    [[0, 1, 3, 4], [1, 2, 4, 5], [3, 4, 6, 7], [4, 5, 7, 8]]
    """
    C, H, W, k = channels, height, width, kernel
    Ho = (H + 2 * padding - k) // stride + 1
    Wo = (W + 2 * padding - k) // stride + 1
    c, i, j = np.meshgrid(np.arange(C), np.arange(k), np.arange(k), indexing="ij")
    oy, ox = np.meshgrid(np.arange(Ho), np.arange(Wo), indexing="ij")
    y = i.reshape(-1, 1) + stride * oy.reshape(1, -1) - padding
    x = j.reshape(-1, 1) + stride * ox.reshape(1, -1) - padding
    idx = c.reshape(-1, 1) * H * W + y * W + x
    inside = (y >= 0) & (y < H) & (x >= 0) & (x < W)
    return np.where(inside, idx, -1)


def draw_im2col(channels: int = 2, height: int = 4, width: int = 4, kernel: int = 3, stride: int = 1,
                padding: int = 0, out_channels: int = 3, highlight: tuple[int, int] = (0, 1), figsize=None):
    """Draw the input, its column matrix and the matrix product (see the module docstring)."""
    import matplotlib.pyplot as plt

    C, H, W, k = channels, height, width, kernel
    cols = im2col_indices(C, H, W, k, stride, padding)
    Ho = (H + 2 * padding - k) // stride + 1
    Wo = (W + 2 * padding - k) // stride + 1
    rows, ncols = cols.shape
    if figsize is None:
        figsize = (3.2 * C + 0.5 * ncols + 5, max(4.0, 0.32 * rows + 1.5))
    fig, axes = plt.subplots(1, 3, figsize=figsize,
                             gridspec_kw={"width_ratios": [C * (W + 2 * padding + 1), ncols + 2, 9]})
    ax_in, ax_cols, ax_mm = axes
    _draw_input(ax_in, C, H, W, k, stride, padding, highlight)
    _draw_columns(ax_cols, cols, k, Ho, Wo, highlight)
    _draw_product(ax_mm, rows, ncols, out_channels, Ho, Wo)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.9, bottom=0.02, wspace=0.06)
    return fig


def _draw_input(ax, C: int, H: int, W: int, k: int, stride: int, P: int, highlight: tuple) -> None:
    """Panel 1: the input channel by channel, each pixel numbered (padding drawn as empty cells), with
    the window under output pixel ``highlight`` outlined."""
    from matplotlib.patches import Rectangle

    hy, hx = highlight
    for c in range(C):
        x0 = c * (W + 2 * P + 1)
        for yy in range(-P, H + P):
            for xx in range(-P, W + P):
                inside = 0 <= yy < H and 0 <= xx < W
                ax.add_patch(Rectangle((x0 + xx + P, -(yy + P)), 1, 1, facecolor=_CHANNEL_COLOURS[c % 6]
                                       if inside else "white", edgecolor="#888888", lw=0.6))
                if inside:
                    ax.text(x0 + xx + P + 0.5, -(yy + P) + 0.5, str(c * H * W + yy * W + xx), ha="center",
                            va="center", fontsize=8)
        wy, wx = hy * stride, hx * stride
        ax.add_patch(Rectangle((x0 + wx, -(wy + k - 1)), k, k, fill=False, edgecolor="#d62728", lw=2.2))
        ax.text(x0 + (W + 2 * P) / 2, 1.3, f"channel {c}", ha="center", fontsize=9)
    ax.set_xlim(-0.3, C * (W + 2 * P + 1))
    ax.set_ylim(-(H + 2 * P) + 0.7, 2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"input: {C} x {H} x {W}" + (f", padding {P}" if P else ""), fontsize=10)


def _draw_columns(ax, cols: np.ndarray, k: int, Ho: int, Wo: int, highlight: tuple) -> None:
    """Panel 2: the column matrix, each cell numbered with the input pixel it copies, rows labelled
    (channel, kernel row, kernel column), columns by output pixel; ``highlight``'s column outlined."""
    from matplotlib.patches import Rectangle

    rows, ncols = cols.shape
    for r in range(rows):
        c = r // (k * k)
        for col in range(ncols):
            v = cols[r, col]
            ax.add_patch(Rectangle((col, -r), 1, 1, facecolor=_CHANNEL_COLOURS[c % 6] if v >= 0 else "white",
                                   edgecolor="#aaaaaa", lw=0.4))
            ax.text(col + 0.5, -r + 0.5, str(v) if v >= 0 else "0", ha="center", va="center", fontsize=6.5,
                    color="black" if v >= 0 else "#999999")
        i, j = divmod(r % (k * k), k)
        ax.text(-0.3, -r + 0.5, f"c{c} ({i},{j})", ha="right", va="center", fontsize=6.5)
    hy, hx = highlight
    ax.add_patch(Rectangle((hy * Wo + hx, -rows + 1), 1, rows, fill=False, edgecolor="#d62728", lw=2.2))
    for col in range(ncols):
        oy, ox = divmod(col, Wo)
        ax.text(col + 0.5, 1.25, f"{oy},{ox}", ha="center", va="bottom", fontsize=6.5, rotation=90)
    ax.set_xlim(-3.2, ncols + 0.2)
    ax.set_ylim(-rows + 0.8, 3.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"columns: {rows} rows (C*kh*kw) x {ncols} output pixels (Ho*Wo = {Ho}*{Wo})", fontsize=10)


def _draw_product(ax, rows: int, ncols: int, out_channels: int, Ho: int, Wo: int) -> None:
    """Panel 3: weight @ columns = output, as blocks drawn to scale."""
    from matplotlib.patches import Rectangle

    def block(x, y, w, h, colour, label):
        ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor="#555555"))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=9)

    s = 3.0 / max(rows, ncols)
    hw, hr, hc = 1.6, rows * s, ncols * s
    block(0, 0, hr, hw, "#fee6ce", f"weight\n{out_channels} x {rows}")
    ax.text(hr + 0.25, hw / 2, "@", fontsize=14, va="center")
    block(hr + 0.8, hw - hr, hc, hr, "#deebf7", f"columns\n{rows} x {ncols}")
    ax.text(hr + hc + 1.05, hw / 2, "=", fontsize=14, va="center")
    block(hr + hc + 1.6, 0, hc, hw, "#e5f5e0", f"output\n{out_channels} x {ncols}")
    ax.text((2 * hr + 2 * hc + 1.6) / 2, hw - hr - 0.6,
            f"then reshape to ({out_channels}, {Ho}, {Wo})", ha="center", fontsize=9)
    ax.set_xlim(-0.2, 2 * hc + hr + 1.8)
    ax.set_ylim(hw - hr - 1.0, hw + 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("one matrix product", fontsize=10)
