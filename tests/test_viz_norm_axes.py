"""course_lib.viz.norm_axes: the statistics groups it shades, checked against the layers themselves."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import course_lib as cl  # noqa: E402
import course_lib.nn.functional as F  # noqa: E402
from course_lib.viz.norm_axes import LAYERS, SHADE, draw_norm_axes, reduced_dims, statistics_mask  # noqa: E402

N, C, HW, G = 4, 6, 5, 3


def _layer_output(layer: str, x):
    return {"BatchNorm": lambda: F.batch_norm(x, None, None, training=True),
            "LayerNorm": lambda: F.layer_norm(x, tuple(x.shape[1:])),
            "InstanceNorm": lambda: F.instance_norm(x),
            "GroupNorm": lambda: F.group_norm(x, G)}[layer]()


@pytest.mark.parametrize("layer", LAYERS)
def test_mask_is_one_statistics_group_of_the_layer(layer):
    """Perturb the shaded cells by a common shift and scale: the layer's output there must not change."""
    mask = statistics_mask(layer, N, C, HW, G)
    cl.manual_seed(0)
    x = cl.randn(N, C, HW, dtype=cl.float64)
    moved = x.numpy().copy()
    moved[mask] = moved[mask] * 3.0 + 7.0
    before = _layer_output(layer, x).numpy()
    after = _layer_output(layer, cl.tensor(moved)).numpy()
    np.testing.assert_allclose(after[mask], before[mask], rtol=1e-4, atol=1e-4)  # up to eps
    # ... and a smaller set would not do: moving only part of the group changes the output
    part = mask.copy()
    part[np.argwhere(mask)[0][0], np.argwhere(mask)[0][1], 0] = False
    moved = x.numpy().copy()
    moved[part] = moved[part] * 3.0 + 7.0
    assert not np.allclose(_layer_output(layer, cl.tensor(moved)).numpy()[part], before[part], atol=1e-3)


def test_group_sizes_and_reduced_dims():
    sizes = {layer: int(statistics_mask(layer, N, C, HW, G).sum()) for layer in LAYERS}
    assert sizes == {"BatchNorm": N * HW, "LayerNorm": C * HW, "InstanceNorm": HW, "GroupNorm": C // G * HW}
    assert reduced_dims("batchnorm") == (0, 2, 3)
    with pytest.raises(ValueError, match="unknown layer"):
        reduced_dims("DropoutNorm")
    with pytest.raises(ValueError, match="divisible"):
        statistics_mask("GroupNorm", c=4, groups=3)


def test_figure_is_deterministic_and_shades_the_visible_cells():
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    def summary(fig):
        out = []
        for ax in fig.axes:
            colours = [to_hex(p.get_facecolor()) for p in ax.patches]
            out.append((ax.get_title(), len(ax.patches), colours.count(SHADE)))
        return out

    first, second = draw_norm_axes(), draw_norm_axes()
    assert summary(first) == summary(second)
    # visible cells: front face C*HW, top face N*C, right face N*HW
    assert [s[1] for s in summary(first)] == [C * HW + N * C + N * HW] * 4
    # shaded visible cells: BatchNorm channel 0 (front column + top row), LayerNorm sample 0 (front face, top
    # row, right column), InstanceNorm (front column + one top cell), GroupNorm (C/G front columns + top cells)
    assert [s[2] for s in summary(first)] == [HW + N, C * HW + C + HW, HW + 1, 2 * HW + 2]
    assert [s[0] for s in summary(first)] == list(LAYERS)
    plt.close("all")
