// Two #[param]s would be two parameter stores.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd2(#[param] p: f32, #[param] q: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p + q - lr * g
}

fn main() {}
