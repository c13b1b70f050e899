//! The Adam rule shared by the five optimizer kernels, per element, following PyTorch's
//! `torch.optim.Adam`/`AdamW`: bias corrections `bc1 = 1 - β1^t`, `bc2 = 1 - β2^t` come from the
//! host (computed in f64 once per launch), and the update is
//! `p - (lr / bc1) · m / (sqrt(v̂) / sqrt(bc2) + eps)`.
use crate::math::{max, RootDivisor};

/// The uniform Adam hyperparameters of one launch.
#[derive(Clone, Copy, Debug)]
pub struct AdamScalars {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub bias_correction1: f32,
    pub bias_correction2: f32,
}

/// Updates the moments in place and returns the new parameter value, using `v` itself as `v̂`.
#[inline(always)]
pub fn adam_step(p: f32, g: f32, m: &mut f32, v: &mut f32, s: AdamScalars) -> f32 {
    update_moments(g, m, v, s);
    apply(p, *m, *v, s)
}

/// AMSGrad: as [`adam_step`], but the denominator uses the running maximum `v_max` of `v`.
#[inline(always)]
pub fn amsgrad_step(
    p: f32,
    g: f32,
    m: &mut f32,
    v: &mut f32,
    v_max: &mut f32,
    s: AdamScalars,
) -> f32 {
    update_moments(g, m, v, s);
    // NaN-keeping (`f32::max` would let a NaN second moment vanish from `v_max`).
    *v_max = max(*v_max, *v);
    apply(p, *m, *v_max, s)
}

#[inline(always)]
fn update_moments(g: f32, m: &mut f32, v: &mut f32, s: AdamScalars) {
    *m = s.beta1 * *m + (1.0 - s.beta1) * g;
    *v = s.beta2 * *v + (1.0 - s.beta2) * g * g;
}

#[inline(always)]
fn apply(p: f32, m: f32, v_hat: f32, s: AdamScalars) -> f32 {
    let step_size = s.lr / s.bias_correction1;
    // `sqrt(v̂) / sqrt(bc2)` bit for bit, without a division per element (`RootDivisor`).
    let denom = RootDivisor::new(s.bias_correction2).root_over(v_hat) + s.eps;
    p - step_size * (m / denom)
}

/// Element-wise gradient clipping to `±clip`; `clip == 0` (or any `clip <= 0`) is off.
/// A NaN gradient stays NaN (comparisons with NaN are false), so it still reaches the checker.
#[inline(always)]
pub fn clip_gradient(g: f32, clip: f32) -> f32 {
    if clip > 0.0 && g.abs() > clip {
        clip.copysign(g)
    } else {
        g
    }
}

/// L2 decay `g + wd·p`, skipped when `wd == 0` as in `torch.optim.Adam`: otherwise `0·inf` would
/// turn an infinite weight into NaN before the clamp could bring it back to ±bound.
#[inline(always)]
pub fn l2_decay(g: f32, p: f32, weight_decay: f32) -> f32 {
    if weight_decay != 0.0 {
        g + weight_decay * p
    } else {
        g
    }
}

/// AdamW's decoupled decay `p · (1 - lr·wd)`, applied to the weight before the Adam step (as
/// `torch.optim.AdamW` does), one definition for every AdamW kernel.
#[inline(always)]
pub fn decoupled_decay(p: f32, lr: f32, weight_decay: f32) -> f32 {
    p * (1.0 - lr * weight_decay)
}
