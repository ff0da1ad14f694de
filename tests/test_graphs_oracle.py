"""Message passing over an edge list against torch 2.13: the GCN aggregation (index_select, index_add),
GraphSAGE's mean and max aggregations (scatter_reduce with include_self=False, where a node without
incoming edges keeps the zero it started from) and their gradients, on a stochastic block model graph
with a few isolated nodes and float32 features, as chapter 09 uses them."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
from course_lib.datasets.graphs import stochastic_block_model


def _graph():
    g = stochastic_block_model((12, 10, 8), p_in=0.3, p_out=0.03, num_features=5, seed=4)
    keep = (g.edge_index[0] >= 3) & (g.edge_index[1] >= 3)               # nodes 0, 1, 2 become isolated
    return g.edge_index[:, keep], g.features, g.num_nodes


def _gcn(L, x, edge_index, n):
    src, dst = edge_index
    loops = L.arange(n)
    src, dst = L.cat([src, loops]), L.cat([dst, loops])
    deg = L.zeros(n).index_add(0, dst, L.ones(dst.shape[0]))
    w = deg.rsqrt()[src] * deg.rsqrt()[dst]
    return L.zeros(n, x.shape[1]).index_add(0, dst, x.index_select(0, src) * w[:, None])


def _scatter(reduce):
    def f(L, x, edge_index, n):
        src, dst = edge_index
        index = dst[:, None].expand(-1, x.shape[1])
        return L.zeros(n, x.shape[1]).scatter_reduce(0, index, x.index_select(0, src), reduce, include_self=False)
    return f


def _scatter_add(L, x, edge_index, n):
    src, dst = edge_index
    return L.zeros(n, x.shape[1]).scatter_add(0, dst[:, None].expand(-1, x.shape[1]), x.gather(
        0, src[:, None].expand(-1, x.shape[1])))


@pytest.mark.parametrize("aggregate", [_gcn, _scatter("mean"), _scatter("sum"), _scatter("amax"), _scatter_add],
                         ids=["gcn-index_add", "sage-mean", "sum", "amax", "scatter_add-gather"])
def test_aggregation_and_gradients_match_torch(aggregate):
    torch = require_torch()
    edge_index, features, n = _graph()
    weights = np.linspace(-1.0, 1.0, n * features.shape[1], dtype=np.float32).reshape(n, -1)
    results = {}
    for L in (cl, torch):
        x = L.tensor(features, requires_grad=True)
        out = aggregate(L, x, L.tensor(edge_index), n)
        (out * L.tensor(weights)).sum().backward()
        results[L.__name__] = (out.detach().numpy(), x.grad.numpy())
    (out_c, grad_c), (out_t, grad_t) = results["course_lib"], results["torch"]
    assert out_c.dtype == out_t.dtype == grad_c.dtype == grad_t.dtype == np.float32
    np.testing.assert_allclose(out_c, out_t, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_c, grad_t, rtol=1e-5, atol=1e-6)
    if aggregate is _gcn:                                                # isolated nodes: only the self-loop
        np.testing.assert_allclose(out_c[:3], features[:3], rtol=1e-6)
    else:                                                                # nothing arrives: the zero stays
        assert (out_c[:3] == 0).all()
