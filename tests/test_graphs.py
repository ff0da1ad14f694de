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


# ------------------------------------------------------------------ the graph operations, against dense matrices

def _directed(seed: int, n: int = 9, e: int = 25) -> np.ndarray:
    r = np.random.default_rng(seed)
    pairs = {(int(a), int(b)) for a, b in r.integers(0, n, (e, 2)) if a != b}
    return np.array(sorted(pairs), np.int64).T.reshape(2, -1)


@pytest.mark.parametrize("seed", [0, 1])
def test_gcn_norm_propagate_and_mean_against_dense(seed):
    import course_lib as cl
    from course_lib.datasets.graphs import gcn_norm, mean_aggregate, propagate
    n = 9
    ei = _directed(seed, n)
    adj = np.zeros((n, n))
    adj[ei[1], ei[0]] = 1                          # row = target: (A x)[t] sums over the edges s -> t
    a_hat = adj + np.eye(n)
    d = a_hat.sum(1) ** -0.5                       # in-degree with the self-loop
    loops, w = gcn_norm(cl.tensor(ei), n)
    assert loops.tolist() == np.concatenate([ei, np.tile(np.arange(n), (2, 1))], 1).tolist()
    assert w.dtype is cl.float32
    np.testing.assert_allclose(w.numpy(), d[loops.numpy()[0]] * d[loops.numpy()[1]], rtol=1e-6)

    x = np.random.default_rng(seed).normal(size=(n, 3))
    xt = cl.tensor(x, requires_grad=True)
    weight = cl.tensor(np.linspace(0.5, 2.0, ei.shape[1]), requires_grad=True)
    out = propagate(xt, cl.tensor(ei), weight)
    dense = np.zeros((n, n))
    np.add.at(dense, (ei[1], ei[0]), weight.detach().numpy())
    np.testing.assert_allclose(out.detach().numpy(), dense @ x, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), dense.T @ np.ones((n, 3)), rtol=1e-12)
    np.testing.assert_allclose(weight.grad.numpy(), x[ei[0]].sum(1), rtol=1e-12)

    mean = mean_aggregate(cl.tensor(x), cl.tensor(ei)).numpy()
    count = adj.sum(1, keepdims=True)
    np.testing.assert_allclose(mean, np.where(count > 0, adj @ x / np.maximum(count, 1), 0.0), rtol=1e-12)


def test_random_walks_follow_edges_uniformly():
    from course_lib.datasets.graphs import random_walks
    # a star (centre 0, leaves 1..4) joined to a triangle (4, 5, 6): degrees 4, 1, 1, 1, 3, 2, 2
    und = np.array([[0, 1], [0, 2], [0, 3], [0, 4], [4, 5], [5, 6], [6, 4]])
    ei = np.concatenate([und, und[:, ::-1]]).T[:, ::-1]                 # both directions, not sorted
    starts = np.tile(np.arange(7), 3000)
    walks = random_walks(ei, starts, 4, np.random.default_rng(0))
    assert walks.dtype == np.int64 and walks.shape == (21000, 4) and (walks[:, 0] == starts).all()
    counts = np.zeros((7, 7))
    np.add.at(counts, (walks[:, :-1].ravel(), walks[:, 1:].ravel()), 1)
    adj = np.zeros((7, 7), bool)
    adj[ei[0], ei[1]] = True
    assert (counts[~adj] == 0).all()                                     # every step follows an edge
    expected = counts.sum(1, keepdims=True) * adj / adj.sum(1, keepdims=True)
    assert (np.abs(counts - expected)[adj] < 5 * np.sqrt(expected[adj])).all()   # uniform over neighbours
    again = random_walks(ei, starts, 4, np.random.default_rng(0))
    assert np.array_equal(walks, again)
    assert random_walks(ei, np.array([3]), 1, np.random.default_rng(0)).tolist() == [[3]]
    with pytest.raises(ValueError, match="node 7 has no neighbour"):
        random_walks(ei, np.array([7]), 2, np.random.default_rng(0))
