"""The oracle: real PyTorch, for tests that compare course_lib with it.

    from oracle import require_torch
    torch = require_torch()

Without torch the calling test is skipped, with a visible reason.  With the
environment variable ``COURSE_REQUIRE_ORACLE=1`` (set in CI) a missing torch
fails the test instead, so oracle comparisons cannot silently stop running.
"""
from __future__ import annotations

import importlib
import os

import pytest

ORACLE_VERSION = "2.13.0"


def require_torch():
    """Return the ``torch`` module, or skip (fail under COURSE_REQUIRE_ORACLE=1) without it."""
    try:
        return importlib.import_module("torch")
    except ImportError as e:
        reason = f"oracle test needs torch=={ORACLE_VERSION} (pip install 'course_lib[oracle]'): {e}"
        if os.environ.get("COURSE_REQUIRE_ORACLE") == "1":
            pytest.fail(reason + " [COURSE_REQUIRE_ORACLE=1]", pytrace=False)
        pytest.skip(reason)
