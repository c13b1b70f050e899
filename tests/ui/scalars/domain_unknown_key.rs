// The bounds are `gt`, `ge`, `lt` and `le`.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(min = 0.0)] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
