// A plain scalar is `f32` or `u32`.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, lr: f64) -> f32 {
    p - (lr as f32) * g
}

fn main() {}
