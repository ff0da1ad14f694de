# ---
# jupyter:
#   course:
#     title: Strides and views
# ---

# %% [markdown] id="intro"
# # 02 · Strides and views
#
# In chapter 01 a tensor became *metadata over a storage*: a shape, a stride per dimension and an offset into
# one flat buffer. This chapter makes that metadata do the work. Transposing, slicing, `unsqueeze`, `expand`,
# most `reshape`s and every basic `x[...]` produce a **view**: a new `(shape, stride, offset)` over the *same*
# storage, made in constant time whatever the size of the tensor, with no data copied.
#
# **What you will build** (each as a small function on plain tuples, checked against `course_lib`):
#
# - the contiguity test PyTorch uses (it has two surprises);
# - `transpose`, `permute`, `narrow`, `select` and `expand` as pure stride arithmetic;
# - `computeStride`, the rule that decides whether `view` succeeds or `reshape` has to copy;
# - broadcasting of shapes, with PyTorch's error message;
# - basic indexing (`x[1, ::2, None, ...]`) turned into one `(shape, stride, offset)`.
#
# **Why it matters.** Views are why `x.t()` is free and `x.t().contiguous()` is not; why writing into a slice
# changes the tensor it came from; why `view` sometimes refuses; and why a broadcast `(1000, 1000)` tensor
# can take 4 KB. Autograd (chapter 03) relies on views sharing one *version counter*.
#
# *Prerequisites:* chapter 01 (storage, strides, offset, contiguous strides), Python slicing.
# *Expected time:* 2 to 2½ hours.

# %% id="setup"
import timeit

import matplotlib.pyplot as plt

import course_lib as cl
from course import check
from course_lib.viz import draw_strides, stride_explorer


def geometry(t):
    # (shape, stride, offset): everything a view changes
    return tuple(t.shape), t.stride(), t.storage_offset()


# %% [markdown] id="strides-md"
# ## 1 · Strides, offsets and views
#
# Element $[i_0, i_1, \dots, i_{n-1}]$ of a strided tensor lives at
#
# $$\text{storage}\Big[\,\text{offset} + \sum_{d} i_d \cdot \text{stride}_d\,\Big].$$
#
# The stride of dimension $d$ is how many storage cells you skip to move one step along $d$. A freshly made
# `(3, 4)` tensor has strides `(4, 1)`: one step down a column skips a row of 4, one step along a row skips 1.
# Change the metadata and you read the same cells differently:
#
# | tensor | shape | stride | offset | reads |
# |---|---|---|---|---|
# | `x = arange(12.).view(3, 4)` | (3, 4) | (4, 1) | 0 | cells 0..11, row by row |
# | `x.t()` | (4, 3) | (1, 4) | 0 | the same cells, column by column |
# | `x[1]` | (4,) | (1,) | 4 | cells 4..7 |
# | `x[:, 2]` | (3,) | (4,) | 2 | cells 2, 6, 10 |
# | `x[:, ::2]` | (3, 2) | (4, 2) | 0 | every other column |
#
# All five share one storage. The next cell checks the table, and the figure after it shows where each element
# of `x[:, ::2]` reads: the bottom row is the storage, the grid above is the tensor, and each element has the
# colour (and an arrow to) the storage cell it reads. Grey cells are cells no element reads.

# %% id="strides-demo"
x = cl.arange(12.).view(3, 4)
for name, t in [("x", x), ("x.t()", x.t()), ("x[1]", x[1]), ("x[:, 2]", x[:, 2]), ("x[:, ::2]", x[:, ::2])]:
    shape, stride, offset = geometry(t)
    same = t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    print(f"{name:10} shape={str(shape):8} stride={str(stride):8} offset={offset}  same storage: {same}")

i, j = 2, 1
shape, stride, offset = geometry(x[:, ::2])
print(f"x[:, ::2][{i}, {j}] = {x[:, ::2][i, j].item()} = storage[{offset} + {i}*{stride[0]} + {j}*{stride[1]}]")

# %% id="strides-figure"
draw_strides(x[:, ::2])

# %% [markdown] id="explorer-md"
# **The stride explorer.** Run the next cell for an interactive version of that figure: type a shape and
# strides, slide the offset and the storage size, or pick a preset (transpose, a column, the diagonal, a
# broadcast row, sliding windows, ...). Things to try:
#
# - strides `0, 1` on shape `3, 4`: every row reads the same four cells. That is how `expand` broadcasts
#   without copying (section 6).
# - shape `6, 3` with strides `1, 1`: overlapping rows, the sliding windows of `unfold`. Elements share cells.
# - a large offset: cells past the end of the storage turn red; `as_strided` would refuse this geometry.
#
# The explorer needs a running kernel; without one (on GitHub, in the grader) the static figures in this
# notebook show the same thing. `draw_strides` accepts a tensor or a geometry `(shape, stride, offset)`.

# %% id="explorer"
stride_explorer(shape=(3, 4), stride=(1, 3), offset=0, storage_size=12)

# %% id="gallery"
fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
draw_strides(((3,), (5,), 0), storage_size=12, ax=axes[0], title="x.diagonal(): stride 4 + 1")
draw_strides(((3, 4), (0, 1), 0), storage_size=12, ax=axes[1], title="x[0].expand(3, 4): stride 0")
draw_strides(cl.arange(8.).unfold(0, 3, 1), ax=axes[2], title="arange(8.).unfold(0, 3, 1): windows")
plt.show()

# %% [markdown] id="strides-pytorch"
# > **In PyTorch:** the metadata lives in `c10/core/TensorImpl.h` (`sizes_and_strides_`, `storage_offset_`),
# > and the view ops are in `aten/src/ATen/native/TensorShape.cpp`. Each one computes new sizes and strides and
# > makes a tensor that shares the input's storage (`as_strided`, or `alias_with_sizes_and_strides` for
# > `view`). In course_lib, `course_lib/_ops/views.py` does the same with plain tuples: compare
# > `transpose`, `select` and `narrow` there with the exercises below.

# %% [markdown] id="ex-02-1-task"
# ## 2 · Which ops copy?
#
# Some ops only make new metadata; others must allocate new storage and copy the values. Take
# `t = arange(24.).reshape(2, 3, 4)` and, **before running anything**, guess for each expression whether its
# result **copies** (gets new storage) or shares `t`'s storage:
#
# | expression | copies? (your guess) |
# |---|---|
# | `t.view(4, 6)` | |
# | `t.reshape(6, 4)` | |
# | `t.transpose(0, 1).reshape(6, 4)` | |
# | `t[:, :2].reshape(2, 8)` | |
# | `t[:, :2].reshape(16)` | |
# | `t.unsqueeze(0)` | |
# | `t.squeeze()` | |
# | `t[:, :1].expand(2, 5, 4)` | |
# | `t[:1].expand_as(t)` | |
# | `t.transpose(0, 2)` | |
# | `t.permute(2, 0, 1)` | |
# | `t.contiguous()` | |
# | `t.transpose(0, 1).contiguous()` | |
# | `t.clone()` | |
# | `t.detach()` | |
#
# **How to verify.** Two tensors share storage when `a.untyped_storage().data_ptr()` is the same number for
# both (the address of the storage's first byte). `a.data_ptr()` is not the test: it is the address of `a`'s
# *first element*, storage address plus `offset * element_size()`, so `t[1].data_ptr()` differs from
# `t.data_ptr()` although they share storage. Views also remember where they came from: `v._is_view()` is
# true and `v._base` is the tensor that owns the storage.
#
# ## Exercise 02.1 · predict_copies (1 point)
#
# Write your guesses into `predict_copies()`: return a dict mapping each string of `EXPRESSIONS` to `True`
# if that expression copies, `False` if it shares `t`'s storage. Then run the verification cell below it,
# which evaluates every expression and compares storage addresses, and only then the check.
#
# *Hint:* an op can return a view only if its result can be written as `(shape, stride, offset)` over the
# same cells. When it cannot, something has to copy.

# %% id="ex-02-1-solution" tags=["solution"] exercise="02.1"
EXPRESSIONS = [
    "t.view(4, 6)",
    "t.reshape(6, 4)",
    "t.transpose(0, 1).reshape(6, 4)",
    "t[:, :2].reshape(2, 8)",
    "t[:, :2].reshape(16)",
    "t.unsqueeze(0)",
    "t.squeeze()",
    "t[:, :1].expand(2, 5, 4)",
    "t[:1].expand_as(t)",
    "t.transpose(0, 2)",
    "t.permute(2, 0, 1)",
    "t.contiguous()",
    "t.transpose(0, 1).contiguous()",
    "t.clone()",
    "t.detach()",
]


def predict_copies() -> dict[str, bool]:
    """Your guess for each expression of EXPRESSIONS: True if it copies, False if it shares t's storage."""
    ### BEGIN SOLUTION
    copies = {
        "t.transpose(0, 1).reshape(6, 4)",   # rows of the transpose are not evenly spaced in storage
        "t[:, :2].reshape(16)",              # the two kept rows of each block are not next to the next block
        "t.transpose(0, 1).contiguous()",    # not contiguous, so contiguous() has to copy
        "t.clone()",                         # always a copy
    }
    return {expression: expression in copies for expression in EXPRESSIONS}
    ### END SOLUTION


# %% id="copies-verify"
t = cl.arange(24.).reshape(2, 3, 4)
try:
    guesses = predict_copies()
except NotImplementedError:
    guesses = {}


def shares_storage(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


print(f"{'expression':33} {'copies':7} {'_is_view()':11} {'is t':6} {'your guess'}")
for expression in EXPRESSIONS:
    r = eval(expression)
    copies = not shares_storage(r, t)
    guess = guesses.get(expression)
    verdict = "" if guess is None else ("right" if guess == copies else "WRONG")
    print(f"{expression:33} {str(copies):7} {str(r._is_view()):11} {str(r is t):6} {str(guess):6} {verdict}")

# %% id="ex-02-1-check" tags=["check", "nbval-check-output"] exercise="02.1" points=1
check("02.1", predict_copies)

# %% [markdown] id="copies-discussion"
# What the table shows:
#
# - **`view`, `unsqueeze`, `squeeze`, `expand`, `expand_as`, `transpose`, `permute`** never copy. They fail
#   (with an error) rather than copy: `view` when the strides do not allow the new shape (section 5), `expand`
#   when a dimension is not of size 1.
# - **`reshape` copies only when it must.** It is not "copies when the input is not contiguous": `t[:, :2]`
#   is not contiguous, yet `reshape(2, 8)` is a view of it, while `reshape(16)` copies. Section 5 gives the
#   exact rule.
# - **`contiguous()` returns `t` itself** when `t` is already contiguous (`is t` is `True`): no copy, and not
#   even a new tensor.
# - **`detach()`** shares the storage but is not a view in the `_is_view()` sense: it is a new tensor
#   *without autograd history* over the same data (chapter 03).
# - **`clone()`** always copies.
#
# > **In PyTorch:** `reshape` (in `aten/src/ATen/native/TensorShape.cpp`) asks `computeStride` for strides; if
# > there are some it returns a view, otherwise it clones and views the copy. `contiguous()`
# > (`aten/src/ATen/native/TensorProperties.cpp`) is `self` if `self.is_contiguous()`, else a `clone`.

# %% [markdown] id="contiguity-md"
# ## 3 · Contiguity
#
# A tensor is **contiguous** when reading its elements in row-major order (last index fastest) visits
# consecutive storage cells. For shape `(2, 3, 4)` that means strides `(12, 4, 1)`, the strides of chapter
# 01's exercise. PyTorch's test, though, does not compare with those strides; it walks the dimensions from
# the last to the first, keeping the stride the next dimension must have:
#
# 1. a tensor with **no elements** is contiguous, whatever its strides;
# 2. a dimension of **size 1 is skipped**: you never step along it, so its stride does not matter;
# 3. every other dimension must have stride equal to the product of the sizes after it.
#
# So `empty(1, 5).t()`, of shape `(5, 1)` and strides `(1, 5)`, *is* contiguous, although row-major strides
# would be `(1, 1)`; an expanded tensor (stride 0) is not; a column slice `x[:, :1]` of a wider tensor is not.

# %% id="contiguity-demo"
examples = {
    "arange(24.).view(2, 3, 4)": cl.arange(24.).view(2, 3, 4),
    "empty(1, 5).t()": cl.empty(1, 5).t(),
    "empty(2, 3)[:, :1]": cl.empty(2, 3)[:, :1],
    "zeros(3).expand(2, 3)": cl.zeros(3).expand(2, 3),
    "empty(2, 0, 3).transpose(0, 2)": cl.empty(2, 0, 3).transpose(0, 2),
    "zeros(12).as_strided((3, 1, 4), (4, 999, 1))": cl.zeros(12).as_strided((3, 1, 4), (4, 999, 1)),
}
for name, t in examples.items():
    print(f"{name:46} shape={str(tuple(t.shape)):10} stride={str(t.stride()):12} contiguous={t.is_contiguous()}")


# %% [markdown] id="ex-02-2-task"
# ## Exercise 02.2 · is_contiguous (1 point)
#
# Write `is_contiguous(shape, stride)` for tuples of the same length, returning a Python `bool` by PyTorch's
# rule above: `True` if any size is 0; otherwise skip size-1 dimensions and require every other stride to
# equal the product of the sizes after it. A 0-d tensor (`shape == ()`) is contiguous.
#
# Work it out from the numbers: do not call `Tensor.is_contiguous` (it is what you are rebuilding) or
# `Tensor.as_strided` (it would let a tensor judge the layout for you).
#
# *Hint:* `expected = 1`; walk `zip(reversed(shape), reversed(stride))`; after checking a dimension,
# `expected *= size`.
#
# > **In PyTorch:** `c10/core/Contiguity.h` (`_compute_contiguous`) is this loop. `TensorImpl` caches the
# > answer in a flag that it refreshes whenever sizes or strides change, so `is_contiguous()` costs nothing.

# %% id="ex-02-2-solution" tags=["solution"] exercise="02.2"
def is_contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    """PyTorch's contiguity rule for a tensor of this shape and stride."""
    ### BEGIN SOLUTION
    if 0 in shape:
        return True
    expected = 1
    for size, st in zip(reversed(shape), reversed(stride)):
        if size == 1:
            continue
        if st != expected:
            return False
        expected *= size
    return True
    ### END SOLUTION


# %% id="ex-02-2-check" tags=["check", "nbval-check-output"] exercise="02.2" points=1
check("02.2", is_contiguous)

# %% [markdown] id="as-strided-md"
# ## 4 · Every view is an `as_strided`
#
# `x.as_strided(shape, stride, offset)` is the most general view: any geometry over `x`'s storage (checked to
# stay inside it). Every other view op is a rule for computing that geometry from the input's. For example,
# `transpose` swaps two sizes and the same two strides:

# %% id="as-strided-demo"
x = cl.arange(24.).view(2, 3, 4)
y = x.transpose(0, 2)
z = x.as_strided((4, 3, 2), (1, 4, 12), 0)      # the geometry worked out by hand
print(geometry(y), geometry(z))
print("same values:", (y == z).all().item(),
      "  same storage:", y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())

# %% [markdown] id="wrap-dim-md"
# In the next four exercises you write such rules as functions from a geometry to a geometry: they take
# `shape` (tuple), `stride` (tuple) and `offset` (int) plus the op's arguments, and return the view's
# `(shape, stride, offset)` as `(tuple, tuple, int)`. They follow PyTorch exactly, errors included.
#
# **Negative dims.** Like PyTorch, they accept `dim = -1` for the last dimension. `wrap_dim(dim, ndim)` from
# `course_lib._ops.common` turns a dim into `0..ndim-1` and raises PyTorch's `IndexError` when it is out of
# range. A 0-d tensor accepts dims `0` and `-1`, as if it had one dimension:

# %% id="wrap-dim-demo"
from course_lib._ops.common import wrap_dim

print(wrap_dim(-1, 3), wrap_dim(2, 3), wrap_dim(0, 0), wrap_dim(-1, 0))
try:
    wrap_dim(3, 3)
except IndexError as e:
    print("IndexError:", e)

# %% [markdown] id="ex-02-3-task"
# ## Exercise 02.3 · transpose_geometry (1 point)
#
# `transpose_geometry(shape, stride, offset, dim0, dim1)` returns the geometry of `t.transpose(dim0, dim1)`:
#
# - wrap both dims with `wrap_dim(dim, len(shape))` (it raises `IndexError` for a bad dim);
# - swap the two sizes and the two strides; the offset does not change;
# - a 0-d tensor transposes to itself (`((), (), offset)`).
#
# Work it out from the numbers: do not call `Tensor.transpose` or `Tensor.as_strided` (the first is what
# you are rebuilding, the second would let a tensor do the arithmetic for you).
#
# *Hint:* tuples are immutable: work on lists, return tuples.

# %% id="ex-02-3-solution" tags=["solution"] exercise="02.3"
from course_lib._ops.common import wrap_dim


def transpose_geometry(shape: tuple, stride: tuple, offset: int, dim0: int, dim1: int) -> tuple:
    """(shape, stride, offset) of t.transpose(dim0, dim1)."""
    ### BEGIN SOLUTION
    a, b = wrap_dim(dim0, len(shape)), wrap_dim(dim1, len(shape))
    if not shape:
        return (), (), offset
    shape, stride = list(shape), list(stride)
    shape[a], shape[b] = shape[b], shape[a]
    stride[a], stride[b] = stride[b], stride[a]
    return tuple(shape), tuple(stride), offset
    ### END SOLUTION


# %% id="ex-02-3-check" tags=["check", "nbval-check-output"] exercise="02.3" points=1
check("02.3", transpose_geometry)

# %% [markdown] id="ex-02-4-task"
# ## Exercise 02.4 · permute_geometry (1 point)
#
# `permute_geometry(shape, stride, offset, dims)` returns the geometry of `t.permute(dims)`: new dimension
# `i` is old dimension `dims[i]`, with its size and its stride.
#
# - `RuntimeError` if `len(dims) != len(shape)`, or if a dim appears twice (after wrapping);
# - `IndexError` for a dim out of range (`wrap_dim` raises it);
# - the offset does not change.
#
# Work it out from the numbers: do not call `Tensor.permute` or `Tensor.as_strided` (the first is what you
# are rebuilding, the second would let a tensor do the arithmetic for you).
#
# *Hint:* `tuple(shape[d] for d in dims)` after wrapping each `d`.

# %% id="ex-02-4-solution" tags=["solution"] exercise="02.4"
from course_lib._ops.common import wrap_dim


def permute_geometry(shape: tuple, stride: tuple, offset: int, dims: tuple) -> tuple:
    """(shape, stride, offset) of t.permute(dims)."""
    ### BEGIN SOLUTION
    if len(dims) != len(shape):
        raise RuntimeError(f"permute: {len(dims)} dims given for a tensor of {len(shape)} dimensions")
    dims = [wrap_dim(d, len(shape)) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return tuple(shape[d] for d in dims), tuple(stride[d] for d in dims), offset
    ### END SOLUTION


# %% id="ex-02-4-check" tags=["check", "nbval-check-output"] exercise="02.4" points=1
check("02.4", permute_geometry)

# %% [markdown] id="ex-02-5-task"
# ## Exercise 02.5 · narrow_geometry (1 point)
#
# `t.narrow(dim, start, length)` keeps `length` elements of dimension `dim` from index `start`: the same as
# `t[..., start:start + length, ...]` on that dimension. Write `narrow_geometry(shape, stride, offset, dim,
# start, length)`:
#
# - `RuntimeError` for a 0-d tensor; wrap `dim` with `wrap_dim`;
# - `start` may be negative: it must lie in `[-size, size]` (else `IndexError`), and a negative one counts
#   from the end (`start += size`);
# - `RuntimeError` if `length < 0` or `start + length > size`;
# - the size of `dim` becomes `length` and the offset moves by `start * stride[dim]`, **even when `length`
#   is 0** (PyTorch does; any offset is fine for an empty tensor, but the checks want PyTorch's).
#
# Work it out from the numbers: do not call `Tensor.narrow` or `Tensor.as_strided` (the first is what you
# are rebuilding, the second would let a tensor do the arithmetic for you).
#
# *Hint:* only two numbers change: one size and the offset.

# %% id="ex-02-5-solution" tags=["solution"] exercise="02.5"
from course_lib._ops.common import wrap_dim


def narrow_geometry(shape: tuple, stride: tuple, offset: int, dim: int, start: int, length: int) -> tuple:
    """(shape, stride, offset) of t.narrow(dim, start, length)."""
    ### BEGIN SOLUTION
    if not shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    size = shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return shape[:d] + (length,) + shape[d + 1:], tuple(stride), offset + start * stride[d]
    ### END SOLUTION


# %% id="ex-02-5-check" tags=["check", "nbval-check-output"] exercise="02.5" points=1
check("02.5", narrow_geometry)

# %% [markdown] id="ex-02-6-task"
# ## Exercise 02.6 · select_geometry (1 point)
#
# `t.select(dim, index)` (what `t[index]` does on dimension 0) fixes one index: that dimension disappears and
# the offset moves to the chosen slice. Write `select_geometry(shape, stride, offset, dim, index)`:
#
# - `IndexError` for a 0-d tensor, for a bad `dim` (`wrap_dim`), and for `index` outside `[-size, size)`;
# - a negative `index` counts from the end;
# - drop dimension `dim` from shape and stride; add `index * stride[dim]` to the offset.
#
# Work it out from the numbers: do not call `Tensor.select` or `Tensor.as_strided` (the first is what you
# are rebuilding, the second would let a tensor do the arithmetic for you).
#
# *Hint:* `shape[:d] + shape[d + 1:]` drops one dimension of a tuple.

# %% id="ex-02-6-solution" tags=["solution"] exercise="02.6"
from course_lib._ops.common import wrap_dim


def select_geometry(shape: tuple, stride: tuple, offset: int, dim: int, index: int) -> tuple:
    """(shape, stride, offset) of t.select(dim, index)."""
    ### BEGIN SOLUTION
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    size = shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(shape)} at dimension {d}")
    if index < 0:
        index += size
    return shape[:d] + shape[d + 1:], stride[:d] + stride[d + 1:], offset + index * stride[d]
    ### END SOLUTION


# %% id="ex-02-6-check" tags=["check", "nbval-check-output"] exercise="02.6" points=1
check("02.6", select_geometry)

# %% [markdown] id="select-narrow-md"
# `select` and `narrow` side by side: `x[1]` moves the offset by one row stride and drops a dimension;
# `x.narrow(1, 1, 2)` keeps both dimensions and moves the offset by one column.

# %% id="select-narrow-figure"
x = cl.arange(12.).view(3, 4)
fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
draw_strides(x.select(0, 1), ax=axes[0], title="x.select(0, 1): shape (4,), offset 4")
draw_strides(x.narrow(1, 1, 2), ax=axes[1], title="x.narrow(1, 1, 2): shape (3, 2), offset 1")
plt.show()

# %% [markdown] id="view-md"
# ## 5 · When `view` fails and `reshape` copies
#
# `view(new_shape)` must give every element of the result the storage cell it would have if you read the
# input in row-major order and poured the values into the new shape. For a contiguous input that is easy: use
# contiguous strides. For other inputs it may still be possible, and `view` succeeds exactly when it is:

# %% id="view-demo"
m = cl.arange(6.).view(2, 3)
try:
    m.t().view(6)
except RuntimeError as e:
    print("m.t().view(6):", e)

flat = m.t().reshape(6)                      # reshape copies instead
print("m.t().reshape(6) shares m's storage:", flat.untyped_storage().data_ptr() == m.untyped_storage().data_ptr())

every_other_row = cl.zeros(4, 6)[::2]        # shape (2, 6), strides (12, 1): not contiguous
print("[::2].view(2, 3, 2):", geometry(every_other_row.view(2, 3, 2)))
try:
    every_other_row.view(12)
except RuntimeError:
    print("[::2].view(12): RuntimeError")


# %% [markdown] id="ex-02-7-task"
# **The rule.** Group the input's dimensions into **chunks**: runs of neighbouring dimensions that are laid
# out contiguously *relative to each other*, i.e. `stride[d-1] == size[d] * stride[d]` (size-1 dimensions never
# break a chunk). Inside a chunk the elements are evenly spaced, so the chunk can be split or merged into new
# dimensions at will; across a chunk boundary they are not, so no new dimension may span two chunks.
#
# `zeros(4, 6)[::2]` has shape `(2, 6)` and strides `(12, 1)`: `12 != 6 * 1`, so it is two chunks, `(2,)` and
# `(6,)`. `(2, 3, 2)` splits the second chunk into `3 * 2`: a view, strides `(12, 2, 1)`. `(12,)` would merge
# both chunks: impossible, `view` raises and `reshape` copies.
#
# ## Exercise 02.7 · compute_stride (3 points)
#
# Write `compute_stride(oldshape, oldstride, newshape)`, PyTorch's `computeStride`: the strides that view a
# tensor of `(oldshape, oldstride)` as `newshape` (which has the same number of elements), or `None` if there
# are none. In order:
#
# 1. `oldshape == ()` (0-d): every new stride is 1: `(1,) * len(newshape)`.
# 2. No elements: if `newshape == oldshape` return `oldstride`; otherwise the contiguous strides of
#    `newshape`, counting a size 0 as 1 (`stride[i] = prod(max(newshape[j], 1) for j > i)`).
# 3. Otherwise walk the old dimensions from last to first, multiplying their sizes into `tensor_numel` and
#    starting with `chunk_base_stride = oldstride[-1]`. Old dimension `d` ends a chunk when `d == 0`, or when
#    `oldshape[d-1] != 1` and `oldstride[d-1] != tensor_numel * chunk_base_stride`. At each chunk end:
#    - take new dimensions from the right (`view_d`, starting at the last) while `view_numel < tensor_numel`
#      or the new size is 1: each gets stride `view_numel * chunk_base_stride`, then
#      `view_numel *= newshape[view_d]`;
#    - if `view_numel != tensor_numel`, return `None` (a new dimension would span two chunks);
#    - if `d > 0`, start the next chunk: `chunk_base_stride = oldstride[d-1]`, `tensor_numel = view_numel = 1`.
# 4. If some new dimensions were never assigned, return `None`; else the strides as a tuple.
#
# Work it out from the numbers: do not call course_lib's own `compute_stride` (in `course_lib._ops.views`),
# `Tensor.view` or `Tensor.as_strided` (the first is what you are rebuilding, the other two would let a
# tensor find the strides for you).
#
# *Hint:* this is a direct transcription; the names above are PyTorch's. Try it by hand on `(2, 6)/(12, 1)`
# viewed as `(2, 3, 2)` first.
#
# > **In PyTorch:** `aten/src/ATen/TensorUtils.cpp`, `computeStride`, with a long comment explaining the
# > chunks. `view` (`aten/src/ATen/native/TensorShape.cpp`) raises the error above when it returns nothing;
# > `reshape` copies instead. course_lib's version is `compute_stride` in `course_lib/_ops/views.py`.

# %% id="ex-02-7-solution" tags=["solution"] exercise="02.7"
def compute_stride(oldshape: tuple, oldstride: tuple, newshape: tuple) -> tuple | None:
    """Strides viewing a tensor of (oldshape, oldstride) as newshape, or None if no view can."""
    ### BEGIN SOLUTION
    if len(oldshape) == 0:
        return (1,) * len(newshape)
    numel = 1
    for size in oldshape:
        numel *= size
    if numel == 0:
        if tuple(oldshape) == tuple(newshape):
            return tuple(oldstride)
        strides, step = [], 1
        for size in reversed(newshape):
            strides.append(step)
            step *= max(size, 1)
        return tuple(reversed(strides))

    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[d]
        chunk_ends = d == 0 or (oldshape[d - 1] != 1 and oldstride[d - 1] != tensor_numel * chunk_base_stride)
        if chunk_ends:
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base_stride = oldstride[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)
    ### END SOLUTION


# %% id="ex-02-7-check" tags=["check", "nbval-check-output"] exercise="02.7" points=3
check("02.7", compute_stride)

# %% [markdown] id="broadcast-md"
# ## 6 · Broadcasting is stride 0
#
# `a + b` with `a` of shape `(3, 1)` and `b` of shape `(4,)` gives a `(3, 4)` result: both operands are
# *broadcast* to `(3, 4)` first. Broadcasting copies nothing. `expand` gives a dimension of size 1 (or a new
# leading dimension) stride **0**, so stepping along it stays on the same cells:

# %% id="broadcast-demo"
row = cl.arange(4.)
big = row.expand(1000, 4)
print("shape", tuple(big.shape), "stride", big.stride(), " storage bytes:", big.untyped_storage().nbytes())
print("contiguous:", big.is_contiguous(), "  a copy would take", big.numel() * big.element_size(), "bytes")

a = cl.arange(3.).view(3, 1)
print("(3, 1) expanded to (3, 4):", geometry(a.expand(3, 4)))
print(a + row)

# %% id="broadcast-figure"
draw_strides(cl.arange(3.).view(3, 1).expand(3, 4), title="arange(3.).view(3, 1).expand(3, 4): stride (1, 0)")


# %% [markdown] id="ex-02-8-task"
# ## Exercise 02.8 · expand_geometry (2 points)
#
# Write `expand_geometry(shape, stride, offset, size)`, the geometry of `t.expand(size)` (PyTorch's
# `inferExpandGeometry`):
#
# - `RuntimeError` if `len(size) < len(shape)`;
# - a 0-d tensor expands to `size` with every stride 0;
# - otherwise align `size` with `shape` on the right and go from the last dimension to the first:
#   - an **existing** dimension: a target of `-1` means "keep the size". If the target equals the current
#     size, keep the stride; else, if the current size is 1, take the target size with stride 0; else
#     `RuntimeError`;
#   - a **new** leading dimension: `RuntimeError` for a negative target (`-1` cannot be kept: there is nothing
#     to keep). Its stride is 0, except for a target of 1, which gets `size * stride` of the dimension just to
#     its right in the result (as `unsqueeze` would give it);
# - the offset does not change.
#
# Work it out from the numbers: do not call `Tensor.expand` or `Tensor.as_strided` (the first is what you
# are rebuilding, the second would let a tensor do the arithmetic for you).
#
# *Hint:* fill the result from the right, so the dimension to the right of a new one is already done.
#
# > **In PyTorch:** `inferExpandGeometry` in `aten/src/ATen/ExpandUtils.cpp` (declared in
# > `aten/src/ATen/ExpandUtils.h`); `expand` in `aten/src/ATen/native/TensorShape.cpp` calls it and makes the
# > view with `as_strided`. Writing into an expanded tensor in place would write one cell many times, so PyTorch
# > refuses it: `unsupported operation: more than one element of the written-to tensor refers to a single memory
# > location. Please clone() the tensor before performing the operation.` course_lib does not check this yet.

# %% id="ex-02-8-solution" tags=["solution"] exercise="02.8"
def expand_geometry(shape: tuple, stride: tuple, offset: int, size: tuple) -> tuple:
    """(shape, stride, offset) of t.expand(size)."""
    ### BEGIN SOLUTION
    size = tuple(size)
    if len(size) < len(shape):
        raise RuntimeError(f"expand: the number of sizes provided ({len(size)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    if not shape:
        return size, (0,) * len(size), offset
    new_shape, new_stride = list(size), [0] * len(size)
    for i in range(len(size) - 1, -1, -1):
        j = i - (len(size) - len(shape))          # the matching old dimension, if any
        target = size[i]
        if j >= 0:
            if target == -1:
                target = shape[j]
            if target == shape[j]:
                st = stride[j]
            elif shape[j] == 1:
                st = 0
            else:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target}) must match the existing size ({shape[j]}) at "
                    f"non-singleton dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: {list(shape)}")
        else:
            if target < 0:
                raise RuntimeError(f"The expanded size of the tensor ({target}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            st = new_shape[i + 1] * new_stride[i + 1] if i + 1 < len(size) else 1
            if target != 1:
                st = 0
        new_shape[i], new_stride[i] = target, st
    return tuple(new_shape), tuple(new_stride), offset
    ### END SOLUTION


# %% id="ex-02-8-check" tags=["check", "nbval-check-output"] exercise="02.8" points=2
check("02.8", expand_geometry)


# %% [markdown] id="ex-02-9-task"
# ## Exercise 02.9 · broadcast_shapes (2 points)
#
# Before an op like `add` can expand its operands it needs the shape they broadcast to. Two shapes are
# aligned on the right (missing leading sizes count as 1); in each position the sizes must be equal or one of
# them 1, and the result takes the other. With more than two shapes PyTorch folds from left to right, one
# pair at a time.
#
# Write `broadcast_shapes(*shapes)` returning a tuple (`()` when no shapes are given). When two sizes clash,
# raise `RuntimeError` with PyTorch's message, exactly:
#
# ```
# The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1
# ```
#
# where `a` is the result so far, `b` the next shape, and the dimension is counted in the result of that pair
# (from 0 on the left). So `broadcast_shapes((3,), (4,), (2, 1, 1))` fails at dimension 0, on the first pair.
# When a pair clashes in several positions, report the **right-most** one: PyTorch compares the sizes from
# the right and stops at the first clash, so `broadcast_shapes((2, 3), (3, 2))` reports sizes 3 and 2 at
# dimension 1, not 2 and 3 at dimension 0.
#
# Work it out from the numbers: do not call `cl.broadcast_shapes` (it is what you are rebuilding).
#
# *Hint:* write `pair(a, b)` for two shapes, then `result = ()` and `result = pair(result, shape)` in a loop.
#
# > **In PyTorch:** `infer_size` in `aten/src/ATen/ExpandUtils.cpp` (`aten/src/ATen/ExpandUtils.h`) raises this
# > message; every broadcasting op reaches it (through `TensorIterator`, which folds over the operands the same
# > way). `torch.broadcast_shapes` itself is written in Python (`torch/functional.py`, `torch/_refs`) and
# > words its error differently; `course_lib.broadcast_shapes` uses the ops' message.

# %% id="ex-02-9-solution" tags=["solution"] exercise="02.9"
def broadcast_shapes(*shapes: tuple) -> tuple:
    """The shape all of `shapes` broadcast to, or PyTorch's RuntimeError."""
    ### BEGIN SOLUTION
    result = ()
    for shape in shapes:
        ndim = max(len(result), len(shape))
        a = (1,) * (ndim - len(result)) + tuple(result)
        b = (1,) * (ndim - len(shape)) + tuple(shape)
        out = [0] * ndim
        for d in range(ndim - 1, -1, -1):  # right to left: PyTorch reports the right-most clash
            m, n = a[d], b[d]
            if m != n and m != 1 and n != 1:
                raise RuntimeError(f"The size of tensor a ({m}) must match the size of tensor b ({n}) "
                                   f"at non-singleton dimension {d}")
            out[d] = n if m == 1 else m
        result = tuple(out)
    return result
    ### END SOLUTION


# %% id="ex-02-9-check" tags=["check", "nbval-check-output"] exercise="02.9" points=2
check("02.9", broadcast_shapes)

# %% [markdown] id="indexing-md"
# ## 7 · Basic indexing is a chain of views
#
# `x[1, ::2, None, ...]` looks like one operation, but it is a sequence of the views you just wrote, applied
# item by item with a running dimension `d`:
#
# | item | op | `d` afterwards |
# |---|---|---|
# | an int `i` | `select(d, i)`: the dimension disappears | unchanged |
# | a slice `start:stop:step` | `slice(d, start, stop, step)`: like `narrow` with a step, stride times `step` | `d + 1` |
# | `None` | `unsqueeze(d)`: a new dimension of size 1 | `d + 1` |
# | `...` | nothing: it skips the dimensions no other item uses | `d +` those |
#
# A tensor or list in the index (`x[[0, 2]]`, `x[mask]`) is *advanced* indexing: it gathers arbitrary
# elements, which no `(shape, stride, offset)` can describe, so the result is a **copy**.

# %% id="indexing-demo"
x = cl.zeros(2, 3, 4)
for name, view in [("x[1]", x[1]), ("x[:, ::2]", x[:, ::2]), ("x[:, ::2, 1:]", x[:, ::2, 1:]),
                   ("x[..., 1]", x[..., 1]), ("x[0, None]", x[0, None]), ("x[None, ..., None]", x[None, ..., None])]:
    print(f"{name:20}", geometry(view))
picked = x[[0, 1]]
print("x[[0, 1]] shares x's storage:", picked.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())


# %% [markdown] id="ex-02-10-task"
# ## Exercise 02.10 · index_geometry (3 points)
#
# Write `index_geometry(shape, stride, offset, index)`: the geometry of `t[index]` for basic indices.
# `index` is what Python passes to `__getitem__`: one item, or a tuple of items; an item is an `int`, a
# `slice` with a positive (or no) step, `None`, or `...` (at most one). Rules, as in PyTorch:
#
# - the ints and slices consume one dimension each; more of them than `len(shape)`: `IndexError`;
# - `...` stands for the dimensions that no int or slice consumes (possibly none);
# - an **int** `i` on dimension `d`: `IndexError` unless `-size <= i < size`; select it (negative counts from
#   the end);
# - a **slice**: a step `<= 0` raises `ValueError("step must be greater than zero")`; clamp start and stop
#   into `[0, size]` as Python does (`slice(start, stop).indices(size)` gives them), treat `stop < start` as
#   `stop = start`; the size becomes `ceil((stop - start) / step)`, the stride is multiplied by `step`, and the
#   offset moves by `start * stride[d]` (also for an empty slice);
# - **`None`** inserts a size-1 dimension at `d`, with `unsqueeze`'s stride: `shape[d] * stride[d]`, or 1 if
#   `d` is past the last dimension.
#
# Work it out from the numbers: do not index a tensor (`t[index]`, `Tensor.__getitem__`) or call
# `Tensor.as_strided` (the first is what you are rebuilding, the second would let a tensor do the arithmetic
# for you).
#
# *Hint:* keep `shape` and `stride` as lists and a running `d`; for `...`, count how many dimensions the
# items after it still consume and jump `d` to just before them.
#
# > **In PyTorch:** `torch/csrc/autograd/python_variable_indexing.cpp`: `THPVariable_getitem` calls
# > `applySlicing`, which walks the index exactly like this, calling `select`, `slice` and `unsqueeze` (helpers
# > in `aten/src/ATen/TensorIndexing.h`), and collects tensor indices for one advanced-indexing call at the end.
# > course_lib: `apply_slicing` in `course_lib/_ops/indexing.py`.

# %% id="ex-02-10-solution" tags=["solution"] exercise="02.10"
def index_geometry(shape: tuple, stride: tuple, offset: int, index) -> tuple:
    """(shape, stride, offset) of t[index] for ints, slices with positive steps, None and ..."""
    ### BEGIN SOLUTION
    if not isinstance(index, tuple):
        index = (index,)
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    if consumed > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    shape, stride = list(shape), list(stride)
    d = 0              # the dimension of the result the next item applies to
    left = consumed    # dimensions still to be consumed by this item and the ones after it
    for item in index:
        if item is None:
            new_stride = shape[d] * stride[d] if d < len(shape) else 1
            shape.insert(d, 1)
            stride.insert(d, new_stride)
            d += 1
        elif item is Ellipsis:
            d = len(shape) - left
        elif isinstance(item, int):
            size = shape[d]
            if not -size <= item < size:
                raise IndexError(f"index {item} is out of bounds for dimension {d} with size {size}")
            offset += (item % size) * stride[d]
            del shape[d], stride[d]
            left -= 1
        elif isinstance(item, slice):
            step = 1 if item.step is None else item.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, _ = slice(item.start, item.stop).indices(shape[d])
            stop = max(stop, start)
            offset += start * stride[d]
            shape[d] = (stop - start + step - 1) // step
            stride[d] *= step
            d += 1
            left -= 1
        else:
            raise IndexError(f"index_geometry handles ints, slices, None and ..., not {type(item).__name__}")
    return tuple(shape), tuple(stride), offset
    ### END SOLUTION


# %% id="ex-02-10-check" tags=["check", "nbval-check-output"] exercise="02.10" points=3
check("02.10", index_geometry)

# %% [markdown] id="inplace-md"
# ## 8 · Writing through views, and the version counter
#
# Because a view shares its base's storage, an in-place op on the view changes the base, and the other way
# round. `x[...] = value` is the same thing: Python calls `__setitem__`, which makes the view of `x[...]` and
# copies or fills into it.
#
# All views of a storage also share one **version counter**, `t._version`: every in-place op bumps it, through
# whichever view it was made. Autograd (chapter 03) records the version of every tensor it saves for the
# backward pass and refuses to use one that has changed since; the shared counter is what lets it notice a
# write made through a different view. `detach()` shares the counter too, so even "detached" writes are seen.

# %% id="inplace-demo"
x = cl.zeros(3, 4)
row, col = x[1], x[:, 2]
row.fill_(1.0)                 # in place on a view: writes into x's storage
col.add_(10.0)                 # another view, the same cells where they cross
x[0, ::2] = 5.0                # __setitem__: the view x[0, ::2], then fill_
print(x)
print("versions of x, row, col:", x._version, row._version, col._version)

d = x.detach()
d.zero_()
print("after x.detach().zero_(): version", x._version, " sum", x.sum().item())


# %% [markdown] id="inplace-pytorch"
# > **In PyTorch:** the counter is `VariableVersion` in `c10/core/TensorImpl.h` (`version_counter_`); a view is
# > created with its base's counter (`torch/csrc/autograd/variable.h`, `make_variable_differentiable_view`),
# > and in-place ops bump it in the `ADInplaceOrView` kernels. The check that refuses in-place writes into
# > expanded tensors is `assert_no_internal_overlap` in `aten/src/ATen/MemoryOverlap.cpp`.

# %% [markdown] id="measure-md"
# ## 9 · Measure: memory order
#
# A view is free to make, but reading it is not always as cheap as reading a contiguous tensor: its
# elements are not consecutive in memory. The next cell times, for square `n x n` float32 tensors `a` and
# their transposes `a.t()`:
#
# - `sum(dim=1)` of `a` and of `a.t()`: the same amount of arithmetic, in a different memory order;
# - a plain copy `a.clone()`, and `a.t().contiguous()`, which must read in one order and write in the other.
#
# It takes a few seconds. Timings depend on your machine; the plot uses log scales.

# %% id="measure"
def best_ms(fn, n):
    number = max(1, 2_000_000 // (n * n))        # fewer calls for bigger tensors
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e3


cl.manual_seed(0)
sizes = [64, 128, 256, 512, 1024, 1536]
results = {"a.sum(dim=1)": [], "a.t().sum(dim=1)": [], "a.clone()": [], "a.t().contiguous()": []}
for n in sizes:
    a = cl.randn(n, n)
    at = a.t()
    results["a.sum(dim=1)"].append(best_ms(lambda: a.sum(dim=1), n))
    results["a.t().sum(dim=1)"].append(best_ms(lambda: at.sum(dim=1), n))
    results["a.clone()"].append(best_ms(lambda: a.clone(), n))
    results["a.t().contiguous()"].append(best_ms(lambda: at.contiguous(), n))

print(f"{'n':>6} " + " ".join(f"{name:>20}" for name in results))
for k, n in enumerate(sizes):
    print(f"{n:>6} " + " ".join(f"{results[name][k]:>17.3f} ms" for name in results))

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for ax, names, what in [(axes[0], ["a.sum(dim=1)", "a.t().sum(dim=1)"], "sum over a dimension"),
                        (axes[1], ["a.clone()", "a.t().contiguous()"], "copy")]:
    for name in names:
        ax.plot([n * n for n in sizes], results[name], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements (n x n)")
    ax.set_ylabel("milliseconds")
    ax.set_title(what)
    ax.legend()
plt.show()

# %% [markdown] id="measure-discussion"
# What to look for:
#
# - **The two sums differ, and not the way round you might expect: the transposed one is faster** (about 2x
#   at `n = 1024` on the machine this was written on). numpy does not loop in the tensor's logical order: it
#   picks the loop order that walks memory sequentially (PyTorch's `TensorIterator` does the same: it sorts
#   the dimensions by stride before it loops, `reorder_dimensions` in `aten/src/ATen/TensorIterator.cpp`), so
#   both sums read memory front to back. What differs is the innermost loop. In `a.sum(dim=1)` the summed
#   dimension is the contiguous one: each output is the sum of one contiguous row, a *horizontal* reduction
#   done one row at a time (numpy's pairwise summation). In `a.t().sum(dim=1)` the summed dimension has the
#   large stride, so the loop that walks memory runs over the *outputs*: each row of memory is added
#   elementwise into the whole result vector, a plain vector add that the CPU's SIMD units do very well.
#   Strides decide the loop order, and the loop order decides the speed, whatever the logical order.
# - **The transposed copy is much slower than a plain copy** once the tensor no longer fits in the CPU
#   caches (often 10x to 100x at `n = 1024`): reading column by column uses one float of every 64-byte cache
#   line it loads. This is the price of `.contiguous()`, and of `reshape` when it has to copy. Call them when
#   an op needs contiguous memory, or when you will read the result many times, not by habit.

# %% [markdown] id="summary"
# ## Summary and what comes next
#
# - A view is a new `(shape, stride, offset)` over the same storage. `transpose`/`permute` reorder sizes and
#   strides, `select`/`narrow`/slicing move the offset (and drop or shrink a dimension), `unsqueeze` adds a
#   size-1 dimension, `expand` adds stride-0 dimensions. `as_strided` can make any of them.
# - **Contiguous**, in PyTorch's sense, skips size-1 dimensions and counts every empty tensor as contiguous.
# - `view` succeeds exactly when `computeStride` finds strides: new dimensions may split or merge the input's
#   *chunks* but never span two. `reshape` = `view` if possible, else a copy; `contiguous()` = `self` if
#   possible, else a copy; `clone()` always copies; `detach()` shares storage without autograd history.
# - Broadcasting aligns shapes on the right and expands with stride 0: no memory for the repeated values.
# - `x[ints, slices, None, ...]` is a chain of `select`, `slice` and `unsqueeze`; tensor indices copy.
# - Views share a version counter; every in-place write through any of them bumps it.
#
# **Chapter 03 · Autograd** records, for every op, how to send gradients back through it, including through
# views, whose backward scatters gradients into the right storage cells, and uses the version counter to catch
# tensors modified after they were saved.
#
# Grade this chapter with `course grade notebooks/02_strides_and_views.ipynb`.
