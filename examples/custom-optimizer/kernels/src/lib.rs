//! Optimizers adamant does not ship, written as a downstream crate would write them: each
//! body is the per-element update only, and `#[optimizer_kernel]` stamps the weight clamp and
//! its bound into every entry, as it does for adamant's own kernels. The weight decay every one
//! of them takes is adamant's scalar group `WeightDecay` (`#[group] decay: WeightDecay`, read as
//! `decay.weight_decay`): its lifetime and domain are declared once, in `adamant-device`.
//!
//! On nvptx the crate is `no_std` and needs `abi_gpu_kernel` (the entries the macro generates
//! are `extern "gpu-kernel"`); the panic handler comes with `adamant_device`, so this crate
//! must not define one.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use adamant_device::prelude::*;

/// Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms", 2023): the update is the
/// sign of an interpolation of the momentum and the gradient, with decoupled weight decay; the
/// momentum then moves towards the gradient with `beta2`.
#[optimizer_kernel]
pub fn lion_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[hyper]
    #[domain(ge = 0.0)]
    lr: f32,
    #[hyper]
    #[domain(ge = 0.0, le = 1.0)]
    beta1: f32,
    #[hyper]
    #[domain(ge = 0.0, le = 1.0)]
    beta2: f32,
    #[group] decay: WeightDecay,
) -> f32 {
    let c = beta1 * *m + (1.0 - beta1) * g;
    *m = beta2 * *m + (1.0 - beta2) * g;
    p - lr * (sign(c) + decay.weight_decay * p)
}

/// SGD with momentum as `torch.optim.SGD` computes it (no dampening, no Nesterov): L2 decay
/// `d = g + wd·p`, `buf = momentum·buf + d`, `p -= lr·buf`. With `buf` starting at 0 the first
/// step gives `buf = d`, which is what PyTorch's first step sets it to.
#[optimizer_kernel]
pub fn sgd_momentum_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] momentum_buffer: &mut f32,
    #[hyper]
    #[domain(ge = 0.0)]
    lr: f32,
    #[hyper]
    #[domain(ge = 0.0, lt = 1.0)]
    momentum: f32,
    #[group] decay: WeightDecay,
) -> f32 {
    let d = g + decay.weight_decay * p;
    *momentum_buffer = momentum * *momentum_buffer + d;
    p - lr * *momentum_buffer
}

/// RMSprop, centered, as `torch.optim.RMSprop(centered=True)` computes it: L2 decay
/// `d = g + wd·p`; `square_avg ← α·square_avg + (1 − α)·d²`; `grad_avg ← α·grad_avg + (1 − α)·d`;
/// `avg = sqrt(square_avg − grad_avg²) + ε`; `buf ← momentum·buf + d / avg`; `p −= lr·buf`
/// (with `momentum = 0` that is PyTorch's `p −= lr·d / avg`, the buffer unused there).
///
/// Every scalar says how long it lives: `lr` is the record's shared per-step field (a schedule
/// sets it between steps), the rest are hyperparameters the host may change between steps.
#[optimizer_kernel]
pub fn rmsprop_centered_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] square_avg: &mut f32,
    #[state] grad_avg: &mut f32,
    #[state] momentum_buffer: &mut f32,
    #[step]
    #[domain(ge = 0.0)]
    lr: f32,
    #[hyper]
    #[domain(ge = 0.0, le = 1.0)]
    alpha: f32,
    #[hyper]
    #[domain(gt = 0.0)]
    eps: f32,
    #[group] decay: WeightDecay,
    #[hyper]
    #[domain(ge = 0.0, lt = 1.0)]
    momentum: f32,
) -> f32 {
    let d = g + decay.weight_decay * p;
    *square_avg = alpha * *square_avg + (1.0 - alpha) * d * d;
    *grad_avg = alpha * *grad_avg + (1.0 - alpha) * d;
    let avg = sqrt(*square_avg - *grad_avg * *grad_avg) + eps;
    *momentum_buffer = momentum * *momentum_buffer + d / avg;
    p - lr * *momentum_buffer
}

/// NAdam (Dozat, "Incorporating Nesterov Momentum into Adam", 2016) as `torch.optim.NAdam`
/// computes it (L2 decay `d = g + wd·p`): with the momentum schedule
/// `μ_t = β1·(1 − ½·0.96^(t·ψ))` and its running product `Π_t = μ_1⋯μ_t`,
/// `m ← β1·m + (1 − β1)·d`, `v ← β2·v + (1 − β2)·d²`, `denom = sqrt(v / (1 − β2^t)) + ε`,
/// `p −= lr·(1 − μ_t)/(1 − Π_t)·d/denom + lr·μ_{t+1}/(1 − Π_t·μ_{t+1})·m/denom`.
///
/// `μ_t`, `μ_{t+1}` and `Π_t` change every step and `Π_t` depends on every earlier step, so
/// they are `#[derived]`: [`nadam_schedule`] computes them on the device after every advance,
/// and a captured step reads the current ones. `1 − β2^t` is the record's own bias correction.
#[optimizer_kernel(schedule = nadam_schedule)]
pub fn nadam_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[step]
    #[domain(ge = 0.0)]
    lr: f32,
    #[step]
    #[domain(ge = 0.0, lt = 1.0)]
    beta2: f32,
    #[step]
    #[domain(gt = 0.0, le = 1.0)]
    bias_correction2: f32,
    #[hyper]
    #[domain(ge = 0.0, lt = 1.0)]
    beta1: f32,
    #[hyper]
    #[domain(gt = 0.0)]
    eps: f32,
    #[group] decay: WeightDecay,
    #[hyper]
    #[domain(ge = 0.0)]
    momentum_decay: f32,
    #[derived(init = 1.0)] mu: f32,
    #[derived(init = 1.0)] mu_next: f32,
    #[derived(init = 1.0)] mu_product: f32,
) -> f32 {
    // ψ shapes the schedule only (it reaches the update through μ): the schedule reads it
    // from the record's hyperparameters, which are the kernel's own scalars.
    let _ = momentum_decay;
    let d = g + decay.weight_decay * p;
    *m = beta1 * *m + (1.0 - beta1) * d;
    *v = beta2 * *v + (1.0 - beta2) * d * d;
    let denom = sqrt(*v / bias_correction2) + eps;
    let gradient_step = lr * (1.0 - mu) / (1.0 - mu_product);
    let momentum_step = lr * mu_next / (1.0 - mu_product * mu_next);
    p - gradient_step * d / denom - momentum_step * *m / denom
}

/// NAdam's momentum schedule for step `t` (1 for the first): `μ_t`, `μ_{t+1}` and the running
/// product `Π_t = Π_{t−1}·μ_t` (`Π_0 = 1`, the `init` of `mu_product`). Run on the device after
/// every advance (the schedule entry `nadam_kernel_schedule`), and on the host by
/// `nadam_kernel::derived_at` to start a record at a given step: the same code, so both give
/// the same bits.
pub fn nadam_schedule(
    t: u32,
    hyper: &nadam_kernel::Hyper,
    previous: &nadam_kernel::Derived,
) -> nadam_kernel::Derived {
    let mu_at =
        |step: u32| hyper.beta1 * (1.0 - 0.5 * pow(0.96, step as f32 * hyper.momentum_decay));
    let mu = mu_at(t);
    nadam_kernel::Derived {
        mu,
        mu_next: mu_at(t.saturating_add(1)),
        mu_product: previous.mu_product * mu,
    }
}
