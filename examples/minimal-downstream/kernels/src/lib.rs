//! Plain SGD, the one kernel of the minimal downstream crate. `#[optimizer_kernel]` stamps the
//! weight clamp into its entries; the panic handler comes with `adamant_device`.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use adamant_device::prelude::*;

/// `p -= lr·g`.
#[optimizer_kernel]
pub fn minimal_sgd_kernel(
    #[param] p: f32,
    #[grad] g: f32,
    #[hyper]
    #[domain(ge = 0.0)]
    lr: f32,
) -> f32 {
    p - lr * g
}
