// #[param] is the value, never a reference into the parameter buffer.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: &mut f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    *p -= lr * g;
    *p
}

fn main() {}
