//! Two optimizers adamant does not ship, written as a downstream crate would write them: each
//! body is the per-element update only, and `#[optimizer_kernel]` stamps the weight clamp and
//! its bound into every entry, as it does for adamant's own kernels.
//!
//! On nvptx the crate is `no_std` and needs `abi_gpu_kernel` (the entries the macro generates
//! are `extern "gpu-kernel"`); the panic handler comes with `adamant_kernels`, so this crate
//! must not define one.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use adamant_kernels::prelude::*;

/// Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms", 2023): the update is the
/// sign of an interpolation of the momentum and the gradient, with decoupled weight decay; the
/// momentum then moves towards the gradient with `beta2`.
#[optimizer_kernel]
pub fn lion_kernel(
    #[param] p: f32,
    #[input] g: f32,
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
    #[hyper]
    #[domain(ge = 0.0)]
    weight_decay: f32,
) -> f32 {
    let c = beta1 * *m + (1.0 - beta1) * g;
    *m = beta2 * *m + (1.0 - beta2) * g;
    p - lr * (sign(c) + weight_decay * p)
}

/// SGD with momentum as `torch.optim.SGD` computes it (no dampening, no Nesterov): L2 decay
/// `d = g + wd·p`, `buf = momentum·buf + d`, `p -= lr·buf`. With `buf` starting at 0 the first
/// step gives `buf = d`, which is what PyTorch's first step sets it to.
#[optimizer_kernel]
pub fn sgd_momentum_kernel(
    #[param] p: f32,
    #[input] g: f32,
    #[state] momentum_buffer: &mut f32,
    #[hyper]
    #[domain(ge = 0.0)]
    lr: f32,
    #[hyper]
    #[domain(ge = 0.0, lt = 1.0)]
    momentum: f32,
    #[hyper]
    #[domain(ge = 0.0)]
    weight_decay: f32,
) -> f32 {
    let d = g + weight_decay * p;
    *momentum_buffer = momentum * *momentum_buffer + d;
    p - lr * *momentum_buffer
}
