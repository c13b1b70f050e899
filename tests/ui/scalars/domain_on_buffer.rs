// A buffer's values are device data that no launch check reads: #[domain] is for scalars.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] #[domain(ge = 0.0)] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
