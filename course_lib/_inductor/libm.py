"""Vectorisable float32 ``exp``, ``sin``, ``cos`` and ``tanh`` for float32 kernels.

numba calls the C library for ``np.exp`` and friends one element at a time, so a fused kernel of
transcendental ops would be slower than numpy's SIMD loops. PyTorch's inductor calls Sleef's vector
functions for the same reason. These are written with arithmetic, comparisons and selects only,
which LLVM turns into SIMD code. ``expf`` and ``tanhf`` evaluate in float32 with Cephes'
polynomials (within 1 ulp of the correctly rounded result); ``sinf`` and ``cosf`` reduce the
argument modulo pi/2 in float32 with fused multiply-adds (Cody and Waite's method: pi/2 as the sum
of three float32, each product with the quotient exact inside an FMA) and evaluate Cephes' float32
polynomials on the reduced argument. Checked against float64 ``sin``/``cos`` at every float32 below
2**20 in magnitude (``tests/exhaustive_libm.py``), the worst errors are 1.67 and 1.81 ulp. The
three must hold pi/2 to better than float64 does: with the third one computed in float64 arithmetic
(6e-17 off), cos is 22 ulp off near its zero at 252.898. Beyond ``2**20`` the reduction is no
longer exact: a kernel counts the larger arguments as it runs and, if there were any, runs its loop
again with the C library's functions. (The counting is what keeps a conditional call out of the
loop: a call in a branch stops LLVM vectorising it.)
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: LLVM may fuse a multiply and an add into one FMA (one rounding instead of two; never less
#: accurate); no other fast-math licence: NaN, infinities and signed zeros behave as in IEEE
FASTMATH = {"contract"}
#: |x| below which the sin/cos range reduction is exact (x - k * _PIO2_A must be)
TRIG_LIMIT = np.float32(2 ** 20)


@intrinsic
def _i32_as_f32(typingctx, i):
    """The float32 whose bits are the int32 ``i``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


F = np.float32


@njit(inline="always", fastmath=FASTMATH)
def _exp_kp(x):
    """(k, p) with exp(x) = 2**k * p for float32 x in [-104, 89]: k = round(x / ln 2), p Cephes' expf
    polynomial of the rest (the shared part of ``expf`` and ``_exp_0_88``)."""
    k = (x * F(1.44269504088896341) + F(12582912.0)) - F(12582912.0)   # round(x / ln 2)
    r = (x - k * F(0.693359375)) - k * F(-2.12194440e-4)
    p = ((((F(1.9875691500e-4) * r + F(1.3981999507e-3)) * r + F(8.3334519073e-3)) * r + F(4.1665795894e-2)) * r
         + F(1.6666665459e-1)) * r + F(5.0000001201e-1)
    return k, p * r * r + r + F(1.0)


@njit(inline="always", fastmath=FASTMATH)
def expf(x):
    """exp(x) for float32 x, in float32 (Cephes' expf polynomial; within 1 ulp)."""
    k, p = _exp_kp(min(max(x, F(-104.0)), F(89.0)))
    ki = np.int32(k)
    k1 = ki >> 1   # 2**k as two factors, so that subnormal and overflowing results round correctly
    s1 = _i32_as_f32((k1 + np.int32(127)) << np.int32(23))
    s2 = _i32_as_f32((ki - k1 + np.int32(127)) << np.int32(23))
    return x if x != x else p * s1 * s2


@njit(inline="always", fastmath=FASTMATH)
def _exp_0_88(x):
    """exp(x) for float32 0 <= x <= 88: ``expf`` without what other arguments need (NaN, and the
    two factors of 2**k that keep subnormal and overflowing results right)."""
    k, p = _exp_kp(x)
    return p * _i32_as_f32((np.int32(k) + np.int32(127)) << np.int32(23))


@njit(inline="always", fastmath=FASTMATH)
def tanhf(x):
    """tanh(x) for float32 x, in float32 (Cephes' tanhf: a polynomial below 0.625, else via exp)."""
    z = abs(x)
    zz = x * x
    small = ((((F(-5.70498872745e-3) * zz + F(2.06390887954e-2)) * zz - F(5.37397155531e-2)) * zz
              + F(1.33314422036e-1)) * zz - F(3.33332819422e-1)) * zz * x + x
    # (a NaN x gets min's 44 here and x below; exp(88) is p * 2**127, no overflow.  Results equal those with
    # expf at every float32; a loop of 4M tanh takes 1.6-2.1 ms instead of 2.5)
    s = _exp_0_88(F(2.0) * min(z, F(44.0)))
    t = F(1.0) - F(2.0) / (s + F(1.0))
    big = -t if x < 0 else t
    return x if x != x else (small if z < F(0.625) else big)


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (LLVM's fma intrinsic; a vector FMA in a vectorised loop)."""
    if not (a == b == c == types.float32):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float32(types.float32, types.float32, types.float32), codegen


#: pi/2 as three float32 (what they leave out is 1.1e-23).  Inside an FMA each product k * _PIO2_* is exact,
#: and so is x - k * _PIO2_A for |x| < 2**20 (the two share their leading bits)
_PIO2_A = np.float32(1.5707963705062866)
_PIO2_B = np.float32(-4.371138828673793e-08)
_PIO2_C = np.float32(-1.7151245100058819e-15)
_2_PI = np.float32(0.636619772367581343)
_ROUNDF = np.float32(12582912.0)   # 1.5 * 2**23: adding and subtracting it rounds a float32 to an integer


#: Cephes' sinf/cosf polynomials on [-pi/4, pi/4], evaluated in float32
_SF = (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)
_CF = (4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5)


@njit(inline="always", fastmath=FASTMATH)
def _sincos_reduced(x, shift: int):
    """sin(x + shift * pi/2) for float32 x: x - k pi/2 in float32 with FMAs (exact for |x| < TRIG_LIMIT),
    the polynomial on the reduced argument."""
    k = _fma(x, _2_PI, _ROUNDF) - _ROUNDF    # round(x * 2/pi)
    r = _fma(-k, _PIO2_A, x)                 # exact: x and k * _PIO2_A share their leading bits
    r = _fma(-k, _PIO2_B, r)
    r = _fma(-k, _PIO2_C, r)
    z = r * r
    s = r + r * z * (F(_SF[0]) + z * (F(_SF[1]) + z * F(_SF[2])))
    c = F(1.0) - F(0.5) * z + z * z * (F(_CF[0]) + z * (F(_CF[1]) + z * F(_CF[2])))
    q = (np.int32(k) + np.int32(shift)) & np.int32(3)   # |k| < 2**20: int32 converts in SIMD (int64 does not)
    v = s if (q & np.int32(1)) == 0 else c
    return -v if q >= 2 else v


@njit(inline="always", fastmath=FASTMATH)
def sinf(x):
    """sin(x) for float32 |x| < TRIG_LIMIT (the caller checks); within 2 ulp."""
    return _sincos_reduced(x, 0)


@njit(inline="always", fastmath=FASTMATH)
def cosf(x):
    """cos(x) for float32 |x| < TRIG_LIMIT (the caller checks); within 2 ulp."""
    return _sincos_reduced(x, 1)
