// A uniform pointer needs the value a null pointer stands for.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[uniform_ptr] scale: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g * scale
}

fn main() {}
