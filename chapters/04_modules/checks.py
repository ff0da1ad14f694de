"""Checks for chapter 04 (modules).

Every expected value comes from the reference course_lib, run on the same
inputs: ``nn.Module`` itself (04.1, 04.2, 04.3), forward hooks on the same
model (04.4), ``nn.Linear`` and ``F.linear`` (04.5), ``F.conv2d`` (04.6),
``ResNet._make_layer`` (04.7) and ``optim.SGD`` (04.8).  Models and inputs
are built fresh for every case from a fixed seed.
"""
from __future__ import annotations

import math

import numpy as np

from course.checks import Case, exercise


def _outcome(fn, *args):
    """``fn(*args)``, or ``(ExcType name, message)`` if it raises (NotImplementedError passes through)."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - the error is the value being checked
        return (type(e).__name__, str(e))


def _close(rtol=1e-6, atol=1e-7):
    """Compare nested lists/tuples: floats and arrays with a tolerance, everything else exactly."""
    def same(got, exp):
        if isinstance(exp, np.ndarray):
            got = np.asarray(got)
            return got.shape == exp.shape and got.dtype == exp.dtype and np.allclose(got, exp, rtol=rtol, atol=atol)
        if isinstance(exp, float):
            return isinstance(got, (float, int)) and not isinstance(got, bool) and \
                math.isclose(got, exp, rel_tol=rtol, abs_tol=atol)
        if isinstance(exp, (list, tuple)):
            return isinstance(got, (list, tuple)) and len(got) == len(exp) and \
                all(same(g, e) for g, e in zip(got, exp))
        return type(got) is type(exp) and got == exp
    return same


# ------------------------------------------------------------------ 04.1 MiniModule.__setattr__

def _summary(m):
    """Where each name ended up: (parameters, buffers, modules, plain attributes); None slots marked."""
    def names(d):
        return [k if v is not None else k + "=None" for k, v in d.items()]
    plain = sorted(k for k in vars(m) if not k.startswith("_") and k != "training")
    return (names(m.__dict__["_parameters"]), names(m.__dict__["_buffers"]), names(m.__dict__["_modules"]), plain)


def _setattr_scenarios():
    """(label, scenario(Base) -> observable outcome, compare messages?)"""
    import course_lib as cl
    from course_lib.nn import Parameter

    def build(Base, body):
        class Net(Base):
            def __init__(self):
                super().__init__()
                body(self, Base)
        return Net()

    def run(body, extra=None):
        def scenario(Base):
            def go():
                m = build(Base, body)
                return _summary(m) if extra is None else (_summary(m), extra(m))
            return _outcome(go)
        return scenario

    p = Parameter(cl.ones(2))

    def param(s, B):
        s.w = p

    def child(s, B):
        s.sub = B()

    def plain_tensor(s, B):
        s.t = cl.ones(2)

    def plain_int(s, B):
        s.n = 3

    def attr_then_param(s, B):
        s.w = 1
        s.w = p

    def param_then_none(s, B):
        s.w = Parameter(cl.ones(2))
        s.w = None

    def param_then_tensor(s, B):
        s.w = Parameter(cl.ones(2))
        s.w = cl.zeros(2, 3)

    def child_then_int(s, B):
        s.sub = B()
        s.sub = 5

    def child_then_none(s, B):
        s.sub = B()
        s.sub = None

    def buffer_then_tensor(s, B):
        s.register_buffer("buf", cl.zeros(2))
        s.buf = cl.ones(3)

    def buffer_then_int(s, B):
        s.register_buffer("buf", cl.zeros(2))
        s.buf = 1

    def child_then_param(s, B):
        s.sub = B()
        s.sub = p

    def none_plain(s, B):
        s.x = None

    def two_of_each(s, B):
        s.a = Parameter(cl.ones(1))
        s.first = B()
        s.b = Parameter(cl.ones(1))
        s.second = B()
        s.k = "text"

    def param_then_module(s, B):
        s.w = Parameter(cl.ones(2))
        s.w = B()

    def before_init(Base):
        class Early(Base):
            def __init__(self):
                self.w = Parameter(cl.ones(2))
                super().__init__()
        return _outcome(lambda: _summary(Early()))

    return [
        ("self.w = Parameter(...)", run(param, lambda m: (m.w is p, m.__dict__["_parameters"]["w"] is p)), True),
        ("self.sub = Base()", run(child, lambda m: type(m.sub).__name__ == type(m).__mro__[1].__name__), True),
        ("self.t = ones(2)", run(plain_tensor), True),
        ("self.n = 3", run(plain_int), True),
        ("self.w = 1; self.w = Parameter(...)", run(attr_then_param, lambda m: m.w is p), True),
        ("self.w = Parameter(...); self.w = None", run(param_then_none, lambda m: m.w is None), True),
        ("self.w = Parameter(...); self.w = zeros(2, 3)", run(param_then_tensor), True),
        ("self.sub = Base(); self.sub = 5", run(child_then_int), True),
        ("self.sub = Base(); self.sub = None", run(child_then_none), True),
        ("register_buffer('buf', zeros(2)); self.buf = ones(3)", run(buffer_then_tensor, lambda m: m.buf.shape[0]),
         True),
        ("register_buffer('buf', zeros(2)); self.buf = 1", run(buffer_then_int), True),
        ("self.sub = Base(); self.sub = Parameter(...)", run(child_then_param, lambda m: m.sub is p), True),
        ("self.x = None", run(none_plain), True),
        ("self.a, self.first, self.b, self.second, self.k = ...", run(two_of_each), True),
        ("self.w = Parameter(...); self.w = Base()", run(param_then_module), False),
        ("self.w = Parameter(...) before super().__init__()", before_init, True),
    ]


@exercise("04.1", title="MiniModule.__setattr__", points=2,
          hint="test in PyTorch's order: a Parameter goes to _parameters (delete the name from __dict__, "
               "_buffers, _modules first); a name already in _parameters takes only None, else TypeError; then "
               "a MiniModule goes to _modules (same rules for a name already there); a name in _buffers takes "
               "a Tensor or None; anything else: object.__setattr__. Use _typename(value) in the messages.")
def _mini_module(MiniModule):
    from course_lib import nn

    cases = []
    for label, scenario, messages in _setattr_scenarios():
        expected = scenario(nn.Module)
        if not messages and isinstance(expected, tuple) and len(expected) == 2 and isinstance(expected[0], str):
            def run(scenario=scenario):
                got = scenario(MiniModule)
                return got[0] if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], str) else got
            cases.append(Case(f"class Net(MiniModule): {label}", run, expected[0]))
        else:
            cases.append(Case(f"class Net(MiniModule): {label}", lambda s=scenario: s(MiniModule), expected))
    return cases


# ------------------------------------------------------------------ 04.2 named_parameters


def _tagger(model):
    """Name each parameter object by the first path it is reachable under (so identity can be compared)."""
    tags = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        tags.setdefault(id(p), name)

    def tag(p):
        return tags.get(id(p), f"<not a parameter of the model: {type(p).__name__}>")
    return tag


def _np_models():
    import course_lib as cl
    from course_lib import nn
    from course_lib.models.resnet import BasicBlock

    def linear():
        return nn.Linear(3, 2)

    def no_bias():
        return nn.Linear(3, 2, bias=False)

    def mlp():
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    def shared_module():
        lin = nn.Linear(2, 2)
        return nn.Sequential(lin, lin, nn.Sequential(lin))

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 3)
            self.out = nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight

    class ParentFirst(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.scale = nn.Parameter(cl.ones(1))

    class Deep(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 3)))
            self.head = nn.Linear(3, 1)
            self.gone = nn.Linear(1, 1)
            self.gone = None
            self.bias = nn.Parameter(cl.zeros(1))
            self.head.extra = self.body[1][1].weight   # one parameter reachable twice

    return [
        ("Linear(3, 2)", linear, ""),
        ("Linear(3, 2, bias=False)", no_bias, ""),
        ("Sequential(Linear(4, 8), ReLU(), Linear(8, 2))", mlp, ""),
        ("Sequential(Linear(4, 8), ReLU(), Linear(8, 2)), prefix='model'", mlp, "model"),
        ("Sequential(lin, lin, Sequential(lin))", shared_module, ""),
        ("Tied (out.weight = emb.weight)", Tied, ""),
        ("ParentFirst (fc, then its own 'scale')", ParentFirst, ""),
        ("BatchNorm1d(3)", lambda: nn.BatchNorm1d(3), ""),
        ("BasicBlock(4, 4)", lambda: BasicBlock(4, 4), ""),
        ("Deep (nested, a None child, a shared parameter), prefix='net'", Deep, "net"),
    ]


@exercise("04.2", title="named_parameters", points=2,
          hint="yield the module's own _parameters first (skip None), then recurse into each child of _modules "
               "(skip None) with prefix + '.' + child name; keep a set of id()s of parameters already yielded "
               "and skip repeats. Names join with '.', with no leading dot when the prefix is ''.")
def _named_parameters(named_parameters):
    import course_lib as cl

    cases = []
    for label, build, prefix in _np_models():
        cl.manual_seed(0)
        model = build()
        tag = _tagger(model)
        expected = [(n, tag(p)) for n, p in model.named_parameters(prefix=prefix)]
        args = f"{label}" + (f", prefix={prefix!r}" if prefix else "")

        def run(model=model, prefix=prefix, tag=tag):
            got = named_parameters(model, prefix) if prefix else named_parameters(model)
            return [(n, tag(p)) for n, p in got]
        cases.append(Case(f"named_parameters({args}) -> (name, which parameter)", run, expected))
    return cases


# ------------------------------------------------------------------ 04.3 load_state_dict


def _sd_cases():
    """(label, model builder, state_dict builder(fresh model, source model), strict)"""
    import collections

    import course_lib as cl
    from course_lib import nn

    def seq():
        return nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))

    def other_values(model):
        with cl.no_grad():
            for i, t in enumerate(model.state_dict().values()):
                if t.is_floating_point():
                    t.copy_(cl.arange(t.numel(), dtype=t.dtype).reshape(t.shape) * 0.5 + i)
                else:
                    t.fill_(7)
        return model

    def full(src):
        return src.state_dict()

    def drop_stats_add_extra(src):
        sd = src.state_dict()
        del sd["1.running_mean"], sd["1.running_var"]
        sd["extra.w"] = cl.ones(1)
        return sd

    def wrong_shape(src):
        sd = src.state_dict()
        sd["0.weight"] = cl.ones(5, 5)
        return sd

    def late_wrong_shape(src):
        sd = src.state_dict()
        sd["1.bias"] = cl.ones(3)
        return sd

    def missing_and_wrong_shape(src):
        sd = src.state_dict()
        del sd["0.bias"]
        sd["1.weight"] = cl.ones(4)
        return sd

    def float64(src):
        return collections.OrderedDict((k, v.double() if v.is_floating_point() else v)
                                       for k, v in src.state_dict().items())

    def unexpected_only(src):
        sd = src.state_dict()
        sd["2.weight"] = cl.ones(2)
        return sd

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.register_buffer("scratch", cl.zeros(3), persistent=False)

    def net_missing(src):
        sd = src.state_dict()
        del sd["fc.weight"]
        return sd

    return [
        ("Sequential(Linear, BatchNorm1d), every key", seq, full, True),
        ("Sequential(Linear, BatchNorm1d), 2 keys missing, 1 unexpected", seq, drop_stats_add_extra, True),
        ("Sequential(Linear, BatchNorm1d), 2 keys missing, 1 unexpected", seq, drop_stats_add_extra, False),
        ("Sequential(Linear, BatchNorm1d), 0.weight of shape (5, 5)", seq, wrong_shape, False),
        ("Sequential(Linear, BatchNorm1d), 1.bias of shape (3,)", seq, late_wrong_shape, True),
        ("Sequential(Linear, BatchNorm1d), 0.bias missing and 1.weight of shape (4,)", seq, missing_and_wrong_shape,
         True),
        ("Sequential(Linear, BatchNorm1d), float64 values", seq, float64, True),
        ("Sequential(Linear, BatchNorm1d), unexpected 2.weight", seq, unexpected_only, False),
        ("Net (a non-persistent buffer), fc.weight missing", Net, net_missing, True),
        ("Net (a non-persistent buffer), fc.weight missing", Net, net_missing, False),
    ], other_values


def _load_outcome(load, build, make_sd, other_values, strict):
    """Load into a fresh model; return (result or error, what happened to the model)."""
    import course_lib as cl
    cl.manual_seed(0)
    model = build()
    cl.manual_seed(1)
    src = other_values(build())
    sd = make_sd(src)
    params_before = [id(p) for p in model.parameters()]
    before = {k: (v.dtype.name, v.detach().numpy().copy()) for k, v in model.state_dict().items()}
    result = _outcome(load, model, sd, strict)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str):
        result = (result[0], result[1].split("\n\t"))         # the message, one problem per item
    elif isinstance(result, (tuple, list)):
        result = tuple(list(x) if isinstance(x, (list, tuple)) else x for x in result)
    after = {k: (v.dtype.name, v.detach().numpy()) for k, v in model.state_dict().items()}
    changed = [k for k in before if not np.array_equal(before[k][1], after[k][1])]
    loaded_right = all(k in sd and np.allclose(after[k][1], sd[k].detach().numpy().astype(np.float64), rtol=1e-6)
                       for k in changed)
    dtypes_kept = all(before[k][0] == after[k][0] for k in before)
    effect = (changed, loaded_right, dtypes_kept, [id(p) for p in model.parameters()] == params_before)
    return result, effect


@exercise("04.3", title="load_state_dict", points=3,
          hint="own = module.state_dict(keep_vars=True). missing: keys of own not in state_dict; unexpected: keys of "
               "state_dict not in own; a size mismatch is an error even with strict=False. Collect every message "
               "(missing, then unexpected, then size mismatches), raise one RuntimeError before copying anything, "
               "else copy_ each value under no_grad and return (missing, unexpected).")
def _load_state_dict(load_state_dict):
    cases_, other_values = _sd_cases()

    def reference(module, sd, strict):
        return module.load_state_dict(sd, strict=strict)

    out = []
    for label, build, make_sd, strict in cases_:
        expected = _load_outcome(reference, build, make_sd, other_values, strict)
        outcome = (lambda b=build, m=make_sd, s=strict: _load_outcome(load_state_dict, b, m, other_values, s))
        call = f"load_state_dict({label}, strict={strict})"
        out.append(Case(f"{call} -> (missing, unexpected) or (error, its parts)", lambda o=outcome: o()[0],
                        expected[0]))
        out.append(Case(f"{call} -> (keys changed, to the checkpoint's values?, dtypes kept?, same Parameters?)",
                        lambda o=outcome: o()[1], expected[1]))
    return out


# ------------------------------------------------------------------ 04.4 record_activations


def reference_record_activations(model, x, types):
    import course_lib as cl
    records, handles = [], []
    for name, module in model.named_modules():
        if isinstance(module, types):
            def hook(mod, args, out, name=name):
                o = out.detach()
                records.append((name, o.mean().item(), o.std().item(), (o == 0).float().mean().item()))
            handles.append(module.register_forward_hook(hook))
    try:
        with cl.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return records


def _hook_models():
    import course_lib as cl
    from course_lib import nn
    from course_lib.models.resnet import BasicBlock

    def mlp():
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))

    def nested():
        return nn.Sequential(nn.Sequential(nn.Linear(4, 6), nn.ReLU()), nn.Linear(6, 3))

    def with_own_hook():
        m = mlp()
        m[1].register_forward_hook(lambda mod, args, out: None)   # the user's own hook must survive
        return m

    return [
        ("Sequential(Linear, ReLU, Linear, ReLU, Linear)", mlp, (6, 4), (nn.ReLU,)),
        ("Sequential(Linear, ReLU, Linear, ReLU, Linear)", mlp, (6, 4), (nn.Linear,)),
        ("Sequential(Sequential(Linear, ReLU), Linear)", nested, (5, 4), (nn.Linear, nn.ReLU)),
        ("BasicBlock(3, 3) (its relu runs twice)", lambda: BasicBlock(3, 3).eval(), (2, 3, 5, 5), (nn.ReLU,)),
        ("BasicBlock(3, 3)", lambda: BasicBlock(3, 3).eval(), (2, 3, 5, 5), (nn.Conv2d, nn.BatchNorm2d)),
        ("the MLP with a hook of its own on [1]", with_own_hook, (6, 4), (nn.ReLU,)),
    ]


def _hooks_left(model):
    return [(name, len(m._forward_hooks)) for name, m in model.named_modules() if m._forward_hooks]


def _failing_model():
    """The MLP with a hook of its own on [1], whose last module raises halfway through forward."""
    from course_lib import nn

    class Explode(nn.Module):
        def forward(self, x):
            raise RuntimeError("this model fails halfway through forward")

    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), Explode())
    m[1].register_forward_hook(lambda mod, args, out: None)
    return m


def _hooks_left_after_failure(record_activations):
    """The forward hooks left on a model that raised inside record_activations (its own hook must stay)."""
    import course_lib as cl
    from course_lib import nn

    cl.manual_seed(0)
    model = _failing_model()
    try:
        record_activations(model, cl.randn(6, 4), (nn.ReLU, nn.Linear))
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - letting the model's error through is right; the hooks are checked
        pass
    return _hooks_left(model)


@exercise("04.4", title="record_activations", points=2,
          hint="for each (name, module) in model.named_modules() of one of `types`, register_forward_hook a function "
               "that appends (name, out.mean().item(), out.std().item(), (out == 0).float().mean().item()); run "
               "model(x) under cl.no_grad(); then remove every handle you made in a finally: block (the model may "
               "raise), and only those.")
def _record_activations(record_activations):
    import course_lib as cl
    cases = []
    for label, build, shape, types in _hook_models():
        def outcome(fn, build=build, shape=shape, types=types):
            cl.manual_seed(0)
            model = build()
            x = cl.randn(*shape)
            grad_mode = []   # grad mode while the model runs, seen by a forward pre-hook (not a forward hook)
            probe = model.register_forward_pre_hook(lambda mod, args: grad_mode.append(cl.is_grad_enabled()))
            records = fn(model, x, types)
            probe.remove()
            if isinstance(records, (list, tuple)):
                records = [tuple(r) if isinstance(r, (list, tuple)) else r for r in records]
            return records, _hooks_left(model), f"grad enabled during forward: {grad_mode}"
        expected = outcome(reference_record_activations)
        tnames = ", ".join(t.__name__ for t in types)
        cases.append(Case(f"record_activations({label}, x {shape}, ({tnames},)) -> (records, hooks left, "
                          "grad mode)", lambda o=outcome: o(record_activations), expected, compare=_close(1e-5, 1e-6)))
    cases.append(Case("record_activations(<the MLP with a hook of its own on [1], whose last module raises>, x, "
                      "(ReLU, Linear)) -> forward hooks left afterwards",
                      lambda: _hooks_left_after_failure(record_activations),
                      _hooks_left_after_failure(reference_record_activations)))
    return cases


# ------------------------------------------------------------------ 04.5 MyLinear


@exercise("04.5", title="MyLinear", points=2,
          hint="__init__: super().__init__(), then weight = Parameter of shape (out_features, in_features), bias = "
               "Parameter of shape (out_features,) or register_parameter('bias', None); fill both from "
               "U(-1/sqrt(in_features), 1/sqrt(in_features)). forward: x @ weight.t() (+ bias).")
def _my_linear(MyLinear):
    import course_lib as cl
    from course_lib import nn
    from course_lib.nn import functional as F

    def params(in_f, out_f, bias=True):
        cl.manual_seed(0)
        m = MyLinear(in_f, out_f, bias=bias)
        return [(k, None if v is None else (type(v).__name__, tuple(v.shape), v.dtype.name, v.requires_grad))
                for k, v in m._parameters.items()]

    def expected_params(in_f, out_f, bias=True):
        m = nn.Linear(in_f, out_f, bias=bias)
        return [(k, None if v is None else (type(v).__name__, tuple(v.shape), v.dtype.name, v.requires_grad))
                for k, v in m._parameters.items()]

    def init_stats():
        cl.manual_seed(0)
        m = MyLinear(300, 200)
        w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
        bound = 1 / math.sqrt(300)
        return (bool(np.abs(w).max() <= bound), bool(np.abs(b).max() <= bound),
                bool(abs(w.std() / (bound / math.sqrt(3)) - 1) < 0.05), bool(abs(w.mean()) < 0.05 * bound),
                bool(len(np.unique(b)) > 100))

    def forward(shape, in_f, out_f, bias=True):
        cl.manual_seed(0)
        m = MyLinear(in_f, out_f, bias=bias)
        rng = np.random.default_rng(3)
        with cl.no_grad():
            m.weight.copy_(cl.tensor(rng.standard_normal((out_f, in_f)).astype(np.float32)))
            if bias:
                m.bias.copy_(cl.tensor(rng.standard_normal(out_f).astype(np.float32)))
        x = cl.tensor(rng.standard_normal(shape).astype(np.float32))
        y = m(x)
        return m, x, y

    def forward_values(shape, in_f, out_f, bias=True):
        m, x, y = forward(shape, in_f, out_f, bias)
        ref = F.linear(x, m.weight.detach(), None if m.bias is None else m.bias.detach())
        return (type(y).__name__, tuple(y.shape), bool(np.allclose(y.detach().numpy(), ref.numpy(), rtol=1e-5,
                                                                    atol=1e-5)))

    def grads(shape, in_f, out_f, bias=True):
        m, x, y = forward(shape, in_f, out_f, bias)
        (y * y).sum().backward()
        w = m.weight.detach().requires_grad_()
        b = m.bias.detach().requires_grad_() if bias else None
        r = F.linear(x, w, b)
        (r * r).sum().backward()
        out = [bool(m.weight.grad is not None and np.allclose(m.weight.grad.numpy(), w.grad.numpy(), rtol=1e-4,
                                                              atol=1e-4))]
        if bias:
            out.append(bool(m.bias.grad is not None and np.allclose(m.bias.grad.numpy(), b.grad.numpy(), rtol=1e-4,
                                                                    atol=1e-4)))
        return out

    return [
        Case("MyLinear(3, 2)._parameters", lambda: params(3, 2), expected_params(3, 2)),
        Case("MyLinear(3, 2, bias=False)._parameters", lambda: params(3, 2, False), expected_params(3, 2, False)),
        Case("MyLinear(300, 200): |weight| <= 1/sqrt(300), |bias| <= 1/sqrt(300), uniform std, mean ~ 0, "
             "bias not constant", init_stats, (True, True, True, True, True)),
        Case("MyLinear(3, 2)(x of shape (4, 3)) vs F.linear: (type, shape, allclose)",
             lambda: forward_values((4, 3), 3, 2), ("Tensor", (4, 2), True)),
        Case("MyLinear(3, 5, bias=False)(x of shape (4, 3)) vs F.linear", lambda: forward_values((4, 3), 3, 5, False),
             ("Tensor", (4, 5), True)),
        Case("MyLinear(3, 2)(x of shape (2, 4, 3)) vs F.linear", lambda: forward_values((2, 4, 3), 3, 2),
             ("Tensor", (2, 4, 2), True)),
        Case("MyLinear(4, 4)(x of shape (3, 4)) vs F.linear (square weight)", lambda: forward_values((3, 4), 4, 4),
             ("Tensor", (3, 4), True)),
        Case("(MyLinear(3, 2)(x) ** 2).sum().backward(): weight.grad, bias.grad as F.linear's",
             lambda: grads((5, 3), 3, 2), [True, True]),
    ]


# ------------------------------------------------------------------ 04.6 conv2d_im2col


def _conv_cases():
    return [
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


@exercise("04.6", title="conv2d_im2col", points=3,
          hint="pad H and W with np.pad; take the windows with sliding_window_view(xp, (kh, kw), axis=(2, 3)) and "
               "keep every stride-th row and column; reshape them to (N, Ho, Wo, C*kh*kw) so the last axis matches "
               "weight.reshape(O, C*kh*kw); multiply, add the bias, and move the channels to axis 1. No Python "
               "loop over pixels: one matrix product does them all.")
def _conv2d_im2col(conv2d_im2col):
    import course_lib as cl
    from course_lib.nn import functional as F

    cases = []
    for i, (xs, ws, bias, stride, padding, dtype) in enumerate(_conv_cases()):
        rng = np.random.default_rng(40 + i)
        x = rng.standard_normal(xs).astype(dtype)
        w = rng.standard_normal(ws).astype(dtype)
        b = rng.standard_normal(ws[0]).astype(dtype) if bias else None
        expected = F.conv2d(cl.tensor(x), cl.tensor(w), None if b is None else cl.tensor(b), stride, padding).numpy()
        tol = 1e-9 if dtype is np.float64 else 1e-5
        bias_text = "b" if bias else "None"

        def run(x=x, w=w, b=b, stride=stride, padding=padding):
            out = conv2d_im2col(x.copy(), w.copy(), None if b is None else b.copy(), stride=stride, padding=padding)
            return np.asarray(out) if not isinstance(out, np.ndarray) else out
        cases.append(Case(f"conv2d_im2col(x {xs} {np.dtype(dtype).name}, weight {ws}, {bias_text}, "
                          f"stride={stride}, padding={padding})", run, expected, compare=_close(tol, tol)))
    rng = np.random.default_rng(60)
    x, w, b = rng.standard_normal((1, 1, 130, 130)), rng.standard_normal((2, 1, 3, 3)), rng.standard_normal(2)
    cases.append(Case("conv2d_im2col(x (1, 1, 130, 130), weight (2, 1, 3, 3), b, stride=1, padding=1): lines of "
                      "Python run for its 16,900 output pixels", lambda: _python_loop_verdict(conv2d_im2col, x, w, b),
                      _NO_PIXEL_LOOP))
    return cases


#: A vectorised im2col runs a few hundred lines of Python whatever the size (most of them in np.pad; about
#: 750 with np.einsum(..., optimize=True), which plans in Python);
#: a Python loop over output pixels runs at least one line per pixel.
_PIXEL_LINES_BUDGET = 5000
_NO_PIXEL_LOOP = f"at most {_PIXEL_LINES_BUDGET} lines: no Python loop over the pixels"


def _python_loop_verdict(conv2d_im2col, x, w, b) -> str:
    """Run conv2d_im2col with every line of Python it executes counted (sys.settrace) and say what it means.

    Counting is exact and does not depend on the machine's speed, unlike a time budget.
    """
    import sys

    lines = 0

    def trace(frame, event, arg):
        nonlocal lines
        if event == "line":
            lines += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        conv2d_im2col(x.copy(), w.copy(), b.copy(), stride=1, padding=1)
    finally:
        sys.settrace(previous)
    if lines <= _PIXEL_LINES_BUDGET:
        return _NO_PIXEL_LOOP
    return f"{lines:,} lines: a Python loop over the pixels?"


# ------------------------------------------------------------------ 04.7 make_layer


def _describe_layer(layer, inplanes):
    """Per block: (type, 'conv1 in->out /stride', downsample as text or None); then the new inplanes."""
    def conv(c):
        return f"{type(c).__name__} {c.in_channels}->{c.out_channels} /{c.stride[0]}" if hasattr(c, "in_channels") \
            else type(c).__name__

    blocks = []
    for b in (layer if hasattr(layer, "__iter__") else []):
        ds = getattr(b, "downsample", None)
        blocks.append((type(b).__name__, conv(b.conv1), None if ds is None else " + ".join(conv(m) for m in ds)))
    return type(layer).__name__, blocks, inplanes


def reference_make_layer(block, inplanes, planes, blocks, stride=1):
    from course_lib import nn
    from course_lib.models.resnet import ResNet
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
def _make_layer(make_layer):
    import course_lib as cl
    from course_lib.models.resnet import BasicBlock, Bottleneck

    configs = [
        (BasicBlock, 8, 8, 2, 1),
        (BasicBlock, 8, 16, 2, 2),
        (BasicBlock, 8, 8, 3, 2),
        (BasicBlock, 4, 8, 1, 1),
        (Bottleneck, 8, 8, 2, 1),
        (Bottleneck, 32, 8, 2, 1),
        (Bottleneck, 32, 16, 3, 2),
    ]
    cases = []
    for block, inplanes, planes, blocks, stride in configs:
        cl.manual_seed(0)
        expected = _describe_layer(*reference_make_layer(block, inplanes, planes, blocks, stride))

        layer, _ = reference_make_layer(block, inplanes, planes, blocks, stride)
        expected_keys = [(k, tuple(v.shape)) for k, v in layer.state_dict().items()]

        def run(block=block, inplanes=inplanes, planes=planes, blocks=blocks, stride=stride):
            cl.manual_seed(0)
            return make_layer(block, inplanes, planes, blocks, stride)

        call = f"make_layer({block.__name__}, {inplanes}, {planes}, {blocks}, stride={stride})"
        cases.append(Case(f"{call} -> (type, [(block, conv1, downsample)], new inplanes)",
                          lambda r=run: _describe_layer(*r()), expected))
        cases.append(Case(f"{call}[0].state_dict(): (key, shape) pairs",
                          lambda r=run: [(k, tuple(v.shape)) for k, v in r()[0].state_dict().items()], expected_keys))
    return cases


# ------------------------------------------------------------------ 04.8 sgd_step


def _sgd_trajectory(step, settings, steps=4, set_to_none=True):
    """Parameter values after each step, and the momentum buffers at the end.

    Between steps the gradients are reset as ``optimizer.zero_grad(set_to_none=...)`` does: set to None, or
    zeroed in place, so that the next backward() accumulates into the same tensor (a momentum buffer that
    is that tensor, not a copy, then changes with it).
    """
    import course_lib as cl
    rng = np.random.default_rng(7)
    a = cl.nn.Parameter(cl.tensor(rng.standard_normal((3, 2)).astype(np.float32)))
    b = cl.nn.Parameter(cl.tensor(rng.standard_normal(2).astype(np.float32)))
    frozen = cl.nn.Parameter(cl.tensor(rng.standard_normal(2).astype(np.float32)))   # never gets a gradient
    x = cl.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    params = [a, b, frozen]
    state: dict = {}
    trace = []
    for _ in range(steps):
        for p in params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                with cl.no_grad():
                    p.grad.zero_()
        loss = ((x @ a + b).tanh() ** 2).sum() + (a * a).sum() * 0.1
        loss.backward()
        step(params, state, **settings)
        trace.append([np.round(p.detach().numpy().astype(np.float64), 5).tolist() for p in params])
    bufs = []
    for p in params:
        buf = state.get(p, {}).get("momentum_buffer") if isinstance(state, dict) else None
        bufs.append(None if buf is None else np.round(np.asarray(buf.detach().numpy(), np.float64), 5).tolist())
    return trace, bufs


def reference_sgd_step(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    """One step of course_lib.optim.SGD, with `state` playing the optimizer's state."""
    import course_lib as cl
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
def _sgd_step(sgd_step):
    settings = [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.05, momentum=0.9, dampening=0.5),
        dict(lr=0.1, momentum=0.8, weight_decay=0.1),
        dict(lr=0.1, momentum=0.9, nesterov=True),
        dict(lr=0.05, momentum=0.5, weight_decay=0.2, nesterov=True),
        dict(lr=0.1, weight_decay=0.3),
    ]
    cases = []
    for s in settings:
        expected = _sgd_trajectory(reference_sgd_step, s)
        text = ", ".join(f"{k}={v}" for k, v in s.items())
        cases.append(Case(f"4 steps of sgd_step(params, state, {text}) -> (values after each step, buffers)",
                          lambda s=s: _sgd_trajectory(sgd_step, s), expected, compare=_close(1e-4, 1e-5)))
    for s in [dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True)]:
        expected = _sgd_trajectory(reference_sgd_step, s, set_to_none=False)
        text = ", ".join(f"{k}={v}" for k, v in s.items())
        cases.append(Case(f"4 steps of sgd_step(params, state, {text}), grads zeroed in place between steps "
                          "(zero_grad(set_to_none=False)) -> (values, buffers)",
                          lambda s=s: _sgd_trajectory(sgd_step, s, set_to_none=False), expected,
                          compare=_close(1e-4, 1e-5)))
    return cases
