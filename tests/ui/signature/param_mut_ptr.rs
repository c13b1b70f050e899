// #[param] is the value, never the parameter buffer's pointer.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: *mut f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    unsafe { *p -= lr * g };
    0.0
}

fn main() {}
