// Only the four role attributes exist.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[hyper] #[output] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
