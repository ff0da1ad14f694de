# ---
# jupyter:
#   course:
#     title: Autograd
# ---

# %% [markdown] id="intro"
# # 03 · Autograd
#
# Every `loss.backward()` you have ever called ran an algorithm you can write in an afternoon. While the
# forward pass runs, each operation on a tensor that requires a gradient **records a node**: which op ran, which
# tensors it came from, and whatever it will need to differentiate itself later. Those nodes form a directed
# acyclic graph. `backward()` walks that graph from the output to the leaves, applying the chain rule at each
# node, in an order that guarantees every node has its *whole* gradient before it passes anything on.
#
# **What you will build:**
#
# - the backward formulas of `mul`, `div`, `log`, `sum` and `matmul`, and `unbroadcast`, the step that makes
#   broadcasting differentiable;
# - the topological sort the engine uses, over real `course_lib` graph nodes;
# - the engine loop itself, with gradient accumulation, on a tiny scalar graph;
# - a numerical Jacobian, the heart of `gradcheck`;
# - a custom `autograd.Function`.
#
# **Along the way:** why the order is topological and not recursive, why gradients accumulate and when to
# zero them, `retain_graph`, `no_grad` vs `detach` vs `eval`, the version counter that catches in-place bugs,
# gradients of gradients, and how much memory the saved activations take (and how checkpointing trades
# compute for it).
#
# *Prerequisites:* chapters 01 and 02 (tensors, views, the dispatcher), the chain rule from calculus.
# *Expected time:* 3 hours.

# %% id="setup"
import gc
import math

import matplotlib.pyplot as plt
import numpy as np

import course_lib as cl
from course import check
from course_lib import autograd, memory
from course_lib.autograd import Function
from course_lib.viz.graph import draw_graph

# %% [markdown] id="graph-md"
# ## 1 · The graph is recorded while the forward pass runs
#
# Take two numbers and a small formula:
#
# $$x_1 = 2,\quad x_2 = 3,\qquad a = x_1 x_2,\quad y_1 = \log a,\quad y_2 = \sin x_2,\quad w = y_1 y_2,\quad z = w.$$
#
# `x1` and `x2` are **leaves**: tensors you made yourself with `requires_grad=True`. Every other tensor is the
# result of an op on tensors that require grad, so it gets a `grad_fn`: the node that knows how to send a
# gradient back to that op's inputs. `grad_fn.next_functions` are the edges, one per input, as
# `(node, which output of it)`. A leaf's edge ends in an `AccumulateGrad` node, whose `.variable` is the leaf:
# that is where `.grad` gets written.

# %% id="graph-demo"
x1 = cl.tensor(2.0, requires_grad=True)
x2 = cl.tensor(3.0, requires_grad=True)
a = x1 * x2
y1 = cl.log(a)
y2 = cl.sin(x2)
w = y1 * y2
z = w

print("z =", z.item())
print("z.grad_fn:", type(z.grad_fn).__name__)
print("next_functions:", [(type(n).__name__, nr) for n, nr in z.grad_fn.next_functions])
log_node = z.grad_fn.next_functions[0][0]
mul_node = log_node.next_functions[0][0]
print("below LogBackward0:", [(type(n).__name__, nr) for n, nr in log_node.next_functions])
print("below MulBackward0:", [type(n).__name__ for n, _ in mul_node.next_functions])
print("AccumulateGrad.variable is x1:", mul_node.next_functions[0][0].variable is x1)
print("MulBackward0 saved self and other:", mul_node._saved_self.item(), mul_node._saved_other.item())
print("leaves:", x1.is_leaf, x2.is_leaf, " a is a leaf:", a.is_leaf)

# %% [markdown] id="graph-picture-md"
# The picture below is drawn from those same objects (`course_lib.viz.draw_graph`; `course_lib.viz.graph.to_dot` gives the Graphviz
# source if you have Graphviz). Arrows follow the forward direction; `backward()` walks them the other way.
# Each op node lists the tensors it saved: `MulBackward0` keeps both factors, because $\partial(uv)/\partial u = v$
# needs the *other* one; `SinBackward0` keeps its input for $\cos$. Notice that `x2` has **one**
# `AccumulateGrad` node with two arrows out: it is used twice.

# %% id="graph-picture"
draw_graph(z, params={"x1": x1, "x2": x2}, title="z = log(x1 * x2) * sin(x2)")
plt.show()

# %% [markdown] id="chain-rule-md"
# ## 2 · What `backward()` computes, node by node
#
# `z.backward()` starts with $\partial z/\partial z = 1$ and applies the chain rule at every node, from the
# output down. Each node multiplies the gradient it receives by its *local* derivative:
#
# | node | local derivative | gradient arriving there |
# |---|---|---|
# | $z = w$ | 1 | $\bar z = 1$ |
# | $w = y_1 y_2$ | $\partial w/\partial y_1 = y_2,\ \partial w/\partial y_2 = y_1$ | $\bar y_1 = \bar w\, y_2 = \sin 3$, $\ \bar y_2 = \bar w\, y_1 = \log 6$ |
# | $y_1 = \log a$ | $1/a$ | $\bar a = \bar y_1 / a = \sin 3 / 6$ |
# | $a = x_1 x_2$ | $x_2$ and $x_1$ | $\bar x_1 = \bar a\, x_2$, $\ \bar x_2 \mathrel{+}= \bar a\, x_1$ |
# | $y_2 = \sin x_2$ | $\cos x_2$ | $\bar x_2 \mathrel{+}= \bar y_2 \cos x_2$ |
#
# $x_2$ receives gradient along **two** paths, and the two contributions add:
#
# $$\frac{\partial z}{\partial x_2} = \underbrace{\frac{\sin 3}{6}\cdot 2}_{\text{through } a} + \underbrace{\log 6 \cdot \cos 3}_{\text{through } y_2}.$$
#
# The next cell asks course_lib for every intermediate gradient (`retain_grad()` keeps `.grad` on non-leaves)
# and prints each step of that derivation beside the number course_lib computed.

# %% id="chain-rule-demo"
for t in (a, y1, y2, w):
    t.retain_grad()
z.backward()

A, X1, X2 = a.item(), x1.item(), x2.item()
print(f"dz/dw  = 1                                  -> {w.grad.item()}")
print(f"dz/dy1 = dz/dw * y2 = {y2.item()}              -> {y1.grad.item()}")
print(f"dz/dy2 = dz/dw * y1 = {y1.item()}              -> {y2.grad.item()}")
print(f"dz/da  = dz/dy1 / a = {y1.grad.item()} / {A}  -> {a.grad.item()}")
print(f"dz/dx1 = dz/da * x2 = {a.grad.item()} * {X2}  -> {x1.grad.item()}")
by_hand = a.grad.item() * X1 + y2.grad.item() * math.cos(X2)
print("dz/dx2 = dz/da * x1 + dz/dy2 * cos(x2)")
print(f"       = {a.grad.item()} * {X1} + {y2.grad.item()} * {math.cos(X2):.7f}")
print(f"       = {by_hand:.7f} (by hand, float64)       -> {x2.grad.item()} (course_lib, float32)")


# %% [markdown] id="formulas-md"
# So $z = 0.2528530955314636$, $\partial z/\partial x_1 = 0.07056000083684921$ and
# $\partial z/\partial x_2 = -1.7267885208129883$ in float32, exactly what PyTorch prints for the same program.
#
# Each row of that table is one **derivative formula**. In course_lib they live in
# `course_lib/autograd/derivatives.py`, one per op, written with course_lib ops (so they can themselves be
# differentiated, section 7). Each formula receives `grad`, the gradient of the loss with respect to the op's
# output, and returns one gradient per input: a *vector-Jacobian product*, never the Jacobian itself.
#
# > **In PyTorch:** `tools/autograd/derivatives.yaml` declares every formula
# > (`- name: mul.Tensor(Tensor self, Tensor other)` / `self: mul_tensor_backward(grad, other, ...)`), and code
# > generation turns it into the C++ node classes (`MulBackward0`) and the autograd kernels that record them
# > (`torch/csrc/autograd/generated/`). The node base class is in `torch/csrc/autograd/function.h`.
#
# In the next three exercises you write formulas as plain functions of `course_lib` tensors (no autograd
# involved: you compute the gradients with ordinary ops). Inputs have the same shape here; broadcasting comes
# right after.

# %% [markdown] id="ex-03-1-task"
# ## Exercise 03.1 · `mul_backward` (1 point)
#
# `mul_backward(grad, x, y)` for $z = x \cdot y$ (elementwise): return the pair `(grad_x, grad_y)` of
# tensors of the inputs' shape.
#
# *Hint:* $\partial z/\partial x = y$.

# %% id="ex-03-1-solution" tags=["solution"] exercise="03.1"
def mul_backward(grad, x, y):
    """Gradients of x * y with respect to x and y, given the output's gradient."""
    ### BEGIN SOLUTION
    return grad * y, grad * x
    ### END SOLUTION


# %% id="ex-03-1-check" tags=["check", "nbval-check-output"] exercise="03.1" points=1
check("03.1", mul_backward)


# %% [markdown] id="ex-03-2-task"
# ## Exercise 03.2 · `div_backward` (1 point)
#
# `div_backward(grad, x, y)` for $z = x / y$: return `(grad_x, grad_y)`.
#
# *Hint:* $\partial z/\partial y = -x / y^2$.

# %% id="ex-03-2-solution" tags=["solution"] exercise="03.2"
def div_backward(grad, x, y):
    """Gradients of x / y with respect to x and y."""
    ### BEGIN SOLUTION
    return grad / y, -grad * x / (y * y)
    ### END SOLUTION


# %% id="ex-03-2-check" tags=["check", "nbval-check-output"] exercise="03.2" points=1
check("03.2", div_backward)


# %% [markdown] id="ex-03-3-task"
# ## Exercise 03.3 · `log_backward` (1 point)
#
# `log_backward(grad, x)` for $z = \log x$: return `grad_x` (a single tensor). This is the formula
# `LogBackward0` runs; which tensor does it need to have saved?

# %% id="ex-03-3-solution" tags=["solution"] exercise="03.3"
def log_backward(grad, x):
    """Gradient of log(x) with respect to x."""
    ### BEGIN SOLUTION
    return grad / x
    ### END SOLUTION


# %% id="ex-03-3-check" tags=["check", "nbval-check-output"] exercise="03.3" points=1
check("03.3", log_backward)

# %% [markdown] id="unbroadcast-md"
# ### Broadcasting makes gradients the wrong shape
#
# `b` of shape `(3,)` added to `x` of shape `(2, 3)` is used **twice**, once per row. The gradient of `x + b` with
# respect to `b` is therefore the *sum* of the output gradient over the rows. In general, whatever broadcasting
# did in the forward pass (add leading dims, stretch size-1 dims), the backward pass undoes by summing over
# those dims. The engine does it once for all ops, after each formula (`sum_to_size` in
# `course_lib/autograd/variable_type.py`), so the formulas above never have to think about it.

# %% id="unbroadcast-demo"
x = cl.ones(2, 3, requires_grad=True)
b = cl.tensor([1.0, 2.0, 3.0], requires_grad=True)
(x * b).sum().backward()
print("b.grad:", b.grad, " shape", tuple(b.grad.shape), "(one 2 per column: b was used in both rows)")


# %% [markdown] id="ex-03-4-task"
# ## Exercise 03.4 · `unbroadcast` (2 points)
#
# `unbroadcast(grad, shape)`: `grad` has the broadcast shape of an op's output; return the gradient for an input
# of shape `shape` (a tuple), by summing `grad` over
#
# 1. the leading dims broadcasting added (`grad.dim() - len(shape)` of them), and
# 2. every remaining dim where `shape` has size 1 but `grad` does not (keep it as size 1).
#
# The result has exactly shape `shape`; `shape == ()` means a 0-d tensor.
#
# *Hint:* `t.sum(dims, keepdim=True)` takes a tuple of dims; do the leading dims without `keepdim`.

# %% id="ex-03-4-solution" tags=["solution"] exercise="03.4"
def unbroadcast(grad, shape):
    """Sum grad down to `shape`, undoing broadcasting."""
    ### BEGIN SOLUTION
    lead = grad.dim() - len(shape)
    if lead > 0:
        grad = grad.sum(tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad
    ### END SOLUTION


# %% id="ex-03-4-check" tags=["check", "nbval-check-output"] exercise="03.4" points=2
check("03.4", unbroadcast)


# %% [markdown] id="ex-03-5-task"
# ## Exercise 03.5 · `sum_backward` (2 points)
#
# `s = x.sum(dim, keepdim)` adds up input elements; each element appears in exactly one sum with coefficient 1,
# so its gradient is the gradient of *its* sum. Write `sum_backward(grad, input_shape, dim, keepdim)`:
#
# - `dim` is `None` (sum of everything: `grad` is 0-d), an int or a tuple of ints (negative allowed);
# - when `keepdim` is False the reduced dims are missing from `grad`: put them back as size 1;
# - return a tensor of shape `input_shape`.
#
# *Hint:* `grad.unsqueeze(d)` in increasing order of `d`, then `.expand(input_shape)`. An expanded tensor is a
# view with stride 0: no copy.

# %% id="ex-03-5-solution" tags=["solution"] exercise="03.5"
def sum_backward(grad, input_shape, dim, keepdim):
    """Gradient of x.sum(dim, keepdim) with respect to x (of shape input_shape)."""
    ### BEGIN SOLUTION
    n = len(input_shape)
    if dim is None:
        dims = tuple(range(n))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(sorted(d % n for d in dims))
    if not keepdim:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(input_shape))
    ### END SOLUTION


# %% id="ex-03-5-check" tags=["check", "nbval-check-output"] exercise="03.5" points=2
check("03.5", sum_backward)


# %% [markdown] id="ex-03-6-task"
# ## Exercise 03.6 · `matmul_backward` (2 points)
#
# For $C = AB$ with $A$ of shape $(n, k)$ and $B$ of shape $(k, m)$, $C_{ij} = \sum_p A_{ip} B_{pj}$, so
#
# $$\bar A = \bar C\, B^\top \quad (n\times k), \qquad \bar B = A^\top\, \bar C \quad (k \times m).$$
#
# Write `matmul_backward(grad, a, b)` returning `(grad_a, grad_b)` for 2-D `a` and `b`. PyTorch's
# `MmBackward0` saves `a` only if `b` needs a gradient and `b` only if `a` does; count the bytes that saves.
#
# *Hint:* if you are unsure which side the transpose goes on, check the shapes.

# %% id="ex-03-6-solution" tags=["solution"] exercise="03.6"
def matmul_backward(grad, a, b):
    """Gradients of a @ b (2-D) with respect to a and b."""
    ### BEGIN SOLUTION
    return grad @ b.t(), a.t() @ grad
    ### END SOLUTION


# %% id="ex-03-6-check" tags=["check", "nbval-check-output"] exercise="03.6" points=2
check("03.6", matmul_backward)

# %% [markdown] id="topo-md"
# ## 3 · Why a topological order, and not recursion
#
# The obvious way to write `backward` is recursive: a node computes its input gradients and immediately calls
# backward on each input. Try it on a *diamond*: `a = x * 3`, then `b = a.sin()`, `c = a.exp()`, `d = a * a`
# and `out = b + c + d`. The recursion reaches `a` three times, each time with a *partial* gradient, and
# would run `a`'s node (and everything below it) three times. With `y = y + y` repeated 40 times, recursion
# visits the bottom $2^{40}$ times.
#
# The engine instead makes two passes:
#
# 1. **count dependencies**: walk the graph once and count, for each node, how many edges point into it;
# 2. **run nodes when they are ready**: start from the root; after a node runs, add its outputs into its
#    inputs' gradient buffers and decrement their counts; a node whose count reaches 0 has received all of
#    its gradient, so it can run.
#
# That is Kahn's algorithm for a topological order, and it visits each node once. The cell below watches
# `a`'s node: it runs once, with the full gradient $\cos 6 + e^6 + 2\cdot 6$.

# %% id="topo-demo"
x = cl.tensor(2.0, requires_grad=True)
a = x * 3
calls = []
a.grad_fn.register_prehook(lambda grads: calls.append(grads[0].item()))
out = a.sin() + a.exp() + a * a
out.backward()
print("MulBackward0 of a ran", len(calls), "time(s), with gradient", calls)
print("expected cos(6) + exp(6) + 12 =", math.cos(6) + math.exp(6) + 12)

# %% [markdown] id="topo-order-md"
# The numbers below are that order for the diamond (`course_lib.viz.graph.execution_order` simulates the
# engine without running it). `MulBackward0` of `a` is numbered after all three of its users.
# `backward_stepper(out)` draws that picture and, in Jupyter, a slider under it that colours the nodes as
# backward runs them, one step at a time.

# %% id="topo-order-picture"
from course_lib.viz.graph import backward_stepper

backward_stepper(out, params={"x": x}, figsize=(4.6, 4.4))


# %% [markdown] id="ex-03-7-task"
# > **In PyTorch:** `torch/csrc/autograd/engine.cpp`. `compute_dependencies` does pass 1; the
# > `ReadyQueue` holds nodes whose count reached 0 (ordered so that the most recently created runs first);
# > `evaluate_function` runs a node and fills its inputs' `InputBuffer`s. course_lib's version,
# > `course_lib/autograd/engine.py`, has the same pieces under the same names: `compute_dependencies`,
# > `GraphTask`, `evaluate_function`, `call_function`, `validate_outputs`.
#
# ## Exercise 03.7 · `topological_sort` (3 points)
#
# `topological_sort(root)` takes a graph node (`loss.grad_fn`) and returns the list of every node reachable
# through `next_functions`, each exactly once, **the root first and every node before all the nodes it passes
# gradient to** (for each edge `node -> next`, `node` comes earlier). Entries of `next_functions` whose node is
# `None` are not nodes. Nodes can be used as dict keys (they hash by identity).
#
# The checks include a chain 3000 nodes deep, so do not recurse. Walk the graph yourself: do not call
# course_lib's engine (`compute_dependencies` or `run_backward` in `course_lib.autograd.engine`); it is what
# you are rebuilding.
#
# *Hint:* pass 1 above, then the ready list.

# %% id="ex-03-7-solution" tags=["solution"] exercise="03.7"
def topological_sort(root) -> list:
    """Nodes reachable from root, root first, each before the nodes it sends gradient to."""
    ### BEGIN SOLUTION
    deps = {}
    stack, seen = [root], {root}
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                ready.append(nxt)
    return order
    ### END SOLUTION


# %% id="ex-03-7-check" tags=["check", "nbval-check-output"] exercise="03.7" points=3
check("03.7", topological_sort)


# %% [markdown] id="engine-md"
# ## 4 · The engine loop, and why gradients accumulate
#
# To write the loop itself without the bookkeeping of real nodes (multiple outputs, saved tensors, hooks),
# here is a scalar graph small enough to read in one go, in the style of micrograd. A `Var` knows its
# `parents` and, for each, the local derivative $\partial\,\text{self}/\partial\,\text{parent}$; `grad`
# starts at 0.

# %% id="engine-var"
class Var:
    # a scalar in a tiny graph: value, parents, d(self)/d(parent) for each, and an accumulating grad
    def __init__(self, value, parents=(), local_grads=(), name=""):
        self.value = value
        self.parents = tuple(parents)
        self.local_grads = tuple(local_grads)
        self.grad = 0.0
        self.name = name

    def __add__(self, other):
        return Var(self.value + other.value, (self, other), (1.0, 1.0))

    def __mul__(self, other):
        return Var(self.value * other.value, (self, other), (other.value, self.value))

    def log(self):
        return Var(math.log(self.value), (self,), (1.0 / self.value,))

    def sin(self):
        return Var(math.sin(self.value), (self,), (math.cos(self.value),))

    def __repr__(self):
        return f"Var({self.value!r}, grad={self.grad!r})"


v1, v2 = Var(2.0), Var(3.0)
root = (v1 * v2).log() * v2.sin()
print(root)


# %% [markdown] id="ex-03-8-task"
# ## Exercise 03.8 · `run_backward` (3 points)
#
# `run_backward(root)` adds $\partial\,\text{root}/\partial v$ into `v.grad` for every `Var` `v` in the graph
# below `root` (root included: it gets 1). Like `Tensor.backward()`:
#
# - gradients **accumulate**: do not reset any `grad`; calling `run_backward(root)` twice doubles every leaf's
#   gradient;
# - a `Var` used several times receives the sum of the contributions of all its uses, and must not pass
#   anything on before it has all of them: each node passes its gradient on **once**. The checks include
#   `y = y + y` repeated 40 times, 41 nodes but $2^{40}$ paths from the root to `x`, and stop any engine that
#   reads the nodes' `parents` far more often than the graph has nodes;
# - graphs can be thousands of nodes deep: no recursion.
#
# Propagate the gradients yourself: do not call course_lib's engine (`compute_dependencies` or `run_backward`
# in `course_lib.autograd.engine`), `cl.autograd.backward` or `cl.autograd.grad`; they are what you are
# rebuilding.
#
# *Hint:* count each node's users (edges into it), then a ready list as in 03.7. Keep the gradients of *this*
# pass in a dict keyed by `id(node)`, and add each node's total into `node.grad` when it is popped.

# %% id="ex-03-8-solution" tags=["solution"] exercise="03.8"
def run_backward(root) -> None:
    """Accumulate d(root)/d(v) into v.grad for every Var v below root."""
    ### BEGIN SOLUTION
    users = {}
    stack, seen = [root], {id(root)}
    while stack:
        node = stack.pop()
        for p in node.parents:
            users[id(p)] = users.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    pending = {id(root): 1.0}
    ready = [root]
    while ready:
        node = ready.pop()
        g = pending.pop(id(node), 0.0)
        node.grad += g
        for p, local in zip(node.parents, node.local_grads):
            pending[id(p)] = pending.get(id(p), 0.0) + local * g
            users[id(p)] -= 1
            if users[id(p)] == 0:
                ready.append(p)
    ### END SOLUTION


# %% id="ex-03-8-check" tags=["check", "nbval-check-output"] exercise="03.8" points=3
check("03.8", run_backward)

# %% [markdown] id="accumulate-md"
# ### Accumulation: a feature, and a trap
#
# `.grad` is **added to**, never overwritten, for two reasons: a leaf used in several places must get the sum
# over all uses (the `x2` of section 1), and accumulating over several backward calls lets you split a big batch
# into small ones and step the optimizer once (*gradient accumulation*). The trap: a training loop that never
# zeroes the gradients adds every step's gradient to all the previous ones. That is why every loop calls
# `optimizer.zero_grad()` (which sets `.grad = None`) before `loss.backward()`.
#
# ### `retain_graph`
#
# Backward frees the tensors each node saved as soon as the node has run: for a big network they are most of
# the memory (section 10). So a second `backward()` through the same graph fails, with PyTorch's message, unless
# the first call passed `retain_graph=True`. Graphs whose nodes saved nothing (`x + 1`) can be run again.

# %% id="accumulate-demo"
x1 = cl.tensor(2.0, requires_grad=True)
x2 = cl.tensor(3.0, requires_grad=True)
z = cl.log(x1 * x2) * cl.sin(x2)
z.backward(retain_graph=True)
print("after one backward:  x1.grad =", x1.grad.item())
z.backward(retain_graph=True)
print("after two backwards: x1.grad =", x1.grad.item(), "(accumulated)")
x1.grad = None                       # what optimizer.zero_grad() does
z.backward()                         # the last one frees the saved tensors
print("after zeroing:       x1.grad =", x1.grad.item())
try:
    z.backward()
except RuntimeError as e:
    print("third backward:", str(e)[:110], "...")

# %% [markdown] id="modes-md"
# > **In PyTorch:** saved tensors are `SavedVariable`s (`torch/csrc/autograd/saved_variable.h`); a node's
# > `release_variables()` drops them after it runs unless `keep_graph` (= `retain_graph`) is set.
# > `AccumulateGrad` is in `torch/csrc/autograd/functions/accumulate_grad.h`.
#
# ## 5 · `no_grad`, `detach` and `eval`: three different switches
#
# They are often confused because all three appear around inference code.
#
# | | what it changes | graph recorded? | values computed differently? | typical use |
# |---|---|---|---|---|
# | `with no_grad():` | grad mode, for every op in the block (per thread) | no: results have `requires_grad=False` | no | inference, optimizer updates, saving memory |
# | `t.detach()` | one tensor: a new leaf sharing `t`'s storage | not through it (the rest of the graph is unaffected) | no | stop gradient at one point, logging a value |
# | `model.eval()` | the module's `training` flag | yes, if inputs require grad | yes: dropout off, batch norm uses running statistics | evaluation, export |
#
# `eval()` does not turn off autograd, and `no_grad()` does not switch dropout off: evaluation code usually wants
# both. `detach()` shares storage with the original, so writing into the detached tensor changes the original
# (and bumps the shared version counter, section 6). `no_grad`, `enable_grad` and `set_grad_enabled(flag)` work
# as context managers and as decorators.

# %% id="modes-demo"
w = cl.tensor([1.0, 2.0], requires_grad=True)
with cl.no_grad():
    y = w * 2
print("under no_grad:  requires_grad", y.requires_grad, " grad_fn", y.grad_fn)
d = (w * 2).detach()
print("detach():       requires_grad", d.requires_grad, " is_leaf", d.is_leaf)


@cl.no_grad()
def predict(v):
    return v * w


print("decorated:      requires_grad", predict(cl.ones(2)).requires_grad)
print("grad mode after:", cl.is_grad_enabled())

# %% [markdown] id="version-md"
# ## 6 · The version counter
#
# A node that saved a tensor needs the *value it had then*. If an in-place op changes it in between, the
# gradient would silently be wrong. So every tensor (and all its views) shares a **version counter** that each
# in-place op increments; a saved tensor remembers the version it was saved at and backward checks it.
# `exp` saves its output (because $\frac{d}{dx}e^x = e^x$), so modifying that output in place breaks its backward:

# %% id="version-demo"
x = cl.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x.exp()
print("version before:", y._version)
y.add_(1)
print("version after y.add_(1):", y._version)
try:
    y.sum().backward()
except RuntimeError as e:
    print(e)

# %% [markdown] id="copyslices-md"
# In-place ops on tensors that *don't* hold saved values are fine, including on views: `y[0].mul_(2)` on a
# non-leaf `y` rewrites `y`'s history. `y.grad_fn` becomes a `CopySlices` node that routes the gradient of the
# modified elements through `MulBackward0` and the rest straight through, and the view's `grad_fn` is
# regenerated as an `AsStridedBackward0` of the new base. In-place on a leaf that requires grad is refused
# (outside `no_grad`): the leaf's value *is* the parameter being learned.

# %% id="copyslices-demo"
x = cl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
y = x * 1
v = y[0]
v.mul_(2)
print("y.grad_fn:", type(y.grad_fn).__name__, [type(n).__name__ if n else None for n, _ in y.grad_fn.next_functions])
print("v.grad_fn:", type(v.grad_fn).__name__)
y.sum().backward()
print("x.grad:", x.grad.tolist())
try:
    x.add_(1)
except RuntimeError as e:
    print(e)

# %% [markdown] id="higher-md"
# ## 7 · Gradients of gradients
#
# Because every formula is written with ordinary course_lib ops, the backward pass can itself be recorded:
# `create_graph=True` keeps grad mode on while the engine runs, so the gradient comes back with a `grad_fn` and
# can be differentiated again. For $x^3$ at $x=3$: $3x^2 = 27$, then $6x = 18$.

# %% id="higher-demo"
x = cl.tensor(3.0, requires_grad=True)
(g,) = autograd.grad(x ** 3, x, create_graph=True)
print("first derivative: ", g)
(g2,) = autograd.grad(g, x)
print("second derivative:", g2)

# %% [markdown] id="ex-03-9-task"
# This is what gradient penalties, meta-learning and Hessian-vector products use. A formula written with raw
# numpy (like a fused kernel) would give a correct first derivative and no second one; PyTorch marks such
# backward functions with `@once_differentiable`.
#
# ## 8 · `gradcheck`: trust, but verify
#
# A wrong formula does not crash; it trains badly. `gradcheck` compares every analytic gradient with a
# **central finite difference**
#
# $$\frac{\partial f_i}{\partial x_j} \approx \frac{f_i(x + \varepsilon e_j) - f_i(x - \varepsilon e_j)}{2\varepsilon}$$
#
# whose error is $O(\varepsilon^2)$. With float64 and $\varepsilon = 10^{-6}$, a correct formula agrees to about
# $10^{-9}$; float32 is far too coarse, which is why `gradcheck` wants float64 inputs. The analytic Jacobian is
# built one row at a time: a backward pass with a one-hot `grad_output` gives one row.
#
# > **In PyTorch:** `torch/autograd/gradcheck.py` (`gradcheck`, `gradgradcheck`, `_get_numerical_jacobian`).
# > course_lib runs `gradcheck` and `gradgradcheck` on every differentiable op in its test suite
# > (`tests/test_gradcheck_ops.py`).
#
# ## Exercise 03.9 · `numerical_jacobian` (2 points)
#
# `numerical_jacobian(fn, x, eps=1e-6)`: `x` is a float64 tensor, `fn(x)` returns a tensor. Return the
# Jacobian as a numpy array of shape `(fn(x).numel(), x.numel())` by central differences: column `j` is the
# flattened `(fn(x + eps e_j) - fn(x - eps e_j)) / (2 eps)`. Do not change `x` (work on a copy), and do not
# record a graph.
#
# *Hint:* `xc = x.detach().clone()`, then nudge `xc.view(-1)[j]` (a view: writing to it writes `xc`) under
# `cl.no_grad()`.

# %% id="ex-03-9-solution" tags=["solution"] exercise="03.9"
import numpy as np

import course_lib as cl


def numerical_jacobian(fn, x, eps=1e-6):
    """Central-difference Jacobian of fn at x, shape (fn(x).numel(), x.numel())."""
    ### BEGIN SOLUTION
    xc = x.detach().clone()
    flat = xc.view(-1)
    cols = []
    with cl.no_grad():
        for j in range(xc.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = fn(xc).detach().numpy().reshape(-1).copy()
            flat[j] = orig - eps
            minus = fn(xc).detach().numpy().reshape(-1).copy()
            flat[j] = orig
            cols.append((plus - minus) / (2 * eps))
    return np.stack(cols, axis=1)
    ### END SOLUTION


# %% id="ex-03-9-check" tags=["check", "nbval-check-output"] exercise="03.9" points=2
check("03.9", numerical_jacobian)

# %% [markdown] id="gradcheck-md"
# Compare yours with course_lib's analytic Jacobian, and see what `gradcheck` reports when a formula is wrong:

# %% id="gradcheck-demo"
xs = cl.tensor([0.3, -1.2, 2.0], dtype=cl.float64, requires_grad=True)
try:
    num = numerical_jacobian(lambda t: t.sin() * t, xs)
except NotImplementedError:
    print("(the comparison needs exercise 03.9: come back when it passes)")
else:
    rows = [autograd.grad((xs.sin() * xs)[i], xs)[0].numpy() for i in range(3)]
    print("largest difference from the analytic Jacobian:", np.abs(num - np.stack(rows)).max())
print("gradcheck(sin(x) * x):", autograd.gradcheck(lambda t: t.sin() * t, (xs,)))


class BadSquare(Function):
    # x * x with a backward that forgot the 2 (custom Functions are section 9)
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t * t

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return grad * t


try:
    autograd.gradcheck(BadSquare.apply, (xs,))
except RuntimeError as e:  # a GradcheckError
    print("\ngradcheck(BadSquare):", e)

# %% [markdown] id="ex-03-10-task"
# ## 9 · Custom functions
#
# When an op is not built in, or its automatic gradient is slow or unstable, you write the backward yourself
# with `autograd.Function`: a static `forward(ctx, ...)` that computes the result (graph recording is off
# inside it) and stashes what backward needs with `ctx.save_for_backward`, and a static
# `backward(ctx, grad)` that returns one gradient per `forward` input. `Fn.apply(...)` records a node named
# `FnBackward`. `ctx.needs_input_grad` tells backward which gradients are wanted, and
# `ctx.mark_non_differentiable` flags outputs such as indices.
#
# > **In PyTorch:** `torch/autograd/function.py` (`Function`, `FunctionCtx`, `once_differentiable`) and
# > `torch/csrc/autograd/python_function.cpp`, which makes the `...Backward` node call your Python `backward`.
#
# ## Exercise 03.10 · `Softplus` (3 points)
#
# Write `class Softplus(Function)` computing $\text{softplus}(x) = \log(1 + e^x)$ elementwise, whose backward uses
# $\frac{d}{dx}\text{softplus}(x) = \sigma(x) = 1/(1+e^{-x})$. Save the input with `ctx.save_for_backward`.
# The check runs `gradcheck` on it.
#
# *Hint:* `forward` returns a tensor; `backward` gets `ctx` and `grad` and reads `(x,) = ctx.saved_tensors`.

# %% id="ex-03-10-solution" tags=["solution"] exercise="03.10"
from course_lib.autograd import Function


class Softplus(Function):
    """softplus(x) = log(1 + exp(x)) with a hand-written backward."""

    @staticmethod
    def forward(ctx, x):
        ### BEGIN SOLUTION
        ctx.save_for_backward(x)
        return (x.exp() + 1).log()
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad):
        ### BEGIN SOLUTION
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()
        ### END SOLUTION


# %% id="ex-03-10-check" tags=["check", "nbval-check-output"] exercise="03.10" points=3
check("03.10", Softplus)


# %% [markdown] id="memory-md"
# ## 10 · Measure: the memory of saved activations
#
# Every op that needs its input or output for backward keeps it alive until backward runs: for a deep network,
# these **activations** dominate memory, far more than the weights. `course_lib.memory` counts the bytes held
# by live storages (views cost nothing: they share a storage), with the same names as
# `torch.cuda.memory_allocated()` and `torch.cuda.max_memory_allocated()`.
#
# Below, a chain of `depth` layers `h = sin(0.9 h)` on a vector of 100,000 float32 (400 kB): each layer saves the
# input of its `sin`, so memory after the forward pass grows by about 400 kB per layer, and backward gives it back.

# %% id="memory-demo"
def layer(h):
    return (h * 0.9).sin()


def forward_memory(depth, n=100_000):
    x = cl.randn(n, requires_grad=True)
    gc.collect()
    base = memory.memory_allocated()
    h = x
    for _ in range(depth):
        h = layer(h)
    held = memory.memory_allocated() - base
    h.sum().backward()
    del h
    gc.collect()
    return held, memory.memory_allocated() - base


for depth in (1, 4, 16):
    held, after = forward_memory(depth)
    print(f"depth {depth:2d}: {held / 1e6:5.1f} MB held after forward, {after / 1e6:4.1f} MB after backward (x.grad)")

# %% [markdown] id="checkpoint-md"
# ### Checkpointing: compute twice, store less
#
# `course_lib.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)` runs `fn` so that its ops record the
# graph but keep none of their saved tensors; the first time backward needs one, it reruns `fn` on the same
# inputs (replaying the random number generator) and takes the saved tensors from that run. Split a chain of
# $N$ layers into $\sqrt N$ checkpointed segments (`checkpoint_sequential`) and the forward pass keeps only the
# segments' inputs, about $\sqrt N$ activations instead of $N$, at the price of a second forward pass. The
# gradients are the same.
#
# > **In PyTorch:** `torch/utils/checkpoint.py`. The non-reentrant version is built, as here, on
# > `torch.autograd.graph.saved_tensors_hooks`: the pack hook keeps a handle instead of the tensor, and the
# > unpack hook recomputes.
#
# The plot measures the **peak** (forward and backward together) for both, over depths from 4 to 64.

# %% id="checkpoint-plot"
from course_lib.utils.checkpoint import checkpoint_sequential


def peak_memory(depth, checkpointed, n=100_000):
    cl.manual_seed(0)
    x = cl.randn(n, requires_grad=True)
    gc.collect()
    base = memory.memory_allocated()
    memory.reset_peak_memory_stats()
    if checkpointed:
        h = checkpoint_sequential([layer] * depth, max(1, round(math.sqrt(depth))), x)
    else:
        h = x
        for _ in range(depth):
            h = layer(h)
    h.sum().backward()
    return (memory.max_memory_allocated() - base) / 1e6, x.grad.numpy().copy()


depths = [4, 8, 16, 32, 64]
plain, ckpt = [], []
for depth in depths:
    p, g_plain = peak_memory(depth, False)
    c, g_ckpt = peak_memory(depth, True)
    plain.append(p)
    ckpt.append(c)
    assert np.allclose(g_plain, g_ckpt, rtol=1e-5), "checkpointing must not change the gradients"

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(depths, plain, "o-", label="every activation kept")
ax.plot(depths, ckpt, "s-", label="checkpoint_sequential, sqrt(depth) segments")
ax.set_xlabel("depth (layers)")
ax.set_ylabel("peak memory (MB)")
ax.set_title("Peak memory of forward + backward, 400 kB per activation")
ax.legend()
fig.tight_layout()
plt.show()
for d, p, c in zip(depths, plain, ckpt):
    print(f"depth {d:2d}: {p:5.1f} MB without, {c:5.1f} MB with checkpointing")

# %% [markdown] id="summary"
# ## Summary and what comes next
#
# - Autograd records a DAG of nodes during the forward pass; leaves end in `AccumulateGrad`, every other
#   tensor points to the node that made it through `grad_fn`, and each node lists its inputs' nodes in
#   `next_functions`.
# - Each node applies a vector-Jacobian product formula (`derivatives.py`, PyTorch's `derivatives.yaml`); the
#   engine sums broadcast gradients back to each input's shape.
# - The engine counts dependencies and runs each node once, when all its gradient has arrived: a topological
#   order, not recursion.
# - `.grad` accumulates (zero it each step); backward frees saved tensors (`retain_graph` keeps them); the
#   version counter catches in-place changes to saved tensors; `create_graph` records the backward pass for
#   higher derivatives; `gradcheck` compares with finite differences.
# - Saved activations cost memory proportional to depth; checkpointing trades a second forward pass for it.
#
# In **chapter 04** these pieces become `nn.Module` and `Parameter`: leaves that a module registers, a
# `state_dict` to save them, and an optimizer that updates them under `no_grad`.
