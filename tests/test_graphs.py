"""course_lib.datasets.graphs: the stochastic block model generator."""
from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

from course_lib.datasets.graphs import Graph, stochastic_block_model


def test_docstring_examples():
    result = doctest.testmod(importlib.import_module("course_lib.datasets.graphs"))
    assert result.failed == 0 and result.attempted > 0


def test_structure_of_the_edge_list():
    g = stochastic_block_model((40, 25, 35), p_in=0.3, p_out=0.05, num_features=5, signal=2.0, seed=3)
    assert isinstance(g, Graph) and g.num_nodes == 100
    src, dst = g.edge_index
    assert g.edge_index.dtype == np.int64 and g.edge_index.shape == (2, g.num_edges)
    assert (src != dst).all()                                         # no self-loops
    key = src * g.num_nodes + dst
    assert (np.diff(key) > 0).all()                                   # sorted by (source, target), no duplicates
    assert np.array_equal(np.sort(dst * g.num_nodes + src), key)      # every edge in both directions
    assert np.array_equal(g.degree(), np.bincount(dst, minlength=100))
    assert np.array_equal(g.labels, np.repeat([0, 1, 2], [40, 25, 35])) and g.labels.dtype == np.int64
    assert g.features.dtype == np.float32 and g.features.shape == (100, 5)
    # the community's feature carries the signal: its mean is about 2, the others' about 0
    means = np.stack([g.features[g.labels == c].mean(0) for c in range(3)])
    assert (np.abs(np.diag(means[:, :3]) - 2.0) < 0.6).all() and (np.abs(means[:, 3:]) < 0.6).all()


def test_edge_probabilities_and_seeding():
    g = stochastic_block_model((150, 150), p_in=0.2, p_out=0.02, seed=0)
    src, dst = g.edge_index
    same = g.labels[src] == g.labels[dst]
    inside_pairs, between_pairs = 2 * 150 * 149 / 2, 150 * 150
    p_in = same.sum() / 2 / inside_pairs
    p_out = (~same).sum() / 2 / between_pairs
    assert abs(p_in - 0.2) < 0.01 and abs(p_out - 0.02) < 0.004   # ~5 standard deviations
    again = stochastic_block_model((150, 150), p_in=0.2, p_out=0.02, seed=0)
    other = stochastic_block_model((150, 150), p_in=0.2, p_out=0.02, seed=1)
    assert np.array_equal(g.edge_index, again.edge_index) and np.array_equal(g.features, again.features)
    assert not np.array_equal(g.edge_index, other.edge_index)


def test_extreme_probabilities():
    full = stochastic_block_model((3, 2), p_in=1.0, p_out=1.0, num_features=2)
    assert full.num_edges == 5 * 4                                    # the complete graph
    empty = stochastic_block_model((3, 2), p_in=0.0, p_out=0.0, num_features=2)
    assert empty.edge_index.shape == (2, 0) and empty.edge_index.dtype == np.int64
    assert (empty.degree() == 0).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"sizes": ()}, "sizes must be"), ({"sizes": (3, 0)}, "sizes must be"), ({"p_in": 1.5}, "probabilities"),
    ({"p_out": -0.1}, "probabilities"), ({"sizes": (2, 2, 2), "num_features": 2}, "num_features"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        stochastic_block_model(**kwargs)
