// `#[domain]` needs at least one bound.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
