//! `exp` and `ln`, and the extended-precision cores [`exp_sum`] and [`ln_parts`] that
//! [`super::pow`] is built on.
//!
//! Software on both targets, from exact IEEE operations only (see [`crate::math`]): the host and
//! the device compute the same bits. Textbook methods; the polynomial coefficients are this
//! crate's own, fitted by `scripts/math_coefficients.py` (Chebyshev fits with mpmath, rounded to
//! f32, the rounded polynomials' error checked there):
//!
//! - `exp(t)`: Cody-Waite reduction `t = k·ln 2 + r`, `|r| <= ln 2 / 2`, with `ln 2` split in two
//!   floats so that `r` is exact; `e^r = 1 + r + r²/2 + r³·P(r)`, `P` of degree 5 (relative
//!   error 2^-25, on a term under 0.72% of the result); the sum carried in two floats and rounded
//!   once; then `·2^k` in two exact steps, or for a subnormal result one rounding to its grid.
//! - `ln(x)`: `x = 2^e·m` with `m` in `[1/√2, √2]`, `s = (m − 1)/(m + 1)` and
//!   `ln m = 2·atanh(s) = s·(2 + z·(2/3 + z·R(z)))`, `z = s²`, `R` of degree 3 (relative error
//!   2^-25.6, on a term under 0.02% of the result); every step carried in two floats (`hi + lo`,
//!   about 2^-36 relative), then `+ e·ln 2` with `ln 2` split so that `e·ln2_hi` is exact.
//!
//! Measured over every `f32` input (`crates/adamant-device/tests/math_prelude.rs`, the exhaustive test):
//! `exp` within 0.5208 ulp, `ln` within 0.5004 ulp (nearly always the nearest float).
//! Subnormal results and inputs included.
use super::fma;

/// `exp(t)` rounds to `+inf` above this (`ln(f32::MAX)` ≈ 88.72; `89·(1/ln 2)` still gives a
/// `k` of 128, which the two-factor scaling handles).
const EXP_OVERFLOW: f32 = 89.0;
/// `exp(t)` rounds to `+0` below this (`e^-104` < 2^-150, half the smallest subnormal).
const EXP_UNDERFLOW: f32 = -104.0;
const INV_LN2: f32 = core::f32::consts::LOG2_E;
/// `ln 2` rounded to f32, and the rest: `t − k·EXP_LN2_HI` is exact in one fma for every `k` of
/// the range (the difference is a multiple of `ulp(t) >= 2^-25` under 0.35, so it fits 24 bits).
const EXP_LN2_HI: f32 = core::f32::consts::LN_2;
const EXP_LN2_LO: f32 = -1.904_654_2e-9;
/// 1.5·2^23: adding it rounds to an integer, which then sits in the low bits of the sum.
const ROUND_MAGIC: f32 = 12_582_912.0;
/// `(e^r − 1 − r − r²/2)/r³` on `|r| <= 0.3467`, highest degree first.
const EXP_P: [f32; 6] = [
    2.485_132_4e-5,
    0.000_198_910_17,
    0.001_388_886_6,
    0.008_333_310_5,
    0.041_666_668,
    0.166_666_67,
];

/// `ln 2` with 16 significant bits, so `e·LN_LN2_HI` is exact for every exponent `e`
/// (`|e| <= 150`), and the rest.
const LN_LN2_HI: f32 = 45_426.0 / 65_536.0;
const LN_LN2_LO: f32 = 1.428_606_8e-6;
/// `2/3` in two floats (the series' second term carries 1% of `ln m`).
const TWO_THIRDS_HI: f32 = 2.0 / 3.0;
const TWO_THIRDS_LO: f32 = -1.986_821_6e-8;
/// `(2·atanh(s)/s − 2 − 2z/3)/z²`, `z = s²`, on `z <= 0.02944` (`|s| <= (√2−1)/(√2+1)`),
/// highest degree first.
const LN_R: [f32; 4] = [0.191_204_49, 0.222_047_63, 0.285_715_3, 0.4];
/// The bits of the f32 below √2: a significand above it is halved, so `m <= √2`.
const SQRT2_BITS: u32 = 0x3FB5_04F3;

/// `e^x`, within 0.5208 ulp (measured over every `f32`; the module docs say how).
/// `exp(NaN) = NaN`, `exp(+inf) = +inf`, `exp(-inf) = +0`, `exp(±0) = 1` exactly; `+inf` from
/// `x > 88.7228`, subnormal results below `x ≈ -87.34` (rounded once), `+0` below
/// `x ≈ -103.97`.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp_sum(x, 0.0)
}

/// `ln x` (the natural logarithm), within 0.5004 ulp (measured over every `f32`). `ln(NaN) = NaN`, `ln(x < 0) = NaN` (`-inf` included), `ln(±0) = -inf`,
/// `ln(+inf) = +inf`, `ln(1) = +0`; subnormal `x` are exact inputs.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    if x.is_nan() {
        x
    } else if x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        ln_parts(x).0
    }
}

/// `e^(hi + lo)`, rounded once, for `|lo|` at most about an ulp of `hi`: [`exp`] with `lo = 0`,
/// and `pow`'s `e^(y·ln x)` with the product in two floats. NaN for a NaN `hi`.
#[inline(always)]
pub(super) fn exp_sum(hi: f32, lo: f32) -> f32 {
    if hi.is_nan() {
        return hi;
    }
    if hi > EXP_OVERFLOW {
        return f32::INFINITY;
    }
    if hi < EXP_UNDERFLOW {
        return 0.0;
    }
    // k = round(hi / ln 2), |k| <= 150, as an integer (read off the sum's bits) and a float.
    let shifted = hi * INV_LN2 + ROUND_MAGIC;
    let k = shifted.to_bits() as i32 - ROUND_MAGIC.to_bits() as i32;
    let kf = shifted - ROUND_MAGIC;
    // r exact; the rest of k·ln 2 and the caller's lo go into c, |c| < 2^-17.
    let r = fma(-kf, EXP_LN2_HI, hi);
    let c = fma(-kf, EXP_LN2_LO, lo);
    // e^r = 1 + r + r²/2 + r³·P(r): 1 + r + r²/2 exactly in three floats (r² by an fma, |r| <
    // 0.35 so each sum's error is exact in one step), the cubic term (under 0.72% of the result)
    // in one, and e^(r + c) = e^r + c·e^r to 2^-34.
    let r2 = r * r;
    let r2_lo = fma(r, r, -r2);
    let one_hi = 1.0 + r;
    let one_lo = (1.0 - one_hi) + r;
    let half_r2 = r2 * 0.5;
    let s = one_hi + half_r2;
    let s_lo = (one_hi - s) + half_r2;
    let cubic = r2 * (r * horner5(r, &EXP_P));
    let lows = (s_lo + one_lo) + r2_lo * 0.5;
    let tail = cubic + fma(c, s + cubic, lows);
    // e^(hi + lo) = (m + m_lo)·2^k.
    let m = s + tail;
    let m_lo = (s - m) + tail;
    // ·2^k in two factors that are normal floats (|k| <= 150): the first product is exact, the
    // second rounds once.
    let k1 = k >> 1;
    let scaled = m * pow2(k1) * pow2(k - k1);
    if scaled >= f32::MIN_POSITIVE {
        scaled
    } else {
        subnormal(m, m_lo, k)
    }
}

/// `(m + m_lo)·2^k` rounded once to the subnormal grid (`2^-149`), where `m·2^k` is below
/// `f32::MIN_POSITIVE`: rounding `m` to 24 bits and then to the grid would round twice (up to
/// 0.63 ulp). In units of the grid, `v = (m + m_lo)·2^(k+149)` is exact in two floats below
/// 2^23; `v` is rounded to an integer with [`ROUND_MAGIC`], and `m_lo` decides where `m` alone
/// sat on a half.
#[inline(always)]
fn subnormal(m: f32, m_lo: f32, k: i32) -> f32 {
    // k + 149 is in [-1, 23]: a normal power of two.
    let unit = pow2(k + 149);
    let (v, v_lo) = (m * unit, m_lo * unit);
    let n = (v + ROUND_MAGIC) - ROUND_MAGIC;
    let rest = (v - n) + v_lo; // v − n is exact, within ±1/2
    let n = if rest > 0.5 {
        n + 1.0
    } else if rest < -0.5 {
        n - 1.0
    } else {
        n
    };
    // n < 2^24 is an integer: n·2^-149, as two exact products.
    n * pow2(-126) * pow2(-23)
}

/// `2^k` for `k` in the normal range `[-126, 127]`, from its bits.
#[inline(always)]
fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `ln x` as `(hi, lo)`, `hi = round(hi + lo)`, about 2^-36 relative, for a finite `x > 0`
/// (subnormal included): [`ln`] rounds it to `hi`, `pow` multiplies both by `y`.
#[inline(always)]
pub(super) fn ln_parts(x: f32) -> (f32, f32) {
    // A subnormal x is scaled into the normal range first (exactly).
    let (x, e_bias) = if x < f32::MIN_POSITIVE {
        (x * 16_777_216.0, 127 + 24)
    } else {
        (x, 127)
    };
    let bits = x.to_bits();
    let mut e = (bits >> 23) as i32 - e_bias;
    // The significand as m in [1, 2), halved (and e raised) above √2: m in [1/√2, √2].
    let mut m_bits = (bits & 0x007F_FFFF) | 0x3F80_0000;
    if m_bits > SQRT2_BITS {
        m_bits -= 0x0080_0000;
        e += 1;
    }
    let f = f32::from_bits(m_bits) - 1.0; // exact (Sterbenz)

    // s = f / (2 + f) in two floats, |s| <= 0.1716: 2 + f as d_hi + d_lo (exact), then the
    // division's remainder (exact in one fma) corrected by d_lo.
    let d_hi = 2.0 + f;
    let d_lo = f - (d_hi - 2.0);
    let s_hi = f / d_hi;
    let s_lo = fma(-s_hi, d_lo, fma(-s_hi, d_hi, f)) / d_hi;
    // z = s² in two floats.
    let z_hi = s_hi * s_hi;
    let z_lo = fma(s_hi, s_hi, -z_hi) + 2.0 * s_hi * s_lo;
    // t = 2/3 + z·R(z) in two floats (|z·R| < 0.012).
    let zr = z_hi * horner3(z_hi, &LN_R);
    let t_hi = TWO_THIRDS_HI + zr;
    let t_lo = (TWO_THIRDS_HI - t_hi) + zr + TWO_THIRDS_LO;
    // u = z·t (|u| < 0.02), then w = 2 + u, both in two floats.
    let u_hi = z_hi * t_hi;
    let u_lo = fma(z_hi, t_hi, -u_hi) + (z_hi * t_lo + z_lo * t_hi);
    let w_hi = 2.0 + u_hi;
    let w_lo = (2.0 - w_hi) + u_hi + u_lo;
    // ln m = s·w in two floats.
    let l_hi = s_hi * w_hi;
    let l_lo = fma(s_hi, w_hi, -l_hi) + (s_hi * w_lo + s_lo * w_hi);
    // + e·ln 2: e·LN_LN2_HI is exact, and |e·ln 2| >= 0.69 > |ln m| unless e = 0, so the sum's
    // error is exact in one step (Fast2Sum).
    let e = e as f32;
    let e_hi = e * LN_LN2_HI;
    let sum = e_hi + l_hi;
    let lo = (e_hi - sum) + l_hi + (e * LN_LN2_LO + l_lo);
    let hi = sum + lo;
    (hi, (sum - hi) + lo)
}

/// `c[0]·x⁵ + c[1]·x⁴ + … + c[5]`, by Horner's rule with fmas.
#[inline(always)]
fn horner5(x: f32, c: &[f32; 6]) -> f32 {
    fma(
        fma(fma(fma(fma(c[0], x, c[1]), x, c[2]), x, c[3]), x, c[4]),
        x,
        c[5],
    )
}

/// `c[0]·x³ + c[1]·x² + c[2]·x + c[3]`, by Horner's rule with fmas.
#[inline(always)]
fn horner3(x: f32, c: &[f32; 4]) -> f32 {
    fma(fma(fma(c[0], x, c[1]), x, c[2]), x, c[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constants are the bits `scripts/math_coefficients.py` prints (a mistyped digit in a
    /// decimal literal would still compile).
    #[test]
    fn constants_are_the_fitted_bits() {
        let bits = |c: &[f32]| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&EXP_P),
            [
                0x37d0_77d0,
                0x3950_928b,
                0x3ab6_0b4d,
                0x3c08_8870,
                0x3d2a_aaab,
                0x3e2a_aaab
            ]
        );
        assert_eq!(
            bits(&LN_R),
            [0x3e43_cb1c, 0x3e63_6074, 0x3e92_4947, 0x3ecc_cccd]
        );
        assert_eq!(
            bits(&[
                LN_LN2_HI,
                LN_LN2_LO,
                EXP_LN2_HI,
                EXP_LN2_LO,
                INV_LN2,
                TWO_THIRDS_HI,
                TWO_THIRDS_LO
            ]),
            [
                0x3f31_7200,
                0x35bf_be8e,
                0x3f31_7218,
                0xb102_e308,
                0x3fb8_aa3b,
                0x3f2a_aaab,
                0xb2aa_aaab
            ]
        );
        // The f32 just below √2.
        let sqrt2 = core::f64::consts::SQRT_2;
        assert!((f32::from_bits(SQRT2_BITS) as f64) < sqrt2);
        assert!((f32::from_bits(SQRT2_BITS + 1) as f64) > sqrt2);
    }
}
