# ---
# jupyter:
#   course:
#     title: Capstone
# ---

# %% [markdown] id="intro"
# # 09 · Capstone: train, resume, fine-tune, compile and ship a ResNet; learning on graphs
#
# (Introduction: written with Part A.)

# %% id="setup"
import time

import numpy as np

import course_lib as cl
from course import check
from course_lib import nn
from course_lib.datasets import graphs
from course_lib.nn import functional as F

# %% [markdown] id="part-a"
# ## Part A · A ResNet, trained for real

# %% [markdown] id="part-b"
# ## Part B · Learning on graphs
#
# Images live on a grid: every pixel has the same neighbours (left, right, up, down), which is what lets a
# convolution slide one small kernel over the whole picture. Many data sets have neighbours but no grid:
# people and who follows whom, papers and what they cite, atoms and their bonds, web pages and their links.
# That structure is a **graph**, and the number of neighbours changes from node to node. Part B builds the
# three classic ways to learn on one, each from PyTorch ops you already have:
#
# - the **graph convolutional network** (GCN), derived from the graph Laplacian, computed as *message
#   passing*: gather one message per edge, then add the messages up at each edge's target (`index_select`
#   and `index_add`);
# - **GraphSAGE**'s mean aggregation, the same pattern with `scatter_reduce(..., "mean")`;
# - **DeepWalk**, which learns a vector per node with no labels at all: random walks over the graph become
#   "sentences", and a skip-gram model with `nn.Embedding` learns from them as word2vec learns from text.
#
# The data is a **stochastic block model** (SBM): nodes in communities, an edge between two nodes of one
# community much more likely than across communities. Each node also has a few features that only hint at
# its community. The task: given the community of 20 nodes per community, find everyone else's.

# %% [markdown] id="graph-data-md"
# ### B.1 · A graph as an edge list
#
# A graph of N nodes is stored as an **edge list**: a `(2, E)` int64 tensor whose column `e` is one edge,
# `edge_index[0, e]` its **source** and `edge_index[1, e]` its **target**. An undirected edge {u, v} is
# stored twice, as u → v and v → u, so that every node hears from every neighbour. This costs memory in
# proportion to E, while the N × N **adjacency matrix** A (`A[t, s] = 1` if there is an edge s → t) costs
# N²: a social network of a million people and a hundred friends each has 10⁸ edges and 10¹² matrix entries.
#
# `graphs.stochastic_block_model` draws every pair of nodes independently: an edge with probability `p_in`
# inside a community, `p_out` between two. The nodes come numbered community by community, so the adjacency
# matrix shows the communities as dense blocks on its diagonal.

# %% id="graph-data"
g = graphs.stochastic_block_model((100, 100, 100, 100), p_in=0.1, p_out=0.01, num_features=16, signal=0.6,
                                  seed=0)
num_nodes, num_classes = g.num_nodes, 4
edge_index = cl.tensor(g.edge_index)
x, y = cl.tensor(g.features), cl.tensor(g.labels)
src, dst = g.edge_index
inside = g.labels[src] == g.labels[dst]
print(f"{num_nodes} nodes, {g.num_edges} directed edges ({g.num_edges // 2} undirected), "
      f"degree {g.degree().mean():.1f} on average; {inside.mean():.0%} of the edges stay inside a community")
print("edge_index[:, :6] =", edge_index[:, :6].tolist())

# %% id="graph-figure" grader_runs="print('`course grade` skips the figure')"
import matplotlib.pyplot as plt

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.scatter(src, dst, s=0.3, c="k")
ax1.set(xlim=(0, num_nodes), ylim=(num_nodes, 0), aspect="equal", title="adjacency: a dot per edge",
        xlabel="source", ylabel="target")
ax2.hist([g.degree()[g.labels == c] for c in range(num_classes)], bins=15, stacked=True,
         label=[f"community {c}" for c in range(num_classes)])
ax2.set(title="degrees", xlabel="number of neighbours", ylabel="nodes")
ax2.legend()
plt.show()

# %% [markdown] id="graph-split-md"
# The features alone say little: a node of community `c` has 0.6 added to its feature `c`, under noise of
# standard deviation 1. A classifier that sees one node at a time must mostly guess. But about four in five
# of a node's neighbours share its community (78% of the edges stay inside one), so averaging over them
# cancels much of the noise: the graph carries the information. Only 20 nodes per community are labelled
# for training (semi-supervised node classification, the setting of the GCN paper); the other 320 are the
# test set.

# %% id="graph-split"
split = np.random.default_rng(1).permutation(num_nodes)
train_idx = np.sort(np.concatenate([split[g.labels[split] == c][:20] for c in range(num_classes)]))
test_idx = np.setdiff1d(np.arange(num_nodes), train_idx)
train_idx, test_idx = cl.tensor(train_idx), cl.tensor(test_idx)
print(f"{len(train_idx)} labelled nodes, {len(test_idx)} to classify")

# %% [markdown] id="laplacian-md"
# ### B.2 · From the graph Laplacian to the GCN layer
#
# Put one number on every node: a **signal** x of length N (one feature of every node, say). How much does
# it change across the edges? With D the diagonal matrix of degrees, the **graph Laplacian** L = D − A
# answers it:
#
# $$x^\top L x \;=\; \sum_{\{i,j\}\ \text{edge}} (x_i - x_j)^2 .$$
#
# (Expand the right side: an edge {i, j} contributes xᵢ² + xⱼ² − 2xᵢxⱼ. Node i's xᵢ² comes once per edge
# at i, dᵢ times in all, which adds up to xᵀDx, and the cross terms add up to −xᵀAx.) L is symmetric with
# eigenvalues 0 = λ₁ ≤ λ₂ ≤ … ≤ λ_N and orthonormal eigenvectors u₁, …, u_N, and for an eigenvector
# uₖᵀ L uₖ = λₖ: a small eigenvalue belongs to a signal that hardly changes across edges (u₁ is
# constant on each connected piece), a large one to a signal that flips sign from neighbour to neighbour. The
# eigenvectors are the graph's **frequencies**, as sines and cosines are a line's. Writing a signal in that
# basis, x̂ = Uᵀx, is the **graph Fourier transform**, and x = Ux̂ takes it back.
#
# A convolution is a product in the frequency domain (the convolution theorem), so a **graph convolution**
# with a filter g multiplies each frequency by g(λₖ):
#
# $$g * x \;=\; U\, g(\Lambda)\, U^\top x .$$
#
# Taken literally this is useless for learning: it needs all eigenvectors (O(N³) work), a filter has N free
# numbers, and it mixes every node with every other. Make g a polynomial of degree K instead:
# U p(Λ) Uᵀ = p(L), a sum of powers of L, and Lᵏx only mixes nodes at most k edges apart. The filter is now
# **local**, has K + 1 numbers, and costs K passes over the edges, with no eigenvectors at all.
#
# The GCN (Kipf and Welling, 2017) keeps K = 1 and makes three choices:
#
# 1. Use the **normalised** Laplacian L_sym = I − D^-1/2 A D^-1/2, whose eigenvalues lie in [0, 2] whatever
#    the degrees. A degree-1 filter is θ₀x + θ₁(L_sym − I)x = θ₀x − θ₁D^-1/2 A D^-1/2 x.
# 2. Tie the two numbers, θ = θ₀ = −θ₁: the filter is θ(I + D^-1/2 A D^-1/2)x, one number per filter.
# 3. That matrix has eigenvalues in [0, 2]: a network that applies it layer after layer multiplies some
#    signals by up to 2 each time, and its activations and gradients blow up. The **renormalisation trick**
#    adds the self-loops first, Â = A + I, with D̂ the degrees of Â, and uses D̂^-1/2 Â D̂^-1/2, whose
#    eigenvalues lie in (−1, 1].
#
# With F features per node (a matrix X of N × F) and one θ per pair of input and output features (a weight
# matrix W of F × F′), a **GCN layer** is
#
# $$H \;=\; \hat D^{-1/2} \hat A \hat D^{-1/2}\, X W .$$
#
# Row t of it, edge by edge: node t receives x_s W from each s with an edge s → t and from itself, weighted
# by 1 / √(d̂_s d̂_t). Two layers with a ReLU between see two hops.
#
# The next cell checks these claims on a small SBM of three communities with dense numpy matrices: the
# Laplacian's quadratic form, the spectrum, and the eigenvalues of the two propagation matrices. Three
# eigenvalues sit near 0, one per community, before a gap: their eigenvectors change little across edges,
# so they are nearly constant on each community, and plotting each node at (u₂, u₃) separates the
# communities (spectral clustering is exactly this). Ten applications of the first-order matrix can multiply
# a signal by up to 2¹⁰; the renormalised one can only shrink it.

# %% id="laplacian-demo" grader_runs="print('`course grade` skips this demonstration')"
small = graphs.stochastic_block_model((20, 20, 20), p_in=0.4, p_out=0.02, num_features=3, seed=2)
n = small.num_nodes
A = np.zeros((n, n))
A[small.edge_index[1], small.edge_index[0]] = 1
D = np.diag(A.sum(1))
L = D - A
signal = np.random.default_rng(0).normal(size=n)
s, t = small.edge_index[:, small.edge_index[0] < small.edge_index[1]]          # each undirected edge once
print(f"x^T L x = {signal @ L @ signal:.4f};  "
      f"sum over edges of (x_i - x_j)^2 = {((signal[s] - signal[t]) ** 2).sum():.4f}")

d_inv_sqrt = np.diag(A.sum(1) ** -0.5)
A_hat = A + np.eye(n)
d_hat_inv_sqrt = np.diag(A_hat.sum(1) ** -0.5)
first_order = np.eye(n) + d_inv_sqrt @ A @ d_inv_sqrt
renormalised = d_hat_inv_sqrt @ A_hat @ d_hat_inv_sqrt
lam, U = np.linalg.eigh(np.eye(n) - d_inv_sqrt @ A @ d_inv_sqrt)               # L_sym
for name, M in [("I + D^-1/2 A D^-1/2", first_order), ("D^-1/2 (A + I) D^-1/2", renormalised)]:
    ev = np.linalg.eigvalsh(M)
    grow = np.linalg.norm(np.linalg.matrix_power(M, 10) @ signal) / np.linalg.norm(signal)
    print(f"{name:22}: eigenvalues in [{ev.min():+.3f}, {ev.max():+.3f}]; 10 applications scale x by {grow:8.2f}")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
ax1.plot(lam, ".")
ax1.set(title="eigenvalues of L_sym: the frequencies", xlabel="k", ylabel="λ_k")
ax2.scatter(U[:, 1], U[:, 2], c=small.labels, cmap="viridis")
ax2.set(title="each node at (u_2, u_3), coloured by community", xlabel="u_2", ylabel="u_3")
plt.show()

# %% [markdown] id="ex-09-7-task"
# Dense matrices were fine for 60 nodes. For the edge list we need the weight of every edge of Â, its
# **normalisation coefficient**.
#
# ## Exercise 09.7 · gcn_norm: the coefficients of D̂^-1/2 (A + I) D̂^-1/2 (2 points)
#
# Write `gcn_norm(edge_index, num_nodes)`. `edge_index` is a `(2, E)` int64 course_lib tensor of edges
# source → target, with no self-loops; the graph may be **directed** (then an edge s → t need not have t → s).
# Return `(edge_index_hat, weight)`:
#
# - `edge_index_hat`, `(2, E + num_nodes)` int64: the given edges in their order, **followed by** the
#   self-loops (0, 0), (1, 1), …, (num_nodes − 1, num_nodes − 1);
# - `weight`, `(E + num_nodes,)` float32: for each edge s → t of `edge_index_hat`,
#   `deg[s] ** -0.5 * deg[t] ** -0.5`, where `deg[i]` is the number of edges of `edge_index_hat` whose
#   **target** is i (the messages node i receives, its own included: its in-degree plus one).
#
# Use course_lib tensor ops (`cl.arange`, `cl.cat`, `cl.stack`, `index_add` or `scatter_add` to count,
# `rsqrt`, indexing with a tensor); no Python loop over edges or nodes. The check forbids course_lib's own
# `graphs.gcn_norm`.
#
# *Hint:* `deg = cl.zeros(num_nodes).index_add(0, target, cl.ones(len(target)))` counts; then
# `inv = deg.rsqrt()` and `inv[source] * inv[target]`.

# %% id="ex-09-7-solution" tags=["solution"] exercise="09.7"
import course_lib as cl


def gcn_norm(edge_index, num_nodes):
    """The edges of A + I (the self-loops appended) and their weights in D^-1/2 (A + I) D^-1/2."""
    ### BEGIN SOLUTION
    loops = cl.arange(num_nodes)
    source = cl.cat([edge_index[0], loops])
    target = cl.cat([edge_index[1], loops])
    deg = cl.zeros(num_nodes).index_add(0, target, cl.ones(target.shape[0]))
    inv_sqrt = deg.rsqrt()
    return cl.stack([source, target]), inv_sqrt[source] * inv_sqrt[target]
    ### END SOLUTION


# %% id="ex-09-7-check" tags=["check", "nbval-check-output"] exercise="09.7" points=2
check("09.7", gcn_norm)

# %% [markdown] id="message-md"
# ### B.3 · Message passing: gather by source, scatter-add to targets
#
# With the coefficients in hand, D̂^-1/2 Â D̂^-1/2 X is computed without any N × N matrix, in two steps
# over the edge list:
#
# 1. **gather**: one message per edge, the source's row: `x.index_select(0, source)` (E × F), times the
#    edge's weight;
# 2. **scatter-add**: add each message into the row of its target: `out.index_add(0, target, messages)`.
#
# `index_add(dim, index, source)` adds row `k` of `source` into row `index[k]` of a copy of `self`;
# repeated indices add up, which is the whole point: a node with five incoming edges receives five messages.
# Both steps are differentiable. The gradient of a gather is a scatter-add of the gradients (each row of x
# gets back the gradient of every message it sent), and the gradient of a scatter-add is a gather (each
# message gets its target's gradient): autograd passes messages the other way along the edges.

# %% id="message-demo"
print("index_add on numbers:", cl.zeros(3).index_add(0, cl.tensor([0, 0, 2]), cl.tensor([1., 2., 3.])).tolist())
path = cl.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])                              # the path 0 - 1 - 2
h = cl.tensor([[1., 0.], [10., 0.], [100., 1.]], requires_grad=True)
messages = h.index_select(0, path[0])
print("messages (one row per edge):", messages.tolist())
summed = cl.zeros(3, 2).index_add(0, path[1], messages)
print("summed at the targets:      ", summed.tolist())
summed[1].sum().backward()
print("gradient of node 1's sum with respect to h:", h.grad.tolist(), "(its neighbours 0 and 2)")

# %% [markdown] id="ex-09-8-task"
# ## Exercise 09.8 · propagate: weighted message passing with index_add (1 point)
#
# Write `propagate(x, edge_index, edge_weight)`: `x` is `(N, F)` float, `edge_index` `(2, E)` int64 (any
# graph, directed or not, in any order), `edge_weight` `(E,)` of the dtype of x. Return the `(N, F)` tensor
#
# `out[t] = sum of edge_weight[e] * x[s]` over the edges e = s → t (a row of zeros where no edge arrives),
#
# with `index_select` (or indexing) to gather and `index_add` to scatter. The result has the dtype of `x`
# (float32 or float64). It must be differentiable in both `x` and `edge_weight`, and leave `x` unchanged.
# Do not build an N × N matrix: the check forbids `matmul`, `mm`, `einsum`, the operator `@`
# (`Tensor.__matmul__`, `__rmatmul__`) and course_lib's own `graphs.propagate`.
#
# *Hint:* `edge_weight[:, None]` broadcasts one weight over a message's F features.

# %% id="ex-09-8-solution" tags=["solution"] exercise="09.8"
def propagate(x, edge_index, edge_weight):
    """out[t] = sum over the edges s -> t of edge_weight * x[s]."""
    ### BEGIN SOLUTION
    messages = x.index_select(0, edge_index[0]) * edge_weight[:, None]
    return cl.zeros(x.shape[0], x.shape[1], dtype=x.dtype).index_add(0, edge_index[1], messages)
    ### END SOLUTION


# %% id="ex-09-8-check" tags=["check", "nbval-check-output"] exercise="09.8" points=1
check("09.8", propagate)

# %% [markdown] id="gcn-md"
# > **In PyTorch:** PyTorch has the scatter ops and no graph layer. `index_add_`, `scatter_add_` and
# > `scatter_reduce_` are in `aten/src/ATen/native/TensorAdvancedIndexing.cpp`, their derivatives in
# > `tools/autograd/derivatives.yaml`. PyTorch Geometric builds on them: `gcn_norm` in
# > `torch_geometric/nn/conv/gcn_conv.py` is exercise 09.7 (with `add_remaining_self_loops` and a `scatter`
# > that counts the degrees by target), and `MessagePassing.propagate` in
# > `torch_geometric/nn/conv/message_passing.py` gathers with `index_select` and aggregates with a `scatter`
# > (`torch_geometric/utils/_scatter.py`, which calls `scatter_add_` or `scatter_reduce_`). DGL does the same
# > with its own kernels, and TensorFlow's version of the pattern is `tf.gather` followed by
# > `tf.math.unsorted_segment_sum`.
#
# ### B.4 · Training a GCN, and a baseline that ignores the graph
#
# Two GCN layers with a ReLU and dropout between them, trained with cross-entropy on the 80 labelled nodes
# only; every node's features go through the network at each step, because the labelled ones need their
# neighbours' messages. The baseline is the same network without the propagation: an MLP that sees each node
# alone. The cells below use course_lib's `graphs.gcn_norm` and `graphs.propagate`, which follow the
# contracts of 09.7 and 09.8 (your own functions work the same: swap them in).
#
# The normalised edge list is computed once, before training: it depends on the graph only. `EPOCHS` and
# `SKIPGRAM_STEPS` (B.6) set the lengths of the training runs; `course grade` runs 5 and 10.

# %% id="graph-budget" tags=["long"] grader_runs="EPOCHS, SKIPGRAM_STEPS = 5, 10"
EPOCHS, SKIPGRAM_STEPS = 100, 300

# %% id="gcn-train"
class GCN(nn.Module):
    """Two GCN layers: propagate(x W1) -> ReLU -> dropout -> propagate(h W2)."""

    def __init__(self, in_features, hidden, out_features, edge_index, num_nodes, p=0.5):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(in_features, hidden), nn.Linear(hidden, out_features)
        self.dropout = nn.Dropout(p)
        self.edge_index, self.edge_weight = graphs.gcn_norm(edge_index, num_nodes)

    def forward(self, x):
        h = F.relu(graphs.propagate(self.lin1(x), self.edge_index, self.edge_weight))
        return graphs.propagate(self.lin2(self.dropout(h)), self.edge_index, self.edge_weight)


class MLP(nn.Module):
    """The same network without the graph."""

    def __init__(self, in_features, hidden, out_features, p=0.5):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(in_features, hidden), nn.Linear(hidden, out_features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.lin2(self.dropout(F.relu(self.lin1(x))))


def fit(model, epochs, lr=0.01):
    """Full-batch training on the labelled nodes; the test accuracy after each epoch."""
    opt = cl.optim.Adam(model.parameters(), lr=lr, weight_decay=5e-4)
    accuracies = []
    for _ in range(epochs):
        model.train()
        loss = F.cross_entropy(model(x)[train_idx], y[train_idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.eval()
        with cl.no_grad():
            accuracies.append((model(x).argmax(1)[test_idx] == y[test_idx]).float().mean().item())
    return accuracies


curves = {}
for name, make in [("MLP (no graph)", lambda: MLP(16, 16, num_classes)),
                   ("GCN", lambda: GCN(16, 16, num_classes, edge_index, num_nodes))]:
    cl.manual_seed(0)
    start = time.perf_counter()
    curves[name] = fit(make(), EPOCHS)
    print(f"{name:15} test accuracy {curves[name][-1]:.1%}   ({EPOCHS} epochs in {time.perf_counter() - start:.1f} s)")

# %% [markdown] id="sage-md"
# The graph does the work: the MLP does little better than chance (25%, one community in four), the GCN
# classifies nearly every node, from the same features and the same 80 labels (the figure after B.5 shows
# both curves).
#
# ### B.5 · GraphSAGE: the mean of the neighbours, and the node itself apart
#
# GraphSAGE (Hamilton, Ying and Leskovec, 2017) changes two things. Its aggregation is a plain **mean** over
# the incoming edges, D⁻¹A instead of the symmetric D̂^-1/2 Â D̂^-1/2, and the node's own features get their own
# weight matrix instead of arriving as a self-loop message:
#
# $$h_t' = W_{\text{self}}\, h_t + W_{\text{neigh}} \cdot \operatorname{mean}_{s \to t} h_s .$$
#
# The mean over incoming edges is one op: `scatter_reduce(0, index, messages, "mean", include_self=False)`
# into zeros, with `index` the targets repeated along the feature dimension (scatter ops take an index of
# the same shape as the values: `target[:, None].expand(-1, F)`). `include_self=False` matters twice: the
# zeros the result starts from take no part in the mean, and a node with no incoming edge keeps its zero
# row. A mean treats a node with 3 neighbours and one with 300 alike, which is why GraphSAGE can also
# **sample** a fixed number of neighbours per node on huge graphs (not done here).

# %% [markdown] id="ex-09-9-task"
# ## Exercise 09.9 · mean_aggregate with scatter_reduce (1 point)
#
# Write `mean_aggregate(x, edge_index)`: `x` `(N, F)` float, `edge_index` `(2, E)` int64 (any graph, in any
# order, possibly with nodes no edge reaches). Return `(N, F)`: row t is the mean of `x[s]` over the edges
# s → t, a row of zeros if there are none. Use `scatter_reduce` with `"mean"`; differentiable in x. The check
# forbids course_lib's own `graphs.mean_aggregate`.

# %% id="ex-09-9-solution" tags=["solution"] exercise="09.9"
def mean_aggregate(x, edge_index):
    """Row t: the mean of x[s] over the edges s -> t (zeros if none)."""
    ### BEGIN SOLUTION
    index = edge_index[1][:, None].expand(-1, x.shape[1])
    return cl.zeros(x.shape[0], x.shape[1], dtype=x.dtype).scatter_reduce(
        0, index, x.index_select(0, edge_index[0]), "mean", include_self=False)
    ### END SOLUTION


# %% id="ex-09-9-check" tags=["check", "nbval-check-output"] exercise="09.9" points=1
check("09.9", mean_aggregate)

# %% [markdown] id="sage-train-md"
# Two SAGE layers, trained like the GCN (with course_lib's `graphs.mean_aggregate`):

# %% id="sage-train"
class SAGE(nn.Module):
    """Two GraphSAGE layers with the mean aggregator."""

    def __init__(self, in_features, hidden, out_features, edge_index, p=0.5):
        super().__init__()
        self.self1, self.neigh1 = nn.Linear(in_features, hidden), nn.Linear(in_features, hidden, bias=False)
        self.self2, self.neigh2 = nn.Linear(hidden, out_features), nn.Linear(hidden, out_features, bias=False)
        self.dropout = nn.Dropout(p)
        self.edge_index = edge_index

    def forward(self, x):
        h = F.relu(self.self1(x) + self.neigh1(graphs.mean_aggregate(x, self.edge_index)))
        h = self.dropout(h)
        return self.self2(h) + self.neigh2(graphs.mean_aggregate(h, self.edge_index))


cl.manual_seed(0)
start = time.perf_counter()
curves["GraphSAGE (mean)"] = fit(SAGE(16, 16, num_classes, edge_index), EPOCHS)
print(f"GraphSAGE test accuracy {curves['GraphSAGE (mean)'][-1]:.1%}   "
      f"({EPOCHS} epochs in {time.perf_counter() - start:.1f} s)")

# %% id="accuracy-figure" grader_runs="print('`course grade` skips the figure')"
fig, ax = plt.subplots(figsize=(7, 3.5))
for name, acc in curves.items():
    ax.plot(acc, label=f"{name}: {acc[-1]:.0%}")
ax.axhline(1 / num_classes, color="gray", ls=":", label="chance")
ax.set(xlabel="epoch", ylabel="test accuracy", title="node classification on the SBM, 20 labels per community")
ax.legend()
plt.show()

# %% [markdown] id="deepwalk-md"
# GraphSAGE lands between the two here. A likely reason: its separate weight for a node's own features
# gives those weak, noisy features more say, where the GCN's self-loop averages them with the neighbours'.
# On graphs where neighbours often differ (low homophily) that separate path is what helps.
#
# ### B.6 · DeepWalk: node vectors from random walks
#
# The networks above learn from features and labels. DeepWalk (Perozzi, Al-Rfou and Skiena, 2014) uses
# neither: it learns a vector per node from the graph alone, with the trick word2vec uses for words. A **random
# walk** starts at a node and moves to a uniformly chosen neighbour, again and again; it may come back
# where it was. Nodes that often appear near each other on walks are close in the graph, and in an SBM
# mostly in one community. So: run walks from every node (say 10 walks of 20 nodes each), treat each walk as
# a sentence and each node as a word, and train a **skip-gram** model: a node's vector must predict the
# nodes within a few steps of it on a walk. Then use the vectors for anything: clustering, a classifier,
# a plot.
#
# The walks are independent, so all of them advance **one step together**: lay the neighbours out by
# source (CSR: sort the targets by source; node v's neighbours are `targets[offsets[v]:offsets[v + 1]]`,
# with `offsets` the running sum of the degrees), and one step for W walkers is a handful of numpy
# operations on arrays of length W. The only Python loop is over the steps.

# %% [markdown] id="ex-09-10-task"
# ## Exercise 09.10 · random_walks, vectorised over the walkers (2 points)
#
# Write `random_walks(edge_index, starts, length, rng)`:
#
# - `edge_index`: a numpy int64 array `(2, E)` of an undirected graph (both directions of every edge), **in
#   any order**; every node has at least one neighbour;
# - `starts`: a numpy int64 array of W start nodes (repeats allowed); `length` ≥ 1; `rng` a
#   `numpy.random.Generator`;
# - return a numpy int64 array `walks` of shape `(W, length)`: `walks[:, 0]` is `starts`, and each
#   `walks[i, k + 1]` is drawn **uniformly** among the neighbours of `walks[i, k]`.
#
# Draw all randomness from `rng`, so that the same seed gives the same walks. Loop over the steps, never
# over the walkers or the edges: the check runs 40,000 walkers and counts how often your code uses `rng` (a
# few times per step is fine, once per walker is not). It forbids course_lib's own `graphs.random_walks`.
#
# *Hint:* `order = np.argsort(source, kind="stable")`, `targets = target[order]`,
# `degree = np.bincount(source, minlength=n)`, `offsets` = the cumulative sum of `degree` starting at 0.
# Then, for all walkers at once, `here = walks[:, k]` and the next node is
# `targets[offsets[here] + pick]` with `pick` an integer in `[0, degree[here])`:
# `(rng.random(W) * degree[here]).astype(np.int64)`.

# %% id="ex-09-10-solution" tags=["solution"] exercise="09.10"
import numpy as np


def random_walks(edge_index, starts, length, rng):
    """One uniform random walk of `length` nodes from each start: int64 array (len(starts), length)."""
    ### BEGIN SOLUTION
    source, target = edge_index
    n = int(max(source.max(), starts.max())) + 1
    targets = target[np.argsort(source, kind="stable")]
    degree = np.bincount(source, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(degree)])
    walks = np.empty((len(starts), length), dtype=np.int64)
    walks[:, 0] = starts
    for k in range(1, length):
        here = walks[:, k - 1]
        pick = (rng.random(len(starts)) * degree[here]).astype(np.int64)
        walks[:, k] = targets[offsets[here] + pick]
    return walks
    ### END SOLUTION


# %% id="ex-09-10-check" tags=["check", "nbval-check-output"] exercise="09.10" points=2
check("09.10", random_walks)

# %% [markdown] id="skipgram-md"
# **Skip-gram with negative sampling.** Each node has two vectors, rows of two `nn.Embedding(N, dim)`
# tables: `emb_in[v]` when v is the centre, `emb_out[u]` when u is a context. For every pair (v, u) of nodes
# at most `window` steps apart on a walk, the model should score σ(emb_in[v] · emb_out[u]) near 1. Scored
# alone, that is solved by making every vector equal and long, so each pair also draws `negatives` random
# nodes w (most of them unrelated to v) whose score σ(emb_in[v] · emb_out[w]) should be near 0:
#
# $$\text{loss} = -\log \sigma(e_v \cdot c_u) - \sum_{w\ \text{drawn}} \log \sigma(-e_v \cdot c_w).$$
#
# The negatives are drawn in proportion to degree^0.75 (word2vec's choice for word counts; a node's count
# on the walks is about proportional to its degree). This replaces a softmax over all N nodes by
# `1 + negatives` dot products per pair. Each step takes a random batch of pairs; `nn.Embedding`'s backward
# adds each looked-up row's gradient into a table of zeros (a scatter-add again), so only the rows used in
# the batch change. The walks come from course_lib's `graphs.random_walks`.

# %% id="skipgram-train"
walk_rng = np.random.default_rng(0)
walks = graphs.random_walks(g.edge_index, np.repeat(np.arange(num_nodes), 10), 20, walk_rng)
window, negatives, dim, batch = 4, 5, 16, 1024
centres = np.concatenate([walks[:, :-k].ravel() for k in range(1, window + 1)] +
                         [walks[:, k:].ravel() for k in range(1, window + 1)])
contexts = np.concatenate([walks[:, k:].ravel() for k in range(1, window + 1)] +
                          [walks[:, :-k].ravel() for k in range(1, window + 1)])
noise = g.degree() ** 0.75 / (g.degree() ** 0.75).sum()
print(f"{len(walks)} walks of {walks.shape[1]} nodes -> {len(centres):,} (centre, context) pairs; walk 0: "
      f"{walks[0, :10].tolist()}...")

cl.manual_seed(0)
emb_in, emb_out = nn.Embedding(num_nodes, dim), nn.Embedding(num_nodes, dim)
with cl.no_grad():
    emb_in.weight.uniform_(-0.5 / dim, 0.5 / dim)
    emb_out.weight.zero_()
opt = cl.optim.Adam([emb_in.weight, emb_out.weight], lr=0.02)
start, losses = time.perf_counter(), []
for step in range(SKIPGRAM_STEPS):
    pick = walk_rng.integers(0, len(centres), batch)
    v = emb_in(cl.tensor(centres[pick]))                                        # (batch, dim)
    positive = (v * emb_out(cl.tensor(contexts[pick]))).sum(1)                  # (batch,)
    drawn = cl.tensor(walk_rng.choice(num_nodes, size=(batch, negatives), p=noise))
    negative = (emb_out(drawn) @ v[:, :, None]).squeeze(2)                      # (batch, negatives)
    loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(1)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(f"{SKIPGRAM_STEPS} steps in {time.perf_counter() - start:.1f} s; loss {losses[0]:.3f} -> {losses[-1]:.3f}")

# %% [markdown] id="deepwalk-plot-md"
# The vectors have 16 dimensions; to draw them, project onto their two principal directions (PCA: the
# first two right singular vectors of the centred matrix). No label and no feature was used to train them,
# yet communities come apart in the picture, and the ones that overlap there separate in the other
# dimensions: a linear classifier fitted on the vectors of the 80 labelled nodes classifies the others about
# as well as the GCN did.

# %% id="deepwalk-plot" grader_runs="print('`course grade` skips the classifier and the figure')"
vectors = emb_in.weight.detach().numpy()
centred = vectors - vectors.mean(0)
_, _, vt = np.linalg.svd(centred, full_matrices=False)
xy = centred @ vt[:2].T

cl.manual_seed(0)
probe_model = nn.Linear(dim, num_classes)
probe_opt = cl.optim.Adam(probe_model.parameters(), lr=0.05)
features = cl.tensor(vectors)
for _ in range(200):
    probe_loss = F.cross_entropy(probe_model(features[train_idx]), y[train_idx])
    probe_opt.zero_grad()
    probe_loss.backward()
    probe_opt.step()
with cl.no_grad():
    walk_accuracy = (probe_model(features).argmax(1)[test_idx] == y[test_idx]).float().mean().item()
print(f"a linear classifier on the DeepWalk vectors: test accuracy {walk_accuracy:.1%}")

fig, ax = plt.subplots(figsize=(5.5, 4.5))
points = ax.scatter(xy[:, 0], xy[:, 1], c=g.labels, cmap="viridis", s=12)
ax.legend(*points.legend_elements(), title="community", fontsize=8)
ax.set(title="DeepWalk vectors, projected on 2 principal directions", xlabel="PC 1", ylabel="PC 2")
plt.show()

# %% [markdown] id="part-b-summary"
# ### Part B in short
#
# - A graph is an edge list; a layer on it is **message passing**: gather one message per edge by source
#   (`index_select`), reduce them at the targets (`index_add`, `scatter_reduce`). Autograd sends gradients
#   back along the same edges, reversed. Cost: proportional to E, never N².
# - The GCN layer D̂^-1/2 (A + I) D̂^-1/2 X W is a first-order polynomial filter of the normalised graph
#   Laplacian, renormalised with self-loops so that its eigenvalues stay in (−1, 1]; per edge it is the
#   weight 1/√(d̂_s d̂_t).
# - GraphSAGE's mean aggregator is `scatter_reduce(..., "mean", include_self=False)`, with the node's own
#   features on a separate weight.
# - DeepWalk turns the graph into sentences with random walks (all walkers one step at a time) and learns
#   node vectors with skip-gram and negative sampling on `nn.Embedding`, with no labels.
#
# > **In PyTorch:** PyTorch Geometric's `Node2Vec` (`torch_geometric/nn/models/node2vec.py`) is DeepWalk
# > with biased walks (`p = q = 1` gives DeepWalk's uniform ones) and the same loss; its walks come from a
# > C++ kernel (`torch_cluster`'s or `pyg-lib`'s `random_walk`) that reads the graph in the CSR layout of
# > exercise 09.10 (`rowptr`, `col`) and draws each step from the current node's slice of neighbours.
# > `nn.Embedding(..., sparse=True)` makes the embedding's gradient a sparse tensor holding only the rows
# > looked up, for tables too large to update whole.
