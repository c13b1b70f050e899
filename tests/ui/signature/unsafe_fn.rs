// The update is safe: it never sees a pointer.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub unsafe fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
