# ---
# jupyter:
#   course:
#     title: Normalization layers
# ---

# %% [markdown] id="intro"
# # 05 · Normalization layers
#
# BatchNorm, LayerNorm, InstanceNorm and GroupNorm look like four different layers. They are one idea
# applied to different slices of a tensor: take a group of values, subtract their mean, divide by their
# standard deviation, then scale and shift with learned parameters. The four layers differ only in **which
# values form a group** (which axes are reduced) and in **what they keep between batches**. BatchNorm keeps
# running statistics; the others keep nothing.
#
# **What you will build** (as numpy functions, each checked against `course_lib`):
#
# - statistics over chosen axes, the one primitive under the whole family;
# - BatchNorm's forward pass in training and in evaluation, with its running-statistics update;
# - BatchNorm's *fused* backward, derived by hand: three lines instead of a graph of a dozen nodes;
# - LayerNorm, and GroupNorm by reshaping.
#
# **Along the way** you will see the difference between the biased and the unbiased variance (BatchNorm
# uses both), watch running statistics converge, see why BatchNorm breaks down with tiny batches and why
# that led to LayerNorm and GroupNorm, train the same network with and without BatchNorm, and measure what
# fusing the backward saves in time and memory.
#
# *Prerequisites:* chapter 03 (autograd: nodes, saved tensors, `backward`) and chapter 04 (`nn.Module`,
# parameters and buffers, `train()`/`eval()`). Some calculus: the chain rule over a sum.
# *Expected time:* 2 to 2½ hours.

# %% id="setup"
import inspect
import time

import matplotlib.pyplot as plt
import numpy as np

import course_lib as cl
import course_lib.nn as nn
import course_lib.nn.functional as F
from course import check
from course_lib import memory
from course_lib.viz.norm_axes import draw_norm_axes

np.set_printoptions(precision=4, suppress=True)


# %% [markdown] id="why-md"
# ## 1 · Why normalise?
#
# Every layer passes its output to the next one as input. If the scale of those outputs drifts, the next
# layer sees numbers at a scale its weights were not tuned for, and its gradients scale with them. In a deep
# stack the effect compounds: each layer multiplies the scale by some factor, so after a dozen layers the
# activations have either shrunk to nothing or blown up, and one learning rate cannot suit every layer.
#
# The next cell pushes one batch through twelve `Linear` + `ReLU` layers (without biases, to keep the
# arithmetic plain), twice: with `course_lib`'s default initialisation, and with weights three times larger.
# Then it does the same with a normalisation after every `Linear`, which rescales each feature to mean 0 and
# variance 1 over the batch.

# %% id="why-demo"
def activation_scales(weight_scale: float, normalise: bool, depth: int = 12, width: int = 128) -> list[float]:
    # standard deviation of the activations after each of `depth` Linear + ReLU layers
    cl.manual_seed(0)
    h = cl.randn(256, width)
    scales = []
    with cl.no_grad():
        for _ in range(depth):
            layer = nn.Linear(width, width, bias=False)
            layer.weight.mul_(weight_scale)
            h = layer(h)
            if normalise:
                h = F.batch_norm(h, None, None, training=True)
            h = F.relu(h)
            scales.append(h.std().item())
    return scales


fig, ax = plt.subplots(figsize=(6.5, 3.6))
for weight_scale, colour in [(1.0, "#1f77b4"), (3.0, "#d62728")]:
    for normalise, style in [(False, "--"), (True, "-")]:
        label = f"weights x{weight_scale:g}, " + ("normalised" if normalise else "plain")
        ax.plot(range(1, 13), activation_scales(weight_scale, normalise), style, color=colour, marker="o",
                markersize=3, label=label)
ax.set_yscale("log")
ax.set_xlabel("layer")
ax.set_ylabel("std of activations")
ax.set_title("Activation scale through 12 Linear + ReLU layers")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] id="recipe-md"
# Without normalisation the scale changes by a roughly constant factor per layer. The default initialisation
# draws weights with variance $1/(3 \cdot \text{fan\_in})$, and ReLU keeps half of the signal, so each layer
# multiplies the mean square by about $1/6$ and the scale by about $0.4$: after twelve layers it is down by a
# factor of $10^5$. Three times larger weights multiply the scale by about $1.2$ per layer instead. With
# normalisation both stay flat, whatever the weights do: the two normalised curves lie on top of each other,
# because scaling a layer's weights changes nothing once its output is normalised. (A careful initialisation fixes the *starting*
# scale; normalisation keeps fixing it while the weights move during training.)
#
# **The recipe.** For a group of values $x_1, \dots, x_m$:
#
# $$\mu = \frac{1}{m}\sum_i x_i, \qquad \sigma^2 = \frac{1}{m}\sum_i (x_i - \mu)^2, \qquad
# \hat x_i = \frac{x_i - \mu}{\sqrt{\sigma^2 + \varepsilon}}, \qquad y_i = \gamma\, \hat x_i + \beta.$$
#
# - $\varepsilon$ (`eps`, default `1e-5`) keeps the division finite when all values in a group are equal.
# - $\gamma$ (`weight`, starts at 1) and $\beta$ (`bias`, starts at 0) are learned. They let the network undo
#   the normalisation where that helps: $\gamma = \sigma$, $\beta = \mu$ gives back the input. What the layer
#   removes is the *accidental* scale and shift, which changes from batch to batch and from step to step.
#
# Why does this help training? The original BatchNorm paper (Ioffe and Szegedy, 2015) argued that it
# reduces "internal covariate shift", the drift of each layer's input distribution while earlier layers
# learn. Later work (Santurkar et al., 2018) found that explanation incomplete and pointed to a smoother loss
# surface, which tolerates larger learning rates. Section 8 measures that effect on a small network.

# %% [markdown] id="picture-md"
# ## 2 · The (N, C, H, W) picture: which values share a mean?
#
# An image batch has shape $(N, C, H, W)$: samples, channels, height, width. Each layer computes one mean
# and one variance per **statistics group** and normalises every value of the group with them. The figure
# draws the tensor as a block (the two spatial axes flattened into one) and shades one group per layer:
#
# | layer | one group is | reduced dims of $(N, C, H, W)$ | groups | $\gamma, \beta$ shape |
# |---|---|---|---|---|
# | `BatchNorm2d(C)` | one channel, across all samples and positions | `(0, 2, 3)` | $C$ | `(C,)` |
# | `LayerNorm((C, H, W))` | one sample, all of it | `(1, 2, 3)` | $N$ | `(C, H, W)` |
# | `InstanceNorm2d(C)` | one channel of one sample | `(2, 3)` | $N \cdot C$ | `(C,)` (off by default) |
# | `GroupNorm(G, C)` | $C/G$ neighbouring channels of one sample | dim 2 of `(N, G, C/G·H·W)` | $N \cdot G$ | `(C,)` |
#
# Only BatchNorm mixes different samples. That single fact explains most of what follows: its output for one
# sample depends on the rest of the batch, so it needs a separate rule for evaluation, and it suffers when
# batches are small.

# %% id="picture-figure"
draw_norm_axes(["BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm"], n=4, c=6, hw=5, groups=3)
plt.show()


# %% [markdown] id="ex-05-1-task"
# The affine parameters follow a different rule from the statistics. BatchNorm, InstanceNorm and GroupNorm
# have one $\gamma$ and one $\beta$ **per channel**, even though GroupNorm computes its statistics per group
# of channels. LayerNorm has one **per element of `normalized_shape`**: `LayerNorm((C, H, W))` learns
# $C \cdot H \cdot W$ scales. In transformers, activations have shape (batch, tokens, features) and
# `LayerNorm(features)` normalises each token's feature vector on its own.
#
# > **In PyTorch:** the modules are in `torch/nn/modules/batchnorm.py` (`_NormBase` → `_BatchNorm` →
# > `BatchNorm1d/2d/3d`), `torch/nn/modules/instancenorm.py` (`_InstanceNorm` also derives from `_NormBase`)
# > and `torch/nn/modules/normalization.py` (`LayerNorm`, `GroupNorm`, `RMSNorm`). Each `forward` calls the
# > function of the same name in `torch/nn/functional.py`. course_lib mirrors this layout in
# > `course_lib/nn/modules/` and `course_lib/nn/functional.py`.
#
# ## Exercise 05.1 · moments: statistics over given axes (1 point)
#
# Write `moments(x, axes)` for a numpy array `x` and a tuple of axes (negative axes allowed), returning the
# pair `(mean, var)`:
#
# - `mean` is the mean of `x` over `axes`, and `var` the **biased** variance, dividing by the number of
#   values $m$ (not $m - 1$);
# - both keep the reduced axes with size 1 (*keepdims*), so that `(x - mean) / np.sqrt(var + eps)` broadcasts.
#   For `x` of shape `(4, 3, 2, 2)` and `axes=(0, 2, 3)`, both have shape `(1, 3, 1, 1)`.
#
# *Hint:* numpy reductions take `axis=` a tuple and `keepdims=True`. Note that `np.var` has a `ddof` argument:
# `ddof=0` (its default) divides by $m$.

# %% id="ex-05-1-solution" tags=["solution"] exercise="05.1"
def moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, biased variance) of x over `axes`, with the reduced axes kept as size 1."""
    ### BEGIN SOLUTION
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean, var
    ### END SOLUTION


# %% id="ex-05-1-check" tags=["check", "nbval-check-output"] exercise="05.1" points=1
check("05.1", moments)

# %% [markdown] id="bn-md"
# ## 3 · BatchNorm: training, evaluation, and two variances
#
# In **training** mode BatchNorm normalises each channel with the mean and variance of the *current batch*,
# and also updates two buffers, `running_mean` and `running_var`, as a moving average of those statistics.
# In **evaluation** mode it normalises with the running buffers instead, so a sample's output no longer
# depends on which other samples share its batch, and a batch of one works.
#
# Here are the numbers for `BatchNorm1d(2)` and a batch of four samples, one training step from the initial
# buffers (`running_mean = 0`, `running_var = 1`, `momentum = 0.1`):
#
# ```
# x = [[1,  2],        batch mean            [4, 5]
#      [3,  6],        biased variance       [5, 11]         (divide by m = 4)
#      [5, 10],        unbiased variance     [6.667, 14.667] (divide by m - 1 = 3)
#      [7,  2]]
# running_mean = 0.9 * [0, 0] + 0.1 * [4, 5]           = [0.4, 0.5]
# running_var  = 0.9 * [1, 1] + 0.1 * [6.667, 14.667]  = [1.5667, 2.3667]
# ```
#
# The output uses the **biased** variance; `running_var` is updated with the **unbiased** one. Both choices
# are deliberate. The output normalises *this batch*: with the biased variance, each channel of
# $\hat x$ has mean exactly 0 and variance exactly 1 (up to `eps`). The running variance *estimates* the
# variance of the whole data distribution from a sample of $m$ values, and dividing by $m - 1$ makes that
# estimate unbiased (Bessel's correction). With $m = 4$ the two differ by a third; with $m = 4096$ values
# per channel (a batch of 16 images of 16x16) the difference is negligible.

# %% id="bn-train-demo"
x = cl.tensor([[1., 2.], [3., 6.], [5., 10.], [7., 2.]])
bn = nn.BatchNorm1d(2)
print(bn)
print("buffers before:", bn.running_mean, bn.running_var, bn.num_batches_tracked)

y = bn(x)              # a new module is in training mode
print("batch mean        ", x.mean(0))
print("biased variance   ", x.var(0, unbiased=False))
print("unbiased variance ", x.var(0))
print("output (train):\n", y.detach())
print("output mean and variance per channel:", y.mean(0).detach(), y.var(0, unbiased=False).detach())
print("buffers after: ", bn.running_mean, bn.running_var, bn.num_batches_tracked)

# %% [markdown] id="bn-eval-md"
# Now the same batch in evaluation mode. The running statistics after one step are still close to their
# initial values (0 and 1), so the output is close to the input itself: that is what a network whose
# BatchNorm has seen too few batches does at test time.

# %% id="bn-eval-demo"
bn.eval()
with cl.no_grad():
    y_eval = bn(x)
print("output (eval):\n", y_eval)
print("by hand:\n", (x - bn.running_mean) / (bn.running_var + bn.eps).sqrt())
print("buffers unchanged in eval:", bn.running_mean, bn.running_var, bn.num_batches_tracked)

# %% [markdown] id="bn-torch-md"
# If real PyTorch is installed, the next cell repeats the experiment with `torch.nn.BatchNorm1d` (it is
# skipped otherwise; `make oracle` installs it, then restart the kernel; importing torch takes a few
# seconds).

# %% id="bn-torch" grader_runs="torch = None  # `course grade` skips the optional comparison with PyTorch"
try:
    import torch
except ImportError:
    torch = None
    print("torch is not installed: skipped (`make oracle` installs it)")
if torch is not None:
    tbn = torch.nn.BatchNorm1d(2)
    tx = torch.tensor([[1., 2.], [3., 6.], [5., 10.], [7., 2.]])
    ty = tbn(tx)
    print("torch", torch.__version__, "running_mean", tbn.running_mean.numpy(), "running_var", tbn.running_var.numpy())
    print("largest difference from course_lib's output:", float(np.abs(ty.detach().numpy() - y.detach().numpy()).max()))


# %% [markdown] id="ex-05-2-task"
# ## Exercise 05.2 · batch_norm_forward: training and evaluation (3 points)
#
# Write `batch_norm_forward(x, running_mean, running_var, momentum=0.1, eps=1e-5, training=True)` for a numpy
# array `x` of shape `(N, C)` or `(N, C, *spatial)` and running buffers of shape `(C,)`. It returns
# `(y, new_running_mean, new_running_var)`, without modifying its inputs, and has no $\gamma, \beta$
# (they are an elementwise scale and shift on top):
#
# - **training:** with $m$ = `x.size // C` values per channel, normalise each channel with its batch mean and
#   **biased** variance, and return the updated buffers
#   `(1 - momentum) * running + momentum * batch_statistic`, using the **unbiased** variance
#   ($\sigma^2_\text{biased} \cdot m / (m - 1)$) for `running_var`. If $m = 1$, raise `ValueError`
#   (PyTorch: `Expected more than 1 value per channel when training, got input size ...`);
# - **evaluation** (`training=False`): normalise with `running_mean` and `running_var`, and return the
#   buffers unchanged. One sample is fine here.
#
# *Hint:* the channel axis is 1, so the statistics are over `axes = (0, 2, 3, ...)`; a `(C,)` vector
# broadcasts against `x` after `.reshape(1, C, 1, 1, ...)`. The first two lines of the function compute both.

# %% id="ex-05-2-solution" tags=["solution"] exercise="05.2"
def batch_norm_forward(x: np.ndarray, running_mean: np.ndarray, running_var: np.ndarray, momentum: float = 0.1,
                       eps: float = 1e-5, training: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BatchNorm without affine: (y, new_running_mean, new_running_var)."""
    axes = (0,) + tuple(range(2, x.ndim))           # every dim but the channels
    shape = (1, -1) + (1,) * (x.ndim - 2)           # a (C,) vector, broadcastable against x
    ### BEGIN SOLUTION
    if training:
        m = x.size // x.shape[1]
        if m == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(x.shape)}")
        mean = x.mean(axis=axes)
        var = x.var(axis=axes)                       # biased: divides by m
        new_mean = (1 - momentum) * running_mean + momentum * mean
        new_var = (1 - momentum) * running_var + momentum * var * m / (m - 1)
    else:
        mean, var = running_mean, running_var
        new_mean, new_var = running_mean.copy(), running_var.copy()
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return y, new_mean, new_var
    ### END SOLUTION


# %% id="ex-05-2-check" tags=["check", "nbval-check-output"] exercise="05.2" points=3
check("05.2", batch_norm_forward)

# %% [markdown] id="bn-pytorch"
# > **In PyTorch:** `_BatchNorm.forward` in `torch/nn/modules/batchnorm.py` decides two things before it
# > calls `F.batch_norm`: whether to use batch statistics (`bn_training`: in training mode, or in eval mode
# > when there are no running buffers, `track_running_stats=False`) and the averaging factor (`momentum`, or
# > `1 / num_batches_tracked` when `momentum=None`). `batch_norm` in `torch/nn/functional.py` raises the
# > "Expected more than 1 value per channel" error (`_verify_batch_size`). The arithmetic is in
# > `aten/src/ATen/native/Normalization.cpp`: `batch_norm_cpu_update_stats_template` computes the batch
# > mean and variance and updates the running buffers in place, with the unbiased variance
# > (`var_sum / (n - 1)`), and `batch_norm_cpu_transform_input_template` normalises. course_lib's
# > `native_batch_norm` in `course_lib/_ops/normalization.py` does both in one function.

# %% [markdown] id="momentum-md"
# ## 4 · Momentum and running statistics
#
# After $k$ training steps with momentum $\alpha$, the running mean is an **exponential moving average**:
#
# $$\text{running}_k = (1 - \alpha)^k\, \text{running}_0 + \alpha \sum_{j=1}^{k} (1 - \alpha)^{k - j}\, \mu_j .$$
#
# The initial value fades as $(1 - \alpha)^k$ and the last $\approx 1/\alpha$ batches carry most of the
# weight: with the default $\alpha = 0.1$ the buffers forget their start after a few dozen steps and then keep
# following the recent batches, which is what you want while the weights (and so the activations) are still
# changing. A small $\alpha$ averages over more batches (less noise) but forgets the start slowly.
#
# `momentum=None` switches to the **cumulative average**: the factor is $1/k$ with $k$ = `num_batches_tracked`,
# so the first batch *replaces* the initial buffers and after $k$ steps the running mean is the plain mean of
# the $k$ batch means. That suits statistics of a model that no longer changes, for example recomputing the
# buffers after training, with the weights frozen.
#
# Note the convention: BatchNorm's `momentum` is the weight of the **new** observation. Optimizers (and some
# other libraries' BatchNorm) use momentum for the weight of the **old** value, so 0.1 here corresponds to 0.9
# there.
#
# The next cell feeds 300 batches of 16 values drawn from $\mathcal N(3, 2^2)$ to three `BatchNorm1d(1)`
# layers and records their buffers after every step.

# %% id="momentum-demo"
rng = np.random.default_rng(0)
batches = [cl.tensor(rng.normal(3.0, 2.0, size=(16, 1)), dtype=cl.float32) for _ in range(300)]

history = {}
for momentum in [0.1, 0.01, None]:
    layer = nn.BatchNorm1d(1, momentum=momentum)
    means, variances = [], []
    for batch in batches:
        layer(batch)
        means.append(layer.running_mean.item())
        variances.append(layer.running_var.item())
    history[momentum] = (means, variances)

fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for momentum, (means, variances) in history.items():
    label = "momentum=None (cumulative)" if momentum is None else f"momentum={momentum}"
    axes[0].plot(means, label=label)
    axes[1].plot(variances, label=label)
for ax, truth, name in [(axes[0], 3.0, "running_mean"), (axes[1], 4.0, "running_var")]:
    ax.axhline(truth, color="black", linestyle=":", linewidth=1, label="true value")
    ax.set_xlabel("training step")
    ax.set_title(name)
axes[0].legend(fontsize=8)
plt.show()

all_means = [b.mean().item() for b in batches]
print("momentum=None running_mean:", round(history[None][0][-1], 5), " mean of the 300 batch means:",
      round(float(np.mean(all_means)), 5))
print("state_dict keys of BatchNorm1d:", list(nn.BatchNorm1d(1).state_dict()))


# %% [markdown] id="backward-md"
# With momentum 0.1 the buffers reach the true values within about 30 steps and then jitter around them;
# with 0.01 they are smoother but take hundreds of steps; the cumulative average starts right (the first
# batch replaces the initial 0 and 1) and its noise shrinks like $1/\sqrt{k}$. The running variance
# converges to 4, the true variance, because it is fed unbiased estimates; fed biased ones, it would settle
# at $4 \cdot 15/16 = 3.75$.
#
# `num_batches_tracked` is a buffer too, so it is saved in the `state_dict`. Checkpoints written before it
# existed lack the key; `_NormBase._load_from_state_dict` notices their older *version* number (BatchNorm's
# `_version` is 2) and keeps the module's own counter (0 for a fresh module), so they still load.
#
# ## 5 · Deriving the fused backward
#
# Autograd can differentiate BatchNorm written with primitive ops (`mean`, `sub`, `pow`, `add`, `rsqrt`,
# `mul`, ...). It records a node for each of them and saves their inputs, several tensors the size of `x`.
# Working the derivative out once by hand gives a short formula instead, and PyTorch implements exactly that
# in one backward kernel.
#
# Take one channel's $m$ values (everything below is per channel). Write $r = 1/\sqrt{\sigma^2 + \varepsilon}$,
# so $\hat x_i = (x_i - \mu)\, r$ and $y_i = \gamma \hat x_i + \beta$. Given $g_i = \partial L / \partial y_i$:
#
# - the parameters are easy: $\dfrac{\partial L}{\partial \beta} = \sum_i g_i$ and
#   $\dfrac{\partial L}{\partial \gamma} = \sum_i g_i\, \hat x_i$;
# - the gradient reaching $\hat x$ is $d_i = \gamma\, g_i$.
#
# Every $\hat x_i$ depends on every $x_j$, through $\mu$ and through $r$:
# $\partial \mu / \partial x_j = 1/m$ and, since $\sum_i (x_i - \mu) = 0$,
# $\partial \sigma^2 / \partial x_j = \tfrac{2}{m}(x_j - \mu)$, so
# $\partial r / \partial x_j = -\tfrac{1}{2} r^3 \cdot \tfrac{2}{m}(x_j - \mu) = -\tfrac{r}{m}\hat x_j$. Then
#
# $$\frac{\partial \hat x_i}{\partial x_j} = r\Big(\delta_{ij} - \frac{1}{m}\Big) + (x_i - \mu)\frac{\partial r}{\partial x_j}
# = \frac{r}{m}\big(m\,\delta_{ij} - 1 - \hat x_i \hat x_j\big),$$
#
# and summing over $i$ with the chain rule:
#
# $$\boxed{\;\frac{\partial L}{\partial x_j} = \sum_i d_i \frac{\partial \hat x_i}{\partial x_j}
# = r\Big(d_j - \overline{d} - \hat x_j\, \overline{d \hat x}\Big)\;}
# \qquad \overline{d} = \frac{1}{m}\sum_i d_i, \quad \overline{d\hat x} = \frac{1}{m}\sum_i d_i \hat x_i .$$
#
# Each term has a meaning. Without the statistics, the gradient would be $r\,d_j$ (eval mode is exactly that:
# there $\mu$ and $r$ are constants). Normalisation makes the output blind to adding a constant to every
# $x_j$ (the mean absorbs it) and to scaling every $x_j - \mu$ (the variance absorbs it); the two subtracted
# terms remove those components, so $\sum_j \partial L/\partial x_j = 0$ and
# $\sum_j \hat x_j\, \partial L/\partial x_j = 0$. The fused kernel needs only $x$ (or $\hat x$), $r$ and
# two per-channel means of $d$: one node instead of a dozen, and one saved input instead of several.

# %% id="backward-demo"
def count_nodes(t) -> dict[str, int]:
    # the autograd nodes behind t, by name
    seen, todo, names = set(), [t.grad_fn], {}
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names[type(node).__name__] = names.get(type(node).__name__, 0) + 1
        todo.extend(next_node for next_node, _ in node.next_functions)
    return names


def unfused_batch_norm(x, weight, bias, eps=1e-5):
    # batch norm in training mode, written with primitive ops
    axes = (0,) + tuple(range(2, x.dim()))
    shape = (1, -1) + (1,) * (x.dim() - 2)
    mean = x.mean(axes, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(axes, keepdim=True)
    return xc * (var + eps).rsqrt() * weight.reshape(shape) + bias.reshape(shape)


cl.manual_seed(0)
x = cl.randn(8, 3, 4, 4, dtype=cl.float64, requires_grad=True)
weight = cl.randn(3, dtype=cl.float64, requires_grad=True)
bias = cl.randn(3, dtype=cl.float64, requires_grad=True)
dy = cl.randn(8, 3, 4, 4, dtype=cl.float64)

fused = F.batch_norm(x, None, None, weight, bias, training=True)
unfused = unfused_batch_norm(x, weight, bias)
print("fused:  ", count_nodes(fused))
print("unfused:", count_nodes(unfused))

grads = {}
for name, out in [("fused", fused), ("unfused", unfused)]:
    x.grad = weight.grad = bias.grad = None
    out.backward(dy)
    grads[name] = (x.grad, weight.grad, bias.grad)
for label, a, b in zip(["dx", "dweight", "dbias"], grads["fused"], grads["unfused"]):
    print(f"{label:8} largest difference fused vs unfused: {(a - b).abs().max().item():.1e}")
# the two identities, exact with eps = 0 (eps leaves a remainder of relative size eps / variance)
x0 = x.detach().requires_grad_()
F.batch_norm(x0, None, None, weight, bias, training=True, eps=0.0).backward(dy)
xhat0 = F.batch_norm(x.detach(), None, None, training=True, eps=0.0)
print("largest |sum of dx| over the channels:        ", f"{x0.grad.sum((0, 2, 3)).abs().max().item():.1e}")
print("largest |sum of dx * xhat| over the channels: ", f"{(x0.grad * xhat0).sum((0, 2, 3)).abs().max().item():.1e}")


# %% [markdown] id="ex-05-3-task"
# ## Exercise 05.3 · batch_norm_backward: the fused formula (3 points)
#
# Write `batch_norm_backward(x, dy, gamma, eps=1e-5)` for BatchNorm in **training** mode: `x` and `dy`
# (the gradient of the loss with respect to the output $y$) have shape `(N, C)` or `(N, C, *spatial)`, and
# `gamma` has shape `(C,)`. Return `(dx, dgamma, dbeta)`: `dx` of `x`'s shape, the other two of shape `(C,)`.
#
# Use the boxed formula, not autograd: recompute the per-channel mean and $r$ from `x` (biased variance,
# `eps` inside the square root), form $\hat x$ and $d = $ `dy * gamma`, then `dx`, `dgamma`, `dbeta`. Do not
# call `Tensor.backward`, `cl.autograd.backward`, `cl.autograd.grad` or the engine's `run_backward` (in
# `course_lib.autograd.engine`): autograd is what the formula replaces. The check compares your three arrays
# with course_lib's autograd through the unfused composition (the `unfused_batch_norm` above).
#
# *Hint:* work with keepdims arrays over `axes = (0, 2, 3, ...)`: `d.mean(axis=axes, keepdims=True)` is
# $\overline d$, broadcast back over every value of its channel. `dgamma` and `dbeta` are sums over the same
# axes, *without* keepdims.

# %% id="ex-05-3-solution" tags=["solution"] exercise="05.3"
def batch_norm_backward(x: np.ndarray, dy: np.ndarray, gamma: np.ndarray,
                        eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dgamma, dbeta) of training-mode BatchNorm y = gamma * xhat + beta, given dy = dL/dy."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    ### BEGIN SOLUTION
    mean = x.mean(axis=axes, keepdims=True)
    r = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    xhat = (x - mean) * r
    d = dy * gamma.reshape(shape)
    dx = r * (d - d.mean(axis=axes, keepdims=True) - xhat * (d * xhat).mean(axis=axes, keepdims=True))
    return dx, (dy * xhat).sum(axis=axes), dy.sum(axis=axes)
    ### END SOLUTION


# %% id="ex-05-3-check" tags=["check", "nbval-check-output"] exercise="05.3" points=3
check("05.3", batch_norm_backward)

# %% [markdown] id="tiny-md"
# > **In PyTorch:** `tools/autograd/derivatives.yaml` declares the derivative of `native_batch_norm` as one
# > call, `native_batch_norm_backward(grad, input, weight, running_mean, running_var, result1, result2,
# > training, eps, grad_input_mask)`, where `result1` and `result2` are the mean and inverse standard
# > deviation the forward returned and autograd saved. The CPU version is `batch_norm_backward_cpu_template`
# > in `aten/src/ATen/native/Normalization.cpp` (its fast kernels are in `native/cpu/batch_norm_kernel.cpp`).
# > For second derivatives, `native_batch_norm_backward` has a derivative of its own in `derivatives.yaml`,
# > written by hand as `batchnorm_double_backward` in `torch/csrc/autograd/FunctionsManual.cpp`. course_lib's
# > `NativeBatchNormBackward0` (`course_lib/autograd/nn_derivatives.py`) takes a simpler route: it calls the
# > fused kernel normally, and under `create_graph=True` evaluates the same formula with differentiable ops,
# > so that autograd records it.
#
# ## 6 · Tiny batches, and why LayerNorm and GroupNorm exist
#
# BatchNorm estimates each channel's statistics from the batch. With few values per channel, the estimates
# are noisy, and in the extreme they are useless:
#
# - **one value per channel**: the variance is 0 and the output would be all zeros. PyTorch refuses;
# - **two values per channel** (a batch of 2 with no spatial dims): whatever the inputs, the two outputs are
#   $-1$ and $+1$. Only the *order* of the two samples survives (unless the two values are so close that
#   `eps` dominates their variance, as in the last channel below);
# - **small batches** in general: a sample's training output depends on its batch-mates, and the running
#   statistics used at evaluation are averages of noisy estimates, so training and evaluation see
#   different functions.

# %% id="tiny-demo"
bn = nn.BatchNorm1d(3)
try:
    bn(cl.randn(1, 3))
except ValueError as e:
    print("ValueError:", e)

with cl.no_grad():
    for pair in [[[0.1, 5.0, -3.0], [0.2, 50.0, 7.0]], [[100.0, -1.0, 0.0], [-100.0, -1.5, 0.001]]]:
        out = bn(cl.tensor(pair)).numpy().astype(float).round(3)
        print(f"batch of 2: {str(pair):38} -> {out.tolist()}")

# %% [markdown] id="tiny-figure-md"
# The next figure makes the last point concrete. Take one fixed sample, $x_0 = 1$, for a single feature
# whose true distribution is $\mathcal N(0, 1)$, so a well-trained BatchNorm in eval mode maps it to about
# $1$. In training mode its output depends on the batch-mates it is drawn with. The cell draws 2000 random
# batches for each batch size and plots where $x_0$ lands. It uses one trick: BatchNorm normalises each
# channel separately, so 2000 *channels* of one `(N, 2000)` tensor are 2000 independent experiments
# in one call.

# %% id="tiny-figure"
rng = np.random.default_rng(1)
fig, ax = plt.subplots(figsize=(7, 3.4))
for n, colour in [(2, "#d62728"), (8, "#ff7f0e"), (64, "#1f77b4")]:
    batch = rng.standard_normal((n, 2000))
    batch[0] = 1.0                                     # our sample, in every experiment
    with cl.no_grad():
        out = F.batch_norm(cl.tensor(batch), None, None, training=True).numpy()[0]
    ax.hist(out, bins=np.linspace(-1.5, 3.5, 101), alpha=0.6, color=colour, label=f"batch of {n}")
ax.axvline(1.0, color="black", linestyle=":", label="eval output (true statistics)")
ax.set_xlabel("training-mode output for the sample x0 = 1")
ax.set_ylabel("batches")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] id="ln-gn-md"
# With batches of 2 the sample is mapped to $+1$ or $-1$ depending on its partner; with 8 the output is
# spread widely; with 64 it concentrates near the value evaluation will give. Batches are small in practice
# whenever the inputs are large: detection and segmentation models often fit only one to four images per
# device. And in sequence models, batch statistics at one position would mix sequences of different lengths
# with their padding.
#
# **The fix is to never mix samples.** LayerNorm (Ba, Kiros and Hinton, 2016) and GroupNorm (Wu and He,
# 2018) compute their statistics inside each sample, so:
#
# - a sample's output does not depend on the rest of the batch, and a batch of 1 is fine;
# - training and evaluation compute the same function: no running statistics, no `train()`/`eval()`
#   difference;
# - they still need enough values per group: GroupNorm with one channel per group is InstanceNorm, which on a
#   4x4 feature map estimates from only 16 values.
#
# The next cell checks the first point: sample 0's output, computed in batches of 1, 2 and 64.

# %% id="ln-gn-demo"
cl.manual_seed(0)
images = cl.randn(64, 6, 4, 4)
layers = {"BatchNorm2d(6)": nn.BatchNorm2d(6), "GroupNorm(3, 6)": nn.GroupNorm(3, 6),
          "LayerNorm((6, 4, 4))": nn.LayerNorm((6, 4, 4))}
with cl.no_grad():
    for name, layer in layers.items():
        reference = layer(images)[0]
        changes = [(layer(images[:n])[0] - reference).abs().max().item() for n in (1, 2, 64)]
        print(f"{name:22} largest change of sample 0's output, batch of 1 / 2 / 64 vs 64: "
              + " / ".join(f"{c:.2g}" for c in changes))


# %% [markdown] id="ex-05-4-task"
# ## Exercise 05.4 · layer_norm (2 points)
#
# Write `layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5)` like `F.layer_norm`:
#
# - `normalized_shape` is a tuple of ints (an int `n` means `(n,)`, as in PyTorch); `x.shape` must end with
#   it, otherwise raise `RuntimeError` (PyTorch: `Given normalized_shape=[4], expected input with shape
#   [*, 4], but got input of size[2, 3]`);
# - normalise over the last `len(normalized_shape)` axes of each sample (biased variance, `eps` inside the
#   square root); the leading axes are untouched, whatever their number;
# - `weight` and `bias`, when given, have shape `normalized_shape`: return `y * weight + bias`.
#
# *Hint:* `axes = tuple(range(x.ndim - k, x.ndim))` for `k = len(normalized_shape)`. numpy broadcasting aligns
# shapes from the right, which is exactly how `weight` lines up with the trailing axes.

# %% id="ex-05-4-solution" tags=["solution"] exercise="05.4"
def layer_norm(x: np.ndarray, normalized_shape, weight: np.ndarray | None = None, bias: np.ndarray | None = None,
               eps: float = 1e-5) -> np.ndarray:
    """LayerNorm over the trailing `normalized_shape` axes of x."""
    ### BEGIN SOLUTION
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k > x.ndim or x.shape[x.ndim - k:] != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(x.shape)}")
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y
    ### END SOLUTION


# %% id="ex-05-4-check" tags=["check", "nbval-check-output"] exercise="05.4" points=2
check("05.4", layer_norm)


# %% [markdown] id="ex-05-5-task"
# > **In PyTorch:** `LayerNorm` is in `torch/nn/modules/normalization.py` and calls `F.layer_norm`
# > (`torch/nn/functional.py`). In `aten/src/ATen/native/layer_norm.cpp`, `_prepare_layer_norm_inputs`
# > checks the shapes (the error above) and views the input as an $M \times N$ matrix: $M$ rows, one per
# > sample (the product of the leading sizes), of $N$ values (the product of `normalized_shape`). The kernel
# > (`LayerNormKernel`, in `native/cpu/layer_norm_kernel.cpp`) then normalises each row and returns the
# > output with the mean and *rstd* (reciprocal standard deviation) that `native_layer_norm_backward`
# > needs: the same fused formula as BatchNorm's, with the means taken along a row instead of down a
# > channel. `RMSNorm`, also in `torch/nn/modules/normalization.py`, skips the mean and divides by
# > $\sqrt{\overline{x^2} + \varepsilon}$.
#
# ## Exercise 05.5 · group_norm by reshaping (2 points)
#
# GroupNorm splits the $C$ channels into $G$ groups of $C/G$ *neighbouring* channels and normalises each
# group of each sample. Reshaping makes that a reduction over one axis: an `(N, C, H, W)` array viewed as
# `(N, G, C/G · H · W)` has one group per row of the last axis, because channels $0 \dots C/G - 1$ come first
# in memory, then the next $C/G$, and so on.
#
# Write `group_norm(x, num_groups, weight=None, bias=None, eps=1e-5)` like `F.group_norm`:
#
# - `x` has shape `(N, C, *spatial)` (no spatial dims is fine too); raise `RuntimeError` if `C` is not
#   divisible by `num_groups`;
# - normalise each group of each sample (biased variance, `eps` inside the square root);
# - `weight` and `bias`, when given, have shape `(C,)`: one scale and shift **per channel**, not per group.
#
# *Hint:* `x.reshape(N, num_groups, -1)`, normalise along axis 2, `.reshape(x.shape)` back, then
# `weight.reshape(1, C, 1, ...)` to line the parameters up with the channel axis.

# %% id="ex-05-5-solution" tags=["solution"] exercise="05.5"
def group_norm(x: np.ndarray, num_groups: int, weight: np.ndarray | None = None, bias: np.ndarray | None = None,
               eps: float = 1e-5) -> np.ndarray:
    """GroupNorm: statistics per sample and group of C / num_groups neighbouring channels."""
    N, C = x.shape[:2]
    ### BEGIN SOLUTION
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(x.shape)} and num_groups={num_groups}")
    groups = x.reshape(N, num_groups, -1)
    mean = groups.mean(axis=2, keepdims=True)
    y = ((groups - mean) / np.sqrt(groups.var(axis=2, keepdims=True) + eps)).reshape(x.shape)
    shape = (1, C) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y
    ### END SOLUTION


# %% id="ex-05-5-check" tags=["check", "nbval-check-output"] exercise="05.5" points=2
check("05.5", group_norm)

# %% [markdown] id="shared-md"
# > **In PyTorch:** `GroupNorm` (`torch/nn/modules/normalization.py`) checks the divisibility when it is
# > built (`ValueError: num_channels (4) must be divisible by num_groups (3)`); `F.group_norm` ends up in
# > `native_group_norm(input, weight, bias, N, C, HxW, group, eps)` in `aten/src/ATen/native/group_norm.cpp`,
# > whose kernel (`native/cpu/group_norm_kernel.cpp`) treats the input as $N \cdot G$ rows exactly like your
# > reshape. `instance_norm` in `Normalization.cpp` takes yet another route: it views `(N, C, H, W)` as
# > `(1, N·C, H, W)` and runs **batch norm** on it, so each (sample, channel) pair becomes one "channel"
# > (which is how InstanceNorm can optionally track running statistics). course_lib's `F.instance_norm`
# > does the same.
#
# ## 7 · One implementation for the whole family
#
# You have now written four layers that differ only in the axes they reduce over.
# `course_lib/_ops/normalization_reference.py` states the arithmetic once, in two short functions parameterised by
# those axes: `norm_stats` (statistics and $\hat x$) and the fused backward `norm_backward`:

# %% id="shared-source"
from course_lib._ops.normalization_reference import norm_backward, norm_stats

print(inspect.getsource(norm_stats))
print(inspect.getsource(norm_backward))

# %% id="shared-demo"
cl.manual_seed(0)
x = cl.randn(4, 6, 3, 3, dtype=cl.float64)
a = x.numpy()
N, C = a.shape[:2]
eps = 1e-5
family = [
    ("BatchNorm", "axes (0, 2, 3)", norm_stats(a, (0, 2, 3), eps)[0], F.batch_norm(x, None, None, training=True)),
    ("LayerNorm", "axes (1, 2, 3)", norm_stats(a, (1, 2, 3), eps)[0], F.layer_norm(x, (6, 3, 3))),
    ("InstanceNorm", "axes (2, 3)", norm_stats(a, (2, 3), eps)[0], F.instance_norm(x)),
    ("GroupNorm(3)", "(N, 3, -1), axis 2", norm_stats(a.reshape(N, 3, -1), (2,), eps)[0].reshape(a.shape),
     F.group_norm(x, 3)),
    ("RMSNorm", "axes (1, 2, 3), no mean", norm_stats(a, (1, 2, 3), eps, subtract_mean=False)[0],
     F.rms_norm(x, (6, 3, 3), eps=eps)),
]
for name, how, mine, layer in family:
    print(f"{name:13} norm_stats over {how:24} vs F.*: largest difference {np.abs(mine - layer.numpy()).max():.1e}")

# %% [markdown] id="shared-kernel-md"
# The layers `F.batch_norm`, `F.layer_norm`, `F.group_norm`, `F.instance_norm` and `F.rms_norm` do not call
# `norm_stats`: they share one fast *kernel*, `grouped_norm_forward` / `grouped_norm_backward` in
# `course_lib/_ops/normalization.py`. Each layer views
# its input as a 3-d array `(A, G, B)` whose statistics are taken per index `g`, over the axes `A` and `B`:
#
# | layer | view `(A, G, B)` | one group per | gamma, beta |
# |---|---|---|---|
# | BatchNorm | `(N, C, H·W)` | channel | per group |
# | InstanceNorm | `(1, N·C, H·W)` | (sample, channel) | per group (it is batch norm on a reshaped input) |
# | GroupNorm | `(1, N·G, C/G·H·W)` | (sample, group) | per channel, applied around the kernel |
# | LayerNorm | `(1, rows, D)` | row | per position along `B` |
# | RMSNorm | `(1, rows, D)`, no mean | row | per position along `B` |
#
# The kernel computes what `norm_stats` and `norm_backward` compute, arranged for speed: the groups are cut into
# chunks of about a megabyte, each chunk gets all its passes while it sits in the CPU cache, chunks run on
# several threads (`cl.get_num_threads()`, as in PyTorch), and sums along `B` are matrix-vector products with a
# vector of ones, which BLAS does faster than `np.sum`. The result does not depend on the number of threads.
# `tests/test_norm_kernels.py` holds this kernel to the readable version: `normalization_reference.py` also has
# `grouped_norm_forward_reference` / `grouped_norm_backward_reference`, the kernel's signature built from
# `norm_stats` and `norm_backward`, and the tests compare the two on random shapes and chunk sizes, in float32
# and float64, with one and two threads.

# %% id="shared-kernel"
from course_lib._ops.normalization import grouped_norm_forward

a3 = a.reshape(N, C, -1)                                  # BatchNorm's view of x: (N, C, H*W)
y3, mean, rstd, var = grouped_norm_forward(a3, eps)
print("kernel vs norm_stats (BatchNorm):",
      f"{np.abs(y3.reshape(a.shape) - norm_stats(a, (0, 2, 3), eps)[0]).max():.1e}")
rows = a.reshape(1, N, -1)                                # LayerNorm((6, 3, 3))'s view: one row per sample
y3, mean, rstd, var = grouped_norm_forward(rows, eps, param="inner")
print("kernel vs norm_stats (LayerNorm):",
      f"{np.abs(y3.reshape(a.shape) - norm_stats(a, (1, 2, 3), eps)[0]).max():.1e}")


# %% [markdown] id="experiment-md"
# This is also why GroupNorm interpolates between the others: `GroupNorm(1, C)` normalises each sample over
# $(C, H, W)$, like `LayerNorm((C, H, W))`, and `GroupNorm(C, C)` normalises each channel of each sample, like
# InstanceNorm. (Their affine parameters still differ: GroupNorm's are per channel, LayerNorm's per element.)
#
# ## 8 · Experiment: the same network with and without BatchNorm
#
# A four-layer MLP (width 32, ReLU) learns to classify three interleaved spirals, trained with SGD (momentum
# 0.9) on batches of 32. Everything is seeded: the data, the initial weights (identical with and without
# BatchNorm, because the BatchNorm layers draw no random numbers), and the batch order. We train at two
# learning rates, one modest and one large.

# %% id="experiment"
def spirals(n_per_class: int = 200, classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    points, labels = [], []
    for k in range(classes):
        radius = np.linspace(0.1, 1.0, n_per_class)
        angle = np.linspace(4 * k, 4 * (k + 1), n_per_class) + rng.normal(0, 0.2, n_per_class)
        points.append(np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1))
        labels.append(np.full(n_per_class, k))
    return np.concatenate(points).astype(np.float32), np.concatenate(labels)


def mlp(batch_norm: bool, width: int = 32, depth: int = 4) -> nn.Module:
    cl.manual_seed(0)
    layers, fan_in = [], 2
    for _ in range(depth):
        layers.append(nn.Linear(fan_in, width))
        if batch_norm:
            layers.append(nn.BatchNorm1d(width))
        layers.append(nn.ReLU())
        fan_in = width
    layers.append(nn.Linear(fan_in, 3))
    return nn.Sequential(*layers)


def train(model: nn.Module, lr: float, steps: int = 200, batch_size: int = 32) -> tuple[list[float], float]:
    optimizer = cl.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    rng = np.random.default_rng(1)
    losses = []
    model.train()
    for _ in range(steps):
        index = rng.integers(0, len(points), batch_size)
        loss = F.cross_entropy(model(cl.tensor(points[index])), cl.tensor(labels[index]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with cl.no_grad():
        accuracy = (model(cl.tensor(points)).argmax(1) == cl.tensor(labels)).float().mean().item()
    return losses, accuracy


points, labels = spirals()
start = time.perf_counter()
runs = {}
for lr in [0.02, 0.5]:
    for batch_norm in [False, True]:
        runs[(lr, batch_norm)] = train(mlp(batch_norm), lr)
print(f"4 training runs of 200 steps in {time.perf_counter() - start:.1f} s")

fig, ax = plt.subplots(figsize=(7.5, 4))
smooth = np.ones(10) / 10
for (lr, batch_norm), (losses, accuracy) in runs.items():
    ax.plot(np.convolve(losses, smooth, mode="valid"), color="#1f77b4" if lr == 0.02 else "#d62728",
            linestyle="-" if batch_norm else "--",
            label=f"lr={lr}, {'with' if batch_norm else 'without'} BatchNorm (accuracy {accuracy:.0%})")
ax.set_xlabel("training step")
ax.set_ylabel("cross-entropy (10-step average)")
ax.set_title("Same network, same data, same initial weights")
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
plt.show()


# %% [markdown] id="measure-md"
# What to look for (your exact curves depend only on the seeds, so they should match these remarks):
#
# - at **lr = 0.02** the network without BatchNorm barely moves for the first hundred steps: the signal
#   reaching the early layers is small (section 1) and so are their updates. With BatchNorm the loss drops at
#   once;
# - at **lr = 0.5** the network without BatchNorm does not learn at all: the large steps throw it into a
#   region it never leaves (loss stuck at $\ln 3 \approx 1.1$, chance level). With BatchNorm it still learns,
#   if less well than at the smaller rate: rescaling a layer's weights no longer changes what the next layer
#   sees, so a too-large step is less destructive;
# - the curves with BatchNorm are noisier: every batch is normalised with its own statistics, which adds
#   noise to training (sometimes described as a mild regulariser). The accuracy is measured in eval mode,
#   with the running statistics.
#
# ## 9 · Measure: fused versus unfused backward
#
# Section 5 claimed that the fused backward saves both time and memory. `course_lib.memory` counts the bytes
# held by tensor storages, like `torch.cuda.memory_allocated()` does for a GPU: `memory_allocated()` is the
# current total, `max_memory_allocated()` the peak since `reset_peak_memory_stats()`. The next cell runs
# BatchNorm on a `(32, 64, 16, 16)` float32 batch (2 MiB) both ways and reports the backward time, the memory
# still held after the forward (output plus everything saved for the backward), and the peak over forward and
# backward.

# %% id="measure"
def fused_batch_norm(x, weight, bias, eps=1e-5):
    return F.batch_norm(x, None, None, weight, bias, training=True, eps=eps)


rng = np.random.default_rng(0)
shape = (32, 64, 16, 16)
x_data = rng.standard_normal(shape, dtype=np.float32)
dy = cl.tensor(rng.standard_normal(shape, dtype=np.float32))
weight = cl.ones(64, requires_grad=True)
bias = cl.zeros(64, requires_grad=True)


def measure(batch_norm, repeats: int = 5) -> tuple[float, float, float]:
    # (median backward seconds, MiB held after the forward, peak MiB over forward + backward)
    times, held, peak = [], 0, 0
    for _ in range(repeats):
        x = cl.tensor(x_data, requires_grad=True)
        weight.grad = bias.grad = None
        base = memory.memory_allocated()
        memory.reset_peak_memory_stats()
        out = batch_norm(x, weight, bias)
        held = memory.memory_allocated() - base
        start = time.perf_counter()
        out.backward(dy)
        times.append(time.perf_counter() - start)
        peak = memory.max_memory_allocated() - base
        del x, out
    return float(np.median(times)), held / 2**20, peak / 2**20


results = {"fused": measure(fused_batch_norm), "unfused": measure(unfused_batch_norm)}
for name, (seconds, held, peak) in results.items():
    print(f"{name:8} backward {seconds * 1e3:6.1f} ms   held after forward {held:5.1f} MiB   peak {peak:5.1f} MiB")

fig, axes = plt.subplots(1, 3, figsize=(11, 2.8))
for ax, k, what in [(axes[0], 0, "backward time (ms)"), (axes[1], 1, "held after forward (MiB)"),
                    (axes[2], 2, "peak, forward + backward (MiB)")]:
    values = [results[name][k] * (1e3 if k == 0 else 1) for name in results]
    ax.bar(list(results), values, color=["#2b8cbe", "#bdbdbd"])
    ax.set_title(what, fontsize=10)
plt.tight_layout()
plt.show()

# %% [markdown] id="summary"
# What to look for:
#
# - **Time.** The fused backward is several times faster (three to six times on this size, depending on the
#   machine): two sums per channel and a few elementwise operations done chunk by chunk while the chunk is in
#   cache, against a dozen autograd nodes each reading and writing a full-size tensor.
#   (`bench/bench_norm.py` measures the same workloads next to real PyTorch.)
# - **Memory held after the forward.** The fused node keeps `x` (which exists anyway) plus two numbers per
#   channel; the output is the only new full-size tensor. The unfused graph also keeps the centred input and
#   the normalised input for the backward of its `mul` nodes: three full-size tensors instead of one. In a
#   deep network that difference is multiplied by the number of normalisation layers, and it is memory held
#   from the forward pass until the backward pass reaches the layer.
# - **Peak.** The backward of the unfused graph creates a full-size gradient for each intermediate result.
#
# One caveat: `course_lib.memory` counts tensor storages only, not the numpy temporaries *inside* a kernel.
# course_lib's kernel keeps those small: it works on chunks of about a megabyte and reuses one work array per
# thread, much as PyTorch's C++ kernel loops over the channels and keeps only per-channel sums.
#
# ## Summary and what comes next
#
# - One recipe, $y = \gamma\,(x - \mu)/\sqrt{\sigma^2 + \varepsilon} + \beta$, with four choices of the
#   statistics group: BatchNorm (a channel across the batch), LayerNorm (a sample), InstanceNorm (a channel of
#   a sample), GroupNorm (a group of channels of a sample). One implementation parameterised by the reduced
#   axes serves them all.
# - BatchNorm normalises with the **biased** batch variance and tracks the **unbiased** one in `running_var`;
#   `momentum` is the weight of the new batch, `momentum=None` a cumulative average over
#   `num_batches_tracked`. In eval mode it uses the running buffers.
# - BatchNorm mixes samples: its training output depends on the batch, it cannot train on one value per
#   channel, and it degrades with small batches. LayerNorm and GroupNorm never mix samples and behave the same
#   in training and evaluation.
# - The backward of a normalisation is $dx = r\,(d - \overline{d} - \hat x\,\overline{d\hat x})$: one fused
#   node, faster and lighter than autograd through the primitive ops.
#
# **Chapter 06 · Data loading** builds the machinery that feeds batches to all of this: `Dataset`, samplers,
# `collate`, and a `DataLoader` whose worker processes hand batches back through shared memory.
#
# Grade this chapter with `course grade notebooks/05_normalization.ipynb`.
