# ---
# jupyter:
#   course:
#     title: Modules
# ---

# %% [markdown] id="intro"
# # 04 · Modules
#
# Chapters 01 to 03 built tensors and autograd: you can now compute a loss and get its gradient. A neural
# network needs one more thing, a way to **organise** the tensors it learns. `nn.Module` is that: an object
# that owns parameters, buffers and other modules, can walk them, save and load them, switch between
# training and evaluation, and call hooks around its forward pass. Almost everything in `torch.nn` is a
# `Module`, from `Linear` to a whole ResNet.
#
# **You will build**
#
# - `MiniModule.__setattr__`: the routing that makes `self.fc = nn.Linear(...)` register a child;
# - `named_parameters`: the depth-first walk, with the deduplication that keeps shared weights from being
#   updated twice;
# - `load_state_dict` with strict key checking and PyTorch's error messages;
# - `record_activations`: forward hooks that collect activation statistics, which we then plot;
# - `MyLinear`, a layer from scratch, and `conv2d_im2col`, a convolution as one matrix product;
# - `make_layer`, the function that stacks ResNet's residual blocks;
# - `sgd_step`, stochastic gradient descent with momentum, exactly as `torch.optim.SGD` does it;
# - `module_apply`, the walk behind `.to()`, `.half()` and `.double()` that converts a model in place, and
#   `adam_step`, Adam and AdamW with their bias correction and decoupled weight decay;
# - `select_conv_backend`, PyTorch's choice between oneDNN and im2col for a CPU convolution, and
#   `PrimitiveCache`, the LRU cache oneDNN keeps its compiled convolutions in.
#
# Then you will train a small convolutional network to over 95% test accuracy in a few seconds and measure
# where its time goes.
#
# *Prerequisites:* chapter 03 (autograd: `requires_grad`, `backward`, `no_grad`); Python classes,
# `__getattr__`/`__setattr__`. *Expected time:* about 4 hours.

# %% id="setup"
import time

import matplotlib.pyplot as plt
import numpy as np

import course_lib as cl
from course import check
from course_lib import nn
from course_lib.nn import functional as F

# %% [markdown] id="dicts-md"
# ## 1 · A module is three dictionaries
#
# Write a network the usual way and look inside it. `Module.__init__` creates a few ordered dictionaries
# before anything else happens; the three that matter most are
#
# | dictionary | holds | example |
# |---|---|---|
# | `_parameters` | `nn.Parameter`s: tensors the optimizer updates | `fc.weight`, `fc.bias` |
# | `_buffers` | other tensors that are part of the model's state | BatchNorm's `running_mean` |
# | `_modules` | child modules | `self.fc`, `self.bn` |
#
# Ordinary attributes (`self.hidden = 16`) still go to the instance's `__dict__`. The next cell shows where
# each assignment of a small network ended up.

# %% id="dicts-demo"
class Tiny(nn.Module):
    def __init__(self, hidden: int = 4):
        super().__init__()                       # creates _parameters, _buffers, _modules, hook dicts, ...
        self.hidden = hidden                     # a plain attribute
        self.fc = nn.Linear(3, hidden)           # a child module
        self.bn = nn.BatchNorm1d(hidden)         # a child module with buffers
        self.scale = nn.Parameter(cl.ones(1))    # a parameter of Tiny itself
        self.register_buffer("steps", cl.zeros((), dtype=cl.int64))                # a buffer
        self.register_buffer("scratch", cl.zeros(hidden), persistent=False)        # not saved

    def forward(self, x):
        return self.bn(self.fc(x)).relu() * self.scale


net = Tiny()
print("_parameters:", list(net._parameters))
print("_buffers:   ", list(net._buffers), "  non-persistent:", sorted(net._non_persistent_buffers_set))
print("_modules:   ", list(net._modules))
print("__dict__:   ", [k for k in vars(net) if not k.startswith("_")])
print("net.fc is net._modules['fc']:", net.fc is net._modules["fc"])
print("'fc' in vars(net):", "fc" in vars(net))
print(net)


# %% [markdown] id="setattr-md"
# `net.fc` works although `fc` is not in `vars(net)`: Python calls `Module.__getattr__` when ordinary lookup
# fails, and it looks in the three dictionaries. The work is done on the way *in*, by `Module.__setattr__`,
# which runs on **every** `self.x = value`. In PyTorch's order:
#
# 1. a `Parameter` goes to `_parameters` (after removing the name from `__dict__`, `_buffers` and `_modules`,
#    so an old plain attribute cannot shadow it);
# 2. a name that is already a parameter accepts only `None` (the slot stays, empty), anything else is a
#    `TypeError`;
# 3. a `Module` goes to `_modules` (after removing the name from the other places); a name that is already a
#    child accepts only a module or `None`;
# 4. a name that is already a buffer accepts a tensor or `None`;
# 5. anything else, including a plain tensor under a new name, becomes an ordinary attribute.
#
# Assigning a `Parameter`, a `Module` or an `nn.Buffer` before `super().__init__()` fails, because the
# dictionary it must go into does not exist yet; anything else (a plain tensor, a number) becomes an ordinary
# attribute even then, by rule 5. Each error message says what to do:

# %% id="setattr-errors"
def show_error(statement, **names):
    try:
        exec(statement, {"cl": cl, "nn": nn, **names})
    except Exception as e:
        print(f"{statement:28} -> {type(e).__name__}: {e}")


m = nn.Module()
m.w = nn.Parameter(cl.ones(2))
m.sub = nn.Linear(2, 2)
m.register_buffer("buf", cl.zeros(2))
show_error("m.w = cl.zeros(2)", m=m)
show_error("m.sub = 3", m=m)
show_error("m.buf = 'text'", m=m)


class TooEarly(nn.Module):
    def __init__(self):
        self.w = nn.Parameter(cl.ones(1))
        super().__init__()


show_error("TooEarly()", TooEarly=TooEarly)
m.w = None
print("after m.w = None:", dict(m._parameters))

# %% [markdown] id="ex-04-1-task"
# > **In PyTorch:** `torch/nn/modules/module.py`. Read `Module.__init__` (it uses `super().__setattr__` for its
# > own dictionaries, for the same reason `MiniModule` below uses `object.__setattr__`), then `__setattr__`,
# > `__getattr__` and `__delattr__`, and `register_parameter`/`register_buffer`/`add_module`.
# > `course_lib/nn/modules/module.py` follows the same order of checks.
#
# ## Exercise 04.1 · `MiniModule.__setattr__` (2 points)
#
# `MiniModule` below is a `Module` cut down to its three dictionaries. `__init__`, `register_buffer` and
# `__getattr__` are given; write `__setattr__(self, name, value)` following rules 1-5 above:
#
# - a `nn.Parameter` goes into `self._parameters[name]`, after deleting `name` from `self.__dict__`,
#   `_buffers` and `_modules`; if `_parameters` does not exist yet (no `__init__` call so far) raise
#   `AttributeError("cannot assign parameters before Module.__init__() call")`;
# - if `name` is already in `_parameters`: `None` is stored there, anything else raises
#   `TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or None expected)")`;
# - a `MiniModule` goes into `_modules` (deleting `name` from `__dict__`, `_parameters`, `_buffers`); if `name`
#   is already in `_modules`, `None` is stored, anything else raises
#   `TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' (torch.nn.Module or None expected)")`;
# - if `name` is in `_buffers`: a `cl.Tensor` or `None` is stored there, anything else raises
#   `TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.nn.Buffer, torch.Tensor or None expected)")`;
# - otherwise `object.__setattr__(self, name, value)`.
#
# `_typename` names types the way PyTorch's messages do (`'torch.FloatTensor'`, `'int'`). The check
# subclasses your class, makes the assignments of the cells above (and a few more), and compares where each
# value landed, and each error, with what `nn.Module` does.
#
# *Hint:* read the dictionaries with `self.__dict__.get("_parameters")`: plain `self._parameters` would call
# your `__getattr__` before `__init__` has run.

# %% id="ex-04-1-solution" tags=["solution"] exercise="04.1"
import course_lib as cl
from course_lib import nn
from course_lib.nn.modules.module import _typename


class MiniModule:
    """A Module cut down to its three dictionaries."""

    def __init__(self):
        # object.__setattr__: our own __setattr__ needs these dictionaries to exist first
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_modules", {})

    def register_buffer(self, name, tensor):
        self._buffers[name] = tensor

    def __getattr__(self, name):
        # only called when ordinary lookup fails
        for store in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__.get(store, {})
            if name in d:
                return d[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        """Route `value` to _parameters, _modules, _buffers or the instance's __dict__."""
        ### BEGIN SOLUTION
        params = self.__dict__.get("_parameters")
        buffers = self.__dict__.get("_buffers")
        modules = self.__dict__.get("_modules")

        def remove_from(*dicts):
            for d in dicts:
                if d is not None:
                    d.pop(name, None)

        if isinstance(value, nn.Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, buffers, modules)
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, MiniModule):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(self.__dict__, params, buffers)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, cl.Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)
        ### END SOLUTION


# %% id="ex-04-1-check" tags=["check", "nbval-check-output"] exercise="04.1" points=2
check("04.1", MiniModule)

# %% [markdown] id="traversal-md"
# ## 2 · Walking the tree, once per object
#
# Every "for all parameters" in PyTorch is a walk over `_modules`, depth first, with the module itself
# before its children:
#
# - `named_modules()` yields `('', self)`, then each descendant under its dotted path (`'layer1.0.conv1'`);
# - `named_parameters()` yields, for each module in that order, its own `_parameters` (skipping `None`),
#   named `module path + '.' + parameter name`;
# - `children()` is one level of `_modules`; `modules()`, `parameters()`, `buffers()` drop the names.
#
# A module or a parameter can be reachable along **several paths**: reuse a layer twice, or *tie* a decoder's
# weight to an embedding. The walks then yield each object **once**, under the first path that reaches it,
# because an optimizer given the same parameter twice would update it twice per step. `state_dict` (section
# 4) is the exception: it keeps every path, so each key can be loaded back.

# %% id="traversal-demo"
lin = nn.Linear(2, 2)
shared = nn.Sequential(lin, lin, nn.Sequential(lin))
print("named_modules():                      ", [n for n, _ in shared.named_modules()])
print("named_modules(remove_duplicate=False):", [n for n, _ in shared.named_modules(remove_duplicate=False)])
print("named_parameters():                   ", [n for n, _ in shared.named_parameters()])
print("state_dict() keys:                    ", list(shared.state_dict()))


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.emb.weight          # weight tying: one Parameter, two places


tied = TiedLM()
print("tied parameters:", [n for n, _ in tied.named_parameters()], "| state_dict:", list(tied.state_dict()))
print("numbers to learn:", sum(p.numel() for p in tied.parameters()))


# %% [markdown] id="ex-04-2-task"
# > **In PyTorch:** `named_modules`, `_named_members` and `named_parameters` in `torch/nn/modules/module.py`.
# > `_named_members` keeps a `memo` set of the objects already yielded; `named_modules` keeps its own.
#
# ## Exercise 04.2 · `named_parameters` (2 points)
#
# Write `named_parameters(module, prefix="")` for a real `nn.Module`: return a **list** of
# `(name, parameter)` pairs in the order PyTorch yields them:
#
# - the module's own `_parameters` first, in order, skipping `None` entries, named `prefix + "." + key`
#   (just `key` when `prefix` is `""`);
# - then each child of `_modules` in order (skipping `None`), recursively, with prefix
#   `prefix + "." + child_name` (or `child_name`);
# - a parameter object already in the list is **not** added again, whichever path reaches it.
#
# Use only `_parameters` and `_modules`: do not call `module.named_parameters` (it is what you are rebuilding),
# nor `module.parameters` or `module._named_members`, which walk the tree for it.
#
# *Hint:* a recursive helper that shares one `seen` set of `id(parameter)` values across the whole walk.

# %% id="ex-04-2-solution" tags=["solution"] exercise="04.2"
def named_parameters(module, prefix: str = "") -> list:
    """(dotted name, parameter) pairs, depth first, each parameter once."""
    ### BEGIN SOLUTION
    out, seen = [], set()

    def walk(mod, pre):
        for key, p in mod._parameters.items():
            if p is None or id(p) in seen:
                continue
            seen.add(id(p))
            out.append((pre + "." + key if pre else key, p))
        for name, child in mod._modules.items():
            if child is not None:
                walk(child, pre + "." + name if pre else name)

    walk(module, prefix)
    return out
    ### END SOLUTION


# %% id="ex-04-2-check" tags=["check", "nbval-check-output"] exercise="04.2" points=2
check("04.2", named_parameters)

# %% [markdown] id="modes-md"
# ## 3 · `train()`, `eval()` and `no_grad()` are three different switches
#
# They are often mixed up, because evaluation code usually uses `model.eval()` *and* `with no_grad():`. But
# they change different things:
#
# | | `model.train()` (the default) | `model.eval()` | `with cl.no_grad():` |
# |---|---|---|---|
# | what it sets | `m.training = True` on every submodule | `m.training = False` on every submodule | grad mode off for this thread |
# | `Dropout` | zeroes elements with probability p, scales the rest by 1/(1-p) | identity | **no effect** (follows `training`) |
# | `BatchNorm` | normalises with the batch's statistics and **updates** `running_mean`/`running_var` | normalises with the running statistics, updates nothing | **no effect** (still updates the running stats in train mode) |
# | autograd | records the graph | **still records the graph** | records nothing: outputs have `requires_grad=False`, no `grad_fn` |
# | memory | saves tensors for backward | saves tensors for backward | saves nothing |
#
# `train(mode)` walks `modules()` and sets `training`; layers read `self.training` in `forward`. Grad mode is
# not a module property at all: it is the thread-local flag of chapter 03, read by the dispatcher. The cell
# below checks each row.

# %% id="modes-demo"
cl.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5))
x = cl.randn(8, 4)


def report(label):
    bn = model[1]
    before = bn.running_mean.clone()
    y = model(x)
    zeros = (y == 0).float().mean().item()
    moved = not bool((bn.running_mean == before).all())
    print(f"{label:24} training={str(model.training):5}  dropout zeros={zeros:4.2f}  "
          f"BN stats updated={str(moved):5}  y.requires_grad={str(y.requires_grad):5}  "
          f"grad_fn={type(y.grad_fn).__name__}")


model.train()
report("train()")
with cl.no_grad():
    report("train() + no_grad()")
model.eval()
report("eval()")
with cl.no_grad():
    report("eval() + no_grad()")
print("train('yes') ->", end=" ")
try:
    model.train("yes")
except ValueError as e:
    print(f"ValueError: {e}")

# %% [markdown] id="modes-after"
# So evaluation wants **both**: `eval()` for the right layer behaviour, `no_grad()` (or `inference_mode()`)
# to skip the graph and its memory. And a forgotten `eval()` under `no_grad()` silently corrupts BatchNorm's
# running statistics with test data.
#
# > **In PyTorch:** `Module.train`/`eval` in `torch/nn/modules/module.py`; Dropout's and BatchNorm's use of
# > `self.training` in `torch/nn/modules/dropout.py` and `torch/nn/modules/batchnorm.py`; grad mode in
# > `torch/autograd/grad_mode.py` and `c10/core/GradMode.h`.

# %% [markdown] id="state-dict-md"
# ## 4 · `state_dict` and loading it back
#
# `state_dict()` is the model's state as an ordered dictionary of tensors, by dotted name: every parameter and
# every *persistent* buffer, module by module, in the same order as the walk of section 2 but **without**
# deduplication. The tensors are detached but share storage with the model: save them, don't mutate them.
# The dictionary also carries `_metadata`, each module's `_version`, so that `load_state_dict` can upgrade
# old checkpoints (BatchNorm is at version 2 since it gained `num_batches_tracked`).
#
# `load_state_dict(sd, strict=True)`:
#
# 1. walks the model, comparing its keys with `sd`'s; collects **missing** keys (in the model, not in `sd`),
#    **unexpected** keys (in `sd`, not in the model) and **size mismatches**;
# 2. if `strict` and there are missing or unexpected keys, or if there is any size mismatch (even with
#    `strict=False`), raises one `RuntimeError` listing **all** problems;
# 3. otherwise copies each value *in place* into the existing tensor (`param.copy_(value)` under `no_grad`):
#    the `Parameter` objects stay the same (an optimizer holding them keeps working) and values are cast to
#    the model's dtype;
# 4. returns `(missing_keys, unexpected_keys)`, which prints as `<All keys matched successfully>` when both
#    are empty.
#
# course_lib checks everything *before* writing anything, so a failed load leaves the model as it was
# (real PyTorch copies as it goes: see the note after the demo).

# %% id="state-dict-demo"
src = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
sd = src.state_dict()
print(list(sd))
print("_metadata:", dict(sd._metadata))
print("shares storage with the weight:", sd["0.weight"].data_ptr() == src[0].weight.data_ptr(),
      "| requires_grad:", sd["0.weight"].requires_grad)
print("Tiny's state_dict (no 'scratch', it is not persistent):", list(Tiny().state_dict()))

dst = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
weight_object = dst[0].weight
print(dst.load_state_dict(sd), "| same Parameter object:", dst[0].weight is weight_object)

bad = src.state_dict()
del bad["1.running_mean"], bad["1.running_var"]
bad["extra.w"] = cl.ones(1)
try:
    dst.load_state_dict(bad)
except RuntimeError as e:
    print(e)
print(dst.load_state_dict(bad, strict=False))

wrong = src.state_dict()
wrong["0.weight"] = cl.ones(5, 5)
before = dst[1].weight.clone()
try:
    dst.load_state_dict(wrong, strict=False)
except RuntimeError as e:
    print(e)
print("the model is unchanged:", bool((dst[1].weight == before).all()))

# %% [markdown] id="ex-04-3-task"
# > **In PyTorch:** `state_dict`, `_save_to_state_dict`, `load_state_dict` and `_load_from_state_dict` in
# > `torch/nn/modules/module.py`; BatchNorm's version upgrade is `_load_from_state_dict` in
# > `torch/nn/modules/batchnorm.py`. (PyTorch copies module by module, so a size mismatch found late can leave
# > earlier modules already overwritten; course_lib plans every copy first.)
#
# ## Exercise 04.3 · `load_state_dict` (3 points)
#
# Write `load_state_dict(module, state_dict, strict=True)`:
#
# - `own = module.state_dict(keep_vars=True)` gives the model's parameters and persistent buffers by name (the
#   tensors themselves, not detached copies);
# - `missing` = keys of `own` not in `state_dict` (in `own`'s order), `unexpected` = keys of `state_dict` not
#   in `own` (in `state_dict`'s order);
# - a key in both whose shapes differ is an error, with or without `strict`:
#   `f"size mismatch for {key}: copying a param with shape torch.Size({list(new.shape)}) from checkpoint, the shape in current model is torch.Size({list(old.shape)})."`;
# - the messages, in this order: if `strict` and `missing`,
#   `'Missing key(s) in state_dict: "a", "b". '`; if `strict` and `unexpected`,
#   `'Unexpected key(s) in state_dict: "c". '` (mind the space at the end of both); then the size mismatches;
# - if there is any message, raise
#   `RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(messages))`
#   **before** copying anything;
# - otherwise copy each value present in both into the model's tensor with `copy_`, under `cl.no_grad()`,
#   and return `(missing, unexpected)`.
#
# *Hint:* first compute, then raise, then copy: that order is what makes a failed load harmless.

# %% id="ex-04-3-solution" tags=["solution"] exercise="04.3"
import course_lib as cl


def load_state_dict(module, state_dict, strict: bool = True) -> tuple[list, list]:
    """Copy `state_dict` into `module` in place; returns (missing_keys, unexpected_keys)."""
    ### BEGIN SOLUTION
    own = module.state_dict(keep_vars=True)
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    messages = []
    if strict and missing:
        messages.append("Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
    if strict and unexpected:
        messages.append("Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
    for key, old in own.items():
        if key in state_dict and tuple(state_dict[key].shape) != tuple(old.shape):
            new = state_dict[key]
            messages.append(f"size mismatch for {key}: copying a param with shape torch.Size({list(new.shape)}) "
                            f"from checkpoint, the shape in current model is torch.Size({list(old.shape)}).")
    if messages:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(messages))
    with cl.no_grad():
        for key, old in own.items():
            if key in state_dict:
                old.copy_(state_dict[key])
    return missing, unexpected
    ### END SOLUTION


# %% id="ex-04-3-check" tags=["check", "nbval-check-output"] exercise="04.3" points=3
check("04.3", load_state_dict)

# %% [markdown] id="hooks-md"
# ## 5 · Hooks: code that runs around `forward`
#
# `model(x)` does not call `forward` directly. `Module.__call__` (`_call_impl`) runs, in order:
#
# 1. the **forward pre-hooks**, `hook(module, args)`: they may return new arguments;
# 2. `forward(*args)`;
# 3. the **forward hooks**, `hook(module, args, output)`: a non-`None` return value replaces the output;
# 4. (if registered) **backward hooks** are attached to the graph, so that `hook(module, grad_input,
#    grad_output)` runs during `backward()`.
#
# `register_forward_hook` returns a *handle*; `handle.remove()` takes the hook out again. When no module has
# any hook, `_call_impl` skips all of this and calls `forward` straight away: hooks cost nothing until used.
#
# Hooks let you look inside a model without editing it: print shapes, record activations, time layers,
# clip or log gradients. Here they print the shape coming out of each layer:

# %% id="hooks-demo"
cl.manual_seed(0)
mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
handles = [m.register_forward_hook(
               lambda mod, args, out, name=name: print(f"{name:3} {type(mod).__name__:7} "
                                                      f"in {tuple(args[0].shape)} -> out {tuple(out.shape)}"))
           for name, m in mlp.named_children()]
handles.append(mlp[0].register_forward_pre_hook(lambda mod, args: (args[0] * 0,)))   # replaces the input
y = mlp(cl.randn(2, 8))
print("the pre-hook replaced the input by zeros, so both rows of y are equal:", bool((y[0] == y[1]).all()))
for h in handles:
    h.remove()
print("hooks left:", [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in mlp.modules()])

# %% [markdown] id="ex-04-4-task"
# > **In PyTorch:** `_call_impl` and `register_forward_pre_hook`, `register_forward_hook`,
# > `register_full_backward_hook` in `torch/nn/modules/module.py`; `RemovableHandle` in
# > `torch/utils/hooks.py`. Global hooks for every module: `register_module_forward_hook`.
#
# ## Exercise 04.4 · `record_activations` (2 points)
#
# Write `record_activations(model, x, types)`: run `model(x)` once and return what every submodule that is an
# instance of one of `types` (a tuple of classes) produced, as a **list** of records in the order the modules
# ran:
#
# - a record is `(name, mean, std, zero_fraction)`: the module's dotted name from `model.named_modules()`,
#   then `out.mean()`, `out.std()` (PyTorch's default, with Bessel's correction) and the fraction of output
#   elements exactly equal to 0, each as a Python `float` (`.item()`);
# - a module that runs twice (ResNet's blocks reuse their `relu`) gives two records;
# - run the model under `cl.no_grad()`;
# - remove the hooks you registered before returning, even if the model raised, and **only** those: the
#   model may have hooks of its own.
#
# *Hint:* a closure per module captures its name: `def hook(mod, args, out, name=name): ...`. Keep the
# handles in a list and `remove()` them in a `finally:` block.

# %% id="ex-04-4-solution" tags=["solution"] exercise="04.4"
import course_lib as cl


def record_activations(model, x, types) -> list[tuple[str, float, float, float]]:
    """(name, mean, std, zero fraction) of the output of each module of `types`, in the order they ran."""
    ### BEGIN SOLUTION
    records, handles = [], []
    for name, module in model.named_modules():
        if isinstance(module, types):
            def hook(mod, args, out, name=name):
                out = out.detach()
                records.append((name, out.mean().item(), out.std().item(), (out == 0).float().mean().item()))
            handles.append(module.register_forward_hook(hook))
    try:
        with cl.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return records
    ### END SOLUTION


# %% id="ex-04-4-check" tags=["check", "nbval-check-output"] exercise="04.4" points=2
check("04.4", record_activations)


# %% [markdown] id="stats-md"
# **What activation statistics tell you.** Take a deep stack of `Linear` + `ReLU` layers and feed it unit
# Gaussian inputs. With a good initialisation every layer's output keeps roughly the same scale; with a bad one
# the signal shrinks or explodes layer after layer, and gradients with it. The next cell builds the same
# 10-layer network three times, with PyTorch's default initialisation (uniform, bound $1/\sqrt{\text{fan\_in}}$),
# with Kaiming's normal initialisation for ReLU (std $\sqrt{2/\text{fan\_in}}$) and with plain $N(0, 1)$
# weights, and plots the standard deviation of each ReLU's output, recorded with your `record_activations`
# (or course_lib's copy if you have not done 04.4 yet).

# %% id="stats-figure" grader_runs="print('`course grade` skips the figure')"
def deep_mlp(init, width=128, depth=10):
    layers = []
    for _ in range(depth):
        lin = nn.Linear(width, width)
        if init == "kaiming normal":
            nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
        elif init == "N(0, 1)":
            nn.init.normal_(lin.weight, 0.0, 1.0)
        nn.init.zeros_(lin.bias)
        layers += [lin, nn.ReLU()]
    return nn.Sequential(*layers)


try:
    record_activations(nn.ReLU(), cl.zeros(2), (nn.ReLU,))
    recorder = record_activations
except NotImplementedError:
    from course.checks import chapter_checks

    recorder = chapter_checks("04").reference_record_activations

cl.manual_seed(0)
x = cl.randn(256, 128)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for init, colour in [("default (PyTorch)", "#2b8cbe"), ("kaiming normal", "#31a354"), ("N(0, 1)", "#de2d26")]:
    records = recorder(deep_mlp(init), x, (nn.ReLU,))
    stds = [r[2] for r in records]
    axes[0].semilogy(range(1, len(stds) + 1), stds, "o-", color=colour, label=init)
    axes[1].plot(range(1, len(stds) + 1), [r[3] for r in records], "o-", color=colour, label=init)
    print(f"{init:18} std after layer 1: {stds[0]:9.3g}   after layer 10: {stds[-1]:9.3g}")
axes[0].set(xlabel="layer", ylabel="std of the ReLU output (log scale)", title="activation scale, layer by layer")
axes[1].set(xlabel="layer", ylabel="fraction of zeros", ylim=(0, 1), title="ReLU outputs that are exactly 0")
axes[0].legend()
plt.tight_layout()
plt.show()

# %% [markdown] id="stats-after"
# PyTorch's default shrinks the signal by about $\sqrt{6}$ per layer (its bound was chosen long ago, for
# other activations); Kaiming's keeps it steady, because it compensates for ReLU zeroing half of the
# values; $N(0, 1)$ multiplies it by about 8 per layer. About half of every ReLU's outputs are zero in all
# three. ResNet (section 8) uses Kaiming's initialisation for its convolutions.

# %% [markdown] id="linear-md"
# ## 6 · `Linear` from the inside
#
# `nn.Linear(in_features, out_features)` computes $y = x W^\top + b$ with a weight of shape
# `(out_features, in_features)`: one row per output, so `W[j]` holds the weights of output `j`. The layer is
# a thin shell:
#
# - `__init__` makes two `Parameter`s and calls `reset_parameters()`, which draws both from
#   $U(-1/\sqrt{\text{in}}, 1/\sqrt{\text{in}})$ (written as `kaiming_uniform_(weight, a=sqrt(5))` for
#   historical reasons);
# - `bias=False` still *registers* the name: `register_parameter("bias", None)`, so `self.bias` is `None`
#   rather than missing;
# - `forward` calls `F.linear`. In PyTorch a 2-D input with a bias is a single `addmm(bias, x, W.t())` op; a
#   contiguous input of any other number of dimensions with a bias is viewed as 2-D, goes through the same
#   `addmm`, and is viewed back (`view`, `addmm`, `view`); without a bias, or for an input that cannot be
#   viewed as 2-D, it is `x @ W.t()`, plus `b` if there is one. course_lib takes the `addmm` path for 2-D
#   inputs only: below, its 3-D input goes through `matmul` (seen as its pieces) and `add`.

# %% id="linear-demo"
from course_lib.utils import LoggingMode

cl.manual_seed(0)
layer = nn.Linear(3, 2)
print(layer, "| weight", tuple(layer.weight.shape), "| bound 1/sqrt(3) =", round(1 / 3 ** 0.5, 4),
      "| max |w| =", round(layer.weight.abs().max().item(), 4))
print("bias=False ->", dict(nn.Linear(3, 2, bias=False)._parameters.items()).get("bias", "missing"))
with LoggingMode():
    layer(cl.randn(4, 3))           # 2-d input: one addmm
with LoggingMode():
    layer(cl.randn(5, 4, 3))        # 3-d input: matmul (seen as its pieces) and add

# %% [markdown] id="ex-04-5-task"
# > **In PyTorch:** `torch/nn/modules/linear.py` (`Linear.__init__`, `reset_parameters`, `forward`),
# > `torch/nn/functional.py` (`linear` is bound from C++: `torch._C._nn.linear`), and
# > `aten/src/ATen/native/Linear.cpp`, where `linear` picks `addmm` for inputs with a bias: directly for a 2-D
# > input, between two `view`s for a contiguous N-D one. The initialisers are in `torch/nn/init.py`.
#
# ## Exercise 04.5 · `MyLinear` (2 points)
#
# Write the `__init__` and `forward` of `MyLinear(nn.Module)`, a `Linear` of your own:
#
# - `__init__(in_features, out_features, bias=True)`: call `super().__init__()`; store `in_features` and
#   `out_features`; make `self.weight`, a `nn.Parameter` of shape `(out_features, in_features)`, and
#   `self.bias`, one of shape `(out_features,)`, or `self.register_parameter("bias", None)` when
#   `bias=False`; fill both from $U(-1/\sqrt{\text{in}}, 1/\sqrt{\text{in}})$ (`nn.init.uniform_(t, a, b)`
#   or `nn.init.kaiming_uniform_(w, a=math.sqrt(5))`);
# - `forward(x)` for `x` of shape `(..., in_features)`: `x @ weight.t()`, plus the bias if there is one.
#   Use tensor operations only, so that autograd records them.
#
# *Hint:* `nn.Parameter(cl.empty(out_features, in_features))` makes an uninitialised parameter to fill.

# %% id="ex-04-5-solution" tags=["solution"] exercise="04.5"
import math

import course_lib as cl
from course_lib import nn


class MyLinear(nn.Module):
    """y = x W^T + b, initialised like PyTorch's Linear."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        ### BEGIN SOLUTION
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(cl.empty(out_features, in_features))
        nn.init.uniform_(self.weight, -bound, bound)
        if bias:
            self.bias = nn.Parameter(cl.empty(out_features))
            nn.init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        out = x @ self.weight.t()
        if self.bias is not None:
            out = out + self.bias
        return out
        ### END SOLUTION


# %% id="ex-04-5-check" tags=["check", "nbval-check-output"] exercise="04.5" points=2
check("04.5", MyLinear)

# %% [markdown] id="conv-md"
# ## 7 · `Conv2d` from the inside: im2col and one matrix product
#
# A 2-D convolution layer with weight $W$ of shape `(C_out, C, kh, kw)` computes, for every image $n$, output
# channel $o$ and output pixel $(y, x)$,
#
# $$\text{out}[n, o, y, x] = b[o] + \sum_{c, i, j} W[o, c, i, j]\; \text{in}_\text{padded}[n, c,\; s\,y + i,\; s\,x + j]$$
#
# (a cross-correlation: the kernel is not flipped), with output size $H_o = \lfloor (H + 2p - k_h) / s \rfloor + 1$
# for stride $s$ and padding $p$, and the same for the width.
#
# Written as loops that is six nested `for`s. **im2col** turns it into one matrix product: copy the input
# pixels under each window into one column of a matrix, so that column $(y, x)$ holds the
# $C \cdot k_h \cdot k_w$ values the kernel meets at output pixel $(y, x)$. Then
# `W.reshape(C_out, C*kh*kw) @ columns` computes every output pixel of every output channel at once, and BLAS
# does the heavy lifting. The price is memory: every input pixel is copied up to $k_h k_w$ times.
#
# The picture below shows a 2-channel 4x4 input and a 3x3 kernel: each cell of the column matrix shows which
# input pixel it copies; the red window and the red column are the same 18 numbers.

# %% id="im2col-figure" grader_runs="print('`course grade` skips the figure')"
from course_lib.viz import draw_im2col

draw_im2col(channels=2, height=4, width=4, kernel=3, out_channels=3, highlight=(0, 1))
plt.show()
draw_im2col(channels=1, height=4, width=4, kernel=3, stride=2, padding=1, out_channels=3, highlight=(1, 1))
plt.show()

# %% [markdown] id="call-path-md"
# With padding (second picture) the border windows reach outside the image; those cells are zeros. With
# stride 2 the windows jump two pixels, and there are 4 output pixels instead of 16.
#
# **The call path.** `nn.Conv2d(...)(x)` goes through the same layers as every op of this course:
#
# 1. `Conv2d.forward` (`course_lib/nn/modules/conv.py`) calls `F.conv2d(input, weight, bias, stride, padding,
#    dilation, groups)`;
# 2. `F.conv2d` (`course_lib/nn/functional.py`) normalises the arguments and dispatches the registry's
#    `convolution` op;
# 3. the dispatcher tries modes, then autograd (which records `ConvolutionBackward0`), then the CPU kernel
#    `convolution` in `course_lib/_ops/nn_ops.py`, which builds the columns and calls one BLAS product.
#
# A dispatch mode that prints the Python frames it was called through makes that visible:

# %% id="call-path"
import traceback

from course_lib._ops.registry import OPS
from course_lib.utils import TorchDispatchMode


class ShowCallPath(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.name == "convolution":
            lines = []
            for frame in traceback.extract_stack()[:-1]:
                if "course_lib" in frame.filename:
                    lines.append(f"  {frame.name:16} {frame.filename[frame.filename.find('course_lib'):]}")
                elif frame.name == "<module>":
                    lines = ["  <module>         (this notebook)"]     # start at the notebook cell
            print("\n".join(lines))
            kernel = OPS["convolution"].cpu
            print(f"  -> kernel {kernel.__name__} in {kernel.__module__}")
        return func(*args)


cl.manual_seed(0)
conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
image = cl.randn(2, 3, 16, 16)
with ShowCallPath():
    out = conv(image)
print(conv, "->", tuple(out.shape), "| grad_fn:", type(out.grad_fn).__name__)
print("schema:", OPS["convolution"].schema)
with LoggingMode():
    out.sum().backward()

# %% [markdown] id="cache-md"
# **The plan cache.** Everything about a convolution's geometry except the numbers (output size, window
# shape, padding) depends only on (input shape, weight shape, stride, padding, dilation, groups). A training
# loop calls the same convolution with the same shapes thousands of times, so the kernel computes that plan
# once and keeps it in a small LRU cache, `conv_plan` (a `functools.lru_cache`). oneDNN, which PyTorch uses
# for CPU convolutions, does the same with its *primitive cache*: creating a primitive is expensive, so
# `ideep` looks it up by a key built from shapes and attributes before creating a new one. Section 14 comes back to
# both: how PyTorch picks a convolution backend, and an LRU cache like ideep's, written by hand.

# %% id="cache-demo"
from course_lib._ops.nn_ops import conv_plan

conv_plan.cache_clear()
for step in range(5):
    conv(image).sum().backward()           # forward and backward both ask for the plan
print("same shape, 5 steps:  ", conv_plan.cache_info())
conv(cl.randn(4, 3, 16, 16))               # a new batch size is a new key
print("after a new shape:    ", conv_plan.cache_info())

# %% [markdown] id="ex-04-6-task"
# > **In PyTorch:** `torch/nn/modules/conv.py` (`Conv2d.forward` -> `_conv_forward` -> `F.conv2d`);
# > `F.conv2d` is `torch.conv2d`, a binding generated at build time into
# > `torch/csrc/autograd/generated/python_torch_functions_*.cpp` from the entry in
# > `aten/src/ATen/native/native_functions.yaml`. It reaches `at::conv2d` -> `at::convolution` ->
# > `at::_convolution` in `aten/src/ATen/native/Convolution.cpp`, which picks a backend (oneDNN via
# > `aten/src/ATen/native/mkldnn/Conv.cpp`, cuDNN, or the slow im2col path in
# > `aten/src/ATen/native/ConvolutionMM2d.cpp` with `Unfold2d.cpp`). oneDNN's primitive cache is an LRU cache
# > keyed by shapes and attributes (ideep's `computation_cache` in `lru_cache.hpp`).
#
# ## Exercise 04.6 · `conv2d_im2col` (3 points)
#
# Write `conv2d_im2col(x, weight, bias=None, stride=1, padding=0)` in **numpy**:
#
# - `x` has shape `(N, C, H, W)`, `weight` `(C_out, C, kh, kw)`, `bias` `(C_out,)` or `None`; `stride` and `padding`
#   are ints, the same for height and width;
# - return the numpy array `F.conv2d` would compute: shape `(N, C_out, Ho, Wo)` with
#   $H_o = \lfloor (H + 2p - k_h)/s \rfloor + 1$ (same for $W_o$), the same dtype as `x`;
# - build the windows as a view (no Python loop over pixels or channels), then one matrix product. The check
#   counts the lines of Python your function runs on a 130x130 image: a loop over its pixels shows. Do not
#   call `sys.settrace` or `sys.setprofile`: switching the check's line counter off would hide a loop from it.
#
# *Hint:* `np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))` has shape
# `(N, C, H', W', kh, kw)`; slice `[:, :, ::stride, ::stride]`, move the channel axis next to the kernel axes
# (`transpose(0, 2, 3, 1, 4, 5)`) and reshape to `(N, Ho, Wo, C*kh*kw)`: that last axis lines up with
# `weight.reshape(C_out, -1)`.

# %% id="ex-04-6-solution" tags=["solution"] exercise="04.6"
import numpy as np


def conv2d_im2col(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, stride: int = 1,
                  padding: int = 0) -> np.ndarray:
    """2-d cross-correlation of x (N, C, H, W) with weight (C_out, C, kh, kw), as one matrix product."""
    ### BEGIN SOLUTION
    C_out, C, kh, kw = weight.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding))) if padding else x
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    N, _, Ho, Wo = windows.shape[:4]
    columns = windows.transpose(0, 2, 3, 1, 4, 5).reshape(N, Ho, Wo, C * kh * kw)
    out = columns @ weight.reshape(C_out, -1).T  # (N, Ho, Wo, C_out)
    if bias is not None:
        out = out + bias
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))
    ### END SOLUTION


# %% id="ex-04-6-check" tags=["check", "nbval-check-output"] exercise="04.6" points=3
check("04.6", conv2d_im2col)

# %% [markdown] id="resnet-md"
# ## 8 · ResNet: residual blocks stacked by `_make_layer`
#
# Deep plain networks are hard to train: past a few dozen layers, adding layers makes *training* error worse.
# ResNet's fix is the **residual block**: instead of asking a few layers to learn a mapping $H(x)$, let them
# learn the residual $F(x) = H(x) - x$ and add $x$ back through a *shortcut*:
#
# $$\text{out} = \text{relu}\big(F(x) + \text{shortcut}(x)\big), \qquad F = \text{bn}_2 \circ \text{conv}_2 \circ \text{relu} \circ \text{bn}_1 \circ \text{conv}_1 .$$
#
# If the best thing a block can do is nothing, it only has to drive $F$ to zero; and the gradient always has a
# direct path back through the additions. The shortcut is the identity when shapes match; when a block
# halves the resolution (stride 2) or changes the number of channels, it is a 1x1 convolution with that stride
# followed by BatchNorm: the **downsample** branch.
#
# `BasicBlock` (ResNet-18/34) has two 3x3 convolutions; `Bottleneck` (ResNet-50 and deeper) has 1x1 -> 3x3 -> 1x1,
# with the last one widening by `expansion = 4`. A ResNet is a stem (7x7 convolution, BatchNorm, ReLU, max
# pool), four **stages** `layer1`..`layer4` with 64, 128, 256 and 512 planes, then global average pooling and
# a `Linear` classifier. `_make_layer(block, planes, blocks, stride)` builds one stage: the first block gets
# the stride and, if needed, the downsample branch; the others keep the shape. It also updates
# `self.inplanes`, the width the next stage starts from.
#
# The summary below runs resnet18 on one 64x64 image with forward hooks on its top-level children (section 5
# again), then lists its `state_dict` keys, which are exactly torchvision's.

# %% id="resnet-summary"
from course_lib.models import resnet18

cl.manual_seed(0)
model = resnet18().eval()
shapes = {}
hooks = [child.register_forward_hook(lambda m, a, out, name=name: shapes.__setitem__(name, tuple(out.shape)))
         for name, child in model.named_children()]
with cl.no_grad():
    model(cl.randn(1, 3, 64, 64))
for h in hooks:
    h.remove()

print(f"{'module':8} {'type':18} {'blocks':>6} {'parameters':>11}  output shape")
for name, child in model.named_children():
    n_params = sum(p.numel() for p in child.parameters())
    blocks = len(child) if isinstance(child, nn.Sequential) else ""
    print(f"{name:8} {type(child).__name__:18} {blocks!s:>6} {n_params:>11,}  {shapes[name]}")
print(f"{'total':8} {'':18} {'':>6} {sum(p.numel() for p in model.parameters()):>11,}")
print()
print(model.layer2)

# %% id="resnet-keys"
keys = list(model.state_dict())
print(len(keys), "state_dict keys;", sum(1 for k in keys if k.endswith("num_batches_tracked")),
      "of them num_batches_tracked")
print("first:", keys[:7])
print("layer2.0:", [k for k in keys if k.startswith("layer2.0.")])
print("last:", keys[-4:])

# %% [markdown] id="ex-04-7-task"
# > **In PyTorch:** `torchvision/models/resnet.py`: `conv3x3`, `conv1x1`, `BasicBlock`, `Bottleneck`,
# > `ResNet._make_layer`, `ResNet._forward_impl`, and `resnet18` -> `_resnet(BasicBlock, [2, 2, 2, 2], ...)`.
# > course_lib's copy is `course_lib/models/resnet.py`, with the same names so a torchvision checkpoint loads
# > with `strict=True`.
#
# ## Exercise 04.7 · `make_layer` (2 points)
#
# Write `make_layer(block, inplanes, planes, blocks, stride=1)`, ResNet's `_make_layer` as a function (with
# `groups=1`, no dilation, BatchNorm as the norm layer). Return the pair `(stage, new_inplanes)`:
#
# - a downsample branch is needed when `stride != 1` or `inplanes != planes * block.expansion`; it is
#   `nn.Sequential(conv1x1(inplanes, planes * block.expansion, stride), nn.BatchNorm2d(planes * block.expansion))`,
#   otherwise `None`;
# - the first block is `block(inplanes, planes, stride, downsample)`;
# - the other `blocks - 1` are `block(planes * block.expansion, planes)`;
# - `stage` is an `nn.Sequential` of the blocks and `new_inplanes` is `planes * block.expansion`.
#
# The check compares the repr and the `state_dict` shapes of your stage with `ResNet._make_layer`'s.
#
# *Hint:* for `Bottleneck` (expansion 4), `make_layer(Bottleneck, 64, 64, 3)` needs a downsample although
# the stride is 1: the block outputs 256 channels, not 64.

# %% id="ex-04-7-solution" tags=["solution"] exercise="04.7"
from course_lib import nn
from course_lib.models.resnet import conv1x1


def make_layer(block, inplanes: int, planes: int, blocks: int, stride: int = 1) -> tuple:
    """One ResNet stage: (nn.Sequential of `blocks` blocks, the number of channels it outputs)."""
    ### BEGIN SOLUTION
    width = planes * block.expansion
    downsample = None
    if stride != 1 or inplanes != width:
        downsample = nn.Sequential(conv1x1(inplanes, width, stride), nn.BatchNorm2d(width))
    layers = [block(inplanes, planes, stride, downsample)]
    for _ in range(1, blocks):
        layers.append(block(width, planes))
    return nn.Sequential(*layers), width
    ### END SOLUTION


# %% id="ex-04-7-check" tags=["check", "nbval-check-output"] exercise="04.7" points=2
check("04.7", make_layer)

# %% [markdown] id="optim-md"
# ## 9 · An optimizer step
#
# An optimizer holds **references** to the parameters (it never copies them) in `param_groups`, a list of
# dicts each with its own hyperparameters (`lr`, `momentum`, ...), and per-parameter `state`, keyed by the
# parameter object. `step()` reads each parameter's `.grad` and updates the parameter **in place**;
# `zero_grad()` sets the gradients to `None` so that the next `backward()` does not add to them.
#
# SGD with momentum, exactly as `torch.optim.SGD` does it, for each parameter $p$ with gradient $g$:
#
# $$g \leftarrow g + \lambda p \quad\text{(weight decay)}$$
# $$b \leftarrow \begin{cases} g & \text{first step} \\ \mu b + (1 - \tau) g & \text{afterwards} \end{cases} \quad\text{(momentum buffer, dampening } \tau)$$
# $$g \leftarrow \begin{cases} g + \mu b & \text{Nesterov} \\ b & \text{otherwise} \end{cases} \qquad p \leftarrow p - \gamma g .$$
#
# Note the first step: the buffer is the gradient itself, *not* dampened. The buffer lives in
# `optimizer.state[p]["momentum_buffer"]`, which is what `optimizer.state_dict()` saves.

# %% id="optim-demo"
cl.manual_seed(0)
lin = nn.Linear(3, 1)
opt = cl.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
shown = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
print("param_groups:", [{k: g[k] for k in shown} | {"params": f"{len(g['params'])} tensors"} for g in opt.param_groups])
print("the group holds the Parameter objects:", opt.param_groups[0]["params"][0] is lin.weight)
x, y = cl.randn(8, 3), cl.randn(8, 1)


def norm(t):
    return (t * t).sum().sqrt().item()


for step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(lin(x), y)
    loss.backward()
    opt.step()
    buf = opt.state[lin.weight]["momentum_buffer"]
    print(f"step {step}: loss {loss.item():.4f}  |grad| {norm(lin.weight.grad):.4f}  "
          f"|momentum buffer| {norm(buf):.4f}")
print("after zero_grad():", (opt.zero_grad(), lin.weight.grad)[1])

# %% [markdown] id="ex-04-8-task"
# > **In PyTorch:** `torch/optim/optimizer.py` (`Optimizer`, `param_groups`, `state`, `zero_grad`,
# > `state_dict`) and `torch/optim/sgd.py` (`_single_tensor_sgd` is the formula above, one parameter at a time;
# > `_multi_tensor_sgd` does the same with `torch._foreach_*` ops over all parameters at once).
#
# ## Exercise 04.8 · `sgd_step` (2 points)
#
# Write `sgd_step(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)`: one
# step of the formula above.
#
# - `params` is a list of parameters; skip those whose `.grad` is `None`;
# - `state` is a dict you keep between calls, like `optimizer.state`: `state[p]["momentum_buffer"]` is `p`'s
#   buffer (create `state[p]` on the first step that uses momentum; with `momentum=0` no buffer is needed);
# - update each parameter **in place** (`p.sub_(...)`, `p.add_(..., alpha=...)` or `p.copy_(...)`) inside
#   `with cl.no_grad():`, so the `Parameter` objects stay the same and autograd records nothing;
# - return `None`.
#
# *Hint:* the first buffer must be a copy (`g.clone()`), not `g` itself: the next `backward()` would otherwise
# change it.

# %% id="ex-04-8-solution" tags=["solution"] exercise="04.8"
import course_lib as cl


def sgd_step(params, state: dict, lr: float, momentum: float = 0.0, dampening: float = 0.0,
             weight_decay: float = 0.0, nesterov: bool = False) -> None:
    """One step of SGD with momentum, in place, as torch.optim.SGD computes it."""
    ### BEGIN SOLUTION
    with cl.no_grad():
        for p in params:
            if p.grad is None:
                continue
            g = p.grad
            if weight_decay != 0:
                g = g + weight_decay * p
            if momentum != 0:
                s = state.setdefault(p, {})
                buf = s.get("momentum_buffer")
                if buf is None:
                    buf = s["momentum_buffer"] = g.clone()
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g + momentum * buf if nesterov else buf
            p.add_(g, alpha=-lr)
    ### END SOLUTION


# %% id="ex-04-8-check" tags=["check", "nbval-check-output"] exercise="04.8" points=2
check("04.8", sgd_step)

# %% [markdown] id="apply-md"
# ## 10 · Converting a module in place, and freezing it
#
# `model.double()`, `model.half()`, `model.to(cl.float64)` and `model.float()` look like four features. They are one
# method, `Module._apply(fn)`, called with four different `fn`s: it walks the tree (children first) and replaces
# every parameter, every buffer and every parameter's `.grad` by `fn` of it. `.to(dtype)` converts only floating
# point tensors (BatchNorm's integer `num_batches_tracked` stays `int64`); `.to(device)` is the same walk with a
# device copy as `fn`.
#
# The detail that matters is *how* a parameter is replaced. The optimizer of section 9 holds references to the
# `Parameter` objects in its `param_groups`, and its state is keyed by them. If `_apply` put a new `Parameter` in
# `module._parameters`, an optimizer built before the conversion would go on updating the old tensors, which the
# model no longer uses, and training would silently stop. So `_apply` keeps the object and swaps what it holds:
# `param.data = fn(param)`, the same `Parameter`, with new storage, dtype and values. Gradients are converted the
# same way, so that `p.grad` has `p`'s dtype again. Buffers belong to the module, not to an optimizer:
# `_apply` simply puts `fn(buf)` back into `module._buffers[name]`.

# %% id="apply-demo"
cl.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
opt = cl.optim.SGD(net.parameters(), lr=0.1)
weight = net[0].weight
F.mse_loss(net(cl.randn(5, 3)), cl.randn(5, 2)).backward()

net.double()
print("same Parameter object:", net[0].weight is weight, "| its dtype:", weight.dtype, "| grad:", weight.grad.dtype)
print("buffers:", {name: b.dtype for name, b in net.named_buffers()})
print("the optimizer still holds it:", opt.param_groups[0]["params"][0] is net[0].weight)

# %% [markdown] id="freeze-md"
# **Freezing.** `module.requires_grad_(False)` sets `requires_grad = False` on every parameter of the tree (it
# is not an `_apply`: no tensor is replaced). Autograd then records nothing for those parameters, `backward()`
# leaves their `.grad` at `None`, and the optimizer skips them (`sgd_step` skipped a parameter without a gradient
# too). That is how you fine-tune only the head of a pretrained network. Freezing is not `eval()`: a frozen
# BatchNorm in training mode still updates its running statistics, and a frozen network still builds a graph
# for its input if the input requires grad.

# %% id="freeze-demo"
net.float()
net[0].requires_grad_(False)                      # freeze the first layer
print("requires_grad:", {name: p.requires_grad for name, p in net.named_parameters()})
net.zero_grad()
F.mse_loss(net(cl.randn(5, 3)), cl.randn(5, 2)).backward()
print("grads after backward:", {name: p.grad is not None for name, p in net.named_parameters()})

# %% [markdown] id="ex-04-9-task"
# > **In PyTorch:** `torch/nn/modules/module.py`: `Module._apply` (with `compute_should_use_set_data`, which picks
# > `param.data = ...`, and `torch.__future__.set_overwrite_module_params_on_conversion`, which would replace the
# > objects instead), and `to`, `float`, `double`, `half`, `cuda`, `cpu`, `type` and `requires_grad_` beside it.
#
# ## Exercise 04.9 · `module_apply` (2 points)
#
# Write `module_apply(module, fn)`, `Module._apply` as a function. Return `module`, after:
#
# - calling itself on each child (`module.children()`) first;
# - for each entry of `module._parameters` that is not `None`: computing `fn(param)` under `cl.no_grad()` and
#   storing it with `param.data = ...`, so that the `Parameter` object (and its `requires_grad`) stays; then, if
#   `param.grad` is not `None`, replacing it by `fn(param.grad)` (under `no_grad` too);
# - for each buffer that is not `None`: storing `fn(buffer)` back into `module._buffers` under its name.
#
# The check builds random module trees (nested, with buffers, gradients, modules used twice and tied weights) and
# an SGD optimizer over their parameters, calls your function with several `fn`s, compares every parameter,
# buffer and gradient (dtype and values) with `Module._apply`'s, checks that each parameter is still the same
# object, and takes an optimizer step to see that it updates the model. Besides dtype conversions, `fn` is
# `t * 2` and a function that adds to `t` the number of its earlier calls: like `Module._apply`, your function
# reaches a module used twice (and a tied weight) twice and calls `fn` each time, in the order above. Do not
# call `Module._apply` or the methods built on it (`to`, `float`, `double`, `half`, `type`).
#
# *Hint:* `module._parameters.items()` and `module._buffers.items()` are plain dicts; assigning to
# `module._buffers[name]` while iterating over `list(module._buffers.items())` is safe.

# %% id="ex-04-9-solution" tags=["solution"] exercise="04.9"
import course_lib as cl


def module_apply(module, fn):
    """Replace every parameter's data, every grad and every buffer of the tree by fn of it; return module."""
    ### BEGIN SOLUTION
    for child in module.children():
        module_apply(child, fn)
    for param in module._parameters.values():
        if param is None:
            continue
        with cl.no_grad():
            param.data = fn(param)
            if param.grad is not None:
                param.grad = fn(param.grad)
    for name, buf in list(module._buffers.items()):
        if buf is not None:
            module._buffers[name] = fn(buf)
    return module
    ### END SOLUTION


# %% id="ex-04-9-check" tags=["check", "nbval-check-output"] exercise="04.9" points=2
check("04.9", module_apply)

# %% [markdown] id="adam-md"
# ## 11 · Adam and AdamW
#
# SGD moves every parameter by the same multiple of its gradient. **Adam** gives each number its own step size:
# it keeps two running averages per parameter, of the gradient ($m$, the first moment) and of its square ($v$,
# the second moment), and divides one by the square root of the other. For step $t = 1, 2, \dots$ with gradient
# $g$, learning rate $\gamma$ and decay rates $\beta_1, \beta_2$ (`betas`, default `(0.9, 0.999)`):
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1)\, g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\, g^2,$$
# $$\hat m = \frac{m}{1 - \beta_1^t}, \qquad \hat v = \frac{v}{1 - \beta_2^t}, \qquad p \leftarrow p - \gamma\, \frac{\hat m}{\sqrt{\hat v} + \epsilon}.$$
#
# $m$ and $v$ start at zero, so after one step $m = 0.1\, g$ and $v = 0.001\, g^2$: far too small. Dividing by
# $1 - \beta^t$, the **bias correction**, undoes exactly that (after the first step $\hat m = g$ and $\hat v = g^2$,
# so the first update is $\gamma\, g / (|g| + \epsilon)$, a step of about $\gamma$ whatever the gradient's scale);
# as $t$ grows, $\beta^t \to 0$ and the correction fades.
#
# **Weight decay** comes in two kinds. `Adam(weight_decay=λ)` adds $\lambda p$ to the gradient before the
# moments (L2 regularisation, as SGD does); Adam then divides it by $\sqrt{\hat v}$ like the rest of the
# gradient, so parameters with large gradients are barely decayed. `AdamW` **decouples** it: before the Adam
# update it shrinks the parameter directly, $p \leftarrow p\,(1 - \gamma \lambda)$, and the gradient stays the
# loss's own (Loshchilov and Hutter, *Decoupled Weight Decay Regularization*). `AdamW`'s default `weight_decay`
# is `0.01`, `Adam`'s is `0`. The state, per parameter, is `step`, `exp_avg` ($m$) and `exp_avg_sq` ($v$).

# %% id="adam-demo"
cl.manual_seed(0)
x, y = cl.randn(64, 3), cl.randn(64, 1)
for name, make in [("SGD", lambda ps: cl.optim.SGD(ps, lr=0.1, momentum=0.9)),
                   ("Adam", lambda ps: cl.optim.Adam(ps, lr=0.1)),
                   ("AdamW", lambda ps: cl.optim.AdamW(ps, lr=0.1, weight_decay=0.1))]:
    cl.manual_seed(1)
    lin = nn.Linear(3, 1)
    opt = make(lin.parameters())
    losses = []
    for step in range(30):
        opt.zero_grad()
        loss = F.mse_loss(lin(x), y)
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 4))
    print(f"{name:6} loss at steps 0, 1, 5, 29: {losses[0]}, {losses[1]}, {losses[5]}, {losses[29]}")
print("AdamW's state for the weight:", sorted(opt.state[lin.weight]))

# %% [markdown] id="ex-04-10-task"
# > **In PyTorch:** `torch/optim/adam.py` (`_single_tensor_adam`: `exp_avg.lerp_(grad, 1 - beta1)`,
# > `exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)`, then `param.addcdiv_(exp_avg, denom,
# > value=-step_size)` with the bias corrections folded into `step_size` and `denom`) and `torch/optim/adamw.py`
# > (`AdamW` is `Adam` with `decoupled_weight_decay=True`). course_lib's tensors have `lerp_` but not `addcmul_` or
# > `addcdiv_`: write those two with `mul_`, `add_(..., alpha=...)` and ordinary arithmetic.
#
# ## Exercise 04.10 · `adam_step` (2 points)
#
# Write `adam_step(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False)`:
# one step of the formulas above for each parameter, as `Adam` (or, with `decoupled=True`, `AdamW`) does it.
#
# - `params` is a list of parameters and `grads` their gradients in the same order; skip a parameter whose
#   gradient is `None`;
# - `state` is a dict you keep between calls: `state[p]` holds `"step"` (the number of steps taken, a number),
#   `"exp_avg"` and `"exp_avg_sq"` (tensors like `p`, starting at zeros);
# - weight decay: `g = g + weight_decay * p` before the moments, or, with `decoupled=True`,
#   `p <- p * (1 - lr * weight_decay)` before the update and `g` unchanged;
# - update in place under `cl.no_grad()` (the `Parameter` objects stay the same), and return `None`.
#
# The check runs 5 steps of your function and of `optim.Adam`/`optim.AdamW` on random problems and compares the
# parameters after each step and the state after the last. Do not call `Adam.step`.
#
# *Hint:* keep the step count per parameter and compute the two corrections from it: `1 - beta1 ** step`.

# %% id="ex-04-10-solution" tags=["solution"] exercise="04.10"
import course_lib as cl


def adam_step(params, grads, state: dict, lr: float, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
              weight_decay: float = 0.0, decoupled: bool = False) -> None:
    """One Adam (decoupled=False) or AdamW (decoupled=True) step, in place."""
    ### BEGIN SOLUTION
    beta1, beta2 = betas
    with cl.no_grad():
        for p, g in zip(params, grads):
            if g is None:
                continue
            s = state.setdefault(p, {})
            if not s:
                s.update(step=0, exp_avg=cl.zeros_like(p), exp_avg_sq=cl.zeros_like(p))
            s["step"] += 1
            if weight_decay != 0:
                if decoupled:
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g + weight_decay * p
            m, v = s["exp_avg"], s["exp_avg_sq"]
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).add_(g * g, alpha=1 - beta2)
            m_hat = m / (1 - beta1 ** s["step"])
            v_hat = v / (1 - beta2 ** s["step"])
            p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
    ### END SOLUTION


# %% id="ex-04-10-check" tags=["check", "nbval-check-output"] exercise="04.10" points=2
check("04.10", adam_step)

# %% [markdown] id="train-md"
# ## 12 · Training a small network
#
# Time to put the pieces together. `course_lib.datasets.make_shapes` draws small grayscale images of four
# shapes (a square outline, a disk, a plus and a cross) at random sizes and positions on a noisy background.
# The same seed always gives the same images; we use one seed for 1500 training images and another for 500
# test images.

# %% id="train-data" grader_runs="from course_lib.datasets import make_shapes; train_x, train_y = make_shapes(1500, size=12, seed=1); test_x, test_y = make_shapes(500, size=12, seed=2)  # `course grade` skips the figure"
from course_lib.datasets import SHAPE_CLASSES, make_shapes

train_x, train_y = make_shapes(1500, size=12, seed=1)
test_x, test_y = make_shapes(500, size=12, seed=2)
print("train:", train_x.shape, train_x.dtype, "| test:", test_x.shape, "| classes:", SHAPE_CLASSES)

fig, axes = plt.subplots(2, 8, figsize=(10, 2.8))
for ax, image, label in zip(axes.flat, train_x, train_y):
    ax.imshow(image[0], cmap="gray")
    ax.set_title(SHAPE_CLASSES[label], fontsize=9)
    ax.axis("off")
plt.tight_layout()
plt.show()


# %% [markdown] id="train-model-md"
# The network: two convolution stages (3x3 convolution, ReLU, 2x2 max pool), then a `Linear` classifier, about
# 1,200 parameters. The loop is the one every PyTorch program has: shuffle, then for each mini-batch
# `zero_grad()`, forward, loss, `backward()`, `step()`. Three passes over the data (141 steps) take a few
# seconds, and reach **at least 95% test accuracy** (the cell checks it). Everything is seeded, so the numbers
# are the same on every run.

# %% id="train"
def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),     # 6 x 6 x 6
        nn.Conv2d(6, 12, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),    # 12 x 3 x 3
        nn.Flatten(), nn.Linear(12 * 3 * 3, 4))


def accuracy(net, x, y):
    net.eval()
    with cl.no_grad():
        correct = (net(x).argmax(1) == y).float().mean().item()
    net.train()
    return correct


def train(net, epochs=3, batch_size=32, lr=0.05, momentum=0.9):
    opt = cl.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    gen = cl.Generator().manual_seed(0)
    losses, test_acc = [], []
    for epoch in range(epochs):
        order = cl.randperm(len(X_train), generator=gen)
        for start in range(0, len(X_train), batch_size):
            idx = order[start:start + batch_size]
            loss = F.cross_entropy(net(X_train[idx]), Y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        test_acc.append(accuracy(net, X_test, Y_test))
    return losses, test_acc


X_train, Y_train, X_test, Y_test = (cl.tensor(a) for a in (train_x, train_y, test_x, test_y))
cl.manual_seed(0)
cnn = make_cnn()
print("parameters:", sum(p.numel() for p in cnn.parameters()))
conv_plan.cache_clear()
start = time.perf_counter()
cnn_losses, cnn_acc = train(cnn)
print(f"trained in {time.perf_counter() - start:.1f} s; "
      f"test accuracy after each epoch: {[round(a, 3) for a in cnn_acc]}")
print("conv plans:", conv_plan.cache_info())
assert cnn_acc[-1] >= 0.95, cnn_acc

# %% [markdown] id="train-mlp-md"
# For comparison, an MLP that sees the same images as 144 numbers, with 8 times more parameters:

# %% id="train-mlp"
cl.manual_seed(0)
mlp = nn.Sequential(nn.Flatten(), nn.Linear(144, 64), nn.ReLU(), nn.Linear(64, 4))
print("parameters:", sum(p.numel() for p in mlp.parameters()))
mlp_losses, mlp_acc = train(mlp)
print("MLP test accuracy after each epoch:", [round(a, 3) for a in mlp_acc])

def smooth(v, k=10):
    return np.convolve(v, np.ones(k) / k, mode="valid")

fig, ax = plt.subplots(figsize=(7, 3.4))
ax.plot(cnn_losses, color="#9ecae1", lw=0.8)
ax.plot(range(9, len(cnn_losses)), smooth(cnn_losses), color="#08519c", label=f"CNN (test acc {cnn_acc[-1]:.1%})")
ax.plot(mlp_losses, color="#fdae6b", lw=0.8)
ax.plot(range(9, len(mlp_losses)), smooth(mlp_losses), color="#a63603", label=f"MLP (test acc {mlp_acc[-1]:.1%})")
ax.set(xlabel="step", ylabel="cross-entropy loss", title="training loss (thin: per batch, thick: mean of 10)")
ax.legend()
plt.show()


# %% [markdown] id="train-after"
# The convolutional network wins with fewer parameters because it shares each small filter across all
# positions: a plus is a plus wherever it is. The MLP has to learn every position separately.

# %% [markdown] id="measure-md"
# ## 13 · Measure: where does a training step spend its time?
#
# Hooks can time layers too. A forward pre-hook notes the time when a module starts, a forward hook when it
# ends; a full backward pre-hook and a full backward hook do the same for its part of `backward()`. The cell
# below times one training step of the CNN, layer by layer, repeated 10 times (medians). The timings vary
# from run to run and from machine to machine; look at which layers cost most, and at forward against
# backward. A convolution's backward does two matrix products (for the weight and for the input, then col2im)
# where its forward does one. Max pooling is not free either: its forward finds the maximum of every window
# (and remembers where it was, for backward) through a strided view.

# %% id="measure-layers" grader_runs="print('`course grade` skips the measurement')"
def time_layers(net, x, y, repeat=10):
    fwd, bwd, start = {}, {}, {}
    handles = []
    for name, m in net.named_children():
        def pre(mod, args, name=name):
            start[name] = time.perf_counter()

        def post(mod, args, out, name=name):
            fwd.setdefault(name, []).append(time.perf_counter() - start[name])

        def bpre(mod, grad_output, name=name):
            start["b" + name] = time.perf_counter()

        def bpost(mod, grad_input, grad_output, name=name):
            bwd.setdefault(name, []).append(time.perf_counter() - start["b" + name])

        handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post),
                    m.register_full_backward_pre_hook(bpre), m.register_full_backward_hook(bpost)]
    try:
        for _ in range(repeat):
            net.zero_grad()
            F.cross_entropy(net(x), y).backward()
    finally:
        for h in handles:
            h.remove()
    names = [n for n, _ in net.named_children()]
    return names, [np.median(fwd[n]) * 1e3 for n in names], [np.median(bwd.get(n, [0])) * 1e3 for n in names]


batch = X_train[:32].clone().requires_grad_()   # so that the first layer gets a backward hook call too
names, f_ms, b_ms = time_layers(cnn, batch, Y_train[:32])
labels = [f"{n} {type(cnn[int(n)]).__name__}" for n in names]
for label, f, b in zip(labels, f_ms, b_ms):
    print(f"{label:12} forward {f:6.3f} ms   backward {b:6.3f} ms")
fig, ax = plt.subplots(figsize=(7, 3.2))
pos = np.arange(len(names))
ax.barh(pos - 0.2, f_ms, 0.4, label="forward", color="#6baed6")
ax.barh(pos + 0.2, b_ms, 0.4, label="backward", color="#fd8d3c")
ax.set_yticks(pos, labels)
ax.invert_yaxis()
ax.set(xlabel="milliseconds (median of 10 steps, batch of 32)", title="one training step of the CNN, by layer")
ax.legend()
plt.show()

# %% [markdown] id="measure-batch-md"
# **Convolution time against batch size.** The next cells time a 3x3 convolution with 32 filters on
# `N x 16 x 16 x 16` inputs, forward only, through the whole of course_lib (`F.conv2d`: module call, dispatcher,
# plan cache, kernel), through the numpy floor (the same im2col view and batched matrix product with nothing
# around them, `_floor_conv` in `bench/chapters.py`) and through real PyTorch if it is installed (`make oracle`
# installs it). As in chapter 01, the course's benchmark harness runs each library in a fresh process of its
# own, limited to one thread, so that their thread pools cannot slow each other down. The time per image
# should fall as the batch grows, while fixed per-call costs are shared by more images, then level off when
# the matrix product dominates.

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
print("benchmark harness:",
      "found" if harness is not None else "not found (run this notebook from the course's folder)")
print("comparing with PyTorch:", "yes" if importlib.util.find_spec("torch") else "no (`make oracle` installs it)")


# %% id="measure-batch"
if harness is None:
    print("measurement skipped: the benchmark harness was not found")
else:
    rows = harness.run(bench_chapters.family("ch04 conv"), threads="1", rounds=1, repeat=5)
    batches = list(bench_chapters.CONV_BATCHES)
    labels = {"course_lib": "course_lib", "numpy": "numpy floor", "torch": "torch"}
    times = {labels[lib]: [row["times"][lib] / n * 1e6 for row, n in zip(rows, batches)]
             for lib in labels if all(lib in row["times"] for row in rows)}
    for name, values in times.items():
        print(f"{name:12}", "  ".join(f"N={n}: {v:7.1f} us" for n, v in zip(batches, values)))

    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for (name, values), colour in zip(times.items(), ["#08519c", "#969696", "#e6550d"]):
        ax.loglog(batches, values, "o-", color=colour, label=name)
    ax.set(xlabel="batch size N", ylabel="microseconds per image",
           title="3x3 conv, 16 -> 32 channels, 16x16 images, 1 thread")
    ax.legend()
    plt.show()

# %% [markdown] id="measure-after"
# course_lib's curve follows the numpy floor: with one matrix product per call, the framework adds a fixed
# cost per call (argument handling, dispatcher, plan lookup, result tensor) that matters only for small batches.
# PyTorch is faster again, and it does not use one algorithm for every batch size: for a single image
# (`N = 1`) it picks its `Slow2d` backend, im2col plus one matrix product like ours, and only from `N = 2`
# its oneDNN kernel, which computes the convolution directly, without materialising the column matrix, and is
# tuned for the machine's vector instructions. The next section reproduces that choice.
# `bench/bench_nn.py` runs the bigger workloads of this chapter (an MLP training step, a convolution forward
# and backward, resnet18 inference) beside numpy and PyTorch, the same way: `make bench` runs every benchmark,
# `.venv/bin/python bench/run.py -k resnet18` only the matching ones.

# %% [markdown] id="conv-backend-md"
# ## 14 · How PyTorch picks a convolution backend, and the primitive cache
#
# `torch.conv2d(x, w)` enters C++ through `THPVariable_conv2d`, a generated binding (the entry
# `{"conv2d", THPVariable_conv2d, ...}` of the `PyMethodDef torch_functions[]` table in
# `torch/csrc/autograd/generated/python_torch_functions_*.cpp`), then runs `at::conv2d` -> `at::convolution` ->
# `at::_convolution` in `aten/src/ATen/native/Convolution.cpp`. There, one function, `select_conv_backend`, looks
# at the shapes, dtype, flags and the machine and returns a value of the enum `ConvBackend`
# (`aten/src/ATen/native/ConvUtils.h`); a `switch` on it calls the kernel. On a CPU the candidates are:
#
# | backend | what it is |
# |---|---|
# | `Empty` | a zero batch or zero channels: no computation, an empty result of the right shape |
# | `Mkldnn`, `MkldnnTranspose` | oneDNN (formerly MKL-DNN), through `aten/src/ATen/native/mkldnn/Conv.cpp` and ideep |
# | `NnpackSpatial` | NNPACK, for large batches when oneDNN is off |
# | `Slow2d`, `Slow3d` | im2col plus one matrix product (`ConvolutionMM2d.cpp`, `Unfold2d.cpp`): what you wrote in 04.6 |
# | `SlowDilated2d`, `SlowDilated3d` | the same for dilated convolutions (`NaiveDilatedConvolution.cpp`) |
# | `SlowTranspose2d`, `SlowTranspose3d` | transposed convolution by col2im (`NaiveConvolutionTranspose2d.cpp`) |
#
# The rule that decides between oneDNN and the slow path (`ConvParams::use_mkldnn`) is a performance heuristic
# written down by someone who measured: oneDNN has a fixed cost per call (it may reorder the weight into its own
# blocked layout, and it builds a *primitive* for the shapes, see below), so for one small image the plain im2col
# path wins. `torch._C._select_conv_backend(input, weight, bias, stride, padding, dilation, transposed,
# output_padding, groups)` runs the choice without the convolution; the next cell asks it about a few convolutions
# if PyTorch is installed.

# %% id="conv-backend-torch" grader_runs="torch = None  # `course grade` does not import PyTorch"
try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed (`make oracle` installs it); the table in checks.py holds what it answers.")

if torch is not None:
    def torch_backend(input_shape, weight_shape, groups=1, transposed=False, stride=1, dtype=torch.float32):
        nd = len(input_shape) - 2
        x, w = torch.zeros(input_shape, dtype=dtype), torch.zeros(weight_shape, dtype=dtype)
        b = torch._C._select_conv_backend(x, w, None, [stride] * nd, [0] * nd, [1] * nd, transposed, [0] * nd, groups)
        return "MkldnnTranspose" if int(b) == 9 else b.name    # value 9 has no name in torch's Python enum

    print("threads:", torch.get_num_threads(), "| oneDNN enabled:", torch.backends.mkldnn.enabled)
    for args in [((1, 3, 32, 32), (8, 3, 3, 3)), ((2, 3, 32, 32), (8, 3, 3, 3)), ((1, 3, 32, 32), (8, 3, 5, 5)),
                 ((1, 3, 100, 100), (8, 3, 3, 3)), ((1, 8, 32, 32), (8, 1, 3, 3), 8),
                 ((2, 3, 32, 32), (3, 8, 3, 3), 1, True), ((2, 3, 32, 32), (8, 3, 3, 3), 1, False, 1, torch.float64)]:
        print(f"{torch_backend(*args):16}", args)

# %% [markdown] id="ex-04-11-task"
# > **In PyTorch:** `aten/src/ATen/native/Convolution.cpp`: `_select_conv_backend` and the `ConvParams` methods it
# > asks (`use_mkldnn`, `use_nnpack`, `is_output_padding_big`, `is_strided`, `is_dilated`; `is_depthwise` is true
# > only for CUDA tensors, so a depthwise convolution has no path of its own on a CPU), and `view4d` in
# > `_convolution` (a 1-d convolution runs as a 2-d one of height 1).
#
# ## Exercise 04.11 · `select_conv_backend` (2 points)
#
# Write `select_conv_backend(input_shape, weight_shape, groups=1, transposed=False, stride=(1, 1), dilation=(1, 1),
# output_padding=(0, 0), dtype="float32", num_threads=2, mkldnn_enabled=True)`, returning the name of the
# backend torch 2.13.0 picks on a CPU, for a convolution with padding 0. `stride`, `dilation` and `output_padding`
# have one number per spatial dimension; `dtype` is `"float32"` or `"float64"`; `num_threads` is
# `torch.get_num_threads()` and `mkldnn_enabled` is `torch.backends.mkldnn.enabled`. For a transposed
# convolution the weight is `(C_in, C_out / groups, k...)`. The rules, in order:
#
# 1. a batch of 0 or 0 channels: `"Empty"`;
# 2. a 1-d convolution (`input_shape` of length 3) is treated as a 2-d one: input `(N, C, 1, L)`, weight
#    `(O, I, 1, k)`, and stride, dilation, output padding get a leading `1`, `1`, `0`;
# 3. **oneDNN** when all of these hold: it is enabled; the dtype is float32; the convolution is not transposed
#    with an output padding at least its stride in some dimension; (it is strided, or dilated, or `N >= 16`, or the
#    kernel's last two sizes are not both 1, or `num_threads > 1`); and (`groups > 1`, or the kernel's last two
#    sizes are both greater than 3, or `N > 1`, or the product of the input's first four sizes is greater than
#    20480). It returns `"MkldnnTranspose"` for a transposed convolution and `"Mkldnn"` otherwise;
# 4. **NNPACK**, `"NnpackSpatial"`: float32, a 2-d convolution (after rule 2), not dilated, not transposed, both
#    kernel sizes below 17, and `N >= 16`;
# 5. otherwise the slow path: `"SlowTranspose2d"` for a transposed one, `"SlowDilated2d"` for a dilated one, else
#    `"Slow2d"`, with `3d` in place of `2d` for a 3-d convolution (`input_shape` of length 5).
#
# The check compares your answers with a table of what `torch._C._select_conv_backend` returned for 113
# convolutions (it is `CONV_BACKENDS` in `chapters/04_modules/checks.py`, and a test re-runs it in PyTorch);
# grading does not need PyTorch. Do not call PyTorch (a call to `torch._C._select_conv_backend` fails the case) or
# look answers up in that table: the rules are the exercise.
#
# *Hint:* "strided" means some stride is not 1 and "dilated" some dilation is not 1; for a 3-d input the "first
# four sizes" are `N, C, D, H` (the heuristic was written for 4-d tensors and nobody changed it).

# %% id="ex-04-11-solution" tags=["solution"] exercise="04.11"
def select_conv_backend(input_shape: tuple, weight_shape: tuple, groups: int = 1, transposed: bool = False,
                        stride: tuple = (1, 1), dilation: tuple = (1, 1), output_padding: tuple = (0, 0),
                        dtype: str = "float32", num_threads: int = 2, mkldnn_enabled: bool = True) -> str:
    """The backend `_convolution` picks for a CPU convolution (padding 0), as the ConvBackend's name."""
    ### BEGIN SOLUTION
    if input_shape[0] == 0 or input_shape[1] == 0:
        return "Empty"
    if len(input_shape) == 3:                      # conv1d runs as conv2d with height 1
        input_shape = (input_shape[0], input_shape[1], 1, input_shape[2])
        weight_shape = (weight_shape[0], weight_shape[1], 1, weight_shape[2])
        stride, dilation, output_padding = (1, *stride), (1, *dilation), (0, *output_padding)
    n, c, d1, d2 = input_shape[:4]
    kh, kw = weight_shape[-2:]
    strided = any(s != 1 for s in stride)
    dilated = any(d != 1 for d in dilation)
    padding_big = transposed and any(op >= s for op, s in zip(output_padding, stride))
    mkldnn = (mkldnn_enabled and dtype == "float32" and not padding_big
              and (strided or dilated or n >= 16 or kh != 1 or kw != 1 or num_threads > 1)
              and (groups > 1 or (kh > 3 and kw > 3) or n > 1 or n * c * d1 * d2 > 20480))
    if mkldnn:
        return "MkldnnTranspose" if transposed else "Mkldnn"
    dims = "3d" if len(input_shape) == 5 else "2d"
    if (dtype == "float32" and dims == "2d" and not dilated and not transposed and kh < 17 and kw < 17
            and n >= 16):
        return "NnpackSpatial"
    if transposed:
        return "SlowTranspose" + dims
    return ("SlowDilated" if dilated else "Slow") + dims
    ### END SOLUTION


# %% id="ex-04-11-check" tags=["check", "nbval-check-output"] exercise="04.11" points=2
check("04.11", select_conv_backend)

# %% [markdown] id="primitive-cache-md"
# **The primitive cache.** Before oneDNN computes a convolution it builds a *primitive*: it picks an algorithm and
# a memory layout for these exact shapes, strides and dtypes and generates machine code for them (just in time,
# for the vector instructions this CPU has). That costs far more than a small convolution does, so it is done
# once per distinct convolution and kept. In the ideep version that the walk-through of `_mkldnn_conv2d` reads,
# `convolution_forward::compute_impl` builds a string key from the descriptors (shapes, dtypes, strides, dilations,
# padding, attributes) and runs the macro
#
# ```c++
# #define fetch_or_create_m(op, key, ...)                 \
#     auto it = find(key);                                \
#     if (it == end()) { it = create(key, __VA_ARGS__); } \
#     auto op = fetch(it);
# ```
#
# on `computation_cache<value_t, capacity = 1024>` (`ideep/include/ideep/lru_cache.hpp`): an LRU cache of 1024
# entries. oneDNN itself has kept such a cache since version 1.x, with the same default capacity
# (`ONEDNN_PRIMITIVE_CACHE_CAPACITY=1024`). A model that feeds many different shapes (variable image sizes,
# variable sequence lengths) can have more live convolutions than that, and then every call rebuilds: a cache
# that is too small is worse than none, because it pays for the bookkeeping and still creates every time.
#
# course_lib's `conv_plan` (section 7) is the same idea with `functools.lru_cache`. Now write one by hand.

# %% [markdown] id="ex-04-12-task"
# > **In PyTorch:** `third_party/ideep/include/ideep/lru_cache.hpp` (`lru_cache`, `computation_cache`,
# > `fetch_or_create_m`), `third_party/ideep/include/ideep/operators/conv.hpp`, and oneDNN's
# > `src/common/primitive_cache.cpp`.
#
# ## Exercise 04.12 · `PrimitiveCache` (2 points)
#
# Write the class `PrimitiveCache(capacity=1024)`, an LRU cache with the interface of `fetch_or_create_m`:
#
# - `fetch_or_create(key, create)`: if `key` is in the cache, count a **hit**, make it the most recently used
#   entry and return its value; otherwise count a **miss**, call `create()` (no arguments), store its result under
#   `key` as the most recently used entry, and if the cache now holds more than `capacity` entries, drop the
#   **least recently used** one; return the new value;
# - `hits` and `misses`: the counts so far (attributes or properties); `len(cache)`: the number of entries.
#
# The check runs access sequences (a few short ones you can follow by hand, 1024 and 1025 distinct keys with the
# default capacity, and random ones with locality) on your class and on a reference built on `functools.lru_cache`,
# and compares what every call returned, how often `create` ran, and the counters. Do not use
# `functools.lru_cache` (or `functools.cache`, which calls it): a `collections.OrderedDict` is enough. The
# measurement below falls back on the chapter's own cache until yours works; its `fetch_or_create` is not
# yours to use either.
#
# *Hint:* an `OrderedDict` keeps insertion order and has `move_to_end(key)` and `popitem(last=False)`, which
# removes the oldest entry.

# %% id="ex-04-12-solution" tags=["solution"] exercise="04.12"
from collections import OrderedDict


class PrimitiveCache:
    """An LRU cache of `capacity` entries: fetch_or_create(key, create) returns the value for key, created once."""

    def __init__(self, capacity: int = 1024):
        ### BEGIN SOLUTION
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries = OrderedDict()
        ### END SOLUTION

    def fetch_or_create(self, key, create):
        ### BEGIN SOLUTION
        if key in self._entries:
            self.hits += 1
            self._entries.move_to_end(key)
            return self._entries[key]
        self.misses += 1
        value = self._entries[key] = create()
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return value
        ### END SOLUTION

    def __len__(self) -> int:
        ### BEGIN SOLUTION
        return len(self._entries)
        ### END SOLUTION


# %% id="ex-04-12-check" tags=["check", "nbval-check-output"] exercise="04.12" points=2
check("04.12", PrimitiveCache)

# %% [markdown] id="plan-cache-md"
# **Measure.** What does a cache save? A convolution's im2col plan, here the three index arrays (channel, row,
# column) that gather every window of a padded input into the column matrix, depends only on the shapes, the
# stride and the padding. The cell below times, per call, building that plan, fetching it from your cache, and
# using it (the gather that builds the columns), for a small and a larger convolution. (If 04.12 is not done
# yet, it uses the reference from the checks.) The numbers are this machine's and vary from run to run.

# %% id="plan-cache-measure" grader_runs="Cache = None  # `course grade` skips the measurement"
from course.checks import chapter_checks


def im2col_plan(shape, kernel, stride, padding):
    """Index arrays (channel, row, column), each (C*kh*kw, Ho*Wo): the padded input's pixels of each window."""
    _, C, H, W = shape
    kh, kw = kernel
    Ho, Wo = (H + 2 * padding - kh) // stride + 1, (W + 2 * padding - kw) // stride + 1
    c, i, j = (a.reshape(-1, 1) for a in np.meshgrid(np.arange(C), np.arange(kh), np.arange(kw), indexing="ij"))
    oy, ox = (a.reshape(1, -1) for a in np.meshgrid(np.arange(Ho), np.arange(Wo), indexing="ij"))
    return (np.broadcast_to(c, (C * kh * kw, Ho * Wo)), i + stride * oy, j + stride * ox)


try:
    PrimitiveCache(2).fetch_or_create("probe", lambda: None)
    Cache = PrimitiveCache
except NotImplementedError:
    Cache = chapter_checks("04").LibraryCache
    print("(04.12 not done yet: using the reference cache)")


def per_call(fn, repeat=200):
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


print(f"{'input':>16} {'build plan':>11} {'cached plan':>12} {'gather':>8}   (microseconds per call)")
for shape in [(8, 3, 16, 16), (8, 16, 64, 64)]:
    key = (shape, (3, 3), 1, 1)
    cache = Cache(1024)
    xp = np.pad(np.random.default_rng(0).standard_normal(shape).astype(np.float32), ((0, 0), (0, 0), (1, 1), (1, 1)))
    plan = im2col_plan(*key)
    build = per_call(lambda: im2col_plan(*key), repeat=20)
    cached = per_call(lambda: cache.fetch_or_create(key, lambda: im2col_plan(*key)))
    gather = per_call(lambda: xp[:, plan[0], plan[1], plan[2]], repeat=5)
    print(f"{str(shape):>16} {build:11.1f} {cached:12.2f} {gather:8.1f}   | hits {cache.hits}, misses {cache.misses}")

# %% [markdown] id="plan-cache-after"
# The cached lookup costs under a microsecond whatever the size, while building the plan grows with the output
# and is a sizeable part of the work it prepares (on the machine this chapter was written on, about a third of
# the gather for the small convolution and an eighth for the larger one). Every fast library keeps such plans:
# course_lib's `conv_plan`, ideep's `computation_cache`, and for GPUs cuDNN's algorithm cache, which
# `torch.backends.cudnn.benchmark = True` fills by timing every algorithm once per new shape.

# %% [markdown] id="summary"
# ## Summary and what comes next
#
# - A `Module` is three ordered dictionaries, `_parameters`, `_buffers` and `_modules`, filled by
#   `__setattr__`; everything else walks them.
# - Walks are depth first, self before children, and deduplicated, except `state_dict`, which keeps every
#   path so it can be loaded back. Loading checks keys and shapes, reports missing and unexpected keys, and
#   copies in place.
# - `train()`/`eval()` switch layer behaviour; `no_grad()` switches autograd off. They are independent.
# - Hooks run around `forward` and `backward` without touching the model's code: we used them to print
#   shapes, record activation statistics, summarise ResNet and time layers.
# - `Linear` is `x @ W.t() + b`; `Conv2d` is im2col plus one matrix product, behind a cached plan; ResNet is
#   residual blocks stacked by `_make_layer`; SGD with momentum is four lines per parameter.
# - `.to()`, `.half()`, `.double()` are one walk, `_apply`, which swaps each parameter's data and keeps the
#   `Parameter` object the optimizer holds; `requires_grad_(False)` freezes. Adam divides bias-corrected moment
#   estimates; AdamW decays the weights apart from the gradient.
# - PyTorch picks a convolution backend per call from shapes, dtype and thread count (im2col for one small
#   image, oneDNN from two), and oneDNN keeps what it builds for each shape in an LRU cache of 1024 entries.
#
# In **chapter 05** we open up normalization layers: BatchNorm's running statistics, LayerNorm, GroupNorm,
# and why train and eval behave differently.
