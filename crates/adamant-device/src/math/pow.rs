//! `pow(x, y)`: `x^y` with IEEE 754 / C99 (Annex F) special cases, computed as
//! `e^(y·ln|x|)` from [`ln_parts`] and [`exp_sum`], the same exact-operation software on the
//! host and the device.
//!
//! The product `y·ln|x|` is carried in two floats (`y·hi` with its rounding error from one fma,
//! plus `y·lo`): with `ln|x|` good to about 2^-36 the exponent's absolute error stays under
//! `|y·ln x|·2^-36`, which costs under 0.03 ulp even where the result is about to overflow or
//! underflow (`|y·ln x|` up to 104): measured, 0.516 ulp below `|y·ln x| = 8` and 0.526 up to
//! 110, against `exp`'s own 0.5208.
use super::exp_log::{exp_sum, ln_parts};
use super::fma;

/// `x^y`.
///
/// Domain and special cases (C99 `powf`, IEEE 754 `pow`):
/// - `pow(x, ±0) = 1` for every `x`, NaN included; `pow(1, y) = 1` for every `y`, NaN included;
/// - otherwise NaN if `x` or `y` is NaN (that operand, `x` first);
/// - `x < 0` (finite) with a finite `y` that is not an integer: NaN; with an integer `y`, the
///   sign is negative when `y` is odd (every `|y| >= 2^24` is even);
/// - `pow(±0, y)`: `y < 0` gives `+inf` (`±inf` for an odd integer `y`), `y > 0` gives `+0`
///   (`±0` for an odd integer `y`);
/// - `pow(-1, ±inf) = 1`; `pow(x, -inf)` is `+inf` for `|x| < 1` and `+0` for `|x| > 1`;
///   `pow(x, +inf)` is `+0` for `|x| < 1` and `+inf` for `|x| > 1`;
/// - `pow(+inf, y)` is `+0` for `y < 0` and `+inf` for `y > 0`; `pow(-inf, y)` is
///   `pow(-0, -y)`: `-0` / `-inf` for an odd integer `y`, `+0` / `+inf` otherwise;
/// - overflow gives `±inf`, underflow a subnormal (rounded once) or `±0`; subnormal `x` are exact
///   inputs.
///
/// Accuracy: within 0.526 ulp of the exact `x^y` (subnormal results included), measured on
/// 7.5·10^7 pairs whose `|y·ln x|` covers `[0, 110)`: 0.516 ulp below `|y·ln x| = 8`, 0.526 up to
/// 110 (module docs); [`exp`](super::exp)'s 0.5208 is most of it.
#[inline(always)]
pub fn pow(x: f32, y: f32) -> f32 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if x.is_nan() {
        return x;
    }
    if y.is_nan() {
        return y;
    }
    let ax = x.abs();
    if y.is_infinite() {
        return if ax == 1.0 {
            1.0
        } else if (ax > 1.0) == (y > 0.0) {
            f32::INFINITY
        } else {
            0.0
        };
    }
    let parity = parity(y);
    let negate = x.is_sign_negative() && parity == Parity::Odd;
    let magnitude = if ax == 0.0 || ax == f32::INFINITY {
        // 0^y and inf^y: 0 or inf, by the sign of y and which of the two x is.
        if (ax == 0.0) == (y < 0.0) {
            f32::INFINITY
        } else {
            0.0
        }
    } else if x < 0.0 && parity == Parity::NotInteger {
        return f32::NAN;
    } else {
        let (l_hi, l_lo) = ln_parts(ax);
        let t_hi = y * l_hi;
        let t_lo = fma(y, l_hi, -t_hi) + y * l_lo;
        exp_sum(t_hi, t_lo)
    };
    if negate {
        -magnitude
    } else {
        magnitude
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Parity {
    NotInteger,
    Even,
    Odd,
}

/// Whether a finite, nonzero `y` is an integer, and which, from its bits.
#[inline(always)]
fn parity(y: f32) -> Parity {
    let bits = y.to_bits();
    let e = ((bits >> 23) & 0xFF) as i32 - 127;
    if e < 0 {
        // |y| < 1.
        return Parity::NotInteger;
    }
    if e > 23 {
        // |y| >= 2^24: the units bit is below the significand, so y is an even integer.
        return Parity::Even;
    }
    let significand = (bits & 0x007F_FFFF) | 0x0080_0000;
    let fraction_bits = 23 - e as u32;
    if significand & ((1 << fraction_bits) - 1) != 0 {
        Parity::NotInteger
    } else if (significand >> fraction_bits) & 1 == 1 {
        Parity::Odd
    } else {
        Parity::Even
    }
}
