// The entry has one fixed PTX signature.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32, _: ...) -> f32 {
    p - lr * g
}

fn main() {}
