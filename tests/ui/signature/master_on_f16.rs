// An f32 master (or a remainder) completes bf16 weights only.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param(f16, master)] p: f32, #[grad] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
