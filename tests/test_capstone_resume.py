"""Chapter 09's resumable training: a run killed with SIGKILL in the middle of an epoch, then resumed
from its checkpoint, has the uninterrupted run's losses, step for step.

The training script is the notebook's recipe at a tiny size: ``Patterns`` images through a DataLoader
with a worker process, augmentation drawn from the global generator in the training process, a sampler
whose order is remade from (seed, epoch) and started part-way, a ResNet with BatchNorm, SGD with
momentum and weight decay, OneCycleLR, label smoothing, and a checkpoint (``course_lib.save``) after
every step holding the model, optimizer, scheduler, global RNG state, epoch and batch.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

TRAIN = textwrap.dedent('''
    import os, sys, time
    import numpy as np
    import course_lib as cl
    from course_lib import nn
    from course_lib.datasets import Patterns
    from course_lib.models.resnet import BasicBlock, ResNet
    from course_lib.utils.data import DataLoader, Sampler

    path, epochs, stop_at = sys.argv[1], 2, int(sys.argv[2])
    BATCH = 16
    train_set = Patterns(160, seed=0)

    def to_batch(samples):
        x = np.stack([s[0] for s in samples]).transpose(0, 3, 1, 2).astype(np.float32) / 255 - 0.5
        return cl.from_numpy(np.ascontiguousarray(x)), cl.tensor([s[1] for s in samples])

    class EpochSampler(Sampler):
        def __init__(self, n, seed=0):
            self.n, self.seed, self.epoch, self.start = n, seed, 0, 0
        def set_epoch(self, epoch, start=0):
            self.epoch, self.start = epoch, start
        def __iter__(self):
            gen = cl.Generator().manual_seed(self.seed * 100_003 + self.epoch)
            return iter(cl.randperm(self.n, generator=gen)[self.start:].tolist())
        def __len__(self):
            return self.n - self.start

    def augment(x, pad=2):
        n, c, h, w = x.shape
        padded = np.pad(x.numpy(), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        dy = cl.randint(0, 2 * pad + 1, (n,)).numpy()
        dx = cl.randint(0, 2 * pad + 1, (n,)).numpy()
        flip = (cl.rand(n) < 0.5).numpy()
        rows = dy[:, None] + np.arange(h)
        cols = dx[:, None] + np.arange(w)
        cols = np.where(flip[:, None], cols[:, ::-1], cols)
        return cl.from_numpy(padded[np.arange(n)[:, None, None, None], np.arange(c)[None, :, None, None],
                                    rows[:, None, :, None], cols[:, None, None, :]])

    sampler = EpochSampler(len(train_set))
    loader = DataLoader(train_set, batch_size=BATCH, sampler=sampler, num_workers=1, collate_fn=to_batch,
                        drop_last=True, generator=cl.Generator().manual_seed(0))
    steps = len(train_set) // BATCH
    cl.manual_seed(0)
    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, widths=(4, 4, 8, 8))
    opt = cl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = cl.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, epochs=epochs, steps_per_epoch=steps)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    cl.manual_seed(1)
    epoch, batch = 0, 0
    if os.path.exists(path):
        ckpt = cl.load(path)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        cl.set_rng_state(ckpt["rng"])
        epoch, batch = ckpt["epoch"], ckpt["batch"]
        print("resumed", epoch, batch, flush=True)
    while epoch < epochs:
        sampler.set_epoch(epoch, start=batch * BATCH)
        model.train()
        for x, y in loader:
            loss = loss_fn(model(augment(x)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step = epoch * steps + batch
            batch += 1
            if batch == steps:
                epoch, batch = epoch + 1, 0
            cl.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                     "rng": cl.get_rng_state(), "epoch": epoch, "batch": batch}, path)
            print("step", step, loss.item().hex(), flush=True)
            if step == stop_at:
                print("waiting", flush=True)
                time.sleep(60)       # the test kills the process group first
''')


def _run(script: str, path: str, stop_at: int = -1) -> list[str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, script, path, str(stop_at)], stdout=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.split())
            if lines[-1] == ["waiting"]:
                os.killpg(proc.pid, signal.SIGKILL)     # the training process and its DataLoader worker
                break
    finally:
        proc.stdout.close()
        rc = proc.wait(timeout=60)
    assert (rc == -signal.SIGKILL) if stop_at >= 0 else (rc == 0), rc
    return lines


def test_a_run_killed_mid_epoch_resumes_with_the_same_losses(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    straight = _run(str(script), str(tmp_path / "a.ckpt"))
    steps = {int(s): v for kind, s, v in straight if kind == "step"}
    assert sorted(steps) == list(range(20))                         # 2 epochs of 10 steps
    killed = _run(str(script), str(tmp_path / "b.ckpt"), stop_at=13)  # epoch 1, after its 4th batch
    before = {int(s): v for kind, s, v in (line for line in killed if line[0] == "step")}
    resumed = _run(str(script), str(tmp_path / "b.ckpt"))
    assert resumed[0] == ["resumed", "1", "4"]
    after = {int(s): v for kind, s, v in resumed[1:]}
    assert sorted(before) == list(range(14)) and sorted(after) == list(range(14, 20))
    assert {**before, **after} == steps                              # every loss, bit for bit (float.hex)
