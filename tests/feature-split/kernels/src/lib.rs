//! SGD with momentum, defined twice under one entry name: the `swapped` feature picks the
//! definition whose gradient and momentum buffer change places. Each definition alone is a
//! sound kernel; the bug is a program that launches with one order a module audited with the
//! other.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use adamant_kernels::prelude::*;

/// Whether this build has the `swapped` order.
pub const SWAPPED: bool = cfg!(feature = "swapped");

/// `m = momentum·m + g`, `p -= lr·m`.
#[cfg(not(feature = "swapped"))]
#[optimizer_kernel]
pub fn split_sgd_kernel(
    #[param] p: f32,
    #[input] g: f32,
    #[state] m: &mut f32,
    #[hyper]
    #[domain(ge = 0.0)]
    lr: f32,
    #[hyper]
    #[domain(ge = 0.0, lt = 1.0)]
    momentum: f32,
) -> f32 {
    *m = momentum * *m + g;
    p - lr * *m
}

/// The same update, the momentum buffer before the gradient.
#[cfg(feature = "swapped")]
#[optimizer_kernel]
pub fn split_sgd_kernel(
    #[param] p: f32,
    #[state] m: &mut f32,
    #[input] g: f32,
    #[hyper]
    #[domain(ge = 0.0)]
    lr: f32,
    #[hyper]
    #[domain(ge = 0.0, lt = 1.0)]
    momentum: f32,
) -> f32 {
    *m = momentum * *m + g;
    p - lr * *m
}
