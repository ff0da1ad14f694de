"""Chapter 04's table of CPU convolution backends (exercise 04.11) against torch 2.13.0.

The check of 04.11 judges with ``CONV_BACKENDS``, rows observed once from
``torch._C._select_conv_backend``, so that grading does not need torch. This test re-runs every row
in torch (with the row's number of threads and ``torch.backends.mkldnn.enabled``) and fails on any
row torch now answers differently.
"""
from __future__ import annotations

from pathlib import Path

from oracle import require_torch

from course.paths import load_chapter_module

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def _torch_backend(torch, row) -> str:
    """The name of the backend torch picks for one row (value 9, unnamed in torch's enum, is MkldnnTranspose)."""
    ish, wsh, groups, transposed, stride, dilation, output_padding, dtype = row[:8]
    dt = getattr(torch, dtype)
    x, w = torch.zeros(ish, dtype=dt), torch.zeros(wsh, dtype=dt)
    backend = torch._C._select_conv_backend(x, w, None, list(stride), [0] * len(stride), list(dilation),
                                            transposed, list(output_padding), groups)
    return "MkldnnTranspose" if int(backend) == 9 else backend.name


def test_conv_backend_table_matches_torch():
    torch = require_torch()
    table = load_chapter_module("04", "checks", CHAPTERS).CONV_BACKENDS
    threads, mkldnn = torch.get_num_threads(), torch.backends.mkldnn.enabled
    wrong = []
    try:
        for row in sorted(table, key=lambda r: (r[8], r[9])):    # few switches of the thread pool
            torch.set_num_threads(row[8])
            torch.backends.mkldnn.enabled = row[9]
            got = _torch_backend(torch, row)
            if got != row[10]:
                wrong.append(f"{row[:10]}: table says {row[10]}, torch picks {got}")
    finally:
        torch.set_num_threads(threads)
        torch.backends.mkldnn.enabled = mkldnn
    assert len(table) >= 100
    assert not wrong, "\n".join(wrong)


def test_unnamed_backend_nine_is_mkldnn_transpose():
    """The table's name for value 9 is the C++ enum's: 9 sits between Mkldnn (8) and MkldnnEmpty (10)."""
    torch = require_torch()
    members = {name: int(v) for name, v in torch._C._ConvBackend.__members__.items()}
    assert members["Mkldnn"] == 8 and members["MkldnnEmpty"] == 10
    assert 9 not in members.values()


def test_an_answer_that_asks_torch_fails_04_11():
    """04.11 forbids torch._C._select_conv_backend (a C function, matched by module and name): an answer that
    calls it fails the case even when every value it returns is right."""
    import pytest

    from course.checks import CheckFailure, run_check

    torch = require_torch()
    checks = load_chapter_module("04", "checks", CHAPTERS)
    answers = {tuple(map(repr, row[:10])): row[10] for row in checks.CONV_BACKENDS}

    def select_conv_backend(*args):
        torch._C._select_conv_backend(torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 1, 1), None, [1, 1], [0, 0],
                                      [1, 1], False, [0, 0], 1)
        return answers[tuple(map(repr, args))]

    with pytest.raises(CheckFailure, match="torch._C._select_conv_backend"):
        run_check("04.11", select_conv_backend)

    def from_the_table(*args):      # the same values without the call: the watch is what fails the first one
        return answers[tuple(map(repr, args))]

    assert run_check("04.11", from_the_table).startswith("✓ 04.11")
