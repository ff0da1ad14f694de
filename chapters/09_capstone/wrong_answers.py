"""Planted wrong answers for chapter 09 (capstone): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

import numpy as np

import course_lib as cl

WRONG: dict = {}

# ------------------------------------------------------------------ Part A

# ------------------------------------------------------------------ Part B

# 09.7 gcn_norm

def gcn_norm_no_self_loops(edge_index, num_nodes):
    """Forgets the self-loops: the plain D^-1/2 A D^-1/2 (an isolated node divides by zero)."""
    target = edge_index[1]
    deg = cl.zeros(num_nodes).index_add(0, target, cl.ones(target.shape[0]))
    inv = deg.rsqrt()
    return edge_index, inv[edge_index[0]] * inv[target]


def gcn_norm_loops_not_counted(edge_index, num_nodes):
    """Appends the self-loops but counts the degrees without them."""
    loops = cl.arange(num_nodes)
    deg = cl.zeros(num_nodes).index_add(0, edge_index[1], cl.ones(edge_index.shape[1])).clamp(min=1)
    source, target = cl.cat([edge_index[0], loops]), cl.cat([edge_index[1], loops])
    inv = deg.rsqrt()
    return cl.stack([source, target]), inv[source] * inv[target]


def gcn_norm_mean(edge_index, num_nodes):
    """D^-1 (A + I): divides by the target's degree instead of D^-1/2 on both sides."""
    loops = cl.arange(num_nodes)
    source, target = cl.cat([edge_index[0], loops]), cl.cat([edge_index[1], loops])
    deg = cl.zeros(num_nodes).index_add(0, target, cl.ones(target.shape[0]))
    return cl.stack([source, target]), 1 / deg[target]


def gcn_norm_by_source(edge_index, num_nodes):
    """Counts the degrees by source (out-degree): the same on an undirected graph, wrong on a directed one."""
    loops = cl.arange(num_nodes)
    source, target = cl.cat([edge_index[0], loops]), cl.cat([edge_index[1], loops])
    deg = cl.zeros(num_nodes).index_add(0, source, cl.ones(source.shape[0]))
    inv = deg.rsqrt()
    return cl.stack([source, target]), inv[source] * inv[target]


def gcn_norm_loops_first(edge_index, num_nodes):
    """Puts the self-loops before the edges."""
    loops = cl.arange(num_nodes)
    source, target = cl.cat([loops, edge_index[0]]), cl.cat([loops, edge_index[1]])
    deg = cl.zeros(num_nodes).index_add(0, target, cl.ones(target.shape[0]))
    inv = deg.rsqrt()
    return cl.stack([source, target]), inv[source] * inv[target]


def gcn_norm_float64(edge_index, num_nodes):
    """Right values, computed in numpy: float64 weights."""
    ei = edge_index.numpy()
    loops = np.arange(num_nodes)
    source, target = np.concatenate([ei[0], loops]), np.concatenate([ei[1], loops])
    inv = np.bincount(target, minlength=num_nodes) ** -0.5
    return cl.tensor(np.stack([source, target])), cl.tensor(inv[source] * inv[target])


# 09.8 propagate

def propagate_by_target(x, edge_index, edge_weight):
    """Aggregates the wrong way round: gathers from targets and adds into sources."""
    messages = x.index_select(0, edge_index[1]) * edge_weight[:, None]
    return cl.zeros(x.shape[0], x.shape[1], dtype=x.dtype).index_add(0, edge_index[0], messages)


def propagate_unweighted(x, edge_index, edge_weight):
    """Forgets the weights."""
    return cl.zeros(x.shape[0], x.shape[1], dtype=x.dtype).index_add(0, edge_index[1], x.index_select(0, edge_index[0]))


def propagate_assign(x, edge_index, edge_weight):
    """Writes the messages with indexing: at a repeated target the last message wins instead of adding up."""
    out = cl.zeros(x.shape[0], x.shape[1], dtype=x.dtype)
    out[edge_index[1]] = x[edge_index[0]] * edge_weight[:, None]
    return out


def propagate_numpy(x, edge_index, edge_weight):
    """Right values through numpy: no gradient reaches x or the weights."""
    out = np.zeros(tuple(x.shape), dtype=x.detach().numpy().dtype)
    ei = edge_index.numpy()
    np.add.at(out, ei[1], x.detach().numpy()[ei[0]] * edge_weight.detach().numpy()[:, None])
    return cl.tensor(out)


def propagate_into_x(x, edge_index, edge_weight):
    """Adds the messages into x itself (index_add_ on a clone would be right; this keeps x's own row too)."""
    return x.clone().index_add_(0, edge_index[1], x.index_select(0, edge_index[0]) * edge_weight[:, None])


def propagate_float32(x, edge_index, edge_weight):
    """Starts from float32 zeros whatever x's dtype."""
    messages = x.index_select(0, edge_index[0]) * edge_weight[:, None]
    return cl.zeros(x.shape[0], x.shape[1]).index_add(0, edge_index[1], messages.float())


def propagate_dense(x, edge_index, edge_weight):
    """Builds the N x N matrix and multiplies: the check forbids matmul."""
    n = x.shape[0]
    m = cl.zeros(n * n, dtype=x.dtype).index_add(0, edge_index[1] * n + edge_index[0], edge_weight).view(n, n)
    return m @ x


# 09.9 mean_aggregate

def mean_aggregate_include_self(x, edge_index):
    """Leaves include_self=True: the starting zero counts in every mean."""
    index = edge_index[1][:, None].expand(-1, x.shape[1])
    return cl.zeros(x.shape[0], x.shape[1]).scatter_reduce(0, index, x.index_select(0, edge_index[0]), "mean")


def mean_aggregate_sum(x, edge_index):
    """The sum, not the mean."""
    index = edge_index[1][:, None].expand(-1, x.shape[1])
    return cl.zeros(x.shape[0], x.shape[1]).scatter_reduce(0, index, x.index_select(0, edge_index[0]), "sum",
                                                           include_self=False)


def mean_aggregate_first_column(x, edge_index):
    """An index of shape (E, 1): scatter ops follow the index's shape, so only column 0 is aggregated."""
    index = edge_index[1][:, None]
    return cl.zeros(x.shape[0], x.shape[1]).scatter_reduce(0, index, x.index_select(0, edge_index[0]), "mean",
                                                           include_self=False)


def mean_aggregate_by_source(x, edge_index):
    """Averages over outgoing edges instead of incoming ones."""
    index = edge_index[0][:, None].expand(-1, x.shape[1])
    return cl.zeros(x.shape[0], x.shape[1]).scatter_reduce(0, index, x.index_select(0, edge_index[1]), "mean",
                                                           include_self=False)


# 09.10 random_walks

def _csr(edge_index, n):
    source, target = edge_index
    degree = np.bincount(source, minlength=n)
    return target[np.argsort(source, kind="stable")], degree, np.concatenate([[0], np.cumsum(degree)])


def random_walks_jump(edge_index, starts, length, rng):
    """Jumps to any node, edge or not."""
    n = int(edge_index.max()) + 1
    walks = rng.integers(0, n, size=(len(starts), length)).astype(np.int64)
    walks[:, 0] = starts
    return walks


def random_walks_unsorted(edge_index, starts, length, rng):
    """Assumes the edge list is sorted by source (it is in any order)."""
    source, target = edge_index
    n = int(max(source.max(), starts.max())) + 1
    degree = np.bincount(source, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(degree)])
    walks = np.empty((len(starts), length), dtype=np.int64)
    walks[:, 0] = starts
    for k in range(1, length):
        here = walks[:, k - 1]
        walks[:, k] = target[offsets[here] + (rng.random(len(starts)) * degree[here]).astype(np.int64)]
    return walks


def random_walks_first_neighbour(edge_index, starts, length, rng):
    """Always takes a node's first neighbour: a walk, but not a random one."""
    n = int(max(edge_index.max(), starts.max())) + 1
    targets, degree, offsets = _csr(edge_index, n)
    walks = np.empty((len(starts), length), dtype=np.int64)
    walks[:, 0] = starts
    for k in range(1, length):
        walks[:, k] = targets[offsets[walks[:, k - 1]]]
    return walks


def random_walks_biased(edge_index, starts, length, rng):
    """Draws an integer below the largest degree and wraps it with %: small indices come up more often."""
    n = int(max(edge_index.max(), starts.max())) + 1
    targets, degree, offsets = _csr(edge_index, n)
    walks = np.empty((len(starts), length), dtype=np.int64)
    walks[:, 0] = starts
    for k in range(1, length):
        here = walks[:, k - 1]
        walks[:, k] = targets[offsets[here] + rng.integers(0, degree.max(), len(starts)) % degree[here]]
    return walks


def random_walks_global_rng(edge_index, starts, length, rng):
    """Draws from numpy's global generator instead of rng: not reproducible from the seed."""
    n = int(max(edge_index.max(), starts.max())) + 1
    targets, degree, offsets = _csr(edge_index, n)
    walks = np.empty((len(starts), length), dtype=np.int64)
    walks[:, 0] = starts
    for k in range(1, length):
        here = walks[:, k - 1]
        walks[:, k] = targets[offsets[here] + (np.random.random(len(starts)) * degree[here]).astype(np.int64)]
    return walks


def random_walks_one_step_too_many(edge_index, starts, length, rng):
    """`length` steps, so length + 1 nodes."""
    n = int(max(edge_index.max(), starts.max())) + 1
    targets, degree, offsets = _csr(edge_index, n)
    walks = [np.asarray(starts, np.int64)]
    for _ in range(length):
        here = walks[-1]
        walks.append(targets[offsets[here] + (rng.random(len(starts)) * degree[here]).astype(np.int64)])
    return np.stack(walks, 1)


def random_walks_per_walker(edge_index, starts, length, rng):
    """Right walks, one walker at a time: a Python loop over the walkers."""
    n = int(max(edge_index.max(), starts.max())) + 1
    targets, degree, offsets = _csr(edge_index, n)
    walks = np.empty((len(starts), length), dtype=np.int64)
    for i, v in enumerate(starts):
        walks[i, 0] = v
        for k in range(1, length):
            v = targets[offsets[v] + rng.integers(degree[v])]
            walks[i, k] = v
    return walks


def random_walks_library(edge_index, starts, length, rng):
    """Calls course_lib's graphs.random_walks, which the check forbids."""
    from course_lib.datasets import graphs
    return graphs.random_walks(edge_index, starts, length, rng)


WRONG.update({
    "09.7": [gcn_norm_no_self_loops, gcn_norm_loops_not_counted, gcn_norm_mean, gcn_norm_by_source,
             gcn_norm_loops_first, gcn_norm_float64],
    "09.8": [propagate_by_target, propagate_unweighted, propagate_assign, propagate_numpy, propagate_into_x,
             propagate_float32, propagate_dense],
    "09.9": [mean_aggregate_include_self, mean_aggregate_sum, mean_aggregate_first_column, mean_aggregate_by_source],
    "09.10": [random_walks_jump, random_walks_unsorted, random_walks_first_neighbour, random_walks_biased,
              random_walks_global_rng, random_walks_one_step_too_many, random_walks_per_walker,
              random_walks_library],
})
