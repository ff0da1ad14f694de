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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Graph", "stochastic_block_model"]


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
