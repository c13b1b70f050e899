// The author writes the update, not the entry.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub extern "gpu-kernel" fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
