# ---
# jupyter:
#   course:
#     title: Compile
# ---

# %% [markdown] id="intro"
# # 08 · Compile: graph capture, guards, AOT autograd and a fusing code generator
#
# `torch.compile(model)` is one line. Behind it are three programs, each of which you could spend a career on,
# and each of which is built on the parts you have written in the chapters before:
#
# 1. **TorchDynamo** runs your Python and, as it goes, *records* the tensor operations into a graph. Python it
#    cannot record (an `if` on a tensor's value, a `print`) ends the graph: a **graph break**. What the graph
#    assumed about its inputs (shapes, dtypes, grad mode) is written down as **guards**, checked on every call.
# 2. **AOTAutograd** traces the backward pass *ahead of time* into the same graph, then cuts that joint graph
#    in two with a **min-cut**, deciding which forward values to keep for the backward and which to recompute.
# 3. **TorchInductor** groups the operations into **fused kernels** and generates their source code: one loop
#    that reads its inputs once and writes its outputs once, instead of one pass over memory per op.
#
# course_lib has all three (`course_lib.compile`, `course_lib._functorch`, `course_lib._inductor`), and in this
# chapter you write the core of each.
#
# **What you will build** (each a small function or class, checked against `course_lib`):
#
# - a dispatch mode that records every op into an FX `Graph`, and FX's `print_tabular` layout;
# - dead-code elimination, the first pass every compiler runs;
# - the split of a program at its graph breaks: what each graph takes and returns, which is what Dynamo's
#   *resume functions* receive;
# - guards: what to write down about the inputs, and the first one that fails, with a readable reason;
# - the min-cut that decides what the forward saves for the backward (with `networkx`);
# - the grouping of pointwise ops into fused kernels, and the Python source of one kernel, with its loop;
# - torchviz's `make_dot`, which draws the backward graph as Graphviz text; then you export chapter 04's ResNet
#   to an ONNX file and run it in onnxruntime.
#
# **Why it matters.** Knowing what the compiler sees tells you why a model compiles into 40 graphs instead of 1,
# why the second call with another batch size is slow again, why a compiled training step uses *less* memory,
# and when compiling is not worth it.
#
# *Prerequisites:* chapter 01 (the dispatcher, modes, the per-op cost you measured), chapter 03 (the autograd
# graph, saved tensors), chapter 04 (modules).
# *Expected time:* 3 hours.

# %% id="setup"
import dis
import math
import time
import timeit

import numpy as np

import course_lib as cl
from course import check
from course_lib import fx
from course_lib.utils import LoggingMode, TorchDispatchMode

# %% [markdown] id="torch-import-md"
# PyTorch itself is optional here. With it installed (`make oracle`, in the course's folder, installs
# `torch==2.13.0`, CPU build; restart the kernel afterwards), the last section runs the real `torch.compile` on
# the same example and prints its graphs beside course_lib's.

# %% id="torch-import" grader_runs="torch = None  # `course grade` skips the optional comparison with PyTorch"
try:  # PyTorch is optional: the last section compares with it when it is installed
    import torch
except ImportError:
    torch = None
print("PyTorch for comparison:",
      torch.__version__ if torch is not None else "not installed (`make oracle` installs it)")

# %% [markdown] id="why-md"
# ## 1 · What eager execution costs
#
# In chapter 01 you timed one `x + y` at every level of its path: a few microseconds of Python (binding,
# dispatcher, kernel, wrapping the result) around one numpy call. Two costs add up in a real program:
#
# - **per-op overhead**: those microseconds, paid once per op however small the tensors. A model made of many
#   small ops (a small MLP, an optimizer step over many parameters) spends most of its time there;
# - **memory traffic**: every op reads its inputs from memory and writes its result back. On a large tensor a
#   simple op such as `y * 1.5` does one multiplication per 8 bytes moved; the processor waits for memory,
#   not for arithmetic.
#
# Here is the chain of pointwise ops the course's benchmark uses (`bench/bench_compile.py`; eight distinct
# functions, twelve ops in all) on 4 million `float32` numbers: 16 MB per tensor. Eager, every op is a full pass
# over memory and leaves a fresh 16 MB temporary behind.

# %% id="why-chain"
def chain(lib, x):
    y = x * 1.5 + 0.5
    y = lib.sin(y) * y
    y = lib.exp(-lib.abs(y)) + y * y
    return lib.tanh(y) - 0.1 * y


class CountOps(TorchDispatchMode):
    """Counts the ops that reach the dispatcher."""

    def __init__(self):
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name)
        return func(*args)


x8 = cl.randn(8)
with CountOps() as counter:
    chain(cl, x8)
print(len(counter.names), "ops:", " ".join(counter.names))

# %% id="why-measure" grader_runs="print('`course grade` skips this timing')"
x_np = np.random.default_rng(0).standard_normal(4_000_000, dtype=np.float32)
x_cl = cl.from_numpy(x_np)
t_cl = min(timeit.repeat(lambda: chain(cl, x_cl), number=1, repeat=3))
t_np = min(timeit.repeat(lambda: chain(np, x_np), number=1, repeat=3))
moved = 12 * 2 * x_np.nbytes   # each op reads about one 16 MB array and writes one (some read two)
print(f"course_lib eager: {t_cl * 1e3:6.1f} ms   numpy: {t_np * 1e3:6.1f} ms   "
      f"(about {moved / 1e6:.0f} MB moved, {moved / t_np / 1e9:.1f} GB/s)")
print(f"one fused loop would read 16 MB and write 16 MB: {2 * x_np.nbytes / 1e6:.0f} MB")

# %% [markdown] id="why-notes"
# course_lib's eager time is numpy's: on 4M elements the dozen microseconds of Python per op vanish, and what is
# left is numpy making twelve passes over memory. No amount of dispatcher tuning helps; only doing the work in
# **one pass** does, and for that someone has to see the whole chain before running it. That someone is the
# compiler, and to see the chain it needs a **graph**.

# %% [markdown] id="dis-md"
# ## 2 · What Dynamo reads: bytecode
#
# The seed example of this chapter is PyTorch's own `toy_example`:

# %% id="toy-example"
def toy_example(a, b):
    x = a / (cl.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


dis.dis(toy_example)

# %% [markdown] id="dis-notes"
# Python runs a function as **bytecode** for a stack machine: `LOAD_FAST a` pushes the local `a`, `BINARY_OP`
# pops two values and pushes their sum or quotient, `STORE_FAST x` pops into the local `x`, and
# `POP_JUMP_IF_FALSE` jumps on the truth of what it pops. (The exact instructions differ between Python versions:
# 3.11 and later print `BINARY_OP`, 3.10 `BINARY_TRUE_DIVIDE`; 3.11 spells the jump `POP_JUMP_FORWARD_IF_FALSE`;
# yours are above.)
#
# TorchDynamo hooks into CPython's frame evaluation (PEP 523) and, instead of letting CPython run these
# instructions, **interprets them itself** in Python (`InstructionTranslator` in
# `torch/_dynamo/symbolic_convert.py`). Each value on its stack is a `VariableTracker`: `TensorVariable` for a
# tensor, `ConstantVariable` for `1`, `TorchInGraphFunctionVariable` for `torch.abs`. When an instruction applies
# a tensor function to `TensorVariable`s, Dynamo adds a node to an FX graph instead of computing anything. Then
# comes `POP_JUMP_IF_FALSE` on a `TensorVariable` (`b.sum() < 0`): the jump depends on a value no one has
# computed. Dynamo stops (`generic_jump TensorVariable()` is the reason it gives), compiles the graph so far,
# and emits new bytecode that runs the graph, does the jump in plain Python, and calls a **resume function**
# (`torch/_dynamo/resume_execution.py`) for the rest of the function, which Dynamo will capture in turn.
#
# **course_lib captures another way.** Interpreting bytecode ties the compiler to the bytecode of each Python
# version. `course_lib.compile` instead runs your Python for real and records at the **dispatcher**: every op that
# reaches it while capture is on is recorded into the graph and returns a *lazy* tensor (right shape and dtype,
# no data yet). When Python needs a lazy tensor's value (`if t:`, `.item()`, printing), the graph so far is
# compiled and run, the lazy tensors get their data, and capture goes on with a fresh graph. That is the level
# LazyTensor works at (`torch/csrc/lazy`), and the graphs and breaks come out as Dynamo's. To get there, start with
# the recording itself.

# %% [markdown] id="record-md"
# ## 3 · Recording through the dispatcher
#
# In chapter 01 every op went through one function, the dispatcher, and the first thing it tries is the stack of
# **modes**. A mode sees each op as `(func, args)`: the registry's op and its arguments in schema order, defaults
# included. `LoggingMode` prints them:

# %% id="logging-demo"
a, b = cl.randn(10), cl.randn(10)
with LoggingMode():
    x = a / (cl.abs(a) + 1)
    s = b.sum() < 0

# %% [markdown] id="fx-md"
# Recording instead of printing gives a graph. `course_lib.fx` mirrors `torch.fx`: a `Graph` is a list of `Node`s
# in program order, each with
#
# | field | meaning |
# |---|---|
# | `op` | the opcode: `placeholder` (an input), `call_function`, `call_method`, `call_module`, `get_attr`, `output` |
# | `name` | unique in the graph; the variable name in the generated code (`abs_1`, because `abs` is a builtin) |
# | `target` | what it calls: a function, an op of the registry, a method name |
# | `args`, `kwargs` | its arguments; an argument that is a `Node` is the value that node computed |
# | `users` | the nodes that use its value (the other direction of the same edges) |
#
# `make_fx` (`course_lib/fx/experimental/proxy_tensor.py`, as in PyTorch) runs a function under a recording mode.
# A `GraphModule` turns the graph back into Python source (`.code`), which runs:

# %% id="make-fx-demo"
from course_lib.fx.experimental.proxy_tensor import make_fx


def first_part(a, b):
    x = a / (cl.abs(a) + 1)
    return b.sum() < 0, x


gm = make_fx(first_part)(a, b)
gm.graph.print_tabular()
print(gm.code)
print("the generated code runs:", np.allclose(gm(a, b)[1].numpy(), first_part(a, b)[1].numpy()))

# %% [markdown] id="ex-08-1-task"
# ## Exercise 08.1 · GraphRecorder (2 points)
#
# Write the recording mode yourself. `GraphRecorder` is a `TorchDispatchMode` with a `Graph` (`self.graph`) and a
# dict `self.node_of` from `id(tensor)` to the node whose value that tensor is. Fill in:
#
# - `add_input(t, name)`: add a placeholder called `name` (`self.graph.placeholder(name)`), remember it as `t`'s
#   node, and return it;
# - `arg(a)`: the node argument for a value: the node of a recorded tensor; a list or tuple mapped element by
#   element (same type); anything else (a number, `None`, a dtype) unchanged;
# - `__torch_dispatch__(func, types, args, kwargs)`: run the op (`func(*args)`: inside the method the mode is off,
#   so this computes), add a node `self.graph.call_function(func, <args mapped by arg>)`, remember the result
#   tensor as that node's value, and return the result;
# - `finish(outputs)`: add the output node, returning the tuple of `outputs` mapped by `arg`, and return the graph.
#
# The check records fresh random programs, calls `add_input` for each input in order, runs the program under
# your mode and compares your graph, node by node (opcode, name, target, arguments), with the one course_lib's
# own recorder makes, and the values your mode returned with eager ones. Don't use `make_fx` or
# `ProxyTorchDispatchMode` (the check forbids `make_fx`, and fails if the mode's `__torch_dispatch__`, `node_of`
# or `track` runs while your recorder records: subclassing the mode, or entering it for yours, counts too).
#
# *Hint:* keep every recorded tensor alive (`self.keep`): if a temporary tensor is freed, Python may give its
# `id` to a new one, and your dict would map it to the wrong node. Names need no work: `Graph` makes `abs_1`,
# `add_1` by itself.

# %% id="ex-08-1-solution" tags=["solution"] exercise="08.1"
import course_lib as cl
from course_lib import fx
from course_lib.utils import TorchDispatchMode


class GraphRecorder(TorchDispatchMode):
    """A dispatch mode that records every op it sees as a node of `self.graph`."""

    def __init__(self):
        self.graph = fx.Graph()
        self.node_of = {}   # id(tensor) -> the Node whose value it is
        self.keep = []      # every recorded tensor, kept alive so that no id is reused

    def add_input(self, t, name):
        """Make `t` an input of the graph: a placeholder called `name`. Returns the node."""
        ### BEGIN SOLUTION
        node = self.graph.placeholder(name)
        self.node_of[id(t)] = node
        self.keep.append(t)
        return node
        ### END SOLUTION

    def arg(self, a):
        """The node argument for `a`: a recorded tensor's node; lists and tuples mapped; anything else as is."""
        ### BEGIN SOLUTION
        if isinstance(a, cl.Tensor):
            return self.node_of[id(a)]
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a
        ### END SOLUTION

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ### BEGIN SOLUTION
        out = func(*args)
        node = self.graph.call_function(func, tuple(self.arg(a) for a in args))
        if isinstance(out, cl.Tensor):
            self.node_of[id(out)] = node
            self.keep.append(out)
        return out
        ### END SOLUTION

    def finish(self, outputs):
        """Add the output node (the tuple `outputs`, mapped by `arg`) and return the graph."""
        ### BEGIN SOLUTION
        self.graph.output(tuple(self.arg(t) for t in outputs))
        return self.graph
        ### END SOLUTION


# %% id="ex-08-1-check" tags=["check", "nbval-check-output"] exercise="08.1" points=2
check("08.1", GraphRecorder)

# %% id="recorder-demo"
try:
    recorder = GraphRecorder()
    recorder.add_input(a, "a")
    recorder.add_input(b, "b")
    with recorder:
        x = a / (cl.abs(a) + 1)
        lt = b.sum() < 0
    graph = recorder.finish((lt, x))
    print(graph)
    print(fx.GraphModule(cl.nn.Module(), graph).code)
except NotImplementedError:
    print("(do exercise 08.1 first)")

# %% [markdown] id="recorder-pytorch"
# > **In PyTorch:** `make_fx` in `torch/fx/experimental/proxy_tensor.py` records with
# > `ProxyTorchDispatchMode`, whose tracer keeps the tensor-to-proxy map in a `WeakTensorKeyDictionary`
# > (`tracer.tensor_tracker`: no `id` reuse problem) and records `aten` overloads such as `aten.add.Tensor`.
# > Dynamo records at a higher level: its nodes are the Python callables you wrote (`operator.add` for `+`,
# > `torch.abs`, `call_method sum`), which is why its table in section 4 shows `<built-in function add>`.

# %% [markdown] id="tabular-md"
# ### The table
#
# `graph.print_tabular()` prints one row per node. FX hands the rows to the `tabulate` package, in its default
# *simple* format (and PyTorch refuses to print the table without it; course_lib lays it out the same way itself
# when `tabulate` is missing). The layout:
#
# - five columns, headed `opcode`, `name`, `target`, `args`, `kwargs`;
# - each column as wide as its widest cell, and at least as wide as its header **plus two**;
# - cells left-aligned, padded with spaces to the column's width, columns separated by **two** spaces;
# - under the header, a row of dashes as wide as each column;
# - trailing spaces removed from every line.

# %% [markdown] id="ex-08-2-task"
# ## Exercise 08.2 · tabular (1 point)
#
# Write `tabular(graph)`: the text `graph.print_tabular()` prints, as a string with lines joined by `"\n"`
# (no final newline). The cells of a node are `str()` of its `op`, `name`, `target`, `args` and `kwargs`, except
# that a target that is an op of course_lib's registry (an `OpDef`) shows as `aten.<its name>`. The check builds
# random graphs (from `make_fx` and from `symbolic_trace`) and compares your text with the library's, character
# by character. Don't call `print_tabular`, `_tabulate_simple` or `tabulate` (the check forbids them).
#
# *Hint:* `str(node.args)` gives `(abs_1, 1, 1)`, because a node's `repr` is its name. `"abc".ljust(6)` pads.

# %% id="ex-08-2-solution" tags=["solution"] exercise="08.2"
from course_lib._ops.registry import OpDef


def tabular(graph):
    """graph.print_tabular()'s text: FX's column layout, as a string."""
    ### BEGIN SOLUTION
    headers = ["opcode", "name", "target", "args", "kwargs"]
    rows = [[n.op, n.name, f"aten.{n.target.name}" if isinstance(n.target, OpDef) else str(n.target),
             str(n.args), str(n.kwargs)] for n in graph.nodes]
    widths = [max([len(h) + 2] + [len(row[j]) for row in rows]) for j, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(row) for row in rows])
    ### END SOLUTION


# %% id="ex-08-2-check" tags=["check", "nbval-check-output"] exercise="08.2" points=1
check("08.2", tabular)

# %% [markdown] id="dce-md"
# ### Passes: a graph is something you can rewrite
#
# A graph can be transformed before it runs. The passes every compiler starts with are small:
#
# - **dead-code elimination** (DCE) removes nodes whose value nothing uses;
# - **common-subexpression elimination** (CSE) computes each repeated expression once;
# - **constant folding** computes at compile time what does not depend on the inputs.
#
# DCE has one subtlety. "Nothing uses its value" is not enough to remove a node: `x.add_(1)` changes `x`,
# `print(x)` prints, `cl.rand_like(x)` advances the random generator. Such nodes are **impure** and stay. Here is
# a program with a dead chain, an in-place op nobody reads, and a repeated expression, before and after
# course_lib's passes:

# %% id="passes-demo"
from course_lib.fx.passes import common_subexpression_elimination, dead_code_elimination


def messy(x, y):
    (x * 2).exp()               # dead: nothing reads it
    y.add_(1)                   # in place: its result is unused, but it changes y
    return (x + y) * (x + y)    # x + y twice


gm = make_fx(messy)(cl.randn(3), cl.randn(3))
print(gm.code)
dead_code_elimination(gm)
common_subexpression_elimination(gm)
print(gm.code)

# %% [markdown] id="ex-08-3-task"
# ## Exercise 08.3 · eliminate_dead_code (2 points)
#
# Write `is_impure(node)` and `eliminate_dead_code(graph)`.
#
# `is_impure(node)` is true for a `placeholder` and the `output`, for a `call_function` of `print`, and for a
# `call_function` of a registry op that works in place (its `name` ends in a single `_`, like `add_`; not `__`)
# or is random (its name is in `RANDOM_OPS`). Everything else is pure.
#
# `eliminate_dead_code(graph)` removes, **in place**, every pure node that has no users, including nodes that
# lose their last user because a later node was removed, and returns how many it removed. Remove a node with
# `graph.erase_node(node)` (it also takes the node out of its inputs' `users`). The check builds random graphs
# with dead chains, unused inputs, in-place ops and prints, and compares what is left (names and number of users)
# with what `Graph.eliminate_dead_code` leaves; don't call it, `Node.is_impure` or `dead_code_elimination` (the
# check fails if they run during your function, also when another course_lib function calls them for you).
#
# *Hint:* one walk is enough if it goes **backwards** (`reversed(graph.nodes)`): a node's users all come after
# it, so by the time you reach it, every dead user is already gone.

# %% id="ex-08-3-solution" tags=["solution"] exercise="08.3"
# course_lib's random ops, by name (course_lib/fx/node.py)
RANDOM_OPS = {"rand", "randn", "randint", "randperm", "randint_like", "rand_like", "randn_like", "normal",
              "multinomial", "bernoulli", "poisson", "dropout", "uniform_", "normal_"}


def is_impure(node):
    """Must the node stay even when nothing uses its value?"""
    ### BEGIN SOLUTION
    if node.op in ("placeholder", "output"):
        return True
    if node.op != "call_function":
        return False
    if node.target is print:
        return True
    name = getattr(node.target, "name", "")
    return (name.endswith("_") and not name.endswith("__")) or name in RANDOM_OPS
    ### END SOLUTION


def eliminate_dead_code(graph):
    """Remove the pure nodes nothing uses (in place); returns how many were removed."""
    ### BEGIN SOLUTION
    removed = 0
    for node in reversed(graph.nodes):
        if not node.users and not is_impure(node):
            graph.erase_node(node)
            removed += 1
    return removed
    ### END SOLUTION


# %% id="ex-08-3-check" tags=["check", "nbval-check-output"] exercise="08.3" points=2
check("08.3", eliminate_dead_code)

# %% [markdown] id="dce-pytorch"
# > **In PyTorch:** `Graph.eliminate_dead_code` and `Node.is_impure` in `torch/fx/graph.py` and
# > `torch/fx/node.py`. For a `call_function`, `is_impure` asks `torch/_library/utils.py`, which checks a list of
# > side-effectful functions, the op's schema (`aten.add_` mutates its first argument: `schema.is_mutable`) and
# > random ops. AOTAutograd runs it on the graphs it traces (`torch/_functorch/_aot_autograd/graph_capture.py`),
# > and Dynamo prunes unused inputs and trivially dead nodes when it finishes a graph
# > (`OutputGraph.remove_unused_graphargs`).

# %% [markdown] id="breaks-md"
# ## 4 · Graph breaks and resuming
#
# Now the real thing. `course_lib.compile(fn, backend=...)` returns a function that captures while it runs. A
# **backend** is any callable `backend(gm, example_inputs)` that receives each captured graph as a `GraphModule`
# with real example inputs and returns something to call instead of it, exactly PyTorch's contract. The seed's
# `my_compiler` prints the table and returns the graph's own `forward`:

# %% id="compile-toy"
import course_lib._dynamo


def my_compiler(gm, example_inputs):
    print("my_compiler() called with FX graph:")
    gm.graph.print_tabular()
    return gm.forward   # a Python callable


cl._dynamo.reset()
compiled_toy = cl.compile(toy_example, backend=my_compiler)
for _ in range(100):
    a, b = cl.randn(10), cl.randn(10)
    assert np.array_equal(compiled_toy(a, b).numpy(), toy_example(a, b).numpy())

# %% [markdown] id="breaks-notes"
# Three graphs over a hundred calls, each compiled once:
#
# 1. `a / (abs(a) + 1)` and `b.sum() < 0`, with **two outputs**: `lt`, the value the `if` needs, and `x`, which
#    the rest of the function still needs. The graph ends at the `if` because Python asked for `bool(lt)`;
# 2. `b = b * -1` and `x * b`, the path where the sum was negative;
# 3. `x * b`, the other path.
#
# The names are Dynamo's: inputs are `l_a_` ("local `a`", `L['a']` in a guard), and a node takes the name of the
# variable it was stored in (`x`, and `b` for `b * -1`, so the product after it is `mul_1`). Graphs 2 and 3 are
# what Dynamo's resume function captures: its inputs are the values still alive at the break (`b` and `x`),
# in the order the code uses them.
#
# `explain` captures once and reports what happened, with the user's file and line for each break:

# %% id="explain-demo"
explanation = cl.compiler.explain(toy_example)(cl.randn(10), cl.randn(10))
print(explanation)

# %% [markdown] id="breaks-more-md"
# What breaks a graph: anything that needs a value no one has computed yet (`if tensor:`, `.item()`,
# `.tolist()`, `int(t)`), a `print` (Dynamo breaks on `print` even with no tensor in it), and ops whose result
# shape depends on the data (`nonzero`, indexing with a boolean mask). Each break costs a graph exit, a return
# to Python and a new graph; a model with a break inside its loop compiles into many small graphs and gains
# little. `fullgraph=True` turns the first break into an error, which is how you find them:

# %% id="breaks-more-demo"
def noisy(x):
    y = x.exp()
    print("mean so far:", y.mean().item())
    return y * 2


for reason in cl.compiler.explain(noisy)(cl.randn(5)).break_reasons:
    print(f"break at line {reason.user_stack[-1].lineno}: {reason.reason}")
try:
    cl.compile(noisy, backend="eager", fullgraph=True)(cl.randn(5))
except Exception as e:
    print(f"\nfullgraph=True: {type(e).__name__}: {str(e).splitlines()[0]}")

# %% [markdown] id="ex-08-4-task"
# ## Exercise 08.4 · split_at_breaks (2 points)
#
# Take a program as the list of ops it ran, in order, and the values where Python broke the graph; cut it into
# the graphs a capture makes. A program is a dict:
#
# ```python
# {"inputs": ["a", "b"],
#  "ops": [["abs_1", "abs", ["a"]], ["add", "add", ["abs_1", 1]], ["x", "div", ["a", "add"]],
#          ["sum_1", "sum", ["b"]], ["lt", "lt", ["sum_1", 0]], ["mul", "mul", ["x", "b"]]],
#  "output": "mul"}
# ```
#
# Each op is `[name, target, args]`; an argument that is a string names an input or an earlier op's value, any
# other argument (a number) is a constant. `breaks` lists the names of the values whose use in Python ended a
# graph, in program order (`["lt"]` here). Write `split_at_breaks(program, breaks)`, returning one dict per graph,
# `{"inputs": [...], "ops": [...], "outputs": [...]}`:
#
# - graph `j` holds the ops after break `j - 1` up to **and including** break `j`; the last graph the ops after
#   the last break (each op keeps its `[name, target, args]`);
# - a graph's **inputs** are the values it reads and does not compute (inputs of the program, or values earlier
#   graphs computed), in the order of their first use in its ops;
# - the **outputs** of every graph but the last: first the break value, then every other value the graph computes
#   that a later graph reads (the next one or any after it), in op order. The last graph's output is the
#   program's `output` (`[output]`), which the last graph computes.
#
# For the program above: `[{"inputs": ["a", "b"], "ops": <the first five>, "outputs": ["lt", "x"]},
# {"inputs": ["x", "b"], "ops": [<mul>], "outputs": ["mul"]}]`, Dynamo's graphs 1 and 3.
#
# *Hint:* find each break's position, slice the ops, then for each slice collect what it reads, what it
# computes, and what the slices after it read.

# %% id="ex-08-4-solution" tags=["solution"] exercise="08.4"
def split_at_breaks(program, breaks):
    """Cut the recorded ops at the breaks: one {"inputs", "ops", "outputs"} dict per graph."""
    ### BEGIN SOLUTION
    ops = program["ops"]
    position = {op[0]: k for k, op in enumerate(ops)}
    ends = [position[name] + 1 for name in breaks] + [len(ops)]
    pieces, start = [], 0
    for end in ends:
        pieces.append(ops[start:end])
        start = end
    graphs = []
    for j, piece in enumerate(pieces):
        computed = [op[0] for op in piece]
        inputs = []
        for _, _, args in piece:
            for a in args:
                if isinstance(a, str) and a not in computed and a not in inputs:
                    inputs.append(a)
        if j == len(pieces) - 1:
            outputs = [program["output"]]
        else:
            later = {a for p in pieces[j + 1:] for _, _, args in p for a in args if isinstance(a, str)}
            outputs = [breaks[j]] + [name for name in computed if name in later and name != breaks[j]]
        graphs.append({"inputs": inputs, "ops": [list(op) for op in piece], "outputs": outputs})
    return graphs
    ### END SOLUTION


# %% id="ex-08-4-check" tags=["check", "nbval-check-output"] exercise="08.4" points=2
check("08.4", split_at_breaks)

# %% [markdown] id="breaks-pytorch"
# > **In PyTorch:** `generic_jump` in `torch/_dynamo/symbolic_convert.py` (the handler of `POP_JUMP_IF_FALSE`
# > and its kin) meets the jump on a tensor and calls `OutputGraph.compile_subgraph`
# > (`torch/_dynamo/output_graph.py`) with the live values of the stack and the locals; `create_call_resume_at`
# > generates the resume function's bytecode (`torch/_dynamo/resume_execution.py`: `ContinueExecutionCache`),
# > named `torch_dynamo_resume_in_toy_example_at_<line of the if>` in the logs (`TORCH_LOGS=bytecode` shows it).
# > In course_lib the Python itself resumes: `course_lib/_dynamo` ends the graph when a lazy tensor is read, and
# > the outputs are the lazy tensors still alive.

# %% [markdown] id="guards-md"
# ## 5 · Guards
#
# A compiled graph is only right for inputs like the ones it was captured with: the same shapes (the generated
# code has them baked in), dtypes, `requires_grad` (a backward graph or not), grad mode, and the Python constants
# the code branched on. Dynamo writes these assumptions down as **guards** and checks them before every call: all
# pass, and the cached graph runs; one fails, and the function is captured again, a **recompilation**. Here are
# the guards of toy_example's graphs:

# %% id="guards-demo"
for guard in explanation.out_guards:
    print(guard)

# %% [markdown] id="recompile-md"
# A call with another shape fails a guard and recompiles. After `recompile_limit` entries (8 per function, as
# `torch._dynamo.config.recompile_limit`, whose older name `cache_size_limit` still works) the function stops
# compiling and runs eagerly, with a warning.
# `dynamic=True` marks sizes as symbolic: the guards then check what the graph really depends on (the number of
# dimensions, which sizes are equal, which are 0 or 1) and not the sizes themselves.

# %% id="recompile-demo"
import warnings

from course_lib._dynamo.testing import CompileCounter


def scale(x, factor):
    return x * factor + 1


for dynamic in (False, True):
    cl._dynamo.reset()
    counter = CompileCounter()
    fn = cl.compile(scale, backend=counter, dynamic=dynamic)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(2, 14):
            fn(cl.randn(n), 2.0)
    print(f"dynamic={dynamic}: 12 sizes -> {counter.frame_count} compilations, {len(caught)} warnings")
    if caught:
        print("   ", str(caught[0].message).splitlines()[0])

# %% [markdown] id="ex-08-5-task"
# ## Exercise 08.5 · Guards (2 points)
#
# Write a class `Guards`. `Guards(args)` builds, in `self.guards`, the list of guards for the positional
# arguments `args`, as tuples `(kind, index, expected)`, in this order:
#
# 1. `("grad_mode", None, cl.is_grad_enabled())`;
# 2. then, for each argument `i` in order, for a course_lib tensor: `("type", i, "Tensor")`,
#    `("dtype", i, t.dtype.name)`, `("device", i, str(t.device))`, `("shape", i, tuple(t.shape))`,
#    `("requires_grad", i, t.requires_grad)`; for anything else (a Python constant):
#    `("type", i, type(v).__name__)`, `("value", i, v)`.
#
# `guards.check(args)` returns `None` when every guard holds for `args` and the current grad mode, else the
# reason the **first** failing guard gives, worded
# `f"{kind} of argument {i}: expected {expected!r}, got {actual!r}"` (and `f"grad_mode: expected {expected!r},
# got {actual!r}"` for grad mode). An argument's "type" is `"Tensor"` for any course_lib tensor, else
# `type(v).__name__`. `args` always has as many elements as the arguments the guards were built from.
#
# The helper `guard_value(kind, v)`, yours to fill in too, says what a guard of `kind` sees in the argument `v`
# (for `"grad_mode"`, `v` is `None` and the answer is the current grad mode); both methods use it.
#
# *Hint:* once the list is built, `check` is one loop: compute the actual value of each guard's kind, compare,
# return at the first difference. The order of the list is what makes "first" well defined (and why `type`
# comes before `dtype`: a float `2.0` has no dtype to compare).

# %% id="ex-08-5-solution" tags=["solution"] exercise="08.5"
import course_lib as cl


def guard_value(kind, v):
    """What a guard of `kind` sees in argument `v` (the grad mode for "grad_mode")."""
    ### BEGIN SOLUTION
    if kind == "grad_mode":
        return cl.is_grad_enabled()
    if kind == "type":
        return "Tensor" if isinstance(v, cl.Tensor) else type(v).__name__
    if kind == "dtype":
        return v.dtype.name
    if kind == "device":
        return str(v.device)
    if kind == "shape":
        return tuple(v.shape)
    if kind == "requires_grad":
        return v.requires_grad
    return v
    ### END SOLUTION


class Guards:
    """The assumptions a graph captured for `args` makes, and the first one later arguments break."""

    def __init__(self, args):
        ### BEGIN SOLUTION
        self.guards = [("grad_mode", None, cl.is_grad_enabled())]
        for i, v in enumerate(args):
            kinds = ("type", "dtype", "device", "shape", "requires_grad") if isinstance(v, cl.Tensor) \
                else ("type", "value")
            self.guards += [(kind, i, guard_value(kind, v)) for kind in kinds]
        ### END SOLUTION

    def check(self, args):
        """None if every guard holds, else the first failing guard's reason."""
        ### BEGIN SOLUTION
        for kind, i, expected in self.guards:
            actual = guard_value(kind, None if i is None else args[i])
            if actual != expected:
                what = kind if i is None else f"{kind} of argument {i}"
                return f"{what}: expected {expected!r}, got {actual!r}"
        return None
        ### END SOLUTION


# %% id="ex-08-5-check" tags=["check", "nbval-check-output"] exercise="08.5" points=2
check("08.5", Guards)

# %% id="guards-mine-demo"
try:
    guards = Guards((cl.randn(10), 2.0))
    print(guards.guards)
    for args in [(cl.randn(10), 2.0), (cl.randn(12), 2.0), (cl.randn(10), 3), (cl.randn(10, dtype=cl.float64), 2.0)]:
        print(guards.check(args))
    with cl.no_grad():
        print(guards.check((cl.randn(10), 2.0)))
except NotImplementedError:
    print("(do exercise 08.5 first)")

# %% [markdown] id="guards-pytorch"
# > **In PyTorch:** `torch/_dynamo/guards.py` builds the guards (`GuardBuilder.TENSOR_MATCH`, `CONSTANT_MATCH`,
# > `ID_MATCH`, `GLOBAL_STATE` for grad mode and friends) and compiles them into one C++ `GuardManager` tree, so
# > that checking a cached entry costs microseconds. `TORCH_LOGS=recompiles` prints the failing guard's reason on
# > each recompilation, worded much like yours (`tensor 'x' size mismatch at index 0. expected 10, actual 12`).
# > `torch._dynamo.config.recompile_limit` (formerly `cache_size_limit`, still an alias; 8 in torch 2.13) caps the
# > entries per code object.

# %% [markdown] id="joint-md"
# ## 6 · The backward, ahead of time, and what to save
#
# Dynamo's graphs are forward only. For training, **AOTAutograd** runs course_lib's own autograd engine (chapter 03)
# on the captured forward, under the recording mode and on meta tensors (shapes, no data), so the backward
# lands in the same graph: the **joint graph**. Its inputs are `primals_*` (the forward's inputs) and
# `tangents_*` (the gradients flowing in):

# %% id="joint-demo"
from course_lib._functorch import aot_function, default_partition, min_cut_rematerialization_partition
from course_lib._functorch.aot_autograd import trace_joint
from course_lib._functorch.partitioners import saved_values


def seed_fn(a, b):
    return a / (cl.abs(a) + 1) * b


a = cl.randn(1000, requires_grad=True)
b = cl.randn(1000, requires_grad=True)
joint = trace_joint(seed_fn, a, b)
print(joint.module.code)

# %% [markdown] id="partition-md"
# The joint graph has to be cut into a forward graph, which runs now and **saves** some values, and a backward
# graph, which runs later from those saved values and the tangents. *Which* values to save is a choice:
#
# - `default_partition` saves every forward value the backward reads (what eager autograd does: chapter 03's
#   saved tensors);
# - `min_cut_rematerialization_partition` saves as few bytes as it can and **recomputes** the rest in the
#   backward. Recomputing `abs`, `add` and `div` costs nothing in a fused kernel (they are a few instructions in
#   a loop the backward runs anyway), while saving them costs memory and memory traffic.

# %% id="partition-demo"
def show_saved(partition):
    saved = {}

    def fw(gm, example_inputs):
        return gm.forward

    def bw(gm, example_inputs):
        saved["names"] = saved_values(gm)
        return gm.forward

    f = aot_function(seed_fn, fw, bw, partition_fn=partition)
    f(a, b).sum().backward()
    return saved["names"]


print("default partition saves:", show_saved(default_partition))
print("min-cut partition saves:", show_saved(min_cut_rematerialization_partition))

# %% [markdown] id="mincut-md"
# ### The min-cut
#
# The partitioner turns the choice into a **minimum cut** in a flow network:
#
# - every joint-graph node `X` becomes **two** vertices, `X_in` and `X_out`, joined by an edge whose capacity is
#   the cost of saving `X` (its bytes, a little more the further it is from the backward);
# - each data edge `X -> Y` becomes `X_out -> Y_in` with infinite capacity;
# - backward nodes (those that depend on a tangent) are tied to the **sink**: `X_in -> sink`, infinite;
# - nodes that may not be recomputed (the inputs, matmuls, random ops, ...) hang from the **source**:
#   `source -> X_in`, infinite.
#
# Every path from source to sink is a way for forward data to reach the backward; a cut that separates them must
# cross each such path, and the only finite edges are `X_in -> X_out`. So a minimum cut is a cheapest set of
# values to save such that the backward can recompute everything else from them. Splitting each node in two is
# what puts the cost on the node (saving `X` once, however many users read it) rather than on each edge.
# Here is the network of `seed_fn` (infinite edges grey, the cut red):

# %% id="mincut-figure" grader_runs="print('`course grade` skips the figure')"
import copy

import matplotlib.pyplot as plt
import networkx as nx

from course_lib._functorch import partitioners as P
from course_lib.fx.passes import common_subexpression_elimination

jm = fx.GraphModule(joint.module, copy.deepcopy(joint.module.graph))
jm.graph.eliminate_dead_code()
common_subexpression_elimination(jm)
info = P.classify_nodes(jm, num_fwd_outputs=joint.num_fwd_outputs)
network, banned = P.build_flow_network(jm.graph, info)
cut_value, (reachable, _) = nx.minimum_cut(network, "source", "sink")
print(f"cut value {cut_value} (bytes, weighted); banned from recomputation: {sorted(n.name for n in banned)}")

layers = {"source": 0, "sink": 40}
for k, node in enumerate(jm.graph.nodes):
    layers[node.name + "_in"], layers[node.name + "_out"] = 2 * k + 1, 2 * k + 2
for v in network.nodes:
    network.nodes[v]["layer"] = layers.get(v, 39)
pos = nx.multipartite_layout(network, subset_key="layer", align="horizontal")
cut_edges = [(u, v) for u, v in network.edges if u in reachable and v not in reachable]
fig, ax = plt.subplots(figsize=(14, 4.5))
nx.draw_networkx(network, pos, ax=ax, node_size=60, font_size=7, arrows=True, edge_color="#cccccc")
nx.draw_networkx_edges(network, pos, edgelist=cut_edges, edge_color="red", width=2.5, ax=ax)
ax.set_title("min-cut flow network of a / (|a| + 1) * b: the red edges are the saved values")
ax.axis("off")
plt.show()

# %% [markdown] id="ex-08-6-task"
# ## Exercise 08.6 · min_cut_saved (2 points)
#
# Write `min_cut_saved(nodes)`. `nodes` lists the joint graph's nodes in graph order (the output node left out),
# each a dict:
#
# | key | value |
# |---|---|
# | `"name"` | the node's name |
# | `"users"` | the names of the nodes that read its value |
# | `"weight"` | the capacity of its `_in -> _out` edge (an `int`); `None`: it cannot be saved (infinite) |
# | `"banned"` | `True` if it may not be recomputed (tie it to the source) |
# | `"backward"` | `True` for a backward node (tie it to the sink; it gets no other edge of its own) |
#
# Build the network with `networkx` (`nx.DiGraph()`, `add_edge(u, v, capacity=c)`, `math.inf` for infinite) from
# the rules above: for a backward node only `name_in -> "sink"`; for every other node `name_in -> name_out`
# (its weight), `name_out -> user_in` for each user, and `"source" -> name_in` if it is banned. Cut it with
# `nx.minimum_cut(G, "source", "sink")`, which returns `(value, (reachable, non_reachable))`, and return the names
# of the saved nodes (`name_in` reachable, `name_out` not), in graph order. The check compares with course_lib's
# partitioner on the joint graphs of random functions and of the two the fact sheet records: `a / (|a| + 1) * b`
# saves only `primals_1, primals_2`, `cos(cos(x))` only `primals_1`, as in PyTorch. Use `nx.minimum_cut`; don't
# call `solve_min_cut`, `build_flow_network` or `min_cut_rematerialization_partition` (the check forbids them).
#
# *Hint:* networkx adds a vertex the first time an edge mentions it; the cut edges are exactly the
# `_in -> _out` edges from `reachable` to `non_reachable`.

# %% id="ex-08-6-solution" tags=["solution"] exercise="08.6"
import math

import networkx as nx


def min_cut_saved(nodes):
    """The names of the values a min-cut partition saves, in graph order."""
    ### BEGIN SOLUTION
    g = nx.DiGraph()
    for node in nodes:
        name = node["name"]
        if node["backward"]:
            g.add_edge(name + "_in", "sink", capacity=math.inf)
            continue
        weight = math.inf if node["weight"] is None else node["weight"]
        g.add_edge(name + "_in", name + "_out", capacity=weight)
        if node["banned"]:
            g.add_edge("source", name + "_in", capacity=math.inf)
        for user in node["users"]:
            g.add_edge(name + "_out", user + "_in", capacity=math.inf)
    _, (reachable, non_reachable) = nx.minimum_cut(g, "source", "sink")
    return [node["name"] for node in nodes
            if node["name"] + "_in" in reachable and node["name"] + "_out" in non_reachable]
    ### END SOLUTION


# %% id="ex-08-6-check" tags=["check", "nbval-check-output"] exercise="08.6" points=2
check("08.6", min_cut_saved)

# %% [markdown] id="mincut-pytorch"
# > **In PyTorch:** `min_cut_rematerialization_partition` in `torch/_functorch/partitioners.py` builds this network
# > (`solve_min_cut`), with the weights of `get_node_weight` (bytes x `1.1 ** dist_from_bw`, doubled for a value
# > that would not be materialised anyway) and the bans of `should_ban_recomputation`. It is the default
# > partitioner of `torch.compile` for training; `torch._functorch.config.activation_memory_budget` below 1.0 makes
# > it save even less, recomputing more.

# %% [markdown] id="fusion-md"
# ## 7 · Fusion and the generated kernel
#
# The last stage turns a graph into code. course_lib's backend, `course_lib._inductor.compile_fx`, does what
# Inductor does, in miniature: it lowers the graph to a small set of primitive ops, **groups** pointwise ops into
# fused kernels, plans buffers by liveness (a dead buffer of the right size is reused), and generates each kernel
# as Python source with an explicit loop, compiled by numba. Here is the code for `toy_example`'s first graph and
# for the chain of section 1. (Compiling with numba takes a second or two per kernel.)

# %% id="inductor-demo" tags=["long"] grader_runs="print('`course grade` skips the numba compilation')"
from course_lib._inductor import compile_fx

compiled = compile_fx(make_fx(first_part)(a.detach(), b.detach()), [a.detach(), b.detach()])
compiled.print_code()

x_small = cl.randn(1000)
compiled_chain = compile_fx(make_fx(lambda x: chain(cl, x))(x_small), [x_small])
compiled_chain.print_code()

# %% [markdown] id="fusion-rule-md"
# The whole chain of section 1 is **one kernel**, reading `x` once and writing the result once; the intermediate
# values live in local variables of the loop bodies, not in arrays. The body is split in two loops (sin and exp
# in the first, tanh in the second), which run block by block, 4096 elements at a time: the one value the first
# loop leaves for the second goes through the result buffer while it is still in the cache. (The `big` counter is
# a detail of course_lib's fast `sinf`: a last, exact loop runs only for huge arguments.)
#
# The first graph is one kernel too, of another kind: `sum` is a **reduction**, and course_lib's scheduler lets a
# reduction join the group that computes its input, as a *row kernel* (a loop over rows with inner loops over the
# columns; here one row). That is how a LayerNorm becomes one kernel instead of a dozen passes. Ops with no loop
# body (a matmul, a convolution) are called through course_lib's own kernels (*extern* calls, in Inductor's words).
#
# Start with the basic rule, the one course_lib's first scheduler followed (`course_lib/_inductor/scheduler.py`
# before row kernels) and the core of the current one. Walk the ops in program order:
#
# - a **pointwise** op of the same shape as the open group joins it; of another shape, it closes the group and
#   opens a new one;
# - any other op (a reduction, a matmul, an op with no loop body) is a step of its own. If it reads nothing the
#   open group computes, it can run *before* the group, and the group stays open (it is "hoisted"); if it reads
#   a value of the open group, the group has to be finished first: close it, then the op. (Fusing *across* it
#   would be wrong: the ops after a reduction need its complete result, which exists only after a whole pass.)
#
# Closing a group appends to the schedule, in this order, the hoisted ops waiting, then the group.

# %% [markdown] id="ex-08-7-task"
# ## Exercise 08.7 · fusion_groups (2 points)
#
# Write `fusion_groups(nodes)`. Each node is a dict `{"name", "kind", "inputs", "shape"}`, in program order;
# `kind` is `"input"`, `"pointwise"`, `"reduction"` or `"extern"`; `inputs` are the names it reads; `shape` is a
# tuple. Return the schedule: a list of steps, each a list of names: a group of pointwise nodes in program order,
# or a single reduction or extern node `[name]`. Inputs are not steps. Follow the rule above exactly, hoisting
# included. The check runs random programs and compares with the schedule that rule gives.
#
# *Hint:* keep the open group (a list and its shape) and a list of hoisted steps; write a small `close()` that
# flushes both into the schedule.

# %% id="ex-08-7-solution" tags=["solution"] exercise="08.7"
def fusion_groups(nodes):
    """The schedule: groups of fused pointwise nodes and single reduction/extern steps."""
    ### BEGIN SOLUTION
    steps, hoisted = [], []
    group, shape = None, None

    def close():
        nonlocal group
        steps.extend(hoisted)
        hoisted.clear()
        if group is not None:
            steps.append(group)
        group = None

    for node in nodes:
        if node["kind"] == "input":
            continue
        if node["kind"] == "pointwise":
            if group is None or shape != node["shape"]:
                close()
                group, shape = [], node["shape"]
            group.append(node["name"])
        elif group is not None and not any(name in group for name in node["inputs"]):
            hoisted.append([node["name"]])
        else:
            close()
            steps.append([node["name"]])
    close()
    return steps
    ### END SOLUTION


# %% id="ex-08-7-check" tags=["check", "nbval-check-output"] exercise="08.7" points=2
check("08.7", fusion_groups)

# %% [markdown] id="kernel-md"
# ### One kernel's source
#
# A fused kernel is a loop over the flattened index `i`: load each input once, compute the chain in local
# variables, store only what later steps read. For the chain `t0 = x * 1.5; t1 = t0 + 0.5; t2 = sin(t1)`
# with `t2` read later:
#
# ```python
# def kernel0(x, out_t2):
#     for i in range(4000000):
#         x_i = x[i]
#         t0 = x_i * 1.5
#         t1 = t0 + 0.5
#         t2 = math.sin(t1)
#         out_t2[i] = t2
# ```
#
# In plain Python that loop is hopelessly slow (a few hundred nanoseconds per element). It is written that way
# because a compiler for loops (numba here, a C++ compiler or Triton in PyTorch) turns it into machine code that
# keeps `t0` and `t1` in registers and vectorises the loop.

# %% [markdown] id="ex-08-8-task"
# ## Exercise 08.8 · kernel_source (2 points)
#
# Write `kernel_source(name, inputs, ops, outputs, n)`: the Python source of a function
#
# - `def <name>(<inputs...>, out_<output>...)`: the input names in order, then `out_` + each output name in order;
# - whose body is one loop `for i in range(n):` (nothing before or after it, no second loop) that computes each
#   op of `ops` (`[value, op, args]`, in order; an argument is an input name, an earlier value's name, or a
#   number) on element `i`, with the expressions of `EXPRESSIONS`, and stores each value listed in `outputs`
#   into `out_<value>[i]`;
# - that indexes arrays only with `[i]` and writes to no array but the `out_` ones.
#
# The check runs your source with `exec(source, {"math": math})` on random inputs (numpy `float64` arrays of `n`
# elements) and compares the outputs with eager course_lib; it also reads the source's syntax tree for the one
# loop, the `[i]` indexing and the arrays it stores into.
#
# *Hint:* build a list of lines and `"\n".join` it; give each input a local (`x_i = x[i]`) so that a value read
# twice is loaded once; write a number with `repr(float(c))`.

# %% id="ex-08-8-solution" tags=["solution"] exercise="08.8"
# the expression of each op, given its operands' expressions
EXPRESSIONS = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "div": "{} / {}", "neg": "-{}",
               "abs": "abs({})", "exp": "math.exp({})", "tanh": "math.tanh({})", "sin": "math.sin({})",
               "maximum": "max({}, {})"}


def kernel_source(name, inputs, ops, outputs, n):
    """Python source of one fused kernel: a loop over n elements computing `ops`, storing `outputs`."""
    ### BEGIN SOLUTION
    params = list(inputs) + [f"out_{o}" for o in outputs]
    lines = [f"def {name}({', '.join(params)}):", f"    for i in range({n}):"]
    local = {}
    for x in inputs:
        lines.append(f"        {x}_i = {x}[i]")
        local[x] = f"{x}_i"
    for value, op, args in ops:
        operands = [local[a] if isinstance(a, str) else repr(float(a)) for a in args]
        lines.append(f"        {value} = {EXPRESSIONS[op].format(*operands)}")
        local[value] = value
        if value in outputs:
            lines.append(f"        out_{value}[i] = {value}")
    return "\n".join(lines) + "\n"
    ### END SOLUTION


# %% id="ex-08-8-check" tags=["check", "nbval-check-output"] exercise="08.8" points=2
check("08.8", kernel_source)

# %% [markdown] id="kernel-numba-md"
# Your kernel, compiled by numba, against eager course_lib on 4 million elements (the first call compiles):

# %% id="kernel-numba" tags=["long"] grader_runs="print('`course grade` skips the numba compilation')"
try:
    import numba

    ops = [["t0", "mul", ["x", 1.5]], ["t1", "add", ["t0", 0.5]], ["t2", "sin", ["t1"]], ["t3", "mul", ["t2", "t1"]],
           ["t4", "abs", ["t3"]], ["t5", "neg", ["t4"]], ["t6", "exp", ["t5"]], ["t7", "mul", ["t3", "t3"]],
           ["t8", "add", ["t6", "t7"]], ["t9", "tanh", ["t8"]], ["t10", "mul", ["t8", 0.1]],
           ["t11", "sub", ["t9", "t10"]]]
    n = 4_000_000
    source = kernel_source("my_kernel", ["x"], ops, ["t11"], n)
    print(source)
    namespace = {"math": math}
    exec(source, namespace)
    my_kernel = numba.njit(namespace["my_kernel"])
    x64 = np.random.default_rng(0).standard_normal(n)
    out = np.empty(n)
    my_kernel(x64, out)   # compiles
    t_kernel = min(timeit.repeat(lambda: my_kernel(x64, out), number=1, repeat=3))
    x_t = cl.from_numpy(x64)
    t_eager = min(timeit.repeat(lambda: chain(cl, x_t), number=1, repeat=3))
    print(f"your kernel (numba): {t_kernel * 1e3:.1f} ms   eager course_lib: {t_eager * 1e3:.1f} ms   "
          f"same values: {np.allclose(out, chain(cl, x_t).numpy())}")
except NotImplementedError:
    print("(do exercise 08.8 first)")

# %% [markdown] id="kernel-pytorch"
# > **In PyTorch:** `torch/_inductor/scheduler.py` decides fusion (`can_fuse`, `score_fusion_key`: it also fuses
# > reductions with the pointwise ops around them and ops that merely share inputs), and
# > `torch/_inductor/codegen/cpp.py` (CPU) or `codegen/triton.py` (GPU) writes each group's kernel. Set
# > `TORCH_LOGS=output_code` to see it: on CPU a C++ loop with `#pragma omp parallel for` and vectorised
# > `at::vec` arithmetic, on GPU a Triton function indexed by `tl.program_id`.

# %% [markdown] id="measure-md"
# ## 8 · Measure
#
# ### Memory traffic: the chain, compiled
#
# The chain of section 1, eager and compiled, in the course's benchmark harness (`bench/bench_compile.py`): each
# library runs in a fresh process of its own, one thread, so that neither's thread pools distort the other's
# numbers (chapter 01 explains why). The compiled row times `compile_fx` of the recorded graph (course_lib) and
# `torch.compile` (PyTorch, if installed); compile time is not in it. The numpy column is the same chain written in
# numpy in both rows: the eager floor. It takes about a minute.

# %% id="measure-chain" tags=["long"] grader_runs="print('`course grade` skips the measurement (it starts a process per library)')"
import sys
from pathlib import Path

bench_dir = next((p / "bench" for p in (Path.cwd(), *Path.cwd().parents) if (p / "bench" / "harness.py").is_file()),
                 None)
if bench_dir is None:
    print("measurement skipped: the benchmark harness (the course's bench/ folder) was not found")
else:
    sys.path.insert(0, str(bench_dir))
    import bench_compile  # noqa: F401  (registers the workloads)
    import harness

    workloads = [w for w in harness.REGISTRY if w.name.startswith("pointwise chain 8 ops")]
    rows = harness.run(workloads, threads="1", rounds=1, repeat=3)
    libraries = [lib for lib in ("numpy", "course_lib", "torch") if all(lib in row["times"] for row in rows)]
    print(f"{'':46}" + "".join(f"{lib:>14}" for lib in libraries))
    for row, w in zip(rows, workloads):
        print(f"{w.name:46}" + "".join(f"{row['times'][lib] * 1e3:11.1f} ms" for lib in libraries))
    eager, fused = rows[0]["times"]["course_lib"], rows[1]["times"]["course_lib"]
    print(f"\ncourse_lib compiled is {eager / fused:.1f}x faster than eager")

# %% [markdown] id="overhead-md"
# ### Per-op overhead: `mode="reduce-overhead"`
#
# On small tensors the arithmetic is nothing and the per-op overhead everything: a training step of a small MLP
# is a few hundred dispatcher calls. `mode="reduce-overhead"` (in PyTorch: CUDA graphs) replays each captured
# graph with preallocated buffers, skipping the dispatcher, autograd's bookkeeping and the allocation of every
# temporary inside it; in course_lib the generated wrapper calls numpy directly, with `out=` buffers kept from the
# first call. In course_lib this mode also compiles `loss.backward()`. PyTorch captures the backward when you set
# `torch._dynamo.config.compiled_autograd = True`: its Compiled Autograd engine traces what the autograd engine
# would run, gradient accumulation included, into a graph of its own and compiles it. course_lib has a switch of
# the same name (`course_lib._dynamo.config.compiled_autograd`, which this mode turns on), and its version joins
# the backward to the forward's graph: the forward and the backward run as one generated program (the joint graph
# of section 6), and the gradients go into `.grad` as AccumulateGrad would put them. This happens only when the
# engine would do nothing more than that: no hooks, every `.grad` still None, no `retain_graph`, and no other
# tensor of the graph still alive that needs a `grad_fn`. Otherwise the graph ends and the engine runs, as in the
# default mode. What runs between the graphs still pays the full per-op price. Here it is for an MLP 64-64-64-10,
# batch 32, plain SGD, timed in this process (course_lib only).

# %% id="measure-overhead" tags=["long"] grader_runs="print('`course grade` skips the measurement (it compiles with numba)')"
from course_lib import nn, optim
from course_lib.nn import functional as F


def make_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def mlp():
    cl.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


xb, yb = cl.randn(32, 64), cl.randint(0, 10, (32,))
model = mlp()
info = cl.compiler.explain(make_step(model, optim.SGD(model.parameters(), lr=0.01)))(xb, yb)
print(f"one step is captured as {info.graph_count} graph(s) with {info.graph_break_count} break(s):")
for reason in info.break_reasons:
    print("   ", reason.reason)

results = {}
for label, mode in [("eager", None), ("compiled, reduce-overhead", "reduce-overhead")]:
    model = mlp()
    opt = optim.SGD(model.parameters(), lr=0.01)
    step = make_step(model, opt)
    if mode is not None:
        cl._dynamo.reset()
        step = cl.compile(step, mode=mode)
    t0 = time.perf_counter()
    try:
        step(xb, yb)   # compiled: capture and compile
    except NotImplementedError as e:   # a step the code generator cannot compile
        print(f"{label}: not measured ({e})")
        continue
    print(f"{label}: first call {time.perf_counter() - t0:.2f} s")
    losses = [step(xb, yb).item() for _ in range(5)]
    results[label] = (min(timeit.repeat(lambda: step(xb, yb), number=20, repeat=5)) / 20, losses)
for label, (t, losses) in results.items():
    print(f"{label:28} {t * 1e6:8.0f} µs per step   losses {np.round(losses[:3], 4)}")
if len(results) == 2:
    ratio = results["eager"][0] / results["compiled, reduce-overhead"][0]
    print(f"eager time / compiled time: {ratio:.2f} (above 1, the compiled step is faster)")

# %% [markdown] id="measure-notes"
# What to read in the numbers (they depend on your machine):
#
# - on the large chain, eager course_lib runs one numpy loop per op, each reading and writing 16 MB arrays. The
#   compiled kernel runs two loops per block of 4096 elements: the first reads `x` and stores the `y` of the
#   chain's third line, the second reads it back from the cache and writes the result (one loop with sin, exp
#   and tanh all in its body measured slower; two loops over the whole array, 10-15% slower). Each
#   loop computes as many float32 values per instruction as a vector register holds (16 with AVX-512). PyTorch's
#   Inductor gets there the same way, with vectorised C++ loops;
# - on the small MLP nothing is memory-bound: all a compiler can win is the per-op Python path, paid a few
#   hundred times a step. How much it wins depends on the graphs: each break (`explain` listed them) is a return
#   to Python, and what runs between graphs runs eagerly. course_lib checks `cross_entropy`'s targets on every
#   call before it runs the graph (a bad target raises where eager raises it), so the loss stays in the graph.
#   `explain` compiles with the default settings, and there `loss.backward()` ends the graph and runs the autograd
#   engine (through the compiled backward). Under `reduce-overhead` the backward joins the graph instead, so
#   autograd's per-node work is gone too. What is left is the step's own Python: each op is replayed against the
#   recording (no graph node and no meta run, but still a Python call), and the optimizer's updates run eagerly,
#   one op at a time. Dynamo also breaks on `loss.backward()` by default, and it captures the optimizer's updates
#   as a second graph;
# - compiling costs seconds, and every recompilation costs them again: it pays for a function called thousands
#   of times with the same shapes, which is what training is. The seed's ResNet table shows it: the first epoch
#   compiled takes twice as long as eager (12.2 s against 5.7 s), the later ones about as long, and accuracy is the
#   same.

# %% [markdown] id="torch-md"
# ## 9 · The same toy_example in PyTorch
#
# With PyTorch installed, the cell below compiles the seed's `toy_example` with `torch.compile` and the same kind
# of `my_compiler` backend, collects each graph's table, and prints it beside the one course_lib captured for the
# same path.

# %% id="torch-compare"
import contextlib
import io


def tables(compile_fn, lib, inputs):
    """The print_tabular text of each distinct graph, captured while running toy_example on `inputs`."""
    found = []

    def collect(gm, example_inputs):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            gm.graph.print_tabular()
        found.append(buf.getvalue().rstrip())
        return gm.forward

    def toy(a, b):
        x = a / (lib.abs(a) + 1)
        if b.sum() < 0:
            b = b * -1
        return x * b

    fn = compile_fn(toy, backend=collect)
    for a, b in inputs:
        fn(a, b)
    return found


if torch is None:
    print("PyTorch is not installed: `make oracle` installs it (then restart the kernel)")
else:
    torch._dynamo.reset()
    cl._dynamo.reset()
    pairs = [(np.ones(10, np.float32), -np.ones(10, np.float32)), (np.ones(10, np.float32), np.ones(10, np.float32))]
    theirs = tables(torch.compile, torch, [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in pairs])
    ours = tables(cl.compile, cl, [(cl.from_numpy(a), cl.from_numpy(b)) for a, b in pairs])
    for k, (t, o) in enumerate(zip(theirs, ours), 1):
        t_lines, o_lines = t.splitlines(), o.splitlines()
        width = max(len(line) for line in t_lines)
        print(f"graph {k}: {'torch':{width}}   course_lib")
        for i in range(max(len(t_lines), len(o_lines))):
            left = t_lines[i] if i < len(t_lines) else ""
            right = o_lines[i] if i < len(o_lines) else ""
            print(f"         {left:{width}}   {right}")
        print()

# %% [markdown] id="export-md"
# ## 10 · Graph export: `make_dot` and ONNX
#
# Two more ways to get a graph out of a program, both older than `torch.compile` and both still in daily use:
# drawing the **backward graph** autograd recorded (torchviz's `make_dot`), and writing the **forward graph** to a
# file another runtime can execute (ONNX).
#
# ### Drawing the backward graph
#
# `torchviz.make_dot(y, params=dict(model.named_parameters()))` draws the graph behind `y.grad_fn`, the one you
# walked in chapter 03: one grey box per backward node, one light-blue box per leaf that will receive a `.grad`,
# labelled with its name from `named_parameters()` and its shape. It writes the picture as
# [Graphviz](https://graphviz.org) **DOT** text, which the `dot` program (or Jupyter, through the `graphviz`
# package) turns into an image. course_lib has the same function, `course_lib.viz.make_dot`, with torchviz's
# node names, labels, colours and edges, so that the text matches torchviz's for the same network
# (`tests/test_make_dot.py` holds torchviz's output as a golden file). Here is a two-layer network's, with the
# output a view (`[:, 0]`), which torchviz shows as a dotted arrow from the tensor it views:

# %% id="make-dot-demo"
from course_lib.viz import make_dot as lib_make_dot

cl.manual_seed(0)
mlp = cl.nn.Sequential(cl.nn.Linear(3, 4), cl.nn.ReLU(), cl.nn.Linear(4, 2))
y = mlp(cl.randn(5, 3))[:, 0]
dot = lib_make_dot(y, params=dict(mlp.named_parameters()))
print(dot.source)

# %% [markdown] id="make-dot-render-md"
# Each node's name is `str(id(obj))` of the object it stands for (a backward node, a tensor), which is how the
# same object, met twice, becomes one box. With the `graphviz` package and its `dot` program installed, `dot`
# displays itself as an image in Jupyter; `dot.render("mlp", format="png")` writes a file. The cell below shows
# the image when it can, and says why not when it cannot.

# %% id="make-dot-render" grader_runs="print('`course grade` skips the drawing')"
import shutil

if hasattr(dot, "_repr_image_svg_xml") and shutil.which("dot"):
    from IPython.display import display

    display(dot)
else:
    print("no image: the drawing needs the graphviz package (pip install graphviz) and Graphviz's `dot` program "
          "(apt install graphviz, brew install graphviz); the DOT text above is the whole graph")

# %% [markdown] id="ex-08-9-task"
# ## Exercise 08.9 · make_dot (2 points)
#
# Write torchviz's walk yourself: `make_dot(var, params=None)` returns a `Digraph` holding the backward graph of
# the tensor `var`. `Digraph` is given (`course_lib.viz.graph.Digraph`, imported in the cell) and has graphviz's
# interface: `dot.node(name, label, **attrs)`, `dot.edge(tail, head, **attrs)` and `dot.source`.
#
#
# - every name is `str(id(obj))` of the object the node stands for;
# - a tensor's label is `f"{name}\n ({sizes})"`: its name from `params` (a dict name -> tensor, matched by
#   identity: `id(tensor)`), or `""` when it has none, a newline, a space, and its sizes joined by `", "`
#   (`"0.weight\n (4, 3)"`; a 0-d tensor's is `"\n ()"`);
# - **the output** `var`: `dot.node(name, label, fillcolor="darkolivegreen1")`. If it has a `grad_fn`, walk it
#   (below) and add the edge `grad_fn -> var`. If `var` is a view (`var._base is not None`), add its base as you
#   added `var` (same label rule, `fillcolor="darkolivegreen3"`, its `grad_fn` walked and joined the same way)
#   unless the base is already in the graph (`w[:, 0]` of a parameter `w`: the walk added `w` as a leaf), and
#   in both cases the edge `base -> var` with `style="dotted"`;
# - **a backward node** `fn`, walked once however many nodes lead to it: `dot.node(name, type(fn).__name__)`.
#   If `fn` has an attribute `variable` (`AccumulateGrad`: `fn.variable` is the leaf it accumulates into), add
#   the leaf, `dot.node(leaf_name, label, fillcolor="lightblue")`, and the edge `leaf -> fn`. Then for each
#   `(u, _)` in `fn.next_functions` with `u is not None`: the edge `u -> fn`, **every time** (a node that two
#   others use has two arrows out), and walk `u` if it was not walked yet.
#
# No saved tensors (torchviz's `show_saved`), no attributes (`show_attrs`). The graph and node attributes
# (`node_attr`, `graph_attr`) are yours to choose: the check compares nodes and edges, in any order. It builds
# small networks (linear layers, activations, a convolution, a residual connection, a layer used twice),
# calls your `make_dot` and `course_lib.viz.make_dot` on the same output, and compares their nodes and edges,
# duplicates included (names replaced by what they stand for). Calling `course_lib.viz.make_dot` fails the check.
#
# *Hint:* a set of the `id`s already added, a recursive `add_nodes(fn)`, and a small `add_tensor(t, color)`
# for the output and its base. Run the cell after the check to compare your nodes and edges with `course_lib`'s.

# %% id="ex-08-9-solution" tags=["solution"] exercise="08.9"
from course_lib.viz.graph import Digraph


def make_dot(var, params: dict | None = None) -> Digraph:
    """torchviz's make_dot without saved tensors or attributes: the backward graph of `var` as a Digraph."""
    ### BEGIN SOLUTION
    names = {id(t): name for name, t in (params or {}).items()}
    dot = Digraph(node_attr=dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1",
                                 height="0.2", fontname="monospace"),
                  graph_attr=dict(size="12,12"))
    seen: set[int] = set()

    def label(t) -> str:
        return f"{names.get(id(t), '')}\n ({', '.join(str(n) for n in t.shape)})"

    def add_nodes(fn) -> None:
        seen.add(id(fn))
        if hasattr(fn, "variable"):
            leaf = fn.variable
            seen.add(id(leaf))
            dot.node(str(id(leaf)), label(leaf), fillcolor="lightblue")
            dot.edge(str(id(leaf)), str(id(fn)))
        dot.node(str(id(fn)), type(fn).__name__)
        for u, _ in fn.next_functions:
            if u is not None:
                dot.edge(str(id(u)), str(id(fn)))
                if id(u) not in seen:
                    add_nodes(u)

    def add_tensor(t, color: str) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        dot.node(str(id(t)), label(t), fillcolor=color)
        if t.grad_fn is not None:
            if id(t.grad_fn) not in seen:
                add_nodes(t.grad_fn)
            dot.edge(str(id(t.grad_fn)), str(id(t)))
        if t._base is not None:
            add_tensor(t._base, "darkolivegreen3")
            dot.edge(str(id(t._base)), str(id(t)), style="dotted")

    add_tensor(var, "darkolivegreen1")
    return dot
    ### END SOLUTION


# %% id="ex-08-9-check" tags=["check", "nbval-check-output"] exercise="08.9" points=2
check("08.9", make_dot)

# %% id="make-dot-mine"
try:
    mine = make_dot(y, params=dict(mlp.named_parameters()))
    print(mine.source)
    # the node and edge statements (Digraph.body), not the whole text: node_attr and graph_attr are yours to choose
    print("the same nodes and edges as course_lib.viz.make_dot's:", sorted(mine.body) == sorted(dot.body))
except NotImplementedError:
    print("Finish exercise 08.9 first.")

# %% [markdown] id="onnx-md"
# ### ONNX: the forward graph as a file
#
# [ONNX](https://onnx.ai) is a file format for a model's forward graph: a list of nodes in topological order,
# each an operator from a versioned set (the *opset*: `Conv`, `Relu`, `Gemm`, `Add`, ...) reading and writing
# named values, plus the weights as *initializers*, all in one protobuf file. Any runtime that implements the
# opset can run it: onnxruntime, TensorRT, OpenVINO, a browser.
#
# `torch.onnx.export(model, args, "model.onnx")` gets the graph by **running** the model once on `args`, the way
# this chapter's capture does. Its older exporter (`dynamo=False`) records through the TorchScript tracer and
# translates each ATen op with a *symbolic function* (`torch/onnx/symbolic_opset9.py`, ...); the newer one
# (`dynamo=True`, the default in PyTorch 2.13.0) captures with `torch.export`, an FX graph like yours. course_lib's
# `course_lib.onnx.export` does the second kind of capture with the first kind of translation: it traces the model
# with `make_fx` (section 3) into an FX graph of course_lib ops, folds constants (an inference `BatchNorm2d` after
# a `Conv2d` becomes new conv weights), and translates each node with a symbolic function
# (`course_lib/onnx/symbolic_opset.py`).
#
# Tracing fixes every shape it sees. `dynamic_axes` names the sizes that may change, such as the batch:
# `{"input": {0: "batch"}, "logits": {0: "batch"}}` writes `batch` instead of `2` in the file, so that the
# exported model takes any batch size. The next cell exports chapter 04's ResNet (one `BasicBlock` per stage,
# for 32x32 images), checks the file with `onnx.checker`, and runs it in onnxruntime on a batch of another size,
# beside course_lib's own forward pass. It needs the `onnx` and `onnxruntime` packages (`pip install onnx
# onnxruntime`, or the course's `test` extra) and says so when they are missing. To *see* the graph, open the
# file in [Netron](https://netron.app) (a viewer for ONNX and most other model formats, in the browser or as an
# app): every node, its attributes and the shapes between them.

# %% id="onnx-demo" grader_runs="print('`course grade` skips the ONNX export')"
import collections
import importlib.util
import os
import tempfile

from course_lib.models.resnet import BasicBlock, ResNet

if importlib.util.find_spec("onnx") is None:
    print("the export needs the onnx package: pip install onnx (onnxruntime runs the file)")
else:
    import onnx

    cl.manual_seed(0)
    resnet = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, small_input=True).eval()
    folder = tempfile.TemporaryDirectory()   # removed at the end of the cell
    path = os.path.join(folder.name, "resnet.onnx")   # path = "resnet.onnx" keeps the file, for Netron
    cl.onnx.export(resnet, (cl.randn(2, 3, 32, 32),), path, input_names=["input"], output_names=["logits"],
                   dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    model = onnx.load(path)
    onnx.checker.check_model(model)
    print(f"{os.path.basename(path)}: {os.path.getsize(path) / 1e6:.1f} MB, "
          f"opset {model.opset_import[0].version}, passes onnx.checker")
    print("nodes:", dict(collections.Counter(node.op_type for node in model.graph.node)))
    for value in list(model.graph.input) + list(model.graph.output):
        dims = [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
        print(f"  {value.name}: {dims}")
    if importlib.util.find_spec("onnxruntime") is None:
        print("onnxruntime is not installed (pip install onnxruntime): the file is not run")
    else:
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        x5 = cl.randn(5, 3, 32, 32)   # another batch size than the one traced
        (theirs,) = session.run(None, {"input": x5.numpy()})
        with cl.no_grad():
            ours = resnet(x5).numpy()
        print(f"onnxruntime, batch 5: logits {theirs.shape}, largest difference from course_lib "
              f"{np.abs(theirs - ours).max():.1e}")
        del session
    folder.cleanup()

# %% [markdown] id="onnx-notes"
# The counts say what the exporter did: no `BatchNormalization` node (each was folded into the `Conv` before it),
# `Gemm` for the final `Linear`, `Add` for the residual connections, `GlobalAveragePool` for the adaptive average
# pool. The `batch` in the input's and output's shapes is `dynamic_axes` at work, which is why a batch of 5 runs in
# a file traced with a batch of 2. A model that branches on its input's values (`if x.sum() > 0:`) exports only the
# branch the trace took: tracing sees one path, as a graph without guards would.
#
# > **In PyTorch:** `torch/onnx/__init__.py` (`export`); the TorchScript-based exporter in
# > `torch/onnx/_internal/torchscript_exporter/` with its symbolic functions; the `torch.export`-based one in
# > `torch/onnx/_internal/exporter/`. torchviz is a separate package; its `make_dot` is in `torchviz/dot.py`.

# %% [markdown] id="summary"
# ## Summary
#
# - Eager execution pays **per-op overhead** and **memory traffic** for every op. A compiler sees many ops at once
#   and removes both: one fused loop instead of a pass per op, one replayed step instead of hundreds of calls.
# - **Capture**: Dynamo interprets bytecode and records tensor ops into an FX graph; course_lib records at the
#   dispatcher while the Python runs. Either way, a value Python needs (`if t:`, `.item()`, `print`) is a **graph
#   break**: the graph ends with the break value and the values still alive as outputs, and capture resumes after.
# - **Guards** record what a graph assumed (shapes, dtypes, `requires_grad`, grad mode, constants); a failing guard
#   means a recompilation, up to `recompile_limit`; `dynamic=True` guards on relations between sizes instead.
# - **AOTAutograd** traces the backward into a joint graph with the autograd engine you wrote in chapter 03, and the
#   **min-cut** on a network of split nodes chooses the cheapest values to save, recomputing the rest.
# - **Inductor** groups pointwise ops into kernels (not across reductions and externs), plans buffers, and
#   generates a loop per kernel.
# - **Export**: `make_dot` walks `grad_fn` and `next_functions` into Graphviz DOT text, one box per object; ONNX
#   export traces the forward graph once, translates each op to the ONNX opset, and `dynamic_axes` keeps the sizes
#   that may change symbolic, so onnxruntime (or any runtime, and Netron to look) takes the file from there.
#
# That is the last chapter of the course for now. Grade this chapter with
# `course grade notebooks/08_compile.ipynb`.
