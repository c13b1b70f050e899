// `1e39` is beyond f32's range: it would be an infinite bound.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(ge = 0.0, lt = 1e39)] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
