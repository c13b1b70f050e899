// A lower bound above the upper bound: no value passes, every launch would be rejected.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(ge = 1.0, lt = 0.5)] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
