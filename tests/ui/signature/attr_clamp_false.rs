// The epilogue cannot be switched off from the attribute.
use adamant_device::optimizer_kernel;

#[optimizer_kernel(clamp = false)]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
