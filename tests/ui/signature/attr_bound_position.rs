// The bound parameter cannot be moved.
use adamant_device::optimizer_kernel;

#[optimizer_kernel(bound_position = 0)]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
