//! The weight clamp, the one rule adamant exists to enforce: after every optimizer update,
//! `|p|` is brought back to `bound`.
//!
//! The `#[optimizer_kernel]` macro applies [`weight_clamp`] to the new parameter value right
//! before the store to the parameter buffer, in every optimizer kernel.

/// The largest bound a clamp may have (defined with the ABI, which the audit reads it from).
pub use crate::abi::BOUND_CEILING;

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
    if caught(p, bound) {
        bound.copysign(p)
    } else {
        p
    }
}

/// Whether [`weight_clamp`] changes `p` (a clamp catch, as the records count it): exactly when
/// the clamp is on and `|p|` is past the bound (a NaN `p` is never caught). The clamp's own
/// test, so the two cannot drift. For the records of a
/// 16-bit parameter, whose stored value differs from the raw one by rounding as well: one
/// comparison, instead of the f32 clamp computed again beside the store's own.
#[inline(always)]
pub fn caught(p: f32, bound: f32) -> bool {
    bound > 0.0 && p.abs() > bound
}
