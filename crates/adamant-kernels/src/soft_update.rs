//! The soft (Polyak) update of a target network, `target ← τ·online + (1 − τ)·target`, as an
//! optimizer kernel: it writes a parameter buffer (the target network's), so it is written with
//! `#[optimizer_kernel]` and gets what every optimizer gets: the clamp before the only store to
//! `target`, the trailing `weight_clamp_max_abs`, the multi-tensor entry
//! `soft_update_kernel_multi` (one launch for every tensor of the network) and a registered
//! descriptor that the runtime builds its launcher from and the PTX audit checks.
use adamant_device::optimizer_kernel;

/// `target ← τ·online + (1 − τ)·target`, then the clamp. `τ = 1` is a hard update (a copy of
/// `online`), `τ = 0` leaves `target` as it is; the runtime accepts only `0 ≤ τ ≤ 1` (`#[domain]`).
///
/// # The float form
///
/// Evaluated as written, `τ·online + (1 − τ)·target`: two products and a sum in f32 (`1 − τ` is
/// rounded once, and is exact for `τ ≥ 0.5`), with no fused multiply-add on either target (the
/// PTX has none, so the host build the CPU tests run is bit for bit the device's). Why this form:
///
/// - it is the formula, so its IEEE behaviour on non-finite weights is the formula's, and the
///   f64 reference written from the formula predicts it: NaN in either network gives NaN (kept
///   visible for the NaN checker: the clamp leaves NaN alone); `±inf` in `online` gives `±inf`
///   for `τ > 0` (then `±bound` through the clamp) and NaN for `τ = 0` (`0·inf`); `±inf` in
///   `target` gives `±inf` for `τ < 1` and NaN for `τ = 1`; opposite infinities give NaN;
/// - the ends are exact for finite weights: `τ = 1` gives `online` (`1·online + 0·target`) and
///   `τ = 0` gives `target`;
/// - each product is at most its weight in magnitude and the sum is a convex combination, so it
///   overflows only for weights within a few ulps of `f32::MAX`;
/// - its error is at most about `1.5·EPSILON·(|τ·online| + |(1 − τ)·target|)` (three roundings).
///
/// The price: where `online == target` it is not always exactly `target` (off by an ulp at most).
/// The lerp form `target + τ·(online − target)` would be exact there, but is not exact at `τ = 1`,
/// overflows when `online − target` does, and turns an infinite weight into NaN (`inf − inf`).
#[optimizer_kernel]
pub fn soft_update_kernel(
    #[param] target: f32,
    #[input] online: f32,
    #[hyper]
    #[domain(ge = 0.0, le = 1.0)]
    tau: f32,
) -> f32 {
    tau * online + (1.0 - tau) * target
}

/// The soft update of a bf16 target network from a bf16 online network (issue 26), in the same
/// float form as [`soft_update_kernel`], computed in f32 and stored rounded stochastically: with
/// `τ = 0.005` a target weight moves by half a percent of its distance to the online one each
/// step, far less than a bf16 ulp, so rounded to nearest it would never move; stochastically it
/// moves by the right amount in expectation. The clamp holds of the stored bits.
#[optimizer_kernel]
pub fn soft_update_bf16(
    #[param(bf16, stochastic)] target: f32,
    #[input(bf16)] online: f32,
    #[hyper]
    #[domain(ge = 0.0, le = 1.0)]
    tau: f32,
    #[group] _rounding: adamant_device::scalar_groups::StochasticRounding,
) -> f32 {
    tau * online + (1.0 - tau) * target
}
