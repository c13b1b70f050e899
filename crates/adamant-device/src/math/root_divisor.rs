//! `sqrt(v) / sqrt(d)` for a `d` fixed over a launch, correctly rounded, without a division per
//! element: Adam's `sqrt(v̂) / sqrt(bc2)`, whose divisor is the same for every element of a launch.
//!
//! `div.rn.f32` is one PTX instruction, but ptxas expands it per element: an approximate
//! reciprocal (`MUFU.RCP`) refined by five fmas, a range check (`FCHK`) and a branch around a
//! slow-path call. Here the reciprocal `y = 1 / c` of the divisor `c = sqrt(d)` is computed
//! once, correctly rounded, and each element pays one multiply, two correction steps of two
//! fmas each, a select and a sign copy: as many instructions as the division's fast path
//! (ptxas 13.5), but no `MUFU`, no branch and no slow path. The 14 B path, which its
//! instructions hold (issue 26), gained 0.2 % on an H100 (`docs/performance.md`, eighteenth
//! session); Adam's other division, `m / (sqrt(v̂) / sqrt(bc2) + eps)`, has no fixed divisor.
//!
//! - `q0 = x·y` is within 1.5 ulp of `x / c` (`y` is within half an ulp of `1/c`);
//! - `r0 = x − c·q0` (one fma), `q1 = q0 + r0·y`: within half an ulp plus a few 2^-24 of one,
//!   so within one ulp;
//! - `r1 = x − c·q1`, `q2 = q1 + r1·y`: by Markstein's theorem (if `y` is within half an ulp of
//!   `1/c` and `q1` within one ulp of `x/c`, the remainder `r1` is exact and `q1 + r1·y` rounds
//!   to the correctly rounded quotient; J.-M. Muller et al., *Handbook of Floating-Point
//!   Arithmetic*, on Markstein's division), `q2` is `x / c` rounded to nearest even, the bits
//!   `div.rn.f32` gives.
//!
//! The theorem assumes no overflow and no underflow anywhere in the chain. They are ruled out by
//! the domains: `x = sqrt(v)` of a positive finite f32 lies in `[2^-75, 2^64)`, and `d` in
//! `[2^-126, 1]` (a bias correction, `BiasCorrections`' domain) puts `c` in `[2^-63, 1]`; so the
//! quotient lies in `[2^-75, 2^127)` and the remainders are multiples of at least `2^-121`,
//! exact in f32. The cases the chain cannot take are taken from `q0`, which is already exact
//! for them: `x = +inf` (`inf − inf` is NaN in the chain) and NaN; `x = -0`, which the chain
//! turns into `+0`, gets its sign back.
//!
//! Below the domain (a `d` under 2^-126, which an `AdamScalars` built by hand may carry) only an
//! overflow can happen: a quotient within an ulp of `f32::MAX` may come out `+inf` where the
//! division rounds to `f32::MAX`. Everything else is still the division (the remainders stay
//! exact: they are multiples of at least 2^-121 for any divisor).
//!
//! `tests/root_divisor.rs` checks every result against the division, bit for bit: every `v`
//! for 24 divisors (ignored by default: about 25 minutes on one core), random `v` for 439
//! divisors, and the special values.
use super::{fma, sqrt};

/// A divisor `sqrt(d)` and its reciprocal, computed once (both correctly rounded); see the
/// module's comment for why [`Self::root_over`] equals the division.
#[derive(Clone, Copy, Debug)]
pub struct RootDivisor {
    root: f32,
    inverse: f32,
}

/// The smallest `d` for which [`RootDivisor::root_over`] is proven equal to the division:
/// `f32::MIN_POSITIVE` (2^-126), the least normal f32. Up to 1, the largest bias correction.
pub const MIN_DIVISOR: f32 = f32::MIN_POSITIVE;

impl RootDivisor {
    /// The divisor `sqrt(d)`, for `d` in `[`[`MIN_DIVISOR`]`, 1]`. Computed once per launch:
    /// it depends on uniform scalars only, so the compiler keeps it out of the element loop.
    #[inline(always)]
    pub fn new(d: f32) -> Self {
        let root = sqrt(d);
        RootDivisor {
            root,
            inverse: 1.0 / root,
        }
    }

    /// `sqrt(v) / sqrt(d)`, bit for bit the correctly rounded division, for every f32 `v`
    /// (NaN for a negative `v` or NaN, `+inf` for `+inf`, `-0` for `-0`).
    #[inline(always)]
    pub fn root_over(self, v: f32) -> f32 {
        let x = sqrt(v);
        let (c, y) = (self.root, self.inverse);
        let q0 = x * y;
        let q1 = fma(fma(-q0, c, x), y, q0);
        let q2 = fma(fma(-q1, c, x), y, q1);
        // `q2` is NaN exactly where the chain met an infinity or a NaN (`x = +inf`, `x` NaN,
        // or an overflow, which the domain rules out), and there `q0` is the quotient. The
        // chain turns `x = -0` into `+0`; the sign of `x` puts it back (every other quotient
        // already has it). One select and one sign copy: no test of `x` that the compiler
        // could turn into a branch around the chain.
        let q = if q2.is_nan() { q0 } else { q2 };
        q.copysign(x)
    }
}
