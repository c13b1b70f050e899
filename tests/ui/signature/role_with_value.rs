// Role attributes take no value.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[state = "m"] m: &mut f32, #[hyper] lr: f32) -> f32 {
    *m = g;
    p - lr * g
}

fn main() {}
