// A gradient is only read: nothing rounds it.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param(bf16)] p: f32, #[grad(bf16, stochastic)] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
