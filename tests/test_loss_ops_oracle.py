"""The losses with a node of their own (MseLossBackward0, BinaryCrossEntropyBackward0, ...) against torch
2.13.0: values, node names, saved attributes, gradients for input and target, reductions and weights."""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl

CASES = [
    ("mse", lambda F, x, t, w: F.mse_loss(x, t)),
    ("mse none", lambda F, x, t, w: F.mse_loss(x, t, reduction="none")),
    ("mse sum", lambda F, x, t, w: F.mse_loss(x, t, reduction="sum")),
    ("bce", lambda F, x, t, w: F.binary_cross_entropy(x.sigmoid(), t)),
    ("bce weight none", lambda F, x, t, w: F.binary_cross_entropy(x.sigmoid(), t, weight=w, reduction="none")),
    ("bce logits", lambda F, x, t, w: F.binary_cross_entropy_with_logits(x, t)),
    ("bce logits weights", lambda F, x, t, w: F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=w[0] + 0.5,
                                                                                   reduction="sum")),
    ("smooth l1", lambda F, x, t, w: F.smooth_l1_loss(x, t, beta=0.5)),
    ("smooth l1 beta 0", lambda F, x, t, w: F.smooth_l1_loss(x, t, beta=0.0, reduction="none")),
    ("huber", lambda F, x, t, w: F.huber_loss(x, t, delta=0.3)),
    ("huber sum", lambda F, x, t, w: F.huber_loss(x, t, reduction="sum")),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_loss_values_nodes_and_gradients_match_torch(name, fn):
    torch = require_torch()
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    xn = rng.standard_normal((4, 3)).astype(np.float32) * 2
    tn = rng.uniform(0, 1, (4, 3)).astype(np.float32)
    wn = rng.uniform(0.5, 2, (4, 3)).astype(np.float32)

    names = []

    def run(lib):
        x, t = (lib.from_numpy(a.copy()).requires_grad_() for a in (xn, tn))
        out = fn(lib.nn.functional, x, t, lib.from_numpy(wn.copy()))
        node = out.grad_fn
        if not names:     # torch's saved attributes (course_lib's are read through __getattr__)
            names.extend(sorted(a for a in dir(node) if a.startswith("_saved_")))
        saved = {a: str(getattr(node, a, "missing")) for a in names if not a.endswith(("self", "target"))}
        out.sum().backward()
        return out.detach().numpy(), type(node).__name__, saved, x.grad.numpy(), t.grad.numpy()

    theirs = run(torch)
    ours = run(cl)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    assert ours[1] == theirs[1]
    assert ours[2] == theirs[2]
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-4, atol=1e-6)


def test_a_bad_reduction_is_refused_with_torchs_message():
    torch = require_torch()
    for lib in (cl, torch):
        x = lib.zeros(3)
        for f in (lambda: lib.nn.functional.mse_loss(x, x, reduction="avg"),
                  lambda: lib.nn.functional.binary_cross_entropy_with_logits(x, x, reduction="avg")):
            with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
                f()
