//! SGD with momentum, defined twice under one entry name: the `swapped` feature picks the
//! definition whose gradient and momentum buffer change places. Each definition alone is a
//! sound kernel; the bug is a program that launches with one order a module audited with the
//! other.
//!
//! Beside it, `device_math_kernel`, a test kernel crate being the cheapest place for one: a body
//! that calls every float function of `adamant_device::prelude`, so this crate's PTX build
//! (which refuses a module with any `.extern` or `.func`) proves each one compiles to plain PTX
//! (`tests/audit/math_ptx.rs` in adamant's root crate reads the instructions).
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use adamant_device::prelude::*;

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

/// Not an optimizer: every float function of the prelude, in one body whose result depends on
/// each (so none is optimised away).
#[optimizer_kernel]
pub fn device_math_kernel(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper]
    #[domain(gt = 0.0)]
    y: f32,
) -> f32 {
    let a = max(min(exp(g), pow(abs(p), y)), ln(abs(g)));
    fma(a, rsqrt(y), sign(p) * sqrt(y))
}
