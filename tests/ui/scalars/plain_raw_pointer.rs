// A plain argument is a uniform scalar, never a pointer.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, raw: *mut f32, #[hyper] lr: f32) -> f32 {
    unsafe { *raw = p };
    p - lr * g
}

fn main() {}
