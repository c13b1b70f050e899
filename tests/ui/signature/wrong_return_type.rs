// The kernel returns the new value as f32.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f64 {
    (p - lr * g) as f64
}

fn main() {}
