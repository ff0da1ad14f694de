"""Which axes does each normalization layer reduce over?  The (N, C, H, W) picture.

An activation of shape (N, C, H, W) is drawn as a block: channels C from left
to right, the spatial positions H·W (flattened to one axis) from top to
bottom, and the samples N going back into the page.  A normalization layer
computes one mean and one variance per *statistics group*; the figure shades
one such group:

==============  =======================  ==========================
layer           one group is             reduced dims of (N, C, H, W)
==============  =======================  ==========================
BatchNorm       one channel, all samples (0, 2, 3)
LayerNorm       one sample, all channels (1, 2, 3)
InstanceNorm    one sample, one channel  (2, 3)
GroupNorm       one sample, C/G channels (2, 3) of (N, G, C/G, H·W)
==============  =======================  ==========================

:func:`statistics_mask` says which cells share one mean and variance (it is the
picture's data, and testable); :func:`draw_norm_axes` draws it.  Both are
deterministic: the same arguments give the same figure.

In PyTorch the four layers live in ``torch/nn/modules/batchnorm.py``,
``normalization.py`` and ``instancenorm.py``; their kernels in
``aten/src/ATen/native/Normalization.cpp``, ``layer_norm.cpp`` and ``group_norm.cpp``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["LAYERS", "reduced_dims", "statistics_mask", "draw_norm_axes"]

#: the layers the figure knows, in the order it draws them
LAYERS = ("BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm")

SHADE = "#3b7dd8"
BLANK = "#ffffff"
EDGE = "#6b6b6b"


def _layer(name: str) -> str:
    for layer in LAYERS:
        if name.lower() == layer.lower():
            return layer
    raise ValueError(f"unknown layer {name!r}: use one of {', '.join(LAYERS)}")


def reduced_dims(layer: str) -> tuple[int, ...]:
    """The dims of an (N, C, H, W) input that `layer`'s statistics are taken over.

    GroupNorm reduces over whole channels of a group, which is not a set of dims
    of (N, C, H, W): it first reshapes to (N, G, C/G·H·W) and reduces dim 2.
    The table gives the dims of (N, C, H, W) that are reduced *completely*, (2, 3).

    >>> reduced_dims("BatchNorm")
    (0, 2, 3)
    """
    return {"BatchNorm": (0, 2, 3), "LayerNorm": (1, 2, 3), "InstanceNorm": (2, 3),
            "GroupNorm": (2, 3)}[_layer(layer)]


def statistics_mask(layer: str, n: int = 4, c: int = 6, hw: int = 5, groups: int = 3,
                    sample: int = 0, channel: int = 0) -> np.ndarray:
    """Boolean (n, c, hw) array: the cells that share one mean and variance with cell (sample, channel, 0).

    >>> statistics_mask("InstanceNorm", n=2, c=2, hw=2).astype(int).tolist()
    [[[1, 1], [0, 0]], [[0, 0], [0, 0]]]
    """
    layer = _layer(layer)
    if layer == "GroupNorm" and c % groups:
        raise ValueError(f"num_channels ({c}) must be divisible by num_groups ({groups})")
    ns, cs = np.arange(n)[:, None, None], np.arange(c)[None, :, None]
    same_sample = ns == sample
    same_channel = cs == channel
    size = c // groups if layer == "GroupNorm" else 1
    same_group = cs // size == channel // size
    mask = {"BatchNorm": same_channel & (ns >= 0),
            "LayerNorm": same_sample & (cs >= 0),
            "InstanceNorm": same_sample & same_channel,
            "GroupNorm": same_sample & same_group}[layer]
    return np.broadcast_to(mask, (n, c, hw)).copy()


def _caption(layer: str, n: int, c: int, groups: int) -> str:
    over, count, each = {
        "BatchNorm": ("N, H, W", c, "per channel"),
        "LayerNorm": ("C, H, W", n, "per sample"),
        "InstanceNorm": ("H, W", n * c, "per sample, channel"),
        "GroupNorm": (f"C/G, H, W (G = {groups})", n * groups, "per sample, group"),
    }[layer]
    return f"reduces {over}\n{count} means and variances, {each}"


def _draw_block(ax, mask: np.ndarray, depth=(0.45, 0.35)) -> None:
    """The three visible faces of the block, each cell coloured by `mask`."""
    from matplotlib.patches import Polygon

    n, c, hw = mask.shape
    dx, dy = depth

    def quad(points, on):
        ax.add_patch(Polygon(points, closed=True, facecolor=SHADE if on else BLANK, edgecolor=EDGE,
                             linewidth=0.7))

    # front face: sample 0, channels left to right, positions top to bottom
    for ci in range(c):
        for p in range(hw):
            y0 = hw - 1 - p
            quad([(ci, y0), (ci + 1, y0), (ci + 1, y0 + 1), (ci, y0 + 1)], mask[0, ci, p])
    # top face: position 0 of every (sample, channel), samples going back
    for ni in range(n):
        for ci in range(c):
            a = (ci + ni * dx, hw + ni * dy)
            quad([a, (a[0] + 1, a[1]), (a[0] + 1 + dx, a[1] + dy), (a[0] + dx, a[1] + dy)], mask[ni, ci, 0])
    # right face: the last channel of every sample
    for ni in range(n):
        for p in range(hw):
            y0 = hw - 1 - p
            a = (c + ni * dx, y0 + ni * dy)
            quad([a, (a[0] + dx, a[1] + dy), (a[0] + dx, a[1] + 1 + dy), (a[0], a[1] + 1)], mask[ni, c - 1, p])
    ax.annotate("", xy=(c, -0.45), xytext=(0, -0.45), arrowprops=dict(arrowstyle="->", color="#333333"))
    ax.text(c / 2, -0.6, "C", ha="center", va="top", fontsize=11)
    ax.annotate("", xy=(-0.45, 0), xytext=(-0.45, hw), arrowprops=dict(arrowstyle="->", color="#333333"))
    ax.text(-0.6, hw / 2, "H, W", ha="right", va="center", fontsize=11, rotation=90)
    ax.annotate("", xy=(-0.25 + n * dx, hw + 0.2 + n * dy), xytext=(-0.25, hw + 0.2),
                arrowprops=dict(arrowstyle="->", color="#333333"))
    ax.text(-0.35 + n * dx / 2, hw + 0.35 + n * dy / 2, "N", ha="right", va="bottom", fontsize=11)
    ax.set_xlim(-1.4, c + n * dx + 0.4)
    ax.set_ylim(-1.3, hw + n * dy + 0.8)
    ax.set_aspect("equal")
    ax.axis("off")


def draw_norm_axes(layers=LAYERS, *, n: int = 4, c: int = 6, hw: int = 5, groups: int = 3, axes=None):
    """Draw the (N, C, H, W) block once per layer with one statistics group shaded; returns the Figure.

    Every shaded cell is normalised with the same mean and variance. ``axes``
    (one matplotlib Axes per layer) draws into an existing figure.

    >>> fig = draw_norm_axes(["LayerNorm"])
    >>> fig.axes[0].get_title()
    'LayerNorm'
    """
    import matplotlib.pyplot as plt

    layers = [_layer(name) for name in layers]
    if axes is None:
        fig, axes = plt.subplots(1, len(layers), figsize=(3.6 * len(layers), 3.8))
        axes = np.atleast_1d(axes)
    else:
        axes = np.atleast_1d(axes)
        if len(axes) != len(layers):
            raise ValueError(f"{len(layers)} layers need {len(layers)} axes, got {len(axes)}")
        fig = axes[0].figure
    for ax, layer in zip(axes, layers):
        _draw_block(ax, statistics_mask(layer, n, c, hw, groups))
        ax.set_title(layer, fontsize=12)
        ax.text((c + n * 0.45) / 2 - 0.5, -1.25, _caption(layer, n, c, groups), ha="center", va="top",
                fontsize=8.5, color="#333333", linespacing=1.4)
    return fig
