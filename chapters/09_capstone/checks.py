"""Checks for chapter 09 (capstone)."""
from __future__ import annotations

import numpy as np

import course_lib as cl
from course.checks import exercise, probe
from course_lib.datasets import graphs as _graphs

# ------------------------------------------------------------------ Part A
#
# Expected values come from course_lib, run in the grader: the same seeded models, batches and optimizers,
# trained by a reference loop written with course_lib's modules, optimizers and schedulers (09.1's
# ``reference_run_epoch``; 09.2 compares with a run that was never interrupted), ``nn.Linear`` made under
# the same seed (09.3's ``reference_freeze_and_replace_head``) and ``course_lib.amp.GradScaler`` itself
# (09.4). The references, and ``ReferenceCheckpointer``, are written out here because the notebook's
# training cells fall back on them while 09.1 to 09.3 are not done. Models
# cannot travel to the kernel, so the probes build them there from seeds, the same way ``_tiny_*`` builds
# them in the grader.


def _tiny_cnn(seed: int, classes: int = 3):
    """A seeded conv -> BatchNorm -> ReLU -> Dropout -> pool -> Linear network (dropout and BatchNorm make
    training and evaluation mode give different numbers)."""
    nn = cl.nn
    cl.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Dropout(0.3),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, classes))


def _tiny_batches(seed: int, sizes: tuple, classes: int = 3) -> list:
    """Batches (x, y) of the given sizes: x (n, 3, 6, 6) float32, y (n,) int64."""
    r = np.random.default_rng(seed)
    return [(cl.from_numpy(r.standard_normal((n, 3, 6, 6)).astype(np.float32)),
             cl.from_numpy(r.integers(0, classes, n).astype(np.int64))) for n in sizes]


def _tiny_optim(model, total_steps: int):
    opt = cl.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    sched = cl.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=total_steps)
    return opt, sched


# ------------------------------------------------------------------ 09.1 run_epoch


def _epoch_setup(seed: int, sizes: tuple, train: bool, with_sched: bool):
    model = _tiny_cnn(seed)
    batches = _tiny_batches(seed + 1, sizes)
    opt, sched = _tiny_optim(model, len(sizes) + 1) if train else (None, None)
    if not with_sched:
        sched = None
    # the model arrives in the other mode: run_epoch must set the right one itself
    model.train(not train)
    return model, batches, opt, sched


def _epoch_state(model, result, grad_enabled: list) -> dict:
    bn = model[1]
    return {"result": tuple(float(v) for v in result) if isinstance(result, (tuple, list)) else result,
            "params": [p.detach().clone() for p in model.parameters()],
            "running_mean": bn.running_mean.clone(), "batches_tracked": int(bn.num_batches_tracked),
            "grads_none": [p.grad is None for p in model.parameters()], "grad_enabled": grad_enabled,
            "training": model.training}


def _run_epoch(fn, seed: int, sizes: tuple, train: bool, with_sched: bool):
    model, batches, opt, sched = _epoch_setup(seed, sizes, train, with_sched)
    grad_enabled: list = []
    model.register_forward_hook(lambda m, i, o: grad_enabled.append(cl.is_grad_enabled()))
    loss_fn = cl.nn.CrossEntropyLoss()
    cl.manual_seed(seed + 2)
    result = fn(model, batches, loss_fn, opt, sched) if train else fn(model, batches, loss_fn)
    return _epoch_state(model, result, grad_enabled)


def reference_run_epoch(model, batches, loss_fn, optimizer=None, scheduler=None):
    """The epoch 09.1 asks for, written with course_lib: the check's expected values, and what the notebook's
    training cells use while 09.1 is not done."""
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


def _reference_epoch(seed: int, sizes: tuple, train: bool, with_sched: bool) -> dict:
    model, batches, opt, sched = _epoch_setup(seed, sizes, train, with_sched)
    grad_enabled: list = []
    model.register_forward_hook(lambda m, i, o: grad_enabled.append(cl.is_grad_enabled()))
    loss_fn = cl.nn.CrossEntropyLoss()
    cl.manual_seed(seed + 2)
    result = reference_run_epoch(model, batches, loss_fn, opt, sched) if train else \
        reference_run_epoch(model, batches, loss_fn)
    return _epoch_state(model, result, grad_enabled)


def _same_epoch(got, expected):
    if not isinstance(got, dict):
        return False
    res = got["result"]
    if not (isinstance(res, tuple) and len(res) == 2):
        return f"run_epoch must return (mean loss, accuracy), got {res!r}"
    (gl, ga), (el, ea) = res, expected["result"]
    if got["training"] != expected["training"]:
        return "the model was left in the wrong mode: call model.train() to train and model.eval() to evaluate"
    if got["grad_enabled"] != expected["grad_enabled"]:
        return ("gradient recording during the forward passes was " + str(got["grad_enabled"]) + ", expected "
                + str(expected["grad_enabled"]) + " (evaluate under course_lib.no_grad())")
    if got["batches_tracked"] != expected["batches_tracked"]:
        return (f"BatchNorm counted {got['batches_tracked']} training batches, expected "
                f"{expected['batches_tracked']} (train() and eval() switch it)")
    if got["grads_none"] != expected["grads_none"]:
        return "an evaluation pass must not compute gradients" if not expected["training"] else \
            "every parameter should have a gradient after training"
    for g, e in zip(got["params"], expected["params"]):
        if not np.allclose(g._np(), e._np(), rtol=1e-5, atol=1e-6):
            return ("the parameters after the epoch differ from the reference's (zero_grad, backward, step, then "
                    "scheduler.step(), once per batch)")
    if not np.isclose(gl, el, rtol=1e-5, atol=1e-7):
        return f"mean loss {gl!r}, expected {el!r} (weight each batch's loss by its size)"
    if not np.isclose(ga, ea, rtol=0, atol=1e-12):
        return f"accuracy {ga!r}, expected {ea!r}"
    if not np.allclose(got["running_mean"]._np(), expected["running_mean"]._np(), rtol=1e-5, atol=1e-6):
        return "BatchNorm's running mean differs from the reference's"
    return True


@exercise("09.1", title="run_epoch", points=2,
          hint="train: model.train(), then per batch out = model(x), loss = loss_fn(out, y), optimizer.zero_grad(), "
               "loss.backward(), optimizer.step(), scheduler.step() if there is one. Evaluate: model.eval() and "
               "the loop under course_lib.no_grad(). Sum loss.item() * len(y) and the correct predictions "
               "(out.argmax(1) == y); divide both by the number of samples.",
          forbid={"reference_run_epoch": reference_run_epoch})
def _run_epoch_check(rng):
    cases = [((4, 4, 4), True, True), ((4, 4, 4), False, False), ((5, 3, 2), True, False), ((5, 3, 2), False, False)]
    cases += [(tuple(int(n) for n in rng.integers(1, 7, int(rng.integers(2, 5)))), bool(rng.integers(0, 2)), True)
              for _ in range(3)]
    out = []
    for sizes, train, with_sched in cases:
        seed = int(rng.integers(0, 10**6))
        label = (f"run_epoch(model, batches of {list(sizes)}, loss_fn, optimizer, "
                 f"{'scheduler' if with_sched else 'None'})" if train else
                 f"run_epoch(model, batches of {list(sizes)}, loss_fn)  # evaluation")
        out.append(probe(_run_epoch, seed, sizes, train, with_sched and train,
                         expected=_reference_epoch(seed, sizes, train, with_sched and train),
                         compare=_same_epoch, label=label))
    return out


# ------------------------------------------------------------------ 09.2 Checkpointer


def _resume_batches(seed: int, epoch: int, per_epoch: int) -> list:
    """The epoch's batches in the order a (seed, epoch)-seeded sampler gives: 4 samples each."""
    data = _tiny_batches(seed + 1, (4 * per_epoch,))[0]
    order = cl.randperm(4 * per_epoch, generator=cl.Generator().manual_seed(seed * 1000 + epoch))
    return [(data[0][order[4 * b:4 * b + 4]], data[1][order[4 * b:4 * b + 4]]) for b in range(per_epoch)]


def _resume_step(model, opt, sched, x, y) -> float:
    # the noise drawn from the global generator stands for random augmentation: a resumed run has
    # the same losses only if the generator's state was restored
    x = x + 0.1 * cl.randn(x.shape)
    loss = cl.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    return loss.item()


def _resume_run(seed: int, epochs: int, per_epoch: int, start=(0, 0), stop: int | None = None, ckpt=None,
                load: bool = False, keep: list | None = None):
    """Train the tiny network (losses per step); with ``ckpt``: save after every step, load first if ``load``.
    ``keep`` receives the model and the optimizer."""
    model = _tiny_cnn(seed if not load else seed + 7)
    opt, sched = _tiny_optim(model, epochs * per_epoch)
    if keep is not None:
        keep += [model, opt]
    cl.manual_seed(seed + 3 if not load else seed + 11)
    epoch, batch = start
    if load:
        epoch, batch = ckpt.load(model, opt, sched)
    losses, done = [], 0
    model.train()
    while epoch < epochs:
        for b, (x, y) in enumerate(_resume_batches(seed, epoch, per_epoch)[batch:], start=batch):
            losses.append(_resume_step(model, opt, sched, x, y))
            done += 1
            if ckpt is not None:
                # a checkpoint after every step: (epoch, batches done in it), the next epoch's start at the end
                nxt = (epoch, b + 1) if b + 1 < per_epoch else (epoch + 1, 0)
                ckpt.save(model, opt, sched, *nxt)
            if stop is not None and done == stop:
                return losses, (epoch, b + 1)
        epoch, batch = epoch + 1, 0
    return losses, None


def _tensors_in(obj, out: list) -> list:
    """Every tensor in a loaded checkpoint (dicts, lists and tuples walked), as numpy arrays."""
    if isinstance(obj, cl.Tensor):
        out.append(obj.detach().numpy())
    elif isinstance(obj, dict):
        for v in obj.values():
            _tensors_in(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _tensors_in(v, out)
    return out


def _missing_from_file(path: str, model, opt) -> list:
    """What the stopped run's state holds that the file at ``path`` does not: the model's parameters and
    buffers (by name), the optimizer's momentum buffers and the global generator's state."""
    try:
        saved = _tensors_in(cl.load(path), [])
    except Exception:  # noqa: BLE001 - reported by weights_only_load
        return []
    wanted = [(f"model.{k}", v) for k, v in model.state_dict().items()]
    wanted += [(f"optimizer momentum buffer {i}", st["momentum_buffer"])
               for i, st in enumerate(opt.state.values()) if st.get("momentum_buffer") is not None]
    wanted.append(("the global generator's state", cl.get_rng_state()))
    missing = []
    for name, t in wanted:
        a = t.detach().numpy()
        if not any(b.shape == a.shape and b.dtype == a.dtype and np.array_equal(a, b) for b in saved):
            missing.append(name)
    return missing


def _float_buffers(model) -> dict:
    return {k: v.numpy().round(5).tolist() for k, v in model.named_buffers() if v.dtype.is_floating_point}


def _resumed(cls, seed: int, epochs: int, per_epoch: int, stop: int) -> dict:
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        stopped: list = []
        first, _ = _resume_run(seed, epochs, per_epoch, stop=stop, ckpt=cls(path), keep=stopped)
        # what a new process would find: the file, and nothing else
        missing = _missing_from_file(path, *stopped)
        # a new process: other weights, another global RNG state; everything must come from the file
        resumed: list = []
        rest, _ = _resume_run(seed, epochs, per_epoch, ckpt=cls(path), load=True, keep=resumed)
        try:
            cl.load(path)
            loadable = True
        except Exception as e:  # noqa: BLE001 - reported as data
            loadable = f"{type(e).__name__}: {e}"
        leftovers = sorted(os.listdir(tmp))
    return {"losses": first + rest, "weights_only_load": loadable, "files": leftovers, "missing": missing,
            "buffers": _float_buffers(resumed[0])}


def _same_losses(got, expected):
    if not isinstance(got, dict):
        return False
    if got["weights_only_load"] is not True:
        return ("course_lib.load(path) (weights_only=True) failed on the checkpoint: "
                f"{got['weights_only_load']}; save state_dicts, tensors, numbers and strings only")
    if got["files"] != expected["files"]:
        return f"files left in the folder: {got['files']}, expected {expected['files']} (use course_lib.save)"
    if got.get("missing"):
        return ("the checkpoint file does not hold " + ", ".join(got["missing"]) + " of the stopped run: a new "
                "process has nothing but the file (save the whole state_dicts and the generator's state)")
    g, e = got["losses"], expected["losses"]
    if len(g) != len(e):
        return f"the resumed run made {len(g)} steps in all, expected {len(e)}: resume at the saved batch"
    for i, (a, b) in enumerate(zip(g, e)):
        if a != b:
            return (f"step {i}: loss {a!r}, the uninterrupted run's {b!r} (restore the model, optimizer, "
                    "scheduler, the global RNG state, the epoch and the batch)")
    if got.get("buffers") != expected["buffers"]:
        return ("the resumed run's BatchNorm statistics at the end differ from the uninterrupted run's: "
                "restore the model's buffers too (its whole state_dict)")
    return True


class ReferenceCheckpointer:
    """What the notebook's training cells use while 09.2 is not done (the check compares with an uninterrupted
    run, not with this class)."""

    def __init__(self, path):
        self.path = path

    def save(self, model, optimizer, scheduler, epoch: int, batch: int) -> None:
        cl.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "rng": cl.get_rng_state(), "epoch": epoch, "batch": batch},
                self.path)

    def load(self, model, optimizer, scheduler) -> tuple:
        ckpt = cl.load(self.path)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        cl.set_rng_state(ckpt["rng"])
        return ckpt["epoch"], ckpt["batch"]


@exercise("09.2", title="Checkpointer", points=3,
          hint="save: course_lib.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(), "
               "'scheduler': scheduler.state_dict(), 'rng': course_lib.get_rng_state(), 'epoch': epoch, "
               "'batch': batch}, self.path). load: ckpt = course_lib.load(self.path), then each "
               "load_state_dict, course_lib.set_rng_state(ckpt['rng']) and return (epoch, batch).",
          forbid={"ReferenceCheckpointer.save": ReferenceCheckpointer.save,
                  "ReferenceCheckpointer.load": ReferenceCheckpointer.load})
def _checkpointer_check(rng):
    out = []
    for epochs, per_epoch, stop in [(2, 3, 4), (2, 3, 3), (3, 2, 1)] + [
            (int(rng.integers(2, 4)), int(rng.integers(2, 4)), None) for _ in range(2)]:
        total = epochs * per_epoch
        if stop is None:
            stop = int(rng.integers(1, total))
        seed = int(rng.integers(0, 10**6))
        kept: list = []
        losses = _resume_run(seed, epochs, per_epoch, keep=kept)[0]
        expected = {"losses": losses, "weights_only_load": True, "files": ["ckpt.pt"], "missing": [],
                    "buffers": _float_buffers(kept[0])}
        out.append(probe(_resumed, seed, epochs, per_epoch, stop, expected=expected, compare=_same_losses,
                         label=f"{epochs} epochs of {per_epoch} batches, stopped after step {stop} and resumed "
                               "from the checkpoint by a fresh model, optimizer and scheduler"))
    return out


# ------------------------------------------------------------------ 09.3 freeze_and_replace_head


def _tiny_resnet(seed: int):
    from course_lib.models.resnet import BasicBlock, ResNet
    cl.manual_seed(seed)
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=6, small_input=True, widths=(4, 4, 8, 8))


def _head_state(model, head, x) -> dict:
    is_linear = isinstance(head, cl.nn.Linear)
    out = model(x)
    out.sum().backward()
    return {"flags": [(n, p.requires_grad) for n, p in model.named_parameters()],
            "head_is_fc": head is model.fc, "is_linear": is_linear,
            "fc": (model.fc.weight.detach().clone(), model.fc.bias.detach().clone()) if is_linear else None,
            "out_shape": tuple(out.shape), "with_grad": [n for n, p in model.named_parameters() if p.grad is not None]}


def _replaced(fn, seed: int, classes: int) -> dict:
    model = _tiny_resnet(seed)
    cl.manual_seed(seed + 1)
    head = fn(model, classes)
    x = cl.from_numpy(np.random.default_rng(seed).standard_normal((2, 3, 8, 8)).astype(np.float32))
    return _head_state(model, head, x)


def reference_freeze_and_replace_head(model, num_classes: int):
    """09.3 with course_lib: the check's expected values, and the notebook's fine-tuning while 09.3 is not done."""
    model.requires_grad_(False)
    model.fc = cl.nn.Linear(model.fc.in_features, num_classes)
    return model.fc


def _reference_replaced(seed: int, classes: int) -> dict:
    model = _tiny_resnet(seed)
    cl.manual_seed(seed + 1)
    head = reference_freeze_and_replace_head(model, classes)
    x = cl.from_numpy(np.random.default_rng(seed).standard_normal((2, 3, 8, 8)).astype(np.float32))
    return _head_state(model, head, x)


def _same_head(got, expected):
    if not isinstance(got, dict):
        return False
    if not got["is_linear"] or not got["head_is_fc"]:
        return "return the new head, the nn.Linear now in model.fc"
    if got["out_shape"] != expected["out_shape"]:
        return f"model(x) has shape {got['out_shape']}, expected {expected['out_shape']}"
    bad = [n for (n, f), (_, e) in zip(got["flags"], expected["flags"]) if f != e]
    if [n for n, _ in got["flags"]] != [n for n, _ in expected["flags"]]:
        return "the model's parameters are not the expected ones"
    if bad:
        return f"requires_grad is wrong on {bad[:4]}{' ...' if len(bad) > 4 else ''}"
    if got["with_grad"] != expected["with_grad"]:
        return f"after backward, gradients on {got['with_grad']}, expected only on {expected['with_grad']}"
    for g, e in zip(got["fc"], expected["fc"]):
        if not np.array_equal(g._np(), e._np()):
            return ("the new head's initial weights differ from nn.Linear(model.fc.in_features, num_classes) made "
                    "right after freezing (draw nothing else from the RNG)")
    return True


@exercise("09.3", title="freeze_and_replace_head", points=2,
          hint="model.requires_grad_(False) freezes every parameter; then model.fc = "
               "nn.Linear(model.fc.in_features, num_classes) (a new module's parameters require grad) and "
               "return model.fc.",
          forbid={"reference_freeze_and_replace_head": reference_freeze_and_replace_head})
def _freeze_check(rng):
    cases = [(int(rng.integers(0, 10**6)), k) for k in (2, 5, 1)] + \
        [(int(rng.integers(0, 10**6)), int(rng.integers(2, 9))) for _ in range(2)]
    return [probe(_replaced, seed, k, expected=_reference_replaced(seed, k), compare=_same_head,
                  label=f"freeze_and_replace_head(small ResNet with 6 classes, {k})") for seed, k in cases]


# ------------------------------------------------------------------ 09.4 scaler_step


def _scaler_params(seed: int, bad: str | None):
    """Four parameters in two groups (one without a gradient), their scaled gradients (inf or nan in one of
    either group if ``bad``) and an SGD optimizer with momentum over them."""
    r = np.random.default_rng(seed)
    params = [cl.from_numpy(r.standard_normal(s).astype(np.float32)).requires_grad_()
              for s in ((3, 2), (4,), (2,), (5,))]
    for k in (0, 1, 3):
        params[k].grad = cl.from_numpy((r.standard_normal(tuple(params[k].shape)) * 1000).astype(np.float32))
    if bad is not None:
        params[int(r.choice([1, 3]))].grad[int(r.integers(0, 4))] = float(bad)
    return params, cl.optim.SGD([{"params": params[:2]}, {"params": params[2:], "lr": 0.05}], lr=0.1,
                                momentum=0.9)


def _scaler_state(params, result) -> dict:
    return {"result": tuple(result) if isinstance(result, (tuple, list)) else result,
            "params": [p.detach().clone() for p in params],
            "grads": [None if p.grad is None else p.grad.clone() for p in params]}


def _scaler_case(fn, seed, bad, scale, tracker, growth, backoff, interval):
    params, opt = _scaler_params(seed, bad)
    result = fn(opt, scale, tracker, growth_factor=growth, backoff_factor=backoff, growth_interval=interval)
    return _scaler_state(params, result)


def _reference_scaler(seed, bad, scale, tracker, growth, backoff, interval) -> dict:
    params, opt = _scaler_params(seed, bad)
    scaler = cl.amp.GradScaler("cpu", init_scale=scale, growth_factor=growth, backoff_factor=backoff,
                               growth_interval=interval)
    scaler.scale(cl.ones(()))                 # makes the scale tensor
    scaler._growth_tracker = tracker
    stepped = all(bool(np.isfinite(p.grad._np()).all()) for p in params if p.grad is not None)
    scaler.step(opt)
    scaler.update()
    return _scaler_state(params, (scaler.get_scale(), scaler._get_growth_tracker(), stepped))


def _same_scaler(got, expected):
    if not isinstance(got, dict):
        return False
    res = got["result"]
    if not (isinstance(res, tuple) and len(res) == 3):
        return f"scaler_step must return (new_scale, new_tracker, stepped), got {res!r}"
    (gs, gt, gst), (es, et, est) = res, expected["result"]
    if gst is not est:
        return f"stepped is {gst!r}, expected {est!r}: step only when every gradient is finite"
    for g, e in zip(got["grads"], expected["grads"]):
        if (g is None) != (e is None):
            return "a parameter without a gradient must keep grad None"
        if g is not None and not np.array_equal(g._np(), e._np(), equal_nan=True):
            return "the gradients after the call are not the unscaled ones (grad * float32(1 / scale), in place)"
    for g, e in zip(got["params"], expected["params"]):
        if not np.array_equal(g._np(), e._np(), equal_nan=True):
            return "the parameters after the call differ from GradScaler.step's"
    if not isinstance(gs, float) or gs != es:
        return f"new scale {gs!r}, expected {es!r}"
    if gt != et:
        return f"new growth tracker {gt!r}, expected {et!r}"
    return True


@exercise("09.4", title="scaler_step", points=2,
          hint="inv = float32(1 / scale) computed in float64; found = any gradient not finite (check before "
               "multiplying); multiply every gradient by inv in place; optimizer.step() only if not found. Then "
               "found: scale * backoff_factor, tracker 0; else tracker + 1, and when it reaches growth_interval: "
               "scale * growth_factor (kept only if finite in float32), tracker 0. Round the scale to float32.",
          forbid={"GradScaler.step": cl.amp.GradScaler.step, "GradScaler.unscale_": cl.amp.GradScaler.unscale_,
                  "GradScaler.update": cl.amp.GradScaler.update,
                  "GradScaler._unscale_grads_": cl.amp.GradScaler._unscale_grads_})
def _scaler_check(rng):
    big = float(np.float32(2.0 ** 127))
    cases = [(None, 2.0 ** 16, 0, 2.0, 0.5, 2000), ("inf", 2.0 ** 16, 5, 2.0, 0.5, 2000),
             (None, 1024.0, 3, 2.0, 0.5, 4), (None, 1024.0, 2, 2.0, 0.5, 4), ("nan", 8.0, 3, 2.0, 0.5, 4),
             (None, big, 0, 2.0, 0.5, 1),
             (None, 3.0, 0, 3.0, 0.25, 1), ("-inf", 0.5, 0, 2.0, 0.125, 10),
             ("inf", 3.0, 4, 2.0, 0.3, 10), (None, 3.0, 0, 1.7, 0.5, 1)]
    for _ in range(2):
        interval = int(rng.integers(1, 5))
        cases.append((None if rng.random() < 0.5 else "inf", float(2.0 ** rng.integers(-2, 20)),
                      int(rng.integers(0, interval)), 2.0, 0.5, interval))
    out = []
    for bad, scale, tracker, growth, backoff, interval in cases:
        seed = int(rng.integers(0, 10**6))
        label = (f"scaler_step(optimizer, scale={scale!r}, growth_tracker={tracker}, growth_factor={growth}, "
                 f"backoff_factor={backoff}, growth_interval={interval})"
                 f"{'' if bad is None else f'  # a gradient is {bad}'}")
        out.append(probe(_scaler_case, seed, bad, scale, tracker, growth, backoff, interval,
                         expected=_reference_scaler(seed, bad, scale, tracker, growth, backoff, interval),
                         compare=_same_scaler, label=label))
    return out



# ------------------------------------------------------------------ Part B
#
# Expected values come from course_lib, run in the grader: ``graphs.gcn_norm`` (09.7), and numpy on
# the same inputs for 09.8 and 09.9 (a dense matrix of the edge weights, ``np.add.at``: values and
# gradients). 09.10 has no single right answer: its judge checks properties of the walks the probe
# returns (type, dtype, shape, start nodes, every step an edge, the same seed giving the same walks)
# and, on 40,000 walkers, that the steps out of each node are spread uniformly over its neighbours
# (each count within 5 standard deviations of its expectation). Graphs travel as numpy arrays; the
# probes make the tensors in the kernel.

_GRAPH_RTOL, _GRAPH_ATOL = 1e-5, 1e-6


def _random_edges(rng, n: int, e: int, directed: bool = True) -> np.ndarray:
    """A (2, E) int64 edge list on n nodes without self-loops or repeated edges, in random order."""
    pairs = rng.integers(0, n, size=(e, 2))
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    if not directed:
        pairs = np.unique(np.concatenate([pairs, pairs[:, ::-1]]), axis=0)
    return pairs[rng.permutation(len(pairs))].T.astype(np.int64).reshape(2, -1)


def _sbm_edges(seed: int, sizes=(8, 7, 6)) -> np.ndarray:
    return _graphs.stochastic_block_model(sizes, p_in=0.5, p_out=0.05, num_features=len(sizes), seed=seed).edge_index


def _edges_text(ei: np.ndarray, kind: str = "tensor") -> str:
    if ei.shape[1] <= 8:
        return f"{kind}({ei.tolist()})"
    return f"<({ei.shape[0]}, {ei.shape[1]}) edge list, first columns {ei[:, :4].tolist()}>"


def _tensor_parts(got, names: tuple, dtypes: tuple) -> list | str:
    """The learner's result as numpy arrays (one per name), or what is wrong with its type, dtype or form."""
    if len(names) == 1:
        got = (got,)
    elif not isinstance(got, (tuple, list)) or len(got) != len(names):
        return f"expected a tuple ({', '.join(names)}), got {type(got).__name__}"
    arrays = []
    for name, value, dtype in zip(names, got, dtypes):
        if not isinstance(value, cl.Tensor):
            return f"{name} is a {type(value).__name__}, not a course_lib tensor"
        if dtype is not None and value.dtype is not dtype:
            return f"{name} has dtype {value.dtype}, expected {dtype}"
        arrays.append(value.detach().numpy())
    return arrays


def _close(name: str, got: np.ndarray, want: np.ndarray, exact: bool = False) -> str | None:
    if got.shape != want.shape:
        return f"{name} has shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    with np.errstate(invalid="ignore"):
        bad = got != want if exact else ~np.isclose(got, want, rtol=_GRAPH_RTOL, atol=_GRAPH_ATOL)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        return (f"{name}{list(at)}: expected {want[at].item()!r}, got {got[at].item()!r} "
                f"({int(bad.sum())} of {want.size} differ)")
    return None


# ------------------------------------------------------------------ 09.7 gcn_norm


def _gcn_norm_probe(gcn_norm, edge_index: np.ndarray, num_nodes: int):
    """Probe: the learner's gcn_norm of the edge list (made a course_lib tensor here)."""
    return gcn_norm(cl.tensor(edge_index, dtype=cl.int64), num_nodes)


def _compare_gcn_norm(got, expected) -> bool | str:
    want_edges, want_weight = expected
    parts = _tensor_parts(got, ("edge_index", "weight"), (cl.int64, cl.float32))
    if isinstance(parts, str):
        return parts
    edges, weight = parts
    return (_close("edge_index", edges, want_edges, exact=True) or _close("weight", weight, want_weight)
            or True)


@exercise("09.7", title="gcn_norm", points=2,
          hint="append the self-loops (cl.arange(num_nodes) as both source and target) after the edges; count "
               "deg by TARGET over the edges with the loops (index_add of ones); weight = deg.rsqrt()[source] "
               "* deg.rsqrt()[target], float32.",
          forbid={"graphs.gcn_norm": _graphs.gcn_norm})
def _gcn_norm(rng):
    cases = [
        (np.array([[0, 1, 1, 2], [1, 0, 2, 1]]), 3, "the path 0 - 1 - 2"),
        (np.array([[0, 1, 2, 0], [1, 2, 0, 2]]), 3, "a directed graph: in-degrees 1, 1, 2"),
        (np.array([[0, 1, 2, 1], [1, 0, 1, 2]]), 5, "nodes 3 and 4 have no edge"),
        (np.zeros((2, 0), np.int64), 3, "no edges"),
    ]
    for _ in range(4):
        n = int(rng.integers(4, 25))
        cases.append((_random_edges(rng, n, int(rng.integers(n, 4 * n))), n, "a random directed graph"))
    seed = int(rng.integers(0, 2**31 - 1))
    cases.append((_sbm_edges(seed), 21, f"stochastic_block_model((8, 7, 6), 0.5, 0.05, seed={seed})"))
    out = []
    for ei, n, what in cases:
        ei = ei.astype(np.int64).reshape(2, -1)
        edges, weight = _graphs.gcn_norm(cl.tensor(ei, dtype=cl.int64), n)
        out.append(probe(_gcn_norm_probe, ei, n, expected=(edges.numpy(), weight.numpy()),
                         compare=_compare_gcn_norm, label=f"gcn_norm({_edges_text(ei)}, {n})  ({what})"))
    return out


# ------------------------------------------------------------------ 09.8 propagate, 09.9 mean_aggregate


def _aggregate_probe(fn, x: np.ndarray, edge_index: np.ndarray, weight, upstream: np.ndarray) -> dict:
    """Probe: fn(x, edge_index[, weight]) with x (and weight) requiring grad, then backward of
    (out * upstream).sum(); the output, whether it requires grad, the gradients and whether x changed."""
    xt = cl.tensor(x, requires_grad=True)
    ei = cl.tensor(edge_index, dtype=cl.int64)
    args = (xt, ei)
    wt = None
    if weight is not None:
        wt = cl.tensor(weight, requires_grad=True)
        args = (xt, ei, wt)
    out = fn(*args)
    seen = {"out": out.detach() if isinstance(out, cl.Tensor) else out,
            "requires_grad": bool(getattr(out, "requires_grad", False)),
            "x_unchanged": bool(np.array_equal(xt.detach().numpy(), x))}
    if seen["requires_grad"] and isinstance(out, cl.Tensor) and tuple(out.shape) == upstream.shape:
        (out * cl.tensor(upstream, dtype=out.dtype)).sum().backward()
    seen["grad_x"] = None if xt.grad is None else xt.grad.numpy()
    if wt is not None:
        seen["grad_weight"] = None if wt.grad is None else wt.grad.numpy()
    return seen


def _compare_aggregate(got, expected) -> bool | str:
    if not isinstance(got, dict):
        return f"the probe saw {type(got).__name__}"
    parts = _tensor_parts(got["out"], ("the result",), (expected["dtype"],))
    if isinstance(parts, str):
        return parts
    problem = _close("out", parts[0], expected["out"])
    if problem:
        return problem
    if not got["x_unchanged"]:
        return "x was changed: compute into a new tensor, never into x"
    if not got["requires_grad"]:
        return "the result does not require grad: it must be computed from x with course_lib ops (no numpy)"
    for key in ("grad_x", "grad_weight"):
        if key not in expected:
            continue
        if got[key] is None:
            return f"{key}: no gradient reached {'x' if key == 'grad_x' else 'edge_weight'}"
        problem = _close(key, np.asarray(got[key]), expected[key])
        if problem:
            return problem
    return True


def _dense(edge_index: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """M with M[t, s] = the sum of the weights of the edges s -> t."""
    m = np.zeros((n, n))
    np.add.at(m, (edge_index[1], edge_index[0]), weight)
    return m


def _aggregate_cases(rng) -> list:
    """(x, edge_index, description) for 09.8 and 09.9: fixed, random directed, repeated edges, an SBM."""
    path = np.array([[0, 1, 1, 2], [1, 0, 2, 1]])
    cases = [
        (np.array([[1.0, 0.0], [10.0, 0.0], [100.0, 1.0]]), path, "the path 0 - 1 - 2"),
        (np.arange(8.0).reshape(4, 2), np.array([[0, 1, 2], [1, 2, 1]]), "directed; nothing reaches nodes 0 and 3"),
        (np.arange(6.0).reshape(3, 2), np.zeros((2, 0), np.int64), "no edges"),
        (np.arange(1.0, 7.0).reshape(3, 2), np.array([[0, 0, 2, 1], [1, 1, 1, 0]]), "the edge 0 -> 1 twice"),
    ]
    for _ in range(3):
        n = int(rng.integers(4, 20))
        cases.append((rng.normal(size=(n, int(rng.integers(1, 5)))), _random_edges(rng, n, int(rng.integers(n, 4 * n))),
                      "a random directed graph"))
    seed = int(rng.integers(0, 2**31 - 1))
    cases.append((rng.normal(size=(21, 3)), _sbm_edges(seed),
                  f"stochastic_block_model((8, 7, 6), 0.5, 0.05, seed={seed})"))
    return [(x.astype(np.float32), ei.astype(np.int64).reshape(2, -1), what) for x, ei, what in cases]


def _x_text(x: np.ndarray) -> str:
    return f"tensor({x.tolist()})" if x.size <= 8 else f"<({x.shape[0]}, {x.shape[1]}) features>"


@exercise("09.8", title="propagate", points=1,
          hint="messages = x.index_select(0, edge_index[0]) * edge_weight[:, None]; then "
               "cl.zeros(N, F, dtype=x.dtype).index_add(0, edge_index[1], messages): sources send, targets sum.",
          forbid={"graphs.propagate": _graphs.propagate, "cl.matmul": cl.matmul, "cl.mm": cl.mm,
                  "Tensor.__matmul__": cl.Tensor.__matmul__, "Tensor.__rmatmul__": cl.Tensor.__rmatmul__,
                  "Tensor.matmul": cl.Tensor.matmul, "Tensor.mm": cl.Tensor.mm, "cl.einsum": cl.einsum})
def _propagate(rng):
    out = []
    cases = _aggregate_cases(rng)
    x64, ei64, _ = cases[-1]
    cases.append((x64.astype(np.float64), ei64, "float64: the result keeps x's dtype"))
    for x, ei, what in cases:
        n = x.shape[0]
        weight = (np.round(rng.uniform(0.5, 2.0, ei.shape[1]), 2)).astype(x.dtype)
        upstream = rng.normal(size=x.shape).astype(x.dtype)
        m = _dense(ei, weight.astype(np.float64), n)
        xd, ud = x.astype(np.float64), upstream.astype(np.float64)
        expected = {"out": m @ xd, "grad_x": m.T @ ud, "grad_weight": (ud[ei[1]] * xd[ei[0]]).sum(1),
                    "dtype": cl.float64 if x.dtype == np.float64 else cl.float32}
        shown = np.round(weight[:6].astype(np.float64), 2).tolist()
        label = (f"propagate({_x_text(x)}, {_edges_text(ei)}, edge_weight={shown}{'...' if len(weight) > 6 else ''})"
                 f"  ({what}); then backward")
        out.append(probe(_aggregate_probe, x, ei, weight, upstream, expected=expected, compare=_compare_aggregate,
                         label=label))
    return out


@exercise("09.9", title="mean_aggregate", points=1,
          hint="index = edge_index[1][:, None].expand(-1, F) (a scatter index has the values' shape); "
               "cl.zeros(N, F, dtype=x.dtype).scatter_reduce(0, index, x.index_select(0, edge_index[0]), 'mean', "
               "include_self=False): without include_self=False the zeros count in the mean.",
          forbid={"graphs.mean_aggregate": _graphs.mean_aggregate})
def _mean_aggregate(rng):
    out = []
    for x, ei, what in _aggregate_cases(rng):
        n = x.shape[0]
        upstream = rng.normal(size=x.shape).astype(x.dtype)
        count = np.bincount(ei[1], minlength=n).astype(np.float64)
        m = _dense(ei, np.ones(ei.shape[1]), n) / np.maximum(count, 1)[:, None]
        xd, ud = x.astype(np.float64), upstream.astype(np.float64)
        expected = {"out": m @ xd, "grad_x": m.T @ ud, "dtype": cl.float32}
        out.append(probe(_aggregate_probe, x, ei, None, upstream, expected=expected, compare=_compare_aggregate,
                         label=f"mean_aggregate({_x_text(x)}, {_edges_text(ei)})  ({what}); then backward"))
    return out


# ------------------------------------------------------------------ 09.10 random_walks


def _walks_probe(random_walks, edge_index: np.ndarray, starts: np.ndarray, length: int, seed: int):
    """Probe: the learner's walks with a generator seeded with `seed`."""
    return random_walks(edge_index, starts, length, np.random.default_rng(seed))




class _CountingGenerator(np.random.Generator):
    """A numpy Generator (the same numbers as ``default_rng(seed)``) that counts the uses of its methods."""

    def __init__(self, seed: int):
        super().__init__(np.random.PCG64(seed))
        object.__setattr__(self, "uses", 0)

    def __getattribute__(self, name: str):
        if not name.startswith("_") and name != "uses":
            object.__setattr__(self, "uses", object.__getattribute__(self, "uses") + 1)
        return super().__getattribute__(name)


def _walks_twice_probe(random_walks, edge_index: np.ndarray, starts: np.ndarray, length: int, seed: int) -> list:
    """Probe: walks with seed, seed again, and seed + 1, and how many times each run used its generator."""
    runs = []
    for s in (seed, seed, seed + 1):
        rng = _CountingGenerator(s)
        runs.append(random_walks(edge_index, starts, length, rng))
        runs.append(rng.uses)
    return runs


def _walk_stats_probe(random_walks, edge_index: np.ndarray, starts: np.ndarray, length: int, seed: int) -> dict:
    """Probe: a summary of many walks: their type, dtype, shape, how often each node starts a walk, the
    count of steps u -> v for every pair of nodes (None if a node is out of range), and how many times the
    code used the generator's methods."""
    rng = _CountingGenerator(seed)
    walks = random_walks(edge_index, starts, length, rng)
    seen = {"type": type(walks).__name__, "dtype": str(getattr(walks, "dtype", "")),
            "shape": tuple(int(s) for s in getattr(walks, "shape", ())), "rng_uses": rng.uses}
    n = int(edge_index.max()) + 1
    if seen["type"] != "ndarray" or walks.ndim != 2 or walks.dtype.kind not in "iu":
        return seen
    seen["start_counts"] = np.bincount(np.clip(walks[:, 0], 0, n), minlength=n + 1)
    if walks.size and (walks.min() < 0 or walks.max() >= n):
        seen["transitions"] = None
        return seen
    counts = np.zeros((n, n), np.int64)
    np.add.at(counts, (walks[:, :-1].ravel(), walks[:, 1:].ravel()), 1)
    seen["transitions"] = counts
    return seen


def _walk_problem(walks, edge_index: np.ndarray, starts: np.ndarray, length: int) -> str | None:
    """What is wrong with `walks` as walks of `length` from `starts` on the graph (None if nothing)."""
    if not isinstance(walks, np.ndarray):
        return f"walks is a {type(walks).__name__}, not a numpy array"
    if walks.dtype != np.int64:
        return f"walks has dtype {walks.dtype}, expected int64"
    if walks.shape != (len(starts), length):
        return f"walks has shape {walks.shape}, expected {(len(starts), length)}"
    if not np.array_equal(walks[:, 0], starts):
        i = int(np.flatnonzero(walks[:, 0] != starts)[0])
        return f"walks[{i}, 0] is {walks[i, 0]}, but walk {i} starts at {starts[i]}"
    n = int(edge_index.max()) + 1
    if walks.size and (walks.min() < 0 or walks.max() >= n):
        i, k = (int(j) for j in np.argwhere((walks < 0) | (walks >= n))[0])
        return f"walks[{i}, {k}] is {walks[i, k]}, not a node of the graph (0..{n - 1})"
    adjacency = np.zeros((n, n), bool)
    adjacency[edge_index[0], edge_index[1]] = True
    bad = ~adjacency[walks[:, :-1], walks[:, 1:]]
    if bad.any():
        i, k = (int(j) for j in np.argwhere(bad)[0])
        return f"walk {i} steps from {walks[i, k]} to {walks[i, k + 1]} (walks[{i}, {k}:{k + 2}]), which is not an edge"
    return None


def _too_many_uses(uses: int, walkers: int, length: int) -> str:
    return (f"rng was used {uses:,} times for {walkers:,} walks of {length} nodes: draw the random numbers of "
            "one step for all walkers at once (no Python loop over the walkers)")


def _walks_compare(edge_index: np.ndarray, starts: np.ndarray, length: int):
    def compare(got, expected) -> bool | str:
        return _walk_problem(got, edge_index, starts, length) or True
    return compare


def _walks_twice_compare(edge_index: np.ndarray, starts: np.ndarray, length: int):
    def compare(got, expected) -> bool | str:
        if not isinstance(got, list) or len(got) != 6:
            return "the probe saw no walks"
        walks, uses = got[0::2], got[1::2]
        for w in walks:
            problem = _walk_problem(w, edge_index, starts, length)
            if problem:
                return problem
        if max(uses) > 10 * length:
            return _too_many_uses(max(uses), len(starts), length)
        if not np.array_equal(walks[0], walks[1]):
            return "two generators seeded alike gave different walks: draw every random number from rng"
        if np.array_equal(walks[0], walks[2]):
            return "generators with different seeds gave the same walks: the steps must be drawn from rng"
        return True
    return compare


def _walk_stats_compare(edge_index: np.ndarray, starts: np.ndarray, length: int):
    def compare(got, expected) -> bool | str:
        return _walk_stats_problem(got, edge_index, starts, length) or True
    return compare


def _walk_stats_problem(got, edge_index: np.ndarray, starts: np.ndarray, length: int) -> str | None:
    n = int(edge_index.max()) + 1
    if got.get("type") != "ndarray":
        return f"walks is a {got.get('type')}, not a numpy array"
    if got["dtype"] != "int64":
        return f"walks has dtype {got['dtype']}, expected int64"
    if got["shape"] != (len(starts), length):
        return f"walks has shape {got['shape']}, expected {(len(starts), length)}"
    if got["rng_uses"] > 10 * length:
        return _too_many_uses(got["rng_uses"], len(starts), length)
    if not np.array_equal(got["start_counts"], np.bincount(starts, minlength=n + 1)):
        return "walks[:, 0] is not starts"
    counts = got["transitions"]
    if counts is None:
        return f"a walk visits a node outside 0..{n - 1}"
    adjacency = np.zeros((n, n), bool)
    adjacency[edge_index[0], edge_index[1]] = True
    if (counts[~adjacency] > 0).any():
        u, v = (int(i) for i in np.argwhere(counts * ~adjacency)[0])
        return f"{int(counts[u, v])} steps go from {u} to {v}, which is not an edge"
    out_of = counts.sum(1)
    degree = adjacency.sum(1)
    for u in range(n):
        if out_of[u] == 0:
            continue
        p = 1.0 / degree[u]
        mean, sd = out_of[u] * p, np.sqrt(out_of[u] * p * (1 - p))
        for v in np.flatnonzero(adjacency[u]):
            if abs(counts[u, v] - mean) > 5 * sd + 1:
                shares = ", ".join(f"{int(w)}: {counts[u, w] / out_of[u]:.3f}" for w in np.flatnonzero(adjacency[u]))
                return (f"the steps out of node {u} (degree {degree[u]}) are not uniform over its neighbours: "
                        f"shares {{{shares}}}, each should be about {p:.3f}")
    return None


def _walk_graph(rng) -> np.ndarray:
    """A small connected undirected graph with degrees from 1 to 5, both directions, edges shuffled."""
    und = [(0, 1), (0, 2), (0, 3), (0, 4), (4, 5), (5, 6), (6, 4), (6, 7), (7, 4), (7, 8), (8, 4)]
    perm = rng.permutation(9)                          # node names shuffled, so node 0 is not the hub
    und = np.array([(perm[a], perm[b]) for a, b in und])
    both = np.concatenate([und, und[:, ::-1]])
    return both[rng.permutation(len(both))].T.astype(np.int64)


def _ringed_sbm(seed: int) -> np.ndarray:
    """A 20-node SBM with the ring 0 - 1 - ... - 19 - 0 added (so every node has a neighbour), shuffled."""
    ring = np.stack([np.arange(20), (np.arange(20) + 1) % 20])
    ei = np.concatenate([_sbm_edges(seed, (10, 10)), ring, ring[::-1]], 1)
    ei = np.unique(ei, axis=1)
    return ei[:, np.random.default_rng(seed).permutation(ei.shape[1])]


@exercise("09.10", title="random_walks", points=2,
          hint="build a CSR layout: targets sorted by source (np.argsort(source, kind='stable')), degree = "
               "np.bincount(source, minlength=n), offsets = [0, cumsum(degree)]; then for each step, for all "
               "walkers at once: next = targets[offsets[here] + (rng.random(W) * degree[here]).astype(np.int64)].",
          forbid={"graphs.random_walks": _graphs.random_walks})
def _random_walks(rng):
    path = np.array([[0, 1, 1, 2], [1, 0, 2, 1]], np.int64)
    graph = _walk_graph(rng)
    seed = int(rng.integers(0, 2**31 - 1))
    out = []
    for ei, starts, length, what in [
            (path, np.array([0, 2, 1]), 5, "the path 0 - 1 - 2"),
            (graph, np.array([3, 3, 0]), 1, "length 1: just the starts"),
            (graph, rng.integers(0, 9, 12), 8, "a small graph, edges in random order"),
            (_ringed_sbm(seed), rng.integers(0, 20, 30), 6,
             f"stochastic_block_model((10, 10), 0.5, 0.05, seed={seed}) plus the ring 0 - 1 - ... - 19 - 0")]:
        text = (f"random_walks({_edges_text(ei, 'np.array')}, starts=np.array({starts.tolist()}), length={length}, "
                f"rng)  ({what})")
        out.append(probe(_walks_probe, ei, starts, length, int(rng.integers(0, 1000)),
                         expected=f"an int64 array of shape {(len(starts), length)}, row i starting at starts[i], "
                                  "each step along an edge",
                         compare=_walks_compare(ei, starts, length), label=text))
    starts = np.tile(np.arange(9), 200)
    out.append(probe(_walks_twice_probe, graph, starts, 6, int(rng.integers(0, 1000)),
                     expected="valid walks, a few uses of rng per step; the same seed gives the same walks, "
                              "another seed other walks",
                     compare=_walks_twice_compare(graph, starts, 6),
                     label=f"random_walks({_edges_text(graph, 'np.array')}, 1,800 starts, length=6, rng) with rng "
                           "seeded s, s and s + 1 (and how often is rng used?)"))
    starts = np.tile(np.arange(9), 40_000 // 9)
    out.append(probe(_walk_stats_probe, graph, starts, 6, int(rng.integers(0, 1000)),
                     expected="from each node, every neighbour taken about equally often",
                     compare=_walk_stats_compare(graph, starts, 6),
                     label=f"random_walks({_edges_text(graph, 'np.array')}, {len(starts):,} starts, length=6, rng): "
                           "is each step uniform over the current node's neighbours?"))
    return out
