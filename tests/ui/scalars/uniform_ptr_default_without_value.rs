// `default` needs its value.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[uniform_ptr(default)] scale: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g * scale
}

fn main() {}
