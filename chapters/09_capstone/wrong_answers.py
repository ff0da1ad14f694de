"""Planted wrong answers for chapter 09 (capstone): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

import numpy as np

import course_lib as cl

WRONG: dict = {}

# ------------------------------------------------------------------ Part A

# 09.1 run_epoch

def _epoch(model, batches, loss_fn, optimizer, scheduler, *, set_mode=True, no_grad=True, weighted=True,
           zero_grad=True, sched_per_batch=True):
    train = optimizer is not None
    if set_mode:
        model.train(train)
    elif train:
        model.train()
    total, correct, n, losses = 0.0, 0, 0, []
    with cl.set_grad_enabled(train or not no_grad):
        for x, y in batches:
            out = model(x)
            loss = loss_fn(out, y)
            if train:
                if zero_grad:
                    optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if scheduler is not None and sched_per_batch:
                    scheduler.step()
            total += loss.item() * len(y)
            losses.append(loss.item())
            correct += int((out.argmax(1) == y).sum())
            n += len(y)
    if train and scheduler is not None and not sched_per_batch:
        scheduler.step()
    return (total / n if weighted else float(np.mean(losses))), correct / n


def run_epoch_never_eval(model, batches, loss_fn, optimizer=None, scheduler=None):
    """Evaluates in training mode: dropout stays on and BatchNorm keeps updating its statistics."""
    return _epoch(model, batches, loss_fn, optimizer, scheduler, set_mode=False)


def run_epoch_records_graph(model, batches, loss_fn, optimizer=None, scheduler=None):
    """Evaluates without no_grad: the forward passes record a graph."""
    return _epoch(model, batches, loss_fn, optimizer, scheduler, no_grad=False)


def run_epoch_mean_of_batches(model, batches, loss_fn, optimizer=None, scheduler=None):
    """Averages the batch losses without weighting them by the batch sizes."""
    return _epoch(model, batches, loss_fn, optimizer, scheduler, weighted=False)


def run_epoch_no_zero_grad(model, batches, loss_fn, optimizer=None, scheduler=None):
    """Never zeroes the gradients: each step uses the sum of all the gradients so far."""
    return _epoch(model, batches, loss_fn, optimizer, scheduler, zero_grad=False)


def run_epoch_scheduler_per_epoch(model, batches, loss_fn, optimizer=None, scheduler=None):
    """Steps the one-cycle schedule once per epoch instead of once per batch."""
    return _epoch(model, batches, loss_fn, optimizer, scheduler, sched_per_batch=False)


# 09.2 Checkpointer

class CheckpointerNoRNG:
    """Saves everything but the generator's state: the resumed run's augmentation noise differs."""

    skip: tuple = ("rng",)

    def __init__(self, path):
        self.path = path

    def save(self, model, optimizer, scheduler, epoch, batch):
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "rng": cl.get_rng_state(), "epoch": epoch, "batch": batch}
        cl.save({k: v for k, v in state.items() if k not in self.skip}, self.path)

    def load(self, model, optimizer, scheduler):
        ckpt = cl.load(self.path)
        model.load_state_dict(ckpt["model"])
        if "optimizer" in ckpt:
            optimizer.load_state_dict(ckpt["optimizer"])
        if "scheduler" in ckpt:
            scheduler.load_state_dict(ckpt["scheduler"])
        if "rng" in ckpt:
            cl.set_rng_state(ckpt["rng"])
        return ckpt["epoch"], ckpt.get("batch", 0)


class CheckpointerNoOptimizer(CheckpointerNoRNG):
    """Forgets the optimizer: the momentum buffers start from zero again."""

    skip = ("optimizer",)


class CheckpointerNoScheduler(CheckpointerNoRNG):
    """Forgets the schedule: the learning rate restarts at the beginning of the cycle."""

    skip = ("scheduler",)


class CheckpointerEpochStart(CheckpointerNoRNG):
    """Forgets the batch: resumes at the start of the saved epoch, repeating its first batches."""

    skip = ("batch",)


class CheckpointerParametersOnly(CheckpointerNoRNG):
    """Saves the parameters but not the buffers (loaded with strict=False): BatchNorm's running statistics
    start again from their defaults, which the training losses never read."""

    def save(self, model, optimizer, scheduler, epoch, batch):
        cl.save({"model": dict(model.named_parameters()), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "rng": cl.get_rng_state(), "epoch": epoch, "batch": batch},
                self.path)

    def load(self, model, optimizer, scheduler):
        ckpt = cl.load(self.path)
        model.load_state_dict(ckpt["model"], strict=False)
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        cl.set_rng_state(ckpt["rng"])
        return ckpt["epoch"], ckpt["batch"]


_IN_MEMORY: dict = {}


class CheckpointerInMemory:
    """Keeps the state in this process (a module-level dict) and writes only the position to the file: a new
    process could not resume."""

    def __init__(self, path):
        self.path = path

    def save(self, model, optimizer, scheduler, epoch, batch):
        import copy
        _IN_MEMORY[self.path] = copy.deepcopy((model.state_dict(), optimizer.state_dict(),
                                               scheduler.state_dict(), cl.get_rng_state()))
        cl.save({"epoch": epoch, "batch": batch}, self.path)

    def load(self, model, optimizer, scheduler):
        m, o, s, r = _IN_MEMORY[self.path]
        model.load_state_dict(m)
        optimizer.load_state_dict(o)
        scheduler.load_state_dict(s)
        cl.set_rng_state(r)
        ckpt = cl.load(self.path)
        return ckpt["epoch"], ckpt["batch"]


# 09.3 freeze_and_replace_head

def replace_head_only(model, num_classes):
    """Replaces the head but freezes nothing: the whole network trains."""
    model.fc = cl.nn.Linear(model.fc.in_features, num_classes)
    return model.fc


def freeze_after_replacing(model, num_classes):
    """Freezes after replacing the head: the new head is frozen too and nothing can train."""
    model.fc = cl.nn.Linear(model.fc.in_features, num_classes)
    model.requires_grad_(False)
    return model.fc


def replace_head_resnet18_width(model, num_classes):
    """Assumes ResNet-18's 512 features instead of reading model.fc.in_features."""
    model.requires_grad_(False)
    model.fc = cl.nn.Linear(512, num_classes)
    return model.fc


def freeze_head_weights_only(model, num_classes):
    """Freezes only the weights (parameters named ...weight): the backbone's BatchNorm biases still train."""
    for name, p in model.named_parameters():
        if name.endswith("weight"):
            p.requires_grad_(False)
    model.fc = cl.nn.Linear(model.fc.in_features, num_classes)
    return model.fc


# 09.4 scaler_step

def _scaler(optimizer, scale, tracker, growth, backoff, interval, *, step_anyway=False, unscale_on_inf=True,
            early=False, reset_on_backoff=True, keep_inf=False, first_group_only=False, float64=False):
    inv = np.float32(1.0 / np.float64(scale))
    groups = optimizer.param_groups[:1] if first_group_only else optimizer.param_groups
    grads = [p.grad for g in groups for p in g["params"] if p.grad is not None]
    found = any(not bool(cl.isfinite(g).all()) for g in grads)
    if unscale_on_inf or not found:
        with cl.no_grad():
            for g in grads:
                g.mul_(float(inv))
    if step_anyway or not found:
        optimizer.step()
    if found:
        scale = scale * backoff
        tracker = 0 if reset_on_backoff else tracker
    else:
        tracker += 1
        if tracker >= interval - (1 if early else 0):
            with np.errstate(over="ignore"):
                grown = float(np.float32(scale * growth))
            if keep_inf or np.isfinite(grown):
                scale = grown
            tracker = 0
    return (float(scale) if float64 else float(np.float32(scale))), tracker, step_anyway or not found


def scaler_step_first_group_only(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                                 growth_interval=2000):
    """Looks at the first parameter group only: the others' gradients are neither checked nor unscaled."""
    return _scaler(optimizer, scale, growth_tracker, growth_factor, backoff_factor, growth_interval,
                   first_group_only=True)


def scaler_step_float64_scale(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                              growth_interval=2000):
    """Keeps the new scale in float64: PyTorch's scale is a float32 tensor (0.3 * 3 is 0.8999999761581421)."""
    return _scaler(optimizer, scale, growth_tracker, growth_factor, backoff_factor, growth_interval, float64=True)


def scaler_step_steps_on_inf(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                             growth_interval=2000):
    """Steps even when a gradient overflowed (and reports it stepped)."""
    return _scaler(optimizer, scale, growth_tracker, growth_factor, backoff_factor, growth_interval, step_anyway=True)


def scaler_step_no_unscale_on_inf(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                                  growth_interval=2000):
    """Leaves the gradients scaled when it skips the step (GradScaler unscales them in any case)."""
    return _scaler(optimizer, scale, growth_tracker, growth_factor, backoff_factor, growth_interval,
                   unscale_on_inf=False)


def scaler_step_grows_early(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                            growth_interval=2000):
    """Grows the scale one step too early (tracker + 1 >= growth_interval - 1)."""
    return _scaler(optimizer, scale, growth_tracker, growth_factor, backoff_factor, growth_interval, early=True)


def scaler_step_keeps_tracker(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                              growth_interval=2000):
    """Backs off without resetting the growth tracker."""
    return _scaler(optimizer, scale, growth_tracker, growth_factor, backoff_factor, growth_interval,
                   reset_on_backoff=False)


def scaler_step_grows_to_inf(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                             growth_interval=2000):
    """Grows the scale even when it overflows float32 to inf."""
    return _scaler(optimizer, scale, growth_tracker, growth_factor, backoff_factor, growth_interval, keep_inf=True)


def scaler_step_calls_gradscaler(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
                                 growth_interval=2000):
    """Asks course_lib's GradScaler, which the task forbids."""
    scaler = cl.amp.GradScaler("cpu", init_scale=scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                               growth_interval=growth_interval)
    scaler.scale(cl.ones(()))
    scaler._growth_tracker = growth_tracker
    found = any(not bool(cl.isfinite(p.grad).all()) for g in optimizer.param_groups for p in g["params"]
                if p.grad is not None)
    scaler.step(optimizer)
    scaler.update()
    return scaler.get_scale(), scaler._get_growth_tracker(), not found


WRONG.update({
    "09.1": [run_epoch_never_eval, run_epoch_records_graph, run_epoch_mean_of_batches, run_epoch_no_zero_grad,
             run_epoch_scheduler_per_epoch],
    "09.2": [CheckpointerNoRNG, CheckpointerNoOptimizer, CheckpointerNoScheduler, CheckpointerEpochStart,
             CheckpointerParametersOnly, CheckpointerInMemory],
    "09.3": [replace_head_only, freeze_after_replacing, replace_head_resnet18_width, freeze_head_weights_only],
    "09.4": [scaler_step_first_group_only, scaler_step_float64_scale,
             scaler_step_steps_on_inf, scaler_step_no_unscale_on_inf, scaler_step_grows_early,
             scaler_step_keeps_tracker, scaler_step_grows_to_inf, scaler_step_calls_gradscaler],
})


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
