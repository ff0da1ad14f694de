# ---
# jupyter:
#   course:
#     title: Welcome to PyTorch from the inside
# ---

# %% [markdown] id="intro"
# # 00 · Welcome to *PyTorch from the inside*
#
# Over the next eight chapters you will build a small PyTorch of your own, on top of numpy:
# tensors that share storage, views made of strides, automatic differentiation, `nn.Module`,
# normalization layers, a `DataLoader`, `save`/`load`, and a compiler in the manner of
# `torch.compile`. Each piece mirrors the real one closely
# enough that, at the end, you can open PyTorch's source and recognise what you see.
#
# **This chapter** shows how the course works, checks that your setup is ready, gives a tour of what
# you will build, and warms you up with three small exercises, so that the whole loop
# (fill in, check, grade) is familiar before the real work starts.
#
# *Prerequisites:* comfortable Python (functions, lists, recursion), a first look at numpy.
# *Expected time:* 30 minutes.

# %% [markdown] id="how-it-works"
# ## How the course works
#
# - **`notebooks/`** holds your notebooks, one per chapter. This is where you work. Each exercise has
#   a *solution cell* with `# YOUR CODE HERE` and `raise NotImplementedError()`: replace those two
#   lines with your code.
# - **`solutions/`** holds the same notebooks filled in. Try first; peek when stuck; nobody is
#   grading how often you look.
# - **`course_lib`** is the reference package: a complete, tested mini-PyTorch. Every chapter builds on
#   *it*, not on your answers to the previous chapter, so a bug you leave in chapter 2 never breaks
#   chapter 3. You rebuild one piece per chapter and compare your piece with the reference.
# - **Checks.** Under each solution cell sits a *check cell* such as `check("00.1", fizzbuzz)`. It runs
#   your code on a set of cases and prints one line when all pass, or tells you which case failed,
#   what was expected, what you returned, and a hint.
# - **The grader.** `course grade notebooks/00_welcome.ipynb` runs your whole saved notebook in a
#   fresh Python, with the check cells taken from `solutions/` (so editing a check cannot fool it),
#   and prints a scoreboard. More on that at the end.

# %% [markdown] id="env-check-md"
# ## Is your environment ready?
#
# Run the next cell (click it, then press <kbd>Shift</kbd>+<kbd>Enter</kbd>). It asks `course doctor`
# to look at your setup: the Python version, the packages and their versions, the kernel JupyterLab
# runs, the widget extension (without it the interactive figures show as text), write access, BLAS
# threads and the optional PyTorch. It should end with `All set.` Each line marked `FIX` is a problem,
# with what to do about it; `warn` lines are worth fixing but nothing breaks. In a terminal,
# `course doctor` prints the same; the README explains how to (re)create the environment with one
# command.

# %% id="env-check" grader_runs="import numpy as np; from course import check  # `course grade` skips the doctor"
import sys

assert sys.version_info >= (3, 10), f"this course needs Python 3.10 or newer, not {sys.version.split()[0]}"

import numpy as np

from course import check, doctor

doctor.run()

# %% [markdown] id="tour"
# ## A tour of what you will build
#
# | Chapter | You build | Read next to it in PyTorch |
# |---|---|---|
# | 01 Tensor and storage | a `Tensor` over one flat typed buffer; dtypes; the op registry | `c10/core/TensorImpl.h`, `c10/core/StorageImpl.h` |
# | 02 Strides and views | `view`, `transpose`, `expand`, slicing: new tensors, same storage | `aten/src/ATen/native/TensorShape.cpp` |
# | 03 Autograd | a graph of `Node`s, `backward()`, gradient checks | `torch/csrc/autograd/engine.cpp` |
# | 04 Modules | `nn.Module`, `Parameter`, `state_dict`, an optimizer | `torch/nn/modules/module.py` |
# | 05 Normalization | `BatchNorm` and `LayerNorm`, train vs eval | `torch/nn/modules/batchnorm.py` |
# | 06 Data loading | `Dataset`, samplers, `collate`, a multi-process `DataLoader` | `torch/utils/data/dataloader.py` |
# | 07 Serialization | `save`/`load` of tensors that share storage | `torch/serialization.py` |
# | 08 Compile | graph capture with breaks and guards, the backward's min-cut, fused kernels | `torch/_dynamo/`, `torch/_inductor/` |
# | 09 Capstone | a ResNet trained, resumed, fine-tuned, compiled and shipped; learning on graphs with scatter and gather | `torchvision/models/resnet.py`, `torch/amp/`, `aten/src/ATen/native/TensorAdvancedIndexing.cpp` |
#
# All of it hangs on one idea, which is PyTorch's own: **every operation takes the same path**. A call
# such as `x.add(y)` is looked up in an op registry and handed to a dispatcher, which tries a few
# *keys* in order: active modes (objects that see every op go by, such as a logging mode), then
# autograd (which records how to differentiate), then a backend that does the arithmetic (`cpu` runs
# numpy; `meta` only works out shapes). The picture below shows that path and which chapter builds
# each layer.

# %% id="tour-figure"
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

layers = [
    ("Tensor methods · course_lib.add · nn.functional", "01, 04", "#dbe9f6"),
    ("op registry: each op declared once", "01", "#c6dbef"),
    ("dispatcher · 1. modes (logging, your own, compile's capture)", "01, 08", "#fde0c5"),
    ("dispatcher · 2. Autograd (records a Node)", "03", "#fcc5a5"),
    ("dispatcher · 3. backend: cpu (numpy) | meta (shapes)", "01, 02", "#d9f0d3"),
]
fig, ax = plt.subplots(figsize=(7.5, 4.2))
for i, (label, chapters, colour) in enumerate(layers):
    y = len(layers) - 1 - i
    ax.add_patch(FancyBboxPatch((0.05, y + 0.12), 6.3, 0.72, boxstyle="round,pad=0.02",
                                facecolor=colour, edgecolor="#555555"))
    ax.text(0.25, y + 0.48, label, va="center", fontsize=10)
    ax.text(7.0, y + 0.48, "ch " + chapters, va="center", ha="center", fontsize=10, color="#333333")
    if i < len(layers) - 1:
        ax.annotate("", xy=(3.2, y + 0.1), xytext=(3.2, y - 0.12),
                    arrowprops=dict(arrowstyle="<-", color="#555555"))
ax.text(7.0, len(layers) + 0.05, "built in", ha="center", fontsize=10, style="italic")
ax.set_xlim(0, 7.6)
ax.set_ylim(-0.1, len(layers) + 0.4)
ax.axis("off")
ax.set_title("One path for every op: x.add(y) from top to bottom")
plt.show()


# %% [markdown] id="exercises-intro"
# ## How an exercise works
#
# Each exercise states a **contract** (what goes in, what must come out, which errors to raise) and a
# **hint**. Fill in the solution cell, run it, then run the check cell below it:
#
# - all cases pass → one line such as `✓ 00.1 fizzbuzz: 15/15 cases`;
# - a case fails → a short message: the case, what was expected, what you returned, and the hint;
# - you have not started → `not attempted yet`.
#
# Made a mess of an exercise? `course reset notebooks/00_welcome.ipynb 00.2` puts that one exercise
# back as it was handed out and leaves the rest of your notebook alone.

# %% [markdown] id="ex-00-1-task"
# ## Exercise 00.1 · fizzbuzz (1 point)
#
# A warm-up to try the loop. Write `fizzbuzz(n)` for an integer `n >= 1`:
#
# - return `"FizzBuzz"` if `n` is divisible by both 3 and 5,
# - `"Fizz"` if it is divisible by 3 only, `"Buzz"` if by 5 only,
# - otherwise the number as a string: `fizzbuzz(7) == "7"`.
#
# *Hint:* the order of the tests matters.

# %% id="ex-00-1-solution" tags=["solution"] exercise="00.1"
def fizzbuzz(n: int) -> str:
    """The fizzbuzz word for n (n >= 1)."""
    ### BEGIN SOLUTION
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)
    ### END SOLUTION


# %% id="ex-00-1-check" tags=["check", "nbval-check-output"] exercise="00.1" points=1
check("00.1", fizzbuzz)


# %% [markdown] id="ex-00-2-task"
# ## Exercise 00.2 · flatten: nested lists to data and shape (2 points)
#
# `torch.tensor([[1, 2, 3], [4, 5, 6]])` has to discover two things from the nested lists: the
# **shape** `(2, 3)` and the numbers in **row-major order** `[1, 2, 3, 4, 5, 6]`, which is how they
# are laid out in the tensor's flat storage. In chapter 01 your `tensor()` starts exactly like this.
#
# Write `flatten(data)` returning the pair `(flat, shape)`:
#
# - a number (int or float) is a 0-dimensional tensor: `flatten(7) == ([7], ())`;
# - a list's shape is its length followed by the shape its items share:
#   `flatten([[1], [2], [3]]) == ([1, 2, 3], (3, 1))`, and `flatten([]) == ([], (0,))`;
# - `flat` is a `list`, `shape` a `tuple` of ints;
# - items of different shapes (a *ragged* list such as `[[1, 2], [3]]`) raise `ValueError`,
#   as `torch.tensor` does.
#
# *Hint:* recursion. Flatten each item, check that all items came back with the same shape, then
# prepend the list's length.
#
# > **In PyTorch:** `torch/csrc/utils/tensor_new.cpp` does this in C++: `compute_sizes` walks the
# > nested sequences to find the shape and `recursive_store` copies the numbers into storage.

# %% id="ex-00-2-solution" tags=["solution"] exercise="00.2"
def flatten(data) -> tuple[list, tuple[int, ...]]:
    """(flat row-major list of numbers, shape) of nested lists `data`."""
    ### BEGIN SOLUTION
    if not isinstance(data, list):
        return [data], ()
    flat, inner = [], None
    for item in data:
        item_flat, item_shape = flatten(item)
        if inner is None:
            inner = item_shape
        elif item_shape != inner:
            raise ValueError(f"ragged nested list: an item of shape {item_shape} next to one of shape {inner}")
        flat.extend(item_flat)
    return flat, (len(data),) + (inner if inner is not None else ())
    ### END SOLUTION


# %% id="ex-00-2-check" tags=["check", "nbval-check-output"] exercise="00.2" points=2
check("00.2", flatten)


# %% [markdown] id="ex-00-3-task"
# ## Exercise 00.3 · flat_index: where does element `[i, j, k]` live? (2 points)
#
# Storage is one flat buffer, so every multi-index has to become one position. In **row-major**
# (C) order the last index moves fastest: in a tensor of shape `(3, 4)`, element `[1, 2]` lives at
# `1 * 4 + 2 == 6`. Each dimension has a **step**, the product of the sizes after it: for shape
# `(2, 3, 4)` the steps are `(12, 4, 1)`. Chapter 02 calls these steps *strides* and bends them to
# make views without copying.
#
# Write `flat_index(index, shape)` for tuples of the same length:
#
# - return the row-major position of `index` in a tensor of shape `shape`;
#   `flat_index((), ()) == 0` (a 0-d tensor has one element);
# - raise `IndexError` unless `0 <= index[d] < shape[d]` in every dimension `d`
#   (no negative indices here).
#
# *Hint:* walk the dimensions from last to first, multiplying up the step as you go.

# %% id="ex-00-3-solution" tags=["solution"] exercise="00.3"
def flat_index(index: tuple[int, ...], shape: tuple[int, ...]) -> int:
    """Row-major position of `index` in a tensor of shape `shape`."""
    ### BEGIN SOLUTION
    position, step = 0, 1
    for i, size in zip(reversed(index), reversed(shape)):
        if not 0 <= i < size:
            raise IndexError(f"index {i} is out of range for a dimension of size {size}")
        position += i * step
        step *= size
    return position
    ### END SOLUTION


# %% id="ex-00-3-check" tags=["check", "nbval-check-output"] exercise="00.3" points=2
check("00.3", flat_index)

# %% [markdown] id="measure-md"
# ## Measure: why course_lib never loops over elements in Python
#
# Your `flatten` and `flat_index` touch one element at a time in Python, which is fine for learning
# and far too slow for real work. The next cell sums a million numbers twice: with a Python loop, and
# with one numpy call that loops in C. Expect numpy to win by a factor of tens to hundreds (the
# exact numbers depend on your machine). That gap is why every `course_lib` kernel hands whole
# arrays to numpy.

# %% id="measure"
import timeit

values = list(range(1_000_000))
array = np.arange(1_000_000)
python_s = min(timeit.repeat(lambda: sum(v for v in values), number=1, repeat=3))
numpy_s = min(timeit.repeat(lambda: array.sum(), number=1, repeat=3))
print(f"Python loop: {python_s * 1e3:7.2f} ms")
print(f"numpy sum:   {numpy_s * 1e3:7.2f} ms   ({python_s / numpy_s:.0f}x faster)")

fig, ax = plt.subplots(figsize=(5, 1.6))
ax.barh(["numpy", "Python loop"], [numpy_s * 1e3, python_s * 1e3], color=["#2b8cbe", "#bdbdbd"])
ax.set_xlabel("milliseconds to sum 1,000,000 numbers")
plt.show()

# %% [markdown] id="grade-yourself"
# ## Grade yourself
#
# Save the notebook (<kbd>Ctrl</kbd>+<kbd>S</kbd>): the grader reads the saved file. Then, in a
# terminal at the top of the course folder:
#
# ```
# course grade notebooks/00_welcome.ipynb
# ```
#
# It runs your notebook from top to bottom in a fresh Python and prints one line per exercise:
#
# ```
# notebooks/00_welcome.ipynb  (chapter 00)
#   00.1 fizzbuzz    PASS           1/1
#   00.2 flatten     FAIL           0/2
#       ✗ 00.2 flatten: case 10/13 failed
#       ...
#   00.3 flat_index  NOT ATTEMPTED  0/2
#   total                           1/5
# ```
#
# - **PASS**: every case passed. **FAIL**: the message says which case and why.
# - **NOT ATTEMPTED**: the stub still raises `NotImplementedError`.
# - **TIMEOUT**: a cell ran longer than 30 seconds (an infinite loop?); it is skipped and the rest is
#   still graded. `--timeout 60` gives slow machines more time.
# - **ERROR**: the check could not run (for example a cell above it failed).
#
# The exit status is 0 only when everything passes; `--json` prints machine-readable results.
#
# ## Summary and what comes next
#
# You have met the loop you will use in every chapter: read, fill in, check, grade. You flattened
# nested lists into data and a shape, and turned a multi-index into a position in flat storage: the
# two facts a tensor is made of. In **chapter 01** you build the `Tensor` itself: a flat typed
# storage, a shape, a dtype, and the op registry every operation goes through.
