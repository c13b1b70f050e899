// A `const` item in the body.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    const SCALE: f32 = 0.5;
    p - SCALE * lr * g
}

fn main() {}
