"""Graphs with community structure: the stochastic block model, for learning on graphs (chapter 09).

>>> g = stochastic_block_model((30, 30, 30), p_in=0.2, p_out=0.01, num_features=8, seed=0)
>>> g.num_nodes, g.edge_index.shape[0], g.edge_index.dtype, g.labels.dtype, g.features.shape
(90, 2, dtype('int64'), dtype('int64'), (90, 8))
>>> src, dst = g.edge_index
>>> bool((src != dst).all())                      # no self-loops
True
>>> pairs = set(zip(src.tolist(), dst.tolist()))
>>> all((v, u) in pairs for u, v in pairs)        # undirected: every edge in both directions
True
>>> same = g.labels[src] == g.labels[dst]
>>> round(float(same.mean()), 2)                  # most edges stay inside a community
0.91

Nodes are numbered community by community (the first ``sizes[0]`` nodes are community 0, ...),
so the adjacency matrix drawn as an image shows the blocks on its diagonal. Each pair of distinct
nodes is joined independently, with probability ``p_in`` inside a community and ``p_out``
between two. The features are noise with a weak hint of the community: a node of community ``c``
gets ``signal`` added to feature ``c``. With a small ``signal`` a classifier that sees one node's
features alone does poorly, and one that also averages over the node's neighbours (most of them in
the same community) does well: the task needs the graph.

The module also has the few graph operations chapter 09 builds, as references (PyTorch has no
graph layer; the names follow PyTorch Geometric's): :func:`gcn_norm` (the coefficients of
D^-1/2 (A + I) D^-1/2 per edge), :func:`propagate` (a weighted sum over incoming edges, with
``index_add``), :func:`mean_aggregate` (the mean over incoming edges, with ``scatter_reduce``) and
:func:`random_walks` (DeepWalk's walks, all walkers one step at a time).

>>> import course_lib as cl
>>> edge_index = cl.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])        # the path 0 - 1 - 2
>>> loops, weight = gcn_norm(edge_index, 3)
>>> loops.tolist()
[[0, 1, 1, 2, 0, 1, 2], [1, 0, 2, 1, 0, 1, 2]]
>>> [round(w, 3) for w in weight.tolist()]
[0.408, 0.408, 0.408, 0.408, 0.5, 0.333, 0.5]
>>> propagate(cl.tensor([[1.], [10.], [100.]]), edge_index, cl.ones(4)).tolist()
[[10.0], [101.0], [10.0]]
>>> mean_aggregate(cl.tensor([[1.], [10.], [100.]]), edge_index).tolist()
[[10.0], [50.5], [10.0]]
>>> random_walks(edge_index.numpy(), np.array([0, 2]), 4, np.random.default_rng(0)).tolist()
[[0, 1, 0, 1], [2, 1, 0, 1]]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import course_lib as cl

__all__ = ["Graph", "stochastic_block_model", "gcn_norm", "propagate", "mean_aggregate", "random_walks"]


@dataclass(frozen=True)
class Graph:
    """A graph as an edge list with node labels and features (numpy arrays).

    ``edge_index`` has shape (2, E), int64: row 0 the source of each edge, row 1 its target. An
    undirected edge {u, v} appears twice, as u -> v and v -> u, so E is twice the number of
    undirected edges. Edges are sorted by source, then by target.
    """

    edge_index: np.ndarray
    labels: np.ndarray
    features: np.ndarray

    @property
    def num_nodes(self) -> int:
        return int(self.labels.shape[0])

    @property
    def num_edges(self) -> int:
        """E, the number of directed edges (twice the number of undirected ones)."""
        return int(self.edge_index.shape[1])

    def degree(self) -> np.ndarray:
        """The number of neighbours of each node (int64, shape (N,))."""
        return np.bincount(self.edge_index[0], minlength=self.num_nodes).astype(np.int64)


def stochastic_block_model(sizes: tuple[int, ...] | list[int] = (100, 100, 100), p_in: float = 0.1,
                           p_out: float = 0.01, num_features: int = 16, signal: float = 0.5,
                           seed: int = 0) -> Graph:
    """A random graph of ``len(sizes)`` communities of ``sizes[k]`` nodes each.

    Each of the N(N-1)/2 pairs of distinct nodes is an edge with probability ``p_in`` (same
    community) or ``p_out`` (different communities), drawn independently, all at once: memory grows
    as N^2, fine up to a few thousand nodes. Features: standard normal noise of width
    ``num_features`` (at least the number of communities), plus ``signal`` on the feature whose
    index is the node's community. The same ``seed`` always gives the same graph.
    """
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"sizes must be a non-empty list of positive community sizes, got {sizes}")
    if not (0.0 <= p_in <= 1.0 and 0.0 <= p_out <= 1.0):
        raise ValueError(f"p_in and p_out must be probabilities, got {p_in} and {p_out}")
    if num_features < len(sizes):
        raise ValueError(f"num_features ({num_features}) must be at least the number of communities ({len(sizes)})")
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    n = labels.shape[0]
    u, v = np.triu_indices(n, k=1)
    p = np.where(labels[u] == labels[v], p_in, p_out)
    keep = rng.random(u.shape[0]) < p
    u, v = u[keep], v[keep]
    src, dst = np.concatenate([u, v]), np.concatenate([v, u])
    order = np.lexsort((dst, src))                      # by source, then target
    edge_index = np.stack([src[order], dst[order]]).astype(np.int64)
    features = rng.standard_normal((n, num_features)).astype(np.float32)
    features[np.arange(n), labels] += np.float32(signal)
    return Graph(edge_index, labels, features)


def gcn_norm(edge_index: cl.Tensor, num_nodes: int) -> tuple[cl.Tensor, cl.Tensor]:
    """The edges of A + I and their weights in D^-1/2 (A + I) D^-1/2.

    ``edge_index`` (2, E) int64 has no self-loops. Returns ``(edge_index, weight)``: the given edges
    followed by the self-loops (0, 0), (1, 1), ..., and for each edge s -> t the weight
    ``deg[s] ** -0.5 * deg[t] ** -0.5`` (float32), where ``deg[i]`` counts the edges of A + I whose
    target is ``i`` (the messages node i receives, its own included).
    """
    loops = cl.arange(num_nodes)
    src, dst = cl.cat([edge_index[0], loops]), cl.cat([edge_index[1], loops])
    deg = cl.zeros(num_nodes).index_add(0, dst, cl.ones(dst.shape[0]))
    inv_sqrt = deg.rsqrt()
    return cl.stack([src, dst]), inv_sqrt[src] * inv_sqrt[dst]


def propagate(x: cl.Tensor, edge_index: cl.Tensor, edge_weight: cl.Tensor) -> cl.Tensor:
    """``out[t] = sum of edge_weight[e] * x[s]`` over the edges e = s -> t (zero where none arrives).

    Gathers one message per edge by source (``index_select``) and adds them up by target
    (``index_add``); differentiable in ``x`` and ``edge_weight``.
    """
    messages = x.index_select(0, edge_index[0]) * edge_weight[:, None]
    return cl.zeros(x.shape[0], x.shape[1], dtype=x.dtype).index_add(0, edge_index[1], messages)


def mean_aggregate(x: cl.Tensor, edge_index: cl.Tensor) -> cl.Tensor:
    """``out[t]`` = the mean of ``x[s]`` over the edges s -> t; zeros for a node no edge reaches.

    ``scatter_reduce(..., "mean", include_self=False)`` into zeros, the index expanded over the
    feature dimension (GraphSAGE's mean aggregator); differentiable in ``x``.
    """
    index = edge_index[1][:, None].expand(-1, x.shape[1])
    return cl.zeros(x.shape[0], x.shape[1], dtype=x.dtype).scatter_reduce(
        0, index, x.index_select(0, edge_index[0]), "mean", include_self=False)


def random_walks(edge_index: np.ndarray, starts: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """One random walk of ``length`` nodes from each of ``starts``: int64, shape (len(starts), length).

    ``walks[:, 0]`` is ``starts``; each next node is a neighbour of the current one drawn uniformly
    (a walk may come back where it was). ``edge_index`` (2, E) in any order; every node a walk
    reaches must have a neighbour. The neighbours are laid out by source (CSR: node v's are
    ``targets[offsets[v]:offsets[v + 1]]``), so that one step for all walkers is a few array
    operations: a Python loop over the steps, none over the walkers.
    """
    src, dst = np.asarray(edge_index[0], np.int64), np.asarray(edge_index[1], np.int64)
    starts = np.asarray(starts, np.int64)
    n = int(max(src.max(initial=-1), dst.max(initial=-1), starts.max(initial=-1))) + 1
    targets = dst[np.argsort(src, kind="stable")]
    degree = np.bincount(src, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(degree)])
    walks = np.empty((starts.shape[0], length), np.int64)
    walks[:, 0] = starts
    for step in range(1, length):
        here = walks[:, step - 1]
        if (degree[here] == 0).any():
            raise ValueError(f"node {int(here[degree[here] == 0][0])} has no neighbour: a walk cannot leave it")
        pick = (rng.random(here.shape[0]) * degree[here]).astype(np.int64)
        walks[:, step] = targets[offsets[here] + pick]
    return walks
