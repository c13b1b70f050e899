// An `unsafe fn` pointer type: `unsafe` in type position.
use adamant_device::optimizer_kernel;

pub fn scale(x: f32) -> f32 {
    x
}

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    let f: unsafe fn(f32) -> f32 = scale;
    let _ = f;
    p - lr * g
}

fn main() {}
