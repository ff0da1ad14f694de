"""Checks for chapter 04 (modules).

Expected values come from course_lib's library run on the same inputs in the grader: ``nn.Module``
itself (04.1, 04.2's ``named_parameters``, 04.3's ``load_state_dict``), a global forward hook
(04.4), ``nn.Linear`` and ``F.linear`` (04.5), ``F.conv2d`` (04.6), ``ResNet._make_layer`` (04.7),
``optim.SGD`` (04.8), ``Module._apply`` (04.9), ``optim.Adam``/``optim.AdamW`` (04.10) and
``functools.lru_cache`` (04.12, ``LibraryCache``); 04.11's are ``CONV_BACKENDS``, observed from torch. Models
cannot travel to the kernel, so a probe builds them there from a name or a seed (``_random_net``,
``_random_mlp``) and the grader builds the same ones; a failure names the seed, and
``course.checks.chapter_checks("04")._random_net(seed)`` rebuilds that model. Probes (the functions
taking the learner's object first) return plain data: names, shapes, numbers, and observations such
as the hooks left on a model, the grad mode while it ran, or the lines of Python a convolution ran.
"""
from __future__ import annotations

import collections
import functools
import math
import sys
from typing import Any, Callable

import numpy as np

import course_lib as cl
from course.checks import CFunction, call, exercise, probe
from course_lib import nn
from course_lib.models.resnet import BasicBlock, Bottleneck, ResNet
from course_lib.nn import functional as F
from course_lib.nn.modules.module import register_module_forward_hook


def _close(rtol: float = 1e-6, atol: float = 1e-7) -> Callable[[Any, Any], bool | str]:
    """Nested lists/tuples/dicts: floats and arrays with a tolerance, everything else exactly.

    The comparison returns True, or where the first difference is.
    """
    def diff(got, exp, path: str) -> str | None:
        where = path or "the value"
        if isinstance(exp, np.ndarray):
            if not isinstance(got, np.ndarray) or got.shape != exp.shape or got.dtype != exp.dtype:
                what = f"array {got.dtype} {got.shape}" if isinstance(got, np.ndarray) else type(got).__name__
                return f"{where}: expected an array {exp.dtype} {exp.shape}, got {what}"
            bad = ~np.isclose(got, exp, rtol=rtol, atol=atol)
            if bad.any():
                i = tuple(int(k) for k in np.argwhere(bad)[0])
                return f"{where}[{', '.join(map(str, i))}]: expected {exp[i]!r}, got {got[i]!r}"
            return None
        if isinstance(exp, float):
            ok = isinstance(got, (float, int)) and not isinstance(got, bool) and \
                math.isclose(got, exp, rel_tol=rtol, abs_tol=atol)
            return None if ok else f"{where}: expected {exp!r}, got {got!r}"
        if isinstance(exp, (list, tuple)):
            if not isinstance(got, (list, tuple)) or len(got) != len(exp):
                return f"{where}: expected {len(exp)} items, got {got!r:.60}"
            return next((d for k, (g, e) in enumerate(zip(got, exp)) if (d := diff(g, e, f"{path}[{k}]"))), None)
        if isinstance(exp, dict):
            if not isinstance(got, dict) or got.keys() != exp.keys():
                return f"{where}: expected the keys {list(exp)}, got {got!r:.60}"
            return next((d for k in exp if (d := diff(got[k], exp[k], f"{path}[{k!r}]"))), None)
        return None if type(got) is type(exp) and got == exp else f"{where}: expected {exp!r:.60}, got {got!r:.60}"

    def same(got, exp) -> bool | str:
        return diff(got, exp, "") or True
    return same


def _seed(rng) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _outcome(fn: Callable, *args) -> Any:
    """``fn(*args)``, or ``(ExcType name, message)`` if it raises (NotImplementedError passes through)."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - the error is the value being checked
        return (type(e).__name__, str(e))


def _random_net(seed: int) -> nn.Module:
    """A random tree of Modules, Sequentials, Linears, BatchNorm1ds and ReLUs, built from `seed`.

    Some Linears appear twice, some weights are tied, some children are set to None, and some
    modules hold a parameter of their own next to their children.
    """
    r = np.random.default_rng(seed)
    cl.manual_seed(seed % 2**31)
    linears: list = []

    def leaf():
        kind = int(r.integers(0, 4))
        if kind <= 1:
            if linears and r.random() < 0.25:
                return linears[int(r.integers(0, len(linears)))]      # the same module twice
            lin = nn.Linear(int(r.integers(1, 4)), int(r.integers(1, 4)), bias=bool(r.integers(0, 3)))
            if linears and r.random() < 0.25:
                lin.weight = linears[int(r.integers(0, len(linears)))].weight   # a tied weight
            linears.append(lin)
            return lin
        return nn.BatchNorm1d(int(r.integers(1, 4))) if kind == 2 else nn.ReLU()

    def node(depth: int):
        if depth >= 3 or r.random() < 0.4:
            return leaf()
        children = [node(depth + 1) for _ in range(int(r.integers(1, 4)))]
        if r.random() < 0.5:
            return nn.Sequential(*children)
        m = nn.Module()
        for k, child in enumerate(children):
            setattr(m, f"c{k}", child)
            if r.random() < 0.3:
                setattr(m, f"p{k}", nn.Parameter(cl.randn(int(r.integers(1, 3)))))
        if r.random() < 0.3:
            m.gone = nn.Linear(1, 1)
            m.gone = None
        return m

    root = nn.Module()
    for k in range(int(r.integers(2, 4))):
        setattr(root, f"block{k}", node(1))
    return root


# ------------------------------------------------------------------ 04.1 MiniModule.__setattr__


def _summary(m) -> tuple:
    """Where each name ended up: (parameters, buffers, modules, plain attributes); None slots marked."""
    def names(d):
        return [k if v is not None else k + "=None" for k, v in d.items()]
    plain = sorted(k for k in vars(m) if not k.startswith("_") and k != "training")
    return (names(m.__dict__["_parameters"]), names(m.__dict__["_buffers"]), names(m.__dict__["_modules"]), plain)


def _build(Base, body, extra=None):
    class Net(Base):
        def __init__(self):
            super().__init__()
            body(self, Base)
    m = Net()
    return _summary(m) if extra is None else (_summary(m), extra(m))


_SHARED = {}


def _p():
    """The one Parameter a scenario assigns and later looks for by identity."""
    _SHARED["p"] = nn.Parameter(cl.ones(2))
    return _SHARED["p"]


def _sc_param(B):
    def body(s, Base):
        s.w = _p()
    return _build(B, body, lambda m: (m.w is _SHARED["p"], m.__dict__["_parameters"]["w"] is _SHARED["p"]))


def _sc_child(B):
    def body(s, Base):
        s.sub = Base()
    return _build(B, body, lambda m: type(m.sub) is B)


def _sc_plain_tensor(B):
    def body(s, Base):
        s.t = cl.ones(2)
    return _build(B, body)


def _sc_plain_int(B):
    def body(s, Base):
        s.n = 3
    return _build(B, body)


def _sc_attr_then_param(B):
    def body(s, Base):
        s.w = 1
        s.w = _p()
    return _build(B, body, lambda m: m.w is _SHARED["p"])


def _sc_param_then_none(B):
    def body(s, Base):
        s.w = nn.Parameter(cl.ones(2))
        s.w = None
    return _build(B, body, lambda m: m.w is None)


def _sc_param_then_tensor(B):
    def body(s, Base):
        s.w = nn.Parameter(cl.ones(2))
        s.w = cl.zeros(2, 3)
    return _build(B, body)


def _sc_child_then_int(B):
    def body(s, Base):
        s.sub = Base()
        s.sub = 5
    return _build(B, body)


def _sc_child_then_none(B):
    def body(s, Base):
        s.sub = Base()
        s.sub = None
    return _build(B, body)


def _sc_buffer_then_tensor(B):
    def body(s, Base):
        s.register_buffer("buf", cl.zeros(2))
        s.buf = cl.ones(3)
    return _build(B, body, lambda m: int(m.buf.shape[0]))


def _sc_buffer_then_int(B):
    def body(s, Base):
        s.register_buffer("buf", cl.zeros(2))
        s.buf = 1
    return _build(B, body)


def _sc_child_then_param(B):
    def body(s, Base):
        s.sub = Base()
        s.sub = _p()
    return _build(B, body, lambda m: m.sub is _SHARED["p"])


def _sc_none_plain(B):
    def body(s, Base):
        s.x = None
    return _build(B, body)


def _sc_two_of_each(B):
    def body(s, Base):
        s.a = nn.Parameter(cl.ones(1))
        s.first = Base()
        s.b = nn.Parameter(cl.ones(1))
        s.second = Base()
        s.k = "text"
    return _build(B, body)


def _sc_param_then_module(B):
    def body(s, Base):
        s.w = nn.Parameter(cl.ones(2))
        s.w = Base()
    return _build(B, body)


def _sc_before_init(B):
    class Early(B):
        def __init__(self):
            self.w = nn.Parameter(cl.ones(2))
            super().__init__()
    return _summary(Early())


#: name -> (label, scenario(Base)); the messages of errors that name the module's class are not compared
_SCENARIOS = {
    "param": ("self.w = Parameter(...)", _sc_param),
    "child": ("self.sub = Base()", _sc_child),
    "plain_tensor": ("self.t = ones(2)", _sc_plain_tensor),
    "plain_int": ("self.n = 3", _sc_plain_int),
    "attr_then_param": ("self.w = 1; self.w = Parameter(...)", _sc_attr_then_param),
    "param_then_none": ("self.w = Parameter(...); self.w = None", _sc_param_then_none),
    "param_then_tensor": ("self.w = Parameter(...); self.w = zeros(2, 3)", _sc_param_then_tensor),
    "child_then_int": ("self.sub = Base(); self.sub = 5", _sc_child_then_int),
    "child_then_none": ("self.sub = Base(); self.sub = None", _sc_child_then_none),
    "buffer_then_tensor": ("register_buffer('buf', zeros(2)); self.buf = ones(3)", _sc_buffer_then_tensor),
    "buffer_then_int": ("register_buffer('buf', zeros(2)); self.buf = 1", _sc_buffer_then_int),
    "child_then_param": ("self.sub = Base(); self.sub = Parameter(...)", _sc_child_then_param),
    "none_plain": ("self.x = None", _sc_none_plain),
    "two_of_each": ("self.a, self.first, self.b, self.second, self.k = ...", _sc_two_of_each),
    "param_then_module": ("self.w = Parameter(...); self.w = Base()", _sc_param_then_module),
    "before_init": ("self.w = Parameter(...) before super().__init__()", _sc_before_init),
}

#: what a random assignment sequence may assign (register_buffer for "buffer")
_VALUES = {"param": "Parameter(ones(2))", "module": "Base()", "tensor": "ones(3)", "int": "7", "none": "None",
           "buffer": "zeros(2)"}


def _value(kind: str, Base):
    return {"param": lambda: nn.Parameter(cl.ones(2)), "module": Base, "tensor": lambda: cl.ones(3),
            "int": lambda: 7, "none": lambda: None, "buffer": lambda: cl.zeros(2)}[kind]()


def _setattr_scenario(MiniModule, name: str):
    """Probe: run scenario `name` on a subclass of the learner's class; where everything landed."""
    return _SCENARIOS[name][1](MiniModule)


def _setattr_sequence(MiniModule, steps: list):
    """Probe: a subclass of the learner's class whose __init__ makes the assignments `steps`, in order."""
    def body(s, Base):
        for attr, kind in steps:
            if kind == "buffer":
                s.register_buffer(attr, cl.zeros(2))
            else:
                setattr(s, attr, _value(kind, Base))
    return _build(MiniModule, body)


def _setattr_trial(fn: Callable, arg, label: str, compare_message: bool = True):
    """The trial of one scenario: expected from nn.Module (its result, or the error it raises)."""
    try:
        expected = fn(nn.Module, arg)
    except Exception as e:  # noqa: BLE001 - nn.Module's error is what the learner must raise
        return probe(fn, arg, raises=type(e), match=str(e) if compare_message else None, label=label)
    return probe(fn, arg, expected=expected, label=label)


def _sequence_label(steps) -> str:
    return "; ".join(f"register_buffer({a!r}, zeros(2))" if k == "buffer" else f"self.{a} = {_VALUES[k]}"
                     for a, k in steps)


@exercise("04.1", title="MiniModule.__setattr__", points=2,
          hint="test in PyTorch's order: a Parameter goes to _parameters (delete the name from __dict__, "
               "_buffers, _modules first); a name already in _parameters takes only None, else TypeError; then "
               "a MiniModule goes to _modules (same rules for a name already there); a name in _buffers takes "
               "a Tensor or None; anything else: object.__setattr__. Use _typename(value) in the messages.")
def _mini_module(rng):
    out = [_setattr_trial(_setattr_scenario, name, f"class Net(MiniModule): {label}",
                          compare_message=name != "param_then_module")
           for name, (label, _) in _SCENARIOS.items()]
    kinds = [k for k in _VALUES if k != "buffer"]
    for _ in range(5):  # random assignment sequences over three names, "buf" registered as a buffer first
        steps = [("buf", "buffer")] + [(str(rng.choice(["a", "b", "buf"])), str(rng.choice(kinds)))
                                       for _ in range(int(rng.integers(2, 6)))]
        # a module's class name differs between nn.Module and MiniModule: compare only the error's type then
        named_module = any(k == "module" for _, k in steps)
        out.append(_setattr_trial(_setattr_sequence, steps, f"class Net(MiniModule): {_sequence_label(steps)}",
                                  compare_message=not named_module))
    return out


# ------------------------------------------------------------------ 04.2 named_parameters


def _tagger(model) -> Callable:
    """Name each parameter object by the first path it is reachable under (so identity can be compared)."""
    tags: dict = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        tags.setdefault(id(p), name)

    def tag(p):
        return tags.get(id(p), f"<not a parameter of the model: {type(p).__name__}>")
    return tag


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3)
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.emb.weight


class _ParentFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.scale = nn.Parameter(cl.ones(1))


class _Deep(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 3)))
        self.head = nn.Linear(3, 1)
        self.gone = nn.Linear(1, 1)
        self.gone = None
        self.bias = nn.Parameter(cl.zeros(1))
        self.head.extra = self.body[1][1].weight   # one parameter reachable twice


def _shared_module():
    lin = nn.Linear(2, 2)
    return nn.Sequential(lin, lin, nn.Sequential(lin))


#: name -> (label, builder)
_MODELS = {
    "linear": ("Linear(3, 2)", lambda: nn.Linear(3, 2)),
    "no_bias": ("Linear(3, 2, bias=False)", lambda: nn.Linear(3, 2, bias=False)),
    "mlp": ("Sequential(Linear(4, 8), ReLU(), Linear(8, 2))",
            lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))),
    "shared": ("Sequential(lin, lin, Sequential(lin))", _shared_module),
    "tied": ("Tied (out.weight = emb.weight)", _Tied),
    "parent_first": ("ParentFirst (fc, then its own 'scale')", _ParentFirst),
    "bn": ("BatchNorm1d(3)", lambda: nn.BatchNorm1d(3)),
    "block": ("BasicBlock(4, 4)", lambda: BasicBlock(4, 4)),
    "deep": ("Deep (nested, a None child, a shared parameter)", _Deep),
}


def _model(spec) -> nn.Module:
    """A model of `_MODELS` by name, or `_random_net(seed)` for an int; seeded."""
    if isinstance(spec, int):
        return _random_net(spec)
    cl.manual_seed(0)
    return _MODELS[spec][1]()


def _model_label(spec) -> str:
    return f"_random_net({spec})" if isinstance(spec, int) else _MODELS[spec][0]


def _named_params_probe(named_parameters, spec, prefix: str):
    """Probe: the learner's (name, which parameter) pairs; a parameter is named by its first path."""
    model = _model(spec)
    tag = _tagger(model)
    got = named_parameters(model, prefix) if prefix else named_parameters(model)
    return [(n, tag(p)) for n, p in got]


def _library_named_params(model, prefix=""):
    return list(model.named_parameters(prefix=prefix))


@exercise("04.2", title="named_parameters", points=2,
          hint="yield the module's own _parameters first (skip None), then recurse into each child of _modules "
               "(skip None) with prefix + '.' + child name; keep a set of id()s of parameters already yielded "
               "and skip repeats. Names join with '.', with no leading dot when the prefix is ''.",
          forbid={"Module.named_parameters": nn.Module.named_parameters, "Module.parameters": nn.Module.parameters,
                  "Module._named_members": nn.Module._named_members})
def _named_parameters(rng):
    specs = [(name, "") for name in _MODELS] + [("mlp", "model"), ("deep", "net")]
    specs += [(_seed(rng), str(rng.choice(["", "m", "net.body"]))) for _ in range(4)]
    out = []
    for spec, prefix in specs:
        args = _model_label(spec) + (f", prefix={prefix!r}" if prefix else "")
        out.append(probe(_named_params_probe, spec, prefix,
                         expected=_named_params_probe(_library_named_params, spec, prefix),
                         label=f"named_parameters({args}) -> (name, which parameter)"))
    return out


# ------------------------------------------------------------------ 04.3 load_state_dict


def _seq():
    return nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))


class _WithScratch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.register_buffer("scratch", cl.zeros(3), persistent=False)


_SD_MODELS = {"seq": ("Sequential(Linear, BatchNorm1d)", _seq),
              "scratch": ("Net (a non-persistent buffer)", _WithScratch)}


def _other_values(model) -> nn.Module:
    """The model with values of its own: 0, 0.5, 1, ... (+ k for the k-th tensor), integer buffers 7."""
    with cl.no_grad():
        for i, t in enumerate(model.state_dict().values()):
            if t.is_floating_point():
                t.copy_(cl.arange(t.numel(), dtype=t.dtype).reshape(t.shape) * 0.5 + i)
            else:
                t.fill_(7)
    return model


def _sd_model(spec, seed: int) -> nn.Module:
    cl.manual_seed(seed)
    return _random_net(spec) if isinstance(spec, int) else _SD_MODELS[spec][1]()


def _checkpoint(spec, edits: dict):
    """A state_dict from a model like `spec` with other values, edited: keys dropped, added, reshaped, doubled."""
    sd = _other_values(_sd_model(spec, 1)).state_dict()
    for k in edits.get("drop", []):
        del sd[k]
    for k, shape in edits.get("reshape", []):
        sd[k] = cl.ones(tuple(shape))
    for k in edits.get("extra", []):
        sd[k] = cl.ones(1)
    if edits.get("float64"):
        meta = getattr(sd, "_metadata", None)
        sd = collections.OrderedDict((k, v.double() if v.is_floating_point() else v) for k, v in sd.items())
        if meta is not None:
            # without its versions, BatchNorm would take the checkpoint for an old one and fill in
            # num_batches_tracked (as PyTorch does): not what the exercise is about
            sd._metadata = meta
    return sd


def _load_probe(load_state_dict, spec, edits: dict, strict: bool):
    """Probe: load the edited checkpoint into a fresh model; (result or (error, its parts), what happened)."""
    model = _sd_model(spec, 0)
    sd = _checkpoint(spec, edits)
    params_before = [id(p) for p in model.parameters()]
    before = {k: (v.dtype.name, v.detach().numpy().copy()) for k, v in model.state_dict().items()}
    result = _outcome(load_state_dict, model, sd, strict)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str):
        result = (result[0], result[1].split("\n\t"))         # the message, one problem per item
    elif isinstance(result, (tuple, list)):
        result = tuple(list(x) if isinstance(x, (list, tuple)) else x for x in result)
    after = {k: (v.dtype.name, v.detach().numpy()) for k, v in model.state_dict().items()}
    changed = [k for k in before if not np.array_equal(before[k][1], after[k][1])]
    loaded_right = all(k in sd and np.allclose(after[k][1], sd[k].detach().numpy().astype(np.float64), rtol=1e-6)
                       for k in changed)
    return {"returned": result, "keys changed": changed, "to the checkpoint's values": bool(loaded_right),
            "dtypes kept": all(before[k][0] == after[k][0] for k in before),
            "same Parameter objects": [id(p) for p in model.parameters()] == params_before}


def _library_load(module, state_dict, strict):
    return module.load_state_dict(state_dict, strict=strict)


def _random_edits(rng, spec) -> tuple[dict, str]:
    shapes = {k: tuple(v.shape) for k, v in _sd_model(spec, 0).state_dict().items()}
    keys = [k for k in shapes if not k.endswith("num_batches_tracked")]
    pick = rng.permutation(len(keys))
    n_drop, n_shape = int(rng.integers(0, 3)), int(rng.integers(0, 2))
    drop = [keys[i] for i in sorted(pick[:n_drop])]
    reshape = [(keys[i], [shapes[keys[i]][0] + 1] if shapes[keys[i]] else [2]) for i in pick[n_drop:n_drop + n_shape]]
    extra = [f"extra{k}.weight" for k in range(int(rng.integers(0, 3)))]
    edits = {"drop": drop, "reshape": reshape, "extra": extra, "float64": bool(rng.integers(0, 2))}
    parts = [f"keys missing: {len(drop)}", f"unexpected: {len(extra)}", f"of another shape: {len(reshape)}"]
    return edits, ", ".join(parts) + (", float64 values" if edits["float64"] else "")


@exercise("04.3", title="load_state_dict", points=3,
          hint="own = module.state_dict(keep_vars=True). missing: keys of own not in state_dict; unexpected: keys of "
               "state_dict not in own; a size mismatch is an error even with strict=False. Collect every message "
               "(missing, then unexpected, then size mismatches), raise one RuntimeError before copying anything, "
               "else copy_ each value under no_grad and return (missing, unexpected).")
def _load_state_dict(rng):
    cases = [
        ("seq", {}, "every key", True),
        ("seq", {"drop": ["1.running_mean", "1.running_var"], "extra": ["extra.w"]}, "2 keys missing, 1 unexpected",
         True),
        ("seq", {"drop": ["1.running_mean", "1.running_var"], "extra": ["extra.w"]}, "2 keys missing, 1 unexpected",
         False),
        ("seq", {"reshape": [("0.weight", [5, 5])]}, "0.weight of shape (5, 5)", False),
        ("seq", {"reshape": [("1.bias", [3])]}, "1.bias of shape (3,)", True),
        ("seq", {"drop": ["0.bias"], "reshape": [("1.weight", [4])]}, "0.bias missing and 1.weight of shape (4,)",
         True),
        ("seq", {"float64": True}, "float64 values", True),
        ("seq", {"extra": ["2.weight"]}, "unexpected 2.weight", False),
        ("scratch", {"drop": ["fc.weight"]}, "fc.weight missing", True),
        ("scratch", {"drop": ["fc.weight"]}, "fc.weight missing", False),
    ]
    for _ in range(4):
        spec = _seed(rng)
        edits, text = _random_edits(rng, spec)
        cases.append((spec, edits, text, bool(rng.integers(0, 2))))
    out = []
    for spec, edits, text, strict in cases:
        label = (f"load_state_dict({_model_label(spec) if isinstance(spec, int) else _SD_MODELS[spec][0]}, {text}, "
                 f"strict={strict}) -> returned (or the error, one line per problem), what changed in the model")
        out.append(probe(_load_probe, spec, edits, strict, expected=_load_probe(_library_load, spec, edits, strict),
                         label=label))
    return out


# ------------------------------------------------------------------ 04.4 record_activations


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


def _with_own_hook():
    m = _mlp()
    m[1].register_forward_hook(lambda mod, args, out: None)   # the user's own hook must survive
    return m


class _Explode(nn.Module):
    def forward(self, x):
        raise RuntimeError("this model fails halfway through forward")


def _failing_model():
    """The MLP with a hook of its own on [1], whose last module raises halfway through forward."""
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), _Explode())
    m[1].register_forward_hook(lambda mod, args, out: None)
    return m


_ACTIVATIONS = {"ReLU": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid}
_TYPES = {"Linear": nn.Linear, "Conv2d": nn.Conv2d, "BatchNorm2d": nn.BatchNorm2d, **_ACTIVATIONS}


def _random_mlp(seed: int):
    """Linear layers of random widths, each followed by a random activation; (model, input shape)."""
    r = np.random.default_rng(seed)
    widths = [int(w) for w in r.integers(1, 7, size=int(r.integers(3, 6)))]
    layers: list = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), _ACTIVATIONS[str(r.choice(list(_ACTIVATIONS)))]()]
    return nn.Sequential(*layers), (int(r.integers(2, 6)), widths[0])


#: name -> (label, builder, input shape)
_HOOK_MODELS = {
    "mlp": ("Sequential(Linear, ReLU, Linear, ReLU, Linear)", _mlp, (6, 4)),
    "nested": ("Sequential(Sequential(Linear, ReLU), Linear)",
               lambda: nn.Sequential(nn.Sequential(nn.Linear(4, 6), nn.ReLU()), nn.Linear(6, 3)), (5, 4)),
    "block": ("BasicBlock(3, 3) (its relu runs twice)", lambda: BasicBlock(3, 3).eval(), (2, 3, 5, 5)),
    "own_hook": ("the MLP with a hook of its own on [1]", _with_own_hook, (6, 4)),
}


def _hooks_left(model) -> list:
    return [(name, len(m._forward_hooks)) for name, m in model.named_modules() if m._forward_hooks]


def _activations_probe(record_activations, spec, type_names: list, seed: int):
    """Probe: (records, forward hooks left on the model, grad mode seen while the model ran)."""
    cl.manual_seed(seed)
    if isinstance(spec, int):
        model, shape = _random_mlp(spec)
    else:
        model, shape = _HOOK_MODELS[spec][1](), _HOOK_MODELS[spec][2]
    x = cl.randn(*shape)
    grad_mode: list = []   # grad mode while the model runs, seen by a forward pre-hook (not a forward hook)
    watch = model.register_forward_pre_hook(lambda mod, args: grad_mode.append(cl.is_grad_enabled()))
    records = record_activations(model, x, tuple(_TYPES[t] for t in type_names))
    watch.remove()
    if isinstance(records, (list, tuple)):
        records = [tuple(r) if isinstance(r, (list, tuple)) else r for r in records]
    return {"records": records, "hooks left": _hooks_left(model), "grad enabled during forward": grad_mode}


def _hooks_left_after_failure(record_activations, seed: int):
    """Probe: the forward hooks left on a model that raised inside record_activations (its own hook must stay)."""
    cl.manual_seed(seed)
    model = _failing_model()
    try:
        record_activations(model, cl.randn(6, 4), (nn.ReLU, nn.Linear))
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - letting the model's error through is right; the hooks are checked
        pass
    return _hooks_left(model)


def reference_record_activations(model, x, types):
    """What every module of `types` produced, seen by one global forward hook (no hook on the model).

    The chapter's activation figure falls back on it while 04.4 is not done yet.
    """
    names = {id(m): n for n, m in model.named_modules()}
    records: list = []

    def hook(mod, args, out):
        if isinstance(mod, types) and id(mod) in names:
            o = out.detach()
            records.append((names[id(mod)], o.mean().item(), o.std().item(), (o == 0).float().mean().item()))

    handle = register_module_forward_hook(hook)
    try:
        with cl.no_grad():
            model(x)
    finally:
        handle.remove()
    return records


@exercise("04.4", title="record_activations", points=2,
          hint="for each (name, module) in model.named_modules() of one of `types`, register_forward_hook a function "
               "that appends (name, out.mean().item(), out.std().item(), (out == 0).float().mean().item()); run "
               "model(x) under cl.no_grad(); then remove every handle you made in a finally: block (the model may "
               "raise), and only those.")
def _record_activations(rng):
    cases = [("mlp", ["ReLU"]), ("mlp", ["Linear"]), ("nested", ["Linear", "ReLU"]), ("block", ["ReLU"]),
             ("block", ["Conv2d", "BatchNorm2d"]), ("own_hook", ["ReLU"])]
    for _ in range(3):
        types = sorted({str(t) for t in rng.choice(["Linear", "ReLU", "Tanh", "Sigmoid"], size=2)})
        cases.append((_seed(rng), types))
    out = []
    for spec, types in cases:
        seed = _seed(rng)
        label = (f"_random_mlp({spec})[0]" if isinstance(spec, int) else _HOOK_MODELS[spec][0])
        out.append(probe(_activations_probe, spec, types, seed,
                         expected=_activations_probe(reference_record_activations, spec, types, seed),
                         compare=_close(1e-5, 1e-6),
                         label=f"record_activations({label}, x, ({', '.join(types)},)) -> records, hooks left, "
                               "grad mode"))
    out.append(probe(_hooks_left_after_failure, 0, expected=[("1", 1)],
                     label="record_activations(<the MLP with a hook of its own on [1], whose last module raises>, x, "
                           "(ReLU, Linear)) -> forward hooks left afterwards"))
    return out


# ------------------------------------------------------------------ 04.5 MyLinear


def _linear_params(cls, in_f: int, out_f: int, bias: bool):
    """Probe: what `cls(in_f, out_f, bias=bias)` registers: (name, (type, shape, dtype, requires_grad) or None)."""
    cl.manual_seed(0)
    m = cls(in_f, out_f, bias=bias)
    return [(k, None if v is None else (type(v).__name__, tuple(v.shape), v.dtype.name, v.requires_grad))
            for k, v in m._parameters.items()]


def _linear_init(cls, seed: int):
    """Probe: statistics of a fresh ``cls(300, 200)``'s weight and bias, in units of the bound 1/sqrt(300)."""
    cl.manual_seed(seed)
    m = cls(300, 200)
    bound = 1 / math.sqrt(300)
    w, b = m.weight.detach().numpy() / bound, m.bias.detach().numpy() / bound
    return {"max |w|": float(np.abs(w).max()), "max |b|": float(np.abs(b).max()), "std(w)": float(w.std()),
            "mean(w)": float(w.mean()), "distinct b": int(len(np.unique(b)))}


_UNIFORM = "weight and bias drawn from U(-1/sqrt(300), 1/sqrt(300))"


def _uniform_init(got, expected) -> bool | str:
    """The statistics of `_linear_init` fit U(-bound, bound) (std bound/sqrt(3)) with a bias that varies."""
    if not isinstance(got, dict) or set(got) != {"max |w|", "max |b|", "std(w)", "mean(w)", "distinct b"}:
        return False
    if got["max |w|"] > 1 or got["max |b|"] > 1:
        return f"values beyond the bound: max |w| = {got['max |w|']:.3g} bounds, max |b| = {got['max |b|']:.3g} bounds"
    if abs(got["std(w)"] * math.sqrt(3) - 1) > 0.05 or abs(got["mean(w)"]) > 0.05:
        return f"weight std {got['std(w)']:.3f} and mean {got['mean(w)']:.3f} bounds: a uniform has 0.577 and 0"
    if got["distinct b"] <= 100:
        return f"only {got['distinct b']} distinct bias values"
    return True


def _linear_forward(cls, in_f: int, out_f: int, bias: bool, x, w, b):
    """Probe: a ``cls`` holding weight `w` (and bias `b`) applied to `x`; (type, y, weight.grad, bias.grad).

    The gradients are those of ``(y * y).sum()``.
    """
    cl.manual_seed(0)
    m = cls(in_f, out_f, bias=bias)
    with cl.no_grad():
        m.weight.copy_(cl.from_numpy(w))
        if bias:
            m.bias.copy_(cl.from_numpy(b))
    y = m(cl.from_numpy(x))
    (y * y).sum().backward()
    grad = m.weight.grad
    bgrad = m.bias.grad if bias and m.bias is not None else None
    return (type(y).__name__, y.detach().numpy(), None if grad is None else grad.numpy(),
            None if bgrad is None else bgrad.numpy())


def _library_forward(x, w, b) -> tuple:
    """F.linear's output and the gradients of (y * y).sum() with respect to the weight and bias."""
    wt = cl.from_numpy(w).requires_grad_()
    bt = None if b is None else cl.from_numpy(b).requires_grad_()
    y = F.linear(cl.from_numpy(x), wt, bt)
    (y * y).sum().backward()
    return ("Tensor", y.detach().numpy(), wt.grad.numpy(), None if bt is None else bt.grad.numpy())


def _f32(rng, shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@exercise("04.5", title="MyLinear", points=2,
          hint="__init__: super().__init__(), then weight = Parameter of shape (out_features, in_features), bias = "
               "Parameter of shape (out_features,) or register_parameter('bias', None); fill both from "
               "U(-1/sqrt(in_features), 1/sqrt(in_features)). forward: x @ weight.t() (+ bias).")
def _my_linear(rng):
    out = []
    for in_f, out_f, bias in [(3, 2, True), (3, 2, False), (int(rng.integers(1, 9)), int(rng.integers(1, 9)), True)]:
        out.append(probe(_linear_params, in_f, out_f, bias, expected=_linear_params(nn.Linear, in_f, out_f, bias),
                         label=f"MyLinear({in_f}, {out_f}, bias={bias})._parameters -> (name, (type, shape, dtype, "
                               "requires_grad))"))
    out.append(probe(_linear_init, _seed(rng), expected=_UNIFORM, compare=_uniform_init,
                     label="MyLinear(300, 200): max |w|, max |b|, std and mean of w (in bounds), distinct bias values"))
    shapes = [((4, 3), 3, 2, True), ((4, 3), 3, 5, False), ((2, 4, 3), 3, 2, True), ((3, 4), 4, 4, True),
              ((5, 3), 3, 2, True)]
    for _ in range(3):
        in_f, out_f = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        lead = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 3))))
        shapes.append((lead + (in_f,), in_f, out_f, bool(rng.integers(0, 2))))
    for shape, in_f, out_f, bias in shapes:
        x, w = _f32(rng, shape), _f32(rng, (out_f, in_f))
        b = _f32(rng, (out_f,)) if bias else None
        out.append(probe(_linear_forward, in_f, out_f, bias, x, w, b, expected=_library_forward(x, w, b),
                         compare=_close(1e-4, 1e-4),
                         label=f"MyLinear({in_f}, {out_f}, bias={bias}) with given weights, on x of shape {shape}, "
                               "then (y * y).sum().backward() -> (type, y, weight.grad, bias.grad) as F.linear's"))
    return out


# ------------------------------------------------------------------ 04.6 conv2d_im2col


#: A vectorised im2col runs a few hundred lines of Python whatever the size (most of them in np.pad; about
#: 750 with np.einsum(..., optimize=True), which plans in Python);
#: a Python loop over output pixels runs at least one line per pixel.
_PIXEL_LINES_BUDGET = 5000
_NO_PIXEL_LOOP = f"at most {_PIXEL_LINES_BUDGET} lines, the line counter left in place"


def _python_lines(conv2d_im2col, seed: int) -> dict:
    """Probe: the lines of Python conv2d_im2col runs on a (1, 1, 130, 130) image (sys.settrace counts them).

    Counting is exact and does not depend on the machine's speed, unlike a time budget. Also says
    whether the counter was still installed at the end (the exercise forbids sys.settrace and
    sys.setprofile, so switching it off and on again is reported too).
    """
    r = np.random.default_rng(seed)
    x, w, b = r.standard_normal((1, 1, 130, 130)), r.standard_normal((2, 1, 3, 3)), r.standard_normal(2)
    lines = 0

    def trace(frame, event, arg):
        nonlocal lines
        if event == "line":
            lines += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        conv2d_im2col(x, w, b, stride=1, padding=1)
        kept = sys.gettrace() is trace
    finally:
        sys.settrace(previous)
    return {"lines": lines, "counter kept": kept}


def _few_lines(got, expected) -> bool | str:
    if not isinstance(got, dict) or type(got.get("lines")) is not int or got.get("counter kept") is not True:
        return "the line counter was removed" if isinstance(got, dict) and got.get("counter kept") is False else False
    if got["lines"] > _PIXEL_LINES_BUDGET:
        return f"{got['lines']:,} lines: a Python loop over the pixels?"
    return True


@exercise("04.6", title="conv2d_im2col", points=3,
          hint="pad H and W with np.pad; take the windows with sliding_window_view(xp, (kh, kw), axis=(2, 3)) and "
               "keep every stride-th row and column; reshape them to (N, Ho, Wo, C*kh*kw) so the last axis matches "
               "weight.reshape(O, C*kh*kw); multiply, add the bias, and move the channels to axis 1. No Python "
               "loop over pixels: one matrix product does them all.",
          # switching the line counter off (and back on) would hide a loop from it
          forbid={"sys.settrace": sys.settrace, "sys.setprofile": sys.setprofile})
def _conv2d_im2col(rng):
    cases = [
        # (N, C, H, W), (O, C, kh, kw), bias, stride, padding, dtype
        ((1, 1, 5, 5), (1, 1, 3, 3), False, 1, 0, np.float64),
        ((2, 3, 6, 7), (4, 3, 3, 3), True, 1, 1, np.float64),
        ((2, 3, 6, 7), (4, 3, 3, 3), False, 2, 0, np.float64),
        ((1, 2, 7, 7), (3, 2, 3, 3), True, 2, 2, np.float64),
        ((2, 2, 5, 6), (2, 2, 2, 3), True, 1, 0, np.float64),
        ((3, 4, 4, 4), (5, 4, 1, 1), True, 1, 0, np.float64),
        ((1, 3, 8, 8), (6, 3, 3, 3), True, 3, 1, np.float64),
        ((2, 3, 5, 5), (4, 3, 3, 3), True, 1, 1, np.float32),
    ]
    for _ in range(4):
        kh, kw = (int(k) for k in rng.integers(1, 4, size=2))
        n, c, o = (int(k) for k in rng.integers(1, 4, size=3))
        h, w = kh + int(rng.integers(0, 6)), kw + int(rng.integers(0, 6))
        cases.append(((n, c, h, w), (o, c, kh, kw), bool(rng.integers(0, 2)), int(rng.integers(1, 4)),
                      int(rng.integers(0, 3)), [np.float32, np.float64][int(rng.integers(0, 2))]))
    out = []
    for xs, ws, bias, stride, padding, dtype in cases:
        x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
        b = rng.standard_normal(ws[0]).astype(dtype) if bias else None
        expected = F.conv2d(cl.from_numpy(x), cl.from_numpy(w), None if b is None else cl.from_numpy(b),
                            stride, padding).numpy()
        tol = 1e-9 if dtype is np.float64 else 1e-5
        out.append(call(x, w, b, stride=stride, padding=padding, expected=expected, compare=_close(tol, tol),
                        label=f"conv2d_im2col(x {xs} {np.dtype(dtype).name}, weight {ws}, {'b' if bias else 'None'}, "
                              f"stride={stride}, padding={padding})"))
    out.append(probe(_python_lines, _seed(rng), expected=_NO_PIXEL_LOOP, compare=_few_lines,
                     label="conv2d_im2col(x (1, 1, 130, 130), weight (2, 1, 3, 3), b, stride=1, padding=1): lines of "
                           "Python run for its 16,900 output pixels"))
    return out


# ------------------------------------------------------------------ 04.7 make_layer


def _describe_layer(layer, inplanes) -> tuple:
    """(type, per block (type, 'conv1 in->out /stride', downsample as text or None), the new inplanes)."""
    def conv(c):
        return f"{type(c).__name__} {c.in_channels}->{c.out_channels} /{c.stride[0]}" if hasattr(c, "in_channels") \
            else type(c).__name__

    blocks = []
    for b in (layer if hasattr(layer, "__iter__") else []):
        ds = getattr(b, "downsample", None)
        blocks.append((type(b).__name__, conv(b.conv1), None if ds is None else " + ".join(conv(m) for m in ds)))
    return type(layer).__name__, blocks, inplanes


_BLOCKS = {"BasicBlock": BasicBlock, "Bottleneck": Bottleneck}


def _layer_probe(make_layer, block: str, inplanes: int, planes: int, blocks: int, stride: int) -> dict:
    """Probe: the stage make_layer builds, described, and its state_dict's (key, shape) pairs."""
    cl.manual_seed(0)
    layer, new_inplanes = make_layer(_BLOCKS[block], inplanes, planes, blocks, stride)
    return {"stage": _describe_layer(layer, new_inplanes),
            "state_dict": [(k, tuple(v.shape)) for k, v in layer.state_dict().items()]}


def _library_make_layer(block, inplanes, planes, blocks, stride=1):
    holder = ResNet.__new__(ResNet)
    nn.Module.__init__(holder)
    holder._norm_layer, holder.inplanes, holder.dilation = nn.BatchNorm2d, inplanes, 1
    holder.groups, holder.base_width = 1, 64
    layer = ResNet._make_layer(holder, block, planes, blocks, stride)
    return layer, holder.inplanes


@exercise("04.7", title="make_layer", points=2,
          hint="a shortcut is needed when stride != 1 or inplanes != planes * block.expansion: "
               "Sequential(conv1x1(inplanes, planes * block.expansion, stride), BatchNorm2d(planes * "
               "block.expansion)). The first block gets (inplanes, planes, stride, downsample); the others "
               "(planes * block.expansion, planes). Return (Sequential(*blocks), planes * block.expansion).")
def _make_layer(rng):
    configs = [("BasicBlock", 8, 8, 2, 1), ("BasicBlock", 8, 16, 2, 2), ("BasicBlock", 8, 8, 3, 2),
               ("BasicBlock", 4, 8, 1, 1), ("Bottleneck", 8, 8, 2, 1), ("Bottleneck", 32, 8, 2, 1),
               ("Bottleneck", 32, 16, 3, 2)]
    for _ in range(3):
        block = str(rng.choice(list(_BLOCKS)))
        planes = int(rng.choice([2, 4, 8]))
        inplanes = int(rng.choice([planes, planes * _BLOCKS[block].expansion, 2 * planes, 4]))
        configs.append((block, inplanes, planes, int(rng.integers(1, 4)), int(rng.integers(1, 3))))
    return [probe(_layer_probe, *c, expected=_layer_probe(_library_make_layer, *c),
                  label=f"make_layer({c[0]}, {c[1]}, {c[2]}, {c[3]}, stride={c[4]}) -> (type, [(block, conv1, "
                        "downsample)], new inplanes), state_dict (key, shape) pairs")
            for c in configs]


# ------------------------------------------------------------------ 04.8 sgd_step


def _sgd_trajectory(sgd_step, settings: dict, seed: int, set_to_none: bool = True, steps: int = 4) -> tuple:
    """Probe: parameter values (a, b, and one that gets no gradient) after each step, the momentum buffers,
    and whether a buffer is the gradient tensor itself after the first step.

    Between steps the gradients are reset as ``optimizer.zero_grad(set_to_none=...)`` does: set to None, or
    zeroed in place, so that the next backward() accumulates into the same tensor (a momentum buffer that
    is that tensor, not a copy, then changes with it).
    """
    r = np.random.default_rng(seed)
    a = nn.Parameter(cl.from_numpy(r.standard_normal((3, 2)).astype(np.float32)))
    b = nn.Parameter(cl.from_numpy(r.standard_normal(2).astype(np.float32)))
    frozen = nn.Parameter(cl.from_numpy(r.standard_normal(2).astype(np.float32)))   # never gets a gradient
    x = cl.from_numpy(r.standard_normal((4, 3)).astype(np.float32))
    params = [a, b, frozen]
    state: dict = {}
    trace = []
    aliases: list = []
    for step in range(steps):
        for p in params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                with cl.no_grad():
                    p.grad.zero_()
        loss = ((x @ a + b).tanh() ** 2).sum() + (a * a).sum() * 0.1
        loss.backward()
        sgd_step(params, state, **settings)
        if step == 0:
            aliases = [_aliases_grad(state, p) for p in params]
        trace.append([_rounded(p) for p in params])
    bufs = []
    for p in params:
        buf = state.get(p, {}).get("momentum_buffer") if isinstance(state, dict) else None
        bufs.append(None if buf is None else _rounded(buf))
    return {"momentum buffer is p.grad's memory, after step 1": aliases,
            **{f"after step {k + 1}": v for k, v in enumerate(trace)}, "buffers": bufs}


def _aliases_grad(state, p) -> bool | None:
    """Whether p's momentum buffer is p.grad or shares its memory (None: no buffer or no grad)."""
    buf = state.get(p, {}).get("momentum_buffer") if isinstance(state, dict) else None
    if buf is None or p.grad is None:
        return None
    return buf is p.grad or buf._storage is p.grad._storage


def _rounded(t) -> list:
    return np.round(t.detach().numpy().astype(np.float64), 6).tolist()


def _library_sgd_step(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    """One step of course_lib.optim.SGD, with `state` playing the optimizer's state."""
    opt = cl.optim.SGD(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                       nesterov=nesterov)
    for p in params:
        if p in state:
            opt.state[p] = state[p]
    opt.step()
    for p in params:
        if p in opt.state and opt.state[p]:
            state[p] = opt.state[p]


@exercise("04.8", title="sgd_step", points=2,
          hint="skip parameters whose grad is None. g = grad (+ weight_decay * p). With momentum: on the first step "
               "buf = a clone of g (no dampening), later buf = momentum * buf + (1 - dampening) * g; then g = g + "
               "momentum * buf if nesterov else buf. Finally p -= lr * g, in place, under no_grad.")
def _sgd_step(rng):
    settings = [
        (dict(lr=0.1), True),
        (dict(lr=0.1, momentum=0.9), True),
        (dict(lr=0.05, momentum=0.9, dampening=0.5), True),
        (dict(lr=0.1, momentum=0.8, weight_decay=0.1), True),
        (dict(lr=0.1, momentum=0.9, nesterov=True), True),
        (dict(lr=0.05, momentum=0.5, weight_decay=0.2, nesterov=True), True),
        (dict(lr=0.1, weight_decay=0.3), True),
        (dict(lr=0.1, momentum=0.9), False),
        (dict(lr=0.1, momentum=0.9, nesterov=True), False),
    ]
    for _ in range(3):
        nesterov = bool(rng.integers(0, 2))
        s = dict(lr=round(float(rng.uniform(0.01, 0.2)), 3), momentum=round(float(rng.uniform(0.1, 0.95)), 2),
                 dampening=0.0 if nesterov else round(float(rng.choice([0.0, rng.uniform(0, 0.9)])), 2),
                 weight_decay=round(float(rng.choice([0.0, rng.uniform(0, 0.3)])), 2), nesterov=nesterov)
        settings.append((s, bool(rng.integers(0, 2))))
    out = []
    for s, set_to_none in settings:
        seed = _seed(rng)
        text = ", ".join(f"{k}={v}" for k, v in s.items())
        between = "" if set_to_none else ", grads zeroed in place between steps (zero_grad(set_to_none=False))"
        out.append(probe(_sgd_trajectory, s, seed, set_to_none,
                         expected=_sgd_trajectory(_library_sgd_step, s, seed, set_to_none), compare=_close(1e-4, 1e-5),
                         label=f"4 steps of sgd_step(params, state, {text}){between} -> (values after each step, "
                               "buffers)"))
    return out


# ------------------------------------------------------------------ 04.9 module_apply


def _to_double(t):
    return t.double() if t.is_floating_point() else t


def _to_half(t):
    return t.half() if t.is_floating_point() else t


def _all_double(t):
    return t.double()


def _clone(t):
    return t.clone()


def _times_two(t):
    return t * 2


class _Numbered:
    """``t + k`` on the k-th call (from 0): which tensor got which call shows the order fn ran in, and how often."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, t):
        self.calls += 1
        return t + (self.calls - 1)


#: The functions 04.9 is checked with, by name (a function cannot travel to the kernel; its name can). ``t * 2``
#: shows a parameter converted twice (a module used twice, a tied weight) or skipped the second time.
_APPLY_FNS = {"t.double() if floating": _to_double, "t.half() if floating": _to_half, "t.double()": _all_double,
              "t.clone()": _clone, "t * 2": _times_two}
#: A fresh ``_Numbered`` per case; a fixed case only.
_NUMBERED = "t + (number of earlier calls of fn)"


def _apply_model(seed: int) -> tuple:
    """A random module tree with random buffers, gradients on some parameters, None slots, and an SGD over it.

    A tree of ReLUs and BatchNorms only gets a parameter of its own (an optimizer needs at least one).
    """
    model = _random_net(seed)
    model.register_buffer("unset", None)
    model.register_parameter("unset_param", None)
    r = np.random.default_rng(seed + 1)
    if next(model.parameters(), None) is None:
        model.own = nn.Parameter(cl.from_numpy(r.standard_normal(2).astype(np.float32)))
    with cl.no_grad():
        for _, b in model.named_buffers():
            if b.is_floating_point():
                b.copy_(cl.from_numpy(r.standard_normal(tuple(b.shape)).astype(np.float32)))
        for p in model.parameters():
            if r.random() < 0.6:
                p.grad = cl.from_numpy(r.standard_normal(tuple(p.shape)).astype(np.float32))
    return model, cl.optim.SGD(model.parameters(), lr=0.5)


def _tensor_data(t) -> tuple | None:
    return None if t is None else (t.dtype, _rounded(t))


def _apply_probe(module_apply, seed: int, fn_name: str) -> dict:
    """Probe: the tree after module_apply(model, fn): parameters (dtype, values, requires_grad, same object),
    grads, buffers, what it returned, and the parameters after an optimizer step built before the call."""
    model, opt = _apply_model(seed)
    before = dict(model.named_parameters())
    returned = module_apply(model, _Numbered() if fn_name == _NUMBERED else _APPLY_FNS[fn_name])
    params = dict(model.named_parameters())
    out = {"returns the module": returned is model,
           "parameters (dtype, values)": {k: _tensor_data(p) for k, p in params.items()},
           "still the same Parameter objects": {k: params.get(k) is p for k, p in before.items()},
           "requires_grad": {k: p.requires_grad for k, p in params.items()},
           "grads (dtype, values)": {k: _tensor_data(p.grad) for k, p in params.items()},
           "buffers (dtype, values)": {k: _tensor_data(b) for k, b in model.named_buffers()}}
    with cl.no_grad():
        for p in params.values():
            p.grad = cl.ones_like(p)
    opt.step()
    out["after an SGD step (optimizer built before the call)"] = {k: _rounded(p) for k, p in params.items()}
    return out


def _library_module_apply(module, fn):
    return module._apply(fn)


@exercise("04.9", title="module_apply", points=2,
          hint="recurse into module.children() first; for each parameter p that is not None: under no_grad, "
               "p.data = fn(p), and if p.grad is not None, p.grad = fn(p.grad); for each buffer that is not None: "
               "module._buffers[name] = fn(buffer). Never put a new Parameter into _parameters: the optimizer holds "
               "the old one. Return the module.",
          forbid={"Module._apply": nn.Module._apply, "Module.to": nn.Module.to, "Module.float": nn.Module.float,
                  "Module.double": nn.Module.double, "Module.half": nn.Module.half, "Module.type": nn.Module.type})
def _module_apply(rng):
    cases = [(3, "t.double() if floating"), (11, "t.half() if floating"), (5, "t.clone()"), (8, "t.double()"),
             (12, "t * 2"), (10, _NUMBERED)]
    cases += [(_seed(rng), str(rng.choice(list(_APPLY_FNS)))) for _ in range(4)]
    return [probe(_apply_probe, seed, name, expected=_apply_probe(_library_module_apply, seed, name),
                  compare=_close(),
                  label=f"module_apply(_random_net({seed}) with gradients and buffers, "
                        f"{name if name == _NUMBERED else 'lambda t: ' + name}) -> "
                        "parameters, grads, buffers, identity, an optimizer step after")
            for seed, name in cases]


# ------------------------------------------------------------------ 04.10 adam_step


def _adam_trajectory(adam_step, settings: dict, seed: int, steps: int = 5) -> dict:
    """Probe: parameter values (a, b, and one that gets no gradient) after each step, and the state at the end."""
    r = np.random.default_rng(seed)
    a = nn.Parameter(cl.from_numpy(r.standard_normal((3, 2)).astype(np.float32)))
    b = nn.Parameter(cl.from_numpy(r.standard_normal(2).astype(np.float32)))
    frozen = nn.Parameter(cl.from_numpy(r.standard_normal(2).astype(np.float32)))   # never gets a gradient
    x = cl.from_numpy(r.standard_normal((4, 3)).astype(np.float32))
    scale = float(r.choice([0.01, 1.0, 30.0]))                                     # the gradients' scale
    params = [a, b, frozen]
    state: dict = {}
    out = {}
    for step in range(steps):
        for p in params:
            p.grad = None
        loss = (((x @ a + b).tanh() ** 2).sum() + (a * a).sum() * 0.1) * scale
        loss.backward()
        adam_step(params, [p.grad for p in params], state, **settings)
        out[f"after step {step + 1}"] = [_rounded(p) for p in params]
    final = []
    for p in params:
        s = state.get(p) if isinstance(state, dict) else None
        if not s:
            final.append(None)
            continue
        final.append({"step": float(s["step"]) if "step" in s else None,
                      **{k: _rounded(s[k]) if k in s else None for k in ("exp_avg", "exp_avg_sq")}})
    out["state after the last step"] = final
    return out


def _library_adam_step(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
    """One step of course_lib.optim.Adam (or AdamW), with `state` playing the optimizer's state."""
    cls = cl.optim.AdamW if decoupled else cl.optim.Adam
    opt = cls(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    for p in params:
        if p in state:
            opt.state[p] = state[p]
    opt.step()
    for p in params:
        if p in opt.state and opt.state[p]:
            state[p] = opt.state[p]


@exercise("04.10", title="adam_step", points=2,
          hint="per parameter with a gradient: step += 1; weight decay (g + wd * p, or with decoupled p *= 1 - lr * "
               "wd); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; p -= lr * (m / (1 - b1^step)) / "
               "(sqrt(v / (1 - b2^step)) + eps). Both corrections use the step count, starting at 1.",
          forbid={"optim.Adam.step": cl.optim.Adam.step})
def _adam_step(rng):
    settings = [
        dict(lr=0.01),
        dict(lr=0.05, betas=(0.8, 0.99)),
        dict(lr=0.02, eps=0.1),
        dict(lr=0.01, weight_decay=0.1),
        dict(lr=0.05, weight_decay=0.5, decoupled=True),
        dict(lr=0.02, betas=(0.5, 0.9), weight_decay=0.3, decoupled=False),
        dict(lr=0.1, betas=(0.95, 0.9), eps=1e-6, weight_decay=0.2, decoupled=True),
    ]
    for _ in range(3):
        settings.append(dict(lr=round(float(rng.uniform(0.005, 0.1)), 3),
                             betas=(round(float(rng.uniform(0.5, 0.95)), 2), round(float(rng.uniform(0.9, 0.999)), 3)),
                             eps=float(rng.choice([1e-8, 1e-3])),
                             weight_decay=round(float(rng.choice([0.0, rng.uniform(0.05, 0.5)])), 2),
                             decoupled=bool(rng.integers(0, 2))))
    out = []
    for s in settings:
        seed = _seed(rng)
        text = ", ".join(f"{k}={v}" for k, v in s.items())
        out.append(probe(_adam_trajectory, s, seed, expected=_adam_trajectory(_library_adam_step, s, seed),
                         compare=_close(1e-4, 1e-5),
                         label=f"5 steps of adam_step(params, grads, state, {text}) (problem seed {seed}) -> "
                               "(values after each step, state)"))
    return out


# ------------------------------------------------------------------ 04.11 select_conv_backend

#: What ``torch._C._select_conv_backend`` (torch 2.13.0, CPU, padding 0) returned for these convolutions:
#: (input shape, weight shape, groups, transposed, stride, dilation, output_padding, dtype, torch's number of
#: threads, torch.backends.mkldnn.enabled, the backend's name). Observed, not computed: the first rows were
#: chosen to show each rule, the others drawn at random; tests/test_conv_backend_oracle.py re-runs every row
#: in torch. torch's Python enum has no name for value 9, MkldnnTranspose (it prints ``_ConvBackend.???``).
CONV_BACKENDS = [
    ((1, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Slow2d'),
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 3, 8, 8), (4, 3, 5, 5), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 3, 8, 8), (4, 3, 5, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Slow2d'),
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float64', 2, True, 'Slow2d'),
    ((1, 3, 100, 100), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 5, 64, 64), (4, 5, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Slow2d'),
    ((1, 5, 64, 65), (4, 5, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 4, 8, 8), (4, 1, 3, 3), 4, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 4, 8, 8), (4, 1, 3, 3), 4, False, (1, 1), (1, 1), (0, 0), 'float64', 2, True, 'Slow2d'),
    ((1, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (2, 2), (0, 0), 'float32', 2, True, 'SlowDilated2d'),
    ((1, 3, 8, 8), (4, 3, 3, 3), 1, False, (2, 2), (1, 1), (0, 0), 'float32', 2, True, 'Slow2d'),
    ((2, 3, 8, 8), (4, 3, 1, 1), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 1, True, 'Slow2d'),
    ((2, 3, 8, 8), (4, 3, 1, 1), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((16, 3, 8, 8), (4, 3, 1, 1), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((2, 3, 8, 8), (4, 3, 1, 1), 1, False, (2, 2), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((1, 3, 8, 8), (3, 4, 3, 3), 1, True, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'SlowTranspose2d'),
    ((2, 3, 8, 8), (3, 4, 3, 3), 1, True, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'MkldnnTranspose'),
    ((2, 3, 8, 8), (3, 4, 3, 3), 1, True, (2, 2), (1, 1), (1, 1), 'float32', 2, True, 'MkldnnTranspose'),
    ((2, 3, 8, 8), (3, 4, 3, 3), 1, True, (2, 2), (3, 3), (2, 2), 'float32', 2, True, 'SlowTranspose2d'),
    ((1, 3, 8, 8), (3, 4, 3, 3), 1, True, (1, 1), (2, 2), (0, 0), 'float32', 2, True, 'SlowTranspose2d'),
    ((2, 3, 8, 8), (3, 4, 3, 3), 1, True, (1, 1), (1, 1), (0, 0), 'float64', 2, True, 'SlowTranspose2d'),
    ((0, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Empty'),
    ((2, 0, 8, 8), (4, 0, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Empty'),
    ((1, 3, 8), (4, 3, 3), 1, False, (1,), (1,), (0,), 'float32', 2, True, 'Slow2d'),
    ((2, 3, 8), (4, 3, 3), 1, False, (1,), (1,), (0,), 'float32', 2, True, 'Mkldnn'),
    ((1, 3, 4, 4, 4), (4, 3, 3, 3, 3), 1, False, (1, 1, 1), (1, 1, 1), (0, 0, 0), 'float32', 2, True, 'Slow3d'),
    ((2, 3, 4, 4, 4), (4, 3, 3, 3, 3), 1, False, (1, 1, 1), (1, 1, 1), (0, 0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 3, 6, 6, 6), (4, 3, 3, 3, 3), 1, False, (1, 1, 1), (2, 2, 2), (0, 0, 0), 'float32', 2, True, 'SlowDilated3d'),
    ((1, 3, 8, 8, 8), (3, 4, 3, 3, 3), 1, True, (1, 1, 1), (1, 1, 1), (0, 0, 0), 'float32', 2, True, 'SlowTranspose3d'),
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, False, 'Slow2d'),
    ((2, 3, 8, 8), (3, 4, 3, 3), 1, True, (1, 1), (1, 1), (0, 0), 'float32', 2, False, 'SlowTranspose2d'),
    ((16, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, False, 'NnpackSpatial'),
    ((16, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (2, 2), (0, 0), 'float32', 2, False, 'SlowDilated2d'),
    ((16, 3, 8, 8), (4, 3, 3, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float64', 2, True, 'Slow2d'),
    ((16, 1, 20, 20), (2, 1, 17, 17), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, False, 'Slow2d'),
    ((16, 3, 6, 6, 6), (4, 3, 3, 3, 3), 1, False, (1, 1, 1), (1, 1, 1), (0, 0, 0), 'float32', 2, False, 'Slow3d'),
    ((16, 3, 8), (4, 3, 3), 1, False, (1,), (1,), (0,), 'float32', 1, False, 'NnpackSpatial'),
    ((1, 4, 50), (8, 4, 5), 1, False, (1,), (1,), (0,), 'float32', 2, True, 'Slow2d'),
    ((2, 3, 8, 8), (4, 3, 1, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((16, 3, 8, 8), (4, 3, 3, 3), 1, False, (2, 2), (1, 1), (0, 0), 'float32', 2, False, 'NnpackSpatial'),
    ((1, 3, 103, 79), (6, 3, 5, 5), 1, False, (1, 3), (1, 2), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((3, 6, 13, 18), (6, 5, 4, 4), 1, True, (2, 3), (1, 1), (0, 0), 'float32', 1, False, 'SlowTranspose2d'),
    ((1, 3, 107, 6, 72), (4, 3, 1, 1, 3),
     1, False, (1, 1, 1), (1, 2, 2), (0, 0, 0), 'float32', 1, True, 'SlowDilated3d'),
    ((2, 4, 109, 88), (1, 4, 1, 1), 1, False, (1, 2), (2, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((3, 4, 66), (4, 1, 3), 4, False, (3,), (1,), (0,), 'float64', 2, True, 'Slow2d'),
    ((15, 5, 113), (1, 5, 3), 1, False, (2,), (2,), (0,), 'float64', 1, True, 'SlowDilated2d'),
    ((16, 6, 86, 8), (5, 6, 3, 4), 1, False, (3, 1), (2, 1), (0, 0), 'float32', 2, False, 'SlowDilated2d'),
    ((15, 5, 4, 68), (2, 5, 1, 1), 1, False, (3, 3), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((0, 5, 90, 74), (5, 1, 3, 3), 1, True, (1, 3), (1, 2), (0, 0), 'float32', 1, True, 'Empty'),
    ((16, 5, 86, 9), (5, 4, 2, 5), 1, True, (1, 1), (1, 1), (0, 0), 'float32', 1, True, 'MkldnnTranspose'),
    ((17, 3, 96, 119, 61), (6, 1, 3, 3, 3), 3, False, (1, 1, 1), (1, 1, 2), (0, 0, 0), 'float32', 1, True, 'Mkldnn'),
    ((2, 1, 78, 19), (2, 1, 1, 3), 1, False, (3, 1), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((1, 4, 7, 77, 100), (1, 4, 2, 2, 2),
     1, False, (3, 2, 2), (2, 1, 2), (0, 0, 0), 'float32', 2, True, 'SlowDilated3d'),
    ((17, 1, 119, 95), (1, 1, 2, 3), 1, False, (3, 2), (2, 2), (0, 0), 'float32', 1, False, 'SlowDilated2d'),
    ((1, 4, 115, 15, 82), (6, 4, 4, 1, 1),
     1, False, (2, 2, 1), (1, 2, 1), (0, 0, 0), 'float32', 2, True, 'SlowDilated3d'),
    ((0, 3, 5), (3, 5, 1), 1, True, (2,), (1,), (0,), 'float32', 2, True, 'Empty'),
    ((1, 2, 104, 9), (1, 2, 5, 5), 1, False, (1, 2), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((17, 5, 72, 86), (5, 5, 5, 1), 1, False, (3, 3), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((1, 6, 99, 7), (4, 6, 4, 3), 1, False, (2, 2), (1, 1), (0, 0), 'float32', 1, True, 'Slow2d'),
    ((1, 1, 13, 14, 102), (5, 1, 3, 3, 3),
     1, False, (3, 3, 2), (1, 2, 2), (0, 0, 0), 'float32', 2, True, 'SlowDilated3d'),
    ((16, 5, 14, 78), (5, 6, 1, 1), 1, True, (1, 2), (2, 2), (0, 0), 'float32', 2, True, 'MkldnnTranspose'),
    ((15, 4, 102, 6), (4, 5, 1, 1), 1, True, (1, 2), (1, 1), (0, 1), 'float32', 1, False, 'SlowTranspose2d'),
    ((15, 4, 107, 68), (6, 4, 5, 5), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((15, 3, 11), (2, 3, 5), 1, False, (3,), (1,), (0,), 'float64', 1, True, 'Slow2d'),
    ((3, 6, 17, 8), (2, 6, 4, 2), 1, False, (3, 1), (1, 1), (0, 0), 'float64', 2, True, 'Slow2d'),
    ((0, 4, 17, 13), (1, 4, 4, 4), 1, False, (1, 2), (1, 1), (0, 0), 'float32', 2, True, 'Empty'),
    ((1, 4, 86, 19, 99), (4, 3, 5, 5, 5),
     1, True, (1, 2, 1), (1, 1, 2), (0, 0, 0), 'float32', 1, True, 'MkldnnTranspose'),
    ((15, 5, 11, 8), (6, 5, 1, 5), 1, False, (1, 2), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 5, 84, 84), (5, 1, 5, 4), 5, False, (2, 2), (2, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((17, 5, 64, 75), (1, 5, 4, 4), 1, False, (1, 1), (1, 2), (0, 0), 'float64', 2, True, 'SlowDilated2d'),
    ((1, 6, 95, 119, 96), (6, 6, 4, 5, 3),
     1, True, (3, 2, 3), (1, 1, 2), (0, 1, 0), 'float32', 1, False, 'SlowTranspose3d'),
    ((1, 1, 15, 14), (1, 6, 3, 3), 1, True, (3, 2), (1, 1), (0, 0), 'float64', 1, True, 'SlowTranspose2d'),
    ((3, 1, 70, 14), (1, 3, 1, 1), 1, True, (1, 1), (2, 2), (0, 0), 'float32', 2, True, 'MkldnnTranspose'),
    ((2, 5, 6, 16), (5, 6, 3, 2), 1, True, (3, 2), (1, 2), (0, 0), 'float32', 1, True, 'MkldnnTranspose'),
    ((0, 3, 18, 93, 7), (3, 1, 2, 4, 5), 1, True, (1, 1, 2), (1, 1, 1), (0, 0, 0), 'float32', 2, True, 'Empty'),
    ((2, 3, 107, 72, 83), (5, 3, 5, 3, 5),
     1, False, (2, 1, 2), (2, 1, 1), (0, 0, 0), 'float64', 2, True, 'SlowDilated3d'),
    ((1, 3, 5, 6, 9), (1, 3, 1, 4, 1), 1, False, (1, 2, 1), (2, 1, 1), (0, 0, 0), 'float64', 2, True, 'SlowDilated3d'),
    ((15, 4, 117), (6, 4, 3), 1, False, (1,), (1,), (0,), 'float32', 1, True, 'Mkldnn'),
    ((1, 6, 81, 113, 18), (6, 6, 2, 2, 2),
     1, True, (3, 2, 1), (1, 1, 1), (0, 0, 0), 'float32', 1, True, 'MkldnnTranspose'),
    ((2, 6, 81, 17, 96), (6, 5, 1, 4, 4),
     1, True, (3, 2, 1), (1, 2, 1), (0, 0, 0), 'float32', 1, False, 'SlowTranspose3d'),
    ((17, 5, 14), (3, 5, 5), 1, False, (1,), (2,), (0,), 'float32', 1, True, 'Mkldnn'),
    ((1, 4, 16, 4, 10), (1, 4, 3, 3, 3), 1, False, (3, 1, 1), (1, 1, 1), (0, 0, 0), 'float32', 2, True, 'Slow3d'),
    ((15, 6, 82, 60), (5, 6, 5, 5), 1, False, (1, 2), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((1, 1, 108, 16), (3, 1, 1, 1), 1, False, (3, 1), (1, 1), (0, 0), 'float64', 2, True, 'Slow2d'),
    ((1, 1, 106, 7), (5, 1, 3, 4), 1, False, (2, 3), (1, 2), (0, 0), 'float32', 1, True, 'SlowDilated2d'),
    ((3, 4, 13, 6), (4, 4, 5, 3), 1, False, (1, 1), (1, 1), (0, 0), 'float64', 1, True, 'Slow2d'),
    ((1, 1, 100, 6), (1, 6, 1, 1), 1, True, (2, 1), (1, 2), (0, 1), 'float32', 2, True, 'SlowTranspose2d'),
    ((16, 1, 5, 18), (3, 1, 1, 1), 1, False, (1, 2), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((17, 4, 8), (4, 4, 1), 1, False, (1,), (1,), (0,), 'float64', 2, True, 'Slow2d'),
    ((1, 2, 73, 84), (3, 2, 2, 2), 1, False, (3, 2), (1, 2), (0, 0), 'float64', 2, True, 'SlowDilated2d'),
    ((17, 3, 14, 15), (5, 3, 3, 4), 1, False, (1, 1), (1, 2), (0, 0), 'float32', 2, False, 'SlowDilated2d'),
    ((17, 6, 10, 93), (2, 6, 1, 1), 1, False, (1, 1), (1, 1), (0, 0), 'float32', 2, False, 'NnpackSpatial'),
    ((16, 1, 67, 15), (1, 1, 3, 3), 1, False, (3, 1), (1, 2), (0, 0), 'float64', 2, True, 'SlowDilated2d'),
    ((3, 1, 73, 10, 68), (2, 1, 4, 4, 4), 1, False, (1, 1, 1), (2, 2, 1), (0, 0, 0), 'float32', 1, True, 'Mkldnn'),
    ((0, 4, 117, 83, 9), (3, 4, 3, 5, 2), 1, False, (1, 2, 3), (1, 1, 1), (0, 0, 0), 'float32', 1, True, 'Empty'),
    ((16, 3, 76), (2, 3, 4), 1, False, (1,), (2,), (0,), 'float64', 1, True, 'SlowDilated2d'),
    ((2, 2, 110, 84), (3, 2, 3, 2), 1, False, (3, 3), (1, 1), (0, 0), 'float32', 2, True, 'Mkldnn'),
    ((17, 1, 64), (3, 1, 1), 1, False, (2,), (1,), (0,), 'float32', 1, True, 'Mkldnn'),
    ((1, 5, 11, 97), (1, 5, 3, 5), 1, False, (1, 1), (1, 1), (0, 0), 'float64', 2, True, 'Slow2d'),
    ((1, 5, 80), (3, 5, 4), 1, False, (1,), (1,), (0,), 'float32', 2, False, 'Slow2d'),
    ((16, 5, 119), (5, 2, 3), 5, True, (2,), (1,), (1,), 'float32', 2, True, 'MkldnnTranspose'),
    ((1, 6, 16), (1, 6, 1), 1, False, (2,), (1,), (0,), 'float32', 2, True, 'Slow2d'),
    ((3, 4, 10, 15), (4, 1, 3, 3), 1, True, (1, 2), (1, 1), (0, 0), 'float64', 1, True, 'SlowTranspose2d'),
    ((17, 5, 75, 114, 112), (10, 1, 1, 5, 3),
     5, False, (3, 1, 3), (2, 2, 1), (0, 0, 0), 'float64', 2, True, 'SlowDilated3d'),
    ((2, 2, 9, 115, 71), (5, 2, 3, 3, 3),
     1, False, (3, 1, 3), (1, 1, 2), (0, 0, 0), 'float64', 1, True, 'SlowDilated3d'),
    ((3, 1, 88), (2, 1, 2), 1, False, (1,), (1,), (0,), 'float32', 1, True, 'Mkldnn'),
    ((2, 3, 93, 102), (6, 3, 3, 3), 1, False, (3, 3), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((17, 5, 108, 90), (5, 4, 1, 5), 1, True, (2, 1), (1, 1), (0, 0), 'float32', 2, True, 'MkldnnTranspose'),
    ((0, 1, 11, 94), (1, 3, 2, 2), 1, True, (1, 1), (1, 1), (0, 0), 'float64', 1, True, 'Empty'),
    ((17, 5, 11, 92), (2, 5, 3, 3), 1, False, (1, 3), (1, 1), (0, 0), 'float32', 1, True, 'Mkldnn'),
    ((3, 5, 14), (4, 5, 4), 1, False, (1,), (1,), (0,), 'float32', 1, True, 'Mkldnn'),
    ((1, 6, 109), (2, 6, 1), 1, False, (1,), (1,), (0,), 'float32', 2, True, 'Slow2d'),
]
_CONV_BACKENDS_FIXED = 41       # the hand-picked rows at the top of CONV_BACKENDS


def _conv_backend_label(row) -> str:
    ish, wsh, groups, transposed, stride, dilation, output_padding, dtype, threads, mkldnn = row[:10]
    return (f"select_conv_backend({ish}, {wsh}, groups={groups}, transposed={transposed}, stride={stride}, "
            f"dilation={dilation}, output_padding={output_padding}, dtype={dtype!r}, num_threads={threads}, "
            f"mkldnn_enabled={mkldnn})")


@exercise("04.11", title="select_conv_backend", points=2,
          forbid={"torch._C._select_conv_backend": CFunction("torch._C", "_select_conv_backend")},
          hint="Empty for a zero batch or zero channels; a 1-d convolution is a 2-d one with height 1. oneDNN "
               "(Mkldnn, or MkldnnTranspose) needs: enabled, float32, output_padding < stride when transposed, "
               "(strided or dilated or N >= 16 or a kernel that is not 1x1 or more than one thread) and (groups > 1 "
               "or kernel larger than 3x3 in both sizes or N > 1 or the product of the input's first four sizes > "
               "20480). Else NnpackSpatial (float32, 2-d, not dilated or transposed, kernel < 17, N >= 16), else "
               "SlowTranspose, SlowDilated or Slow with 2d or 3d.")
def _select_conv_backend(rng):
    rows = CONV_BACKENDS[:_CONV_BACKENDS_FIXED]
    rest = CONV_BACKENDS[_CONV_BACKENDS_FIXED:]
    rows += [rest[int(k)] for k in rng.choice(len(rest), size=16, replace=False)]
    return [call(*row[:10], expected=row[10], label=_conv_backend_label(row)) for row in rows]


# ------------------------------------------------------------------ 04.12 PrimitiveCache


class LibraryCache:
    """The reference for 04.12: ``functools.lru_cache`` behind the exercise's interface.

    ``fetch_or_create(key, create)`` runs a function cached with ``lru_cache(maxsize=capacity)`` that
    calls the ``create`` of the call that missed; ``hits``, ``misses`` and ``len()`` come from its
    ``cache_info()``. The chapter's measurement cell falls back on it when 04.12 is not done yet.
    """

    def __init__(self, capacity: int = 1024):
        self.capacity = capacity
        self._create: Callable[[], Any] | None = None
        self._get = functools.lru_cache(maxsize=capacity)(lambda key: self._create())

    def fetch_or_create(self, key, create: Callable[[], Any]):
        self._create = create
        return self._get(key)

    @property
    def hits(self) -> int:
        return self._get.cache_info().hits

    @property
    def misses(self) -> int:
        return self._get.cache_info().misses

    def __len__(self) -> int:
        return self._get.cache_info().currsize


def _access_keys(seed: int, n_access: int, n_keys: int) -> list:
    """Conv-like keys (shape tuples): half the accesses repeat one of the last 40 keys, half are uniform."""
    r = np.random.default_rng(seed)
    ids = r.integers(0, n_keys, size=n_access)
    reuse = r.random(n_access) < 0.5
    back = r.integers(1, 41, size=n_access)
    for i in np.flatnonzero(reuse):
        if i >= back[i]:
            ids[i] = ids[i - back[i]]
    return [(int(k) % 7 + 1, 3, 8 + int(k) // 7, 8) for k in ids]


def _cache_probe(PrimitiveCache, capacity: int | None, seed: int | None, n_access: int, n_keys: int,
                 keys: list | None = None) -> dict:
    """Probe: what fetch_or_create returned for each access (create() returns how many creates came before),
    how many times create ran, and hits, misses and len() at the end."""
    keys = keys if keys is not None else _access_keys(seed, n_access, n_keys)
    cache = PrimitiveCache() if capacity is None else PrimitiveCache(capacity)
    created = []

    def create():
        created.append(1)
        return len(created) - 1

    returned = [cache.fetch_or_create(k, create) for k in keys]
    return {"returned (the number of the create() call that made it)": returned, "create() calls": len(created),
            "hits": cache.hits, "misses": cache.misses, "len(cache)": len(cache)}


@exercise("04.12", title="PrimitiveCache", points=2,
          hint="keep an OrderedDict from key to value, least recently used first. On a hit: hits += 1, "
               "move_to_end(key), return the value. On a miss: misses += 1, value = create(), store it, and if "
               "there are now more than capacity entries, popitem(last=False). The default capacity is 1024.",
          forbid={"functools.lru_cache": functools.lru_cache,
                  "LibraryCache.fetch_or_create": LibraryCache.fetch_or_create})
def _primitive_cache(rng):
    a, b, c = (1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8)
    fixed = [(1, [a, a, b, a, b, b]), (2, [a, b, a, c, a, b, c, a]), (3, [a, b, c, a, (5, 3, 8, 8), b, a, c])]
    cases = [probe(_cache_probe, cap, None, 0, 0, keys, expected=_cache_probe(LibraryCache, cap, None, 0, 0, keys),
                   compare=_close(), label=f"PrimitiveCache({cap}): fetch_or_create on the keys {keys}")
             for cap, keys in fixed]
    first = [(k, 3, 8, 8) for k in range(1025)]
    for n in (1024, 1025):
        keys = first[:n] + [first[0]]
        cases.append(probe(_cache_probe, None, None, 0, 0, keys,
                           expected=_cache_probe(LibraryCache, None, None, 0, 0, keys), compare=_close(),
                           label=f"PrimitiveCache(): {n} different keys, then the first one again"))
    for cap, n_access, n_keys in [(4, 60, 8), (16, 400, 40), (None, 3000, 1500), (1024, 3000, 1400)]:
        seed = _seed(rng)
        cases.append(probe(_cache_probe, cap, seed, n_access, n_keys,
                           expected=_cache_probe(LibraryCache, cap, seed, n_access, n_keys), compare=_close(),
                           label=f"PrimitiveCache({'' if cap is None else cap}): {n_access} accesses to {n_keys} keys "
                                 f"(course.checks.chapter_checks('04')._access_keys({seed}, {n_access}, {n_keys}))"))
    return cases
