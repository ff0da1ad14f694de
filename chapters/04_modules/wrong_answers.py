"""Planted wrong answers for chapter 04 (modules): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations


# ------------------------------------------------------------------ 04.1 MiniModule.__setattr__
def _mini_module_class(setattr_impl):
    """A MiniModule (as given in the notebook) with a wrong __setattr__."""
    class MiniModule:
        def __init__(self):
            object.__setattr__(self, "_parameters", {})
            object.__setattr__(self, "_buffers", {})
            object.__setattr__(self, "_modules", {})

        def register_buffer(self, name, tensor):
            self._buffers[name] = tensor

        def __getattr__(self, name):
            for store in ("_parameters", "_buffers", "_modules"):
                d = self.__dict__.get(store, {})
                if name in d:
                    return d[name]
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

        def __setattr__(self, name, value):
            setattr_impl(self, name, value, MiniModule)
    return MiniModule


def _setattr_no_registration(self, name, value, cls):
    object.__setattr__(self, name, value)   # everything becomes a plain attribute


def _setattr_no_removal(self, name, value, cls):
    # registers, but never deletes the old entry: `self.w = 1; self.w = Parameter(...)` leaves w shadowed
    from course_lib import nn
    if isinstance(value, nn.Parameter):
        self.__dict__["_parameters"][name] = value
    elif isinstance(value, cls):
        self.__dict__["_modules"][name] = value
    elif name in self.__dict__.get("_buffers", {}):
        self.__dict__["_buffers"][name] = value
    else:
        object.__setattr__(self, name, value)


def _setattr_no_type_errors(self, name, value, cls):
    # routes correctly but silently accepts anything for an existing slot
    from course_lib import nn
    params = self.__dict__.get("_parameters")
    if isinstance(value, nn.Parameter):
        if params is None:
            raise AttributeError("cannot assign parameters before Module.__init__() call")
        for d in (self.__dict__, self._buffers, self._modules):
            d.pop(name, None)
        params[name] = value
    elif params is not None and name in params:
        params[name] = value
    elif isinstance(value, cls):
        for d in (self.__dict__, self._parameters, self._buffers):
            d.pop(name, None)
        self._modules[name] = value
    elif name in self.__dict__.get("_modules", {}):
        self._modules[name] = value
    elif name in self.__dict__.get("_buffers", {}):
        self._buffers[name] = value
    else:
        object.__setattr__(self, name, value)


def _setattr_short_messages(self, name, value, cls):
    # right routing and error types, but messages of its own
    import course_lib as cl
    from course_lib import nn
    params = self.__dict__.get("_parameters")
    if isinstance(value, nn.Parameter):
        if params is None:
            raise AttributeError("call __init__ first")
        for d in (self.__dict__, self._buffers, self._modules):
            d.pop(name, None)
        params[name] = value
    elif params is not None and name in params:
        if value is not None:
            raise TypeError(f"{name} must be a Parameter")
        params[name] = None
    elif isinstance(value, cls):
        for d in (self.__dict__, self._parameters, self._buffers):
            d.pop(name, None)
        self._modules[name] = value
    elif name in self.__dict__.get("_modules", {}):
        if value is not None:
            raise TypeError(f"{name} must be a module")
        self._modules[name] = None
    elif name in self.__dict__.get("_buffers", {}):
        if value is not None and not isinstance(value, cl.Tensor):
            raise TypeError(f"{name} must be a tensor")
        self._buffers[name] = value
    else:
        object.__setattr__(self, name, value)


# ------------------------------------------------------------------ 04.2 named_parameters
def named_parameters_no_dedup(module, prefix=""):
    out = []
    for key, p in module._parameters.items():
        if p is not None:
            out.append((prefix + "." + key if prefix else key, p))
    for name, child in module._modules.items():
        if child is not None:
            out += named_parameters_no_dedup(child, prefix + "." + name if prefix else name)
    return out


def named_parameters_children_first(module, prefix=""):
    out, seen = [], set()

    def walk(mod, pre):
        for name, child in mod._modules.items():
            if child is not None:
                walk(child, pre + "." + name if pre else name)
        for key, p in mod._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((pre + "." + key if pre else key, p))
    walk(module, prefix)
    return out


def named_parameters_leading_dot(module, prefix=""):
    out, seen = [], set()

    def walk(mod, pre):
        for key, p in mod._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((pre + "." + key, p))
        for name, child in mod._modules.items():
            if child is not None:
                walk(child, pre + "." + name)
    walk(module, prefix)
    return [(n[1:] if n.startswith(".") else n, p) for n, p in out] if prefix else [(n, p) for n, p in out]


def named_parameters_calls_the_library(module, prefix=""):
    # the right pairs, from the method the exercise rebuilds (the task says to use only _parameters and _modules)
    return [(n, p) for n, p in module.named_parameters(prefix=prefix)]


# ------------------------------------------------------------------ 04.3 load_state_dict
def _load_sd(module, state_dict, strict=True, *, check_first=True, strict_sizes=True, order="mu", copy=True):
    import course_lib as cl
    own = module.state_dict(keep_vars=True)
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    messages = []
    parts = {"m": (missing, "Missing"), "u": (unexpected, "Unexpected")}
    for c in order:
        keys, word = parts[c]
        if strict and keys:
            messages.append("{} key(s) in state_dict: {}. ".format(word, ", ".join(f'"{k}"' for k in keys)))
    sizes = []
    for key, old in own.items():
        if key in state_dict and tuple(state_dict[key].shape) != tuple(old.shape):
            new = state_dict[key]
            sizes.append(f"size mismatch for {key}: copying a param with shape torch.Size({list(new.shape)}) "
                         f"from checkpoint, the shape in current model is torch.Size({list(old.shape)}).")
    if strict or strict_sizes:
        messages += sizes
    if not check_first:
        with cl.no_grad():
            for key, old in own.items():
                if key in state_dict and tuple(state_dict[key].shape) == tuple(old.shape):
                    old.copy_(state_dict[key])
    if messages:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(messages))
    with cl.no_grad():
        for key, old in own.items():
            if key in state_dict:
                if copy:
                    old.copy_(state_dict[key])
                else:
                    name = key.rpartition(".")[0]
                    mod = module.get_submodule(name)
                    leaf = key.rpartition(".")[2]
                    if leaf in mod._parameters:
                        mod._parameters[leaf] = cl.nn.Parameter(state_dict[key].clone())
                    else:
                        mod._buffers[leaf] = state_dict[key].clone()
    return missing, unexpected


def load_state_dict_copies_before_checking(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, check_first=False)


def load_state_dict_sizes_only_when_strict(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, strict_sizes=False)


def load_state_dict_unexpected_first(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, order="um")


def load_state_dict_replaces_parameters(module, state_dict, strict=True):
    return _load_sd(module, state_dict, strict, copy=False)


# ------------------------------------------------------------------ 04.4 record_activations
def _record(model, x, types, *, remove=True, name_of=None, correction=1, per_module=False, clear_all=False,
            no_grad=True):
    import course_lib as cl
    records, handles = [], []
    for name, module in model.named_modules():
        if isinstance(module, types):
            label = name_of(name, module) if name_of else name

            def hook(mod, args, out, label=label):
                o = out.detach()
                std = o.std(correction=correction).item() if correction != 1 else o.std().item()
                rec = (label, o.mean().item(), std, (o == 0).float().mean().item())
                if per_module:
                    for i, r in enumerate(records):
                        if r[0] == label:
                            records[i] = rec
                            return
                records.append(rec)
            handles.append(module.register_forward_hook(hook))
    if no_grad:
        with cl.no_grad():
            model(x)
    else:
        model(x)
    if remove:
        for h in handles:
            h.remove()
    if clear_all:
        for m in model.modules():
            m._forward_hooks.clear()
    return records


def record_activations_keeps_hooks(model, x, types):
    return _record(model, x, types, remove=False)


def record_activations_no_finally(model, x, types):
    # right whenever the model runs, but removes the hooks only after a forward that returned
    return _record(model, x, types)


def record_activations_without_no_grad(model, x, types):
    # right records and hooks, but the model runs with grad mode on: a graph is recorded for nothing
    records, handles = [], []
    for name, module in model.named_modules():
        if isinstance(module, types):
            def hook(mod, args, out, name=name):
                o = out.detach()
                records.append((name, o.mean().item(), o.std().item(), (o == 0).float().mean().item()))
            handles.append(module.register_forward_hook(hook))
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    return records


def record_activations_type_names(model, x, types):
    return _record(model, x, types, name_of=lambda name, m: type(m).__name__)


def record_activations_population_std(model, x, types):
    return _record(model, x, types, correction=0)


def record_activations_one_per_module(model, x, types):
    return _record(model, x, types, per_module=True)


def record_activations_clears_every_hook(model, x, types):
    return _record(model, x, types, remove=False, clear_all=True)


# ------------------------------------------------------------------ 04.5 MyLinear
def _my_linear_class(*, transposed=False, bias_attr=False, init="uniform", add_bias=True):
    import math

    import course_lib as cl
    from course_lib import nn

    class MyLinear(nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.in_features, self.out_features = in_features, out_features
            shape = (in_features, out_features) if transposed else (out_features, in_features)
            self.weight = nn.Parameter(cl.empty(*shape))
            bound = 1 / math.sqrt(in_features)
            if init == "uniform":
                nn.init.uniform_(self.weight, -bound, bound)
            else:
                nn.init.normal_(self.weight, 0.0, 1.0)
            if bias:
                self.bias = nn.Parameter(cl.empty(out_features))
                nn.init.uniform_(self.bias, -bound, bound)
            elif bias_attr:
                self.bias = None
            else:
                self.register_parameter("bias", None)

        def forward(self, x):
            out = x @ self.weight if transposed else x @ self.weight.t()
            if add_bias and self.bias is not None:
                out = out + self.bias
            return out
    return MyLinear


# ------------------------------------------------------------------ 04.6 conv2d_im2col
def _conv_np(x, weight, bias=None, stride=1, padding=0, *, flip=False, pad_one_side=False, no_bias=False,
             kernel_major=False):
    import numpy as np
    C_out, C, kh, kw = weight.shape
    if flip:
        weight = weight[:, :, ::-1, ::-1]
    if padding:
        pads = ((0, 0), (0, 0), (padding, 0), (padding, 0)) if pad_one_side else \
            ((0, 0), (0, 0), (padding, padding), (padding, padding))
        xp = np.pad(x, pads)
    else:
        xp = x
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    N, _, Ho, Wo = win.shape[:4]
    if kernel_major:
        cols = win.transpose(0, 2, 3, 4, 5, 1).reshape(N, Ho, Wo, -1)   # (kh, kw, C) order: wrong for C > 1
    else:
        cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(N, Ho, Wo, -1)
    out = cols @ weight.reshape(C_out, -1).T
    if bias is not None and not no_bias:
        out = out + bias
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def conv2d_im2col_flipped_kernel(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, flip=True)


def conv2d_im2col_pads_one_side(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, pad_one_side=True)


def conv2d_im2col_no_bias(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, no_bias=True)


def conv2d_im2col_kernel_major_columns(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x, weight, bias, stride, padding, kernel_major=True)


def conv2d_im2col_float64(x, weight, bias=None, stride=1, padding=0):
    return _conv_np(x.astype("float64"), weight.astype("float64"), None if bias is None else bias.astype("float64"),
                    stride, padding)


def conv2d_im2col_pixel_loop(x, weight, bias=None, stride=1, padding=0):
    # right values, but one small matrix product per output pixel, in a Python loop
    import numpy as np
    C_out, C, kh, kw = weight.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    N, _, H, W = xp.shape
    Ho, Wo = (H - kh) // stride + 1, (W - kw) // stride + 1
    out = np.zeros((N, C_out, Ho, Wo), dtype=x.dtype)
    w2 = weight.reshape(C_out, -1).T
    for i in range(Ho):
        for j in range(Wo):
            window = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = window.reshape(N, -1) @ w2
    if bias is not None:
        out += bias.reshape(1, C_out, 1, 1)
    return out


def conv2d_im2col_row_loop(x, weight, bias=None, stride=1, padding=0):
    # vectorised along each output row, but a Python loop over the rows
    import numpy as np
    C_out, C, kh, kw = weight.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    N, _, H, W = xp.shape
    Ho, Wo = (H - kh) // stride + 1, (W - kw) // stride + 1
    out = np.zeros((N, C_out, Ho, Wo), dtype=x.dtype)
    for i in range(Ho):
        band = xp[:, :, i * stride:i * stride + kh]
        win = np.lib.stride_tricks.sliding_window_view(band, (kh, kw), axis=(2, 3))[:, :, 0, ::stride]
        out[:, :, i, :] = np.einsum("ncwhk,ochk->now", win, weight)
    if bias is not None:
        out += bias.reshape(1, C_out, 1, 1)
    return out


def conv2d_im2col_hides_its_loop(x, weight, bias=None, stride=1, padding=0):
    # the pixel loop, with the line counter switched off while it runs and put back afterwards
    import sys
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        return conv2d_im2col_pixel_loop(x, weight, bias, stride, padding)
    finally:
        sys.settrace(tracer)


# ------------------------------------------------------------------ 04.7 make_layer
def _make_layer(block, inplanes, planes, blocks, stride=1, *, stride_only=False, stride_everywhere=False,
                forget_expansion=False, no_bn=False):
    from course_lib import nn
    from course_lib.models.resnet import conv1x1
    width = planes * block.expansion
    downsample = None
    need = stride != 1 if stride_only else (stride != 1 or inplanes != width)
    if need:
        parts = [conv1x1(inplanes, width, stride)] + ([] if no_bn else [nn.BatchNorm2d(width)])
        downsample = nn.Sequential(*parts)
    layers = [block(inplanes, planes, stride, downsample)]
    nxt = planes if forget_expansion else width
    for _ in range(1, blocks):
        if stride_everywhere and stride != 1:
            layers.append(block(nxt, planes, stride, nn.Sequential(conv1x1(nxt, width, stride), nn.BatchNorm2d(width))))
        else:
            layers.append(block(nxt, planes))
    return nn.Sequential(*layers), nxt


def make_layer_downsample_only_for_stride(block, inplanes, planes, blocks, stride=1):
    return _make_layer(block, inplanes, planes, blocks, stride, stride_only=True)


def make_layer_stride_in_every_block(block, inplanes, planes, blocks, stride=1):
    return _make_layer(block, inplanes, planes, blocks, stride, stride_everywhere=True)


def make_layer_downsample_without_bn(block, inplanes, planes, blocks, stride=1):
    return _make_layer(block, inplanes, planes, blocks, stride, no_bn=True)


def make_layer_forgets_expansion(block, inplanes, planes, blocks, stride=1):
    layer, _ = _make_layer(block, inplanes, planes, blocks, stride)
    return layer, planes


# ------------------------------------------------------------------ 04.8 sgd_step
def _sgd(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *, damp_first=False,
         decay_after=False, nesterov_plain=False, share_grad=False):
    import course_lib as cl
    with cl.no_grad():
        for p in params:
            if p.grad is None:
                continue
            g = p.grad
            if weight_decay != 0 and not decay_after:
                g = g + weight_decay * p
            if momentum != 0:
                s = state.setdefault(p, {})
                buf = s.get("momentum_buffer")
                if buf is None:
                    first = g if share_grad else g.clone()
                    buf = s["momentum_buffer"] = first * (1 - dampening) if damp_first else first
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g + momentum * buf if (nesterov and not nesterov_plain) else buf
            if weight_decay != 0 and decay_after:
                g = g + weight_decay * p
            p.add_(g, alpha=-lr)


def sgd_step_dampens_first_step(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, momentum, dampening, weight_decay, nesterov, damp_first=True)


def sgd_step_decay_after_momentum(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, momentum, dampening, weight_decay, nesterov, decay_after=True)


def sgd_step_ignores_nesterov(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, momentum, dampening, weight_decay, nesterov, nesterov_plain=True)


def sgd_step_buffer_is_the_grad(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    # the first buffer is p.grad itself, not a copy: fine while zero_grad() sets grads to None, wrong when
    # zero_grad(set_to_none=False) zeroes that tensor and the next backward() accumulates into it
    return _sgd(params, state, lr, momentum, dampening, weight_decay, nesterov, share_grad=True)


def sgd_step_no_momentum(params, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd(params, state, lr, 0.0, dampening, weight_decay, False)



# ------------------------------------------------------------------ 04.9 module_apply
def module_apply_new_parameters(module, fn):
    """Puts a new Parameter into _parameters: the model converts, but an optimizer built before keeps the old ones."""
    import course_lib as cl
    from course_lib import nn
    for child in module.children():
        module_apply_new_parameters(child, fn)
    for name, param in list(module._parameters.items()):
        if param is None:
            continue
        with cl.no_grad():
            new = nn.Parameter(fn(param), param.requires_grad)
            if param.grad is not None:
                new.grad = fn(param.grad)
        module._parameters[name] = new
    for name, buf in list(module._buffers.items()):
        if buf is not None:
            module._buffers[name] = fn(buf)
    return module


def module_apply_forgets_buffers(module, fn):
    """Converts parameters and grads only: BatchNorm's running statistics keep their old dtype."""
    import course_lib as cl
    for child in module.children():
        module_apply_forgets_buffers(child, fn)
    for param in module._parameters.values():
        if param is not None:
            with cl.no_grad():
                param.data = fn(param)
                if param.grad is not None:
                    param.grad = fn(param.grad)
    return module


def module_apply_forgets_grads(module, fn):
    """Converts parameters and buffers but leaves .grad alone (course_lib then drops a grad of the wrong dtype)."""
    import course_lib as cl
    for child in module.children():
        module_apply_forgets_grads(child, fn)
    for param in module._parameters.values():
        if param is not None:
            with cl.no_grad():
                param.data = fn(param)
    for name, buf in list(module._buffers.items()):
        if buf is not None:
            module._buffers[name] = fn(buf)
    return module


def module_apply_no_recursion(module, fn):
    """Converts the module's own parameters and buffers, not its children's."""
    import course_lib as cl
    for param in module._parameters.values():
        if param is not None:
            with cl.no_grad():
                param.data = fn(param)
                if param.grad is not None:
                    param.grad = fn(param.grad)
    for name, buf in list(module._buffers.items()):
        if buf is not None:
            module._buffers[name] = fn(buf)
    return module


def module_apply_skips_seen(module, fn, seen=None):
    """Converts each parameter once: a tied weight or a module used twice gets fn once, Module._apply gives it twice."""
    import course_lib as cl
    seen = set() if seen is None else seen
    for child in module.children():
        module_apply_skips_seen(child, fn, seen)
    for param in module._parameters.values():
        if param is not None and id(param) not in seen:
            seen.add(id(param))
            with cl.no_grad():
                param.data = fn(param)
                if param.grad is not None:
                    param.grad = fn(param.grad)
    for name, buf in list(module._buffers.items()):
        if buf is not None:
            module._buffers[name] = fn(buf)
    return module


def module_apply_children_last(module, fn):
    """Converts the module's own parameters and buffers before its children's."""
    import course_lib as cl
    for param in module._parameters.values():
        if param is not None:
            with cl.no_grad():
                param.data = fn(param)
                if param.grad is not None:
                    param.grad = fn(param.grad)
    for name, buf in list(module._buffers.items()):
        if buf is not None:
            module._buffers[name] = fn(buf)
    for child in module.children():
        module_apply_children_last(child, fn)
    return module


# ------------------------------------------------------------------ 04.10 adam_step
def _adam(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False, *,
          correct_m=True, correct_v=True, l2_always=False, decay_after=False, eps_inside=False, start=1):
    import course_lib as cl
    beta1, beta2 = betas
    with cl.no_grad():
        for p, g in zip(params, grads):
            if g is None:
                continue
            s = state.setdefault(p, {})
            if not s:
                s.update(step=start - 1, exp_avg=cl.zeros_like(p), exp_avg_sq=cl.zeros_like(p))
            s["step"] += 1
            decay_now = weight_decay != 0 and decoupled and not l2_always
            if weight_decay != 0 and not decay_now:
                g = g + weight_decay * p
            if decay_now and not decay_after:
                p.mul_(1 - lr * weight_decay)
            m, v = s["exp_avg"], s["exp_avg_sq"]
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).add_(g * g, alpha=1 - beta2)
            t = max(s["step"], 1)
            m_hat = m / (1 - beta1 ** t) if correct_m else m
            v_hat = v / (1 - beta2 ** t) if correct_v else v
            denom = (v_hat + eps).sqrt() if eps_inside else v_hat.sqrt() + eps
            p.sub_(lr * m_hat / denom)
            if decay_now and decay_after:
                p.mul_(1 - lr * weight_decay)


def adam_step_no_bias_correction(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                                 decoupled=False):
    _adam(params, grads, state, lr, betas, eps, weight_decay, decoupled, correct_m=False, correct_v=False)


def adam_step_corrects_only_m(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                              decoupled=False):
    _adam(params, grads, state, lr, betas, eps, weight_decay, decoupled, correct_v=False)


def adam_step_l2_instead_of_decoupled(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                                      decoupled=False):
    _adam(params, grads, state, lr, betas, eps, weight_decay, decoupled, l2_always=True)


def adam_step_decays_after_update(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                                  decoupled=False):
    _adam(params, grads, state, lr, betas, eps, weight_decay, decoupled, decay_after=True)


def adam_step_eps_inside_sqrt(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                              decoupled=False):
    _adam(params, grads, state, lr, betas, eps, weight_decay, decoupled, eps_inside=True)


def adam_step_counts_from_zero(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                               decoupled=False):
    """The first step is t = 0 (the corrections then divide by... 1 - beta**max(t, 1), one step behind later)."""
    _adam(params, grads, state, lr, betas, eps, weight_decay, decoupled, start=0)



# ------------------------------------------------------------------ 04.11 select_conv_backend
def _backend(input_shape, weight_shape, groups=1, transposed=False, stride=(1, 1), dilation=(1, 1),
             output_padding=(0, 0), dtype="float32", num_threads=2, mkldnn_enabled=True, *, threads_matter=True,
             dtype_matters=True, size_limit_inclusive=False, transpose_on_mkldnn=True, check_output_padding=True,
             nnpack=True, view_1d=True, view_1d_weight=True, kernel_and=False, nnpack_strided=True):
    if input_shape[0] == 0 or input_shape[1] == 0:
        return "Empty"
    if len(input_shape) == 3 and view_1d:
        input_shape = (input_shape[0], input_shape[1], 1, input_shape[2])
        if view_1d_weight:
            weight_shape = (weight_shape[0], weight_shape[1], 1, weight_shape[2])
        stride, dilation, output_padding = (1, *stride), (1, *dilation), (0, *output_padding)
    n = input_shape[0]
    size = n * input_shape[1] * input_shape[2] * (input_shape[3] if len(input_shape) > 3 else 1)
    kh, kw = weight_shape[-2:]
    strided, dilated = any(v != 1 for v in stride), any(v != 1 for v in dilation)
    padding_big = check_output_padding and transposed and any(op >= st for op, st in zip(output_padding, stride))
    big = size >= 20480 if size_limit_inclusive else size > 20480
    mkldnn = (mkldnn_enabled and (dtype == "float32" or not dtype_matters) and not padding_big
              and (strided or dilated or n >= 16 or (kh != 1 and kw != 1 if kernel_and else kh != 1 or kw != 1)
                   or num_threads > 1 or not threads_matter)
              and (groups > 1 or (kh > 3 and kw > 3) or n > 1 or big)
              and (transpose_on_mkldnn or not transposed))
    if mkldnn:
        return "MkldnnTranspose" if transposed else "Mkldnn"
    dims = "3d" if len(input_shape) == 5 else "2d"
    if nnpack and dtype == "float32" and len(input_shape) == 4 and not dilated and not transposed and kh < 17 \
            and kw < 17 and n >= 16 and (nnpack_strided or not strided):
        return "NnpackSpatial"
    if transposed:
        return "SlowTranspose" + dims
    return ("SlowDilated" if dilated else "Slow") + dims


def _backend_variant(**flags):
    def select_conv_backend(*args, **kwargs):
        return _backend(*args, **kwargs, **flags)
    select_conv_backend.__qualname__ = "select_conv_backend_" + "_".join(f"{k}_{v}" for k, v in flags.items())
    return select_conv_backend


def select_conv_backend_batch_only(input_shape, weight_shape, groups=1, transposed=False, stride=(1, 1),
                                   dilation=(1, 1), output_padding=(0, 0), dtype="float32", num_threads=2,
                                   mkldnn_enabled=True):
    """The one-line summary: Slow2d for one image, Mkldnn from two."""
    if input_shape[0] == 0:
        return "Empty"
    return "Mkldnn" if input_shape[0] > 1 else "Slow2d"



# ------------------------------------------------------------------ 04.12 PrimitiveCache
def _cache_class(*, refresh=True, keep=0, evict_newest=False, default=1024, count_hits=True):
    from collections import OrderedDict

    class PrimitiveCache:
        def __init__(self, capacity=default):
            self.capacity, self.hits, self.misses = capacity, 0, 0
            self._entries = OrderedDict()

        def fetch_or_create(self, key, create):
            if key in self._entries:
                self.hits += count_hits
                if refresh:
                    self._entries.move_to_end(key)
                return self._entries[key]
            self.misses += 1
            if len(self._entries) >= self.capacity + keep:       # evicts before inserting
                self._entries.popitem(last=evict_newest)
            value = self._entries[key] = create()
            return value

        def __len__(self):
            return len(self._entries)
    return PrimitiveCache



WRONG = {
    "04.1": [_mini_module_class(_setattr_no_registration), _mini_module_class(_setattr_no_removal),
             _mini_module_class(_setattr_no_type_errors), _mini_module_class(_setattr_short_messages)],
    "04.2": [named_parameters_no_dedup, named_parameters_children_first, named_parameters_leading_dot,
             named_parameters_calls_the_library],
    "04.3": [load_state_dict_copies_before_checking, load_state_dict_sizes_only_when_strict,
             load_state_dict_unexpected_first, load_state_dict_replaces_parameters],
    "04.4": [record_activations_keeps_hooks, record_activations_type_names, record_activations_population_std,
             record_activations_one_per_module, record_activations_clears_every_hook, record_activations_no_finally,
             record_activations_without_no_grad],
    "04.5": [_my_linear_class(transposed=True), _my_linear_class(bias_attr=True), _my_linear_class(init="normal"),
             _my_linear_class(add_bias=False)],
    "04.6": [conv2d_im2col_flipped_kernel, conv2d_im2col_pads_one_side, conv2d_im2col_no_bias,
             conv2d_im2col_kernel_major_columns, conv2d_im2col_float64, conv2d_im2col_pixel_loop,
             conv2d_im2col_row_loop, conv2d_im2col_hides_its_loop],
    "04.7": [make_layer_downsample_only_for_stride, make_layer_stride_in_every_block, make_layer_downsample_without_bn,
             make_layer_forgets_expansion],
    "04.8": [sgd_step_dampens_first_step, sgd_step_decay_after_momentum, sgd_step_ignores_nesterov,
             sgd_step_no_momentum, sgd_step_buffer_is_the_grad],
    "04.9": [module_apply_new_parameters, module_apply_forgets_buffers, module_apply_forgets_grads,
             module_apply_no_recursion, module_apply_skips_seen, module_apply_children_last],
    "04.10": [adam_step_no_bias_correction, adam_step_corrects_only_m, adam_step_l2_instead_of_decoupled,
              adam_step_decays_after_update, adam_step_eps_inside_sqrt, adam_step_counts_from_zero],
    "04.11": [select_conv_backend_batch_only, _backend_variant(threads_matter=False),
              _backend_variant(dtype_matters=False),
              _backend_variant(size_limit_inclusive=True), _backend_variant(transpose_on_mkldnn=False),
              _backend_variant(check_output_padding=False), _backend_variant(nnpack=False),
              _backend_variant(view_1d=False), _backend_variant(view_1d_weight=False),
              _backend_variant(kernel_and=True), _backend_variant(nnpack_strided=False)],
    "04.12": [_cache_class(refresh=False), _cache_class(keep=-1), _cache_class(keep=1), _cache_class(evict_newest=True),
              _cache_class(default=128), _cache_class(count_hits=False)],
}
