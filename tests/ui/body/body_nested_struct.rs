// A struct in the body.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    struct Step(f32);
    let s = Step(lr * g);
    p - s.0
}

fn main() {}
