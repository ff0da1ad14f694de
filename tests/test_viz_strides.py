"""course_lib.viz.strides: the static stride diagram (Agg backend) and the ipywidgets explorer."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from oracle import require_torch  # noqa: E402

import course_lib as cl  # noqa: E402
from course_lib.viz import draw_strides, stride_explorer  # noqa: E402
from course_lib.viz.strides import PRESETS, Geometry, geometry_error, geometry_of, storage_indices  # noqa: E402

STORAGE_Y = 0.0


# ------------------------------------------------------------------ reading a drawn figure back


def _cells(ax):
    """(storage cells {index: facecolor}, element cells [(storage index, facecolor, hatched)])."""
    rects = [p for p in ax.patches if isinstance(p, Rectangle)]
    storage_rects = {round(r.get_x(), 6): r for r in rects if r.get_y() == STORAGE_Y}
    storage = {}
    elements = []
    for t in ax.texts:
        x, y = t.get_position()
        if abs(y + 0.3) < 1e-9 and t.get_text().isdigit():     # the index under a storage cell
            storage[int(t.get_text())] = storage_rects[round(x - 0.5, 6)].get_facecolor()
    for t in ax.texts:
        m = re.fullmatch(r"s\[(\d+)\]", t.get_text())
        if not m:
            continue
        x, y = t.get_position()
        rect = next(r for r in rects if r.get_y() > STORAGE_Y and r.get_x() < x < r.get_x() + 1
                    and r.get_y() < y < r.get_y() + 1)
        elements.append((int(m.group(1)), rect.get_facecolor(), bool(rect.get_hatch())))
    return storage, elements


def _texts(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts) + "\n" + fig.axes[0].get_title()


# ------------------------------------------------------------------ geometry helpers


def test_storage_indices_examples():
    assert storage_indices((2, 3), (1, 2)).tolist() == [[0, 2, 4], [1, 3, 5]]
    assert storage_indices((), (), 7).tolist() == 7
    assert storage_indices((3, 2), (0, 1), 4).tolist() == [[4, 5], [4, 5], [4, 5]]
    assert storage_indices((2, 0), (1, 1)).shape == (2, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), max_size=4), st.integers(0, 6))
def test_storage_indices_match_as_strided_over_arange(dims, offset):
    """Reading an arange storage through a geometry gives back the storage indices."""
    shape = tuple(s for s, _ in dims)
    stride = tuple(t for _, t in dims)
    size = geometry_of((shape, stride, offset)).storage_size
    view = cl.arange(size).as_strided(shape, stride, offset)
    assert np.array_equal(storage_indices(shape, stride, offset), view.numpy())


def test_geometry_of_tuples_tensors_and_errors():
    assert geometry_of(((2, 3), (1, 2))) == Geometry((2, 3), (1, 2), 0, 6)
    assert geometry_of(((2, 3), (3, 1), 4)) == Geometry((2, 3), (3, 1), 4, 10)
    assert geometry_of(((2, 3), (3, 1), 4), storage_size=20).storage_size == 20
    assert geometry_of(((0, 3), (3, 1), 2)).storage_size == 3
    x = cl.arange(12.).view(3, 4)
    assert geometry_of(x[:, 1]) == Geometry((3,), (4,), 1, 12)
    assert geometry_of(x.t()).is_contiguous() is False and geometry_of(x).is_contiguous() is True
    assert geometry_of(((5, 1), (1, 5))).is_contiguous() and geometry_of(((2, 0), (9, 9))).is_contiguous()
    with pytest.raises(ValueError, match="same length"):
        geometry_of(((2, 3), (1,)))
    with pytest.raises(ValueError, match=">= 0"):
        geometry_of(((2, 3), (-1, 1)))
    with pytest.raises(TypeError, match="not str"):
        geometry_of("x")


def test_geometry_error():
    assert geometry_error(geometry_of(((3, 4), (4, 1), 0))) is None
    msg = geometry_error(Geometry((3, 4), (4, 1), 3, 12))
    assert "need a storage of 15 elements, but it has 12" in msg and "as_strided would raise" in msg
    assert geometry_error(Geometry((0, 4), (4, 1), 12, 12)) is None      # empty: nothing is read


# ------------------------------------------------------------------ the static figure


@pytest.mark.parametrize("geom", [
    ((2, 3), (1, 2), 0),
    ((3, 4), (0, 1), 0),        # stride 0: rows read the same cells
    ((6, 3), (1, 1), 0),        # overlapping windows
    ((2, 3, 2), (6, 2, 1), 0),  # 3-D: a row of 2-D slices
    ((4,), (3,), 2),
    ((), (), 5),
])
def test_every_element_has_the_colour_of_the_cell_it_reads(geom):
    fig = draw_strides(geom)
    storage, elements = _cells(fig.axes[0])
    expected = sorted(storage_indices(*geom).reshape(-1).tolist())
    assert sorted(i for i, _, _ in elements) == expected
    for i, colour, hatched in elements:
        assert colour == storage[i] and not hatched
    read = set(expected)
    unread = [storage[i] for i in storage if i not in read]
    assert all(c == unread[0] for c in unread)                        # unread cells share one grey
    assert all(storage[i] not in unread for i in read)


def test_title_note_and_arrows():
    fig = draw_strides(((2, 3), (1, 2), 0))
    ax = fig.axes[0]
    assert ax.get_title() == "shape (2, 3)  stride (1, 2)  offset 0"
    assert "6 elements · not contiguous" in _texts(fig)
    assert sum(isinstance(p, FancyArrowPatch) for p in ax.patches) == 6
    assert not any(isinstance(p, FancyArrowPatch) for p in draw_strides(((2, 3), (1, 2), 0), arrows=False)
                   .axes[0].patches)
    big = draw_strides(cl.arange(24.).view(2, 3, 4))          # 3-D with 24 elements: no arrows by default
    assert not any(isinstance(p, FancyArrowPatch) for p in big.axes[0].patches)
    assert "[1, :, :]" in _texts(big) and "contiguous" in _texts(big)
    assert "some cells are read more than once" in _texts(draw_strides(((3, 4), (0, 1), 0)))
    assert draw_strides(((2,), (1,), 0), title="mine").axes[0].get_title() == "mine"


def test_a_tensor_shows_its_values_and_whole_storage():
    x = cl.arange(10., 22.).view(3, 4)
    fig = draw_strides(x[:, ::2])
    text = _texts(fig)
    assert "storage: 12 cells, 6 read" in text
    assert "shape (3, 2)  stride (4, 2)  offset 0" in text
    for value in ("10.", "12.", "20."):
        assert value in text.split("\n")


def test_torch_tensor():
    torch = require_torch()
    t = torch.arange(12.).view(3, 4).t()
    fig = draw_strides(t)
    assert fig.axes[0].get_title() == "shape (4, 3)  stride (1, 4)  offset 0"
    assert "storage: 12 cells, 12 read" in _texts(fig)
    assert "11." in _texts(fig).split("\n")


def test_outside_the_storage_is_marked():
    fig = draw_strides(((3, 4), (4, 1), 3), storage_size=12)
    _, elements = _cells(fig.axes[0])
    assert sorted(i for i, _, hatched in elements if hatched) == [12, 13, 14]
    assert "reads outside the storage!" in _texts(fig)
    assert "storage: 12 cells, 9 read" in _texts(fig)


def test_empty_zero_d_and_big_storage():
    assert "(no elements)" in _texts(draw_strides(((2, 0), (1, 1), 0)))
    assert "1 element · contiguous" in _texts(draw_strides(((), (), 0)))
    window = draw_strides(cl.zeros(200)[150:153])
    storage, _ = _cells(window.axes[0])
    assert sorted(storage) == [149, 150, 151, 152, 153]
    assert "…" in _texts(window) and "storage: 200 cells, 3 read" in _texts(window)
    with pytest.raises(ValueError, match="too many to draw"):
        draw_strides(cl.zeros(20, 20))
    with pytest.raises(ValueError, match="span 100 storage cells"):
        draw_strides(((2,), (99,), 0))


def test_draws_into_given_axes_and_renders_png():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    try:
        assert draw_strides(((2, 2), (2, 1), 0), ax=axes[1]) is fig
        assert axes[1].get_title().startswith("shape (2, 2)")
    finally:
        plt.close(fig)
    png = draw_strides(((2, 2), (2, 1), 0))._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ the explorer


def _explorer_parts(box):
    preset = box.children[0]
    shape_box, stride_box = box.children[1].children
    offset_slider, storage_slider = box.children[2].children
    status = box.children[3]
    return preset, shape_box, stride_box, offset_slider, storage_slider, status


def test_explorer_follows_its_widgets():
    box = stride_explorer(shape=(3, 4), stride=(1, 3), storage_size=12)
    preset, shape_box, stride_box, offset_slider, storage_slider, status = _explorer_parts(box)
    assert box.geometry() == Geometry((3, 4), (1, 3), 0, 12)
    assert "as_strided((3, 4), (1, 3), 0)" in status.value and "is_contiguous: False" in status.value

    stride_box.value = "4, 1"
    assert box.geometry() == Geometry((3, 4), (4, 1), 0, 12)
    assert "is_contiguous: True" in status.value

    offset_slider.value = 3                         # rows now run past the end of the storage
    assert box.geometry().offset == 3 and "as_strided would raise" in status.value

    shape_box.value = "3, x"                        # a typo: an error, the last good geometry stays
    assert "whole numbers" in status.value and box.geometry().offset == 3

    preset.value = "transpose: .t()"
    assert box.geometry() == Geometry(*PRESETS["transpose: .t()"])
    assert shape_box.value == "4, 3" and stride_box.value == "1, 4"
    shape_box.value = "4, 2"                        # editing leaves the preset
    assert preset.value == "(your own)" and box.geometry().shape == (4, 2)


def test_explorer_defaults_and_presets():
    box = stride_explorer(shape=(2, 3))
    assert box.geometry() == Geometry((2, 3), (3, 1), 0, 6)
    preset = _explorer_parts(box)[0]
    for name, geom in PRESETS.items():
        preset.value = name
        assert box.geometry() == Geometry(*geom)
        assert geometry_error(box.geometry()) is None, name
