"""Compiled course_lib (chapter 08): ``course_lib._inductor.compile_fx`` beside eager.

Three comparisons, each an "eager" and a "compiled" workload (compile time is never in a row:
each library compiles once while its workload is built; ``bench/compile_table.py`` reports
compile time and the first call):

1. The seed's chain of 8 pointwise ops on 4M float32 (``y = x*1.5 + 0.5; y = sin(y)*y;
y = exp(-|y|) + y*y; tanh(y) - 0.1*y``).  Eager, every op reads and writes a 16 MB array; compiled,
one fused kernel reads ``x`` once and writes the result once.  Two rows: "eager" times eager
course_lib and torch eager, "compiled" times ``compile_fx`` of the ``make_fx`` graph and
``torch.compile`` (each compiled once while the workload is built: compile time is not in the
row).  The numpy column is the same chain in numpy in both rows, the eager floor.
Target: the compiled course_lib row >= 4x faster than the eager course_lib row.

2. LayerNorm(512) forward + backward on 64x128x512 float32: ``aot_module`` with ``compile_fx`` as
   forward and backward compiler and the min-cut partitioner (two row kernels: the forward, and
   the backward with its dweight/dbias column sums), beside torch eager (in both rows: the target
   is compiled course_lib <= 1.5x torch eager).  numpy: the same forward and backward by hand.
3. An overhead-bound training step: MLP 64-64-64-10, batch 32, cross-entropy, SGD.  Compiled:
   the joint forward+backward graph (``trace_joint``) through ``compile_fx(mode="reduce-overhead")``
   returning the loss and the gradients, then the SGD update (``p.sub_(lr * g)``, traced by
   ``make_fx``) compiled the same way.  Target: >= 2.5x faster than the eager step.  A third row
   compiles the eager step itself with ``course_lib.compile(step, mode="reduce-overhead")``: the
   forward is captured while the step runs, ``loss.backward()`` joins its graph (the mode turns on
   ``config.compiled_autograd``: one program returns the loss and the gradients, the engine does not
   run), and ``opt.step()`` runs after it, op by op.
The small ResNet training step (chapter 04's model) is in ``bench/resnet_step.py``: it has no
numpy floor, which every workload ``run.py`` discovers must have (``python bench/compile_table.py
--harness`` times it through the harness).
"""
from __future__ import annotations

import numpy as np
from harness import measuring, torch_or_none, workload

import course_lib as cl
import course_lib.nn as nn

F = nn.functional


def _chain(lib, x):
    y = x * 1.5 + 0.5
    y = lib.sin(y) * y
    y = lib.exp(-lib.abs(y)) + y * y
    return lib.tanh(y) - 0.1 * y


def _inputs(quick: bool) -> np.ndarray:
    n = 1000 if quick else 4_000_000
    return np.random.default_rng(0).standard_normal(n, dtype=np.float32)


def _chain_workload(quick: bool, compiled: bool) -> dict:
    xn = _inputs(quick)
    x = cl.from_numpy(xn)
    fns = {"numpy": lambda: _chain(np, xn)}
    if measuring("course_lib"):
        if compiled:
            from course_lib._inductor import compile_fx
            from course_lib.fx.experimental.proxy_tensor import make_fx
            kernel = compile_fx(make_fx(lambda x: _chain(cl, x))(x), [x])
            fns["course_lib"] = lambda: kernel(x)
        else:
            fns["course_lib"] = lambda: _chain(cl, x)
    torch = torch_or_none()
    if torch is not None:
        xt = torch.from_numpy(xn)
        if compiled:
            try:
                # --quick (a check that the workload runs, timings meaningless): torch's graph capture
                # without inductor's C++ build, which takes 10-20 s on 2 cores
                fn = torch.compile(lambda x: _chain(torch, x), backend="aot_eager" if quick else "inductor")
                fn(xt)
            except Exception:   # no C++ compiler for inductor: no torch column
                fn = None
            if fn is not None:
                fns["torch"] = lambda: fn(xt)
        else:
            fns["torch"] = lambda: _chain(torch, xt)
    return fns


@workload("pointwise chain 8 ops 4M float32 (eager)", rtol=1e-5, atol=1e-6,
          note="eager course_lib, eager torch")
def chain_eager(quick: bool):
    return _chain_workload(quick, compiled=False)


@workload("pointwise chain 8 ops 4M float32 (compiled)", rtol=1e-5, atol=1e-6,
          note="compile_fx vs torch.compile; target: course_lib >= 4x faster than the eager row")
def chain_compiled(quick: bool):
    return _chain_workload(quick, compiled=True)


# ---------------------------------------------------------------------------
# LayerNorm(512) forward + backward
# ---------------------------------------------------------------------------
def _ln_inputs(quick: bool):
    shape = (2, 3, 16) if quick else (64, 128, 512)
    rng = np.random.default_rng(1)
    xn = rng.standard_normal(shape, dtype=np.float32)
    gn = rng.standard_normal(shape, dtype=np.float32)
    wn = (1 + 0.1 * rng.standard_normal(shape[-1])).astype(np.float32)
    bn = (0.1 * rng.standard_normal(shape[-1])).astype(np.float32)
    return xn, gn, wn, bn


def _ln_numpy(xn, gn, wn, bn, eps=1e-5):
    mean = xn.mean(-1, keepdims=True)
    d = xn - mean
    rstd = 1 / np.sqrt((d * d).mean(-1, keepdims=True) + eps)
    xhat = d * rstd
    y = xhat * wn + bn
    g = gn * wn
    dx = (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True)) * rstd
    dw, db = (gn * xhat).sum((0, 1)), gn.sum((0, 1))
    return y, dx, dw, db


def _ln_workload(quick: bool, compiled: bool) -> dict:
    xn, gn, wn, bn = _ln_inputs(quick)
    fns = {"numpy": lambda: _ln_numpy(xn, gn, wn, bn)[1]}
    if measuring("course_lib"):
        m = nn.LayerNorm(xn.shape[-1])
        with cl.no_grad():
            m.weight.copy_(cl.from_numpy(wn))
            m.bias.copy_(cl.from_numpy(bn))
        x, g = cl.from_numpy(xn.copy()).requires_grad_(), cl.from_numpy(gn)
        fwd = m
        if compiled:
            from course_lib._functorch import aot_module
            from course_lib._functorch.partitioners import min_cut_rematerialization_partition
            from course_lib._inductor import compile_fx
            fwd = aot_module(m, compile_fx, compile_fx, partition_fn=min_cut_rematerialization_partition)

        def course():
            x.grad = m.weight.grad = m.bias.grad = None
            fwd(x).backward(g)
            return x.grad
        fns["course_lib"] = course
    torch = torch_or_none()
    if torch is not None:
        tm = torch.nn.LayerNorm(xn.shape[-1])
        with torch.no_grad():
            tm.weight.copy_(torch.from_numpy(wn))
            tm.bias.copy_(torch.from_numpy(bn))
        xt, gt = torch.from_numpy(xn.copy()).requires_grad_(), torch.from_numpy(gn)

        def torch_step():
            xt.grad = tm.weight.grad = tm.bias.grad = None
            tm(xt).backward(gt)
            return xt.grad
        fns["torch"] = torch_step
    return fns


@workload("LayerNorm(512) fwd+bwd 64x128x512 float32 (eager)", rtol=1e-4, atol=1e-4,
          note="eager course_lib, torch eager")
def layernorm_eager(quick: bool):
    return _ln_workload(quick, compiled=False)


@workload("LayerNorm(512) fwd+bwd 64x128x512 float32 (compiled)", rtol=1e-4, atol=1e-4,
          note="aot_module + compile_fx (min-cut) vs torch EAGER; target: course_lib <= 1.5x torch eager")
def layernorm_compiled(quick: bool):
    return _ln_workload(quick, compiled=True)


# ---------------------------------------------------------------------------
# MLP 64-64-64-10 training step: per-op overhead
# ---------------------------------------------------------------------------
_MLP_SIZES = (64, 64, 64, 10)
_LR = 0.01


def _mlp_init(quick: bool):
    rng = np.random.default_rng(2)
    sizes, batch = ((8, 8, 8, 4), 4) if quick else (_MLP_SIZES, 32)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(n_in)
        params += [rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32),
                   rng.uniform(-bound, bound, n_out).astype(np.float32)]
    xn = rng.standard_normal((batch, sizes[0]), dtype=np.float32)
    yn = rng.integers(0, sizes[-1], batch)
    return params, xn, yn


def _mlp_loss(w1, b1, w2, b2, w3, b3, x, y):
    h = F.relu(F.linear(x, w1, b1))
    h = F.relu(F.linear(h, w2, b2))
    return F.cross_entropy(F.linear(h, w3, b3), y)


def _sgd(*params_and_grads):
    n = len(params_and_grads) // 2
    for p, g in zip(params_and_grads[:n], params_and_grads[n:]):
        p.sub_(g * _LR)


def compiled_mlp_step(params: list, x, y):
    """The step compiled with ``mode="reduce-overhead"``: one program for the joint forward+backward
    graph (returns the loss and the gradients), one for the SGD update of the parameters in place."""
    from course_lib._functorch.aot_autograd import trace_joint
    from course_lib._inductor import compile_fx
    from course_lib.fx.experimental.proxy_tensor import make_fx
    one = cl.ones(())
    joint = trace_joint(_mlp_loss, *params, x, y)
    fwd_bwd = compile_fx(joint.module, [*params, x, y, one], mode="reduce-overhead")
    copies = [p.detach().clone() for p in params]
    zeros = [cl.zeros_like(p) for p in params]
    update = compile_fx(make_fx(_sgd)(*copies, *zeros), [*copies, *zeros], mode="reduce-overhead")
    n = len(params)

    def step():
        loss, *grads = fwd_bwd(*params, x, y, one)
        update(*params, *grads[:n])
        return loss
    return step


def _mlp_workload(quick: bool, compiled: str | None) -> dict:
    init, xn, yn = _mlp_init(quick)
    batch, n_out = len(yn), init[-1].shape[0]
    fns = {}
    if measuring("course_lib"):
        params = [cl.from_numpy(a.copy()).requires_grad_() for a in init]
        x, y = cl.from_numpy(xn), cl.from_numpy(yn)
        if compiled == "graph":
            fns["course_lib"] = compiled_mlp_step(params, x, y)
        else:
            opt = cl.optim.SGD(params, lr=_LR)

            def eager():
                opt.zero_grad()
                loss = _mlp_loss(*params, x, y)
                loss.backward()
                opt.step()
                return loss
            fns["course_lib"] = eager
            if compiled == "compile":
                # the first call (the harness's untimed check call) captures and compiles; the timed
                # calls are cache hits
                # (--quick, the tests' plumbing run: aot_eager, the same capture and AOT graphs without
                # numba's compile time)
                fns["course_lib"] = (cl.compile(eager, backend="aot_eager") if quick
                                     else cl.compile(eager, mode="reduce-overhead"))
    ps = [a.copy() for a in init]
    onehot = np.eye(n_out, dtype=np.float32)[yn]

    def floor():
        w1, b1, w2, b2, w3, b3 = ps
        h1 = xn @ w1.T + b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2.T + b2
        a2 = np.maximum(h2, 0)
        z = a2 @ w3.T + b3
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        loss = -(logp * onehot).sum() / batch
        dz = (np.exp(logp) - onehot) / batch
        da2 = (dz @ w3) * (h2 > 0)
        da1 = (da2 @ w2) * (h1 > 0)
        grads = (da1.T @ xn, da1.sum(0), da2.T @ a1, da2.sum(0), dz.T @ a2, dz.sum(0))
        for p, g in zip(ps, grads):
            p -= _LR * g
        return np.float32(loss)
    fns["numpy"] = floor
    torch = torch_or_none()
    if torch is not None:
        tps = [torch.from_numpy(a.copy()).requires_grad_() for a in init]
        topt = torch.optim.SGD(tps, lr=_LR)
        xt, yt = torch.from_numpy(xn), torch.from_numpy(yn)
        tF = torch.nn.functional

        def torch_step():
            topt.zero_grad()
            h = tF.relu(tF.linear(xt, tps[0], tps[1]))
            h = tF.relu(tF.linear(h, tps[2], tps[3]))
            loss = tF.cross_entropy(tF.linear(h, tps[4], tps[5]), yt)
            loss.backward()
            topt.step()
            return loss
        fns["torch"] = torch_step
    return fns


@workload("MLP 64-64-64-10 step, batch 32, SGD (eager)", rtol=1e-4, atol=1e-5, note="eager course_lib, torch eager")
def mlp_step_eager(quick: bool):
    return _mlp_workload(quick, compiled=None)


@workload("MLP 64-64-64-10 step, batch 32, SGD (compiled)", rtol=1e-4, atol=1e-5,
          note="compile_fx(mode='reduce-overhead') of the joint graph and of the update vs torch eager; "
               "target: course_lib >= 2.5x faster than the eager row")
def mlp_step_compiled(quick: bool):
    return _mlp_workload(quick, compiled="graph")


@workload("MLP 64-64-64-10 step, batch 32, SGD (course_lib.compile)", rtol=1e-4, atol=1e-5,
          note="course_lib.compile(step, mode='reduce-overhead') of the whole eager step (zero_grad, forward, "
               "backward compiled into the forward's graph, opt.step op by op) vs torch eager; "
               "target: course_lib >= 2.5x faster than the eager row")
def mlp_step_dynamo(quick: bool):
    return _mlp_workload(quick, compiled="compile")
