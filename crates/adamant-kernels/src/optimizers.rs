//! The five optimizer kernels, named as in the training code they replace. Each body is only the
//! per-element update; `#[optimizer_kernel]` generates the entry, its loads and stores, the
//! trailing `weight_clamp_max_abs` parameter and the clamp before the parameter store.
//!
//! Every scalar declares the values a launch may pass (`#[domain]`; the runtime checks each
//! launch against the descriptor before enqueueing it, and every f32 scalar must be finite):
//! `lr >= 0`, `0 <= beta < 1`, `eps > 0`, `weight_decay >= 0`, `grad_clip >= 0` (0 = off) and
//! `0 < bias_correction <= 1` (`1 - beta^step`: a step of 0 would give 0, a division by zero and
//! NaN weights).
use adamant_device::adam::{adam_step, amsgrad_step, clip_gradient, decoupled_decay, l2_decay};
use adamant_device::optimizer_kernel;
use adamant_device::scalar_groups::{Adam, BiasCorrections, WeightDecay};

/// DQN trunk and heads: AdamW (decoupled decay `p *= 1 - lr·wd` before the step), with the
/// gradient scaled by the global-norm clip coefficient the host left in device memory
/// (`grad_scale`; a null pointer means 1.0).
#[optimizer_kernel]
pub fn dqn_adam_update_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[uniform_ptr(default = 1.0)] grad_scale: f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g * grad_scale,
        m,
        v,
        adam.with(bc),
    )
}

/// IQN head (its own parameter buffer): Adam with L2 decay `g += wd·p`.
#[optimizer_kernel]
pub fn iqn_adam_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
) -> f32 {
    adam_step(p, l2_decay(g, p, decay.weight_decay), m, v, adam.with(bc))
}

/// IQL value/policy networks: element-wise gradient clip to `±grad_clip` (0 = off) first, then
/// Adam with L2 decay.
#[optimizer_kernel]
pub fn iql_adam_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[hyper]
    #[domain(ge = 0.0)]
    grad_clip: f32,
    #[group] bc: BiasCorrections,
) -> f32 {
    let g = clip_gradient(g, grad_clip);
    adam_step(p, l2_decay(g, p, decay.weight_decay), m, v, adam.with(bc))
}

/// GpuAttention, GpuTlob and the decision transformer: AdamW.
#[optimizer_kernel]
pub fn attn_adam_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g,
        m,
        v,
        adam.with(bc),
    )
}

/// Curiosity model: Adam without decay, AMSGrad (`v_max = max(v_max, v)` in the denominator).
#[optimizer_kernel]
pub fn curiosity_adam_step(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[state] v_max: &mut f32,
    #[group] adam: Adam,
    #[group] bc: BiasCorrections,
) -> f32 {
    amsgrad_step(p, g, m, v, v_max, adam.with(bc))
}
