# ---
# jupyter:
#   course:
#     title: Capstone
# ---

# %% [markdown] id="intro"
# # 09 · Capstone: train, resume, fine-tune, compile and ship a ResNet; learning on graphs
#
# Every chapter so far built one piece of PyTorch: tensors and storage, strides and views, autograd, modules
# and optimizers, normalisation, data loading, serialization, the compiler. This chapter uses all of them
# together, on real training runs, in your own library.
#
# **Part A** trains a ResNet (chapter 04's blocks) on ten classes of 32 × 32 colour images: multi-worker data
# loading with augmentation, BatchNorm, SGD with momentum and weight decay, a one-cycle schedule, label
# smoothing, a progress bar and live curves. It checkpoints as it goes, so that a run killed in the middle of an
# epoch resumes with exactly the losses it would have had; then it looks at the mistakes, fine-tunes the trained
# network on a new task, measures mixed precision and compilation, and ships the weights to PyTorch.
# **Part B** learns on graphs instead of grids: message passing with `index_add` and `scatter_reduce`, a graph
# convolutional network and DeepWalk's random walks.
#
# **You will build**
#
# - `run_epoch`: one pass of training or evaluation, in the right mode;
# - `Checkpointer`: a checkpoint that a run resumes from, step for step;
# - `freeze_and_replace_head`: the first step of fine-tuning;
# - `scaler_step`: the GradScaler's unscale, inf check, skipped step and scale update;
# - and, in Part B, exercises 09.7 and up.
#
# *Prerequisites:* chapters 03 to 08. *Expected time:* about 3 hours, of which 10 minutes of training runs.

# %% id="setup"
import os
import tempfile
import time

import numpy as np
from IPython.display import display
from tqdm.auto import tqdm

import course_lib as cl
from course import check
from course.checks import chapter_checks
from course_lib import nn
from course_lib.datasets import PATTERN_CLASSES, Patterns, graphs
from course_lib.models.resnet import BasicBlock, ResNet
from course_lib.nn import functional as F
from course_lib.utils.checkpoint import checkpoint_sequential
from course_lib.utils.data import DataLoader, Sampler

# %% [markdown] id="part-a"
# ## Part A · A ResNet, trained for real
#
# Chapter 04 assembled ResNet-18 but trained only a 1,200-parameter network on 12 × 12 grey shapes. Here a
# ResNet learns a ten-class colour data set the way real projects train: batches from a multi-worker
# `DataLoader`, random augmentation, BatchNorm, SGD with momentum and weight decay, a one-cycle learning-rate
# schedule and label smoothing, with a progress bar, live curves and a checkpoint you can resume from.
#
# The whole run takes **about three minutes on two CPU cores** (the closing note has the measurements). Under
# `course grade` the long cells run on a few dozen images instead, so grading stays fast.

# %% [markdown] id="data-md"
# ### A.1 · The data
#
# `course_lib.datasets.Patterns` stands in for CIFAR-10: 32 × 32 colour images in ten classes, five shapes
# (disk, square, triangle, diamond, plus), each **solid** or **striped**. Every image has its own random
# colours, size, position, stripe angle and stripe width, plus pixel noise, so colour alone says nothing about
# the class: the network has to learn outlines and textures. The images are made from a seed in a few seconds
# (nothing is downloaded) and, as torchvision's `CIFAR10`, the dataset keeps them in `data`, an
# `(N, 32, 32, 3)` uint8 array, with the labels in `targets`. We use 16,000 training images and 4,000 test
# images made from another seed.

# %% id="data" tags=["long"] grader_runs="EPOCHS, BATCH = 1, 32; train_set = Patterns(64, seed=0); test_set = Patterns(32, seed=1)"
EPOCHS, BATCH = 4, 128
start = time.perf_counter()
train_set = Patterns(16000, seed=0)
test_set = Patterns(4000, seed=1)
print(f"made {len(train_set)} + {len(test_set)} images in {time.perf_counter() - start:.1f} s;",
      "data:", train_set.data.shape, train_set.data.dtype)

# %% id="data-figure" grader_runs="print('`course grade` skips the figure')"
import matplotlib.pyplot as plt

fig, axes = plt.subplots(3, 10, figsize=(12, 4))
for c, name in enumerate(PATTERN_CLASSES):
    for row, i in enumerate(np.flatnonzero(np.array(train_set.targets) == c)[:3]):
        axes[row, c].imshow(train_set.data[i])
        axes[row, c].axis("off")
    axes[0, c].set_title(name, fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] id="loader-md"
# ### A.2 · Feeding the network
#
# Three pieces turn the arrays into training batches.
#
# - **Collation in the workers.** `to_batch` stacks a list of `(image, label)` samples, converts the uint8
#   pixels to float32 and normalises each channel to mean 0 and standard deviation 1 (statistics of the
#   training set). It runs in the `DataLoader`'s worker process, and the batch comes back to the training
#   process through shared memory (chapter 06), so the conversion overlaps with the training step. One worker
#   is enough here: it converts a batch in milliseconds while a training step takes a quarter of a second, and
#   on two cores a second worker would only take time from the training process. Heavier decoding (JPEG files)
#   or more cores call for more workers.
# - **A sampler with an epoch number.** `EpochSampler` shuffles with a generator seeded from `(seed, epoch)`,
#   the scheme of PyTorch's `DistributedSampler.set_epoch`: the order of any epoch can be made again from two
#   integers, and `set_epoch(epoch, start=k)` starts it at sample `k`. That is what lets a run stopped in the
#   middle of an epoch resume at the exact batch it stopped at (A.4).
# - **Augmentation on the batch.** `augment` pads each image by 4 pixels, crops a random 32 × 32 window and
#   mirrors half the images left to right: the network sees a slightly different picture of every image in
#   every epoch, which keeps it from memorising the training set. torchvision's `RandomCrop` and
#   `RandomHorizontalFlip` (in `course_lib.datasets.transforms` too) do this one image at a time in the
#   workers; here it is done for the whole batch with one numpy gather, in the training process, from the
#   **global** generator. Randomness drawn in workers would depend on which worker loaded which batch, and a
#   resumed run would have to restore every worker's generator; randomness drawn in the training process is
#   restored with one `set_rng_state`. (For the same reason each `DataLoader` gets a generator of its own:
#   every `iter(loader)` draws a base seed for the workers, from the global generator if the loader has none,
#   and a resumed run that skipped an evaluation pass would then be one draw behind.)

# %% id="loader"
MEAN = (train_set.data.reshape(-1, 3).mean(0) / 255).astype(np.float32)
STD = (train_set.data.reshape(-1, 3).std(0) / 255).astype(np.float32)


def to_batch(samples):
    """Collate [(uint8 image (32, 32, 3), label), ...] into normalised float32 images (N, 3, 32, 32) and labels."""
    images = np.stack([image for image, _ in samples]).transpose(0, 3, 1, 2).astype(np.float32)
    images = (images / 255 - MEAN[:, None, None]) / STD[:, None, None]
    return cl.from_numpy(np.ascontiguousarray(images)), cl.tensor([label for _, label in samples])


class EpochSampler(Sampler):
    """Indices 0..n-1 in an order drawn from a generator seeded with (seed, epoch), from sample ``start`` on."""

    def __init__(self, n: int, seed: int = 0):
        self.n, self.seed, self.epoch, self.start = n, seed, 0, 0

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        self.epoch, self.start = epoch, start

    def __iter__(self):
        gen = cl.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        return iter(cl.randperm(self.n, generator=gen)[self.start:].tolist())

    def __len__(self) -> int:
        return self.n - self.start


def augment(x, pad: int = 4):
    """Random pad-and-crop and horizontal flip of a batch (N, C, H, W), drawn from the global generator."""
    n, c, h, w = x.shape
    padded = np.pad(x.numpy(), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    dy = cl.randint(0, 2 * pad + 1, (n,)).numpy()
    dx = cl.randint(0, 2 * pad + 1, (n,)).numpy()
    flip = (cl.rand(n) < 0.5).numpy()
    rows = dy[:, None] + np.arange(h)                              # (N, H): the rows each image keeps
    cols = dx[:, None] + np.arange(w)
    cols = np.where(flip[:, None], cols[:, ::-1], cols)            # a flip reads its columns backwards
    out = padded[np.arange(n)[:, None, None, None], np.arange(c)[None, :, None, None],
                 rows[:, None, :, None], cols[:, None, None, :]]
    return cl.from_numpy(out)


sampler = EpochSampler(len(train_set), seed=0)
train_loader = DataLoader(train_set, batch_size=BATCH, sampler=sampler, num_workers=1, collate_fn=to_batch,
                          drop_last=True, generator=cl.Generator().manual_seed(0))
test_loader = DataLoader(test_set, batch_size=500, collate_fn=to_batch, generator=cl.Generator().manual_seed(0))
x, y = next(iter(train_loader))
print("a batch:", tuple(x.shape), x.dtype, "labels", y[:8].tolist(), "| steps per epoch:", len(train_loader))

# %% [markdown] id="model-md"
# ### A.3 · The model
#
# The ResNet is chapter 04's: `course_lib.models.resnet.ResNet` with its `BasicBlock`s, torchvision's module
# names, BatchNorm after every convolution. It only gets smaller. One block per stage instead of two, stages
# 16, 32, 64 and 128 channels wide instead of 64 to 512 (the `widths` argument), and ImageNet's stem (a 7 × 7
# convolution with stride 2, then a max pool) that brings 32 × 32 inputs down to 8 × 8 before the first stage.
# That is 311 thousand parameters instead of 11 million, and a training step on 128 images takes about a
# quarter of a second in numpy. `small_input=True`, the usual CIFAR stem, keeps 32 × 32 through the first
# stage: more accurate on small details, and 16 times the work in the first stage.

# %% id="model"
def make_model(num_classes: int = 10):
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=num_classes, widths=(16, 32, 64, 128))


cl.manual_seed(0)
model = make_model()
print(f"{sum(p.numel() for p in model.parameters()):,} parameters;",
      "output of a batch:", tuple(model(x).shape))

# %% [markdown] id="ex-09-1-task"
# ## Exercise 09.1 · one epoch, in the right mode (2 points)
#
# Write `run_epoch(model, batches, loss_fn, optimizer=None, scheduler=None)`, one pass over `batches` (any
# iterable of `(x, y)`: a `DataLoader`, a list).
#
# - **With an optimizer it trains**: put the model in training mode (`model.train()`), then for each batch:
#   forward, loss, `optimizer.zero_grad()`, `loss.backward()`, `optimizer.step()`, and `scheduler.step()` if a
#   scheduler was given (the one-cycle schedule moves once per batch).
# - **Without one it evaluates**: `model.eval()` (dropout off, BatchNorm uses its running statistics and stops
#   updating them) and the whole loop under `course_lib.no_grad()` (no graph is recorded: less memory, less
#   time).
#
# Return `(mean_loss, accuracy)` as two Python floats over all the samples of the pass: weight each batch's loss
# by its number of samples (the last batch may be smaller), and count a sample correct when
# `output.argmax(1)` equals its label.
#
# The check runs your function on a small seeded network with BatchNorm and dropout, which arrives in the
# *other* mode, and compares the returned numbers, the parameters, BatchNorm's statistics and whether
# gradients were recorded with the same epoch run by course_lib.
#
# *PyTorch note:* `model.train()` and `model.eval()` only set the `training` flag on every submodule (chapter
# 04); `no_grad()` is separate (chapter 03). Forgetting either is the most common bug in training code, and
# neither raises an error.
#
# The training cells below use the chapter's own `reference_run_epoch` until yours works; calling it from your
# answer fails the check.

# %% id="ex-09-1-solution" tags=["solution"] exercise="09.1"
import course_lib as cl


def run_epoch(model, batches, loss_fn, optimizer=None, scheduler=None):
    """One pass over ``batches``: training if ``optimizer`` is given, else evaluation. Returns (mean loss, accuracy)."""
    ### BEGIN SOLUTION
    train = optimizer is not None
    model.train(train)
    total, correct, n = 0.0, 0, 0
    with cl.set_grad_enabled(train):
        for x, y in batches:
            out = model(x)
            loss = loss_fn(out, y)
            if train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
            total += loss.item() * len(y)
            correct += int((out.argmax(1) == y).sum())
            n += len(y)
    return total / n, correct / n
    ### END SOLUTION


# %% id="ex-09-1-check" tags=["check", "nbval-check-output"] exercise="09.1" points=2
check("09.1", run_epoch)

# %% [markdown] id="ex-09-2-task"
# ## Exercise 09.2 · a checkpoint you can resume from (3 points)
#
# A training run that dies (the laptop sleeps, the kernel is restarted, the cluster pre-empts the job) should
# go on where it stopped, and go on **exactly**: the same losses, step for step, as if it had never stopped.
# That needs everything the next step depends on:
#
# | what | why |
# |---|---|
# | `model.state_dict()` | the weights, and BatchNorm's running statistics (buffers) |
# | `optimizer.state_dict()` | SGD's momentum buffers (Adam's moments); without them the first steps after resuming differ |
# | `scheduler.state_dict()` | where the one-cycle schedule is: the learning rate and momentum of the next step |
# | `course_lib.get_rng_state()` | the global generator: augmentation and dropout draw from it |
# | `epoch` and `batch` | where the data is: the sampler remakes the epoch's order from `(seed, epoch)` and starts at `batch` |
#
# Write the class `Checkpointer(path)` with
#
# - `save(model, optimizer, scheduler, epoch, batch)`: write all of the above to `path` with `course_lib.save`
#   (which writes a temporary file and renames it over `path`, so a run killed while saving leaves the previous
#   checkpoint whole, chapter 07). `batch` is the number of batches of `epoch` already done.
# - `load(model, optimizer, scheduler)`: read `path` (with `course_lib.load`'s default `weights_only=True`:
#   save only tensors, numbers, strings and containers of them), load each state into the objects given,
#   restore the generator, and return `(epoch, batch)`.
#
# The check trains a small network, saving after every step, stops it after some step, then resumes with a new
# model, optimizer and scheduler built with other seeds, and compares every loss, and BatchNorm's statistics at
# the end, with an uninterrupted run. It also reads the file itself, as a new process would: every parameter
# and buffer of the model, the optimizer's momentum buffers and the generator's state must be in it.
# The training cells use the chapter's `ReferenceCheckpointer` until yours works; calling its `save` or `load`
# from your answer fails the check.

# %% id="ex-09-2-solution" tags=["solution"] exercise="09.2"
import course_lib as cl


class Checkpointer:
    """Saves and restores everything a training run needs to go on exactly where it stopped."""

    def __init__(self, path):
        self.path = path

    def save(self, model, optimizer, scheduler, epoch: int, batch: int) -> None:
        ### BEGIN SOLUTION
        cl.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "rng": cl.get_rng_state(), "epoch": epoch, "batch": batch},
                self.path)
        ### END SOLUTION

    def load(self, model, optimizer, scheduler) -> tuple[int, int]:
        ### BEGIN SOLUTION
        ckpt = cl.load(self.path)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        cl.set_rng_state(ckpt["rng"])
        return ckpt["epoch"], ckpt["batch"]
        ### END SOLUTION


# %% id="ex-09-2-check" tags=["check", "nbval-check-output"] exercise="09.2" points=3
check("09.2", Checkpointer)

# %% [markdown] id="fit-md"
# ### A.4 · The training run
#
# `fit` puts the pieces together. Before the first step it makes the model, the optimizer and the schedule
# from fixed seeds, and if a checkpoint exists it resumes from it. Each step draws an augmentation, runs the
# forward pass, the loss (cross-entropy with **label smoothing** 0.1: the target gives 0.91 to the right class
# and 0.01 to each other, which keeps the network from pushing its logits ever further apart), backward and the
# optimizer step. It saves a checkpoint every `save_every` batches and at the end of every epoch, then
# evaluates on the test set and redraws the curves.
#
# The recipe is the usual one for a ResNet on CIFAR-sized images: SGD with Nesterov momentum 0.9, weight decay
# 5e-4 and `OneCycleLR` (the learning rate climbs from 0.008 to 0.2 over the first 30% of the steps, then
# anneals to almost zero, while the momentum moves the other way). The progress bar is `tqdm.auto`'s: a widget
# in JupyterLab, a line of text in a terminal.
#
# **Try it:** start the training cell and interrupt the kernel (■) in the middle of an epoch, then run the cell
# again. It resumes from the last checkpoint (at most `save_every` batches back) and its losses from there on
# are the ones the uninterrupted run has. A.5 checks exactly that.

# %% id="fit"
# Your run_epoch (09.1) and Checkpointer (09.2) if they are done, else the references in this chapter's checks.
try:
    run_epoch(nn.Linear(1, 2), [(cl.zeros(1, 1), cl.zeros(1, dtype=cl.int64))], nn.CrossEntropyLoss())
    epoch_fn = run_epoch
except NotImplementedError:
    print("09.1 run_epoch is not done yet: the cells below use the reference in chapter 09's checks")
    epoch_fn = chapter_checks("09").reference_run_epoch
Checkpointing = Checkpointer
try:
    Checkpointer(os.path.join(tempfile.mkdtemp(), "missing.ckpt")).load(None, None, None)
except NotImplementedError:
    print("09.2 Checkpointer is not done yet: the cells below use the reference in chapter 09's checks")
    Checkpointing = chapter_checks("09").ReferenceCheckpointer
except Exception:  # noqa: BLE001 - a finished load fails here: the file does not exist
    pass


def make_run(steps_per_epoch: int, epochs: int):
    """A fresh model, optimizer and schedule, always the same for the same seed."""
    cl.manual_seed(0)
    net = make_model()
    opt = cl.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = cl.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, epochs=epochs, steps_per_epoch=steps_per_epoch)
    return net, opt, sched


def fit(path, epochs=EPOCHS, save_every=25, stop_after=None, live=True):
    """Train (resuming from ``path`` if it exists); returns the model and the history of the run.

    ``stop_after``: stop after that many steps, as a crash would (for the resume demonstration).
    """
    steps = len(train_set) // BATCH
    net, opt, sched = make_run(steps, epochs)
    ckpt = Checkpointing(path)
    epoch, batch = ckpt.load(net, opt, sched) if os.path.exists(path) else (0, 0)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    history = {"step_loss": [], "train_loss": [], "test_loss": [], "test_acc": []}
    plot = LiveCurves(epochs) if live else None
    done = 0
    while epoch < epochs:
        sampler.set_epoch(epoch, start=batch * BATCH)
        net.train()
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{epochs}", initial=batch, total=steps, leave=live)
        for x, y in bar:
            loss = loss_fn(net(augment(x)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            batch += 1
            done += 1
            history["step_loss"].append(loss.item())
            bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{sched.get_last_lr()[0]:.3f}")
            if batch == steps:
                break
            if batch % save_every == 0:
                ckpt.save(net, opt, sched, epoch, batch)
            if stop_after is not None and done == stop_after:
                bar.close()
                return net, history
        epoch, batch = epoch + 1, 0
        test_loss, test_acc = epoch_fn(net, test_loader, loss_fn)
        ckpt.save(net, opt, sched, epoch, batch)          # after the evaluation: the next step comes next
        history["train_loss"].append(float(np.mean(history["step_loss"][-steps:])))
        history["test_loss"].append(test_loss)
        history["test_acc"].append(test_acc)
        if plot is not None:
            plot.update(history)
    return net, history


class LiveCurves:
    """Loss and accuracy per epoch, one figure redrawn in place (a static image outside Jupyter)."""

    def __init__(self, epochs):
        import matplotlib.pyplot as plt  # here, not in the setup cell: `course grade` never draws

        self.fig, (self.ax_loss, self.ax_acc) = plt.subplots(1, 2, figsize=(10, 3.2))
        self.epochs = epochs
        self.handle = display(self.fig, display_id=True)
        plt.close(self.fig)

    def update(self, history):
        n = np.arange(1, len(history["test_acc"]) + 1)
        self.ax_loss.clear()
        self.ax_loss.plot(n, history["train_loss"], "o-", label="training (mean of the epoch)")
        self.ax_loss.plot(n, history["test_loss"], "o-", label="test")
        self.ax_loss.set(xlabel="epoch", ylabel="loss", xlim=(0.5, self.epochs + 0.5))
        self.ax_loss.legend()
        self.ax_acc.clear()
        self.ax_acc.plot(n, history["test_acc"], "o-", color="C2")
        self.ax_acc.set(xlabel="epoch", ylabel="test accuracy", xlim=(0.5, self.epochs + 0.5), ylim=(0, 1))
        if self.handle is not None:
            self.handle.update(self.fig)

# %% id="train" tags=["long"] grader_runs="CKPT = os.path.join(tempfile.mkdtemp(), 'capstone_resnet.ckpt'); model, history = fit(CKPT, live=False)  # `course grade` trains on 64 images for one epoch"
CKPT = os.path.join(tempfile.gettempdir(), "capstone_resnet.ckpt")
start = time.perf_counter()
model, history = fit(CKPT)
train_time = time.perf_counter() - start
print(f"{EPOCHS} epochs in {train_time:.0f} s ({train_time / EPOCHS:.1f} s per epoch, test set included); "
      f"test accuracy after each epoch: {[round(a, 4) for a in history['test_acc']]}")

# %% [markdown] id="train-after"
# The run above resumed from `CKPT` if an earlier run left one there; delete the file
# (`os.remove(CKPT)`) to train from the start again. Expect a test accuracy above 99% after four epochs (at
# least 90% after the second): the data set is easier than CIFAR-10, and the network much smaller than the
# ResNets that reach 95% on CIFAR-10.

# %% [markdown] id="resume-md"
# ### A.5 · Kill it in the middle, resume, compare
#
# A demonstration on the first 2,560 images, two epochs of 20 steps: one uninterrupted run, and one that stops
# after step 27 (in the middle of the second epoch, seven steps after the last checkpoint) and is then started
# again by a new `fit`, which loads the checkpoint and redoes those seven steps. The resumed losses equal the
# uninterrupted run's, bit for bit. (tests/test_capstone_resume.py does the same with a DataLoader worker
# process killed by `SIGKILL`.)

# %% id="resume" tags=["long"] grader_runs="print('`course grade` skips the demonstration')"
full_set = train_set
train_set = cl.utils.data.Subset(full_set, range(2560))
sampler = EpochSampler(len(train_set), seed=0)
train_loader = DataLoader(train_set, batch_size=BATCH, sampler=sampler, num_workers=1, collate_fn=to_batch,
                          drop_last=True, generator=cl.Generator().manual_seed(0))
demo = [os.path.join(tempfile.gettempdir(), name) for name in ("capstone_a.ckpt", "capstone_b.ckpt")]
for p in demo:
    if os.path.exists(p):
        os.remove(p)
_, straight = fit(demo[0], epochs=2, save_every=10, live=False)
_, before = fit(demo[1], epochs=2, save_every=10, stop_after=27, live=False)
_, after = fit(demo[1], epochs=2, save_every=10, live=False)
resumed = before["step_loss"][:20] + after["step_loss"]     # the checkpoint was at step 20
print("uninterrupted, steps 20-27:", [round(v, 4) for v in straight["step_loss"][20:28]])
print("resumed,       steps 20-27:", [round(v, 4) for v in resumed[20:28]])
print("all 40 losses identical:", resumed == straight["step_loss"])
train_set = full_set
sampler = EpochSampler(len(train_set), seed=0)
train_loader = DataLoader(train_set, batch_size=BATCH, sampler=sampler, num_workers=1, collate_fn=to_batch,
                          drop_last=True, generator=cl.Generator().manual_seed(0))

# %% [markdown] id="eval-md"
# ### A.6 · What does it get wrong?
#
# Accuracy is one number. The **confusion matrix** shows which classes are mistaken for which: row = true class,
# column = predicted class, the diagonal counts the correct answers. Below it, the test images the model got
# wrong, with what it answered.

# %% id="eval"
model.eval()
with cl.no_grad():
    logits = cl.cat([model(x) for x, _ in test_loader])
pred = logits.argmax(1).numpy()
true = np.array(test_set.targets)
confusion = np.zeros((10, 10), dtype=np.int64)
np.add.at(confusion, (true, pred), 1)
print(f"test accuracy {np.mean(pred == true):.4f}; {np.sum(pred != true)} mistakes out of {len(true)}")

# %% id="eval-figure" grader_runs="print('`course grade` skips the figures')"
import matplotlib
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6.5, 5.5))
im = ax.imshow(confusion, cmap="Blues", norm=matplotlib.colors.LogNorm(vmin=1, vmax=max(confusion.max(), 2)))
for i, j in zip(*np.nonzero(confusion)):
    ax.text(j, i, confusion[i, j], ha="center", va="center", fontsize=7,
            color="white" if confusion[i, j] > confusion.max() / 4 else "black")
ax.set_xticks(range(10), PATTERN_CLASSES, rotation=60, ha="right", fontsize=8)
ax.set_yticks(range(10), PATTERN_CLASSES, fontsize=8)
ax.set(xlabel="predicted", ylabel="true", title="confusion matrix (test set, log colour scale)")
plt.show()

wrong = np.flatnonzero(pred != true)[:16]
if len(wrong):
    fig, axes = plt.subplots(2, 8, figsize=(12, 3.6), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, wrong):
        ax.imshow(test_set.data[i])
        ax.set_title(f"{PATTERN_CLASSES[true[i]]}\n→ {PATTERN_CLASSES[pred[i]]}", fontsize=7)
    plt.suptitle("misclassified: true → predicted")
    plt.show()

# %% [markdown] id="finetune-md"
# ### A.7 · Fine-tuning: a new task on top of a trained network
#
# A trained network's convolutional layers (the **backbone**) have learned features: edges, stripes, corners,
# outlines. A new task with few labelled examples can reuse them and train only a new final layer (the
# **head**). That is what "pretrained weights" are for (torchvision's `resnet18(weights=...)`): load them,
# freeze the backbone, replace the head.
#
# The new task: the **shape alone** (five classes; solid and striped together), learned from only **20
# labelled images per shape**. We compare the frozen pretrained backbone with a new head against the same
# network trained from scratch on the same 100 images.

# %% [markdown] id="ex-09-3-task"
# ## Exercise 09.3 · freeze the backbone, replace the head (2 points)
#
# Write `freeze_and_replace_head(model, num_classes)` for a torchvision-style ResNet (its classifier is
# `model.fc`, an `nn.Linear`):
#
# 1. freeze every parameter the model has (`requires_grad_(False)`): no gradient is computed for them, and an
#    optimizer given them would not move them;
# 2. put a new `nn.Linear(model.fc.in_features, num_classes)` in `model.fc` (a new module's parameters require
#    gradients, and its default initialisation is the one we want; draw nothing else from the generator before
#    making it);
# 3. return the new head, whose parameters are the ones to give the optimizer.
#
# *PyTorch note:* freezing does not stop BatchNorm from updating its running statistics in training mode: they
# are buffers, updated in the forward pass, not by the optimizer. Fine-tuning a frozen backbone therefore runs
# it in evaluation mode (A.7's code below calls `model.eval()`), or its statistics drift towards the few new
# images.
#
# The fine-tuning cells use the chapter's `reference_freeze_and_replace_head` until yours works; calling it from
# your answer fails the check.

# %% id="ex-09-3-solution" tags=["solution"] exercise="09.3"
from course_lib import nn


def freeze_and_replace_head(model, num_classes):
    """Freeze all of ``model``'s parameters and replace ``model.fc`` with a new trainable Linear; return it."""
    ### BEGIN SOLUTION
    model.requires_grad_(False)
    model.fc = nn.Linear(model.fc.in_features, num_classes)
    return model.fc
    ### END SOLUTION


# %% id="ex-09-3-check" tags=["check", "nbval-check-output"] exercise="09.3" points=2
check("09.3", freeze_and_replace_head)

# %% id="finetune" tags=["long"] grader_runs="print('`course grade` skips the comparison')"
def shape_of(label):
    return label // 2


few = np.concatenate([np.flatnonzero(np.array(train_set.targets) // 2 == s)[:20] for s in range(5)])
few_batch = to_batch([(train_set.data[i], shape_of(train_set.targets[i])) for i in few])
shape_test = [to_batch([(test_set.data[i], shape_of(t)) for i, t in enumerate(test_set.targets)])]
loss_fn = nn.CrossEntropyLoss()


def train_few(net, params, frozen: bool, epochs: int = 30):
    """``epochs`` steps on the 100 images (augmented); returns test accuracy on the 5-shape task and the time."""
    opt = cl.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=5e-4)
    x, y = few_batch
    start = time.perf_counter()
    for _ in range(epochs):
        net.train(not frozen)                # frozen: BatchNorm keeps the pretrained statistics
        loss = loss_fn(net(augment(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return epoch_fn(net, shape_test, loss_fn)[1], time.perf_counter() - start


pretrained = make_model()
pretrained.load_state_dict(cl.load(CKPT)["model"])
try:
    freeze_and_replace_head(make_model(), 5)
    replace_head = freeze_and_replace_head
except NotImplementedError:
    print("09.3 freeze_and_replace_head is not done yet: using the reference in chapter 09's checks")
    replace_head = chapter_checks("09").reference_freeze_and_replace_head
cl.manual_seed(1)
head = replace_head(pretrained, 5)
acc_ft, t_ft = train_few(pretrained, head.parameters(), frozen=True)
cl.manual_seed(1)
scratch = make_model(num_classes=5)
acc_scratch, t_scratch = train_few(scratch, scratch.parameters(), frozen=False)
print(f"{'':32}{'test accuracy (5 shapes)':>26}{'training time':>15}")
print(f"{'pretrained backbone, new head':32}{acc_ft:>26.3f}{t_ft:>14.1f}s")
print(f"{'from scratch, all layers':32}{acc_scratch:>26.3f}{t_scratch:>14.1f}s")

# %% [markdown] id="amp-md"
# ### A.8 · Mixed precision
#
# Half-precision numbers take 2 bytes instead of 4. **Autocast** (`course_lib.autocast`, `torch.autocast`) runs
# each op in the precision its list gives: matrix products and convolutions in the low precision, reductions,
# norms and losses in float32, whose range and resolution their sums need (chapter 05 has the lists). An op in
# low precision also saves its inputs for backward in low precision, and saved activations are most of a
# training step's memory.
#
# float16 has a narrow range: its smallest positive value is 2⁻²⁴ ≈ 6e-8, and gradients below half of that
# (about 3e-8) round to zero. The **GradScaler** multiplies the loss
# by a large scale (65,536 to start) so the gradients are large enough, then divides them by it before the
# optimizer step. If any gradient came out inf or NaN the scale was too large: the step is skipped and the
# scale halved. After 2,000 steps in a row without overflow it doubles, to use the range again.
#
# PyTorch's autocast on the CPU uses bfloat16 by default: it has float32's range with fewer digits, so it needs
# no scaler (the scaler is for float16, the usual choice on a GPU). numpy has no bfloat16, so course_lib's
# autocast takes float16 on the CPU, and the scaler matters.

# %% [markdown] id="ex-09-4-task"
# ## Exercise 09.4 · the GradScaler's step and update (2 points)
#
# Write `scaler_step(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5,
# growth_interval=2000)`: what `scaler.step(optimizer)` then `scaler.update()` do, given the current `scale` (a
# float) and `growth_tracker` (the number of overflow-free steps in a row so far). The gradients in the
# optimizer's parameters' `.grad` come from the scaled loss.
#
# 1. `inv = np.float32(1 / np.float64(scale))` (PyTorch computes the reciprocal in double, then stores it as a
#    float32);
# 2. `found_inf`: whether any gradient has an inf or a NaN (parameters whose `.grad` is None have none);
# 3. multiply every gradient by `inv`, in place, found or not;
# 4. `optimizer.step()` only if nothing was found;
# 5. the update: if found, `scale * backoff_factor` and the tracker back to 0; otherwise the tracker plus one,
#    and if that reaches `growth_interval`, `scale * growth_factor` (kept only if it is finite as a float32) and
#    the tracker back to 0;
# 6. return `(new_scale, new_tracker, stepped)`, the scale rounded to float32 (PyTorch keeps it in a float32
#    tensor) as a Python float, `stepped` a bool.
#
# Do not call `course_lib.amp.GradScaler`'s `step`, `unscale_`, `update` or its helper `_unscale_grads_`; the
# check compares with them.

# %% id="ex-09-4-solution" tags=["solution"] exercise="09.4"
import numpy as np

import course_lib as cl


def scaler_step(optimizer, scale, growth_tracker, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
    """Unscale the gradients, step unless one is inf/NaN, and update the scale. Returns (scale, tracker, stepped)."""
    ### BEGIN SOLUTION
    inv = np.float32(1.0 / np.float64(scale))
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    found_inf = any(not bool(cl.isfinite(g).all()) for g in grads)
    with cl.no_grad():
        for g in grads:
            g.mul_(float(inv))
    if not found_inf:
        optimizer.step()
    if found_inf:
        scale, growth_tracker = scale * backoff_factor, 0
    else:
        growth_tracker += 1
        if growth_tracker == growth_interval:
            with np.errstate(over="ignore"):             # a float32 overflow is expected: it gives inf
                grown = float(np.float32(scale * growth_factor))
            if np.isfinite(grown):
                scale = grown
            growth_tracker = 0
    return float(np.float32(scale)), growth_tracker, not found_inf
    ### END SOLUTION


# %% id="ex-09-4-check" tags=["check", "nbval-check-output"] exercise="09.4" points=2
check("09.4", scaler_step)

# %% [markdown] id="amp-measure-md"
# Now the measurement: one training step on a batch of 64 images in float32, under autocast with a GradScaler,
# and in float32 with chapter 03's **activation checkpointing** (`checkpoint_sequential` over four segments:
# only the segments' inputs are kept, and each segment's forward runs again during backward).
# `course_lib.memory.memory_allocated()` counts the bytes course_lib's tensors hold; read after the forward
# pass, minus what was there before, it is the memory the step keeps for backward.

# %% id="amp-measure" tags=["long"] grader_runs="print('`course grade` skips the measurement')"
def one_step(mode: str, batch: int = 64):
    cl.manual_seed(0)
    net = make_model()
    net.train()
    opt = cl.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    scaler = cl.amp.GradScaler("cpu", enabled=(mode == "autocast float16"))
    x, y = to_batch([test_set[i] for i in range(batch)])
    before = cl.memory.memory_allocated()
    start = time.perf_counter()
    if mode == "autocast float16":
        with cl.autocast("cpu", dtype=cl.float16):
            out = net(x)
    elif mode == "checkpointing":
        stages = nn.Sequential(nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool), net.layer1, net.layer2,
                               net.layer3, net.layer4, nn.Sequential(net.avgpool, nn.Flatten(), net.fc))
        out = checkpoint_sequential(stages, 4, x, use_reentrant=False)
    else:
        out = net(x)
    kept = cl.memory.memory_allocated() - before
    loss = F.cross_entropy(out.float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return kept, time.perf_counter() - start, scaler.get_scale()


print(f"{'one step, 64 images':24}{'kept for backward':>20}{'time':>10}{'scale':>10}")
for mode in ("float32", "autocast float16", "checkpointing"):
    kept, seconds, scale = one_step(mode)
    print(f"{mode:24}{kept / 2**20:>17.2f} MB{seconds:>9.2f}s{scale:>10.0f}")

# %% [markdown] id="amp-after"
# Autocast keeps about a quarter less (the convolutions save their inputs in float16, but BatchNorm, which
# runs in float32, keeps its own float32 input, and the float16 copies of the weights are kept for the step
# too), and checkpointing keeps less than a quarter of float32's. On a GPU autocast is also faster: its tensor
# cores multiply float16 many times faster than float32. Here it is much **slower**: numpy has no float16
# matrix product in BLAS and computes it with a generic loop. The saving in memory is real; the speed-up
# belongs to the GPU, not to numpy.

# %% [markdown] id="compile-md"
# ### A.9 · Compiled or not
#
# Chapter 08's `course_lib.compile` captures the training step's forward into a graph, and the `inductor`
# backend fuses its pointwise ops (BatchNorm, ReLU, the residual additions) into generated kernels. The table
# measures what that buys here: the time of the first step (capture and code generation), then the time of an
# epoch of 16,000 images and the test accuracy after two epochs, with the same seeds.

# %% id="compile-table" tags=["long"] grader_runs="print('`course grade` skips the measurement')"
def timed_run(compiled: bool, epochs: int = 2):
    steps = len(train_set) // BATCH
    net, opt, sched = make_run(steps, epochs)
    step_fn = cl.compile(net, backend="inductor") if compiled else net
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    first, epoch_times = None, []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        net.train()
        start = time.perf_counter()
        for x, y in tqdm(train_loader, desc=f"{'compiled' if compiled else 'eager'}, epoch {epoch + 1}",
                         leave=False):
            t = time.perf_counter()
            loss = loss_fn(step_fn(augment(x)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            first = time.perf_counter() - t if first is None else first
        epoch_times.append(time.perf_counter() - start)
    return first, epoch_times, epoch_fn(net, test_loader, loss_fn)[1]


print(f"{'':10}{'first step':>12}{'epoch 1':>10}{'epoch 2':>10}{'test accuracy':>15}")
for compiled in (False, True):
    first, epoch_times, acc = timed_run(compiled)
    print(f"{'compiled' if compiled else 'eager':10}{first:>11.1f}s" + "".join(f"{t:>9.1f}s" for t in epoch_times)
          + f"{acc:>15.4f}")

# %% [markdown] id="compile-after"
# The compiled model computes the same function (the same test accuracy), pays ten seconds or more once for
# capture and code generation, and is not faster per epoch: most of a step's time is in the convolutions'
# matrix products, which are the same BLAS calls compiled or not. Fusion pays where pointwise ops dominate,
# which in a convolutional network on a CPU they do not. (The epochs' times also move by several seconds from
# run to run on a shared machine.)

# %% [markdown] id="ship-md"
# ### A.10 · Ship it
#
# The trained weights are a `state_dict`, saved in PyTorch's file format (chapter 07). PyTorch can load them
# into a `torch.nn` ResNet with the same module names and shapes, and must then predict exactly what
# course_lib predicts. The cell below defines that ResNet in `torch.nn` (torchvision's `BasicBlock` structure,
# our widths), loads the file with `torch.load(weights_only=True)` and compares the predictions on the whole
# test set. Without PyTorch installed it says so and skips.

# %% id="ship-save"
WEIGHTS = os.path.join(tempfile.gettempdir(), "capstone_resnet_weights.pt")
cl.save(model.state_dict(), WEIGHTS)
print(f"saved {len(model.state_dict())} tensors, {os.path.getsize(WEIGHTS) / 1e6:.1f} MB, to {WEIGHTS}")

# %% id="ship-torch" grader_runs="print('`course grade` skips the PyTorch comparison')"
try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed: skipping the comparison (pip install torch==2.13.0 to run it)")

if torch is not None:
    from torch import nn as tnn

    class TorchBasicBlock(tnn.Module):
        def __init__(self, inplanes, planes, stride=1):
            super().__init__()
            self.conv1 = tnn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = tnn.BatchNorm2d(planes)
            self.relu = tnn.ReLU(inplace=True)
            self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = tnn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = tnn.Sequential(tnn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                 tnn.BatchNorm2d(planes))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class TorchResNet(tnn.Module):
        def __init__(self, widths=(16, 32, 64, 128), num_classes=10):
            super().__init__()
            self.conv1 = tnn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
            self.bn1 = tnn.BatchNorm2d(widths[0])
            self.relu = tnn.ReLU(inplace=True)
            self.maxpool = tnn.MaxPool2d(3, 2, 1)
            inplanes = widths[0]
            for i, planes in enumerate(widths):
                setattr(self, f"layer{i + 1}", tnn.Sequential(TorchBasicBlock(inplanes, planes, 1 if i == 0 else 2)))
                inplanes = planes
            self.avgpool = tnn.AdaptiveAvgPool2d(1)
            self.fc = tnn.Linear(widths[-1], num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    torch_model = TorchResNet()
    torch_model.load_state_dict(torch.load(WEIGHTS, weights_only=True))      # strict: every name must match
    torch_model.eval()
    with torch.no_grad():
        torch_logits = torch.cat([torch_model(torch.from_numpy(x.numpy())) for x, _ in test_loader])
    same = (torch_logits.argmax(1).numpy() == pred).mean()
    print(f"identical predictions on {same:.2%} of the {len(pred)} test images; largest logit difference "
          f"{np.abs(torch_logits.numpy() - logits.numpy()).max():.2e}")

# %% [markdown] id="part-a-after"
# ### What Part A measured
#
# A run of this notebook top to bottom on 2 CPU cores shared with other work (load average 3 to 4), one BLAS
# thread; every number but the times is the same on every run (everything is seeded):
#
# | | |
# |---|---|
# | data: 16,000 + 4,000 images made | 2 to 5 s |
# | training, 4 epochs of 125 steps (batch 128), with a test-set evaluation after each | 172 s (43 s per epoch) |
# | test accuracy after epochs 1 to 4 | 87.8%, 95.5%, 98.5%, **99.45%** |
# | fine-tuning on 100 images (5 shapes): frozen pretrained backbone + new head / from scratch | 99.8% / 25.9% |
# | one step, 64 images, kept for backward: float32 / autocast float16 / checkpointing | 4.9 MB / 3.7 MB / 1.1 MB |
# | the same step's time: float32 / autocast float16 / checkpointing | 0.2 s / 4.6 s / 0.2 s |
# | PyTorch with the shipped weights: identical predictions / largest logit difference | 4,000 of 4,000 / 4e-6 |
# | the whole of Part A | 9 minutes |
#
# Compiled or not (2 epochs, the same seeds), in two runs on the shared machine:
#
# | | first step | epoch 1 | epoch 2 | test accuracy |
# |---|---|---|---|---|
# | eager | 0.3 s / 0.7 s | 28 s / 54 s | 35 s / 53 s | 96.3% |
# | `cl.compile(model, backend="inductor")` | 12.6 s / 21.4 s | 47 s / 94 s | 36 s / 51 s | 96.3% |

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
import matplotlib.pyplot as plt

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
# The graph does the work: the MLP stays near chance (25%, one community in four; about 35% in a full run), the GCN
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
# into zeros, with `index` the targets repeated along the feature dimension, `target[:, None].expand(-1, F)`:
# a scatter op reduces only the positions its index covers, so an index of shape (E, 1) is accepted, without
# an error, and reduces column 0 alone. `include_self=False` matters twice: the
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
import matplotlib.pyplot as plt

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
import matplotlib.pyplot as plt

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
