//! The weight clamp, the one rule adamant exists to enforce: after every optimizer update,
//! `|p|` is brought back to `bound`.
//!
//! The `#[optimizer_kernel]` macro applies [`weight_clamp`] to the new parameter value right
//! before the store to the parameter buffer, in every optimizer kernel.

/// The largest bound a clamp may have: a bound above it cannot bite, so it is refused (the host's
/// policies and per-tensor scales) or ignored (a device `Q_ABS_REF` that would give one keeps the
/// previous bound, [`crate::step::advance`]), and a per-tensor bound saturates here
/// ([`crate::multi::tensor_bound`]). A clamp that is meant to be off says so, with a reason
/// (bound 0).
///
/// 1e18 (as `f32`, 9.99999984e17): below `sqrt(f32::MAX)` ≈ 1.8e19, so a weight at the bound
/// times an activation at the bound is still finite in f32. A weight any larger already makes
/// the forward pass overflow, so a bound above the ceiling would let through exactly the values
/// the clamp exists to stop (the seed's IQN weights were 1e29 on their way to NaN).
pub const BOUND_CEILING: f32 = 1.0e18;

/// Clamps `p` to `[-bound, bound]`, keeping NaN visible.
///
/// - `bound > 0` and `|p| > bound`: returns `copysign(bound, p)`, so `±inf` becomes `±bound`.
/// - NaN stays NaN. The seed's `fminf(fmaxf(p, -b), b)` returned `-b` for a NaN weight, because
///   `fminf`/`fmaxf` (and PTX `min.f32`/`max.f32`, Rust's `f32::min`/`max`) drop a NaN operand;
///   that hid the NaN from the checker that runs after the optimizer.
/// - `bound <= 0` (the runtime only ever passes `0.0`, meaning disabled; it rejects negative and
///   non-finite bounds before launch) or a NaN bound: `p` unchanged.
#[inline(always)]
pub fn weight_clamp(p: f32, bound: f32) -> f32 {
    // Written as one comparison chain, not min/max, so a NaN `p` fails `abs(p) > bound` and
    // passes through untouched.
    if bound > 0.0 && p.abs() > bound {
        bound.copysign(p)
    } else {
        p
    }
}
