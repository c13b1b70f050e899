#!/usr/bin/env python3
"""Where the polynomial coefficients and split constants of crates/adamant-device/src/math/exp_log.rs come
from: Chebyshev fits (near-minimax) computed with mpmath at 50 digits, rounded to f32, and the
rounded polynomial's largest relative error over the interval, checked on 2,001 points.

    pip install mpmath && python3 scripts/math_coefficients.py

Prints each constant as f32 bits and a decimal that rounds to them; exp_log.rs holds the
shortest decimal of each (Rust's `{:?}` of the f32).
"""
import struct

from mpmath import atanh, chebyfit, exp, linspace, log, mp, mpf, polyval, sqrt

mp.dps = 50


def f32(x):
    """x rounded to the nearest f32 (through f64, which is exact for these magnitudes)."""
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def bits(x):
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", f32(x)))[0]


def fit(name, f, lo, hi, degree):
    """Fits f on [lo, hi], rounds the coefficients to f32 and reports the rounded fit's error."""
    coefficients = chebyfit(f, [lo, hi], degree + 1)
    rounded = [mpf(f32(c)) for c in coefficients]
    worst = max(abs(polyval(rounded, x) / f(x) - 1) for x in linspace(lo, hi, 2001))
    print(f"{name}: degree {degree} on [{float(lo):.6g}, {float(hi):.6g}], "
          f"relative error with f32 coefficients 2^{float(log(worst, 2)):.1f}")
    for c in rounded:
        print(f"    {bits(c)}  {f32(c)!r}")


# exp: e^r = 1 + r + r^2/2 + r^3 P(r), |r| <= ln(2)/2 plus the slack of rounding k = round(t/ln 2)
# in f32 (under 1e-5).
def exp_tail(r):
    return mpf(1) / 6 if r == 0 else (exp(r) - 1 - r - r * r / 2) / r**3


R = mpf("0.3467")
fit("EXP_P", exp_tail, -R, R, 5)


# ln: ln m = 2 atanh(s) = s (2 + z (2/3 + z R(z))), z = s^2, s = (m - 1)/(m + 1) for m in
# [1/sqrt 2, sqrt 2], so z <= ((sqrt 2 - 1)/(sqrt 2 + 1))^2 = 0.029437 (0.02944 with margin).
def atanh_tail(z):
    if z == 0:
        return mpf(2) / 5
    s = sqrt(z)
    return (2 * atanh(s) / s - 2 - 2 * z / 3) / z**2


fit("LN_R", atanh_tail, mpf(0), mpf("0.02944"), 3)

ln2 = log(2)
hi16 = mpf(round(ln2 * 2**16)) / 2**16  # 16 bits: e * hi16 is exact for |e| <= 255
print(f"LN_LN2_HI = 45426/65536 = {bits(hi16)}  LN_LN2_LO = {bits(ln2 - hi16)}  {f32(ln2 - hi16)!r}")
hi24 = mpf(f32(ln2))
print(f"EXP_LN2_HI = {bits(hi24)}  {f32(hi24)!r}  EXP_LN2_LO = {bits(ln2 - hi24)}  {f32(ln2 - hi24)!r}")
print(f"INV_LN2 = {bits(1 / ln2)}  {f32(1 / ln2)!r}")
two_thirds = mpf(2) / 3
print(f"TWO_THIRDS_LO = {bits(two_thirds - mpf(f32(two_thirds)))}  "
      f"{f32(two_thirds - mpf(f32(two_thirds)))!r}")
