// The author cannot declare the bound (first).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[hyper] weight_clamp_max_abs: f32, #[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
