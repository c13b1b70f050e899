// Stochastic rounding stores bf16 parameters only.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param(f16, stochastic)] p: f32, #[grad] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
