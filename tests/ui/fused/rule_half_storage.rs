// A kernel with a 16-bit buffer is a valid kernel, but not a rule of a fused set (the fused
// entry's tables point at f32 buffers): the set does not compile.
use adamant_device::{fused_optimizer, optimizer_kernel};

#[optimizer_kernel]
pub fn sgd_bf16(#[param(bf16)] p: f32, #[grad] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fused_optimizer! {
    pub my_set = [sgd_bf16];
}

fn main() {}
