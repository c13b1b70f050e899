// A `use` in the body is an item too (import outside the kernel instead).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    use core::f32::consts::PI;
    p - lr * g * PI
}

fn main() {}
