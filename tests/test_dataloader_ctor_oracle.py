"""Chapter 06's constructor exercise (06.7, LoaderArgs) against torch 2.13.0.

The check of 06.7 takes its expected values from course_lib's DataLoader, run in the grader, so that
grading does not need torch. This test builds every fixed case of the check, and random ones drawn as
the check draws them, with torch's DataLoader too, and compares what each decides: the error's type
and message, or the samplers, batch_size, drop_last, _auto_collation, _index_sampler and collate_fn.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from oracle import require_torch

from course.paths import load_chapter_module

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def _outcome(DataLoader, checks, spec, **build) -> dict:
    dataset, kwargs = checks.ctor_arguments(spec, **build)
    try:
        loader = DataLoader(dataset, **kwargs)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return {"raises": type(e).__name__, "message": str(e)}
    seen = checks.describe_loader(loader, dataset, kwargs)
    if spec.get("shuffle") and spec["dataset"][0] == "map":
        seen.pop("first")  # torch's and course_lib's generators draw different permutations
    return seen


def test_constructor_cases_match_torch():
    torch = require_torch()
    from torch.utils.data import DataLoader, IterableDataset

    import course_lib.utils.data as D

    checks = load_chapter_module("06", "checks", CHAPTERS)

    class TorchStream(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    rng = np.random.default_rng(0)
    specs = checks.CTOR_FIXED + [checks.ctor_random(rng) for _ in range(60)]
    torch_build = {"iterable_dataset": TorchStream, "make_generator": lambda s: torch.Generator().manual_seed(s)}
    wrong = []
    for spec in specs:
        ours, theirs = _outcome(D.DataLoader, checks, spec), _outcome(DataLoader, checks, spec, **torch_build)
        if ours != theirs:
            wrong.append(f"{checks._spec_text(spec)}:\n  course_lib {ours}\n  torch      {theirs}")
    assert not wrong, "\n".join(wrong)
    raised = {o["message"] for o in (_outcome(D.DataLoader, checks, s) for s in checks.CTOR_FIXED) if "raises" in o}
    assert len(raised) >= 7  # every conflict of the constructor is among the fixed cases
