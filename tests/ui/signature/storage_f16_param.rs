// An f16 parameter store cannot be proven by the audit yet: refused at compile time, with the
// storage types that work.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param(f16)] p: f32, #[grad(f16)] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
