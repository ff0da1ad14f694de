"""Vectorisable float32 ``exp``, ``sin``, ``cos`` and ``tanh`` for float32 kernels.

numba calls the C library for ``np.exp`` and friends one element at a time, so a fused kernel
of transcendental ops would be slower than numpy's SIMD loops.  PyTorch's inductor calls Sleef's
vector functions for the same reason.  These are written with arithmetic, comparisons and
selects only, which LLVM turns into SIMD code.  ``expf`` and ``tanhf`` evaluate in float32 with
Cephes' polynomials (within 1 ulp of the correctly rounded result); ``sinf`` and ``cosf`` evaluate
in float64 (range reduction plus a polynomial, ~1e-13 relative), since float32 reduction loses
accuracy near the zeros of large arguments.  ``sin`` and
``cos`` reduce exactly only for ``|x| < 2**20``: a kernel counts the larger arguments as it runs
and, if there were any, runs its loop again with the C library's functions.  (The counting is
what keeps a conditional call out of the loop: a call in a branch stops LLVM vectorising it.)
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: |x| below which the sin/cos range reduction is exact (k * PIO2_1 must be exact)
TRIG_LIMIT = float(2 ** 20)


@intrinsic
def _i64_as_f64(typingctx, i):
    """The float64 whose bits are the int64 ``i`` (a bit cast, no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0   # 1.5 * 2**52: adding and subtracting it rounds to an integer


@njit(inline="always", fastmath=False)
def exp64(x: float) -> float:
    """exp(x) for float64 x, for results then rounded to float32 (|x| clamped to 110); unused by kernels."""
    xc = min(max(x, -110.0), 110.0)
    k = (xc * _LOG2E + _ROUND) - _ROUND
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (
        1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (1.0 / 3628800))))))))))
    scale = _i64_as_f64((np.int64(k) + 1023) << 52)
    return x if x != x else p * scale


@intrinsic
def _i32_as_f32(typingctx, i):
    """The float32 whose bits are the int32 ``i``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


F = np.float32


@njit(inline="always", fastmath=False)
def expf(x):
    """exp(x) for float32 x, in float32 (Cephes' expf polynomial; within 1 ulp)."""
    xc = min(max(x, F(-104.0)), F(89.0))
    k = (xc * F(1.44269504088896341) + F(12582912.0)) - F(12582912.0)   # round(x / ln 2)
    r = (xc - k * F(0.693359375)) - k * F(-2.12194440e-4)
    p = ((((F(1.9875691500e-4) * r + F(1.3981999507e-3)) * r + F(8.3334519073e-3)) * r + F(4.1665795894e-2)) * r
         + F(1.6666665459e-1)) * r + F(5.0000001201e-1)
    p = p * r * r + r + F(1.0)
    ki = np.int32(k)
    k1 = ki >> 1   # 2**k as two factors, so that subnormal and overflowing results round correctly
    s1 = _i32_as_f32((k1 + np.int32(127)) << np.int32(23))
    s2 = _i32_as_f32((ki - k1 + np.int32(127)) << np.int32(23))
    return x if x != x else p * s1 * s2


@njit(inline="always", fastmath=False)
def tanhf(x):
    """tanh(x) for float32 x, in float32 (Cephes' tanhf: a polynomial below 0.625, else via exp)."""
    z = abs(x)
    zz = x * x
    small = ((((F(-5.70498872745e-3) * zz + F(2.06390887954e-2)) * zz - F(5.37397155531e-2)) * zz
              + F(1.33314422036e-1)) * zz - F(3.33332819422e-1)) * zz * x + x
    s = expf(F(2.0) * min(z, F(44.0)))
    t = F(1.0) - F(2.0) / (s + F(1.0))
    big = -t if x < 0 else t
    return x if x != x else (small if z < F(0.625) else big)


_PIO2_1 = 1.57079632673412561417e+00
_PIO2_1T = 6.07710050650619224932e-11
_2_PI = 6.36619772367581382433e-01
_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


@njit(inline="always", fastmath=False)
def _sincos_reduced(x: float, shift: int) -> float:
    k = (x * _2_PI + _ROUND) - _ROUND
    r = (x - k * _PIO2_1) - k * _PIO2_1T
    z = r * r
    s = r + r * z * (_S[0] + z * (_S[1] + z * (_S[2] + z * (_S[3] + z * (_S[4] + z * _S[5])))))
    c = 1.0 - 0.5 * z + z * z * (_C[0] + z * (_C[1] + z * (_C[2] + z * (_C[3] + z * (_C[4] + z * _C[5])))))
    q = (np.int64(k) + shift) & 3
    v = s if (q & 1) == 0 else c
    return -v if q >= 2 else v


@njit(inline="always", fastmath=False)
def sinf(x):
    """sin(x) for |x| < TRIG_LIMIT (the caller checks)."""
    return np.float32(_sincos_reduced(np.float64(x), 0))


@njit(inline="always", fastmath=False)
def cosf(x):
    """cos(x) for |x| < TRIG_LIMIT (the caller checks)."""
    return np.float32(_sincos_reduced(np.float64(x), 1))
