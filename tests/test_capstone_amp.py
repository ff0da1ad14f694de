"""GradScaler details the capstone relies on (chapter 09, exercise 09.4)."""
from __future__ import annotations

import warnings

import numpy as np

import course_lib as cl


def test_growth_that_overflows_float32_keeps_the_scale_without_a_warning():
    # PyTorch keeps the scale when growing it would give inf, silently; numpy's cast used to warn
    p = cl.ones(2, requires_grad=True)
    opt = cl.optim.SGD([p], lr=0.1)
    big = float(np.float32(2.0 ** 127))
    scaler = cl.amp.GradScaler("cpu", init_scale=big, growth_interval=1)
    scaler.scale(p.sum() * 0.25).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == big and scaler._get_growth_tracker() == 0
