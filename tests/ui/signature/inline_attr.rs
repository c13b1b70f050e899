// The macro decides the update's inlining.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
#[inline(never)]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
