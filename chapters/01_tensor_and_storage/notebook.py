# ---
# jupyter:
#   course:
#     title: Tensor and Storage
# ---

# %% [markdown] id="intro"
# # 01 · Tensor and Storage
#
# `torch.tensor([[1, 2], [3, 4]])` looks like one object. Inside PyTorch it is two: a **storage**, one flat
# buffer of numbers, and a **tensor**, a small record that says how to read that buffer as a grid
# (sizes, strides, an offset, a dtype, a device). This chapter takes that record apart, and then follows a
# call such as `x + y` from Python down to the loop that adds the numbers.
#
# **You will build**
#
# - `contiguous_strides` and `storage_index`: the arithmetic that turns an index `[i, j]` into a position
#   in the flat buffer;
# - `infer_shape_and_dtype` and `recursive_store`: the two halves of `tensor(data)`, with PyTorch's errors
#   for ragged lists;
# - `binding_source`: a tiny code generator that writes a Python function from an op's schema, the way
#   PyTorch generates `torch.add` from `native_functions.yaml`;
# - `result_type`: PyTorch's dtype promotion rule, which decides that `int64 tensor + 2.5` is `float32`;
# - `OpRegistry`: the import-time registry behind it all, whose decorators parse schemas into a bindings table,
#   after a look at what `import torch` does (`torch._C`, `PyInit__C`, the generated `PyMethodDef` tables).
#
# Then you will measure what a call costs when the tensor holds 1 number and when it holds a million.
#
# *Prerequisites:* chapter 00; numpy arrays and `dtype`s. *Expected time:* about 2 hours.

# %% id="setup"
import matplotlib.pyplot as plt
import numpy as np

import course_lib as cl
from course import check

# %% [markdown] id="storage-md"
# ## 1 · A tensor is metadata over a storage
#
# A **storage** is a flat, typed buffer: in course_lib a 1-D numpy array, in PyTorch a block of bytes plus
# the allocator that owns it. A **tensor** adds the metadata needed to read it as an n-dimensional array:
#
# - `shape` (PyTorch calls it *sizes*): how many elements along each dimension;
# - `stride()`: how many storage elements to skip to move one step along each dimension;
# - `storage_offset()`: where in the storage element `[0, 0, ...]` lives;
# - `dtype` and `device`: what the bytes mean and where they are.
#
# Element `[i, j]` of a 2-D tensor lives at `storage[offset + i * stride[0] + j * stride[1]]`. Because that
# is all a tensor needs, many tensors can read **one** storage in different ways: a transpose, a row, every
# other column. Such tensors are *views*; making one copies no data. Chapter 02 is all about views; here we
# only need to see that they exist.

# %% id="storage-demo"
x = cl.arange(6).view(2, 3)      # 6 numbers in one storage, read as 2 rows of 3
xt = x.t()                       # transpose: same storage, strides swapped
row = x[1]                       # second row: same storage, offset 3

for name, t in [("x", x), ("x.t()", xt), ("x[1]", row)]:
    print(f"{name:6} shape={tuple(t.shape)}  stride={t.stride()}  offset={t.storage_offset()}  "
          f"dtype={t.dtype}  device={t.device}")

print()
print("one storage for all three:", x.untyped_storage() == xt.untyped_storage() == row.untyped_storage())
print("storage bytes:", x.untyped_storage().nbytes(), "= 6 elements x", x.element_size(), "bytes")
row[0] = 100                     # write through the view ...
print("x after row[0] = 100:", x.tolist())   # ... and x sees it: there is only one copy of the data

# %% [markdown] id="storage-figure-md"
# The picture below draws the same three tensors over their one storage. Each tensor element shows its value
# and the storage cell it reads (`s[4]`), in that cell's colour. Nothing in the bottom row was copied to make
# the top three.

# %% id="storage-figure"
from course_lib.viz.storage import draw_storage

x = cl.arange(6).view(2, 3)
draw_storage([x, x.t(), x[1]], labels=["x", "x.t()", "x[1]"],
             title="three tensors, one storage")
plt.show()

# %% [markdown] id="metadata-md"
# ### The metadata, field by field
#
# | | course_lib (`course_lib/_tensor.py`) | PyTorch (`c10/core/TensorImpl.h`) |
# |---|---|---|
# | buffer | `_storage`: a `Storage` (numpy array, dtype, device) | `storage_`: a `Storage` holding a `StorageImpl` |
# | sizes, strides | `_shape`, `_stride` (tuples) | `sizes_and_strides_` (one small-vector for both) |
# | offset | `_offset` | `storage_offset_` |
# | dtype | `dtype` | `data_type_` (a `caffe2::TypeMeta`) |
# | device | the storage's device, `'cpu'` or `'meta'` | `device_opt_` |
# | dispatch keys | worked out on every call by the dispatcher | `key_set_`, a `DispatchKeySet` |
# | version counter | `_vc`, shared by all views | `version_counter_` |
# | autograd | `requires_grad`, `grad`, `grad_fn` | `autograd_meta_` |
#
# > **In PyTorch:** `c10/core/StorageImpl.h` holds the buffer: `data_ptr_` (the memory and how to free it),
# > `size_bytes_`, `resizable_` and `allocator_`. A storage knows nothing about shape or dtype; that is the
# > tensor's job. In Python you reach it with `t.untyped_storage()`; the older `t.storage()` (a `TypedStorage`)
# > still works but warns that it is deprecated. course_lib's `Storage` is typed (a numpy array has a dtype),
# > and `t.untyped_storage()` gives its bytes.
#
# **Dispatch keys.** PyTorch stores in every tensor a set of *dispatch keys* that decide which kernels an op on
# it goes through. On a CPU tensor, `torch._C._dispatch_keys(torch.ones(2))` shows
# `DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)`; on the meta device,
# `DispatchKeySet(Meta, ADInplaceOrView, AutogradMeta)`. The autograd key is there even when nothing requires
# grad: the autograd kernel runs and finds nothing to record. course_lib keeps no key set on the tensor; its
# dispatcher looks at the inputs on each call and tries at most three keys, skipping the ones that have nothing
# to do. The next cell spells that decision out.

# %% id="dispatch-keys"
from course_lib._ops import dispatcher


def dispatch_keys(*tensors) -> list[str]:
    # The keys course_lib's dispatcher tries, in order, for an op on these tensors.
    keys = []
    if dispatcher.active_modes():
        keys.append("Python (a mode is active)")
    if cl.is_grad_enabled() and any(t.requires_grad for t in tensors):
        keys.append("Autograd")
    keys.append("Meta" if any(t.is_meta for t in tensors) else "CPU")
    return keys


print(dispatch_keys(cl.ones(2)))
print(dispatch_keys(cl.ones(2, requires_grad=True)))
print(dispatch_keys(cl.ones(2, device="meta")))
with cl.no_grad():
    print(dispatch_keys(cl.ones(2, requires_grad=True)), " (under no_grad)")


# %% [markdown] id="ex-01-1-task"
# ## Exercise 01.1 · contiguous_strides (1 point)
#
# A freshly made tensor is **contiguous**: its elements sit in storage in row-major order, the last index
# moving fastest. Its strides follow from its shape alone: the last stride is 1, and each stride is the
# next one multiplied by the next size. For shape `(2, 3, 4)` that gives `(12, 4, 1)`.
#
# One wrinkle: a dimension of size 0 would make every stride before it 0. PyTorch multiplies by
# `max(size, 1)` instead, so `empty(2, 0, 3)` has strides `(3, 3, 1)`. The tensor has no elements, so the
# strides never address anything, but they stay well-defined.
#
# Write `contiguous_strides(shape)`:
#
# - `shape` is a tuple of ints `>= 0`; return a **tuple** of Python ints of the same length;
# - `stride[i] = max(shape[i+1], 1) * max(shape[i+2], 1) * ...` (the empty product is 1);
# - a 0-d shape `()` has strides `()`.
#
# Compute them yourself: do not call course_lib's own `contiguous_strides` helper (in
# `course_lib._tensor_base`); it is what you are rebuilding.
#
# *Hint:* one loop from the last dimension to the first, carrying a running product.
#
# > **In PyTorch:** `TensorImpl::empty_tensor_restride` in `c10/core/TensorImpl.h` computes exactly this:
# > `stride[i] = stride[i + 1] * max(size[i + 1], 1)`, starting from a last stride of 1.

# %% id="ex-01-1-solution" tags=["solution"] exercise="01.1"
def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides (in elements) of a fresh tensor of this shape."""
    ### BEGIN SOLUTION
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
    ### END SOLUTION


# %% id="ex-01-1-check" tags=["check", "nbval-check-output"] exercise="01.1" points=1
check("01.1", contiguous_strides)


# %% [markdown] id="ex-01-2-task"
# ## Exercise 01.2 · storage_index: where does element `[i, j, k]` live? (2 points)
#
# In chapter 00 you computed a row-major position from a shape. With strides and an offset, the same question
# has a shorter answer that works for **every** view, contiguous or not:
#
# $$\text{position}(i_0, \dots, i_{n-1}) = \text{offset} + \sum_d i_d \cdot \text{stride}_d$$
#
# Like PyTorch indexing, accept negative indices (`-1` is the last element along that dimension).
#
# Write `storage_index(index, shape, stride, offset)`:
#
# - `index`, `shape` and `stride` are tuples of the same length; `offset` is an int `>= 0`;
# - a negative `index[d]` counts from the end: it means `index[d] + shape[d]`;
# - after that, if the index is outside `0 <= i < shape[d]`, raise `IndexError` with PyTorch's message
#   (showing the index as it was given, and the dimension `d`):
#   `index 3 is out of bounds for dimension 1 with size 3`;
# - return the position in storage (an int). For a 0-d tensor, `storage_index((), (), (), 5) == 5`.
#
# Some strides you will meet: `(1, 3)` for the transpose of a `(2, 3)` tensor, `0` for a dimension made by
# `expand` (every step reads the same elements again), and anything at all for a dimension of size 1 (its only
# index is 0, so its stride is never used).
#
# *Hint:* check each dimension before adding `index[d] * stride[d]` to the offset.
#
# > **In PyTorch:** `x[i]` goes through `applySelect` in `aten/src/ATen/TensorIndexing.h`, which checks `i`
# > against the size (the `IndexError` text above is its message) and calls `select`
# > (`aten/src/ATen/native/TensorShape.cpp`). `select` wraps a negative index and returns a view whose
# > storage offset has moved by `i * stride[dim]`: no element is read until you ask for one.

# %% id="ex-01-2-solution" tags=["solution"] exercise="01.2"
def storage_index(index: tuple[int, ...], shape: tuple[int, ...], stride: tuple[int, ...],
                  offset: int) -> int:
    """Position in storage of element `index` of a tensor (shape, stride, offset)."""
    ### BEGIN SOLUTION
    position = offset
    for d, (i, size, step) in enumerate(zip(index, shape, stride)):
        wrapped = i + size if i < 0 else i
        if not 0 <= wrapped < size:
            raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
        position += wrapped * step
    return position
    ### END SOLUTION


# %% id="ex-01-2-check" tags=["check", "nbval-check-output"] exercise="01.2" points=2
check("01.2", storage_index)

# %% [markdown] id="creation-md"
# ## 2 · From nested lists to a tensor: `tensor([[1, 2], [3, 4]])`
#
# `tensor(data)` has to find three things in a nested list: the **shape**, the **dtype**, and the **values**
# in storage order. PyTorch (and course_lib, which follows it step by step) does it in three passes:
#
# 1. **compute the sizes** by following the *first* item of each list down: `[[1, 2], [3, 4]]` has length
#    2, its first item `[1, 2]` has length 2, and `1` is a number, so the shape is `(2, 2)`;
# 2. **infer the dtype** by looking at *every* number: all bools give `bool`, ints (and bools) give `int64`,
#    any float gives the default float dtype (`float32` unless changed);
# 3. allocate a storage of `2 * 2` elements and **store recursively**: walk the lists again, writing each
#    number at its position, and checking on the way that every list has the length step 1 promised.
#
# Step 1 only looks at first items, so `[[1, 2], [3]]` gets the shape `(2, 2)` without complaint; only step 3
# finds that the second row is short. That is why PyTorch's error for ragged lists names a dimension and a
# length: `expected sequence of length 2 at dim 1 (got 1)`.

# %% id="creation-demo"
from course_lib import _creation

for data in ([[1, 2], [3, 4]], [[1, 2], [3, 4.5]], [True, False], [], [[1, 2], [3]]):
    print(f"{str(data):20} sizes={_creation._compute_sizes(data)}  dtype={_creation._infer_scalar_type(data)}")

print()
for ragged in ([[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [1.0, [2, 3]]):
    try:
        cl.tensor(ragged)
    except (ValueError, TypeError) as e:
        print(f"tensor({ragged}) -> {type(e).__name__}: {e}")

# %% [markdown] id="ex-01-3-task"
# The four errors come from different places in step 3: a row of the wrong length (`ValueError`); a number
# where a list should be (`TypeError: not a sequence`); and a list where a number should be, which fails when
# the number is converted: as an integer (`'list' object cannot be interpreted as an integer`) or as a float
# (`must be real number, not list`).
#
# > **In PyTorch:** `torch.tensor` is `THPVariable_tensor` in
# > `torch/csrc/autograd/python_torch_functions_manual.cpp`, which calls `tensor_ctor` and then
# > `internal_new_from_data` in `torch/csrc/utils/tensor_new.cpp`. That function calls `compute_sizes`,
# > `infer_scalar_type` and `recursive_store`, the three steps above; each number goes through `store_scalar`.
#
# ## Exercise 01.3 · infer_shape_and_dtype (2 points)
#
# Write steps 1 and 2: `infer_shape_and_dtype(data)` returns the pair `(shape, dtype)`.
#
# - `data` is a Python number (`bool`, `int`, `float`) or a list/tuple of such things, nested;
#   you may assume it is not ragged (finding ragged lists is the next exercise's job);
# - **shape**: a tuple of ints. A number has shape `()`. A list has shape `(len(list),)` followed by the shape
#   of its first item; an empty list stops there: `[]` has shape `(0,)`, `[[], []]` has shape `(2, 0)`;
# - **dtype**: `cl.bool` if every number is a bool; `cl.int64` if every number is an int or a bool and at
#   least one is an int; `cl.get_default_dtype()` if at least one is a float. An empty list counts as the
#   default float dtype (`tensor([])` is `float32`). `cl.promote_types(a, b)` combines two dtypes this way;
# - any other leaf (say `None`) raises `RuntimeError` with PyTorch's message:
#   `Could not infer dtype of NoneType` (the type's `__name__`).
#
# *Hint:* two small functions. Beware: `isinstance(True, int)` is `True` in Python, so test for `bool` first.

# %% id="ex-01-3-solution" tags=["solution"] exercise="01.3"
import course_lib as cl


def infer_shape_and_dtype(data) -> tuple[tuple[int, ...], cl.dtype]:
    """(shape, dtype) that tensor(data) would have; `data` is a number or nested lists/tuples."""
    ### BEGIN SOLUTION
    def dtype_of(obj):
        if isinstance(obj, bool):
            return cl.bool
        if isinstance(obj, int):
            return cl.int64
        if isinstance(obj, float):
            return cl.get_default_dtype()
        if isinstance(obj, (list, tuple)):
            result = cl.get_default_dtype() if len(obj) == 0 else None
            for item in obj:
                d = dtype_of(item)
                result = d if result is None else cl.promote_types(result, d)
            return result
        raise RuntimeError(f"Could not infer dtype of {type(obj).__name__}")

    shape = []
    item = data
    while isinstance(item, (list, tuple)):
        shape.append(len(item))
        if len(item) == 0:
            break
        item = item[0]
    return tuple(shape), dtype_of(data)
    ### END SOLUTION


# %% id="ex-01-3-check" tags=["check", "nbval-check-output"] exercise="01.3" points=2
check("01.3", infer_shape_and_dtype)

# %% [markdown] id="ex-01-4-task"
# ## Exercise 01.4 · recursive_store (3 points)
#
# Now step 3. Storage has been allocated: `buf`, a flat buffer with one slot per element (the check uses a
# Python list of `None`s so you can see which slots you wrote). Walk `obj` and write each number where it
# belongs. This is PyTorch's `recursive_store`, argument for argument:
#
# ```
# recursive_store(buf, offset, sizes, strides, dim, dtype, obj)
# ```
#
# - `obj` is the part of the data at depth `dim`; its first element goes to `buf[offset]`; `sizes` and
#   `strides` are the tensor's (usually `contiguous_strides(sizes)`, but any strides must work);
# - if `dim == len(sizes)`, `obj` is one number: write `buf[offset] = store_scalar(obj, dtype)`.
#   `store_scalar` (given, imported in the cell) converts it the way PyTorch does: `0.1` becomes the nearest
#   float32, `1.7` stored as `int64` becomes `1`, `True` stored as `float32` becomes `1.0`, and a list raises
#   PyTorch's `TypeError`;
# - otherwise `obj` must be a list or tuple, else raise `TypeError("not a sequence")`; it must have exactly
#   `sizes[dim]` items, else raise
#   `ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(obj)})")`;
# - item `k` of `obj` is stored recursively at depth `dim + 1`, starting at `offset + k * strides[dim]`.
#
# A call for `[[1, 2], [3, 4]]` starts at the top: `recursive_store(buf, 0, (2, 2), (2, 1), 0, cl.int64, data)`.
# The function returns nothing; it fills `buf`.
#
# *Hint:* the base case is the number; the recursive case is a loop that moves `offset` by `strides[dim]`.

# %% id="ex-01-4-solution" tags=["solution"] exercise="01.4"
import course_lib as cl
from course_lib._creation import _store_scalar as store_scalar  # one number -> the dtype's value


def recursive_store(buf, offset: int, sizes: tuple[int, ...], strides: tuple[int, ...], dim: int,
                    dtype: cl.dtype, obj) -> None:
    """Write the numbers of nested lists `obj` (at depth `dim`) into `buf`, starting at `offset`."""
    ### BEGIN SOLUTION
    if dim == len(sizes):
        buf[offset] = store_scalar(obj, dtype)
        return
    if not isinstance(obj, (list, tuple)):
        raise TypeError("not a sequence")
    n = sizes[dim]
    if len(obj) != n:
        raise ValueError(f"expected sequence of length {n} at dim {dim} (got {len(obj)})")
    for item in obj:
        recursive_store(buf, offset, sizes, strides, dim + 1, dtype, item)
        offset += strides[dim]
    ### END SOLUTION


# %% id="ex-01-4-check" tags=["check", "nbval-check-output"] exercise="01.4" points=3
check("01.4", recursive_store)


# %% [markdown] id="my-tensor-md"
# ### Putting it together: your own `tensor()`
#
# With your four functions, `tensor()` is a few lines: infer, allocate a numpy buffer of the dtype, store,
# and wrap the buffer in a `Storage` and a `Tensor`. (`Tensor._make` is course_lib's internal constructor:
# storage, offset, shape, strides, dtype.) The cell compares the result with `cl.tensor`; it tells you if an
# exercise above is still to do.

# %% id="my-tensor"
def my_tensor(data) -> cl.Tensor:
    shape, dtype = infer_shape_and_dtype(data)
    strides = contiguous_strides(shape)
    n = 1
    for s in shape:
        n *= s
    buf = np.empty(n, dtype=dtype.np)          # the storage's memory: one flat, typed array
    if n > 0:
        recursive_store(buf, 0, shape, strides, 0, dtype, data)
    return cl.Tensor._make(cl.Storage(buf, dtype), 0, shape, strides, dtype)


try:
    for data in ([[1, 2], [3, 4]], [[0.1, 2], [3, True]], 3.5, [[], []]):
        mine, ref = my_tensor(data), cl.tensor(data)
        same = mine.dtype == ref.dtype and mine.shape == ref.shape and mine.tolist() == ref.tolist()
        print(f"{str(data):22} -> {mine!r:40} {'same as cl.tensor' if same else 'DIFFERENT from cl.tensor'}")
except NotImplementedError:
    print("Finish exercises 01.1, 01.3 and 01.4 first: my_tensor uses all three.")

# %% [markdown] id="ops-md"
# ## 3 · What happens when you call an op
#
# `x + y`, `x.add(y)` and `cl.add(x, y)` all end in the same place. The path has three parts, and PyTorch has
# the same three:
#
# 1. **the registry**: every op is declared once, with a *schema* such as
#    `add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`, its kernels and its variants;
# 2. **generated bindings**: the Python functions `cl.add` and `Tensor.add` are not written by hand; a code
#    generator writes them from the schema. Each one only packs its arguments into a tuple and calls
# 3. **the dispatcher**, which tries its keys in order (modes, then Autograd, then the backend) and ends in a
#    **kernel**: for `cpu`, numpy on the tensors' strided views; for `meta`, a shape function with no data.
#
# Here is the registry entry for `add`:

# %% id="registry-demo"
op = cl.OPS["add"]
print("schema:  ", op.schema)
print("variants:", op.variants, "  in-place form:", op.inplace)
print("kernels:  cpu =", op.cpu.__qualname__, "| meta =", op.meta.__qualname__,
      "| autograd =", op.autograd is not None)
print(len(cl.OPS), "ops registered")

# %% [markdown] id="bindings-md"
# > **In PyTorch:** ops are declared in `aten/src/ATen/native/native_functions.yaml`. The entry for `add`
# > (trimmed) reads
# >
# > ```yaml
# > - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
# >   structured_delegate: add.out
# >   variants: function, method
# >   dispatch:
# >     SparseCPU, SparseCUDA, SparseMPS, SparseMeta: add_sparse
# >     MkldnnCPU: mkldnn_add
# >   tags: [core, pointwise]
# > ```
# >
# > `.Tensor` is the *overload name* (there is also `add.Scalar`, `add.out`, ...). At build time `torchgen`
# > (`torchgen/gen.py`) turns the file into C++ declarations and registrations, and
# > `tools/autograd/gen_python_functions.py` writes the Python bindings into
# > `torch/csrc/autograd/generated/python_torch_functions_*.cpp` and `python_variable_methods.cpp`. Each
# > generated binding parses the Python arguments against the schema (`torch/csrc/utils/python_arg_parser.cpp`)
# > and calls `at::add`, which enters the dispatcher (`aten/src/ATen/core/dispatch/Dispatcher.h`).
#
# course_lib's generator is `course_lib/_ops/bindings.py`. Like torchgen, it writes its output into files
# that are checked in: `python -m course_lib._ops.bindings` writes one function per op into
# `course_lib/_ops/python_torch_functions.py` (`cl.add`) and one method per op into
# `course_lib/_ops/python_variable_methods.py` (`Tensor.add`), and a test fails when they are stale. Here is
# the function it writes for `add`, and the one for `sum` (`python_source` writes the op as `_op`; the file
# spells it `_OPS["add"]`):

# %% id="bindings-demo"
import inspect

from course_lib._ops.bindings import python_source

print(python_source(cl.OPS["add"]))
print(python_source(cl.OPS["sum"]))
print("cl.add is that function:", inspect.getsource(cl.add) == python_source(cl.OPS["add"], op_ref='_OPS["add"]'))

# %% [markdown] id="dispatcher-md"
# The binding hands `(self, other, alpha)` to `_dispatch`, the dispatcher's entry point. It is short
# enough to read in full:

# %% id="dispatcher-source"
print(inspect.getsource(dispatcher.dispatch))


# %% [markdown] id="modes-md"
# ### Watching ops go by: a dispatch mode
#
# The first thing `dispatch` does is give the call to the innermost active **mode**, an object with a
# `__torch_dispatch__(func, types, args, kwargs)` method. While the mode runs, it is taken off the mode
# stack, so when it calls `func(*args)` the call continues below it: to autograd and the kernel. A mode can
# therefore watch, change or replace every op. The smallest useful one prints what goes by:

# %% id="print-ops"
class PrintOps:
    # A minimal dispatch mode: print each op on its way to the kernel.

    def __enter__(self):
        dispatcher.push_mode(self)
        return self

    def __exit__(self, *exc):
        dispatcher.pop_mode()

    def __torch_dispatch__(self, func, types, args, kwargs):
        out = func(*args)          # this mode is off the stack now: the call goes on to the kernel
        shapes = [tuple(a.shape) if isinstance(a, cl.Tensor) else a for a in args]
        print(f"  {func.name:8} {shapes}")
        return out


x = cl.arange(6.).view(2, 3)
w = cl.ones(3, 2)
b = cl.tensor([1., 2.])
with PrintOps():
    y = (x @ w + b).relu().sum()
print("result:", y)

# %% [markdown] id="logging-md"
# Each line is one trip through the dispatcher. `x @ w` shows up as `mm`: `matmul` is a *composite* op that
# picks the right primitive for the shapes (here a plain matrix product) and calls it, and modes see the
# primitives.
#
# course_lib ships a fuller logging mode, `course_lib.utils.LoggingMode`, which prints dtypes and results and
# leaves out default arguments. Run on **meta** tensors, the same expression dispatches the same ops to the
# meta kernels, which compute shapes and dtypes and touch no data:

# %% id="logging-mode"
from course_lib.utils import LoggingMode

xm, wm, bm = (cl.empty(2, 3, device="meta"), cl.empty(3, 2, device="meta"),
              cl.empty(2, device="meta"))
with LoggingMode():
    ym = (xm @ wm + bm).relu().sum()
print("result:", ym)

# %% [markdown] id="ex-01-5-task"
# > **In PyTorch:** modes are `TorchDispatchMode` in `torch/utils/_python_dispatch.py`;
# > `torch.testing._internal.logging_tensor.LoggingTensorMode` is a logging mode like the one above.
# > One difference: PyTorch's `Python` dispatch key sits *below* Autograd, so a mode runs after autograd has
# > recorded the op; course_lib asks modes first, before autograd.
#
# ## Exercise 01.5 · binding_source: a tiny code generator (2 points)
#
# Write the generator yourself. `binding_source(schema)` returns the **source code** (a string) of the
# Python binding for an op, in this form:
#
# ```python
# def add(self, other, *, alpha=1):
#     return _dispatch(_op, (self, other, alpha))
# ```
#
# - the function is named after the op and has one parameter per schema argument, in order;
# - a `*` goes before the first keyword-only argument (the ones after `*` in the schema), as in the schema;
# - defaults are written as in the schema (`None`, `True`, `False`, numbers such as `1e-05` or `-1`), except
#   the empty list `[]`, which becomes the tuple `()` (a list would be one shared, mutable default);
# - the body passes **all** arguments, in schema order, as **one tuple** to `_dispatch(_op, ...)` and returns
#   what it returns. Mind the one-argument case: `(self,)` is a tuple, `(self)` is not.
#
# `parse_schema(schema)` (imported in the cell) does the parsing: it returns `(name, args, returns)`, and each
# arg has `.type`, `.name`, `.default` (a string, or `None` if there is no default) and `.kwarg_only`. Look at
# one in the cell below the exercise if you like. The check compiles your string with a fake `_dispatch` and
# calls the function.
#
# *Hint:* build two lists, the parameters (`"dim=None"`, `"*"`, ...) and the names to pass on, then join them.

# %% id="ex-01-5-solution" tags=["solution"] exercise="01.5"
from course_lib._ops.registry import parse_schema


def binding_source(schema: str) -> str:
    """Source of a Python function that passes its arguments, in schema order, to _dispatch(_op, ...)."""
    ### BEGIN SOLUTION
    name, args, _returns = parse_schema(schema)
    params, names = [], []
    star = False
    for a in args:
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        default = "()" if a.default == "[]" else a.default
        params.append(a.name if default is None else f"{a.name}={default}")
        names.append(a.name)
    packed = ", ".join(names) + ("," if len(names) == 1 else "")
    return f"def {name}({', '.join(params)}):\n    return _dispatch(_op, ({packed}))\n"
    ### END SOLUTION


# %% id="ex-01-5-check" tags=["check", "nbval-check-output"] exercise="01.5" points=2
check("01.5", binding_source)

# %% [markdown] id="my-binding-md"
# Your generated code can be wired to the real dispatcher: give it `cl.dispatch` as `_dispatch` and a
# registered op as `_op`, and it behaves like `cl.sub`.

# %% id="my-binding"
from course_lib._ops.registry import parse_schema

print(parse_schema(cl.OPS["sub"].schema))
try:
    src = binding_source(cl.OPS["sub"].schema)
    namespace = {"_dispatch": cl.dispatch, "_op": cl.OPS["sub"]}
    exec(src, namespace)
    my_sub = namespace["sub"]
    print(src)
    print(my_sub(cl.tensor([5., 7.]), cl.tensor([1., 2.]), alpha=2))
except NotImplementedError:
    print("Finish exercise 01.5 first.")

# %% [markdown] id="promotion-md"
# ## 4 · Dtype promotion: what is `int64 tensor + 2.5`?
#
# When an op gets inputs of different dtypes, it must pick one dtype for the result. PyTorch's rule,
# `result_type`, has two parts.
#
# **Categories.** Each dtype is a bool, an integer or a floating point type, ordered
# `bool < integer < float`. Two dtypes *promote* to the smallest dtype that holds both
# (`cl.promote_types`): `int32` and `int64` give `int64`; `uint8` and `int8` give `int16`; an integer and a
# float give the float, whatever their sizes.
#
# **Three tiers.** Operands are sorted into tiers, from strongest to weakest:
#
# 1. tensors with at least one dimension (any size, even 0 or 1 elements),
# 2. 0-d tensors (shape `()`),
# 3. Python numbers, which count as `bool`, `int64` or the default float dtype.
#
# Within a tier, dtypes promote. A weaker tier changes the result **only if its category is higher**. So
# `int32 tensor + 5` stays `int32` (5 is an int, the same category), but `int32 tensor + 2.5` becomes
# `float32` (a float beats an integer). That keeps `x * 2` from silently turning a `float16` tensor into
# `float32`, or a `uint8` image into `int64`.
#
# | operands | result | why |
# |---|---|---|
# | `int64` tensor, `float32` tensor | `float32` | same tier: promote |
# | `uint8` tensor, `int8` tensor | `int16` | same tier: the smallest type that holds both |
# | `int64` tensor, `2.5` | `float32` | scalar of a higher category: the default float |
# | `int32` tensor, `5` | `int32` | scalar of the same category: ignored |
# | `float32` tensor, 0-d `float64` | `float32` | 0-d of the same category: ignored |
# | `int64` tensor, 0-d `float64` | `float64` | 0-d of a higher category: its dtype |
# | `uint8` tensor, 0-d `int64` | `uint8` | ignored, even though `int64` is bigger |
# | `bool` tensor, `1` | `int64` | int beats bool |
# | 0-d `int32`, `5` | `int32` | the 0-d tensor is the strongest operand present |

# %% id="promotion-demo"
def t(shape, dtype):
    return cl.zeros(shape, dtype=dtype)


pairs = [
    (t((3,), cl.int64), t((3,), cl.float32)),
    (t((3,), cl.uint8), t((3,), cl.int8)),
    (t((3,), cl.int64), 2.5),
    (t((3,), cl.int32), 5),
    (t((3,), cl.float32), t((), cl.float64)),
    (t((3,), cl.int64), t((), cl.float64)),
    (t((3,), cl.uint8), t((), cl.int64)),
]
def describe(v):
    return f"{v.dtype.name} {'0-d' if v.dim() == 0 else 'tensor'}" if isinstance(v, cl.Tensor) else repr(v)


for a, b in pairs:
    print(f"{describe(a):>15} + {describe(b):<15} -> {cl.result_type(a, b).name:8}  (a + b is {(a + b).dtype.name})")

print()
print("int8 tensor + 1000 stays int8 and wraps around:", cl.tensor([1, 2], dtype=cl.int8) + 1000)
print("integer / integer is true division:            ", cl.tensor([1, 2]) / 2)

# %% [markdown] id="ex-01-6-task"
# > **In PyTorch:** the promotion table is `promoteTypes` in `c10/core/ScalarType.h` (and `.cpp`), a lookup
# > table indexed by two dtypes. The tiers are in `aten/src/ATen/native/TypeProperties.cpp`: a
# > `ResultTypeState` keeps `dimResult`, `zeroResult` and `wrappedResult`, `update_result_type_state` adds
# > one operand, and `combine_categories` merges the tiers. A Python number becomes a *wrapped number* tensor
# > (`is_wrapped_number()`), which is how it ends up in the weakest tier.
#
# ## Exercise 01.6 · result_type (2 points)
#
# Write `result_type(a, b)` for two operands, each a course_lib `Tensor` or a Python `bool`, `int` or `float`.
#
# - a tensor with `dim() > 0` is in tier 1, a 0-d tensor in tier 2, a Python number in tier 3 with the dtype
#   `cl.bool`, `cl.int64` or `cl.get_default_dtype()` (test `bool` before `int`);
# - two operands in the same tier give `cl.promote_types` of their dtypes;
# - going from the strongest tier present to the weakest, a weaker tier's dtype is promoted in only when its
#   category is higher than that of the result so far (`d.is_floating_point` tells floats; `cl.bool` is the
#   only bool);
# - return a course_lib dtype. Do not call `cl.result_type`: that is the answer you are rebuilding.
#
# *Hint:* collect one dtype per tier, then combine from tier 1 down with a small `category(d)` helper
# returning 0, 1 or 2.

# %% id="ex-01-6-solution" tags=["solution"] exercise="01.6"
import course_lib as cl


def result_type(a, b) -> cl.dtype:
    """PyTorch's result dtype for an op on operands a and b (tensors or Python numbers)."""
    ### BEGIN SOLUTION
    def category(d):
        return 2 if d.is_floating_point else 0 if d is cl.bool else 1

    tiers = [None, None, None]          # dims > 0, 0-d, Python numbers
    for x in (a, b):
        if isinstance(x, cl.Tensor):
            tier, d = (0 if x.dim() > 0 else 1), x.dtype
        else:
            tier = 2
            d = cl.bool if isinstance(x, bool) else cl.int64 if isinstance(x, int) else cl.get_default_dtype()
        tiers[tier] = d if tiers[tier] is None else cl.promote_types(tiers[tier], d)
    result = None
    for d in tiers:
        if d is None:
            continue
        if result is None:
            result = d
        elif category(d) > category(result):
            result = cl.promote_types(result, d)
    return result
    ### END SOLUTION


# %% id="ex-01-6-check" tags=["check", "nbval-check-output"] exercise="01.6" points=2
check("01.6", result_type)

# %% [markdown] id="import-md"
# ## 5 · Before the first op: what `import torch` does
#
# Every op you called in this chapter was already in the registry when your first cell ran. Someone put it
# there, at **import time**. Here is what `import torch` does, in order (PyTorch 2.13.0, Linux; the cell after
# the next one checks each claim when PyTorch is installed).
#
# 1. **Python runs `torch/__init__.py`**, which soon reaches `from torch._C import *`. `torch._C` is not a
#    Python file but an *extension module*: a shared library, `torch/_C.cpython-311-x86_64-linux-gnu.so`.
#    Python's `ExtensionFileLoader` opens it with `dlopen` and calls the one function CPython's rules say it
#    must export, `PyInit_` followed by the module's name: **`PyInit__C`**.
# 2. **Loading the library registers the ops.** `_C.so` itself is a stub of about 9 KB
#    (`torch/csrc/stub.c`: `PyInit__C` only returns `initModule()`). It is linked against
#    `libtorch_python.so` (the Python bindings, about 30 MB), which is linked against `libtorch_cpu.so` (the
#    kernels, over 400 MB). While `dlopen` loads them, their *static initialisers* run: code generated from
#    `native_functions.yaml` (`RegisterSchema.cpp`, `RegisterCPU.cpp`, ... with the `TORCH_LIBRARY` macros)
#    declares every op's schema to the dispatcher and registers each kernel under its dispatch key. By the
#    time Python gets control back, the dispatcher knows thousands of ops (`torch.ops.aten.add.Tensor` is
#    one); no Python has run for any of them.
# 3. **`initModule()` builds the Python side** (`torch/csrc/Module.cpp`). It creates the module object, and
#    among a long list of `init...` calls: `THPVariable_initModule` makes the class **`torch._C.TensorBase`**,
#    whose methods come from the generated table `variable_methods[]` in `python_variable_methods.cpp`; and
#    `initTorchFunctions` gathers the generated tables `torch_functions_shard[]` of
#    `python_torch_functions_0.cpp`, `_1` and `_2` (the code generator splits them in three files so that
#    they compile in parallel) into one array and makes it the static methods of a class,
#    `torch._C._VariableFunctionsClass`, whose one instance is **`torch._C._VariableFunctions`**.
# 4. **Back in `torch/__init__.py`**, a loop copies every name of `_C._VariableFunctions` into the `torch`
#    module and sets its `__module__` to `"torch"`: that is why `torch.add is torch._C._VariableFunctions.add`.
#    Later, `torch/_tensor.py` defines `class Tensor(torch._C.TensorBase)`, so `torch.Tensor.__mro__` is
#    `(torch.Tensor, torch._C.TensorBase, object)` and `x.add` is found on `TensorBase`, a C type.
#
# The generated tables are plain C arrays of `PyMethodDef`, CPython's record for "a function in an extension
# module": a name, a C function pointer, flags that say how Python calls it, and a docstring. A few rows of
# `python_torch_functions_0.cpp`, as the code generator writes them:
#
# ```c
# static PyMethodDef torch_functions_shard[] = {
#   {"add", castPyCFunctionWithKeywords(THPVariable_add), METH_VARARGS | METH_KEYWORDS | METH_STATIC, nullptr},
#   {"conv2d", castPyCFunctionWithKeywords(THPVariable_conv2d), METH_VARARGS | METH_KEYWORDS | METH_STATIC, nullptr},
#   ...
# };
# ```
#
# `METH_VARARGS | METH_KEYWORDS` means "call it with an args tuple and a kwargs dict"; `METH_STATIC` makes it a
# static method of the class. `THPVariable_add` is generated too: it holds the Python signatures of
# every overload of `add` as strings (`"add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)"`,
# ...), parses the call against them with `PythonArgParser` (`torch/csrc/utils/python_arg_parser.cpp`), picks
# the first that fits and calls `at::add`, which enters the dispatcher. **One Python name, one row, several
# schemas**: overloads live inside the row, not as rows of their own.
#
# Two ways to cross the C boundary live side by side in `torch._C`. Much of it (the JIT, `torch._C._dynamo`,
# ...) is bound with **pybind11**, a C++ library that writes the glue for you: `m.def("name", &fn)` converts
# arguments and results by their C++ types. The ATen ops use the **raw CPython API** instead: generated
# `PyMethodDef` rows and one shared argument parser of PyTorch's own, which handles overloads,
# `__torch_function__` and PyTorch's error messages in one place for thousands of ops.

# %% [markdown] id="import-course-lib-md"
# **What `import course_lib` does in their place.** There is no C library, so every step is Python, in the
# order `course_lib/__init__.py` spells out:
#
# | PyTorch | course_lib |
# |---|---|
# | `dlopen` runs static initialisers that register every op with the dispatcher | `import course_lib._ops.kernels` imports every kernel module (and `course_lib._creation` and `_random` hold the factory and random ops); each `@register(schema, ...)` decorator runs as its module is imported and adds an `OpDef` to the dict `OPS` |
# | `native_functions.yaml` holds the schemas | the schema strings are the decorators' first argument, next to the kernel |
# | `torch_functions_shard[]`, generated at build time, compiled into `libtorch_python.so` | `python_torch_functions.py`, generated by `python -m course_lib._ops.bindings` and checked in; `course_lib/__init__.py` star-imports it |
# | `variable_methods[]` becomes `torch._C.TensorBase`'s methods | `python_variable_methods.py`'s class `VariableMethods`, a base class of `course_lib.Tensor` |
# | `PythonArgParser` parses each call against the overloads | Python's own argument binding; one schema per name, and registering a name twice is an error |
#
# So, as in PyTorch, no binding is *generated* at import: the bindings were written by a generator before
# (at build time there, at development time here), and import only *registers* the kernels and loads the
# generated code.

# %% id="import-course-lib"
import collections
import sys

print("course_lib.Tensor.__mro__:", [c.__qualname__ for c in cl.Tensor.__mro__])
print("cl.add lives in      ", cl.add.__module__, "| Tensor.add comes from", cl.Tensor.add.__qualname__)
print("OPS['add'].cpu is    ", f"{cl.OPS['add'].cpu.__module__}.{cl.OPS['add'].cpu.__name__}")
by_module = collections.Counter(op.cpu.__module__.rsplit(".", 1)[-1] for op in cl.OPS.values())
print(f"{len(cl.OPS)} ops registered at import, by kernel module:")
print("  " + ", ".join(f"{name} {n}" for name, n in by_module.most_common()))
print(sum(m.startswith("course_lib") for m in sys.modules), "course_lib modules imported")

# %% [markdown] id="import-torch-md"
# With PyTorch installed (`make oracle`), the next cell checks the claims above on the real thing: the stub and
# its `PyInit__C`, the libraries it needs, the MRO, where `torch.add` comes from, and the overloads behind one
# name. Importing PyTorch takes a few seconds; without it the cell says so and the chapter goes on.

# %% id="import-torch" grader_runs="torch = None  # `course grade` skips the optional comparison with PyTorch"
import ctypes
import os

try:
    import torch
except ImportError:
    torch = None

if torch is None:
    print("PyTorch is not installed: `make oracle` installs it (then restart the kernel)")
else:
    so = torch._C.__file__
    print("torch", torch.__version__, "| torch._C is", os.path.basename(so), f"({os.path.getsize(so):,} bytes)")
    print("  loaded by", type(torch._C.__spec__.loader).__name__,
          "| exports PyInit__C:", hasattr(ctypes.CDLL(so), "PyInit__C"))
    lib = os.path.join(os.path.dirname(so), "lib")
    for name in ("libtorch_python.so", "libtorch_cpu.so"):
        if os.path.exists(os.path.join(lib, name)):
            print(f"  {name:20} {os.path.getsize(os.path.join(lib, name)) / 1e6:6.0f} MB")
    print("torch.Tensor.__mro__:", torch.Tensor.__mro__)
    print("torch.add is torch._C._VariableFunctions.add:", torch.add is torch._C._VariableFunctions.add,
          "| type:", type(torch.add).__name__, "| __module__:", torch.add.__module__)
    print("'add' in TensorBase.__dict__:", "add" in torch._C.TensorBase.__dict__,
          "| in Tensor.__dict__:", "add" in torch.Tensor.__dict__)
    n_funcs = sum(not n.startswith("__") for n in dir(torch._C._VariableFunctions))
    print(n_funcs, "functions on _VariableFunctions;",
          len(torch._C._dispatch_get_all_op_names()), "operators in the dispatcher (each overload counted)")
    print("the overloads of aten::add:", torch.ops.aten.add.overloads()[:6], "...")
    print("  ", torch.ops.aten.add.Tensor._schema)
    print("  ", torch.ops.aten.add.Scalar._schema)

# %% [markdown] id="ex-01-7-task"
# ## Exercise 01.7 · OpRegistry: an import-time registry (2 points)
#
# Build the registry the bindings are read from: a class `OpRegistry` whose `register(schema)` is a decorator
# for kernels, and whose `table` is the bindings table, a dict `name -> (callable, signature)`, the Python
# cousin of a `PyMethodDef` array:
#
# ```python
# reg = OpRegistry()
#
# @reg.register("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
# def add(self, other, alpha):             # runs when this module is imported, like a static initialiser
#     ...
#
# reg.table == {
#     "add": (add, ("add",                                   # {"add", THPVariable_add, METH_..., ...}
#                   [("Tensor", "self", None, False),
#                    ("Tensor", "other", None, False),
#                    ("Scalar", "alpha", "1", True)],
#                   "Tensor")),
# }
# ```
#
# - `register(schema)` returns a decorator; applied to a function `fn`, it parses the schema, adds
#   `name: (fn, signature)` to `table` and returns `fn` itself (so `add` above is still the kernel).
# - The **signature** is `(name, args, returns)`: `args` a list with one `(type, name, default, kwarg_only)`
#   tuple per argument, in order; `default` the text after `=` (a string such as `"1"`, `"None"`, `"[]"`),
#   or `None` when there is none; `kwarg_only` `True` for the arguments after a lone `*` (the `*` is not an
#   argument); `returns` the text after `->`.
# - The grammar is `name(args) -> returns`, surrounding spaces stripped (`schema.strip()`); the spaces around
#   `->` and after commas may be missing. The name is letters, digits and underscores. Arguments are
#   separated by the commas that are not inside brackets or parentheses: `int[1] dim=[-2, -1]` is one
#   argument, and so is `Tensor(a -> *) self` (an alias annotation, which has an arrow of its own: the `->`
#   that counts is the one after the argument list's closing parenthesis). No arguments, `seed() -> int`,
#   is an empty list. In an argument, the default is what follows the first `=`, and the type is everything
#   before the last space of what precedes it (`Tensor(a!) self` has type `Tensor(a!)`); strip each piece.
# - A schema that does not fit the grammar raises `ValueError(f"bad schema: {schema!r}")` (the schema as it
#   was given). That includes **overload names**: course_lib has one op per name, so `add.Tensor(...)` is a
#   bad schema here (the native_functions.yaml spelling).
# - Registering a name that is already in the table raises `ValueError(f"op {name} registered twice")`, even
#   with another signature (PyTorch would make it an overload; course_lib refuses), and leaves the table as
#   it was. A bad schema leaves it as it was too.
#
# These are course_lib's rules: the check registers random schemas in a fresh `OpRegistry()` per case and
# compares your table with what `course_lib._ops.registry` makes of the same schemas. Write the parser
# yourself: calling course_lib's `parse_schema` (or its helper `_split_args`), `register` or `OpDef` (which
# parses in `OpDef.__init__`) fails the check.
#
# *Hint:* a regular expression such as `r"^(\w+)\((.*)\)\s*->\s*(.+)$"` finds the three parts (`.*` is greedy,
# so it runs to the last `)` that is followed by `->`); then split the arguments with a depth counter for
# `[`/`(` and `]`/`)`, and parse the table entry completely before touching the table.

# %% id="ex-01-7-solution" tags=["solution"] exercise="01.7"
import re
from typing import Callable


class OpRegistry:
    """Kernels declared with `@registry.register(schema)`; `table` maps name -> (kernel, signature)."""

    def __init__(self) -> None:
        self.table: dict[str, tuple[Callable, tuple]] = {}

    def register(self, schema: str) -> Callable[[Callable], Callable]:
        """A decorator that adds `name -> (fn, signature)` to the table and returns `fn` itself."""
        ### BEGIN SOLUTION
        m = re.match(r"^(\w+)\((.*)\)\s*->\s*(.+)$", schema.strip())
        if m is None:
            raise ValueError(f"bad schema: {schema!r}")
        name, argtext, returns = m.groups()
        parts, depth, current = [], 0, ""
        for ch in argtext:
            depth += (ch in "([") - (ch in ")]")
            if ch == "," and depth == 0:
                parts.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            parts.append(current.strip())
        args, kwarg_only = [], False
        for part in parts:
            if part == "*":
                kwarg_only = True
                continue
            decl, _, default = part.partition("=")
            typ, _, arg_name = decl.strip().rpartition(" ")
            args.append((typ.strip(), arg_name.strip(), default.strip() or None, kwarg_only))
        signature = (name, args, returns.strip())

        def decorator(fn: Callable) -> Callable:
            if name in self.table:
                raise ValueError(f"op {name} registered twice")
            self.table[name] = (fn, signature)
            return fn
        return decorator
        ### END SOLUTION


# %% id="ex-01-7-check" tags=["check", "nbval-check-output"] exercise="01.7" points=2
check("01.7", OpRegistry)

# %% [markdown] id="my-registry-md"
# Your registry at work, on two schemas from `native_functions.yaml` (their overload names dropped), and printed
# the way the generated C table would list them. Then the refusals: a second `add`, and an overload name.

# %% id="my-registry"
try:
    reg = OpRegistry()

    @reg.register("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    def add_kernel(self, other, alpha):
        return self + alpha * other

    @reg.register("max(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    def max_kernel(self, dim, keepdim):
        return self.max(dim, keepdim)

    print("static PyMethodDef my_functions[] = {")
    for name, (fn, (_, args, returns)) in reg.table.items():
        print(f'  {{"{name}", {fn.__name__}, METH_VARARGS | METH_KEYWORDS, nullptr}},'
              f"  // {len(args)} args -> {returns}")
    print("};")
    for schema in ("add(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "add.Tensor(Tensor self) -> Tensor"):
        try:
            reg.register(schema)(add_kernel)
        except ValueError as e:
            print("ValueError:", e)
    fn, signature = reg.table["add"]
    print(fn(cl.tensor([1., 2.]), cl.tensor([10., 20.]), 2), signature)
except NotImplementedError:
    print("Finish exercise 01.7 first.")

# %% [markdown] id="measure-md"
# ## 6 · Measure: where does the time go?
#
# Every course_lib op is a chain of Python calls (binding, dispatcher, kernel, wrapping the result) around one
# numpy call. For a small tensor that chain *is* the cost; for a large one the numpy loop is. Let us measure
# both ends.
#
# First, one `add` of two 10-element `float32` tensors, entered at each level of the path. Each level calls
# the one above it in the list: the kernel calls numpy (and wraps the result in a new `Storage` and `Tensor`),
# the dispatcher calls the kernel, the binding and the operator call the dispatcher. So the differences
# between bars are what each layer costs. Timings depend on your machine and on what else it is doing: on a
# busy machine small differences drown in noise, so rerun the cell if the bars come out in an odd order.

# %% id="measure-layers"
import timeit


def per_call_us(fn, number=300, repeat=9) -> float:
    # Best of `repeat` runs of `number` calls, in microseconds per call.
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


a = np.arange(10, dtype=np.float32)
x = cl.arange(10, dtype=cl.float32)
op = cl.OPS["add"]
levels = {
    "numpy: np.add(a, a)": lambda: np.add(a, a),
    "kernel: op.cpu(x, x, 1)": lambda: op.cpu(x, x, 1),
    "dispatcher: cl.dispatch(op, (x, x, 1))": lambda: cl.dispatch(op, (x, x, 1)),
    "binding: cl.add(x, x)": lambda: cl.add(x, x),
    "operator: x + x": lambda: x + x,
}
times = {name: per_call_us(fn) for name, fn in levels.items()}
for name, us in times.items():
    print(f"{name:40} {us:6.2f} µs")

fig, ax = plt.subplots(figsize=(7, 2.6))
ax.barh(list(times)[::-1], list(times.values())[::-1], color="#2b8cbe")
ax.set_xlabel("µs per call (10-element float32 add)")
ax.set_title("what each layer of the path costs")
fig.tight_layout()
plt.show()

# %% [markdown] id="measure-sizes-md"
# Now the whole call, `x + y`, against numpy's `a + b` as the tensors grow from 1 element to a million, and
# against real PyTorch's if it is installed (the course does not need it; to see PyTorch's line too, run
# `make oracle` in the course's folder: it installs `torch==2.13.0`, CPU build).
#
# A fair comparison runs each library **in a process of its own**: numpy, course_lib and PyTorch each start
# thread pools, and in one process they get in each other's way (PyTorch's times, measured beside numpy's,
# can come out several times too slow). So the next cells use the course's benchmark harness,
# `bench/harness.py` (the one `make bench` runs): for each library it starts a fresh Python process, limits it
# to one thread (numpy's add uses one, so we compare per-call costs, not parallelism) and times the same
# workloads, defined in `bench/chapters.py`. It takes about half a minute. Left: time per call. Right:
# course_lib's time divided by numpy's.

# %% id="measure-torch" grader_runs="harness = None  # `course grade` skips the measurement (it starts a process per library)"
import importlib.util
import sys
from pathlib import Path

# the course's bench/ folder: next to notebooks/ and solutions/
bench_dir = next((p / "bench" for p in (Path.cwd(), *Path.cwd().parents) if (p / "bench" / "harness.py").is_file()),
                 None)
harness = None
if bench_dir is not None:
    sys.path.insert(0, str(bench_dir))
    import harness

    import chapters as bench_chapters
has_torch = importlib.util.find_spec("torch") is not None
print("benchmark harness:",
      "found" if harness is not None else "not found (run this notebook from the course's folder)")
print("comparing with PyTorch:", "yes" if has_torch else "no (not installed: `make oracle` installs it)")

# %% id="measure-sizes"
from matplotlib.ticker import FuncFormatter

if harness is None:
    print("measurement skipped: the benchmark harness was not found")
else:
    rows = harness.run(bench_chapters.family("ch01 add"), threads="1", rounds=1, repeat=5)
    sizes = list(bench_chapters.ADD_SIZES)
    results = {lib: [row["times"][lib] * 1e6 for row in rows]
               for lib in ("numpy", "course_lib", "torch") if all(lib in row["times"] for row in rows)}

    print(f"{'elements':>10} " + " ".join(f"{k:>12}" for k in results) + "   course_lib / numpy")
    for i, n in enumerate(sizes):
        row = " ".join(f"{results[k][i]:10.2f}µs" for k in results)
        print(f"{n:>10} {row}   {results['course_lib'][i] / results['numpy'][i]:8.1f}x")

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, ts in results.items():
        ax1.loglog(sizes, ts, marker="o", label=name)
    ax1.set_xlabel("elements per tensor")
    ax1.set_ylabel("µs per add")
    ax1.legend()
    ax1.set_title("time per call (one process per library, 1 thread)")
    ax2.loglog(sizes, [c / n for c, n in zip(results["course_lib"], results["numpy"])], marker="o", color="C1")
    ax2.axhline(1, color="grey", lw=0.8)
    ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax2.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax2.set_xlabel("elements per tensor")
    ax2.set_ylabel("course_lib / numpy")
    ax2.set_title("overhead ratio")
    fig.tight_layout()
    plt.show()

# %% [markdown] id="summary"
# What to read in the plots:
#
# - **Small tensors: overhead dominates.** Up to about a thousand elements numpy's time barely moves: it is
#   the fixed cost of one call into C. course_lib adds a few microseconds of Python on top (the layers in the
#   bar chart), so the ratio is large. PyTorch's overhead is C++ argument parsing, dispatch and making the
#   result tensor: a few microseconds per op (2 to 4 on the 2-core machine this course is tested on), so on
#   tiny tensors it is somewhat faster than course_lib and several times slower than numpy.
# - **Large tensors: the kernel dominates.** From about 100,000 elements the time grows with the size and
#   course_lib's ratio approaches 1: the same numpy loop does the work, and a few microseconds of Python are
#   lost in it. At a million elements the time is mostly memory traffic and getting fresh memory for the
#   result, so the three lines can cross and swap from one run to the next. (With all its threads, PyTorch would split large adds across your CPU cores.)
#
# This is why course_lib's dispatcher must stay thin (no work per call that could be done once), and why real
# PyTorch programs are fast when they do few operations on large tensors, and slow when they do many on tiny
# ones. Compilers such as `torch.compile` attack the per-op overhead by fusing many small ops into one.
#
# ## Summary and what comes next
#
# - A **storage** is a flat typed buffer; a **tensor** is metadata over it: sizes, strides, offset, dtype,
#   device (plus, in PyTorch, a dispatch key set). Element `index` lives at `offset + Σ index[d]·stride[d]`,
#   and fresh tensors have contiguous strides `stride[i] = Π max(size[j], 1)` for `j > i`.
# - `tensor(data)` finds the shape from first items, the dtype from every number, and stores the numbers
#   recursively; ragged lists are only found while storing, hence PyTorch's error messages.
# - Every op is declared once with a schema; bindings are **generated** from it; the **dispatcher** sends each
#   call through modes, autograd and a backend kernel.
# - `result_type` sorts operands into three tiers (dimensioned tensors, 0-d tensors, Python numbers) and lets
#   a weaker tier matter only when its category is higher.
# - `import torch` loads the extension module `torch._C` (`PyInit__C` -> `initModule`); loading its libraries
#   registers every op with the dispatcher, and `initModule` turns the generated `PyMethodDef` tables into
#   `torch._C._VariableFunctions` (copied into `torch`) and the methods of `torch._C.TensorBase`. course_lib
#   does the same in Python: `@register` decorators fill `OPS` at import, beside generated, checked-in bindings.
#
# **Chapter 02 · Strides and views** makes the strides do the work: transpose, slicing, `expand` and `view`
# as new metadata over the same storage, when `view` must refuse and `reshape` has to copy, and broadcasting
# as stride 0.
#
# Grade this chapter with `course grade notebooks/01_tensor_and_storage.ipynb`.
