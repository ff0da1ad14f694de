"""course_lib keeps freed blocks below 32 MiB in the heap (glibc's mallopt), so a training step
does not pay for munmap/mmap and a page fault on every page of every large temporary."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")

_PROGRAM = r"""
import resource, sys
import numpy as np
import course_lib._storage as s
n = 2_000_000                      # 8 MB of float32: above glibc's default thresholds
for _ in range(3):
    a = np.ones(n, np.float32); b = a + 1; del a, b
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    a = np.ones(n, np.float32); b = a + 1; del a, b
print(s._malloc_tuned, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 20)
"""


def _run(extra_env: dict) -> tuple[bool, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tuned, faults = out.stdout.split()
    return tuned == "True", float(faults)


def _glibc() -> bool:
    import ctypes
    try:
        ctypes.CDLL(None).gnu_get_libc_version
    except (OSError, AttributeError):
        return False
    return True


@pytest.mark.skipif(not _glibc(), reason="glibc's malloc settings")
def test_large_temporaries_reuse_heap_pages():
    tuned, faults = _run({})
    assert tuned
    assert faults < 50, f"{faults} page faults per pair of 8 MB temporaries"
    default, faults_default = _run({"COURSE_LIB_DEFAULT_MALLOC": "1"})
    assert not default
    assert faults_default > 200   # glibc's defaults: the pages are fresh every time


@pytest.mark.skipif(not _glibc(), reason="glibc's malloc settings")
def test_the_users_malloc_settings_are_left_alone():
    tuned, _ = _run({"MALLOC_TRIM_THRESHOLD_": str(128 * 1024)})
    assert not tuned
