// A std-only method the prelude has no device version of.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g.tanh()
}

fn main() {}
