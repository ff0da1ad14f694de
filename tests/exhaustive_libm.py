"""Every float32 argument of ``course_lib._inductor.libm``'s ``sinf`` and ``cosf`` below ``TRIG_LIMIT``.

Not a test pytest collects (it takes minutes): run it by hand after changing the range reduction,

    python tests/exhaustive_libm.py            # both signs, |x| from 1e-30 up to TRIG_LIMIT

It prints each function's largest error in ulp of the float32 nearest the float64 result, and where,
and exits with 1 if one is above 2 ulp.  (Below 1e-30, sin(x) rounds to x and cos(x) to 1.)
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
from numba import njit, prange

from course_lib._inductor.libm import TRIG_LIMIT, _i32_as_f32, _sincos_reduced


@njit(parallel=True)
def _worst(lo_bits: int, hi_bits: int, shift: int) -> tuple[float, int]:
    """The largest error (ulp) over the float32 whose bit patterns (as int32) are in [lo_bits, hi_bits)."""
    n = hi_bits - lo_bits
    chunks = 512
    err = np.zeros(chunks)
    where = np.zeros(chunks, np.int64)
    for c in prange(chunks):
        worst, at = 0.0, 0
        for bits in range(lo_bits + n * c // chunks, lo_bits + n * (c + 1) // chunks):
            x = _i32_as_f32(np.int32(bits))
            got = _sincos_reduced(x, shift)
            want = math.sin(np.float64(x)) if shift == 0 else math.cos(np.float64(x))
            nearest = abs(np.float32(want))
            if nearest == 0:
                continue
            ulp = math.ldexp(1.0, max(math.frexp(np.float64(nearest))[1] - 24, -149))
            e = abs(np.float64(got) - want) / ulp
            if e > worst:
                worst, at = e, bits
        err[c], where[c] = worst, at
    i = np.argmax(err)
    return err[i], where[i]


def _bits(f: float) -> int:
    return int(np.array([f], np.float32).view(np.int32)[0])


def main() -> int:
    limit = float(TRIG_LIMIT)
    ok = True
    for name, shift in (("sinf", 0), ("cosf", 1)):
        start = time.perf_counter()
        worst, at = 0.0, 0
        for lo, hi in ((1e-30, limit), (-1e-30, -limit)):   # (int32 order: larger magnitudes last)
            e, b = _worst(_bits(lo), _bits(hi), shift)
            if e > worst:
                worst, at = e, b
        x = float(np.array([at], np.int32).view(np.float32)[0])
        print(f"{name}: at most {worst:.3f} ulp (at x = {x!r}), 1e-30 <= |x| < {limit:g}, "
              f"{time.perf_counter() - start:.0f} s")
        ok &= worst <= 2.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
