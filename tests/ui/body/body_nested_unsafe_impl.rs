// `unsafe impl` in the body: an unsafe item (here sealing-trait forgery).
use adamant_device::optimizer_kernel;

pub struct Fake;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    unsafe impl Send for Fake {}
    p - lr * g
}

fn main() {}
