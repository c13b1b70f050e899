// A storage type is f32, bf16 or f16.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[grad(f64)] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
