//! Float functions for kernel bodies that `core` does not offer on the nvptx target: `f32::sqrt`,
//! `f32::mul_add`, `f32::exp`, `f32::ln`, `f32::powf` are std-only (they compile on the host and
//! fail on the device), and `f32::min`/`f32::max` exist on both but drop a NaN operand. Import
//! them with `use adamant_device::prelude::*;`.
//!
//! **The host computes the device's bits.** Each function is either one correctly rounded PTX
//! instruction that std computes the same way on the host (`sqrt`, `fma`), or the same code on
//! both targets built only from operations IEEE 754 defines exactly: `+ - * /` and square root
//! correctly rounded (`add.rn`, `mul.rn`, `div.rn`, `sqrt.rn`; rustc never contracts a `*` and a
//! `+` into an fma on its own), `fma`, comparisons and bit manipulation. No `ex2.approx` or
//! `lg2.approx`, whose results the host could not reproduce. So a CPU test of a kernel's
//! `update` sees what the GPU stores, NaN payloads aside (the GPU may return its canonical NaN).
//! Subnormals are kept on both (the kernels are not built with flush-to-zero).
//!
//! Accuracy: the largest error measured, in units in the last place (ulp) of the exact result,
//! over every `f32` input (`pow`: 7.5·10^7 pairs covering its whole range); how:
//! `crates/adamant-device/tests/math_prelude.rs`, whose tests assert these bounds.
//!
//! | function | error | NaN, ±inf, ±0, subnormals |
//! | --- | --- | --- |
//! | [`sqrt`], [`fma`] | correctly rounded (one PTX instruction) | IEEE 754 |
//! | [`rsqrt`] | 0.50000002 ulp | `rsqrt(±0) = ±inf`, `rsqrt(+inf) = +0`, NaN for `x < 0` |
//! | [`exp`] | 0.5208 ulp | `exp(-inf) = +0`, `exp(±0) = 1`; subnormal results rounded once |
//! | [`ln`] | 0.5004 ulp | `ln(±0) = -inf`, NaN for `x < 0`, `ln(1) = +0` |
//! | [`pow`] | 0.516 ulp for `\|y·ln x\| < 8`, 0.526 ulp up to 110 | C99 / IEEE 754 `pow` (its docs) |
//! | [`abs`], [`sign`], [`min`], [`max`] | exact | NaN stays NaN; `min`/`max` order `-0 < +0` |
//!
//! `exp`, `ln` and `pow` are software (`exp_log.rs`, `pow.rs`: Cody-Waite reduction, polynomials
//! fitted by `scripts/math_coefficients.py`, sums carried in two floats), `rsqrt` the correctly
//! rounded `1 / sqrt(x)` and one Newton step; NaN in gives NaN out everywhere except where IEEE
//! says otherwise (`pow(NaN, 0) = pow(1, NaN) = 1`).
mod exp_log;
mod pow;
mod root_divisor;

pub use exp_log::{exp, ln};
pub use pow::pow;
pub use root_divisor::{RootDivisor, MIN_DIVISOR};

/// The square root, correctly rounded (`sqrt.rn.f32`); NaN for a negative `x`.
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// `a * b + c` with one rounding (`fma.rn.f32`). Not the same as `a * b + c` written out, which
/// rounds twice; the kernels never contract on their own.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `1 / sqrt(x)`: the correctly rounded square root and division (`sqrt.rn.f32`, `div.rn.f32`),
/// which round twice (up to 1.47 ulp), then one Newton step `r + r·(1 − x·r²)/2` with the
/// residual from fmas (`x·r` split exactly in two floats): within 0.50000002 ulp, the nearest
/// float for all but 129 of the 2^31 positive floats (measured over every `f32`). Not PTX's `rsqrt.approx.f32`, which the host could not reproduce. `rsqrt(+0) = +inf`,
/// `rsqrt(-0) = -inf` (IEEE 754's `rSqrt`), `rsqrt(+inf) = +0`, NaN for `x < 0` and NaN;
/// subnormal `x` are exact inputs.
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    let r = 1.0 / sqrt(x);
    if !(x > 0.0 && x < f32::INFINITY) {
        return r;
    }
    // 1 − x·r² as 1 − (p + p_lo)·r, with x·r = p + p_lo exactly; x·r is about sqrt(x), so
    // nothing overflows or underflows for any finite x > 0 (r² alone would, for subnormal x).
    let p = x * r;
    let p_lo = fma(x, r, -p);
    let residual = fma(-p_lo, r, fma(-p, r, 1.0));
    fma(r * 0.5, residual, r)
}

/// `|x|`, exact: clears the sign bit (`abs(-0) = +0`, `abs(-inf) = +inf`, NaN stays NaN).
/// `f32::abs` is in `core` and does the same; this one is here so the prelude has the whole set.
#[inline(always)]
pub fn abs(x: f32) -> f32 {
    x.abs()
}

/// The larger of `a` and `b`, keeping NaN: IEEE 754-2019 `maximum` (like `torch.maximum`). If
/// either is NaN the result is NaN (that operand, `a` first); `max(-0, +0) = +0` in either order.
///
/// Unlike `f32::max` (IEEE `maximumNumber`, PTX `max.f32`, CUDA's `fmaxf`), which returns the
/// other operand when one is NaN: a NaN weight or moment run through it vanishes, which is the
/// bug class adamant exists for (the seed's `fminf(fmaxf(p, -b), b)` turned NaN weights into
/// `-b`). The `#[optimizer_kernel]` body check rejects `.max()` and `f32::max` for that reason.
#[inline(always)]
pub fn max(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a > b {
        a
    } else if b > a {
        b
    } else {
        // Equal: the same value, or zeros of either sign; the AND of the sign bits is +0 as
        // soon as one of them is +0.
        f32::from_bits(a.to_bits() & b.to_bits())
    }
}

/// The smaller of `a` and `b`, keeping NaN: IEEE 754-2019 `minimum` (like `torch.minimum`). If
/// either is NaN the result is NaN (that operand, `a` first); `min(-0, +0) = -0` in either order.
/// Unlike `f32::min` / `min.f32` / `fminf`, which drop a NaN operand (see [`max`]).
#[inline(always)]
pub fn min(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a < b {
        a
    } else if b < a {
        b
    } else {
        // Equal: the OR of the sign bits is -0 as soon as one of them is -0.
        f32::from_bits(a.to_bits() | b.to_bits())
    }
}

/// The sign of `x` as `-1.0`, `0.0` or `1.0`, with `sign(±0) = 0` (unlike `f32::signum`, which
/// gives `±1` for `±0`, as the sign-based optimizers want: a zero gradient moves nothing) and
/// NaN for NaN (so a NaN gradient stays visible).
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn sign(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}
