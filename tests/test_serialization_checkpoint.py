"""Checkpoint and resume: model, optimizer and scheduler state (and the random generator)
saved together; a run stopped, saved, loaded into fresh objects and resumed ends
bit-for-bit where an uninterrupted run ends."""
from __future__ import annotations

import numpy as np
import pytest

import course_lib as cl
from course_lib import nn, optim
from course_lib.nn import functional as F

EPOCHS, STOP_AT = 6, 3


def make_run(kind: str, seed: int):
    cl.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
    if kind == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True)
        sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    else:
        opt = optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
        sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    return model, opt, sched


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 6)).astype(np.float32)
    y = rng.integers(0, 3, 40)
    return cl.from_numpy(x), cl.from_numpy(y)


def train_epochs(model, opt, sched, epochs, losses):
    x, y = data()
    model.train()
    for _ in epochs:
        order = cl.randperm(40)  # shuffling and dropout both draw from the global generator
        for i in range(0, 40, 10):
            idx = order[i:i + 10]
            opt.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()


def snapshot(model, opt):
    params = {k: np.array(v._np()).tobytes() for k, v in model.state_dict().items()}
    state = {k: {n: np.array(t._np()).tobytes() if isinstance(t, cl.Tensor) else t for n, t in s.items()}
             for k, s in opt.state_dict()["state"].items()}
    return params, state, opt.param_groups[0]["lr"]


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
@pytest.mark.parametrize("mmap", [False, True])
def test_resume_is_bit_for_bit(tmp_path, kind, mmap):
    # the uninterrupted run
    model, opt, sched = make_run(kind, seed=1)
    straight_losses: list = []
    train_epochs(model, opt, sched, range(EPOCHS), straight_losses)
    straight = snapshot(model, opt)

    # the same run, stopped after STOP_AT epochs and saved ...
    model, opt, sched = make_run(kind, seed=1)
    losses: list = []
    train_epochs(model, opt, sched, range(STOP_AT), losses)
    path = tmp_path / "ckpt.pt"
    cl.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
             "epoch": STOP_AT, "rng_state": cl.get_rng_state(), "losses": losses}, path)
    del model, opt, sched

    # ... then resumed in fresh objects, made with another seed to prove everything comes from the file
    model, opt, sched = make_run(kind, seed=999)
    ckpt = cl.load(path, mmap=mmap)  # weights_only=True: a checkpoint needs nothing else
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    cl.set_rng_state(ckpt["rng_state"])
    losses = ckpt["losses"]
    train_epochs(model, opt, sched, range(ckpt["epoch"], EPOCHS), losses)

    assert losses == straight_losses
    assert snapshot(model, opt) == straight


def test_resume_without_the_rng_state_diverges(tmp_path):
    """The generator is part of the state: dropout masks and shuffles differ without it."""
    model, opt, sched = make_run("sgd", seed=1)
    straight: list = []
    train_epochs(model, opt, sched, range(EPOCHS), straight)
    model, opt, sched = make_run("sgd", seed=1)
    losses: list = []
    train_epochs(model, opt, sched, range(STOP_AT), losses)
    cl.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
            tmp_path / "c.pt")
    model, opt, sched = make_run("sgd", seed=5)
    ckpt = cl.load(tmp_path / "c.pt")
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    train_epochs(model, opt, sched, range(STOP_AT, EPOCHS), losses)
    assert losses[: len(losses) // 2] == straight[: len(losses) // 2]
    assert losses != straight
