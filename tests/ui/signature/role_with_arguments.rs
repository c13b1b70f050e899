// Role attributes take no arguments.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param(unclamped)] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
