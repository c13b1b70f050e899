// A bound is written into the descriptor as a literal: no paths or expressions.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(gt = f32::EPSILON)] eps: f32) -> f32 {
    p - g / eps
}

fn main() {}
