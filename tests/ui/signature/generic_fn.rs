// The entry has one fixed PTX signature.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd<T: Into<f32>>(#[param] p: f32, #[input] g: f32, lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
