// The 2024-style `#[unsafe(no_mangle)]` is an export attribute too.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
#[unsafe(no_mangle)]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
